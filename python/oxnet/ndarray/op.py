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
    from ._signatures import ARGS, KWONLY

    # MXNet's argument order (inputs, then parameters) for positional calls;
    # also the names MXNet accepts, so a misspelt keyword raises instead of
    # being ignored
    order = ARGS.get(name)
    kwonly = KWONLY.get(name, ())
    # Inputs may always come by keyword, also those MXNet's signature omits
    # (auxiliary states such as IdentityAttachKLSparseReg's moving_avg);
    # KWONLY lists parameters MXNet accepts by keyword but leaves out of its
    # signature (potrf's lower).
    known = frozenset(order or ()) | (frozenset(input_names) if order else frozenset()) | frozenset(kwonly)
    # Positional parameters start after the inputs MXNet's signature lists.
    n_order_inputs = 0
    for a in order or ():
        if a not in input_names:
            break
        n_order_inputs += 1

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
        if known:
            unknown = [k for k in kwargs if k not in known and not (k.startswith("__") and k.endswith("__"))]
            if unknown:
                params = [a for a in order or () if a not in input_names] + list(kwonly)
                raise TypeError(
                    f"{op.name}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                    f"it takes {', '.join(params) if params else 'no parameters'}"
                )
        if rest:
            first = len(args) - len(rest)
            if order is not None and first > n_order_inputs and not any(a is None for a in args):
                first = n_order_inputs
            _positional_params(op.name, order, input_names, first, rest, kwargs)
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


def _positional_params(opname, order, input_names, first, values, kwargs):
    """Name positional non-array arguments by MXNet's argument order: the
    value at position ``first + i`` of the call is the argument
    ``order[first + i]``. ``None`` in an input's place leaves that optional
    input out (``FullyConnected(x, w, None, no_bias=True)``)."""
    if order is None:
        raise TypeError(f"{opname}: pass parameters by keyword (got {len(values)} positional non-array argument(s))")
    if first + len(values) > len(order):
        raise TypeError(
            f"{opname}: takes at most {len(order)} positional arguments ({', '.join(order)}), "
            f"got {first + len(values)}"
        )
    for nm, v in zip(order[first:], values):
        if nm in input_names:
            if v is None:
                continue
            raise TypeError(f"{opname}: input '{nm}' must be an NDArray, got {type(v).__name__}")
        if nm in kwargs:
            raise TypeError(f"{opname}: got multiple values for argument '{nm}'")
        kwargs[nm] = v


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
