"""Key-value stores (``mx.kvstore``, alias ``mx.kv``): the single-machine
'local' and 'device' stores, the synchronous distributed stores over MPI
('dist_sync', 'dist_device_sync', 'horovod'; made on demand, see
``oxnet.kvstore.dist``) and user stores registered with
``KVStoreBase.register``."""
from .base import KVStoreBase, create  # noqa: F401
from .kvstore import KVStore  # noqa: F401

__all__ = ["KVStoreBase", "KVStore", "create"]
