"""Custom operators in Python: mx.operator.CustomOp / CustomOpProp /
register, called as mx.nd.Custom, with autograd."""
import numpy as np
import pytest

import oxnet as mx


class _Sigmoid(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))


@mx.operator.register("test_sigmoid")
class _SigmoidProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Sigmoid()


class _ScaleAdd(mx.operator.CustomOp):
    """out0 = a * scale + b, out1 = a - b, computed through NumPy."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data[0].asnumpy(), in_data[1].asnumpy()
        self.assign(out_data[0], req[0], mx.nd.array(a * self.scale + b))
        self.assign(out_data[1], req[1], mx.nd.array(a - b))
        self.is_train = is_train

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        g0, g1 = out_grad[0].asnumpy(), out_grad[1].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(g0 * self.scale + g1))
        self.assign(in_grad[1], req[1], mx.nd.array(g0 - g1))


_last = {}


@mx.operator.register("test_scale_add")
class _ScaleAddProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0"):
        super().__init__()
        self.scale = float(scale)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["sum", "diff"]

    def infer_shape(self, in_shape):
        if in_shape[0] != in_shape[1]:
            raise ValueError(f"shapes differ: {in_shape}")
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        op = _ScaleAdd(self.scale)
        _last["op"] = op
        return op


def test_forward_matches_numpy():
    x = np.linspace(-3, 3, 12).reshape(3, 4).astype(np.float32)
    y = mx.nd.Custom(mx.nd.array(x), op_type="test_sigmoid")
    np.testing.assert_allclose(y.asnumpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_backward_through_autograd():
    x = np.linspace(-2, 2, 6).astype(np.float32)
    a = mx.nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(a, op_type="test_sigmoid")
        z = (y * 3).sum()
    z.backward()
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(a.grad.asnumpy(), 3 * s * (1 - s), rtol=1e-5)


def test_several_inputs_outputs_params_and_train_flag():
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_np = np.ones((2, 3), np.float32)
    a, b = mx.nd.array(a_np), mx.nd.array(b_np)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        s, d = mx.nd.Custom(a, b=b, op_type="test_scale_add", scale=2)
        loss = (s * 2 + d).sum()
    assert _last["op"].is_train is True
    np.testing.assert_allclose(s.asnumpy(), a_np * 2 + b_np)
    np.testing.assert_allclose(d.asnumpy(), a_np - b_np)
    loss.backward()
    # d loss/d a = 2*scale + 1 = 5, d loss/d b = 2 - 1 = 1
    np.testing.assert_allclose(a.grad.asnumpy(), np.full((2, 3), 5.0))
    np.testing.assert_allclose(b.grad.asnumpy(), np.full((2, 3), 1.0))
    s2, _ = mx.nd.Custom(a, b, op_type="test_scale_add")
    assert _last["op"].is_train is False
    np.testing.assert_allclose(s2.asnumpy(), a_np + b_np)


def test_errors_are_clear():
    a = mx.nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match="no custom operator registered as 'nope'"):
        mx.nd.Custom(a, op_type="nope")
    with pytest.raises(mx.MXNetError, match="op_type"):
        mx.nd.Custom(a)
    with pytest.raises(mx.MXNetError, match=r"expected 2 input\(s\) \(a, b\), got 1"):
        mx.nd.Custom(a, op_type="test_scale_add")
    # a Python exception in the operator's code reaches the caller as an MXNetError (as in
    # MXNet), chained to the original
    with pytest.raises(mx.MXNetError, match="infer_shape raised ValueError: shapes differ") as ei:
        mx.nd.Custom(a, mx.nd.ones((3, 2)), op_type="test_scale_add")
    assert isinstance(ei.value.__cause__, ValueError)
    with pytest.raises(TypeError):
        mx.operator.register("bad")(object)
    assert "test_sigmoid" in mx.operator.get_all_registered_custom_operators()
    # MXNet lists its operator registry there, custom op types run through 'Custom'
    assert "test_sigmoid" not in mx.operator.get_all_registered_operators()


def test_assign_modes():
    op = mx.operator.CustomOp()
    dst = mx.nd.ones((2,))
    op.assign(dst, "add", mx.nd.array([1.0, 2.0]))
    np.testing.assert_allclose(dst.asnumpy(), [2, 3])
    op.assign(dst, "null", mx.nd.array([9.0, 9.0]))
    np.testing.assert_allclose(dst.asnumpy(), [2, 3])
    op.assign(dst, "write", mx.nd.array([5.0, 6.0]))
    np.testing.assert_allclose(dst.asnumpy(), [5, 6])


def test_positional_parameters_follow_mxnet_argument_order():
    x = mx.nd.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    np.testing.assert_array_equal(mx.nd.clip(x, 0, 4).asnumpy(), np.clip(x.asnumpy(), 0, 4))
    np.testing.assert_array_equal(x.clip(-1, 1).asnumpy(), np.clip(x.asnumpy(), -1, 1))
    assert x.swapaxes(0, 1).shape == (3, 2)
    assert mx.nd.sum(x, 1).asnumpy().tolist() == [2.0, 3.0]
    assert mx.nd.one_hot(mx.nd.array([0, 2]), 3, 5, -1).asnumpy().tolist() == [[5, -1, -1], [-1, -1, 5]]
    # keyword and positional parameters mix; None leaves an optional input out
    w = mx.nd.ones((4, 3))
    y = mx.nd.FullyConnected(x, w, None, 4, True)
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() @ np.ones((3, 4)))
    assert mx.nd.topk(x, 1, 2, ret_typ="value").asnumpy().tolist() == [[3.0, 1.0], [5.0, 4.0]]
    with pytest.raises(TypeError, match="multiple values for argument 'a_min'"):
        mx.nd.clip(x, 0, 1, a_min=0)
    with pytest.raises(TypeError, match=r"at most 3 positional arguments \(data, a_min, a_max\)"):
        mx.nd.clip(x, 0, 1, 2)
    with pytest.raises(TypeError, match="input 'weight' must be an NDArray"):
        mx.nd.FullyConnected(x, 3, num_hidden=4)
    # variadic operators take every positional argument as an input
    with pytest.raises(TypeError, match="by keyword"):
        mx.nd.stack(x, x, 1)


def test_misspelt_keyword_is_refused_with_the_known_names():
    x = mx.nd.ones((2, 2))
    with pytest.raises(TypeError, match=r"sum: unknown argument\(s\) 'keepdim'; it takes axis, keepdims, exclude"):
        mx.nd.sum(x, axis=1, keepdim=True)
    with pytest.raises(TypeError, match="unknown argument"):
        x.clip(a_min=0, a_max=1, amax=2)
    # MXNet-only tuning knobs MXNet accepts are accepted (and have no effect here)
    w = mx.nd.ones((3, 1, 1, 1))
    y = mx.nd.Convolution(mx.nd.ones((1, 1, 2, 2)), w, kernel=(1, 1), num_filter=3, no_bias=True,
                          workspace=512, cudnn_tune="off", cudnn_off=True)
    assert y.shape == (1, 3, 2, 2)


@pytest.mark.parametrize("n,k", [(64, 3), (64, 16), (40, 5), (9, 4), (64, 64)])
@pytest.mark.parametrize("ascend", [False, True])
def test_topk_matches_stable_sort_with_ties_and_nan(n, k, ascend):
    """topk (every path: insertion for a few of many, selection, full sort)
    is a stable sort's first k along the axis, NaN sorting as the largest."""
    rng = np.random.RandomState(n + k)
    x = rng.randint(0, 6, (3, n, 4)).astype(np.float32)  # many ties
    x[0, rng.randint(0, n, 5), 1] = np.nan
    key = np.where(np.isnan(x), np.inf, x)
    # NaN as +inf: last ascending, first descending; stable by index
    order = np.argsort(key if ascend else -key, axis=1, kind="stable")
    got = mx.nd.topk(mx.nd.array(x), axis=1, k=k, is_ascend=ascend, ret_typ="indices", dtype="int64")
    np.testing.assert_array_equal(got.asnumpy(), order[:, :k])


@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_a_middle_axis_float32(log):
    """float32 softmax / log_softmax over an axis other than the last (the
    column-block path: more than one block of columns, a column of -inf and
    one with NaN give NaN, as a row does) against NumPy in float64."""
    rng = np.random.RandomState(2)
    x = rng.randn(3, 7, 600).astype(np.float32) * 4
    x[1, :, 5] = -np.inf
    x[2, 3, 77] = np.nan
    xd = x.astype(np.float64) / 1.5
    with np.errstate(invalid="ignore", divide="ignore"):  # the -inf and NaN columns
        e = np.exp(xd - xd.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        if log:
            want = np.log(want)
    op = mx.nd.log_softmax if log else mx.nd.softmax
    got = op(mx.nd.array(x), axis=1, temperature=1.5).asnumpy()
    assert np.isnan(got[1, :, 5]).all() and np.isnan(got[2, :, 77]).all()
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=2e-5, atol=1e-6)
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("full", [True, False])
def test_where_large_matches_numpy(full):
    """where over many parallel pieces, with a full-shape condition and with
    a 1-D condition selecting whole rows (pieces hold whole rows)."""
    rng = np.random.RandomState(4)
    x = rng.rand(5003, 37).astype(np.float32)
    y = -x
    c = rng.rand(5003, 37) > 0.5 if full else rng.rand(5003) > 0.5
    got = mx.nd.where(mx.nd.array(c.astype(np.float32)), mx.nd.array(x), mx.nd.array(y)).asnumpy()
    np.testing.assert_array_equal(got, np.where(c if full else c[:, None], x, y))


@pytest.mark.parametrize("multi", [False, True])
def test_softmax_output_float32_forward(multi):
    """SoftmaxOutput's float32 forward (softmax's row and column-block paths)
    against NumPy: over all but the first axis, or axis 1 with multi_output."""
    rng = np.random.RandomState(6)
    x = rng.randn(40, 5, 300).astype(np.float32)
    label = rng.randint(0, 5, (40, 300)) if multi else rng.randint(0, 1500, 40)
    got = mx.nd.SoftmaxOutput(mx.nd.array(x), mx.nd.array(label.astype(np.float32)), multi_output=multi).asnumpy()
    xd = x.astype(np.float64) if multi else x.reshape(40, -1).astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, (e / e.sum(axis=1, keepdims=True)).reshape(x.shape), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape,nsize", [((3, 7, 33, 35), 5), ((2, 4, 1300), 3), ((2, 9, 3, 3), 7), ((1, 1, 5), 1)])
def test_lrn_sliding_window_matches_numpy(shape, nsize):
    """LRN's running window over channels (runs of spatial positions, more
    channels than the window, fewer, and one) against NumPy in float64."""
    x = np.random.RandomState(1).randn(*shape).astype(np.float32)
    c, h = shape[1], nsize // 2
    sq = x.astype(np.float64) ** 2
    s = np.stack([sq[:, max(0, k - h):min(c, k + h + 1)].sum(axis=1) for k in range(c)], axis=1)
    want = x / (2.0 + 1e-4 / nsize * s) ** 0.75
    np.testing.assert_allclose(mx.nd.LRN(mx.nd.array(x), nsize=nsize).asnumpy(), want, rtol=1e-5, atol=1e-6)
