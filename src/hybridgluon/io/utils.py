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


_FLOAT_TOKEN = None


def _dmlc_strtof(tokens, what):
    """float32 values of decimal strings, rounded as MXNet's text parsers (dmlc's ParseFloat)
    round them, so values read here equal MXNet's to the bit: the integer part and up to 19
    fraction digits are read as integers, the fraction becomes float64 val / 10**digits, and the
    two are added in float32, then scaled by the exponent in float32. (A correctly rounded
    parse differs from it in the last bit for some inputs.)"""
    import re
    global _FLOAT_TOKEN
    if _FLOAT_TOKEN is None:
        _FLOAT_TOKEN = re.compile(r'([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?)(\d+))?$')
    n = len(tokens)
    ipart = np.empty(n, np.float32)
    frac = np.empty(n, np.float64)
    scale_exp = np.zeros(n, np.int64)
    negative = np.zeros(n, bool)
    special = {}
    mask = (1 << 64) - 1
    for k, tok in enumerate(tokens):
        m = _FLOAT_TOKEN.match(tok)
        if m is None or not (m.group(2) or m.group(3)):
            low = tok.lower().lstrip('+-')
            if low in ('inf', 'infinity', 'nan'):
                special[k] = float(tok)
                ipart[k], frac[k] = 0, 0
                continue
            raise ValueError('%s: %r is not a number' % (what, tok))
        sign, whole, fraction, esign, expo = m.groups()
        negative[k] = sign == '-'
        ipart[k] = np.float32(int(whole or '0') & mask)
        digits = (fraction or '')[:19]
        frac[k] = int(digits) / float(10 ** len(digits)) if digits else 0.0
        if expo:
            e = int(expo)
            scale_exp[k] = -e if esign == '-' else e
    value = ipart + frac.astype(np.float32)
    scaled = np.nonzero(scale_exp)[0]
    for k in scaled:  # rare: a loop keeps dmlc's order of float32 products
        e = abs(int(scale_exp[k]))
        scale = np.float32(1)
        while e >= 8:
            scale, e = scale * np.float32(1e8), e - 8
        while e > 0:
            scale, e = scale * np.float32(10), e - 1
        value[k] = value[k] / scale if scale_exp[k] < 0 else value[k] * scale
    value[negative] = -value[negative]
    for k, v in special.items():
        value[k] = v
    return value
