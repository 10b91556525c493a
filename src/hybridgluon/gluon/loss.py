"""Losses (MXNet's `gluon.loss`): HybridBlocks computing a per-sample loss from predictions
and labels with MXNet 1.9.1's formulas.

Every loss takes `weight` (a global scale, applied last) and `batch_axis`; most reduce to shape
(batch,) by averaging the other axes, and take an optional `sample_weight` broadcast against
the element-wise loss. Labels of another shape but the same size as the prediction are
reshaped like it (`_reshape_like`). A traced graph knows no shapes, and the library has no
`reshape_like` op yet, so a hybridized loss reshapes its NDArray inputs before entering the
graph (see `Loss.forward`); a loss traced inside a larger hybridized network must get labels
already shaped like its predictions.
"""
import numpy as _np

from .. import ndarray
from ..base import MXNetError
from ..ndarray import NDArray
from .block import HybridBlock

__all__ = ['Loss', 'L2Loss', 'L1Loss', 'SigmoidBinaryCrossEntropyLoss', 'SigmoidBCELoss',
           'SoftmaxCrossEntropyLoss', 'SoftmaxCELoss', 'KLDivLoss', 'HuberLoss', 'HingeLoss',
           'SquaredHingeLoss', 'LogisticLoss', 'TripletLoss', 'PoissonNLLLoss',
           'CosineEmbeddingLoss', 'SDMLLoss', 'CTCLoss']

_numeric_types = (int, float, _np.generic)


class _LossShapeError(MXNetError, ValueError):
    """An input whose size does not match the prediction's."""


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """loss * sample_weight (broadcast) * weight."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, _numeric_types):
            raise TypeError('weight must be a number, got %r' % (weight,))
        loss = loss * weight
    return loss


def _check_reshape(x, y, xname='label', yname='pred', who=None):
    if x.size != y.size:
        raise _LossShapeError(
            '%s%s of shape %s cannot be reshaped like %s of shape %s: they must have the same '
            'number of elements (%d vs %d)' % ('%s: ' % who if who else '', xname, x.shape,
                                               yname, y.shape, x.size, y.size))


def _reshape_like(F, x, y):
    """x reshaped to the shape of y (same number of elements)."""
    if F is ndarray:
        if x.shape == y.shape:
            return x
        _check_reshape(x, y)
        return x.reshape(y.shape)
    if hasattr(F, 'reshape_like'):
        return F.reshape_like(x, y)
    return x  # Loss.forward has already reshaped the NDArrays fed to the graph


class Loss(HybridBlock):
    """Base class of the losses: `weight` scales the loss, `batch_axis` is the batch axis."""

    # (i, j, names): positional input i is reshaped like input j before the loss runs.
    _like = ()

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return '{name}(batch_axis={_batch_axis}, w={_weight})'.format(
            name=self.__class__.__name__, **self.__dict__)

    def _prepare(self, inputs):
        """Adjusts the NDArray inputs (a list, changed in place) before the loss runs."""
        self._reshape_inputs(inputs, self._like)

    def _reshape_inputs(self, inputs, pairs):
        n = len(inputs)
        for i, j, (xname, yname) in pairs:
            if i < n and j < n and isinstance(inputs[i], NDArray) and \
                    isinstance(inputs[j], NDArray) and inputs[i].shape != inputs[j].shape:
                _check_reshape(inputs[i], inputs[j], xname, yname, type(self).__name__)
                inputs[i] = inputs[i].reshape(inputs[j].shape)

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            inputs = [x] + list(args)
            self._prepare(inputs)
            x, args = inputs[0], inputs[1:]
        return super().forward(x, *args)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


_LABEL_LIKE_PRED = ((1, 0, ('label', 'pred')),)


class L2Loss(Loss):
    """weight / 2 * (pred - label)^2, averaged over the non-batch axes."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L1Loss(Loss):
    """|pred - label|, averaged over the non-batch axes."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of sigmoid(pred) (or of pred itself with from_sigmoid=True)
    against labels in [0, 1]; `pos_weight` (broadcast against label) weights the positive
    term. Without from_sigmoid the numerically stable form
    max(x, 0) - x * z + log(1 + exp(-|x|)) is used."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + \
                    F.Activation(-F.abs(pred), act_type='softrelu')
            else:
                # x - x * z + (1 + z * (pos_weight - 1)) * (log(1 + exp(-|x|)) + max(-x, 0))
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * \
                    (F.Activation(-F.abs(pred), act_type='softrelu') + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight) +
                         F.log(1. - pred + eps) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """-log softmax(pred)[label] along `axis`. sparse_label=True: label holds class indices
    (pred's shape without `axis`); False: label is a distribution shaped like pred.
    from_logits=True: pred is already a log-probability."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def _prepare(self, inputs):
        if not self._sparse_label:
            self._reshape_inputs(inputs, _LABEL_LIKE_PRED)
            return
        if len(inputs) < 2 or not isinstance(inputs[1], NDArray):
            return
        pred, label = inputs[0], inputs[1]
        axis = self._axis % pred.ndim if -pred.ndim <= self._axis < pred.ndim else None
        if axis is None:
            raise _LossShapeError('SoftmaxCrossEntropyLoss: axis %d is out of range for pred '
                                  'of shape %s' % (self._axis, pred.shape))
        reduced = pred.shape[:axis] + pred.shape[axis + 1:]
        kept = pred.shape[:axis] + (1,) + pred.shape[axis + 1:]
        if label.shape == kept:
            inputs[1] = label.reshape(reduced)  # the graph picks with a label of this shape
        elif label.shape != reduced:
            raise _LossShapeError(
                'SoftmaxCrossEntropyLoss: a sparse label for pred of shape %s must have shape '
                '%s (or %s), got %s' % (pred.shape, reduced, kept, label.shape))

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            # pick(keepdims=False) then expand_dims: the label has pred's shape without
            # `axis` (Loss.forward makes it so), which pick accepts only without keepdims.
            loss = -F.expand_dims(F.pick(pred, label, axis=self._axis), axis=self._axis)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """label * (log(label) - pred) summed over the non-batch axes: Kullback-Leibler divergence
    with pred a log-probability (from_logits=True) or logits to log-softmax along `axis`."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        # A sum over the non-batch axes, as MXNet 1.9.1 does (the other losses average).
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    """Connectionist temporal classification loss (the CTCLoss op) of unnormalised activations
    against label sequences, one loss per sequence (shape (batch,)). The blank is the last
    class; labels are 0 .. classes - 2, and a label row ends at its first -1 unless
    label_lengths is given. layout: 'NTC' or 'TNC' (pred); label_layout: 'NT' or 'TN'.
    Inputs: pred, label, optional pred_lengths and label_lengths (batch,), sample_weight."""

    def __init__(self, layout='NTC', label_layout='NT', weight=None, **kwargs):
        if layout not in ('NTC', 'TNC'):
            raise MXNetError("CTCLoss: only 'NTC' and 'TNC' layouts for pred are supported, "
                             "got %r" % (layout,))
        if label_layout not in ('NT', 'TN'):
            raise MXNetError("CTCLoss: only 'NT' and 'TN' layouts for label are supported, "
                             "got %r" % (label_layout,))
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find('N'), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == 'NTC':
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        # The op takes the lengths it uses, in this order (no gaps for the absent ones).
        lengths = [v for v in (pred_lengths, label_lengths) if v is not None]
        loss = F.CTCLoss(pred, label, *lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label='last')
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smoothed L1: 0.5 / rho * d^2 where d = |pred - label| <= rho, else d - 0.5 * rho."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class HingeLoss(Loss):
    """max(0, margin - pred * label) for labels in {-1, 1}."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SquaredHingeLoss(Loss):
    """max(0, margin - pred * label)^2 for labels in {-1, 1}."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class LogisticLoss(Loss):
    """log(1 + exp(-pred * label)) for labels in {-1, 1} (label_format='signed') or {0, 1}
    ('binary')."""
    _like = _LABEL_LIKE_PRED

    def __init__(self, weight=None, batch_axis=0, label_format='signed', **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ('signed', 'binary'):
            raise ValueError('label_format can only be signed or binary, recieved %s.'
                             % label_format)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == 'signed':
            label = (label + 1.0) / 2.0  # {-1, 1} -> {0, 1}
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type='softrelu')
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class TripletLoss(Loss):
    """max(|pred - positive|^2 - |pred - negative|^2 + margin, 0), the squared distances
    summed over the non-batch axes."""
    _like = ((1, 0, ('positive', 'pred')), (2, 0, ('negative', 'pred')))

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Negative log-likelihood of a Poisson target: exp(pred) - target * pred with
    from_logits=True, else pred - target * log(pred + epsilon); compute_full adds Stirling's
    approximation of log(target!) for targets > 1. The result is the mean over everything
    (shape (1,))."""
    _like = ((1, 0, ('target', 'pred')),)

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling_factor = target * F.log(target) - target + \
                0.5 * F.log(2 * target * _np.pi)
            loss = loss + stirling_factor * (target > 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """1 - cos(input1, input2) where label is 1, max(0, cos - margin) where it is -1, the
    cosine taken along the last axis; the result has shape (batch, 1)."""
    _like = ((0, 1, ('input1', 'input2')),)

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = label == 1
        y_minus_1 = label == -1
        cos_sim_a = (1 - cos_sim) * y_1
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))
        loss = cos_sim_a + cos_sim_b
        return _apply_weighting(F, loss, self._weight, sample_weight)

    def _cosine_similarity(self, F, x, y, axis=-1):
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F._maximum_scalar(x_norm * y_norm, scalar=1e-12)


class SDMLLoss(Loss):
    """Batch-wise Smoothed Deep Metric Learning loss (Bonadiman et al., arXiv:1905.12786):
    x1[i] and x2[i] (shape (batch, dim)) form a positive pair and every other row of x2 is a
    negative for x1[i]. The loss is KLDivLoss(from_logits=True) between
    log_softmax(-squared distances) along each row and the identity matrix smoothed to
    1 - smoothing_parameter on the diagonal and smoothing_parameter / (batch - 1) elsewhere.

    As in MXNet 1.9.1, `weight` is accepted but not applied (MXNet's inner KLDivLoss has no
    weight), and the inputs must be NDArrays (the smoothed labels depend on the batch size):
    the loss can be hybridized, not traced inside a larger hybridized network.
    """

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _labels(self, batch_size):
        gold = ndarray._eye(batch_size)
        s = self.smoothing_parameter
        return gold * (1 - s) + (1 - gold) * (s / (batch_size - 1))

    def forward(self, x1, x2):
        if not (isinstance(x1, NDArray) and isinstance(x2, NDArray)):
            raise MXNetError('SDMLLoss: x1 and x2 must be NDArrays (the smoothed labels depend '
                             'on the batch size); got %s and %s'
                             % (type(x1).__name__, type(x2).__name__))
        if x1.ndim != 2 or x1.shape != x2.shape:
            raise _LossShapeError('SDMLLoss: x1 and x2 must both have shape (batch, dim), got '
                                  '%s and %s' % (x1.shape, x2.shape))
        if x1.shape[0] < 2:
            raise _LossShapeError('SDMLLoss: the batch needs at least 2 pairs (the other rows '
                                  'are the negatives), got %d' % x1.shape[0])
        return HybridBlock.forward(self, x1, x2, self._labels(x1.shape[0]))

    def hybrid_forward(self, F, x1, x2, labels):
        # squared Euclidean distance between every row of x1 and every row of x2
        diff = F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))
        distances = F.sum(F.square(diff), axis=2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels)
