"""Contributed optimizers (``mx.optimizer.contrib``)."""
from .. import ndarray as _nd
from ..ndarray import zeros
from .optimizer import Optimizer, _check_arrays

__all__ = ["GroupAdaGrad"]


@Optimizer.register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one history value per row of a 2-D weight::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += mean(grad ** 2, axis=1, keepdims=True)
        weight -= lr * grad / sqrt(history + eps)

    Default ``eps`` 1e-5. Weight decay is not supported (``wd`` must be 0)."""

    def __init__(self, eps=1e-5, **kwargs):
        super(GroupAdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise ValueError("GroupAdaGrad: the weight must be 2-D, got shape %s" % (weight.shape,))
        return zeros((weight.shape[0], 1), weight.context)

    def update(self, index, weight, grad, state):
        _check_arrays("GroupAdaGrad", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if wd != 0:
            raise ValueError("GroupAdaGrad: weight decay is not supported (wd=%s)" % wd)
        grad = self._preprocess(grad)
        state[:] += _nd.mean(_nd.square(grad), axis=1, keepdims=True)
        weight[:] -= lr * grad / _nd.sqrt(state + self.float_stable_eps)
