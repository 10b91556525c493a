"""Data loading (MXNet's `gluon.data`): datasets, samplers, DataLoader and vision data."""
from .dataset import *  # noqa: F401,F403
from .sampler import *  # noqa: F401,F403
from .dataloader import *  # noqa: F401,F403
from . import dataset, sampler, dataloader  # noqa: F401
from . import vision  # noqa: F401
