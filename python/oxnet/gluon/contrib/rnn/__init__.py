"""Contributed recurrent cells (``mx.gluon.contrib.rnn``)."""
from .rnn_cell import *  # noqa: F401,F403
