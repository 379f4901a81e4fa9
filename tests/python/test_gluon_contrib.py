"""gluon.contrib.nn against MXNet 1.9.1 (PixelShuffle1D/2D/3D, HybridConcurrent
with Identity imperative and hybridized, SyncBatchNorm on one device).

tests/data/gluon_contrib_golden.npz holds MXNet 1.9.1's results; regenerate with
``python tests/python/test_gluon_contrib.py mxnet tests/data/gluon_contrib_golden.npz``.
"""
import os
import sys

import numpy as np

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "gluon_contrib_golden.npz")


def run_cases(mx):
    c = mx.gluon.contrib.nn
    out = {}
    rng = np.random.RandomState(0)
    x1 = mx.nd.array(rng.randn(2, 12, 3).astype('float32'))
    x2 = mx.nd.array(rng.randn(2, 8, 3, 2).astype('float32'))
    x3 = mx.nd.array(rng.randn(1, 16, 2, 1, 3).astype('float32'))
    out['ps1'] = c.PixelShuffle1D(3)(x1).asnumpy()
    out['ps2'] = c.PixelShuffle2D((2, 4))(x2).asnumpy()
    out['ps3'] = c.PixelShuffle3D(2)(x3).asnumpy()
    hc = c.HybridConcurrent(axis=1)
    hc.add(mx.gluon.nn.Dense(3, in_units=4), c.Identity())
    hc.initialize()
    for p in hc.collect_params().values():
        p.set_data(mx.nd.array(rng.randn(*p.shape).astype('float32')))
    xx = mx.nd.array(rng.randn(2, 4).astype('float32'))
    out['hc'] = hc(xx).asnumpy()
    hc.hybridize()
    out['hc_h'] = hc(xx).asnumpy()
    sbn = c.SyncBatchNorm(num_devices=1)
    sbn.initialize()
    with mx.autograd.record():
        out['sbn'] = sbn(x2).asnumpy()
    return out


def test_contrib_match_mxnet():
    import oxnet as mx

    golden = np.load(GOLDEN)
    ours = run_cases(mx)
    assert sorted(golden.files) == sorted(ours)
    for k in golden.files:
        np.testing.assert_allclose(ours[k], golden[k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_concurrent_and_sync_bn_errors():
    import pytest

    import oxnet as mx

    c = mx.gluon.contrib.nn.Concurrent(axis=0)
    c.add(mx.gluon.nn.Dense(2, in_units=2), mx.gluon.nn.Dense(2, in_units=2))
    c.initialize()
    assert c(mx.nd.ones((3, 2))).shape == (6, 2)
    with pytest.raises(mx.MXNetError, match="num_devices"):
        mx.gluon.contrib.nn.SyncBatchNorm(num_devices=4)


if __name__ == "__main__":
    np.savez(sys.argv[2], **run_cases(__import__(sys.argv[1])))
