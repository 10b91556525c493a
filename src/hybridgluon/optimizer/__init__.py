"""Optimizers (MXNet's `mx.optimizer`): `mx.optimizer.create('sgd', ...)`, the Optimizer base class
and registry, and the Updater that keeps per-weight states for a Trainer."""
from . import contrib, optimizer, updater  # noqa: F401
from .optimizer import *  # noqa: F401,F403
from .optimizer import Optimizer, create, register  # noqa: F401
from .updater import Updater, get_updater  # noqa: F401

__all__ = optimizer.__all__ + updater.__all__
