"""Gluon normalisation layers: outputs vs the NumPy references of test_ops_norm, imperative ==
hybridized, deferred shapes, repr, traced node attributes and auxiliary states."""
import contextlib
import json

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon.nn.norm_layers import BatchNorm, GroupNorm, InstanceNorm, LayerNorm
from test_ops_norm import np_batchnorm, np_groupnorm, np_instancenorm, np_layernorm

nd = mx.nd


@contextlib.contextmanager
def training(flag=True):
    prev = mx._core.set_training(flag)
    try:
        yield
    finally:
        mx._core.set_training(prev)


@pytest.fixture
def rng():
    return np.random.default_rng(1)


def _both(layer, x):
    """Imperative output, then the hybridized (traced, then cached) outputs of the same layer."""
    a = layer(nd.array(x)).asnumpy()
    layer.hybridize()
    b = layer(nd.array(x)).asnumpy()
    b2 = layer(nd.array(x)).asnumpy()
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a, b2, rtol=1e-6, atol=1e-6)
    return a


def _set(param, value):
    param.set_data(nd.array(value))


@pytest.mark.parametrize('axis,shape', [(1, (2, 3, 4, 5)), (-1, (4, 6)), (1, (5, 3)),
                                        (3, (2, 3, 4, 5))])
@pytest.mark.parametrize('scale', [True, False])
def test_batchnorm_layer_predict(rng, axis, shape, scale):
    C = shape[axis]
    net = BatchNorm(axis=axis, scale=scale)
    net.initialize()
    x = rng.normal(1.0, 2.0, size=shape).astype('float32')
    net(nd.array(x))  # deferred init through shape inference
    assert [p.shape for p in net.collect_params().values()] == [(C,)] * 4
    g, b = rng.uniform(0.5, 2, C), rng.normal(size=C)
    mm, mv = rng.normal(size=C), rng.uniform(0.5, 2, C)
    for p, v in zip((net.gamma, net.beta, net.running_mean, net.running_var), (g, b, mm, mv)):
        _set(p, v.astype('float32'))
    out = _both(net, x)
    ref = np_batchnorm(x, g, b, mm, mv, eps=1e-5, fix_gamma=not scale, axis=axis)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_batchnorm_layer_training_uses_batch_stats(rng):
    x = rng.normal(3.0, 2.0, size=(8, 4, 3)).astype('float32')
    net = BatchNorm(in_channels=4)
    net.initialize()
    ref = np_batchnorm(x, np.ones(4), np.zeros(4), None, None, eps=1e-5, fix_gamma=False,
                       train=True)
    with training():
        a = net(nd.array(x)).asnumpy()
        net.hybridize()
        b = net(nd.array(x)).asnumpy()
    np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, ref, rtol=1e-4, atol=1e-5)
    # forward leaves the running statistics alone (MXNet updates them in backward)
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), np.zeros(4))
    np.testing.assert_array_equal(net.running_var.data().asnumpy(), np.ones(4))
    # predict mode after that: running statistics (0, 1)
    c = net(nd.array(x)).asnumpy()
    np.testing.assert_allclose(c, x / np.sqrt(1 + 1e-5), rtol=1e-5)


def test_batchnorm_layer_params_and_repr():
    net = BatchNorm()
    assert repr(net) == ('BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, '
                         'use_global_stats=False, in_channels=None)')
    net2 = BatchNorm(axis=-1, momentum=0.5, epsilon=1e-3, scale=False, center=False,
                     use_global_stats=True, in_channels=7)
    assert repr(net2) == ('BatchNorm(axis=-1, eps=0.001, momentum=0.5, fix_gamma=True, '
                          'use_global_stats=True, in_channels=7)')
    names = [p.name[len(net2.prefix):] for p in net2.collect_params().values()]
    assert names == ['gamma', 'beta', 'running_mean', 'running_var']
    assert net2.gamma.grad_req == 'null' and net2.beta.grad_req == 'null'
    assert net.gamma.grad_req == 'write' and net.beta.grad_req == 'write'
    for p in (net.running_mean, net.running_var):
        assert p.grad_req == 'null'
        assert p._differentiable is False
    assert net.prefix.startswith('batchnorm')


def test_batchnorm_traced_node_and_aux_states():
    net = BatchNorm()
    sym = net(mx.sym.var('data'))
    graph = json.loads(sym.tojson())
    node = [n for n in graph['nodes'] if n['op'] == 'BatchNorm'][0]
    assert node['name'] == net.prefix + 'fwd'
    assert node['attrs'] == {'axis': '1', 'eps': '1e-05', 'fix_gamma': 'False',
                             'momentum': '0.9', 'use_global_stats': 'False'}
    assert sym.list_auxiliary_states() == [net.prefix + 'running_mean',
                                           net.prefix + 'running_var']
    assert sym.list_arguments() == ['data', net.prefix + 'gamma', net.prefix + 'beta']
    inits = {n['name'][len(net.prefix):]: n['attrs']['__init__'] for n in graph['nodes']
             if n['op'] == 'null' and n['name'] != 'data'}
    assert inits == {'gamma': 'ones', 'beta': 'zeros', 'running_mean': 'zeros',
                     'running_var': 'ones'}


@pytest.mark.parametrize('axis,shape', [(-1, (3, 5)), (1, (2, 4, 3)), (0, (6, 2))])
def test_layernorm_layer(rng, axis, shape):
    R = shape[axis]
    net = LayerNorm(axis=axis)
    net.initialize()
    x = rng.normal(2.0, 3.0, size=shape).astype('float32')
    net(nd.array(x))
    assert net.gamma.shape == (R,) and net.beta.shape == (R,)
    g, b = rng.uniform(0.5, 2, R), rng.normal(size=R)
    _set(net.gamma, g.astype('float32'))
    _set(net.beta, b.astype('float32'))
    out = _both(net, x)
    np.testing.assert_allclose(out, np_layernorm(x, g, b, axis)[0], rtol=1e-4, atol=1e-5)


def test_layernorm_repr_and_node():
    net = LayerNorm(in_channels=5)
    assert repr(net) == 'LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=5)'
    graph = json.loads(net(mx.sym.var('data')).tojson())
    node = [n for n in graph['nodes'] if n['op'] == 'LayerNorm'][0]
    assert node['attrs'] == {'axis': '-1', 'eps': '1e-05'}
    assert net.gamma.name == net.prefix + 'gamma'
    assert LayerNorm(scale=False, center=False).gamma.grad_req == 'null'


@pytest.mark.parametrize('axis,shape', [(1, (2, 3, 5)), (1, (2, 3, 4, 4)), (2, (2, 5, 3))])
def test_instancenorm_layer(rng, axis, shape):
    C = shape[axis]
    net = InstanceNorm(axis=axis, scale=True)
    net.initialize()
    x = rng.normal(1.0, 2.0, size=shape).astype('float32')
    net(nd.array(x))
    assert net.gamma.shape == (C,)
    g, b = rng.uniform(0.5, 2, C), rng.normal(size=C)
    _set(net.gamma, g.astype('float32'))
    _set(net.beta, b.astype('float32'))
    out = _both(net, x)
    ref = np_instancenorm(np.swapaxes(x, 1, axis), g, b, eps=1e-5)
    np.testing.assert_allclose(out, np.swapaxes(ref, 1, axis), rtol=1e-4, atol=1e-5)


def test_instancenorm_defaults():
    net = InstanceNorm()
    assert net.gamma.grad_req == 'null' and net.beta.grad_req == 'write'
    assert repr(net) == 'InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=0)'


@pytest.mark.parametrize('G,shape', [(1, (2, 4, 3)), (2, (2, 4, 3, 3)), (3, (1, 6, 5))])
def test_groupnorm_layer(rng, G, shape):
    net = GroupNorm(num_groups=G)
    assert net.gamma.shape == (G,)
    net.initialize()
    g, b = rng.uniform(0.5, 2, G), rng.normal(size=G)
    _set(net.gamma, g.astype('float32'))
    _set(net.beta, b.astype('float32'))
    x = rng.normal(1.0, 2.0, size=shape).astype('float32')
    out = _both(net, x)
    np.testing.assert_allclose(out, np_groupnorm(x, g, b, G), rtol=1e-4, atol=1e-5)
    assert repr(net) == ('GroupNorm(eps=1e-05, num_groups=%d, center=True, scale=True)' % G)


def test_groupnorm_layer_bad_channels():
    net = GroupNorm(num_groups=3)
    net.initialize()
    with pytest.raises(mx.MXNetError, match='divisible by num_groups=3'):
        net(nd.ones((2, 4, 3)))


def test_sequential_deferred_shapes(rng):
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(BatchNorm(), LayerNorm(), InstanceNorm())
    net.initialize()
    x = rng.normal(size=(2, 3, 4)).astype('float32')
    a = net(nd.array(x)).asnumpy()
    net.hybridize()
    b = net(nd.array(x)).asnumpy()
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    shapes = {k[len(net.prefix):]: v.shape for k, v in net.collect_params().items()}
    assert shapes['batchnorm0_gamma'] == (3,) and shapes['layernorm0_gamma'] == (4,)
    assert shapes['instancenorm0_beta'] == (3,)
