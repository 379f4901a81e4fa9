"""Image IO tour: decode in parallel, augment, pack a RecordIO file and read
it back in batches with ImageRecordIter and ImageIter.

    python examples/image_pipeline.py
"""

import glob
import os
import random
import tempfile
import time

import numpy as np

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "..", "tests", "data", "images")


def main():
    files = sorted(glob.glob(os.path.join(IMAGES, "*.jpg")) + glob.glob(os.path.join(IMAGES, "*.png")))
    bufs = [open(f, "rb").read() for f in files]

    # 1. imdecode returns at once: the decodes run in parallel on the engine
    t0 = time.perf_counter()
    imgs = [mx.image.imdecode(b) for b in bufs]
    shapes = [im.shape for im in imgs]  # shapes are known before decoding ends
    mx.nd.waitall()
    print("decoded %d images in %.1f ms: %s ..." % (len(imgs), (time.perf_counter() - t0) * 1e3, shapes[:3]))

    # 2. augment one image the MXNet way
    random.seed(0)
    np.random.seed(0)
    augs = mx.image.CreateAugmenter(
        (3, 96, 96),
        resize=112,
        rand_crop=True,
        rand_mirror=True,
        mean=True,
        std=True,
        brightness=0.2,
        contrast=0.2,
        saturation=0.2,
    )
    x = imgs[0]
    for a in augs:
        x = a(x)
    print(
        "augmented:",
        x.shape,
        x.dtype.__name__ if hasattr(x.dtype, "__name__") else x.dtype,
        "mean %.3f" % float(x.asnumpy().mean()),
    )
    print("augmenters:", [a.dumps() for a in augs[:3]], "...")

    # 3. a corrupt image raises at the wait, naming why; the engine goes on
    bad = mx.image.imdecode(bufs[0][: len(bufs[0]) // 3])
    try:
        bad.asnumpy()
    except mx.base.MXNetError as e:
        print("corrupt image:", str(e).splitlines()[0][:100])

    with tempfile.TemporaryDirectory() as tmp:
        # 4. pack a .rec/.idx (raw bytes, as im2rec --pass-through)
        rec, idx = os.path.join(tmp, "demo.rec"), os.path.join(tmp, "demo.idx")
        w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
        for i, b in enumerate(bufs * 4):
            w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % len(bufs)), i, 0), b))
        w.close()
        print("wrote %s: %d records, %d bytes" % (os.path.basename(rec), len(bufs) * 4, os.path.getsize(rec)))

        # 5. ImageRecordIter: decode + augment + batch in Rust threads
        it = mx.io.ImageRecordIter(
            path_imgrec=rec,
            path_imgidx=idx,
            data_shape=(3, 64, 64),
            batch_size=8,
            resize=72,
            rand_crop=True,
            rand_mirror=True,
            shuffle=True,
            seed=1,
            mean_r=123.68,
            mean_g=116.28,
            mean_b=103.53,
            std_r=58.4,
            std_g=57.1,
            std_b=57.4,
            preprocess_threads=2,
        )
        t0 = time.perf_counter()
        n = 0
        for batch in it:
            n += batch.data[0].shape[0] - batch.pad
        print(
            "ImageRecordIter: %d images in %.2f s; last batch %s, labels %s"
            % (n, time.perf_counter() - t0, batch.data[0].shape, batch.label[0].asnumpy()[:4])
        )

        # 6. ImageIter: MXNet's Python augmenters, pushed to the engine
        it = mx.image.ImageIter(
            8,
            (3, 64, 64),
            path_imgrec=rec,
            path_imgidx=idx,
            shuffle=True,
            resize=72,
            rand_crop=True,
            rand_mirror=True,
            mean=True,
            std=True,
        )
        t0 = time.perf_counter()
        n = 0
        for b in it:
            b.data[0].wait_to_read()  # the batch is assembled on the engine
            n += b.data[0].shape[0] - b.pad
        print("ImageIter: %d images in %.2f s" % (n, time.perf_counter() - t0))

        # 7. NDArrayIter over in-memory arrays
        it = mx.io.NDArrayIter(np.arange(20.0).reshape(10, 2), np.arange(10.0), batch_size=4, last_batch_handle="pad")
        print("NDArrayIter pads:", [b.pad for b in it])


if __name__ == "__main__":
    main()
