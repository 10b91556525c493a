"""Block.save / Block.load: structure + traced graphs (JSON) and parameters, MXNet's format."""
import json

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon


class _Chain(gluon.nn.Block):
    def add(self, block):
        self._children[block.name + str(len(self._children))] = block

    def forward(self, x):
        for b in self._children.values():
            x = b(x)
        return x


def _create():
    inside = _Chain()
    inside.add(gluon.nn.Dense(4, activation='relu'))
    net = _Chain()
    net.add(inside)
    net.add(gluon.nn.Dense(3))
    return net


@pytest.mark.parametrize('hybridize', [True, False])
def test_save_load_round_trip_into_a_fresh_model(tmp_path, hybridize):
    x = mx.nd.array(np.random.RandomState(0).rand(2, 5))
    net = _create()
    net.initialize()
    if hybridize:
        net.hybridize()
    out = net(x).asnumpy()
    prefix = str(tmp_path / 'model')
    net.save(prefix)
    with open(prefix + '-model.json') as fp:
        model = json.load(fp)
    top = model['_chain0']
    assert top['orig_name'] == net.name
    dense = top['_chain1']['dense2']
    # (imperative too: deferred shape inference traced the graph, as in MXNet)
    assert dense['hybridized'] is True
    if hybridize:
        assert dense['in_format'] == [0] and len(dense['inputs']) == 1
        assert 'FullyConnected' in dense['symbol']

    _create()  # shifts the automatic names: load must give the saved ones back
    net2 = _create()
    assert net2.name != net.name
    net2.load(prefix)
    assert net2.name == net.name
    assert sorted(net2._children) == sorted(net._children)
    np.testing.assert_allclose(net2(x).asnumpy(), out, rtol=1e-6)


def test_load_into_a_different_structure_names_the_missing_block(tmp_path):
    net = _create()
    net.initialize()
    net(mx.nd.ones((1, 5)))
    net.save(str(tmp_path / 'm'))
    other = gluon.nn.Dense(3)
    with pytest.raises(ValueError, match="no block 'dense0'"):
        other.load(str(tmp_path / 'm'))
