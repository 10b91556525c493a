"""The main job: `python -m hybridgluon.demo`.

For now an imperative tour of the C-core NDArray: creation, broadcasting arithmetic, reductions,
matrix products, indexing views, DLPack exchange with NumPy, and a tiny least-squares fit run
entirely through `nd` ops, with the time each stage takes. Later work grows it into training,
hybridizing and exporting LeNet on Fashion-MNIST.
"""
import argparse
import sys
import time

import numpy as np

import hybridgluon as mx
from hybridgluon import nd


def _stage(title, fn, rows):
    t0 = time.perf_counter()
    result = fn()
    dt = (time.perf_counter() - t0) * 1e3
    rows.append((title, dt, result))
    print('%-34s %8.2f ms   %s' % (title, dt, result))


def _fit(n, d, steps, lr):
    """Fits y = X w by gradient descent with nd ops only; returns the final mean squared error."""
    mx.random.seed(0)
    X = nd.random.normal(shape=(n, d))
    w_true = nd.arange(1, d + 1).reshape((d, 1)) / d
    y = nd.dot(X, w_true) + 0.01 * nd.random.normal(shape=(n, 1))
    w = nd.zeros((d, 1))
    for _ in range(steps):
        err = nd.dot(X, w) - y
        w -= lr * nd.dot(X, err, transpose_a=True) / n
    mse = ((nd.dot(X, w) - y) ** 2).mean().asscalar()
    return float(mse), float(nd.abs(w - w_true).max().asscalar())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--size', type=int, default=512, help='matrix size for the dot stage')
    p.add_argument('--steps', type=int, default=200, help='gradient steps of the fit')
    args = p.parse_args(argv)
    print('hybridgluon %s  (threads: %d)' % (mx.__version__, mx._core.num_threads()))
    rows = []
    a = nd.arange(12).reshape((3, 4))
    _stage('create + broadcast arithmetic',
           lambda: (a * 2 + nd.array([1, 2, 3, 4])).sum(axis=1).asnumpy().tolist(), rows)
    _stage('reductions', lambda: [float(a.mean().asscalar()), a.argmax(axis=1).asnumpy().tolist()],
           rows)
    _stage('indexing views', lambda: (a[1].asnumpy().tolist(), a._shares_storage(a[1:3])), rows)
    n = args.size
    m = nd.random.uniform(shape=(n, n))
    _stage('dot %dx%d' % (n, n), lambda: nd.dot(m, m).shape, rows)
    _stage('DLPack to NumPy (zero-copy)', lambda: bool(np.shares_memory(
        np.from_dlpack(m), np.from_dlpack(m))), rows)
    _stage('least squares by gradient descent', lambda: _fit(2000, 16, args.steps, 0.1), rows)
    mse, werr = rows[-1][2]
    print('\nsummary: %d stages in %.1f ms; fit mse %.2e, max weight error %.3f'
          % (len(rows), sum(r[1] for r in rows), mse, werr))
    return 0 if werr < 0.05 else 1


if __name__ == '__main__':
    sys.exit(main())
