"""End to end on real data: a hybridized MLP trained on Fashion-MNIST (Debian's
dataset-fashion-mnist files, which .ci/run installs) reaches >= 85% test accuracy within two
epochs, and the same steps run imperatively give the same loss curve."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd
from hybridgluon.gluon import nn

ROOT = '/usr/share/datasets/fashion-mnist'
pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(ROOT, 'train-images-idx3-ubyte.gz')),
    reason='Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)')


def _data():
    out = []
    for train in (True, False):
        ds = gluon.data.vision.FashionMNIST(root=ROOT, train=train)
        out += [(ds._data.astype('float32') / 255).reshape((-1, 784)),
                nd.array(ds._label, dtype='float32')]
    return out


def _mlp(seed):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation='relu', in_units=784),
                nn.Dense(128, activation='relu', in_units=256), nn.Dense(10, in_units=128))
    net.initialize(mx.init.Xavier())
    return net


def _steps(net, x, y, batch_size, nsteps, order, lr=1e-3):
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': lr})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for s in range(nsteps):
        idx = order[s * batch_size:(s + 1) * batch_size]
        xb, yb = nd.take(x, idx), nd.take(y, idx)
        with autograd.record():
            loss = loss_fn(net(xb), yb)
        loss.backward()
        trainer.step(batch_size)
        losses.append(float(loss.mean().asscalar()))
    return losses


def test_hybridized_mlp_reaches_85_percent_in_two_epochs():
    x, y, xt, yt = _data()
    net = _mlp(0)
    net.hybridize(static_alloc=True)
    bs = 128
    steps = x.shape[0] // bs
    rng = np.random.default_rng(0)
    for _ in range(2):
        order = nd.array(rng.permutation(x.shape[0]), dtype='int32')
        _steps(net, x, y, bs, steps, order)
    acc = float((net(xt).argmax(axis=1) == yt).mean().asscalar())
    assert acc >= 0.85, acc


def test_imperative_and_hybridized_loss_curves_agree():
    x, y, _, _ = _data()
    order = nd.array(np.random.default_rng(1).permutation(x.shape[0]), dtype='int32')
    imp, hyb = _mlp(3), _mlp(3)
    hyb.hybridize()
    a = _steps(imp, x, y, 64, 8, order)
    b = _steps(hyb, x, y, 64, 8, order)
    assert a[-1] < a[0]
    np.testing.assert_allclose(a, b, rtol=1e-4)
