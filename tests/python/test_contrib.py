"""mx.nd.contrib: behaviour the registry table cannot express (namespace,
Python-level functions, error messages, values computed with MXNet 1.9.1)."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal

c = mx.nd.contrib


def test_namespace_lists_contrib_names():
    names = dir(c)
    for n in ("arange_like", "boolean_mask", "index_copy", "index_array", "div_sqrt_dim", "quadratic",
              "allclose", "gradientmultiplier", "round_ste", "sign_ste", "isfinite", "isinf", "isnan", "ctc_loss"):
        assert n in names, n
    assert callable(c.quadratic)
    with pytest.raises(AttributeError):
        c.not_an_operator  # noqa: B018


def test_positional_parameters_follow_mxnet_order():
    x = mx.nd.array([[1, 2], [3, 4]])
    assert_almost_equal(c.quadratic(x, 1, 2, 3), np.array([[6, 11], [18, 27]], np.float32))
    assert_almost_equal(c.arange_like(x, 1, 2), np.array([[1, 3], [5, 7]], np.float32))


def test_is_functions_return_data_dtype():
    # MXNet 1.9.1: 0/1 in the input's dtype
    for dt in ("float32", "float64"):
        y = mx.nd.array([1, np.inf, -np.inf, np.nan], dtype=dt)
        assert c.isfinite(y).dtype == np.dtype(dt)
        assert_almost_equal(c.isfinite(y), np.array([1, 0, 0, 0], dt))
        assert_almost_equal(c.isinf(y), np.array([0, 1, 1, 0], dt))
        assert_almost_equal(c.isnan(y), np.array([0, 0, 0, 1], dt))


def test_boolean_mask_values_and_gradient():
    x = mx.nd.array(np.arange(6).reshape(3, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = c.boolean_mask(x, mx.nd.array([1, 0, 1]))
    y.backward(mx.nd.ones_like(y) * 2)
    assert_almost_equal(y, np.array([[0, 1], [4, 5]], np.float32))
    # MXNet 1.9.1's gradient
    assert_almost_equal(x.grad, np.array([[2, 2], [0, 0], [2, 2]], np.float32))
    # integer masks: non-zero selects, an empty selection keeps the row shape
    assert_almost_equal(c.boolean_mask(x, mx.nd.array([0, 2, -1], dtype="int32")),
                        np.array([[2, 3], [4, 5]], np.float32))
    assert c.boolean_mask(x, mx.nd.zeros((3,))).shape == (0, 2)
    # oxnet also masks other axes (MXNet 1.9.1: "Not supported yet")
    assert_almost_equal(c.boolean_mask(x, mx.nd.array([0, 1]), axis=1), np.array([[1], [3], [5]], np.float32))


def test_boolean_mask_bad_index():
    x = mx.nd.ones((3, 2))
    with pytest.raises(ValueError, match=r"boolean_mask: index shape \(2,\)"):
        c.boolean_mask(x, mx.nd.array([1, 0]))
    with pytest.raises(ValueError, match="axis 2"):
        c.boolean_mask(x, mx.nd.array([1, 0]), axis=2)


def test_index_copy_gradient_matches_mxnet():
    old, new = mx.nd.zeros((4, 2)), mx.nd.ones((2, 2))
    old.attach_grad()
    new.attach_grad()
    with mx.autograd.record():
        y = c.index_copy(old, mx.nd.array([3, 1]), new)
    y.backward(mx.nd.array(np.arange(8).reshape(4, 2)))
    assert_almost_equal(y, np.array([[0, 0], [1, 1], [0, 0], [1, 1]], np.float32))
    assert_almost_equal(old.grad, np.array([[0, 1], [0, 0], [4, 5], [0, 0]], np.float32))
    assert_almost_equal(new.grad, np.array([[6, 7], [2, 3]], np.float32))


def test_index_copy_errors():
    old, new = mx.nd.zeros((4, 2)), mx.nd.ones((2, 2))
    with pytest.raises(ValueError, match=r"_contrib_index_copy: index_vector shape \(1,\)"):
        c.index_copy(old, mx.nd.array([1]), new)
    with pytest.raises(ValueError, match="row shape"):
        c.index_copy(old, mx.nd.array([1, 2]), mx.nd.ones((2, 3)))
    # MXNet 1.9.1 writes out of bounds here; oxnet raises at the wait
    with pytest.raises(IndexError, match=r"index_vector\[0\] = 5"):
        c.index_copy(old, mx.nd.array([5, 1]), new).asnumpy()


def test_allclose_shape_and_errors():
    a = mx.nd.ones((2, 3))
    r = c.allclose(a, a)
    assert r.shape == () and r.dtype == np.uint8 and int(r.asnumpy()) == 1
    with pytest.raises(ValueError, match=r"_contrib_allclose: a shape \(2, 3\) and b shape \(3,\)"):
        c.allclose(a, mx.nd.ones((3,)))


def test_arange_like_and_index_array_errors():
    x = mx.nd.ones((2, 3))
    with pytest.raises(ValueError, match="_contrib_arange_like: axis 2"):
        c.arange_like(x, axis=2)
    with pytest.raises(ValueError, match="repeat"):
        c.arange_like(x, repeat=0)
    with pytest.raises(ValueError, match="_contrib_index_array: axis 3"):
        c.index_array(x, axes=(0, 3))
    with pytest.raises(TypeError, match="div_sqrt_dim"):
        c.div_sqrt_dim(mx.nd.array([4, 8], dtype="int32"))


def test_arange_like_gradient_is_zero():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = c.arange_like(x) * x
    y.backward()
    assert_almost_equal(x.grad, np.arange(6, dtype=np.float32).reshape(2, 3))
