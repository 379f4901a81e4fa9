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


def test_nd_random_namespace():
    # MXNet scripts draw through mx.nd.random.*; same generator as mx.random
    assert mx.nd.random.uniform is mx.random.uniform
    mx.random.seed(7)
    a = mx.nd.random.uniform(-1, 1, shape=(3, 4)).asnumpy()
    n = mx.nd.random.normal(0, 1, shape=5).asnumpy()
    r = mx.nd.random.randint(0, 4, shape=(6,))
    mx.random.seed(7)
    np.testing.assert_array_equal(mx.random.uniform(-1, 1, shape=(3, 4)).asnumpy(), a)
    np.testing.assert_array_equal(mx.random.normal(0, 1, shape=5).asnumpy(), n)
    assert r.dtype == np.int32 and r.shape == (6,)
    assert mx.nd.random.uniform().shape == (1,)
    z = mx.nd.random.randn(2, 3, loc=5, scale=0.01, dtype="float64")
    assert z.shape == (2, 3) and z.dtype == np.float64 and abs(z.asnumpy().mean() - 5) < 0.1
    assert mx.nd.random.randn().shape == (1,)
    s = mx.nd.random.shuffle(mx.nd.arange(10)).asnumpy()
    assert sorted(s.tolist()) == list(range(10))


def test_mixed_distribution_parameters_raise_as_in_mxnet():
    # NDArray parameters draw one distribution per element (test_random_distributions.py);
    # mixing an NDArray with a number raises MXNet's AssertionError
    with pytest.raises(AssertionError, match="must all have the same type"):
        mx.nd.random.uniform(mx.nd.array([0.0]), 1, shape=(2,))
    with pytest.raises(AssertionError, match="must all have the same type"):
        mx.nd.random.normal(0, mx.nd.array([1.0]), shape=(2,))
