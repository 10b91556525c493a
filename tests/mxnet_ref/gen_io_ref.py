"""Writes io_iters.npz: MXNet 1.9.1's MNISTIter, LibSVMIter and CSVIter batches for io_cases.py.
Run with real MXNet: python tests/mxnet_ref/gen_io_ref.py"""
import os
import sys
import tempfile

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import io_cases as C  # noqa: E402

if __name__ == '__main__':
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in C.MNIST_CASES:
            order, labels, nb = C.run_mnist(mx, tmp, kw)
            out['mnist_%s_order' % name] = order
            out['mnist_%s_label' % name] = labels
            out['mnist_%s_batches' % name] = np.array(nb)
        for name, kw in C.LIBSVM_CASES:
            data, label, pads = C.run_libsvm(mx, tmp, kw)
            out['libsvm_%s_data' % name] = data
            out['libsvm_%s_label' % name] = label
            out['libsvm_%s_pad' % name] = pads
        for name, kw in C.CSV_CASES:
            data, label, pads = C.run_csv(mx, tmp, kw)
            out['csv_%s_data' % name] = data
            out['csv_%s_label' % name] = label
            out['csv_%s_pad' % name] = pads
    path = os.path.join(HERE, 'io_iters.npz')
    np.savez_compressed(path, **out)
    print('wrote', path, len(out), 'arrays')
