"""Runs under real MXNet: imports an exported model (symbol JSON + params) with
SymbolBlock.imports, runs the input 'x' of an .npz through it (hybridized, inference mode) and
writes the output as 'y' of another .npz. Used by tests/test_mxnet_conformance.py to check that
hybridgluon's exports load in MXNet and give its numbers.

    python mxnet_import_run.py model-symbol.json model-0000.params in.npz out.npz [input_name]
"""
import sys

import numpy as np
import mxnet as mx


def main():
    sym_file, params_file, in_file, out_file = sys.argv[1:5]
    input_name = sys.argv[5] if len(sys.argv) > 5 else 'data'
    net = mx.gluon.SymbolBlock.imports(sym_file, [input_name], params_file)
    net.hybridize()
    with np.load(in_file) as z:
        x = z['x']
    y = net(mx.nd.array(x)).asnumpy()
    np.savez(out_file, y=y)


if __name__ == '__main__':
    main()
