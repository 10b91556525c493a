"""MXNet's `mx.operator`: operators written in Python (CustomOp, CustomOpProp, register, and the
older PythonOp / NumpyOp / NDArrayOp), and the registry queries get_all_registered_operators /
get_operator_arguments.

A registered CustomOpProp runs as the `Custom` op (op_type=its name; other keywords reach the
class as strings, as in MXNet):
- imperatively (`nd.Custom`) here in Python: infer_shape / infer_type, create_operator and
  forward per call, and under autograd.record() one tape node whose backward is the operator's;
- in a graph (`sym.Custom`, a hybridized block, a bound Symbol, a loaded JSON) as a node of the
  C op, whose shape rule and kernels call back into the dispatcher below through the binding
  (csrc/python/custom.c), with the GIL taken there. A graph keeps one operator instance per
  (properties, input shapes and dtypes), made on first use; MXNet's executor keeps one per node.
Properties are made once per (op_type, keywords) and shared by the nodes that name them.
Errors in the Python code become MXNetError naming the op_type and the method that failed.
"""
import collections
import threading
import warnings

import numpy as _np

from . import _core
from . import profiler as _profiler
from .base import MXNetError, _dtype_flag, _np_dtype

__all__ = ['CustomOp', 'CustomOpProp', 'register', 'get_all_registered_operators',
           'get_operator_arguments', 'OperatorArguments', 'PythonOp', 'NumpyOp', 'NDArrayOp']


class CustomOp:
    """Base class of a Python operator's computation (MXNet's CustomOp): forward and backward
    receive lists of NDArrays and write their results with `assign`."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Computes out_data from in_data (and aux, which it may update); req[i] says how to
        write out_data[i] ('null', 'write', 'inplace' or 'add')."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Writes the gradients of the arguments into in_grad as req says."""

    def assign(self, dst, req, src):
        """Writes src into dst as req says ('null', 'write', 'inplace' or 'add')."""
        if req == 'null':
            return
        if req in ('write', 'inplace'):
            dst[:] = src
        elif req == 'add':
            dst[:] += src


class CustomOpProp:
    """Base class of a Python operator's properties (MXNet's CustomOpProp): its inputs, outputs
    and auxiliary states, shape and dtype rules, and create_operator. need_top_grad=False marks
    an operator whose backward does not read the output gradients (a loss)."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes[, auxiliary shapes]) from the argument shapes: by
        default every output has the first argument's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(argument dtypes, output dtypes[, auxiliary dtypes]): by default the first
        argument's."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """Storage types: only 'default' (dense) exists in hybridgluon."""
        for i, stype in enumerate(in_stype):
            if stype != 'default':
                raise MXNetError('infer_storage_type: input %d has storage type %r; '
                                 'hybridgluon has dense arrays only' % (i, stype))
        return (in_stype, ['default'] * len(self.list_outputs()),
                ['default'] * len(self.list_auxiliary_states()))

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """Storage types of the backward: all 'default' (dense)."""
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(['default'] * len(x) for x in lists)

    def list_outputs(self):
        return ['output']

    def list_arguments(self):
        return ['data']

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The values backward reads (MXNet frees the others early). hybridgluon hands backward
        all of them; the method is kept for code that calls it."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The CustomOp that computes, for these input shapes and dtype flags on ctx."""
        return CustomOp()


_REGISTRY = {}  # op_type -> CustomOpProp subclass
_REGISTRY_LOCK = threading.Lock()


def register(reg_name):
    """Registers a CustomOpProp subclass as op_type `reg_name` (a later registration of the
    same name replaces it for the nodes made afterwards)."""
    def do_register(prop_cls):
        with _REGISTRY_LOCK:
            _REGISTRY[reg_name] = prop_cls
        return prop_cls
    return do_register


# ---- the dispatcher: properties by handle, shape rules, operator calls --------------------------

def _describe(exc):
    text = str(exc)
    return '%s%s' % (type(exc).__name__, ': ' + text if text else '')


def _error(op_type, msg):
    return MXNetError("Custom operator '%s': %s" % (op_type, msg))


def _call(op_type, what, fn, *args, **kwargs):
    """fn(*args, **kwargs), an exception in it becoming MXNetError naming op_type and what
    failed (as MXNet reports 'Error in CustomOp.forward')."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (the user's code: any exception)
        raise _error(op_type, '%s raised %s' % (what, _describe(e))) from e


_PROFILED = ('CustomOp.forward', 'CustomOp.backward')


class _Entry:
    """One (op_type, keywords): its properties, their lists, and the operator instances a graph
    uses, by input shapes and dtypes."""

    def __init__(self, op_type, prop):
        self.op_type = op_type
        self.prop = prop
        self.args = self.call('list_arguments', prop.list_arguments)
        self.outs = self.call('list_outputs', prop.list_outputs)
        self.auxs = self.call('list_auxiliary_states', prop.list_auxiliary_states)
        for what, names in (('list_arguments', self.args), ('list_outputs', self.outs),
                            ('list_auxiliary_states', self.auxs)):
            if not isinstance(names, (list, tuple)) or not all(isinstance(n, str)
                                                               for n in names):
                raise self.error('%s must return a list of names, got %r' % (what, names))
        self.args, self.outs, self.auxs = list(self.args), list(self.outs), list(self.auxs)
        na, no, nx = len(self.args), len(self.outs), len(self.auxs)
        # What a graph node can hold (ops/custom.c checks the same), so that an operator that
        # runs imperatively also runs hybridized.
        if no < 1 or na + nx > 32 or 2 * no + na + nx > 64:
            raise self.error('has %d argument(s), %d output(s) and %d auxiliary state(s): it '
                             'needs at least one output, at most 32 inputs and 2 * outputs + '
                             'inputs <= 64' % (na, no, nx))
        self.ops = {}
        self.lock = threading.Lock()

    def error(self, msg):
        return _error(self.op_type, msg)

    def call(self, what, fn, *args, **kwargs):
        if what in _PROFILED:  # the profiler times forward and backward (MXNet's names)
            with _profiler._custom_op(self.op_type, what == 'CustomOp.backward'):
                return _call(self.op_type, what, fn, *args, **kwargs)
        return _call(self.op_type, what, fn, *args, **kwargs)

    def operator(self, ctx, shapes, flags):
        """The graph's operator instance for these inputs (made once)."""
        key = (tuple(tuple(s) for s in shapes), tuple(flags))
        with self.lock:
            op = self.ops.get(key)
            if op is None:
                op = self.create_operator(ctx, shapes, flags)
                self.ops[key] = op
        return op

    def create_operator(self, ctx, shapes, flags):
        op = self.call('create_operator', self.prop.create_operator, ctx,
                       [list(s) for s in shapes], list(flags))
        if not isinstance(op, CustomOp) and not (hasattr(op, 'forward')
                                                 and hasattr(op, 'backward')):
            raise self.error('create_operator returned %r, not a CustomOp' % (op,))
        return op


def _shape_of(entry, what, i, s):
    try:
        shape = tuple(int(d) for d in s)
    except (TypeError, ValueError):
        raise entry.error('infer_shape returned %r for %s %d: a shape is a tuple of ints'
                          % (s, what, i)) from None
    if any(d < 0 for d in shape):
        raise entry.error('infer_shape returned the negative shape %s for %s %d'
                          % (shape, what, i))
    return shape


def _lists(entry, method, ret, counts):
    """The 2 or 3 lists infer_shape / infer_type return, checked against the counts."""
    if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
        raise entry.error('%s must return 2 or 3 lists, got %r' % (method, ret))
    ret = [list(x) for x in ret] + ([[]] if len(ret) == 2 else [])
    for got, want, what in zip(ret, counts, ('input', 'output', 'aux state')):
        if len(got) != want:
            raise entry.error('%s: expecting %d entries in returned %s %s, got %d'
                              % (method, want, what, 'shapes' if 'shape' in method else 'types',
                                 len(got)))
    return ret


def _infer(entry, shapes, flags):
    """infer_shape and infer_type for inputs (arguments then auxiliary states: shape tuples or
    None when unknown, dtype flags or -1). Returns (input shapes, input flags, output shapes,
    output flags), None / -1 where still unknown; a known input the rules contradict is an
    error naming it."""
    na, no, nx = len(entry.args), len(entry.outs), len(entry.auxs)
    names = entry.args + entry.auxs
    ret = entry.call('infer_shape', entry.prop.infer_shape,
                     [list(s) if s is not None else [] for s in shapes[:na]])
    ins, outs, auxs = _lists(entry, 'infer_shape', ret, (na, no, nx))
    got = [_shape_of(entry, 'input', i, s) for i, s in enumerate(ins + auxs)]
    new_shapes = []
    for i, (given, s) in enumerate(zip(shapes, got)):
        if given is None:
            new_shapes.append(s if (s or i >= na) else None)
        elif given != s:
            raise entry.error("infer_shape returned shape %s for input '%s', which has shape %s"
                              % (s, names[i], given))
        else:
            new_shapes.append(given)
    known = all(s is not None for s in new_shapes[:na])
    out_shapes = [_shape_of(entry, 'output', i, s) if known else None for i, s in enumerate(outs)]
    types = [_np_dtype(f) if f >= 0 else None for f in flags[:na]]
    ret = entry.call('infer_type', entry.prop.infer_type, types)
    tin, tout, taux = _lists(entry, 'infer_type', ret, (na, no, nx))

    def flag(t, what, i):
        if t is None:
            return -1
        try:
            return _dtype_flag(t)
        except (TypeError, MXNetError):
            raise entry.error('infer_type returned %r for %s %d: not a dtype' % (t, what, i)) \
                from None
    new_flags = []
    for i, (given, t) in enumerate(zip(flags, tin + taux)):
        f = flag(t, 'input', i)
        if given >= 0 and f >= 0 and f != given:
            raise entry.error("infer_type returned %s for input '%s', which is %s"
                              % (_np.dtype(_np_dtype(f)).name, names[i],
                                 _np.dtype(_np_dtype(given)).name))
        new_flags.append(given if given >= 0 else f)
    out_flags = [flag(t, 'output', i) for i, t in enumerate(tout)]
    return new_shapes, new_flags, out_shapes, out_flags


class _Dispatcher:
    """What the binding calls: handles for (op_type, keywords), and the graph op's callbacks."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_key = {}
        self._entries = [None]  # handle 0 means "none"

    def create(self, op_type, kwargs):
        with _REGISTRY_LOCK:
            cls = _REGISTRY.get(op_type)
        if cls is None:
            raise MXNetError("Custom operator '%s' is not registered: register its CustomOpProp "
                             "with @mx.operator.register('%s') before making or loading a "
                             "graph that uses it" % (op_type, op_type))
        key = (op_type, cls, tuple(sorted(kwargs.items())))
        with self._lock:
            handle = self._by_key.get(key)
        if handle is None:
            what = 'CustomOpProp(%s)' % ', '.join('%s=%r' % kv for kv in sorted(kwargs.items()))
            prop = _call(op_type, what, cls, **kwargs)
            entry = _Entry(op_type, prop)
            with self._lock:
                handle = self._by_key.get(key)
                if handle is None:
                    handle = len(self._entries)
                    self._entries.append(entry)
                    self._by_key[key] = handle
        e = self._entries[handle]
        return handle, len(e.args), len(e.outs), len(e.auxs)

    def entry(self, handle):
        return self._entries[handle]

    def infer(self, handle, shapes, flags):
        return _infer(self._entries[handle], shapes, flags)

    def forward(self, handle, is_train, ins, outs):
        e = self._entries[handle]
        na = len(e.args)
        op = e.operator(_ctx_of(ins), [x.shape for x in ins], [_dtype_flag(x.dtype) for x in ins])
        e.call('CustomOp.forward', op.forward, is_train=is_train, req=['write'] * len(outs),
               in_data=ins[:na], out_data=outs, aux=ins[na:])

    def backward(self, handle, is_train, ins, grads):
        e = self._entries[handle]
        na, no = len(e.args), len(e.outs)
        ograds, data, outs, aux = ins[:no], ins[no:no + na], ins[no + na:2 * no + na], \
            ins[2 * no + na:]
        op = e.operator(_ctx_of(data + aux), [x.shape for x in data + aux],
                        [_dtype_flag(x.dtype) for x in data + aux])
        e.call('CustomOp.backward', op.backward, req=['write'] * na, out_grad=ograds,
               in_data=data, out_data=outs, in_grad=grads, aux=aux)


def _ctx_of(arrays):
    from .context import current_context
    return arrays[0].context if arrays else current_context()


_DISPATCH = _Dispatcher()
_core._set_custom_dispatch(_DISPATCH, MXNetError)


# ---- nd.Custom and sym.Custom --------------------------------------------------------------------

def _split_kwargs(kwargs, is_input):
    """(op_type, name, inputs by name, keyword strings) from a Custom call's keywords."""
    from .symbol.symbol import _attr_str
    kwargs = dict(kwargs)
    op_type = kwargs.pop('op_type', None)
    if op_type is None:
        raise MXNetError('Required parameter op_type of string is not presented, in operator '
                         'Custom')
    name = kwargs.pop('name', None)
    named, strs = {}, {}
    for k, v in kwargs.items():
        if is_input(v):
            named[k] = v
        elif not (k.startswith('__') and k.endswith('__')) and v is not None:
            strs[k] = _attr_str(v)
    return str(op_type), name, named, strs


def _gather(entry, args, named, missing):
    """The inputs in list_arguments + list_auxiliary_states order, from positional and named
    ones; missing(name) gives an input nobody passed (or raises)."""
    names = entry.args + entry.auxs
    if len(args) > len(names):
        raise entry.error('takes %d input(s) (%s), got %d' % (len(names), ', '.join(names),
                                                              len(args)))
    unknown = sorted(set(named) - set(names))
    if unknown:
        raise entry.error("has no input named '%s' (inputs: %s)" % (unknown[0],
                                                                    ', '.join(names)))
    inputs = list(args)
    for n in names[len(args):]:
        inputs.append(named[n] if n in named else missing(n))
    for n in names[:len(args)]:
        if n in named:
            raise entry.error("input '%s' given twice" % n)
    return inputs


class _ImperativeBackward:
    """The tape's backward of one nd.Custom call: the operator that ran forward, on the same
    arrays."""

    def __init__(self, entry, op, ins, outs, aux):
        self.entry, self.op, self.ins, self.outs, self.aux = entry, op, ins, outs, aux

    def backward(self, *ograds):
        from . import ndarray
        grads = [ndarray.zeros(x.shape, ctx=x.context, dtype=x.dtype) for x in self.ins]
        self.entry.call('CustomOp.backward', self.op.backward, req=['write'] * len(grads),
                        out_grad=list(ograds), in_data=self.ins, out_data=self.outs,
                        in_grad=grads, aux=self.aux)
        return grads


def _nd_custom(*args, **kwargs):
    """nd.Custom(*inputs, op_type=name, **keywords): runs the registered operator on NDArrays
    (see the module's docstring)."""
    from . import autograd, ndarray
    from .symbol import Symbol
    if any(isinstance(a, Symbol) for a in list(args) + list(kwargs.values())):
        return _sym_custom(*args, **kwargs)
    out = kwargs.pop('out', None)
    kwargs.pop('attr', None)
    op_type, _, named, strs = _split_kwargs(kwargs, lambda v: isinstance(v, ndarray.NDArray))
    for i, a in enumerate(args):
        if not isinstance(a, ndarray.NDArray):
            raise MXNetError("Custom operator '%s': input %d must be an NDArray, got %s"
                             % (op_type, i, type(a).__name__))
    entry = _DISPATCH.entry(_DISPATCH.create(op_type, strs)[0])

    def missing(n):
        raise entry.error("input '%s' is missing" % n)
    inputs = _gather(entry, args, named, missing)
    na = len(entry.args)
    shapes = [tuple(x.shape) for x in inputs]
    flags = [_dtype_flag(x.dtype) for x in inputs]
    new_shapes, new_flags, out_shapes, out_flags = _infer(entry, shapes, flags)
    for i, (s, f) in enumerate(zip(out_shapes, out_flags)):
        if s is None or f < 0:
            raise entry.error('infer_shape / infer_type did not decide output %d' % i)
    ctx = _ctx_of(inputs)
    outs = [ndarray.zeros(s, ctx=ctx, dtype=_np_dtype(f)) for s, f in zip(out_shapes, out_flags)]
    op = entry.create_operator(ctx, [list(s) for s in shapes], flags)
    is_train = autograd.is_training()
    ins, aux = inputs[:na], inputs[na:]
    with autograd.pause(train_mode=is_train):
        entry.call('CustomOp.forward', op.forward, is_train=is_train, req=['write'] * len(outs),
                   in_data=ins, out_data=outs, aux=aux)
    if autograd.is_recording() and ins:
        _core.record_function(_ImperativeBackward(entry, op, ins, outs, aux), tuple(ins),
                              tuple(outs))
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for t, o in zip(targets, outs):
            t[:] = o
        return out
    return outs[0] if len(outs) == 1 else outs


def _sym_custom(*args, **kwargs):
    """sym.Custom(*inputs, op_type=name, **keywords): a Custom node; inputs not given become
    variables named <node>_<input>, as MXNet makes them."""
    from .attribute import current as _attr_scope
    from .name import NameManager
    from .symbol import Symbol, var
    from .symbol.op import _with_origin
    from .symbol.symbol import _attr_str, _hidden_key
    extra = _attr_scope().get(kwargs.pop('attr', None))
    kwargs.pop('out', None)
    op_type, name, named, strs = _split_kwargs(kwargs, lambda v: isinstance(v, Symbol))
    for i, a in enumerate(args):
        if not isinstance(a, Symbol):
            raise TypeError("Custom operator '%s': input %d must be a Symbol, got %s"
                            % (op_type, i, type(a).__name__))
    entry = _DISPATCH.entry(_DISPATCH.create(op_type, strs)[0])
    node_name = NameManager.current.get(name, 'custom')
    attrs = dict(strs, op_type=op_type)
    # MXNet gives the variables it makes for missing inputs the node's attributes.
    inputs = _gather(entry, args, named, lambda n: var('%s_%s' % (node_name, n), attr=attrs))
    for k, v in extra.items():
        attrs[_hidden_key(k)] = _attr_str(v)
    for k, v in kwargs.items():
        if k.startswith('__') and k.endswith('__'):
            attrs[k] = _attr_str(v)
    return _with_origin(_core.symbol_op('Custom', node_name, attrs, inputs))


def _output_names(attrs):
    """A Custom node's output names: its properties' list_outputs()."""
    strs = {k: v for k, v in attrs.items()
            if k != 'op_type' and not (k.startswith('__') and k.endswith('__'))}
    return _DISPATCH.entry(_DISPATCH.create(attrs['op_type'], strs)[0]).outs


def _install():
    """nd.Custom and sym.Custom (and so F.Custom) call the functions above; each is a function
    of the namespace it lives in, so that the namespace's stub lists it."""
    from . import ndarray, symbol
    from .symbol import op as _symop
    def bind(module, impl):
        def Custom(*args, **kwargs):  # noqa: N802  (MXNet's name)
            return impl(*args, **kwargs)
        Custom.__doc__ = impl.__doc__
        Custom.__module__ = module.__name__
        setattr(module, 'Custom', Custom)
    for module, impl in ((ndarray, _nd_custom), (symbol, _sym_custom), (_symop, _sym_custom)):
        bind(module, impl)
    from .symbol.symbol import _OUTPUT_NAMES
    _OUTPUT_NAMES['Custom'] = _output_names


_install()
register('custom_op')(CustomOpProp)


# ---- the older Python operators (MXNet 1.x keeps them, deprecated) -----------------------------

class PythonOp:
    """Base class of MXNet's first Python operators (deprecated there in favour of CustomOp):
    forward(in_data, out_data) and backward(out_grad, in_data, out_data, in_grad) on one
    instance, made into a symbol by get_symbol (or calling the instance)."""
    _ref_holder = []

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn('PythonOp has been deprecated. Please use CustomOp')

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        raise NotImplementedError('Must override this')

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ['output']

    def list_arguments(self):
        return ['data']

    def need_top_grad(self):
        return self.need_top_grad_

    def _symbol(self, op_type, args, kwargs):
        """A Custom node running this instance (kept alive, as MXNet keeps it, by the class)."""
        with _REGISTRY_LOCK:
            PythonOp._ref_holder.append(self)
            info = len(PythonOp._ref_holder) - 1
        from . import symbol
        return symbol.Custom(*args, op_type=op_type, info=info, **kwargs)


class _PythonOpProp(CustomOpProp):
    """The properties of a PythonOp instance (keyword info: its place in _ref_holder)."""

    def __init__(self, info):
        self.op = PythonOp._ref_holder[int(info)]
        super().__init__(need_top_grad=self.op.need_top_grad())

    def list_arguments(self):
        return self.op.list_arguments()

    def list_outputs(self):
        return self.op.list_outputs()

    def infer_shape(self, in_shape):
        return self.op.infer_shape(in_shape)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _PythonOpRunner(self.op)


class _PythonOpRunner(CustomOp):
    """Runs a PythonOp's forward and backward: on NumPy copies for a NumpyOp (whose results
    are copied back), on the NDArrays themselves for an NDArrayOp."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, is_train, req, in_data, out_data, aux):
        if isinstance(self.op, NDArrayOp):
            self.op.forward(in_data=in_data, out_data=out_data)
            return
        outs = [o.asnumpy() for o in out_data]
        self.op.forward(in_data=[x.asnumpy() for x in in_data], out_data=outs)
        for dst, src in zip(out_data, outs):
            dst[:] = src

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if isinstance(self.op, NDArrayOp):
            self.op.backward(out_grad=out_grad, in_data=in_data, out_data=out_data,
                             in_grad=in_grad)
            return
        grads = [g.asnumpy() for g in in_grad]
        self.op.backward(out_grad=[g.asnumpy() for g in out_grad],
                         in_data=[x.asnumpy() for x in in_data],
                         out_data=[o.asnumpy() for o in out_data], in_grad=grads)
        for dst, src in zip(in_grad, grads):
            dst[:] = src


register('_python_op')(_PythonOpProp)


class NumpyOp(PythonOp):
    """A PythonOp whose forward and backward work on NumPy arrays (MXNet's NumpyOp)."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn('NumpyOp has been deprecated. Please use CustomOp')

    def get_symbol(self, *args, **kwargs):
        return self._symbol('_python_op', args, kwargs)


class NDArrayOp(PythonOp):
    """A PythonOp whose forward and backward work on NDArrays (MXNet's NDArrayOp)."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn('NDArrayOp has been deprecated. Please use CustomOp')

    def get_symbol(self, *args, **kwargs):
        return self._symbol('_python_op', args, kwargs)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = []
        if self.need_top_grad():
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps


def get_all_registered_operators():
    """Every registered operator name, aliases included (MXNet's MXListAllOpNames)."""
    names = []
    for name in _core.list_ops():
        names.append(name)
        names.extend(_core.op_info(name)['aliases'])
    return names


OperatorArguments = collections.namedtuple('OperatorArguments', ['narg', 'names', 'types'])

_SCALAR_TYPES = {'int': 'int', 'float': 'float', 'bool': 'boolean', 'tuple': 'Shape',
                 'string': 'string'}


def _format_default(kind, text):
    """A default in the form MXNet's parameter descriptions print it."""
    if kind == 'bool':
        return {'True': '1', 'False': '0'}.get(text, text)
    if kind == 'tuple':
        return text.replace('(', '[').replace(')', ']').replace(' ', '').rstrip(',]') + ']' \
            if text.startswith('(') else text
    if kind in ('int', 'string'):
        return "'%s'" % text
    return text


def _describe_attr(attr):
    """MXNet's type string of one attribute: 'float, optional, default=0.5',
    "{'relu', 'tanh'}, required", 'Shape(tuple), optional, default=[]', ..."""
    kind, default, required = attr['type'], attr['default'], attr['required']
    optional_none = attr['optional']
    if kind in ('enum', 'dtype'):
        choices = attr['choices'] if kind == 'enum' else list(_core.DTYPE_FLAGS)
        items = ', '.join("'%s'" % c for c in sorted(choices))
        if optional_none:
            items = 'None, ' + items
        if required:
            return '{%s}, required' % items
        return "{%s},optional, default='%s'" % (items, default)
    base = _SCALAR_TYPES.get(kind, kind)
    if optional_none:
        base += ' or None'
    elif kind == 'tuple':
        base = 'Shape(tuple)'
    if required:
        return '%s, required' % base
    if optional_none and default == 'None':
        return '%s, optional, default=None' % base
    return '%s, optional, default=%s' % (base, _format_default(kind, default))


def get_operator_arguments(op_name):
    """The operator's arguments as MXNet's OperatorArguments(narg, names, types): its array
    inputs ('NDArray-or-Symbol', or 'NDArray-or-Symbol[]' for a variable number) followed by
    its attributes with their type descriptions. Raises MXNetError for an unknown name."""
    try:
        info = _core.op_info(op_name)
    except MXNetError:
        raise MXNetError('Operator %s is not registered' % op_name) from None
    in_type = 'NDArray-or-Symbol[]' if info['varargs'] else 'NDArray-or-Symbol'
    names = list(info['inputs'])
    types = [in_type] * len(names)
    for attr in info['attrs']:
        names.append(attr['name'])
        types.append(_describe_attr(attr))
    return OperatorArguments(len(names), names, types)
