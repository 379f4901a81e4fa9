"""gluon.utils: split_data, split_and_load, clip_global_norm, check_sha1, download."""
import hashlib
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon


def test_split_data():
    x = mx.nd.arange(20).reshape((10, 2))
    parts = gluon.utils.split_data(x, 5)
    assert [p.shape for p in parts] == [(2, 2)] * 5
    np.testing.assert_array_equal(parts[2].asnumpy(), [[8, 9], [10, 11]])
    with pytest.raises(ValueError, match="cannot be evenly split"):
        gluon.utils.split_data(x, 3)
    uneven = gluon.utils.split_data(x, 3, even_split=False)
    assert [p.shape[0] for p in uneven] == [4, 3, 3]
    cols = gluon.utils.split_data(mx.nd.arange(12).reshape((2, 6)), 3, batch_axis=1)
    np.testing.assert_array_equal(cols[1].asnumpy(), [[2, 3], [8, 9]])
    with pytest.raises(ValueError):
        gluon.utils.split_data(mx.nd.ones((2, 2)), 3, even_split=False)


def test_split_and_load():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    parts = gluon.utils.split_and_load(np.arange(8).reshape(4, 2), ctxs)
    assert [p.context for p in parts] == ctxs
    np.testing.assert_array_equal(parts[1].asnumpy(), [[4, 5], [6, 7]])
    one = gluon.utils.split_and_load(mx.nd.ones((3, 2)), [mx.cpu(0)])
    assert len(one) == 1 and one[0].shape == (3, 2)


def test_clip_global_norm():
    arrays = [mx.nd.ones((3,)) * 3, mx.nd.ones((2, 2)) * 4]
    total = np.sqrt(3 * 9 + 4 * 16)
    norm = gluon.utils.clip_global_norm(arrays, 1.0)
    assert isinstance(norm, (float, np.floating))
    np.testing.assert_allclose(norm, total, rtol=1e-6)
    new_total = np.sqrt(sum((a.asnumpy() ** 2).sum() for a in arrays))
    np.testing.assert_allclose(new_total, 1.0, rtol=1e-5)
    same = [mx.nd.ones((2,))]
    n2 = gluon.utils.clip_global_norm(same, 10.0, check_isfinite=False)
    assert isinstance(n2, mx.nd.NDArray)
    np.testing.assert_array_equal(same[0].asnumpy(), [1, 1])
    with pytest.warns(UserWarning, match="nan or inf"):
        gluon.utils.clip_global_norm([mx.nd.array([np.inf, 1.0])], 1.0)


def test_check_sha1_and_download(tmp_path):
    f = tmp_path / "blob.bin"
    f.write_bytes(b"oxnet gluon")
    digest = hashlib.sha1(b"oxnet gluon").hexdigest()
    assert gluon.utils.check_sha1(str(f), digest)
    assert not gluon.utils.check_sha1(str(f), "0" * 40)
    # present with the right hash: no network needed
    assert gluon.utils.download("http://example.invalid/blob.bin", path=str(tmp_path), sha1_hash=digest) == \
        os.path.join(str(tmp_path), "blob.bin")
    # absent (or wrong hash) without network: a clear error naming the place
    with pytest.raises(mx.MXNetError, match="place the file at"):
        gluon.utils.download("http://example.invalid/other.bin", path=str(tmp_path), retries=0)
    with pytest.raises(mx.MXNetError, match="SHA-1"):
        gluon.utils.download("http://example.invalid/blob.bin", path=str(tmp_path), sha1_hash="1" * 40, retries=0)
