"""Recurrent cells (MXNet 1.9.1's `gluon.rnn` cells): one time step a call, `unroll` for a
sequence.

A cell maps `(inputs, states) -> (output, new_states)` for one step; `unroll` loops that step
in Python over a sequence given as one tensor (layout 'NTC' or 'TNC') or as a list of per-step
tensors, and works the same on NDArrays (imperative, or one cached op a step once hybridized)
and on Symbols (the steps become one graph). The numbers come from registered ops
(FullyConnected, SliceChannel, Activation, element-wise), so gradients and hybridization come
from the same rules as every other layer.

Names follow MXNet exactly, because exported graphs and parameter files depend on them:
parameters `<prefix>i2h_weight`, `h2h_weight`, `i2h_bias`, `h2h_bias`; the ops of step t are
named `<prefix>t<t>_<role>` (so the step outputs read `rnn_t0_out_output`); `_counter` counts
the steps since the last `reset()` (every `unroll` resets).

Sequences of different lengths (`valid_length`, shape (batch,)): every step still runs on the
whole batch; afterwards the outputs past each sequence's end are zeroed (SequenceMask) and the
states returned are each sequence's states at its last valid step (SequenceLast), which is what
MXNet returns.
"""
from ... import ndarray, symbol
from ...base import numeric_types, string_types, _as_list
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import Block, HybridBlock
from ..utils import _indent
from ..nn import LeakyReLU

__all__ = ['RecurrentCell', 'HybridRecurrentCell', 'RNNCell', 'LSTMCell', 'GRUCell',
           'SequentialRNNCell', 'HybridSequentialRNNCell', 'DropoutCell', 'ModifierCell',
           'ZoneoutCell', 'ResidualCell', 'BidirectionalCell']

_TENSORS = (NDArray, Symbol)


def _is_tensor(x):
    return isinstance(x, _TENSORS)


def _as_steps(x):
    """A list of the outputs of a split: a Symbol lists its outputs, an NDArray is one step."""
    return list(x) if isinstance(x, Symbol) else _as_list(x)


def _state_info_of(cells, batch_size):
    out = []
    for c in cells:
        out.extend(c.state_info(batch_size))
    return out


def _begin_state_of(cells, **kwargs):
    out = []
    for c in cells:
        out.extend(c.begin_state(**kwargs))
    return out


def _default_begin_state(cell, F, begin_state, inputs, batch_size):
    """`begin_state` if given, else zeros from `cell.begin_state` (on the inputs' context)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        first = inputs if isinstance(inputs, NDArray) else inputs[0]
        with first.context:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Brings a sequence to the form a loop over time needs.

    `inputs`: one tensor laid out as `in_layout` (default `layout`), or a list of per-step
    tensors. `merge`: False gives a list of steps, True one tensor laid out as `layout`, None
    keeps whichever form came in (a tensor is still moved to `layout`). Returns
    (inputs, time axis of `layout`, F, batch size (0 when symbolic))."""
    if inputs is None:
        raise ValueError('unroll(inputs=None) is not supported: create the input variables '
                         'outside unroll and pass them in')
    t_axis = layout.find('T')
    n_axis = layout.find('N')
    in_axis = in_layout.find('T') if in_layout is not None else t_axis
    batch_size = 0
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll doesn't allow a grouped symbol as input: convert it "
                                 "to a list with list(inputs) first or let unroll split it")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch_size = inputs.shape[n_axis]
        if merge is False:
            steps = inputs.shape[in_axis]
            if length is not None and length != steps:
                raise ValueError('unroll: length is %d but the inputs have %d steps along axis '
                                 '%d' % (length, steps, in_axis))
            inputs = _as_list(ndarray.split(inputs, axis=in_axis, num_outputs=steps,
                                            squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError('unroll: length is %d but %d inputs were given'
                             % (length, len(inputs)))
        if isinstance(inputs[0], Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=t_axis)
            in_axis = t_axis
    if _is_tensor(inputs) and t_axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=t_axis, dim2=in_axis)
    return inputs, t_axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Zeroes the steps of each sequence past its valid length; a list if not `merge`."""
    if not _is_tensor(data):
        data = F.stack(*data, axis=time_axis)
    masked = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                            axis=time_axis)
    if merge:
        return masked
    return _as_steps(F.split(masked, num_outputs=length, axis=time_axis, squeeze_axis=True))


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """The list of steps in reverse order; with `valid_length`, each sequence is reversed
    within its own length (padding stays at the end)."""
    if valid_length is None:
        return list(reversed(sequences))
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                            use_sequence_length=True)
    if unroll_step == 1 and F is ndarray:
        return [rev[0]]
    return _as_steps(F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True))


def _last_valid_states(F, per_step_states, valid_length):
    """Each state at each sequence's last valid step, from the states of every step."""
    return [F.SequenceLast(F.stack(*steps, axis=0), sequence_length=valid_length,
                           use_sequence_length=True, axis=0)
            for steps in zip(*per_step_states)]


def _check_unmodified(cell):
    if cell._modified:
        raise AssertionError('After applying modifier cells (e.g. ZoneoutCell) the base cell '
                             'cannot be called directly. Call the modifier cell instead.')


class RecurrentCell(Block):
    """Abstract base of recurrent cells: a step is `cell(inputs, states)`.

    Parameters
    ----------
    prefix : str, optional
        Prefix of the names of the cell's blocks and (when `params` is None) its Parameters.
    params : ParameterDict or None
        Parameters to share with another cell; None creates new ones.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Restarts the step (and begin-state) counters, here and in the children; `unroll`
        calls it before building each sequence."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """The shape and layout of each state: a list of dicts."""
        raise NotImplementedError()

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The states of the first step: `func(name=..., shape=..., **kwargs)` per state.

        `func` creates one state: `nd.zeros`, `nd.ones`, ... for NDArrays (then `batch_size`
        is needed), `sym.zeros`, `sym.var` (to feed the states as inputs), ... for Symbols.
        Extra keyword arguments (`dtype`, `ctx`, ...) go to `func`."""
        _check_unmodified(self)
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info, **kwargs) if info is not None else dict(kwargs)
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter),
                               **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """Runs the cell over `length` steps.

        Parameters
        ----------
        length : int
            Number of steps.
        inputs : NDArray, Symbol or list of them
            One tensor of shape (batch, length, ...) ('NTC') or (length, batch, ...) ('TNC'),
            or a list of `length` tensors of shape (batch, ...).
        begin_state : list, optional
            The first step's states (from `begin_state()` or another cell); zeros if None.
        layout : str
            'NTC' or 'TNC': the layout of a tensor `inputs` and of merged outputs.
        merge_outputs : bool or None
            True: the outputs as one tensor in `layout`; False: a list of steps; None: the
            form that costs least.
        valid_length : NDArray or Symbol, optional
            Shape (batch,): each sequence's length (<= `length`). Outputs past it are zero
            and the states returned are those of each sequence's last valid step.

        Returns
        -------
        (outputs, states)
        """
        self.reset()
        inputs, t_axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _default_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, every_state = [], []
        for t in range(length):
            out, states = self(inputs[t], states)
            outputs.append(out)
            if valid_length is not None:
                every_state.append(states)
        if valid_length is not None:
            states = _last_valid_states(F, every_state, valid_length)
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, t_axis,
                                                     True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """Applies `activation`: a name ('tanh', 'relu', 'sigmoid', 'softsign' or any
        Activation act_type), a LeakyReLU block, or a callable."""
        named = {'tanh': F.tanh, 'relu': F.relu, 'sigmoid': F.sigmoid,
                 'softsign': F.softsign}.get(activation) if isinstance(activation, str) else None
        if named is not None:
            return named(inputs, **kwargs)
        if isinstance(activation, string_types):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type='leaky', slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: (output, new states) from `inputs` (batch, ...) and the `states` of the
        previous step (or `begin_state()`)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is a `hybrid_forward(F, inputs, states, **params)`, so it
    can be hybridized."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    """Shared by RNNCell, LSTMCell and GRUCell: `gates` blocks of `hidden_size` rows in the
    i2h and h2h weights and biases, the input size decided by the first input if 0."""
    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        self.i2h_weight = self.params.get('i2h_weight', shape=(rows, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=(rows, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def _mapping(self):
        shape = self.i2h_weight.shape
        return '{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0])

    def __repr__(self):
        return '{name}({mapping})'.format(name=self.__class__.__name__,
                                          mapping=self._mapping())

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix):
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + 'h2h')
        return i2h, h2h


class RNNCell(_GatedCell):
    r"""Elman RNN cell: :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`.

    Parameters
    ----------
    hidden_size : int
        Number of units of the output and state.
    activation : str, LeakyReLU or callable, default 'tanh'
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Size of the input; 0 decides it from the first input.
    prefix : str, default 'rnn_'
    params : ParameterDict or None
        Parameters to share.

    Inputs: data (batch, input_size) and states [h (batch, hidden_size)].
    Outputs: out (batch, hidden_size) and [out].
    """

    def __init__(self, hidden_size, activation='tanh', i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'rnn'

    def __repr__(self):
        return '{name}({mapping}, {act})'.format(name=self.__class__.__name__,
                                                 mapping=self._mapping(), act=self._activation)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias, prefix)
        pre = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        out = self._get_activation(F, pre, self._activation, name=prefix + 'out')
        return out, [out]


class LSTMCell(_GatedCell):
    r"""Long short-term memory cell (Hochreiter & Schmidhuber, 1997).

    The i2h and h2h projections hold four blocks of `hidden_size` rows, in the order input
    gate, forget gate, cell candidate, output gate:
    :math:`c_t = f \odot c_{t-1} + i \odot g`, :math:`h_t = o \odot act(c_t)`, with `i, f, o`
    through `recurrent_activation` (sigmoid) and `g` through `activation` (tanh).

    Parameters
    ----------
    hidden_size : int
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
    prefix : str, default 'lstm_'
    params : ParameterDict or None
    activation : str, default 'tanh'
    recurrent_activation : str, default 'sigmoid'

    Inputs: data (batch, input_size) and states [h, c], each (batch, hidden_size).
    Outputs: h and [h, c].
    """
    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None, activation='tanh', recurrent_activation='sigmoid'):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias, prefix)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=prefix + 'plus0'), num_outputs=4,
                               name=prefix + 'slice')
        rec = self._recurrent_activation
        in_gate = self._get_activation(F, gates[0], rec, name=prefix + 'i')
        forget_gate = self._get_activation(F, gates[1], rec, name=prefix + 'f')
        candidate = self._get_activation(F, gates[2], self._activation, name=prefix + 'c')
        out_gate = self._get_activation(F, gates[3], rec, name=prefix + 'o')
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + 'mul0'),
                                F.elemwise_mul(in_gate, candidate, name=prefix + 'mul1'),
                                name=prefix + 'state')
        squashed = F.Activation(next_c, act_type=self._activation, name=prefix + 'activation0')
        next_h = F.elemwise_mul(out_gate, squashed, name=prefix + 'out')
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    r"""Gated recurrent unit cell (Cho et al., 2014), as cuDNN computes it: the reset gate
    scales the projected state, :math:`n = tanh(W_{in} x + b_{in} + r \odot (W_{hn} h +
    b_{hn}))`, :math:`h_t = (1 - z) \odot n + z \odot h_{t-1}`. The projections hold three
    blocks of rows: reset, update, candidate.

    Parameters
    ----------
    hidden_size : int
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
    prefix : str, default 'gru_'
    params : ParameterDict or None

    Inputs: data (batch, input_size) and states [h (batch, hidden_size)].
    Outputs: h and [h].
    """
    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        prev_h = states[0]
        i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias, prefix)
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice')
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice')
        reset = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + 'plus0'),
                             act_type='sigmoid', name=prefix + 'r_act')
        update = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + 'plus1'),
                              act_type='sigmoid', name=prefix + 'z_act')
        candidate = F.Activation(
            F.elemwise_add(i2h_n, F.elemwise_mul(reset, h2h_n, name=prefix + 'mul0'),
                           name=prefix + 'plus2'),
            act_type='tanh', name=prefix + 'h_act')
        ones = F.ones_like(update, name=prefix + 'ones_like0')
        keep_new = F.elemwise_mul(F.elemwise_sub(ones, update, name=prefix + 'minus0'),
                                  candidate, name=prefix + 'mul1')
        keep_old = F.elemwise_mul(update, prev_h, name=prefix + 'mul20')
        next_h = F.elemwise_add(keep_new, keep_old, name=prefix + 'out')
        return next_h, [next_h]


class _StackMixin:
    """The stacking behaviour SequentialRNNCell and HybridSequentialRNNCell share: a step runs
    the children in turn, each taking its slice of the flat state list; `unroll` unrolls each
    child over the whole sequence before the next (cheaper than step by step)."""

    def __repr__(self):
        rows = '\n'.join('({i}): {m}'.format(i=i, m=_indent(repr(m), 2))
                         for i, m in self._children.items())
        return '{name}(\n{rows}\n)'.format(name=self.__class__.__name__, rows=rows)

    def add(self, cell):
        """Appends a cell to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _state_info_of(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        _check_unmodified(self)
        return _begin_state_of(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        if any(isinstance(c, BidirectionalCell) for c in self._children.values()):
            raise NotImplementedError('A stack holding a BidirectionalCell cannot be stepped: '
                                      'use unroll')
        next_states, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            inputs, new = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(new)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _default_begin_state(self, F, begin_state, inputs, batch_size)
        cells = list(self._children.values())
        next_states, p = [], 0
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            last = i == len(cells) - 1
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout, merge_outputs=merge_outputs if last
                                         else None, valid_length=valid_length)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """A stack of recurrent cells, run one after the other at each step."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """A stack of hybridizable recurrent cells; it can sit inside a HybridBlock."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs (no state): `rate` of the values zeroed while training.

    Parameters
    ----------
    rate : float
    axes : tuple of int, default ()
        Axes along which one mask is shared (variational dropout).
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types):
            raise TypeError('DropoutCell: rate must be a number, got %r' % (rate,))
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return '{name}(rate={rate}, axes={axes})'.format(name=self.__class__.__name__,
                                                         rate=self._rate, axes=self._axes)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return 'dropout'

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name='t%d_fwd' % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if _is_tensor(inputs):  # one op over the whole sequence
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base of cells that wrap another cell and change what a step does (ZoneoutCell,
    ResidualCell, ...). The wrapped cell is marked modified and can no longer be used on its
    own; the Parameters are the wrapped cell's."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise AssertionError('Cell %s is already modified. One cell cannot be modified '
                                 'twice' % base_cell.name)
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        _check_unmodified(self)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return '{name}({base})'.format(name=self.__class__.__name__, base=self.base_cell)


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al., 2016): while training, each output and state value keeps its
    previous step's value with probability `zoneout_outputs` / `zoneout_states`."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't "
                                 "support step. Please add ZoneoutCell to the cells underneath "
                                 "instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return '{name}(p_out={po}, p_state={ps}, {base})'.format(
            name=self.__class__.__name__, po=self.zoneout_outputs, ps=self.zoneout_states,
            base=self.base_cell)

    def _alias(self):
        return 'zoneout'

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        p_out, p_state = self.zoneout_outputs, self.zoneout_states
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # 1 where the new value is taken (Dropout scales it, > 0)
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = (F.where(keep_new(p_out, next_output), next_output, prev_output)
                  if p_out != 0. else next_output)
        if p_state != 0.:
            next_states = [F.where(keep_new(p_state, new), new, old)
                           for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the input of each step to the wrapped cell's output (residual connection);
    input and output sizes must agree."""

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name='t%d_fwd' % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = _is_tensor(outputs)
        inputs, t_axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, t_axis,
                                                    merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs `l_cell` forwards and `r_cell` backwards over the sequence and concatenates their
    outputs on the feature axis. It can only be unrolled, not stepped.

    Parameters
    ----------
    l_cell, r_cell : RecurrentCell
    output_prefix : str, default 'bi_'
        Prefix of the names of the concatenated outputs.
    """

    def __init__(self, l_cell, r_cell, output_prefix='bi_'):
        super().__init__(prefix='', params=None)
        self.register_child(l_cell, 'l_cell')
        self.register_child(r_cell, 'r_cell')
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    def __repr__(self):
        return '{name}(forward={l}, backward={r})'.format(
            name=self.__class__.__name__, l=self._children['l_cell'],
            r=self._children['r_cell'])

    def state_info(self, batch_size=0):
        return _state_info_of(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        _check_unmodified(self)
        return _begin_state_of(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, t_axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        states = _default_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        n_left = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = _is_tensor(l_outputs)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            r_outputs, _, _, _ = _format_sequence(None, r_outputs, layout, merge_outputs)
        if merge_outputs:
            r_outputs = F.stack(*r_outputs, axis=t_axis)
            outputs = F.concat(l_outputs, r_outputs, dim=2, name='%sout' % self._output_prefix)
        else:
            outputs = [F.concat(lo, ro, dim=1, name='%st%d' % (self._output_prefix, i))
                       for i, (lo, ro) in enumerate(zip(l_outputs, r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, t_axis,
                                                     merge_outputs)
        return outputs, l_states + r_states
