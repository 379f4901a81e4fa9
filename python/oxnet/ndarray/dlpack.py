"""Zero-copy interop (MXNet 1.9.1's ``mx.nd.from_numpy``,
``mx.nd.to_dlpack_for_read`` / ``to_dlpack_for_write`` and
``mx.nd.from_dlpack``), plus the DLPack protocol methods ``__dlpack__`` /
``__dlpack_device__`` so that ``numpy.from_dlpack(x)`` (NumPy >= 1.22) and
``torch.utils.dlpack.from_dlpack(x)`` accept an NDArray.

Capsules are named ``"dltensor"`` and hold an unversioned
``DLManagedTensor`` (CPU, compact: strides NULL, byte_offset 0); a consumer
renames the capsule ``"used_dltensor"`` and calls the tensor's deleter when
done. A capsule nobody consumed releases its tensor when it is collected.
"""
from __future__ import annotations

import numpy as np

from .. import _native
from .ndarray import _SUPPORTED, NDArray, array

__all__ = ["from_numpy", "to_dlpack_for_read", "to_dlpack_for_write", "from_dlpack"]

# DLDeviceType kDLCPU
_KDL_CPU = 1


def from_numpy(ndarray, zero_copy=True, array_cls=NDArray):
    """Returns an NDArray backed by a NumPy array's memory.

    With ``zero_copy=True`` (the default) the NumPy array is consumed: it is
    marked read-only (``ndarray.flags.writeable`` becomes False) and the
    NDArray shares its memory, without a copy; writes through the NDArray
    are visible in the NumPy array once they finished (``wait_to_read``),
    and the NumPy array stays alive as long as the NDArray's memory is used.
    Only C-contiguous arrays can be shared (others raise ValueError; pass
    ``zero_copy=False`` or ``numpy.ascontiguousarray``). Memory not aligned
    for its element type is copied. With ``zero_copy=False`` the data is
    copied (same dtype) and the NumPy array is left as it is.

    Parameters
    ----------
    ndarray : numpy.ndarray
        Input data: float16/32/64, uint8, int8, int32, int64 or bool, in
        native byte order (others raise ValueError).
    zero_copy : bool
        Whether to share the memory (DLPack-style zero-copy conversion).
    array_cls : type
        The class of the result; only NDArray is supported.

    Returns
    -------
    NDArray
        An array backed by the NumPy array's memory (or a copy of it).
    """
    if array_cls is not NDArray:
        raise TypeError(f"from_numpy: array_cls must be NDArray, got {array_cls!r}")
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("Only c-contiguous arrays are supported for zero-copy")
    # str() of a non-native dtype is e.g. '>f4', which is refused here too
    if str(ndarray.dtype) not in _SUPPORTED or not ndarray.dtype.isnative:
        raise ValueError(str(ndarray.dtype) + " is not supported.")
    ndarray.flags["WRITEABLE"] = False
    return _native._from_numpy_shared(ndarray)


def _check_ndarray(data, fname):
    if not isinstance(data, NDArray):
        raise TypeError(f"{fname}: expected an NDArray, got {type(data).__name__}")


def to_dlpack_for_read(data):
    """Returns a reference view of NDArray that represents as DLManagedTensor
    until all previous write operations on the current array are finished.

    Waits (without the GIL) for the pending writes, then exports the array's
    memory; the memory stays valid until the consumer calls the tensor's
    deleter, even if ``data`` is dropped meanwhile.

    Parameters
    ----------
    data : NDArray
        Input data.

    Returns
    -------
    PyCapsule (the pointer of DLManagedTensor)
        A reference view of NDArray that represents as DLManagedTensor,
        named "dltensor".
    """
    _check_ndarray(data, "to_dlpack_for_read")
    return _native._to_dlpack(data, False)


def to_dlpack_for_write(data):
    """Returns a reference view of NDArray that represents as DLManagedTensor
    until all previous read/write operations on the current array are
    finished.

    Waits (without the GIL) for every pending read and write, then exports
    the array's memory for a consumer to write into.

    Parameters
    ----------
    data : NDArray
        Input data.

    Returns
    -------
    PyCapsule (the pointer of DLManagedTensor)
        A reference view of NDArray that represents as DLManagedTensor,
        named "dltensor".
    """
    _check_ndarray(data, "to_dlpack_for_write")
    return _native._to_dlpack(data, True)


class _ConsumedCapsuleError(ValueError, AssertionError):
    """A capsule that is not an unconsumed "dltensor". MXNet 1.9.1 reports
    this with an ``assert``; the class is both a ValueError and an
    AssertionError so code written for either keeps working."""


def from_dlpack(dlpack):
    """Returns a NDArray backed by a dlpack tensor.

    Compact CPU tensors share their memory (the producer's deleter runs
    when the last array over it is gone); tensors with non-compact strides,
    memory not aligned for their element type or (DLPack 1.x) the read-only
    flag are copied (the deleter runs at once). The capsule is renamed
    "used_dltensor" ("used_dltensor_versioned"): a capsule can be consumed
    only once.

    Parameters
    ----------
    dlpack : PyCapsule (the pointer of DLManagedTensor)
        Input data: a "dltensor" or "dltensor_versioned" capsule, or an
        object with a ``__dlpack__`` method (e.g. a NumPy array), whose
        capsule is taken (DLPack 1.0 when the producer supports it).

    Returns
    -------
    NDArray
        A NDArray backed by a dlpack tensor.
    """
    if not _native._is_dltensor_capsule(dlpack) and hasattr(dlpack, "__dlpack__"):
        try:
            dlpack = dlpack.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer that predates DLPack 1.0
            dlpack = dlpack.__dlpack__()
    if not _native._is_dltensor_capsule(dlpack):
        raise _ConsumedCapsuleError("Invalid DLPack Tensor. DLTensor capsules can be consumed only once.")
    return _native._from_dlpack(dlpack)


class _DLPackMethods:
    """DLPack methods attached to NDArray."""

    def to_dlpack_for_read(self):
        """Returns a reference view of NDArray that represents as
        DLManagedTensor until all previous write operations on the current
        array are finished (see :func:`to_dlpack_for_read`)."""
        return to_dlpack_for_read(self)

    def to_dlpack_for_write(self):
        """Returns a reference view of NDArray that represents as
        DLManagedTensor until all previous read/write operations on the
        current array are finished (see :func:`to_dlpack_for_write`)."""
        return to_dlpack_for_write(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack protocol: a capsule over this array's memory, after every
        pending read and write finished (the consumer may write). A DLPack
        1.0 "dltensor_versioned" capsule when ``max_version`` is at least
        (1, 0), else an unversioned "dltensor" one. ``stream`` must be None
        (CPU); ``dl_device`` must be None or ``(1, 0)`` (kDLCPU);
        ``copy=True`` exports a copy (flagged IS_COPIED)."""
        if stream is not None:
            raise BufferError(f"__dlpack__: stream must be None for a CPU array, got {stream!r}")
        if dl_device is not None and tuple(dl_device) != (_KDL_CPU, 0):
            raise BufferError(f"__dlpack__: cannot export to device {tuple(dl_device)}, only (1, 0) (kDLCPU)")
        src = self.copy() if copy else self
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _native._to_dlpack(src, True, versioned, bool(copy))

    def __dlpack_device__(self):
        """DLPack protocol: ``(device_type, device_id)``, (1, 0) for kDLCPU."""
        return (_KDL_CPU, 0)


for _name, _val in _DLPackMethods.__dict__.items():
    if callable(_val):
        setattr(NDArray, _name, _val)
del _name, _val
