"""The symbolic recurrent cells of MXNet 1.x's legacy `mx.rnn` package (before Gluon): each
cell builds Symbols, its weights are `sym.Variable`s held by an RNNParams, and `unroll` returns
the graph of a whole sequence for the Module API.

Names, state layouts and the weight packing (`unpack_weights` splits i2h/h2h into one matrix a
gate, `pack_weights` joins them; FusedRNNCell's flat `parameters` vector in cuDNN's order) are
MXNet's, so checkpoints written by MXNet programs load here. The gate order (i, f, c, o for
LSTM; r, z, o for GRU) is the fused RNN operator's.
"""
import functools
import warnings

from .. import initializer as _init, ndarray, symbol
from ..base import numeric_types, string_types

__all__ = ['RNNParams', 'BaseRNNCell', 'RNNCell', 'LSTMCell', 'GRUCell', 'FusedRNNCell',
           'SequentialRNNCell', 'DropoutCell', 'ModifierCell', 'ZoneoutCell', 'ResidualCell',
           'BidirectionalCell', 'BaseConvRNNCell', 'ConvRNNCell', 'ConvLSTMCell', 'ConvGRUCell']


def _flat(lists):
    out = []
    for item in lists:
        out.extend(item)
    return out


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """Symbols of a sequence as a list of steps (merge False), one tensor in `layout` (merge
    True) or as given (None); returns (inputs, time axis)."""
    if inputs is None:
        raise ValueError('unroll(inputs=None) is not supported: create the input variables '
                         'outside unroll and pass them in')
    axis = layout.find('T')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll doesn't allow a grouped symbol as input: convert it "
                                 "to a list with list(inputs) first or let unroll split it")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise ValueError('unroll: length is %d but %d inputs were given'
                             % (length, len(inputs)))
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs],
                                   dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class RNNParams:
    """The weight Variables of cells, by name: shared when several cells get one RNNParams.

    Parameters
    ----------
    prefix : str
        Prepended to every name asked for.
    """

    def __init__(self, prefix=''):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The Variable `prefix + name`, created with `kwargs` (init=, shape=, ...) if new."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


def _check_unmodified(cell):
    if cell._modified:
        raise AssertionError('After applying modifier cells (e.g. DropoutCell) the base cell '
                             'cannot be called directly. Call the modifier cell instead.')


class BaseRNNCell:
    """Abstract base of the symbolic cells: `cell(inputs, states)` builds one step.

    Parameters
    ----------
    prefix : str
        Prefix of the names of ops and weights.
    params : RNNParams or None
        Weights to share; None creates an RNNParams of `prefix`.
    """

    def __init__(self, prefix='', params=None):
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self.reset()

    def reset(self):
        """Restarts the step and begin-state counters (unroll does it first)."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, '_cells', ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One step: (output, new states) Symbols."""
        raise NotImplementedError()

    @property
    def params(self):
        """The RNNParams of the weights (asking for it gives up owning them)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """Shape and layout of each state (0: the batch size, decided by the data)."""
        raise NotImplementedError()

    @property
    def state_shape(self):
        return [info['shape'] for info in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The first step's states: `func(name=..., **state_info, **kwargs)` per state."""
        _check_unmodified(self)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)  # MXNet's: one state's info stays for the next
            name = '%sbegin_state_%d' % (self._prefix, self._init_counter)
            states.append(func(name=name, **kwargs))
        return states

    def unpack_weights(self, args):
        """A copy of `args` (name -> NDArray) with the i2h/h2h weights and biases of this
        cell split into one array a gate (`<prefix>i2h_i_weight`, ...)."""
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ('i2h', 'h2h'):
            weight = args.pop('%s%s_weight' % (self._prefix, group))
            bias = args.pop('%s%s_bias' % (self._prefix, group))
            for j, gate in enumerate(self._gate_names):
                args['%s%s%s_weight' % (self._prefix, group, gate)] = \
                    weight[j * h:(j + 1) * h].copy()
                args['%s%s%s_bias' % (self._prefix, group, gate)] = \
                    bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """The inverse of unpack_weights: the per-gate arrays joined again."""
        args = args.copy()
        if not self._gate_names:
            return args
        for group in ('i2h', 'h2h'):
            for kind in ('weight', 'bias'):
                parts = [args.pop('%s%s%s_%s' % (self._prefix, group, gate, kind))
                         for gate in self._gate_names]
                args['%s%s_%s' % (self._prefix, group, kind)] = ndarray.concatenate(parts)
        return args

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        """The graph of `length` steps: (outputs, states). `inputs` is one Symbol in `layout`
        or a list of per-step Symbols; merge_outputs as in Gluon's cells."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for t in range(length):
            out, states = self(inputs[t], states)
            outputs.append(out)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, string_types):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class RNNCell(BaseRNNCell):
    """Elman RNN cell: `act(W_i x + b_i + W_h h + b_h)`.

    Parameters
    ----------
    num_hidden : int
    activation : str or callable, default 'tanh'
    prefix : str, default 'rnn_'
    params : RNNParams or None
    """

    def __init__(self, num_hidden, activation='tanh', prefix='rnn_', params=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self.params.get('i2h_weight')
        self._iB = self.params.get('i2h_bias')
        self._hW = self.params.get('h2h_weight')
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ('',)

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name='%si2h' % name)
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name='%sh2h' % name)
        out = self._get_activation(i2h + h2h, self._activation, name='%sout' % name)
        return out, [out]


class LSTMCell(BaseRNNCell):
    """LSTM cell; the i2h bias starts with `forget_bias` in the forget gate (LSTMBias).

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'lstm_'
    params : RNNParams or None
    forget_bias : float, default 1.0
    """

    def __init__(self, num_hidden, prefix='lstm_', params=None, forget_bias=1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get('i2h_weight')
        self._hW = self.params.get('h2h_weight')
        self._iB = self.params.get('i2h_bias', init=_init.LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'},
                {'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        h4 = self._num_hidden * 4
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=h4, name='%si2h' % name)
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=h4, name='%sh2h' % name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name='%sslice' % name)
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name='%sf' % name)
        candidate = symbol.Activation(gates[2], act_type='tanh', name='%sc' % name)
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name='%so' % name)
        next_c = symbol.elemwise_add(forget_gate * states[1], in_gate * candidate,
                                     name='%sstate' % name)
        next_h = symbol.elemwise_mul(out_gate, symbol.Activation(next_c, act_type='tanh'),
                                     name='%sout' % name)
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """GRU cell (the reset gate scales the projected state, as cuDNN).

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'gru_'
    params : RNNParams or None
    """

    def __init__(self, num_hidden, prefix='gru_', params=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get('i2h_weight')
        self._iB = self.params.get('i2h_bias')
        self._hW = self.params.get('h2h_weight')
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        prev_h = states[0]
        h3 = self._num_hidden * 3
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=h3, name='%s_i2h' % name)
        h2h = symbol.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB,
                                    num_hidden=h3, name='%s_h2h' % name)
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3,
                                                  name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3,
                                                  name='%s_h2h_slice' % name)
        reset = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
        update = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid', name='%s_z_act' % name)
        candidate = symbol.Activation(i2h_n + reset * h2h_n, act_type='tanh',
                                      name='%s_h_act' % name)
        next_h = symbol.elemwise_add((1. - update) * candidate, update * prev_h,
                                     name='%sout' % name)
        return next_h, [next_h]


class FusedRNNCell(BaseRNNCell):
    """All layers and directions of an RNN as one `RNN` operator over a flat `parameters`
    vector (cuDNN's layout). `unfuse()` gives the equivalent stack of cells, and
    unpack_weights / pack_weights convert between the two weight forms.

    Parameters
    ----------
    num_hidden : int
    num_layers : int, default 1
    mode : {'rnn_relu', 'rnn_tanh', 'lstm', 'gru'}, default 'lstm'
    bidirectional : bool, default False
    dropout : float, default 0.
        Dropout between layers.
    get_next_state : bool, default False
        Whether unroll returns the final states.
    forget_bias : float, default 1.0
    prefix : str, default '<mode>_'
    params : RNNParams or None
    """

    def __init__(self, num_hidden, num_layers=1, mode='lstm', bidirectional=False, dropout=0.,
                 get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in _FUSED_GATES:
            raise ValueError("FusedRNNCell: mode must be one of %s, got %r"
                             % (sorted(_FUSED_GATES), mode))
        super().__init__(prefix='%s_' % mode if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ['l', 'r'] if bidirectional else ['l']
        self._parameter = self.params.get(
            'parameters', init=FusedRNN(None, num_hidden, num_layers, mode, bidirectional,
                                        forget_bias))

    @property
    def state_info(self):
        dirs = 2 if self._bidirectional else 1
        n = 2 if self._mode == 'lstm' else 1
        return [{'shape': (dirs * self._num_layers, 0, self._num_hidden), '__layout__': 'LNC'}
                for _ in range(n)]

    @property
    def _gate_names(self):
        return _FUSED_GATES[self._mode]

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def _slice_weights(self, arr, li, lh):
        """Views of the flat vector `arr`, by the unfused cells' per-gate names: all weights
        (layer by layer, direction by direction, i2h then h2h, gate by gate), then all
        biases in the same order."""
        views, p = {}, 0
        dirs = len(self._directions)
        for kind in ('weight', 'bias'):
            for layer in range(self._num_layers):
                for d in self._directions:
                    for group in ('i2h', 'h2h'):
                        for gate in self._gate_names:
                            name = '%s%s%d_%s%s_%s' % (self._prefix, d, layer, group, gate,
                                                       kind)
                            if kind == 'bias':
                                shape = (lh,)
                            elif group == 'h2h':
                                shape = (lh, lh)
                            else:
                                shape = (lh, li if layer == 0 else dirs * lh)
                            size = 1
                            for s in shape:
                                size *= s
                            views[name] = arr[p:p + size].reshape(shape)
                            p += size
        if p != arr.size:
            raise ValueError('FusedRNNCell: the parameter vector has %d elements, the layout '
                             'needs %d' % (arr.size, p))
        return views

    def _input_size(self, total):
        """The input size that makes a parameter vector of `total` elements."""
        dirs, gates, h = len(self._directions), self._num_gates, self._num_hidden
        per_input = gates * h * dirs
        rest = total - (h + 2) * gates * h * dirs \
            - (self._num_layers - 1) * gates * h * (h + dirs * h + 2) * dirs
        if rest < 0 or rest % per_input:
            raise ValueError('FusedRNNCell: %d parameters fit no input size' % total)
        return rest // per_input

    def unpack_weights(self, args):
        args = args.copy()
        arr = args.pop(self._parameter.name)
        views = self._slice_weights(arr, self._input_size(arr.size), self._num_hidden)
        args.update({name: v.copy() for name, v in views.items()})
        return args

    def pack_weights(self, args):
        args = args.copy()
        h = self._num_hidden
        w0 = args['%sl0_i2h%s_weight' % (self._prefix, self._gate_names[0])]
        num_input = w0.shape[1]
        dirs, gates = len(self._directions), self._num_gates
        total = (num_input + h + 2) * h * gates * dirs + \
            (self._num_layers - 1) * gates * h * (h + dirs * h + 2) * dirs
        parts = []
        views = self._slice_weights(ndarray.zeros((total,), dtype=w0.dtype), num_input, h)
        for name in views:  # the vector's order
            parts.append(args.pop(name).reshape((-1,)))
        args[self._parameter.name] = ndarray.concatenate(parts).as_in_context(w0.context)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError('FusedRNNCell cannot be stepped. Please use unroll')

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn('NTC layout detected. Consider using TNC for FusedRNNCell for '
                          'faster speed')
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError('Unsupported layout %s' % layout)
        states = self.begin_state() if begin_state is None else begin_state
        kw = {'state': states[0]}
        if self._mode == 'lstm':
            kw['state_cell'] = states[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state,
                         mode=self._mode, name=self._prefix + 'rnn', **kw)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            n = 2 if self._mode == 'lstm' else 1
            for k in range(1, n + 1):
                rnn[k]._set_attr(__layout__='LNC')
            outputs, states = rnn[0], [rnn[k] for k in range(1, n + 1)]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of per-layer (bidirectional) cells, with
        DropoutCells between layers; its weights are named as unpack_weights names them."""
        def make(prefix):
            if self._mode == 'lstm':
                return LSTMCell(self._num_hidden, prefix=prefix)
            if self._mode == 'gru':
                return GRUCell(self._num_hidden, prefix=prefix)
            return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=prefix)

        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make('%sl%d_' % (self._prefix, i)),
                                            make('%sr%d_' % (self._prefix, i)),
                                            output_prefix='%sbi_l%d_' % (self._prefix, i)))
            else:
                stack.add(make('%sl%d_' % (self._prefix, i)))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix='%s_dropout%d_' % (self._prefix, i)))
        return stack


_FUSED_GATES = {'rnn_relu': [''], 'rnn_tanh': [''], 'lstm': ['_i', '_f', '_c', '_o'],
                'gru': ['_r', '_z', '_o']}


@_init.register
class FusedRNN(_init.Initializer):
    """MXNet's `mx.init.FusedRNN`: initializes a FusedRNNCell's flat parameter vector gate by
    gate, as the unfused weights would be: weights with `init` (the global initializer when
    None), biases zero, the LSTM forget gate's bias `forget_bias`.

    Parameters
    ----------
    init : Initializer, its dumps() string, or None
    num_hidden, num_layers, mode, bidirectional, forget_bias : as FusedRNNCell
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if isinstance(init, string_types):
            init = _init.create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode,
                            self._bidirectional, forget_bias=self._forget_bias, prefix='')
        args = cell.unpack_weights({'parameters': arr})
        fallback = getattr(desc, 'global_init', None)
        for name in args:
            part = _init.InitDesc(name, global_init=fallback)
            if self._mode == 'lstm' and name.endswith('_f_bias'):
                args[name][:] = self._forget_bias
            elif self._init is None:
                if fallback is None:
                    raise ValueError('FusedRNN: init is None and there is no global '
                                     'initializer to fall back to for %s' % name)
                fallback(part, args[name])
            else:
                self._init(part, args[name])
        arr[:] = cell.pack_weights(args)['parameters']


# MXNet has it as mx.init.FusedRNN; it lives here, beside the cell whose layout it knows
# (initializer importing the cells would be circular).
_init.FusedRNN = FusedRNN


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each step runs them in turn.

    Parameters
    ----------
    params : RNNParams or None
        Weights for all the cells (then the cells must not be given params of their own).
    """

    def __init__(self, params=None):
        super().__init__(prefix='', params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Appends `cell`; its weights join this stack's RNNParams."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise AssertionError('Either specify params for SequentialRNNCell or child '
                                     'cells, not both.')
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self):
        return _flat(c.state_info for c in self._cells)

    def begin_state(self, **kwargs):
        _check_unmodified(self)
        return _flat(c.begin_state(**kwargs) for c in self._cells)

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')
            n = len(cell.state_info)
            inputs, new = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(new)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        next_states, p = [], 0
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            last = i == len(self._cells) - 1
            inputs, states = cell.unroll(length, inputs=inputs,
                                         begin_state=begin_state[p:p + n], layout=layout,
                                         merge_outputs=merge_outputs if last else None)
            p += n
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs of each step.

    Parameters
    ----------
    dropout : float
    prefix : str, default 'dropout_'
    params : RNNParams or None
    """

    def __init__(self, dropout, prefix='dropout_', params=None):
        super().__init__(prefix, params)
        if not isinstance(dropout, numeric_types):
            raise TypeError('dropout probability must be a number, got %r' % (dropout,))
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base of cells wrapping another (ZoneoutCell, ResidualCell): the wrapped cell's
    weights and states, and it cannot be used alone any more."""

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs):
        _check_unmodified(self)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError


class ZoneoutCell(ModifierCell):
    """Zoneout on the outputs and states of the wrapped cell (while training).

    Parameters
    ----------
    base_cell : BaseRNNCell
    zoneout_outputs, zoneout_states : float
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, FusedRNNCell):
            raise AssertionError("FusedRNNCell doesn't support zoneout. Please unfuse first.")
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't "
                                 "support step. Please add ZoneoutCell to the cells underneath "
                                 "instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        # The first step's previous output is zero, of the output's shape.
        prev = self.prev_output if self.prev_output is not None else \
            symbol.zeros_like(next_output)
        output = next_output
        if self.zoneout_outputs != 0.:
            output = symbol.where(keep_new(self.zoneout_outputs, next_output), next_output, prev)
        if self.zoneout_states != 0.:
            next_states = [symbol.where(keep_new(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds each step's input to the wrapped cell's output."""

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name='%s_plus_residual' % output.name)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return symbol.elemwise_add(outputs, inputs,
                                       name='%s_plus_residual' % outputs.name), states
        return [symbol.elemwise_add(o, i, name='%s_plus_residual' % o.name)
                for o, i in zip(outputs, inputs)], states


class BidirectionalCell(BaseRNNCell):
    """`l_cell` forwards and `r_cell` backwards over the sequence, outputs concatenated; the
    states come back as [l_states, r_states].

    Parameters
    ----------
    l_cell, r_cell : BaseRNNCell
    params : RNNParams or None
    output_prefix : str, default 'bi_'
    """

    def __init__(self, l_cell, r_cell, params=None, output_prefix='bi_'):
        super().__init__('', params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise AssertionError('Either specify params for BidirectionalCell or child '
                                     'cells, not both.')
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    @property
    def state_info(self):
        return _flat(c.state_info for c in self._cells)

    def begin_state(self, **kwargs):
        _check_unmodified(self)
        return _flat(c.begin_state(**kwargs) for c in self._cells)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n_left = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = (isinstance(l_outputs, symbol.Symbol) and
                             isinstance(r_outputs, symbol.Symbol))
            if not merge_outputs:
                if isinstance(l_outputs, symbol.Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, symbol.Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            outputs = symbol.Concat(l_outputs, symbol.reverse(r_outputs, axis=axis), dim=2,
                                    name='%sout' % self._output_prefix)
        else:
            outputs = [symbol.Concat(lo, ro, dim=1, name='%st%d' % (self._output_prefix, i))
                       for i, (lo, ro) in enumerate(zip(l_outputs, reversed(r_outputs)))]
        return outputs, [l_states, r_states]


class BaseConvRNNCell(BaseRNNCell):
    """Base of the 2-D convolutional cells: i2h and h2h are convolutions; the state has the
    i2h convolution's output shape (`input_shape` includes the batch axis)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix='', params=None,
                 conv_layout='NCHW'):
        super().__init__(prefix=prefix, params=params)
        if not (h2h_kernel[0] % 2 == 1 and h2h_kernel[1] % 2 == 1):
            raise ValueError('Only support odd number, get h2h_kernel= %s' % str(h2h_kernel))
        self._h2h_kernel = h2h_kernel
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2,
                         h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable('data'), num_filter=num_hidden,
                                   kernel=i2h_kernel, stride=i2h_stride, pad=i2h_pad,
                                   dilate=i2h_dilate, layout=conv_layout)
        out_shape = probe.infer_shape(data=input_shape)[1][0]
        self._state_shape = (0,) + tuple(out_shape[1:])
        self._iW = self.params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self.params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self.params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self.params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}
                for _ in range(self._num_states)]

    _num_states = 2

    def _conv_forward(self, inputs, states, name):
        filters = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name='%si2h' % name, data=inputs, num_filter=filters,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name='%sh2h' % name, data=states[0], num_filter=filters,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError('BaseConvRNNCell is abstract class for convolutional RNN')


_LEAKY = functools.partial(symbol.LeakyReLU, act_type='leaky', slope=0.2)


def _conv_kwargs(local):
    keys = ('input_shape', 'num_hidden', 'h2h_kernel', 'h2h_dilate', 'i2h_kernel',
            'i2h_stride', 'i2h_pad', 'i2h_dilate', 'i2h_weight_initializer',
            'h2h_weight_initializer', 'i2h_bias_initializer', 'h2h_bias_initializer',
            'activation', 'prefix', 'params', 'conv_layout')
    return {k: local[k] for k in keys}


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional RNN cell (activation: leaky ReLU, slope 0.2, by default)."""
    _num_states = 1

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', activation=_LEAKY,
                 prefix='ConvRNN_', params=None, conv_layout='NCHW'):
        super().__init__(**_conv_kwargs(locals()))

    @property
    def _gate_names(self):
        return ('',)

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        out = self._get_activation(i2h + h2h, self._activation, name='%sout' % name)
        return out, [out]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM cell (Shi et al., 2015)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', activation=_LEAKY,
                 prefix='ConvLSTM_', params=None, conv_layout='NCHW'):
        super().__init__(**_conv_kwargs(locals()))

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4,
                                    axis=self._conv_layout.find('C'), name='%sslice' % name)
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name='%sf' % name)
        candidate = self._get_activation(gates[2], self._activation, name='%sc' % name)
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name='%so' % name)
        next_c = symbol.elemwise_add(forget_gate * states[1], in_gate * candidate,
                                     name='%sstate' % name)
        next_h = symbol.elemwise_mul(out_gate, self._get_activation(next_c, self._activation),
                                     name='%sout' % name)
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU cell."""
    _num_states = 1

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', activation=_LEAKY,
                 prefix='ConvGRU_', params=None, conv_layout='NCHW'):
        super().__init__(**_conv_kwargs(locals()))

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3,
                                                  name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3,
                                                  name='%s_h2h_slice' % name)
        reset = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
        update = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid', name='%s_z_act' % name)
        candidate = self._get_activation(i2h_n + reset * h2h_n, self._activation,
                                         name='%s_h_act' % name)
        next_h = symbol.elemwise_add((1. - update) * candidate, update * states[0],
                                     name='%sout' % name)
        return next_h, [next_h]
