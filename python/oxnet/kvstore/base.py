"""The KVStore interface and its registry (MXNet 1.9's ``kvstore/base.py`` API)."""
import warnings

from ..base import MXNetError
from ..ndarray import NDArray

__all__ = ["create", "KVStoreBase"]


class KVStoreBase(object):
    """The interface of a key-value store. A store registered with
    :meth:`register` can be made by :func:`create` under its lower-cased
    class name (and so be used by Module and gluon's Trainer)."""

    OPTIMIZER = "optimizer"
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Set ``key`` to ``value`` and copy it into ``out`` (NDArray or list)."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Reduce ``value`` (a list is summed) and write the result into
        ``out`` (or back into ``value`` when ``out`` is None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` inside the store on each push."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (e.g. 'optimizer')."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the store's optimizer states to ``fname``."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Read optimizer states from ``fname``."""
        raise NotImplementedError()

    @property
    def type(self):
        """The store's type name."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's rank (0 on one machine)."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """The number of workers (1 on one machine)."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Register a KVStoreBase subclass under its lower-cased class name
        (usable as a decorator); a second registration warns and overrides."""
        if not isinstance(klass, type):
            raise TypeError("KVStoreBase.register: expected a class, got %r" % (klass,))
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            old = KVStoreBase.kv_registry[name]
            warnings.warn("WARNING: New kvstore %s.%s is overriding existing kvstore %s.%s"
                          % (klass.__module__, klass.__name__, old.__module__, old.__name__))
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A minimal custom store (MXNet's example of the interface): pushpull
    sums in Python, no optimizer support."""

    def broadcast(self, key, value, out, priority=0):
        for o in (out if isinstance(out, list) else [out]):
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        if isinstance(value, NDArray):
            if out is not None:
                for o in (out if isinstance(out, list) else [out]):
                    o[:] = value
            return
        ctx = value[0].context
        reduced = sum([v.as_in_context(ctx) for v in value])
        targets = value if out is None else (out if isinstance(out, list) else [out])
        for o in targets:
            o[:] = reduced

    @staticmethod
    def is_capable(capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError("Unknown capability: {}".format(capability))

    @property
    def type(self):
        return "teststore"

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1

    def set_optimizer(self, optimizer):
        raise NotImplementedError("teststore does not run optimizers")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError("teststore has no optimizer states")

    def load_optimizer_states(self, fname):
        raise NotImplementedError("teststore has no optimizer states")


def create(name="local"):
    """A new key-value store.

    ``name``: 'local' (default; also 'local_update_cpu', 'local_allreduce_cpu'),
    'device' (also 'local_allreduce_device'; the same single-process store,
    which also accepts gradient compression), or the lower-cased name of a
    class registered with :meth:`KVStoreBase.register`. Distributed stores
    ('dist_sync', 'dist_async', ...) and 'nccl' are not built in oxnet yet
    and raise MXNetError.
    """
    if not isinstance(name, str):
        raise TypeError("name must be a string, got %s" % type(name).__name__)
    key = name.lower()
    if key in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[key]()
    if "dist" in key or "nccl" in key or "horovod" in key or "byteps" in key:
        raise MXNetError("kvstore.create: '%s' is a distributed (multi-process or multi-GPU) store; oxnet builds "
                         "only the single-machine stores 'local' and 'device' so far" % name)
    if "local" not in key and "device" not in key:
        raise MXNetError("kvstore.create: unknown KVStore type '%s' (use 'local', 'device' or a registered store: %s)"
                         % (name, ", ".join(sorted(KVStoreBase.kv_registry))))
    from .kvstore import KVStore

    return KVStore(key)
