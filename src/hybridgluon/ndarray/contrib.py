"""`nd.contrib`: the registry's `_contrib_*` ops under their short names, as MXNet lays them
out (`nd.contrib.X` is the op `_contrib_X`). Generated from the registry at import."""
from .. import _core
from ..base import _register_prefixed

_register_prefixed(globals(), '_contrib_', lambda name, short: _core.get_op(name))
from ._contrib_adamw import *  # noqa: E402,F401,F403 (MXNet's AdamW front ends)


def _op(name, *args, **kwargs):
    return _core.get_op(name)(*args, **kwargs)


def isinf(data):
    """1 where an element of `data` is +inf or -inf, else 0 (data's dtype), as MXNet's
    `nd.contrib.isinf`: |data| == inf."""
    return _op('_equal_scalar', _op('abs', data), scalar=float('inf'))


def isfinite(data):
    """1 where an element of `data` is finite (neither inf nor NaN), else 0 (data's dtype):
    |data| != inf and data == data, as MXNet's `nd.contrib.isfinite`."""
    not_inf = _op('_not_equal_scalar', _op('abs', data), scalar=float('inf'))
    return _op('_logical_and', not_inf, _op('_equal', data, data))


def isnan(data):
    """1 where an element of `data` is NaN, else 0 (data's dtype): data != data, as MXNet's
    `nd.contrib.isnan`."""
    return _op('_not_equal', data, data)
