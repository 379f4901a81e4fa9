"""ImageIter, ImageRecordIter / ImageRecordUInt8Iter and NDArrayIter against
real MXNet 1.9.1 results (tests/data/golden_io, from make_io_golden.py)."""

import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

import oxnet as mx


from iotest import ARR, GOLD, HERE, IMAGES, META, _drain_engine_errors  # noqa: F401
REC = os.path.join(GOLD, "small.rec")
IDX = os.path.join(GOLD, "small.idx")


def seed(k):
    random.seed(k)
    np.random.seed(k)


def batches(it):
    return [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]


def close(a, b, atol):
    a = a.asnumpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.abs(a.astype(np.float64) - b).max() <= atol


# ---------------------------------------------------------------- ImageIter


@pytest.mark.parametrize("lbh", ["pad", "discard", "roll_over"])
def test_imageiter_last_batch_modes(lbh):
    it = mx.image.ImageIter(
        4, (3, 24, 32), label_width=2, path_imgrec=REC, path_imgidx=IDX, last_batch_handle=lbh, inter_method=1
    )
    assert it.provide_data[0].shape == (4, 3, 24, 32)
    assert it.provide_label[0].shape == (4, 2)
    out = []
    for epoch in range(2):
        for b in it:
            out.append({"label": b.label[0].asnumpy().tolist(), "pad": b.pad})
            # PNG records: exact decode; center crop + bilinear resize
            close(b.data[0], ARR["imageiter_%s_%d" % (lbh, len(out) - 1)], 2)
        it.reset()
    assert out == META["imageiter"][lbh]


def test_imageiter_shuffle_and_augment_match_mxnet():
    seed(21)
    it = mx.image.ImageIter(
        3,
        (3, 24, 32),
        label_width=2,
        path_imgrec=REC,
        path_imgidx=IDX,
        shuffle=True,
        rand_crop=True,
        rand_mirror=True,
        inter_method=1,
        mean=True,
        std=True,
    )
    out = []
    for b in it:
        out.append({"label": b.label[0].asnumpy().tolist(), "pad": b.pad})
        close(b.data[0], ARR["imageiter_shuffle_%d" % (len(out) - 1)], 0.05)
    assert out == META["imageiter"]["shuffle"]


def test_imageiter_sources():
    assert (
        batches(mx.image.ImageIter(4, (3, 24, 32), label_width=2, path_imgrec=REC, inter_method=1))
        == META["imageiter"]["sequential"]
    )
    assert (
        batches(
            mx.image.ImageIter(
                2,
                (3, 24, 32),
                label_width=2,
                path_imgrec=REC,
                path_imgidx=IDX,
                num_parts=2,
                part_index=1,
                inter_method=1,
            )
        )
        == META["imageiter"]["part1"]
    )
    lst = os.path.join(GOLD, "photos.lst")
    assert (
        batches(mx.image.ImageIter(2, (3, 32, 32), path_imglist=lst, path_root=IMAGES, resize=40, inter_method=1))
        == META["imageiter"]["lst"]
    )
    it = mx.image.ImageIter(2, (3, 32, 32), path_imglist=lst, path_root=IMAGES, resize=40, inter_method=1)
    close(it.next().data[0], ARR["imageiter_lst_0"], 6)  # JPEG decoders round differently
    imglist = [
        [1.0, "chelsea_120x80.png"],
        [[2.0, 3.0], "retina_160x120_444.jpg"],
        [4.0, 5.0, "chelsea_160x107_thumb.jpg"],
    ]
    assert (
        batches(mx.image.ImageIter(2, (3, 20, 20), imglist=imglist, path_root=IMAGES, label_width=2))
        == META["imageiter"]["imglist"]
    )


def test_imageiter_broken_image_raises_at_wait(tmp_path):
    shutil.copy(os.path.join(IMAGES, "chelsea_120x80.png"), tmp_path / "good.png")
    data = open(os.path.join(IMAGES, "chelsea_160x107_thumb.jpg"), "rb").read()
    (tmp_path / "trunc.jpg").write_bytes(data[:1500])
    (tmp_path / "junk.jpg").write_bytes(b"no image here")
    it = mx.image.ImageIter(2, (3, 16, 16), imglist=[[0.0, "good.png"], [1.0, "trunc.jpg"]], path_root=str(tmp_path))
    b = it.next()
    with pytest.raises(mx.base.MXNetError, match="trunc.jpg"):
        b.data[0].asnumpy()
    it = mx.image.ImageIter(2, (3, 16, 16), imglist=[[0.0, "good.png"], [1.0, "junk.jpg"]], path_root=str(tmp_path))
    with pytest.raises(mx.base.MXNetError, match="junk.jpg"):
        it.next()
    # the engine and a fresh iterator still work
    it = mx.image.ImageIter(1, (3, 16, 16), imglist=[[0.0, "good.png"]], path_root=str(tmp_path))
    assert it.next().data[0].asnumpy().shape == (1, 3, 16, 16)


# ---------------------------------------------------------- ImageRecordIter


def test_imagerecorditer_center_matches_mxnet():
    it = mx.io.ImageRecordIter(
        path_imgrec=REC,
        path_imgidx=IDX,
        data_shape=(3, 24, 32),
        batch_size=4,
        label_width=2,
        resize=30,
        mean_r=123.0,
        mean_g=117.0,
        mean_b=104.0,
        std_r=58.0,
        std_g=57.0,
        std_b=57.5,
        preprocess_threads=2,
    )
    out = []
    for b in it:
        out.append({"label": b.label[0].asnumpy().tolist(), "pad": b.pad})
        close(b.data[0], ARR["recorditer_%d" % (len(out) - 1)], 0.06)
    assert out == META["recorditer"]["center"]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == [["softmax_label", [4, 2]]]
    it.reset()
    assert len(list(it)) == 2
    it.reset()
    assert it.iter_next() and it.getpad() == 0 and it.getdata().shape == (4, 3, 24, 32)
    assert it.getlabel().asnumpy()[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert it.getindex().tolist() == [0, 1, 2, 3]
    assert it.iter_next() and it.getpad() == 2
    assert not it.iter_next()


def test_imagerecorditer_variants():
    it = mx.io.ImageRecordUInt8Iter(
        path_imgrec=REC, path_imgidx=IDX, data_shape=(3, 24, 32), batch_size=4, label_width=2, preprocess_threads=1
    )
    b = it.next()
    assert b.data[0].dtype == np.uint8
    close(b.data[0], ARR["recorditer_u8_0"].astype(np.float64), 2)
    it = mx.io.ImageRecordIter(
        path_imgrec=REC, data_shape=(3, 24, 32), batch_size=4, label_width=2, round_batch=False, preprocess_threads=1
    )
    assert batches(it) == META["recorditer"]["no_round"]
    it = mx.io.ImageRecordIter(path_imgrec=REC, path_imgidx=IDX, data_shape=(3, 24, 32), batch_size=2, label_width=2)
    assert [[d.name, list(d.shape)] for d in it.provide_data] == META["recorditer"]["provide_data"]
    assert META["recorditer"]["label_width_mismatch_raises"]
    with pytest.raises(ValueError, match="label_width"):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2)
    with pytest.raises(ValueError, match="max_rotate_angle"):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2, label_width=2, max_rotate_angle=10)
    mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2, label_width=2, max_rotate_angle=0)
    with pytest.raises(TypeError, match="unknown parameter"):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2, label_width=2, bogus=1)
    with pytest.raises(IOError, match="missing.rec"):
        mx.io.ImageRecordIter(path_imgrec=os.path.join(GOLD, "missing.rec"), data_shape=(3, 8, 8), batch_size=2)


def test_imagerecorditer_random_aug_is_thread_independent():
    def run(threads):
        it = mx.io.ImageRecordIter(
            path_imgrec=REC,
            path_imgidx=IDX,
            data_shape=(3, 24, 32),
            batch_size=3,
            label_width=2,
            shuffle=True,
            seed=5,
            rand_crop=True,
            rand_mirror=True,
            resize=36,
            preprocess_threads=threads,
        )
        return [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]

    a, b = run(1), run(2)
    assert len(a) == 2
    for (da, la), (db, lb) in zip(a, b):
        np.testing.assert_array_equal(da, db)
        np.testing.assert_array_equal(la, lb)
    assert sorted(np.concatenate([x[1][:, 0] for x in a]).tolist()) == [0, 1, 2, 3, 4, 5]


def test_imagerecorditer_bad_record_raises_then_goes_on(tmp_path):
    rec, idx = str(tmp_path / "b.rec"), str(tmp_path / "b.idx")
    src = mx.recordio.MXIndexedRecordIO(IDX, REC, "r")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for k in range(6):
        s = src.read_idx(k)
        if k == 1:
            h, _ = mx.recordio.unpack(s)
            s = mx.recordio.pack(h, b"this is not an image")
        w.write_idx(k, s)
    w.close()
    it = mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 24, 32), batch_size=2, label_width=2)
    with pytest.raises(mx.base.MXNetError, match="record 1"):
        it.next()
    assert it.next().label[0].asnumpy()[:, 0].tolist() == [2.0, 3.0]


# -------------------------------------------------------------- NDArrayIter


@pytest.mark.parametrize("lbh", ["pad", "discard", "roll_over"])
def test_ndarrayiter_matches_mxnet(lbh):
    data = np.arange(30, dtype=np.float32).reshape(10, 3)
    label = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle=lbh)
    out = []
    for epoch in range(3):
        for b in it:
            out.append({"data": b.data[0].asnumpy().tolist(), "label": b.label[0].asnumpy().tolist(), "pad": b.pad})
        it.reset()
    assert out == META["ndarrayiter"][lbh]


def test_ndarrayiter_misc():
    data = np.arange(30, dtype=np.float32).reshape(10, 3)
    label = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter({"a": data, "b": data * 2}, {"y": label}, batch_size=3)
    assert [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_data] == META["ndarrayiter"][
        "provide_data"
    ]
    assert [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_label] == META["ndarrayiter"][
        "provide_label"
    ]
    it = mx.io.NDArrayIter(np.arange(3, dtype=np.float32).reshape(3, 1), batch_size=8, last_batch_handle="pad")
    assert [{"data": b.data[0].asnumpy().tolist(), "pad": b.pad} for b in it] == META["ndarrayiter"]["big_pad"]
    np.random.seed(0)
    it = mx.io.NDArrayIter(data, label, batch_size=5, shuffle=True)
    got = [{"data": b.data[0].asnumpy().tolist(), "label": b.label[0].asnumpy().tolist()} for b in it]
    assert got == META["ndarrayiter"]["shuffle"]
    assert repr(mx.io.DataDesc("data", (2, 3))) == META["datadesc_repr"]
    assert str(mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))])) == META["databatch_str"]
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(data, batch_size=2, last_batch_handle="bogus")
    r = mx.io.ResizeIter(mx.io.NDArrayIter(data, label, batch_size=4), 5)
    assert len(list(r)) == 5


# ------------------------------------------------------------------ im2rec


def test_im2rec_list_and_pack(tmp_path):
    root = tmp_path / "imgs"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    shutil.copy(os.path.join(IMAGES, "chelsea_120x80.png"), root / "a" / "x.png")
    shutil.copy(os.path.join(IMAGES, "chelsea_160x107_thumb.jpg"), root / "b" / "y.jpg")
    shutil.copy(os.path.join(IMAGES, "retina_160x120_444.jpg"), root / "b" / "z.jpg")
    prefix = str(tmp_path / "data")
    env = dict(os.environ)
    if not os.environ.get("OXNET_TEST_INSTALLED"):
        env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "python")
    cmd = [sys.executable, "-m", "oxnet.tools.im2rec"]
    r = subprocess.run(
        cmd + ["--list", "--recursive", "--no-shuffle", prefix, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    lines = open(prefix + ".lst").read().splitlines()
    assert lines == ["0\t0.000000\ta/x.png", "1\t1.000000\tb/y.jpg", "2\t1.000000\tb/z.jpg"]
    r = subprocess.run(
        cmd + ["--resize", "40", "--encoding", ".png", "--num-thread", "2", prefix, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "count: 0" in r.stdout
    rec = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    assert rec.keys == [0, 1, 2]
    h, img = mx.recordio.unpack_img(rec.read_idx(0))
    assert h.label == 0.0 and img.shape == (40, 60, 3)
    h, img = mx.recordio.unpack_img(rec.read_idx(2))
    assert h.label == 1.0 and img.shape == (40, 53, 3)
    # pass-through keeps the file bytes
    r = subprocess.run(cmd + ["--pass-through", prefix, str(root)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rec = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    _, payload = mx.recordio.unpack(rec.read_idx(1))
    assert payload == (root / "b" / "y.jpg").read_bytes()
    # train/val split
    r = subprocess.run(
        cmd + ["--list", "--recursive", "--train-ratio", "0.67", prefix, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0
    assert len(open(prefix + "_train.lst").read().splitlines()) == 2
    assert len(open(prefix + "_val.lst").read().splitlines()) == 1


@pytest.mark.parametrize("crop", ["random", "center"])
@pytest.mark.parametrize("interp", [1, 2, 3, 10])
@pytest.mark.parametrize("size", [40, 200])
def test_imageiter_resize_then_crop_in_one_pass(crop, interp, size):
    # ResizeAug + a crop of the output size run as one window resize when
    # shrinking (200 enlarges these images: the two-step path); same random
    # draws, pixels within 1 of resizing and then cropping
    def make():
        Crop = mx.image.RandomCropAug if crop == "random" else mx.image.CenterCropAug
        augs = [mx.image.ResizeAug(size, interp), Crop((32, 24), interp), mx.image.CastAug()]
        return mx.image.ImageIter(3, (3, 24, 32), label_width=2, path_imgrec=REC, path_imgidx=IDX, aug_list=augs)

    def two_steps(self, data):
        for aug in self.auglist:
            data = aug(data)
        return data

    random.seed(7)
    got = [b.data[0].asnumpy() for b in make()]
    ref_it = make()
    ref_it.augmentation_transform = two_steps.__get__(ref_it)
    random.seed(7)
    want = [b.data[0].asnumpy() for b in ref_it]
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert np.abs(g - w).max() <= 1
        assert (g != w).mean() < 0.01


TAILS = {
    "flip_cast": lambda: [mx.image.HorizontalFlipAug(0.5), mx.image.CastAug()],
    "flip_cast_normalize": lambda: [
        mx.image.HorizontalFlipAug(0.5),
        mx.image.CastAug(),
        mx.image.ColorNormalizeAug(mx.nd.array([123.7, 116.3, 103.5]), mx.nd.array([58.4, 57.1, 57.4])),
    ],
    "cast_normalize_scalar_then_jitter": lambda: [
        mx.image.CastAug("float32"),
        mx.image.ColorNormalizeAug(100.0, None),
        mx.image.BrightnessJitterAug(0.3),
    ],
    "flip_only": lambda: [mx.image.HorizontalFlipAug(0.7)],
    "cast_then_flip": lambda: [mx.image.CastAug(), mx.image.HorizontalFlipAug(0.5)],
}


@pytest.mark.parametrize("crop", ["random", "center"])
@pytest.mark.parametrize("interp", [1, 2, 4])
@pytest.mark.parametrize("tail", sorted(TAILS))
def test_imageiter_decodes_only_the_window_with_the_same_pixels(tmp_path, monkeypatch, crop, interp, tail):
    # ResizeAug + crop first in the list: ImageIter decodes about the
    # window's source only (JPEGs: a progressive one entropy-decodes all its
    # scans, then transforms only the window), with exactly the pixels of
    # decoding the whole image first; PNG decodes whole
    images = os.path.join(os.path.dirname(__file__), "..", "data", "images")
    names = [
        "astronaut_640x480_restart.jpg",
        "coffee_500x500_422.jpg",
        "camera_gray_512x512.jpg",
        "hubble_800x600_progressive.jpg",
        "chelsea_120x80.png",
        "retina_160x120_444.jpg",
    ]
    rec, idx = str(tmp_path / "w.rec"), str(tmp_path / "w.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, n in enumerate(names):
        with open(os.path.join(images, n), "rb") as f:
            w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), f.read()))
    w.close()

    def make():
        Crop = mx.image.RandomCropAug if crop == "random" else mx.image.CenterCropAug
        augs = [mx.image.ResizeAug(72, interp), Crop((64, 48), interp)] + TAILS[tail]()
        return mx.image.ImageIter(2, (3, 48, 64), path_imgrec=rec, path_imgidx=idx, aug_list=augs)

    # the flip, cast and normalisation after the crop run inside the
    # window decode (the keyword arguments show which), with the same
    # random draws and values as the augmenters one by one
    native = mx.image.image._native
    calls = []
    fused = native.imdecode_resize_window
    monkeypatch.setattr(native, "imdecode_resize_window", lambda *a, **k: calls.append(sorted(k)) or fused(*a, **k))
    random.seed(3)
    got = [b.data[0].asnumpy() for b in make()]
    assert len(calls) == len(names)
    ref_it = make()
    ref_it.imdecode = lambda s: mx.image.ImageIter.imdecode(ref_it, s)  # whole-image decode
    random.seed(3)
    want = [b.data[0].asnumpy() for b in ref_it]
    assert len(calls) == len(names)  # the reference decoded whole images
    want_kw = {
        # every augmenter in the decode: the image comes CHW for the batch
        "flip_cast": ["chw", "mirror", "to_float"],
        "flip_cast_normalize": ["chw", "mirror", "normalize", "to_float"],
        "cast_normalize_scalar_then_jitter": ["normalize", "to_float"],
        "flip_only": ["mirror"],
        "cast_then_flip": ["to_float"],
    }[tail]
    # PNG decodes whole but still in one fused call
    assert all(k == want_kw for k in calls)
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert np.array_equal(g, w)

    # a subclass's postprocess_data, or check_valid_image, gets the
    # augmented HWC image, not CHW
    class Own(mx.image.ImageIter):
        def postprocess_data(self, datum):
            assert datum.shape == (48, 64, 3)
            return mx.nd.transpose(datum, axes=(2, 0, 1))

    class Checks(mx.image.ImageIter):
        def check_valid_image(self, data):
            assert data.shape == (48, 64, 3)

    Crop = mx.image.RandomCropAug if crop == "random" else mx.image.CenterCropAug
    for cls in (Own, Checks):
        sub = cls(
            2,
            (3, 48, 64),
            path_imgrec=rec,
            path_imgidx=idx,
            aug_list=[mx.image.ResizeAug(72, interp), Crop((64, 48), interp)] + TAILS[tail](),
        )
        calls.clear()
        random.seed(3)
        mine = [b.data[0].asnumpy() for b in sub]
        assert len(calls) == len(names) and not any("chw" in k for k in calls)
        for g, w in zip(mine, want):
            assert np.array_equal(g, w)


def test_imageiter_pad_rows_beyond_the_data_are_zero():
    # 3 images, batch 8, 'pad': rows 0-2 the images, 3-5 the same images
    # again (the pad is filled from the start), 6-7 zeros
    imglist = [[float(i), n] for i, n in enumerate(["chelsea_120x80.png", "retina_160x120_444.jpg", "rocket_45x31_420.jpg"])]
    it = mx.image.ImageIter(
        8, (3, 20, 24), imglist=imglist, path_root=IMAGES, aug_list=[mx.image.ForceResizeAug((24, 20))]
    )
    batches = list(it)
    assert len(batches) == 1 and batches[0].pad == 5
    d = batches[0].data[0].asnumpy()
    assert batches[0].label[0].asnumpy().tolist() == [0, 1, 2, 0, 1, 2, 0, 0]
    assert all(d[i].std() > 0 for i in range(6))
    assert np.array_equal(d[:3], d[3:6])
    assert not d[6:].any()
    # the same buffer sizes again: no stale values from the pool in the pad
    garbage = mx.nd.full((8, 3, 20, 24), 7.0)
    del garbage
    it.reset()
    assert not list(it)[0].data[0].asnumpy()[6:].any()


# MXNet 1.9.1's documented ImageRecordIter parameters (mx.io.ImageRecordIter.__doc__)
MXNET_IMAGE_RECORD_ITER_ARGS = [
    "path_imglist", "path_imgrec", "path_imgidx", "aug_seq", "label_width", "data_shape", "preprocess_threads",
    "verbose", "num_parts", "part_index", "device_id", "shuffle_chunk_size", "shuffle_chunk_seed", "seed_aug",
    "shuffle", "seed", "batch_size", "round_batch", "prefetch_buffer", "ctx", "dtype", "resize", "rand_crop",
    "random_resized_crop", "max_rotate_angle", "max_aspect_ratio", "min_aspect_ratio", "max_shear_ratio",
    "max_crop_size", "min_crop_size", "max_random_scale", "min_random_scale", "max_random_area", "min_random_area",
    "max_img_size", "min_img_size", "brightness", "contrast", "saturation", "pca_noise", "random_h", "random_s",
    "random_l", "rotate", "fill_value", "inter_method", "pad", "mirror", "rand_mirror", "mean_img", "mean_r",
    "mean_g", "mean_b", "mean_a", "std_r", "std_g", "std_b", "std_a", "scale", "max_random_contrast",
    "max_random_illumination",
]
# MXNet 1.9.1's defaults for those (from the same docstring)
MXNET_DEFAULTS = {
    "path_imglist": "", "path_imgidx": "", "aug_seq": "aug_default", "preprocess_threads": 4, "verbose": True,
    "num_parts": 1, "part_index": 0, "device_id": 0, "shuffle_chunk_size": 0, "shuffle_chunk_seed": 0,
    "seed_aug": None, "shuffle": False, "seed": 0, "round_batch": True, "prefetch_buffer": 4, "ctx": "gpu",
    "dtype": "float32", "resize": -1, "rand_crop": False, "random_resized_crop": False, "max_rotate_angle": 0,
    "max_aspect_ratio": 0.0, "min_aspect_ratio": None, "max_shear_ratio": 0.0, "max_crop_size": -1,
    "min_crop_size": -1, "max_random_scale": 1.0, "min_random_scale": 1.0, "max_random_area": 1.0,
    "min_random_area": 1.0, "max_img_size": 1e10, "min_img_size": 0.0, "brightness": 0.0, "contrast": 0.0,
    "saturation": 0.0, "pca_noise": 0.0, "random_h": 0, "random_s": 0, "random_l": 0, "rotate": -1,
    "fill_value": 255, "inter_method": 1, "pad": 0, "mirror": False, "rand_mirror": False, "mean_img": "",
    "mean_r": 0.0, "mean_g": 0.0, "mean_b": 0.0, "mean_a": 0.0, "std_r": 1.0, "std_g": 1.0, "std_b": 1.0,
    "std_a": 1.0, "scale": 1.0, "max_random_contrast": 0.0, "max_random_illumination": 0.0,
}


def test_record_iter_accepts_every_documented_argument_at_its_default():
    kw = dict(MXNET_DEFAULTS)
    kw.update(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2, label_width=2)
    assert set(kw) == set(MXNET_IMAGE_RECORD_ITER_ARGS)
    it = mx.io.ImageRecordIter(**kw)
    ref = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2, label_width=2)
    for a, b in zip(it, ref):
        np.testing.assert_array_equal(a.data[0].asnumpy(), b.data[0].asnumpy())


def test_record_iter_unimplemented_arguments_say_why():
    base = dict(path_imgrec=REC, data_shape=(3, 24, 32), batch_size=2, label_width=2)
    with pytest.raises(ValueError, match=r"max_rotate_angle=10: .*mx.image.ImageIter"):
        mx.io.ImageRecordIter(max_rotate_angle=10, **base)
    with pytest.raises(ValueError, match="mean_img=.*mean_r"):
        mx.io.ImageRecordIter(mean_img="mean.bin", **base)
    with pytest.raises(ValueError, match="seed_aug must be"):
        mx.io.ImageRecordIter(seed_aug=-1, **base)
    mx.io.ImageRecordIter(verbose=False, ctx="cpu", **base)


def test_record_iter_seed_aug_fixes_the_augmentations():
    def data(**kw):
        it = mx.io.ImageRecordIter(path_imgrec=REC, path_imgidx=IDX, data_shape=(3, 16, 16), batch_size=2,
                                   label_width=2, rand_crop=True, rand_mirror=True, preprocess_threads=2, **kw)
        return np.concatenate([b.data[0].asnumpy() for b in it])

    a = data(seed_aug=3, seed=1, shuffle=False)
    # the same augmentations whatever the (shuffle) seed; another seed_aug gives others
    np.testing.assert_array_equal(a, data(seed_aug=3, seed=7, shuffle=False))
    assert not np.array_equal(a, data(seed_aug=4, seed=1, shuffle=False))
    # without seed_aug, seed seeds the augmentations (oxnet's rule)
    assert not np.array_equal(data(seed=1), data(seed=2))


_FORK_ITER_SCRIPT = """
import os, signal, sys
import numpy as np
import oxnet as mx
rec, idx = sys.argv[1], sys.argv[2]
def make():
    return mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 24, 32),
                                 batch_size=2, label_width=2, preprocess_threads=2, prefetch_buffer=1)
ref = make()
want = [b.data[0].asnumpy() for b in ref]
it = make()
first = it.next().data[0].asnumpy()
assert np.array_equal(first, want[0])
pid = os.fork()
if pid == 0:
    signal.alarm(30)  # a hung child dies instead of hanging the suite
    try:
        rest = [b.data[0].asnumpy() for b in it]  # resumes after the first batch
        ok = len(rest) == len(want) - 1 and all(np.array_equal(a, b) for a, b in zip(rest, want[1:]))
        it.reset()
        ok = ok and np.array_equal(it.next().data[0].asnumpy(), want[0])
        fresh = make()  # a new iterator in the child works too
        ok = ok and np.array_equal(fresh.next().data[0].asnumpy(), want[0])
    except BaseException as e:
        print(repr(e), file=sys.stderr)
        os._exit(4)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    sys.exit("child killed by signal %d (hung?)" % os.WTERMSIG(status))
if os.WEXITSTATUS(status):
    sys.exit("child failed: %d" % os.WEXITSTATUS(status))
rest = [b.data[0].asnumpy() for b in it]  # the parent's iterator is untouched
assert len(rest) == len(want) - 1
"""


def test_imagerecorditer_survives_fork():
    """A child forked while an ImageRecordIter runs gets fresh decode threads
    and resumes the epoch where the parent stood."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    r = subprocess.run([sys.executable, "-c", _FORK_ITER_SCRIPT, REC, IDX], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
