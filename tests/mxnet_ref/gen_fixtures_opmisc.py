"""Conformance fixtures of _multi_adamw_update and _multi_mp_adamw_update, which gen_fixtures.py
cannot call as it does every other op: MXNet 1.9.1 runs them only with `out` given (its shape
inference fails without it), so here each call gets output arrays of the weights' shapes and
dtypes. The fixtures are in gen_fixtures.py's format (its gen_ops writes them), so
tests/test_mxnet_conformance.py replays them like any other. Run under real MXNet 1.9.1, from
this folder:

    /path/to/mxnet-venv/bin/python gen_fixtures_opmisc.py
"""
import os

import mxnet as mx

import gen_fixtures
import op_cases_opmisc

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ops')
STRIDE = {'_multi_adamw_update': 4, '_multi_mp_adamw_update': 5}


def _with_out(name):
    fn = getattr(mx.nd._internal, name)
    stride = STRIDE[name]

    def call(*xs, **attrs):
        weights = xs[:-1][::stride]
        out = [mx.nd.zeros(w.shape, dtype=w.dtype) for w in weights]
        fn(*xs, out=out, **attrs)
        return out
    return call


def main():
    mx_op = gen_fixtures._mx_op
    gen_fixtures._mx_op = lambda name: _with_out(name) if name in STRIDE else mx_op(name)
    gen_fixtures.op_cases.build_cases = op_cases_opmisc.build_multi_cases
    gen_fixtures.gen_ops(OUT, only=set(STRIDE))


if __name__ == '__main__':
    main()
