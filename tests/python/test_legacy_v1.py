"""MXNet's legacy Convolution_v1: the same computation and parameters as
Convolution (checked in MXNet 1.9.1: equal to float rounding for 2-D, with
stride, pad, dilate, groups and no_bias), registered as its alias. The
constant below was computed with MXNet 1.9.1's Convolution_v1."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

X = (np.arange(1 * 2 * 4 * 5).reshape(1, 2, 4, 5) % 7 - 3).astype(np.float32)
W = (np.arange(3 * 2 * 2 * 3).reshape(3, 2, 2, 3) % 5 - 2).astype(np.float32)
B = np.array([0.5, -1, 2], np.float32)
WANT = [[[[-4.5, -4.5, 0.5], [-5.5, 9.5, -5.5], [0.5, -12.5, 3.5], [6.5, -6.5, -1.5], [0.5, 4.5, -3.5]],
         [[-1.0, 6.0, -1.0], [4.0, -15.0, 7.0], [5.0, 4.0, -14.0], [-1.0, 9.0, 0.0], [-7.0, -3.0, 3.0]],
         [[7.0, -4.0, 2.0], [13.0, 15.0, -6.0], [-6.0, 15.0, 13.0], [-4.0, -6.0, 11.0], [10.0, 4.0, -1.0]]]]


def test_convolution_v1_matches_mxnet():
    got = mx.nd.Convolution_v1(mx.nd.array(X), mx.nd.array(W), mx.nd.array(B), kernel=(2, 3), num_filter=3,
                               stride=(1, 2), pad=(1, 1))
    assert got.asnumpy().tolist() == WANT
    # positional parameters in MXNet's order, and the same as Convolution
    same = mx.nd.Convolution(mx.nd.array(X), mx.nd.array(W), mx.nd.array(B), (2, 3), (1, 2), (1, 1), (1, 1), 3)
    assert (same.asnumpy() == got.asnumpy()).all()


def test_convolution_v1_gradient_is_convolutions():
    x, w = mx.nd.array(X), mx.nd.array(W)
    grads = []
    for name in ("Convolution_v1", "Convolution"):
        x.attach_grad()
        w.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, name)(x, w, kernel=(2, 3), num_filter=3, no_bias=True)
        y.backward()
        grads.append((x.grad.asnumpy().copy(), w.grad.asnumpy().copy()))
    for a, b in zip(*grads):
        assert (a == b).all()


# Pooling_v1: Pooling except that avg divides by the kernel's area (computed
# with MXNet 1.9.1 on PX; listed times the area).
PX = (np.arange(1 * 2 * 5 * 6).reshape(1, 2, 5, 6) % 11).astype(np.float32)
POOL_FULL = [[[[30.0, 48.0, 30.0], [39.0, 46.0, 25.0]], [[58.0, 32.0, 23.0], [45.0, 30.0, 29.0]]]]
POOL_PAD = [[[[1.0, 6.0, 12.0, 5.0], [16.0, 33.0, 34.0, 6.0], [20.0, 39.0, 29.0, 8.0], [0.0, 0.0, 0.0, 0.0]],
             [[17.0, 19.0, 3.0, 2.0], [26.0, 26.0, 27.0, 11.0], [19.0, 21.0, 33.0, 13.0], [0.0, 0.0, 0.0, 0.0]]]]


def test_pooling_v1_matches_mxnet():
    x = mx.nd.array(PX)
    got = mx.nd.Pooling_v1(x, kernel=(3, 3), stride=(2, 2), pool_type="avg", pooling_convention="full")
    np.testing.assert_allclose(got.asnumpy() * 9, POOL_FULL, rtol=1e-6)
    got = mx.nd.Pooling_v1(x, (2, 3), "avg", False, "full", (2, 2), (1, 1))
    np.testing.assert_allclose(got.asnumpy() * 6, POOL_PAD, rtol=1e-6, atol=1e-6)
    glob = mx.nd.Pooling_v1(x, kernel=(3, 3), pool_type="avg", global_pool=True).asnumpy().ravel()
    np.testing.assert_allclose(glob, [4.6, 4.9], rtol=1e-6)
    for kw in ({"pool_type": "max", "pooling_convention": "full"}, {"pool_type": "sum"}):
        a = mx.nd.Pooling_v1(x, kernel=(2, 2), stride=(2, 2), **kw).asnumpy()
        b = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), **kw).asnumpy()
        assert (a == b).all()


def test_pooling_v1_arguments():
    x = mx.nd.array(PX)
    with pytest.raises(MXNetError, match="Pooling_v1: argument 'pooling_convention' must be one of"):
        mx.nd.Pooling_v1(x, kernel=(2, 2), pooling_convention="same")
    with pytest.raises(TypeError, match="count_include_pad"):
        mx.nd.Pooling_v1(x, kernel=(2, 2), count_include_pad=False)
    with pytest.raises(MXNetError, match="Pooling_v1"):
        mx.nd.Pooling_v1(x, kernel=(7, 7))
