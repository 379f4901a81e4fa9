"""DataLoader (``mx.gluon.data.DataLoader``): batches from a Dataset, in the
main process or in worker processes (or threads)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import pickle

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


def _to_transport(batch):
    """Worker side: NDArrays become NumPy arrays for the trip to the parent."""
    if isinstance(batch, nd.NDArray):
        return ("nd", batch.asnumpy())
    if isinstance(batch, list):
        return ("list", [_to_transport(b) for b in batch])
    if isinstance(batch, tuple):
        return ("tuple", [_to_transport(b) for b in batch])
    return ("obj", batch)


def _from_transport(item):
    kind, value = item
    if kind == "nd":
        return nd.array(value, dtype=value.dtype)
    if kind == "list":
        return [_from_transport(v) for v in value]
    if kind == "tuple":
        return tuple(_from_transport(v) for v in value)
    return value


_worker_dataset = None


def _worker_initializer(dataset):
    global _worker_dataset
    _worker_dataset = dataset


def _worker_fn(samples, batchify_fn, dataset=None):
    """Run in a worker process: read and batchify ``samples``; returns pickled bytes."""
    batch = batchify_fn([_worker_dataset[i] for i in samples])
    return pickle.dumps(_to_transport(batch), pickle.HIGHEST_PROTOCOL)


def _thread_worker_fn(samples, batchify_fn, dataset):
    return batchify_fn([dataset[i] for i in samples])


class _MultiWorkerIter:
    """Iterate batches computed by a worker pool, ``prefetch`` ahead, in order."""

    def __init__(self, worker_pool, batchify_fn, batch_sampler, pin_memory=False, pin_device_id=0,
                 worker_fn=_worker_fn, prefetch=0, dataset=None, data_loader=None, timeout=120):
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
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self):
        r = next(self._iter, None)
        if r is None:
            return
        self._data_buffer[self._sent_idx] = self._worker_pool.apply_async(self._worker_fn,
                                                                          (r, self._batchify_fn, self._dataset))
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
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        if self._num_workers > 0:
            if self._thread_pool:
                self._worker_pool = multiprocessing.pool.ThreadPool(self._num_workers)
            else:
                ctx = multiprocessing.get_context("fork")
                self._worker_pool = ctx.Pool(self._num_workers, initializer=_worker_initializer,
                                             initargs=[self._dataset])
        if batchify_fn is None:
            self._batchify_fn = default_mp_batchify_fn if num_workers > 0 else default_batchify_fn
        else:
            self._batchify_fn = batchify_fn

    def __iter__(self):
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
                                data_loader=self, timeout=self._timeout)

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        pool = getattr(self, "_worker_pool", None)
        if pool is not None:
            pool.terminate()
            self._worker_pool = None
