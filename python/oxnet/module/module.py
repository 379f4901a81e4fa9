"""Module: a Symbol bound on one or several contexts, with parameters, an
optimizer and (for several contexts) a KVStore summing the gradients."""
import logging
import os
import warnings

import numpy as np

from .. import context as ctx
from .. import kvstore as kvs
from .. import ndarray as nd
from .. import optimizer as opt
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import load_checkpoint
from .base_module import BaseModule, _check_input_names, _parse_data_desc
from .executor_group import DataParallelExecutorGroup

__all__ = ["Module"]


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) as MXNet's model._create_kvstore:
    one device with a local type needs no store."""
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
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values()) if arg_params else 0
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be a KVStore, a str or None, got %s" % type(kvstore).__name__)
    if kv is None:
        update_on_kvstore = False
    return kv, update_on_kvstore


# The initializers MXNet's operators attach (as ``__init__`` attributes) to the
# inputs they create themselves: BatchNorm's moving statistics and PReLU's slope.
_OP_INPUT_INITS = {
    "BatchNorm": {3: '["zero", {}]', 4: '["one", {}]'},
    "SyncBatchNorm": {3: '["zero", {}]', 4: '["one", {}]'},
    "LeakyReLU": {1: '["constant", {"value": 0.25}]'},
}


def _init_attrs(symbol):
    """``symbol.attr_dict()`` plus the ``__init__`` attributes of operator-created
    variables (as MXNet's symbols carry them), unless the variable has its own."""
    import json

    attrs = {k: dict(v) for k, v in symbol.attr_dict().items()}
    nodes = json.loads(symbol.tojson())["nodes"]
    for node in nodes:
        table = _OP_INPUT_INITS.get(node["op"])
        if not table:
            continue
        if node["op"] == "LeakyReLU" and node.get("attrs", {}).get("act_type") != "prelu":
            continue
        for slot, init in table.items():
            if slot < len(node["inputs"]):
                src = nodes[node["inputs"][slot][0]]
                if src["op"] == "null":
                    attrs.setdefault(src["name"], {}).setdefault("__init__", init)
    return attrs


class Module(BaseModule):
    """A module over a Symbol (MXNet's ``mx.mod.Module``).

    Parameters
    ----------
    symbol : Symbol
    data_names, label_names : list of str
        Input names for data ('data') and labels ('softmax_label').
    logger : logging module or Logger
    context : Context or list of Context
        Several contexts train data-parallel: each gets a slice of the batch
        (by ``work_load_list``) and the gradients are summed through a KVStore.
    work_load_list : list of numbers, optional
    fixed_param_names : list of str, optional
        Parameters not updated (no gradient).
    state_names : list of str, optional
        Inputs that keep their values between batches (set_states).
    group2ctxs, compression_params : as MXNet (compression_params go to the KVStore).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=ctx.cpu(), work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super(Module, self).__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError("Module: work_load_list has %d entries for %d contexts"
                             % (len(work_load_list), len(self._context)))
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        input_names = data_names + label_names + state_names
        self._param_names = [x for x in symbol.list_arguments() if x not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # -- checkpoints -------------------------------------------------------------

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from ``prefix-symbol.json`` and ``prefix-<epoch>.params``
        (``kwargs`` go to the constructor); with ``load_optimizer_states``
        the ``prefix-<epoch>.states`` file is read by init_optimizer."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Write ``prefix-symbol.json``, ``prefix-<epoch>.params`` and, with
        ``save_optimizer_states``, ``prefix-<epoch>.states``."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # -- properties ----------------------------------------------------------------

    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._require("binded")
        return self._data_shapes

    @property
    def label_shapes(self):
        self._require("binded")
        return self._label_shapes

    @property
    def output_shapes(self):
        self._require("binded")
        return self._exec_group.get_output_shapes()

    # -- parameters ----------------------------------------------------------------

    def get_params(self):
        """``(arg_params, aux_params)`` on the CPU (averaged over devices)."""
        self._require("binded", "params_initialized")
        if self._params_dirty:
            self._sync_params_from_devices()
        return (self._arg_params, self._aux_params)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initialize the parameters: from ``arg_params``/``aux_params``
        where given (a missing one raises unless ``allow_missing``, then
        ``initializer`` fills it), else with ``initializer`` (an
        :class:`InitDesc` carrying the symbol's attributes, so ``__init__``
        attributes apply). ``force_init`` re-initializes; ``allow_extra``
        ignores names the network lacks."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call ignored.",
                          stacklevel=2)
            return
        self._require("binded")

        def _impl(name, arr, cache):
            if cache is not None:
                if name in cache:
                    if cache[name] is not arr:
                        if cache[name].shape != arr.shape:
                            raise ValueError("init_params: %s has shape %s but the module needs %s"
                                             % (name, cache[name].shape, arr.shape))
                        cache[name].copyto(arr)
                    return
                if not allow_missing:
                    raise RuntimeError("%s is not presented" % name)
                if initializer is not None:
                    initializer(name, arr)
            else:
                initializer(name, arr)

        attrs = _init_attrs(self._symbol)
        for name, arr in sorted(self._arg_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Set parameters from dicts (see :meth:`init_params`)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # -- binding -------------------------------------------------------------------

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Allocate the executors for ``data_shapes`` / ``label_shapes``
        (lists of DataDesc or (name, shape)). ``shared_module`` (bound,
        initialized) lends its parameters; ``grad_req`` is 'write', 'add',
        'null' or a dict by name."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ValueError("bind: inputs_need_grad needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(self.data_names, self.label_names, data_shapes,
                                                                 label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded and shared_module.params_initialized):
                raise ValueError("bind: shared_module must be a bound Module with initialized parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise ValueError("bind: shared_module has fewer contexts than this module")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes, self._label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, group2ctxs=self._group2ctxs,
            state_names=self._state_names)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {n: nd.zeros(b[0].shape, dtype=b[0].dtype)
                                for n, b in zip(self._param_names, self._exec_group.param_arrays)}
            self._aux_params = {n: nd.zeros(b[0].shape, dtype=b[0].dtype)
                                for n, b in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Re-bind for new input shapes (e.g. another batch size), keeping the parameters."""
        self._require("binded")
        self._data_shapes, self._label_shapes = _parse_data_desc(self.data_names, self.label_names, data_shapes,
                                                                 label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # -- optimizer -----------------------------------------------------------------

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Create the optimizer (a name with ``optimizer_params``, or an
        Optimizer; ``rescale_grad`` defaults to 1/batch_size) and, for several
        contexts, the KVStore."""
        self._require("binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        rescale_grad = 1.0 / batch_size
        idx2name = {}
        if update_on_kvstore:
            idx2name.update(enumerate(self._exec_group.param_names))
        else:
            n = len(self._context)
            for k in range(n):
                idx2name.update({i * n + k: name for i, name in enumerate(self._exec_group.param_names)})
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError("init_optimizer: optimizer must be a name or an Optimizer, got %s"
                                % type(optimizer).__name__)
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad is not normalized to "
                              "1.0/batch_size/num_workers (%s vs. %s). Is this intended?"
                              % (optimizer.rescale_grad, rescale_grad), stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            for idx, (name, on_devs) in enumerate(zip(self._param_names, self._exec_group.param_arrays)):
                kvstore.init(name, self._arg_params[name])
                if update_on_kvstore:
                    kvstore.pull(name, on_devs, priority=-idx)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer, KVStore and updater."""
        if not shared_module.optimizer_initialized:
            raise RuntimeError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    # -- computation -----------------------------------------------------------------

    def forward(self, data_batch, is_train=None):
        """Run the network on ``data_batch`` (a DataBatch or list of them;
        other input shapes than bound re-bind first). ``is_train`` defaults
        to ``for_training``."""
        self._require("binded", "params_initialized")
        curr = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):
            new = []
            for i in range(len(data_batch[0].data)):
                shape = data_batch[0].data[i].shape
                if any(db.data[i].shape != shape for db in data_batch):
                    raise ValueError("All data batches in a list need to have the same shape")
                new.append((len(data_batch) * shape[0],) + tuple(shape[1:]))
            new = tuple(new)
        else:
            new = tuple(d.shape for d in data_batch.data)
        if curr != new:
            if getattr(data_batch, "provide_data", None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(d.name, s, d.dtype, d.layout) for d, s in zip(self._data_shapes, new)]
            if getattr(data_batch, "provide_label", None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_lshape = [DataDesc(d.name, j.shape, d.dtype, d.layout)
                              for d, j in zip(self._label_shapes, data_batch.label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Back-propagate from the outputs (``out_grads`` for outputs that are not losses)."""
        self._require("binded", "params_initialized")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Update the parameters from the gradients: through the KVStore
        (summing devices, optimizer in the store) or the local updater."""
        self._require("binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            for index, (name, args, grads) in enumerate(zip(group.param_names, group.param_arrays,
                                                            group.grad_arrays)):
                if grads[0] is None:
                    continue
                self._kvstore.push(name, grads, priority=-index)
                self._kvstore.pull(name, args, priority=-index)
            return
        num_device = len(self._context)
        updates = [[] for _ in range(num_device)]
        for index, (name, args, grads) in enumerate(zip(group.param_names, group.param_arrays, group.grad_arrays)):
            if grads[0] is None:
                continue
            if self._kvstore:
                self._kvstore.pushpull(name, grads, priority=-index)
            for k, (w, g) in enumerate(zip(args, grads)):
                updates[k].append((index * num_device + k, g, w))
        for dev_updates in updates:
            if dev_updates:
                idx, g, w = zip(*dev_updates)
                self._updater(list(idx), list(g), list(w))

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward (merged over devices by default)."""
        self._require("binded", "params_initialized")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._require("binded", "params_initialized")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        """Values of the ``state_names`` inputs."""
        self._require("binded", "params_initialized")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Set the ``state_names`` inputs (per-device arrays, or one value)."""
        self._require("binded", "params_initialized")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate the last outputs against ``labels`` into ``eval_metric``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def save_optimizer_states(self, fname):
        """Write the optimizer states (the KVStore's or the updater's) to ``fname``."""
        self._require("optimizer_initialized")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Read optimizer states written by :meth:`save_optimizer_states`."""
        self._require("optimizer_initialized")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as fin:
                self._updater.set_states(fin.read())

    def install_monitor(self, mon):
        """Install a Monitor on every executor."""
        self._require("binded")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Nothing to prepare for dense parameters (MXNet's row_sparse pulls
        have no counterpart in oxnet)."""
        self._require("binded")
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn: oxnet has no row_sparse parameters to pull"))
