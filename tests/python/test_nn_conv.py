"""Neural-network operators (FullyConnected, Convolution, Deconvolution,
Pooling, UpSampling, activations, softmax family, Embedding, Pad, Crop)
against NumPy references, with numerical-gradient checks."""
import numpy as np
import pytest

import oxnet as mx
from optest import check_grad

rng = np.random.RandomState(0)


def nd(x):
    return mx.nd.array(x, dtype=x.dtype)


def conv_ref(x, w, b=None, stride=1, pad=0, dilate=1, groups=1):
    """Naive N-D convolution (channel-first), any spatial rank."""
    nsp = x.ndim - 2
    s = (stride,) * nsp if np.isscalar(stride) else tuple(stride)
    p = (pad,) * nsp if np.isscalar(pad) else tuple(pad)
    d = (dilate,) * nsp if np.isscalar(dilate) else tuple(dilate)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    n, c = x.shape[:2]
    f = w.shape[0]
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nsp)]
    y = np.zeros((n, f) + tuple(out_sp))
    cg, fg = c // groups, f // groups
    for o in np.ndindex(*out_sp):
        for kk in np.ndindex(*k):
            idx = tuple(o[i] * s[i] + kk[i] * d[i] for i in range(nsp))
            patch = xp[(slice(None), slice(None)) + idx]  # (n, c)
            for g in range(groups):
                wk = w[(slice(g * fg, (g + 1) * fg), slice(None)) + kk]  # (fg, cg)
                y[(slice(None), slice(g * fg, (g + 1) * fg)) + o] += patch[:, g * cg:(g + 1) * cg] @ wk.T
    if b is not None:
        y += b.reshape((1, f) + (1,) * nsp)
    return y


@pytest.mark.parametrize(
    "xshape,wshape,kw",
    [
        ((2, 3, 7), (4, 3, 3), dict(kernel=(3,), stride=(2,), pad=(1,))),
        ((2, 4, 6, 5), (6, 2, 3, 3), dict(kernel=(3, 3), pad=(1, 1), num_group=2)),
        ((1, 2, 7, 7), (3, 2, 3, 2), dict(kernel=(3, 2), stride=(2, 1), dilate=(2, 1), pad=(2, 0))),
        ((1, 2, 4, 5, 4), (2, 2, 2, 3, 2), dict(kernel=(2, 3, 2), pad=(1, 1, 0))),
    ],
)
def test_convolution_forward(xshape, wshape, kw):
    x = rng.uniform(-1, 1, xshape)
    w = rng.uniform(-1, 1, wshape)
    b = rng.uniform(-1, 1, wshape[0])
    y = mx.nd.Convolution(nd(x), nd(w), nd(b), num_filter=wshape[0], **kw).asnumpy()
    ref = conv_ref(x, w, b, kw.get("stride", 1), kw.get("pad", 0), kw.get("dilate", 1), kw.get("num_group", 1))
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10)
    # float32
    y32 = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), num_filter=wshape[0], **kw)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32.asnumpy(), ref, rtol=1e-4, atol=1e-4)


def test_convolution_grad():
    x = rng.uniform(-1, 1, (2, 2, 4, 4))
    w = rng.uniform(-1, 1, (3, 2, 3, 3))
    b = rng.uniform(-1, 1, 3)
    check_grad("Convolution", [x, w, b], dict(kernel=(3, 3), pad=(1, 1), num_filter=3))
    check_grad("Convolution", [x, w[:, :, :2, :], b], dict(kernel=(2, 3), stride=(2, 1), num_filter=3))
    check_grad("Convolution", [x[:, :, 0], w[:, :, 0]], dict(kernel=(3,), num_filter=3, no_bias=True))


@pytest.mark.parametrize("kw", [
    dict(kernel=(3, 3), pad=(1, 1)),
    dict(kernel=(3, 2), pad=(2, 0), dilate=(2, 1), num_group=2),
    dict(kernel=(2, 2, 2), pad=(1, 0, 1)),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_convolution_many_channels(kw, dtype):
    # >= 32 channels per group: stride 1 takes the implicit-GEMM path (in
    # float32 on AVX2: one gathered GEMM, the data gradient as a flipped
    # convolution), fewer channels im2col; all must agree with the
    # reference, and the two gradients must be the adjoints of the forward.
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    g = kw.get("num_group", 1)
    nsp = len(kw["kernel"])
    xshape = (2, 32 * g) + ((3, 4, 5) if nsp == 3 else (5, 6))
    x = rng.uniform(-1, 1, xshape)
    w = rng.uniform(-1, 1, (32 * g, 32) + kw["kernel"])
    args = dict(num_filter=32 * g, no_bias=True, **kw)

    def arr(v):
        return mx.nd.array(v, dtype=dtype)

    y = mx.nd.Convolution(arr(x), arr(w), **args).asnumpy().astype(np.float64)
    ref = conv_ref(x, w, None, 1, kw["pad"], kw.get("dilate", 1), g)
    np.testing.assert_allclose(y, ref, **tol)
    xa, wa = arr(x), arr(w)
    xa.attach_grad()
    wa.attach_grad()
    og = rng.uniform(-1, 1, y.shape)
    with mx.autograd.record():
        out = mx.nd.Convolution(xa, wa, **args)
    out.backward(arr(og))
    x2 = rng.uniform(-1, 1, x.shape)
    w2 = rng.uniform(-1, 1, w.shape)
    lhs_x = (og * conv_ref(x2, w, None, 1, kw["pad"], kw.get("dilate", 1), g)).sum()
    lhs_w = (og * conv_ref(x, w2, None, 1, kw["pad"], kw.get("dilate", 1), g)).sum()
    np.testing.assert_allclose((xa.grad.asnumpy().astype(np.float64) * x2).sum(), lhs_x, rtol=tol["rtol"])
    np.testing.assert_allclose((wa.grad.asnumpy().astype(np.float64) * w2).sum(), lhs_w, rtol=tol["rtol"])


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("cin_g,cout_g,k,pad", [(64, 40, 3, 1), (1, 20, 5, 0), (20, 50, 5, 2)])
def test_convolution_float32_gathered_gemm(n, groups, cin_g, cout_g, k, pad):
    # float32 at stride 1: on x86-64 with AVX2 and >= 32 channels per group
    # the GEMM gathers its right-hand side from the padded image (LeNet-like
    # 1- and 20-channel layers take im2col). Depth 64*9 and the weight
    # gradient's depth (> 320 output columns) span several depth blocks; 40
    # filters and odd widths leave partial register tiles; one image splits
    # the GEMM itself over threads. Checked against float64 (the reference
    # path) for the output and all three gradients.
    cin, cout = cin_g * groups, cout_g * groups
    x = rng.uniform(-1, 1, (n, cin, 19, 21))
    w = rng.uniform(-1, 1, (cout, cin_g, k, k))
    b = rng.uniform(-1, 1, cout)
    args = dict(kernel=(k, k), pad=(pad, pad), num_filter=cout, num_group=groups)
    oh, ow = 19 + 2 * pad - k + 1, 21 + 2 * pad - k + 1
    og = rng.uniform(-1, 1, (n, cout, oh, ow))
    res = {}
    for dt in ("float32", "float64"):
        xa, wa, ba = (mx.nd.array(v, dtype=dt) for v in (x, w, b))
        for a in (xa, wa, ba):
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Convolution(xa, wa, ba, **args)
        y.backward(mx.nd.array(og, dtype=dt))
        res[dt] = [v.asnumpy().astype(np.float64) for v in (y, xa.grad, wa.grad, ba.grad)]
    np.testing.assert_allclose(res["float64"][0], conv_ref(x, w, b, 1, (pad, pad), 1, groups), rtol=1e-10, atol=1e-10)
    for got, want in zip(res["float32"], res["float64"]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("n,cin,cout,hw,pad,layout", [
    (2, 64, 72, (9, 8), 1, "NCHW"),
    (1, 72, 64, (40, 7), 2, "NCHW"),
    (3, 64, 64, (6, 11), 0, "NHWC"),
    (1, 128, 64, (15, 13), 1, "NCHW"),
])
def test_convolution_float32_winograd(n, cin, cout, hw, pad, layout):
    # float32 3x3 stride-1 convolutions with >= 64 channels run by Winograd
    # F(2x2,3x3) (forward, both gradients); odd and even sizes leave partial
    # 2x2 tiles, 40 rows span several tile blocks. Checked against float64.
    x = rng.uniform(-1, 1, (n, cin) + hw)
    w = rng.uniform(-1, 1, (cout, cin, 3, 3))
    b = rng.uniform(-1, 1, cout)
    oh, ow = hw[0] + 2 * pad - 2, hw[1] + 2 * pad - 2
    og = rng.uniform(-1, 1, (n, cout, oh, ow))
    last = layout == "NHWC"

    def lay(v):
        return v.transpose(0, 2, 3, 1) if last else v

    args = dict(kernel=(3, 3), pad=(pad, pad), num_filter=cout, layout=layout)
    res = {}
    for dt in ("float32", "float64"):
        xa, wa, ba = mx.nd.array(lay(x), dtype=dt), mx.nd.array(lay(w), dtype=dt), mx.nd.array(b, dtype=dt)
        for a in (xa, wa, ba):
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Convolution(xa, wa, ba, **args)
        y.backward(mx.nd.array(lay(og), dtype=dt))
        res[dt] = [v.asnumpy().astype(np.float64) for v in (y, xa.grad, wa.grad, ba.grad)]
    np.testing.assert_allclose(res["float64"][0], lay(conv_ref(x, w, b, 1, (pad, pad))), rtol=1e-10, atol=1e-10)
    for got, want in zip(res["float32"], res["float64"]):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale + 1e-6)


def test_deconvolution_float32_winograd():
    # a 3x3 stride-1 Deconvolution's forward is the convolution data gradient
    x = rng.uniform(-1, 1, (2, 64, 7, 6))
    w = rng.uniform(-1, 1, (64, 72, 3, 3))
    y = mx.nd.Deconvolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), pad=(1, 1), num_filter=72).asnumpy()
    ref = deconv_ref(x, w, (1, 1), (1, 1), (0, 0))
    np.testing.assert_allclose(y, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


def test_convolution_winograd_switch():
    # OXNET_CONV_WINOGRAD=0 runs the direct GEMM instead: same results to
    # float32 rounding (the variable is read once per process)
    import subprocess
    import sys

    code = (
        "import numpy as np, oxnet as mx\n"
        "r = np.random.RandomState(5)\n"
        "x = mx.nd.array(r.uniform(-1, 1, (2, 64, 10, 9)))\n"
        "w = mx.nd.array(r.uniform(-1, 1, (64, 64, 3, 3)))\n"
        "y = mx.nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=64, no_bias=True)\n"
        "np.save(__import__('sys').argv[1], y.asnumpy())\n"
    )
    import os
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as d:
        for flag in ("0", "1"):
            f = os.path.join(d, flag + ".npy")
            env = dict(os.environ, OXNET_CONV_WINOGRAD=flag)
            subprocess.run([sys.executable, "-c", code, f], check=True, env=env)
            out[flag] = np.load(f)
    assert not np.array_equal(out["0"], out["1"])  # two different algorithms ran
    np.testing.assert_allclose(out["1"], out["0"], rtol=0, atol=2e-5 * np.abs(out["0"]).max())


@pytest.mark.parametrize("kw", [dict(pad=(1, 1)), dict(stride=(2, 2), pad=(1, 1), kernel=(2, 2))])
def test_convolution_out_may_be_an_input(kw):
    # out=x (the output is also the input) and a given out= array give the
    # values of a fresh output.
    kw = dict(dict(kernel=(3, 3), num_filter=4, no_bias=True), **kw)
    x = rng.uniform(-1, 1, (2, 4, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 4) + kw["kernel"]).astype(np.float32)
    want = mx.nd.Convolution(nd(x), nd(w), **kw).asnumpy()
    xa = nd(x)
    if want.shape == x.shape:
        mx.nd.Convolution(xa, nd(w), out=xa, **kw)
        np.testing.assert_allclose(xa.asnumpy(), want, rtol=1e-5, atol=1e-6)
    else:
        out = mx.nd.zeros(want.shape)
        mx.nd.Convolution(xa, nd(w), out=out, **kw)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_convolution_nhwc_equals_nchw():
    x = rng.uniform(-1, 1, (2, 4, 5, 6))
    w = rng.uniform(-1, 1, (6, 2, 3, 3))
    b = rng.uniform(-1, 1, 6)
    kw = dict(kernel=(3, 3), num_filter=6, num_group=2, pad=(1, 1), stride=(1, 2))
    y = mx.nd.Convolution(nd(x), nd(w), nd(b), **kw).asnumpy()
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    wl = np.ascontiguousarray(w.transpose(0, 2, 3, 1))
    yl = mx.nd.Convolution(nd(xl), nd(wl), nd(b), layout="NHWC", **kw).asnumpy()
    np.testing.assert_allclose(yl.transpose(0, 3, 1, 2), y, rtol=1e-12, atol=1e-12)
    # 1-D NWC and 3-D NDHWC
    x1 = rng.uniform(-1, 1, (2, 3, 8))
    w1 = rng.uniform(-1, 1, (4, 3, 3))
    y1 = mx.nd.Convolution(nd(x1), nd(w1), kernel=(3,), num_filter=4, no_bias=True).asnumpy()
    y1l = mx.nd.Convolution(nd(x1.transpose(0, 2, 1).copy()), nd(w1.transpose(0, 2, 1).copy()), kernel=(3,),
                            num_filter=4, no_bias=True, layout="NWC").asnumpy()
    np.testing.assert_allclose(y1l.transpose(0, 2, 1), y1, rtol=1e-12, atol=1e-12)
    x3 = rng.uniform(-1, 1, (1, 2, 3, 4, 3))
    w3 = rng.uniform(-1, 1, (3, 2, 2, 2, 2))
    y3 = mx.nd.Convolution(nd(x3), nd(w3), kernel=(2, 2, 2), num_filter=3, no_bias=True).asnumpy()
    y3l = mx.nd.Convolution(nd(x3.transpose(0, 2, 3, 4, 1).copy()), nd(w3.transpose(0, 2, 3, 4, 1).copy()),
                            kernel=(2, 2, 2), num_filter=3, no_bias=True, layout="NDHWC").asnumpy()
    np.testing.assert_allclose(y3l.transpose(0, 4, 1, 2, 3), y3, rtol=1e-12, atol=1e-12)


def test_convolution_errors():
    x = mx.nd.ones((2, 3, 5, 5))
    w = mx.nd.ones((8, 4, 3, 3))
    with pytest.raises(ValueError) as e:
        mx.nd.Convolution(x, w, mx.nd.ones((8,)), kernel=(3, 3), num_filter=8)
    msg = str(e.value)
    assert "Convolution" in msg and "weight" in msg and "(8, 4, 3, 3)" in msg and "(2, 3, 5, 5)" in msg
    with pytest.raises(ValueError, match="num_group"):
        mx.nd.Convolution(x, mx.nd.ones((8, 1, 3, 3)), mx.nd.ones((8,)), kernel=(3, 3), num_filter=8, num_group=2)
    with pytest.raises(ValueError, match="layout"):
        mx.nd.Convolution(x, w, mx.nd.ones((8,)), kernel=(3, 3), num_filter=8, layout="NCDHW")


def test_convolution_autograd():
    x = mx.nd.array(rng.uniform(-1, 1, (2, 3, 5, 5)))
    w = mx.nd.array(rng.uniform(-1, 1, (4, 3, 3, 3)))
    b = mx.nd.array(rng.uniform(-1, 1, 4))
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=4)
        loss = (y * y).sum()
    loss.backward()
    yn = y.asnumpy()
    np.testing.assert_allclose(b.grad.asnumpy(), 2 * yn.sum(axis=(0, 2, 3)), rtol=1e-4)
    # dW[f, c, i, j] = sum 2*y[n, f, h, w] * xpad[n, c, h+i, w+j]
    xp = np.pad(x.asnumpy(), [(0, 0), (0, 0), (1, 1), (1, 1)])
    dw = np.zeros((4, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            dw[:, :, i, j] = np.einsum("nfhw,nchw->fc", 2 * yn, xp[:, :, i:i + 5, j:j + 5])
    np.testing.assert_allclose(w.grad.asnumpy(), dw, rtol=1e-4, atol=1e-4)
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("op", ["Convolution", "Deconvolution"])
@pytest.mark.parametrize("data_req", ["none", "null", "write"])
def test_convolution_backward_without_data_gradient(op, data_req):
    # when nothing takes the data's gradient (a first layer's input, or
    # grad_req='null') the backward skips it; weight and bias gradients are
    # those of the full backward
    x = rng.uniform(-1, 1, (2, 32, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, 32, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 32).astype(np.float32)
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=32, no_bias=False)

    def grads(req):
        xs, ws, bs = nd(x), nd(w), nd(b)
        ws.attach_grad()
        bs.attach_grad()
        if req != "none":
            xs.attach_grad(grad_req=req)
        with mx.autograd.record():
            y = getattr(mx.nd, op)(xs, ws, bs, **kw)
            loss = (y * y).sum()
        loss.backward()
        return xs, ws.grad.asnumpy(), bs.grad.asnumpy()

    xf, wf, bf = grads("write")
    xs, wg, bg = grads(data_req)
    np.testing.assert_allclose(wg, wf, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(bg, bf, rtol=1e-5, atol=1e-4)
    if data_req == "write":
        assert np.abs(xs.grad.asnumpy()).sum() > 0
    elif data_req == "none":
        assert xs.grad is None
    # the full backward's data gradient is the reference's
    if op == "Convolution":
        y = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), pad=1)
        xg = check_data_grad_ref(2 * y, w)
        np.testing.assert_allclose(xf.grad.asnumpy(), xg, rtol=1e-3, atol=1e-3)


def check_data_grad_ref(dy, w):
    """Data gradient of a stride-1 pad-1 3x3 convolution: dy correlated
    with the flipped, transposed weight."""
    wt = np.flip(w.astype(np.float64), axis=(2, 3)).transpose(1, 0, 2, 3)
    return conv_ref(dy, wt, pad=1)


def test_fully_connected():
    x = rng.uniform(-1, 1, (3, 2, 4))
    w = rng.uniform(-1, 1, (5, 8))
    b = rng.uniform(-1, 1, 5)
    y = mx.nd.FullyConnected(nd(x), nd(w), nd(b), num_hidden=5).asnumpy()
    np.testing.assert_allclose(y, x.reshape(3, 8) @ w.T + b, rtol=1e-12)
    w2 = rng.uniform(-1, 1, (5, 4))
    y = mx.nd.FullyConnected(nd(x), nd(w2), num_hidden=5, flatten=False, no_bias=True).asnumpy()
    np.testing.assert_allclose(y, x @ w2.T, rtol=1e-12)
    check_grad("FullyConnected", [x, w, b], dict(num_hidden=5))
    check_grad("FullyConnected", [x, w2], dict(num_hidden=5, flatten=False, no_bias=True))
    with pytest.raises(ValueError, match=r"FullyConnected.*weight shape \(5, 7\)"):
        mx.nd.FullyConnected(nd(x), mx.nd.ones((5, 7)), mx.nd.ones((5,)), num_hidden=5)


def deconv_ref(x, w, stride, pad, adj, groups=1):
    n, c, h, wd = x.shape
    fg = w.shape[1]
    k = w.shape[2:]
    oh = (h - 1) * stride[0] + k[0] - 2 * pad[0] + adj[0]
    ow = (wd - 1) * stride[1] + k[1] - 2 * pad[1] + adj[1]
    full = np.zeros((n, fg * groups, oh + 2 * pad[0] + k[0], ow + 2 * pad[1] + k[1]))
    cg = c // groups
    for g in range(groups):
        for i in range(h):
            for j in range(wd):
                contrib = np.einsum("nc,cfkl->nfkl", x[:, g * cg:(g + 1) * cg, i, j], w[g * cg:(g + 1) * cg])
                full[:, g * fg:(g + 1) * fg, i * stride[0]:i * stride[0] + k[0], j * stride[1]:j * stride[1] + k[1]] += contrib
    return full[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]


def test_deconvolution():
    x = rng.uniform(-1, 1, (2, 4, 3, 4))
    w = rng.uniform(-1, 1, (4, 3, 3, 2))
    for stride, pad, adj in [((1, 1), (0, 0), (0, 0)), ((2, 2), (1, 0), (1, 1)), ((3, 2), (1, 1), (2, 0))]:
        y = mx.nd.Deconvolution(nd(x), nd(w), kernel=(3, 2), stride=stride, pad=pad, adj=adj, num_filter=3).asnumpy()
        np.testing.assert_allclose(y, deconv_ref(x, w, stride, pad, adj), rtol=1e-10, atol=1e-10)
    wg = rng.uniform(-1, 1, (4, 2, 3, 2))
    b = rng.uniform(-1, 1, 4)
    y = mx.nd.Deconvolution(nd(x), nd(wg), nd(b), kernel=(3, 2), stride=(2, 2), num_filter=4, num_group=2,
                            no_bias=False).asnumpy()
    np.testing.assert_allclose(y, deconv_ref(x, wg, (2, 2), (0, 0), (0, 0), 2) + b.reshape(1, 4, 1, 1), rtol=1e-10)
    y = mx.nd.Deconvolution(nd(x), nd(w), kernel=(3, 2), stride=(2, 2), num_filter=3, target_shape=(6, 8))
    assert y.shape == (2, 3, 6, 8)
    check_grad("Deconvolution", [x[:1, :, :2, :2], w, rng.uniform(-1, 1, 3)],
               dict(kernel=(3, 2), stride=(2, 1), pad=(1, 0), adj=(1, 0), num_filter=3, no_bias=False))


def pool_ref(x, k, s, p, pool_type, convention="valid", count_include_pad=True, p_value=2):
    n, c, h, w = x.shape
    def osz(i):
        span = [h, w][i] + 2 * p[i] - k[i]
        return (span // s[i] if convention == "valid" else -(-span // s[i])) + 1
    oh, ow = osz(0), osz(1)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * s[0] - p[0], j * s[1] - p[1]
            he, we = min(hs + k[0], h + p[0]), min(ws + k[1], w + p[1])
            area = (he - hs) * (we - ws)
            a, b2, cc, d = max(hs, 0), min(he, h), max(ws, 0), min(we, w)
            win = x[:, :, a:b2, cc:d]
            if pool_type == "max":
                y[:, :, i, j] = win.max(axis=(2, 3))
            elif pool_type == "sum":
                y[:, :, i, j] = win.sum(axis=(2, 3))
            elif pool_type == "avg":
                y[:, :, i, j] = win.sum(axis=(2, 3)) / (area if count_include_pad else win.shape[2] * win.shape[3])
            else:
                y[:, :, i, j] = (win ** p_value).sum(axis=(2, 3)) ** (1.0 / p_value)
    return y


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum", "lp"])
@pytest.mark.parametrize("convention", ["valid", "full"])
def test_pooling(pool_type, convention):
    x = rng.uniform(0.1, 1, (2, 3, 6, 7))
    for k, s, p, cip in [((2, 2), (2, 2), (0, 0), True), ((3, 3), (2, 2), (1, 1), False), ((3, 2), (1, 2), (1, 0), True)]:
        kw = dict(kernel=k, stride=s, pad=p, pool_type=pool_type, pooling_convention=convention, count_include_pad=cip)
        y = mx.nd.Pooling(nd(x), **kw).asnumpy()
        np.testing.assert_allclose(y, pool_ref(x, k, s, p, pool_type, convention, cip), rtol=1e-10)
    check_grad("Pooling", [x[:1, :2, :5, :5]], dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type=pool_type,
                                                   pooling_convention=convention))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_2x2_stride_2(dtype, pool_type):
    # The straight-line 2x2/stride-2 kernels against the window rules: NaN
    # never wins a maximum; the first maximum in window order (ties, or a
    # NaN in first place) takes the gradient; an odd last row is unused.
    x = rng.uniform(-1, 1, (2, 3, 9, 8)).astype(dtype)
    x[0, 0, 0:2, 0:2] = 0.5
    x[1, 2, 2, 3] = np.nan
    x[1, 1, 0, 0] = np.nan
    xa = nd(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(xa, kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    g = rng.uniform(-1, 1, y.shape).astype(dtype)
    y.backward(nd(g))
    win = x[:, :, :8].reshape(2, 3, 4, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 4, 4, 4)
    want_dx = np.zeros_like(x)
    if pool_type == "max":
        with np.errstate(invalid="ignore"):
            want = np.nanmax(win, axis=-1)
        for n, c, i, j in np.ndindex(2, 3, 4, 4):
            w = win[n, c, i, j]
            best = 0
            for t in range(1, 4):
                if w[t] > w[best]:
                    best = t
            want_dx[n, c, 2 * i + best // 2, 2 * j + best % 2] = g[n, c, i, j]
    else:
        want = win.sum(axis=-1) / (4 if pool_type == "avg" else 1)
        share = g / (4 if pool_type == "avg" else 1)
        want_dx[:, :, :8] = share.repeat(2, axis=2).repeat(2, axis=3)
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y.asnumpy(), want, rtol=tol)
    np.testing.assert_allclose(xa.grad.asnumpy(), want_dx, rtol=tol)
    # the general window loops agree: pooling_convention='full' adds a
    # partial fifth row of windows, which sends the call down that path
    yp = mx.nd.Pooling(nd(x), kernel=(2, 2), stride=(2, 2), pool_type=pool_type, pooling_convention="full")
    assert yp.shape == (2, 3, 5, 4)
    np.testing.assert_allclose(yp.asnumpy()[:, :, :4], want, rtol=tol)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pooling_2x2_stride_2_many_planes(pool_type):
    # enough planes for several parallel tasks, an odd width
    x = rng.standard_normal((8, 50, 8, 7)).astype(np.float32)
    xa = nd(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(xa, kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(nd(g))
    win = x[:, :, :, :6].reshape(8, 50, 4, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(8, 50, 4, 3, 4)
    want_dx = np.zeros_like(x)
    if pool_type == "max":
        want = win.max(axis=-1)
        best = win.argmax(axis=-1)  # continuous data: no ties
        for t in range(4):
            sel = np.where(best == t, g, 0)
            want_dx[:, :, t // 2::2, t % 2:6:2] = sel
    else:
        want = win.mean(axis=-1)
        want_dx[:, :, :, :6] = (g / 4).repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(xa.grad.asnumpy(), want_dx, rtol=1e-6)


def test_pooling_global_layouts_and_1d_3d():
    x = rng.uniform(-1, 1, (2, 3, 5, 4))
    y = mx.nd.Pooling(nd(x), kernel=(1, 1), global_pool=True, pool_type="avg").asnumpy()
    np.testing.assert_allclose(y, x.mean(axis=(2, 3), keepdims=True), rtol=1e-12)
    y = mx.nd.Pooling(nd(x), kernel=(2, 2), stride=(2, 1)).asnumpy()
    yl = mx.nd.Pooling(nd(x.transpose(0, 2, 3, 1).copy()), kernel=(2, 2), stride=(2, 1), layout="NHWC").asnumpy()
    np.testing.assert_allclose(yl.transpose(0, 3, 1, 2), y)
    x1 = rng.uniform(-1, 1, (2, 3, 9))
    y1 = mx.nd.Pooling(nd(x1), kernel=(3,), stride=(3,), pool_type="max").asnumpy()
    np.testing.assert_allclose(y1, x1.reshape(2, 3, 3, 3).max(-1))
    x3 = rng.uniform(-1, 1, (1, 2, 4, 4, 4))
    y3 = mx.nd.Pooling(nd(x3), kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="avg").asnumpy()
    np.testing.assert_allclose(y3, x3.reshape(1, 2, 2, 2, 2, 2, 2, 2).mean(axis=(3, 5, 7)), rtol=1e-12)
    check_grad("Pooling", [x3], dict(kernel=(2, 2, 2), pool_type="max"))
    y = mx.nd.Pooling(nd(x), kernel=(2, 2), stride=(2, 2), pooling_convention="same")
    assert y.shape == (2, 3, 3, 2)


def test_upsampling():
    x = rng.uniform(-1, 1, (2, 3, 2, 3))
    y = mx.nd.UpSampling(nd(x), scale=2, sample_type="nearest").asnumpy()
    np.testing.assert_allclose(y, x.repeat(2, axis=2).repeat(2, axis=3))
    check_grad("UpSampling", [x], dict(scale=2, sample_type="nearest"))
    with pytest.raises(ValueError, match="bilinear"):
        mx.nd.UpSampling(nd(x), scale=2, sample_type="bilinear", num_filter=3)


def _softplus(x):
    return np.log1p(np.exp(x))


ACTS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "log_sigmoid": lambda x: -_softplus(-x),
    "mish": lambda x: x * np.tanh(_softplus(x)),
}


@pytest.mark.parametrize("act", sorted(ACTS))
def test_activation(act):
    x = rng.choice([-1, 1], (3, 4)) * rng.uniform(0.1, 2, (3, 4))
    y = mx.nd.Activation(nd(x), act_type=act).asnumpy()
    np.testing.assert_allclose(y, ACTS[act](x), rtol=1e-12, atol=1e-14)
    check_grad("Activation", [x], dict(act_type=act))


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("n", [7, 70000])
def test_activation_float32(act, n):
    # float32 runs its own kernels (fast transcendentals, AVX2 where the
    # CPU has it), forward and backward; sizes below and above the split
    # into parallel chunks
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[:4] = [0.0, -0.0, 0.25, -30.0][:min(4, n)]
    dy = rng.standard_normal(n).astype(np.float32)
    a = mx.nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Activation(a, act_type=act)
    y.backward(mx.nd.array(dy))
    xd = x.astype(np.float64)
    want = ACTS[act](xd)
    if act == "relu":
        dwant = dy * (xd > 0)
    elif act == "sigmoid":
        dwant = dy * want * (1 - want)
    else:
        dwant = dy * (1 - want ** 2)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(a.grad.asnumpy(), dwant, rtol=1e-5, atol=1e-6)


def test_leaky_relu():
    from math import erf
    x = rng.choice([-1, 1], (2, 3, 4)) * rng.uniform(0.1, 2, (2, 3, 4))
    alpha, lam = 1.6732632423543772, 1.0507009873554805
    refs = {
        "leaky": np.where(x > 0, x, 0.3 * x),
        "elu": np.where(x > 0, x, 0.3 * np.expm1(x)),
        "selu": lam * np.where(x > 0, x, alpha * np.expm1(x)),
        "gelu": 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2))),
        "rrelu": np.where(x > 0, x, (0.125 + 0.334) / 2 * x),
    }
    for t, ref in refs.items():
        y = mx.nd.LeakyReLU(nd(x), act_type=t, slope=0.3).asnumpy()
        np.testing.assert_allclose(y, ref, rtol=1e-12, err_msg=t)
        check_grad("LeakyReLU", [x], dict(act_type=t, slope=0.3))
    g = rng.uniform(0.1, 0.5, 3)
    y = mx.nd.LeakyReLU(nd(x), nd(g), act_type="prelu").asnumpy()
    np.testing.assert_allclose(y, np.where(x > 0, x, g.reshape(1, 3, 1) * x))
    check_grad("LeakyReLU", [x, g], dict(act_type="prelu"))
    # rrelu in training: slopes within the bounds, gradient is y/x on the negative side
    xa = mx.nd.array(-np.ones((100,)))
    xa.attach_grad()
    with mx.autograd.record(train_mode=True):
        ya = mx.nd.LeakyReLU(xa, act_type="rrelu", lower_bound=0.1, upper_bound=0.4)
    ya.backward()
    s = -ya.asnumpy()
    assert s.min() >= 0.1 and s.max() <= 0.4 and s.std() > 0.01
    np.testing.assert_allclose(xa.grad.asnumpy(), s, rtol=1e-6)


def np_softmax(x, axis, t=1.0):
    e = np.exp((x - x.max(axis=axis, keepdims=True)) / t)
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_family():
    x = rng.uniform(-2, 2, (2, 3, 4))
    for axis in (-1, 1, 0):
        np.testing.assert_allclose(mx.nd.softmax(nd(x), axis=axis).asnumpy(), np_softmax(x, axis), rtol=1e-12)
        np.testing.assert_allclose(mx.nd.log_softmax(nd(x), axis=axis, temperature=2.0).asnumpy(),
                                   np.log(np_softmax(x / 2.0, axis)), rtol=1e-12)
        np.testing.assert_allclose(mx.nd.softmin(nd(x), axis=axis).asnumpy(), np_softmax(-x, axis), rtol=1e-12)
        for op in ("softmax", "log_softmax", "softmin"):
            check_grad(op, [x], dict(axis=axis, temperature=1.5))
    y = mx.nd.softmax(mx.nd.array(x, dtype="float32"), dtype="float64")
    assert y.dtype == np.float64
    ln = np.array([[1, 4, 2], [3, 0, 4]], dtype=np.float64)
    y = mx.nd.softmax(nd(x), nd(ln), axis=-1, use_length=True).asnumpy()
    for i in range(2):
        for j in range(3):
            L = int(ln[i, j])
            if L:
                np.testing.assert_allclose(y[i, j, :L], np_softmax(x[i, j, :L], -1), rtol=1e-12)
            assert (y[i, j, L:] == 0).all()
    np.testing.assert_allclose(mx.nd.SoftmaxActivation(nd(x)).asnumpy(),
                               np_softmax(x.reshape(2, 12), -1).reshape(2, 3, 4), rtol=1e-12)
    np.testing.assert_allclose(mx.nd.SoftmaxActivation(nd(x), mode="channel").asnumpy(), np_softmax(x, 1), rtol=1e-12)
    check_grad("SoftmaxActivation", [x], dict(mode="instance"))
    check_grad("SoftmaxActivation", [x], dict(mode="channel"))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(3, 7), (40, 1000), (5, 1)])
def test_softmax_float32_last_axis(op, shape):
    # float32 over the last axis runs in float32 (fast exp, rows in
    # parallel); forward and backward against float64 NumPy
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    x.flat[0] = -200.0  # far below the row maximum: exp underflows to 0
    t = 1.5
    a = mx.nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(a, temperature=t)
    g = rng.standard_normal(shape).astype(np.float32)
    y.backward(mx.nd.array(g))
    xd = x.astype(np.float64) / t
    sm = np_softmax(xd, -1)
    assert y.dtype == np.float32
    if op == "softmax":
        np.testing.assert_allclose(y.asnumpy(), sm, rtol=1e-5, atol=1e-7)
        want = sm * (g - (g * sm).sum(-1, keepdims=True)) / t
    else:
        np.testing.assert_allclose(y.asnumpy(), np.log(sm), rtol=1e-5, atol=2e-5)
        want = (g - sm * g.sum(-1, keepdims=True)) / t
    np.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-4, atol=1e-5)
    # NaN poisons its row only; an all -inf row is NaN, as in float64
    z = np.zeros((3, 4), np.float32)
    z[0, 1] = np.nan
    z[1] = -np.inf
    out = getattr(mx.nd, op)(mx.nd.array(z)).asnumpy()
    assert np.isnan(out[:2]).all()
    np.testing.assert_allclose(out[2], np.log(np.full(4, 0.25)) if op == "log_softmax" else 0.25, rtol=1e-6)


def test_embedding():
    w = rng.uniform(-1, 1, (5, 3))
    idx = np.array([[0, 4], [2, 2]], dtype=np.float64)
    y = mx.nd.Embedding(nd(idx), nd(w), input_dim=5, output_dim=3).asnumpy()
    np.testing.assert_allclose(y, w[idx.astype(int)])
    wa = nd(w)
    wa.attach_grad()
    with mx.autograd.record():
        out = mx.nd.Embedding(nd(idx), wa, input_dim=5, output_dim=3)
    out.backward()
    want = np.zeros_like(w)
    np.add.at(want, idx.astype(int).ravel(), 1.0)
    np.testing.assert_allclose(wa.grad.asnumpy(), want)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    x = rng.uniform(-1, 1, (1, 2, 3, 4))
    pw = (0, 0, 0, 0, 1, 2, 2, 1)
    y = mx.nd.Pad(nd(x), mode=mode, pad_width=pw, constant_value=0.5).asnumpy()
    np_pw = [(pw[2 * i], pw[2 * i + 1]) for i in range(4)]
    ref = np.pad(x, np_pw, mode=mode, constant_values=0.5) if mode == "constant" else np.pad(x, np_pw, mode=mode)
    np.testing.assert_allclose(y, ref)
    check_grad("Pad", [x], dict(mode=mode, pad_width=pw))


def test_crop():
    x = rng.uniform(-1, 1, (2, 2, 5, 6))
    y = mx.nd.Crop(nd(x), num_args=1, offset=(1, 2), h_w=(3, 2)).asnumpy()
    np.testing.assert_allclose(y, x[:, :, 1:4, 2:4])
    like = mx.nd.zeros((1, 1, 3, 4))
    y = mx.nd.Crop(nd(x), like, num_args=2, center_crop=True).asnumpy()
    np.testing.assert_allclose(y, x[:, :, 1:4, 1:5])
    check_grad("Crop", [x], dict(num_args=1, h_w=(2, 3), center_crop=True))
