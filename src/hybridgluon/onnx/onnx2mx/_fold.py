"""Folding at import time of ONNX nodes whose inputs are all constants.

Only data movement (Gather, Concat, Reshape, Slice ...) and the arithmetic of small tensors
(shape vectors, scales, index lists: at most _SMALL elements) are folded; a folder returns
NotImplemented to let the converter build real ops instead, so a model's numerical work always
runs in the core.
"""
import numpy as np

from ._registry import axes_arg, norm_axis

FOLDERS = {}
_SMALL = 4096


def _fold(*op_types):
    def deco(fn):
        for t in op_types:
            FOLDERS[t] = fn
        return fn
    return deco


@_fold('Constant')
def _constant(ctx):
    a = ctx.attrs
    for key, dtype in (('value', None), ('value_float', np.float32),
                       ('value_floats', np.float32), ('value_int', np.int64),
                       ('value_ints', np.int64)):
        if key in a:
            return [np.array(a[key], dtype=dtype)]
    ctx.fail('only value, value_float(s) and value_int(s) constants are supported')


@_fold('Identity')
def _identity(ctx):
    return [ctx.inputs[0]]


@_fold('Dropout')
def _dropout(ctx):
    x = ctx.inputs[0]
    return [x, np.ones(x.shape, dtype=bool)]


class RunDim(object):
    """Dimension `axis` of tensor `tensor`, known only at run time: an entry of a folded shape
    vector (an object array) that only Reshape can consume, as its code 0 (copy)."""

    def __init__(self, tensor, axis, param):
        self.tensor, self.axis, self.param = tensor, axis, param

    def __repr__(self):
        return '%s.shape[%d]' % (self.tensor, self.axis)


def shape_vector(ctx, name, shape):
    """Tensor `name`'s shape as a constant: int64, or an object array with RunDim entries."""
    params = ctx.graph.dim_params(name, ctx.inputs[0]) or [None] * len(shape)
    if all(d is not None for d in shape):
        return np.array(shape, dtype=np.int64)
    return np.array([d if d is not None else RunDim(name, i, params[i])
                     for i, d in enumerate(shape)], dtype=object)


@_fold('Cast')
def _cast(ctx):
    from .import_onnx import np_dtype
    x = ctx.inputs[0]
    to = np_dtype(ctx.attrs['to'])
    if x.dtype == object and np.issubdtype(to, np.integer):
        return [x]  # a shape vector with run-time dimensions stays one
    return [x.astype(to)]


def shape_slice(ctx, vec):
    start = int(ctx.attrs.get('start', 0))
    end = ctx.attrs.get('end')
    return vec[start:] if end is None else vec[start:int(end)]


@_fold('Shape')
def _shape(ctx):
    return [shape_slice(ctx, np.array(ctx.inputs[0].shape, dtype=np.int64))]


@_fold('Size')
def _size(ctx):
    return [np.array(ctx.inputs[0].size, dtype=np.int64)]


@_fold('Gather')
def _gather(ctx):
    x, idx = ctx.inputs[0], ctx.inputs[1]
    axis = norm_axis(ctx, int(ctx.attrs.get('axis', 0)), x.ndim)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    return [np.take(x, idx, axis=axis)]


@_fold('Unsqueeze')
def _unsqueeze(ctx):
    x = ctx.inputs[0]
    axes = axes_arg(ctx)
    out_rank = x.ndim + len(axes)
    for a in sorted(norm_axis(ctx, a, out_rank) for a in axes):
        x = np.expand_dims(x, a)
    return [x]


@_fold('Squeeze')
def _squeeze(ctx):
    x = ctx.inputs[0]
    axes = axes_arg(ctx)
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(norm_axis(ctx, a, x.ndim) for a in axes))]


@_fold('Concat')
def _concat(ctx):
    xs = [x for x in ctx.inputs if x is not None]
    axis = norm_axis(ctx, int(ctx.attrs['axis']), max(x.ndim for x in xs))
    return [np.concatenate(xs, axis=axis)]


def reshape_target(ctx, in_shape, shape):
    """ONNX Reshape's target: 0 copies the input's dimension (unless allowzero), -1 infers."""
    allowzero = int(ctx.attrs.get('allowzero', 0))
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                ctx.fail('shape entry %d is 0 but the input has rank %d' % (i, len(in_shape)))
            d = in_shape[i]
        out.append(int(d))
    return out


@_fold('Reshape')
def _reshape(ctx):
    x = ctx.inputs[0]
    return [x.reshape(reshape_target(ctx, x.shape, ctx.ints(1, 'shape')))]


@_fold('Flatten')
def _flatten(ctx):
    x = ctx.inputs[0]
    axis = int(ctx.attrs.get('axis', 1))
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(int(np.prod(x.shape[:axis])), -1)]


@_fold('Transpose')
def _transpose(ctx):
    perm = ctx.attrs.get('perm')
    return [np.transpose(ctx.inputs[0], perm)]


def slice_params(ctx, rank):
    """[(axis, start, end, step)] of a Slice node, attributes (opset < 10) or inputs."""
    if ctx.opset < 10 or 'starts' in ctx.attrs:
        starts, ends = ctx.attrs['starts'], ctx.attrs['ends']
        axes = ctx.attrs.get('axes', list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = ctx.ints(1, 'starts'), ctx.ints(2, 'ends')
        axes = ctx.ints(3, 'axes') if ctx.has(3) else list(range(len(starts)))
        steps = ctx.ints(4, 'steps') if ctx.has(4) else [1] * len(starts)
    if any(s == 0 for s in steps):
        ctx.fail('a step of 0')
    return [(norm_axis(ctx, int(a), rank), int(b), int(e), int(s))
            for a, b, e, s in zip(axes, starts, ends, steps)]


@_fold('Slice')
def _slice(ctx):
    x = ctx.inputs[0]
    idx = [slice(None)] * x.ndim
    for axis, b, e, s in slice_params(ctx, x.ndim):
        idx[axis] = slice(b, e, s)
    return [x[tuple(idx)]]


def split_sizes(ctx, dim):
    """Section lengths of a Split node along an axis of length `dim` (None if unknown)."""
    n = ctx.num_outputs
    if 'split' in ctx.attrs:
        return [int(s) for s in ctx.attrs['split']]
    if ctx.has(1):
        return ctx.ints(1, 'split')
    if dim is None:
        return None
    step = -(-dim // n)  # opset 18's num_outputs: the last piece may be smaller
    return [min(step, dim - i * step) for i in range(n)]


@_fold('Split')
def _split(ctx):
    x = ctx.inputs[0]
    axis = norm_axis(ctx, int(ctx.attrs.get('axis', 0)), x.ndim)
    sizes = split_sizes(ctx, x.shape[axis])
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


@_fold('Expand')
def _expand(ctx):
    x = ctx.inputs[0]
    if ctx.inputs[1].dtype == object:
        return NotImplemented  # a run-time dimension: the converter broadcasts
    shape = np.broadcast_shapes(x.shape, tuple(ctx.ints(1, 'shape')))
    return [np.broadcast_to(x, shape).copy()]


@_fold('Tile')
def _tile(ctx):
    return [np.tile(ctx.inputs[0], ctx.ints(1, 'repeats'))]


@_fold('ConstantOfShape')
def _constant_of_shape(ctx):
    if ctx.inputs[0].dtype == object:
        return NotImplemented
    value = ctx.attrs.get('value', np.zeros(1, dtype=np.float32))
    return [np.full(ctx.ints(0, 'shape'), value.reshape(-1)[0], dtype=value.dtype)]


@_fold('Range')
def _range(ctx):
    start, limit, delta = (ctx.const(i) for i in range(3))
    return [np.arange(start, limit, delta).astype(start.dtype)]


def _small(fn):
    def folder(ctx):
        if any(x is not None and x.size > _SMALL for x in ctx.inputs):
            return NotImplemented
        return [np.asarray(fn(ctx, *ctx.inputs))]
    return folder


def _div(ctx, a, b):
    if np.issubdtype(a.dtype, np.integer):
        return (np.trunc(a / b)).astype(a.dtype)  # ONNX's integer division truncates
    return a / b


for _t, _f in {'Add': lambda c, a, b: a + b, 'Sub': lambda c, a, b: a - b,
               'Mul': lambda c, a, b: a * b, 'Div': _div,
               'Mod': lambda c, a, b: (np.fmod if int(c.attrs.get('fmod', 0)) else np.mod)(a, b),
               'Equal': lambda c, a, b: a == b, 'Less': lambda c, a, b: a < b,
               'Greater': lambda c, a, b: a > b, 'LessOrEqual': lambda c, a, b: a <= b,
               'GreaterOrEqual': lambda c, a, b: a >= b, 'Not': lambda c, a: ~a,
               'And': lambda c, a, b: a & b, 'Or': lambda c, a, b: a | b,
               'Where': lambda c, m, a, b: np.where(m, a, b),
               'Neg': lambda c, a: -a, 'Abs': lambda c, a: np.abs(a),
               'Floor': lambda c, a: np.floor(a), 'Ceil': lambda c, a: np.ceil(a),
               'Max': lambda c, *xs: np.maximum.reduce(xs),
               'Min': lambda c, *xs: np.minimum.reduce(xs)}.items():
    FOLDERS[_t] = _small(_f)


def _reduce(np_fn):
    def fn(ctx, x, *rest):
        axes = axes_arg(ctx)
        if axes is None and int(ctx.attrs.get('noop_with_empty_axes', 0)):
            return x
        axes = None if axes is None else tuple(norm_axis(ctx, a, x.ndim) for a in axes)
        return np_fn(x, axis=axes, keepdims=bool(int(ctx.attrs.get('keepdims', 1))))
    return _small(fn)


FOLDERS['ReduceProd'] = _reduce(np.prod)
FOLDERS['ReduceSum'] = _reduce(np.sum)
FOLDERS['ReduceMax'] = _reduce(np.max)
FOLDERS['ReduceMin'] = _reduce(np.min)
