"""The fused recurrent layers (MXNet 1.9.1's gluon.rnn.RNN, LSTM, GRU): a HybridBlock per
stack of layers, whose forward is one `RNN` op (csrc/ops/rnn.c) over the flat parameter vector
that `_rnn_param_concat` joins from the per-layer Parameters.

Parameter names are MXNet's (`l0_i2h_weight`, `r1_h2h_bias`, `l0_h2r_weight` with a projection),
and so is the order they are joined in (every weight, then every bias; per layer the directions,
per direction i2h, h2h, h2r), so MXNet's trained weights give MXNet's numbers. The input size
of the first layer may be left to the first call (deferred initialisation): the RNN op's shape
rule decides the vector's size from the data and _rnn_param_concat passes what is missing back
to `l0_i2h_weight`. `save_parameters` / `load_parameters` use MXNet's structural names for
these layers (`_unfused.<layer>.<i2h|h2h|h2r>_<weight|bias>`, with `.<l|r>_cell` when
bidirectional), so files saved by MXNet 1.9.1 load here and the other way round.
"""
import re

from ... import ndarray, symbol
from ..block import HybridBlock

__all__ = ['RNN', 'LSTM', 'GRU']

_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}
_TENSORS = (symbol.Symbol, ndarray.NDArray)
_KEY = re.compile(r'(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z')


class _RNNLayer(HybridBlock):
    """A stack of fused recurrent layers of one mode; the subclasses set the mode and the
    state layout."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ('TNC', 'NTC'):
            raise AssertionError("Invalid layout %s; must be one of ['TNC' or 'NTC']" % layout)
        self._hidden_size = hidden_size
        self._projection_size = projection_size or None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = _GATES[mode]

        gh, rec = self._gates * hidden_size, self._projection_size or hidden_size
        ni = input_size
        for layer in range(num_layers):
            for d in ['l', 'r'][:self._dir]:
                self._register('%s%d_i2h_weight' % (d, layer), (gh, ni), i2h_weight_initializer,
                               dtype)
                self._register('%s%d_h2h_weight' % (d, layer), (gh, rec), h2h_weight_initializer,
                               dtype)
                self._register('%s%d_i2h_bias' % (d, layer), (gh,), i2h_bias_initializer, dtype)
                self._register('%s%d_h2h_bias' % (d, layer), (gh,), h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register('%s%d_h2r_weight' % (d, layer), (rec, hidden_size),
                                   h2r_weight_initializer, dtype)
            ni = rec * self._dir

    def _register(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = '{name}({mapping}, {_layout}'
        if self._num_layers != 1:
            s += ', num_layers={_num_layers}'
        if self._dropout != 0:
            s += ', dropout={_dropout}'
        if self._dir == 2:
            s += ', bidirectional'
        s += ')'
        shape = self.l0_i2h_weight.shape
        mapping = '{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0] // self._gates)
        return s.format(name=self.__class__.__name__, mapping=mapping, **self.__dict__)

    def _collect_params_with_prefix(self, prefix=''):
        """Structural names as MXNet's layers save them (those of the unfused cell stack)."""
        if prefix:
            prefix += '.'
        bidirectional = any(_KEY.match(k).group(1) == 'r' for k in self._reg_params)

        def key(name):
            d, layer, g, t = _KEY.match(name).groups()
            if bidirectional:
                return '_unfused.%s.%s_cell.%s_%s' % (layer, d, g, t)
            return '_unfused.%s.%s_%s' % (layer, g, t)

        ret = {prefix + key(k): v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _unfuse(self):
        """The same computation as a stack of recurrent cells sharing these Parameters."""
        from . import rnn_cell
        if self._projection_size:
            raise AssertionError('_unfuse does not support projection layer yet!')
        if self._lstm_state_clip_min or self._lstm_state_clip_max:
            raise AssertionError('_unfuse does not support state clipping yet!')
        make = {'rnn_relu': lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation='relu',
                                                          **kw),
                'rnn_tanh': lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation='tanh',
                                                          **kw),
                'lstm': lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                'gru': lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for layer in range(self._num_layers):
                kw = {'input_size': ni,
                      'i2h_weight_initializer': self._i2h_weight_initializer,
                      'h2h_weight_initializer': self._h2h_weight_initializer,
                      'i2h_bias_initializer': self._i2h_bias_initializer,
                      'h2h_bias_initializer': self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix='l%d_' % layer, **kw),
                                                         make(prefix='r%d_' % layer, **kw)))
                else:
                    stack.add(make(prefix='l%d_' % layer, **kw))
                if self._dropout > 0 and layer != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states: `func(name=..., shape=..., **kwargs)` per state of state_info
        (nd.zeros by default; sym.zeros, sym.var and the like build Symbols)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name='%sh0_%d' % (self.prefix, i), **info))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch_size = inputs.shape[self._layout.find('N')]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, _TENSORS):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch_size = inputs.shape[self._layout.find('N')]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info['shape']:
                    raise ValueError('Invalid recurrent state shape. Expecting %s, got %s.'
                                     % (str(info['shape']), str(state.shape)))
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _flat_params(self, F, kwargs):
        """The Parameters joined in MXNet's order: every weight, then every bias."""
        groups = ['i2h', 'h2h', 'h2r'] if self._projection_size else ['i2h', 'h2h']
        flat = [kwargs['%s%d_%s_%s' % (d, layer, g, t)].reshape(-1)
                for t in ['weight', 'bias']
                for layer in range(self._num_layers)
                for d in ['l', 'r'][:self._dir]
                for g in groups
                if not (g == 'h2r' and t == 'bias')]
        return F._internal._rnn_param_concat(*flat, dim=0)

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == 'NTC':
            inputs = F.swapaxes(inputs, 0, 1)
        args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        rnn = F.RNN(inputs, self._flat_params(F, kwargs), *args,
                    use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        if self._mode == 'lstm':
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == 'NTC':
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs, states


def _state(shape, dtype):
    return {'shape': shape, '__layout__': 'LNC', 'dtype': dtype}


class RNN(_RNNLayer):
    """Multi-layer Elman RNN with tanh or relu:
    h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).

    Inputs: data (T, N, C) in layout TNC ((N, T, C) for NTC) and optionally the states, one
    array (num_layers * directions, N, hidden_size). Output: (T, N, directions * hidden_size),
    and the final states when states were given."""

    def __init__(self, hidden_size, num_layers=1, activation='relu', layout='TNC', dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'rnn_' + activation, None, None, None, None,
                         False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [_state((self._num_layers * self._dir, batch_size, self._hidden_size),
                       self._dtype)]


class LSTM(_RNNLayer):
    """Multi-layer LSTM (gates i, f, g, o; c_t = f c_{t-1} + i g, h_t = o tanh(c_t)), with an
    optional projection of h (projection_size) and optional clipping of the cell state.

    States: [h (L*D, N, projection_size or hidden_size), c (L*D, N, hidden_size)]."""

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'lstm', projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        ld = self._num_layers * self._dir
        return [_state((ld, batch_size, self._projection_size or self._hidden_size),
                       self._dtype),
                _state((ld, batch_size, self._hidden_size), self._dtype)]


class GRU(_RNNLayer):
    """Multi-layer GRU in cuDNN's form: r and z gates, n_t = tanh(W_in x_t + b_in +
    r_t * (W_hn h_{t-1} + b_hn)), h_t = (1 - z_t) n_t + z_t h_{t-1}."""

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', dtype='float32',
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'gru', None, None, None, None, False, dtype,
                         **kwargs)

    def state_info(self, batch_size=0):
        return [_state((self._num_layers * self._dir, batch_size, self._hidden_size),
                       self._dtype)]
