"""gluon.loss: every loss against a NumPy transcription of MXNet 1.9.1's formula, imperative
== hybridized, weights (global and per sample), batch_axis, label reshaping and the errors
for labels of the wrong size."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon import loss as gloss

nd = mx.nd


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _softrelu(x):
    return np.log1p(np.exp(x))


def _log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _mean_except(x, batch_axis=0):
    axes = tuple(i for i in range(x.ndim) if i != batch_axis % x.ndim)
    return x.mean(axis=axes) if axes else x


def _run(loss, *arrays, hybrid_too=True):
    """The loss of NumPy inputs (None passes through), imperative then hybridized, checked
    equal; returns the imperative result as NumPy."""
    args = [None if a is None else nd.array(a) for a in arrays]
    out = loss(*args).asnumpy()
    if hybrid_too:
        loss.hybridize()
        for _ in range(2):  # the first call traces, the second runs the cached graph
            np.testing.assert_allclose(loss(*args).asnumpy(), out, rtol=1e-5, atol=1e-6)
    return out


def _check(got, want, rtol=1e-5, atol=1e-6):
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


SHAPES = [(4, 3), (2, 3, 5), (6, 1)]


@pytest.mark.parametrize('shape', SHAPES)
def test_l2_l1(rng, shape):
    p = rng.standard_normal(shape).astype(np.float32)
    lab = rng.standard_normal(shape).astype(np.float32)
    _check(_run(gloss.L2Loss(), p, lab), _mean_except(0.5 * (lab - p) ** 2))
    _check(_run(gloss.L2Loss(weight=3.), p, lab), _mean_except(1.5 * (lab - p) ** 2))
    _check(_run(gloss.L1Loss(), p, lab), _mean_except(np.abs(lab - p)))
    _check(_run(gloss.L1Loss(weight=0.5), p, lab), _mean_except(0.5 * np.abs(lab - p)))


def test_sample_weight_and_batch_axis(rng):
    p = rng.standard_normal((4, 3)).astype(np.float32)
    lab = rng.standard_normal((4, 3)).astype(np.float32)
    sw = rng.random((4, 1)).astype(np.float32)
    _check(_run(gloss.L2Loss(), p, lab, sw), _mean_except(0.5 * (lab - p) ** 2 * sw))
    _check(_run(gloss.L1Loss(batch_axis=1), p, lab), np.abs(lab - p).mean(axis=0))
    # sample_weight broadcasts against the element-wise loss: per-column weights too
    sw2 = rng.random((1, 3)).astype(np.float32)
    _check(_run(gloss.L1Loss(), p, lab, sw2), _mean_except(np.abs(lab - p) * sw2))


def test_label_reshaped_like_pred(rng):
    p = rng.standard_normal((5, 1)).astype(np.float32)
    lab = rng.standard_normal((5,)).astype(np.float32)
    want = _mean_except(0.5 * (lab.reshape(5, 1) - p) ** 2)
    _check(_run(gloss.L2Loss(), p, lab), want)
    # (N,) against (N, 1) must not broadcast to (N, N) in the hybridized graph either
    _check(_run(gloss.L2Loss(), lab, p.reshape(5)), _mean_except(0.5 * (lab - p.ravel()) ** 2))
    p2 = rng.standard_normal((2, 6)).astype(np.float32)
    lab2 = rng.standard_normal((3, 4)).astype(np.float32)
    _check(_run(gloss.L1Loss(), p2, lab2), _mean_except(np.abs(lab2.reshape(2, 6) - p2)))


@pytest.mark.parametrize('loss', [gloss.L2Loss(), gloss.L1Loss(), gloss.HuberLoss(),
                                  gloss.SigmoidBCELoss(), gloss.HingeLoss(),
                                  gloss.SquaredHingeLoss(), gloss.LogisticLoss(),
                                  gloss.PoissonNLLLoss(),
                                  gloss.SoftmaxCELoss(sparse_label=False)])
@pytest.mark.parametrize('hybrid', [False, True])
def test_wrong_label_size_is_a_clear_error(loss, hybrid):
    if hybrid:
        loss.hybridize()
    with pytest.raises(mx.MXNetError, match=r'same number of elements.*12 vs 8'):
        loss(nd.ones((4, 2)), nd.ones((4, 3)))
    with pytest.raises(ValueError):  # also a ValueError
        loss(nd.ones((4, 2)), nd.ones((3,)))


@pytest.mark.parametrize('axis,shape', [(-1, (4, 5)), (1, (3, 4, 2)), (-1, (2, 3, 4))])
def test_softmax_ce_sparse(rng, axis, shape):
    p = rng.standard_normal(shape).astype(np.float32)
    nclass = shape[axis]
    reduced = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
    lab = rng.integers(0, nclass, reduced).astype(np.float32)
    logp = _log_softmax(p, axis)
    picked = np.take_along_axis(logp, np.expand_dims(lab.astype(int), axis), axis=axis)
    want = _mean_except(-picked)
    _check(_run(gloss.SoftmaxCrossEntropyLoss(axis=axis), p, lab), want)
    # a label with the class axis kept as 1 is accepted too (MXNet's pick allows both)
    kept = np.expand_dims(lab, axis)
    _check(_run(gloss.SoftmaxCELoss(axis=axis), p, kept), want)
    # from_logits: pred is already a log-probability
    _check(_run(gloss.SoftmaxCELoss(axis=axis, from_logits=True), logp, lab), want)


def test_softmax_ce_dense_and_weights(rng):
    p = rng.standard_normal((4, 3)).astype(np.float32)
    q = np.exp(_log_softmax(rng.standard_normal((4, 3))).astype(np.float32))
    want = _mean_except(-(_log_softmax(p) * q).sum(axis=-1, keepdims=True))
    _check(_run(gloss.SoftmaxCELoss(sparse_label=False), p, q), want)
    lab = np.array([0, 2, 1, 1], np.float32)
    sw = np.array([[1.], [0.], [2.], [0.5]], np.float32)
    want = -np.take_along_axis(_log_softmax(p), lab.astype(int)[:, None], axis=1) * sw * 0.25
    _check(_run(gloss.SoftmaxCELoss(weight=0.25), p, lab, sw), want.ravel())


def test_softmax_ce_bad_sparse_label():
    loss = gloss.SoftmaxCELoss()
    with pytest.raises(mx.MXNetError, match=r'sparse label.*\(4,\).*got \(5,\)'):
        loss(nd.ones((4, 3)), nd.ones((5,)))
    with pytest.raises(mx.MXNetError, match='axis 3 is out of range'):
        gloss.SoftmaxCELoss(axis=3)(nd.ones((4, 3)), nd.ones((4,)))


@pytest.mark.parametrize('shape', SHAPES)
def test_sigmoid_bce(rng, shape):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    z = rng.integers(0, 2, shape).astype(np.float32)
    want = _mean_except(np.maximum(x, 0) - x * z + _softrelu(-np.abs(x)))
    _check(_run(gloss.SigmoidBinaryCrossEntropyLoss(), x, z), want)
    # the stable form equals the plain definition
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(want, _mean_except(-(z * np.log(s) + (1 - z) * np.log(1 - s))),
                               rtol=1e-4, atol=1e-5)
    prob = rng.uniform(0.05, 0.95, shape).astype(np.float32)
    want = _mean_except(-(np.log(prob + 1e-12) * z + np.log(1 - prob + 1e-12) * (1 - z)))
    _check(_run(gloss.SigmoidBCELoss(from_sigmoid=True), prob, z), want)


def test_sigmoid_bce_pos_weight(rng):
    x = (rng.standard_normal((4, 3)) * 3).astype(np.float32)
    z = rng.integers(0, 2, (4, 3)).astype(np.float32)
    pw = np.array([[1., 2., 0.5]], np.float32)
    sw = np.ones((4, 1), np.float32)
    log_w = 1 + (pw - 1) * z
    want = _mean_except(x - x * z + log_w * (_softrelu(-np.abs(x)) + np.maximum(-x, 0)))
    _check(_run(gloss.SigmoidBCELoss(), x, z, sw, pw), want)
    _check(_run(gloss.SigmoidBCELoss(), x, z, None, pw, hybrid_too=False), want)
    prob = rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
    want = _mean_except(-(np.log(prob + 1e-12) * z * pw + np.log(1 - prob + 1e-12) * (1 - z)))
    _check(_run(gloss.SigmoidBCELoss(from_sigmoid=True), prob, z, sw, pw), want)


def test_hybridized_none_input_before_another():
    x = nd.array([[1., -2., 3.]])
    z = nd.array([[1., 0., 1.]])
    pw = nd.array([[2., 2., 2.]])
    loss = gloss.SigmoidBCELoss()
    want = loss(x, z, None, pw).asnumpy()
    loss.hybridize()
    np.testing.assert_allclose(loss(x, z, None, pw).asnumpy(), want, rtol=1e-6)


def test_kldiv(rng):
    p = rng.standard_normal((4, 5)).astype(np.float32)
    q = np.exp(_log_softmax(rng.standard_normal((4, 5)))).astype(np.float32)
    logp = _log_softmax(p)
    # summed over the classes as in MXNet 1.9.1 (not averaged like the other losses)
    want = (q * (np.log(q + 1e-12) - logp)).sum(axis=1)
    _check(_run(gloss.KLDivLoss(), logp, q), want)
    _check(_run(gloss.KLDivLoss(from_logits=False), p, q), want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('rho', [1, 0.5])
def test_huber(rng, rho):
    p = (rng.standard_normal((6, 4)) * 2).astype(np.float32)
    lab = rng.standard_normal((6, 4)).astype(np.float32)
    d = np.abs(lab - p)
    want = _mean_except(np.where(d > rho, d - 0.5 * rho, 0.5 / rho * d ** 2))
    _check(_run(gloss.HuberLoss(rho=rho), p, lab), want)


def test_hinge_squared_hinge_logistic(rng):
    p = (rng.standard_normal((5, 3)) * 2).astype(np.float32)
    lab = np.where(rng.random((5, 3)) < 0.5, -1., 1.).astype(np.float32)
    _check(_run(gloss.HingeLoss(), p, lab), _mean_except(np.maximum(0, 1 - p * lab)))
    _check(_run(gloss.HingeLoss(margin=2), p, lab), _mean_except(np.maximum(0, 2 - p * lab)))
    _check(_run(gloss.SquaredHingeLoss(), p, lab),
           _mean_except(np.maximum(0, 1 - p * lab) ** 2))
    want = _mean_except(np.log1p(np.exp(-p * lab)))
    _check(_run(gloss.LogisticLoss(), p, lab), want, rtol=1e-4)
    _check(_run(gloss.LogisticLoss(label_format='binary'), p, (lab + 1) / 2), want, rtol=1e-4)
    with pytest.raises(ValueError, match='signed or binary'):
        gloss.LogisticLoss(label_format='other')


def test_triplet(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    pos = rng.standard_normal((4, 6)).astype(np.float32)
    neg = rng.standard_normal((4, 2, 3)).astype(np.float32)  # reshaped like pred
    negf = neg.reshape(4, 6)
    want = np.maximum(((pos - a) ** 2 - (negf - a) ** 2).sum(axis=1) + 1, 0)
    _check(_run(gloss.TripletLoss(), a, pos, neg), want, rtol=1e-5, atol=1e-5)
    want = np.maximum(((pos - a) ** 2 - (negf - a) ** 2).sum(axis=1) + 3, 0) * 0.5
    _check(_run(gloss.TripletLoss(margin=3, weight=0.5), a, pos, neg), want, atol=1e-5)


def test_poisson_nll(rng):
    p = rng.standard_normal((4, 3)).astype(np.float32)
    t = rng.integers(1, 6, (4, 3)).astype(np.float32)
    _check(_run(gloss.PoissonNLLLoss(), p, t), np.array([(np.exp(p) - t * p).mean()]),
           rtol=1e-5)
    pp = np.exp(p)
    want = pp - t * np.log(pp + 1e-08)
    _check(_run(gloss.PoissonNLLLoss(from_logits=False), pp, t), np.array([want.mean()]),
           rtol=1e-5)
    stirling = (t * np.log(t) - t + 0.5 * np.log(2 * t * np.pi)) * (t > 1)
    _check(_run(gloss.PoissonNLLLoss(from_logits=False, compute_full=True), pp, t),
           np.array([(want + stirling).mean()]), rtol=1e-5)


def test_cosine_embedding(rng):
    x1 = rng.standard_normal((5, 4)).astype(np.float32)
    x2 = rng.standard_normal((5, 4)).astype(np.float32)
    lab = np.array([1, -1, 1, -1, -1], np.float32)
    cos = (x1 * x2).sum(1) / np.maximum(np.linalg.norm(x1, axis=1) * np.linalg.norm(x2, axis=1),
                                        1e-12)
    for margin in (0, 0.2):
        want = np.where(lab == 1, 1 - cos, np.maximum(0, cos - margin)).reshape(5, 1)
        _check(_run(gloss.CosineEmbeddingLoss(margin=margin), x1, x2, lab), want, atol=1e-5)


def test_aliases_and_repr():
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss
    assert mx.gluon.loss.L2Loss is gloss.L2Loss
    assert repr(gloss.L2Loss()) == 'L2Loss(batch_axis=0, w=1.0)'
    assert repr(gloss.L1Loss(batch_axis=1)) == 'L1Loss(batch_axis=1, w=None)'
    assert isinstance(gloss.L1Loss(), mx.gluon.HybridBlock)


def test_weight_must_be_a_number():
    with pytest.raises(TypeError, match='weight must be a number'):
        gloss.L1Loss(weight='2')(nd.ones((2, 2)), nd.ones((2, 2)))


def test_loss_inside_a_hybridized_network(rng):
    """A loss traced as part of a larger graph, with labels already shaped like preds."""
    class Net(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = mx.gluon.nn.Dense(3)
                self.loss = gloss.SoftmaxCELoss()

        def hybrid_forward(self, F, x, y):
            return self.loss(self.dense(x), y)

    net = Net()
    net.initialize()
    x = nd.array(rng.standard_normal((4, 5)))
    y = nd.array([0, 1, 2, 1])
    want = net(x, y).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x, y).asnumpy(), want, rtol=1e-5, atol=1e-6)
    logits = net.dense(x).asnumpy()
    np.testing.assert_allclose(want, -_log_softmax(logits)[np.arange(4), [0, 1, 2, 1]],
                               rtol=1e-5, atol=1e-6)
