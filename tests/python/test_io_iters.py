"""mx.io.MNISTIter and mx.io.CSVIter (parsed in Rust) against MXNet 1.9.1's
batches, pads and shapes, plus their error messages. MNIST data: the 500
real digits under tests/data/mnist/ (see its README)."""
import gzip
import os
import struct

import numpy as np
import pytest

import oxnet as mx

MNIST = os.path.join(os.path.dirname(__file__), "..", "data", "mnist")
IMAGES = os.path.join(MNIST, "digits-images-idx3-ubyte.gz")
LABELS = os.path.join(MNIST, "digits-labels-idx1-ubyte.gz")


def _numpy_mnist():
    img = gzip.open(IMAGES).read()
    lab = gzip.open(LABELS).read()
    n = struct.unpack(">I", img[4:8])[0]
    return np.frombuffer(img[16:], np.uint8).reshape(n, 28, 28), np.frombuffer(lab[8:], np.uint8)


def _mnist(**kw):
    args = dict(image=IMAGES, label=LABELS, silent=True)
    args.update(kw)
    return mx.io.MNISTIter(**args)


def test_mnist_batches_are_pixels_over_256():
    images, labels = _numpy_mnist()
    it = _mnist(batch_size=128, shuffle=False)
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (128, 1, 28, 28)
    assert it.provide_label[0].name == "softmax_label" and it.provide_label[0].shape == (128,)
    batches = list(it)
    assert len(batches) == 3  # 500 // 128: the last incomplete batch is dropped (as MXNet)
    for k, b in enumerate(batches):
        assert b.pad == 0
        np.testing.assert_array_equal(b.data[0].asnumpy()[:, 0], images[128 * k:128 * (k + 1)] / np.float32(256))
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[128 * k:128 * (k + 1)])
    assert batches[0].data[0].asnumpy().max() == pytest.approx(255 / 256)  # MXNet 1.9.1: 0.99609375
    it.reset()
    assert len(list(it)) == 3


def test_mnist_flat_parts_and_plain_files(tmp_path):
    images, labels = _numpy_mnist()
    plain_i, plain_l = tmp_path / "img", tmp_path / "lab"
    plain_i.write_bytes(gzip.open(IMAGES).read())
    plain_l.write_bytes(gzip.open(LABELS).read())
    it = mx.io.MNISTIter(image=str(plain_i), label=str(plain_l), batch_size=50, flat=True, shuffle=False,
                         num_parts=3, part_index=1, silent=True)
    assert it.provide_data[0].shape == (50, 784)
    batches = list(it)
    # part 1 of 3 of 500 digits is [166, 333) (MXNet's split): 167 digits, 3 full batches
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), images[166:216].reshape(50, 784) / np.float32(256))
    np.testing.assert_array_equal(batches[2].label[0].asnumpy(), labels[266:316])


def test_mnist_shuffle_is_seeded_and_kept_across_epochs():
    _, labels = _numpy_mnist()

    def order(seed):
        it = _mnist(batch_size=100, shuffle=True, seed=seed)
        first = np.concatenate([b.label[0].asnumpy() for b in it])
        it.reset()
        again = np.concatenate([b.label[0].asnumpy() for b in it])
        np.testing.assert_array_equal(first, again)
        return first

    a, b, c = order(1), order(1), order(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, labels)
    np.testing.assert_array_equal(np.sort(a), np.sort(labels))


def _idx(path, magic, dims, payload):
    with open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload)
    return str(path)


def test_mnist_bad_files_are_named(tmp_path):
    good_l = _idx(tmp_path / "l", 2049, [2], b"\x01\x02")
    truncated = _idx(tmp_path / "trunc", 2051, [2, 3, 3], bytes(17))
    with pytest.raises(ValueError, match="trunc: truncated: the header says 2 images of 3x3"):
        mx.io.MNISTIter(image=truncated, label=good_l, batch_size=1, silent=True)
    swapped = _idx(tmp_path / "swap", 2049, [2], b"\x01\x02")
    with pytest.raises(ValueError, match="swap: magic number 2049 is not MNIST's image magic 2051"):
        mx.io.MNISTIter(image=swapped, label=good_l, batch_size=1, silent=True)
    img = _idx(tmp_path / "i", 2051, [3, 2, 2], bytes(12))
    with pytest.raises(ValueError, match="holds 3 images but .* holds 2 labels"):
        mx.io.MNISTIter(image=img, label=good_l, batch_size=1, silent=True)
    with pytest.raises(IOError, match="nowhere"):
        mx.io.MNISTIter(image=str(tmp_path / "nowhere"), label=good_l, silent=True)
    with pytest.raises(ValueError, match="part_index 3"):
        _mnist(num_parts=3, part_index=3)
    bad_gz = tmp_path / "bad.gz"
    bad_gz.write_bytes(b"\x1f\x8b" + bytes(20))
    with pytest.raises(ValueError, match="bad.gz: not a valid gzip file"):
        mx.io.MNISTIter(image=str(bad_gz), label=good_l, silent=True)


@pytest.fixture
def csvs(tmp_path):
    d = np.arange(7 * 6).reshape(7, 6)
    np.savetxt(tmp_path / "d.csv", d, delimiter=",", fmt="%d")
    np.savetxt(tmp_path / "l.csv", np.arange(7), delimiter=",", fmt="%d")
    return tmp_path


def _epochs(it, n=3):
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy()[:, 0, 0].tolist(), b.label[0].asnumpy().tolist(), b.pad) for b in it])
        it.reset()
    return out


def test_csv_round_batch_matches_mxnet(csvs):
    it = mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(2, 3), label_csv=str(csvs / "l.csv"), batch_size=3)
    assert it.provide_data[0].shape == (3, 2, 3) and it.provide_label[0].shape == (3,)
    # printed by MXNet 1.9.1 for the same files
    assert _epochs(it) == [
        [([0.0, 6.0, 12.0], [0.0, 1.0, 2.0], 0), ([18.0, 24.0, 30.0], [3.0, 4.0, 5.0], 0),
         ([36.0, 0.0, 6.0], [6.0, 0.0, 1.0], 2)],
        [([12.0, 18.0, 24.0], [2.0, 3.0, 4.0], 0), ([30.0, 36.0, 0.0], [5.0, 6.0, 0.0], 1)],
        [([6.0, 12.0, 18.0], [1.0, 2.0, 3.0], 0), ([24.0, 30.0, 36.0], [4.0, 5.0, 6.0], 0)],
    ]


def test_csv_without_round_batch_matches_mxnet(csvs):
    it = mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(2, 3), label_csv=str(csvs / "l.csv"), batch_size=3,
                       round_batch=False)
    epoch = [([0.0, 6.0, 12.0], [0.0, 1.0, 2.0], 0), ([18.0, 24.0, 30.0], [3.0, 4.0, 5.0], 0),
             ([36.0, 24.0, 30.0], [6.0, 4.0, 5.0], 2)]
    assert _epochs(it) == [epoch] * 3


def test_csv_labels_shapes_and_parsing(csvs):
    it = mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(6,), batch_size=4)
    b = next(it)
    assert b.label[0].shape == (4,) and (b.label[0].asnumpy() == 0).all()
    it = mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(6,), label_csv=str(csvs / "d.csv"),
                       label_shape=(2, 3), batch_size=4)
    assert it.provide_label[0].shape == (4, 2, 3) and next(it).label[0].shape == (4, 2, 3)
    assert [(b.data[0].shape, b.pad) for b in mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(6,),
                                                             batch_size=10)] == [((10, 6), 3)]
    (csvs / "sp.csv").write_text("1.5, 2e3 ,-3\n\n4,5,6\r\n")
    b = next(mx.io.CSVIter(data_csv=str(csvs / "sp.csv"), data_shape=(3,), batch_size=2))
    assert b.data[0].asnumpy().tolist() == [[1.5, 2000.0, -3.0], [4.0, 5.0, 6.0]]


def test_csv_bad_rows_name_file_and_line(csvs):
    (csvs / "bad.csv").write_text("1,2,3\n4,5,6\n\n7,8\n")
    with pytest.raises(ValueError, match=r"bad\.csv, line 4: 2 fields, but the shape needs 3 per line"):
        mx.io.CSVIter(data_csv=str(csvs / "bad.csv"), data_shape=(3,), batch_size=2)
    (csvs / "nan.csv").write_text("1,2,3\n4,five,6\n")
    with pytest.raises(ValueError, match=r"nan\.csv, line 2: field 2 \(\"five\"\) is not a number"):
        mx.io.CSVIter(data_csv=str(csvs / "nan.csv"), data_shape=(3,), batch_size=2)
    with pytest.raises(ValueError, match="data_csv has 7 rows but label_csv has 2"):
        (csvs / "short.csv").write_text("1\n2\n")
        mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(6,), label_csv=str(csvs / "short.csv"), batch_size=2)
    with pytest.raises(IOError, match="missing.csv"):
        mx.io.CSVIter(data_csv=str(csvs / "missing.csv"), data_shape=(3,))
    with pytest.raises(ValueError, match="data_shape"):
        mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(0,))
    with pytest.raises(mx.MXNetError, match="float32 only"):
        mx.io.CSVIter(data_csv=str(csvs / "d.csv"), data_shape=(6,), dtype="int64")
    it = mx.io.CSVIter(data_csv=str(csvs / "short.csv"), data_shape=(1,), batch_size=5)
    with pytest.raises(ValueError, match="round_batch cannot fill a batch of 5 from 2 rows"):
        next(it)


def test_csv_large_file_in_order(tmp_path):
    rows = np.arange(30000 * 4, dtype=np.float32).reshape(30000, 4) / 8
    np.savetxt(tmp_path / "big.csv", rows, delimiter=",", fmt="%.3f")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "big.csv"), data_shape=(4,), batch_size=1000)
    got = np.concatenate([b.data[0].asnumpy() for b in it])
    np.testing.assert_array_equal(got, rows)


def test_iters_drive_a_prefetching_iter():
    it = mx.io.PrefetchingIter(_mnist(batch_size=100, shuffle=False))
    assert len(list(it)) == 5
