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
