"""mx.lr_scheduler: schedules against sequences printed by MXNet 1.9.1."""
import pytest

import oxnet as mx

LRS = mx.lr_scheduler


def _seq(sched, n):
    return [sched(i) for i in range(n)]


# Every expected list below was printed by MXNet 1.9.1 for the same arguments.
CASES = [
    (lambda: LRS.FactorScheduler(step=3, factor=0.5, base_lr=1.0, stop_factor_lr=0.1), 16,
     [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125, 0.1, 0.1, 0.1]),
    (lambda: LRS.FactorScheduler(step=2, factor=0.5, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2), 10,
     [0.2, 0.4, 0.6, 0.8, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625]),
    (lambda: LRS.MultiFactorScheduler(step=[2, 5, 6], factor=0.1, base_lr=1.0), 9,
     [1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.001, 0.001]),
    (lambda: LRS.MultiFactorScheduler(step=[5], factor=0.5, base_lr=1.0, warmup_steps=3, warmup_begin_lr=0.3,
                                      warmup_mode="constant"), 8,
     [0.3, 0.3, 0.3, 1.0, 1.0, 1.0, 0.5, 0.5]),
    (lambda: LRS.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1, warmup_steps=2), 13,
     [0.0, 0.5, 1.0, 0.7890625, 0.60625, 0.4515625, 0.325, 0.2265625, 0.15625, 0.1140625, 0.1, 0.1, 0.1]),
    (lambda: LRS.CosineScheduler(max_update=8, base_lr=2.0, final_lr=0.5, warmup_steps=2, warmup_begin_lr=1.0), 11,
     [1.0, 1.5, 2.0, 1.8995190528, 1.625, 1.25, 0.875, 0.6004809472, 0.5, 0.5, 0.5]),
]


@pytest.mark.parametrize("make,n,want", CASES, ids=["factor", "factor_warmup", "multifactor", "multifactor_constant",
                                                     "poly", "cosine"])
def test_matches_mxnet(make, n, want):
    assert _seq(make(), n) == pytest.approx(want, rel=1e-9)


def test_bad_arguments():
    with pytest.raises(ValueError, match="greater or equal than 1"):
        LRS.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="no more than 1"):
        LRS.FactorScheduler(step=2, factor=2.0)
    with pytest.raises(ValueError, match="increasing"):
        LRS.MultiFactorScheduler(step=[3, 2])
    with pytest.raises(ValueError, match="linear and constant"):
        LRS.FactorScheduler(step=2, warmup_mode="cubic")
    with pytest.raises(ValueError, match="warmup_begin_lr"):
        LRS.CosineScheduler(max_update=5, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError, match="strictly positive"):
        LRS.PolyScheduler(max_update=0)
    with pytest.raises(NotImplementedError):
        LRS.LRScheduler()(1)


def test_drives_optimizer_learning_rate():
    opt = mx.optimizer.SGD(lr_scheduler=LRS.FactorScheduler(step=1, factor=0.5, base_lr=1.0))
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.zeros((1,))
    for _ in range(3):
        upd(0, mx.nd.ones((1,)), w)
    # updates at counts 1, 2, 3 use lr 1, 0.5, 0.25
    assert w.asnumpy()[0] == pytest.approx(-1.75)
    assert opt.learning_rate == pytest.approx(0.25)
