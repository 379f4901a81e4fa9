"""gluon.data: datasets, samplers, DataLoader (in process, worker processes,
threads), vision datasets on local files and transforms."""
import gzip
import os
import struct

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from oxnet.gluon.data import vision
from oxnet.gluon.data.vision import transforms

MNIST_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data", "mnist")


def test_array_dataset_and_ops():
    x = np.arange(20).reshape(10, 2).astype("float32")
    y = np.arange(10)
    ds = gluon.data.ArrayDataset(x, mx.nd.array(y))
    assert len(ds) == 10
    a, b = ds[3]
    np.testing.assert_array_equal(a, [6, 7])
    assert b == 3
    with pytest.raises(AssertionError, match="same length"):
        gluon.data.ArrayDataset(x, y[:5])
    single = gluon.data.ArrayDataset(x)
    np.testing.assert_array_equal(single[1], [2, 3])
    t = ds.transform(lambda d, l: (d * 2, l + 1))
    np.testing.assert_array_equal(t[1][0], [4, 6])
    assert t[1][1] == 2
    tf = ds.transform_first(lambda d: d.sum(), lazy=False)
    assert isinstance(tf, gluon.data.SimpleDataset) and tf[2] == (9.0, 2)
    f = ds.filter(lambda s: s[1] % 3 == 0)
    assert [s[1] for s in f] == [0, 3, 6, 9]
    assert [s[1] for s in ds.take(3)] == [0, 1, 2]
    assert len(ds.take(None)) == 10
    shards = [ds.shard(3, i) for i in range(3)]
    assert [len(s) for s in shards] == [4, 3, 3]
    assert [s[1] for s in shards[1]] == [4, 5, 6]
    smp = ds.sample(gluon.data.SequentialSampler(3, 5))
    assert [s[1] for s in smp] == [5, 6, 7]
    with pytest.raises(TypeError):
        ds.sample([1, 2])


def test_samplers():
    assert list(gluon.data.SequentialSampler(4, 2)) == [2, 3, 4, 5]
    np.random.seed(0)
    r = list(gluon.data.RandomSampler(10))
    assert sorted(r) == list(range(10)) and r != list(range(10))
    bs = gluon.data.BatchSampler(gluon.data.SequentialSampler(10), 3, "keep")
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = gluon.data.BatchSampler(gluon.data.SequentialSampler(10), 3, "discard")
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3
    bs = gluon.data.BatchSampler(gluon.data.SequentialSampler(10), 3, "rollover")
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(bs) == 3
    assert list(bs) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    with pytest.raises(ValueError):
        gluon.data.BatchSampler(gluon.data.SequentialSampler(10), 3, "sometimes")
    fs = gluon.data.FilterSampler(lambda s: s > 2, [1, 5, 2, 7])
    assert list(fs) == [1, 3] and len(fs) == 2


def _dataset():
    x = np.random.RandomState(0).rand(23, 3).astype("float32")
    return x, gluon.data.ArrayDataset(x, np.arange(23).astype("int32"))


@pytest.mark.parametrize("kwargs", [{}, {"num_workers": 2}, {"num_workers": 2, "thread_pool": True},
                                    {"num_workers": 1, "prefetch": 0}, {"pin_memory": True}])
def test_dataloader_modes_same_batches(kwargs):
    x, ds = _dataset()
    loader = gluon.data.DataLoader(ds, batch_size=5, **kwargs)
    batches = list(loader)
    assert len(loader) == 5 and len(batches) == 5
    data = np.concatenate([b[0].asnumpy() for b in batches])
    labels = np.concatenate([b[1].asnumpy() for b in batches])
    np.testing.assert_array_equal(data, x)
    np.testing.assert_array_equal(labels, np.arange(23))
    assert batches[0][1].dtype == np.int32
    # a second epoch works too
    assert len(list(loader)) == 5


def test_dataloader_last_batch_shuffle_and_batchify():
    x, ds = _dataset()
    assert [b[0].shape[0] for b in gluon.data.DataLoader(ds, 5, last_batch="discard")] == [5] * 4
    loader = gluon.data.DataLoader(ds, 5, last_batch="rollover")
    assert [b[0].shape[0] for b in loader] == [5] * 4
    assert [b[0].shape[0] for b in loader] == [5] * 5  # 3 rolled over + 23 = 26
    np.random.seed(1)
    labels = np.concatenate([b[1].asnumpy() for b in gluon.data.DataLoader(ds, 5, shuffle=True)])
    assert sorted(labels) == list(range(23)) and list(labels) != list(range(23))
    out = list(gluon.data.DataLoader(ds, 4, batchify_fn=lambda samples: len(samples)))
    assert out == [4, 4, 4, 4, 4, 3]
    with pytest.raises(ValueError, match="batch_size must be specified"):
        gluon.data.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        gluon.data.DataLoader(ds, 2, shuffle=True, sampler=gluon.data.SequentialSampler(23))
    bsamp = gluon.data.BatchSampler(gluon.data.SequentialSampler(23), 10)
    assert [b[0].shape[0] for b in gluon.data.DataLoader(ds, batch_sampler=bsamp)] == [10, 10, 3]
    with pytest.raises(ValueError, match="must not be specified"):
        gluon.data.DataLoader(ds, 2, batch_sampler=bsamp)


def test_dataloader_ndarray_samples_in_workers():
    ds = gluon.data.SimpleDataset([mx.nd.ones((2, 2)) * i for i in range(6)])
    for kw in ({}, {"num_workers": 2}):
        b = list(gluon.data.DataLoader(ds, batch_size=3, **kw))
        assert b[1].shape == (3, 2, 2)
        np.testing.assert_array_equal(b[1].asnumpy()[:, 0, 0], [3, 4, 5])


def test_mnist_local_files_and_missing_root(tmp_path):
    train = vision.MNIST(MNIST_DIR, train=True)
    test = vision.MNIST(MNIST_DIR, train=False)
    img, label = test[0]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert isinstance(label, (int, np.integer))
    assert len(train) > len(test) > 0
    with pytest.raises(Exception, match="Place MXNet's file"):
        vision.MNIST(str(tmp_path / "nothing"), train=False)


def test_fashion_mnist_reads_idx_files(tmp_path):
    # a tiny IDX pair written here in MNIST's format
    imgs = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    with gzip.open(str(tmp_path / "t10k-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, 2, 28, 28) + imgs.tobytes())
    with gzip.open(str(tmp_path / "t10k-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 2049, 2) + bytes([7, 3]))
    ds = vision.FashionMNIST(str(tmp_path), train=False, transform=lambda d, l: (d.astype("float32"), l * 10))
    assert len(ds) == 2
    d, l = ds[1]
    assert l == 30 and d.dtype == np.float32
    np.testing.assert_array_equal(d.asnumpy()[:, :, 0], imgs[1])


def test_cifar10_binary_batches(tmp_path):
    rng = np.random.RandomState(0)
    rows = np.concatenate([rng.randint(0, 10, (4, 1)), rng.randint(0, 256, (4, 3072))], axis=1).astype(np.uint8)
    rows.tofile(str(tmp_path / "test_batch.bin"))
    ds = vision.CIFAR10(str(tmp_path), train=False)
    img, label = ds[2]
    assert img.shape == (32, 32, 3) and label == rows[2, 0]
    np.testing.assert_array_equal(img.asnumpy()[:, :, 1].ravel(), rows[2, 1 + 1024:1 + 2048])


def _write_images(root):
    for cls in ("cat", "dog"):
        os.makedirs(os.path.join(root, cls))
        for i in range(2):
            arr = np.full((6, 8, 3), 40 * i + (100 if cls == "dog" else 0), dtype=np.uint8)
            buf = mx.image.imencode(arr, ".png") if hasattr(mx.image, "imencode") else None
            path = os.path.join(root, cls, "%d.png" % i)
            if buf is None:
                import zlib

                raw = b"".join(b"\x00" + arr[r].tobytes() for r in range(arr.shape[0]))

                def chunk(t, d):
                    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

                png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 6, 8, 2, 0, 0, 0)) + \
                    chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
                with open(path, "wb") as f:
                    f.write(png)
            else:
                with open(path, "wb") as f:
                    f.write(bytes(buf))


def test_image_folder_and_list_datasets(tmp_path):
    root = str(tmp_path / "imgs")
    _write_images(root)
    ds = vision.ImageFolderDataset(root)
    assert ds.synsets == ["cat", "dog"] and len(ds) == 4
    img, label = ds[3]
    assert img.shape == (6, 8, 3) and label == 1
    assert int(img.asnumpy()[0, 0, 0]) == 140
    lst = str(tmp_path / "imgs.lst")
    with open(lst, "w") as f:
        f.write("0\t1\tdog/1.png\n1\t0\tcat/0.png\n")
    ld = vision.ImageListDataset(root, lst)
    assert len(ld) == 2 and ld[0][1] == 1.0 and ld[0][0].shape == (6, 8, 3)
    ld2 = vision.ImageListDataset(root, [[0, "cat/1.png"], [1, 2, "dog/0.png"]])
    assert ld2[1][1].tolist() == [1.0, 2.0]


def test_transforms():
    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (6, 8, 3)), dtype="uint8")
    t = transforms.ToTensor()(img)
    assert t.shape == (3, 6, 8) and t.dtype == np.float32
    np.testing.assert_allclose(t.asnumpy(), img.asnumpy().transpose(2, 0, 1) / 255.0, rtol=1e-6)
    n = transforms.Normalize((0.5, 0.4, 0.3), (0.2, 0.2, 0.1))(t)
    np.testing.assert_allclose(n.asnumpy()[1], (t.asnumpy()[1] - 0.4) / 0.2, rtol=1e-5)
    comp = transforms.Compose([transforms.Resize((4, 3)), transforms.ToTensor(), transforms.Normalize(0.5, 0.5)])
    assert comp(img).shape == (3, 3, 4)
    assert transforms.Cast("float16")(img).dtype == np.float16
    assert transforms.CenterCrop(4)(img).shape == (4, 4, 3)
    assert transforms.CropResize(1, 1, 4, 3)(img).shape == (3, 4, 3)
    assert transforms.CropResize(1, 1, 4, 3, size=(2, 2))(img).shape == (2, 2, 3)
    assert transforms.RandomResizedCrop(5)(img).shape == (5, 5, 3)
    flipped = transforms.RandomFlipLeftRight()(img).asnumpy()
    assert np.array_equal(flipped, img.asnumpy()) or np.array_equal(flipped, img.asnumpy()[:, ::-1])
    for tr in (transforms.RandomBrightness(0.3), transforms.RandomContrast(0.3), transforms.RandomSaturation(0.3),
               transforms.RandomHue(0.1), transforms.RandomColorJitter(0.1, 0.1, 0.1, 0.1),
               transforms.RandomLighting(0.1), transforms.RandomFlipTopBottom()):
        assert tr(t.transpose((1, 2, 0))).shape == (6, 8, 3)
    assert transforms.RandomApply(transforms.Cast("float64"), p=1.0)(img).dtype == np.float64
    assert transforms.RandomApply(transforms.Cast("float64"), p=0.0)(img).dtype == np.uint8
    with pytest.raises(TypeError, match="float32"):
        transforms.RandomRotation((-10, 10))(img)
    assert transforms.RandomRotation((-10, 10))(t).shape == t.shape
    with pytest.raises(ValueError):
        transforms.RandomRotation((10, -10))


def test_dataloader_auto_reload_prefetches():
    seen = []

    def fn(x):
        seen.append(x)
        return x

    ds = gluon.data.SimpleDataset(list(range(4))).transform(fn)
    lazy = gluon.data.DataLoader(ds, batch_size=2, num_workers=1, thread_pool=True, auto_reload=False)
    assert seen == []
    assert [b.asnumpy().tolist() for b in lazy] == [[0, 1], [2, 3]]
    eager = gluon.data.DataLoader(ds, batch_size=2, num_workers=1, thread_pool=True, prefetch=1, auto_reload=True)
    assert eager._iter is not None  # prefetching since construction
    assert [b.asnumpy().tolist() for b in eager] == [[0, 1], [2, 3]]
    assert eager._iter is not None  # the next pass is already prefetching
    assert [b.asnumpy().tolist() for b in eager] == [[0, 1], [2, 3]]
