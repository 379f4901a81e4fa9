"""Samplers (``mx.gluon.data``): the order in which a DataLoader reads samples."""
from __future__ import annotations

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler"]


class Sampler:
    """Base class: iterating yields sample indices; ``len`` is their number."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A random permutation of ``range(length)`` each epoch (NumPy's global RNG)."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices)

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """Indices of the samples of ``dataset`` for which ``fn(sample)`` is true."""

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``.

    last_batch : 'keep' (a short last batch), 'discard' (drop it) or
    'rollover' (carry it into the next epoch).
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', but got %s" % last_batch)
        if int(batch_size) < 1:
            raise ValueError(f"BatchSampler: batch_size must be >= 1, got {batch_size}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
