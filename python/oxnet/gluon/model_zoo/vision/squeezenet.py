"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016)."""
from __future__ import annotations

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1", "get_squeezenet"]


def _fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _fire(squeeze, expand1x1, expand3x3):
    out = nn.HybridSequential(prefix="")
    out.add(_fire_conv(squeeze, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_fire_conv(expand1x1, 1), _fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` '1.0' or '1.1'."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ("1.0", "1.1"):
            raise AssertionError("Unsupported SqueezeNet version {version}:1.0 or 1.1 expected".format(version=version))
        pool = lambda: nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)  # noqa: E731
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if version == "1.0":
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation("relu"), pool(),
                                  _fire(16, 64, 64), _fire(16, 64, 64), _fire(32, 128, 128), pool(),
                                  _fire(32, 128, 128), _fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256),
                                  pool(), _fire(64, 256, 256))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation("relu"), pool(),
                                  _fire(16, 64, 64), _fire(16, 64, 64), pool(), _fire(32, 128, 128),
                                  _fire(32, 128, 128), pool(), _fire(48, 192, 192), _fire(48, 192, 192),
                                  _fire(64, 256, 256), _fire(64, 256, 256))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """SqueezeNet ``version``; ``pretrained`` loads MXNet's parameters from ``root``."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, "squeezenet%s" % version, ctx, root)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0 (see :func:`get_squeezenet`)."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1 (see :func:`get_squeezenet`)."""
    return get_squeezenet("1.1", **kwargs)
