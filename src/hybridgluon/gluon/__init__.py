"""Gluon, the imperative-first model API (MXNet's `mx.gluon`): Parameters, Blocks and layers."""
from .parameter import *  # noqa: F401,F403
from .block import *  # noqa: F401,F403
from .symbol_block import SymbolBlock  # noqa: F401
from .trainer import Trainer  # noqa: F401
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import utils  # noqa: F401
from . import data  # noqa: F401
from . import loss  # noqa: F401
from . import contrib  # noqa: F401
from . import model_zoo  # noqa: F401
from .. import metric  # noqa: F401  (MXNet 2 moved metrics here; 1.x has mx.metric)
