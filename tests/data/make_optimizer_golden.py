"""Writes tests/data/golden/optimizer.json: weights after each step of each
optimizer case, computed by the real MXNet 1.9.1. Run with MXNet's Python:

    /path/to/mxnet-python tests/data/make_optimizer_golden.py

The inputs are rebuilt by tests/python/test_optimizer_api.py from the same
NumPy seeds, so the JSON holds only the cases and the results.
"""
import json
import os
import sys

import numpy as np

import mxnet as mx

F16_MP = {"dtype": "float16", "multi_precision": True}
CASES = [
    ("sgd", {}), ("sgd", {"momentum": 0.9}),
    ("sgd", {"momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3, "learning_rate": 0.2}),
    ("sgd", {"momentum": 0.9, "wd": 0.01, **F16_MP}), ("sgd", {"wd": 0.01, **F16_MP}),
    ("sgd", {"momentum": 0.9, "wd": 0.01, "dtype": "float16"}),
    ("sgd", {"momentum": 0.9, "wd": 0.01, "nweights": 3}), ("sgd", {"wd": 0.01, "nweights": 3}),
    ("sgd", {"momentum": 0.9, "wd": 0.01, "nweights": 3, **F16_MP}),
    ("sgd", {"wd": 0.01, "nweights": 3, **F16_MP}),
    ("nag", {"momentum": 0.9, "wd": 0.01}), ("nag", {"wd": 0.01}),
    ("nag", {"momentum": 0.9, "wd": 0.01, "clip_gradient": 0.5, **F16_MP}),
    ("signum", {}), ("signum", {"momentum": 0.0, "wd": 0.01}), ("signum", {"wd_lh": 0.01, "wd": 0.02}),
    ("ftml", {}), ("ftml", {"wd": 0.01, "clip_gradient": 0.4, "rescale_grad": 2.0}),
    ("lars", {"momentum": 0.9, "wd": 0.01, "eta": 0.01, "nweights": 3}),
    ("lars", {"momentum": 0.9, "wd": 0.01, "eta": 0.01}),
    ("lamb", {}), ("lamb", {"wd": 0.01, "lower_bound": 0.1, "upper_bound": 2.0, "bias_correction": False}),
    ("lamb", {"wd": 0.01, **F16_MP}), ("lamb", {"wd": 0.01, "nweights": 3}),
    ("dcasgd", {"wd": 0.01}), ("dcasgd", {"clip_gradient": 0.5}),
    ("adam", {}), ("adam", {"wd": 0.01, "clip_gradient": 0.5, "rescale_grad": 0.7, "learning_rate": 0.01}),
    ("adam", {"wd": 0.01, **F16_MP}),
    ("adagrad", {}), ("adagrad", {"wd": 0.01, "clip_gradient": 0.5, "eps": 1e-5}),
    ("rmsprop", {}), ("rmsprop", {"centered": True, "wd": 0.01}),
    ("rmsprop", {"centered": True, "clip_weights": 0.8, "clip_gradient": 0.5}),
    ("adadelta", {}), ("adadelta", {"wd": 0.01, "rho": 0.8, "clip_gradient": 0.5}),
    ("ftrl", {}), ("ftrl", {"lamda1": 0.1, "beta": 0.5, "wd": 0.01}),
    ("adamax", {}), ("adamax", {"wd": 0.01, "clip_gradient": 0.5}),
    ("nadam", {}), ("nadam", {"wd": 0.01, "clip_gradient": 0.5}),
    ("test", {}), ("lbsgd", {"momentum": 0.9, "batch_scale": 2, "warmup_epochs": 1, "updates_per_epoch": 4}),
    ("groupadagrad", {"learning_rate": 0.1}),
    ("sgd", {"momentum": 0.9, "lr_scheduler": ["factor", {"step": 2, "factor": 0.5}]}),
    ("adam", {"lr_scheduler": ["multifactor", {"step": [1, 2], "factor": 0.1}], "learning_rate": 0.1}),
    ("sgd", {"momentum": 0.5, "wd": 0.1, "names": ["fc_weight", "fc_bias", "bn_gamma"], "nweights": 3,
             "lr_mult": {"fc_bias": 2.0}, "wd_mult": {"bn_gamma": 0.5}}),
]
STEPS = 3


def inputs(case_id, nweights, dtype):
    rng = np.random.RandomState(1000 + case_id)
    weights = [rng.uniform(-1, 1, (2, 3)).astype(dtype) for _ in range(nweights)]
    grads = [[rng.uniform(-1, 1, (2, 3)).astype(dtype) for _ in range(nweights)] for _ in range(STEPS)]
    return weights, grads


def scheduler(spec):
    kind, kw = spec
    if kind == "factor":
        return mx.lr_scheduler.FactorScheduler(**kw)
    return mx.lr_scheduler.MultiFactorScheduler(**kw)


def run(case_id, name, kw):
    kw = dict(kw)
    dtype = kw.pop("dtype", "float32")
    nweights = kw.pop("nweights", 1)
    names = kw.pop("names", None)
    lr_mult = kw.pop("lr_mult", None)
    wd_mult = kw.pop("wd_mult", None)
    if "lr_scheduler" in kw:
        kw["lr_scheduler"] = scheduler(kw["lr_scheduler"])
    if names:
        kw["param_idx2name"] = dict(enumerate(names))
    opt = mx.optimizer.create(name, **kw)
    if lr_mult:
        opt.set_lr_mult(lr_mult)
    if wd_mult:
        opt.set_wd_mult(wd_mult)
    upd = mx.optimizer.get_updater(opt)
    w0, grads = inputs(case_id, nweights, dtype)
    ws = [mx.nd.array(w, dtype=dtype) for w in w0]
    out = []
    for step in range(STEPS):
        gs = [mx.nd.array(g, dtype=dtype) for g in grads[step]]
        if nweights == 1:
            upd(0, gs[0], ws[0])
        else:
            upd(list(range(nweights)), gs, ws)
        out.append([w.asnumpy().astype(np.float64).tolist() for w in ws])
    return out


def main():
    result = []
    for case_id, (name, kw) in enumerate(CASES):
        result.append({"id": case_id, "name": name, "kwargs": kw, "steps": run(case_id, name, kw)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "optimizer.json")
    with open(path, "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": result}, f)
    print("wrote", len(result), "cases", file=sys.stderr)


if __name__ == "__main__":
    main()
