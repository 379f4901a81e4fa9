"""Symbolic API (``mx.sym`` / ``mx.symbol``): every registered operator as a
function building graph nodes, variables, groups, JSON loading, and the
``contrib``, ``linalg``, ``random``, ``image`` and ``sparse`` name spaces."""
import types as _types

from .symbol import (  # noqa: F401
    Group,
    Symbol,
    Variable,
    _op_function,
    arange,
    eye,
    full,
    hypot,
    linspace,
    load,
    load_json,
    maximum,
    minimum,
    ones,
    pow,
    power,
    var,
    zeros,
)
from .. import _native
from . import subgraph  # noqa: F401
from .subgraph import register_backend  # noqa: F401


def _resolve(name):
    try:
        _native.get_op(name)
    except Exception:  # noqa: BLE001
        return None
    return _op_function(name)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    f = _resolve(name)
    if f is None:
        raise AttributeError("module 'oxnet.symbol' has no operator '%s'" % name)
    return f


def _namespace(modname, prefixes, doc):
    mod = _types.ModuleType("oxnet.symbol." + modname, doc)

    def getattr_(name):
        if name.startswith("__"):
            raise AttributeError(name)
        for p in prefixes:
            f = _resolve(p + name)
            if f is not None:
                return f
        raise AttributeError("module 'oxnet.symbol.%s' has no operator '%s'" % (modname, name))

    mod.__getattr__ = getattr_
    return mod


contrib = _namespace("contrib", ["_contrib_"], "mx.sym.contrib: MXNet's _contrib_* operators by short name.")
linalg = _namespace("linalg", ["_linalg_"], "mx.sym.linalg: the _linalg_* operators by short name.")
image = _namespace("image", ["_image_"], "mx.sym.image: the _image_* operators by short name.")
sparse = _namespace("sparse", ["_sparse_", ""], "mx.sym.sparse: the operators that exist for dense arrays.")
random = _namespace("random", ["_random_", "_sample_"], "mx.sym.random: the random samplers.")
op = _namespace("op", [""], "mx.sym.op: every operator.")
_internal = _namespace("_internal", [""], "mx.sym._internal: every operator, internal names included.")
