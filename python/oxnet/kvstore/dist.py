"""Distributed synchronous key-value stores over MPI:
``mx.kv.create('dist_sync' | 'dist_device_sync' | 'dist_sync_device' | 'horovod')``.

Every worker is one MPI process (launch with ``mpirun -np N python train.py``
or ``python -m oxnet.tools.launch -n N train.py``). There is no parameter
server: every worker keeps a full copy of each key.

- ``init``: rank 0's value is broadcast, so every worker starts from the same
  weights.
- ``push``: the values of a key are summed over the local devices, then over
  all workers with one fused MPI allreduce per call (all keys of a call share
  a round); the sum replaces the stored value, or, when an optimizer is set,
  the optimizer updates the stored value with it. Every worker runs the same
  optimizer on the same sum, so all workers hold the same weights after each
  step: MXNet's synchronous ('dist_sync') semantics.
- ``pull`` copies the stored value out; ``pushpull`` is both.

'horovod' is the same store without an optimizer (``is_capable('optimizer')``
is False, as in MXNet 2's Horovod store): gluon's Trainer then sums gradients
through it and updates locally.

'dist_async' cannot be given by allreduce (every allreduce is a rendezvous of
all workers, while asynchronous SGD lets each worker update a server without
waiting for the others) and raises MXNetError.
"""
import os
import tempfile

from .. import optimizer as opt
from ..base import MXNetError
from . import _mpi
from .base import KVStoreBase
from .kvstore import KVStore, _group

__all__ = ["DistSyncKVStore", "create_dist"]

SYNC_TYPES = ("dist_sync", "dist_device_sync", "dist_sync_device", "dist", "horovod")


class DistSyncKVStore(KVStore):
    """A synchronous distributed store over MPI allreduce (see the module
    docstring); make one with ``mx.kv.create('dist_sync')``."""

    _batched_pushpull = True  # gluon's Trainer hands all keys to one pushpull (one fused round)

    def __init__(self, kv_type="dist_sync"):
        super().__init__(kv_type)
        self._comm = _mpi.get()
        self._fp16 = False

    # -- collectives on groups of keys ------------------------------------

    def init(self, key, value):
        """Initialize keys with rank 0's values (an NDArray or list per key,
        whose first array is used); every rank must init the same keys with
        the same shapes, in the same order."""
        pairs = _group(key, value, "init")
        for k, _ in pairs:
            self._check_key_type(k, "init")
            if k in self._store:
                raise MXNetError("KVStore.init: duplicate init of key %r" % (k,))
        copies = [vals[0].copy() for _, vals in pairs]
        self._comm.broadcast_(copies, root=0, names=[k for k, _ in pairs], what="KVStore.init")
        for (k, _), c in zip(pairs, copies):
            self._store[k] = c

    def push(self, key, value, priority=0):
        """Sum each key's values over local devices and all workers (one
        fused allreduce for the call), then store the sum or apply the
        optimizer to the stored value with it."""
        pairs = _group(key, value, "push")
        for k, _ in pairs:
            self._stored(k, "push")
        merged = [self._reduce(k, vals) for k, vals in pairs]
        keys = [k for k, _ in pairs]
        # last key first: backward writes the gradients of the last layers first, so reducing them
        # first overlaps communication with the rest of the backward pass
        self._comm.allreduce_(merged[::-1], names=keys[::-1], compression="fp16" if self._fp16 else None,
                              what="KVStore.push")
        if self._updater is not None:
            stored = [self._store[k] for k in keys]
            if isinstance(self._updater, opt.Updater) and len(keys) > 1:
                self._updater(keys, merged, stored)  # one multi-tensor update
            else:
                for k, m, w in zip(keys, merged, stored):
                    self._updater(k, m, w)
        else:
            for k, m in zip(keys, merged):
                self._store[k][:] = m

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """:meth:`init` the keys with rank 0's ``value``, then :meth:`pull` into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    # -- configuration -----------------------------------------------------

    def is_capable(self, capability):
        """'optimizer': True for the dist stores, False for 'horovod'."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return self._type != "horovod"
        raise ValueError("Unknown capability: {}".format(capability))

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` on every worker on each push (the same update
        everywhere, so weights stay identical). Not for 'horovod'."""
        if self._type == "horovod":
            raise MXNetError("KVStore.set_optimizer: the 'horovod' store sums gradients only; update locally "
                             "(gluon.Trainer does with update_on_kvstore=False)")
        super().set_optimizer(optimizer)

    def set_gradient_compression(self, compression_params):
        """``{'type': '2bit', 'threshold': t}`` quantizes each worker's
        gradient with error feedback before the sum (MXNet's 2-bit
        compression); ``{'type': 'fp16'}`` (an oxnet addition) sends float
        gradients as float16; ``{'type': 'none'}`` turns compression off."""
        if not isinstance(compression_params, dict) or "type" not in compression_params:
            raise ValueError("set_gradient_compression: expected a dict with a 'type' key, got %r"
                             % (compression_params,))
        ctype = str(compression_params["type"]).lower()
        self._fp16 = ctype == "fp16"
        if ctype == "fp16":
            unknown = set(compression_params) - {"type"}
            if unknown:
                raise ValueError("set_gradient_compression: unknown parameters %s for fp16" % sorted(unknown))
            self._compression = None
            self._compression_params = dict(compression_params)
            return
        saved = self._type
        self._type = "device"  # the single-process store's checks, without its type restriction
        try:
            super().set_gradient_compression(compression_params)
        finally:
            self._type = saved

    @property
    def rank(self):
        """This worker's rank in [0, num_workers)."""
        return self._comm.rank

    @property
    def num_workers(self):
        """The number of workers (MPI processes)."""
        return self._comm.size

    def _barrier(self):
        """Wait until every worker reaches the barrier."""
        self._comm.barrier()

    def barrier(self):
        """Wait until every worker reaches the barrier."""
        self._comm.barrier()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer states to ``fname`` (every worker holds the
        same states; each writes atomically, so a shared path is safe)."""
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise MXNetError("KVStore.save_optimizer_states: no optimizer set (call set_optimizer first)")
        data = self._updater.get_states(dump_optimizer)
        folder = os.path.dirname(os.path.abspath(fname))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".oxnet-states-")
        with os.fdopen(fd, "wb") as fout:
            fout.write(data)
        os.replace(tmp, fname)

    def _send_command_to_servers(self, head, body):
        raise MXNetError("KVStore: the %s store runs over MPI allreduce and has no servers" % self._type)


def create_dist(name):
    """The distributed store for ``name`` (lower-cased), or MXNetError."""
    if name in SYNC_TYPES:
        return DistSyncKVStore(name)
    if "async" in name:
        raise MXNetError("kvstore.create: '%s' is not available: oxnet's distributed stores run over MPI "
                         "allreduce, a collective that every worker enters together, so every step is "
                         "synchronous; asynchronous updates need a parameter server, which oxnet does not "
                         "have. Use 'dist_sync' (or 'horovod')" % name)
    raise MXNetError("kvstore.create: unknown distributed KVStore type '%s' (oxnet has %s)"
                     % (name, ", ".join(SYNC_TYPES)))

