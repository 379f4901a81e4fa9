"""Neural network layers (``mx.gluon.nn``)."""
from ..block import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from .activations import *  # noqa: F401,F403
