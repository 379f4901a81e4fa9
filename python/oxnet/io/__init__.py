"""Data iterators (``mx.io``)."""

from .io import (  # noqa: F401
    DataBatch,
    DataDesc,
    DataIter,
    ImageRecordIter,
    ImageRecordUInt8Iter,
    NDArrayIter,
    PrefetchingIter,
    ResizeIter,
)
from .file_iters import CSVIter, MNISTIter  # noqa: F401

__all__ = [
    "CSVIter",
    "MNISTIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "ImageRecordIter",
    "ImageRecordUInt8Iter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
]
