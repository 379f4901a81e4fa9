"""Saving and loading arrays in MXNet's binary format (``.params``)."""
from __future__ import annotations


def save(fname, data):
    """Save a list of NDArrays or a dict of str -> NDArray to ``fname`` in
    MXNet's binary format (readable by MXNet's ``mx.nd.load``)."""
    from .. import _native
    from .ndarray import NDArray

    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names = list(data.keys())
        arrays = [data[k] for k in names]
        if not all(isinstance(k, str) for k in names):
            raise TypeError("save: dict keys must be str")
    elif isinstance(data, (list, tuple)):
        names = []
        arrays = list(data)
    else:
        raise TypeError(f"save: data must be an NDArray, a list or a dict of NDArrays, got {type(data).__name__}")
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError(f"save: every value must be an NDArray, got {type(a).__name__}")
    _native.nd_save(str(fname), arrays, names)


def load(fname):
    """Load arrays saved by :func:`save` (or by MXNet). Returns a list, or a
    dict when the file has names."""
    from .. import _native

    return _named(*_native.nd_load(str(fname)))


def load_frombuffer(buf):
    """Load arrays from ``buf`` (bytes, bytearray or memoryview holding the
    contents of a file written by :func:`save` or by MXNet). Returns a list,
    or a dict when the data has names."""
    from .. import _native

    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_frombuffer: buf must be bytes, got {type(buf).__name__}")
    return _named(*_native.nd_load_bytes(bytes(buf)))


def _named(arrays, names):
    if names:
        return dict(zip(names, arrays))
    return list(arrays)
