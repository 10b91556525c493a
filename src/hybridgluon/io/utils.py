"""Helpers of the data iterators: the canonical (name, array) list an iterator keeps, and the
reordering and slicing it does on it.

Every source becomes a sorted list of (name, array) pairs, so the order of `provide_data`
does not depend on how the caller spelled the data (MXNet's rule). NumPy and other array-likes
become NDArrays once, at construction; an h5py.Dataset stays as it is and is read a batch at a
time.
"""
import numpy as np

from ..ndarray import NDArray

try:  # h5py is optional: MXNet reads its datasets lazily when it is installed
    import h5py
except ImportError:  # pragma: no cover - depends on the environment
    h5py = None

__all__ = []


def _is_h5(value):
    return h5py is not None and isinstance(value, h5py.Dataset)


def _is_source(value):
    return isinstance(value, (np.ndarray, NDArray)) or _is_h5(value)


def _init_data(data, allow_empty, default_name):
    """`data` (None, an array, a list of arrays or a dict name -> array) as a sorted list of
    (name, NDArray or h5py.Dataset). One unnamed array is called `default_name`; several are
    `_<i>_<default_name>`."""
    from .. import ndarray as nd
    if data is None:
        if not allow_empty:
            raise ValueError('data must be given (an array, a list of arrays or a dict of them)')
        data = []
    if _is_source(data):
        data = [data]
    if isinstance(data, (list, tuple)):
        data = list(data)
        if not data and not allow_empty:
            raise ValueError('data must not be an empty list')
        if len(data) == 1:
            data = {default_name: data[0]}
        else:
            data = {'_%d_%s' % (i, default_name): d for i, d in enumerate(data)}
    if not isinstance(data, dict):
        raise TypeError('Input must be NDArray, numpy.ndarray, h5py.Dataset, a list of them or '
                        'dict with them as values, got %s' % type(data).__name__)
    out = {}
    for name, value in data.items():
        if isinstance(value, NDArray) or _is_h5(value):
            out[name] = value
            continue
        try:
            out[name] = nd.array(value)
        except Exception as err:  # any failure to make an array is the caller's type error
            raise TypeError("Invalid type '%s' for %s, should be NDArray, numpy.ndarray or "
                            "h5py.Dataset" % (type(value), name)) from err
    return sorted(out.items())


def _has_instance(data, kind):
    """Whether any array of the (name, array) list is an instance of `kind`."""
    return any(isinstance(arr, kind) for _, arr in data)


def _getdata_by_idx(data, idx):
    """The (name, array) list with every NDArray's rows taken in the order `idx` (an integer
    NumPy array); h5py datasets are left in place (they are read in `idx` order later)."""
    from .. import ndarray as nd
    out = []
    for name, arr in data:
        if isinstance(arr, NDArray):
            index = nd.array(idx, ctx=arr.context, dtype='int64')
            arr = nd.take(arr, index, axis=0)
        out.append((name, arr))
    return out


def _slice_along_batch_axis(data, s, batch_axis):
    """Rows s.start:s.stop of `data` along `batch_axis`."""
    return data.slice_axis(axis=batch_axis, begin=s.start, end=s.stop)



def _text_files(path, who, what):
    """The files at `path`: the file itself, or a directory's files in the order the file
    system lists them (not sorted: MXNet's dmlc reads them in that order, so batches come in
    the same order as MXNet's on the same machine)."""
    import os
    from ..base import MXNetError
    if os.path.isdir(path):
        names = os.listdir(path)
        return [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
    if os.path.isfile(path):
        return [path]
    raise MXNetError('%s: cannot find %s file %s' % (who, what, path))


def _first_line_start(blob, t):
    """The first position >= t at which a line of `blob` starts (len(blob) if none)."""
    if t <= 0:
        return 0
    nl = blob.find(b'\n', t - 1)
    return len(blob) if nl < 0 else nl + 1


def _text_chunks(path, who, what, num_parts=1, part_index=0):
    """[(file name, number of its first line, bytes)] holding part `part_index` of `num_parts`
    of the text file(s) at `path`, split as MXNet's (dmlc's) line splitter splits them: the
    bytes of all files are cut into ranges of ceil(total / num_parts) bytes, and a part starts
    just after the first end of line at or after its range's first byte (at byte 0 for the
    first part), so a line belongs to the part whose range holds the newline before it."""
    blobs = []
    for name in _text_files(path, who, what):
        with open(name, 'rb') as f:
            blobs.append((name, f.read()))
    total = sum(len(b) for _, b in blobs)
    step = (total + num_parts - 1) // num_parts
    lo, hi = min(step * part_index, total), min(step * (part_index + 1), total)
    chunks, base = [], 0
    for name, blob in blobs:
        # Line start s is owned when lo <= max(base + s - 1, 0) < hi: a contiguous run of lines.
        start = 0 if lo == 0 else _first_line_start(blob, lo - base + 1)
        stop = len(blob) if hi == total else _first_line_start(blob, hi - base + 1)
        if hi == 0:
            stop = 0
        if start < stop:
            chunks.append((name, blob.count(b'\n', 0, start) + 1, blob[start:stop]))
        base += len(blob)
    return chunks
