"""`export_model`: an MXNet symbol (or HybridBlock) and its parameters as an ONNX file.

The graph is walked in topological order once. Shape and dtype inference run over every
internal output with the given input shapes, and a second time with the dynamic input
dimensions doubled: an output dimension that changes follows a dynamic input, which tells the
converters where a constant target shape needs a -1 or a run-time Shape. Nodes whose inputs are
all parameters or constants are evaluated here by our own executor and become initializers
(constant folding). The file is written to a temporary name and renamed into place, so a
failed export never leaves a half-written model.
"""
import logging
import os
import tempfile

import numpy as np

from ...base import MXNetError, _np_dtype
from . import _builder
from . import _ops_nn, _ops_tensor, _ops_math, _ops_contrib, _ops_rnn  # noqa: F401

DEFAULT_OPSET = 13
_FILL_OPS = ('_zeros', '_ones', '_full')


def _import_onnx():
    try:
        import onnx
        import onnx.helper  # noqa: F401
        import onnx.numpy_helper  # noqa: F401
    except ImportError as e:
        raise MXNetError('ONNX export needs the onnx package: pip install "hybridgluon[onnx]" '
                         '(or pip install onnx); importing it failed: %s' % e) from None
    return onnx


def get_operator_support(opset_version=None):
    """The sorted names of the MXNet operators export_model can convert."""
    from ... import _core
    ops = set(_core.list_ops())
    folded = set()
    for op in ops:     # generators with no input are evaluated at export (constant folding)
        info = _core.op_info(op)
        if info['no_inputs'] and not info['random'] and not op.startswith('_backward'):
            folded.add(op)
    return sorted(n for n in _builder.registry() if n in ops) + sorted(folded)


def _load(sym, params):
    from ... import symbol as _sym
    from ... import ndarray as _nd
    if isinstance(sym, str):
        sym = _sym.load(sym)
    if isinstance(params, str):
        loaded = _nd.load(params)
        if not isinstance(loaded, dict):
            raise MXNetError('ONNX export: %s holds no named parameters' % params)
        params = loaded
    if isinstance(params, (list, tuple)) and len(params) == 2 and \
            all(isinstance(p, dict) for p in params):
        merged = dict(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(sym, _sym.Symbol) or not isinstance(params, dict):
        raise MXNetError('ONNX export: sym must be a Symbol or a -symbol.json path and params '
                         'a dict, an [arg_params, aux_params] pair or a .params path (got %s, '
                         '%s)' % (type(sym).__name__, type(params).__name__))
    out = {}
    for k, v in params.items():
        if k.startswith('arg:') or k.startswith('aux:'):
            k = k[4:]
        out[k] = v
    return sym, out


def _from_block(block, n_inputs):
    """The traced symbol and the parameters of a HybridBlock."""
    from ... import symbol as _sym
    cached = getattr(block, '_cached_graph', None)
    if cached:
        inputs, sym = cached
    else:
        names = ['data'] if n_inputs == 1 else ['data%d' % i for i in range(n_inputs)]
        outs = block(*[_sym.var(n) for n in names])
        if isinstance(outs, (list, tuple)):
            outs = _sym.Group(list(outs))
        sym = outs
    params = {}
    for p in block.collect_params().values():
        try:
            params[p.name] = p._reduce()
        except Exception as e:  # uninitialised or deferred
            raise MXNetError('ONNX export: parameter %s of the block has no value (%s); '
                             'initialize the block and run it once first' % (p.name, e)) \
                from None
    return sym, params


class _Exporter:
    def __init__(self, onnx_mod, sym, params, in_shapes, in_types, dynamic, dyn_shapes, opset,
                 verbose):
        self.onnx, self.sym, self.params = onnx_mod, sym, params
        self.opset, self.verbose = opset, verbose
        self.b = _builder._Builder(onnx_mod, opset)
        self.nodes, self.heads = sym._graph()
        inputs = sym.list_inputs()
        self.data_names = [n for n in inputs if n not in params]
        if in_shapes is None:
            raise MXNetError('ONNX export: in_shapes is required (the shapes of the inputs %s)'
                             % self.data_names)
        in_shapes = [tuple(int(d) for d in s) for s in in_shapes]
        if not isinstance(in_types, (list, tuple)):
            in_types = [in_types] * len(in_shapes)
        if len(in_types) != len(in_shapes):
            raise MXNetError('ONNX export: %d input types for %d input shapes'
                             % (len(in_types), len(in_shapes)))
        if len(in_shapes) > len(self.data_names):
            raise MXNetError('ONNX export: %d input shapes for the %d data inputs %s'
                             % (len(in_shapes), len(self.data_names), self.data_names))
        self.in_shapes = dict(zip(self.data_names, in_shapes))
        self.in_types = {n: np.dtype(t) for n, t in zip(self.data_names, in_types)}
        self.dyn_dims = {}
        for i, (n, s) in enumerate(zip(self.data_names, in_shapes)):
            if not dynamic:
                self.dyn_dims[n] = [False] * len(s)
            elif dyn_shapes is not None:
                if len(dyn_shapes) != len(in_shapes):
                    raise MXNetError('ONNX export: %d dynamic_input_shapes for %d in_shapes'
                                     % (len(dyn_shapes), len(in_shapes)))
                ds = dyn_shapes[i]
                if len(ds) != len(s):
                    raise MXNetError('ONNX export: dynamic_input_shapes[%d]=%s does not match '
                                     'in_shapes[%d]=%s' % (i, ds, i, s))
                self.dyn_dims[n] = [d is None for d in ds]
            else:
                self.dyn_dims[n] = [True] * len(s)

    # ---- inference ---------------------------------------------------------------------
    def _infer(self, data_shapes):
        internals = self.sym.get_internals()
        shapes = dict(data_shapes)
        dtypes = dict(self.in_types)
        for k, v in self.params.items():
            shapes[k] = tuple(v.shape)
            dtypes[k] = v.dtype
        known = set(internals.list_inputs())
        shapes = {k: v for k, v in shapes.items() if k in known}
        dtypes = {k: v for k, v in dtypes.items() if k in known}
        _, outs = internals._infer_metas(shapes, dtypes, None)
        metas, k = {}, 0
        for i, n in enumerate(self.nodes):
            for j in range(n[5]):
                metas[(i, j)] = outs[k]
                k += 1
        return metas

    def infer(self):
        missing = [n for n in self.data_names if n not in self.in_shapes]
        try:
            self.metas = self._infer(self.in_shapes)
        except MXNetError as e:
            raise MXNetError('ONNX export: shape inference failed with in_shapes %s: %s'
                             % (self.in_shapes, e)) from None
        for key, (shape, flag) in self.metas.items():
            if shape is None or flag < 0:
                name = self.nodes[key[0]][0]
                raise MXNetError('ONNX export: the shape or dtype of %s stays unknown; give the '
                                 'shapes of all data inputs %s in in_shapes%s'
                                 % (name, self.data_names,
                                    ' (missing: %s)' % missing if missing else ''))
        self.dyn = {k: (False,) * len(m[0]) for k, m in self.metas.items()}
        if not any(any(d) for d in self.dyn_dims.values()):
            return
        # Dimensions that follow a dynamic input: infer again with those inputs doubled (all
        # dynamic dimensions first; if the graph only admits a changed batch, the batch alone).
        tries = [self.dyn_dims,
                 {n: [bool(d and i == 0) for i, d in enumerate(v)]
                  for n, v in self.dyn_dims.items()}]
        why = None
        for dd in tries:
            shapes = {n: tuple(s * 2 if dd[n][i] else s for i, s in enumerate(shp))
                      for n, shp in self.in_shapes.items()}
            try:
                other = self._infer(shapes)
            except MXNetError as e:
                why = why or e
                continue
            unknown = [self.nodes[k[0]][0] for k, m in other.items() if m[0] is None]
            if unknown:
                why = why or 'the shape of %s stays unknown' % unknown[0]
                continue
            self.dyn = {k: tuple(a != b for a, b in zip(m[0], other[k][0]))
                        for k, m in self.metas.items()}
            return
        raise MXNetError('ONNX export: the graph admits no other size of its dynamic input '
                         'dimensions %s (shape inference fails when they change: %s)'
                         % ({n: [i for i, d in enumerate(v) if d]
                             for n, v in self.dyn_dims.items()}, why))

    # ---- conversion --------------------------------------------------------------------
    def _defaults(self, op):
        from ... import _core
        info = _core.op_info(op)
        return info['name'], {a['name']: a['default'] for a in info['attrs']
                              if a['default'] is not None}

    def _fold(self, i):
        """Evaluates node i (all of whose inputs are constant) with our executor."""
        from ... import symbol as _sym
        name, _, _, _, _, n_vis = self.nodes[i]
        k = sum(self.nodes[j][5] for j in range(i))
        internals = self.sym.get_internals()
        outs = [internals[k + j] for j in range(n_vis)]
        grp = _sym.Group(outs)
        args = {v: self.params[v] for v in grp.list_inputs()}
        res = grp.eval(**args)
        return [r.asnumpy() for r in res]

    def convert(self):
        b = self.b
        tensor = {}         # (node, output) -> ONNX name
        consts = set()      # (node, output) of parameters and folded constants
        fills = {}          # (node, output) -> value of a zeros/ones/full generator
        self.consumed = {(n, j) for nd in self.nodes for n, j, _ in nd[3]} | set(self.heads)
        from ... import _core
        for i, (name, op, attrs, inputs, n_out, n_vis) in enumerate(self.nodes):
            if op is None:
                tensor[(i, 0)] = name
                b.reserve(name)
                if name in self.params:
                    consts.add((i, 0))
                continue
            ins = [(n, j) for n, j, _ in inputs]
            info = _core.op_info(op)
            if op in _FILL_OPS:
                self._fill(i, op, attrs, tensor, fills)
                continue
            if ins and all(k in consts for k in ins) and not info['random'] or \
                    (not ins and not info['random'] and info['no_inputs']):
                values = self._fold(i)
                for j, v in enumerate(values):
                    cname = b.array(np.ascontiguousarray(v), name=b.fresh(name))
                    tensor[(i, j)] = cname
                    consts.add((i, j))
                continue
            canon, defaults = self._defaults(op)
            fn = _builder.registry().get(canon) or _builder.registry().get(op)
            if fn is None:
                raise MXNetError("ONNX export: operator %s (node '%s') has no ONNX conversion"
                                 % (op, name))
            node = _builder._Node(
                name, canon, _builder._Attrs(name, attrs, defaults),
                [tensor[k] for k in ins],
                [self.metas[k][0] for k in ins],
                [np.dtype(_np_dtype(self.metas[k][1])) for k in ins],
                [self.metas[(i, j)][0] for j in range(n_vis)],
                [np.dtype(_np_dtype(self.metas[(i, j)][1])) for j in range(n_vis)],
                [self.dyn[k] for k in ins], [self.dyn[(i, j)] for j in range(n_vis)],
                [fills.get(k) for k in ins])
            b._scope = name
            outs = fn(b, node)
            if isinstance(outs, str):
                outs = [outs]
            for j in range(n_vis):
                if j < len(outs):
                    tensor[(i, j)] = outs[j]
                elif (i, j) in self.consumed:
                    raise MXNetError("ONNX export: node '%s' (%s): output %d has no ONNX form "
                                     '(only the first %d)' % (name, op, j, len(outs)))
            if self.verbose:
                logging.info('converted %s (%s) -> %s', name, op, outs[:n_vis])
        self.tensor = tensor

    def _fill(self, i, op, attrs, tensor, fills):
        """A zeros/ones/full generator: a ConstantOfShape of its inferred shape, which shape
        inference completes (a 0 in MXNet's shape= is filled from the consumer). One whose
        shape follows a dynamic input has no constant form: only converters that take it
        as ONNX's default (an RNN's zero initial state) accept it."""
        b = self.b
        name = self.nodes[i][0]
        shape, flag = self.metas[(i, 0)]
        value = {'_zeros': 0.0, '_ones': 1.0}.get(op)
        if value is None:
            value = float(_builder._parse_value(attrs.get('value', '0')))
        fills[(i, 0)] = value
        if any(self.dyn[(i, 0)]):
            tensor[(i, 0)] = _builder.DEFERRED + name
            return
        from onnx import numpy_helper
        dt = np.dtype(_np_dtype(flag))
        v = numpy_helper.from_array(np.array([value], dtype=dt), 'value')
        b._scope = name
        tensor[(i, 0)] = b.add('ConstantOfShape', [b.i64(shape)], value=v)

    def model(self):
        helper = self.b.helper
        b = self.b
        out_names = self.sym.list_outputs()
        outputs, seen = [], set()
        for (i, j), oname in zip(self.heads, out_names):
            t = self.tensor[(i, j)]
            if oname in seen:
                oname = b.fresh(oname)
            seen.add(oname)
            b.add('Identity', [t], outputs=[oname])
            shape, flag = self.metas[(i, j)]
            dims = [None if d else s for s, d in zip(shape, self.dyn[(i, j)])]
            outputs.append(helper.make_tensor_value_info(
                oname, helper.np_dtype_to_tensor_dtype(np.dtype(_np_dtype(flag))), dims))
        referenced = {x for n in b.nodes for x in n.input}
        graph_inputs = []
        for n in self.data_names:
            if n not in referenced:
                continue
            if n not in self.in_shapes:
                raise MXNetError('ONNX export: no shape given for input %s' % n)
            dims = [None if d else s for s, d in zip(self.in_shapes[n], self.dyn_dims[n])]
            graph_inputs.append(helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(self.in_types[n]), dims))
        for name, value in self.params.items():
            if name in referenced:
                b.array(np.ascontiguousarray(value.asnumpy()), name=name)
        used_inits = [t for t in b.initializers if t.name in referenced]
        graph = helper.make_graph(b.nodes, 'hybridgluon', graph_inputs, outputs,
                                  initializer=used_inits)
        opsets = [helper.make_opsetid('', self.opset)]
        # The oldest IR version the opset allows, not the onnx package's newest: runtimes
        # refuse IR versions newer than they know, and nothing here needs a newer one.
        return helper.make_model(graph, producer_name='hybridgluon', opset_imports=opsets,
                                 ir_version=helper.find_min_ir_version_for(opsets))


def export_model(sym, params=None, in_shapes=None, in_types=np.float32,
                 onnx_file_path='model.onnx', verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None, large_model=False, opset_version=None):
    """Exports a symbol and its parameters (or a HybridBlock) to an ONNX file.

    sym: Symbol, path of a -symbol.json file, or a HybridBlock (its traced graph and its
    parameters; `params` is then ignored). params: dict of name -> NDArray (`arg:`/`aux:`
    prefixes allowed), [arg_params, aux_params], or path of a .params file. in_shapes: the
    shape of each data input (the inputs that are no parameter, in list_inputs() order);
    in_types: one dtype or one per input. dynamic: declare dimensions dynamic (those None in
    dynamic_input_shapes, else all). opset_version: 13 (default) or later. large_model: store
    the weights in a separate file beside the model (ONNX external data), for models over
    2 GB. input_type / input_shape: MXNet's old names of in_types / in_shapes. Returns
    onnx_file_path."""
    onnx = _import_onnx()
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < 13:
        raise MXNetError('ONNX export: opset_version %d is not supported (13 or later)' % opset)
    if opset > onnx.defs.onnx_opset_version():
        raise MXNetError('ONNX export: opset_version %d is newer than the installed onnx '
                         'package supports (%d)' % (opset, onnx.defs.onnx_opset_version()))
    from ...gluon.block import HybridBlock
    if isinstance(sym, HybridBlock):
        sym, params = _from_block(sym, len(in_shapes) if in_shapes else 1)
    else:
        sym, params = _load(sym, params)
    if isinstance(in_shapes, tuple) and in_shapes and isinstance(in_shapes[0], int):
        in_shapes = [in_shapes]
    ex = _Exporter(onnx, sym, params, in_shapes, in_types, dynamic, dynamic_input_shapes,
                   opset, verbose)
    ex.infer()
    ex.convert()
    model = ex.model()
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception as e:  # the model stays valid without the inferred value_info
            logging.info('ONNX shape inference failed (%s); the model is kept without it', e)
    _write(onnx, model, onnx_file_path, large_model)
    if verbose:
        logging.info('Exported ONNX file %s (input shapes %s)', onnx_file_path, in_shapes)
    return onnx_file_path


def _write(onnx, model, path, large_model):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=folder)
    os.close(fd)
    try:
        if large_model:
            data_name = os.path.basename(path) + '.data'
            onnx.save_model(model, tmp, save_as_external_data=True,
                            all_tensors_to_one_file=True, location=data_name,
                            size_threshold=1024)
        else:
            with open(tmp, 'wb') as f:
                f.write(model.SerializeToString())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
