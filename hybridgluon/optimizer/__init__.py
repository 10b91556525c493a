"""Optimizers (MXNet's `mx.optimizer`): `mx.optimizer.create('sgd', ...)`, the Optimizer base
class and registry, and the Updater that keeps per-weight states for a Trainer."""
from . import optimizer
from .optimizer import *  # noqa: F401,F403
from .optimizer import Optimizer, Updater, create, get_updater, register  # noqa: F401

__all__ = optimizer.__all__
