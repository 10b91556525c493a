"""Contributed convolution layers (MXNet's `gluon.contrib.cnn`): DeformableConvolution and
ModulatedDeformableConvolution."""
from . import conv_layers
from .conv_layers import *  # noqa: F401,F403

__all__ = conv_layers.__all__
