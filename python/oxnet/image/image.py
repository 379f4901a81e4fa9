"""Image decoding, transforms, augmenters and ImageIter (``mx.image``).

Decoding and every pixel operation run in Rust on the engine: a call such
as ``imdecode`` reads the header, creates its output and returns at once,
so ``[mx.image.imdecode(b) for b in bufs]`` decodes in parallel; errors in
the data raise at the wait on the result (``asnumpy``, ``wait_to_read``).
Random choices use Python's ``random`` and NumPy's global state exactly as
MXNet 1.9.1 does, so seeding them reproduces MXNet's augmentation draws.
"""

from __future__ import annotations

import json
import logging
import os
import random
import warnings

import numpy as np

from .. import _native
from .. import io
from .. import ndarray as nd
from .. import recordio
from ..base import DTypeError, MXIOError, ParamError, numeric_types
from ..ndarray import NDArray

__all__ = [
    "set_max_image_pixels",
    "get_max_image_pixels",
    "imread",
    "imdecode",
    "imresize",
    "scale_down",
    "copyMakeBorder",
    "resize_short",
    "fixed_crop",
    "random_crop",
    "center_crop",
    "color_normalize",
    "random_size_crop",
    "imrotate",
    "random_rotate",
    "Augmenter",
    "SequentialAug",
    "ResizeAug",
    "ForceResizeAug",
    "RandomCropAug",
    "RandomSizedCropAug",
    "CenterCropAug",
    "RandomOrderAug",
    "BrightnessJitterAug",
    "ContrastJitterAug",
    "SaturationJitterAug",
    "HueJitterAug",
    "ColorJitterAug",
    "LightingAug",
    "ColorNormalizeAug",
    "RandomGrayAug",
    "HorizontalFlipAug",
    "CastAug",
    "CreateAugmenter",
    "ImageIter",
]



def set_max_image_pixels(n):
    """Set the largest image (width * height pixels) that ``imdecode``,
    ``imread``, ``ImageIter``, ``ImageRecordIter`` and im2rec decode: a guard
    against decompression bombs (a small file whose header claims a huge
    image). ``n``: an int, or None (or 0) for no limit. The default is
    Pillow's, about 89.5 million pixels, or the environment variable
    ``OXNET_IMAGE_MAX_PIXELS`` when set. Returns the previous limit (None
    when there was none). oxnet's own setting (MXNet has none)."""
    if n is not None:
        n = int(n)
        if n < 0:
            raise ValueError(f"set_max_image_pixels: n must be >= 0 or None, got {n}")
    return _native.set_image_max_pixels(n)


def get_max_image_pixels():
    """The current pixel limit of the image decoders (int, or None for no
    limit); see :func:`set_max_image_pixels`."""
    return _native.image_max_pixels()

def _as_bytes(buf, fn="imdecode"):
    if isinstance(buf, NDArray):
        return buf.asnumpy().astype(np.uint8).tobytes()
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return bytes(buf)
    if isinstance(buf, np.ndarray):
        return np.ascontiguousarray(buf).view(np.uint8).tobytes()
    raise ValueError(
        "%s: buf must be of type bytes, bytearray or numpy.ndarray, got %s; "
        "if you would like to input type str, please convert to bytes" % (fn, type(buf).__name__)
    )


def imdecode(buf, flag=1, to_rgb=True, out=None):
    """Decode JPEG or PNG bytes into an NDArray (h, w, c) of uint8.

    Parameters
    ----------
    buf : bytes, bytearray, numpy.ndarray or NDArray
        The encoded image.
    flag : int
        1 (default) for 3-channel colour, 0 for grayscale (h, w, 1).
    to_rgb : bool
        True (default) for RGB order, False for BGR (OpenCV's order).
    out : NDArray, optional
        A uint8 array of the image's shape to decode into.

    Returns at once: the header is read now (data that is not an image
    raises here), the decode runs on the engine, and a corrupt or truncated
    image raises at the wait on the returned array. EXIF orientation is
    ignored, as MXNet does.
    """
    return _native.imdecode(_as_bytes(buf), int(flag), bool(to_rgb), out)


def imread(filename, flag=1, to_rgb=True, out=None):
    """Read and decode an image file into an NDArray (h, w, c) of uint8;
    ``flag``/``to_rgb``/``out`` as in :func:`imdecode`."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MXIOError("imread: cannot read %s: %s" % (filename, e)) from e
    return _native.imdecode(data, int(flag), bool(to_rgb), out, "imread(%s)" % filename)


def _check_image(src, fn):
    if not isinstance(src, NDArray):
        raise TypeError("%s: src must be an NDArray, got %s" % (fn, type(src).__name__))
    if src.ndim != 3:
        raise ValueError("%s: src must have shape (height, width, channels), got %s" % (fn, src.shape))


def imresize(src, w, h, interp=1, out=None):
    """Resize an image (h, w, c) NDArray of uint8, float32 or float64 to width ``w`` and
    height ``h`` with interpolation 0 nearest, 1 bilinear (default), 2 bicubic, 3 area,
    4 Lanczos (OpenCV's kernels, as MXNet), 9 auto or 10 random. Returns a new NDArray of the
    same dtype (or ``out``)."""
    _check_image(src, "imresize")
    interp = int(interp)
    if interp not in (0, 1, 2, 3, 4):
        interp = _get_interp_method(interp, (src.shape[0], src.shape[1], int(h), int(w)))
    if src.dtype == np.uint8:
        return _native.image_resize(src, int(w), int(h), interp, None, out)
    if src.dtype not in (np.float32, np.float64):
        raise DTypeError("imresize: the image must be uint8, float32 or float64, got %s" % np.dtype(src.dtype).name)
    if int(w) <= 0 or int(h) <= 0:
        raise ValueError("imresize: the size (w=%d, h=%d) must be positive" % (int(w), int(h)))
    return nd.imperative_invoke("_image_resize", [src], {"size": (int(w), int(h)), "interp": interp}, out=out)


def scale_down(src_size, size):
    """Scale ``size`` (w, h) down, keeping its aspect, so it fits in
    ``src_size`` (w, h); returns (w, h) as ints."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(), out=None):  # noqa: A002
    """Pad an image (h, w, c) NDArray with ``top``/``bot`` rows and
    ``left``/``right`` columns. ``type``: 0 constant (``value``, or one
    value per channel in ``values``), 1 replicate, 2 reflect, 3 wrap,
    4 reflect_101 (OpenCV's border types). Returns a new NDArray.
    As in OpenCV, channels beyond those given in ``values`` are filled
    with 0."""
    _check_image(src, "copyMakeBorder")
    if values:
        c = src.shape[2]
        vals = [float(v) for v in values][:c]
        vals += [0.0] * (c - len(vals))
    else:
        vals = [float(value)]
    return _native.image_copy_make_border(src, int(top), int(bot), int(left), int(right), int(type), vals, out)


def _get_interp_method(interp, sizes=()):
    """Resolve MXNet interpolation codes: 9 = auto by the sizes (oh, ow, nh,
    nw), 10 = random 0-4 (Python's random), 0-4 as they are."""
    if interp == 9:
        if sizes:
            assert len(sizes) == 4
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            elif nh < oh and nw < ow:
                return 3
            else:
                return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ParamError("Unknown interp method %d (0-4, 9 auto or 10 random)" % interp)
    return interp


def resize_short(src, size, interp=2):
    """Resize so that the shorter side is ``size``, keeping the aspect
    (the longer side is ``size * long // short``). Returns a new NDArray."""
    _check_image(src, "resize_short")
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def _crop(src, x0, y0, w, h):
    if src.dtype == np.uint8:
        return _native.image_resize(src, w, h, 1, (x0, y0, w, h), None)
    c = src.shape[2]
    return nd.slice(src, begin=(y0, x0, 0), end=(y0 + h, x0 + w, c))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crop the region (x0, y0, w, h) of an image; resize it to ``size``
    (w, h) when given and different. Returns a new NDArray."""
    _check_image(src, "fixed_crop")
    x0, y0, w, h = int(x0), int(y0), int(w), int(h)
    H, W = src.shape[0], src.shape[1]
    if w <= 0 or h <= 0 or x0 < 0 or y0 < 0 or x0 + w > W or y0 + h > H:
        raise ValueError(
            "fixed_crop: region (x0=%d, y0=%d, w=%d, h=%d) is empty or outside the image of width %d and height %d"
            % (x0, y0, w, h, W, H)
        )
    out = _crop(src, x0, y0, w, h)
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src, size, interp=2):
    """Crop a random region of the aspect of ``size`` (w, h), as large as
    fits, and resize it to ``size``. Returns (image, (x0, y0, w, h))."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Crop the centred region of the aspect of ``size`` (w, h), as large
    as fits, and resize it to ``size``. Returns (image, (x0, y0, w, h))."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def _chan_values(v, c):
    if v is None:
        return None
    a = v.asnumpy() if isinstance(v, NDArray) else np.asarray(v, dtype=np.float32)
    a = np.asarray(a, dtype=np.float32).reshape(-1)
    if a.size == 1:
        return [float(a[0])] * c
    if a.size == c:
        return [float(x) for x in a]
    return False


def color_normalize(src, mean, std=None):
    """Normalise an image in place: ``src -= mean; src /= std`` (mean/std
    are per channel or scalars; None skips). Returns ``src``."""
    if isinstance(src, NDArray) and src.ndim == 3 and src.dtype == np.float32:
        c = src.shape[2]
        m = _chan_values(mean, c)
        s = _chan_values(std, c)
        if m is not False and s is not False:
            params = (m or [0.0] * c) + (s or [1.0] * c)
            return _native.image_color(src, "normalize", params, True)
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Crop a random region covering ``area`` (a fraction, or a (min, max)
    range) of the image with aspect ratio in ``ratio`` (min, max), resized
    to ``size`` (w, h); falls back to center_crop after 10 tries. Returns
    (image, (x0, y0, w, h))."""
    h, w, _ = src.shape
    src_area = h * w
    if "min_area" in kwargs:
        warnings.warn("`min_area` is deprecated. Please use `area` instead.", DeprecationWarning)
        area = kwargs.pop("min_area")
    assert not kwargs, "unexpected keyword arguments for `random_size_crop`."
    if isinstance(area, numeric_types):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
            return out, (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate image(s) counter-clockwise about their centre, sampling
    bilinearly (``BilinearSampler``; pixels that come from outside are 0).

    Parameters
    ----------
    src : NDArray
        float32 image (c, h, w) or batch (n, c, h, w).
    rotation_degrees : scalar or NDArray
        The angle in degrees: a scalar for one image; for a batch, a scalar
        (every image) or a 1-D array of n angles.
    zoom_in : bool
        Scale so that no padding shows in the result.
    zoom_out : bool
        Scale so that the whole rotated image fits in the result.

    Returns an NDArray of ``src``'s shape.
    """
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if not isinstance(src, NDArray):
        raise TypeError("imrotate: src must be an NDArray, got %s" % type(src).__name__)
    if src.dtype != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, numeric_types):
            raise TypeError("When a single image is passed the rotation angle is required to be a scalar.")
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    n, _, h, w = src.shape
    if isinstance(rotation_degrees, numeric_types):
        deg = np.full(n, float(rotation_degrees))
    else:
        deg = (rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray)
               else np.asarray(rotation_degrees)).astype(np.float64).reshape(-1)
    if deg.shape[0] != n:
        raise ValueError("The number of images must be equal to the number of rotation angles")
    rad = (deg * np.pi / 180.0).reshape(n, 1, 1)
    # output pixel coordinates relative to the image centre
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    ys = (np.arange(h, dtype=np.float64) - cy).reshape(1, h, 1)
    xs = (np.arange(w, dtype=np.float64) - cx).reshape(1, 1, w)
    cos, sin = np.cos(rad), np.sin(rad)
    # where each output pixel samples the input, normalised to [-1, 1]
    # after the rotation so that the aspect ratio is kept
    gx = (xs * cos - ys * sin) / cx
    gy = (xs * sin + ys * cos) / cy
    if zoom_in or zoom_out:
        # half-extents of the rotated frame, from its two corner directions
        diag = np.hypot(h, w)
        corner = np.arctan2(h, w)
        a = np.abs(rad)
        ext_x = np.maximum(np.abs(diag * np.cos(corner + a)), np.abs(diag * np.cos(corner - a)))
        ext_y = np.maximum(np.abs(diag * np.sin(corner + a)), np.abs(diag * np.sin(corner - a)))
        if zoom_out:
            scale = np.maximum(ext_x / w, ext_y / h)
        else:
            scale = np.minimum(w / ext_x, h / ext_y)
        gx, gy = gx * scale, gy * scale
    grid = nd.array(np.stack([gx, gy], axis=1).astype(np.float32), ctx=src.context)
    out = nd.BilinearSampler(src, grid)
    return out[0] if single else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotate image(s) by angles drawn uniformly from ``angle_limits``
    (lower, upper) in degrees (NumPy's global random state; one angle per
    image of a batch). ``src``, ``zoom_in``, ``zoom_out`` and the result as
    in :func:`imrotate`."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]))
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)


def _is_rgb_f32(src):
    return isinstance(src, NDArray) and src.ndim == 3 and src.shape[2] == 3 and src.dtype == np.float32


class Augmenter(object):
    """Base class of image augmenters: ``aug(src)`` returns the augmented
    image; ``dumps()`` describes it as JSON."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                v = v.tolist()
                self._kwargs[k] = v

    def dumps(self):
        """JSON string ``[class name in lower case, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        """Augment ``src`` (an NDArray image) and return the result."""
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    """Apply a list of augmenters in order."""

    def __init__(self, ts):
        super(SequentialAug, self).__init__()
        self.ts = ts

    def dumps(self):
        """[name, [each augmenter's dumps()]]."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter side to ``size`` (resize_short)."""

    def __init__(self, size, interp=2):
        super(ResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


def _not_overridden(it, name):
    """Whether ``it.name`` is ImageIter's own method (not a subclass's or an
    instance attribute)."""
    return getattr(getattr(it, name), "__func__", None) is getattr(ImageIter, name)


def _fused_tail(rest, c):
    """The leading augmenters of ``rest`` that the window decode can apply
    in the same operation (HorizontalFlipAug, then CastAug to float32, then
    ColorNormalizeAug), as (keyword arguments of imdecode_resize_window,
    how many augmenters they stand for). Draws the flip's random number
    where HorizontalFlipAug would."""
    kw = {}
    i = 0
    if i < len(rest) and type(rest[i]) is HorizontalFlipAug:
        kw["mirror"] = random.random() < rest[i].p
        i += 1
    if i < len(rest) and type(rest[i]) is CastAug:
        try:
            to_float = np.dtype(rest[i].typ) == np.float32
        except TypeError:
            to_float = False
        if to_float:
            kw["to_float"] = True
            i += 1
            if i < len(rest) and type(rest[i]) is ColorNormalizeAug:
                m = _chan_values(rest[i].mean, c)
                s = _chan_values(rest[i].std, c)
                if m is not False and s is not False:
                    kw["normalize"] = (m or [0.0] * c) + (s or [1.0] * c)
                    i += 1
    return kw, i


def _resize_then_crop(src, resize, crop, encoded=None, rest=(), chw=False):
    """``crop(resize(src))`` for a ResizeAug and a RandomCropAug /
    CenterCropAug, drawing the same random numbers in the same order; a
    shrinking resize whose crop needs no second resize is one window resize
    of the source. Returns (image, n, is_chw): n of the augmenters ``rest``
    that follow have been applied too; with ``chw`` allowed, an image that
    went through all of ``rest`` and is float32 comes as (C, H, W)
    (is_chw True) for the batch.

    With ``src`` None, ``encoded`` is (bytes, where, (h, w, c) from the
    header): the image is decoded here, and for the window resize only
    about the window's source is decoded (a baseline JPEG skips most of the
    rest; the pixels are those of a full decode); the flip, cast and
    normalisation that follow in ``rest`` run in the same operation (see
    _fused_tail)."""
    if encoded is None:
        _check_image(src, "resize_short")
        h, w, _ = src.shape
    else:
        h, w, _ = encoded[2]
    size = resize.size
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    interp = _get_interp_method(resize.interp, (h, w, new_h, new_w))
    cw, ch = scale_down((new_w, new_h), crop.size)
    if ((src is not None and src.dtype != np.uint8) or interp not in (1, 2, 4) or new_h > h or new_w > w
            or new_h < 1 or new_w < 1 or (cw, ch) != tuple(crop.size)):
        if src is None:
            src = _native.imdecode(encoded[0], 1, True, None, encoded[1])
        return crop(imresize(src, new_w, new_h, interp=interp)), 0, False
    if type(crop) is RandomCropAug:
        x0 = random.randint(0, new_w - cw)
        y0 = random.randint(0, new_h - ch)
    else:
        x0 = int((new_w - cw) / 2)
        y0 = int((new_h - ch) / 2)
    if src is None:
        kw, n = _fused_tail(rest, encoded[2][2])
        if chw and n == len(rest) and kw.get("to_float"):
            kw["chw"] = True
        win = (x0, y0, cw, ch)
        data = _native.imdecode_resize_window(encoded[0], 1, True, new_w, new_h, win, interp, encoded[1], **kw)
        return data, n, "chw" in kw
    return _native.image_resize_window(src, new_w, new_h, (x0, y0, cw, ch), interp), 0, False


class ForceResizeAug(Augmenter):
    """Resize to exactly ``size`` (w, h), ignoring the aspect."""

    def __init__(self, size, interp=2):
        super(ForceResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """random_crop to ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super(RandomCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """random_size_crop to ``size`` with ``area`` and ``ratio`` ranges."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super(RandomSizedCropAug, self).__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        if "min_area" in kwargs:
            warnings.warn("`min_area` is deprecated. Please use `area` instead.", DeprecationWarning)
            self.area = kwargs.pop("min_area")
        else:
            self.area = area
        self.ratio = ratio
        self.interp = interp
        assert not kwargs, "unexpected keyword arguments for `RandomSizedCropAug`."

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """center_crop to ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super(CenterCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class RandomOrderAug(Augmenter):
    """Apply a list of augmenters in a random order (random.shuffle)."""

    def __init__(self, ts):
        super(RandomOrderAug, self).__init__()
        self.ts = ts

    def dumps(self):
        """[name, [each augmenter's dumps()]]."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


class BrightnessJitterAug(Augmenter):
    """Multiply by ``1 + U(-brightness, brightness)`` (in place)."""

    def __init__(self, brightness):
        super(BrightnessJitterAug, self).__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        if isinstance(src, NDArray) and src.ndim == 3 and src.dtype == np.float32:
            return _native.image_color(src, "brightness", [alpha], True)
        src *= alpha
        return src


class ContrastJitterAug(Augmenter):
    """Blend with the mean gray level: ``src * a + mean_gray * (1 - a)``,
    a = 1 + U(-contrast, contrast) (float32 RGB, in place)."""

    def __init__(self, contrast):
        super(ContrastJitterAug, self).__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[[0.299, 0.587, 0.114]]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        _require_rgb_f32(src, "ContrastJitterAug")
        return _native.image_color(src, "contrast", [alpha], True)


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its gray value: ``src * a + gray * (1 - a)``,
    a = 1 + U(-saturation, saturation) (float32 RGB, in place)."""

    def __init__(self, saturation):
        super(SaturationJitterAug, self).__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[[0.299, 0.587, 0.114]]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        _require_rgb_f32(src, "SaturationJitterAug")
        return _native.image_color(src, "saturation", [alpha], True)


class HueJitterAug(Augmenter):
    """Rotate the hue by U(-hue, hue) * pi in YIQ space (float32 RGB)."""

    def __init__(self, hue):
        super(HueJitterAug, self).__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u = np.cos(alpha * np.pi)
        w = np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        _require_rgb_f32(src, "HueJitterAug")
        return _native.image_color(src, "matrix", [float(x) for x in t.astype(np.float32).reshape(-1)])


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super(ColorJitterAug, self).__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise: add ``eigvec . (alpha * eigval)``
    with alpha ~ N(0, alphastd) (NumPy's global state; in place)."""

    def __init__(self, alphastd, eigval, eigvec):
        super(LightingAug, self).__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        _require_rgb_f32(src, "LightingAug")
        rgb32 = np.asarray(rgb, dtype=np.float32)
        return _native.image_color(src, "normalize", [float(-x) for x in rgb32] + [1.0, 1.0, 1.0], True)


class ColorNormalizeAug(Augmenter):
    """color_normalize with ``mean`` and ``std`` (per channel)."""

    def __init__(self, mean, std):
        super(ColorNormalizeAug, self).__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace RGB by its gray level (float32)."""

    def __init__(self, p):
        super(RandomGrayAug, self).__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])
        self._mat = [0.21, 0.21, 0.21, 0.72, 0.72, 0.72, 0.07, 0.07, 0.07]

    def __call__(self, src):
        if random.random() < self.p:
            _require_rgb_f32(src, "RandomGrayAug")
            src = _native.image_color(src, "matrix", self._mat)
        return src


class HorizontalFlipAug(Augmenter):
    """Mirror left-right with probability ``p``."""

    def __init__(self, p):
        super(HorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            _check_image(src, "HorizontalFlipAug")
            src = _native.image_flip_lr(src)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (default float32)."""

    def __init__(self, typ="float32"):
        super(CastAug, self).__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


def _require_rgb_f32(src, name):
    if not _is_rgb_f32(src):
        raise TypeError(
            "%s: expected a float32 image of shape (height, width, 3) (apply CastAug first), got %s %s"
            % (name, getattr(src, "dtype", type(src)), getattr(src, "shape", ""))
        )


def CreateAugmenter(
    data_shape,
    resize=0,
    rand_crop=False,
    rand_resize=False,
    rand_mirror=False,
    mean=None,
    std=None,
    brightness=0,
    contrast=0,
    saturation=0,
    hue=0,
    pca_noise=0,
    rand_gray=0,
    inter_method=2,
):
    """The standard augmenter list (MXNet's): optional ResizeAug(resize);
    RandomSizedCropAug (rand_resize), RandomCropAug (rand_crop) or
    CenterCropAug to data_shape (c, h, w); HorizontalFlipAug(0.5) with
    rand_mirror; CastAug; ColorJitterAug; HueJitterAug; LightingAug
    (pca_noise); RandomGrayAug; ColorNormalizeAug (mean/std: True for the
    ImageNet values, or arrays of 1 or 3 values). Returns a list."""
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        assert rand_crop
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        eigval = np.array([55.46, 4.794, 1.148])
        eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
        auglist.append(LightingAug(pca_noise, eigval, eigvec))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array([123.68, 116.28, 103.53])
    elif mean is not None:
        assert isinstance(mean, (np.ndarray, NDArray)) and mean.shape[0] in [1, 3]
    if std is True:
        std = nd.array([58.395, 57.12, 57.375])
    elif std is not None:
        assert isinstance(std, (np.ndarray, NDArray)) and std.shape[0] in [1, 3]
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist


class ImageIter(io.DataIter):
    """Image iterator with Python augmenters, over a .rec file (with or
    without .idx), a .lst file + ``path_root``, or an ``imglist``.

    Parameters
    ----------
    batch_size : int
    data_shape : tuple
        (3, height, width) of the augmented images.
    label_width : int
    path_imgrec, path_imgidx : str
        RecordIO file and its index (needed for shuffle / parts).
    path_imglist : str
        .lst file: ``index \\t label(s) \\t path`` per line.
    path_root : str
        Folder the .lst / imglist paths are relative to.
    shuffle : bool
        Shuffle at each reset (Python's random).
    part_index, num_parts : int
        Read only part ``part_index`` of ``num_parts`` equal parts.
    aug_list : list of Augmenter
        Defaults to ``CreateAugmenter(data_shape, **kwargs)``.
    imglist : list
        ``[[label(s)..., path], ...]``.
    data_name, label_name : str
    dtype : str
        Label dtype for .lst / imglist labels.
    last_batch_handle : str
        'pad', 'discard' or 'roll_over'.

    Decoding and augmentation are pushed to the engine image by image, so
    the images of a batch are processed in parallel; a broken image raises
    at the wait on the batch's data, naming the image.
    """

    def __init__(
        self,
        batch_size,
        data_shape,
        label_width=1,
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
        label_name="softmax_label",
        dtype="float32",
        last_batch_handle="pad",
        **kwargs,
    ):
        super(ImageIter, self).__init__()
        assert path_imgrec or path_imglist or (isinstance(imglist, list))
        assert dtype in ["int32", "float32", "int64", "float64"], dtype + " label not supported"
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError("ImageIter: last_batch_handle must be 'pad', 'discard' or 'roll_over'")
        class_name = self.__class__.__name__
        if path_imgrec:
            logging.info("%s: loading recordio %s...", class_name, path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
                self.imgidx = None
        else:
            self.imgrec = None

        if path_imglist:
            logging.info("%s: loading image list %s...", class_name, path_imglist)
            with open(path_imglist) as fin:
                imglist = {}
                imgkeys = []
                for line in iter(fin.readline, ""):
                    line = line.strip().split("\t")
                    if line == [""]:
                        continue
                    label = nd.array(np.asarray(line[1:-1], dtype=np.float64), dtype=dtype)
                    key = int(line[0])
                    imglist[key] = (label, line[-1])
                    imgkeys.append(key)
                self.imglist = imglist
        elif isinstance(imglist, list):
            logging.info("%s: loading image list...", class_name)
            result = {}
            imgkeys = []
            index = 1
            for img in imglist:
                key = str(index)
                index += 1
                if len(img) > 2:
                    label = nd.array(img[:-1], dtype=dtype)
                elif isinstance(img[0], numeric_types):
                    label = nd.array([img[0]], dtype=dtype)
                else:
                    label = nd.array(img[0], dtype=dtype)
                result[key] = (label, img[-1])
                imgkeys.append(str(key))
            self.imglist = result
        else:
            self.imglist = None
        self.path_root = path_root

        self.check_data_shape(data_shape)
        self.provide_data = [io.DataDesc(data_name, (batch_size,) + tuple(data_shape))]
        if label_width > 1:
            self.provide_label = [io.DataDesc(label_name, (batch_size, label_width))]
        else:
            self.provide_label = [io.DataDesc(label_name, (batch_size,))]
        self.batch_size = batch_size
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError("ImageIter: shuffle and num_parts > 1 need path_imgidx for a .rec file")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            assert part_index < num_parts
            N = len(self.seq)
            C = N // num_parts
            self.seq = self.seq[part_index * C : (part_index + 1) * C]
        if aug_list is None:
            self.auglist = CreateAugmenter(data_shape, **kwargs)
        else:
            if kwargs:
                raise TypeError(
                    "ImageIter: unexpected arguments %s (augmenter arguments go with aug_list=None)" % sorted(kwargs)
                )
            self.auglist = aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        self._last_where = None
        self._chw = False  # the last prepared sample is float32 CHW
        self.reset()

    def reset(self):
        """Start a new epoch (reshuffle; roll-over keeps the cached part)."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
                self._nread = 0
            self.cur = 0
            if self._allow_read is False:
                self._allow_read = True

    def hard_reset(self):
        """Start over, dropping any rolled-over data."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def next_sample(self):
        """(label, encoded image bytes) of the next image; StopIteration at
        the end."""
        if self._allow_read is False:
            raise StopIteration
        if self.seq is not None:
            if self.cur < self.num_image:
                idx = self.seq[self.cur]
            else:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            self.cur += 1
            if self.imgrec is not None:
                s = self.imgrec.read_idx(idx)
                header, img = recordio.unpack(s)
                self._last_where = "index: {}".format(idx)
                if self.imglist is None:
                    return header.label, img
                return self.imglist[idx][0], img
            label, fname = self.imglist[idx]
            self._last_where = "filename: {}".format(fname)
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        self._nread = getattr(self, "_nread", 0) + 1
        self._last_where = "index: {} (record {} of {})".format(header.id, self._nread - 1, self.imgrec.uri)
        return header.label, img

    def _label_row(self, label):
        if isinstance(label, NDArray):
            label = label.asnumpy()
        lab = np.asarray(label, dtype=np.float32).reshape(-1)
        if lab.size == self.label_width:
            return lab
        if lab.size == 1:
            return np.full((self.label_width,), lab[0], dtype=np.float32)
        raise ValueError(
            "ImageIter: %s has %d label values but label_width is %d" % (self._last_where, lab.size, self.label_width)
        )

    def _prepare_sample(self, label, s):
        """Decode and augment one sample; returns (data, label), or None to
        skip an invalid image (hook for subclasses such as ImageDetIter)."""
        self._chw = False
        augs = self.auglist
        if (
            len(augs) >= 2
            and type(augs[0]) is ResizeAug
            and type(augs[1]) in (RandomCropAug, CenterCropAug)
            and _not_overridden(self, "imdecode")
            and _not_overridden(self, "augmentation_transform")
        ):
            # decode only about the part of the image the first resize and
            # crop keep (unreadable bytes take the plain path and its error)
            buf = _as_bytes(s)
            try:
                shape = _native.decode_shape(buf, 1)
            except Exception:
                shape = None
            if shape is not None:
                where = "Broken image " + (self._last_where or "")
                # with every augmenter applied in the decode and ImageIter's
                # own hooks (nothing else sees the image), it comes CHW for
                # the batch
                plain_batch = all(
                    _not_overridden(self, name)
                    for name in ("postprocess_data", "check_valid_image", "_prepare_sample")
                )
                data, n, self._chw = _resize_then_crop(
                    None, augs[0], augs[1], (buf, where, shape), augs[2:], plain_batch
                )
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    return None
                return self._augment(data, 2 + n), label
        data = self.imdecode(s)
        try:
            self.check_valid_image(data)
        except RuntimeError as e:
            logging.debug("Invalid image, skipping:  %s", str(e))
            return None
        return self.augmentation_transform(data), label

    def _new_label_batch(self):
        """A host buffer for one batch of labels (filled by _label_row)."""
        return np.zeros((self.batch_size, self.label_width), dtype=np.float32)

    def _label_batch_out(self, batch_label):
        """The batch's label NDArray from the host buffer."""
        label = batch_label if self.label_width > 1 else batch_label[:, 0]
        return nd.array(label)

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        batch_size = self.batch_size
        try:
            while i < batch_size:
                label, s = self.next_sample()
                sample = self._prepare_sample(label, s)
                if sample is None:
                    continue
                data, label = sample
                assert i < batch_size, "Batch size must be multiples of augmenter output length"
                if type(self).postprocess_data is ImageIter.postprocess_data:
                    _native.image_to_batch(data, batch_data, i, getattr(self, "_chw", False))
                    self._chw = False
                else:
                    batch_data[i] = self.postprocess_data(data)
                batch_label[i] = self._label_row(label)
                i += 1
        except StopIteration:
            if not i:
                raise StopIteration
        return i

    def next(self):
        """The next DataBatch (data (N, C, H, W) float32, label (N,) or
        (N, label_width)); StopIteration at the end of the epoch."""
        batch_size = self.batch_size
        c, h, w = self.data_shape
        if self._cache_data is not None:
            assert self._cache_label is not None, "_cache_label didn't have values"
            assert self._cache_idx is not None, "_cache_idx didn't have values"
            batch_data = self._cache_data
            batch_label = self._cache_label
            i = self._cache_idx
        else:
            # every row is written below, or zeroed when nothing is left
            batch_data = nd.empty((batch_size, c, h, w))
            batch_label = self._new_label_batch()
            i = self._batchify(batch_data, batch_label)
        pad = batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data = batch_data
                self._cache_label = batch_label
                self._cache_idx = i
                raise StopIteration
            filled = self._batchify(batch_data, batch_label, i)
            if filled < batch_size:
                batch_data[filled:] = 0
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = None
                self._cache_label = None
                self._cache_idx = None
        return io.DataBatch([batch_data], [self._label_batch_out(batch_label)], pad=pad)

    def check_data_shape(self, data_shape):
        """Require a (3, height, width) data_shape."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Raise RuntimeError for a decoded image without rows."""
        if len(data.shape) < 2:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """Decode an image (pushed to the engine); data that is not an image
        raises DecodeError naming the image."""
        where = "Broken image " + (self._last_where or "")
        return _native.imdecode(_as_bytes(s), 1, True, None, where)

    def read_image(self, fname):
        """The bytes of image ``fname`` (relative to path_root)."""
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data):
        """Apply the augmenters in order. A ResizeAug followed by a
        RandomCropAug / CenterCropAug of the crop's own size runs as one
        window resize when it shrinks (only the cropped part is resized;
        same random draws and, up to rounding, the same pixels)."""
        return self._augment(data, 0)

    def _augment(self, data, start):
        """Apply the augmenters from index ``start`` on (see
        augmentation_transform)."""
        augs = self.auglist
        i = start
        while i < len(augs):
            aug = augs[i]
            if (type(aug) is ResizeAug and i + 1 < len(augs)
                    and type(augs[i + 1]) in (RandomCropAug, CenterCropAug)):
                data, _, _ = _resize_then_crop(data, aug, augs[i + 1])
                i += 2
                continue
            data = aug(data)
            i += 1
        return data

    def postprocess_data(self, datum):
        """HWC -> CHW for the batch."""
        return nd.transpose(datum, axes=(2, 0, 1))
