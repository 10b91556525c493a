"""Model-zoo training (issue 16): one training step of resnet18_v1 and mobilenetv2_1.0 at
224x224 with 1000 classes, batch 16 and 32: forward (BatchNorm on the batch's statistics),
softmax cross-entropy, backward and an SGD update with momentum 0.9.

hybridgluon runs the model zoo's network hybridized (static_alloc, static_shape) with a Trainer,
and real MXNet 1.9.1 the same Gluon code (workloads_gluon.zoo_train_step); PyTorch runs the same
architectures (workloads_torch.py) eagerly and under torch.compile (the model compiled, forward
and backward; the loss and optimizer eager), each peer in its own process (peers.py). The batch-16
rows carry issue 16's targets (common.CONV_TRAINING_TARGETS: 1.5x MXNet, 1.2x PyTorch); the
batch-32 rows the defaults. A step takes about a second at batch 16 on a 2-core machine, so the
rows are a few rounds of one call, after the first call (tracing, deferred initialisation,
compilation) and two warm-up calls.

    python benchmarks/bench_convtrain.py [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import compare, peer_workload, peers_available, table  # noqa: E402
import peers  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import hybridgluon as mx  # noqa: E402

MODELS = ['resnet18_v1', 'mobilenetv2_1.0']
BATCHES = (16, 32)


def run(quick=False):
    peers_ = ['hybridgluon'] + peers_available(('torch.compile',))
    rep = 3 if quick else 5
    rows = []
    notes0 = len(common.NOTES)
    for name in MODELS:
        for batch in BATCHES:
            ours = wg.zoo_train_step(mx, name, batch=batch)
            ours()  # its first call, as each peer's worker makes one in build
            cases = {'hybridgluon': ours}
            for peer in peers_[1:]:
                cases[peer] = peer_workload(peer, 'zoo_train_step', name=name, batch=batch)
            res = compare(cases, rep, 1, warmup=2)
            common.free(cases)
            del cases, ours  # our static_alloc memory too, before the next model
            rate = ', '.join('%.1f %s' % (batch / res[p], p) for p in peers_ if p in res)
            rows.append(('%s, 224x224, batch %d: one training step' % (name, batch), res,
                         'images/s: ' + rate,
                         common.CONV_TRAINING_TARGETS if batch == 16 else None))
    text = table('model-zoo training step (forward, softmax cross-entropy, backward, SGD with '
                 'momentum; medians, ratio > 1 means hybridgluon is faster)', rows, peers_)
    missing = [p for p in ('mxnet', 'torch', 'torch.compile') if p not in peers_]
    notes = ['%s: not compared (%s).' % (p, peers.MISSING.get(p, 'unavailable'))
             for p in missing] + ['Not compared: %s.' % n for n in common.NOTES[notes0:]]
    return text + ''.join('\n\n' + n for n in notes)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
    peers.close_all()
