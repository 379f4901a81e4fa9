"""Imperative NDArray API (``mx.nd``): arrays, creation functions and every
registered operator as a function (resolved by name on first use)."""
from .ndarray import (  # noqa: F401
    NDArray,
    arange,
    array,
    concatenate,
    empty,
    eye,
    full,
    imperative_invoke,
    moveaxis,
    ones,
    waitall,
    zeros,
)
from .ndarray import (  # noqa: F401
    add,
    argmax_channel,
    depth_to_space,
    divide,
    equal,
    greater,
    greater_equal,
    hard_sigmoid,
    lesser,
    lesser_equal,
    linspace,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    modulo,
    moments,
    multiply,
    not_equal,
    power,
    ravel_multi_index,
    space_to_depth,
    split_v2,
    subtract,
    true_divide,
    unravel_index,
)
from .legacy import all_finite, histogram, imdecode, multi_all_finite, onehot_encode  # noqa: F401
from .dlpack import from_dlpack, from_numpy, to_dlpack_for_read, to_dlpack_for_write  # noqa: F401
from . import op  # noqa: F401
from . import linalg  # noqa: F401
from . import random  # noqa: F401
from . import _internal  # noqa: F401
from .utils import load, load_frombuffer, save  # noqa: F401
from . import contrib  # noqa: F401
from . import image  # noqa: F401


def Custom(*args, **kwargs):
    """Run a custom operator registered with ``mx.operator.register``:
    ``Custom(*inputs, op_type=name, **params)``. Returns one NDArray or a list
    (one per output). See :mod:`oxnet.operator`."""
    from ..operator import custom

    return custom(*args, **kwargs)


def __getattr__(name):
    return op.__getattr__(name)


def __dir__():
    return sorted(set(globals()) | set(op.__all_ops__()))


class CachedOp:
    """MXNet's ``CachedOp``: a symbol run as one operation on NDArrays.

    ``CachedOp(sym, flags=())`` plans the graph once per input signature
    (shapes, dtypes, context); ``op(*inputs)`` takes the inputs in
    ``sym.list_inputs()`` order and returns an NDArray (one output) or a
    list. Under ``autograd.record()`` a call records one node whose backward
    runs the planned gradient graph. ``flags`` (``static_alloc``,
    ``static_shape``, ...) are accepted; planning is always static per
    signature.
    """

    def __init__(self, sym, flags=()):
        from .. import _native

        self._sym = sym
        self.flags = dict(flags)
        self._h = _native.CachedOpHandle(sym.handle, sym.name or "CachedOp")
        self._n_out = len(sym.list_outputs())

    def __call__(self, *args, out=None, **kwargs):
        if kwargs:
            raise TypeError("CachedOp takes its inputs positionally (in sym.list_inputs() order), got %s"
                            % ", ".join(kwargs))
        for a in args:
            if not isinstance(a, NDArray):
                raise TypeError("CachedOp inputs must be NDArrays, got %s" % type(a).__name__)
        res = self._h(list(args))
        if out is not None:
            outs = out if isinstance(out, (list, tuple)) else [out]
            for o, r in zip(outs, res):
                r.copyto(o)
            return out
        return res[0] if self._n_out == 1 else res
