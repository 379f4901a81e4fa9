"""Random samplers as ``mx.nd.random.*`` (MXNet's ``mxnet.ndarray.random``):
the same functions as :mod:`oxnet.random`, drawn from the generator of the
context the result is made on (seed it with ``mx.random.seed``), and the
``*_like`` samplers that take the shape and dtype of an array."""
from ..random import (  # noqa: F401
    exponential,
    gamma,
    generalized_negative_binomial,
    multinomial,
    negative_binomial,
    normal,
    poisson,
    randint,
    randn,
    shuffle,
    uniform,
)

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial", "negative_binomial",
           "generalized_negative_binomial", "shuffle", "randint", "uniform_like", "normal_like", "exponential_like",
           "gamma_like", "poisson_like", "negative_binomial_like", "generalized_negative_binomial_like"]


def _like(opname, data, out, params):
    from .ndarray import imperative_invoke

    return imperative_invoke(opname, [data], {k: v for k, v in params.items() if v is not None}, out=out)


def uniform_like(data=None, low=None, high=None, out=None, name=None, **kwargs):
    """Samples from U[low, high) (defaults 0, 1) into a new array of
    ``data``'s shape and dtype (a float dtype). Returns an NDArray."""
    return _like("_random_uniform_like", data, out, {"low": low, "high": high})


def normal_like(data=None, loc=None, scale=None, out=None, name=None, **kwargs):
    """Samples from N(loc, scale**2) (defaults 0, 1) into a new array of
    ``data``'s shape and dtype. Returns an NDArray."""
    return _like("_random_normal_like", data, out, {"loc": loc, "scale": scale})


def exponential_like(data=None, lam=None, out=None, name=None, **kwargs):
    """Samples from the exponential distribution with rate ``lam`` (default
    1) into a new array of ``data``'s shape and dtype. Returns an NDArray."""
    return _like("_random_exponential_like", data, out, {"lam": lam})


def gamma_like(data=None, alpha=None, beta=None, out=None, name=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale
    ``beta`` (defaults 1, 1) into a new array of ``data``'s shape and dtype.
    Returns an NDArray."""
    return _like("_random_gamma_like", data, out, {"alpha": alpha, "beta": beta})


def poisson_like(data=None, lam=None, out=None, name=None, **kwargs):
    """Samples from the Poisson distribution with rate ``lam`` (default 1)
    into a new array of ``data``'s shape and dtype. Returns an NDArray."""
    return _like("_random_poisson_like", data, out, {"lam": lam})


def negative_binomial_like(data=None, k=None, p=None, out=None, name=None, **kwargs):
    """Samples from the negative binomial distribution (``k`` failures limit,
    success probability ``p``; defaults 1, 1) into a new array of ``data``'s
    shape and dtype. Returns an NDArray."""
    return _like("_random_negative_binomial_like", data, out, {"k": k, "p": p})


def generalized_negative_binomial_like(data=None, mu=None, alpha=None, out=None, name=None, **kwargs):
    """Samples from the generalized negative binomial distribution (mean
    ``mu``, dispersion ``alpha``; defaults 1, 1) into a new array of
    ``data``'s shape and dtype. Returns an NDArray."""
    return _like("_random_generalized_negative_binomial_like", data, out, {"mu": mu, "alpha": alpha})
