"""Random samplers as ``mx.nd.random.*`` (MXNet's ``mxnet.ndarray.random``):
the same functions as :mod:`oxnet.random`, drawn from the generator of the
context the result is made on (seed it with ``mx.random.seed``)."""
from ..random import normal, randint, randn, shuffle, uniform  # noqa: F401

__all__ = ["uniform", "normal", "randn", "randint", "shuffle"]
