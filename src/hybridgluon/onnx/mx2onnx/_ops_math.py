"""ONNX converters of the arithmetic: element-wise and broadcast binary ops and their scalar
forms, comparisons, logic, unary math, reductions, clip and the matrix products."""
import math

from ._builder import converter


def _floor_mod(b, x, y, dt):
    """MXNet's mod: the remainder takes the divisor's sign (x - floor(x / y) * y) for floats;
    ONNX Mod without fmod does the same for integers."""
    if dt.kind in 'iu':
        return b.add('Mod', [x, y], fmod=0)
    return b.add('Sub', [x, b.add('Mul', [b.add('Floor', [b.add('Div', [x, y])]), y])])


def _hypot(b, x, y):
    return b.add('Sqrt', [b.add('Add', [b.add('Mul', [x, x]), b.add('Mul', [y, y])])])


_BINARY = {
    'add': 'Add', 'sub': 'Sub', 'mul': 'Mul', 'div': 'Div', 'power': 'Pow',
    'maximum': 'Max', 'minimum': 'Min',
}
_COMPARE = {
    'equal': ('Equal', False), 'not_equal': ('Equal', True), 'greater': ('Greater', False),
    'greater_equal': ('GreaterOrEqual', False), 'lesser': ('Less', False),
    'lesser_equal': ('LessOrEqual', False),
}
_LOGIC = {'logical_and': 'And', 'logical_or': 'Or', 'logical_xor': 'Xor'}


def _binary(b, n, kind, x, y, dt):
    if kind in _BINARY:
        return b.add(_BINARY[kind], [x, y])
    if kind == 'mod':
        return _floor_mod(b, x, y, dt)
    if kind == 'hypot':
        return _hypot(b, x, y)
    if kind in _COMPARE:
        op_type, negate = _COMPARE[kind]
        r = b.add(op_type, [x, y])
        if negate:
            r = b.add('Not', [r])
        return b.cast(r, n.out_dtypes[0])
    if kind in _LOGIC:
        r = b.add(_LOGIC[kind], [b.cast(x, 'bool'), b.cast(y, 'bool')])
        return b.cast(r, n.out_dtypes[0])
    n.fail('no ONNX form')


def _register_binary():
    kinds = list(_BINARY) + ['mod', 'hypot'] + list(_COMPARE) + list(_LOGIC)
    for kind in kinds:
        names = ['broadcast_' + kind, '_' + kind]
        if kind in ('add', 'sub', 'mul', 'div'):
            names.append('elemwise_' + kind)

        def conv(b, n, kind=kind):
            return _binary(b, n, kind, n.inputs[0], n.inputs[1], n.in_dtypes[0])
        converter(*names)(conv)

        def conv_scalar(b, n, kind=kind):
            dt = n.in_dtypes[0]
            s = b.const(n.attrs.float('scalar', 0.0), dt)
            return _binary(b, n, kind, n.inputs[0], s, dt)
        converter('_%s_scalar' % kind)(conv_scalar)
    for kind, name in (('add', '_plus_scalar'), ('sub', '_minus_scalar')):
        converter(name)(lambda b, n, kind=kind: _binary(
            b, n, kind, n.inputs[0], b.const(n.attrs.float('scalar', 0.0), n.in_dtypes[0]),
            n.in_dtypes[0]))
    for kind, name in (('sub', '_rminus_scalar'), ('div', '_rdiv_scalar'),
                       ('power', '_rpower_scalar'), ('mod', '_rmod_scalar')):
        converter(name)(lambda b, n, kind=kind: _binary(
            b, n, kind, b.const(n.attrs.float('scalar', 0.0), n.in_dtypes[0]), n.inputs[0],
            n.in_dtypes[0]))


_register_binary()


@converter('logical_not')
def _logical_not(b, n):
    return b.cast(b.add('Not', [b.cast(n.inputs[0], 'bool')]), n.out_dtypes[0])


_UNARY = {
    'exp': 'Exp', 'log': 'Log', 'sqrt': 'Sqrt', 'abs': 'Abs', 'negative': 'Neg',
    'reciprocal': 'Reciprocal', 'sin': 'Sin', 'cos': 'Cos', 'tan': 'Tan', 'arcsin': 'Asin',
    'arccos': 'Acos', 'arctan': 'Atan', 'sinh': 'Sinh', 'cosh': 'Cosh', 'arcsinh': 'Asinh',
    'arccosh': 'Acosh', 'arctanh': 'Atanh', 'floor': 'Floor', 'ceil': 'Ceil',
    'sign': 'Sign', 'erf': 'Erf',
}


def _register_unary():
    for name, op_type in _UNARY.items():
        converter(name)(lambda b, n, op_type=op_type: b.add(op_type, [n.inputs[0]]))


_register_unary()


def _c(b, n, v):
    return b.const(v, n.in_dtypes[0])


@converter('square')
def _square(b, n):
    return b.add('Mul', [n.inputs[0], n.inputs[0]])


@converter('rsqrt')
def _rsqrt(b, n):
    return b.add('Reciprocal', [b.add('Sqrt', [n.inputs[0]])])


def _trunc(b, x):
    return b.add('Mul', [b.add('Sign', [x]), b.add('Floor', [b.add('Abs', [x])])])


@converter('trunc', 'fix')
def _trunc_op(b, n):
    return _trunc(b, n.inputs[0])


@converter('round')
def _round(b, n):
    # MXNet rounds halves away from zero; ONNX Round rounds them to even.
    x = n.inputs[0]
    half = b.add('Add', [b.add('Abs', [x]), _c(b, n, 0.5)])
    return b.add('Mul', [b.add('Sign', [x]), b.add('Floor', [half])])


@converter('rint')
def _rint(b, n):
    # MXNet's rint takes the floor on a tie (-2.5 -> -3, 2.5 -> 2), not the even neighbour.
    x = n.inputs[0]
    lo, hi = b.add('Floor', [x]), b.add('Ceil', [x])
    tie_or_below = b.add('LessOrEqual', [b.add('Sub', [x, lo]), b.add('Sub', [hi, x])])
    return b.add('Where', [tie_or_below, lo, hi])


@converter('log1p')
def _log1p(b, n):
    return b.add('Log', [b.add('Add', [n.inputs[0], _c(b, n, 1.0)])])


@converter('expm1')
def _expm1(b, n):
    return b.add('Sub', [b.add('Exp', [n.inputs[0]]), _c(b, n, 1.0)])


@converter('log2', 'log10')
def _log_base(b, n):
    base = 2.0 if n.op == 'log2' else 10.0
    return b.add('Div', [b.add('Log', [n.inputs[0]]), _c(b, n, math.log(base))])


def _cbrt(b, n, x):
    r = b.add('Pow', [b.add('Abs', [x]), _c(b, n, 1.0 / 3.0)])
    return b.add('Mul', [b.add('Sign', [x]), r])


@converter('cbrt')
def _cbrt_op(b, n):
    return _cbrt(b, n, n.inputs[0])


@converter('rcbrt')
def _rcbrt(b, n):
    return b.add('Reciprocal', [_cbrt(b, n, n.inputs[0])])


@converter('degrees')
def _degrees(b, n):
    return b.add('Mul', [n.inputs[0], _c(b, n, 180.0 / math.pi)])


@converter('radians')
def _radians(b, n):
    return b.add('Mul', [n.inputs[0], _c(b, n, math.pi / 180.0)])


@converter('clip')
def _clip(b, n):
    lo, hi = n.attrs.float('a_min'), n.attrs.float('a_max')
    return b.add('Clip', [n.inputs[0], _c(b, n, lo), _c(b, n, hi)])


@converter('smooth_l1')
def _smooth_l1(b, n):
    x = n.inputs[0]
    s2 = n.attrs.float('scalar', 1.0) ** 2
    ax = b.add('Abs', [x])
    quad = b.add('Mul', [b.add('Mul', [x, x]), _c(b, n, 0.5 * s2)])
    lin = b.add('Sub', [ax, _c(b, n, 0.5 / s2)])
    return b.add('Where', [b.add('Less', [ax, _c(b, n, 1.0 / s2)]), quad, lin])


# ---- reductions ------------------------------------------------------------------------
def _reduce_axes(n):
    nd = len(n.in_shapes[0])
    axis = n.attrs.get('axis')
    if axis is None or axis == ():
        axes = list(range(nd))
        if n.attrs.bool('exclude'):
            axes = []
    else:
        axes = [a % nd for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
        if n.attrs.bool('exclude'):
            axes = [a for a in range(nd) if a not in axes]
    return axes


def _reduce(b, n, op_type):
    axes = _reduce_axes(n)
    keep = n.attrs.bool('keepdims')
    x = n.inputs[0]
    if not axes:
        return b.add('Identity', [x])
    y = b.reduce(op_type, x, axes, keep)
    if not keep and len(axes) == len(n.in_shapes[0]):
        y = b.reshape(y, [1])   # MXNet gives shape (1,) for a full reduction
    return y


for _name, _op in (('sum', 'ReduceSum'), ('mean', 'ReduceMean'), ('max', 'ReduceMax'),
                   ('min', 'ReduceMin'), ('prod', 'ReduceProd')):
    converter(_name)(lambda b, n, _op=_op: _reduce(b, n, _op))


@converter('norm')
def _norm(b, n):
    ord_ = n.attrs.int('ord', 2)
    if ord_ not in (1, 2):
        n.unsupported('ord', ord_)
    y = _reduce(b, n, 'ReduceL2' if ord_ == 2 else 'ReduceL1')
    return y


# ---- matrix products -------------------------------------------------------------------
def _swap_last(b, x, nd):
    perm = list(range(nd))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return b.add('Transpose', [x], perm=perm)


@converter('dot')
def _dot(b, n):
    a, c = n.inputs[:2]
    sa, sc = n.in_shapes[0], n.in_shapes[1]
    ta, tc = n.attrs.bool('transpose_a'), n.attrs.bool('transpose_b')
    if len(sa) == 1 and len(sc) == 1:
        return b.reshape(b.reduce('ReduceSum', b.add('Mul', [a, c]), [0], True), [1])
    if ta:
        a = b.add('Transpose', [a], perm=list(range(len(sa)))[::-1])
        sa = sa[::-1]
    if tc:
        c = b.add('Transpose', [c], perm=list(range(len(sc)))[::-1])
        sc = sc[::-1]
    if len(sa) <= 2 and len(sc) <= 2 and not (len(sa) == 1 or len(sc) == 1):
        return b.add('MatMul', [a, c])
    k = sa[-1]
    a2 = b.reshape(a, [-1, k])
    c2 = b.reshape(c, [k, -1])
    y = b.add('MatMul', [a2, c2])
    from ._ops_tensor import _reshape_target
    return _reshape_target(b, n, y, copy_upto=0)


@converter('batch_dot')
def _batch_dot(b, n):
    a, c = n.inputs[:2]
    if n.attrs.bool('transpose_a'):
        a = _swap_last(b, a, len(n.in_shapes[0]))
    if n.attrs.bool('transpose_b'):
        c = _swap_last(b, c, len(n.in_shapes[1]))
    return b.add('MatMul', [a, c])


@converter('_linalg_gemm2')
def _gemm2(b, n):
    a, c = n.inputs[:2]
    if n.attrs.int('axis', -2) != -2:
        n.unsupported('axis', n.attrs.int('axis'))
    if n.attrs.bool('transpose_a'):
        a = _swap_last(b, a, len(n.in_shapes[0]))
    if n.attrs.bool('transpose_b'):
        c = _swap_last(b, c, len(n.in_shapes[1]))
    y = b.add('MatMul', [a, c])
    alpha = n.attrs.float('alpha', 1.0)
    return y if alpha == 1.0 else b.add('Mul', [y, _c(b, n, alpha)])


@converter('cumsum')
def _cumsum(b, n):
    x = n.inputs[0]
    axis = n.attrs.get('axis')
    if axis is None:
        x, axis = b.reshape(x, [-1]), 0
    if n.out_dtypes[0] != n.in_dtypes[0]:
        x = b.cast(x, n.out_dtypes[0])
    return b.add('CumSum', [x, b.const(int(axis), 'int64')])


def _nan_to(b, n, value):
    x = n.inputs[0]
    return b.add('Where', [b.add('IsNaN', [x]), _c(b, n, value), x])


@converter('nansum')
def _nansum(b, n):
    n.inputs = [_nan_to(b, n, 0.0)] + n.inputs[1:]
    return _reduce(b, n, 'ReduceSum')


@converter('nanprod')
def _nanprod(b, n):
    n.inputs = [_nan_to(b, n, 1.0)] + n.inputs[1:]
    return _reduce(b, n, 'ReduceProd')


@converter('moments')
def _moments(b, n):
    x = n.inputs[0]
    nd = len(n.in_shapes[0])
    axes = n.attrs.tuple('axes', None)
    axes = list(range(nd)) if axes is None else [a % nd for a in axes]
    mean = b.reduce('ReduceMean', x, axes, True)
    d = b.add('Sub', [x, mean])
    var = b.reduce('ReduceMean', b.add('Mul', [d, d]), axes, True)
    if n.attrs.bool('keepdims'):
        return [mean, var]
    return [b.reshape(mean, n.static_out(0)), b.reshape(var, n.static_out(1))]


@converter('_sum_to_like')
def _sum_to_like(b, n):
    xs, ls = n.in_shapes[0], n.in_shapes[1]
    lead = len(xs) - len(ls)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(ls) if d == 1 and xs[lead + i] != 1]
    if not axes:
        return b.add('Identity', [n.inputs[0]])
    y = b.reduce('ReduceSum', n.inputs[0], axes, True)
    return b.reshape(y, n.static_out(0))


@converter('_contrib_div_sqrt_dim')
def _div_sqrt_dim(b, n):
    x = n.inputs[0]
    if n.in_dyn[0][-1]:
        d = b.cast(b.dim(x, len(n.in_shapes[0]) - 1), n.in_dtypes[0])
        return b.add('Div', [x, b.add('Sqrt', [d])])
    return b.add('Div', [x, _c(b, n, math.sqrt(n.in_shapes[0][-1]))])


@converter('_contrib_quadratic')
def _quadratic(b, n):
    x = n.inputs[0]
    a, c1, c0 = (n.attrs.float(k, 0.0) for k in ('a', 'b', 'c'))
    y = b.add('Mul', [b.add('Add', [b.add('Mul', [x, _c(b, n, a)]), _c(b, n, c1)]), x])
    return b.add('Add', [y, _c(b, n, c0)])


@converter('_contrib_round_ste')
def _round_ste(b, n):
    return _round(b, n)


@converter('_contrib_sign_ste')
def _sign_ste(b, n):
    return b.add('Sign', [n.inputs[0]])


@converter('_linalg_gemm')
def _gemm(b, n):
    a, c, acc = n.inputs[:3]
    if n.attrs.int('axis', -2) != -2:
        n.unsupported('axis', n.attrs.int('axis'))
    if n.attrs.bool('transpose_a'):
        a = _swap_last(b, a, len(n.in_shapes[0]))
    if n.attrs.bool('transpose_b'):
        c = _swap_last(b, c, len(n.in_shapes[1]))
    y = b.add('Mul', [b.add('MatMul', [a, c]), _c(b, n, n.attrs.float('alpha', 1.0))])
    return b.add('Add', [y, b.add('Mul', [acc, _c(b, n, n.attrs.float('beta', 1.0))])])


@converter('_linalg_det')
def _det(b, n):
    return b.add('Det', [n.inputs[0]])


@converter('all_finite')
def _all_finite(b, n):
    x = n.inputs[0]
    bad = b.add('Or', [b.add('IsNaN', [x]), b.add('IsInf', [x])])
    ok = b.reduce('ReduceMin', b.cast(b.add('Not', [bad]), 'int32'), None, False)
    return b.reshape(b.cast(ok, n.out_dtypes[0]), [1])
