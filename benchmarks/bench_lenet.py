"""LeNet benchmark (issue: convnets): the seeds' LeNet (`hybridgluon.demo.Net`: Conv2D 6@5x5,
MaxPool 2, Conv2D 16@5x5, MaxPool 2, Dense 120, Dense 84, dot with the hand-made fc3_weight) at
batch 256 on 1x28x28 inputs, hybridized (static_alloc, static_shape): the forward and one
training step (forward, SoftmaxCrossEntropyLoss, backward, Trainer sgd step), beside PyTorch CPU
(the same architecture, workloads_torch.py) and real MXNet 1.9.1 (the same Gluon code), each in
its own process (peers.py), rounds interleaved. Target: the training step at >= 1.5x PyTorch's
examples/s.

    python benchmarks/bench_lenet.py [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, peer_workload, peers_available, table  # noqa: E402
import peers  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import numpy as np  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon.demo import Net  # noqa: E402

BATCH = 256


def _ours():
    net = Net()  # the seed's own class, as the demo trains it
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.random.uniform(shape=(BATCH, 1, 28, 28))
    y = mx.nd.array(np.random.RandomState(0).randint(0, 10, BATCH), dtype='float32')
    return (lambda: net(x).wait_to_read()), wg._train_step(mx, net, x, y)


def run(quick=False):
    peers_ = ['hybridgluon'] + peers_available()
    rep, number = (5, 5) if quick else (9, 20)
    fwd, step = _ours()
    rows = []
    for label, ours, work in [('forward (inference)', fwd, 'lenet_forward'),
                              ('training step (forward, loss, backward, sgd)', step,
                               'lenet_train_step')]:
        cases = {'hybridgluon': ours}
        for fw in peers_[1:]:
            cases[fw] = peer_workload(fw, work, batch=BATCH)
        res = compare(cases, rep, number)
        note = ', '.join('%.0f %s' % (BATCH / res[k], k) for k in res) + ' examples/s'
        rows.append(('LeNet batch %d, %s' % (BATCH, label), res, note))
    return table('seeds LeNet (hybridgluon.demo.Net), batch %d, 1x28x28, hybridized (medians; '
                 'ratio > 1 means hybridgluon is faster; target >= 1.5x PyTorch on the training '
                 'step)' % BATCH, rows, peers_)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
    peers.close_all()
