"""nn_train family: Dropout (training/inference, mask statistics, exact scaling, shared axes,
seeding, errors), L2Normalization (three modes vs NumPy) and log_sigmoid."""
import contextlib

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['Dropout', 'L2Normalization', 'log_sigmoid']

FLOATS = ['float32', 'float64', 'float16']
SHAPES = [(0,), (1,), (7,), (3, 4), (2, 0, 3), (2, 3, 4, 5)]


@contextlib.contextmanager
def training(flag=True):
    prev = mx._core.set_training(flag)
    try:
        yield
    finally:
        mx._core.set_training(prev)


def _nonzero(rng, shape, dtype):
    """Values in +-[0.5, 2): never zero, so a zero output always means 'dropped'."""
    x = rng.uniform(0.5, 2, size=shape) * rng.choice([-1, 1], size=shape)
    return x.astype(dtype)


def _scale(p, dtype):
    """The kept-element factor as the kernel rounds it: in the dtype (float16 via float32)."""
    if dtype == 'float64':
        return np.float64(1.0) / np.float64(1.0 - p)
    s = np.float32(1.0) / np.float32(1.0 - p)
    return np.float16(s) if dtype == 'float16' else s


# ------------------------------------------------------------------------------------------------
# Dropout


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', SHAPES)
def test_dropout_inference_is_identity(rng, dtype, shape):
    x = rng.standard_normal(shape).astype(dtype)
    for kw in ({}, {'p': 0.9}, {'p': 0.3, 'axes': (0,)}, {'mode': 'training'}):
        out = nd.Dropout(nd.array(x, dtype=dtype), **kw)
        assert isinstance(out, nd.NDArray)  # one visible output
        assert out.shape == shape and out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.asnumpy(), x)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', SHAPES)
def test_dropout_training_exact_scaling(rng, dtype, shape):
    x = _nonzero(rng, shape, dtype)
    with training():
        out = nd.Dropout(nd.array(x, dtype=dtype), p=0.4).asnumpy()
    assert out.shape == shape and out.dtype == np.dtype(dtype)
    kept = out != 0
    # Kept elements are exactly data * (1 / (1 - p)) in the dtype, the others exactly 0.
    np.testing.assert_array_equal(out, np.where(kept, x * _scale(0.4, dtype), 0).astype(dtype))


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('p', [0.1, 0.5, 0.8])
def test_dropout_mask_statistics(dtype, p):
    n = 100000
    mx.random.seed(11)
    with training():
        out = nd.Dropout(nd.ones((n,), dtype=dtype), p=p).asnumpy()
    s = _scale(p, dtype)
    assert set(np.unique(out).tolist()) <= {0.0, float(s)}
    kept = (out != 0).mean()
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(kept - (1 - p)) < 5 * sigma
    # Unbiased: the mean of the output stays near the mean of the input.
    assert abs(out.astype(np.float64).mean() - 1) < 5 * sigma * float(s) + 1e-3
    # No long-range structure: both halves drop at the same rate.
    half = (out[: n // 2] != 0).mean() - (out[n // 2:] != 0).mean()
    assert abs(half) < 7 * sigma


def test_dropout_default_p_is_half():
    mx.random.seed(0)
    with training():
        out = nd.Dropout(nd.ones((20000,))).asnumpy()
    assert set(np.unique(out).tolist()) == {0.0, 2.0}
    assert abs((out == 0).mean() - 0.5) < 0.02


def test_dropout_p_zero_is_identity_even_when_training(rng):
    x = rng.standard_normal((5, 6)).astype('float32')
    with training():
        out = nd.Dropout(nd.array(x), p=0.0)
        always = nd.Dropout(nd.array(x), p=0, mode='always')
    np.testing.assert_array_equal(out.asnumpy(), x)
    np.testing.assert_array_equal(always.asnumpy(), x)


def test_dropout_p_zero_draws_no_random_numbers():
    mx.random.seed(5)
    with training():
        nd.Dropout(nd.ones((100,)), p=0.0)
    a = nd.random.uniform(shape=(4,)).asnumpy()
    mx.random.seed(5)
    b = nd.random.uniform(shape=(4,)).asnumpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_dropout_p_one_gives_nan(rng, dtype):
    """MXNet accepts p in [0, 1] inclusive; with p = 1 its mask is (u < 0) * (1 / 0) = 0 * inf,
    so the training output is NaN everywhere (MXNet 1.9.1's test_dropout checks exactly that);
    at inference Dropout is the identity."""
    x = _nonzero(rng, (3, 50), dtype)
    with training():
        out = nd.Dropout(nd.array(x, dtype=dtype), p=1.0)
    assert out.dtype == np.dtype(dtype) and np.all(np.isnan(out.asnumpy()))
    np.testing.assert_array_equal(nd.Dropout(nd.array(x, dtype=dtype), p=1.0).asnumpy(), x)


def test_dropout_mode_always_drops_at_inference(rng):
    x = _nonzero(rng, (4000,), 'float32')
    mx.random.seed(2)
    out = nd.Dropout(nd.array(x), p=0.5, mode='always').asnumpy()
    kept = out != 0
    assert 0.45 < kept.mean() < 0.55
    np.testing.assert_array_equal(out[kept], x[kept] * np.float32(2))


def test_dropout_training_flag_is_read_at_call_time(rng):
    x = _nonzero(rng, (1000,), 'float32')
    with training(False):
        np.testing.assert_array_equal(nd.Dropout(nd.array(x)).asnumpy(), x)
    with training(True):
        assert (nd.Dropout(nd.array(x)).asnumpy() == 0).any()
    np.testing.assert_array_equal(nd.Dropout(nd.array(x)).asnumpy(), x)


@pytest.mark.parametrize('axes', [(1,), (0, 2), (-1,), (2,), (0, 1, 2), (1, 1)])
@pytest.mark.parametrize('dtype', FLOATS)
def test_dropout_axes_share_the_mask(rng, axes, dtype):
    shape = (6, 40, 5)
    x = _nonzero(rng, shape, dtype)
    mx.random.seed(3)
    with training():
        out = nd.Dropout(nd.array(x, dtype=dtype), p=0.5, axes=axes).asnumpy()
    kept = out != 0
    norm_axes = tuple(sorted({a % 3 for a in axes}))
    # Along every shared axis the keep/drop decision is constant.
    first = kept
    for a in norm_axes:
        first = np.take(first, [0], axis=a)
    np.testing.assert_array_equal(kept, np.broadcast_to(first, shape))
    np.testing.assert_array_equal(out, np.where(kept, x * _scale(0.5, dtype), 0).astype(dtype))
    if first.size > 20:
        assert 0 < first.mean() < 1


def test_dropout_axes_mask_statistics():
    """One draw per mask element: about (1-p) of the (N, C) channels survive."""
    mx.random.seed(9)
    with training():
        out = nd.Dropout(nd.ones((200, 250, 4)), p=0.3, axes=(2,)).asnumpy()
    kept = (out[:, :, 0] != 0)
    assert (out != 0).sum(axis=2).tolist() == (kept * 4).tolist()
    assert abs(kept.mean() - 0.7) < 5 * np.sqrt(0.21 / kept.size)


def test_dropout_axes_large_broadcast_threads(rng):
    """Big enough for the parallel broadcasting driver; checks against NumPy's broadcast."""
    x = _nonzero(rng, (3, 70000), 'float32')
    mx.random.seed(4)
    with training():
        out = nd.Dropout(nd.array(x), p=0.25, axes=(0,)).asnumpy()
    keep_row = out[0] != 0
    want = np.where(keep_row[None, :], x * _scale(0.25, 'float32'), 0)
    np.testing.assert_array_equal(out, want)


def test_dropout_mask_output_shape_and_dtype():
    op = mx._core.get_op('Dropout')
    for dtype in FLOATS:
        flag = nd.ones((1,), dtype=dtype).asnumpy().dtype
        x = nd.ones((2, 3, 4), dtype=dtype)
        (oshape, odt), (mshape, mdt) = op._infer(x)
        assert oshape == (2, 3, 4) and mshape == (2, 3, 4) and odt == mdt
        assert op._infer(x, axes=(1,))[1][0] == (2, 1, 4)
        assert op._infer(x, axes=(0, -1))[1][0] == (1, 3, 1)
        assert flag == np.dtype(dtype)
    info = mx._core.op_info('Dropout')
    assert info['outputs'] == ['output', 'mask'] and info['num_visible_outputs'] == 1
    assert [a['name'] for a in info['attrs']] == ['p', 'mode', 'axes', 'cudnn_off']


def test_dropout_seed_reproducible(rng):
    x = _nonzero(rng, (50, 60), 'float32')
    with training():
        mx.random.seed(123)
        a = nd.Dropout(nd.array(x), p=0.5).asnumpy()
        b = nd.Dropout(nd.array(x), p=0.5).asnumpy()
        mx.random.seed(123)
        c = nd.Dropout(nd.array(x), p=0.5).asnumpy()
        mx.random.seed(124)
        d = nd.Dropout(nd.array(x), p=0.5).asnumpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)  # successive calls draw fresh masks
    assert not np.array_equal(a, d)


def test_dropout_positional_and_keyword_attrs(rng):
    x = _nonzero(rng, (300,), 'float32')
    with training():
        mx.random.seed(8)
        a = nd.Dropout(nd.array(x), 0.3).asnumpy()
        mx.random.seed(8)
        b = nd.Dropout(data=nd.array(x), p=0.3, cudnn_off=True).asnumpy()
        mx.random.seed(8)
        c = nd.Dropout(nd.array(x), p='0.3', cudnn_off=None).asnumpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(a[a != 0] / x[a != 0], 1 / 0.7, rtol=1e-6)


def test_dropout_out_argument(rng):
    x = rng.standard_normal((3, 4)).astype('float32')
    y = nd.zeros((3, 4))
    r = nd.Dropout(nd.array(x), p=0.5, out=y)
    assert r is y
    np.testing.assert_array_equal(y.asnumpy(), x)


def test_dropout_errors():
    x = nd.ones((2, 3))
    for p in (-0.1, 1.5, float('nan')):
        with pytest.raises(mx.MXNetError, match='Parameter p exceed bound'):
            nd.Dropout(x, p=p)
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.Dropout(x, axes=(2,))
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.Dropout(x, axes=(-3,))
    with pytest.raises(mx.MXNetError, match='training'):
        nd.Dropout(x, mode='sometimes')
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'rate'"):
        nd.Dropout(x, rate=0.5)
    with pytest.raises(mx.MXNetError, match='float16, float32 or float64'):
        nd.Dropout(nd.array([1, 2], dtype='int32'))
    with pytest.raises(mx.MXNetError, match='Invalid Parameter format for p'):
        nd.Dropout(x, x)  # a second array lands on the first attribute, as in MXNet


# ------------------------------------------------------------------------------------------------
# L2Normalization


def _np_l2(x, mode, eps=1e-10):
    x = x.astype(np.float64)
    if mode == 'instance':
        axes = tuple(range(1, x.ndim))
    elif mode == 'channel':
        axes = (1,)
    else:
        axes = tuple(range(2, x.ndim))
    return x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)


L2_SHAPES = {
    'instance': [(0,), (1,), (5,), (3, 4), (2, 0), (0, 3), (2, 3, 4, 5), (2, 40000)],
    'channel': [(1, 1, 1), (2, 3, 4), (2, 0, 4), (2, 3, 0), (2, 3, 4, 5), (1, 3, 300, 2)],
    'spatial': [(1, 1, 1), (2, 3, 4), (2, 3, 0), (0, 3, 4), (2, 3, 4, 5), (2, 4, 9000)],
}


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('mode,shape', [(m, s) for m, ss in L2_SHAPES.items() for s in ss])
def test_l2_normalization(rng, mode, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    out = nd.L2Normalization(nd.array(x, dtype=dtype), mode=mode)
    assert isinstance(out, nd.NDArray)
    assert out.shape == shape and out.dtype == np.dtype(dtype)
    tol = {'float32': 1e-5, 'float64': 1e-12, 'float16': 3e-3}[dtype]
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), _np_l2(x, mode), rtol=tol,
                               atol=tol)


def test_l2_normalization_default_mode_and_eps(rng):
    x = rng.standard_normal((4, 6)).astype('float32')
    np.testing.assert_allclose(nd.L2Normalization(nd.array(x)).asnumpy(), _np_l2(x, 'instance'),
                               rtol=1e-5)
    # eps keeps all-zero rows finite; a large eps visibly shrinks the result.
    np.testing.assert_array_equal(nd.L2Normalization(nd.zeros((2, 3))).asnumpy(), 0)
    big = nd.L2Normalization(nd.array(x), eps=4.0).asnumpy()
    np.testing.assert_allclose(big, _np_l2(x, 'instance', eps=4.0), rtol=1e-5)
    sp = nd.L2Normalization(nd.array(x.reshape(2, 2, 6)), 1e-3, 'spatial').asnumpy()
    np.testing.assert_allclose(sp, _np_l2(x.reshape(2, 2, 6), 'spatial', 1e-3), rtol=1e-5)


def test_l2_normalization_norm_output_shape():
    op = mx._core.get_op('L2Normalization')
    x = nd.ones((2, 3, 4, 5))
    assert [s for s, _ in op._infer(x)] == [(2, 3, 4, 5), (2,)]
    assert [s for s, _ in op._infer(x, mode='channel')] == [(2, 3, 4, 5), (2, 1, 4, 5)]
    assert [s for s, _ in op._infer(x, mode='spatial')] == [(2, 3, 4, 5), (2, 3)]
    info = mx._core.op_info('L2Normalization')
    assert info['outputs'] == ['output', 'norm'] and info['num_visible_outputs'] == 1


def test_l2_normalization_errors():
    with pytest.raises(mx.MXNetError, match='at least 3 dimensions required in channel mode'):
        nd.L2Normalization(nd.ones((2, 3)), mode='channel')
    with pytest.raises(mx.MXNetError, match='spatial mode.*\\[4\\]'):
        nd.L2Normalization(nd.ones((4,)), mode='spatial')
    with pytest.raises(mx.MXNetError, match='at least 1 dimension'):
        nd.L2Normalization(nd.ones(()))
    with pytest.raises(mx.MXNetError, match='float16, float32 or float64'):
        nd.L2Normalization(nd.array([[1, 2]], dtype='int32'))
    with pytest.raises(mx.MXNetError, match='instance'):
        nd.L2Normalization(nd.ones((2, 3)), mode='batch')
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'axis'"):
        nd.L2Normalization(nd.ones((2, 3)), axis=1)


# ------------------------------------------------------------------------------------------------
# log_sigmoid


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', SHAPES + [(70000,)])
def test_log_sigmoid(rng, dtype, shape):
    x = rng.uniform(-30, 30, size=shape).astype(dtype)
    out = nd.log_sigmoid(nd.array(x, dtype=dtype))
    assert out.shape == shape and out.dtype == np.dtype(dtype)
    want = -np.logaddexp(0, -x.astype(np.float64))
    tol = {'float32': 1e-6, 'float64': 1e-14, 'float16': 2e-3}[dtype]
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), want, rtol=tol, atol=tol)


def test_log_sigmoid_extremes():
    x = np.array([-1e4, -100, -1, 0, 1, 100, 1e4], dtype='float64')
    want = -np.logaddexp(0, -x)
    for dtype in ('float32', 'float64'):
        out = nd.log_sigmoid(nd.array(x, dtype=dtype)).asnumpy()
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, want.astype(dtype), rtol=1e-6)
    assert nd.log_sigmoid(nd.array([0.0])).asnumpy()[0] == np.float32(-np.log(2))


def test_log_sigmoid_errors():
    with pytest.raises(mx.MXNetError, match='float16, float32 or float64'):
        nd.log_sigmoid(nd.array([1, 2], dtype='int32'))
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'axis'"):
        nd.log_sigmoid(nd.ones((2,)), axis=0)
