"""The pooled memory allocator's counters and release."""
from __future__ import annotations

from . import _native


def stats() -> dict:
    """Pool counters: bytes_in_use, bytes_cached, hits, misses, allocs, frees, pool_type."""
    return dict(_native.storage_stats())


def release_all() -> None:
    """Return every cached (free) block to the system."""
    _native.storage_release_all()
