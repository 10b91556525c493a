"""MXNet's output layers, the softmax family, the sequence ops, LRN and Crop
(csrc/ops/legacy_output.c, softmax.c, sequence_ops.c, legacy_nn.c) against
NumPy references: forwards, the _backward_ ops (the loss gradients the output layers give,
whatever head gradient flows in), several shapes, empty and one-element arrays, every float
dtype, and the errors for bad shapes and attributes."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['SoftmaxOutput', '_backward_SoftmaxOutput', 'LinearRegressionOutput',
               'MAERegressionOutput', 'LogisticRegressionOutput', '_backward_linear_reg_out',
               '_backward_mae_reg_out', '_backward_logistic_reg_out', 'SVMOutput',
               '_backward_SVMOutput', 'MakeLoss', '_backward_MakeLoss', 'softmax_cross_entropy',
               '_backward_softmax_cross_entropy', 'softmin', '_backward_softmin',
               'SoftmaxActivation', '_backward_SoftmaxActivation', 'hard_sigmoid',
               '_backward_hard_sigmoid', 'smooth_l1', '_backward_smooth_l1', 'SequenceLast',
               '_backward_SequenceLast', 'SequenceReverse', 'LRN', '_backward_LRN', 'Crop',
               '_backward_Crop']

FLOATS = ['float16', 'float32', 'float64']
TOL = {'float16': 3e-3, 'float32': 2e-6, 'float64': 1e-12}


def _arr(x):
    return nd.array(x, dtype=x.dtype)


def _check(out, ref, dtype, tol=None):
    assert out.dtype == np.dtype(dtype)
    got = out.asnumpy().astype(np.float64)
    assert got.shape == ref.shape
    t = tol or TOL[dtype]
    np.testing.assert_allclose(got, ref, rtol=t, atol=t)


def _softmax(z, axis=-1):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _onehot(lab, k, axis=-1):
    oh = (np.arange(k) == lab.astype(np.int64)[..., None]).astype(np.float64)
    return np.moveaxis(oh, -1, axis)


# ------------------------------------------------------------------------------------------------
# SoftmaxOutput

def _so_grad_ref(y, lab, grad_scale=1.0, ignore_label=-1, multi_output=False, use_ignore=False,
                 preserve_shape=False, normalization='null', smooth_alpha=0.0, out_grad=False):
    """MXNet 1.9.1's SoftmaxOutput gradient, written from its documentation and source."""
    y = y.astype(np.float64)
    if lab.shape == y.shape:
        g = (y - lab) * grad_scale
        return g * y if out_grad else g
    if multi_output:
        n, k = y.shape[:2]
        y3 = y.reshape(n, k, -1)
        l2 = lab.reshape(n, -1)
        g = y3 - _onehot(l2, k, axis=1)
        if use_ignore:
            g = g * (l2.astype(int) != int(ignore_label))[:, None, :]
        cnt = {'null': 1, 'batch': n,
               'valid': max(1, int((l2.astype(int) != int(ignore_label)).sum()))}[normalization]
        g = g * grad_scale / (1 if normalization == 'valid' else y3.shape[2]) / cnt
    else:
        k = y.shape[-1] if preserve_shape else y.size // y.shape[0]
        y2 = y.reshape(-1, k)
        l1 = lab.reshape(-1)[:y2.shape[0]]
        q = _onehot(l1, k)
        q = q * (1 - smooth_alpha) + (1 - q) * (smooth_alpha / (k - 1) if k > 1 else 0)
        g = y2 - q
        if use_ignore:
            g = g * (l1.astype(int) != int(ignore_label))[:, None]
        flat = lab.reshape(-1)
        cnt = {'null': 1, 'batch': flat.size,
               'valid': max(1, int((flat.astype(int) != int(ignore_label)).sum()))}[normalization]
        g = g * grad_scale / cnt
    g = g.reshape(y.shape)
    return g * y if out_grad else g


SO_CASES = [
    ((4, 5), (4,), {}),
    ((1, 1), (1,), {}),
    ((3, 7), (3,), {'grad_scale': 2.5, 'normalization': 'batch'}),
    ((6, 4), (6,), {'use_ignore': True, 'ignore_label': 2, 'normalization': 'valid'}),
    ((6, 4), (6,), {'ignore_label': 2, 'normalization': 'valid'}),
    ((5, 6), (5,), {'smooth_alpha': 0.2}),
    ((5, 6), (5,), {'smooth_alpha': 0.1, 'use_ignore': True, 'ignore_label': 0}),
    ((2, 4, 3), (2, 3), {'multi_output': True}),
    ((2, 4, 3, 2), (2, 6), {'multi_output': True, 'normalization': 'batch'}),
    ((2, 4, 3, 2), (2, 3, 2), {'multi_output': True, 'use_ignore': True,
                               'normalization': 'valid', 'ignore_label': 1}),
    ((2, 4, 3), (2, 1, 3), {'multi_output': True}),
    ((3, 2, 5), (3, 2), {'preserve_shape': True, 'grad_scale': 0.5}),
    ((2, 3, 4), (2, 3), {}),
    ((4, 5), (4,), {'out_grad': True}),
]


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('dshape,lshape,attrs', SO_CASES)
def test_softmax_output(rng, dtype, dshape, lshape, attrs):
    x = rng.standard_normal(dshape).astype(dtype)
    if attrs.get('multi_output'):
        k = dshape[1]
    elif attrs.get('preserve_shape'):
        k = dshape[-1]
    else:
        k = int(np.prod(dshape[1:]))
    lab = rng.integers(-1 if attrs.get('use_ignore') else 0, k, lshape).astype(dtype)
    y = nd.SoftmaxOutput(_arr(x), _arr(lab), **attrs)
    xf = x.astype(np.float64)
    if attrs.get('multi_output'):
        ref = _softmax(xf, axis=1)
    elif attrs.get('preserve_shape'):
        ref = _softmax(xf)
    else:
        ref = _softmax(xf.reshape(dshape[0], -1)).reshape(dshape)
    _check(y, ref, dtype)
    g = nd._backward_SoftmaxOutput(y, _arr(lab), **attrs)
    _check(g, _so_grad_ref(y.asnumpy(), lab.astype(np.float64), **attrs), dtype,
           tol=2e-2 if dtype == 'float16' else None)


def test_softmax_output_probability_label_and_alias(rng):
    x = rng.standard_normal((3, 4))
    p = _softmax(rng.standard_normal((3, 4)))
    y = nd.Softmax(_arr(x), _arr(p), grad_scale=3.0)
    _check(y, _softmax(x), 'float64')
    g = nd._backward_SoftmaxOutput(y, _arr(p), grad_scale=3.0, normalization='batch',
                                   use_ignore=True)
    _check(g, (_softmax(x) - p) * 3.0, 'float64')   # no normalisation, no ignore: as MXNet


def test_softmax_output_integer_label_and_empty():
    x = np.array([[1.0, 2.0, 0.5]], np.float32)
    g = nd._backward_SoftmaxOutput(nd.SoftmaxOutput(_arr(x), nd.array([2], dtype='int32')),
                                   nd.array([2], dtype='int32'))
    _check(g, _softmax(x) - [[0, 0, 1]], 'float32')
    for shape in [(0, 3), (2, 0)]:
        y = nd.SoftmaxOutput(nd.zeros(shape), nd.zeros(shape[:1]))
        assert y.shape == shape
        assert nd._backward_SoftmaxOutput(y, nd.zeros(shape[:1])).shape == shape


def test_softmax_output_label_out_of_range_gives_softmax():
    """A label that names no class matches no column (MXNet's kernel): gradient = softmax."""
    x = np.array([[0.3, -1.0, 2.0]])
    y = nd.SoftmaxOutput(_arr(x), nd.array([7.0], dtype='float64'))
    _check(nd._backward_SoftmaxOutput(y, nd.array([7.0], dtype='float64')), _softmax(x),
           'float64')


def test_labels_no_int_holds_name_no_class():
    """Huge and NaN labels match no column (and are no ignore_label), as a label out of range."""
    x = np.array([[0.3, -1.0, 2.0], [1.0, 0.0, 0.5], [0.1, 0.2, 0.3]])
    lab = np.array([1e20, np.nan, -1e12])
    y = nd.SoftmaxOutput(_arr(x), _arr(lab))
    g = nd._backward_SoftmaxOutput(y, _arr(lab), use_ignore=True, normalization='valid')
    _check(g, _softmax(x) / 3, 'float64')
    g = nd._backward_SVMOutput(_arr(x), _arr(lab), use_linear=True)
    _check(g, 1.0 * (1.0 > -x), 'float64')
    with pytest.raises(mx.MXNetError, match='class'):
        nd.softmax_cross_entropy(_arr(x), _arr(lab))


def test_softmax_output_errors():
    x = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match='label'):
        nd.SoftmaxOutput(x, nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='label'):
        nd.SoftmaxOutput(nd.ones((2, 3, 4)), nd.ones((2, 2)), multi_output=True)
    with pytest.raises(mx.MXNetError, match='float'):
        nd.SoftmaxOutput(nd.ones((2, 3), dtype='int32'), nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match='smooth_alpha'):
        nd.SoftmaxOutput(x, nd.ones((2,)), smooth_alpha=1.5)
    with pytest.raises(mx.MXNetError, match='normalization'):
        nd.SoftmaxOutput(x, nd.ones((2,)), normalization='mean')
    with pytest.raises(mx.MXNetError, match='bool'):
        nd.SoftmaxOutput(x, nd.ones((2,), dtype='bool'))
    with pytest.raises(mx.MXNetError, match='dimensions'):
        nd.SoftmaxOutput(nd.ones((3,)), nd.ones((3,)), multi_output=True)


# ------------------------------------------------------------------------------------------------
# Regression outputs

REG = {'LinearRegressionOutput': ('_backward_linear_reg_out', lambda x: x,
                                  lambda y, lab: y - lab),
       'MAERegressionOutput': ('_backward_mae_reg_out', lambda x: x,
                               lambda y, lab: np.where(y - lab > 0, 1.0, -1.0)),
       'LogisticRegressionOutput': ('_backward_logistic_reg_out', lambda x: 1 / (1 + np.exp(-x)),
                                    lambda y, lab: y - lab)}


@pytest.mark.parametrize('op', sorted(REG))
@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('dshape,lshape', [((4, 3), (4, 3)), ((5, 1), (5,)), ((1,), (1,)),
                                           ((3, 2, 2), (3, 4)), ((6,), (6,)), ((0, 3), (0, 3))])
@pytest.mark.parametrize('grad_scale', [1.0, 0.25])
def test_regression_outputs(rng, op, dtype, dshape, lshape, grad_scale):
    bwd, fwd, dloss = REG[op]
    x = rng.standard_normal(dshape).astype(dtype)
    lab = rng.uniform(0, 1, lshape).astype(dtype)
    y = getattr(nd, op)(_arr(x), _arr(lab), grad_scale=grad_scale)
    _check(y, fwd(x.astype(np.float64)), dtype)
    g = getattr(nd, bwd)(_arr(lab), y, grad_scale=grad_scale)
    m = lab.size // lab.shape[0] if lab.shape[0] else 1
    ref = dloss(y.asnumpy().astype(np.float64), lab.reshape(dshape).astype(np.float64))
    _check(g, ref * float(np.float32(grad_scale / m)), dtype)   # MXNet's scale is a float


def test_regression_label_shape_rules():
    # (n, 1) data takes an (n,) label; any label of the same first dimension and size works
    assert nd.LinearRegressionOutput(nd.ones((3, 1)), nd.ones((3,))).shape == (3, 1)
    assert nd.LinearRegressionOutput(nd.ones((3, 4)), nd.ones((3, 2, 2))).shape == (3, 4)
    with pytest.raises(mx.MXNetError, match='label'):
        nd.LinearRegressionOutput(nd.ones((3, 4)), nd.ones((4, 3)))
    with pytest.raises(mx.MXNetError, match='label'):
        nd.MAERegressionOutput(nd.ones((3, 4)), nd.ones((3, 3)))
    with pytest.raises(mx.MXNetError, match='float'):
        nd.LogisticRegressionOutput(nd.ones((3,), dtype='int64'), nd.ones((3,)))


# ------------------------------------------------------------------------------------------------
# SVMOutput

def _svm_grad_ref(y, lab, margin=1.0, regularization_coefficient=1.0, use_linear=False):
    k = y.shape[-1]
    y2 = y.reshape(-1, k).astype(np.float64)
    oh = _onehot(lab.reshape(-1), k).astype(bool)
    rc = regularization_coefficient
    if use_linear:
        g = np.where(oh, -1.0 * (margin > y2) * rc, 1.0 * (margin > -y2) * rc)
    else:
        g = np.where(oh, -rc * np.where(margin > y2, 2 * (margin - y2), 0),
                     -rc * np.where(margin > -y2, -2 * (margin + y2), 0))
    return g.reshape(y.shape)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('dshape', [(5, 4), (1, 1), (2, 3, 4), (0, 3)])
@pytest.mark.parametrize('attrs', [{}, {'use_linear': True},
                                   {'margin': 0.5, 'regularization_coefficient': 2.0},
                                   {'margin': 1.5, 'use_linear': True}])
def test_svm_output(rng, dtype, dshape, attrs):
    x = (rng.standard_normal(dshape) * 2).astype(dtype)
    lab = rng.integers(0, dshape[-1], dshape[:-1]).astype(dtype)
    y = nd.SVMOutput(_arr(x), _arr(lab), **attrs)
    _check(y, x.astype(np.float64), dtype)
    g = nd._backward_SVMOutput(y, _arr(lab), **attrs)
    _check(g, _svm_grad_ref(x, lab, **attrs), dtype, tol=1e-2 if dtype == 'float16' else None)


def test_svm_output_errors():
    with pytest.raises(mx.MXNetError, match='label'):
        nd.SVMOutput(nd.ones((3, 4)), nd.ones((4,)))
    with pytest.raises(mx.MXNetError, match='dimensions'):
        nd.SVMOutput(nd.ones((3,)), nd.ones((3,)))


# ------------------------------------------------------------------------------------------------
# MakeLoss

@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(3, 4), (2, 3, 4), (5,), (1,), (0, 2)])
@pytest.mark.parametrize('attrs', [{}, {'grad_scale': 0.3}, {'normalization': 'batch'},
                                   {'normalization': 'valid', 'valid_thresh': 0.25,
                                    'grad_scale': 2.0}])
def test_make_loss_op(rng, dtype, shape, attrs):
    x = rng.standard_normal(shape).astype(dtype)
    y = nd.MakeLoss(_arr(x), **attrs)
    _check(y, x.astype(np.float64), dtype)
    gs = attrs.get('grad_scale', 1.0)
    norm = attrs.get('normalization', 'null')
    if norm == 'batch':
        gs /= x.size // shape[-1] if x.size else 1
    elif norm == 'valid':
        thr = np.asarray(attrs['valid_thresh'], dtype)
        gs /= max(1, int((x > thr).sum()))
    _check(nd._backward_MakeLoss(_arr(x), **attrs), np.full(shape, gs), dtype)


def test_make_loss_valid_with_nothing_valid():
    g = nd._backward_MakeLoss(nd.array([[-1.0, -2.0]]), normalization='valid')
    assert g.asnumpy().tolist() == [[1.0, 1.0]]


# ------------------------------------------------------------------------------------------------
# softmax_cross_entropy

@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(4, 5), (1, 1), (3, 7), (0, 4)])
def test_softmax_cross_entropy(rng, dtype, shape):
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    lab = rng.integers(0, shape[1], shape[:1]).astype(dtype)
    y = nd.softmax_cross_entropy(_arr(x), _arr(lab))
    p = _softmax(x.astype(np.float64)) if x.size else x.astype(np.float64)
    picked = p[np.arange(shape[0]), lab.astype(int)]
    _check(y, np.array([-np.log(np.maximum(picked, 1e-8)).sum()]), dtype,
           tol=1e-2 if dtype == 'float16' else 1e-5 if dtype == 'float32' else None)
    dy = np.array([1.7], dtype)
    g = nd._backward_softmax_cross_entropy(_arr(dy), _arr(x), _arr(lab))
    _check(g, 1.7 * (p - _onehot(lab, shape[1])), dtype,
           tol=1e-2 if dtype == 'float16' else None)


def test_softmax_cross_entropy_errors():
    with pytest.raises(mx.MXNetError, match='2-D'):
        nd.softmax_cross_entropy(nd.ones((2, 3, 4)), nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match='label'):
        nd.softmax_cross_entropy(nd.ones((2, 3)), nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='class'):
        nd.softmax_cross_entropy(nd.ones((2, 3)), nd.array([0, 3]))


# ------------------------------------------------------------------------------------------------
# softmin, softmax with a length, SoftmaxActivation

@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis', [((3, 5), -1), ((3, 4, 2), 1), ((4, 3), 0), ((1,), 0),
                                        ((2, 70, 3), 1), ((0, 3), 1)])
@pytest.mark.parametrize('temperature', [None, 2.0])
def test_softmin(rng, dtype, shape, axis, temperature):
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    y = nd.softmin(_arr(x), axis=axis, temperature=temperature)
    ref = _softmax(-x.astype(np.float64) / (temperature or 1.0), axis) if x.size else x
    _check(y, ref.astype(np.float64), dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    g = nd._backward_softmin(_arr(dy), y, axis=axis, temperature=temperature)
    yf, dyf = y.asnumpy().astype(np.float64), dy.astype(np.float64)
    ref = -yf * (dyf - (dyf * yf).sum(axis, keepdims=True)) / (temperature or 1.0)
    _check(g, ref, dtype, tol=1e-2 if dtype == 'float16' else None)


def _masked_softmax(x, length, axis, t=1.0, log=False):
    x = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.zeros_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        n = int(np.clip(length[idx], 0, x.shape[-1]))
        if n:
            z = x[idx][:n] / t
            z = z - z.max()
            out[idx][:n] = z - np.log(np.exp(z).sum()) if log else np.exp(z) / np.exp(z).sum()
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('ldtype', ['int32', 'int64', 'float32'])
@pytest.mark.parametrize('shape,axis', [((3, 5, 4), 1), ((4, 6), -1), ((4, 6), 0), ((5,), 0),
                                        ((2, 3, 4), 2), ((0, 3), 1)])
def test_softmax_use_length(rng, dtype, ldtype, shape, axis):
    x = rng.standard_normal(shape).astype(dtype)
    lshape = tuple(s for i, s in enumerate(shape) if i != axis % len(shape)) or (1,)
    length = rng.integers(0, shape[axis] + 2, lshape).astype(ldtype)   # 0 and past the end
    y = nd.softmax(_arr(x), _arr(length), axis=axis, use_length=True, temperature=1.5)
    _check(y, _masked_softmax(x, length.reshape(lshape if len(shape) > 1 else ()), axis, 1.5),
           dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    g = nd._backward_softmax(_arr(dy), y, _arr(length), axis=axis, use_length=True,
                             temperature=1.5)
    yf, dyf = y.asnumpy().astype(np.float64), dy.astype(np.float64)
    ref = yf * (dyf - (dyf * yf).sum(axis, keepdims=True)) / 1.5   # y is 0 past the length
    _check(g, ref, dtype, tol=1e-2 if dtype == 'float16' else None)


def test_log_softmax_backward_with_length(rng):
    x = rng.standard_normal((3, 5))
    length = np.array([5, 2, 0], np.int32)
    y = nd.softmax(_arr(x), _arr(length), use_length=True).asnumpy()
    logy = np.where(y > 0, np.log(np.where(y > 0, y, 1)), 0)
    dy = rng.standard_normal((3, 5))
    g = nd._backward_log_softmax(_arr(dy), _arr(logy), _arr(length), use_length=True)
    mask = np.arange(5) < length[:, None]
    ref = np.where(mask, dy - np.exp(logy) * (dy * mask).sum(1, keepdims=True), 0)
    _check(g, ref, 'float64')


def test_softmax_length_errors():
    with pytest.raises(mx.MXNetError, match='length'):
        nd.softmax(nd.ones((2, 3)), nd.ones((3,)), use_length=True)
    with pytest.raises(mx.MXNetError, match='length'):
        nd.softmax(nd.ones((2, 3)), nd.ones((2,), dtype='bool'), use_length=True)
    with pytest.raises(mx.MXNetError, match='use_length'):
        nd.softmin(nd.ones((2, 3)), use_length=True)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,mode', [((3, 6), 'instance'), ((2, 3, 4), 'instance'),
                                        ((2, 4, 3), 'channel'), ((2, 4, 2, 3), 'channel'),
                                        ((3, 5), 'channel'), ((1, 1), 'instance'),
                                        ((0, 3), 'channel')])
def test_softmax_activation(rng, dtype, shape, mode):
    x = rng.standard_normal(shape).astype(dtype)
    axis = -1 if mode == 'instance' else 1
    y = nd.SoftmaxActivation(_arr(x), mode=mode)
    _check(y, _softmax(x, axis) if x.size else x.astype(np.float64), dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    g = nd._backward_SoftmaxActivation(_arr(dy), y, mode=mode)
    yf, dyf = y.asnumpy().astype(np.float64), dy.astype(np.float64)
    _check(g, yf * (dyf - (dyf * yf).sum(axis, keepdims=True)), dtype,
           tol=1e-2 if dtype == 'float16' else None)


def test_softmax_activation_errors():
    with pytest.raises(mx.MXNetError, match='channel'):
        nd.SoftmaxActivation(nd.ones((3,)), mode='channel')
    with pytest.raises(mx.MXNetError, match='mode'):
        nd.SoftmaxActivation(nd.ones((3,)), mode='batch')


# ------------------------------------------------------------------------------------------------
# hard_sigmoid, smooth_l1

@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(5, 6), (1,), (0,), (3, 1000)])
@pytest.mark.parametrize('alpha,beta', [(0.2, 0.5), (0.3, 0.4)])
def test_hard_sigmoid(rng, dtype, shape, alpha, beta):
    x = rng.uniform(-5, 5, shape).astype(dtype)
    xf = x.astype(np.float64)
    y = nd.hard_sigmoid(_arr(x), alpha=alpha, beta=beta)
    _check(y, np.clip(alpha * xf + beta, 0, 1), dtype, tol=1e-6 if dtype == 'float64' else None)
    dy = rng.standard_normal(shape).astype(dtype)
    g = nd._backward_hard_sigmoid(_arr(dy), _arr(x), alpha=alpha, beta=beta)
    inside = (alpha * xf + beta > 0) & (alpha * xf + beta < 1)
    _check(g, np.where(inside, dy.astype(np.float64) * alpha, 0), dtype,
           tol=1e-6 if dtype == 'float64' else None)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(5, 6), (1,), (0,), (3, 1000)])
@pytest.mark.parametrize('sigma', [1.0, 2.0, 0.5])
def test_smooth_l1(rng, dtype, shape, sigma):
    x = rng.uniform(-5, 5, shape).astype(dtype)
    xf = x.astype(np.float64)
    ib = 1 / sigma ** 2
    y = nd.smooth_l1(_arr(x), scalar=sigma)
    ref = np.where(np.abs(xf) > ib, np.abs(xf) - 0.5 * ib, 0.5 * xf * xf * sigma ** 2)
    _check(y, ref, dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    g = nd._backward_smooth_l1(_arr(dy), _arr(x), scalar=sigma)
    d = np.where(xf > ib, 1, np.where(xf < -ib, -1, sigma ** 2 * xf))
    _check(g, dy.astype(np.float64) * d, dtype)


def test_ew_losses_reject_integers():
    with pytest.raises(mx.MXNetError, match='float'):
        nd.hard_sigmoid(nd.ones((2,), dtype='int32'))
    with pytest.raises(mx.MXNetError, match='float'):
        nd.smooth_l1(nd.ones((2,), dtype='int64'))


# ------------------------------------------------------------------------------------------------
# SequenceLast, SequenceReverse

ALL_DTYPES = ['float16', 'float32', 'float64', 'int32', 'int64', 'uint8', 'int8']


def _seq_last_ref(x, length, axis):
    xs = np.moveaxis(x, axis, 0)
    return np.stack([xs[int(length[i]) - 1, i] for i in range(xs.shape[1])])


@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('shape,axis', [((4, 3, 2), 0), ((3, 5, 2, 2), 1), ((1, 1), 0),
                                        ((6, 2), 1), ((3, 0, 2), 0)])
@pytest.mark.parametrize('use_len', [False, True])
def test_sequence_last(rng, dtype, shape, axis, use_len):
    x = rng.integers(0, 100, shape).astype(dtype)
    t, b = shape[axis], shape[1 - axis]
    length = rng.integers(1, t + 1, (b,)) if use_len else np.full((b,), t)
    args = [_arr(x)] + ([nd.array(length, dtype='int32')] if use_len else [])
    y = nd.SequenceLast(*args, axis=axis, use_sequence_length=use_len)
    ref = _seq_last_ref(x, length, axis) if b else np.zeros((0,) + shape[2:])
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), ref.reshape(y.shape))
    dy = rng.integers(0, 100, y.shape).astype(dtype)
    g = nd._backward_SequenceLast(_arr(dy), _arr(x), *args[1:], axis=axis,
                                  use_sequence_length=use_len)
    ref = np.zeros_like(np.moveaxis(x, axis, 0))
    for i in range(b):
        ref[int(length[i]) - 1, i] = dy[i]
    np.testing.assert_array_equal(g.asnumpy(), np.moveaxis(ref, 0, axis))


def _seq_rev_ref(x, length):
    out = x.copy()
    for i, n in enumerate(length):
        out[:int(n), i] = x[:int(n), i][::-1]
    return out


@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('shape', [(5, 3, 2), (4, 2), (1, 1), (6, 2, 3, 2), (0, 3), (3, 0)])
@pytest.mark.parametrize('ldtype', [None, 'int32', 'float32', 'int64'])
def test_sequence_reverse(rng, dtype, shape, ldtype):
    x = rng.integers(0, 100, shape).astype(dtype)
    length = rng.integers(0, shape[0] + 1, shape[1:2]) if ldtype else np.full(shape[1:2], shape[0])
    args = [_arr(x)] + ([nd.array(length, dtype=ldtype)] if ldtype else [])
    y = nd.SequenceReverse(*args, use_sequence_length=ldtype is not None)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), _seq_rev_ref(x, length))


def test_sequence_errors():
    x = nd.ones((4, 3, 2))
    with pytest.raises(mx.MXNetError, match='sequence_length'):
        nd.SequenceLast(x, nd.ones((4,)), use_sequence_length=True)
    with pytest.raises(mx.MXNetError, match='sequence_length'):
        nd.SequenceLast(x, nd.array([1, 5, 2]), use_sequence_length=True)   # 5 > T
    with pytest.raises(mx.MXNetError, match='sequence_length'):
        nd.SequenceLast(x, nd.array([1, 0, 2]), use_sequence_length=True)   # empty sequence
    with pytest.raises(mx.MXNetError, match='sequence_length'):
        nd.SequenceReverse(x, nd.array([1, -1, 2]), use_sequence_length=True)
    with pytest.raises(mx.MXNetError, match='axis'):
        nd.SequenceReverse(x, axis=1)
    with pytest.raises(mx.MXNetError, match='axis'):
        nd.SequenceLast(x, axis=2)
    with pytest.raises(mx.MXNetError, match='2 dimensions'):
        nd.SequenceLast(nd.ones((4,)))
    with pytest.raises(mx.MXNetError, match='bool'):
        nd.SequenceReverse(x, nd.ones((3,), dtype='bool'), use_sequence_length=True)
    for bad in (np.nan, 1e30, -1e30):
        with pytest.raises(mx.MXNetError, match='sequence_length'):
            nd.SequenceLast(x, nd.array([1, bad, 2]), use_sequence_length=True)


def test_softmax_length_nan_counts_as_zero():
    y = nd.softmax(nd.ones((2, 3)), nd.array([np.nan, 1e30]), use_length=True)
    np.testing.assert_allclose(y.asnumpy(), [[0, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# LRN

def _lrn_ref(x, nsize, alpha=1e-4, beta=0.75, knorm=2.0):
    x = x.astype(np.float64)
    c, half = x.shape[1], nsize // 2
    sq = np.pad(x ** 2, ((0, 0), (half, half), (0, 0), (0, 0)))
    win = sum(sq[:, i:i + c] for i in range(nsize))
    norm = knorm + alpha / nsize * win
    return x * norm ** -beta, norm


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('shape', [(2, 5, 3, 4), (1, 1, 1, 1), (2, 7, 1, 2), (0, 3, 2, 2),
                                   (3, 16, 20, 20)])
@pytest.mark.parametrize('attrs', [{'nsize': 3}, {'nsize': 1},
                                   {'nsize': 5, 'alpha': 0.01, 'beta': 0.5, 'knorm': 1.0}])
def test_lrn(rng, dtype, shape, attrs):
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    y = nd.LRN(_arr(x), **attrs)
    ref, norm = _lrn_ref(x, **attrs)
    tol = 2e-6 if dtype == 'float32' else 1e-7      # MXNet's parameters are float32
    _check(y, ref, dtype, tol)
    # the backward against the derivative written out
    dy = rng.standard_normal(shape).astype(dtype)
    n, beta = attrs['nsize'], attrs.get('beta', 0.75)
    salpha = attrs.get('alpha', 1e-4) / n
    t = np.pad(dy * x * norm ** (-beta - 1), ((0, 0), (n // 2, n // 2), (0, 0), (0, 0)))
    win = sum(t[:, i:i + shape[1]] for i in range(n))
    ref = dy * norm ** -beta - 2 * beta * salpha * x * win
    g = nd._backward_LRN(_arr(dy), _arr(x), nd.array(norm, dtype=dtype), **attrs)
    _check(g, ref, dtype, 1e-5 if dtype == 'float32' else 1e-7)


def test_lrn_errors():
    with pytest.raises(mx.MXNetError, match='odd'):
        nd.LRN(nd.ones((1, 3, 2, 2)), nsize=2)
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.LRN(nd.ones((3, 2, 2)), nsize=3)
    with pytest.raises(mx.MXNetError, match='float'):
        nd.LRN(nd.ones((1, 3, 2, 2), dtype='float16'), nsize=3)
    with pytest.raises(mx.MXNetError, match='nsize'):
        nd.LRN(nd.ones((1, 3, 2, 2)))


# ------------------------------------------------------------------------------------------------
# Crop

@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16', 'int32', 'uint8'])
@pytest.mark.parametrize('shape,hw,offset,center', [((2, 3, 5, 6), (3, 4), (1, 2), False),
                                                    ((2, 3, 5, 6), (3, 4), (0, 0), True),
                                                    ((1, 1, 4, 4), (4, 4), (0, 0), False),
                                                    ((1, 2, 7, 5), (1, 1), (6, 4), False),
                                                    ((0, 2, 4, 4), (2, 2), (1, 1), False)])
@pytest.mark.parametrize('like', [False, True])
def test_crop(rng, dtype, shape, hw, offset, center, like):
    x = rng.integers(0, 100, shape).astype(dtype)
    if like:
        y = nd.Crop(_arr(x), nd.zeros((1, 1) + hw), offset=offset, center_crop=center)
    else:
        y = nd.Crop(_arr(x), h_w=hw, offset=offset, center_crop=center)
    oy, ox = ((shape[2] - hw[0]) // 2, (shape[3] - hw[1]) // 2) if center else offset
    ref = x[:, :, oy:oy + hw[0], ox:ox + hw[1]]
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), ref)
    g = nd._backward_Crop(y, _arr(x), offset=offset, center_crop=center, num_args=2)
    ref = np.zeros_like(x)
    ref[:, :, oy:oy + hw[0], ox:ox + hw[1]] = x[:, :, oy:oy + hw[0], ox:ox + hw[1]]
    np.testing.assert_array_equal(g.asnumpy(), ref)


def test_crop_errors():
    x = nd.ones((1, 2, 4, 4))
    with pytest.raises(mx.MXNetError, match='offset'):
        nd.Crop(x, h_w=(2, 2), offset=(3, 0))
    with pytest.raises(mx.MXNetError, match='h_w'):
        nd.Crop(x)
    with pytest.raises(mx.MXNetError, match='crop'):
        nd.Crop(x, h_w=(5, 2))
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.Crop(nd.ones((2, 4, 4)), h_w=(2, 2))
    with pytest.raises(mx.MXNetError, match='crop_like'):
        nd.Crop(x, nd.ones((2, 2)))
    with pytest.raises(mx.MXNetError, match='ograd'):   # fewer planes than the data
        nd._backward_Crop(nd.ones((1, 1, 2, 2)), x, num_args=2)
    with pytest.raises(mx.MXNetError, match='ograd'):
        nd._backward_Crop(nd.ones((1, 2, 2, 2), dtype='float64'), x, num_args=2)
