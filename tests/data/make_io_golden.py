"""Make the reference results of mx.image / mx.io / ImageIter / ImageRecordIter
with real Apache MXNet 1.9.1 (tests never import MXNet).

Run from the repository root with the reference environment:

    $MXNET_VENV/bin/python tests/data/make_io_golden.py

Writes tests/data/golden_io/: io.npz (arrays), io.json (shapes, rects,
dumps strings, labels, pads) and small.rec/.idx (six PNG records made with
mx.recordio.pack_img, so every decoder gives the same pixels).
Everything is seeded (Python's random and NumPy's global state are what
MXNet's augmenters draw from).
"""

import json
import os
import random

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "images")
OUT = os.path.join(HERE, "golden_io")

arrays = {}
meta = {}


def put(name, a):
    arrays[name] = np.asarray(a.asnumpy() if isinstance(a, mx.nd.NDArray) else a)


def seed(k):
    random.seed(k)
    np.random.seed(k)


def png_img():
    with open(os.path.join(IMAGES, "chelsea_120x80.png"), "rb") as f:
        return mx.image.imdecode(f.read())  # (80, 120, 3) RGB uint8


def decode_refs():
    out = {}
    for name in sorted(os.listdir(IMAGES)):
        if not name.endswith((".jpg", ".png")):
            continue
        with open(os.path.join(IMAGES, name), "rb") as f:
            buf = f.read()
        rgb = mx.image.imdecode(buf).asnumpy()
        gray = mx.image.imdecode(buf, flag=0).asnumpy()
        bgr = mx.image.imdecode(buf, to_rgb=False).asnumpy()
        out[name] = {
            "shape": list(rgb.shape),
            "gray_shape": list(gray.shape),
            "rgb_mean": rgb.reshape(-1, 3).mean(0).tolist(),
            "gray_mean": float(gray.mean()),
            "bgr_is_reversed_rgb": bool((bgr[:, :, ::-1] == rgb).all()),
        }
    meta["decode"] = out


def transforms():
    img = png_img()
    put("img", img)
    for interp in range(5):
        put("resize_down_%d" % interp, mx.image.imresize(img, 37, 23, interp=interp))
        put("resize_up_%d" % interp, mx.image.imresize(img, 151, 97, interp=interp))
    small = mx.image.fixed_crop(img, 10, 20, 10, 8)
    put("small", small)
    for t in range(5):
        put("border_%d" % t, mx.image.copyMakeBorder(small, 2, 3, 4, 1, type=t, value=7))
    put("border_values", mx.image.copyMakeBorder(small, 1, 1, 2, 2, type=0, values=(1.0, 2.0, 3.0)))
    put("resize_short_50", mx.image.resize_short(img, 50, interp=1))
    put("fixed_crop_resized", mx.image.fixed_crop(img, 5, 6, 50, 40, size=(25, 20), interp=1))
    out, rect = mx.image.center_crop(img, (40, 30), interp=1)
    put("center_crop", out)
    meta["center_crop_rect"] = list(rect)
    seed(3)
    out, rect = mx.image.random_crop(img, (40, 30), interp=1)
    put("random_crop", out)
    meta["random_crop_rect"] = list(rect)
    seed(5)
    out, rect = mx.image.random_size_crop(img, (32, 32), 0.3, (0.75, 1.33), interp=1)
    put("random_size_crop", out)
    meta["random_size_crop_rect"] = list(rect)
    meta["scale_down"] = [
        list(mx.image.scale_down((640, 480), (720, 120))),
        list(mx.image.scale_down((100, 50), (30, 60))),
    ]
    f = img.astype("float32")
    put(
        "color_normalize",
        mx.image.color_normalize(f.copy(), mx.nd.array([120.0, 110.0, 100.0]), mx.nd.array([60.0, 55.0, 50.0])),
    )


def augmenters():
    img = png_img()
    f = mx.image.fixed_crop(img, 30, 10, 32, 24).astype("float32")
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
    augs = {
        "brightness": mx.image.BrightnessJitterAug(0.5),
        "contrast": mx.image.ContrastJitterAug(0.5),
        "saturation": mx.image.SaturationJitterAug(0.5),
        "hue": mx.image.HueJitterAug(0.4),
        "lighting": mx.image.LightingAug(0.1, eigval, eigvec),
        "gray": mx.image.RandomGrayAug(1.0),
        "flip": mx.image.HorizontalFlipAug(1.0),
        "normalize": mx.image.ColorNormalizeAug(
            mx.nd.array([123.68, 116.28, 103.53]), mx.nd.array([58.395, 57.12, 57.375])
        ),
        "colorjitter": mx.image.ColorJitterAug(0.3, 0.3, 0.3),
    }
    dumps = {}
    for k, a in augs.items():
        seed(7)
        put("aug_" + k, a(f.copy()))
        d = a.dumps()
        dumps[k] = d if isinstance(d, str) else json.dumps(d)
    meta["aug_dumps"] = dumps
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
    meta["create_dumps"] = [a.dumps() if isinstance(a.dumps(), str) else json.dumps(a.dumps()) for a in al]
    for k in range(3):
        seed(100 + k)
        x = img
        for a in al:
            x = a(x)
        put("create_chain_%d" % k, x)
    al2 = mx.image.CreateAugmenter((3, 24, 32), rand_crop=True, rand_resize=True, rand_mirror=True, inter_method=1)
    meta["create2_dumps"] = [a.dumps() if isinstance(a.dumps(), str) else json.dumps(a.dumps()) for a in al2]
    seed(11)
    x = img
    for a in al2:
        x = a(x)
    put("create2_chain", x)


def make_small_rec():
    img = png_img().asnumpy()[:, :, ::-1]  # BGR for pack_img
    rec = os.path.join(OUT, "small.rec")
    idx = os.path.join(OUT, "small.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(6):
        y, x = 5 * i, 7 * i
        crop = np.ascontiguousarray(img[y : y + 48, x : x + 56])
        h = mx.recordio.IRHeader(0, [float(i), float(10 + i)], i, 0)
        w.write_idx(i, mx.recordio.pack_img(h, crop, quality=3, img_fmt=".png"))
    w.close()
    return rec, idx


def image_iters(rec, idx):
    res = {}
    for lbh in ("pad", "discard", "roll_over"):
        it = mx.image.ImageIter(
            4, (3, 24, 32), label_width=2, path_imgrec=rec, path_imgidx=idx, last_batch_handle=lbh, inter_method=1
        )
        out = []
        for epoch in range(2):
            for b in it:
                out.append({"label": b.label[0].asnumpy().tolist(), "pad": b.pad})
                put("imageiter_%s_%d" % (lbh, len(out) - 1), b.data[0])
            it.reset()
        res[lbh] = out
    seed(21)
    it = mx.image.ImageIter(
        3,
        (3, 24, 32),
        label_width=2,
        path_imgrec=rec,
        path_imgidx=idx,
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
        put("imageiter_shuffle_%d" % (len(out) - 1), b.data[0])
    res["shuffle"] = out
    it = mx.image.ImageIter(4, (3, 24, 32), label_width=2, path_imgrec=rec, inter_method=1)  # no .idx: sequential
    res["sequential"] = [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    it = mx.image.ImageIter(
        2, (3, 24, 32), label_width=2, path_imgrec=rec, path_imgidx=idx, num_parts=2, part_index=1, inter_method=1
    )
    res["part1"] = [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    # .lst + root over the real photos (labels only; JPEG decoders differ slightly)
    lst = os.path.join(OUT, "photos.lst")
    names = [
        "chelsea_160x107_thumb.jpg",
        "retina_160x120_444.jpg",
        "chelsea_120x80.png",
        "coffee_500x500_422.jpg",
        "camera_gray_512x512.jpg",
    ]
    with open(lst, "w") as f:
        for i, n in enumerate(names):
            f.write("%d\t%f\t%s\n" % (i, float(i * 2), n))
    it = mx.image.ImageIter(2, (3, 32, 32), path_imglist=lst, path_root=IMAGES, resize=40, inter_method=1)
    res["lst"] = [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    it = mx.image.ImageIter(2, (3, 32, 32), path_imglist=lst, path_root=IMAGES, resize=40, inter_method=1)
    b = it.next()
    put("imageiter_lst_0", b.data[0])
    it = mx.image.ImageIter(
        2,
        (3, 20, 20),
        imglist=[
            [1.0, "chelsea_120x80.png"],
            [[2.0, 3.0], "retina_160x120_444.jpg"],
            [4.0, 5.0, "chelsea_160x107_thumb.jpg"],
        ],
        path_root=IMAGES,
        label_width=2,
    )
    res["imglist"] = [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    meta["imageiter"] = res


def record_iters(rec, idx):
    res = {}
    it = mx.io.ImageRecordIter(
        path_imgrec=rec,
        path_imgidx=idx,
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
        preprocess_threads=1,
    )
    out = []
    for b in it:
        out.append({"label": b.label[0].asnumpy().tolist(), "pad": b.pad})
        put("recorditer_%d" % (len(out) - 1), b.data[0])
    res["center"] = out
    it = mx.io.ImageRecordUInt8Iter(
        path_imgrec=rec, path_imgidx=idx, data_shape=(3, 24, 32), batch_size=4, label_width=2, preprocess_threads=1
    )
    b = it.next()
    put("recorditer_u8_0", b.data[0])
    res["u8_dtype"] = str(b.data[0].dtype.__name__ if hasattr(b.data[0].dtype, "__name__") else b.data[0].dtype)
    it = mx.io.ImageRecordIter(
        path_imgrec=rec,
        path_imgidx=idx,
        data_shape=(3, 24, 32),
        batch_size=4,
        label_width=2,
        round_batch=False,
        preprocess_threads=1,
    )
    res["no_round"] = [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    try:
        mx.io.ImageRecordIter(
            path_imgrec=rec, path_imgidx=idx, data_shape=(3, 24, 32), batch_size=2, label_width=1, preprocess_threads=1
        )
        res["label_width_mismatch_raises"] = False
    except mx.base.MXNetError:
        res["label_width_mismatch_raises"] = True
    it = mx.io.ImageRecordIter(
        path_imgrec=rec, path_imgidx=idx, data_shape=(3, 24, 32), batch_size=2, label_width=2, preprocess_threads=1
    )
    res["provide_data"] = [[d.name, list(d.shape)] for d in it.provide_data]
    res["provide_label"] = [[d.name, list(d.shape)] for d in it.provide_label]
    meta["recorditer"] = res


def ndarray_iters():
    data = np.arange(30, dtype=np.float32).reshape(10, 3)
    label = np.arange(10, dtype=np.float32)
    res = {}
    for lbh in ("pad", "discard", "roll_over"):
        it = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle=lbh)
        out = []
        for epoch in range(3):
            for b in it:
                out.append({"data": b.data[0].asnumpy().tolist(), "label": b.label[0].asnumpy().tolist(), "pad": b.pad})
            it.reset()
        res[lbh] = out
    it = mx.io.NDArrayIter({"a": data, "b": data * 2}, {"y": label}, batch_size=3)
    res["provide_data"] = [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_data]
    res["provide_label"] = [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_label]
    it = mx.io.NDArrayIter(np.arange(3, dtype=np.float32).reshape(3, 1), batch_size=8, last_batch_handle="pad")
    res["big_pad"] = [{"data": b.data[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    np.random.seed(0)
    it = mx.io.NDArrayIter(data, label, batch_size=5, shuffle=True)
    res["shuffle"] = [{"data": b.data[0].asnumpy().tolist(), "label": b.label[0].asnumpy().tolist()} for b in it]
    meta["ndarrayiter"] = res
    d = mx.io.DataDesc("data", (2, 3))
    meta["datadesc_repr"] = repr(d)
    meta["databatch_str"] = str(mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))]))


def main():
    os.makedirs(OUT, exist_ok=True)
    meta["mxnet_version"] = mx.__version__
    decode_refs()
    transforms()
    augmenters()
    rec, idx = make_small_rec()
    image_iters(rec, idx)
    record_iters(rec, idx)
    ndarray_iters()
    np.savez_compressed(os.path.join(OUT, "io.npz"), **arrays)
    with open(os.path.join(OUT, "io.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print("wrote", OUT, len(arrays), "arrays")


if __name__ == "__main__":
    main()
