"""Converters of ONNX's element-wise, activation, reduction and tensor-manipulation operators
to registry ops. Network layers (convolution, pooling, normalisation, GEMM, resizing) are in
_ops_nn.py; the folding of constant inputs is in _fold.py."""
import numpy as np

from ._fold import RunDim, reshape_target, shape_slice, shape_vector, slice_params, split_sizes
from ._registry import CONVERTERS, axes_arg, norm_axis, register


# ONNX op: (broadcasting op, op with a scalar on the right, op with a scalar on the left)
_BINARY = {
    'Add': ('broadcast_add', '_plus_scalar', '_plus_scalar'),
    'Sub': ('broadcast_sub', '_minus_scalar', '_rminus_scalar'),
    'Mul': ('broadcast_mul', '_mul_scalar', '_mul_scalar'),
    'Div': ('broadcast_div', '_div_scalar', '_rdiv_scalar'),
    'Pow': ('broadcast_power', '_power_scalar', '_rpower_scalar'),
    'Equal': ('broadcast_equal', '_equal_scalar', '_equal_scalar'),
    'Less': ('broadcast_lesser', '_lesser_scalar', '_greater_scalar'),
    'Greater': ('broadcast_greater', '_greater_scalar', '_lesser_scalar'),
    'LessOrEqual': ('broadcast_lesser_equal', '_lesser_equal_scalar', '_greater_equal_scalar'),
    'GreaterOrEqual': ('broadcast_greater_equal', '_greater_equal_scalar',
                       '_lesser_equal_scalar'),
    'And': ('broadcast_logical_and', None, None),
    'Or': ('broadcast_logical_or', None, None),
    'Xor': ('broadcast_logical_xor', None, None),
}

_UNARY = {
    'Relu': 'relu', 'Sigmoid': 'sigmoid', 'Tanh': 'tanh', 'Exp': 'exp', 'Log': 'log',
    'Sqrt': 'sqrt', 'Abs': 'abs', 'Neg': 'negative', 'Reciprocal': 'reciprocal',
    'Floor': 'floor', 'Ceil': 'ceil', 'Erf': 'erf', 'Softsign': 'softsign', 'Sin': 'sin',
    'Cos': 'cos', 'Tan': 'tan', 'Asin': 'arcsin', 'Acos': 'arccos', 'Atan': 'arctan',
    'Sinh': 'sinh', 'Cosh': 'cosh', 'Asinh': 'arcsinh', 'Acosh': 'arccosh',
    'Atanh': 'arctanh', 'Sign': 'sign', 'Not': 'logical_not',
}


def _scalar_side(ctx, const_i, other_i):
    """The Python scalar of input const_i when it is a one-element constant that broadcasting
    cannot make the output bigger than input other_i."""
    if ctx.is_const(other_i) or not ctx.is_const(const_i):
        return None
    c = ctx.inputs[const_i]
    other = ctx.shape(other_i)
    if c.size != 1 or other is None or c.ndim > len(other):
        return None
    v = c.reshape(-1)[0]
    return bool(v) if c.dtype == bool else (int(v) if np.issubdtype(c.dtype, np.integer)
                                            else float(v))


def _binary(ctx):
    bop, right, left = _BINARY[ctx.op_type]
    if right is not None:
        s = _scalar_side(ctx, 1, 0)
        if s is not None:
            return ctx.op(right, ctx.sym(0), scalar=s)
        s = _scalar_side(ctx, 0, 1)
        if s is not None:
            return ctx.op(left, ctx.sym(1), scalar=s)
    return ctx.op(bop, ctx.sym(0), ctx.sym(1))


for _t in _BINARY:
    CONVERTERS[_t] = _binary


def _unary(ctx):
    return ctx.op(_UNARY[ctx.op_type], ctx.sym(0))


for _t in _UNARY:
    CONVERTERS[_t] = _unary


@register('Mod')
def _mod(ctx):
    if int(ctx.attrs.get('fmod', 0)):
        ctx.fail('fmod=1 (the sign of the dividend) is not supported')
    return ctx.op('broadcast_mod', ctx.sym(0), ctx.sym(1))  # the sign of the divisor, as ONNX


@register('Sum', 'Max', 'Min', 'Mean')
def _variadic(ctx):
    bop = {'Sum': 'broadcast_add', 'Mean': 'broadcast_add', 'Max': 'broadcast_maximum',
           'Min': 'broadcast_minimum'}[ctx.op_type]
    out = ctx.sym(0)
    for i in range(1, len(ctx.inputs)):
        out = ctx.op(bop, out, ctx.sym(i))
    if ctx.op_type == 'Mean' and len(ctx.inputs) > 1:
        out = ctx.op('_div_scalar', out, scalar=float(len(ctx.inputs)))
    return out


@register('Identity')
def _identity(ctx):
    return ctx.inputs[0]


@register('Dropout')
def _dropout(ctx):
    # Inference graphs: Dropout is the identity; its mask output is not supported.
    return [ctx.inputs[0], None]


@register('Cast')
def _cast(ctx):
    from .import_onnx import np_dtype
    return ctx.op('cast', ctx.sym(0), dtype=np_dtype(int(ctx.attrs['to'])).name)


@register('Softplus')
def _softplus(ctx):
    return ctx.op('Activation', ctx.sym(0), act_type='softrelu')


@register('LeakyRelu')
def _leaky(ctx):
    return ctx.op('LeakyReLU', ctx.sym(0), act_type='leaky',
                  slope=float(ctx.attrs.get('alpha', 0.01)))


@register('Elu')
def _elu(ctx):
    return ctx.op('LeakyReLU', ctx.sym(0), act_type='elu',
                  slope=float(ctx.attrs.get('alpha', 1.0)))


@register('Selu')
def _selu(ctx):
    alpha = float(ctx.attrs.get('alpha', 1.67326319217681884765625))
    gamma = float(ctx.attrs.get('gamma', 1.05070102214813232421875))
    if abs(alpha - 1.6732632) < 1e-6 and abs(gamma - 1.0507010) < 1e-6:
        return ctx.op('LeakyReLU', ctx.sym(0), act_type='selu')
    # gamma * (relu(x) + alpha * (exp(min(x, 0)) - 1)) for other constants
    x = ctx.sym(0)
    neg = ctx.op('_mul_scalar', ctx.op('expm1', ctx.op('_minimum_scalar', x, scalar=0.0)),
                 scalar=alpha)
    return ctx.op('_mul_scalar', ctx.op('elemwise_add', ctx.op('relu', x), neg), scalar=gamma)


@register('PRelu')
def _prelu(ctx):
    # max(x, 0) + slope * min(x, 0), with ONNX's (unidirectional) broadcasting of the slope
    x = ctx.sym(0)
    pos = ctx.op('relu', x)
    neg = ctx.op('_minimum_scalar', x, scalar=0.0)
    return ctx.op('broadcast_add', pos, ctx.op('broadcast_mul', neg, ctx.sym(1)))


@register('HardSigmoid')
def _hard_sigmoid(ctx):
    return ctx.op('hard_sigmoid', ctx.sym(0), alpha=float(ctx.attrs.get('alpha', 0.2)),
                  beta=float(ctx.attrs.get('beta', 0.5)))


@register('HardSwish')
def _hard_swish(ctx):
    x = ctx.sym(0)
    return ctx.op('elemwise_mul', x, ctx.op('hard_sigmoid', x, alpha=1.0 / 6, beta=0.5))


@register('Gelu')
def _gelu(ctx):
    approx = ctx.attrs.get('approximate', 'none')
    x = ctx.sym(0)
    if approx == 'none':
        return ctx.op('LeakyReLU', x, act_type='gelu')
    if approx != 'tanh':
        ctx.fail("approximate='%s' is not supported" % approx)
    # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    inner = ctx.op('elemwise_add', x, ctx.op('_mul_scalar', ctx.op('_power_scalar', x, scalar=3.0),
                                             scalar=0.044715))
    t = ctx.op('tanh', ctx.op('_mul_scalar', inner, scalar=float(np.sqrt(2 / np.pi))))
    return ctx.op('elemwise_mul', ctx.op('_mul_scalar', x, scalar=0.5),
                  ctx.op('_plus_scalar', t, scalar=1.0))


@register('Clip')
def _clip(ctx):
    if ctx.opset < 11:
        lo, hi = ctx.attrs.get('min'), ctx.attrs.get('max')
    else:
        lo = float(ctx.const(1, 'min').reshape(-1)[0]) if ctx.has(1) else None
        hi = float(ctx.const(2, 'max').reshape(-1)[0]) if ctx.has(2) else None
    x = ctx.sym(0)
    if lo is not None and hi is not None:
        return ctx.op('clip', x, a_min=float(lo), a_max=float(hi))
    if lo is not None:
        return ctx.op('_maximum_scalar', x, scalar=float(lo))
    if hi is not None:
        return ctx.op('_minimum_scalar', x, scalar=float(hi))
    return x


# -- shapes and indexing ----------------------------------------------------------------------

@register('Shape')
def _shape(ctx):
    s = ctx.shape(0)
    if s is None:
        ctx.fail("needs the rank of '%s'" % ctx.input_names[0])
    # a constant: the Gather/Concat/Reshape chains that consume it fold away
    return shape_slice(ctx, shape_vector(ctx, ctx.input_names[0], s))


@register('Size')
def _size(ctx):
    s = ctx.shape(0)
    if s is not None and all(d is not None for d in s):
        return np.array(int(np.prod(s)), dtype=np.int64)
    return ctx.op('size_array', ctx.sym(0))


@register('Gather')
def _gather(ctx):
    rank = ctx.rank(0)
    axis = norm_axis(ctx, int(ctx.attrs.get('axis', 0)), rank)
    if ctx.is_const(1):
        idx = ctx.inputs[1]
        dim = ctx.shape(0)[axis]
        if idx.ndim == 0:
            i = int(idx)
            if dim is not None and i < 0:
                i += dim
            if rank == 1:
                ctx.fail('gathering one element of a 1-D tensor gives a 0-D tensor, which '
                         'MXNet 1.x arrays cannot represent')
            # slice_axis counts a negative index from the end, as ONNX does
            x = ctx.op('slice_axis', ctx.sym(0), axis=axis, begin=i,
                       end=None if i == -1 else i + 1)
            return ctx.op('squeeze', x, axis=(axis,))
        if dim is not None:
            idx = np.where(idx < 0, idx + dim, idx)
        return ctx.op('take', ctx.sym(0), ctx.graph.const_var(ctx.input_names[1], idx),
                      axis=axis, mode='wrap')
    return ctx.op('take', ctx.sym(0), ctx.sym(1), axis=axis, mode='wrap')


@register('Unsqueeze')
def _unsqueeze(ctx):
    axes = axes_arg(ctx)
    out_rank = ctx.rank(0) + len(axes)
    x = ctx.sym(0)
    for a in sorted(norm_axis(ctx, a, out_rank) for a in axes):
        x = ctx.op('expand_dims', x, axis=a)
    return x


@register('Squeeze')
def _squeeze(ctx):
    axes = axes_arg(ctx)
    if axes is None:
        s = ctx.full_shape(0, 'Squeeze without axes')
        axes = [i for i, d in enumerate(s) if d == 1]
    rank = ctx.rank(0)
    axes = tuple(sorted(norm_axis(ctx, a, rank) for a in axes))
    if len(axes) == rank:
        ctx.fail('the result would be a 0-D tensor, which MXNet 1.x arrays cannot represent')
    return ctx.op('squeeze', ctx.sym(0), axis=axes)


@register('Concat')
def _concat(ctx):
    idx = [i for i in range(len(ctx.inputs)) if ctx.has(i)]
    axis = int(ctx.attrs['axis'])
    if axis < 0:
        axis = norm_axis(ctx, axis, ctx.rank(idx[0]))
    return ctx.op('concat', *[ctx.sym(i) for i in idx], dim=axis, num_args=len(idx))


def _reshape_codes(ctx, target):
    """Target entries as ints; a run-time dimension must be the input's own dimension at the
    same position (or one ONNX names alike), which MXNet's code 0 copies."""
    data_dims = ctx.graph.dim_params(ctx.input_names[0], ctx.inputs[0]) or ()
    out = []
    for i, d in enumerate(target):
        if isinstance(d, RunDim):
            same = d.tensor == ctx.input_names[0] and d.axis == i
            named = (d.param is not None and i < len(data_dims) and data_dims[i] == d.param)
            if not (same or named):
                ctx.fail('target dimension %d is %r, known only at run time and not the '
                         "input's dimension %d" % (i, d, i))
            d = 0
        out.append(int(d))
    return out


@register('Reshape')
def _reshape(ctx):
    shape = _reshape_codes(ctx, ctx.const(1, 'shape').reshape(-1))
    if int(ctx.attrs.get('allowzero', 0)) and 0 in shape:
        ctx.fail('allowzero=1 with a 0 in the shape (an empty tensor) is not supported')
    in_shape = ctx.shape(0)
    if in_shape is not None and all(d is not None for d in in_shape):
        shape = reshape_target(ctx, in_shape, shape)
    # otherwise MXNet's reshape codes 0 (copy) and -1 (infer) mean what ONNX's do
    return ctx.op('reshape', ctx.sym(0), shape=tuple(shape))


@register('Flatten')
def _flatten(ctx):
    axis = int(ctx.attrs.get('axis', 1))
    rank = ctx.rank(0)
    axis = axis + rank if axis < 0 else axis
    if axis == 1 and rank >= 2:
        return ctx.op('flatten', ctx.sym(0))
    if axis == 0:
        return ctx.op('reshape', ctx.sym(0), shape=(1, -1))
    s = ctx.full_shape(0, 'Flatten at axis %d' % axis)
    return ctx.op('reshape', ctx.sym(0), shape=(int(np.prod(s[:axis])), -1))


@register('Transpose')
def _transpose(ctx):
    perm = ctx.attrs.get('perm')
    if perm is None:
        perm = list(reversed(range(ctx.rank(0))))
    return ctx.op('transpose', ctx.sym(0), axes=tuple(int(p) for p in perm))


def _slice_bound(v, dim, step, is_end):
    """An ONNX Slice bound as MXNet's slice takes it (None: to the end in that direction)."""
    if dim is not None:
        start, stop, _ = slice(v if not is_end else None, v if is_end else None,
                               step).indices(dim)
        v = stop if is_end else start
        return None if is_end and step < 0 and v < 0 else v
    if abs(v) >= 2 ** 30:  # INT_MAX / INT_MIN sentinels mean "through the end"
        return None
    return v


@register('Slice')
def _slice(ctx):
    shape = ctx.shape(0)
    if shape is None:
        ctx.fail("needs the rank of '%s'" % ctx.input_names[0])
    params = slice_params(ctx, len(shape))
    n = max(p[0] for p in params) + 1
    begin, end, step = [None] * n, [None] * n, [None] * n
    for axis, b, e, s in params:
        dim = shape[axis]
        begin[axis] = _slice_bound(b, dim, s, False)
        end[axis] = _slice_bound(e, dim, s, True)
        step[axis] = s
    return ctx.op('slice', ctx.sym(0), begin=tuple(begin), end=tuple(end), step=tuple(step))


@register('Split')
def _split(ctx):
    rank = ctx.rank(0)
    axis = norm_axis(ctx, int(ctx.attrs.get('axis', 0)), rank)
    n = ctx.num_outputs
    sizes = split_sizes(ctx, ctx.shape(0)[axis])
    x = ctx.sym(0)
    if n == 1:
        return [x]
    if sizes is None or len(set(sizes)) == 1:
        out = ctx.op('split', x, num_outputs=n, axis=axis)
        return [out[i] for i in range(n)]
    outs, start = [], 0
    for s in sizes:
        outs.append(ctx.op('slice_axis', x, axis=axis, begin=start, end=start + s))
        start += s
    return outs


def _broadcast_to_vector(ctx, x, x_dims, target):
    """Broadcasts `x` (rank len(target), dims x_dims, None where unknown) to the shape vector
    `target`, whose RunDim entries take their size from the tensor they name."""
    for i, t in enumerate(target):
        if isinstance(t, RunDim) and x_dims[i] == 1:
            x = ctx.op('broadcast_like', x, ctx.graph.value(t.tensor), lhs_axes=(i,),
                       rhs_axes=(t.axis,))
    # broadcast_to's 0 keeps the input's dimension, as ONNX's 1 does
    shape = tuple(0 if isinstance(t, RunDim) or t == 1 or t == d else int(t)
                  for t, d in zip(target, x_dims))
    return ctx.op('broadcast_to', x, shape=shape) if any(shape) else x


@register('Expand')
def _expand(ctx):
    target = list(ctx.const(1, 'shape').reshape(-1))
    rank, in_shape, x = ctx.rank(0), ctx.shape(0), ctx.sym(0)
    out_rank = max(rank, len(target))
    for _ in range(out_rank - rank):
        x = ctx.op('expand_dims', x, axis=0)
    target = [1] * (out_rank - len(target)) + target
    return _broadcast_to_vector(ctx, x, [1] * (out_rank - rank) + list(in_shape), target)


@register('Tile')
def _tile(ctx):
    return ctx.op('tile', ctx.sym(0), reps=tuple(ctx.ints(1, 'repeats')))


@register('ConstantOfShape')
def _constant_of_shape(ctx):
    # reached for a shape with run-time dimensions (a static one folds): a one-element
    # parameter broadcast to it
    target = list(ctx.const(0, 'shape').reshape(-1))
    value = ctx.attrs.get('value', np.zeros(1, dtype=np.float32)).reshape(-1)[:1]
    base = ctx.graph.const_var(ctx.name + '_value', value.reshape((1,) * len(target)))
    return _broadcast_to_vector(ctx, base, [1] * len(target), target)


@register('Where')
def _where(ctx):
    shapes = [ctx.full_shape(i, 'Where broadcasts its inputs') for i in range(3)]
    out = np.broadcast_shapes(*shapes)
    args = []
    for i, s in enumerate(shapes):
        x = ctx.sym(i)
        if tuple(s) != tuple(out):
            x = ctx.op('reshape', x, shape=(1,) * (len(out) - len(s)) + tuple(s))
            x = ctx.op('broadcast_to', x, shape=tuple(out))
        args.append(x)
    return ctx.op('where', *args)


@register('ArgMax', 'ArgMin')
def _argmax(ctx):
    if int(ctx.attrs.get('select_last_index', 0)):
        ctx.fail('select_last_index=1 is not supported')
    op = 'argmax' if ctx.op_type == 'ArgMax' else 'argmin'
    out = ctx.op(op, ctx.sym(0), axis=int(ctx.attrs.get('axis', 0)),
                 keepdims=bool(int(ctx.attrs.get('keepdims', 1))))
    return ctx.op('cast', out, dtype='int64')


@register('TopK')
def _topk(ctx):
    k = ctx.ints(1, 'k')[0] if ctx.opset >= 10 else int(ctx.attrs['k'])
    out = ctx.op('topk', ctx.sym(0), axis=int(ctx.attrs.get('axis', -1)), k=k,
                 ret_typ='both', is_ascend=not int(ctx.attrs.get('largest', 1)),
                 dtype='int64')
    return [out[0], out[1]]


_REDUCE = {'ReduceMean': 'mean', 'ReduceSum': 'sum', 'ReduceMax': 'max', 'ReduceMin': 'min',
           'ReduceProd': 'prod', 'ReduceSumSquare': 'sum', 'ReduceL2': 'norm',
           'ReduceL1': 'norm'}


@register(*_REDUCE)
def _reduce(ctx):
    axes = axes_arg(ctx)
    x = ctx.sym(0)
    if axes is None and int(ctx.attrs.get('noop_with_empty_axes', 0)):
        return x
    kw = {'keepdims': bool(int(ctx.attrs.get('keepdims', 1)))}
    if axes is not None:
        rank = ctx.rank(0) if any(a < 0 for a in axes) else 0
        kw['axis'] = tuple(a + rank if a < 0 else a for a in axes)
    if ctx.op_type == 'ReduceSumSquare':
        x = ctx.op('square', x)
    if ctx.op_type == 'ReduceL1':
        kw['ord'] = 1
    return ctx.op(_REDUCE[ctx.op_type], x, **kw)
