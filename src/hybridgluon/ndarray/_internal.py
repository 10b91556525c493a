"""`nd._internal`: the registered ops whose names (or aliases) start with an underscore
(`_plus_scalar`, `_Plus`, `_backward_relu`, ...), as MXNet's generated module holds them; bound
from the C registry by `nd/__init__.py`."""
