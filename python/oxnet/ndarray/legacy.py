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
