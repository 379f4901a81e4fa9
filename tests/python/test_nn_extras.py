"""Remaining MXNet 1.9.1 neural-network operators: behaviour the registry
table cannot express (errors, edge cases, values computed with MXNet 1.9.1
and pasted here as constants)."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError


def _raises(fn, *texts):
    with pytest.raises(MXNetError) as e:
        fn().wait_to_read()
    for t in texts:
        assert t in str(e.value), str(e.value)


# -- im2col / col2im ------------------------------------------------------------

def test_im2col_matches_mxnet_values():
    x = mx.nd.array(np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5))
    y = mx.nd.im2col(x, kernel=(2, 3), stride=(1, 2), pad=(1, 0))
    assert y.shape == (2, 18, 10)
    # mx.nd.im2col(...)[0, :, :3] in MXNet 1.9.1
    want = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 2, 5], [1, 3, 6], [2, 4, 7],
                     [0, 0, 20], [0, 0, 21], [0, 0, 22], [20, 22, 25], [21, 23, 26], [22, 24, 27],
                     [0, 0, 40], [0, 0, 41], [0, 0, 42], [40, 42, 45], [41, 43, 46], [42, 44, 47]])
    np.testing.assert_array_equal(y.asnumpy()[0, :, :3], want)
    z = mx.nd.col2im(y, output_size=(4, 5), kernel=(2, 3), stride=(1, 2), pad=(1, 0))
    assert z.shape == (2, 3, 4, 5)


def test_im2col_col2im_are_adjoint():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 2, 6, 5)
    kw = dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))
    cx = mx.nd.im2col(mx.nd.array(x, dtype="float64"), **kw)
    c = rng.randn(*cx.shape)
    back = mx.nd.col2im(mx.nd.array(c, dtype="float64"), output_size=(6, 5), **kw)
    np.testing.assert_allclose((cx.asnumpy() * c).sum(), (x * back.asnumpy()).sum(), rtol=1e-10)


def test_im2col_errors():
    x = mx.nd.zeros((2, 3, 4, 5))
    _raises(lambda: mx.nd.im2col(x, kernel=(2, 2), stride=(1,)), "im2col", "stride")
    _raises(lambda: mx.nd.im2col(x, kernel=(9, 2)), "im2col", "exceeds")
    _raises(lambda: mx.nd.im2col(x, kernel=(2,)), "im2col", "(2, 3, 4, 5)")
    _raises(lambda: mx.nd.im2col(x, kernel=(2, 2), stride=(0, 1)), "im2col", "positive")
    _raises(lambda: mx.nd.im2col(mx.nd.zeros((1, 1, 3, 3), dtype="int32"), kernel=(2, 2)), "im2col", "int32")
    y = mx.nd.zeros((2, 12, 10))
    _raises(lambda: mx.nd.col2im(y, output_size=(4, 5), kernel=(2, 2)), "col2im", "blocks")
    _raises(lambda: mx.nd.col2im(y, kernel=(2, 2)), "col2im", "output_size")
    _raises(lambda: mx.nd.col2im(mx.nd.zeros((2, 7, 12)), output_size=(4, 5), kernel=(2, 2)), "col2im", "(2, 7, 12)")
