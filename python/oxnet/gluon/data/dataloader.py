"""DataLoader (``mx.gluon.data.DataLoader``): batches from a Dataset, in the
main process or in worker processes (or threads)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import pickle
import signal
import tempfile

import numpy as np

from ... import context, ndarray as nd
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data):
    """Stack a list of samples into a batch: NDArrays are stacked, tuples are
    batched element-wise (a list of batches), anything else goes through
    ``numpy.asarray`` (keeping its dtype)."""
    if isinstance(data[0], nd.NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(i)) for i in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


def default_mp_batchify_fn(data):
    """The batchify function used in worker processes (same results as
    :func:`default_batchify_fn`)."""
    return default_batchify_fn(data)


def _as_in_context(data, ctx):
    if isinstance(data, nd.NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


_SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def _to_transport(batch, prefix="oxnet-dl-"):
    """Worker side: each array of the batch goes to a file in shared memory
    (/dev/shm); only (path, shape, dtype) travel through the pool's pipe, so
    a pipe never fills with batch data."""
    if isinstance(batch, (nd.NDArray, np.ndarray)):
        arr = np.ascontiguousarray(batch.asnumpy() if isinstance(batch, nd.NDArray) else batch)
        fd, path = tempfile.mkstemp(prefix=prefix, dir=_SHM_DIR)
        with os.fdopen(fd, "wb") as f:
            arr.tofile(f)
        return ("shm", path, arr.shape, arr.dtype.str)
    if isinstance(batch, list):
        return ("list", [_to_transport(b, prefix) for b in batch])
    if isinstance(batch, tuple):
        return ("tuple", [_to_transport(b, prefix) for b in batch])
    return ("obj", batch)


def _from_transport(item):
    """Parent side: NDArrays from the shared-memory files (which are removed)."""
    kind = item[0]
    if kind == "shm":
        _, path, shape, dtype = item
        try:
            data = np.fromfile(path, dtype=np.dtype(dtype)).reshape(shape)
        finally:
            os.unlink(path)
        return nd.array(data, dtype=data.dtype)
    if kind == "list":
        return [_from_transport(v) for v in item[1]]
    if kind == "tuple":
        return tuple(_from_transport(v) for v in item[1])
    return item[1]


def _discard_transport(item):
    """Remove the shared-memory files of a batch nobody will read."""
    kind = item[0]
    if kind == "shm":
        try:
            os.unlink(item[1])
        except OSError:
            pass
    elif kind in ("list", "tuple"):
        for v in item[1]:
            _discard_transport(v)


_worker_dataset = None


def _worker_initializer(dataset):
    global _worker_dataset
    _worker_dataset = dataset


def _worker_fn(samples, batchify_fn, dataset=None, prefix="oxnet-dl-"):
    """Run in a worker process: read and batchify ``samples``; returns the
    pickled transport record (arrays are in shared-memory files)."""
    batch = batchify_fn([_worker_dataset[i] for i in samples])
    return pickle.dumps(_to_transport(batch, prefix), pickle.HIGHEST_PROTOCOL)


def _thread_worker_fn(samples, batchify_fn, dataset, prefix=None):
    return batchify_fn([dataset[i] for i in samples])


class _MultiWorkerIter:
    """Iterate batches computed by a worker pool, ``prefetch`` ahead, in order."""

    def __init__(self, worker_pool, batchify_fn, batch_sampler, pin_memory=False, pin_device_id=0,
                 worker_fn=_worker_fn, prefetch=0, dataset=None, data_loader=None, timeout=120, shm_prefix=None):
        self._worker_pool = worker_pool
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._data_buffer = {}
        self._rcvd_idx = 0
        self._sent_idx = 0
        self._iter = iter(batch_sampler)
        self._worker_fn = worker_fn
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._dataset = dataset
        self._data_loader = data_loader
        self._timeout = timeout
        self._shm_prefix = shm_prefix or "oxnet-dl-"
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self):
        r = next(self._iter, None)
        if r is None:
            return
        self._data_buffer[self._sent_idx] = self._worker_pool.apply_async(
            self._worker_fn, (r, self._batchify_fn, self._dataset, self._shm_prefix))
        self._sent_idx += 1

    def __next__(self):
        self._push_next()
        if self._rcvd_idx == self._sent_idx:
            raise StopIteration
        ret = self._data_buffer.pop(self._rcvd_idx)
        try:
            result = ret.get(self._timeout)
        except multiprocessing.TimeoutError:
            raise multiprocessing.TimeoutError(
                "DataLoader: worker timed out after {} seconds (slow transform? raise `timeout`)".format(self._timeout)
            ) from None
        batch = _from_transport(pickle.loads(result)) if self._dataset is None else result
        if self._pin_memory:
            batch = _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
        self._rcvd_idx += 1
        return batch

    next = __next__

    def __iter__(self):
        return self

    def _discard_ready(self):
        """Remove the files of prefetched batches that will not be read."""
        if self._dataset is not None:  # threads: batches are in memory
            return
        for ret in self._data_buffer.values():
            if ret.ready():
                try:
                    _discard_transport(pickle.loads(ret.get(0)))
                except Exception:  # noqa: BLE001 (a failed batch has no files)
                    pass
        self._data_buffer = {}

    def __del__(self):
        try:
            self._discard_ready()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


class DataLoader:
    """Load a Dataset in mini-batches.

    Parameters
    ----------
    dataset : Dataset
    batch_size : int (required unless batch_sampler is given)
    shuffle : bool -- a new random order every epoch
    sampler : Sampler -- the sample order (not with shuffle)
    last_batch : 'keep' (default), 'discard' or 'rollover'
    batch_sampler : Sampler yielding lists of indices (excludes the four above)
    batchify_fn : function(list of samples) -> batch (default: stacking)
    num_workers : int -- 0 reads in this process; >0 uses that many worker
        processes (or threads with ``thread_pool=True``)
    pin_memory, pin_device_id : return batches in cpu_pinned memory
    prefetch : int -- batches requested ahead (default 2 * num_workers)
    thread_pool : bool -- use threads instead of processes
    timeout : seconds to wait for a worker's batch (default 120)
    auto_reload : bool -- start prefetching the next pass right away (at
        construction and at the end of each pass)
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None, batch_sampler=None,
                 batchify_fn=None, num_workers=0, pin_memory=False, pin_device_id=0, prefetch=None,
                 thread_pool=False, timeout=120, auto_reload=False):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        if not timeout > 0:
            raise AssertionError("timeout must be positive, given {}".format(timeout))
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = _sampler.RandomSampler(len(dataset)) if shuffle else _sampler.SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified if batch_sampler "
                             "is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._worker_pool = None
        self._shm_prefix = "oxnet-dl-%d-%x-" % (os.getpid(), id(self))
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        if self._num_workers > 0:
            if self._thread_pool:
                self._worker_pool = multiprocessing.pool.ThreadPool(self._num_workers)
            else:
                ctx = multiprocessing.get_context("fork")
                # workers ignore Ctrl-C; the parent handles it
                old_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
                try:
                    self._worker_pool = ctx.Pool(self._num_workers, initializer=_worker_initializer,
                                                 initargs=[self._dataset])
                finally:
                    signal.signal(signal.SIGINT, old_handler)
        if batchify_fn is None:
            self._batchify_fn = default_mp_batchify_fn if num_workers > 0 else default_batchify_fn
        else:
            self._batchify_fn = batchify_fn
        self._iter = None
        self.auto_reload = auto_reload
        if self.auto_reload:
            self.refresh()

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        it = self._iter
        self._iter = None  # an iterator serves one pass only
        yield from it
        if self._iter is None and self.auto_reload:
            self.refresh()

    def refresh(self):
        """Start a new pass now (workers begin prefetching its first batches)."""
        self._iter = self._prefetch_iter()

    def clean(self):
        """Drop a prefetched pass; the next one starts at ``iter()``."""
        self._iter = None

    def _prefetch_iter(self):
        if self._num_workers == 0:
            def same_process_iter():
                for batch in self._batch_sampler:
                    ret = self._batchify_fn([self._dataset[idx] for idx in batch])
                    if self._pin_memory:
                        ret = _as_in_context(ret, context.cpu_pinned(self._pin_device_id))
                    yield ret

            return same_process_iter()
        return _MultiWorkerIter(self._worker_pool, self._batchify_fn, self._batch_sampler,
                                pin_memory=self._pin_memory, pin_device_id=self._pin_device_id,
                                worker_fn=_thread_worker_fn if self._thread_pool else _worker_fn,
                                prefetch=self._prefetch, dataset=self._dataset if self._thread_pool else None,
                                data_loader=self, timeout=self._timeout, shm_prefix=self._shm_prefix)

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        pool = getattr(self, "_worker_pool", None)
        if pool is not None:
            self._worker_pool = None
            pool.terminate()
            if not self._thread_pool:
                pool.join()
                # batches the workers wrote that nobody read
                import glob

                for path in glob.glob(os.path.join(_SHM_DIR, self._shm_prefix + "*")):
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
