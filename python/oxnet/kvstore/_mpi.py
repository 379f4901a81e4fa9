"""MPI collectives on NDArrays: the communication layer under the
distributed KVStores ('dist_sync', 'dist_device_sync', 'horovod') and
:mod:`oxnet.horovod`.

MPI comes from mpi4py over the system's MPI library (Open MPI from Debian's
``openmpi-bin`` / ``libopenmpi-dev``). mpi4py releases the GIL inside every
collective, so other Python threads and the engine's workers keep running
while a collective waits on the network.

Collectives as engine operations (the default when the extension has
``push_host_op`` and MPI runs with MPI_THREAD_MULTIPLE). Each fusion buffer's
collective is pushed to the engine as one serial operation writing its
arrays: it starts once the operations pushed before on those arrays ran
(e.g. the backward pass that writes a gradient), the call returns at once,
and operations pushed after it (the optimizer's update, a read) wait for it.
Serial operations run one at a time in push order, so every rank issues its
collectives in program order; the calling thread issues a collective itself
(allgather, barrier, ...) only after the queued ones ran. The operations show
in the profiler's trace under their names ('allreduce', 'broadcast').

Calling-thread mode (``OXNET_DIST_ENGINE=0``, or an extension without
``push_host_op``): before a collective reads an array it waits for the
array's pending writes, before it writes it waits for all pending reads and
writes; the result goes straight into the array's memory (one large array:
a zero-copy NumPy view taken through DLPack) or through the NDArray's engine
write from the fusion buffer; operations pushed after the call see it.

Tensor fusion (Horovod's): the arrays of one round (one ``pushpull`` /
``allreduce`` call with several arrays) are packed per dtype into buffers
of at most ``OXNET_FUSION_THRESHOLD`` bytes (also read from
``HOROVOD_FUSION_THRESHOLD``; default 64 MiB), each reduced with one MPI
call; an array larger than the threshold is reduced in place on its own.
Arrays are taken in the order given; the stores hand gradients over last
layer first, the order backward writes them, so the reduction of one buffer
runs while the engine's workers still compute the gradients of the next
(overlap of communication with the backward pass; a smaller threshold gives
more, smaller buffers and more overlap).

Profiling: with the profiler running, the time inside MPI ("mpi_allreduce",
"mpi_broadcast", and "mpi_check" for the agreement check below) and, in
calling-thread mode, the time spent waiting for the arrays' pending work
("wait_for_inputs") appear as tasks of domain "oxnet.dist" in the trace.

Safety. Every call first compares a 64-bit digest of its (name, shape,
dtype) list across ranks (one 16-byte allreduce, in engine mode inside the
call's first operation); when ranks disagree each rank gathers the others'
lists and raises MXNetError naming what differs (in engine mode where the
call's results are read), so a mismatched shape raises on every rank
instead of corrupting memory or hanging. An exception that escapes a worker's script calls ``MPI_Abort`` (the
traceback is printed first) so that ``mpirun`` stops every other worker at
once instead of leaving them blocked in a collective; a killed worker makes
``mpirun`` end the job likewise; a worker whose script ends while others
still wait in a collective (different numbers of steps) meets them in one
last agreement round at exit, which fails on every rank with an error naming
what each rank was doing. ``OXNET_DIST_CHECK=0`` turns the agreement check
(one 16-byte allreduce per round) off.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import sys

import numpy as np

from .. import _native, profiler
from ..base import MXNetError

__all__ = ["Communicator", "get", "available"]

_INSTALL_HINT = ("install Open MPI and mpi4py (Debian: apt-get install openmpi-bin libopenmpi-dev; "
                 "then: pip install mpi4py) and launch with mpirun -np N or python -m oxnet.tools.launch -n N")

_COMM = None
_FP16_SUM = None


def available():
    """(True, '') when mpi4py and an MPI library can be loaded, else (False, reason)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError as err:
        return False, "mpi4py is not installed (%s); %s" % (err, _INSTALL_HINT)
    return True, ""


def _fusion_threshold():
    for var in ("OXNET_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD"):
        val = os.environ.get(var)
        if val:
            try:
                return max(0, int(val))
            except ValueError as err:
                raise MXNetError("%s must be a byte count, got %r" % (var, val)) from err
    return 64 * 1024 * 1024


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise MXNetError("distributed training needs MPI: %s (%s)" % (_INSTALL_HINT, err)) from err
    return MPI


def _fp16_sum_op(MPI):
    """An MPI sum over float16 (MPI has no half type): the 2-byte words are
    sent as MPI.SHORT and added here as float16."""
    global _FP16_SUM
    if _FP16_SUM is None:
        def fp16_add(inbuf, inoutbuf, datatype):
            a = np.frombuffer(inbuf, dtype=np.float16)
            b = np.frombuffer(inoutbuf, dtype=np.float16)
            np.add(a, b, out=b)

        _FP16_SUM = MPI.Op.Create(fp16_add, commute=True)
    return _FP16_SUM


def _abort_on_uncaught(comm, rank, size):
    """Make an exception that escapes the script abort the whole MPI job."""
    previous = sys.excepthook

    def hook(etype, value, tb):
        previous(etype, value, tb)
        if etype is not KeyboardInterrupt:
            sys.stderr.write("oxnet.dist: worker rank %d of %d failed with %s: %s; aborting all %d workers "
                             "(MPI_Abort)\n" % (rank, size, etype.__name__, value, size))
            sys.stderr.flush()
            comm.Abort(1)

    sys.excepthook = hook


def _view(arr):
    """A writable NumPy view of an NDArray's memory (waits for all pending
    reads and writes first: the caller may write through it)."""
    return np.from_dlpack(arr)


class Communicator(object):
    """The MPI world of this process: rank, size, local (per host) rank and
    size, and NDArray collectives. Get the shared one with :func:`get`."""

    def __init__(self):
        MPI = _import_mpi()
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = local.Get_rank()
        self.local_size = local.Get_size()
        local.Free()
        self.fusion_threshold = _fusion_threshold()
        self.check = os.environ.get("OXNET_DIST_CHECK", "1") != "0"
        # Collectives as engine operations (a serial host operation per buffer, its agreement check
        # first) when the extension has them and MPI may be called from two threads. The calling thread
        # issues a collective itself only after the queued ones ran (sync), so every rank issues its
        # collectives one at a time, in program order.
        self.engine = (hasattr(_native, "push_host_op") and os.environ.get("OXNET_DIST_ENGINE", "1") != "0"
                       and MPI.Query_thread() == MPI.THREAD_MULTIPLE)
        self._pending_check = None
        self._buffers = {}
        self._digests = {}  # (what, items) -> (digest, description) of check_round
        self._ops = {"sum": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX, "prod": MPI.PROD}
        # profiler tasks: time spent waiting for the arrays' pending engine work, and in MPI
        domain = profiler.Domain("oxnet.dist")
        self._t_wait = domain.new_task("wait_for_inputs")
        self._t_reduce = domain.new_task("mpi_allreduce")
        self._t_bcast = domain.new_task("mpi_broadcast")
        self._t_check = domain.new_task("mpi_check")
        if self.size > 1:
            _abort_on_uncaught(self.comm, self.rank, self.size)
            atexit.register(self._at_exit)  # runs before mpi4py's MPI_Finalize (registered earlier)

    # -- helpers -------------------------------------------------------------

    def _buffer(self, dtype, nelem):
        """A reusable fusion buffer of at least ``nelem`` elements."""
        buf = self._buffers.get(dtype)
        if buf is None or buf.size < nelem:
            buf = np.empty(max(nelem, 1), dtype=dtype)
            self._buffers[dtype] = buf
        return buf[:nelem]

    def _host_views(self, spans, dtypes):
        """Writable NumPy views of the (address, nbytes) spans a host
        operation receives (valid while it runs)."""
        return [np.frombuffer(self.MPI.buffer.fromaddress(addr, nbytes), dtype=dt) if nbytes else np.empty(0, dt)
                for (addr, nbytes), dt in zip(spans, dtypes)]

    def sync(self):
        """Wait for this process's collectives pushed to the engine (before
        a collective issued directly on the calling thread)."""
        if self.engine:
            _native.wait_host_ops()

    def check_round(self, what, items):
        """Raise MXNetError on every rank unless all ranks call ``what`` with
        the same ``items`` (a list of (name, shape, dtype) tuples)."""
        if not self.check or self.size == 1:
            return
        self.sync()
        self._agree(what, *self._digest(what, items))

    def _defer_check(self, what, items):
        """Engine mode: the agreement check of this call runs in its first
        host operation, right before its data collective."""
        self._pending_check = (what,) + self._digest(what, items) if self.check and self.size > 1 else None

    def _take_check(self):
        chk, self._pending_check = self._pending_check, None
        return chk

    def _flush_check(self):
        """Push the deferred check alone when the call pushed no collective."""
        chk = self._take_check()
        if chk is not None:
            _native.push_host_op("agreement_check", [], [], lambda reads, writes: self._agree(*chk))

    def _digest(self, what, items):
        """(64-bit digest, description) of a call's (name, shape, dtype) list."""
        key = (what, tuple((n, tuple(s), str(d)) for n, s, d in items))
        cached = self._digests.get(key)
        if cached is None:
            desc = repr([(str(n), tuple(s), str(np.dtype(d)) if d else "") for n, s, d in items])
            h = int.from_bytes(hashlib.blake2b((what + desc).encode(), digest_size=7).digest(), "little")
            if len(self._digests) > 4096:
                self._digests.clear()
            self._digests[key] = cached = (h, desc)
        return cached

    def _agree(self, what, h, desc):
        """One 16-byte allreduce: every rank learns whether all digests are
        equal; when not, each gathers the descriptions and raises."""
        pair = np.array([h, -h], dtype=np.int64)
        with self._t_check:
            self.comm.Allreduce(self.MPI.IN_PLACE, pair, op=self.MPI.MAX)
        if pair[0] == h and -pair[1] == h:
            return
        everyone = self.comm.allgather((what, desc))
        lines = ["rank %d: %s %s" % (r, w, d if len(d) < 400 else d[:400] + "...") for r, (w, d) in enumerate(everyone)]
        raise MXNetError("%s: the workers disagree on the arrays of this collective (names, shapes and dtypes "
                         "must match on every rank, in the same order):\n  %s" % (what, "\n  ".join(lines)))

    def _reduce_buffer(self, buf, op):
        MPI = self.MPI
        if buf.dtype == np.bool_:
            mop = MPI.LOR if op in ("sum", "max") else MPI.LAND
            self.comm.Allreduce(MPI.IN_PLACE, buf, op=mop)
        elif buf.dtype == np.float16:
            if op != "sum":
                raise MXNetError("allreduce: only 'sum' is available for float16")
            words = buf.view(np.int16)
            self.comm.Allreduce(MPI.IN_PLACE, [words, MPI.SHORT], op=_fp16_sum_op(MPI))
        else:
            self.comm.Allreduce(MPI.IN_PLACE, buf, op=self._ops[op])

    # -- collectives ----------------------------------------------------------

    def allreduce_(self, arrays, names=None, op="sum", compression=None, what="allreduce"):
        """Reduce each NDArray of ``arrays`` over all ranks, in place.

        ``op`` is 'sum', 'min', 'max' or 'prod'; ``compression='fp16'`` sends
        float32/float64 arrays as float16 (summed in float16). Arrays are
        fused per dtype into one buffer of at most the fusion threshold.
        """
        arrays = list(arrays)
        if names is None:
            names = [str(i) for i in range(len(arrays))]
        items = [(n, a.shape, a.dtype) for n, a in zip(names, arrays)]
        if self.engine:
            self._defer_check(what, items)
        else:
            self.check_round(what, items)
        if self.size == 1 or not arrays:
            if self.engine:
                self._flush_check()
            return
        limit = self.fusion_threshold
        open_batches = {}  # wire dtype -> (arrays, bytes): filled in the given order
        for a in arrays:
            wire = np.dtype(a.dtype)
            if compression == "fp16" and wire.kind == "f":
                wire = np.dtype(np.float16)
            size = a.size * wire.itemsize
            if size > limit or len(arrays) == 1:
                # alone in its round: in place on its own memory when it can be
                if np.dtype(a.dtype) == wire and a._is_contiguous_whole():
                    self._in_place(a, op)
                else:
                    self._flush(wire, [a], op)
                continue
            batch, nbytes = open_batches.get(wire, ([], 0))
            if nbytes + size > limit:
                self._flush(wire, batch, op)
                batch, nbytes = [], 0
            batch.append(a)
            open_batches[wire] = (batch, nbytes + size)
        for wire, (batch, _) in open_batches.items():
            self._flush(wire, batch, op)
        if self.engine:
            self._flush_check()

    def _in_place(self, a, op):
        if self.engine:
            dtypes = [np.dtype(a.dtype)]
            chk = self._take_check()

            def run(reads, writes):
                if chk is not None:
                    self._agree(*chk)
                (view,) = self._host_views(writes, dtypes)
                with self._t_reduce:
                    self._reduce_buffer(view, op)

            _native.push_host_op("allreduce", [], [a], run)
            return
        with self._t_wait:
            view = _view(a).reshape(-1)
        with self._t_reduce:
            self._reduce_buffer(view, op)

    def _flush(self, wire, batch, op):
        """Pack ``batch`` into the fusion buffer, reduce it, write it back."""
        if not batch:
            return
        total = sum(a.size for a in batch)
        if self.engine:
            dtypes = [np.dtype(a.dtype) for a in batch]
            chk = self._take_check()

            def run(reads, writes):
                if chk is not None:
                    self._agree(*chk)
                views = self._host_views(writes, dtypes)
                buf = self._buffer(wire, total)
                off = 0
                for v in views:
                    np.copyto(buf[off:off + v.size], v, casting="unsafe")
                    off += v.size
                with self._t_reduce:
                    self._reduce_buffer(buf, op)
                off = 0
                for v in views:
                    np.copyto(v, buf[off:off + v.size], casting="unsafe")
                    off += v.size

            _native.push_host_op("allreduce", [], batch, run)
            return
        buf = self._buffer(wire, total)
        off = 0
        with self._t_wait:
            for a in batch:
                n = a.size
                if np.dtype(a.dtype) == wire:
                    a._read_into(buf[off:off + n])
                else:
                    buf[off:off + n] = a.asnumpy().reshape(-1)
                off += n
        with self._t_reduce:
            self._reduce_buffer(buf, op)
        off = 0
        for a in batch:
            n = a.size
            chunk = buf[off:off + n]
            if np.dtype(a.dtype) != wire:
                chunk = chunk.astype(a.dtype)
            a._write_from(chunk)
            off += n

    def broadcast_(self, arrays, root=0, names=None, what="broadcast"):
        """Overwrite each NDArray of ``arrays`` with rank ``root``'s values
        (fused per dtype like :meth:`allreduce_`)."""
        arrays = list(arrays)
        if not 0 <= root < self.size:
            raise MXNetError("%s: root_rank %d is out of range for %d workers" % (what, root, self.size))
        if names is None:
            names = [str(i) for i in range(len(arrays))]
        items = [(n, a.shape, a.dtype) for n, a in zip(names, arrays)] + [("root", (root,), "")]
        if self.engine:
            self._defer_check(what, items)
        else:
            self.check_round(what, items)
        if self.size == 1 or not arrays:
            if self.engine:
                self._flush_check()
            return
        groups = {}
        for a in arrays:
            groups.setdefault(np.dtype(a.dtype), []).append(a)
        if self.engine:
            for dtype, group in groups.items():
                _native.push_host_op("broadcast", [], group,
                                     self._broadcast_op(dtype, len(group), root, self._take_check()))
            return
        for dtype, group in groups.items():
            if len(group) == 1 and group[0]._is_contiguous_whole():
                view = _view(group[0]).reshape(-1)
                with self._t_bcast:
                    self.comm.Bcast(view.view(np.uint8), root=root)
                continue
            total = sum(a.size for a in group)
            buf = self._buffer(dtype, total)
            off = 0
            if self.rank == root:
                for a in group:
                    a._read_into(buf[off:off + a.size])
                    off += a.size
            with self._t_bcast:
                self.comm.Bcast(buf.view(np.uint8), root=root)
            if self.rank != root:
                off = 0
                for a in group:
                    a._write_from(buf[off:off + a.size])
                    off += a.size

    def _broadcast_op(self, dtype, count, root, chk):
        """The host operation of one broadcast buffer of ``count`` arrays
        (after the call's agreement check ``chk`` when given)."""
        dtypes = [dtype] * count

        def run(reads, writes):
            if chk is not None:
                self._agree(*chk)
            views = self._host_views(writes, dtypes)
            if len(views) == 1:
                with self._t_bcast:
                    self.comm.Bcast(views[0].view(np.uint8), root=root)
                return
            buf = self._buffer(dtype, sum(v.size for v in views))
            off = 0
            if self.rank == root:
                for v in views:
                    buf[off:off + v.size] = v
                    off += v.size
            with self._t_bcast:
                self.comm.Bcast(buf.view(np.uint8), root=root)
            if self.rank != root:
                off = 0
                for v in views:
                    v[...] = buf[off:off + v.size]
                    off += v.size

        return run

    def allgather(self, array, what="allgather"):
        """The concatenation along axis 0 of every rank's ``array`` (ranks
        may differ in the first dimension only), as a NumPy array."""
        local = array.asnumpy()
        self.check_round(what, [])
        self.sync()
        meta = (local.shape[1:] if local.ndim else None, str(local.dtype))
        metas = self.comm.allgather((local.shape, meta))
        if any(m[1] != meta for m in metas) or local.ndim == 0:
            raise MXNetError("%s: every rank's array must have the same dtype and the same shape past the first "
                             "axis (and at least one axis): %s"
                             % (what, "; ".join("rank %d: shape %s dtype %s" % (r, s, m[1])
                                                for r, (s, m) in enumerate(metas))))
        counts = [int(np.prod(s)) * local.dtype.itemsize for s, _ in metas]
        out = np.empty((sum(s[0] for s, _ in metas),) + local.shape[1:], dtype=local.dtype)
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist()
        self.comm.Allgatherv(local.view(np.uint8).reshape(-1),
                             [out.view(np.uint8).reshape(-1), counts, displs, self.MPI.BYTE])
        return out

    def barrier(self):
        """Wait until every rank reaches the barrier (the agreement check is
        the barrier; with the check off, MPI_Barrier)."""
        self.sync()
        if self.check and self.size > 1:
            self.check_round("barrier", [])
        else:
            self.comm.Barrier()

    def _at_exit(self):
        """At the end of the script: one more agreement round, so that ranks
        still waiting in a collective learn that this rank has finished (the
        workers ran different numbers of steps) instead of waiting forever."""
        if self.size == 1:
            return
        try:
            self.sync()  # collectives still queued on the engine run before Python shuts down
        except MXNetError:
            pass  # a failed collective was reported where its arrays were read
        if not self.check:
            return
        try:
            self.check_round("exit (the script of this rank ended)", [])
        except MXNetError as err:
            sys.stderr.write("oxnet.dist: rank %d of %d ended its script while other ranks still wait in a collective "
                             "(the workers ran different numbers of steps or collectives); aborting all workers.\n%s\n"
                             % (self.rank, self.size, err))
            sys.stderr.flush()
            self.comm.Abort(1)


def get():
    """The process's :class:`Communicator` (MPI is initialized on first use)."""
    global _COMM
    if _COMM is None:
        _COMM = Communicator()
    return _COMM
