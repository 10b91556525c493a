"""`mx.contrib.onnx`: MXNet 1.9.1's older path of the ONNX functions (its import lives here):
the same functions as `mx.onnx`."""
from ..onnx import export_model, get_model_metadata, import_model, import_to_gluon

__all__ = ['export_model', 'import_model', 'get_model_metadata', 'import_to_gluon']
