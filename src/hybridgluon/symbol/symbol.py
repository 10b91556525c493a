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
            name, op, _, _, nout, _ = nodes[node]
            if op is None:
                out.append(name)
                continue
            names = _core.op_info(op)['outputs']
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
        return nodes[heads[0][0]][2].get(key)

    def list_attr(self, recursive=False):
        if recursive:
            raise DeprecationWarning('Symbol.list_attr with recursive=True has been deprecated. '
                                     'Please use attr_dict instead.')
        nodes, heads = self._graph()
        return dict(nodes[heads[0][0]][2])

    def attr_dict(self):
        nodes, _ = self._graph()
        return {n[0]: dict(n[2]) for n in nodes if n[2]}

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
        """Runs the symbol once with the NDArrays given by input name; returns a list of
        NDArrays, one per output."""
        inputs = self.list_inputs()
        missing = [n for n in inputs if n not in kwargs]
        if missing:
            raise MXNetError('eval: no value given for input(s) %s' % ', '.join(missing))
        extra = sorted(set(kwargs) - set(inputs))
        if extra:
            raise MXNetError('eval: %s is not an input of the symbol (inputs: %s)'
                             % (', '.join(extra), ', '.join(inputs)))
        out = _core.CachedOp(self, inputs)(*[kwargs[n] for n in inputs])
        return list(out) if isinstance(out, (list, tuple)) else [out]

    # ---- inference ---------------------------------------------------------------------------
    def _infer(self, args, kwargs, partial, what):
        import warnings
        args_names = self.list_arguments()
        inputs = self.list_inputs()
        known = {}
        if args and kwargs:
            raise ValueError('Can only specify known argument %s positionally or by keyword, not '
                             'both' % what)
        for name, value in zip(args_names, args):
            if value is not None:
                known[name] = value
        for name, value in kwargs.items():
            if name not in inputs:
                raise MXNetError('infer_%s: %r is not an input of the symbol (inputs: %s)'
                                 % (what, name, ', '.join(inputs)))
            known[name] = value
        metas = []
        for name in inputs:
            v = known.get(name)
            if what == 'shape':
                metas.append((tuple(v) if v is not None else None, _FLOAT32))
            else:
                metas.append((None, _dtype_flag(v) if v is not None else _FLOAT32))
        op = _core.CachedOp(self, inputs)
        ins, outs = op.infer(metas, True)
        by_name = dict(zip(inputs, ins))
        if what == 'type':
            from ..base import _np_dtype
            pick = lambda m: _np_dtype(m[1])  # noqa: E731
        else:
            pick = lambda m: m[0]  # noqa: E731
        arg = [pick(by_name[n]) for n in args_names]
        aux = [pick(by_name[n]) for n in self.list_auxiliary_states()]
        out = [pick(m) for m in outs]
        if not partial and what == 'shape':
            unknown = [n for n in args_names if by_name[n][0] is None or 0 in by_name[n][0]]
            if unknown or any(o is None or 0 in o for o in out):
                warnings.warn('Cannot decide shape for the following arguments (0s in shape means '
                              'unknown dimensions). Consider providing them as input:\n\t'
                              + '\n\t'.join('%s: %s' % (n, by_name[n][0]) for n in unknown),
                              stacklevel=3)
                return None, None, None
        return arg, out, aux

    def infer_shape(self, *args, **kwargs):
        """(argument shapes, output shapes, auxiliary shapes) from known input shapes, or
        (None, None, None) with a warning when some cannot be decided."""
        return self._infer(args, kwargs, False, 'shape')

    def infer_shape_partial(self, *args, **kwargs):
        """Like infer_shape, with undecided shapes left as None / 0 dims instead of failing."""
        return self._infer(args, kwargs, True, 'shape')

    def infer_type(self, *args, **kwargs):
        """(argument, output, auxiliary) dtypes (NumPy types) from known input dtypes."""
        return self._infer(args, kwargs, True, 'type')

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

    # ---- arithmetic: the same ops NDArray uses, so hybridizing never changes a result ----------
    def _binary(self, other, array_op, scalar_op, rscalar_op=None, reverse=False):
        from .op import _invoke
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            # Names as MXNet's operators give them (_plus0), though the op broadcasts.
            hint = '_' + _OPERATOR_HINTS.get(array_op[10:], array_op[10:])
            return _invoke(array_op, (a, b), {}, hint)
        if isinstance(other, numbers.Number) and not isinstance(other, bool):  # NumPy's too
            name = rscalar_op if reverse and rscalar_op else scalar_op
            return _invoke(name, (self,), {'scalar': other}, '_' + name[1:].replace('_', ''))
        return NotImplemented

    def __add__(self, o): return self._binary(o, 'broadcast_add', '_plus_scalar')
    def __radd__(self, o): return self._binary(o, 'broadcast_add', '_plus_scalar', reverse=True)
    def __sub__(self, o): return self._binary(o, 'broadcast_sub', '_minus_scalar')
    def __rsub__(self, o): return self._binary(o, 'broadcast_sub', '_minus_scalar',
                                               '_rminus_scalar', True)
    def __mul__(self, o): return self._binary(o, 'broadcast_mul', '_mul_scalar')
    def __rmul__(self, o): return self._binary(o, 'broadcast_mul', '_mul_scalar', reverse=True)
    def __truediv__(self, o): return self._binary(o, 'broadcast_div', '_div_scalar')
    def __rtruediv__(self, o): return self._binary(o, 'broadcast_div', '_div_scalar',
                                                   '_rdiv_scalar', True)
    def __mod__(self, o): return self._binary(o, 'broadcast_mod', '_mod_scalar')
    def __rmod__(self, o): return self._binary(o, 'broadcast_mod', '_mod_scalar', '_rmod_scalar',
                                               True)
    def __pow__(self, o): return self._binary(o, 'broadcast_power', '_power_scalar')
    def __rpow__(self, o): return self._binary(o, 'broadcast_power', '_power_scalar',
                                               '_rpower_scalar', True)
    def __gt__(self, o): return self._binary(o, 'broadcast_greater', '_greater_scalar')
    def __ge__(self, o): return self._binary(o, 'broadcast_greater_equal', '_greater_equal_scalar')
    def __lt__(self, o): return self._binary(o, 'broadcast_lesser', '_lesser_scalar')
    def __le__(self, o): return self._binary(o, 'broadcast_lesser_equal', '_lesser_equal_scalar')

    def __eq__(self, o):
        if isinstance(o, (Symbol, int, float)):
            return self._binary(o, 'broadcast_equal', '_equal_scalar')
        return NotImplemented

    def __ne__(self, o):
        if isinstance(o, (Symbol, int, float)):
            return self._binary(o, 'broadcast_not_equal', '_not_equal_scalar')
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
              'broadcast_like', 'slice_axis', 'take', 'pick', 'one_hot', 'clip'):
    setattr(Symbol, _name, _fluent(_name, 'Flatten' if _name == 'flatten' else None))
Symbol.swapaxes = _fluent('swapaxes', 'SwapAxis')
Symbol.flip = _fluent('flip', 'reverse')
Symbol.split = _fluent('split', 'SliceChannel')
Symbol.astype = lambda self, dtype, **kw: _fluent('astype', 'Cast')(self, dtype=dtype)


def _node_output(sym, nodes, node, index):
    """The symbol for output `index` of node number `node` (topological order) of sym."""
    return _core.symbol_internal(sym, node, index)


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A variable (graph input or parameter) with MXNet's annotations."""
    if not isinstance(name, str):
        raise TypeError('Expect a string for variable `name`')
    attrs = dict(attr or {})
    if shape is not None:
        attrs['__shape__'] = _attr_str(tuple(shape))
    if lr_mult is not None:
        attrs['__lr_mult__'] = str(float(lr_mult))
    if wd_mult is not None:
        attrs['__wd_mult__'] = str(float(wd_mult))
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


def arange(start, stop=None, step=1.0, repeat=1, name=None, dtype=None):
    """A symbol of evenly spaced values (MXNet's sym.arange)."""
    from . import op as _op
    return _op._arange(start=start, stop=stop, step=step, repeat=repeat, name=name,
                       dtype=dtype or 'float32')


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
