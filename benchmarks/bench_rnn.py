"""Recurrent benchmarks (issue #15): the word-level language model of the PTB recipe (embedding
650, a 2-layer LSTM with 650 hidden units, decoder to a 10k vocabulary; sequence 35, batch 32,
synthetic token ids): one hybridized training step (forward, cross-entropy over every token,
backward through time, gradient clipping, SGD), and inference latency at batch 1; against
PyTorch CPU (nn.LSTM, its fused kernel) and real MXNet 1.9.1 (gluon.rnn.LSTM, the same Gluon
code), each in its own process."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, peer_workload, peers_available, table  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import hybridgluon as mx  # noqa: E402


def _row(workload, rep, number, **kw):
    return compare({'hybridgluon': getattr(wg, workload)(mx, **kw),
                    'mxnet': peer_workload('mxnet', workload, **kw),
                    'torch': peer_workload('torch', workload, **kw)}, rep, number)


def run(quick=False):
    peers = ['hybridgluon'] + peers_available()
    rows = []
    res = _row('word_lm_train_step', 3 if quick else 7, 1 if quick else 2)
    tok = 35 * 32
    others = ''.join(', %.0f %s' % (tok / res[p], p) for p in ('mxnet', 'torch') if p in res)
    rows.append(('word LM (2x LSTM 650, vocab 10k), seq 35, batch 32: training step', res,
                 'tokens/s: %.0f hybridgluon%s' % (tok / res['hybridgluon'], others)))
    for batch in (1, 32):
        res = _row('word_lm_infer', 5 if quick else 9, 5 if quick else 20, batch=batch)
        rows.append(('word LM, seq 35, batch %d: inference (forward)' % batch, res,
                     'latency per sequence' if batch == 1 else 'throughput row'))
    return table('recurrent models (medians, ratio > 1 means hybridgluon is faster)', rows, peers)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
