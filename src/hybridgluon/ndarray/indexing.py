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


def _slice_bounds(k, n):
    b, e, s = k.indices(n)
    if not range(b, e, s):  # empty: keep the slice op from reading -1 as "the last index"
        return 0, 0, 1
    return b, e, s


def _index_array(k, n):
    """An int64 NDArray of indices from an int or bool index (list, NumPy or NDArray)."""
    if isinstance(k, NDArray):
        if k._dtype_flag == _core.DTYPE_FLAGS['bool']:
            k = k.asnumpy()
        else:
            return k
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
        return _basic(x, key)
    if any(k is None for k in key):
        raise IndexError('newaxis cannot be combined with array indices')
    # Slices first (keeping the array-indexed axes whole), then one take per array index.
    basic_key = tuple(slice(None) if i in arrays else k for i, k in enumerate(key))
    if any(_is_int(k) for k in basic_key):
        raise IndexError('mixing integer and array indices is not supported; use take')
    out = _basic(x, basic_key) if any(k != slice(None) for k in basic_key) else x
    if len(arrays) == 1:
        ax = arrays[0]
        return _op('take')(out, _index_array(key[ax], out.shape[ax]), axis=ax, mode='raise')
    # Several arrays: broadcast them together and gather on the flattened indexed axes.
    if arrays != list(range(arrays[0], arrays[0] + len(arrays))):
        raise IndexError('array indices must be on adjacent axes')
    idx = [_np.asarray(key[a].asnumpy() if isinstance(key[a], NDArray) else key[a]) for a in arrays]
    idx = _np.broadcast_arrays(*idx)
    dims = [out.shape[a] for a in arrays]
    for i, n in zip(idx, dims):
        if i.size and (i.min() < -n or i.max() >= n):
            raise IndexError('index out of bounds for axis of size %d' % n)
    flat = _np.ravel_multi_index(tuple(_np.where(i < 0, i + n, i) for i, n in zip(idx, dims)),
                                 dims)
    a0 = arrays[0]
    merged = out.shape[:a0] + (int(_np.prod(dims)),) + out.shape[a0 + len(arrays):]
    flat_nd = _core.from_buffer(_np.ascontiguousarray(flat.astype(_np.int64)), 6)
    return _op('take')(out.reshape(merged), flat_nd, axis=a0, mode='raise')


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
    if _is_int(key) or (isinstance(key, slice) and key.step in (None, 1)) or key is Ellipsis:
        _assign_view(getitem(x, key) if key is not Ellipsis else x, value)
        return
    if isinstance(key, (NDArray, list, _np.ndarray)):
        raise MXNetError('assignment through integer or boolean array indices is not supported; '
                         'use slices, or build the array with nd.where')
    key = _expand(key, x.ndim)
    if any(_is_array_index(k) and not _is_int(k) for k in key) or any(k is None for k in key):
        raise MXNetError('assignment supports integer and slice indices only')
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
    v = _value_array(x, value, tuple(shape))
    kw = dict(begin=tuple(begin), end=tuple(end), step=tuple(step))
    if isinstance(v, float):
        res = _op('_slice_assign_scalar')(x, scalar=v, **kw)
    else:
        res = _op('_slice_assign')(x, v, **kw)
    x._copy_from(res)
