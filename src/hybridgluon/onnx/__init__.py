"""`mx.onnx`: ONNX model export (`export_model`), as MXNet 1.9.1's `mxnet.onnx`. The `onnx`
package is an optional dependency (`pip install "hybridgluon[onnx]"`), imported when a model
is exported."""
from .mx2onnx import export_model, get_operator_support

__all__ = ['export_model', 'get_operator_support']
