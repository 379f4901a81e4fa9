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


# -- GridGenerator / BilinearSampler / SpatialTransformer ----------------------

_IMG = [[[[1, 4, 3, 6], [1, 8, 8, 9], [0, 4, 1, 5], [1, 0, 1, 3]]]]


def test_bilinear_sampler_docs_examples_match_mxnet():
    data = mx.nd.array(_IMG)
    # zoom out two times: MXNet 1.9.1 gives zeros on the border (out-of-range samples)
    grid = mx.nd.GridGenerator(mx.nd.array([[2, 0, 0, 0, 2, 0]]), transform_type="affine", target_shape=(4, 4))
    out = mx.nd.BilinearSampler(data, grid).asnumpy()[0, 0]
    want = [[0, 0, 0, 0], [0, 3.5, 6.5, 0], [0, 1.25, 2.5, 0], [0, 0, 0, 0]]
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    # shift left by one pixel through a warp flow
    flow = np.zeros((1, 2, 4, 4))
    flow[0, 0] = 1
    out = mx.nd.BilinearSampler(data, mx.nd.GridGenerator(mx.nd.array(flow), transform_type="warp"))
    np.testing.assert_allclose(out.asnumpy()[0, 0], [[4, 3, 6, 0], [8, 8, 9, 0], [4, 1, 5, 0], [0, 1, 3, 0]],
                               atol=1e-5)


def test_spatial_transformer_matches_mxnet():
    out = mx.nd.SpatialTransformer(mx.nd.array(_IMG), mx.nd.array([[0.5, 0.1, 0.2, -0.3, 0.7, 0.1]]),
                                   target_shape=(2, 3), transform_type="affine", sampler_type="bilinear")
    want = [[7.115, 6.14, 4.83], [0.17, 1.01, 3.45]]  # MXNet 1.9.1
    np.testing.assert_allclose(out.asnumpy()[0, 0], want, rtol=1e-5, atol=1e-5)


def test_grid_generator_size_one_axis_gives_nan_like_mxnet():
    # MXNet divides by (size - 1): NaN grid for a target axis of size 1
    g = mx.nd.GridGenerator(mx.nd.array([[1, 0, 0, 0, 1, 0]]), transform_type="affine", target_shape=(1, 3))
    assert np.isnan(g.asnumpy()).all()


def test_spatial_errors():
    data = mx.nd.array(_IMG)
    _raises(lambda: mx.nd.BilinearSampler(data, mx.nd.zeros((1, 3, 2, 2))), "BilinearSampler", "(1, 3, 2, 2)")
    _raises(lambda: mx.nd.BilinearSampler(data, mx.nd.zeros((2, 2, 2, 2))), "BilinearSampler", "N = 1")
    _raises(lambda: mx.nd.GridGenerator(mx.nd.zeros((1, 6)), transform_type="affine"), "GridGenerator",
            "target_shape")
    _raises(lambda: mx.nd.GridGenerator(mx.nd.zeros((1, 5)), transform_type="affine", target_shape=(2, 2)),
            "GridGenerator", "(1, 5)")
    _raises(lambda: mx.nd.GridGenerator(mx.nd.zeros((1, 6)), target_shape=(2, 2)), "transform_type")
    _raises(lambda: mx.nd.GridGenerator(mx.nd.zeros((1, 3, 2, 2)), transform_type="warp"), "GridGenerator",
            "(1, 3, 2, 2)")
    _raises(lambda: mx.nd.SpatialTransformer(data, mx.nd.zeros((1, 6)), transform_type="affine",
                                             sampler_type="bilinear"), "SpatialTransformer", "target_shape")
    _raises(lambda: mx.nd.SpatialTransformer(data, mx.nd.zeros((1, 6)), target_shape=(2, 2), transform_type="warp",
                                             sampler_type="bilinear"), "SpatialTransformer", "transform_type")
    _raises(lambda: mx.nd.SpatialTransformer(data, mx.nd.zeros((2, 6)), target_shape=(2, 2),
                                             transform_type="affine", sampler_type="bilinear"),
            "SpatialTransformer", "loc")
    # cudnn_off is accepted
    mx.nd.BilinearSampler(data, mx.nd.zeros((1, 2, 2, 2)), cudnn_off=True).wait_to_read()


# -- ROIPooling -------------------------------------------------------------------

def test_roi_pooling_matches_mxnet():
    x = mx.nd.array(np.arange(48).reshape(1, 1, 8, 6))
    y = mx.nd.array([[0, 0, 0, 4, 4]])
    # MXNet's documented example
    np.testing.assert_array_equal(mx.nd.ROIPooling(x, y, (2, 2), 1.0).asnumpy()[0, 0], [[14, 16], [26, 28]])
    np.testing.assert_array_equal(mx.nd.ROIPooling(x, y, (2, 2), 0.7).asnumpy()[0, 0], [[7, 9], [19, 21]])
    # rounding of roi coordinates (half away from zero), empty bins, rois outside: MXNet 1.9.1 values
    x = mx.nd.array(np.arange(48).reshape(1, 1, 8, 6) - 20)
    r = mx.nd.array([[0, 0, 0, 4, 4], [0, -3, -2, 1.5, 2.5], [0, 5, 7, 9, 9], [0, 2.5, 0.5, 2.5, 0.5],
                     [0, 7, 9, 12, 12]])
    want = [[[-12, -10], [0, 2], [6, 8]], [[0, 0], [0, -12], [0, 0]], [[27, 0], [0, 0], [0, 0]],
            [[-11, -11], [-11, -11], [-11, -11]], [[0, 0], [0, 0], [0, 0]]]
    np.testing.assert_array_equal(mx.nd.ROIPooling(x, r, pooled_size=(3, 2), spatial_scale=1.0).asnumpy()[:, 0], want)
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.ROIPooling(a, r, pooled_size=(3, 2), spatial_scale=1.0)
    out.backward(mx.nd.ones(out.shape))
    g = np.zeros((8, 6))
    g[1, 2:5] = [2, 6, 1]
    g[3, 2], g[3, 4], g[4, 2], g[4, 4], g[7, 5] = 2, 1, 1, 1, 1
    np.testing.assert_array_equal(a.grad.asnumpy()[0, 0], g)


def test_roi_pooling_rois_get_no_gradient():
    x, r = mx.nd.ones((1, 1, 4, 4)), mx.nd.array([[0, 0, 0, 2, 2]])
    r.attach_grad()
    with mx.autograd.record():
        out = mx.nd.ROIPooling(x, r, pooled_size=(2, 2), spatial_scale=1.0)
    out.backward()
    assert (r.grad.asnumpy() == 0).all()


def test_roi_pooling_errors():
    x = mx.nd.zeros((1, 2, 4, 4))
    _raises(lambda: mx.nd.ROIPooling(x, mx.nd.zeros((2, 4)), pooled_size=(2, 2), spatial_scale=1.0), "ROIPooling",
            "rois", "(2, 4)")
    _raises(lambda: mx.nd.ROIPooling(x, mx.nd.zeros((2, 5)), pooled_size=(2, 2)), "ROIPooling", "spatial_scale")
    _raises(lambda: mx.nd.ROIPooling(x, mx.nd.zeros((2, 5)), pooled_size=(0, 2), spatial_scale=1.0), "pooled_size")
    _raises(lambda: mx.nd.ROIPooling(x, mx.nd.zeros((2, 5)), pooled_size=(2, 2), spatial_scale=-1.0),
            "spatial_scale")
    _raises(lambda: mx.nd.ROIPooling(mx.nd.zeros((2, 4)), mx.nd.zeros((2, 5)), pooled_size=(2, 2),
                                     spatial_scale=1.0), "data", "(2, 4)")
    # a batch index outside the data raises at the wait, naming the roi
    _raises(lambda: mx.nd.ROIPooling(x, mx.nd.array([[3, 0, 0, 1, 1]]), pooled_size=(2, 2), spatial_scale=1.0),
            "ROIPooling", "batch_index")
