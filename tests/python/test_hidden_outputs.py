"""Hidden operator outputs (MXNet's FNumVisibleOutputs) and RNN's dropout
between layers, whose masks are RNN's hidden output so that the gradient
applies the forward's masks.

The gradient with p > 0 in training is checked with the masks held fixed:
the forward is a deterministic function of its inputs once the generator
is reseeded before each call, so central differences of that function are
compared with autograd's gradient of a forward drawn from the same seed."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.test_utils import check_numeric_gradient
from rnntest import n_params

_rng = np.random.RandomState(5)


def _inputs(mode, layers, bi, t=3, n=2, i=3, h=2):
    d = 2 if bi else 1
    ins = [_rng.uniform(-1, 1, (t, n, i)),
           _rng.uniform(-0.8, 0.8, (n_params(mode, i, h, layers, bi),)),
           _rng.uniform(-1, 1, (layers * d, n, h))]
    if mode == "lstm":
        ins.append(_rng.uniform(-1, 1, (layers * d, n, h)))
    return ins


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("p", [0.0, 0.4])
def test_visible_outputs_unchanged(mode, p):
    """mx.nd.RNN returns what MXNet 1.9.1 returns (checked there: one
    NDArray, or [out, hy(, cy)] with state_outputs), in and out of training."""
    ins = [mx.nd.array(a) for a in _inputs(mode, 2, True)]
    kw = dict(state_size=2, num_layers=2, mode=mode, bidirectional=True, p=p)
    for train in (False, True):
        with mx.autograd.train_mode() if train else mx.autograd.predict_mode():
            one = mx.nd.RNN(*ins, **kw)
            assert isinstance(one, mx.nd.NDArray) and one.shape == (3, 2, 4)
            many = mx.nd.RNN(*ins, state_outputs=True, **kw)
        shapes = [(3, 2, 4), (4, 2, 2)] + ([(4, 2, 2)] if mode == "lstm" else [])
        assert [o.shape for o in many] == shapes


def test_out_covers_visible_outputs():
    x, w, s, c = [mx.nd.array(a) for a in _inputs("lstm", 2, False)]
    kw = dict(state_size=2, num_layers=2, mode="lstm", p=0.5)
    ref = mx.nd.RNN(x, w, s, c, state_outputs=True, **kw)
    out = mx.nd.zeros((3, 2, 2))
    r = mx.nd.RNN(x, w, s, c, out=out, **kw)
    assert r is out
    np.testing.assert_array_equal(out.asnumpy(), ref[0].asnumpy())
    outs = [mx.nd.zeros((3, 2, 2)), mx.nd.zeros((2, 2, 2)), mx.nd.zeros((2, 2, 2))]
    with mx.autograd.train_mode():
        r = mx.nd.RNN(x, w, s, c, state_outputs=True, out=outs, **kw)
    assert len(r) == 3 and all(a is b for a, b in zip(r, outs))
    # MXNet 1.9.1: 'Operator expects 3 (all) or 3 (visible only) outputs, but got 4'
    with pytest.raises(MXNetError, match=r"RNN: out= has 4 array\(s\), the operator produces 3"):
        mx.nd.RNN(x, w, s, c, state_outputs=True, out=outs + [mx.nd.zeros((1,))], **kw)


def _seeded(mode, layers, bi, p, state_outputs, seed=11):
    kw = dict(state_size=2, num_layers=layers, mode=mode, bidirectional=bi, p=p, state_outputs=state_outputs)

    def f(*xs):
        mx.random.seed(seed)
        with mx.autograd.train_mode():
            return mx.nd.RNN(*xs, **kw)
    return f


@pytest.mark.parametrize("mode,layers,bi,state_outputs", [
    ("lstm", 2, True, True),
    ("gru", 3, False, False),
    ("rnn_relu", 2, False, True),
    ("rnn_tanh", 2, True, False),
])
def test_dropout_gradient_with_fixed_masks(mode, layers, bi, state_outputs):
    """Autograd's gradient through dropout between layers equals central
    differences of the forward with the same (seeded) masks."""
    f = _seeded(mode, layers, bi, 0.3, state_outputs)
    ins = _inputs(mode, layers, bi)

    def first(fn):
        r = fn(*[mx.nd.array(a, dtype="float64") for a in ins])
        return (r[0] if isinstance(r, list) else r).asnumpy()
    # the masks do drop something, the same every call
    np.testing.assert_array_equal(first(f), first(f))
    assert not np.allclose(first(f), first(_seeded(mode, layers, bi, 0.0, state_outputs)))
    check_numeric_gradient(f, ins, dtype=np.float64, rtol=1e-4, atol=1e-6)


def test_dropout_everything_cuts_the_gradient():
    """p=1 in training: the upper layer sees zeros, so without state outputs
    neither data nor the first layer's weights get a gradient."""
    x, w, s, c = [mx.nd.array(a) for a in _inputs("lstm", 2, False)]
    for a in (x, w):
        a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.RNN(x, w, s, c, state_size=2, num_layers=2, mode="lstm", p=1.0)
    out.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 0)
    first = 4 * 2 * 3 + 4 * 2 * 2  # layer 0's i2h and h2h weights
    np.testing.assert_array_equal(w.grad.asnumpy()[:first], 0)
    assert np.abs(w.grad.asnumpy()[first:]).max() > 0


def _lstm_step(seed, p):
    x, w, s, c = [mx.nd.array(a) for a in _inputs("lstm", 2, False, t=4, n=3, i=5, h=6)]
    for a in (x, w, s, c):
        a.attach_grad()
    mx.random.seed(seed)
    with mx.autograd.record():
        out, hy, cy = mx.nd.RNN(x, w, s, c, state_size=6, num_layers=2, mode="lstm", p=p, state_outputs=True)
        loss = (out * out).sum() + hy.sum() + cy.sum()
    loss.backward()
    return [a.asnumpy() for a in (out, x.grad, w.grad, s.grad, c.grad)]


def test_two_layer_lstm_trains_reproducibly():
    """A 2-layer LSTM with p=0.5 runs forward and backward in training, the
    same after the same mx.random.seed, differently from p=0."""
    _rng.seed(3)
    a = _lstm_step(42, 0.5)
    _rng.seed(3)
    b = _lstm_step(42, 0.5)
    _rng.seed(3)
    nodrop = _lstm_step(42, 0.0)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert all(np.isfinite(u).all() for u in a)
    assert np.abs(a[0] - nodrop[0]).max() > 1e-3
    assert np.abs(a[2] - nodrop[2]).max() > 1e-3


def test_training_step_with_gluon_style_update():
    """Plain SGD on RNN(p=0.2, num_layers=2) in training decreases the loss."""
    _rng.seed(0)
    x, w, s, c = [mx.nd.array(a) for a in _inputs("lstm", 2, False, t=5, n=4, i=3, h=4)]
    target = mx.nd.array(_rng.uniform(-0.5, 0.5, (5, 4, 4)))
    w.attach_grad()
    losses = []
    mx.random.seed(1)
    for _ in range(30):
        with mx.autograd.record():
            out = mx.nd.RNN(x, w, s, c, state_size=4, num_layers=2, mode="lstm", p=0.2)
            loss = ((out - target) ** 2).mean()
        loss.backward()
        w[:] = w - 0.5 * w.grad
        losses.append(loss.asscalar())
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_float16_dropout_gradient_follows_float32():
    """The mask is kept in the data dtype; a float16 RNN's gradient through
    dropout matches float32's with the same seed (same masks) to float16 precision."""
    ins = _inputs("gru", 2, False)
    grads = []
    for dt in ("float32", "float16"):
        arrays = [mx.nd.array(a, dtype=dt) for a in ins]
        arrays[1].attach_grad()
        mx.random.seed(9)
        with mx.autograd.record():
            out = mx.nd.RNN(*arrays, state_size=2, num_layers=2, mode="gru", p=0.3)
        out.backward()
        grads.append(arrays[1].grad.asnumpy().astype(np.float64))
    np.testing.assert_allclose(grads[1], grads[0], rtol=2e-2, atol=2e-2)
