"""The imperative `nd` namespace: NDArray, creation functions, and one function per registered op
(generated from the C registry at import, so adding an op in C adds it here)."""
import operator as _operator

import numpy as _np

from .. import _core
from .. import util as _util
from ..base import MXNetError, _MXNetTypeError, _MXNetValueError, _dtype_flag, _dtype_name
from ..context import current_context, num_gpus, _check_available
from .ndarray import NDArray, _place
from .ndarray import (add, subtract, multiply, divide, true_divide, modulo, power, maximum,  # noqa: F401
                      minimum, equal, not_equal, greater, greater_equal, lesser, lesser_equal,
                      logical_and, logical_or, logical_xor, moveaxis, from_numpy)
from .cached_op import CachedOp
from . import random  # noqa: F401
from .utils import save, load, load_frombuffer

__all__ = ['NDArray', 'array', 'empty', 'zeros', 'ones', 'eye', 'full', 'arange', 'zeros_like',
           'ones_like', 'waitall', 'from_dlpack', 'to_dlpack_for_read', 'to_dlpack_for_write',
           'concat', 'concatenate', 'save', 'load', 'load_frombuffer', 'add', 'subtract',
           'multiply', 'divide', 'true_divide', 'modulo', 'power', 'maximum', 'minimum', 'equal',
           'not_equal', 'greater', 'greater_equal', 'lesser', 'lesser_equal', 'logical_and',
           'logical_or', 'logical_xor', 'onehot_encode', 'moveaxis', 'linspace', 'from_numpy',
           'CachedOp', 'split_v2']

_PYTHON_DEFINED = set(__all__)


def _dim(d, bools):
    """d as a Python int when it is an integer (NumPy's and 0-d integer arrays too), else None.
    A bool counts only with `bools`."""
    if isinstance(d, (bool, _np.bool_)):
        return int(d) if bools else None
    try:
        return _operator.index(d)
    except TypeError:
        return None


def _shape_tuple(shape, bools=False):
    """MXNet's `shape` argument (an integer or a sequence of them) as a tuple of Python ints.

    Bools and floats are refused as MXNet's shape parser refuses them (zeros, ones), with its
    message. `bools=True` is for empty and full, which MXNet sizes through ctypes: there True
    is 1 and a float a TypeError."""
    scalar = not isinstance(shape, (tuple, list, _np.ndarray)) or _np.ndim(shape) == 0
    dims = [_dim(d, bools) for d in ((shape,) if scalar else shape)]
    if None not in dims:
        return tuple(dims)
    from ..symbol.symbol import _attr_str
    error = _MXNetTypeError if bools else _MXNetValueError
    raise error("Invalid Parameter format for shape expect Shape(tuple) but value='%s'"
                % _attr_str(shape if scalar else tuple(shape)))


def _known_shape(op, shape):
    """shape, checked as MXNet's zeros/ones check it: with the legacy shape semantics (the
    default) `()` means "unknown", so it is refused; with `mx.np_shape()` on it is a scalar.
    Zero-size dimensions are accepted in both modes here (MXNet's legacy mode refuses them as
    unknown too; this library's ops handle them, and its own code relies on it)."""
    if not shape and not _util.is_np_shape():
        raise MXNetError('Operator %s inferring shapes failed: shape=() is not known with the '
                         'legacy shape semantics; use mx.np_shape() for scalar (0-d) arrays'
                         % op)
    return shape


def _ctx(ctx):
    ctx = ctx or current_context()
    _check_available(ctx)
    return ctx


def _placed(out, ctx):
    """A creation function's fresh result, put on `ctx` (default: the current context)."""
    return _place(out, _ctx(ctx))


def _gpu_id(ctx):
    """The id of ctx (default: the current context) when it is a GPU this process has, else
    None: creation functions then make their result there, with no copy from host memory."""
    ctx = ctx or current_context()
    if ctx.device_typeid == 2 and ctx.device_id < num_gpus():
        return ctx.device_id
    return None


def _create(op, ctx, attrs):
    """The result of the creation op `op` (no inputs) on ctx. On a GPU the op's GPU kernel
    fills an array allocated there; elsewhere the op runs on the CPU and its result is placed
    (a context that does not exist fails there, after the op's own checks, as before)."""
    fn = _core.get_op(op)
    gpu = _gpu_id(ctx)
    if gpu is None:
        return _placed(fn(**attrs), ctx)
    (shape, flag), = fn._infer(**attrs)
    return fn(out=_core.empty(shape, flag, 2, gpu), **attrs)


def array(source_array, ctx=None, dtype=None):
    """An NDArray from a list, scalar, NumPy array or NDArray. float32 unless `dtype` is given
    or the source is an NDArray (MXNet's rule); a scalar gives a 0-d array, as in MXNet. The
    result is on `ctx` (default: the current context, also for an NDArray source on another
    context)."""
    ctx = _ctx(ctx)
    if isinstance(source_array, NDArray):
        out = source_array.copy() if dtype is None else source_array.astype(dtype)
        return _place(out, ctx)
    flag = _dtype_flag(dtype) if dtype is not None else _core.DTYPE_FLAGS['float32']
    try:
        arr = _np.asarray(source_array, dtype=_np.dtype(_dtype_name(flag)), order='C')
    except (TypeError, ValueError) as err:
        raise TypeError('source_array must be array like object: %s' % err) from None
    gpu = _gpu_id(ctx)
    if gpu is not None:  # straight from the source's memory onto the GPU
        return _core.from_buffer(arr, flag, 2, gpu)
    return _place(_core.from_buffer(arr, flag), ctx)


def empty(shape, ctx=None, dtype=None):
    """An uninitialised array."""
    shape, flag, gpu = _shape_tuple(shape, bools=True), _dtype_flag(dtype), _gpu_id(ctx)
    if gpu is not None:
        return _core.empty(shape, flag, 2, gpu)
    return _placed(_core.empty(shape, flag), ctx)


def _fill_op(op, shape, dtype, kwargs, ctx):
    """zeros/ones with MXNet's extra keywords: `out` is written and returned (its dtype must be
    the one asked for, float32 by default, as in MXNet); others go to the op, which rejects
    what it does not know. Without `out`, the result is on ctx."""
    attrs = dict(kwargs, shape=_known_shape(op, _shape_tuple(shape)), dtype=_dtype_name(dtype))
    if kwargs.get('out') is not None:
        return _core.get_op(op)(**attrs)
    attrs.pop('out', None)
    return _create(op, ctx, attrs)


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """An array of zeros (float32 by default). Large arrays come zeroed from the system and are
    not written here, so memory that is never used (a gradient in inference) costs nothing.
    `out=` fills that array instead (and returns it); stype must be 'default' (dense)."""
    if stype not in (None, 'default'):
        raise MXNetError("zeros: stype=%r is not supported: only dense ('default') storage"
                         % (stype,))
    if kwargs:
        return _fill_op('_zeros', shape, dtype, kwargs, ctx)
    shape, flag = _known_shape('_zeros', _shape_tuple(shape)), _dtype_flag(dtype)
    gpu = _gpu_id(ctx)
    if gpu is not None:
        return _core.zeros(shape, flag, 2, gpu)
    return _placed(_core.zeros(shape, flag), ctx)


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones (float32 by default); `out=` fills that array instead (and returns it)."""
    return _fill_op('_ones', shape, dtype, kwargs, ctx)


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """A 2-D array with ones on the k-th diagonal (k > 0 above, k < 0 below the main one) and
    zeros elsewhere: N rows, M columns (0: M = N), float32 unless `dtype`; `out=` as in ones."""
    attrs = dict(kwargs, N=N, M=M, k=k, dtype=_dtype_name(dtype))
    if kwargs.get('out') is not None:
        return _core.get_op('_eye')(**attrs)
    attrs.pop('out', None)
    return _create('_eye', ctx, attrs)


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array filled with `val` (float32 by default; `out`, when given, keeps its context)."""
    ctx = _ctx(ctx)
    attrs = dict(shape=_shape_tuple(shape, bools=True), value=val, dtype=_dtype_name(dtype))
    if out is not None:
        return _core.get_op('_full')(out=out, **attrs)
    return _create('_full', ctx, attrs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in [start, stop) (float32 by default), each repeated `repeat` times."""
    # The values go to the op as MXNet reads them (np.float32(0.1) as 0.1), and a bad repeat
    # gets the op's error; bools are no numbers here.
    for name, v in (('start', start), ('stop', stop), ('step', step)):
        if isinstance(v, (bool, _np.bool_)):
            raise _MXNetValueError("Invalid Parameter format for %s expect double%s but "
                                   "value='%s'" % (name, ' or None' * (name == 'stop'), v))
    return _create('_arange', ctx, dict(start=start, stop=stop, step=step, repeat=repeat,
                                        dtype=_dtype_name(dtype)))


def zeros_like(data, **kwargs):
    return _core.get_op('zeros_like')(data, **kwargs)


def ones_like(data, **kwargs):
    return _core.get_op('ones_like')(data, **kwargs)


def concat(*data, **kwargs):
    """Concatenates arrays along `dim` (default 1)."""
    return _core.get_op('Concat')(*data, **kwargs)


def concatenate(arrays, axis=0, always_copy=True):
    """Concatenates a list of arrays along `axis` (default 0)."""
    return _core.get_op('Concat')(*arrays, dim=axis)


def waitall():
    """Waits for all pending work on every GPU (CPU execution is synchronous)."""
    _core.device_sync(2, -1)


def from_dlpack(dlpack):
    """An NDArray sharing memory with a DLPack capsule or any object with `__dlpack__`."""
    return _core.from_dlpack(dlpack)


def to_dlpack_for_read(data):
    return data.__dlpack__()


def to_dlpack_for_write(data):
    return data.__dlpack__()


def _register_ops(namespace, skip):
    """Binds every registered op (and alias) into namespace, except names Python defines."""
    for name in _core.list_ops():
        info = _core.op_info(name)
        fn = _core.get_op(name)
        for n in [name] + info['aliases']:
            if n not in skip and n not in namespace:
                namespace[n] = fn


_register_ops(globals(), _PYTHON_DEFINED)


def _register_internal(module):
    """Binds the ops whose name or alias starts with '_' into nd._internal."""
    for name in _core.list_ops():
        fn = _core.get_op(name)
        for n in [name] + _core.op_info(name)['aliases']:
            if n.startswith('_') and not hasattr(module, n):
                setattr(module, n, fn)


from . import _internal  # noqa: E402
_register_internal(_internal)

from . import contrib, linalg, sparse  # noqa: E402,F401  (after the ops: they bind registry ops)
from . import image  # noqa: E402,F401



# --- MXNet's Python front ends over registry ops (histogram, split_v2, onehot_encode, linspace) -

def histogram(a, bins=10, range=None):  # noqa: A002  (MXNet's keyword)
    """Counts of a's elements in bins, and the bin edges (MXNet's nd.histogram). bins: an int
    (equal bins over range, or over [a.min(), a.max()] when range is None) or an NDArray of
    edges."""
    if isinstance(bins, NDArray):
        return _core.get_op('_histogram')(a, bins)
    if isinstance(bins, (int, _np.integer)) and not isinstance(bins, bool):
        if range is None:
            range = (float(_core.get_op('min')(a).asscalar()),
                     float(_core.get_op('max')(a).asscalar()))
        return _core.get_op('_histogram')(a, bin_cnt=int(bins), range=tuple(range))
    raise ValueError('bins argument should be either an integer or an NDArray')


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Pieces of ary along axis: N equal ones for an int N, else split before each index of the
    tuple (MXNet's nd.split_v2)."""
    axis_size = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or axis_size % indices_or_sections:
            raise ValueError('array split does not result in an equal division')
        size = axis_size // indices_or_sections
        indices = [i * size for i in range(indices_or_sections)]
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError('indices_or_sections must either int or tuple of ints')
    return _core.get_op('_split_v2')(ary, indices=tuple(indices), axis=axis,
                                     squeeze_axis=squeeze_axis)


def onehot_encode(indices, out):
    """Writes the one-hot rows of indices into out (n, k) and returns it (MXNet's legacy
    nd.onehot_encode)."""
    return _core.get_op('_onehot_encode')(indices, out, out=out)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype='float32'):
    """num evenly spaced values from start to stop (stop included when endpoint), MXNet's
    nd.linspace."""
    return _create('_linspace', ctx, dict(start=start, stop=stop, num=num, endpoint=endpoint,
                                          dtype=_dtype_name(dtype)))
