"""Gluon losses against MXNet 1.9.1: values and input gradients.

The golden file tests/data/gluon_loss_golden.npz holds MXNet 1.9.1's results
for the cases below; regenerate it with the real MXNet by running
``python tests/python/test_gluon_loss.py mxnet tests/data/gluon_loss_golden.npz``.
"""
import os
from collections import OrderedDict
import sys

import numpy as np


GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "gluon_loss_golden.npz")


def run_cases(mx):
    """Run every loss case with module ``mx`` (oxnet or mxnet); returns a dict
    of name -> loss values and name_grad -> gradient of the prediction."""
    gl = mx.gluon.loss
    rng = np.random.RandomState(0)
    pred = rng.randn(4, 5).astype('float32')
    lab_sparse = np.array([0, 3, 1, 4], dtype='float32')
    lab_dense = np.abs(rng.randn(4, 5)).astype('float32'); lab_dense /= lab_dense.sum(1, keepdims=True)
    lab_bin = (rng.rand(4, 5) > 0.5).astype('float32')
    lab_sign = lab_bin * 2 - 1
    sw = rng.rand(4, 1).astype('float32')
    prob = 1 / (1 + np.exp(-pred))
    posw = rng.rand(5).astype('float32') + 0.5
    cases = OrderedDict()
    A = mx.nd.array
    cases['l2'] = (gl.L2Loss(), [pred, lab_dense])
    cases['l2_w'] = (gl.L2Loss(weight=3.0), [pred, lab_dense, sw])
    cases['l1'] = (gl.L1Loss(), [pred, lab_dense, sw])
    cases['sbce'] = (gl.SigmoidBCELoss(), [pred, lab_bin])
    cases['sbce_sig'] = (gl.SigmoidBCELoss(from_sigmoid=True), [prob, lab_bin, sw])
    cases['sbce_pos'] = (gl.SigmoidBCELoss(), [pred, lab_bin, None, posw])
    cases['sbce_sig_pos'] = (gl.SigmoidBCELoss(from_sigmoid=True), [prob, lab_bin, None, posw])
    cases['sce'] = (gl.SoftmaxCELoss(), [pred, lab_sparse])
    cases['sce_w'] = (gl.SoftmaxCELoss(weight=0.5), [pred, lab_sparse, sw])
    cases['sce_dense'] = (gl.SoftmaxCELoss(sparse_label=False), [pred, lab_dense])
    cases['sce_logits'] = (gl.SoftmaxCELoss(from_logits=True), [pred, lab_sparse])
    cases['sce_axis0'] = (gl.SoftmaxCELoss(axis=0), [pred, np.array([0,1,2,3,0],dtype='float32')])
    cases['kl'] = (gl.KLDivLoss(), [pred, lab_dense])
    cases['kl_nolog'] = (gl.KLDivLoss(from_logits=False), [pred, lab_dense, sw])
    cases['huber'] = (gl.HuberLoss(rho=0.7), [pred, lab_dense, sw])
    cases['hinge'] = (gl.HingeLoss(), [pred, lab_sign])
    cases['sqhinge'] = (gl.SquaredHingeLoss(margin=2), [pred, lab_sign, sw])
    cases['logistic'] = (gl.LogisticLoss(), [pred, lab_sign])
    cases['logistic_bin'] = (gl.LogisticLoss(label_format='binary'), [pred, lab_bin])
    cases['triplet'] = (gl.TripletLoss(margin=0.5), [pred, lab_dense, prob])
    cases['poisson'] = (gl.PoissonNLLLoss(), [pred, lab_dense * 3])
    cases['poisson_full'] = (gl.PoissonNLLLoss(from_logits=False, compute_full=True), [prob * 3, np.floor(lab_dense * 10) + 1])
    cases['cosine'] = (gl.CosineEmbeddingLoss(margin=0.1), [pred, prob, np.array([1, -1, 1, -1], dtype='float32')])
    cases['sdml'] = (gl.SDMLLoss(), [pred, prob])
    ctc_pred = rng.randn(2, 6, 4).astype('float32')
    ctc_lab = np.array([[1, 2, -1], [0, 1, 2]], dtype='float32')
    cases['ctc'] = (gl.CTCLoss(), [ctc_pred, ctc_lab])
    cases['ctc_tnc'] = (gl.CTCLoss(layout='TNC'), [ctc_pred.transpose(1, 0, 2).copy(), ctc_lab, np.array([5, 6], dtype='float32'), np.array([2, 3], dtype='float32')])
    out = {}
    for k, (blk, args) in cases.items():
        nds = [A(a) if a is not None else None for a in args]
        if k == 'poisson_full':
            out[k] = blk(*nds).asnumpy()
            continue
        nds[0].attach_grad()
        with mx.autograd.record():
            l = blk(*nds)
        l.backward()
        out[k] = l.asnumpy()
        out[k + '_grad'] = nds[0].grad.asnumpy()
    return out


def test_losses_match_mxnet():
    import oxnet as mx

    golden = np.load(GOLDEN)
    ours = run_cases(mx)
    assert sorted(golden.files) == sorted(ours)
    for k in golden.files:
        assert ours[k].shape == golden[k].shape, k
        np.testing.assert_allclose(ours[k], golden[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_loss_bad_label_shape():
    import pytest

    import oxnet as mx

    with pytest.raises(ValueError, match="label"):
        mx.gluon.loss.L2Loss()(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)))
    with pytest.raises(AssertionError):
        mx.gluon.loss.CTCLoss(layout="CNT")
    with pytest.raises(ValueError):
        mx.gluon.loss.LogisticLoss(label_format="x")


if __name__ == "__main__":
    mod = __import__(sys.argv[1])
    np.savez(sys.argv[2], **run_cases(mod))
