"""The gradient graph builder (graph/grad.c) and the internal ops gradient rules emit."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

OPS_COVERED = ['_sum_to_like']
GRADS_COVERED = ['_sum_to_like']


@pytest.mark.parametrize('shape,like', [((3, 4), (1, 4)), ((3, 4), (4,)), ((2, 3, 4), (2, 1, 4)),
                                        ((2, 3, 4), (3, 1)), ((5,), (5,)), ((2, 3), (1, 1)),
                                        ((0, 3), (1, 3)), ((1,), (1,))])
def test_sum_to_like(shape, like):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    lk = np.zeros(like)
    for dt in ('float32', 'float64', 'float16'):
        out = mx.nd._sum_to_like(mx.nd.array(x, dtype=dt), mx.nd.array(lk, dtype=dt)).asnumpy()
        lead = len(shape) - len(like)
        axes = tuple(range(lead)) + tuple(lead + d for d, n in enumerate(like)
                                          if n == 1 and shape[lead + d] != 1)
        ref = x.astype(dt).astype('f8').sum(axis=axes).reshape(like)
        assert out.dtype == np.dtype(dt) and out.shape == like
        np.testing.assert_allclose(out, ref, rtol=1e-2 if dt == 'float16' else 1e-5, atol=1e-2)
    check_grad('_sum_to_like', [x, lk], wrt=[0])


def test_sum_to_like_bad_shapes():
    with pytest.raises(mx.MXNetError, match='cannot sum shape'):
        mx.nd._sum_to_like(mx.nd.ones((3, 4)), mx.nd.ones((2, 4)))
    with pytest.raises(mx.MXNetError, match='not supported'):
        mx.nd._sum_to_like(mx.nd.ones((3, 4), dtype='bool'), mx.nd.ones((4,), dtype='bool'))


def test_missing_rule_is_named():
    x = mx.sym.var('x')
    with pytest.raises(mx.MXNetError, match="node 'mynode'.*_backward_log_sigmoid has no "):
        mx.sym._backward_log_sigmoid(x, x, name='mynode')._gradient(['x'])


def test_input_without_gradient_gets_zeros():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    g = mx.sym._sum_to_like(a, b)._gradient(['a', 'b'])   # `like` only gives a shape
    out = g.eval(a=mx.nd.ones((2, 3)), b=mx.nd.ones((3,)))
    np.testing.assert_array_equal(out[0].asnumpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(out[1].asnumpy(), np.zeros(3))


def test_gradients_reaching_a_value_twice_are_summed():
    a = mx.sym.var('a')
    y = mx.sym._sum_to_like(a, a)
    g = mx.sym.Group([y, mx.sym._sum_to_like(y, a)])._gradient(['a'], ['h0', 'h1'])
    h0, h1 = np.arange(6.).reshape(2, 3), np.full((2, 3), 10.)
    out = g.eval(a=mx.nd.ones((2, 3)), h0=mx.nd.array(h0), h1=mx.nd.array(h1))
    np.testing.assert_allclose(out[0].asnumpy(), h0 + h1)
