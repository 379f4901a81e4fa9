"""The NDArray class and array creation.

``NDArray`` is the Rust class ``oxnet._native.NDArray``; the Python methods
below are attached to it at import, so every array made anywhere (by an
operator, a loader or a loaded file) is the same type.
"""
from __future__ import annotations


import numpy as np

from .. import _native
from ..base import MXNetError, dtype_name, integer_types, numeric_types
from ..context import Context, current_context

#: Python's builtin ``slice`` (MXNet's module keeps this name because ``slice`` is also an operator).
py_slice = slice

NDArray = _native.NDArray

_SUPPORTED = {"float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"}
_OPS = {}


def _op(name):
    o = _OPS.get(name)
    if o is None:
        o = _OPS[name] = _native.get_op(name)
    return o


def _ctx_pair(ctx):
    if ctx is None:
        return None
    if isinstance(ctx, Context):
        return ctx._pair()
    raise TypeError(f"ctx must be an oxnet Context, got {type(ctx).__name__}")


def imperative_invoke(op, inputs, kwargs=None, out=None, ctx=None):
    """Run operator ``op`` (an ``_native.Op`` or a name) on ``inputs``.

    Returns one NDArray, or a list when the operator has several outputs.
    """
    if isinstance(op, str):
        op = _op(op)
    if ctx is None and not inputs:
        ctx = current_context()
    res = _native.invoke(op, inputs, kwargs, out, _ctx_pair(ctx))
    if out is not None:
        return out
    return res[0] if len(res) == 1 else res


def _invoke1(name, inputs, kwargs=None, out=None):
    res = imperative_invoke(_op(name), inputs, kwargs, out=out)
    return res


def waitall():
    """Wait for all pushed operations to finish; raises the first error an
    asynchronous operation hit since the last call."""
    _native.waitall()


# ---------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------


def _np_dtype_for(dtype, default="float32"):
    return dtype_name(dtype) if dtype is not None else default


def empty(shape, ctx=None, dtype=None):
    """An uninitialised array of ``shape`` (int or tuple) on ``ctx`` (default
    the current context) with ``dtype`` (default float32)."""
    if isinstance(shape, integer_types):
        shape = (int(shape),)
    ctx = ctx or current_context()
    return _native.empty(tuple(int(s) for s in shape), _np_dtype_for(dtype), ctx._pair())


def _creation_kwargs(fname, kwargs):
    """MXNet's creation functions accept ``name``, ``stype='default'`` and
    symbol attributes (``__layout__``) and ignore them for arrays; ``out`` is kept."""
    rest = {}
    for k, v in kwargs.items():
        if k == "name" or (k.startswith("__") and k.endswith("__")):
            continue
        if k == "stype":
            if v not in (None, "default"):
                raise ValueError(f"{fname}: stype '{v}' is not supported (dense arrays only)")
            continue
        rest[k] = v
    return rest


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An array of zeros of ``shape`` on ``ctx`` with ``dtype`` (float32)."""
    if isinstance(shape, integer_types):
        shape = (int(shape),)
    kwargs = _creation_kwargs("zeros", kwargs)
    return imperative_invoke(
        "_zeros", [], {"shape": tuple(shape), "dtype": _np_dtype_for(dtype)}, ctx=ctx or current_context(), **kwargs
    )


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones of ``shape`` on ``ctx`` with ``dtype`` (float32)."""
    if isinstance(shape, integer_types):
        shape = (int(shape),)
    kwargs = _creation_kwargs("ones", kwargs)
    return imperative_invoke(
        "_ones", [], {"shape": tuple(shape), "dtype": _np_dtype_for(dtype)}, ctx=ctx or current_context(), **kwargs
    )


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array of ``shape`` filled with ``val``."""
    if isinstance(shape, integer_types):
        shape = (int(shape),)
    return imperative_invoke(
        "_full",
        [],
        {"shape": tuple(shape), "dtype": _np_dtype_for(dtype), "value": float(val)},
        out=out,
        ctx=ctx or current_context(),
    )


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in [start, stop) (``arange(n)`` gives 0..n-1),
    each repeated ``repeat`` times. Returns a 1-D NDArray (float32 default)."""
    kw = {"start": float(start), "step": float(step), "repeat": int(repeat), "dtype": _np_dtype_for(dtype)}
    if stop is not None:
        kw["stop"] = float(stop)
    return imperative_invoke("_arange", [], kw, ctx=ctx or current_context())


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An N x M (M=0 means N) array with ones on the k-th diagonal."""
    return imperative_invoke(
        "_eye", [], {"N": int(N), "M": int(M), "k": int(k), "dtype": _np_dtype_for(dtype)}, ctx=ctx or current_context()
    )


def array(source_array, ctx=None, dtype=None):
    """Create an array from a NumPy array, an NDArray, a (nested) list or a
    scalar. ``dtype`` defaults to the source's dtype for an NDArray and to
    float32 otherwise (MXNet's rule). The data is copied once, straight
    into the new array's storage."""
    ctx = ctx or current_context()
    if isinstance(source_array, NDArray):
        dt = _np_dtype_for(dtype, source_array._dtype_name)
        src = source_array.asnumpy()
    else:
        dt = _np_dtype_for(dtype)
        src = source_array
    try:
        arr = np.asarray(src, dtype=dt, order="C")
    except (TypeError, ValueError) as e:
        raise TypeError(f"array: source of type {type(source_array).__name__} cannot be converted: {e}") from e
    if arr.dtype.name not in _SUPPORTED:
        raise TypeError(f"array: unsupported dtype {arr.dtype.name}")
    return _native.from_numpy(arr, ctx._pair())


def _from_numpy_any(arr, ctx, dtype=None):
    arr = np.ascontiguousarray(arr, dtype=dtype)
    return _native.from_numpy(arr, ctx._pair())


def concatenate(arrays, axis=0, always_copy=True):
    """Join arrays along ``axis`` (MXNet's ``mx.nd.concatenate``)."""
    from . import op

    return op.concat(*arrays, dim=axis)


def moveaxis(tensor, source, destination):
    """Move axes of ``tensor`` to new positions (as ``numpy.moveaxis``): ``source`` and
    ``destination`` are an int or a sequence of ints (negative counts from the end), of the same
    length, without repeats; the other axes keep their order. Returns the transposed array.
    Raises ValueError for an out-of-range or repeated axis or mismatched lengths."""
    nd = tensor.ndim

    def norm(axes, what):
        seq = [axes] if isinstance(axes, integer_types) else list(axes)
        out = []
        for a in seq:
            if not isinstance(a, integer_types) or isinstance(a, bool):
                raise TypeError(f"moveaxis: {what} axes must be integers, got {a!r}")
            if not -nd <= a < nd:
                raise ValueError(f"moveaxis: {what} axis {a} is out of range for a {nd}-d array of shape {tensor.shape}")
            out.append(int(a) % nd)
        if len(set(out)) != len(out):
            raise ValueError(f"moveaxis: repeated axis in {what} {axes!r}")
        return out

    src = norm(source, "source")
    dst = norm(destination, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` arguments must have the same number of elements "
                         f"(got {len(src)} and {len(dst)})")
    order = [n for n in range(nd) if n not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    from . import op

    return op.transpose(tensor, axes=tuple(order))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` along ``axis`` (MXNet's ``mx.nd.split_v2``).

    indices_or_sections : int or tuple of ints
        An int N cuts the axis into N equal parts (its length must be a
        multiple of N); a tuple gives the indices where parts start after the
        first, as ``numpy.split`` does (empty parts allowed, indices must not
        decrease or pass the axis' length).
    squeeze_axis : bool
        Drop the split axis from every part; each part must then have length 1.

    Returns a list of NDArrays (one NDArray when there is a single part). The
    parts are slices recorded by autograd like any operator.
    """
    from . import op

    nd = ary.ndim
    ax = axis + nd if isinstance(axis, integer_types) and axis < 0 else axis
    if not isinstance(ax, integer_types) or not 0 <= ax < nd:
        raise ValueError(f"split_v2: axis {axis} is out of range for shape {ary.shape}")
    size = ary.shape[ax]
    if isinstance(indices_or_sections, integer_types) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0 or size % sections:
            raise ValueError(
                f"split_v2: axis {axis} of shape {ary.shape} does not split into {sections} equal parts"
            )
        bounds = [i * (size // sections) for i in range(sections)] + [size]
    elif isinstance(indices_or_sections, (tuple, list)):
        bounds = [0] + [int(i) for i in indices_or_sections] + [size]
        for lo, hi in zip(bounds, bounds[1:]):
            if lo > hi:
                raise ValueError(
                    f"split_v2: indices {tuple(indices_or_sections)} must not decrease nor pass the length {size} "
                    f"of axis {axis} (shape {ary.shape})"
                )
    else:
        raise TypeError(
            f"split_v2: indices_or_sections must be an int or a tuple of ints, got {type(indices_or_sections).__name__}"
        )
    parts = list(zip(bounds, bounds[1:]))
    if squeeze_axis and any(hi - lo != 1 for lo, hi in parts):
        raise ValueError(f"split_v2: squeeze_axis needs parts of length 1 along axis {axis}, got bounds {bounds}")
    def part(lo, hi):
        if lo == hi:  # slice_axis refuses empty ranges; an empty part has nothing to record
            return zeros(ary.shape[:ax] + (0,) + ary.shape[ax + 1:], ctx=ary.context, dtype=ary._dtype_name)
        return op.slice_axis(ary, axis=ax, begin=lo, end=hi)

    outs = [part(lo, hi) for lo, hi in parts]
    if squeeze_axis:
        outs = [op.squeeze(o, axis=ax) for o in outs]
    return outs[0] if len(outs) == 1 else outs


def depth_to_space(data, block_size):
    """Move blocks of channels into space (MXNet's ``mx.nd.depth_to_space``).

    data : NDArray (N, C, H, W) with C divisible by ``block_size ** 2``.
    Returns an NDArray (N, C / block_size**2, H * block_size, W * block_size):
    output pixel (h * b + i, w * b + j) of channel c is input channel
    (i * b + j) * C / b**2 + c at (h, w). Inverse of :func:`space_to_depth`.
    """
    b = _block("depth_to_space", data, block_size)
    n, c, h, w = data.shape
    if c % (b * b):
        raise ValueError(f"depth_to_space: channels {c} of shape {data.shape} are not divisible by block_size**2 = {b * b}")
    from . import op

    t = op.reshape(data, shape=(n, b, b, c // (b * b), h, w))
    t = op.transpose(t, axes=(0, 3, 4, 1, 5, 2))
    return op.reshape(t, shape=(n, c // (b * b), h * b, w * b))


def space_to_depth(data, block_size):
    """Move blocks of space into channels (MXNet's ``mx.nd.space_to_depth``).

    data : NDArray (N, C, H, W) with H and W divisible by ``block_size``.
    Returns an NDArray (N, C * block_size**2, H / block_size, W / block_size),
    the inverse of :func:`depth_to_space`.
    """
    b = _block("space_to_depth", data, block_size)
    n, c, h, w = data.shape
    if h % b or w % b:
        raise ValueError(f"space_to_depth: height and width of shape {data.shape} are not divisible by block_size {b}")
    from . import op

    t = op.reshape(data, shape=(n, c, h // b, b, w // b, b))
    t = op.transpose(t, axes=(0, 3, 5, 1, 2, 4))
    return op.reshape(t, shape=(n, c * b * b, h // b, w // b))


def _block(name, data, block_size):
    if data.ndim != 4:
        raise ValueError(f"{name}: data must be 4-D (N, C, H, W), got shape {data.shape}")
    if not isinstance(block_size, integer_types) or block_size < 1:
        raise ValueError(f"{name}: block_size must be a positive int, got {block_size!r}")
    return int(block_size)


def hard_sigmoid(data, alpha=0.2, beta=0.5, out=None):
    """``max(0, min(1, alpha * data + beta))`` element-wise (MXNet's
    ``mx.nd.hard_sigmoid``). Returns an NDArray like ``data`` (or ``out``);
    its gradient is ``alpha`` where ``alpha * data + beta`` lies in [0, 1]
    (clip's rule; MXNet's own kernel gives 0 on the two boundaries)."""
    from . import op

    return op.clip(data * float(alpha) + float(beta), a_min=0.0, a_max=1.0, out=out)


def moments(data, axes=None, keepdims=False):
    """Mean and (population) variance of ``data`` over ``axes`` (MXNet's
    ``mx.nd.moments``).

    axes : tuple of ints, required (pass every axis for global moments).
    Returns a list ``[mean, var]`` of NDArrays, the reduced axes kept with
    length 1 when ``keepdims``.
    """
    if axes is None or (isinstance(axes, (tuple, list)) and len(axes) == 0):
        raise ValueError(f"moments: axes must name the axes to reduce (all {data.ndim} for global moments)")
    axes = (axes,) if isinstance(axes, integer_types) else tuple(axes)
    from . import op

    mean = op.mean(data, axis=axes, keepdims=True)
    var = op.mean(op.square(data - mean), axis=axes, keepdims=keepdims)
    return [mean if keepdims else op.squeeze(mean, axis=axes), var]


def argmax_channel(data):
    """Index of the largest value along the last axis (MXNet's
    ``mx.nd.argmax_channel``). Returns a float NDArray of ``data.shape[:-1]``."""
    from . import op

    return op.argmax(data, axis=-1)


def _index_shape(name, shape):
    shape = (shape,) if isinstance(shape, integer_types) else tuple(shape)
    if not shape or any(not isinstance(d, integer_types) or d <= 0 for d in shape):
        raise ValueError(f"{name}: shape must be a non-empty tuple of positive ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def ravel_multi_index(data, shape):
    """Flat indices of the multi-indices in ``data`` for an array of ``shape``
    (MXNet's ``mx.nd.ravel_multi_index``, like ``numpy.ravel_multi_index``).

    data : NDArray (len(shape), ...), one row per axis. Values are not
    range-checked (MXNet's arithmetic: sum of index * stride).
    Returns an NDArray of ``data.shape[1:]`` with ``data``'s dtype.
    """
    from . import op

    shape = _index_shape("ravel_multi_index", shape)
    if data.ndim < 1 or data.shape[0] != len(shape):
        raise ValueError(f"ravel_multi_index: data shape {data.shape} must start with len(shape) = {len(shape)}")
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    w = array(np.array(strides, np.float64).reshape((-1,) + (1,) * (data.ndim - 1)), ctx=data.context,
              dtype="float64")
    flat = op.sum(op.broadcast_mul(data.astype("float64"), w), axis=0)
    return flat.astype(data._dtype_name)


def unravel_index(data, shape):
    """Multi-indices of the flat indices in ``data`` for an array of ``shape``
    (MXNet's ``mx.nd.unravel_index``). Each axis but the first takes the
    remainder of a division truncated towards zero and the first takes what
    is left, as MXNet computes it (so out-of-range values are not wrapped).
    Returns an NDArray (len(shape), *data.shape) with ``data``'s dtype.
    """
    from . import op

    shape = _index_shape("unravel_index", shape)
    x = data.astype("float64")
    coords = []
    for d in reversed(shape[1:]):
        q = op.fix(x / d)
        coords.append(x - q * d)
        x = q
    coords.append(x)
    # + 0.0 turns the -0.0 that truncating a small negative quotient gives into 0.0
    return (op.stack(*reversed(coords), axis=0) + 0.0).astype(data._dtype_name)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype="float32"):
    """``num`` evenly spaced numbers from ``start`` to ``stop`` (included when
    ``endpoint``), computed in float64 and cast to ``dtype`` as MXNet does.
    Returns an NDArray of shape (num,) on ``ctx``."""
    if not isinstance(num, integer_types) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {num!r}")
    div = (num - 1 if endpoint else num) or 1
    step = (float(stop) - float(start)) / div
    vals = float(start) + step * np.arange(num, dtype=np.float64)
    return array(vals.astype(_np_dtype_for(dtype)), ctx=ctx, dtype=dtype)


# ---------------------------------------------------------------------------
# Element-wise binary functions (mx.nd.add, mx.nd.maximum, mx.nd.equal, ...)
# ---------------------------------------------------------------------------


def _ufunc(name, lhs, rhs, bop, lsop, rsop, pyfn):
    """MXNet's binary-function dispatch: two arrays go to the broadcasting
    operator ``bop``; an array and a number to the scalar operator (``lsop``
    with the array on the left, ``rsop`` with it on the right); two numbers
    give ``pyfn(lhs, rhs)``, a Python number."""
    if isinstance(lhs, numeric_types):
        if isinstance(rhs, numeric_types):
            return pyfn(lhs, rhs)
        if isinstance(rhs, NDArray):
            return _native_invoke(_op(rsop), (rhs,), {"scalar": lhs}, None)[0]
    elif isinstance(lhs, NDArray) and isinstance(rhs, (NDArray,) + numeric_types):
        return _binary(lhs, rhs, bop, lsop)
    raise TypeError(
        f"{name}: operands must be NDArrays or numbers, got {type(lhs).__name__} and {type(rhs).__name__}"
    )


def _make_ufunc(name, bop, lsop, rsop, pyfn, what):
    def fn(lhs, rhs):
        return _ufunc(name, lhs, rhs, bop, lsop, rsop, pyfn)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"{what}, element-wise with broadcasting (MXNet's ``mx.nd.{name}``).\n\n"
        "lhs, rhs : NDArray or number. Two arrays broadcast to a common shape (``{bop}``); an array\n"
        "and a number apply the number to every element.\n\n"
        "Returns an NDArray, or a Python number when both operands are numbers."
    ).replace("{bop}", bop)
    return fn


def _bool(f):
    return lambda x, y: 1 if f(x, y) else 0


# name, broadcasting op, scalar op (array on the left), scalar op (array on the right), two numbers, doc
_UFUNCS = [
    ("add", "broadcast_add", "_plus_scalar", "_plus_scalar", lambda x, y: x + y, "lhs + rhs"),
    ("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", lambda x, y: x - y, "lhs - rhs"),
    ("multiply", "broadcast_mul", "_mul_scalar", "_mul_scalar", lambda x, y: x * y, "lhs * rhs"),
    ("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", lambda x, y: x / y, "lhs / rhs"),
    ("true_divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", lambda x, y: x / y, "lhs / rhs"),
    ("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", lambda x, y: x % y, "lhs % rhs"),
    ("power", "broadcast_power", "_power_scalar", "_rpower_scalar", lambda x, y: x**y, "lhs ** rhs"),
    ("maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar", lambda x, y: x if x > y else y,
     "The larger of lhs and rhs"),
    ("minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar", lambda x, y: x if x < y else y,
     "The smaller of lhs and rhs"),
    ("equal", "broadcast_equal", "_equal_scalar", "_equal_scalar", _bool(lambda x, y: x == y),
     "1 where lhs == rhs, else 0"),
    ("not_equal", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", _bool(lambda x, y: x != y),
     "1 where lhs != rhs, else 0"),
    ("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar", _bool(lambda x, y: x > y),
     "1 where lhs > rhs, else 0"),
    ("greater_equal", "broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar",
     _bool(lambda x, y: x >= y), "1 where lhs >= rhs, else 0"),
    ("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar", _bool(lambda x, y: x < y),
     "1 where lhs < rhs, else 0"),
    ("lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
     _bool(lambda x, y: x <= y), "1 where lhs <= rhs, else 0"),
    ("logical_and", "broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
     _bool(lambda x, y: x and y), "1 where lhs and rhs are both non-zero, else 0"),
    ("logical_or", "broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
     _bool(lambda x, y: x or y), "1 where lhs or rhs is non-zero, else 0"),
    ("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
     _bool(lambda x, y: bool(x) != bool(y)), "1 where exactly one of lhs and rhs is non-zero, else 0"),
]
for _u in _UFUNCS:
    globals()[_u[0]] = _make_ufunc(*_u)
del _u


# ---------------------------------------------------------------------------
# Methods attached to NDArray
# ---------------------------------------------------------------------------


class _Methods:
    """Python-side methods of NDArray (attached to the native class)."""

    __array_priority__ = 1000.0

    def split_v2(self, *args, **kwargs):
        """Same as ``mx.nd.split_v2(self, ...)``."""
        return split_v2(self, *args, **kwargs)

    def depth_to_space(self, block_size):
        """Same as ``mx.nd.depth_to_space(self, block_size)``: returns the
        NCHW array rearranged from depth into ``block_size`` x ``block_size``
        spatial blocks."""
        return depth_to_space(self, block_size)

    def space_to_depth(self, block_size):
        """Same as ``mx.nd.space_to_depth(self, block_size)``: returns the
        NCHW array with ``block_size`` x ``block_size`` spatial blocks moved
        into depth."""
        return space_to_depth(self, block_size)

    def argmax_channel(self):
        """Same as ``mx.nd.argmax_channel(self)``: returns the indices of the
        maxima along the last axis (float32, like ``argmax``)."""
        return argmax_channel(self)

    def slice_assign(self, rhs, begin, end, step):
        """Write NDArray ``rhs`` into the window ``begin:end:step`` of this
        array (tuples per axis; None takes the axis' default) and return
        this array. ``rhs`` must have the window's shape."""
        return _invoke1("_slice_assign", [self, rhs], {"begin": begin, "end": end, "step": step}, out=self)

    def slice_assign_scalar(self, value, begin, end, step):
        """Fill the window ``begin:end:step`` of this array with the number
        ``value`` and return this array."""
        attrs = {"scalar": float(value), "begin": begin, "end": end, "step": step}
        return _invoke1("_slice_assign_scalar", [self], attrs, out=self)

    @property
    def dtype(self):
        """The NumPy scalar type of the elements (e.g. ``numpy.float32``)."""
        return np.dtype(self._dtype_name).type

    @property
    def context(self):
        """The :class:`~oxnet.context.Context` the array lives on."""
        t, i = self._ctx
        return Context(Context.devtype2str[t], i)

    ctx = context

    @property
    def stype(self):
        """Storage type; oxnet arrays are 'default' (dense)."""
        return "default"

    @property
    def T(self):
        """The transpose (reversed axes); 1-D arrays are returned as a copy."""
        return _invoke1("transpose", [self])

    @property
    def handle(self):
        return self

    @property
    def writable(self):
        return True

    def asnumpy(self):
        """Wait for pending writes, then return a NumPy copy."""
        out = np.empty(self.shape, dtype=self._dtype_name)
        self._read_into(out)
        return out

    def asscalar(self):
        """The value of a one-element array as a NumPy scalar."""
        if self.size != 1:
            raise ValueError(f"asscalar: the array must have exactly one element, it has shape {self.shape}")
        return self.asnumpy().reshape(())[()]

    def item(self):
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a.astype(dtype) if dtype is not None else a

    def tolist(self):
        return self.asnumpy().tolist()

    def copy(self):
        """A new array with the same contents on the same context."""
        return _invoke1("_copy", [self])

    def as_nd_ndarray(self):
        """This array itself: it already is a classic ``mx.nd`` NDArray
        (MXNet's conversion from its NumPy-compatible arrays, zero copy)."""
        return self

    def tostype(self, stype):
        """A copy of the array with storage type ``stype`` (see
        :func:`oxnet.ndarray.cast_storage`). oxnet arrays are dense: 'default'
        returns a new dense copy (as MXNet does for a dense array); 'csr' and
        'row_sparse' raise ValueError (sparse storage is not supported)."""
        if stype == "csr" and len(self.shape) != 2:
            raise ValueError(
                "To convert to a CSR, the NDArray should be 2 Dimensional. Current shape is %s" % str(self.shape)
            )
        return _invoke1("cast_storage", [self], {"stype": stype})

    def copyto(self, other):
        """Copy into ``other`` (an NDArray of the same shape, or a Context for a
        new array there). Returns the destination."""
        if isinstance(other, NDArray):
            if other._same_memory(self) and other._offset == self._offset and other.shape == self.shape:
                return other
            if other.shape != self.shape:
                raise ValueError(f"copyto: shape {self.shape} does not match destination shape {other.shape}")
            if other._dtype_name != self._dtype_name:
                return _invoke1("Cast", [self], {"dtype": other._dtype_name}, out=other)
            return _invoke1("_copy", [self], out=other)
        if isinstance(other, Context):
            if other == self.context:
                return self.copy()
            dst = empty(self.shape, ctx=other, dtype=self._dtype_name)
            dst._write_from(self.asnumpy())
            return dst
        raise TypeError(f"copyto: destination must be an NDArray or a Context, got {type(other).__name__}")

    def as_in_context(self, context):
        """This array if already on ``context``, else a copy there."""
        if self.context == context:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy=True):
        """A copy converted to ``dtype`` (``copy=False`` returns self when the
        dtype already matches)."""
        name = dtype_name(dtype)
        if not copy and name == self._dtype_name:
            return self
        return _invoke1("Cast", [self], {"dtype": name})

    def wait_to_write(self):
        """Block until every pending read and write of this array finished."""
        self._wait_to_write()

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        if self.size == 1:
            return bool(self.asscalar())
        if self.size == 0:
            return False
        raise ValueError("The truth value of an NDArray with more than one element is ambiguous.")

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        if np.issubdtype(self.dtype, np.integer) and self.size == 1:
            return int(self.asscalar())
        raise TypeError("only integer arrays with one element can be converted to an index")

    def __repr__(self):
        shape_info = "x".join(str(s) for s in self.shape)
        return f"\n{self.asnumpy()!s}\n<NDArray {shape_info} @{self.context}>"

    __str__ = __repr__

    def __reduce__(self):
        return (_from_state, (self.__getstate__(),))

    def __getstate__(self):
        """MXNet's pickled state: ``{'handle': bytearray}`` holding the array in MXNet's binary
        format (what ``NDArray::Save`` writes for one array), so states are interchangeable."""
        raw = _native.nd_save_bytes([self], [])
        # strip the list file's header (magic, reserved, count) and its empty name list
        return {"handle": bytearray(raw[_LIST_HEADER:-8])}

    def __setstate__(self, state):
        """Make this array the one held by ``state`` (from :meth:`__getstate__`, or MXNet's).
        An array saved from a GPU context is loaded on the CPU (oxnet has no GPU)."""
        self._assign_from(_from_state(state))

    # -- shape -------------------------------------------------------------

    def reshape(self, *shape, **kwargs):
        """A view with a new shape (shares memory). Accepts MXNet's special
        values 0 (keep), -1 (infer), -2 (copy the rest), -3 (merge two), -4
        (split one) and ``reverse=True``."""
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = tuple(kwargs.pop("shape"))
        reverse = bool(kwargs.pop("reverse", False))
        if kwargs:
            raise TypeError(f"reshape: unexpected arguments {sorted(kwargs)}")
        target = _reshape_target(self.shape, tuple(int(s) for s in shape), reverse)
        if self._has_ag and _native.is_recording():
            return _invoke1("Reshape", [self], {"shape": target})
        return self._reshape_view(target)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Backpropagate from this array (``out_grad`` defaults to ones) into
        the ``.grad`` of every variable it was computed from."""
        from .. import autograd

        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    def flatten(self, inplace=False):
        """Collapse all axes after the first: shape (d0, d1*...*dn). With ``inplace=True`` the
        result is a view sharing this array's memory (writes show through), else a copy."""
        if not inplace:
            from . import op

            return op.flatten(self)
        return self.reshape((0, -1))

    def expand_dims(self, axis, inplace=False):
        """Insert an axis of length 1 at ``axis`` (-ndim-1 <= axis <= ndim). With ``inplace=True``
        the result is a view sharing this array's memory, else a copy."""
        if not inplace:
            from . import op

            return op.expand_dims(self, axis=axis)
        nd = self.ndim
        if not isinstance(axis, integer_types) or not -nd - 1 <= axis <= nd:
            raise ValueError(f"expand_dims: axis {axis} is out of range for a {nd}-d array of shape {self.shape}")
        new_shape = list(self.shape)
        new_shape.insert(axis + nd + 1 if axis < 0 else axis, 1)
        return self.reshape(new_shape)

    def squeeze(self, axis=None, inplace=False):
        """Remove axes of length 1 (all, or those in ``axis``, an int or tuple, each of which must
        have length 1); removing every axis leaves shape (1,), as in MXNet. With
        ``inplace=True`` the result is a view sharing this array's memory, else a copy."""
        if not inplace:
            from . import op

            return op.squeeze(self, axis=axis)
        nd = self.ndim
        new_shape = list(self.shape)
        if axis is None:
            new_shape = [d for d in new_shape if d != 1]
        else:
            axes = [axis] if isinstance(axis, integer_types) else list(axis)
            if len(set(axes)) != len(axes):
                raise ValueError(f"squeeze: axis {axis} contains duplicates")
            resolved = []
            for a in axes:
                if not -nd <= a < nd:
                    raise ValueError(f"squeeze: axis {a} is out of range for a {nd}-d array of shape {self.shape}")
                r = a % nd
                if self.shape[r] != 1:
                    raise ValueError(f"squeeze: axis {a} of shape {self.shape} must have length 1")
                resolved.append(r)
            if len(set(resolved)) != len(resolved):
                raise ValueError(f"squeeze: axis {axis} names an axis twice")
            new_shape = [d for i, d in enumerate(new_shape) if i not in resolved]
        return self.reshape(new_shape or [1])

    def reshape_like(self, other):
        """A view with the shape of ``other``."""
        return self._reshape_view(tuple(other.shape))

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether indexing a C-contiguous array of ``shape`` with ``slc_key`` (one ``slice`` per
        axis) gives a C-contiguous result, by NumPy's rule (axes of length 1 do not count; an
        empty result is contiguous). MXNet's helper of the same name."""
        if len(slc_key) != len(shape):
            raise ValueError(f"_basic_indexing_slice_is_contiguous: key {slc_key} does not match shape {shape}")
        lens, strides = [], []
        stride = 1
        for slc, n in zip(reversed(slc_key), reversed(shape)):
            start, stop, step = slc.indices(n)
            lens.append(len(range(start, stop, step)))
            strides.append(stride * step)
            stride *= n
        if 0 in lens:
            return True
        want = 1
        for n, st in zip(lens, strides):  # innermost axis first
            if n != 1 and st != want:
                return False
            want *= n
        return True

    def _at_index(self, i):
        n = self.shape[0]
        if i < -n or i >= n:
            raise IndexError(f"index {i} is out of bounds for axis 0 with size {n}")
        return self._at(i % n)

    def __getitem__(self, key):
        return _getitem(self, key)

    def __setitem__(self, key, value):
        _setitem(self, key, value)

    # -- arithmetic --------------------------------------------------------

    # __add__/__radd__, __sub__/__rsub__, __mul__/__rmul__ and
    # __truediv__/__rtruediv__ are defined in Rust (the per-op hot path); they
    # hand NumPy operands and other types to `_binary` below.

    def __iadd__(self, other):
        return _binary(self, other, "broadcast_add", "_plus_scalar", out=self)

    def __isub__(self, other):
        return _binary(self, other, "broadcast_sub", "_minus_scalar", out=self)

    def __imul__(self, other):
        return _binary(self, other, "broadcast_mul", "_mul_scalar", out=self)

    def __itruediv__(self, other):
        return _binary(self, other, "broadcast_div", "_div_scalar", out=self)

    __idiv__ = __itruediv__

    def __mod__(self, other):
        return _binary(self, other, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, other):
        return _binary(self, other, "broadcast_mod", "_rmod_scalar", reverse=True)

    def __imod__(self, other):
        return _binary(self, other, "broadcast_mod", "_mod_scalar", out=self)

    def __pow__(self, other):
        return _binary(self, other, "broadcast_power", "_power_scalar")

    def __rpow__(self, other):
        return _binary(self, other, "broadcast_power", "_rpower_scalar", reverse=True)

    def __ipow__(self, other):
        return _binary(self, other, "broadcast_power", "_power_scalar", out=self)

    def __neg__(self):
        return _invoke1("negative", [self])

    def __pos__(self):
        return self

    def __abs__(self):
        return _invoke1("abs", [self])

    def __eq__(self, other):
        if other is None:
            return False
        return _binary(self, other, "broadcast_equal", "_equal_scalar")

    def __ne__(self, other):
        if other is None:
            return True
        return _binary(self, other, "broadcast_not_equal", "_not_equal_scalar")

    def __gt__(self, other):
        return _binary(self, other, "broadcast_greater", "_greater_scalar")

    def __ge__(self, other):
        return _binary(self, other, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, other):
        return _binary(self, other, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, other):
        return _binary(self, other, "broadcast_lesser_equal", "_lesser_equal_scalar")

    __hash__ = object.__hash__


def _rebuild(data, ctx_str):
    """Unpickle an array pickled by oxnet before 0.1.0's MXNet-format state (kept for old pickles)."""
    return array(data, dtype=data.dtype)


# The list file format's header: u64 magic 0x112, u64 reserved, u64 number of arrays.
_LIST_HEADER = 24


def _from_state(state):
    """The NDArray held by a ``__getstate__`` state ``{'handle': bytes}``."""
    if not isinstance(state, dict) or "handle" not in state:
        raise TypeError("NDArray.__setstate__: state must be a dict with key 'handle', got {!r}".format(state))
    raw = state["handle"]
    if raw is None:
        raise ValueError("NDArray.__setstate__: the state holds no array (handle None)")
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError("NDArray.__setstate__: 'handle' must be bytes, got {}".format(type(raw).__name__))
    head = (0x112).to_bytes(8, "little") + bytes(8) + (1).to_bytes(8, "little")
    arrays, _ = _native.nd_load_bytes(head + bytes(raw) + bytes(8))
    return arrays[0]


_REVERSE_OP = {
    "_rminus_scalar": "broadcast_sub",
    "_rdiv_scalar": "broadcast_div",
    "_rmod_scalar": "broadcast_mod",
    "_rpower_scalar": "broadcast_power",
}


_native_invoke = _native.invoke


def _binary(lhs, rhs, bop, sop, reverse=False, out=None):
    # The hot path of `a + 1` / `a * b`: one Python frame, then Rust.
    if isinstance(rhs, NDArray):
        a, b = (rhs, lhs) if reverse else (lhs, rhs)
        if out is not None and a.shape != b.shape and out.shape != _bshape(a.shape, b.shape):
            raise ValueError(f"{bop}: in-place result shape {_bshape(a.shape, b.shape)} differs from {out.shape}")
        return _native_invoke(_OPS.get(bop) or _op(bop), (a, b), None, out)[0]
    if isinstance(rhs, (int, float, np.generic)):
        return _native_invoke(_OPS.get(sop) or _op(sop), (lhs,), {"scalar": rhs}, out)[0]
    if isinstance(rhs, np.ndarray):
        return _binary(lhs, array(rhs, ctx=lhs.context, dtype=lhs._dtype_name), bop, sop, reverse, out)
    return NotImplemented


def _bshape(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


def _reshape_target(src, shape, reverse=False):
    """MXNet's Reshape rules (0, -1, -2, -3, -4, reverse) -> concrete shape."""
    src = tuple(src)
    if reverse:
        src_r = src[::-1]
        # -4 takes its two following values in order; reverse them as MXNet does.
        toks = list(shape)
        out_r = []
        i = 0
        rev = []
        while i < len(toks):
            if toks[i] == -4:
                rev.append((-4, toks[i + 1], toks[i + 2]))
                i += 3
            else:
                rev.append((toks[i],))
                i += 1
        flat = []
        for t in reversed(rev):
            if t[0] == -4:
                flat.extend([-4, t[2], t[1]])
            else:
                flat.append(t[0])
        out_r = _reshape_target(src_r, tuple(flat), False)
        return tuple(out_r[::-1])
    out = []
    i = 0  # index into src
    j = 0
    infer = -1
    while j < len(shape):
        s = shape[j]
        if s == 0:
            if i >= len(src):
                raise ValueError(f"reshape: 0 in {shape} refers past the input's {len(src)} dimensions")
            out.append(src[i])
            i += 1
        elif s == -1:
            if infer >= 0:
                raise ValueError(f"reshape: more than one -1 in {shape}")
            infer = len(out)
            out.append(1)
            i += 1
        elif s == -2:
            out.extend(src[i:])
            i = len(src)
        elif s == -3:
            if i + 1 >= len(src):
                raise ValueError(f"reshape: -3 in {shape} needs two input dimensions at position {i}")
            out.append(src[i] * src[i + 1])
            i += 2
        elif s == -4:
            if j + 2 >= len(shape) or i >= len(src):
                raise ValueError(f"reshape: -4 in {shape} must be followed by two values")
            d1, d2 = shape[j + 1], shape[j + 2]
            if d1 == -1 and d2 == -1:
                raise ValueError("reshape: -4 split cannot infer both sizes")
            if d1 == -1:
                d1 = src[i] // d2
            if d2 == -1:
                d2 = src[i] // d1
            if d1 * d2 != src[i]:
                raise ValueError(f"reshape: -4 split {d1}x{d2} does not match dimension {src[i]}")
            out.extend([d1, d2])
            i += 1
            j += 2
        elif s > 0:
            out.append(s)
            i += 1
        else:
            raise ValueError(f"reshape: invalid value {s} in shape {shape}")
        j += 1
    total = int(np.prod(src)) if src else 1
    if infer >= 0:
        known = int(np.prod([d for k, d in enumerate(out) if k != infer])) if len(out) > 1 else 1
        if known == 0 or total % known != 0:
            raise ValueError(f"reshape: cannot reshape array of shape {src} into shape {shape}")
        out[infer] = total // known
    if int(np.prod(out)) != total:
        raise ValueError(f"reshape: cannot reshape array of shape {src} into shape {shape}")
    return tuple(out)


# ---------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------


def _is_basic_first_axis(key):
    return isinstance(key, slice) and (key.step is None or key.step == 1)


def _basic_index(shape, key):
    """Resolve a basic index (integers, slices, Ellipsis and None, alone or in
    a tuple) against ``shape``.

    Returns ``(begin, end, step, window_shape, result_shape)`` for the
    ``slice`` operator (``end`` entries may be None), or None when ``key``
    uses advanced (array) indexing. Raises IndexError like NumPy."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice)
                or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))):
            return None
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {n_real} were indexed")
    fill = (slice(None),) * (len(shape) - n_real)
    if n_ell:
        i = key.index(Ellipsis)
        key = key[:i] + fill + key[i + 1:]
    else:
        key = key + fill
    begin, end, step, window, result = [], [], [], [], []
    ax = 0
    for k in key:
        if k is None:
            result.append(1)
            continue
        n = shape[ax]
        if isinstance(k, slice):
            b, e, st = k.indices(n)
            length = len(range(b, e, st))
            begin.append(b)
            end.append(None if e < 0 else e)
            step.append(st)
            window.append(length)
            result.append(length)
        else:
            i = int(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
            i %= n
            begin.append(i)
            end.append(i + 1)
            step.append(1)
            window.append(1)
        ax += 1
    return begin, end, step, tuple(window), tuple(result)


def _index_array(k):
    """An integer/boolean index array as NumPy (from a list, NumPy array or
    NDArray), or None for anything else."""
    if isinstance(k, NDArray):
        k = k.asnumpy()
    elif isinstance(k, list):
        k = np.asarray(k)
    if isinstance(k, np.ndarray) and (k.dtype == np.bool_ or np.issubdtype(k.dtype, np.integer)
                                      or np.issubdtype(k.dtype, np.floating)):
        return k
    return None


def _advanced_index(shape, key):
    """For advanced keys made only of integer arrays, integers and boolean
    masks (no slices): the (M, Y...) int64 indices for gather_nd /
    _scatter_set_nd (Y = (1,) when every index is a scalar) and NumPy's
    result shape; None otherwise."""
    parts = key if isinstance(key, tuple) else (key,)
    arrays = []
    has_array = False
    for k in parts:
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            arrays.append(np.asarray(k, dtype=np.int64))
            continue
        a = _index_array(k)
        if a is None:
            return None
        has_array = True
        if a.dtype == np.bool_:
            arrays.extend(np.nonzero(a))
        else:
            if np.issubdtype(a.dtype, np.floating):
                a = a.astype(np.int64)
            arrays.append(a.astype(np.int64, copy=False))
    if not has_array:
        return None
    if len(arrays) > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {len(arrays)} were indexed")
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(a.shape) for a in arrays)) from None
    for ax, a in enumerate(arrays):
        n = shape[ax]
        if a.size and (a.min() < -n or a.max() >= n):
            bad = a[(a < -n) | (a >= n)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
    idx = np.stack(arrays)
    if idx.ndim == 1:  # scalar index arrays select one row
        idx = idx.reshape(len(arrays), 1)
    return idx, tuple(arrays[0].shape) + tuple(shape[len(arrays):])


def _mixed_index(shape, key):
    """For a tuple key of integers, slices and integer/boolean arrays (at
    least one array and one slice; no Ellipsis or None): the (M, S...) int64
    indices for gather_nd over the first M axes and the result shape
    (S + the unindexed trailing axes), as NumPy orders them: the broadcast
    array dimensions replace the advanced axes when those are adjacent,
    else they come first. None for other keys."""
    if not isinstance(key, tuple) or len(key) > len(shape):
        return None
    adv, slices = {}, {}
    for ax, k in enumerate(key):
        if isinstance(k, slice):
            slices[ax] = np.arange(*k.indices(shape[ax]), dtype=np.int64)
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            adv[ax] = np.asarray(k, dtype=np.int64)
            continue
        a = _index_array(k)
        if a is None or a.dtype == np.bool_ and a.ndim != 1:
            return None
        if a.dtype == np.bool_:
            if a.shape[0] != shape[ax]:
                raise IndexError(f"boolean index did not match indexed array along axis {ax}; "
                                 f"size of axis is {shape[ax]} but size of boolean index is {a.shape[0]}")
            a = np.nonzero(a)[0]
        adv[ax] = a.astype(np.int64)
    if not slices or not any(np.ndim(a) > 0 for a in adv.values()):
        return None
    try:
        arrs = np.broadcast_arrays(*adv.values())
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(np.shape(a)) for a in adv.values())) from None
    for ax, a in zip(adv, arrs):
        n = shape[ax]
        if a.size and (a.min() < -n or a.max() >= n):
            bad = a[(a < -n) | (a >= n)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
    bshape = arrs[0].shape
    axes = sorted(adv)
    adjacent = axes == list(range(axes[0], axes[-1] + 1))
    # the result's dimensions over the indexed axes: ("b", None) stands for
    # the broadcast dimensions, ("s", ax) for a slice's
    order = []
    for ax in range(len(key)):
        if ax in slices:
            order.append(("s", ax))
        elif ax == axes[0]:
            order.append(("b", None))
    if not adjacent:
        order.remove(("b", None))
        order.insert(0, ("b", None))
    sshape = []
    for kind, ax in order:
        sshape.extend(bshape if kind == "b" else (len(slices[ax]),))
    nb = len(bshape)
    idx = []
    for ax in range(len(key)):
        view = [1] * len(sshape)
        pos = 0
        for kind, sax in order:
            if kind == "b":
                if ax in adv:
                    view[pos:pos + nb] = bshape
                    a = arrs[axes.index(ax)]
                pos += nb
            else:
                if sax == ax:
                    view[pos] = len(slices[ax])
                    a = slices[ax]
                pos += 1
        a = np.where(a < 0, a + shape[ax], a) if ax in adv else a
        idx.append(np.broadcast_to(a.reshape(view), sshape))
    idx = np.stack(idx)
    return idx, tuple(sshape) + tuple(shape[len(key):])


def _unfold_key(shape, key):
    """For a tuple key with index arrays and Ellipsis or None: the key
    without them, over a reshaped array. Ellipsis becomes full slices; each
    None becomes a full slice over a size-1 axis inserted there (a reshape
    view), which is how NumPy places it, including between index arrays.
    Returns (new_shape, new_key), or None for other keys."""
    if not isinstance(key, tuple) or not any(k is None or k is Ellipsis for k in key):
        return None
    arrays = [_index_array(k) for k in key]
    if not any(a is not None for a in arrays):
        return None

    def width(k, a):
        if k is None or k is Ellipsis:
            return 0
        if a is not None and a.dtype == np.bool_:
            return max(a.ndim, 1)
        return 1

    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(width(k, a) for k, a in zip(key, arrays))
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
    new_shape, new_key, ax = [], [], 0
    for k, a in zip(key, arrays):
        if k is Ellipsis:
            for _ in range(len(shape) - used):
                new_shape.append(shape[ax])
                new_key.append(slice(None))
                ax += 1
        elif k is None:
            new_shape.append(1)
            new_key.append(slice(None))
        else:
            for _ in range(width(k, a)):
                new_shape.append(shape[ax])
                ax += 1
            new_key.append(k)
    new_shape.extend(shape[ax:])
    return tuple(new_shape), tuple(new_key)


def _contiguous_view(self, begin, end, step, window, result):
    """The basic index (begin, end, step) as a view of ``self`` when it selects one contiguous
    run of elements (NumPy's rule), else None."""
    if not result or 0 in window or (self._has_ag and _native.is_recording()):
        return None
    slcs = tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))
    if not NDArray._basic_indexing_slice_is_contiguous(slcs, self.shape):
        return None
    off = 0
    stride = 1
    for slc, n in zip(reversed(slcs), reversed(self.shape)):
        off += slc.indices(n)[0] * stride
        stride *= n
    count = int(np.prod(window))
    return self._reshape_view((self.size,))._slice(off, off + count)._reshape_view(tuple(result))


def _tuples_as_lists(key):
    """Inside an index tuple a tuple element is an integer-array index (NumPy): make it a list."""
    if isinstance(key, tuple) and any(isinstance(k, tuple) for k in key):
        return tuple(list(k) if isinstance(k, tuple) else k for k in key)
    return key


def _getitem(self, key):
    key = _tuples_as_lists(key)
    if isinstance(key, integer_types) and not isinstance(key, bool):
        if self.ndim == 0:
            raise IndexError("too many indices for a 0-d array")
        if self._has_ag and _native.is_recording():
            n = self.shape[0]
            i = int(key)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis 0 with size {n}")
            i %= n
            r = _invoke1("slice_axis", [self], {"axis": 0, "begin": i, "end": i + 1})
            return r if self.ndim == 1 else _invoke1("Reshape", [r], {"shape": self.shape[1:]})
        if self.ndim == 1:
            return self._at_index(int(key)).reshape((1,))
        return self._at_index(int(key))
    if _is_basic_first_axis(key) and self.ndim > 0 and self._has_ag and _native.is_recording():
        start, stop, _ = key.indices(self.shape[0])
        return _invoke1("slice_axis", [self], {"axis": 0, "begin": start, "end": max(stop, start)})
    if _is_basic_first_axis(key) and self.ndim > 0:
        start, stop, _ = key.indices(self.shape[0])
        stop = max(stop, start)
        return self._slice(start, stop)
    if isinstance(key, tuple) and len(key) == 1:
        return _getitem(self, key[0])
    if isinstance(key, NDArray):
        key = key.asnumpy()
        if key.dtype == np.bool_:
            key = np.nonzero(key)[0]
        return _invoke1("take", [self, array(key, ctx=self.context, dtype="int64")], {"axis": 0, "mode": "raise"})
    if isinstance(key, (list, np.ndarray)):
        idx = np.asarray(key)
        if idx.dtype == np.bool_:
            idx = np.nonzero(idx)[0]
        if np.issubdtype(idx.dtype, np.integer):
            return _invoke1("take", [self, array(idx, ctx=self.context, dtype="int64")], {"axis": 0, "mode": "raise"})
    # Other basic indexing (steps, several axes, Ellipsis, None): as in MXNet, a view sharing
    # this array's memory when the selected elements are one contiguous run (and autograd is
    # not recording through it), else the slice operator (a copy; differentiable), then the
    # result shape.
    basic = _basic_index(self.shape, key)
    if basic is not None:
        begin, end, step, window, result = basic
        view = _contiguous_view(self, begin, end, step, window, result)
        if view is not None:
            return view
        r = _invoke1("slice", [self], {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
        return r if window == result else _invoke1("Reshape", [r], {"shape": result})
    # Integer arrays / masks (no slices): gather_nd on the device.
    adv = _advanced_index(self.shape, key)
    if adv is not None:
        idx, result = adv
        r = _invoke1("gather_nd", [self, array(idx, ctx=self.context, dtype="int64")])
        return r if r.shape == result else r.reshape(result or (1,))
    # Integer arrays mixed with slices: gather_nd with the slices expanded
    # into index ranges (NumPy's placement of the broadcast dimensions).
    mixed = _mixed_index(self.shape, key)
    if mixed is not None:
        idx, result = mixed
        if idx[0].size == 0:
            return _from_numpy_any(np.zeros(result, dtype=self._dtype_name), self.context)
        r = _invoke1("gather_nd", [self, array(idx.reshape(idx.shape[0], -1), ctx=self.context, dtype="int64")])
        return r.reshape(result)
    # Ellipsis / None among index arrays: the same key without them over a
    # reshaped view (on the device and differentiable when it is a mixed or
    # advanced key there).
    unfolded = _unfold_key(self.shape, key)
    if unfolded is not None:
        new_shape, new_key = unfolded
        if self._has_ag and _native.is_recording():
            view = _invoke1("Reshape", [self], {"shape": new_shape})
        else:
            view = self.reshape(new_shape)
        return _getitem(view, new_key)
    # Anything else (multi-dimensional boolean masks with slices): computed
    # on a host copy (exact NumPy semantics), then returned as a new array.
    res = self.asnumpy()[key]
    if not isinstance(res, np.ndarray):
        res = np.array([res], dtype=self._dtype_name)
    return _from_numpy_any(res, self.context)


def _drop_leading_ones(shape, ndim):
    """``shape`` without leading length-1 axes beyond ``ndim`` axes (None if they are not 1)."""
    extra = len(shape) - ndim
    if extra <= 0:
        return tuple(shape)
    if any(d != 1 for d in shape[:extra]):
        return None
    return tuple(shape[extra:])


def _fill_view(view, value):
    if isinstance(value, NDArray):
        if value.ndim > view.ndim:
            s = _drop_leading_ones(value.shape, view.ndim)
            if s is None:
                raise ValueError(f"__setitem__: could not broadcast input array from shape {value.shape} "
                                 f"into shape {view.shape}")
            value = value.reshape(s) if s else value.reshape((1,)).reshape(())
        if value.shape != view.shape:
            value = _invoke1("broadcast_to", [value], {"shape": view.shape})
        if value._dtype_name != view._dtype_name:
            _invoke1("Cast", [value], {"dtype": view._dtype_name}, out=view)
        else:
            _invoke1("_copy", [value], out=view)
    elif isinstance(value, numeric_types) or isinstance(value, np.generic):
        imperative_invoke(
            "_full", [], {"shape": view.shape, "dtype": view._dtype_name, "value": float(value)}, out=view,
            ctx=view.context,
        )
    else:
        v = np.asarray(value, dtype=view._dtype_name)
        if v.ndim > view.ndim:
            s = _drop_leading_ones(v.shape, view.ndim)
            if s is None:
                raise ValueError(f"__setitem__: could not broadcast input array from shape {v.shape} "
                                 f"into shape {view.shape}")
            v = v.reshape(s)
        src = np.broadcast_to(v, view.shape)
        view._write_from(np.ascontiguousarray(src))


def _setitem_value(self, value, result):
    """``value`` (NDArray, NumPy array, list) as an NDArray of this array's
    dtype broadcast, with NumPy's rules, to the indexed ``result`` shape
    (shape (1,) when ``result`` is ())."""
    if not isinstance(value, NDArray):
        value = array(np.asarray(value, dtype=self._dtype_name), ctx=self.context, dtype=self._dtype_name)
    elif value._dtype_name != self._dtype_name:
        value = value.astype(self._dtype_name)
    if value.shape == result:
        return value
    try:
        bs = np.broadcast_shapes(value.shape, result)
    except ValueError:
        bs = None
    lead = len(bs) - len(result) if bs is not None else 0
    if bs is None or bs[lead:] != result or any(d != 1 for d in bs[:lead]):
        raise ValueError(f"__setitem__: could not broadcast input array from shape {value.shape} into shape {result}")
    if not result:
        return value.reshape((1,))
    if value.ndim > len(result):
        value = value.reshape(value.shape[value.ndim - len(result):])
    if value.shape == result:
        return value
    return _invoke1("broadcast_to", [value.reshape((1,) * (len(result) - value.ndim) + value.shape)], {"shape": result})


def _whole_key(key):
    return key is None or key is Ellipsis or (isinstance(key, slice) and key == slice(None))


def _setitem(self, key, value):
    key = _tuples_as_lists(key)
    # As MXNet: writing part of an array in place cannot be differentiated, so under recording
    # it is an error when the array or the value takes part in autograd.
    if _native.is_recording() and not _whole_key(key) and (
            self._has_ag or (isinstance(value, NDArray) and value._has_ag)):
        raise MXNetError(
            "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with autograd "
            f"(__setitem__ with key {key!r} on an array of shape {self.shape})")
    if key is None:
        _fill_view(self, value)
        return
    if isinstance(key, slice) and key == slice(None):
        _fill_view(self, value)
        return
    if key is Ellipsis:
        _fill_view(self, value)
        return
    if isinstance(key, integer_types) and not isinstance(key, bool) and self.ndim > 0:
        _fill_view(self._at_index(int(key)), value)
        return
    if _is_basic_first_axis(key) and self.ndim > 0:
        start, stop, _ = key.indices(self.shape[0])
        if stop > start:
            _fill_view(self._slice(start, stop), value)
        return
    basic = _basic_index(self.shape, key)
    if basic is not None:
        begin, end, step, window, result = basic
        if 0 in window:
            return
        attrs = {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)}
        if isinstance(value, numeric_types) or isinstance(value, np.generic):
            attrs["scalar"] = float(value)
            _invoke1("_slice_assign_scalar", [self], attrs, out=self)
            return
        value = _setitem_value(self, value, result)
        if value.shape != window:
            value = value.reshape(window)
        _invoke1("_slice_assign", [self, value], attrs, out=self)
        return
    adv = _advanced_index(self.shape, key)
    if adv is not None:
        idx, result = adv
        rows = idx.shape[1:] + tuple(self.shape[idx.shape[0]:])
        v = _setitem_value(self, value, result)
        v = v.reshape(rows)
        _invoke1("_scatter_set_nd", [self, v, array(idx, ctx=self.context, dtype="int64")], out=self)
        return
    mixed = _mixed_index(self.shape, key)
    if mixed is not None:
        idx, result = mixed
        if idx[0].size == 0:
            _setitem_value(self, value, result)  # still checks the value's shape
            return
        v = _setitem_value(self, value, result)
        v = v.reshape((idx[0].size,) + tuple(self.shape[idx.shape[0]:]))
        flat = idx.reshape(idx.shape[0], -1)
        _invoke1("_scatter_set_nd", [self, v, array(flat, ctx=self.context, dtype="int64")], out=self)
        return
    # Ellipsis / None among index arrays: the same key without them over a
    # reshaped view sharing this array's storage.
    unfolded = _unfold_key(self.shape, key)
    if unfolded is not None:
        _setitem(self.reshape(unfolded[0]), unfolded[1], value)
        return
    # Anything else (multi-dimensional boolean masks with slices): NumPy
    # semantics on a host copy, written back.
    host = self.asnumpy()
    if isinstance(value, NDArray):
        value = value.asnumpy()
    if isinstance(key, NDArray):
        key = key.asnumpy()
        if not key.dtype == np.bool_:
            key = key.astype(np.int64)
    host[key] = value
    self._write_from(np.ascontiguousarray(host))


def _attach_methods():
    for name, val in _Methods.__dict__.items():
        if name in ("__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"):
            continue
        setattr(NDArray, name, val)
    # Operator methods: x.sum(axis=1) == mx.nd.sum(x, axis=1).
    for meth, opname in _METHOD_OPS.items():
        setattr(NDArray, meth, _make_method(opname))
    # Python 2 spellings MXNet still defines.
    NDArray.__div__ = NDArray.__truediv__
    NDArray.__rdiv__ = NDArray.__rtruediv__


def _make_method(opname):
    def method(self, *args, **kwargs):
        from . import op

        return getattr(op, opname)(self, *args, **kwargs)

    method.__name__ = opname
    method.__doc__ = f"Same as ``mx.nd.{opname}(self, ...)``."
    return method


_METHOD_OPS = {
    n: n
    for n in [
        "sum", "mean", "prod", "max", "min", "nansum", "nanprod", "norm", "argmax", "argmin", "exp", "log",
        "log1p", "expm1", "log2", "log10", "sqrt", "rsqrt", "cbrt", "square", "reciprocal", "abs", "sign", "sin",
        "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
        "sigmoid", "relu", "softsign", "floor", "ceil", "round", "rint", "fix", "trunc", "clip", "transpose",
        "swapaxes", "tile", "repeat", "flip", "slice", "slice_axis",
        "take", "pick", "one_hot", "sort", "argsort", "topk", "split", "broadcast_to", "broadcast_like",
        "broadcast_axes", "zeros_like", "ones_like", "degrees", "radians", "softmax", "log_softmax", "diag",
        "dot", "batch_dot", "reverse", "slice_like", "erf", "rcbrt", "shape_array", "size_array", "softmin",
        "pad",
    ]
}

_attach_methods()
