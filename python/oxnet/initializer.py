"""Weight initializers (``mx.initializer``, alias ``mx.init``), MXNet 1.9.1's
classes, names and defaults.

An initializer is called as ``init(desc, arr)``: ``desc`` is an
:class:`InitDesc` (the parameter's name plus attributes) and ``arr`` the
NDArray to fill in place. The name picks the rule: ``*weight`` gets the
initializer's own distribution, ``*bias`` / ``*beta`` / ``*min`` zero,
``*gamma`` / ``*max`` one; an ``__init__`` attribute (an initializer's
:meth:`Initializer.dumps` JSON) overrides it. Random draws come from oxnet's
generator, so ``mx.random.seed`` makes them repeatable.
"""
import json
import logging
import re
import warnings
from math import sqrt

import numpy as np

from . import ndarray as _nd
from . import random as _random
from . import registry
from .ndarray import NDArray

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero", "One", "Constant",
           "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear", "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter's name (the string itself) with ``attrs`` (a dict; an
    ``'__init__'`` entry holds an initializer's JSON) and ``global_init``
    (the initializer that called it, used by composite initializers)."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super(InitDesc, cls).__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer(object):
    """Base class of initializers. ``kwargs`` are kept for :meth:`dumps`.
    Subclasses override ``_init_weight(name, arr)``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log each initialized array with ``print_func(arr)`` (default: its
        root-mean-square) when ``verbose``. Returns self."""
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                return str((_nd.norm(x) / sqrt(x.size)).asscalar())
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """The JSON string ``'["<lower-case class name>", {kwargs}]'``, which
        :func:`create` and the ``__init__`` attribute accept."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        """Fill ``arr`` (NDArray) according to ``desc`` (an :class:`InitDesc`;
        a plain string takes the deprecated name-pattern path)."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in (("weight", self._init_weight), ("bias", self._init_bias),
                               ("gamma", self._init_gamma), ("beta", self._init_beta),
                               ("min", self._init_zero), ("max", self._init_one),
                               ("weight_quantize", self._init_quantized_weight),
                               ("bias_quantize", self._init_quantized_bias)):
            if desc.endswith(suffix):
                method(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        """The pre-InitDesc rules, by name prefix and suffix."""
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated. "
                      "please use init(mx.init.InitDesc(...), NDArray) instead.", DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("Initializer: name must be string, got %s" % type(name).__name__)
        if not isinstance(arr, NDArray):
            raise TypeError("Initializer: arr must be NDArray, got %s" % type(arr).__name__)
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        elif name.endswith("bias"):
            self._init_bias(name, arr)
        elif name.endswith("gamma"):
            self._init_gamma(name, arr)
        elif name.endswith("beta"):
            self._init_beta(name, arr)
        elif name.endswith("weight"):
            self._init_weight(name, arr)
        elif name.endswith("moving_mean") or name.endswith("moving_inv_var") or name.endswith("moving_avg"):
            self._init_zero(name, arr)
        elif name.endswith("moving_var"):
            self._init_one(name, arr)
        elif name.endswith("min"):
            self._init_zero(name, arr)
        elif name.endswith("max"):
            self._init_one(name, arr)
        else:
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)

    def _init_loc_bias(self, _, arr):
        if arr.shape[0] != 6:
            raise ValueError("Initializer: stn_loc bias must have 6 elements, got shape %s" % (arr.shape,))
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise NotImplementedError("%s must override _init_weight" % type(self).__name__)

    def _init_quantized_weight(self, _, arr):
        vals = _random.randint(-127, 127, shape=arr.shape, dtype="int32").asnumpy()
        arr[:] = vals.astype(np.int8)

    def _init_default(self, name, _):
        raise ValueError('Unknown initialization pattern for %s. Default initialization is now limited to '
                         '"weight", "bias", "gamma" (1.0), and "beta" (0.0).Please use '
                         "mx.sym.Variable(init=mx.init.*) to set initialization pattern" % name)

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__


_register = registry.get_register_func(Initializer, "initializer")
alias = registry.get_alias_func(Initializer, "initializer")
create = registry.get_create_func(Initializer, "initializer")


def register(klass):
    """Register an initializer class (usable as a decorator) under its
    lower-cased name, for :func:`create` and the ``__init__`` attribute."""
    return _register(klass)


def _bilinear_kernel(shape):
    """The bilinear-upsampling kernel of a 4-D ``shape`` (as MXNet fills it)."""
    if len(shape) != 4:
        raise ValueError("Bilinear: the weight must be 4-D, got shape %s" % (shape,))
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = np.arange(shape[3], dtype=np.float64)
    y = np.arange(shape[2], dtype=np.float64)
    plane = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c)).astype(np.float32)
    return np.broadcast_to(plane, shape).copy()


class Load(object):
    """Initialize by name from saved arrays: ``param`` is a dict of name ->
    NDArray or a file name for :func:`mx.nd.load` (``arg:`` / ``aux:``
    prefixes are dropped). Names not found go to ``default_init`` (required
    then). Shapes must match."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = _nd.load(param)
        if not isinstance(param, dict):
            raise TypeError("Load: param must be a dict of arrays or a file holding named arrays")
        self.param = {}
        for name, arr in param.items():
            key = name[4:] if name.startswith("arg:") or name.startswith("aux:") else name
            self.param[key] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        """Copy the saved array ``name`` into ``arr``, else use ``default_init``."""
        if name in self.param:
            if arr.shape != self.param[name].shape:
                raise ValueError("Parameter %s cannot be initialized from loading. Shape mismatch, target %s vs "
                                 "loaded %s" % (name, str(arr.shape), self.param[name].shape))
            arr[:] = self.param[name]
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise ValueError("Cannot Initialize %s. Not found in loaded param and no default Initializer is "
                             "provided." % name)
        self.default_init(name, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)


class Mixed(object):
    """Pick an initializer by the first regular expression (``re.match``)
    among ``patterns`` that matches the name; ``initializers`` pairs with
    ``patterns``."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError("Mixed: %d patterns but %d initializers" % (len(patterns), len(initializers)))
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        """Initialize ``arr`` with the first initializer whose pattern matches."""
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError('Parameter name %s did not match any pattern. Consider add a ".*" pattern at the and '
                         "with default Initializer." % name)


@register
@alias("zeros")
class Zero(Initializer):
    """Fill weights with 0 (also registered as 'zeros')."""

    def __init__(self):
        super(Zero, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Fill weights with 1 (also registered as 'ones')."""

    def __init__(self):
        super(One, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Fill weights with ``value`` (a scalar, or an array broadcast to the
    weight's shape)."""

    def __init__(self, value):
        super(Constant, self).__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value

    def dumps(self):
        """As :meth:`Initializer.dumps`, with an array value written as a list."""
        val = self._kwargs["value"]
        if not np.isscalar(val):
            self._kwargs["value"] = val.tolist() if isinstance(val, np.ndarray) else val.asnumpy().tolist()
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Weights uniform on ``[-scale, scale]`` (default scale 0.07)."""

    def __init__(self, scale=0.07):
        super(Uniform, self).__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _random.uniform(-self.scale, self.scale, arr.shape, out=arr)


@register
class Normal(Initializer):
    """Weights normal with mean 0 and standard deviation ``sigma`` (0.01)."""

    def __init__(self, sigma=0.01):
        super(Normal, self).__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _random.normal(0, self.sigma, arr.shape, out=arr)


@register
class Orthogonal(Initializer):
    """An orthogonal matrix times ``scale`` (1.414): the SVD factor of a
    random (rows, prod(rest)) matrix drawn 'uniform' on [-1, 1] or 'normal'
    (``rand_type``)."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super(Orthogonal, self).__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = _random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        elif self.rand_type == "normal":
            tmp = _random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            raise ValueError("Orthogonal: unknown rand_type %r (use 'uniform' or 'normal')" % (self.rand_type,))
        u, _s, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = self.scale * res.reshape(arr.shape)


@register
class Xavier(Initializer):
    """Xavier/Glorot: weights with scale ``sqrt(magnitude / factor)``, where
    the factor is the fan-in ('in'), fan-out ('out') or their mean ('avg');
    fans count the kernel's spatial size for >2-D weights. ``rnd_type``
    'uniform' draws on [-scale, scale], 'gaussian' with that deviation.
    Defaults: 'uniform', 'avg', magnitude 3."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super(Xavier, self).__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError("Xavier initializer cannot be applied to vector {0}. It requires at least 2D."
                             .format(name))
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError("Incorrect factor type %r (use 'avg', 'in' or 'out')" % (self.factor_type,))
        scale = np.sqrt(self.magnitude / factors[self.factor_type])
        if self.rnd_type == "uniform":
            _random.uniform(-scale, scale, arr.shape, out=arr)
        elif self.rnd_type == "gaussian":
            _random.normal(0, scale, arr.shape, out=arr)
        else:
            raise ValueError("Unknown random type %r (use 'uniform' or 'gaussian')" % (self.rnd_type,))


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for PReLU layers: Gaussian Xavier with
    magnitude ``2 / (1 + slope**2)``. Defaults: factor_type 'avg', slope 0.25."""

    def __init__(self, factor_type="avg", slope=0.25):
        magnitude = 2.0 / (1 + slope ** 2)
        super(MSRAPrelu, self).__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """The bilinear-interpolation kernel for a 4-D deconvolution weight
    (upsampling)."""

    def __init__(self):
        super(Bilinear, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """Zero LSTM biases except the forget gate's (the second quarter),
    set to ``forget_bias`` (1.0)."""

    def __init__(self, forget_bias=1.0):
        super(LSTMBias, self).__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        arr[:] = 0.0
        num_hidden = int(arr.shape[0] / 4)
        arr[num_hidden:2 * num_hidden] = self.forget_bias


_RNN_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"]}


def _fused_rnn_pieces(size, num_hidden, num_layers, mode, bidirectional):
    """[(name, offset, shape)] of the pieces of a fused RNN parameter vector
    (the cuDNN layout MXNet's FusedRNNCell uses: all weights, then all biases;
    per layer and direction, i2h then h2h, gate by gate)."""
    if mode not in _RNN_GATES:
        raise ValueError("FusedRNN: unknown mode %r (use %s)" % (mode, ", ".join(sorted(_RNN_GATES))))
    gates = _RNN_GATES[mode]
    dirs = ["l", "r"] if bidirectional else ["l"]
    b, m, h = len(dirs), len(gates), num_hidden
    num_input = size // b // h // m - (num_layers - 1) * (h + b * h + 2) - h - 2
    pieces, p = [], 0
    for layer in range(num_layers):
        for d in dirs:
            in_shape = (h, b * h) if layer > 0 else (h, num_input)
            for g in gates:
                pieces.append(("%s%d_i2h%s_weight" % (d, layer, g), p, in_shape))
                p += in_shape[0] * in_shape[1]
            for g in gates:
                pieces.append(("%s%d_h2h%s_weight" % (d, layer, g), p, (h, h)))
                p += h * h
    for layer in range(num_layers):
        for d in dirs:
            for kind in ("i2h", "h2h"):
                for g in gates:
                    pieces.append(("%s%d_%s%s_bias" % (d, layer, kind, g), p, (h,)))
                    p += h
    if p != size or num_input <= 0:
        raise ValueError("FusedRNN: a parameter vector of %d elements does not fit %s with num_hidden=%d, "
                         "num_layers=%d, bidirectional=%s" % (size, mode, h, num_layers, bidirectional))
    return pieces


@register
class FusedRNN(Initializer):
    """Initialize the single parameter vector of a fused RNN layer piece by
    piece: each gate's weight and bias is initialized as a separate array
    with ``init`` (an Initializer, its JSON, or None for the global
    initializer); with ``mode='lstm'`` the forget-gate biases get
    ``forget_bias``."""

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False, forget_bias=1.0):
        if isinstance(init, str):
            init = create(init)
        super(FusedRNN, self).__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                                       num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                                       forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        pieces = _fused_rnn_pieces(arr.size, self._num_hidden, self._num_layers, self._mode, self._bidirectional)
        flat = np.empty(arr.size, dtype=np.float32)
        global_init = getattr(desc, "global_init", None)
        for name, offset, shape in pieces:
            piece = _nd.zeros(shape, ctx=arr.context, dtype=arr.dtype)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            elif self._init is None:
                if global_init is None:
                    raise ValueError("FusedRNN(init=None) needs a global initializer in the InitDesc")
                global_init(InitDesc(name, global_init=global_init), piece)
            else:
                self._init(InitDesc(name, global_init=global_init), piece)
            flat[offset:offset + piece.size] = piece.asnumpy().reshape(-1)
        arr[:] = flat.reshape(arr.shape)
