"""MXNet 1.9.1's Python-level tensor helpers around internal operators:
``mx.nd.histogram`` (over ``_histogram``) and the deprecated
``mx.nd.onehot_encode`` (over ``_onehot_encode``), and ``all_finite`` /
``multi_all_finite`` (whose ``init_output=False`` without ``out`` starts from 1
instead of reading a fresh array's memory)."""
from __future__ import annotations

import warnings

import numpy as np

from ..base import integer_types
from .ndarray import NDArray, array, imperative_invoke, ones


def histogram(a, bins=10, range=None):  # noqa: A002 (MXNet's argument name)
    """Compute the histogram of the input data (flattened).

    Parameters
    ----------
    a : NDArray
        Input data.
    bins : int or NDArray
        An int is the number of equal-width bins over ``range`` (10 by
        default); an NDArray (1-D, ``a``'s dtype) holds the bin edges,
        including the rightmost edge, allowing non-uniform widths (``range``
        is then ignored).
    range : (float, float), optional
        The lower and upper range of equal-width bins; values outside are
        ignored; the first element must not exceed the second (an empty
        range is widened by 0.5 on each side). Without it (and an int
        ``bins``) the histogram is computed by NumPy over (a.min(), a.max())
        with a warning, as MXNet does, and both results are float32.

    Returns
    -------
    (NDArray, NDArray)
        The counts (int64, one per bin) and the bin edges (``a``'s dtype).
    """
    if isinstance(bins, NDArray):
        return imperative_invoke("_histogram", [a, bins], {})
    if isinstance(bins, integer_types):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure consistency with numpy",
                          stacklevel=2)
            res, bin_bounds = np.histogram(a.asnumpy(), bins=bins)
            return array(res), array(bin_bounds)
        return imperative_invoke("_histogram", [a], {"bin_cnt": bins, "range": tuple(range)})
    raise ValueError("bins argument should be either an integer or an NDArray")


def onehot_encode(indices, out):
    """One-hot encoding of ``indices`` into the matrix ``out``.

    .. note:: `onehot_encode` is deprecated. Use `one_hot` instead.

    indices : NDArray, 1-D float32, one index per row of ``out`` (truncated
    to an integer; an index outside [0, out.shape[1]) gives a row of zeros).
    out : NDArray, 2-D float32, overwritten. Returns ``out``.
    """
    return imperative_invoke("_onehot_encode", [indices, out], {}, out=out)


def _finite_check(name, inputs, kwargs, out):
    # With init_output=False the operator only ever writes 0 (a non-finite
    # value found) into the output it is given; a fresh output would hold
    # whatever its memory held (MXNet returns that too). Without `out`,
    # start from 1 ("finite unless found otherwise") so the result is defined.
    if out is None and not kwargs.get("init_output", True):
        out = ones((1,), ctx=inputs[0].context if inputs else None)
    return imperative_invoke(name, list(inputs), kwargs, out=out)


def all_finite(data, init_output=True, out=None, name=None):
    """Check whether every value of the float array ``data`` is finite (used
    by AMP).

    Parameters
    ----------
    data : NDArray
        A float array.
    init_output : bool
        True (default): the result is 1, set to 0 when a NaN or infinite value
        is found. False: the result (``out``, or a new array holding 1) is only
        set to 0 when one is found, so several checks can accumulate into one
        ``out``.
    out : NDArray, optional
        A (1,) float32 array to write to.

    Returns
    -------
    NDArray
        A (1,) float32 array: 1.0 if all values are finite, else 0.0.
    """
    return _finite_check("all_finite", [data], {"init_output": init_output}, out)


def multi_all_finite(*data, num_arrays=1, init_output=True, out=None, name=None):
    """Check whether every value of the ``num_arrays`` float arrays ``data``
    is finite (used by AMP); ``init_output`` and ``out`` as in
    :func:`all_finite`.

    Returns
    -------
    NDArray
        A (1,) float32 array: 1.0 if all values of all arrays are finite, else 0.0.
    """
    kwargs = {"num_arrays": num_arrays, "init_output": init_output}
    return _finite_check("multi_all_finite", data, kwargs, out)


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """DEPRECATED (use :func:`oxnet.image.imdecode`): decode a JPEG or PNG
    image into a (channels, height, width) array, MXNet's legacy layout.

    Parameters
    ----------
    str_img : bytes, bytearray or numpy.ndarray
        The encoded image.
    clip_rect : 4 ints (x0, y0, x1, y1)
        Keep only columns x0..x1-1 and rows y0..y1-1. When y0 == y1 (the
        default (0, 0, 0, 0)) the whole image is kept.
    out : NDArray, optional
        Buffer to write into: 3-D (channels, h, w), or 4-D (n, channels, h, w)
        with the image written to ``out[index]``. Returned instead of a new
        array.
    index : int
        Which slice of a 4-D ``out`` receives the image.
    channels : int
        1 decodes to grayscale; 2 or 3 keep the first channels of the colour
        image in OpenCV's BGR order (as MXNet's decoder gives them).
    mean : NDArray, optional
        (channels, h, w) array subtracted from the image.

    Returns a new float32 array (``mean``'s dtype when it is given) of shape
    (channels, h, w), or ``out``. Decoding runs in Rust on the engine
    (outside the GIL); a corrupt image raises at the wait on the result.
    """
    from .. import _native
    from ..image.image import _as_bytes

    data = _as_bytes(str_img, "imdecode")
    if isinstance(channels, bool) or not isinstance(channels, integer_types) or not 1 <= channels <= 3:
        raise ValueError(
            "imdecode: channels must be 1 (grayscale), 2 or 3 (BGR colour), got %r "
            "(4-channel / alpha decoding is not supported)" % (channels,)
        )
    try:
        x0, y0, x1, y1 = (int(v) for v in clip_rect)
    except (TypeError, ValueError):
        raise ValueError("imdecode: clip_rect must be 4 ints (x0, y0, x1, y1), got %r" % (clip_rect,)) from None
    if mean is not None and not isinstance(mean, NDArray):
        raise TypeError("imdecode: mean must be an NDArray, got %s" % type(mean).__name__)
    if out is not None and not isinstance(out, NDArray):
        raise TypeError("imdecode: out must be an NDArray, got %s" % type(out).__name__)
    img = _native.imdecode(data, 0 if channels == 1 else 1, False, None, None)
    h, w, _ = img.shape
    if y1 - y0 == 0:
        x0, y0, x1, y1 = 0, 0, w, h
    if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
        raise ValueError(
            "imdecode: clip_rect (%d, %d, %d, %d) must satisfy 0 <= x0 < x1 <= width and "
            "0 <= y0 < y1 <= height for an image of width %d, height %d" % (x0, y0, x1, y1, w, h)
        )
    shape = (channels, y1 - y0, x1 - x0)
    dst = None
    if out is not None:
        if out.ndim == 3:
            dst = out
        elif out.ndim == 4:
            if isinstance(index, bool) or not isinstance(index, integer_types) or not 0 <= index < out.shape[0]:
                raise ValueError("imdecode: index %r is out of range for out of shape %s" % (index, out.shape))
            dst = out[index]
        else:
            raise ValueError(
                "imdecode: out must be 3-D (channels, h, w) or 4-D (n, channels, h, w), got shape %s" % (out.shape,)
            )
        if dst.shape != shape:
            raise ValueError(
                "imdecode: out%s has shape %s, the decoded image needs %s (channels, h, w)"
                % ("[%d]" % index if out.ndim == 4 else "", dst.shape, shape)
            )
    if mean is not None and mean.shape != shape:
        raise ValueError("imdecode: mean has shape %s, the decoded image needs %s (channels, h, w)" % (mean.shape, shape))
    if dst is not None:
        dtype = dst.dtype
    elif mean is not None:
        dtype = mean.dtype
    else:
        dtype = np.float32
    dtype = np.dtype(dtype).name
    crop = imperative_invoke("slice", [img], {"begin": (y0, x0, 0), "end": (y1, x1, channels)})
    chw = imperative_invoke("transpose", [crop], {"axes": (2, 0, 1)})
    if mean is None:
        res = imperative_invoke("Cast", [chw], {"dtype": dtype}, out=dst)
        return out if out is not None else res
    res = imperative_invoke("Cast", [chw], {"dtype": dtype})
    if np.dtype(mean.dtype).name != dtype:
        mean = imperative_invoke("Cast", [mean], {"dtype": dtype})
    imperative_invoke("elemwise_sub", [res, mean], out=dst if dst is not None else res)
    return out if out is not None else res
