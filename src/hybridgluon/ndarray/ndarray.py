"""NDArray: an n-dimensional array held by the C core (MXNet's `mx.nd.NDArray`).

The C base class (`_core.NDArray`) holds the tensor and implements arithmetic, comparisons, the
buffer protocol, DLPack and axis-0 views; this class adds the rest of MXNet's methods, each a
call to a registered op. NumPy appears only to convert data in and out.
"""
import operator as _operator

import numpy as _np

from .. import _core
from ..base import MXNetError, _dtype_flag, _np_dtype
from ..context import Context, current_context, _check_available  # noqa: F401 (as in MXNet)

__all__ = ['NDArray']

py_slice = slice  # MXNet's module name for the builtin (its NDArray has a slice method)

# MXNet's storage type ids (NDArray.stype); only 'default' (dense) exists here.
_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {'undefined': _STORAGE_TYPE_UNDEFINED, 'default': _STORAGE_TYPE_DEFAULT,
                           'row_sparse': _STORAGE_TYPE_ROW_SPARSE, 'csr': _STORAGE_TYPE_CSR}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


def _op(name):
    return _core.get_op(name)


def _place(arr, ctx):
    """Puts a fresh array (one nobody else holds) on `ctx` and returns it. CPU contexts share
    one memory, so for them this only labels the storage: cpu(i), cpu_pinned(i) and
    cpu_shared(i) stay distinct as in MXNet (an op's output on the last two is cpu(i), as
    there). A GPU, or host memory for an array on a GPU, gets a copy."""
    _check_available(ctx)
    want = (ctx.device_typeid, ctx.device_id)
    have = arr._device
    if have == want:
        return arr
    if want[0] == 2 or have[0] == 2:
        return arr._to_device(*want)
    arr._set_device(*want)
    return arr


class NDArray(_core.NDArray):
    """An n-dimensional array on a device. Create it with `nd.array`, `nd.zeros`, ..."""
    __slots__ = ()
    __array_priority__ = 1000.0

    # ---- attributes --------------------------------------------------------------------
    @property
    def dtype(self):
        """The element type, as a NumPy type (numpy.float32 by default)."""
        return _np_dtype(self._dtype_flag)

    @property
    def context(self):
        """The device holding the array: where it was created (`ctx=`), where `copyto` /
        `as_in_context` put it, or for an op's output the context of the op's first input."""
        dev_type, dev_id = self._device
        return Context(Context.devtype2str[dev_type], dev_id)

    ctx = context

    @property
    def stype(self):
        """Storage type: always 'default' (dense)."""
        return 'default'

    @property
    def T(self):
        """Transpose (a copy); the array itself when it has fewer than 2 dimensions."""
        if self.ndim < 2:
            return self
        return _op('transpose')(self)

    @property
    def handle(self):
        return self._data_ptr

    # ---- autograd ----------------------------------------------------------------------
    def attach_grad(self, grad_req='write', stype=None):
        """Allocates a zero gradient buffer and marks the array as a variable: backward() then
        writes (or adds, grad_req='add') its gradient there, readable as `.grad`."""
        from .. import autograd
        grad = _op('zeros_like')(self)
        autograd.mark_variables([self], [grad], grad_req)

    @property
    def grad(self):
        """The gradient buffer of an array marked with attach_grad, else None."""
        return _core.grad_buffer(self)

    def detach(self):
        """The same data, outside the recorded graph (no gradient flows through it)."""
        return _core.detach(self)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Computes the gradients of this array with respect to the marked variables."""
        from .. import autograd
        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph,
                          train_mode)

    def __repr__(self):
        shape = 'x'.join(str(d) for d in self.shape)
        return '\n%s\n<%s %s @%s>' % (str(self.asnumpy()), type(self).__name__, shape,
                                       self.context)

    __str__ = __repr__

    def __len__(self):
        if self.ndim == 0:
            raise TypeError('len() of a 0-d array')
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError('iteration over a 0-d array')
        for i in range(self.shape[0]):
            yield self[i]

    @property
    def writable(self):
        """Whether the array may be written: always True (MXNet's flag for arrays it shares
        read-only, which this build never makes)."""
        return True

    def as_nd_ndarray(self):
        """The array itself: it already is an `nd.NDArray` (MXNet converts from mx.np)."""
        return self

    def __div__(self, other):
        return self.__truediv__(other)

    def __rdiv__(self, other):
        return self.__rtruediv__(other)

    def __idiv__(self, other):
        return self.__itruediv__(other)

    # ---- pickling: MXNet's state, {'handle': the array in MXNet's binary format} ---------
    def __getstate__(self):
        from .utils import _save_bytes
        from ..util import np_shape
        # A 0-d array is written as a NumPy-shape (V3) record, which keeps it 0-d: a legacy
        # (V2) record would read back as a "none" array. Loading follows the record.
        with np_shape(True if self.ndim == 0 else None):
            raw = _save_bytes([self])
        # The list file is a 24-byte header, the one array, and an empty name list (8 bytes).
        return {'handle': bytearray(raw[24:-8])}

    def __setstate__(self, state):
        """Restores the array `__getstate__` saved (a GPU array loads onto the CPU, as MXNet
        does without GPUs). The data is copied into this array's place: its shape and dtype
        become the saved ones."""
        self._take_handle(_restore(state))

    def __reduce__(self):
        return (_restore, (self.__getstate__(),))

    # ---- DLPack -------------------------------------------------------------------------
    def to_dlpack_for_read(self):
        """A DLPack capsule sharing this array's memory (CPU execution is synchronous, so
        reading and writing need no different waits)."""
        return self.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack capsule sharing this array's memory, for a consumer that writes it."""
        return self.__dlpack__()

    # ---- conversion --------------------------------------------------------------------
    def asnumpy(self):
        """A NumPy copy of the data (from a GPU: after the work that computes it)."""
        host = self._to_device(1, 0) if self._device[0] == 2 else self
        return _np.array(memoryview(host), dtype=self.dtype, copy=True).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        arr = self.asnumpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def asscalar(self):
        """The value of a size-1 array as a NumPy scalar."""
        if self.size != 1:
            raise ValueError('The current array is not a scalar')
        return self.asnumpy().reshape(())[()]

    def item(self):
        return self.asscalar().item()

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        if self.dtype not in (_np.int32, _np.int64, _np.int8, _np.uint8):
            raise TypeError('only integer arrays can be used as an index')
        return int(self.asscalar())

    def astype(self, dtype, copy=True):
        """A copy converted to dtype (the array itself if copy=False and dtype matches)."""
        if not copy and _dtype_flag(dtype) == self._dtype_flag:
            return self
        return _op('Cast')(self, dtype=dtype)

    def copy(self):
        """A deep copy, on the same context (cpu_pinned and cpu_shared too, as MXNet's)."""
        if self.dtype == _np.bool_:  # no op takes bool (and nothing differentiates it)
            from . import empty  # the package's, which places it on the context
            out = empty(self.shape, ctx=self.context, dtype=self.dtype)
            out._copy_from(self)
            return out
        out = _op('_copy')(self)  # an op, so autograd records it (on a GPU too)
        if out._device != self._device:
            out._set_device(*self._device)
        return out

    def copyto(self, other):
        """Copies into another NDArray (same shape) or onto a Context (a new array)."""
        if isinstance(other, NDArray):
            if other.shape != self.shape:
                raise MXNetError('copyto: shape mismatch, source %s vs target %s'
                                 % (self.shape, other.shape))
            if other._dtype_flag != self._dtype_flag:
                other._copy_from(self.astype(other.dtype))
            else:
                other._copy_from(self)
            return other
        if isinstance(other, Context):
            _check_available(other)
            if other.device_typeid == 2 or self._device[0] == 2:
                return self._to_device(other.device_typeid, other.device_id)
            return _place(self.copy(), other)
        raise TypeError('copyto does not support type ' + str(type(other)))

    def as_in_context(self, context):
        """The array on `context`: itself when already there, else a copy there."""
        if context == self.context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def tostype(self, stype):
        if stype != 'default':
            raise MXNetError('only the default (dense) storage type is supported, got %r' % stype)
        return self

    def wait_to_read(self):
        """Waits for the work that computes this array (on a GPU; the CPU is synchronous)."""
        if self._device[0] == 2:
            _core.device_sync(2, self._device[1])

    def wait_to_write(self):
        """Waits for the work that reads or writes this array (on a GPU, as wait_to_read)."""
        if self._device[0] == 2:
            _core.device_sync(2, self._device[1])

    # ---- shape --------------------------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        """A view with a new shape; MXNet's special codes 0, -1, -2, -3, -4 and `reverse`."""
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        elif not shape:
            shape = kwargs.pop('shape', None)
            if shape is None:
                raise TypeError('reshape() needs a shape')
        reverse = kwargs.pop('reverse', False)
        if kwargs:
            raise TypeError('reshape() got unexpected keyword argument(s) %s' % list(kwargs))
        (out_shape, _), = _op('Reshape')._infer(self, shape=tuple(shape), reverse=reverse)
        return self._view(out_shape)

    def reshape_like(self, *args, **kwargs):
        """The op reshape_like on this array (rhs, and lhs_begin/lhs_end/rhs_begin/rhs_end)."""
        return _op('reshape_like')(self, *args, **kwargs)

    def flatten(self, inplace=False):
        """(d0, d1 * d2 * ...): a copy, or with inplace=True a view sharing the data."""
        if not inplace:
            return _op('Flatten')(self)
        n = self.shape[0] if self.ndim else 1
        rest = 1
        for d in self.shape[1:]:
            rest *= d
        return self._view((n, rest))

    def expand_dims(self, axis, inplace=False):
        """A new axis of size 1 at `axis`: a copy, or with inplace=True a view."""
        if not inplace:
            return _op('expand_dims')(self, axis=axis)
        (shape, _), = _op('expand_dims')._infer(self, axis=axis)
        return self._view(shape)

    def squeeze(self, axis=None, inplace=False):
        """Drops axes of size 1: a copy, or with inplace=True a view."""
        if not inplace:
            return _op('squeeze')(self, axis=axis)
        (shape, _), = _op('squeeze')._infer(self, axis=axis)
        return self._view(shape)

    def transpose(self, *axes, **kwargs):
        """The op transpose on this array: the axes as one tuple, as separate integers or as
        `axes=` (MXNet's keyword); other keywords (out, ...) go to the op."""
        if axes and 'axes' in kwargs:
            raise TypeError('transpose: axes given both by position and as axes=')
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = axes[0]
        axes = kwargs.pop('axes', axes)
        if axes is None:
            axes = ()
        return _op('transpose')(self, axes=tuple(axes) if axes else (), **kwargs)

    def swapaxes(self, dim1, dim2):
        return _op('SwapAxis')(self, dim1=dim1, dim2=dim2)

    def broadcast_to(self, shape):
        return _op('broadcast_to')(self, shape=shape)

    def broadcast_like(self, other):
        return _op('broadcast_like')(self, other)

    def split(self, *args, **kwargs):
        return _op('SliceChannel')(self, *args, **kwargs)

    def tile(self, reps):
        return _op('tile')(self, reps=reps)

    def repeat(self, repeats, axis=None):
        return _op('repeat')(self, repeats=repeats, axis=axis)

    def flip(self, axis):
        return _op('reverse')(self, axis=axis)

    def slice_axis(self, axis, begin, end):
        return _op('slice_axis')(self, axis=axis, begin=begin, end=end)

    def take(self, indices, axis=0, mode='clip'):
        return _op('take')(self, indices, axis=axis, mode=mode)

    def pick(self, index, axis=-1, keepdims=False, mode='clip'):
        return _op('pick')(self, index, axis=axis, keepdims=keepdims, mode=mode)

    def one_hot(self, depth, on_value=1.0, off_value=0.0, dtype='float32'):
        return _op('one_hot')(self, depth=depth, on_value=on_value, off_value=off_value,
                              dtype=dtype)

    # ---- math ---------------------------------------------------------------------------
    def clip(self, a_min, a_max):
        return _op('clip')(self, a_min=a_min, a_max=a_max)

    def __floordiv__(self, other):
        q = self / other
        if self.dtype in (_np.float32, _np.float64, _np.float16):
            return _op('floor')(q)
        # Integers: the C division truncates; step down where the signs differ and it was inexact.
        r = self % other
        return (self - r) / other

    def __rfloordiv__(self, other):
        q = other / self
        if self.dtype in (_np.float32, _np.float64, _np.float16):
            return _op('floor')(q)
        r = other % self
        return (other - r) / self

    def __ifloordiv__(self, other):
        self._copy_from(self // other)
        return self

    def __getitem__(self, key):
        from .indexing import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        from .indexing import setitem
        setitem(self, key, value)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether `slc_key` (one slice per axis of `shape`) selects a contiguous block, in
        which case indexing with it gives a view (MXNet's helper of the same name)."""
        from .indexing import slice_is_contiguous
        return slice_is_contiguous(slc_key, shape)


def _reduction(name):
    def method(self, *args, **kwargs):
        return _op(name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = 'See nd.%s.' % name
    return method


def _elementwise(name):
    def method(self, *args, **kwargs):
        return _op(name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = 'See nd.%s.' % name
    return method


for _name in ('sum', 'mean', 'max', 'min', 'prod', 'nansum', 'nanprod', 'argmax', 'argmin',
              'norm', 'topk', 'sort', 'argsort', 'softmax', 'log_softmax'):
    setattr(NDArray, _name, _reduction(_name))
for _name in ('abs', 'sign', 'sqrt', 'rsqrt', 'square', 'exp', 'expm1', 'log', 'log1p', 'log2',
              'log10', 'relu', 'sigmoid', 'tanh', 'sin', 'cos', 'tan', 'floor', 'ceil', 'round',
              'rint', 'trunc', 'fix', 'reciprocal', 'zeros_like', 'ones_like', 'diag',
              'slice', 'slice_like', 'where', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh',
              'erf', 'cbrt'):
    setattr(NDArray, _name, _elementwise(_name))


for _name in ('arcsinh', 'arccosh', 'arctanh', 'degrees', 'radians', 'rcbrt'):
    setattr(NDArray, _name, _elementwise(_name))
# Fluent methods of MXNet's whose ops another part of the registry may provide: bound when
# the op is registered, so the method appears with the op.
_REGISTRY = set(_core.list_ops())
for _name in ('argmax_channel', 'depth_to_space', 'space_to_depth', 'shape_array', 'size_array',
              'softmin'):
    if _name in _REGISTRY:
        setattr(NDArray, _name, _elementwise(_name))
NDArray.broadcast_axes = _elementwise('broadcast_axis')
NDArray.broadcast_axes.__name__ = 'broadcast_axes'
NDArray.pad = _elementwise('Pad')
NDArray.pad.__name__ = 'pad'
NDArray.slice_assign = _elementwise('_slice_assign')
NDArray.slice_assign.__name__ = 'slice_assign'
NDArray.slice_assign_scalar = _elementwise('_slice_assign_scalar')
NDArray.slice_assign_scalar.__name__ = 'slice_assign_scalar'


# ---- functions taking an NDArray or a scalar on either side (MXNet's ndarray.py) ---------------
_NUMERIC = (int, float, _np.generic)


def _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar=None):
    """MXNet's dispatch: two numbers give fn_scalar's Python number; an array and a number the
    scalar op (rfn_scalar, or lfn_scalar for a commutative op, when the number is on the left);
    two arrays the broadcasting op."""
    if isinstance(lhs, _NUMERIC):
        if isinstance(rhs, _NUMERIC):
            return fn_scalar(lhs, rhs)
        return _op(rfn_scalar or lfn_scalar)(rhs, scalar=float(lhs))
    if isinstance(rhs, _NUMERIC):
        return _op(lfn_scalar)(lhs, scalar=float(rhs))
    if isinstance(rhs, NDArray):
        return _op(fn_array)(lhs, rhs)
    raise TypeError('type %s not supported' % str(type(rhs)))


def _ufunc(name, fn_array, fn_scalar, lfn_scalar, rfn_scalar=None, doc=''):
    def fn(lhs, rhs):
        return _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = ('%s of lhs and rhs, element-wise with broadcasting; either may be a scalar '
                  '(two scalars give a Python number).' % doc)
    return fn


def _flag(cond):
    return 1 if cond else 0


add = _ufunc('add', 'broadcast_add', _operator.add, '_plus_scalar', doc='Sum')
subtract = _ufunc('subtract', 'broadcast_sub', _operator.sub, '_minus_scalar',
                  '_rminus_scalar', doc='Difference')
multiply = _ufunc('multiply', 'broadcast_mul', _operator.mul, '_mul_scalar', doc='Product')
divide = _ufunc('divide', 'broadcast_div', _operator.truediv, '_div_scalar', '_rdiv_scalar',
                doc='Quotient')
true_divide = divide
modulo = _ufunc('modulo', 'broadcast_mod', _operator.mod, '_mod_scalar', '_rmod_scalar',
                doc='Remainder')
maximum = _ufunc('maximum', 'broadcast_maximum', lambda x, y: x if x > y else y,
                 '_maximum_scalar', doc='Maximum')
minimum = _ufunc('minimum', 'broadcast_minimum', lambda x, y: x if x < y else y,
                 '_minimum_scalar', doc='Minimum')
equal = _ufunc('equal', 'broadcast_equal', lambda x, y: _flag(x == y), '_equal_scalar',
               doc='1 where equal, else 0,')
not_equal = _ufunc('not_equal', 'broadcast_not_equal', lambda x, y: _flag(x != y),
                   '_not_equal_scalar', doc='1 where different, else 0,')
greater = _ufunc('greater', 'broadcast_greater', lambda x, y: _flag(x > y), '_greater_scalar',
                 '_lesser_scalar', doc='1 where lhs > rhs, else 0,')
greater_equal = _ufunc('greater_equal', 'broadcast_greater_equal', lambda x, y: _flag(x >= y),
                       '_greater_equal_scalar', '_lesser_equal_scalar',
                       doc='1 where lhs >= rhs, else 0,')
lesser = _ufunc('lesser', 'broadcast_lesser', lambda x, y: _flag(x < y), '_lesser_scalar',
                '_greater_scalar', doc='1 where lhs < rhs, else 0,')
lesser_equal = _ufunc('lesser_equal', 'broadcast_lesser_equal', lambda x, y: _flag(x <= y),
                      '_lesser_equal_scalar', '_greater_equal_scalar',
                      doc='1 where lhs <= rhs, else 0,')
logical_and = _ufunc('logical_and', 'broadcast_logical_and', lambda x, y: _flag(x and y),
                     '_logical_and_scalar', doc='Logical and (1 or 0)')
logical_or = _ufunc('logical_or', 'broadcast_logical_or', lambda x, y: _flag(x or y),
                    '_logical_or_scalar', doc='Logical or (1 or 0)')
logical_xor = _ufunc('logical_xor', 'broadcast_logical_xor',
                     lambda x, y: _flag(bool(x) ^ bool(y)), '_logical_xor_scalar',
                     doc='Logical exclusive or (1 or 0)')


def power(base, exp):
    """base ** exp element-wise with broadcasting; either may be a scalar."""
    return _ufunc_helper(base, exp, 'broadcast_power', _operator.pow, '_power_scalar',
                         '_rpower_scalar')


# ---- other functions of MXNet's ndarray.py ------------------------------------------------------
def _axes(axes, ndim, what):
    axes = [axes] if isinstance(axes, int) else list(axes)
    res = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError('%s should verify 0 <= %s < tensor.ndim (%d), got %d'
                             % (what, what.lower(), ndim, a))
        res.append(a % ndim)
    if len(set(res)) != len(res):
        raise ValueError('repeated axis in `%s` argument' % what.lower())
    return res


def moveaxis(tensor, source, destination):
    """Moves the `source` axes (an int or a sequence, negative counting from the end) to the
    `destination` positions, keeping the other axes in order (a transposed copy)."""
    source = _axes(source, tensor.ndim, 'Source')
    destination = _axes(destination, tensor.ndim, 'Destination')
    if len(source) != len(destination):
        raise ValueError('`source` and `destination` arguments must have the same number of '
                         'elements')
    order = [n for n in range(tensor.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return _op('transpose')(tensor, axes=tuple(order))


def from_numpy(ndarray, zero_copy=True, array_cls=NDArray):
    """An NDArray from a NumPy array. zero_copy=True shares the memory (C-contiguous arrays
    only, ValueError otherwise) and, as MXNet, makes the NumPy array read-only; False copies."""
    if not zero_copy or ndarray.size == 0:  # an empty array has no memory to share
        from . import array
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags['C_CONTIGUOUS']:
        raise ValueError('Only c-contiguous arrays are supported for zero-copy')
    if not ndarray.flags['WRITEABLE']:
        # NumPy exports no read-only array through DLPack: one whose own flag was cleared (by
        # an earlier from_numpy) is made writable for the export; a view of read-only memory
        # cannot be, and is copied.
        try:
            ndarray.flags['WRITEABLE'] = True
        except ValueError:
            from . import array
            return array(ndarray, dtype=ndarray.dtype)
    capsule = ndarray.__dlpack__()
    ndarray.flags['WRITEABLE'] = False
    return _core.from_dlpack(capsule)


def _split_v2_method(self, *args, **kwargs):
    from . import split_v2
    return split_v2(self, *args, **kwargs)


NDArray.split_v2 = _split_v2_method
NDArray.split_v2.__name__ = 'split_v2'
NDArray.split_v2.__doc__ = 'See nd.split_v2.'


_V3_RECORD = (0xF993FACA).to_bytes(4, 'little')


def _restore(state):
    """The array of a pickled state, loaded under the shape semantics its record was written
    in (a V3 record: NumPy shape semantics), whatever the current ones are."""
    from .utils import load_frombuffer
    from ..util import np_shape
    header = _np.array([0x112, 0, 1], dtype='<u8').tobytes()
    raw = bytes(state['handle'])
    with np_shape(raw[:4] == _V3_RECORD):
        return load_frombuffer(header + raw + _np.zeros(1, dtype='<u8').tobytes())[0]


_core._set_ndarray_class(NDArray)
