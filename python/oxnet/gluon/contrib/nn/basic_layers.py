"""Contributed layers (``mx.gluon.contrib.nn``): Concurrent, HybridConcurrent,
Identity, SyncBatchNorm (one process: BatchNorm over the local batch) and
PixelShuffle1D/2D/3D."""
from __future__ import annotations

import warnings

from .... import context, ndarray as nd
from ...block import HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm", "PixelShuffle1D",
           "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(Sequential):
    """Run every child on the same input and concatenate the outputs along ``axis``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Hybridizable :class:`Concurrent`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Return the input unchanged (a placeholder in containers)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x


class SparseEmbedding:
    """MXNet's Embedding with row_sparse weight and gradient. oxnet has no
    sparse storage: constructing one raises MXNetError (use nn.Embedding)."""

    def __init__(self, *args, **kwargs):
        from ....base import MXNetError

        raise MXNetError("SparseEmbedding: row_sparse storage is not implemented in oxnet; use "
                         "gluon.nn.Embedding (dense gradients)")


class SyncBatchNorm(BatchNorm):
    """Cross-device BatchNorm. oxnet runs one process on one device per
    replica, so the statistics are those of the local batch (``num_devices``
    is accepted and must be 1 or None)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
        if num_devices is None:
            num_devices = max(context.num_gpus(), 1)
            if num_devices > 1:
                warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please mannually set "
                              "num_devices", UserWarning)
        if num_devices != 1:
            from ....base import MXNetError

            raise MXNetError(f"SyncBatchNorm: synchronizing statistics across {num_devices} devices is not "
                             "implemented in oxnet; use num_devices=1")
        self._num_devices = num_devices


class PixelShuffle1D(HybridBlock):
    """(N, C*f, W) -> (N, C, W*f)."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))
        x = F.transpose(x, (0, 1, 3, 2))
        return F.reshape(x, (0, 0, -3))

    def __repr__(self):
        return "{}({})".format(self.__class__.__name__, self._factor)


def _factors(factor, n):
    try:
        return (int(factor),) * n
    except TypeError:
        f = tuple(int(v) for v in factor)
        if len(f) != n:
            raise AssertionError("wrong length {}".format(len(f))) from None
        return f


class PixelShuffle2D(HybridBlock):
    """(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))
        return F.reshape(x, (0, 0, -3, -3))

    def __repr__(self):
        return "{}({})".format(self.__class__.__name__, self._factors)


class PixelShuffle3D(HybridBlock):
    """(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))
        x = F.swapaxes(x, 2, 3)
        x = F.reshape(x, (0, 0, 0, -4, f1, f2 * f3, 0, 0))
        x = F.reshape(x, (0, 0, -3, 0, 0, 0))
        x = F.swapaxes(x, 3, 4)
        x = F.reshape(x, (0, 0, 0, 0, -4, f2, f3, 0))
        x = F.reshape(x, (0, 0, 0, -3, 0, 0))
        x = F.swapaxes(x, 4, 5)
        return F.reshape(x, (0, 0, 0, 0, -3))

    def __repr__(self):
        return "{}({})".format(self.__class__.__name__, self._factors)
