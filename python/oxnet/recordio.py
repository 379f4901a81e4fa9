"""Read and write MXNet's RecordIO format (``mx.recordio``), byte-compatible
with files written by Apache MXNet 1.9.1.

The file IO runs in Rust with the GIL released. ``pack``/``unpack`` use the
``IfQQ`` image-record header of MXNet. ``pack_img`` writes PNG through a Rust
encoder; JPEG encoding needs the optional Pillow package.
"""

from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from . import _native
from . import base as _base

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img"]


def _pid():
    return os.getpid()


class MXRecordIO(object):
    """Reads/writes a RecordIO file sequentially.

    Parameters
    ----------
    uri : str
        Path to the record file.
    flag : str
        'w' for write or 'r' for read.

    Examples
    --------
    >>> record = mx.recordio.MXRecordIO('tmp.rec', 'w')
    >>> for i in range(5):
    ...     record.write(b'record_%d' % i)
    >>> record.close()
    >>> record = mx.recordio.MXRecordIO('tmp.rec', 'r')
    >>> record.read()
    b'record_0'
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.handle = None
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.open()

    def open(self):
        """Opens the record file (truncating it in 'w' mode)."""
        if self.flag == "w":
            self.handle = _native.RecordWriter(self.uri)
            self.writable = True
        elif self.flag == "r":
            self.handle = _native.RecordReader(self.uri)
            self.writable = False
        else:
            raise ValueError("Invalid flag %s" % self.flag)
        self.pid = _pid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass

    def __getstate__(self):
        """Pickle the path, mode and open state (the file is reopened on load)."""
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        del d["handle"]
        return d

    def __setstate__(self, d):
        """Restore from a pickle, reopening the file if it was open."""
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """Reopen in a new process (readers) or refuse (writers)."""
        if not self.pid == _pid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self):
        """Closes the record file (flushing it in 'w' mode)."""
        if not self.is_open:
            return
        self.handle.close()
        self.is_open = False
        self.pid = None

    def reset(self):
        """Back to the first record; in 'w' mode this truncates the file."""
        self.close()
        self.open()

    def _check_open(self):
        if not self.is_open:
            raise ValueError("MXRecordIO: %s is closed" % self.uri)

    def write(self, buf):
        """Append ``buf`` (bytes-like) as one record."""
        assert self.writable
        self._check_open()
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            buf = buf.encode("utf-8")
        self.handle.write(bytes(buf))

    def read(self):
        """The next record as bytes, or None at the end of the file."""
        assert not self.writable
        self._check_open()
        self._check_pid(allow_reset=False)
        return self.handle.read()

    def tell(self):
        """Byte offset of the next record to read or write."""
        self._check_open()
        return self.handle.tell()


class MXIndexedRecordIO(MXRecordIO):
    """Reads/writes a RecordIO file with an index file for random access.

    Parameters
    ----------
    idx_path : str
        Path to the index file (lines ``key\\toffset``).
    uri : str
        Path to the record file.
    flag : str
        'w' for write or 'r' for read.
    key_type : type
        Type of the keys (default int).

    Examples
    --------
    >>> record = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'w')
    >>> for i in range(5):
    ...     record.write_idx(i, b'record_%d' % i)
    >>> record.close()
    >>> record = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'r')
    >>> record.read_idx(3)
    b'record_3'
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super(MXIndexedRecordIO, self).__init__(uri, flag)

    def open(self):
        """Opens the record and index files (reading the index in 'r' mode)."""
        super(MXIndexedRecordIO, self).open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            for n, line in enumerate(iter(self.fidx.readline, "")):
                parts = line.strip().split("\t")
                if parts == [""]:
                    continue
                if len(parts) < 2:
                    raise ValueError(
                        "MXIndexedRecordIO: line %d of index %s is %r, expected 'key<TAB>offset'"
                        % (n + 1, self.idx_path, line.rstrip("\n"))
                    )
                key = self.key_type(parts[0])
                self.idx[key] = int(parts[1])
                self.keys.append(key)

    def close(self):
        """Closes the record and index files."""
        if not self.is_open:
            return
        super(MXIndexedRecordIO, self).close()
        self.fidx.close()

    def __getstate__(self):
        """Pickle without the open index file."""
        d = super(MXIndexedRecordIO, self).__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Move the read position to the record stored under key ``idx``."""
        assert not self.writable
        self._check_open()
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError("MXIndexedRecordIO: key %r is not in the index %s" % (idx, self.idx_path))
        pos = self.idx[idx]
        if pos < 0:
            raise _base.MXIOError(
                "MXIndexedRecordIO: key %r has the negative offset %d in the index %s" % (idx, pos, self.idx_path)
            )
        self.handle.seek(pos)

    def tell(self):
        """The current position of the write head (bytes)."""
        assert self.writable
        self._check_open()
        return self.handle.tell()

    def read_idx(self, idx):
        """The record stored under key ``idx`` (bytes). Raises KeyError for a
        key the index lacks and MXIOError when its offset is negative or
        holds no record (at or past the end of the file)."""
        self.seek(idx)
        rec = self.read()
        if rec is None:
            size = os.path.getsize(self.uri) if os.path.exists(self.uri) else -1
            raise _base.MXIOError(
                "MXIndexedRecordIO: key %r points at offset %d of %s (%d bytes), where no record starts "
                "(the end of the file: is the index %s for another file?)"
                % (idx, self.idx[idx], self.uri, size, self.idx_path)
            )
        return rec

    def write_idx(self, idx, buf):
        """Append ``buf`` as a record and index it under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
"""Header of an image record: flag (int; the number of float labels when the
label is an array), label (float or array of float), id (int), id2 (int)."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Pack bytes ``s`` behind an ``IRHeader`` into an image record (bytes).

    A scalar label is stored in the header (flag 0); an array label sets
    flag to its length, label to 0 and puts the float32 labels before ``s``.
    """
    header = IRHeader(*header)
    if isinstance(s, str):
        s = s.encode("utf-8")
    s = bytes(s)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """Split an image record into (IRHeader, payload bytes).

    The label is a float for flag 0, else a float32 NumPy array of ``flag``
    values.
    """
    if len(s) < _IR_SIZE:
        raise ValueError("recordio.unpack: the record has %d bytes, fewer than the %d-byte header" % (len(s), _IR_SIZE))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < header.flag * 4:
            raise ValueError(
                "recordio.unpack: header flag %d announces %d float labels but only %d bytes follow"
                % (header.flag, header.flag, len(s))
            )
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4 :]
    return header, s


def _stored_channels(buf):
    """Channels stored in JPEG or PNG bytes (1 gray, 2 gray+alpha, 3 color,
    4 color+alpha), or None when the header cannot be read."""
    b = bytes(buf[:1 << 16])
    if b[:8] == b"\x89PNG\r\n\x1a\n" and len(b) >= 26:
        return {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}.get(b[25])
    if b[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(b):
            if b[i] != 0xFF:
                return None
            marker = b[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                return b[i + 9]
            i += 2 + int.from_bytes(b[i + 2:i + 4], "big")
    return None


def unpack_img(s, iscolor=-1):
    """Unpack an image record into (IRHeader, image as a NumPy uint8 array).

    The image is in OpenCV's layout, as MXNet returns it: (h, w, 3) in BGR
    order for ``iscolor`` 1, (h, w) for ``iscolor`` 0 (grayscale), and for
    -1 (OpenCV's "unchanged") (h, w) when the stored image is grayscale,
    (h, w, 3) BGR otherwise. Images with an alpha channel raise ValueError
    with -1 (the alpha plane is not decoded).
    """
    header, s = unpack(s)
    if iscolor not in (-1, 0, 1):
        raise ValueError("unpack_img: iscolor=%r is not supported (-1, 0 or 1)" % (iscolor,))
    if iscolor == -1:
        ch = _stored_channels(s)
        if ch in (2, 4):
            raise ValueError("unpack_img: iscolor=-1 keeps an alpha channel, which oxnet does not decode; "
                             "pass iscolor=1 (BGR) or 0 (gray)")
        if ch == 1:
            iscolor = 0
    flag = 0 if iscolor == 0 else 1
    img = _native.imdecode_array(bytes(s), flag, False)
    if flag == 0:
        img = np.ascontiguousarray(img[:, :, 0])
    return header, img


def _encode_image(img, quality, img_fmt):
    """Encode a (h, w[, c]) uint8 BGR image as .jpg or .png bytes."""
    img = np.ascontiguousarray(img)
    if img.dtype != np.uint8:
        raise TypeError("pack_img: the image must be uint8, got %s" % img.dtype)
    if img.ndim == 2:
        rgb = img[:, :, None]
    elif img.ndim == 3 and img.shape[2] in (1, 3, 4):
        rgb = img.copy()
        if img.shape[2] >= 3:
            rgb[:, :, [0, 2]] = img[:, :, [2, 0]]  # BGR(A) -> RGB(A)
    else:
        raise ValueError("pack_img: expected an image of shape (h, w) or (h, w, 1/3/4), got %s" % (img.shape,))
    fmt = img_fmt.upper()
    if fmt == ".PNG":
        return _native.encode_png(rgb.tobytes(), rgb.shape)
    if fmt in (".JPG", ".JPEG"):
        try:
            from PIL import Image
        except ImportError as e:
            raise ImportError(
                "pack_img: JPEG encoding needs Pillow (pip install pillow); img_fmt='.png' works without it"
            ) from e
        import io as _io

        if rgb.shape[2] == 4:
            rgb = rgb[:, :, :3]
        mode_img = Image.fromarray(rgb[:, :, 0] if rgb.shape[2] == 1 else np.ascontiguousarray(rgb))
        buf = _io.BytesIO()
        mode_img.save(buf, format="JPEG", quality=int(quality))
        return buf.getvalue()
    raise ValueError("pack_img: img_fmt %r is not supported ('.jpg', '.jpeg' or '.png')" % (img_fmt,))


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encode a NumPy uint8 image (OpenCV layout: (h, w) or (h, w, 3) BGR)
    and pack it behind ``header`` (bytes).

    ``img_fmt`` is '.jpg' (``quality`` 1-100; needs Pillow) or '.png'
    (lossless; ``quality`` is the compression level and does not change
    the pixels).
    """
    return pack(header, _encode_image(img, quality, img_fmt))
