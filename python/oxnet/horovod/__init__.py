"""Horovod's MXNet API (``horovod.mxnet``) over oxnet's MPI layer: a script
written for ``import horovod.mxnet as hvd`` runs after changing the import to
``import oxnet.horovod as hvd`` (and ``mxnet`` to ``oxnet``), launched with
``mpirun -np N python train.py`` or ``python -m oxnet.tools.launch -n N train.py``.

Collectives run synchronously on the calling thread (MPI releases the GIL),
ordered with the engine: they wait for the arrays' pending work first and
write results as engine writes. ``grouped_allreduce`` and
:class:`DistributedTrainer` fuse all tensors of a call into one buffer per
dtype (``HOROVOD_FUSION_THRESHOLD`` bytes at most). ``name`` and ``priority``
are accepted; the names take part in the per-call check that every rank
passes matching tensors (a mismatch raises MXNetError on every rank).
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np

from .. import gluon
from .. import ndarray as nd
from .. import optimizer as _opt
from ..base import MXNetError
from ..kvstore import _mpi

__all__ = [
    "init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built",
    "ccl_built", "cuda_built", "rocm_built", "start_timeline", "stop_timeline", "alltoall",
    "Average", "Sum", "Min", "Max", "Product", "Adasum",
    "allreduce", "allreduce_", "grouped_allreduce", "grouped_allreduce_", "allgather", "broadcast", "broadcast_",
    "broadcast_object", "allgather_object", "broadcast_parameters", "Compression", "DistributedOptimizer",
    "DistributedTrainer",
]

# reduction ops (Horovod's names)
Average = "average"
Sum = "sum"
Adasum = "adasum"
Min = "min"
Max = "max"
Product = "prod"

_initialized = False


def _comm():
    if not _initialized:
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    return _mpi.get()


def init(comm=None, process_sets=None):
    """Initialize MPI (the world communicator of ``mpirun``). ``comm`` may be
    None or a list of all ranks; sub-communicators and process sets are not
    supported."""
    global _initialized
    if comm is not None and list(comm) != list(range(_mpi.get().size)):
        raise MXNetError("hvd.init: only the world communicator is supported (comm=None)")
    if process_sets not in (None, [], "dynamic"):
        raise MXNetError("hvd.init: process sets are not supported by oxnet.horovod")
    _mpi.get()
    _initialized = True


def shutdown():
    """Mark Horovod as shut down (MPI itself is finalized at exit)."""
    global _initialized
    _initialized = False


def is_initialized():
    """Whether :func:`init` was called."""
    return _initialized


def size():
    """The number of processes."""
    return _comm().size


def local_size():
    """The number of processes on this host."""
    return _comm().local_size


def rank():
    """This process's rank in [0, size())."""
    return _comm().rank


def local_rank():
    """This process's rank among the processes of its host."""
    return _comm().local_rank


def cross_size():
    """The number of hosts (when every host runs local_size() processes)."""
    c = _comm()
    return c.size // c.local_size


def cross_rank():
    """This host's index (when every host runs local_size() processes)."""
    c = _comm()
    return c.rank // c.local_size


def mpi_threads_supported():
    """Whether the MPI library was initialized with MPI_THREAD_MULTIPLE."""
    c = _comm()
    return c.MPI.Query_thread() == c.MPI.THREAD_MULTIPLE


def mpi_enabled():
    """True: collectives run over MPI."""
    return True


def mpi_built():
    """True: built over MPI (mpi4py)."""
    return True


def gloo_enabled():
    """False: no Gloo controller."""
    return False


def gloo_built():
    """False: no Gloo controller."""
    return False


def nccl_built():
    """False: no NCCL."""
    return False


def ddl_built():
    """False: no IBM DDL."""
    return False


def ccl_built():
    """False: no oneCCL."""
    return False


def cuda_built():
    """False: CPU collectives only."""
    return False


def rocm_built():
    """False: CPU collectives only."""
    return False


def start_timeline(file_path, mark_cycles=False):
    """Horovod's timeline is not built: use ``oxnet.profiler`` (collectives
    appear as tasks of domain oxnet.dist in its trace)."""
    raise MXNetError("hvd.start_timeline: Horovod's timeline is not available in oxnet.horovod; run "
                     "oxnet.profiler (set_config / set_state('run') / dump): collectives appear in its trace as "
                     "tasks of domain oxnet.dist")


def stop_timeline():
    """See :func:`start_timeline`."""
    raise MXNetError("hvd.stop_timeline: Horovod's timeline is not available in oxnet.horovod; use oxnet.profiler")


def _resolve_op(average, op, what):
    if average is not None and op is not None:
        raise ValueError("%s: the op parameter supersedes average; give only one" % what)
    if op is None:
        op = Average if average is None or average else Sum
    if op == Adasum:
        raise MXNetError("%s: the Adasum reduction is not supported by oxnet.horovod (use Average or Sum)" % what)
    if op not in (Average, Sum, Min, Max, Product):
        raise ValueError("%s: unknown op %r" % (what, op))
    return op


def _scale(tensors, factor):
    if factor != 1.0:
        for t in tensors:
            t[:] = t * factor


def grouped_allreduce_(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=None, op=None):
    """Reduce a list of NDArrays over all processes in place, in one fused
    round; returns the list. ``op`` is Average (default), Sum, Min, Max or
    Product; ``average=False`` means Sum. ``prescale_factor`` multiplies each
    tensor before the reduction and ``postscale_factor`` after it."""
    tensors = list(tensors)
    op = _resolve_op(average, op, "allreduce")
    comm = _comm()
    if process_set is not None:
        raise MXNetError("allreduce: process sets are not supported by oxnet.horovod")
    for t in tensors:
        if not isinstance(t, nd.NDArray):
            raise TypeError("allreduce: expected NDArrays, got %s" % type(t).__name__)
    _scale(tensors, prescale_factor)
    base = name if name is not None else "allreduce"
    names = [base] if len(tensors) == 1 else ["%s.%d" % (base, i) for i in range(len(tensors))]
    comm.allreduce_(tensors, names=names, op="sum" if op == Average else op, what="allreduce")
    post = postscale_factor / comm.size if op == Average else postscale_factor
    _scale(tensors, post)
    return tensors


def grouped_allreduce(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=None, op=None):
    """Like :func:`grouped_allreduce_` on copies: returns new NDArrays."""
    copies = [t.copy() for t in tensors]
    return grouped_allreduce_(copies, average, name, priority, prescale_factor, postscale_factor, process_set, op)


def allreduce_(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
               process_set=None, op=None):
    """Reduce ``tensor`` over all processes in place (see
    :func:`grouped_allreduce_`) and return it."""
    return grouped_allreduce_([tensor], average, name, priority, prescale_factor, postscale_factor, process_set,
                              op)[0]


def allreduce(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
              process_set=None, op=None):
    """The reduction of ``tensor`` over all processes (Average by default),
    as a new NDArray; ``tensor`` is unchanged."""
    return allreduce_(tensor.copy(), average, name, priority, prescale_factor, postscale_factor, process_set, op)


def allgather(tensor, name=None, priority=0, process_set=None):
    """The concatenation along axis 0 of every process's ``tensor`` (in
    rank order; first dimensions may differ), as a new NDArray."""
    if process_set is not None:
        raise MXNetError("allgather: process sets are not supported by oxnet.horovod")
    out = _comm().allgather(tensor, what="allgather" if name is None else "allgather(%s)" % name)
    return nd.array(out, ctx=tensor.context, dtype=out.dtype)


def alltoall(tensor, splits=None, name=None, priority=0, process_set=None):
    """Scatter slices of ``tensor`` along axis 0 to every process and gather
    what they send: ``splits[i]`` rows go to process i (default: equal
    parts; the first dimension must then divide by size()). Returns the
    received rows, in rank order, as a new NDArray."""
    if process_set is not None:
        raise MXNetError("alltoall: process sets are not supported by oxnet.horovod")
    comm = _comm()
    local = tensor.asnumpy()
    if local.ndim == 0:
        raise MXNetError("alltoall: the tensor needs at least one axis, got a scalar")
    if splits is None:
        if local.shape[0] % comm.size:
            raise MXNetError("alltoall: %d rows cannot be split evenly over %d processes; pass splits"
                             % (local.shape[0], comm.size))
        splits = [local.shape[0] // comm.size] * comm.size
    splits = [int(x) for x in (splits.asnumpy().tolist() if isinstance(splits, nd.NDArray) else splits)]
    if len(splits) != comm.size or any(x < 0 for x in splits) or sum(splits) != local.shape[0]:
        raise MXNetError("alltoall: splits %s must have %d non-negative entries summing to the %d rows"
                         % (splits, comm.size, local.shape[0]))
    comm.check_round("alltoall" if name is None else "alltoall(%s)" % name,
                     [("rows", tuple(local.shape[1:]), local.dtype)])
    comm.sync()
    recv_rows = comm.comm.alltoall(splits)
    row = int(np.prod(local.shape[1:])) * local.itemsize
    out = np.empty((sum(recv_rows),) + local.shape[1:], dtype=local.dtype)
    send_counts = [x * row for x in splits]
    recv_counts = [x * row for x in recv_rows]
    send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(np.int64).tolist()
    recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(np.int64).tolist()
    MPI = comm.MPI
    comm.comm.Alltoallv([np.ascontiguousarray(local).view(np.uint8).reshape(-1), send_counts, send_displs, MPI.BYTE],
                        [out.view(np.uint8).reshape(-1), recv_counts, recv_displs, MPI.BYTE])
    return nd.array(out, ctx=tensor.context, dtype=out.dtype)


def broadcast_(tensor, root_rank, name=None, priority=0, process_set=None):
    """Overwrite ``tensor`` with process ``root_rank``'s value; returns it."""
    if process_set is not None:
        raise MXNetError("broadcast: process sets are not supported by oxnet.horovod")
    _comm().broadcast_([tensor], root=root_rank, names=[name or "broadcast"], what="broadcast")
    return tensor


def broadcast(tensor, root_rank, name=None, priority=0, process_set=None):
    """Process ``root_rank``'s ``tensor`` as a new NDArray on every process."""
    return broadcast_(tensor.copy(), root_rank, name, priority, process_set)


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """Process ``root_rank``'s picklable ``obj`` on every process."""
    comm = _comm()
    comm.check_round("broadcast_object", [("root", (root_rank,), "")])
    comm.sync()
    data = comm.comm.bcast(pickle.dumps(obj) if comm.rank == root_rank else None, root=root_rank)
    return pickle.loads(data)


def allgather_object(obj, name=None, process_set=None):
    """The list of every process's picklable ``obj``, in rank order."""
    comm = _comm()
    comm.check_round("allgather_object", [])
    comm.sync()
    return comm.comm.allgather(obj)


class Compression(object):
    """Gradient compression for allreduce: ``Compression.none`` or
    ``Compression.fp16`` (float tensors travel as float16)."""

    class _NoneCompressor(object):
        @staticmethod
        def compress(tensor):
            """(tensor, None): nothing to do."""
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            """``tensor`` itself."""
            return tensor

    class _FP16Compressor(object):
        @staticmethod
        def compress(tensor):
            """(float16 copy of a float tensor, its dtype) or (tensor, None)."""
            if np.dtype(tensor.dtype).kind == "f" and np.dtype(tensor.dtype) != np.float16:
                return tensor.astype("float16"), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            """The tensor cast back to the dtype ``compress`` returned."""
            return tensor if ctx is None else tensor.astype(ctx)

    none = _NoneCompressor
    fp16 = _FP16Compressor


class DistributedOptimizer(_opt.Optimizer):
    """Wrap an Optimizer so that each update first sums the gradient over
    all processes; ``rescale_grad`` is divided by ``size()`` so the update
    uses the average. A list of indices (multi-tensor updates) is reduced
    in one fused round."""

    def __init__(self, optimizer, gradient_predivide_factor=1.0, num_groups=0):
        self._optimizer = optimizer
        self._optimizer.rescale_grad *= gradient_predivide_factor / size()
        self._gradient_predivide_factor = gradient_predivide_factor
        self._num_groups = num_groups

    def __getattr__(self, item):
        if item.startswith("__") or item == "_optimizer":
            raise AttributeError(item)
        return getattr(self._optimizer, item)

    def __setattr__(self, item, value):
        # public attributes (rescale_grad, param_dict, lr, ...) belong to the
        # wrapped optimizer, so gluon's Trainer can set them through the wrapper
        if item.startswith("_"):
            object.__setattr__(self, item, value)
        else:
            setattr(self._optimizer, item, value)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)

    def create_state_multi_precision(self, index, weight):
        """The wrapped optimizer's state for ``weight``."""
        return self._optimizer.create_state_multi_precision(index, weight)

    def create_state(self, index, weight):
        """The wrapped optimizer's state for ``weight``."""
        return self._optimizer.create_state(index, weight)

    def _do_allreduce(self, index, grad):
        if size() == 1:
            return
        grads = list(grad) if isinstance(index, (tuple, list)) else [grad]
        names = [str(i) for i in (index if isinstance(index, (tuple, list)) else [index])]
        _comm().allreduce_(grads, names=names, what="DistributedOptimizer.update")
        if self._gradient_predivide_factor != 1.0:
            _scale(grads, 1.0 / self._gradient_predivide_factor)

    def update(self, index, weight, grad, state):
        """Sum ``grad`` over processes, then the wrapped optimizer's update."""
        self._do_allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """Sum ``grad`` over processes, then the wrapped optimizer's update."""
        self._do_allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def set_learning_rate(self, lr):
        """Set the wrapped optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    def set_lr_mult(self, args_lr_mult):
        """Set the wrapped optimizer's per-parameter learning-rate multipliers."""
        self._optimizer.set_lr_mult(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Set the wrapped optimizer's per-parameter weight-decay multipliers."""
        self._optimizer.set_wd_mult(args_wd_mult)


class DistributedTrainer(gluon.Trainer):
    """A gluon Trainer that averages gradients over all processes (one fused
    allreduce per step) instead of using a kvstore.

    Parameters: ``params``, ``optimizer``, ``optimizer_params`` as Trainer;
    ``compression`` (Compression.none or .fp16); ``gradient_predivide_factor``
    (gradients are scaled by 1/factor before the sum and factor/size after);
    ``prefix`` (names of this trainer's tensors); ``num_groups`` (accepted;
    oxnet fuses by size instead)."""

    def __init__(self, params, optimizer, optimizer_params=None, compression=Compression.none,
                 gradient_predivide_factor=1.0, prefix=None, num_groups=0):
        self._compression = compression
        if isinstance(optimizer, DistributedOptimizer):
            optimizer = optimizer._optimizer
            warnings.warn("DistributedTrainer does not take DistributedOptimizer as its optimizer. We have "
                          "unwrapped it for you.")
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        self._scale *= gradient_predivide_factor / size()
        self._gradient_predivide_factor = gradient_predivide_factor
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError("DistributedTrainer: prefix must be a str or None, got %s" % type(prefix).__name__)
        self._prefix = prefix or ""
        self._num_groups = num_groups

    def _allreduce_grads(self):
        if size() == 1:
            return
        live = [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]
        grads, ctxs = [], []
        for _, p in live:
            g, c = self._compression.compress(p.list_grad()[0])
            grads.append(g)
            ctxs.append(c)
        names = [self._prefix + str(i) for i, _ in live]
        _scale(grads, 1.0 / self._gradient_predivide_factor)
        # last parameter first: the order backward writes the gradients (overlaps with the backward pass)
        _comm().allreduce_(grads[::-1], names=names[::-1], what="DistributedTrainer.step")
        for (_, p), g, c in zip(live, grads, ctxs):
            if c is not None:
                p.list_grad()[0][:] = self._compression.decompress(g, c)


def broadcast_parameters(params, root_rank=0, prefix=None):
    """Give every process ``root_rank``'s values of ``params`` (a dict of
    NDArrays, e.g. ``Module.get_params()[0]``, or a gluon ParameterDict /
    dict of Parameters); parameters whose initialization is deferred are
    broadcast right after they are initialized. One fused round."""
    if size() == 1:
        return
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError("broadcast_parameters: prefix must be a str or None")
    prefix = prefix or ""
    if not isinstance(params, (dict, gluon.ParameterDict)):
        raise ValueError("invalid params of type: %s" % type(params))
    tensors, names = [], []
    for key, p in sorted(params.items()):
        if isinstance(p, gluon.Parameter):
            if p._deferred_init:
                _broadcast_after_init(p, root_rank, prefix + str(key))
                continue
            tensors.append(p.data())
        else:
            tensors.append(p)
        names.append(prefix + str(key))
    _comm().broadcast_(tensors, root=root_rank, names=names, what="broadcast_parameters")


def _broadcast_after_init(param, root_rank, name):
    """Wrap ``param``'s deferred initialization so its value is broadcast
    from ``root_rank`` once it exists."""
    original = param._finish_deferred_init

    def finish(*args, **kwargs):
        out = original(*args, **kwargs)
        if not param._deferred_init:  # initialized now (not still waiting for a shape)
            del param._finish_deferred_init
            broadcast_(param.data(), root_rank, name=name)
        return out

    param._finish_deferred_init = finish
