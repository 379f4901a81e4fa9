"""``mx.nd.contrib`` (MXNet's ``mxnet.ndarray.contrib``): the operators MXNet
registers as ``_contrib_<name>``, under their short names, e.g.
``mx.nd.contrib.ctc_loss`` / ``mx.nd.contrib.CTCLoss``. A contrib name that
is an alias of a public operator resolves to that operator's function (same
argument order and checks).

Python-level functions (as in MXNet): ``isinf``, ``isfinite``, ``isnan`` and
``boolean_mask`` (whose output shape depends on the mask's values, so it
reads the mask and then selects with ``take``)."""
import numpy as _np

from .. import _native
from ..base import ShapeError
from . import op

_PREFIX = "_contrib_"
_PYTHON = ("boolean_mask", "isfinite", "isinf", "isnan")


def isinf(data):
    """Element-wise: 1 where data is +inf or -inf, else 0, in data's dtype.

    data : NDArray. Returns an NDArray of data's shape and dtype."""
    return data.abs() == _np.inf


def isfinite(data):
    """Element-wise: 1 where data is neither infinite nor NaN, else 0, in
    data's dtype.

    data : NDArray. Returns an NDArray of data's shape and dtype."""
    from . import logical_and

    return logical_and(data.abs() != _np.inf, data == data)


def isnan(data):
    """Element-wise: 1 where data is NaN, else 0, in data's dtype.

    data : NDArray. Returns an NDArray of data's shape and dtype."""
    return data != data


def boolean_mask(data, index, axis=0, out=None, name=None):
    """The slices of ``data`` along ``axis`` whose entry in the 1-D ``index``
    is non-zero, in order (MXNet's ``_contrib_boolean_mask``).

    data : NDArray; index : 1-D NDArray with ``data.shape[axis]`` entries;
    axis : int (default 0; MXNet 1.9.1 supports only 0, oxnet any axis).
    Returns an NDArray whose ``axis`` has one entry per non-zero mask value
    (possibly none). The output shape depends on the mask's values, so the
    call waits for ``index``. The gradient flows to the selected slices of
    ``data``; ``index`` gets none."""
    from . import array, take

    nd_ = data.ndim
    if not -nd_ <= axis < nd_:
        raise ShapeError(f"boolean_mask: axis {axis} is out of range for data of shape {data.shape}")
    ax = axis % nd_
    if index.ndim != 1 or index.shape[0] != data.shape[ax]:
        raise ShapeError(
            f"boolean_mask: index shape {index.shape} must be 1-D with data.shape[{ax}] = {data.shape[ax]} "
            f"entries (data shape {data.shape})"
        )
    rows = _np.flatnonzero(index.asnumpy()).astype(_np.int64)
    return take(data, array(rows, ctx=data.context, dtype="int64"), axis=ax, out=out)


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
    ops = [n[len(_PREFIX):] for n in _native.op_names() if n.startswith(_PREFIX)]
    return sorted(set(ops) | set(_PYTHON))
