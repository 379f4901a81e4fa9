"""Custom operators written in Python (MXNet 1.9.1's ``mx.operator``).

Subclass :class:`CustomOpProp` (shapes, types, names) and :class:`CustomOp`
(forward/backward), register the property class under a name with
:func:`register`, and call it as ``mx.nd.Custom(*inputs, op_type=name)``::

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register("sigmoid")
    class SigmoidProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Sigmoid()

How it runs: ``forward`` and ``backward`` are called on the thread that
calls ``mx.nd.Custom`` (or ``autograd.backward``), which holds the GIL; the
operations they issue go through the dependency engine asynchronously like
any others, so a custom operator can never deadlock an engine worker on the
GIL. ``asnumpy()`` inside them waits (GIL released) for the inputs only.
"""
from __future__ import annotations

import numpy as np

import contextlib

from . import autograd
from .base import ExternalError, MXNetError

_registry = {}


@contextlib.contextmanager
def _user_code(op_type, what):
    """Run a custom operator's Python code: an exception it raises reaches the caller as an
    MXNetError (ExternalError, chained to the original), as MXNet reports errors in custom
    operators; MXNetErrors (e.g. from oxnet operators it calls) pass through unchanged."""
    try:
        yield
    except MXNetError:
        raise
    except Exception as e:  # noqa: BLE001 (re-raised, wrapped)
        raise ExternalError(f"Custom({op_type}): {what} raised {type(e).__name__}: {e}") from e


class CustomOp:
    """Base class of a custom operator's computation."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data``.

        is_train : bool, whether this is a training pass.
        req : list of str, one of 'null', 'write', 'inplace', 'add' per output.
        in_data, out_data, aux : lists of NDArray.
        Returns nothing: write the results with :meth:`assign`."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` (one NDArray per input) from ``out_grad``.

        req : list of str per input; the other arguments are lists of NDArray.
        Returns nothing: write the gradients with :meth:`assign`."""
        raise NotImplementedError(f"{type(self).__name__}.backward is not defined")

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` according to ``req`` ('null': nothing,
        'write'/'inplace': overwrite, 'add': accumulate). Returns nothing."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise ValueError(f"CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', got {req!r}")


class CustomOpProp:
    """Base class of a custom operator's properties: argument and output
    names, shape and type inference, and the factory of :class:`CustomOp`.

    need_top_grad : bool, whether backward uses the output gradients (False
    for loss layers, as in MXNet)."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """Given a list of input shapes, return ``(in_shapes, out_shapes,
        aux_shapes)``; the default gives every output the first input's shape."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), [in_shape[0]] * len(self.list_auxiliary_states())

    def infer_type(self, in_type):
        """Given a list of input dtypes, return ``(in_types, out_types,
        aux_types)``; the default uses the first input's dtype everywhere."""
        t = in_type[0]
        return [t] * len(in_type), [t] * len(self.list_outputs()), [t] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """Storage types: only 'default' (dense) is supported."""
        return in_stype, ["default"] * len(self.list_outputs()), ["default"] * len(self.list_auxiliary_states())

    def list_arguments(self):
        """Names of the inputs. Default ``['data']``."""
        return ["data"]

    def list_outputs(self):
        """Names of the outputs. Default ``['output']``."""
        return ["output"]

    def list_auxiliary_states(self):
        """Names of the auxiliary states. Default none."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Which arrays backward needs (kept for MXNet compatibility; oxnet
        keeps all of them alive while the graph is recorded)."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Return the :class:`CustomOp` instance that computes this operator."""
        raise NotImplementedError(f"{type(self).__name__}.create_operator is not defined")


def register(reg_name):
    """Class decorator: register a :class:`CustomOpProp` subclass under
    ``reg_name`` (the ``op_type`` of ``mx.nd.Custom``). Returns the class."""

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"mx.operator.register({reg_name!r}): expected a CustomOpProp subclass, got {prop_cls!r}")
        _registry[reg_name] = prop_cls
        return prop_cls

    return do_register


def get_all_registered_operators():
    """Names of every operator oxnet has (list of str), as MXNet's function lists its operator
    registry: public names, aliases and internal ``_``-prefixed ones, plus ``Custom``. Custom
    operators registered with :func:`register` are run through ``Custom`` and are not listed
    (as in MXNet); see :func:`get_all_registered_custom_operators` for those."""
    from . import _native

    return sorted(set(_native.op_names()) | {"Custom"})


def get_all_registered_custom_operators():
    """Names (``op_type``) of the custom operators registered with :func:`register` (oxnet's
    addition; sorted list of str)."""
    return sorted(_registry)


def _shape_list(x, what, op_type):
    try:
        return [tuple(int(d) for d in s) for s in x]
    except TypeError:
        raise MXNetError(f"Custom({op_type}): infer_shape must return lists of shapes for {what}, got {x!r}") from None


def custom(*args, op_type=None, out=None, name=None, **kwargs):
    """Run the custom operator registered as ``op_type``.

    Inputs are NDArrays, positionally (and/or by the names of
    ``list_arguments()`` and ``list_auxiliary_states()``); other keyword
    arguments are passed to the property class as strings, as MXNet does.
    Returns one NDArray, or a list when the operator has several outputs."""
    from .ndarray import NDArray, zeros

    if op_type is None:
        raise MXNetError("Custom: the op_type argument is required")
    prop_cls = _registry.get(op_type)
    if prop_cls is None:
        raise MXNetError(f"Custom: no custom operator registered as {op_type!r} (see mx.operator.register)")
    arrays = [a for a in args if isinstance(a, NDArray)]
    if len(arrays) != len(args):
        raise TypeError(f"Custom({op_type}): positional arguments must be NDArrays")
    params = {}
    named = {}
    for k, v in kwargs.items():
        if isinstance(v, NDArray):
            named[k] = v
        else:
            params[k] = str(v)
    try:
        prop = prop_cls(**params)
    except TypeError as e:
        raise MXNetError(f"Custom({op_type}): cannot create {prop_cls.__name__} with {params}: {e}") from None
    except MXNetError:
        raise
    except Exception as e:  # noqa: BLE001
        raise ExternalError(f"Custom({op_type}): {prop_cls.__name__}() raised {type(e).__name__}: {e}") from e
    with _user_code(op_type, "list_arguments/list_auxiliary_states/list_outputs"):
        arg_names = list(prop.list_arguments())
        aux_names = list(prop.list_auxiliary_states())
        n_out = len(prop.list_outputs())
    all_names = arg_names + aux_names
    for nm in all_names[len(arrays):]:
        if nm in named:
            arrays.append(named.pop(nm))
    if named:
        raise MXNetError(f"Custom({op_type}): unknown input(s) {sorted(named)}; inputs are {all_names}")
    if len(arrays) != len(all_names):
        raise MXNetError(
            f"Custom({op_type}): expected {len(all_names)} input(s) ({', '.join(all_names)}), got {len(arrays)}"
        )
    n_arg = len(arg_names)
    in_data, aux = arrays[:n_arg], arrays[n_arg:]
    with _user_code(op_type, "infer_shape"):
        shapes = prop.infer_shape([a.shape for a in in_data])
    if len(shapes) not in (2, 3):
        raise MXNetError(f"Custom({op_type}): infer_shape must return (in_shapes, out_shapes[, aux_shapes])")
    out_shapes = _shape_list(shapes[1], "outputs", op_type)
    if len(out_shapes) != n_out:
        raise MXNetError(f"Custom({op_type}): infer_shape gave {len(out_shapes)} output shape(s) for {n_out} output(s)")
    in_shapes = _shape_list(shapes[0], "inputs", op_type)
    for i, (a, s) in enumerate(zip(in_data, in_shapes)):
        if tuple(a.shape) != s:
            raise MXNetError(f"Custom({op_type}): input {arg_names[i]} has shape {a.shape}, infer_shape expects {s}")
    with _user_code(op_type, "infer_type"):
        types = prop.infer_type([np.dtype(a.dtype) for a in in_data])
        out_types = list(types[1])
    ctx = in_data[0].context if in_data else None
    with _user_code(op_type, "create_operator"):
        op = prop.create_operator(ctx, in_shapes, [np.dtype(a.dtype) for a in in_data])
    if out is not None:
        outs = [out] if isinstance(out, NDArray) else list(out)
        if len(outs) != n_out:
            raise MXNetError(f"Custom({op_type}): out= has {len(outs)} array(s) for {n_out} output(s)")
    else:
        outs = [zeros(s, ctx=ctx, dtype=t) for s, t in zip(out_shapes, out_types)]
    is_train = autograd.is_training()
    with autograd.pause(train_mode=is_train), _user_code(op_type, "forward"):
        op.forward(is_train=is_train, req=["write"] * n_out, in_data=in_data, out_data=outs, aux=aux)
    if autograd.is_recording():
        ins_rec = list(in_data)

        def backward_entry(*ograds):
            in_grad = [zeros(a.shape, ctx=a.context, dtype=a.dtype) for a in ins_rec]
            with autograd.pause(), _user_code(op_type, "backward"):
                op.backward(
                    req=["write"] * len(ins_rec), out_grad=list(ograds), in_data=ins_rec, out_data=outs,
                    in_grad=in_grad, aux=aux,
                )
            return in_grad

        from . import _native

        _native.record_custom(op_type, backward_entry, ins_rec, outs)
    return outs[0] if n_out == 1 else outs
