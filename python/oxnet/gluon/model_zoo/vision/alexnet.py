"""AlexNet (Krizhevsky et al. 2012), MXNet's single-tower variant."""
from __future__ import annotations

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """AlexNet with ``classes`` outputs (input 224x224)."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(
                    nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Flatten(),
                    nn.Dense(4096, activation="relu"), nn.Dropout(0.5),
                    nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """AlexNet; ``pretrained`` loads MXNet's ImageNet parameters from ``root``."""
    net = AlexNet(**kwargs)
    if pretrained:
        load_pretrained(net, "alexnet", ctx, root)
    return net
