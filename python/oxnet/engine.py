"""Engine controls: bulk execution and the engine's kind."""
from __future__ import annotations

import contextlib

from . import _native

_bulk_size = 0


def set_bulk_size(size: int) -> int:
    """Set how many consecutive operations the engine may run as one segment
    on the pushing thread (0 or 1 turns bulking off). Returns the previous
    size. Bulking never changes results, only how work is handed to threads."""
    global _bulk_size
    prev = _bulk_size
    _bulk_size = int(size)
    _native.set_bulk_size(_bulk_size)
    return prev


@contextlib.contextmanager
def bulk(size: int):
    """``with mx.engine.bulk(n):`` bulk up to n operations inside the block."""
    prev = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(prev)


def engine_type() -> str:
    """'ThreadedEnginePerDevice' or 'NaiveEngine' (set OXNET_ENGINE_TYPE or MXNET_ENGINE_TYPE)."""
    return _native.engine_type()
