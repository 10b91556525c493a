"""BatchProcessor: what the Estimator does with one batch, in training and in validation.

Subclass it and override fit_batch / evaluate_batch to train with a custom step (several losses,
a GAN's two nets) while keeping the estimator's loop and event handlers.
"""
from .... import autograd
from ...utils import split_and_load

__all__ = ['BatchProcessor']


class BatchProcessor:
    """Default per-batch work of an Estimator: split the batch over the estimator's contexts,
    run the net (under autograd.record() and backward when training) and the loss.

    Both methods return (data, label, pred, loss), each a list with one NDArray per context.
    """

    def __init__(self):
        pass

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Runs estimator.val_net and estimator.val_loss on a validation batch."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(p, y) for p, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Runs estimator.net and estimator.loss on a training batch with autograd recording
        and back-propagates the loss; the parameter update is left to the
        GradientUpdateHandler."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(p, y) for p, y in zip(pred, label)]
        for part in loss:
            part.backward()
        return data, label, pred, loss
