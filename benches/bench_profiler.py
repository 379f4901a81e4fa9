"""Profiler overhead: µs per `a = a + 1` on a (10, 10) array, 10,000 ops,
with the profiler off, on for operators only, and on for everything
(operators, API calls, memory counters, aggregate statistics).

Run after `make release`:  python benches/bench_profiler.py [--ops N] [--repeat R]
"""
import argparse
import os
import statistics
import tempfile
import time

import oxnet as mx
from oxnet import profiler


def run(n):
    a = mx.nd.ones((10, 10))
    a.wait_to_read()
    t0 = time.perf_counter()
    for _ in range(n):
        a = a + 1
    a.wait_to_read()
    return (time.perf_counter() - t0) / n * 1e6


def measure(n, repeat, config):
    out = []
    for _ in range(repeat):
        if config is not None:
            profiler.set_config(**config)
            profiler.set_state("run")
        us = run(n)
        if config is not None:
            profiler.set_state("stop")
            profiler.dump(finished=True)  # write and release the events, untimed
            profiler.dumps(reset=True)
        out.append(us)
    return statistics.median(out), min(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    trace = os.path.join(tempfile.mkdtemp(), "bench_profile.json")
    run(2000)  # warm up the pool and the engine
    ops_only = dict(profile_imperative=True, profile_symbolic=False, profile_memory=False,
                    profile_api=False, filename=trace)
    everything = dict(profile_all=True, aggregate_stats=True, filename=trace)
    rows = [("off", None), ("on (operators)", ops_only), ("on (profile_all)", everything)]
    results = {}
    # Interleave the configurations so machine noise hits them alike.
    for _ in range(2):
        for name, cfg in rows:
            med, best = measure(args.ops, args.repeat, cfg)
            prev = results.get(name)
            results[name] = (med, best) if prev is None or best < prev[1] else prev
    print(f"engine: {mx.engine.engine_type()}, {args.ops} ops of a = a + 1 on (10, 10), "
          f"median / best of {args.repeat} runs (x2 rounds)")
    off_med, off_best = results["off"]
    for name, _ in rows:
        med, best = results[name]
        extra = "" if name == "off" else f"   extra: {med - off_med:+.3f} µs/op (median), {best - off_best:+.3f} (best)"
        print(f"  profiler {name:<17} {med:7.3f} µs/op (median)  {best:7.3f} (best){extra}")


if __name__ == "__main__":
    main()
