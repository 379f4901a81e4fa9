"""Datasets (``mx.gluon.data``): indexable collections of samples."""
from __future__ import annotations

import os

from ... import ndarray, recordio

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Base class: ``dataset[i]`` returns sample i; ``len(dataset)``."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """A dataset of the samples for which ``fn(sample)`` is true."""
        from .sampler import FilterSampler

        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """The ``index``-th of ``num_shards`` contiguous parts (the first parts
        get one extra sample when the length does not divide evenly)."""
        if not 0 <= index < num_shards:
            raise AssertionError("Shard index of out bound: %d out of %d" % (index, num_shards))
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (index < rest)
        from .sampler import SequentialSampler

        return _SampledDataset(self, SequentialSampler(end - start, start))

    def take(self, count):
        """The first ``count`` samples (all when None or too large)."""
        if count is None or count > len(self):
            count = len(self)
        from .sampler import SequentialSampler

        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """The samples at the indices ``sampler`` yields (a gluon.data.Sampler)."""
        from .sampler import Sampler

        if not isinstance(sampler, Sampler):
            raise TypeError("Invalid sampler type: %s. Expected gluon.data.Sampler instead." % type(sampler))
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """A dataset of ``fn(*sample)`` (``fn(sample)`` for non-tuples);
        ``lazy=False`` applies it to every sample now."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([i for i in trans])

    def transform_first(self, fn, lazy=True):
        """Like :meth:`transform`, applied to the first element of each sample only."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object with ``len`` and indexing (a list, an array)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._sampler)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Zip several equally long arrays (NDArrays, NumPy arrays, lists):
    sample i is ``(a[i], b[i], ...)`` (just ``a[i]`` for one array)."""

    def __init__(self, *args):
        if len(args) == 0:
            raise AssertionError("Needs at least 1 arrays")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise AssertionError("All arrays must have the same length; array[0] has length %d while array[%d] "
                                     "has %d." % (self._length, i + 1, len(data)))
            if isinstance(data, ndarray.NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(d[idx] for d in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file (``filename`` with its ``.idx`` beside
    it); sample i is the raw bytes of record i."""

    def __init__(self, filename):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)

    def __getstate__(self):
        # worker processes reopen the file
        state = dict(self.__dict__)
        state.pop("_record", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")


def _data_dir():
    """MXNet's data directory: $MXNET_HOME, else ~/.mxnet."""
    return os.environ.get("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


class _DownloadedDataset(Dataset):
    """A dataset read from files in ``root``."""

    def __init__(self, root, transform):
        super().__init__()
        self._transform = transform
        self._data = None
        self._label = None
        root = os.path.expanduser(root)
        self._root = root
        if not os.path.isdir(root):
            os.makedirs(root)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError
