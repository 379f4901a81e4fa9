"""Random number generation (``mx.random``): seeding and samplers.

Each context has its own generator; random operators run in push order on
it, so a seed reproduces the same numbers whatever the thread count.
"""
from __future__ import annotations

from . import _native
from .base import integer_types, numeric_types
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


_NULL = object()  # an argument left out (MXNet's _Null)


def _shape_tuple(shape):
    if isinstance(shape, integer_types):
        return (int(shape),)
    return tuple(shape)


def _sample(opname, shape, dtype, ctx, out, **params):
    from .ndarray.ndarray import imperative_invoke

    if shape is _NULL or shape is None:
        shape = (1,)
    if out is not None:
        shape = out.shape
        dtype = out._dtype_name if dtype is None else dtype
    kw = dict(params)
    kw["shape"] = _shape_tuple(shape) or (1,)
    if dtype is not None:
        kw["dtype"] = dtype
    return imperative_invoke(opname, [], kw, out=out, ctx=ctx or current_context())


def _random_helper(random_op, sample_op, names, params, shape, dtype, ctx, out):
    """MXNet's ``_random_helper``: NDArray parameters (all of them) draw one
    distribution per element with ``sample_op`` (output shape = parameter
    shape + ``shape``); numbers (all of them) draw ``shape`` samples of one
    distribution with ``random_op`` on ``ctx``. Mixing the two raises
    AssertionError as in MXNet; anything else raises ValueError."""
    from .ndarray.ndarray import NDArray, imperative_invoke

    def same_type(check):
        for p in params[1:]:
            if not check(p):
                raise AssertionError(
                    "Distribution parameters must all have the same type, but got both "
                    f"{type(params[0])} and {type(p)}."
                )

    if isinstance(params[0], NDArray):
        same_type(lambda p: isinstance(p, NDArray))
        if sample_op is None:
            raise TypeError(f"{random_op}: the parameters must be numbers, got NDArrays")
        kw = {}
        if shape is not _NULL and shape is not None:
            kw["shape"] = _shape_tuple(shape)
        if dtype is not None:
            kw["dtype"] = dtype
        return imperative_invoke(sample_op, list(params), kw, out=out)
    if isinstance(params[0], numeric_types) and not isinstance(params[0], bool):
        same_type(lambda p: isinstance(p, numeric_types))
        return _sample(random_op, shape, dtype, ctx, out, **dict(zip(names, params)))
    raise ValueError(f"Distribution parameters must be either NDArray or numbers, but got {type(params[0])}.")


def uniform(low=0, high=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the uniform distribution on [low, high).

    ``low`` and ``high`` are numbers (an NDArray of ``shape``, default (1,),
    on ``ctx``) or NDArrays of one shape (one distribution per element: the
    result has shape ``low.shape + shape``). dtype: float16, float32 (default)
    or float64. ``out``: write the result there. Returns an NDArray."""
    return _random_helper("_random_uniform", "_sample_uniform", ("low", "high"), [low, high], shape, dtype, ctx, out)


def normal(loc=0, scale=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the normal distribution with mean ``loc`` and standard
    deviation ``scale`` (numbers, or NDArrays of one shape giving one
    distribution per element: result shape ``loc.shape + shape``). Returns an
    NDArray (float32 unless ``dtype`` says otherwise)."""
    return _random_helper("_random_normal", "_sample_normal", ("loc", "scale"), [loc, scale], shape, dtype, ctx, out)


def randn(*shape, **kwargs):
    """Samples from the normal distribution N(loc, scale**2) (keywords
    ``loc``, ``scale``: numbers or NDArrays) in an array of shape ``shape``
    given as separate integers (``randn(2, 3)``; none: shape (1,)); keywords
    dtype, ctx, out as in :func:`normal`. Returns an NDArray."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", None)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    return _random_helper("_random_normal", "_sample_normal", ("loc", "scale"), [loc, scale], shape, dtype, ctx, out)


def poisson(lam=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the Poisson distribution with rate ``lam`` (a number >= 0,
    or an NDArray: one distribution per element, result shape
    ``lam.shape + shape``). The counts come as floating point numbers
    (float32 unless ``dtype`` says otherwise). Returns an NDArray."""
    return _random_helper("_random_poisson", "_sample_poisson", ("lam",), [lam], shape, dtype, ctx, out)


def exponential(scale=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with scale ``scale`` (the
    mean, 1/rate; a number or an NDArray: one distribution per element, result
    shape ``scale.shape + shape``). Returns an NDArray (float32 unless
    ``dtype`` says otherwise)."""
    return _random_helper("_random_exponential", "_sample_exponential", ("lam",), [1.0 / scale], shape, dtype, ctx,
                          out)


def gamma(alpha=1, beta=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale
    ``beta`` (numbers, or NDArrays of one shape: one distribution per element,
    result shape ``alpha.shape + shape``). Returns an NDArray (float32 unless
    ``dtype`` says otherwise)."""
    return _random_helper("_random_gamma", "_sample_gamma", ("alpha", "beta"), [alpha, beta], shape, dtype, ctx, out)


def negative_binomial(k=1, p=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the negative binomial distribution: failures before the
    ``k``-th success when each trial succeeds with probability ``p`` (numbers,
    or NDArrays of one shape: one distribution per element, result shape
    ``k.shape + shape``). Floating point counts (float32 unless ``dtype`` says
    otherwise). Returns an NDArray."""
    return _random_helper("_random_negative_binomial", "_sample_negative_binomial", ("k", "p"), [k, p], shape, dtype,
                          ctx, out)


def generalized_negative_binomial(mu=1, alpha=1, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the generalized negative binomial distribution with mean
    ``mu`` and dispersion ``alpha`` (variance mu + alpha mu**2; numbers, or
    NDArrays of one shape: one distribution per element, result shape
    ``mu.shape + shape``). Floating point counts. Returns an NDArray."""
    return _random_helper("_random_generalized_negative_binomial", "_sample_generalized_negative_binomial",
                          ("mu", "alpha"), [mu, alpha], shape, dtype, ctx, out)


def multinomial(data, shape=_NULL, get_prob=False, out=None, dtype="int32", **kwargs):
    """Draws from the multinomial distributions whose probabilities (summing
    to 1) lie on the last axis of ``data``: ``shape`` draws per distribution
    (one when left out). Returns the outcome indices (shape
    ``data.shape[:-1] + shape``, dtype int32 by default), and with
    ``get_prob=True`` also their log-probabilities, a list of two NDArrays;
    the gradient of the log-probabilities flows to ``data`` (REINFORCE)."""
    from .ndarray.ndarray import imperative_invoke

    kw = {"get_prob": bool(get_prob), "dtype": dtype}
    if shape is not _NULL and shape is not None:
        kw["shape"] = _shape_tuple(shape)
    return imperative_invoke("_sample_multinomial", [data], kw, out=out)


def randint(low, high, shape=_NULL, dtype=None, ctx=None, out=None, **kwargs):
    """Integers uniform in [low, high) (numbers; int32 by default, or int64).
    Returns an NDArray of ``shape`` (default (1,)) on ``ctx``, or writes
    ``out``."""
    return _random_helper("_random_randint", None, ("low", "high"), [low, high], shape, dtype or "int32", ctx, out)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    from .ndarray.ndarray import imperative_invoke

    return imperative_invoke("_shuffle", [data], {}, **kwargs)
