"""What this build of oxnet has (``mx.runtime``), under MXNet 1.9.1's feature names.

    import oxnet as mx
    mx.runtime.Features().is_enabled('CUDA')    # False
    mx.runtime.feature_list()                    # [✖ CUDA, ✖ CUDNN, ...]

The answers are facts about the loaded extension: no CUDA, cuDNN, NCCL, TensorRT, MKL-DNN,
OpenCV, OpenMP or BLAS library (oxnet's kernels are its own Rust code); CPU instruction sets as
compiled; ``DEBUG`` is true for a debug build (see ``oxnet.__build__``).
"""
from __future__ import annotations

import collections

from . import _native

__all__ = ["Feature", "Features", "feature_list"]


class Feature:
    """One compile-time feature: ``name`` (str) and ``enabled`` (bool)."""

    __slots__ = ("_name", "_enabled")

    def __init__(self, name, enabled):
        self._name = str(name)
        self._enabled = bool(enabled)

    @property
    def name(self):
        """The feature's name, e.g. ``'CUDA'``."""
        return self._name

    @property
    def enabled(self):
        """True if this build has the feature."""
        return self._enabled

    def __repr__(self):
        return ("✔ " if self._enabled else "✖ ") + self._name


def feature_list():
    """Return the list of :class:`Feature` of this build, in MXNet's order."""
    return [Feature(name, on) for name, on in _native.features()]


class Features(collections.OrderedDict):
    """Ordered mapping of feature name to :class:`Feature` (one shared instance, as in MXNet)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            inst = super().__new__(cls)
            collections.OrderedDict.__init__(inst, [(f.name, f) for f in feature_list()])
            cls.instance = inst
        return cls.instance

    def __init__(self):  # filled once in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """True if the feature named ``feature_name`` (case-insensitive) is in this build.

        Raises RuntimeError (as MXNet does) for a name that is not a known feature."""
        feature_name = feature_name.upper()
        if feature_name not in self:
            raise RuntimeError(
                "Feature '{}' is unknown, known features are: {}".format(feature_name, list(self.keys())))
        return self[feature_name].enabled
