"""Normalisation, loss-head, sequence and optimizer-update operators against
NumPy references, with numerical-gradient checks of the gradient rules."""
import numpy as np
import pytest

import oxnet as mx
from optest import analytic_grad, check_grad, numeric_grad

rng = np.random.RandomState(0)


def nd(x, dtype=None):
    x = np.asarray(x)
    return mx.nd.array(x, dtype=dtype or x.dtype)


# ---------------------------------------------------------------------------
# NumPy references
# ---------------------------------------------------------------------------


def np_bn(x, gamma, beta, mean, var, eps, axis=1):
    shp = [1] * x.ndim
    shp[axis] = -1
    r = lambda v: v.reshape(shp)
    return (x - r(mean)) / np.sqrt(r(var) + eps) * r(gamma) + r(beta)


def np_layer_norm(x, g, b, axis=-1, eps=1e-5):
    m = x.mean(axis=axis, keepdims=True)
    v = x.var(axis=axis, keepdims=True)
    shp = [1] * x.ndim
    shp[axis] = -1
    return (x - m) / np.sqrt(v + eps) * g.reshape(shp) + b.reshape(shp)


def np_instance_norm(x, g, b, eps=1e-3):
    ax = tuple(range(2, x.ndim))
    m = x.mean(axis=ax, keepdims=True)
    v = x.var(axis=ax, keepdims=True)
    shp = [1, -1] + [1] * (x.ndim - 2)
    return (x - m) / np.sqrt(v + eps) * g.reshape(shp) + b.reshape(shp)


def np_group_norm(x, g, b, G, eps=1e-5):
    n, c = x.shape[:2]
    xg = x.reshape(n, G, -1)
    m = xg.mean(axis=2, keepdims=True)
    v = xg.var(axis=2, keepdims=True)
    y = ((xg - m) / np.sqrt(v + eps)) * g.reshape(1, G, 1) + b.reshape(1, G, 1)
    return y.reshape(x.shape)


def np_l2(x, mode, eps=1e-10):
    if mode == "instance":
        ax = tuple(range(1, x.ndim))
    elif mode == "channel":
        ax = (1,)
    else:
        ax = tuple(range(2, x.ndim))
    return x / np.sqrt((x * x).sum(axis=ax, keepdims=True) + eps)


def np_lrn(x, alpha, beta, knorm, nsize):
    c = x.shape[1]
    out = np.empty_like(x)
    h = nsize // 2
    for ch in range(c):
        lo, hi = max(0, ch - h), min(c - 1, ch + h)
        s = (x[:, lo : hi + 1] ** 2).sum(axis=1)
        out[:, ch] = x[:, ch] / (knorm + alpha / nsize * s) ** beta
    return out


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------------------
# BatchNorm
# ---------------------------------------------------------------------------


def bn_inputs(shape=(4, 3, 2, 2), dtype="float64"):
    c = shape[1]
    x = rng.randn(*shape).astype(dtype)
    g = rng.uniform(0.5, 1.5, c).astype(dtype)
    b = rng.randn(c).astype(dtype)
    mm = rng.randn(c).astype(dtype) * 0.1
    mv = rng.uniform(0.5, 1.5, c).astype(dtype)
    return x, g, b, mm, mv


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batchnorm_inference_uses_moving_stats(dtype):
    x, g, b, mm, mv = bn_inputs(dtype=dtype)
    args = [nd(a) for a in (x, g, b, mm, mv)]
    y = mx.nd.BatchNorm(*args, fix_gamma=False, eps=1e-3).asnumpy()
    np.testing.assert_allclose(y, np_bn(x, g, b, mm, mv, 1e-3), rtol=1e-5, atol=1e-5)
    # predict mode does not touch the moving statistics
    np.testing.assert_array_equal(args[3].asnumpy(), mm)
    np.testing.assert_array_equal(args[4].asnumpy(), mv)
    # fix_gamma (default) treats gamma as 1
    y1 = mx.nd.BatchNorm(*args).asnumpy()
    np.testing.assert_allclose(y1, np_bn(x, np.ones_like(g), b, mm, mv, 1e-3), rtol=1e-5, atol=1e-5)


def test_batchnorm_training_updates_moving_stats():
    x, g, b, mm, mv = bn_inputs()
    args = [nd(a) for a in (x, g, b, mm, mv)]
    args[0].attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(*args, fix_gamma=False, momentum=0.8, eps=1e-3)
    bm = x.mean(axis=(0, 2, 3))
    bv = x.var(axis=(0, 2, 3))
    np.testing.assert_allclose(y.asnumpy(), np_bn(x, g, b, bm, bv, 1e-3), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(args[3].asnumpy(), mm * 0.8 + bm * 0.2, rtol=1e-12)
    np.testing.assert_allclose(args[4].asnumpy(), mv * 0.8 + bv * 0.2, rtol=1e-12)
    # use_global_stats: moving stats used and left alone even while training
    args2 = [nd(a) for a in (x, g, b, mm, mv)]
    args2[0].attach_grad()
    with mx.autograd.record():
        y2 = mx.nd.BatchNorm(*args2, fix_gamma=False, use_global_stats=True)
    np.testing.assert_allclose(y2.asnumpy(), np_bn(x, g, b, mm, mv, 1e-3), rtol=1e-10)
    np.testing.assert_array_equal(args2[3].asnumpy(), mm)


def test_batchnorm_axis_and_output_mean_var():
    x = rng.randn(2, 3, 5)
    c = 5
    g, b = rng.rand(c) + 0.5, rng.randn(c)
    mm, mv = np.zeros(c), np.ones(c)
    args = [nd(a) for a in (x, g, b, mm, mv)]
    args[0].attach_grad()
    with mx.autograd.record():
        out, mean, invstd = mx.nd.BatchNorm(*args, axis=-1, fix_gamma=False, output_mean_var=True)
    np.testing.assert_allclose(mean.asnumpy(), x.mean(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(invstd.asnumpy(), 1 / np.sqrt(x.var(axis=(0, 1)) + 1e-3), rtol=1e-12)
    np.testing.assert_allclose(out.asnumpy(), np_bn(x, g, b, x.mean(axis=(0, 1)), x.var(axis=(0, 1)), 1e-3, axis=2), rtol=1e-10)


def test_batchnorm_fills_param_shapes_and_errors():
    x = nd(rng.randn(2, 3, 4))
    with pytest.raises(mx.base.MXNetError, match=r"BatchNorm.*gamma.*\(4,\).*\(3,\)"):
        mx.nd.BatchNorm(x, nd(np.ones(4)), nd(np.zeros(3)), nd(np.zeros(3)), nd(np.ones(3)))
    with pytest.raises(mx.base.MXNetError, match="BatchNorm.*axis 5"):
        mx.nd.BatchNorm(x, nd(np.ones(3)), nd(np.zeros(3)), nd(np.zeros(3)), nd(np.ones(3)), axis=5)


def test_batchnorm_gradient_train():
    x, g, b, mm, mv = bn_inputs(shape=(3, 2, 2))
    xs = [nd(a) for a in (x, g, b, mm, mv)]
    for a in xs[:3]:
        a.attach_grad()
    og = rng.uniform(0.5, 1.5, x.shape)
    with mx.autograd.record():
        y = mx.nd.BatchNorm(*xs, fix_gamma=False)
    y.backward(nd(og))
    # numeric gradient of the training-mode function (batch statistics)
    def f(xx, gg, bb):
        m, v = xx.mean(axis=(0, 2)), xx.var(axis=(0, 2))
        return (np_bn(xx, gg, bb, m, v, 1e-3) * og).sum()

    eps = 1e-6
    for k, (arr, ref) in enumerate(zip(xs[:3], (x, g, b))):
        num = np.zeros_like(ref)
        for idx in np.ndindex(ref.shape):
            vals = [x.copy(), g.copy(), b.copy()]
            vals[k][idx] += eps
            fp = f(*vals)
            vals[k][idx] -= 2 * eps
            fm = f(*vals)
            num[idx] = (fp - fm) / (2 * eps)
        np.testing.assert_allclose(arr.grad.asnumpy(), num, rtol=1e-5, atol=1e-7, err_msg=f"input {k}")


def test_batchnorm_gradient_inference_and_fix_gamma():
    x, g, b, mm, mv = bn_inputs(shape=(2, 3, 2))
    # outside training (op_grad runs with training off): moving statistics are
    # constants (auxiliary states, not differentiated)
    og = rng.uniform(0.5, 1.5, x.shape)
    xs64 = [x, g, b, mm, mv]
    ana = analytic_grad("BatchNorm", xs64, og, {"fix_gamma": False})
    num = numeric_grad("BatchNorm", [a.copy() for a in xs64], og, {"fix_gamma": False}, eps=1e-6)
    assert ana[3] is None and ana[4] is None
    for k in range(3):
        np.testing.assert_allclose(ana[k], num[k], rtol=1e-5, atol=1e-7, err_msg=f"input {k}")
    xs = [nd(a) for a in (x, g, b, mm, mv)]
    for a in xs[:2]:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(*xs)
    y.backward()
    np.testing.assert_array_equal(xs[1].grad.asnumpy(), np.zeros(3))


# ---------------------------------------------------------------------------
# LayerNorm, InstanceNorm, GroupNorm, L2Normalization, LRN
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm(axis):
    x = rng.randn(3, 4, 5)
    c = x.shape[axis]
    g, b = rng.rand(c) + 0.5, rng.randn(c)
    y = mx.nd.LayerNorm(nd(x), nd(g), nd(b), axis=axis).asnumpy()
    np.testing.assert_allclose(y, np_layer_norm(x, g, b, axis), rtol=1e-10, atol=1e-10)
    check_grad("LayerNorm", [rng.randn(2, 3, 2), rng.rand(3 if axis == 1 else 2) + 0.5, rng.randn(3 if axis == 1 else 2)],
               {"axis": axis})


def test_layer_norm_output_mean_var_float32():
    x = rng.randn(4, 6).astype("float32")
    g, b = np.ones(6, "float32"), np.zeros(6, "float32")
    y, m, s = mx.nd.LayerNorm(nd(x), nd(g), nd(b), output_mean_var=True)
    assert y.dtype == np.float32 and m.shape == (4, 1)
    np.testing.assert_allclose(m.asnumpy()[:, 0], x.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.asnumpy()[:, 0], np.sqrt(x.var(axis=1) + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(y.asnumpy(), np_layer_norm(x, g, b), rtol=1e-4, atol=1e-5)


def test_instance_norm():
    x = rng.randn(2, 3, 4, 2)
    g, b = rng.rand(3) + 0.5, rng.randn(3)
    y = mx.nd.InstanceNorm(nd(x), nd(g), nd(b)).asnumpy()
    np.testing.assert_allclose(y, np_instance_norm(x, g, b), rtol=1e-10, atol=1e-10)
    check_grad("InstanceNorm", [rng.randn(2, 2, 3), rng.rand(2) + 0.5, rng.randn(2)])


def test_group_norm():
    x = rng.randn(2, 4, 3)
    g, b = rng.rand(2) + 0.5, rng.randn(2)
    y = mx.nd.GroupNorm(nd(x), nd(g), nd(b), num_groups=2).asnumpy()
    np.testing.assert_allclose(y, np_group_norm(x, g, b, 2), rtol=1e-10, atol=1e-10)
    check_grad("GroupNorm", [rng.randn(2, 4, 2), rng.rand(2) + 0.5, rng.randn(2)], {"num_groups": 2})
    with pytest.raises(mx.base.MXNetError, match="GroupNorm.*not divisible by num_groups=3"):
        mx.nd.GroupNorm(nd(x), nd(np.ones(3)), nd(np.zeros(3)), num_groups=3)


@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
def test_l2_normalization(mode):
    x = rng.randn(2, 3, 4)
    y = mx.nd.L2Normalization(nd(x), mode=mode).asnumpy()
    np.testing.assert_allclose(y, np_l2(x, mode), rtol=1e-10)
    check_grad("L2Normalization", [rng.randn(2, 3, 2)], {"mode": mode})


def test_lrn():
    x = rng.randn(2, 5, 3)
    kw = dict(alpha=0.1, beta=0.75, knorm=2.0, nsize=3)
    y = mx.nd.LRN(nd(x), **kw).asnumpy()
    np.testing.assert_allclose(y, np_lrn(x, **kw), rtol=1e-10)
    check_grad("LRN", [rng.randn(2, 4, 2)], kw)


# ---------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------


def test_dropout_inference_is_identity_and_training_masks():
    x = nd(rng.rand(200, 50) + 0.5, "float32")
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), x.asnumpy())
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.3)
    yv, xv = y.asnumpy(), x.asnumpy()
    kept = yv != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(yv[kept], xv[kept] / 0.7, rtol=1e-6)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), kept / 0.7, rtol=1e-6)
    # mode='always' drops outside training too
    z = mx.nd.Dropout(x, p=0.5, mode="always").asnumpy()
    assert 0.4 < (z != 0).mean() < 0.6


def test_dropout_reproducible_axes_and_zero_inputs():
    x = nd(np.ones((4, 6, 8)), "float32")
    outs = []
    for _ in range(2):
        mx.random.seed(42)
        with mx.autograd.train_mode():
            outs.append(mx.nd.Dropout(x, p=0.5).asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5, axes=(1,)).asnumpy()
    assert (y == y[:, :1, :]).all()  # one mask shared along axis 1
    # the gradient is exact even where the input is zero
    xz = nd(np.zeros((50, 40)), "float64")
    xz.attach_grad()
    mx.random.seed(3)
    with mx.autograd.record():
        yz = mx.nd.Dropout(xz, p=0.5)
    yz.backward()
    mx.random.seed(3)
    with mx.autograd.train_mode():
        ref = mx.nd.Dropout(nd(np.ones((50, 40)), "float64"), p=0.5).asnumpy()
    np.testing.assert_array_equal(xz.grad.asnumpy(), ref)


# ---------------------------------------------------------------------------
# Loss heads
# ---------------------------------------------------------------------------


def head_grad(op, data, label, **kw):
    d = nd(data)
    d.attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, op)(d, nd(label), **kw)
    out.backward(nd(np.full(out.shape, 7.0)))  # the head gradient is ignored
    return out.asnumpy(), d.grad.asnumpy()


def test_softmax_output():
    x = rng.randn(4, 5)
    lab = np.array([0, 3, 4, 1], dtype="float64")
    out, g = head_grad("SoftmaxOutput", x, lab, grad_scale=2.0)
    p = np_softmax(x)
    np.testing.assert_allclose(out, p, rtol=1e-12)
    np.testing.assert_allclose(g, 2.0 * (p - np.eye(5)[lab.astype(int)]), rtol=1e-12)
    _, g = head_grad("SoftmaxOutput", x, lab, normalization="batch")
    np.testing.assert_allclose(g, (p - np.eye(5)[lab.astype(int)]) / 4, rtol=1e-12)
    lab2 = np.array([0, -1, 4, -1], dtype="float64")
    _, g = head_grad("Softmax", x, lab2, use_ignore=True, normalization="valid")
    ref = (p - np.eye(5)[np.maximum(lab2, 0).astype(int)]) / 2
    ref[[1, 3]] = 0
    np.testing.assert_allclose(g, ref, rtol=1e-12)


def test_softmax_output_multi_and_preserve_shape():
    x = rng.randn(2, 3, 4)
    lab = rng.randint(0, 3, (2, 4)).astype("float64")
    out, g = head_grad("SoftmaxOutput", x, lab, multi_output=True)
    p = np_softmax(x, axis=1)
    np.testing.assert_allclose(out, p, rtol=1e-12)
    oh = np.eye(3)[lab.astype(int)].transpose(0, 2, 1)
    np.testing.assert_allclose(g, (p - oh) / 4, rtol=1e-12)  # MXNet also divides by the spatial size
    lab3 = rng.randint(0, 4, (2, 3)).astype("float64")
    out, g = head_grad("SoftmaxOutput", x, lab3, preserve_shape=True)
    p = np_softmax(x, axis=-1)
    np.testing.assert_allclose(out, p, rtol=1e-12)
    np.testing.assert_allclose(g, p - np.eye(4)[lab3.astype(int)], rtol=1e-12)
    with pytest.raises(mx.base.MXNetError, match=r"SoftmaxOutput: label shape \(5,\)"):
        mx.nd.SoftmaxOutput(nd(x), nd(np.zeros(5)))


def test_regression_outputs():
    x = rng.randn(3, 2)
    y = rng.randn(3, 2)
    out, g = head_grad("LinearRegressionOutput", x, y, grad_scale=3.0)
    np.testing.assert_allclose(out, x)
    np.testing.assert_allclose(g, 3.0 * (x - y) / 2, rtol=1e-12)
    out, g = head_grad("LogisticRegressionOutput", x, y)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(out, s, rtol=1e-12)
    np.testing.assert_allclose(g, (s - y) / 2, rtol=1e-12)
    out, g = head_grad("MAERegressionOutput", x, y)
    np.testing.assert_allclose(g, np.sign(x - y) / 2, rtol=1e-12)


def test_make_loss():
    x = rng.rand(4, 3) - 0.3
    d = nd(x)
    d.attach_grad()
    with mx.autograd.record():
        y = mx.nd.MakeLoss(d, grad_scale=2.0, normalization="batch")
    y.backward(nd(np.full((4, 3), 5.0)))
    np.testing.assert_allclose(y.asnumpy(), x)
    np.testing.assert_allclose(d.grad.asnumpy(), np.full((4, 3), 0.5))
    with mx.autograd.record():
        y = mx.nd.MakeLoss(d, normalization="valid", valid_thresh=0.0)
    y.backward()
    np.testing.assert_allclose(d.grad.asnumpy(), np.full((4, 3), 1.0 / (x > 0).sum()))
    with mx.autograd.record():
        y = mx.nd.make_loss(d)
    y.backward(nd(np.full((4, 3), 5.0)))
    np.testing.assert_allclose(d.grad.asnumpy(), np.ones((4, 3)))


def test_softmax_cross_entropy_and_smooth_l1():
    x = rng.randn(3, 4)
    lab = np.array([1, 0, 3], dtype="float64")
    out = mx.nd.softmax_cross_entropy(nd(x), nd(lab)).asnumpy()
    p = np_softmax(x)
    np.testing.assert_allclose(out, [-np.log(p[np.arange(3), lab.astype(int)]).sum()], rtol=1e-12)
    check_grad("softmax_cross_entropy", [x, lab + 0.5])  # labels truncate; keep the FD step off integers
    z = rng.uniform(-2, 2, (3, 5))
    z[np.abs(np.abs(z) - 0.25) < 0.05] = 0.5  # keep away from the kink at 1/sigma^2
    sigma = 2.0
    ref = np.where(np.abs(z) < 1 / sigma**2, 0.5 * (sigma * z) ** 2, np.abs(z) - 0.5 / sigma**2)
    np.testing.assert_allclose(mx.nd.smooth_l1(nd(z), scalar=sigma).asnumpy(), ref, rtol=1e-12)
    check_grad("smooth_l1", [z], {"scalar": sigma})


# ---------------------------------------------------------------------------
# Sequence operators
# ---------------------------------------------------------------------------


def test_sequence_mask():
    x = rng.randn(4, 3, 2)
    sl = np.array([1, 4, 2], dtype="float64")
    y = mx.nd.SequenceMask(nd(x), nd(sl), use_sequence_length=True, value=-1.0).asnumpy()
    ref = x.copy()
    for b, l in enumerate(sl.astype(int)):
        ref[l:, b] = -1.0
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(mx.nd.SequenceMask(nd(x)).asnumpy(), x)
    y1 = mx.nd.SequenceMask(nd(x.transpose(1, 0, 2)), nd(sl), use_sequence_length=True, axis=1).asnumpy()
    ref0 = x.copy()
    for b, l in enumerate(sl.astype(int)):
        ref0[l:, b] = 0
    np.testing.assert_array_equal(y1, ref0.transpose(1, 0, 2))
    check_grad("SequenceMask", [x, sl + 0.5], {"use_sequence_length": True})  # lengths truncate
    with pytest.raises(mx.base.MXNetError, match=r"SequenceMask: sequence_length has shape \(2,\), expected \(3,\)"):
        mx.nd.SequenceMask(nd(x), nd(np.ones(2)), use_sequence_length=True)


def test_sequence_last_and_reverse():
    x = rng.randn(4, 3, 2)
    sl = np.array([1, 4, 2], dtype="float64")
    y = mx.nd.SequenceLast(nd(x), nd(sl), use_sequence_length=True).asnumpy()
    np.testing.assert_array_equal(y, np.stack([x[int(l) - 1, b] for b, l in enumerate(sl)]))
    np.testing.assert_array_equal(mx.nd.SequenceLast(nd(x)).asnumpy(), x[-1])
    y1 = mx.nd.SequenceLast(nd(x.transpose(1, 0, 2)), nd(sl), use_sequence_length=True, axis=1).asnumpy()
    np.testing.assert_array_equal(y1, y)
    check_grad("SequenceLast", [x, sl + 0.5], {"use_sequence_length": True})
    r = mx.nd.SequenceReverse(nd(x), nd(sl), use_sequence_length=True).asnumpy()
    ref = x.copy()
    for b, l in enumerate(sl.astype(int)):
        ref[:l, b] = x[:l, b][::-1]
    np.testing.assert_array_equal(r, ref)
    np.testing.assert_array_equal(mx.nd.SequenceReverse(nd(x)).asnumpy(), x[::-1])
    check_grad("SequenceReverse", [x, sl + 0.5], {"use_sequence_length": True})


# ---------------------------------------------------------------------------
# Optimizer updates: the NumPy formulas step by step over a few iterations
# ---------------------------------------------------------------------------


def npclip(g, c):
    return np.clip(g, -c, c) if c >= 0 else g


COMMON = dict(lr=0.1, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)


def _F(v):
    # MXNet (and oxnet) hold the updates' parameters as float32
    return float(np.float32(v))


def ref_sgd(w, g, s, lr, wd, rescale_grad, clip_gradient, **_):
    return (1 - lr * wd) * w - lr * npclip(rescale_grad * g, clip_gradient)


def ref_sgd_mom(w, g, s, lr, wd, rescale_grad, clip_gradient, momentum, **_):
    s[0][:] = momentum * s[0] - lr * wd * w - lr * npclip(rescale_grad * g, clip_gradient)
    return w + s[0]


def ref_nag(w, g, s, lr, wd, rescale_grad, clip_gradient, momentum, **_):
    gg = npclip(rescale_grad * g, clip_gradient) + wd * w
    s[0][:] = momentum * s[0] - lr * gg
    return w + momentum * s[0] - lr * gg


def ref_adam(w, g, s, lr, wd, rescale_grad, clip_gradient, beta1=_F(0.9), beta2=_F(0.999), epsilon=_F(1e-8), **_):
    gg = npclip(rescale_grad * g + wd * w, clip_gradient)
    s[0][:] = beta1 * s[0] + (1 - beta1) * gg
    s[1][:] = beta2 * s[1] + (1 - beta2) * gg * gg
    return w - lr * s[0] / (np.sqrt(s[1]) + epsilon)


def ref_rmsprop(w, g, s, lr, wd, rescale_grad, clip_gradient, gamma1=_F(0.95), epsilon=_F(1e-8), **_):
    gg = npclip(rescale_grad * g + wd * w, clip_gradient)
    s[0][:] = (1 - gamma1) * gg * gg + gamma1 * s[0]
    return w - lr * gg / np.sqrt(s[0] + epsilon)


def ref_rmspropalex(w, g, s, lr, wd, rescale_grad, clip_gradient, gamma1=_F(0.95), gamma2=_F(0.9), epsilon=_F(1e-8),
                    **_):
    gg = npclip(rescale_grad * g + wd * w, clip_gradient)
    s[0][:] = (1 - gamma1) * gg * gg + gamma1 * s[0]
    s[1][:] = (1 - gamma1) * gg + gamma1 * s[1]
    s[2][:] = gamma2 * s[2] - lr * gg / np.sqrt(s[0] - s[1] ** 2 + epsilon)
    return w + s[2]


def ref_ftrl(w, g, s, lr, wd, rescale_grad, clip_gradient, lamda1=_F(0.01), beta=1.0, **_):
    gg = npclip(rescale_grad * g, clip_gradient)
    z, n = s
    z[:] = z + gg - (np.sqrt(n + gg * gg) - np.sqrt(n)) * w / lr
    n[:] = n + gg * gg
    return np.where(np.abs(z) > lamda1, (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd), 0)


def ref_signsgd(w, g, s, lr, wd, **_):
    return (1 - lr * wd) * w - lr * np.sign(g)


def ref_signum(w, g, s, lr, wd, rescale_grad, clip_gradient, momentum, wd_lh=0.0, **_):
    s[0][:] = momentum * s[0] - (1 - momentum) * wd * w - (1 - momentum) * npclip(rescale_grad * g, clip_gradient)
    return (1 - lr * wd_lh) * w + lr * np.sign(s[0])


def ref_adagrad(w, g, s, lr, wd, rescale_grad, clip_gradient, epsilon=_F(1e-7), **_):
    gg = npclip(rescale_grad * g, clip_gradient)
    s[0][:] = s[0] + gg * gg
    return w - lr * gg / (np.sqrt(s[0]) + epsilon)


OPTIM = {
    "sgd_update": (ref_sgd, 0, {}),
    "sgd_mom_update": (ref_sgd_mom, 1, {"momentum": 0.9}),
    "nag_mom_update": (ref_nag, 1, {"momentum": 0.9}),
    "adam_update": (ref_adam, 2, {"beta1": 0.8}),
    "rmsprop_update": (ref_rmsprop, 1, {}),
    "rmspropalex_update": (ref_rmspropalex, 3, {}),
    "ftrl_update": (ref_ftrl, 2, {}),
    "signsgd_update": (ref_signsgd, 0, {}),
    "signum_update": (ref_signum, 1, {"momentum": 0.9, "wd_lh": 0.05}),
    "adagrad_update": (ref_adagrad, 1, {"wd": 0.0}),
}


def _f32_params(kw):
    return {k: _F(v) for k, v in kw.items()}


@pytest.mark.parametrize("name", sorted(OPTIM))
def test_optimizer_update(name):
    ref, nstate, extra = OPTIM[name]
    kw = _f32_params(dict(COMMON, **extra))
    w = rng.randn(3, 4)
    states = [np.zeros((3, 4)) if name != "rmspropalex_update" or k != 0 else np.full((3, 4), 0.1) for k in range(nstate)]
    if name == "ftrl_update":
        states = [rng.randn(3, 4) * 0.1, rng.rand(3, 4)]
    mw = nd(w)
    ms = [nd(s) for s in states]
    for _ in range(3):
        g = rng.randn(3, 4) * 3
        w = ref(w, g, states, **kw)
        res = getattr(mx.nd, name)(mw, nd(g), *ms, out=mw, **kw)
        assert res is mw
        np.testing.assert_allclose(mw.asnumpy(), w, rtol=1e-10, atol=1e-12, err_msg=name)
        for a, b in zip(ms, states):
            np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(OPTIM))
@pytest.mark.parametrize("where", ["in_place", "new_out", "grad_is_weight"])
def test_optimizer_update_float32(name, where):
    # float32 takes its own loops (the common case: in place, a separate
    # output, or one array passed twice); sizes past the parallel split
    ref, nstate, extra = OPTIM[name]
    kw = _f32_params(dict(COMMON, **extra))
    n = 70001
    w = rng.randn(n).astype(np.float32)
    g = (w if where == "grad_is_weight" else rng.randn(n) * 3).astype(np.float32)
    states = [np.zeros(n, np.float32) if name != "rmspropalex_update" or k != 0 else np.full(n, 0.1, np.float32)
              for k in range(nstate)]
    if name == "ftrl_update":
        states = [(rng.randn(n) * 0.1).astype(np.float32), rng.rand(n).astype(np.float32)]
    mw = mx.nd.array(w)
    ms = [mx.nd.array(st) for st in states]
    mg = mw if where == "grad_is_weight" else mx.nd.array(g)
    out = mw if where != "new_out" else mx.nd.zeros(n)
    ref_states = [st.astype(np.float64) for st in states]
    want = ref(w.astype(np.float64), g.astype(np.float64), ref_states, **kw)
    getattr(mx.nd, name)(mw, mg, *ms, out=out, **kw)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5, err_msg=name)
    if where == "new_out":
        np.testing.assert_array_equal(mw.asnumpy(), w)
    for a, b in zip(ms, ref_states):
        np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-5, atol=1e-5, err_msg=name)


def test_mixed_precision_sgd():
    w32 = rng.randn(5).astype("float32")
    w16 = nd(w32.astype("float16"))
    m32 = nd(w32.copy())
    mom = nd(np.zeros(5, "float32"))
    ref_w, ref_m = w32.astype("float64"), np.zeros(5)
    for _ in range(3):
        g = rng.randn(5).astype("float16")
        mx.nd.mp_sgd_mom_update(w16, nd(g), mom, m32, lr=0.1, momentum=0.9, wd=0.01, out=w16)
        ref_m = 0.9 * ref_m - 0.1 * 0.01 * ref_w - 0.1 * g.astype("float64")
        ref_w = ref_w + ref_m
    assert w16.dtype == np.float16 and m32.dtype == np.float32
    np.testing.assert_allclose(m32.asnumpy(), ref_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w16.asnumpy(), ref_w.astype("float16"), rtol=2e-3, atol=1e-3)
    w16b = nd(w32.astype("float16"))
    m32b = nd(w32.copy())
    g = rng.randn(5).astype("float16")
    mx.nd.mp_sgd_update(w16b, nd(g), m32b, lr=0.5, out=w16b)
    np.testing.assert_allclose(m32b.asnumpy(), w32 - 0.5 * g.astype("float32"), rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="mp_sgd_update: weight32 has dtype float16, expected float32"):
        mx.nd.mp_sgd_update(w16b, nd(g), nd(g), lr=0.5)


def test_optimizer_requires_lr():
    with pytest.raises(mx.base.MXNetError, match="sgd_update: required argument 'lr' is missing"):
        mx.nd.sgd_update(nd(np.ones(2)), nd(np.ones(2)))


def test_sync_batch_norm_on_one_device_is_batch_norm():
    """contrib.SyncBatchNorm with ndev=1 (oxnet has one device per process)
    gives BatchNorm's outputs, moving statistics and gradients."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    g, b = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    results = []
    for op, extra in ((mx.nd.BatchNorm, {}), (mx.nd.contrib.SyncBatchNorm, {"ndev": 1, "key": "bn0"})):
        xs, gs, bs = mx.nd.array(x), mx.nd.array(g), mx.nd.array(b)
        mm, mv = mx.nd.zeros(3), mx.nd.ones(3)
        for a in (xs, gs, bs):
            a.attach_grad()
        with mx.autograd.record():
            y = op(xs, gs, bs, mm, mv, fix_gamma=False, momentum=0.7, **extra)
            loss = (y * y).sum()
        loss.backward()
        results.append([y.asnumpy(), mm.asnumpy(), mv.asnumpy(), xs.grad.asnumpy(), gs.grad.asnumpy(),
                        bs.grad.asnumpy()])
    for u, v in zip(*results):
        np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="ndev=2"):
        mx.nd.contrib.SyncBatchNorm(mx.nd.array(x), mx.nd.array(g), mx.nd.array(b), mx.nd.zeros(3),
                                    mx.nd.ones(3), ndev=2)
    with pytest.raises(mx.base.MXNetError, match="axis"):
        mx.nd.contrib.SyncBatchNorm(mx.nd.array(x), mx.nd.array(g), mx.nd.array(b), mx.nd.zeros(3),
                                    mx.nd.ones(3), axis=2)
