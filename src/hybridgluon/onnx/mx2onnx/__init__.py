"""Export of hybridgluon (MXNet) models to ONNX."""
from ._export_model import export_model, get_operator_support

__all__ = ['export_model', 'get_operator_support']
