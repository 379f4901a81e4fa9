"""Linear regression with imperative NDArrays: gradient descent written with
mx.nd operators (pushed asynchronously to the engine), parameters saved in
MXNet's .params format and loaded back.

Run: python examples/ndarray_regression.py
"""
import os
import tempfile
import time

import numpy as np

import oxnet as mx

rng = np.random.RandomState(0)
n, d = 4096, 16
true_w = rng.uniform(-1, 1, size=(d, 1)).astype(np.float32)
X_np = rng.normal(size=(n, d)).astype(np.float32)
y_np = X_np @ true_w + 0.01 * rng.normal(size=(n, 1)).astype(np.float32)

X = mx.nd.array(X_np)
y = mx.nd.array(y_np)
w = mx.nd.zeros((d, 1))
lr = 0.1

t0 = time.perf_counter()
for epoch in range(200):
    err = mx.nd.dot(X, w) - y                       # (n, 1)
    grad = mx.nd.dot(X, err, transpose_a=True) / n  # (d, 1)
    w -= lr * grad                                  # in place, ordered by the engine
loss = ((mx.nd.dot(X, w) - y) ** 2).mean().asscalar()  # the first wait
elapsed = time.perf_counter() - t0
print(f"200 steps in {elapsed * 1e3:.1f} ms, final MSE {loss:.6f}")
print(f"max |w - true_w| = {np.abs(w.asnumpy() - true_w).max():.4f}")
assert loss < 1e-3

path = os.path.join(tempfile.mkdtemp(), "regression.params")
mx.nd.save(path, {"weight": w})
w2 = mx.nd.load(path)["weight"]
assert np.array_equal(w2.asnumpy(), w.asnumpy())
print(f"saved and reloaded {path}: {mx.storage.stats()['bytes_in_use']} bytes in use by the pool")
