"""``mx.nd.contrib`` (MXNet's ``mxnet.ndarray.contrib``): the operators MXNet
registers as ``_contrib_<name>``, under their short names, e.g.
``mx.nd.contrib.ctc_loss`` / ``mx.nd.contrib.CTCLoss``. A contrib name that
is an alias of a public operator resolves to that operator's function (same
argument order and checks).

Python-level functions (as in MXNet): ``isinf``, ``isfinite``, ``isnan``,
``boolean_mask`` (whose output shape depends on the mask's values, so it
reads the mask and then selects with ``take``) and the imperative control
flow ``foreach``, ``while_loop`` and ``cond`` (plain Python loops and
branches over NDArrays; autograd records the operators they run).

Also MXNet's Python-level contrib optimizer updates, with MXNet 1.9.1's
signatures: ``adamw_update``, ``mp_adamw_update``, ``multi_adamw_update``,
``multi_mp_adamw_update`` (rescale_grad: a float or an NDArray, passed to the
operator as a float32 array), ``multi_lamb_update``, ``multi_mp_lamb_update``
and ``group_adagrad_update``."""
import numpy as _np

from .. import _native
from ..base import ShapeError
from . import op

_PREFIX = "_contrib_"
_PYTHON = ("boolean_mask", "cond", "foreach", "isfinite", "isinf", "isnan", "while_loop")


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


def _is_nd(x):
    from .ndarray import NDArray

    return isinstance(x, NDArray)


def _stack_steps(steps):
    """Stack per-step results (NDArrays or nested lists of them, one
    structure for every step) along a new axis 0, keeping the structure."""
    from . import stack

    first = steps[0]
    if _is_nd(first):
        return stack(*steps, axis=0)
    return [_stack_steps([s[i] for s in steps]) for i in range(len(first))]


def _map_nd(fn, x):
    if _is_nd(x):
        return fn(x)
    return [_map_nd(fn, v) for v in x]


def _check_structure(what, a, b):
    if _is_nd(a) != _is_nd(b) or (not _is_nd(a) and len(a) != len(b)):
        raise ValueError(f"{what}: the step returned a different structure than the first step")
    if not _is_nd(a):
        for u, v in zip(a, b):
            _check_structure(what, u, v)


def foreach(body, data, init_states):
    """Run ``body`` over the slices of ``data`` along axis 0 (MXNet's
    imperative ``contrib.foreach``).

    body : function ``(data_slice, states) -> (out, new_states)``; the slice is
    an NDArray when ``data`` is one, else a list with one slice per array.
    data : NDArray or list of NDArrays (one length along axis 0).
    init_states : NDArray or nested lists of NDArrays, passed to the first step.
    Returns ``(outputs, states)``: every step's ``out`` stacked along a new
    axis 0 (same structure as ``out``) and the states of the last step."""
    single = _is_nd(data)
    arrays = [data] if single else list(data)
    if not arrays or not all(_is_nd(a) for a in arrays):
        raise TypeError("foreach: data must be an NDArray or a non-empty list of NDArrays")
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"foreach: the arrays of data differ in length along axis 0: {[a.shape for a in arrays]}")
    states = init_states
    outs = []
    for i in range(n):
        eles = arrays[0][i] if single else [a[i] for a in arrays]
        out, states = body(eles, states)
        if outs:
            _check_structure("foreach", outs[0], out)
        outs.append(out)
    if not outs:
        raise ValueError("foreach: data has length 0 along axis 0, so the outputs' shape is unknown")
    return _stack_steps(outs), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run ``func`` while ``cond`` holds, at most ``max_iterations`` times
    (MXNet's imperative ``contrib.while_loop``).

    cond : function ``(*loop_vars) -> NDArray`` with one element (non-zero
    continues). func : function ``(*loop_vars) -> (step_output,
    new_loop_vars)``; step_output is an NDArray or a (nested) list of them
    with one shape per step, new_loop_vars matches loop_vars. loop_vars : an
    NDArray or a list of NDArrays. max_iterations : int, required.
    Returns ``(outputs, states)``: the step outputs stacked along axis 0 and
    padded to ``max_iterations`` rows (MXNet leaves the padding undefined;
    oxnet fills zeros), ``[]`` when no step ran; and the final loop variables
    (an NDArray when loop_vars is one)."""
    from . import concat, zeros

    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = int(max_iterations)
    single = _is_nd(loop_vars)
    lv = [loop_vars] if single else list(loop_vars)

    def pred(vs):
        p = cond(*vs)
        if not _is_nd(p) or p.size != 1:
            raise ValueError("while_loop: cond must return an NDArray with one element")
        return bool(p.asnumpy().reshape(-1)[0])

    steps = []
    while len(steps) < max_iterations and pred(lv):
        out, new = func(*lv)
        new = [new] if _is_nd(new) else list(new)
        if len(new) != len(lv):
            raise ValueError(f"while_loop: func returned {len(new)} loop variable(s), loop_vars has {len(lv)}")
        if steps:
            _check_structure("while_loop", steps[0], out)
        steps.append(out)
        lv = new
    states = lv[0] if single else lv
    if not steps or (not _is_nd(steps[0]) and len(steps[0]) == 0):
        return [], states
    stacked = _stack_steps(steps)
    pad = max_iterations - len(steps)
    if pad:
        stacked = _map_nd(lambda a: concat(a, zeros((pad,) + a.shape[1:], ctx=a.context, dtype=a.dtype), dim=0),
                          stacked)
    return stacked, states


def cond(pred, then_func, else_func):
    """Run ``then_func()`` when the one-element NDArray ``pred`` is non-zero,
    else ``else_func()`` (MXNet's imperative ``contrib.cond``); returns that
    function's result (an NDArray or nested lists of NDArrays)."""
    if not _is_nd(pred) or pred.size != 1:
        raise ValueError("cond: pred must be an NDArray with one element")
    return then_func() if pred.asnumpy().reshape(-1)[0] != 0 else else_func()


def _rescale_array(rescale_grad, ctx):
    """rescale_grad as the (1,) float32 array the AdamW operators take."""
    from .ndarray import NDArray, array

    if isinstance(rescale_grad, NDArray):
        return rescale_grad.as_in_context(ctx)
    return array([rescale_grad], ctx=ctx, dtype="float32")


def _interleave(*lists):
    n = len(lists[0])
    for name, lst in zip(("grads", "mean", "var", "weights32"), lists[1:]):
        if len(lst) != n:
            raise ValueError(f"{len(lst)} {name} for {n} weights: pass one per weight")
    return [x for group in zip(*lists) for x in group]


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW update (Adam with decoupled weight decay), as MXNet 1.9.1's
    ``mx.nd.contrib.adamw_update``::

        g = clip(rescale_grad * grad, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * g            # in place
        var = beta2 * var + (1 - beta2) * g ** 2         # in place
        weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)

    rescale_grad: a float or an NDArray holding it; NaN, Inf or 0 skips the
    update. Returns the new weight (``out=weight`` updates in place)."""
    rescale_grad = _rescale_array(rescale_grad, weight.context)
    return op._adamw_update(weight, grad, mean, var, rescale_grad, lr=lr, eta=eta, beta1=beta1,
                            beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                            out=out, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None,
                    name=None, **kwargs):
    """Mixed precision :func:`adamw_update`: the float32 master ``weight32``,
    ``mean`` and ``var`` are updated in place; returns weight32 cast to
    weight's dtype."""
    rescale_grad = _rescale_array(rescale_grad, weight.context)
    return op._mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr=lr, eta=eta,
                               beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                               clip_gradient=clip_gradient, out=out, **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas,
                       out=None, name=None, size=0, **kwargs):
    """:func:`adamw_update` of several tensors in one call: lists of weights,
    grads, means and variances; lrs, wds and etas: one value per weight;
    size: the number of weights (default: all). Returns the new weights
    (``out=weights`` updates in place)."""
    if not size:
        size = len(weights)
    rescale_grad = _rescale_array(rescale_grad, weights[0].context)
    data = _interleave(weights, grads, mean, var) + [rescale_grad]
    return op._multi_adamw_update(*data, out=out, num_weights=size, lrs=lrs, wds=wds, etas=etas,
                                  **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """Mixed precision :func:`multi_adamw_update` with float32 means,
    variances and master weights ``weights32`` (updated in place)."""
    if not size:
        size = len(weights)
    rescale_grad = _rescale_array(rescale_grad, weights[0].context)
    data = _interleave(weights, grads, mean, var, weights32) + [rescale_grad]
    return op._multi_mp_adamw_update(*data, out=out, num_weights=size, lrs=lrs, wds=wds,
                                     etas=etas, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None, num_tensors=0,
                      **kwargs):
    """LAMB update of several tensors in one call (MXNet 1.9.1's
    ``mx.nd.contrib.multi_lamb_update``): lists of weights, grads, means and
    variances (updated in place); step_count, lrs and wds: one value per
    tensor; optional beta1, beta2, epsilon, rescale_grad, lower_bound,
    upper_bound, clip_gradient, bias_correction. Returns the new weights
    (``out=weights`` updates in place)."""
    if not num_tensors:
        num_tensors = len(weights)
    data = _interleave(weights, grads, mean, var)
    return op._multi_lamb_update(*data, out=out, num_tensors=num_tensors, step_count=step_count,
                                 learning_rates=lrs, wds=wds, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None,
                         num_tensors=0, **kwargs):
    """Mixed precision :func:`multi_lamb_update`: float32 means, variances and
    master weights ``weights32`` (updated in place)."""
    if not num_tensors:
        num_tensors = len(weights)
    data = _interleave(weights, grads, mean, var, weights32)
    return op._multi_mp_lamb_update(*data, out=out, num_tensors=num_tensors, step_count=step_count,
                                    learning_rates=lrs, wds=wds, **kwargs)


def group_adagrad_update(weight=None, grad=None, history=None, lr=None, rescale_grad=None,
                         clip_gradient=None, epsilon=None, out=None, name=None, **kwargs):
    """Group AdaGrad update (one learning rate per row of weight)::

        g = clip(rescale_grad * grad, clip_gradient)
        history += mean(g ** 2, axis=1, keepdims=True)   # in place, shape (rows, 1)
        weight -= lr * g / sqrt(history + epsilon)

    lr is required; rescale_grad=1, clip_gradient=-1 (off), epsilon=1e-5.
    Returns the new weight (``out=weight`` updates in place)."""
    params = {k: v for k, v in (("lr", lr), ("rescale_grad", rescale_grad), ("clip_gradient", clip_gradient),
                                ("epsilon", epsilon)) if v is not None}
    params.update(kwargs)
    return op._contrib_group_adagrad_update(weight, grad, history, out=out, **params)


_FUNCTIONS = ("adamw_update", "mp_adamw_update", "multi_adamw_update", "multi_mp_adamw_update",
              "multi_lamb_update", "multi_mp_lamb_update", "group_adagrad_update")


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
    return sorted(set(ops) | set(_PYTHON) | set(_FUNCTIONS))
