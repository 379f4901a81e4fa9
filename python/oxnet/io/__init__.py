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

__all__ = [
    "DataBatch",
    "DataDesc",
    "DataIter",
    "ImageRecordIter",
    "ImageRecordUInt8Iter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
]
