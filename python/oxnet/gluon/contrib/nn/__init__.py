"""Contributed neural network layers (``mx.gluon.contrib.nn``)."""
from .basic_layers import *  # noqa: F401,F403
