"""Basic layers (``mx.gluon.nn``): containers, Dense, Dropout, Embedding,
normalization layers, Flatten, Lambda / HybridLambda."""
from __future__ import annotations

import warnings

import numpy as np

from ... import ndarray as nd
from ..block import Block, HybridBlock
from ..utils import _indent
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm", "BatchNormReLU",
           "InstanceNorm", "LayerNorm", "GroupNorm", "Flatten", "Lambda", "HybridLambda"]


def _channel_axis(x, axis, layer):
    nd_ = len(x.shape)
    a = axis + nd_ if axis < 0 else axis
    if not 0 <= a < nd_:
        raise ValueError(f"{layer}: axis {axis} is out of range for input of shape {x.shape}")
    return a


class _SequentialMixin:
    def add(self, *blocks):
        """Append blocks (run in the order added)."""
        for block in blocks:
            self.register_child(block)

    def __repr__(self):
        modstr = "\n".join(
            "  ({key}): {block}".format(key=key, block=_indent(block.__repr__(), 2))
            for key, block in self._children.items()
        )
        return "{name}(\n{modstr}\n)".format(name=self.__class__.__name__, modstr=modstr)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Stack of Blocks run one after another: ``net.add(a, b); net(x) == b(a(x))``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def hybridize(self, active=True, **kwargs):
        """Hybridize the children (suggests HybridSequential when all are HybridBlocks)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(
                "All children of this Sequential layer '%s' are HybridBlocks. Consider using HybridSequential "
                "for the best performance." % self.prefix,
                stacklevel=2,
            )
        super().hybridize(active, **kwargs)


class HybridSequential(_SequentialMixin, HybridBlock):
    """Stack of HybridBlocks run one after another (hybridizable)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    units : int -- output size; activation : str or None; use_bias : bool;
    flatten : bool (True: all but the first axis of x are flattened; False:
    only the last axis is transformed); dtype; weight_initializer (None: the
    global one); bias_initializer (default 'zeros'); in_units : int (0: from
    the first input). Parameters ``weight`` (units, in_units), ``bias`` (units,).
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def _infer_param_shapes(self, x, *args):
        if len(x.shape) < 2 and self._flatten:
            raise ValueError(f"Dense: input must have at least 2 dimensions, got shape {x.shape}")
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        return "{name}({layout}, {act})".format(
            name=self.__class__.__name__, act=self.act if self.act else "linear",
            layout="{0} -> {1}".format(shape[1] if shape[1] else None, shape[0]))


class Dropout(HybridBlock):
    """Zero elements with probability ``rate`` in training (scaling the rest by
    1/(1-rate)); identity in inference. ``axes``: axes that share one mask."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return "{name}(p = {r}, axes={a})".format(name=self.__class__.__name__, r=self._rate, a=self._axes)


class _BatchNorm(HybridBlock):
    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 fuse_relu=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def _infer_param_shapes(self, x, *args):
        c = x.shape[_channel_axis(x, self._kwargs["axis"], type(self).__name__)]
        for p in (self.gamma, self.beta, self.running_mean, self.running_var):
            p.shape = (c,)

    def cast(self, dtype):
        """Cast Parameters; float16 stays float32 (as MXNet's BatchNorm needs)."""
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)
        if self.fuse_relu:
            out = F.relu(out)
        return out

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        content = ", ".join("=".join([k, v.__repr__()]) for k, v in self._kwargs.items())
        return "{name}({content}, in_channels={c})".format(name=self.__class__.__name__, content=content,
                                                          c=in_channels if in_channels else None)


class BatchNorm(_BatchNorm):
    """Batch normalization over ``axis`` (default 1, channels of NCHW).

    momentum (0.9) and epsilon (1e-5) as MXNet; center/scale switch beta/gamma
    learning; use_global_stats uses the running statistics also in training;
    in_channels (0: from the first input). Parameters gamma, beta,
    running_mean, running_var (the running ones are updated in training).
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=False, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)


class BatchNormReLU(_BatchNorm):
    """BatchNorm followed by ReLU (same arguments as :class:`BatchNorm`)."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=True, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)


class Embedding(HybridBlock):
    """Map integer indices to dense vectors: weight (input_dim, output_dim)."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, sparse_grad=False,
                 **kwargs):
        super().__init__(**kwargs)
        if sparse_grad:
            from ...base import MXNetError

            raise MXNetError("Embedding: sparse_grad=True needs row_sparse gradients, which oxnet does not "
                             "implement; use sparse_grad=False")
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return "{block_name}({input_dim} -> {output_dim}, {dtype})".format(
            block_name=self.__class__.__name__, **self._kwargs)


class Flatten(HybridBlock):
    """Reshape (N, x1, x2, ...) to (N, x1 * x2 * ...)."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class InstanceNorm(HybridBlock):
    """Instance normalization (Ulyanov et al.) over each sample and channel
    (``axis`` is the channel axis; default center=True, scale=False)."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True)

    def _infer_param_shapes(self, x, *args):
        c = x.shape[_channel_axis(x, self._axis, "InstanceNorm")]
        self.gamma.shape = (c,)
        self.beta.shape = (c,)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon).swapaxes(1, self._axis)

    def __repr__(self):
        content = ", ".join("=".join([k, v.__repr__()]) for k, v in self._kwargs.items())
        return "{name}({content}, in_channels={c})".format(name=self.__class__.__name__, content=content,
                                                          c=self.gamma.shape[0])


class LayerNorm(HybridBlock):
    """Layer normalization over ``axis`` (default -1) with gamma/beta of the
    axis's size."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True)

    def _infer_param_shapes(self, x, *args):
        c = x.shape[_channel_axis(x, self._axis, "LayerNorm")]
        self.gamma.shape = (c,)
        self.beta.shape = (c,)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        content = ", ".join("=".join([k, v.__repr__()]) for k, v in self._kwargs.items())
        return "{name}({content}, in_channels={c})".format(name=self.__class__.__name__, content=content,
                                                          c=self.gamma.shape[0])


class GroupNorm(HybridBlock):
    """Group normalization (Wu & He) with ``num_groups`` groups over axis 1;
    gamma/beta have shape (num_groups,) as in MXNet 1.9.1."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(num_groups,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(num_groups,),
                                    init=beta_initializer, allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self):
        content = ", ".join("=".join([k, v.__repr__()]) for k, v in self._kwargs.items())
        return "{name}({content})".format(name=self.__class__.__name__, content=content)


class Lambda(Block):
    """Wrap a function (or the name of an ``mx.nd`` operator) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            try:
                self._func_impl = getattr(nd, function)
            except AttributeError:
                raise AssertionError("Function name %s is not found in ndarray." % function) from None
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError("Unrecognized function in lambda: {} of type {}".format(function, type(function)))

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return "{name}({function})".format(name=self.__class__.__name__, function=self._func_impl.__name__)


class HybridLambda(HybridBlock):
    """Wrap ``function(F, x, *args)`` (or an operator's name) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            try:
                getattr(nd, function)
            except AttributeError:
                raise AssertionError("Function name %s is not found in symbol/ndarray." % function) from None
            self._func = lambda F, *args: getattr(F, function)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError("Unrecognized function in lambda: {} of type {}".format(function, type(function)))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return "{name}({function})".format(name=self.__class__.__name__, function=self._func_name)
