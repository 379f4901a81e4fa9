"""Profile a small training loop and write a Chrome trace.

A tiny linear regression trained with autograd: each step is a profiler
Frame, the forward pass, backward pass and update are profiler scopes (their
operators carry the prefix in the trace and the table), and a Counter tracks
the step number.

Run: python examples/profile_trace.py
Then open the printed file in chrome://tracing (Load) or https://ui.perfetto.dev
(Open trace file).
"""
import os
import tempfile

import numpy as np

import oxnet as mx
from oxnet import autograd, profiler

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
w.attach_grad()
lr = 0.2

domain = profiler.Domain("training")
step_counter = profiler.Counter(domain, "step", value=0)
frame = profiler.Frame(domain, "train step")

profiler.set_state("run")
for step in range(30):
    frame.start()
    with profiler.scope("forward"), autograd.record():
        loss = ((mx.nd.dot(X, w) - y) ** 2).mean()
    with profiler.scope("backward"):
        loss.backward()
    with profiler.scope("update"):
        w -= lr * w.grad
    w.wait_to_read()
    frame.stop()
    step_counter += 1
profiler.Marker(domain, "training done").mark("process")
final = ((mx.nd.dot(X, w) - y) ** 2).mean().asscalar()
profiler.set_state("stop")
profiler.dump()

print(f"final MSE after 30 steps: {final:.6f}")
print(profiler.dumps(sort_by="total"))
print(f"Chrome trace written to {trace}")
print("Open it in chrome://tracing (Load button) or https://ui.perfetto.dev (Open trace file).")
