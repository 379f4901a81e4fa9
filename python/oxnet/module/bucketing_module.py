"""BucketingModule: one Module per bucket key (e.g. sequence length), all
sharing the parameters of the default bucket's module."""
import logging
import warnings

from .. import context as ctx
from ..initializer import Uniform
from .base_module import BaseModule
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """A module that switches networks by each batch's ``bucket_key``.

    ``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)``;
    ``default_bucket_key`` is bound first and owns the parameters that every
    other bucket shares (MXNet 1.9.1's BucketingModule). Other arguments as
    :class:`Module`.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None, compression_params=None):
        super(BucketingModule, self).__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        self._fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        self._state_names = list(state_names) if state_names is not None else []
        self._compression_params = compression_params
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _call_sym_gen(self, *args, **kwargs):
        return self._sym_gen(*args, **kwargs)

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        self._require("binded")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        self._require("binded")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        self._require("binded")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The current bucket's Symbol."""
        self._require("binded")
        return self._curr_module.symbol

    def get_params(self):
        """The shared parameters (CPU copies)."""
        self._require("binded", "params_initialized")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Set the shared parameters."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing, force_init=force_init,
                                     allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initialize the shared parameters (see Module.init_params)."""
        if self.params_initialized and not force_init:
            return
        self._require("binded")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                                      allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        self._require("binded", "params_initialized")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._require("binded", "params_initialized")
        self._curr_module.set_states(states, value)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Bind the default bucket's module (``shared_module`` is not supported, as in MXNet)."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ValueError("BucketingModule.bind: shared_module is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._new_module(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=self._grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key`` current, binding its module (sharing the
        default bucket's parameters) the first time."""
        self._require("binded")
        if bucket_key not in self._buckets:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._new_module(symbol, data_names, label_names)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key], grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Create the optimizer on the current module; every bucket shares it."""
        self._require("binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Switch to the batch's bucket."""
        self._require("binded", "params_initialized")
        bucket_key = data_batch.bucket_key
        original_key = self._curr_bucket_key
        self.switch_bucket(bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original_key, None, None)

    def forward(self, data_batch, is_train=None):
        """Forward on the module of ``data_batch.bucket_key``."""
        self._require("binded", "params_initialized")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._require("binded", "params_initialized")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        """Update the shared parameters."""
        self._require("binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        self._require("binded", "params_initialized")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._require("binded", "params_initialized")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._require("binded", "params_initialized")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._require("binded")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Save the default bucket's symbol and the shared parameters."""
        self._buckets[self._default_bucket_key].save_checkpoint(prefix, epoch, remove_amp_cast=remove_amp_cast)
