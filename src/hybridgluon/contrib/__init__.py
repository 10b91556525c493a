"""`mx.contrib`: MXNet's contrib namespaces. `mx.contrib.ndarray` (also `.nd`) is
`mx.nd.contrib` and `mx.contrib.symbol` (also `.sym`) is `mx.sym.contrib`, importable under
both names (`import mxnet.contrib.ndarray` works as in MXNet)."""
import sys as _sys

from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol
from . import autograd  # noqa: F401 (MXNet's old autograd API)
from . import onnx  # noqa: F401 (MXNet's older path of mx.onnx)

nd = ndarray
sym = symbol
_sys.modules[__name__ + '.ndarray'] = ndarray
_sys.modules[__name__ + '.symbol'] = symbol

__all__ = ['ndarray', 'symbol']
