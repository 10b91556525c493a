"""Contributed recurrent cells (MXNet's `gluon.contrib.rnn`): convolutional RNN/LSTM/GRU cells
in 1, 2 and 3 dimensions, VariationalDropoutCell, LSTMPCell, and `dynamic_unroll`."""
from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403

__all__ = conv_rnn_cell.__all__ + rnn_cell.__all__
