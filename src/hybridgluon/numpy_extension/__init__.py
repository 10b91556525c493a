"""MXNet's `mx.npx` (`mxnet.numpy_extension`): importable, not supported.

Its operators work on mx.np arrays, which hybridgluon does not have (see hybridgluon.numpy): any
public name raises MXNetError (also an AttributeError) saying so.
"""
from ..numpy._refuse import make_getattr

__all__ = []

__getattr__ = make_getattr(__name__)
