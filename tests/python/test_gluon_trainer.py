"""gluon.Trainer against MXNet 1.9.1: weights after a few steps with several
optimizers, one or two contexts, update on the kvstore or locally,
allreduce_grads + update, learning-rate changes and saved/loaded states.

tests/data/gluon_trainer_golden.npz holds MXNet 1.9.1's results; regenerate
with ``python tests/python/test_gluon_trainer.py mxnet tests/data/gluon_trainer_golden.npz``.
"""
import os
import sys
import tempfile

import numpy as np

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "gluon_trainer_golden.npz")

CASES = [
    ("sgd", "sgd", {"learning_rate": 0.1}, 1, None),
    ("sgd_mom_wd", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, 1, None),
    ("adam", "adam", {"learning_rate": 0.01}, 1, None),
    ("sgd_2ctx_kv", "sgd", {"learning_rate": 0.1, "momentum": 0.5}, 2, True),
    ("sgd_2ctx_local", "sgd", {"learning_rate": 0.1, "momentum": 0.5}, 2, False),
    ("adam_2ctx", "adam", {"learning_rate": 0.01, "clip_gradient": 0.5}, 2, None),
    ("rmsprop_lrmult", "rmsprop", {"learning_rate": 0.01}, 1, None),
]


def _net(mx, rng):
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(4, in_units=3, activation="tanh"), mx.gluon.nn.Dense(2, in_units=4))
    return net


def run_cases(mx):
    out = {}
    for name, optname, oparams, nctx, on_kv in CASES:
        rng = np.random.RandomState(sum(map(ord, name)))
        ctxs = [mx.cpu(i) for i in range(nctx)]
        net = _net(mx, rng)
        net.initialize(ctx=ctxs)
        for k in sorted(net.collect_params().keys()):
            p = net.collect_params()[k]
            p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, size=p.shape).astype("float32")))
        if name == "rmsprop_lrmult":
            net[0].weight.lr_mult = 0.5
            net[1].bias.wd_mult = 0.0
        kw = {} if on_kv is None else {"update_on_kvstore": on_kv}
        trainer = mx.gluon.Trainer(net.collect_params(), optname, dict(oparams), **kw)
        loss_fn = mx.gluon.loss.L2Loss()
        for step in range(4):
            x = mx.nd.array(rng.randn(6, 3).astype("float32"))
            y = mx.nd.array(rng.randn(6, 2).astype("float32"))
            xs = mx.gluon.utils.split_and_load(x, ctxs)
            ys = mx.gluon.utils.split_and_load(y, ctxs)
            with mx.autograd.record():
                losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
            for l in losses:
                l.backward()
            if step == 2:
                trainer.set_learning_rate(trainer.learning_rate * 0.5)
            if name == "sgd_2ctx_local" and step == 3:
                trainer.allreduce_grads()
                trainer.update(6)
            else:
                trainer.step(6)
        for k in sorted(net.collect_params().keys()):
            for i, c in enumerate(ctxs):
                out["%s/%s/%d" % (name, k, i)] = net.collect_params()[k].data(c).asnumpy()
        out[name + "/lr"] = np.array(trainer.learning_rate)
        if nctx == 1:
            # states round trip: a fresh trainer continues identically
            f = os.path.join(tempfile.mkdtemp(), "t.states")
            trainer.save_states(f)
            trainer2 = mx.gluon.Trainer(net.collect_params(), optname, dict(oparams), **kw)
            trainer2.load_states(f)
            x = mx.nd.array(rng.randn(6, 3).astype("float32"))
            with mx.autograd.record():
                l = loss_fn(net(x), mx.nd.zeros((6, 2)))
            l.backward()
            trainer2.step(6)
            out[name + "/after_load"] = net[0].weight.data().asnumpy()
    return out


def test_trainer_matches_mxnet():
    import oxnet as mx

    golden = np.load(GOLDEN)
    ours = run_cases(mx)
    assert sorted(golden.files) == sorted(ours)
    for k in golden.files:
        np.testing.assert_allclose(ours[k], golden[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_trainer_errors_and_properties():
    import pytest

    import oxnet as mx

    net = mx.gluon.nn.Dense(2, in_units=2)
    net.initialize()
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        mx.gluon.Trainer(3, "sgd")
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        mx.gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 1.0})
    tr = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.25})
    assert tr.learning_rate == 0.25 and isinstance(tr.optimizer, mx.optimizer.SGD)
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        tr.step(1)
    tr.step(1, ignore_stale_grad=True)
    other = mx.gluon.nn.Dense(2, in_units=2)
    other.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(AssertionError, match="same set of contexts"):
        mx.gluon.Trainer(list(net.collect_params().values()) + list(other.collect_params().values()), "sgd")
    # the trainer sees a new value set on a parameter with update_on_kvstore
    two = mx.gluon.nn.Dense(1, in_units=1, use_bias=False)
    two.initialize(mx.init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    tr2 = mx.gluon.Trainer(two.collect_params(), "sgd", {"learning_rate": 1.0}, update_on_kvstore=True)
    for _ in range(2):
        with mx.autograd.record():
            ls = [two(mx.nd.ones((1, 1), ctx=c)) for c in (mx.cpu(0), mx.cpu(1))]
        for l in ls:
            l.backward()
        tr2.step(2)
    np.testing.assert_allclose(two.weight.data(mx.cpu(1)).asnumpy(), [[-1.0]])
    two.weight.set_data(mx.nd.ones((1, 1)) * 5)
    with mx.autograd.record():
        ls = [two(mx.nd.ones((1, 1), ctx=c)) for c in (mx.cpu(0), mx.cpu(1))]
    for l in ls:
        l.backward()
    tr2.step(2)
    np.testing.assert_allclose(two.weight.data(mx.cpu(0)).asnumpy(), [[4.0]])


if __name__ == "__main__":
    np.savez(sys.argv[2], **run_cases(__import__(sys.argv[1])))
