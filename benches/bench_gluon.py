#!/usr/bin/env python3
"""Gluon, oxnet vs MXNet 1.9.1 (as shipped and with OMP_NUM_THREADS=2), in
alternating processes.

    MXNET_VENV=<venv with mxnet==1.9.1> python3 benches/bench_gluon.py [--rounds 3]

Each process times (best of 5 tries after a warm-up):
- mlp_imperative_us / mlp_hybrid_us: an MLP 512-256-128-2 (Dense relu,
  Dense relu, Dense), batch 1, one call + wait, microseconds (mean over 500
  calls), before and after hybridize();
- mlp_train_ksps: the MLP 784-256-128-10 trained with Trainer (SGD,
  momentum) and SoftmaxCrossEntropyLoss, hybridized, batch 128: thousands of
  samples per second (forward, backward, step; mean over 20 steps);
- lenet_train_sps: LeNet (the examples/gluon_mnist.py network), hybridized,
  batch 64, samples per second of forward + backward + Trainer.step (mean
  over 10 steps);
- hybrid_speedup: mlp_imperative_us / mlp_hybrid_us.
Ratios are MXNet's figure over oxnet's (>1: oxnet faster / larger).
"""

import json
import sys
import time

import numpy as np

from alternate import cli


def _best(fn, tries=5):
    fn()
    return min(fn() for _ in range(tries))


def mlp(mx, sizes):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(sizes[0], activation="relu"), nn.Dense(sizes[1], activation="relu"), nn.Dense(sizes[2]))
    net.initialize(mx.init.Xavier())
    return net


def lenet(mx):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(20, kernel_size=5, activation="relu"), nn.MaxPool2D(pool_size=2, strides=2),
                nn.Conv2D(50, kernel_size=5, activation="relu"), nn.MaxPool2D(pool_size=2, strides=2),
                nn.Dense(500, activation="relu"), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    return net


def per_call_us(mx, net, x, n=500):
    def run():
        t = time.perf_counter()
        for _ in range(n):
            net(x).wait_to_read()
        return (time.perf_counter() - t) / n * 1e6

    return _best(run)


def train_rate(mx, net, shape, classes, batch, steps):
    rng = np.random.RandomState(0)
    data = [(mx.nd.array(rng.rand(*((batch,) + shape)).astype("float32")),
             mx.nd.array(rng.randint(0, classes, batch).astype("float32"))) for _ in range(4)]
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()

    def run():
        mx.nd.waitall()
        t = time.perf_counter()
        for i in range(steps):
            x, y = data[i % 4]
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(batch)
        mx.nd.waitall()
        return -(steps * batch) / (time.perf_counter() - t)  # best = most samples/s

    return -_best(run)


def child(which):
    if which == "oxnet":
        import oxnet as mx
    else:
        import mxnet as mx
    out = {}
    net = mlp(mx, (256, 128, 2))
    x = mx.nd.array(np.random.RandomState(0).rand(1, 512).astype("float32"))
    out["mlp_imperative_us"] = per_call_us(mx, net, x)
    net.hybridize()
    out["mlp_hybrid_us"] = per_call_us(mx, net, x)
    net = mlp(mx, (256, 128, 10))
    net.hybridize()
    out["mlp_train_ksps"] = train_rate(mx, net, (784,), 10, 128, 20) / 1000.0
    net = lenet(mx)
    net.hybridize()
    out["lenet_train_sps"] = train_rate(mx, net, (1, 28, 28), 10, 64, 10)
    out["hybrid_speedup"] = out["mlp_imperative_us"] / out["mlp_hybrid_us"]
    print(json.dumps(out))


if __name__ == "__main__":
    cli(__doc__, child, __file__)
