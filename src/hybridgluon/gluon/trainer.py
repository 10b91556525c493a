"""Trainer (MXNet 1.9.1's `gluon.Trainer`): applies an Optimizer to a set of Parameters.

`step(batch_size)` sets the optimizer's rescale_grad to 1/batch_size (times the optimizer's own
initial rescale_grad), reduces the gradients across contexts, and updates every parameter whose
gradient backward wrote since the last step; a stale gradient raises MXNet's UserWarning unless
ignore_stale_grad=True, which skips those parameters instead.

Contexts and the kvstore follow MXNet 1.9.1: one context with a kvstore type string uses no
kvstore; several contexts use a single-process `mx.kv` store ('device' by default, or 'local'),
which sums each parameter's gradients across its copies. With update_on_kvstore (the default
when there is a store; False for 'local' when a parameter exceeds 16M elements, or when
MXNET_UPDATE_ON_KVSTORE=0) the store runs the optimizer once on its own copy of the weight and
copies the result to every context; without it every context's copy is updated with the summed
gradient by that context's updater. kvstore=None (or one context) updates each copy with its
own gradient. A KVStore object is always used, even for one context. 'dist_sync' (MPI, every
process of the job, kvstore/dist.py) sums the gradients over the processes too, all of a step in
one grouped allreduce; pass the global batch size to `step`. Gradient compression is not
supported (hybridgluon.distributed.DistributedTrainer has float16 compression).

Freshness: backward sets `_fresh_grad` on a parameter's gradient buffer; the flag of the data
array (where MXNet keeps it) counts as well. The Trainer clears both after updating. As in
MXNet, the flags are not cleared when the kvstore updates the weights.
"""
import os

from .. import optimizer as opt
from ..base import MXNetError, _write_file_atomic
from ..kvstore import KVStoreBase, create as _create_kvstore_of_type
from .parameter import Parameter, ParameterDict

__all__ = ['Trainer']


class _NoKVStoreError(MXNetError, AttributeError):
    """update_on_kvstore=True without a kvstore (MXNet raises AttributeError there)."""


def _create_kvstore(kvstore, num_device, arg_arrays):
    """(kvstore or None, update_on_kvstore) as MXNet's `model._create_kvstore` chooses them."""
    update_on_kvstore = bool(int(os.getenv('MXNET_UPDATE_ON_KVSTORE', '1')))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and 'dist' not in kvstore:
            kv = None  # no need for a store with one device in one process
        else:
            kv = _create_kvstore_of_type(kvstore)
            if kvstore == 'local':
                sizes = [arr.size for arr in arg_arrays]
                if sizes and max(sizes) > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError('kvstore must be KVStore, str or None')
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _fresh(arr, grad):
    return bool(arr._fresh_grad or grad._fresh_grad)


class Trainer(object):
    """Applies an `Optimizer` on a set of Parameters. Trainer should be used together with
    `autograd`.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        The set of parameters to optimize (dicts are taken in sorted key order; the position
        is the optimizer's index of a parameter).
    optimizer : str or Optimizer
        The optimizer to use.
    optimizer_params : dict
        Key-word arguments to be passed to the optimizer constructor, e.g.
        `{'learning_rate': 0.1}`.
    kvstore : str, KVStore or None
        'device' or 'local' (with several contexts: gradients summed across them), a KVStore
        from `mx.kv.create` (used even for one context), or None (each context updates its
        copy with its own gradient). Distributed types are not supported.
    compression_params : dict
        Gradient compression (not supported: raises once a kvstore is used; accepted where
        none is, as MXNet does).
    update_on_kvstore : bool, default None
        With a kvstore: whether the store runs the optimizer once on the summed gradient and
        copies the weight to every context (True; the default) or every context updates its
        copy with the summed gradient (False). True without a kvstore is an error.

    Properties
    ----------
    learning_rate : float
        The current learning rate of the optimizer.
    """
    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None):
        param_list = []
        if isinstance(params, (dict, ParameterDict)):
            for key in sorted(list(params.keys())):
                param_list.append(params[key])
            params = param_list
        if not isinstance(params, (list, tuple)):
            raise ValueError(
                "First argument must be a list or dict of Parameters, "
                "got %s." % (type(params)))
        self._params = []
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError(
                    "First argument must be a list or dict of Parameters, "
                    "got list of %s." % (type(param)))
            if any(param is p for p in self._params):
                continue  # a shared Parameter listed twice is updated once
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
            if param._stype != 'default':
                self._contains_sparse_weight = True
            if param._grad_stype != 'default':
                self._contains_sparse_grad = True
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        optimizer_params = optimizer_params if optimizer_params else {}
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {'kvstore': kvstore, 'update_on_kvstore': update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        self._reset_kvstore()
        kv = kvstore.type if isinstance(kvstore, KVStoreBase) else kvstore
        if isinstance(kv, str) and 'dist' in kv:
            self._start_from_rank0()

    def _start_from_rank0(self):
        """A distributed store: every worker gets rank 0's weights now, before its first
        forward (MXNet does so only at the first step, after each worker computed that step's
        gradient with its own initial weights); a Parameter still waiting for its shape gets
        them when it is initialized, at the first forward of every worker."""
        from .. import distributed
        self._init_kvstore()
        self._init_params()
        for param in self._params_to_init:
            distributed._broadcast_on_init(param, 0)

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            assert contexts is None or contexts == ctx, \
                "All Parameters must be initialized on the same set of contexts, " \
                "but Parameter %s is initialized on %s while previous Parameters " \
                "are initialized on %s." % (param.name, str(ctx), str(contexts))
            contexts = ctx
        return contexts if contexts is not None else []

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            assert not optimizer_params, \
                "optimizer_params must be None if optimizer is an instance of " \
                "Optimizer instead of str"
            self._optimizer = optimizer
            # not copied, so that a change of a Parameter's lr_mult / wd_mult takes effect
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        # one updater per context; each keeps the update counts of its context's device id
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    def _init_params(self):
        """Stores each initialized parameter in the kvstore (its first context's value) and
        copies that value to every context; deferred ones wait for a later step."""
        assert self._kv_initialized, "Cannot initialize parameters in KVStore " \
                                     "when KVStore is not initialized."
        params_to_init = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    params_to_init.append(param)
                else:
                    param_arrays = param._check_and_get(param._data, list)
                    # the key is the optimizer's index, as in _allreduce_grads
                    idx = self._params.index(param)
                    self._kvstore.broadcast(idx, param_arrays[0], param_arrays)
        self._params_to_init = params_to_init

    def _reset_kvstore(self):
        """Reset kvstore."""
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = [param for param in self._params]

    def _init_kvstore(self):
        """Creates the kvstore and decides update_on_kvstore, as MXNet 1.9.1 does for dense
        weights (sparse weights are not supported)."""
        config = self._kvstore_params
        if self._contains_sparse_weight:
            raise NotImplementedError("Sparse weights need a kvstore with row_sparse_pull, which "
                                      "hybridgluon does not have")
        arg_arrays = [param.data(self._contexts[0]) for param in self._params
                      if param._data is not None]
        kvstore, update_on_kvstore = _create_kvstore(config['kvstore'], len(self._contexts),
                                                     arg_arrays)
        if self._contains_sparse_grad:
            update_on_kvstore = False  # one process: push and pull the gradients
        if config['update_on_kvstore'] is not None:
            update_on_kvstore = config['update_on_kvstore']
        if update_on_kvstore and kvstore is None:
            why = ('kvstore=None' if config['kvstore'] is None else
                   "kvstore=%r on %d context: a type name makes a store only for several "
                   "contexts" % (config['kvstore'], len(self._contexts)))
            raise _NoKVStoreError("update_on_kvstore=True needs a kvstore, but this Trainer "
                                  "has none (%s). Use update_on_kvstore=None or False, or pass "
                                  "a KVStore object from mx.kv.create." % why)
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = bool(update_on_kvstore)
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._distributed = bool(kvstore) and 'dist' in kvstore.type
        self._kv_initialized = True

    def _init(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    @property
    def learning_rate(self):
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning "
                              "rate can be accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning("Optimizer has not been initialized yet")

    def set_learning_rate(self, lr):
        """Sets a new learning rate of the optimizer."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning "
                              "rate is mutated.")
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale):
        self._optimizer.rescale_grad = scale

    def step(self, batch_size, ignore_stale_grad=False):
        """Makes one step of parameter update: `allreduce_grads()` then `update()`. Call it
        after `autograd.backward()` and outside of `record()` scope.

        Parameters
        ----------
        batch_size : int
            Batch size of data processed. Gradient will be normalized by `1/batch_size`.
            Set this to 1 if you normalized loss manually with `loss = mean(loss)`.
        ignore_stale_grad : bool, optional, default=False
            If true, ignores Parameters with stale gradient (gradient that has not
            been updated by `backward` after last step) and skip update.
        """
        rescale_grad = self._scale / batch_size
        self._check_and_rescale_grad(rescale_grad)
        self._init()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sums each parameter's gradients across contexts (nothing to do on one context).
        For a manual `allreduce_grads()` + `update()` instead of `step()`."""
        self._init()
        assert not (self._kvstore and self._update_on_kvstore), \
            'allreduce_grads() when parameters are updated on kvstore ' \
            'is not supported. Try setting `update_on_kvstore` ' \
            'to False when creating trainer.'
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        if self._distributed:  # one call: the store sends every gradient in a few messages
            keys, grads, data = [], [], []
            for i, param in enumerate(self._params):
                if param.grad_req != 'null':
                    keys.append(i)
                    grads.append(param.list_grad())
                    data.append(param.list_data())
            if keys:
                self._kvstore.pushpull(keys, grads, out=data if self._update_on_kvstore
                                       else None)
            return
        for i, param in enumerate(self._params):
            if param.grad_req == 'null':
                continue
            if self._update_on_kvstore:  # push gradients, the store updates, pull weights
                self._kvstore.pushpull(i, param.list_grad(), out=param.list_data(), priority=-i)
            else:  # every gradient buffer becomes the sum
                self._kvstore.pushpull(i, param.list_grad(), priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Makes one step of parameter update (after `allreduce_grads()`).

        Parameters
        ----------
        batch_size : int
            Batch size of data processed. Gradient will be normalized by `1/batch_size`.
        ignore_stale_grad : bool, optional, default=False
            If true, skips Parameters whose gradient backward did not write since the last
            step instead of raising.
        """
        self._init()
        assert not (self._kvstore and self._update_on_kvstore), \
            'update() when parameters are updated on kvstore ' \
            'is not supported. Try setting `update_on_kvstore` ' \
            'to False when creating trainer.'
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        loss_scaler = getattr(self, '_amp_loss_scaler', None)
        if loss_scaler is not None:
            if loss_scaler.has_overflow(self._params):
                return  # skip on overflow

        updates = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == 'null':
                continue
            data_list = param._check_and_get(param._data, list)
            grad_list = param.list_grad()
            if not ignore_stale_grad:
                for data, grad in zip(data_list, grad_list):
                    if not _fresh(data, grad):
                        raise UserWarning(
                            "Gradient of Parameter `%s` on context %s has not been updated "
                            "by backward since last `step`. This could mean a bug in your "
                            "model that made it only use a subset of the Parameters (Blocks) "
                            "for this iteration. If you are intentionally only using a subset, "
                            "call step with ignore_stale_grad=True to suppress this "
                            "warning and skip updating of Parameters with stale gradient"
                            % (param.name, str(data.context)))

            if self._kvstore and self._update_on_kvstore:
                continue

            for upd, arr, grad in zip(updates, data_list, grad_list):
                if not ignore_stale_grad or _fresh(arr, grad):
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
                    grad._fresh_grad = False

        if not (self._kvstore and self._update_on_kvstore):
            for updater, upd in zip(self._updaters, updates):
                if upd:
                    i, g, w = zip(*upd)
                    updater(i, g, w)

    def save_states(self, fname):
        """Saves trainer states (e.g. optimizer, momentum) to a file.

        Note
        ----
        `optimizer.param_dict`, which contains Parameter information (such as
        `lr_mult` and `wd_mult`) will not be saved. In a distributed job only rank 0 writes.
        The file is written whole or not at all.
        """
        assert self._optimizer is not None
        self._init()
        from ..distributed import is_writer
        if not is_writer():
            return  # rank 0 writes the checkpoint; the states are the same on every rank
        if self._update_on_kvstore:
            assert not self._params_to_init, "Cannot save trainer states when some " \
                                             "parameters are not yet initialized in kvstore."
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            _write_file_atomic(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Loads trainer states (e.g. optimizer, momentum) from a file.

        Note
        ----
        `optimizer.param_dict`, which contains Parameter information (such as
        `lr_mult` and `wd_mult`) will not be loaded from the file, but rather set
        based on current Trainer's parameters.
        """
        self._init()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, 'rb') as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        for updater in self._updaters:
            updater.optimizer = self._optimizer
        param_dict = {i: param for i, param in enumerate(self._params)}
        self._optimizer.param_dict = param_dict
