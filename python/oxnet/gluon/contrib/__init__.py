"""Contributed Gluon components (``mx.gluon.contrib``)."""
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
