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


# -- CTCLoss ----------------------------------------------------------------------

def _ctc_inputs():
    x = np.random.RandomState(0).randn(5, 3, 4).astype(np.float32)
    return x, np.array([[1, 2, 0], [3, 3, 0], [1, 2, 3]], np.float32)


def test_ctc_loss_matches_mxnet():
    x, lab = _ctc_inputs()
    d = mx.nd.array(x)
    d.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.CTCLoss(d, mx.nd.array(lab))
    loss.backward(mx.nd.array([1.0, 2.0, 0.5]))
    # MXNet 1.9.1
    np.testing.assert_allclose(loss.asnumpy(), [4.400851249694824, 3.606065511703491, 3.182927131652832], rtol=1e-5)
    g0 = [[-0.43115503, -0.19093123, 0.13723415, 0.48485199], [-0.22241434, -0.20856279, 0.20669468, 0.22428243],
          [-0.10328406, -0.01752191, 0.05044736, 0.0703583], [-0.03543893, -0.00764924, -0.04739824, 0.09048642],
          [-0.03498296, 0.27987546, -0.75467694, 0.50978422]]
    np.testing.assert_allclose(d.grad.asnumpy()[:, 0], g0, rtol=1e-4, atol=1e-6)
    g2 = [[0.00291008, -0.34935009, 0.07360063, 0.2728394], [0.00434549, 0.05245538, -0.10588072, 0.04907979],
          [0.02051915, 0.02720013, -0.10762024, 0.059901], [0.02535536, 0.0870188, 0.02223273, -0.13460699],
          [-0.13873824, 0.1854694, 0.07268216, -0.11941326]]
    np.testing.assert_allclose(d.grad.asnumpy()[:, 2], g2, rtol=1e-4, atol=1e-6)
    # blank_label='last' pads with -1
    last = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array([[0, 1, -1], [2, 2, -1], [0, 1, 2]]), blank_label="last")
    np.testing.assert_allclose(last.asnumpy(), [1.8537611961364746, 5.25965690612793, 5.23277473449707], rtol=1e-5)
    dl = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array(lab), mx.nd.array([5, 3, 4]), use_data_lengths=True)
    np.testing.assert_allclose(dl.asnumpy(), [4.400851249694824, 5.016986846923828, 2.5165836811065674], rtol=1e-5)
    # label_lengths alone: the third input is label_lengths (by keyword)
    ll = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array(lab), label_lengths=mx.nd.array([1, 2, 2]),
                       use_label_lengths=True)
    np.testing.assert_allclose(ll.asnumpy(), [3.6938648223876953, 3.606065511703491, 4.861454486846924], rtol=1e-5)
    # without label lengths a label ends at its first padding value, even mid-sequence
    mid = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array([[1, 0, 2], [3, 3, 0], [1, 2, 3]]))
    np.testing.assert_allclose(mid.asnumpy()[0], 3.6938648223876953, rtol=1e-5)


def test_ctc_loss_aliases_and_infeasible_label():
    x, lab = _ctc_inputs()
    want = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array(lab)).asnumpy()
    for name in ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
        np.testing.assert_allclose(getattr(mx.nd, name)(mx.nd.array(x), mx.nd.array(lab)).asnumpy(), want)
    # [3, 3] cannot fit 2 steps: MXNet gives loss 0 (and its gradient buffer is left unset; oxnet gives 0)
    d = mx.nd.array(x)
    d.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.CTCLoss(d, mx.nd.array(lab), mx.nd.array([5, 2, 4]), use_data_lengths=True)
    loss.backward()
    assert loss.asnumpy()[1] == 0
    g = d.grad.asnumpy()
    assert (g[:, 1] == 0).all() and (g[4:, 2] == 0).all() and (g[:, 0] != 0).any()


def test_ctc_loss_errors():
    x = mx.nd.zeros((5, 3, 4))
    lab = mx.nd.array([[1, 2, 0], [3, 3, 0], [1, 2, 3]])
    _raises(lambda: mx.nd.CTCLoss(mx.nd.zeros((5, 3)), lab), "CTCLoss", "(5, 3)")
    _raises(lambda: mx.nd.CTCLoss(x, mx.nd.zeros((2, 3))), "CTCLoss", "label", "(2, 3)")
    _raises(lambda: mx.nd.CTCLoss(x, lab, mx.nd.zeros((2,)), use_data_lengths=True), "data_lengths", "(2,)")
    _raises(lambda: mx.nd.CTCLoss(x, lab, use_data_lengths=True), "CTCLoss", "data_lengths")
    _raises(lambda: mx.nd.CTCLoss(x, lab, blank_label="middle"), "blank_label")
    _raises(lambda: mx.nd.CTCLoss(x, mx.nd.array([[1, 4, 0], [1, 0, 0], [1, 0, 0]])), "CTCLoss", "label[0, 1] = 4")
    _raises(lambda: mx.nd.CTCLoss(x, lab, mx.nd.array([5, 6, 5]), use_data_lengths=True), "data_lengths[1] = 6")
    _raises(lambda: mx.nd.CTCLoss(x, lab, mx.nd.array([1, 4, 1]), use_label_lengths=True), "label_lengths[1] = 4")


# -- Correlation ------------------------------------------------------------------

def test_correlation_matches_mxnet():
    a = mx.nd.array(np.arange(18).reshape(1, 2, 3, 3))
    b = mx.nd.array(np.arange(18).reshape(1, 2, 3, 3)[:, ::-1] % 5)
    out = mx.nd.Correlation(a, b, max_displacement=1, pad_size=1)
    assert out.shape == (1, 9, 3, 3)
    want = [[0, 8, 7], [6, 6.5, 16.5], [6, 15, 0], [0, 23.5, 35.5], [21, 32, 10], [28.5, 8, 0], [0, 6.5, 16.5],
            [6, 15, 26], [13.5, 23.5, 0]]  # MXNet 1.9.1, out[0, :, 1]
    np.testing.assert_allclose(out.asnumpy()[0, :, 1], want)
    out = mx.nd.Correlation(a, b, max_displacement=1, pad_size=1, is_multiply=False)
    want = [[7.5, 6.5, 9], [6.5, 8, 8], [7, 7, 9.5], [7.5, 6, 6], [5, 5, 7.5], [4, 6.5, 9.5], [7.5, 8, 8],
            [7, 7, 7], [6, 6, 9.5]]
    np.testing.assert_allclose(out.asnumpy()[0, :, 1], want)


def test_correlation_errors():
    a = mx.nd.zeros((2, 3, 7, 8))
    _raises(lambda: mx.nd.Correlation(a, a, kernel_size=2), "Correlation", "odd")
    _raises(lambda: mx.nd.Correlation(a, a, max_displacement=4), "Correlation", "do not fit")
    # MXNet reads past data2 when its channels differ; oxnet requires equal shapes
    _raises(lambda: mx.nd.Correlation(a, mx.nd.zeros((2, 2, 7, 8))), "Correlation", "(2, 2, 7, 8)")
    _raises(lambda: mx.nd.Correlation(mx.nd.zeros((3, 4)), mx.nd.zeros((3, 4))), "Correlation", "4-D")
    _raises(lambda: mx.nd.Correlation(a, a, stride1=0), "Correlation", "stride1")


# -- SVMOutput / IdentityAttachKLSparseReg ------------------------------------------

def test_svm_output_matches_mxnet():
    x = mx.nd.array([[0.5, -2.0, 1.5, 0.2], [-0.3, 0.9, -1.1, 2.5]])
    cases = [({}, [[3.0, 0, 0, 2.4], [1.4, -0.2, 0, 7.0]]),
             ({"use_linear": True}, [[1, 0, 0, 1], [1, -1, 0, 1]]),
             ({"margin": 0.5, "regularization_coefficient": 0.3}, [[0.6, 0, 0, 0.42], [0.12, 0, 0, 1.8]])]
    for params, want in cases:  # MXNet 1.9.1
        a = x.copy()
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.SVMOutput(a, mx.nd.array([2, 1]), **params)
        y.backward(mx.nd.ones(y.shape) * 7)
        np.testing.assert_allclose(y.asnumpy(), x.asnumpy())
        np.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-6, atol=1e-6)
    # labels are truncated to integers; out-of-range labels mark no class (MXNet 1.9.1 values)
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SVMOutput(a, mx.nd.array([1.7, 2.2]))
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [[3, -6, 5, 2.4], [1.4, 3.8, -4.2, 7]], rtol=1e-6)
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SVMOutput(a, mx.nd.array([7, -1]))
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [[3, 0, 5, 2.4], [1.4, 3.8, 0, 7]], rtol=1e-6)
    # more than 2 axes: classes along the last axis, label shaped like data without it
    a = mx.nd.array(np.arange(12).reshape(2, 2, 3) / 10 - 0.5)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SVMOutput(a, mx.nd.array([[1, 2], [0, 1]]))
    y.backward()
    want = [[[1.0, -2.8, 1.4], [1.6, 1.8, -2.0]], [[-1.8, 2.4, 2.6], [2.8, -1.0, 3.2]]]
    np.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-6)


def test_svm_output_errors():
    x = mx.nd.zeros((2, 4))
    _raises(lambda: mx.nd.SVMOutput(x, mx.nd.array([1, 2, 3])), "SVMOutput", "label", "(3,)")
    _raises(lambda: mx.nd.SVMOutput(mx.nd.zeros((4,)), mx.nd.zeros((4,))), "SVMOutput", "(4,)")


def test_kl_sparse_reg_inputs_and_params():
    x = mx.nd.array([[0.2, 0.5, 0.9], [0.4, 0.1, 0.7]])
    m = mx.nd.array([0.1, 0.1, 0.1])
    # moving_avg by position or keyword; parameters by MXNet's order after the inputs
    np.testing.assert_allclose(mx.nd.IdentityAttachKLSparseReg(x, m, 0.3, penalty=0.1).asnumpy(), x.asnumpy())
    np.testing.assert_allclose(mx.nd.IdentityAttachKLSparseReg(x, moving_avg=m).asnumpy(), x.asnumpy())
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.IdentityAttachKLSparseReg(a, m, 0.3, 0.5, 0.5)
    y.backward()
    avg = 0.5 * 0.1 + 0.5 * np.array([0.3, 0.3, 0.8])
    np.testing.assert_allclose(m.asnumpy(), avg, rtol=1e-6)
    want = 1 + 0.5 * (-0.3 / avg + 0.7 / (1 - avg))
    np.testing.assert_allclose(a.grad.asnumpy(), np.tile(want, (2, 1)), rtol=1e-5)
    _raises(lambda: mx.nd.IdentityAttachKLSparseReg(x), "IdentityAttachKLSparseReg", "moving_avg")
    _raises(lambda: mx.nd.IdentityAttachKLSparseReg(x, mx.nd.zeros((2,))), "IdentityAttachKLSparseReg", "moving_avg",
            "(2,)")
    _raises(lambda: mx.nd.IdentityAttachKLSparseReg(mx.nd.zeros((2, 3, 4)), mx.nd.zeros((3,))), "2-D")


def test_contrib_namespace():
    x, lab = _ctc_inputs()
    want = mx.nd.CTCLoss(mx.nd.array(x), mx.nd.array(lab)).asnumpy()
    for f in (mx.nd.contrib.ctc_loss, mx.nd.contrib.CTCLoss):
        np.testing.assert_allclose(f(mx.nd.array(x), mx.nd.array(lab)).asnumpy(), want)
    # MXNet's argument order and keyword checks carry over
    np.testing.assert_allclose(
        mx.nd.contrib.ctc_loss(mx.nd.array(x), mx.nd.array(lab), None, None, False, False, "first").asnumpy(), want)
    with pytest.raises(TypeError):
        mx.nd.contrib.ctc_loss(mx.nd.array(x), mx.nd.array(lab), blank="first")
    assert {"ctc_loss", "CTCLoss"} <= set(dir(mx.nd.contrib))
    with pytest.raises(AttributeError):
        mx.nd.contrib.no_such_operator
