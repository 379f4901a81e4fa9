"""MXNet's ``mx.util`` helpers: the NumPy-compatible mode switches and the backend's environment.

oxnet has only MXNet's classic (legacy) NDArray semantics: the NumPy-compatible mode
(``mx.np`` arrays, NumPy shape semantics) is not built. So ``is_np_array()`` and
``is_np_shape()`` are always False, turning the mode off is a no-op, and anything that would
turn it on (``set_np()``, ``np_shape(True)``, calling a ``@use_np`` function) raises
:class:`~oxnet.base.NotBuiltError` saying so.
"""
from __future__ import annotations

import ctypes
import functools
import inspect
import os

import threading

from .base import MXNetError, NotBuiltError

__all__ = [
    "is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array", "use_np_array",
    "use_np", "set_np", "reset_np", "getenv", "setenv", "get_gpu_count", "get_gpu_memory",
    "get_cuda_compute_capability",
]

_NP_MODE_MSG = (
    "{what}: MXNet's NumPy-compatible mode (mx.np arrays and NumPy shape semantics) is not built in "
    "oxnet; only the classic mx.nd semantics exist"
)


def _np_mode_missing(what):
    return NotBuiltError(_NP_MODE_MSG.format(what=what))


def is_np_shape():
    """Whether NumPy shape semantics are on: always False in oxnet."""
    return False


def is_np_array():
    """Whether NumPy array semantics (``mx.np.ndarray``) are on: always False in oxnet."""
    return False


def set_np_shape(active):
    """Turn NumPy shape semantics on or off; returns the previous state (False).

    Turning them off is a no-op; turning them on raises NotBuiltError."""
    if active:
        raise _np_mode_missing("set_np_shape(True)")
    return False


def set_np(shape=True, array=True):
    """Turn NumPy shape and array semantics on or off together (MXNet's ``npx.set_np``).

    ``set_np(shape=False, array=False)`` is a no-op; anything that turns a mode on raises
    NotBuiltError (ValueError first for ``array`` without ``shape``, as MXNet checks)."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    if shape or array:
        raise _np_mode_missing("set_np(shape={}, array={})".format(shape, array))


def reset_np():
    """Turn NumPy shape and array semantics off (they always are in oxnet)."""
    set_np(shape=False, array=False)


class _NpModeScope:
    """``with np_shape(False):`` / ``with np_array(False):``: legacy semantics, which are oxnet's."""

    def __init__(self, what, active):
        if active:
            raise _np_mode_missing(what)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _NumpyArrayScope(_NpModeScope):
    """MXNet's thread-local NumPy-array scope: ``_NumpyArrayScope(False)`` is the legacy
    semantics oxnet has; ``_NumpyArrayScope(True)`` raises NotBuiltError."""

    _current = threading.local()

    def __init__(self, is_np_array):
        super().__init__("_NumpyArrayScope(True)", is_np_array)
        self._is_np_array = False


def np_shape(active=True):
    """Scope with NumPy shape semantics on (raises NotBuiltError) or off (legacy; a no-op)."""
    return _NpModeScope("np_shape(active=True)", active)


def np_array(active=True):
    """Scope with NumPy array semantics on (raises NotBuiltError) or off (legacy; a no-op)."""
    return _NpModeScope("np_array(active=True)", active)


def _np_decorator(func, what):
    name = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
    if inspect.isclass(func):
        orig_init = func.__init__

        @functools.wraps(orig_init)
        def __init__(self, *args, **kwargs):
            raise _np_mode_missing("{} class {}".format(what, name))

        func.__init__ = __init__
        del orig_init
        return func
    if callable(func):
        @functools.wraps(func)
        def _needs_np_mode(*args, **kwargs):
            raise _np_mode_missing("{} function {}".format(what, name))

        return _needs_np_mode
    raise TypeError("{} can only decorate classes and callable objects, while received a {}".format(
        what, type(func)))


def use_np_shape(func):
    """Decorate a function or class to run under NumPy shape semantics. oxnet does not have them:
    the decorated function (or the class's constructor) raises NotBuiltError when called."""
    return _np_decorator(func, "@use_np_shape")


def use_np_array(func):
    """Decorate a function or class to run under NumPy array semantics. oxnet does not have them:
    the decorated function (or the class's constructor) raises NotBuiltError when called."""
    return _np_decorator(func, "@use_np_array")


def use_np(func):
    """Decorate a function or class to run in MXNet's NumPy-compatible mode. oxnet does not have
    it: the decorated function (or the class's constructor) raises NotBuiltError when called."""
    return _np_decorator(func, "@use_np")


def _libc():
    return ctypes.CDLL(None)


def getenv(name):
    """The value of environment variable ``name`` as the native core sees it (the C runtime's
    environment, which oxnet's Rust code reads), or None if it is not set."""
    if not isinstance(name, str):
        raise TypeError("getenv: name must be a str, got {}".format(type(name).__name__))
    libc = _libc()
    libc.getenv.restype = ctypes.c_char_p
    libc.getenv.argtypes = [ctypes.c_char_p]
    val = libc.getenv(name.encode())
    return None if val is None else val.decode("utf-8", "replace")


def setenv(name, value):
    """Set (or, with ``value=None``, unset) environment variable ``name`` for the native core and
    for Python's ``os.environ`` alike."""
    if not isinstance(name, str):
        raise TypeError("setenv: name must be a str, got {}".format(type(name).__name__))
    if value is None:
        os.environ.pop(name, None)
        os.unsetenv(name)
    else:
        os.environ[name] = str(value)


def get_gpu_count():
    """Number of GPUs oxnet can use (0: oxnet has no GPU backend yet)."""
    from .context import num_gpus

    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """``(free, total)`` bytes of a GPU. oxnet has no GPU, so this raises MXNetError."""
    raise MXNetError("get_gpu_memory({}): oxnet has no GPU devices (num_gpus() is 0)".format(gpu_dev_id))


def get_cuda_compute_capability(ctx):
    """CUDA compute capability of a GPU context. oxnet has no CUDA: raises ValueError for a
    non-GPU context (as MXNet does) and NotBuiltError for a GPU one."""
    if getattr(ctx, "device_type", None) != "gpu":
        raise ValueError("Expecting a gpu context to get cuda compute capability, while received ctx {}".format(ctx))
    raise NotBuiltError("get_cuda_compute_capability: oxnet is built without CUDA")
