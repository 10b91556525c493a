"""SymbolBlock: a HybridBlock made from a Symbol graph (MXNet's `gluon.SymbolBlock`), and
`SymbolBlock.imports` for files written by `export` (here or by MXNet)."""
import os

import numpy as np

from .. import symbol as _symbol
from ..context import cpu
from .block import HybridBlock, _flatten
from .parameter import Parameter

__all__ = ['SymbolBlock']


class SymbolBlock(HybridBlock):
    """Runs `outputs` (a Symbol or a list of them) with `inputs` (variables) fed by the call's
    arguments; every other graph input is a Parameter named like its variable."""

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix='', params=None)
        if isinstance(inputs, _symbol.Symbol) and len(inputs) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        if isinstance(outputs, (list, tuple)):
            outputs = _symbol.Group(list(outputs))
        input_names = set()
        for i in inputs:
            if i.list_inputs() != [i.name]:
                raise ValueError('Input symbols must be variables, but %s is an output of '
                                 'operators' % str(i))
            input_names.add(i.name)
        for node in outputs.get_internals():
            if node.attr('__storage_type__') == '1':  # row_sparse, as MXNet checks
                raise AssertionError("SymbolBlock doesn't support Parameter '%s' because its "
                                     "storage type is 'row_sparse'." % node.name)
        aux = set(outputs.list_auxiliary_states())
        shared = params or {}
        for name in outputs.list_inputs():
            if name in input_names:
                continue
            if name in shared:
                p = shared[name]
            else:
                p = Parameter(name, allow_deferred_init=True,
                              grad_req='null' if name in aux else 'write', dtype=None)
                p._dtype_from_graph = True
            self._params._params[name] = p
        # Structural names (save_parameters) drop the names' common prefix, as in MXNet, so a
        # model built again (other automatic prefix) loads the file.
        strip = len(os.path.commonprefix(list(self._params._params)))
        self._reg_params = {k[strip:]: v for k, v in self._params._params.items()}
        self._inputs = list(inputs)
        self._outputs = outputs
        self._cached_graph = self._inputs, outputs
        self._in_format = [0] * len(self._inputs)
        self._out_format = [0] * len(outputs) if len(outputs) > 1 else 0
        self._active = True

    def forward(self, x, *args):
        if isinstance(x, _symbol.Symbol):  # compose the graph into the caller's graph
            given = [x] + list(args)
            if len(given) != len(self._inputs):
                raise ValueError('SymbolBlock expects %d input(s), got %d'
                                 % (len(self._inputs), len(given)))
            out = self._outputs._compose({i.name: g for i, g in zip(self._inputs, given)})
            return out if len(out.list_outputs()) == 1 else [out[i] for i in
                                                             range(len(out.list_outputs()))]
        if len(self._inputs) == 1 and not args:
            return self._call_cached_op(x)
        return self._call_cached_op(x, *args)

    def _call_cached_op(self, *args):
        flat, _ = _flatten(args, 'input')
        if len(flat) != len(self._inputs):
            raise ValueError('SymbolBlock expects %d input(s), got %d'
                             % (len(self._inputs), len(flat)))
        self._in_format = _flatten(args, 'input')[1]
        return super()._call_cached_op(*args)

    def _graph_inputs(self, *args):
        data_pos = {d.name: i for i, d in enumerate(self._inputs)}
        names = self._outputs.list_inputs()
        return names, data_pos, dict(self._params._params)

    def _clear_cached_op(self):
        self._cached_op = None
        self._cached_op_args = []

    def hybridize(self, active=True, **kwargs):
        super().hybridize(True, **kwargs)  # a graph block always runs as a cached graph

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """Loads `symbol_file` (JSON) and optionally `param_file` (`arg:`/`aux:` names) into a
        SymbolBlock with `input_names` as its inputs."""
        sym = _symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [_symbol.var(i, dtype='float32') for i in input_names]
        else:
            inputs = [_symbol.var(i) for i in input_names]
        block = SymbolBlock(sym, inputs)
        if param_file is not None:
            block.collect_params().load(param_file, ctx=ctx or cpu(), allow_missing=allow_missing,
                                        ignore_extra=ignore_extra, cast_dtype=True,
                                        dtype_source='saved')
        else:
            for p in block.collect_params().values():
                if p.dtype is None:
                    p.dtype = np.float32
        return block
