"""`nd.contrib`: the registry's `_contrib_*` ops under their short names, as MXNet lays them
out (`nd.contrib.X` is the op `_contrib_X`). Generated from the registry at import."""
from .. import _core
from ..base import _register_prefixed

_register_prefixed(globals(), '_contrib_', lambda name, short: _core.get_op(name))
from ._contrib_adamw import *  # noqa: E402,F401,F403 (MXNet's AdamW front ends)
