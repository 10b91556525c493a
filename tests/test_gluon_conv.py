"""Gluon convolution layers (Conv1D / Conv2D / Conv3D): names, deferred init, repr, imperative
vs hybridized forward, and agreement with the Convolution op."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd
from hybridgluon.gluon import nn
from hybridgluon.gluon.nn.conv_layers import Conv1D, Conv2D, Conv3D


def test_names_and_param_names():
    with mx.name.NameManager():
        c0, c1 = Conv2D(4, 3), Conv1D(2, 3)
        assert (c0.prefix, c1.prefix) == ('conv0_', 'conv1_')
        assert c0.weight.name == 'conv0_weight' and c0.bias.name == 'conv0_bias'
        assert Conv3D(2, 1, use_bias=False).bias is None
        net = nn.HybridSequential(prefix='net_')
        with net.name_scope():
            net.add(Conv2D(4, 3), Conv2D(4, 3, activation='relu'))
        names = list(net.collect_params().keys())
        assert names == ['net_conv0_weight', 'net_conv0_bias', 'net_conv1_weight',
                         'net_conv1_bias']
        assert net[1].act.prefix == 'net_conv1_relu_'


def test_repr_and_shapes():
    c = Conv2D(16, (5, 5))
    assert repr(c) == 'Conv2D(None -> 16, kernel_size=(5, 5), stride=(1, 1))'
    assert c.weight.shape == (16, 0, 5, 5) and c.bias.shape == (16,)
    c = Conv2D(8, 3, strides=2, padding=1, dilation=2, groups=2, in_channels=4, use_bias=False,
               activation='relu')
    assert c.weight.shape == (8, 2, 3, 3)
    assert repr(c) == ('Conv2D(2 -> 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), '
                       'dilation=(2, 2), groups=2, bias=False, Activation(relu))')
    assert repr(Conv1D(3, 2, in_channels=5)) == 'Conv1D(5 -> 3, kernel_size=(2,), stride=(1,))'
    c = Conv3D(3, (1, 2, 3), strides=(1, 2, 1))
    assert repr(c) == 'Conv3D(None -> 3, kernel_size=(1, 2, 3), stride=(1, 2, 1))'
    assert c.weight.shape == (3, 0, 1, 2, 3)
    with pytest.raises(AssertionError):
        Conv2D(4, (3, 3, 3))
    with pytest.raises(AssertionError):
        Conv1D(4, 3, layout='NCHW')


def test_deferred_init():
    c = Conv2D(6, 3, padding=1, groups=2)
    c.initialize()
    out = c(nd.ones((2, 4, 5, 7)))
    assert out.shape == (2, 6, 5, 7)
    assert c.weight.shape == (6, 2, 3, 3) and c.weight.data().shape == (6, 2, 3, 3)
    assert (c.bias.data().asnumpy() == 0).all()
    assert repr(c).startswith('Conv2D(2 -> 6,')
    with pytest.raises(mx.MXNetError):
        c(nd.ones((2, 3, 5, 7)))  # 3 channels no longer match the weight


def _reference(layer, x):
    """The layer's output through the op directly, with the layer's own parameters."""
    kw = dict(layer._kwargs)
    args = [x, layer.weight.data()]
    if layer.bias is not None:
        args.append(layer.bias.data())
    return nd.Convolution(*args, **kw)


@pytest.mark.parametrize('factory, shape', [
    (lambda: Conv1D(4, 3, strides=2, padding=1), (3, 2, 11)),
    (lambda: Conv1D(4, 3, groups=2, use_bias=False, in_channels=4), (1, 4, 6)),
    (lambda: Conv2D(5, (3, 2), dilation=(2, 1), activation='relu'), (3, 3, 9, 8)),
    (lambda: Conv2D(4, 3, padding=1, groups=4), (2, 4, 6, 6)),
    (lambda: Conv2D(3, 1, bias_initializer='ones'), (2, 5, 4, 4)),
    (lambda: Conv3D(2, (2, 3, 2), strides=(1, 2, 1), padding=(1, 0, 1)), (2, 3, 4, 6, 5)),
])
def test_imperative_equals_hybridized(factory, shape):
    mx.random.seed(5)
    x = nd.random.uniform(shape=shape)
    net = factory()
    net.initialize(mx.init.Xavier())
    y0 = net(x)
    want = _reference(net, x)
    if net.act is not None:
        want = nd.relu(want)
    np.testing.assert_allclose(y0.asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-6)
    net.hybridize()
    y1 = net(x)
    y2 = net(x)
    assert y1.shape == y0.shape
    np.testing.assert_allclose(y1.asnumpy(), y0.asnumpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y2.asnumpy(), y0.asnumpy(), rtol=1e-6, atol=1e-6)


def test_hybridized_deferred_init_in_sequential():
    mx.random.seed(1)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(Conv2D(8, 3, padding=1, activation='relu'), Conv2D(4, 3, strides=2),
                nn.Dense(3))
    net.initialize()
    net.hybridize()
    x = nd.random.uniform(shape=(2, 3, 8, 8))
    y = net(x)
    assert y.shape == (2, 3)
    assert net[0].weight.shape == (8, 3, 3, 3) and net[1].weight.shape == (4, 8, 3, 3)
    assert net[2].weight.shape == (3, 36)
    # The same parameters, imperatively.
    h = nd.relu(_reference(net[0], x))
    h = _reference(net[1], h)
    want = nd.FullyConnected(h, net[2].weight.data(), net[2].bias.data(), num_hidden=3)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-5)
