"""_identity_with_attr_like_rhs: lhs unchanged, rhs only lends its shape (forward against
NumPy for every dtype and the shape tie that lets
MXNet's backward inference reach a weight computed from a variable of unknown shape)."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd, sym

OPS_COVERED = ['_identity_with_attr_like_rhs']

_DTYPES = ['float32', 'float64', 'float16', 'int32', 'int64', 'int8', 'uint8']


@pytest.mark.parametrize('dtype', _DTYPES)
@pytest.mark.parametrize('shape', [(3, 4), (2, 3, 5), (1,), (0, 3)])
def test_forward_returns_lhs(dtype, shape):
    rng = np.random.RandomState(0)
    a = (rng.uniform(-50, 50, shape)).astype(dtype)
    b = np.zeros(shape, dtype)
    out = nd._internal._identity_with_attr_like_rhs(nd.array(a, dtype=dtype),
                                                    nd.array(b, dtype=dtype))
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    np.testing.assert_array_equal(out.asnumpy(), a)


def test_shape_mismatch_is_an_error():
    with pytest.raises(mx.MXNetError, match='shape'):
        nd._internal._identity_with_attr_like_rhs(nd.ones((2, 3)), nd.ones((3, 2)))


def test_ties_shapes_for_backward_inference():
    w = sym.var('weight')
    wt = sym.broadcast_add(w, sym.var('wshift', shape=(1,)))
    wt = sym._internal._identity_with_attr_like_rhs(wt, w)
    net = sym.FullyConnected(sym.var('data'), weight=wt, num_hidden=7, no_bias=True)
    arg, out, _ = net.infer_shape(data=(5, 9))
    assert dict(zip(net.list_arguments(), arg))['weight'] == (7, 9)
    assert out == [(5, 7)]
