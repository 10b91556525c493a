"""SequentialModule: modules chained so that each one's outputs are the next one's data
(MXNet's `mx.mod.SequentialModule`).

A module added with take_labels=True receives the batch's labels (and updates the metric);
auto_wiring=True renames the previous outputs to the module's data names. Backward passes each
module's input gradients to the one before as its head gradients, so every module after the
first is bound with inputs_need_grad when training.
"""
import copy
import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule, _require

__all__ = ['SequentialModule']


class SequentialModule(BaseModule):
    """A chain of modules run one after another."""
    META_TAKE_LABELS = 'take_labels'
    META_AUTO_WIRING = 'auto_wiring'

    def __init__(self, logger=logging):
        super(SequentialModule, self).__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Appends `module` (keywords: take_labels, auto_wiring); returns self, so calls
        chain. The whole chain must be bound and initialized again afterwards."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise ValueError('Unknown meta "%s", a typo? (known: %s)'
                                 % (key, ', '.join(sorted(self._meta_keys))))
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _takes_labels(self, i):
        return bool(self._metas[i].get(self.META_TAKE_LABELS, False))

    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        _require(self, params=False, what='data_shapes')
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        _require(self, params=False, what='label_shapes')
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self, params=False, what='output_shapes')
        return self._modules[-1].output_shapes

    def get_params(self):
        _require(self, what='get_params')
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initializes every module's parameters; a parameter name used by two modules is an
        error (their values would be ambiguous in get_params)."""
        if self.params_initialized and not force_init:
            return
        _require(self, params=False, what='init_params')
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        owners = ({}, {})
        for i, module in enumerate(self._modules):
            for names, known in zip(module.get_params(), owners):
                for name in names:
                    if name in known:
                        raise MXNetError('Duplicated parameter names: name "%s" in layer %d (%s) '
                                         'is already used in layer %d (%s).'
                                         % (name, i, type(module).__name__, known[name],
                                            type(self._modules[known[name]]).__name__))
                    known[name] = i
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if inputs_need_grad and not for_training:
            raise MXNetError('bind: inputs_need_grad=True needs for_training=True')
        if shared_module is not None:
            raise MXNetError('Shared module is not supported by SequentialModule')
        if not self._modules:
            raise MXNetError('Attempting to bind an empty SequentialModule')
        self._label_shapes = label_shapes
        shapes = data_shapes
        any_labels = False
        for i, module in enumerate(self._modules):
            labels = label_shapes if self._takes_labels(i) else None
            any_labels = any_labels or self._takes_labels(i)
            if self._metas[i].get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(shapes):
                    raise MXNetError('auto_wiring: module %d takes %d inputs, the previous one '
                                     'gives %d' % (i, len(names), len(shapes)))
                shapes = [(name, shape) for name, (_, shape) in zip(names, shapes)]
            module.bind(data_shapes=shapes, label_shapes=labels, for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        if not any_labels:
            self._label_shapes = None
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        _require(self, what='init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        _require(self, what='forward')
        batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, 'provide_data'):
                names = [name for name, _ in module.output_shapes]
                batch.provide_data = [(name, x.shape) for name, x in zip(names, batch.data)]

    def backward(self, out_grads=None):
        _require(self, what='backward')
        for i in range(len(self._modules) - 1, -1, -1):
            self._modules[i].backward(out_grads=out_grads)
            if i > 0:
                out_grads = self._modules[i].get_input_grads()

    def update(self):
        _require(self, optimizer=True, what='update')
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self, what='get_outputs')
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self, what='get_input_grads')
        if not self.inputs_need_grad:
            raise MXNetError('get_input_grads: bind with inputs_need_grad=True')
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        _require(self, what='update_metric')
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self, params=False, what='install_monitor')
        for module in self._modules:
            module.install_monitor(mon)
