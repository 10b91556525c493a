"""`sym.contrib`: the registry's `_contrib_*` ops under their short names, as MXNet lays them
out (`sym.contrib.X` is the op `_contrib_X`). Generated from the registry at import."""
from ..base import _register_prefixed
from .op import _make

_register_prefixed(globals(), '_contrib_', _make)
