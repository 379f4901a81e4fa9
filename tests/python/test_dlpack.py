"""Zero-copy interop: mx.nd.from_numpy, DLPack capsules (to_dlpack_for_read /
to_dlpack_for_write / from_dlpack) and the __dlpack__ protocol with NumPy.
Expected behaviours were checked side by side with MXNet 1.9.1."""
import ctypes
import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import oxnet as mx
from oxnet import _native

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _tensor(cap):
    return _DLManagedTensor.from_address(_get_pointer(cap, b"dltensor")).dl_tensor


def _ref(arr):
    """A weak reference to a NumPy array (NumPy arrays support them)."""
    return weakref.ref(arr)


def _collect():
    mx.nd.waitall()  # applies releases deferred by engine workers
    gc.collect()


# -- from_numpy ---------------------------------------------------------------


def test_from_numpy_shares_memory_and_marks_readonly():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = mx.nd.from_numpy(a)
    assert not a.flags.writeable
    assert _native._is_external(b)
    assert b.shape == (2, 3) and b.dtype == np.float32
    b += 1
    b.wait_to_read()
    np.testing.assert_array_equal(a, np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    with pytest.raises(ValueError):
        a[0, 0] = 5


def test_from_numpy_copy():
    a = np.arange(6, dtype=np.float64)
    b = mx.nd.from_numpy(a, zero_copy=False)
    assert a.flags.writeable
    assert b.dtype == np.float64
    assert not _native._is_external(b)
    b += 1
    np.testing.assert_array_equal(a, np.arange(6))
    np.testing.assert_array_equal(b.asnumpy(), np.arange(1, 7))


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_dtypes_round_trip(dtype):
    rng = np.random.RandomState(0)
    a = (rng.rand(3, 4) * 50).astype(dtype)
    expect = a.copy()
    b = mx.nd.from_numpy(a)
    assert b.dtype == np.dtype(dtype).type
    np.testing.assert_array_equal(b.asnumpy(), expect)
    # and back through DLPack without a copy
    c = np.from_dlpack(b)
    assert c.dtype == np.dtype(dtype)
    assert c.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(c, expect)


def test_from_numpy_errors():
    with pytest.raises(ValueError, match="Only c-contiguous arrays are supported for zero-copy"):
        mx.nd.from_numpy(np.ones((3, 4))[:, ::2])
    with pytest.raises(ValueError, match="int16 is not supported."):
        mx.nd.from_numpy(np.ones(3, dtype=np.int16))
    with pytest.raises(ValueError, match="complex64 is not supported."):
        mx.nd.from_numpy(np.ones(3, dtype=np.complex64))
    with pytest.raises(ValueError, match=">f4 is not supported."):  # as MXNet 1.9.1
        mx.nd.from_numpy(np.ones(3, dtype=">f4"))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        mx.nd.from_numpy([1, 2, 3])
    # non-contiguous input with zero_copy=False is copied
    b = mx.nd.from_numpy(np.arange(12.0).reshape(3, 4)[:, ::2], zero_copy=False)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(12.0).reshape(3, 4)[:, ::2])


def test_from_numpy_misaligned_is_copied():
    buf = np.zeros(4 * 5 + 1, dtype=np.uint8)
    a = np.frombuffer(buf.data, dtype=np.float32, count=5, offset=1)
    assert not a.flags.aligned and a.flags.c_contiguous
    b = mx.nd.from_numpy(a)
    assert not _native._is_external(b)
    np.testing.assert_array_equal(b.asnumpy(), np.zeros(5, dtype=np.float32))


def test_from_numpy_empty_and_scalar():
    e = mx.nd.from_numpy(np.ones((0, 3), dtype=np.float32))
    assert e.shape == (0, 3)
    s = mx.nd.from_numpy(np.array(2.5, dtype=np.float32))
    assert s.shape == () and s.asscalar() == 2.5


# -- lifetimes ----------------------------------------------------------------


def test_numpy_dropped_first():
    a = np.arange(10, dtype=np.float32)
    wr = _ref(a)
    b = mx.nd.from_numpy(a)
    del a
    _collect()
    assert wr() is not None  # the NDArray keeps it alive
    np.testing.assert_array_equal(b.asnumpy(), np.arange(10))
    c = b * 2
    np.testing.assert_array_equal(c.asnumpy(), np.arange(10) * 2)
    del b
    _collect()
    assert wr() is None


def test_views_keep_memory_alive():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    wr = _ref(a)
    b = mx.nd.from_numpy(a)
    v = b[1:3]
    del a, b
    _collect()
    assert wr() is not None
    np.testing.assert_array_equal(v.asnumpy(), np.arange(3, 9).reshape(2, 3))
    del v
    _collect()
    assert wr() is None


def test_ndarray_dropped_while_operation_pending():
    # The last reference is dropped by an engine worker; the NumPy array is
    # released once the work finished, with no deadlock.
    a = np.ones((512, 512), dtype=np.float32)
    wr = _ref(a)
    b = mx.nd.from_numpy(a)
    outs = [mx.nd.dot(b, b) for _ in range(3)]
    del a, b
    _collect()
    assert wr() is None
    np.testing.assert_allclose(outs[0].asnumpy()[:2, :2], 512.0)


def test_unconsumed_capsule_releases():
    a = np.arange(4, dtype=np.float32)
    wr = _ref(a)
    b = mx.nd.from_numpy(a)
    cap = b.to_dlpack_for_read()
    del a, b
    _collect()
    assert wr() is not None  # the capsule's tensor holds the memory
    del cap
    _collect()
    assert wr() is None


def test_consumed_capsule_lifetime():
    a = np.arange(4, dtype=np.float32)
    wr = _ref(a)
    cap = mx.nd.from_numpy(a).to_dlpack_for_read()
    c = mx.nd.from_dlpack(cap)
    del a, cap
    _collect()
    assert wr() is not None
    np.testing.assert_array_equal(c.asnumpy(), np.arange(4))
    del c
    _collect()
    assert wr() is None


def test_numpy_consumer_keeps_ndarray_memory():
    x = mx.nd.arange(6).reshape((2, 3))
    y = np.from_dlpack(x)
    del x
    _collect()
    np.testing.assert_array_equal(y, np.arange(6).reshape(2, 3))


def test_from_dlpack_of_numpy_releases_through_deleter():
    a = np.arange(5, dtype=np.int64)
    wr = _ref(a)
    b = mx.nd.from_dlpack(a)
    assert _native._is_external(b)
    del a
    _collect()
    assert wr() is not None
    del b
    _collect()
    assert wr() is None


# -- DLPack capsules -------------------------------------------------------------


def test_capsule_layout():
    expect = {
        "float32": (2, 32),
        "float64": (2, 64),
        "float16": (2, 16),
        "uint8": (1, 8),
        "int8": (0, 8),
        "int32": (0, 32),
        "int64": (0, 64),
        "bool": (6, 8),
    }
    for dt, (code, bits) in expect.items():
        x = mx.nd.ones((2, 3), dtype=dt)
        cap = mx.nd.to_dlpack_for_read(x)
        assert type(cap).__name__ == "PyCapsule"
        assert _get_name(cap) == b"dltensor"
        t = _tensor(cap)
        assert (t.device.device_type, t.device.device_id) == (1, 0)
        assert t.ndim == 2 and [t.shape[0], t.shape[1]] == [2, 3]
        assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (code, bits, 1), dt
        assert not t.strides
        assert t.byte_offset == 0


def test_mxnet_doc_examples():
    x = mx.nd.ones((2, 3))
    y = mx.nd.to_dlpack_for_read(x)
    z = mx.nd.from_dlpack(y)
    assert isinstance(z, mx.nd.NDArray)
    np.testing.assert_array_equal(z.asnumpy(), np.ones((2, 3)))
    w = mx.nd.to_dlpack_for_write(x)
    u = mx.nd.from_dlpack(w)
    u += 1
    u.wait_to_read()  # u has its own engine variable: wait on it, then read x
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 2.0))
    assert _get_name(w) == b"used_dltensor"


def test_methods_and_view_export():
    x = mx.nd.arange(12).reshape((4, 3))
    c = x[1:3].to_dlpack_for_read()
    z = mx.nd.from_dlpack(c)
    np.testing.assert_array_equal(z.asnumpy(), [[3, 4, 5], [6, 7, 8]])
    w = mx.nd.from_dlpack(x.to_dlpack_for_write())
    w[:] = 0
    w.wait_to_read()
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((4, 3)))


def test_capsule_consumed_once():
    cap = mx.nd.ones((2,)).to_dlpack_for_read()
    mx.nd.from_dlpack(cap)
    msg = "DLTensor capsules can be consumed only once"
    with pytest.raises(ValueError, match=msg):
        mx.nd.from_dlpack(cap)
    with pytest.raises(AssertionError, match=msg):  # what MXNet 1.9.1 raises
        mx.nd.from_dlpack(cap)
    with pytest.raises(ValueError, match=msg):
        mx.nd.from_dlpack(5)
    with pytest.raises(TypeError, match="to_dlpack_for_read: expected an NDArray"):
        mx.nd.to_dlpack_for_read(np.ones(2))


def test_numpy_capsule_rejected_dtype_is_not_consumed():
    cap = np.ones(3, dtype=np.complex64).__dlpack__()
    with pytest.raises(TypeError, match="unsupported DLPack data type"):
        mx.nd.from_dlpack(cap)
    assert _get_name(cap) == b"dltensor"


def test_from_dlpack_strided_numpy_is_copied():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = a.T
    b = mx.nd.from_dlpack(t)
    assert not _native._is_external(b)
    np.testing.assert_array_equal(b.asnumpy(), t)
    # a size-1 axis with any stride still counts as compact: shared
    s = np.lib.stride_tricks.as_strided(a[1], shape=(1, 4), strides=(1000, 4))
    c = mx.nd.from_dlpack(s)
    assert _native._is_external(c)
    np.testing.assert_array_equal(c.asnumpy(), [[4, 5, 6, 7]])


def test_sharing_both_ways_with_numpy():
    x = mx.nd.zeros((3, 4))
    y = np.from_dlpack(x)
    assert x.__dlpack_device__() == (1, 0)
    y[1, 2] = 7.0
    assert x.asnumpy()[1, 2] == 7.0
    x += 1
    x.wait_to_read()
    assert y[1, 2] == 8.0 and y[0, 0] == 1.0
    a = np.zeros(5, dtype=np.int32)
    b = mx.nd.from_dlpack(a)
    b += 3
    b.wait_to_read()
    np.testing.assert_array_equal(a, np.full(5, 3))
    a[0] = 9
    assert b.asnumpy()[0] == 9


def test_dlpack_protocol_arguments():
    x = mx.nd.arange(4)
    y = np.from_dlpack(x, copy=True)
    y[0] = 100
    assert x.asnumpy()[0] == 0
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        x.__dlpack__(stream=1)
    assert _get_name(x.__dlpack__()) == b"dltensor"
    assert _get_name(x.__dlpack__(max_version=(0, 8))) == b"dltensor"
    cap = x.__dlpack__(max_version=(1, 0))
    assert _get_name(cap) == b"dltensor_versioned"


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


def test_versioned_capsules():
    x = mx.nd.arange(6).reshape((2, 3))
    cap = x.__dlpack__(max_version=(1, 0), copy=True)
    m = _DLManagedTensorVersioned.from_address(_get_pointer(cap, b"dltensor_versioned"))
    assert (m.major, m.minor) == (1, 0)
    assert m.flags == 2  # IS_COPIED, not READ_ONLY
    t = m.dl_tensor
    assert (t.device.device_type, t.ndim, t.dtype.code, t.dtype.bits) == (1, 2, 2, 32)
    assert not t.strides and t.byte_offset == 0
    z = mx.nd.from_dlpack(cap)  # oxnet consumes versioned capsules too
    assert _get_name(cap) == b"used_dltensor_versioned"
    np.testing.assert_array_equal(z.asnumpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="consumed only once"):
        mx.nd.from_dlpack(cap)
    # shared (not copied) export: writes go through
    w = mx.nd.from_dlpack(x.__dlpack__(max_version=(1, 0)))
    w += 1
    w.wait_to_read()
    np.testing.assert_array_equal(x.asnumpy(), np.arange(1, 7).reshape(2, 3))


def test_read_only_numpy_is_copied():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    b = mx.nd.from_dlpack(a)  # NumPy flags the versioned tensor READ_ONLY
    assert not _native._is_external(b)
    b += 1
    np.testing.assert_array_equal(a, np.arange(4))
    np.testing.assert_array_equal(b.asnumpy(), np.arange(1, 5))


def test_empty_and_scalar_round_trip():
    for shape in [(), (0,), (2, 0, 3)]:
        x = mx.nd.ones(shape)
        z = mx.nd.from_dlpack(x.to_dlpack_for_read())
        assert z.shape == shape
        np.testing.assert_array_equal(z.asnumpy(), np.ones(shape))
        assert np.from_dlpack(x).shape == shape


# -- engine ordering ----------------------------------------------------------------


def test_export_waits_for_pending_write():
    rng = np.random.RandomState(1)
    a = mx.nd.array(rng.rand(300, 300))
    expect = np.dot(a.asnumpy(), a.asnumpy())
    out = mx.nd.zeros((300, 300))
    for _ in range(3):
        mx.nd.dot(a, a, out=out)
    r = np.from_dlpack(mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(out)))
    np.testing.assert_allclose(r, expect, rtol=1e-5)


def test_write_export_waits_for_pending_reads():
    rng = np.random.RandomState(2)
    src = rng.rand(300, 300).astype(np.float32)
    x = mx.nd.array(src)
    ys = [mx.nd.dot(x, x) for _ in range(3)]  # pending readers of x
    w = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
    w[:] = 0  # would corrupt the readers if they had not finished
    w.wait_to_read()
    expect = np.dot(src, src)
    for y in ys:
        np.testing.assert_allclose(y.asnumpy(), expect, rtol=1e-4)
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((300, 300)))


def test_exit_with_shared_memory_in_flight():
    # Operations still running on NumPy memory, an unconsumed capsule and a
    # NumPy array over oxnet memory at interpreter exit: no crash, no hang.
    script = """
import numpy as np, oxnet as mx
a = np.ones((256, 256), dtype=np.float32)
b = mx.nd.from_numpy(a)
outs = [mx.nd.dot(b, b) for _ in range(4)]
cap = b.to_dlpack_for_read()
c = mx.nd.from_dlpack(np.arange(8.0))
y = np.from_dlpack(c * 2)
del a, b
print("ok")
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_c_api_from_dlpack_and_handle():
    # MXNet's older path, as its test_dlpack does: the capsule's tensor goes to the C API
    # (MXNDArrayFromDLPack through ctypes), which takes it over; NDArray(handle=...) wraps it.
    import ctypes

    from oxnet.base import _LIB, NDArrayHandle, c_str, check_call

    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    cap = mx.nd.to_dlpack_for_read(x)
    obj = ctypes.py_object(cap)
    # importing oxnet set PyCapsule_GetPointer's restype to c_void_p, as importing MXNet does
    assert ctypes.pythonapi.PyCapsule_GetPointer.restype is ctypes.c_void_p
    assert ctypes.pythonapi.PyCapsule_IsValid(obj, c_str("dltensor"))
    ptr = ctypes.c_void_p(ctypes.pythonapi.PyCapsule_GetPointer(obj, c_str("dltensor")))
    handle = NDArrayHandle()
    check_call(_LIB.MXNDArrayFromDLPack(ptr, ctypes.byref(handle)))
    ctypes.pythonapi.PyCapsule_SetName(obj, c_str("used_dltensor"))
    ctypes.pythonapi.PyCapsule_SetDestructor(obj, None)
    z = mx.nd.NDArray(handle=handle)
    np.testing.assert_array_equal(z.asnumpy(), x.asnumpy())
    del cap, obj
    # a handle is taken once; other addresses and no handle are refused
    with pytest.raises(ValueError, match="not a live array handle"):
        mx.nd.NDArray(handle=handle)
    with pytest.raises(ValueError, match="not a live array handle"):
        mx.nd.NDArray(handle=ctypes.c_void_p(12345))
    with pytest.raises(TypeError, match="mx.nd.array"):
        mx.nd.NDArray()
    # errors come back through MXGetLastError
    with pytest.raises(mx.MXNetError, match="must not be null"):
        check_call(_LIB.MXNDArrayFromDLPack(None, ctypes.byref(handle)))
    with pytest.raises(mx.MXNetError, match="not a live NDArray handle"):
        check_call(_LIB.MXNDArrayFree(ctypes.c_void_p(12345)))
