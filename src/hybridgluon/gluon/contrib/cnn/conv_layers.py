"""Deformable convolution layers, as MXNet 1.9.1's `gluon.contrib.cnn`.

Each layer holds two convolutions: a plain Convolution over the input that predicts the
sampling offsets (and, for the modulated layer, the masks: a sigmoid of the last
num_deformable_group * kh * kw channels, times 2), and the deformable convolution proper that
samples the input at those offsets. Parameter names, shapes and initialisers follow MXNet's
(`offset_weight`, `offset_bias`, `deformable_conv_weight`, `deformable_conv_bias`; the offset
convolution starts at zero, so a fresh layer samples the regular grid).
"""
from ...block import HybridBlock
from ...nn._args import _int, _int_tuple
from ...nn.activations import Activation

__all__ = ['DeformableConvolution', 'ModulatedDeformableConvolution']


class _Deformable(HybridBlock):
    """What the two layers share; `_per_tap` is the offset convolution's channels per kernel tap
    and deformable group (2 for (dy, dx), 3 with the mask)."""

    _per_tap = 2

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW', use_bias=True,
                 in_channels=0, activation=None, weight_initializer=None, bias_initializer='zeros',
                 offset_weight_initializer='zeros', offset_bias_initializer='zeros',
                 offset_use_bias=True, op_name=None, adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        assert layout in ('NCHW', 'NHWC'), "Only supports 'NCHW' and 'NHWC' layout for now"
        kernel = _int_tuple(kernel_size, 2)
        nsp = len(kernel)
        stride, pad = _int_tuple(strides, nsp), _int_tuple(padding, nsp)
        dilate = _int_tuple(dilation, nsp)
        channels, in_channels = _int(channels), _int(in_channels)
        self._channels, self._in_channels = channels, in_channels
        self._op_name = op_name
        taps = kernel[0] * kernel[1] * num_deformable_group
        self._offset_split = 2 * taps
        shared = {'kernel': kernel, 'stride': stride, 'dilate': dilate, 'pad': pad,
                  'num_group': groups, 'layout': layout}
        if adj:
            shared['adj'] = adj
        self._kwargs_offset = dict(shared, num_filter=self._per_tap * taps,
                                   no_bias=not offset_use_bias)
        self._kwargs_deformable_conv = dict(shared, num_filter=channels,
                                            num_deformable_group=num_deformable_group,
                                            no_bias=not use_bias)
        per_group_in = in_channels // groups if in_channels else 0
        with self.name_scope():
            self.offset_weight = self.params.get(
                'offset_weight', shape=(self._per_tap * taps, per_group_in) + kernel,
                init=offset_weight_initializer, allow_deferred_init=True)
            self.offset_bias = self.params.get(
                'offset_bias', shape=(self._per_tap * taps,), init=offset_bias_initializer,
                allow_deferred_init=True) if offset_use_bias else None
            self.deformable_conv_weight = self.params.get(
                'deformable_conv_weight', shape=(channels, 0) + kernel, init=weight_initializer,
                allow_deferred_init=True)
            self.deformable_conv_bias = self.params.get(
                'deformable_conv_bias', shape=(channels,), init=bias_initializer,
                allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + '_') if activation else None

    def _offsets(self, F, x, offset_weight, offset_bias):
        args = [x, offset_weight] + ([] if offset_bias is None else [offset_bias])
        return F.Convolution(*args, cudnn_off=True, **self._kwargs_offset)

    def _finish(self, out):
        return self.act(out) if self.act else out

    def __repr__(self):
        kw = self._kwargs_deformable_conv
        n = len(kw['kernel'])
        s = '{name}({mapping}, kernel_size={kernel}, stride={stride}'
        if kw['pad'] != (0,) * n:
            s += ', padding={pad}'
        if kw['dilate'] != (1,) * n:
            s += ', dilation={dilate}'
        if kw['num_group'] != 1:
            s += ', groups={num_group}'
        if self.deformable_conv_bias is None:
            s += ', bias=False'
        if self.act:
            s += ', {}'.format(self.act)
        s += ')'
        shape = self.deformable_conv_weight.shape
        return s.format(name=type(self).__name__,
                        mapping='{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0]),
                        **kw)


class DeformableConvolution(_Deformable):
    """2-D deformable convolution (Dai et al., 2017, https://arxiv.org/abs/1703.06211): a
    convolution whose sampling grid is shifted per position by offsets that a second, plain
    convolution over the same input predicts.

    Parameters are those of `gluon.nn.Conv2D` (channels, kernel_size, strides, padding,
    dilation, groups, layout, use_bias, in_channels, activation, weight_initializer,
    bias_initializer) plus num_deformable_group (channel groups sharing one set of offsets),
    offset_weight_initializer / offset_bias_initializer (default zeros) and offset_use_bias.
    Input (batch, in_channels, height, width); output (batch, channels, out_height, out_width)
    with Conv2D's output size."""

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW', use_bias=True,
                 in_channels=0, activation=None, weight_initializer=None, bias_initializer='zeros',
                 offset_weight_initializer='zeros', offset_bias_initializer='zeros',
                 offset_use_bias=True, op_name='DeformableConvolution', adj=None, prefix=None,
                 params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        extra = {} if deformable_conv_bias is None else {'bias': deformable_conv_bias}
        out = F.contrib.DeformableConvolution(data=x, offset=offset,
                                              weight=deformable_conv_weight, name='fwd',
                                              **extra, **self._kwargs_deformable_conv)
        return self._finish(out)

    def _alias(self):
        return 'deformable_conv'


class ModulatedDeformableConvolution(_Deformable):
    """2-D modulated deformable convolution (DCNv2, Zhu et al., 2018,
    https://arxiv.org/abs/1811.11168): DeformableConvolution whose samples are also scaled by
    masks in (0, 2), 2 * sigmoid of extra channels of the offset convolution. Same parameters as
    `DeformableConvolution`."""

    _per_tap = 3

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW', use_bias=True,
                 in_channels=0, activation=None, weight_initializer=None, bias_initializer='zeros',
                 offset_weight_initializer='zeros', offset_bias_initializer='zeros',
                 offset_use_bias=True, op_name='ModulatedDeformableConvolution', adj=None,
                 prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params)
        self.offset_split_index = self._offset_split

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        both = self._offsets(F, x, offset_weight, offset_bias)
        split = self._offset_split
        offset = F.slice_axis(both, axis=1, begin=0, end=split)
        mask = F.sigmoid(F.slice_axis(both, axis=1, begin=split, end=None)) * 2
        extra = {} if deformable_conv_bias is None else {'bias': deformable_conv_bias}
        out = F.contrib.ModulatedDeformableConvolution(data=x, offset=offset, mask=mask,
                                                       weight=deformable_conv_weight, name='fwd',
                                                       **extra, **self._kwargs_deformable_conv)
        return self._finish(out)

    def _alias(self):
        return 'modulated_deformable_conv'
