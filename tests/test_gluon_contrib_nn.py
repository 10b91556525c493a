"""gluon.contrib additions: SparseEmbedding (dense), SyncBatchNorm (one device),
contrib.data.IntervalSampler. Imperative and hybridized agree; values against NumPy."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon
from hybridgluon.gluon.contrib import data as cdata
from hybridgluon.gluon.contrib import nn as cnn


@pytest.mark.parametrize('hybridize', [False, True])
def test_sparse_embedding_forward_and_gradient(hybridize):
    layer = cnn.SparseEmbedding(6, 3)
    layer.initialize()
    if hybridize:
        layer.hybridize()
    w = layer.weight.data().asnumpy()
    idx = np.array([[4, 1], [1, 0]])
    with autograd.record():
        y = layer(mx.nd.array(idx))
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), w[idx])
    grad = np.zeros_like(w)
    np.add.at(grad, idx.ravel(), 1.0)
    np.testing.assert_array_equal(layer.weight.grad().asnumpy(), grad)
    assert repr(layer) == 'SparseEmbedding(6 -> 3, float32)'


def _bn_reference(x, gamma, beta, eps=1e-5):
    axes = tuple(i for i in range(x.ndim) if i != 1)
    shape = [1] * x.ndim
    shape[1] = -1
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return out * gamma.reshape(shape) + beta.reshape(shape), mean, var


@pytest.mark.parametrize('shape', [(6, 3), (4, 2, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize('hybridize', [False, True])
def test_sync_batchnorm_on_one_device_is_batchnorm(shape, hybridize):
    rng = np.random.RandomState(1)
    x = rng.rand(*shape).astype(np.float32)
    bn = cnn.SyncBatchNorm(in_channels=shape[1], num_devices=1)
    bn.initialize()
    gamma = rng.rand(shape[1]).astype(np.float32) + 0.5
    beta = rng.rand(shape[1]).astype(np.float32)
    bn.gamma.set_data(mx.nd.array(gamma))
    bn.beta.set_data(mx.nd.array(beta))
    if hybridize:
        bn.hybridize()
    xa = mx.nd.array(x)
    xa.attach_grad()
    with autograd.record():
        y = bn(xa)
    y.backward()
    ref, mean, var = _bn_reference(x.astype(np.float64), gamma, beta)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    # the running statistics move as BatchNorm's (momentum 0.9)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.1 * mean, rtol=1e-4,
                               atol=1e-6)
    plain = gluon.nn.BatchNorm(in_channels=shape[1])
    plain.initialize()
    plain.gamma.set_data(mx.nd.array(gamma))
    plain.beta.set_data(mx.nd.array(beta))
    xb = mx.nd.array(x)
    xb.attach_grad()
    with autograd.record():
        yb = plain(xb)
    yb.backward()
    np.testing.assert_allclose(xa.grad.asnumpy(), xb.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_sync_batchnorm_refuses_several_devices():
    with pytest.raises(mx.MXNetError, match='across 2 devices'):
        cnn.SyncBatchNorm(num_devices=2)
    with pytest.warns(UserWarning, match='num_devices'):
        bn = cnn.SyncBatchNorm()
    assert bn._num_devices == max(mx.num_gpus(), 1)


def test_interval_sampler():
    assert list(cdata.IntervalSampler(13, interval=3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5,
                                                          8, 11]
    s = cdata.IntervalSampler(13, interval=3, rollover=False)
    assert list(s) == [0, 3, 6, 9, 12] and len(s) == 13
    assert sorted(cdata.IntervalSampler(5, 5)) == list(range(5))
    with pytest.raises(AssertionError, match='Interval 4'):
        cdata.IntervalSampler(3, 4)
