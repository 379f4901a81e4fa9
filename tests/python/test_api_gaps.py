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
