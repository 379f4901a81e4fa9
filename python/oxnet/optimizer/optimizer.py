"""Weight-update rules (``mx.optimizer``), MXNet 1.9.1's classes and defaults.

Each optimizer turns ``(index, weight, grad, state)`` into an in-place weight
update. Where MXNet runs a fused update operator (``sgd_mom_update``,
``adam_update``, ...) so does oxnet: the operators are oxnet's own, registered
in the Rust core; the rest (AdaGrad, AdaDelta, Adamax, Nadam, DCASGD, SGLD)
are short NDArray expressions, as in MXNet.
"""
import logging
import math
import os
import pickle
import warnings

import numpy

from .. import ndarray as _nd
from ..ndarray import NDArray, zeros

__all__ = [
    "AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD",
    "NAG", "NDabs", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
    "Test", "Updater", "ccSGD", "create", "get_updater", "register",
]


def NDabs(data, out=None):  # noqa: N802 (MXNet's name)
    """Element-wise absolute value (``mx.nd.abs``), exported as MXNet does."""
    return _nd.abs(data, out=out)


def _interleave(*columns):
    """[a0, b0, c0, a1, b1, c1, ...] from columns [a0, a1], [b0, b1], ..."""
    out = []
    for row in zip(*columns):
        out.extend(row)
    return out


def _aggregation_size(default):
    return int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", str(default)))


class Optimizer(object):
    """Base class of all optimizers.

    Parameters
    ----------
    rescale_grad : float, default 1.0
        Gradients are multiplied by this before use (often ``1/batch_size``).
    param_idx2name : dict of int to str, optional
        Names of the parameters by index. Parameters whose name ends with
        neither ``_weight`` nor ``_gamma`` get no weight decay.
    wd : float, default 0.0
        Weight decay (L2 penalty) coefficient.
    clip_gradient : float, optional
        Clip gradients into ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional
        Initial learning rate; 0.01 when neither it nor ``lr_scheduler`` is
        given. When both are given, it overwrites the scheduler's ``base_lr``.
    lr_scheduler : LRScheduler, optional
        Called with the update count to give the learning rate.
    sym : Symbol, optional
        Its arguments' ``__lr_mult__`` / ``__wd_mult__`` attributes set
        per-parameter multipliers.
    begin_num_update : int, default 0
        The update count to start from.
    multi_precision : bool, default False
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict of int to gluon Parameter, optional
        Parameters whose ``lr_mult`` / ``wd_mult`` take precedence.
    """

    opt_registry = {}

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None:
            if lr_scheduler.base_lr != learning_rate:
                print(UserWarning("learning rate from ``lr_scheduler`` has been "
                                  "overwritten by ``learning_rate`` in optimizer."))
                lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("Optimizer: param_idx2name should be a dict of param indexes to names, got %s"
                            % type(param_idx2name).__name__)
        self.idx2name = dict(param_idx2name)
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry ----------------------------------------------------------

    @staticmethod
    def register(klass):
        """Register an optimizer class under its lower-cased class name, so
        that :meth:`create_optimizer` (``mx.optimizer.create``) can build it.
        Returns the class (usable as a decorator)."""
        if not isinstance(klass, type):
            raise TypeError("Optimizer.register: expected a class, got %r" % (klass,))
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn("WARNING: New optimizer %s.%s is overriding existing optimizer %s.%s"
                          % (klass.__module__, klass.__name__, old.__module__, old.__name__))
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An instance of the optimizer registered as ``name`` (case
        insensitive) built with ``kwargs``. Raises ValueError for an unknown
        name."""
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            raise ValueError("Cannot find optimizer %s (registered: %s)"
                             % (name, ", ".join(sorted(Optimizer.opt_registry))))
        return klass(**kwargs)

    # -- learning rate -----------------------------------------------------

    @property
    def learning_rate(self):
        """The current learning rate (from the scheduler when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate. Raises UserWarning when an ``lr_scheduler``
        owns the learning rate."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of the "
                              "optimizer only when the LRScheduler of the optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):  # noqa: ARG002
        """Deprecated in MXNet: use :meth:`set_lr_mult`."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult):
        """Set per-parameter learning-rate multipliers: a dict from parameter
        name (or index) to float. The ``__lr_mult__`` attributes of ``sym``'s
        arguments come first; ``args_lr_mult`` overrides them."""
        self.lr_mult = {}
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for name in arg_names:
                if name in attrs and "__lr_mult__" in attrs[name]:
                    self.lr_mult[name] = float(attrs[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Set per-parameter weight-decay multipliers (dict name or index ->
        float). Parameters named in ``param_idx2name`` that end with neither
        ``_weight`` nor ``_gamma`` get 0; then ``sym``'s ``__wd_mult__``
        attributes; then ``args_wd_mult``."""
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not (name.endswith("_weight") or name.endswith("_gamma")):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for name in arg_names:
                if name in attrs and "__wd_mult__" in attrs[name]:
                    self.wd_mult[name] = float(attrs[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        """Switch the per-index update counts to those of device ``device_id``."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index):
        """Count one more update of ``index`` (an int or a list of them)."""
        for idx in (index if isinstance(index, (list, tuple)) else [index]):
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _scaled(self, base, indices, mults, attr):
        out = []
        for index in indices:
            value = base
            if index in self.param_dict:
                value *= getattr(self.param_dict[index], attr)
            elif index in mults:
                value *= mults[index]
            elif index in self.idx2name:
                value *= mults.get(self.idx2name[index], 1.0)
            out.append(value)
        return out

    def _get_lrs(self, indices):
        """Learning rates (base rate times multipliers) for ``indices``."""
        base = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return self._scaled(base, indices, self.lr_mult, "lr_mult")

    def _get_lr(self, index):
        """The learning rate for one index."""
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """Weight decays (``wd`` times multipliers) for ``indices``."""
        return self._scaled(self.wd, indices, self.wd_mult, "wd_mult")

    def _get_wd(self, index):
        """The weight decay for one index."""
        return self._get_wds([index])[0]

    # -- states and updates ------------------------------------------------

    def create_state(self, index, weight):
        """The auxiliary state (e.g. momentum) for ``weight``; None when the
        optimizer keeps none. Called once per weight."""
        return None

    def create_state_multi_precision(self, index, weight):
        """Like :meth:`create_state`, but for a float16 weight with
        ``multi_precision`` the state is ``(float32 master copy, state)``."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (master,) + (self.create_state(index, master),)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update ``weight`` (NDArray, in place) from ``grad`` and ``state``
        (as made by :meth:`create_state`)."""
        raise NotImplementedError("%s.update is not implemented" % type(self).__name__)

    def update_multi_precision(self, index, weight, grad, state):
        """:meth:`update`, through the float32 master copy when the weight is
        float16 and ``multi_precision`` is on."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master, inner = state
            self.update(index, master, grad.astype(numpy.float32), inner)
            _nd.Cast(master, dtype="float16", out=weight)
        else:
            self.update(index, weight, grad, state)

    def _common_kwargs(self, clip_key="clip_gradient"):
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs[clip_key] = self.clip_gradient
        return kwargs

    def _preprocess(self, grad):
        """rescale then clip (for the optimizers written as NDArray math)."""
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = _nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        return grad

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("param_dict", None)
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}


register = Optimizer.register  # noqa: E305
create = Optimizer.create_optimizer


def _check_arrays(name, weight, grad):
    if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
        raise TypeError("%s.update: weight and grad must be NDArrays, got %s and %s"
                        % (name, type(weight).__name__, type(grad).__name__))


class _MomentumMasterMixin(object):
    """State layout (momentum, float32 master) used by SGD, LARS and NAG."""

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (self.create_state(index, master), master)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the %s optimizer"
                          % type(self).__name__)
        return self.create_state(index, weight)

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return zeros(weight.shape, weight.context, dtype=weight.dtype)
        return None

    def _use_mp(self, weight):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        return self.multi_precision and first.dtype == numpy.float16

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=self._use_mp(weight))


def _sgd_each(weights, grads, states, lrs, wds, multi_precision, kwargs, mom_op="sgd_mom_update",
              mp_mom_op="mp_sgd_mom_update"):
    """One fused SGD-family update per weight."""
    for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
        if not multi_precision:
            if state is not None:
                getattr(_nd, mom_op)(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                _nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        elif state[0] is not None:
            getattr(_nd, mp_mom_op)(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd, **kwargs)
        else:
            _nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)


def _as_lists(indices, weights, grads, states):
    if not isinstance(indices, (tuple, list)):
        return [indices], [weights], [grads], [states]
    return list(indices), list(weights), list(grads), list(states)


@register
class SGD(_MomentumMasterMixin, Optimizer):
    """Stochastic gradient descent with momentum and weight decay::

        rescaled = lr * (rescale_grad * clip(grad, clip_gradient) + wd * weight)
        state = momentum * state + rescaled
        weight = weight - state

    Parameters (besides :class:`Optimizer`'s): ``momentum`` (0.0),
    ``lazy_update`` (True; only matters for sparse gradients, which oxnet
    does not have). Lists of weights are updated together by
    ``multi_sgd_*_update`` (``aggregate_num`` from the environment variable
    MXNET_OPTIMIZER_AGGREGATION_SIZE, default 4).
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super(SGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        for w, g in zip(weights, grads):
            _check_arrays("SGD", w, g)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        n = len(weights)
        if n == 1:
            _sgd_each(weights, grads, states, lrs, wds, multi_precision, kwargs)
            return
        if not multi_precision:
            if self.momentum > 0:
                _nd.multi_sgd_mom_update(*_interleave(weights, grads, states), out=weights,
                                         num_weights=n, lrs=lrs, wds=wds, **kwargs)
            else:
                _nd.multi_sgd_update(*_interleave(weights, grads), out=weights,
                                     num_weights=n, lrs=lrs, wds=wds, **kwargs)
        elif self.momentum > 0:
            moms = [s[0] for s in states]
            masters = [s[1] for s in states]
            _nd.multi_mp_sgd_mom_update(*_interleave(weights, grads, moms, masters), out=weights,
                                        num_weights=n, lrs=lrs, wds=wds, **kwargs)
        else:
            masters = [s[1] for s in states]
            _nd.multi_mp_sgd_update(*_interleave(weights, grads, masters), out=weights,
                                    num_weights=n, lrs=lrs, wds=wds, **kwargs)


@register
class ccSGD(SGD):  # noqa: N801 (MXNet's name)
    """Deprecated in MXNet: the same as :class:`SGD`."""


@register
class Signum(Optimizer):
    """signSGD / Signum: steps by the sign of the gradient (``momentum`` 0)
    or of its momentum::

        state = momentum * state + (1 - momentum) * (rescaled grad + wd * weight)
        weight = (1 - lr * wd_lh) * weight - lr * sign(state)

    Defaults: ``learning_rate`` 0.01, ``momentum`` 0.9, ``wd_lh`` 0.0.
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super(Signum, self).__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return zeros(weight.shape, weight.context, dtype=weight.dtype)
        return None

    def update(self, index, weight, grad, state):
        _check_arrays("Signum", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if self.wd_lh:
            kwargs["wd_lh"] = self.wd_lh
        if state is not None:
            _nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            kwargs.pop("momentum", None)
            _nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)


@register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (Zheng & Kwok, 2017), through the fused
    ``ftml_update``. Defaults: ``beta1`` 0.6, ``beta2`` 0.999, ``epsilon`` 1e-8.
    State: (d, v, z)."""

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super(FTML, self).__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return tuple(zeros(weight.shape, weight.context, dtype=weight.dtype) for _ in range(3))

    def update(self, index, weight, grad, state):
        _check_arrays("FTML", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs(clip_key="clip_grad")
        kwargs.update(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                      t=self._index_update_count[index])
        prev_d, prev_v, prev_z = state
        _nd.ftml_update(weight, grad, prev_d, prev_v, prev_z, out=weight, lr=lr, wd=wd, **kwargs)


@register
class LARS(_MomentumMasterMixin, Optimizer):
    """LARS (You et al., 2017): SGD with momentum whose learning rate is
    scaled per layer by ``eta * |w| / (|g| + wd * |w| + eps)`` (not for
    parameters named ``*gamma``, ``*beta`` or ``*bias``).

    Parameters: ``momentum`` (0.0), ``lazy_update`` (True), ``eta`` (0.001),
    ``eps`` (0), ``momentum_correction`` (True: momentum scaled by the ratio
    of the current to the previous learning rate).
    """

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super(LARS, self).__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        base = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        if self.cur_lr is None:
            self.last_lr = base
        self.cur_lr = base
        return self._scaled(base, indices, self.lr_mult, "lr_mult")

    def set_wd_mult(self, args_wd_mult):
        """As :meth:`Optimizer.set_wd_mult`, but only names ending with
        ``_weight`` keep their weight decay."""
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not name.endswith("_weight"):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for name in arg_names:
                if name in attrs and "__wd_mult__" in attrs[name]:
                    self.wd_mult[name] = float(attrs[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _l2norm(self, v, rescale=False):
        v = v.astype("float32")
        if rescale:
            v = v * self.rescale_grad
        return float(_nd.norm(v).asnumpy().reshape(-1)[0])

    @staticmethod
    def _no_lars(name):
        return name.endswith("gamma") or name.endswith("beta") or name.endswith("bias")

    def _get_lars(self, i, weight, g, lr, wd):
        """The layer-scaled learning rate for parameter ``i``."""
        if self._no_lars(self.idx2name.get(i, str(i))):
            return lr
        w_norm = self._l2norm(weight)
        g_norm = self._l2norm(g, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        for w, g in zip(weights, grads):
            _check_arrays("LARS", w, g)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            if self.momentum_correction and self.last_lr != 0:
                kwargs["momentum"] = self.momentum * (self.cur_lr / self.last_lr)
            else:
                kwargs["momentum"] = self.momentum
        if len(indices) == 1:
            lrs = [self._get_lars(i, w, g, lr, wd) for i, w, g, lr, wd in zip(indices, weights, grads, lrs, wds)]
            _sgd_each(weights, grads, states, lrs, wds, multi_precision, kwargs)
            return
        names = [self.idx2name.get(i, str(i)) for i in indices]
        order = ([k for k in range(len(indices)) if not self._no_lars(names[k])]
                 + [k for k in range(len(indices)) if self._no_lars(names[k])])
        nb_lars = sum(1 for k in range(len(indices)) if not self._no_lars(names[k]))
        ctx = weights[0].context
        new_lrs = _nd.array([lrs[k] for k in order], ctx=ctx, dtype="float32")
        new_wds = _nd.array([wds[k] for k in order], ctx=ctx, dtype="float32")
        ws = [weights[k] for k in order]
        gs = [grads[k] for k in order]
        ss = [states[k] for k in order]
        if nb_lars > 0:
            w_sq = _nd.multi_sum_sq(*ws[:nb_lars], num_arrays=nb_lars)
            g_sq = _nd.multi_sum_sq(*gs[:nb_lars], num_arrays=nb_lars)
            scaled = _nd.multi_lars(new_lrs[:nb_lars], w_sq, g_sq, new_wds[:nb_lars], eta=self.eta,
                                    eps=self.eps, rescale_grad=self.rescale_grad)
            new_lrs[:nb_lars] = scaled
        step = max(1, self.aggregate_num)
        for lo in range(0, len(ws), step):
            hi = min(lo + step, len(ws))
            sl_w, sl_g, sl_s = ws[lo:hi], gs[lo:hi], ss[lo:hi]
            tail = [new_lrs[lo:hi], new_wds[lo:hi]]
            if not multi_precision:
                if self.momentum > 0:
                    _nd.preloaded_multi_sgd_mom_update(*(_interleave(sl_w, sl_g, sl_s) + tail), out=sl_w,
                                                       num_weights=len(sl_w), **kwargs)
                else:
                    _nd.preloaded_multi_sgd_update(*(_interleave(sl_w, sl_g) + tail), out=sl_w,
                                                   num_weights=len(sl_w), **kwargs)
            elif self.momentum > 0:
                _nd.preloaded_multi_mp_sgd_mom_update(
                    *(_interleave(sl_w, sl_g, [s[0] for s in sl_s], [s[1] for s in sl_s]) + tail),
                    out=sl_w, num_weights=len(sl_w), **kwargs)
            else:
                _nd.preloaded_multi_mp_sgd_update(*(_interleave(sl_w, sl_g, [s[1] for s in sl_s]) + tail),
                                                  out=sl_w, num_weights=len(sl_w), **kwargs)


@register
class LBSGD(Optimizer):
    """Large-batch SGD: accumulates ``batch_scale`` gradients, then runs one
    SGD step with the learning rate scaled by a warm-up schedule
    (``warmup_strategy`` 'linear', 'power2', 'sqrt' or 'lars').

    Parameters: ``momentum`` (0.0), ``multi_precision`` (False),
    ``warmup_strategy`` ('linear'), ``warmup_epochs`` (5), ``batch_scale`` (1),
    ``updates_per_epoch`` (32), ``begin_epoch`` (0), ``num_epochs`` (60).
    """

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear", warmup_epochs=5,
                 batch_scale=1, updates_per_epoch=32, begin_epoch=0, num_epochs=60, **kwargs):
        super(LBSGD, self).__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        momentum = None
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            if self.momentum != 0.0:
                momentum = zeros(weight.shape, weight.context, dtype=numpy.float32)
            return (momentum, master)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the SGD optimizer")
        if self.momentum != 0.0:
            momentum = zeros(weight.shape, weight.context, dtype=weight.dtype)
        return momentum

    def _get_lbmult(self, nup):
        """The warm-up learning-rate multiplier after ``nup`` accumulations."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        frac = float(nup) / nwup
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * frac
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * frac * frac
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(frac)
        return 1.0

    @staticmethod
    def _l2norm(v):
        return float((v * v).asnumpy().sum())

    def _get_lars(self, weight, g, wd):
        """The LARS multiplier, clamped to [0.01, 100]."""
        w2 = self._l2norm(weight)
        g2 = self._l2norm(g)
        lars = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _cumulate_gradient(self, grad, index):
        prev = self.cumgrads.get(index, {})
        if prev and prev["num_cums"] > 0:
            entry = {"cum_grad": prev["cum_grad"] + grad, "num_cums": prev["num_cums"] + 1}
        else:
            entry = {"cum_grad": grad, "num_cums": self.init_updates + 1}
        self.cumgrads[index] = entry
        return entry

    def update(self, index, weight, grad, state):
        _check_arrays("LBSGD", weight, grad)
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale == 0:
            grad = cgrad["cum_grad"] / self.batch_scale
            if self.warmup_strategy == "lars":
                lr = lr * self._get_lars(weight, grad, wd)
            else:
                lr = lr * self._get_lbmult(cgrad["num_cums"])
            kwargs = self._common_kwargs()
            if self.momentum > 0:
                kwargs["momentum"] = self.momentum
            _sgd_each([weight], [grad], [state], [lr], [wd], isinstance(state, (list, tuple)), kwargs)
            self.cumgrads[index]["cum_grad"] = 0
        else:
            _nd.sgd_update(weight, grad, out=weight, lr=0.0, wd=wd)


@register
class LAMB(Optimizer):
    """LAMB (You et al., 2019) through ``lamb_update_phase1/2`` (or
    ``_multi_lamb_update`` for lists). Defaults: ``learning_rate`` 0.001,
    ``beta1`` 0.9, ``beta2`` 0.999, ``epsilon`` 1e-6, ``lower_bound`` /
    ``upper_bound`` None, ``bias_correction`` True."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None,
                 upper_bound=None, bias_correction=True, **kwargs):
        super(LAMB, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, _aggregation_size(45)))

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),
                zeros(weight.shape, weight.context, dtype=weight.dtype))

    def _bounds(self):
        kwargs = {}
        if self.lower_bound:
            kwargs["lower_bound"] = self.lower_bound
        if self.upper_bound:
            kwargs["upper_bound"] = self.upper_bound
        return kwargs

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "bias_correction": self.bias_correction, "rescale_grad": self.rescale_grad}
        if self.aggregate_num <= 1 or not isinstance(index, (tuple, list)):
            if isinstance(index, (tuple, list)):
                index, weight, grad, state = index[0], weight[0], grad[0], state[0]
            _check_arrays("LAMB", weight, grad)
            self._update_count(index)
            lr, wd = self._get_lr(index), self._get_wd(index)
            kwargs["t"] = self._index_update_count[index]
            if self.clip_gradient:
                kwargs["clip_gradient"] = self.clip_gradient
            if multi_precision:
                master = state[0]
                mean, var = state[1]
                g = _nd.mp_lamb_update_phase1(weight, grad, mean, var, master, wd=wd, **kwargs)
                _nd.mp_lamb_update_phase2(weight, g, master.norm(), g.norm(), master, lr=lr, out=weight,
                                          **self._bounds())
            else:
                mean, var = state
                g = _nd.lamb_update_phase1(weight, grad, mean, var, wd=wd, **kwargs)
                _nd.lamb_update_phase2(weight, g, weight.norm(), g.norm(), lr=lr, out=weight, **self._bounds())
            return
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        kwargs.update(self._bounds())
        steps, lrs, wds = [], [], []
        for i, w, g in zip(index, weight, grad):
            _check_arrays("LAMB", w, g)
            self._update_count(i)
            steps.append(self._index_update_count[i])
            lrs.append(self._get_lr(i))
            wds.append(self._get_wd(i))
        for lo in range(0, len(weight), self.aggregate_num):
            hi = min(lo + self.aggregate_num, len(weight))
            ws, gs, sts = list(weight[lo:hi]), list(grad[lo:hi]), state[lo:hi]
            if not multi_precision:
                means, vars_ = [s[0] for s in sts], [s[1] for s in sts]
                _nd.contrib.multi_lamb_update(ws, gs, means, vars_, out=ws, step_count=steps[lo:hi],
                                              lrs=lrs[lo:hi], wds=wds[lo:hi], **kwargs)
            else:
                means, vars_ = [s[1][0] for s in sts], [s[1][1] for s in sts]
                masters = [s[0] for s in sts]
                _nd.contrib.multi_mp_lamb_update(ws, gs, means, vars_, masters, out=ws,
                                                 step_count=steps[lo:hi], lrs=lrs[lo:hi], wds=wds[lo:hi],
                                                 **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        self._update_impl(index, weight, grad, state,
                          multi_precision=self.multi_precision and first.dtype == numpy.float16)


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al., 2016)::

        mom = momentum * mom - lr * (g + wd * w + lamda * g * g * (w - w_prev))
        w_prev = w;  w = w + mom

    Defaults: ``momentum`` 0.0, ``lamda`` 0.04. State: (momentum or None,
    previous weight)."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super(DCASGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = zeros(weight.shape, weight.context, dtype=weight.dtype) if self.momentum != 0.0 else None
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        _check_arrays("DCASGD", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = self._preprocess(grad)
        mom, previous = state
        step = -lr * (grad + wd * weight + self.lamda * grad * grad * (weight - previous))
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += step
        else:
            mom = step
        previous[:] = weight
        weight[:] += mom


@register
class NAG(_MomentumMasterMixin, Optimizer):
    """Nesterov accelerated gradient through ``nag_mom_update``::

        state = momentum * state + grad + wd * weight
        weight = weight - lr * (grad + momentum * state)

    Parameters: ``momentum`` (0.0), ``multi_precision``."""

    def __init__(self, momentum=0.0, **kwargs):
        super(NAG, self).__init__(**kwargs)
        self.momentum = momentum

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        _check_arrays("NAG", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        _sgd_each([weight], [grad], [state], [lr], [wd], multi_precision, kwargs,
                  mom_op="nag_mom_update", mp_mom_op="mp_nag_mom_update")

    def update_multi_precision(self, index, weight, grad, state):
        use_mp = self.multi_precision and weight.dtype == numpy.float16 and isinstance(state, (tuple, list))
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics: a half gradient step plus
    Gaussian noise of variance ``lr`` (drawn from oxnet's seeded generator)."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        _check_arrays("SGLD", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = self._preprocess(grad)
        weight[:] += -lr / 2 * (grad + wd * weight)
        weight[:] += _nd.random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                                       ctx=weight.context)


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba) through the fused ``adam_update``; the step's bias
    correction is folded into the learning rate
    (``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``). Defaults:
    ``learning_rate`` 0.001, ``beta1`` 0.9, ``beta2`` 0.999, ``epsilon`` 1e-8,
    ``lazy_update`` True. State: (mean, variance)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs):
        super(Adam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),
                zeros(weight.shape, weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state):
        _check_arrays("Adam", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        kwargs = self._common_kwargs()
        kwargs.update(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon)
        mean, var = state
        _nd.adam_update(weight, grad, mean, var, out=weight, lr=lr, wd=wd, **kwargs)


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al.)::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += grad ** 2
        weight -= lr * (grad / sqrt(history + eps) + wd * weight)

    Default ``eps`` 1e-7. State: the history (float32)."""

    def __init__(self, eps=1e-7, **kwargs):
        super(AdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state):
        _check_arrays("AdaGrad", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = self._preprocess(grad)
        state[:] += _nd.square(grad)
        div = grad / _nd.sqrt(state + self.float_stable_eps)
        weight[:] += (div + weight * wd) * -lr


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (``centered=False``, ``rmsprop_update``)
    or Graves's centered form (``centered=True``, ``rmspropalex_update``).
    Defaults: ``learning_rate`` 0.001, ``gamma1`` 0.9, ``gamma2`` 0.9,
    ``epsilon`` 1e-8, ``centered`` False, ``clip_weights`` None."""

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False,
                 clip_weights=None, **kwargs):
        super(RMSProp, self).__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        count = 3 if self.centered else 1
        return tuple(zeros(weight.shape, weight.context) for _ in range(count))

    def update(self, index, weight, grad, state):
        _check_arrays("RMSProp", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        kwargs.update(gamma1=self.gamma1, epsilon=self.epsilon)
        if self.clip_weights:
            kwargs["clip_weights"] = self.clip_weights
        if not self.centered:
            (n,) = state
            _nd.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            n, g, delta = state
            kwargs["gamma2"] = self.gamma2
            _nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd, **kwargs)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler, 2012)::

        acc_g = rho * acc_g + (1 - rho) * g * g
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta * delta
        weight -= delta + wd * weight

    Defaults ``rho`` 0.9, ``epsilon`` 1e-5. (As in MXNet, the learning rate
    is not used.)"""

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super(AdaDelta, self).__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context), zeros(weight.shape, weight.context))

    def update(self, index, weight, grad, state):
        _check_arrays("AdaDelta", weight, grad)
        wd = self._get_wd(index)
        self._update_count(index)
        grad = self._preprocess(grad)
        acc_g, acc_delta = state
        acc_g[:] *= self.rho
        acc_g[:] += (1.0 - self.rho) * grad * grad
        delta = _nd.sqrt(acc_delta + self.epsilon) / _nd.sqrt(acc_g + self.epsilon) * grad
        acc_delta[:] *= self.rho
        acc_delta[:] += (1.0 - self.rho) * delta * delta
        weight[:] -= delta + wd * weight


@register
class Ftrl(Optimizer):
    """FTRL-proximal (McMahan et al., 2013) through ``ftrl_update``.
    Defaults: ``lamda1`` 0.01, ``learning_rate`` 0.1, ``beta`` 1. State: (z, n)."""

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super(Ftrl, self).__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context), zeros(weight.shape, weight.context))

    def update(self, index, weight, grad, state):
        _check_arrays("Ftrl", weight, grad)
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        kwargs = self._common_kwargs()
        kwargs.update(lamda1=self.lamda1, beta=self.beta)
        z, n = state
        _nd.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, **kwargs)


@register
class Adamax(Optimizer):
    """AdaMax, Adam with the infinity norm::

        grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * grad;  u = maximum(beta2 * u, |grad|)
        weight -= lr / (1 - beta1**t) * m / u

    Defaults: ``learning_rate`` 0.002, ``beta1`` 0.9, ``beta2`` 0.999."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super(Adamax, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),
                zeros(weight.shape, weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state):
        _check_arrays("Adamax", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        lr /= 1.0 - self.beta1 ** self._index_update_count[index]
        grad = grad * self.rescale_grad + wd * weight
        if self.clip_gradient is not None:
            grad = _nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        m_t, u_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1.0 - self.beta1) * grad
        u_t[:] = _nd.maximum(self.beta2 * u_t, _nd.abs(grad))
        weight[:] -= lr * m_t / u_t


@register
class Nadam(Optimizer):
    """Nesterov-momentum Adam (Dozat). Defaults: ``learning_rate`` 0.001,
    ``beta1`` 0.9, ``beta2`` 0.999, ``epsilon`` 1e-8, ``schedule_decay``
    0.004 (the momentum warm-up schedule, kept in ``m_schedule``)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004,
                 **kwargs):
        super(Nadam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),
                zeros(weight.shape, weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state):
        _check_arrays("Nadam", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        grad = grad * self.rescale_grad + wd * weight
        if self.clip_gradient is not None:
            grad = _nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        mom_t = self.beta1 * (1.0 - 0.5 * pow(0.96, t * self.schedule_decay))
        mom_next = self.beta1 * (1.0 - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * mom_t
        m_schedule_next = self.m_schedule * mom_next
        m_t, v_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1.0 - self.beta1) * grad
        v_t[:] *= self.beta2
        v_t[:] += (1.0 - self.beta2) * grad * grad
        grad_prime = grad / (1.0 - self.m_schedule)
        m_prime = m_t / (1.0 - m_schedule_next)
        v_prime = v_t / (1.0 - pow(self.beta2, t))
        m_bar = (1.0 - mom_t) * grad_prime + mom_next * m_prime
        weight[:] -= lr * m_bar / (_nd.sqrt(v_prime) + self.epsilon)


@register
class Test(Optimizer):
    """The test optimizer of MXNet: ``weight += rescale_grad * grad`` and the
    state mirrors the weight."""

    def create_state(self, index, weight):
        return zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state):
        weight[:] += grad * self.rescale_grad
        state[:] = weight


# ---------------------------------------------------------------------------
# Updater
# ---------------------------------------------------------------------------


class Updater(object):
    """Applies an optimizer to ``(index, grad, weight)`` triples, creating
    and keeping each index's state (what a KVStore calls on push).

    ``updater(index, grad, weight)`` takes one index or lists of them; with
    ``optimizer.aggregate_num > 0`` weights of one dtype are updated in
    groups of ``aggregate_num``.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        """Update ``weight`` in place from ``grad`` for ``index``."""
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                idx = indices[i] = idx.decode()
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced.get(idx, True):
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        if not self.aggregate_updates:
            for i, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(i, w, g, self.states[i])
            return
        by_dtype = {}
        for i, w, g in zip(indices, weights, grads):
            by_dtype.setdefault(w.dtype, []).append((i, w, g))
        step = self.optimizer.aggregate_num
        for group in by_dtype.values():
            idxs, ws, gs = (list(c) for c in zip(*group))
            for lo in range(0, len(idxs), step):
                hi = lo + step
                self.optimizer.update_multi_precision(idxs[lo:hi], ws[lo:hi], gs[lo:hi],
                                                      [self.states[k] for k in idxs[lo:hi]])

    def sync_state_context(self, state, context):
        """``state`` (an NDArray or nested tuple/list of them) moved to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            moved = [self.sync_state_context(s, context) for s in state]
            return tuple(moved) if isinstance(state, tuple) else moved
        return state

    def set_states(self, states):
        """Restore states from the bytes of :meth:`get_states` (also accepts
        the optimizer when it was dumped with them). Files written by MXNet
        1.9.1 load too: their ``mxnet.*`` classes map to oxnet's."""
        from ._compat import loads_states
        states = loads_states(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """The states pickled to bytes; with ``dump_optimizer`` the pair
        ``(states, optimizer)`` (keeping learning-rate schedules too)."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An :class:`Updater` for ``optimizer`` (what KVStore.set_optimizer uses)."""
    return Updater(optimizer)
