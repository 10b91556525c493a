"""Global random state (`mx.random.seed`) and the sampling functions of `nd.random`."""
import numbers

from . import _core
from .ndarray.random import normal, uniform, randint, shuffle  # noqa: F401

__all__ = ['seed', 'normal', 'uniform', 'randint', 'shuffle']


def seed(seed_state, ctx='all'):
    """Seeds the random generator: the same seed gives the same numbers."""
    if not isinstance(seed_state, numbers.Integral) or isinstance(seed_state, bool):
        raise ValueError('seed_state must be int')  # NumPy's integers too, as in MXNet
    _core.seed(int(seed_state) & 0xFFFFFFFFFFFFFFFF)
