"""gluon.contrib.cnn's deformable convolution layers: parameters as MXNet names and shapes them,
a fresh layer (zero offsets; masks 2 * sigmoid(0) = 1) equals a plain convolution, and
imperative and hybridized runs agree in output and gradients."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution


@pytest.mark.parametrize('cls', [DeformableConvolution, ModulatedDeformableConvolution])
def test_parameters(cls):
    layer = cls(6, kernel_size=(3, 2), num_deformable_group=2, in_channels=4, groups=2)
    shapes = {k[len(layer.prefix):]: v.shape for k, v in layer.collect_params().items()}
    per_tap = 3 if cls is ModulatedDeformableConvolution else 2
    assert shapes == {'offset_weight': (per_tap * 12, 2, 3, 2), 'offset_bias': (per_tap * 12,),
                      'deformable_conv_weight': (6, 0, 3, 2), 'deformable_conv_bias': (6,)}
    layer = cls(6, kernel_size=3, use_bias=False, offset_use_bias=False)
    names = sorted(k[len(layer.prefix):] for k in layer.collect_params())
    assert names == ['deformable_conv_weight', 'offset_weight']


@pytest.mark.parametrize('cls', [DeformableConvolution, ModulatedDeformableConvolution])
def test_fresh_layer_is_a_convolution(cls):
    layer = cls(5, kernel_size=3, padding=1, activation='relu')
    layer.initialize(mx.init.Normal(0.5))
    x = mx.nd.random.uniform(shape=(2, 3, 6, 7))
    y = layer(x)
    conv = mx.gluon.nn.Conv2D(5, 3, padding=1, activation='relu', in_channels=3)
    conv.initialize()
    conv.weight.set_data(layer.deformable_conv_weight.data())
    conv.bias.set_data(layer.deformable_conv_bias.data())
    np.testing.assert_allclose(y.asnumpy(), conv(x).asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('cls', [DeformableConvolution, ModulatedDeformableConvolution])
def test_hybridized_matches_imperative(cls):
    layer = cls(4, kernel_size=(3, 3), strides=1, padding=1, num_deformable_group=2,
                offset_weight_initializer=mx.init.Normal(0.3))
    layer.initialize(mx.init.Normal(0.5))
    x = mx.nd.random.uniform(shape=(2, 4, 5, 5))
    results = []
    for hybrid in (False, True):
        if hybrid:
            layer.hybridize()
        with mx.autograd.record():
            y = layer(x)
        y.backward()
        grads = [p.grad().asnumpy().copy() for p in layer.collect_params().values()]
        results.append((y.asnumpy(), grads))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert any(np.abs(g).sum() > 0 for g in results[0][1][:1])
