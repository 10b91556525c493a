"""`import_to_gluon`: an ONNX model file as a Gluon SymbolBlock."""
from .import_model import opset_of
from .import_onnx import GraphProto, load_model

__all__ = ['import_to_gluon']


def import_to_gluon(model_file, ctx=None):
    """A SymbolBlock running the ONNX model `model_file`, its inputs the model's data inputs in
    order, its parameters loaded on `ctx` (a Context or a list of them; default cpu())."""
    from ...context import cpu
    model = load_model(model_file)
    return GraphProto().graph_to_gluon(model.graph, ctx or cpu(), opset_of(model), model)
