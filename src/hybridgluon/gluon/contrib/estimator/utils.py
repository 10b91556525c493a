"""Argument checks shared by the Estimator and its event handlers.

Metrics reach the estimator as one EvalMetric, a CompositeEvalMetric (flattened into its leaf
metrics, so each is logged and reset on its own) or a list; handlers must refer to the very metric
objects the estimator owns, since those are the ones the MetricHandler updates.
"""
from ....base import MXNetValueError
from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss


def _check_metrics(metrics):
    """A list of EvalMetrics from None, one metric, a composite one or a list of them."""
    if isinstance(metrics, CompositeEvalMetric):
        return [leaf for child in metrics.metrics for leaf in _check_metrics(child)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    if metrics is None:
        return []
    if isinstance(metrics, (list, tuple)) and all(isinstance(m, EvalMetric) for m in metrics):
        return list(metrics)
    raise MXNetValueError('metrics must be an EvalMetric or a list of EvalMetric '
                          '(see mxnet.metric.EvalMetric), got: {!r}'.format(metrics))


def _check_metric_known(handler, metric, known_metrics):
    if metric not in known_metrics:
        raise MXNetValueError(
            'Event handler {} refers to the metric {} which is neither one of the estimator\'s '
            'training nor validation metrics; pass metrics from estimator.train_metrics and '
            'estimator.val_metrics instead.'.format(type(handler).__name__, metric))


def _check_handler_metric_ref(handler, known_metrics):
    """Raises unless every metric a handler holds (in an attribute whose name contains
    'metric', as MXNet checks) is one of known_metrics."""
    for attr in dir(handler):
        if 'metric' not in attr:
            continue
        ref = getattr(handler, attr, None)
        # Methods (a custom handler's `update_metric`, say) are behaviour, not references.
        if not ref or callable(ref):
            continue
        for metric in (ref if isinstance(ref, (list, tuple)) else [ref]):
            _check_metric_known(handler, metric, known_metrics)


def _suggest_metric_for_loss(loss):
    """The metric worth reporting next to a loss, or None: accuracy for softmax
    cross-entropy, as MXNet suggests."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
