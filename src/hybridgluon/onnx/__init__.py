"""`mx.onnx`: ONNX export (`export_model`, `get_operator_support`) and import (`import_model`,
`import_to_gluon`, `get_model_metadata`), as MXNet 1.9.1's `mxnet.onnx` and
`mxnet.contrib.onnx`. The `onnx` package is an optional dependency
(`pip install "hybridgluon[onnx]"`), imported on first use."""
from .mx2onnx import export_model, get_operator_support
from .onnx2mx import get_model_metadata, import_model, import_to_gluon

__all__ = ['export_model', 'get_operator_support', 'import_model', 'get_model_metadata',
           'import_to_gluon']
