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
