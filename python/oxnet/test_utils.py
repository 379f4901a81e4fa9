"""Testing helpers with MXNet's names and behaviour (the subset that does
not need the symbolic API)."""
from __future__ import annotations

import numpy as np

from .context import Context, current_context
from .ndarray.ndarray import NDArray, array

_default_ctx = None


def default_context():
    """The context tests run on (``cpu(0)`` unless set)."""
    return _default_ctx or current_context()


def set_default_context(ctx):
    """Set the context :func:`default_context` returns."""
    global _default_ctx
    if not isinstance(ctx, Context):
        raise TypeError("set_default_context: ctx must be a Context")
    _default_ctx = ctx


def _as_np(a):
    return a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)


def _default_tols(a, b):
    dt = np.result_type(a.dtype, b.dtype)
    if dt == np.float16:
        return 1e-2, 1e-2
    if dt == np.float64:
        return 1e-5, 1e-7
    return 1e-4, 1e-5


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False):
    """True when every element of a and b (NDArrays or NumPy) is close."""
    a, b = _as_np(a), _as_np(b)
    r, t = _default_tols(a, b)
    return bool(np.allclose(a, b, rtol=r if rtol is None else rtol, atol=t if atol is None else atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False):
    """Raise AssertionError, showing the worst element, unless a and b are close."""
    a, b = _as_np(a), _as_np(b)
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch: {names[0]}{a.shape} vs {names[1]}{b.shape}")
    r, t = _default_tols(a, b)
    rtol = r if rtol is None else rtol
    atol = t if atol is None else atol
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    rel = diff / (np.abs(b.astype(np.float64)) + atol)
    idx = np.unravel_index(np.nanargmax(rel), rel.shape) if rel.size else ()
    raise AssertionError(
        f"Items are not equal (rtol={rtol}, atol={atol}): worst at {idx}: "
        f"{names[0]}={a[idx]!r} {names[1]}={b[idx]!r}\n{names[0]}: {a}\n{names[1]}: {b}"
    )


def same(a, b):
    """True when a and b have identical shapes and values."""
    return bool(np.array_equal(_as_np(a), _as_np(b)))


def rand_shape_2d(dim0=10, dim1=10):
    """A random 2-D shape with sizes in [1, dim]."""
    return np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10):
    """A random 3-D shape with sizes in [1, dim]."""
    return np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1), np.random.randint(1, dim2 + 1)


def rand_shape_nd(num_dim, dim=10):
    """A random shape of ``num_dim`` sizes in [1, dim]."""
    return tuple(np.random.randint(1, dim + 1, size=num_dim))


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None):
    """A dense NDArray of uniform random values in [0, 1)."""
    if stype != "default":
        raise ValueError(f"rand_ndarray: storage type '{stype}' is not supported (only 'default')")
    return array(np.random.uniform(size=shape), ctx=ctx or default_context(), dtype=dtype or "float32")
