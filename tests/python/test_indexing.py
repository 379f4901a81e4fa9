"""Basic indexing through the slice / _slice_assign operators (no host copy),
checked against NumPy, plus the operators' own references and gradients."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal, check_numeric_gradient

KEYS = [
    (slice(None), 1),
    (1, slice(None)),
    (slice(None, None, 2),),
    (slice(None, None, -1),),
    (slice(3, 0, -2), slice(1, None)),
    (Ellipsis, 2),
    (Ellipsis, slice(None, None, -1)),
    (None, 0, slice(1, 3)),
    (slice(1, 3), None, Ellipsis),
    (-1, -2, -3),
    (0, Ellipsis, None),
    (slice(-3, None), slice(None, 2), slice(None, None, 3)),
    (slice(5, 1),),
    (np.int64(2), slice(0, 4, 3)),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_matches_numpy(key):
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    got = mx.nd.array(x)[key]
    want = x[key]
    assert got.shape == want.shape
    assert_almost_equal(got, want)


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_setitem_matches_numpy(key):
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    shape = x[key].shape
    for value in (7.5, np.full(shape, -1, np.float32), np.arange(shape[-1] if shape else 1, dtype=np.float32)):
        if shape == () and np.ndim(value) > 0:
            value = value.reshape(())[()] if np.size(value) == 1 else 3.0
        a = mx.nd.array(x)
        want = x.copy()
        want[key] = value
        a[key] = mx.nd.array(value) if isinstance(value, np.ndarray) else value
        assert_almost_equal(a, want)


def test_setitem_casts_and_keeps_storage():
    a = mx.nd.zeros((3, 4), dtype="int32")
    before = a
    a[:, ::2] = mx.nd.array([[1.7, 2.2]], dtype="float64")
    assert a is before and a.dtype == np.int32
    assert (a.asnumpy() == np.array([[1, 0, 2, 0]] * 3)).all()


def test_setitem_bad_shape_raises():
    a = mx.nd.zeros((3, 4))
    a[:, 1:3] = mx.nd.ones((2,))  # (2,) broadcasts to (3, 2)
    with pytest.raises(ValueError, match=r"from shape \(3, 2\) into shape \(2, 2\)"):
        a[1:, 1:3] = mx.nd.ones((3, 2))
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0] = 1
    with pytest.raises(IndexError, match="out of bounds"):
        a[:, 4] = 1
    assert (a.asnumpy() == np.array([[0, 1, 1, 0]] * 3)).all()


def test_slice_assign_ops_reference_and_errors():
    x = np.random.rand(4, 5).astype(np.float32)
    v = np.random.rand(2, 2).astype(np.float32)
    got = mx.nd._slice_assign(mx.nd.array(x), mx.nd.array(v), begin=(1, None), end=(None, 4), step=(2, 2))
    want = x.copy()
    want[1::2, 0:4:2] = v
    assert_almost_equal(got, want)
    got = mx.nd._slice_assign_scalar(mx.nd.array(x), scalar=-3, begin=(None, -2), end=(None, None))
    want = x.copy()
    want[:, -2:] = -3
    assert_almost_equal(got, want)
    with pytest.raises(mx.MXNetError, match=r"_slice_assign: rhs has shape \(3, 3\).*has shape \(2, 2\)"):
        mx.nd._slice_assign(mx.nd.array(x), mx.nd.ones((3, 3)), begin=(1, None), end=(None, 4), step=(2, 2))
    with pytest.raises(mx.MXNetError, match="step"):
        mx.nd._slice_assign_scalar(mx.nd.array(x), scalar=1, begin=(0,), end=(2,), step=(0,))


def test_slice_assign_gradients():
    x = np.random.rand(4, 5)
    v = np.random.rand(2, 3)
    kw = dict(begin=(1, 1), end=(3, 4))
    check_numeric_gradient(lambda a, b: mx.nd._slice_assign(a, b, **kw), [x, v], dtype=np.float64)
    check_numeric_gradient(lambda a: mx.nd._slice_assign_scalar(a, scalar=2.0, **kw), [x], dtype=np.float64)


def test_getitem_is_differentiable():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    x.attach_grad()
    with mx.autograd.record():
        y = x[::2, 1::2] * 3
    y.backward()
    want = np.zeros((3, 4), np.float32)
    want[::2, 1::2] = 3
    assert_almost_equal(x.grad, want)


def test_broadcast_like_axes():
    a = np.random.rand(1, 2, 1).astype(np.float32)
    b = mx.nd.ones((3, 4, 5, 6))
    got = mx.nd.broadcast_like(mx.nd.array(a), b, lhs_axes=(0, 2), rhs_axes=(1, -1))
    assert got.shape == (4, 2, 6)
    assert_almost_equal(got, np.broadcast_to(a, (4, 2, 6)))
    # only one of the two: ignored, as in MXNet
    assert mx.nd.broadcast_like(mx.nd.ones((1, 3)), mx.nd.ones((4, 3)), lhs_axes=(0,)).shape == (4, 3)
    with pytest.raises(mx.MXNetError, match="lhs axis 1 of shape \\(1, 2, 1\\) has size 2"):
        mx.nd.broadcast_like(mx.nd.array(a), b, lhs_axes=(1,), rhs_axes=(0,))
    with pytest.raises(mx.MXNetError, match="same length"):
        mx.nd.broadcast_like(mx.nd.array(a), b, lhs_axes=(0, 2), rhs_axes=(1,))
    check_numeric_gradient(lambda x, y: mx.nd.broadcast_like(x, y, lhs_axes=(0, 2), rhs_axes=(1, 3)),
                           [np.random.rand(1, 2, 1), np.random.rand(3, 4, 5, 6)], grad_nodes=["x"], dtype=np.float64)


def test_internal_namespace():
    x = mx.nd.ones((2, 2))
    assert_almost_equal(mx.nd._internal._plus_scalar(x, scalar=2), np.full((2, 2), 3))
    assert_almost_equal(mx.nd._internal._crop_assign_scalar(x, scalar=0, begin=(0,), end=(1,)), [[0, 0], [1, 1]])
    with pytest.raises(AttributeError):
        mx.nd._internal._no_such_operator


ADV_KEYS = [
    [2, 0, 3],
    np.array([[1, 1], [0, 3]]),
    ([0, 2], [1, 4]),
    (np.array([[0], [3]]), np.array([1, 2, 4])),
    ([1, -1], 2),
    (1, [0, 4], [5, -6]),
    np.array([True, False, True, False]),
    (np.array([True, False, True, False]), [0, 1]),
]


@pytest.mark.parametrize("key", ADV_KEYS, ids=[repr(k) for k in ADV_KEYS])
def test_advanced_getitem_setitem_match_numpy(key):
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    got = mx.nd.array(x)[key]
    want = x[key]
    assert got.shape == want.shape
    assert_almost_equal(got, want)
    for value in (-7.0, np.arange(want.shape[-1], dtype=np.float32), -np.ones(want.shape, np.float32)):
        a = mx.nd.array(x)
        w = x.copy()
        w[key] = value
        a[key] = mx.nd.array(value) if isinstance(value, np.ndarray) else value
        assert_almost_equal(a, w)


MIXED_KEYS = [
    (slice(None), [0, 2]),
    ([1, 0], slice(1, 3)),
    (slice(None), [0, 2], [1, 4]),
    ([0, 3], slice(None), [2, 5]),
    (1, slice(None), [0, 3]),
    (slice(None), np.array([[0, 1], [2, 2]])),
    (slice(0, 3, 2), [True, False, True, False, True]),
    (slice(None, None, -1), slice(1, 4), [0, -1]),
    ([1], slice(None), [5]),
    (slice(None), [], slice(None)),
    # Ellipsis and None among index arrays (unfolded over a reshaped view)
    (Ellipsis, [0, 5]),
    ([1, 2], Ellipsis),
    ([1, 2], Ellipsis, [0, 5]),
    (None, [1, 2]),
    ([1, 2], None, [0, 4]),
    (slice(1, 3), None, [0, 4], Ellipsis),
    (Ellipsis, None, [True, False, True, False, True, True]),
    (0, None, Ellipsis, [2, 3]),
]


@pytest.mark.parametrize("key", MIXED_KEYS, ids=[repr(k) for k in MIXED_KEYS])
def test_mixed_array_and_slice_keys_on_device(key):
    # Integer/boolean arrays mixed with slices run gather_nd/_scatter_set_nd
    # (NumPy's placement of the broadcast dimensions), so they are
    # differentiable: the gradient is the scatter-add of the head gradient.
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    want = x[key]
    a = mx.nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        got = a[key]
    assert got.shape == want.shape
    assert_almost_equal(got, want)
    if want.size:
        head = np.random.RandomState(1).rand(*want.shape).astype(np.float32)
        got.backward(mx.nd.array(head))
        wg = np.zeros_like(x)
        np.add.at(wg, key, head)
        assert_almost_equal(a.grad, wg, rtol=1e-6, atol=1e-6)
    for value in (-7.0, -np.arange(want.size, dtype=np.float32).reshape(want.shape)):
        b = mx.nd.array(x)
        w = x.copy()
        w[key] = value
        b[key] = mx.nd.array(value) if isinstance(value, np.ndarray) else value
        assert_almost_equal(b, w)


def test_mixed_key_errors():
    a = mx.nd.zeros((3, 4))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        a[:, [0, 4]]
    with pytest.raises(IndexError, match="boolean index did not match"):
        a[[True, False], :]
    with pytest.raises(ValueError, match="could not broadcast input array"):
        a[:, [0, 1]] = mx.nd.ones((2, 3))


def test_advanced_index_errors():
    a = mx.nd.zeros((3, 4))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        a[[0, 1], [1, 4]]
    with pytest.raises(IndexError, match="could not be broadcast"):
        a[[0, 1], [1, 2, 3]] = 1
    with pytest.raises(ValueError, match="could not broadcast input array"):
        a[[0, 1]] = mx.nd.ones((3, 4))


def test_gather_scatter_nd_reference_and_gradients():
    d = np.random.rand(3, 4, 2)
    idx = np.array([[0, 2, -1], [1, 3, 0]])
    got = mx.nd.gather_nd(mx.nd.array(d), mx.nd.array(idx))
    assert_almost_equal(got, d[idx[0], idx[1]])
    upd = np.random.rand(3, 2)
    sc = mx.nd.scatter_nd(mx.nd.array(upd), mx.nd.array(idx), shape=(3, 4, 2))
    want = np.zeros((3, 4, 2))
    want[idx[0], idx[1]] = upd
    assert_almost_equal(sc, want)
    with pytest.raises(mx.MXNetError, match="gather_nd: index 3 is out of bounds for axis 0 of size 3"):
        mx.nd.gather_nd(mx.nd.array(d), mx.nd.array([[3], [0]])).wait_to_read()
    with pytest.raises(mx.MXNetError, match="scatter_nd: data has shape"):
        mx.nd.scatter_nd(mx.nd.ones((2, 2)), mx.nd.array(idx), shape=(3, 4, 2))
    dup = np.array([[0, 0, 1]])  # duplicates accumulate in the gradient
    check_numeric_gradient(lambda x: mx.nd.gather_nd(x, mx.nd.array(dup)), [d], dtype=np.float64)
    check_numeric_gradient(lambda u: mx.nd.scatter_nd(u, mx.nd.array(idx), shape=(3, 4, 2)), [upd], dtype=np.float64)
    check_numeric_gradient(lambda lhs, rhs: mx.nd._scatter_set_nd(lhs, rhs, mx.nd.array(idx)), [d, upd],
                           dtype=np.float64)


def test_multidimensional_mask_with_slices():
    # a 2-D boolean mask beside a slice: NumPy's semantics (on a host copy)
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    mask = np.random.RandomState(3).rand(4, 5) > 0.5
    key = (mask, slice(1, 4))
    a = mx.nd.array(x)
    assert_almost_equal(a[key], x[key])
    w = x.copy()
    w[key] = -1.0
    a[key] = -1.0
    assert_almost_equal(a, w)
