"""Vision data (MXNet's `gluon.data.vision`): MNIST, Fashion-MNIST, CIFAR-10/100 and
image-file datasets, and the image transforms."""
from .datasets import *  # noqa: F401,F403
from . import datasets  # noqa: F401
from . import transforms  # noqa: F401
