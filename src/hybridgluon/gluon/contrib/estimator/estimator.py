"""The Estimator (MXNet's `gluon.contrib.estimator.Estimator`): a training loop over a Gluon
net, loss, metrics and trainer whose every step is an event handed to event handlers.

fit() runs epochs (or batches) of BatchProcessor.fit_batch and calls the handlers' train_begin,
epoch_begin, batch_begin, batch_end, epoch_end and train_end; the parameter update, the metric
updates, validation, logging and stopping are all default handlers, replaced by the user's own
of the same class. evaluate() runs the validation loop the same way.

The estimator renames the metrics it owns: 'training <name>' and 'validation <name>'. Handlers
and logs rely on those names (a LoggingHandler whose metrics say 'training' logs an epoch, else a
validation pass), as in MXNet.
"""
import copy
import logging
import sys
import warnings

from ....base import MXNetError, MXNetValueError
from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as _LossMetric
from ...data import DataLoader
from ...loss import Loss as _GluonLoss
from ...trainer import Trainer
from ...utils import split_and_load
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin, TrainEnd,
                            ValidationHandler, _check_event_handlers)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ['Estimator']


class _ContextAssertion(MXNetError, AssertionError):
    """A context that is not available; an AssertionError as in MXNet, and an MXNetError."""


class Estimator:
    """Trains and evaluates a Gluon net.

    Parameters
    ----------
    net : gluon.Block
        The model to train.
    loss : gluon.loss.Loss
        The objective.
    train_metrics, val_metrics : EvalMetric or list of EvalMetric, optional
        Metrics on the training and validation data. Without train_metrics: the metric suggested
        for the loss (accuracy for SoftmaxCrossEntropyLoss) and the mean loss; without
        val_metrics: copies of the training metrics.
    initializer : Initializer, optional
        Used for the parameters of net that are not initialized yet.
    trainer : gluon.Trainer, optional
        Default: SGD with learning rate 0.001 over net's parameters (with a warning).
    context : Context or list of Context, optional
        Devices to train on; default gpu(0) when there is a GPU, else cpu().
    val_net : gluon.Block, optional
        The model used by evaluate() (usually sharing net's parameters); default net.
    val_loss : gluon.loss.Loss, optional
        The loss used by evaluate(); default loss.
    batch_processor : BatchProcessor, optional
        Anything with fit_batch() and evaluate_batch(); default BatchProcessor().
    """

    logger = None
    """The logging.Logger of this estimator and its handlers: a new one per estimator that
    writes records of level INFO and above to sys.stdout (as it was when the estimator was
    built). Add handlers to it to log elsewhere as well."""

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net

        self.logger = logging.Logger(name='Estimator', level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))

        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        # Set by fit(); evaluate() alone needs batch_axis only through a ValidationHandler.
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0

    # ---- argument checks -----------------------------------------------------------------
    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, _GluonLoss):
            raise MXNetValueError('loss must be a gluon.loss.Loss, got: {!r}'.format(loss))
        return loss

    @staticmethod
    def _check_context(context):
        available_gpus = [gpu(i) for i in range(num_gpus())]
        if not context:
            if not available_gpus:
                return [cpu()]
            if len(available_gpus) > 1:
                warnings.warn('You have multiple GPUs, gpu(0) will be used by default. To use '
                              'all of them, give context as a list of GPUs, e.g. '
                              'context=[mx.gpu(0), mx.gpu(1)].')
            return [gpu(0)]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise MXNetValueError('context must be a Context or a list of Context, for example '
                                  'mx.cpu() or [mx.gpu(0), mx.gpu(1)], got: {!r}'
                                  .format(context))
        for ctx in context:
            if ctx not in available_gpus and not str(ctx).startswith('cpu'):
                raise _ContextAssertion('%s is not available, please make sure your context is '
                                        'one of: %s' % (ctx, ', '.join(
                                            ['mx.cpu()'] + [str(g) for g in available_gpus])))
        return context

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, 'fit_batch', None))
                and callable(getattr(batch_processor, 'evaluate_batch', None))):
            raise MXNetValueError('Customized Batch Processor must contain fit_batch() and '
                                  'evaluate_batch() methods')
        return batch_processor

    def _check_trainer(self, trainer):
        if trainer is None:
            warnings.warn('No trainer specified, default SGD optimizer with learning rate 0.001 '
                          'is used.')
            return Trainer(self.net.collect_params(), 'sgd', {'learning_rate': 0.001})
        if not isinstance(trainer, Trainer):
            raise MXNetValueError('trainer must be a gluon.Trainer, got: {!r}'.format(trainer))
        return trainer

    def _is_initialized(self):
        params = self.net.collect_params()
        for name in params:
            try:
                params[name].list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            # Parameters already initialized keep their values (fine-tuning a pretrained
            # body with a new output layer): Block.initialize skips them.
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn('Network already fully initialized, skipping initialization. You '
                          'don\'t need to pass an initializer if you already initialized your '
                          'net; use net.initialize(init=your_initializer, force_reinit=True) '
                          'to re-initialize it.')

    # ---- metrics ---------------------------------------------------------------------------
    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            # 'l2loss0' -> 'l2loss': the block's counter says nothing to a reader of the log.
            self._train_metrics.append(_LossMetric(self.loss.name.rstrip('0123456789')))
        for metric in self._train_metrics:
            metric.name = 'training ' + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            if 'training' in metric.name:
                metric.name = metric.name.replace('training', 'validation')
            else:
                metric.name = 'validation ' + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    # ---- loops -----------------------------------------------------------------------------
    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Runs val_net over val_data (a gluon DataLoader), batch by batch through
        batch_processor.evaluate_batch, updating and logging the validation metrics.

        event_handlers: EventHandler or list of them for this pass (epoch_begin, batch_begin,
        batch_end and epoch_end are called once around the pass); a MetricHandler and a
        LoggingHandler on val_metrics are added unless given.
        """
        if not isinstance(val_data, DataLoader):
            raise MXNetValueError('Estimator only supports a gluon.data.DataLoader as input; '
                                  'wrap a DataIter or NDArrays in a DataLoader (see '
                                  'gluon.data.DataLoader), got: {!r}'.format(type(val_data)))
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)

        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Trains net on train_data (a gluon DataLoader) for `epochs` epochs or `batches`
        batches (exactly one of the two).

        val_data: a DataLoader evaluated after every epoch (through a default
        ValidationHandler unless one is given). event_handlers: EventHandler or list of
        them; StoppingHandler, GradientUpdateHandler, MetricHandler and LoggingHandler are
        added unless one of the same class is given. batch_axis: the axis along which a
        batch is split over the contexts.
        """
        if not isinstance(train_data, DataLoader):
            raise MXNetValueError('Estimator only supports a gluon.data.DataLoader as input; '
                                  'wrap a DataIter or NDArrays in a DataLoader (see '
                                  'gluon.data.DataLoader), got: {!r}'.format(type(train_data)))
        if (not epochs) == (not batches):
            raise MXNetValueError('fit() trains either for a number of epochs or for a number '
                                  'of batches: give exactly one of epochs and batches (got '
                                  'epochs={!r}, batches={!r}).'.format(epochs, batches))
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis

        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)

        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            seen_batch = False
            for batch in train_data:
                seen_batch = True
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # Every handler sees the batch end, even after one of them asked to stop.
                stop = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                        for handler in batch_end]
                if any(stop):
                    break
            if not seen_batch and self.max_batch:
                # No batch would ever reach the batch limit: MXNet loops forever here.
                raise MXNetValueError('fit(batches=%d): train_data yielded no batch'
                                      % self.max_batch)
            stop = [handler.epoch_end(self) for handler in epoch_end]
            if any(stop):
                break
        for handler in train_end:
            handler.train_end(self)

    # ---- handlers --------------------------------------------------------------------------
    @staticmethod
    def _missing(handlers, cls):
        return not any(isinstance(h, cls) for h in handlers)

    def _finish_handlers(self, handlers, defaults, known_metrics):
        # When the user's handlers meet default ones, all must share the estimator's metric
        # objects: a metric only the user's LoggingHandler knows would never be updated.
        if handlers and defaults:
            for handler in handlers + defaults:
                _check_handler_metric_ref(handler, known_metrics)
        handlers = handlers + defaults
        # sort() is stable: at equal priority the user's handlers run before the defaults.
        handlers.sort(key=lambda h: getattr(h, 'priority', 0))
        return handlers

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        defaults = [StoppingHandler(self.max_epoch, self.max_batch)]
        if self._missing(handlers, GradientUpdateHandler):
            defaults.append(GradientUpdateHandler())
        if self._missing(handlers, MetricHandler):
            defaults.append(MetricHandler(metrics=self.train_metrics))
        if self._missing(handlers, ValidationHandler) and val_data:
            defaults.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if self._missing(handlers, LoggingHandler):
            defaults.append(LoggingHandler(metrics=self.train_metrics))
        return self._finish_handlers(handlers, defaults,
                                     set(self.train_metrics + self.val_metrics))

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        defaults = []
        if self._missing(handlers, MetricHandler):
            defaults.append(MetricHandler(metrics=self.val_metrics))
        if self._missing(handlers, LoggingHandler):
            defaults.append(LoggingHandler(metrics=self.val_metrics))
        return self._finish_handlers(handlers, defaults, set(self.val_metrics))

    def _categorize_handlers(self, event_handlers):
        """(train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end): the
        handlers of each event, in the order given, so no empty method is ever called."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)
