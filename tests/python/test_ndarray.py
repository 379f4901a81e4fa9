"""NDArray basics: creation, dtypes, conversion, views, indexing, repr."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_array_roundtrip_dtypes(dtype):
    src = (np.arange(24).reshape(2, 3, 4) % 100).astype(dtype)
    a = mx.nd.array(src, dtype=dtype)
    assert a.dtype == np.dtype(dtype).type
    assert a.shape == (2, 3, 4) and a.size == 24 and a.ndim == 3
    np.testing.assert_array_equal(a.asnumpy(), src)


def test_array_default_dtype_is_float32_like_mxnet():
    assert mx.nd.array(np.arange(3, dtype=np.float64)).dtype == np.float32
    assert mx.nd.array([1, 2, 3]).dtype == np.float32
    a = mx.nd.array([1, 2], dtype="int32")
    assert mx.nd.array(a).dtype == np.int32


def test_creation_functions():
    np.testing.assert_array_equal(mx.nd.zeros((2, 3)).asnumpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(mx.nd.ones(4, dtype="int32").asnumpy(), np.ones(4, np.int32))
    np.testing.assert_array_equal(mx.nd.full((2, 2), 7.5).asnumpy(), np.full((2, 2), 7.5, np.float32))
    np.testing.assert_array_equal(mx.nd.arange(5).asnumpy(), np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(mx.nd.arange(2, 11, 3).asnumpy(), np.arange(2, 11, 3, dtype=np.float32))
    np.testing.assert_array_equal(mx.nd.arange(3, repeat=2).asnumpy(), np.array([0, 0, 1, 1, 2, 2], np.float32))
    np.testing.assert_array_equal(mx.nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1, dtype=np.float32))
    x = mx.nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(mx.nd.zeros_like(x).asnumpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(mx.nd.ones_like(x).asnumpy(), np.ones((2, 2)))
    e = mx.nd.empty((3, 2))
    assert e.shape == (3, 2) and e.dtype == np.float32


def test_scalar_conversions():
    a = mx.nd.array([3.5])
    assert a.asscalar() == np.float32(3.5)
    assert float(a) == 3.5 and int(mx.nd.array([4])) == 4
    with pytest.raises(ValueError):
        mx.nd.ones((2,)).asscalar()
    np.testing.assert_array_equal(np.asarray(mx.nd.ones((2, 2))), np.ones((2, 2)))


def test_copy_copyto_astype_context():
    a = mx.nd.array([[1, 2], [3, 4]])
    b = a.copy()
    b[:] = 0
    assert a.asnumpy().sum() == 10
    c = mx.nd.zeros((2, 2))
    a.copyto(c)
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())
    d = a.copyto(mx.cpu(1))
    assert d.context == mx.cpu(1)
    assert a.as_in_context(mx.cpu()) is a
    i = a.astype("int32")
    assert i.dtype == np.int32
    assert a.astype(np.float32, copy=False) is a
    with pytest.raises(ValueError):
        a.copyto(mx.nd.zeros((3,)))


def test_astype_matches_numpy_between_float32_and_the_other_dtypes():
    # large enough to take the parallel path; int64 -> float32 rounds once
    # (through float64 first, 2**60 + 2**36 + 1 would land on 2**60)
    big = np.array([2**60 + 2**36 + 1, -(2**40) - 3, 7], dtype=np.int64)
    assert np.array_equal(mx.nd.array(big, dtype="int64").astype("float32").asnumpy(), big.astype(np.float32))
    v = np.random.RandomState(0).uniform(-300, 300, 70000).astype(np.float32)
    for dt in ["uint8", "int8", "int32", "int64", "float64", "float16"]:
        # the float -> int values NumPy defines (in range, no NaN)
        src = np.clip(v, *((0, 255) if dt == "uint8" else (-128, 127) if dt == "int8" else (-300, 300)))
        got = mx.nd.array(src).astype(dt).asnumpy()
        assert got.dtype == np.dtype(dt) and np.array_equal(got, src.astype(dt)), dt
        back = mx.nd.array(src.astype(dt), dtype=dt).astype("float32").asnumpy()
        assert np.array_equal(back, src.astype(dt).astype(np.float32)), dt


def test_reshape_views_share_memory():
    a = mx.nd.arange(24)
    b = a.reshape((2, 3, 4))
    b[:] = 1
    assert a.asnumpy().sum() == 24
    assert a.reshape(4, -1).shape == (4, 6)
    x = mx.nd.zeros((2, 3, 4))
    assert x.reshape((0, -1)).shape == (2, 12)
    assert x.reshape((-2,)).shape == (2, 3, 4)
    assert x.reshape((-3, 4)).shape == (6, 4)
    assert x.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    assert x.reshape((0, 0, -1)).shape == (2, 3, 4)
    assert mx.nd.zeros((10, 5, 4)).reshape((-1, 0), reverse=True).shape == (50, 4)
    with pytest.raises(ValueError):
        x.reshape((5, -1))


def test_first_axis_slices_are_views():
    a = mx.nd.zeros((4, 3))
    v = a[1:3]
    v[:] = 5
    expect = np.zeros((4, 3), np.float32)
    expect[1:3] = 5
    np.testing.assert_array_equal(a.asnumpy(), expect)
    a[0] = 2
    expect[0] = 2
    np.testing.assert_array_equal(a.asnumpy(), expect)
    a[3] = mx.nd.array([1, 2, 3])
    expect[3] = [1, 2, 3]
    np.testing.assert_array_equal(a.asnumpy(), expect)


def test_getitem_matches_numpy():
    src = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    a = mx.nd.array(src)
    for key in [1, -1, slice(0, 2), slice(1, None), (1, 2), (slice(None), 1), (Ellipsis, 2), (1, slice(1, 3), 2),
                slice(None, None, 2), (slice(None), slice(None, None, -1))]:
        got = a[key].asnumpy()
        ref = src[key]
        np.testing.assert_array_equal(got.reshape(np.shape(ref)) if np.ndim(ref) else got, ref if np.ndim(ref) else [ref])
    assert a[1].shape == (4, 5)
    assert mx.nd.array([1, 2, 3])[1].shape == (1,)
    np.testing.assert_array_equal(a[[0, 2]].asnumpy(), src[[0, 2]])
    np.testing.assert_array_equal(a[mx.nd.array([2, 0])].asnumpy(), src[[2, 0]])
    with pytest.raises(IndexError):
        a[3]


def test_setitem_general():
    src = np.zeros((3, 4), np.float32)
    a = mx.nd.array(src)
    a[:, 1] = 7
    src[:, 1] = 7
    a[1:3, 2:4] = mx.nd.ones((2, 2)) * 3
    src[1:3, 2:4] = 3
    a[[0, 2], 0] = -1
    src[[0, 2], 0] = -1
    np.testing.assert_array_equal(a.asnumpy(), src)
    a[:] = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(12).reshape(3, 4))


def test_repr_like_mxnet():
    r = repr(mx.nd.ones((2, 3)))
    assert r.endswith("<NDArray 2x3 @cpu(0)>")
    assert "[[1. 1. 1.]" in r


def test_iteration_len_bool():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert len(a) == 2
    rows = [r.asnumpy() for r in a]
    np.testing.assert_array_equal(rows[1], [3, 4])
    assert bool(mx.nd.array([1]))
    with pytest.raises(ValueError):
        bool(a)


def test_gpu_context_raises_clearly():
    assert mx.num_gpus() == 0
    with pytest.raises(mx.MXNetError, match="gpu"):
        mx.nd.zeros((2,), ctx=mx.gpu())


def test_default_context_with_block():
    with mx.cpu(2):
        assert mx.nd.zeros((1,)).context == mx.cpu(2)
    assert mx.nd.zeros((1,)).context == mx.cpu(0)


def test_pickle_roundtrip():
    import pickle

    a = mx.nd.array([[1, 2], [3, 4]], dtype="int64")
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == np.int64
    assert_almost_equal(a, b)


def test_unsupported_input_type():
    with pytest.raises(TypeError):
        mx.nd.array({"a": 1})
    with pytest.raises(TypeError):
        mx.nd.exp(np.ones(3))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_dot_large_float32(ta, tb):
    # float32 products of >= 256 on every side run on oxnet's sgemm (on AVX2
    # CPUs), split over threads; partial register tiles on every edge
    r = np.random.RandomState(3)
    a = r.uniform(-1, 1, (257, 300) if ta else (300, 257)).astype(np.float32)
    b = r.uniform(-1, 1, (263, 257) if tb else (257, 263)).astype(np.float32)
    got = mx.nd.dot(mx.nd.array(a), mx.nd.array(b), transpose_a=ta, transpose_b=tb).asnumpy()
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
    ab = np.stack([a, a[::-1]])
    bb = np.stack([b, -b])
    got = mx.nd.batch_dot(mx.nd.array(ab), mx.nd.array(bb), transpose_a=ta, transpose_b=tb).asnumpy()
    for i in range(2):
        want = (ab[i].T if ta else ab[i]).astype(np.float64) @ (bb[i].T if tb else bb[i]).astype(np.float64)
        np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_slice_assign_methods_write_in_place():
    a = mx.nd.zeros((3, 4))
    r = a.slice_assign(mx.nd.ones((2, 2)), (0, 1), (2, 3), (None, None))
    assert r is a
    want = np.zeros((3, 4), np.float32)
    want[0:2, 1:3] = 1
    np.testing.assert_array_equal(a.asnumpy(), want)
    assert a.slice_assign_scalar(7, (1, None), (None, 4), (1, 2)) is a
    want[1:, 0:4:2] = 7
    np.testing.assert_array_equal(a.asnumpy(), want)
    with pytest.raises(mx.base.MXNetError, match="_slice_assign"):
        a.slice_assign(mx.nd.ones((3, 3)), (0, 1), (2, 3), (None, None))


def test_more_operator_methods():
    x = mx.nd.array([1.0, 8.0, 27.0])
    np.testing.assert_allclose(x.rcbrt().asnumpy(), [1, 0.5, 1 / 3], rtol=1e-6)
    assert x.shape_array().asnumpy().tolist() == [3] and x.size_array().asnumpy().tolist() == [3]
    e = np.exp(-x.asnumpy())
    np.testing.assert_allclose(x.softmin().asnumpy(), e / e.sum(), rtol=1e-5)
    y = mx.nd.ones((1, 1, 2, 2)).pad(mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1), constant_value=3)
    np.testing.assert_array_equal(y.asnumpy()[0, 0], np.pad(np.ones((2, 2)), 1, constant_values=3))


def test_split_v2_sections_indices_and_errors():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = mx.nd.array(x)
    for got, want in zip(mx.nd.split_v2(a, 2, axis=2), np.split(x, 2, axis=2)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    for got, want in zip(a.split_v2((1, 1, 3), axis=-1), np.split(x, (1, 1, 3), axis=-1)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.asnumpy(), want)
    one = mx.nd.split_v2(a, 1, axis=0)
    assert isinstance(one, mx.nd.NDArray) and one.shape == (2, 3, 4)
    sq = mx.nd.split_v2(a, 3, axis=1, squeeze_axis=True)
    assert [p.shape for p in sq] == [(2, 4)] * 3
    np.testing.assert_array_equal(sq[2].asnumpy(), x[:, 2])
    with pytest.raises(ValueError, match="equal parts"):
        mx.nd.split_v2(a, 5, axis=2)
    with pytest.raises(ValueError, match="must not decrease"):
        mx.nd.split_v2(a, (3, 1), axis=2)
    with pytest.raises(ValueError, match="must not decrease nor pass"):
        mx.nd.split_v2(a, (2, 9), axis=2)
    with pytest.raises(ValueError, match="squeeze_axis"):
        mx.nd.split_v2(a, 2, axis=2, squeeze_axis=True)
    with pytest.raises(ValueError, match="axis 3"):
        mx.nd.split_v2(a, 2, axis=3)


def test_split_v2_gradient():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        p, q = mx.nd.split_v2(x, (1,), axis=1)
        y = (p * 2).sum() + (q * q).sum()
    y.backward()
    xn = x.asnumpy()
    want = np.concatenate([np.full((2, 1), 2.0), 2 * xn[:, 1:]], axis=1)
    np.testing.assert_allclose(x.grad.asnumpy(), want)


def _np_depth_to_space(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)


def test_depth_to_space_and_back_with_gradients():
    rs = np.random.RandomState(0)
    x = rs.uniform(-1, 1, (2, 12, 3, 5)).astype(np.float32)
    a = mx.nd.array(x)
    a.attach_grad()
    wgt = rs.uniform(-1, 1, (2, 3, 6, 10)).astype(np.float32)
    with mx.autograd.record():
        d = mx.nd.depth_to_space(a, 2)
        y = (d * mx.nd.array(wgt)).sum()
    y.backward()
    np.testing.assert_array_equal(d.asnumpy(), _np_depth_to_space(x, 2))
    # the gradient is the weight moved back: space_to_depth of it
    np.testing.assert_array_equal(a.grad.asnumpy(), mx.nd.space_to_depth(mx.nd.array(wgt), 2).asnumpy())
    np.testing.assert_array_equal(mx.nd.space_to_depth(d, 2).asnumpy(), x)
    with pytest.raises(ValueError, match="divisible by block_size"):
        mx.nd.depth_to_space(mx.nd.ones((1, 6, 2, 2)), 2)
    with pytest.raises(ValueError, match="not divisible by block_size 2"):
        mx.nd.space_to_depth(mx.nd.ones((1, 1, 3, 2)), 2)
    with pytest.raises(ValueError, match="4-D"):
        mx.nd.depth_to_space(mx.nd.ones((4, 2, 2)), 2)


def test_hard_sigmoid_values_and_gradient():
    x = mx.nd.array([-5.0, -1.0, 0.0, 1.0, 2.5, 5.0])  # none exactly where the clip starts
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.hard_sigmoid(x, alpha=0.3, beta=0.4)
    y.backward()
    xn = x.asnumpy()
    np.testing.assert_allclose(y.asnumpy(), np.clip(0.3 * xn + 0.4, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), np.where(np.abs(0.3 * xn + 0.4 - 0.5) < 0.5, 0.3, 0.0), rtol=1e-6)


def test_moments_match_numpy_with_gradient():
    rs = np.random.RandomState(1)
    x = rs.uniform(-2, 2, (3, 4, 5)).astype(np.float32)
    a = mx.nd.array(x)
    for axes, keep in [((1,), False), ((0, 2), True), ((0, 1, 2), False), (2, False)]:
        m, v = mx.nd.moments(a, axes=axes, keepdims=keep)
        ax = axes if isinstance(axes, tuple) else (axes,)
        np.testing.assert_allclose(m.asnumpy(), x.mean(axis=ax, keepdims=keep), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(v.asnumpy(), x.var(axis=ax, keepdims=keep), rtol=1e-5, atol=1e-6)
    a.attach_grad()
    with mx.autograd.record():
        _, v = mx.nd.moments(a, axes=(2,))
        y = v.sum()
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * (x - x.mean(axis=2, keepdims=True)) / 5, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="axes"):
        mx.nd.moments(a)


def test_argmax_channel_and_linspace():
    assert mx.nd.argmax_channel(mx.nd.array([[1, 3, 2], [9, 1, 1]])).asnumpy().tolist() == [1, 0]
    for args, kw in [((0, 1, 5), {}), ((0, 1, 5), {"endpoint": False}), ((1, 2, 1), {}), ((-3, 11, 13), {}),
                     ((0.1, 0.7, 7), {}), ((0, 10, 4), {"dtype": "int32"}), ((2, 5, 0), {})]:
        got = mx.nd.linspace(*args, **kw)
        want = np.linspace(*args, endpoint=kw.get("endpoint", True)).astype(kw.get("dtype", "float32"))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(ValueError, match="num"):
        mx.nd.linspace(0, 1, -1)


def test_ravel_and_unravel_index():
    rs = np.random.RandomState(2)
    shape = (4, 5, 6)
    flat = rs.randint(0, 120, size=(3, 7))
    multi = np.array(np.unravel_index(flat, shape))
    got = mx.nd.unravel_index(mx.nd.array(flat, dtype="int64"), shape=shape)
    assert got.dtype == np.int64 and got.shape == (3, 3, 7)
    np.testing.assert_array_equal(got.asnumpy(), multi)
    back = mx.nd.ravel_multi_index(mx.nd.array(multi, dtype="int32"), shape=shape)
    assert back.dtype == np.int32
    np.testing.assert_array_equal(back.asnumpy(), flat)
    # MXNet's arithmetic outside the range: no wrapping, truncating division
    assert mx.nd.unravel_index(mx.nd.array([50, -1]), shape=(7, 6)).asnumpy().tolist() == [[8, 0], [2, -1]]
    assert mx.nd.ravel_multi_index(mx.nd.array([[3, -1], [4, 5]]), shape=(7, 6)).asnumpy().tolist() == [22, -1]
    with pytest.raises(ValueError, match="must start with len"):
        mx.nd.ravel_multi_index(mx.nd.array([[1, 2]]), shape=(7, 6))
    with pytest.raises(ValueError, match="positive ints"):
        mx.nd.unravel_index(mx.nd.array([1]), shape=(0, 3))


def test_absurd_shapes_raise_value_errors_not_panics():
    # element counts that overflow (or byte sizes past isize::MAX) are shape
    # errors at the call, never a PanicException or a wrapped, small block
    big = (2**40, 2**40)
    calls = [lambda: mx.nd.zeros(big), lambda: mx.nd.empty(big), lambda: mx.nd.ones((2**62, 4)),
             lambda: mx.nd.full(big, 1), lambda: mx.nd.arange(0, 2**62),
             lambda: mx.nd.dot(mx.nd.zeros((2**31, 0)), mx.nd.zeros((0, 2**33))),
             lambda: mx.nd.broadcast_to(mx.nd.zeros((1, 1)), shape=big)]
    for f in calls:
        with pytest.raises(ValueError, match="too large"):
            f()


def test_depth_space_and_argmax_channel_methods():
    x = mx.nd.array(np.arange(32, dtype=np.float32).reshape(1, 8, 2, 2))
    assert_equal = np.testing.assert_array_equal
    assert_equal(x.depth_to_space(2).asnumpy(), mx.nd.depth_to_space(x, 2).asnumpy())
    y = x.depth_to_space(2)
    assert_equal(y.space_to_depth(2).asnumpy(), x.asnumpy())
    z = mx.nd.array([[1, 5, 2], [7, 0, 3]])
    assert z.argmax_channel().asnumpy().tolist() == [1, 0]
