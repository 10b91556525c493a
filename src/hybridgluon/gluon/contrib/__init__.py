"""Contributed Gluon layers (MXNet's `gluon.contrib`); only `contrib.nn` exists here."""
from . import nn  # noqa: F401
