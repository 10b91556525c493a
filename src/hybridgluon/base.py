"""Errors and dtype helpers shared by the whole package (MXNet's `mxnet.base`), and MXNet's
ctypes names for calling the C library (`_LIB` is libhybridgluon: its functions are hybridgluon's
`hg_*` C API, not MXNet's `MX*` one)."""
import ctypes
import os as _os
import platform as _platform

import numpy as _np

from . import _core

__all__ = ['MXNetError', 'MXNetValueError', 'MXNetTypeError', 'MXNetIndexError',
           'NotImplementedForSymbol']


string_types = (str,)
integer_types = (int, _np.integer)
numeric_types = (float, int, _np.generic)


mx_uint = ctypes.c_uint
mx_int = ctypes.c_int
mx_float = ctypes.c_float
mx_float_p = ctypes.POINTER(mx_float)
mx_real_t = _np.float32
NDArrayHandle = ctypes.c_void_p
SymbolHandle = ctypes.c_void_p
ExecutorHandle = ctypes.c_void_p


def c_str(string):
    """A C string (bytes, UTF-8) from a Python string."""
    return ctypes.c_char_p(string.encode('utf-8'))


def c_str_array(strings):
    """A C array of C strings."""
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode('utf-8') for s in strings]
    return arr


def c_array(ctype, values):
    """A C array of `ctype` holding values."""
    out = (ctype * len(values))()
    out[:] = values
    return out


def c_array_buf(ctype, buf):
    """A C array of `ctype` over the memory of `buf` (an array.array or other buffer)."""
    return (ctype * len(buf)).from_buffer(buf)


def c_handle_array(objs):
    """A C array of the `.handle`s of objs."""
    arr = (ctypes.c_void_p * len(objs))()
    arr[:] = [o.handle for o in objs]
    return arr


def check_call(ret):
    """Raises MXNetError with the library's last error message when a C call of `_LIB`
    returned a nonzero status."""
    if ret != 0:
        raise MXNetError(py_str(__getattr__('_LIB').hg_last_error()))


_LIB_CACHE = []


def __getattr__(name):
    # `_LIB` is loaded on first use: most programs never call the C library through ctypes.
    if name == '_LIB':
        if not _LIB_CACHE:
            from .libinfo import get_lib_dir
            lib = ctypes.CDLL(_os.path.join(get_lib_dir(), 'libhybridgluon.so'))
            lib.hg_last_error.restype = ctypes.c_char_p
            _LIB_CACHE.append(lib)
        return _LIB_CACHE[0]
    raise AttributeError('module %r has no attribute %r' % (__name__, name))


def _as_list(obj):
    """obj itself when a list, else [obj]."""
    return obj if isinstance(obj, list) else [obj]


def py_str(x):
    """Text from the bytes a C call returned (UTF-8)."""
    return x.decode('utf-8')


def data_dir_default():
    """MXNet's data folder when MXNET_HOME is not set: ~/.mxnet (%APPDATA%/mxnet on Windows)."""
    if _platform.system() == 'Windows':
        return _os.path.join(_os.environ.get('APPDATA', ''), 'mxnet')
    return _os.path.join(_os.path.expanduser('~'), '.mxnet')


def data_dir():
    """Where models and datasets are stored: $MXNET_HOME, else data_dir_default()."""
    return _os.getenv('MXNET_HOME', data_dir_default())


class MXNetError(RuntimeError):
    """Error raised by the hybridgluon core (MXNet's `mxnet.base.MXNetError`)."""


# The core raises these by status; a traceback names them (hybridgluon.base.MXNetValueError),
# so the names are public. Each is caught by `except mx.MXNetError` and by the built-in.
class MXNetValueError(MXNetError, ValueError):
    """An MXNetError about a bad value, shape or attribute; also a ValueError."""


class MXNetTypeError(MXNetError, TypeError):
    """An MXNetError about a wrong dtype or argument type; also a TypeError."""


class MXNetIndexError(MXNetError, IndexError):
    """An MXNetError about an out-of-range index; also an IndexError."""


# The names they had before (still used inside the package).
_MXNetValueError = MXNetValueError
_MXNetTypeError = MXNetTypeError
_MXNetIndexError = MXNetIndexError


class NotImplementedForSymbol(MXNetError):
    """Raised when an NDArray-only function is called on a Symbol."""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__ if callable(function) else str(function)
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = 'Function {}'.format(self.function)
        if self.alias:
            msg += ' (namely operator "{}")'.format(self.alias)
        if self.args:
            msg += ' with arguments ({})'.format(', '.join(self.args))
        msg += ' is not implemented for Symbol and only available in NDArray.'
        return msg


_core._set_error_classes(MXNetError, MXNetValueError, MXNetTypeError, MXNetIndexError)

# MXNet type flags <-> NumPy types.
_FLAG_TO_NP = {0: _np.float32, 1: _np.float64, 2: _np.float16, 3: _np.uint8, 4: _np.int32,
               5: _np.int8, 6: _np.int64, 7: _np.bool_}
_NP_TO_FLAG = {_np.dtype(v): k for k, v in _FLAG_TO_NP.items()}
_FLAG_TO_NAME = {0: 'float32', 1: 'float64', 2: 'float16', 3: 'uint8', 4: 'int32', 5: 'int8',
                 6: 'int64', 7: 'bool'}


def _dtype_flag(dtype):
    """MXNet type flag of a dtype given as a name, NumPy dtype or type. Raises TypeError."""
    if dtype is None:
        return 0
    if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype in _FLAG_TO_NP:
        return dtype
    try:
        return _NP_TO_FLAG[_np.dtype(dtype)]
    except (KeyError, TypeError):
        raise MXNetTypeError('unsupported dtype %r (supported: %s)'
                             % (dtype, ', '.join(_FLAG_TO_NAME.values()))) from None


def _dtype_name(dtype):
    return _FLAG_TO_NAME[_dtype_flag(dtype)]


def _np_dtype(flag):
    return _FLAG_TO_NP[flag]


def _symbol_fallback(op_name, args, kwargs):
    """Called by the C op functions when an input is not an NDArray (a Symbol while tracing)."""
    handler = _SYMBOL_HANDLER[0]
    if handler is None:
        raise TypeError('%s: inputs must be NDArrays' % op_name)
    return handler(op_name, args, kwargs)


_SYMBOL_HANDLER = [None]
_core._set_op_hooks(_symbol_fallback, _dtype_name)


def _register_prefixed(namespace, prefix, make):
    """Binds every registered op (and alias) named `prefix` + X into `namespace` as X, the way
    MXNet lays out `nd.contrib` (`_contrib_*`) and `nd.linalg` (`_linalg_*`). make(op, short)
    gives the function. Names already bound (Python-defined) are left alone."""
    from . import _core
    for name in _core.list_ops():
        for n in [name] + _core.op_info(name)['aliases']:
            if n.startswith(prefix) and len(n) > len(prefix):
                namespace.setdefault(n[len(prefix):], make(name, n[len(prefix):]))


def _cf_regroup(args, fmt):
    """The control-flow functions' (nd.contrib and sym.contrib foreach/while_loop/cond) inverse
    of flattening nested lists: (the values `fmt` describes, the rest of args). fmt is 0 for a
    bare value, n for a list of n values (a Symbol of n outputs), or a list of nested formats."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for f in fmt:
        res, args = _cf_regroup(args, f)
        ret.append(res)
    return ret, args


def _write_file_atomic(fname, data):
    """Writes `data` (bytes) to `fname` through a new file beside it renamed into place, so a
    reader (or a crash) sees the old file or the whole new one, never a part."""
    tmp = '%s.tmp.%d' % (fname, _os.getpid())
    try:
        with open(tmp, 'wb') as fout:
            fout.write(data)
        _os.replace(tmp, fname)
    except BaseException:
        try:
            _os.remove(tmp)
        except OSError:
            pass
        raise
