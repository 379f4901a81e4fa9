"""``mx.nd.image`` (MXNet's ``mxnet.ndarray.image``): the image operators MXNet
registers as ``_image_<name>``, under their short names, e.g.
``mx.nd.image.to_tensor(img)``, ``mx.nd.image.normalize(t, mean, std)``,
``mx.nd.image.resize(img, (w, h))``, ``mx.nd.image.crop(img, x, y, w, h)`` and the
random colour augmenters (``random_brightness``, ``random_color_jitter``, ...),
which draw from the generator that ``mx.random.seed`` seeds. Images are
(H, W, C) arrays, or (N, H, W, C) batches where MXNet accepts them; arguments
may come by position in MXNet's order."""
from .. import _native
from . import op

_PREFIX = "_image_"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    full = _PREFIX + name
    try:
        _native.get_op(full)
    except Exception:  # noqa: BLE001
        raise AttributeError(f"module 'oxnet.ndarray.image' has no operator '{name}'") from None
    return op.__getattr__(full)


def __dir__():
    return sorted(n[len(_PREFIX):] for n in _native.op_names() if n.startswith(_PREFIX))
