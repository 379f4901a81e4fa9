"""Gluon Parameter, ParameterDict, Block and HybridBlock behaviour (MXNet
1.9.1's names, defaults and files)."""
import os
import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from oxnet.gluon import nn

DATA = os.path.join(os.path.dirname(__file__), "..", "data")


def test_parameter_basics():
    p = gluon.Parameter("weight", shape=(10, 10))
    p.initialize(init="xavier" if hasattr(mx, "init") else "uniform", ctx=[mx.cpu(0), mx.cpu(1)])
    assert len(p.list_data()) == 2
    assert len(p.list_grad()) == 2
    assert p.data(mx.cpu(1)).context == mx.cpu(1)
    assert p.data(mx.cpu(0)).shape == (10, 10)
    assert p.grad(mx.cpu(0)).stype == "default"
    assert p.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_array_equal(p.data(mx.cpu(0)).asnumpy(), p.data(mx.cpu(1)).asnumpy())
    p.reset_ctx(ctx=[mx.cpu(1), mx.cpu(2)])
    assert p.list_ctx() == [mx.cpu(1), mx.cpu(2)]
    with pytest.raises(RuntimeError, match="was not initialized on context"):
        p.data(mx.cpu(0))


def test_parameter_var():
    pytest.importorskip("oxnet.symbol")
    p = gluon.Parameter("weight", shape=(10, 10), lr_mult=2.0)
    v = p.var()
    assert v.name == "weight" and p.var() is v
    assert v.list_attr()["__lr_mult__"] == "2.0"


def test_parameter_default_uniform_init():
    mx.random.seed(1)
    p = gluon.Parameter("w", shape=(200, 50))
    p.initialize()
    v = p.data().asnumpy()
    assert v.min() >= -0.07 and v.max() <= 0.07 and v.std() > 0.03
    assert p.grad().asnumpy().sum() == 0


def test_parameter_grad_req_and_zero_grad():
    p = gluon.Parameter("w", shape=(3,))
    p.initialize(init="ones")
    x = p.data()
    with mx.autograd.record():
        y = (x * 2).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [2, 2, 2])
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0, 0])
    p.grad_req = "null"
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    p.grad_req = "add"
    for _ in range(2):
        with mx.autograd.record():
            y = (p.data() * 3).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [6, 6, 6])
    with pytest.raises(ValueError):
        p.grad_req = "sometimes"


def test_parameter_deferred_and_errors():
    p = gluon.Parameter("w", shape=(0, 3), allow_deferred_init=True)
    p.initialize()
    with pytest.raises(gluon.DeferredInitializationError):
        p.data()
    q = gluon.Parameter("q", shape=(0, 3))
    with pytest.raises(ValueError, match="invalid shape"):
        q.initialize()
    r = gluon.Parameter("r", shape=(2,))
    with pytest.raises(RuntimeError, match="has not been initialized"):
        r.data()
    p.shape = (4, 3)
    p._finish_deferred_init()
    assert p.data().shape == (4, 3)
    with pytest.raises(AssertionError, match="incompatible"):
        p.shape = (5, 3)


def test_parameter_set_data_and_cast():
    p = gluon.Parameter("w", shape=(2, 2))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    p.set_data(mx.nd.ones((2, 2)) * 3)
    for d in p.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full((2, 2), 3))
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad(mx.cpu(0)).dtype == np.float64
    assert p.dtype == "float64"


def test_constant():
    c = gluon.Constant("c", [[1, 2], [3, 4]])
    c.initialize()
    assert c.grad_req == "null"
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2], [3, 4]])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c.grad_req = "write"
        assert w and c.grad_req == "null"


def test_parameter_dict():
    params = gluon.ParameterDict("net_")
    params.get("w0", shape=(10, 10))
    params.get("w1", shape=(10, 10), stype="default")
    assert list(params.keys()) == ["net_w0", "net_w1"]
    # fill unknown dims of an existing parameter
    params.get("w2", shape=(0, 10))
    assert params.get("w2", shape=(5, 10)).shape == (5, 10)
    with pytest.raises(AssertionError, match="does not match"):
        params.get("w0", shape=(3, 3))
    params.initialize(ctx=mx.cpu())
    params.setattr("lr_mult", 0.5)
    assert all(p.lr_mult == 0.5 for p in params.values())
    shared = gluon.ParameterDict("net_", shared=params)
    assert shared.get("w0") is params["net_w0"]
    const = params.get_constant("c", [[1, 2]])
    assert params.get_constant("c") is const
    with pytest.raises(KeyError):
        params.get_constant("nope")


def test_parameter_dict_save_load(tmp_path):
    params = gluon.ParameterDict("net_")
    params.get("w0", shape=(2, 3))
    params.get("w1", shape=(4,))
    params.initialize()
    f = str(tmp_path / "p.params")
    params.save(f, strip_prefix="net_")
    assert sorted(mx.nd.load(f).keys()) == ["w0", "w1"]
    other = gluon.ParameterDict("net_")
    other.get("w0", shape=(2, 3))
    other.get("w1", shape=(4,))
    other.load(f, mx.cpu(), restore_prefix="net_")
    for k in params.keys():
        np.testing.assert_array_equal(params[k].data().asnumpy(), other[k].data().asnumpy())
    with pytest.raises(ValueError, match="does not start with"):
        params.save(f, strip_prefix="zzz_")
    missing = gluon.ParameterDict("net_")
    missing.get("w0", shape=(2, 3))
    missing.get("w9", shape=(4,))
    with pytest.raises(AssertionError, match="missing"):
        missing.load(f, restore_prefix="net_", ignore_extra=True)
    missing.load(f, restore_prefix="net_", ignore_extra=True, allow_missing=True)
    with pytest.raises(AssertionError, match="not present"):
        missing.load(f, restore_prefix="net_", allow_missing=True)


def test_block_naming_as_mxnet():
    class Net(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.dense0 = nn.Dense(5, in_units=5)
                self.dense1 = nn.Dense(5, in_units=5)

        def forward(self, x):
            return self.dense1(self.dense0(x))

    net = Net(prefix="net1_")
    assert net.prefix == "net1_" and net.name == "net1"
    assert list(net.collect_params().keys()) == ["net1_dense0_weight", "net1_dense0_bias", "net1_dense1_weight",
                                                 "net1_dense1_bias"]
    assert list(net.collect_params(".*weight").keys()) == ["net1_dense0_weight", "net1_dense1_weight"]
    assert list(net.collect_params("net1_dense0_weight|net1_dense1_bias").keys()) == [
        "net1_dense0_weight", "net1_dense1_bias"]
    # unscoped blocks count per class name in the global name manager
    a, b = nn.Dense(2), nn.Dense(2)
    na, nb = int(a.name[len("dense"):]), int(b.name[len("dense"):])
    assert nb == na + 1 and a.weight.name == a.name + "_weight"
    assert nn.Activation("relu").name.startswith("relu")
    assert nn.Conv2D(2, 3).name.startswith("conv")
    assert nn.MaxPool2D().name.startswith("pool")
    seq = nn.HybridSequential(prefix="s_")
    with seq.name_scope():
        seq.add(nn.Dense(3, activation="relu"), nn.Dense(3))
    assert [c.name for c in seq._children.values()] == ["s_dense0", "s_dense1"]
    assert seq[0].act.name == "s_dense0_relu"


def test_hybrid_children_and_containers():
    with pytest.raises(ValueError, match="Children of HybridBlock"):
        nn.HybridSequential().add(nn.Sequential())

    class Holder(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2)]

        def forward(self, x):
            return x

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Holder().collect_params()
    assert any("unregistered container" in str(x.message) for x in w)

    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            self.d = nn.Dense(2)

    n = Net()
    with pytest.raises(TypeError, match="Changing attribute type"):
        n.d = 3


def test_deferred_init_and_forward():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Flatten(), nn.Dense(3))
    net.initialize()
    with pytest.raises(gluon.DeferredInitializationError):
        net[0].weight.data()
    y = net(mx.nd.ones((2, 2, 5, 5)))
    assert y.shape == (2, 3)
    assert net[0].weight.shape == (4, 2, 3, 3)
    assert net[3].weight.shape == (3, 36)
    assert net[1].gamma.shape == (4,)


def test_hooks_apply_and_cast():
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=2), nn.Dense(1, in_units=3))
    net.initialize()
    seen = []
    h1 = net.register_forward_pre_hook(lambda blk, inp: seen.append(("pre", inp[0].shape)))
    h2 = net.register_forward_hook(lambda blk, inp, out: seen.append(("post", out.shape)))
    net(mx.nd.ones((4, 2)))
    assert seen == [("pre", (4, 2)), ("post", (4, 1))]
    h1.detach()
    h2.detach()
    net(mx.nd.ones((4, 2)))
    assert len(seen) == 2
    names = []
    assert net.apply(lambda b: names.append(type(b).__name__)) is net
    assert names == ["Dense", "Dense", "HybridSequential"]
    net.cast("float64")
    assert net[0].weight.data().dtype == np.float64
    assert net(mx.nd.ones((4, 2), dtype="float64")).dtype == np.float64


def test_summary(capsys):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu", in_units=5), nn.BatchNorm(in_channels=8), nn.Dense(3, in_units=8))
    net.initialize()
    net.summary(mx.nd.ones((4, 5)))
    out = capsys.readouterr().out
    assert "Layer (type)" in out and "Dense-2" in out and "BatchNorm-3" in out
    assert "Total params: 107" in out and "Trainable params: 91" in out
    assert "Non-trainable params: 16" in out


def _mxnet_net(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Conv2D(3, 3, in_channels=2), nn.BatchNorm(in_channels=3), nn.Dense(4, in_units=3 * 4 * 4))
    return net


def _mxnet_input():
    return mx.nd.array(np.random.RandomState(1).randn(2, 2, 6, 6).astype("float32"))


def test_load_parameters_written_by_mxnet():
    # gluon_net.params: save_parameters of MXNet 1.9.1 (keys 0.weight, 1.gamma, ...)
    net = _mxnet_net()
    net.load_parameters(os.path.join(DATA, "gluon_net.params"))
    expected = np.load(os.path.join(DATA, "gluon_net_out.npy"))
    np.testing.assert_allclose(net(_mxnet_input()).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    # collect_params().save of MXNet 1.9.1 (full names)
    net2 = _mxnet_net(prefix="hybridsequential0_")
    net2.collect_params().load(os.path.join(DATA, "gluon_net_prefixed.params"))
    np.testing.assert_allclose(net2(_mxnet_input()).asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_save_load_parameters_roundtrip(tmp_path):
    net = _mxnet_net()
    net.initialize()
    x = _mxnet_input()
    y = net(x).asnumpy()
    f = str(tmp_path / "net.params")
    net.save_parameters(f)
    assert sorted(mx.nd.load(f).keys()) == sorted(
        ["0.weight", "0.bias", "1.gamma", "1.beta", "1.running_mean", "1.running_var", "2.weight", "2.bias"])
    net2 = _mxnet_net()
    net2.load_parameters(f, ctx=mx.cpu())
    np.testing.assert_allclose(net2(x).asnumpy(), y, rtol=1e-6)
    # missing / extra parameters
    small = nn.HybridSequential()
    small.add(nn.Conv2D(3, 3, in_channels=2))
    with pytest.raises(ValueError, match="not present"):
        small.load_parameters(f)
    small.load_parameters(f, ignore_extra=True)
    big = _mxnet_net()
    big.add(nn.Dense(2, in_units=4))
    with pytest.raises(AssertionError, match="missing"):
        big.load_parameters(f)
    big.load_parameters(f, allow_missing=True)


def test_load_parameters_cast_dtype(tmp_path):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.cast("float64")
    f = str(tmp_path / "d.params")
    net.save_parameters(f)
    other = nn.Dense(2, in_units=3)
    with pytest.raises(AssertionError, match="dtype incompatible"):
        other.load_parameters(f)
    other.load_parameters(f, cast_dtype=True)
    assert other.weight.data().dtype == np.float32
    third = nn.Dense(2, in_units=3)
    third.load_parameters(f, cast_dtype=True, dtype_source="saved")
    assert third.weight.data().dtype == np.float64


def test_share_parameters():
    a = nn.Dense(3, in_units=2, prefix="a_")
    b = nn.Dense(3, in_units=2, prefix="b_", params=a.params)
    a.initialize()
    assert b.weight is a.weight
    x = mx.nd.ones((1, 2))
    np.testing.assert_array_equal(a(x).asnumpy(), b(x).asnumpy())


def test_hybridize_runs_and_matches_imperative():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(5, activation="relu"), nn.Dense(2))
    net.initialize()
    x = mx.nd.array(np.random.RandomState(0).randn(3, 4).astype("float32"))
    y0 = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), y0, rtol=1e-6)
    x.attach_grad()
    with mx.autograd.record():
        out = net(x)
    out.backward()
    assert net[0].weight.grad().abs().sum().asscalar() > 0


def test_lambda_blocks():
    f = nn.Lambda("tanh")
    x = mx.nd.array([0.5, -1.0])
    np.testing.assert_allclose(f(x).asnumpy(), np.tanh([0.5, -1.0]), rtol=1e-6)
    g = nn.Lambda(lambda a: a * 2)
    np.testing.assert_array_equal(g(x).asnumpy(), [1.0, -2.0])
    with pytest.raises(ValueError):
        nn.Lambda(3)
    seq = nn.Sequential()
    seq.add(nn.Dense(2, in_units=2), nn.Lambda(lambda a: a + 1))
    seq.initialize()
    assert seq(mx.nd.ones((1, 2))).shape == (1, 2) and len(seq) == 2
    assert isinstance(seq[:1], nn.Sequential) and len(seq[:1]) == 1


class _ConvNet(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = nn.Conv2D(4, 3, padding=1)
            self.bn = nn.BatchNorm()
            self.pool = nn.MaxPool2D()
            self.fc = nn.Dense(3)

    def hybrid_forward(self, F, x):
        y = self.pool(F.relu(self.bn(self.conv(x))))
        return self.fc(y) + 1


def test_symbolblock_imports_mxnet_export():
    # convnet-symbol.json / convnet-0003.params: HybridBlock.export of MXNet 1.9.1
    d = os.path.join(DATA, "gluon_export")
    sb = gluon.SymbolBlock.imports(os.path.join(d, "convnet-symbol.json"), ["data"],
                                   os.path.join(d, "convnet-0003.params"))
    x = mx.nd.array(np.random.RandomState(2).randn(2, 3, 8, 8).astype("float32"))
    np.testing.assert_allclose(sb(x).asnumpy(), np.load(os.path.join(d, "convnet_out.npy")), rtol=1e-5, atol=1e-6)
    assert "convnet_batchnorm0_running_mean" in sb.collect_params().keys()
    assert sb.collect_params()["convnet_batchnorm0_running_mean"].grad_req == "null"


def test_export_and_imports_roundtrip(tmp_path):
    net = _ConvNet(prefix="convnet_")
    net.initialize()
    x = mx.nd.array(np.random.RandomState(2).randn(2, 3, 8, 8).astype("float32"))
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "m"))
    net.hybridize()
    y = net(x).asnumpy()
    net.export(str(tmp_path / "m"), epoch=7)
    assert os.path.exists(str(tmp_path / "m-symbol.json"))
    keys = sorted(mx.nd.load(str(tmp_path / "m-0007.params")).keys())
    assert "aux:convnet_batchnorm0_running_var" in keys and "arg:convnet_conv0_weight" in keys
    sb = gluon.SymbolBlock.imports(str(tmp_path / "m-symbol.json"), "data", str(tmp_path / "m-0007.params"))
    np.testing.assert_allclose(sb(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    # gradients flow through a SymbolBlock
    with mx.autograd.record():
        out = sb(x)
    out.backward()
    assert sb.collect_params()["convnet_conv0_weight"].grad().abs().sum().asscalar() > 0


def test_symbolblock_from_symbols():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    out = mx.sym.Activation(fc, act_type="relu")
    blk = gluon.SymbolBlock(out, data)
    blk.initialize()
    y = blk(mx.nd.ones((2, 5)))
    assert y.shape == (2, 3)
    assert sorted(blk.collect_params().keys()) == ["fc_bias", "fc_weight"]
    assert blk.collect_params()["fc_weight"].shape == (3, 5)


def test_hybridized_rnn_and_reshape_batch():
    lstm = nn.HybridSequential()
    with lstm.name_scope():
        lstm.add(gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, layout="NTC"), nn.Dense(2, flatten=False))
    lstm.initialize()
    xs = mx.nd.array(np.random.RandomState(3).randn(2, 5, 3).astype("float32"))
    y0 = lstm(xs).asnumpy()
    lstm.hybridize()
    np.testing.assert_allclose(lstm(xs).asnumpy(), y0, rtol=1e-5, atol=1e-6)
    # another batch size through the same hybridized block
    assert lstm(mx.nd.ones((3, 5, 3))).shape == (3, 5, 2)


def test_hybridize_deferred_init_and_infer_shape():
    net = nn.HybridSequential()
    net.add(nn.Dense(3), nn.Dense(2))
    net.initialize()
    net.hybridize()
    assert net(mx.nd.ones((4, 7))).shape == (4, 2)
    assert net[0].weight.shape == (3, 7)

    class Custom(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.w = self.params.get("w", shape=(5, 0), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.FullyConnected(x, w, no_bias=True, num_hidden=5)

    c = Custom()
    c.initialize()
    assert c(mx.nd.ones((2, 6))).shape == (2, 5)  # imperative, through the graph's shape inference
    assert c.w.shape == (5, 6)
