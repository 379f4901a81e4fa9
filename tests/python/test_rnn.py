"""RNN (MXNet 1.9.1's fused operator): values computed with MXNet 1.9.1
itself, the parameter layout, shape inference and errors, sequence_length,
dropout, dtypes. The NumPy reference and the numerical gradients are in
rnntest.py and the registry table."""
import numpy as np
import pytest
from rnntest import n_params, rnn_ref, unpack

import oxnet as mx
from oxnet.base import MXNetError


def _inputs(mode, layers, bi, t=2, n=2, i=3, h=2):
    """The inputs the MXNet values below were computed from."""
    d = 2 if bi else 1
    sh = 0.3 if mode == "rnn_relu" else 0.0
    x = np.sin(np.arange(t * n * i) * 0.7).reshape(t, n, i).astype(np.float32)
    w = (np.cos(np.arange(n_params(mode, i, h, layers, bi)) * 0.37) * 0.6 + sh).astype(np.float32)
    s = (np.sin(np.arange(layers * d * n * h) * 1.3) * 0.5).reshape(layers * d, n, h).astype(np.float32)
    c = (np.cos(np.arange(layers * d * n * h) * 0.9) * 0.5).reshape(layers * d, n, h).astype(np.float32)
    return [x, w, s] + ([c] if mode == "lstm" else [])


# mx.nd.RNN(..., state_size=2, state_outputs=True) in MXNet 1.9.1: out, hy[, cy] flattened.
MXNET_FORWARD = {
    ('rnn_relu', 2, False): [
        [0, 0.191135, 0, 1.133582, 0.06012765, 0, 0.2765749, 1.087924],
        [0, 0, 2.238255, 0.3190681, 0.06012765, 0, 0.2765749, 1.087924],
    ],
    ('rnn_tanh', 1, True): [
        [0.5680633, -0.6215354, -0.9789782, -0.8041548, 0.6205961, 0.04142663, -0.9725299, -0.9249262, -0.8166983, -0.4350926, -0.3682478, -0.955784, 0.5803639, -0.6801919, -0.8110975, -0.1288034],
        [-0.8166983, -0.4350926, 0.5803639, -0.6801919, -0.9789782, -0.8041548, -0.9725299, -0.9249262],
    ],
    ('lstm', 2, True): [
        [-0.08189115, 0.01591168, -0.1238731, -0.02048438, -0.04097867, -0.07166455, 0.04212327, 0.06952924, -0.05165537, -0.02097662, -0.07134962, 0.002916995, -0.05183142, 0.0166224, 0.09258059, 0.07194302],
        [0.111396, 0.0478838, 0.1011475, 0.1467857, -0.09122892, 0.06362718, 0.1366632, 0.05009072, -0.05165537, -0.02097662, -0.05183142, 0.0166224, -0.1238731, -0.02048438, 0.04212327, 0.06952924],
        [0.3778787, 0.0786681, 0.1570168, 0.3774242, -0.2809764, 0.1332956, 0.3611869, 0.129277, -0.1005458, -0.03760029, -0.09614635, 0.03392689, -0.2250944, -0.03862984, 0.07967152, 0.1422603],
    ],
    ('gru', 2, True): [
        [-0.6042675, -0.2739902, -0.1166286, 0.2260307, -0.3012981, -0.2308842, -0.180736, 0.1391098, -0.6956488, -0.1367849, 0.005684148, 0.06162751, -0.5456384, -0.261324, -0.2856064, 0.3196592],
        [0.2212345, 0.3070249, 0.3407785, 0.5348075, 0.09206327, 0.1437929, -0.07535191, 0.02032511, -0.6956488, -0.1367849, -0.5456384, -0.261324, -0.1166286, 0.2260307, -0.180736, 0.1391098],
    ],
}

# Gradients of data, parameters, state[, state_cell] in MXNet 1.9.1 (state_size=2,
# state_outputs=True, head gradients cos(0.5 * k) over each output's elements).
MXNET_GRAD = {
    ('gru', 1, False): [
        [-0.006150984, 0.2077224, 0.3934815, -0.1128726, -0.08232518, -0.04063538, -0.04580019, -0.01837171, 0.01154328, -0.1211017, -0.1885486, -0.2304763],
        [0.009940365, -0.01456879, -0.03222603, 0.01081885, 0.003968034, -0.004749009, 0.006188341, -0.06595431, -0.1070776, 0.02628303, 0.04936053, 0.04922301, 0.0608102, 0.3044742, 0.4049393, -0.09162685, -0.03216467, 0.04242507, -0.005333976, -0.04452922, 0.007643285, -0.01504067, 0.01058217, -0.05702358, 0.0485997, -0.02149034, 0.009973817, 0.273939, -0.03857974, 0.07132508, -0.08859058, 0.008450118, -0.07692821, 0.1530913, 0.8542607, -0.07807031, -0.08859058, 0.008450118, -0.07692821, 0.1530913, 0.638355, -0.05884463],
        [0.09771553, 0.03090557, 0.1697299, -0.2147587],
    ],
    ('lstm', 1, False): [
        [0.09778312, 0.1406818, 0.1645398, -0.06498095, -0.0005302986, 0.06399212, -0.03976168, 0.033763, 0.102718, -0.05508513, 0.002628612, 0.05998658],
        [-0.04605401, 0.1062158, 0.2085307, 0.1411532, 0.2749056, 0.2793655, -0.1023673, -0.01731572, 0.07587973, -0.06176193, -0.020036, 0.03111318, 0.0825538, 0.4370668, 0.5860205, -0.1308347, -0.1095329, -0.03671603, -0.06137814, 0.01271278, 0.08082467, -0.0004841966, 0.02439591, 0.03780224, -8.762348e-05, 0.1121957, -0.04235555, 0.07964523, 0.02943625, 0.09363638, 0.02097964, 0.04993219, 0.1003441, 0.2516332, 0.05316173, 0.07531706, 0.008596645, 0.07203587, 0.01059908, 0.05234171, 0.2244644, 0.01928156, 0.232375, 0.1447259, 1.240855, 0.2217541, 0.1199898, 0.04396375, 0.2244644, 0.01928156, 0.232375, 0.1447259, 1.240855, 0.2217541, 0.1199898, 0.04396375],
        [0.1249363, 0.1962327, 0.1281646, 0.1618074],
        [0.4090319, 0.4032061, 0.1869098, 0.003437388],
    ],
}


@pytest.mark.parametrize("key", list(MXNET_FORWARD))
def test_forward_matches_mxnet(key):
    mode, layers, bi = key
    ins = _inputs(mode, layers, bi)
    kw = dict(state_size=2, num_layers=layers, bidirectional=bi, mode=mode, state_outputs=True)
    got = mx.nd.RNN(*[mx.nd.array(a) for a in ins], **kw)
    assert len(got) == len(MXNET_FORWARD[key])
    for g, e, r in zip(got, MXNET_FORWARD[key], rnn_ref(*ins, **kw)):
        np.testing.assert_allclose(g.asnumpy().ravel(), e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r.ravel(), e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("key", list(MXNET_GRAD))
def test_gradient_matches_mxnet(key):
    mode, layers, bi = key
    arrs = [mx.nd.array(a) for a in _inputs(mode, layers, bi)]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        outs = mx.nd.RNN(*arrs, state_size=2, num_layers=layers, bidirectional=bi, mode=mode, state_outputs=True)
    heads = [mx.nd.array(np.cos(np.arange(o.size) * 0.5).reshape(o.shape)) for o in outs]
    mx.autograd.backward(outs, heads)
    for a, e in zip(arrs, MXNET_GRAD[key]):
        np.testing.assert_allclose(a.grad.asnumpy().ravel(), e, rtol=1e-5, atol=1e-6)


def test_parameter_layout():
    """Weights of every (layer, direction) first, then all biases: a vector
    that is zero but for one h2h bias of layer 1's reverse direction moves
    only that direction's output."""
    t, n, i, h = 3, 2, 4, 3
    size = n_params("rnn_tanh", i, h, 2, True)
    assert size == 2 * (h * i + h * h + 2 * h) + 2 * (h * 2 * h + h * h + 2 * h)
    w = np.zeros(size, np.float32)
    # biases: (l0 fwd bx, bh), (l0 bwd bx, bh), (l1 fwd bx, bh), (l1 bwd bx, bh)
    w[size - h:] = [0.1, 0.2, 0.3]
    out = mx.nd.RNN(mx.nd.ones((t, n, i)), mx.nd.array(w), mx.nd.zeros((4, n, h)),
                    state_size=h, num_layers=2, bidirectional=True, mode="rnn_tanh").asnumpy()
    np.testing.assert_allclose(out[..., :h], 0, atol=1e-7)
    np.testing.assert_allclose(out[..., h:], np.broadcast_to(np.tanh([0.1, 0.2, 0.3]), (t, n, h)), rtol=1e-6)


def test_outputs_and_defaults():
    x, w, s, c = [mx.nd.array(a) for a in _inputs("lstm", 1, False)]
    out = mx.nd.RNN(x, w, s, c, state_size=2, num_layers=1, mode="lstm")
    assert isinstance(out, mx.nd.NDArray) and out.shape == (2, 2, 2)
    outs = mx.nd.RNN(x, w, s, c, state_size=2, num_layers=1, mode="lstm", state_outputs=True)
    assert [o.shape for o in outs] == [(2, 2, 2), (1, 2, 2), (1, 2, 2)]
    # inputs by keyword, in MXNet's names
    kw = mx.nd.RNN(data=x, parameters=w, state=s, state_cell=c, state_size=2, num_layers=1, mode="lstm")
    np.testing.assert_array_equal(kw.asnumpy(), out.asnumpy())
    # inference ignores p (dropout) and a single layer has nothing to drop
    np.testing.assert_array_equal(
        mx.nd.RNN(x, w, s, c, state_size=2, num_layers=1, mode="lstm", p=0.5).asnumpy(), out.asnumpy())


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float16, 2e-3)])
def test_dtypes(dtype, rtol):
    """float64 computes in float64; float16 in float32 (MXNet 1.9.1 has no
    float16 RNN on CPU: its GEMM raises)."""
    ins = _inputs("gru", 2, True)
    kw = dict(state_size=2, num_layers=2, bidirectional=True, mode="gru", state_outputs=True)
    got = mx.nd.RNN(*[mx.nd.array(a, dtype=dtype) for a in ins], **kw)
    for g, e in zip(got, rnn_ref(*[a.astype(dtype).astype(np.float64) for a in ins], **kw)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.asnumpy().astype(np.float64), e, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("mode", ["rnn_relu", "lstm", "gru"])
def test_sequence_length(mode):
    """cuDNN's semantics, as MXNet documents them (MXNet 1.9.1's CPU operator
    ignores sequence_length): steps at or past a sequence's length output
    zeros and keep the state; the reverse direction starts at the last valid
    step, so each sequence gives what the operator gives on it alone."""
    t, n, i, h = 4, 3, 2, 3
    rs = np.random.RandomState(3)
    ins = [rs.uniform(-1, 1, (t, n, i)).astype(np.float32),
           rs.uniform(-0.5, 0.5, n_params(mode, i, h, 2, True)).astype(np.float32),
           rs.uniform(-1, 1, (4, n, h)).astype(np.float32)]
    if mode == "lstm":
        ins.append(rs.uniform(-1, 1, (4, n, h)).astype(np.float32))
    lens = [4, 1, 2]
    kw = dict(state_size=h, num_layers=2, bidirectional=True, mode=mode, state_outputs=True)
    got = mx.nd.RNN(*[mx.nd.array(a) for a in ins], mx.nd.array(lens, dtype="int32"),
                    use_sequence_length=True, **kw)
    for b, length in enumerate(lens):
        alone = [ins[0][:length, b:b + 1], ins[1]] + [a[:, b:b + 1] for a in ins[2:]]
        ref = rnn_ref(*alone, **kw)
        np.testing.assert_allclose(got[0].asnumpy()[:length, b], ref[0][:, 0], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[0].asnumpy()[length:, b], 0)
        for g, r in zip(got[1:], ref[1:]):
            np.testing.assert_allclose(g.asnumpy()[:, b], r[:, 0], rtol=1e-5, atol=1e-6)


def test_dropout_between_layers():
    """p drops the outputs of every layer but the last, in training only, from
    the per-context generator (reproducible after mx.random.seed)."""
    ins = [mx.nd.array(a) for a in _inputs("rnn_tanh", 2, False, t=5, n=4, i=3, h=8)]
    kw = dict(state_size=8, num_layers=2, mode="rnn_tanh", p=0.5)
    base = mx.nd.RNN(*ins, **kw).asnumpy()
    runs = []
    for _ in range(2):
        mx.random.seed(7)
        with mx.autograd.train_mode():
            runs.append(mx.nd.RNN(*ins, **kw).asnumpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.abs(runs[0] - base).max() > 1e-3
    # p=1 drops everything the second layer sees: it runs on zeros
    with mx.autograd.train_mode():
        dropped = mx.nd.RNN(*ins, **dict(kw, p=1.0)).asnumpy()
    wx, wh, bx, bh = unpack(ins[1].asnumpy(), "rnn_tanh", 3, 8, 2)[1]
    second = np.concatenate([wx.ravel(), wh.ravel(), bx, bh])
    alone = rnn_ref(np.zeros((5, 4, 8)), second, ins[2].asnumpy()[1:], state_size=8, num_layers=1, mode="rnn_tanh")
    np.testing.assert_allclose(dropped, alone, rtol=1e-5, atol=1e-6)


def test_dropout_gradient_outside_training():
    """Outside training there is no dropout, and the gradient is p=0's (the
    gradient in training, with the forward's masks: test_hidden_outputs.py)."""
    ins = [mx.nd.array(a) for a in _inputs("gru", 2, False)]
    ins[1].attach_grad()
    grads = []
    for p in (0.5, 0.0):
        with mx.autograd.record(train_mode=False):
            out = mx.nd.RNN(*ins, state_size=2, num_layers=2, mode="gru", p=p)
        out.backward(train_mode=False)
        grads.append(ins[1].grad.asnumpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
def test_backward_from_reserve_matches_rerun(mode):
    """In training the forward keeps what the backward needs (the hidden
    reserve output) and the backward reads it; recorded outside training the
    backward reruns the forward instead. Without dropout both give the same
    gradients, for stacked, bidirectional, ragged sequences."""
    t, n, i, h = 5, 3, 4, 6
    rs = np.random.RandomState(11)
    ins = [rs.uniform(-1, 1, (t, n, i)), rs.uniform(-0.4, 0.4, n_params(mode, i, h, 2, True)),
           rs.uniform(-1, 1, (4, n, h))]
    if mode == "lstm":
        ins.append(rs.uniform(-1, 1, (4, n, h)))
    ins = [mx.nd.array(a.astype(np.float32)) for a in ins]
    lens = mx.nd.array([5, 2, 4], dtype="int32")
    kw = dict(state_size=h, num_layers=2, bidirectional=True, mode=mode, state_outputs=True,
              use_sequence_length=True)
    heads = None
    grads = []
    for train in (True, False):
        for a in ins:
            a.attach_grad()
        with mx.autograd.record(train_mode=train):
            outs = mx.nd.RNN(*ins, lens, **kw)
        if heads is None:
            heads = [mx.nd.array(np.cos(np.arange(o.size) * 0.3).reshape(o.shape)) for o in outs]
        mx.autograd.backward(outs, heads, train_mode=train)
        grads.append([a.grad.asnumpy() for a in ins])
    for kept, rerun in zip(*grads):
        np.testing.assert_allclose(kept, rerun, rtol=1e-6, atol=1e-7)
        assert np.abs(kept).max() > 0


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm", "gru"])
def test_large_batch_equals_rows_alone(mode):
    """A batch big enough for the time steps to split their rows over the
    threads gives, row by row, what each sequence gives alone (one row, one
    part), forward and backward: the data and state gradients row by row,
    the parameter gradient as the sum over the rows."""
    t, n, i, h = 4, 17, 16, 128  # >= 2**18 MACs per step product for every mode
    rs = np.random.RandomState(5)
    x = rs.uniform(-1, 1, (t, n, i)).astype(np.float32)
    w = rs.uniform(-0.1, 0.1, n_params(mode, i, h, 2, True)).astype(np.float32)
    s0 = [rs.uniform(-1, 1, (4, n, h)).astype(np.float32) for _ in range(2 if mode == "lstm" else 1)]
    lens = np.array([4, 1, 3, 4, 2, 4, 4, 3, 1, 2, 4, 4, 3, 4, 1, 4, 2])
    kw = dict(state_size=h, num_layers=2, bidirectional=True, mode=mode, state_outputs=True,
              use_sequence_length=True)
    shapes = [(t, n, 2 * h)] + [(4, n, h)] * len(s0)
    heads = [np.cos(np.arange(np.prod(sh)) * 0.1).reshape(sh).astype(np.float32) for sh in shapes]

    def run(rows):
        ins = [mx.nd.array(x[:, rows]), mx.nd.array(w)] + [mx.nd.array(a[:, rows]) for a in s0]
        for a in ins:
            a.attach_grad()
        with mx.autograd.record():
            outs = mx.nd.RNN(*ins, mx.nd.array(lens[rows], dtype="int32"), **kw)
        mx.autograd.backward(outs, [mx.nd.array(g[:, rows]) for g in heads])
        return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in ins]

    outs, grads = run(slice(None))
    wgrad = np.zeros_like(w)
    for b in range(n):
        o1, g1 = run(slice(b, b + 1))
        for full, one in zip(outs, o1):
            np.testing.assert_allclose(full[:, b], one[:, 0], rtol=1e-5, atol=1e-6)
        for k in [0] + list(range(2, len(g1))):
            np.testing.assert_allclose(grads[k][:, b], g1[k][:, 0], rtol=1e-4, atol=1e-6)
        wgrad += g1[1]
    np.testing.assert_allclose(grads[1], wgrad, rtol=1e-4, atol=1e-5)
    assert np.abs(grads[1]).max() > 1e-3


def _err(fn):
    with pytest.raises(MXNetError) as e:
        r = fn()
        (r[0] if isinstance(r, list) else r).wait_to_read()
    return str(e.value)


def test_errors():
    x, w, s, c = [mx.nd.array(a) for a in _inputs("lstm", 1, False)]
    kw = dict(state_size=2, num_layers=1, mode="lstm")
    m = _err(lambda: mx.nd.RNN(x, mx.nd.zeros((50,)), s, c, **kw))
    assert "RNN" in m and "parameters" in m and "(50,)" in m and "(56,)" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, mx.nd.zeros((2, 2, 2)), c, **kw))
    assert "state" in m and "(2, 2, 2)" in m and "(1, 2, 2)" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, mx.nd.zeros((1, 3, 2)), **kw))
    assert "state_cell" in m and "(1, 3, 2)" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, **kw))
    assert "RNN" in m and "state_cell" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, state_size=2, num_layers=1, mode="gru", use_sequence_length=True))
    assert "data, parameters, state, sequence_length" in m and "got 3" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, mx.nd.array([1, 2, 3]), use_sequence_length=True, **kw))
    assert "sequence_length" in m and "(3,)" in m and "(2,)" in m, m
    m = _err(lambda: mx.nd.RNN(x[0], w, s, c, **kw))
    assert "3-D" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, state_size=2, num_layers=1, mode="lstmx"))
    assert "mode" in m and "lstmx" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, state_size=2, num_layers=1))
    assert "mode" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, num_layers=1, mode="lstm"))
    assert "state_size" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, projection_size=1, **kw))
    assert "projection_size" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, lstm_state_clip_min=-1.0, lstm_state_clip_max=1.0, **kw))
    assert "lstm_state_clip" in m, m
    m = _err(lambda: mx.nd.RNN(x, w.astype("float64"), s, c, **kw))
    assert "parameters" in m and "float64" in m, m
    m = _err(lambda: mx.nd.RNN(x, w, s, c, p=1.5, **kw))
    assert "p" in m and "1.5" in m, m


def test_empty_and_oversized():
    # No time steps: out is empty and the final state is the initial one.
    w = mx.nd.ones((n_params("lstm", 3, 2, 2, True),)) * 0.1
    s = mx.nd.ones((4, 2, 2)) * 0.5
    outs = mx.nd.RNN(mx.nd.zeros((0, 2, 3)), w, s, s, state_size=2, num_layers=2, bidirectional=True,
                     mode="lstm", state_outputs=True)
    assert [o.shape for o in outs] == [(0, 2, 4), (4, 2, 2), (4, 2, 2)]
    np.testing.assert_array_equal(outs[1].asnumpy(), s.asnumpy())
    m = _err(lambda: mx.nd.RNN(mx.nd.zeros((1, 1, 1)), mx.nd.zeros((1,)), mx.nd.zeros((1, 1, 1)),
                               state_size=1 << 24, num_layers=1 << 16, mode="gru"))
    assert "does not fit" in m, m
