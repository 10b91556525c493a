"""mx.np / mx.npx / mx.nd.sparse: importable, refusing what needs NumPy semantics or sparse
storage with a clear MXNetError, and giving MXNet's dense results where MXNet has them."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import util
from hybridgluon.ndarray import sparse


def test_np_and_npx_import_and_refuse_every_public_name():
    import hybridgluon.numpy as mnp
    import hybridgluon.numpy_extension as npx
    assert mx.np is mnp and mx.npx is npx
    for mod, name in ((mnp, 'array'), (mnp, 'random'), (npx, 'relu')):
        with pytest.raises(mx.MXNetError, match='mx.np / mx.npx .* not supported'):
            getattr(mod, name)
        assert not hasattr(mod, name)  # also an AttributeError
    with pytest.raises(AttributeError):
        mnp._private


def test_use_np_decorators_refuse_when_used_not_when_applied():
    @util.use_np
    def f():
        return 1

    @util.use_np
    class Block(mx.gluon.HybridBlock):
        pass
    assert f.__name__ == 'f'
    with pytest.raises(mx.MXNetError, match='use_np'):
        f()
    with pytest.raises(mx.MXNetError, match='use_np'):
        Block()
    assert mx.use_np is util.use_np and util.use_np_array is mx.use_np_array


def test_sparse_constructors_refuse():
    for call in (lambda: sparse.csr_matrix(([1.0], [0], [0, 1]), shape=(1, 2)),
                 lambda: sparse.row_sparse_array(([[1.0]], [0]), shape=(2, 1)),
                 lambda: sparse.zeros('csr', (2, 2)), lambda: sparse.empty('row_sparse', (2,)),
                 lambda: sparse.array(mx.nd.ones((2, 2))),
                 lambda: sparse.retain(mx.nd.ones((3, 2)), mx.nd.array([0])),
                 lambda: sparse.cast_storage(mx.nd.ones((2, 2)), 'csr'),
                 lambda: sparse.CSRNDArray(), lambda: mx.nd.sparse.RowSparseNDArray()):
        with pytest.raises(mx.MXNetError, match='sparse storage'):
            call()
    with pytest.raises(mx.MXNetError, match='unknown storage type'):
        sparse.zeros('dense', (2,))
    assert not isinstance(mx.nd.ones((2,)), sparse.BaseSparseNDArray)


def test_sparse_dense_paths_give_mxnet_results():
    z = sparse.zeros('default', (2, 3), dtype='float64')
    assert type(z) is mx.nd.NDArray and z.dtype == np.float64 and z.stype == 'default'
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((2, 3)))
    a = np.random.RandomState(0).rand(3, 4).astype(np.float32)
    b = np.random.RandomState(1).rand(1, 4).astype(np.float32)
    x, y = mx.nd.array(a), mx.nd.array(b)
    c = sparse.cast_storage(x, 'default')
    np.testing.assert_array_equal(c.asnumpy(), a)
    c[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), a)  # a copy, not the same memory
    np.testing.assert_allclose(sparse.add(x, y).asnumpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(sparse.subtract(x, x).asnumpy(), np.zeros_like(a))
    np.testing.assert_allclose(sparse.multiply(x, 2).asnumpy(), a * 2, rtol=1e-6)
    np.testing.assert_allclose(sparse.divide(x, y).asnumpy(), a / b, rtol=1e-6)
    np.testing.assert_allclose(sparse.dot(x, mx.nd.array(a.T)).asnumpy(), a @ a.T, rtol=1e-5)
    assert repr(mx.nd.sparse.elemwise_add) == repr(mx.nd.elemwise_add)
