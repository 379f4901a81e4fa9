"""MXNet's ``mx.contrib`` namespace, for what oxnet has of it:

- ``contrib.ndarray`` / ``contrib.nd``: the contrib operators (``mx.nd.contrib``);
- ``contrib.autograd``: MXNet's first, experimental autograd interface (``train_section``,
  ``mark_variables``, ``grad_and_loss``, ...), over :mod:`oxnet.autograd`.

MXNet's ``contrib.symbol``, ``onnx``, ``quantization``, ``tensorboard``, ``text`` and ``io``
are not built.
"""
from ..ndarray import contrib as ndarray
from ..ndarray import contrib as nd
from . import autograd

__all__ = ["ndarray", "nd", "autograd"]
