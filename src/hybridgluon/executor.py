"""Executor: a Symbol bound to arrays (MXNet's `mx.executor.Executor`), from `Symbol.bind` and
`Symbol.simple_bind`.

An executor runs the symbol's graph as a `_core.CachedOp`, the planned executor hybridize uses;
there is no second engine. forward(is_train=True) records that call with autograd, the argument
arrays whose grad_req is 'write' or 'add' marked (through copies, so the bound arrays never
become autograd variables) with their gradient buffers; backward() then runs the recorded
graph's backward pass into those buffers. Auxiliary states (BatchNorm's moving statistics)
are handed to the graph as they are and updated in place by a training forward.

As in MXNet, `outputs` are arrays owned by the executor that every forward overwrites, and
`reshape` gives an executor whose arrays share memory with this one's where they fit.
"""
import os

import numpy as np

from . import _core, autograd
from .base import MXNetError
from .ndarray import NDArray

__all__ = ['Executor']

_GRAD_REQS = ('null', 'write', 'add')


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _view(array, shape):
    """An array of `shape` over the first elements of `array`'s memory (MXNet's
    NDArray::Reshape of a smaller size), or None where it cannot be one."""
    n = _size(shape)
    if n > array.size or n == 0:
        return None
    if n == array.size:
        return array.reshape(shape)
    return array.reshape((-1,))[0:n].reshape(shape)


class Executor:
    """A symbol bound to argument, gradient and auxiliary-state arrays on a context."""

    def __init__(self, symbol, ctx, grad_req, group2ctx, arg_arrays, grad_arrays, aux_arrays,
                 outputs=None):
        self._symbol = symbol
        self._ctx = ctx
        self._grad_req = grad_req
        self._group2ctx = group2ctx
        self.arg_arrays = list(arg_arrays)
        self.grad_arrays = list(grad_arrays)
        self.aux_arrays = list(aux_arrays)
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._inputs = symbol.list_inputs()
        self._reqs = _grad_req_list(grad_req, self._arg_names)
        for i, g in enumerate(self.grad_arrays):
            if g is None:
                self._reqs[i] = 'null'
        if any(r != 'null' for r in self._reqs):
            _check_differentiable(symbol)
        # The graph run: the symbol after common-subexpression elimination unless
        # MXNET_ELIMINATE_COMMON_EXPR=0, as MXNet's executor decides when it is made.
        self._optimized = (symbol if os.environ.get('MXNET_ELIMINATE_COMMON_EXPR', '1') == '0'
                           else _eliminate_common_expr(symbol))
        self._op = _core.CachedOp(self._optimized, self._inputs)
        self._recorded = None
        self._arg_dict = self._grad_dict = self._aux_dict = self._output_dict = None
        self._monitor_callback = None
        self._monitor_all = False
        self.outputs = outputs if outputs is not None else self._initial_outputs()

    # ---- arrays by name ------------------------------------------------------------------
    @staticmethod
    def _get_dict(names, arrays):
        if len(set(names)) != len(names):
            raise ValueError('Duplicate names detected, %s' % str(names))
        return dict(zip(names, arrays))

    @property
    def arg_dict(self):
        if self._arg_dict is None:
            self._arg_dict = Executor._get_dict(self._arg_names, self.arg_arrays)
        return self._arg_dict

    @property
    def grad_dict(self):
        if self._grad_dict is None:
            self._grad_dict = Executor._get_dict(self._arg_names, self.grad_arrays)
        return self._grad_dict

    @property
    def aux_dict(self):
        if self._aux_dict is None:
            self._aux_dict = Executor._get_dict(self._aux_names, self.aux_arrays)
        return self._aux_dict

    @property
    def output_dict(self):
        if self._output_dict is None:
            self._output_dict = Executor._get_dict(self._symbol.list_outputs(), self.outputs)
        return self._output_dict

    def _initial_outputs(self):
        """Zero arrays of the output shapes the bound arrays decide (an empty list where an
        output's shape depends on the data: the first forward makes them)."""
        metas = [(tuple(a.shape), _core.DTYPE_FLAGS[np.dtype(a.dtype).name])
                 for a in self._input_arrays()]
        try:
            _, outs = self._op.infer(metas, True)
        except MXNetError:
            return []
        if any(shape is None or 0 in shape for shape, _ in outs):
            return []
        from . import ndarray as nd
        from .base import _np_dtype
        return [nd.zeros(shape, ctx=self._ctx, dtype=_np_dtype(flag)) for shape, flag in outs]

    def _input_arrays(self):
        by_name = dict(zip(self._arg_names, self.arg_arrays))
        by_name.update(zip(self._aux_names, self.aux_arrays))
        return [by_name[n] for n in self._inputs]

    # ---- running ---------------------------------------------------------------------------
    def forward(self, is_train=False, **kwargs):
        """Computes the outputs from the bound arrays (after copying the NDArrays or NumPy
        arrays given by argument name into them); returns `outputs`."""
        if kwargs:
            arg_dict = self.arg_dict
            for name, array in kwargs.items():
                if not isinstance(array, (NDArray, np.ndarray)):
                    raise ValueError('only accept keyword argument of NDArrays and numpy.ndarray')
                if name not in arg_dict:
                    raise TypeError('Unknown argument %s' % name)
                if arg_dict[name].shape != array.shape:
                    raise ValueError('Shape not match! Argument %s, need: %s, received: %s'
                                     % (name, str(arg_dict[name].shape), str(array.shape)))
                arg_dict[name][:] = array
        results = self._run(bool(is_train))
        self._store_outputs(results)
        if self._monitor_callback is not None:
            self._monitor(bool(is_train))
        return self.outputs

    def _run(self, is_train):
        ins = self._input_arrays()
        req_of = dict(zip(self._arg_names, self._reqs))
        grad_of = dict(zip(self._arg_names, self.grad_arrays))
        marked = [i for i, n in enumerate(self._inputs) if req_of.get(n, 'null') != 'null']
        if not marked:
            self._recorded = None
            with autograd.pause(train_mode=is_train):
                return list(self._op(*ins))
        for i in marked:
            ins[i] = ins[i].copy()
        names = [self._inputs[i] for i in marked]
        autograd.mark_variables([ins[i] for i in marked], [grad_of[n] for n in names],
                                [req_of[n] for n in names])
        # Recorded in either mode: a backward after a prediction forward differentiates that
        # forward (Dropout as identity), as MXNet's executor does.
        with autograd.record(train_mode=is_train):
            results = list(self._op(*ins))
        self._recorded = results
        return results

    def _store_outputs(self, results):
        """Writes the results into the executor's output arrays (new arrays where a shape or
        dtype changed); `outputs` is a new list of them, as MXNet's is after a forward."""
        outputs = []
        with autograd.pause():
            for i, r in enumerate(results):
                old = self.outputs[i] if i < len(self.outputs) else None
                if old is not None and old.shape == r.shape and old.dtype == r.dtype:
                    r.copyto(old)
                    outputs.append(old)
                else:
                    outputs.append(r.copy())
        self.outputs = outputs
        self._output_dict = None

    def backward(self, out_grads=None, is_train=True):
        """Runs the backward pass of the last training forward, writing (grad_req 'write') or
        adding ('add') the gradients into the gradient arrays. out_grads: the head gradients
        (an NDArray, a list, or a dict by output name); none for outputs that are losses."""
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in self._symbol.list_outputs()]
        for obj in out_grads:
            if not isinstance(obj, NDArray):
                raise TypeError('inputs must be NDArray')
        if all(r == 'null' for r in self._reqs):
            return
        if self._recorded is None:
            # No forward yet: run one, so the gradients are those at the bound arrays.
            self._run(bool(is_train))
        heads = self._recorded
        nout = len(heads)
        head_grads = None
        if out_grads:
            if len(out_grads) < nout:
                raise MXNetError('backward: %d head gradients given for %d outputs (%s)'
                                 % (len(out_grads), nout,
                                    ', '.join(self._symbol.list_outputs())))
            head_grads = []
            nodes, outs = self._symbol._graph()
            for name, h, g, (node, _) in zip(self._symbol.list_outputs(), heads, out_grads,
                                             outs):
                op = nodes[node][1]
                if g.shape != h.shape and op is not None and _core.op_info(op)['no_grad']:
                    # No gradient flows through this output: MXNet never reads its head
                    # gradient, whatever its shape.
                    with autograd.pause():
                        head_grads.append(h.zeros_like())
                    continue
                if g.shape != h.shape:
                    if g.size != h.size:
                        raise MXNetError('backward: the head gradient for output %s has shape '
                                         '%s, the output %s' % (name, g.shape, h.shape))
                    g = g.reshape(h.shape)
                if g.dtype != h.dtype:  # MXNet copies it into an array of the output's dtype
                    g = g.astype(h.dtype)
                head_grads.append(g)
        autograd.backward(heads, head_grads, retain_graph=True, train_mode=bool(is_train))
        if self._monitor_callback is not None:
            self._monitor_backward(head_grads, bool(is_train))

    # ---- monitor ---------------------------------------------------------------------------
    def set_monitor_callback(self, callback, monitor_all=False):
        """callback(name, array) is called after each forward for every op output of the
        graph (monitor_all: also for every op input, named `<node>_<input>`), in graph
        order, as MXNet's monitor names them; name is bytes, as MXNet passes it."""
        self._monitor_callback = callback
        self._monitor_all = bool(monitor_all)

    def _internal_values(self, is_train):
        """(internals symbol, every node output's value in a forward of mode is_train). The
        auxiliary states go in as copies, so a training forward (BatchNorm) leaves the bound
        ones as the real forward left them (a random op draws anew)."""
        internals = self._symbol.get_internals()
        op = _core.CachedOp(internals, self._inputs)
        aux = set(self._aux_names)
        with autograd.pause(train_mode=is_train):
            ins = [a.copy() if n in aux else a for n, a in zip(self._inputs,
                                                               self._input_arrays())]
            return internals, list(op(*ins))

    def _monitor(self, is_train=False):
        # MXNet's callback gets the name as the C string (bytes) its ctypes wrapper passes.
        internals, outs = self._internal_values(is_train)
        values = dict(zip(internals.list_outputs(), outs))
        nodes, _ = self._symbol._graph()
        output_names = self._symbol._output_names
        for nid, (name, opname, _, inputs, nout, _) in enumerate(nodes):
            if opname is None:
                continue
            if self._monitor_all:
                in_names = _core.op_info(opname)['inputs']
                for j, (node, index, _) in enumerate(inputs):
                    src_name = output_names(nodes, [(node, index)])[0]
                    label = in_names[j] if j < len(in_names) else 'arg%d' % j
                    arr = values.get(src_name)
                    if arr is not None:
                        self._monitor_callback(src_name.encode(), arr)
                        self._monitor_callback(('%s_%s' % (name, label)).encode(), arr)
            for out_name in output_names(nodes, [(nid, k) for k in range(nout)]):
                if out_name in values:
                    self._monitor_callback(out_name.encode(), values[out_name])

    def _monitor_backward(self, head_grads, is_train):
        """Hands the monitor what MXNet's backward nodes compute: for each op node on the
        gradient path, last first, the gradient flowing through it into each of its inputs
        that is not an auxiliary state, named `<node>_backward_output` (`..._output<i>` for
        several). MXNet names a few ops' gradients differently (those it builds from other
        ops, like split's or MakeLoss's `<node>_backward_data`).

        Our backward runs as one planned graph, so these per-node gradients are recomputed
        here, node by node, from the forward values: each node's op is run again on copies
        of its inputs under autograd and differentiated with the gradient its visible outputs
        received (a random op, like Dropout, draws anew). Only a monitored executor pays."""
        nodes, heads = self._symbol._graph()
        internals, outs = self._internal_values(is_train)
        values = dict(zip(internals._graph()[1], outs))
        req_of = dict(zip(self._arg_names, self._reqs))
        aux = set(self._aux_names)
        needs = [False] * len(nodes)
        for n, (name, opname, _, inputs, _, _) in enumerate(nodes):
            if opname is None:
                needs[n] = req_of.get(name, 'null') != 'null'
            elif not _core.op_info(opname)['no_grad']:
                needs[n] = any(needs[i] for i, _, _ in inputs)
        grads = {}
        with autograd.pause():
            for h, (n, k) in enumerate(heads):
                given = head_grads[h] if head_grads else None
                grads[(n, k)] = given if given is not None else values[(n, k)].ones_like()
        for n in range(len(nodes) - 1, -1, -1):
            name, opname, attrs, inputs, _, _ = nodes[n]
            if opname is None or not needs[n]:
                continue
            with autograd.pause():
                args = [values[(i, k)].copy() for i, k, _ in inputs]
            for a in args:
                a.attach_grad()
            kwargs = {k: v for k, v in attrs.items() if not k.startswith('__')}
            with autograd.record(train_mode=is_train):
                outs = _core.get_op(opname)(*args, **kwargs)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            with autograd.pause():
                outs_grad = [grads[(n, k)] if (n, k) in grads else o.zeros_like()
                             for k, o in enumerate(outs)]
            autograd.backward(outs, outs_grad, train_mode=is_train)
            differentiable = [(j, entry) for j, entry in enumerate(inputs)
                              if not (nodes[entry[0]][1] is None and nodes[entry[0]][0] in aux)]
            for j, (i, k, _) in differentiable:
                suffix = '' if len(differentiable) == 1 else str(j)
                self._monitor_callback(('%s_backward_output%s' % (name, suffix)).encode(),
                                       args[j].grad)
                with autograd.pause():
                    prev = grads.get((i, k))
                    grads[(i, k)] = args[j].grad.copy() if prev is None else prev + args[j].grad

    # ---- parameters and shapes --------------------------------------------------------------
    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies arrays by name into the bound argument (and auxiliary-state) arrays, cast to
        their dtypes. A name the symbol lacks raises ValueError unless allow_extra_params."""
        for name, array in arg_params.items():
            if name in self.arg_dict:
                dst = self.arg_dict[name]
                _as_nd(array, dst).astype(dst.dtype).copyto(dst)
            elif not allow_extra_params:
                raise ValueError('Find name "%s" that is not in the arguments' % name)
        if aux_params is None:
            return
        for name, array in aux_params.items():
            if name in self.aux_dict:
                dst = self.aux_dict[name]
                _as_nd(array, dst).astype(dst.dtype).copyto(dst)
            elif not allow_extra_params:
                raise ValueError('Find name %s that is not in the auxiliary states' % name)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes (given by name as tuples), sharing this one's
        arrays: an array of the same size or smaller is a view of this one's memory, a larger
        one (allow_up_sizing=True only) a new array. Arguments whose shape is not given may
        change shape only with partial_shaping=True."""
        from . import ndarray as nd
        provided = {k: tuple(v) for k, v in kwargs.items() if isinstance(v, tuple)}
        arg_shapes, out_shapes, aux_shapes = self._symbol.infer_shape_partial(**provided)
        undecided = {n: tuple(a.shape) for n, a, s in zip(self._arg_names, self.arg_arrays,
                                                          arg_shapes)
                     if (not s or 0 in s) and n not in provided}
        if undecided:  # what the new shapes do not decide keeps its shape
            arg_shapes, out_shapes, aux_shapes = self._symbol.infer_shape_partial(
                **dict(provided, **undecided))
        unknown = [n for n, s in zip(self._arg_names, arg_shapes) if not s or 0 in s]
        if unknown:
            raise MXNetError('reshape: cannot infer the shapes of %s from %s'
                             % (', '.join(unknown), provided))

        def resize(name, arr, shape, what):
            if shape == tuple(arr.shape):
                return arr
            if _size(shape) > arr.size:
                if not allow_up_sizing:
                    raise MXNetError(
                        'New shape of arg: %s is larger than original. First making a big '
                        'executor and then down sizing it is more efficient than the reverse. '
                        'If you really want to up size, set allow_up_sizing=True to enable '
                        'allocation of new arrays.' % name)
                return nd.zeros(shape, ctx=arr.context, dtype=arr.dtype)
            view = _view(arr, shape)
            return view if view is not None else nd.zeros(shape, ctx=arr.context,
                                                          dtype=arr.dtype)

        def check(name, arr, shape):
            if not (partial_shaping or name in provided or shape == tuple(arr.shape)):
                raise MXNetError(
                    'Shape of unspecified %s: %s changed. This can cause the new executor to '
                    'not share parameters with the old one. Please check for error in network. '
                    'If this is intended, set partial_shaping=True to suppress this warning.'
                    % ('arg', name))

        args, grads, aux = [], [], []
        for name, arr, grad, shape in zip(self._arg_names, self.arg_arrays, self.grad_arrays,
                                          arg_shapes):
            check(name, arr, shape)
            args.append(resize(name, arr, shape, 'arg'))
            grads.append(None if grad is None else resize(name, grad, shape, 'grad'))
        for name, arr, shape in zip(self._aux_names, self.aux_arrays, aux_shapes):
            if not (partial_shaping or shape == tuple(arr.shape)):
                check(name, arr, shape)
            aux.append(resize(name, arr, shape, 'aux'))
        outputs = None
        if self.outputs and all(s and 0 not in s for s in out_shapes):
            outputs = []
            for arr, shape in zip(self.outputs, out_shapes):
                view = _view(arr, tuple(shape))
                outputs.append(view if view is not None else
                               nd.zeros(shape, ctx=arr.context, dtype=arr.dtype))
        exe = Executor(self._symbol, self._ctx, self._reqs, self._group2ctx, args, grads, aux,
                       outputs)
        if self._monitor_callback is not None:
            exe.set_monitor_callback(self._monitor_callback, self._monitor_all)
        return exe

    def debug_str(self):
        """The bound graph as text: outputs, then each node with its inputs and attributes
        (MXNet's layout)."""
        return self._symbol.debug_str()

    def get_optimized_symbol(self):
        """The symbol the executor runs (after common-subexpression elimination)."""
        return self._optimized


def _eliminate_common_expr(symbol):
    """MXNet's common-subexpression elimination (MXNET_ELIMINATE_COMMON_EXPR): op nodes with
    the same op, attributes and (already merged) inputs become one; random ops and ops that
    update an input in place are kept apart. Heads that end up the same entry get a `_copy`,
    so each output stays its own array. The symbol itself when nothing merges."""
    nodes, heads = symbol._graph()
    remap, seen = list(range(len(nodes))), {}
    for i, (_, op, attrs, inputs, _, _) in enumerate(nodes):
        if op is None or any(v > 0 for _, _, v in inputs) or _core.op_info(op)['random']:
            continue
        key = (op, tuple(sorted(attrs.items())), tuple((remap[n], k) for n, k, _ in inputs))
        remap[i] = seen.setdefault(key, i)
    merged_heads = [(remap[n], k) for n, k in heads]
    if remap == list(range(len(nodes))) and len(set(merged_heads)) == len(merged_heads):
        return symbol
    from .symbol.symbol import Group
    built = {}

    def entry(n, k):
        if nodes[n][1] is None:
            return _core.symbol_internal(symbol, n, 0)
        out = built[n]
        return out if out._num_outputs == 1 else out[k]

    for i, (name, op, attrs, inputs, _, _) in enumerate(nodes):
        if op is not None and remap[i] == i:
            built[i] = _core.symbol_op(op, name, dict(attrs),
                                       [entry(remap[n], k) for n, k, _ in inputs])
    outs, used = [], set()
    for n, k in merged_heads:
        out = entry(n, k)
        if (n, k) in used:  # a second output on one entry gets its own array
            out = _core.symbol_op('_copy', '%s_copy%d' % (nodes[n][0], len(outs)), {}, [out])
        used.add((n, k))
        outs.append(out)
    return outs[0] if len(outs) == 1 else Group(outs)


def _check_differentiable(symbol):
    """Raises MXNetError, as MXNet's bind does when it builds the backward graph, when an op
    without a gradient rule would have to pass on a gradient that is not known to be zero.

    MXNet's gradient pass walks every node reachable from the outputs (whichever arguments need
    gradients), last first. An output's gradient is zero only when every gradient flowing into
    it comes from an op whose gradient is zero by definition (stop_gradient, argmax, ...: our
    no_grad flag); a head's gradient and an unused output's (MXNet aggregates nothing into a
    zeros_without_dtype node, not one of its zero ops) count as non-zero, as do the input
    gradients of an op with a gradient rule. An op with neither a rule nor the no_grad flag
    (batch_take) is accepted only when all its output gradients are zero; it then passes zeros
    on."""
    nodes, heads = symbol._graph()
    # zero[n][k]: None while nothing flows into output k of node n, else whether all of it is
    # zero.
    zero = [[None] * node[4] for node in nodes]
    for n, k in heads:
        zero[n][k] = False
    for n in range(len(nodes) - 1, -1, -1):
        _, op, _, inputs, _, _ = nodes[n]
        if op is None or not inputs:
            continue
        info = _core.op_info(op)
        outs_zero = all(z is True for z in zero[n])
        if info['has_grad']:
            in_zero = False
        elif info['no_grad'] or outs_zero:
            in_zero = True
        else:
            raise MXNetError('Operator %s is non-differentiable because it has no gradient '
                             '(MXNet: it did not register an FGradient attribute)'
                             % info['name'])
        for i, k, _ in inputs:
            zero[i][k] = in_zero if zero[i][k] is None else (zero[i][k] and in_zero)


def _as_nd(array, like):
    if isinstance(array, NDArray):
        return array
    from . import ndarray as nd
    return nd.array(array, ctx=like.context)


def _grad_req_list(grad_req, names):
    """grad_req (a str for all, a list in argument order, or a dict by name: others 'null')
    as one req per argument; MXNet's ValueError for an unknown req."""
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError('grad_req: %d entries for %d arguments (%s)'
                             % (len(grad_req), len(names), ', '.join(names)))
        reqs = list(grad_req)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, 'null') for n in names]
    else:
        raise TypeError('grad_req must be a str, a list or a dict, got %s'
                        % type(grad_req).__name__)
    for r in reqs:
        if r not in _GRAD_REQS:
            raise ValueError('grad_req must be in %s' % str({'null': 0, 'write': 1, 'add': 3}))
    return reqs
