"""``mx.sym.np`` (symbols of MXNet's NumPy-compatible interface): not built in oxnet.

oxnet has MXNet's classic ``mx.sym`` API only. What exists here is what code and tests
touch when they merely *check* for NumPy-mode symbols (MXNet's ``test_utils`` does
``isinstance(sym, mxnet.symbol.numpy._Symbol)`` in ``check_numeric_gradient``):

- ``_Symbol``: the class of NumPy-mode symbols. No oxnet symbol is an instance of it, so
  the check is always False; creating one raises NotBuiltError.

Any other public name raises NotBuiltError, naming it, instead of a bare AttributeError.
"""
from ..base import NotBuiltError
from .symbol import Symbol

_MSG = ("mx.sym.np.{}: MXNet's NumPy-compatible interface (mx.np / mx.sym.np) is not built in oxnet; "
        "use the classic mx.sym API")


class _Symbol(Symbol):
    """The class of MXNet NumPy-mode symbols. oxnet has none: constructing one raises
    NotBuiltError; ``isinstance(s, _Symbol)`` is False for every oxnet symbol."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise NotBuiltError(_MSG.format("_Symbol"))


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
    raise NotBuiltError(_MSG.format(name))
