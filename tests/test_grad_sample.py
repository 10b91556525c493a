"""The gradient of _sample_multinomial's log-probabilities (nd.random.multinomial with
get_prob=True) against float64 finite differences at fixed draws (the generator reseeded for
every evaluation), and no gradient through the drawn ids."""
import numpy as np

import hybridgluon as mx
from hybridgluon import nd

GRADS_COVERED = ['_sample_multinomial']


def _probs(rng, shape):
    p = rng.uniform(0.05, 1, size=shape)
    return p / p.sum(-1, keepdims=True)


def test_log_prob_gradient_vs_finite_differences():
    rng = np.random.default_rng(4)
    p = _probs(rng, (3, 4))
    w = rng.standard_normal((3, 6))

    def loss(pv):
        mx.random.seed(99)  # the same uniforms: the same draws for a small perturbation
        _, lp = nd.random.multinomial(nd.array(pv, dtype='float64'), shape=6, get_prob=True)
        return float((lp.asnumpy() * w).sum())

    x = nd.array(p, dtype='float64')
    x.attach_grad()
    mx.random.seed(99)
    with mx.autograd.record():
        samples, lp = nd.random.multinomial(x, shape=6, get_prob=True)
    lp.backward(nd.array(w, dtype='float64'))
    eps = 1e-7
    fd = np.zeros_like(p)
    for i in np.ndindex(p.shape):
        hi, lo = p.copy(), p.copy()
        hi[i] += eps
        lo[i] -= eps
        fd[i] = (loss(hi) - loss(lo)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), fd, rtol=1e-5, atol=1e-6)
    assert (fd != 0).sum() > 3  # the draws hit several categories


def test_no_gradient_through_the_ids():
    x = nd.array([[0.3, 0.7]])
    x.attach_grad()
    with mx.autograd.record():
        s = nd.random.multinomial(x, shape=3, dtype='float32')
    s.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 0]])
