"""Small MXNet 1.9.1 API gaps: NDArray._fresh_grad, NDArray.tostype /
mx.nd.cast_storage (dense storage only), the deprecated mx.nd.imdecode.

The _fresh_grad expectations are what real MXNet 1.9.1 printed for the same
scripts (the flag lives on the variable, not on its gradient buffer)."""
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd

IMAGES = os.path.join(os.path.dirname(__file__), "..", "data", "images")


def _read(name):
    with open(os.path.join(IMAGES, name), "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------
# _fresh_grad
# ---------------------------------------------------------------------------


def _square_sum_backward(x):
    with autograd.record():
        y = (x * x).sum()
    y.backward()


def test_fresh_grad_set_by_backward_on_the_variable():
    x = mx.nd.array([1.0, 2.0])
    assert x._fresh_grad == 0  # not a variable: 0, as in MXNet
    x.attach_grad()
    assert x._fresh_grad == 0 and x.grad._fresh_grad == 0
    _square_sum_backward(x)
    assert x._fresh_grad == 1
    assert type(x._fresh_grad) is int  # MXNet returns the C int
    assert x.grad._fresh_grad == 0  # the gradient buffer carries no flag
    x._fresh_grad = False
    assert x._fresh_grad == 0
    _square_sum_backward(x)
    assert x._fresh_grad == 1
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])


def test_fresh_grad_add_req_and_mark_variables():
    z = mx.nd.array([1.0, 2.0])
    z.attach_grad(grad_req="add")
    _square_sum_backward(z)
    assert z._fresh_grad == 1
    a = mx.nd.array([3.0])
    ga = mx.nd.zeros(1)
    autograd.mark_variables([a], [ga])
    with autograd.record():
        b = a * 2
    b.backward()
    assert a._fresh_grad == 1 and ga._fresh_grad == 0
    # a view of the buffer is a different array: no flag
    assert ga.reshape((1,))._fresh_grad == 0


def test_fresh_grad_only_variables_in_the_graph():
    u = mx.nd.ones(1)
    u.attach_grad()
    w = mx.nd.ones(1)
    w.attach_grad()
    with autograd.record():
        o = u * 2
    o.backward()
    assert u._fresh_grad == 1 and w._fresh_grad == 0


def test_fresh_grad_not_set_by_autograd_grad_or_null_req():
    c = mx.nd.array([1.0])
    c.attach_grad()
    with autograd.record():
        d = c * 3
    autograd.grad(d, [c])
    assert c._fresh_grad == 0
    p = mx.nd.array([1.0])
    p.attach_grad(grad_req="null")
    q = mx.nd.array([1.0])
    q.attach_grad()
    with autograd.record():
        r = p * q
    r.backward()
    assert p._fresh_grad == 0 and q._fresh_grad == 1


def test_fresh_grad_reset_by_attach_grad():
    x = mx.nd.array([1.0])
    x.attach_grad()
    _square_sum_backward(x)
    assert x._fresh_grad == 1
    x.attach_grad()
    assert x._fresh_grad == 0
    # a copy is not a variable
    _square_sum_backward(x)
    assert x.copy()._fresh_grad == 0
    # the flag is per array object (detach makes a new, plain one)
    assert x.detach()._fresh_grad == 0 and x._fresh_grad == 1


def test_fresh_grad_setter_needs_a_variable():
    p = mx.nd.ones(2)
    with pytest.raises(mx.base.MXNetError, match="not been marked as a variable"):
        p._fresh_grad = 1
    x = mx.nd.ones(2)
    x.attach_grad()
    with pytest.raises(mx.base.MXNetError, match="not been marked as a variable"):
        x.grad._fresh_grad = False
    x._fresh_grad = 1
    assert x._fresh_grad == 1
    # a recorded result carries autograd state too: MXNet lets its flag be
    # set (backward never sets it); its detached copy has none
    with autograd.record():
        y = x * 2
    assert y._fresh_grad == 0
    y._fresh_grad = True
    assert y._fresh_grad == 1
    y.backward()
    with pytest.raises(mx.base.MXNetError, match="not been marked as a variable"):
        y.detach()._fresh_grad = True


# ---------------------------------------------------------------------------
# tostype / cast_storage
# ---------------------------------------------------------------------------


def test_tostype_default_is_a_copy():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert a.stype == "default"
    b = a.tostype("default")
    assert b is not a and b.stype == "default"
    b[0, 0] = 9
    assert a.asnumpy()[0, 0] == 1  # MXNet returns a copy too
    c = mx.nd.cast_storage(a, "default")
    c[0, 0] = 7
    assert a.asnumpy()[0, 0] == 1
    i = mx.nd.cast_storage(mx.nd.array([1, 2], dtype="int32"), stype="default")
    assert i.dtype == np.int32


def test_tostype_gradient_passes_through():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x.tostype("default") * 2
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_stypes_raise(stype):
    a = mx.nd.ones((2, 3))
    with pytest.raises(ValueError, match="sparse storage is not supported"):
        a.tostype(stype)
    with pytest.raises(ValueError, match="sparse storage is not supported"):
        mx.nd.cast_storage(a, stype=stype)


def test_cast_storage_bad_stype():
    with pytest.raises(ValueError, match="'stype' must be one of"):
        mx.nd.cast_storage(mx.nd.ones(2), stype="dense")
    with pytest.raises(ValueError, match="stype"):
        mx.nd.cast_storage(mx.nd.ones(2))
    # MXNet's own message for a CSR of the wrong rank
    with pytest.raises(ValueError, match="should be 2 Dimensional"):
        mx.nd.ones(3).tostype("csr")


# ---------------------------------------------------------------------------
# imdecode (MXNet 1.9.1's Python wrapper cannot call its _imdecode from
# Python 3; the layout follows its C++ Imdecode: CHW, OpenCV's BGR order,
# float32 or mean's dtype, clip then subtract mean, out[index])
# ---------------------------------------------------------------------------


def _bgr_chw(buf, flag=1):
    img = mx.image.imdecode(buf, flag=flag, to_rgb=False).asnumpy()
    return img.transpose(2, 0, 1).astype(np.float64)


@pytest.mark.parametrize("name", ["chelsea_120x80.png", "coffee_50x40_prog_422.jpg"])
def test_imdecode_layout(name):
    buf = _read(name)
    ref = _bgr_chw(buf)
    a = mx.nd.imdecode(buf)
    assert a.shape == ref.shape and a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), ref)
    # OpenCV's BGR order: the reverse of mx.image's default RGB
    rgb = mx.image.imdecode(buf).asnumpy().transpose(2, 0, 1)
    np.testing.assert_array_equal(a.asnumpy(), rgb[::-1])
    g = mx.nd.imdecode(buf, channels=1)
    np.testing.assert_array_equal(g.asnumpy(), _bgr_chw(buf, flag=0))
    two = mx.nd.imdecode(np.frombuffer(buf, dtype=np.uint8), channels=2)
    np.testing.assert_array_equal(two.asnumpy(), ref[:2])


def test_imdecode_clip_and_mean():
    buf = _read("chelsea_120x80.png")
    ref = _bgr_chw(buf)
    c = mx.nd.imdecode(buf, clip_rect=(1, 2, 6, 9))
    np.testing.assert_array_equal(c.asnumpy(), ref[:, 2:9, 1:6])
    mean = mx.nd.array(np.arange(3 * 7 * 5).reshape(3, 7, 5), dtype="float64")
    m = mx.nd.imdecode(buf, clip_rect=(1, 2, 6, 9), mean=mean)
    assert m.dtype == np.float64
    np.testing.assert_array_equal(m.asnumpy(), ref[:, 2:9, 1:6] - mean.asnumpy())
    # y0 == y1 keeps the whole image (x0, x1 are then ignored, as in MXNet)
    assert mx.nd.imdecode(buf, clip_rect=(3, 4, 9, 4)).shape == (3, 80, 120)


def test_imdecode_out_and_index():
    buf = _read("coffee_50x40_prog_422.jpg")
    ref = _bgr_chw(buf)
    out = mx.nd.zeros((2, 3, 40, 50))
    r = mx.nd.imdecode(buf, out=out, index=1)
    assert r is out
    np.testing.assert_array_equal(out.asnumpy()[0], 0)
    np.testing.assert_array_equal(out.asnumpy()[1], ref)
    mean = mx.nd.ones((3, 40, 50)) * 10
    mx.nd.imdecode(buf, out=out, index=0, mean=mean)
    np.testing.assert_array_equal(out.asnumpy()[0], ref - 10)
    o3 = mx.nd.zeros((3, 40, 50), dtype="uint8")
    assert mx.nd.imdecode(buf, out=o3) is o3
    np.testing.assert_array_equal(o3.asnumpy(), ref)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"clip_rect": (0, 0, 121, 80)}, "clip_rect"),
        ({"clip_rect": (5, 0, 5, 10)}, "clip_rect"),
        ({"clip_rect": (0, 0, 1)}, "clip_rect"),
        ({"channels": 4}, "channels"),
        ({"channels": 0}, "channels"),
        ({"out": "buf"}, "out must be an NDArray"),
        ({"mean": np.zeros((3, 80, 120))}, "mean must be an NDArray"),
    ],
)
def test_imdecode_bad_arguments(kwargs, match):
    buf = _read("chelsea_120x80.png")
    with pytest.raises((ValueError, TypeError), match=match):
        mx.nd.imdecode(buf, **kwargs)


def test_imdecode_shape_errors():
    buf = _read("chelsea_120x80.png")
    with pytest.raises(ValueError, match=r"out has shape \(3, 2, 2\)"):
        mx.nd.imdecode(buf, out=mx.nd.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match=r"mean has shape"):
        mx.nd.imdecode(buf, mean=mx.nd.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="index 1 is out of range"):
        mx.nd.imdecode(buf, out=mx.nd.zeros((1, 3, 80, 120)), index=1)
    with pytest.raises(ValueError, match="3-D .* or 4-D"):
        mx.nd.imdecode(buf, out=mx.nd.zeros((80, 120)))
    with pytest.raises(mx.base.MXNetError, match="neither JPEG nor PNG"):
        mx.nd.imdecode(b"not an image")


# ---------------------------------------------------------------------------
# mx.image.imrotate / random_rotate: values printed by MXNet 1.9.1 for
# src = (arange(80) % 7).reshape(2, 2, 4, 5), angles [30, -100] (and 45 for
# the single image src[0]), rounded to 4 decimals
# ---------------------------------------------------------------------------

_ROT_PLAIN = [[[[0.2046, 1.3206, 2.3481, 2.2141, 0.8277], [0.8529, 2.695, 0.5849, 3.4905, 0.4342], [4.683, 5.018, 4.5323, 4.75, 4.39], [1.762, 2.7859, 2.6519, 2.1842, 0.8002]], [[0.0036, 0.6196, 1.6998, 1.2141, 1.0384], [3.0012, 3.2189, 4.4833, 2.951, 5.8481], [4.1435, 4.018, 3.884, 3.75, 3.616], [1.2441, 1.7859, 1.6519, 1.4833, 0.5993]]], [[[0.2104, 1.7895, 2.0018, 3.7978, 4.0931], [0.3792, 1.538, 3.334, 4.1996, 3.1096], [1.1355, 2.8701, 4.666, 2.4606, 0.0644], [2.2338, 4.2022, 3.4578, 2.0359, 0.305]], [[1.5844, 4.4228, 1.0018, 2.7978, 3.3022], [0.3862, 1.8135, 2.334, 4.1299, 3.185], [0.5183, 1.8701, 3.666, 4.1865, 2.2752], [1.4429, 3.2022, 4.9982, 1.5772, 0.0351]]]]
_ROT_ZOOM_IN = [[[[1.2851, 1.4952, 1.2455, 1.1556, 1.7687], [3.6779, 2.3668, 1.2156, 3.4731, 3.7014], [5.4312, 4.382, 4.0304, 5.1617, 5.0718], [3.9342, 3.8444, 3.7545, 3.6647, 3.5053]], [[0.3271, 2.3893, 2.4329, 0.1556, 2.1619], [2.7006, 4.9581, 4.8208, 3.2743, 4.7306], [4.4312, 4.3414, 4.2515, 4.1617, 4.0718], [2.9342, 2.8444, 2.7545, 2.6647, 2.5472]]], [[[0.1785, 1.2989, 2.5775, 3.8561, 5.1346], [0.9687, 2.2473, 3.5258, 4.2917, 3.7169], [1.917, 3.1956, 4.4742, 3.9124, 0.2832], [2.8654, 4.1439, 5.1747, 3.9953, 0.7339]], [[4.4035, 2.8099, 1.5775, 2.8561, 4.1346], [0.6658, 1.6649, 2.5258, 3.8044, 5.083], [0.917, 2.1956, 3.4742, 4.3351, 5.3342], [1.8654, 3.1439, 4.4225, 3.1901, 1.0707]]]]
_ROT_ZOOM_OUT = [[[[0.0, 0.0, 1.7559, 1.9974, 0.0], [0.0, 1.5637, 0.664, 1.8751, 0.0772], [0.1463, 4.5357, 4.336, 4.1362, 1.4356], [0.0, 0.9549, 1.0596, 0.0, 0.0]], [[0.0, 0.0, 1.1928, 1.4069, 0.0], [1.7227, 0.6258, 3.4153, 3.6634, 0.2374], [0.2097, 3.5357, 3.336, 3.1362, 1.1485], [0.0, 0.3645, 0.4965, 0.0, 0.0]]], [[[0.0, 3.7438, 1.1732, 2.7482, 0.2169], [0.0, 0.5493, 3.0644, 5.2438, 0.0], [0.0, 2.4129, 4.9356, 0.4454, 0.0], [0.1302, 2.7007, 0.6204, 1.3748, 0.0]], [[0.0, 3.8809, 0.2481, 2.0671, 0.1735], [0.0, 2.6723, 2.0644, 4.5871, 0.0], [0.0, 1.4129, 3.9356, 3.2961, 0.0], [0.0868, 2.0196, 5.302, 0.624, 0.0]]]]
_ROT_SINGLE45 = [[[0.0414, 1.7234, 2.182, 1.7129, 0.1538], [0.6878, 1.8551, 1.0858, 4.966, 3.2853], [2.4289, 5.6465, 4.2766, 4.2322, 2.9734], [2.4718, 3.5251, 2.818, 1.9378, 0.0843]], [[0.0162, 0.9911, 1.182, 1.5, 2.7662], [0.2665, 2.8431, 3.9482, 4.3284, 4.6465], [4.4421, 4.6465, 3.9393, 3.2322, 2.2411], [1.9467, 2.5251, 1.818, 1.2056, 0.0591]]]


def _rot_src():
    return mx.nd.array((np.arange(80) % 7).reshape(2, 2, 4, 5).astype(np.float32))


@pytest.mark.parametrize("kwargs, expected", [({}, _ROT_PLAIN), ({"zoom_in": True}, _ROT_ZOOM_IN),
                                              ({"zoom_out": True}, _ROT_ZOOM_OUT)])
def test_imrotate_matches_mxnet(kwargs, expected):
    r = mx.image.imrotate(_rot_src(), mx.nd.array([30, -100]), **kwargs)
    assert r.shape == (2, 2, 4, 5) and r.dtype == np.float32
    np.testing.assert_allclose(r.asnumpy(), np.array(expected), atol=2e-4)


def test_imrotate_single_image_and_scalar():
    src = _rot_src()
    r = mx.image.imrotate(src[0], 45)
    np.testing.assert_allclose(r.asnumpy(), np.array(_ROT_SINGLE45), atol=2e-4)
    # a scalar angle applies to every image of a batch; 0 degrees is the identity
    np.testing.assert_allclose(mx.image.imrotate(src, 0).asnumpy(), src.asnumpy(), atol=1e-5)
    r2 = mx.image.imrotate(src, 45)
    np.testing.assert_allclose(r2.asnumpy()[0], r.asnumpy(), atol=1e-6)


def test_imrotate_errors():
    src = _rot_src()
    with pytest.raises(ValueError, match="cannot be both True"):
        mx.image.imrotate(src, 10, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(src.astype("float64"), 10)
    with pytest.raises(TypeError, match="scalar"):
        mx.image.imrotate(src[0], mx.nd.array([10]))
    with pytest.raises(ValueError, match="3D and 4D"):
        mx.image.imrotate(src[0][0], 10)
    with pytest.raises(ValueError, match="number of rotation angles"):
        mx.image.imrotate(src, mx.nd.array([1, 2, 3]))


def test_random_rotate_draws_from_numpy():
    src = _rot_src()
    np.random.seed(3)
    r = mx.image.random_rotate(src, (-40, 40), zoom_in=True)
    np.random.seed(3)
    angles = np.random.uniform(-40, 40, size=2)
    np.testing.assert_allclose(r.asnumpy(), mx.image.imrotate(src, mx.nd.array(angles), zoom_in=True).asnumpy())
    np.random.seed(5)
    r1 = mx.image.random_rotate(src[1], (10, 20))
    np.random.seed(5)
    np.testing.assert_allclose(r1.asnumpy(), mx.image.imrotate(src[1], np.random.uniform(10, 20)).asnumpy())


# ---------------------------------------------------------------------------
# mx.test_utils helpers MXNet 1.9.1 has
# ---------------------------------------------------------------------------

tu = mx.test_utils


def test_tolerance_getters():
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20  # float64 defaults, as MXNet's
    assert tu.get_rtol(None, np.float32) == 1e-4 and tu.get_atol(None, np.dtype(np.float16)) == 1e-1
    assert tu.get_rtol(0.5) == 0.5 and tu.get_atol(0.25, np.float32) == 0.25
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1
    assert tu.effective_dtype(mx.nd.ones(2)) == np.dtype(np.float32)
    assert tu.effective_dtype(np.ones(2, np.int64)) == np.dtype(np.int64)


def test_assert_variants():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([1.0, 2.0, np.nan])
    tu.assert_almost_equal_ignore_nan(a, b)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(a, b + 1)
    assert np.isnan(a[1])  # the inputs are left alone
    tu.assert_allclose(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))
    x = np.arange(10.0)
    y = x.copy()
    y[3] = 100
    tu.assert_almost_equal_with_err(x, y, etol=0.2)
    with pytest.raises(AssertionError, match="mismatch rate 10.00%"):
        tu.assert_almost_equal_with_err(x, y, etol=0.05)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(x, y)
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(int, ValueError, "3")
    tu.compare_ndarray_tuple((mx.nd.ones(2), (np.zeros(1),)), (np.ones(2), (np.zeros(1),)))
    tu.compare_ndarray_tuple(None, mx.nd.ones(1))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((mx.nd.ones(2),), (np.zeros(2),))


def test_numpy_helpers():
    x = np.array([[1.0, -2.0], [3.0, 4.0]])
    out = tu.assign_each(x, abs)
    assert out.dtype == np.float64 and out.tolist() == [[1, 2], [3, 4]]
    assert tu.assign_each(x, None) is not x and tu.assign_each(x, None).tolist() == x.tolist()
    assert tu.assign_each2(x, x, lambda p, q: p * q).tolist() == (x * x).tolist()
    d = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(d, (0, 2), True, np.sum), d.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(d, 1, False, np.max), d.max(axis=1))
    np.testing.assert_array_equal(tu.np_reduce(d, None, False, np.sum), d.sum())
    np.testing.assert_array_equal(tu.collapse_sum_like(d, (3, 1)), d.sum(axis=(0, 2)).reshape(3, 1))
    assert tu.collapse_sum_like(np.zeros((0, 3)), (3,)).tolist() == [0, 0, 0]


def test_random_helpers():
    np.random.seed(0)
    a = tu.random_arrays((2, 3))
    b, c = tu.random_arrays((4,), ())
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.shape == (4,) and c.shape == ()
    (u,) = tu.random_uniform_arrays((50,), low=2, high=3, dtype=np.float64)
    assert u.dtype == np.float64 and u.min() >= 2 and u.max() < 3
    with pytest.raises(TypeError):
        tu.random_uniform_arrays((2,), lo=1)
    pop = list(range(10))
    s = tu.random_sample(pop, 4)
    assert len(s) == 4 and len(set(s)) == 4 and pop == list(range(10))
    x, y = tu.rand_coord_2d(0, 5, 10, 12)
    assert 0 <= x < 5 and 10 <= y < 12
    m = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(m @ m.T, np.eye(4), atol=1e-10)
    for g in (tu.new_matrix_with_real_eigvals_nd((2, 3, 3)), tu.new_sym_matrix_with_real_eigvals_nd((2, 3, 3))):
        assert g.shape == (2, 3, 3)
        ev = np.linalg.eigvals(g)
        assert np.abs(ev.imag).max() < 1e-8 and np.abs(ev.real).max() <= 10
    s2 = tu.new_sym_matrix_with_real_eigvals_2d(3)
    np.testing.assert_allclose(s2, s2.T, atol=1e-12)
    assert tu.mean_check(lambda n: np.random.normal(1.0, 2.0, size=n), 1.0, 2.0, nsamples=20000)
    assert not tu.mean_check(lambda n: np.random.normal(1.5, 2.0, size=n), 1.0, 2.0, nsamples=20000)
    assert tu.var_check(lambda n: np.random.normal(0, 2.0, size=n), 2.0, nsamples=20000)
    assert not tu.var_check(lambda n: np.random.normal(0, 3.0, size=n), 2.0, nsamples=20000)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: 2 * q, 4)
    assert buckets == [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0)] and probs == [0.25] * 4


def test_ndarray_helpers():
    a = mx.nd.ones((2, 3))
    assert tu.same_array(a, a[0:2]) and not tu.same_array(a, a.copy())
    np.testing.assert_array_equal(a.asnumpy(), 1)
    v = tu.create_vector(4)
    assert v.dtype == np.int64 and v.asnumpy().tolist() == [0, 1, 2, 3]
    t = tu.create_2d_tensor(3, 2, dtype=np.int32)
    assert t.dtype == np.int32 and t.asnumpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    i = tu.get_identity_mat(3)
    assert i.dtype == np.float32 and i.asnumpy().tolist() == np.eye(3).tolist()
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)


def test_environment_and_misc(tmp_path):
    name = "OXNET_TEST_API_GAPS_VAR"
    assert tu.getenv(name) is None
    with tu.environment(name, "1"):
        assert tu.getenv(name) == "1" and os.environ[name] == "1"
        with tu.environment({name: None}):
            assert tu.getenv(name) is None
        assert tu.getenv(name) == "1"
    assert name not in os.environ
    tu.setenv(name, "x")
    assert os.environ[name] == "x"
    tu.setenv(name, None)
    assert name not in os.environ
    with tu.discard_stderr():
        pass
    assert list(tu.list_gpus()) == [] and tu.is_op_runnable()
    assert tu.get_im2rec_path().endswith(os.path.join("tools", "im2rec.py"))
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "im2rec.py").write_text("")
    with tu.environment("MXNET_HOME", str(tmp_path)):
        assert tu.get_im2rec_path() == str(tmp_path / "tools" / "im2rec.py")
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2

    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def bad():
        raise AssertionError("always")

    with pytest.raises(AssertionError, match="always"):
        bad()


def test_dummy_iter():
    it = mx.io.NDArrayIter(np.arange(12).reshape(6, 2), np.arange(6), batch_size=2)
    d = tu.DummyIter(it)
    assert isinstance(d, mx.io.DataIter) and d.batch_size == 2
    assert d.provide_data == it.provide_data
    first = next(d)
    assert all(b is first for _, b in zip(range(5), d))
    assert first.data[0].asnumpy().tolist() == [[0, 1], [2, 3]]


def test_as_nd_ndarray_is_self():
    a = mx.nd.ones(3)
    assert a.as_nd_ndarray() is a


# ---------------------------------------------------------------------------
# mx.io.PrefetchingIter (the same script printed the same batches, pads and
# provide_data with MXNet 1.9.1)
# ---------------------------------------------------------------------------


def _two_iters():
    i1 = mx.io.NDArrayIter({"data": mx.nd.array(np.arange(20).reshape(10, 2))}, mx.nd.array(np.arange(10)),
                           batch_size=4)
    i2 = mx.io.NDArrayIter({"data": mx.nd.array(np.arange(30).reshape(10, 3))}, batch_size=4)
    return i1, i2


def test_prefetching_iter_joins_and_renames():
    p = mx.io.PrefetchingIter(list(_two_iters()), rename_data=[{"data": "d1"}, {"data": "d2"}])
    assert [(d.name, d.shape) for d in p.provide_data] == [("d1", (4, 2)), ("d2", (4, 3))]
    assert [(d.name, d.shape) for d in p.provide_label] == [("softmax_label", (4,))]
    assert p.batch_size == 4 and isinstance(p, mx.io.DataIter)
    r1, r2 = _two_iters()
    for epoch in range(2):
        got = list(p)
        want = list(zip(r1, r2))
        assert len(got) == len(want) == 3
        for b, (w1, w2) in zip(got, want):
            assert len(b.data) == 2 and len(b.label) == 1
            np.testing.assert_array_equal(b.data[0].asnumpy(), w1.data[0].asnumpy())
            np.testing.assert_array_equal(b.data[1].asnumpy(), w2.data[0].asnumpy())
            np.testing.assert_array_equal(b.label[0].asnumpy(), w1.label[0].asnumpy())
            assert b.pad == w1.pad and [d.name for d in b.provide_data] == ["d1", "d2"]
        assert got[-1].pad == 2
        assert not p.iter_next()  # stays at the end until reset
        p.reset()
        r1.reset()
        r2.reset()


def test_prefetching_iter_single_and_errors():
    p = mx.io.PrefetchingIter(mx.io.NDArrayIter(np.ones((3, 2)), batch_size=2, last_batch_handle="discard"))
    assert [b.data[0].shape for b in p] == [(2, 2)]
    with pytest.raises(StopIteration):
        p.next()
    a = mx.io.NDArrayIter(np.ones((4, 2)), batch_size=2)
    b = mx.io.NDArrayIter(np.ones((6, 2)), batch_size=2)
    p = mx.io.PrefetchingIter([a, b])
    p.next()
    p.next()
    with pytest.raises(ValueError, match="mismatches between iterators"):
        p.next()
    with pytest.raises(ValueError, match="at least one"):
        mx.io.PrefetchingIter([])

    class Broken(mx.io.NDArrayIter):
        def next(self):
            raise RuntimeError("broken source")

    p = mx.io.PrefetchingIter(Broken(np.ones((4, 2)), batch_size=2))
    with pytest.raises(RuntimeError, match="broken source"):
        p.next()


def test_chi_square_survival_function():
    # chi-square 95% quantiles for 1 and 4 degrees of freedom; 2 dof is exp(-x/2)
    assert abs(tu._chi2_sf(3.841458820694124, 1) - 0.05) < 1e-9
    assert abs(tu._chi2_sf(9.487729036781154, 4) - 0.05) < 1e-9
    assert abs(tu._chi2_sf(0.5, 4) - 0.9735009788392561) < 1e-9  # series branch
    for x in (0.1, 1.0, 7.5, 40.0):
        assert abs(tu._chi2_sf(x, 2) - np.exp(-x / 2)) < 1e-12
    assert tu._chi2_sf(0.0, 3) == 1.0


def test_chi_square_check_and_verify_generator():
    np.random.seed(7)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q, 5)  # uniform on [0, 1)
    p, obs, exp = tu.chi_square_check(lambda n: np.random.uniform(0, 1, size=n), buckets, probs, nsamples=20000)
    assert p > 1e-3 and obs.sum() == 20000 and exp.tolist() == [4000] * 5
    p, _, _ = tu.chi_square_check(lambda n: np.random.uniform(0, 0.9, size=n), buckets, probs, nsamples=20000)
    assert p < 1e-6
    p, obs, _ = tu.chi_square_check(lambda n: np.random.randint(0, 3, size=n), [0, 1, 2], [1 / 3.0] * 3,
                                    nsamples=9000)
    assert p > 1e-3 and obs.sum() == 9000
    ps = tu.verify_generator(lambda n: np.random.randint(0, 3, size=n), [0, 1, 2], [1 / 3.0] * 3,
                             nsamples=3000, nrepeat=3)
    assert len(ps) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: np.zeros(n, dtype=int), [0, 1, 2], [1 / 3.0] * 3, nsamples=3000, nrepeat=2)


def test_run_environment_predicates():
    import platform

    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run()
    with tu.environment("CD_JOB", None):
        assert not tu.is_cd_run()
    assert tu.is_aarch64_run() == (platform.machine() == "aarch64")
    assert tu.has_tvm_ops() is False
    a, b = np.array([1.0, 2.5]), np.array([1.0, 2.0])
    assert tu.locationError(a, b, (1,), ("x", "y"), maxError=True) == \
        "Location of maximum error: (1,), x=2.50000000, y=2.00000000"
