"""Automatic naming (MXNet's `mx.name`), shared by Gluon blocks and symbols.

`NameManager.current` (a class attribute, as in MXNet) hands out `hint + count` names
(`dense0`, `fullyconnected0`), one counter per hint, per thread. `with NameManager():` starts
fresh counters for its body; `with Prefix('net_'):` also prepends a prefix to every name it
returns, explicit ones too.
"""
import threading

__all__ = ['NameManager', 'Prefix', 'current']


class _CurrentManager(type):
    """`NameManager.current`: the manager in effect on this thread, a class attribute (MXNet's
    classproperty) that can also be assigned."""

    @property
    def current(cls):
        return current()

    @current.setter
    def current(cls, value):
        NameManager._current.value = value


class NameManager(metaclass=_CurrentManager):
    """Returns unique names: an explicit name passes through, otherwise `hint + count`."""
    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """`name` if given, else `hint` followed by how many times `hint` was used before."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return '%s%d' % (hint, count)

    def __enter__(self):
        self._old_manager = current()
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        NameManager._current.value = self._old_manager
        self._old_manager = None


class Prefix(NameManager):
    """A NameManager that prepends `prefix` to every name it returns."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """The NameManager in effect on this thread (created on first use)."""
    manager = getattr(NameManager._current, 'value', None)
    if manager is None:
        manager = NameManager._current.value = NameManager()
    return manager
