"""BucketingModule: one Module per bucket key (a sequence length, say), all sharing the
parameters and memory of the default bucket's module (MXNet's `mx.mod.BucketingModule`).

`sym_gen(key)` returns (symbol, data_names, label_names) for a key; each symbol is built
under a fresh NameManager, so automatically named layers get the same names in every
bucket. A batch's `bucket_key` picks (and on first sight binds) its bucket's module.
"""
import logging

import numpy as np

from .. import context as ctx
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, _check_input_names, _require
from .module import Module

__all__ = ['BucketingModule']


class BucketingModule(BaseModule):
    """Modules per bucket key from `sym_gen`, sharing the parameters of the module of
    `default_bucket_key` (the one bound first; it should be the largest bucket)."""

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=ctx.cpu(),
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super(BucketingModule, self).__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError('BucketingModule needs a default_bucket_key')
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, 'data', True)
        _check_input_names(symbol, label_names, 'label', False)
        _check_input_names(symbol, state_names, 'state', True)
        _check_input_names(symbol, fixed_param_names, 'fixed_param', True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        _require(self, params=False, what='data_shapes')
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        _require(self, params=False, what='label_shapes')
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        _require(self, params=False, what='output_shapes')
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        _require(self, params=False, what='symbol')
        return self._curr_module.symbol

    def get_params(self):
        _require(self, binded=False, what='get_params')
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if self._set_params_handled(arg_params, aux_params, allow_missing, force_init,
                                    allow_extra):
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        _require(self, params=False, what='init_params')
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        _require(self, what='get_states')
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self, what='set_states')
        self._curr_module.set_states(states, value)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Binds the default bucket's module (the other buckets bind when first used)."""
        params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if shared_module is not None:
            raise MXNetError('shared_module for BucketingModule is not supported')
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        key = self._default_bucket_key
        module = self._buckets.get(key)
        if module is None:
            module = self._new_module(*self._call_sym_gen(key))
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self.binded = True
        self._curr_module = module
        self._curr_bucket_key = key
        self._buckets[key] = module
        if params is not None:
            self.set_params(*params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Makes `bucket_key`'s module current, binding it (sharing the default bucket's
        module) on first use."""
        _require(self, params=False, what='switch_bucket')
        module = self._buckets.get(bucket_key)
        if module is None or not module.binded:
            if module is None:
                module = self._new_module(*self._call_sym_gen(bucket_key))
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        _require(self, what='init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None):
        _require(self, what='prepare')
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, *self._batch_descs(data_batch))
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def _batch_descs(self, data_batch):
        """The batch's provide_data / provide_label, or (when it has none, which MXNet
        requires for a new bucket) descriptions made from its arrays and the current bucket's
        names."""
        data_shapes = getattr(data_batch, 'provide_data', None)
        label_shapes = getattr(data_batch, 'provide_label', None)
        if not data_shapes:
            data_shapes = [(d.name, tuple(a.shape)) for d, a in
                           zip(self._curr_module.data_shapes, data_batch.data)]
        if not label_shapes and getattr(data_batch, 'label', None) and \
                self._curr_module.label_shapes:
            label_shapes = [(d.name, tuple(a.shape)) for d, a in
                            zip(self._curr_module.label_shapes, data_batch.label)]
        return data_shapes, label_shapes or None

    def forward(self, data_batch, is_train=None):
        _require(self, what='forward')
        self.switch_bucket(data_batch.bucket_key, *self._batch_descs(data_batch))
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        _require(self, what='backward')
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        _require(self, optimizer=True, what='update')
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self, what='get_outputs')
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self, what='get_input_grads')
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        _require(self, what='update_metric')
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self, params=False, what='install_monitor')
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # ---- checkpoints -----------------------------------------------------------------------
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Writes `prefix-<epoch>.params`, one `prefix-<key>-symbol.json` per bucket and the
        bucket keys to `prefix.buckets`."""
        if not self._buckets:
            raise MXNetError('Empty BucketingModule cannot be saved')
        self.save_params('%s-%04d.params' % (prefix, epoch))
        for key in self._buckets:
            symbol, _, _ = self._call_sym_gen(key)
            symbol.save('%s-%s-symbol.json' % (prefix, key), remove_amp_cast=remove_amp_cast)
        nd.save('%s.buckets' % prefix, nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule of the checkpoint written by save_checkpoint."""
        if sym_gen is None:
            raise ValueError('sym_gen is required for loading BucketingModule')
        if default_bucket_key is None:
            raise ValueError('default_bucket_key is required for loading BucketingModule')
        keys = [int(k) for k in nd.load('%s.buckets' % prefix)[0].asnumpy().astype('int32')]
        symbols = {k: sym.load('%s-%s-symbol.json' % (prefix, k)) for k in keys}
        arg_params, aux_params = load_params(prefix, epoch)
        return BucketingModule._assemble(symbols, sym_gen, default_bucket_key, arg_params,
                                         aux_params, kwargs)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from {bucket key: symbol} and parameter dicts."""
        for value, what in ((sym_dict, 'sym_dict'), (arg_params, 'arg_params'),
                            (aux_params, 'aux_params'),
                            (default_bucket_key, 'default_bucket_key')):
            if value is None:
                raise ValueError('%s needs to be provided for BucketingModule.load_dict' % what)
        return BucketingModule._assemble(sym_dict, sym_gen, default_bucket_key, arg_params,
                                         aux_params, kwargs)

    @staticmethod
    def _assemble(symbols, sym_gen, default_bucket_key, arg_params, aux_params, kwargs):
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key, symbol in symbols.items():
            _, data_names, label_names = mod._call_sym_gen(key)
            mod._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:
            raise MXNetError('the default bucket key %r is not among the saved buckets %s'
                             % (default_bucket_key, sorted(symbols)))
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
