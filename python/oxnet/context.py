"""Device contexts: ``mx.cpu()``, ``mx.gpu()`` and the default context."""
from __future__ import annotations

import threading

from .base import DeviceError

_DEVTYPE2ID = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
_ID2DEVTYPE = {v: k for k, v in _DEVTYPE2ID.items()}


class _DefaultCtxMeta(type):
    """``Context.default_ctx``: the calling thread's default context,
    readable and assignable on the class (MXNet 1.x's class property)."""

    @property
    def default_ctx(cls):
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, value):
        Context._default_ctx.value = value


class Context(metaclass=_DefaultCtxMeta):
    """A device and its id, e.g. ``Context('cpu', 0)``.

    Use as a context manager to change the default context of array creation
    within a ``with`` block.
    """

    # the calling thread's default context is `_default_ctx.value` (the name MXNet uses)
    _default_ctx = threading.local()
    devtype2str = _ID2DEVTYPE
    devstr2type = _DEVTYPE2ID

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            if device_type not in _DEVTYPE2ID:
                raise ValueError(f"unknown device type '{device_type}' (expected one of {sorted(_DEVTYPE2ID)})")
            self.device_typeid = _DEVTYPE2ID[device_type]
            self.device_id = int(device_id)
        self._old_ctx = None

    @property
    def device_type(self) -> str:
        """'cpu', 'gpu', 'cpu_pinned' or 'cpu_shared'."""
        return _ID2DEVTYPE[self.device_typeid]

    def _pair(self):
        return (self.device_typeid, self.device_id)

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return isinstance(other, Context) and self._pair() == other._pair()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __str__(self):
        return f"{self.device_type}({self.device_id})"

    __repr__ = __str__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc):
        Context._default_ctx.value = self._old_ctx

    def empty_cache(self):
        """Release cached memory of this device's pool back to the system."""
        from . import storage

        storage.release_all()


def cpu(device_id=0) -> Context:
    """The CPU context (all CPU ids share host memory)."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0) -> Context:
    """Page-locked host memory context (plain host memory in oxnet)."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0) -> Context:
    """The GPU context. Creating it always works; using it raises
    :class:`~oxnet.base.DeviceError` while ``num_gpus() == 0``."""
    return Context("gpu", device_id)


def num_gpus() -> int:
    """Number of GPUs oxnet can use (0: this build has no GPU backend)."""
    return 0


def gpu_memory_info(device_id=0):
    """(free, total) bytes of a GPU; raises DeviceError without a GPU."""
    raise DeviceError(f"gpu({device_id}) is not available: num_gpus() == 0")


def current_context() -> Context:
    """The default context for new arrays (``cpu(0)`` unless changed by ``with``)."""
    ctx = getattr(Context._default_ctx, "value", None)
    return ctx if ctx is not None else Context("cpu", 0)
