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

import json
import time

from alternate import cli

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


if __name__ == "__main__":
    cli(__doc__, child, __file__)
