"""Contributed Gluon code (MXNet's `gluon.contrib`): `contrib.nn` layers and `contrib.data`
samplers, `contrib.cnn` deformable convolutions, `contrib.rnn` cells and `contrib.estimator`
(the Estimator training loop)."""
from . import nn  # noqa: F401
from . import data  # noqa: F401
from . import cnn  # noqa: F401
from . import rnn  # noqa: F401
from . import estimator  # noqa: F401
