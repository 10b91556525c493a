"""NDArray indexing. Integers and unit-step slices on axis 0 give views sharing memory (as in
MXNet); other basic indexing runs the `slice` op, integer-array and boolean indexing run `take`
(copies). Assignment writes through views or the `_slice_assign*` ops."""
import numbers

import numpy as _np

from .. import _core
from ..base import MXNetError
from .ndarray import NDArray

_INT_FLAGS = (3, 4, 5, 6)


def _op(name):
    return _core.get_op(name)


def _is_int(k):
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def _is_array_index(k):
    return isinstance(k, (NDArray, list, _np.ndarray)) or isinstance(k, bool)


def _expand(key, ndim):
    """Normalises a key to a tuple of ints/slices/None/arrays with no Ellipsis."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError('an index can only have a single ellipsis')
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > ndim:
        raise IndexError('too many indices for array: array is %d-dimensional, but %d were '
                         'indexed' % (ndim, used))
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(k)
    return tuple(out)


def _basic(x, key):
    """Basic indexing (ints, slices, None) with the slice op; returns a copy."""
    begin, end, step, drop, newaxes = [], [], [], [], []
    axis = 0
    out_dims = 0  # result dimensions produced so far: where a None lands
    for k in key:
        if k is None:
            newaxes.append(out_dims)
            out_dims += 1
            continue
        n = x.shape[axis]
        if _is_int(k):
            i = int(k)
            if i < -n or i >= n:
                raise IndexError('index %d is out of bounds for axis %d with size %d'
                                 % (i, axis, n))
            i = i + n if i < 0 else i
            begin.append(i)
            end.append(i + 1)
            step.append(1)
            drop.append(axis)
        elif isinstance(k, slice):
            if k.step == 0:
                raise ValueError('slice step cannot be zero')
            b, e, s = _slice_bounds(k, n)
            out_dims += 1
            begin.append(b)
            end.append(e if not (s < 0 and e < 0) else None)
            step.append(s)
        else:
            raise IndexError('unsupported index type %s' % type(k).__name__)
        axis += 1
    out = _op('slice')(x, begin=tuple(begin), end=tuple(end), step=tuple(step))
    shape = [d for i, d in enumerate(out.shape) if i not in drop]
    for pos in newaxes:
        shape.insert(pos, 1)
    if not shape:
        shape = [1]
    return out._view(tuple(shape))


def slice_is_contiguous(slc_key, shape):
    """Whether slicing an array of `shape` with `slc_key` (one slice per axis) selects one
    contiguous block of its row-major memory: going from the last axis, once an axis is cut
    to a proper part, every axis before it must keep at most one element; an axis keeping
    several elements must step forward by 1. An empty or one-element result is contiguous."""
    lens = [len(range(*k.indices(n))) for k, n in zip(slc_key, shape)]
    if 0 in lens or int(_np.prod(lens)) == 1:
        return True
    cut = False
    for k, n, m in zip(reversed(slc_key), reversed(shape), reversed(lens)):
        if m > 1 and k.indices(n)[2] != 1:
            return False
        if cut and m > 1:
            return False
        cut = cut or m < n
    return True


def _contiguous_view(x, key):
    """x[key] for ints and slices as a view sharing x's memory when it is one contiguous block
    (as MXNet's basic indexing gives), else None. Ints keep their axis out of the result."""
    if any(k is None for k in key) or x.ndim == 0:
        return None
    key = key + (slice(None),) * (x.ndim - len(key))
    slices, shape = [], []
    for k, n in zip(key, x.shape):
        if _is_int(k):
            i = int(k)
            if i < -n or i >= n:
                return None  # the general path raises the IndexError
            i = i + n if i < 0 else i
            slices.append(slice(i, i + 1))
        else:
            slices.append(k)
            shape.append(len(range(*k.indices(n))))
    if not shape or not slice_is_contiguous(slices, x.shape):
        return None
    size = int(_np.prod([len(range(*k.indices(n))) for k, n in zip(slices, x.shape)]))
    if size == 0:
        return None
    offset, stride = 0, 1
    for k, n in zip(reversed(slices), reversed(x.shape)):
        offset += range(*k.indices(n))[0] * stride
        stride *= n
    return x.reshape((-1,))._slice0(offset, offset + size)._view(tuple(shape))


def _slice_bounds(k, n):
    b, e, s = k.indices(n)
    if not range(b, e, s):  # empty: keep the slice op from reading -1 as "the last index"
        return 0, 0, 1
    return b, e, s


def _index_array(k, n):
    """An int64 NDArray of indices from an int or bool index (list, NumPy or NDArray)."""
    if isinstance(k, NDArray):
        k = k.asnumpy()  # negative entries count from the end, as NumPy's (read here)
    arr = _np.asarray(k)
    if arr.dtype == _np.bool_:
        if arr.ndim != 1 or arr.shape[0] != n:
            raise IndexError('boolean index of shape %s does not match axis of size %d'
                             % (arr.shape, n))
        arr = _np.nonzero(arr)[0]
    if arr.dtype.kind not in 'iuf':
        raise IndexError('arrays used as indices must be of integer or boolean type')
    arr = _np.ascontiguousarray(arr, dtype=_np.int64)
    if arr.size and (arr.min() < -n or arr.max() >= n):
        raise IndexError('index out of bounds for axis of size %d' % n)
    arr = _np.where(arr < 0, arr + n, arr)
    return _core.from_buffer(_np.ascontiguousarray(arr), 6)


def getitem(x, key):
    if _is_int(key):
        return x._at0(key)
    if isinstance(key, slice) and key.step in (None, 1) and x.ndim > 0:
        b, e, _ = key.indices(x.shape[0])
        return x._slice0(b, max(b, e))
    if key is Ellipsis or (isinstance(key, tuple) and key == ()):
        return x
    if isinstance(key, NDArray) or isinstance(key, (list, _np.ndarray)):
        if x.ndim == 0:
            raise IndexError('too many indices for a 0-d array')
        return _op('take')(x, _index_array(key, x.shape[0]), axis=0, mode='raise')
    key = _expand(key, x.ndim)
    arrays = [i for i, k in enumerate(key) if _is_array_index(k) and not _is_int(k)]
    if not arrays:
        if all(_is_int(k) for k in key):
            out = x
            for k in key:
                out = out._at0(k)
            return out
        view = _contiguous_view(x, key)
        return view if view is not None else _basic(x, key)
    if len(arrays) == 1 and not any(k is None or _is_int(k) for k in key):
        # Slices first (keeping the indexed axis whole), then one take on that axis.
        ax = arrays[0]
        basic_key = tuple(slice(None) if i == ax else k for i, k in enumerate(key))
        out = _basic(x, basic_key) if any(k != slice(None) for k in basic_key) else x
        return _op('take')(out, _index_array(key[ax], out.shape[ax]), axis=ax, mode='raise')
    flat = _flat_positions(x, key)
    return _op('take')(x.reshape((-1,)), _int64_nd(flat.reshape(-1)), axis=0,
                       mode='raise').reshape(flat.shape or (1,))


def _numpy_key(k):
    """An index part as NumPy reads it: NDArrays become NumPy arrays (integer, or bool for a
    bool array; float indices are truncated, as MXNet casts them)."""
    if isinstance(k, NDArray):
        k = k.asnumpy()
    if isinstance(k, (list, _np.ndarray)):
        k = _np.asarray(k)
        if k.dtype.kind == 'f':
            k = k.astype(_np.int64)
    return k


def _flat_positions(x, key):
    """The flat positions of x that a NumPy-style advanced index selects, in the result's
    shape: index arithmetic only (NumPy applies the indexing rules), the data never leaves C."""
    key = tuple(_numpy_key(k) for k in key)
    return _np.arange(x.size, dtype=_np.int64).reshape(x.shape)[key]


def _int64_nd(arr):
    return _core.from_buffer(_np.ascontiguousarray(arr, dtype=_np.int64), 6)


def _value_array(x, value, shape):
    """value as an NDArray of x's dtype broadcast to shape, or a float for scalars."""
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, NDArray):
        value = _core.from_buffer(_np.ascontiguousarray(value, dtype=x.dtype), x._dtype_flag)
    elif value._dtype_flag != x._dtype_flag:
        value = value.astype(x.dtype)
    while value.ndim > len(shape) and value.shape[0] == 1:  # NumPy drops leading 1s
        value = value.reshape(value.shape[1:])
    if value.shape != tuple(shape):
        if value.size == _np.prod(shape, dtype=_np.int64) and value.ndim != len(shape):
            value = value.reshape(shape)
        else:
            if value.ndim < len(shape):  # right-align, as NumPy broadcasting does
                value = value.reshape((1,) * (len(shape) - value.ndim) + value.shape)
            value = _op('broadcast_to')(value, shape=tuple(shape))
    return value


def _assign_view(view, value):
    v = _value_array(view, value, view.shape)
    if isinstance(v, float):
        _op('_full')(shape=view.shape, value=v, dtype=view.dtype.__name__, out=view)
    else:
        view._copy_from(v)


def setitem(x, key, value):
    if x._in_graph or (isinstance(value, NDArray) and value._in_graph):
        raise MXNetError('Inplace operations (+=, -=, x[:]=, etc) are not supported when '
                         'recording with autograd.')
    if _is_int(key) or (isinstance(key, slice) and key.step in (None, 1)) or key is Ellipsis:
        _assign_view(getitem(x, key) if key is not Ellipsis else x, value)
        return
    key = _expand(key, x.ndim)
    if any(_is_array_index(k) and not _is_int(k) for k in key):
        _advanced_assign(x, key, value)
        return
    key = tuple(k for k in key if k is not None)  # MXNet ignores newaxis in assignment
    begin, end, step, shape = [], [], [], []
    for axis, k in enumerate(key):
        n = x.shape[axis]
        if _is_int(k):
            i = int(k)
            if i < -n or i >= n:
                raise IndexError('index %d is out of bounds for axis %d with size %d'
                                 % (i, axis, n))
            i = i + n if i < 0 else i
            begin.append(i)
            end.append(i + 1)
            step.append(1)
            shape.append(1)
        else:
            b, e, s = _slice_bounds(k, n)
            begin.append(b)
            end.append(e if not (s < 0 and e < 0) else None)
            step.append(s)
            shape.append(len(range(b, e, s)))
    shape += list(x.shape[len(key):])
    # The value broadcasts to NumPy's result shape (integer-indexed axes dropped), then takes
    # the slice's shape (those axes of size 1).
    kept = [d for d, k in zip(shape, key + (slice(None),) * (len(shape) - len(key)))
            if not _is_int(k)]
    v = _value_array(x, value, tuple(kept) or (1,))
    if not isinstance(v, float):
        v = v.reshape(tuple(shape))
    kw = dict(begin=tuple(begin), end=tuple(end), step=tuple(step))
    if isinstance(v, float):
        res = _op('_slice_assign_scalar')(x, scalar=v, **kw)
    else:
        res = _op('_slice_assign')(x, v, **kw)
    x._copy_from(res)


def _advanced_assign(x, key, value):
    """x[key] = value for an index with integer or boolean arrays, NumPy's rules (the last of
    repeated positions wins): for every element of x, whether it is written and from which
    element of the broadcast value, then one take and one where in C."""
    flat = _flat_positions(x, key)
    n = x.size
    v = _value_array(x, value, flat.shape or (1,))
    src = _np.zeros(n, dtype=_np.int64)
    src[flat.reshape(-1)] = _np.arange(flat.size, dtype=_np.int64)
    written = _np.zeros(n, dtype=_np.bool_)
    written[flat.reshape(-1)] = True
    if isinstance(v, float):
        vals = _op('_full')(shape=(n,), value=v, dtype=x.dtype.__name__)
    else:
        vals = _op('take')(v.reshape((-1,)), _int64_nd(src), axis=0, mode='clip')
    cond = _core.from_buffer(written.astype(x.dtype), x._dtype_flag)
    x._copy_from(_op('where')(cond, vals, x.reshape((-1,))).reshape(x.shape))
