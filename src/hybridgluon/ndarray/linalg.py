"""`nd.linalg`: the registry's `_linalg_*` ops under their short names, as MXNet lays them
out (`nd.linalg.X` is the op `_linalg_X`). Generated from the registry at import."""
from .. import _core
from ..base import _register_prefixed

_register_prefixed(globals(), '_linalg_', lambda name, short: _core.get_op(name))
