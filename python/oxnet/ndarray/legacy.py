"""MXNet 1.9.1's Python-level tensor helpers around internal operators:
``mx.nd.histogram`` (over ``_histogram``) and the deprecated
``mx.nd.onehot_encode`` (over ``_onehot_encode``)."""
from __future__ import annotations

import warnings

import numpy as np

from ..base import integer_types
from .ndarray import NDArray, array, imperative_invoke


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
