"""Alternating-process timing shared by bench_rnn.py and bench_ops.py.

Each round runs every framework once, one fresh process each, in turn; a
child prints a JSON object of milliseconds. The table gives the median over
rounds of each figure, and the median of the per-round ratios other / oxnet
(>1: oxnet faster), which the machine's drift from minute to minute does
not move as much as a comparison of runs minutes apart.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from mxnet_env import mxnet_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def columns():
    """(name, python, extra env) for oxnet and, when its venv exists, MXNet
    1.9.1 as shipped and with OMP_NUM_THREADS=2."""
    cols = [("oxnet", sys.executable, None)]
    mxpy = mxnet_python()
    if mxpy:
        cols += [("mxnet", mxpy, None), ("mxnet_omp2", mxpy, {"OMP_NUM_THREADS": "2"})]
    return cols


def launch(script, python, which, extra_env=None):
    """Run `script --child which` and return its JSON result (None on failure)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env.update(extra_env or {})
    p = subprocess.run([python, script, "--child", which], capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        print(f"[{which}] failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    if p.stderr.strip():
        print(f"[{which}] {p.stderr.strip()[-500:]}", file=sys.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_rounds(script, rounds):
    """Alternate the frameworks for `rounds` rounds and print the table."""
    cols = columns()
    results = []
    for r in range(rounds):
        row = {}
        for name, py, extra in cols:
            res = launch(script, py, "mxnet" if name.startswith("mxnet") else name, extra)
            if res:
                row[name] = res
        results.append(row)
        print(f"round {r + 1} done", flush=True)
    metrics = list(results[0].get("oxnet", {}))
    print(f"\nms (best of 5), median over {rounds} rounds; ratio = other / oxnet (>1: oxnet faster), "
          "(rounds >= 1 of all)")
    print(f"{'case':<20}" + "".join(f"{n:>12}" for n, _, _ in cols)
          + "".join(f"{'vs ' + n:>18}" for n, _, _ in cols[1:]))
    for m in metrics:
        line = f"{m:<20}"
        for n, _, _ in cols:
            vals = [row[n][m] for row in results if row.get(n, {}).get(m) is not None]
            line += f"{statistics.median(vals):>12.3f}" if vals else f"{'-':>12}"
        for n, _, _ in cols[1:]:
            ratios = [row[n][m] / row["oxnet"][m] for row in results
                      if row.get(n, {}).get(m) and row.get("oxnet", {}).get(m)]
            if ratios:
                cell = "x%.2f (%d/%d)" % (statistics.median(ratios), sum(x >= 1 for x in ratios), len(ratios))
                line += f"{cell:>18}"
        print(line)


def cli(doc, child, script):
    """The command line of a benchmark script: `--rounds N` alternates the
    frameworks; `--child NAME` (internal) times one of them with `child`."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
    else:
        run_rounds(os.path.abspath(script), args.rounds)
