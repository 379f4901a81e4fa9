"""Automatic differentiation (``mx.autograd``), MXNet 1.x semantics.

    x = mx.nd.array([1., 2.]); x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    x.grad  # [2. 4.]

Gradients are built from the operator registry's gradient rules (backward is
made of ordinary operators), so ``create_graph=True`` gives higher-order
gradients.
"""
from __future__ import annotations

from . import _native
from .ndarray import NDArray

# NDArray too, as `from mxnet.autograd import *` gives it in MXNet (its scripts rely on that)
__all__ = [
    "record", "pause", "train_mode", "predict_mode", "is_recording", "is_training", "set_recording",
    "set_training", "mark_variables", "backward", "grad", "get_symbol", "Function", "NDArray",
]


def set_recording(is_recording):  # noqa: F811
    """Turn recording on or off; returns the previous state."""
    return _native.set_recording(bool(is_recording))


def set_training(train_mode):  # noqa: F811
    """Turn training mode on or off (affects Dropout, BatchNorm); returns the previous state."""
    return _native.set_training(bool(train_mode))


def is_recording():
    """True inside ``record()`` (and not inside ``pause()``)."""
    return _native.is_recording()


def is_training():
    """True in training mode."""
    return _native.is_training()


class _RecordingStateScope:
    def __init__(self, is_record, train_mode):
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)
        return self

    def __exit__(self, *exc):
        if self._enter_is_record is not None and self._prev_is_record != self._enter_is_record:
            set_recording(self._prev_is_record)
        if self._enter_train_mode is not None and self._prev_train_mode != self._enter_train_mode:
            set_training(self._prev_train_mode)


def record(train_mode=True):
    """Scope in which operations are recorded for differentiation
    (``train_mode`` also switches Dropout/BatchNorm to training behaviour)."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):
    """Scope in which recording is off (e.g. for metric computation)."""
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Scope with training behaviour, without changing recording."""
    return _RecordingStateScope(None, True)


def predict_mode():
    """Scope with inference behaviour, without changing recording."""
    return _RecordingStateScope(None, False)


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def mark_variables(variables, gradients, grad_reqs="write"):
    """Make ``variables`` differentiable with ``gradients`` as their buffers.
    ``grad_reqs`` is one of 'write', 'add', 'null' or a list of them."""
    variables = _as_list(variables)
    gradients = _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not (len(variables) == len(gradients) == len(grad_reqs)):
        raise ValueError("mark_variables: variables, gradients and grad_reqs must have the same length")
    _native.mark_variables(variables, gradients, list(grad_reqs))


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute the gradients of ``heads`` with respect to every variable
    (written into their ``.grad`` per grad_req). ``head_grads`` default to
    ones. The graph is freed unless ``retain_graph``."""
    heads = _as_list(heads)
    hg = _as_list(head_grads) or [None] * len(heads)
    if len(hg) != len(heads):
        raise ValueError("backward: heads and head_grads must have the same length")
    _native.backward(heads, hg, retain_graph, False, train_mode)


def get_symbol(x):
    """The computation recorded under ``record()`` that produced ``x`` (an
    NDArray or a list of them), as a Symbol: one node per recorded operator;
    marked variables and unrecorded inputs become variables ``var0``,
    ``var1``, ... Raises for arrays not computed under recording."""
    from .symbol import Symbol

    heads = x if isinstance(x, (list, tuple)) else [x]
    return Symbol(_native.autograd_symbol(list(heads)))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):
    """Return the gradients of ``heads`` with respect to ``variables`` (a list
    of NDArrays, or one NDArray for a single variable). With
    ``create_graph=True`` the result is itself recorded, for higher order."""
    single = not isinstance(variables, (list, tuple))
    heads = _as_list(heads)
    variables = _as_list(variables)
    hg = _as_list(head_grads) or [None] * len(heads)
    if retain_graph is None:
        retain_graph = create_graph
    res = _native.grad(heads, variables, hg, retain_graph, create_graph, train_mode)
    from .ndarray import zeros

    out = [g if g is not None else zeros(v.shape, ctx=v.context, dtype=v.dtype) for g, v in zip(res, variables)]
    return out[0] if single and len(out) == 1 else out


class Function:
    """A differentiable function with a Python forward and backward.

    Subclass it, define ``forward(self, *inputs)`` and ``backward(self,
    *output_grads)`` returning one gradient per input, and call the instance.
    ``save_for_backward(*arrays)`` keeps values in ``self.saved_tensors``.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def __call__(self, *inputs):
        from .ndarray import NDArray

        if self._used:
            raise RuntimeError("Each Function instance can only be called once; create a new instance")
        self._used = True
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        nd_inputs = [x for x in inputs if isinstance(x, NDArray)]
        if is_recording():
            # Outputs may alias inputs; give each output its own handle.
            outs = [o.detach() if any(o is i for i in nd_inputs) else o for o in outs]
            _native.record_custom(type(self).__name__, self._backward_entry, nd_inputs, outs)
        return outs[0] if single else outs

    def _backward_entry(self, *ograds):
        with pause():
            res = self.backward(*ograds)
        return res

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError
