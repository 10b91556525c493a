"""Gradient rules of the output layers, the softmax family, the sequence ops, LRN and Crop
(legacy_output.c, softmax.c, sequence_ops.c, legacy_nn.c).

The ordinary ops (softmin, SoftmaxActivation, softmax with a length, softmax_cross_entropy,
hard_sigmoid, smooth_l1, SequenceLast/Reverse, LRN, Crop) are checked against float64 central
finite differences of their forward. The output layers' rules are not their forward's
derivative: they give the gradient of the loss they stand for and ignore the head gradient.
They are checked against finite differences of that loss (written out here in NumPy), with
random head gradients that must change nothing, through the symbolic rule, autograd and a
hybridized block; the label gets a zero gradient."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad, symbolic_grad

nd = mx.nd

GRADS_COVERED = ['SoftmaxOutput', 'LinearRegressionOutput', 'MAERegressionOutput',
                 'LogisticRegressionOutput', 'SVMOutput', 'MakeLoss', 'softmax_cross_entropy',
                 'softmin', 'SoftmaxActivation', 'hard_sigmoid', 'smooth_l1', 'SequenceLast',
                 'SequenceReverse', 'LRN', 'Crop']


def _log_softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _fd(loss, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        p, m = x.copy(), x.copy()
        p.flat[i] += eps
        m.flat[i] -= eps
        g.flat[i] = (loss(p) - loss(m)) / (2 * eps)
    return g


def _rule_grads(op, x, lab, attrs, rng):
    """The data gradient by the symbolic rule with two different random head gradients, and by
    autograd with the label also asking for a gradient (which must be zero)."""
    xs = [x, lab]
    y = getattr(nd, op)(nd.array(x, dtype=x.dtype), nd.array(lab, dtype=lab.dtype), **attrs)
    g1 = symbolic_grad(op, xs, attrs, [0], [rng.standard_normal(y.shape)])[0]
    g2 = symbolic_grad(op, xs, attrs, [0], [rng.standard_normal(y.shape) * 10])[0]
    np.testing.assert_array_equal(g1, g2)     # the head gradient plays no part
    a, b = nd.array(x, dtype=x.dtype), nd.array(lab, dtype=lab.dtype)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        out = getattr(nd, op)(a, b, **attrs)
    out.backward(nd.array(rng.standard_normal(out.shape), dtype=out.dtype))
    np.testing.assert_allclose(a.grad.asnumpy(), g1, rtol=1e-12, atol=1e-14)
    assert not b.grad.asnumpy().any()
    return g1


# ------------------------------------------------------------------------------------------------
# SoftmaxOutput: the loss is the cross-entropy against the (smoothed) one-hot label

def _so_loss(lab, k, alpha=0.0, ignore=None, scale=1.0, axis=-1):
    def loss(x):
        lp = _log_softmax(x, axis)
        q = np.moveaxis((np.arange(k) == lab.astype(int)[..., None]).astype(float), -1, axis)
        q = q * (1 - alpha) + (1 - q) * alpha / (k - 1)
        if ignore is not None:
            q = q * np.expand_dims(lab.astype(int) != ignore, axis)
        return -scale * float((q * lp).sum())
    return loss


@pytest.mark.parametrize('attrs,count', [({}, 1), ({'grad_scale': 2.0}, 1),
                                         ({'normalization': 'batch'}, 5),
                                         ({'smooth_alpha': 0.15}, 1),
                                         ({'use_ignore': True, 'ignore_label': 2,
                                           'normalization': 'valid'}, None)])
def test_softmax_output_gradient_is_the_cross_entropy_gradient(rng, attrs, count):
    x = rng.standard_normal((5, 4))
    lab = np.array([2, 0, 3, 2, 1], np.float64)
    ignore = attrs.get('ignore_label') if attrs.get('use_ignore') else None
    if count is None:
        count = int((lab != attrs['ignore_label']).sum())
    g = _rule_grads('SoftmaxOutput', x, lab, attrs, rng)
    loss = _so_loss(lab, 4, attrs.get('smooth_alpha', 0.0), ignore,
                    attrs.get('grad_scale', 1.0) / count)
    np.testing.assert_allclose(g, _fd(loss, x), rtol=1e-6, atol=1e-8)


def test_softmax_output_multi_output_gradient(rng):
    """multi_output: softmax over axis 1; 'null' divides by the positions per example."""
    x = rng.standard_normal((2, 3, 4))
    lab = rng.integers(0, 3, (2, 4)).astype(np.float64)
    g = _rule_grads('SoftmaxOutput', x, lab, {'multi_output': True}, rng)
    np.testing.assert_allclose(g, _fd(_so_loss(lab, 3, scale=1 / 4, axis=1), x), rtol=1e-6,
                               atol=1e-8)


def test_softmax_output_preserve_shape_gradient(rng):
    x = rng.standard_normal((2, 3, 4))
    lab = rng.integers(0, 4, (2, 3)).astype(np.float64)
    g = _rule_grads('SoftmaxOutput', x, lab, {'preserve_shape': True}, rng)
    np.testing.assert_allclose(g, _fd(_so_loss(lab, 4), x), rtol=1e-6, atol=1e-8)


def test_softmax_output_probability_label_gradient(rng):
    x = rng.standard_normal((3, 4))
    p = np.exp(rng.standard_normal((3, 4)))
    p /= p.sum(1, keepdims=True)
    g = _rule_grads('SoftmaxOutput', x, p, {}, rng)
    np.testing.assert_allclose(g, _fd(lambda v: -float((p * _log_softmax(v)).sum()), x),
                               rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------------------------------------
# Regression outputs, SVMOutput, MakeLoss

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


REG_LOSSES = {
    'LinearRegressionOutput': lambda x, lab: 0.5 * ((x - lab) ** 2).sum(),
    'MAERegressionOutput': lambda x, lab: np.abs(x - lab).sum(),
    'LogisticRegressionOutput': lambda x, lab: -(lab * np.log(_sigmoid(x)) +
                                                (1 - lab) * np.log(1 - _sigmoid(x))).sum(),
}


@pytest.mark.parametrize('op', sorted(REG_LOSSES))
@pytest.mark.parametrize('dshape,lshape', [((4, 3), (4, 3)), ((5, 1), (5,)), ((6,), (6,))])
@pytest.mark.parametrize('grad_scale', [1.0, 0.5])
def test_regression_output_gradients(rng, op, dshape, lshape, grad_scale):
    x = rng.standard_normal(dshape)
    lab = rng.uniform(0.05, 0.95, lshape)
    if op == 'MAERegressionOutput':     # keep off the kink
        lab = x.reshape(lshape) + rng.choice([-1, 1], lshape) * rng.uniform(0.1, 1, lshape)
    g = _rule_grads(op, x, lab, {'grad_scale': grad_scale}, rng)
    m = lab.size // lab.shape[0]
    scale = float(np.float32(grad_scale / m))
    ref = _fd(lambda v: scale * REG_LOSSES[op](v, lab.reshape(dshape)), x)
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-8)


def _svm_loss(lab, margin, rc, linear):
    def loss(x):
        k = x.shape[-1]
        x2 = x.reshape(-1, k)
        oh = np.arange(k) == lab.reshape(-1).astype(int)[:, None]
        h = np.maximum(0, margin + np.where(oh, -x2, x2))
        return rc * float((h if linear else h ** 2).sum())
    return loss


@pytest.mark.parametrize('attrs', [{}, {'use_linear': True},
                                   {'margin': 0.5, 'regularization_coefficient': 2.0},
                                   {'margin': 1.5, 'use_linear': True}])
@pytest.mark.parametrize('shape', [(5, 4), (2, 3, 4)])
def test_svm_output_gradient_is_the_hinge_gradient(rng, attrs, shape):
    margin = attrs.get('margin', 1.0)
    x = rng.standard_normal(shape) * 2
    x = np.where(np.abs(np.abs(x) - margin) < 0.05, x + 0.2, x)   # off the hinge's kinks
    lab = rng.integers(0, shape[-1], shape[:-1]).astype(np.float64)
    g = _rule_grads('SVMOutput', x, lab, attrs, rng)
    loss = _svm_loss(lab, margin, attrs.get('regularization_coefficient', 1.0),
                     attrs.get('use_linear', False))
    np.testing.assert_allclose(g, _fd(loss, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize('attrs,count', [({}, 1), ({'grad_scale': 0.3}, 1),
                                         ({'normalization': 'batch'}, 6),
                                         ({'normalization': 'valid', 'valid_thresh': 0.2},
                                          None)])
def test_make_loss_op_gradient(rng, attrs, count):
    x = rng.standard_normal((2, 3, 4))
    if count is None:
        count = int((x > attrs['valid_thresh']).sum())
    scale = attrs.get('grad_scale', 1.0) / count
    y = nd.MakeLoss(nd.array(x, dtype='float64'), **attrs)
    g1 = symbolic_grad('MakeLoss', [x], attrs, [0], [rng.standard_normal(y.shape)])[0]
    g2 = symbolic_grad('MakeLoss', [x], attrs, [0], [rng.standard_normal(y.shape)])[0]
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_allclose(g1, _fd(lambda v: scale * v.sum(), x), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------------------------------------
# Ordinary derivatives

def test_softmax_cross_entropy_gradient(rng):
    lab = np.array([1, 0, 4], np.float64)
    check_grad('softmax_cross_entropy', [rng.standard_normal((3, 5)), lab], wrt=[0])


@pytest.mark.parametrize('shape,axis', [((3, 5), -1), ((2, 3, 4), 1), ((4, 3), 0)])
@pytest.mark.parametrize('temperature', [None, 0.7])
def test_softmin_gradient(rng, shape, axis, temperature):
    check_grad('softmin', [rng.standard_normal(shape)], {'axis': axis,
                                                         'temperature': temperature})


@pytest.mark.parametrize('shape,axis', [((3, 5, 4), 1), ((4, 6), -1), ((5,), 0)])
@pytest.mark.parametrize('ldtype', ['int32', 'float64'])
def test_softmax_with_length_gradient(rng, shape, axis, ldtype):
    lshape = tuple(s for i, s in enumerate(shape) if i != axis % len(shape)) or (1,)
    length = rng.integers(0, shape[axis] + 1, lshape).astype(ldtype)
    check_grad('softmax', [rng.standard_normal(shape), length],
               {'axis': axis, 'use_length': True, 'temperature': 1.3}, wrt=[0])


def test_softmax_with_length_gives_the_length_no_gradient(rng):
    x = nd.array(rng.standard_normal((2, 4)), dtype='float64')
    length = nd.array([1, 3], dtype='int32')
    x.attach_grad()
    length.attach_grad()
    with mx.autograd.record():
        y = nd.softmax(x, length, use_length=True)
    y.backward(nd.ones((2, 4), dtype='float64'))
    assert length.grad.dtype == np.int32 and not length.grad.asnumpy().any()
    # ones as head gradient: sum(dy * y) = 1 inside the length, so the gradient is 0
    np.testing.assert_allclose(x.grad.asnumpy(), 0, atol=1e-15)


@pytest.mark.parametrize('shape,mode', [((3, 6), 'instance'), ((2, 3, 4), 'instance'),
                                        ((2, 4, 3), 'channel'), ((2, 3, 2, 2), 'channel')])
def test_softmax_activation_gradient(rng, shape, mode):
    check_grad('SoftmaxActivation', [rng.standard_normal(shape)], {'mode': mode})


@pytest.mark.parametrize('alpha,beta', [(0.2, 0.5), (0.3, 0.4)])
def test_hard_sigmoid_gradient(rng, alpha, beta):
    x = rng.uniform(-5, 5, (4, 5))
    kinks = np.array([-beta / alpha, (1 - beta) / alpha])
    x = np.where(np.abs(x[..., None] - kinks).min(-1) < 0.05, x + 0.1, x)
    check_grad('hard_sigmoid', [x], {'alpha': alpha, 'beta': beta})


@pytest.mark.parametrize('sigma', [1.0, 2.0, 0.5])
def test_smooth_l1_gradient(rng, sigma):
    x = rng.uniform(-5, 5, (4, 5))
    x = np.where(np.abs(np.abs(x) - 1 / sigma ** 2) < 0.05, x + 0.1, x)
    check_grad('smooth_l1', [x], {'scalar': sigma})


@pytest.mark.parametrize('shape,axis', [((4, 3, 2), 0), ((3, 5, 2), 1), ((2, 3), 1)])
@pytest.mark.parametrize('use_len', [False, True])
def test_sequence_last_gradient(rng, shape, axis, use_len):
    b = shape[1 - axis]
    xs = [rng.standard_normal(shape)]
    if use_len:
        xs.append(rng.integers(1, shape[axis] + 1, (b,)).astype(np.int32))
    check_grad('SequenceLast', xs, {'axis': axis, 'use_sequence_length': use_len}, wrt=[0])


@pytest.mark.parametrize('shape', [(5, 3, 2), (4, 2)])
@pytest.mark.parametrize('use_len', [False, True])
def test_sequence_reverse_gradient(rng, shape, use_len):
    xs = [rng.standard_normal(shape)]
    if use_len:
        xs.append(rng.integers(0, shape[0] + 1, shape[1:2]).astype(np.float64))
    check_grad('SequenceReverse', xs, {'use_sequence_length': use_len}, wrt=[0])


@pytest.mark.parametrize('attrs', [{'nsize': 3}, {'nsize': 1},
                                   {'nsize': 5, 'alpha': 0.3, 'beta': 0.5, 'knorm': 1.0}])
@pytest.mark.parametrize('shape', [(2, 5, 2, 3), (1, 2, 1, 1)])
def test_lrn_gradient(rng, attrs, shape):
    check_grad('LRN', [rng.standard_normal(shape) * 2], attrs)


@pytest.mark.parametrize('attrs,like', [({'h_w': (2, 3), 'offset': (1, 1)}, None),
                                        ({'h_w': (2, 2), 'center_crop': True}, None),
                                        ({'offset': (2, 0)}, (1, 1, 2, 4)),
                                        ({'center_crop': True}, (2, 3, 3, 3))])
def test_crop_gradient(rng, attrs, like):
    xs = [rng.standard_normal((2, 2, 4, 5))]
    if like:
        xs.append(rng.standard_normal(like))
    g = check_grad('Crop', xs, attrs, wrt=[0])
    assert g[0].any()
    if like:    # crop_like only lends its shape
        sym = symbolic_grad('Crop', xs, attrs, [1], [np.ones((2, 2) + like[2:])])
        assert not sym[0].any()


# ------------------------------------------------------------------------------------------------
# Through a hybridized block: the same rules in the cached graph

class _Net(mx.gluon.HybridBlock):
    def __init__(self, op, **attrs):
        super().__init__()
        self._op, self._attrs = op, attrs

    def hybrid_forward(self, F, x, label):
        return getattr(F, self._op)(F.tanh(x) * 2, label, **self._attrs)


@pytest.mark.parametrize('op,attrs', [('SoftmaxOutput', {'normalization': 'batch'}),
                                      ('SoftmaxOutput', {'multi_output': True}),
                                      ('LinearRegressionOutput', {'grad_scale': 0.5}),
                                      ('LogisticRegressionOutput', {}),
                                      ('SVMOutput', {'use_linear': True})])
def test_output_layers_hybridized_match_imperative(rng, op, attrs):
    shape = (3, 4, 2) if attrs.get('multi_output') else (3, 4)
    x = rng.standard_normal(shape)
    if op in ('SoftmaxOutput', 'SVMOutput'):
        lshape = (3, 2) if attrs.get('multi_output') else (3,)
        lab = rng.integers(0, 4, lshape).astype(np.float64)
    else:
        lab = rng.uniform(0, 1, shape)
    grads = []
    for hybrid in (False, True):
        net = _Net(op, **attrs)
        if hybrid:
            net.hybridize()
        a = nd.array(x, dtype='float64')
        a.attach_grad()
        with mx.autograd.record():
            y = net(a, nd.array(lab, dtype='float64'))
        y.backward()
        grads.append(a.grad.asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-14)
    assert np.abs(grads[0]).max() > 0
