"""SequentialModule: modules chained output to input."""
import copy
import logging

from ..initializer import Uniform
from ..io import DataDesc
from .base_module import BaseModule

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """Modules run one after another: each module's outputs are the next
    one's data. ``add(module, take_labels=False, auto_wiring=False)``:
    ``take_labels`` gives that module the labels (and it updates metrics);
    ``auto_wiring`` renames the previous outputs to its data names."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super(SequentialModule, self).__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Append ``module``; returns self so calls chain."""
        self._modules.append(module)
        for key in kwargs:
            if key not in self._meta_keys:
                raise ValueError("SequentialModule.add: unknown meta %r (use %s)" % (key, sorted(self._meta_keys)))
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        self._require("binded")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        self._require("binded")
        return self._label_shapes

    @property
    def output_shapes(self):
        self._require("binded")
        return self._modules[-1].output_shapes

    def get_params(self):
        """All modules' parameters in two dicts."""
        self._require("binded", "params_initialized")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return (arg_params, aux_params)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initialize every module (parameter names must be unique across modules)."""
        if self.params_initialized and not force_init:
            return
        self._require("binded")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                               allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        seen = {}
        for i, module in enumerate(self._modules):
            arg, aux = module.get_params()
            for name in list(arg) + list(aux):
                if name in seen:
                    raise ValueError("Duplicated parameter names: name \"%s\" in layer %d (%s) is already used "
                                     "in layer %d (%s)." % (name, i, type(module), seen[name][0],
                                                            type(self._modules[seen[name][0]])))
                seen[name] = (i,)
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Bind the modules in turn, each on the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("bind: inputs_need_grad needs for_training=True")
        if shared_module is not None:
            raise ValueError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise ValueError("SequentialModule.bind: add modules first")
        self.binded = True
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_ever_needs_label = False
        for i, module in enumerate(self._modules):
            meta = self._metas[i]
            if meta.get(self.META_TAKE_LABELS, False):
                my_label_shapes = label_shapes
                anybody_ever_needs_label = True
            else:
                my_label_shapes = None
            my_inputs_need_grad = bool(inputs_need_grad or (for_training and i > 0))
            if meta.get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(my_data_shapes):
                    raise ValueError("auto_wiring: %d data names for %d outputs" % (len(names), len(my_data_shapes)))
                my_data_shapes = [(n, d[1] if not isinstance(d, DataDesc) else d.shape)
                                  for n, d in zip(names, my_data_shapes)]
            module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes, for_training=for_training,
                        inputs_need_grad=my_inputs_need_grad, force_rebind=force_rebind, shared_module=None,
                        grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not anybody_ever_needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Create each module's optimizer."""
        self._require("binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params,
                                  force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        """Forward through every module, outputs feeding the next."""
        self._require("binded", "params_initialized")
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, "provide_data"):
                names = [x[0] for x in module.output_shapes]
                data_batch.provide_data = [(n, x.shape) for n, x in zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        """Backward from the last module to the first."""
        self._require("binded", "params_initialized")
        for i, module in reversed(list(zip(range(len(self._modules)), self._modules))):
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        """Update every module."""
        self._require("binded", "params_initialized", "optimizer_initialized")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        self._require("binded", "params_initialized")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._require("binded", "params_initialized")
        if not self.inputs_need_grad and not self._modules[0].inputs_need_grad:
            raise RuntimeError("get_input_grads: bind with inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update the metric with the modules that take labels."""
        self._require("binded", "params_initialized")
        for meta, module in zip(self._metas, self._modules):
            if meta.get(self.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._require("binded")
        for module in self._modules:
            module.install_monitor(mon)
