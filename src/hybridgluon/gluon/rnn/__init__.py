"""Recurrent layers (MXNet's gluon.rnn): the fused RNN, LSTM and GRU layers."""
from .rnn_layer import *  # noqa: F401,F403
