"""mx.metric against real MXNet 1.9.1: every metric (created by name or alias through create(),
lists of metrics, CompositeEvalMetric) replays MXNet's update batches and must give MXNet's
name, get(), get_global(), get_name_value() and get_global_name_value() after each update,
after reset_local() and after reset(), and the same get_config(). Fixtures:
tests/mxnet_ref/metrics.json, written by tests/mxnet_ref/gen_gluon_ref.py under MXNet."""
import json
import math
import os
import sys

import numpy as np
import pytest

import hybridgluon as mx

REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref')
FIX = os.path.join(REF, 'metrics.json')
sys.path.insert(0, REF)
from metric_specs import make_metric  # noqa: E402  (the generator's constructor)
with open(FIX) as _f:
    CASES = json.load(_f)['cases']


def _case_id(i):
    spec = CASES[i]['spec']
    return '%d-%s%s' % (i, spec[1][0] if spec[1] and spec[0] != 'np' else spec[0],
                        ''.join(',%s=%s' % kv for kv in sorted(spec[2].items())))


def _same(ours, ref, what):
    if isinstance(ref, list):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(ref), \
            '%s: %r vs MXNet %r' % (what, ours, ref)
        for k, (a, b) in enumerate(zip(ours, ref)):
            _same(a, b, '%s[%d]' % (what, k))
    elif isinstance(ref, str):
        assert ours == ref, '%s: %r vs MXNet %r' % (what, ours, ref)
    elif isinstance(ref, float) and math.isnan(ref):
        assert isinstance(ours, float) and math.isnan(ours), '%s: %r vs MXNet nan' % (what, ours)
    else:
        assert abs(float(ours) - ref) <= 1e-5 * max(1.0, abs(ref)), \
            '%s: %r vs MXNet %r' % (what, ours, ref)


def _check_state(m, ref, step):
    _same(list(m.get()), ref['get'], '%s: get()' % step)
    _same(list(m.get_global()), ref['get_global'], '%s: get_global()' % step)
    _same([list(p) for p in m.get_name_value()], ref['name_value'],
          '%s: get_name_value()' % step)
    _same([list(p) for p in m.get_global_name_value()], ref['global_name_value'],
          '%s: get_global_name_value()' % step)


def _nd(batch):
    return [mx.nd.array(np.asarray(a, dtype=np.float32)) for a in batch]


@pytest.mark.parametrize('i', range(len(CASES)), ids=_case_id)
def test_metric_matches_mxnet(i):
    case = CASES[i]
    m = make_metric(mx, case['spec'])
    assert type(m).__name__ == case['type']
    assert m.name == case['name']
    script = iter(case['script'])
    _check_state(m, next(script), 'after create')
    for k, (labels, preds) in enumerate(case['batches']):
        m.update(_nd(labels), _nd(preds))
        _check_state(m, next(script), 'after update %d' % k)
    m.reset_local()
    _check_state(m, next(script), 'after reset_local')
    labels, preds = case['batches'][0]
    m.update(_nd(labels), _nd(preds))
    _check_state(m, next(script), 'after an update past reset_local')
    m.reset()
    _check_state(m, next(script), 'after reset')
    if case['config'] is not None:
        assert m.get_config() == case['config']


def test_fixture_covers_every_metric():
    names = {c['type'] for c in CASES}
    ours = {n for n in mx.metric.__all__ if isinstance(getattr(mx.metric, n), type) and
            issubclass(getattr(mx.metric, n), mx.metric.EvalMetric)}
    missing = ours - names - {'EvalMetric'}
    assert not missing, 'no MXNet fixture for %s' % sorted(missing)
