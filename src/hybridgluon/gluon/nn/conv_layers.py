"""Convolutional layers (MXNet's `gluon.nn.conv_layers`): Conv1D/2D/3D, their transposes
(Conv1DTranspose/2D/3D on the Deconvolution op) and ReflectionPad2D.

Names, signatures, Parameter names (`conv0_weight`, `conv0_bias`) and reprs follow MXNet 1.x.
With `in_channels=0` the weight's input-channel dim stays 0 until the first forward pass, where
graph shape inference (the Convolution / Deconvolution shape rule fills the weight) completes it.
A convolution's weight is (channels, in_channels / groups, *kernel); a transposed convolution's
is (in_channels, channels / groups, *kernel), as MXNet's shape rules give.
"""
from ..block import HybridBlock
from ._args import _int, _int_tuple, _is_number
from .activations import Activation

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose',
           'Conv3DTranspose', 'ReflectionPad2D']


def _weight_shape(op_name, channels, in_channels, groups, kernel, layout):
    """The weight shape MXNet's shape rule gives for data with `in_channels` channels (0:
    unknown, left at 0 for deferred initialization)."""
    if op_name == 'Deconvolution':
        lead = (in_channels, channels // groups)
    else:
        lead = (channels, in_channels // groups if in_channels else 0)
    if layout.find('C') == 1:  # channel-first: (lead0, lead1, *k)
        return lead + tuple(kernel)
    return (lead[0],) + tuple(kernel) + (lead[1],)  # channel-last: (lead0, *k, lead1)


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
        channels, in_channels, groups = _int(channels), _int(in_channels), _int(groups)
        kernel_size = _int_tuple(kernel_size, len(kernel_size))
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            nk = len(kernel_size)
            strides = _int_tuple(strides, nk)
            padding = _int_tuple(padding, nk)
            dilation = _int_tuple(dilation, nk)
            self._op_name = op_name
            self._kwargs = {
                'kernel': kernel_size, 'stride': strides, 'dilate': dilation,
                'pad': padding, 'num_filter': channels, 'num_group': groups,
                'no_bias': not use_bias, 'layout': layout}
            if adj is not None:
                self._kwargs['adj'] = adj
            wshape = _weight_shape(op_name, channels, in_channels, groups, kernel_size, layout)
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
        # As MXNet 1.x prints it, transposes included (there '{weight.shape[1]} -> {shape[0]}'
        # reads channels/groups -> in_channels, and output_padding is never shown: the layers
        # set `outpad`, the check reads `out_pad`).
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
        kernel_size = _int_tuple(kernel_size, 1)
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
        kernel_size = _int_tuple(kernel_size, 2)
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
        kernel_size = _int_tuple(kernel_size, 3)
        assert len(kernel_size) == 3, "kernel_size must be a number or a list of 3 ints"
        op_name = kwargs.pop('op_name', 'Convolution')
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name=op_name, **kwargs)


def _check_transpose(kernel_size, output_padding, n):
    kernel_size, output_padding = _int_tuple(kernel_size, n), _int_tuple(output_padding, n)
    assert len(kernel_size) == n, 'kernel_size must be a number or a list of %d ints' % n
    assert len(output_padding) == n, 'output_padding must be a number or a list of %d ints' % n
    return kernel_size, output_padding


class Conv1DTranspose(_Conv):
    """Transposed 1-D convolution (the gradient of a convolution with respect to its data) over
    'NCW' data. out_width = (width - 1) * strides - 2 * padding + dilation * (kernel_size - 1)
    + 1 + output_padding; output_padding must be smaller than strides. The weight is
    (in_channels, channels / groups, kernel)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout='NCW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0, **kwargs):
        assert layout == 'NCW', "Only supports 'NCW' layout for now"
        kernel_size, output_padding = _check_transpose(kernel_size, output_padding, 1)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name='Deconvolution', adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution over 'NCHW' data ('NHWC' is accepted here, but the CPU
    kernel rejects it). Per spatial dim: out = (in - 1) * strides - 2 * padding
    + dilation * (kernel_size - 1) + 1 + output_padding. The weight is
    (in_channels, channels / groups, kh, kw)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout='NCHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        assert layout in ('NCHW', 'NHWC'), "Only supports 'NCHW' and 'NHWC' layout for now"
        kernel_size, output_padding = _check_transpose(kernel_size, output_padding, 2)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name='Deconvolution', adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class Conv3DTranspose(_Conv):
    """Transposed 3-D convolution over 'NCDHW' data ('NDHWC' is accepted here, but the CPU
    kernel rejects it); see Conv2DTranspose for the output size."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout='NCDHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        assert layout in ('NCDHW', 'NDHWC'), "Only supports 'NCDHW' and 'NDHWC' layout for now"
        kernel_size, output_padding = _check_transpose(kernel_size, output_padding, 3)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name='Deconvolution', adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class ReflectionPad2D(HybridBlock):
    """Pads (N, C, H, W) data by reflecting it at its borders (the edge row is not repeated):
    `padding` rows/columns on each side of H and W, or an 8-tuple `pad_width` as the Pad op
    takes it ((0, 0, 0, 0, top, bottom, left, right)). Each pad must be smaller than its axis."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if _is_number(padding):
            padding = (0, 0, 0, 0) + (padding,) * 4
        padding = _int_tuple(padding, 8)
        assert len(padding) == 8, 'padding must be an int or a tuple of 8 ints'
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode='reflect', pad_width=self._padding)
