"""Pooling layers (MXNet 1.x `gluon.nn.conv_layers` pooling part): Max/Avg/GlobalMax/GlobalAvg
pooling in 1-D, 2-D and 3-D, all thin wrappers over the `Pooling` op.

Each layer's automatic prefix is 'pool' (`pool0_`), as in MXNet. `Pool2D` is a compatibility
name (not in MXNet) for older code that writes `nn.Pool2D(kernel_size=2)`.
"""
from ..block import HybridBlock
from ._args import _int_tuple

__all__ = ['MaxPool1D', 'MaxPool2D', 'MaxPool3D', 'AvgPool1D', 'AvgPool2D', 'AvgPool3D',
           'GlobalMaxPool1D', 'GlobalMaxPool2D', 'GlobalMaxPool3D', 'GlobalAvgPool1D',
           'GlobalAvgPool2D', 'GlobalAvgPool3D', 'Pool2D']


def _tuple(value, n, what):
    value = _int_tuple(value, n)
    assert len(value) == n, '%s must be a number or a list of %d ints' % (what, n)
    return value


class _Pooling(HybridBlock):
    """Base of the pooling layers: holds the `Pooling` op's keyword arguments.

    `strides=None` means the pool size; `ceil_mode` selects pooling_convention 'full' (else
    'valid'); `count_include_pad` is passed only when given (avg pooling).
    """

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self._kwargs = {
            'kernel': _int_tuple(pool_size, len(pool_size)),
            'stride': _int_tuple(strides, len(pool_size)),
            'pad': _int_tuple(padding, len(pool_size)),
            'global_pool': global_pool, 'pool_type': pool_type, 'layout': layout,
            'pooling_convention': 'full' if ceil_mode else 'valid'}
        if count_include_pad is not None:
            self._kwargs['count_include_pad'] = count_include_pad

    def _alias(self):
        return 'pool'

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name='fwd', **self._kwargs)

    def __repr__(self):
        s = '{name}(size={kernel}, stride={stride}, padding={pad}, ceil_mode={ceil_mode}'
        s += ', global_pool={global_pool}, pool_type={pool_type}, layout={layout})'
        return s.format(name=self.__class__.__name__,
                        ceil_mode=self._kwargs['pooling_convention'] == 'full',
                        **self._kwargs)


def _check_layout(layout, allowed, dims):
    assert layout in allowed, 'Only %s layouts are valid for %dD Pooling' % (
        ' and '.join(allowed), dims)


class MaxPool1D(_Pooling):
    """Max pooling over (batch, channel, width) data."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW', ceil_mode=False,
                 **kwargs):
        _check_layout(layout, ('NCW', 'NWC'), 1)
        pool_size = _tuple(pool_size, 1, 'pool_size')
        super().__init__(pool_size, strides, padding, ceil_mode, False, 'max', layout, **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over (batch, channel, height, width) data."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout='NCHW',
                 ceil_mode=False, **kwargs):
        _check_layout(layout, ('NCHW', 'NHWC'), 2)
        pool_size = _tuple(pool_size, 2, 'pool_size')
        super().__init__(pool_size, strides, padding, ceil_mode, False, 'max', layout, **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over (batch, channel, depth, height, width) data."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCDHW', **kwargs):
        _check_layout(layout, ('NCDHW', 'NDHWC'), 3)
        pool_size = _tuple(pool_size, 3, 'pool_size')
        super().__init__(pool_size, strides, padding, ceil_mode, False, 'max', layout, **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over (batch, channel, width) data."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW', ceil_mode=False,
                 count_include_pad=True, **kwargs):
        _check_layout(layout, ('NCW', 'NWC'), 1)
        pool_size = _tuple(pool_size, 1, 'pool_size')
        super().__init__(pool_size, strides, padding, ceil_mode, False, 'avg', layout,
                         count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over (batch, channel, height, width) data."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCHW', count_include_pad=True, **kwargs):
        _check_layout(layout, ('NCHW', 'NHWC'), 2)
        pool_size = _tuple(pool_size, 2, 'pool_size')
        super().__init__(pool_size, strides, padding, ceil_mode, False, 'avg', layout,
                         count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over (batch, channel, depth, height, width) data."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCDHW', count_include_pad=True, **kwargs):
        _check_layout(layout, ('NCDHW', 'NDHWC'), 3)
        pool_size = _tuple(pool_size, 3, 'pool_size')
        super().__init__(pool_size, strides, padding, ceil_mode, False, 'avg', layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: output (batch, channel, 1)."""

    def __init__(self, layout='NCW', **kwargs):
        _check_layout(layout, ('NCW', 'NWC'), 1)
        super().__init__((1,), None, 0, True, True, 'max', layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over the whole plane: output (batch, channel, 1, 1)."""

    def __init__(self, layout='NCHW', **kwargs):
        _check_layout(layout, ('NCHW', 'NHWC'), 2)
        super().__init__((1, 1), None, 0, True, True, 'max', layout, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over the whole volume: output (batch, channel, 1, 1, 1)."""

    def __init__(self, layout='NCDHW', **kwargs):
        _check_layout(layout, ('NCDHW', 'NDHWC'), 3)
        super().__init__((1, 1, 1), None, 0, True, True, 'max', layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: output (batch, channel, 1)."""

    def __init__(self, layout='NCW', **kwargs):
        _check_layout(layout, ('NCW', 'NWC'), 1)
        super().__init__((1,), None, 0, True, True, 'avg', layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over the whole plane: output (batch, channel, 1, 1)."""

    def __init__(self, layout='NCHW', **kwargs):
        _check_layout(layout, ('NCHW', 'NHWC'), 2)
        super().__init__((1, 1), None, 0, True, True, 'avg', layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over the whole volume: output (batch, channel, 1, 1, 1)."""

    def __init__(self, layout='NCDHW', **kwargs):
        _check_layout(layout, ('NCDHW', 'NDHWC'), 3)
        super().__init__((1, 1, 1), None, 0, True, True, 'avg', layout, **kwargs)


class Pool2D(_Pooling):
    """Compatibility name (not an MXNet class): 2-D pooling taking `pool_size` or `kernel_size`
    (default 2), `pool_type` 'max' (default), 'avg', 'sum' or 'lp'; strides default to the
    pool size, so `Pool2D(kernel_size=2)` is `MaxPool2D(2)`."""

    def __init__(self, pool_size=None, strides=None, padding=0, ceil_mode=False,
                 pool_type='max', layout='NCHW', count_include_pad=None, kernel_size=None,
                 **kwargs):
        if pool_size is not None and kernel_size is not None:
            raise ValueError('Pool2D: give pool_size or kernel_size, not both')
        size = pool_size if pool_size is not None else kernel_size
        if size is None:
            size = 2
        _check_layout(layout, ('NCHW', 'NHWC'), 2)
        super().__init__(_tuple(size, 2, 'pool_size'), strides, padding, ceil_mode, False,
                         pool_type, layout, count_include_pad, **kwargs)
