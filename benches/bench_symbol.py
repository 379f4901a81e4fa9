#!/usr/bin/env python3
"""The symbolic executor, oxnet vs MXNet 1.9.1 (as shipped and with
OMP_NUM_THREADS=2), in alternating processes.

    MXNET_VENV=<venv with mxnet==1.9.1> python3 benches/bench_symbol.py [--rounds 3]

Each process times (best of 5 after a warm-up):
- mlp_fwd_us: an MLP 512-256-128-2 (FullyConnected + relu, twice, then
  FullyConnected) bound once with simple_bind, batch 1: forward + wait, in
  microseconds (mean of 2,000 calls per try);
- mlp_numpy_us (oxnet's process only): the same forward written by hand in
  NumPy, the target the issue sets;
- resnet50_bind_ms: simple_bind of a ResNet-50 symbol (built below) for a
  batch of 32 images of 224x224, milliseconds;
- resnet18_step_ms: one training step (forward + backward) of a ResNet-18
  symbol on a batch of 8 images of 64x64, milliseconds.
oxnet's process also prints, on stderr, the bytes its memory planning gives
the ResNet-18 training step against the unplanned sum. PyTorch CPU cannot be
installed here (PyPI serves only its multi-GB CUDA build), so the other
columns are MXNet's. Ratios are MXNet's time over oxnet's (>1: oxnet faster).
"""

import sys
import time

from alternate import cli


def mlp(mx):
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=256, name="fc1"), act_type="relu")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=128, name="fc2"), act_type="relu")
    return mx.sym.FullyConnected(h, num_hidden=2, name="fc3")


def resnet(mx, units, bottleneck, filters, num_classes=1000):
    """A ResNet v1 symbol: `units` residual units per stage."""
    def conv_bn(x, c, k, s, name, act=True):
        x = mx.sym.Convolution(x, num_filter=c, kernel=(k, k), stride=(s, s), pad=(k // 2, k // 2),
                               no_bias=True, name=name + "_conv")
        x = mx.sym.BatchNorm(x, fix_gamma=False, name=name + "_bn")
        return mx.sym.Activation(x, act_type="relu") if act else x

    x = conv_bn(mx.sym.var("data"), 64, 7, 2, "stem")
    x = mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    for stage, (n, c) in enumerate(zip(units, filters)):
        for u in range(n):
            s = 2 if (u == 0 and stage > 0) else 1
            name = "s%du%d" % (stage, u)
            out_c = c * 4 if bottleneck else c
            if bottleneck:
                y = conv_bn(x, c, 1, 1, name + "a")
                y = conv_bn(y, c, 3, s, name + "b")
                y = conv_bn(y, out_c, 1, 1, name + "c", act=False)
            else:
                y = conv_bn(x, c, 3, s, name + "a")
                y = conv_bn(y, c, 3, 1, name + "b", act=False)
            sc = x if (u > 0) else conv_bn(x, out_c, 1, s, name + "sc", act=False)
            x = mx.sym.Activation(y + sc, act_type="relu")
    x = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=num_classes)
    return mx.sym.SoftmaxOutput(x, name="softmax")


def best(fn, tries=5):
    fn()
    ts = []
    for _ in range(tries):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def child(which):
    import json

    import numpy as np

    mx = __import__(which)
    out = {}
    rng = np.random.RandomState(0)
    ex = mlp(mx).simple_bind(mx.cpu(), data=(1, 512), grad_req="null")
    for a in ex.arg_arrays:
        a[:] = rng.uniform(-0.1, 0.1, a.shape).astype(np.float32)
    n = 2000

    def run_mlp():
        for _ in range(n):
            ex.forward(is_train=False)[0].wait_to_read()

    out["mlp_fwd_us"] = best(run_mlp) / n * 1e6
    if which == "oxnet":
        ws = [a.asnumpy() for a in ex.arg_arrays]
        x, w1, b1, w2, b2, w3, b3 = ws

        def run_np():
            for _ in range(n):
                h = np.maximum(x @ w1.T + b1, 0)
                h = np.maximum(h @ w2.T + b2, 0)
                h @ w3.T + b3

        out["mlp_numpy_us"] = best(run_np) / n * 1e6
    r50 = resnet(mx, [3, 4, 6, 3], True, [64, 128, 256, 512])

    def bind50():
        e = r50.simple_bind(mx.cpu(), data=(32, 3, 224, 224))
        mx.nd.waitall()
        return e

    out["resnet50_bind_ms"] = best(bind50, 3) * 1e3
    r18 = resnet(mx, [2, 2, 2, 2], False, [64, 128, 256, 512], num_classes=10)
    e18 = r18.simple_bind(mx.cpu(), data=(8, 3, 64, 64), softmax_label=(8,))
    for name, a in e18.arg_dict.items():
        if name.endswith("weight"):
            a[:] = rng.normal(0, 0.05, a.shape).astype(np.float32)
        elif name.endswith("gamma"):
            a[:] = 1
    for name, a in e18.aux_dict.items():
        if name.endswith("var"):
            a[:] = 1
    e18.arg_dict["data"][:] = rng.randn(8, 3, 64, 64).astype(np.float32)

    def step():
        e18.forward(is_train=True)
        e18.backward()
        mx.nd.waitall()

    out["resnet18_step_ms"] = best(step) * 1e3
    if which == "oxnet":
        planned, unplanned = e18.memory_bytes()
        print("resnet18 training step: planned %.1f MB of shared blocks for %.1f MB of intermediate results"
              % (planned / 2**20, unplanned / 2**20), file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    cli(__doc__, child, __file__)
