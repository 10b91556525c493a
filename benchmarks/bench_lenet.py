"""LeNet benchmark (issue: convnets): the seeds' LeNet (`hybridgluon.demo.Net`: Conv2D 6@5x5,
MaxPool 2, Conv2D 16@5x5, MaxPool 2, Dense 120, Dense 84, dot with the hand-made fc3_weight) at
batch 256 on 1x28x28 inputs, hybridized (static_alloc, static_shape), beside PyTorch CPU with the
same architecture, in the same run, interleaved: the forward (inference) and one training step
(forward, SoftmaxCrossEntropyLoss, backward, Trainer sgd step). Target: the training step at
>= 1.5x PyTorch's examples/s.

    python benchmarks/bench_lenet.py [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, table, try_torch  # noqa: E402

import numpy as np  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon import autograd, gluon  # noqa: E402
from hybridgluon.demo import Net  # noqa: E402

BATCH = 256


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    return x, y


def _ours(xn, yn):
    net = Net()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = mx.nd.array(xn), mx.nd.array(yn.astype(np.float32))

    def forward():
        net(x).wait_to_read()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        loss.wait_to_read()
    return forward, step


def _torch(torch, xn, yn):
    nn = torch.nn

    class TorchNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2 = nn.Linear(16 * 4 * 4, 120), nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10, bias=False)  # the seed's fc3_weight: no bias

        def forward(self, x):
            f = nn.functional
            x = f.max_pool2d(f.relu(self.conv1(x)), 2)
            x = f.max_pool2d(f.relu(self.conv2(x)), 2)
            x = x.reshape(x.shape[0], -1)
            return self.fc3(f.relu(self.fc2(f.relu(self.fc1(x)))))

    net = TorchNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.from_numpy(xn), torch.from_numpy(yn)

    def forward():
        with torch.no_grad():
            net(x)

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
    return forward, step


def run(quick=False):
    torch = try_torch()
    peers = ['hybridgluon'] + (['torch'] if torch else [])
    rep, number = (5, 5) if quick else (9, 20)
    xn, yn = _data()
    ours = _ours(xn, yn)
    theirs = _torch(torch, xn, yn) if torch else None
    rows = []
    for i, label in enumerate(['forward (inference)', 'training step (fwd, loss, bwd, sgd)']):
        cases = {'hybridgluon': ours[i]}
        if theirs:
            cases['torch'] = theirs[i]
        res = compare(cases, rep, number)
        note = '%.0f examples/s ours' % (BATCH / res['hybridgluon'])
        if theirs:
            note += ', %.0f torch' % (BATCH / res['torch'])
        rows.append(('LeNet batch %d, %s' % (BATCH, label), res, note))
    return table('seeds LeNet (hybridgluon.demo.Net), batch %d, 1x28x28, hybridized (medians; '
                 'ratio > 1 means hybridgluon is faster; target >= 1.5x on the training step)'
                 % BATCH, rows, peers)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
