"""Layers of MXNet's `gluon.contrib.nn` that the model zoo and user code rely on.

Concurrent / HybridConcurrent feed one input to every child and concatenate the children's
outputs (DenseNet's dense layers, Inception's and SqueezeNet's branches). Identity passes its
input through (the shortcut branch of a Concurrent). PixelShuffle*D rearrange channels into
space with Reshape/transpose. SparseEmbedding and SyncBatchNorm exist in their dense /
single-device form (see each).
"""
import warnings

from ....base import MXNetError
from ....context import num_gpus
from ... import nn as _nn
from ...block import HybridBlock
from ...nn.norm_layers import _BatchNorm

__all__ = ['Concurrent', 'HybridConcurrent', 'Identity', 'SparseEmbedding', 'SyncBatchNorm',
           'PixelShuffle1D', 'PixelShuffle2D', 'PixelShuffle3D']

# The same class as gluon.nn.Identity, so either import path gives one type.
Identity = _nn.Identity


class Concurrent(_nn.Sequential):
    """Runs every child on the same input and concatenates their outputs along `axis`.

    Example::

        net = Concurrent(axis=1)
        with net.name_scope():
            net.add(nn.Dense(10, activation='relu'))
            net.add(nn.Dense(20))
            net.add(Identity())
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        from .... import ndarray as nd
        outputs = [block(x) for block in self._children.values()]
        return nd.concat(*outputs, dim=self.axis)


class HybridConcurrent(_nn.HybridSequential):
    """Hybridizable Concurrent: every child sees the input; outputs are concatenated along
    `axis` (one `Concat` node in the traced graph)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        outputs = [block(x) for block in self._children.values()]
        return F.concat(*outputs, dim=self.axis)


class PixelShuffle1D(HybridBlock):
    """(N, C*f, W) -> (N, C, W*f): moves `factor` channel groups into the width."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))          # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))             # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))              # (N, C, W*f)

    def __repr__(self):
        return '{}({})'.format(self.__class__.__name__, self._factor)


def _factors(factor, n):
    try:
        factors = (int(factor),) * n
    except TypeError:
        factors = tuple(int(f) for f in factor)
    assert len(factors) == n, 'wrong length {}'.format(len(factors))
    return factors


class PixelShuffle2D(HybridBlock):
    """(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2); `factor` is an int or a pair."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))            # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))              # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))                  # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))                     # (N, C, H*f1, W*f2)

    def __repr__(self):
        return '{}({})'.format(self.__class__.__name__, self._factors)


class PixelShuffle3D(HybridBlock):
    """(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3); `factor` is an int or a
    triple."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))    # (N, C, f1*f2*f3, D, H, W)
        x = F.swapaxes(x, 2, 3)                                 # (N, C, D, f1*f2*f3, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f1, f2 * f3, 0, 0))      # (N, C, D, f1, f2*f3, H, W)
        x = F.reshape(x, (0, 0, -3, 0, 0, 0))                   # (N, C, D*f1, f2*f3, H, W)
        x = F.swapaxes(x, 3, 4)                                 # (N, C, D*f1, H, f2*f3, W)
        x = F.reshape(x, (0, 0, 0, 0, -4, f2, f3, 0))           # (N, C, D*f1, H, f2, f3, W)
        x = F.reshape(x, (0, 0, 0, -3, 0, 0))                   # (N, C, D*f1, H*f2, f3, W)
        x = F.swapaxes(x, 4, 5)                                 # (N, C, D*f1, H*f2, W, f3)
        return F.reshape(x, (0, 0, 0, 0, -3))                   # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self):
        return '{}({})'.format(self.__class__.__name__, self._factors)


class SparseEmbedding(_nn.Embedding):
    """MXNet's embedding with a row-sparse weight and gradient, in dense storage.

    hybridgluon has no sparse storage: the weight and its gradient are dense arrays. The
    forward result and the gradient's values are MXNet's (the gradient is zero outside the
    looked-up rows), and `weight.data()` works where MXNet requires `row_sparse_data`. One
    difference remains in training: MXNet's optimizers update only the looked-up rows of a
    row-sparse weight (lazy update), while here every row is updated; with plain SGD and no
    weight decay the rows not looked up do not change either way, with momentum or weight decay
    they do here.
    """

    def __init__(self, input_dim, output_dim, dtype='float32', weight_initializer=None,
                 **kwargs):
        super().__init__(input_dim, output_dim, dtype=dtype,
                         weight_initializer=weight_initializer, sparse_grad=True, **kwargs)


class SyncBatchNorm(_BatchNorm):
    """MXNet's cross-device synchronised BatchNorm, for one device.

    On a single device synchronised batch normalisation is batch normalisation (axis 1), and
    that is what runs (the graph holds a BatchNorm node). Synchronising statistics across
    several devices is not supported: num_devices > 1 raises MXNetError. num_devices=None
    means the number of GPUs (1 without any), as in MXNet.
    """

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer='zeros',
                 gamma_initializer='ones', running_mean_initializer='zeros',
                 running_variance_initializer='ones', **kwargs):
        if num_devices is None:
            warnings.warn('Caution using SyncBatchNorm: if not using all the GPUs, please '
                          'mannually set num_devices', UserWarning)
            num_devices = max(num_gpus(), 1)
        if num_devices != 1:
            raise MXNetError('SyncBatchNorm: synchronising batch statistics across %d devices '
                             'is not supported by hybridgluon (only num_devices=1)'
                             % num_devices)
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        self._num_devices = num_devices
