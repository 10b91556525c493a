"""NDArray benchmarks (issue: foundation): per-call overhead of small ops, a large element-wise
op and sgemm, against NumPy and PyTorch CPU (when installed), measured side by side."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, table, try_torch  # noqa: E402

import hybridgluon as mx  # noqa: E402

nd = mx.nd


def run(quick=False):
    torch = try_torch()
    peers = ['hybridgluon', 'numpy'] + (['torch'] if torch else [])
    rows = []
    rep = 5 if quick else 9

    # Call overhead: nd.relu on one element, a + b on 4x4.
    x1 = nd.ones((1,))
    n1 = np.ones((1,), dtype='float32')
    cases = {'hybridgluon': lambda: nd.relu(x1), 'numpy': lambda: np.maximum(n1, 0)}
    if torch:
        t1 = torch.ones(1)
        cases['torch'] = lambda: torch.relu(t1)
    rows.append(('relu, 1 element (per call)', compare(cases, rep, 20000), 'target <= 1.5 us'))

    a, b = nd.ones((4, 4)), nd.ones((4, 4))
    na, nb = np.ones((4, 4), 'float32'), np.ones((4, 4), 'float32')
    cases = {'hybridgluon': lambda: a + b, 'numpy': lambda: na + nb}
    if torch:
        ta, tb = torch.ones(4, 4), torch.ones(4, 4)
        cases['torch'] = lambda: ta + tb
    rows.append(('a + b, 4x4 (per call)', compare(cases, rep, 20000), 'target <= 1.5 us'))

    # Large element-wise: 10^7 floats.
    n = 10 ** 7
    big_a, big_b = nd.random.uniform(shape=(n,)), nd.random.uniform(shape=(n,))
    np_a, np_b = big_a.asnumpy(), big_b.asnumpy()
    cases = {'hybridgluon': lambda: big_a + big_b, 'numpy': lambda: np_a + np_b}
    if torch:
        ta, tb = torch.from_numpy(np_a), torch.from_numpy(np_b)
        cases['torch'] = lambda: ta + tb
    rows.append(('a + b, 10^7 float32', compare(cases, rep, 5), 'target within 1.3x of numpy'))
    cases = {'hybridgluon': lambda: nd.exp(big_a), 'numpy': lambda: np.exp(np_a)}
    if torch:
        cases['torch'] = lambda: torch.exp(ta)
    rows.append(('exp, 10^7 float32', compare(cases, rep, 5), ''))

    # sgemm 1024^3.
    k = 1024
    ma, mb = nd.random.uniform(shape=(k, k)), nd.random.uniform(shape=(k, k))
    npa, npb = ma.asnumpy(), mb.asnumpy()
    cases = {'hybridgluon': lambda: nd.dot(ma, mb), 'numpy': lambda: npa @ npb}
    if torch:
        tma, tmb = torch.from_numpy(npa), torch.from_numpy(npb)
        cases['torch'] = lambda: tma @ tmb
    res = compare(cases, rep, 3)
    gflops = 2 * k ** 3 / res['hybridgluon'] / 1e9
    rows.append(('sgemm 1024x1024x1024', res, 'ours %.1f GFLOP/s; target within 1.1x of numpy'
                 % gflops))
    return table('NDArray (medians; ratio > 1 means hybridgluon is faster)', rows, peers)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
