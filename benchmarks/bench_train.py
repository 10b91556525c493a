"""Training benchmarks (issue: training): one step (forward, backward, SGD update) of the seeds'
512-256-128-2 MLP at batch 64, hybridized vs imperative vs PyTorch CPU; and the throughput of a
Fashion-MNIST-shaped MLP (784-256-128-10, batch 128) in samples per second."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, table, try_torch  # noqa: E402

import numpy as np  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon import autograd, gluon  # noqa: E402
from hybridgluon.gluon import nn  # noqa: E402


def _mlp(widths, hybrid):
    net = nn.HybridSequential()
    with net.name_scope():
        for w in widths[:-1]:
            net.add(nn.Dense(w, activation='relu'))
        net.add(nn.Dense(widths[-1]))
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    return net


def _ours(widths, batch, din, hybrid):
    net = _mlp(widths, hybrid)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = mx.nd.random.normal(shape=(batch, din))
    y = mx.nd.array(np.random.default_rng(0).integers(0, widths[-1], batch), dtype='float32')

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
    return step


def _torch(torch, widths, batch, din):
    layers, d = [], din
    for w in widths[:-1]:
        layers += [torch.nn.Linear(d, w), torch.nn.ReLU()]
        d = w
    layers.append(torch.nn.Linear(d, widths[-1]))
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, din)
    y = torch.randint(0, widths[-1], (batch,))

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
    return step


def run(quick=False):
    torch = try_torch()
    peers = ['hybridgluon', 'hybridgluon imperative'] + (['torch'] if torch else [])
    rep, number = (5, 30) if quick else (9, 200)
    rows = []
    for label, widths, batch, din in [('seeds MLP 512-256-128-2, batch 64', [256, 128, 2], 64, 512),
                                      ('Fashion-MNIST MLP 784-256-128-10, batch 128',
                                       [256, 128, 10], 128, 784)]:
        cases = {'hybridgluon': _ours(widths, batch, din, True),
                 'hybridgluon imperative': _ours(widths, batch, din, False)}
        if torch:
            cases['torch'] = _torch(torch, widths, batch, din)
        res = compare(cases, rep, number)
        rows.append(('%s: one training step' % label, res,
                     'hybridized %.2fx our imperative; %.0f samples/s hybridized%s'
                     % (res['hybridgluon imperative'] / res['hybridgluon'],
                        batch / res['hybridgluon'],
                        ', %.0f torch' % (batch / res['torch']) if torch else '')))
    return table('training step (forward + backward + SGD update; medians, ratio > 1 means '
                 'hybridized hybridgluon is faster)', rows, peers)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
