"""The few initializers Gluon needs when ``oxnet.initializer`` is not
available: MXNet's defaults (``Uniform(0.07)`` for weights, ``'zeros'`` /
``'ones'`` by name), with MXNet's dispatch (a parameter's ``__init__``
attribute picks the initializer whose ``_init_weight`` fills it).
Used only until the full ``mx.init`` module is present."""
from __future__ import annotations

from .. import ndarray

_REGISTRY = {}


def _register(*names):
    def deco(cls):
        for n in names:
            _REGISTRY[n.lower()] = cls
        return cls

    return deco


class InitDesc(str):
    """A parameter name with its attributes (``__init__`` names its initializer)."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class: ``init(desc, arr)`` fills ``arr`` in place."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def set_verbosity(self, verbose=False, print_func=None):
        return self

    def __call__(self, desc, arr):
        init = desc.attrs.get("__init__", "") if isinstance(desc, InitDesc) else ""
        if init:
            create(init)._init_weight(desc, arr)
            return
        name = str(desc)
        if name.endswith("weight"):
            self._init_weight(desc, arr)
        elif name.endswith("bias") or name.endswith("beta") or name.endswith("min") or name.endswith("max"):
            arr[:] = 0.0
        elif name.endswith("gamma"):
            arr[:] = 1.0
        else:
            raise ValueError(f"Unknown initialization pattern for {name}.")

    def _init_weight(self, name, arr):
        raise NotImplementedError("Must override it")


@_register("zeros", "zero")
class Zero(Initializer):
    """Fill with 0."""

    def _init_weight(self, _, arr):
        arr[:] = 0.0


@_register("ones", "one")
class One(Initializer):
    """Fill with 1."""

    def _init_weight(self, _, arr):
        arr[:] = 1.0


@_register("constant")
class Constant(Initializer):
    """Fill with ``value``."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        if isinstance(self.value, ndarray.NDArray):
            self.value.copyto(arr)
        else:
            arr[:] = self.value


@_register("uniform")
class Uniform(Initializer):
    """Uniform in [-scale, scale] (MXNet's default scale 0.07)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        ndarray.random.uniform(-self.scale, self.scale, shape=arr.shape, dtype=arr.dtype, out=arr)


@_register("normal")
class Normal(Initializer):
    """Normal with mean 0 and standard deviation ``sigma`` (default 0.01)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        ndarray.random.normal(0, self.sigma, shape=arr.shape, dtype=arr.dtype, out=arr)


def create(init, **kwargs):
    """An Initializer from an instance or a registered name."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        cls = _REGISTRY.get(init.lower())
        if cls is None:
            raise ValueError(f"Unknown initializer '{init}' (this build knows {sorted(_REGISTRY)})")
        return cls(**kwargs)
    if isinstance(init, type) and issubclass(init, Initializer):
        return init(**kwargs)
    raise TypeError(f"init must be an Initializer or its name, got {type(init).__name__}")


@_register("xavier")
class Xavier(Initializer):
    """Xavier/Glorot: scale = sqrt(magnitude / factor) with factor the average
    ('avg'), fan-in ('in') or fan-out ('out'); uniform or gaussian."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector {name}. It requires at least 2D.")
        hw = 1.0
        for d in shape[2:]:
            hw *= d
        fan_in, fan_out = shape[1] * hw, shape[0] * hw
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}.get(self.factor_type)
        if factor is None:
            raise ValueError("Incorrect factor type")
        scale = (self.magnitude / factor) ** 0.5
        if self.rnd_type == "uniform":
            ndarray.random.uniform(-scale, scale, shape=shape, dtype=arr.dtype, out=arr)
        elif self.rnd_type == "gaussian":
            ndarray.random.normal(0, scale, shape=shape, dtype=arr.dtype, out=arr)
        else:
            raise ValueError("Unknown random type")
