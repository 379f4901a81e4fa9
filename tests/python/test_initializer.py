"""mx.initializer / mx.init: name rules, statistics, JSON and layouts
(compared with MXNet 1.9.1 where values are deterministic)."""
import json
import warnings

import numpy as np
import pytest

import oxnet as mx

D = mx.init.InitDesc


def _fill(init, name, shape, **kw):
    arr = mx.nd.zeros(shape, **kw)
    init(D(name), arr)
    return arr.asnumpy()


def test_name_patterns():
    init = mx.init.Uniform(0.5)
    assert (_fill(init, "fc1_bias", (4,)) == 0).all()
    assert (_fill(init, "bn_gamma", (4,)) == 1).all()
    assert (_fill(init, "bn_beta", (4,)) == 0).all()
    assert (_fill(init, "q_min", (2,)) == 0).all()
    assert (_fill(init, "q_max", (2,)) == 1).all()
    w = _fill(init, "fc1_weight", (50, 40))
    assert np.abs(w).max() <= 0.5 and w.std() > 0.2
    with pytest.raises(ValueError, match="Unknown initialization pattern for mystery"):
        init(D("mystery"), mx.nd.zeros((2,)))


def test_legacy_string_names():
    init = mx.init.Xavier()
    arrs = {n: mx.nd.zeros((6,)) for n in ("bn_moving_var", "bn_moving_mean", "stn_loc_bias", "c_beta")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for n, a in arrs.items():
            init(n, a)
    assert (arrs["bn_moving_var"].asnumpy() == 1).all()
    assert (arrs["bn_moving_mean"].asnumpy() == 0).all()
    assert arrs["stn_loc_bias"].asnumpy().tolist() == [1, 0, 0, 0, 1, 0]


@pytest.mark.parametrize("factor_type,fan", [("avg", (64 * 9 + 32 * 9) / 2), ("in", 32 * 9), ("out", 64 * 9)])
def test_xavier_uniform_and_gaussian_scale(factor_type, fan):
    mx.random.seed(7)
    scale = np.sqrt(3.0 / fan)
    w = _fill(mx.init.Xavier(factor_type=factor_type), "conv_weight", (64, 32, 3, 3))
    assert np.abs(w).max() <= scale * (1 + 1e-6)
    assert abs(w.std() - scale / np.sqrt(3)) < 0.03 * scale
    g = _fill(mx.init.Xavier(rnd_type="gaussian", factor_type=factor_type, magnitude=2), "conv_weight",
              (64, 32, 3, 3))
    assert abs(g.std() - np.sqrt(2.0 / fan)) < 0.03 * np.sqrt(2.0 / fan)
    assert abs(g.mean()) < 0.01


def test_msraprelu_std():
    mx.random.seed(1)
    w = _fill(mx.init.MSRAPrelu(factor_type="in", slope=0.25), "c_weight", (128, 64, 3, 3))
    want = np.sqrt(2.0 / (1 + 0.25 ** 2) / (64 * 9))
    assert abs(w.std() - want) < 0.02 * want


def test_uniform_normal_statistics_and_seed():
    mx.random.seed(11)
    u = _fill(mx.init.Uniform(0.2), "x_weight", (200, 100))
    assert np.abs(u).max() <= 0.2 and abs(u.mean()) < 0.005 and abs(u.std() - 0.2 / np.sqrt(3)) < 0.003
    n = _fill(mx.init.Normal(0.5), "x_weight", (200, 100))
    assert abs(n.std() - 0.5) < 0.01
    mx.random.seed(11)
    assert (u == _fill(mx.init.Uniform(0.2), "x_weight", (200, 100))).all()


def test_xavier_rejects_vectors_and_bad_types():
    with pytest.raises(ValueError, match="cannot be applied to vector"):
        mx.init.Xavier()(D("v_weight"), mx.nd.zeros((5,)))
    with pytest.raises(ValueError, match="factor type"):
        mx.init.Xavier(factor_type="sideways")(D("v_weight"), mx.nd.zeros((5, 5)))
    with pytest.raises(ValueError, match="random type"):
        mx.init.Xavier(rnd_type="cauchy")(D("v_weight"), mx.nd.zeros((5, 5)))


@pytest.mark.parametrize("shape,rand_type", [((4, 6), "uniform"), ((6, 4), "normal"), ((3, 2, 2, 2), "uniform")])
def test_orthogonal(shape, rand_type):
    w = _fill(mx.init.Orthogonal(scale=2.0, rand_type=rand_type), "o_weight", shape)
    m = w.reshape(shape[0], -1)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)


def test_constants_and_lstm_bias():
    assert (_fill(mx.init.Constant(2.5), "c_weight", (2, 2)) == 2.5).all()
    assert (_fill(mx.init.One(), "c_weight", (3,)) == 1).all()
    assert (_fill(mx.init.Zero(), "c_weight", (3,)) == 0).all()
    assert _fill(mx.init.LSTMBias(2.0), "l_weight", (8,)).tolist() == [0, 0, 2, 2, 0, 0, 0, 0]
    c = mx.init.Constant(np.array([1.0, 2.0]))
    assert json.loads(c.dumps()) == ["constant", {"value": [1.0, 2.0]}]


def test_bilinear_matches_mxnet():
    # MXNet 1.9.1: mx.init.Bilinear() on a (1, 2, 3, 3) weight
    plane = [[0.0625, 0.1875, 0.1875], [0.1875, 0.5625, 0.5625], [0.1875, 0.5625, 0.5625]]
    w = _fill(mx.init.Bilinear(), "up_weight", (1, 2, 3, 3))
    np.testing.assert_allclose(w, np.array([[plane, plane]]))


def test_dumps_and_create_match_mxnet():
    # strings printed by MXNet 1.9.1
    assert mx.init.Xavier().dumps() == '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'
    assert mx.init.MSRAPrelu().dumps() == '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'
    assert mx.init.Uniform(0.1).dumps() == '["uniform", {"scale": 0.1}]'
    assert mx.init.FusedRNN(mx.init.One(), 2, 1, "lstm").dumps() == (
        '["fusedrnn", {"init": "[\\"one\\", {}]", "num_hidden": 2, "num_layers": 1, "mode": "lstm", '
        '"bidirectional": false, "forget_bias": 1.0}]')
    x = mx.init.create('["xavier", {"magnitude": 2}]')
    assert isinstance(x, mx.init.Xavier) and x.magnitude == 2.0
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert isinstance(mx.init.create("ones"), mx.init.One)
    assert mx.init.create(x) is x
    assert mx.init.create(mx.init.Normal(0.3).dumps()) == mx.init.Normal(0.3)
    with pytest.raises(ValueError, match="nosuch is not registered"):
        mx.init.create("nosuch")


def test_init_attribute_overrides_name():
    arr = mx.nd.zeros((3,))
    mx.init.Uniform()(D("fc_bias", attrs={"__init__": mx.init.Constant(4.0).dumps()}), arr)
    assert (arr.asnumpy() == 4).all()


def test_register_custom_initializer():
    @mx.init.register
    class Sevens(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 7

    arr = mx.nd.zeros((2,))
    mx.init.Zero()(D("p_weight", attrs={"__init__": Sevens().dumps()}), arr)
    assert (arr.asnumpy() == 7).all()


def test_mixed_and_load(tmp_path):
    mixed = mx.init.Mixed(["fc", ".*"], [mx.init.Constant(3.0), mx.init.One()])
    a, b = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    mixed(D("fc_weight"), a)
    mixed(D("conv_weight"), b)
    assert a.asnumpy().tolist() == [3, 3] and b.asnumpy().tolist() == [1, 1]
    with pytest.raises(ValueError, match="did not match any pattern"):
        mx.init.Mixed(["^a"], [mx.init.One()])("b", a)
    fname = str(tmp_path / "p.params")
    mx.nd.save(fname, {"arg:fc_weight": mx.nd.array([[1.0, 2.0]]), "aux:bn_moving_var": mx.nd.array([5.0])})
    load = mx.init.Load(fname, default_init=mx.init.Constant(9.0))
    w = mx.nd.zeros((1, 2))
    load(D("fc_weight"), w)
    assert w.asnumpy().tolist() == [[1, 2]]
    other = mx.nd.zeros((2, 2))
    load(D("other_weight"), other)
    assert (other.asnumpy() == 9).all()
    with pytest.raises(ValueError, match="Shape mismatch"):
        load("fc_weight", mx.nd.zeros((3,)))
    with pytest.raises(ValueError, match="Cannot Initialize other"):
        mx.init.Load(fname)("other", other)


def test_fused_rnn_layouts_match_mxnet():
    # MXNet 1.9.1: FusedRNN(One(), 2, 1, 'lstm', forget_bias=3)._init_weight(InitDesc('parameters',
    # global_init=Zero()), zeros(56)): 40 weights of one, then i2h and h2h biases with the forget gate at 3
    a = mx.nd.zeros((56,))
    mx.init.FusedRNN(mx.init.One(), 2, 1, "lstm", forget_bias=3.0)._init_weight(
        D("parameters", global_init=mx.init.Zero()), a)
    bias = [0, 0, 3, 3, 0, 0, 0, 0]
    assert a.asnumpy().tolist() == [1.0] * 40 + bias + bias
    # MXNet 1.9.1: 2-layer bidirectional GRU (input 3, hidden 2) through '__init__' with init=None and
    # global One(): 132 weights of one then 48 zero biases
    b = mx.nd.zeros((180,))
    mx.init.One()(D("parameters", attrs={"__init__": mx.init.FusedRNN(None, 2, 2, "gru", True).dumps()}), b)
    assert b.asnumpy().tolist() == [1.0] * 132 + [0.0] * 48
    with pytest.raises(ValueError, match="does not fit lstm"):
        mx.init.FusedRNN(mx.init.One(), 2, 1, "lstm")._init_weight(D("p"), mx.nd.zeros((55,)))


def test_fused_rnn_xavier_per_gate_pieces():
    mx.random.seed(5)
    arr = mx.nd.zeros((4 * 8 * (16 + 8 + 2),))
    mx.init.FusedRNN(mx.init.Xavier(), 8, 1, "lstm")._init_weight(D("p", global_init=mx.init.Xavier()), arr)
    a = arr.asnumpy()
    i2h = a[: 4 * 8 * 16]
    assert np.abs(i2h).max() <= np.sqrt(3.0 / 12) + 1e-6   # each (8, 16) gate block: fan avg 12
    assert np.abs(i2h).max() > np.sqrt(3.0 / 12) * 0.8
