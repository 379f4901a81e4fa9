"""Train an MLP (784-128-64-10) on real MNIST digits with the Module API.

Reads the bundled digits (examples/data/mnist: 4,000 training and 1,000 test
digits in MNIST's IDX format, gzip) with mx.io.MNISTIter, trains with
Module.fit (SGD with momentum, a Speedometer log line every 20 batches and a
live progress line on a terminal), scores the test digits, saves a
checkpoint, loads it back into a new Module and predicts with it.

    python examples/train_mnist.py
"""
import logging
import os
import sys
import tempfile

import numpy as np

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mnist")
BATCH = 64


def mlp():
    """784-128-64-10 with ReLU and a softmax output."""
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    act1 = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act1, num_hidden=64, name="fc2")
    act2 = mx.sym.Activation(fc2, act_type="relu", name="relu2")
    fc3 = mx.sym.FullyConnected(act2, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(fc3, name="softmax")


def iters():
    """MNISTIter over the training digits (shuffled) and the test digits."""
    train = mx.io.MNISTIter(image=os.path.join(DATA, "train-images-idx3-ubyte.gz"),
                            label=os.path.join(DATA, "train-labels-idx1-ubyte.gz"),
                            batch_size=BATCH, flat=True, shuffle=True, seed=0)
    test = mx.io.MNISTIter(image=os.path.join(DATA, "t10k-images-idx3-ubyte.gz"),
                           label=os.path.join(DATA, "t10k-labels-idx1-ubyte.gz"),
                           batch_size=100, flat=True, shuffle=False)
    return train, test


def main():
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    mx.random.seed(0)
    train, test = iters()
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.fit(train, eval_data=test, num_epoch=8, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9}, initializer=mx.init.Xavier(),
            eval_metric="acc", batch_end_callback=mx.callback.Speedometer(BATCH, 20))
    acc = dict(mod.score(test, "acc"))["accuracy"]
    print("test accuracy: %.4f" % acc)

    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "mnist-mlp")
        mod.save_checkpoint(prefix, 8)
        loaded = mx.mod.Module.load(prefix, 8, context=mx.cpu())
        loaded.bind(data_shapes=test.provide_data, label_shapes=test.provide_label, for_training=False)
        probs = loaded.predict(test)
        test.reset()
        labels = np.concatenate([b.label[0].asnumpy() for b in test])
        reloaded_acc = float((probs.asnumpy().argmax(axis=1) == labels).mean())
        print("reloaded checkpoint %s-0008.params: test accuracy %.4f, first predictions %s (labels %s)"
              % (os.path.basename(prefix), reloaded_acc, probs.asnumpy()[:8].argmax(axis=1).tolist(),
                 labels[:8].astype(int).tolist()))
    if acc < 0.92:
        sys.exit("test accuracy %.4f is below 0.92" % acc)


if __name__ == "__main__":
    main()
