"""Vision models (``mx.gluon.model_zoo.vision``) and ``get_model(name, **kwargs)``."""
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
_g = globals()
_models = {
    **{"resnet%d_v%d" % (n, v): _g["resnet%d_v%d" % (n, v)] for n in (18, 34, 50, 101, 152) for v in (1, 2)},
    **{"vgg%d" % n: _g["vgg%d" % n] for n in (11, 13, 16, 19)},
    **{"vgg%d_bn" % n: _g["vgg%d_bn" % n] for n in (11, 13, 16, 19)},
    "alexnet": _g["alexnet"],
    **{"densenet%d" % n: _g["densenet%d" % n] for n in (121, 161, 169, 201)},
    "squeezenet1.0": _g["squeezenet1_0"], "squeezenet1.1": _g["squeezenet1_1"],
    "inceptionv3": _g["inception_v3"],
    "mobilenet1.0": _g["mobilenet1_0"], "mobilenet0.75": _g["mobilenet0_75"], "mobilenet0.5": _g["mobilenet0_5"],
    "mobilenet0.25": _g["mobilenet0_25"],
    "mobilenetv2_1.0": _g["mobilenet_v2_1_0"], "mobilenetv2_0.75": _g["mobilenet_v2_0_75"],
    "mobilenetv2_0.5": _g["mobilenet_v2_0_5"], "mobilenetv2_0.25": _g["mobilenet_v2_0_25"],
}


def get_model(name, **kwargs):
    """A model by MXNet's name ('resnet18_v1', 'vgg16_bn', 'mobilenet0.5',
    'inceptionv3', ...); keyword arguments (pretrained, classes, ctx, root,
    ...) go to its constructor function."""
    name = name.lower()
    if name not in _models:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (name, "\n\t".join(sorted(_models.keys()))))
    return _models[name](**kwargs)
