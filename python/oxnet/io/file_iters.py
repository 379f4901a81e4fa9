"""MNISTIter and CSVIter: iterators over files parsed in Rust
(oxnet-core's io::mnist and io::csv), with MXNet 1.9.1's arguments and
batches."""
import logging

import numpy as np

from ..base import MXNetError
from .io import DataBatch, DataDesc, DataIter

__all__ = ["MNISTIter", "CSVIter"]


def _native():
    from .. import _native as n

    return n


def _shape_tuple(name, shape):
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError("%s must be a tuple of ints, got %r" % (name, shape)) from None
    if not shape or any(s <= 0 for s in shape):
        raise ValueError("%s must be a non-empty tuple of positive ints, got %r" % (name, shape))
    return shape


def _check_float32(name, dtype):
    if np.dtype(dtype) != np.float32:
        raise MXNetError("%s: dtype %s is not supported by oxnet yet (float32 only)" % (name, np.dtype(dtype).name))


class MNISTIter(DataIter):
    """Batches of MNIST digits from IDX files (plain or gzip-compressed).

    Parameters (MXNet's): ``image`` ('./train-images-idx3-ubyte'),
    ``label`` ('./train-labels-idx1-ubyte'), ``batch_size`` (128),
    ``shuffle`` (True; once, at creation, seeded by ``seed``), ``flat``
    (False: data (batch, 1, rows, cols); True: (batch, rows*cols)), ``seed``
    (0), ``silent`` (False: log what was loaded), ``num_parts`` (1) and
    ``part_index`` (0) to read one contiguous part of the files,
    ``data_name`` / ``label_name``. Pixels are float32 scaled by 1/256 and
    labels float32, as in MXNet; a last incomplete batch is dropped. The
    files' magic numbers and sizes are checked (ValueError naming the file).
    """

    def __init__(self, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte", batch_size=128,
                 shuffle=True, flat=False, seed=0, silent=False, num_parts=1, part_index=0, data_name="data",
                 label_name="softmax_label", dtype="float32", **kwargs):
        super(MNISTIter, self).__init__(batch_size)
        _check_float32("MNISTIter", dtype)
        unknown = set(kwargs) - {"prefetch_buffer", "ctx", "input_shape"}
        if unknown:
            raise TypeError("MNISTIter: unknown arguments %s" % sorted(unknown))
        if int(batch_size) < 1:
            raise ValueError("MNISTIter: batch_size must be at least 1, got %s" % batch_size)
        self._it = _native().MnistIter(str(image), str(label), int(batch_size), bool(shuffle), bool(flat),
                                       int(seed) & 0xFFFFFFFFFFFFFFFF, int(num_parts), int(part_index))
        rows, cols = self._it.rows, self._it.cols
        shape = (batch_size, rows * cols) if flat else (batch_size, 1, rows, cols)
        self._provide_data = [DataDesc(data_name, shape, np.float32)]
        self._provide_label = [DataDesc(label_name, (batch_size,), np.float32)]
        self._batch = None
        if not silent:
            logging.info("MNISTIter: load %d images, shuffle=%d, shape=%s", self._it.count, int(bool(shuffle)),
                         shape)

    @property
    def provide_data(self):
        """[DataDesc('data', (batch, 1, 28, 28) or (batch, 784))]."""
        return self._provide_data

    @property
    def provide_label(self):
        """[DataDesc('softmax_label', (batch,))]."""
        return self._provide_label

    def reset(self):
        """Back to the first batch (the shuffled order is kept)."""
        self._it.reset()

    def iter_next(self):
        out = self._it.next()
        if out is None:
            self._batch = None
            return False
        self._batch = out
        return True

    def next(self):
        """The next :class:`DataBatch` (pad 0); StopIteration at the end."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch([self._batch[0]], [self._batch[1]], pad=0, provide_data=self._provide_data,
                         provide_label=self._provide_label)

    def getdata(self):
        return [self._batch[0]]

    def getlabel(self):
        return [self._batch[1]]

    def getpad(self):
        return 0


class CSVIter(DataIter):
    """Batches from CSV files of numbers, one sample per line.

    Parameters (MXNet's): ``data_csv`` (path), ``data_shape`` (shape of one
    sample; each line holds prod(data_shape) numbers), ``label_csv`` (path
    or None / 'NULL': labels are zeros), ``label_shape`` ((1,): labels of
    shape (batch,)), ``batch_size``, ``round_batch`` (True: the last batch
    is completed from the start of the data, those samples are reported as
    ``pad`` and the next epoch starts after them; False: ``pad`` counts the
    missing samples, whose slots hold stale values), ``data_name`` /
    ``label_name``. The files are parsed in Rust when the iterator is made;
    a line with the wrong number of fields raises ValueError naming the file
    and the line.
    """

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,), batch_size=1, round_batch=True,
                 data_name="data", label_name="softmax_label", dtype="float32", **kwargs):
        super(CSVIter, self).__init__(batch_size)
        _check_float32("CSVIter", dtype)
        unknown = set(kwargs) - {"prefetch_buffer", "ctx"}
        if unknown:
            raise TypeError("CSVIter: unknown arguments %s" % sorted(unknown))
        if int(batch_size) < 1:
            raise ValueError("CSVIter: batch_size must be at least 1, got %s" % batch_size)
        self.data_shape = _shape_tuple("CSVIter: data_shape", data_shape)
        self.label_shape = _shape_tuple("CSVIter: label_shape", label_shape)
        if label_csv in ("NULL", ""):
            label_csv = None
        self._it = _native().CsvIter(str(data_csv), int(np.prod(self.data_shape)),
                                     None if label_csv is None else str(label_csv),
                                     int(np.prod(self.label_shape)), int(batch_size), bool(round_batch))
        lshape = (batch_size,) if self.label_shape == (1,) else (batch_size,) + self.label_shape
        self._provide_data = [DataDesc(data_name, (batch_size,) + self.data_shape, np.float32)]
        self._provide_label = [DataDesc(label_name, lshape, np.float32)]
        self._batch = None

    @property
    def provide_data(self):
        """[DataDesc(data_name, (batch,) + data_shape)]."""
        return self._provide_data

    @property
    def provide_label(self):
        """[DataDesc(label_name, (batch,) or (batch,) + label_shape)]."""
        return self._provide_label

    def reset(self):
        """Start the next epoch."""
        self._it.reset()

    def iter_next(self):
        out = self._it.next()
        if out is None:
            self._batch = None
            return False
        data, label, pad = out
        self._batch = (data.reshape(self._provide_data[0].shape), label.reshape(self._provide_label[0].shape), pad)
        return True

    def next(self):
        """The next :class:`DataBatch`; StopIteration at the end of the epoch."""
        if not self.iter_next():
            raise StopIteration
        data, label, pad = self._batch
        return DataBatch([data], [label], pad=pad, provide_data=self._provide_data,
                         provide_label=self._provide_label)

    def getdata(self):
        return [self._batch[0]]

    def getlabel(self):
        return [self._batch[1]]

    def getpad(self):
        return self._batch[2]
