"""Predefined models (MXNet's `gluon.model_zoo`): `model_zoo.vision.get_model(name)`.

Architectures, Block prefixes and Parameter names are those of MXNet 1.9.1's model zoo, so
parameter files saved by MXNet (`save_parameters`, the legacy `save_params`, or `export`) load
into these models. Nothing is ever downloaded: `pretrained=True` reads a local file (see
`model_store.get_model_file`).
"""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
from .vision import get_model  # noqa: F401
