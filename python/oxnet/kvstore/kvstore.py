"""The single-machine key-value store behind ``mx.kv.create('local' | 'device')``.

Each key holds one NDArray. ``push`` sums the pushed arrays (one per
device) with ``add_n`` on the engine, then either stores the sum or, when an
updater is set (``set_optimizer``), calls ``updater(key, sum, stored)``.
``pull`` copies the stored value into the outputs. With 2-bit gradient
compression each pushed array is first quantized to {-t, 0, +t} against a
per-(key, device) residual that keeps what quantization dropped, as MXNet's
device store does.
"""
import pickle

from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from ..ndarray import NDArray
from .base import KVStoreBase

__all__ = ["KVStore"]


def _group(key, value, what):
    """[(key, [NDArray, ...])] from MXNet's key/value forms: a key with an
    NDArray or list of them, or a list of keys with one such entry each.
    Repeated keys are merged in first-seen order."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(key) != len(value):
            raise MXNetError("KVStore.%s: %d keys need a list of %d values, got %s"
                             % (what, len(key), len(key), type(value).__name__ if not isinstance(value, (list, tuple))
                                else "%d values" % len(value)))
        pairs = []
        for k, v in zip(key, value):
            pairs.extend(_group(k, v, what))
    else:
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise MXNetError("KVStore.%s: keys must be int or str, got %s" % (what, type(key).__name__))
        vals = [value] if isinstance(value, NDArray) else list(value)
        for v in vals:
            if not isinstance(v, NDArray):
                raise MXNetError("KVStore.%s: values for key %r must be NDArrays, got %s"
                                 % (what, key, type(v).__name__))
        pairs = [(key, vals)]
    merged, order = {}, []
    for k, vals in pairs:
        if k not in merged:
            merged[k] = []
            order.append(k)
        merged[k].extend(vals)
    return [(k, merged[k]) for k in order]


class _TwoBit(object):
    """2-bit gradient compression with error feedback (MXNet's semantics)."""

    def __init__(self, threshold):
        if threshold <= 0:
            raise ValueError("set_gradient_compression: threshold must be positive, got %s" % threshold)
        self.threshold = float(threshold)
        self.residuals = {}

    def __call__(self, key, slot, grad):
        """The quantized gradient of device ``slot`` for ``key``; updates the residual."""
        res = self.residuals.get((key, slot))
        if res is None or res.shape != grad.shape:
            res = nd.zeros(grad.shape, ctx=grad.context, dtype=grad.dtype)
            self.residuals[(key, slot)] = res
        t = self.threshold
        res += grad
        q = (res >= t) * t - (res <= -t) * t
        res -= q
        return q


class KVStore(KVStoreBase):
    """A single-process key-value store ('local' or 'device' types); make
    one with :func:`oxnet.kvstore.create`."""

    def __init__(self, kv_type="local"):
        self._type = kv_type
        self._store = {}
        self._key_type = None
        self._updater = None
        self._compression = None
        self._compression_params = None

    # -- keys -----------------------------------------------------------------

    def _check_key_type(self, key, what):
        kind = str if isinstance(key, str) else int
        if self._key_type is None:
            self._key_type = kind
        elif kind is not self._key_type:
            raise MXNetError("KVStore.%s: key %r is %s but this store uses %s keys (int and str keys cannot be "
                             "mixed in one store)" % (what, key, kind.__name__, self._key_type.__name__))

    def _stored(self, key, what):
        self._check_key_type(key, what)
        if key not in self._store:
            raise MXNetError("KVStore.%s: key %r has not been inited (call init first)" % (what, key))
        return self._store[key]

    # -- API --------------------------------------------------------------------

    def init(self, key, value):
        """Initialize each key with a value (an NDArray, or a list whose
        first array is used). Keys are int or str (not mixed); a key can be
        initialized once."""
        for k, vals in _group(key, value, "init"):
            self._check_key_type(k, "init")
            if k in self._store:
                raise MXNetError("KVStore.init: duplicate init of key %r" % (k,))
            self._store[k] = vals[0].copy()

    def _reduce(self, key, vals):
        if self._compression is not None:
            vals = [self._compression(key, i, v) for i, v in enumerate(vals)]
        stored = self._store[key]
        for v in vals:
            if v.shape != stored.shape:
                raise MXNetError("KVStore.push: key %r holds shape %s but a pushed value has shape %s"
                                 % (key, stored.shape, v.shape))
        ctx = stored.context
        vals = [v.as_in_context(ctx) for v in vals]
        if len(vals) == 1:
            return vals[0] if self._compression is not None else vals[0].copy()
        return nd.add_n(*vals)

    def push(self, key, value, priority=0):
        """Push values: the values of one key (one per device) are summed;
        the sum replaces the stored value, or is handed to the updater as
        ``updater(key, sum, stored)`` when one is set."""
        for k, vals in _group(key, value, "push"):
            stored = self._stored(k, "push")
            merged = self._reduce(k, vals)
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                stored[:] = merged

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy each key's stored value into ``out`` (an NDArray or list, one
        per device)."""
        if out is None:
            raise MXNetError("KVStore.pull: out is required")
        for k, outs in _group(key, out, "pull"):
            stored = self._stored(k, "pull")
            for o in outs:
                if o.shape != stored.shape:
                    raise MXNetError("KVStore.pull: key %r holds shape %s but out has shape %s"
                                     % (k, stored.shape, o.shape))
                stored.copyto(o)

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """:meth:`init` the keys with ``value``, then :meth:`pull` into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Not available: oxnet has no row_sparse storage."""
        raise MXNetError("KVStore.row_sparse_pull: row_sparse storage is not supported by oxnet "
                         "(arrays are dense); use pull")

    def is_capable(self, capability):
        """'optimizer' is supported; other names raise ValueError."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError("Unknown capability: {}".format(capability))

    def set_gradient_compression(self, compression_params):
        """Compress pushed gradients: ``{'type': '2bit', 'threshold': t}``
        (threshold default 0.5) quantizes each pushed array to {-t, 0, +t}
        keeping the rest in a residual added to the next push. Only 'device'
        stores accept it, as in MXNet; ``{'type': 'none'}`` turns it off."""
        if "device" not in self._type:
            raise MXNetError("Gradient compression is not supported for this type of kvstore (%s); "
                             "use mx.kv.create('device')" % self._type)
        if not isinstance(compression_params, dict) or "type" not in compression_params:
            raise ValueError("set_gradient_compression: expected a dict with a 'type' key, got %r"
                             % (compression_params,))
        ctype = str(compression_params["type"]).lower()
        unknown = set(compression_params) - {"type", "threshold"}
        if unknown:
            raise ValueError("set_gradient_compression: unknown parameters %s" % sorted(unknown))
        if ctype == "none":
            self._compression = None
        elif ctype == "2bit":
            self._compression = _TwoBit(float(compression_params.get("threshold", 0.5)))
        else:
            raise ValueError("set_gradient_compression: unknown type %r (oxnet supports '2bit' and 'none')"
                             % (compression_params["type"],))
        self._compression_params = dict(compression_params)

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` in the store: each push updates the stored
        weight with the summed gradient (through :class:`oxnet.optimizer.Updater`)."""
        try:
            pickle.dumps(optimizer, 0)
        except Exception as err:  # noqa: BLE001 - same contract as MXNet
            raise MXNetError("KVStore.set_optimizer: the optimizer must be picklable: %s" % err) from err
        self._set_updater(opt.get_updater(optimizer))

    @property
    def type(self):
        """The type name given to :func:`create`."""
        return self._type

    @property
    def rank(self):
        """0: one worker."""
        return 0

    @property
    def num_workers(self):
        """1: one worker."""
        return 1

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the updater's states (and the optimizer with
        ``dump_optimizer``) to ``fname``."""
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise MXNetError("KVStore.save_optimizer_states: no optimizer set (call set_optimizer first)")
        with open(fname, "wb") as fout:
            fout.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Read states written by :meth:`save_optimizer_states` (or by MXNet)."""
        if self._updater is None or not hasattr(self._updater, "set_states"):
            raise MXNetError("KVStore.load_optimizer_states: no optimizer set (call set_optimizer first)")
        with open(fname, "rb") as fin:
            self._updater.set_states(fin.read())

    def _set_updater(self, updater):
        """Use ``updater(key, merged, stored)`` on each push."""
        self._updater = updater

    def _barrier(self):
        """A no-op: one worker has nobody to wait for."""

    def _send_command_to_servers(self, head, body):
        raise MXNetError("KVStore: a %s store has no servers to send commands to" % self._type)
