"""Train a small convolutional network end to end on the bundled photos.

The task: given a random 32x32 crop (resized, mirrored at random) of one of
the bundled photos, say which photo it came from. Shows the main jobs
together: packing a RecordIO file, ImageRecordIter decoding and augmenting in
Rust threads, NN operators, autograd and single-call optimizer updates.

    python examples/train_convnet.py
"""
import glob
import os
import tempfile
import time

import numpy as np

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "..", "tests", "data", "images")
COPIES = 16  # each photo appears this many times per epoch, cropped differently


def pack(files, prefix):
    """Write prefix.rec/.idx: each photo's original bytes, COPIES times, label = photo number."""
    rec = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "w")
    i = 0
    for label, f in enumerate(files):
        raw = open(f, "rb").read()
        for _ in range(COPIES):
            rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(label), i, 0), raw))
            i += 1
    rec.close()
    return i


def init_params(n_classes, rs):
    shapes = {
        "c1_weight": (16, 3, 3, 3), "c1_bias": (16,),
        "c2_weight": (32, 16, 3, 3), "c2_bias": (32,),
        "f1_weight": (64, 32 * 8 * 8), "f1_bias": (64,),
        "f2_weight": (n_classes, 64), "f2_bias": (n_classes,),
    }
    params = {}
    for k, s in shapes.items():
        fan_in = int(np.prod(s[1:])) if len(s) > 1 else 1
        v = rs.normal(0, np.sqrt(2.0 / fan_in), s) if k.endswith("weight") else np.zeros(s)
        params[k] = mx.nd.array(v.astype(np.float32))
        params[k].attach_grad()
    return params


def forward(p, x):
    h = mx.nd.Convolution(x, p["c1_weight"], p["c1_bias"], kernel=(3, 3), pad=(1, 1), num_filter=16)
    h = mx.nd.Pooling(mx.nd.relu(h), pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = mx.nd.Convolution(h, p["c2_weight"], p["c2_bias"], kernel=(3, 3), pad=(1, 1), num_filter=32)
    h = mx.nd.Pooling(mx.nd.relu(h), pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = mx.nd.relu(mx.nd.FullyConnected(h, p["f1_weight"], p["f1_bias"], num_hidden=64))
    return mx.nd.FullyConnected(h, p["f2_weight"], p["f2_bias"], num_hidden=p["f2_bias"].shape[0])


def main():
    files = sorted(glob.glob(os.path.join(IMAGES, "*.jpg")) + glob.glob(os.path.join(IMAGES, "*.png")))
    n_classes = len(files)
    tmp = tempfile.mkdtemp(prefix="oxnet_train_")
    n = pack(files, os.path.join(tmp, "photos"))
    print(f"packed {n} records of {n_classes} photos into {tmp}/photos.rec")
    batch = 32
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(tmp, "photos.rec"), path_imgidx=os.path.join(tmp, "photos.idx"),
        data_shape=(3, 32, 32), batch_size=batch, resize=40, rand_crop=True, rand_mirror=True,
        shuffle=True, seed=1, mean_r=123.7, mean_g=116.3, mean_b=103.5, std_r=58.4, std_g=57.1, std_b=57.4,
        preprocess_threads=2,
    )
    mx.random.seed(0)
    params = init_params(n_classes, np.random.RandomState(0))
    moms = {k: mx.nd.zeros(v.shape) for k, v in params.items()}
    t0 = time.perf_counter()
    for epoch in range(12):
        it.reset()
        correct = total = 0
        loss_sum = 0.0
        for b in it:
            x, y = b.data[0], b.label[0]
            with mx.autograd.record():
                prob = mx.nd.SoftmaxOutput(forward(params, x), y)
            prob.backward()
            for k, w in params.items():
                mx.nd.sgd_mom_update(w, w.grad, moms[k], out=w, lr=0.01, momentum=0.9, wd=1e-4,
                                     rescale_grad=1.0 / batch)
            pn, yn = prob.asnumpy(), y.asnumpy().astype(int)
            keep = batch - b.pad
            loss_sum += -np.log(pn[np.arange(keep), yn[:keep]] + 1e-12).sum()
            correct += (pn[:keep].argmax(1) == yn[:keep]).sum()
            total += keep
        print(f"epoch {epoch:2d}  loss {loss_sum / total:.3f}  train accuracy {correct / total:.2f}")
    dt = time.perf_counter() - t0
    print(f"12 epochs in {dt:.1f} s ({12 * n / dt:.0f} images/s including decoding and augmentation)")
    if correct / total < 0.5:
        raise SystemExit("training did not converge")


if __name__ == "__main__":
    main()
