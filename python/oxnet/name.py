"""Automatic naming of symbols (``mx.name``): ``NameManager`` and ``Prefix``.

A symbol created without ``name=`` is named ``hint + count`` by the current
manager (``fullyconnected0``, ``_plus1``); ``with mx.name.Prefix('net_'):``
prepends a prefix. The current manager is thread-local.
"""
from __future__ import annotations

import threading

__all__ = ["NameManager", "Prefix", "current"]


class _CurrentMeta(type):
    """``NameManager.current``: the calling thread's manager, readable and
    assignable on the class (MXNet 1.x's class property)."""

    @property
    def current(cls):
        if not hasattr(NameManager._current, "value"):
            NameManager._current.value = NameManager()
        return NameManager._current.value

    @current.setter
    def current(cls, value):
        NameManager._current.value = value


class NameManager(metaclass=_CurrentMeta):
    """Gives automatic names: ``get(name, hint)`` returns ``name`` when it is
    given, else ``hint`` followed by how many times the hint was used before.
    Use as a context manager to make it the current manager; the current one
    (thread-local) is ``NameManager.current``."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """Returns ``name`` if not None, else a new name made from ``hint``."""
        if name:
            return name
        if hint not in self._counter:
            self._counter[hint] = 0
        name = "%s%d" % (hint, self._counter[hint])
        self._counter[hint] += 1
        return name

    def __enter__(self):
        if not hasattr(NameManager._current, "value"):
            NameManager._current.value = NameManager()
        self._old_manager = NameManager._current.value
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        assert self._old_manager
        NameManager._current.value = self._old_manager


class Prefix(NameManager):
    """A name manager that puts ``prefix`` before every name it gives,
    automatic or not."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        """Returns ``prefix + (name or an automatic name)``."""
        name = super().get(name, hint)
        return self._prefix + name


def current():
    """The calling thread's current NameManager."""
    if not hasattr(NameManager._current, "value"):
        NameManager._current.value = NameManager()
    return NameManager._current.value
