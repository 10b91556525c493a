"""ONNX converters of the sequence, attention and generator ops: SequenceMask,
arange_like, the random generators and the interleaved self-attention products."""
import math

import numpy as np

from ._builder import converter


@converter('SequenceMask')
def _sequence_mask(b, n):
    x = n.inputs[0]
    if not n.attrs.bool('use_sequence_length') or len(n.inputs) < 2:
        return b.add('Identity', [x])
    axis = n.attrs.int('axis', 0)
    if axis not in (0, 1):
        n.unsupported('axis', axis)
    ndim = len(n.in_shapes[0])
    steps = b.add('Range', [b.const(0, 'int64'), b.squeeze(b.dim(x, axis), [0]),
                            b.const(1, 'int64')])
    lens = b.cast(n.inputs[1], 'int64')
    # keep[t, b] (axis 0) or keep[b, t] (axis 1): step t lies inside sequence b.
    if axis == 0:
        keep = b.add('Less', [b.unsqueeze(steps, [1]), b.unsqueeze(lens, [0])])
    else:
        keep = b.add('Less', [b.unsqueeze(steps, [0]), b.unsqueeze(lens, [1])])
    if ndim > 2:
        keep = b.unsqueeze(keep, list(range(2, ndim)))
    value = b.const(n.attrs.float('value', 0.0), n.in_dtypes[0])
    return b.add('Where', [keep, x, value])


@converter('_contrib_arange_like')
def _arange_like(b, n):
    x = n.inputs[0]
    if n.attrs.int('repeat', 1) != 1:
        n.unsupported('repeat', n.attrs.int('repeat'))
    axis = n.attrs.get('axis')
    count = b.add('Size', [x]) if axis is None else b.squeeze(b.dim(x, int(axis)), [0])
    # Integer steps, then scaled: a float Range could miscount its length by rounding.
    idx = b.add('Range', [b.const(0, 'int64'), count, b.const(1, 'int64')])
    dt = n.out_dtypes[0]
    y = b.add('Add', [b.add('Mul', [b.cast(idx, dt), b.const(n.attrs.float('step', 1.0), dt)]),
                      b.const(n.attrs.float('start', 0.0), dt)])
    if axis is None:
        y = b.add('Reshape', [y, b.add('Shape', [x])])
    return y


def _random(b, n, op_type, **attrs):
    dt = b.helper.np_dtype_to_tensor_dtype(n.out_dtypes[0])
    return b.add(op_type, [], shape=list(n.out_shapes[0]), dtype=dt, **attrs)


@converter('_random_uniform')
def _random_uniform(b, n):
    return _random(b, n, 'RandomUniform', low=n.attrs.float('low', 0.0),
                   high=n.attrs.float('high', 1.0))


@converter('_random_normal')
def _random_normal(b, n):
    return _random(b, n, 'RandomNormal', mean=n.attrs.float('loc', 0.0),
                   scale=n.attrs.float('scale', 1.0))


@converter('_random_randint')
def _random_randint(b, n):
    # Uniform in [low, high), floored: ONNX has no integer generator.
    dt = n.out_dtypes[0]
    u = b.add('RandomUniform', [], shape=list(n.out_shapes[0]), low=n.attrs.float('low'),
              high=n.attrs.float('high'),
              dtype=b.helper.np_dtype_to_tensor_dtype(np.dtype('float64')))
    return b.cast(b.add('Floor', [u]), dt)


def _heads_view(b, n, qkv, which, parts=3, k=0):
    """(seq, batch, heads * parts * d) interleaved as (heads, parts, d) (input k of the
    node) -> part `which` as (batch, heads, seq, d)."""
    heads = n.attrs.int('heads')
    last = n.in_shapes[k][-1]
    d = last // (parts * heads)
    x = b.reshape(qkv, [0, 0, heads, parts, d])
    part = b.squeeze(b.slice(x, [which], [which + 1], [3]), [3])
    return b.add('Transpose', [part], perm=[1, 2, 0, 3]), d


def _merge_batch_heads(b, t):
    """(batch, heads, s, t) -> (batch * heads, s, t) with run-time s and t."""
    tail = b.slice(b.add('Shape', [t]), [2], [4], [0])
    return b.add('Reshape', [t, b.add('Concat', [b.i64([-1]), tail], axis=0)])


@converter('_contrib_interleaved_matmul_selfatt_qk')
def _selfatt_qk(b, n):
    q, d = _heads_view(b, n, n.inputs[0], 0)
    k, _ = _heads_view(b, n, n.inputs[0], 1)
    q = b.add('Mul', [q, b.const(1.0 / math.sqrt(d), n.in_dtypes[0])])
    att = b.add('MatMul', [q, b.add('Transpose', [k], perm=[0, 1, 3, 2])])
    return _merge_batch_heads(b, att)


@converter('_contrib_interleaved_matmul_selfatt_valatt')
def _selfatt_valatt(b, n):
    v, _ = _heads_view(b, n, n.inputs[0], 2)
    out = b.add('MatMul', [n.inputs[1], _merge_batch_heads(b, v)])
    out = b.add('Reshape', [out, b.add('Shape', [v])])
    out = b.add('Transpose', [out], perm=[2, 0, 1, 3])
    return b.reshape(out, [0, 0, -1])


@converter('_identity_with_attr_like_rhs')
def _identity_like(b, n):
    return b.add('Identity', [n.inputs[0]])


def _sequence_lengths(b, n):
    return b.cast(n.inputs[1], 'int64')


@converter('SequenceReverse')
def _sequence_reverse(b, n):
    x = n.inputs[0]
    if n.attrs.int('axis', 0) != 0:
        n.unsupported('axis', n.attrs.int('axis'))
    if not n.attrs.bool('use_sequence_length') or len(n.inputs) < 2:
        return b.slice(x, [-1], [-2 ** 63], [0], [-1])
    return b.add('ReverseSequence', [x, _sequence_lengths(b, n)], batch_axis=1, time_axis=0)


@converter('SequenceLast')
def _sequence_last(b, n):
    x = n.inputs[0]
    axis = n.attrs.int('axis', 0)
    if axis not in (0, 1):
        n.unsupported('axis', axis)
    if not n.attrs.bool('use_sequence_length') or len(n.inputs) < 2:
        return b.squeeze(b.add('Gather', [x, b.i64([-1])], axis=axis), [axis])
    ndim = len(n.in_shapes[0])
    last = b.add('Sub', [_sequence_lengths(b, n), b.const(1, 'int64')])   # (batch,)
    # Index shaped like x with the time axis of size 1, holding each sequence's last step.
    idx = b.unsqueeze(last, [axis] + list(range(2, ndim)))
    shape = b.add('Shape', [x])
    ones = b.i64([1])
    if axis == 0:
        target = b.add('Concat', [ones, b.slice(shape, [1], [ndim], [0])], axis=0)
    else:
        target = b.add('Concat', [b.slice(shape, [0], [1], [0]), ones,
                                  b.slice(shape, [2], [ndim], [0])], axis=0)
    idx = b.add('Expand', [idx, target])
    return b.squeeze(b.add('GatherElements', [x, idx], axis=axis), [axis])


@converter('Crop')
def _crop(b, n):
    x = n.inputs[0]
    h, w = n.out_shapes[0][2:]
    if n.attrs.bool('center_crop'):
        oy, ox = (n.in_shapes[0][2] - h) // 2, (n.in_shapes[0][3] - w) // 2
    else:
        oy, ox = n.attrs.tuple('offset', (0, 0))
    return b.slice(x, [oy, ox], [oy + h, ox + w], [2, 3])


@converter('_image_to_tensor')
def _image_to_tensor(b, n):
    # (N,) H, W, C of 0-255 values -> (N,) C, H, W in [0, 1].
    x = b.cast(n.inputs[0], n.out_dtypes[0])
    x = b.add('Div', [x, b.const(255.0, n.out_dtypes[0])])
    perm = [2, 0, 1] if len(n.in_shapes[0]) == 3 else [0, 3, 1, 2]
    return b.add('Transpose', [x], perm=perm)


@converter('_image_normalize')
def _image_normalize(b, n):
    shape = n.in_shapes[0]
    c = shape[0] if len(shape) == 3 else shape[1]
    mean, std = list(n.attrs.tuple('mean')), list(n.attrs.tuple('std'))
    mean = (mean * c)[:c] if len(mean) == 1 else mean[:c]
    std = (std * c)[:c] if len(std) == 1 else std[:c]
    dt = n.in_dtypes[0]
    m = b.const(mean, dt, shape=(c, 1, 1))
    s = b.const(std, dt, shape=(c, 1, 1))
    return b.add('Div', [b.add('Sub', [n.inputs[0], m]), s])


@converter('_contrib_interleaved_matmul_encdec_qk')
def _encdec_qk(b, n):
    heads = n.attrs.int('heads')
    d = n.in_shapes[0][-1] // heads
    q = b.add('Transpose', [b.reshape(n.inputs[0], [0, 0, heads, d])], perm=[1, 2, 0, 3])
    k, _ = _heads_view(b, n, n.inputs[1], 0, parts=2, k=1)
    q = b.add('Mul', [q, b.const(1.0 / math.sqrt(d), n.in_dtypes[0])])
    att = b.add('MatMul', [q, b.add('Transpose', [k], perm=[0, 1, 3, 2])])
    return _merge_batch_heads(b, att)


@converter('_contrib_interleaved_matmul_encdec_valatt')
def _encdec_valatt(b, n):
    v, _ = _heads_view(b, n, n.inputs[0], 1, parts=2)
    att = n.inputs[1]
    out = b.add('MatMul', [att, _merge_batch_heads(b, v)])      # (batch*heads, q_seq, d)
    vs, ats = b.add('Shape', [v]), b.add('Shape', [att])
    target = b.add('Concat', [b.slice(vs, [0], [2], [0]), b.slice(ats, [1], [2], [0]),
                              b.slice(vs, [3], [4], [0])], axis=0)
    out = b.add('Transpose', [b.add('Reshape', [out, target])], perm=[2, 0, 1, 3])
    return b.reshape(out, [0, 0, -1])
