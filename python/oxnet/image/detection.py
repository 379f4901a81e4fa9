"""Object detection augmenters and ImageDetIter (``mx.image``).

A detection label is a 2-D float array with one row per object,
``[class, xmin, ymin, xmax, ymax, extra...]``, coordinates normalised to
0..1 by the image's width and height. In a .rec/.lst file the label is
flat: ``[header_width, object_width, extra header values..., objects...]``
(header_width >= 2 counts the header values, including itself; every
object has object_width >= 5 values). Batches pad missing objects with
rows of -1.

Detection augmenters take and return ``(image, label)``; the pixel work
runs through the image kernels of :mod:`oxnet.image.image` on the engine.
Random choices draw from Python's ``random`` in MXNet 1.9.1's order, so a
seeded run reproduces MXNet's crops, pads and flips.
"""

from __future__ import annotations

import json
import logging
import math
import random

import numpy as np

from .. import _native
from .. import io
from .. import ndarray as nd
from ..base import numeric_types
from ..ndarray import NDArray
from .image import (
    Augmenter,
    CastAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ForceResizeAug,
    HueJitterAug,
    ImageIter,
    LightingAug,
    RandomGrayAug,
    ResizeAug,
    _check_image,
    copyMakeBorder,
    fixed_crop,
)

__all__ = [
    "DetAugmenter",
    "DetBorrowAug",
    "DetRandomSelectAug",
    "DetHorizontalFlipAug",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "CreateMultiRandCropAugmenter",
    "CreateDetAugmenter",
    "ImageDetIter",
]


def _as_range(value, fn, name):
    """A (low, high) pair from a number (fixed) or a 2-sequence."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or not all(isinstance(v, numeric_types) for v in value):
            raise ValueError("%s: %s must be a number or a pair of numbers, got %r" % (fn, name, value))
        return tuple(value)
    if not isinstance(value, numeric_types):
        raise ValueError("%s: %s must be a number or a pair of numbers, got %r" % (fn, name, value))
    logging.info("Using fixed %s: %s in %s", name, value, fn)
    return (value, value)


def _box_areas(boxes):
    """Areas of boxes given as columns [xmin, ymin, xmax, ymax, ...]."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


class DetAugmenter(object):
    """Base class of detection augmenters: ``aug(src, label)`` returns the
    augmented ``(image, label)``; ``dumps()`` describes it as JSON.

    ``label`` is a 2-D numpy array, one row ``[class, xmin, ymin, xmax,
    ymax, ...]`` per object with coordinates normalised to 0..1.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                self._kwargs[k] = v.tolist()

    def dumps(self):
        """JSON string ``[class name in lower case, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        """Augment ``src`` (an NDArray image) and ``label``; returns both."""
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """Use an image-classification :class:`Augmenter` that leaves the boxes
    unchanged (colour, cast, normalisation, whole-image resize).

    Parameters
    ----------
    augmenter : mx.image.Augmenter
    """

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError("Borrowing from invalid Augmenter")
        super(DetBorrowAug, self).__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        """``[name, the borrowed augmenter's dumps()]``."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return (self.augmenter(src), label)


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter picked at random from ``aug_list`` (shuffled),
    or none with probability ``skip_prob``.

    Parameters
    ----------
    aug_list : DetAugmenter or list of DetAugmenter
        An empty list disables the augmenter (always skips).
    skip_prob : float, default 0
    """

    def __init__(self, aug_list, skip_prob=0):
        super(DetRandomSelectAug, self).__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError(
                    "DetRandomSelectAug: aug_list may hold DetAugmenters only, got %s" % type(aug).__name__
                )
        if not aug_list:
            skip_prob = 1
        self.aug_list = aug_list
        self.skip_prob = skip_prob

    def dumps(self):
        """``[name, [each augmenter's dumps()]]``."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return (src, label)
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirror the image left-right with probability ``p``; the boxes'
    xmin/xmax become ``1 - xmax`` / ``1 - xmin`` (label changed in place).

    Parameters
    ----------
    p : float
        Chance in [0, 1] to flip.
    """

    def __init__(self, p):
        super(DetHorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            _check_image(src, "DetHorizontalFlipAug")
            src = _native.image_flip_lr(src)
            self._flip_label(label)
        return (src, label)

    def _flip_label(self, label):
        """Mirror the x coordinates of ``label`` in place."""
        xmin = label[:, 1].copy()
        label[:, 1] = 1.0 - label[:, 3]
        label[:, 3] = 1.0 - xmin


class DetRandomCropAug(DetAugmenter):
    """Random crop that keeps the objects: a proposal (x, y, w, h) is taken
    when every object it touches keeps more than ``min_object_covered`` of
    its area; boxes are then clipped to the crop and those keeping no more
    than ``min_eject_coverage`` of their area are dropped. After
    ``max_attempts`` failed proposals the input is returned unchanged.

    Parameters
    ----------
    min_object_covered : float, default 0.1
    aspect_ratio_range : float or (float, float), default (0.75, 1.33)
        Width / height of the crop.
    area_range : float or (float, float), default (0.05, 1.0)
        Crop area as a fraction of the image area.
    min_eject_coverage : float, default 0.3
    max_attempts : int, default 50

    Raises ValueError for an empty or non-positive range.
    """

    def __init__(
        self,
        min_object_covered=0.1,
        aspect_ratio_range=(0.75, 1.33),
        area_range=(0.05, 1.0),
        min_eject_coverage=0.3,
        max_attempts=50,
    ):
        aspect_ratio_range = _as_range(aspect_ratio_range, "DetRandomCropAug", "aspect_ratio_range")
        area_range = _as_range(area_range, "DetRandomCropAug", "area_range")
        super(DetRandomCropAug, self).__init__(
            min_object_covered=min_object_covered,
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            min_eject_coverage=min_eject_coverage,
            max_attempts=max_attempts,
        )
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            raise ValueError("DetRandomCropAug: invalid area_range %r (need 0 < high, low <= high)" % (area_range,))
        if aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            raise ValueError(
                "DetRandomCropAug: invalid aspect_ratio_range %r (need 0 < low <= high)" % (aspect_ratio_range,)
            )
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = True

    def __call__(self, src, label):
        _check_image(src, "DetRandomCropAug")
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return (src, label)

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        """Whether the crop (pixels) keeps > min_object_covered of every
        object it overlaps, and overlaps at least one."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        crop = (float(xmin) / width, float(ymin) / height, float(xmax) / width, float(ymax) / height)
        areas = _box_areas(label[:, 1:])
        keep = np.where(areas * width * height > 2)[0]
        if keep.size < 1:
            return False
        boxes = label[keep, 1:]
        lo_x = np.maximum(boxes[:, 0], crop[0])
        lo_y = np.maximum(boxes[:, 1], crop[1])
        hi_x = np.minimum(boxes[:, 2], crop[2])
        hi_y = np.minimum(boxes[:, 3], crop[3])
        inter = np.where((lo_x >= hi_x) | (lo_y >= hi_y), 0, (hi_x - lo_x) * (hi_y - lo_y))
        coverages = inter / areas[keep]
        coverages = coverages[coverages > 0]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """Boxes in the crop's coordinates, clipped to it; objects left with
        no more than min_eject_coverage of their area are dropped. None when
        none is left."""
        x0 = float(crop_box[0]) / width
        y0 = float(crop_box[1]) / height
        cw = float(crop_box[2]) / width
        ch = float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] -= x0
        out[:, (2, 4)] -= y0
        out[:, (1, 3)] /= cw
        out[:, (2, 4)] /= ch
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _box_areas(out[:, 1:]) * cw * ch / _box_areas(label[:, 1:])
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (coverage > self.min_eject_coverage)
        valid = np.where(valid)[0]
        if valid.size < 1:
            return None
        return out[valid, :]

    def _random_crop_proposal(self, label, height, width):
        """(x, y, w, h, new_label) of an acceptable crop, or () if none was
        found in max_attempts tries."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                # the largest max_h with round(max_h * ratio) <= width
                max_h = int((width + 0.4999999) / ratio)
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            # rounding may leave the area just outside the range
            area = w * h
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Random padding: place the image at a random spot of a larger canvas
    (area ``area_range`` times the image's, aspect ``aspect_ratio_range``)
    filled with ``pad_val``; boxes are moved and scaled to the canvas.
    After ``max_attempts`` failed proposals the input is returned unchanged.

    Parameters
    ----------
    aspect_ratio_range : float or (float, float), default (0.75, 1.33)
    area_range : float or (float, float), default (1.0, 3.0)
        The high end must exceed 1.
    max_attempts : int, default 50
    pad_val : float or tuple of float, default (128, 128, 128)
        Fill value per channel; channels beyond those given get 0 (as in
        MXNet, a single number fills the first channel only).

    Raises ValueError for an empty or invalid range.
    """

    def __init__(
        self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0), max_attempts=50, pad_val=(128, 128, 128)
    ):
        if isinstance(pad_val, (list, tuple)):
            if not all(isinstance(v, numeric_types) for v in pad_val):
                raise ValueError("DetRandomPadAug: pad_val must be a number or numbers, got %r" % (pad_val,))
        elif not isinstance(pad_val, numeric_types):
            raise ValueError("DetRandomPadAug: pad_val must be a number or numbers, got %r" % (pad_val,))
        aspect_ratio_range = _as_range(aspect_ratio_range, "DetRandomPadAug", "aspect_ratio_range")
        area_range = _as_range(area_range, "DetRandomPadAug", "area_range")
        super(DetRandomPadAug, self).__init__(
            aspect_ratio_range=aspect_ratio_range, area_range=area_range, max_attempts=max_attempts, pad_val=pad_val
        )
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            raise ValueError("DetRandomPadAug: invalid area_range %r (need 1 < high, low <= high)" % (area_range,))
        if aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            raise ValueError(
                "DetRandomPadAug: invalid aspect_ratio_range %r (need 0 < low <= high)" % (aspect_ratio_range,)
            )
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = True

    def __call__(self, src, label):
        _check_image(src, "DetRandomPadAug")
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            values = self.pad_val if isinstance(self.pad_val, (list, tuple)) else (self.pad_val,)
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=values)
        return (src, label)

    def _update_labels(self, label, pad_box, height, width):
        """Boxes in the coordinates of the canvas (x, y, w, h)."""
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        """(x, y, w, h, new_label): the image's offset in a w x h canvas, or
        () if no canvas at least 2 pixels larger each way was found."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = max(h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # too little padding to be useful
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(
    min_object_covered=0.1,
    aspect_ratio_range=(0.75, 1.33),
    area_range=(0.05, 1.0),
    min_eject_coverage=0.3,
    max_attempts=50,
    skip_prob=0,
):
    """A DetRandomSelectAug over several DetRandomCropAugs.

    Each parameter is one value for all crops, or a *list* with one value
    per crop (a tuple counts as one value: ``aspect_ratio_range=(0.75,
    1.33)`` is one range); lists must have the same length. ``skip_prob``
    is the chance to apply none. Returns a DetRandomSelectAug.
    """
    names = ("min_object_covered", "aspect_ratio_range", "area_range", "min_eject_coverage", "max_attempts")
    params = [
        p if isinstance(p, list) else [p]
        for p in (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts)
    ]
    num = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) == 0 or (len(p) != num and len(p) != 1):
            raise ValueError(
                "CreateMultiRandCropAugmenter: %s has %d values, but other lists have %d (give 1 or %d)"
                % (names[k], len(p), num, num)
            )
        if len(p) != num:
            params[k] = p * num
    augs = [
        DetRandomCropAug(
            min_object_covered=moc, aspect_ratio_range=arr, area_range=ar, min_eject_coverage=mec, max_attempts=ma
        )
        for moc, arr, ar, mec, ma in zip(*params)
    ]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def _check_mean_std(value, name, default):
    if value is True:
        return np.array(default)
    if value is not None and not (isinstance(value, np.ndarray) and value.shape and value.shape[0] in (1, 3)):
        raise ValueError(
            "CreateDetAugmenter: %s must be True, None or a numpy array of 1 or 3 values, got %r" % (name, value)
        )
    return value


def CreateDetAugmenter(
    data_shape,
    resize=0,
    rand_crop=0,
    rand_pad=0,
    rand_gray=0,
    rand_mirror=False,
    mean=None,
    std=None,
    brightness=0,
    contrast=0,
    saturation=0,
    pca_noise=0,
    hue=0,
    inter_method=2,
    min_object_covered=0.1,
    aspect_ratio_range=(0.75, 1.33),
    area_range=(0.05, 3.0),
    min_eject_coverage=0.3,
    max_attempts=50,
    pad_val=(127, 127, 127),
):
    """The standard detection augmenter list (MXNet's), in this order:
    ResizeAug(resize) when resize > 0; with probability ``rand_crop`` one
    of the random crops of CreateMultiRandCropAugmenter (its parameters may
    be lists); DetHorizontalFlipAug(0.5) with ``rand_mirror``; with
    probability ``rand_pad`` DetRandomPadAug (area (1, area_range[1]),
    ``pad_val``); ForceResizeAug to data_shape (c, h, w); CastAug;
    ColorJitterAug; HueJitterAug; LightingAug (pca_noise); RandomGrayAug;
    ColorNormalizeAug (mean/std: True for the ImageNet values, or numpy
    arrays of 1 or 3 values). ``inter_method`` is used by every resize.
    Returns a list of DetAugmenters.
    """
    if len(data_shape) != 3:
        raise ValueError("CreateDetAugmenter: data_shape must be (channels, height, width), got %r" % (data_shape,))
    auglist = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(
            CreateMultiRandCropAugmenter(
                min_object_covered,
                aspect_ratio_range,
                area_range,
                min_eject_coverage,
                max_attempts,
                skip_prob=(1 - rand_crop),
            )
        )
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    # padding as late as possible: the canvas is larger than the image
    if rand_pad > 0:
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        eigval = np.array([55.46, 4.794, 1.148])
        eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
        auglist.append(DetBorrowAug(LightingAug(pca_noise, eigval, eigvec)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _check_mean_std(mean, "mean", [123.68, 116.28, 103.53])
    std = _check_mean_std(std, "std", [58.395, 57.12, 57.375])
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


class ImageDetIter(ImageIter):
    """Image iterator for object detection, with box-aware augmenters.

    Parameters
    ----------
    batch_size : int
    data_shape : tuple
        (3, height, width) of the images in a batch.
    path_imgrec, path_imgidx : str
        RecordIO file (e.g. from im2rec with packed labels) and its index
        (needed for shuffle / parts).
    path_imglist : str
        .lst file: ``index \\t label values \\t path`` per line.
    path_root : str
        Folder the .lst / imglist paths are relative to.
    shuffle : bool
    part_index, num_parts : int
    aug_list : list of DetAugmenter
        Defaults to ``CreateDetAugmenter(data_shape, **kwargs)``.
    imglist : list
        ``[[label values..., path], ...]`` or ``[[label_list, path], ...]``.
    data_name, label_name : str
        Default 'data' and 'label'.
    last_batch_handle : str
        'pad' (default), 'discard' or 'roll_over'.

    Each raw label is ``[header_width, object_width, extra header...,
    objects...]``; objects whose box is empty are dropped. At construction
    every label is read once to find the largest object count:
    ``label_shape`` is (max objects, object_width) and batches' labels are
    (batch_size, max objects, object_width), padded with -1. A malformed
    label raises RuntimeError there, naming the sample; while iterating, a
    sample whose label becomes invalid after augmentation is skipped.
    ``draw_next`` (an OpenCV display helper) is not provided.
    """

    def __init__(
        self,
        batch_size,
        data_shape,
        path_imgrec=None,
        path_imglist=None,
        path_root=None,
        path_imgidx=None,
        shuffle=False,
        part_index=0,
        num_parts=1,
        aug_list=None,
        imglist=None,
        data_name="data",
        label_name="label",
        last_batch_handle="pad",
        **kwargs,
    ):
        super(ImageDetIter, self).__init__(
            batch_size=batch_size,
            data_shape=data_shape,
            path_imgrec=path_imgrec,
            path_imglist=path_imglist,
            path_root=path_root,
            path_imgidx=path_imgidx,
            shuffle=shuffle,
            part_index=part_index,
            num_parts=num_parts,
            aug_list=[],
            imglist=imglist,
            data_name=data_name,
            label_name=label_name,
            last_batch_handle=last_batch_handle,
        )
        if aug_list is None:
            self.auglist = CreateDetAugmenter(data_shape, **kwargs)
        else:
            if kwargs:
                raise TypeError(
                    "ImageDetIter: unexpected arguments %s (augmenter arguments go with aug_list=None)" % sorted(kwargs)
                )
            self.auglist = aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [io.DataDesc(label_name, (self.batch_size, label_shape[0], label_shape[1]))]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        """RuntimeError unless ``label`` is (objects >= 1, width >= 5) with at
        least one valid object (class >= 0, non-empty box)."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError("Label with shape (1+, 5+) required, %s received." % str(label))
        valid = np.where((label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """(max object count, object width) over all samples."""
        max_count = 0
        width = None
        self.reset()
        try:
            while True:
                label, _ = self._next_label()
                label = self._parse_label(label)
                if width is not None and label.shape[1] != width:
                    raise RuntimeError(
                        "ImageDetIter: %s has objects of width %d, earlier samples %d"
                        % (self._last_where, label.shape[1], width)
                    )
                width = label.shape[1]
                max_count = max(max_count, label.shape[0])
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise RuntimeError("ImageDetIter: the data set has no samples")
        return (max_count, width)

    def _next_label(self):
        """Like next_sample, without reading image files for list sources."""
        if self.imgrec is None and self.seq is not None:
            if self.cur >= self.num_image:
                self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            label, fname = self.imglist[idx]
            self._last_where = "filename: {}".format(fname)
            return label, None
        return self.next_sample()

    def _parse_label(self, label):
        """The (objects, object_width) array of a raw detection label
        ``[header_width, object_width, header extras..., objects...]``,
        dropping objects whose box is empty. RuntimeError, naming the
        sample, for a malformed label or one without a valid object."""
        if isinstance(label, NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        where = self._last_where or "a sample"
        if raw.size < 7:
            raise RuntimeError(
                "ImageDetIter: label of %s has %d values; a detection label needs at least 7 "
                "([header_width, object_width, ...] and one object of >= 5 values)" % (where, raw.size)
            )
        header_width = int(raw[0])
        obj_width = int(raw[1])
        if header_width < 2 or obj_width < 5 or header_width >= raw.size:
            raise RuntimeError(
                "ImageDetIter: label of %s has header_width %d and object_width %d (need header_width >= 2, "
                "object_width >= 5, and objects after the %d header values of %d)"
                % (where, header_width, obj_width, header_width, raw.size)
            )
        if (raw.size - header_width) % obj_width != 0:
            raise RuntimeError(
                "Label shape %s inconsistent with annotation width %d (%s: %d values after a header of %d)."
                % (str(raw.shape), obj_width, where, raw.size - header_width, header_width)
            )
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = np.where((out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError("Encounter sample with no valid label (%s)." % where)
        return out[valid, :]

    def reshape(self, data_shape=None, label_shape=None):
        """Change data_shape (3, h, w) and/or label_shape (objects, width);
        the object count may only grow and the width must stay."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [io.DataDesc(self.provide_data[0][0], (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [io.DataDesc(self.provide_label[0][0], (self.batch_size,) + tuple(label_shape))]
            self.label_shape = tuple(label_shape)

    def check_label_shape(self, label_shape):
        """ValueError unless ``label_shape`` is (objects, width) with at least
        the current object count and the same width."""
        if not len(label_shape) == 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(
                "Attempts to reduce label count from %d to %d, not allowed." % (self.label_shape[0], label_shape[0])
            )
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(
                "label_shape object width inconsistent: %d vs %d." % (self.provide_label[0][1][2], label_shape[1])
            )

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` (another ImageDetIter, e.g. the
        validation one) the same label_shape, the larger object count of
        the two. Returns ``it``."""
        if not isinstance(it, ImageDetIter):
            raise TypeError("sync_label_shape: it must be an ImageDetIter, got %s" % type(it).__name__)
        mine = self.label_shape
        theirs = it.label_shape
        if mine[1] != theirs[1]:
            raise ValueError("sync_label_shape: object width mismatch: %d vs %d" % (mine[1], theirs[1]))
        max_count = max(mine[0], theirs[0])
        if max_count > mine[0]:
            self.reshape(None, (max_count, mine[1]))
        if max_count > theirs[0]:
            it.reshape(None, (max_count, theirs[1]))
        if verbose and max_count > min(mine[0], theirs[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, mine[1])
        return it

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """Apply the detection augmenters in order; returns (data, label)."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return (data, label)

    def _prepare_sample(self, label, s):
        data = self.imdecode(s)
        try:
            self.check_valid_image(data)
            label = self._parse_label(label)
            data, label = self.augmentation_transform(data, label)
            self._check_valid_label(label)
        except RuntimeError as e:
            logging.debug("Invalid image, skipping:  %s", str(e))
            return None
        return data, label

    def _new_label_batch(self):
        return np.full((self.batch_size,) + tuple(self.label_shape), -1, dtype=np.float32)

    def _label_row(self, label):
        n, width = self.label_shape
        if label.shape[0] > n or label.shape[1] != width:
            raise ValueError(
                "ImageDetIter: %s gives a label of shape %s after augmentation, but label_shape is %s"
                % (self._last_where, label.shape, (n, width))
            )
        row = np.full((n, width), -1, dtype=np.float32)
        row[: label.shape[0]] = label
        return row

    def _label_batch_out(self, batch_label):
        return nd.array(batch_label)
