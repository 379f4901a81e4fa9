"""BaseModule: the training loop (fit), scoring and prediction shared by
every module type, as MXNet 1.9.1 defines them."""
import logging
import sys
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray
from ..callback import LiveProgress
from ..context import cpu
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam

__all__ = ["BaseModule"]


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def _check_input_names(symbol, names, typename, throw):
    """Check that ``names`` are arguments of ``symbol`` (raise or warn)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = ("You created Module with Module(..., %s_names=%s) but input with name '%s' is not found in "
               "symbol.list_arguments(). Did you mean one of:\n\t%s" % (typename, names, name, "\n\t".join(candidates)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _check_names_match(data_names, data_shapes, name, throw):
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = "Data provided by %s_shapes don't match names specified by %s_names (%s vs. %s)" % (
            name, name, data_shapes, data_names)
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """DataDesc lists from (name, shape) pairs or DataDescs, names checked."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule(object):
    """The interface of modules and the loops built on it: :meth:`fit`,
    :meth:`score`, :meth:`predict`, :meth:`iter_predict`. A module goes
    through bind -> init_params -> init_optimizer, then forward/backward/update.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # -- high level ------------------------------------------------------------

    def forward_backward(self, data_batch):
        """forward (training) then backward."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _require(self, *flags):
        names = {"binded": "call bind first", "params_initialized": "call init_params first",
                 "optimizer_initialized": "call init_optimizer first"}
        for f in flags:
            if not getattr(self, f):
                raise RuntimeError("%s: %s" % (type(self).__name__, names[f]))

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None, score_end_callback=None,
              reset=True, epoch=0, sparse_row_id_fn=None):
        """Run ``eval_data`` through the network and return the metric's
        ``get_name_value()``; at most ``num_batch`` batches."""
        self._require("binded", "params_initialized")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [eb.label for eb in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric, locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` per batch, padding removed."""
        self._require("binded", "params_initialized")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield (outputs, nbatch, eval_batch)

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True, always_output_list=False,
                sparse_row_id_fn=None):
        """The outputs over ``eval_data`` (a DataIter, or one NDArray /
        NumPy batch), padding removed; with ``merge_batches`` the batches are
        concatenated (one NDArray per output; a single output is returned
        alone unless ``always_output_list``)."""
        self._require("binded", "params_initialized")
        if isinstance(eval_data, (ndarray.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = ndarray.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(out) != num_outputs for out in output_list):
            raise ValueError("Cannot merge batches, as num of outputs is not the same in mini-batches. "
                             "Maybe bucketing is used?")
        merged = [ndarray.concatenate([out[i] for out in output_list]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None, batch_end_callback=None,
            kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None, aux_params=None,
            allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0, num_epoch=None,
            validation_metric=None, monitor=None, sparse_row_id_fn=None, progress=None):
        """Train for epochs ``begin_epoch`` .. ``num_epoch - 1`` (MXNet's
        arguments). Each epoch logs ``Epoch[e] Train-<metric>=<value>`` and
        ``Epoch[e] Time cost=<s>``, calls the epoch-end callbacks with
        ``(epoch, symbol, arg_params, aux_params)`` and scores ``eval_data``
        (``Epoch[e] Validation-<metric>=<value>``).

        ``progress`` (oxnet's addition): None (default) draws a live
        progress line when stderr is a terminal, False never does, or a
        :class:`oxnet.callback.LiveProgress` to use.
        """
        if num_epoch is None:
            raise ValueError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label, for_training=True,
                  force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        live = self._live_progress(progress, train_data)
        batch_callbacks = ([] if batch_end_callback is None else _as_list(batch_end_callback))
        if live is not None:
            batch_callbacks = batch_callbacks + [live]
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_callbacks:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for callback in batch_callbacks:
                        callback(params)
                nbatch += 1
            if live is not None:
                live.finish()
                live.total = nbatch
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    @staticmethod
    def _live_progress(progress, train_data):
        if progress is False:
            return None
        if progress is not None and progress is not True:
            return progress
        batch_size = getattr(train_data, "batch_size", 0) or 0
        total = None
        num_data = getattr(train_data, "num_data", None)
        if num_data and batch_size:
            total = -(-num_data // batch_size)
        live = LiveProgress(batch_size, total=total, stream=sys.stderr)
        return live if (progress is True or live.enabled()) else None

    # -- abstract interface ---------------------------------------------------------

    @property
    def data_names(self):
        """Names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """Names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """DataDescs of the bound data inputs."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """DataDescs of the bound labels (None without labels)."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """(name, shape) pairs of the outputs."""
        raise NotImplementedError()

    def get_params(self):
        """``(arg_params, aux_params)``: dicts of name -> NDArray (CPU copies)."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initialize parameters from ``arg_params``/``aux_params`` or ``initializer``."""
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Set parameters from dicts of name -> NDArray."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)

    def save_params(self, fname):
        """Save the parameters to ``fname`` (``arg:``/``aux:`` keys, MXNet's format)."""
        arg_params, aux_params = self.get_params()
        save_dict = {("arg:%s" % k): v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({("aux:%s" % k): v.as_in_context(cpu()) for k, v in aux_params.items()})
        ndarray.save(fname, save_dict)

    def load_params(self, fname):
        """Load parameters saved by :meth:`save_params` (or by MXNet)."""
        save_dict = ndarray.load(fname)
        arg_params, aux_params = {}, {}
        for k, value in save_dict.items():
            arg_type, _, name = k.partition(":")
            if arg_type == "arg":
                arg_params[name] = value
            elif arg_type == "aux":
                aux_params[name] = value
            else:
                raise ValueError("Invalid param file %s (key %r has no arg:/aux: prefix)" % (fname, k))
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """Values of the state inputs (none by default)."""
        self._require("binded", "params_initialized")
        if merge_multi_context:
            raise ValueError("get_states: this module has no states")
        return []

    def set_states(self, states=None, value=None):
        """Set the state inputs (none by default)."""
        self._require("binded", "params_initialized")
        if states or value:
            raise ValueError("set_states: this module has no states")

    def install_monitor(self, mon):
        """Install a :class:`Monitor` on the executors."""
        raise NotImplementedError()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare for ``data_batch`` (bucket switching in BucketingModule)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    def forward(self, data_batch, is_train=None):
        """Run the network on ``data_batch``."""
        raise NotImplementedError()

    def backward(self, out_grads=None):
        """Back-propagate (after a training forward)."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bind with ``inputs_need_grad``)."""
        raise NotImplementedError()

    def update(self):
        """Apply the optimizer to the gradients."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate the last outputs into ``eval_metric``."""
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Allocate executors for the given input shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Create the optimizer (and the KVStore when several devices)."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The network's Symbol."""
        return self._symbol
