"""mx.image detection API (ImageDetIter, Det* augmenters) against real MXNet
1.9.1 results (tests/data/golden_det, from tests/data/make_det_golden.py)
and against boxes computed here with NumPy."""

import json
import os
import random

import numpy as np
import pytest

import oxnet as mx

from iotest import HERE, IMAGES, _drain_engine_errors  # noqa: F401

GOLD = os.path.join(HERE, "..", "data", "golden_det")
REC = os.path.join(GOLD, "det.rec")
IDX = os.path.join(GOLD, "det.idx")
META = json.load(open(os.path.join(GOLD, "det.json")))
ARR = np.load(os.path.join(GOLD, "det.npz"))
AUG_LABEL = np.array(
    [[0, 0.1, 0.2, 0.5, 0.6, 0], [1, 0.4, 0.3, 0.9, 0.95, 1], [2, 0.0, 0.7, 0.15, 1.0, 0]], dtype=np.float32
)


def seed(k):
    random.seed(k)
    np.random.seed(k)


def aug_img():
    """The (48, 64, 3) uint8 image the golden augmenter results start from."""
    img = mx.image.imread(os.path.join(IMAGES, "chelsea_120x80.png"))
    return mx.image.fixed_crop(img, 20, 10, 64, 48)


def check_batches(it, gold, name=None, atol=2.0, epochs=2):
    n = 0
    for _ in range(epochs):
        for b in it:
            assert b.pad == gold[n]["pad"]
            lab = b.label[0].asnumpy()
            assert lab.dtype == np.float32
            np.testing.assert_allclose(lab, np.array(gold[n]["label"], dtype=np.float32), rtol=0, atol=1e-6)
            if name is not None:
                data = b.data[0].asnumpy()
                ref = ARR["%s_%d" % (name, n)].astype(np.float32)
                assert data.shape == ref.shape
                assert np.abs(data - ref).max() <= atol
            n += 1
        it.reset()
    assert n == len(gold)


def close_labels(got, gold):
    assert len(got) == len(gold)
    for a, b in zip(got, gold):
        np.testing.assert_allclose(a, np.array(b, dtype=np.float32), rtol=0, atol=1e-6)


# ------------------------------------------------------------- ImageDetIter


@pytest.mark.parametrize("lbh", ["pad", "discard", "roll_over"])
def test_iter_last_batch_modes_match_mxnet(lbh):
    it = mx.image.ImageDetIter(2, (3, 24, 32), path_imgrec=REC, path_imgidx=IDX, last_batch_handle=lbh, inter_method=1)
    g = META["iter"]
    assert list(it.label_shape) == g["label_shape"] == [4, 6]
    assert it.provide_label[0] == (g["provide_label"][0], tuple(g["provide_label"][1]))
    assert it.provide_data[0] == (g["provide_data"][0], tuple(g["provide_data"][1]))
    # PNG records decode exactly; bilinear resize differs from OpenCV by <= 2
    check_batches(it, g[lbh], "plain" if lbh == "pad" else None)


def test_iter_label_padding_and_parsing():
    it = mx.image.ImageDetIter(5, (3, 24, 32), path_imgrec=REC, inter_method=1)
    lab = it.next().label[0].asnumpy()
    assert lab.shape == (5, 4, 6)
    # record 1: header of width 4 (two extra values), 3 objects, one with an empty box (dropped)
    np.testing.assert_allclose(lab[1, :2], [[0, 0.05, 0.05, 0.3, 0.4, 0], [1, 0.2, 0.1, 0.8, 0.7, 0]], atol=1e-6)
    assert (lab[1, 2:] == -1).all()
    # record 3: header of width 2, four objects fill the rows
    assert (lab[3] != -1).any(axis=1).all()
    # record 2: header of width 3, one object
    np.testing.assert_allclose(lab[2, 0], [2, 0.25, 0.25, 0.75, 0.75, 1], atol=1e-6)
    assert (lab[2, 1:] == -1).all()
    check_batches(
        mx.image.ImageDetIter(2, (3, 24, 32), path_imgrec=REC, inter_method=1), META["iter"]["noidx"], epochs=1
    )


def test_iter_augmented_matches_mxnet():
    seed(5)
    it = mx.image.ImageDetIter(
        2,
        (3, 32, 32),
        path_imgrec=REC,
        path_imgidx=IDX,
        shuffle=True,
        rand_crop=0.7,
        rand_pad=0.5,
        rand_mirror=True,
        min_object_covered=[0.1, 0.5, 0.9],
        area_range=(0.1, 2.0),
        inter_method=1,
        mean=True,
        std=True,
    )
    check_batches(it, META["iter"]["aug"], "aug", atol=0.05)


def test_imglist_lst_and_sync_label_shape(tmp_path):
    imglist = [
        [2, 6, 1, 0.1, 0.1, 0.6, 0.7, 0, "chelsea_120x80.png"],
        [[3, 6, 9, 0, 0.2, 0.3, 0.4, 0.5, 1, 1, 0.5, 0.5, 0.9, 0.9, 0], "chelsea_160x107_thumb.jpg"],
    ]
    val = mx.image.ImageDetIter(2, (3, 24, 32), imglist=imglist, path_root=IMAGES, inter_method=1)
    g = META["iter"]
    assert list(val.label_shape) == g["imglist_label_shape"]
    close_labels([b.label[0].asnumpy() for b in val], g["imglist_labels"])
    val.reset()
    # the same samples from a .lst file
    lst = tmp_path / "det.lst"
    with open(lst, "w") as f:
        for i, row in enumerate(imglist):
            vals = row[0] if len(row) == 2 else row[:-1]
            f.write("\t".join([str(i)] + ["%g" % v for v in vals] + [row[-1]]) + "\n")
    from_lst = mx.image.ImageDetIter(2, (3, 24, 32), path_imglist=str(lst), path_root=IMAGES, inter_method=1)
    assert from_lst.label_shape == val.label_shape
    close_labels([from_lst.next().label[0].asnumpy()], g["imglist_labels"][:1])

    train = mx.image.ImageDetIter(2, (3, 32, 32), path_imgrec=REC, path_imgidx=IDX)
    assert train.sync_label_shape(val) is val
    assert [list(train.label_shape), list(val.label_shape)] == g["synced_label_shape"]
    assert list(val.provide_label[0][1]) == g["synced_provide_label"]
    close_labels([b.label[0].asnumpy() for b in val], g["synced_labels"])
    # syncing the other way leaves the larger one
    assert val.sync_label_shape(train).label_shape == (4, 6)


def test_reshape_and_check_label_shape():
    it = mx.image.ImageDetIter(2, (3, 24, 32), path_imgrec=REC, path_imgidx=IDX)
    it.reshape(label_shape=(7, 6))
    assert it.provide_label[0] == ("label", (2, 7, 6)) and it.label_shape == (7, 6)
    lab = it.next().label[0].asnumpy()
    assert lab.shape == (2, 7, 6) and (lab[:, 4:] == -1).all()
    with pytest.raises(ValueError, match="reduce label count from 7 to 3"):
        it.reshape(label_shape=(3, 6))
    with pytest.raises(ValueError, match="object width inconsistent: 6 vs 5"):
        it.reshape(label_shape=(8, 5))
    with pytest.raises(ValueError, match="length 2"):
        it.reshape(label_shape=(8,))
    with pytest.raises(ValueError, match="3 channels"):
        it.reshape(data_shape=(1, 16, 20))
    it.reshape(data_shape=(3, 16, 20))
    assert it.provide_data[0] == ("data", (2, 3, 16, 20))
    # as in MXNet, the augmenters are not changed: their output no longer fits
    with pytest.raises(ValueError, match=r"\(24, 32, 3\).*\(2, 3, 16, 20\)"):
        it.next()
    it.auglist = mx.image.CreateDetAugmenter((3, 16, 20))
    it.reset()
    assert it.next().data[0].shape == (2, 3, 16, 20)


def test_invalid_label_after_augmentation_is_skipped():
    class DropClass2(mx.image.DetAugmenter):
        """Marks every object of class 2 as invalid (class -1)."""

        def __call__(self, src, label):
            label[label[:, 0] == 2, 0] = -1
            return src, label

    augs = [
        DropClass2(),
        mx.image.DetBorrowAug(mx.image.ForceResizeAug((32, 24), 1)),
        mx.image.DetBorrowAug(mx.image.CastAug()),
    ]
    it = mx.image.ImageDetIter(5, (3, 24, 32), path_imgrec=REC, aug_list=augs, last_batch_handle="discard")
    # record 2 has only a class-2 object: skipped, the batch of 5 cannot be filled
    with pytest.raises(StopIteration):
        it.next()
    it = mx.image.ImageDetIter(4, (3, 24, 32), path_imgrec=REC, aug_list=augs)
    lab = it.next().label[0].asnumpy()
    assert [row[0, 0] for row in lab] == [1, 0, 0, 4]


def test_default_augmenters_and_kwargs():
    it = mx.image.ImageDetIter(2, (3, 30, 40), path_imgrec=REC)
    assert [a.dumps() for a in it.auglist] == META["aug"]["create_default_dumps"]
    with pytest.raises(TypeError, match="unexpected arguments"):
        mx.image.ImageDetIter(2, (3, 24, 32), path_imgrec=REC, aug_list=[], rand_crop=0.5)


def _write_rec(path, labels):
    img = np.zeros((8, 8, 3), dtype=np.uint8)
    w = mx.recordio.MXIndexedRecordIO(str(path) + ".idx", str(path), "w")
    for i, lab in enumerate(labels):
        h = mx.recordio.IRHeader(0, np.array(lab, dtype=np.float32), i, 0)
        w.write_idx(i, mx.recordio.pack_img(h, img, img_fmt=".png"))
    w.close()
    return str(path)


GOOD = [2, 5, 0, 0.1, 0.1, 0.5, 0.5]


@pytest.mark.parametrize(
    "bad, match",
    [
        ([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 1, 0.2], "inconsistent with annotation width 5"),
        ([2, 5, 0, 0.1], "needs at least 7"),
        ([2, 4, 0, 0.1, 0.1, 0.5, 0.5, 0], "object_width 4"),
        ([1, 5, 0, 0.1, 0.1, 0.5, 0.5, 0], "header_width 1"),
        ([2, 5, 0, 0.5, 0.1, 0.4, 0.5], "no valid label"),
        ([2, 6, 0, 0.1, 0.1, 0.5, 0.5, 0], "width 6, earlier samples 5"),
    ],
)
def test_bad_labels_raise_naming_the_sample(tmp_path, bad, match):
    rec = _write_rec(tmp_path / "bad.rec", [GOOD, bad])
    with pytest.raises(RuntimeError, match=match) as e:
        mx.image.ImageDetIter(1, (3, 8, 8), path_imgrec=rec, path_imgidx=rec + ".idx")
    assert "index: 1" in str(e.value)


def test_empty_data_set_raises(tmp_path):
    with pytest.raises(RuntimeError, match="no samples"):
        mx.image.ImageDetIter(1, (3, 8, 8), imglist=[])


def test_label_wider_than_label_shape_raises():
    class AddObject(mx.image.DetAugmenter):
        def __call__(self, src, label):
            return src, np.concatenate([label] * 5)

    augs = [
        AddObject(),
        mx.image.DetBorrowAug(mx.image.ForceResizeAug((32, 24), 1)),
        mx.image.DetBorrowAug(mx.image.CastAug()),
    ]
    it = mx.image.ImageDetIter(2, (3, 24, 32), path_imgrec=REC, aug_list=augs)
    with pytest.raises(ValueError, match=r"label of shape \(10, 6\).*label_shape is \(4, 6\)"):
        it.next()


# --------------------------------------------------------------- augmenters


def test_horizontal_flip():
    img = aug_img()
    seed(1)
    lab = AUG_LABEL.copy()
    out, out_lab = mx.image.DetHorizontalFlipAug(1.0)(img, lab)
    assert (out.asnumpy() == img.asnumpy()[:, ::-1]).all()
    np.testing.assert_allclose(out_lab, META["aug"]["flip_label"], atol=1e-7)
    expect = AUG_LABEL.copy()
    expect[:, 1], expect[:, 3] = 1 - AUG_LABEL[:, 3], 1 - AUG_LABEL[:, 1]
    np.testing.assert_allclose(out_lab, expect, atol=1e-7)
    out, out_lab = mx.image.DetHorizontalFlipAug(0.0)(img, AUG_LABEL.copy())
    assert out is img and (out_lab == AUG_LABEL).all()


def expected_pad(img, rect, vals):
    x, y, w, h = rect
    ih, iw, c = img.shape
    out = np.empty((h, w, c), dtype=img.dtype)
    out[:] = np.asarray(vals, dtype=img.dtype)
    out[y : y + ih, x : x + iw] = img
    lab = AUG_LABEL.astype(np.float64).copy()
    lab[:, (1, 3)] = (lab[:, (1, 3)] * iw + x) / w
    lab[:, (2, 4)] = (lab[:, (2, 4)] * ih + y) / h
    return out, lab


def test_random_pad_matches_mxnet_and_numpy():
    img = aug_img()
    ref = img.asnumpy()
    for k, g in enumerate(META["aug"]["pad"]):
        seed(k)
        out, lab = mx.image.DetRandomPadAug(pad_val=(10, 20, 30))(img, AUG_LABEL.copy())
        assert list(out.shape) == g["shape"]
        np.testing.assert_allclose(lab, g["label"], rtol=0, atol=1e-7)
        x, y, w, h = g["rect"]
        assert w - 64 >= 2 and h - 48 >= 2
        assert 0.75 <= w / h <= 1.34 and 48 * 64 <= w * h <= 3 * 48 * 64 * 1.1
        exp_img, exp_lab = expected_pad(ref, g["rect"], (10, 20, 30))
        assert (out.asnumpy() == exp_img).all()
        np.testing.assert_allclose(lab, exp_lab, atol=1e-6)
    seed(0)
    out, _ = mx.image.DetRandomPadAug(pad_val=(10, 20, 30))(img, AUG_LABEL.copy())
    assert (out.asnumpy() == ARR["pad_img_0"]).all()
    # a single number fills the first channel only (OpenCV Scalar, as MXNet)
    seed(3)
    out, lab = mx.image.DetRandomPadAug(aspect_ratio_range=1.0, area_range=(1.5, 2.0), pad_val=7)(img, AUG_LABEL.copy())
    assert (out.asnumpy() == ARR["pad_scalar_img"]).all()
    assert out.asnumpy()[0, 0].tolist() == [7, 0, 0]
    np.testing.assert_allclose(lab, META["aug"]["pad_scalar"], atol=1e-7)


def test_random_pad_float_image():
    img = aug_img().astype("float32")
    seed(0)
    out, _ = mx.image.DetRandomPadAug(pad_val=(10.5, 20, 30))(img, AUG_LABEL.copy())
    exp, _ = expected_pad(img.asnumpy(), META["aug"]["pad"][0]["rect"], (10.5, 20, 30))
    assert (out.asnumpy() == exp).all()


def expected_crop_label(rect, mec):
    x, y, w, h = rect
    lab = AUG_LABEL.copy()
    b = lab[:, 1:5].astype(np.float64)
    nb = (b - [x / 64, y / 48, x / 64, y / 48]) / [w / 64, h / 48, w / 64, h / 48]
    nb = np.clip(nb, 0, 1)
    area = lambda a: np.maximum(0, a[:, 2] - a[:, 0]) * np.maximum(0, a[:, 3] - a[:, 1])  # noqa: E731
    coverage = area(nb) * (w / 64) * (h / 48) / area(b)
    keep = (nb[:, 2] > nb[:, 0]) & (nb[:, 3] > nb[:, 1]) & (coverage > mec)
    out = lab.astype(np.float64)
    out[:, 1:5] = nb
    return out[keep]


def test_random_crop_matches_mxnet_and_numpy():
    img = aug_img()
    ref = img.asnumpy()
    crops = META["aug"]["crop"]
    moved = 0
    for n, g in enumerate(crops):
        seed(g["seed"])
        aug = mx.image.DetRandomCropAug(min_object_covered=g["moc"], min_eject_coverage=g["mec"], area_range=(0.1, 1.0))
        out, lab = aug(img, AUG_LABEL.copy())
        assert list(out.shape) == g["shape"]
        np.testing.assert_allclose(lab, g["label"], rtol=0, atol=1e-6)
        if not g["rect"]:  # no proposal satisfied the constraints: unchanged
            assert out is img and lab.shape == AUG_LABEL.shape
            continue
        moved += 1
        x, y, w, h = g["rect"]
        assert (out.asnumpy() == ref[y : y + h, x : x + w]).all()
        if n == 0:
            assert (out.asnumpy() == ARR["crop_img_0"]).all()
        np.testing.assert_allclose(lab, expected_crop_label(g["rect"], g["mec"]), atol=1e-5)
        # min_object_covered: every object the crop touches keeps more than that fraction
        b = AUG_LABEL[:, 1:5].astype(np.float64)
        ix = np.minimum(b[:, 2], (x + w) / 64) - np.maximum(b[:, 0], x / 64)
        iy = np.minimum(b[:, 3], (y + h) / 48) - np.maximum(b[:, 1], y / 48)
        inter = np.where((ix > 0) & (iy > 0), ix * iy, 0)
        cov = inter / ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))
        assert (cov[cov > 0] > g["moc"] - 1e-6).all() and (cov > 0).any()
    assert moved >= 12
    # the strict min_eject_coverage drops objects the lenient one keeps
    lens = {(g["moc"], g["seed"]): len(g["label"]) for g in crops if g["mec"] == 0.3}
    assert any(len(g["label"]) < lens[(g["moc"], g["seed"])] for g in crops if g["mec"] == 0.8)


def test_multi_rand_crop_select_matches_mxnet():
    select = mx.image.CreateMultiRandCropAugmenter(
        min_object_covered=[0.1, 0.3, 0.7], aspect_ratio_range=(0.5, 2.0), area_range=[(0.1, 1.0), (0.3, 1.0), 0.5]
    )
    assert select.dumps() == META["aug"]["select_dumps"]
    img = aug_img()
    for k, g in enumerate(META["aug"]["select"]):
        seed(k)
        out, lab = select(img, AUG_LABEL.copy())
        assert list(out.shape) == g["shape"]
        np.testing.assert_allclose(lab, g["label"], rtol=0, atol=1e-6)


def test_random_select_skip_and_borrow():
    img = aug_img()
    flip = mx.image.DetHorizontalFlipAug(1.0)
    seed(0)
    out, lab = mx.image.DetRandomSelectAug([flip], skip_prob=1.0)(img, AUG_LABEL.copy())
    assert out is img and (lab == AUG_LABEL).all()
    out, lab = mx.image.DetRandomSelectAug(flip, skip_prob=0)(img, AUG_LABEL.copy())
    assert (out.asnumpy() == img.asnumpy()[:, ::-1]).all()
    empty = mx.image.DetRandomSelectAug([], skip_prob=0)
    assert empty.skip_prob == 1 and empty(img, AUG_LABEL)[0] is img
    cast = mx.image.DetBorrowAug(mx.image.CastAug())
    assert cast.dumps() == ["detborrowaug", '["castaug", {"type": "float32"}]']
    out, lab = cast(img, AUG_LABEL)
    assert out.dtype == np.float32 and lab is AUG_LABEL


def test_create_det_augmenter_dumps_match_mxnet():
    augs = mx.image.CreateDetAugmenter(
        (3, 30, 40),
        resize=50,
        rand_crop=0.5,
        rand_pad=0.4,
        rand_gray=0.1,
        rand_mirror=True,
        mean=True,
        std=np.array([50.0, 60.0, 70.0]),
        brightness=0.1,
        contrast=0.2,
        saturation=0.3,
        pca_noise=0.05,
        hue=0.1,
        inter_method=10,
        min_object_covered=[0.3, 0.5, 0.9],
        area_range=(0.3, 3.0),
        pad_val=(1, 2, 3),
    )
    assert [a.dumps() for a in augs] == META["aug"]["create_dumps"]
    assert mx.image.det.DetAugmenter is mx.image.detection.DetAugmenter is mx.image.DetAugmenter
    assert "ImageDetIter" in mx.image.__all__ and "ImageIter" in mx.image.__all__


def test_bad_arguments():
    with pytest.raises(ValueError, match="DetRandomCropAug: invalid area_range"):
        mx.image.DetRandomCropAug(area_range=(0.5, 0.1))
    with pytest.raises(ValueError, match="DetRandomCropAug: invalid aspect_ratio_range"):
        mx.image.DetRandomCropAug(aspect_ratio_range=(0, 1))
    with pytest.raises(ValueError, match="aspect_ratio_range must be a number or a pair"):
        mx.image.DetRandomCropAug(aspect_ratio_range=(1, 2, 3))
    with pytest.raises(ValueError, match="DetRandomPadAug: invalid area_range"):
        mx.image.DetRandomPadAug(area_range=(1.0, 1.0))
    with pytest.raises(ValueError, match="pad_val"):
        mx.image.DetRandomPadAug(pad_val="gray")
    with pytest.raises(ValueError, match="DetRandomPadAug: invalid area_range"):
        mx.image.CreateDetAugmenter((3, 30, 30), rand_pad=0.5, area_range=(0.1, 1.0))
    with pytest.raises(ValueError, match="area_range has 2 values, but other lists have 3"):
        mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.2, 0.3], area_range=[(0.1, 1.0), 0.5])
    with pytest.raises(TypeError, match="invalid Augmenter"):
        mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(0.5))
    with pytest.raises(ValueError, match="DetAugmenters only"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(ValueError, match="mean must be True, None or a numpy array"):
        mx.image.CreateDetAugmenter((3, 30, 30), mean=[1, 2])
    with pytest.raises(ValueError, match="data_shape"):
        mx.image.CreateDetAugmenter((30, 30))
    with pytest.raises(TypeError, match="must be an NDArray"):
        mx.image.DetHorizontalFlipAug(1.0)(np.zeros((4, 4, 3)), AUG_LABEL.copy())
    it = mx.image.ImageDetIter(1, (3, 8, 8), path_imgrec=REC)
    with pytest.raises(TypeError, match="ImageDetIter"):
        it.sync_label_shape(mx.io.NDArrayIter(np.zeros((2, 2))))


def test_copy_make_border_values_fill_missing_channels_with_zero():
    img = mx.nd.array(np.arange(18).reshape(2, 3, 3), dtype="uint8")
    out = mx.image.copyMakeBorder(img, 1, 0, 0, 1, type=0, values=(7,)).asnumpy()
    assert out[0, 0].tolist() == [7, 0, 0] and out[1, 3].tolist() == [7, 0, 0]
    out = mx.image.copyMakeBorder(img, 1, 0, 0, 1, type=0, value=7).asnumpy()
    assert out[0, 0].tolist() == [7, 7, 7]
    assert (out[1:, :3] == img.asnumpy()).all()
