"""Callbacks for `Module.fit` (MXNet's `mx.callback`): checkpoints at the end of an epoch,
and logging of speed, progress and metrics at the end of a batch.

A batch-end callback receives a BatchEndParam (epoch, nbatch, eval_metric, locals); an
epoch-end callback receives (epoch, symbol, arg_params, aux_params).
"""
import logging
import math
import time

from .model import save_checkpoint

__all__ = ['module_checkpoint', 'do_checkpoint', 'log_train_metric', 'Speedometer',
           'ProgressBar', 'LogValidationMetricsCallback']


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback that saves `mod`'s checkpoint (and optimizer states) every
    `period` epochs, numbered from 1."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """An epoch-end callback that writes the checkpoint `prefix` every `period` epochs (the
    file of epoch e is numbered e + 1)."""
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback that logs the training metric every `period` batches (and resets
    its local part with auto_reset)."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info('Iter[%d] Batch[%d] Train-%s=%f', param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer(object):
    """A batch-end callback that logs samples per second and the metric every `frequent`
    batches; auto_reset: reset the metric's local part after each log, so each line covers
    only its own batches."""

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:  # a new epoch started
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float('inf')
        if param.eval_metric is None:
            logging.info('Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec', param.epoch, count,
                         speed)
        else:
            name_value = param.eval_metric.get_name_value()
            values = sum(name_value, ())
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = 'Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec' \
                    + '\t%s=%f' * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *values)
            else:
                msg = 'Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec' \
                    + '\t%s=%f' * len(name_value)
                logging.info(msg, param.epoch, count, speed, *values)
        self.tic = time.time()


class ProgressBar(object):
    """A batch-end callback that logs a bar of `length` characters showing how much of the
    `total` batches of an epoch are done."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        logging.info('[%s] %s%s\r', '=' * filled + '-' * (self.bar_len - filled), percents, '%')


class LogValidationMetricsCallback(object):
    """An eval-end callback that logs the validation metric."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info('Epoch[%d] Validation-%s=%f', param.epoch, name, value)
