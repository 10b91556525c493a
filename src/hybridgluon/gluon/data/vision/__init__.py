"""Vision data (MXNet's `gluon.data.vision`): MNIST-format datasets and image transforms."""
from .datasets import *  # noqa: F401,F403
from . import datasets  # noqa: F401
from . import transforms  # noqa: F401
