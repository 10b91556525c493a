"""Conformance fixtures of contrib ops that gen_fixtures.py cannot call as it does every other
op. Run under real MXNet 1.9.1, from this folder:

    /path/to/mxnet-venv/bin/python gen_fixtures_contribops.py

_contrib_group_adagrad_update exists in MXNet for row_sparse gradients only (a dense one is
"not implemented for CPU"), so MXNet is given the gradient as a row_sparse array holding every
row, which is the dense update hybridgluon's op computes; the fixture stores the dense arrays,
in gen_fixtures.py's format, so tests/test_mxnet_conformance.py compares it like any other.
"""
import json
import os

import numpy as np
import mxnet as mx

from gen_fixtures import _jsonable

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ops')


def group_adagrad_cases():
    rng = np.random.default_rng(20261126)
    cases = []
    for shape, attrs in [((3, 4), {'lr': 0.1}),
                         ((5, 2), {'lr': 0.05, 'rescale_grad': 0.14, 'clip_gradient': 0.4}),
                         ((2, 6), {'lr': 0.2, 'epsilon': 1e-8, 'rescale_grad': 0.8})]:
        w = rng.uniform(-1, 1, shape).astype('float32')
        g = rng.uniform(-1, 1, shape).astype('float32')
        h = rng.uniform(0, 0.5, (shape[0], 1)).astype('float32')
        cases.append(([w, g, h], attrs))
    return cases


def main():
    op = '_contrib_group_adagrad_update'
    arrays, metas = {}, []
    for i, (inputs, attrs) in enumerate(group_adagrad_cases()):
        w, g, h = (mx.nd.array(a) for a in inputs)
        y = w.copy()   # MXNet's sparse kernel writes in place only
        mx.nd.contrib.group_adagrad_update(y, g.tostype('row_sparse'), h, out=y, **attrs)
        for j, a in enumerate(inputs):
            arrays['c%d_x%d' % (i, j)] = a
        arrays['c%d_y0' % i] = y.asnumpy()
        arrays['c%d_m2' % i] = h.asnumpy()
        metas.append({'attrs': {k: _jsonable(v) for k, v in attrs.items()}, 'n_in': 3,
                      'n_out': 1, 'grad': False, 'wrt': [], 'train': False, 'mutates': [2],
                      'note': 'MXNet given the gradient as row_sparse (every row)'})
    meta = {'op': op, 'mxnet_version': mx.__version__, 'cases': metas}
    arrays['meta'] = np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8)
    np.savez_compressed(os.path.join(OUT, '%s.npz' % op), **arrays)
    print('wrote %s (%d cases)' % (op, len(metas)))


if __name__ == '__main__':
    main()
