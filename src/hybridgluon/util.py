"""MXNet's `mx.util`: environment access and the NumPy-semantics switches.

hybridgluon implements MXNet's classic (legacy) NDArray semantics only: `is_np_array()` and
`is_np_shape()` are always False, `np_shape(False)` / `np_array(False)` are no-ops, and turning
either on raises MXNetError (mx.np is not provided; docs/compat.md).
"""
import contextlib
import functools
import os

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


def is_np_shape():
    return False


def _refuse(what, active):
    if active:
        raise MXNetError('%s(True): NumPy semantics (mx.np) are not supported by hybridgluon; '
                         'only the classic NDArray semantics are' % what)
    return False


def set_np_shape(active):
    """Returns the previous state (always False); True raises MXNetError."""
    return _refuse('set_np_shape', active)


def set_np(shape=True, array=True, dtype=False):
    _refuse('set_np', shape or array or dtype)


def reset_np():
    """Classic semantics: what is always in effect here."""


@contextlib.contextmanager
def np_shape(active=True):
    """Scope with NumPy shape semantics; only active=False (what is always in effect) is
    supported."""
    _refuse('np_shape', active)
    yield


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
    """MXNet's decorator running func (or a class's methods) under NumPy shape semantics: the
    result raises MXNetError when called (a class: when instantiated)."""
    return _refusing(func, 'use_np_shape')


def use_np_array(func):
    """As use_np_shape, for NumPy array semantics (mx.np arrays)."""
    return _refusing(func, 'use_np_array')


def use_np(func):
    """MXNet's `use_np` (use_np_shape and use_np_array): raises MXNetError when used."""
    return _refusing(func, 'use_np')
