"""Metric specifications shared by the fixture generator (gen_gluon_ref.py, run under MXNet
1.9.1) and tests/test_metric_mxnet.py (run under hybridgluon): the custom metric functions
('@name' in a create spec) and the constructor of a metric from a spec, for either `mx`."""
import numpy as np


def label_match(label, pred):
    """One value per batch."""
    return float((pred.argmax(axis=1) == label.ravel()).mean())


def sum_count(label, pred):
    """A (sum, count) pair per batch."""
    return float(np.abs(pred.max(axis=1) - label.ravel()).sum()), label.size


CUSTOM = {'label_match': label_match, 'sum_count': sum_count}


def make_metric(mx, spec):
    """The metric a spec [kind, args, kwargs] describes, built with `mx` (MXNet or ours)."""
    kind, args, kwargs = spec
    args = [CUSTOM[a[1:]] if isinstance(a, str) and a.startswith('@') else a for a in args]
    if kind == 'np':
        return mx.metric.np(CUSTOM[args[0]], **kwargs)
    if kind == 'composite':
        m = mx.metric.CompositeEvalMetric()
        m.add(mx.metric.Accuracy())
        m.add(mx.metric.create('top_k_acc', top_k=2))
        return m
    return mx.metric.create(*args, **kwargs)
