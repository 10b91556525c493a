"""The ONNX graph walker: turns an ONNX GraphProto into a Symbol plus parameter arrays.

Values flowing between ONNX nodes are either constants (NumPy arrays straight from the model's
initializers and Constant nodes) or Symbols. Shape arithmetic whose inputs are all constants
(the Shape -> Gather -> Concat -> Reshape chains exporters emit) is folded here, so the graph we
build holds only the real computation; a constant that a computing op consumes becomes a
variable whose value goes to arg_params (aux_params when it lands in an auxiliary slot, such as
BatchNorm's running mean and variance). Converters live in _op_translations.py and _ops_*.py.
"""
import numpy as np

from ... import ndarray as nd
from ... import symbol
from ...base import MXNetError
from . import _op_translations, _ops_nn, _ops_rnn  # noqa: F401 (they fill CONVERTERS)
from ._fold import FOLDERS
from ._registry import CONVERTERS

__all__ = ['GraphProto', 'load_model', 'np_dtype']


def _onnx():
    try:
        import onnx
    except ImportError:
        raise MXNetError("ONNX import needs the 'onnx' package: pip install onnx "
                         "(or pip install \"hybridgluon[onnx]\")") from None
    return onnx


def np_dtype(elem_type):
    """The NumPy dtype of an ONNX TensorProto element type."""
    return np.dtype(_onnx().helper.tensor_dtype_to_np_dtype(elem_type))


def load_model(model_file):
    """A ModelProto from a path (or a ModelProto given as is), errors as MXNetError."""
    onnx = _onnx()
    if isinstance(model_file, onnx.ModelProto):
        return model_file
    try:
        return onnx.load_model(model_file)
    except Exception as e:
        raise MXNetError("cannot read ONNX model '%s': %s" % (model_file, e)) from None


def node_label(node):
    """How errors name a node: its name, or its first output for an unnamed one."""
    return node.name or 'producing %s' % (node.output[0] if node.output else '?')


class NodeCtx:
    """What a converter sees of one ONNX node: its attributes, its inputs (constants or
    Symbols, None for an omitted optional input), shapes where known, and helpers that create
    ops with unique names and raise errors naming the node."""

    def __init__(self, graph, node, inputs):
        self.graph = graph
        self.node = node
        self.op_type = node.op_type
        self.name = graph.node_base_name(node)
        self.inputs = inputs
        self.input_names = list(node.input)
        self.attrs = graph.parse_attrs(node)
        self.opset = graph.opset_version
        self.num_outputs = len(node.output)

    def fail(self, msg):
        raise MXNetError("ONNX node '%s' (%s): %s" % (node_label(self.node), self.op_type, msg))

    def has(self, i):
        return i < len(self.inputs) and self.inputs[i] is not None

    def is_const(self, i):
        return self.has(i) and isinstance(self.inputs[i], np.ndarray)

    def const(self, i, what='input'):
        """Input i as a NumPy array; it must be known when the model is imported."""
        if not self.has(i):
            self.fail('%s (input %d) is missing' % (what, i))
        if not self.is_const(i):
            self.fail("%s '%s' is computed at run time; only a constant (an initializer or a "
                      "shape computation on static shapes) is supported" %
                      (what, self.input_names[i]))
        return self.inputs[i]

    def ints(self, i, what='input'):
        try:
            return [int(v) for v in self.const(i, what).reshape(-1)]
        except TypeError:  # a RunDim entry
            self.fail("%s '%s' holds a dimension known only at run time (%s)" %
                      (what, self.input_names[i], self.inputs[i].tolist()))

    def sym(self, i):
        """Input i as a Symbol: a constant becomes a parameter variable."""
        v = self.inputs[i]
        if isinstance(v, np.ndarray):
            return self.graph.const_var(self.input_names[i], v)
        return v

    def shape(self, i):
        """Input i's shape as a tuple (None for an unknown dimension), or None if the rank is
        unknown too."""
        v = self.inputs[i]
        if isinstance(v, np.ndarray):
            return v.shape
        return self.graph.shape_of(self.input_names[i], v)

    def full_shape(self, i, why):
        s = self.shape(i)
        if s is None or any(d is None for d in s):
            self.fail("needs the static shape of '%s' (%s), which is not known when the model "
                      "is imported" % (self.input_names[i], why))
        return s

    def rank(self, i):
        s = self.shape(i)
        if s is None:
            self.fail("needs the rank of '%s', which shape inference could not determine" %
                      self.input_names[i])
        return len(s)

    def op(self, op_name, *args, **kwargs):
        """Creates `sym.<op_name>` with a unique name derived from the node's."""
        fn = symbol
        for part in op_name.split('.'):
            fn = getattr(fn, part)
        return fn(*args, name=self.graph.unique_name(self.name), **kwargs)


class GraphProto(object):
    """Converts one ONNX graph (MXNet's `onnx2mx.import_onnx.GraphProto`)."""

    def __init__(self):
        self._values = {}
        self._params = {}
        self._vars = {}
        self._names = set()
        self._shapes = {}
        self._data_dims = {}
        self._probes = {}
        self._probed = set()
        self.opset_version = 0
        self.model_metadata = {}

    # -- model level -------------------------------------------------------------------------

    def from_onnx(self, graph, opset_version, model=None):
        """Returns (sym, arg_params, aux_params) for `graph`."""
        self.opset_version = opset_version
        self.model_metadata = self.get_graph_metadata(graph)
        self._infer_onnx_shapes(graph, model)
        for init in graph.initializer:
            if not init.name.strip():
                raise MXNetError("ONNX initializer without a name")
            self._values[init.name] = self._parse_array(init)
        for inp in graph.input:
            if inp.name in self._values:
                continue  # IR < 4 lists initializers among the inputs as well
            shape = self._value_info_shape(inp)
            if shape is not None:
                dims = []
                for k, d in enumerate(shape):
                    if not isinstance(d, int):
                        d = d or '%s_dim%d' % (inp.name, k)
                        if d not in self._probes:
                            n = len(self._probes)
                            self._probes[d] = (1009 + 16 * n, 2011 + 16 * n)
                    dims.append(d)
                self._data_dims[inp.name] = tuple(dims)
                self._shapes[inp.name] = tuple(dims)
            self._values[inp.name] = symbol.var(inp.name)
            self._names.add(inp.name)
        for node in graph.node:
            self._convert_node(node)
        outs = []
        for o in graph.output:
            if o.name not in self._values:
                raise MXNetError("ONNX graph output '%s' is produced by no node" % o.name)
            v = self._values[o.name]
            if isinstance(v, np.ndarray):
                v = self.const_var(o.name, v)
            outs.append(v)
        sym = outs[0] if len(outs) == 1 else symbol.Group(outs)
        args = set(sym.list_arguments())
        auxs = set(sym.list_auxiliary_states())
        arg_params = {k: v for k, v in self._params.items() if k in args}
        aux_params = {k: v for k, v in self._params.items() if k in auxs}
        return sym, arg_params, aux_params

    def get_graph_metadata(self, graph):
        """Names, shapes (0 for a dynamic dimension) and element types of the data inputs, and
        names and shapes of the outputs, as MXNet's importer reports them."""
        params = {t.name for t in graph.initializer}
        inputs = []
        for i in graph.input:
            if i.name in params:
                continue
            dims = tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
            inputs.append((i.name, dims, i.type.tensor_type.elem_type))
        outputs = [(o.name, tuple(d.dim_value for d in o.type.tensor_type.shape.dim))
                   for o in graph.output]
        return {'input_tensor_data': inputs, 'output_tensor_data': outputs}

    def graph_to_gluon(self, graph, ctx, opset_version, model=None):
        """A SymbolBlock whose inputs are the graph's data inputs, parameters loaded."""
        from ...gluon import SymbolBlock
        sym, arg_params, aux_params = self.from_onnx(graph, opset_version, model)
        names = [t[0] for t in self.get_graph_metadata(graph)['input_tensor_data']]
        net = SymbolBlock(outputs=sym, inputs=[symbol.var(n) for n in names])
        params = net.collect_params()
        for group in (arg_params, aux_params):
            for name, arr in group.items():
                if name in params:
                    params[name].shape = arr.shape
                    params[name].dtype = arr.dtype
                    params[name]._load_init(arr, ctx=ctx)
        return net

    # -- nodes -------------------------------------------------------------------------------

    def _convert_node(self, node):
        inputs = []
        for name in node.input:
            if name == '':
                inputs.append(None)
            elif name not in self._values:
                raise MXNetError("ONNX node '%s' (%s): input '%s' is produced by no earlier "
                                 "node" % (node_label(node), node.op_type, name))
            else:
                inputs.append(self._values[name])
        if node.domain not in ('', 'ai.onnx'):
            raise MXNetError("ONNX node '%s' (%s): operators of domain '%s' are not supported" %
                             (node_label(node), node.op_type, node.domain))
        try:
            outs = self._convert_with(NodeCtx(self, node, inputs), inputs)
        except MXNetError:
            raise
        except Exception as e:  # a malformed node (a required attribute missing ...)
            raise MXNetError("ONNX node '%s' (%s) cannot be converted: %s: %s" %
                             (node_label(node), node.op_type, type(e).__name__, e)) from e
        for i, name in enumerate(node.output):
            if name == '':
                continue
            if i >= len(outs) or outs[i] is None:
                raise MXNetError("ONNX node '%s' (%s): output %d ('%s') is not supported" %
                                 (node_label(node), node.op_type, i, name))
            self._values[name] = outs[i]

    def _convert_with(self, ctx, inputs):
        """The node's outputs: folded when a folder takes them, else from its converter."""
        node = ctx.node
        given = [v for v in inputs if v is not None]
        folder = FOLDERS.get(node.op_type)
        outs = NotImplemented
        if folder is not None and all(isinstance(v, np.ndarray) for v in given):
            try:
                outs = folder(ctx)
                if outs is not NotImplemented:  # np.take and friends give scalars for 0-D
                    outs = [o if isinstance(o, np.ndarray) else np.asarray(o) for o in outs]
            except TypeError:
                if not any(v.dtype == object for v in given):
                    raise
                ctx.fail('arithmetic on a dimension known only at run time (a dynamic axis) '
                         'is not supported')
        if outs is NotImplemented:
            conv = CONVERTERS.get(node.op_type)
            if conv is None:
                raise MXNetError("ONNX node '%s': operator %s (opset %d) has no hybridgluon "
                                 "equivalent" % (node_label(node), node.op_type,
                                                 self.opset_version))
            outs = conv(ctx)
        return outs if isinstance(outs, (list, tuple)) else [outs]

    def value(self, tensor_name):
        """The Symbol of tensor `tensor_name` (converted earlier)."""
        v = self._values[tensor_name]
        return self.const_var(tensor_name, v) if isinstance(v, np.ndarray) else v

    def parse_attrs(self, node):
        onnx = _onnx()
        out = {}
        for a in node.attribute:
            v = onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode('utf-8')
            elif isinstance(v, list):
                v = [x.decode('utf-8') if isinstance(x, bytes) else x for x in v]
            elif a.type == onnx.AttributeProto.TENSOR:
                v = onnx.numpy_helper.to_array(v)
            out[a.name] = v
        return out

    def node_base_name(self, node):
        name = node.name.strip().strip('/').replace('/', '_')
        return name if name else node.op_type.lower()

    def unique_name(self, base):
        name, k = base, 0
        while name in self._names:
            k += 1
            name = '%s_%d' % (base, k)
        self._names.add(name)
        return name

    def const_var(self, tensor_name, arr, tag=''):
        """A variable holding constant `arr`: one per tensor name and `tag` (which tells a
        converter's transformed copy, such as a transposed weight, from the tensor as is)."""
        if (tensor_name, tag) in self._vars:
            return self._vars[tensor_name, tag]
        if arr.dtype == object:
            raise MXNetError("ONNX tensor '%s' is a shape with dimensions known only at run "
                             "time; only Reshape can take it" % tensor_name)
        if arr.ndim == 0:
            arr = arr.reshape(1)  # MXNet 1.x arrays have at least one dimension
        name = self.unique_name(tensor_name)
        var = symbol.var(name, shape=arr.shape, dtype=arr.dtype)
        self._params[name] = nd.array(arr, dtype=arr.dtype)
        self._vars[tensor_name, tag] = var
        return var

    # -- shapes ------------------------------------------------------------------------------

    def _parse_array(self, tensor):
        onnx = _onnx()
        try:
            return np.asarray(onnx.numpy_helper.to_array(tensor))
        except Exception as e:
            raise MXNetError("ONNX tensor '%s' cannot be read: %s" % (tensor.name, e)) from None

    @staticmethod
    def _value_info_shape(vi):
        t = vi.type.tensor_type
        if not t.HasField('shape'):
            return None
        return tuple(d.dim_value if d.HasField('dim_value') else (d.dim_param or None)
                     for d in t.shape.dim)

    def _infer_onnx_shapes(self, graph, model):
        onnx = _onnx()
        infos = list(graph.input) + list(graph.output) + list(graph.value_info)
        if model is not None:
            try:
                inferred = onnx.shape_inference.infer_shapes(model)
                infos += list(inferred.graph.value_info) + list(inferred.graph.output)
            except Exception:  # a model onnx cannot infer still imports; shapes come from us
                pass
        for vi in infos:
            s = self._value_info_shape(vi)
            if s is not None:
                old = self._shapes.get(vi.name)
                unknown = sum(not isinstance(d, int) for d in s)
                if old is None or unknown < sum(not isinstance(d, int) for d in old):
                    self._shapes[vi.name] = s

    def dim_params(self, name, value=None):
        """Tensor `name`'s dimensions: ints, the name of a dimension known only at run time
        (an input's dim_param, or one of ONNX's inferred names), or None; None if unknown."""
        s = self._shapes.get(name)
        if value is None or isinstance(value, np.ndarray) or name in self._probed or \
                (s is not None and all(isinstance(d, int) for d in s)):
            return s
        self._probed.add(name)
        probed = self._probe(value)
        if probed is not None and (s is None or len(s) == len(probed)):
            self._shapes[name] = probed
        return self._shapes.get(name)

    def _probe(self, sym):
        """Our own shape inference run twice, each run giving the inputs' run-time dimensions
        other sizes (unlikely ones, 1009 + 16n and 2011 + 16n): a dimension that comes out the
        same both times is static, one that follows an input's dimension is that dimension."""
        args = set(sym.list_arguments())
        runs = []
        for k in range(2):
            feed = {n: tuple(d if isinstance(d, int) else self._probes[d][k] for d in shape)
                    for n, shape in self._data_dims.items() if n in args}
            try:
                _, out, _ = sym.infer_shape_partial(**feed)
            except Exception:  # a model the probe sizes do not suit: no shape from us
                return None
            if not out or out[0] is None or not len(out[0]) or any(d <= 0 for d in out[0]):
                return None
            runs.append(out[0])
        sizes = {v: name for name, v in self._probes.items()}
        return tuple(a if a == b else sizes.get((a, b)) for a, b in zip(*runs))

    def shape_of(self, name, sym):
        s = self.dim_params(name, sym)
        return None if s is None else tuple(d if isinstance(d, int) else None for d in s)
