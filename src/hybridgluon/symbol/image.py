"""`sym.image`: the registry's `_image_*` ops under their short names, as MXNet lays them out
(`sym.image.normalize` is the op `_image_normalize`). Generated from the registry at import."""
from ..base import _register_prefixed
from .op import _make

_register_prefixed(globals(), '_image_', _make)
