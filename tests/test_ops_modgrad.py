"""_mod_lgrad / _mod_rgrad, the factors of mod's gradient rule: MXNet's mod_grad and mod_rgrad
(1 and -floor(lhs / rhs) for float types, 0 for integer types), broadcasting."""
import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['_mod_lgrad', '_mod_rgrad']

SHAPES = [((0,), (0,)), ((1,), (1,)), ((5,), (5,)), ((3, 4), (1, 4)), ((2, 1, 3), (4, 1))]
FLOATS = ['float16', 'float32', 'float64']
INTS = ['int8', 'uint8', 'int32', 'int64']


def _data(rng, shape, dtype):
    v = rng.integers(1, 9, shape) * rng.choice([-1, 1], shape)
    if dtype == 'uint8':
        v = np.abs(v)
    if dtype in FLOATS:
        v = v + rng.uniform(-0.5, 0.5, shape)
    return v.astype(dtype)


@pytest.mark.parametrize('dtype', FLOATS + INTS)
@pytest.mark.parametrize('sa,sb', SHAPES)
def test_mod_grad_factors(rng, dtype, sa, sb):
    a, b = _data(rng, sa, dtype), _data(rng, sb, dtype)
    lg = mx.nd._mod_lgrad(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype))
    rg = mx.nd._mod_rgrad(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype))
    out_shape = np.broadcast_shapes(sa, sb)
    assert lg.shape == out_shape and rg.shape == out_shape
    assert lg.dtype == np.dtype(dtype) and rg.dtype == np.dtype(dtype)
    if dtype in INTS:
        np.testing.assert_array_equal(lg.asnumpy(), np.zeros(out_shape))
        np.testing.assert_array_equal(rg.asnumpy(), np.zeros(out_shape))
    else:
        np.testing.assert_array_equal(lg.asnumpy(), np.ones(out_shape))
        # float16 inputs are computed in float32, as the element-wise driver does
        ct = np.float64 if dtype == 'float64' else np.float32
        want = -np.floor(a.astype(ct) / b.astype(ct))
        np.testing.assert_array_equal(rg.asnumpy(), want.astype(dtype))


def test_mod_grad_factors_are_not_differentiable():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd._mod_rgrad(x, x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(2))


@pytest.mark.parametrize('dtype', ['int32', 'int64'])
def test_integer_mod_passes_no_gradient(dtype):
    # MXNet 1.9.1 gives zero gradients for integer mod (its mod_grad/mod_rgrad return 0).
    a = mx.nd.array([[7, 5, -3]], dtype=dtype)
    b = mx.nd.array([[2], [3]], dtype=dtype)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_mod(a, b)
    y.backward(mx.nd.ones((2, 3), dtype=dtype) * 2)
    np.testing.assert_array_equal(a.grad.asnumpy(), np.zeros((1, 3)))
    np.testing.assert_array_equal(b.grad.asnumpy(), np.zeros((2, 1)))
