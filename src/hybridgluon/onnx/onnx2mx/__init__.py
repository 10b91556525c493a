"""ONNX import (MXNet's `onnx2mx`): ONNX model files to Symbols, parameters and SymbolBlocks."""
from .import_model import get_model_metadata, import_model
from .import_to_gluon import import_to_gluon

__all__ = ['import_model', 'get_model_metadata', 'import_to_gluon']
