"""One table over the whole operator registry (issue 3).

Every registered operator (aliases folded onto their canonical name) has an
entry in TABLE. An entry is a list of cases; each case is one of

* ``ref``: inputs, parameters and a NumPy reference. The test compares the
  forward result (values, shape, dtype) with the reference and, for
  differentiable operators, checks the autograd gradient against central
  differences in float64 with ``mx.test_utils.check_numeric_gradient``.
* ``prop``: a property check for operators that are not a pure function of
  their inputs (random sampling, Dropout in training) or whose gradient is by
  definition not the derivative of the forward (loss heads, BlockGrad).
* ``via``: internal operators (``_backward_*``, ``*_grad`` and friends) that
  only exist to build gradients. They are checked through the public operator
  named in the entry: its numerical-gradient case must dispatch the internal
  operator (seen by the profiler), so the internal operator's numbers are the
  ones the gradient check verified.

A new operator without an entry fails ``test_table_covers_registry``.
"""
import math

import numpy as np
import pytest

import oxnet as mx
from oxnet import _native
from oxnet.test_utils import assert_almost_equal, check_consistency, check_numeric_gradient

_rng = np.random.RandomState(42)


def _assigned(x, key, v):
    y = x.copy()
    y[key] = v
    return y


def U(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    """Uniform inputs in [lo, hi), rounded to float32."""
    return _rng.uniform(lo, hi, size=shape).astype(dtype)


def A(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


def ref(ins, fn, params=None, grad=True, odt=None, wrt=None, mutated=None, rtol=None, atol=None,
        grtol=1e-4, gatol=1e-6, id=None, xfail=None, xfail_grad=None, train=False):
    """A reference case.

    ins: input arrays (the operator's inputs, in order); fn(*ins_float64,
    **params) -> array or list of arrays; grad: check the gradient; wrt:
    indices of the inputs differentiated (default: every float input);
    odt: the expected output dtype(s) (default: the first input's, float32
    for operators without inputs); mutated: {input index: reference output
    index} for inputs the operator updates in place (optimizer states);
    xfail / xfail_grad: the reason of a known operator bug that makes the
    forward / gradient check fail (strict: the test fails once it is fixed);
    train: run the forward in training mode (BatchNorm's batch statistics)."""
    return dict(kind="ref", ins=ins, fn=fn, params=params or {}, grad=grad, odt=odt, wrt=wrt,
                mutated=mutated or {}, rtol=rtol, atol=atol, grtol=grtol, gatol=gatol, id=id,
                xfail=xfail, xfail_grad=xfail_grad, train=train)


def prop(fn, id=None, xfail=None):
    """A property case: fn() raises AssertionError when the property fails."""
    return dict(kind="prop", fn=fn, id=id, xfail=xfail)


def _raises(fn, text):
    try:
        fn().wait_to_read()
    except Exception as e:  # noqa: BLE001
        assert text in str(e), f"error does not mention {text!r}: {e}"
        return
    raise AssertionError(f"no error raised (expected one mentioning {text!r})")


def via(op, id=None):
    """An internal operator checked through the gradient of ``op``'s cases."""
    return dict(kind="via", op=op, id=id, xfail=None)


def nd(x):
    return mx.nd.array(x, dtype=x.dtype)


def call(name, ins, params):
    return getattr(mx.nd, name)(*[nd(x) for x in ins], **params)


# -- NumPy references -----------------------------------------------------------

_erf = np.vectorize(math.erf)


def _erfinv(x):
    """Reference inverse erf: bisection on math.erf in float64 (slow, exact enough)."""
    x = np.asarray(x, np.float64)
    lo, hi = np.full(x.shape, -6.0), np.full(x.shape, 6.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = _erf(mid) < x
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def _softmax(x, axis=-1, temperature=None):
    x = x / (temperature or 1.0)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _mod(a, b):
    # MXNet's mod follows the divisor's sign (Python's %), like np.mod.
    return np.mod(a, b)


def _conv2d(x, w, b, stride=1, pad=0):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


def _deconv2d(x, w, b, stride=1):
    n, c, h, wd = x.shape
    _, f, kh, kw = w.shape
    out = np.zeros((n, f, (h - 1) * stride + kh, (wd - 1) * stride + kw))
    for i in range(h):
        for j in range(wd):
            out[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum(
                "nc,cfhw->nfhw", x[:, :, i, j], w)
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


def _pool2d(x, k, s, fn, pad=0, fill=0.0):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = fn(xp[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


def _norm_axes(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def _lrn(x, nsize, alpha, beta, knorm):
    c = x.shape[1]
    sq = x ** 2
    s = np.zeros_like(x)
    for i in range(c):
        lo, hi = max(0, i - nsize // 2), min(c, i + nsize // 2 + 1)
        s[:, i] = sq[:, lo:hi].sum(axis=1)
    return x / (knorm + alpha / nsize * s) ** beta


def _seq_mask(x, lengths, value):
    y = x.copy()
    for b, n in enumerate(lengths.astype(int)):
        y[n:, b] = value
    return y


def _seq_reverse(x, lengths):
    y = x.copy()
    for b, n in enumerate(lengths.astype(int)):
        y[:n, b] = x[:n, b][::-1]
    return y


def _scatter_add(g, idx, like):
    out = np.zeros_like(like)
    for (a, _, c), v in np.ndenumerate(g):
        out[a, idx[a, 0, c], c] += v
    return out


def _one_hot(idx, depth):
    return (np.arange(depth) == idx[..., None]).astype(np.float64)


# -- the table ------------------------------------------------------------------

TABLE = {}

# Unary math: name -> (reference, low, high, differentiable).
_UNARY = {
    "abs": (np.abs, -1, 1, True),
    "arccos": (np.arccos, -0.9, 0.9, True),
    "arccosh": (np.arccosh, 1.2, 3, True),
    "arcsin": (np.arcsin, -0.9, 0.9, True),
    "arcsinh": (np.arcsinh, -2, 2, True),
    "arctan": (np.arctan, -2, 2, True),
    "arctanh": (np.arctanh, -0.9, 0.9, True),
    "cbrt": (np.cbrt, 0.2, 2, True),
    "ceil": (np.ceil, -2, 2, True),
    "cos": (np.cos, -3, 3, True),
    "cosh": (np.cosh, -2, 2, True),
    "degrees": (np.degrees, -2, 2, True),
    "erf": (_erf, -2, 2, True),
    "erfinv": (_erfinv, -0.9, 0.9, True),
    "exp": (np.exp, -2, 2, True),
    "expm1": (np.expm1, -2, 2, True),
    "fix": (np.trunc, -2, 2, True),
    "floor": (np.floor, -2, 2, True),
    "log": (np.log, 0.2, 3, True),
    "log10": (np.log10, 0.2, 3, True),
    "log1p": (np.log1p, -0.5, 2, True),
    "log2": (np.log2, 0.2, 3, True),
    "logical_not": (lambda x: (x == 0).astype(np.float64), -1, 1, False),
    "negative": (np.negative, -1, 1, True),
    "radians": (np.radians, -90, 90, True),
    "rcbrt": (lambda x: 1 / np.cbrt(x), 0.2, 2, True),
    "reciprocal": (np.reciprocal, 0.3, 2, True),
    "relu": (lambda x: np.maximum(x, 0), -1, 1, True),
    "rint": (lambda x: np.where(x - np.floor(x) <= np.ceil(x) - x, np.floor(x), np.ceil(x)), -2, 2, True),
    "round": (_round_away, -2, 2, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.2, 2, True),
    "sigmoid": (_sigmoid, -3, 3, True),
    "sign": (np.sign, -1, 1, True),
    "sin": (np.sin, -3, 3, True),
    "sinh": (np.sinh, -2, 2, True),
    "softsign": (lambda x: x / (1 + np.abs(x)), -2, 2, True),
    "sqrt": (np.sqrt, 0.2, 2, True),
    "square": (np.square, -2, 2, True),
    "tan": (np.tan, -1.2, 1.2, True),
    "tanh": (np.tanh, -2, 2, True),
    "trunc": (np.trunc, -2, 2, True),
    "_copy": (lambda x: x, -1, 1, True),
    "zeros_like": (np.zeros_like, -1, 1, True),
    "ones_like": (np.ones_like, -1, 1, True),
}
for _n, (_f, _lo, _hi, _d) in _UNARY.items():
    TABLE[_n] = [ref([U(2, 3, lo=_lo, hi=_hi)], _f, grad=_d)]
TABLE["logical_not"].append(ref([A([[0, 1, -2], [0.5, 0, 3]])], _UNARY["logical_not"][0], grad=False, id="zeros"))

# Binary, same shapes: name -> (reference, rhs low, rhs high, differentiable).
_cmp = {
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "lesser": np.less, "lesser_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
_BINARY = {
    "elemwise_add": (np.add, -1, 1, True),
    "elemwise_sub": (np.subtract, -1, 1, True),
    "elemwise_mul": (np.multiply, -1, 1, True),
    "elemwise_div": (np.divide, 0.5, 2, True),
    "_maximum": (np.maximum, -1, 1, True),
    "_minimum": (np.minimum, -1, 1, True),
    "_mod": (_mod, 0.5, 2, True),
    "_power": (np.power, 0.5, 2, True),
    "_hypot": (np.hypot, -1, 1, True),
}
for _n, (_f, _lo, _hi, _d) in _BINARY.items():
    _lhs = U(2, 3, lo=0.2, hi=2) if _n == "_power" else U(2, 3, lo=-2, hi=2)
    TABLE[_n] = [ref([_lhs, U(2, 3, lo=_lo, hi=_hi)], _f, grad=_d)]
# Comparisons and logic on values with ties and zeros.
_L = A([[0, 1, -2, 0.5], [0, 0, 3, -1]])
_R = A([[0, 1, 2, 0], [1, 0, 3, -2]])
for _n, _f in _cmp.items():
    _g = (lambda f: lambda a, b: f(a, b).astype(np.float64))(_f)
    TABLE["_" + _n] = [ref([_L, _R], _g, grad=False)]
    TABLE["broadcast_" + _n] = [ref([_L, _R[:1]], _g, grad=False)]

# Broadcasting binary: (2, 3) with (1, 3) and (2, 1) with (1, 3).
_BCAST = {
    "broadcast_add": (np.add, -1, 1), "broadcast_sub": (np.subtract, -1, 1), "broadcast_mul": (np.multiply, -1, 1),
    "broadcast_div": (np.divide, 0.5, 2), "broadcast_mod": (_mod, 0.5, 2), "broadcast_power": (np.power, 0.5, 2),
    "broadcast_maximum": (np.maximum, -1, 1), "broadcast_minimum": (np.minimum, -1, 1),
    "broadcast_hypot": (np.hypot, -1, 1),
}
for _n, (_f, _lo, _hi) in _BCAST.items():
    _lo_l = 0.2 if _n == "broadcast_power" else -2
    TABLE[_n] = [
        ref([U(2, 3, lo=_lo_l, hi=2), U(1, 3, lo=_lo, hi=_hi)], _f),
        ref([U(2, 1, lo=_lo_l, hi=2), U(1, 3, lo=_lo, hi=_hi)], _f, id="both"),
    ]

# Scalar operators: name -> (reference(x, s), scalar, input low, high).
_SCALAR = {
    "_plus_scalar": (lambda x, s: x + s, 0.5, -1, 1),
    "_minus_scalar": (lambda x, s: x - s, 0.5, -1, 1),
    "_rminus_scalar": (lambda x, s: s - x, 0.5, -1, 1),
    "_mul_scalar": (lambda x, s: x * s, 1.5, -1, 1),
    "_div_scalar": (lambda x, s: x / s, 1.5, -1, 1),
    "_rdiv_scalar": (lambda x, s: s / x, 1.5, 0.5, 2),
    "_mod_scalar": (lambda x, s: _mod(x, s), 0.7, -2, 2),
    "_rmod_scalar": (lambda x, s: _mod(s, x), 1.7, 0.4, 1),
    "_power_scalar": (lambda x, s: x ** s, 2.5, 0.2, 2),
    "_rpower_scalar": (lambda x, s: s ** x, 1.5, -1, 1),
    "_maximum_scalar": (lambda x, s: np.maximum(x, s), 0.1, -1, 1),
    "_minimum_scalar": (lambda x, s: np.minimum(x, s), 0.1, -1, 1),
    "_hypot_scalar": (lambda x, s: np.hypot(x, s), 0.5, -1, 1),
}
for _n, (_f, _s, _lo, _hi) in _SCALAR.items():
    TABLE[_n] = [ref([U(2, 3, lo=_lo, hi=_hi)], (lambda f: lambda x, scalar: f(x, scalar))(_f), {"scalar": _s})]
for _n, _f in _cmp.items():
    TABLE[f"_{_n}_scalar"] = [ref([_L], (lambda f: lambda x, scalar: f(x, scalar).astype(np.float64))(_f),
                                  {"scalar": 0.0 if _n.startswith("logical") else 0.5}, grad=False)]

# Reductions.
_X = U(2, 3, 4)
_NAN = U(2, 3)
_NAN[0, 1] = np.nan
TABLE.update({
    "sum": [ref([_X], lambda x, axis: x.sum(axis=axis), {"axis": 1}),
            ref([_X], lambda x, axis, keepdims: x.sum(axis=axis, keepdims=True), {"axis": (0, 2), "keepdims": True},
                id="keepdims"),
            ref([_X], lambda x: np.array([x.sum()]), id="all")],
    "mean": [ref([_X], lambda x, axis: x.mean(axis=axis), {"axis": (0, 2)})],
    "prod": [ref([U(2, 3, lo=0.5, hi=1.5)], lambda x, axis: x.prod(axis=axis), {"axis": 1})],
    "max": [ref([_X], lambda x, axis: x.max(axis=axis), {"axis": 1})],
    "min": [ref([_X], lambda x, axis: x.min(axis=axis), {"axis": 2})],
    "nansum": [ref([_NAN], lambda x, axis: np.nansum(x, axis=axis), {"axis": 1})],
    "nanprod": [ref([_NAN], lambda x, axis: np.nanprod(x, axis=axis), {"axis": 1})],
    "norm": [ref([_X], lambda x, axis: np.sqrt((x ** 2).sum(axis=axis)), {"axis": 1}),
             ref([_X], lambda x, ord, axis: np.abs(x).sum(axis=axis), {"ord": 1, "axis": 2}, id="l1")],
    "argmax": [ref([_X], lambda x, axis: x.argmax(axis=axis).astype(np.float64), {"axis": 1}, grad=False)],
    "argmin": [ref([_X], lambda x, axis: x.argmin(axis=axis).astype(np.float64), {"axis": 2}, grad=False)],
})

# Shapes, indexing, joining.
_IDX = A([2, 0, 1, 2])
TABLE.update({
    "Reshape": [ref([U(2, 3, 2)], lambda x, shape: x.reshape(3, 4), {"shape": (3, -1)}),
                ref([U(2, 3, 2)], lambda x, shape: x.reshape(2, 6), {"shape": (0, -1)}, id="zero")],
    "transpose": [ref([U(2, 3, 4)], lambda x, axes: x.transpose(axes), {"axes": (1, 0, 2)}),
                  ref([U(2, 3)], lambda x: x.T, id="default")],
    "Flatten": [ref([U(2, 3, 2)], lambda x: x.reshape(2, 6))],
    "expand_dims": [ref([U(2, 3)], lambda x, axis: x[:, None], {"axis": 1})],
    "squeeze": [ref([U(2, 1, 3)], lambda x, axis: x[:, 0], {"axis": 1})],
    "SwapAxis": [ref([U(2, 3, 4)], lambda x, dim1, dim2: x.swapaxes(0, 2), {"dim1": 0, "dim2": 2})],
    "tile": [ref([U(2, 3)], lambda x, reps: np.tile(x, reps), {"reps": (2, 1, 2)})],
    "repeat": [ref([U(2, 3)], lambda x, repeats, axis: np.repeat(x, 2, axis=1), {"repeats": 2, "axis": 1})],
    "reverse": [ref([U(2, 3)], lambda x, axis: x[:, ::-1], {"axis": 1})],
    "slice": [ref([U(3, 4)], lambda x, begin, end: x[0:2, 1:3], {"begin": (0, 1), "end": (2, 3)}),
              ref([U(3, 4)], lambda x, begin, end, step: x[::-1, 0:4:2], {"begin": (None, 0), "end": (None, 4),
                                                                          "step": (-1, 2)}, id="step")],
    "slice_axis": [ref([U(3, 4)], lambda x, axis, begin, end: x[:, 1:3], {"axis": 1, "begin": 1, "end": 3})],
    "_slice_assign": [ref([U(3, 4), U(2, 2)], lambda x, v, begin, end, step: _assigned(x, (slice(None, None, 2), slice(1, 3)), v),
                          {"begin": (None, 1), "end": (None, 3), "step": (2, 1)})],
    "_slice_assign_scalar": [ref([U(3, 4)], lambda x, scalar, begin, end: _assigned(x, (slice(0, 2), slice(2, None)), scalar),
                                 {"scalar": 1.5, "begin": (0, 2), "end": (2, None)})],
    "slice_like": [ref([U(3, 4), U(2, 3)], lambda x, y: x[:2, :3], wrt=[0])],
    "Concat": [ref([U(2, 3), U(2, 2)], lambda a, b, dim: np.concatenate([a, b], axis=1), {"dim": 1})],
    "stack": [ref([U(2, 3), U(2, 3)], lambda a, b, axis: np.stack([a, b], axis=1), {"axis": 1})],
    "SliceChannel": [ref([U(2, 4)], lambda x, num_outputs, axis: [x[:, :2], x[:, 2:]], {"num_outputs": 2, "axis": 1}),
                     ref([U(2, 3)], lambda x, num_outputs, axis, squeeze_axis: [x[0], x[1]],
                         {"num_outputs": 2, "axis": 0, "squeeze_axis": True}, id="squeeze")],
    "broadcast_to": [ref([U(1, 3)], lambda x, shape: np.broadcast_to(x, (2, 3)), {"shape": (2, 3)})],
    "broadcast_axis": [ref([U(1, 3, 1)], lambda x, axis, size: np.broadcast_to(x, (2, 3, 4)),
                           {"axis": (0, 2), "size": (2, 4)})],
    "broadcast_like": [ref([U(1, 3), U(2, 3)], lambda x, y: np.broadcast_to(x, (2, 3)), wrt=[0]),
                       ref([U(1, 3, 1), U(2, 4)], lambda x, y, lhs_axes, rhs_axes: np.broadcast_to(x, (4, 3, 2)),
                           {"lhs_axes": (0, 2), "rhs_axes": (1, 0)}, wrt=[0], id="axes")],
    "reshape_like": [ref([U(6), U(2, 3)], lambda x, y: x.reshape(2, 3), wrt=[0])],
    "Pad": [ref([U(1, 1, 2, 3)], lambda x, mode, pad_width, constant_value: np.pad(
                x, ((0, 0), (0, 0), (1, 1), (1, 2)), constant_values=0.5),
                {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 1, 2), "constant_value": 0.5}),
            ref([U(1, 1, 2, 3)], lambda x, mode, pad_width: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 2)), mode="edge"),
                {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 1, 1, 2)}, id="edge"),
            ref([U(1, 1, 3, 4)], lambda x, mode, pad_width: np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 1)),
                                                                    mode="reflect"),
                {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 1, 2, 1)}, id="reflect")],
    "Crop": [ref([U(1, 1, 4, 5), U(1, 1, 2, 3)], lambda x, y, num_args, offset: x[:, :, 1:3, 1:4],
                 {"num_args": 2, "offset": (1, 1)}, wrt=[0]),
             ref([U(1, 1, 4, 5)], lambda x, num_args, h_w, center_crop: x[:, :, 1:3, 1:4],
                 {"num_args": 1, "h_w": (2, 3), "center_crop": True}, id="center")],
    "diag": [ref([U(3, 4)], lambda x, k: np.diag(x, 1), {"k": 1}),
             ref([U(3)], lambda x: np.diag(x), id="1d")],
    "take": [ref([U(3, 2), _IDX], lambda a, i: a[i.astype(int)], wrt=[0]),
             ref([U(2, 3), A([[3, -1], [0, 1]])], lambda a, i, axis, mode: a[:, np.clip(i, 0, 2).astype(int)],
                 {"axis": 1, "mode": "clip"}, wrt=[0], id="clip")],
    "pick": [ref([U(4, 3), _IDX], lambda x, i, axis: x[np.arange(4), i.astype(int)], {"axis": 1}, wrt=[0]),
             ref([U(4, 3), _IDX], lambda x, i, axis, keepdims: x[np.arange(4), i.astype(int)][:, None],
                 {"axis": -1, "keepdims": True}, wrt=[0], id="keepdims")],
    "one_hot": [ref([_IDX], lambda i, depth: _one_hot(i.astype(int), 3), {"depth": 3}, grad=False),
                ref([_IDX], lambda i, depth, on_value, off_value: _one_hot(i.astype(int), 3) * 4 - 2,
                    {"depth": 3, "on_value": 2.0, "off_value": -2.0}, grad=False, id="values")],
    "where": [ref([A([[1, 0, 1], [0, 0, 2]]), U(2, 3), U(2, 3)], lambda c, x, y: np.where(c != 0, x, y), wrt=[1, 2])],
    "Embedding": [ref([A([[0, 2], [4, 1]]), U(5, 3)], lambda i, w, input_dim, output_dim: w[i.astype(int)],
                      {"input_dim": 5, "output_dim": 3}, wrt=[1])],
    "SequenceMask": [ref([U(4, 2, 3), A([2, 3])], lambda x, n, use_sequence_length, value: _seq_mask(x, n, -1.0),
                         {"use_sequence_length": True, "value": -1.0}, wrt=[0])],
    "SequenceLast": [ref([U(4, 2, 3), A([2, 4])], lambda x, n, use_sequence_length: x[n.astype(int) - 1, [0, 1]],
                         {"use_sequence_length": True}, wrt=[0]),
                     ref([U(4, 2, 3)], lambda x: x[-1], id="full")],
    "SequenceReverse": [ref([U(4, 2, 3), A([2, 3])], lambda x, n, use_sequence_length: _seq_reverse(x, n),
                            {"use_sequence_length": True}, wrt=[0])],
    "sort": [ref([U(2, 4)], lambda x, axis: np.sort(x, axis=axis), {"axis": -1}),
             ref([U(3, 2)], lambda x, axis, is_ascend: -np.sort(-x, axis=0), {"axis": 0, "is_ascend": False},
                 id="descend")],
    "argsort": [ref([U(2, 4)], lambda x: np.argsort(x, axis=-1).astype(np.float64), grad=False)],
    "topk": [ref([U(2, 4)], lambda x, k: np.argsort(-x, axis=-1)[:, :2].astype(np.float64), {"k": 2}, grad=False),
             ref([U(2, 4)], lambda x, k, ret_typ: -np.sort(-x, axis=-1)[:, :2], {"k": 2, "ret_typ": "value"},
                 id="value"),
             ref([U(2, 4)], lambda x, k, ret_typ, axis: (x >= np.sort(x, axis=0)[-1:]).astype(np.float64),
                 {"k": 1, "ret_typ": "mask", "axis": 0}, grad=False, id="mask")],
    "shape_array": [ref([U(2, 3, 1)], lambda x: np.array([2, 3, 1]), odt=np.int64, grad=False)],
    "size_array": [ref([U(2, 3, 1)], lambda x: np.array([6]), odt=np.int64, grad=False)],
    "clip": [ref([U(2, 3, lo=-1, hi=1)], lambda x, a_min, a_max: np.clip(x, -0.5, 0.5), {"a_min": -0.5, "a_max": 0.5})],
    "Cast": [ref([U(2, 3)], lambda x, dtype: x, {"dtype": "float64"}, odt=np.float64),
             ref([U(2, 3, lo=-3, hi=3)], lambda x, dtype: np.trunc(x), {"dtype": "int32"}, odt=np.int32, grad=False,
                 id="int32")],
    "dot": [ref([U(2, 3), U(3, 4)], lambda a, b: a @ b),
            ref([U(3, 2), U(4, 3)], lambda a, b, transpose_a, transpose_b: a.T @ b.T,
                {"transpose_a": True, "transpose_b": True}, id="transposed"),
            ref([U(2, 2, 3), U(3, 2)], lambda a, b: a @ b, id="3d")],
    "batch_dot": [ref([U(2, 2, 3), U(2, 3, 4)], lambda a, b: a @ b),
                  ref([U(2, 3, 2), U(2, 3, 4)], lambda a, b, transpose_a: a.swapaxes(1, 2) @ b,
                      {"transpose_a": True}, id="transposed")],
    "add_n": [ref([U(2, 3), U(2, 3), U(2, 3)], lambda a, b, c: a + b + c)],
    "gather_nd": [ref([U(3, 4, 2), A([[0, 2, -1], [1, 3, 0]], np.int64)], lambda d, i: d[i[0], i[1]], wrt=[0])],
    "scatter_nd": [ref([U(3, 2), A([[0, 2, 1], [1, 3, 0]], np.int64)],
                       lambda u, i, shape: _assigned(np.zeros(shape, u.dtype), (i[0], i[1]), u), {"shape": (3, 4, 2)},
                       wrt=[0])],
    "_scatter_set_nd": [ref([U(3, 4), U(2), A([[0, 2], [1, 3]], np.int64)],
                            lambda x, v, i: _assigned(x, (i[0], i[1]), v), wrt=[0, 1])],
    "_gather_along_axis": [ref([U(2, 3, 4), A([[[0, 2, 2, 1]], [[0, 0, 1, 1]]], np.int64)],
                               lambda d, i, axis: np.take_along_axis(d, i, axis=1), {"axis": 1}, wrt=[0])],
    "_scatter_add_along_axis": [ref([U(2, 1, 4), A([[[0, 2, 2, 1]], [[0, 0, 1, 1]]], np.int64), U(2, 3, 4)],
                                    lambda g, i, d, axis: _scatter_add(g, i, d), {"axis": 1}, wrt=[0])],
    "smooth_l1": [ref([U(2, 3, lo=-2, hi=2)], lambda x, scalar: np.where(np.abs(x) < 1 / scalar ** 2,
                                                                        0.5 * (scalar * x) ** 2,
                                                                        np.abs(x) - 0.5 / scalar ** 2),
                      {"scalar": 1.5})],
})

# Creation.
TABLE.update({
    "_zeros": [ref([], lambda shape: np.zeros((2, 3)), {"shape": (2, 3)}, grad=False)],
    "_ones": [ref([], lambda shape, dtype: np.ones((2, 3)), {"shape": (2, 3), "dtype": "float64"}, odt=np.float64,
                  grad=False)],
    "_full": [ref([], lambda shape, value: np.full((2, 3), 1.5), {"shape": (2, 3), "value": 1.5}, grad=False)],
    "_eye": [ref([], lambda N, M, k: np.eye(3, 4, 1), {"N": 3, "M": 4, "k": 1}, grad=False)],
    "_arange": [ref([], lambda start, stop, step: np.arange(1, 7, 2.0), {"start": 1, "stop": 7, "step": 2},
                    grad=False),
                ref([], lambda start, stop, repeat: np.repeat(np.arange(0, 3.0), 2), {"start": 0, "stop": 3,
                                                                                       "repeat": 2},
                    grad=False, id="repeat")],
})

# Neural network layers.
_ACT = {"relu": lambda x: np.maximum(x, 0), "sigmoid": _sigmoid, "tanh": np.tanh,
        "softrelu": lambda x: np.log1p(np.exp(x)), "softsign": lambda x: x / (1 + np.abs(x))}
TABLE["Activation"] = [ref([U(2, 3, lo=-2, hi=2)], (lambda f: lambda x, act_type: f(x))(f), {"act_type": a}, id=a)
                       for a, f in _ACT.items()]
_SELU_A, _SELU_L = 1.6732632423543772, 1.0507009873554805
TABLE["LeakyReLU"] = [
    ref([U(2, 3)], lambda x, act_type, slope: np.where(x > 0, x, 0.25 * x), {"act_type": "leaky", "slope": 0.25},
        id="leaky"),
    ref([U(2, 3)], lambda x, act_type, slope: np.where(x > 0, x, 0.5 * np.expm1(x)), {"act_type": "elu", "slope": 0.5},
        id="elu"),
    ref([U(2, 3, 2), U(3)], lambda x, g, act_type: np.where(x > 0, x, g.reshape(1, 3, 1) * x), {"act_type": "prelu"},
        id="prelu"),
    ref([U(2, 3)], lambda x, act_type: _SELU_L * np.where(x > 0, x, _SELU_A * np.expm1(x)), {"act_type": "selu"},
        id="selu"),
    ref([U(2, 3)], lambda x, act_type: 0.5 * x * (1 + _erf(x / np.sqrt(2))), {"act_type": "gelu"}, id="gelu"),
]
TABLE["FullyConnected"] = [
    ref([U(2, 3), U(4, 3), U(4)], lambda x, w, b, num_hidden: x @ w.T + b, {"num_hidden": 4}),
    ref([U(2, 3, 2), U(4, 6)], lambda x, w, num_hidden, no_bias: x.reshape(2, 6) @ w.T,
        {"num_hidden": 4, "no_bias": True}, id="flatten"),
    ref([U(2, 3, 2), U(4, 2), U(4)], lambda x, w, b, num_hidden, flatten: x @ w.T + b,
        {"num_hidden": 4, "flatten": False}, id="noflatten"),
]
TABLE["Convolution"] = [
    ref([U(1, 2, 4, 4), U(2, 2, 3, 3), U(2)], lambda x, w, b, kernel, num_filter, pad: _conv2d(x, w, b, pad=1),
        {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1)}),
    ref([U(1, 1, 5, 5), U(2, 1, 3, 3)], lambda x, w, kernel, num_filter, stride, no_bias: _conv2d(x, w, None, stride=2),
        {"kernel": (3, 3), "num_filter": 2, "stride": (2, 2), "no_bias": True}, id="stride"),
]
TABLE["Deconvolution"] = [
    ref([U(1, 2, 2, 3), U(2, 2, 2, 2), U(2)], lambda x, w, b, kernel, num_filter, stride, no_bias: _deconv2d(
        x, w, b, stride=2),
        {"kernel": (2, 2), "num_filter": 2, "stride": (2, 2), "no_bias": False}),
]
TABLE["Pooling"] = [
    ref([U(1, 2, 4, 4)], lambda x, kernel, stride, pool_type: _pool2d(x, 2, 2, np.max),
        {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, id="max"),
    ref([U(1, 2, 4, 4)], lambda x, kernel, stride, pool_type: _pool2d(x, 3, 1, np.mean),
        {"kernel": (3, 3), "stride": (1, 1), "pool_type": "avg"}, id="avg"),
    ref([U(1, 2, 4, 4)], lambda x, kernel, stride, pool_type: _pool2d(x, 2, 2, np.sum),
        {"kernel": (2, 2), "stride": (2, 2), "pool_type": "sum"}, id="sum"),
    ref([U(1, 2, 3, 3)], lambda x, kernel, global_pool, pool_type: x.mean(axis=(2, 3), keepdims=True),
        {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"}, id="global"),
]
TABLE["UpSampling"] = [
    ref([U(1, 2, 2, 3)], lambda x, scale, sample_type, num_args: x.repeat(2, axis=2).repeat(2, axis=3),
        {"scale": 2, "sample_type": "nearest", "num_args": 1}),
]
_BN_X, _BN_G, _BN_B = U(3, 2, 2), U(2, lo=0.5, hi=1.5), U(2)
_BN_MM, _BN_MV = U(2), U(2, lo=0.5, hi=1.5)
TABLE["BatchNorm"] = [
    # Inference: the moving statistics; fix_gamma=True (the default) ignores gamma.
    ref([_BN_X, _BN_G, _BN_B, _BN_MM, _BN_MV],
        lambda x, g, b, mm, mv: (x - mm.reshape(1, 2, 1)) / np.sqrt(mv.reshape(1, 2, 1) + 1e-3) + b.reshape(1, 2, 1),
        wrt=[0, 2], grad=False, id="inference"),
    ref([_BN_X, _BN_G, _BN_B, _BN_MM, _BN_MV],
        lambda x, g, b, mm, mv, fix_gamma: (x - mm.reshape(1, 2, 1)) / np.sqrt(mv.reshape(1, 2, 1) + 1e-3)
        * g.reshape(1, 2, 1) + b.reshape(1, 2, 1), {"fix_gamma": False}, grad=False, id="gamma"),
]

def _bn_train(x, g, b, mm, mv, fix_gamma, momentum):
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    y = (x - mean.reshape(1, 2, 1)) / np.sqrt(var.reshape(1, 2, 1) + 1e-3) * g.reshape(1, 2, 1) + b.reshape(1, 2, 1)
    return [y, momentum * mm + (1 - momentum) * mean, momentum * mv + (1 - momentum) * var]


TABLE["BatchNorm"].append(
    # Training: batch statistics, and the moving statistics updated in place.
    ref([_BN_X, _BN_G, _BN_B, _BN_MM, _BN_MV], _bn_train, {"fix_gamma": False, "momentum": 0.8}, wrt=[0, 1, 2],
        mutated={3: 1, 4: 2}, train=True, id="training"))
# MXNet's contrib.SyncBatchNorm on one device (ndev=1): BatchNorm over axis 1
TABLE["_contrib_SyncBatchNorm"] = [
    ref([_BN_X, _BN_G, _BN_B, _BN_MM, _BN_MV],
        lambda x, g, b, mm, mv, key: (x - mm.reshape(1, 2, 1)) / np.sqrt(mv.reshape(1, 2, 1) + 1e-3)
        + b.reshape(1, 2, 1), {"key": "sync_bn0"}, wrt=[0, 2], grad=False, id="inference"),
    ref([_BN_X, _BN_G, _BN_B, _BN_MM, _BN_MV],
        lambda x, g, b, mm, mv, fix_gamma, momentum, ndev: _bn_train(x, g, b, mm, mv, fix_gamma, momentum),
        {"fix_gamma": False, "momentum": 0.8, "ndev": 1}, wrt=[0, 1, 2], mutated={3: 1, 4: 2}, train=True,
        id="training"),
]
TABLE["LayerNorm"] = [
    ref([U(2, 3, 4), U(4, lo=0.5, hi=1.5), U(4)], lambda x, g, b: _norm_axes(x, -1, 1e-5) * g + b),
    ref([U(2, 3, 4), U(3, lo=0.5, hi=1.5), U(3)], lambda x, g, b, axis, eps: _norm_axes(x, 1, 1e-3)
        * g.reshape(3, 1) + b.reshape(3, 1), {"axis": 1, "eps": 1e-3}, id="axis1"),
]
TABLE["InstanceNorm"] = [
    ref([U(2, 3, 4), U(3, lo=0.5, hi=1.5), U(3)], lambda x, g, b: _norm_axes(x, 2, 1e-3) * g.reshape(1, 3, 1)
        + b.reshape(1, 3, 1)),
]
TABLE["GroupNorm"] = [
    ref([U(2, 4, 3), U(2, lo=0.5, hi=1.5), U(2)], lambda x, g, b, num_groups: (
        _norm_axes(x.reshape(2, 2, 6), 2, 1e-5) * g.reshape(1, 2, 1) + b.reshape(1, 2, 1)).reshape(2, 4, 3),
        {"num_groups": 2}),
]
TABLE["L2Normalization"] = [
    ref([U(2, 3, 2)], lambda x: x / np.sqrt((x ** 2).sum(axis=(1, 2), keepdims=True) + 1e-10), id="instance"),
    ref([U(2, 3, 2)], lambda x, mode: x / np.sqrt((x ** 2).sum(axis=1, keepdims=True) + 1e-10), {"mode": "channel"},
        id="channel"),
    ref([U(2, 3, 2)], lambda x, mode: x / np.sqrt((x ** 2).sum(axis=2, keepdims=True) + 1e-10), {"mode": "spatial"},
        id="spatial"),
]
TABLE["LRN"] = [ref([U(1, 4, 2, 2)], lambda x, nsize, alpha, beta, knorm: _lrn(x, 3, 0.5, 0.75, 2.0),
                    {"nsize": 3, "alpha": 0.5, "beta": 0.75, "knorm": 2.0})]
TABLE["softmax"] = [
    ref([U(2, 3)], lambda x: _softmax(x)),
    ref([U(2, 3)], lambda x, axis, temperature: _softmax(x, 0, 2.0), {"axis": 0, "temperature": 2.0}, id="axis0"),
    ref([U(2, 4), A([2, 3], np.int32)], lambda x, n, axis, use_length: np.where(
        np.arange(4) < n[:, None], _softmax(np.where(np.arange(4) < n[:, None], x, -np.inf)), 0),
        {"axis": -1, "use_length": True}, wrt=[0], id="length"),
]
TABLE["log_softmax"] = [ref([U(2, 3)], lambda x: np.log(_softmax(x)))]
TABLE["softmin"] = [ref([U(2, 3)], lambda x: _softmax(-x))]
TABLE["SoftmaxActivation"] = [
    ref([U(2, 3)], lambda x: _softmax(x), id="instance"),
    ref([U(2, 3, 2)], lambda x, mode: _softmax(x, axis=1), {"mode": "channel"}, id="channel"),
]
TABLE["softmax_cross_entropy"] = [
    ref([U(3, 4), A([1, 0, 3])], lambda x, y: np.array([-np.log(_softmax(x))[np.arange(3), y.astype(int)].sum()]),
        wrt=[0]),
]


# Loss heads: the forward is a plain function; the backward is the loss
# gradient, not the derivative of the forward, so it is checked by formula.
def _head_grad(name, ins, params):
    arrs = [nd(x) for x in ins]
    arrs[0].attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, name)(*arrs, **params)
    out.backward(mx.nd.array(np.full(out.shape, 7.0), dtype=out.dtype))  # head gradients are ignored
    return out.asnumpy(), arrs[0].grad.asnumpy()


def _regression_prop(name, fwd, grad):
    def check():
        x, y = U(3, 2), U(3, 2)
        out, g = _head_grad(name, [x, y], {"grad_scale": 2.0})
        assert_almost_equal(out, fwd(x.astype(np.float64)).astype(np.float32))
        # MXNet: grad = grad_scale / num_output * d(loss), num_output = label.size / batch.
        assert_almost_equal(g, (2.0 / 2 * grad(fwd(x.astype(np.float64)), y)).astype(np.float32))
    return prop(check, id="loss_gradient")


def _softmax_output_check():
    x, y = U(3, 4), A([1, 0, 3])
    out, g = _head_grad("SoftmaxOutput", [x, y], {"grad_scale": 0.5})
    p = _softmax(x.astype(np.float64))
    assert_almost_equal(out, p.astype(np.float32))
    assert_almost_equal(g, (0.5 * (p - _one_hot(y.astype(int), 4))).astype(np.float32))


def _make_loss_check(name, params, scale):
    def check():
        x = U(2, 3)
        out, g = _head_grad(name, [x], params)
        assert_almost_equal(out, x)
        assert_almost_equal(g, np.full((2, 3), scale, np.float32))
    return prop(check, id="loss_gradient")


def _block_grad_check():
    x = U(2, 3)
    out, g = _head_grad("BlockGrad", [x], {})
    assert_almost_equal(out, x)
    assert np.all(g == 0), "BlockGrad must stop the gradient"


TABLE.update({
    "LinearRegressionOutput": [_regression_prop("LinearRegressionOutput", lambda x: x, lambda o, y: o - y)],
    "LogisticRegressionOutput": [_regression_prop("LogisticRegressionOutput", _sigmoid, lambda o, y: o - y)],
    "MAERegressionOutput": [_regression_prop("MAERegressionOutput", lambda x: x, lambda o, y: np.sign(o - y))],
    "SoftmaxOutput": [prop(_softmax_output_check, id="loss_gradient")],
    "MakeLoss": [_make_loss_check("MakeLoss", {"grad_scale": 3.0}, 3.0)],
    "make_loss": [_make_loss_check("make_loss", {}, 1.0)],
    "BlockGrad": [prop(_block_grad_check, id="zero_gradient")],
})


# Optimizer updates (MXNet 1.9.1 rules); they return the new weight and
# update their state inputs in place.
def _clip(g, c):
    return g if c is None or c < 0 else np.clip(g, -c, c)


def _sgd(w, g, lr, wd, rescale_grad=1.0, clip_gradient=-1.0):
    return w - lr * (_clip(rescale_grad * g, clip_gradient) + wd * w)


def _sgd_mom(w, g, m, lr, momentum, wd, rescale_grad=1.0, clip_gradient=-1.0):
    m = momentum * m - lr * (_clip(rescale_grad * g, clip_gradient) + wd * w)
    return [w + m, m]


def _nag(w, g, m, lr, momentum, wd):
    # MXNet 1.9.1 (NAGMomKernel): mom = momentum*mom - lr*g; w += momentum*mom - lr*g, g including wd*w.
    g = g + wd * w
    m = momentum * m - lr * g
    return [w + momentum * m - lr * g, m]


def _adam(w, g, m, v, lr, beta1, beta2, epsilon, wd):
    g = g + wd * w
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return [w - lr * m / (np.sqrt(v) + epsilon), m, v]


def _rmsprop(w, g, n, lr, gamma1, epsilon, wd):
    g = g + wd * w
    n = (1 - gamma1) * g * g + gamma1 * n
    return [w - lr * g / np.sqrt(n + epsilon), n]


def _rmspropalex(w, g, n, gg, d, lr, gamma1, gamma2, epsilon, wd):
    g = g + wd * w
    n = (1 - gamma1) * g * g + gamma1 * n
    gg = (1 - gamma1) * g + gamma1 * gg
    d = gamma2 * d - lr * g / np.sqrt(n - gg * gg + epsilon)
    return [w + d, n, gg, d]


def _adagrad(w, g, h, lr, epsilon, wd):
    h = h + g * g
    return [w - lr * (g / np.sqrt(h + epsilon) + wd * w), h]


def _ftrl(w, g, z, n, lr, lamda1, beta, wd):
    z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    n = n + g * g
    w = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)
    return [w, z, n]


def _signsgd(w, g, lr, wd):
    return (1 - lr * wd) * w - lr * np.sign(g)


def _signum(w, g, m, lr, momentum, wd, wd_lh=0.0):
    m = momentum * m - (1 - momentum) * (g + wd * w)
    return [(1 - lr * wd_lh) * w + lr * np.sign(m), m]


_W, _G = U(2, 3), U(2, 3)
_S1, _S2, _S3 = U(2, 3), U(2, 3, lo=0.1, hi=1), U(2, 3, lo=0.0, hi=0.2)
TABLE.update({
    "sgd_update": [ref([_W, _G], _sgd, {"lr": 0.1, "wd": 0.01}, grad=False),
                   ref([_W, _G], _sgd, {"lr": 0.1, "wd": 0.0, "rescale_grad": 2.0, "clip_gradient": 0.5},
                       grad=False, id="clip")],
    "sgd_mom_update": [ref([_W, _G, _S1], _sgd_mom, {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, grad=False,
                           mutated={2: 1})],
    "nag_mom_update": [ref([_W, _G, _S1], _nag, {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, grad=False,
                           mutated={2: 1})],
    "adam_update": [ref([_W, _G, _S1, _S2], _adam, {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "epsilon": 1e-8,
                                                    "wd": 0.01}, grad=False, mutated={2: 1, 3: 2})],
    "rmsprop_update": [ref([_W, _G, _S2], _rmsprop, {"lr": 0.1, "gamma1": 0.9, "epsilon": 1e-8, "wd": 0.01},
                           grad=False, mutated={2: 1})],
    "rmspropalex_update": [ref([_W, _G, _S2 + 0.5, _S3, _S1], _rmspropalex,
                               {"lr": 0.1, "gamma1": 0.9, "gamma2": 0.8, "epsilon": 1e-8, "wd": 0.01},
                               grad=False, mutated={2: 1, 3: 2, 4: 3})],
    # MXNet 1.9.1's adagrad_update rejects wd != 0 ("sparse adagrad_update does not support wd").
    "adagrad_update": [ref([_W, _G, _S2], _adagrad, {"lr": 0.1, "epsilon": 1e-7, "wd": 0.0}, grad=False,
                           mutated={2: 1}),
                       prop(lambda: _raises(lambda: call("adagrad_update", [_W, _G, _S2.copy()],
                                                         {"lr": 0.1, "wd": 0.01}), "wd"),
                            id="wd_rejected")],
    "ftrl_update": [ref([_W, _G, _S1, _S2], _ftrl, {"lr": 0.1, "lamda1": 0.01, "beta": 1.0, "wd": 0.01},
                        grad=False, mutated={2: 1, 3: 2})],
    "signsgd_update": [ref([_W, _G], _signsgd, {"lr": 0.1, "wd": 0.01}, grad=False)],
    "signum_update": [ref([_W, _G, _S1], _signum, {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.01},
                          grad=False, mutated={2: 1})],
    "mp_sgd_update": [ref([_W.astype(np.float16), _G.astype(np.float16), _W],
                          lambda w, g, w32, lr, wd: [_sgd(w32, g, lr, wd)], {"lr": 0.1, "wd": 0.01}, grad=False,
                          odt=np.float16, mutated={2: 0}, rtol=1e-2, atol=1e-2)],
    "mp_sgd_mom_update": [ref([_W.astype(np.float16), _G.astype(np.float16), _S1, _W],
                              lambda w, g, m, w32, lr, momentum, wd: [_sgd_mom(w32, g, m, lr, momentum, wd)[0],
                                                                      _sgd_mom(w32, g, m, lr, momentum, wd)[1]],
                              {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, grad=False, odt=np.float16,
                              mutated={2: 1, 3: 0}, rtol=1e-2, atol=1e-2)],
})


# Random operators and Dropout: distribution properties and seeding.
def _seeded(fn, seed=7):
    mx.random.seed(seed)
    return fn().asnumpy()


def _random_prop(name, params, check):
    def run():
        a = _seeded(lambda: getattr(mx.nd, name)(**params))
        b = _seeded(lambda: getattr(mx.nd, name)(**params))
        assert a.shape == tuple(params["shape"]), (a.shape, params["shape"])
        assert np.array_equal(a, b), f"{name}: the same seed must give the same values"
        c = _seeded(lambda: getattr(mx.nd, name)(**params), seed=8)
        assert not np.array_equal(a, c), f"{name}: different seeds gave the same values"
        check(a)
    return prop(run, id="distribution")


def _check_uniform(a):
    assert a.dtype == np.float32
    assert a.min() >= -2 and a.max() < 3
    assert abs(a.mean() - 0.5) < 0.15 and abs(a.var() - 25 / 12) < 0.3


def _check_normal(a):
    assert a.dtype == np.float32
    assert abs(a.mean() - 1.0) < 0.15 and abs(a.std() - 2.0) < 0.15


def _check_randint(a):
    assert a.dtype == np.int32
    assert a.min() >= -3 and a.max() < 4 and set(np.unique(a)) == set(range(-3, 4))


def _shuffle_check():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    a = _seeded(lambda: mx.nd.shuffle(nd(x)))
    b = _seeded(lambda: mx.nd.shuffle(nd(x)))
    assert np.array_equal(a, b), "shuffle: the same seed must give the same order"
    assert a.dtype == x.dtype and a.shape == x.shape
    # Rows move whole; the result is a permutation of the rows.
    assert sorted(map(tuple, a)) == sorted(map(tuple, x))
    assert not all(np.array_equal(_seeded(lambda: mx.nd.shuffle(nd(x)), s), x) for s in range(5))


def _dropout_check():
    x = U(40, 50, lo=1, hi=2)
    # Outside training Dropout is the identity.
    assert_almost_equal(call("Dropout", [x], {"p": 0.3}), x)

    def train():
        a = nd(x)
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Dropout(a, p=0.3)
        y.backward()
        return y.asnumpy(), a.grad.asnumpy()
    mx.random.seed(3)
    y1, g1 = train()
    mx.random.seed(3)
    y2, _ = train()
    assert np.array_equal(y1, y2), "Dropout: the same seed must give the same mask"
    kept = y1 != 0
    assert_almost_equal(y1[kept], x[kept] / 0.7)
    assert abs(kept.mean() - 0.7) < 0.05
    # The gradient uses the same mask and scale.
    assert_almost_equal(g1, kept / np.float32(0.7))


TABLE.update({
    "_random_uniform": [_random_prop("_random_uniform", {"low": -2.0, "high": 3.0, "shape": (50, 40)},
                                     _check_uniform)],
    "_random_normal": [_random_prop("_random_normal", {"loc": 1.0, "scale": 2.0, "shape": (50, 40)}, _check_normal)],
    "_random_randint": [_random_prop("_random_randint", {"low": -3, "high": 4, "shape": (20, 20)}, _check_randint)],
    "_shuffle": [prop(_shuffle_check, id="permutation")],
    "Dropout": [ref([U(2, 3)], lambda x, p: x, {"p": 0.5}, grad=False, id="inference"),
                prop(_dropout_check, id="training")],
})

# Internal operators: the public operator whose gradient dispatches them.
TABLE.update({
    "_backward_Activation": [via("Activation")],
    "_backward_Convolution": [via("Convolution")],
    "_backward_Crop": [via("Crop")],
    "_backward_Deconvolution": [via("Deconvolution")],
    "_backward_Embedding": [via("Embedding")],
    "_backward_LeakyReLU": [via("LeakyReLU")],
    "_backward_Pad": [via("Pad")],
    "_backward_Pooling": [via("Pooling")],
    "_backward_UpSampling": [via("UpSampling")],
    "_backward_softmax": [via("softmax")],
    "_backward_tanh": [via("tanh")],
    "_backward_sigmoid": [via("sigmoid")],
    "_backward_relu": [via("relu")],
    "_batch_norm_grad": [via("BatchNorm")],
    "_cast_like": [via("Cast")],
    "_diag_scatter": [via("diag")],
    "_dot_flat_out": [via("dot")],
    "_dropout_grad": [via("Dropout")],
    "_scatter_add_along_axis": [via("sort")],
    "_l2_normalization_grad": [via("L2Normalization")],
    "_lrn_grad": [via("LRN")],
    "_make_loss_grad": [via("MakeLoss")],
    "_norm_grad": [via("LayerNorm")],
    "_pick_grad": [via("pick")],
    "_reduce_grad_broadcast": [via("sum")],
    "_reduce_to_like": [via("broadcast_add")],
    "_regression_output_grad": [via("LinearRegressionOutput")],
    "_repeat_sum": [via("repeat")],
    "_sequence_last_grad": [via("SequenceLast")],
    "_slice_scatter": [via("slice")],
    "_backward_gather_nd_like": [via("gather_nd")],
    "_softmax_cross_entropy_grad": [via("softmax_cross_entropy")],
    "_softmax_output_grad": [via("SoftmaxOutput")],
    "_split_like": [via("Concat")],
    "_take_grad": [via("take")],
    "_tile_sum": [via("tile")],
})


# -- the tests ------------------------------------------------------------------

def _canonical_names():
    return {_native.get_op(n).name for n in _native.op_names()}


# Remaining neural-network operators (feat-nn): im2col / col2im, spatial
# transformer family, ROIPooling, CTCLoss, Correlation, SVMOutput.
def _im2col(x, kernel, stride=None, dilate=None, pad=None):
    nd_ = len(kernel)
    stride, dilate, pad = stride or (1,) * nd_, dilate or (1,) * nd_, pad or (0,) * nd_
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    outs = [(xp.shape[2 + d] - dilate[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(nd_)]
    cols = []
    for off in np.ndindex(*kernel):
        sl = tuple(slice(off[d] * dilate[d], off[d] * dilate[d] + (outs[d] - 1) * stride[d] + 1, stride[d])
                   for d in range(nd_))
        cols.append(xp[(slice(None), slice(None)) + sl].reshape(x.shape[0], x.shape[1], -1))
    # rows ordered (channel, kernel offset)
    return np.stack(cols, axis=2).reshape(x.shape[0], -1, int(np.prod(outs)))


def _col2im(c, output_size, kernel, stride=None, dilate=None, pad=None):
    """The adjoint of _im2col, by its matrix: sum of columns into the image."""
    kk = int(np.prod(kernel))
    shape = (c.shape[0], c.shape[1] // kk) + tuple(output_size)
    out = np.zeros(shape)
    base = np.arange(int(np.prod(shape[1:]))).reshape((1,) + shape[1:]).astype(np.float64) + 1
    idx = _im2col(base, kernel, stride, dilate, pad)[0].astype(int) - 1  # -1 marks padding
    for n in range(shape[0]):
        flat = out[n].reshape(-1)
        ok = idx >= 0
        np.add.at(flat, idx[ok], c[n][ok])
    return out


TABLE.update({
    "im2col": [
        ref([U(2, 3, 5, 6)], lambda x, **k: _im2col(x, **k),
            {"kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}, id="2d"),
        ref([U(2, 2, 7)], lambda x, **k: _im2col(x, **k), {"kernel": (3,), "pad": (1,)}, id="1d"),
        ref([U(1, 2, 4, 3, 5)], lambda x, **k: _im2col(x, **k), {"kernel": (2, 2, 3), "stride": (1, 2, 1)},
            id="3d"),
    ],
    "col2im": [
        ref([U(2, 18, 12)], lambda c, **k: _col2im(c, **k),
            {"output_size": (5, 6), "kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}, id="2d"),
        ref([U(1, 6, 5)], lambda c, **k: _col2im(c, **k), {"output_size": (7,), "kernel": (3,), "stride": (1,)},
            id="1d"),
    ],
    "_backward_im2col": [via("im2col")],
})


def _affine_grid(theta, target_shape):
    h, w = target_shape
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    dst = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])  # (3, h*w)
    return (theta.reshape(-1, 2, 3) @ dst).reshape(-1, 2, h, w)


def _warp_grid(flow):
    _, _, h, w = flow.shape
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([(flow[:, 0] + xs) / ((w - 1) / 2) - 1, (flow[:, 1] + ys) / ((h - 1) / 2) - 1], axis=1)


def _bilinear_sample(x, grid):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[2:])
    xr = (grid[:, 0] + 1) * (w - 1) / 2
    yr = (grid[:, 1] + 1) * (h - 1) / 2
    x0, y0 = np.floor(xr).astype(int), np.floor(yr).astype(int)
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            wt = (1 - np.abs(xr - xi)) * (1 - np.abs(yr - yi))
            ok = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)  # outside: contributes zero
            for b in range(n):
                v = x[b][:, np.clip(yi[b], 0, h - 1), np.clip(xi[b], 0, w - 1)]
                out[b] += np.where(ok[b], wt[b] * v, 0)
    return out


_THETA = A([[0.83, 0.17, 0.07, -0.11, 1.07, -0.03], [1.21, -0.27, 0.13, 0.23, 0.74, 0.09]])

TABLE.update({
    "GridGenerator": [
        ref([_THETA], lambda t, **k: _affine_grid(t, (3, 4)), {"transform_type": "affine", "target_shape": (3, 4)},
            id="affine"),
        ref([U(2, 2, 3, 4)], lambda f, **k: _warp_grid(f), {"transform_type": "warp"}, id="warp"),
    ],
    # grid points in [-1.2, 1.2): some corners fall outside the image
    "BilinearSampler": [ref([U(2, 3, 4, 5), U(2, 2, 3, 4, lo=-1.2, hi=1.2)], lambda x, g: _bilinear_sample(x, g))],
    "SpatialTransformer": [
        ref([U(2, 2, 5, 6), _THETA], lambda x, t, **k: _bilinear_sample(x, _affine_grid(t, (3, 4))),
            {"target_shape": (3, 4), "transform_type": "affine", "sampler_type": "bilinear"}),
    ],
    "_backward_GridGenerator": [via("GridGenerator")],
    "_backward_BilinearSampler": [via("BilinearSampler")],
})


def _roi_pool(x, rois, pooled_size, spatial_scale):
    n, c, h, w = x.shape
    ph, pw = pooled_size
    out = np.zeros((len(rois), c, ph, pw))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        sw, sh, ew, eh = [int(_round_away(v * spatial_scale)) for v in roi[1:]]
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        for i in range(ph):
            hs = min(max(int(np.floor(i * rh / ph)) + sh, 0), h)
            he = min(max(int(np.ceil((i + 1) * rh / ph)) + sh, 0), h)
            for j in range(pw):
                ws = min(max(int(np.floor(j * rw / pw)) + sw, 0), w)
                we = min(max(int(np.ceil((j + 1) * rw / pw)) + sw, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


TABLE.update({
    # rois: inside, partly outside (empty bins give 0), rounding of halves, one pixel, fully outside
    "ROIPooling": [
        ref([U(2, 3, 6, 5), A([[0, 0, 0, 4, 4], [1, -3, -2, 1.5, 2.5], [1, 2.5, 0.5, 2.5, 0.5],
                               [0, 1.2, 2.7, 13.1, 16.9], [0, 7, 9, 12, 12]])],
            lambda x, r, **k: _roi_pool(x, r, **k), {"pooled_size": (3, 2), "spatial_scale": 1.0}, wrt=[0],
            id="scale1"),
        ref([U(1, 2, 7, 8), A([[0, 1, 1, 9, 13], [0, 3, 0, 15, 7]])],
            lambda x, r, **k: _roi_pool(x, r, **k), {"pooled_size": (2, 3), "spatial_scale": 0.5}, wrt=[0],
            id="scale_half"),
    ],
    "_backward_ROIPooling": [via("ROIPooling")],
})


def _ctc_brute(x, label, data_lengths=None, label_lengths=None, use_data_lengths=False, use_label_lengths=False,
               blank_label="first"):
    """CTC loss by enumerating every alignment (tiny sizes only)."""
    import itertools
    t_max, n, a = x.shape
    blank, pad = (0, 0) if blank_label == "first" else (a - 1, -1)
    out = np.zeros(n)
    for b in range(n):
        row = [int(v) for v in label[b]]
        ln = int(label_lengths[b]) if use_label_lengths else (row.index(pad) if pad in row else len(row))
        target = row[:ln]
        tl = int(data_lengths[b]) if use_data_lengths else t_max
        logp = x[:tl, b] - np.log(np.exp(x[:tl, b]).sum(axis=1, keepdims=True))
        total = 0.0
        for path in itertools.product(range(a), repeat=tl):
            collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
            if collapsed == target:
                total += np.exp(sum(logp[t, k] for t, k in enumerate(path)))
        out[b] = -np.log(total) if total > 0 else 0.0  # MXNet: 0 for a label that cannot fit
    return out


TABLE.update({
    "CTCLoss": [
        ref([U(4, 2, 3, lo=-2, hi=2), A([[1, 2], [2, 0]])], _ctc_brute, wrt=[0], id="blank_first"),
        ref([U(4, 2, 3, lo=-2, hi=2), A([[0, 1], [1, -1]])], _ctc_brute, {"blank_label": "last"}, wrt=[0],
            id="blank_last"),
        ref([U(4, 3, 3, lo=-2, hi=2), A([[1, 1, 2], [2, 1, 0], [1, 2, 2]]), A([4, 3, 2]), A([2, 1, 2])],
            _ctc_brute, {"use_data_lengths": True, "use_label_lengths": True}, wrt=[0], id="lengths"),
        # [1, 1] needs 3 steps (a blank between the repeats): 0 loss and 0 gradient with 2
        ref([U(4, 2, 3), A([[1, 1], [1, 0]]), A([2, 4])], _ctc_brute, {"use_data_lengths": True}, wrt=[0],
            id="infeasible"),
    ],
    "_backward_CTCLoss": [via("CTCLoss")],
})


def _correlation(a, b, kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0, is_multiply=True):
    n, c, h, w = a.shape
    k, md = kernel_size, max_displacement
    ap, bp = (np.pad(v, ((0, 0), (0, 0), (pad_size, pad_size), (pad_size, pad_size))) for v in (a, b))
    border = md + (k - 1) // 2
    th = -(-(h + 2 * pad_size - 2 * border) // stride1)
    tw = -(-(w + 2 * pad_size - 2 * border) // stride1)
    r = md // stride2
    out = np.zeros((n, (2 * r + 1) ** 2, th, tw))
    for q in range((2 * r + 1) ** 2):
        dx, dy = (q % (2 * r + 1) - r) * stride2, (q // (2 * r + 1) - r) * stride2
        for i in range(th):
            for j in range(tw):
                y1, x1 = i * stride1 + md, j * stride1 + md
                p1 = ap[:, :, y1:y1 + k, x1:x1 + k]
                p2 = bp[:, :, y1 + dy:y1 + dy + k, x1 + dx:x1 + dx + k]
                v = p1 * p2 if is_multiply else np.abs(p1 - p2)
                out[:, q, i, j] = v.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


TABLE.update({
    "Correlation": [
        ref([U(2, 2, 5, 6), U(2, 2, 5, 6)], _correlation, id="default"),
        ref([U(1, 3, 7, 8), U(1, 3, 7, 8)], _correlation,
            {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "stride2": 1, "pad_size": 2}, id="kernel3"),
        ref([U(1, 2, 6, 7), U(1, 2, 6, 7)], _correlation,
            {"kernel_size": 1, "max_displacement": 3, "stride1": 1, "stride2": 2, "pad_size": 1, "is_multiply": False},
            id="subtract"),
    ],
    "_backward_Correlation": [via("Correlation")],
})


def _svm_grad(x, label, margin=1.0, regularization_coefficient=1.0, use_linear=False):
    onehot = np.eye(x.shape[-1])[label.astype(int)]
    if use_linear:
        g = np.where(onehot == 1, -1.0 * (margin > x), 1.0 * (margin > -x))
    else:
        g = np.where(onehot == 1, -2 * (margin - x) * (margin > x), 2 * (margin + x) * (margin > -x))
    return regularization_coefficient * g


def _svm_check(params):
    def check():
        x, y = U(3, 4, lo=-2, hi=2), A([1, 0, 3])
        out, g = _head_grad("SVMOutput", [x, y], params)  # the head gradient (7) is ignored
        assert_almost_equal(out, x)
        assert_almost_equal(g, _svm_grad(x.astype(np.float64), y, **params).astype(np.float32))
    return prop(check, id="hinge_gradient_" + ("_".join(params) or "default"))


def _kl_sparse_check():
    # MXNet 1.9.1 (through its executor: its mx.nd function cannot pass the auxiliary state)
    x, avg = nd(A([[0.2, 0.5, 0.9], [0.4, 0.1, 0.7]])), nd(A([0.1, 0.1, 0.1]))
    for want_avg, want_g in (([0.12, 0.12, 0.17], [2.0001893, 2.0001893, 2.0004961]),
                             ([0.138, 0.138, 0.233], [2.0003195, 2.0003195, 2.000744])):
        x.attach_grad()
        with mx.autograd.record():
            y = mx.nd.IdentityAttachKLSparseReg(x, avg)
        assert_almost_equal(avg, A([0.1, 0.1, 0.1]) if want_avg[0] == 0.12 else A([0.12, 0.12, 0.17]))
        y.backward(mx.nd.ones((2, 3)) * 2)
        assert_almost_equal(avg, A(want_avg))
        assert_almost_equal(x.grad, A([want_g, want_g]))


TABLE.update({
    "SVMOutput": [
        ref([U(3, 4), A([1, 0, 3])], lambda x, y: x, grad=False, id="identity"),
        _svm_check({}),
        _svm_check({"use_linear": True}),
        _svm_check({"margin": 0.5, "regularization_coefficient": 0.3}),
    ],
    "IdentityAttachKLSparseReg": [
        ref([U(3, 4, lo=0.1, hi=0.9), A([0.2, 0.3, 0.4, 0.5])], lambda x, m, **k: x, {"penalty": 0.1}, grad=False,
            id="identity"),
        prop(_kl_sparse_check, id="moving_average_and_penalty"),
    ],
    "_backward_SVMOutput": [via("SVMOutput")],
    "_backward_IdentityAttachKLSparseReg": [via("IdentityAttachKLSparseReg")],
})


# Optimizer updates, part 2 (feat-optim): MXNet 1.9.1's multi-tensor SGD
# updates (tuples or preloaded arrays of learning rates), ftml_update,
# mp_nag_mom_update, LAMB's two phases and multi_lars. Parameters are exact
# in float32 (MXNet holds them as float32). Values computed with MXNet itself
# are in tests/python/test_optim.py.
def _msgd_ref(mom, mp, preloaded):
    s = 2 + mom + mp

    def fn(*ins, num_weights, lrs=None, wds=None, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0):
        if preloaded:
            lrs, wds = ins[-2], ins[-1]
        outs, states = [], []
        for k in range(num_weights):
            grp = ins[k * s:(k + 1) * s]
            w = grp[s - 1] if mp else grp[0]
            m = grp[2] if mom else 0.0
            m = momentum * m - lrs[k] * wds[k] * w - lrs[k] * _clip(rescale_grad * grp[1], clip_gradient)
            outs.append(w + m)
            states += ([m] if mom else []) + ([w + m] if mp else [])
        return outs + states
    return fn


def _msgd_case(mom, mp, preloaded, params, id=None):
    """Three tensors of different shapes; states checked through `mutated`."""
    s, nw = 2 + mom + mp, 3
    ins = []
    for shape in [(2, 3), (4,), (1, 2, 2)]:
        w, g = U(*shape), U(*shape)
        ins += [w.astype(np.float16), g.astype(np.float16)] if mp else [w, g]
        ins += ([U(*shape)] if mom else []) + ([w] if mp else [])
    params = dict(params, num_weights=nw)
    if preloaded:
        ins += [A([0.125, 0.25, 0.5]), A([0.0625, 0.03125, 0.0])]
    else:
        params.update(lrs=(0.125, 0.25, 0.5), wds=(0.0625, 0.03125, 0.0))
    mutated = {k * s + j: nw + k * (s - 2) + (j - 2) for k in range(nw) for j in range(2, s)}
    return ref(ins, _msgd_ref(mom, mp, preloaded), params, grad=False, mutated=mutated,
               odt=np.float16 if mp else None, id=id)


def _msgd_cases(mom, mp, preloaded):
    base = {"momentum": 0.75} if mom else {}
    return [_msgd_case(mom, mp, preloaded, base),
            _msgd_case(mom, mp, preloaded, dict(base, rescale_grad=2.0, clip_gradient=0.75), id="clip")]


def _ftml(w, g, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_grad=-1.0):
    g = _clip(rescale_grad * g + wd * w, clip_grad)
    v = beta2 * v + (1 - beta2) * g * g
    dt = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z = beta1 * z + (1 - beta1) * g - (dt - beta1 * d) * w
    return [-z / dt, dt, v, z]


def _mp_nag(w, g, m, w32, lr, momentum, wd, rescale_grad=1.0, clip_gradient=-1.0):
    # MXNet 1.9.1 (MP_NAGMomKernel) decays the momentum with the updated weight32.
    g = _clip(rescale_grad * g, clip_gradient)
    m = momentum * m
    w = w32 - m + (momentum + 1) * (m - lr * (g + wd * w32))
    return [w, m - lr * (g + wd * w), w]


def _lamb1(w, g, mean, var, t, wd, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True, rescale_grad=1.0,
           clip_gradient=-1.0, w32=None):
    g = _clip(rescale_grad * g, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * g
    var = beta2 * var + (1 - beta2) * g * g
    m, v = (mean / (1 - beta1 ** t), var / (1 - beta2 ** t)) if bias_correction else (mean, var)
    return [m / (np.sqrt(v) + epsilon) + wd * (w if w32 is None else w32), mean, var]


def _lamb2(w, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0):
    r1, r2 = r1.item(), r2.item()
    r1 = max(r1, lower_bound) if lower_bound >= 0 else r1
    r1 = min(r1, upper_bound) if upper_bound >= 0 else r1
    return w - (lr if r1 == 0 or r2 == 0 else lr * r1 / r2) * g


def _lars(lrs, ws, gs, wds, eta, eps, rescale_grad=1.0):
    w, g = np.sqrt(ws), np.sqrt(gs) * rescale_grad
    return np.where((w > 0) & (gs > 0), lrs * eta * w / (g + wds * w + eps), lrs)


_LAMB_P = {"beta1": 0.5, "beta2": 0.75, "epsilon": 2.0 ** -20, "t": 2, "wd": 0.0625}
_W16, _G16 = _W.astype(np.float16), _G.astype(np.float16)
TABLE.update({
    "multi_sgd_update": _msgd_cases(False, False, False),
    "multi_sgd_mom_update": _msgd_cases(True, False, False),
    "multi_mp_sgd_update": _msgd_cases(False, True, False),
    "multi_mp_sgd_mom_update": _msgd_cases(True, True, False),
    "preloaded_multi_sgd_update": _msgd_cases(False, False, True),
    "preloaded_multi_sgd_mom_update": _msgd_cases(True, False, True),
    "preloaded_multi_mp_sgd_update": _msgd_cases(False, True, True),
    "preloaded_multi_mp_sgd_mom_update": _msgd_cases(True, True, True),
    "ftml_update": [
        ref([_W, _G, _S2 + 0.5, _S2, _S1], _ftml, {"lr": 0.125, "t": 2, "beta1": 0.5, "beta2": 0.75}, grad=False,
            mutated={2: 1, 3: 2, 4: 3}),
        ref([_W, _G, _S2 + 0.5, _S2, _S1], _ftml,
            {"lr": 0.125, "t": 3, "wd": 0.0625, "rescale_grad": 2.0, "clip_grad": 0.75, "epsilon": 1e-3},
            grad=False, mutated={2: 1, 3: 2, 4: 3}, id="clip")],
    "mp_nag_mom_update": [
        ref([_W16, _G16, _S1, _W], _mp_nag, {"lr": 0.125, "momentum": 0.75, "wd": 0.0625}, grad=False,
            odt=np.float16, mutated={2: 1, 3: 2}),
        ref([_W16, _G16, _S1, _W], _mp_nag, {"lr": 0.125, "momentum": 0.75, "wd": 0.0625, "rescale_grad": 2.0,
                                             "clip_gradient": 0.75}, grad=False, odt=np.float16,
            mutated={2: 1, 3: 2}, id="clip")],
    "lamb_update_phase1": [
        ref([_W, _G, _S1, _S2], _lamb1, _LAMB_P, grad=False, mutated={2: 1, 3: 2}),
        ref([_W, _G, _S1, _S2], _lamb1, dict(_LAMB_P, bias_correction=False, rescale_grad=2.0, clip_gradient=0.75),
            grad=False, mutated={2: 1, 3: 2}, id="no_bias_correction_clip")],
    "mp_lamb_update_phase1": [
        ref([_W16, _G16, _S1, _S2, _W], lambda w, g, m, v, w32, **p: _lamb1(w, g, m, v, w32=w32, **p), _LAMB_P,
            grad=False, odt=np.float32, mutated={2: 1, 3: 2})],
    "lamb_update_phase2": [
        ref([_W, _G, A([2.0]), A([4.0])], _lamb2, {"lr": 0.125}, grad=False),
        ref([_W, _G, A([2.0]), A([4.0])], _lamb2, {"lr": 0.125, "lower_bound": 3.0}, grad=False, id="lower_bound"),
        ref([_W, _G, A([2.0]), A([4.0])], _lamb2, {"lr": 0.125, "upper_bound": 1.0}, grad=False, id="upper_bound"),
        ref([_W, _G, A([0.0]), A([4.0])], _lamb2, {"lr": 0.125}, grad=False, id="r1_zero")],
    # weight32 is only read (MXNet 1.9.1's kernel does not write it back); test_optim.py checks it stays.
    "mp_lamb_update_phase2": [
        ref([_W16, _G, A([2.0]), A([4.0]), _W], lambda w, g, r1, r2, w32, **p: _lamb2(w32, g, r1, r2, **p),
            {"lr": 0.125, "lower_bound": 0.5, "upper_bound": 3.0}, grad=False, odt=np.float16)],
    "multi_lars": [
        ref([A([0.1, 0.2, 0.3, 0.4, 0.5]), A([4.0, 9.0, 0.0, 1.0, 16.0]), A([1.0, 4.0, 1.0, 0.0, 0.25]),
             A([0.01, 0.0, 0.1, 0.2, 0.5])], _lars, {"eta": 0.5, "eps": 0.125, "rescale_grad": 2.0}, grad=False)],
    # no gradient in MXNet 1.9.1 (backward raises)
    "multi_sum_sq": [
        ref([U(2, 3), U(4), U(1, 2, 2)], lambda *xs, num_arrays: np.array([np.sum(x * x) for x in xs]),
            {"num_arrays": 3}, grad=False),
        ref([U(5, dtype=np.float16), U(3, dtype=np.float16)], lambda *xs, num_arrays: np.array([np.sum(x * x) for x in xs]),
            {"num_arrays": 2}, grad=False, odt=np.float32, id="float16")],
})


# -- misc tensor operators: gamma, gammaln, cumsum, histogram, khatri_rao, the legacy
# batch_take / fill_element_0index / onehot_encode, the AMP helpers ---------------------

def _misc_kr(*ms):
    out = ms[0]
    for m in ms[1:]:
        out = np.einsum("ik,jk->ijk", out, m).reshape(-1, m.shape[1])
    return out


def _misc_batch_take(a, idx):
    m = a.shape[-1]
    rows = a.reshape(-1, m)
    return rows[np.arange(rows.shape[0]), np.clip(idx.ravel(), 0, m - 1)].reshape(idx.shape)


def _misc_fill(lhs, mhs, rhs):
    y = lhs.copy()
    for i, (v, j) in enumerate(zip(mhs, np.trunc(rhs))):
        if 0 <= j < lhs.shape[1]:
            y[i, int(j)] = v
    return y


def _misc_onehot(idx, like):
    y = np.zeros_like(like)
    for i, j in enumerate(np.trunc(idx)):
        if 0 <= j < y.shape[1]:
            y[i, int(j)] = 1
    return y


def _misc_reset_check():
    a, b = mx.nd.array(U(3, 4)), mx.nd.array(U(5), dtype="float64")
    assert mx.nd.reset_arrays(a, b, num_arrays=2) == []
    assert (a.asnumpy() == 0).all() and (b.asnumpy() == 0).all()
    _raises(lambda: mx.nd.reset_arrays(mx.nd.ones((2,), dtype="int32"), num_arrays=1), "floating point")


_misc_gamma = np.vectorize(math.gamma)
_misc_gammaln = np.vectorize(math.lgamma)
_misc_data = U(40, lo=-1.0, hi=2.0)

TABLE.update({
    "gamma": [ref([U(3, 4, lo=0.2, hi=4.0)], _misc_gamma),
              ref([A([-2.5, -1.3, -0.7, -0.3, 0.4, 5.5])], _misc_gamma, id="negative")],
    "gammaln": [ref([U(3, 4, lo=0.2, hi=6.0)], _misc_gammaln),
                ref([A([-2.5, -1.3, -0.7, -0.3, 0.4, 30.5])], _misc_gammaln, id="negative")],
    "_backward_gamma": [via("gamma")],
    "_backward_gammaln": [via("gammaln")],
    "cumsum": [ref([U(2, 3, 4)], lambda a: np.cumsum(a), id="flat"),
               ref([U(2, 3, 4)], lambda a, axis: np.cumsum(a, axis=axis), {"axis": 1}, id="axis1"),
               ref([U(2, 3, 4)], lambda a, axis: np.cumsum(a, axis=axis), {"axis": -1}, id="axis-1"),
               ref([U(3, 4)], lambda a, axis, dtype: np.cumsum(a, axis=axis), {"axis": 0, "dtype": "float64"},
                   odt=np.float64, id="dtype")],
    "_backward_np_cumsum": [via("cumsum")],
    "_histogram": [ref([_misc_data], lambda d, bin_cnt, range: list(np.histogram(d, bin_cnt, range)),
                       {"bin_cnt": 6, "range": (-0.5, 1.5)}, grad=False, odt=[np.int64, np.float32], id="uniform"),
                   ref([_misc_data, A([-1.0, -0.2, 0.1, 0.9, 2.0])], lambda d, b: list(np.histogram(d, b)),
                       grad=False, odt=[np.int64, np.float32], id="edges")],
    "khatri_rao": [ref([U(2, 3), U(4, 3)], _misc_kr),
                   ref([U(2, 2), U(3, 2), U(2, 2)], _misc_kr, id="three"),
                   ref([U(3, 2)], _misc_kr, id="one")],
    "_backward_khatri_rao": [via("khatri_rao")],
    "batch_take": [ref([U(3, 4), A([0, 3, -1], np.int32)], _misc_batch_take, grad=False),
                   ref([U(2, 3, 4), A([[0, 1, 2], [9, 3, 1]], np.int32)], _misc_batch_take, grad=False, id="3d")],
    "fill_element_0index": [ref([U(3, 4), U(3), A([1, 5, -0.5])], _misc_fill, grad=False)],
    "_onehot_encode": [ref([A([0, 2, 7, -1.5]), np.zeros((4, 5), np.float32)], _misc_onehot, grad=False)],
    "all_finite": [ref([U(3, 4)], lambda x: np.ones(1), grad=False, odt=np.float32),
                   ref([A([1.0, np.inf, 2.0])], lambda x, init_output: np.zeros(1), {"init_output": True},
                       grad=False, odt=np.float32, id="inf")],
    "multi_all_finite": [ref([U(3), A([1.0, np.nan])], lambda a, b, num_arrays: np.zeros(1), {"num_arrays": 2},
                             grad=False, odt=np.float32),
                         ref([U(3), U(2, 2)], lambda a, b, num_arrays: np.ones(1), {"num_arrays": 2},
                             grad=False, odt=np.float32, id="finite")],
    "reset_arrays": [prop(_misc_reset_check)],
    "amp_cast": [ref([U(3, 4)], lambda x, dtype: x, {"dtype": "float16"}, odt=np.float16, rtol=1e-3, atol=1e-3),
                 ref([U(3).astype(np.float16)], lambda x, dtype: x, {"dtype": "float32"}, odt=np.float32,
                     id="widen"),
                 ref([A([1, 2], np.int32)], lambda x, dtype: x, {"dtype": "float16"}, grad=False, odt=np.int32,
                     id="int-unchanged")],
    "amp_multicast": [ref([U(3).astype(np.float16), U(2, 2)], lambda a, b, num_outputs: [a, b], {"num_outputs": 2},
                          odt=[np.float32, np.float32]),
                      ref([U(3).astype(np.float16), U(2, 2)], lambda a, b, num_outputs, cast_narrow: [a, b],
                          {"num_outputs": 2, "cast_narrow": True}, odt=[np.float16, np.float16], rtol=1e-3,
                          atol=1e-3, id="narrow")],
})


# Random distributions (samplers, *_like, _sample_*, multinomial, densities):
# seeded property checks of shape, dtype, reproducibility and moments; NumPy
# references and numerical gradients for the densities.
def _moments_ok(name, v, mean, var, kurt):
    """Sample mean within 6 standard errors of ``mean``; sample variance
    within 6 standard errors (sigma^2 sqrt((excess kurtosis + 2) / n)) of
    ``var``. Deterministic: the draws are seeded."""
    v = np.asarray(v, np.float64).ravel()
    n = v.size
    m, s2 = v.mean(), v.var()
    assert abs(m - mean) < 6 * math.sqrt(var / n), f"{name}: mean {m}, expected {mean}"
    assert abs(s2 - var) < 6 * var * math.sqrt((kurt + 2) / n), f"{name}: variance {s2}, expected {var}"


def _draws(fn, integral, dtype, shape):
    def run():
        a = _seeded(fn)
        b = _seeded(fn)
        assert a.shape == shape, (a.shape, shape)
        assert a.dtype == dtype, a.dtype
        assert np.array_equal(a, b), "the same seed must give the same values"
        assert not np.array_equal(a, _seeded(fn, seed=8)), "different seeds gave the same values"
        assert np.isfinite(a).all()
        if integral:
            assert (a >= 0).all() and np.array_equal(a, np.round(a)), "counts must be non-negative integers"
        return a
    return run


def _scalar_dist(name, params, mean, var, kurt, integral=False, dtype=np.float32, id="distribution"):
    shape = (100, 100)
    kw = dict(params, shape=shape)
    if dtype != np.float32:
        kw["dtype"] = np.dtype(dtype).name

    def run():
        a = _draws(lambda: getattr(mx.nd, name)(**kw), integral, dtype, shape)()
        _moments_ok(name, a, mean, var, kurt)
    return prop(run, id=id)


def _like_dist(name, params, mean, var, kurt, integral=False):
    data = np.zeros((100, 100), np.float64)

    def run():
        a = _draws(lambda: getattr(mx.nd, name)(nd(data), **params), integral, np.float64, data.shape)()
        _moments_ok(name, a, mean, var, kurt)
    return prop(run, id="distribution")


def _multi_dist(name, ins, moments, integral=False):
    """ins: parameter arrays of shape (2,); moments: (mean, var, kurt) of
    each of the two distributions; 5000 draws each."""
    def run():
        a = _draws(lambda: getattr(mx.nd, name)(*[nd(x) for x in ins], shape=(50, 100)), integral, np.float32,
                   (2, 50, 100))()
        for i, (mean, var, kurt) in enumerate(moments):
            _moments_ok(f"{name}[{i}]", a[i], mean, var, kurt)
        # dtype, and one draw per distribution without shape
        b = getattr(mx.nd, name)(*[nd(x.astype(np.float64)) for x in ins], dtype="float16").asnumpy()
        assert b.shape == (2,) and b.dtype == np.float16
    return prop(run, id="distribution")


def _multinomial_check():
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    s = _draws(lambda: mx.nd.random.multinomial(nd(p), shape=(40, 100)), True, np.int32, (2, 40, 100))()
    for i in range(2):
        freq = np.bincount(s[i].ravel(), minlength=3) / s[i].size
        assert np.abs(freq - p[i]).max() < 6 * math.sqrt(0.25 / s[i].size), (freq, p[i])
    # get_prob: the log-probability of each draw, its gradient 1/p at the
    # drawn outcome times the head gradient (summed over the draws)
    x = nd(p)
    x.attach_grad()
    head = U(2, 6, lo=0.5, hi=2)
    mx.random.seed(5)
    with mx.autograd.record():
        idx, lp = mx.nd.random.multinomial(x, shape=6, get_prob=True, dtype="float64")
    lp.backward(nd(head))
    idx = idx.asnumpy()
    assert idx.dtype == np.float64 and lp.dtype == np.float32
    rows = np.arange(2)[:, None]
    assert_almost_equal(lp, np.log(p[rows, idx.astype(int)]))
    want = np.zeros((2, 3))
    np.add.at(want, (np.repeat(rows, 6, 1), idx.astype(int)), head / p[rows, idx.astype(int)])
    assert_almost_equal(x.grad, want, rtol=1e-5)
    one = mx.nd.random.multinomial(nd(np.array([0.0, 1.0], np.float32)))
    assert one.shape == (1,) and one.asnumpy()[0] == 1


def _lpdf(logp, is_log):
    return logp if is_log else np.exp(logp)


def _bcp(p, s):
    return p.reshape(p.shape + (1,) * (s.ndim - p.ndim))


_lgam = np.vectorize(math.lgamma)


def _pdf_uniform(s, low, high, is_log=False):
    v = np.broadcast_to(_bcp(1 / (high - low), s), s.shape)
    return np.log(v) if is_log else v


def _pdf_normal(s, mu, sigma, is_log=False):
    mu, sigma = _bcp(mu, s), _bcp(sigma, s)
    return _lpdf(-0.5 * ((s - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi), is_log)


def _pdf_gamma(s, alpha, beta, is_log=False):
    a, b = _bcp(alpha, s), _bcp(beta, s)
    return _lpdf(a * np.log(b) + (a - 1) * np.log(s) - b * s - _lgam(a), is_log)


def _pdf_exponential(s, lam, is_log=False):
    lam = _bcp(lam, s)
    return _lpdf(np.log(lam) - lam * s, is_log)


def _pdf_poisson(s, lam, is_log=False):
    lam = _bcp(lam, s)
    return _lpdf(s * np.log(lam) - lam - _lgam(s + 1), is_log)


def _nb_log(s, k, p):
    return _lgam(s + k) - _lgam(s + 1) - _lgam(k) + k * np.log(p) + s * np.log(1 - p)


def _pdf_nb(s, k, p, is_log=False):
    return _lpdf(_nb_log(s, _bcp(k, s), _bcp(p, s)), is_log)


def _pdf_gnb(s, mu, alpha, is_log=False):
    mu, alpha = _bcp(mu, s), _bcp(alpha, s)
    return _lpdf(_nb_log(s, 1 / alpha, 1 / (1 + alpha * mu)), is_log)


def _pdf_dirichlet(s, alpha, is_log=False):
    a = alpha.reshape(alpha.shape[:-1] + (1,) * (s.ndim - alpha.ndim) + alpha.shape[-1:])
    logp = _lgam(a.sum(-1)) - _lgam(a).sum(-1) + ((a - 1) * np.log(s)).sum(-1)
    return _lpdf(logp, is_log)


def _pdf_cases(ins, fn, wrt=None, grtol=1e-4):
    return [ref(ins, fn, {"is_log": log}, wrt=wrt, grtol=grtol, id="log" if log else "pdf") for log in (False, True)]


_PS = U(2, 3, 4, lo=0.2, hi=3.0)        # positive samples: parameter shape (2, 3), 4 samples each
_PA = U(2, 3, lo=0.5, hi=2.5)           # positive parameters
_PB = U(2, 3, lo=0.5, hi=2.5)
_COUNTS = _rng.randint(0, 7, size=(2, 3, 4)).astype(np.float32)
_DIR_S = U(2, 4, 3, lo=0.1, hi=1.0)
_DIR_S /= _DIR_S.sum(-1, keepdims=True)

TABLE.update({
    "_random_exponential": [_scalar_dist("_random_exponential", {"lam": 2.0}, 0.5, 0.25, 6.0)],
    "_random_gamma": [_scalar_dist("_random_gamma", {"alpha": 2.5, "beta": 0.5}, 1.25, 0.625, 2.4),
                      _scalar_dist("_random_gamma", {"alpha": 0.5, "beta": 2.0}, 1.0, 2.0, 12.0,
                                   dtype=np.float64, id="alpha<1-float64")],
    "_random_poisson": [_scalar_dist("_random_poisson", {"lam": 4.0}, 4.0, 4.0, 0.25, integral=True),
                        _scalar_dist("_random_poisson", {"lam": 50.0}, 50.0, 50.0, 0.02, integral=True,
                                     id="large-rate")],
    "_random_negative_binomial": [_scalar_dist("_random_negative_binomial", {"k": 3, "p": 0.4}, 4.5, 11.25,
                                               2 + 0.16 / 1.8, integral=True)],
    "_random_generalized_negative_binomial": [
        _scalar_dist("_random_generalized_negative_binomial", {"mu": 4.0, "alpha": 0.5}, 4.0, 12.0, 3 + 1 / 6,
                     integral=True),
        _scalar_dist("_random_generalized_negative_binomial", {"mu": 3.0, "alpha": 0.0}, 3.0, 3.0, 1 / 3,
                     integral=True, id="alpha0-poisson")],
    "_random_uniform_like": [_like_dist("_random_uniform_like", {"low": -1.0, "high": 3.0}, 1.0, 16 / 12, -1.2)],
    "_random_normal_like": [_like_dist("_random_normal_like", {"loc": 2.0, "scale": 0.5}, 2.0, 0.25, 0.0)],
    "_random_exponential_like": [_like_dist("_random_exponential_like", {"lam": 4.0}, 0.25, 1 / 16, 6.0)],
    "_random_gamma_like": [_like_dist("_random_gamma_like", {"alpha": 9.0, "beta": 0.5}, 4.5, 2.25, 6 / 9)],
    "_random_poisson_like": [_like_dist("_random_poisson_like", {"lam": 2.0}, 2.0, 2.0, 0.5, integral=True)],
    "_random_negative_binomial_like": [_like_dist("_random_negative_binomial_like", {"k": 2, "p": 0.5}, 2.0, 4.0,
                                                  3 + 0.25 / 1.0, integral=True)],
    "_random_generalized_negative_binomial_like": [
        _like_dist("_random_generalized_negative_binomial_like", {"mu": 2.0, "alpha": 0.25}, 2.0, 3.0,
                   6 * 0.25 + (1 / 9) / (4 * 2 / 3), integral=True)],
    "_sample_uniform": [_multi_dist("_sample_uniform", [A([0, -2]), A([1, 2])],
                                    [(0.5, 1 / 12, -1.2), (0.0, 16 / 12, -1.2)])],
    "_sample_normal": [_multi_dist("_sample_normal", [A([0, 5]), A([1, 0.5])], [(0, 1, 0), (5, 0.25, 0)])],
    "_sample_gamma": [_multi_dist("_sample_gamma", [A([0.5, 4]), A([1, 2])], [(0.5, 0.5, 12), (8, 16, 1.5)])],
    "_sample_exponential": [_multi_dist("_sample_exponential", [A([1, 10])], [(1, 1, 6), (0.1, 0.01, 6)])],
    "_sample_poisson": [_multi_dist("_sample_poisson", [A([0.5, 30])], [(0.5, 0.5, 2), (30, 30, 1 / 30)],
                                    integral=True)],
    "_sample_negative_binomial": [_multi_dist("_sample_negative_binomial", [A([1, 5]), A([0.5, 0.8])],
                                              [(1, 2, 6 + 0.25 / 0.5), (1.25, 1.5625, 6 / 5 + 0.64 / 1.0)],
                                              integral=True)],
    "_sample_generalized_negative_binomial": [
        _multi_dist("_sample_generalized_negative_binomial", [A([2, 6]), A([0.5, 0])],
                    [(2, 4, 3 + 0.25 / 1.0), (6, 6, 1 / 6)], integral=True)],
    "_sample_multinomial": [prop(_multinomial_check, id="frequencies-and-log-prob-gradient")],
    "_backward_sample_multinomial": [via("_sample_multinomial")],
    "_random_pdf_uniform": _pdf_cases([_PS, A(_PA - 3), _PB], _pdf_uniform),
    "_random_pdf_normal": _pdf_cases([U(2, 3, 4, lo=-2, hi=2), U(2, 3), _PB], _pdf_normal),
    "_random_pdf_gamma": _pdf_cases([_PS, _PA, _PB], _pdf_gamma),
    "_random_pdf_exponential": _pdf_cases([_PS, _PA], _pdf_exponential),
    "_random_pdf_poisson": _pdf_cases([_COUNTS, _PA], _pdf_poisson, wrt=[1]),
    "_random_pdf_negative_binomial": _pdf_cases([_COUNTS, _PA, U(2, 3, lo=0.2, hi=0.8)], _pdf_nb, wrt=[1, 2]),
    "_random_pdf_generalized_negative_binomial": _pdf_cases([_COUNTS, _PA, U(2, 3, lo=0.2, hi=1.0)], _pdf_gnb,
                                                            wrt=[1, 2]),
    "_random_pdf_dirichlet": _pdf_cases([_DIR_S, U(2, 3, lo=0.5, hi=3.0)], _pdf_dirichlet),
    "_backward_pdf_uniform": [via("_random_pdf_uniform")],
    "_backward_pdf_normal": [via("_random_pdf_normal")],
    "_backward_pdf_gamma": [via("_random_pdf_gamma")],
    "_backward_pdf_exponential": [via("_random_pdf_exponential")],
    "_backward_pdf_poisson": [via("_random_pdf_poisson")],
    "_backward_pdf_negative_binomial": [via("_random_pdf_negative_binomial")],
    "_backward_pdf_generalized_negative_binomial": [via("_random_pdf_generalized_negative_binomial")],
    "_backward_pdf_dirichlet": [via("_random_pdf_dirichlet")],
})


# -- linear algebra (mx.nd.linalg, _linalg_*) ---------------------------------------
# float32/float64 only, like MXNet: the cases give odt so that the float16
# consistency test leaves them out (tests/python/test_linalg.py compares float32
# with float64). potrf and syevd read one triangle of a symmetric input and, as in
# MXNet, return a symmetric gradient: their gradient is checked through
# X -> op(X + X^T) (props); the other gradients are the derivatives of the forward.
_la_rng = np.random.RandomState(1234)


def _la(ins, fn, params=None, **kw):
    kw.setdefault("odt", np.float32)
    return ref(ins, fn, params, **kw)


def _la_u(*shape):
    return _la_rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def _la_spd(*shape):
    """Symmetric positive-definite matrices (batch..., n, n), well conditioned."""
    m = _la_rng.uniform(-1.0, 1.0, size=shape)
    n = shape[-1]
    return (m @ np.swapaxes(m, -1, -2) / n + np.eye(n)).astype(np.float32)


def _la_tri(*shape, lower=True, junk=True):
    """Triangular matrices with a diagonal in [1, 2) and, with junk, values on
    the other side of the diagonal (which the operators must not read)."""
    n = shape[-1]
    t = _la_rng.uniform(-0.5, 0.5, size=shape)
    t = np.tril(t) if lower else np.triu(t)
    t = t + np.eye(n) * _la_rng.uniform(1.0, 2.0, size=shape[:-1])[..., None]
    if junk:
        t = t + (np.triu(_la_rng.uniform(-9, 9, size=shape), 1) if lower else
                 np.tril(_la_rng.uniform(-9, 9, size=shape), -1))
    return t.astype(np.float32)


def _T(x):
    return np.swapaxes(x, -1, -2)


def _np_gemm(a, b, c=None, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, axis=-2):
    a, b = np.swapaxes(a, axis, -2), np.swapaxes(b, axis, -2)
    out = alpha * np.matmul(_T(a) if transpose_a else a, _T(b) if transpose_b else b)
    if c is not None:
        out = out + beta * np.swapaxes(c, axis, -2)
    return np.swapaxes(out, axis, -2)


def _np_tri_op(a, b, solve, transpose=False, rightside=False, lower=True, alpha=1.0):
    t = np.tril(a) if lower else np.triu(a)
    t = _T(t) if transpose else t
    if solve:
        return alpha * (_T(np.linalg.solve(_T(t), _T(b))) if rightside else np.linalg.solve(t, b))
    return alpha * (b @ t if rightside else t @ b)


def _np_scalar(x, a):
    return x.reshape(a.shape[:-2] if a.ndim > 2 else (1,))


def _np_diag(a, offset=0):
    return np.diagonal(a, offset, axis1=-2, axis2=-1).copy()


def _np_makediag(a, offset=0):
    m = a.shape[-1]
    n = m + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n))
    i = np.arange(m)
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = a
    return out


def _np_trian_idx(n, offset, lower):
    if offset < 0 or (offset == 0 and lower):
        return np.tril_indices(n, offset)  # row by row
    r, c = np.tril_indices(n, -offset)
    return c, r  # the upper triangle column by column (MXNet's order)


def _np_extracttrian(a, offset=0, lower=True):
    r, c = _np_trian_idx(a.shape[-1], offset, lower)
    return a[..., r, c]


def _np_maketrian(a, offset=0, lower=True):
    m = int((np.sqrt(8 * a.shape[-1] + 1) - 1) / 2)
    n = m + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n))
    r, c = _np_trian_idx(n, offset, lower)
    out[..., r, c] = a
    return out


def _np_potri(a, lower=True):
    t = np.tril(a) if lower else np.triu(a)
    return np.linalg.inv(t @ _T(t) if lower else _T(t) @ t)


def _np_gelqf(a):
    q, r = np.linalg.qr(_T(a))  # LAPACK's Householder QR of A^T: the same signs as gelqf
    return _T(q), _T(r)


def _np_syevd(a):
    w, v = np.linalg.eigh(a, UPLO="L")
    u = _T(v).copy()
    flat = u.reshape(-1, u.shape[-1])
    for row in flat:
        if row[np.argmax(np.abs(row))] < 0:
            row *= -1
    return flat.reshape(u.shape), w


def _la_sym_grad(name, x, **params):
    """Gradient of name(X + X^T) against central differences (X: a batch of
    3-D matrices): checks the symmetric gradient of potrf / syevd."""
    def prop_fn():
        check_numeric_gradient(lambda a: getattr(mx.nd, name)(a + mx.nd.swapaxes(a, 1, 2), **params),
                               [x.astype(np.float64)], dtype=np.float64, rtol=1e-4, atol=1e-6)
    return prop_fn


_la_S = _la_spd(2, 3, 3)
_la_E = (_la_S + _la_u(2, 3, 3) @ np.diag([0.0, 1.0, 3.0]).astype(np.float32))  # distinct eigenvalues
_la_E = ((_la_E + _T(_la_E)) / 2).astype(np.float32)
TABLE.update({
    "_linalg_gemm": [
        _la([_la_u(2, 3, 4), _la_u(2, 4, 5), _la_u(2, 3, 5)], _np_gemm, {"alpha": 1.5, "beta": -0.5}),
        _la([_la_u(4, 3), _la_u(5, 4), _la_u(3, 5)], _np_gemm, {"transpose_a": True, "transpose_b": True},
            id="transposes"),
        _la([_la_u(2, 3, 2, 4), _la_u(2, 5, 2, 4), _la_u(2, 3, 2, 5)], _np_gemm,
            {"transpose_b": True, "axis": 1, "alpha": 0.5, "beta": 2.0}, id="axis"),
    ],
    "_linalg_gemm2": [
        _la([_la_u(2, 3, 4), _la_u(2, 4, 5)], _np_gemm, {"alpha": 2.0}),
        _la([_la_u(4, 3), _la_u(4, 5)], _np_gemm, {"transpose_a": True}, id="transpose_a"),
        _la([_la_u(3, 2, 4), _la_u(5, 2, 4)], _np_gemm, {"transpose_b": True, "axis": 0}, id="axis0"),
    ],
    "_linalg_potrf": [
        _la([_la_S], lambda a: np.linalg.cholesky(a), grad=False),
        _la([_la_S], lambda a, lower: _T(np.linalg.cholesky(a)), {"lower": False}, grad=False, id="upper"),
        _la([np.tril(_la_S) + np.triu(_la_u(2, 3, 3) * 9, 1)],
            lambda a: np.linalg.cholesky(np.tril(a) + _T(np.tril(a, -1))), grad=False, id="reads-lower"),
        prop(_la_sym_grad("_linalg_potrf", _la_spd(2, 3, 3) / 2), id="grad"),
        prop(_la_sym_grad("_linalg_potrf", _la_spd(2, 3, 3) / 2, lower=False), id="grad-upper"),
    ],
    "_linalg_potri": [
        _la([_la_tri(2, 3, 3)], _np_potri),
        _la([_la_tri(3, 3, lower=False)], _np_potri, {"lower": False}, id="upper"),
    ],
    "_linalg_trsm": [
        _la([_la_tri(2, 3, 3), _la_u(2, 3, 4)], lambda a, b, alpha: _np_tri_op(a, b, True, alpha=alpha),
            {"alpha": 1.5}),
        _la([_la_tri(3, 3, lower=False), _la_u(4, 3)],
            lambda a, b, **p: _np_tri_op(a, b, True, **p),
            {"transpose": True, "rightside": True, "lower": False, "alpha": -0.5}, id="upper-t-right"),
        _la([_la_tri(2, 3, 3), _la_u(2, 2, 3)], lambda a, b, **p: _np_tri_op(a, b, True, **p),
            {"rightside": True}, id="right"),
        _la([_la_tri(3, 3), _la_u(3, 2)], lambda a, b, **p: _np_tri_op(a, b, True, **p),
            {"transpose": True}, id="transpose"),
    ],
    "_linalg_trmm": [
        _la([_la_tri(2, 3, 3), _la_u(2, 3, 4)], lambda a, b, alpha: _np_tri_op(a, b, False, alpha=alpha),
            {"alpha": 2.0}),
        _la([_la_tri(3, 3, lower=False), _la_u(4, 3)], lambda a, b, **p: _np_tri_op(a, b, False, **p),
            {"transpose": True, "rightside": True, "lower": False}, id="upper-t-right"),
        _la([_la_tri(3, 3), _la_u(3, 2)], lambda a, b, **p: _np_tri_op(a, b, False, **p),
            {"transpose": True}, id="transpose"),
    ],
    "_linalg_syrk": [
        _la([_la_u(2, 3, 4)], lambda a, alpha: alpha * a @ _T(a), {"alpha": 1.5}),
        _la([_la_u(3, 4)], lambda a, transpose: _T(a) @ a, {"transpose": True}, id="transpose"),
    ],
    "_linalg_sumlogdiag": [
        _la([_la_S], lambda a: np.log(_np_diag(a)).sum(-1)),
        _la([_la_S[0]], lambda a: np.log(np.diag(a)).sum().reshape(1), id="2d"),
    ],
    "_linalg_extractdiag": [
        _la([_la_u(2, 4, 4)], _np_diag),
        _la([_la_u(4, 4)], _np_diag, {"offset": 2}, id="above"),
        _la([_la_u(2, 3, 4, 4)], _np_diag, {"offset": -1}, id="below"),
    ],
    "_linalg_makediag": [
        _la([_la_u(2, 3)], _np_makediag),
        _la([_la_u(3)], _np_makediag, {"offset": 1}, id="above"),
        _la([_la_u(2, 2, 3)], _np_makediag, {"offset": -2}, id="below"),
    ],
    "_linalg_extracttrian": [
        _la([_la_u(2, 4, 4)], _np_extracttrian),
        _la([_la_u(4, 4)], _np_extracttrian, {"lower": False}, id="upper"),
        _la([_la_u(2, 4, 4)], _np_extracttrian, {"offset": 1, "lower": True}, id="above"),
        _la([_la_u(4, 4)], _np_extracttrian, {"offset": -2, "lower": False}, id="below"),
    ],
    "_linalg_maketrian": [
        _la([_la_u(2, 6)], _np_maketrian),
        _la([_la_u(10)], _np_maketrian, {"lower": False}, id="upper"),
        _la([_la_u(2, 3)], _np_maketrian, {"offset": 1}, id="above"),
        _la([_la_u(6)], _np_maketrian, {"offset": -2, "lower": False}, id="below"),
    ],
    "_linalg_inverse": [_la([_la_S + _la_u(2, 3, 3) / 4], np.linalg.inv),
                        _la([_la_spd(4, 4)], np.linalg.inv, id="2d")],
    "_linalg_det": [_la([_la_u(2, 3, 3) + 2 * np.eye(3, dtype=np.float32)], np.linalg.det),
                    _la([_la_u(3, 3) + np.eye(3, dtype=np.float32)], lambda a: np.linalg.det(a).reshape(1),
                        id="2d")],
    "_linalg_slogdet": [_la([_la_u(3, 3, 3) * 3], lambda a: list(np.linalg.slogdet(a)))],
    "_linalg_gelqf": [_la([_la_u(2, 3, 5)], _np_gelqf, atol=1e-5),
                      _la([_la_u(3, 3)], _np_gelqf, atol=1e-5, id="square")],
    "_linalg_syevd": [
        _la([_la_E], _np_syevd, grad=False, atol=1e-5),
        _la([np.tril(_la_E[0]) + np.triu(_la_u(3, 3) * 9, 1)],
            lambda a: _np_syevd(np.tril(a) + _T(np.tril(a, -1))), grad=False, atol=1e-5, id="reads-lower"),
        prop(_la_sym_grad("_linalg_syevd", _la_E / 2), id="grad"),
    ],
    "_backward_linalg_potrf": [via("_linalg_potrf")],
    "_backward_linalg_potri": [via("_linalg_potri")],
    "_backward_linalg_trsm": [via("_linalg_trsm")],
    "_backward_linalg_trmm": [via("_linalg_trmm")],
    "_backward_linalg_syrk": [via("_linalg_syrk")],
    "_backward_linalg_sumlogdiag": [via("_linalg_sumlogdiag")],
    "_backward_linalg_det": [via("_linalg_det")],
    "_backward_linalg_slogdet": [via("_linalg_slogdet")],
    "_backward_linalg_gelqf": [via("_linalg_gelqf")],
    "_backward_linalg_syevd": [via("_linalg_syevd")],
})


# Fused RNN (feat-rnn): MXNet 1.9.1's RNN operator, all four modes, stacked,
# bidirectional and with sequence_length, against the NumPy reference in
# rnntest.py (itself checked against MXNet's values in test_rnn.py).
from rnntest import n_params as _rnn_np, rnn_ref as _rnn_ref  # noqa: E402


def _rnn_case(mode, layers=1, bi=False, lens=None, t=3, n=2, i=3, h=2, id=None, **kw):
    d = 2 if bi else 1
    ins = [U(t, n, i), U(_rnn_np(mode, i, h, layers, bi), lo=-0.8, hi=0.8), U(layers * d, n, h)]
    if mode == "lstm":
        ins.append(U(layers * d, n, h))
    params = dict(state_size=h, num_layers=layers, mode=mode, bidirectional=bi, **kw)
    wrt = None
    if lens is not None:
        ins.append(A(lens))
        params["use_sequence_length"] = True
        wrt = list(range(len(ins) - 1))
    return ref(ins, _rnn_ref, params, wrt=wrt, id=id)


TABLE.update({
    "RNN": [
        _rnn_case("rnn_tanh", state_outputs=True, id="tanh"),
        _rnn_case("rnn_relu", layers=2, id="relu_2layers"),
        _rnn_case("lstm", state_outputs=True, id="lstm"),
        _rnn_case("lstm", layers=2, bi=True, state_outputs=True, id="lstm_2layers_bi"),
        _rnn_case("gru", state_outputs=True, id="gru"),
        _rnn_case("gru", layers=2, bi=True, id="gru_2layers_bi"),
        _rnn_case("rnn_tanh", bi=True, lens=[2.0, 3.0], state_outputs=True, id="tanh_bi_seqlen"),
        _rnn_case("lstm", bi=True, lens=[3.0, 1.0], state_outputs=True, id="lstm_bi_seqlen"),
        _rnn_case("gru", layers=2, lens=[1.0, 3.0], state_outputs=True, id="gru_2layers_seqlen"),
    ],
    "_backward_RNN": [via("RNN")],
})


# Contrib optimizer updates (feat-optim2): MXNet 1.9.1's AdamW (single,
# mixed precision, multi-tensor; rescale_grad is a float32 array input),
# multi-tensor LAMB and group AdaGrad. Values computed with MXNet itself and
# error cases are in tests/python/test_optim_contrib.py.
def _adamw(w, g, m, v, r, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, clip_gradient=-1.0, w32=None):
    r = r.ravel()[0]
    if not np.isfinite(r) or r == 0:
        return [w, m, v] + ([w32] if w32 is not None else [])
    x = w if w32 is None else w32
    g = _clip(r * g, clip_gradient)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    x = x - eta * (lr * m / (np.sqrt(v) + epsilon) + wd * x)
    return [x, m, v] + ([x] if w32 is not None else [])


def _madamw_ref(mp):
    s = 5 if mp else 4

    def fn(*ins, num_weights, lrs, wds, etas, **p):
        outs, states = [], []
        for k in range(num_weights):
            grp = ins[k * s:(k + 1) * s]
            res = _adamw(*grp[:4], ins[-1], lrs[k], etas[k], wd=wds[k], w32=grp[4] if mp else None, **p)
            outs.append(res[0])
            states += res[1:]
        return outs + states
    return fn


def _lamb_ref(mp):
    s = 5 if mp else 4

    def fn(*ins, num_tensors, step_count, learning_rates, wds, beta1=0.9, beta2=0.999, epsilon=1e-6,
           rescale_grad=1.0, lower_bound=-1.0, upper_bound=-1.0, clip_gradient=-1.0, bias_correction=True):
        outs, states = [], []
        for k in range(num_tensors):
            w, g, m, v = ins[k * s:k * s + 4]
            x = ins[k * s + 4] if mp else w
            t = step_count[k]
            g = _clip(rescale_grad * g, clip_gradient)
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            mh, vh = (m / (1 - beta1 ** t), v / (1 - beta2 ** t)) if bias_correction else (m, v)
            d = mh / (np.sqrt(vh) + epsilon) + wds[k] * x
            r1, r2 = np.sqrt(np.sum(w * w)), np.sqrt(np.sum(d * d))
            r1 = max(r1, lower_bound) if lower_bound >= 0 else r1
            r1 = min(r1, upper_bound) if upper_bound >= 0 else r1
            lr = learning_rates[k] if r1 == 0 or r2 == 0 else learning_rates[k] * r1 / r2
            outs.append(x - lr * d)
            states += [m, v] + ([x - lr * d] if mp else [])
        return outs + states
    return fn


def _multi_case(op, mp, params, scale=None, id=None):
    """Three tensors of different shapes; states checked through `mutated`."""
    s, nw = 5 if mp else 4, 3
    ins = []
    for shape in [(2, 3), (4,), (1, 2, 2)]:
        w, g = U(*shape), U(*shape)
        ins += [w.astype(np.float16), g.astype(np.float16)] if mp else [w, g]
        ins += [U(*shape, lo=-0.1, hi=0.1), U(*shape, lo=0.0, hi=0.1)] + ([w] if mp else [])
    if scale is not None:
        ins.append(A([scale]))
    mutated = {k * s + j: nw + k * (s - 2) + (j - 2) for k in range(nw) for j in range(2, s)}
    fn = _madamw_ref(mp) if op == "adamw" else _lamb_ref(mp)
    return ref(ins, fn, params, grad=False, mutated=mutated, odt=np.float16 if mp else None, id=id)


def _group_adagrad(w, g, h, lr, rescale_grad=1.0, clip_gradient=-1.0, epsilon=1e-5):
    g = _clip(rescale_grad * g, clip_gradient).reshape(w.shape[0], -1)
    h = h + np.mean(g * g, axis=1).reshape(h.shape)
    return [w - lr * (g / np.sqrt(h.reshape(-1, 1) + epsilon)).reshape(w.shape), h]


_AW_P = {"lr": 0.125, "eta": 0.5, "beta1": 0.75, "beta2": 0.875, "epsilon": 2.0 ** -10, "wd": 0.0625}
_MAW_P = {"num_weights": 3, "lrs": (0.125, 0.25, 0.5), "wds": (0.0625, 0.0, 0.125), "etas": (1.0, 0.5, 2.0)}
_ML_P = {"num_tensors": 3, "learning_rates": (0.125, 0.25, 0.5), "wds": (0.0625, 0.0, 0.125), "step_count": (1, 2, 5)}
TABLE.update({
    "_adamw_update": [
        ref([_W, _G, _S1, _S2, A([1.0])], _adamw, _AW_P, grad=False, mutated={2: 1, 3: 2}),
        ref([_W, _G, _S1, _S2, A([2.0])], _adamw, dict(_AW_P, clip_gradient=0.75), grad=False,
            mutated={2: 1, 3: 2}, id="rescale_clip"),
        ref([_W, _G, _S1, _S2, A([0.0])], _adamw, _AW_P, grad=False, mutated={2: 1, 3: 2}, id="skip_zero"),
        ref([_W, _G, _S1, _S2, A([np.nan])], _adamw, _AW_P, grad=False, mutated={2: 1, 3: 2}, id="skip_nan")],
    "_mp_adamw_update": [
        ref([_W16, _G16, _S1, _S2, _W, A([2.0])], lambda w, g, m, v, w32, r, **p: _adamw(w, g, m, v, r, w32=w32, **p),
            dict(_AW_P, clip_gradient=0.75), grad=False, odt=np.float16, mutated={2: 1, 3: 2, 4: 3}),
        ref([_W16, _G16, _S1, _S2, _W, A([np.inf])],
            lambda w, g, m, v, w32, r, **p: _adamw(w, g, m, v, r, w32=w32, **p),
            _AW_P, grad=False, odt=np.float16, mutated={2: 1, 3: 2, 4: 3}, id="skip_inf")],
    "_multi_adamw_update": [
        _multi_case("adamw", False, _MAW_P, scale=1.0),
        _multi_case("adamw", False, dict(_MAW_P, beta1=0.5, beta2=0.75, epsilon=2.0 ** -8, clip_gradient=0.75),
                    scale=2.0, id="rescale_clip")],
    "_multi_mp_adamw_update": [_multi_case("adamw", True, dict(_MAW_P, clip_gradient=0.75), scale=2.0)],
    "_multi_lamb_update": [
        _multi_case("lamb", False, _ML_P),
        _multi_case("lamb", False, dict(_ML_P, beta1=0.5, beta2=0.75, epsilon=2.0 ** -10, rescale_grad=2.0,
                                        clip_gradient=0.75, lower_bound=0.5, upper_bound=1.25,
                                        bias_correction=False), id="bounds_clip")],
    "_multi_mp_lamb_update": [_multi_case("lamb", True, dict(_ML_P, rescale_grad=0.5))],
    "_contrib_group_adagrad_update": [
        ref([U(3, 4), U(3, 4), U(3, 1, lo=0.0, hi=1.0)], _group_adagrad, {"lr": 0.125}, grad=False, mutated={2: 1}),
        ref([U(3, 2, 2), U(3, 2, 2), U(3, 1, lo=0.0, hi=1.0)], _group_adagrad,
            {"lr": 0.125, "rescale_grad": 1.5, "clip_gradient": 0.75, "epsilon": 2.0 ** -10}, grad=False,
            mutated={2: 1}, id="3d_clip"),
        ref([U(4), U(4), U(4, lo=0.0, hi=1.0)], _group_adagrad, {"lr": 0.125}, grad=False, mutated={2: 1},
            id="vector")],
})


# mx.nd.contrib operators (feat-contrib): _contrib_<name>, see also test_contrib.py.
def _ste_check(name, fwd):
    def check():
        x = A([[-1.7, -0.2, 0.0], [0.4, 1.2, 2.6]])
        out, g = _head_grad(name, [x], {})
        assert_almost_equal(out, fwd(x))
        assert_almost_equal(g, np.full(x.shape, 7.0, np.float32))  # straight through
    return prop(check, id="straight_through")


def _gradmul_check():
    x = U(2, 3)
    out, g = _head_grad("_contrib_gradientmultiplier", [x], {"scalar": -2.5})
    assert_almost_equal(out, x)
    assert_almost_equal(g, np.full(x.shape, -17.5, np.float32))


def _index_copy(old, idx, new):
    out = old.copy()
    out[idx.astype(int)] = new
    return out


def _index_array(x, axes=None):
    grids = np.indices(x.shape)
    axes = range(x.ndim) if axes is None else axes
    return np.stack([grids[a] for a in axes], axis=-1)


def _allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True):
    return np.array(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan), dtype=np.uint8)


TABLE.update({
    "_contrib_arange_like": [
        ref([U(2, 3)], lambda x: np.arange(6.0).reshape(2, 3), id="default"),
        ref([U(3, 4)], lambda x, **k: 1.5 + 0.5 * (np.arange(12) // 5).reshape(3, 4),
            {"start": 1.5, "step": 0.5, "repeat": 5}, id="start_step_repeat"),
        ref([U(2, 5)], lambda x, **k: -1.0 + 2 * (np.arange(5) // 2), {"start": -1, "step": 2, "repeat": 2, "axis": -1},
            id="axis"),
        ref([A([[1, 2], [3, 4]], np.int32)], lambda x, **k: np.arange(4).reshape(2, 2), grad=False, id="int32"),
    ],
    "_contrib_index_copy": [
        ref([U(5, 3), A([0, 4, 2]), U(3, 3)], _index_copy, wrt=[0, 2], id="rows"),
        ref([U(4), A([3, 1]), U(2)], _index_copy, wrt=[0, 2], id="vector"),
    ],
    "_contrib_index_array": [
        ref([U(3, 2)], _index_array, grad=False, odt=np.int64, id="all_axes"),
        ref([U(3, 2, 2)], _index_array, {"axes": (1, 0)}, grad=False, odt=np.int64, id="axes"),
        ref([U(2, 3, 4)], lambda x, axes: _index_array(x, [2]), {"axes": (-1,)}, grad=False, odt=np.int64,
            id="negative_axis"),
    ],
    "_contrib_div_sqrt_dim": [ref([U(2, 3, 5)], lambda x: x / np.sqrt(5.0))],
    "_contrib_quadratic": [
        ref([U(3, 4)], lambda x, a, b, c: a * x * x + b * x + c, {"a": 1.5, "b": -2.0, "c": 0.5}, id="abc"),
        ref([U(3)], lambda x: 0 * x, id="defaults"),
    ],
    "_contrib_allclose": [
        ref([A([1e10, 1e-7]), A([1.00001e10, 1e-8])], _allclose, grad=False, odt=np.uint8, id="false"),
        ref([A([1e10, 1e-8]), A([1.00001e10, 1e-9])], _allclose, grad=False, odt=np.uint8, id="true"),
        ref([A([1.0, np.nan, np.inf]), A([1.0, np.nan, np.inf])], _allclose, grad=False, odt=np.uint8, id="nan_inf"),
        ref([A([1.0, np.nan]), A([1.0, np.nan])], _allclose, {"equal_nan": False}, grad=False, odt=np.uint8,
            id="nan_unequal"),
        ref([A([1.0, 2.0]), A([1.1, 2.0])], _allclose, {"rtol": 0.1, "atol": 0.0}, grad=False, odt=np.uint8,
            id="tolerances"),
    ],
    "_contrib_gradientmultiplier": [
        ref([U(2, 3)], lambda x, **k: x, {"scalar": 3.0}, grad=False, id="identity"),
        prop(_gradmul_check, id="scaled_gradient"),
    ],
    "_contrib_round_ste": [
        ref([A([-2.5, -1.4, -0.5, 0.0, 0.5, 1.5, 2.4])], _round_away, grad=False, id="half_away_from_zero"),
        _ste_check("_contrib_round_ste", _round_away),
    ],
    "_contrib_sign_ste": [
        ref([A([-2.5, -0.1, 0.0, 0.3])], np.sign, grad=False, id="sign"),
        _ste_check("_contrib_sign_ste", np.sign),
    ],
})


def _corner(b, corner=True):
    if corner:
        return b
    return np.concatenate([b[..., :2] - b[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2], axis=-1)


def _iou_one(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)

    def area(x):
        return 0.0 if x[2] < x[0] or x[3] < x[1] else (x[2] - x[0]) * (x[3] - x[1])
    u = area(a) + area(b) - w * h
    return w * h / u if u > 0 else 0.0


def _box_iou(lhs, rhs, format="corner"):
    a, b = _corner(lhs, format == "corner").reshape(-1, 4), _corner(rhs, format == "corner").reshape(-1, 4)
    out = np.array([[_iou_one(x, y) for y in b] for x in a])
    return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])


def _box_nms(data, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2, score_index=1, id_index=-1,
             background_id=-1, force_suppress=False, in_format="corner", out_format="corner"):
    flat = data.reshape(-1, data.shape[-2], data.shape[-1])
    out = -np.ones_like(flat)
    cs = slice(coord_start, coord_start + 4)
    for b, rows in enumerate(flat):
        cand = [r for r in range(len(rows)) if rows[r, score_index] > valid_thresh
                and not (id_index >= 0 and background_id >= 0 and rows[r, id_index] == background_id)]
        cand = sorted(cand, key=lambda r: -rows[r, score_index])
        cand = cand[:topk] if topk > 0 else cand
        kept = []
        for r in cand:
            box = _corner(rows[r, cs], in_format == "corner")
            if all(not ((force_suppress or id_index < 0 or rows[k, id_index] == rows[r, id_index])
                        and _iou_one(_corner(rows[k, cs], in_format == "corner"), box) > overlap_thresh)
                   for k in kept):
                kept.append(r)
        for q, r in enumerate(kept):
            out[b, q] = rows[r]
            c = _corner(rows[r, cs], in_format == "corner")
            if out_format == "corner":
                out[b, q, cs] = c
            else:
                out[b, q, cs] = np.concatenate([(c[:2] + c[2:]) / 2, c[2:] - c[:2]])
    return out.reshape(data.shape)


def _bipartite(data, threshold, is_ascend=False, topk=-1):
    n, m = data.shape[-2:]
    flat = data.reshape(-1, n, m)
    rows, cols = -np.ones(flat.shape[:2]), -np.ones((flat.shape[0], m))
    for b, sc in enumerate(flat):
        order = sorted(range(n * m), key=lambda f: sc.flat[f] if is_ascend else -sc.flat[f])
        count = 0
        for f in order:
            r, c = divmod(f, m)
            if rows[b, r] != -1 or cols[b, c] != -1:
                continue
            if topk > 0 and count > topk:  # MXNet 1.9.1 stops after topk + 1 matches
                break
            if (sc.flat[f] > threshold) if is_ascend else (sc.flat[f] < threshold):
                break
            rows[b, r], cols[b, c] = c, r
            count += 1
    return [rows.reshape(data.shape[:-1]), cols.reshape(data.shape[:-2] + (m,))]


def _center(b):
    return np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], axis=-1)


def _box_encode(samples, matches, anchors, refs, means, stds):
    g = np.stack([refs[b][matches[b].astype(int)] for b in range(len(refs))])
    a, r = _center(anchors), _center(g)
    t = np.concatenate([(r[..., :2] - a[..., :2]) / a[..., 2:], np.log(r[..., 2:] / a[..., 2:])], axis=-1)
    pos = (samples > 0.5)[..., None]
    return [np.where(pos, (t - means) / stds, 0.0), np.where(pos, 1.0, 0.0) + 0 * t]


def _box_decode(data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0, format="center"):
    a = _center(anchors) if format == "corner" else anchors
    x = data[..., 0] * std0 * a[..., 2] + a[..., 0]
    y = data[..., 1] * std1 * a[..., 3] + a[..., 1]
    dw, dh = data[..., 2] * std2, data[..., 3] * std3
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    w, h = np.exp(dw) * a[..., 2] / 2, np.exp(dh) * a[..., 3] / 2
    return np.stack([x - w, y - h, x + w, y + h], axis=-1)


def _multibox_prior(data, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0), offsets=(0.5, 0.5)):
    h, w = data.shape[2:]
    sy = steps[0] if steps[0] > 0 else 1.0 / h
    sx = steps[1] if steps[1] > 0 else 1.0 / w
    shapes = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    out = []
    for i in range(h):
        for j in range(w):
            cy, cx = (i + offsets[0]) * sy, (j + offsets[1]) * sx
            for s, r in shapes:
                hw, hh = s * h / w * np.sqrt(r) / 2, s / np.sqrt(r) / 2
                out.append([cx - hw, cy - hh, cx + hw, cy + hh])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


def _zero_grad_check(name, ins, params, wrt=0):
    def check():
        arrs = [nd(x) for x in ins]
        arrs[wrt].attach_grad()
        with mx.autograd.record():
            out = _as_list(getattr(mx.nd, name)(*arrs, **params))
        mx.autograd.backward(out)
        assert_almost_equal(arrs[wrt].grad, np.zeros_like(ins[wrt]))  # MXNet: zero gradients
    return prop(check, id="zero_gradient")


_NMS = A([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2], [0, 0.3, 0.1, 0.1, 0.14, 0.14],
          [2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.05, 0, 0, 1, 1], [1, 0.9, 0.11, 0.1, 0.2, 0.21]])
_BOXES = np.concatenate([U(2, 3, 2, lo=0, hi=0.5), U(2, 3, 2, lo=0.5, hi=1)], axis=-1)
_ANCHORS = A([[[0, 0, 2, 2], [1, 1, 3, 4], [0, 0, 1, 1], [2, 2, 5, 6]]])

TABLE.update({
    "_contrib_box_iou": [
        ref([_BOXES, _BOXES[0, :2]], _box_iou, grad=False, id="corner"),
        ref([A([[0.5, 0.5, 1, 1], [1, 1, 2, 0.5]]), A([[0.5, 0.6, 0.8, 1.1], [3, 3, 1, 1], [1.2, 1, 2, 2]])],
            _box_iou, {"format": "center"}, grad=False, id="center"),
        ref([A([[0, 0, 2, 2], [1, 1, 1, 1]]), A([[5, 5, 4, 4], [1, 1, 1, 1]])], _box_iou, grad=False,
            id="degenerate"),
        _zero_grad_check("_contrib_box_iou", [_BOXES, _BOXES], {}),
    ],
    # class ids are compared for equality: no numerical gradient through them (grad=False)
    "_contrib_box_nms": [
        ref([_NMS], _box_nms, id="default"),
        ref([_NMS], _box_nms, {"overlap_thresh": 0.1, "valid_thresh": 0.1, "topk": 3, "id_index": 0}, grad=False, id="topk_class"),
        ref([_NMS], _box_nms, {"overlap_thresh": 0.1, "id_index": 0, "background_id": 0}, grad=False, id="background"),
        ref([_NMS], _box_nms, {"overlap_thresh": 0.1, "id_index": 0, "force_suppress": True}, grad=False, id="force"),
        ref([_NMS], _box_nms, {"out_format": "center"}, grad=False, id="out_center"),
        ref([_NMS], _box_nms, {"in_format": "center", "out_format": "center", "overlap_thresh": 0.3}, id="in_center"),
        ref([np.stack([_NMS, _NMS[::-1] * A([1, 1, 1, 1, 1.1, 1.2])])[None]], _box_nms, {"overlap_thresh": 0.3},
            id="batched"),
        ref([A([[0.9, 0.1, 0.1, 0.3, 0.3, 5], [0.8, 0.12, 0.1, 0.3, 0.32, 5]])], _box_nms,
            {"coord_start": 1, "score_index": 0, "id_index": 5}, grad=False, id="layout"),
    ],
    "_backward_contrib_box_nms": [via("_contrib_box_nms")],
    "_contrib_bipartite_matching": [
        ref([A([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])], _bipartite, {"threshold": 1e-12}, grad=False, id="default"),
        ref([A([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])], _bipartite, {"threshold": 0.35, "is_ascend": True},
            grad=False, id="ascend"),
        ref([U(2, 4, 5, lo=0, hi=1)], _bipartite, {"threshold": 0.3}, grad=False, id="batched"),
        ref([U(4, 4, lo=0, hi=1)], _bipartite, {"threshold": 0.0, "topk": 1}, grad=False, id="topk"),
        _zero_grad_check("_contrib_bipartite_matching", [U(3, 4)], {"threshold": 0.1}),
    ],
    "_contrib_box_encode": [
        ref([A([[1, -1, 0, 1]]), A([[0, 1, 1, 2]]), _ANCHORS, A([[[0.5, 0.2, 2, 3], [1, 1, 2, 2], [2, 1, 4, 5]]]),
             A([0.1, 0, 0, -0.1]), A([0.1, 0.1, 0.2, 0.2])], _box_encode, grad=False, id="targets_masks"),
        _zero_grad_check("_contrib_box_encode", [A([[1, 1]]), A([[0, 1]]), _ANCHORS[:, :2], _ANCHORS[:, 1:3],
                                                 A([0, 0, 0, 0]), A([1, 1, 1, 1])], {}, wrt=2),
    ],
    "_contrib_box_decode": [
        ref([U(2, 3, 4), A([[[0.5, 0.5, 1, 2], [0, 0, 2, 2], [1, 1, 3, 4]]])], _box_decode, grad=False, id="center"),
        ref([U(2, 3, 4, lo=-2, hi=2), U(2, 3, 4, lo=0.5, hi=1) + A([0, 0, 1, 1])], _box_decode,
            {"std0": 0.1, "std1": 0.2, "std2": 0.3, "std3": 0.4, "clip": 0.5, "format": "corner"}, grad=False,
            id="corner_std_clip"),
        _zero_grad_check("_contrib_box_decode", [U(1, 2, 4), U(1, 2, 4)], {}),
    ],
    "_contrib_MultiBoxPrior": [
        ref([U(1, 3, 2, 3)], _multibox_prior, grad=False, id="default"),
        ref([U(2, 1, 3, 4)], _multibox_prior, {"sizes": (0.5, 0.2), "ratios": (2, 1, 0.5)}, grad=False,
            id="sizes_ratios"),
        ref([U(1, 3, 2, 3)], _multibox_prior, {"sizes": (0.5,), "steps": (0.3, 0.2), "offsets": (0.2, 0.7),
                                               "clip": True}, grad=False, id="steps_offsets_clip"),
        _zero_grad_check("_contrib_MultiBoxPrior", [U(1, 2, 2, 2)], {}),
    ],
})


def _multibox_detection(cls_prob, loc_pred, anchor, clip=True, threshold=0.01, nms_threshold=0.5,
                        force_suppress=False, variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    b_n, _, a_n = cls_prob.shape
    out = -np.ones((b_n, a_n, 6))
    boxes = _box_decode(loc_pred.reshape(b_n, a_n, 4), _center(anchor), *variances)
    if clip:
        boxes = np.clip(boxes, 0, 1)
    for b in range(b_n):
        ids = cls_prob[b, 1:].argmax(axis=0)
        scores = cls_prob[b, 1:].max(axis=0)
        rows = [[ids[a], scores[a], *boxes[b, a]] for a in range(a_n) if scores[a] >= threshold]
        keep = len(rows) if nms_topk <= 0 else min(nms_topk, len(rows))
        for k, r in enumerate(rows):
            out[b, k] = r
            if k >= keep:
                out[b, k, 0] = -1  # MXNet 1.9.1: rows beyond nms_topk stay in place with id -1
        out[b, :keep] = sorted(rows, key=lambda r: -r[1])[:keep]
        for u in range(keep):
            for v in range(u + 1, keep):
                if out[b, u, 0] >= 0 and out[b, v, 0] >= 0 and (force_suppress or out[b, u, 0] == out[b, v, 0]) \
                        and _iou_one(out[b, u, 2:], out[b, v, 2:]) > nms_threshold:
                    out[b, v, 0] = -1
    return out


_MBD = [A([[[0.1, 0.2, 0.7, 0.05], [0.6, 0.1, 0.1, 0.9], [0.3, 0.7, 0.2, 0.05]],
           [[0.5, 0.1, 0.2, 0.3], [0.2, 0.4, 0.6, 0.3], [0.3, 0.5, 0.2, 0.4]]]),
        U(2, 16), A([[[0.1, 0.1, 0.3, 0.3], [0.12, 0.1, 0.3, 0.32], [0.5, 0.5, 0.9, 0.8], [0.0, 0.0, 1.0, 1.0]]])]

TABLE.update({
    "_contrib_MultiBoxDetection": [
        ref(_MBD, _multibox_detection, grad=False, id="default"),
        ref(_MBD, _multibox_detection, {"threshold": 0.25, "clip": False, "variances": (0.2, 0.1, 0.3, 0.1)},
            grad=False, id="threshold_variances"),
        ref(_MBD, _multibox_detection, {"force_suppress": True, "nms_threshold": 0.3}, grad=False, id="force"),
        ref(_MBD, _multibox_detection, {"nms_topk": 1}, grad=False, id="nms_topk"),
        _zero_grad_check("_contrib_MultiBoxDetection", _MBD, {}, wrt=1),
    ],
})


def _multibox_target(anchor, label, cls_pred, overlap_threshold=0.5, ignore_label=-1.0, negative_mining_ratio=-1.0,
                     negative_mining_thresh=0.5, minimum_negative_samples=0, variances=(0.1, 0.1, 0.2, 0.2)):
    anchors = anchor[0]
    a_n = len(anchors)
    b_n = len(label)
    loc, mask, cls = np.zeros((b_n, a_n, 4)), np.zeros((b_n, a_n, 4)), np.full((b_n, a_n), ignore_label)
    for b in range(b_n):
        gts = []
        for row in label[b]:
            if row[0] == -1:
                break
            gts.append(row)
        if not gts:
            continue
        ov = np.array([[_iou_one(a, g[1:5]) for g in gts] for a in anchors])
        match = -np.ones(a_n, int)
        free = ov.copy()
        while free.max() > 1e-6:  # greedy bipartite: best remaining (anchor, gt) pair
            a, g = np.unravel_index(free.argmax(), free.shape)
            match[a] = g
            free[a, :], free[:, g] = 0, 0
        if overlap_threshold > 0:
            extra = (match < 0) & (ov.max(axis=1) > overlap_threshold)
            match[extra] = ov.argmax(axis=1)[extra]
        pos = match >= 0
        neg = ~pos
        if negative_mining_ratio > 0:
            e = np.exp(cls_pred[b] - cls_pred[b].max(axis=0))
            bg = e[0] / e.sum(axis=0)
            cand = [a for a in np.argsort(bg, kind="stable") if not pos[a] and ov[a].max() < negative_mining_thresh]
            neg = np.zeros(a_n, bool)
            neg[cand[:int(pos.sum() * negative_mining_ratio)]] = True
        cls[b, neg] = 0
        for a in np.flatnonzero(pos):
            g = gts[match[a]]
            ac, gc = _center(anchors[a]), _center(g[1:5])
            loc[b, a] = np.concatenate([(gc[:2] - ac[:2]) / ac[2:], np.log(gc[2:] / ac[2:])]) / variances
            mask[b, a] = 1
            cls[b, a] = g[0] + 1
    return [loc.reshape(b_n, -1), mask.reshape(b_n, -1), cls]


_rs_mbt = np.random.RandomState(3)
_xy = _rs_mbt.uniform(0, 0.6, (1, 12, 2))
_MBT = [A(np.concatenate([_xy, _xy + _rs_mbt.uniform(0.1, 0.4, (1, 12, 2))], -1)),
        A([[[1, 0.1, 0.1, 0.4, 0.4], [2, 0.5, 0.4, 0.8, 0.9], [-1] * 5, [-1] * 5],
           [[0, 0.2, 0.2, 0.5, 0.6], [-1] * 5, [3, 0.1, 0.1, 0.4, 0.4], [-1] * 5]]),
        A(_rs_mbt.uniform(-2, 2, (2, 3, 12)))]

TABLE.update({
    "_contrib_MultiBoxTarget": [
        ref(_MBT, _multibox_target, grad=False, id="default"),
        ref(_MBT, _multibox_target, {"overlap_threshold": 0.2, "variances": (0.2, 0.1, 0.3, 0.4)}, grad=False,
            id="threshold_variances"),
        ref(_MBT, _multibox_target, {"negative_mining_ratio": 1.6}, grad=False, id="mining"),
        ref(_MBT, _multibox_target, {"negative_mining_ratio": 2, "negative_mining_thresh": 0.2, "ignore_label": -2},
            grad=False, id="mining_thresh"),
        ref([_MBT[0], -np.ones((2, 2, 5), np.float32), _MBT[2]], _multibox_target, grad=False, id="no_ground_truth"),
        _zero_grad_check("_contrib_MultiBoxTarget", _MBT, {}, wrt=2),
    ],
})


def _resize_axis(n_in, n_out, align):
    """Interpolation matrix (n_out, n_in) along one axis, MXNet 1.9.1's convention."""
    r = 0.0 if n_out <= 1 else ((n_in - 1) / (n_out - 1) if align else n_in / n_out)
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = r * o if align else max(r * (o + 0.5) - 0.5, 0.0)
        lo = min(int(np.floor(src)), n_in - 1)
        hi = min(lo + 1, n_in - 1)
        m[o, lo] += 1 - (src - lo)
        m[o, hi] += src - lo
    return m


def _bilinear_resize(x, like=None, height=1, width=1, scale_height=None, scale_width=None, mode="size",
                     align_corners=True):
    h, w = x.shape[2:]
    if mode == "like":
        oh, ow = like.shape[2:]
    elif mode == "odd_scale":
        oh, ow = [int((n - 1) * s + 1) if n % 2 else int(n * s) for n, s in ((h, scale_height), (w, scale_width))]
    elif mode.startswith("to_"):
        want_odd, up = "odd" in mode, mode.endswith("up")
        oh, ow = [n if (n % 2 == 1) == want_odd else (n + 1 if up else n - 1) for n in (h, w)]
    elif scale_height is not None:
        oh, ow = int(h * scale_height), int(w * scale_width)
    else:
        oh, ow = height, width
    mh, mw = _resize_axis(h, oh, align_corners), _resize_axis(w, ow, align_corners)
    return np.einsum("oh,nchw,pw->ncop", mh, x, mw)


def _adaptive_avg(x, output_size=1):
    oh, ow = (output_size, output_size) if np.isscalar(output_size) else output_size
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, he = i * h // oh, -(-(i + 1) * h // oh)
            ws, we = j * w // ow, -(-(j + 1) * w // ow)
            out[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    return out


TABLE.update({
    "_contrib_BilinearResize2D": [
        ref([U(2, 2, 3, 4)], _bilinear_resize, {"height": 5, "width": 3}, id="align_corners"),
        ref([U(1, 2, 3, 4)], _bilinear_resize, {"height": 5, "width": 7, "align_corners": False}, id="half_pixel"),
        ref([U(1, 1, 5, 6)], _bilinear_resize, {"height": 2, "width": 4, "align_corners": False}, id="down"),
        ref([U(1, 1, 5, 4)], _bilinear_resize, {"scale_height": 1.5, "scale_width": 0.5}, id="scale"),
        ref([U(1, 1, 5, 4)], _bilinear_resize, {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5},
            id="odd_scale"),
        ref([U(1, 1, 5, 4), U(2, 3, 2, 6)], _bilinear_resize, {"mode": "like"}, wrt=[0], id="like"),
        ref([U(1, 1, 5, 4)], _bilinear_resize, {"mode": "to_even_up"}, id="to_even_up"),
        ref([U(1, 1, 5, 4)], _bilinear_resize, {"mode": "to_odd_down", "align_corners": False}, id="to_odd_down"),
        ref([U(1, 2, 3, 4)], _bilinear_resize, {"height": 1, "width": 1, "align_corners": False}, id="one_pixel"),
    ],
    "_backward_contrib_BilinearResize2D": [via("_contrib_BilinearResize2D")],
    "_contrib_AdaptiveAvgPooling2D": [
        ref([U(2, 2, 5, 7)], _adaptive_avg, id="default"),
        ref([U(1, 2, 5, 7)], _adaptive_avg, {"output_size": 3}, id="square"),
        ref([U(1, 2, 5, 7)], _adaptive_avg, {"output_size": (2, 4)}, id="pair"),
        ref([U(1, 1, 3, 2)], _adaptive_avg, {"output_size": (4, 5)}, id="up"),
    ],
    "_backward_contrib_AdaptiveAvgPooling2D": [via("_contrib_AdaptiveAvgPooling2D")],
})


def _roi_align(x, rois, pooled_size, spatial_scale, sample_ratio=-1, position_sensitive=False, aligned=False):
    n, c, h, w = x.shape
    ph, pw = pooled_size
    oc = c // (ph * pw) if position_sensitive else c
    out = np.zeros((len(rois), oc, ph, pw))

    def sample(plane, y, xx):
        if y < -1 or y > h or xx < -1 or xx > w:
            return 0.0
        y, xx = max(y, 0.0), max(xx, 0.0)
        y0, x0 = min(int(y), h - 1), min(int(xx), w - 1)
        y = y0 if y0 == h - 1 else y
        xx = x0 if x0 == w - 1 else xx
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        ly, lx = y - y0, xx - x0
        return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
                + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])

    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        if roi[0] < 0:
            continue  # documented: output 0 (MXNet 1.9.1 zeroes output element r instead)
        b = int(roi[0])
        x1, y1, x2, y2 = roi[1:] * spatial_scale - off
        rw, rh = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1.0), max(y2 - y1, 1.0))
        bh, bw = rh / ph, rw / pw
        gh = sample_ratio if sample_ratio > 0 else int(np.ceil(rh / ph))
        gw = sample_ratio if sample_ratio > 0 else int(np.ceil(rw / pw))
        for i in range(ph):
            for j in range(pw):
                for ch in range(oc):
                    ic = (ch * ph + i) * pw + j if position_sensitive else ch
                    acc = sum(sample(x[b, ic], y1 + i * bh + (iy + 0.5) * bh / gh, x1 + j * bw + (ix + 0.5) * bw / gw)
                              for iy in range(gh) for ix in range(gw))
                    out[r, ch, i, j] = acc / max(gh * gw, 1)
    return out


_ROIS = A([[0, 0.5, 1, 4.3, 5.2], [1, -2, -1, 3, 2.5], [1, 2, 2, 2.2, 2.1], [-1, 0, 0, 3, 3], [0, 5, 4, 9, 8],
           [0, 1, 1, 20, 20]])

TABLE.update({
    # rois inside, partly and fully outside, smaller than a pixel, with batch index -1
    "_contrib_ROIAlign": [
        ref([U(2, 3, 6, 7), _ROIS], _roi_align, {"pooled_size": (2, 3), "spatial_scale": 1.0}, wrt=[0], id="adaptive"),
        ref([U(2, 2, 6, 7), _ROIS], _roi_align, {"pooled_size": (2, 2), "spatial_scale": 0.5, "sample_ratio": 2},
            wrt=[0], id="sample_ratio"),
        ref([U(2, 2, 6, 7), _ROIS], _roi_align, {"pooled_size": (3, 2), "spatial_scale": 0.8, "aligned": True},
            wrt=[0], id="aligned"),
        ref([U(2, 8, 6, 7), _ROIS], _roi_align, {"pooled_size": (2, 2), "spatial_scale": 1.0,
                                                 "position_sensitive": True}, wrt=[0], id="position_sensitive"),
    ],
    "_backward_contrib_ROIAlign": [via("_contrib_ROIAlign")],
})


def _heads_split(x, heads, parts, part):
    """(L, B, heads * parts * D) -> the part-th projection as (B * heads, L, D)."""
    seq, b = x.shape[:2]
    t = x.reshape(seq, b, heads, parts, -1)[:, :, :, part]
    return t.transpose(1, 2, 0, 3).reshape(b * heads, seq, -1)


def _heads_merge(y, heads):
    """(B * heads, L, D) -> (L, B, heads * D)."""
    bh, seq, d = y.shape
    return y.reshape(bh // heads, heads, seq, d).transpose(2, 0, 1, 3).reshape(seq, bh // heads, heads * d)


def _selfatt_qk(qkv, heads):
    q, k = _heads_split(qkv, heads, 3, 0), _heads_split(qkv, heads, 3, 1)
    return q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])


def _selfatt_valatt(qkv, att, heads):
    return _heads_merge(att @ _heads_split(qkv, heads, 3, 2), heads)


def _encdec_qk(q, kv, heads):
    q, k = _heads_split(q, heads, 1, 0), _heads_split(kv, heads, 2, 0)
    return q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])


def _encdec_valatt(kv, att, heads):
    return _heads_merge(att @ _heads_split(kv, heads, 2, 1), heads)


TABLE.update({
    "_contrib_interleaved_matmul_selfatt_qk": [
        ref([U(3, 2, 2 * 3 * 4)], _selfatt_qk, {"heads": 2}, id="heads2"),
        ref([U(4, 1, 3 * 2)], _selfatt_qk, {"heads": 1}, id="heads1"),
    ],
    "_contrib_interleaved_matmul_selfatt_valatt": [
        ref([U(3, 2, 2 * 3 * 4), U(4, 3, 3)], _selfatt_valatt, {"heads": 2}, id="heads2"),
    ],
    "_contrib_interleaved_matmul_encdec_qk": [
        ref([U(3, 2, 2 * 4), U(5, 2, 2 * 2 * 4)], _encdec_qk, {"heads": 2}, id="heads2"),
    ],
    "_contrib_interleaved_matmul_encdec_valatt": [
        ref([U(5, 2, 2 * 2 * 4), U(4, 3, 5)], _encdec_valatt, {"heads": 2}, id="heads2"),
    ],
    "_backward_interleaved_matmul_selfatt_qk": [via("_contrib_interleaved_matmul_selfatt_qk")],
    "_backward_interleaved_matmul_selfatt_valatt": [via("_contrib_interleaved_matmul_selfatt_valatt")],
    "_backward_interleaved_matmul_encdec_qk": [via("_contrib_interleaved_matmul_encdec_qk")],
    "_backward_interleaved_matmul_encdec_valatt": [via("_contrib_interleaved_matmul_encdec_valatt")],
})


# -- mx.nd.image: the _image_* operators (Gluon's vision transforms) ---------------

_IMG_U8 = _rng.randint(0, 256, (5, 6, 3)).astype(np.uint8)
_IMG_F = U(5, 6, 3, lo=0, hi=255)
_IMG_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                     [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                     [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]])


def _img_norm(x, mean, std):
    sh = (-1, 1, 1)
    return (x - np.array(mean).reshape(sh)) / np.array(std).reshape(sh)


def _img_brightness(x, a):
    return x * a


def _img_contrast(x, a):
    mean = (x * np.array([0.299, 0.587, 0.114])).sum() / (x.shape[0] * x.shape[1])
    return x * a + (1 - a) * mean


def _img_saturation(x, a):
    # MXNet 1.9.1 blends with 0.114 * blue (its gray sum assigns instead of adding)
    return x * a + (1 - a) * 0.114 * x[..., 2:3]


def _img_hue(x, a):
    import colorsys
    out = np.empty_like(x, dtype=np.float64)
    for i in np.ndindex(x.shape[:2]):
        h, l, s = colorsys.rgb_to_hls(*(x[i] / 255.0))
        out[i] = np.array(colorsys.hls_to_rgb((h + a) % 1.0, l, s)) * 255
    return out


def _img_resize_ref(x, size, interp=1):
    """OpenCV's float bilinear / nearest resize of an HWC image (size = (w, h))."""
    h, w = x.shape[:2]
    ow, oh = size

    def taps(src, dst, vertical):
        out = []
        for d in range(dst):
            if interp == 0:
                out.append(((min(int(np.floor(d * src / dst)), src - 1), 1.0),))
                continue
            f = (d + 0.5) * src / dst - 0.5
            s = int(np.floor(f))
            fx = f - s
            if not vertical and s < 0:
                s, fx = 0, 0.0
            if not vertical and s >= src - 1:
                s, fx = src - 1, 0.0
            out.append(((min(max(s, 0), src - 1), 1 - fx), (min(max(s + 1, 0), src - 1), fx)))
        return out

    xt, yt = taps(w, ow, False), taps(h, oh, True)
    rows = np.stack([sum(x[:, i] * wt for i, wt in t) for t in xt], axis=1)
    return np.stack([sum(rows[i] * wt for i, wt in t) for t in yt], axis=0)


def _img_seeded(fn, seed):
    mx.random.seed(seed)
    return fn().asnumpy()


def _img_random_flip_check(name, axis):
    def check():
        x = _IMG_U8
        outs = [_img_seeded(lambda: getattr(mx.nd, name)(nd(x)), s) for s in range(12)]
        flipped = [bool((o == np.flip(x, axis)).all()) for o in outs]
        same = [bool((o == x).all()) for o in outs]
        assert all(f or k for f, k in zip(flipped, same)), "output is neither the image nor its flip"
        assert any(flipped) and any(same), (flipped, same)
        again = _img_seeded(lambda: getattr(mx.nd, name)(nd(x)), 3)
        assert (again == outs[3]).all(), "the same seed gives another result"
    return check


def _img_random_factor_check(name, ref_fn, lo, hi, solve):
    """Seeded draws reproduce; each equals the deterministic operator
    (min_factor = max_factor) at the factor the draw used, which lies in
    [lo, hi] and varies between seeds."""
    def check():
        x = _IMG_F
        alphas = []
        for s in range(6):
            out = _img_seeded(lambda: getattr(mx.nd, name)(nd(x), lo, hi), s)
            a = solve(x.astype(np.float64), out.astype(np.float64))
            assert lo - 1e-3 <= a <= hi + 1e-3, (name, a)
            det = getattr(mx.nd, name)(nd(x), min_factor=float(a), max_factor=float(a)).asnumpy()
            assert_almost_equal(out, det, rtol=1e-3, atol=2e-2)
            assert_almost_equal(out, ref_fn(x.astype(np.float64), a), rtol=1e-3, atol=5e-2)
            alphas.append(a)
        assert len(set(np.round(alphas, 4))) > 1, alphas
        again = _img_seeded(lambda: getattr(mx.nd, name)(nd(x), lo, hi), 2)
        assert (again == _img_seeded(lambda: getattr(mx.nd, name)(nd(x), lo, hi), 2)).all()
    return check


def _img_solve_affine(x, out, base):
    """out = a * x + (1 - a) * base: least squares for a."""
    d = (x - base).ravel()
    return float(np.dot(out.ravel() - base.ravel(), d) / np.dot(d, d))


def _img_solve_hue(x, out):
    import colorsys
    i = (0, 0)
    h0 = colorsys.rgb_to_hls(*(x[i] / 255.0))[0]
    h1 = colorsys.rgb_to_hls(*(out[i] / 255.0))[0]
    return float((h1 - h0) % 1.0)


def _img_random_lighting_check():
    x = _IMG_F
    outs = [_img_seeded(lambda: mx.nd.image.random_lighting(nd(x), alpha_std=0.1), s) for s in (1, 2)]
    for o in outs:
        off = (o.astype(np.float64) - x).reshape(-1, 3)
        assert np.abs(off - off[0]).max() < 1e-3, "the offset is not one per channel"
        alpha = np.linalg.solve(_IMG_EIG, off[0])
        assert np.abs(alpha).max() < 0.6, alpha
        det = mx.nd.image.adjust_lighting(nd(x), alpha=tuple(alpha.tolist())).asnumpy()
        assert_almost_equal(o, det, rtol=1e-4, atol=1e-3)
    assert not np.allclose(outs[0], outs[1])
    assert (outs[0] == _img_seeded(lambda: mx.nd.image.random_lighting(nd(x), alpha_std=0.1), 1)).all()


def _img_jitter_check():
    x = _IMG_F
    f = mx.nd.image.random_color_jitter
    a = _img_seeded(lambda: f(nd(x), 0.4, 0.4, 0.4, 0.1), 7)
    assert (a == _img_seeded(lambda: f(nd(x), 0.4, 0.4, 0.4, 0.1), 7)).all()
    assert not np.allclose(a, x)
    # nothing to jitter: a copy
    assert (f(nd(x), 0, 0, 0, 0).asnumpy() == x).all()
    # brightness only: a factor in [0.7, 1.3]
    for s in range(4):
        o = _img_seeded(lambda: f(nd(x), 0.3, 0, 0, 0), s).astype(np.float64)
        k = _img_solve_affine(x.astype(np.float64), o, np.zeros_like(o))
        assert 0.7 - 1e-4 <= k <= 1.3 + 1e-4
        assert_almost_equal(o, x * k, rtol=1e-4, atol=1e-3)


def _pool_v1_avg(x, kernel, stride, pad=(0, 0), **_):
    """MXNet's Pooling_v1 average ('full' convention): window sums over the
    zero-padded input (windows may reach past it) divided by the kernel area."""
    n, c, h, w = x.shape
    oh = -(-(h + 2 * pad[0] - kernel[0]) // stride[0]) + 1
    ow = -(-(w + 2 * pad[1] - kernel[1]) // stride[1]) + 1
    xp = np.zeros((n, c, oh * stride[0] + kernel[0], ow * stride[1] + kernel[1]))
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w] = x
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = xp[:, :, i * stride[0]:i * stride[0] + kernel[0],
                                 j * stride[1]:j * stride[1] + kernel[1]].sum(axis=(2, 3))
    return out / (kernel[0] * kernel[1])


TABLE.update({
    "_image_to_tensor": [
        ref([_IMG_U8], lambda x: x.transpose(2, 0, 1) / 255, odt=np.float32, grad=False, id="uint8"),
        ref([U(2, 4, 3, 1, lo=0, hi=255)], lambda x: x.transpose(0, 3, 1, 2) / 255, grad=False, id="batch"),
    ],
    "_image_normalize": [
        ref([U(3, 4, 5)], lambda x, **k: _img_norm(x, **k), {"mean": (0.1, 0.2, 0.3), "std": (0.5, 2.0, 3.0)}),
        ref([U(2, 3, 2, 3)], lambda x, **k: (x - 0.5) / np.array([0.5, 2.0, 3.0]).reshape(1, 3, 1, 1),
            {"mean": 0.5, "std": (0.5, 2.0, 3.0)}, id="batch"),
        ref([U(1, 3, 2)], lambda x, **k: (x - 0.25) / 4, {"mean": (0.25,), "std": (4,)}, id="gray"),
    ],
    "_image_crop": [
        ref([U(5, 6, 3)], lambda d, **k: d[2:4, 1:4], {"x": 1, "y": 2, "width": 3, "height": 2}),
        ref([U(2, 4, 3, 1)], lambda d, **k: d[:, 0:3, 2:3], {"x": 2, "y": 0, "width": 1, "height": 3},
            id="batch"),
    ],
    "_backward_image_crop": [via("_image_crop")],
    "_image_flip_left_right": [ref([U(3, 4, 3)], lambda x: x[:, ::-1]),
                               ref([_IMG_U8], lambda x: x[:, ::-1], grad=False, id="uint8")],
    "_image_flip_top_bottom": [ref([U(3, 4, 1)], lambda x: x[::-1]),
                               ref([_IMG_U8], lambda x: x[::-1], grad=False, id="uint8")],
    "_image_random_flip_left_right": [prop(_img_random_flip_check("_image_random_flip_left_right", 1))],
    "_image_random_flip_top_bottom": [prop(_img_random_flip_check("_image_random_flip_top_bottom", 0))],
    "_image_random_brightness": [
        ref([_IMG_F], lambda x, **k: _img_brightness(x, 1.4), {"min_factor": 1.4, "max_factor": 1.4},
            grad=False, rtol=1e-5),
        prop(_img_random_factor_check("_image_random_brightness", _img_brightness, 0.5, 1.5,
                                      lambda x, o: _img_solve_affine(x, o, np.zeros_like(o))), id="seeded"),
    ],
    "_image_random_contrast": [
        ref([_IMG_F], lambda x, **k: _img_contrast(x, 0.6), {"min_factor": 0.6, "max_factor": 0.6},
            grad=False, rtol=1e-4),
        prop(_img_random_factor_check(
            "_image_random_contrast", _img_contrast, 0.2, 1.8,
            lambda x, o: _img_solve_affine(x, o, np.full_like(x, _img_contrast(x, 0.0)[0, 0, 0]))), id="seeded"),
    ],
    "_image_random_saturation": [
        ref([_IMG_F], lambda x, **k: _img_saturation(x, 1.5), {"min_factor": 1.5, "max_factor": 1.5},
            grad=False, rtol=1e-4),
        prop(_img_random_factor_check(
            "_image_random_saturation", _img_saturation, 0.0, 2.0,
            lambda x, o: _img_solve_affine(x, o, np.broadcast_to(0.114 * x[..., 2:3], x.shape))), id="seeded"),
    ],
    "_image_random_hue": [
        ref([_IMG_F], lambda x, **k: _img_hue(x, 0.3), {"min_factor": 0.3, "max_factor": 0.3},
            grad=False, rtol=1e-3, atol=1e-2),
        prop(_img_random_factor_check("_image_random_hue", _img_hue, 0.1, 0.6, _img_solve_hue), id="seeded"),
    ],
    "_image_random_color_jitter": [prop(_img_jitter_check, id="seeded")],
    "_image_adjust_lighting": [
        ref([U(3, 4, 3, lo=0, hi=255)], lambda x, **k: x + _IMG_EIG @ np.array([0.3, -1.2, 2.0]),
            {"alpha": (0.3, -1.2, 2.0)}, rtol=1e-5, atol=1e-3),
    ],
    "_image_random_lighting": [prop(_img_random_lighting_check, id="seeded")],
    "_image_resize": [
        ref([U(5, 7, 3)], lambda x, **k: _img_resize_ref(x, (4, 3)), {"size": (4, 3)}, grad=False, rtol=1e-5,
            atol=1e-6, id="shrink"),
        ref([U(4, 3, 2)], lambda x, **k: _img_resize_ref(x, (7, 9)), {"size": (7, 9)}, grad=False, rtol=1e-5,
            atol=1e-6, id="enlarge"),
        ref([U(2, 4, 5, 1)], lambda x, **k: np.stack([_img_resize_ref(i, (3, 3), 0) for i in x]),
            {"size": 3, "interp": 0}, grad=False, id="nearest-batch"),
        ref([U(4, 6, 3)], lambda x, **k: _img_resize_ref(x, (7, 5)), {"size": 5, "keep_ratio": True},
            grad=False, rtol=1e-5, atol=1e-6, id="keep-ratio"),
    ],
    # MXNet's legacy Pooling_v1 (Convolution_v1 is an alias of Convolution)
    "Pooling_v1": [
        ref([U(2, 2, 5, 6)], lambda x, **k: _pool_v1_avg(x, **k),
            {"kernel": (3, 3), "stride": (2, 2), "pool_type": "avg", "pooling_convention": "full"}),
        ref([U(1, 2, 5, 6)], lambda x, **k: _pool_v1_avg(x, **k),
            {"kernel": (2, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg", "pooling_convention": "full"},
            id="pad"),
        ref([U(1, 2, 4, 4)], lambda x, **k: x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)),
            {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, id="max"),
    ],
})


# small MXNet API gaps: cast_storage (dense 'default' storage only; a copy, identity gradient)
TABLE.update({
    "cast_storage": [
        ref([U(3, 4)], lambda x, **k: x, {"stype": "default"}),
        ref([A([[1, -2], [3, 2 ** 40]], dtype=np.int64)], lambda x, **k: x, {"stype": "default"}, grad=False,
            id="int64-exact"),
    ],
})


def test_aliases_resolve_to_entries():
    """Every registered name (aliases included) reaches a table entry, and
    the public ones are callable as mx.nd functions."""
    for n in _native.op_names():
        canon = _native.get_op(n).name
        assert canon in TABLE, f"{n} (alias of {canon}) has no entry"
        if not n.startswith("_"):
            assert callable(getattr(mx.nd, n)), n


def test_table_covers_registry():
    names = _canonical_names()
    missing = sorted(names - set(TABLE))
    extra = sorted(set(TABLE) - names)
    assert not missing, f"operators without an entry in TABLE: {missing}"
    assert not extra, f"TABLE entries that are not registered operators (or are aliases): {extra}"
    for n, cases in TABLE.items():
        assert cases, f"{n}: empty entry"


def _params(grad):
    out = []
    for name in sorted(TABLE):
        for k, c in enumerate(TABLE[name]):
            if grad and not (c["kind"] == "ref" and c["grad"]):
                continue
            reason = c.get("xfail_grad") if grad else c.get("xfail")
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, c, id=f"{name}-{c['id'] or k}", marks=marks))
    return out


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _run_ref(name, c):
    ins, params = c["ins"], c["params"]
    ins64 = [x.astype(np.float64) if x.dtype.kind == "f" else x for x in ins]
    expected = _as_list(c["fn"](*[x.copy() for x in ins64], **params))
    arrays = [nd(x) for x in ins]
    if c["train"]:
        # Recorded in training mode, then backward: MXNet 1.9.1 on CPU updates
        # BatchNorm's moving statistics in the backward pass (cuDNN in the forward).
        for i in _grad_inputs(c):
            arrays[i].attach_grad()
        with mx.autograd.record():
            got = _as_list(getattr(mx.nd, name)(*arrays, **params))
        mx.autograd.backward(got)
    else:
        got = _as_list(getattr(mx.nd, name)(*arrays, **params))
    mutated = c["mutated"]
    # The reference lists the outputs, then the new values of mutated state inputs.
    n_out = len(expected) - len({k for k in mutated.values() if k > 0})
    assert len(got) == n_out, f"{name}: {len(got)} outputs, the reference has {n_out}"
    odts = _as_list(c["odt"]) if c["odt"] is not None else [ins[0].dtype if ins else np.float32]
    odts = odts * n_out if len(odts) == 1 else odts
    for k, (g, dt) in enumerate(zip(got, odts)):
        e = np.asarray(expected[k])
        assert g.shape == e.shape, f"{name}: output {k} shape {g.shape}, reference {e.shape}"
        assert np.dtype(g.dtype) == np.dtype(dt), f"{name}: output {k} dtype {np.dtype(g.dtype)}, expected {dt}"
        assert_almost_equal(g, e.astype(dt), rtol=c["rtol"], atol=c["atol"], names=(name, "numpy"), equal_nan=True)
    for i, k in mutated.items():
        e = np.asarray(expected[k])
        assert_almost_equal(arrays[i], e.astype(arrays[i].dtype), rtol=c["rtol"], atol=c["atol"],
                            names=(f"{name} input {i}", "numpy"))


def _grad_inputs(c):
    ins = c["ins"]
    return c["wrt"] if c["wrt"] is not None else [i for i, x in enumerate(ins) if x.dtype.kind == "f"]


def _check_grad(name, c):
    ins, params = c["ins"], c["params"]
    wrt = _grad_inputs(c)
    fixed = [nd(x.astype(np.float64) if x.dtype.kind == "f" else x) for x in ins]

    def f(*xs):
        full = list(fixed)
        for i, x in zip(wrt, xs):
            full[i] = x
        return getattr(mx.nd, name)(*full, **params)

    check_numeric_gradient(f, [ins[i].astype(np.float64) for i in wrt], dtype=np.float64,
                           rtol=c["grtol"], atol=c["gatol"])


@pytest.mark.parametrize("name,case", _params(grad=False))
def test_forward(name, case, request):
    """Forward against the NumPy reference (or the case's property)."""
    kind = case["kind"]
    if kind == "prop":
        case["fn"]()
    elif kind == "via":
        _check_via(name, case["op"], request.getfixturevalue("tmp_path"))
    else:
        _run_ref(name, case)


@pytest.mark.parametrize("name,case", _params(grad=True))
def test_gradient(name, case):
    """Autograd gradient against central differences in float64."""
    _check_grad(name, case)


def _check_via(name, op, tmp_path):
    """The gradient of ``op``'s cases (numerically checked in their own
    test) dispatches ``name``."""
    cases = [c for c in TABLE[op] if c["kind"] in ("ref", "prop")]
    assert cases, f"{name}: {op} has no case to go through"
    mx.profiler.set_config(profile_imperative=True, aggregate_stats=True, filename=str(tmp_path / "via.json"))
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    try:
        for c in cases:
            if c["kind"] == "prop":
                c["fn"]()
                continue
            ins = [nd(x) for x in c["ins"]]
            for i in _grad_inputs(c):
                ins[i].attach_grad()
            with mx.autograd.record():
                outs = _as_list(getattr(mx.nd, op)(*ins, **c["params"]))
            mx.autograd.backward(outs)
        mx.nd.waitall()
    finally:
        mx.profiler.set_state("stop")
        table = mx.profiler.dumps(reset=True)
        # Back to the defaults, except the file the exit dump writes: not the working directory.
        mx.profiler.set_config(filename=str(tmp_path / "leftover.json"))
    assert f"\n{name} " in table, f"{name}: not dispatched by the gradient of {op}\n{table}"


def _consistency_params():
    out = []
    for name in sorted(TABLE):
        for k, c in enumerate(TABLE[name]):
            # Operators whose output dtype follows their inputs (not Cast to a fixed dtype).
            if (c["kind"] == "ref" and c["grad"] and c["odt"] is None and c["ins"]
                    and all(x.dtype == np.float32 for x in c["ins"])):
                out.append(pytest.param(name, c, id=f"{name}-{c['id'] or k}"))
    return out


@pytest.mark.parametrize("name,case", _consistency_params())
def test_dtype_consistency(name, case):
    """float64, float32 and float16 agree (outputs and gradients) within
    MXNet's per-dtype tolerances: mx.test_utils.check_consistency."""
    ins, params = case["ins"], case["params"]
    names = [f"arg{i}" for i in range(len(ins))]
    wrt = set(_grad_inputs(case))

    def f(**kw):
        return getattr(mx.nd, name)(*[kw[n] for n in names], **params)

    ctx_list = [{"ctx": mx.cpu(0), **{n: x.shape for n, x in zip(names, ins)},
                 "type_dict": {n: t for n in names}} for t in (np.float64, np.float32, np.float16)]
    check_consistency(f, ctx_list, arg_params={n: x for n, x in zip(names, ins)},
                      grad_req={n: "write" if i in wrt else "null" for i, n in enumerate(names)})


# -- the same cases run symbolically -------------------------------------------
# Each reference case is built as mx.sym.<op> over variables in0, in1, ...,
# bound and run by an Executor, and compared with the imperative result (the
# outputs, the inputs an operator updates in place, and the gradients for
# random head gradients where the case checks a gradient). A failure here
# with the imperative case passing is a bug of the symbolic path (shape or
# dtype inference, binding, the executor, the gradient pass).

# Known failures of the symbolic path: "op-case id" -> reason (strict: the
# test fails once fixed, so remove the entry then).
SYMBOLIC_XFAIL = {}


def _symbolic_xfail(name, c):
    """The reason a case is expected to fail symbolically, or None."""
    return None


def _symbolic_params():
    out = []
    for name in sorted(TABLE):
        for k, c in enumerate(TABLE[name]):
            if c["kind"] != "ref":
                continue
            pid = f"{name}-{c['id'] or k}"
            reason = SYMBOLIC_XFAIL.get(pid) or _symbolic_xfail(name, c)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, c, id=pid, marks=marks))
    return out


def _imperative(name, c, heads=None):
    """(outputs, arrays after the call, gradients of the inputs in ``wrt``)
    of the imperative call; with ``heads``, recorded in training mode and
    differentiated with those head gradients."""
    arrays = [nd(x) for x in c["ins"]]
    wrt = _grad_inputs(c) if heads is not None or c["train"] else []
    for i in wrt:
        arrays[i].attach_grad()
    if heads is not None or c["train"]:
        with mx.autograd.record(train_mode=True):
            outs = _as_list(getattr(mx.nd, name)(*arrays, **c["params"]))
        mx.autograd.backward(outs, heads if heads is not None else None)
    else:
        outs = _as_list(getattr(mx.nd, name)(*arrays, **c["params"]))
    return outs, arrays, {i: arrays[i].grad for i in wrt}


@pytest.mark.parametrize("name,case", _symbolic_params())
def test_symbolic(name, case):
    """mx.sym.<op> bound and run by an Executor gives the imperative results
    (mx.test_utils.check_symbolic_forward / check_symbolic_backward)."""
    from oxnet.test_utils import check_symbolic_backward, check_symbolic_forward

    ins, params = case["ins"], case["params"]
    names = [f"in{i}" for i in range(len(ins))]
    sym = getattr(mx.sym, name)(*[mx.sym.var(n) for n in names], **params)
    arg_names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    assert sorted(arg_names + aux_names) == sorted(names), \
        f"{name}: the symbol's inputs are {arg_names} + aux {aux_names}, expected {names}"
    values = dict(zip(names, ins))
    location = {n: values[n] for n in arg_names}
    aux = {n: values[n] for n in aux_names} or None
    tol = dict(rtol=case["rtol"], atol=case["atol"])

    outs, arrays, _ = _imperative(name, case)
    expected = [o.asnumpy() for o in outs]
    # shape and dtype inference from every input's shape / dtype
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**{n: x.shape for n, x in values.items()})
    assert out_shapes == [e.shape for e in expected], f"{name}: inferred output shapes {out_shapes}"
    assert arg_shapes == [values[n].shape for n in arg_names] and aux_shapes == [values[n].shape for n in aux_names]
    _, out_types, _ = sym.infer_type(**{n: x.dtype for n, x in values.items()})
    assert [np.dtype(t) for t in out_types] == [e.dtype for e in expected], f"{name}: inferred dtypes {out_types}"
    if case["train"] or aux_names:
        # the inputs updated in place are auxiliary states: compare them too
        exe = sym.bind(mx.cpu(), {n: nd(values[n]) for n in arg_names},
                       args_grad={n: mx.nd.zeros(values[n].shape, dtype=values[n].dtype) for n in arg_names
                                  if values[n].dtype.kind == "f"} if case["train"] else None,
                       aux_states={n: nd(values[n]) for n in aux_names})
        got = exe.forward(is_train=case["train"])
        if case["train"]:
            exe.backward()
        assert len(got) == len(expected), f"{name}: {len(got)} outputs, imperative {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert (g.shape, g.dtype) == (e.shape, e.dtype), \
                f"{name}: output {k} is {g.shape} {g.dtype}, imperative {e.shape} {e.dtype}"
            assert_almost_equal(g, e, names=(f"symbolic output {k}", "imperative"), equal_nan=True, **tol)
        for n in aux_names:
            assert_almost_equal(exe.aux_dict[n], arrays[names.index(n)], names=(f"symbolic {n}", "imperative"),
                                equal_nan=True, **tol)
    else:
        got = check_symbolic_forward(sym, location, expected, aux_states=aux, equal_nan=True, dtype="asnumpy", **tol)
        assert len(got) == len(expected), f"{name}: {len(got)} outputs, imperative {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert (g.shape, g.dtype) == (e.shape, e.dtype), \
                f"{name}: output {k} is {g.shape} {g.dtype}, imperative {e.shape} {e.dtype}"

    if not case["grad"]:
        return
    wrt = [i for i in _grad_inputs(case) if names[i] in arg_names]
    if not wrt:
        return
    rs = np.random.RandomState(0)
    heads = [rs.uniform(-1, 1, e.shape).astype(e.dtype) for e in expected]
    _, _, grads = _imperative(name, case, heads=[nd(h) for h in heads])
    check_symbolic_backward(sym, location, heads, {names[i]: grads[i].asnumpy() for i in wrt}, aux_states=aux,
                            grad_req={names[i]: "write" for i in wrt}, dtype="asnumpy", equal_nan=True)


# Loss heads (their gradient is the loss gradient, head gradients ignored) and
# gradient stoppers: the executor's backward without out_grads, as MXNet's
# training loops call it, gives the imperative autograd gradient.
_SYMBOLIC_HEADS = [
    ("SoftmaxOutput", [U(3, 4), A([1, 0, 3])], {"grad_scale": 0.5}),
    ("SoftmaxOutput", [U(2, 3, 4), A([[1, 0, 2, 2], [0, 1, 1, 2]])], {"multi_output": True}),
    ("SoftmaxOutput", [U(4, 3), A([1, -1, 2, 0])], {"use_ignore": True, "ignore_label": -1, "normalization": "valid"}),
    ("LinearRegressionOutput", [U(3, 2), U(3, 2)], {"grad_scale": 2.0}),
    ("LogisticRegressionOutput", [U(3, 2), U(3, 2)], {}),
    ("MAERegressionOutput", [U(3, 2), U(3, 2)], {}),
    ("SVMOutput", [U(3, 4), A([1, 0, 3])], {"margin": 0.5}),
    ("MakeLoss", [U(2, 3)], {"grad_scale": 3.0}),
    ("make_loss", [U(2, 3)], {}),
    ("BlockGrad", [U(2, 3)], {}),
]


@pytest.mark.parametrize("name,ins,params", [pytest.param(*c, id=f"{c[0]}-{k}") for k, c in enumerate(_SYMBOLIC_HEADS)])
def test_symbolic_loss_heads(name, ins, params):
    arrays = [nd(x) for x in ins]
    arrays[0].attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, name)(*arrays, **params)
    out.backward()
    names = [f"in{i}" for i in range(len(ins))]
    sym = getattr(mx.sym, name)(*[mx.sym.var(n) for n in names], **params)
    assert sym.list_arguments() == names
    grad = mx.nd.zeros(ins[0].shape)
    exe = sym.bind(mx.cpu(), [nd(x) for x in ins], args_grad={"in0": grad})
    exe.forward(is_train=True)
    exe.backward()
    assert_almost_equal(exe.outputs[0], out, names=("symbolic", "imperative"))
    assert_almost_equal(grad, arrays[0].grad, names=("symbolic gradient", "imperative gradient"))
    # ... and with the executor's own gradient arrays (simple_bind)
    exe = sym.simple_bind(mx.cpu(), **{n: x.shape for n, x in zip(names, ins)})
    exe.forward(is_train=True, **{n: x for n, x in zip(names, ins)})
    exe.backward()
    assert_almost_equal(exe.grad_dict["in0"], arrays[0].grad, names=("simple_bind gradient", "imperative gradient"))


# Samplers: same output shapes and dtypes symbolically (the values are random).
_SYMBOLIC_SAMPLERS = [
    ("_random_uniform", [], {"low": -1, "high": 2, "shape": (3, 4)}),
    ("_random_normal", [], {"shape": (2, 5), "dtype": "float64"}),
    ("_random_randint", [], {"low": 0, "high": 9, "shape": (4,), "dtype": "int32"}),
    ("_random_gamma", [], {"alpha": 2.0, "beta": 1.5, "shape": (6,)}),
    ("_random_poisson", [], {"lam": 3.0, "shape": (2, 2)}),
    ("_random_uniform_like", [U(2, 3)], {}),
    ("_random_normal_like", [U(3, 1)], {"loc": 1.0, "scale": 0.5}),
    ("_sample_normal", [U(2, lo=0), U(2, lo=0.5)], {"shape": (3,)}),
    ("_sample_uniform", [A([0.0, 1.0]), A([1.0, 3.0])], {}),
    ("_sample_multinomial", [A([[0.2, 0.8], [0.5, 0.5]])], {"shape": (3,)}),
    ("_shuffle", [U(5, 2)], {}),
]


@pytest.mark.parametrize("name,ins,params", [pytest.param(*c, id=f"{c[0]}-{k}")
                                             for k, c in enumerate(_SYMBOLIC_SAMPLERS)])
def test_symbolic_samplers(name, ins, params):
    outs = _as_list(getattr(mx.nd, name)(*[nd(x) for x in ins], **params))
    names = [f"in{i}" for i in range(len(ins))]
    sym = getattr(mx.sym, name)(*[mx.sym.var(n) for n in names], **params)
    _, out_shapes, _ = sym.infer_shape(**{n: x.shape for n, x in zip(names, ins)})
    assert out_shapes == [o.shape for o in outs]
    got = sym.bind(mx.cpu(), [nd(x) for x in ins]).forward()
    assert [(g.shape, g.dtype) for g in got] == [(o.shape, o.dtype) for o in outs]
    if name == "_shuffle":
        assert sorted(got[0].asnumpy()[:, 0]) == sorted(ins[0][:, 0])
