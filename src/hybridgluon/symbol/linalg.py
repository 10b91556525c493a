"""`sym.linalg`: the registry's `_linalg_*` ops under their short names, as MXNet lays them
out (`sym.linalg.X` is the op `_linalg_X`). Generated from the registry at import."""
from ..base import _register_prefixed
from .op import _make

_register_prefixed(globals(), '_linalg_', _make)
