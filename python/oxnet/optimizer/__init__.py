"""Optimizers (``mx.optimizer``): update rules, the registry and the Updater."""
from . import optimizer, contrib  # noqa: F401
from .optimizer import *  # noqa: F401,F403
from .optimizer import __all__ as _opt_all

__all__ = list(_opt_all) + ["contrib"]
