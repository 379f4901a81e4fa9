#!/usr/bin/env python3
"""float32 matrix product, oxnet vs NumPy (and MXNet 1.9.1), in alternating processes.

On a shared 2-core VM the speed of the whole machine drifts by 10-50% from
minute to minute, so one timing of each framework a few minutes apart says
little about a difference of a few percent. This script runs the frameworks
in turn, one fresh process each, for several rounds, and reports every
round's figures and the median of the per-round ratios.

    python3 benches/bench_dot.py [--rounds 5] [--sizes 1024,2048] [--threads 1|2]

Each process times `dot` of two random (k, k) float32 matrices (10 products
for k <= 1024, else 3; best of 5 runs) and prints GFLOP/s. oxnet pushes the
products to its engine and waits for the last one, as a user's loop would;
NumPy and MXNet are timed the same way (MXNet's `dot` is asynchronous too).
With --threads 1 every framework is limited to one thread (oxnet: one engine
worker and one kernel thread).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from mxnet_env import mxnet_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(which, sizes):
    import numpy as np

    rng = np.random.RandomState(0)
    out = {}
    if which in ("oxnet", "mxnet"):
        mx = __import__(which)
    for k in sizes:
        x = rng.rand(k, k).astype(np.float32)
        y = rng.rand(k, k).astype(np.float32)
        reps = 10 if k <= 1024 else 3
        if which == "numpy":

            def run():
                for _ in range(reps):
                    z = x @ y
                return z

        else:
            xa, ya = mx.nd.array(x), mx.nd.array(y)

            def run():
                for _ in range(reps):
                    z = mx.nd.dot(xa, ya)
                z.wait_to_read()
                return z

        run()
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t)
        out[str(k)] = 2 * k**3 * reps / best / 1e9
    print(json.dumps(out))


def launch(python, which, sizes, threads, extra_env=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    if threads == 1:
        env.update(
            {
                "OXNET_CPU_WORKER_NTHREADS": "1",
                "RAYON_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1",
            }
        )
    env.update(extra_env or {})
    p = subprocess.run(
        [python, os.path.abspath(__file__), "--child", which, "--sizes", ",".join(map(str, sizes))],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if p.returncode != 0:
        print(f"[{which}] failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="1024,2048")
    ap.add_argument("--threads", type=int, choices=(1, 2), default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        child(args.child, sizes)
        return
    cols = [("oxnet", sys.executable, None), ("numpy", sys.executable, None)]
    mxpy = mxnet_python()
    if mxpy:
        cols.append(("mxnet", mxpy, None))
        if args.threads == 2:
            cols.append(("mxnet_omp2", mxpy, {"OMP_NUM_THREADS": "2"}))
    rounds = []
    for r in range(args.rounds):
        row = {}
        for name, py, extra in cols:
            which = "mxnet" if name.startswith("mxnet") else name
            res = launch(py, which, sizes, args.threads, extra)
            if res:
                row[name] = res
        rounds.append(row)
        print(
            f"round {r + 1}: " + "  ".join(f"{n} " + "/".join(f"{row[n][str(k)]:.1f}" for k in sizes) for n in row),
            flush=True,
        )
    print(
        f"\nGFLOP/s for k = {'/'.join(map(str, sizes))}, {args.threads} thread(s); "
        "oxnet / other per round, median over rounds (>1: oxnet faster)"
    )
    for name, _, _ in cols[1:]:
        for k in sizes:
            ratios = [row["oxnet"][str(k)] / row[name][str(k)] for row in rounds if "oxnet" in row and name in row]
            if ratios:
                print(
                    f"  vs {name:<11} k={k}: median x{statistics.median(ratios):.3f}  "
                    f"(min x{min(ratios):.3f}, max x{max(ratios):.3f}, {sum(r >= 1 for r in ratios)}/{len(ratios)} >= 1)"
                )


if __name__ == "__main__":
    main()
