"""Reading optimizer-state pickles written by MXNet 1.9.1.

MXNet pickles an NDArray as ``{'handle': raw}``, where ``raw`` is the array in
MXNet's binary format (``MXNDArraySaveRawBytes``), under the class path
``mxnet.ndarray.ndarray.NDArray``; optimizers and schedulers pickle as plain
objects of ``mxnet.optimizer.optimizer.*`` / ``mxnet.lr_scheduler.*``. The
unpickler here maps those class paths to oxnet's and turns the raw bytes
into oxnet NDArrays (through the ``.params`` reader, which already reads
MXNet's per-array format).
"""
import importlib
import io
import pickle
import struct

_LIST_MAGIC = 0x112  # MXNet's NDArray-list file magic


class _RawNDArray(object):
    """Stand-in created while unpickling an MXNet NDArray; replaced by a
    real oxnet NDArray afterwards."""

    def __init__(self, *args, **kwargs):  # MXNet reduces to NDArray(None)
        self.raw = None

    def __setstate__(self, state):
        self.raw = state["handle"] if isinstance(state, dict) else state

    def to_ndarray(self):
        from ..ndarray.utils import load_frombuffer

        buf = struct.pack("<QQQ", _LIST_MAGIC, 0, 1) + bytes(self.raw) + struct.pack("<Q", 0)
        return load_frombuffer(buf)[0]


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.split(".")[0] == "mxnet":
            if name == "NDArray" and module.startswith("mxnet.ndarray"):
                return _RawNDArray
            target = "oxnet" + module[len("mxnet"):]
            try:
                return getattr(importlib.import_module(target), name)
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(
                    "Updater.set_states: the state refers to MXNet's %s.%s, which oxnet does not have"
                    % (module, name)) from None
        return super().find_class(module, name)


def _convert(obj, seen):
    if isinstance(obj, _RawNDArray):
        return obj.to_ndarray()
    if isinstance(obj, dict):
        return {k: _convert(v, seen) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(_convert(v, seen) for v in obj)
    if isinstance(obj, list):
        return [_convert(v, seen) for v in obj]
    if hasattr(obj, "__dict__") and id(obj) not in seen and type(obj).__module__.startswith("oxnet"):
        seen.add(id(obj))
        for key, value in list(vars(obj).items()):
            setattr(obj, key, _convert(value, seen))
    return obj


def loads_states(data):
    """Unpickle optimizer states written by oxnet or by MXNet 1.9.1."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("Updater.set_states: expected the bytes of get_states(), got %s" % type(data).__name__)
    return _convert(_Unpickler(io.BytesIO(bytes(data))).load(), set())
