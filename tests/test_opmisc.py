"""Fixes for MXNet 1.9.1 semantics found by its unit tests: integer gradients through
broadcast ops, gradient buffers of another dtype, and the smaller pieces that follow."""
import numpy as np
import pytest

import hybridgluon as mx


@pytest.mark.parametrize('dtype', ['int32', 'int64', 'int8', 'uint8'])
def test_int_broadcast_gradient_is_summed(dtype):
    rng = np.random.default_rng(1)
    a_np = rng.integers(1, 5, (3, 4, 2)).astype(dtype)
    b_np = rng.integers(1, 5, (4, 1)).astype(dtype)
    head = rng.integers(0, 4, (3, 4, 2)).astype(dtype)
    a, b = mx.nd.array(a_np, dtype=dtype), mx.nd.array(b_np, dtype=dtype)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_add(a, b)
    y.backward(mx.nd.array(head, dtype=dtype))
    assert a.grad.dtype == np.dtype(dtype) and b.grad.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.grad.asnumpy(), head)
    want = head.astype(np.int64).sum(axis=(0, 2)).reshape(4, 1).astype(dtype)
    np.testing.assert_array_equal(b.grad.asnumpy(), want)


@pytest.mark.parametrize('req', ['write', 'add'])
def test_gradient_buffer_of_another_dtype(req):
    x_np = np.array([[0.5, -1.0, 2.0]], dtype=np.float16)
    x = mx.sym.var('x')
    y = x * x
    grad = mx.nd.ones((1, 3), dtype='float64')
    exe = y.bind(mx.cpu(), args={'x': mx.nd.array(x_np, dtype='float16')},
                 args_grad={'x': grad}, grad_req=req)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1, 3), dtype='float16'))
    want = 2 * x_np.astype(np.float64) + (1 if req == 'add' else 0)
    assert grad.dtype == np.float64
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-3)


def test_gradient_buffer_must_have_the_shape():
    x = mx.nd.ones((2, 2))
    with pytest.raises(mx.base.MXNetError, match='shape'):
        mx.autograd.mark_variables([x], [mx.nd.zeros((2, 3))])


def test_ctc_labels_and_lengths_truncate_to_integers():
    # MXNet reads labels and lengths as int (C++ truncation): 2.001 is class 2, 1.9 is 1.
    rng = np.random.default_rng(2)
    x = mx.nd.array(rng.standard_normal((5, 2, 4)))
    want = mx.nd.CTCLoss(x, mx.nd.array([[2, 3, 0], [1, 0, 0]])).asnumpy()
    got = mx.nd.CTCLoss(x, mx.nd.array([[2.001, 3.9, 0.5], [1.2, 0.3, 0]])).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    lens = mx.nd.CTCLoss(x, mx.nd.array([[2, 3, 0], [1, 0, 0]]), mx.nd.array([5.7, 3.2]),
                         use_data_lengths=True).asnumpy()
    ref = mx.nd.CTCLoss(x, mx.nd.array([[2, 3, 0], [1, 0, 0]]), mx.nd.array([5, 3]),
                        use_data_lengths=True).asnumpy()
    np.testing.assert_allclose(lens, ref, rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match=r'label\[0, 0\] = 4 is not a class'):
        mx.nd.CTCLoss(x, mx.nd.array([[4.5, 0, 0], [1, 0, 0]]))


def test_get_all_registered_operators():
    from hybridgluon.operator import get_all_registered_operators
    ops = get_all_registered_operators()
    assert isinstance(ops, list) and len(ops) == len(set(ops))
    for name in ('Activation', 'Dropout', 'CTCLoss', 'ctc_loss', '_Plus', 'elemwise_add'):
        assert name in ops
    from hybridgluon.operator import get_operator_arguments
    for name in ops:  # every listed name is one the registry resolves
        assert get_operator_arguments(name).narg >= 0


def test_get_operator_arguments_formats():
    # The strings are those MXNet 1.9.1's get_operator_arguments gives for these ops.
    from hybridgluon.operator import OperatorArguments, get_operator_arguments
    act = get_operator_arguments('Activation')
    assert isinstance(act, OperatorArguments)
    assert act == (2, ['data', 'act_type'],
                   ['NDArray-or-Symbol',
                    "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"])
    drop = get_operator_arguments('Dropout')
    assert drop.names == ['data', 'p', 'mode', 'axes', 'cudnn_off']
    assert drop.types[1:4] == ['float, optional, default=0.5',
                               "{'always', 'training'},optional, default='training'",
                               'Shape(tuple), optional, default=[]']
    assert get_operator_arguments('take').types[2:] == [
        "int, optional, default='0'", "{'clip', 'raise', 'wrap'},optional, default='clip'"]
    assert get_operator_arguments('sum').types[1:] == [
        'Shape or None, optional, default=None', 'boolean, optional, default=0',
        'boolean, optional, default=0']
    assert get_operator_arguments('Concat').types[0] == 'NDArray-or-Symbol[]'
    assert get_operator_arguments('ctc_loss') == get_operator_arguments('CTCLoss')
    assert get_operator_arguments('clip').types[1:] == ['float, required', 'float, required']
    with pytest.raises(mx.base.MXNetError, match='nope is not registered'):
        get_operator_arguments('nope')


def test_engine_bulk_size_is_per_thread_and_restored():
    import threading
    assert mx.engine.set_bulk_size(5) == 0
    assert mx.engine.set_bulk_size(0) == 5
    seen = []
    mx.engine.set_bulk_size(4)
    t = threading.Thread(target=lambda: seen.append(mx.engine.set_bulk_size(7)))
    t.start()
    t.join()
    assert seen == [0]  # another thread starts from 0, as in MXNet
    with mx.engine.bulk(10):
        assert mx.engine.set_bulk_size(10) == 10
        x = mx.nd.ones((3,))
        for _ in range(20):
            x += 1
    assert mx.engine.set_bulk_size(0) == 4
    np.testing.assert_array_equal(x.asnumpy(), np.full(3, 21.0))
    with pytest.raises(mx.base.MXNetError, match='>= 0'):
        mx.engine.set_bulk_size(-1)


def test_head_gradient_of_another_dtype_enters_as_is():
    # MXNet 1.9.1: a float32 head gradient of an int32 Cast output reaches _backward_Cast
    # unrounded (x.grad == 2.7), and index_array's int64 output takes a float32 one.
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = x.astype('int32')
    y.backward(mx.nd.full((2, 3), 2.7))
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((2, 3), 2.7, np.float32))
    with mx.autograd.record():
        z = mx.nd.contrib.index_array(x)
    assert z.dtype == np.int64
    z.backward(mx.nd.ones(z.shape))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros((2, 3)))
    with mx.autograd.record():
        y = x.astype('int32')
    with pytest.raises(mx.base.MXNetError, match='head_grads'):
        y.backward(mx.nd.ones((3, 2)))


@pytest.mark.parametrize('dtype', ['int8', 'uint8', 'int32', 'int64'])
@pytest.mark.parametrize('shape,like', [((0, 3), (1, 3)), ((1,), (1,)), ((4, 5), (5,)),
                                        ((3, 70, 2), (70, 1)), ((2, 3, 4), (2, 1, 4))])
def test_sum_to_like_integer_dtypes(dtype, shape, like):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 100, shape).astype(dtype)
    out = mx.nd._sum_to_like(mx.nd.array(x, dtype=dtype), mx.nd.zeros(like, dtype=dtype))
    lead = len(shape) - len(like)
    axes = tuple(range(lead)) + tuple(lead + d for d, n in enumerate(like)
                                      if n == 1 and shape[lead + d] != 1)
    # summed in int64, then wrapped to the dtype as C++ integer arithmetic does
    want = x.astype(np.int64).sum(axis=axes).reshape(like).astype(dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), want)
