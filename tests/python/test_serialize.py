"""mx.nd.save / mx.nd.load against files written by real MXNet 1.9.1
(tests/data/golden, made by make_golden.py)."""
import json
import os

import numpy as np
import pytest

import oxnet as mx

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "golden")
EXPECTED = json.load(open(os.path.join(GOLDEN, "expected.json")))


def _expected_arrays(fname):
    e = EXPECTED["nd"][fname]
    out = []
    for a in e["arrays"]:
        raw = bytes.fromhex(a["hex"])
        out.append((a.get("name"), np.frombuffer(raw, dtype=a["dtype"]).reshape(a["shape"])))
    return e, out


@pytest.mark.parametrize("fname", ["nd_list.params", "nd_dict.params", "nd_single.params", "nd_empty_list.params"])
def test_load_mxnet_files(fname):
    e, arrays = _expected_arrays(fname)
    got = mx.nd.load(os.path.join(GOLDEN, fname))
    if e["names"]:
        assert isinstance(got, dict)
        assert list(got) == [n for n, _ in arrays]
        got = list(got.values())
    else:
        assert isinstance(got, list)
    assert len(got) == len(arrays)
    for g, (_, ref) in zip(got, arrays):
        assert g.dtype == ref.dtype.type and g.shape == ref.shape
        assert g.asnumpy().tobytes() == ref.tobytes()


@pytest.mark.parametrize("fname", ["nd_list.params", "nd_dict.params", "nd_single.params"])
def test_save_is_byte_identical_to_mxnet(fname, tmp_path):
    e, arrays = _expected_arrays(fname)
    nds = [(n, mx.nd.array(a, dtype=a.dtype)) for n, a in arrays]
    out = tmp_path / fname
    if e["names"]:
        mx.nd.save(str(out), dict(nds))
    else:
        mx.nd.save(str(out), [a for _, a in nds])
    assert out.read_bytes() == open(os.path.join(GOLDEN, fname), "rb").read()


def test_checkpoint_params_have_prefixes():
    d = mx.nd.load(os.path.join(GOLDEN, "mlp-0000.params"))
    assert all(k.startswith(("arg:", "aux:")) for k in d)


def test_roundtrip_and_errors(tmp_path):
    a = mx.nd.array(np.arange(12).reshape(3, 4), dtype="int64")
    b = mx.nd.ones((2,), dtype="float16")
    p = str(tmp_path / "x.params")
    mx.nd.save(p, {"a": a, "b": b})
    d = mx.nd.load(p)
    np.testing.assert_array_equal(d["a"].asnumpy(), a.asnumpy())
    assert d["b"].dtype == np.float16
    mx.nd.save(p, [a[1:3]])
    np.testing.assert_array_equal(mx.nd.load(p)[0].asnumpy(), a.asnumpy()[1:3])
    raw = open(p, "rb").read()
    open(p, "wb").write(raw[:-5])
    with pytest.raises(IOError, match="offset"):
        mx.nd.load(p)
    with pytest.raises(IOError):
        mx.nd.load(str(tmp_path / "missing.params"))
    with pytest.raises(TypeError):
        mx.nd.save(p, {"a": np.ones(3)})
    with pytest.raises(mx.MXNetError):
        mx.nd.load(os.path.join(GOLDEN, "nd_sparse.params"))


@pytest.mark.parametrize("fname", ["nd_list.params", "nd_dict.params", "nd_single.params", "nd_empty_list.params"])
def test_load_frombuffer_reads_mxnet_files(fname):
    _, arrays = _expected_arrays(fname)
    raw = open(os.path.join(GOLDEN, fname), "rb").read()
    for buf in (raw, bytearray(raw), memoryview(raw)):
        got = mx.nd.load_frombuffer(buf)
        want = mx.nd.load(os.path.join(GOLDEN, fname))
        assert type(got) is type(want)
        got = list(got.values()) if isinstance(got, dict) else got
        assert len(got) == len(arrays)
        for g, (_, ref) in zip(got, arrays):
            assert g.dtype == ref.dtype.type and g.asnumpy().tobytes() == ref.tobytes()


def test_load_frombuffer_errors():
    raw = open(os.path.join(GOLDEN, "nd_dict.params"), "rb").read()
    with pytest.raises(IOError, match="offset"):
        mx.nd.load_frombuffer(raw[:-5])
    with pytest.raises(IOError):
        mx.nd.load_frombuffer(b"not an ndarray file")
    with pytest.raises(TypeError, match="bytes"):
        mx.nd.load_frombuffer("nd_dict.params")
