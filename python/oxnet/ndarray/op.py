"""Every registered operator as a function ``op(*inputs, out=None, **params)``.

Functions are made on first access from the registry (no import-time
generation); their docstrings come from the operator definition.
"""
from __future__ import annotations

from .. import _native

_cache = {}


def _make(name):
    op = _native.get_op(name)
    from .ndarray import imperative_invoke

    input_names = op.inputs
    variadic = op.variadic

    def fn(*args, out=None, name=None, ctx=None, **kwargs):
        inputs = []
        rest = []
        from .ndarray import NDArray

        for a in args:
            if isinstance(a, NDArray):
                if rest:
                    raise TypeError(f"{op.name}: NDArray input after a non-array positional argument")
                inputs.append(a)
            elif isinstance(a, (list, tuple)) and a and all(isinstance(x, NDArray) for x in a):
                inputs.extend(a)
            else:
                rest.append(a)
        if rest:
            raise TypeError(
                f"{op.name}: pass parameters by keyword (got {len(rest)} positional non-array argument(s))"
            )
        if not variadic:
            # Inputs may also come by keyword; optional ones (a bias with
            # no_bias=True) may be left out or passed as None.
            for nm in input_names[len(inputs):]:
                if nm in kwargs:
                    v = kwargs.pop(nm)
                    if v is not None:
                        inputs.append(v)
        else:
            kwargs.setdefault("num_args", len(inputs))
        return imperative_invoke(op, inputs, kwargs, out=out, ctx=ctx)

    fn.__name__ = name
    fn.__qualname__ = name
    ins = ", ".join(input_names) + (", ..." if variadic else "")
    fn.__doc__ = (
        f"{op.doc}\n\nInputs: {ins}\nParameters are passed by keyword as in MXNet 1.9.1.\n"
        "out : NDArray, optional -- write the result here.\n\nReturns NDArray (or a list of NDArrays "
        "for operators with several outputs)."
    )
    return fn


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    f = _cache.get(name)
    if f is None:
        try:
            f = _make(name)
        except Exception as e:  # noqa: BLE001
            raise AttributeError(f"module 'oxnet.ndarray' has no operator '{name}'") from e
        _cache[name] = f
    return f


def __all_ops__():
    return [n for n in _native.op_names() if not n.startswith("_")]
