"""Normalisation ops (BatchNorm, LayerNorm, InstanceNorm, GroupNorm) against NumPy references in
float64, in training and inference mode, with MXNet 1.x's op defaults (BatchNorm eps=1e-3 and
fix_gamma=True, InstanceNorm eps=1e-3, GroupNorm gamma per group)."""
import contextlib

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['BatchNorm', 'LayerNorm', 'InstanceNorm', 'GroupNorm', '_contrib_SyncBatchNorm',
               '_backward__contrib_SyncBatchNorm']

FLOATS = ['float32', 'float64']
TOL = {'float32': dict(rtol=1e-4, atol=1e-5), 'float64': dict(rtol=1e-10, atol=1e-12)}


@contextlib.contextmanager
def training(flag=True):
    prev = mx._core.set_training(flag)
    try:
        yield
    finally:
        mx._core.set_training(prev)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _arr(a, dtype):
    return nd.array(np.asarray(a), dtype=dtype)


# ---------------------------------------------------------------------------------------------
# BatchNorm

def np_batchnorm(x, gamma, beta, mmean, mvar, eps=1e-3, fix_gamma=True, axis=1, train=False):
    x = x.astype(np.float64)
    ax = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != ax)
    bshape = [1] * x.ndim
    bshape[ax] = x.shape[ax]
    if train:
        mean, var = x.mean(axis=red), x.var(axis=red)  # biased variance
    else:
        mean, var = mmean.astype(np.float64), mvar.astype(np.float64)
    g = np.ones_like(mean) if fix_gamma else gamma.astype(np.float64)
    y = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + eps)
    return y * g.reshape(bshape) + beta.astype(np.float64).reshape(bshape)


BN_CASES = [((4, 3), 1), ((4, 3), -1), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), -1), ((2, 3, 4, 5), 2),
            ((1, 1), 1), ((1, 1, 1, 1), 1), ((0, 3), 1), ((2, 3, 0, 2), 1), ((5,), 0)]


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis', BN_CASES)
@pytest.mark.parametrize('train', [False, True])
@pytest.mark.parametrize('fix_gamma', [True, False])
def test_batchnorm(rng, dtype, shape, axis, train, fix_gamma):
    C = shape[axis]
    x = rng.normal(1.5, 2.0, size=shape).astype(dtype)
    gamma = rng.uniform(0.5, 2, size=C).astype(dtype)
    beta = rng.normal(size=C).astype(dtype)
    mmean = rng.normal(size=C).astype(dtype)
    mvar = rng.uniform(0.5, 2, size=C).astype(dtype)
    args = [_arr(v, dtype) for v in (x, gamma, beta, mmean, mvar)]
    with training(train):
        y = nd.BatchNorm(*args, fix_gamma=fix_gamma, axis=axis, eps=1e-3)
    assert y.shape == shape and y.dtype == np.dtype(dtype)
    if 0 in shape and train:
        return  # batch statistics of an empty batch are undefined
    ref = np_batchnorm(x, gamma, beta, mmean, mvar, 1e-3, fix_gamma, axis, train)
    np.testing.assert_allclose(y.asnumpy(), ref, **TOL[dtype])
    # Forward never updates the moving statistics (MXNet's CPU kernel does it in backward).
    np.testing.assert_array_equal(args[3].asnumpy(), mmean)
    np.testing.assert_array_equal(args[4].asnumpy(), mvar)


def test_batchnorm_defaults_and_global_stats(rng):
    x = rng.normal(size=(6, 4)).astype('float32')
    gamma = rng.uniform(0.5, 2, size=4).astype('float32')
    beta = rng.normal(size=4).astype('float32')
    mm, mv = np.zeros(4, 'float32'), np.ones(4, 'float32')
    args = [nd.array(v) for v in (x, gamma, beta, mm, mv)]
    # defaults: eps=1e-3, fix_gamma=True, inference uses the moving stats
    y = nd.BatchNorm(*args)
    np.testing.assert_allclose(y.asnumpy(), np_batchnorm(x, gamma, beta, mm, mv), rtol=1e-5,
                               atol=1e-6)
    with training():
        y = nd.BatchNorm(*args, fix_gamma=False, use_global_stats=True)
        y2 = nd.BatchNorm(*args, fix_gamma=False, eps=1e-5, momentum=0.5, cudnn_off=True,
                          output_mean_var=True)
    np.testing.assert_allclose(y.asnumpy(), np_batchnorm(x, gamma, beta, mm, mv,
                                                         fix_gamma=False), rtol=1e-5, atol=1e-6)
    # output_mean_var: (output, batch mean, inverse std 1 / sqrt(var + eps)), as MXNet
    assert isinstance(y2, list) and len(y2) == 3
    np.testing.assert_allclose(y2[0].asnumpy(), np_batchnorm(x, gamma, beta, mm, mv, eps=1e-5,
                                                             fix_gamma=False, train=True),
                               rtol=1e-4, atol=1e-5)
    axes = tuple(d for d in range(x.ndim) if d != 1)
    np.testing.assert_allclose(y2[1].asnumpy(), x.mean(axis=axes), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y2[2].asnumpy(), 1 / np.sqrt(x.var(axis=axes) + 1e-5), rtol=1e-4)
    assert isinstance(nd.BatchNorm(*args), nd.NDArray)  # one visible output by default


@pytest.mark.parametrize('op', ['LayerNorm', 'GroupNorm'])
def test_norm_output_mean_var_gives_mean_and_std(op, rng):
    x = rng.normal(size=(2, 4, 3)).astype('float32')
    if op == 'LayerNorm':
        out = nd.LayerNorm(nd.array(x), nd.ones((3,)), nd.zeros((3,)), output_mean_var=True)
        rows, shape = x, (2, 4, 1)
    else:
        out = nd.GroupNorm(nd.array(x), nd.ones((2,)), nd.zeros((2,)), num_groups=2,
                           output_mean_var=True)
        rows, shape = x.reshape(2, 2, -1), (2, 2)
    assert len(out) == 3 and out[1].shape == shape and out[2].shape == shape
    np.testing.assert_allclose(out[1].asnumpy().ravel(), rows.mean(axis=-1).ravel(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(out[2].asnumpy().ravel(),
                               np.sqrt(rows.var(axis=-1) + 1e-5).ravel(), rtol=1e-4)
    sym = getattr(mx.sym, op)(mx.sym.var('x'), output_mean_var=True, name='n',
                              **({} if op == 'LayerNorm' else {'num_groups': 2}))
    assert sym.list_outputs() == ['n_output', 'n_mean', 'n_std']


def test_batchnorm_statistics_outputs_stop_folding():
    # A hybridized Conv + BatchNorm whose statistics are read is not folded (folding computes
    # no statistics); the same pair without them is.
    class Net(mx.gluon.HybridBlock):
        def __init__(self, stats, **kw):
            super().__init__(**kw)
            self.stats = stats
            with self.name_scope():
                self.conv = mx.gluon.nn.Conv2D(4, 3, in_channels=2)
                self.bn = mx.gluon.nn.BatchNorm(in_channels=4)

        def hybrid_forward(self, F, x):
            y = self.conv(x)
            if not self.stats:
                return self.bn(y)
            p = self.bn.params
            out = F.BatchNorm(y, *[p.get(n).var() if F is mx.sym else p.get(n).data()
                                   for n in ('gamma', 'beta', 'running_mean', 'running_var')],
                              output_mean_var=True, fix_gamma=False)
            return out[0], out[1], out[2]
    x = nd.random.uniform(shape=(2, 2, 6, 6))
    for stats in (False, True):
        net = Net(stats)
        net.initialize()
        ref = net(x)
        net.hybridize()
        got = net(x)
        ref, got = (ref, got) if stats else ((ref,), (got,))
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
        assert net._cached_op.stats()['folded_batchnorm'] == (0 if stats else 1)


def test_batchnorm_infer_fills_params():
    op = mx._core.get_op('BatchNorm')
    x = nd.zeros((2, 3, 4))
    p = nd.zeros((3,))
    res = op._infer(x, p, p, p, p)
    assert [s for s, _ in res] == [(2, 3, 4), (3,), (3,)]
    res = op._infer(x, nd.zeros((4,)), nd.zeros((4,)), nd.zeros((4,)), nd.zeros((4,)), axis=-1)
    assert [s for s, _ in res] == [(2, 3, 4), (4,), (4,)]


def test_batchnorm_errors():
    x = nd.zeros((2, 3, 4))
    p = nd.zeros((3,))
    with pytest.raises(mx.MXNetError, match=r'BatchNorm: axis 3 is out of range.*\[2,3,4\]'):
        nd.BatchNorm(x, p, p, p, p, axis=3)
    with pytest.raises(mx.MXNetError, match='axis -4 is out of range'):
        nd.BatchNorm(x, p, p, p, p, axis=-4)
    with pytest.raises(mx.MXNetError, match=r'gamma shape \[4\].*expected \[3\]'):
        nd.BatchNorm(x, nd.zeros((4,)), p, p, p)
    with pytest.raises(mx.MXNetError, match=r'moving_var shape \[3,1\]'):
        nd.BatchNorm(x, p, p, p, nd.zeros((3, 1)))
    with pytest.raises(mx.MXNetError, match='float32 or float64'):
        nd.BatchNorm(*[nd.zeros(s, dtype='int32') for s in ((2, 3), (3,), (3,), (3,), (3,))])
    with pytest.raises(mx.MXNetError, match='dtype float64 does not match data dtype float32'):
        nd.BatchNorm(x, nd.zeros((3,), dtype='float64'), p, p, p)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'foo'"):
        nd.BatchNorm(x, p, p, p, p, foo=1)
    with pytest.raises(mx.MXNetError, match='eps must be non-negative'):
        nd.BatchNorm(x, p, p, p, p, eps=-1.0)


# ---------------------------------------------------------------------------------------------
# LayerNorm

def np_layernorm(x, gamma, beta, axis=-1, eps=1e-5):
    x = x.astype(np.float64)
    ax = axis % x.ndim
    bshape = [1] * x.ndim
    bshape[ax] = x.shape[ax]
    mean = x.mean(axis=ax, keepdims=True)
    std = np.sqrt(x.var(axis=ax, keepdims=True) + eps)
    y = (x - mean) / std * gamma.astype(np.float64).reshape(bshape)
    return y + beta.astype(np.float64).reshape(bshape), mean, std


LN_CASES = [((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4, 5), 0),
            ((1,), 0), ((1, 1), -1), ((0, 4), -1), ((3, 0), 0), ((7,), -1)]


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis', LN_CASES)
def test_layernorm(rng, dtype, shape, axis):
    R = shape[axis]
    x = rng.normal(2.0, 3.0, size=shape).astype(dtype)
    gamma = rng.uniform(0.5, 2, size=R).astype(dtype)
    beta = rng.normal(size=R).astype(dtype)
    y = nd.LayerNorm(_arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype), axis=axis)
    assert y.shape == shape and y.dtype == np.dtype(dtype)
    ref, _, _ = np_layernorm(x, gamma, beta, axis)
    np.testing.assert_allclose(y.asnumpy(), ref, **TOL[dtype])
    with training():  # no mode dependence
        y2 = nd.LayerNorm(_arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype), axis=axis)
    np.testing.assert_array_equal(y2.asnumpy(), y.asnumpy())


def test_layernorm_eps_and_shapes(rng):
    x = rng.normal(size=(4, 6)).astype('float32')
    g, b = np.ones(6, 'float32'), np.zeros(6, 'float32')
    y = nd.LayerNorm(nd.array(x), nd.array(g), nd.array(b), eps=0.5)
    np.testing.assert_allclose(y.asnumpy(), np_layernorm(x, g, b, eps=0.5)[0], rtol=1e-5,
                               atol=1e-6)
    op = mx._core.get_op('LayerNorm')
    res = op._infer(nd.zeros((2, 3, 4)), nd.zeros((3,)), nd.zeros((3,)), axis=1)
    assert [s for s, _ in res] == [(2, 3, 4), (2, 1, 4), (2, 1, 4)]


def test_layernorm_errors():
    x = nd.zeros((2, 3))
    with pytest.raises(mx.MXNetError, match=r'LayerNorm: axis 2 is out of range.*\[2,3\]'):
        nd.LayerNorm(x, nd.zeros((3,)), nd.zeros((3,)), axis=2)
    with pytest.raises(mx.MXNetError, match=r'gamma shape \[2\].*expected \[3\]'):
        nd.LayerNorm(x, nd.zeros((2,)), nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match=r'beta shape \[4\]'):
        nd.LayerNorm(x, nd.zeros((3,)), nd.zeros((4,)))
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'epsilon'"):
        nd.LayerNorm(x, nd.zeros((3,)), nd.zeros((3,)), epsilon=1e-5)
    with pytest.raises(mx.MXNetError, match='float32 or float64'):
        nd.LayerNorm(nd.zeros((2, 3), dtype='int64'), nd.zeros((3,), dtype='int64'),
                     nd.zeros((3,), dtype='int64'))


# ---------------------------------------------------------------------------------------------
# InstanceNorm

def np_instancenorm(x, gamma, beta, eps=1e-3):
    x = x.astype(np.float64)
    red = tuple(range(2, x.ndim))
    bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=red, keepdims=True)
    var = x.var(axis=red, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    return y * gamma.astype(np.float64).reshape(bshape) + beta.astype(np.float64).reshape(bshape)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(2, 3, 5), (2, 3, 4, 5), (1, 1, 1), (1, 2, 3, 2, 2),
                                   (0, 3, 4), (2, 4, 1)])
def test_instancenorm(rng, dtype, shape):
    C = shape[1]
    x = rng.normal(1.0, 2.0, size=shape).astype(dtype)
    gamma = rng.uniform(0.5, 2, size=C).astype(dtype)
    beta = rng.normal(size=C).astype(dtype)
    y = nd.InstanceNorm(_arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype))
    assert y.shape == shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), np_instancenorm(x, gamma, beta), **TOL[dtype])
    y = nd.InstanceNorm(_arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype), eps=0.1)
    np.testing.assert_allclose(y.asnumpy(), np_instancenorm(x, gamma, beta, 0.1), **TOL[dtype])


def test_instancenorm_shapes_and_errors():
    op = mx._core.get_op('InstanceNorm')
    res = op._infer(nd.zeros((2, 3, 4, 5)), nd.zeros((3,)), nd.zeros((3,)))
    assert [s for s, _ in res] == [(2, 3, 4, 5), (2, 3), (2, 3)]
    with pytest.raises(mx.MXNetError, match=r'InstanceNorm: data must have at least 2 dims.*\[4\]'):
        nd.InstanceNorm(nd.zeros((4,)), nd.zeros((4,)), nd.zeros((4,)))
    with pytest.raises(mx.MXNetError, match=r'gamma shape \[2\].*expected \[3\]'):
        nd.InstanceNorm(nd.zeros((2, 3, 4)), nd.zeros((2,)), nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'axis'"):
        nd.InstanceNorm(nd.zeros((2, 3, 4)), nd.zeros((3,)), nd.zeros((3,)), axis=1)


# ---------------------------------------------------------------------------------------------
# GroupNorm

def np_groupnorm(x, gamma, beta, G, eps=1e-5):
    x = x.astype(np.float64)
    if x.size == 0:
        return x.copy()
    N, C = x.shape[:2]
    xg = x.reshape((N, G, C // G * int(np.prod(x.shape[2:]))))
    mean = xg.mean(axis=2, keepdims=True)
    std = np.sqrt(xg.var(axis=2, keepdims=True) + eps)
    y = (xg - mean) / std
    y = y * gamma.astype(np.float64).reshape(1, G, 1) + beta.astype(np.float64).reshape(1, G, 1)
    return y.reshape(x.shape)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,G', [((2, 4, 5), 1), ((2, 4, 5), 2), ((2, 6, 3, 3), 3),
                                     ((3, 4, 2, 2), 4), ((1, 1, 1), 1), ((0, 4, 3), 2),
                                     ((2, 4, 0), 2)])
def test_groupnorm(rng, dtype, shape, G):
    x = rng.normal(1.0, 2.0, size=shape).astype(dtype)
    gamma = rng.uniform(0.5, 2, size=G).astype(dtype)
    beta = rng.normal(size=G).astype(dtype)
    y = nd.GroupNorm(_arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype), num_groups=G)
    assert y.shape == shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), np_groupnorm(x, gamma, beta, G), **TOL[dtype])


def test_groupnorm_shapes_and_errors():
    op = mx._core.get_op('GroupNorm')
    res = op._infer(nd.zeros((2, 6, 4, 5)), nd.zeros((3,)), nd.zeros((3,)), num_groups=3)
    assert [s for s, _ in res] == [(2, 6, 4, 5), (2, 3), (2, 3)]
    x = nd.zeros((2, 6, 4))
    with pytest.raises(mx.MXNetError, match=r'channels \(6.*divisible by num_groups=4'):
        nd.GroupNorm(x, nd.zeros((4,)), nd.zeros((4,)), num_groups=4)
    with pytest.raises(mx.MXNetError, match=r'gamma shape \[6\] does not match num_groups=2'):
        nd.GroupNorm(x, nd.zeros((6,)), nd.zeros((2,)), num_groups=2)
    with pytest.raises(mx.MXNetError, match='num_groups must be positive'):
        nd.GroupNorm(x, nd.zeros((1,)), nd.zeros((1,)), num_groups=0)
    with pytest.raises(mx.MXNetError, match=r'at least 3 dims.*\[2,6\]'):
        nd.GroupNorm(nd.zeros((2, 6)), nd.zeros((1,)), nd.zeros((1,)))
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'groups'"):
        nd.GroupNorm(x, nd.zeros((1,)), nd.zeros((1,)), groups=1)


# ---------------------------------------------------------------------------------------------
# Larger shapes: the chunked (channel-last) BatchNorm statistics, the blocked LayerNorm path
# (inner extent > 1, several blocks and a partial one) and the multi-threaded paths.

@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis', [((20000, 4), -1), ((3000, 7, 3), 1), ((4, 16, 40, 40), 1),
                                        ((9000, 5, 2), -1), ((2, 3, 80, 81), 1),
                                        ((3, 4, 7, 7), 1)])
def test_batchnorm_large_training(rng, dtype, shape, axis):
    C = shape[axis]
    x = (rng.normal(size=shape) * 3 + 100).astype(dtype)  # a large mean: needs the two-pass var
    gamma = rng.uniform(0.5, 2, size=C).astype(dtype)
    beta = rng.normal(size=C).astype(dtype)
    mm, mv = np.zeros(C, dtype), np.ones(C, dtype)
    args = [_arr(v, dtype) for v in (x, gamma, beta, mm, mv)]
    with training():
        y = nd.BatchNorm(*args, axis=axis, fix_gamma=False)
    ref = np_batchnorm(x, gamma, beta, mm, mv, 1e-3, False, axis, True)
    np.testing.assert_allclose(y.asnumpy(), ref, **TOL[dtype])


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis', [((3, 5, 300), 1), ((700, 6), 0), ((2, 9, 257, 2), 1),
                                        ((64, 2048), -1)])
def test_layernorm_large(rng, dtype, shape, axis):
    R = shape[axis]
    x = (rng.normal(size=shape) * 2 + 50).astype(dtype)
    gamma = rng.uniform(0.5, 2, size=R).astype(dtype)
    beta = rng.normal(size=R).astype(dtype)
    y = nd.LayerNorm(_arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype), axis=axis)
    ref, _, _ = np_layernorm(x, gamma, beta, axis)
    np.testing.assert_allclose(y.asnumpy(), ref, **TOL[dtype])


def test_batchnorm_zero_variance_eps0_gives_beta():
    # MXNet's CPU kernel: batch statistics with zero variance and eps=0 use an inverse std of 0
    x = nd.ones((4, 2)) * 3
    beta = nd.array([0.5, -1.0])
    args = [x, nd.ones((2,)), beta, nd.zeros((2,)), nd.ones((2,))]
    with training():
        y = nd.BatchNorm(*args, eps=0.0, fix_gamma=False)
    np.testing.assert_array_equal(y.asnumpy(), np.tile([0.5, -1.0], (4, 1)))


# ---------------------------------------------------------------------------------------------
# float16 LayerNorm / GroupNorm (MXNet's CPU build takes them; computed here in float32)

def _np_rows_grad(x, dy, gamma_rows, eps):
    """dx of (x - mean) / std * gamma per row of x (rows: last axis), float64."""
    m = x.mean(-1, keepdims=True)
    sd = np.sqrt(x.var(-1, keepdims=True) + eps)
    xh = (x - m) / sd
    g = dy * gamma_rows
    return (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True)) / sd, xh


@pytest.mark.parametrize('shape,G', [((2, 4, 5), 2), ((3, 6, 2, 2), 3), ((1, 1, 1), 1),
                                     ((0, 4, 3), 2)])
def test_groupnorm_float16_forward_and_grad(rng, shape, G):
    x = rng.uniform(0.2, 1.0, size=shape).astype('float16')
    gamma = rng.uniform(0.5, 1.5, size=G).astype('float16')
    beta = rng.normal(size=G).astype('float16')
    dy = rng.uniform(-1, 1, size=shape).astype('float16')
    xs = [nd.array(v, dtype='float16') for v in (x, gamma, beta)]
    for v in xs:
        v.attach_grad()
    with mx.autograd.record():
        y = nd.GroupNorm(*xs, num_groups=G, eps=1e-2)
    y.backward(nd.array(dy, dtype='float16'))
    assert y.dtype == np.float16 and xs[0].grad.dtype == np.float16
    ref = np_groupnorm(x, gamma, beta, G, eps=1e-2)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-2, atol=5e-3)
    if x.size == 0:
        return
    N = shape[0]
    x64, dy64 = x.astype(np.float64).reshape(N, G, -1), dy.astype(np.float64).reshape(N, G, -1)
    g64 = gamma.astype(np.float64).reshape(1, G, 1)
    dx, xh = _np_rows_grad(x64, dy64, g64, 1e-2)
    np.testing.assert_allclose(xs[0].grad.asnumpy(), dx.reshape(shape), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(xs[1].grad.asnumpy(), (dy64 * xh).sum(axis=(0, 2)), rtol=2e-2,
                               atol=2e-2)
    np.testing.assert_allclose(xs[2].grad.asnumpy(), dy64.sum(axis=(0, 2)), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize('shape', [(2, 3, 8), (5, 4), (1, 1)])
def test_layernorm_float16_forward_and_grad(rng, shape):
    x = rng.normal(size=shape).astype('float16')
    gamma = rng.uniform(0.5, 1.5, size=shape[-1]).astype('float16')
    beta = rng.normal(size=shape[-1]).astype('float16')
    dy = rng.uniform(-1, 1, size=shape).astype('float16')
    xs = [nd.array(v, dtype='float16') for v in (x, gamma, beta)]
    for v in xs:
        v.attach_grad()
    with mx.autograd.record():
        y = nd.LayerNorm(*xs, eps=1e-3)
    y.backward(nd.array(dy, dtype='float16'))
    x64 = x.astype(np.float64)
    dx, xh = _np_rows_grad(x64, dy.astype(np.float64), gamma.astype(np.float64), 1e-3)
    ref = xh * gamma.astype(np.float64) + beta.astype(np.float64)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(xs[0].grad.asnumpy(), dx, rtol=2e-2, atol=3e-2)
    red = tuple(range(len(shape) - 1))
    np.testing.assert_allclose(xs[1].grad.asnumpy(), (dy.astype(np.float64) * xh).sum(axis=red),
                               rtol=2e-2, atol=3e-2)


def test_instancenorm_refuses_float16():
    with pytest.raises(mx.MXNetError, match='float32 or float64'):
        nd.InstanceNorm(nd.zeros((1, 2, 3), dtype='float16'), nd.ones((2,), dtype='float16'),
                        nd.zeros((2,), dtype='float16'))


# ---------------------------------------------------------------------------------------------
# SyncBatchNorm (contrib): BatchNorm over axis 1 on one device; its third output is the variance

@pytest.mark.parametrize('shape', [(4, 3, 4), (4, 2), (2, 3, 2, 2), (1, 1, 1)])
@pytest.mark.parametrize('fix_gamma', [False, True])
@pytest.mark.parametrize('dtype', FLOATS)
def test_sync_batchnorm_training_step(rng, shape, fix_gamma, dtype):
    C = shape[1]
    x = rng.uniform(size=shape).astype(dtype)
    gamma, beta = rng.uniform(0.5, 1.5, C).astype(dtype), rng.normal(size=C).astype(dtype)
    dy = rng.normal(size=shape).astype(dtype)
    xa, ga, ba = _arr(x, dtype), _arr(gamma, dtype), _arr(beta, dtype)
    mm, mv = nd.zeros(C, dtype=dtype), nd.ones(C, dtype=dtype)
    for v in (xa, ga, ba):
        v.attach_grad()
    eps, mom = 1e-5, 0.9
    with mx.autograd.record():
        y, mean, var = nd.contrib.SyncBatchNorm(xa, ga, ba, mm, mv, key='sbn%s' % (shape,),
                                                eps=eps, momentum=mom, fix_gamma=fix_gamma,
                                                output_mean_var=True)
    y.backward(_arr(dy, dtype))
    axes = tuple(d for d in range(len(shape)) if d != 1)
    bshape = [1] * len(shape)
    bshape[1] = C
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    m, v = x64.mean(axis=axes), x64.var(axis=axes)
    g = np.ones(C) if fix_gamma else gamma.astype(np.float64)
    xh = (x64 - m.reshape(bshape)) / np.sqrt(v + eps).reshape(bshape)
    tol = TOL[dtype] if dtype == 'float64' else dict(rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(y.asnumpy(), xh * g.reshape(bshape) + beta.reshape(bshape), **tol)
    np.testing.assert_allclose(mean.asnumpy(), m, **tol)
    np.testing.assert_allclose(var.asnumpy(), v, **tol)
    n = x.size // C
    gy = dy64 * g.reshape(bshape)
    dx = (gy - gy.mean(axis=axes, keepdims=True)
          - xh * (gy * xh).mean(axis=axes, keepdims=True)) / np.sqrt(v + eps).reshape(bshape)
    if n > 1:
        np.testing.assert_allclose(xa.grad.asnumpy(), dx, **tol)
    np.testing.assert_allclose(ba.grad.asnumpy(), dy64.sum(axis=axes), **tol)
    want_dg = np.zeros(C) if fix_gamma else (dy64 * xh).sum(axis=axes)
    np.testing.assert_allclose(ga.grad.asnumpy(), want_dg, **tol)
    # the training step updated the moving statistics once, with the biased variance
    np.testing.assert_allclose(mm.asnumpy(), (1 - mom) * m, **tol)
    np.testing.assert_allclose(mv.asnumpy(), mom + (1 - mom) * v, **tol)


def test_sync_batchnorm_predict_and_errors(rng):
    x = rng.normal(size=(2, 3, 4)).astype('float32')
    mm, mv = rng.normal(size=3).astype('float32'), rng.uniform(0.5, 2, 3).astype('float32')
    y = nd.contrib.SyncBatchNorm(_arr(x, 'float32'), nd.ones(3), nd.zeros(3), _arr(mm, 'float32'),
                                 _arr(mv, 'float32'), key='p')
    ref = (x - mm.reshape(1, 3, 1)) / np.sqrt(mv.reshape(1, 3, 1) + 1e-3)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    x, mm, mv = _arr(x, 'float32'), _arr(mm, 'float32'), _arr(mv, 'float32')
    with pytest.raises(mx.MXNetError, match='key'):
        nd.contrib.SyncBatchNorm(x, nd.ones(3), nd.zeros(3), mm, mv)
    # keys are layer names (MXNet's test_batchnorm passes str(op) + shape): long text is fine
    long_key = '<function SyncBatchNorm at 0x7f00deadbeef>(4, 5, 6, 4, 5)' * 3
    y2 = nd.contrib.SyncBatchNorm(x, nd.ones(3), nd.zeros(3), mm, mv, key=long_key)
    np.testing.assert_allclose(y2.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.MXNetError, match='key'):
        nd.contrib.SyncBatchNorm(x, nd.ones(3), nd.zeros(3), mm, mv, key='k' * 300)
    with pytest.raises(mx.MXNetError, match='ndev=2'):
        nd.contrib.SyncBatchNorm(x, nd.ones(3), nd.zeros(3), mm, mv, key='q',
                                 ndev=2)
    with pytest.raises(mx.MXNetError, match='gamma'):
        nd.contrib.SyncBatchNorm(x, nd.ones(2), nd.zeros(3), mm, mv, key='r')
