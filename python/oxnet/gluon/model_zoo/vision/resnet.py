"""ResNet v1 (He et al. 2015) and v2 (He et al. 2016), 18 to 152 layers."""
from __future__ import annotations

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2", "resnet18_v1",
           "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2",
           "resnet101_v2", "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False, in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    ds = nn.HybridSequential(prefix="")
    ds.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels))
    ds.add(nn.BatchNorm())
    return ds


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm (ResNet v1 18/34)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(residual + self.body(x), act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1-3x3-1x1 bottleneck with BatchNorm (ResNet v1 50+)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3x3(channels // 4, 1, channels // 4), nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + residual, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block (ResNet v2 18/34)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels) \
            if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = F.Activation(self.bn2(x), act_type="relu")
        return self.conv2(x) + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck (ResNet v2 50+)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels) \
            if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = F.Activation(self.bn2(self.conv1(x)), act_type="relu")
        x = F.Activation(self.bn3(self.conv2(x)), act_type="relu")
        return self.conv3(x) + residual


def _make_stage(block, layers, channels, stride, stage_index, in_channels):
    stage = nn.HybridSequential(prefix="stage%d_" % stage_index)
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(layers - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet v1: ``block`` class, ``layers`` per stage, ``channels`` (stem +
    one per stage), ``classes``, ``thumbnail`` (a 3x3 stem for 32x32 input)."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise AssertionError("ResNetV1: len(layers) must be len(channels) - 1")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(),
                                  nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            for i, n in enumerate(layers):
                self.features.add(_make_stage(block, n, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet v2 (pre-activation); arguments as :class:`ResNetV1`."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise AssertionError("ResNetV2: len(layers) must be len(channels) - 1")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(),
                                  nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, n in enumerate(layers):
                self.features.add(_make_stage(block, n, channels[i + 1], 1 if i == 0 else 2, i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
_nets = [ResNetV1, ResNetV2]
_blocks = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
           {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """ResNet ``version`` (1 or 2) with ``num_layers`` (18, 34, 50, 101, 152);
    ``pretrained`` loads MXNet's ImageNet parameters from ``root``."""
    if num_layers not in resnet_spec:
        raise AssertionError("Invalid number of layers: %d. Options are %s" % (num_layers, str(resnet_spec.keys())))
    if version not in (1, 2):
        raise AssertionError("Invalid resnet version: %d. Options are 1 and 2." % version)
    block_type, layers, channels = resnet_spec[num_layers]
    net = _nets[version - 1](_blocks[version - 1][block_type], layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, "resnet%d_v%d" % (num_layers, version), ctx, root)
    return net


def _factory(version, n):
    def make(**kwargs):
        return get_resnet(version, n, **kwargs)

    make.__name__ = "resnet%d_v%d" % (n, version)
    make.__doc__ = "ResNet-%d v%d (see :func:`get_resnet` for the arguments)." % (n, version)
    return make


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = (_factory(1, n) for n in (18, 34, 50, 101, 152))
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = (_factory(2, n) for n in (18, 34, 50, 101, 152))
