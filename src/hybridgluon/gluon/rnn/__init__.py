"""Recurrent layers (MXNet's `gluon.rnn`): the cells of rnn_cell (one step a call, `unroll`
over a sequence) and the fused layers RNN, LSTM and GRU of rnn_layer."""
from .rnn_cell import *  # noqa: F401,F403
from .rnn_layer import *  # noqa: F401,F403
