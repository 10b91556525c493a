"""`nd.save`, `nd.load` and `nd.load_frombuffer`: MXNet's binary NDArray-list format (`.params`).

Files are byte-identical to MXNet 1.9.1's; the reader and writer are in C
(csrc/formats/ndlist.c). A file holds either a list of arrays or a dict of named arrays.
"""
import os

from .. import _core
from .ndarray import NDArray

__all__ = ['save', 'load', 'load_frombuffer']

_BAD_ITEMS = 'save only accept dict str->NDArray or list of NDArray'


def _fspath(fname):
    if isinstance(fname, str):
        return fname
    if isinstance(fname, os.PathLike):
        return os.fspath(fname)
    raise TypeError('fname required to be a string')


def _split(data):
    """(arrays, names or None) for what `save` accepts; MXNet's errors otherwise."""
    if isinstance(data, NDArray):
        return [data], None
    if isinstance(data, dict):
        names, arrays = list(data.keys()), list(data.values())
        if any(not isinstance(k, str) for k in names) or \
                any(not isinstance(v, NDArray) for v in arrays):
            raise TypeError(_BAD_ITEMS)
        return arrays, names
    if isinstance(data, (list, tuple)):
        arrays = list(data)
        if any(not isinstance(v, NDArray) for v in arrays):
            raise TypeError(_BAD_ITEMS)
        return arrays, None
    raise ValueError('data needs to either be a NDArray, dict of str, NDArray pairs '
                     'or a list of NDarrays.')


def _result(arrays, names):
    if names is None:
        return arrays
    return dict(zip(names, arrays))  # a repeated name keeps its last array, as in MXNet


def save(fname, data):
    """Saves a list of NDArrays or a dict of str->NDArray to `fname` in MXNet's binary format.

    A single NDArray is saved as a 1-element list. The file is written to a temporary file
    next to `fname` and renamed into place, so a failed save never leaves a partial file.

    Parameters
    ----------
    fname : str
        The file name.
    data : NDArray, list of NDArray or dict of str to NDArray
        The data to save.
    """
    fname = _fspath(fname)
    arrays, names = _split(data)
    _replace_files([(fname, 'NDArray file', (arrays, names))])


def _replace_files(jobs):
    """Writes files so that no reader ever sees one half-written: the one path of every model
    file writer (`nd.save`, `save_parameters`, `Symbol.save`, `HybridBlock.export`).

    jobs: (fname, what, payload) triples; payload is bytes or (arrays, names or None) for an
    NDArray file; what names the kind of file in errors. Each file is written to a new
    temporary file beside its target (a symlink's target: the link stays) with the mode of the
    file it replaces (a new one gets open()'s, 0666 less the umask), flushed to disk; only when
    every one is written are they renamed into place, in the order given. A failure removes
    the temporary files and raises MXNetError("Cannot save <what> '<fname>': <reason>").
    """
    _core.replace_files([(_fspath(f), what, payload) for f, what, payload in jobs])


def load(fname):
    """Loads an NDArray file (`nd.save`, Gluon `.params`, MXNet-written files alike).

    Returns a list of NDArrays for a list file and a dict of str->NDArray for a dict file
    (an empty dict file loads as an empty list, as in MXNet).
    """
    arrays, names = _core.ndlist_load(_fspath(fname))
    return _result(arrays, names)


def load_frombuffer(buf):
    """Loads an NDArray file from its bytes (as returned by reading a `.params` file)."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError('buf required to be a string or bytes')
    arrays, names = _core.ndlist_load_bytes(buf)
    return _result(arrays, names)


def _save_bytes(data):
    """The bytes `save` would write for `data` (used by tests and in-memory checkpoints)."""
    arrays, names = _split(data)
    return _core.ndlist_save_bytes(arrays, names)
