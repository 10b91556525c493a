"""Global random state (`mx.random.seed`) and the sampling functions of `nd.random`."""
from . import _core
from .ndarray.random import normal, uniform, randint, shuffle  # noqa: F401

__all__ = ['seed', 'normal', 'uniform', 'randint', 'shuffle']


def seed(seed_state, ctx='all'):
    """Seeds the random generator: the same seed gives the same numbers."""
    if not isinstance(seed_state, int) or isinstance(seed_state, bool):
        raise ValueError('seed_state must be int')
    _core.seed(seed_state & 0xFFFFFFFFFFFFFFFF)
