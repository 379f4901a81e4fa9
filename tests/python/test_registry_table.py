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
