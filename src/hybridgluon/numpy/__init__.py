"""MXNet's `mx.np` (`mxnet.numpy`): importable, but NumPy semantics are not supported here.

hybridgluon implements MXNet's classic NDArray semantics only (docs/compat.md). Importing this
module works, so code that imports it at the top and uses it only under `is_np_array()` runs;
any public name (`mx.np.array`, `mx.np.random`, ...) raises MXNetError (also an AttributeError)
saying mx.np is not supported. No array of this module is ever made.
"""
from ._refuse import NumpySemanticsError, make_getattr  # noqa: F401 (for except clauses)

__all__ = []

__getattr__ = make_getattr(__name__)

