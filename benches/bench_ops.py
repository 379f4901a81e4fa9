#!/usr/bin/env python3
"""Single operators beyond the core set, oxnet vs MXNet 1.9.1 (as shipped
and with OMP_NUM_THREADS=2), in alternating processes.

    python3 benches/bench_ops.py [--rounds 3]

Each process times each operator call on a mid-sized input (best of 5
after a warm-up, waiting for the result) and prints milliseconds: image
preprocessing (to_tensor, normalize, resize of a 480x640 uint8 photo-sized
array), optimizer updates on 1M parameters (and multi_sgd_mom_update on ten
100k tensors), detection and resizing operators on an (8, 64, 56, 56)
feature map, batched Cholesky, cumsum, samplers, topk, softmax over
channels, gammaln, LRN, LayerNorm, where, SoftmaxOutput, an NCHW to NHWC
transpose, average pooling. NumPy has no counterpart for most of them and PyTorch
CPU cannot be installed here (PyPI serves only its CUDA build), so the
comparison is with MXNet alone.
"""

import json
import sys
import time

from alternate import cli


def cases(mx, np):
    nd = mx.nd
    rng = np.random.RandomState(0)
    img = nd.array(rng.randint(0, 255, (480, 640, 3)), dtype="uint8")
    imgf = nd.array(rng.rand(3, 480, 640).astype(np.float32))
    big = nd.array(rng.rand(1000000).astype(np.float32))
    g = nd.array(rng.rand(1000000).astype(np.float32))
    m, v = nd.zeros(1000000), nd.zeros(1000000)
    ws = [nd.array(rng.rand(100000).astype(np.float32)) for _ in range(10)]
    gs = [nd.array(rng.rand(100000).astype(np.float32)) for _ in range(10)]
    ms = [nd.zeros(100000) for _ in range(10)]
    feat = nd.array(rng.rand(8, 64, 56, 56).astype(np.float32))
    rois = nd.array(np.array([[i % 8, 4, 4, 40, 40] for i in range(128)], dtype=np.float32))
    boxes = nd.array(np.concatenate([rng.randint(0, 3, (1, 2000, 1)), rng.rand(1, 2000, 1),
                                     np.sort(rng.rand(1, 2000, 4) * 100, axis=-1)], -1).astype(np.float32))
    a = rng.rand(32, 64, 64)
    spd = nd.array((a @ a.transpose(0, 2, 1) + 64 * np.eye(64)).astype(np.float32))
    mixed = [x for t in zip(ws, gs, ms) for x in t]
    x4 = nd.array(rng.rand(8, 32, 56, 56).astype(np.float32))
    cond, neg = x4 > 0.5, -x4
    probs = nd.array(rng.rand(2000, 100).astype(np.float32))
    plabel = nd.array(rng.randint(0, 100, 2000).astype(np.float32))
    return {
        "to_tensor": lambda: nd.image.to_tensor(img),
        "normalize": lambda: nd.image.normalize(imgf, mean=(0.5, 0.4, 0.3), std=(0.2, 0.2, 0.2)),
        "image_resize": lambda: nd.image.resize(img, size=(224, 224)),
        "adam_update": lambda: nd.adam_update(big, g, m, v, lr=0.01, out=big),
        "sgd_mom_update": lambda: nd.sgd_mom_update(big, g, m, lr=0.01, momentum=0.9, out=big),
        "multi_sgd_mom": lambda: nd.multi_sgd_mom_update(*mixed, lrs=[0.01] * 10, wds=[0.0] * 10, momentum=0.9,
                                                         num_weights=10, out=ws),
        "BilinearResize2D": lambda: nd.contrib.BilinearResize2D(feat, height=112, width=112),
        "AdaptiveAvgPool": lambda: nd.contrib.AdaptiveAvgPooling2D(feat, output_size=7),
        "ROIAlign": lambda: nd.contrib.ROIAlign(feat, rois, pooled_size=(7, 7), spatial_scale=1.0),
        "box_nms": lambda: nd.contrib.box_nms(boxes, overlap_thresh=0.5, topk=400, coord_start=2, score_index=1,
                                              id_index=0),
        "linalg_potrf": lambda: nd.linalg.potrf(spd),
        "cumsum": lambda: nd.cumsum(feat, axis=3),
        "gamma_sample": lambda: nd.random.gamma(2.0, 1.0, shape=(1000000,)),
        "poisson_sample": lambda: nd.random.poisson(4.0, shape=(1000000,)),
        "topk_k5_of_56": lambda: nd.topk(feat.reshape((-1, 56)), k=5, axis=-1),
        "softmax_axis1": lambda: nd.softmax(feat, axis=1),
        "gammaln": lambda: nd.gammaln(big + 1),
        "LRN": lambda: nd.LRN(x4, nsize=5),
        "LayerNorm_last": lambda: nd.LayerNorm(x4, nd.ones(56), nd.zeros(56)),
        "where": lambda: nd.where(cond, x4, neg),
        "SoftmaxOutput": lambda: nd.SoftmaxOutput(probs, plabel),
        "transpose_NHWC": lambda: nd.transpose(x4, axes=(0, 2, 3, 1)),
        "Pooling_avg_3x3s2": lambda: nd.Pooling(x4, kernel=(3, 3), stride=(2, 2), pool_type="avg"),
    }


def child(which):
    import numpy as np

    mx = __import__(which)
    out = {}
    for name, fn in cases(mx, np).items():
        try:
            fn()
            mx.nd.waitall()
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                fn()
                mx.nd.waitall()
                best = min(best, time.perf_counter() - t0)
            out[name] = best * 1e3
        except Exception as e:  # an operator missing in one framework
            print(f"{name}: {str(e)[:200]}", file=sys.stderr)
            out[name] = None
    print(json.dumps(out))


if __name__ == "__main__":
    cli(__doc__, child, __file__)
