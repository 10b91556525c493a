"""NDArray benchmarks (issue: foundation): per-call overhead of small ops, a large element-wise
op and sgemm, against NumPy (in this process), real MXNet 1.9.1 and PyTorch CPU (each in its own
process, benchmarks/peers.py, when present), measured side by side."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, peer_workload, peers_available, table  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import hybridgluon as mx  # noqa: E402


def _row(label, workload, numpy_fn, rep, number, note, **kwargs):
    cases = {'hybridgluon': getattr(wg, workload)(mx, **kwargs), 'numpy': numpy_fn}
    for peer in ('mxnet', 'torch'):
        cases[peer] = peer_workload(peer, workload, **kwargs)
    return label, compare(cases, rep, number), note


def run(quick=False):
    peers = ['hybridgluon', 'numpy'] + peers_available()
    rep = 5 if quick else 9
    n1 = np.ones((1,), dtype='float32')
    na, nb = np.ones((4, 4), 'float32'), np.ones((4, 4), 'float32')
    big = 10 ** 7
    ba, bb = np.random.rand(big).astype('float32'), np.random.rand(big).astype('float32')
    k = 1024
    ma, mb = np.random.rand(k, k).astype('float32'), np.random.rand(k, k).astype('float32')
    rows = [
        _row('relu, 1 element (per call)', 'relu_one', lambda: np.maximum(n1, 0), rep, 20000,
             'target <= 1.5 us'),
        _row('a + b, 4x4 (per call)', 'add_4x4', lambda: na + nb, rep, 20000,
             'target <= 1.5 us'),
        _row('a + b, 10^7 float32', 'add_big', lambda: ba + bb, rep, 5,
             'target within 1.3x of numpy', n=big),
        _row('exp, 10^7 float32', 'exp_big', lambda: np.exp(ba), rep, 5, '', n=big),
        _row('sgemm 1024x1024x1024', 'sgemm', lambda: ma @ mb, rep, 3, '', k=k),
    ]
    label, res, _ = rows[-1]
    rows[-1] = (label, res, 'ours %.1f GFLOP/s; target within 1.1x of numpy'
                % (2 * k ** 3 / res['hybridgluon'] / 1e9))
    return table('NDArray (medians; ratio > 1 means hybridgluon is faster; MXNet and PyTorch in '
                 'their own processes)', rows, peers)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
