"""mx.sym: naming, attributes, composition, inference, JSON, executors and
CachedOp. Expected names and orders were checked against MXNet 1.9.1."""
import json
import os
import pickle
import threading

import numpy as np
import pytest

import oxnet as mx

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden_sym")


def mlp(prefix=""):
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name=prefix + "fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name=prefix + "relu1")
    return mx.sym.FullyConnected(act, num_hidden=4, name=prefix + "fc2")


def test_automatic_names_follow_mxnet():
    with mx.name.NameManager():
        d = mx.sym.var("data")
        assert [(d + 1).name, (d + d).name, (d * 2).name, (2 - d).name, (d / 2).name, (d ** 2).name,
                (-d).name, (d < 1).name] == ["_plusscalar0", "_plus0", "_mulscalar0", "_rminusscalar0",
                                             "_divscalar0", "_powerscalar0", "_mulscalar1", "_lesser_scalar0"]
        assert mx.sym.FullyConnected(num_hidden=3).name == "fullyconnected0"
        assert mx.sym.FullyConnected(num_hidden=3).list_arguments() == [
            "fullyconnected1_data", "fullyconnected1_weight", "fullyconnected1_bias"]
    with mx.name.Prefix("net_"):
        assert mx.sym.exp(mx.sym.var("x")).name == "net_exp0"


def test_lists_and_outputs():
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    assert bn.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]
    net = mlp()
    assert net.get_internals().list_outputs() == [
        "data", "fc1_weight", "fc1_bias", "fc1_output", "relu1_output", "fc2_weight", "fc2_bias", "fc2_output"]
    assert net.get_internals()["relu1_output"].name == "relu1"
    assert [c.name for c in net.get_children()] == ["relu1", "fc2_weight", "fc2_bias"]
    assert mx.sym.var("x").get_children() is None
    sl = mx.sym.SliceChannel(mx.sym.var("d"), num_outputs=3, name="sl")
    assert sl.list_outputs() == ["sl_output0", "sl_output1", "sl_output2"] and len(sl) == 3
    assert sl[1].list_outputs() == ["sl_output1"]
    g = mx.sym.Group([net, bn])
    assert g.list_outputs() == ["fc2_output", "bn_output"] and g.name is None
    with pytest.raises(IndexError):
        sl[3]


def test_attributes_and_scopes():
    v = mx.sym.var("a", shape=(2, 3), lr_mult=2, dtype="float16", __mood__="calm")
    assert v.list_attr() == {"__dtype__": "2", "__lr_mult__": "2", "__shape__": "(2, 3)", "lr_mult": "2",
                             "__mood__": "calm"}
    assert v.attr("lr_mult") == "2" and v.attr("missing") is None
    with pytest.raises(ValueError):
        mx.sym.var("b", mood="calm")
    with mx.AttrScope(ctx_group="dev1", __group__="g"):
        fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
        with mx.AttrScope(__group__="inner"):
            y = mx.sym.exp(fc, name="e")
    assert fc.attr("ctx_group") == "dev1" and fc.attr("num_hidden") == "3"
    assert y.attr("__group__") == "inner" and y.attr("ctx_group") == "dev1"
    assert mx.sym.exp(fc, name="outside").attr("__group__") is None
    d = y.attr_dict()
    assert d["e"]["__group__"] == "inner" and d["fc"]["num_hidden"] == "3"
    y._set_attr(__note__="n")
    assert y.attr("__note__") == "n"
    # attributes survive JSON
    assert mx.sym.load_json(y.tojson()).attr_dict()["e"]["__note__"] == "n"


def test_scopes_are_thread_local():
    seen = {}

    def worker():
        seen["attr"] = mx.sym.var("t").attr("ctx_group")
        seen["name"] = mx.sym.exp(mx.sym.var("t")).name

    with mx.AttrScope(ctx_group="main"), mx.name.Prefix("main_"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert mx.sym.var("m").attr("ctx_group") == "main"
    assert seen["attr"] is None and not seen["name"].startswith("main_")


def test_compose_by_name_and_position():
    net2 = mx.sym.FullyConnected(name="fc3", num_hidden=10)
    net1 = mx.sym.FullyConnected(mx.sym.var("data"), name="fc1", num_hidden=5)
    composed = net2(fc3_data=net1, name="composed")
    assert composed.name == "composed"
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc3_weight", "fc3_bias"]
    # the original is unchanged
    assert net2.list_arguments() == ["fc3_data", "fc3_weight", "fc3_bias"]
    pos = net2(net1)
    assert pos.list_arguments() == composed.list_arguments()
    with pytest.raises(mx.MXNetError, match="not an input"):
        net2(nothere=net1)


def test_infer_shape_both_directions():
    net = mlp()
    args, outs, aux = net.infer_shape(data=(5, 7))
    assert dict(zip(net.list_arguments(), args)) == {
        "data": (5, 7), "fc1_weight": (16, 7), "fc1_bias": (16,), "fc2_weight": (4, 16), "fc2_bias": (4,)}
    assert outs == [(5, 4)] and aux == []
    # backward: the variable's shape is learned from the op it feeds
    a = mx.sym.var("a")
    b = mx.sym.var("b", shape=(3, 4))
    args, outs, _ = (a + b).infer_shape()
    assert args == [(3, 4), (3, 4)] and outs == [(3, 4)]
    with pytest.warns(UserWarning):
        assert mlp().infer_shape() == (None, None, None)
    part = mlp().infer_shape_partial()
    assert part[0][0] == () and part[1] == [()]
    with pytest.raises(mx.MXNetError, match=r"fc1.*\(1, 100\)|fc1"):
        mlp().infer_shape(data=(100, 100), fc1_weight=(1, 100))


def test_infer_type():
    x = mx.sym.var("x")
    y = mx.sym.Cast(x, dtype="float16") + mx.sym.var("z")
    a, o, _ = y.infer_type(x="float32")
    assert a == [np.float32, np.float16] and o == [np.float16]
    with pytest.raises(mx.MXNetError):
        y.infer_type(x="float32", z="float64")


def test_json_roundtrip_and_pickle(tmp_path):
    net = mlp()
    js = json.loads(net.tojson())
    assert js["attrs"]["mxnet_version"] == ["int", 10901]
    assert js["arg_nodes"] == [0, 1, 2, 5, 6] and js["heads"] == [[7, 0, 0]]
    assert js["node_row_ptr"] == list(range(9))
    f = str(tmp_path / "net-symbol.json")
    net.save(f)
    back = mx.sym.load(f)
    assert back.tojson() == net.tojson()
    assert pickle.loads(pickle.dumps(net)).tojson() == net.tojson()


def test_json_from_older_mxnet_and_bad_files():
    old = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                     {"op": "Activation", "name": "r", "param": {"act_type": "relu"}, "attr": {"__k__": "v"},
                      "inputs": [[0, 0]], "backward_source_id": -1}],
           "arg_nodes": [0], "heads": [[1, 0]]}
    s = mx.sym.load_json(json.dumps(old))
    assert s.list_attr() == {"act_type": "relu", "__k__": "v"}
    out = s.eval(x=mx.nd.array([-1.0, 2.0]))[0]
    assert out.asnumpy().tolist() == [0.0, 2.0]
    bad_op = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                        {"op": "NoSuchOp", "name": "n1", "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]}
    with pytest.raises(mx.MXNetError, match="n1.*NoSuchOp"):
        mx.sym.load_json(json.dumps(bad_op))
    cycle = {"nodes": [{"op": "exp", "name": "a", "inputs": [[1, 0, 0]]},
                       {"op": "exp", "name": "b", "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]}
    with pytest.raises(mx.MXNetError, match="cycle"):
        mx.sym.load_json(json.dumps(cycle))
    arity = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                       {"op": "elemwise_add", "name": "s", "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]}
    with pytest.raises(mx.MXNetError, match="'s'.*1 input"):
        mx.sym.load_json(json.dumps(arity))
    with pytest.raises(mx.MXNetError, match="not valid JSON"):
        mx.sym.load_json("{nodes")


@pytest.mark.parametrize("name", ["mlp", "convbn", "residual", "bilstm", "embln"])
def test_mxnet_exported_models_reproduce_mxnet(name):
    # -symbol.json and .params exported by MXNet 1.9.1 Gluon (tests/data/make_sym_golden.py)
    sym = mx.sym.load(os.path.join(GOLDEN, name + "-symbol.json"))
    params = mx.nd.load(os.path.join(GOLDEN, name + "-0000.params"))
    x = np.load(os.path.join(GOLDEN, name + "-input.npy"))
    want = np.load(os.path.join(GOLDEN, name + "-output.npy"))
    args = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in params.items() if k.startswith("aux:")}
    args["data"] = mx.nd.array(x)
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-5, atol=1e-5)
    # oxnet's own JSON of the same graph gives the same result
    ex2 = mx.sym.load_json(sym.tojson()).bind(mx.cpu(), args, aux_states=aux)
    np.testing.assert_allclose(ex2.forward()[0].asnumpy(), want, rtol=1e-5, atol=1e-5)


def _fill(ex, seed=0):
    rng = np.random.RandomState(seed)
    for a in ex.arg_arrays:
        a[:] = rng.randn(*a.shape).astype(np.float32)


def test_executor_matches_autograd():
    net = mlp()
    ex = net.simple_bind(mx.cpu(), data=(5, 7))
    _fill(ex)
    out = ex.forward(is_train=True)[0]
    og = mx.nd.array(np.random.RandomState(1).randn(5, 4))
    ex.backward(og)
    arrays = [a.copy() for a in ex.arg_arrays]
    for a in arrays:
        a.attach_grad()
    x, w1, b1, w2, b2 = arrays
    with mx.autograd.record():
        y = mx.nd.FullyConnected(mx.nd.relu(mx.nd.FullyConnected(x, w1, b1, num_hidden=16)), w2, b2, num_hidden=4)
    y.backward(og)
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-6)
    for n, a in zip(net.list_arguments(), arrays):
        np.testing.assert_allclose(ex.grad_dict[n].asnumpy(), a.grad.asnumpy(), rtol=1e-5, atol=1e-6)
    assert ex.output_dict["fc2_output"] is ex.outputs[0]


def test_grad_req_add_null_and_forward_inputs():
    x = mx.sym.var("x")
    w = mx.sym.var("w")
    y = mx.sym.sum(x * w)
    xs, ws = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])
    gx, gw = mx.nd.ones((2,)), mx.nd.ones((2,))
    ex = y.bind(mx.cpu(), {"x": xs, "w": ws}, args_grad={"x": gx, "w": gw}, grad_req={"x": "add", "w": "null"})
    ex.forward(is_train=True)
    ex.backward()
    ex.backward()
    assert gx.asnumpy().tolist() == [7.0, 9.0]  # 1 + 3 + 3, 1 + 4 + 4
    assert gw.asnumpy().tolist() == [1.0, 1.0]
    out = ex.forward(x=np.array([2.0, 2.0]))[0]
    assert out.asscalar() == 14.0 and xs.asnumpy().tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="shape"):
        ex.forward(x=mx.nd.ones((3,)))
    with pytest.raises(ValueError, match="unknown argument"):
        ex.forward(q=mx.nd.ones((2,)))


def test_unused_argument_gets_zero_gradient():
    x, z = mx.sym.var("x"), mx.sym.var("z")
    y = mx.sym.Group([mx.sym.exp(x), mx.sym.BlockGrad(z)])
    ex = y.simple_bind(mx.cpu(), x=(3,), z=(3,))
    ex.grad_dict["z"][:] = 5
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((3,)), mx.nd.ones((3,))])
    assert ex.grad_dict["z"].asnumpy().tolist() == [0, 0, 0]
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.ones(3))


def test_batchnorm_aux_states_update_only_in_training():
    data = mx.sym.var("data")
    bn = mx.sym.BatchNorm(data, name="bn", fix_gamma=False, momentum=0.5)
    ex = bn.simple_bind(mx.cpu(), data=(4, 3))
    ex.arg_dict["data"][:] = np.arange(12, dtype=np.float32).reshape(4, 3)
    ex.arg_dict["bn_gamma"][:] = 1
    ex.aux_dict["bn_moving_var"][:] = 1
    ex.forward(is_train=False)
    assert ex.aux_dict["bn_moving_mean"].asnumpy().tolist() == [0, 0, 0]
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), [2.25, 2.75, 3.25])


def test_dropout_follows_is_train():
    y = mx.sym.Dropout(mx.sym.var("x"), p=0.5)
    ex = y.simple_bind(mx.cpu(), x=(1000,), grad_req="null")
    ex.arg_dict["x"][:] = 1
    assert ex.forward(is_train=False)[0].asnumpy().min() == 1
    out = ex.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(out).tolist()) == {0.0, 2.0}


def test_memory_planning_shares_blocks_and_keeps_results():
    x = mx.sym.var("x")
    y = x
    for i in range(12):
        y = mx.sym.tanh(y * 1.01 + 0.1)
    ex = y.simple_bind(mx.cpu(), x=(64, 64), grad_req="null")
    planned, unplanned = ex.memory_bytes()
    assert planned <= unplanned // 5, (planned, unplanned)
    xv = np.random.RandomState(0).randn(64, 64).astype(np.float32)
    out = ex.forward(x=xv)[0].asnumpy()
    ref = xv
    for i in range(12):
        ref = np.tanh(ref * np.float32(1.01) + np.float32(0.1))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    # with a backward pass the forward results live until it reads them
    exg = y.simple_bind(mx.cpu(), x=(64, 64))
    exg.forward(is_train=True, x=xv)
    exg.backward(mx.nd.ones((64, 64)))
    xa = mx.nd.array(xv)
    xa.attach_grad()
    with mx.autograd.record():
        z = xa
        for i in range(12):
            z = mx.nd.tanh(z * 1.01 + 0.1)
    z.backward()
    np.testing.assert_allclose(exg.grad_dict["x"].asnumpy(), xa.grad.asnumpy(), rtol=1e-4, atol=1e-6)


def test_bind_errors_name_what_is_wrong():
    net = mlp()
    with pytest.raises(ValueError, match="fc1_weight"):
        net.bind(mx.cpu(), {"data": mx.nd.ones((2, 3))})
    args = {"data": mx.nd.ones((2, 3)), "fc1_weight": mx.nd.ones((16, 4)), "fc1_bias": mx.nd.ones((16,)),
            "fc2_weight": mx.nd.ones((4, 16)), "fc2_bias": mx.nd.ones((4,))}
    with pytest.raises(mx.MXNetError, match=r"fc1.*\(16, 4\)|fc1_weight"):
        net.bind(mx.cpu(), args)
    with pytest.raises(mx.MXNetError):
        net.simple_bind(mx.cpu())


def test_reshape_shares_parameters():
    y = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = 1
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))
    assert (small.forward()[0].asnumpy() == 4).all()
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert (exe.arg_arrays[0].asnumpy() == 1).all() and (big.arg_arrays[1].asnumpy() == 1).all()
    with pytest.raises(ValueError, match="allow_up_sizing"):
        exe.reshape(x=(8, 4))


def test_independent_branches_and_group_outputs():
    x = mx.sym.var("x")
    outs = mx.sym.Group([mx.sym.exp(x), mx.sym.sin(x) * 2, mx.sym.sum(x)])
    xv = np.linspace(-1, 1, 50).astype(np.float32)
    res = outs.eval(x=mx.nd.array(xv))
    np.testing.assert_allclose(res[0].asnumpy(), np.exp(xv), rtol=1e-6)
    np.testing.assert_allclose(res[1].asnumpy(), np.sin(xv) * 2, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(res[2].asnumpy(), [xv.sum()], rtol=1e-5, atol=1e-6)


def test_monitor_callback_sees_every_operator_output():
    net = mlp()
    ex = net.simple_bind(mx.cpu(), data=(2, 3), grad_req="null")
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    ex.forward()
    assert seen == [("fc1_output", (2, 16)), ("relu1_output", (2, 16)), ("fc2_output", (2, 4))]


def test_fluent_methods_and_creation():
    x = mx.sym.var("x")
    y = x.reshape((2, 3)).sum(axis=1).astype("float64")
    out = y.eval(x=mx.nd.arange(6))[0]
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [3.0, 12.0]
    z = mx.sym.zeros((2, 2)) + mx.sym.ones((2, 2)) * 3 + mx.sym.full((2, 2), 1.5)
    assert z.eval()[0].asnumpy().tolist() == [[4.5, 4.5], [4.5, 4.5]]
    assert mx.sym.maximum(x, 1).eval(x=mx.nd.array([0.0, 2.0]))[0].asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(mx.base.NotImplementedForSymbol):
        bool(x)


def test_cached_op_forward_and_autograd():
    net = mlp()
    op = mx.nd.CachedOp(net)
    rng = np.random.RandomState(3)
    ins = [mx.nd.array(rng.randn(*s)) for s in [(5, 7), (16, 7), (16,), (4, 16), (4,)]]
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        y = op(*ins)
        loss = (y * y).sum()
    loss.backward()
    got = [a.grad.asnumpy() for a in ins]
    ref = [a.copy() for a in ins]
    for a in ref:
        a.attach_grad()
    with mx.autograd.record():
        x, w1, b1, w2, b2 = ref
        y2 = mx.nd.FullyConnected(mx.nd.relu(mx.nd.FullyConnected(x, w1, b1, num_hidden=16)), w2, b2, num_hidden=4)
        loss2 = (y2 * y2).sum()
    loss2.backward()
    np.testing.assert_allclose(y.asnumpy(), y2.asnumpy(), rtol=1e-5)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r.grad.asnumpy(), rtol=1e-4, atol=1e-5)
    # a second signature plans again; calls outside record need no gradient
    y3 = op(mx.nd.ones((2, 7)), *ins[1:])
    assert y3.shape == (2, 4)
    with pytest.raises(mx.MXNetError, match="expected 5 inputs"):
        op(ins[0])


def _chain(F, x):
    y = x
    for i in range(10):
        y = [lambda t: t * 1.01, lambda t: t + 0.5, F.tanh, lambda t: F.exp(t * -0.1), lambda t: 0.2 - t][i % 5](y)
    return y


def test_pointwise_fusion_gives_the_same_bits(monkeypatch):
    y = _chain(mx.sym, mx.sym.var("x"))
    xv = np.random.RandomState(0).randn(100003).astype(np.float32)
    ex = y.simple_bind(mx.cpu(), x=xv.shape, grad_req="null")
    assert "Total 1 operator nodes" in ex.debug_str()
    fused = ex.forward(x=xv)[0].asnumpy()
    monkeypatch.setenv("MXNET_USE_FUSION", "0")
    ex0 = y.simple_bind(mx.cpu(), x=xv.shape, grad_req="null")
    assert "Total 12 operator nodes" in ex0.debug_str()
    plain = ex0.forward(x=xv)[0].asnumpy()
    imperative = _chain(mx.nd, mx.nd.array(xv)).asnumpy()
    assert np.array_equal(fused, plain) and np.array_equal(fused, imperative)


def test_fusion_keeps_values_read_elsewhere():
    # the intermediate `a` is an output and is read twice: it is not fused away
    x = mx.sym.var("x")
    a = mx.sym.exp(x * 2)
    b = mx.sym.sqrt(a + 1) * 3
    c = mx.sym.Group([b, a, mx.sym.sum(a)])
    xv = np.linspace(-1, 1, 7).astype(np.float32)
    outs = [o.asnumpy() for o in c.eval(x=mx.nd.array(xv))]
    ea = np.exp(xv * np.float32(2))
    np.testing.assert_allclose(outs[1], ea, rtol=1e-6)
    np.testing.assert_allclose(outs[0], np.sqrt(ea + 1) * 3, rtol=1e-6)
    np.testing.assert_allclose(outs[2], [ea.sum()], rtol=1e-5)
    # float64 and broadcasting operators are left to their own kernels
    d = mx.sym.var("d")
    e = mx.sym.broadcast_add(mx.sym.exp(d) * 2, mx.sym.var("r"))
    res = e.eval(d=mx.nd.ones((2, 3), dtype="float64"), r=mx.nd.ones((1, 3), dtype="float64"))[0]
    np.testing.assert_allclose(res.asnumpy(), np.full((2, 3), 2 * np.e + 1))


def test_autograd_get_symbol_replays_the_recording():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = mx.nd.ones((4, 3))
    x.attach_grad()
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=4)) * 2 + 1
    s = mx.autograd.get_symbol(y)
    assert s.list_arguments() == ["var0", "var1"]
    np.testing.assert_allclose(s.eval(var0=x, var1=w)[0].asnumpy(), y.asnumpy())
    with pytest.raises(mx.MXNetError, match="record"):
        mx.autograd.get_symbol(mx.nd.ones((2,)))


def test_partial_shapes_complete_each_other():
    # MXNet 1.x: a 0 dimension is unknown; the known parts meet in the graph
    a = mx.sym.var("a", shape=(0, 10))
    b = mx.sym.var("b", shape=(12, 0))
    assert (a + b).infer_shape()[0] == [(12, 10), (12, 10)]
    fc = mx.sym.FullyConnected(a, num_hidden=21, name="fc")
    d = fc + mx.sym.var("c", shape=(5, 0))
    assert d.infer_shape()[0] == [(5, 10), (21, 10), (21,), (5, 21)]
    x = mx.sym.var("x", shape=(0, 10, 0, 0))
    conv = mx.sym.Convolution(x, num_filter=21, kernel=(3, 3), pad=(1, 1))
    assert (conv + mx.sym.var("y", shape=(5, 21, 32, 32))).infer_shape()[0][0] == (5, 10, 32, 32)
    cat = mx.sym.Concat(mx.sym.var("p", shape=(0, 10)), mx.sym.var("q", shape=(0, 5)), dim=1)
    assert (mx.sym.var("r", shape=(2, 0)) + cat).infer_shape()[0] == [(2, 15), (2, 10), (2, 5)]
    sl = mx.sym.SliceChannel(mx.sym.var("s", shape=(0, 15, 0)), num_outputs=3)
    assert (sl[1] + mx.sym.var("t", shape=(3, 5, 2))).infer_shape()[0][0] == (3, 15, 2)
    u, v = mx.sym.var("u"), mx.sym.var("v")
    assert mx.sym.dot(u, v).infer_shape_partial(u=(0, 3, 4), v=(4, 5))[1] == [(0, 3, 5)]
    assert mx.sym.batch_dot(u, v).infer_shape_partial(u=(0, 3, 4), v=(0, 0, 5))[1] == [()]
    assert mx.sym.transpose(u, axes=(0, 3, 2, 1)).infer_shape_partial(u=(0, 3, 7, 9))[1] == [(0, 9, 7, 3)]
    # still partial: infer_shape says it does not know
    with pytest.warns(UserWarning):
        assert mx.sym.exp(mx.sym.var("w", shape=(0, 3))).infer_shape() == (None, None, None)
    with pytest.raises(mx.MXNetError):
        (mx.sym.var("e", shape=(0, 10)) + mx.sym.var("f", shape=(3, 11))).infer_shape()
    # a bound array with a 0 dimension is empty, not unknown
    ex = mx.sym.exp(mx.sym.var("z")).bind(mx.cpu(), {"z": mx.nd.zeros((0, 3))})
    assert ex.forward()[0].shape == (0, 3)


def test_two_inputs_of_one_name_are_refused_at_bind():
    s = mx.sym.var("x") + mx.sym.exp(mx.sym.var("x"))
    assert s.list_arguments() == ["x", "x"]
    with pytest.raises(mx.MXNetError, match="two different inputs named 'x'"):
        s.bind(mx.cpu(), [mx.nd.ones((2,)), mx.nd.ones((2,))])


def test_broadcasting_shapes_are_not_merged():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    assert mx.sym.broadcast_add(x, y).infer_shape(x=(2, 3), y=(1, 3))[1] == [(2, 3)]


def test_common_subexpressions_are_computed_once(monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    av, bv = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 5.0])

    def run(sym, cse):
        monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1" if cse else "0")
        given = {k: v for k, v in {"a": av, "b": bv}.items() if k in sym.list_arguments()}
        ex = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in given.items()})
        outs = ex.forward(is_train=True, **given)
        ex.backward([mx.nd.ones((2,)) for _ in outs])
        n = len(ex.get_optimized_symbol().get_internals())
        return [o.asnumpy() for o in outs], {k: g.asnumpy() for k, g in ex.grad_dict.items()}, n

    for sym, saved in [((a + b) + (a + b), 1), (((a + b) * 2) + ((a + b) * 2), 2),
                       (mx.sym.Group([a * b + 1, a * b + 1]), 1), ((a + 1) + (a + 2), 0)]:
        o0, g0, n0 = run(sym, False)
        o1, g1, n1 = run(sym, True)
        assert n0 - n1 == saved
        for x, y in zip(o0, o1):
            np.testing.assert_allclose(x, y)
        for k in g0:
            np.testing.assert_allclose(g0[k], g1[k])
    # random operators are never merged
    d = mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5)
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1")
    ex = d.simple_bind(mx.cpu(), a=(2,))
    assert len(ex.get_optimized_symbol().get_internals()) == len(d.get_internals())


def test_debug_str_reports_allocated_memory():
    import re

    x = mx.sym.var("data")
    y = x
    for _ in range(6):
        y = y * y
    big = y.simple_bind(mx.cpu(), data=(4, 3, 128, 128))
    small = y.simple_bind(mx.cpu(), data=(4, 3, 128, 128), grad_req="null")
    mb = lambda e: int(re.search(r"Total (\d+) MB allocated", e.debug_str()).group(1))
    assert mb(big) > mb(small) >= 0


def test_mxnet_conventions_found_by_its_suite():
    # get_children lists a multi-output node's inputs once
    sl = mx.sym.SliceChannel(mx.sym.var("data"), num_outputs=3)
    assert sl.get_children().list_outputs() == ["data"]
    # attributes are written sorted, and lr_mult as __lr_mult__ only (MXNet refuses a plain one)
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2, lr_mult=0, name="fc")
    js = json.loads(fc.tojson())
    node = [n for n in js["nodes"] if n["name"] == "fc"][0]
    assert list(node["attrs"]) == sorted(node["attrs"]) and "lr_mult" not in node["attrs"]
    assert node["attrs"]["__lr_mult__"] == "0"
    assert pickle.loads(pickle.dumps(fc)).tojson() == fc.tojson()
    # simple_bind ignores keyword arguments that are not shapes
    y = mx.sym.var("a") * 2
    ex = y.simple_bind(mx.cpu(), a=(2,), force_rebind=True, type_dict={"a": "float64"})
    ex.forward(is_train=True, a=np.array([1.0, 2.0]))
    # out_grads of another dtype are cast; extra ones are ignored
    ex.backward([mx.nd.ones((2,)), mx.nd.ones((3,))])
    assert ex.grad_dict["a"].asnumpy().tolist() == [2.0, 2.0]
    # add_n into its own first input
    a = mx.nd.ones((2, 2))
    mx.nd.add_n(a, mx.nd.ones((2, 2)), out=a)
    assert a.asnumpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_current_scopes_are_thread_local_class_properties():
    seen = {}

    def worker():
        mx.AttrScope.current = mx.AttrScope(x="thread")
        mx.name.NameManager.current = mx.name.NameManager()
        mx.Context.default_ctx = mx.cpu(3)
        seen["attr"] = mx.sym.var("v").attr("x")
        seen["ctx"] = mx.context.current_context()

    old = mx.AttrScope.current
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"attr": "thread", "ctx": mx.cpu(3)}
    assert mx.AttrScope.current is old and mx.Context.default_ctx == mx.cpu(0)
