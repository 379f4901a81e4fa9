"""Shared helpers for operator tests: NumPy-reference forward checks and
numerical-gradient checks of the registry's gradient rules."""
import numpy as np

import oxnet as mx
from oxnet import _native


def run(op, inputs, **kw):
    res = getattr(mx.nd, op)(*[mx.nd.array(x, dtype=x.dtype) for x in inputs], **kw)
    return res


def numeric_grad(op, xs, ograd, kw, eps=1e-4):
    """Central differences of sum(ograd * op(xs)) w.r.t. each input (float64)."""
    grads = []
    for k, x in enumerate(xs):
        g = np.zeros_like(x)
        it = np.nditer(x, flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            old = x[idx]
            x[idx] = old + eps
            fp = (run(op, xs, **kw).asnumpy() * ograd).sum()
            x[idx] = old - eps
            fm = (run(op, xs, **kw).asnumpy() * ograd).sum()
            x[idx] = old
            g[idx] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def analytic_grad(op, xs, ograd, kw):
    ins = [mx.nd.array(x, dtype=x.dtype) for x in xs]
    out = getattr(mx.nd, op)(*ins, **kw)
    outs = out if isinstance(out, list) else [out]
    h = _native.get_op(op)
    gs = _native.op_grad(h, ins, kw or None, outs, [mx.nd.array(ograd, dtype=ograd.dtype)])
    return [None if g is None else g.asnumpy() for g in gs]


def check_grad(op, xs, kw=None, rtol=1e-4, atol=1e-6, eps=1e-5):
    kw = kw or {}
    xs = [np.array(x, dtype=np.float64) for x in xs]
    out = run(op, xs, **kw).asnumpy()
    ograd = np.random.uniform(0.5, 1.5, size=out.shape)
    ana = analytic_grad(op, xs, ograd, kw)
    num = numeric_grad(op, xs, ograd, kw, eps=eps)
    for i, (a, n) in enumerate(zip(ana, num)):
        if a is None:
            a = np.zeros_like(n)
        np.testing.assert_allclose(a, n, rtol=rtol, atol=atol, err_msg=f"{op}: gradient of input {i}")
