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
from . import gluon  # noqa: E402
from . import module  # noqa: E402
from . import module as mod  # noqa: E402
from . import image as img
from . import random as rnd
from . import runtime, util, contrib
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape  # noqa: F401
from .util import is_np_array, np_array, use_np_array, use_np  # noqa: F401
from . import numpy, numpy_extension
from . import numpy as np
from . import numpy_extension as npx
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

#: "debug" or "release": the cargo profile of the loaded native extension.
__build__ = _native.build_profile()

# MXNet namespaces oxnet does not have yet: a user gets an error saying so instead of a bare
# AttributeError. Delete a name here when its module lands (tests/python/test_not_built_yet.py
# checks that every name here raises and that no importable name is listed).
_NOT_BUILT_YET = {
}


def __getattr__(name):
    what = _NOT_BUILT_YET.get(name)
    if what is None:
        raise AttributeError(f"module 'oxnet' has no attribute {name!r}")
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # landed but still listed
        return importlib.import_module(f"{__name__}.{name}")
    raise base.NotBuiltError(
        f"{what} is not built in oxnet yet; see the README's list of what is not there yet")


__all__ = [
    "base", "context", "Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "engine",
    "storage", "ndarray", "nd", "random", "MXNetError",
]
