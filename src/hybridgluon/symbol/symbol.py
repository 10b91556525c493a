"""Symbol: a node of a computation graph (MXNet's `mx.sym.Symbol`), held by the C core.

Symbols are built by `sym.var` and by calling any registered op on symbols (`sym.relu(x)`,
`sym.FullyConnected(data=x, num_hidden=10)`); missing op inputs become variables named
`<node>_<input>` as MXNet names them. The graph is written and read as MXNet 1.x JSON.
"""
import numbers
import os
import sys

from .. import _core
from ..base import MXNetError, NotImplementedForSymbol, _dtype_flag, _dtype_name
from ..name import NameManager, Prefix  # noqa: F401  (re-exported by sym)

__all__ = ['Symbol', 'var', 'Variable', 'Group', 'load', 'load_json']

_FLOAT32 = _core.DTYPE_FLAGS['float32']  # the default dtype's MXNet type flag


def _numpy_scalar_str(value):
    """MXNet's spelling of a NumPy scalar (or 0-d array): what str() gives under NumPy 1.x,
    decided from the value, so NumPy 2's repr (`np.int64(3)`) never reaches a string. None
    when value is not one."""
    dtype = getattr(value, 'dtype', None)
    if getattr(value, 'shape', None) != () or not hasattr(dtype, 'kind') or \
            not type(value).__module__.startswith('numpy'):
        return None
    if dtype.kind == 'b':
        return 'True' if value else 'False'
    if dtype.kind in 'iu':
        return str(int(value))
    if dtype.kind == 'f':
        return str(value[()])  # NumPy's shortest round-trip digits for the value's precision
    return None


def _attr_item_str(value):
    """One element of a tuple or list attribute, as Python's repr of the container spells it
    under NumPy 1.x."""
    kind = type(value)
    if kind is int or kind is float or kind is bool or value is None:
        return repr(value)
    if isinstance(value, (list, tuple)):
        return _attr_seq_str(value)
    if isinstance(value, str):
        return repr(str(value))
    text = _numpy_scalar_str(value)
    return repr(value) if text is None else text


def _attr_seq_str(value):
    items = [_attr_item_str(v) for v in value]
    if isinstance(value, list):
        return '[%s]' % ', '.join(items)
    return '(%s)' % (items[0] + ',' if len(items) == 1 else ', '.join(items))


def _attr_str(value):
    """MXNet's front-end rule for attribute strings, str(value), applied to the value rather
    than to whatever str() of a NumPy type prints: numbers (Python's or NumPy's of any kind)
    as MXNet spells them, tuples and lists of them (nested) as Python 3 with NumPy 1.x prints
    them, dtypes by name."""
    kind = type(value)
    if kind is int or kind is float:  # most attributes, so decided first
        return str(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (list, tuple)):
        return _attr_seq_str(value)
    if isinstance(value, type) or hasattr(value, 'name') and hasattr(value, 'itemsize'):
        return _dtype_name(value)
    text = _numpy_scalar_str(value)
    return str(value) if text is None else text


_OPERATOR_HINTS = {'add': 'plus', 'sub': 'minus'}


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# While a HybridBlock traces hybrid_forward: the path of the block being traced
# ("net.features.2"), so nodes and errors can name it. None outside tracing.
_TRACE = {'path': None}


# co_filename -> whether that file lies in this package. Every traced op asks for the frames
# above it, so the answer is remembered per file; only absolute names are remembered, since a
# relative one (a script run as `python net.py`) means another file after a chdir.
_IN_PKG = {}


def _in_package(filename):
    inside = _IN_PKG.get(filename)
    if inside is None:
        inside = os.path.abspath(filename).startswith(_PKG_DIR)
        if os.path.isabs(filename):
            _IN_PKG[filename] = inside
    return inside


def _user_location():
    """'file.py:31' of the innermost caller outside this package, or None."""
    f = sys._getframe(1)
    known = _IN_PKG
    while f is not None:
        inside = known.get(f.f_code.co_filename)
        if inside is None:
            inside = _in_package(f.f_code.co_filename)
        if not inside:
            break
        f = f.f_back
    if f is None:
        return None
    return '%s:%d' % (os.path.basename(f.f_code.co_filename), f.f_lineno)


def _from_user():
    """Whether the caller of the caller is user code (not this package)."""
    return not _in_package(sys._getframe(2).f_code.co_filename)


def _origin():
    """Where a node is being made: 'net.features.2, model.py:31' (block path while tracing)."""
    loc = _user_location()
    parts = [p for p in (_TRACE['path'], loc) if p]
    return ', '.join(parts) if parts else None


class _SymbolMisuse(NotImplementedForSymbol, AttributeError):
    """An NDArray-only operation on a Symbol; also an AttributeError so hasattr() is False."""

    def __init__(self, what, why):
        MXNetError.__init__(self)
        self.function, self.alias, self.args = what, None, []
        where = _origin()
        self._msg = ('%s cannot work on a Symbol%s. %s Inside a hybridized hybrid_forward the '
                     'inputs are Symbols: placeholders of a graph being traced once, not data, '
                     'so values, shapes and Python control flow on them are not available; '
                     'write the computation with F.* operators (F.where, F.slice_axis, '
                     'F.reshape with 0/-1 codes...) or call the block without hybridize().'
                     % (what, ' (at %s)' % where if where else '', why))

    def __str__(self):
        return self._msg


def _not_for_symbol(name, alias=None, why='It needs the values of the data.'):
    def method(self, *args, **kwargs):
        raise _SymbolMisuse('%s()' % name if not alias else alias, why)
    method.__name__ = name
    return method


_INPLACE = ('A Symbol has no buffer to update; write `x = x + y` instead of `x += y`.')


# Ops whose output names depend on the node's attributes (Custom: its list_outputs()):
# op name -> callable(attrs) -> names. Filled by the modules that define such ops.
_OUTPUT_NAMES = {}

_SNAKE_HINTS = frozenset(['_equal_scalar', '_not_equal_scalar', '_greater_scalar',
                          '_greater_equal_scalar', '_lesser_scalar', '_lesser_equal_scalar',
                          '_rpower_scalar'])


class Symbol(_core.Symbol):
    """A symbolic graph with one or more outputs."""
    __slots__ = ()
    _hg_symbol = True  # lets the C op functions route symbol inputs here
    # NumPy scalars defer to our reflected operators (np.float32(2) + sym), as NumPy 1.x did
    # by luck of array conversion and NumPy 2 does only when told.
    __array_ufunc__ = None

    # ---- structure -------------------------------------------------------------------------
    @property
    def name(self):
        """The name of a single-output symbol's node (None for a group)."""
        if self._num_outputs != 1:
            return None
        nodes, heads = self._graph()
        return nodes[heads[0][0]][0]

    def _output_names(self, nodes, heads):
        out = []
        for node, index in heads:
            name, op, attrs, _, nout, _ = nodes[node]
            if op is None:
                out.append(name)
                continue
            named_by = _OUTPUT_NAMES.get(op)
            names = named_by(attrs) if named_by else _core.op_info(op)['outputs']
            if names and index < len(names):
                out.append('%s_%s' % (name, names[index]))
            else:
                out.append('%s_output%s' % (name, index if nout > 1 else ''))
        return out

    def list_outputs(self):
        return self._output_names(*self._graph())

    def _variables(self):
        nodes, _ = self._graph()
        aux = set()
        for _, op, _, inputs, _, _ in nodes:
            for node, _, version in inputs:
                if nodes[node][1] is None and version > 0:
                    aux.add(node)
        return nodes, aux

    def list_arguments(self):
        nodes, aux = self._variables()
        return [n[0] for i, n in enumerate(nodes) if n[1] is None and i not in aux]

    def list_auxiliary_states(self):
        nodes, aux = self._variables()
        return [n[0] for i, n in enumerate(nodes) if n[1] is None and i in aux]

    def list_inputs(self):
        nodes, _ = self._graph()
        return [n[0] for n in nodes if n[1] is None]

    def get_internals(self):
        """A group of every node's visible outputs, in topological order."""
        return self._internals()

    def get_children(self):
        """A group of the inputs of this symbol's head node (None for a variable)."""
        nodes, heads = self._graph()
        inputs = nodes[heads[0][0]][3]
        if not inputs:
            return None
        return Group([_node_output(self, nodes, n, k) for n, k, _ in inputs])

    def attr(self, key):
        """The attribute `key` of a single-output symbol's node, or None."""
        nodes, heads = self._graph()
        attrs = nodes[heads[0][0]][2]
        if key in attrs:
            return attrs[key]
        return attrs.get('__%s__' % key) if key in _HIDDEN_KEYS else None

    def list_attr(self, recursive=False):
        if recursive:
            raise DeprecationWarning('Symbol.list_attr with recursive=True has been deprecated. '
                                     'Please use attr_dict instead.')
        nodes, heads = self._graph()
        return _shown_attrs(nodes[heads[0][0]][2])

    def _set_attr(self, **kwargs):
        """Sets attributes (str values) of a single-output symbol's node in place, as MXNet's
        Symbol._set_attr: any key on a variable; on an op node only annotations (__x__ and the
        hidden keys such as lr_mult, stored as __lr_mult__), its parameters being fixed."""
        attrs = {}
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError('Set Attr only accepts string values')
            attrs[_hidden_key(key)] = value
        self._set_attrs(attrs)

    def attr_dict(self):
        """{node name: its attributes} for every node that has some."""
        nodes, _ = self._graph()
        return {n[0]: _shown_attrs(n[2]) for n in nodes if n[2]}

    def __call__(self, *args, **kwargs):
        """A copy of the graph with its arguments replaced by the given symbols: positionally
        in list_arguments() order, or by name (MXNet's Symbol composition)."""
        kwargs.pop('name', None)
        names = self.list_arguments()
        if len(args) > len(names):
            raise MXNetError('compose: %d positional symbols for %d arguments'
                             % (len(args), len(names)))
        mapping = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in self.list_inputs():
                raise MXNetError('compose: %r is not an input of the symbol (inputs: %s)'
                                 % (k, ', '.join(self.list_inputs())))
            mapping[k] = v
        for k, v in mapping.items():
            if not isinstance(v, Symbol):
                raise TypeError('compose: %s must be a Symbol, got %s' % (k, type(v).__name__))
        return self._compose(mapping)

    def eval(self, ctx=None, **kwargs):
        """Binds the NDArrays given by argument name (auxiliary states too, by name) and runs
        one forward; returns the list of outputs (MXNet's bind(...).forward())."""
        from ..context import current_context
        aux_names = self.list_auxiliary_states()
        aux = {k: kwargs.pop(k) for k in aux_names if k in kwargs} if aux_names else None
        return self.bind(ctx or current_context(), kwargs, aux_states=aux).forward()

    # ---- inference ---------------------------------------------------------------------------
    def _infer_metas(self, shapes, dtypes, default_flag, float32_if_undecided=True):
        """Shape and dtype inference over the graph from shapes and dtypes given by input name
        (a variable's own shape= and dtype= when not given; 0 marks an unknown dimension, or
        -1 under NumPy shape semantics, where 0 is a real zero-size dimension).
        Returns ({input name: (shape or None, dtype flag or -1)}, [output metas])."""
        import ast
        from ..util import is_np_shape
        np_shape = is_np_shape()
        nodes, _ = self._graph()
        attrs = {n[0]: n[2] for n in nodes if n[1] is None}
        inputs = self.list_inputs()
        unknown_names = sorted((set(shapes) | set(dtypes)) - set(inputs))
        if unknown_names:
            raise MXNetError('%s: not an input of the symbol (inputs: %s)'
                             % (', '.join(unknown_names), ', '.join(inputs)))
        metas = []
        for name in inputs:
            shape = shapes.get(name)
            if shape is None and '__shape__' in attrs[name]:
                shape = ast.literal_eval(attrs[name]['__shape__'])
            dtype = dtypes.get(name)
            if dtype is not None:
                flag = _dtype_flag(dtype)
            elif '__dtype__' in attrs[name]:
                flag = int(attrs[name]['__dtype__'])
            else:
                flag = -1 if default_flag is None else default_flag
            metas.append((tuple(int(d) for d in shape) if shape is not None else None, flag))
        op = _core.CachedOp(self, inputs)
        if default_flag is None and all(f < 0 for _, f in metas) and float32_if_undecided:
            # Nothing decides a dtype: MXNet's default, float32, for the inputs.
            metas = [(m, _FLOAT32) for m, _ in metas]
        try:
            ins, outs = op.infer(metas, True, np_shape)
        except MXNetError:
            if default_flag is not None or all(f >= 0 for _, f in metas):
                raise
            # An op that cannot run on an undecided dtype: float32 for the undecided inputs.
            ins, outs = op.infer([(m, f if f >= 0 else _FLOAT32) for m, f in metas], True,
                                  np_shape)
        by_name = dict(zip(inputs, ins))
        fill, fill_shape = {}, {}
        for _, opname, _, node_inputs, _, _ in nodes:
            if opname is None:
                continue
            srcs = [nodes[n][0] for n, _, _ in node_inputs if nodes[n][1] is None]
            # As MXNet's type rules (the inputs of an op share its data's dtype): a variable
            # argument left undecided takes the dtype of the first decided input of the op it
            # feeds; auxiliary states take float32, as the rules of BatchNorm and of the
            # multi-precision updates give them for float16 data.
            mutated = {nodes[n][0] for n, _, version in node_inputs if version > 0}
            flags = [by_name[n][1] for n in srcs if by_name[n][1] >= 0]
            for n in srcs:
                if by_name[n][1] < 0 and flags and n not in fill:
                    fill[n] = _FLOAT32 if n in mutated else flags[0]
            # As MXNet's element-wise shape rule, which also runs backwards: the variable
            # inputs of an element-wise op share one shape, each dimension known if any
            # input knows it (max: an unknown dimension reads 0, or -1 under np_shape).
            known = [by_name[n][0] for n in srcs if by_name[n][0] is not None]
            if len(srcs) > 1 and known and _core.op_info(opname)['elemwise'] and \
                    len({len(k) for k in known}) == 1:
                merged = tuple(max(dims) for dims in zip(*known))
                for n in srcs:
                    if by_name[n][0] != merged and n not in fill_shape:
                        fill_shape[n] = merged
        if fill or fill_shape:
            metas = [(fill_shape.get(n, m), fill.get(n, f)) for n, (m, f) in zip(inputs, metas)]
            ins, outs = op.infer(metas, True, np_shape)
            by_name = dict(zip(inputs, ins))
        return by_name, outs

    def _known(self, args, kwargs, what):
        """infer_*'s known values: positionally in list_arguments() order (None: unknown) or
        by name, not both."""
        if args and kwargs:
            raise ValueError('Can only specify known argument %ss either by positional or '
                             'kwargs way.' % what)
        known = dict(kwargs)
        known.update((n, v) for n, v in zip(self.list_arguments(), args) if v is not None)
        if what == 'shape':
            for k, v in known.items():
                if not isinstance(v, (tuple, list)):
                    raise TypeError("Arguments need to be shapes (tuple), but '%s' is %s."
                                    % (k, type(v)))
        return {k: v for k, v in known.items() if v is not None}

    def _infer(self, args, kwargs, partial, what):
        """infer_*: with NumPy shape semantics (np_shape), what stays unknown reads -1 for a
        dimension and None for a shape, as in MXNet; () is then a scalar's shape."""
        from ..util import is_np_shape
        np_shape = is_np_shape()
        known = self._known(args, kwargs, what)
        if what == 'shape':
            by_name, outs = self._infer_metas(known, {}, _FLOAT32)
        else:
            by_name, outs = self._infer_metas({}, known, None, False)
        args_names = self.list_arguments()
        aux_names = self.list_auxiliary_states()
        if what == 'type':
            from ..base import _np_dtype

            def pick(m):
                return _np_dtype(m[1]) if m[1] >= 0 else None
        else:
            def pick(m):
                return m[0] if m[0] is not None or np_shape else ()

        arg = [pick(by_name[n]) for n in args_names]
        aux = [pick(by_name[n]) for n in aux_names]
        out = [pick(m) for m in outs]
        if not partial:
            if what == 'shape' and np_shape:
                def bad(v):
                    return v is None or -1 in v
            elif what == 'shape':
                def bad(v):
                    return not v or 0 in v
            else:
                def bad(v):
                    return v is None
            if any(bad(v) for v in arg + out + aux):
                return None, None, None
        return arg, out, aux

    def infer_shape(self, *args, **kwargs):
        """(argument shapes, output shapes, auxiliary shapes) from known input shapes, or
        (None, None, None) with a warning when some cannot be decided."""
        import warnings
        from ..util import is_np_shape
        res = self._infer(args, kwargs, False, 'shape')
        if res[0] is None:
            arg = self._infer(args, kwargs, True, 'shape')[0]
            if is_np_shape():
                unknown = ['%s: %s' % (n, s) for n, s in zip(self.list_arguments(), arg)
                           if s is None or -1 in s]
                marker = '-1s'
            else:
                unknown = ['%s: %s' % (n, s) for n, s in zip(self.list_arguments(), arg)
                           if not s or 0 in s]
                marker = '0s'
            warnings.warn('Cannot decide shape for the following arguments (%s in shape means '
                          'unknown dimensions). Consider providing them as input:\n\t' % marker
                          + '\n\t'.join(unknown), stacklevel=2)
        return res

    def infer_shape_partial(self, *args, **kwargs):
        """Like infer_shape, with undecided shapes given as () and unknown dimensions as 0 (None
        and -1 under NumPy shape semantics)."""
        return self._infer(args, kwargs, True, 'shape')

    def infer_type(self, *args, **kwargs):
        """(argument, output, auxiliary) dtypes (NumPy types) from known input dtypes, or
        (None, None, None) with a warning when some cannot be decided."""
        import warnings
        res = self._infer(args, kwargs, False, 'type')
        if res[0] is None:
            arg = self._infer(args, kwargs, True, 'type')[0]
            warnings.warn('Cannot decide type for the following arguments. Consider providing '
                          'them as input:\n\t' + '\n\t'.join(
                              '%s: None' % n for n, t in zip(self.list_arguments(), arg)
                              if t is None), stacklevel=2)
        return res

    def infer_type_partial(self, *args, **kwargs):
        """Like infer_type, with undecided dtypes given as None."""
        return self._infer(args, kwargs, True, 'type')

    # ---- executors ---------------------------------------------------------------------------
    def bind(self, ctx, args, args_grad=None, grad_req='write', aux_states=None, group2ctx=None,
             shared_exec=None):
        """An Executor over the caller's arrays: args (and aux_states) as a list in
        list_arguments() order or a dict by name, every one required; args_grad likewise,
        where a missing entry (None, or left out of a dict) means no gradient. The executor
        reads and writes these very arrays."""
        from ..context import Context
        from ..executor import Executor, _grad_req_list
        if not isinstance(ctx, Context):
            raise TypeError('Context type error')
        names = self.list_arguments()
        args = _bind_arrays('args', args, names, False)
        if args_grad is None:
            grads = [None] * len(names)
        else:
            grads = _bind_arrays('args_grad', args_grad, names, True)
        aux = _bind_arrays('aux_states', [] if aux_states is None else aux_states,
                           self.list_auxiliary_states(), False)
        reqs = _grad_req_list(grad_req, names)
        del shared_exec  # arrays are the caller's: nothing for a shared executor to give
        return Executor(self, ctx, reqs, group2ctx, args, grads, aux)

    def simple_bind(self, ctx, grad_req='write', type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An Executor over new zero arrays, their shapes inferred from the input shapes given
        by name (tuples) and their dtypes from type_dict (float32 where nothing decides).
        Arguments named in shared_arg_names take shared_exec's arrays (and gradient arrays),
        auxiliary states take shared_exec's where it has them, and the other arrays reuse
        shared_buffer's memory by name where it is large enough (new ones are added to it).
        group2ctx places the arrays of variables with a ctx_group attribute."""
        from .. import ndarray as nd
        from ..base import _np_dtype
        from ..executor import Executor, _grad_req_list, _view
        for k, v in (stype_dict or {}).items():
            if v not in (None, 'default'):
                raise MXNetError('simple_bind: storage type %r for %s is not supported (dense '
                                 'storage only)' % (v, k))
        if shared_arg_names is not None and not isinstance(shared_arg_names, list):
            raise ValueError('shared_arg_names in simple_bind must be a list or None')
        if shared_buffer is not None and not isinstance(shared_buffer, dict):
            raise ValueError('shared_buffer in simple_bind must be dict or None')
        if isinstance(grad_req, (list, dict)) and not grad_req:
            raise RuntimeError('grad_req in simple_bind cannot be an empty %s'
                               % type(grad_req).__name__)
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, tuple)}
        try:
            by_name, _ = self._infer_metas(shapes, type_dict or {}, None)
            from ..util import is_np_shape
            marker = -1 if is_np_shape() else 0  # 0 is a real zero-size dim under np_shape
            unknown = [n for n in self.list_inputs()
                       if by_name[n][0] is None or marker in by_name[n][0]]
            if unknown:
                raise MXNetError(
                    'InferShape pass cannot decide shapes for the following arguments (%ds '
                    'means unknown dimensions). Please consider providing them as inputs:\n'
                    % marker
                    + ', '.join('%s: %s' % (n, by_name[n][0]) for n in unknown) + ', ')
        except MXNetError as e:
            raise RuntimeError('simple_bind error. Arguments:\n'
                               + ''.join('%s: %s\n' % (k, v) for k, v in kwargs.items())
                               + str(e)) from None
        names = self.list_arguments()
        reqs = _grad_req_list(grad_req, names)
        attrs = {n[0]: n[2] for n in self._graph()[0] if n[1] is None}
        group2ctx = group2ctx or {}
        shared = set(shared_arg_names or ())

        def place(name):
            return group2ctx.get(attrs.get(name, {}).get('__ctx_group__'), ctx)

        def meta(name):
            shape, flag = by_name[name]
            return shape, _np_dtype(flag if flag >= 0 else _FLOAT32)

        def from_buffer(key, shape, dtype, where):
            if shared_buffer is not None and key in shared_buffer:
                old = shared_buffer[key]
                if old.dtype == dtype and old.size >= max(1, _shape_size(shape)):
                    view = _view(old, shape)
                    if view is not None:
                        return view
            arr = nd.zeros(shape, ctx=where, dtype=dtype)
            if shared_buffer is not None:
                shared_buffer[key] = arr
            return arr

        def from_shared(kind, name, shape, dtype):
            table = getattr(shared_exec, kind)
            arr = table.get(name)
            if arr is None:
                return None
            if tuple(arr.shape) != shape or arr.dtype != dtype:
                raise MXNetError('simple_bind: %s of shared_exec has shape %s, dtype %s; %s '
                                 'needs %s, %s' % (name, tuple(arr.shape), np_name(arr.dtype),
                                                   name, shape, np_name(dtype)))
            return arr

        args, grads = [], []
        for name, req in zip(names, reqs):
            shape, dtype = meta(name)
            where = place(name)
            arr = grad = None
            if name in shared and shared_exec is not None:
                arr = from_shared('arg_dict', name, shape, dtype)
                if req != 'null':
                    grad = from_shared('grad_dict', name, shape, dtype)
            if arr is None:
                arr = (nd.zeros(shape, ctx=where, dtype=dtype) if name in shared else
                       from_buffer(name, shape, dtype, where))
            if req != 'null' and grad is None:
                grad = (nd.zeros(shape, ctx=where, dtype=dtype) if name in shared else
                        from_buffer('grad of ' + name, shape, dtype, where))
            args.append(arr)
            grads.append(grad)
        aux = []
        for name in self.list_auxiliary_states():
            shape, dtype = meta(name)
            arr = None
            if shared_exec is not None:
                arr = from_shared('aux_dict', name, shape, dtype)
            aux.append(arr if arr is not None else
                       nd.zeros(shape, ctx=place(name), dtype=dtype))
        return Executor(self, ctx, reqs, group2ctx or None, args, grads, aux)

    def debug_str(self):
        """The graph as text, as MXNet prints it: the outputs, then each node (variables by
        name; ops with their inputs and attributes)."""
        nodes, heads = self._graph()
        lines = ['Symbol Outputs:']
        lines += ['\toutput[%d]=%s(%d)' % (i, nodes[n][0], k) for i, (n, k) in enumerate(heads)]
        for name, op, attrs, inputs, _, _ in nodes:
            if op is None:
                lines.append('Variable:%s' % name)
                continue
            lines += ['--------------------', 'Op:%s, Name=%s' % (op, name), 'Inputs:']
            for j, (n, k, version) in enumerate(inputs):
                src = nodes[n]
                lines.append('\targ[%d]=%s(%d)%s' % (j, src[0], k, ' version=%d' % version
                                                     if src[1] is None else ''))
            if attrs:
                lines.append('Attrs:')
                lines += ['\t%s=%s' % kv for kv in sorted(attrs.items())]
        return '\n'.join(lines) + '\n'

    # ---- outputs -----------------------------------------------------------------------------
    # While tracing, len() / iteration of a single-output Symbol almost always means "over the
    # rows of the data", which a placeholder cannot give; a group's outputs iterate as usual.
    def __len__(self):
        if _TRACE['path'] is not None and self._num_outputs == 1 and _from_user():
            raise _SymbolMisuse('len()', 'The length of the data is not known while tracing.')
        return self._num_outputs

    def __iter__(self):
        if _TRACE['path'] is not None and self._num_outputs == 1 and _from_user():
            raise _SymbolMisuse('Iterating over a Symbol',
                                'Its elements are not known while tracing.')
        return (self[i] for i in range(self._num_outputs))

    @property
    def shape(self):
        raise _SymbolMisuse('.shape', 'Shapes are only known when the graph is planned for an '
                            'input; use F.reshape with its special codes (0, -1, -2, -3, -4), '
                            'F.broadcast_like or F.slice_like.')

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            if index not in names:
                raise ValueError('There is no output named %r; outputs are %s' % (index, names))
            if names.count(index) > 1:
                raise ValueError('There are multiple outputs named %r' % index)
            index = names.index(index)
        if isinstance(index, slice):
            return Group([self[i] for i in range(self._num_outputs)[index]])
        if not isinstance(index, int):
            raise TypeError('Symbol index must be an int, a str or a slice')
        if index < 0:
            index += self._num_outputs
        return self._output(index)

    def __repr__(self):
        name = self.name
        if name is None:
            return '<Symbol group [%s]>' % ', '.join(s.name for s in self)
        return '<Symbol %s>' % name

    # ---- files -------------------------------------------------------------------------------
    def save(self, fname, remove_amp_cast=True):
        """Writes the JSON to `fname` (through a temporary file and a rename, so a reader sees
        the old file or the new one, never part of one; a symlink's target is replaced)."""
        from ..ndarray.utils import _replace_files
        _replace_files([(fname, 'symbol file', self.tojson().encode('utf-8'))])

    def __reduce__(self):
        return (load_json, (self.tojson(),))

    # ---- arithmetic: as MXNet's Symbol, `a + b` of two symbols is the same-shape element-wise
    # op (_Plus), not broadcast_add: its shape rule runs backwards too, so partial inference
    # completes either operand from the other. ----------------------------------------------
    def _binary(self, other, array_op, scalar_op, rscalar_op=None, reverse=False):
        from .op import _invoke
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            # Names as MXNet's operators give them (_plus0, _mod0, _equal0).
            base = array_op[9:] if array_op.startswith('elemwise_') else array_op[1:]
            hint = '_' + _OPERATOR_HINTS.get(base, base)
            return _invoke(array_op, (a, b), {}, hint)
        if isinstance(other, numbers.Number) and not isinstance(other, bool):  # NumPy's too
            name = rscalar_op if reverse and rscalar_op else scalar_op
            # MXNet calls the comparisons (and _rpower_scalar) by their own names, the rest by
            # the CamelCase aliases: _lesser_scalar0 but _mulscalar0.
            hint = name if name in _SNAKE_HINTS else '_' + name[1:].replace('_', '')
            return _invoke(name, (self,), {'scalar': other}, hint)
        return NotImplemented

    def __add__(self, o): return self._binary(o, 'elemwise_add', '_plus_scalar')
    def __radd__(self, o): return self._binary(o, 'elemwise_add', '_plus_scalar', reverse=True)
    def __sub__(self, o): return self._binary(o, 'elemwise_sub', '_minus_scalar')
    def __rsub__(self, o): return self._binary(o, 'elemwise_sub', '_minus_scalar',
                                               '_rminus_scalar', True)
    def __mul__(self, o): return self._binary(o, 'elemwise_mul', '_mul_scalar')
    def __rmul__(self, o): return self._binary(o, 'elemwise_mul', '_mul_scalar', reverse=True)
    def __truediv__(self, o): return self._binary(o, 'elemwise_div', '_div_scalar')
    def __rtruediv__(self, o): return self._binary(o, 'elemwise_div', '_div_scalar',
                                                   '_rdiv_scalar', True)
    def __mod__(self, o): return self._binary(o, '_mod', '_mod_scalar')
    def __rmod__(self, o): return self._binary(o, '_mod', '_mod_scalar', '_rmod_scalar',
                                               True)
    def __pow__(self, o): return self._binary(o, '_power', '_power_scalar')
    def __rpow__(self, o): return self._binary(o, '_power', '_power_scalar',
                                               '_rpower_scalar', True)
    def __gt__(self, o): return self._binary(o, '_greater', '_greater_scalar')
    def __ge__(self, o): return self._binary(o, '_greater_equal', '_greater_equal_scalar')
    def __lt__(self, o): return self._binary(o, '_lesser', '_lesser_scalar')
    def __le__(self, o): return self._binary(o, '_lesser_equal', '_lesser_equal_scalar')

    def __eq__(self, o):
        if isinstance(o, (Symbol, int, float)):
            return self._binary(o, '_equal', '_equal_scalar')
        return NotImplemented

    def __ne__(self, o):
        if isinstance(o, (Symbol, int, float)):
            return self._binary(o, '_not_equal', '_not_equal_scalar')
        return NotImplemented

    __hash__ = object.__hash__

    def __neg__(self):
        from .op import _invoke
        return _invoke('_mul_scalar', (self,), {'scalar': -1.0}, '_mulscalar')

    def __abs__(self):
        from . import op as _op
        return _op.abs(self)

    def reshape(self, *shape, **kwargs):
        from . import op as _op
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        if shape:
            kwargs['shape'] = tuple(shape)
        return _op.Reshape(self, **kwargs)

    def __bool__(self):
        raise _SymbolMisuse('bool() (an `if` on a Symbol)', 'A Python `if` would pick one branch '
                            'for good when the graph is traced; use F.where to select values.')

    asnumpy = _not_for_symbol('asnumpy')
    asscalar = _not_for_symbol('asscalar')
    wait_to_read = _not_for_symbol('wait_to_read')
    as_in_context = _not_for_symbol('as_in_context')
    detach = _not_for_symbol('detach')
    backward = _not_for_symbol('backward')
    __iadd__ = _not_for_symbol('__iadd__', 'In-place +=', _INPLACE)
    __isub__ = _not_for_symbol('__isub__', 'In-place -=', _INPLACE)
    __imul__ = _not_for_symbol('__imul__', 'In-place *=', _INPLACE)
    __itruediv__ = _not_for_symbol('__itruediv__', 'In-place /=', _INPLACE)


def _fluent(name, op_name=None):
    def method(self, *args, **kwargs):
        from . import op as _op
        return getattr(_op, op_name or name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = 'See sym.%s.' % (op_name or name)
    return method


# MXNet's fluent methods: x.sum(axis=1) is sym.sum(x, axis=1), as on NDArray.
for _name in ('sum', 'mean', 'max', 'min', 'prod', 'nansum', 'nanprod', 'argmax', 'argmin',
              'norm', 'topk', 'sort', 'argsort', 'softmax', 'log_softmax', 'abs', 'sign', 'sqrt',
              'rsqrt', 'square', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'relu',
              'sigmoid', 'tanh', 'sin', 'cos', 'tan', 'floor', 'ceil', 'round', 'rint', 'trunc',
              'fix', 'reciprocal', 'zeros_like', 'ones_like', 'diag', 'slice', 'slice_like',
              'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'erf', 'cbrt', 'flatten',
              'expand_dims', 'squeeze', 'transpose', 'tile', 'repeat', 'broadcast_to',
              'broadcast_like', 'slice_axis', 'take', 'pick', 'one_hot', 'clip',
              # the rest of MXNet 1.9.1's fluent methods
              'reshape_like', 'broadcast_axes', 'pad', 'split_v2', 'argmax_channel',
              'shape_array', 'size_array', 'depth_to_space', 'space_to_depth', 'degrees',
              'radians', 'arcsinh', 'arccosh', 'arctanh', 'rcbrt', 'softmin'):
    setattr(Symbol, _name, _fluent(_name, 'Flatten' if _name == 'flatten' else None))
# Through the alias MXNet's fluent method calls, so the node is named as there (flip0, not
# reverse0; swapaxes0, split0, cast0).
Symbol.swapaxes = _fluent('swapaxes')
Symbol.flip = _fluent('flip')
Symbol.split = _fluent('split')
Symbol.astype = lambda self, dtype, **kw: _fluent('astype', 'cast')(self, dtype=dtype)


def _shape_size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def np_name(dtype):
    import numpy as np
    return np.dtype(dtype).name


def _bind_arrays(what, given, names, allow_missing):
    """bind's arrays (a list in `names` order or a dict by name) as a list in `names` order,
    with MXNet's errors; allow_missing: None (or a name left out of a dict) is no array."""
    from ..ndarray import NDArray
    if isinstance(given, (list, tuple)):
        if len(given) != len(names):
            raise ValueError('Length of %s does not match the number of arguments' % what)
        for a in given:
            if not (isinstance(a, NDArray) or a is None and allow_missing):
                raise TypeError('Only accept list of NDArrays or dict of str to NDArray')
        return list(given)
    if isinstance(given, dict):
        out = []
        for name in names:
            if name in given:
                if not isinstance(given[name], NDArray):
                    raise TypeError('Only accept list of NDArrays or dict of str to NDArray')
                out.append(given[name])
            elif allow_missing:
                out.append(None)
            else:
                raise ValueError('key `%s` is missing in `%s`' % (name, what))
        return out
    raise TypeError('Only accept list of NDArrays or dict of str to NDArray')


# MXNet's attribute keys stored as __key__ (the C API renames them), reported under both names.
_HIDDEN_KEYS = ('ctx_group', 'lr_mult', 'wd_mult', 'force_mirroring', 'mirror_stage')


def _hidden_key(key):
    """`key` as MXNet stores it: __lr_mult__ for lr_mult and the other hidden keys."""
    if key in _HIDDEN_KEYS:
        return '__%s__' % key
    for k in _HIDDEN_KEYS:
        if key.endswith(k) and key != '__%s__' % k and not key.startswith('__'):
            raise MXNetError('setting variable attributes with %s is deprecated. please instead '
                             'use\nw = Variable(%s=...)\nsym = YourSymbolName(%s=w)'
                             % (key, k, key[:-len(k) - 1]))
    return key


def _shown_attrs(attrs):
    """A node's attributes as MXNet lists them: each hidden __key__ also as key."""
    out = dict(attrs)
    for k in _HIDDEN_KEYS:
        if '__%s__' % k in attrs:
            out[k] = attrs['__%s__' % k]
    return out


def _node_output(sym, nodes, node, index):
    """The symbol for output `index` of node number `node` (topological order) of sym."""
    return _core.symbol_internal(sym, node, index)


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A variable (graph input or parameter) with MXNet's annotations."""
    if not isinstance(name, str):
        raise TypeError('Expect a string for variable `name`')
    from ..attribute import current as _attr_scope
    attrs = {_hidden_key(k): _attr_str(v) for k, v in _attr_scope().get(attr).items()}
    if shape is not None:
        attrs['__shape__'] = _attr_str(tuple(shape))
    if lr_mult is not None:
        attrs['__lr_mult__'] = _attr_str(lr_mult)
    if wd_mult is not None:
        attrs['__wd_mult__'] = _attr_str(wd_mult)
    if dtype is not None:
        attrs['__dtype__'] = str(_dtype_flag(dtype))
    if init is not None:
        attrs['__init__'] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs['__storage_type__'] = {'default': '0', 'row_sparse': '1', 'csr': '2'}[stype]
    for k, v in kwargs.items():
        if not (k.startswith('__') and k.endswith('__')):
            raise ValueError('Attribute name=%s is not supported. Additional attributes must '
                             'start and end with double underscores, e.g, __yourattr__' % k)
        attrs[k] = _attr_str(v)
    return _core.symbol_var(name, attrs)


Variable = var


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros (MXNet's sym.zeros)."""
    from . import op as _op
    return _op._zeros(shape=tuple(shape) if isinstance(shape, (list, tuple)) else (shape,),
                      dtype=dtype or 'float32', **kwargs)


def ones(shape, dtype=None, **kwargs):
    """A symbol of ones (MXNet's sym.ones)."""
    from . import op as _op
    return _op._ones(shape=tuple(shape) if isinstance(shape, (list, tuple)) else (shape,),
                     dtype=dtype or 'float32', **kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A symbol filled with val (MXNet's sym.full)."""
    from . import op as _op
    return _op._full(shape=tuple(shape) if isinstance(shape, (list, tuple)) else (shape,),
                     value=float(val), dtype=dtype or 'float32', **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """A symbol of evenly spaced values (MXNet's sym.arange). infer_range=True without stop:
    start, start + step, ... as many as the graph's shapes decide."""
    from . import op as _op
    return _op._arange(start=start, stop=stop, step=step, repeat=repeat,
                       infer_range=infer_range, name=name, dtype=dtype or 'float32')


def Group(symbols):
    """One symbol whose outputs are all outputs of `symbols`, in order."""
    symbols = list(symbols)
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError('Expected a list of symbols as input')
    return _core.symbol_group(symbols)


def load_json(json_str):
    """A symbol from MXNet JSON text."""
    if not isinstance(json_str, str):
        raise TypeError('json_str must be a str')
    return _core.symbol_from_json(json_str)


def load(fname):
    """A symbol from an MXNet `*-symbol.json` file."""
    try:
        with open(fname, encoding='utf-8') as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise MXNetError('cannot read symbol file %s: %s' % (fname, err)) from None
    try:
        return _core.symbol_from_json(text)
    except MXNetError as err:
        raise type(err)('%s: %s' % (fname, err)) from None


_core._set_symbol_class(Symbol)
