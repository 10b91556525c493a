"""Neural-network layers (MXNet's `gluon.nn`)."""
from ..block import Block, HybridBlock  # noqa: F401
from ..symbol_block import SymbolBlock  # noqa: F401 (MXNet's nn re-exports gluon.block's names)
from .activations import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from .pool_layers import *  # noqa: F401,F403
from .norm_layers import *  # noqa: F401,F403
