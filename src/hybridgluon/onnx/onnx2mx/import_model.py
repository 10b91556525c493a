"""`import_model` and `get_model_metadata` (MXNet 1.9.1's `mx.contrib.onnx` functions)."""
from .import_onnx import GraphProto, _onnx, load_model

__all__ = ['import_model', 'get_model_metadata']


def import_model(model_file):
    """Imports the ONNX model file `model_file` (a path, or a loaded ModelProto).

    Returns (sym, arg_params, aux_params): the network as a Symbol whose free variables are the
    model's data inputs and parameters, and the parameters as NDArrays (BatchNorm running
    statistics among aux_params). Raises MXNetError naming the node for an ONNX op that has no
    equivalent here.
    """
    model = load_model(model_file)
    opset = opset_of(model)
    return GraphProto().from_onnx(model.graph, opset, model)


def get_model_metadata(model_file):
    """{'input_tensor_data': [(name, shape, elem_type)], 'output_tensor_data': [(name, shape)]}
    of the model's data inputs (initializers excluded) and outputs; a dynamic dimension is 0."""
    _onnx()
    return GraphProto().get_graph_metadata(load_model(model_file).graph)


def opset_of(model):
    versions = [x.version for x in model.opset_import if x.domain in ('', 'ai.onnx')]
    return max(versions) if versions else 1
