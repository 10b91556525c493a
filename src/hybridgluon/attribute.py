"""Attribute scopes (MXNet's `mx.attribute`): `with mx.AttrScope(ctx_group='dev1'):` gives every
symbol created in its body those attributes (explicit ones win); scopes nest, inner values
winning."""
import threading

__all__ = ['AttrScope']


class _CurrentScope(type):
    """`AttrScope.current`, a class attribute as in MXNet: the scope in effect on this
    thread."""

    @property
    def current(cls):
        return current()

    @current.setter
    def current(cls, value):
        AttrScope._current.value = value


class AttrScope(metaclass=_CurrentScope):
    """Attributes (strings by name) for all symbols created inside the `with` block."""
    _current = threading.local()

    def __init__(self, **kwargs):
        self._old_scope = None
        for value in kwargs.values():
            if not isinstance(value, str):
                raise ValueError('Attributes need to be string')
        self._attr = kwargs

    def get(self, attr):
        """The scope's attributes updated with `attr` (the symbol's own), as a new dict."""
        if self._attr:
            ret = self._attr.copy()
            if attr:
                ret.update(attr)
            return ret
        return dict(attr) if attr else {}

    def __enter__(self):
        self._old_scope = current()
        attr = self._old_scope._attr.copy()
        attr.update(self._attr)
        self._attr = attr
        AttrScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        AttrScope._current.value = self._old_scope


def current():
    """The AttrScope in effect on this thread (an empty one outside any `with`)."""
    scope = getattr(AttrScope._current, 'value', None)
    if scope is None:
        scope = AttrScope._current.value = AttrScope()
    return scope
