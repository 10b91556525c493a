"""Gluon Estimator (MXNet's `gluon.contrib.estimator`): Estimator, its event handlers and
BatchProcessor."""
from . import batch_processor, estimator, event_handler
from .batch_processor import *  # noqa: F403
from .estimator import *  # noqa: F403
from .event_handler import *  # noqa: F403
