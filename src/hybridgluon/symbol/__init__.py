"""The symbolic `sym` namespace: Symbol, variables, groups, JSON files, and one function per
registered op (generated from the C registry)."""
from .symbol import (Symbol, var, Variable, Group, load, load_json, NameManager, Prefix,
                     zeros, ones, full, arange)
from . import op
from .op import *  # noqa: F401,F403  (every registered op)
from . import contrib, linalg, _internal, random  # noqa: F401
from . import image  # noqa: F401

__all__ = ['Symbol', 'var', 'Variable', 'Group', 'load', 'load_json', 'zeros', 'ones', 'full',
           'arange']

# `import *` skips underscore names; internal ops (_sum_to_like, _plus_scalar...) are reachable
# as in the nd namespace.
globals().update({n: f for n, f in vars(op).items() if n.startswith('_') and callable(f)
                  and getattr(f, '__module__', None) == op.__name__ and n != '_invoke'})
