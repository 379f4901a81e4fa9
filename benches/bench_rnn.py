#!/usr/bin/env python3
"""The fused RNN operator, oxnet vs MXNet 1.9.1 (as shipped and with
OMP_NUM_THREADS=2), in alternating processes.

    python3 benches/bench_rnn.py [--rounds 3]

Each process times `mx.nd.RNN` forward (inference) and forward + backward
(under autograd.record, gradient of every input) for a few layer shapes
and prints milliseconds (best of 5 after a warm-up). NumPy has no fused
RNN, and PyTorch CPU cannot be installed here (PyPI serves only its CUDA
build), so the comparison is with MXNet alone. Ratios are MXNet's time over
oxnet's, per round, and their median (>1: oxnet faster).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name: (mode, layers, bidirectional, T, N, input size, state size)
CASES = {
    "lstm2": ("lstm", 2, False, 35, 32, 256, 256),
    "gru2": ("gru", 2, False, 35, 32, 256, 256),
    "bilstm1": ("lstm", 1, True, 50, 16, 128, 256),
}


def n_params(mode, layers, bi, i, h):
    g = {"lstm": 4, "gru": 3}.get(mode, 1)
    d = 2 if bi else 1
    return sum(d * (g * h * ((i if l == 0 else d * h) + h) + 2 * g * h) for l in range(layers))


def child(which):
    import numpy as np

    mx = __import__(which)
    out = {}
    for name, (mode, layers, bi, t, n, i, h) in CASES.items():
        rng = np.random.RandomState(0)
        d = 2 if bi else 1
        x = mx.nd.array(rng.uniform(-1, 1, (t, n, i)).astype(np.float32))
        w = mx.nd.array(rng.uniform(-0.05, 0.05, n_params(mode, layers, bi, i, h)).astype(np.float32))
        states = [mx.nd.zeros((layers * d, n, h))] * (2 if mode == "lstm" else 1)
        ins = [x, w] + states
        kw = dict(state_size=h, num_layers=layers, bidirectional=bi, mode=mode)

        def fwd():
            mx.nd.RNN(*ins, **kw).wait_to_read()

        def train():
            with mx.autograd.record():
                y = mx.nd.RNN(*ins, **kw)
            y.backward()
            mx.nd.waitall()

        for a in ins:
            a.attach_grad()
        for label, fn in (("fwd", fwd), ("fwd_bwd", train)):
            fn()
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            out[f"{name}_{label}"] = best * 1e3
    print(json.dumps(out))


def launch(python, which, extra_env=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env.update(extra_env or {})
    p = subprocess.run([python, os.path.abspath(__file__), "--child", which], capture_output=True, text=True,
                       env=env, timeout=900)
    if p.returncode != 0:
        print(f"[{which}] failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    cols = [("oxnet", sys.executable, None)]
    mxpy = os.path.join(os.environ.get("MXNET_VENV", "/work/venvs/mxnet"), "bin", "python")
    if os.path.exists(mxpy):
        cols += [("mxnet", mxpy, None), ("mxnet_omp2", mxpy, {"OMP_NUM_THREADS": "2"})]
    else:
        print("(MXNet venv not found: timing oxnet alone)")
    rounds = []
    for r in range(args.rounds):
        row = {}
        for name, py, extra in cols:
            res = launch(py, "mxnet" if name.startswith("mxnet") else name, extra)
            if res:
                row[name] = res
        rounds.append(row)
        print(f"round {r + 1}: " + "  ".join(
            f"{n} " + "/".join(f"{v:.1f}" for v in row[n].values()) for n in row), flush=True)
    metrics = list(rounds[0].get("oxnet", {}))
    print(f"\nms (best of 5), median over {args.rounds} rounds; ratio = other / oxnet (>1: oxnet faster)")
    print(f"{'case':<18}" + "".join(f"{n:>12}" for n, _, _ in cols) + "".join(
        f"{'vs ' + n:>16}" for n, _, _ in cols[1:]))
    for m in metrics:
        med = {n: statistics.median(row[n][m] for row in rounds if n in row) for n, _, _ in cols
               if any(n in row for row in rounds)}
        line = f"{m:<18}" + "".join(f"{med.get(n, float('nan')):>12.1f}" for n, _, _ in cols)
        for n, _, _ in cols[1:]:
            ratios = [row[n][m] / row["oxnet"][m] for row in rounds if n in row and "oxnet" in row]
            if ratios:
                line += f"{'x%.2f (%d/%d)' % (statistics.median(ratios), sum(x >= 1 for x in ratios), len(ratios)):>16}"
        print(line)


if __name__ == "__main__":
    main()
