"""Data-parallel training on 2 processes: the MNIST MLP with Gluon and
``kvstore='dist_sync'`` over MPI, on the bundled 4,000 training digits.

    python -m oxnet.tools.launch -n 2 examples/dist_mnist.py   # or: mpirun -np 2 python examples/dist_mnist.py
    python examples/dist_mnist.py                              # launches itself on 2 workers

Each worker reads its own half of the training set (SplitSampler by rank)
in batches of 32; the store sums the gradients of both halves and every
worker applies the same SGD update, so both hold the same weights: the same
training as one process with batches of 64. Needs Open MPI and mpi4py
(``make test`` / ``make demo`` install them).
"""
import os
import subprocess
import sys
import time

import numpy as np

import oxnet as mx
from oxnet import autograd, gluon

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mnist")
WORKERS = int(os.environ.get("DIST_MNIST_WORKERS", "2"))
BATCH = 32  # per worker
EPOCHS = 5


def under_mpi():
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"))


def transform(data, label):
    return data.astype("float32").reshape((-1,)) / 255.0, label


def build_net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(128, activation="relu"), gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    return net


def main():
    kv = mx.kv.create("dist_sync")
    rank, workers = kv.rank, kv.num_workers
    # The store copies rank 0's weights to every worker at the first trainer.step (as MXNet does), after
    # the first gradients were computed: the same seed everywhere makes those first gradients agree too.
    mx.random.seed(42)
    np.random.seed(rank)  # each worker shuffles its own part differently
    train = gluon.data.vision.MNIST(DATA, train=True).transform(transform)
    test = gluon.data.vision.MNIST(DATA, train=False).transform(transform)
    train_data = gluon.data.DataLoader(
        train, batch_size=BATCH, last_batch="discard",
        sampler=gluon.data.SplitSampler(len(train), workers, rank, shuffle=True))
    test_data = gluon.data.DataLoader(test, batch_size=100, sampler=gluon.data.SplitSampler(len(test), workers, rank))

    net = build_net()
    net(mx.nd.zeros((1, 784)))  # finish the deferred initialization before the store broadcasts
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    stats = mx.kv.create("dist_sync")  # a second store (without optimizer) to sum the metrics over workers
    stats.init("metric", mx.nd.zeros((2,)))

    start = time.time()
    samples = 0
    for epoch in range(EPOCHS):
        for data, label in train_data:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(BATCH * workers)  # gradients are summed over workers: normalize by the global batch
            samples += data.shape[0]
        # test accuracy over both halves of the test set: sum [correct, seen] over workers
        counts = mx.nd.zeros((2,))
        for data, label in test_data:
            pred = net(data).argmax(axis=1)
            counts += mx.nd.array([(pred == label.astype("float32")).sum().asscalar(), data.shape[0]])
        stats.pushpull("metric", counts)
        correct, seen = counts.asnumpy()
        if rank == 0:
            print("epoch %d: test accuracy %.3f on %d digits" % (epoch, correct / seen, seen), flush=True)
    elapsed = time.time() - start

    # every worker holds the same weights
    flat = np.concatenate([p.data().asnumpy().ravel() for p in net.collect_params().values()])
    checksum = mx.nd.array([flat.sum()], dtype="float64")
    stats.init("check", mx.nd.zeros((1,), dtype="float64"))
    stats.pushpull("check", checksum)
    spread = abs(checksum.asnumpy()[0] / workers - flat.sum())
    print("rank %d/%d: %d samples in %.1f s (%.0f samples/s), weight checksum %.6f (spread %.2g)"
          % (rank, workers, samples, elapsed, samples / elapsed, flat.sum(), spread), flush=True)
    if spread > 1e-6 * max(1.0, abs(flat.sum())):
        raise SystemExit("workers ended with different weights")


if __name__ == "__main__":
    if under_mpi():
        main()
    else:
        cmd = [sys.executable, "-m", "oxnet.tools.launch", "-n", str(WORKERS), os.path.abspath(__file__)]
        print("launching:", " ".join(cmd), flush=True)
        sys.exit(subprocess.call(cmd))
