"""``mx.nd.contrib`` (MXNet's ``mxnet.ndarray.contrib``): the operators MXNet
registers as ``_contrib_<name>``, under their short names, e.g.
``mx.nd.contrib.ctc_loss`` / ``mx.nd.contrib.CTCLoss``. A contrib name that
is an alias of a public operator resolves to that operator's function (same
argument order and checks).

Also MXNet's Python-level contrib optimizer updates, with MXNet 1.9.1's
signatures: ``adamw_update``, ``mp_adamw_update``, ``multi_adamw_update``,
``multi_mp_adamw_update`` (rescale_grad: a float or an NDArray, passed to the
operator as a float32 array), ``multi_lamb_update``, ``multi_mp_lamb_update``
and ``group_adagrad_update``."""
from .. import _native
from . import op

_PREFIX = "_contrib_"


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
    ops = {n[len(_PREFIX):] for n in _native.op_names() if n.startswith(_PREFIX)}
    return sorted(ops | set(_FUNCTIONS) | {k for k in globals() if not k.startswith("_")} - {"op"})
