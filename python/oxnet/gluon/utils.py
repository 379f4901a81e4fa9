"""Gluon utilities (``mx.gluon.utils``): splitting batches across contexts,
global-norm gradient clipping, SHA-1 checks and cached downloads."""
from __future__ import annotations

import hashlib
import os
import uuid
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from .. import ndarray
from ..base import MXNetError

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split ``data`` (an NDArray) into ``num_slice`` slices along ``batch_axis``.

    With ``even_split=True`` a batch size that ``num_slice`` does not divide
    raises ValueError; otherwise the first slices get one extra element.
    Returns a list of NDArrays (a list even when ``num_slice`` is 1).
    """
    if num_slice < 1:
        raise ValueError(f"split_data: num_slice must be >= 1, got {num_slice}")
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            "data with shape %s cannot be evenly split into %d slices along axis %d. "
            "Use a batch size that's multiple of %d or set even_split=False to allow "
            "uneven partitioning of data." % (str(data.shape), num_slice, batch_axis, num_slice)
        )
    if size < num_slice:
        raise ValueError(
            f"split_data: cannot split {size} element(s) along axis {batch_axis} of shape {data.shape} "
            f"into {num_slice} slices"
        )
    step, extra = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + step + (1 if i < extra else 0))
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    return [
        ndarray.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1]) for i in range(num_slice)
    ]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` (NDArray or array-like) into ``len(ctx_list)`` slices
    along ``batch_axis`` and copy slice i to ``ctx_list[i]``. Returns a list
    of NDArrays, one per context."""
    if not isinstance(data, ndarray.NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(c) for s, c in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale the NDArrays in ``arrays`` in place so that the 2-norm of all
    of them together is at most ``max_norm``.

    Returns the total norm before clipping: a float when ``check_isfinite``
    (which also warns on nan/inf), else an NDArray of shape (1,).
    """
    if len(arrays) == 0:
        raise ValueError("clip_global_norm: arrays must not be empty")
    ctx = arrays[0].context
    squares = [ndarray.dot(a.reshape((-1,)), a.reshape((-1,))).as_in_context(ctx) for a in arrays]
    total = ndarray.sqrt(ndarray.add_n(*squares) if len(squares) > 1 else squares[0])
    if check_isfinite and not np.isfinite(total.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."), stacklevel=2)
    scale = max_norm / (total + 1e-8)
    scale = ndarray.min(ndarray.concat(scale, ndarray.ones((1,), ctx=ctx), dim=0))
    for a in arrays:
        a *= scale.as_in_context(a.context)
    if check_isfinite:
        return total.asscalar()
    return total


def _indent(s_, num_spaces):
    lines = s_.split("\n")
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line for line in lines)


def _brief_print_list(lst, limit=7):
    """Print at most ``limit`` elements of a list (MXNet's error-message form)."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[: limit // 2], limit) + ", ..., " + _brief_print_list(lst[-limit // 2:], limit)
    return ", ".join(["'%s'" % str(i) for i in lst])


def shape_is_known(shape):
    """True when ``shape`` is given and has no unknown (0 or -1) dimension."""
    if shape is None:
        return False
    if len(shape) == 0:
        return True
    return all(d > 0 for d in shape)


def check_sha1(filename, sha1_hash):
    """True when the SHA-1 of the file ``filename`` equals ``sha1_hash`` (the
    full 40-digit hex digest, or a prefix of it as MXNet's model store uses)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            sha1.update(chunk)
    digest = sha1.hexdigest()
    n = min(len(digest), len(sha1_hash))
    return digest[:n] == sha1_hash[:n] and n > 0


def replace_file(src, dst):
    """Atomically move ``src`` to ``dst``, replacing ``dst`` if it exists."""
    os.replace(src, dst)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download ``url`` to ``path`` (a file or a directory; default: the
    current directory, file named after the URL) and return the file name.

    A file already at the destination is kept when ``overwrite`` is False and
    (if ``sha1_hash`` is given) its hash matches. Otherwise the file is fetched
    with ``urllib``; without network access an MXNetError says which file to
    put where (and with which SHA-1).
    """
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise ValueError(f"download: cannot infer a file name from url {url!r}; pass path")
    else:
        path = os.path.expanduser(path)
        if os.path.isdir(path):
            fname = os.path.join(path, url.split("/")[-1])
        else:
            fname = path
    if retries < 0:
        raise ValueError("download: retries must be >= 0")
    if not overwrite and os.path.exists(fname) and (not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    dirname = os.path.dirname(os.path.abspath(os.path.expanduser(fname)))
    os.makedirs(dirname, exist_ok=True)
    import urllib.request

    last_err = None
    for _ in range(retries + 1):
        tmp = "{}.{}".format(fname, uuid.uuid4())
        try:
            ctx = None
            if not verify_ssl:
                import ssl

                ctx = ssl._create_unverified_context()  # noqa: S323 (the user asked for it)
            with urllib.request.urlopen(url, timeout=30, context=ctx) as r, open(tmp, "wb") as f:
                while True:
                    chunk = r.read(1 << 20)
                    if not chunk:
                        break
                    f.write(chunk)
            if sha1_hash and not check_sha1(tmp, sha1_hash):
                os.remove(tmp)
                raise MXNetError(
                    f"download: file {fname} downloaded from {url} has the wrong SHA-1 (expected {sha1_hash})"
                )
            replace_file(tmp, fname)
            return fname
        except MXNetError:
            raise
        except Exception as e:  # noqa: BLE001 (network errors of any kind)
            last_err = e
            if os.path.exists(tmp):
                os.remove(tmp)
    raise MXNetError(
        f"download: could not fetch {url} ({last_err}). Without network access, place the file at "
        f"{os.path.abspath(fname)}" + (f" (SHA-1 {sha1_hash})" if sha1_hash else "")
    )


class HookHandle:
    """A handle returned by ``register_forward_hook`` and friends;
    ``detach()`` removes the hook. Usable as a context manager."""

    _next_id = [0]

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Add ``hook`` to ``hooks_dict`` under a fresh id (once per handle)."""
        if self._hooks_dict_ref is not None:
            raise RuntimeError("The same handle cannot be attached twice")
        self._id = HookHandle._next_id[0]
        HookHandle._next_id[0] += 1
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Remove the hook (no effect when already removed)."""
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks is not None and self._id in hooks:
            del hooks[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None, self._id)

    def __setstate__(self, state):
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
