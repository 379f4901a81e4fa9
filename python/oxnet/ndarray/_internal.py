"""``mx.nd._internal``: MXNet's namespace for internal operators (names that
start with an underscore, such as ``_plus_scalar`` or ``_slice_assign``).

Every registered operator resolves here as in ``mx.nd``; returns the same
callables."""
from . import op as _op


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_op, name)
