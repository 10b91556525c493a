"""mx.metric (and mx.gluon.metric): each metric against NumPy on several batches, MXNet's
documented examples, local vs global statistics, CompositeEvalMetric and create()."""
import math

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import metric

nd = mx.nd


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def test_namespaces():
    assert mx.metric is metric
    assert mx.gluon.metric is metric


def test_mxnet_doc_examples():
    preds = [nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])]
    labels = [nd.array([0, 1, 1])]
    cases = [(metric.Accuracy(), ('accuracy', 2 / 3)),
             (metric.F1(), ('f1', 0.8)),
             (metric.CrossEntropy(), ('cross-entropy', 0.57159948348999023)),
             (metric.Perplexity(ignore_label=None), ('perplexity', 1.7710976285155853))]
    for m, (name, value) in cases:
        m.update(labels, preds)
        got = m.get()
        assert got[0] == name
        assert got[1] == pytest.approx(value, rel=1e-6)
    p = [nd.array(np.array([3, -0.5, 2, 7]).reshape(4, 1))]
    lab = [nd.array(np.array([2.5, 0.0, 2, 8]).reshape(4, 1))]
    for name, value in (('mae', 0.5), ('mse', 0.375), ('rmse', 0.612372457981)):
        m = metric.create(name)
        m.update(lab, p)
        assert m.get() == (name, pytest.approx(value, rel=1e-6))


def test_accuracy_batches(rng):
    m = metric.Accuracy()
    correct = total = 0
    for n in (5, 8, 1):
        scores = rng.random((n, 4)).astype(np.float32)
        lab = rng.integers(0, 4, n)
        m.update([nd.array(lab)], [nd.array(scores)])
        correct += (scores.argmax(1) == lab).sum()
        total += n
    assert m.get() == ('accuracy', pytest.approx(correct / total))
    assert m.num_inst == total
    # class-index predictions (same shape as the label) compare directly, as int32
    m2 = metric.Accuracy()
    m2.update(nd.array([1, 2, 3, 0]), nd.array([1.7, 2.2, 0, 0]))  # single NDArrays work too
    assert m2.get()[1] == pytest.approx(0.75)
    # axis picks the class axis
    m3 = metric.Accuracy(axis=0)
    m3.update([nd.array([1, 0])], [nd.array([[0.1, 0.9], [0.9, 0.1]])])
    assert m3.get()[1] == 1.0


def test_label_pred_count_mismatch():
    with pytest.raises(ValueError, match='does not match'):
        metric.Accuracy().update([nd.array([1])], [nd.array([[1.]]), nd.array([[1.]])])
    with pytest.raises(ValueError, match='does not match'):
        metric.Accuracy().update([nd.array([1, 0, 1])], [nd.array([[1., 0.], [0., 1.]])])


def test_top_k(rng):
    np.random.seed(999)
    labels = [nd.array([2, 6, 9, 2, 3, 4, 7, 8, 9, 6])]
    preds = [nd.array(np.random.rand(10, 10))]
    m = metric.TopKAccuracy(top_k=3)
    m.update(labels, preds)
    assert m.get() == ('top_k_accuracy_3', pytest.approx(0.3))
    scores = rng.random((20, 6)).astype(np.float32)
    lab = rng.integers(0, 6, 20)
    for k in (2, 4, 9):
        m = metric.create('top_k_acc', top_k=k)
        m.update([nd.array(lab)], [nd.array(scores)])
        top = np.argsort(-scores, axis=1)[:, :k]
        assert m.get()[1] == pytest.approx((top == lab[:, None]).any(1).mean())
    with pytest.raises(ValueError, match='Accuracy'):
        metric.TopKAccuracy(top_k=1)


def _f1(lab, pred_cls):
    tp = ((pred_cls == 1) & (lab == 1)).sum()
    fp = ((pred_cls == 1) & (lab != 1)).sum()
    fn = ((pred_cls != 1) & (lab == 1)).sum()
    prec = tp / (tp + fp) if tp + fp else 0.
    rec = tp / (tp + fn) if tp + fn else 0.
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.


def test_f1_macro_micro(rng):
    batches = [(rng.integers(0, 2, n), rng.random((n, 2)).astype(np.float32)) for n in (6, 9)]
    macro, micro = metric.F1(), metric.F1(average='micro')
    for lab, scores in batches:
        for m in (macro, micro):
            m.update([nd.array(lab)], [nd.array(scores)])
    per_batch = [_f1(lab, s.argmax(1)) for lab, s in batches]
    assert macro.get()[1] == pytest.approx(np.mean(per_batch))
    all_lab = np.concatenate([b[0] for b in batches])
    all_pred = np.concatenate([b[1].argmax(1) for b in batches])
    assert micro.get()[1] == pytest.approx(_f1(all_lab, all_pred))
    assert micro.num_inst == 15
    with pytest.raises(ValueError, match='binary'):
        metric.F1().update([nd.array([0, 1, 2])], [nd.array(np.eye(3)[:, :2])])


def test_perplexity_ignore_label(rng):
    probs = rng.random((6, 4)).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    lab = np.array([0, 1, -1, 3, -1, 2])
    m = metric.Perplexity(ignore_label=-1)
    m.update([nd.array(lab)], [nd.array(probs)])
    keep = lab != -1
    want = math.exp(-np.log(probs[keep, lab[keep]]).mean())
    assert m.get() == ('perplexity', pytest.approx(want, rel=1e-5))
    # (N, T, C) predictions with (N, T) labels
    p3 = probs.reshape(2, 3, 4)
    m3 = metric.Perplexity(ignore_label=None)
    m3.update([nd.array(np.abs(lab).reshape(2, 3))], [nd.array(p3)])
    want = math.exp(-np.log(probs[np.arange(6), np.abs(lab)]).mean())
    assert m3.get()[1] == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match='shape mismatch'):
        metric.Perplexity(None).update([nd.array([1, 2])], [nd.array(probs)])


def test_regression_metrics_average_batches(rng):
    batches = [(rng.standard_normal(n).astype(np.float32),
                rng.standard_normal((n, 1)).astype(np.float32)) for n in (3, 7)]
    ms = {name: metric.create(name) for name in ('mae', 'mse', 'rmse')}
    for lab, pred in batches:
        for m in ms.values():
            m.update([nd.array(lab)], [nd.array(pred)])
    diffs = [lab.reshape(-1, 1) - pred for lab, pred in batches]
    assert ms['mae'].get()[1] == pytest.approx(np.mean([np.abs(d).mean() for d in diffs]),
                                               rel=1e-5)
    assert ms['mse'].get()[1] == pytest.approx(np.mean([(d ** 2).mean() for d in diffs]),
                                               rel=1e-5)
    assert ms['rmse'].get()[1] == pytest.approx(
        np.mean([np.sqrt((d ** 2).mean()) for d in diffs]), rel=1e-5)
    assert ms['mae'].num_inst == 2


def test_cross_entropy_eps(rng):
    probs = rng.random((5, 3)).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    lab = rng.integers(0, 3, 5)
    m = metric.CrossEntropy(eps=1e-3)
    m.update([nd.array(lab)], [nd.array(probs)])
    want = -np.log(probs[np.arange(5), lab] + 1e-3).mean()
    assert m.get() == ('cross-entropy', pytest.approx(want, rel=1e-5))
    assert metric.create('ce').name == 'cross-entropy'


def test_loss_metric():
    m = metric.Loss()
    m.update(None, nd.array([1., 2., 3.]))
    m.update(None, [nd.array([[4.], [5.]])])
    assert m.get() == ('loss', pytest.approx(3.0))
    assert m.num_inst == 5


def test_reset_local_and_global():
    m = metric.Accuracy()
    assert math.isnan(m.get()[1])
    m.update([nd.array([1, 1])], [nd.array([1, 0])])
    m.reset_local()
    m.update([nd.array([1, 1])], [nd.array([1, 1])])
    assert m.get()[1] == 1.0
    assert m.get_global()[1] == pytest.approx(0.75)
    assert m.get_global_name_value() == [('accuracy', pytest.approx(0.75))]
    m.reset()
    assert math.isnan(m.get_global()[1])


def test_composite_and_create():
    preds = [nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])]
    labels = [nd.array([0, 1, 1])]
    comp = metric.CompositeEvalMetric()
    for child in (metric.Accuracy(), metric.F1()):
        comp.add(child)
    comp.update(labels=labels, preds=preds)
    assert comp.get() == (['accuracy', 'f1'], [pytest.approx(2 / 3), pytest.approx(0.8)])
    assert comp.get_name_value() == [('accuracy', pytest.approx(2 / 3)),
                                     ('f1', pytest.approx(0.8))]
    assert comp.get_metric(1).name == 'f1'
    with pytest.raises(ValueError, match='out of range'):
        comp.get_metric(5)
    comp.reset()
    assert math.isnan(comp.get()[1][0])
    made = metric.create(['acc', metric.F1(), 'mse'])
    assert isinstance(made, metric.CompositeEvalMetric)
    assert [m.name for m in made.metrics] == ['accuracy', 'f1', 'mse']
    acc = metric.Accuracy()
    assert metric.create(acc) is acc
    with pytest.raises(ValueError):
        metric.create(acc, axis=0)
    with pytest.raises(ValueError, match='not registered.*accuracy'):
        metric.create('no-such-metric')
    assert isinstance(metric.create('Accuracy'), metric.Accuracy)
    assert isinstance(metric.create('top_k_accuracy', top_k=2), metric.TopKAccuracy)
    assert isinstance(metric.create('perplexity', ignore_label=None), metric.Perplexity)
    assert isinstance(metric.create('loss'), metric.Loss)
    assert isinstance(metric.create('composite'), metric.CompositeEvalMetric)


def test_config_round_trip():
    m = metric.Accuracy(axis=0, name='acc0')
    config = m.get_config()
    assert config['metric'] == 'Accuracy' and config['axis'] == 0
    again = metric.create(config)
    assert isinstance(again, metric.Accuracy) and again.axis == 0 and again.name == 'acc0'
    assert isinstance(metric.create('["f1", {"average": "micro"}]'), metric.F1)
    comp = metric.create(['acc', 'mae'])
    assert [c['metric'] for c in comp.get_config()['metrics']] == ['Accuracy', 'MAE']


def test_custom_metric():
    def mean_abs(label, pred):
        return np.abs(label - pred).mean()

    m = metric.create(mean_abs)
    assert isinstance(m, metric.CustomMetric) and m.name == 'mean_abs'
    m.update([nd.array([1., 2.])], [nd.array([2., 4.])])
    assert m.get() == ('mean_abs', pytest.approx(1.5))
    pair = metric.CustomMetric(lambda lab, p: (float(np.sum(lab == p)), lab.size))
    assert pair.name.startswith('custom(')
    pair.update([nd.array([1., 2., 3.])], [nd.array([1., 0., 3.])])
    assert pair.get()[1] == pytest.approx(2 / 3)
    assert metric.np(mean_abs).name == 'mean_abs'
    with pytest.raises(NotImplementedError):
        m.get_config()


def test_update_dict_and_str():
    m = metric.Accuracy(output_names=['out'], label_names=['lab'])
    m.update_dict({'lab': nd.array([1, 0]), 'other': nd.array([0, 0])},
                  {'out': nd.array([[0., 1.], [0., 1.]]), 'x': nd.array([[1., 0.]])})
    assert m.get()[1] == 0.5
    assert str(m) == "EvalMetric: {'accuracy': 0.5}"


def test_register_custom_class():
    @metric.register
    @metric.alias('always_one')
    class AlwaysOne(metric.EvalMetric):
        def __init__(self, name='always_one'):
            super().__init__(name)

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 1

    m = metric.create('always_one')
    m.update([], [])
    assert m.get() == ('always_one', 1.0)
    assert isinstance(metric.create('alwaysone'), AlwaysOne)


def test_numpy_inputs_accepted(rng):
    m = metric.Accuracy()
    m.update([np.array([0, 1])], [np.array([[0.9, 0.1], [0.2, 0.8]], np.float32)])
    assert m.get()[1] == 1.0
