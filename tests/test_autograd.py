"""mx.autograd: the imperative tape, backward/grad, grad_req, retained graphs, higher order,
and a hybridized block as one tape node whose planned backward equals the imperative one."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, nd
from hybridgluon.gluon import nn


def test_record_scopes_and_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()


def test_backward_matches_analytic_gradient():
    a = np.random.default_rng(0).standard_normal((3, 4))
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = (nd.exp(x) * x + nd.sin(x)).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp(a) * (1 + a) + np.cos(a), rtol=1e-5)
    assert x.grad._fresh_grad


def test_head_grads_and_broadcast():
    x, b = nd.array([[1., 2., 3.], [4., 5., 6.]]), nd.array([10., 20., 30.])
    x.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = x * b
    y.backward(nd.array([[1., 0., 2.], [0., 1., 1.]]))
    np.testing.assert_allclose(x.grad.asnumpy(), [[10., 0., 60.], [0., 20., 30.]])
    np.testing.assert_allclose(b.grad.asnumpy(), [1., 5., 12.])


def test_grad_req_add_accumulates_and_write_overwrites():
    x = nd.array([1., 2.])
    x.attach_grad(grad_req='add')
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * 2 * np.array([1., 2.]))
    x.attach_grad()
    for _ in range(2):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2., 4.])


def test_retain_graph():
    x = nd.array([3.])
    x.attach_grad()
    with autograd.record():
        y = x * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.])
    with pytest.raises(mx.MXNetError, match='retain_graph=True'):
        y.backward()


def test_autograd_grad_and_second_order():
    a = np.array([0.5, -1.0, 2.0])
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = x * x * x
        dy = autograd.grad(y, [x], create_graph=True)[0]
        z = dy.sum()
    np.testing.assert_allclose(dy.asnumpy(), 3 * a * a, rtol=1e-6)
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * a, rtol=1e-6)


def test_grad_does_not_touch_buffers():
    x = nd.array([1., 2.])
    x.attach_grad()
    with autograd.record():
        y = (x * 3).sum()
    g = autograd.grad(y, x)
    assert isinstance(g, list) and len(g) == 1  # a list for one variable too, as MXNet 1.9.1
    np.testing.assert_allclose(g[0].asnumpy(), [3., 3.])
    np.testing.assert_allclose(x.grad.asnumpy(), [0., 0.])


def test_detach_and_blockgrad_stop_gradients():
    x = nd.array([1., 2.])
    x.attach_grad()
    with autograd.record():
        y = (x * x.detach()).sum() + (x * nd.BlockGrad(x)).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2., 4.])


def test_errors():
    x = nd.array([1., 2.])
    with pytest.raises(mx.MXNetError, match='not in a computational graph'):
        x.backward()
    x.attach_grad()
    y = x * 2  # not recorded
    with pytest.raises(mx.MXNetError, match='not in a computational graph'):
        y.backward()
    with autograd.record():
        z = x * 2
    with pytest.raises(mx.MXNetError, match='head_grads'):
        z.backward(nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='grad_req'):
        x.attach_grad(grad_req='sometimes')
    c = nd.array([1.])
    with autograd.record():
        w = z.sum()
    with pytest.raises(mx.MXNetError, match='not a marked variable'):
        autograd.grad(w, [c])


def test_get_symbol():
    x = nd.array([1., 2.])
    x.attach_grad()
    with autograd.record():
        y = nd.relu(x * 2)
    s = autograd.get_symbol(y)
    assert 'relu' in s.tojson() and '_mul_scalar' in s.tojson()


def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(16, activation='relu'), nn.Dense(8, activation='tanh'), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def _grads(net, x, label):
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(x), label)
    loss.backward()
    return loss.asnumpy(), {k: p.grad().asnumpy().copy() for k, p in
                            net.collect_params().items()}


def test_hybridized_gradients_equal_imperative():
    net = _mlp()
    x = nd.random.normal(shape=(5, 7))
    label = nd.array([0, 2, 1, 1, 0])
    l1, g1 = _grads(net, x, label)
    net.hybridize()
    l2, g2 = _grads(net, x, label)
    np.testing.assert_allclose(l1, l2, rtol=1e-6)
    for k in g1:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-5, atol=1e-7, err_msg=k)
    st = net._cached_op.stats()['training']
    # the backward keeps only what it reads: fewer values than the forward makes
    assert 0 < st['saved_activations'] <= 6
    assert st['backward_kernels'] > 0


def test_hybridized_block_input_gradient():
    net = _mlp()
    x = nd.random.normal(shape=(2, 7))
    x.attach_grad()
    with autograd.record():
        y = net(x).sum()
    y.backward()
    g1 = x.grad.asnumpy().copy()
    net.hybridize()
    with autograd.record():
        y = net(x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), g1, rtol=1e-5, atol=1e-7)


def test_dropout_follows_train_mode_when_hybridized():
    net = nn.HybridSequential()
    net.add(nn.Dropout(0.5))
    net.hybridize()
    x = nd.ones((200,))
    np.testing.assert_array_equal(net(x).asnumpy(), 1)       # predict: identity
    with autograd.record():
        y = net(x).asnumpy()
    assert 50 < (y == 0).sum() < 150 and set(np.unique(y)) <= {0., 2.}
    with autograd.train_mode():
        assert (net(x).asnumpy() == 0).any()


def test_fresh_grad_is_read_on_the_variable():
    """backward marks the variable itself fresh (MXNet's _fresh_grad lives on the variable);
    clearing it there clears the buffer's flag, and a variable backward does not reach (behind
    detach) stays not fresh."""
    x, y = mx.nd.ones((2, 2)), mx.nd.ones((2, 2))
    mx.autograd.mark_variables([x, y], [mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))])
    assert not x._fresh_grad and not y._fresh_grad
    with mx.autograd.record():
        (x + 2 + y).backward()
    assert x._fresh_grad and y._fresh_grad and x.grad._fresh_grad
    x._fresh_grad = False
    y._fresh_grad = False
    assert not x.grad._fresh_grad and not y._fresh_grad
    with mx.autograd.record():
        ((x + 2).detach() + y).backward()
    assert y._fresh_grad and not x._fresh_grad


def test_output_of_a_freed_graph_is_a_constant_later():
    """After backward without retain_graph, an intermediate of that graph used in a new
    recording is a constant (MXNet clears its history): no 'graph freed' error, and no
    gradient through it; the old head itself still cannot be differentiated again."""
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        b = x * 3
        y = b * 2
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 6])
    with mx.autograd.record():
        z = (b + 1) * x
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4, 7])  # b + 1, b taken as a constant
    with pytest.raises(mx.MXNetError, match='freed'):
        y.backward()


class _DivMul(mx.autograd.Function):
    """(x / y, x * y) with its hand-written gradient."""

    def forward(self, x, y):
        self.save_for_backward(x, y)
        return x / y, x * y

    def backward(self, dm, dn):
        x, y = self.saved_tensors
        assert not mx.autograd.is_recording()  # backward runs with recording paused
        return dm / y + dn * y, dn * x - dm * x / y / y


def test_function_gradient_matches_the_ops():
    rng = np.random.default_rng(2)
    xv, yv = rng.uniform(0.5, 2, size=(4, 3)), rng.uniform(0.5, 2, size=(4, 3))
    hm, hn = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    x, y = mx.nd.array(xv, dtype='float64'), mx.nd.array(yv, dtype='float64')
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        m, n = _DivMul()(x, y)
        z = (m * mx.nd.array(hm, dtype='float64') + n * mx.nd.array(hn, dtype='float64')).sum()
    z.backward()
    np.testing.assert_allclose(m.asnumpy(), xv / yv)
    np.testing.assert_allclose(x.grad.asnumpy(), hm / yv + hn * yv, rtol=1e-12)
    np.testing.assert_allclose(y.grad.asnumpy(), hn * xv - hm * xv / yv ** 2, rtol=1e-12)


def test_function_single_output_chain_and_outside_record():
    class AddOne(mx.autograd.Function):
        def forward(self, x):
            return x + 1

        def backward(self, dy):
            return dy * 3  # a deliberately different gradient: it must be the one used

    x = mx.nd.ones((2, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = x
        for _ in range(3):
            y = AddOne()(y)
        (y * 2).backward()
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 2), 4))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 2), 54))
    with mx.autograd.record():
        c = AddOne()(mx.nd.zeros((2,)))  # no input in the graph: nothing recorded
    np.testing.assert_array_equal(c.asnumpy(), [1, 1])
    assert AddOne()(mx.nd.zeros((2,))).asnumpy().tolist() == [1, 1]


def test_function_errors():
    class BadShape(mx.autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            return mx.nd.ones((5,))

    class Raises(mx.autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            raise RuntimeError('no gradient today')

    f = BadShape()
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = f(x)
    with pytest.raises(mx.MXNetError, match='gradient 0 has shape'):
        y.backward()
    with pytest.raises(mx.MXNetError, match='only be called once'):
        f(x)
    with mx.autograd.record():
        y = Raises()(x)
    with pytest.raises(mx.MXNetError, match='no gradient today'):
        y.backward()


def test_function_backward_recorded_by_create_graph_outlives_the_call():
    """create_graph records the Function's backward node; it keeps the call's record alive
    after the forward arrays are gone, and differentiating it again is a clear error (a
    Function's backward has no gradient), not a crash."""
    import gc

    class Sq(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            x, = self.saved_tensors
            return 2 * x * dy

    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = Sq()(x)
        g = mx.autograd.grad(y, x, create_graph=True)[0]
    np.testing.assert_array_equal(g.asnumpy(), [2, 4])
    del y
    gc.collect()
    with pytest.raises(mx.MXNetError, match='has no gradient'):
        g.backward()


def test_gradient_written_into_buffer_it_reads():
    """backward writes a 'write' gradient straight into the variable's buffer, except when the
    backward pass reads that buffer: here x.grad is a constant operand of the product."""
    rng = np.random.RandomState(3)
    r = rng.rand(4, 4)
    x = nd.array(rng.rand(4, 4), dtype='float64')
    x.attach_grad()
    x.grad[:] = r
    buf = x.grad
    with autograd.record():
        y = nd.dot(x, x.grad)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.ones((4, 4)) @ r.T, rtol=1e-12)
    np.testing.assert_array_equal(buf.asnumpy(), x.grad.asnumpy())
    # An ordinary parameter gradient lands in the same buffer, run after run.
    w = nd.array(rng.rand(3, 5), dtype='float64')
    w.attach_grad()
    wbuf = w.grad
    for k in (1.0, 2.0):
        with autograd.record():
            z = (w * k).sum()
        z.backward()
        np.testing.assert_array_equal(w.grad.asnumpy(), np.full((3, 5), k))
        np.testing.assert_array_equal(wbuf.asnumpy(), np.full((3, 5), k))


def test_autograd_grad_leaves_grad_buffers_alone():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    x.attach_grad()
    x.grad[:] = 7
    with autograd.record():
        y = (x * x).sum()
    (g,) = autograd.grad(y, [x])
    np.testing.assert_allclose(g.asnumpy(), 2 * x.asnumpy())
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 2), 7.0))
