"""Image pipeline benchmark, side by side (issue 4):

    read bytes -> decode RGB -> resize shorter side to 256 -> random 224 crop
    -> random flip -> CHW float32 normalised, batches of 32

for oxnet ImageRecordIter and ImageIter, MXNet 1.9.1 ImageRecordIter and
ImageIter (run in a subprocess with $MXNET_VENV/bin/python when MXNET_VENV is set),
and Pillow on 2 threads (when Pillow is installed); plus decode-only
images/s on 1 and 2 threads (oxnet, and libjpeg-turbo through simplejpeg
when installed: the issue's ceiling measured here) and the speed-up of
``[mx.image.imdecode(b) for b in bufs]`` over decoding one by one.

Run after `make release` (a debug build is 10-50x slower):

    python benches/bench_image.py [--images DIR] [--n 256] [--threads 2]

The photos come from --images DIR, else $OXNET_BENCH_IMAGES when set, else
tests/data/images; they are packed into a temporary .rec (pass-through).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from workloads import save_results
from mxnet_env import mxnet_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MEAN = (123.68, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)
BATCH = 32


def photo_files(folder):
    files = sorted(glob.glob(os.path.join(folder, "*.jpg")))
    # EXIF/odd sizes are fine; skip tiny thumbnails that make the resize trivial
    return [f for f in files if os.path.getsize(f) > 20000] or files


def make_rec(mx, files, n, tmp):
    rec, idx = os.path.join(tmp, "bench.rec"), os.path.join(tmp, "bench.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(n):
        with open(files[i % len(files)], "rb") as f:
            w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 10), i, 0), f.read()))
    w.close()
    return rec, idx


def time_iter(make, n):
    it = make()
    t0 = time.perf_counter()
    count = 0
    for b in it:
        b.data[0].wait_to_read()
        count += b.data[0].shape[0] - (b.pad or 0)
    dt = time.perf_counter() - t0
    return count / dt


def bench_record_iter(mx, rec, idx, n, threads):
    return time_iter(
        lambda: mx.io.ImageRecordIter(
            path_imgrec=rec,
            path_imgidx=idx,
            data_shape=(3, 224, 224),
            batch_size=BATCH,
            resize=256,
            rand_crop=True,
            rand_mirror=True,
            mean_r=MEAN[0],
            mean_g=MEAN[1],
            mean_b=MEAN[2],
            std_r=STD[0],
            std_g=STD[1],
            std_b=STD[2],
            preprocess_threads=threads,
            shuffle=False,
        ),
        n,
    )


def bench_image_iter(mx, rec, idx, n):
    augs = [
        mx.image.ResizeAug(256, 1),
        mx.image.RandomCropAug((224, 224), 1),
        mx.image.HorizontalFlipAug(0.5),
        mx.image.CastAug(),
        mx.image.ColorNormalizeAug(mx.nd.array(MEAN), mx.nd.array(STD)),
    ]
    return time_iter(
        lambda: mx.image.ImageIter(BATCH, (3, 224, 224), path_imgrec=rec, path_imgidx=idx, aug_list=augs), n
    )


def mxnet_worker(args):
    """Runs inside the MXNet venv: prints a JSON dict of images/s."""
    import mxnet as mx

    out = {}
    rec, idx = args.rec, args.idx
    warm = min(args.n, 64)  # the same warm-up runs as oxnet's
    bench_record_iter(mx, rec, idx, warm, args.threads)
    out["record_iter"] = bench_record_iter(mx, rec, idx, args.n, args.threads)
    bench_image_iter(mx, rec, idx, warm)
    out["image_iter"] = bench_image_iter(mx, rec, idx, args.n)
    bufs = [open(f, "rb").read() for f in args.files]
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < 2.0:
        mx.image.imdecode(bufs[k % len(bufs)]).wait_to_read()
        k += 1
    out["decode_1"] = k / (time.perf_counter() - t0)
    print(json.dumps(out))


def pillow_pipeline(bufs, threads, n):
    import io
    import random

    import numpy as np
    from PIL import Image

    mean = np.array(MEAN, np.float32).reshape(3, 1, 1)
    std = np.array(STD, np.float32).reshape(3, 1, 1)

    def one(i):
        img = Image.open(io.BytesIO(bufs[i % len(bufs)])).convert("RGB")
        w, h = img.size
        s = 256 / min(w, h)
        img = img.resize((max(256, round(w * s)), max(256, round(h * s))), Image.BILINEAR)
        w, h = img.size
        rng = random.Random(i)
        x, y = rng.randint(0, w - 224), rng.randint(0, h - 224)
        img = img.crop((x, y, x + 224, y + 224))
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        a = np.asarray(img, np.float32).transpose(2, 0, 1)
        return (a - mean) / std

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        for _ in ex.map(one, range(n)):
            pass
    return n / (time.perf_counter() - t0)


def decode_rate(fn, bufs, threads, seconds=2.0):
    t0 = time.perf_counter()
    k = 0
    with ThreadPoolExecutor(threads) as ex:
        while time.perf_counter() - t0 < seconds:
            list(ex.map(fn, bufs))
            k += len(bufs)
    return k / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", default=None)
    ap.add_argument("--n", type=int, default=256, help="images per pipeline run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mxnet-worker", action="store_true")
    ap.add_argument("--rec")
    ap.add_argument("--idx")
    ap.add_argument("--files", nargs="*")
    args = ap.parse_args()
    if args.mxnet_worker:
        return mxnet_worker(args)

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import oxnet as mx

    folder = args.images or os.environ.get("OXNET_BENCH_IMAGES") or os.path.join(ROOT, "tests", "data", "images")
    if not os.path.isdir(folder):
        sys.exit(f"bench_image: image folder {folder} does not exist (--images DIR or OXNET_BENCH_IMAGES)")
    files = photo_files(folder)
    bufs = [open(f, "rb").read() for f in files]
    print(
        "images: %d photos from %s, %d per run, batch %d, %d threads"
        % (len(files), folder, args.n, BATCH, args.threads)
    )
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        rec, idx = make_rec(mx, files, args.n, tmp)
        # a short warm-up run before each measured one (both frameworks)
        warm = min(args.n, 64)
        bench_record_iter(mx, rec, idx, warm, args.threads)
        res["oxnet ImageRecordIter"] = bench_record_iter(mx, rec, idx, args.n, args.threads)
        bench_image_iter(mx, rec, idx, warm)
        res["oxnet ImageIter"] = bench_image_iter(mx, rec, idx, args.n)
        mxpy = mxnet_python()
        if mxpy:
            env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MXNET_CPU_WORKER_NTHREADS=str(args.threads))
            env.pop("PYTHONPATH", None)
            p = subprocess.run(
                [
                    mxpy,
                    os.path.abspath(__file__),
                    "--mxnet-worker",
                    "--rec",
                    rec,
                    "--idx",
                    idx,
                    "--n",
                    str(args.n),
                    "--threads",
                    str(args.threads),
                    "--files",
                ]
                + files,
                capture_output=True,
                text=True,
                env=env,
                timeout=1200,
            )
            if p.returncode == 0:
                m = json.loads(p.stdout.strip().splitlines()[-1])
                res["MXNet 1.9.1 ImageRecordIter"] = m["record_iter"]
                res["MXNet 1.9.1 ImageIter"] = m["image_iter"]
                res["MXNet 1.9.1 imdecode, 1 thread"] = m["decode_1"]
            else:
                print("(MXNet run failed: %s)" % p.stderr[-500:])
        else:
            print("(no MXNet venv: MXNet rows skipped)")
    try:
        import PIL  # noqa: F401

        res["Pillow, %d threads" % args.threads] = pillow_pipeline(bufs, args.threads, args.n)
    except ImportError:
        print("(Pillow not installed: Pillow row skipped)")

    def dec(b):
        return mx._native.imdecode_array(b, 1, True)

    res["oxnet decode only, 1 thread"] = decode_rate(dec, bufs, 1)
    res["oxnet decode only, 2 threads"] = decode_rate(dec, bufs, 2)
    # the ceiling of the table, on this machine: libjpeg-turbo
    # through simplejpeg (pip install simplejpeg), when installed
    try:
        import simplejpeg

        def turbo(b):
            return simplejpeg.decode_jpeg(b, "RGB")

        res["libjpeg-turbo (simplejpeg) decode only, 1 thread"] = decode_rate(turbo, bufs, 1)
        res["libjpeg-turbo (simplejpeg) decode only, 2 threads"] = decode_rate(turbo, bufs, 2)
    except ImportError:
        print("(simplejpeg not installed: libjpeg-turbo rows skipped)")
    # imdecode list comprehension: pushed to the engine vs one by one
    many = bufs * max(1, 64 // len(bufs))
    t0 = time.perf_counter()
    for b in many:
        mx.image.imdecode(b).wait_to_read()
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    imgs = [mx.image.imdecode(b) for b in many]
    for a in imgs:
        a.wait_to_read()
    par = time.perf_counter() - t0
    width = max(len(k) for k in res)
    print("%-*s %10s" % (width, "pipeline", "images/s"))
    for k, v in res.items():
        print("%-*s %10.1f" % (width, k, v))
    print(
        "imdecode list comprehension: %.1f images/s serial, %.1f pushed; speed-up x%.2f"
        % (len(many) / serial, len(many) / par, serial / par)
    )
    res["imdecode_speedup"] = serial / par
    save_results("image", res)


if __name__ == "__main__":
    main()
