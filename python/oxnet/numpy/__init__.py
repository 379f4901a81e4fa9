"""``mx.np`` (MXNet's NumPy-compatible array interface): not built in oxnet.

oxnet has MXNet's classic ``mx.nd`` API only. What exists here is what code and tests touch
when they merely *check* for NumPy-mode arrays:

- ``ndarray``: the class of NumPy-mode arrays. No oxnet array is an instance of it, so
  ``isinstance(x, mx.np.ndarray)`` is always False; creating one raises NotBuiltError.

Any other public name (``mx.np.ones``, ``mx.np.random``, ...) raises NotBuiltError, naming
the function, instead of a bare AttributeError.
"""
from ..base import NotBuiltError

__all__ = ["ndarray"]

_MSG = ("mx.np.{}: MXNet's NumPy-compatible interface (mx.np / mx.npx) is not built in oxnet; "
        "use the classic mx.nd API")


class ndarray:  # noqa: N801 (MXNet's name)
    """The class of MXNet NumPy-mode arrays. oxnet has none: constructing one raises
    NotBuiltError; ``isinstance(a, ndarray)`` is False for every oxnet array."""

    def __new__(cls, *args, **kwargs):
        raise NotBuiltError(_MSG.format("ndarray"))


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
    raise NotBuiltError(_MSG.format(name))
