"""Writes viz.json: what MXNet 1.9.1's mx.viz prints and draws for the networks of viz_cases.py.
Run with real MXNet and the graphviz package: python tests/mxnet_ref/gen_viz_ref.py"""
import json
import os
import sys
import warnings

import mxnet as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from viz_cases import run_cases  # noqa: E402

if __name__ == '__main__':
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        cases = run_cases(mx)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'viz.json')
    with open(path, 'w') as f:
        json.dump(cases, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote', path, len(cases), 'cases')
