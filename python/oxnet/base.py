"""Errors, version and small helpers shared by every oxnet module.

All oxnet errors derive from :class:`MXNetError`; each kind also derives from
the matching builtin so ``except ValueError`` works as users expect.
"""
from __future__ import annotations

import os as _os

import numpy as _np

__version__ = "0.1.0"

integer_types = (int, _np.integer)
numeric_types = (float, int, _np.generic)
string_types = (str,)
#: MXNet's default real type (float32).
mx_real_t = _np.float32


def py_str(x):
    """Decode bytes from the core as UTF-8 (MXNet's ``py_str``); a str is returned unchanged."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else x


def _as_list(obj):
    """Return ``obj`` if it is a list or tuple, else ``[obj]`` (MXNet's helper)."""
    if isinstance(obj, (list, tuple)):
        return obj
    return [obj]


def data_dir_default():
    """Default folder for downloaded data and models: ``%APPDATA%/mxnet`` on Windows,
    ``~/.mxnet`` elsewhere (the same place MXNet uses, so downloads are shared)."""
    import platform

    if platform.system() == "Windows":
        return _os.path.join(_os.environ.get("APPDATA", ""), "mxnet")
    return _os.path.join(_os.path.expanduser("~"), ".mxnet")


def data_dir():
    """Folder for downloaded data and models: ``$MXNET_HOME`` if set, else :func:`data_dir_default`."""
    return _os.getenv("MXNET_HOME", data_dir_default())


class _NullType:
    """Marker for "argument not given" where ``None`` is a meaningful value (MXNet's ``_Null``)."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()


class MXNetError(RuntimeError):
    """Base class of every error oxnet raises (MXNet's name)."""


class NotImplementedForSymbol(MXNetError):
    """A function that exists for NDArray but not for Symbol.

    ``NotImplementedForSymbol(function, alias, *args)``: ``function`` is the Python function,
    ``alias`` the operator's name (or None), ``args`` the arguments given (their types are shown)."""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = "Function {}".format(self.function)
        if self.alias:
            msg += ' (namely operator "{}")'.format(self.alias)
        if self.args:
            msg += " with arguments ({})".format(", ".join(self.args))
        return msg + " is not implemented for Symbol and only available in NDArray."


class NotBuiltError(MXNetError, NotImplementedError):
    """A part of MXNet's API that oxnet does not have (yet); the message names it."""


class ShapeError(MXNetError, ValueError):
    """Shapes that do not fit together."""


class DTypeError(MXNetError, TypeError):
    """An unsupported or mismatched dtype."""


class ParamError(MXNetError, ValueError):
    """A bad operator argument."""


class OutOfRangeError(MXNetError, IndexError):
    """An index or axis out of range."""


class MXIOError(MXNetError, IOError):
    """A file that cannot be read or written."""


class DecodeError(MXNetError, ValueError):
    """Bytes that are not a valid image or record."""


class EngineError(MXNetError):
    """Misuse of the engine, e.g. waiting from inside a custom operator."""


class DeviceError(MXNetError):
    """A device that is not available."""


class OutOfMemoryError(MXNetError, MemoryError):
    """Not enough memory (physical + swap) for an array, raised when the
    array is created rather than by the OOM killer later."""


class OperatorError(MXNetError):
    """A failure inside an operator's kernel."""


class ExternalError(MXNetError):
    """An error raised by Python code run by the engine (custom operators)."""


def _register_errors():
    from . import _native

    _native._set_error_classes(
        {
            "shape": ShapeError,
            "dtype": DTypeError,
            "param": ParamError,
            "index": OutOfRangeError,
            "io": MXIOError,
            "decode": DecodeError,
            "engine": EngineError,
            "device": DeviceError,
            "memory": OutOfMemoryError,
            "op": OperatorError,
            "external": ExternalError,
        }
    )


_register_errors()


# ---- MXNet's ctypes C API, the part oxnet has --------------------------------------------------
# `_LIB` is the native extension opened with ctypes. It exports MXNDArrayFromDLPack,
# MXNDArrayFree and MXGetLastError (see rust/oxnet-py/src/capi.rs); any other MXNet C function
# is absent (ctypes raises AttributeError naming it). Use them with check_call, as MXNet does;
# `mx.nd.NDArray(handle=h)` takes over a handle.
import ctypes as _ctypes  # noqa: E402

NDArrayHandle = _ctypes.c_void_p
mx_uint = _ctypes.c_uint
mx_int = _ctypes.c_int
mx_float = _ctypes.c_float


def _load_lib():
    from . import _native

    lib = _ctypes.CDLL(_native.__file__)
    lib.MXGetLastError.restype = _ctypes.c_char_p
    return lib


_LIB = _load_lib()


# As MXNet's base module does at import: ctypes code written for MXNet (its tests among it)
# relies on these two pointer-returning capsule functions returning full pointers.
_ctypes.pythonapi.PyCapsule_New.restype = _ctypes.py_object
_ctypes.pythonapi.PyCapsule_GetPointer.restype = _ctypes.c_void_p


def c_str(string):
    """A Python str as a ctypes ``c_char_p`` (UTF-8), for C API calls."""
    return _ctypes.c_char_p(string.encode("utf-8"))


def check_call(ret):
    """Raise MXNetError with the native message when a C API call returned non-zero."""
    if ret != 0:
        raise MXNetError(py_str(_LIB.MXGetLastError()))


def dtype_name(dtype) -> str:
    """Normalise a dtype given as a string, NumPy type or dtype to its name."""
    if dtype is None:
        return "float32"
    if isinstance(dtype, str):
        return _np.dtype(dtype).name if dtype not in ("bool",) else "bool"
    return _np.dtype(dtype).name
