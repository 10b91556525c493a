"""`mx.contrib.onnx`: MXNet 1.9.1's older path of the ONNX functions; `export_model` is
`mx.onnx.export_model`, as there."""
from ..onnx import export_model

__all__ = ['export_model']
