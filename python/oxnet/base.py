"""Errors, version and small helpers shared by every oxnet module.

All oxnet errors derive from :class:`MXNetError`; each kind also derives from
the matching builtin so ``except ValueError`` works as users expect.
"""
from __future__ import annotations

import numpy as _np

__version__ = "0.1.0"

integer_types = (int, _np.integer)
numeric_types = (float, int, _np.generic)
string_types = (str,)
py_str = str


class MXNetError(RuntimeError):
    """Base class of every error oxnet raises (MXNet's name)."""


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


def dtype_name(dtype) -> str:
    """Normalise a dtype given as a string, NumPy type or dtype to its name."""
    if dtype is None:
        return "float32"
    if isinstance(dtype, str):
        return _np.dtype(dtype).name if dtype not in ("bool",) else "bool"
    return _np.dtype(dtype).name
