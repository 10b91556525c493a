"""`sym.<op>`: one function per registered op, building graph nodes. Calls from the C op
functions with Symbol inputs arrive here too (so `F.relu(x)` works while tracing)."""
import math as _math
import sys
from numbers import Number as _Number

from .. import _core, base
from .symbol import NameManager, Symbol, _attr_str, _origin, var

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
    extra = kwargs.pop('attr', None) or {}
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
        elif k in ('dtype', 'ctx') and k not in attr_set:
            continue
        else:
            raise base._MXNetValueError("Cannot find argument '%s', Possible Arguments: [%s], in "
                                        "operator %s" % (k, ', '.join(attr_names), op_name))
    str_attrs = {k: _attr_str(v) for k, v in attrs.items() if v is not None or k in attr_set}
    for k, v in extra.items():
        str_attrs[k] = _attr_str(v)
    node_name = NameManager.current().get(name, hint or op_name.lower())
    if varargs:
        ins = list(args)
    else:
        n = _core.op_num_inputs(op_name, str_attrs)
        ins = []
        for arg in input_names[:n]:
            if arg not in inputs:  # MXNet: missing inputs become variables <node>_<arg>
                inputs[arg] = var('%s_%s' % (node_name, arg),
                                  attr={k: v for k, v in str_attrs.items()})
            ins.append(inputs[arg])
    return _with_origin(_core.symbol_op(op_name, node_name, str_attrs, ins))


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


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """`num` evenly spaced values from start to stop (stop included unless endpoint=False),
    float32 unless `dtype`: start + i * step in float64, then cast (as nd.linspace)."""
    num = int(num)
    dtype = 'float32' if dtype is None else base._dtype_name(dtype)
    if '_linspace' in _core.list_ops():
        return _invoke('_linspace', (), {'start': start, 'stop': stop, 'num': num,
                                         'endpoint': endpoint, 'dtype': dtype, 'name': name},
                       'linspace')
    if num < 0:
        raise base.MXNetError('linspace: num must be non-negative, got %d' % num)
    if num == 0:
        return _invoke('_zeros', (), {'shape': (0,), 'dtype': dtype, 'name': name}, 'linspace')
    steps = num - 1 if endpoint else num
    step = (float(stop) - float(start)) / steps if steps > 0 else 0.0
    idx = _invoke('_arange', (), {'start': 0, 'stop': num, 'step': 1, 'dtype': 'float64'},
                  '_arange')
    val = _invoke('_plus_scalar', (_invoke('_mul_scalar', (idx,), {'scalar': step},
                                           '_mul_scalar'),), {'scalar': float(start)},
                  '_plus_scalar')
    return _invoke('Cast', (val,), {'dtype': dtype, 'name': name}, 'linspace')


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits ary along `axis` into equal parts (an int: a SliceChannel node) or at the given
    points (a tuple: a group of slice_axis nodes, the last one reaching the end), as
    nd.split_v2; one part gives the node itself."""
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        return _invoke('SliceChannel', (ary,), {'num_outputs': indices_or_sections,
                                                'axis': axis, 'squeeze_axis': squeeze_axis},
                       'split_v2')
    if not isinstance(indices_or_sections, tuple):
        raise ValueError('indices_or_sections must either int or tuple of ints')
    points = [0] + [int(i) for i in indices_or_sections]
    if any(b > e for b, e in zip(points, points[1:])):
        raise base.MXNetError('split_v2: split points %s must be increasing'
                              % (tuple(points[1:]),))
    ends = points[1:] + [None]
    outs = [_invoke('slice_axis', (ary,), {'axis': axis, 'begin': b, 'end': e}, 'split_v2')
            for b, e in zip(points, ends)]
    if squeeze_axis:
        outs = [_invoke('squeeze', (o,), {'axis': axis}, 'split_v2') for o in outs]
    if len(outs) == 1:
        return outs[0]
    from .symbol import Group
    return Group(outs)


def _register(namespace):
    for name in _core.list_ops():
        for n in [name] + _core.op_info(name)['aliases']:
            namespace.setdefault(n, _make(name, n))


_register(sys.modules[__name__].__dict__)
base._SYMBOL_HANDLER[0] = _invoke
