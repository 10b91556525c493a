"""Convolutional recurrent cells (MXNet 1.9.1's `gluon.contrib.rnn`): RNN, LSTM and GRU cells
whose input-to-state and state-to-state maps are convolutions (Shi et al., 2015, "Convolutional
LSTM Network"), in 1, 2 and 3 spatial dimensions.

The state keeps the spatial size of the i2h convolution's output (stride 1; the h2h
convolution pads by dilate * (kernel - 1) / 2 so it preserves that size, hence odd h2h kernels
only). `input_shape` is one sample's shape without the batch axis, in `conv_layout`; a 0 channel
count is decided by the first input.
"""
from ....base import numeric_types
from ...rnn import HybridRecurrentCell

__all__ = ['Conv1DRNNCell', 'Conv2DRNNCell', 'Conv3DRNNCell',
           'Conv1DLSTMCell', 'Conv2DLSTMCell', 'Conv3DLSTMCell',
           'Conv1DGRUCell', 'Conv2DGRUCell', 'Conv3DGRUCell']


def _conv_out_size(dimensions, kernels, paddings, dilations):
    """Spatial output size of a stride-1 convolution; an unknown (0) input size stays 0."""
    return tuple(x + 2 * p - d * (k - 1) if x else 0
                 for x, k, p, d in zip(dimensions, kernels, paddings, dilations))


def _per_dim(value, dims, what):
    if isinstance(value, numeric_types):
        return (int(value),) * dims
    value = tuple(value)
    if len(value) != dims:
        raise ValueError('For {d}D convolution, {w} can only be either int or list/tuple of '
                         'length {d}, got {v}'.format(d=dims, w=what, v=value))
    return value


class _BaseConvRNNCell(HybridRecurrentCell):
    """The parameters and the two convolutions shared by the convolutional cells; subclasses
    set `_gate_names` (one block of `hidden_channels` output channels per gate)."""
    _gate_names = ('',)

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                 i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = _per_dim(i2h_kernel, dims, 'i2h_kernel')
        self._stride = (1,) * dims
        self._i2h_pad = _per_dim(i2h_pad, dims, 'i2h_pad')
        self._i2h_dilate = _per_dim(i2h_dilate, dims, 'i2h_dilate')
        self._h2h_kernel = _per_dim(h2h_kernel, dims, 'h2h_kernel')
        if not all(k % 2 == 1 for k in self._h2h_kernel):
            raise ValueError('Only support odd number, get h2h_kernel= %s' % str(h2h_kernel))
        self._h2h_dilate = _per_dim(h2h_dilate, dims, 'h2h_dilate')
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate,
                                                                 self._h2h_kernel))
        self._channel_axis = conv_layout.find('C')
        channels_first = self._channel_axis == 1
        self._in_channels = self._input_shape[self._channel_axis - 1]
        spatial = self._input_shape[1:] if channels_first else self._input_shape[:-1]
        out_size = _conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        total = hidden_channels * self._num_gates
        if channels_first:
            i2h_shape = (total, self._in_channels) + self._i2h_kernel
            h2h_shape = (total, hidden_channels) + self._h2h_kernel
            self._state_shape = (hidden_channels,) + out_size
        else:
            i2h_shape = (total,) + self._i2h_kernel + (self._in_channels,)
            h2h_shape = (total,) + self._h2h_kernel + (hidden_channels,)
            self._state_shape = out_size + (hidden_channels,)
        self.i2h_weight = self.params.get('i2h_weight', shape=i2h_shape,
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=h2h_shape,
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(total,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(total,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return '{name}({i} -> {o}, {act}, {layout})'.format(
            name=self.__class__.__name__, i=in_channels if in_channels else None, o=shape[0],
            act=self._activation, layout=self._conv_layout)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size,) + self._state_shape, '__layout__': self._conv_layout}
                for _ in range(self._num_states)]

    _num_states = 1

    def _conv_forward(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix):
        filters = self._hidden_channels * self._num_gates
        i2h = F.Convolution(data=inputs, num_filter=filters, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            weight=i2h_weight, bias=i2h_bias, layout=self._conv_layout,
                            name=prefix + 'i2h')
        h2h = F.Convolution(data=h, num_filter=filters, kernel=self._h2h_kernel,
                            dilate=self._h2h_dilate, pad=self._h2h_pad, stride=self._stride,
                            weight=h2h_weight, bias=h2h_bias, layout=self._conv_layout,
                            name=prefix + 'h2h')
        return i2h, h2h

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError('_BaseConvRNNCell is an abstract class for convolutional RNN')


class _ConvRNNCell(_BaseConvRNNCell):
    def _alias(self):
        return 'conv_rnn'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        out = self._get_activation(F, i2h + h2h, self._activation, name=prefix + 'out')
        return out, [out]


class _ConvLSTMCell(_BaseConvRNNCell):
    _gate_names = ('_i', '_f', '_c', '_o')
    _num_states = 2

    def _alias(self):
        return 'conv_lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice',
                               axis=self._channel_axis)
        in_gate = F.Activation(gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(gates[1], act_type='sigmoid', name=prefix + 'f')
        candidate = self._get_activation(F, gates[2], self._activation, name=prefix + 'c')
        out_gate = F.Activation(gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate,
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    _gate_names = ('_r', '_z', '_o')

    def _alias(self):
        return 'conv_gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice',
                                             axis=self._channel_axis)
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice',
                                             axis=self._channel_axis)
        reset = F.Activation(i2h_r + h2h_r, act_type='sigmoid', name=prefix + 'r_act')
        update = F.Activation(i2h_z + h2h_z, act_type='sigmoid', name=prefix + 'z_act')
        candidate = self._get_activation(F, i2h_n + reset * h2h_n, self._activation,
                                         name=prefix + 'h_act')
        next_h = F.elemwise_add((1. - update) * candidate, update * states[0],
                                name=prefix + 'out')
        return next_h, [next_h]


_LAYOUTS = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}
_KINDS = {_ConvRNNCell: 'RNN', _ConvLSTMCell: 'LSTM', _ConvGRUCell: 'GRU'}


def _public_cell(base, dims):
    """The public class `Conv<dims>D<kind>Cell`: `base` with the defaults of `dims` spatial
    dimensions (zero padding, no dilation, channels-first layout)."""
    zeros, ones = (0,) * dims, (1,) * dims

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=zeros,
                 i2h_dilate=ones, h2h_dilate=ones, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', conv_layout=_LAYOUTS[dims], activation='tanh',
                 prefix=None, params=None):
        base.__init__(self, input_shape=input_shape, hidden_channels=hidden_channels,
                      i2h_kernel=i2h_kernel, h2h_kernel=h2h_kernel, i2h_pad=i2h_pad,
                      i2h_dilate=i2h_dilate, h2h_dilate=h2h_dilate,
                      i2h_weight_initializer=i2h_weight_initializer,
                      h2h_weight_initializer=h2h_weight_initializer,
                      i2h_bias_initializer=i2h_bias_initializer,
                      h2h_bias_initializer=h2h_bias_initializer, dims=dims,
                      conv_layout=conv_layout, activation=activation, prefix=prefix,
                      params=params)

    kind = _KINDS[base]
    name = 'Conv%dD%sCell' % (dims, kind)
    doc = ('{d}D convolutional {k} cell.\n\n    Parameters\n    ----------\n'
           '    input_shape : tuple of int\n        One sample without the batch axis, in '
           '`conv_layout` ({l} by default); channels 0: decided by the first input.\n'
           '    hidden_channels : int\n    i2h_kernel, h2h_kernel : int or tuple of {d}\n'
           '        h2h_kernel must be odd.\n    i2h_pad, i2h_dilate, h2h_dilate : int or '
           'tuple of {d}\n    i2h_weight_initializer, h2h_weight_initializer, '
           'i2h_bias_initializer, h2h_bias_initializer : str or Initializer\n'
           '    conv_layout : str, default {l!r}\n    activation : str, default \'tanh\'\n'
           '    prefix : str, optional\n    params : ParameterDict or None\n'
           ).format(d=dims, k=kind, l=_LAYOUTS[dims])
    __init__.__qualname__ = name + '.__init__'
    return type(name, (base,), {'__init__': __init__, '__doc__': doc, '__module__': __name__})


Conv1DRNNCell = _public_cell(_ConvRNNCell, 1)
Conv2DRNNCell = _public_cell(_ConvRNNCell, 2)
Conv3DRNNCell = _public_cell(_ConvRNNCell, 3)
Conv1DLSTMCell = _public_cell(_ConvLSTMCell, 1)
Conv2DLSTMCell = _public_cell(_ConvLSTMCell, 2)
Conv3DLSTMCell = _public_cell(_ConvLSTMCell, 3)
Conv1DGRUCell = _public_cell(_ConvGRUCell, 1)
Conv2DGRUCell = _public_cell(_ConvGRUCell, 2)
Conv3DGRUCell = _public_cell(_ConvGRUCell, 3)
