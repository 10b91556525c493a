"""Parameters of Blocks (MXNet's `gluon.Parameter`, `Constant`, `ParameterDict`).

A Parameter holds one copy of its data (and, unless `grad_req='null'`, one gradient buffer)
per context. Its shape may have unknown dims (0) until deferred initialization finishes:
`initialize()` on such a Parameter only records `(init, ctx, default_init, data)`;
`data()` then raises DeferredInitializationError until the owning block has inferred the shape
and called `_finish_deferred_init()`. A Parameter that was never initialized raises
RuntimeError. Messages follow MXNet 1.9.1 word for word since users (and tests) match on them.

Autograd is optional here: when `hybridgluon.autograd` exists, gradient buffers are attached
with `autograd.mark_variables` and initialization runs under `autograd.pause()`.
"""
from collections import OrderedDict
import contextlib
import numbers
import warnings

import numpy as np

from .. import initializer
from .. import ndarray
from ..ndarray.ndarray import _place
from ..base import MXNetError
from ..context import Context, cpu, current_context
from ..util import is_np_shape
from .utils import _indent, _brief_print_list, shape_is_known

__all__ = ['DeferredInitializationError', 'Parameter', 'Constant', 'ParameterDict']

_NAMING_URL = 'https://mxnet.io/api/python/docs/tutorials/packages/gluon/blocks/naming.html'


class DeferredInitializationError(MXNetError):
    """Error for unfinished deferred initialization."""


_AUTOGRAD = []


def _autograd():
    """The autograd module, or None while the package has none (found once, then kept:
    deferred initialization asks for it once per parameter)."""
    if _AUTOGRAD:
        return _AUTOGRAD[0]
    try:
        from .. import autograd
    except ImportError:
        return None
    _AUTOGRAD.append(autograd)
    return autograd


def _mark_variables(data, grads, grad_req):
    autograd = _autograd()
    if autograd is not None:
        autograd.mark_variables(data, grads, grad_req)


def _pause():
    autograd = _autograd()
    return autograd.pause() if autograd is not None else contextlib.nullcontext()


def _as_ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return list(ctx)


# Bumped whenever any Parameter's list of data arrays is replaced: hybridized blocks keep their
# parameters bound to the cached op and re-bind only when this changes.
_DATA_GEN = [0]


class Parameter:
    """A container holding a weight of a Block: data (and gradient) on each context.

    Parameters
    ----------
    name : str
        Name of this parameter.
    grad_req : {'write', 'add', 'null'}, default 'write'
        How gradients are stored: overwritten, accumulated, or not allocated at all.
    shape : int or tuple of int, default None
        Shape; 0 marks a dimension not known yet (completed by deferred initialization).
    dtype : numpy.dtype or str, default numpy.float32
        Data type of the parameter.
    lr_mult, wd_mult : float, default 1.0
        Multipliers of the learning rate and of the weight decay for this parameter.
    init : Initializer or str, default None
        Initializer of this parameter; the global initializer is used when None.
    allow_deferred_init : bool, default False
        Whether `initialize` may be called while the shape is incomplete.
    differentiable : bool, default True
        When False, grad_req is forced to 'null'.
    stype, grad_stype : {'default', 'row_sparse', 'csr'}, default 'default'
        Storage types of the data and of the gradient (hybridgluon stores both densely).
    """

    @property
    def _data(self):
        return self._data_arrays

    @_data.setter
    def _data(self, arrays):
        self._data_arrays = arrays
        _DATA_GEN[0] += 1

    def __init__(self, name, grad_req='write', shape=None, dtype=np.float32, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype='default', grad_stype='default'):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        self._shape = _shape(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        valid_stypes = ['default', 'row_sparse', 'csr']
        if grad_stype not in valid_stypes:
            raise AssertionError("grad_stype for Parameter '%s' must be one of 'default', "
                                 "'row_sparse', or 'csr', but got '%s'" % (name, grad_stype))
        if stype not in valid_stypes:
            raise AssertionError("stype for Parameter '%s' must be one of 'default', "
                                 "'row_sparse', or 'csr', but got '%s'" % (name, stype))
        self._grad_stype = grad_stype
        self._stype = stype

    def __repr__(self):
        return 'Parameter {name} (shape={shape}, dtype={dtype})'.format(
            name=self.name, shape=self.shape, dtype=self.dtype)

    # ---- attributes ------------------------------------------------------------------------
    @property
    def grad_req(self):
        """'write', 'add' or 'null'; setting it (re)allocates or drops the gradient buffers."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ('write', 'add', 'null'):
            raise AssertionError("grad_req must be one of 'write', 'add', or 'null', but got "
                                 "'%s'" % req)
        if not self._differentiable:
            req = 'null'
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == 'null' and self._grad is not None:
            self._grad = None
            self._data = [i.detach() if hasattr(i, 'detach') else i for i in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The data type; assigning it casts the data (see `cast`)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape, with 0 for each dimension not known yet (None if never given); under NumPy
        shape semantics (mx.np_shape) an unknown dimension reads -1 instead, as in MXNet (a
        parameter is never zero-size, so a 0 there always means not known yet)."""
        if self._shape is not None and is_np_shape():
            return tuple(-1 if d == 0 else d for d in self._shape)
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = _shape(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if not (len(self._shape) == len(new_shape) and
                all(j in (-1, 0, i) for i, j in zip(new_shape, self._shape))):
            raise AssertionError('Expected shape %s is incompatible with given shape %s.'
                                 % (str(new_shape), str(self._shape)))
        self._shape = new_shape

    def _set_trainer(self, trainer):
        """Records the Trainer updating this parameter."""
        if (self._stype != 'default' and self._trainer and trainer and
                self._trainer is not trainer):
            raise RuntimeError(
                "Failed to set the trainer for Parameter '%s' because it was already set. "
                "More than one trainers for a %s Parameter is not supported."
                % (self.name, self._stype))
        self._trainer = trainer

    # ---- access -------------------------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        """`arr_list`'s entry for `ctx` (all of it for `ctx is list`), or the MXNet error
        explaining why there is none."""
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            ctx_list = self._ctx_map[ctx.device_typeid & 1]
            if ctx.device_id < len(ctx_list):
                idx = ctx_list[ctx.device_id]
                if idx is not None:
                    return arr_list[idx]
            raise RuntimeError("Parameter '%s' was not initialized on context %s. It was only "
                               "initialized on %s." % (self.name, str(ctx), str(self._ctx_list)))
        if self._deferred_init:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing Parameters. "
                "You can also avoid deferred initialization by specifying in_units, "
                "num_features, etc., for network layers." % self.name)
        raise RuntimeError(
            "Parameter '%s' has not been initialized. Note that you should initialize "
            "parameters and create Trainer with Block.collect_params() instead of Block.params "
            "because the later does not include Parameters of nested child Blocks" % self.name)

    def data(self, ctx=None):
        """The data on `ctx` (the only copy when ctx is None and there is one)."""
        if self._stype != 'default':
            raise RuntimeError("Cannot return a copy of Parameter '%s' on ctx %s via data() "
                               "because its storage type is %s. Please use row_sparse_data() "
                               "instead." % (self.name, str(ctx), self._stype))
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """The data on every context, in initialization order."""
        if self._stype != 'default':
            raise RuntimeError("Cannot return copies of Parameter '%s' on all contexts via "
                               "list_data() because its storage type is %s. Please use "
                               "row_sparse_data() instead." % (self.name, self._stype))
        return self._check_and_get(self._data, list)

    def row_sparse_data(self, row_id):
        """MXNet: the rows `row_id` of a row_sparse parameter, on row_id's context. A dense
        parameter is refused as in MXNet; row_sparse storage does not exist here (MXNetError)."""
        return self._row_sparse('row_sparse_data', 'a copy', row_id)

    def list_row_sparse_data(self, row_id):
        """MXNet: row_sparse_data on every context. Refused as row_sparse_data is."""
        return self._row_sparse('list_row_sparse_data', 'copies', row_id)

    def _row_sparse(self, what, copies, row_id):
        if self._stype != 'row_sparse':
            raise RuntimeError("Cannot return %s of Parameter %s via %s() because its storage "
                               "type is %s. Please use data() instead."
                               % (copies, self.name, what, self._stype))
        raise MXNetError("Parameter '%s': %s() needs row_sparse storage, which hybridgluon does "
                         "not support (only dense parameters)" % (self.name, what))

    def grad(self, ctx=None):
        """The gradient buffer on `ctx`."""
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because "
                               "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient buffers on every context, in initialization order."""
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because "
                               "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts this parameter is (or, deferred, will be) initialized on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError("Parameter '%s' has not been initialized" % self.name)
        return self._ctx_list

    # ---- initialization ---------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Allocates and initializes the data (and gradient) on `ctx` (default: the current
        context; a list gives one independent copy per context).

        `init` overrides the parameter's own `init`, which overrides `default_init`. With an
        incomplete shape and `allow_deferred_init`, initialization waits for the first
        forward pass; without it, ValueError.
        """
        if self._data is not None and not force_reinit:
            warnings.warn("Parameter '%s' is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize." % self.name, stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _as_ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError("Cannot initialize Parameter '%s' because it has invalid shape: "
                             "%s." % (self.name, str(self.shape)))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Runs the recorded initialization now that the shape is known (no-op otherwise)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not shape_is_known(self.shape):
            raise AssertionError("Cannot initialize Parameter '%s' because it has invalid "
                                 "shape: %s. Please specify in_units, in_channels, etc for "
                                 "`Block`s." % (self.name, str(self.shape)))
        with _pause():
            fresh = data is None
            if fresh:
                data = ndarray.zeros(self.shape, dtype=self.dtype, ctx=cpu())
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {'__init__': init}), data)
            self._init_impl(data, ctx, own=fresh)

    def _init_impl(self, data, ctx_list, own=False):
        """Puts a copy of `data` on each context and allocates the gradients.

        own: `data` was made for this parameter and nobody else holds it, so on a single CPU
        context it becomes the parameter's array itself instead of being copied.
        """
        self._ctx_list = list(ctx_list)
        self._ctx_map = [[], []]
        for i, ctx in enumerate(self._ctx_list):
            dev_list = self._ctx_map[ctx.device_typeid & 1]
            while len(dev_list) <= ctx.device_id:
                dev_list.append(None)
            dev_list[ctx.device_id] = i
        if own and len(self._ctx_list) == 1 and self._ctx_list[0].device_typeid != 2:
            self._data = [_place(data, self._ctx_list[0])]  # CPU contexts share one memory
        else:
            self._data = [data.copyto(ctx) for ctx in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        """Zero gradient buffers shaped like the data, attached for autograd when it exists."""
        if self.grad_req == 'null':
            self._grad = None
            return
        self._grad = [ndarray.zeros(i.shape, dtype=i.dtype, ctx=i.context) for i in self._data]
        _mark_variables(self._check_and_get(self._data, list), self._grad, self.grad_req)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source='current'):
        """(Re)initializes from loaded `data`, checking shape and dtype compatibility.

        cast_dtype: convert instead of refusing a dtype mismatch; dtype_source 'current'
        converts the data, 'saved' retypes the parameter.
        """
        if cast_dtype and dtype_source not in ('current', 'saved'):
            raise AssertionError("dtype_source must be 'current' or 'saved'")
        if self.shape:
            for self_dim, data_dim in zip(self.shape, data.shape):
                if self_dim not in (0, data_dim):
                    raise AssertionError(
                        "Failed loading Parameter '%s' from saved params: shape incompatible "
                        "expected %s vs saved %s" % (self.name, str(self.shape),
                                                     str(data.shape)))
            self.shape = tuple(i if i != 0 else j for i, j in zip(self.shape, data.shape))
        if self.dtype:
            if cast_dtype and np.dtype(self.dtype).type != data.dtype:
                if dtype_source == 'current':
                    data = data.astype(self.dtype, copy=False)
                else:
                    self.dtype = data.dtype
            elif np.dtype(self.dtype).type != data.dtype:
                raise AssertionError(
                    "Failed loading Parameter '%s' from saved params: dtype incompatible "
                    "expected %s vs saved %s. Set cast_dtype=True to cast the dtype of saved "
                    "params." % (self.name, str(self.dtype), str(data.dtype)))
        if self.shape is None:  # a graph's parameter learns its shape and dtype from the file
            self.shape = data.shape
        if self.dtype is None:
            self.dtype = data.dtype
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                if ctx is not None and set(ctx) != set(self._deferred_init[1]):
                    raise AssertionError(
                        "Failed to load Parameter '%s' on %s because it was previous "
                        "initialized on %s." % (self.name, str(ctx), str(self.list_ctx())))
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            if ctx is not None and set(ctx) != set(self.list_ctx()):
                raise AssertionError(
                    "Failed to load Parameter '%s' on %s because it was previous initialized "
                    "on %s." % (self.name, str(ctx), str(self.list_ctx())))
            self.set_data(data)
        self._deferred_init = ()

    def _reduce(self):
        """The average of the copies, on the CPU (what gets saved)."""
        block = self.list_data()
        if len(block) == 1:
            return block[0].copyto(cpu())
        return ndarray.add_n(*(w.copyto(cpu()) for w in block)) / len(block)

    def reset_ctx(self, ctx):
        """Moves the parameter to other context(s) (a pending deferred init just retargets)."""
        ctx = _as_ctx_list(ctx)
        if self._data:
            data = self._reduce()
            with _pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError("Cannot reset context for Parameter '%s' because it has not been "
                             "initialized." % self.name)

    def set_data(self, data):
        """Sets the value on every context (recorded for later if initialization is deferred)."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise AssertionError("Parameter '%s' has not been initialized" % self.name)
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if (trainer is not None and getattr(trainer, '_kv_initialized', False) and
                getattr(trainer, '_update_on_kvstore', False)):
            if self not in trainer._params_to_init:
                trainer._reset_kvstore()
        for arr in self._check_and_get(self._data, list):
            arr[:] = data

    def zero_grad(self):
        """Sets the gradient buffers to 0 (nothing to do without gradients or data)."""
        if self._grad is None:
            return
        for g in self._grad:
            ndarray.zeros_like(g, out=g)

    def cast(self, dtype):
        """Converts data and gradients to `dtype` (just records it before initialization)."""
        self._dtype = dtype
        if self._data is None:
            return
        with _pause():
            self._data = [i.astype(dtype) for i in self._data]
            if self._grad is None:
                return
            self._grad = [i.astype(dtype) for i in self._grad]
            _mark_variables(self._data, self._grad, self.grad_req)

    def var(self):
        """The Symbol variable standing for this parameter in a traced graph (created once, so
        its `__shape__` keeps the dimensions known then, unknown ones as 0, as MXNet's does)."""
        if self._var is None:
            from .. import symbol
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                   stype=self._stype)
        return self._var


class _ConstantInit(initializer.Initializer):
    """Copies a fixed NDArray into the parameter (the initializer of a Constant)."""

    def __init__(self, value):
        super().__init__()
        self._value = value

    def _init_weight(self, _, arr):
        self._value.copyto(arr)


class Constant(Parameter):
    """A parameter holding a fixed tensor: no gradient, ignored by Trainer (`set_data` still
    changes it).

    Parameters
    ----------
    name : str
        Name of the parameter.
    value : array-like
        Initial value of the constant.
    """

    def __init__(self, name, value):
        if not isinstance(value, ndarray.NDArray):
            value = ndarray.array(value)
        self.value = value
        super().__init__(name, grad_req='null', shape=value.shape, dtype=value.dtype,
                         init=_ConstantInit(value))

    def __repr__(self):
        return 'Constant {name} (shape={shape}, dtype={dtype})'.format(
            name=self.name, shape=self.shape, dtype=self.dtype)

    @property
    def grad_req(self):
        return 'null'

    @grad_req.setter
    def grad_req(self, req):
        if req != 'null':
            warnings.warn('Constant parameter "{}" does not support grad_req other than "null", '
                          'and new value "{}" is ignored.'.format(self.name, req))


def _shape(shape):
    """A Parameter's shape as given (an integer or a sequence) as a tuple, with NumPy integers
    made Python ints so that it prints and compares the same under NumPy 1 and 2. Bools stay
    bools, as MXNet keeps them."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return tuple(int(d) if isinstance(d, numbers.Integral) and not isinstance(d, bool) else d
                 for d in shape)


def _merge_shapes(wanted, existing):
    """The shape agreeing with both (0 = unknown), or None when they conflict."""
    if len(wanted) != len(existing):
        return None
    merged = []
    for dim1, dim2 in zip(wanted, existing):
        if dim1 != dim2 and dim1 > 0 and dim2 > 0:
            return None
        merged.append(dim2 if dim1 in (0, -1) else dim1)
    return tuple(merged)


class ParameterDict:
    """An ordered dictionary of Parameters, keyed by full name.

    Parameters
    ----------
    prefix : str, default ''
        Prepended to the names of Parameters created with `get`.
    shared : ParameterDict or None
        Looked up by `get` before creating a new Parameter (how blocks share weights).
    """

    def __init__(self, prefix='', shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + ' ' if self._prefix else ''
        content = '\n'.join([_indent('  {0}'.format(v), 2) for v in self.values()])
        return '{name}(\n{content}\n)'.format(name=name, content=content)

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        """Prepended to the names of Parameters created with `get`."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter `prefix + name`: found here, else in `shared`, else created with
        `kwargs`. For an existing one, `kwargs` must agree with its attributes (an unknown
        shape dim accepts any size and is filled in)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if k == 'allow_deferred_init':
                param._allow_deferred_init = v
                continue
            existing = getattr(param, k, None)
            if existing is None:
                setattr(param, k, v)
                continue
            if k == 'shape':
                v = _shape(v)
                merged = _merge_shapes(v, existing)
                if merged is not None:
                    param._shape = merged
                    continue
            elif k == 'dtype' and np.dtype(v) == np.dtype(existing):
                continue
            if v is not None and v != existing:
                raise AssertionError(
                    "Cannot retrieve Parameter '%s' because desired attribute does not match "
                    "with stored for attribute '%s': desired '%s' vs stored '%s'."
                    % (name, k, str(v), str(existing)))
        return param

    def get_constant(self, name, value=None):
        """The Constant `prefix + name`, created from `value` if it does not exist yet."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError("No constant named '{}'. Please specify value if you want to "
                               "create a new constant.".format(name))
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise AssertionError("Parameter '{}' already exists but it is not a "
                                     "constant.".format(name))
            if isinstance(value, ndarray.NDArray):
                value = value.asnumpy()
            value = np.asarray(value)
            if not (param.shape == value.shape and (param.value.asnumpy() == value).all()):
                raise AssertionError("Constant '{}' already exists but it's value doesn't "
                                     "match new value".format(name))
        return param

    def update(self, other):
        """Adds all Parameters of `other` (same name must mean the same Parameter)."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise AssertionError("Cannot update self with other because they have different "
                                     "Parameters with the same name '%s'" % k)
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initializes every Parameter; `init` is the default for those without their own."""
        if verbose:
            init = initializer.create(init)
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Sets every gradient buffer to 0."""
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx):
        """Moves every Parameter to other context(s)."""
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self):
        """All contexts any Parameter is initialized on."""
        s = set()
        for p in self.values():
            s.update(p.list_ctx())
        return list(s)

    def setattr(self, name, value):
        """Sets attribute `name` of every Parameter (`setattr('grad_req', 'null')`)."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename, strip_prefix=''):
        """Saves all Parameters (keyed by name minus `strip_prefix`) with `nd.save`."""
        arg_dict = {}
        for param in self.values():
            weight = param._reduce()
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    "Prefix '%s' is to be striped before saving, but Parameter's name '%s' does "
                    "not start with '%s'. this may be due to your Block shares parameters from "
                    "other Blocks or you forgot to use 'with name_scope()' when creating child "
                    "blocks. For more info on naming, please see %s"
                    % (strip_prefix, param.name, strip_prefix, _NAMING_URL))
            arg_dict[param.name[len(strip_prefix):]] = weight
        ndarray.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix='', cast_dtype=False, dtype_source='current'):
        """Loads Parameters from a file written by `save` (names get `restore_prefix`)."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise AssertionError(
                        "restore_prefix is '%s' but Parameters name '%s' does not start with "
                        "'%s'. For more info on naming, please see %s"
                        % (restore_prefix, name, restore_prefix, _NAMING_URL))
        loaded = ndarray.load(filename)
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename,
                       cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix='', filename=None, cast_dtype=False, dtype_source='current'):
        """Loads Parameters from a dict of name -> NDArray (`arg:`/`aux:` prefixes dropped)."""
        lprefix = len(restore_prefix)
        if isinstance(param_dict, dict):
            loaded = [(k[4:] if k.startswith('arg:') or k.startswith('aux:') else k, v)
                      for k, v in param_dict.items()]
        else:
            loaded = param_dict
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        error_str = 'file: %s' % filename if filename else 'param_dict'
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise AssertionError(
                        "Parameter '%s' is missing in %s, which contains parameters: %s. Please "
                        "make sure source and target networks have the same prefix.For more info "
                        "on naming, please see %s"
                        % (name[lprefix:], error_str, _brief_print_list(arg_dict.keys()),
                           _NAMING_URL))
        for name in arg_dict:
            if name not in self._params:
                if not ignore_extra:
                    raise AssertionError(
                        "Parameter '%s' loaded from %s is not present in ParameterDict, choices "
                        "are: %s. Set ignore_extra to True to ignore. Please make sure source "
                        "and target networks have the same prefix.For more info on naming, "
                        "please see %s" % (name[lprefix:], error_str,
                                           _brief_print_list(self._params.keys()), _NAMING_URL))
                continue
            self[name]._load_init(arg_dict[name], ctx, cast_dtype=cast_dtype,
                                  dtype_source=dtype_source)
