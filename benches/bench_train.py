#!/usr/bin/env python3
"""The training stack, oxnet vs MXNet 1.9.1 (as shipped and with
OMP_NUM_THREADS=2), in alternating processes.

    OXNET_MXNET_PYTHON=<MXNet 1.9.1's python> python3 benches/bench_train.py [--rounds 3]

(without OXNET_MXNET_PYTHON, $MXNET_VENV/bin/python as the other benches;
with neither, only oxnet's column). Each process times, in milliseconds:
- mlp_fit_epoch_ms: Module.fit of an MLP 784-256-128-10 (relu, SoftmaxOutput)
  for one epoch of 60,000 random samples from NDArrayIter, batch 128, SGD
  with momentum 0.9 (after a warm-up fit on 1,280 samples);
- mnist_epoch_ms: one epoch of MNISTIter (batch 128, flat) over the 4,000
  bundled training digits (decompressed first), best of 5;
- csv_epoch_ms: CSVIter over a 10,000 x 100 CSV file (batch 100): creating
  the iterator (oxnet parses here, MXNet while iterating) plus one epoch,
  best of 3.
The child also prints samples/s and batches/s on stderr. Ratios are MXNet's
time over oxnet's (>1: oxnet faster).
"""

import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from alternate import launch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MNIST = os.path.join(ROOT, "examples", "data", "mnist")


def mlp(mx):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=256, name="fc1"), act_type="relu")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=128, name="fc2"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc3"), name="softmax")


def fit_once(mx, x, y):
    it = mx.io.NDArrayIter(x, y, batch_size=128)
    mod = mx.mod.Module(mlp(mx), context=mx.cpu())
    kw = {"progress": False} if mx.__name__ == "oxnet" else {}
    t = time.perf_counter()
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9},
            initializer=mx.init.Xavier(), **kw)
    mx.nd.waitall()
    return time.perf_counter() - t


def best(fn, tries):
    fn()
    return min(_timed(fn) for _ in range(tries))


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def child(which):
    import numpy as np

    mx = __import__(which)
    out = {}
    rng = np.random.RandomState(0)
    x = rng.rand(60000, 784).astype(np.float32)
    y = rng.randint(0, 10, 60000).astype(np.float32)
    fit_once(mx, x[:1280], y[:1280])
    secs = fit_once(mx, x, y)
    out["mlp_fit_epoch_ms"] = secs * 1e3
    print("%s: Module.fit MLP %.0f samples/s" % (which, 60000 / secs), file=sys.stderr)

    tmp = tempfile.mkdtemp()
    try:
        for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
            with gzip.open(os.path.join(MNIST, name + ".gz")) as src, open(os.path.join(tmp, name), "wb") as dst:
                shutil.copyfileobj(src, dst)
        mnist = mx.io.MNISTIter(image=os.path.join(tmp, "train-images-idx3-ubyte"),
                                label=os.path.join(tmp, "train-labels-idx1-ubyte"), batch_size=128, flat=True,
                                silent=True)

        def mnist_epoch():
            mnist.reset()
            for b in mnist:
                b.data[0].wait_to_read()

        secs = best(mnist_epoch, 5)
        out["mnist_epoch_ms"] = secs * 1e3
        print("%s: MNISTIter %.0f batches/s" % (which, (4000 // 128) / secs), file=sys.stderr)

        csv = os.path.join(tmp, "data.csv")
        np.savetxt(csv, np.random.RandomState(1).rand(10000, 100), delimiter=",", fmt="%.6f")

        def csv_epoch():
            it = mx.io.CSVIter(data_csv=csv, data_shape=(100,), batch_size=100)
            for b in it:
                b.data[0].wait_to_read()

        secs = best(csv_epoch, 3)
        out["csv_epoch_ms"] = secs * 1e3
        print("%s: CSVIter %.0f batches/s (creation + one epoch)" % (which, 100 / secs), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))


def columns():
    cols = [("oxnet", sys.executable, None)]
    mxpy = os.environ.get("OXNET_MXNET_PYTHON")
    if not mxpy:
        from mxnet_env import mxnet_python

        mxpy = mxnet_python()
    if mxpy:
        cols += [("mxnet", mxpy, None), ("mxnet_omp2", mxpy, {"OMP_NUM_THREADS": "2"})]
    return cols


def main(rounds):
    cols = columns()
    results = []
    for r in range(rounds):
        row = {}
        for name, py, extra in cols:
            res = launch(os.path.abspath(__file__), py, "mxnet" if name.startswith("mxnet") else "oxnet", extra)
            if res:
                row[name] = res
        results.append(row)
        print("round %d done" % (r + 1), flush=True)
    print("\nms, median over %d rounds; ratio = other / oxnet (>1: oxnet faster)" % rounds)
    print("%-20s" % "case" + "".join("%12s" % n for n, _, _ in cols) + "".join("%14s" % ("vs " + n)
                                                                             for n, _, _ in cols[1:]))
    for m in results[0].get("oxnet", {}):
        line = "%-20s" % m
        for n, _, _ in cols:
            vals = [row[n][m] for row in results if m in row.get(n, {})]
            line += "%12.1f" % statistics.median(vals) if vals else "%12s" % "-"
        for n, _, _ in cols[1:]:
            ratios = [row[n][m] / row["oxnet"][m] for row in results if m in row.get(n, {}) and
                      m in row.get("oxnet", {})]
            line += "%14s" % ("x%.2f" % statistics.median(ratios) if ratios else "-")
        print(line)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
        main(rounds)
