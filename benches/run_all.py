#!/usr/bin/env python3
"""Run every benchmark side by side and print ratios.

Frameworks: oxnet (this checkout, release build), NumPy, and when present
MXNet 1.9.1 from the venv at $MXNET_VENV (no default; make it
with `python3.11 -m venv DIR && DIR/bin/pip install mxnet==1.9.1 numpy==1.23.5`)
run both as shipped and with OMP_NUM_THREADS=2, and PyTorch CPU from
$TORCH_VENV when present. Results go to benches/results/<name>.json.
"""
import json
import os
import subprocess
import sys

from workloads import save_results
from mxnet_env import mxnet_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(python, which, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env.update(env_extra or {})
    p = subprocess.run([python, os.path.join(HERE, "workloads.py"), which], capture_output=True, text=True, env=env,
                       timeout=1800)
    if p.returncode != 0:
        print(f"[{which}] failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    cols = {}
    cols["oxnet"] = run(sys.executable, "oxnet")
    cols["numpy"] = run(sys.executable, "numpy")
    mxpy = mxnet_python()
    if mxpy:
        cols["mxnet"] = run(mxpy, "mxnet")
        cols["mxnet_omp2"] = run(mxpy, "mxnet", {"OMP_NUM_THREADS": "2"})
    tv = os.environ.get("TORCH_VENV")
    if tv and os.path.exists(os.path.join(tv, "bin", "python")):
        cols["torch"] = run(os.path.join(tv, "bin", "python"), "torch")
    else:
        print("(no TORCH_VENV: PyTorch CPU column skipped; PyPI serves only the multi-GB CUDA build here)")
    cols = {k: v for k, v in cols.items() if v}
    metrics = sorted({m for v in cols.values() for m in v})
    higher_better = lambda m: not (m.endswith("_us_per_op") or m.endswith("_MB"))
    names = list(cols)
    print(f"{'metric':<24}" + "".join(f"{n:>14}" for n in names) + "   oxnet vs others (>1: oxnet better)")
    for m in metrics:
        row = f"{m:<24}"
        for n in names:
            v = cols[n].get(m)
            row += f"{v:>14.2f}" if v is not None else f"{'-':>14}"
        ox = cols.get("oxnet", {}).get(m)
        ratios = []
        for n in names:
            if n == "oxnet" or m not in cols[n] or ox is None or not ox:
                continue
            r = (ox / cols[n][m]) if higher_better(m) else (cols[n][m] / ox)
            ratios.append(f"{n} x{r:.2f}")
        print(row + "   " + ", ".join(ratios))
    save_results("core", cols)


if __name__ == "__main__":
    main()
