"""oxnet: MXNet 1.x's Python API over a Rust core.

    import oxnet as mx
    a = mx.nd.ones((2, 3))
    b = (a * 2 + 1).asnumpy()
"""
from . import base
from .base import MXNetError, __version__  # noqa: F401
from . import context
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus  # noqa: F401
from . import engine, storage
from . import ndarray
from . import ndarray as nd
from . import random
from . import autograd
from . import operator
from . import profiler
from . import test_utils
from . import recordio, io, image  # noqa: E402
from . import name, attribute  # noqa: E402
from .attribute import AttrScope  # noqa: E402
from . import symbol  # noqa: E402
from . import symbol as sym  # noqa: E402
from . import executor  # noqa: E402
from . import lr_scheduler, optimizer, registry, initializer  # noqa: E402
from . import initializer as init  # noqa: E402
from . import metric, model, callback  # noqa: E402
from . import kvstore  # noqa: E402
from . import kvstore as kv  # noqa: E402
from . import visualization  # noqa: E402
from . import visualization as viz  # noqa: E402



def _wait_at_exit():
    # Exit waits for pending work (errors were the program's to collect).
    try:
        _native.waitall()
    except Exception:  # noqa: BLE001
        pass


import atexit as _atexit  # noqa: E402

from . import _native  # noqa: E402

_atexit.register(_wait_at_exit)

__all__ = [
    "base", "context", "Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "engine",
    "storage", "ndarray", "nd", "random", "MXNetError",
]
