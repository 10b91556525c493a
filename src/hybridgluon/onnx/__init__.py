"""ONNX support (`mx.onnx`). Import: `import_model`, `import_to_gluon`, `get_model_metadata`.
Needs the optional `onnx` package (pip install "hybridgluon[onnx]")."""
from .onnx2mx import get_model_metadata, import_model, import_to_gluon

__all__ = ['import_model', 'get_model_metadata', 'import_to_gluon']
