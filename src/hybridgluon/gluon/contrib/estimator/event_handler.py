"""Event handlers of the Estimator (MXNet's `gluon.contrib.estimator.event_handler`).

A handler subclasses the mixins of the events it wants (TrainBegin, EpochBegin, BatchBegin,
BatchEnd, EpochEnd, TrainEnd); the estimator calls each event's method on the handlers that
have it, in ascending `priority` (0 when a handler has none). A BatchEnd or EpochEnd method that
returns a true value stops training after the current batch or epoch.

Counters follow MXNet's: epochs and batches count from 0, a batch counter runs across epochs,
and checkpoint files are named '<prefix>-epoch<E>batch<B>.params' / '.states' with the counters
at the moment of saving, so files written by MXNet resume here and the other way round.
"""
import logging
import math
import os
import re
import time
import warnings

import numpy as np

from ....base import MXNetError, MXNetValueError
from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as _LossMetric
from .utils import _check_metrics

__all__ = ['TrainBegin', 'TrainEnd', 'EpochBegin', 'EpochEnd', 'BatchBegin', 'BatchEnd',
           'StoppingHandler', 'MetricHandler', 'ValidationHandler',
           'LoggingHandler', 'CheckpointHandler', 'EarlyStoppingHandler', 'GradientUpdateHandler']


class _CheckpointAssertion(MXNetError, AssertionError):
    """A CheckpointHandler misuse; an AssertionError as in MXNet, and an MXNetError."""


class EventHandler:
    """Base of every event handler (what the estimator accepts in event_handlers)."""


def _check_event_handlers(handlers):
    """A new list of EventHandlers from None, one handler or a list of them."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    if handlers is None:
        return []
    if isinstance(handlers, (list, tuple)) and all(isinstance(h, EventHandler)
                                                   for h in handlers):
        return list(handlers)
    raise MXNetValueError('event_handlers must be an EventHandler or a list of EventHandler, '
                          'got: {!r}'.format(handlers))


class TrainBegin(EventHandler):
    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    def batch_end(self, estimator, *args, **kwargs):
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training once max_epoch epochs or max_batch batches have run (the estimator's
    max_epoch / max_batch, read at train begin, take precedence over the arguments)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets `metrics` at each epoch begin and updates them at each batch end: a
    metric.Loss with the batch's loss values, any other metric with (label, pred).

    The default priority (-1000) runs it before handlers that read the metrics."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred, label, loss = kwargs['pred'], kwargs['label'], kwargs['loss']
        for metric in self.metrics:
            if isinstance(metric, _LossMetric):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs `eval_fn(val_data=..., batch_axis=..., event_handlers=...)` (usually
    estimator.evaluate) every `epoch_period` epochs and, when set, every `batch_period`
    batches. `event_handlers` are handed to eval_fn for the validation loop."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        # Before the logging and checkpoint handlers, which report validation metrics.
        self.priority = priority
        self.event_handlers = event_handlers

    def _validate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)


def _metrics_text(metrics):
    return ''.join('%s: %.4f, ' % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer and learning rate at train begin, `metrics` at each epoch end (and
    every `log_interval` batches when it is an int), and a summary at train end, through
    estimator.logger.

    log_interval: 'epoch' or an int k (also log batches 0, k, 2k, ... of each epoch).
    The default priority (infinity) runs it last, after every state it reports is updated.
    """

    def __init__(self, log_interval='epoch', metrics=None, priority=math.inf):
        super().__init__()
        if log_interval != 'epoch' and (not isinstance(log_interval, int)
                                        or isinstance(log_interval, bool)):
            raise MXNetValueError("log_interval must be either an integer or string 'epoch', "
                                  "got {!r}".format(log_interval))
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def _per_batch(self):
        return self.log_interval != 'epoch'

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info('Training begin: using optimizer %s with current learning rate '
                              '%.4f ', type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info('Train for %d epochs.', estimator.max_epoch)
        else:
            estimator.logger.info('Train for %d batches.', estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        elapsed = time.time() - self.train_start
        msg = 'Train finished using total %ds with %d epochs. ' % (elapsed, self.current_epoch)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(', '))

    def batch_begin(self, estimator, *args, **kwargs):
        if self._per_batch():
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if self._per_batch():
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs['batch'][0].shape[0]
            if self.batch_index % self.log_interval == 0:
                msg = '[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs ' % (
                    self.current_epoch, self.batch_index, self.processed_samples,
                    self.log_interval_time)
                self.log_interval_time = 0
                estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(', '))
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        # The estimator names its metrics 'training ...' / 'validation ...': that is how a
        # handler tells a training epoch from a validation pass.
        if any('training' in metric.name for metric in self.metrics):
            estimator.logger.info('[Epoch %d] Begin, current learning rate: %.4f',
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info('Validation Begin')

    def epoch_end(self, estimator, *args, **kwargs):
        msg = '[Epoch %d] Finished in %.3fs, ' % (self.current_epoch,
                                                   time.time() - self.epoch_start)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(', '))
        self.current_epoch += 1
        self.batch_index = 0


def _improvement_op(handler_name, monitor, mode):
    """np.less or np.greater: how a better monitored value compares to the best so far.

    MXNet 1.9.1 tests `'acc' or 'f1' in name` in 'auto' mode, which is always true, so 'auto'
    always means 'greater' there; it is kept so that training stops (and the best checkpoint
    is chosen) at the same epoch as under MXNet. Pass mode='min' for a loss."""
    if mode not in ('auto', 'min', 'max'):
        warnings.warn('%s mode %s is unknown, falling back to auto mode.' % (handler_name, mode),
                      RuntimeWarning)
        mode = 'auto'
    if mode == 'min':
        return np.less
    if mode == 'max':
        return np.greater
    warnings.warn("`greater` operator will be used to determine if {} has improved. "
                  "Please specify `mode='min'` to use the `less` operator. "
                  "Specify `mode='max'` to disable this warning.".format(monitor.get()[0]))
    return np.greater


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves the net's parameters and the trainer's states every `epoch_period` epochs and/or
    every `batch_period` batches as '<model_prefix>-epoch<E>batch<B>.params' / '.states' in
    model_dir, keeping the newest `max_checkpoints` of those it wrote, and after the first
    batch the symbol ('<model_prefix>-symbol.json') of a hybridized net.

    save_best: also keep '<model_prefix>-best.params' / '.states' for the best value of
    `monitor` (an EvalMetric of the estimator) under `mode` ('auto', 'min' or 'max').
    resume_from_checkpoint: at train begin, load the newest checkpoint in model_dir and train
    only the remaining epochs (or batches); the period used must match the kind of training.
    """

    def __init__(self, model_dir, model_prefix='model', monitor=None, verbose=0,
                 save_best=False, mode='auto', epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        if save_best and not isinstance(monitor, EvalMetric):
            raise MXNetValueError('CheckpointHandler: save_best=True needs a monitor, one of '
                                  'the metric objects from estimator.train_metrics or '
                                  'estimator.val_metrics.')
        os.makedirs(model_dir, exist_ok=True)
        self.monitor = monitor
        self.verbose = verbose
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = -1
        self.trained_batch = -1
        if save_best:
            self.monitor_op = _improvement_op('CheckpointHandler', monitor, mode)
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            by_batch = bool(estimator.max_batch)
            if (by_batch and (not self.batch_period or self.epoch_period)) or \
               (not by_batch and (not self.epoch_period or self.batch_period)):
                raise _CheckpointAssertion(
                    'CheckpointHandler: to resume from a checkpoint, save with the same kind of '
                    'period as training runs: with fit(batches=...) set batch_period and '
                    'epoch_period=None, with fit(epochs=...) set epoch_period and '
                    'batch_period=None.')
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _checkpoint_numbers(self, estimator):
        # MXNet also offsets a run that found nothing to resume (trained_epoch = -1), which
        # names its epoch checkpoints one batch short ('epoch1batch5' for 6 batches); a fresh
        # run is named here as without resume_from_checkpoint.
        if not self.resume_from_checkpoint or self.trained_epoch < 0:
            return self.current_epoch, self.current_batch
        # Continue the numbering of the run resumed from. At an epoch end the batch counter
        # has already moved past the last batch; at a batch end it has not.
        epoch = self.current_epoch + self.trained_epoch + 1
        batch = self.current_batch + self.trained_batch
        if not estimator.max_epoch:
            batch += 1
        return epoch, batch

    def _save_checkpoint(self, estimator):
        epoch, batch = self._checkpoint_numbers(estimator)
        prefix = '%s-epoch%dbatch%d' % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: trained total %d batches, '
                                  'saving model at %s with prefix: %s', self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if self.save_best:
            self._save_if_best(estimator)

    def _save_if_best(self, estimator):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn('CheckpointHandler: skipping save best because %s is not updated; '
                          'pass one of the metric objects from estimator.train_metrics or '
                          'estimator.val_metrics as monitor.' % name, RuntimeWarning)
            return
        if self.monitor_op(value, self.best):
            prefix = self.model_prefix + '-best'
            self._save_params_and_trainer(estimator, prefix)
            if self.verbose > 0:
                estimator.logger.info('[Epoch %d] CheckpointHandler: %s improved from %0.5f to '
                                      '%0.5f, updating best model at %s with prefix: %s',
                                      self.current_epoch, name, self.best, value,
                                      self.model_dir, prefix)
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, '
                                  'skipping updating best model', self.current_epoch, name,
                                  self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + '-symbol.json')
        graph = getattr(estimator.net, '_cached_graph', None)
        if graph:
            graph[1].save(symbol_file)
        else:
            estimator.logger.info('Model architecture (symbol file) is not saved: build the '
                                  'model from HybridBlocks and call net.hybridize() before '
                                  'passing it to the Estimator to save it as %s.', symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + '.params'))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + '.states'))
        if file_prefix == self.model_prefix + '-best':
            return  # the best checkpoint is not one of the max_checkpoints
        self.saved_checkpoints.append(file_prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in ('.params', '.states'):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _find_checkpoints(self):
        """[(epoch, batch)] of the '<prefix>-epoch<E>batch<B>.params' files in model_dir."""
        head = self.model_prefix + '-epoch'
        pattern = re.compile(re.escape(head) + r'(\d+)batch(\d+)\.params$')
        found = []
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(head) and fname.endswith('.params')):
                continue
            match = pattern.match(fname)
            if match is None:
                raise MXNetValueError(
                    'CheckpointHandler: cannot parse the checkpoint file %r in %s; checkpoints '
                    'are named {model_prefix}-epoch{epoch}batch{batch}.params, each with a '
                    '.states file beside it.' % (fname, self.model_dir))
            found.append((int(match.group(1)), int(match.group(2))))
        return found

    def _resume_from_checkpoint(self, estimator):
        found = self._find_checkpoints()
        if not found:
            self.trained_epoch = self.trained_batch = -1
            if estimator.max_batch:
                todo = '%d batches' % estimator.max_batch
            else:
                todo = '%d epochs' % estimator.max_epoch
            estimator.logger.info('CheckpointHandler: No checkpoint found, training from '
                                  'scratch for ' + todo)
            return
        self.trained_epoch = max(e for e, _ in found)
        self.trained_batch = max(b for e, b in found if e == self.trained_epoch)
        msg = 'CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to ' \
              'train for ' % (self.trained_epoch, self.trained_batch)
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise MXNetValueError(
                    'Found checkpoint with maximum number of epoch %d reached, please specify '
                    'resume_from_checkpoint=False (default value) if you want to train from '
                    'scratch.' % estimator.max_epoch)
            estimator.max_epoch -= self.trained_epoch + 1
            msg += '%d epochs ' % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise MXNetValueError(
                    'Found checkpoint with maximum number of batch %d reached, please specify '
                    'resume_from_checkpoint=False (default value) if you want to train from '
                    'scratch.' % estimator.max_batch)
            estimator.max_batch -= self.trained_batch + 1
            msg += '%d batches ' % estimator.max_batch
        prefix = os.path.join(self.model_dir, '%s-epoch%dbatch%d' % (
            self.model_prefix, self.trained_epoch, self.trained_batch))
        for ext in ('.params', '.states'):
            if not os.path.exists(prefix + ext):
                raise _CheckpointAssertion('Failed to load checkpoint, %s does not exist'
                                           % (prefix + ext))
        estimator.net.load_parameters(prefix + '.params', ctx=estimator.context)
        estimator.trainer.load_states(prefix + '.states')
        estimator.logger.log(logging.WARNING, msg)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when `monitor` (an EvalMetric of the estimator, read at each epoch end)
    has not improved by more than `min_delta` for `patience` epochs in a row (patience=0:
    the first epoch without improvement). `baseline` is the value to beat at the start;
    `mode` is 'auto', 'min' or 'max' (see CheckpointHandler)."""

    def __init__(self, monitor, min_delta=0, patience=0, mode='auto', baseline=None):
        super().__init__()
        if not isinstance(monitor, EvalMetric):
            raise MXNetValueError('EarlyStoppingHandler: monitor must be one of the metric '
                                  'objects from estimator.train_metrics or '
                                  'estimator.val_metrics, got {!r}'.format(monitor))
        if isinstance(monitor, CompositeEvalMetric):
            raise MXNetValueError('CompositeEvalMetric is not supported for '
                                  'EarlyStoppingHandler, please specify a simple metric '
                                  'instead.')
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _improvement_op('EarlyStopping', monitor, mode)
        # Stored with the sign that makes `value - min_delta` the value an improvement needs.
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta
        self.best = None

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn('EarlyStoppingHandler: %s is not updated; pass one of the metric '
                          'objects from estimator.train_metrics or estimator.val_metrics as '
                          'monitor.' % name, RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info('[Epoch %d] EarlyStoppingHandler: early stopping due to %s '
                                  'not improving', self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Calls estimator.trainer.step(batch size) at each batch end, the batch size being the
    total length of the per-context losses. The default priority (-2000) updates the weights
    before any other handler runs."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs['loss']
        if not isinstance(loss, (list, tuple)):
            loss = [loss]
        estimator.trainer.step(sum(part.shape[0] for part in loss))
