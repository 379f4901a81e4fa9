"""Attribute scopes (``mx.AttrScope``): attributes given to every symbol
created inside ``with mx.AttrScope(ctx_group='dev1'):``. Thread-local."""
from __future__ import annotations

import threading

__all__ = ["AttrScope", "current"]


class _CurrentMeta(type):
    """``AttrScope.current``: the calling thread's scope, readable and
    assignable on the class (MXNet 1.x's class property)."""

    @property
    def current(cls):
        if not hasattr(AttrScope._current, "value"):
            AttrScope._current.value = AttrScope()
        return AttrScope._current.value

    @current.setter
    def current(cls, value):
        AttrScope._current.value = value


class AttrScope(metaclass=_CurrentMeta):
    """Holds attributes (string values) for the symbols created in its scope.
    Nested scopes merge, the inner one winning. The current one
    (thread-local) is ``AttrScope.current``."""

    _current = threading.local()

    def __init__(self, **kwargs):
        self._old_scope = None
        for value in kwargs.values():
            if not isinstance(value, str):
                raise ValueError("Attributes need to be string")
        self._attr = kwargs

    def get(self, attr):
        """Returns the scope's attributes updated with ``attr`` (a dict or
        None); a new dict."""
        if self._attr:
            ret = self._attr.copy()
            if attr:
                ret.update(attr)
            return ret
        return attr if attr else {}

    def __enter__(self):
        if not hasattr(AttrScope._current, "value"):
            AttrScope._current.value = AttrScope()
        self._old_scope = AttrScope._current.value
        attr = AttrScope._current.value._attr.copy()
        attr.update(self._attr)
        self._attr = attr
        AttrScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        assert self._old_scope
        AttrScope._current.value = self._old_scope


def current():
    """The calling thread's current AttrScope."""
    if not hasattr(AttrScope._current, "value"):
        AttrScope._current.value = AttrScope()
    return AttrScope._current.value
