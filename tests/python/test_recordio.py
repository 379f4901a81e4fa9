"""mx.recordio against files written by real MXNet 1.9.1 (tests/data/golden,
made by make_golden.py), both ways, plus corrupt and random input."""

import json
import os
import pickle
import random

import numpy as np
import pytest

import oxnet as mx
from iotest import IMAGES, _drain_engine_errors  # noqa: F401  (autouse fixture)


GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden")
EXP = json.load(open(os.path.join(GOLDEN, "expected.json")))["recordio"]
REC = os.path.join(GOLDEN, EXP["rec_file"])
IDX = os.path.join(GOLDEN, EXP["idx_file"])


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def payload_of(r):
    if "payload_hex" in r:
        return bytes.fromhex(r["payload_hex"])
    if "payload_equals_file" in r:
        return open(os.path.join(GOLDEN, r["payload_equals_file"]), "rb").read()
    return None


def test_read_mxnet_file_sequential():
    rec = mx.recordio.MXRecordIO(REC, "r")
    got = []
    while True:
        s = rec.read()
        if s is None:
            break
        got.append(s)
    rec.close()
    assert len(got) == len(EXP["records"])
    for s, r in zip(got, EXP["records"]):
        assert len(s) == r["record_len"]
        assert fnv1a64(s) == r["record_fnv1a64"]


def test_read_mxnet_file_indexed_and_unpack():
    rec = mx.recordio.MXIndexedRecordIO(IDX, REC, "r")
    assert rec.keys == [r["key"] for r in EXP["records"]]
    for r in reversed(EXP["records"]):
        assert rec.idx[r["key"]] == r["offset"]
        s = rec.read_idx(r["key"])
        header, payload = mx.recordio.unpack(s)
        assert header.flag == r["flag"]
        assert header.id == r["id"] and header.id2 == r["id2"]
        if isinstance(r["label"], list):
            assert header.label.dtype == np.float32
            assert header.label.tolist() == r["label"]
        else:
            assert header.label == r["label"]
        assert fnv1a64(payload) == r["payload_fnv1a64"]
    rec.close()


def test_write_matches_mxnet_bytes(tmp_path):
    """pack + MXIndexedRecordIO.write_idx give MXNet's exact .rec/.idx bytes
    for every 'pack' record (split records included)."""
    rec_p, idx_p = str(tmp_path / "w.rec"), str(tmp_path / "w.idx")
    golden = open(REC, "rb").read()
    w = mx.recordio.MXIndexedRecordIO(idx_p, rec_p, "w")
    assert w.tell() == 0
    packed = [r for r in EXP["records"] if r["kind"] == "pack"]
    for r in packed:
        h = mx.recordio.IRHeader(0, r["label"], r["id"], r["id2"])
        s = mx.recordio.pack(h, payload_of(r))
        assert fnv1a64(s) == r["record_fnv1a64"]
        assert w.tell() == r["offset"]
        w.write_idx(r["key"], s)
    end = w.tell()
    w.close()
    assert open(rec_p, "rb").read() == golden[:end]
    want_idx = "".join("%d\t%d\n" % (r["key"], r["offset"]) for r in packed)
    assert open(idx_p).read() == want_idx


def test_unpack_img_png_record_matches_mxnet():
    rec = mx.recordio.MXIndexedRecordIO(IDX, REC, "r")
    r = [r for r in EXP["records"] if r["kind"] == "pack_img" and "decoded_bgr" in r][0]
    header, img = mx.recordio.unpack_img(rec.read_idx(r["key"]))
    assert list(img.shape) == r["decoded_shape_hwc"]
    assert img.reshape(-1).tolist() == r["decoded_bgr"]
    gh, gray = mx.recordio.unpack_img(rec.read_idx(r["key"]), iscolor=0)
    assert gray.shape == tuple(r["decoded_shape_hwc"][:2])
    jr = [r for r in EXP["records"] if r["kind"] == "pack_img" and r.get("image_format") == "jpg"][0]
    _, jimg = mx.recordio.unpack_img(rec.read_idx(jr["key"]))
    assert list(jimg.shape) == jr["decoded_shape_hwc"]
    # JPEG decoders differ by rounding only
    np.testing.assert_allclose(jimg.reshape(-1, 3).mean(0), jr["decoded_mean_bgr"], atol=1.0)
    rec.close()


def test_pack_img_png_roundtrip(tmp_path):
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, size=(13, 17, 3)).astype(np.uint8)
    s = mx.recordio.pack_img(mx.recordio.IRHeader(0, [1.0, 2.0], 5, 0), img, quality=3, img_fmt=".png")
    h, back = mx.recordio.unpack_img(s)
    assert h.flag == 2 and h.label.tolist() == [1.0, 2.0] and h.id == 5
    np.testing.assert_array_equal(back, img)  # BGR in, BGR out
    g = rng.randint(0, 256, size=(9, 4)).astype(np.uint8)
    _, gback = mx.recordio.unpack_img(mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), g, img_fmt=".png"), 0)
    np.testing.assert_array_equal(gback, g)
    with pytest.raises(ValueError, match="img_fmt"):
        mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img, img_fmt=".bmp")


def test_pack_img_jpeg_needs_pillow_or_works():
    img = np.zeros((8, 8, 3), np.uint8)
    try:
        import PIL  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="Pillow"):
            mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img)
        return
    s = mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img + 100, quality=95)
    _, back = mx.recordio.unpack_img(s)
    assert np.abs(back.astype(int) - 100).max() <= 2


def test_sequential_write_read_reset_tell(tmp_path):
    p = str(tmp_path / "s.rec")
    w = mx.recordio.MXRecordIO(p, "w")
    for i in range(5):
        w.write(b"record_%d" % i)
    w.close()
    r = mx.recordio.MXRecordIO(p, "r")
    assert r.read() == b"record_0"
    assert r.read() == b"record_1"
    r.reset()
    assert r.read() == b"record_0"
    assert r.tell() == 16
    r.close()
    # reset in write mode truncates
    w = mx.recordio.MXRecordIO(p, "w")
    w.write(b"x")
    w.reset()
    w.close()
    assert os.path.getsize(p) == 0
    with pytest.raises(ValueError, match="Invalid flag"):
        mx.recordio.MXRecordIO(p, "a")


def test_indexed_tell_and_keys(tmp_path):
    idx, rec = str(tmp_path / "t.idx"), str(tmp_path / "t.rec")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    tells = []
    for i in range(5):
        w.write_idx(i, b"record_%d" % i)
        tells.append(w.tell())
    w.close()
    assert tells == [16, 32, 48, 64, 80]  # MXNet's documented example
    r = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == [0, 1, 2, 3, 4]
    assert r.read_idx(3) == b"record_3"
    assert r.read() == b"record_4"
    with pytest.raises(KeyError):
        r.read_idx(9)
    r.close()
    r = mx.recordio.MXIndexedRecordIO(idx, rec, "r", key_type=str)
    assert r.keys == ["0", "1", "2", "3", "4"]
    assert r.read_idx("2") == b"record_2"


def test_pickle_reopens(tmp_path):
    idx, rec = str(tmp_path / "p.idx"), str(tmp_path / "p.rec")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(3):
        w.write_idx(i, b"r%d" % i)
    w.close()
    r = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.is_open and r2.read_idx(2) == b"r2"
    r.close()
    r3 = pickle.loads(pickle.dumps(r))
    assert not r3.is_open
    s = mx.recordio.MXRecordIO(rec, "r")
    s2 = pickle.loads(pickle.dumps(s))
    assert s2.read() == b"r0"


def test_truncated_and_corrupt_files_name_file_and_offset(tmp_path):
    golden = open(REC, "rb").read()
    p = str(tmp_path / "trunc.rec")
    open(p, "wb").write(golden[:50])  # record 1 (at 48) cut inside its header
    r = mx.recordio.MXRecordIO(p, "r")
    assert r.read() is not None
    with pytest.raises(mx.base.MXNetError, match=r"trunc\.rec.*truncated.*byte 48"):
        r.read()
    bad = bytearray(golden[:104])
    bad[48] ^= 0xFF  # magic of record 1
    p2 = str(tmp_path / "bad.rec")
    open(p2, "wb").write(bytes(bad))
    r = mx.recordio.MXRecordIO(p2, "r")
    r.read()
    with pytest.raises(mx.base.MXNetError, match=r"bad\.rec.*magic.*byte 48"):
        r.read()
    # empty file: no records
    p3 = str(tmp_path / "empty.rec")
    open(p3, "wb").close()
    assert mx.recordio.MXRecordIO(p3, "r").read() is None
    with pytest.raises(IOError, match="missing.rec"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    with pytest.raises(ValueError, match="shorter|fewer"):
        mx.recordio.unpack(b"abc")
    with pytest.raises(ValueError, match="announces"):
        mx.recordio.unpack(mx.recordio.pack(mx.recordio.IRHeader(0, [1.0, 2.0], 0, 0), b"")[:28])


def test_random_bytes_never_crash(tmp_path):
    """Property: random bytes (and random mutations of a real file) give
    records or a clear MXNetError, never a crash or a hang."""
    rng = random.Random(1234)
    golden = open(REC, "rb").read()
    p = str(tmp_path / "fuzz.rec")
    for trial in range(200):
        if trial % 2:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))
            if rng.random() < 0.5:
                data = b"\x0a\x23\xd7\xce" + data
        else:
            data = bytearray(golden[: rng.randint(0, 600)])
            for _ in range(rng.randint(1, 4)):
                if data:
                    data[rng.randrange(len(data))] = rng.getrandbits(8)
            data = bytes(data)
        open(p, "wb").write(data)
        r = mx.recordio.MXRecordIO(p, "r")
        for _ in range(50):
            try:
                s = r.read()
            except mx.base.MXNetError as e:
                assert "fuzz.rec" in str(e)
                break
            if s is None:
                break
        r.close()


def _rgba_png(w, h, rgba):
    """A w x h PNG of one RGBA colour, written with the standard library
    (the tests must not need Pillow)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgba) * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_unpack_img_unchanged_keeps_stored_channels(tmp_path):
    h = mx.recordio.IRHeader(0, 1.0, 0, 0)
    for name, gray in (("camera_gray_512x512.jpg", True), ("hubble_800x600_progressive.jpg", False),
                       ("chelsea_120x80.png", False)):
        with open(os.path.join(IMAGES, name), "rb") as f:
            rec = mx.recordio.pack(h, f.read())
        _, same = mx.recordio.unpack_img(rec, iscolor=-1)
        _, want = mx.recordio.unpack_img(rec, iscolor=0 if gray else 1)
        assert same.shape == want.shape and (same.ndim == 2) == gray, name
        np.testing.assert_array_equal(same, want)
    rec = mx.recordio.pack(h, _rgba_png(4, 3, (1, 2, 3, 4)))
    with pytest.raises(ValueError, match="alpha"):
        mx.recordio.unpack_img(rec, iscolor=-1)
    assert mx.recordio.unpack_img(rec, iscolor=1)[1].shape == (3, 4, 3)
