"""Convolutional layers (MXNet's `gluon.nn.conv_layers`): Conv1D, Conv2D, Conv3D.

Names, signatures, Parameter names (`conv0_weight`, `conv0_bias`) and reprs follow MXNet 1.x.
With `in_channels=0` the weight's input-channel dim stays 0 until the first forward pass, where
graph shape inference (the Convolution shape rule fills the weight) completes it.
"""
import numbers

from ..block import HybridBlock
from .activations import Activation

__all__ = ['Conv1D', 'Conv2D', 'Conv3D']


def _tuple(value, n):
    """An int becomes an n-tuple; a list or tuple is kept (as a tuple)."""
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    return tuple(value)


class _Conv(HybridBlock):
    """Abstract N-D convolution: `activation(conv(x, weight) + bias)`.

    Parameters
    ----------
    channels : int
        Number of output channels (filters).
    kernel_size : tuple of int
        Size of the convolution window.
    strides, padding, dilation : int or tuple of int
        Stride, zero padding (both sides) and dilation of the window per spatial dim.
    groups : int
        Number of groups the input and output channels are split into.
    layout : str
        Data layout ('NCW', 'NCHW', 'NCDHW'; channel-last layouts are accepted here but the
        CPU kernel rejects them).
    in_channels : int, default 0
        Input channels; 0 defers initialization until the first forward pass.
    activation : str, optional
        Activation applied to the output (see `Activation`).
    use_bias : bool, default True
        Whether to add a bias vector.
    weight_initializer, bias_initializer : str or Initializer
        Initializers of the weight (default: the global one) and of the bias (zeros).
    """

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', op_name='Convolution', adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            nk = len(kernel_size)
            strides = _tuple(strides, nk)
            padding = _tuple(padding, nk)
            dilation = _tuple(dilation, nk)
            self._op_name = op_name
            self._kwargs = {
                'kernel': tuple(kernel_size), 'stride': strides, 'dilate': dilation,
                'pad': padding, 'num_filter': channels, 'num_group': groups,
                'no_bias': not use_bias, 'layout': layout}
            if adj is not None:
                self._kwargs['adj'] = adj
            in_per_group = in_channels // groups if in_channels else 0
            if layout.find('C') == 1:  # channel-first: (F, C/g, *k)
                wshape = (channels, in_per_group) + tuple(kernel_size)
            else:  # channel-last: (F, *k, C/g)
                wshape = (channels,) + tuple(kernel_size) + (in_per_group,)
            self.weight = self.params.get('weight', shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + '_')
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            act = op(x, weight, name='fwd', **self._kwargs)
        else:
            act = op(x, weight, bias, name='fwd', **self._kwargs)
        if self.act is not None:
            act = self.act(act)
        return act

    def _alias(self):
        return 'conv'

    def __repr__(self):
        s = '{name}({mapping}, kernel_size={kernel}, stride={stride}'
        nk = len(self._kwargs['kernel'])
        if self._kwargs['pad'] != (0,) * nk:
            s += ', padding={pad}'
        if self._kwargs['dilate'] != (1,) * nk:
            s += ', dilation={dilate}'
        if hasattr(self, 'out_pad') and self.out_pad != (0,) * nk:
            s += ', output_padding={out_pad}'.format(out_pad=self.out_pad)
        if self._kwargs['num_group'] != 1:
            s += ', groups={num_group}'
        if self.bias is None:
            s += ', bias=False'
        if self.act:
            s += ', {}'.format(self.act)
        s += ')'
        shape = self.weight.shape
        return s.format(name=self.__class__.__name__,
                        mapping='{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0]),
                        **self._kwargs)


class Conv1D(_Conv):
    """1-D convolution over (batch, channels, width) data ('NCW')."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout='NCW', activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        assert layout == 'NCW', "Only supports 'NCW' layout for now"
        if isinstance(kernel_size, numbers.Integral):
            kernel_size = (kernel_size,)
        assert len(kernel_size) == 1, "kernel_size must be a number or a list of 1 ints"
        op_name = kwargs.pop('op_name', 'Convolution')
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name=op_name, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over (batch, channels, height, width) data ('NCHW')."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                 groups=1, layout='NCHW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0, **kwargs):
        assert layout in ('NCHW', 'NHWC'), "Only supports 'NCHW' and 'NHWC' layout for now"
        if isinstance(kernel_size, numbers.Integral):
            kernel_size = (kernel_size,) * 2
        assert len(kernel_size) == 2, "kernel_size must be a number or a list of 2 ints"
        op_name = kwargs.pop('op_name', 'Convolution')
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name=op_name, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over (batch, channels, depth, height, width) data ('NCDHW')."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout='NCDHW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0, **kwargs):
        assert layout in ('NCDHW', 'NDHWC'), "Only supports 'NCDHW' and 'NDHWC' layout for now"
        if isinstance(kernel_size, numbers.Integral):
            kernel_size = (kernel_size,) * 3
        assert len(kernel_size) == 3, "kernel_size must be a number or a list of 3 ints"
        op_name = kwargs.pop('op_name', 'Convolution')
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name=op_name, **kwargs)
