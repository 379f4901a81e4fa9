"""Random number generation (``mx.random``): seeding and samplers.

Each context has its own generator; random operators run in push order on
it, so a seed reproduces the same numbers whatever the thread count.
"""
from __future__ import annotations

from . import _native
from .context import Context, current_context


def seed(seed_state, ctx="all"):
    """Seed the generator of ``ctx`` (a Context) or of every context ('all')."""
    if not isinstance(seed_state, int):
        raise ValueError(f"seed: seed_state must be an int, got {type(seed_state).__name__}")
    if ctx == "all":
        _native.random_seed(seed_state & 0xFFFFFFFFFFFFFFFF, None, 0)
    else:
        if not isinstance(ctx, Context):
            raise TypeError("seed: ctx must be a Context or 'all'")
        _native.random_seed(seed_state & 0xFFFFFFFFFFFFFFFF, ctx.device_typeid, ctx.device_id)


def _sample(opname, shape, dtype, ctx, out, **params):
    from .ndarray.ndarray import imperative_invoke

    if isinstance(shape, int):
        shape = (shape,)
    if out is not None:
        shape = out.shape
        dtype = out._dtype_name if dtype is None else dtype
    kw = dict(params)
    kw["shape"] = tuple(shape) if shape is not None else (1,)
    if dtype is not None:
        kw["dtype"] = dtype
    return imperative_invoke(opname, [], kw, out=out, ctx=ctx or current_context())


def _number(fn, arg, value):
    # MXNet also takes NDArrays here (one distribution per element); oxnet
    # has no such samplers yet, and a one-element NDArray must not be read
    # as a number without a word.
    from .ndarray.ndarray import NDArray

    if isinstance(value, NDArray):
        raise TypeError(
            f"{fn}: {arg} must be a number; NDArray distribution parameters (one distribution per element) "
            "are not supported"
        )
    return value


def uniform(low=0, high=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (numbers). Returns an NDArray of ``shape``
    (float32 unless ``dtype`` says otherwise) on ``ctx``, or writes ``out``."""
    low, high = _number("uniform", "low", low), _number("uniform", "high", high)
    return _sample("_random_uniform", shape, dtype, ctx, out, low=float(low), high=float(high))


def normal(loc=0, scale=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2) (numbers). Returns an NDArray of ``shape``
    (float32 unless ``dtype`` says otherwise) on ``ctx``, or writes ``out``."""
    loc, scale = _number("normal", "loc", loc), _number("normal", "scale", scale)
    return _sample("_random_normal", shape, dtype, ctx, out, loc=float(loc), scale=float(scale))


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2) in an array of shape ``shape`` given as
    separate integers (``randn(2, 3)``; no integers: shape (1,)). Returns an
    NDArray (float32 unless ``dtype`` says otherwise) on ``ctx``."""
    return normal(loc, scale, shape=shape or (1,), dtype=dtype, ctx=ctx, out=out)


def randint(low, high, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Integers uniform in [low, high) (int32 by default). Returns an NDArray
    of ``shape`` on ``ctx``, or writes ``out``."""
    low, high = _number("randint", "low", low), _number("randint", "high", high)
    return _sample("_random_randint", shape, dtype or "int32", ctx, out, low=int(low), high=int(high))


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    from .ndarray.ndarray import imperative_invoke

    return imperative_invoke("_shuffle", [data], {}, **kwargs)
