"""Gluon Trainer (``mx.gluon.Trainer``): applies an Optimizer to a set of
Parameters, summing gradients across contexts through a KVStore."""
from __future__ import annotations

import os

import numpy as np

from .. import kvstore as kvs
from .. import optimizer as opt
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) as MXNet's model._create_kvstore:
    one device and a non-distributed type need no kvstore."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local":
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


class Trainer:
    """Apply ``optimizer`` to ``params``.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameters (a dict is taken in sorted key order)
    optimizer : str or Optimizer
    optimizer_params : dict -- e.g. ``{'learning_rate': 0.1}`` (only with a str optimizer)
    kvstore : str, KVStore or None (default 'device') -- how gradients of
        several contexts are summed; one context needs none
    compression_params : dict -- gradient compression for the kvstore
    update_on_kvstore : bool or None -- update weights inside the kvstore

    ``step(batch_size)`` rescales gradients by 1/batch_size, sums them over
    contexts and updates every Parameter with grad_req != 'null'.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[k] for k in sorted(list(params.keys()))]
        if not isinstance(params, (list, tuple)):
            raise ValueError("First argument must be a list or dict of Parameters, got %s." % type(params))
        self._params = []
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError("First argument must be a list or dict of Parameters, got list of %s."
                                 % type(param))
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params if optimizer_params else {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        self._reset_kvstore()

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and contexts != ctx:
                raise AssertionError(
                    "All Parameters must be initialized on the same set of contexts, but Parameter %s is initialized "
                    "on %s while previous Parameters are initialized on %s." % (param.name, str(ctx), str(contexts)))
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: p for i, p in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an instance of Optimizer "
                                     "instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    def _init_params(self):
        """Copy the Parameters into the kvstore (those initialized by now)."""
        pending = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    pending.append(param)
                else:
                    arrays = param._check_and_get(param._data, list)
                    self._kvstore.broadcast(self._param2idx[param.name], arrays[0], arrays)
        self._params_to_init = pending

    def _reset_kvstore(self):
        if self._kvstore and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        config = self._kvstore_params
        arg_arrays = {p.name: p.data(self._contexts[0]) for p in self._params}
        kvstore, update_on_kvstore = _create_kvstore(config["kvstore"], len(self._contexts), arg_arrays)
        self._distributed = "dist" in kvstore.type if kvstore else False
        if self._distributed and "async" in kvstore.type:
            update_on_kvstore = True
            if config["update_on_kvstore"] is False:
                raise ValueError("Please set update_on_kvstore=True when training in async mode.")
        if config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        if update_on_kvstore and kvstore is not None and not kvstore.is_capable("optimizer"):
            if config["update_on_kvstore"]:
                raise ValueError("Please set update_on_kvstore=False when training with {}".format(type(kvstore)))
            update_on_kvstore = False
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """The Optimizer in use."""
        return self._optimizer

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate to ``lr``."""
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale):
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning("Possible change in the `batch_size` from previous `step` detected. Optimizer "
                                  "gradient normalizing factor will not change w.r.t new batch_size when "
                                  "update_on_kvstore=True and when distributed kvstore is used.")
        self._optimizer.rescale_grad = scale

    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: gradients are scaled by ``rescale_grad / batch_size``,
        summed over contexts and applied. ``ignore_stale_grad`` skips
        Parameters whose gradient backward has not written since the last step
        (otherwise they raise UserWarning)."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._prepare()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum the gradients over contexts (for ``update`` after manual
        gradient processing such as clipping); needs update_on_kvstore=False."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError("allreduce_grads() when parameters are updated on kvstore is not supported. Try "
                                 "setting `update_on_kvstore` to False when creating trainer.")
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            if self._update_on_kvstore:
                self._kvstore.pushpull(i, param.list_grad(), out=param.list_data(), priority=-i)
            else:
                self._kvstore.pushpull(i, param.list_grad(), priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer to the (already summed) gradients; see :meth:`step`."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError("update() when parameters are updated on kvstore is not supported. Try setting "
                                 "`update_on_kvstore` to False when creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        updates = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            if not ignore_stale_grad:
                for data in param._check_and_get(param._data, list):
                    if not data._fresh_grad:
                        raise UserWarning(
                            "Gradient of Parameter `%s` on context %s has not been updated by backward since last "
                            "`step`. This could mean a bug in your model that made it only use a subset of the "
                            "Parameters (Blocks) for this iteration. If you are intentionally only using a subset, "
                            "call step with ignore_stale_grad=True to suppress this warning and skip updating of "
                            "Parameters with stale gradient" % (param.name, str(data.context)))
            if self._kvstore and self._update_on_kvstore:
                for data in param.list_data():
                    data._fresh_grad = False
                continue
            for upd, arr, grad in zip(updates, param.list_data(), param.list_grad()):
                if not ignore_stale_grad or arr._fresh_grad:
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        if not (self._kvstore and self._update_on_kvstore):
            for updater, upd in zip(self._updaters, updates):
                if upd:
                    idx, grads, weights = zip(*upd)
                    updater(list(idx), list(grads), list(weights))

    def save_states(self, fname):
        """Save the optimizer states (momentum etc.) to ``fname``."""
        self._prepare()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise AssertionError("Cannot save trainer states when some parameters are not yet initialized in "
                                     "kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Load optimizer states saved by :meth:`save_states`."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
