"""Behaviours MXNet 1.9.1's own unit tests check (test_ndarray, test_operator, test_image,
test_autograd), ported as small cases; golden numbers come from MXNet 1.9.1 (pip wheel, with
MXNET_MKLDNN_ENABLED=0 where MKL-DNN refuses the case) as noted."""
import pickle

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError


# ---- NDArray methods with inplace= ------------------------------------------------------------

def test_flatten_inplace_is_a_view():
    t = (mx.nd.arange(30) + 1).reshape(2, 3, 5)
    copy = t.flatten()
    ref = t.flatten(inplace=True)
    assert ref.shape == copy.shape == (2, 15)
    t[0] = -1
    assert (ref.asnumpy()[0] == -1).all() and (copy.asnumpy()[0] != -1).all()


@pytest.mark.parametrize("axis", [None, 0, 2, -1, (0, 4), (0, 2, 4), -5])
def test_squeeze_inplace_matches_copy(axis):
    x = mx.nd.array(np.random.uniform(-1, 1, (1, 5, 1, 3, 1)))
    want = np.squeeze(x.asnumpy(), axis=axis)
    ref = x.squeeze(axis=axis, inplace=True)
    np.testing.assert_array_equal(x.squeeze(axis=axis).asnumpy(), want)
    np.testing.assert_array_equal(ref.asnumpy(), want)
    x[0] = 7
    assert (ref.asnumpy() == 7).all()  # shares x's memory


def test_squeeze_inplace_all_ones_and_errors():
    assert mx.nd.ones((1, 1, 1)).squeeze(inplace=True).shape == (1,)  # MXNet keeps one axis
    with pytest.raises(ValueError, match="must have length 1"):
        mx.nd.ones((2, 1)).squeeze(axis=0, inplace=True)
    with pytest.raises(ValueError, match="out of range"):
        mx.nd.ones((2, 1)).squeeze(axis=2, inplace=True)
    with pytest.raises(ValueError, match="duplicates"):
        mx.nd.ones((1, 1)).squeeze(axis=(0, 0), inplace=True)


def test_expand_dims_inplace():
    for ndim in range(1, 4):
        for axis in range(-ndim - 1, ndim + 1):
            x = mx.nd.array(np.random.uniform(size=(2,) * ndim))
            ref = x.expand_dims(axis=axis, inplace=True)
            np.testing.assert_array_equal(ref.asnumpy(), np.expand_dims(x.asnumpy(), axis))
            x[0] = -1
            assert (ref.asnumpy() == np.expand_dims(x.asnumpy(), axis)).all()
    with pytest.raises(ValueError, match="out of range"):
        mx.nd.ones((2, 3)).expand_dims(3, inplace=True)


# ---- arguments in other spellings ----------------------------------------------------------------

def test_broadcast_to_numpy_shape():
    x = mx.nd.array(np.random.rand(1, 3, 1))
    target = np.array([4, 3, 2])  # a NumPy array as the shape, as MXNet's tests pass it
    y = x.broadcast_to(shape=target)
    assert y.shape == (4, 3, 2)
    np.testing.assert_array_equal(y.asnumpy(), np.broadcast_to(x.asnumpy(), (4, 3, 2)))


def test_broadcast_like_empty_axes_raise():
    lhs, rhs = mx.nd.ones((1, 3)), mx.nd.ones((4, 3))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (4, 3)
    with pytest.raises(MXNetError, match="empty axes tuple"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


@pytest.mark.parametrize("src,dst,shape", [
    ([0, 1], [2, 3], (2, 3, 4, 1)), ([2, 3], [0, 1], (2, 3, 4, 1)), ([0, 1, 2], [2, 3, 0], (2, 3, 4, 1)),
    ([3, 0], [1, 0], (4, 3, 1, 2)), ([0, 3], [0, 1], (4, 3, 1, 2)), (range(4), range(4), (4, 1, 2, 3)),
    (0, -1, (1, 2, 3, 4)),
])
def test_moveaxis_lists(src, dst, shape):
    x = np.arange(24.0).reshape(4, 1, 2, 3)
    y = mx.nd.moveaxis(mx.nd.array(x), src, dst)
    assert y.shape == shape
    np.testing.assert_array_equal(y.asnumpy(), np.moveaxis(x, src, dst))


@pytest.mark.parametrize("src,dst", [(3, 0), (-4, 0), (0, 5), ([0, 0], [0, 1]), ([0, 1], [1, 1]), (0, [0, 1]),
                                     ([0, 1], [0])])
def test_moveaxis_errors(src, dst):
    with pytest.raises(ValueError):
        mx.nd.moveaxis(mx.nd.ones((1, 2, 3)), src, dst)


def test_array_from_scalars_is_zero_dimensional():
    # MXNet 1.9.1: nd.array(np.ones([])).shape == (), nd.array(3.0).shape == ()
    for src in (np.ones([]), 3.0, np.float32(2)):
        a = mx.nd.array(src)
        assert a.shape == ()
        assert a.asnumpy() == np.asarray(src)


# ---- indexing ---------------------------------------------------------------------------------

def test_setitem_value_with_extra_leading_axes():
    b = mx.nd.zeros(1)
    b[0] = np.array([47.844944], dtype=np.float32)  # (1,) into one element
    assert b.asscalar() == np.float32(47.844944)
    c = mx.nd.zeros((2, 3))
    c[1] = np.ones((1, 1, 3))
    c[0] = mx.nd.array([[2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(c.asnumpy(), [[2, 3, 4], [1, 1, 1]])
    with pytest.raises(ValueError, match="could not broadcast"):
        c[0] = np.ones((2, 3))


def test_tuple_inside_index_is_an_integer_array():
    x = np.arange(8 * 16 * 9 * 9).reshape(8, 16, 9, 9)
    key = ([1, 2], slice(3, 5), (2, 3), [3, 4])
    a = mx.nd.array(x, dtype="int32")
    a.attach_grad()
    with mx.autograd.record():
        y = a[key]
    y.backward()
    np_key = ([1, 2], slice(3, 5), [2, 3], [3, 4])
    np.testing.assert_array_equal(y.asnumpy(), x[np_key])
    g = np.zeros(x.shape, dtype="int32")
    g[np_key] = 1
    np.testing.assert_array_equal(a.grad.asnumpy(), g)


def test_partial_setitem_under_recording_raises():
    x = mx.nd.zeros((3, 4))
    y = mx.nd.ones((4,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\) are not supported"):
            x[1] = y
        x[None] = mx.nd.ones((3, 4))  # a whole-array assignment is allowed, as in MXNet
    assert x.asnumpy().sum() == 12


def test_contiguous_basic_index_is_a_view():
    x = mx.nd.array(np.arange(24.0).reshape(2, 3, 4))
    v = x[1, 1:3]
    v[:] = 0
    assert (x.asnumpy()[1, 1:3] == 0).all() and x.asnumpy()[1, 0, 0] == 12
    w = x[:, 1:2]  # not contiguous: a copy
    w[:] = -1
    assert (x.asnumpy() != -1).all()
    is_contig = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    shape = (6, 7, 8, 9)
    ref = np.empty(shape, dtype=np.uint8)
    for key in [(slice(None),) * 4, (slice(1, 2), slice(3, 4), slice(None), slice(None)),
                (slice(None), slice(1, 3), slice(None), slice(None)), (slice(None, None, 2),) + (slice(None),) * 3,
                (slice(0, 1),) * 3 + (slice(None, None, -1),), (slice(3, None, -2), slice(0, 1), slice(0, 1),
                                                                slice(2, 3))]:
        assert is_contig(key, shape) == ref[key].flags.c_contiguous, key


# ---- pickling ---------------------------------------------------------------------------------

def test_pickle_roundtrip_and_mxnet_state():
    for dt in ("float32", "int32", "uint8", "float64"):
        a = mx.nd.array(np.random.uniform(-10, 10, (2, 3, 4)), dtype=dt)
        b = pickle.loads(pickle.dumps(a))
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    # MXNet 1.9.1: mx.nd.array([1.5, 2.5]).__getstate__()
    state = mx.nd.array([1.5, 2.5]).__getstate__()
    assert state == {"handle": bytearray(b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00"
                                         b"\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc0?"
                                         b"\x00\x00 @")}


def test_setstate_of_an_array_saved_on_gpu_loads_on_cpu():
    # MXNet 1.9.1's mx.nd.arange(1, ctx=mx.gpu()).__getstate__() (from its test suite's bytes)
    state = {"handle": bytearray(b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
                                 b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")}
    a = mx.nd.ones((3, 3))
    a.__setstate__(state)
    assert a.shape == (1,) and a.context == mx.cpu() and a.asnumpy().tolist() == [0.0]
    with pytest.raises(TypeError):
        a.__setstate__({"data": 1})


# ---- operators -----------------------------------------------------------------------------------

def test_get_all_registered_operators_lists_the_registry():
    ops = mx.operator.get_all_registered_operators()
    assert isinstance(ops, list)
    for name in ("Activation", "FullyConnected", "Custom", "broadcast_add", "Flatten", "flatten"):
        assert name in ops, name


def test_diag_k_out_of_range_raises():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    # MXNet 1.9.1: k in [-rows, cols] works (the ends give an empty diagonal), beyond raises
    assert mx.nd.diag(x, k=3).shape == (0,) and mx.nd.diag(x, k=-2).shape == (0,)
    assert mx.nd.diag(mx.nd.ones((2, 3, 4)), k=3).shape == (4, 0)
    for k in (4, -3):
        with pytest.raises(MXNetError, match="does not exist"):
            mx.nd.diag(x, k=k)


def test_pooling_same_convention_matches_mxnet():
    x = mx.nd.array(np.arange(1.0, 6.0).reshape(1, 1, 5))
    # MXNet 1.9.1 (MXNET_MKLDNN_ENABLED=0), kernel 3, stride 1, pad (0, 0, 0)
    want = {"max": [3, 4, 5, 5, 5], "avg": [2, 3, 4, 4.5, 5], "sum": [6, 9, 12, 9, 5]}
    for pt, w in want.items():
        y = mx.nd.Pooling(x, kernel=(3,), stride=(1,), pad=(0, 0, 0), pool_type=pt, pooling_convention="same")
        np.testing.assert_allclose(y.asnumpy().ravel(), w)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(x, kernel=(3,), stride=(2,), pool_type="avg", pooling_convention="same")
    y.backward()
    np.testing.assert_allclose(y.asnumpy().ravel(), [2, 4, 5])
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), [1 / 3, 1 / 3, 2 / 3, 1 / 3, 4 / 3], rtol=1e-6)
    # ceil(10 / 2) outputs (MXNet's test_valid_max_pooling_pad_type_same)
    assert mx.nd.Pooling(mx.nd.ones((1, 1, 10)), kernel=2, stride=2, pad=(0, 0, 0),
                         pooling_convention="same").shape == (1, 1, 5)


def test_pooling_same_convention_refuses_pad_and_big_kernels():
    x = mx.nd.ones((1, 1, 10))
    with pytest.raises(MXNetError, match="disables the pad parameter"):
        mx.nd.Pooling(x, kernel=2, stride=2, pad=2, pool_type="max", pooling_convention="same")
    with pytest.raises(MXNetError, match="larger than the padded data"):
        mx.nd.Pooling(x, kernel=(11,), stride=(2,), pooling_convention="same")


def test_custom_op_python_error_reaches_caller_as_mxnet_error():
    class Boom(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            assert False, "boom in forward"

    @mx.operator.register("test_compat_boom")
    class BoomProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Boom()

    with pytest.raises(MXNetError, match="forward raised AssertionError: boom in forward") as ei:
        mx.nd.Custom(mx.nd.ones((2,)), op_type="test_compat_boom").wait_to_read()
    assert isinstance(ei.value.__cause__, AssertionError)


# ---- image ------------------------------------------------------------------------------------

def test_imresize_float_images():
    x = mx.nd.array(np.arange(18).reshape(2, 3, 3) * 10.5)
    y = mx.image.imresize(x, 4, 3)
    assert y.dtype == np.float32 and y.shape == (3, 4, 3)
    # MXNet 1.9.1: mx.image.imresize(that float32 image, 4, 3)[:, :, 0]
    np.testing.assert_allclose(y.asnumpy()[:, :, 0], [[0.0, 19.6875, 43.3125, 63.0],
                                                      [47.25, 66.9375, 90.5625, 110.25],
                                                      [94.5, 114.1875, 137.8125, 157.5]], rtol=1e-6)
    assert mx.img.imresize(x.astype("float64"), 2, 2).dtype == np.float64


def test_imread_missing_file_is_an_mxnet_error():
    with pytest.raises(MXNetError, match="cannot read"):
        mx.img.image.imread("/no/such/dir/blah.jpg")


def test_autograd_star_import_gives_ndarray():
    ns = {}
    exec("from oxnet.autograd import *", ns)
    assert ns["NDArray"] is mx.nd.NDArray and "record" in ns


def test_bad_normal_scale_is_a_kernel_error_seen_at_the_wait():
    # MXNet checks the scale when the sampler runs: the call returns, the error comes with the
    # first wait on the result or on what was computed from it (test_exc_handling's pattern)
    a = mx.nd.random.normal(0, 1, (2, 2))
    b = mx.nd.random.normal(0, -1, (2, 2))
    c = mx.nd.dot(a, b)
    with pytest.raises(MXNetError, match=r"scale \(-1"):
        c.asnumpy()
    with pytest.raises(MXNetError, match="must be positive"):
        mx.nd.random.normal(0, -1, (2,)).wait_to_read()
    mx.nd.waitall()


def test_imresize_bad_interp_is_an_mxnet_error():
    with pytest.raises(MXNetError, match="Unknown interp method -1"):
        mx.image.imresize(mx.nd.ones((12, 16, 3)), 32, 32, interp=-1)
