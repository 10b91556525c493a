"""VariationalDropoutCell, LSTMPCell and `dynamic_unroll` (MXNet 1.9.1's
`gluon.contrib.rnn`).

VariationalDropoutCell (Gal & Ghahramani, 2016) draws one dropout mask per sequence for the
inputs, the first state and the outputs and reuses it at every step (the masks live on the
cell until the next `reset()`, which every `unroll` does). LSTMPCell is an LSTM whose
recurrent state is a projection of the hidden output (Sak et al., 2014).
"""
from ...rnn import BidirectionalCell, SequentialRNNCell, ModifierCell, HybridRecurrentCell
from ...rnn.rnn_cell import (_format_sequence, _default_begin_state,
                             _mask_sequence_variable_length, _is_tensor)

__all__ = ['VariationalDropoutCell', 'LSTMPCell']  # dynamic_unroll: by module, as MXNet


def _holds_bidirectional(cell):
    return isinstance(cell, BidirectionalCell) or (
        isinstance(cell, SequentialRNNCell) and
        any(isinstance(c, BidirectionalCell) for c in cell._children.values()))


class VariationalDropoutCell(ModifierCell):
    """Applies variational dropout to a base cell: the same mask at every time step.

    Parameters
    ----------
    base_cell : RecurrentCell
    drop_inputs : float, default 0.
        Dropout rate of the inputs.
    drop_states : float, default 0.
        Dropout rate of the first state (the hidden state of an LSTM).
    drop_outputs : float, default 0.
        Dropout rate of the outputs.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and _holds_bidirectional(base_cell):
            raise AssertionError("BidirectionalCell doesn't support variational state "
                                 "dropout. Please add VariationalDropoutCell to the cells "
                                 "underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return 'vardrop'

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    @staticmethod
    def _mask(F, like, rate):
        # Dropout of ones: 0 or 1 / (1 - rate) while training, ones otherwise.
        return F.Dropout(F.ones_like(like), p=rate)

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = self._mask(F, states[0], self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = self._mask(F, inputs, self.drop_inputs)
        if self.drop_states:
            states = [states[0] * self.drop_states_mask] + list(states[1:])
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = self._mask(F, output, self.drop_outputs)
            output = output * self.drop_outputs_mask
        return output, next_states

    def __repr__(self):
        return '{name}(p_out = {po}, p_state = {ps})'.format(
            name=self.__class__.__name__, po=self.drop_outputs, ps=self.drop_states)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """As RecurrentCell.unroll. Without state dropout the input and output masks are one
        Dropout each over the whole sequence, shared along the time axis, and the base cell
        unrolls as fast as it can; with state dropout it is stepped."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, t_axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _default_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(t_axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                merge_outputs=True, valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(t_axis,))
        if merge_outputs is None:
            merge_outputs = _is_tensor(outputs)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, t_axis,
                                                     merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    r"""LSTM with a projected recurrent state: the LSTM's hidden output
    :math:`h_t = o \odot tanh(c_t)` (hidden_size) is projected without bias to
    :math:`r_t = W_{hr} h_t` (projection_size), which is the output and the recurrent state.

    Parameters
    ----------
    hidden_size : int
    projection_size : int
    i2h_weight_initializer, h2h_weight_initializer, h2r_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
    prefix : str, default 'lstmp_'
    params : ParameterDict or None

    Inputs: data (batch, input_size), states [r (batch, projection_size),
    c (batch, hidden_size)]. Outputs: r and [r, c].
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        self.i2h_weight = self.params.get('i2h_weight', shape=(rows, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=(rows, projection_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = self.params.get('h2r_weight', shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._projection_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstmp'

    def __repr__(self):
        shape = self.i2h_weight.shape
        return '{name}({i} -> {h} -> {p})'.format(
            name=self.__class__.__name__, i=shape[1] if shape[1] else None, h=shape[0],
            p=self.h2r_weight.shape[0])

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix = 't%d_' % self._counter
        rows = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + 'h2h')
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice')
        in_gate = F.Activation(gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(gates[1], act_type='sigmoid', name=prefix + 'f')
        candidate = F.Activation(gates[2], act_type='tanh', name=prefix + 'c')
        out_gate = F.Activation(gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate,
                                name=prefix + 'state')
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type='tanh'),
                                name=prefix + 'hidden')
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + 'out')
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout='TNC',
                   valid_length=None):
    """Unrolls `cell` over `inputs` with the `foreach` control-flow operator, so a hybridized
    graph holds one loop node instead of one copy of the cell per step.

    Parameters
    ----------
    cell : HybridRecurrentCell
    inputs : NDArray or Symbol
        (length, batch, ...) for 'TNC', (batch, length, ...) for 'NTC'.
    begin_state : list
    drop_inputs, drop_outputs : float
        Dropout rates shared along the time axis.
    layout : str, default 'TNC'
    valid_length : NDArray or Symbol, optional
        (batch,): a sequence's states stop changing after its last valid step, and its
        outputs past it are zero.

    Returns
    -------
    (outputs, states)
    """
    inputs, t_axis, F, _ = _format_sequence(0, inputs, layout, True)
    axes = None
    if t_axis != 0:  # foreach loops over axis 0
        axes = list(range(len(layout)))
        axes[0], axes[t_axis] = axes[t_axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(t_axis,))
    states = list(begin_state)
    if valid_length is None:
        def body(step, sts):
            return cell(step, sts)
    else:
        states.append(F.zeros((1,)))  # the step number, carried as the last state

        def body(step, sts):
            cell_states, t = sts[:-1], sts[-1]
            out, new_states = cell(step, cell_states)
            running = F.broadcast_greater(valid_length, t)
            new_states = [F.where(running, new, old) for new, old in zip(new_states,
                                                                          cell_states)]
            return out, new_states + [t + 1]
    outputs, states = F.contrib.foreach(body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(t_axis,))
    if axes is not None:
        outputs = F.transpose(outputs, axes=axes)
    if valid_length is None:
        return outputs, states
    outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True,
                             axis=t_axis)
    return outputs, states[:-1]
