"""Trainer (MXNet 1.9.1's `gluon.Trainer`): applies an Optimizer to a set of Parameters.

`step(batch_size)` sets the optimizer's rescale_grad to 1/batch_size (times the optimizer's own
initial rescale_grad), reduces the gradients across contexts, and updates every parameter whose
gradient backward wrote since the last step; a stale gradient raises MXNet's UserWarning unless
ignore_stale_grad=True, which skips those parameters instead.

There is no KVStore here: one context needs none (as in MXNet, which creates none for a single
device), and several contexts of one process get an in-process stand-in for MXNet's 'device' /
'local' stores: gradients are summed across contexts and, with update_on_kvstore (the default
there), the optimizer runs once on the first context's copy, which is then copied to the others.
Distributed kvstores and gradient compression are not supported.

Freshness: backward sets `_fresh_grad` on a parameter's gradient buffer; the flag of the data
array (where MXNet keeps it) counts as well. The Trainer clears both after updating.
"""
from .. import ndarray as nd
from .. import optimizer as opt
from .parameter import Parameter, ParameterDict

__all__ = ['Trainer']


class _LocalKVStore(object):
    """The part of a single-process 'device'/'local' KVStore a Trainer uses: summing the
    gradients of the contexts and, when it owns the optimizer, updating and broadcasting."""
    def __init__(self, kvstore_type):
        self.type = kvstore_type
        self._updater = None

    def set_optimizer(self, optimizer):
        self._updater = opt.get_updater(optimizer)

    @staticmethod
    def broadcast(src, dsts):
        for dst in dsts:
            if dst is not src:
                src.copyto(dst)

    @staticmethod
    def allreduce(arrays):
        """Every array becomes the sum of all of them."""
        if len(arrays) < 2:
            return
        total = nd.add_n(*arrays)
        for arr in arrays:
            total.copyto(arr)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        with open(fname, 'wb') as fout:
            fout.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        with open(fname, 'rb') as f:
            self._updater.set_states(f.read())


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
    kvstore : str or None
        'device' or 'local' (several contexts: gradients summed in process) or None (each
        context updates with its own gradients). Distributed types are not supported.
    compression_params : dict
        Gradient compression (not supported; accepted for a single context, where MXNet
        creates no kvstore either).
    update_on_kvstore : bool, default None
        With several contexts and a kvstore: whether the optimizer runs once on the reduced
        gradient (True, the default) or on every context (False).

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
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        for k, updater in enumerate(self._updaters):
            # all contexts of this build share one device id: keep their update counts apart
            updater._device_id = k

    def _init_params(self):
        """Broadcasts the first context's values to the others (what a KVStore does)."""
        assert self._kv_initialized, "Cannot initialize parameters in KVStore " \
                                     "when KVStore is not initialized."
        params_to_init = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    params_to_init.append(param)
                else:
                    param_arrays = param._check_and_get(param._data, list)
                    self._kvstore.broadcast(param_arrays[0], param_arrays)
        self._params_to_init = params_to_init

    def _reset_kvstore(self):
        """Reset kvstore."""
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = [param for param in self._params]

    def _init_kvstore(self):
        """Chooses the reduction as MXNet's _create_kvstore would: none for one context."""
        config = self._kvstore_params
        kvstore = config['kvstore']
        if kvstore is not None and not isinstance(kvstore, str):
            raise TypeError('kvstore must be KVStore, str or None')
        if isinstance(kvstore, str) and 'dist' in kvstore:
            raise NotImplementedError("Distributed kvstore '%s' is not supported by hybridgluon"
                                      % kvstore)
        if self._contains_sparse_weight:
            raise NotImplementedError("Sparse weights need a kvstore, which hybridgluon "
                                      "does not have")
        if kvstore is None or len(self._contexts) <= 1:
            self._kvstore = None
            self._update_on_kvstore = None
        else:
            if self._compression_params:
                raise NotImplementedError("Gradient compression is not supported by "
                                          "hybridgluon")
            update_on_kvstore = config['update_on_kvstore']
            if update_on_kvstore is None:
                update_on_kvstore = not self._contains_sparse_grad
            self._kvstore = _LocalKVStore(kvstore)
            if update_on_kvstore:
                self._kvstore.set_optimizer(self._optimizer)
            self._update_on_kvstore = bool(update_on_kvstore)
        self._distributed = False
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
        for i, param in enumerate(self._params):
            if param.grad_req == 'null':
                continue
            grads = param.list_grad()
            self._kvstore.allreduce(grads)
            if self._update_on_kvstore:  # the store runs the optimizer and returns weights
                data = param.list_data()
                self._kvstore._updater(i, grads[0], data[0])
                self._kvstore.broadcast(data[0], data)

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
        `lr_mult` and `wd_mult`) will not be saved.
        """
        assert self._optimizer is not None
        self._init()
        if self._update_on_kvstore:
            assert not self._params_to_init, "Cannot save trainer states when some " \
                                             "parameters are not yet initialized in kvstore."
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, 'wb') as fout:
                fout.write(self._updaters[0].get_states(dump_optimizer=True))

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
