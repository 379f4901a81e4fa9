"""Profile a small training loop and write a Chrome trace.

A tiny linear regression trained with imperative NDArray operations; each
step is a profiler Frame, the forward and update phases are profiler scopes
(their operators carry the prefix), and a Counter tracks the step number.

Run: python examples/profile_trace.py
Then open the printed file in chrome://tracing (Load) or https://ui.perfetto.dev
(Open trace file).
"""
import os
import tempfile

import numpy as np

import oxnet as mx
from oxnet import profiler

out_dir = tempfile.mkdtemp(prefix="oxnet-profile-")
trace = os.path.join(out_dir, "profile_trace.json")
profiler.set_config(profile_all=True, aggregate_stats=True, filename=trace)

rng = np.random.RandomState(0)
n, d = 256, 8
true_w = rng.uniform(-1, 1, size=(d, 1)).astype(np.float32)
X_np = rng.normal(size=(n, d)).astype(np.float32)
X = mx.nd.array(X_np)
y = mx.nd.array(X_np @ true_w)
w = mx.nd.zeros((d, 1))
lr = 0.1

domain = profiler.Domain("training")
step_counter = profiler.Counter(domain, "step", value=0)
frame = profiler.Frame(domain, "train step")

profiler.set_state("run")
for step in range(20):
    frame.start()
    with profiler.scope("forward"):
        err = mx.nd.dot(X, w) - y
    with profiler.scope("backward"):
        grad = mx.nd.dot(X, err, transpose_a=True) / n
    with profiler.scope("update"):
        w -= lr * grad
    w.wait_to_read()
    frame.stop()
    step_counter += 1
profiler.Marker(domain, "training done").mark("process")
loss = ((mx.nd.dot(X, w) - y) ** 2).mean().asscalar()
profiler.set_state("stop")
profiler.dump()

print(f"final MSE after 20 steps: {loss:.5f}")
print(profiler.dumps(sort_by="total"))
print(f"Chrome trace written to {trace}")
print("Open it in chrome://tracing (Load button) or https://ui.perfetto.dev (Open trace file).")
