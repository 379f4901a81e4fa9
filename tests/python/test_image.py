"""mx.image against results of real MXNet 1.9.1 (tests/data/golden_io, made
by tests/data/make_io_golden.py) and Pillow's reference decodes
(tests/data/images/expected.json); bad input; async decode."""

import json
import os
import random

import numpy as np
import pytest

import oxnet as mx


from iotest import ARR, GOLD, HERE, IMAGES, META, _drain_engine_errors  # noqa: F401


def read(name):
    with open(os.path.join(IMAGES, name), "rb") as f:
        return f.read()


def seed(k):
    random.seed(k)
    np.random.seed(k)


def png():
    return mx.image.imdecode(read("chelsea_120x80.png"))


def close(a, b, atol):
    a = a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)
    assert a.shape == b.shape, (a.shape, b.shape)
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    assert d.max() <= atol, "max diff %g > %g" % (d.max(), atol)


def test_imdecode_matches_mxnet_shapes_and_means():
    for name, ref in META["decode"].items():
        buf = read(name)
        rgb = mx.image.imdecode(buf).asnumpy()
        assert list(rgb.shape) == ref["shape"], name
        assert rgb.dtype == np.uint8
        np.testing.assert_allclose(rgb.reshape(-1, 3).mean(0), ref["rgb_mean"], atol=1.0, err_msg=name)
        gray = mx.image.imdecode(buf, flag=0)
        assert list(gray.shape) == ref["gray_shape"], name
        assert abs(gray.asnumpy().mean() - ref["gray_mean"]) < 1.0, name
        bgr = mx.image.imdecode(buf, to_rgb=False).asnumpy()
        assert (bgr[:, :, ::-1] == rgb).all() == ref["bgr_is_reversed_rgb"]


def test_imdecode_png_exact_and_pillow_refs():
    exp = json.load(open(os.path.join(IMAGES, "expected.json")))
    n = exp["n_samples"]
    for name, ref in exp["images"].items():
        a = mx.image.imdecode(read(name)).asnumpy()
        h, w = ref["height"], ref["width"]
        assert a.shape == (h, w, 3)
        got = [a[(k * 7919) % h, (k * 104729) % w] for k in range(n)]
        tol = 0 if name.endswith(".png") else 8
        assert np.abs(np.array(got, int).reshape(-1) - np.array(ref["rgb_samples"])).max() <= tol, name
    np.testing.assert_array_equal(png().asnumpy(), ARR["img"])


def test_imdecode_inputs_and_out():
    buf = read("chelsea_120x80.png")
    want = ARR["img"]
    np.testing.assert_array_equal(mx.image.imdecode(bytearray(buf)).asnumpy(), want)
    np.testing.assert_array_equal(mx.image.imdecode(np.frombuffer(buf, np.uint8)).asnumpy(), want)
    np.testing.assert_array_equal(
        mx.image.imdecode(mx.nd.array(np.frombuffer(buf, np.uint8), dtype="uint8")).asnumpy(), want
    )
    out = mx.nd.zeros((80, 120, 3), dtype="uint8")
    r = mx.image.imdecode(buf, out=out)
    np.testing.assert_array_equal(out.asnumpy(), want)
    assert r.shape == out.shape
    with pytest.raises(ValueError, match="out="):
        mx.image.imdecode(buf, out=mx.nd.zeros((2, 2, 3), dtype="uint8"))
    with pytest.raises(ValueError, match="bytes"):
        mx.image.imdecode("not bytes")
    with pytest.raises(ValueError, match="flag"):
        mx.image.imdecode(buf, flag=3)
    np.testing.assert_array_equal(mx.image.imread(os.path.join(IMAGES, "chelsea_120x80.png")).asnumpy(), want)
    with pytest.raises(IOError, match="nope.jpg"):
        mx.image.imread(os.path.join(IMAGES, "nope.jpg"))


def test_imdecode_returns_at_once_and_decodes_in_parallel():
    bufs = [
        read(n)
        for n in (
            "hubble_800x600_progressive.jpg",
            "astronaut_640x480_restart.jpg",
            "coffee_500x500_422.jpg",
            "retina_160x120_444.jpg",
        )
    ] * 2
    imgs = [mx.image.imdecode(b) for b in bufs]  # pushed to the engine
    serial = [mx.image.imdecode(b).asnumpy() for b in bufs]
    for a, b in zip(imgs, serial):
        np.testing.assert_array_equal(a.asnumpy(), b)


def test_bad_images_raise_clearly_and_engine_goes_on():
    good = read("chelsea_160x107_thumb.jpg")
    # not an image / empty: raise at the call (no header to read)
    with pytest.raises(mx.base.MXNetError, match="neither JPEG nor PNG"):
        mx.image.imdecode(b"hello world, not an image")
    with pytest.raises(mx.base.MXNetError, match="empty"):
        mx.image.imdecode(b"")
    # truncated: the header is fine, the error comes at the wait
    trunc = mx.image.imdecode(good[: len(good) // 2])
    after = mx.image.imdecode(good)
    with pytest.raises(mx.base.MXNetError, match="truncated|invalid"):
        trunc.asnumpy()
    assert after.asnumpy().shape == (107, 160, 3)
    png_buf = read("chelsea_120x80.png")
    with pytest.raises(mx.base.MXNetError, match="PNG"):
        mx.image.imdecode(png_buf[:20])  # cut inside the IHDR chunk
    for cut in (200, len(png_buf) // 2, len(png_buf) - 20):
        bad_png = mx.image.imdecode(png_buf[:cut])
        assert bad_png.shape == (80, 120, 3)
        with pytest.raises(mx.base.MXNetError, match="PNG"):
            bad_png.wait_to_read()
    assert mx.image.imdecode(png_buf).asnumpy().shape == (80, 120, 3)


def test_imdecode_random_bytes_property():
    """Random bytes, and random mutations of real images, never crash: a
    decoded image or a clear MXNetError."""
    rng = random.Random(7)
    seeds = [read("chelsea_160x107_thumb.jpg"), read("chelsea_120x80.png"), read("retina_160x120_444.jpg")]
    for trial in range(120):
        if trial % 3 == 0:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
            if rng.random() < 0.5:
                data = bytes([0xFF, 0xD8, 0xFF]) + data
        else:
            data = bytearray(rng.choice(seeds))
            if rng.random() < 0.5:
                data = data[: rng.randint(0, len(data))]
            for _ in range(rng.randint(1, 8)):
                if data:
                    data[rng.randrange(len(data))] = rng.getrandbits(8)
            data = bytes(data)
        try:
            a = mx.image.imdecode(data)
            a.wait_to_read()
        except mx.base.MXNetError as e:
            assert "imdecode" in str(e)
    # the engine still works
    assert png().asnumpy().shape == (80, 120, 3)


@pytest.mark.parametrize("interp,tol", [(0, 0), (1, 1), (2, 2), (3, 1), (4, 4)])
def test_imresize_matches_mxnet(interp, tol):
    img = png()
    close(mx.image.imresize(img, 37, 23, interp=interp), ARR["resize_down_%d" % interp], tol)
    close(mx.image.imresize(img, 151, 97, interp=interp), ARR["resize_up_%d" % interp], tol)


def test_copy_make_border_matches_mxnet():
    small = mx.image.fixed_crop(png(), 10, 20, 10, 8)
    np.testing.assert_array_equal(small.asnumpy(), ARR["small"])
    for t in range(5):
        got = mx.image.copyMakeBorder(small, 2, 3, 4, 1, type=t, value=7)
        np.testing.assert_array_equal(got.asnumpy(), ARR["border_%d" % t], err_msg="type %d" % t)
    got = mx.image.copyMakeBorder(small, 1, 1, 2, 2, type=0, values=(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(got.asnumpy(), ARR["border_values"])
    f = small.astype("float32")
    np.testing.assert_array_equal(
        mx.image.copyMakeBorder(f, 2, 3, 4, 1, type=2).asnumpy(), ARR["border_2"].astype(np.float32)
    )
    with pytest.raises(ValueError, match="type=7"):
        mx.image.copyMakeBorder(small, 1, 1, 1, 1, type=7)


def test_crops_and_resize_short_match_mxnet():
    img = png()
    close(mx.image.resize_short(img, 50, interp=1), ARR["resize_short_50"], 2)
    close(mx.image.fixed_crop(img, 5, 6, 50, 40, size=(25, 20), interp=1), ARR["fixed_crop_resized"], 2)
    out, rect = mx.image.center_crop(img, (40, 30), interp=1)
    assert list(rect) == META["center_crop_rect"]
    close(out, ARR["center_crop"], 2)
    seed(3)
    out, rect = mx.image.random_crop(img, (40, 30), interp=1)
    assert list(rect) == META["random_crop_rect"]
    close(out, ARR["random_crop"], 2)
    seed(5)
    out, rect = mx.image.random_size_crop(img, (32, 32), 0.3, (0.75, 1.33), interp=1)
    assert list(rect) == META["random_size_crop_rect"]
    close(out, ARR["random_size_crop"], 2)
    assert [list(mx.image.scale_down((640, 480), (720, 120))), list(mx.image.scale_down((100, 50), (30, 60)))] == META[
        "scale_down"
    ]
    f = img.astype("float32")
    got = mx.image.color_normalize(f, mx.nd.array([120.0, 110.0, 100.0]), mx.nd.array([60.0, 55.0, 50.0]))
    close(got, ARR["color_normalize"], 1e-4)
    close(f, ARR["color_normalize"], 1e-4)  # in place, as MXNet
    with pytest.raises(ValueError, match="outside"):
        mx.image.fixed_crop(img, 100, 0, 50, 10)
    with pytest.raises(ValueError, match="Unknown interp"):
        mx.image.resize_short(img, 10, interp=7)


def test_float_crop_and_flip():
    f = png().astype("float32")
    c = mx.image.fixed_crop(f, 3, 4, 10, 6)
    np.testing.assert_array_equal(c.asnumpy(), ARR["img"][4:10, 3:13].astype(np.float32))
    seed(0)
    flipped = mx.image.HorizontalFlipAug(1.0)(f)
    np.testing.assert_array_equal(flipped.asnumpy(), ARR["img"][:, ::-1].astype(np.float32))


@pytest.mark.parametrize(
    "name", ["brightness", "contrast", "saturation", "hue", "lighting", "gray", "flip", "normalize", "colorjitter"]
)
def test_augmenters_match_mxnet(name):
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
    augs = {
        "brightness": lambda: mx.image.BrightnessJitterAug(0.5),
        "contrast": lambda: mx.image.ContrastJitterAug(0.5),
        "saturation": lambda: mx.image.SaturationJitterAug(0.5),
        "hue": lambda: mx.image.HueJitterAug(0.4),
        "lighting": lambda: mx.image.LightingAug(0.1, eigval, eigvec),
        "gray": lambda: mx.image.RandomGrayAug(1.0),
        "flip": lambda: mx.image.HorizontalFlipAug(1.0),
        "normalize": lambda: mx.image.ColorNormalizeAug(
            mx.nd.array([123.68, 116.28, 103.53]), mx.nd.array([58.395, 57.12, 57.375])
        ),
        "colorjitter": lambda: mx.image.ColorJitterAug(0.3, 0.3, 0.3),
    }
    a = augs[name]()
    f = mx.image.fixed_crop(png(), 30, 10, 32, 24).astype("float32")
    seed(7)
    close(a(f), ARR["aug_" + name], 2e-3)
    d = a.dumps()
    assert (d if isinstance(d, str) else json.dumps(d)) == META["aug_dumps"][name]


def test_create_augmenter_matches_mxnet():
    al = mx.image.CreateAugmenter(
        (3, 32, 32),
        resize=40,
        rand_crop=True,
        rand_mirror=True,
        mean=True,
        std=True,
        brightness=0.3,
        contrast=0.3,
        saturation=0.3,
        hue=0.1,
        pca_noise=0.1,
        rand_gray=0.2,
        inter_method=1,
    )
    dumps = [a.dumps() if isinstance(a.dumps(), str) else json.dumps(a.dumps()) for a in al]
    assert dumps == META["create_dumps"]
    img = png()
    for k in range(3):
        seed(100 + k)
        x = img
        for a in al:
            x = a(x)
        # resize differences of 1-2 grey levels, normalised by ~57
        close(x, ARR["create_chain_%d" % k], 0.08)
    al2 = mx.image.CreateAugmenter((3, 24, 32), rand_crop=True, rand_resize=True, rand_mirror=True, inter_method=1)
    assert [a.dumps() if isinstance(a.dumps(), str) else json.dumps(a.dumps()) for a in al2] == META["create2_dumps"]
    seed(11)
    x = img
    for a in al2:
        x = a(x)
    close(x, ARR["create2_chain"], 3)
    assert isinstance(mx.image.SequentialAug(al).dumps(), list)


def test_augmenter_type_errors():
    img = png()
    with pytest.raises(TypeError, match="float32"):
        mx.image.ContrastJitterAug(0.5)(img)
    with pytest.raises(TypeError, match="uint8, float32 or float64, got int32"):
        mx.image.imresize(img.astype("int32"), 10, 10)
    with pytest.raises(NotImplementedError):
        mx.image.Augmenter()(img)


# --- decompression bombs: a pixel limit checked from the header, and JPEG
# data that ends long before the frame is covered ---------------------------

def _patch_jpeg_size(buf, w, h):
    """The JPEG with its frame header (SOF) claiming w x h."""
    import struct
    b = bytearray(buf)
    p = 2
    while p < len(b):
        m = b[p + 1]
        ln = struct.unpack(">H", b[p + 2:p + 4])[0]
        if m in (0xC0, 0xC1, 0xC2):
            b[p + 5:p + 7] = struct.pack(">H", h)
            b[p + 7:p + 9] = struct.pack(">H", w)
            return bytes(b)
        p += 2 + ln
    raise AssertionError("no SOF marker")


def _patch_png_size(buf, w, h):
    """The PNG with its IHDR claiming w x h (the CRC left stale)."""
    import struct
    b = bytearray(buf)
    assert b[12:16] == b"IHDR"
    b[16:24] = struct.pack(">II", w, h)
    return bytes(b)


@pytest.fixture
def pixel_limit():
    old = mx.image.get_max_image_pixels()
    yield
    mx.image.set_max_image_pixels(old)


def test_pixel_limit_default_is_pillows():
    assert mx.image.get_max_image_pixels() == 89478485


@pytest.mark.parametrize("kind", ["jpeg", "progressive", "png"])
def test_image_bomb_refused_from_the_header(kind, pixel_limit):
    src = {"jpeg": "chelsea_160x107_thumb.jpg", "progressive": "hubble_800x600_progressive.jpg",
           "png": "chelsea_120x80.png"}[kind]
    patch = _patch_png_size if kind == "png" else _patch_jpeg_size
    bomb = patch(read(src), 16384, 16384)
    for f in (lambda: mx.image.imdecode(bomb), lambda: mx.image.imdecode(bomb, flag=0),
              lambda: mx.image.imdecode(bomb, to_rgb=False)):
        with pytest.raises(mx.base.MXNetError, match=r"16384x16384 \(268435456 pixels\) exceeds the limit of "
                                                    r"89478485 pixels.*OXNET_IMAGE_MAX_PIXELS.*set_max_image_pixels"):
            f()
    # a lower limit applies at once; raising it lets a real image through
    assert mx.image.set_max_image_pixels(100) == 89478485
    with pytest.raises(mx.base.MXNetError, match="limit of 100 pixels"):
        mx.image.imdecode(read(src))
    mx.image.set_max_image_pixels(None)
    assert mx.image.get_max_image_pixels() is None
    assert mx.image.imdecode(read(src)).ndim == 3


@pytest.mark.parametrize("src", ["chelsea_160x107_thumb.jpg", "hubble_800x600_progressive.jpg"])
def test_jpeg_whose_data_cannot_cover_the_frame_is_refused(src, pixel_limit):
    # MXNet 1.9.1 (libjpeg) only warns "Corrupt JPEG data: premature end of
    # data segment" here and returns a mostly gray image; oxnet refuses
    mx.image.set_max_image_pixels(None)
    bomb = _patch_jpeg_size(read(src), 16384, 16384)
    with pytest.raises(mx.base.MXNetError, match="end long before the 16384x16384 frame"):
        mx.image.imdecode(bomb)  # at the call, before the output is allocated


def test_jpeg_data_running_out_while_decoding_is_refused():
    # twice the size on each side: the data runs out a quarter of the way
    # (within the pixel limit and the header-level lower bound)
    buf = _patch_jpeg_size(read("chelsea_160x107_thumb.jpg"), 320, 214)
    with pytest.raises(mx.base.MXNetError, match="ends long before the frame is covered"):
        mx.image.imdecode(buf).wait_to_read()  # found while decoding: raised at the wait
    # the untouched file still decodes
    assert mx.image.imdecode(read("chelsea_160x107_thumb.jpg")).shape == (107, 160, 3)


def test_pixel_limit_from_the_environment():
    import subprocess
    import sys
    code = ("import oxnet as mx, sys\n"
            "buf = open(sys.argv[1], 'rb').read()\n"
            "print(mx.image.get_max_image_pixels())\n"
            "try:\n    mx.image.imdecode(buf)\n    print('decoded')\n"
            "except mx.base.MXNetError as e:\n    print('refused', 'limit of 1000 pixels' in str(e))\n")
    path = os.path.join(IMAGES, "chelsea_160x107_thumb.jpg")
    env = dict(os.environ, OXNET_IMAGE_MAX_PIXELS="1000")
    out = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True,
                         timeout=120).stdout.split()
    assert out == ["1000", "refused", "True"]
    env["OXNET_IMAGE_MAX_PIXELS"] = "none"
    out = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True,
                         timeout=120).stdout.split()
    assert out == ["None", "decoded"]


def test_bomb_in_record_iterators_and_im2rec(tmp_path):
    bomb = _patch_jpeg_size(read("chelsea_160x107_thumb.jpg"), 16384, 16384)
    rec, idx = str(tmp_path / "b.rec"), str(tmp_path / "b.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(2):
        w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), bomb))
    w.close()
    it = mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 32, 32), batch_size=2)
    with pytest.raises(mx.base.MXNetError, match="exceeds the limit"):
        it.next()
    lst = tmp_path / "b.lst"
    (tmp_path / "b.jpg").write_bytes(bomb)
    lst.write_text("0\t0.0\tb.jpg\n")
    it = mx.image.ImageIter(batch_size=1, data_shape=(3, 32, 32), path_imglist=str(lst), path_root=str(tmp_path))
    with pytest.raises(mx.base.MXNetError, match="exceeds the limit"):
        it.next()
    # im2rec (decoding, not pass-through) reports the image and skips it
    from oxnet.tools import im2rec
    import contextlib
    import io as _io
    out = _io.StringIO()
    with contextlib.redirect_stdout(out):
        im2rec.main([str(tmp_path / "b"), str(tmp_path), "--encoding", ".png", "--num-thread", "1"])
    assert "exceeds the limit" in out.getvalue()
