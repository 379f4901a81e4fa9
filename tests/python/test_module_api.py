"""mx.mod: Module (one and two contexts), checkpoints, predict, reshape,
fixed parameters, input gradients, BucketingModule and SequentialModule.
Parameter values after three updates are MXNet 1.9.1's."""
import logging

import numpy as np
import pytest

import oxnet as mx


def _mlp(hidden=3, classes=2, act="tanh"):
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1")
    a = mx.sym.Activation(fc1, act_type=act)
    fc2 = mx.sym.FullyConnected(a, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _setup():
    rng = np.random.RandomState(42)
    args = {"fc1_weight": rng.uniform(-1, 1, (3, 4)), "fc1_bias": rng.uniform(-1, 1, (3,)),
            "fc2_weight": rng.uniform(-1, 1, (2, 3)), "fc2_bias": rng.uniform(-1, 1, (2,))}
    x = rng.uniform(-1, 1, (6, 4)).astype("float32")
    y = np.array([0, 1, 1, 0, 1, 0], "float32")
    return {k: mx.nd.array(v) for k, v in args.items()}, mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


# MXNet 1.9.1: the same network, parameters and batch; SGD(lr=0.5, momentum=0.9, wd=0.01), three updates
WANT = {
    "fc1_bias": [0.598305, -0.558777, -0.651547],
    "fc1_weight": [-0.444806, 0.859526, 0.462906, 0.198435, -0.695191, -0.681351, -0.846412, 0.711075, 0.15299,
                   0.417229, -0.915531, 0.918487],
    "fc2_bias": [-0.559249, -0.577474],
    "fc2_weight": [-0.602578, -0.716493, 0.0003, -0.145236, -0.069967, 0.265288],
}
WANT_OUT = [0.625371, 0.374629, 0.402811, 0.597189, 0.42488, 0.57512, 0.481211, 0.518789, 0.670079, 0.329921,
            0.703235, 0.296765]


@pytest.mark.parametrize("contexts", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]], ids=["one", "two"])
def test_three_updates_match_mxnet(contexts):
    args, batch = _setup()
    mod = mx.mod.Module(_mlp(), context=contexts)
    mod.bind(data_shapes=[("data", (6, 4))], label_shapes=[("softmax_label", (6,))])
    mod.init_params(arg_params=args)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01})
    for _ in range(3):
        mod.forward_backward(batch)
        mod.update()
    got, _ = mod.get_params()
    for k, v in WANT.items():
        np.testing.assert_allclose(got[k].asnumpy().ravel(), v, rtol=1e-5, atol=2e-6, err_msg=k)
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy().ravel(), WANT_OUT, rtol=1e-5, atol=2e-6)
    assert mod.output_shapes == [("softmax_output", (6, 2))]


def _blobs(n=400, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 5).astype("float32")
    w = np.array([[2.0, -1.0, 0.0], [0.0, 2.0, -1.0], [1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.5, -0.5, 0.0]])
    y = (x @ w).argmax(axis=1).astype("float32")  # linearly separable classes
    return x, y


def test_fit_score_predict_checkpoint(tmp_path, caplog):
    x, y = _blobs()
    train = mx.io.NDArrayIter(x, y, batch_size=32, shuffle=True)
    val = mx.io.NDArrayIter(x[:90], y[:90], batch_size=32)  # last batch padded
    mod = mx.mod.Module(_mlp(hidden=32, classes=3, act="relu"))
    mx.random.seed(1)
    prefix = str(tmp_path / "mlp")
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, num_epoch=6, optimizer_params={"learning_rate": 0.5, "momentum": 0.9},
                initializer=mx.init.Xavier(), epoch_end_callback=mx.callback.do_checkpoint(prefix, period=3),
                batch_end_callback=mx.callback.Speedometer(32, 5))
    assert any(m.startswith("Epoch[5] Train-accuracy=") for m in caplog.messages)
    assert any(m.startswith("Epoch[5] Validation-accuracy=") for m in caplog.messages)
    assert any(m.startswith("Epoch[0] Time cost=") for m in caplog.messages)
    acc = dict(mod.score(val, "acc"))["accuracy"]
    assert acc > 0.9
    pred = mod.predict(val)
    assert pred.shape == (90, 3)  # padding removed
    outs = list(mod.iter_predict(val))
    assert [o[0][0].shape[0] for o in outs] == [32, 32, 26]
    # checkpoint: symbol + params, reloaded module predicts the same
    mod.save_checkpoint(prefix, 6, save_optimizer_states=True)
    loaded = mx.mod.Module.load(prefix, 6, load_optimizer_states=True)
    loaded.bind(data_shapes=val.provide_data, label_shapes=val.provide_label, for_training=True)
    loaded.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    np.testing.assert_allclose(loaded.predict(val).asnumpy(), pred.asnumpy(), rtol=1e-6)
    sym, arg, aux = mx.model.load_checkpoint(prefix, 3)
    assert sym.list_outputs() == ["softmax_output"] and set(arg) == set(mod.get_params()[0])


def test_reshape_fixed_params_and_input_grads():
    args, batch = _setup()
    mod = mx.mod.Module(_mlp(), fixed_param_names=["fc1_weight", "fc1_bias"])
    mod.bind(data_shapes=[("data", (6, 4))], label_shapes=[("softmax_label", (6,))], inputs_need_grad=True)
    mod.init_params(arg_params=args)
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(batch)
    mod.update()
    assert mod.get_input_grads()[0].shape == (6, 4)
    got, _ = mod.get_params()
    np.testing.assert_array_equal(got["fc1_weight"].asnumpy(), args["fc1_weight"].asnumpy())
    assert not np.allclose(got["fc2_weight"].asnumpy(), args["fc2_weight"].asnumpy())
    # another batch size re-binds with the same parameters
    small = mx.io.DataBatch([batch.data[0][:2]], [batch.label[0][:2]])
    mod.forward(small, is_train=False)
    assert mod.get_outputs()[0].shape == (2, 2)
    assert mod.data_shapes[0].shape == (2, 4)


def test_bad_use_is_clear():
    with pytest.raises(ValueError, match="input with name 'img' is not found"):
        mx.mod.Module(_mlp(), data_names=["img"])
    mod = mx.mod.Module(_mlp())
    with pytest.raises(ValueError, match="don't match names"):
        mod.bind(data_shapes=[("x", (2, 4))])
    with pytest.raises(RuntimeError, match="call bind first"):
        mod.init_optimizer()
    mod.bind(data_shapes=[("data", (6, 4))], label_shapes=[("softmax_label", (6,))])
    with pytest.raises(RuntimeError, match="is not presented"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.zeros((3, 4))})
    with pytest.raises(ValueError, match="fit: please specify number of epochs"):
        mod.fit(mx.io.NDArrayIter(np.zeros((6, 4)), np.zeros(6), batch_size=6))


def test_bucketing_module_shares_parameters():
    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        flat = mx.sym.reshape(data, shape=(-1, 2))
        fc = mx.sym.FullyConnected(flat, num_hidden=2, name="fc")
        out = mx.sym.reshape(fc, shape=(-1, seq_len * 2))
        pooled = mx.sym.sum(out, axis=1, keepdims=True)
        lab = mx.sym.Variable("label")
        return mx.sym.LinearRegressionOutput(pooled, label=lab, name="out"), ("data",), ("label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
    mod.bind(data_shapes=[("data", (4, 3, 2))], label_shapes=[("label", (4, 1))])
    mod.init_params(initializer=mx.init.One())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
    for key in (3, 5, 3):
        batch = mx.io.DataBatch([mx.nd.ones((4, key, 2))], [mx.nd.ones((4, 1))], bucket_key=key,
                                provide_data=[mx.io.DataDesc("data", (4, key, 2))],
                                provide_label=[mx.io.DataDesc("label", (4, 1))])
        mod.forward_backward(batch)
        mod.update()
    assert sorted(mod._buckets) == [3, 5]
    w5 = mod._buckets[5]._exec_group.param_arrays[0][0]
    w3 = mod._buckets[3]._exec_group.param_arrays[0][0]
    np.testing.assert_array_equal(w5.asnumpy(), w3.asnumpy())
    assert not np.allclose(w3.asnumpy(), 1.0)


def test_sequential_module_trains():
    x, y = _blobs(200, seed=3)
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    d = mx.sym.Variable("data")
    first = mx.mod.Module(mx.sym.Activation(mx.sym.FullyConnected(d, num_hidden=16, name="a"), act_type="relu"),
                          label_names=None)
    d2 = mx.sym.Variable("data")
    second = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(d2, num_hidden=3, name="b"), name="softmax"))
    seq = mx.mod.SequentialModule().add(first).add(second, take_labels=True, auto_wiring=True)
    mx.random.seed(0)
    seq.fit(it, num_epoch=8, optimizer_params={"learning_rate": 0.5}, initializer=mx.init.Xavier())
    assert dict(seq.score(it, "acc"))["accuracy"] > 0.85
    arg, _ = seq.get_params()
    assert sorted(arg) == ["a_bias", "a_weight", "b_bias", "b_weight"]


def test_operator_created_inputs_get_mxnets_initializers():
    # as MXNet 1.9.1's test_init: PReLU's slope starts at 0.25, BatchNorm's moving mean/var at 0/1
    data = mx.sym.Variable("data")
    mod = mx.mod.Module(mx.sym.LeakyReLU(data=data, act_type="prelu"), label_names=None)
    mod.bind(data_shapes=[("data", (10, 10))])
    mod.init_params()
    assert (list(mod.get_params()[0].values())[0].asnumpy() == 0.25).all()
    mod = mx.mod.Module(mx.sym.BatchNorm(data=data, name="bn"), label_names=None)
    mod.bind(data_shapes=[("data", (10, 10, 3, 3))])
    mod.init_params()
    assert (mod.get_params()[1]["bn_moving_var"].asnumpy() == 1).all()
    assert (mod.get_params()[1]["bn_moving_mean"].asnumpy() == 0).all()
    gamma = mx.sym.Variable("gamma", init=mx.init.One())  # a variable's own init wins
    mod = mx.mod.Module(mx.sym.LeakyReLU(data=data, gamma=gamma, act_type="prelu"), label_names=None)
    mod.bind(data_shapes=[("data", (10, 10))])
    mod.init_params()
    assert (list(mod.get_params()[0].values())[0].asnumpy() == 1).all()
