"""MXNet's `mx.contrib.amp` (automatic mixed precision), which hybridgluon does not provide.

The package imports, so programs (and MXNet's own test helpers) that import it without using
it run; every function raises MXNetError saying that mixed precision is not supported.
"""
from . import amp  # noqa: F401
from .amp import *  # noqa: F401,F403
from .amp import __all__  # noqa: F401
