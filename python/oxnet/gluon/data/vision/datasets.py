"""Vision datasets (``mx.gluon.data.vision``): MNIST, FashionMNIST, CIFAR10,
CIFAR100 read from MXNet's files in ``root``; images from RecordIO files,
folders or list files.

The files are read when present in ``root`` (no download, no hash check).
When absent, ``mx.gluon.utils.download`` fetches them from MXNet's
repository; without network access the error names the file to place where.
"""
from __future__ import annotations

import gzip
import os
import struct
import tarfile
import warnings

import numpy as np

from .... import image, ndarray as nd, recordio
from ...utils import download
from .. import dataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset",
           "ImageListDataset"]


def _repo_url(namespace, filename):
    repo = os.environ.get("MXNET_GLUON_REPO", "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    if not repo.endswith("/"):
        repo += "/"
    return "{}gluon/dataset/{}/{}".format(repo, namespace, filename)


def _local_or_download(root, namespace, name, sha1):
    path = os.path.join(root, name)
    if os.path.exists(path):
        return path
    try:
        return download(_repo_url(namespace, name), path=root, sha1_hash=sha1)
    except Exception as e:  # noqa: BLE001
        raise type(e)(
            f"{namespace} dataset: {name} is not in {os.path.abspath(root)} and could not be downloaded ({e}). "
            f"Place MXNet's file {name} (SHA-1 {sha1}) in that directory."
        ) from None


class MNIST(dataset._DownloadedDataset):
    """MNIST digits: samples (image (28, 28, 1) uint8 NDArray, label int32).

    root : directory with ``train-images-idx3-ubyte.gz`` etc. (default
    ``$MXNET_HOME/datasets/mnist``); train : bool; transform : fn(data, label).
    """

    def __init__(self, root=os.path.join(dataset._data_dir(), "datasets", "mnist"), train=True, transform=None):
        self._train = train
        self._train_data = ("train-images-idx3-ubyte.gz", "6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d")
        self._train_label = ("train-labels-idx1-ubyte.gz", "2a80914081dc54586dbdf242f9805a6b8d2a15fc")
        self._test_data = ("t10k-images-idx3-ubyte.gz", "c3a25af1f52dad7f726cce8cacb138654b760d48")
        self._test_label = ("t10k-labels-idx1-ubyte.gz", "763e7fa3757d93b0cdec073cef058b2004252c17")
        self._namespace = "mnist"
        super().__init__(root, transform)

    def _get_data(self):
        data, label = (self._train_data, self._train_label) if self._train else (self._test_data, self._test_label)
        data_file = _local_or_download(self._root, self._namespace, *data)
        label_file = _local_or_download(self._root, self._namespace, *label)
        with gzip.open(label_file, "rb") as fin:
            magic, n = struct.unpack(">II", fin.read(8))
            if magic != 2049:
                raise ValueError(f"{label_file}: not an IDX label file (magic {magic})")
            label = np.frombuffer(fin.read(), dtype=np.uint8).astype(np.int32)
        with gzip.open(data_file, "rb") as fin:
            magic, n, rows, cols = struct.unpack(">IIII", fin.read(16))
            if magic != 2051:
                raise ValueError(f"{data_file}: not an IDX image file (magic {magic})")
            data = np.frombuffer(fin.read(), dtype=np.uint8).reshape(len(label), rows, cols, 1)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = label


class FashionMNIST(MNIST):
    """Fashion-MNIST (same format as MNIST; default root ``$MXNET_HOME/datasets/fashion-mnist``)."""

    def __init__(self, root=os.path.join(dataset._data_dir(), "datasets", "fashion-mnist"), train=True,
                 transform=None):
        self._train = train
        self._train_data = ("train-images-idx3-ubyte.gz", "0cf37b0d40ed5169c6b3aba31069a9770ac9043d")
        self._train_label = ("train-labels-idx1-ubyte.gz", "236021d52f1e40852b06a4c3008d8de8aef1e40b")
        self._test_data = ("t10k-images-idx3-ubyte.gz", "626ed6a7c06dd17c0eec72fa3be1740f146a2863")
        self._test_label = ("t10k-labels-idx1-ubyte.gz", "17f9ab60e7257a1620f4ad76bbbaf857c3920701")
        self._namespace = "fashion-mnist"
        dataset._DownloadedDataset.__init__(self, root, transform)


class CIFAR10(dataset._DownloadedDataset):
    """CIFAR-10 from its binary batches (``data_batch_1.bin`` ... ``test_batch.bin``
    in ``root``): samples (image (32, 32, 3) uint8, label int32)."""

    def __init__(self, root=os.path.join(dataset._data_dir(), "datasets", "cifar10"), train=True, transform=None):
        self._train = train
        self._archive_file = ("cifar-10-binary.tar.gz", "fab780a1e191a7eda0f345501ccd62d20f7ed891")
        self._train_data = [("data_batch_1.bin", "aadd24acce27caa71bf4b10992e9e7b2d74c2540"),
                            ("data_batch_2.bin", "c0ba65cce70568cd57b4e03e9ac8d2a5367c1795"),
                            ("data_batch_3.bin", "1dd00a74ab1d17a6e7d73e185b69dbf31242f295"),
                            ("data_batch_4.bin", "aab85764eb3584312d3c7f65fd2fd016e36a258e"),
                            ("data_batch_5.bin", "26e2849e66a845b7f1e4614ae70f4889ae604628")]
        self._test_data = [("test_batch.bin", "67eb016db431130d61cd03c7ad570b013799c88c")]
        self._namespace = "cifar10"
        super().__init__(root, transform)

    def _read_batch(self, filename):
        with open(filename, "rb") as fin:
            data = np.frombuffer(fin.read(), dtype=np.uint8).reshape(-1, 3072 + 1)
        return data[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), data[:, 0].astype(np.int32)

    def _get_data(self):
        files = self._train_data if self._train else self._test_data
        if any(not os.path.exists(os.path.join(self._root, name)) for name, _ in files):
            archive = _local_or_download(self._root, self._namespace, *self._archive_file)
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    base = os.path.basename(member.name)
                    if member.isfile() and base.endswith(".bin"):
                        member.name = base
                        tar.extract(member, self._root)
        data, label = zip(*(self._read_batch(os.path.join(self._root, name)) for name, _ in files))
        data = np.concatenate(data)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100 (``train.bin`` / ``test.bin``); ``fine_label`` picks the 100
    fine classes instead of the 20 coarse ones."""

    def __init__(self, root=os.path.join(dataset._data_dir(), "datasets", "cifar100"), fine_label=False, train=True,
                 transform=None):
        self._train = train
        self._archive_file = ("cifar-100-binary.tar.gz", "a0bb982c76b83111308126cc779a992fa506b90b")
        self._train_data = [("train.bin", "e207cd2e05b73b1393c74c7f5e7bea451d63e08e")]
        self._test_data = [("test.bin", "8fb6623e830365ff53cf14adec797474f5478006")]
        self._fine_label = fine_label
        self._namespace = "cifar100"
        dataset._DownloadedDataset.__init__(self, root, transform)

    def _read_batch(self, filename):
        with open(filename, "rb") as fin:
            data = np.frombuffer(fin.read(), dtype=np.uint8).reshape(-1, 3072 + 2)
        return data[:, 2:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), \
            data[:, 0 + self._fine_label].astype(np.int32)


class ImageRecordDataset(dataset.RecordFileDataset):
    """Images in a RecordIO file: samples (decoded image (H, W, C) uint8, label).
    flag : 1 colour, 0 greyscale; transform : fn(data, label)."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        record = super().__getitem__(idx)
        header, img = recordio.unpack(record)
        if self._transform is not None:
            return self._transform(image.imdecode(img, self._flag), header.label)
        return image.imdecode(img, self._flag), header.label


class ImageFolderDataset(dataset.Dataset):
    """Images in ``root/<class>/<file>`` (.jpg, .jpeg, .png): label = index of
    the class folder in sorted order (``synsets``); ``items`` lists (path, label)."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        if not os.path.isdir(root):
            raise FileNotFoundError(f"ImageFolderDataset: {root} is not a directory")
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn("Ignoring %s, which is not a directory." % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn("Ignoring %s of type %s. Only support %s" % (filename, ext, ", ".join(self._exts)))
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(dataset.Dataset):
    """Images listed in ``imglist``: a ``.lst`` file (``index<TAB>label(s)<TAB>path``
    lines, as im2rec writes) or a list of ``[label(s), path]`` entries; paths
    are relative to ``root``. Samples (image, label); a single label is a float,
    several a float32 NumPy array."""

    def __init__(self, root=".", imglist=None, flag=1):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self.items = []
        if isinstance(imglist, str):
            with open(imglist) as fin:
                for line in fin:
                    parts = line.strip().split("\t")
                    if len(parts) < 3:
                        continue
                    labels = np.array([float(v) for v in parts[1:-1]], dtype=np.float32)
                    self.items.append((parts[-1], labels[0] if len(labels) == 1 else labels))
        elif isinstance(imglist, (list, tuple)):
            for entry in imglist:
                if len(entry) < 2:
                    raise ValueError(f"ImageListDataset: each entry must be [label(s)..., path], got {entry!r}")
                labels = np.array([float(v) for v in entry[:-1]], dtype=np.float32)
                self.items.append((entry[-1], labels[0] if len(labels) == 1 else labels))
        else:
            raise ValueError("ImageListDataset: imglist must be a .lst file name or a list of [label, path]")

    def __getitem__(self, idx):
        path, label = self.items[idx]
        return image.imread(os.path.join(self._root, path), self._flag), label

    def __len__(self):
        return len(self.items)
