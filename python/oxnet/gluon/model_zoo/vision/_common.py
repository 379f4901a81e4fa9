"""Shared pieces of the model zoo."""
from __future__ import annotations

import os

from ...data.dataset import _data_dir

DEFAULT_ROOT = os.path.join(_data_dir(), "models")


def load_pretrained(net, name, ctx, root):
    """Load MXNet's pretrained parameters for ``name`` from ``root`` into ``net``."""
    from ..model_store import get_model_file

    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net
