"""Convolution, transposed convolution, pooling and padding layers
(``mx.gluon.nn``), on the ``Convolution``, ``Deconvolution``, ``Pooling``
and ``pad`` operators."""
from __future__ import annotations

from ...base import numeric_types
from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalAvgPool3D", "ReflectionPad2D"]


def _tuple(v, n, what):
    if isinstance(v, numeric_types):
        return (int(v),) * n
    v = tuple(v)
    if len(v) != n:
        raise AssertionError(f"{what} must be a number or a list of {n} ints")
    return v


def _weight_shape(op_name, layout, channels, in_channels, groups, kernel):
    """MXNet's weight shape of Convolution / Deconvolution (0 = unknown)."""
    channels_last = layout.find("C") == len(layout) - 1
    if op_name == "Convolution":
        per_group = in_channels // groups if in_channels else 0
        return (channels,) + (tuple(kernel) + (per_group,) if channels_last else (per_group,) + tuple(kernel))
    out_per_group = channels // groups
    return (in_channels,) + (tuple(kernel) + (out_per_group,) if channels_last else (out_per_group,) + tuple(kernel))


class _Conv(HybridBlock):
    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 op_name="Convolution", adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            n = len(kernel_size)
            strides = _tuple(strides, n, "strides")
            padding = _tuple(padding, n, "padding")
            dilation = _tuple(dilation, n, "dilation")
            self._op_name = op_name
            self._kwargs = {"kernel": tuple(kernel_size), "stride": strides, "dilate": dilation, "pad": padding,
                            "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                            "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            wshape = _weight_shape(op_name, layout, channels, in_channels, groups, kernel_size)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer, allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def _infer_param_shapes(self, x, *args):
        layout = self._kwargs["layout"]
        if len(x.shape) != len(layout):
            raise ValueError(f"{type(self).__name__}: input of shape {x.shape} does not match layout {layout}")
        c = x.shape[layout.find("C")]
        self.weight.shape = _weight_shape(self._op_name, layout, self._channels, c, self._kwargs["num_group"],
                                          self._kwargs["kernel"])

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def _alias(self):
        return "conv"

    def __repr__(self):
        k = self._kwargs
        n = len(k["kernel"])
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        if k["pad"] != (0,) * n:
            s += ", padding={pad}"
        if k["dilate"] != (1,) * n:
            s += ", dilation={dilate}"
        if hasattr(self, "outpad") and self.outpad != (0,) * n:
            s += ", output_padding={}".format(self.outpad)
        if k["num_group"] != 1:
            s += ", groups={num_group}"
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += ", {}".format(self.act)
        s += ")"
        shape = self.weight.shape
        return s.format(name=self.__class__.__name__,
                        mapping="{0} -> {1}".format(shape[1] if shape[1] else None, shape[0]), **k)


class Conv1D(_Conv):
    """1-D convolution over (N, C, W): channels, kernel_size, strides=1,
    padding=0, dilation=1, groups=1, layout='NCW', activation, use_bias,
    weight_initializer, bias_initializer='zeros', in_channels=0."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        if layout != "NCW":
            raise AssertionError("Only supports 'NCW' layout for now")
        kernel_size = _tuple(kernel_size, 1, "kernel_size")
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over (N, C, H, W) (or NHWC): channels, kernel_size,
    strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
    layout='NCHW', activation, use_bias, initializers, in_channels=0."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        if layout not in ("NCHW", "NHWC"):
            raise AssertionError("Only supports 'NCHW' and 'NHWC' layout for now")
        kernel_size = _tuple(kernel_size, 2, "kernel_size")
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over (N, C, D, H, W) (or NDHWC)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1,
                 layout="NCDHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        if layout not in ("NCDHW", "NDHWC"):
            raise AssertionError("Only supports 'NCDHW' and 'NDHWC' layout for now")
        kernel_size = _tuple(kernel_size, 3, "kernel_size")
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name, **kwargs)


class Conv1DTranspose(_Conv):
    """1-D transposed convolution (Deconvolution); ``output_padding`` adds to
    the output size."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        if layout != "NCW":
            raise AssertionError("Only supports 'NCW' layout for now")
        kernel_size = _tuple(kernel_size, 1, "kernel_size")
        output_padding = _tuple(output_padding, 1, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (Deconvolution)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), output_padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        if layout not in ("NCHW", "NHWC"):
            raise AssertionError("Only supports 'NCHW' and 'NHWC' layout for now")
        kernel_size = _tuple(kernel_size, 2, "kernel_size")
        output_padding = _tuple(output_padding, 2, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class Conv3DTranspose(_Conv):
    """3-D transposed convolution (Deconvolution)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), output_padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        if layout not in ("NCDHW", "NDHWC"):
            raise AssertionError("Only supports 'NCDHW' and 'NDHWC' layout for now")
        kernel_size = _tuple(kernel_size, 3, "kernel_size")
        output_padding = _tuple(output_padding, 3, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class _Pooling(HybridBlock):
    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        strides = _tuple(strides, len(pool_size), "strides")
        padding = _tuple(padding, len(pool_size), "padding")
        self._kwargs = {"kernel": tuple(pool_size), "stride": strides, "pad": padding, "global_pool": global_pool,
                        "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        s = "{name}(size={kernel}, stride={stride}, padding={pad}, ceil_mode={ceil_mode}"
        s += ", global_pool={global_pool}, pool_type={pool_type}, layout={layout})"
        return s.format(name=self.__class__.__name__, ceil_mode=self._kwargs["pooling_convention"] == "full",
                        **self._kwargs)


def _check_layout(layout, allowed, dim):
    if layout not in allowed:
        raise AssertionError("Only %s layouts are valid for %dD Pooling" % (" and ".join(allowed), dim))


class MaxPool1D(_Pooling):
    """Max pooling over (N, C, W): pool_size=2, strides=None (= pool_size),
    padding=0, layout='NCW', ceil_mode=False."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, **kwargs):
        _check_layout(layout, ("NCW", "NWC"), 1)
        super().__init__(_tuple(pool_size, 1, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over (N, C, H, W): pool_size=(2, 2), strides=None,
    padding=0, layout='NCHW', ceil_mode=False."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW", ceil_mode=False, **kwargs):
        _check_layout(layout, ("NCHW", "NHWC"), 2)
        super().__init__(_tuple(pool_size, 2, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over (N, C, D, H, W)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False, layout="NCDHW", **kwargs):
        _check_layout(layout, ("NCDHW", "NDHWC"), 3)
        super().__init__(_tuple(pool_size, 3, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over (N, C, W); count_include_pad=True counts padding."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, count_include_pad=True,
                 **kwargs):
        _check_layout(layout, ("NCW", "NWC"), 1)
        super().__init__(_tuple(pool_size, 1, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over (N, C, H, W)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False, layout="NCHW",
                 count_include_pad=True, **kwargs):
        _check_layout(layout, ("NCHW", "NHWC"), 2)
        super().__init__(_tuple(pool_size, 2, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over (N, C, D, H, W)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False, layout="NCDHW",
                 count_include_pad=True, **kwargs):
        _check_layout(layout, ("NCDHW", "NDHWC"), 3)
        super().__init__(_tuple(pool_size, 3, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: (N, C, W) -> (N, C, 1)."""

    def __init__(self, layout="NCW", **kwargs):
        _check_layout(layout, ("NCW", "NWC"), 1)
        super().__init__((1,), None, 0, True, True, "max", layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over H and W: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        _check_layout(layout, ("NCHW", "NHWC"), 2)
        super().__init__((1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over D, H and W."""

    def __init__(self, layout="NCDHW", **kwargs):
        _check_layout(layout, ("NCDHW", "NDHWC"), 3)
        super().__init__((1, 1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the width."""

    def __init__(self, layout="NCW", **kwargs):
        _check_layout(layout, ("NCW", "NWC"), 1)
        super().__init__((1,), None, 0, True, True, "avg", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over H and W: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        _check_layout(layout, ("NCHW", "NHWC"), 2)
        super().__init__((1, 1), None, 0, True, True, "avg", layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over D, H and W."""

    def __init__(self, layout="NCDHW", **kwargs):
        _check_layout(layout, ("NCDHW", "NDHWC"), 3)
        super().__init__((1, 1, 1), None, 0, True, True, "avg", layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pad H and W of (N, C, H, W) by reflection: ``padding`` an int (all four
    sides) or MXNet's 8-tuple pad_width."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise AssertionError("ReflectionPad2D: padding must be an int or 8 ints")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
