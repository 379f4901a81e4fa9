"""Writes tests/data/golden/metric.json: values of mx.metric metrics computed
by the real MXNet 1.9.1 (local after reset_local, and global). Run:

    /path/to/mxnet-python tests/data/make_metric_golden.py

tests/python/test_metric.py rebuilds the inputs from the same NumPy seeds.
"""
import json
import math
import os

import numpy as np

import mxnet as mx

# (metric name, kwargs, input kind)
CASES = [
    ("acc", {}, "cls"), ("acc", {"axis": 0}, "cls_t"), ("acc", {}, "labels"),
    ("top_k_acc", {"top_k": 3}, "cls"), ("top_k_acc", {"top_k": 2}, "cls"),
    ("f1", {}, "bin"), ("f1", {"average": "micro"}, "bin"),
    ("mcc", {}, "bin"), ("mcc", {"average": "micro"}, "bin"),
    ("perplexity", {"ignore_label": None}, "cls"), ("perplexity", {"ignore_label": 1}, "cls"),
    ("mae", {}, "reg"), ("mse", {}, "reg"), ("rmse", {}, "reg"), ("mae", {}, "reg1"),
    ("ce", {}, "cls"), ("nll_loss", {}, "cls"), ("ce", {"eps": 0.1}, "cls"),
    ("pearsonr", {}, "reg"), ("pearsonr", {"average": "micro"}, "reg"),
    ("pcc", {}, "cls"), ("pcc", {}, "bin"), ("loss", {}, "reg"), ("torch", {}, "reg"), ("caffe", {}, "reg"),
]


def inputs(case_id, kind, step):
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


def num(x):
    x = float(x)
    return None if math.isnan(x) else x


def run(case_id, name, kw, kind):
    m = mx.metric.create(name, **kw)
    out = {}
    for step in range(3):
        labels, preds = inputs(case_id, kind, step)
        m.update([mx.nd.array(x) for x in labels], [mx.nd.array(x) for x in preds])
        out["local%d" % step] = num(m.get()[1])
        out["global%d" % step] = num(m.get_global()[1])
        if step == 0:
            m.reset_local()
    out["name"] = m.get()[0]
    return out


def main():
    res = [{"id": i, "metric": n, "kwargs": kw, "kind": k, "values": run(i, n, kw, k)}
           for i, (n, kw, k) in enumerate(CASES)]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "metric.json")
    with open(path, "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": res}, f, indent=0)


if __name__ == "__main__":
    main()
