"""DenseNet 121/161/169/201 (Huang et al. 2016)."""
from __future__ import annotations

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent, Identity
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "get_densenet"]


def _dense_layer(growth_rate, bn_size, dropout):
    new = nn.HybridSequential(prefix="")
    new.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
            nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity(), new)
    return out


def _dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix="stage%d_" % stage_index)
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_dense_layer(growth_rate, bn_size, dropout))
    return out


def _transition(num_output_features):
    out = nn.HybridSequential(prefix="")
    out.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(num_output_features, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet: num_init_features, growth_rate, block_config (layers per
    block), bn_size=4, dropout=0, classes=1000."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3, use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    self.features.add(_transition(num_features // 2))
                    num_features //= 2
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


densenet_spec = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """DenseNet with ``num_layers`` (121, 161, 169, 201)."""
    init_f, growth, config = densenet_spec[num_layers]
    net = DenseNet(init_f, growth, config, **kwargs)
    if pretrained:
        load_pretrained(net, "densenet%d" % num_layers, ctx, root)
    return net


def _factory(n):
    def make(**kwargs):
        return get_densenet(n, **kwargs)

    make.__name__ = "densenet%d" % n
    make.__doc__ = "DenseNet-%d (see :func:`get_densenet`)." % n
    return make


densenet121, densenet161, densenet169, densenet201 = (_factory(n) for n in (121, 161, 169, 201))
