"""`sym.<op>`: one function per registered op, building graph nodes. Calls from the C op
functions with Symbol inputs arrive here too (so `F.relu(x)` works while tracing)."""
import math as _math
import sys
from numbers import Number as _Number

from .. import _core, base
from ..attribute import current as _attr_scope
from .symbol import _HIDDEN_KEYS, NameManager, Symbol, _attr_str, _hidden_key, _origin, var

_SPECIAL = {'name', 'attr', 'out'}


_SIGNATURES = {}


def _signature(op_name):
    """(input names, takes varargs?, attribute names, the same two as sets) of a registered op;
    the registry never changes after import, so each op's is read once."""
    sig = _SIGNATURES.get(op_name)
    if sig is None:
        info = _core.op_info(op_name)
        inputs = tuple(info['inputs'])
        attrs = tuple(a['name'] for a in info['attrs'])
        sig = (inputs, info['varargs'], attrs, frozenset(inputs), frozenset(attrs))
        _SIGNATURES[op_name] = sig
    return sig


def _invoke(op_name, args, kwargs, hint=None):
    """Builds the node for op_name from Python arguments as MXNet's generated symbol functions
    take them: inputs positionally or by name, attributes by keyword (or positionally after
    the inputs), `name=` and `attr=`."""
    input_names, varargs, attr_names, input_set, attr_set = _signature(op_name)
    kwargs = dict(kwargs)
    name = kwargs.pop('name', None)
    extra = _attr_scope().get(kwargs.pop('attr', None))  # MXNet: the AttrScope's, then attr=
    kwargs.pop('out', None)
    inputs, attrs, positional_attrs = {}, {}, []
    if varargs:
        given = [a for a in args if isinstance(a, Symbol)]
        if len(given) != len(args):
            raise TypeError('%s: all positional inputs must be Symbols' % op_name)
        if 'num_args' in attr_set and 'num_args' not in kwargs:
            kwargs['num_args'] = len(given)
    else:
        for i, a in enumerate(args):
            if i < len(input_names) and isinstance(a, Symbol):
                inputs[input_names[i]] = a
            elif a is None and i < len(input_names):
                continue
            else:
                positional_attrs.append(a)
    for k, v in zip(attr_names, positional_attrs):
        attrs[k] = v
    for k, v in kwargs.items():
        if not varargs and k in input_set:
            if v is None:
                continue
            if not isinstance(v, Symbol):
                raise TypeError('%s: input %s must be a Symbol, got %s' % (op_name, k, type(v)))
            inputs[k] = v
        elif k in attr_set or (k.startswith('__') and k.endswith('__')):
            attrs[k] = v
        elif k in _HIDDEN_KEYS:  # lr_mult=... and the like: stored as __lr_mult__
            attrs[_hidden_key(k)] = v
        elif k in ('dtype', 'ctx') and k not in attr_set:
            continue
        else:
            raise base._MXNetValueError("Cannot find argument '%s', Possible Arguments: [%s], in "
                                        "operator %s" % (k, ', '.join(attr_names), op_name))
    str_attrs = {k: _attr_str(v) for k, v in attrs.items() if v is not None or k in attr_set}
    for k, v in extra.items():
        str_attrs[_hidden_key(k)] = _attr_str(v)
    node_name = NameManager.current.get(name, hint or op_name.lower())
    if varargs:
        ins = list(args)
    else:
        n = _core.op_num_inputs(op_name, str_attrs)
        ins = []
        for arg in input_names[:n]:
            if arg not in inputs:  # MXNet: missing inputs become variables <node>_<arg>
                vattr = dict(str_attrs)
                init = _COMPOSE_INIT.get((op_name, arg))
                if init is not None:
                    vattr['__init__'] = init
                inputs[arg] = var('%s_%s' % (node_name, arg), attr=vattr)
            ins.append(inputs[arg])
    return _with_origin(_core.symbol_op(op_name, node_name, str_attrs, ins))


# MXNet's FSetInputVarAttrOnCompose: the initializer an op gives the variables it creates for
# its missing inputs, so that Module.init_params / Initializer set running statistics and PReLU
# slopes as MXNet does (names alone would not: `moving_mean` matches no default pattern).
_ZERO, _ONE = '["zero", {}]', '["one", {}]'
_COMPOSE_INIT = {
    ('BatchNorm', 'moving_mean'): _ZERO, ('BatchNorm', 'moving_var'): _ONE,
    ('BatchNorm_v1', 'moving_mean'): _ZERO, ('BatchNorm_v1', 'moving_var'): _ONE,
    ('_contrib_SyncBatchNorm', 'moving_mean'): _ZERO,
    ('_contrib_SyncBatchNorm', 'moving_var'): _ONE,
    ('LeakyReLU', 'gamma'): '["Constant", {"value": 0.25}]',
}


def _with_origin(sym):
    where = _origin()
    if where:
        sym._set_origin(where)
    return sym


def _make(op_name, alias):
    hint = alias.lower()  # MXNet names unnamed nodes after the function the user called

    def fn(*args, **kwargs):
        return _invoke(op_name, args, kwargs, hint)
    fn.__name__ = alias
    fn.__doc__ = _core.get_op(op_name).__doc__
    return fn


# ---- functions taking a Symbol or a number on either side (MXNet's symbol.py) ------------------
def _sym_or_scalar(name, left, right, op, scalar_op, rscalar_op, numbers):
    """MXNet's dispatch: two Symbols give the same-shape op, a Symbol and a number the scalar op
    (rscalar_op when the number is on the left), two numbers `numbers(left, right)`."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return _invoke(op, (left, right), {}, op.lower())
    if isinstance(left, Symbol) and isinstance(right, _Number):
        return _invoke(scalar_op, (left,), {'scalar': right}, scalar_op.lower())
    if isinstance(left, _Number) and isinstance(right, Symbol):
        return _invoke(rscalar_op, (right,), {'scalar': left}, rscalar_op.lower())
    if isinstance(left, _Number) and isinstance(right, _Number):
        return numbers(left, right)
    raise TypeError('%s: types (%s, %s) not supported' % (name, type(left), type(right)))


def pow(base, exp):  # noqa: A001 (MXNet's name)
    """base ** exp element-wise: Symbols of one shape, or a Symbol and a number."""
    return _sym_or_scalar('pow', base, exp, '_power', '_power_scalar', '_rpower_scalar',
                          lambda a, b: a ** b)


def power(base, exp):
    """base ** exp element-wise (`pow`)."""
    return pow(base, exp)


def maximum(left, right):
    """Element-wise maximum: Symbols of one shape, or a Symbol and a number."""
    return _sym_or_scalar('maximum', left, right, '_maximum', '_maximum_scalar',
                          '_maximum_scalar', lambda a, b: a if a > b else b)


def minimum(left, right):
    """Element-wise minimum: Symbols of one shape, or a Symbol and a number."""
    return _sym_or_scalar('minimum', left, right, '_minimum', '_minimum_scalar',
                          '_minimum_scalar', lambda a, b: a if a < b else b)


def hypot(left, right):
    """sqrt(left^2 + right^2) element-wise: Symbols of one shape, or a Symbol and a number."""
    return _sym_or_scalar('hypot', left, right, '_hypot', '_hypot_scalar', '_hypot_scalar',
                          lambda a, b: _math.hypot(a, b))


def _register(namespace):
    for name in _core.list_ops():
        for n in [name] + _core.op_info(name)['aliases']:
            namespace.setdefault(n, _make(name, n))


_register(sys.modules[__name__].__dict__)
base._SYMBOL_HANDLER[0] = _invoke


# --- MXNet's Python front ends over registry ops (histogram, split_v2, linspace) --------------

def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002  (MXNet's keyword)
    """Counts of a in bins and the bin edges (MXNet's sym.histogram): bins a Symbol of edges,
    or an int with range (required in symbol mode)."""
    if isinstance(bins, Symbol):
        return _invoke('_histogram', (), dict(kwargs, data=a, bins=bins), 'histogram')
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            raise ValueError('null range is not supported in symbol mode')
        return _invoke('_histogram', (), dict(kwargs, data=a, bin_cnt=bins, range=tuple(range)),
                       'histogram')
    raise ValueError('bins argument should be either an integer or an NDArray')


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Pieces of ary along axis: N equal sections for an int N, else split before each index of
    the tuple (MXNet's sym.split_v2)."""
    indices, sections = [], 0
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError('indices_or_sections must either int or tuple of ints')
    return _invoke('_split_v2', (ary,), dict(indices=tuple(indices), axis=axis,
                                             squeeze_axis=squeeze_axis, sections=sections),
                   'split_v2')


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """A symbol of num evenly spaced values from start to stop (MXNet's sym.linspace); float32
    unless dtype."""
    dtype = 'float32' if dtype is None else base._dtype_name(dtype)
    return _invoke('_linspace', (), dict(start=start, stop=stop, num=num, endpoint=endpoint,
                                         name=name, dtype=dtype), 'linspace')
