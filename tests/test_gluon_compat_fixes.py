"""Gluon behaviour MXNet 1.9.1's own tests rely on: None arguments of a hybridized block,
row_sparse accessors of dense parameters, initializer equality of shared parameters."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon


class _AddMaybe(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b=None):
        return a if b is None else a + b


@pytest.mark.parametrize('hybridize', [False, True])
def test_trailing_none_argument_matches_a_left_out_default(hybridize):
    net = _AddMaybe()
    if hybridize:
        net.hybridize()
    x = mx.nd.array([1.0, 2.0])
    np.testing.assert_array_equal(net(x, None).asnumpy(), [1, 2])
    np.testing.assert_array_equal(net(x).asnumpy(), [1, 2])      # same cached graph
    np.testing.assert_array_equal(net(x, None).asnumpy(), [1, 2])
    if hybridize:
        with pytest.raises(ValueError, match='argument structure'):
            net(x, x)  # the cached graph has no second input


def test_none_first_argument_hybridized_agrees_with_imperative():
    a, b = _AddMaybe(), _AddMaybe()
    a.hybridize()
    x = mx.nd.array([3.0])

    class NoneFirst(gluon.HybridBlock):
        def hybrid_forward(self, F, p, q):
            return q * 2 if p is None else p + q
    n1, n2 = NoneFirst(), NoneFirst()
    n1.hybridize()
    for _ in range(2):
        np.testing.assert_array_equal(n1(None, x).asnumpy(), n2(None, x).asnumpy())
    with pytest.raises(ValueError):
        n1(x, x)
    assert a(x).asscalar() == b(x).asscalar() == 3.0


def test_row_sparse_accessors_refuse_dense_parameters():
    p = gluon.Parameter('w', shape=(4, 2))
    p.initialize()
    with pytest.raises(RuntimeError, match='storage type is default'):
        p.row_sparse_data(mx.nd.array([0, 1]))
    with pytest.raises(RuntimeError, match='storage type is default'):
        p.list_row_sparse_data(mx.nd.array([0]))
    q = gluon.Parameter('v', shape=(4, 2), stype='row_sparse')
    q.initialize()
    with pytest.raises(mx.MXNetError, match='row_sparse storage'):
        q.row_sparse_data(mx.nd.array([0]))


def test_initializers_compare_by_kind_and_arguments():
    assert mx.init.Constant(-1.0) == mx.init.Constant(-1.0)
    assert mx.init.Constant(-1.0) != mx.init.Constant(2.0)
    assert mx.init.Xavier() != mx.init.Uniform()
    assert mx.init.Normal(0.5) != 'normal'

    class MyBlock(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.param = self.params.get('param', shape=(1,), init=mx.init.Constant(-3.0))
    a = MyBlock()
    b = MyBlock(params=a.collect_params())   # shares: the same initializer compares equal
    assert a.param is b.param


def test_nn_exports_the_block_classes_and_squeeze_inplace():
    assert gluon.nn.SymbolBlock is gluon.SymbolBlock and gluon.nn.HybridBlock is gluon.HybridBlock
    x = mx.nd.ones((2, 1, 3))
    for inplace in (False, True):  # MXNet's keyword is accepted (the result is a view here)
        assert x.squeeze(inplace=inplace).shape == (2, 3)


def _feature_net():
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                backbone = gluon.nn.HybridSequential()
                with backbone.name_scope():
                    backbone.add(gluon.nn.Dense(4, in_units=3), gluon.nn.Dense(2, in_units=4))
                data = mx.sym.var('data')
                self.backbone = gluon.SymbolBlock(backbone(data), data,
                                                  params=backbone.collect_params())

        def hybrid_forward(self, F, x):
            return self.backbone(x)
    return Net()


def test_symbol_block_structural_names_drop_the_common_prefix(tmp_path):
    net1 = _feature_net()
    net1.initialize(mx.init.Normal())
    net1.hybridize()
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3))
    out = net1(x).asnumpy()
    keys = sorted(net1.backbone._reg_params)
    assert keys == ['0_bias', '0_weight', '1_bias', '1_weight']  # character-wise, as MXNet
    f = str(tmp_path / 'net.params')
    net1.save_parameters(f)
    net2 = _feature_net()  # another automatic prefix (hybridsequentialN_)
    net2.load_parameters(f)
    np.testing.assert_allclose(net2(x).asnumpy(), out, rtol=1e-6)


def test_symbol_block_refuses_row_sparse_variables():
    data = mx.sym.var('data')
    weight = mx.sym.var('weight', stype='row_sparse')
    with pytest.raises(AssertionError, match="'weight'.*row_sparse"):
        gluon.SymbolBlock(mx.sym.dot(data, weight), data)


def test_reset_arrays_zeroes_in_place():
    rng = np.random.RandomState(2)
    arrs = [mx.nd.array(rng.rand(*s), dtype=d) for s, d in
            (((2, 3), 'float32'), ((4,), 'float16'), ((1, 2, 2), 'float64'), ((0, 3), 'float32'))]
    views = [a.reshape((-1,)) for a in arrs]
    assert mx.nd.reset_arrays(*arrs, num_arrays=len(arrs)) == []
    for a, v, d in zip(arrs, views, ('float32', 'float16', 'float64', 'float32')):
        assert a.dtype == np.dtype(d)
        np.testing.assert_array_equal(a.asnumpy(), np.zeros(a.shape))
        np.testing.assert_array_equal(v.asnumpy(), np.zeros(v.shape))  # the same memory
    with pytest.raises(mx.MXNetError, match='reset_arrays expects 3 input'):
        mx.nd.reset_arrays(*arrs[:2], num_arrays=3)
