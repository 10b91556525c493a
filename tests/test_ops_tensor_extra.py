"""The tensor ops of csrc/ops/tensor_extra.c and tensor_num.c against NumPy references: several
shapes, empty and one-element arrays where legal, every dtype they take, and the errors of bad
input."""
import math

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = [
    'reshape_like', 'shape_array', 'size_array', 'argmax_channel', 'batch_take', 'gather_nd',
    'scatter_nd', '_backward_gather_nd', '_scatter_set_nd', '_scatter_add_like_nd',
    'depth_to_space', 'space_to_depth', '_ravel_multi_index', '_unravel_index', '_split_v2',
    'fill_element_0index', '_onehot_encode', 'khatri_rao',
    'logical_not', 'cumsum', '_backward_cumsum', 'moments', '_backward_moments', 'erfinv',
    '_backward_erfinv', 'all_finite', 'multi_all_finite', 'amp_cast', 'amp_multicast',
    '_backward_amp_cast', '_histogram', '_linspace',
]

ALL_DTYPES = ['float32', 'float64', 'float16', 'int32', 'int64', 'int8', 'uint8']
FLOATS = ['float32', 'float64', 'float16']


def _data(rng, shape, dtype):
    if dtype == 'uint8':
        return rng.integers(0, 20, size=shape).astype(dtype)
    if np.dtype(dtype).kind in 'iu':
        return rng.integers(-20, 20, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _tol(dtype):
    return dict(rtol=1e-2, atol=1e-2) if dtype == 'float16' else dict(rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# Shape ops
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('lshape,rshape,kw,want', [
    ((30,), (15, 2), {}, (15, 2)),
    ((2, 12), (6, 3, 4), dict(lhs_begin=1, rhs_begin=1), (2, 3, 4)),
    ((30, 12), (4, 2, 2, 3), dict(lhs_begin=-1, lhs_end=None, rhs_begin=1, rhs_end=None),
     (30, 2, 2, 3)),
    ((30, 7), (15, 2, 4), dict(lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2), (15, 2, 7)),
    ((0, 3), (3, 0), {}, (3, 0)),
    ((1,), (1, 1), {}, (1, 1)),
])
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_reshape_like(lshape, rshape, kw, want, dtype):
    rng = np.random.default_rng(0)
    x = _data(rng, lshape, dtype)
    out = nd.reshape_like(nd.array(x, dtype=dtype), nd.zeros(rshape), **kw)
    assert out.shape == want and out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), x.reshape(want))


def test_reshape_like_errors():
    with pytest.raises(mx.MXNetError, match='sizes differ'):
        nd.reshape_like(nd.zeros((2, 3)), nd.zeros((4, 2)))
    with pytest.raises(mx.MXNetError, match='invalid range'):
        nd.reshape_like(nd.zeros((2, 3)), nd.zeros((2, 3)), lhs_begin=2, lhs_end=1)


@pytest.mark.parametrize('shape', [(), (0,), (1,), (2, 3), (2, 0, 4), (1, 2, 3, 4, 5)])
def test_shape_size_array(shape):
    with mx.np_shape(shape == ()):  # zeros(()) needs NumPy shape semantics, as in MXNet
        x = nd.zeros(shape)
    s = nd.shape_array(x)
    assert s.dtype == np.int64
    np.testing.assert_array_equal(s.asnumpy(), np.array(shape, dtype=np.int64))
    z = nd.size_array(x)
    assert z.dtype == np.int64 and z.shape == (1,)
    assert int(z.asnumpy()[0]) == int(np.prod(shape))


@pytest.mark.parametrize('shape', [(3, 4), (2, 3, 7), (1, 1), (2, 5, 3, 2), (0, 3)])
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_argmax_channel(shape, dtype):
    x = _data(np.random.default_rng(1), shape, dtype)
    out = nd.argmax_channel(nd.array(x, dtype=dtype))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), np.argmax(x, axis=1).astype(dtype))
    with pytest.raises(mx.MXNetError, match='axis 1'):
        nd.argmax_channel(nd.zeros((4,)))


@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('shape', [(4, 5), (1, 3), (3, 1), (0, 4)])
def test_batch_take(dtype, shape):
    rng = np.random.default_rng(2)
    x = _data(rng, shape, dtype)
    idx = rng.integers(-2, shape[1] + 2, size=shape[0]).astype(np.int32)
    out = nd.batch_take(nd.array(x, dtype=dtype), nd.array(idx, dtype='int32'))
    want = x[np.arange(shape[0]), np.clip(idx, 0, shape[1] - 1)]
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_batch_take_errors():
    with pytest.raises(mx.MXNetError, match='int32'):
        nd.batch_take(nd.zeros((2, 3)), nd.array([0, 1]))
    with pytest.raises(mx.MXNetError, match='as many elements'):
        nd.batch_take(nd.zeros((2, 3)), nd.array([0, 1, 2], dtype='int32'))


def _gather_nd_ref(x, idx):
    m = idx.shape[0]
    cols = idx.reshape(m, -1)
    rows = [x[tuple(int(c) for c in cols[:, j])] for j in range(cols.shape[1])]
    out = np.array(rows, dtype=x.dtype).reshape(idx.shape[1:] + x.shape[m:])
    return out.reshape(1) if out.ndim == 0 else out


GND_CASES = [  # (data shape, indices shape)
    ((5,), (1, 3)), ((3, 4), (2, 5)), ((3, 4), (1, 2)), ((2, 3, 4), (2, 2, 3)),
    ((2, 3, 4), (3, 1)), ((3, 4), (2, 0)), ((1,), (1, 1)),
]


@pytest.mark.parametrize('dshape,ishape', GND_CASES)
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_gather_nd(dshape, ishape, dtype):
    rng = np.random.default_rng(3)
    x = _data(rng, dshape, dtype)
    idx = np.stack([rng.integers(-dshape[k], dshape[k], size=ishape[1:])
                    for k in range(ishape[0])]).astype(np.int32) if ishape[0] else None
    out = nd.gather_nd(nd.array(x, dtype=dtype), nd.array(idx, dtype='int32'))
    want = _gather_nd_ref(x, idx)
    np.testing.assert_array_equal(out.asnumpy(), want.reshape(out.shape))
    if dtype in ('float32', 'float64'):  # scatter_nd puts the rows back (unique indices)
        flat = np.unique(np.ravel_multi_index(np.mod(idx.reshape(idx.shape[0], -1),
                                                     np.array(dshape[:ishape[0]])[:, None]),
                                              dshape[:ishape[0]]))
        uidx = np.array(np.unravel_index(flat, dshape[:ishape[0]]), dtype=np.int64)
        rows = _gather_nd_ref(x, uidx)
        back = nd.scatter_nd(nd.array(rows, dtype=dtype), nd.array(uidx, dtype='int64'),
                             shape=dshape).asnumpy()
        want = np.zeros(dshape, dtype)
        for j in range(uidx.shape[1]):
            want[tuple(uidx[:, j])] = x[tuple(uidx[:, j])]
        np.testing.assert_array_equal(back, want)


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_backward_gather_nd_adds_repeats(dtype):
    data = np.array([1, 2, 3, 4], dtype=dtype)
    idx = np.array([[0, 1, 0, 2], [1, 1, 1, -1]], dtype=np.int64)
    out = nd._backward_gather_nd(nd.array(data, dtype=dtype), nd.array(idx, dtype='int64'),
                                 shape=(3, 2))
    want = np.zeros((3, 2), dtype)
    np.add.at(want, (idx[0], idx[1] % 2), data)
    np.testing.assert_array_equal(out.asnumpy(), want)
    base = np.arange(6, dtype=dtype).reshape(3, 2)
    out = nd._scatter_add_like_nd(nd.array(base, dtype=dtype), nd.array(data, dtype=dtype),
                                  nd.array(idx, dtype='int64'))
    np.testing.assert_array_equal(out.asnumpy(), base + want)
    out = nd._scatter_set_nd(nd.array(base, dtype=dtype), nd.array(data[:1], dtype=dtype),
                             nd.array(idx[:, :1], dtype='int64'), shape=(3, 2))
    want = base.copy()
    want[0, 1] = data[0]
    np.testing.assert_array_equal(out.asnumpy(), want)
    lhs = nd.array(base, dtype=dtype)  # MXNet's own use: in place, out=lhs
    nd._scatter_set_nd(lhs, nd.array(data[:1], dtype=dtype), nd.array(idx[:, :1], dtype='int64'),
                       shape=(3, 2), out=lhs)
    np.testing.assert_array_equal(lhs.asnumpy(), want)


def test_gather_nd_errors():
    with pytest.raises(IndexError, match='out of range'):
        nd.gather_nd(nd.zeros((2, 3)), nd.array([[2], [0]]))
    with pytest.raises(mx.MXNetError, match='indices of shape'):
        nd.gather_nd(nd.zeros((2, 3)), nd.zeros((3, 1)))
    with pytest.raises(mx.MXNetError, match='does not match'):
        nd.scatter_nd(nd.zeros((3,)), nd.zeros((2, 2)), shape=(2, 2))


def _d2s(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _s2d(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@pytest.mark.parametrize('shape,b', [((1, 4, 2, 3), 2), ((2, 18, 1, 2), 3), ((1, 1, 1, 1), 1)])
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_depth_space(shape, b, dtype):
    x = _data(np.random.default_rng(4), shape, dtype)
    y = nd.depth_to_space(nd.array(x, dtype=dtype), block_size=b).asnumpy()
    np.testing.assert_array_equal(y, _d2s(x, b))
    z = nd.space_to_depth(nd.array(y, dtype=dtype), block_size=b).asnumpy()
    np.testing.assert_array_equal(z, _s2d(y, b))
    np.testing.assert_array_equal(z, x)


def test_depth_space_errors():
    with pytest.raises(mx.MXNetError, match='block_size'):
        nd.depth_to_space(nd.zeros((1, 3, 2, 2)), block_size=2)
    with pytest.raises(mx.MXNetError, match='multiples'):
        nd.space_to_depth(nd.zeros((1, 3, 3, 2)), block_size=2)
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.space_to_depth(nd.zeros((3, 2, 2)), block_size=2)
    for op in (nd.depth_to_space, nd.space_to_depth):  # MXNet refuses empty inputs
        with pytest.raises(mx.MXNetError, match='is 0'):
            op(nd.zeros((0, 4, 2, 2)), block_size=2)
        with pytest.raises(mx.MXNetError, match='positive'):
            op(nd.zeros((1, 4, 2, 2)), block_size=0)
        with pytest.raises(mx.MXNetError, match='block_size'):  # no overflow of block_size^2
            op(nd.zeros((1, 4, 2, 2)), block_size=2 ** 40)


@pytest.mark.parametrize('shape', [(7,), (3, 4), (2, 3, 5), (1, 1)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'int64'])
def test_ravel_unravel(shape, dtype):
    rng = np.random.default_rng(5)
    data = np.stack([rng.integers(0, s, size=11) for s in shape]).astype(dtype)
    flat = nd.ravel_multi_index(nd.array(data, dtype=dtype), shape=shape)
    want = np.ravel_multi_index(data.astype(np.int64), shape)
    np.testing.assert_array_equal(flat.asnumpy(), want.astype(dtype))
    back = nd.unravel_index(nd.array(want, dtype=dtype), shape=shape)
    np.testing.assert_array_equal(back.asnumpy(), data)
    # a leading -1 leaves the first dim unbounded
    lead = (-1,) + shape[1:]
    np.testing.assert_array_equal(
        nd._unravel_index(nd.array(want, dtype=dtype), shape=lead).asnumpy(), data)
    np.testing.assert_array_equal(
        nd._ravel_multi_index(nd.array(data, dtype=dtype), shape=lead).asnumpy(), want)


def test_ravel_errors():
    with pytest.raises(mx.MXNetError, match='shape'):
        nd.ravel_multi_index(nd.zeros((3, 2)), shape=(2, 2))
    with pytest.raises(mx.MXNetError, match='empty'):
        nd.unravel_index(nd.zeros((3,)), shape=())


@pytest.mark.parametrize('shape,axis,indices,sections,squeeze', [
    ((6, 4), 0, (0, 2, 3), 0, False),
    ((6, 4), 1, (0, 1), 0, False),
    ((5, 3, 2), 0, (), 3, False),
    ((2, 3, 2), -2, (), 3, True),
    ((4,), 0, (0,), 0, False),
    ((4, 0), 0, (0, 4), 0, False),
])
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_split_v2(shape, axis, indices, sections, squeeze, dtype):
    x = _data(np.random.default_rng(6), shape, dtype)
    outs = nd._split_v2(nd.array(x, dtype=dtype), indices=indices, axis=axis,
                        squeeze_axis=squeeze, sections=sections)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    if sections:
        want = np.array_split(x, sections, axis=axis)
    else:
        want = np.split(x, list(indices[1:]), axis=axis)
    assert len(outs) == len(want)
    for o, w in zip(outs, want):
        if squeeze:
            w = w.squeeze(axis)
        np.testing.assert_array_equal(o.asnumpy(), w)


def test_split_v2_front_end_and_errors():
    x = nd.array(np.arange(12).reshape(6, 2))
    parts = nd.split_v2(x, 3)
    np.testing.assert_array_equal(parts[1].asnumpy(), np.arange(12).reshape(6, 2)[2:4])
    parts = nd.split_v2(x, (1, 4), axis=0)
    assert [p.shape for p in parts] == [(1, 2), (3, 2), (2, 2)]
    with pytest.raises(ValueError):
        nd.split_v2(x, 4)
    with pytest.raises(mx.MXNetError, match='does not fit'):
        nd._split_v2(x, indices=(0, 4, 2), axis=0)
    with pytest.raises(mx.MXNetError, match='length 1'):
        nd._split_v2(x, indices=(0, 2), axis=1, squeeze_axis=True, sections=0)[0]
    s = mx.sym.split_v2(mx.sym.var('a'), 2, axis=1, squeeze_axis=True)
    assert len(s.list_outputs()) == 2


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_fill_element_0index_and_onehot(dtype):
    rng = np.random.default_rng(7)
    x = _data(rng, (4, 5), dtype)
    m = _data(rng, (4,), dtype)
    idx = rng.integers(0, 5, size=4)
    out = nd.fill_element_0index(nd.array(x, dtype=dtype), nd.array(m, dtype=dtype),
                                 nd.array(idx, dtype=dtype))
    want = x.copy()
    want[np.arange(4), idx] = m
    np.testing.assert_array_equal(out.asnumpy(), want)
    oh = nd._onehot_encode(nd.array(idx, dtype=dtype), nd.zeros((4, 5), dtype=dtype))
    np.testing.assert_array_equal(oh.asnumpy(), np.eye(5, dtype=dtype)[idx])
    buf = nd.zeros((4, 5), dtype=dtype)
    assert nd.onehot_encode(nd.array(idx, dtype=dtype), buf) is buf
    np.testing.assert_array_equal(buf.asnumpy(), np.eye(5, dtype=dtype)[idx])
    with pytest.raises(IndexError):
        nd.fill_element_0index(nd.zeros((2, 3)), nd.zeros((2,)), nd.array([0, 3]))
    with pytest.raises(IndexError):
        nd._onehot_encode(nd.array([5]), nd.zeros((1, 3)))


@pytest.mark.parametrize('shapes', [[(2, 3), (4, 3)], [(3, 2)], [(2, 2), (1, 2), (3, 2)],
                                    [(0, 2), (3, 2)], [(1, 1), (1, 1)]])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_khatri_rao(shapes, dtype):
    rng = np.random.default_rng(8)
    mats = [_data(rng, s, dtype) for s in shapes]
    out = nd.khatri_rao(*[nd.array(m, dtype=dtype) for m in mats])
    want = mats[0]
    for m in mats[1:]:
        want = np.einsum('ir,jr->ijr', want, m).reshape(-1, m.shape[1])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    with pytest.raises(mx.MXNetError, match='column count'):
        nd.khatri_rao(nd.zeros((2, 3)), nd.zeros((2, 2)))


# ------------------------------------------------------------------------------------------------
# Numeric ops
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(0,), (1,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_logical_not(shape, dtype):
    x = _data(np.random.default_rng(9), shape, dtype)
    if x.size:
        x.reshape(-1)[0] = 0
    out = nd.logical_not(nd.array(x, dtype=dtype))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), (x == 0).astype(dtype))


@pytest.mark.parametrize('shape,axis', [((7,), 0), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), None),
                                        ((0, 3), 0), ((1,), None), ((2, 0), None)])
@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_cumsum(shape, axis, dtype):
    x = _data(np.random.default_rng(10), shape, dtype)
    out = nd.cumsum(nd.array(x, dtype=dtype), axis=axis)
    want = np.cumsum(x, axis=axis, dtype=dtype)
    assert out.dtype == np.dtype(dtype) and out.shape == want.shape
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), want.astype(np.float64),
                               **_tol(dtype))


def test_cumsum_dtype_and_wrap():
    x = np.array([100, 100, 100], dtype=np.int8)
    np.testing.assert_array_equal(nd.cumsum(nd.array(x, dtype='int8')).asnumpy(),
                                  np.cumsum(x, dtype=np.int8))
    out = nd.cumsum(nd.array(x, dtype='int8'), dtype='float64')
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), [100, 200, 300])
    b = nd.cumsum(nd.array([True, False, True], dtype='bool'))
    assert b.dtype == np.int64
    np.testing.assert_array_equal(b.asnumpy(), [1, 1, 2])
    g = nd._backward_cumsum(nd.array([1., 2., 3.]), nd.zeros((3,)), axis=0)
    np.testing.assert_array_equal(g.asnumpy(), [6, 5, 3])
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.cumsum(nd.zeros((2, 3)), axis=2)
    with pytest.raises(mx.MXNetError, match='not one of'):
        nd.cumsum(nd.zeros((2, 3)), dtype='uint8')


@pytest.mark.parametrize('shape,axes', [((5,), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)),
                                        ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1,)), ((1, 1), (0,)),
                                        ((2, 0, 3), (0,))])
@pytest.mark.parametrize('keepdims', [False, True])
@pytest.mark.parametrize('dtype', FLOATS)
def test_moments(shape, axes, keepdims, dtype):
    x = _data(np.random.default_rng(11), shape, dtype)
    mean, var = nd.moments(nd.array(x, dtype=dtype), axes=axes, keepdims=keepdims)
    x64 = x.astype(np.float64)
    ax = None if axes is None else tuple(axes)
    wm = x64.mean(axis=ax, keepdims=keepdims)
    wv = x64.var(axis=ax, keepdims=keepdims)
    wm, wv = np.atleast_1d(wm), np.atleast_1d(wv)
    assert mean.dtype == np.dtype(dtype) and mean.shape == wm.shape == var.shape
    if x.size:
        np.testing.assert_allclose(mean.asnumpy(), wm, **_tol(dtype))
        np.testing.assert_allclose(var.asnumpy(), wv, **_tol(dtype))
    with pytest.raises(mx.MXNetError, match='out of range or repeated'):
        nd.moments(nd.zeros((2, 3)), axes=(1, 1))
    for empty in (None, ()):
        with pytest.raises(mx.MXNetError, match='empty axes'):
            nd.moments(nd.zeros((2, 3)), axes=empty)


@pytest.mark.parametrize('shape', [(0,), (1,), (4, 5)])
@pytest.mark.parametrize('dtype', FLOATS)
def test_erfinv(shape, dtype):
    x = np.random.default_rng(12).uniform(-0.99, 0.99, size=shape).astype(dtype)
    out = nd.erfinv(nd.array(x, dtype=dtype)).asnumpy().astype(np.float64)
    back = np.vectorize(math.erf)(out) if out.size else out
    np.testing.assert_allclose(back, x.astype(np.float64), **_tol(dtype))
    edge = nd.erfinv(nd.array([1, -1, 0, 2], dtype=dtype)).asnumpy()
    assert np.isposinf(edge[0]) and np.isneginf(edge[1]) and edge[2] == 0 and np.isnan(edge[3])
    g = nd._backward_erfinv(nd.array([2.0], dtype=dtype), nd.array([0.0], dtype=dtype))
    np.testing.assert_allclose(g.asnumpy(), [math.sqrt(math.pi)], **_tol(dtype))
    with pytest.raises(mx.MXNetError, match='float'):
        nd.erfinv(nd.zeros((2,), dtype='int32'))


@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_all_finite(dtype):
    x = _data(np.random.default_rng(13), (3, 4), dtype)
    assert nd.all_finite(nd.array(x, dtype=dtype)).asnumpy().tolist() == [1.0]
    assert nd.all_finite(nd.zeros((0,), dtype=dtype)).asnumpy().tolist() == [1.0]
    if dtype in FLOATS:
        for bad in (np.nan, np.inf, -np.inf):
            y = x.copy()
            y[1, 2] = bad
            out = nd.all_finite(nd.array(y, dtype=dtype))
            assert out.dtype == np.float32 and out.asnumpy().tolist() == [0.0]
            m = nd.multi_all_finite(nd.array(x, dtype=dtype), nd.array(y, dtype=dtype),
                                    num_arrays=2)
            assert m.asnumpy().tolist() == [0.0]
    m = nd.multi_all_finite(nd.array(x, dtype=dtype), nd.array(x, dtype=dtype), num_arrays=2)
    assert m.asnumpy().tolist() == [1.0]


def test_all_finite_init_output():
    out = nd.array([0.0])
    nd.all_finite(nd.ones((2,)), init_output=False, out=out)
    assert out.asnumpy().tolist() == [0.0]  # nothing non-finite: the output is left alone
    nd.all_finite(nd.ones((2,)), init_output=True, out=out)
    assert out.asnumpy().tolist() == [1.0]


@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('to', ['float16', 'float32', 'float64'])
def test_amp_cast(dtype, to):
    x = _data(np.random.default_rng(14), (3, 4), dtype)
    out = nd.amp_cast(nd.array(x, dtype=dtype), dtype=to)
    want_dt = to if dtype in ('float32', 'float16') else dtype
    assert out.dtype == np.dtype(want_dt)
    np.testing.assert_allclose(out.asnumpy().astype(np.float64),
                               x.astype(want_dt).astype(np.float64), rtol=1e-3)
    g = nd._backward_amp_cast(nd.array(x.astype(np.float64), dtype='float64'),
                              nd.zeros((3, 4), dtype=dtype))
    assert g.dtype == np.dtype(dtype)


@pytest.mark.parametrize('dtypes,narrow,want', [
    (('float16', 'float32', 'int32'), False, ('float32', 'float32', 'int32')),
    (('float16', 'float32', 'int32'), True, ('float16', 'float16', 'int32')),
    (('float16', 'float16'), False, ('float16', 'float16')),
    (('float64', 'float16'), False, ('float64', 'float64')),
    (('float32',), True, ('float32',)),
])
def test_amp_multicast(dtypes, narrow, want):
    rng = np.random.default_rng(15)
    xs = [_data(rng, (2, 3), d) for d in dtypes]
    outs = nd.amp_multicast(*[nd.array(x, dtype=d) for x, d in zip(xs, dtypes)],
                            num_outputs=len(xs), cast_narrow=narrow)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    assert tuple(np.dtype(o.dtype).name for o in outs) == want
    for o, x, w in zip(outs, xs, want):
        np.testing.assert_allclose(o.asnumpy().astype(np.float64),
                                   x.astype(w).astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize('shape', [(0,), (1,), (50,), (4, 6, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_histogram(shape, dtype):
    rng = np.random.default_rng(16)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    for bins, rng_ in ((5, (-2.5, 2.5)), (3, (0, 0)), (7, (-10.0, 10.0))):
        cnt, edges = nd.histogram(nd.array(x, dtype=dtype), bins=bins, range=rng_)
        wc, we = np.histogram(x, bins=bins, range=rng_)
        assert cnt.dtype == np.int64 and edges.dtype == np.dtype(dtype)
        if dtype == 'int32':  # MXNet bins against edges stored in the data dtype (truncated)
            lo, hi = (rng_[0] - 0.5, rng_[1] + 0.5) if rng_[0] == rng_[1] else rng_
            assert cnt.asnumpy().sum() == ((x >= lo) & (x <= hi)).sum()
            np.testing.assert_array_equal(edges.asnumpy(), we.astype(dtype))
            continue
        np.testing.assert_array_equal(cnt.asnumpy(), wc)
        np.testing.assert_allclose(edges.asnumpy(), we, rtol=1e-6)
    b = np.array([-1.0, 0.5, 2.0, 4.5, 50.0], dtype=dtype)
    cnt, edges = nd.histogram(nd.array(x, dtype=dtype), bins=nd.array(b, dtype=dtype))
    np.testing.assert_array_equal(cnt.asnumpy(), np.histogram(x, bins=b)[0])
    np.testing.assert_array_equal(edges.asnumpy(), b)
    if x.size and dtype != 'int32':
        cnt, edges = nd.histogram(nd.array(x, dtype=dtype), bins=4)
        np.testing.assert_array_equal(cnt.asnumpy(), np.histogram(x, bins=4)[0])


def test_histogram_errors():
    with pytest.raises(mx.MXNetError, match='go together'):
        nd._histogram(nd.zeros((3,)), bin_cnt=3)
    with pytest.raises(mx.MXNetError, match='above'):
        nd._histogram(nd.zeros((3,)), bin_cnt=3, range=(2, 1))
    with pytest.raises(mx.MXNetError, match='at least 2'):
        nd._histogram(nd.zeros((3,)), nd.zeros((1,)))
    with pytest.raises(ValueError):
        mx.sym.histogram(mx.sym.var('a'), bins=3)


@pytest.mark.parametrize('start,stop,num,endpoint', [(0, 1, 5, True), (0, 1, 5, False),
                                                     (-3, 7.5, 1, True), (2, 2, 0, True),
                                                     (10, -10, 11, False)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_linspace(start, stop, num, endpoint, dtype):
    out = nd.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    steps = num - 1 if endpoint else num
    step = (stop - start) / steps if steps > 0 else 0
    want = (start + step * np.arange(num)).astype(dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    with pytest.raises(mx.MXNetError, match='non-negative'):
        nd.linspace(0, 1, -1)
    np.testing.assert_allclose(nd.linspace(start, stop, num, endpoint, None, dtype).asnumpy(),
                               want, rtol=1e-6)
    sym = mx.sym.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    np.testing.assert_allclose(sym.eval()[0].asnumpy(), want, rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# Optimizer ops: ftml_update, mp_lamb_update_phase1/2, reset_arrays
# ------------------------------------------------------------------------------------------------

OPS_COVERED += ['ftml_update', 'mp_lamb_update_phase1', 'mp_lamb_update_phase2', 'reset_arrays']


def _ftml_ref(w, g, d, v, z, lr, t, beta1=0.6, beta2=0.999, eps=1e-8, wd=0.0, rg=1.0, clip=-1.0):
    gr = rg * g + wd * w
    if clip >= 0:
        gr = np.clip(gr, -clip, clip)
    v = beta2 * v + (1 - beta2) * gr * gr
    dt = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + eps)
    z = beta1 * z + (1 - beta1) * gr - (dt - beta1 * d) * w
    return -z / dt, dt, v, z


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('shape', [(0,), (1,), (3, 4)])
@pytest.mark.parametrize('kw', [dict(), dict(wd=0.1, rescale_grad=0.5, clip_grad=0.3, t=3)])
def test_ftml_update(dtype, shape, kw):
    rng = np.random.default_rng(20)
    w, g = _data(rng, shape, dtype), _data(rng, shape, dtype)
    d = np.abs(_data(rng, shape, dtype)) + 0.5
    v, z = np.abs(_data(rng, shape, dtype)), _data(rng, shape, dtype)
    arrs = [nd.array(a, dtype=dtype) for a in (w, g, d, v, z)]
    t = kw.get('t', 1)
    out = nd.ftml_update(*arrs, lr=0.1, t=t, **{k: x for k, x in kw.items() if k != 't'})
    want = _ftml_ref(w.astype(np.float64), g, d, v, z, 0.1, t, wd=kw.get('wd', 0.0),
                     rg=kw.get('rescale_grad', 1.0), clip=kw.get('clip_grad', -1.0))
    tol = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.asnumpy(), want[0], **tol)
    for arr, ref in zip(arrs[2:], want[1:]):  # d, v, z are updated in place
        np.testing.assert_allclose(arr.asnumpy(), ref, **tol)


@pytest.mark.parametrize('wdtype', ['float16', 'float32'])
@pytest.mark.parametrize('bias', [True, False])
def test_mp_lamb_update(wdtype, bias):
    rng = np.random.default_rng(21)
    shape = (4, 5)
    w32 = rng.standard_normal(shape).astype(np.float32)
    w, g = w32.astype(wdtype), rng.standard_normal(shape).astype(wdtype)
    mean = rng.standard_normal(shape).astype(np.float32) * 0.1
    var = np.abs(rng.standard_normal(shape)).astype(np.float32) * 0.1
    m_nd, v_nd = nd.array(mean), nd.array(var)
    kw = dict(beta1=0.9, beta2=0.999, epsilon=1e-6, t=2, bias_correction=bias, wd=0.01,
              rescale_grad=2.0, clip_gradient=1.5)
    out = nd.mp_lamb_update_phase1(nd.array(w, dtype=wdtype), nd.array(g, dtype=wdtype), m_nd,
                                   v_nd, nd.array(w32), **kw)
    gr = np.clip(g.astype(np.float64) * 2.0, -1.5, 1.5)
    mean2 = 0.9 * mean + 0.1 * gr
    var2 = 0.999 * var + 0.001 * gr * gr
    mh, vh = (mean2 / (1 - 0.9 ** 2), var2 / (1 - 0.999 ** 2)) if bias else (mean2, var2)
    want_g = mh / (np.sqrt(vh) + 1e-6) + 0.01 * w32
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), want_g, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m_nd.asnumpy(), mean2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v_nd.asnumpy(), var2, rtol=1e-5, atol=1e-6)
    r1 = np.linalg.norm(w32).astype(np.float32)
    r2 = np.linalg.norm(want_g).astype(np.float32)
    for lb, ub, r1v in ((-1, -1, r1), (0.1, 1.0, r1), (-1, -1, 0.0)):
        new_w = nd.mp_lamb_update_phase2(nd.array(w, dtype=wdtype), out,
                                         nd.array([r1v], dtype='float32'),
                                         nd.array([r2], dtype='float32'), nd.array(w32),
                                         lr=0.05, lower_bound=lb, upper_bound=ub)
        rr = r1v if lb < 0 else min(max(r1v, lb), ub)
        rate = 0.05 * rr / r2 if rr != 0 else 0.05
        assert new_w.dtype == np.dtype(wdtype)
        tol = dict(rtol=1e-2, atol=1e-2) if wdtype == 'float16' else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(new_w.asnumpy().astype(np.float64),
                                   w32 - rate * out.asnumpy(), **tol)
    with pytest.raises(mx.MXNetError, match='float32'):
        nd.mp_lamb_update_phase1(nd.array(w, dtype=wdtype), nd.array(g, dtype=wdtype),
                                 nd.array(mean, dtype='float64'), v_nd, nd.array(w32), t=1, wd=0)


@pytest.mark.parametrize('n', [1, 3, 40])
def test_reset_arrays(n):
    rng = np.random.default_rng(22)
    dtypes = ['float16', 'float32', 'float64', 'int32']
    arrs = [nd.array(_data(rng, tuple(rng.integers(1, 5, size=rng.integers(1, 4))), dt) + 1,
                     dtype=dt) for dt in (dtypes[i % 4] for i in range(n))]
    assert nd.reset_arrays(*arrs, num_arrays=n) == []
    for a in arrs:
        assert not a.asnumpy().any()
    with pytest.raises(mx.MXNetError):
        nd.reset_arrays(nd.ones((2,)), num_arrays=2)


# ------------------------------------------------------------------------------------------------
# Regressions in existing ops found with MXNet's unit tests
# ------------------------------------------------------------------------------------------------

def test_broadcast_like_refuses_empty_axes():
    """MXNet: 'Empty axes tuple is not allowed' (test_ndarray's test_broadcast_like_axis)."""
    with pytest.raises(mx.MXNetError, match='Empty axes'):
        nd.broadcast_like(nd.ones((1, 2)), nd.ones((3, 2)), lhs_axes=(), rhs_axes=())
    out = nd.broadcast_like(nd.ones((1, 2)), nd.ones((3, 2)), lhs_axes=(0,), rhs_axes=(0,))
    assert out.shape == (3, 2)
