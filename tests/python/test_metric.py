"""mx.metric: every metric's local and global values against MXNet 1.9.1.

tests/data/golden/metric.json was written by tests/data/make_metric_golden.py
with the real MXNet 1.9.1; the inputs are rebuilt here from the same seeds.
"""
import json
import math
import os
import pickle

import numpy as np
import pytest

import oxnet as mx

with open(os.path.join(os.path.dirname(__file__), "..", "data", "golden", "metric.json")) as _f:
    CASES = json.load(_f)["cases"]


def _inputs(case_id, kind, step):
    rng = np.random.RandomState(100 * case_id + step)
    n = 12
    if kind in ("cls", "cls_t"):
        p = rng.uniform(0.05, 1, (n, 5))
        p /= p.sum(axis=1, keepdims=True)
        label = rng.randint(0, 5, (n,)).astype("float32")
        if kind == "cls_t":
            return [label.reshape(1, n)], [p.T.reshape(5, n)]
        return [label], [p.astype("float32")]
    if kind == "labels":
        return [rng.randint(0, 3, (n,)).astype("float32")], [rng.randint(0, 3, (n,)).astype("float32")]
    if kind == "bin":
        p = rng.uniform(0, 1, (n, 2)).astype("float32")
        return [rng.randint(0, 2, (n,)).astype("float32")], [p]
    if kind == "reg":
        label = rng.normal(size=(n, 3)).astype("float32")
        return [label], [(label + rng.normal(scale=0.5, size=(n, 3))).astype("float32")]
    label = rng.normal(size=(n,)).astype("float32")
    return [label], [(label + rng.normal(scale=0.5, size=(n,))).astype("float32")]


def _close(got, want):
    if want is None:
        return math.isnan(got)
    return got == pytest.approx(want, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "%d-%s-%s" % (c["id"], c["metric"], c["kwargs"]))
def test_matches_mxnet(case):
    m = mx.metric.create(case["metric"], **case["kwargs"])
    want = case["values"]
    for step in range(3):
        labels, preds = _inputs(case["id"], case["kind"], step)
        m.update([mx.nd.array(x) for x in labels], [mx.nd.array(x) for x in preds])
        assert _close(m.get()[1], want["local%d" % step]), ("local", step, m.get(), want)
        assert _close(m.get_global()[1], want["global%d" % step]), ("global", step, m.get_global(), want)
        if step == 0:
            m.reset_local()
    assert m.get()[0] == want["name"]


def test_nan_before_update_and_reset():
    m = mx.metric.Accuracy()
    assert math.isnan(m.get()[1]) and math.isnan(m.get_global()[1])
    m.update([mx.nd.array([0, 1])], [mx.nd.array([[0.9, 0.1], [0.2, 0.8]])])
    assert m.get() == ("accuracy", 1.0)
    m.reset()
    assert math.isnan(m.get_global()[1])


def test_create_forms_and_composite():
    assert isinstance(mx.metric.create("acc"), mx.metric.Accuracy)
    assert isinstance(mx.metric.create("Accuracy"), mx.metric.Accuracy)
    assert mx.metric.create("top_k_accuracy", top_k=5).name == "top_k_accuracy_5"
    comp = mx.metric.create(["acc", "ce", mx.metric.MSE()])
    assert isinstance(comp, mx.metric.CompositeEvalMetric)
    labels, preds = [mx.nd.array([0, 1, 1])], [mx.nd.array([[0.7, 0.3], [0.4, 0.6], [0.8, 0.2]])]
    comp.update(labels, preds)
    names, values = comp.get()
    assert names == ["accuracy", "cross-entropy", "mse"]
    assert values[0] == pytest.approx(2 / 3)
    assert values[1] == pytest.approx(-(np.log(0.7) + np.log(0.6) + np.log(0.2)) / 3)
    assert comp.get_name_value()[0] == ("accuracy", pytest.approx(2 / 3))
    assert isinstance(comp.get_metric(1), mx.metric.CrossEntropy)
    with pytest.raises(ValueError, match="out of range"):
        comp.get_metric(5)
    comp.reset_local()
    assert math.isnan(comp.get()[1][0]) and comp.get_global()[1][0] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="nosuch is not registered"):
        mx.metric.create("nosuch")
    assert mx.metric.create(comp) is comp


def test_custom_metric_and_np():
    def mae(label, pred):
        return np.abs(label - pred).mean()

    m = mx.metric.create(mae)
    assert isinstance(m, mx.metric.CustomMetric) and m.name == "mae"
    m.update([mx.nd.array([1.0, 2.0])], [mx.nd.array([1.5, 2.5])])
    assert m.get()[1] == pytest.approx(0.5)
    t = mx.metric.np(lambda label, pred: (float(np.sum(label == pred)), label.size))
    assert t.name == "custom(<lambda>)"
    t.update([mx.nd.array([1, 2, 3])], [mx.nd.array([1, 0, 3])])
    assert t.get()[1] == pytest.approx(2 / 3)
    with pytest.raises(NotImplementedError):
        m.get_config()


def test_update_dict_and_config():
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": mx.nd.array([1, 0]), "other": mx.nd.array([5])},
                  {"out": mx.nd.array([[0, 1], [0, 1]]), "junk": mx.nd.array([1])})
    assert m.get()[1] == 0.5
    cfg = m.get_config()
    assert cfg["metric"] == "Accuracy" and cfg["axis"] == 1 and cfg["output_names"] == ["out"]
    again = mx.metric.create(**cfg)
    assert isinstance(again, mx.metric.Accuracy)
    assert str(mx.metric.MSE()).startswith("EvalMetric: {'mse'")


def test_bad_input_is_clear():
    with pytest.raises(ValueError, match="does not match shape of predictions"):
        mx.metric.Accuracy().update([mx.nd.array([1]), mx.nd.array([1])], [mx.nd.array([[0, 1]])])
    with pytest.raises(ValueError, match="only supports binary"):
        mx.metric.F1().update([mx.nd.array([0, 1, 2])], [mx.nd.ones((3, 2))])
    with pytest.raises(ValueError, match="top_k"):
        mx.metric.TopKAccuracy(top_k=1)
    with pytest.raises(ValueError, match="shape mismatch"):
        mx.metric.Perplexity(None).update([mx.nd.array([1, 2, 3])], [mx.nd.ones((2, 4))])


def test_metrics_pickle():
    m = mx.metric.Accuracy()
    m.update([mx.nd.array([1, 0])], [mx.nd.array([[0, 1], [0, 1]])])
    back = pickle.loads(pickle.dumps(m))
    assert back.get() == m.get()
