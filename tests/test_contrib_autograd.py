"""mx.contrib.autograd, MXNet's older autograd API, on hybridgluon's autograd."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.contrib import autograd as cag

nd = mx.nd


def test_sections_set_training_and_recording_together():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with cag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    assert cag.set_is_training(True) is False
    assert cag.set_is_training(False) is True


def test_grad_and_loss_matches_analytic_gradients():
    rng = np.random.RandomState(3)
    a, b = rng.rand(3, 4), rng.rand(3, 4)
    x, y = nd.array(a), nd.array(b)
    grads, out = cag.grad_and_loss(lambda u, v: u * v + nd.exp(u))(x, y)
    np.testing.assert_allclose(out.asnumpy(), a * b + np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(grads[0].asnumpy(), b + np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(grads[1].asnumpy(), a, rtol=1e-5)
    g = cag.grad(lambda u, v, k: u * k, argnum=[0])(x, y, 3.0)
    assert len(g) == 1
    np.testing.assert_allclose(g[0].asnumpy(), np.full((3, 4), 3.0))
    with pytest.raises(AssertionError):
        cag.grad(lambda u: u)(1.0)


def test_mark_variables_backward_with_out_grads_and_add():
    x = nd.ones((3, 2))
    dx = nd.zeros_like(x)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        a, b, c = nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
        cag.backward([a, b, c], [None, nd.array([2, 3]), nd.array([4, 5])])
    np.testing.assert_array_equal(dx.asnumpy(), [[1, 1], [2, 3], [4, 5]])
    with pytest.raises(AssertionError):
        cag.backward(a)

    dx[:] = 0
    cag.mark_variables([x], [dx], grad_reqs='add')
    with cag.train_section():
        y = x * 2
        cag.backward([y], retain_graph=True)
        cag.compute_gradient([y])
    np.testing.assert_array_equal(dx.asnumpy(), np.full((3, 2), 4.0))  # two passes of d(2x)/dx


def test_fresh_grad_of_a_marked_variable():
    x, y = nd.ones((2, 2)), nd.ones((2, 2))
    cag.mark_variables([x, y], [nd.zeros((2, 2)), nd.zeros((2, 2))])
    assert not x._fresh_grad
    with cag.train_section():
        z = x.detach() + y
    z.backward()
    assert y._fresh_grad and not x._fresh_grad
    y._fresh_grad = False
    assert not y._fresh_grad
