"""Training benchmarks (issue: training): one step (forward, backward, SGD update) of the seeds'
512-256-128-2 MLP at batch 64, hybridized vs imperative vs MXNet 1.9.1 and PyTorch CPU (each in
its own process); the throughput of a Fashion-MNIST-shaped MLP (784-256-128-10, batch 128) in
samples per second; and one whole Fashion-MNIST training epoch (60000 images,
workloads_gluon.fmnist_epoch) per framework. LeNet is in bench_lenet.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, peer_workload, peers_available, table  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import hybridgluon as mx  # noqa: E402


def run(quick=False):
    peers = ['hybridgluon', 'hybridgluon imperative'] + peers_available()
    rep, number = (5, 30) if quick else (9, 200)
    rows = []
    for label, widths, batch, din in [('seeds MLP 512-256-128-2, batch 64', (256, 128, 2), 64, 512),
                                      ('Fashion-MNIST MLP 784-256-128-10, batch 128',
                                       (256, 128, 10), 128, 784)]:
        kw = dict(batch=batch, din=din, widths=widths)
        cases = {'hybridgluon': wg.mlp_train_step(mx, hybrid=True, **kw),
                 'hybridgluon imperative': wg.mlp_train_step(mx, hybrid=False, **kw),
                 'mxnet': peer_workload('mxnet', 'mlp_train_step', hybrid=True, **kw),
                 'torch': peer_workload('torch', 'mlp_train_step', **kw)}
        res = compare(cases, rep, number)
        others = ''.join(', %.0f %s' % (batch / res[p], p) for p in ('mxnet', 'torch') if p in res)
        rows.append(('%s: one training step' % label, res,
                     'hybridized %.2fx our imperative; samples/s: %.0f hybridized%s'
                     % (res['hybridgluon imperative'] / res['hybridgluon'],
                        batch / res['hybridgluon'], others)))
    text = table('training step (forward + backward + SGD update; medians, ratio > 1 means '
                 'hybridized hybridgluon is faster)', rows, peers)
    return text + '\n\n' + epoch(quick)


def _three_way(workload, rep, number, **kw):
    return compare({'hybridgluon': getattr(wg, workload)(mx, **kw),
                    'mxnet': peer_workload('mxnet', workload, **kw),
                    'torch': peer_workload('torch', workload, **kw)}, rep, number)


def epoch(quick=False):
    """One Fashion-MNIST epoch of the MLP 784-256-128-10 at batch 128 with Adam; --quick runs a
    tenth of the training set."""
    peers = ['hybridgluon'] + peers_available()
    limit = 6000 if quick else None
    res = _three_way('fmnist_epoch', 3, 1, limit=limit)
    n = limit or 60000
    label = ('Fashion-MNIST epoch (%s images), MLP 784-256-128-10, batch 128, Adam'
             % ('%d of the 60000' % n if limit else '60000'))
    others = ''.join(', %.0f %s' % (n / res[p], p) for p in ('mxnet', 'torch') if p in res)
    return table('training epoch (medians, ratio > 1 means hybridgluon is faster)',
                 [(label, res, 'images/s: %.0f hybridgluon%s' % (n / res['hybridgluon'], others))],
                 peers)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
