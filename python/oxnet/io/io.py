"""Data iterators (``mx.io``): DataDesc, DataBatch, DataIter, ResizeIter,
NDArrayIter, and ImageRecordIter / ImageRecordUInt8Iter over the Rust
record pipeline (decode, augment and batch in Rust threads, GIL released).
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np

from .. import _native
from ..ndarray import NDArray, array
from ..context import Context

__all__ = [
    "DataDesc",
    "DataBatch",
    "DataIter",
    "ResizeIter",
    "NDArrayIter",
    "ImageRecordIter",
    "ImageRecordUInt8Iter",
]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input of a data iterator.

    ``DataDesc(name, shape, dtype=np.float32, layout='NCHW')``; it is a
    (name, shape) tuple with ``dtype`` and ``layout`` attributes.
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super(DataDesc, cls).__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The index of 'N' in ``layout`` (0 when layout is None)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from a list of (name, shape) and optional (name, dtype)."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch(object):
    """One batch: lists of data and label NDArrays, the number of padding
    examples at the end (``pad``), their indices, and optional descriptions."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None, provide_data=None, provide_label=None):
        if data is not None:
            assert isinstance(data, (list, tuple)), "Data must be list of NDArrays"
        if label is not None:
            assert isinstance(label, (list, tuple)), "Label must be list of NDArrays"
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return "{}: data shapes: {} label shapes: {}".format(self.__class__.__name__, data_shapes, label_shapes)


class DataIter(object):
    """Base class of data iterators: ``next()`` returns a DataBatch or
    raises StopIteration; ``reset()`` starts over. Subclasses implement
    ``iter_next``/``getdata``/``getlabel``/``getpad`` or ``next``."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Reset the iterator to the beginning of the data."""

    def next(self):
        """The next DataBatch (StopIteration at the end)."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; True if there is one."""

    def getdata(self):
        """The data of the current batch (list of NDArrays)."""

    def getlabel(self):
        """The label of the current batch (list of NDArrays)."""

    def getindex(self):
        """The indices of the current batch (None if unknown)."""
        return None

    def getpad(self):
        """The number of padding examples in the current batch."""


class ResizeIter(DataIter):
    """Make ``data_iter`` yield exactly ``size`` batches per epoch, restarting
    it (or stopping early) as needed."""

    def __init__(self, data_iter, size, reset_internal=True):
        super(ResizeIter, self).__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        """Start a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        """Fetch the next batch, restarting the inner iterator at its end."""
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


def _init_data(data, allow_empty, default_name):
    """Normalise NDArrayIter input to a sorted list of (name, NDArray)."""
    assert (data is not None) or allow_empty
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if not allow_empty:
            assert len(data) > 0
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([("_%d_%s" % (i, default_name), d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("Input must be NDArray, numpy.ndarray, a list of them or dict with them as values")
    data = dict(data)
    for k, v in data.items():
        if not isinstance(v, NDArray):
            try:
                data[k] = array(v)
            except Exception as e:  # noqa: BLE001
                raise TypeError("Invalid type '%s' for %s, should be NDArray or numpy.ndarray" % (type(v), k)) from e
    return list(sorted(data.items()))


class NDArrayIter(DataIter):
    """Iterate over NDArrays / NumPy arrays in batches of ``batch_size``.

    Parameters
    ----------
    data, label : array, list of arrays or dict of name -> array
    batch_size : int
    shuffle : bool
        Shuffle the examples (NumPy's global random state) at every reset.
    last_batch_handle : str
        'pad' (fill the last batch from the start; ``pad`` says how many),
        'discard' (drop it) or 'roll_over' (carry it into the next epoch).
    data_name, label_name : str
    layout : str
        Position of 'N' gives the batch axis.
    """

    def __init__(
        self,
        data,
        label=None,
        batch_size=1,
        shuffle=False,
        last_batch_handle="pad",
        data_name="data",
        label_name="softmax_label",
        layout="NCHW",
    ):
        super(NDArrayIter, self).__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(
                "NDArrayIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', got %r" % (last_batch_handle,)
            )
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        self.layout = layout
        self._axis = layout.find("N")
        if self._axis < 0:
            raise ValueError("NDArrayIter: layout %r has no batch axis 'N'" % (layout,))
        n = self.data[0][1].shape[self._axis]
        for k, v in self.data + self.label:
            if v.shape[self._axis] != n:
                raise ValueError(
                    "NDArrayIter: %s has %d examples along axis %d, but %s has %d"
                    % (k, v.shape[self._axis], self._axis, self.data[0][0], n)
                )
        self._np = {k: v.asnumpy() for k, v in self.data + self.label}
        self._ctx = {k: v.context for k, v in self.data + self.label}
        self.idx = np.arange(n)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -self.batch_size
        self.num_data = n
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)

    def _descs(self, items):
        ax = self._axis
        return [
            DataDesc(
                k, tuple(list(v.shape[:ax]) + [self.batch_size] + list(v.shape[ax + 1 :])), v.dtype, layout=self.layout
            )
            for k, v in items
        ]

    @property
    def provide_data(self):
        """DataDescs of the data (batch axis = batch_size)."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """DataDescs of the labels."""
        return self._descs(self.label)

    def hard_reset(self):
        """Back to the very beginning, dropping roll-over data."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        """Start a new epoch (reshuffle; roll-over data goes first)."""
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == "roll_over" and self.num_data - self.batch_size < self.cursor < self.num_data:
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        """Advance the cursor; True while there is data."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        """The next DataBatch (StopIteration at the end of the epoch)."""
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _take(self, source, start=None, end=None):
        start = 0 if start is None else start
        end = self.num_data if end is None else end
        return [np.take(self._np[k], np.arange(start, end), axis=self._axis) for k, _ in source]

    def _concat(self, first, second):
        if not first or not second:
            return first if first else second
        return [np.concatenate([a, b], axis=self._axis) for a, b in zip(first, second)]

    def _to_nd(self, source, parts):
        return [array(p, ctx=self._ctx[k], dtype=p.dtype) for (k, _), p in zip(source, parts)]

    def _batchify(self, source, cache):
        assert self.cursor < self.num_data, "DataIter needs reset."
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            assert cache is not None, "next epoch should have cached data"
            second = self._take(source, end=self.cursor + self.batch_size)
            first = [c.asnumpy() for c in cache]
            return self._to_nd(source, self._concat(first, second))
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first = self._take(source, start=self.cursor)
            if pad > self.num_data:
                repeats = pad // self.num_data
                whole = self._take(source, end=self.num_data)
                second = [np.concatenate([w] * repeats, axis=self._axis) for w in whole]
                if pad % self.num_data != 0:
                    second = self._concat(second, self._take(source, end=pad % self.num_data))
            else:
                second = self._take(source, end=pad)
            return self._to_nd(source, self._concat(first, second))
        end = min(self.cursor + self.batch_size, self.num_data)
        return self._to_nd(source, self._take(source, self.cursor, end))

    def getdata(self):
        """The data of the current batch (list of NDArrays)."""
        out = self._batchify(self.data, self._cache_data)
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            self._cache_data = None
        return out

    def getlabel(self):
        """The labels of the current batch (list of NDArrays)."""
        out = self._batchify(self.label, self._cache_label)
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            self._cache_label = None
        return out

    def getpad(self):
        """How many examples at the end of the batch are padding."""
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        for k in list(self._np):
            self._np[k] = np.take(self._np[k], self.idx, axis=self._axis)
        self.data = [(k, array(self._np[k], ctx=self._ctx[k], dtype=self._np[k].dtype)) for k, _ in self.data]
        self.label = [(k, array(self._np[k], ctx=self._ctx[k], dtype=self._np[k].dtype)) for k, _ in self.label]


# ------------------------------------------------------------------------
# ImageRecordIter
# ------------------------------------------------------------------------

# MXNet 1.9.1's documented ImageRecordIter parameters that oxnet's native pipeline does not
# implement, with why: each is accepted at MXNet's default (no effect) and raises ValueError,
# saying why, with any other value. The pipeline implements: resize, rand_crop, rand_mirror,
# inter_method, mean_r/g/b, std_r/g/b, scale, shuffle, seed, seed_aug, partitions.
_USE_IMAGEITER = ("not implemented by oxnet's native ImageRecordIter; mx.image.ImageIter(path_imgrec=...) "
                  "with mx.image.CreateAugmenter(...) has this augmentation")
_NOT_YET = "not implemented by oxnet's ImageRecordIter yet"
_UNSUPPORTED = {
    "path_imglist": "labels from a .lst file are " + _NOT_YET + " (the labels come from the .rec records; "
                    "mx.image.ImageIter reads .lst files)",
    "aug_seq": "only MXNet's default augmenter 'aug_default' exists in oxnet",
    "max_rotate_angle": _USE_IMAGEITER, "rotate": _USE_IMAGEITER, "max_shear_ratio": _USE_IMAGEITER,
    "max_aspect_ratio": _USE_IMAGEITER, "min_aspect_ratio": _USE_IMAGEITER,
    "max_random_scale": _USE_IMAGEITER, "min_random_scale": _USE_IMAGEITER,
    "max_random_area": _USE_IMAGEITER, "min_random_area": _USE_IMAGEITER,
    "random_resized_crop": _USE_IMAGEITER, "max_crop_size": _USE_IMAGEITER, "min_crop_size": _USE_IMAGEITER,
    "max_img_size": _USE_IMAGEITER, "min_img_size": _USE_IMAGEITER,
    "brightness": _USE_IMAGEITER, "contrast": _USE_IMAGEITER, "saturation": _USE_IMAGEITER,
    "pca_noise": _USE_IMAGEITER, "random_h": _USE_IMAGEITER, "random_s": _USE_IMAGEITER, "random_l": _USE_IMAGEITER,
    "max_random_contrast": _USE_IMAGEITER, "max_random_illumination": _USE_IMAGEITER,
    "fill_value": "it only fills the border of rotations and padding, which are " + _NOT_YET,
    "pad": "padding before the crop is " + _NOT_YET,
    "mirror": "always mirroring is " + _NOT_YET + " (rand_mirror=True mirrors half of the images)",
    "mean_img": "subtracting a mean image file is " + _NOT_YET + " (use mean_r/mean_g/mean_b)",
    "mean_a": "data_shape has 1 or 3 channels in oxnet (no alpha channel)",
    "std_a": "data_shape has 1 or 3 channels in oxnet (no alpha channel)",
    "shuffle_chunk_size": "oxnet shuffles through the .idx index; chunked shuffling of a file read in order is "
                          + _NOT_YET,
    "shuffle_chunk_seed": "chunked shuffling (shuffle_chunk_size) is " + _NOT_YET,
    "label_pad_width": "padding variable-length (detection) labels is " + _NOT_YET
                       + " (mx.image.ImageDetIter reads detection records)",
    "label_pad_value": "padding variable-length (detection) labels is " + _NOT_YET,
    "use_fp16": "float16 output is " + _NOT_YET + " (dtype 'float32' or 'uint8')",
}

# MXNet's defaults of the parameters above (given at these values they have no effect).
_DEFAULT_ONLY = {
    "path_imglist": "",
    "aug_seq": "aug_default",
    "max_rotate_angle": 0, "rotate": -1, "max_shear_ratio": 0.0, "max_aspect_ratio": 0.0, "min_aspect_ratio": None,
    "max_random_scale": 1.0, "min_random_scale": 1.0, "max_random_area": 1.0, "min_random_area": 1.0,
    "random_resized_crop": False, "max_crop_size": -1, "min_crop_size": -1, "max_img_size": 1e10,
    "min_img_size": 0.0, "brightness": 0.0, "contrast": 0.0, "saturation": 0.0, "pca_noise": 0.0, "random_h": 0,
    "random_s": 0, "random_l": 0, "max_random_contrast": 0.0, "max_random_illumination": 0.0, "fill_value": 255,
    "pad": 0, "mirror": False, "mean_img": "", "mean_a": 0.0, "std_a": 1.0, "shuffle_chunk_size": 0,
    "shuffle_chunk_seed": 0, "label_pad_width": 0, "label_pad_value": 0.0, "use_fp16": False,
}


class ImageRecordIter(DataIter):
    """Iterate over a RecordIO file of images (``im2rec`` output) in
    batches, decoding and augmenting in Rust threads (MXNet's
    ``mx.io.ImageRecordIter``).

    Each image is decoded (RGB, or gray for data_shape[0] == 1), its
    shorter side resized to ``resize`` (when > 0), cropped to data_shape
    (random position with ``rand_crop``, else centred; an image smaller than
    data_shape is cropped to its aspect and resized), mirrored with
    probability 1/2 with ``rand_mirror``, and written CHW as
    ``(x - mean) * scale / std``. Per-record random seeds make the output
    independent of ``preprocess_threads``.

    Parameters (MXNet's names)
    --------------------------
    path_imgrec, path_imgidx, data_shape, batch_size, label_width=1,
    shuffle=False, seed=0, preprocess_threads=4, prefetch_buffer=4,
    round_batch=True (pad the last batch from the start; False: the last
    batch is returned with its missing slots zeroed and pad 0, as MXNet does),
    part_index=0, num_parts=1, resize=-1, rand_crop=False,
    rand_mirror=False, mean_r/g/b=0, std_r/g/b=1, scale=1, inter_method=1,
    data_name='data', label_name='softmax_label', dtype='float32'
    ('float32' or 'uint8'; uint8 skips normalisation).

    seed_aug: None, or the seed of the augmentations (crop position, mirror,
    random interpolation), which are then the same whatever ``seed`` (the
    shuffle's); with None ``seed`` seeds them too. oxnet varies them per
    epoch and record either way, independently of the thread count.
    verbose: accepted for compatibility; oxnet prints nothing either way.
    ctx ('cpu' or 'gpu'), device_id: accepted; batches are made in CPU memory
    (MXNet's 'gpu' only chose pinned memory for them).

    MXNet's other documented parameters (rotation, random scale/aspect,
    colour jitter, mean_img, ...) are accepted at MXNet's defaults; any other
    value raises ValueError saying why (most: use mx.image.ImageIter with
    mx.image.CreateAugmenter, which has those augmentations).
    """

    def __init__(
        self,
        path_imgrec=None,
        data_shape=None,
        batch_size=None,
        path_imgidx="",
        label_width=1,
        shuffle=False,
        seed=0,
        preprocess_threads=4,
        prefetch_buffer=4,
        round_batch=True,
        part_index=0,
        num_parts=1,
        resize=-1,
        rand_crop=False,
        rand_mirror=False,
        mean_r=0.0,
        mean_g=0.0,
        mean_b=0.0,
        std_r=1.0,
        std_g=1.0,
        std_b=1.0,
        scale=1.0,
        inter_method=1,
        data_name="data",
        label_name="softmax_label",
        dtype="float32",
        seed_aug=None,
        verbose=True,
        ctx="gpu",
        device_id=0,
        **kwargs,
    ):
        super(ImageRecordIter, self).__init__()
        name = self.__class__.__name__
        for k, v in kwargs.items():
            if k in _DEFAULT_ONLY and _same(v, _DEFAULT_ONLY[k]):
                continue
            if k in _UNSUPPORTED:
                raise ValueError("%s: %s=%r: %s" % (name, k, v, _UNSUPPORTED[k]))
            raise TypeError("%s: unknown parameter %r" % (name, k))
        if ctx not in ("cpu", "gpu") and not isinstance(ctx, Context):
            raise ValueError("%s: ctx must be 'cpu' or 'gpu', got %r" % (name, ctx))
        if seed_aug is not None and (not isinstance(seed_aug, (int, np.integer)) or seed_aug < 0):
            raise ValueError("%s: seed_aug must be None or a non-negative int, got %r" % (name, seed_aug))
        if not path_imgrec:
            raise ValueError("%s: path_imgrec is required" % name)
        if data_shape is None or batch_size is None:
            raise ValueError("%s: data_shape and batch_size are required" % name)
        data_shape = tuple(int(x) for x in data_shape)
        if len(data_shape) != 3 or data_shape[0] not in (1, 3):
            raise ValueError(
                "%s: data_shape %s must be (channels, height, width) with 1 or 3 channels" % (name, data_shape)
            )
        batch_size = int(batch_size)
        if batch_size <= 0:
            raise ValueError("%s: batch_size must be positive, got %d" % (name, batch_size))
        if str(dtype) not in ("float32", "uint8"):
            raise ValueError("%s: dtype %r is not supported ('float32' or 'uint8')" % (name, dtype))
        c = data_shape[0]
        mean = [float(mean_r), float(mean_g), float(mean_b)][:c]
        std = [float(std_r), float(std_g), float(std_b)][:c]
        self.batch_size = batch_size
        self.data_shape = data_shape
        self.label_width = int(label_width)
        self._dtype = str(dtype)
        self._check_label_width(str(path_imgrec), name)
        self._pipe = _native.ImagePipeline(
            data_shape,
            batch_size,
            path_imgrec=str(path_imgrec),
            path_imgidx=str(path_imgidx) if path_imgidx else None,
            label_width=self.label_width,
            shuffle=bool(shuffle),
            seed=int(seed),
            num_threads=max(1, int(preprocess_threads)),
            prefetch=max(1, int(prefetch_buffer)),
            part_index=int(part_index),
            num_parts=int(num_parts),
            last_batch="pad" if round_batch else "zeros",
            dtype=self._dtype,
            resize=int(resize) if resize is not None and int(resize) > 0 else None,
            rand_crop=bool(rand_crop),
            rand_mirror=bool(rand_mirror),
            inter_method=int(inter_method),
            mean=mean,
            std=std,
            scale=float(scale),
            aug_seed=None if seed_aug is None else int(seed_aug),
        )
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, np.dtype(self._dtype).type)]
        lshape = (batch_size, self.label_width) if self.label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, lshape, np.float32)]
        self._started = False

    def _check_label_width(self, path, name):
        # MXNet checks the first record: its label count must be label_width.
        first = _native.RecordReader(path).read()
        if first is None:
            raise ValueError("%s: %s has no records" % (name, path))
        if len(first) < 24:
            raise ValueError("%s: the first record of %s is too short for an image record header" % (name, path))
        flag = int(np.frombuffer(first[:4], dtype="<u4")[0])
        num_label = flag if flag > 0 else 1
        if num_label != self.label_width:
            raise ValueError(
                "%s: %s provides %d-dimensional labels but label_width is set to %d"
                % (name, path, num_label, self.label_width)
            )

    @property
    def num_records(self):
        """Records this part reads per epoch."""
        return self._pipe.num_records

    def reset(self):
        """Start the next epoch (reshuffled with a new epoch seed)."""
        if self._started:
            self._pipe.reset()
            self._started = False

    def next(self):
        """The next DataBatch; the wait for it releases the GIL. Raises
        StopIteration at the end of the epoch, and an error naming the record
        when a record of the batch cannot be read or decoded (the next call
        goes on with the following batch)."""
        self._started = True
        res = self._pipe.next()
        if res is None:
            raise StopIteration
        data, label, pad, indices = res
        if self.label_width == 1:
            label = label.reshape((label.shape[0],))
        return DataBatch([data], [label], pad=pad, index=np.asarray(indices, dtype=np.uint64))

    def iter_next(self):
        """Fetch the next batch for getdata()/getlabel()/getpad()/getindex();
        False at the end of the epoch."""
        try:
            self._cur = self.next()
        except StopIteration:
            self._cur = None
            return False
        return True

    def getdata(self):
        """The data NDArray of the batch fetched by iter_next()."""
        return self._cur.data[0]

    def getlabel(self):
        """The label NDArray of the batch fetched by iter_next()."""
        return self._cur.label[0]

    def getpad(self):
        """Padding examples at the end of the batch fetched by iter_next()."""
        return self._cur.pad

    def getindex(self):
        """Record indices of the batch fetched by iter_next()."""
        return self._cur.index


def _same(a, b):
    try:
        return a == b or str(a) == str(b)
    except Exception:  # noqa: BLE001
        return False


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter whose data batches are uint8 (no normalisation)."""

    def __init__(self, *args, **kwargs):
        kwargs["dtype"] = "uint8"
        super(ImageRecordUInt8Iter, self).__init__(*args, **kwargs)


class PrefetchingIter(DataIter):
    """Fetch the next batch of one or more data iterators in background
    threads while the current one is used.

    Parameters
    ----------
    iters : DataIter or list of DataIter
        The iterators; their batches are joined (data after data, label
        after label) into one DataBatch. They must yield the same number of
        batches with the same padding.
    rename_data : None or list of dict
        For the i-th iterator, {'original_name': 'new_name'} covering each
        of its ``provide_data`` entries.
    rename_label : None or list of dict
        The same for ``provide_label``.

    An exception raised by an iterator's ``next`` is raised by this
    iterator's ``next``.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        import concurrent.futures

        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: iters must hold at least one DataIter")
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.n_iter,
                                                           thread_name_prefix="PrefetchingIter")
        self._pending = None
        self._prefetch()

    @staticmethod
    def _fetch(it):
        try:
            return it.next()
        except StopIteration:
            return None

    def _prefetch(self):
        self._pending = [self._pool.submit(self._fetch, it) for it in self.iters]

    def _collect(self):
        pending, self._pending = self._pending, None
        return [f.result() for f in pending]

    @staticmethod
    def _renamed(descs, renames):
        if renames is None:
            return sum(descs, [])
        return sum([[DataDesc(r[d.name], d.shape, d.dtype) if isinstance(d, DataDesc) else DataDesc(r[d[0]], d[1])
                     for d in ds] for r, ds in zip(renames, descs)], [])

    @property
    def provide_data(self):
        return self._renamed([list(i.provide_data) for i in self.iters], self.rename_data)

    @property
    def provide_label(self):
        return self._renamed([list(i.provide_label or []) for i in self.iters], self.rename_label)

    def reset(self):
        """Wait for the batches being fetched, reset every iterator and
        start fetching from the beginning."""
        if self._pending is not None:
            for f in self._pending:
                f.exception()  # wait; an error of a discarded fetch is dropped with it
            self._pending = None
        for it in self.iters:
            it.reset()
        self._prefetch()

    def iter_next(self):
        if self._pending is None:
            return False
        batches = self._collect()
        if batches[0] is None:
            if any(b is not None for b in batches):
                raise ValueError("Number of entry mismatches between iterators")
            return False
        if any(b is None or b.pad != batches[0].pad for b in batches):
            raise ValueError("Number of entry mismatches between iterators")
        self.current_batch = DataBatch(
            sum([list(b.data) for b in batches], []),
            sum([list(b.label or []) for b in batches], []),
            batches[0].pad,
            batches[0].index,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
        self._prefetch()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)
