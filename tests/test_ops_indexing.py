"""Indexing ops (take, pick, one_hot, where, clip, Embedding, SequenceMask) against NumPy."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['take', 'pick', 'one_hot', 'where', 'clip', 'Embedding', 'SequenceMask']

DTYPES = ['float32', 'float64', 'int32']
ALL_DTYPES = ['float32', 'float64', 'float16', 'int32', 'int64', 'int8', 'uint8']


def _data(rng, shape, dtype):
    if dtype == 'uint8':
        return rng.integers(0, 100, size=shape).astype(dtype)
    if np.dtype(dtype).kind in 'iu':
        return rng.integers(-50, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _trunc(idx):
    """MXNet reads index arrays as int, truncating floats toward zero."""
    return np.trunc(idx.astype(np.float64)).astype(np.int64)


def _fix(idx, n, mode):
    idx = _trunc(idx)
    if mode == 'wrap':
        return np.mod(idx, n)
    return np.clip(idx, 0, n - 1)


# ------------------------------------------------------------------------------------------------
# take
# ------------------------------------------------------------------------------------------------

TAKE_CASES = [  # (data shape, axis, indices shape)
    ((5,), 0, (4,)),
    ((1,), 0, (1,)),
    ((3, 4), 0, (2, 3)),
    ((3, 4), 1, (5,)),
    ((3, 4), -1, (2, 2)),
    ((2, 3, 4), 1, (6,)),
    ((2, 3, 4), -3, (1,)),
    ((0, 3), 1, (2,)),
    ((3, 4), 0, (0,)),
    ((2, 0, 4), 2, (3,)),
]


@pytest.mark.parametrize('shape,axis,ishape', TAKE_CASES)
@pytest.mark.parametrize('mode', ['clip', 'wrap'])
@pytest.mark.parametrize('dtype', DTYPES)
def test_take(shape, axis, ishape, mode, dtype, rng):
    a = _data(rng, shape, dtype)
    n = shape[axis]
    idx = rng.integers(-2 * n - 1, 2 * n + 2, size=ishape).astype(np.float32)
    out = nd.take(nd.array(a, dtype=dtype), nd.array(idx), axis=axis, mode=mode)
    ref = np.take(a, _fix(idx, n, mode), axis=axis)
    assert out.dtype == np.dtype(dtype)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.asnumpy(), ref)


@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('idtype', ['float32', 'float64', 'float16', 'int32', 'int64', 'uint8',
                                    'int8'])
def test_take_every_dtype(dtype, idtype, rng):
    a = _data(rng, (6, 3), dtype)
    idx = np.array([0, 5, 3, 3, 1], dtype=idtype)
    out = nd.take(nd.array(a, dtype=dtype), nd.array(idx, dtype=idtype))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), a[idx.astype(np.int64)])


def test_take_float_indices_truncate_and_negative_modes():
    a = np.arange(10, dtype=np.float32).reshape(5, 2)
    idx = np.array([0.9, 1.5, -0.5, -1.2, 4.99, 7.3, -6.0], dtype=np.float32)
    clip = nd.take(nd.array(a), nd.array(idx)).asnumpy()
    np.testing.assert_array_equal(clip, a[[0, 1, 0, 0, 4, 4, 0]])
    wrap = nd.take(nd.array(a), nd.array(idx), mode='wrap').asnumpy()
    np.testing.assert_array_equal(wrap, a[[0, 1, 0, 4, 4, 2, 4]])


def test_take_raise():
    a = nd.array(np.arange(12).reshape(3, 4))
    ok = nd.take(a, nd.array([2, 0, 1]), mode='raise')
    np.testing.assert_array_equal(ok.asnumpy(), np.arange(12).reshape(3, 4)[[2, 0, 1]])
    with pytest.raises(mx.MXNetError, match='out of bounds'):
        nd.take(a, nd.array([0, 3]), mode='raise')
    with pytest.raises(mx.MXNetError, match='out of bounds'):
        nd.take(a, nd.array([-1]), mode='raise')
    with pytest.raises(IndexError):
        nd.take(a, nd.array([[0, 1], [4, 1]]), axis=1, mode='raise')


def test_take_large_parallel(rng):
    a = rng.standard_normal((1000, 7)).astype(np.float32)
    idx = rng.integers(0, 1000, size=(300, 100))
    out = nd.take(nd.array(a), nd.array(idx, dtype='int64'))
    np.testing.assert_array_equal(out.asnumpy(), a[idx])
    out = nd.take(nd.array(a), nd.array(idx[:, :5] % 7, dtype='int32'), axis=1)
    np.testing.assert_array_equal(out.asnumpy(), np.take(a, idx[:, :5] % 7, axis=1))


def test_take_errors():
    a = nd.array(np.zeros((3, 4)))
    with pytest.raises(mx.MXNetError, match='take: axis=2'):
        nd.take(a, nd.array([0]), axis=2)
    with pytest.raises(mx.MXNetError, match='axis=-3'):
        nd.take(a, nd.array([0]), axis=-3)
    with pytest.raises(mx.MXNetError, match='valid values'):
        nd.take(a, nd.array([0]), mode='bogus')
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'foo'"):
        nd.take(a, nd.array([0]), foo=1)
    with pytest.raises(mx.MXNetError, match='size 0'):
        nd.take(nd.array(np.zeros((0, 2))), nd.array([0]))


# ------------------------------------------------------------------------------------------------
# pick
# ------------------------------------------------------------------------------------------------

def _pick_ref(data, idx, axis, keepdims, mode):
    n = data.shape[axis]
    j = _fix(idx, n, mode) if data.size else _trunc(idx)
    j = np.expand_dims(j, axis) if not keepdims else j
    out = np.take_along_axis(data, j, axis=axis)
    return out if keepdims else np.squeeze(out, axis=axis)


PICK_CASES = [((5,), 0), ((1,), -1), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 0, 3), 2),
              ((0, 4), 1)]


@pytest.mark.parametrize('shape,axis', PICK_CASES)
@pytest.mark.parametrize('keepdims', [False, True])
@pytest.mark.parametrize('index_kept', [False, True])
@pytest.mark.parametrize('mode', ['clip', 'wrap'])
@pytest.mark.parametrize('dtype', DTYPES)
def test_pick(shape, axis, keepdims, index_kept, mode, dtype, rng):
    # As in MXNet, the index may have the data's shape without the axis or with it kept as 1,
    # whatever keepdims says; keepdims decides the result's shape.
    data = _data(rng, shape, dtype)
    n = shape[axis]
    ishape = list(shape)
    if index_kept:
        ishape[axis] = 1
    else:
        del ishape[axis]
    idx = rng.integers(-n - 2, 2 * n + 2, size=ishape).astype(np.float32)
    # MXNet has no 0-d arrays: picking from a 1-D array gives (and takes) shape (1,).
    out = nd.pick(nd.array(data, dtype=dtype), nd.array(idx.reshape(tuple(ishape) or (1,))),
                  axis=axis, keepdims=keepdims, mode=mode)
    oshape = list(shape)
    if keepdims:
        oshape[axis] = 1
    else:
        del oshape[axis]
    ref = _pick_ref(data, idx.reshape([1 if d == axis % len(shape) else shape[d]
                                       for d in range(len(shape))]), axis, True, mode)
    ref = ref.reshape(tuple(oshape) or (1,))
    assert out.dtype == np.dtype(dtype)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.asnumpy(), ref)


def test_pick_default_axis_and_int_index():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = nd.pick(nd.array(data), nd.array([3, 0, 1], dtype='int64'))
    np.testing.assert_array_equal(out.asnumpy(), [3, 4, 9])


def test_pick_errors():
    data = nd.array(np.zeros((3, 4)))
    with pytest.raises(mx.MXNetError, match='pick: index shape'):
        nd.pick(data, nd.array([0, 1]), axis=1)
    with pytest.raises(mx.MXNetError, match='pick: axis=2'):
        nd.pick(data, nd.array([0, 1, 2]), axis=2)
    with pytest.raises(mx.MXNetError, match='axis=None'):
        nd.pick(data, nd.array([0, 1, 2]), axis=None)
    with pytest.raises(mx.MXNetError, match='valid values'):
        nd.pick(data, nd.array([0, 1, 2]), mode='raise')


# ------------------------------------------------------------------------------------------------
# one_hot
# ------------------------------------------------------------------------------------------------

def _one_hot_ref(idx, depth, on, off, dtype):
    j = _trunc(idx)
    out = np.full(idx.shape + (depth,), off, dtype=np.float64)
    valid = (j >= 0) & (j < depth)
    flat = out.reshape(-1, depth)
    rows = np.nonzero(valid.reshape(-1))[0]
    flat[rows, j.reshape(-1)[rows]] = on
    return out.astype(dtype)


@pytest.mark.parametrize('shape', [(0,), (1,), (6,), (2, 3), (2, 0, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'int64', 'uint8', 'float16'])
def test_one_hot(shape, dtype, rng):
    idx = rng.integers(-2, 7, size=shape).astype(np.float32)
    out = nd.one_hot(nd.array(idx), depth=5, dtype=dtype)
    ref = _one_hot_ref(idx, 5, 1, 0, dtype)
    assert out.dtype == np.dtype(dtype)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.asnumpy(), ref)


def test_one_hot_on_off_values(rng):
    idx = rng.integers(0, 4, size=(3, 5))
    out = nd.one_hot(nd.array(idx, dtype='int32'), 4, 2.5, -1.0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), _one_hot_ref(idx, 4, 2.5, -1.0, 'float32'))
    out = nd.one_hot(nd.array(idx, dtype='int64'), depth=4, on_value=7, off_value=3,
                     dtype='int8')
    np.testing.assert_array_equal(out.asnumpy(), _one_hot_ref(idx, 4, 7, 3, 'int8'))
    out = nd.one_hot(nd.array([1.7, -0.3, 3.0]), depth=0)
    assert out.shape == (3, 0)


def test_one_hot_large_parallel(rng):
    idx = rng.integers(0, 100, size=20000)
    out = nd.one_hot(nd.array(idx, dtype='int32'), depth=100)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(100, dtype=np.float32)[idx])


def test_one_hot_errors():
    with pytest.raises(mx.MXNetError, match='Required parameter depth'):
        nd.one_hot(nd.array([0, 1]))
    with pytest.raises(mx.MXNetError, match='depth must be >= 0'):
        nd.one_hot(nd.array([0, 1]), depth=-2)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'axis'"):
        nd.one_hot(nd.array([0, 1]), depth=2, axis=0)
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd.one_hot(nd.array([0, 1]), depth=2, dtype='int16')


# ------------------------------------------------------------------------------------------------
# where
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(0,), (1,), (7,), (3, 4), (2, 3, 4), (0, 3)])
@pytest.mark.parametrize('dtype', DTYPES + ['int8', 'float16'])
@pytest.mark.parametrize('cdtype', ['float32', 'int32', 'uint8'])
def test_where_same_shape(shape, dtype, cdtype, rng):
    cond = rng.integers(0, 2, size=shape).astype(cdtype)
    x, y = _data(rng, shape, dtype), _data(rng, shape, dtype)
    out = nd.where(nd.array(cond, dtype=cdtype), nd.array(x, dtype=dtype),
                   nd.array(y, dtype=dtype))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), np.where(cond != 0, x, y))


@pytest.mark.parametrize('shape', [(0, 3), (1, 1), (5,), (4, 3), (3, 2, 5)])
@pytest.mark.parametrize('dtype', DTYPES)
def test_where_row_condition(shape, dtype, rng):
    cond = rng.standard_normal(shape[0]).astype(np.float32) * rng.integers(0, 2, shape[0])
    x, y = _data(rng, shape, dtype), _data(rng, shape, dtype)
    out = nd.where(nd.array(cond), nd.array(x, dtype=dtype), nd.array(y, dtype=dtype))
    c = (cond != 0).reshape((-1,) + (1,) * (len(shape) - 1))
    np.testing.assert_array_equal(out.asnumpy(), np.where(c, x, y))


def test_where_negative_zero_and_large(rng):
    cond = np.array([-0.0, 0.0, 0.5, -2.0], dtype=np.float32)
    out = nd.where(nd.array(cond), nd.array([1, 2, 3, 4]), nd.array([5, 6, 7, 8]))
    np.testing.assert_array_equal(out.asnumpy(), [5, 6, 3, 4])
    x, y = rng.standard_normal((2, 50000)), rng.standard_normal((2, 50000))
    cond = rng.integers(0, 2, size=(2, 50000))
    out = nd.where(nd.array(cond, dtype='int64'), nd.array(x, dtype='float64'),
                   nd.array(y, dtype='float64'))
    np.testing.assert_array_equal(out.asnumpy(), np.where(cond != 0, x, y))


def test_where_errors():
    x = nd.array(np.zeros((3, 4)))
    with pytest.raises(mx.MXNetError, match='where: condition shape'):
        nd.where(nd.array(np.zeros((4,))), x, x)
    with pytest.raises(mx.MXNetError, match='where: condition shape'):
        nd.where(nd.array(np.zeros((3, 1))), x, x)
    with pytest.raises(mx.MXNetError, match='same shape'):
        nd.where(nd.array(np.zeros((3, 4))), x, nd.array(np.zeros((4, 3))))
    with pytest.raises(mx.MXNetError, match='same dtype'):
        nd.where(nd.array(np.zeros((3, 4))), x, nd.array(np.zeros((3, 4)), dtype='float64'))


# ------------------------------------------------------------------------------------------------
# clip
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(0,), (1,), (9,), (3, 4), (2, 0, 2), (100000,)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'int64', 'int8'])
def test_clip(shape, dtype, rng):
    x = _data(rng, shape, dtype)
    lo, hi = (-0.5, 0.75) if np.dtype(dtype).kind == 'f' else (-10, 20)
    out = nd.clip(nd.array(x, dtype=dtype), lo, hi)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), np.clip(x, lo, hi).astype(dtype))


def test_clip_int_bounds_truncate_and_saturate():
    x = np.array([0, 1, 2, 3, 200, 255], dtype=np.uint8)
    # MXNet converts the bounds to the dtype first: 1.7 -> 1, 3.9 -> 3.
    out = nd.clip(nd.array(x, dtype='uint8'), a_min=1.7, a_max=3.9)
    np.testing.assert_array_equal(out.asnumpy(), [1, 1, 2, 3, 3, 3])
    out = nd.clip(nd.array(x, dtype='uint8'), a_min=-5, a_max=1000)
    np.testing.assert_array_equal(out.asnumpy(), x)


def test_clip_float16_and_nan():
    x = np.array([-3, -0.25, 0.5, 4, np.nan], dtype=np.float16)
    out = nd.clip(nd.array(x, dtype='float16'), a_min=-1, a_max=1)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out.asnumpy(), np.clip(x, -1, 1))


@pytest.mark.parametrize('shape', [(0,), (1,), (9,), (3, 4), (100003,)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_clip_gradient(shape, dtype, rng):
    """clip's gradient passes ograd where a_min <= x <= a_max (a value on a bound and NaN
    included, as MXNet's), zero elsewhere."""
    x = rng.uniform(-2, 8, shape).astype(dtype)
    if x.size >= 9:
        x.flat[:4] = [0, 6, np.nan, -0.0]
    g = rng.standard_normal(shape).astype(dtype)
    xa = nd.array(x, dtype=dtype)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.clip(xa, 0, 6)
    y.backward(nd.array(g, dtype=dtype))
    with np.errstate(invalid='ignore'):
        ref = np.where((x < 0) | (x > 6), 0, g).astype(dtype)
    np.testing.assert_array_equal(xa.grad.asnumpy(), ref)


def test_clip_errors():
    with pytest.raises(mx.MXNetError, match='Required parameter a_max'):
        nd.clip(nd.array([1, 2]), a_min=0)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'low'"):
        nd.clip(nd.array([1, 2]), 0, 1, low=0)


# ------------------------------------------------------------------------------------------------
# Embedding
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('dshape', [(0,), (1,), (5,), (2, 3), (2, 0, 4)])
@pytest.mark.parametrize('wdtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('ddtype', ['float32', 'int32'])
def test_embedding(dshape, wdtype, ddtype, rng):
    input_dim, output_dim = 7, 3
    data = rng.integers(-2, 10, size=dshape).astype(ddtype)
    weight = rng.standard_normal((input_dim, output_dim)).astype(wdtype)
    out = nd.Embedding(nd.array(data, dtype=ddtype), nd.array(weight, dtype=wdtype),
                       input_dim=input_dim, output_dim=output_dim, dtype=wdtype)
    ref = weight[np.clip(_trunc(data), 0, input_dim - 1)]
    assert out.dtype == np.dtype(wdtype)
    assert out.shape == dshape + (output_dim,)
    np.testing.assert_array_equal(out.asnumpy(), ref)


def test_embedding_output_dtype_follows_weight(rng):
    weight = rng.standard_normal((4, 2))
    out = nd.Embedding(nd.array([1, 3]), nd.array(weight, dtype='float64'), input_dim=4,
                       output_dim=2)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), weight[[1, 3]])


def test_embedding_large(rng):
    weight = rng.standard_normal((1000, 64)).astype(np.float32)
    data = rng.integers(0, 1000, size=(64, 50))
    out = nd.Embedding(nd.array(data), nd.array(weight), input_dim=1000, output_dim=64)
    np.testing.assert_array_equal(out.asnumpy(), weight[data])


def test_embedding_errors():
    w = nd.array(np.zeros((4, 2)))
    with pytest.raises(mx.MXNetError, match=r'Embedding: weight shape \[4,2\]'):
        nd.Embedding(nd.array([0]), w, input_dim=5, output_dim=2)
    with pytest.raises(mx.MXNetError, match='Required parameter output_dim'):
        nd.Embedding(nd.array([0]), w, input_dim=4)
    with pytest.raises(mx.MXNetError, match='must be >= 1'):
        nd.Embedding(nd.array([0]), w, input_dim=0, output_dim=2)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'padding_idx'"):
        nd.Embedding(nd.array([0]), w, input_dim=4, output_dim=2, padding_idx=0)


# ------------------------------------------------------------------------------------------------
# SequenceMask
# ------------------------------------------------------------------------------------------------

def _seqmask_ref(data, lengths, axis, value):
    out = data.copy()
    t_len = data.shape[axis]
    for b, n in enumerate(_trunc(lengths)):
        for t in range(max(n, 0), t_len):
            if axis == 0:
                out[t, b] = value
            else:
                out[b, t] = value
    return out


@pytest.mark.parametrize('shape', [(4, 3), (1, 1), (5, 2, 3), (0, 3), (3, 0), (2, 3, 0)])
@pytest.mark.parametrize('axis', [0, 1])
@pytest.mark.parametrize('dtype', DTYPES)
def test_sequence_mask(shape, axis, dtype, rng):
    data = _data(rng, shape, dtype)
    batch, t_len = shape[1 - axis], shape[axis]
    lengths = rng.integers(-1, t_len + 2, size=batch).astype(np.float32)
    out = nd.SequenceMask(nd.array(data, dtype=dtype), nd.array(lengths),
                          use_sequence_length=True, value=-3, axis=axis)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), _seqmask_ref(data, lengths, axis, -3))


def test_sequence_mask_identity_without_lengths(rng):
    data = rng.standard_normal((4, 3, 2)).astype(np.float32)
    out = nd.SequenceMask(nd.array(data))
    np.testing.assert_array_equal(out.asnumpy(), data)
    out = nd.SequenceMask(nd.array(data), use_sequence_length=False, value=1.0, axis=1)
    np.testing.assert_array_equal(out.asnumpy(), data)
    with pytest.raises(mx.MXNetError, match='expects 1 input'):
        nd.SequenceMask(nd.array(data), nd.array([1, 2, 3]))


def test_sequence_mask_int_lengths_and_float16(rng):
    data = rng.standard_normal((5, 3)).astype(np.float16)
    lengths = np.array([2, 0, 5], dtype=np.int32)
    out = nd.SequenceMask(nd.array(data, dtype='float16'), nd.array(lengths, dtype='int32'),
                          use_sequence_length=True, value=0.5)
    np.testing.assert_array_equal(out.asnumpy(), _seqmask_ref(data, lengths, 0, 0.5))


def test_sequence_mask_errors():
    data = nd.array(np.zeros((4, 3)))
    with pytest.raises(mx.MXNetError, match='axis must be 0 or 1'):
        nd.SequenceMask(data, nd.array([1, 2, 3]), use_sequence_length=True, axis=2)
    with pytest.raises(mx.MXNetError, match='sequence_length shape'):
        nd.SequenceMask(data, nd.array([1, 2]), use_sequence_length=True)
    with pytest.raises(mx.MXNetError, match='sequence_length shape'):
        nd.SequenceMask(data, nd.array([1, 2, 3]), use_sequence_length=True, axis=1)
    with pytest.raises(mx.MXNetError, match='at least 2 dimensions'):
        nd.SequenceMask(nd.array([1, 2]))
