"""Image transforms (``mx.gluon.data.vision.transforms``) as Blocks, on the
``mx.nd.image`` operators and ``mx.image`` functions. Images are (H, W, C)
arrays (uint8 or float32), ``ToTensor`` makes them (C, H, W) float32 in [0, 1]."""
from __future__ import annotations

import random

import numpy as np

from .... import image
from ....base import numeric_types
from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation", "RandomResizedCrop", "CropResize",
           "CenterCrop", "Resize", "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness", "RandomContrast",
           "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting", "RandomApply"]


class Compose(Sequential):
    """Apply ``transforms`` (a list of Blocks) in order; runs of consecutive
    HybridBlocks are grouped into hybridized HybridSequentials."""

    def __init__(self, transforms):
        super().__init__()
        transforms = list(transforms) + [None]
        hybrid = []
        for t in transforms:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                hblock = HybridSequential()
                for j in hybrid:
                    hblock.add(j)
                hblock.hybridize()
                self.add(hblock)
            hybrid = []
            if t is not None:
                self.add(t)


class _Stateless(HybridBlock):
    """A transform without Parameters."""


class Cast(_Stateless):
    """Cast to ``dtype`` (default 'float32')."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(_Stateless):
    """(H, W, C) uint8 in [0, 255] -> (C, H, W) float32 in [0, 1] (also batches)."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(_Stateless):
    """``(x - mean) / std`` per channel of a (C, H, W) tensor."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


class Rotate(Block):
    """Rotate a float32 image by ``rotation_degrees`` (zoom_in / zoom_out as ``mx.image.imrotate``)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn from ``angle_limits`` with probability ``rotate_with_proba``."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")
        return image.random_rotate(x, *self._args)


class RandomResizedCrop(Block):
    """Crop a random area (``scale`` of the image, aspect ``ratio``) and resize to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(_Stateless):
    """Crop (x, y, width, height), then resize to ``size`` when given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            if self._interpolation is None:
                out = F.image.resize(out, self._size, False)
            else:
                out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class CenterCrop(Block):
    """Crop the center to ``size`` (w, h), resizing when the image is smaller."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class Resize(_Stateless):
    """Resize to ``size`` (an int: the shorter side with ``keep_ratio``, else
    a square; or (w, h))."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class RandomFlipLeftRight(_Stateless):
    """Flip horizontally with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(_Stateless):
    """Flip vertically with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class RandomBrightness(_Stateless):
    """Scale brightness by a factor in [max(0, 1 - brightness), 1 + brightness]."""

    def __init__(self, brightness):
        super().__init__()
        self._args = (max(0, 1 - brightness), 1 + brightness)

    def hybrid_forward(self, F, x):
        return F.image.random_brightness(x, *self._args)


class RandomContrast(_Stateless):
    """Scale contrast by a factor in [max(0, 1 - contrast), 1 + contrast]."""

    def __init__(self, contrast):
        super().__init__()
        self._args = (max(0, 1 - contrast), 1 + contrast)

    def hybrid_forward(self, F, x):
        return F.image.random_contrast(x, *self._args)


class RandomSaturation(_Stateless):
    """Scale saturation by a factor in [max(0, 1 - saturation), 1 + saturation]."""

    def __init__(self, saturation):
        super().__init__()
        self._args = (max(0, 1 - saturation), 1 + saturation)

    def hybrid_forward(self, F, x):
        return F.image.random_saturation(x, *self._args)


class RandomHue(_Stateless):
    """Shift hue by a factor in [max(0, 1 - hue), 1 + hue]."""

    def __init__(self, hue):
        super().__init__()
        self._args = (max(0, 1 - hue), 1 + hue)

    def hybrid_forward(self, F, x):
        return F.image.random_hue(x, *self._args)


class RandomColorJitter(_Stateless):
    """Random brightness, contrast, saturation and hue together."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(_Stateless):
    """AlexNet-style PCA lighting noise with standard deviation ``alpha``."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomApply(Sequential):
    """Apply ``transforms`` with probability ``p`` (Python's ``random``)."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
