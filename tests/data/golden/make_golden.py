"""Make the golden files in this folder with real Apache MXNet 1.9.1.

Run with the reference environment (not with oxnet):

    $MXNET_VENV/bin/python tests/data/golden/make_golden.py

It needs mxnet==1.9.1, numpy==1.23.5 and, for `mx.recordio.pack_img`,
opencv-python-headless==4.8.1.78. Everything is seeded, so running it again
gives the same bytes (except the pack_img JPEG, whose bytes depend on the
libjpeg inside OpenCV; its length and FNV-1a hash are recorded).

Outputs (all in this folder):
  nd_list.params      mx.nd.save of a list: every dtype, 1-D..4-D, (1,), 0-size
  nd_dict.params      mx.nd.save of a dict (names kept in insertion order)
  nd_single.params    mx.nd.save of one bare NDArray (saved as a one-element list)
  nd_empty_list.params mx.nd.save of an empty list
  nd_np.params        mx.npx.save under np-shape semantics (NDARRAY_V3 magic):
                      0-d scalar, 0-size, bool
  nd_sparse.params    row_sparse and csr arrays (storage types 1 and 2)
  mlp-symbol.json, mlp-0000.params   mx.model.save_checkpoint (arg:/aux: names)
  convnet-symbol.json                a small conv net (Convolution, BatchNorm, ...)
  gluon_dense.params  gluon HybridSequential.save_parameters
  records.rec, records.idx           MXIndexedRecordIO with pack / pack_img
  expected.json       everything a test needs, so tests never import MXNet
"""
import json
import os

import cv2
import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "..", "images")
RECORDIO_MAGIC = b"\x0a\x23\xd7\xce"  # 0xced7230a as little-endian bytes


def path(name):
    return os.path.join(HERE, name)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def jvalue(v):
    """A JSON-safe scalar: NaN/inf become strings."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        if np.isnan(f):
            return "nan"
        if np.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    return int(v)


def describe(name, a):
    """Expected description of one dense array (a NumPy array)."""
    a = np.array(a, order="C", copy=True)  # (ascontiguousarray turns 0-d into 1-d)
    return {
        "name": name,
        "dtype": str(a.dtype),
        "shape": list(a.shape),
        "values": [jvalue(v) for v in a.reshape(-1)],
        "hex": a.tobytes().hex(),
    }


def nd_arrays():
    """(name, numpy array) pairs covering dtypes and ranks."""
    rng = np.random.RandomState(1234)
    return [
        ("f32_2x3", np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0),
        ("f32_special", np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4028235e38], dtype=np.float32)),
        ("f64_4", np.array([0.1, -2.5, 1e300, 2.0 ** -1074], dtype=np.float64)),
        ("f16_2x2", np.array([[1.0, -0.5], [65504.0, 6e-8]], dtype=np.float16)),
        ("f16_special", np.array([np.inf, -np.inf, np.nan, -0.0], dtype=np.float16)),
        ("u8_3x4", np.arange(250, 262, dtype=np.int64).astype(np.uint8).reshape(3, 4)),
        ("i8_5", np.array([-128, -1, 0, 1, 127], dtype=np.int8)),
        ("i32_2x2x2", (np.arange(8, dtype=np.int32) - 4).reshape(2, 2, 2) * 1000003),
        ("i64_3", np.array([-(2 ** 62), 2 ** 53 + 1, 7], dtype=np.int64)),
        ("f32_scalarish", np.array([42.0], dtype=np.float32)),
        ("f32_zero_size", np.zeros((0,), dtype=np.float32)),
        ("i32_zero_size_2x0x3", np.zeros((2, 0, 3), dtype=np.int32)),
        ("f32_4d", rng.uniform(-1, 1, size=(2, 3, 2, 2)).astype(np.float32)),
        ("f64_1x1x1x1", np.array([[[[3.0]]]], dtype=np.float64)),
    ]


def to_nd(a):
    return mx.nd.array(a, dtype=a.dtype)


def nd_files(expected):
    arrays = nd_arrays()
    # list
    mx.nd.save(path("nd_list.params"), [to_nd(a) for _, a in arrays])
    # dict (insertion order is the order in the file)
    mx.nd.save(path("nd_dict.params"), {n: to_nd(a) for n, a in arrays})
    # a bare NDArray is saved as a one-element list
    single = np.arange(5, dtype=np.float32)
    mx.nd.save(path("nd_single.params"), to_nd(single))
    mx.nd.save(path("nd_empty_list.params"), [])

    # check that MXNet reads back what we describe
    back = mx.nd.load(path("nd_list.params"))
    assert isinstance(back, list) and len(back) == len(arrays)
    for (n, a), b in zip(arrays, back):
        assert b.asnumpy().dtype == a.dtype, n
        assert b.asnumpy().tobytes() == a.tobytes(), n
    back = mx.nd.load(path("nd_dict.params"))
    assert list(back.keys()) == [n for n, _ in arrays]

    expected["nd"] = {
        "nd_list.params": {"names": False, "magic": "v2",
                           "arrays": [describe(None, a) for _, a in arrays]},
        "nd_dict.params": {"names": True, "magic": "v2",
                           "arrays": [describe(n, a) for n, a in arrays]},
        "nd_single.params": {"names": False, "magic": "v2", "arrays": [describe(None, single)]},
        "nd_empty_list.params": {"names": False, "magic": "v2", "arrays": []},
    }

    # np-shape semantics: NDARRAY_V3 magic, 0-d arrays allowed, dims of 0 are real
    mx.npx.set_np()
    try:
        np_arrays = [
            ("scalar_f32", np.array(3.5, dtype=np.float32)),
            ("zero_size_0x2", np.zeros((0, 2), dtype=np.float32)),
            ("ones_f32_2", np.ones((2,), dtype=np.float32)),
            ("bool_4", np.array([True, False, False, True])),
            ("scalar_i64", np.array(-9, dtype=np.int64)),
        ]
        mx.npx.save(path("nd_np.params"), [mx.np.array(a, dtype=a.dtype) for _, a in np_arrays])
        back = mx.npx.load(path("nd_np.params"))
        for (n, a), b in zip(np_arrays, back):
            assert b.asnumpy().shape == a.shape and b.asnumpy().tobytes() == a.tobytes(), n
    finally:
        mx.npx.reset_np()
    expected["nd"]["nd_np.params"] = {"names": False, "magic": "v3",
                                      "arrays": [describe(None, a) for _, a in np_arrays]}

    # sparse storage (oxnet reports these as unsupported; kept to test the message)
    dense = np.array([[0, 0, 0], [1, 2, 3], [0, 0, 0], [4, 5, 6]], dtype=np.float32)
    rsp = mx.nd.array(dense).tostype("row_sparse")
    csr = mx.nd.array(dense).tostype("csr")
    mx.nd.save(path("nd_sparse.params"), {"rsp": rsp, "csr": csr})
    expected["nd_sparse"] = {
        "file": "nd_sparse.params",
        "stypes": {"rsp": 1, "csr": 2},
        "dense": describe("dense", dense),
        "rsp_indices": rsp.indices.asnumpy().tolist(),
        "csr_indptr": csr.indptr.asnumpy().tolist(),
        "csr_indices": csr.indices.asnumpy().tolist(),
    }


def mlp_symbol():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def conv_symbol():
    data = mx.sym.var("data")
    c = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv1")
    b = mx.sym.BatchNorm(c, fix_gamma=False, name="bn1")
    a = mx.sym.Activation(b, act_type="relu", name="relu1")
    p = mx.sym.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    f = mx.sym.Flatten(p, name="flatten")
    fc = mx.sym.FullyConnected(f, num_hidden=5, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def symbol_info(sym, data_shape):
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(data=data_shape)
    arg_types, out_types, aux_types = sym.infer_type(data="float32")
    return {
        "arguments": sym.list_arguments(),
        "outputs": sym.list_outputs(),
        "auxiliary_states": sym.list_auxiliary_states(),
        "data_shape": list(data_shape),
        "arg_shapes": [list(s) for s in arg_shapes],
        "out_shapes": [list(s) for s in out_shapes],
        "aux_shapes": [list(s) for s in aux_shapes],
        "arg_types": [np.dtype(t).name for t in arg_types],
        "out_types": [np.dtype(t).name for t in out_types],
        "aux_types": [np.dtype(t).name for t in aux_types],
    }


def symbol_files(expected):
    rng = np.random.RandomState(7)
    mlp = mlp_symbol()
    info = symbol_info(mlp, (2, 4))
    arg_params = {}
    for n, s in zip(info["arguments"], info["arg_shapes"]):
        if n in ("data", "softmax_label"):
            continue
        arg_params[n] = mx.nd.array(rng.uniform(-1, 1, size=s).astype(np.float32))
    mx.model.save_checkpoint(path("mlp"), 0, mlp, arg_params, {})
    x = rng.uniform(-1, 1, size=(2, 4)).astype(np.float32)
    exe = mlp.bind(mx.cpu(), args=dict(arg_params, data=mx.nd.array(x),
                                       softmax_label=mx.nd.zeros((2,))), grad_req="null")
    out = exe.forward(is_train=False)[0].asnumpy()
    saved = mx.nd.load(path("mlp-0000.params"))
    info["symbol_file"] = "mlp-symbol.json"
    info["params_file"] = "mlp-0000.params"
    info["params"] = [describe(k, v.asnumpy()) for k, v in saved.items()]
    info["forward_input"] = describe("data", x)
    info["forward_output"] = describe("softmax_output", out)
    expected["symbols"] = {"mlp": info}

    conv = conv_symbol()
    with open(path("convnet-symbol.json"), "w") as f:
        f.write(conv.tojson())
    cinfo = symbol_info(conv, (2, 3, 8, 8))
    cinfo["symbol_file"] = "convnet-symbol.json"
    expected["symbols"]["convnet"] = cinfo
    # tojson is stable: the file must equal what MXNet writes now
    assert mx.sym.load(path("convnet-symbol.json")).tojson() == conv.tojson()


def gluon_file(expected):
    mx.random.seed(11)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=4, activation="relu"))
    net.add(mx.gluon.nn.BatchNorm(in_channels=3))
    net.add(mx.gluon.nn.Dense(2, in_units=3))
    net.initialize(mx.init.Uniform(0.5))
    net.save_parameters(path("gluon_dense.params"))
    saved = mx.nd.load(path("gluon_dense.params"))
    expected["gluon"] = {
        "file": "gluon_dense.params",
        "params": [describe(k, v.asnumpy()) for k, v in saved.items()],
    }


def record_files(expected):
    rec, idx = path("records.rec"), path("records.idx")
    for p in (rec, idx):
        if os.path.exists(p):
            os.remove(p)
    jpg_path = os.path.join(IMAGES, "chelsea_160x107_thumb.jpg")
    with open(jpg_path, "rb") as f:
        jpg = f.read()
    img = cv2.imread(jpg_path, cv2.IMREAD_COLOR)  # BGR, 107x160x3
    crop = np.ascontiguousarray(img[40:46, 60:68])  # 6x8x3, stored losslessly as PNG

    IR = mx.recordio.IRHeader
    records = [
        # (key, header, payload bytes or None for pack_img, kind)
        (0, IR(0, 3.0, 100, 0), b"hello recordio", "pack"),
        (1, IR(0, [1.5, -2.0, 3.25], 101, 7), b"array label", "pack"),
        # magic at an aligned record offset (24-byte header + 0) -> split record
        (2, IR(0, 1.0, 102, 0), RECORDIO_MAGIC + b"after-magic", "pack"),
        # magic twice, aligned, back to back, plus at the very end
        (3, IR(0, 2.0, 103, 0), b"abcd" + RECORDIO_MAGIC + RECORDIO_MAGIC + b"wxyz" + RECORDIO_MAGIC, "pack"),
        # magic at an unaligned offset -> not split
        (4, IR(0, 4.0, 104, 0), b"x" + RECORDIO_MAGIC + b"yz", "pack"),
        # array label whose length puts the magic at an aligned offset after the label
        (5, IR(0, [0.0, 1.0], 105, 0), RECORDIO_MAGIC, "pack"),
        (6, IR(0, 0.0, 106, 0), b"", "pack"),
        # the JPEG file bytes unchanged (im2rec --pass-through style)
        (7, IR(0, 1.0, 107, 0), jpg, "pack"),
        # pack_img re-encodes: JPEG quality 95 and a lossless PNG of a small crop
        (8, IR(0, 1.0, 108, 0), ("jpg", img), "pack_img"),
        (10, IR(0, [1.0, 2.0], 110, 0), ("png", crop), "pack_img"),
    ]
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    packed = {}
    for key, header, payload, kind in records:
        if kind == "pack":
            s = mx.recordio.pack(header, payload)
        else:
            fmt, image = payload
            if fmt == "jpg":
                s = mx.recordio.pack_img(header, image, quality=95, img_fmt=".jpg")
            else:
                s = mx.recordio.pack_img(header, image, quality=3, img_fmt=".png")
        packed[key] = s
        w.write_idx(key, s)
    w.close()

    r = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    out = []
    for key, header, payload, kind in records:
        s = r.read_idx(key)
        assert s == packed[key]
        h, body = mx.recordio.unpack(s)
        label = h.label
        entry = {
            "key": key,
            "kind": kind,
            "offset": r.idx[key],
            "flag": int(h.flag),
            "label": [float(v) for v in label] if h.flag > 0 else float(label),
            "id": int(h.id),
            "id2": int(h.id2),
            "record_len": len(s),
            "record_fnv1a64": fnv1a64(s),
            "payload_len": len(body),
            "payload_fnv1a64": fnv1a64(body),
        }
        if kind == "pack" and key != 7:
            entry["payload_hex"] = body.hex()
        if key == 7:
            entry["payload_equals_file"] = "../images/chelsea_160x107_thumb.jpg"
            assert body == jpg
        if kind == "pack_img":
            h2, decoded = mx.recordio.unpack_img(s, cv2.IMREAD_COLOR)  # BGR
            entry["image_format"] = payload[0]
            entry["decoded_shape_hwc"] = list(decoded.shape)
            entry["decoded_channel_order"] = "BGR"
            if payload[0] == "png":
                assert np.array_equal(decoded, crop)
                entry["decoded_bgr"] = decoded.reshape(-1).tolist()
            else:
                entry["decoded_mean_bgr"] = [float(decoded[..., c].mean()) for c in range(3)]
        out.append(entry)
    # sequential read order equals write order
    r.reset()
    seq = []
    while True:
        s = r.read()
        if s is None:
            break
        seq.append(s)
    assert seq == [packed[k] for k, _, _, _ in records]
    r.close()
    with open(idx) as f:
        idx_text = f.read()
    expected["recordio"] = {
        "rec_file": "records.rec",
        "idx_file": "records.idx",
        "idx_text": idx_text,
        "magic_le_u32": 0xCED7230A,
        "records": out,
    }


def main():
    np.random.seed(0)
    mx.random.seed(0)
    expected = {"mxnet_version": mx.__version__, "numpy_version": np.__version__}
    nd_files(expected)
    symbol_files(expected)
    gluon_file(expected)
    record_files(expected)
    with open(path("expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
