"""Make the reference results of mx.image's detection API (ImageDetIter and
the Det* augmenters) with real Apache MXNet 1.9.1 (tests never import MXNet).

Run from the repository root with the reference environment:

    $MXNET_VENV/bin/python tests/data/make_det_golden.py

Writes tests/data/golden_det/: det.rec/.idx (five PNG records with
detection labels: varied header widths, object counts and one empty box),
det.npz (a few images and batches) and det.json (labels, pads, shapes,
crop/pad rectangles, dumps strings). Everything is seeded: the augmenters draw from Python's
random (and ColorJitter / Lighting from NumPy's global state).
"""

import json
import os
import random

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "images")
OUT = os.path.join(HERE, "golden_det")

arrays = {}
meta = {}

# (x, y, w, h) of the crop of chelsea_120x80.png and the flat raw label
RECORDS = [
    ((0, 0, 64, 48), [2, 6, 1, 0.1, 0.2, 0.5, 0.6, 0, 2, 0.4, 0.3, 0.9, 0.95, 1]),
    ((10, 5, 56, 48), [4, 6, 7, 8, 0, 0.05, 0.05, 0.3, 0.4, 0, 3, 0.6, 0.5, 0.2, 0.9, 0, 1, 0.2, 0.1, 0.8, 0.7, 0]),
    ((30, 20, 48, 40), [3, 6, 5, 2, 0.25, 0.25, 0.75, 0.75, 1]),
    (
        (50, 10, 60, 60),
        [2, 6, 0, 0, 0, 0.2, 0.2, 0, 1, 0.3, 0.3, 0.6, 0.5, 0, 2, 0.5, 0.1, 0.95, 0.4, 1, 3, 0.1, 0.6, 0.45, 0.99, 0],
    ),
    ((20, 30, 40, 50), [2, 6, 4, 0.3, 0.1, 0.7, 0.9, 0]),
]
AUG_LABEL = np.array(
    [[0, 0.1, 0.2, 0.5, 0.6, 0], [1, 0.4, 0.3, 0.9, 0.95, 1], [2, 0.0, 0.7, 0.15, 1.0, 0]], dtype=np.float32
)


def put(name, a):
    arrays[name] = np.asarray(a.asnumpy() if isinstance(a, mx.nd.NDArray) else a)


def seed(k):
    random.seed(k)
    np.random.seed(k)


def png_img():
    with open(os.path.join(IMAGES, "chelsea_120x80.png"), "rb") as f:
        return mx.image.imdecode(f.read())  # (80, 120, 3) RGB uint8


def make_rec():
    img = png_img().asnumpy()[:, :, ::-1]  # BGR for pack_img
    rec = os.path.join(OUT, "det.rec")
    idx = os.path.join(OUT, "det.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, ((x, y, cw, ch), label) in enumerate(RECORDS):
        crop = np.ascontiguousarray(img[y : y + ch, x : x + cw])
        h = mx.recordio.IRHeader(0, np.array(label, dtype=np.float32), i, 0)
        w.write_idx(i, mx.recordio.pack_img(h, crop, quality=3, img_fmt=".png"))
    w.close()
    return rec, idx


def batches(it, name, epochs=2):
    out = []
    for _ in range(epochs):
        for b in it:
            if name:  # float16 keeps the file small; tests compare with atol >= 0.05
                put("%s_%d" % (name, len(out)), b.data[0].asnumpy().astype(np.float16))
            out.append({"label": b.label[0].asnumpy().tolist(), "pad": b.pad})
        it.reset()
    return out


def iters(rec, idx):
    res = {}
    for lbh in ("pad", "discard", "roll_over"):
        it = mx.image.ImageDetIter(
            2, (3, 24, 32), path_imgrec=rec, path_imgidx=idx, last_batch_handle=lbh, inter_method=1
        )
        res[lbh] = batches(it, "plain" if lbh == "pad" else None)
    res["label_shape"] = list(it.label_shape)
    res["provide_label"] = [it.provide_label[0][0], list(it.provide_label[0][1])]
    res["provide_data"] = [it.provide_data[0][0], list(it.provide_data[0][1])]
    it = mx.image.ImageDetIter(2, (3, 24, 32), path_imgrec=rec, inter_method=1)  # no index: in order
    res["noidx"] = batches(it, None, 1)
    seed(5)
    it = mx.image.ImageDetIter(
        2,
        (3, 32, 32),
        path_imgrec=rec,
        path_imgidx=idx,
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
    res["aug"] = batches(it, "aug")
    # imglist source (files in tests/data/images) and sync_label_shape
    imglist = [
        [2, 6, 1, 0.1, 0.1, 0.6, 0.7, 0, "chelsea_120x80.png"],
        [[3, 6, 9, 0, 0.2, 0.3, 0.4, 0.5, 1, 1, 0.5, 0.5, 0.9, 0.9, 0], "chelsea_160x107_thumb.jpg"],
    ]
    val = mx.image.ImageDetIter(2, (3, 24, 32), imglist=imglist, path_root=IMAGES, inter_method=1)
    res["imglist_label_shape"] = list(val.label_shape)
    res["imglist_labels"] = [b.label[0].asnumpy().tolist() for b in val]
    val.reset()
    val = it.sync_label_shape(val)
    res["synced_label_shape"] = [list(it.label_shape), list(val.label_shape)]
    res["synced_labels"] = [b.label[0].asnumpy().tolist() for b in val]
    res["synced_provide_label"] = list(val.provide_label[0][1])
    meta["iter"] = res


def augmenters():
    img = mx.image.fixed_crop(png_img(), 20, 10, 64, 48)  # (48, 64, 3)
    res = {}
    seed(1)
    out, lab = mx.image.DetHorizontalFlipAug(1.0)(img, AUG_LABEL.copy())
    assert (out.asnumpy() == img.asnumpy()[:, ::-1]).all()
    res["flip_label"] = lab.tolist()
    pads = []
    for k in range(4):
        seed(k)
        aug = mx.image.DetRandomPadAug(pad_val=(10, 20, 30))
        out, lab = aug(img, AUG_LABEL.copy())
        seed(k)
        rect = list(aug._random_pad_proposal(AUG_LABEL.copy(), 48, 64)[:4])
        pads.append({"label": lab.tolist(), "rect": rect, "shape": list(out.shape)})
        if k == 0:
            put("pad_img_0", out)
    res["pad"] = pads
    seed(3)
    out, lab = mx.image.DetRandomPadAug(aspect_ratio_range=1.0, area_range=(1.5, 2.0), pad_val=7)(img, AUG_LABEL.copy())
    put("pad_scalar_img", out)
    res["pad_scalar"] = lab.tolist()
    crops = []
    for moc in (0.0, 0.5, 0.95):
        for mec in (0.3, 0.8):
            for k in range(4):
                seed(10 * k + 1)
                aug = mx.image.DetRandomCropAug(min_object_covered=moc, min_eject_coverage=mec, area_range=(0.1, 1.0))
                out, lab = aug(img, AUG_LABEL.copy())
                seed(10 * k + 1)
                rect = list(aug._random_crop_proposal(AUG_LABEL.copy(), 48, 64)[:4])
                c = {"moc": moc, "mec": mec, "seed": 10 * k + 1, "shape": list(out.shape), "label": lab.tolist()}
                c["rect"] = rect
                crops.append(c)
                if len(crops) == 1:
                    put("crop_img_0", out)
    res["crop"] = crops
    select = mx.image.CreateMultiRandCropAugmenter(
        min_object_covered=[0.1, 0.3, 0.7], aspect_ratio_range=(0.5, 2.0), area_range=[(0.1, 1.0), (0.3, 1.0), 0.5]
    )
    res["select_dumps"] = select.dumps()
    sel = []
    for k in range(5):
        seed(k)
        out, lab = select(img, AUG_LABEL.copy())
        sel.append({"shape": list(out.shape), "label": lab.tolist()})
    res["select"] = sel
    res["create_dumps"] = [
        a.dumps()
        for a in mx.image.CreateDetAugmenter(
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
    ]
    res["create_default_dumps"] = [a.dumps() for a in mx.image.CreateDetAugmenter((3, 30, 40))]
    meta["aug"] = res


def main():
    os.makedirs(OUT, exist_ok=True)
    meta["mxnet_version"] = mx.__version__
    rec, idx = make_rec()
    iters(rec, idx)
    augmenters()
    np.savez_compressed(os.path.join(OUT, "det.npz"), **arrays)
    with open(os.path.join(OUT, "det.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print("wrote", OUT, len(arrays), "arrays")


if __name__ == "__main__":
    main()
