"""mx.random: samplers, seeding, reproducibility."""
import numpy as np
import pytest

import oxnet as mx


def test_uniform_normal_randint_ranges():
    mx.random.seed(42)
    u = mx.random.uniform(-2, 3, shape=(2000,)).asnumpy()
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.15
    n = mx.random.normal(1.0, 2.0, shape=(4000,)).asnumpy()
    assert abs(n.mean() - 1.0) < 0.15 and abs(n.std() - 2.0) < 0.15
    r = mx.random.randint(3, 7, shape=(1000,)).asnumpy()
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}
    f64 = mx.random.uniform(shape=(3, 4), dtype="float64")
    assert f64.dtype == np.float64 and f64.shape == (3, 4)


def test_seed_reproduces():
    mx.random.seed(7)
    a = mx.random.normal(shape=(5, 5)).asnumpy()
    b = mx.random.uniform(shape=(3,)).asnumpy()
    mx.random.seed(7)
    np.testing.assert_array_equal(mx.random.normal(shape=(5, 5)).asnumpy(), a)
    np.testing.assert_array_equal(mx.random.uniform(shape=(3,)).asnumpy(), b)
    mx.random.seed(8)
    assert not np.array_equal(mx.random.normal(shape=(5, 5)).asnumpy(), a)


def test_shuffle_permutes_rows():
    mx.random.seed(3)
    x = mx.nd.array(np.arange(20).reshape(10, 2))
    y = mx.random.shuffle(x).asnumpy()
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.asnumpy().tolist()))
    assert not np.array_equal(y, x.asnumpy())


def test_out_and_errors():
    out = mx.nd.zeros((4,))
    mx.random.uniform(0, 1, out=out)
    assert out.asnumpy().max() > 0
    with pytest.raises(ValueError):
        mx.random.seed("x")
