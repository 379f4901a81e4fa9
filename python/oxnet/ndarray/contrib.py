"""``mx.nd.contrib`` (MXNet's ``mxnet.ndarray.contrib``): the operators MXNet
registers as ``_contrib_<name>``, under their short names, e.g.
``mx.nd.contrib.ctc_loss`` / ``mx.nd.contrib.CTCLoss``. A contrib name that
is an alias of a public operator resolves to that operator's function (same
argument order and checks)."""
from .. import _native
from . import op

_PREFIX = "_contrib_"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    full = _PREFIX + name
    try:
        canon = _native.get_op(full).name
    except Exception:  # noqa: BLE001
        raise AttributeError(f"module 'oxnet.ndarray.contrib' has no operator '{name}'") from None
    return op.__getattr__(full if canon.startswith("_") else canon)


def __dir__():
    return sorted(n[len(_PREFIX):] for n in _native.op_names() if n.startswith(_PREFIX))
