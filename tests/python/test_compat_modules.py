"""The small MXNet namespaces scripts and MXNet's own tests import: mx.runtime, mx.base helpers,
mx.util (NumPy-compatible mode off), mx.contrib, mx.np / mx.npx, and the mx.img / mx.rnd aliases."""
import os
import pickle

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError, NotBuiltError


# ---- mx.runtime -----------------------------------------------------------------------------

# MXNet 1.9.1's feature names, in its order (mx.runtime.feature_list() of the pip wheel).
MXNET_FEATURES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
    "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
    "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
    "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
]


def test_feature_names_and_order_match_mxnet():
    assert [f.name for f in mx.runtime.feature_list()] == MXNET_FEATURES
    assert list(mx.runtime.Features().keys()) == MXNET_FEATURES


def test_features_report_what_oxnet_has():
    f = mx.runtime.Features()
    for absent in ("CUDA", "CUDNN", "NCCL", "TENSORRT", "MKLDNN", "OPENCV", "OPENMP", "BLAS_OPEN", "LAPACK",
                   "JEMALLOC", "DIST_KVSTORE", "TVM_OP"):
        assert f.is_enabled(absent) is False, absent
    assert f.is_enabled("profiler") is True  # case-insensitive, as in MXNet
    assert f.is_enabled("INT64_TENSOR_SIZE") is True
    assert f.is_enabled("DEBUG") == (mx.__build__ == "debug")
    assert mx.__build__ in ("debug", "release")


def test_features_singleton_repr_and_unknown_name():
    a, b = mx.runtime.Features(), mx.runtime.Features()
    assert a is b
    assert repr(a["CUDA"]) == "✖ CUDA"
    assert repr(a["PROFILER"]) == "✔ PROFILER"
    assert repr(a).startswith("[✖ CUDA, ✖ CUDNN")
    with pytest.raises(RuntimeError, match="is unknown"):
        a.is_enabled("this girl is on fire")


# ---- mx.base --------------------------------------------------------------------------------

def test_base_helpers():
    from oxnet.base import _as_list, data_dir, integer_types, mx_real_t, numeric_types, py_str, string_types

    assert _as_list(3) == [3]
    t = (1, 2)
    assert _as_list(t) is t
    assert py_str(b"caf\xc3\xa9") == "café" and py_str("x") == "x"
    assert isinstance(np.int64(1), integer_types) and not isinstance(1.5, integer_types)
    assert isinstance(np.float16(1), numeric_types) and isinstance("a", string_types)
    assert mx_real_t is np.float32
    old = os.environ.get("MXNET_HOME")
    try:
        os.environ["MXNET_HOME"] = "/tmp/some_mx_home"
        assert data_dir() == "/tmp/some_mx_home"
        del os.environ["MXNET_HOME"]
        assert data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")
    finally:
        if old is not None:
            os.environ["MXNET_HOME"] = old


def test_not_implemented_for_symbol_message():
    # the message MXNet 1.9.1 gives for NotImplementedForSymbol(mx.nd.ones, 'ones', 1, 'a')
    e = mx.base.NotImplementedForSymbol(mx.nd.ones, "ones", 1, "a")
    assert isinstance(e, MXNetError)
    assert str(e) == ('Function ones (namely operator "ones") with arguments (<class \'int\'>, <class \'str\'>) '
                      "is not implemented for Symbol and only available in NDArray.")


# ---- mx.util: the NumPy-compatible mode is off ------------------------------------------------

def test_np_mode_is_off_and_cannot_be_turned_on():
    assert mx.util.is_np_array() is False and mx.util.is_np_shape() is False
    assert mx.is_np_shape() is False and mx.npx.is_np_array() is False
    mx.util.reset_np()
    mx.util.set_np(shape=False, array=False)
    assert mx.util.set_np_shape(False) is False
    with mx.np_shape(False), mx.util.np_array(False):
        assert mx.nd.ones((2,)).shape == (2,)
    with pytest.raises(NotBuiltError, match="NumPy-compatible mode"):
        mx.util.set_np()
    with pytest.raises(NotBuiltError):
        mx.np_shape(True)
    with pytest.raises(NotBuiltError):
        mx.util.set_np_shape(True)
    with pytest.raises(ValueError, match="Shape semantics is required"):
        mx.util.set_np(shape=False, array=True)


def test_use_np_decorated_function_and_class_raise_when_used():
    @mx.util.use_np
    def f(x):
        return x

    with pytest.raises(NotBuiltError, match="@use_np function"):
        f(1)

    @mx.use_np
    class C:
        def __init__(self):
            self.a = 1

    with pytest.raises(NotBuiltError, match="@use_np class"):
        C()
    with pytest.raises(TypeError):
        mx.util.use_np(3)


def test_getenv_setenv_reach_the_native_environment():
    name = "OXNET_TEST_COMPAT_ENV"
    assert mx.util.getenv(name) is None
    try:
        mx.util.setenv(name, "7")
        assert mx.util.getenv(name) == "7" and os.environ[name] == "7"
        os.environ[name] = "8"  # os.environ writes reach the C runtime too
        assert mx.util.getenv(name) == "8"
        mx.util.setenv(name, None)
        assert mx.util.getenv(name) is None and name not in os.environ
    finally:
        os.environ.pop(name, None)


def test_gpu_helpers_say_there_is_no_gpu():
    assert mx.util.get_gpu_count() == 0
    with pytest.raises(MXNetError, match="no GPU"):
        mx.util.get_gpu_memory(0)
    with pytest.raises(ValueError, match="Expecting a gpu context"):
        mx.util.get_cuda_compute_capability(mx.cpu())


# ---- mx.np / mx.npx ---------------------------------------------------------------------------

def test_np_namespace_is_honestly_absent():
    a = mx.nd.ones((2,))
    assert not isinstance(a, mx.np.ndarray) and not isinstance(a, mx.numpy.ndarray)
    with pytest.raises(NotBuiltError, match="mx.np.ndarray"):
        mx.np.ndarray((2,))
    with pytest.raises(NotBuiltError, match=r"mx\.np\.ones: MXNet's NumPy-compatible interface"):
        mx.np.ones((2, 2))
    with pytest.raises(NotBuiltError, match=r"mx\.npx\.relu"):
        mx.npx.relu
    with pytest.raises(AttributeError):
        mx.np.__wrapped__
    with pytest.raises(NotBuiltError):
        from oxnet.numpy import zeros  # noqa: F401


# ---- mx.contrib -------------------------------------------------------------------------------

def test_contrib_namespaces():
    assert mx.contrib.nd is mx.nd.contrib and mx.contrib.ndarray is mx.nd.contrib
    x = mx.nd.array([1.0, np.inf, np.nan])
    assert mx.contrib.nd.isfinite(x).asnumpy().tolist() == [1, 0, 0]


def test_contrib_autograd_grad_and_loss():
    from oxnet.contrib import autograd as cag

    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = mx.nd.array([[0.5, -1.0], [2.0, 0.0]])
    grads, out = cag.grad_and_loss(lambda a, b: a * b + a)(x, y)
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy() * y.asnumpy() + x.asnumpy())
    np.testing.assert_allclose(grads[0].asnumpy(), y.asnumpy() + 1)
    np.testing.assert_allclose(grads[1].asnumpy(), x.asnumpy())
    # argnum picks which arguments get gradients
    (gy,) = cag.grad(lambda a, b: (a * b).exp(), argnum=1)(x, y)
    np.testing.assert_allclose(gy.asnumpy(), x.asnumpy() * np.exp(x.asnumpy() * y.asnumpy()), rtol=1e-5)
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()


def test_contrib_autograd_sections_and_backward():
    from oxnet.contrib import autograd as cag

    x = mx.nd.array([1.0, 2.0, 3.0])
    dx = mx.nd.zeros(3)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        y = x * x
        with cag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    cag.backward([y], [mx.nd.array([1.0, 0.5, 2.0])])
    np.testing.assert_allclose(dx.asnumpy(), [2.0, 2.0, 12.0])
    with pytest.raises(TypeError, match="list or tuple"):
        cag.backward(y)
    with pytest.raises(TypeError, match="must be NDArrays"):
        cag.grad(lambda a: a)(np.ones(2))


# ---- aliases ----------------------------------------------------------------------------------

def test_aliases():
    assert mx.img is mx.image and mx.rnd is mx.random
    assert mx.img.imresize is mx.image.imresize
