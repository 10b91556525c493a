"""The ONNX graph under construction and what a converter sees of one MXNet node.

A converter (one function per MXNet op, registered with `converter`) reads a `_Node`: its
parsed attributes, the ONNX names of its inputs and the shapes and dtypes shape inference gave
every input and output, plus which dimensions follow a dynamic input dimension. It emits ONNX
nodes through the `_Builder` and returns the ONNX names of its visible outputs. Nothing here
computes on data: constants are built from Python values or arrays that already exist.
"""
import ast

from ...base import MXNetError

_REGISTRY = {}

# Prefix of the name of a generated constant whose shape follows a dynamic input (see
# _Exporter._fill): a converter may drop it; any ONNX node that takes it is an error.
DEFERRED = '@dynamic-fill:'

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -2 ** 63


def converter(*names):
    """Registers fn(builder, node) as the converter of the MXNet ops `names`."""
    def register(fn):
        for n in names:
            _REGISTRY[n] = fn
        return fn
    return register


def registry():
    return _REGISTRY


def _parse_value(text):
    """A Python value from MXNet's attribute spelling ('(1, 1)', 'True', 'None', '1e-05',
    'relu'); strings that are no literal stay strings."""
    if not isinstance(text, str):
        return text
    low = text.strip()
    if low in ('inf', '-inf', 'nan'):
        return float(low)
    try:
        return ast.literal_eval(low)
    except (ValueError, SyntaxError):
        return low


class _Attrs:
    """A node's attributes with the registry's defaults filled in."""

    def __init__(self, node_desc, values, defaults):
        self._where = node_desc
        self._raw = dict(defaults)
        self._raw.update({k: v for k, v in values.items() if not k.startswith('__')})

    def has(self, key):
        return self._raw.get(key) not in (None, 'None')

    def get(self, key, default=None):
        if key not in self._raw:
            return default
        v = _parse_value(self._raw[key])
        return default if v is None else v

    def int(self, key, default=None):
        v = self.get(key, default)
        return None if v is None else int(v)

    def float(self, key, default=None):
        v = self.get(key, default)
        return None if v is None else float(v)

    def bool(self, key, default=False):
        v = self.get(key, default)
        if isinstance(v, str):
            return v.lower() in ('true', '1')
        return bool(v)

    def str(self, key, default=None):
        v = self._raw.get(key)
        if v is None or v == 'None':
            return default
        return str(v)

    def tuple(self, key, default=()):
        v = self.get(key, None)
        if v is None:
            return tuple(default) if default is not None else None
        if isinstance(v, (list, tuple)):
            return tuple(v)
        return (v,)


class _Node:
    """One MXNet node as a converter sees it."""

    def __init__(self, name, op, attrs, inputs, in_shapes, in_dtypes, out_shapes, out_dtypes,
                 in_dyn, out_dyn, in_fills):
        self.name, self.op, self.attrs = name, op, attrs
        self.inputs = inputs            # ONNX tensor names
        self.in_shapes, self.in_dtypes = in_shapes, in_dtypes
        self.out_shapes, self.out_dtypes = out_shapes, out_dtypes
        self.in_dyn, self.out_dyn = in_dyn, out_dyn  # per dimension: follows a dynamic input
        self.in_fills = in_fills        # value of a zeros/ones/full input, else None

    def fail(self, why):
        raise MXNetError("ONNX export: node '%s' (%s): %s" % (self.name, self.op, why))

    def unsupported(self, attr, value):
        self.fail('%s=%s cannot be expressed in ONNX' % (attr, value))

    def static_out(self, i=0):
        """The output shape as a constant target for Reshape/Expand-like ops: a dynamic
        dimension becomes -1 (Reshape infers it); more than one dynamic dimension cannot be a
        constant."""
        dims = list(self.out_shapes[i])
        dyn = [k for k, d in enumerate(self.out_dyn[i]) if d]
        if len(dyn) > 1:
            self.fail('the output shape %s has several dynamic dimensions (%s); export with '
                      'static shapes (dynamic=False) or fewer dynamic input dimensions'
                      % (tuple(dims), dyn))
        for k in dyn:
            dims[k] = -1
        return dims


class _Builder:
    """Collects ONNX nodes and initializers; names every tensor uniquely."""

    def __init__(self, onnx_mod, opset):
        self.onnx = onnx_mod
        self.helper = onnx_mod.helper
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self._names = set()
        self._scope = 'g'
        self._consts = {}

    def fresh(self, hint):
        base = '%s_%s' % (self._scope, hint) if hint else self._scope
        name, k = base, 0
        while name in self._names:
            k += 1
            name = '%s%d' % (base, k)
        self._names.add(name)
        return name

    def reserve(self, name):
        self._names.add(name)

    def add(self, op_type, inputs, n_out=1, outputs=None, **attrs):
        """Appends one ONNX node; returns its output name (or list when n_out > 1)."""
        for x in inputs:
            if x.startswith(DEFERRED):
                raise MXNetError("ONNX export: node '%s' takes %s, a zeros/ones/full whose "
                                 'shape follows a dynamic input dimension; ONNX export needs '
                                 'it static (export with dynamic=False)'
                                 % (self._scope, x[len(DEFERRED):]))
        if outputs is None:
            outputs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = self.helper.make_node(op_type, list(inputs), list(outputs),
                                     name=self.fresh('n_' + op_type.lower()), **attrs)
        self.nodes.append(node)
        return outputs[0] if len(outputs) == 1 and n_out == 1 else list(outputs)

    def array(self, value, name=None):
        """An initializer from a NumPy array (the boundary: the values already exist)."""
        from onnx import numpy_helper
        name = name or self.fresh('const')
        self._names.add(name)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def const(self, values, dtype, shape=None):
        """A small initializer from Python numbers, of the given NumPy dtype; shared by value."""
        import numpy as np
        dt = np.dtype(dtype)
        flat = [values] if not isinstance(values, (list, tuple)) else list(values)
        shape = tuple(shape) if shape is not None else \
            (() if not isinstance(values, (list, tuple)) else (len(flat),))
        key = (dt.str, shape, tuple(flat))
        if key in self._consts:
            return self._consts[key]
        tensor_type = self.helper.np_dtype_to_tensor_dtype(dt)
        name = self.fresh('const')
        if dt == np.bool_:
            flat = [bool(v) for v in flat]
        elif dt.kind in 'iu':
            flat = [int(v) for v in flat]
        else:
            flat = [float(v) for v in flat]
        self.initializers.append(self.helper.make_tensor(name, tensor_type, shape, flat))
        self._consts[key] = name
        return name

    def i64(self, values):
        return self.const(list(values), 'int64')

    # ---- small idioms shared by converters ---------------------------------------------
    def unsqueeze(self, x, axes):
        return self.add('Unsqueeze', [x, self.i64(axes)])

    def squeeze(self, x, axes=None):
        return self.add('Squeeze', [x] + ([self.i64(axes)] if axes is not None else []))

    def reshape(self, x, dims):
        return self.add('Reshape', [x, self.i64(dims)])

    def cast(self, x, dtype):
        import numpy as np
        return self.add('Cast', [x], to=self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))

    def slice(self, x, starts, ends, axes, steps=None):
        ins = [x, self.i64(starts), self.i64(ends), self.i64(axes)]
        if steps is not None:
            ins.append(self.i64(steps))
        return self.add('Slice', ins)

    def reduce(self, op_type, x, axes, keepdims):
        """Reduce* with axes as an input where the opset wants it (ReduceSum from 13, the
        others from 18); axes None reduces everything."""
        as_input = op_type == 'ReduceSum' or self.opset >= 18
        if axes is None:
            return self.add(op_type, [x], keepdims=int(keepdims))
        if as_input:
            return self.add(op_type, [x, self.i64(axes)], keepdims=int(keepdims))
        return self.add(op_type, [x], axes=list(axes), keepdims=int(keepdims))

    def dim(self, x, axis):
        """A 1-element int64 tensor holding dimension `axis` of x at run time."""
        shp = self.add('Shape', [x])
        return self.add('Gather', [shp, self.i64([axis])], axis=0)
