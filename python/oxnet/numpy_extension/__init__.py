"""``mx.npx`` (MXNet's NumPy-mode extensions): only the mode switches exist in oxnet.

The mode queries and switches answer that the NumPy-compatible mode is off (see
:mod:`oxnet.util`): ``is_np_array``, ``is_np_shape`` (False), ``reset_np`` (no-op),
``set_np``/``use_np``... (raise NotBuiltError when asked to turn it on), and
``get_cuda_compute_capability`` (no CUDA). Any other public name (``npx.relu``, ...) raises
NotBuiltError naming it.
"""
from ..base import NotBuiltError
from ..util import (  # noqa: F401
    get_cuda_compute_capability,
    is_np_array,
    is_np_shape,
    np_array,
    np_shape,
    reset_np,
    set_np,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

__all__ = [
    "get_cuda_compute_capability", "is_np_array", "is_np_shape", "np_array", "np_shape", "reset_np", "set_np",
    "set_np_shape", "use_np", "use_np_array", "use_np_shape",
]


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
    raise NotBuiltError("mx.npx.{}: MXNet's NumPy-compatible interface (mx.np / mx.npx) is not built in oxnet; "
                        "use the classic mx.nd API".format(name))
