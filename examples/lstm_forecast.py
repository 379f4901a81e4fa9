"""Sequence forecasting with MXNet's fused RNN operator: a 2-layer LSTM with
dropout between the layers, trained with autograd and the single-call Adam
update, against a least-squares baseline solved with mx.nd.linalg (Cholesky).

The task: from the last 16 values of a noisy sum of two sines, predict the
next value.

Run: python examples/lstm_forecast.py
"""
import time

import numpy as np

import oxnet as mx

mx.random.seed(0)
rng = np.random.RandomState(0)
T, N, H, L = 16, 64, 32, 2  # steps, batch, hidden size, layers


def batch(n):
    """(T, n, 1) windows and the (n, 1) values that follow them."""
    t0 = rng.uniform(0, 100, size=(n, 1))
    t = t0 + 0.3 * np.arange(T + 1)
    s = np.sin(t) + 0.5 * np.sin(2.3 * t) + 0.05 * rng.normal(size=t.shape)
    return s[:, :T].T[:, :, None].astype(np.float32), s[:, T:].astype(np.float32)


# Least-squares baseline on the raw window: w = (X^T X + eps I)^-1 X^T y with
# X^T X factorized by potrf and the two triangular solves done by trsm.
Xb, yb = batch(4096)
X = mx.nd.array(Xb[:, :, 0].T)                  # (n, T)
y = mx.nd.array(yb)
A = mx.nd.linalg.syrk(X, transpose=True) + 1e-3 * mx.nd.eye(T)
Lc = mx.nd.linalg.potrf(A)                      # A = Lc Lc^T
rhs = mx.nd.dot(X, y, transpose_a=True)         # (T, 1)
z = mx.nd.linalg.trsm(Lc, rhs, lower=True)      # Lc z = rhs
w = mx.nd.linalg.trsm(Lc, z, lower=True, transpose=True)
Xt, yt = batch(1024)
base = float(((mx.nd.dot(mx.nd.array(Xt[:, :, 0].T), w) - mx.nd.array(yt)) ** 2).mean().asscalar())

# LSTM: MXNet's flat parameter vector (per layer: i2h and h2h weights, then
# all biases), initialised uniformly; a dense head maps the last step.
n_rnn = sum(4 * H * ((1 if layer == 0 else H) + H) for layer in range(L)) + L * 2 * 4 * H
params = {
    "rnn": mx.nd.random.uniform(-0.15, 0.15, shape=(n_rnn,)),
    "w": mx.nd.random.normal(0, 0.1, shape=(1, H)),
    "b": mx.nd.zeros((1,)),
}
states = {k: (mx.nd.zeros_like(v), mx.nd.zeros_like(v)) for k, v in params.items()}
for v in params.values():
    v.attach_grad()


def forward(x, train):
    h0 = mx.nd.zeros((L, x.shape[1], H))
    out = mx.nd.RNN(x, params["rnn"], h0, h0, state_size=H, num_layers=L, mode="lstm", p=0.1 if train else 0.0)
    return mx.nd.FullyConnected(out[-1], params["w"], params["b"], num_hidden=1)


x_test, y_test = mx.nd.array(Xt), mx.nd.array(yt)
t0 = time.perf_counter()
for step in range(1, 301):
    xb, yb_ = batch(N)
    x, target = mx.nd.array(xb), mx.nd.array(yb_)
    with mx.autograd.record():
        loss = ((forward(x, True) - target) ** 2).mean()
    loss.backward()
    for k, v in params.items():
        mean, var = states[k]
        mx.nd.adam_update(v, v.grad, mean, var, lr=0.01, out=v)
    if step % 50 == 0:
        test = float(((forward(x_test, False) - y_test) ** 2).mean().asscalar())
        print(f"step {step:3d}  train mse {float(loss.asscalar()):.4f}  test mse {test:.4f}")
print(f"least-squares baseline test mse {base:.4f}; LSTM trained in {time.perf_counter() - t0:.1f} s")
