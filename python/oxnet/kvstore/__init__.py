"""Key-value stores (``mx.kvstore``, alias ``mx.kv``) for one machine:
'local' and 'device' stores plus user stores registered with
``KVStoreBase.register``."""
from .base import KVStoreBase, create  # noqa: F401
from .kvstore import KVStore  # noqa: F401

__all__ = ["KVStoreBase", "KVStore", "create"]
