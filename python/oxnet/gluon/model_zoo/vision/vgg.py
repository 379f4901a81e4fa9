"""VGG 11/13/16/19 (Simonyan & Zisserman 2014), with or without BatchNorm."""
from __future__ import annotations

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...parameter import _init_module
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """VGG: ``layers`` convolutions per block with ``filters`` channels;
    ``batch_norm`` adds BatchNorm after each convolution."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise AssertionError("VGG: layers and filters must have the same length")
        init = _init_module()
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            for i, num in enumerate(layers):
                for _ in range(num):
                    self.features.add(nn.Conv2D(filters[i], kernel_size=3, padding=1,
                                                weight_initializer=init.Xavier(rnd_type="gaussian", factor_type="out",
                                                                               magnitude=2),
                                                bias_initializer="zeros"))
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """VGG with ``num_layers`` (11, 13, 16, 19); ``batch_norm=True`` for the BN variant."""
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        load_pretrained(net, "vgg%d%s" % (num_layers, "_bn" if kwargs.get("batch_norm") else ""), ctx, root)
    return net


def _factory(n, bn):
    def make(**kwargs):
        if bn:
            kwargs["batch_norm"] = True
        return get_vgg(n, **kwargs)

    make.__name__ = "vgg%d%s" % (n, "_bn" if bn else "")
    make.__doc__ = "VGG-%d%s (see :func:`get_vgg`)." % (n, " with BatchNorm" if bn else "")
    return make


vgg11, vgg13, vgg16, vgg19 = (_factory(n, False) for n in (11, 13, 16, 19))
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = (_factory(n, True) for n in (11, 13, 16, 19))
