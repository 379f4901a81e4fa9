"""Fused recurrent layers (``mx.gluon.rnn.RNN``, ``LSTM``, ``GRU``) on the
``RNN`` operator: layouts 'TNC' and 'NTC', several layers, bidirectional,
begin states in and final states out."""
from __future__ import annotations

import re

from ... import ndarray
from ..block import HybridBlock
from ..parameter import tensor_types
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]


class _RNNLayer(HybridBlock):
    """Implementation of the fused layers; parameters ``{l|r}{layer}_{i2h|h2h}_{weight|bias}``."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size, i2h_weight_initializer,
                 h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer, mode, projection_size,
                 h2r_weight_initializer, lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise AssertionError("Invalid layout %s; must be one of ['TNC' or 'NTC']" % layout)
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}[mode]
        ng, ni, nh = self._gates, input_size, hidden_size
        npj = self._projection_size
        for i in range(num_layers):
            for j in ["l", "r"][: self._dir]:
                self._register_param("{}{}_i2h_weight".format(j, i), (ng * nh, ni), i2h_weight_initializer, dtype)
                self._register_param("{}{}_h2h_weight".format(j, i), (ng * nh, npj or nh), h2h_weight_initializer,
                                     dtype)
                self._register_param("{}{}_i2h_bias".format(j, i), (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param("{}{}_h2h_bias".format(j, i), (ng * nh,), h2h_bias_initializer, dtype)
                if npj:
                    self._register_param("{}{}_h2r_weight".format(j, i), (npj, nh), h2r_weight_initializer, dtype)
            ni = (npj or nh) * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = "{name}({mapping}, {layout}"
        if self._num_layers != 1:
            s += ", num_layers={n}"
        if self._dropout != 0:
            s += ", dropout={d}"
        if self._dir == 2:
            s += ", bidirectional"
        s += ")"
        shape = self.l0_i2h_weight.shape
        mapping = "{0} -> {1}".format(shape[1] if shape[1] else None, shape[0] // self._gates)
        return s.format(name=self.__class__.__name__, mapping=mapping, layout=self._layout, n=self._num_layers,
                        d=self._dropout)

    def _collect_params_with_prefix(self, prefix=""):
        # MXNet's file keys for fused layers (compatible with its unfused cells)
        if prefix:
            prefix += "."
        pattern = re.compile(r"(l|r)(\d)_(i2h|h2h|h2r)_(weight|bias)\Z")
        bidirectional = any(pattern.match(k).group(1) == "r" for k in self._reg_params)

        def convert(m):
            d, layer, g, t = (m.group(i) for i in range(1, 5))
            if bidirectional:
                return "_unfused.{}.{}_cell.{}_{}".format(layer, d, g, t)
            return "_unfused.{}.{}_{}".format(layer, g, t)

        ret = {prefix + convert(pattern.match(k)): v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _unfuse(self):
        """An equivalent HybridSequentialRNNCell of cells sharing these Parameters."""
        if self._projection_size:
            raise AssertionError("_unfuse does not support projection layer yet!")
        if self._lstm_state_clip_min or self._lstm_state_clip_max:
            raise AssertionError("_unfuse does not support state clipping yet!")
        get_cell = {
            "rnn_relu": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="relu", **kw),
            "rnn_tanh": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="tanh", **kw),
            "lstm": lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
            "gru": lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw),
        }[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kw = {"input_size": ni, "i2h_weight_initializer": self._i2h_weight_initializer,
                      "h2h_weight_initializer": self._h2h_weight_initializer,
                      "i2h_bias_initializer": self._i2h_bias_initializer,
                      "h2h_bias_initializer": self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(get_cell(prefix="l%d_" % i, **kw),
                                                         get_cell(prefix="r%d_" % i, **kw)))
                else:
                    stack.add(get_cell(prefix="l%d_" % i, **kw))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        """Cast Parameters and the begin states' dtype to ``dtype``."""
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states (zeros by default): a list of arrays of shape
        (num_layers * directions, batch_size, hidden)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name="%sh0_%d" % (self.prefix, i), **info))
        return states

    def _symbolic_begin_state(self, inputs):
        """Zero begin states for a traced graph, sized from ``inputs`` (so the
        batch size is not baked into the graph): (L*D, N, H) zeros made by
        broadcasting a zero (1, N, 1) slice of the input."""
        from ... import symbol as F

        step = F.slice_axis(inputs, axis=self._layout.find("T"), begin=0, end=1)
        if self._layout == "NTC":
            step = F.swapaxes(step, 0, 1)
        zero = F.sum(F.zeros_like(step), axis=2, keepdims=True)
        return [F.broadcast_to(zero, shape=(info["shape"][0], 0, info["shape"][2]))
                for info in self.state_info(0)]

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self._symbolic_begin_state(inputs)
        if isinstance(states, tensor_types):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def _infer_param_shapes(self, inputs, *args):
        if len(inputs.shape) != 3:
            raise ValueError(f"{type(self).__name__}: input must be 3-D ({self._layout}), got shape {inputs.shape}")
        ni = inputs.shape[2]
        for j in ["l", "r"][: self._dir]:
            p = getattr(self, "{}0_i2h_weight".format(j))
            p.shape = (p.shape[0], ni)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch_size = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info["shape"]:
                    raise ValueError("Invalid recurrent state shape. Expecting %s, got %s."
                                     % (str(info["shape"]), str(state.shape)))
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _forward_projection(self, F, inputs, states, **kwargs):
        """LSTM with a projection layer, step by step on the time axis (the
        fused RNN operator has no projection on CPU, as in MXNet 1.9.1).
        ``inputs`` are TNC; returns (outputs TNC, [r, c])."""
        if F is not ndarray:
            from ...base import MXNetError

            raise MXNetError("LSTM(projection_size=...) runs imperatively only in oxnet (the fused RNN operator "
                             "has no projection); do not hybridize it")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            from ...base import MXNetError

            raise MXNetError("LSTM: state clipping together with projection_size is not implemented")
        steps = [inputs[t] for t in range(inputs.shape[0])]
        h0, c0 = states
        nh, npj = self._hidden_size, self._projection_size
        out_r, out_c = [], []
        for layer in range(self._num_layers):
            dir_outputs = []
            for d, name in enumerate(["l", "r"][: self._dir]):
                k = layer * self._dir + d
                w = {g: kwargs["{}{}_{}".format(name, layer, g)]
                     for g in ("i2h_weight", "h2h_weight", "h2r_weight", "i2h_bias", "h2h_bias")}
                r, c = h0[k], c0[k]
                seq = steps if d == 0 else steps[::-1]
                outs = []
                for x in seq:
                    gates = F.FullyConnected(x, w["i2h_weight"], w["i2h_bias"], num_hidden=4 * nh) + \
                        F.FullyConnected(r, w["h2h_weight"], w["h2h_bias"], num_hidden=4 * nh)
                    i, f, g, o = F.split(gates, num_outputs=4, axis=1)
                    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
                    r = F.FullyConnected(F.sigmoid(o) * F.tanh(c), w["h2r_weight"], no_bias=True, num_hidden=npj)
                    outs.append(r)
                dir_outputs.append(outs if d == 0 else outs[::-1])
                out_r.append(r)
                out_c.append(c)
            steps = [F.concat(*parts, dim=1) if self._dir == 2 else parts[0] for parts in zip(*dir_outputs)]
            if self._dropout and layer != self._num_layers - 1:
                steps = [F.Dropout(x, p=self._dropout) for x in steps]
        return F.stack(*steps, axis=0), [F.stack(*out_r, axis=0), F.stack(*out_c, axis=0)]

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, 0, 1)
        if self._projection_size is not None:
            if self._use_sequence_length:
                from ...base import MXNetError

                raise MXNetError("LSTM: use_sequence_length together with projection_size is not implemented")
            outputs, states = self._forward_projection(F, inputs, states, **kwargs)
            if self._layout == "NTC":
                outputs = F.swapaxes(outputs, 0, 1)
            return outputs, states
        gates = ["i2h", "h2h", "h2r"] if self._projection_size else ["i2h", "h2h"]
        params = [kwargs["{}{}_{}_{}".format(d, layer, g, t)].reshape(-1)
                  for t in ["weight", "bias"]
                  for layer in range(self._num_layers)
                  for d in ["l", "r"][: self._dir]
                  for g in gates
                  if g != "h2r" or t != "bias"]
        params = F.concat(*params, dim=0)
        rnn_args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        extra = {}
        if self._projection_size is not None:
            extra["projection_size"] = self._projection_size
        if self._lstm_state_clip_min is not None:
            extra["lstm_state_clip_min"] = self._lstm_state_clip_min
        if self._lstm_state_clip_max is not None:
            extra["lstm_state_clip_max"] = self._lstm_state_clip_max
        if self._lstm_state_clip_nan:
            extra["lstm_state_clip_nan"] = self._lstm_state_clip_nan
        if self._use_sequence_length:
            extra["use_sequence_length"] = True
        rnn = F.RNN(inputs, params, *rnn_args, state_size=self._hidden_size, num_layers=self._num_layers,
                    bidirectional=self._dir == 2, p=self._dropout, state_outputs=True, mode=self._mode, **extra)
        if self._mode == "lstm":
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs, states


class RNN(_RNNLayer):
    """Elman RNN with 'relu' or 'tanh' ``activation``: hidden_size,
    num_layers=1, activation='relu', layout='TNC', dropout=0 (between
    layers), bidirectional=False, initializers, input_size=0 (inferred),
    dtype='float32'. Called as ``layer(inputs, states=None)``: without states
    returns the output only; with states returns (output, new states)."""

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0, bidirectional=False,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer, "rnn_" + activation,
                         None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size), "__layout__": "LNC",
                 "dtype": self._dtype}]


class LSTM(_RNNLayer):
    """Long short-term memory layer (states: [h, c]); arguments as :class:`RNN`
    plus projection_size, h2r_weight_initializer and state_clip_min /
    state_clip_max / state_clip_nan."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None, h2r_weight_initializer=None,
                 state_clip_min=None, state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer, "lstm", projection_size,
                         h2r_weight_initializer, state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        h = self._projection_size or self._hidden_size
        return [{"shape": (self._num_layers * self._dir, batch_size, h), "__layout__": "LNC", "dtype": self._dtype},
                {"shape": (self._num_layers * self._dir, batch_size, self._hidden_size), "__layout__": "LNC",
                 "dtype": self._dtype}]


class GRU(_RNNLayer):
    """Gated recurrent unit layer (states: [h]); arguments as :class:`RNN`."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer, "gru", None, None, None,
                         None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size), "__layout__": "LNC",
                 "dtype": self._dtype}]
