"""gluon.model_zoo.vision: every architecture's Parameters (structural names
and shapes after the first forward) equal MXNet 1.9.1's; tiny ResNets load
MXNet's parameter files and reproduce its outputs; pretrained files."""
import gzip
import json
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.model_zoo import vision

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "gluon_zoo")
# input sizes used when MXNet 1.9.1 recorded structure.json.gz (classes=10)
SIZES = {"resnet18_v1": 64, "resnet50_v2": 64, "vgg11_bn": 64, "alexnet": 96, "densenet121": 224,
         "squeezenet1.0": 224, "squeezenet1.1": 224, "inceptionv3": 299, "mobilenet0.25": 64, "mobilenetv2_0.25": 64}


def _structure(net):
    return sorted([k, list(v.shape)] for k, v in net._collect_params_with_prefix().items())


@pytest.mark.parametrize("name", ["resnet18_v1", "resnet50_v2", "vgg11_bn", "alexnet", "squeezenet1.1",
                                  "mobilenet0.25", "mobilenetv2_0.25"])
def test_structure_matches_mxnet(name):
    with gzip.open(os.path.join(DATA, "structure.json.gz"), "rt") as f:
        golden = json.load(f)[name]
    net = vision.get_model(name, classes=10)
    net.initialize()
    size = SIZES[name]
    out = net(mx.nd.ones((1, 3, size, size)))
    assert out.shape == (1, 10)
    assert _structure(net) == golden


@pytest.mark.parametrize("name", ["densenet121", "inceptionv3", "squeezenet1.0"])
def test_structure_big_models_without_forward(name):
    # shapes known before a forward pass must agree; inferred (0) dims are skipped
    with gzip.open(os.path.join(DATA, "structure.json.gz"), "rt") as f:
        golden = dict((k, v) for k, v in json.load(f)[name])
    net = vision.get_model(name, classes=10)
    ours = {k: list(v.shape) for k, v in net._collect_params_with_prefix().items()}
    assert sorted(ours) == sorted(golden)
    for k, shape in ours.items():
        assert all(a in (0, b) for a, b in zip(shape, golden[k])), k


def test_every_name_builds():
    names = ["resnet%d_v%d" % (n, v) for n in (18, 34, 50, 101, 152) for v in (1, 2)] + \
        ["vgg%d%s" % (n, s) for n in (11, 13, 16, 19) for s in ("", "_bn")] + \
        ["alexnet", "densenet121", "densenet161", "densenet169", "densenet201", "squeezenet1.0", "squeezenet1.1",
         "inceptionv3", "mobilenet1.0", "mobilenet0.75", "mobilenet0.5", "mobilenet0.25", "mobilenetv2_1.0",
         "mobilenetv2_0.75", "mobilenetv2_0.5", "mobilenetv2_0.25"]
    for n in names:
        assert isinstance(vision.get_model(n), mx.gluon.HybridBlock), n
    with pytest.raises(ValueError, match="not supported"):
        vision.get_model("resnet19_v1")


@pytest.mark.parametrize("name", ["tiny_resnet_v1", "tiny_resnet_v2"])
def test_tiny_resnets_reproduce_mxnet(name):
    if name == "tiny_resnet_v1":
        net = vision.ResNetV1(vision.BasicBlockV1, [1, 1], [4, 4, 8], classes=3, thumbnail=True)
    else:
        net = vision.ResNetV2(vision.BottleneckV2, [1, 1], [4, 8, 16], classes=3)
    net.load_parameters(os.path.join(DATA, name + ".params"))
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 16, 16).astype("float32"))
    expected = np.load(os.path.join(DATA, name + "_out.npy"))
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-4, atol=1e-6)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-4, atol=1e-6)


def test_pretrained_file_present_or_clear_error(tmp_path):
    from oxnet.gluon.model_zoo import model_store

    with pytest.raises(mx.MXNetError, match="Place MXNet's file squeezenet1.1-33ba0f93.params"):
        vision.get_model("squeezenet1.1", pretrained=True, root=str(tmp_path))
    # a file with the right name but the wrong content is refused
    bad = tmp_path / "squeezenet1.1-33ba0f93.params"
    bad.write_bytes(b"not the file")
    with pytest.raises(mx.MXNetError, match="SHA-1"):
        vision.get_model("squeezenet1.1", pretrained=True, root=str(tmp_path))
    # a present file with the right hash is loaded (hash table patched for a small file)
    net = vision.ResNetV1(vision.BasicBlockV1, [1, 1], [4, 4, 8], classes=3, thumbnail=True)
    src = os.path.join(DATA, "tiny_resnet_v1.params")
    import hashlib

    digest = hashlib.sha1(open(src, "rb").read()).hexdigest()
    old = model_store._model_sha1.get("resnet18_v1")
    model_store._model_sha1["resnet18_v1"] = digest
    try:
        dst = tmp_path / ("resnet18_v1-%s.params" % digest[:8])
        dst.write_bytes(open(src, "rb").read())
        assert model_store.get_model_file("resnet18_v1", root=str(tmp_path)) == str(dst)
    finally:
        model_store._model_sha1["resnet18_v1"] = old
    assert net is not None
