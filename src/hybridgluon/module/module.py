"""Module: a Symbol trained and run through a data-parallel group of executors (MXNet's
`mx.mod.Module`).

The module keeps the master copy of the parameters (`_arg_params`, `_aux_params`, on the
CPU); each executor holds its own copy. `update()` changes the executors' copies, which makes
the master copy stale (`_params_dirty`) until `get_params` averages the devices' copies back.
The optimizer runs either inside a kvstore (several devices, MXNET_UPDATE_ON_KVSTORE=1: the
store sums the gradients and updates its weights, which are pulled back to every device) or
in the module's own updater, once per device copy.
"""
import logging
import warnings

from .. import context as ctx
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import (_create_kvstore, _initialize_kvstore, _update_params,
                     _update_params_on_kvstore, load_checkpoint)
from ..ndarray import NDArray, zeros
from .base_module import BaseModule, _check_input_names, _parse_data_desc, _require
from .executor_group import DataParallelExecutorGroup

__all__ = ['Module']


class Module(BaseModule):
    """A module over `symbol`. data_names / label_names / state_names: the arguments that are
    inputs, labels and states (everything else is a parameter); context: a Context or a list
    (data parallelism, the batch split by work_load_list); fixed_param_names: parameters not
    updated; group2ctxs: contexts for the symbol's ctx_group attributes;
    compression_params: the kvstore's gradient compression."""

    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super(Module, self).__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        if not isinstance(context, (list, tuple)) or not context or \
                not all(isinstance(c, ctx.Context) for c in context):
            raise TypeError('context must be a Context or a non-empty list of Contexts, got %r'
                            % (context,))
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError('work_load_list has %d entries for %d contexts'
                             % (len(work_load_list), len(self._context)))
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, 'data', True)
        _check_input_names(symbol, label_names, 'label', False)
        _check_input_names(symbol, state_names, 'state', True)
        _check_input_names(symbol, fixed_param_names, 'fixed_param', True)
        inputs = data_names + label_names + state_names
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ---- checkpoints -----------------------------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module of the checkpoint `prefix` at `epoch` (parameters set; bind it next).
        load_optimizer_states: init_optimizer then reads `prefix-<epoch>.states`."""
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = '%s-%04d.states' % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Writes `prefix-symbol.json`, `prefix-<epoch>.params` and, with
        save_optimizer_states, `prefix-<epoch>.states`."""
        self._symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
        param_name = '%s-%04d.params' % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = '%s-%04d.states' % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # ---- description -----------------------------------------------------------------------
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        _require(self, params=False, what='data_shapes')
        return self._data_shapes

    @property
    def label_shapes(self):
        _require(self, params=False, what='label_shapes')
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self, params=False, what='output_shapes')
        return self._exec_group.get_output_shapes()

    # ---- parameters ------------------------------------------------------------------------
    def get_params(self):
        _require(self, binded=False, what='get_params')
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initializes each parameter from arg_params / aux_params when it is there, else
        with `initializer` (allowed only with allow_missing when the dicts are given;
        RuntimeError otherwise). The initializer sees each parameter's symbol attributes
        (its __init__ among them). allow_extra: names the symbol lacks are ignored."""
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. init_params '
                          'call ignored.', stacklevel=2)
            return
        _require(self, params=False, what='init_params')
        attrs = self._symbol.attr_dict()

        def init_one(name, arr, given):
            if given is None:
                initializer(InitDesc(name, attrs.get(name, None)), arr)
            elif name in given:
                src = given[name]
                if src is arr:
                    return
                if not isinstance(src, NDArray):
                    src = nd.array(src, dtype=arr.dtype)
                if tuple(src.shape) != tuple(arr.shape):
                    raise MXNetError('init_params: %s has shape %s, the value given has shape %s'
                                     % (name, tuple(arr.shape), tuple(src.shape)))
                src.copyto(arr)
            elif not allow_missing:
                raise RuntimeError('%s is not presented' % name)
            elif initializer is not None:
                initializer(InitDesc(name, attrs.get(name, None)), arr)

        for name, arr in sorted(self._arg_params.items()):
            init_one(name, arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            init_one(name, arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Sets the parameters (copied into every executor)."""
        if self._set_params_handled(arg_params, aux_params, allow_missing, force_init,
                                    allow_extra):
            return
        _require(self, params=False, what='set_params')
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    # ---- binding ---------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Binds the executors for data_shapes / label_shapes (DataDescs or (name, shape)
        pairs). shared_module: a bound, initialized Module whose parameters (and memory)
        the new executors share."""
        if force_rebind:
            if self.params_initialized and self._params_dirty:
                # The executors about to be dropped hold the trained values.
                self._sync_params_from_devices()
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if not for_training and inputs_need_grad:
            raise MXNetError('bind: inputs_need_grad=True needs for_training=True')
        data_shapes, label_shapes = _parse_data_desc(self.data_names, self.label_names,
                                                     data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not isinstance(shared_module, Module) or not shared_module.binded or \
                    not shared_module.params_initialized:
                raise MXNetError('bind: shared_module must be a bound Module with initialized '
                                 'parameters')
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise MXNetError('bind: shared_module has %d executors, this module needs %d'
                                 % (len(shared_group.execs), len(self._context)))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_shapes, label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group,
            logger=self.logger, fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            group2ctxs=self._group2ctxs, state_names=self._state_names)
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {name: zeros(arrs[0].shape, dtype=arrs[0].dtype)
                                for name, arrs in zip(self._param_names,
                                                      self._exec_group.param_arrays)}
            self._aux_params = {name: zeros(arrs[0].shape, dtype=arrs[0].dtype)
                                for name, arrs in zip(self._aux_names,
                                                      self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Reshapes the executors for new input shapes (the parameters are kept)."""
        _require(self, params=False, what='reshape')
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ---- optimizer -------------------------------------------------------------------------
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Sets up the optimizer: a name (created with rescale_grad = 1 / batch size unless
        given, and the parameter names by update index) or an Optimizer; and the kvstore
        when several devices share the parameters."""
        _require(self, what='init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring...')
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and 'dist' in kvstore.type and '_sync' in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        names = self._exec_group.param_names
        ndev = len(self._context)
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * ndev + k: n for k in range(ndev) for i, n in enumerate(names)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault('rescale_grad', rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn('Optimizer created manually outside Module but rescale_grad is '
                              'not normalized to 1.0/batch_size/num_workers (%s vs. %s). Is this '
                              'intended?' % (optimizer.rescale_grad, rescale_grad), stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise TypeError('optimizer must be a str or an Optimizer, got %s'
                            % type(optimizer).__name__)
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _initialize_kvstore(kvstore=kvstore, param_arrays=self._exec_group.param_arrays,
                                arg_params=self._arg_params, param_names=self._param_names,
                                update_on_kvstore=update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Uses `shared_module`'s optimizer, kvstore and updater (for bucketing)."""
        if not shared_module.optimizer_initialized:
            raise MXNetError('borrow_optimizer: the shared module has no optimizer yet')
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    # ---- computation -----------------------------------------------------------------------
    def _batch_data_shapes(self, data_batch):
        if isinstance(data_batch, list):
            if not data_batch:
                raise MXNetError('Encountered empty data batch')
            shapes = []
            for i in range(len(data_batch[0].data)):
                shape = data_batch[0].data[i].shape
                if any(b.data[i].shape != shape for b in data_batch):
                    raise MXNetError('All data batches in a list need to have the same shape')
                shapes.append((len(data_batch) * shape[0],) + tuple(shape[1:]))
            return tuple(shapes)
        return tuple(tuple(a.shape) for a in data_batch.data)

    def forward(self, data_batch, is_train=None):
        """Forward pass on `data_batch` (a DataBatch, anything with .data, or a list of
        batches, one per device). A batch whose shapes differ from the bound ones reshapes
        the executors first."""
        _require(self, what='forward')
        current = tuple(tuple(d.shape) for d in self._data_shapes)
        new = self._batch_data_shapes(data_batch)
        if current != new:
            if getattr(data_batch, 'provide_data', None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(d.name, shape, d.dtype, d.layout)
                              for d, shape in zip(self._data_shapes, new)]
            if getattr(data_batch, 'provide_label', None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, 'label', None) and self._label_shapes:
                new_lshape = [DataDesc(d.name, tuple(a.shape), d.dtype, d.layout)
                              for d, a in zip(self._label_shapes, data_batch.label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        _require(self, what='backward')
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Updates the parameters with the gradients of the last backward."""
        _require(self, optimizer=True, what='update')
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        _require(self, what='get_outputs')
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self, what='get_input_grads')
        if not self.inputs_need_grad:
            raise MXNetError('get_input_grads: bind with inputs_need_grad=True to get the '
                             'gradients of the inputs')
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        _require(self, what='get_states')
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self, what='set_states')
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    def save_optimizer_states(self, fname):
        """Writes the optimizer's states (from the kvstore or the updater) to `fname`."""
        _require(self, binded=False, params=False, optimizer=True, what='save_optimizer_states')
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, 'wb') as fout:
                fout.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Reads optimizer states written by save_optimizer_states."""
        _require(self, binded=False, params=False, optimizer=True, what='load_optimizer_states')
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, 'rb') as fin:
                self._updater.set_states(fin.read())

    def install_monitor(self, mon):
        _require(self, params=False, what='install_monitor')
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        _require(self, params=False, what='prepare')
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning('sparse_row_id_fn is not invoked: hybridgluon has no '
                                      'row_sparse parameters to pull'))
