"""The symbolic `sym` namespace: Symbol, variables, groups, JSON files, and one function per
registered op (generated from the C registry)."""
from .symbol import Symbol, var, Variable, Group, load, load_json, NameManager, Prefix
from . import op
from .op import *  # noqa: F401,F403  (every registered op)

__all__ = ['Symbol', 'var', 'Variable', 'Group', 'load', 'load_json']
