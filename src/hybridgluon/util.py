"""MXNet's `mx.util`: environment access and the NumPy-semantics switches.

NumPy shape semantics (`np_shape`, `set_np_shape`, `use_np_shape`) are a per-thread flag as in
MXNet: with it on, `()` is a scalar shape and 0 a zero-size dimension for the classic NDArray
and Symbol API. NumPy array semantics (mx.np arrays) are not provided: `is_np_array()` is always
False and turning them on raises MXNetError (docs/compat.md).
"""
import contextlib
import functools
import inspect
import os
import threading

from . import _core
from .base import MXNetError
from .context import num_gpus

__all__ = ['getenv', 'setenv', 'makedirs', 'get_gpu_count', 'is_np_array', 'is_np_shape',
           'np_shape', 'np_array', 'set_np_shape', 'set_np', 'reset_np', 'use_np_shape',
           'use_np_array', 'use_np']


def getenv(name):
    """The value of environment variable `name` as the library sees it (None when unset)."""
    return os.environ.get(name)


def setenv(name, value):
    """Sets (value None: unsets) an environment variable for Python and the library alike."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def makedirs(d):
    """Creates folder d and its parents; an existing folder is fine."""
    os.makedirs(os.path.expanduser(d), exist_ok=True)


def get_gpu_count():
    return num_gpus()


def is_np_array():
    return False


_NP_SHAPE = threading.local()


def is_np_shape():
    """Whether NumPy shape semantics are on in this thread: `()` is a scalar (0-d) shape and 0
    a zero-size dimension, where the legacy semantics (the default) read both as unknown."""
    return getattr(_NP_SHAPE, 'active', False)


def _refuse(what, active):
    if active:
        raise MXNetError('%s(True): NumPy array semantics (mx.np arrays) are not supported by '
                         'hybridgluon; only the classic NDArray semantics are' % what)
    return False


def set_np_shape(active):
    """Turns NumPy shape semantics on or off for this thread; returns the previous state."""
    prev = is_np_shape()
    _NP_SHAPE.active = bool(active)
    _core._set_np_shape(_NP_SHAPE.active)  # the C side: NDArray files (V3 records, 0-d arrays)
    return prev


def set_np(shape=True, array=True, dtype=False):
    """MXNet's `set_np`: NumPy shape semantics follow `shape`; array (mx.np arrays) and dtype
    semantics are not provided, so turning them on raises MXNetError."""
    _refuse('set_np', array or dtype)
    set_np_shape(shape)


def reset_np():
    """Back to the classic semantics."""
    set_np_shape(False)


class _NumpyShapeScope:
    """The scope `np_shape(active)` returns: sets the thread's NumPy shape semantics on entry
    and restores the previous state on exit (active=None leaves the state alone)."""

    def __init__(self, active):
        self._active = active
        self._prev = None

    def __enter__(self):
        if self._active is not None:
            self._prev = set_np_shape(self._active)
        return self

    def __exit__(self, ptype, value, trace):
        if self._active is not None:
            set_np_shape(self._prev)


def np_shape(active=True):
    """A scope (for `with`) running its body with NumPy shape semantics on (or off)."""
    return _NumpyShapeScope(active)


@contextlib.contextmanager
def np_array(active=True):
    _refuse('np_array', active)
    yield


def _refusing(func, what):
    """func (a function, or a class: its __init__) made to raise MXNetError when used: the
    decorator itself succeeds, so a module that decorates a block or a test still imports."""
    if isinstance(func, type):
        init = func.__init__

        @functools.wraps(init)
        def refused_init(self, *args, **kwargs):
            _refuse(what, True)
        func.__init__ = refused_init
        return func

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _refuse(what, True)
    return wrapped


def use_np_shape(func):
    """MXNet's decorator: a function runs under NumPy shape semantics; a class gets its
    methods, static functions and properties so wrapped."""
    if inspect.isclass(func):
        def wanted(f):
            return inspect.isfunction(f) or inspect.ismethod(f) or isinstance(f, property)
        for name, member in inspect.getmembers(func, predicate=wanted):
            if isinstance(member, property):
                setattr(func, name, property(use_np_shape(member.__get__), member.__set__,
                                             member.__delattr__, member.__doc__))
            else:
                setattr(func, name, use_np_shape(member))
        return func
    if callable(func):
        @functools.wraps(func)
        def with_np_shape(*args, **kwargs):
            with np_shape(active=True):
                return func(*args, **kwargs)
        return with_np_shape
    raise TypeError('use_np_shape can only decorate classes and callable objects, while '
                    'received a %s' % type(func))


def use_np_array(func):
    """As use_np_shape, for NumPy array semantics (mx.np arrays)."""
    return _refusing(func, 'use_np_array')


def use_np(func):
    """MXNet's `use_np` (use_np_shape and use_np_array): raises MXNetError when used."""
    return _refusing(func, 'use_np')
