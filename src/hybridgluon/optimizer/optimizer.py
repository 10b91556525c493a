"""Weight-updating functions (MXNet 1.9.1's `mx.optimizer`): the Optimizer base class with its
registry, learning-rate / weight-decay bookkeeping and update counting, and the optimizers
(the Updater that keeps per-weight states is in updater.py).

Every update is one registered C op called with `out=weight` (csrc/ops/optimizer.c), so the
weight and the state arrays change in place; this module only computes the per-step scalars
(learning rate from the schedule and lr_mult, weight decay and wd_mult, bias corrections).
Optimizers without a float16 path of their own get MXNet's generic multi-precision wrapper: a
float32 master copy updated in float32 and cast back into the weight.
"""
import math
import warnings

import numpy

from .. import ndarray as nd
from ..ndarray import NDArray
from .updater import Updater, get_updater  # noqa: F401  (MXNet's mx.optimizer.optimizer has them)

__all__ = ['AdaDelta', 'AdaGrad', 'Adam', 'AdamW', 'Ftrl', 'LAMB', 'NAG', 'Optimizer',
           'RMSProp', 'SGD', 'Signum', 'create', 'register']


class Optimizer(object):
    """The base class inherited by all optimizers.

    Parameters
    ----------
    rescale_grad : float, optional, default 1.0
        Multiply the gradient with `rescale_grad` before updating (often ``1.0/batch_size``).
    param_idx2name : dict from int to string, optional, default None
        A dictionary that maps int index to string name.
    clip_gradient : float, optional, default None
        Clip the gradient by projecting onto the box ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional, default None
        The initial learning rate. If None, the learning rate of ``lr_scheduler`` is used; if
        not None it overwrites the scheduler's base learning rate. If both are None: 0.01.
    lr_scheduler : LRScheduler, optional, default None
        The learning rate scheduler.
    wd : float, optional, default 0.0
        The weight decay (L2 regularization) coefficient.
    sym : Symbol, optional, default None
        The Symbol this optimizer is applying to (its ``__lr_mult__``/``__wd_mult__`` attrs).
    begin_num_update : int, optional, default 0
        The initial number of updates.
    multi_precision : bool, optional, default False
        Keep a float32 master copy of float16 weights and update it in float32.
    param_dict : dict of int -> gluon.Parameter, default None
        Parameters by index, for their lr_mult and wd_mult (not deep copied, not pickled).
    """
    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0.,
                 clip_gradient=None, learning_rate=None,
                 lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                print(UserWarning("learning rate from ``lr_scheduler`` has been "
                                  "overwritten by ``learning_rate`` in optimizer."))
                self.lr_scheduler.base_lr = learning_rate

        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0

        if param_idx2name is None:
            param_idx2name = {}
        assert isinstance(param_idx2name, dict), \
            'param_idx2name should be a dict of param indexes to names.'
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}

        self.set_lr_mult({})
        self.set_wd_mult({})

    opt_registry = {}

    @staticmethod
    def register(klass):
        """Registers a new optimizer under its lower-cased class name (for `create`)."""
        assert isinstance(klass, type)
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            warnings.warn('WARNING: New optimizer %s.%s is overriding existing optimizer %s.%s'
                          % (klass.__module__, klass.__name__,
                             Optimizer.opt_registry[name].__module__,
                             Optimizer.opt_registry[name].__name__))
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """Instantiates a registered optimizer by (case-insensitive) name."""
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        raise ValueError('Cannot find optimizer %s' % name)

    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def create_state(self, index, weight):
        """Creates the auxiliary state (momentum, moments...) of a weight; called once."""

    def create_state_multi_precision(self, index, weight):
        """Like `create_state`, plus a float32 master copy when the weight is float16 and
        multi_precision is on: returns (master_copy, state)."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = weight.astype(numpy.float32)
            return (weight_master_copy,) + (self.create_state(index, weight_master_copy),)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to "
                          "poor accuracy or slow convergence. "
                          "Consider using multi_precision=True option of the "
                          "optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Updates `weight` in place from `grad` and `state`."""
        raise NotImplementedError()

    def update_multi_precision(self, index, weight, grad, state):
        """`update`, through the float32 master copy for float16 weights when multi_precision
        is on."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = state[0]
            original_state = state[1]
            grad32 = grad.astype(numpy.float32)
            self.update(index, weight_master_copy, grad32, original_state)
            nd.cast(weight_master_copy, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    def set_learning_rate(self, lr):
        """Sets a new learning rate (only without an LRScheduler)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been "
                              "defined. Note that set_learning_rate can mutate "
                              "the value of the learning rate of the optimizer "
                              "only when the LRScheduler of the optimizer is "
                              "undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):  # pylint: disable=unused-argument
        """[DEPRECATED] Sets lr scale. Use set_lr_mult instead."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult):
        """Sets learning-rate multipliers by parameter name or index (the Symbol's
        ``__lr_mult__`` attributes first)."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and '__lr_mult__' in attr[name]:
                    self.lr_mult[name] = float(attr[name]['__lr_mult__'])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Sets weight-decay multipliers by parameter name or index. Names from
        `param_idx2name` that end neither in ``_weight`` nor ``_gamma`` get 0."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith('_weight') or n.endswith('_gamma')):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and '__wd_mult__' in attr[name]:
                    self.wd_mult[name] = float(attr[name]['__wd_mult__'])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        """Switches the update counts to those of device `device_id`."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _begin_update(self, index, weight, grad):
        """The common start of an update: type checks, the update count, this step's lr and
        wd for the parameter."""
        assert isinstance(weight, NDArray)
        assert isinstance(grad, NDArray)
        self._update_count(index)
        return self._get_lr(index), self._get_wd(index)

    def _op_kwargs(self, rescale=True, clip_set=False, **options):
        """Keyword arguments of an update op: `options`, rescale_grad (unless rescale is False),
        and clip_gradient when clipping is on: a clip of 0 counts as off, as in MXNet, except
        for the ops MXNet calls with it whenever it is set (clip_set)."""
        if rescale:
            options['rescale_grad'] = self.rescale_grad
        if (self.clip_gradient is not None) if clip_set else self.clip_gradient:
            options['clip_gradient'] = self.clip_gradient
        return options

    def _update_count(self, index):
        """Counts one update of `index` (an int or a list) and raises num_update to match."""
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _get_lrs(self, indices):
        """Learning rates of `indices`: the schedule's (or lr) times each lr_mult."""
        if self.lr_scheduler is not None:
            lr = self.lr_scheduler(self.num_update)
        else:
            lr = self.lr
        lrs = [lr for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                lrs[i] *= self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                lrs[i] *= self.lr_mult[index]
            elif index in self.idx2name:
                lrs[i] *= self.lr_mult.get(self.idx2name[index], 1.0)
        return lrs

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """Weight decays of `indices`: wd times each wd_mult."""
        wds = [self.wd for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                wds[i] *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wds[i] *= self.wd_mult[index]
            elif index in self.idx2name:
                wds[i] *= self.wd_mult.get(self.idx2name[index], 1.0)
        return wds

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def __getstate__(self):
        ret = self.__dict__.copy()
        # param_dict holds Parameters: the Trainer sets it again after loading
        del ret['param_dict']
        return ret

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}


# convenience wrappers, as MXNet exports them
register = Optimizer.register  # pylint: disable=invalid-name
create = Optimizer.create_optimizer  # pylint: disable=invalid-name


def _zeros_like(weight, dtype=None):
    return nd.zeros(weight.shape, weight.context, dtype=weight.dtype if dtype is None else dtype)


def _mp_master_state(opt, index, weight, name):
    """(state, master copy) for optimizers with their own mp_* ops (SGD, NAG)."""
    if opt.multi_precision and weight.dtype == numpy.float16:
        weight_master_copy = weight.astype(numpy.float32)
        return (opt.create_state(index, weight_master_copy), weight_master_copy)
    if weight.dtype == numpy.float16 and not opt.multi_precision:
        warnings.warn("Accumulating with float16 in optimizer can lead to "
                      "poor accuracy or slow convergence. "
                      "Consider using multi_precision=True option of the "
                      "%s optimizer" % name)
    return opt.create_state(index, weight)


@register
class SGD(Optimizer):
    """The SGD optimizer with momentum and weight decay::

        rescaled_grad = lr * (rescale_grad * clip(grad, clip_gradient) + wd * weight)
        state = momentum * state + rescaled_grad
        weight = weight - state

    (see `sgd_update` / `sgd_mom_update`; with multi_precision, `mp_sgd_*` on a float32
    master copy of float16 weights).

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    lazy_update : bool, optional
        Lazy updates for row_sparse gradients (storage here is dense: no effect).
    """
    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super(SGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state_multi_precision(self, index, weight):
        return _mp_master_state(self, index, weight, 'SGD')

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        lr, wd = self._begin_update(index, weight, grad)

        kwargs = self._op_kwargs()
        if self.momentum > 0:
            kwargs['momentum'] = self.momentum

        if not multi_precision:
            if state is not None:
                nd.sgd_mom_update(weight, grad, state, out=weight,
                                  lazy_update=self.lazy_update, lr=lr, wd=wd, **kwargs)
            else:
                nd.sgd_update(weight, grad, out=weight, lazy_update=self.lazy_update,
                              lr=lr, wd=wd, **kwargs)
        else:
            if state[0] is not None:
                nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight,
                                     lr=lr, wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        use_multi_precision = self.multi_precision and weight.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_multi_precision)


@register
class Signum(Optimizer):
    r"""The Signum optimizer that takes the sign of gradient or momentum::

        rescaled_grad = rescale_grad * clip(grad, clip_gradient) + wd * weight
        state = momentum * state + (1-momentum)*rescaled_grad
        weight = (1 - lr * wd_lh) * weight - lr * sign(state)

    (signSGD when momentum is 0; see `signsgd_update` / `signum_update`).

    Parameters
    ----------
    momentum : float, optional
       The momentum value.
    wd_lh : float, optional
       The amount of decoupled weight decay regularization.
    """
    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super(Signum, self).__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_impl(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)

        kwargs = self._op_kwargs()
        if self.momentum > 0:
            kwargs['momentum'] = self.momentum
        if self.wd_lh:
            kwargs['wd_lh'] = self.wd_lh

        if state is not None:
            nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            kwargs.pop('wd_lh', None)
            nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient::

        state = momentum * state + grad + wd * weight
        weight = weight - (lr * (grad + momentum * state))

    (see `nag_mom_update`; plain SGD when momentum is 0).

    Parameters
    ----------
    momentum : float, optional
       The momentum value.
    """
    def __init__(self, momentum=0.0, **kwargs):
        super(NAG, self).__init__(**kwargs)
        self.momentum = momentum

    def create_state_multi_precision(self, index, weight):
        return _mp_master_state(self, index, weight, 'NAG')

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        lr, wd = self._begin_update(index, weight, grad)

        kwargs = self._op_kwargs()
        if self.momentum > 0:
            kwargs['momentum'] = self.momentum

        if not multi_precision:
            if state is not None:
                nd.nag_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            if state[0] is not None:
                nd.mp_nag_mom_update(weight, grad, state[0], state[1], out=weight,
                                     lr=lr, wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        use_multi_precision = (self.multi_precision and weight.dtype == numpy.float16 and
                               isinstance(state, (tuple, list)))
        self._update_impl(index, weight, grad, state, multi_precision=use_multi_precision)


@register
class Adam(Optimizer):
    """The Adam optimizer (Kingma & Ba), at step t::

        rescaled_grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * rescaled_grad
        v = beta2 * v + (1 - beta2) * (rescaled_grad**2)
        lr = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        w = w - lr * m / (sqrt(v) + epsilon)

    Parameters
    ----------
    beta1, beta2 : float, optional
        Exponential decay rates of the first and second moment estimates.
    epsilon : float, optional
        Small value to avoid division by 0.
    lazy_update : bool, optional
        Lazy updates for row_sparse gradients (storage here is dense: no effect).
    """
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super(Adam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (_zeros_like(weight),  # mean
                _zeros_like(weight))  # variance

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)

        t = self._index_update_count[index]
        coef1 = 1. - self.beta1**t
        coef2 = 1. - self.beta2**t
        lr *= math.sqrt(coef2) / coef1

        kwargs = self._op_kwargs(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon)

        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight,
                       lazy_update=self.lazy_update, lr=lr, wd=wd, **kwargs)


@register
class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as MXNet's AdamW over its
    contrib `adamw_update` op, at step t::

        rescaled_grad = clip(grad * rescale_grad, clip_gradient)
        m = beta1 * m + (1 - beta1) * rescaled_grad
        v = beta2 * v + (1 - beta2) * (rescaled_grad**2)
        lr = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)   (if correct_bias)
        w = w - lr * (m / (sqrt(v) + epsilon) + wd * w)

    A `rescale_grad` that is not finite (or 0) skips the step, which is how a dynamic loss
    scaler drops overflowing batches.

    Parameters
    ----------
    beta1, beta2 : float, optional
        Exponential decay rates of the first and second moment estimates.
    epsilon : float, optional
        Small value to avoid division by 0.
    correct_bias : bool, optional
        Whether to apply Adam's bias correction to the learning rate.
    """
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 correct_bias=True, **kwargs):
        super(AdamW, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.correct_bias = correct_bias

    def create_state(self, index, weight):
        return (_zeros_like(weight),  # mean
                _zeros_like(weight))  # variance

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)
        if self.correct_bias:
            t = self._index_update_count[index]
            lr *= math.sqrt(1. - self.beta2**t) / (1. - self.beta1**t)

        rescale = self.rescale_grad
        if not isinstance(rescale, NDArray):
            rescale = nd.full((1,), rescale, ctx=weight.context)
        kwargs = self._op_kwargs(rescale=False, beta1=self.beta1, beta2=self.beta2,
                                 epsilon=self.epsilon)

        mean, var = state
        nd._adamw_update(weight, grad, mean, var, rescale, out=weight, lr=1, wd=wd, eta=lr,
                         **kwargs)


@register
class RMSProp(Optimizer):
    """The RMSProp optimizer: Tieleman & Hinton's (`rmsprop_update`) or, with centered=True,
    Graves' (`rmspropalex_update`).

    Parameters
    ----------
    gamma1 : float, optional
        Decay factor of the moving average of squared gradients.
    gamma2 : float, optional
        A "momentum" factor (centered only).
    epsilon : float, optional
        Small value to avoid division by 0.
    centered : bool, optional
        True: Graves's version; False: Tieleman & Hinton's.
    clip_weights : float, optional
        Clips weights into ``[-clip_weights, clip_weights]``.
    """
    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9,
                 epsilon=1e-8, centered=False, clip_weights=None, **kwargs):
        super(RMSProp, self).__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight),  # n
                    _zeros_like(weight),  # g
                    _zeros_like(weight))  # delta
        return (_zeros_like(weight),)  # n

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)

        kwargs = self._op_kwargs(gamma1=self.gamma1, epsilon=self.epsilon)
        if self.centered:
            kwargs['gamma2'] = self.gamma2
        if self.clip_weights:
            kwargs['clip_weights'] = self.clip_weights

        if not self.centered:
            (n, ) = state
            nd.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            n, g, delta = state
            nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd, **kwargs)


@register
class AdaGrad(Optimizer):
    """AdaGrad optimizer (Duchi et al.)::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += square(grad)
        div = grad / sqrt(history + float_stable_eps)
        weight += (div + weight * wd) * -lr

    Parameters
    ----------
    eps : float, optional
        Initial value of the history accumulator. Avoids division by 0.
    """
    def __init__(self, eps=1e-7, **kwargs):
        super(AdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight)  # history

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)

        # MXNet's dense AdaGrad clips whenever clip_gradient is set
        kwargs = self._op_kwargs(clip_set=True, epsilon=self.float_stable_eps)
        nd._adagrad_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)


@register
class AdaDelta(Optimizer):
    """The AdaDelta optimizer (Zeiler), which uses no learning rate::

        grad = clip(grad * rescale_grad, clip_gradient)
        acc_grad = rho * acc_grad + (1. - rho) * grad * grad
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_grad + epsilon) * grad
        acc_delta = rho * acc_delta + (1. - rho) * delta * delta
        weight -= (delta + wd * weight)

    Parameters
    ----------
    rho : float
        Decay rate for both squared gradients and delta.
    epsilon : float
        Small value to avoid division by 0.
    """
    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super(AdaDelta, self).__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight),  # accumulated g
                _zeros_like(weight))  # accumulated delta

    def update(self, index, weight, grad, state):
        assert isinstance(weight, NDArray)
        assert isinstance(grad, NDArray)
        wd = self._get_wd(index)
        self._update_count(index)

        # MXNet scales the caller's gradient buffer in place (`grad *= rescale_grad`)
        grad *= self.rescale_grad
        kwargs = self._op_kwargs(rescale=False, clip_set=True, rho=self.rho,
                                 epsilon=self.epsilon)
        acc_g, acc_delta = state
        nd._adadelta_update(weight, grad, acc_g, acc_delta, out=weight, wd=wd, **kwargs)


@register
class Ftrl(Optimizer):
    """The FTRL-proximal optimizer (McMahan et al.)::

        rescaled_grad = clip(grad * rescale_grad, clip_gradient)
        z += rescaled_grad - (sqrt(n + rescaled_grad**2) - sqrt(n)) * weight / learning_rate
        n += rescaled_grad**2
        w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / learning_rate + wd) * (abs(z) > lamda1)

    Parameters
    ----------
    lamda1 : float, optional
        L1 regularization coefficient.
    learning_rate : float, optional
        The initial learning rate.
    beta : float, optional
        Per-coordinate learning rate correlation parameter.
    """
    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        # as MXNet: learning_rate bypasses the base class (it never overrides a scheduler)
        super(Ftrl, self).__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (_zeros_like(weight),  # z
                _zeros_like(weight))  # n

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)

        kwargs = self._op_kwargs(lamda1=self.lamda1, beta=self.beta)

        z, n = state
        nd.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, **kwargs)


@register
class LAMB(Optimizer):
    """LAMB optimizer (You et al., 'Large Batch Optimization for Deep Learning'): Adam's
    direction plus weight decay, scaled per weight by the trust ratio |w| / |direction|
    (`lamb_update_phase1`, the norms, `lamb_update_phase2`).

    Parameters
    ----------
    beta1, beta2 : float, optional
        Exponential decay rates of the first and second moment estimates.
    epsilon : float, optional
        Small value to avoid division by 0.
    lower_bound, upper_bound : float, optional
        Limits of the weight norm in the trust ratio (None: no limit).
    bias_correction : bool, optional
        Whether to divide the moments by 1 - beta**t.
    """
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super(LAMB, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (_zeros_like(weight),  # mean
                _zeros_like(weight))  # var

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)
        t = self._index_update_count[index]

        kwargs = self._op_kwargs(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                                 bias_correction=self.bias_correction, t=t)

        mean, var = state
        g = nd.lamb_update_phase1(weight, grad, mean, var, wd=wd, **kwargs)

        kwargs = {}
        if self.lower_bound:
            kwargs['lower_bound'] = self.lower_bound
        if self.upper_bound:
            kwargs['upper_bound'] = self.upper_bound
        r_1 = weight.norm()
        r_2 = g.norm()
        nd.lamb_update_phase2(weight, g, r_1, r_2, lr=lr, out=weight, **kwargs)
