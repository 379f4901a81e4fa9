"""Gluon, MXNet's imperative/hybrid neural network API (``mx.gluon``)."""
from .parameter import *  # noqa: F401,F403
from .block import *  # noqa: F401,F403
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import utils  # noqa: F401
from . import loss  # noqa: F401
from . import data  # noqa: F401
