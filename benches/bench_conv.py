"""3x3 convolution benchmark over ResNet-like layers, side by side:

    batch 32, C -> C channels, 3x3, pad 1, stride 1, float32:
    (64, 56x56), (128, 28x28), (256, 14x14), (512, 7x7)

forward and backward (data + weight + bias gradients, the forward
subtracted) GFLOP/s of the direct convolution, for oxnet with Winograd
F(2x2,3x3) (the default for >= 64 channels), oxnet with
OXNET_CONV_WINOGRAD=0 (its direct GEMM), and MXNet 1.9.1 as shipped and
with OMP_NUM_THREADS=2 (from $MXNET_VENV when set). Each
configuration runs in its own process, one after another, so compare the
columns of one run only (this VM's speed drifts by +-30% within minutes).

Run after `make release` (a debug build is 10-50x slower):

    python benches/bench_conv.py [--reps 3]
"""

import argparse
import json
import os
import subprocess
import sys

from workloads import _best, save_results
from mxnet_env import mxnet_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LAYERS = [(64, 56), (128, 28), (256, 14), (512, 7)]
BATCH = 32


def worker(framework, reps):
    """Runs in the framework's process: prints one JSON line."""
    import numpy as np

    if framework == "oxnet":
        import oxnet as mx
    else:
        import mxnet as mx
    out = {}
    for c, hw in LAYERS:
        rs = np.random.RandomState(0)
        x = mx.nd.array(rs.uniform(-1, 1, (BATCH, c, hw, hw)).astype(np.float32))
        w = mx.nd.array(rs.uniform(-0.1, 0.1, (c, c, 3, 3)).astype(np.float32))
        b = mx.nd.zeros((c,))
        og = mx.nd.ones((BATCH, c, hw, hw))
        flops = 2 * BATCH * c * hw * hw * c * 9

        def fwd():
            mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=c).wait_to_read()

        for a in (x, w, b):
            a.attach_grad()

        def fwd_bwd():
            with mx.autograd.record():
                y = mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=c)
            y.backward(og)
            for a in (x, w, b):
                a.grad.wait_to_read()

        def best(f):
            f()  # warm-up: allocations, weight transforms
            return _best(f, reps)

        tf = best(fwd)
        tb = best(fwd_bwd)
        key = "%d ch %dx%d" % (c, hw, hw)
        out[key + " fwd"] = flops / tf / 1e9
        out[key + " bwd"] = 2 * flops / max(tb - tf, 1e-9) / 1e9
    print(json.dumps(out))


def run(python, framework, env_extra, reps):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env.update(env_extra)
    p = subprocess.run(
        [python, os.path.abspath(__file__), "--worker", framework, "--reps", str(reps)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if p.returncode != 0:
        print("(%s failed: %s)" % (framework, p.stderr[-800:]))
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.reps)
    cols = {
        "oxnet": run(sys.executable, "oxnet", {}, args.reps),
        "oxnet direct": run(sys.executable, "oxnet", {"OXNET_CONV_WINOGRAD": "0"}, args.reps),
    }
    mxpy = mxnet_python()
    if mxpy:
        cols["mxnet"] = run(mxpy, "mxnet", {}, args.reps)
        cols["mxnet omp2"] = run(mxpy, "mxnet", {"OMP_NUM_THREADS": "2"}, args.reps)
    cols = {k: v for k, v in cols.items() if v}
    rows = list(cols["oxnet"]) if "oxnet" in cols else []
    print("GFLOP/s (direct-convolution FLOPs), batch %d, 3x3 pad 1" % BATCH)
    print("%-20s" % "layer" + "".join("%14s" % k for k in cols) + "   oxnet vs others")
    for r in rows:
        vals = [cols[k].get(r) for k in cols]
        ratios = ", ".join("%s x%.2f" % (k, cols["oxnet"][r] / cols[k][r]) for k in cols if k != "oxnet")
        print("%-20s" % r + "".join("%14.1f" % v for v in vals) + "   " + ratios)
    save_results("conv", cols)


if __name__ == "__main__":
    main()
