"""Modules written in Python (MXNet's `mx.mod.PythonModule` and `PythonLossModule`):
no parameters, forward and backward supplied by the subclass; a PythonLossModule passes its
input through and computes the input gradient with `grad_func(scores, labels)`, so a loss
can end a SequentialModule without being a symbol.
"""
import logging

from .. import ndarray as nd
from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule

__all__ = ['PythonModule', 'PythonLossModule']


class PythonModule(BaseModule):
    """A parameterless module; a subclass defines forward, backward, get_outputs,
    get_input_grads and _compute_output_shapes."""

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super(PythonModule, self).__init__(logger=logger)
        self._data_names = list(data_names) if isinstance(data_names, tuple) else data_names
        self._label_names = list(label_names) if isinstance(label_names, tuple) \
            else label_names
        self._output_names = output_names
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        self.params_initialized = True  # nothing to initialize

    def update(self):
        """Nothing to update."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError('PythonModule does not support presliced labels')
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if grad_req != 'write':
            raise MXNetError('Python module only support write gradient')
        names = [d[0] for d in data_shapes]
        if names != list(self._data_names):
            raise MXNetError('bind: data_shapes name %s, the module takes %s'
                             % (names, self._data_names))
        if label_shapes is not None:
            if self._label_names is None or \
                    [d[0] for d in label_shapes] != list(self._label_names):
                raise MXNetError('bind: label_shapes name %s, the module takes %s'
                                 % ([d[0] for d in label_shapes], self._label_names))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """[(name, shape)] of the outputs for the bound shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        self.optimizer_initialized = True  # no parameters to optimize


class PythonLossModule(PythonModule):
    """A loss written in Python: forward passes the scores through; backward sets the input
    gradient to grad_func(scores, labels) (an NDArray or anything nd.array takes)."""

    def __init__(self, name='pyloss', data_names=('data',), label_names=('softmax_label',),
                 logger=logging, grad_func=None):
        super(PythonLossModule, self).__init__(data_names, label_names, [name + '_output'],
                                               logger=logger)
        if len(data_names) != 1 or len(label_names) != 1:
            raise MXNetError('PythonLossModule takes one data input and one label')
        if grad_func is not None and not callable(grad_func):
            raise TypeError('grad_func must be callable')
        self._name = name
        self._scores = None
        self._labels = None
        self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + '_output', self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        if not merge_multi_context:
            raise MXNetError('PythonLossModule: merge_multi_context=False is not supported')
        return [self._scores]

    def backward(self, out_grads=None):
        if out_grads is not None:
            raise MXNetError('For a loss module, out_grads should be None')
        if not self.for_training:
            raise MXNetError('re-bind with for_training=True to run backward')
        self._backward_impl()

    def _backward_impl(self):
        """Computes the input gradient (override, or give grad_func)."""
        if self._grad_func is None:
            raise NotImplementedError('PythonLossModule needs grad_func or an override of '
                                      '_backward_impl')
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, nd.NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context=True):
        if not merge_multi_context:
            raise MXNetError('PythonLossModule: merge_multi_context=False is not supported')
        return [self._scores_grad]

    def install_monitor(self, mon):
        raise NotImplementedError('PythonLossModule has no executors to monitor')
