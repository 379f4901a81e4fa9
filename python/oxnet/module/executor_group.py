"""DataParallelExecutorGroup: one executor per context, each running a
slice of the batch (MXNet 1.9.1's data parallelism on one machine)."""
from collections import OrderedDict

from .. import ndarray as nd
from ..io import DataDesc

__all__ = ["DataParallelExecutorGroup"]


def _split_input_slice(batch_size, work_load_list):
    """Batch slices proportional to ``work_load_list`` (MXNet's rule)."""
    total = float(sum(work_load_list))
    sizes = [round(w * batch_size / total) for w in work_load_list]
    if sum(sizes) < batch_size:
        sizes[-1] += batch_size - sum(sizes)
    slices, end = [], 0
    for size in sizes:
        begin = int(min(end, batch_size))
        end = int(min(begin + size, batch_size))
        if begin >= end:
            raise ValueError("Too many slices: batch size %d cannot be split over %d devices with work loads %s"
                             % (batch_size, len(work_load_list), work_load_list))
        slices.append(slice(begin, end))
    return slices


def _load(sources, targets_per_dev, slices, axis_list):
    """Copy each source array's slice into the per-device target arrays."""
    for src, targets, axis in zip(sources, targets_per_dev, axis_list):
        for sl, dst in zip(slices, targets):
            if dst is None:
                continue
            if len(slices) == 1 or axis < 0:
                part = src
            elif axis == 0:
                part = src[sl.start:sl.stop]
            else:
                part = nd.slice_axis(src, axis=axis, begin=sl.start, end=sl.stop)
            if part.shape != dst.shape:
                raise ValueError("Module: an input of shape %s does not match the bound shape %s"
                                 % (part.shape, dst.shape))
            part.copyto(dst)


class DataParallelExecutorGroup(object):
    """Executors for ``symbol`` on each of ``contexts``, bound for the batch
    slices given by ``workload``; parameters are shared by name across calls
    to :meth:`bind_exec` through ``shared_group``."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training,
                 inputs_need_grad, shared_group=None, logger=None, fixed_param_names=None, grad_req="write",
                 state_names=None, group2ctxs=None):
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = fixed_param_names or []
        self.state_names = state_names or []
        self.group2ctxs = group2ctxs
        self.shared_group = shared_group
        self.execs = []
        self._total_exec_bytes = 0
        self.grad_req = self._grad_reqs(grad_req, data_shapes, label_shapes)
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_shapes, label_shapes):
        data_names = [d.name for d in data_shapes]
        reqs = {}
        for name in self.arg_names:
            if not self.for_training:
                reqs[name] = "null"
            elif name in self.param_names:
                if name in self.fixed_param_names:
                    reqs[name] = "null"
                elif isinstance(grad_req, dict):
                    reqs[name] = grad_req.get(name, "write")
                else:
                    reqs[name] = grad_req if isinstance(grad_req, str) else "write"
            elif name in data_names:
                reqs[name] = "write" if self.inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        return reqs

    def decide_slices(self, data_shapes):
        """Batch slices per device for ``data_shapes`` (batch axis from the layout)."""
        axes = [DataDesc.get_batch_axis(getattr(d, "layout", "NCHW")) for d in data_shapes]
        sizes = {d.shape[a] for d, a in zip(data_shapes, axes) if a >= 0}
        if len(sizes) > 1:
            raise ValueError("Module: all data must have the same batch size, got %s" % data_shapes)
        self.batch_size = sizes.pop() if sizes else 0
        self.slices = _split_input_slice(self.batch_size, self.workload)
        return axes

    def _sliced(self, descs, k):
        out = {}
        for d, axis in zip(descs, [DataDesc.get_batch_axis(getattr(x, "layout", "NCHW")) for x in descs]):
            shape = list(d.shape)
            if axis >= 0:
                sl = self.slices[k]
                shape[axis] = sl.stop - sl.start
            out[d.name] = tuple(shape)
        return out

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """(Re)bind one executor per context for these input shapes."""
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes else []
        self.data_axes = self.decide_slices(data_shapes)
        self.label_axes = [DataDesc.get_batch_axis(getattr(d, "layout", "NCHW")) for d in (label_shapes or [])]
        type_dict = {d.name: d.dtype for d in list(data_shapes) + list(label_shapes or [])}
        new_execs = []
        for k, ctx in enumerate(self.contexts):
            shapes = self._sliced(data_shapes, k)
            if label_shapes:
                shapes.update(self._sliced(label_shapes, k))
            if reshape and self.execs:
                new_execs.append(self.execs[k].reshape(partial_shaping=True, allow_up_sizing=True, **shapes))
                continue
            shared = shared_group.execs[k] if shared_group is not None else None
            # simple_bind shares the shared executor's arrays of the same name and shape
            exe = self.symbol.simple_bind(ctx, grad_req=self.grad_req, type_dict=type_dict,
                                          group2ctx=self.group2ctxs, shared_exec=shared, **shapes)
            new_execs.append(exe)
        self.execs = new_execs
        self._collect_arrays()

    def _collect_arrays(self):
        execs = self.execs
        self.param_arrays = [[e.arg_dict[n] for e in execs] for n in self.param_names]
        self.grad_arrays = [[e.grad_dict.get(n) for e in execs] for n in self.param_names] if self.for_training \
            else []
        self.aux_arrays = [[e.aux_dict[n] for e in execs] for n in self.aux_names]
        self.data_arrays = [[e.arg_dict[n] for e in execs] for n in self.data_names]
        self.label_arrays = [[e.arg_dict[n] for e in execs] for n in self.label_names if n in self.arg_names]
        self.state_arrays = [[e.arg_dict[n] for e in execs] for n in self.state_names]
        self.input_grad_arrays = [[e.grad_dict.get(n) for e in execs] for n in self.data_names] \
            if self.inputs_need_grad else []
        self._total_exec_bytes = sum(e.memory_bytes()[0] for e in execs)

    def reshape(self, data_shapes, label_shapes):
        """Rebind for new input shapes, keeping the parameters."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy parameters (dicts of name -> NDArray) into every executor."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Write the device average of each parameter into the given dicts."""
        for name, block in zip(self.param_names, self.param_arrays):
            avg = block[0].copyto(arg_params[name].context) if len(block) == 1 else \
                nd.add_n(*[w.as_in_context(arg_params[name].context) for w in block]) / len(block)
            avg.astype(arg_params[name].dtype).copyto(arg_params[name])
        for name, block in zip(self.aux_names, self.aux_arrays):
            avg = block[0].copyto(aux_params[name].context) if len(block) == 1 else \
                nd.add_n(*[w.as_in_context(aux_params[name].context) for w in block]) / len(block)
            avg.astype(aux_params[name].dtype).copyto(aux_params[name])

    def forward(self, data_batch, is_train=None):
        """Load the batch's slices into the executors and run them."""
        if is_train is None:
            is_train = self.for_training
        if isinstance(data_batch, list):
            data = [nd.concatenate([b.data[i] for b in data_batch]) for i in range(len(self.data_names))]
            label = ([nd.concatenate([b.label[i] for b in data_batch]) for i in range(len(data_batch[0].label))]
                     if data_batch[0].label else None)
        else:
            data, label = data_batch.data, data_batch.label
        if len(data) != len(self.data_names):
            raise ValueError("Module.forward: the batch has %d data arrays but the module was bound with %d (%s)"
                             % (len(data), len(self.data_names), self.data_names))
        _load(data, self.data_arrays, self.slices, self.data_axes)
        if label and self.label_arrays and is_train is not None:
            _load(label, self.label_arrays, self.slices, self.label_axes)
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Back-propagate on every executor (``out_grads`` sliced per device)."""
        if not self.for_training:
            raise RuntimeError("Module.backward: re-bind with for_training=True")
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        for k, exe in enumerate(self.execs):
            grads = None
            if out_grads is not None:
                sl = self.slices[k]
                grads = [g[sl.start:sl.stop].as_in_context(self.contexts[k]) if len(self.execs) > 1 else g
                         for g in out_grads]
            exe.backward(out_grads=grads)

    def get_output_shapes(self):
        """(name, merged shape) of each output."""
        outputs = self.execs[0].outputs
        shapes = []
        for name, out in zip(self.symbol.list_outputs(), outputs):
            shape = list(out.shape)
            if shape and len(self.execs) > 1:
                shape[0] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    @staticmethod
    def _merge(per_dev, ctx):
        if len(per_dev) == 1:
            return per_dev[0]
        return nd.concatenate([x.as_in_context(ctx) for x in per_dev])

    def get_outputs(self, merge_multi_context=True):
        """Outputs, merged over devices (or per device as lists of lists)."""
        outs = [[e.outputs[i] for e in self.execs] for i in range(len(self.execs[0].outputs))]
        if merge_multi_context:
            return [self._merge(o, self.contexts[0]) for o in outs]
        return outs

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs."""
        if not self.inputs_need_grad:
            raise RuntimeError("get_input_grads: bind with inputs_need_grad=True")
        if merge_multi_context:
            return [self._merge(g, self.contexts[0]) for g in self.input_grad_arrays]
        return self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        """Values of the state inputs."""
        if merge_multi_context:
            return [self._merge(s, self.contexts[0]) for s in self.state_arrays]
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Set the state inputs from per-device lists, or all to ``value``."""
        if states is not None:
            if value is not None:
                raise ValueError("set_states: give states or value, not both")
            for src, dsts in zip(states, self.state_arrays):
                for s, d in zip(src, dsts):
                    s.copyto(d)
        else:
            for dsts in self.state_arrays:
                for d in dsts:
                    d[:] = value

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` device by device with that device's label slice."""
        for k, exe in enumerate(self.execs):
            if pre_sliced:
                labels_k = labels[k]
            else:
                sl = self.slices[k]
                labels_k = []
                for lab, axis in zip(labels, self.label_axes or [0] * len(labels)):
                    if len(self.execs) == 1:
                        labels_k.append(lab)
                    elif axis == 0:
                        labels_k.append(lab[sl.start:sl.stop])
                    else:
                        labels_k.append(nd.slice_axis(lab, axis=axis, begin=sl.start, end=sl.stop))
            label_dict = OrderedDict(zip(self.label_names, labels_k))
            pred_dict = OrderedDict(zip(self.symbol.list_outputs(), exe.outputs))
            eval_metric.update_dict(label_dict, pred_dict)

    def install_monitor(self, mon):
        """Install ``mon`` on every executor."""
        for exe in self.execs:
            mon.install(exe)
