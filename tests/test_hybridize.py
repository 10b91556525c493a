"""hybridize(): the first call traces hybrid_forward with Symbols, later calls run the cached
graph in C; results equal the imperative ones; export / SymbolBlock.imports round trips."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon, nd
from hybridgluon.gluon import nn


class SeedNet(gluon.HybridBlock):
    """The seed tutorial's pattern: layers, a params.get weight, reshape codes and F.dot."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0
        with self.name_scope():
            self.fc1 = nn.Dense(12)
            self.fc2 = nn.Dense(8, activation='tanh')
            self.fc3_weight = self.params.get('fc3_weight', shape=(5, 8))

    def hybrid_forward(self, F, x, fc3_weight):
        self.calls += 1
        x = x.reshape((0, -1))
        x = F.relu(self.fc1(x))
        x = self.fc2(x) * 2 + 1
        return F.dot(x, fc3_weight, transpose_b=True)


def _pair(factory, x, **init):
    mx.random.seed(3)
    a = factory()
    a.initialize(**init)
    ya = a(x)
    a.hybridize()
    return a, ya, a(x)


@pytest.mark.parametrize('factory', [
    lambda: nn.Dense(7),
    lambda: nn.Dense(7, activation='relu', in_units=6),
    lambda: nn.Dense(3, flatten=False),
    lambda: nn.Activation('sigmoid'),
    lambda: nn.Flatten(),
    lambda: nn.Dropout(0.5),
    lambda: nn.HybridLambda(lambda F, x: F.softmax(x) + 1),
    lambda: nn.HybridLambda('tanh'),
    SeedNet,
])
def test_hybridized_equals_imperative(factory):
    x = nd.random.uniform(shape=(4, 2, 3))
    _, ya, yb = _pair(factory, x)
    np.testing.assert_allclose(yb.asnumpy(), ya.asnumpy(), rtol=1e-6, atol=1e-6)


def test_hybrid_forward_runs_once_with_symbols():
    net = SeedNet()
    net.initialize()
    net.hybridize()
    seen = []
    orig = net.hybrid_forward

    def spy(F, x, **kw):
        seen.append(type(x).__name__)
        return orig(F, x, **kw)
    net.hybrid_forward = spy
    x = nd.ones((2, 6))
    for _ in range(5):
        net(x)
    assert seen == ['Symbol']          # traced once, then only C runs
    net(nd.ones((3, 6)))               # a new shape re-plans without re-tracing
    assert seen == ['Symbol']
    net.hybridize(False)
    net(x)
    assert seen == ['Symbol', 'NDArray']


def test_deferred_init_with_hybridize_first():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(16, activation='relu'), nn.Dense(4))
    net.initialize()
    net.hybridize()
    y = net(nd.ones((3, 10)))
    assert y.shape == (3, 4)
    assert net[0].weight.shape == (16, 10) and net[1].weight.shape == (4, 16)


def test_outputs_are_fresh_arrays():
    net = nn.Dense(3)
    net.initialize()
    net.hybridize()
    a = net(nd.ones((2, 4)))
    keep = a.asnumpy().copy()
    b = net(nd.ones((2, 4)) * 2)
    assert not a._shares_storage(b)
    np.testing.assert_array_equal(a.asnumpy(), keep)


def test_multiple_outputs_and_inputs():
    class Two(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x + y, F.relu(x - y)

    blk = Two()
    blk.hybridize()
    x, y = nd.array([[1, -2]]), nd.array([[3, 4]])
    s, r = blk(x, y)
    np.testing.assert_array_equal(s.asnumpy(), [[4, 2]])
    np.testing.assert_array_equal(r.asnumpy(), [[0, 0]])


def test_plain_block_hybridizes_its_children():
    class Outer(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.body = nn.Dense(2)

        def forward(self, x):
            return self.body(x) + 1

    o = Outer()
    o.initialize()
    o.hybridize()
    y = o(nd.ones((1, 3)))
    assert o.body._cached_op is not None and y.shape == (1, 2)


def test_shape_error_names_the_node():
    net = nn.Dense(3, in_units=4)
    net.initialize()
    net.hybridize()
    with pytest.raises(mx.MXNetError, match=r'dense\d+_fwd.*FullyConnected'):
        net(nd.ones((2, 5)))


def test_export_imports_round_trip(tmp_path):
    net = SeedNet()
    net.initialize()
    net.hybridize()
    x = nd.random.uniform(shape=(3, 6))
    want = net(x)
    path = str(tmp_path / 'seed')
    net.export(path, epoch=7)
    blk = gluon.SymbolBlock.imports(path + '-symbol.json', ['data'], path + '-0007.params')
    np.testing.assert_allclose(blk(x).asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-6)
    # The files read back identically: JSON text and every saved array.
    assert mx.sym.load(path + '-symbol.json').tojson() == open(path + '-symbol.json').read()
    saved = nd.load(path + '-0007.params')
    assert sorted(saved) == sorted('arg:' + n for n in net._cached_graph[1].list_arguments()
                                   if n != 'data')
    nd.save(str(tmp_path / 'again.params'), saved)
    assert open(str(tmp_path / 'again.params'), 'rb').read() == \
        open(path + '-0007.params', 'rb').read()


def test_export_needs_a_traced_graph(tmp_path):
    net = nn.Dense(2)
    net.initialize()
    with pytest.raises(RuntimeError, match='Please first call block.hybridize'):
        net.export(str(tmp_path / 'x'))


def test_symbol_block_from_symbols():
    data = mx.sym.var('data')
    out = mx.sym.FullyConnected(data, num_hidden=2, name='fc')
    blk = gluon.SymbolBlock(out, data)
    blk.initialize()
    y = blk(nd.ones((3, 4)))
    assert y.shape == (3, 2)
    assert sorted(blk.collect_params().keys()) == ['fc_bias', 'fc_weight']


def test_symbol_infer_shape():
    x = mx.sym.var('data')
    y = mx.sym.FullyConnected(x, num_hidden=6, name='fc')
    co = mx._core.CachedOp(y, y.list_inputs())
    ins, outs = co.infer([((4, 3), 0), (None, 0), (None, 0)], True)
    assert [s for s, _ in ins] == [(4, 3), (6, 3), (6,)]
    assert outs == [((4, 6), 0)]


def test_export_after_rehybridize_traces_again(tmp_path):
    # The seed tutorial calls hybridize(static_alloc=True) after running, then export.
    net = SeedNet()
    net.initialize()
    net.hybridize()
    x = nd.ones((2, 6))
    want = net(x)
    net.hybridize(static_alloc=True)
    net.export(str(tmp_path / 'm'), epoch=1)
    blk = gluon.SymbolBlock.imports(str(tmp_path / 'm-symbol.json'), ['data'],
                                    str(tmp_path / 'm-0001.params'))
    np.testing.assert_allclose(blk(x).asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-6)


def test_graph_inputs_kept_with_the_cached_op_and_dropped_with_it():
    # The first call collects the graph's Parameters once for both the deferred shape
    # inference and the cached op; a block change must make the next call collect again.
    net = nn.HybridSequential()
    net.add(nn.Dense(3))
    net.initialize()
    net.hybridize()
    x = nd.ones((2, 5))
    assert net(x).shape == (2, 3)
    net.add(nn.Dense(2))              # a new child: traced, collected and initialized anew
    net[1].initialize()
    assert net(x).shape == (2, 2)
    assert net[1].weight.shape == (2, 3)
    want = nd.dot(nd.dot(x, net[0].weight.data(), transpose_b=True) + net[0].bias.data(),
                  net[1].weight.data(), transpose_b=True) + net[1].bias.data()
    np.testing.assert_allclose(net(x).asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    net.hybridize()                   # clears the cache; infer_shape collects again
    net.infer_shape(nd.ones((4, 5)))
    net.initialize(mx.init.One(), force_reinit=True)   # new arrays: the next call re-binds
    # weights all 1, biases keep their own 'zeros' init: 5 per unit, then 3 * 5
    np.testing.assert_allclose(net(x).asnumpy(), np.full((2, 2), 15.), rtol=1e-6)


def test_deferred_init_arrays_are_each_parameters_own():
    # Deferred initialization keeps the array it initialized instead of copying it; a value
    # given with set_data before the first call is still copied, not aliased.
    net = nn.HybridSequential()
    net.add(nn.Dense(3), nn.Dense(3))
    net.initialize(mx.init.One())
    given = nd.full((3,), 7.)
    net[1].bias.set_data(given)
    net.hybridize()
    net(nd.ones((1, 4)))
    arrays = [p.data() for p in net.collect_params().values()]
    grads = [p.grad() for p in net.collect_params().values()]
    for i, a in enumerate(arrays + grads):
        assert not any(a._shares_storage(b) for b in (arrays + grads)[i + 1:])
    assert not net[1].bias.data()._shares_storage(given)
    given[:] = 0
    np.testing.assert_array_equal(net[1].bias.data().asnumpy(), [7., 7., 7.])
