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


# ---- nd.save: the device id goes into the file; nd.load gives cpu(0) -------------------------

# nd.save(f, [nd.array([1, 2], ctx=mx.cpu(3))])
MX_LIST_CPU3 = ('120100000000000000000000000000000100000000000000c9fa93f900000000010000000200000000'
                '0000000100000003000000000000000000803f000000400000000000000000')
# nd.save(f, {'w': nd.array([[1, 2], [3, 4]], ctx=mx.cpu(1)),
#             'b': nd.array([7], ctx=mx.cpu(0), dtype='int32')})
MX_DICT_CPU1 = ('120100000000000000000000000000000200000000000000c9fa93f9000000000200000002000000'
                '0000000002000000000000000100000001000000000000000000803f000000400000404000008040'
                'c9fa93f9000000000100000001000000000000000100000000000000040000000700000002000000'
                '00000000010000000000000077010000000000000062')
# x = nd.array([1, 2], ctx=mx.cpu(2)); nd.save(f, [x[0:1], x.reshape((1, 2))])
MX_VIEWS_CPU2 = ('120100000000000000000000000000000200000000000000c9fa93f9000000000100000001000000'
                 '000000000100000002000000000000000000803fc9fa93f900000000020000000100000000000000'
                 '02000000000000000100000002000000000000000000803f000000400000000000000000')


def _saved(tmp_path, data):
    path = str(tmp_path / 'a.params')
    nd.save(path, data)
    with open(path, 'rb') as f:
        return f.read()


def test_save_writes_device_id(tmp_path):
    assert _saved(tmp_path, [nd.array([1, 2], ctx=mx.cpu(3))]) == bytes.fromhex(MX_LIST_CPU3)
    d = {'w': nd.array([[1, 2], [3, 4]], ctx=mx.cpu(1)),
         'b': nd.array([7], ctx=mx.cpu(0), dtype='int32')}
    assert _saved(tmp_path, d) == bytes.fromhex(MX_DICT_CPU1)


def test_save_views_write_their_arrays_device(tmp_path):
    x = nd.array([1, 2], ctx=mx.cpu(2))
    assert _saved(tmp_path, [x[0:1], x.reshape((1, 2))]) == bytes.fromhex(MX_VIEWS_CPU2)


def test_load_puts_arrays_on_cpu0(tmp_path):
    path = tmp_path / 'mx.params'
    path.write_bytes(bytes.fromhex(MX_DICT_CPU1))
    loaded = nd.load(str(path))
    assert {k: v.context for k, v in loaded.items()} == {'w': mx.cpu(0), 'b': mx.cpu(0)}
    np.testing.assert_array_equal(loaded['w'].asnumpy(), [[1, 2], [3, 4]])
    path.write_bytes(bytes.fromhex(MX_LIST_CPU3))
    assert nd.load(str(path))[0].context == mx.cpu(0)


def test_save_parameters_from_cpu1_writes_cpu0(tmp_path):
    # Gluon reduces parameters to cpu(0) before saving: MXNet writes device id 0 here.
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5), ctx=mx.cpu(1))
    path = str(tmp_path / 'net.params')
    net.save_parameters(path)
    with open(path, 'rb') as f:
        head = f.read(64)
    # Record 1: magic, dense, ndim 2, (2, 3), device type 1, device id 0, float32 (flag 0).
    assert head.hex() == ('120100000000000000000000000000000200000000000000c9fa93f900000000'
                          '0200000002000000000000000300000000000000010000000000000000000000')


# ---- the executor: fresh outputs on the device of the plan's first input ---------------------

def _fc_group():
    x, w = mx.sym.var('x'), mx.sym.var('w')
    y = mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True) + 1
    return mx.sym.Group([y, x])  # x is also an output: the executor copies it


@pytest.mark.parametrize('record', [False, True])
def test_cached_op_outputs_on_input_device(record):
    from hybridgluon import _core
    op = _core.CachedOp(_fc_group(), ['x', 'w'])
    x, w = nd.ones((1, 3), ctx=mx.cpu(1)), nd.ones((2, 3), ctx=mx.cpu(1))
    if record:
        x.attach_grad()
        with autograd.record():
            out = op._call_all(x, w)
    else:
        out = op._call_all(x, w)
    assert [o.context for o in out] == [mx.cpu(1), mx.cpu(1)]
    np.testing.assert_allclose(out[0].asnumpy(), [[4., 4.]])
    out = op._call_all(nd.ones((1, 3)), nd.ones((2, 3)))
    assert [o.context for o in out] == [mx.cpu(0), mx.cpu(0)]


@pytest.mark.parametrize('static_alloc', [False, True])
def test_hybridized_block_on_cpu2(static_alloc):
    # MXNet 1.9.1: a hybridized Dense initialised and called on cpu(2) answers on cpu(2), and
    # its parameters' gradients stay there.
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5), ctx=mx.cpu(2))
    net.hybridize(static_alloc=static_alloc)
    x = nd.ones((4, 3), ctx=mx.cpu(2))
    with autograd.record():
        y = net(x)
    y.backward()
    assert y.context == mx.cpu(2)
    assert net.weight.grad(mx.cpu(2)).context == mx.cpu(2)
    np.testing.assert_allclose(y.asnumpy(), np.full((4, 2), 1.5))
