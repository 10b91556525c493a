"""`nd.image`: the registry's `_image_*` ops under their short names, as MXNet lays them out
(`nd.image.normalize` is the op `_image_normalize`). Generated from the registry at import."""
from .. import _core
from ..base import _register_prefixed

_register_prefixed(globals(), '_image_', lambda name, short: _core.get_op(name))
