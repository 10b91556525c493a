"""Normalisation layers (MXNet 1.x `gluon.nn.basic_layers` part): BatchNorm, InstanceNorm,
LayerNorm and GroupNorm, thin wrappers over the ops of the same names.

Parameter shapes left at 0 (`in_channels=0`) are filled by deferred initialization through the
graph's shape inference (the ops' infer functions fill the parameter shapes from the data).
BatchNorm's `running_mean` / `running_var` are auxiliary states: grad_req 'null', not
differentiable. As in MXNet's CPU kernel, a forward pass does not change them; the running
average is updated by the backward pass of a recorded training step.
"""
import numpy as np

from ..block import HybridBlock
from ._args import _int

__all__ = ['BatchNorm', 'InstanceNorm', 'LayerNorm', 'GroupNorm']


def _kwargs_repr(kwargs):
    return ', '.join(['='.join([k, repr(v)]) for k, v in kwargs.items()])


def _add_gamma_beta(block, size, center, scale, gamma_initializer, beta_initializer,
                    mark_differentiable=False):
    """The affine parameters every normalisation layer has: gamma (trained when `scale`) and
    beta (trained when `center`), of shape (size,), 0 deferring to the first forward pass.
    mark_differentiable: an untrained one is also marked not differentiable (BatchNorm)."""
    for name, init, trained in (('gamma', gamma_initializer, scale),
                                ('beta', beta_initializer, center)):
        extra = {'differentiable': trained} if mark_differentiable else {}
        setattr(block, name, block.params.get(name, grad_req='write' if trained else 'null',
                                              shape=(size,), init=init,
                                              allow_deferred_init=True, **extra))


class _BatchNorm(HybridBlock):
    """Base of BatchNorm: the `BatchNorm` op with Gluon's defaults (eps 1e-5, fix_gamma = not
    scale)."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        axis, in_channels = _int(axis), _int(in_channels)
        self._kwargs = {'axis': axis, 'eps': epsilon, 'momentum': momentum,
                        'fix_gamma': not scale, 'use_global_stats': use_global_stats}
        self._axis = axis
        if in_channels != 0:
            self.in_channels = in_channels
        _add_gamma_beta(self, in_channels, center, scale, gamma_initializer, beta_initializer,
                        mark_differentiable=True)
        self.running_mean = self.params.get('running_mean', grad_req='null',
                                            shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get('running_var', grad_req='null',
                                           shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def cast(self, dtype):
        # MXNet keeps BatchNorm in float32 when a network is cast to float16.
        if np.dtype(dtype).name == 'float16':
            dtype = 'float32'
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name='fwd', **self._kwargs)

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        return '{name}({content}, in_channels={ch})'.format(
            name=self.__class__.__name__, content=_kwargs_repr(self._kwargs),
            ch=in_channels if in_channels else None)


class BatchNorm(_BatchNorm):
    """Batch normalization: normalises over all axes but `axis` with the batch statistics in
    training (`autograd.record(train_mode=True)`) and the running statistics otherwise.

    Parameters
    ----------
    axis : int, default 1
        The channel axis (1 for NCHW, -1 or 3 for NHWC).
    momentum : float, default 0.9
        Momentum of the running averages.
    epsilon : float, default 1e-5
        Added to the variance before the square root.
    center, scale : bool, default True
        Use beta / gamma; scale=False fixes gamma at 1.
    use_global_stats : bool, default False
        Use the running statistics in training too.
    in_channels : int, default 0
        Channels of the input; 0 defers the parameter shapes to the first forward pass.
    """


class InstanceNorm(HybridBlock):
    """Instance normalization: per sample and channel over the spatial axes,
    `(x - mean) / sqrt(var + epsilon) * gamma + beta`. With scale=False (the default) gamma
    stays at its initial value (ones) and is not trained."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer='zeros',
                 gamma_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        axis, in_channels = _int(axis), _int(in_channels)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis = axis
        self._epsilon = epsilon
        _add_gamma_beta(self, in_channels, center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name='fwd', eps=self._epsilon)
        # F.swapaxes rather than x.swapaxes: the same op and node name as MXNet's method form,
        # and it works on Symbols too.
        x = F.swapaxes(x, dim1=1, dim2=self._axis)
        out = F.InstanceNorm(x, gamma, beta, name='fwd', eps=self._epsilon)
        return F.swapaxes(out, dim1=1, dim2=self._axis)

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        return '{name}({content}, in_channels={ch})'.format(
            name=self.__class__.__name__, content=_kwargs_repr(self._kwargs), ch=in_channels)


class LayerNorm(HybridBlock):
    """Layer normalization along `axis` (default the last):
    `(x - mean) / sqrt(var + epsilon) * gamma + beta` with gamma / beta of the axis' size."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer='zeros',
                 gamma_initializer='ones', in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        axis, in_channels = _int(axis), _int(in_channels)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _add_gamma_beta(self, in_channels, center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        return '{name}({content}, in_channels={ch})'.format(
            name=self.__class__.__name__, content=_kwargs_repr(self._kwargs),
            ch=self.gamma.shape[0])


class GroupNorm(HybridBlock):
    """Group normalization: the channels are split into `num_groups` groups, each normalised
    per sample over its channels and the spatial axes. As in MXNet 1.x, gamma and beta hold one
    value per group (shape `(num_groups,)`)."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        num_groups = _int(num_groups)
        self._kwargs = {'eps': epsilon, 'num_groups': num_groups, 'center': center,
                        'scale': scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _add_gamma_beta(self, num_groups, center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups,
                           eps=self._epsilon)

    def __repr__(self):
        return '{name}({content})'.format(name=self.__class__.__name__,
                                           content=_kwargs_repr(self._kwargs))
