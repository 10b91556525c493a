"""The legacy symbolic RNN API of MXNet 1.x (`mx.rnn`): cells that build Symbols for the
Module API, FusedRNNCell, checkpoint helpers and bucketing data iterators."""
from . import rnn_cell
from .rnn_cell import *  # noqa: F401,F403
from . import rnn
from .rnn import *  # noqa: F401,F403
from . import io
from .io import *  # noqa: F401,F403
