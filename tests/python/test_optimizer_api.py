"""mx.optimizer: every optimizer step by step against MXNet 1.9.1.

tests/data/golden/optimizer.json holds the weights after each of three
updates, computed by the real MXNet 1.9.1 (tests/data/make_optimizer_golden.py);
the inputs are rebuilt here from the same NumPy seeds.
"""
import json
import os
import pickle
import warnings

import numpy as np
import pytest

import oxnet as mx

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden", "optimizer.json")
with open(GOLDEN) as _f:
    CASES = json.load(_f)["cases"]
STEPS = 3


def _inputs(case_id, nweights, dtype):
    rng = np.random.RandomState(1000 + case_id)
    weights = [rng.uniform(-1, 1, (2, 3)).astype(dtype) for _ in range(nweights)]
    grads = [[rng.uniform(-1, 1, (2, 3)).astype(dtype) for _ in range(nweights)] for _ in range(STEPS)]
    return weights, grads


def _make(name, kw):
    kw = dict(kw)
    dtype = kw.pop("dtype", "float32")
    nweights = kw.pop("nweights", 1)
    names = kw.pop("names", None)
    lr_mult = kw.pop("lr_mult", None)
    wd_mult = kw.pop("wd_mult", None)
    if "lr_scheduler" in kw:
        kind, skw = kw["lr_scheduler"]
        cls = mx.lr_scheduler.FactorScheduler if kind == "factor" else mx.lr_scheduler.MultiFactorScheduler
        kw["lr_scheduler"] = cls(**skw)
    if names:
        kw["param_idx2name"] = dict(enumerate(names))
    opt = mx.optimizer.create(name, **kw)
    if lr_mult:
        opt.set_lr_mult(lr_mult)
    if wd_mult:
        opt.set_wd_mult(wd_mult)
    return opt, dtype, nweights


def _case_id(case):
    return "%d-%s-%s" % (case["id"], case["name"], ",".join("%s=%s" % kv for kv in sorted(case["kwargs"].items())))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_mxnet_step_by_step(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt, dtype, nweights = _make(case["name"], case["kwargs"])
        upd = mx.optimizer.get_updater(opt)
        w0, grads = _inputs(case["id"], nweights, dtype)
        ws = [mx.nd.array(w, dtype=dtype) for w in w0]
        tol = 2e-3 if dtype == "float16" else 1e-5
        for step in range(STEPS):
            gs = [mx.nd.array(g, dtype=dtype) for g in grads[step]]
            if nweights == 1:
                upd(0, gs[0], ws[0])
            else:
                upd(list(range(nweights)), gs, ws)
            for w, want in zip(ws, case["steps"][step]):
                assert w.dtype == np.dtype(dtype)
                np.testing.assert_allclose(w.asnumpy().astype(np.float64), np.array(want), rtol=tol, atol=tol,
                                           err_msg="step %d" % step)


def test_every_issue_optimizer_is_registered_with_mxnet_defaults():
    names = ["sgd", "nag", "signum", "ftml", "lars", "lamb", "dcasgd", "sgld", "adam", "adagrad", "rmsprop",
             "adadelta", "ftrl", "adamax", "nadam", "test", "lbsgd", "ccsgd", "groupadagrad"]
    for n in names:
        assert n in mx.optimizer.Optimizer.opt_registry
    assert mx.optimizer.create("sgd").learning_rate == 0.01
    assert mx.optimizer.create("adam").learning_rate == 0.001
    assert mx.optimizer.create("adamax").learning_rate == 0.002
    assert mx.optimizer.create("ftrl").learning_rate == 0.1
    assert mx.optimizer.create("rmsprop").gamma1 == 0.9
    assert mx.optimizer.create("SGD").aggregate_num == 4
    assert mx.optimizer.create("lamb").aggregate_num == 45
    assert mx.optimizer.create("adam").aggregate_num == 0
    assert isinstance(mx.optimizer.Optimizer.create_optimizer("Adam"), mx.optimizer.Adam)


def test_unknown_name_raises():
    with pytest.raises(ValueError, match="Cannot find optimizer nosuch"):
        mx.optimizer.create("nosuch")


def test_register_custom_and_warn_on_override():
    @mx.optimizer.Optimizer.register
    class MyOpt(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] -= self._get_lr(index) * grad

    opt = mx.optimizer.create("myopt", learning_rate=0.5)
    w = mx.nd.ones((2,))
    mx.optimizer.get_updater(opt)(0, mx.nd.ones((2,)), w)
    np.testing.assert_allclose(w.asnumpy(), [0.5, 0.5])
    with pytest.warns(UserWarning, match="overriding"):
        mx.optimizer.register(MyOpt)
    del mx.optimizer.Optimizer.opt_registry["myopt"]


class _FakeSym(object):
    """What Optimizer reads from a Symbol: attr_dict() and list_arguments()."""

    def attr_dict(self):
        return {"fc_weight": {"__lr_mult__": "0.5", "__wd_mult__": "3"}, "fc_bias": {"__lr_mult__": "2"}}

    def list_arguments(self):
        return ["data", "fc_weight", "fc_bias"]


def test_lr_wd_mult_from_names_sym_and_dicts():
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, sym=_FakeSym(),
                           param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta"})
    assert opt.lr_mult == {"fc_weight": 0.5, "fc_bias": 2.0}
    assert opt._get_lr(0) == pytest.approx(0.05)
    assert opt._get_lr(1) == pytest.approx(0.2)
    assert opt._get_lr(2) == pytest.approx(0.1)
    # bias and beta: no weight decay by name; gamma keeps it; sym's __wd_mult__
    assert opt._get_wd(0) == pytest.approx(0.03)
    assert opt._get_wd(1) == 0.0
    assert opt._get_wd(2) == pytest.approx(0.01)
    assert opt._get_wd(3) == 0.0
    opt.set_lr_mult({"bn_gamma": 3.0, 7: 4.0})
    assert opt._get_lr(2) == pytest.approx(0.3)
    assert opt._get_lr(7) == pytest.approx(0.4)
    assert opt._get_lr(0) == pytest.approx(0.05)  # sym attributes re-applied
    opt.set_wd_mult({"fc_bias": 1.0})
    assert opt._get_wd(1) == pytest.approx(0.01)


def test_set_learning_rate_and_scheduler():
    opt = mx.optimizer.SGD(learning_rate=0.5)
    opt.set_learning_rate(0.25)
    assert opt.learning_rate == 0.25
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert opt.learning_rate == 1.0
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.1)
    opt = mx.optimizer.SGD(lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1, base_lr=1.0), learning_rate=0.3)
    assert opt.lr_scheduler.base_lr == 0.3


def test_float16_multi_precision_state_layout():
    w = mx.nd.ones((3,), dtype="float16")
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    mom, master = opt.create_state_multi_precision(0, w)
    assert mom.dtype == np.float32 and master.dtype == np.float32
    adam = mx.optimizer.Adam(multi_precision=True)
    master, (mean, var) = adam.create_state_multi_precision(0, w)
    assert master.dtype == np.float32 and mean.dtype == np.float32
    with pytest.warns(UserWarning, match="multi_precision"):
        mx.optimizer.Adam().create_state_multi_precision(0, w)


def test_update_counts_per_index_and_begin_num_update():
    opt = mx.optimizer.Adam(begin_num_update=5)
    upd = mx.optimizer.get_updater(opt)
    w1, w2 = mx.nd.ones((2,)), mx.nd.ones((2,))
    upd(0, mx.nd.ones((2,)), w1)
    upd(0, mx.nd.ones((2,)), w1)
    upd(1, mx.nd.ones((2,)), w2)
    assert opt._index_update_count == {0: 7, 1: 6}
    assert opt.num_update == 7


def test_updater_states_round_trip():
    opt = mx.optimizer.SGD(momentum=0.9, learning_rate=0.1)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0])
    upd("w", mx.nd.array([1.0, 1.0]), w)
    blob = upd.get_states()
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, learning_rate=0.1))
    upd2.set_states(blob)
    np.testing.assert_allclose(upd2.states["w"].asnumpy(), upd.states["w"].asnumpy())
    w2 = w.copy()
    upd("w", mx.nd.array([0.5, 0.5]), w)
    upd2("w", mx.nd.array([0.5, 0.5]), w2)
    np.testing.assert_allclose(w.asnumpy(), w2.asnumpy())
    # with the optimizer: learning rate and counts travel too
    blob = upd.get_states(dump_optimizer=True)
    upd3 = mx.optimizer.get_updater(mx.optimizer.Test())
    upd3.set_states(blob)
    assert isinstance(upd3.optimizer, mx.optimizer.SGD) and upd3.optimizer.lr == 0.1
    assert upd3.optimizer.num_update == 2
    states, opt_back = pickle.loads(blob)
    assert set(states) == {"w"}


# An Updater state file written by MXNet 1.9.1:
#   opt = mx.optimizer.SGD(momentum=0.9, learning_rate=0.1); u = mx.optimizer.get_updater(opt)
#   w = mx.nd.array([1., 2., 3.]); u(3, mx.nd.array([.5, -1., 2.]), w); u.get_states(True).hex()
MXNET_STATES = os.path.join(os.path.dirname(__file__), "..", "data", "golden", "mxnet_sgd_states.bin")


def test_set_states_reads_mxnet_file():
    upd = mx.optimizer.get_updater(mx.optimizer.Test())
    with open(MXNET_STATES, "rb") as f:
        upd.set_states(f.read())
    assert isinstance(upd.optimizer, mx.optimizer.SGD)
    assert upd.optimizer.momentum == 0.9 and upd.optimizer.lr == 0.1
    # momentum after one step: -lr * grad
    np.testing.assert_allclose(upd.states[3].asnumpy(), [-0.05, 0.1, -0.2], rtol=1e-6)
    w = mx.nd.array([0.95, 2.1, 2.8])
    upd(3, mx.nd.array([0.5, -1.0, 2.0]), w)
    # second step: mom = 0.9 * mom - lr * g; w += mom (values from MXNet 1.9.1)
    np.testing.assert_allclose(w.asnumpy(), [0.855, 2.29, 2.42], rtol=1e-5)


def test_sgld_noise_statistics():
    mx.random.seed(3)
    opt = mx.optimizer.SGLD(learning_rate=0.04)
    w = mx.nd.zeros((20000,))
    mx.optimizer.get_updater(opt)(0, mx.nd.zeros((20000,)), w)
    a = w.asnumpy()
    assert abs(a.mean()) < 0.01
    assert abs(a.std() - 0.2) < 0.01


def test_dcasgd_with_momentum_matches_formula():
    # MXNet 1.9.1's DCASGD with momentum fails on `if mom:`; oxnet runs the documented rule.
    opt = mx.optimizer.DCASGD(momentum=0.5, lamda=0.1, learning_rate=0.1, wd=0.01)
    upd = mx.optimizer.get_updater(opt)
    w = np.array([1.0, -2.0], dtype=np.float32)
    prev, mom = w.copy(), np.zeros(2, np.float32)
    wx = mx.nd.array(w)
    for g in ([0.5, 1.0], [-1.0, 0.25]):
        g = np.array(g, np.float32)
        upd(0, mx.nd.array(g), wx)
        mom = 0.5 * mom - 0.1 * (g + 0.01 * w + 0.1 * g * g * (w - prev))
        prev = w.copy()
        w = w + mom
        np.testing.assert_allclose(wx.asnumpy(), w, rtol=1e-6)


def test_bad_arguments():
    with pytest.raises(TypeError, match="param_idx2name"):
        mx.optimizer.SGD(param_idx2name=[1, 2])
    with pytest.raises(TypeError, match="SGD.update"):
        mx.optimizer.SGD().update(0, np.ones(2), mx.nd.ones((2,)), None)
