"""softmax, log_softmax and LeakyReLU (every act_type) against NumPy references."""
import math

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['softmax', 'log_softmax', 'LeakyReLU']

FLOATS = ['float32', 'float64']
TOL = {'float16': 3e-3, 'float32': 2e-6, 'float64': 1e-12}


def _np_softmax(x, axis=-1, temperature=None, log=False):
    z = x.astype(np.float64)
    if temperature is not None:
        z = z / temperature
    z = z - z.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - lse if log else np.exp(z - lse)


def _check(out, ref, dtype):
    assert out.dtype == np.dtype(dtype)
    got = out.asnumpy().astype(np.float64)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])


# ------------------------------------------------------------------------------------------------
# softmax / log_softmax

@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('axis', [-1, 0, 1, 2, -2])
def test_softmax_axes(rng, op, dtype, axis):
    x = rng.standard_normal((2, 3, 4)).astype(dtype) * 3
    out = getattr(nd, op)(nd.array(x, dtype=dtype), axis=axis)
    _check(out, _np_softmax(x, axis, log=op == 'log_softmax'), dtype)


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis', [((1,), -1), ((7,), 0), ((5, 1), -1), ((5, 1), 0),
                                        ((3, 300), -1), ((300, 3), 0), ((70, 130), 1),
                                        ((4, 100, 70), 1), ((300, 200), 0), ((300, 200), -1),
                                        ((2, 3, 67), 1), ((1, 1000), -1)])
def test_softmax_shapes(rng, op, dtype, shape, axis):
    """Both kernels (last axis / other axes), tails of the vector loops, the parallel split."""
    x = rng.uniform(-20, 20, size=shape).astype(dtype)
    out = getattr(nd, op)(nd.array(x, dtype=dtype), axis=axis)
    _check(out, _np_softmax(x, axis, log=op == 'log_softmax'), dtype)


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('shape,axis', [((0,), -1), ((2, 0, 3), 1), ((2, 0, 3), -1),
                                        ((0, 4), 1)])
def test_softmax_empty(op, shape, axis):
    out = getattr(nd, op)(nd.zeros(shape), axis=axis)
    assert out.shape == shape and out.dtype == np.float32


def test_softmax_one_element():
    assert nd.softmax(nd.array([3.5])).asnumpy().tolist() == [1.0]
    assert nd.log_softmax(nd.array([[3.5]]), axis=0).asnumpy().tolist() == [[0.0]]


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('temperature', [0.5, 2.0, 10.0, -1.5])
@pytest.mark.parametrize('axis', [-1, 0])
def test_softmax_temperature(rng, op, dtype, temperature, axis):
    x = rng.standard_normal((6, 9)).astype(dtype) * 4
    out = getattr(nd, op)(nd.array(x, dtype=dtype), axis=axis, temperature=temperature)
    _check(out, _np_softmax(x, axis, temperature, log=op == 'log_softmax'), dtype)


def test_softmax_temperature_none_is_one(rng):
    x = nd.array(rng.standard_normal((3, 5)))
    a = nd.softmax(x, temperature=None).asnumpy()
    np.testing.assert_array_equal(a, nd.softmax(x).asnumpy())
    np.testing.assert_allclose(nd.softmax(x, temperature=1.0).asnumpy(), a, rtol=1e-7)


@pytest.mark.parametrize('dtype', FLOATS)
def test_softmax_large_values_stable(dtype):
    x = np.array([[1000, 0, -1000], [1e30, 1e30, -1e30], [-1e4, -1e4 - 1, -1e4 - 2],
                  [88, 89, 90]], dtype=dtype)
    sm = nd.softmax(nd.array(x, dtype=dtype)).asnumpy()
    assert np.isfinite(sm).all()
    _check(nd.softmax(nd.array(x, dtype=dtype)), _np_softmax(x), dtype)
    ls = nd.log_softmax(nd.array(x, dtype=dtype))
    assert np.isfinite(ls.asnumpy()).all()
    _check(ls, _np_softmax(x, log=True), dtype)
    np.testing.assert_allclose(sm.sum(axis=-1), 1, rtol=1e-6)
    # Along axis 0 too (the other kernel).
    _check(nd.softmax(nd.array(x.T.copy(), dtype=dtype), axis=0), _np_softmax(x.T, 0), dtype)


def test_softmax_wide_range_accuracy(rng):
    """float32 exponentials are accurate over the whole range that matters (down to ~-104)."""
    x = np.concatenate([np.linspace(-110, 0, 5001), rng.uniform(-30, 0, 3000)]).astype('f4')
    x = x.reshape(1, -1)
    got = nd.softmax(nd.array(x)).asnumpy().astype(np.float64)
    ref = _np_softmax(x)
    big = ref > 1e-30
    np.testing.assert_allclose(got[big], ref[big], rtol=3e-6)
    assert np.all(np.abs(got[~big] - ref[~big]) < 1e-37)


def test_softmax_nan_propagates():
    out = nd.softmax(nd.array([[1, np.nan, 2], [1, 2, 3]])).asnumpy()
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('in_dtype,out_dtype', [('float32', 'float64'), ('float64', 'float32'),
                                                ('float32', 'float16'), ('float16', 'float32'),
                                                ('float16', 'float16'), ('float16', 'float64')])
@pytest.mark.parametrize('axis', [-1, 0])
def test_softmax_dtype_attr(rng, op, in_dtype, out_dtype, axis):
    x = rng.standard_normal((5, 40)).astype(in_dtype)
    out = getattr(nd, op)(nd.array(x, dtype=in_dtype), axis=axis, dtype=out_dtype)
    tol = max(TOL[in_dtype], TOL[out_dtype], 1e-6)
    assert out.dtype == np.dtype(out_dtype)
    ref = _np_softmax(x.astype(np.float64), axis, log=op == 'log_softmax')
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref, rtol=tol, atol=tol)


def test_softmax_positional_axis_and_infer():
    x = nd.array(np.arange(6).reshape(2, 3))
    np.testing.assert_allclose(nd.softmax(x, 0).asnumpy(), _np_softmax(x.asnumpy(), 0),
                               rtol=1e-6)
    op = mx._core.get_op('softmax')
    [(shape, flag)] = op._infer(x, dtype='float64')
    assert tuple(shape) == (2, 3) and flag == 1


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
def test_softmax_errors(op):
    f = getattr(nd, op)
    x = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match='axis'):
        f(x, axis=2)
    with pytest.raises(mx.MXNetError, match='axis'):
        f(x, axis=-3)
    with pytest.raises(mx.MXNetError, match='float'):
        f(nd.ones((2, 3), dtype='int32'))
    with pytest.raises(mx.MXNetError, match='dtype'):
        f(x, dtype='int32')
    with pytest.raises(mx.MXNetError, match='temperature'):
        f(x, temperature=0.0)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'foo'"):
        f(x, foo=1)
    if op == 'softmax':     # the length must have the data's shape without the axis
        with pytest.raises(mx.MXNetError, match='length'):
            f(x, nd.ones((3,)), use_length=True)
    else:                   # as in MXNet, only softmax takes a length
        with pytest.raises(mx.MXNetError, match='use_length'):
            f(x, use_length=True)


# ------------------------------------------------------------------------------------------------
# LeakyReLU

_erf = np.vectorize(math.erf, otypes=[np.float64])
# MXNet's SELU constants are floats: float64 SELU uses them rounded to float32.
SELU_L, SELU_A = float(np.float32(1.0507009873554805)), float(np.float32(1.6732632423543772))


def _np_lrelu(x, act, slope=0.25, lower=0.125, upper=0.334):
    x = x.astype(np.float64)
    if act == 'leaky':
        return np.where(x > 0, x, slope * x)
    if act == 'rrelu':
        return np.where(x > 0, x, (lower + upper) / 2 * x)
    if act == 'elu':
        return np.where(x > 0, x, slope * np.expm1(x))
    if act == 'selu':
        return SELU_L * np.where(x > 0, x, SELU_A * np.expm1(x))
    if act == 'gelu':
        return 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    raise ValueError(act)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('act', ['leaky', 'rrelu', 'elu', 'selu', 'gelu'])
@pytest.mark.parametrize('shape', [(0,), (1,), (7,), (3, 4), (2, 0, 3), (2, 3, 4, 5), (70000,)])
def test_lrelu_unary(rng, dtype, act, shape):
    x = rng.uniform(-4, 4, size=shape).astype(dtype)
    out = nd.LeakyReLU(nd.array(x, dtype=dtype), act_type=act)
    if act == 'rrelu':  # (output, slopes), as MXNet; outside training every slope is the mean
        out, mask = out
        np.testing.assert_allclose(mask.asnumpy(), np.full(shape, (0.125 + 0.334) / 2),
                                   rtol=1e-6)
    tol = 1e-5 if dtype == 'float32' else 1e-12
    assert out.shape == shape and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.asnumpy(), _np_lrelu(x, act), rtol=tol, atol=tol)


def test_lrelu_default_is_leaky_quarter():
    x = nd.array([-2.0, -0.5, 0.0, 3.0])
    assert nd.LeakyReLU(x).asnumpy().tolist() == [-0.5, -0.125, 0.0, 3.0]


@pytest.mark.parametrize('act,kw', [('leaky', {'slope': 0.1}), ('leaky', {'slope': 2.0}),
                                    ('elu', {'slope': 1.0}), ('elu', {'slope': 0.3}),
                                    ('rrelu', {'lower_bound': 0.2, 'upper_bound': 0.4})])
def test_lrelu_attrs(rng, act, kw):
    x = rng.uniform(-3, 3, size=(4, 6)).astype('float32')
    out = nd.LeakyReLU(nd.array(x), act_type=act, **kw)
    out = out[0] if act == 'rrelu' else out
    ref = _np_lrelu(x, act, slope=kw.get('slope', 0.25), lower=kw.get('lower_bound', 0.125),
                    upper=kw.get('upper_bound', 0.334))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6, atol=1e-6)


def test_lrelu_positional_act_type():
    x = nd.array([-1.0, 1.0])
    np.testing.assert_allclose(nd.LeakyReLU(x, 'leaky', 0.5).asnumpy(), [-0.5, 1.0])


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(2, 3, 4, 5), (4, 3), (2, 3, 1), (5,), (0, 3), (2, 3, 70, 70)])
def test_prelu(rng, dtype, shape):
    x = rng.uniform(-3, 3, size=shape).astype(dtype)
    c = shape[1] if len(shape) > 1 else shape[0]
    g = rng.uniform(0.05, 0.9, size=(c,)).astype(dtype)
    out = nd.LeakyReLU(nd.array(x, dtype=dtype), nd.array(g, dtype=dtype), act_type='prelu')
    gb = g.reshape((1, c) + (1,) * (len(shape) - 2)) if len(shape) > 1 else g
    np.testing.assert_allclose(out.asnumpy(), np.where(x > 0, x, gb * x), rtol=1e-6)


def test_prelu_scalar_gamma_and_keyword(rng):
    x = rng.uniform(-3, 3, size=(2, 3, 4)).astype('float32')
    out = nd.LeakyReLU(data=nd.array(x), gamma=nd.array([0.3]), act_type='prelu')
    np.testing.assert_allclose(out.asnumpy(), np.where(x > 0, x, 0.3 * x), rtol=1e-6)


def test_prelu_infer_fills_gamma():
    op = mx._core.get_op('LeakyReLU')
    [(shape, flag)] = op._infer(nd.ones((2, 7, 3)), nd.ones((7,)), act_type='prelu')
    assert tuple(shape) == (2, 7, 3) and flag == 0


def test_lrelu_float16(rng):
    x = rng.uniform(-3, 3, size=(3, 4)).astype('float16')
    out = nd.LeakyReLU(nd.array(x, dtype='float16'), act_type='elu')
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.asnumpy().astype('f8'), _np_lrelu(x, 'elu'), rtol=3e-3,
                               atol=3e-3)


def test_rrelu_training_random_slopes(rng):
    x = -np.abs(rng.standard_normal(20000)).astype('float32') - 0.1
    prev = mx._core.set_training(True)
    try:
        out, mask = nd.LeakyReLU(nd.array(x), act_type='rrelu', lower_bound=0.1, upper_bound=0.3)
    finally:
        mx._core.set_training(prev)
    slopes = out.asnumpy() / x
    np.testing.assert_allclose(mask.asnumpy(), slopes, rtol=1e-5)  # the slopes it drew
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6
    assert slopes.std() > 0.03  # really random, not the mean slope
    assert abs(slopes.mean() - 0.2) < 0.01
    # Positive inputs pass through unchanged.
    prev = mx._core.set_training(True)
    try:
        pos = nd.LeakyReLU(nd.array(np.abs(x)), act_type='rrelu')[0]
    finally:
        mx._core.set_training(prev)
    np.testing.assert_array_equal(pos.asnumpy(), np.abs(x))


def test_lrelu_errors():
    x = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match='expects 2 input'):
        nd.LeakyReLU(x, act_type='prelu')
    with pytest.raises(mx.MXNetError, match=r'gamma of shape \[4\]'):
        nd.LeakyReLU(x, nd.ones((4,)), act_type='prelu')
    with pytest.raises(mx.MXNetError, match='gamma dtype'):
        nd.LeakyReLU(x, nd.ones((3,), dtype='float64'), act_type='prelu')
    with pytest.raises(mx.MXNetError, match='float'):
        nd.LeakyReLU(nd.ones((2, 3), dtype='int32'))
    with pytest.raises(mx.MXNetError, match='valid values'):
        nd.LeakyReLU(x, act_type='swish')
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'alpha'"):
        nd.LeakyReLU(x, alpha=0.1)
    with pytest.raises(mx.MXNetError, match='lower_bound'):
        nd.LeakyReLU(x, act_type='rrelu', lower_bound=0.5, upper_bound=0.1)
