"""Evaluation metrics (MXNet's `mx.metric`, also `mx.gluon.metric`).

A metric accumulates `sum_metric` and `num_inst` over `update(labels, preds)` calls (lists of
NDArrays, or single NDArrays) and `get()` returns (name, sum_metric / num_inst). Metrics with
global statistics also keep `global_sum_metric` / `global_num_inst`, which `reset_local()`
leaves alone. Per-batch statistics are computed with nd ops; only the resulting scalars come
back to Python. `create()` builds metrics from names, lists, dicts and callables.
"""
import json
import math

import numpy as _np

from . import ndarray as nd
from .ndarray import NDArray

__all__ = ['EvalMetric', 'CompositeEvalMetric', 'Accuracy', 'TopKAccuracy', 'F1', 'MCC',
           'Perplexity', 'MAE', 'MSE', 'RMSE', 'CrossEntropy', 'NegativeLogLikelihood',
           'PearsonCorrelation', 'PCC', 'Loss', 'Torch', 'Caffe', 'CustomMetric',
           'create', 'register', 'alias', 'np', 'check_label_shapes']

_numeric_types = (int, float, _np.generic)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError unless labels and preds have the same length (or shape, with
    shape=True); with wrap=True single NDArrays become one-element lists."""
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError('Shape of labels {} does not match shape of predictions {}'
                         .format(label_shape, pred_shape))
    if wrap:
        if isinstance(labels, NDArray):
            labels = [labels]
        if isinstance(preds, NDArray):
            preds = [preds]
    return labels, preds


def _as_nd(x):
    """An NDArray for x (NumPy arrays and lists are converted, keeping their dtype)."""
    if isinstance(x, NDArray):
        return x
    arr = _np.asarray(x)
    return nd.array(arr, dtype=arr.dtype if arr.dtype != _np.float64 else _np.float32)


def _scalar(x):
    """A Python number from a size-1 NDArray."""
    return x.asscalar().item()


class EvalMetric:
    """Base class of the metrics.

    name: shown by get(); output_names / label_names: the names update_dict() picks out of
    its dicts (all of them when None).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop('has_global_stats', False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return 'EvalMetric: {}'.format(dict(self.get_name_value()))

    def get_config(self):
        """The arguments that recreate this metric with `create(**config)`."""
        config = self._kwargs.copy()
        config.update({'metric': self.__class__.__name__, 'name': self.name,
                       'output_names': self.output_names, 'label_names': self.label_names})
        return config

    def update_dict(self, label, pred):
        """update() with the arrays named by label_names / output_names from two dicts."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        """Adds a batch: labels and preds are lists of NDArrays (or single NDArrays)."""
        raise NotImplementedError()

    def reset(self):
        """Clears the local and the global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clears the local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value, count):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def get(self):
        """(name, value) of the local statistics; NaN before any update."""
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        """(name, value) of the global statistics (the local ones for metrics without)."""
        if self._has_global_stats:
            if self.global_num_inst == 0:
                return (self.name, float('nan'))
            return (self.name, self.global_sum_metric / self.global_num_inst)
        return self.get()

    def get_name_value(self):
        """[(name, value), ...] of get()."""
        return _zip_name_value(*self.get())

    def get_global_name_value(self):
        """[(name, value), ...] of get_global()."""
        return _zip_name_value(*self.get_global())


def _zip_name_value(name, value):
    if not isinstance(name, list):
        name = [name]
    if not isinstance(value, list):
        value = [value]
    return list(zip(name, value))


# ---- registry -----------------------------------------------------------------------------
_REGISTRY = {}


def register(klass):
    """Class decorator: makes `create(klass.__name__.lower())` build klass."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError('can only register subclasses of EvalMetric, got %r' % (klass,))
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator: more names for create()."""
    def reg(klass):
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return reg


def create(metric, *args, **kwargs):
    """A metric from: a registered name ('acc', 'f1', 'rmse', 'ce', ...; extra arguments go to
    its constructor), an EvalMetric (returned as is), a list of those (a
    CompositeEvalMetric), a dict or JSON string from get_config(), or a function
    `feval(label, pred)` of NumPy arrays (a CustomMetric)."""
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError('metric is already an instance. Additional arguments are invalid')
        return metric
    if isinstance(metric, dict):
        kwargs = dict(metric, **kwargs)
        return create(kwargs.pop('metric'), *args, **kwargs)
    if not isinstance(metric, str):
        raise TypeError('metric must be a name, an EvalMetric, a list, a dict or a callable, '
                        'got %r' % (metric,))
    if metric.startswith('['):
        name, config = json.loads(metric)
        return create(name, *args, **dict(config, **kwargs))
    if metric.startswith('{'):
        return create(json.loads(metric), *args, **kwargs)
    klass = _REGISTRY.get(metric.lower())
    if klass is None:
        raise ValueError('metric %r is not registered; known metrics: %s'
                         % (metric, ', '.join(sorted(_REGISTRY))))
    return klass(*args, **kwargs)


@register
@alias('composite')
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; get() returns ([names], [values])."""

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Adds a child metric (anything create() takes)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric number `index`."""
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError('Metric index {} is out of range 0 and {}'
                             .format(index, len(self.metrics))) from None

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = {k: v for k, v in labels.items() if k in self.label_names}
        if self.output_names is not None:
            preds = {k: v for k, v in preds.items() if k in self.output_names}
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, 'metrics', ()):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config.update({'metrics': [m.get_config() for m in self.metrics]})
        return config


# ---- classification -----------------------------------------------------------------------
@register
@alias('acc')
class Accuracy(EvalMetric):
    """Fraction of correct predictions. A prediction shaped unlike its label holds scores:
    its argmax along `axis` is the predicted class."""

    def __init__(self, axis=1, name='accuracy', output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if pred.shape != label.shape:
                pred = nd.argmax(pred, axis=self.axis)
            # Class indices compare as int32, as MXNet truncates them.
            pred = pred.astype('int32').reshape((-1,))
            label = label.astype('int32').reshape((-1,))
            check_label_shapes(label, pred)
            self._add(_scalar(nd.sum(pred == label)), pred.size)


@register
@alias('top_k_accuracy', 'top_k_acc')
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the top_k scores of their (N, classes)
    prediction. Named 'top_k_accuracy_<k>'."""

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if not self.top_k > 1:
            raise ValueError('Please use Accuracy if top_k is no more than 1')
        self.name += '_%d' % self.top_k

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if pred.ndim > 2:
                raise ValueError('Predictions should be no more than 2 dims')
            label = label.astype('int32').astype('float32').reshape((-1,))
            check_label_shapes(label, pred)
            if pred.ndim == 1:  # one score per sample: nothing to rank, compare as classes
                correct = nd.sum(pred.astype('int32').astype('float32') == label)
            else:
                k = min(pred.shape[1], self.top_k)
                top = nd.topk(pred.astype('float32'), axis=1, k=k, ret_typ='indices')
                correct = nd.sum(top == label.reshape((-1, 1)))
            self._add(_scalar(correct), pred.shape[0])


class _BinaryClassificationMetrics:
    """True/false positive/negative counts over batches (local, and global ones that only
    reset_stats clears)."""

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        label, pred = _as_nd(label), _as_nd(pred)
        pred_label = nd.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        label = label.astype('int32').reshape((-1,))
        if label.size > 1:
            ordered = nd.sort(label.astype('float32'))
            changes = _scalar(nd.sum(ordered[1:] != ordered[:-1]))
            if changes > 1:
                raise ValueError('%s currently only supports binary classification.'
                                 % type(self).__name__)
        pred_true = (pred_label.astype('int32') == 1).astype('float32')
        label_true = (label == 1).astype('float32')
        tp = _scalar(nd.sum(pred_true * label_true))
        fp = _scalar(nd.sum(pred_true)) - tp
        fn = _scalar(nd.sum(label_true)) - tp
        tn = label.size - tp - fp - fn
        for key, value in (('true_positives', tp), ('false_positives', fp),
                           ('false_negatives', fn), ('true_negatives', tn)):
            setattr(self, key, getattr(self, key) + int(value))
            setattr(self, 'global_' + key, getattr(self, 'global_' + key) + int(value))

    @staticmethod
    def _fscore(tp, fp, fn):
        precision = float(tp) / (tp + fp) if tp + fp > 0 else 0.
        recall = float(tp) / (tp + fn) if tp + fn > 0 else 0.
        if precision + recall > 0:
            return 2 * precision * recall / (precision + recall)
        return 0.

    @property
    def fscore(self):
        return self._fscore(self.true_positives, self.false_positives, self.false_negatives)

    @property
    def global_fscore(self):
        return self._fscore(self.global_true_positives, self.global_false_positives,
                            self.global_false_negatives)

    def matthewscc(self, use_global=False):
        """Matthews correlation coefficient of the local (or global) counts; 0 without
        examples. Zero factors of the denominator are left out, as MXNet does."""
        pre = 'global_' if use_global else ''
        tp, fp, fn, tn = (float(getattr(self, pre + k)) for k in (
            'true_positives', 'false_positives', 'false_negatives', 'true_negatives'))
        if tp + fp + fn + tn == 0:
            return 0.
        denom = 1.
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            if t != 0.:
                denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self):
        return self.false_negatives + self.false_positives + self.true_negatives + \
            self.true_positives

    @property
    def global_total_examples(self):
        return self.global_false_negatives + self.global_false_positives + \
            self.global_true_negatives + self.global_true_positives

    def local_reset_stats(self):
        self.true_positives = self.false_positives = 0
        self.false_negatives = self.true_negatives = 0

    def reset_stats(self):
        self.local_reset_stats()
        self.global_true_positives = self.global_false_positives = 0
        self.global_false_negatives = self.global_true_negatives = 0


@register
class F1(EvalMetric):
    """F1 score of a binary classification (class 1 positive; preds are (N, 2) scores).
    average='macro' averages the per-batch F1 scores; 'micro' computes one F1 from the counts
    of all batches."""

    def __init__(self, name='f1', output_names=None, label_names=None, average='macro'):
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        if self.average == 'macro':
            self.sum_metric += self.metrics.fscore
            self.global_sum_metric += self.metrics.fscore
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.local_reset_stats()
        else:
            self.sum_metric = self.metrics.fscore * self.metrics.total_examples
            self.global_sum_metric = self.metrics.global_fscore * \
                self.metrics.global_total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def reset(self):
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self):
        super().reset_local()
        self.metrics.local_reset_stats()


@register
class MCC(EvalMetric):
    """Matthews correlation coefficient of a binary classification (class 1 positive; preds
    are (N, 2) scores). average='macro' averages the per-update coefficients; 'micro' computes
    one from the counts of all updates."""

    def __init__(self, name='mcc', output_names=None, label_names=None, average='macro'):
        self._average = average
        self._metrics = _BinaryClassificationMetrics()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._metrics.update_binary_stats(label, pred)
        if self._average == 'macro':
            self.sum_metric += self._metrics.matthewscc()
            self.global_sum_metric += self._metrics.matthewscc(use_global=True)
            self.num_inst += 1
            self.global_num_inst += 1
            self._metrics.reset_stats()
        else:
            self.sum_metric = self._metrics.matthewscc() * self._metrics.total_examples
            self.global_sum_metric = self._metrics.matthewscc(use_global=True) * \
                self._metrics.global_total_examples
            self.num_inst = self._metrics.total_examples
            self.global_num_inst = self._metrics.global_total_examples

    def reset(self):
        super().reset()
        self._metrics.reset_stats()

    def reset_local(self):
        super().reset_local()
        self._metrics.local_reset_stats()


@register
class Perplexity(EvalMetric):
    """exp(mean(-log p(label))) with p the predicted probabilities along `axis`; labels equal
    to ignore_label (None: none) are left out."""

    def __init__(self, ignore_label, axis=-1, name='perplexity', output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        loss = 0.
        num = 0
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if label.size * pred.shape[self.axis] != pred.size:
                raise ValueError('shape mismatch: %s vs. %s' % (label.shape, pred.shape))
            label = label.reshape((label.size,))
            if pred.ndim > 2 and self.axis in (-1, pred.ndim - 1):
                pred = pred.reshape((-1, pred.shape[-1]))
            pred = nd.pick(pred, label.astype('int32'), axis=self.axis)
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(pred.dtype)
                num -= _scalar(nd.sum(ignore))
                pred = pred * (1 - ignore) + ignore
            loss -= _scalar(nd.sum(nd.log(nd._maximum_scalar(pred, scalar=1e-10))))
            num += pred.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


# ---- regression ---------------------------------------------------------------------------
def _column(x):
    """1-D arrays become (N, 1) columns, as MXNet's regression metrics do."""
    return x.reshape((x.shape[0], 1)) if x.ndim == 1 else x


class _Regression(EvalMetric):
    """A per-batch mean of f(label - pred); num_inst counts batches, as in MXNet."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _batch_value(self, diff):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _column(_as_nd(label)), _column(_as_nd(pred))
            if label.dtype != pred.dtype:
                label = label.astype(pred.dtype)
            self._add(self._batch_value(label - pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error, averaged over batches."""

    def __init__(self, name='mae', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _batch_value(self, diff):
        return _scalar(nd.mean(nd.abs(diff)))


@register
class MSE(_Regression):
    """Mean squared error, averaged over batches."""

    def __init__(self, name='mse', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _batch_value(self, diff):
        return _scalar(nd.mean(nd.square(diff)))


@register
class RMSE(_Regression):
    """Root mean squared error of each batch, averaged over batches."""

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _batch_value(self, diff):
        return _scalar(nd.sqrt(nd.mean(nd.square(diff))))


@register
@alias('ce')
class CrossEntropy(EvalMetric):
    """Mean of -log(p[label] + eps) over samples, p the (N, classes) predicted
    probabilities."""

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            label = label.reshape((-1,))
            if label.shape[0] != pred.shape[0]:
                raise ValueError('%s: %d labels for %d predictions'
                                 % (type(self).__name__, label.shape[0], pred.shape[0]))
            prob = nd.pick(pred, label.astype('int32'), axis=1)
            self._add(_scalar(nd.sum(-nd.log(prob + self.eps))), label.shape[0])


@register
@alias('nll_loss')
class NegativeLogLikelihood(CrossEntropy):
    """Mean of -log(p[label] + eps) over samples, p the (N, classes) predicted probabilities
    (the same statistic as CrossEntropy under MXNet's other name)."""

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names,
                         label_names=label_names)


@register
@alias('pearsonr')
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of labels and predictions (flattened). average='macro' averages
    the per-batch coefficients; 'micro' computes one coefficient over all batches from running
    means, sums of squares and the co-moment (updated exactly batch by batch). As in MXNet
    1.9.1, the micro statistics survive reset_local() (only reset() clears them), and
    get_global() in micro mode gives 0.0 (MXNet never fills its global sum there)."""

    def __init__(self, name='pearsonr', output_names=None, label_names=None, average='macro'):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset_micro(self):
        self._n = 0
        self._mean_l = self._mean_p = 0.
        self._sse_l = self._sse_p = self._conv = 0.

    def reset(self):
        super().reset()
        if self.average == 'micro':
            self.reset_micro()

    @staticmethod
    def _flat64(x):
        return _as_nd(x).reshape((-1,)).astype('float64')

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            check_label_shapes(label, pred, False, True)
            label, pred = self._flat64(label), self._flat64(pred)
            self.num_inst += 1
            self.global_num_inst += 1
            if self.average == 'macro':
                dl = label - _scalar(nd.mean(label))
                dp = pred - _scalar(nd.mean(pred))
                r = _scalar(nd.sum(dl * dp)) / math.sqrt(
                    _scalar(nd.sum(dl * dl)) * _scalar(nd.sum(dp * dp)))
                self.sum_metric += r
                self.global_sum_metric += r
                continue
            # Chan et al.'s update: sum((x - old mean) * (x - new mean)) adds the batch's
            # squared deviations plus the shift of the mean; the co-moment likewise.
            n = self._n + label.size
            old_l, old_p = self._mean_l, self._mean_p
            self._mean_l = old_l + _scalar(nd.sum(label - old_l)) / n
            self._mean_p = old_p + _scalar(nd.sum(pred - old_p)) / n
            self._sse_l += _scalar(nd.sum((label - old_l) * (label - self._mean_l)))
            self._sse_p += _scalar(nd.sum((pred - old_p) * (pred - self._mean_p)))
            self._conv += _scalar(nd.sum((label - self._mean_l) * (pred - old_p)))
            self._n = n

    def get(self):
        if self.num_inst == 0:
            return (self.name, float('nan'))
        if self.average == 'macro':
            return (self.name, self.sum_metric / self.num_inst)
        denom = math.sqrt(self._sse_p * self._sse_l)
        return (self.name, self._conv / denom if denom else float('nan'))


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Gorodkin's R_K) from a confusion matrix accumulated
    over the updates; preds are class scores (argmax taken) or class indices shaped like the
    labels. The matrix grows with the largest class seen (at least 2 x 2). get() is NaN when a
    row or column marginal makes the coefficient undefined."""

    def __init__(self, name='pcc', output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, k):
        for attr in ('lcm', 'gcm'):
            bigger = nd.zeros((k, k), dtype='float64')
            bigger[:self.k, :self.k] = getattr(self, attr)
            setattr(self, attr, bigger)
        self.k = k

    @staticmethod
    def _calc_mcc(cmat):
        n = _scalar(nd.sum(cmat))
        x = nd.sum(cmat, axis=1)
        y = nd.sum(cmat, axis=0)
        cov_xx = _scalar(nd.sum(x * (n - x)))
        cov_yy = _scalar(nd.sum(y * (n - y)))
        if cov_xx == 0 or cov_yy == 0:
            return float('nan')
        cov_xy = _scalar(nd.sum(nd.diag(cmat) * n - x * y))
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label).astype('int32'), _as_nd(pred)
            if pred.shape != label.shape:
                pred = nd.argmax(pred, axis=1)
            pred = pred.astype('int32').reshape((-1,))
            label = label.reshape((-1,))
            n = int(max(_scalar(nd.max(pred)), _scalar(nd.max(label))))
            if n >= self.k:
                self._grow(n + 1)
            # bcm[i, j]: samples predicted i with label j
            bcm = nd.dot(nd.one_hot(pred, self.k, dtype='float64'),
                         nd.one_hot(label, self.k, dtype='float64'), transpose_a=True)
            self.lcm = self.lcm + bcm
            self.gcm = self.gcm + bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self):
        self.global_num_inst = 0
        self.gcm = nd.zeros((self.k, self.k), dtype='float64')
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = nd.zeros((self.k, self.k), dtype='float64')


@register
@alias('loss')
class Loss(EvalMetric):
    """Mean of the values of the predictions (which are losses); labels are ignored."""

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, NDArray):
            preds = [preds]
        for pred in preds:
            pred = _as_nd(pred)
            self._add(_scalar(nd.sum(pred)), pred.size)


@register
class Torch(Loss):
    """Loss under the name MXNet gives torch criterions."""

    def __init__(self, name='torch', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Loss under the name MXNet gives caffe losses."""

    def __init__(self, name='caffe', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from `feval(label, pred)` on NumPy arrays, returning a value (counted once)
    or a (sum, count) pair."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if name.find('<') != -1:
                name = 'custom(%s)' % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            label = label.asnumpy() if isinstance(label, NDArray) else label
            pred = pred.asnumpy() if isinstance(pred, NDArray) else pred
            reval = self._feval(label, pred)
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError('CustomMetric cannot be serialized')


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a function of NumPy arrays (MXNet's `mx.metric.np`)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
