"""MXNet's experimental ``mx.contrib.autograd`` interface, kept for old scripts and tests.

    grad_and_loss(f)(x) -> ([dx], f(x))
    with train_section():   # recording and training on, like autograd.record()
        y = f(x)
    backward([y])

Everything here runs on :mod:`oxnet.autograd`; prefer that module in new code.
"""
from __future__ import annotations

import functools

from .. import autograd as _ag
from ..ndarray import NDArray, zeros_like

__all__ = [
    "set_is_training", "TrainingStateScope", "train_section", "test_section", "mark_variables", "backward",
    "compute_gradient", "grad_and_loss", "grad",
]


def set_is_training(is_train):
    """Turn training mode and recording on or off together; returns the previous training state."""
    prev = _ag.set_training(bool(is_train))
    _ag.set_recording(bool(is_train))
    return bool(prev)


class TrainingStateScope:
    """``with TrainingStateScope(True):`` records and trains inside the block (False: neither),
    restoring the previous state on exit."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)
        return self

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """Scope that records operations in training mode (returns a :class:`TrainingStateScope`)."""
    return TrainingStateScope(True)


def test_section():
    """Scope with recording and training off, e.g. for evaluation inside ``train_section``."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Attach gradient buffers ``gradients`` to ``variables`` (lists of NDArray); ``grad_reqs`` is
    'write', 'add', 'null' or one of those per variable."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Back-propagate from ``outputs`` (a list or tuple of NDArray) into the marked variables'
    gradient buffers; ``out_grads`` are the head gradients (None: ones)."""
    if not isinstance(outputs, (list, tuple)):
        raise TypeError("contrib.autograd.backward: outputs must be a list or tuple of NDArrays, got {}".format(
            type(outputs).__name__))
    if out_grads is not None and len(out_grads) != len(outputs):
        raise ValueError("contrib.autograd.backward: outputs and out_grads must have the same length")
    _ag.backward(list(outputs), None if out_grads is None else list(out_grads), retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated spelling of ``backward(outputs)``."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """Wrap ``func`` so that calling it returns ``(gradients, outputs)``: the gradients of its
    output with respect to its NDArray arguments (all, or those at index/indices ``argnum``)."""

    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            idx = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in idx]
        for x in variables:
            if not isinstance(x, NDArray):
                raise TypeError("grad_and_loss: the arguments to differentiate must be NDArrays, got {}".format(
                    type(x).__name__))
        grads = [zeros_like(x) for x in variables]
        mark_variables(list(variables), grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(func, argnum=None):
    """Wrap ``func`` so that calling it returns only the gradients (see :func:`grad_and_loss`)."""
    gl = grad_and_loss(func, argnum)

    @functools.wraps(gl)
    def wrapped(*args):
        return gl(*args)[0]

    return wrapped
