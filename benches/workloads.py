"""Benchmark workloads written once against the MXNet 1.x API, run with
``import oxnet as mx`` or ``import mxnet as mx`` (and NumPy equivalents).

Usage (one framework per process, prints one JSON line):
    python benches/workloads.py oxnet|mxnet|numpy|torch
"""
import gc
import json
import os
import resource
import sys
import time

import numpy as np


def _best(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def save_results(name, data):
    """Write `data` as JSON to benches/results/<name>.json."""
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(data, f, indent=1)


def _rss_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_mx(mx):
    res = {}
    # 1. a = a + 1 on a tiny array: per-op overhead.
    a = mx.nd.zeros((10, 10))
    n = 10000

    def small():
        nonlocal a
        for _ in range(n):
            a = a + 1
        mx.nd.waitall()

    small()
    res["add_small_us_per_op"] = _best(small) / n * 1e6
    # 2. the same on (1000, 1000) float32: bandwidth (8 bytes per element).
    b = mx.nd.zeros((1000, 1000))
    m = 300

    def big():
        nonlocal b
        for _ in range(m):
            b = b + 1
        mx.nd.waitall()

    big()
    res["add_big_GBps"] = 8e6 * m / _best(big) / 1e9
    # 3. dot.
    for k in (1024, 2048):
        x = mx.nd.array(np.random.rand(k, k).astype(np.float32))
        y = mx.nd.array(np.random.rand(k, k).astype(np.float32))
        reps = 10 if k == 1024 else 3

        def mm():
            for _ in range(reps):
                z = mx.nd.dot(x, y)
            z.wait_to_read()

        mm()
        res[f"dot{k}_GFLOPs"] = 2 * k**3 * reps / _best(mm) / 1e9
    # 4. RSS of a 10-op loop: after 100 iterations vs after 10,000.
    w = mx.nd.ones((256, 256))

    def loop(iters):
        nonlocal w
        for _ in range(iters):
            t = w * 0.5
            t = t + 1
            t = mx.nd.exp(t)
            t = mx.nd.log(t)
            t = t - 1
            t = t * 2
            t = mx.nd.relu(t)
            t = t + w
            t = t / 2
            w = mx.nd.sqrt(t * t)
        mx.nd.waitall()

    loop(100)
    gc.collect()
    r100 = _rss_mb()
    loop(10000)
    gc.collect()
    r10k = _rss_mb()
    res["rss_after_100_MB"] = r100
    res["rss_after_10000_MB"] = r10k
    res["peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res.update(run_nn(mx))
    return res


def run_nn(mx):
    """Convolution forward/backward GFLOP/s and a LeNet training step."""
    res = {}
    x = mx.nd.array(np.random.rand(32, 64, 56, 56).astype(np.float32))
    w = mx.nd.array(np.random.rand(64, 64, 3, 3).astype(np.float32) * 0.1)
    b = mx.nd.zeros((64,))
    flops = 2 * 32 * 64 * 56 * 56 * 64 * 9
    reps = 4

    def fwd():
        for _ in range(reps):
            y = mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=64)
        y.wait_to_read()

    fwd()
    res["conv_fwd_GFLOPs"] = flops * reps / _best(fwd) / 1e9
    for a in (x, w, b):
        a.attach_grad()
    og = mx.nd.ones((32, 64, 56, 56))

    def bwd():
        for _ in range(reps):
            with mx.autograd.record():
                y = mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=64)
            y.backward(og)
        x.grad.wait_to_read()
        w.grad.wait_to_read()
        b.grad.wait_to_read()

    # Backward = data gradient + weight gradient (2x the forward's FLOPs),
    # timed with its forward subtracted.
    bwd()
    t_fwd = _best(fwd)
    res["conv_bwd_GFLOPs"] = 2 * flops * reps / max(_best(bwd) - t_fwd, 1e-9) / 1e9

    # LeNet (conv 20 5x5, tanh, max-pool, conv 50 5x5, tanh, max-pool, fc 500,
    # tanh, fc 10, SoftmaxOutput), autograd + sgd_mom_update, batch 64.
    rs = np.random.RandomState(0)
    shapes = {"c1w": (20, 1, 5, 5), "c1b": (20,), "c2w": (50, 20, 5, 5), "c2b": (50,),
              "f1w": (500, 800), "f1b": (500,), "f2w": (10, 500), "f2b": (10,)}
    params = {k: mx.nd.array(rs.normal(0, 0.05, s).astype(np.float32)) for k, s in shapes.items()}
    moms = {k: mx.nd.zeros(s) for k, s in shapes.items()}
    for p in params.values():
        p.attach_grad()
    data = mx.nd.array(rs.rand(64, 1, 28, 28).astype(np.float32))
    label = mx.nd.array(rs.randint(0, 10, 64).astype(np.float32))
    P = params

    def step():
        with mx.autograd.record():
            h = mx.nd.Convolution(data, P["c1w"], P["c1b"], kernel=(5, 5), num_filter=20)
            h = mx.nd.Pooling(mx.nd.tanh(h), pool_type="max", kernel=(2, 2), stride=(2, 2))
            h = mx.nd.Convolution(h, P["c2w"], P["c2b"], kernel=(5, 5), num_filter=50)
            h = mx.nd.Pooling(mx.nd.tanh(h), pool_type="max", kernel=(2, 2), stride=(2, 2))
            h = mx.nd.tanh(mx.nd.FullyConnected(h, P["f1w"], P["f1b"], num_hidden=500))
            h = mx.nd.FullyConnected(h, P["f2w"], P["f2b"], num_hidden=10)
            out = mx.nd.SoftmaxOutput(h, label)
        out.backward()
        for k in P:
            mx.nd.sgd_mom_update(P[k], P[k].grad, moms[k], out=P[k], lr=0.01, momentum=0.9, rescale_grad=1 / 64)

    steps = 20

    def train():
        for _ in range(steps):
            step()
        mx.nd.waitall()

    train()
    res["lenet_train_samples_per_s"] = 64 * steps / _best(train)
    return res


def run_numpy():
    res = {}
    a = np.zeros((10, 10), np.float32)
    n = 10000

    def small():
        nonlocal a
        for _ in range(n):
            a = a + 1

    small()
    res["add_small_us_per_op"] = _best(small) / n * 1e6
    b = np.zeros((1000, 1000), np.float32)
    m = 300

    def big():
        nonlocal b
        for _ in range(m):
            b = b + 1

    big()
    res["add_big_GBps"] = 8e6 * m / _best(big) / 1e9
    for k in (1024, 2048):
        x = np.random.rand(k, k).astype(np.float32)
        y = np.random.rand(k, k).astype(np.float32)
        reps = 10 if k == 1024 else 3

        def mm():
            for _ in range(reps):
                np.dot(x, y)

        mm()
        res[f"dot{k}_GFLOPs"] = 2 * k**3 * reps / _best(mm) / 1e9
    return res


def run_torch():
    import torch

    res = {}
    a = torch.zeros((10, 10))
    n = 10000

    def small():
        nonlocal a
        for _ in range(n):
            a = a + 1

    small()
    res["add_small_us_per_op"] = _best(small) / n * 1e6
    b = torch.zeros((1000, 1000))
    m = 300

    def big():
        nonlocal b
        for _ in range(m):
            b = b + 1

    big()
    res["add_big_GBps"] = 8e6 * m / _best(big) / 1e9
    for k in (1024, 2048):
        x = torch.rand(k, k)
        y = torch.rand(k, k)
        reps = 10 if k == 1024 else 3

        def mm():
            for _ in range(reps):
                torch.mm(x, y)

        mm()
        res[f"dot{k}_GFLOPs"] = 2 * k**3 * reps / _best(mm) / 1e9
    return res


if __name__ == "__main__":
    which = sys.argv[1]
    np.random.seed(0)
    if which == "oxnet":
        import oxnet as mx

        out = run_mx(mx)
    elif which == "mxnet":
        import mxnet as mx

        out = run_mx(mx)
    elif which == "numpy":
        out = run_numpy()
    elif which == "torch":
        out = run_torch()
    else:
        sys.exit(f"unknown framework {which}")
    print(json.dumps(out))
