"""Gradient rules of the neural-network families (csrc/ops/nn_basic.c, nn_train.c, norm.c):
softmax / log_softmax, every LeakyReLU act_type, Dropout, L2Normalization, log_sigmoid, BatchNorm,
LayerNorm, InstanceNorm and GroupNorm. Deterministic rules are checked against float64 finite
differences; the random ones (Dropout and rrelu while training) against their hidden mask output
from the same run. Also BatchNorm's update of moving_mean / moving_var in a training step (by its
backward, as MXNet's CPU kernel), and the _backward_* ops the rules emit, forward-tested against
NumPy in every float dtype they support."""
import contextlib

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core
from gradcheck import check_grad

nd = mx.nd

GRADS_COVERED = ['softmax', 'log_softmax', 'LeakyReLU', 'Dropout', 'L2Normalization',
                 'log_sigmoid', 'BatchNorm', 'LayerNorm', 'InstanceNorm', 'GroupNorm']
OPS_COVERED = ['_backward_softmax', '_backward_log_softmax', '_backward_LeakyReLU',
               '_backward_L2Normalization', '_backward_log_sigmoid', '_backward_BatchNorm',
               '_backward_LayerNorm', '_backward_InstanceNorm', '_backward_GroupNorm']

FLOATS = ['float32', 'float64', 'float16']
TOL = {'float64': (1e-10, 1e-12), 'float32': (2e-4, 1e-5), 'float16': (3e-2, 3e-2)}


@contextlib.contextmanager
def training(flag=True):
    prev = _core.set_training(flag)
    try:
        yield
    finally:
        _core.set_training(prev)


def _nonzero(rng, shape, lo=0.1, hi=2.0):
    """Magnitudes in [lo, hi) with random signs: away from the kink at 0."""
    return rng.uniform(lo, hi, size=shape) * rng.choice([-1, 1], size=shape)


def _arr(x, dtype=None):
    return nd.array(x, dtype=dtype or x.dtype)


def _grad_run(y, wrt, feed, hidden=()):
    """Runs y's gradient graph once (with the training flag as set) and returns the gradients
    of `wrt` followed by the hidden outputs (node position, output index) of the same run."""
    g = y._gradient(wrt, ['head_grad'])
    heads = [_core.symbol_internal(y, n, k) for n, k in hidden]
    grp = mx.sym.Group(list(g) + heads) if heads else g
    inputs = grp.list_inputs()
    out = _core.CachedOp(grp, inputs)(*[feed[n] for n in inputs])
    out = out if isinstance(out, (list, tuple)) else [out]
    return [o.asnumpy() for o in out]


# ------------------------------------------------------------------------------------------------
# softmax / log_softmax

SOFTMAX_CASES = [((1,), -1), ((1, 1), 0), ((4,), 0), ((3, 5), -1), ((3, 5), 0), ((1, 6), 1),
                 ((2, 3, 4), 1), ((2, 3, 4), 0), ((2, 70, 3), -1), ((3, 2, 70), 1)]


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('shape,axis', SOFTMAX_CASES)
@pytest.mark.parametrize('temperature', [None, 2.0, -0.5])
def test_softmax_grad(rng, op, shape, axis, temperature):
    attrs = {'axis': axis}
    if temperature is not None:
        attrs['temperature'] = temperature
    check_grad(op, [rng.standard_normal(shape) * 2], attrs)


def _softmax_np(x, axis, t):
    z = x / t
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_bwd_np(dy, y, axis, t, log):
    if log:
        return (dy - np.exp(y) * dy.sum(axis=axis, keepdims=True)) / t
    return y * (dy - (dy * y).sum(axis=axis, keepdims=True)) / t


@pytest.mark.parametrize('log', [False, True])
@pytest.mark.parametrize('shape,axis', [((3, 600), -1), ((2, 5, 130), 1), ((70, 2), 0),
                                        ((4, 7), 1), ((0, 3), 1)])
@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_softmax_op(rng, log, shape, axis, dtype):
    """The backward kernels (row tiles past SM_TILE, column blocks past SM_COLS) vs NumPy."""
    x = rng.standard_normal(shape)
    y = _softmax_np(x, axis, 1.5)
    if log:
        y = np.log(y)
    y = y.astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    name = '_backward_log_softmax' if log else '_backward_softmax'
    out = getattr(nd, name)(_arr(dy), _arr(y), axis=axis, temperature=1.5)
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    want = _softmax_bwd_np(dy.astype('f8'), y.astype('f8'), axis, 1.5, log)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(out.asnumpy().astype('f8'), want, rtol=rtol, atol=atol * 10)


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('din,dout', [('float64', 'float32'), ('float32', 'float64'),
                                      ('float16', 'float32'), ('float32', 'float16')])
def test_softmax_dtype_attr_grad_has_data_dtype(rng, op, din, dout):
    """With dtype= the head gradient has the output's dtype and the data gradient the data's."""
    shape, axis = (3, 7), -1
    x = rng.standard_normal(shape).astype(din)
    dy = rng.standard_normal(shape).astype(dout)
    y = getattr(mx.sym, op)(mx.sym.var('x'), axis=axis, dtype=dout)
    (dx,) = _grad_run(y, ['x'], {'x': _arr(x), 'head_grad': _arr(dy)})
    assert dx.dtype == np.dtype(din) and dx.shape == shape
    ys = _softmax_np(x.astype('f8'), axis, 1.0)
    yv = np.log(ys) if op == 'log_softmax' else ys
    want = _softmax_bwd_np(dy.astype('f8'), yv, axis, 1.0, op == 'log_softmax')
    tol = 3e-2 if 'float16' in (din, dout) else 2e-5
    np.testing.assert_allclose(dx.astype('f8'), want, rtol=tol, atol=tol)


def test_backward_softmax_errors():
    with pytest.raises(mx.MXNetError, match='ograd dtype'):
        nd._backward_softmax(nd.ones((2, 3), dtype='float64'), nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='shape'):
        nd._backward_softmax(nd.ones((2, 3)), nd.ones((3, 2)))
    with pytest.raises(mx.MXNetError, match='axis'):
        nd._backward_log_softmax(nd.ones((2, 3)), nd.ones((2, 3)), axis=2)


def test_second_order_through_a_backward_op_is_an_error():
    x = mx.sym.var('x')
    g = mx.sym.softmax(x)._gradient(['x'])
    with pytest.raises(mx.MXNetError, match='_backward_softmax has no gradient'):
        g._gradient(['x'])


# ------------------------------------------------------------------------------------------------
# LeakyReLU

ACT_SHAPES = [(1,), (5,), (1, 3), (2, 3), (1, 3, 4), (2, 3, 4, 2)]


@pytest.mark.parametrize('act,attrs', [('leaky', {}), ('leaky', {'slope': 0.1}),
                                       ('elu', {}), ('elu', {'slope': 0.7}), ('selu', {}),
                                       ('gelu', {}), ('rrelu', {}),
                                       ('rrelu', {'lower_bound': 0.2, 'upper_bound': 0.5})])
@pytest.mark.parametrize('shape', ACT_SHAPES)
def test_leaky_relu_grad(rng, act, attrs, shape):
    """rrelu outside training uses the mean slope, a deterministic function."""
    check_grad('LeakyReLU', [_nonzero(rng, shape)], dict(attrs, act_type=act))


@pytest.mark.parametrize('dshape,gshape', [((2, 3, 4), (3,)), ((1, 3), (3,)), ((4,), (4,)),
                                           ((2, 3, 4), (1,)), ((2, 3), (2, 3)),
                                           ((2, 3, 2, 2), (3,)), ((3, 2, 5), (3, 1)),
                                           ((1, 1, 3), (1,))])
def test_prelu_grad_data_and_gamma(rng, dshape, gshape):
    check_grad('LeakyReLU', [_nonzero(rng, dshape), rng.uniform(0.1, 0.6, gshape)],
               {'act_type': 'prelu'})


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('act', ['leaky', 'elu', 'selu', 'gelu', 'prelu', 'rrelu'])
def test_backward_leaky_relu_op(rng, dtype, act):
    """_backward_LeakyReLU vs NumPy derivatives in every float dtype (large enough to thread)."""
    shape = (3, 4, 3000)
    x = _nonzero(rng, shape, 0.05, 3).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    xf, dyf = x.astype('f8'), dy.astype('f8')
    # MXNet's constants are floats, also in float64
    lam, alpha = float(np.float32(1.0507009873554805)), float(np.float32(1.6732632423543772))
    extra, kw = [], {'act_type': act}
    if act == 'leaky':
        kw['slope'] = 0.3
        d = np.where(xf > 0, 1, 0.3)
    elif act == 'elu':
        d = np.where(xf > 0, 1, 0.25 * np.exp(xf))
    elif act == 'selu':
        d = lam * np.where(xf > 0, 1, alpha * np.exp(xf))
    elif act == 'gelu':
        from math import erf
        d = 0.5 * (1 + np.vectorize(erf)(xf / np.sqrt(2))) + xf * np.exp(-xf ** 2 / 2) / np.sqrt(
            2 * np.pi)
    elif act == 'prelu':
        gamma = rng.uniform(0.1, 0.5, 4).astype(dtype)
        extra = [_arr(gamma)]
        d = np.where(xf > 0, 1, gamma.astype('f8')[None, :, None])
    else:
        mask = rng.uniform(0.1, 0.3, shape).astype(dtype)
        extra = [_arr(mask)]
        d = np.where(xf > 0, 1, mask.astype('f8'))
    out = nd._backward_LeakyReLU(_arr(dy), _arr(x), *extra, **kw)
    outs = out if isinstance(out, (list, tuple)) else [out]
    rtol, atol = TOL[dtype]
    assert outs[0].dtype == np.dtype(dtype)
    np.testing.assert_allclose(outs[0].asnumpy().astype('f8'), dyf * d, rtol=rtol, atol=atol)
    if act == 'prelu':
        dg = (dyf * np.where(xf > 0, 0, xf)).sum(axis=(0, 2))
        assert outs[1].shape == (4,) and outs[1].dtype == np.dtype(dtype)
        np.testing.assert_allclose(outs[1].asnumpy().astype('f8'), dg,
                                   rtol=rtol * 10, atol=atol * 100)


def test_backward_leaky_relu_errors():
    with pytest.raises(mx.MXNetError, match='gamma'):
        nd._backward_LeakyReLU(nd.ones((2, 3)), nd.ones((2, 3)), nd.ones((4,)), act_type='prelu')
    with pytest.raises(mx.MXNetError, match='shape'):
        nd._backward_LeakyReLU(nd.ones((2, 3)), nd.ones((3, 2)), act_type='elu')
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd._backward_LeakyReLU(nd.ones((2, 3), dtype='float64'), nd.ones((2, 3)))


@pytest.mark.parametrize('shape', [(1,), (2, 3), (4, 50, 3)])
def test_rrelu_training_grad_uses_the_drawn_slopes(rng, shape):
    """While training each negative element has its own random slope (the hidden mask): the
    gradient is dy where x > 0 and dy * slope elsewhere, from the same run."""
    x = _nonzero(rng, shape)
    dy = rng.standard_normal(shape)
    y = mx.sym.LeakyReLU(mx.sym.var('x'), act_type='rrelu', lower_bound=0.1, upper_bound=0.4)[0]
    with training():
        dx, mask = _grad_run(y, ['x'], {'x': _arr(x), 'head_grad': _arr(dy)},
                             hidden=[(1, 1)])
    assert mask.shape == shape and np.all((mask >= 0.1) & (mask < 0.4))
    if mask.size > 10:
        assert np.unique(mask).size > 1
    np.testing.assert_allclose(dx, dy * np.where(x > 0, 1, mask), rtol=1e-15)


# ------------------------------------------------------------------------------------------------
# Dropout


@pytest.mark.parametrize('shape', [(1,), (5,), (3, 4), (1, 3, 4)])
def test_dropout_grad_outside_training_is_identity(rng, shape):
    check_grad('Dropout', [rng.standard_normal(shape)], {'p': 0.3})
    check_grad('Dropout', [rng.standard_normal(shape)], {'p': 0.3, 'axes': (0,)})


@pytest.mark.parametrize('shape,axes', [((1,), ()), ((40,), ()), ((6, 30), ()), ((6, 30), (1,)),
                                        ((4, 10, 5), (0, 2)), ((1, 8, 3), (-1,)),
                                        ((3, 70000), (0,))])
@pytest.mark.parametrize('p', [0.0, 0.3, 0.75, 1.0])
def test_dropout_training_grad_is_dy_times_mask(rng, shape, axes, p):
    """The gradient multiplies by the hidden mask of the same run (1/(1-p) or 0, shared along
    `axes`)."""
    x = rng.standard_normal(shape)
    dy = rng.standard_normal(shape)
    y = mx.sym.Dropout(mx.sym.var('x'), p=p, axes=axes)
    with training():
        dx, mask, out = _grad_run(y, ['x'], {'x': _arr(x), 'head_grad': _arr(dy)},
                                  hidden=[(1, 1), (1, 0)])
    want_mshape = tuple(1 if (d in axes or d - len(shape) in axes) else n
                        for d, n in enumerate(shape))
    assert mask.shape == want_mshape
    if p == 1:  # MXNet's mask 0 * (1 / 0): NaN, and so are output and gradient
        assert np.all(np.isnan(mask)) and np.all(np.isnan(out)) and np.all(np.isnan(dx))
        return
    scale = 1 / (1 - p)
    assert np.all((mask == 0) | (mask == scale))
    if p in (0.3, 0.75) and mask.size > 30:
        assert 0 < (mask != 0).mean() < 1
    np.testing.assert_array_equal(out, x * mask)
    np.testing.assert_array_equal(dx, dy * mask)


def test_dropout_mode_always_grad_outside_training(rng):
    x, dy = rng.standard_normal((5, 40)), rng.standard_normal((5, 40))
    y = mx.sym.Dropout(mx.sym.var('x'), p=0.5, mode='always')
    dx, mask = _grad_run(y, ['x'], {'x': _arr(x), 'head_grad': _arr(dy)}, hidden=[(1, 1)])
    assert 0 < (mask != 0).mean() < 1
    np.testing.assert_array_equal(dx, dy * mask)


# ------------------------------------------------------------------------------------------------
# L2Normalization and log_sigmoid


@pytest.mark.parametrize('mode,shape', [('instance', (1, 3)), ('instance', (4,)),
                                        ('instance', (2, 3, 4)), ('channel', (1, 3, 4)),
                                        ('channel', (2, 3, 2, 2)), ('spatial', (2, 3, 4)),
                                        ('spatial', (1, 2, 2, 3))])
@pytest.mark.parametrize('eps', [1e-10, 0.5])
def test_l2_normalization_grad(rng, mode, shape, eps):
    check_grad('L2Normalization', [rng.standard_normal(shape)], {'mode': mode, 'eps': eps})


def _l2_np(x, mode, eps):
    axes = {'instance': tuple(range(1, x.ndim)), 'channel': (1,),
            'spatial': tuple(range(2, x.ndim))}[mode]
    n = np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)
    return x / n, n, axes


@pytest.mark.parametrize('mode,shape', [('instance', (3, 5000)), ('channel', (2, 3, 300)),
                                        ('spatial', (2, 3, 40, 50)), ('channel', (2, 0, 3))])
@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_l2_normalization_op(rng, mode, shape, dtype):
    x = rng.standard_normal(shape)
    y, n, axes = _l2_np(x, mode, 0.1)
    dy = rng.standard_normal(shape)
    norm = n if mode == 'channel' else n.reshape(shape[:1] if mode == 'instance' else shape[:2])
    out = nd._backward_L2Normalization(_arr(dy, dtype), _arr(y, dtype), _arr(norm, dtype),
                                       mode=mode, eps=0.1)
    want = (dy - y * (dy * y).sum(axis=axes, keepdims=True)) / n
    rtol, atol = TOL[dtype]
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.asnumpy().astype('f8'), want, rtol=rtol, atol=atol * 10)


def test_backward_l2_normalization_errors():
    with pytest.raises(mx.MXNetError, match='input 2'):
        nd._backward_L2Normalization(nd.ones((2, 3)), nd.ones((2, 3)), nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='at least 3'):
        nd._backward_L2Normalization(nd.ones((2, 3)), nd.ones((2, 3)), nd.ones((2, 1)),
                                     mode='channel')


@pytest.mark.parametrize('shape', [(1,), (7,), (3, 4), (2, 3, 2)])
def test_log_sigmoid_grad(rng, shape):
    check_grad('log_sigmoid', [rng.uniform(-6, 6, shape)])


@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_log_sigmoid_op(dtype):
    x = np.array([-200, -30, -1, 0, 0.5, 3, 30, 200, 6e4]).astype(dtype)
    dy = np.linspace(-2, 2, x.size).astype(dtype)
    out = nd._backward_log_sigmoid(_arr(dy), _arr(x)).asnumpy()
    with np.errstate(over='ignore'):
        want = dy.astype('f8') / (1 + np.exp(x.astype('f8')))
    assert out.dtype == np.dtype(dtype) and np.all(np.isfinite(out))
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(out.astype('f8'), want, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# BatchNorm


def _bn_inputs(rng, shape, axis):
    c = shape[axis]
    return [rng.standard_normal(shape) * 1.5 + 0.3, rng.uniform(0.5, 2, c),
            rng.standard_normal(c), rng.standard_normal(c), rng.uniform(0.5, 2, c)]


BN_CASES = [((1, 3), 1), ((4, 3), 1), ((2, 3, 4), 1), ((1, 3, 2, 2), 1), ((2, 3, 2, 3), -1),
            ((5, 2, 3), 0), ((2, 3, 4), 2), ((6, 4), -1), ((3,), 0)]


@pytest.mark.parametrize('shape,axis', BN_CASES)
@pytest.mark.parametrize('fix_gamma', [False, True])
@pytest.mark.parametrize('mode', ['inference', 'train', 'train_global'])
def test_batchnorm_grad(rng, shape, axis, fix_gamma, mode):
    """Inference and use_global_stats: the moving statistics are constants; training: the batch
    statistics depend on the data (with one value per channel the output is beta and the data
gradient 0). fix_gamma: gamma is 1 and gets a zero gradient."""
    attrs = {'axis': axis, 'fix_gamma': fix_gamma, 'eps': 1e-3,
             'use_global_stats': mode == 'train_global'}
    with training(mode != 'inference'):
        sym = check_grad('BatchNorm', _bn_inputs(rng, shape, axis), attrs, wrt=[0, 1, 2],
                         rtol=1e-5, atol=1e-6)
    if fix_gamma:
        np.testing.assert_array_equal(sym[1], 0)


def _bn_bwd_np(dy, x, gamma, mean, inv, axis, batch, fix_gamma):
    axes = tuple(d for d in range(x.ndim) if d != axis % x.ndim)
    bshape = [1] * x.ndim
    bshape[axis % x.ndim] = -1
    m, iv = mean.reshape(bshape), inv.reshape(bshape)
    w = np.ones_like(gamma) if fix_gamma else gamma
    n = x.size / x.shape[axis]
    s = dy.sum(axis=axes)
    d = (dy * (x - m)).sum(axis=axes)
    if batch:
        dx = (dy - (s / n).reshape(bshape) - (x - m) * iv ** 2 * (d / n).reshape(bshape)) * iv
    else:
        dx = dy * iv
    dx = dx * w.reshape(bshape)
    return dx, (np.zeros_like(d) if fix_gamma else d * inv), s


@pytest.mark.parametrize('shape,axis', [((9000, 8), -1), ((40, 6, 30), 1), ((4, 5, 70), 1),
                                        ((2, 3, 5, 4), 3), ((1, 4, 300), 1),
                                        ((2, 3, 80, 81), 1), ((3, 4, 7, 7), 1)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('batch', [True, False])
def test_backward_batchnorm_op(rng, shape, axis, dtype, batch):
    """_backward_BatchNorm vs NumPy on shapes that take the chunked (channel-last), per-channel
    and threaded paths."""
    c = shape[axis]
    x = rng.standard_normal(shape) + 2
    dy = rng.standard_normal(shape)
    gamma = rng.uniform(0.5, 2, c)
    mean = rng.standard_normal(c) + 2
    inv = rng.uniform(0.5, 2, c)
    mm, mv = rng.standard_normal(c), rng.uniform(0.5, 2, c)
    args = [_arr(a, dtype) for a in (dy, x, gamma, mean, inv, mm, mv)]
    with training(batch):
        out = nd._backward_BatchNorm(*args, axis=axis, fix_gamma=False, momentum=0.75, eps=0.01)
    a = [v.astype(dtype).astype('f8') for v in (dy, x, gamma, mean, inv, mm, mv)]
    want = _bn_bwd_np(*a[:5], axis, batch, False)
    if batch:   # the moving statistics move towards mean and 1 / inv^2 - eps
        mm, mv = 0.75 * a[5] + 0.25 * a[3], 0.75 * a[6] + 0.25 * (1 / a[4] ** 2 - 0.01)
    tol = 1e-12 if dtype == 'float64' else 1e-6
    np.testing.assert_allclose(args[5].asnumpy(), mm.astype(dtype), rtol=tol)
    np.testing.assert_allclose(args[6].asnumpy(), mv.astype(dtype), rtol=tol)
    for o, w in zip(out, want):
        assert o.dtype == np.dtype(dtype) and o.shape == w.shape
        tol = 1e-10 if dtype == 'float64' else 2e-4
        np.testing.assert_allclose(o.asnumpy(), w, rtol=tol, atol=tol * np.abs(w).max())


def test_backward_batchnorm_errors():
    def vec(n=3, dtype='float32'):
        return nd.ones((n,), dtype=dtype)
    with pytest.raises(mx.MXNetError, match='gamma has shape'):
        nd._backward_BatchNorm(nd.ones((2, 3)), nd.ones((2, 3)), vec(2), vec(), vec(), vec(),
                               vec())
    with pytest.raises(mx.MXNetError, match='moving_var has dtype'):
        nd._backward_BatchNorm(nd.ones((2, 3)), nd.ones((2, 3)), vec(), vec(), vec(), vec(),
                               vec(3, 'float64'))
    with pytest.raises(mx.MXNetError, match='ograd'):
        nd._backward_BatchNorm(nd.ones((2, 4)), nd.ones((2, 3)), vec(), vec(), vec(), vec(),
                               vec())
    with pytest.raises(mx.MXNetError, match='axis'):
        nd._backward_BatchNorm(nd.ones((2, 3)), nd.ones((2, 3)), vec(), vec(), vec(), vec(),
                               vec(), axis=2)


def _moving_np(x, mm, mv, axis, momentum):
    axes = tuple(d for d in range(x.ndim) if d != axis % x.ndim)
    return (mm * momentum + x.mean(axis=axes) * (1 - momentum),
            mv * momentum + x.var(axis=axes) * (1 - momentum))   # biased variance


BN_NAMES = ['data', 'gamma', 'beta', 'moving_mean', 'moving_var']


def _bn_step(rng, vals, dtype, **attrs):
    """One training step as a hybridized block runs it: forward and gradient in one graph run.
    Returns the fed arrays (the moving statistics are updated in them) and the gradients."""
    y = mx.sym.BatchNorm(*[mx.sym.var(n) for n in BN_NAMES], **attrs)
    feed = {n: _arr(v, dtype) for n, v in zip(BN_NAMES, vals)}
    feed['head_grad'] = _arr(rng.standard_normal(vals[0].shape), dtype)
    return feed, _grad_run(y, ['data', 'gamma', 'beta'], feed)


@pytest.mark.parametrize('shape,axis', [((4, 3), 1), ((2, 3, 4, 5), 1), ((20000, 4), -1),
                                        ((3, 5, 2), 0), ((1, 3, 1), 1)])
@pytest.mark.parametrize('momentum', [0.9, 0.0, 0.5])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_batchnorm_training_step_updates_moving_stats(rng, shape, axis, momentum, dtype):
    """As MXNet 1.9.1's CPU kernel: the backward of a training step updates moving_mean /
    moving_var in place with the batch mean and the biased batch variance."""
    vals = _bn_inputs(rng, shape, axis)
    with training():
        feed, _ = _bn_step(rng, vals, dtype, axis=axis, momentum=momentum, fix_gamma=False)
    x = vals[0].astype(dtype).astype('f8')
    want_m, want_v = _moving_np(x, vals[3].astype(dtype), vals[4].astype(dtype), axis, momentum)
    tol = 1e-12 if dtype == 'float64' else 1e-5
    np.testing.assert_allclose(feed['moving_mean'].asnumpy(), want_m, rtol=tol, atol=tol)
    np.testing.assert_allclose(feed['moving_var'].asnumpy(), want_v, rtol=tol, atol=tol)
    # gamma, beta and the data are left alone
    np.testing.assert_array_equal(feed['gamma'].asnumpy(), vals[1].astype(dtype))
    np.testing.assert_array_equal(feed['data'].asnumpy(), vals[0].astype(dtype))


def test_batchnorm_moving_stats_updates_compound_once_per_step(rng):
    vals = _bn_inputs(rng, (5, 3, 4), 1)
    y = mx.sym.BatchNorm(*[mx.sym.var(n) for n in BN_NAMES], fix_gamma=False, momentum=0.8)
    feed = {n: _arr(v) for n, v in zip(BN_NAMES, vals)}
    feed['head_grad'] = _arr(rng.standard_normal(vals[0].shape))
    want_m, want_v = vals[3], vals[4]
    for _ in range(3):
        with training():
            _grad_run(y, ['data'], feed)
        want_m, want_v = _moving_np(vals[0], want_m, want_v, 1, 0.8)
        np.testing.assert_allclose(feed['moving_mean'].asnumpy(), want_m, rtol=1e-12)
        np.testing.assert_allclose(feed['moving_var'].asnumpy(), want_v, rtol=1e-12)


@pytest.mark.parametrize('train,glob', [(False, False), (True, True), (False, True)])
def test_batchnorm_moving_stats_unchanged_outside_training_or_with_global_stats(rng, train,
                                                                                glob):
    vals = _bn_inputs(rng, (4, 3, 2), 1)
    with training(train):
        feed, _ = _bn_step(rng, vals, 'float64', use_global_stats=glob)
    np.testing.assert_array_equal(feed['moving_mean'].asnumpy(), vals[3])
    np.testing.assert_array_equal(feed['moving_var'].asnumpy(), vals[4])


def test_batchnorm_forward_alone_leaves_moving_stats(rng):
    """As in MXNet 1.9.1: a forward-only pass, even in training mode, does not update them."""
    vals = _bn_inputs(rng, (4, 3, 2), 1)
    arrs = [_arr(v) for v in vals]
    with training():
        nd.BatchNorm(*arrs)
    np.testing.assert_array_equal(arrs[3].asnumpy(), vals[3])
    np.testing.assert_array_equal(arrs[4].asnumpy(), vals[4])


def test_batchnorm_empty_batch_leaves_moving_stats(rng):
    mm, mv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    vals = [np.zeros((0, 3, 2)), np.ones(3), np.zeros(3), mm, mv]
    with training():
        feed, (dx, dg, db) = _bn_step(rng, vals, 'float64', fix_gamma=False)
    assert dx.shape == (0, 3, 2)
    np.testing.assert_array_equal(dg, 0)
    np.testing.assert_array_equal(db, 0)
    np.testing.assert_array_equal(feed['moving_mean'].asnumpy(), mm)
    np.testing.assert_array_equal(feed['moving_var'].asnumpy(), mv)


def test_batchnorm_zero_variance_without_eps_updates_var_with_zero(rng):
    """eps = 0 and a constant channel: the forward's inverse std is 0 (MXNet), the variance 0."""
    vals = [np.ones((4, 2)), np.ones(2), np.zeros(2), np.zeros(2), np.ones(2)]
    with training():
        feed, (dx, _, _) = _bn_step(rng, vals, 'float64', eps=0.0, momentum=0.5)
    np.testing.assert_array_equal(feed['moving_mean'].asnumpy(), [0.5, 0.5])
    np.testing.assert_array_equal(feed['moving_var'].asnumpy(), [0.5, 0.5])
    np.testing.assert_array_equal(dx, 0)


def test_batchnorm_auxiliary_inputs_get_no_gradient(rng):
    vals = _bn_inputs(rng, (4, 3), 1)
    y = mx.sym.BatchNorm(*[mx.sym.var(n) for n in BN_NAMES])
    feed = {n: _arr(a) for n, a in zip(BN_NAMES, vals)}
    feed['head_grad'] = _arr(rng.standard_normal((4, 3)))
    with training():
        g = _grad_run(y, BN_NAMES, feed)
    np.testing.assert_array_equal(g[3], 0)
    np.testing.assert_array_equal(g[4], 0)


# ------------------------------------------------------------------------------------------------
# LayerNorm, InstanceNorm, GroupNorm


@pytest.mark.parametrize('shape,axis', [((3,), -1), ((1, 4), -1), ((3, 5), -1), ((3, 5), 0),
                                        ((2, 3, 4), 1), ((2, 3, 4), 0), ((1, 3, 2), -1),
                                        ((2, 3, 2, 2), 2)])
@pytest.mark.parametrize('eps', [1e-5, 0.3])
def test_layernorm_grad(rng, shape, axis, eps):
    n = shape[axis]
    check_grad('LayerNorm', [rng.standard_normal(shape) + 1, rng.uniform(0.5, 2, n),
                             rng.standard_normal(n)], {'axis': axis, 'eps': eps})


@pytest.mark.parametrize('shape', [(1, 2, 3), (2, 3, 4), (2, 3, 2, 2), (1, 1, 5), (3, 2)])
@pytest.mark.parametrize('eps', [1e-3, 0.2])
def test_instancenorm_grad(rng, shape, eps):
    c = shape[1]
    check_grad('InstanceNorm', [rng.standard_normal(shape), rng.uniform(0.5, 2, c),
                                rng.standard_normal(c)], {'eps': eps})


@pytest.mark.parametrize('shape,groups', [((1, 4, 3), 2), ((2, 4, 2, 3), 1), ((2, 4, 3), 4),
                                          ((3, 6, 2), 3), ((1, 2, 1), 2)])
def test_groupnorm_grad(rng, shape, groups):
    check_grad('GroupNorm', [rng.standard_normal(shape), rng.uniform(0.5, 2, groups),
                             rng.standard_normal(groups)], {'num_groups': groups, 'eps': 1e-3})


def _row_bwd_np(dy, x, g_full, mean, inv, axes):
    """Normalisation over `axes`, g_full = gamma broadcast to x's shape."""
    xh = (x - mean) * inv
    gd = dy * g_full
    r = max(1, np.prod([x.shape[a] for a in axes]))
    dx = inv * (gd - gd.sum(axis=axes, keepdims=True) / r
                - xh * (gd * xh).sum(axis=axes, keepdims=True) / r)
    return dx, dy * xh, dy


@pytest.mark.parametrize('shape,axis', [((5000, 16), -1), ((2, 3, 300), 1), ((3, 40, 20), 0),
                                        ((4, 0), -1), ((0, 4), -1)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_backward_layernorm_op(rng, shape, axis, dtype):
    x = rng.standard_normal(shape) + 1
    dy = rng.standard_normal(shape)
    n = shape[axis]
    gamma = rng.uniform(0.5, 2, n)
    mshape = tuple(1 if d == axis % len(shape) else k for d, k in enumerate(shape))
    mean = x.mean(axis=axis, keepdims=True) if n else np.zeros(mshape)
    std = np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5) if n else np.ones(mshape)
    args = [_arr(a, dtype) for a in (dy, x, gamma, mean, std)]
    out = nd._backward_LayerNorm(*args, axis=axis)
    a = [v.asnumpy().astype('f8') for v in args]
    bshape = [1] * len(shape)
    bshape[axis] = n
    dx, dg, db = _row_bwd_np(a[0], a[1], a[2].reshape(bshape), a[3], 1 / a[4], (axis % len(shape),))
    other = tuple(d for d in range(len(shape)) if d != axis % len(shape))
    tol = 1e-10 if dtype == 'float64' else 5e-4
    for o, w in zip(out, (dx, dg.sum(axis=other), db.sum(axis=other))):
        assert o.dtype == np.dtype(dtype) and o.shape == w.shape
        np.testing.assert_allclose(o.asnumpy(), w, rtol=tol,
                                   atol=tol * max(1, np.abs(w).max(initial=0)))


@pytest.mark.parametrize('op,shape,groups', [('InstanceNorm', (30, 40, 50), None),
                                             ('GroupNorm', (8, 12, 30, 30), 3),
                                             ('InstanceNorm', (2, 3, 4), None)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_backward_instance_group_norm_op(rng, op, shape, groups, dtype):
    x = rng.standard_normal(shape) + 1
    dy = rng.standard_normal(shape)
    n, c = shape[:2]
    p = groups or c
    xg = x.reshape(n, p, -1)
    mean = xg.mean(axis=2)
    var = xg.var(axis=2)
    gamma = rng.uniform(0.5, 2, p)
    eps = 1e-3
    stat = var if op == 'InstanceNorm' else np.sqrt(var + eps)
    kw = {'eps': eps} if groups is None else {'eps': eps, 'num_groups': groups}
    args = [_arr(a, dtype) for a in (dy, x, gamma, mean, stat)]
    out = getattr(nd, '_backward_' + op)(*args, **kw)
    a = [v.asnumpy().astype('f8') for v in args]
    inv = (1 / np.sqrt(a[4] + eps) if op == 'InstanceNorm' else 1 / a[4])[:, :, None]
    dx, dg, db = _row_bwd_np(a[0].reshape(n, p, -1), a[1].reshape(n, p, -1),
                             a[2][None, :, None], a[3][:, :, None], inv, (2,))
    tol = 1e-10 if dtype == 'float64' else 5e-4
    for o, w in zip(out, (dx.reshape(shape), dg.sum(axis=(0, 2)), db.sum(axis=(0, 2)))):
        assert o.dtype == np.dtype(dtype) and o.shape == w.shape
        np.testing.assert_allclose(o.asnumpy(), w, rtol=tol, atol=tol * max(1, np.abs(w).max()))


def test_backward_row_norm_errors():
    with pytest.raises(mx.MXNetError, match='mean has shape'):
        nd._backward_LayerNorm(nd.ones((2, 3)), nd.ones((2, 3)), nd.ones((3,)), nd.ones((3, 1)),
                               nd.ones((2, 1)))
    with pytest.raises(mx.MXNetError, match='gamma'):
        nd._backward_InstanceNorm(nd.ones((2, 3, 4)), nd.ones((2, 3, 4)), nd.ones((4,)),
                                  nd.ones((2, 3)), nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='divisible'):
        nd._backward_GroupNorm(nd.ones((2, 3, 4)), nd.ones((2, 3, 4)), nd.ones((2,)),
                               nd.ones((2, 2)), nd.ones((2, 2)), num_groups=2)
    with pytest.raises(mx.MXNetError, match='ograd'):
        nd._backward_LayerNorm(nd.ones((2, 4)), nd.ones((2, 3)), nd.ones((3,)), nd.ones((2, 1)),
                               nd.ones((2, 1)))


def test_norm_grads_are_deterministic_across_thread_counts(rng):
    """Partial sums are added in a fixed chunk order: the same bits with 1 or more threads."""
    x = rng.standard_normal((6000, 16))
    dy = rng.standard_normal((6000, 16))
    args = [_arr(a) for a in (dy, x, rng.uniform(0.5, 2, 16), x.mean(axis=1, keepdims=True),
                              x.std(axis=1, keepdims=True) + 0.1)]
    prev = _core.num_threads()
    try:
        _core.num_threads(1)
        one = [o.asnumpy() for o in nd._backward_LayerNorm(*args)]
        _core.num_threads(max(2, prev))
        many = [o.asnumpy() for o in nd._backward_LayerNorm(*args)]
    finally:
        _core.num_threads(prev)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)
