"""BaseModule: the interface every module implements (bind, init_params, init_optimizer,
forward, backward, update, ...) and the loops written over it once: fit, score, predict,
iter_predict (MXNet's `mx.module.BaseModule`).

A module goes through states in order: created, bound (executors allocated for given input
shapes), parameters initialized, optimizer initialized. Calling a method before its state
raises MXNetError naming what is missing.
"""
import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray
from ..base import MXNetError, _as_list
from ..context import cpu
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam

__all__ = ['BaseModule']


class ModuleStateError(MXNetError, AssertionError):
    """A module method called before the module was bound or initialized (AssertionError in
    MXNet, so both kinds of `except` catch it)."""


def _require(module, *, binded=True, params=True, optimizer=False, what=''):
    """Raises ModuleStateError when the module has not reached the state `what` needs."""
    if binded and not module.binded:
        raise ModuleStateError('%s: call bind() first (the module is not bound)' % what)
    if params and not module.params_initialized:
        raise ModuleStateError('%s: call init_params() first (the parameters are not '
                               'initialized)' % what)
    if optimizer and not module.optimizer_initialized:
        raise ModuleStateError('%s: call init_optimizer() first' % what)


def _check_input_names(symbol, names, typename, throw):
    """Checks that every name in `names` is an argument of `symbol` (a warning, or a
    ValueError when throw), suggesting the arguments that look like inputs."""
    args = symbol.list_arguments()
    suffixes = ('_weight', '_bias', '_gamma', '_beta')
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(suffixes)]
        msg = ("You created Module with Module(..., %s_names=%s) but input with name '%s' is "
               "not found in symbol.list_arguments(). Did you mean one of:\n\t%s"
               % (typename, str(names), name, '\n\t'.join(candidates)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _check_names_match(data_names, data_shapes, name, throw):
    """Checks that the names of the given shapes are the module's `name`_names."""
    actual = [d[0] for d in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = ("Data provided by %s_shapes don't match names specified by %s_names (%s vs. %s)"
               % (name, name, str(data_shapes), str(data_names)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _as_desc(entry, what):
    if isinstance(entry, DataDesc):
        return entry
    if not isinstance(entry, (list, tuple)) or len(entry) != 2 or \
            not isinstance(entry[1], (list, tuple)):
        raise TypeError('%s: each entry must be a DataDesc or a (name, shape tuple) pair, got %r'
                        % (what, entry))
    return DataDesc(entry[0], tuple(entry[1]))


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """data_shapes and label_shapes as DataDesc lists, checked against the module's names."""
    data_shapes = [_as_desc(d, 'data_shapes') for d in data_shapes]
    _check_names_match(data_names, data_shapes, 'data', True)
    if label_shapes is not None:
        label_shapes = [_as_desc(d, 'label_shapes') for d in label_shapes]
        _check_names_match(label_names, label_shapes, 'label', False)
    else:
        _check_names_match(label_names, [], 'label', False)
    return data_shapes, label_shapes


def _callbacks(callbacks, *args):
    for cb in _as_list(callbacks):
        cb(*args)


class BaseModule(object):
    """The module interface and the training and evaluation loops over it."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ---- loops -----------------------------------------------------------------------------
    def forward_backward(self, data_batch):
        """A training forward then backward on `data_batch`."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _update_metric_of(self, eval_metric, batch):
        if isinstance(batch, list):
            self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            self.update_metric(eval_metric, batch.label)

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs prediction over `eval_data` (at most num_batch batches) and returns the
        metric's [(name, value)]."""
        _require(self, what='score')
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            self._update_metric_of(eval_metric, batch)
            if batch_end_callback is not None:
                _callbacks(batch_end_callback, BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                             eval_metric=eval_metric,
                                                             locals=locals()))
            done += 1
        if score_end_callback:
            _callbacks(score_end_callback, BatchEndParam(epoch=epoch, nbatch=done,
                                                         eval_metric=eval_metric,
                                                         locals=locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields (outputs without the padded examples, batch number, batch) per batch."""
        _require(self, what='iter_predict')
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            yield [out[0:out.shape[0] - pad] for out in self.get_outputs()], nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs over `eval_data` (a DataIter, or one NDArray / NumPy batch), padding
        removed. merge_batches: one array per output (the array itself when there is one
        output, unless always_output_list); else a list per batch."""
        _require(self, what='predict')
        if isinstance(eval_data, (ndarray.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = ndarray.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError('eval_data must be of type NDArray or DataIter')
        if reset:
            eval_data.reset()
        batches = []
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            batches.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not batches or not merge_batches:
            return batches
        num_outputs = len(batches[0])
        if any(len(b) != num_outputs for b in batches):
            raise MXNetError('Cannot merge batches, as num of outputs is not the same in '
                             'mini-batches. Maybe bucketing is used?')
        merged = [ndarray.concat(*[b[i] for b in batches], dim=0) if len(batches) > 1
                  else batches[0][i] for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None,
            batch_end_callback=None, kvstore='local', optimizer='sgd',
            optimizer_params=(('learning_rate', 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Trains over `train_data` for epochs begin_epoch..num_epoch-1: binds, initializes
        parameters and optimizer, then for each batch forward, backward, update and the
        metric; at each epoch's end syncs the parameters, calls epoch_end_callback and scores
        `eval_data` with validation_metric (eval_metric by default)."""
        if num_epoch is None:
            raise ValueError('please specify number of epochs')
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            self._fit_epoch(train_data, epoch, eval_metric, batch_end_callback, monitor,
                            sparse_row_id_fn)
            self.logger.info('Epoch[%d] Time cost=%.3f', epoch, time.time() - tic)
            # The executors' parameters become the module's (and are written back, so every
            # device holds the same values).
            arg_params_, aux_params_ = self.get_params()
            self.set_params(arg_params_, aux_params_)
            if epoch_end_callback is not None:
                _callbacks(epoch_end_callback, epoch, self.symbol, arg_params_, aux_params_)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info('Epoch[%d] Validation-%s=%f', epoch, name, val)
            train_data.reset()

    def _fit_epoch(self, train_data, epoch, eval_metric, batch_end_callback, monitor,
                   sparse_row_id_fn):
        """One epoch of fit. The next batch is read only after the current one's metric is
        updated: an iterator may free a batch when it reads the next."""
        eval_metric.reset()
        data_iter = iter(train_data)
        next_batch = next(data_iter)
        nbatch, end_of_batch = 0, False
        eval_name_vals = []
        while not end_of_batch:
            batch = next_batch
            if monitor is not None:
                monitor.tic()
            self.forward_backward(batch)
            self.update()
            self._update_metric_of(eval_metric, batch)
            try:
                next_batch = next(data_iter)
                self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
            except StopIteration:
                end_of_batch = True
            if monitor is not None:
                monitor.toc_print()
            if end_of_batch:
                eval_name_vals = eval_metric.get_global_name_value()
            if batch_end_callback is not None:
                _callbacks(batch_end_callback, BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                             eval_metric=eval_metric,
                                                             locals=locals()))
            nbatch += 1
        for name, val in eval_name_vals:
            self.logger.info('Epoch[%d] Train-%s=%f', epoch, name, val)

    # ---- what a module describes -------------------------------------------------------------
    @property
    def data_names(self):
        """Names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """Names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """DataDescs of the bound data inputs."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """DataDescs of the bound labels (None when bound without)."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """[(name, shape)] of the outputs."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The symbol the module runs."""
        return self._symbol

    # ---- parameters ------------------------------------------------------------------------
    def get_params(self):
        """(arg_params, aux_params): the current parameters, on the CPU."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initializes the parameters (from arg_params/aux_params where given, else with
        `initializer`)."""
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Sets the parameters to the given values (allow_missing: others keep theirs)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def _set_params_handled(self, arg_params, aux_params, allow_missing, force_init,
                            allow_extra):
        """What Module and BucketingModule's set_params share: without allow_missing it is
        init_params; with it, a call after initialisation without force_init is ignored (with
        MXNet's warning). True when nothing is left for the caller to do."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return True
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. set_params '
                          'call ignored.', stacklevel=3)
            return True
        return False

    def save_params(self, fname):
        """Writes the parameters to `fname` (MXNet's arg:/aux: .params format)."""
        arg_params, aux_params = self.get_params()
        save_dict = {'arg:%s' % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({'aux:%s' % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
        ndarray.save(fname, save_dict)

    def load_params(self, fname):
        """Sets the parameters from a file written by save_params."""
        loaded = ndarray.load(fname)
        if not isinstance(loaded, dict):
            raise ValueError('Invalid param file %s: it holds no names' % fname)
        arg_params, aux_params = {}, {}
        for key, value in loaded.items():
            kind, _, name = key.partition(':')
            if kind == 'arg':
                arg_params[name] = value
            elif kind == 'aux':
                aux_params[name] = value
            else:
                raise ValueError('Invalid param file %s: key %r is neither arg: nor aux:'
                                 % (fname, key))
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """The states of a stateful module (none here)."""
        _require(self, what='get_states')
        if merge_multi_context:
            raise MXNetError('get_states: merge_multi_context=True is not supported')
        return []

    def set_states(self, states=None, value=None):
        """Sets the states of a stateful module (none here)."""
        _require(self, what='set_states')
        if states or value:
            raise MXNetError('set_states: this module has no states')

    def install_monitor(self, mon):
        """Installs a Monitor on the module's executors."""
        raise NotImplementedError()

    # ---- computation -------------------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepares the module for `data_batch` (nothing to do without sparse parameters)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning('sparse_row_id_fn is not invoked for BaseModule.'))

    def forward(self, data_batch, is_train=None):
        """Runs the forward pass on `data_batch`."""
        raise NotImplementedError()

    def backward(self, out_grads=None):
        """Runs the backward pass (out_grads: head gradients for outputs that are not
        losses)."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the inputs (bound with inputs_need_grad=True)."""
        raise NotImplementedError()

    def update(self):
        """Updates the parameters with the optimizer and the last gradients."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates `eval_metric` with the last outputs and `labels`."""
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Allocates the executors for the given input shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Sets up the optimizer (and kvstore)."""
        raise NotImplementedError()
