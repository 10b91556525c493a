"""Blocks: the containers of Gluon models (MXNet's `gluon.Block`, `gluon.HybridBlock`).

Naming (MXNet 1.9.1 rules, see the compatibility spec, section 3): a block built outside any
scope gets a global `hint + n + '_'` prefix from the thread's NameManager (`dense0_`); inside
`with parent.name_scope():` it gets `parent.prefix + hint + n + '_'` with `n` counted per parent;
`prefix=''` turns the scope off. Parameters are named `block.prefix + suffix`.

Children and Parameters assigned as attributes are registered automatically; `__call__` runs
the forward pre-hooks, `forward`, then the forward hooks.

HybridBlock.forward with NDArrays calls `hybrid_forward(nd, x, ..., **params)`; once
hybridized, the first call traces `hybrid_forward(sym, ...)` into a graph and every later call
runs it as one C CachedOp. Deferred parameter shapes are completed by shape inference through
the traced graph. `export` writes the graph and its parameters in MXNet's formats.
"""
from collections import OrderedDict, defaultdict
import operator
import re
import threading
import warnings

from .. import _core
from .. import initializer
from .. import name as _name
from .. import ndarray
from ..base import MXNetError
from ..ndarray import NDArray
from .parameter import Parameter, ParameterDict, DeferredInitializationError, _DATA_GEN
from .utils import _indent, _brief_print_list, HookHandle

_NDARRAY = NDArray
_CPU0 = (1, 0)  # NDArray._device of cpu(0): the only context __call__'s hot path binds
_get_device = operator.attrgetter('_device')

__all__ = ['Block', 'HybridBlock']


class _BlockScope:
    """The scope entered by `with block.name_scope():`; names the children built inside."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """The prefix and ParameterDict of a new block of alias `hint`."""
        current = getattr(_BlockScope._current, 'value', None)
        if current is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + '_'
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = '%s%d_' % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, 'value', None)
        _BlockScope._current.value = self
        # Op names created inside (symbols) get the block prefix; fresh counters each entry.
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(ptype, value, trace)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


_SYMBOL_CLASS = []
_SYMBOL_MODULE = []
# Held while a hybridized block traces, builds its cached op or binds it (see _call_cached_op).
_BUILD_LOCK = threading.RLock()


def _symbol_module():
    """hybridgluon.symbol.symbol (imported on first use: it needs the C core's ops)."""
    if not _SYMBOL_MODULE:
        from ..symbol import symbol
        _SYMBOL_MODULE.append(symbol)
    return _SYMBOL_MODULE[0]


def _symbol_class():
    """The Symbol class once the symbol engine exists, else None (looked up once)."""
    if not _SYMBOL_CLASS:
        try:
            from ..symbol import Symbol
        except ImportError:
            Symbol = None
        _SYMBOL_CLASS.append(Symbol)
    return _SYMBOL_CLASS[0]


def _gather_type_ctx_info(args, symbol_cls):
    """(has_symbol, has_ndarray, set of contexts, first context) of nested `args`."""
    if isinstance(args, NDArray):
        ctx = args.context
        return False, True, {ctx}, ctx
    if symbol_cls is not None and isinstance(args, symbol_cls):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_symbol = has_ndarray = False
        ctx_set = set()
        first_ctx = None
        for ele in args:
            sym, arr, ctxs, first = _gather_type_ctx_info(ele, symbol_cls)
            has_symbol = has_symbol or sym
            has_ndarray = has_ndarray or arr
            if first_ctx is None:
                first_ctx = first
            ctx_set |= ctxs
            if has_symbol and has_ndarray:
                break
        return has_symbol, has_ndarray, ctx_set, first_ctx
    return False, False, set(), None


# Containers the Block classes keep for themselves (children, parameters, hooks, the cached
# graph and its arguments) hold no user Blocks; collect_params checks every block of the tree
# each time it runs, so the check skips walking them.
_OWN_CONTAINERS = frozenset(('_children', '_reg_params', '_forward_hooks', '_forward_pre_hooks',
                             '_cached_graph', '_cached_op_args', '_flags', '_in_format',
                             '_out_format', '_backend_opts'))


class Block:
    """Base class of all layers and models; subclass it and implement `forward`.

    Parameters
    ----------
    prefix : str
        Name space of the block: children made under `name_scope()` and Parameters get it
        prepended. None picks one automatically; '' disables the scope.
    params : ParameterDict or None
        Parameters to share, e.g. `Dense(20, params=dense0.collect_params())`.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ''
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith('_') else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        modstr = '\n'.join(['  ({key}): {block}'.format(key=key, block=_indent(repr(block), 2))
                            for key, block in self.__dict__.items() if isinstance(block, Block)])
        return '{name}(\n{modstr}\n)'.format(name=self.__class__.__name__, modstr=modstr)

    def __setattr__(self, name, value):
        """Registers Blocks and Parameters assigned as attributes."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError('Changing attribute type for {name} from {type1} to {type2}'
                                'is not allowed.'.format(name=name, type1=type(existing),
                                                         type2=type(value)))
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise AssertionError(
                    "Overriding Parameter attribute %s is not allowed. If you want to share "
                    "parameters between blocks, please set 'params' at Block construction "
                    "instead." % name)
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _check_container_with_block(self):
        """Warns about Blocks hidden in list/tuple/dict attributes (never registered)."""
        children = self._children.values()

        def unregistered(data):
            for ele in data.values() if isinstance(data, dict) else data:
                if isinstance(ele, (list, tuple, dict)):
                    if unregistered(ele):
                        return True
                elif isinstance(ele, Block) and ele not in children:
                    return True
            return False

        for k, v in self.__dict__.items():
            if (isinstance(v, (list, tuple, dict)) and v and not (k.startswith('__') or
                                                                  k in _OWN_CONTAINERS)
                    and unregistered(v)):
                warnings.warn('"{name}" is an unregistered container with Blocks. Note that '
                              'Blocks inside the list, tuple or dict will not be registered '
                              'automatically. Make sure to register them using register_child() '
                              'or switching to nn.Sequential/nn.HybridSequential instead. '
                              .format(name=self.__class__.__name__ + '.' + k), stacklevel=3)

    def _alias(self):
        """The hint of automatic prefixes: the lower-case class name."""
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """Prefix of this Block (`dense0_`)."""
        return self._prefix

    @property
    def name(self):
        """Name of this Block: the prefix without its trailing '_'."""
        return self._name

    def name_scope(self):
        """The scope naming children and Parameters: `with self.name_scope(): ...`."""
        return self._scope

    @property
    def params(self):
        """This Block's own ParameterDict (children's Parameters are not included)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this Block's and all its descendants' Parameters; `select`, a
        regular expression, keeps only names it matches (`'.*weight|.*bias'`)."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({name: value for name, value in self.params.items()
                        if pattern.match(name)})
        for cld in self._children.values():
            ret.update(cld.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=''):
        """Parameters keyed by structural path (`0.weight`, `features.3.running_var`)."""
        if prefix:
            prefix += '.'
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    # ---- saving and loading -------------------------------------------------------------
    def save_parameters(self, filename, deduplicate=False):
        """Saves the Parameters under their structural names (load with `load_parameters`).

        deduplicate: save a Parameter shared by several children only once. In a distributed
        job (hybridgluon.distributed) only rank 0 writes: the parameters are the same on every
        rank. The file is written whole or not at all.
        """
        if _core._dist_rank() != 0:
            return
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse_params = {v: k for k, v in params.items()}
            params = {v: k for k, v in reverse_params.items()}
        arg_dict = {key: val._reduce() for key, val in params.items()}
        ndarray.save(filename, arg_dict)

    def save(self, prefix):
        """Saves the model's structure and traced graphs to `prefix-model.json` and its
        parameters to `prefix-model.params` (MXNet's format; see `load`). Rank 0 only in a
        distributed job."""
        if _core._dist_rank() != 0:
            return
        from ._model_file import save_model
        save_model(self, prefix)

    def load(self, prefix):
        """Loads what `save` wrote into this model, which must be built the same way (same
        block classes in the same order): block names, traced graphs and parameters."""
        from ._model_file import load_model
        load_model(self, prefix)

    def save_params(self, filename):
        """[Deprecated] Saves with full names minus this block's prefix; use
        `save_parameters`."""
        warnings.warn('save_params is deprecated. Please use save_parameters. Note that if you '
                      'want load from SymbolBlock later, please use export instead. For '
                      'details, see https://mxnet.apache.org/tutorials/gluon/save_load_params.html')
        try:
            self.collect_params().save(filename, strip_prefix=self.prefix)
        except ValueError as e:
            raise ValueError('%s\nsave_params is deprecated. Using save_parameters may resolve '
                             'this error.' % e) from None

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source='current'):
        """Loads Parameters saved by `save_parameters` (or, when no name holds a '.', by the
        legacy `save_params`).

        ctx: where to put them (default: the deferred-init contexts, else cpu()).
        allow_missing / ignore_extra: tolerate Parameters absent from / extra in the file.
        cast_dtype, dtype_source: see `Parameter` loading ('current' casts the data,
        'saved' retypes the Parameter).
        """
        loaded = ndarray.load(filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any('.' in i for i in loaded.keys()):
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            # A shared Parameter is present if any of its structural names is.
            params_inv = defaultdict(list)
            for k, v in params.items():
                params_inv[v].append(k)
            for name, param in params.items():
                if not any(p in loaded for p in params_inv[param]):
                    raise AssertionError(
                        "Parameter '%s' is missing in file '%s', which contains parameters: %s. "
                        "Set allow_missing=True to ignore missing parameters."
                        % (name, filename, _brief_print_list(loaded.keys())))
        for name in loaded:
            if not ignore_extra and name not in params:
                raise ValueError(
                    "Parameter '%s' loaded from file '%s' is not present in ParameterDict, "
                    "which contains parameters %s. Set ignore_extra=True to ignore. "
                    % (name, filename, _brief_print_list(self._params.keys())))
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype,
                                        dtype_source=dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """[Deprecated] Use `load_parameters`."""
        warnings.warn('load_params is deprecated. Please use load_parameters.')
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # ---- structure ------------------------------------------------------------------------
    def register_child(self, block, name=None):
        """Registers `block` as a child (attribute assignment does this automatically);
        unnamed children are keyed '0', '1', ..."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Calls `hook(block, args)` before each `forward`; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """Calls `hook(block, args, output)` after each `forward`; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Calls `fn(block)` on every descendant, then on this block; returns self."""
        for cld in self._children.values():
            cld.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initializes the Parameters of this Block and its children
        (`collect_params().initialize(...)`)."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        """Sets the gradients of all Parameters (children's included) to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Moves all Parameters (children's included) to other context(s)."""
        self.collect_params().reset_ctx(ctx)

    def hybridize(self, active=True, **kwargs):
        """Hybridizes the HybridBlock descendants (a plain Block itself stays imperative)."""
        for cld in self._children.values():
            cld.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Converts the Parameters of this Block and its children to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self.params.items():
            param.cast(dtype)

    def __call__(self, *args):
        """Runs the pre-hooks, `forward(*args)`, then the hooks; returns forward's output."""
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation of this Block, on NDArrays; subclasses implement it."""
        raise NotImplementedError

    def summary(self, *inputs):
        """Prints each layer's output shape and parameter count for a forward pass on
        `inputs` (the block must be initialized and not hybridized)."""
        _print_summary(self, inputs)


class HybridBlock(Block):
    """A Block computing with either NDArrays or Symbols: subclasses implement
    `hybrid_forward(F, x, *args, **params)`, where `F` is `mx.nd` (or `mx.sym` while tracing)
    and `params` holds the data of each Parameter attribute, by attribute name.

    All children must be HybridBlocks.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        # The traced graph and the CachedOp that runs it (see _get_graph, _build_cache).
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []
        self._cached_inputs = None
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._fast_gen = -1
        self._fast_single = False
        self._backend = None
        self._backend_opts = {}

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def _clear_cached_op(self):
        """Forgets the cached graph, so the next hybridized call traces again."""
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []
        self._cached_inputs = None
        self._fast_gen = -1

    def __call__(self, *args):
        # Hot path of a hybridized block called with one NDArray: the parameters are bound to
        # the cached op (re-bound when any Parameter's arrays change), one C call does the rest.
        if (self._fast_gen == _DATA_GEN[0] and len(args) == 1 and type(args[0]) is _NDARRAY
                and not self._forward_hooks and not self._forward_pre_hooks
                and args[0]._device == _CPU0):
            out = self._cached_op(args[0])
            return out if self._fast_single else _regroup(out, self._out_format)
        return super().__call__(*args)

    def _bind_fast_path(self):
        """Binds the parameters to the cached op for __call__'s hot path, when that applies:
        active, no hooks, one data input, every parameter on cpu(0) only (other contexts take
        the path that checks and places them)."""
        self._fast_gen = -1
        if (not self._active or self._cached_op is None or self._forward_hooks or
                self._forward_pre_hooks or self._in_format != [0]):
            return
        bound = []
        for is_arg, i in self._cached_op_args:
            if is_arg:
                bound.append(None)
                continue
            if i._data is None or len(i._data) != 1 or i._data[0]._device != _CPU0:
                return
            bound.append(i._data[0])
        if bound.count(None) != 1:
            return
        self._fast_single = self._out_format == 0
        self._cached_op._bind(bound, self._fast_single)
        self._fast_gen = _DATA_GEN[0]

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError(
                'Children of HybridBlock must also be HybridBlock, but %s has type %s. If you '
                'are using Sequential, please try HybridSequential instead.'
                % (str(block), str(type(block))))
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Turns hybrid execution on or off for this block and its descendants and records
        the CachedOp flags (extra keyword arguments are backend options)."""
        if kwargs:
            self._backend_opts = kwargs
        self._backend = backend
        self._active = active
        self._fast_gen = -1
        self._flags = [('static_alloc', static_alloc), ('static_shape', static_shape),
                       ('inline_limit', inline_limit)]
        if forward_bulk_size is not None:
            self._flags.append(('forward_bulk_size', forward_bulk_size))
        if backward_bulk_size is not None:
            self._flags.append(('backward_bulk_size', backward_bulk_size))
        if clear:
            self._clear_cached_op()
        if active and self._forward_hooks or self._forward_pre_hooks:
            warnings.warn('"{block}" is being hybridized while still having forward hook/'
                          'pre-hook. If "{block}" is a child of HybridBlock, the hooks will not '
                          'take effect.'.format(block=self))
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                          inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                          backward_bulk_size=backward_bulk_size)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    # ---- the traced graph ---------------------------------------------------------------
    def _get_graph(self, *args):
        """Traces hybrid_forward once with Symbols: (input variables, grouped outputs)."""
        if not self._cached_graph:
            flat, self._in_format = _flatten(args, 'input')
            self._trace([a is not None for a in flat])
        return self._cached_graph

    def _trace(self, present):
        """Runs hybrid_forward on fresh input variables (`present[i]`: input i is not None)."""
        from .. import symbol
        names = ['data'] if len(present) == 1 else ['data%d' % i for i in range(len(present))]
        inputs = [symbol.var(n) if p else None for n, p in zip(names, present)]
        grouped = _regroup([i for i in inputs if i is not None], self._in_format)
        params = {k: v.var() for k, v in self._reg_params.items()}
        with _tracing(self), self.name_scope():
            out = self.hybrid_forward(symbol, *grouped, **params)
        out, self._out_format = _flatten(out, 'output')
        self._cached_graph = [i for i in inputs if i is not None], symbol.Group(out)

    def _graph_inputs(self, *args):
        """(graph input names, {data name: position}, {param name: Parameter}), checked.

        Kept from _build_cache for as long as the cached op that binds those same Parameters
        (the deferred shape inference of the first call then does not collect them again)."""
        if self._cached_inputs is not None:
            return self._cached_inputs
        data, out = self._get_graph(*args)
        data_pos = {d.name: i for i, d in enumerate(data)}
        params = dict(self.collect_params().items())  # by key: Block.load renames keys
        names = out.list_inputs()
        for name in names:
            if name not in data_pos and name not in params:
                raise MXNetError('Unknown input to HybridBlock: %s' % name)
        return names, data_pos, params

    def infer_shape(self, *args):
        """Completes the unknown dims of the Parameters by inferring shapes through the traced
        graph from the input arrays `args`."""
        self._infer_attrs(args)

    def _infer_attrs(self, args):
        from .. import _core
        from ..base import _dtype_flag
        names, data_pos, params = self._graph_inputs(*args)
        flat = [a for a in _flatten(args, 'input')[0] if a is not None]
        metas = []
        for n in names:
            if n in data_pos:
                a = flat[data_pos[n]]
                metas.append((a.shape, a._dtype_flag))
            else:
                p = params[n]
                metas.append((p.shape if p.shape else None, _dtype_flag(p.dtype)))
        op = _core.CachedOp(self._cached_graph[1], names)
        inferred, _ = op.infer(metas, True)
        unknown = []
        for n, (shape, _) in zip(names, inferred):
            if n not in params:
                continue
            if shape is None or 0 in shape:
                unknown.append('%s: %s' % (n, shape if shape is not None else '()'))
            else:
                params[n].shape = shape
        if unknown:
            raise MXNetError('Cannot decide shape for the following arguments (0s in shape means '
                             'unknown dimensions). Consider providing them as input:\n\t%s'
                             % '\n\t'.join(unknown))

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as e:
            raise ValueError('Deferred initialization failed because shape cannot be inferred. '
                             '{}'.format(e)) from e

    def _build_cache(self, *args):
        from .. import _core
        names, data_pos, params = self._graph_inputs(*args)
        self._cached_inputs = names, data_pos, params
        self._cached_op_args = [(True, data_pos[n]) if n in data_pos else (False, params[n])
                                for n in names]
        flags = dict(self._flags)
        self._cached_op = _core.CachedOp(self._cached_graph[1], names,
                                         static_alloc=bool(flags.get('static_alloc')),
                                         static_shape=bool(flags.get('static_shape')))

    def _call_cached_op(self, *args):
        # Tracing, building the op, deferred initialisation and binding run under one lock
        # (tracing uses module-level state); the call itself runs outside it, with the GIL
        # released, so threads sharing a block compute at the same time. _call_all ignores
        # the op's binding, so the hot path of other threads stays bound.
        with _BUILD_LOCK:
            if self._cached_op is None:
                self._build_cache(*args)
            op, out_format = self._cached_op, self._out_format
            cargs = self._cached_op_inputs(args)
        self._check_one_context(cargs)
        out = op._call_all(*cargs)  # on the inputs' context (the executor's rule)
        with _BUILD_LOCK:
            if op is self._cached_op:
                self._bind_fast_path()
        return _regroup(out, out_format)

    def _cached_op_inputs(self, args):
        """The cached op's inputs for a call with `args`: data and parameter arrays in the
        graph's order (finishing deferred initialisation first when needed)."""
        if len(args) == 1 and self._in_format == [0] and isinstance(args[0], NDArray):
            flat = args  # the common case, without walking a nested structure
        else:
            flat, fmt = _flatten(args, 'input')
            if fmt != self._in_format and not _trailing_none_match(fmt, self._in_format):
                raise ValueError('The argument structure of HybridBlock does not match the '
                                 'cached version. Stored format = {}, input format = {}'
                                 .format(self._in_format, fmt))
            flat = [a for a in flat if a is not None]
        try:
            return [flat[i] if is_arg else _param_array(i, flat)
                    for is_arg, i in self._cached_op_args]
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            for _, p in self._cached_op_args:
                if not isinstance(p, int):
                    p._finish_deferred_init()
            return [flat[i] if is_arg else _param_array(i, flat)
                    for is_arg, i in self._cached_op_args]

    def _check_one_context(self, cargs):
        """MXNet's error when the cached op's inputs are not all on the same context (a
        Parameter's only copy on another context than the data)."""
        if not cargs:
            return
        devices = list(map(_get_device, cargs))
        if devices.count(devices[0]) != len(devices):
            k = next(k for k, dev in enumerate(devices) if dev != devices[0])
            names = self._cached_inputs[0]
            raise MXNetError('CachedOp requires all inputs to live on the same context. But %s '
                             'is on %s while %s is on %s' % (names[0], cargs[0].context, names[k],
                                                             cargs[k].context))

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Writes `path-symbol.json` and `path-%04d.params` (epoch): the traced graph and the
        parameters it uses, named `arg:<name>` / `aux:<name>` as MXNet's export does. In a
        distributed job only rank 0 writes."""
        if not self._cached_graph and self._in_format is not None:
            # hybridize() again (e.g. with new flags) dropped the graph; the input structure of
            # the last call is known, so trace again rather than refuse.
            flat_fmt = _flatten_format(self._in_format)
            self._trace([f != -1 for f in flat_fmt])
        if not self._cached_graph:
            raise RuntimeError('Please first call block.hybridize() and then run forward with '
                               'this block at least once before calling export.')
        sym = self._cached_graph[1]
        aux = set(sym.list_auxiliary_states())
        params = {p.name: p for p in self.collect_params().values()}
        arrays = {}
        for name in sym.list_inputs():
            if name in params:
                key = ('aux:%s' if name in aux else 'arg:%s') % name
                arrays[key] = params[name]._reduce()
        # Both files are written in full before either replaces anything, then the parameters
        # are renamed into place before the symbol: a failed export leaves the old pair, never
        # a new graph beside old or missing parameters.
        if _core._dist_rank() != 0:
            return  # rank 0 writes the files (every rank traced, to stay in step)
        from ..ndarray.utils import _replace_files
        _replace_files([('%s-%04d.params' % (path, epoch), 'NDArray file',
                         (list(arrays.values()), list(arrays.keys()))),
                        ('%s-symbol.json' % path, 'symbol file', sym.tojson().encode('utf-8'))])

    # ---- calling ----------------------------------------------------------------------
    def forward(self, x, *args):
        """Runs `hybrid_forward` with `F = mx.nd` and the Parameters' data for NDArray inputs
        (through the cached graph once hybridized; finishing deferred initialization on first
        use), or traces it for Symbol inputs."""
        if self._active and self._cached_op is not None and isinstance(x, NDArray) and \
                all(isinstance(a, NDArray) for a in args):
            return self._call_cached_op(x, *args)  # hot path: straight into C
        symbol_cls = _symbol_class()
        if not args and symbol_cls is not None and isinstance(x, symbol_cls):
            return self._forward_symbols(x)  # every child, while the parent traces
        has_symbol, has_ndarray, ctx_set, first_ctx = _gather_type_ctx_info(
            [x] + list(args), symbol_cls)
        if has_symbol and has_ndarray:
            raise ValueError('In HybridBlock, we do not support mixed NDArrays and Symbols types '
                             'for the input. Please check the type of the args.\n')
        if not has_symbol and not has_ndarray:
            raise ValueError('In HybridBlock, there must be one NDArray or one Symbol in the '
                             'input. Please check the type of the args.\n')
        if has_ndarray:
            if self._active and len(ctx_set) > 1:
                raise ValueError('Find multiple contexts in the input, After hybridized, the '
                                 'HybridBlock only supports one input context. You can print '
                                 'the ele.ctx in the input arguments to inspect their contexts. '
                                 'Find all contexts = {}'.format(ctx_set))
            ctx = first_ctx
            if self._active:
                with ctx:
                    return self._call_cached_op(x, *args)
            with ctx:
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for v in self.params.values():
                        v._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                return self.hybrid_forward(ndarray, x, *args, **params)
        return self._forward_symbols(x, *args)

    def _forward_symbols(self, x, *args):
        """hybrid_forward with `F = mx.sym`: the nodes of the graph being traced."""
        from .. import symbol
        params = {k: v.var() for k, v in self._reg_params.items()}
        with _tracing(self), self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written against `F` (`mx.nd` or `mx.sym`); subclasses implement
        it."""
        raise NotImplementedError


class _tracing:
    """While a block's hybrid_forward runs on Symbols: the block's path from the block being
    traced ('net', 'net.features.2'), which nodes record for error messages."""

    def __init__(self, block):
        self._block = block

    def __enter__(self):
        _sym = _symbol_module()
        self._saved = dict(_sym._TRACE)
        paths = _sym._TRACE.get('paths')
        if paths is None:  # the outermost block: number the tree once
            paths = {}
            stack = [(self._block, 'net')]
            while stack:
                blk, path = stack.pop()
                paths[id(blk)] = path
                stack.extend((c, '%s.%s' % (path, k)) for k, c in blk._children.items())
            _sym._TRACE['paths'] = paths
        _sym._TRACE['path'] = paths.get(id(self._block), self._block.name)

    def __exit__(self, *exc):
        _sym = _symbol_module()
        _sym._TRACE.clear()
        _sym._TRACE.update(self._saved)


def _flatten(args, what):
    """Flattens nested lists/tuples of arrays or Symbols into a list plus a format for
    _regroup (MXNet's convention: 0 an array or single-output Symbol, n > 0 a Symbol with n
    outputs, -1 None, a list for a list)."""
    if isinstance(args, NDArray):
        return [args], 0
    if hasattr(args, '_hg_symbol'):
        n = len(args)
        return [args], n if n > 1 else 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError('HybridBlock %s must be (nested) list of Symbol or NDArray, but got %s '
                         'of type %s' % (what, str(args), str(type(args))))
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _trailing_none_match(fmt, stored):
    """Whether two top-level input formats differ only by trailing None arguments (-1): a call
    that leaves out an argument defaulting to None matches one that passes None (MXNet)."""
    short, long_ = (fmt, stored) if len(fmt) < len(stored) else (stored, fmt)
    return (len(short) != len(long_) and long_[:len(short)] == short
            and all(f == -1 for f in long_[len(short):]))


def _param_array(p, flat):
    """A Parameter's data for a cached-op call on `flat` (the NDArray inputs): its only copy,
    without data()'s checks, or the copy on the first input's context."""
    arrays = p._data
    if arrays is not None and len(arrays) == 1:
        return arrays[0]
    return p.data(flat[0].context if flat else None)


def _flatten_format(fmt):
    """The leaf formats of a nested format, in order (-1 marks a None input)."""
    if isinstance(fmt, int):
        return [fmt]
    return [leaf for f in fmt for leaf in _flatten_format(f)]


def _regroup(args, fmt):
    """Inverse of _flatten: rebuilds the nesting `fmt` from the flat list `args`."""
    def take(items, f):
        if isinstance(f, int):
            if f == 0:
                return items[0], items[1:]
            if f == -1:
                return None, items
            return list(items[:f]), items[f:]
        out = []
        for g in f:
            v, items = take(items, g)
            out.append(v)
        return out, items

    return take(list(args), fmt)[0]


# ---- summary ------------------------------------------------------------------------------
def _shape_str(args):
    """The shapes of nested outputs as MXNet prints them: `(2, 10)` or `(2, 3), (2, 4)`."""
    def shapes_of(a):
        if isinstance(a, (list, tuple)):
            return [shapes_of(i) for i in a]
        return a.shape if isinstance(a, NDArray) else a

    shapes = shapes_of(args)
    text = str(shapes)[1:-1] if isinstance(shapes, list) else str(shapes)
    return text.replace('L', '')


def _print_summary(block, inputs):
    """Implements Block.summary: hooks every non-Sequential block, runs one forward, prints."""
    from .nn.basic_layers import Sequential, HybridSequential
    summary = OrderedDict()
    seen = set()
    hooks = []

    def summary_hook(blk, _, outputs):
        if any(hasattr(o, '_hg_symbol') for o in _flatten(outputs, 'output')[0]):
            return  # a trace for deferred shape inference, not the forward being summarised
        key = '%s-%i' % (blk.__class__.__name__, len(summary))
        entry = summary[key] = OrderedDict()
        entry['output_shape'] = _shape_str(outputs)
        n_params = trainable = shared = 0
        for p in blk.params.values():
            size = p.data().size
            n_params += size
            trainable += 0 if p.grad_req == 'null' else size
            if p in seen:
                shared += size
            else:
                seen.add(p)
        entry['n_params'], entry['trainable'], entry['shared'] = n_params, trainable, shared

    def register(blk):
        if isinstance(blk, HybridBlock) and blk._active:
            raise AssertionError('"{}" must not be hybridized to print summary.'
                                 .format(blk.name))
        if not isinstance(blk, (Sequential, HybridSequential)):
            hooks.append(blk.register_forward_hook(summary_hook))

    summary['Input'] = OrderedDict(output_shape=_shape_str(list(inputs)), n_params=0,
                                   trainable=0, shared=0)
    try:
        block.apply(register)
        block(*inputs)
        line_format = '{:>20}  {:>42} {:>15}'
        print('-' * 80)
        print(line_format.format('Layer (type)', 'Output Shape', 'Param #'))
        print('=' * 80)
        total = trainable = shared = 0
        for layer, entry in summary.items():
            print(line_format.format(layer, str(entry['output_shape']), entry['n_params']))
            total += entry['n_params']
            trainable += entry['trainable']
            shared += entry['shared']
        print('=' * 80)
        print('Parameters in forward computation graph, duplicate included')
        print('   Total params: ' + str(total))
        print('   Trainable params: ' + str(trainable))
        print('   Non-trainable params: ' + str(total - trainable))
        print('Shared params in forward computation graph: ' + str(shared))
        print('Unique parameters in model: ' + str(total - shared))
        print('-' * 80)
    finally:
        for h in hooks:
            h.detach()
