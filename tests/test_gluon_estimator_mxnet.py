"""gluon.contrib.estimator against real MXNet 1.9.1: the scenarios of
tests/mxnet_ref/gen_estimator.py (training on one and two contexts, logging every 2 batches,
validation, evaluate, checkpoints by epoch and by batch, rotation, save_best, resuming by epoch
and by batch, early stopping in each mode) run here and must give MXNet's logs, checkpoint
files, counters, metric values and final weights, recorded in tests/mxnet_ref/estimator.json.

Three log messages differ on purpose and are compared after normalising: MXNet's 'improved from
A to B' prints the new best twice (here the old best, then the new), its early-stopping line
misspells 'EarlyStoppingHanlder', and the 'symbol file is not saved' notice is worded anew.
"""
import json
import os
import re
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon.contrib import estimator as est_pkg

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, 'mxnet_ref')
sys.path.insert(0, REF)
import gen_estimator as G  # noqa: E402

with open(os.path.join(REF, 'estimator.json')) as _f:
    FX = json.load(_f)


@pytest.fixture(scope='module')
def ours(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('estimator'))
    return G.run(mx, est_pkg, workdir)


def _normalise(log):
    log = re.sub(r'improved from \S+ to (\S+),', r'improved to \1,', log)
    log = log.replace('EarlyStoppingHanlder', 'EarlyStoppingHandler')
    return '\n'.join('<symbol not saved>' if 'symbol file' in line else line
                     for line in log.split('\n'))


SCENARIOS = sorted(k for k in FX if k not in ('mxnet_version', 'all'))


def test_fixture_is_from_mxnet_1_9_1():
    assert FX['mxnet_version'] == '1.9.1'
    assert len(SCENARIOS) == 12


def test_public_names_as_mxnet():
    for mod, names in FX['all'].items():
        assert sorted(getattr(est_pkg, mod).__all__) == names, mod
        for name in names:   # re-exported by the package, as `from ...estimator import *` needs
            assert getattr(est_pkg, name) is getattr(getattr(est_pkg, mod), name)


@pytest.mark.parametrize('name', SCENARIOS)
def test_scenario_as_mxnet(ours, name):
    want, got = FX[name], ours[name]
    assert sorted(got) == sorted(want)
    for key in want:
        if key == 'log':
            assert _normalise(got[key]).split('\n') == _normalise(want[key]).split('\n')
        elif key == 'w':
            np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=2e-6,
                                       err_msg=name)
        elif key == 'metrics':
            assert [n for n, _ in got[key]] == [n for n, _ in want[key]]
            np.testing.assert_allclose([v for _, v in got[key]], [v for _, v in want[key]],
                                       rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            assert got[key] == want[key], (name, key)
