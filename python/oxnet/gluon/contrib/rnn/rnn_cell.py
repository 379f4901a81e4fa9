"""Contributed recurrent cells (``mx.gluon.contrib.rnn``): VariationalDropoutCell
and LSTMPCell (LSTM with a projection layer)."""
from __future__ import annotations

from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell, _format_sequence,
                             _get_begin_state, _is_tensor, _mask_sequence_variable_length)

__all__ = ["VariationalDropoutCell", "LSTMPCell"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani 2016): one dropout mask per
    sequence for the inputs (``drop_inputs``), the first state
    (``drop_states``) and the outputs (``drop_outputs``)."""

    def __init__(self, base_cell, drop_inputs=0.0, drop_states=0.0, drop_outputs=0.0):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support variational state dropout. Please add "
                                 "VariationalDropoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(next_output), p=self.drop_outputs)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self):
        return "{name}(p_out = {o}, p_state = {s})".format(name=self.__class__.__name__, o=self.drop_outputs,
                                                           s=self.drop_states)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Unroll with one mask per sequence (masks shared along the time axis)."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge_outputs = _is_tensor(outputs) if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM cell with a projection of the hidden state (Sak et al. 2014):
    states [r (N, projection_size), c (N, hidden_size)]; the output is r."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 h2r_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        nh4 = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(nh4, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(nh4, projection_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(nh4,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(nh4,), init=h2h_bias_initializer, allow_deferred_init=True)

    def _infer_param_shapes(self, inputs, *args):
        self.i2h_weight.shape = (self.i2h_weight.shape[0], inputs.shape[-1])

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        shape = self.i2h_weight.shape
        return "{name}({a} -> {b} -> {c})".format(name=self.__class__.__name__, a=shape[1] if shape[1] else None,
                                                   b=shape[0], c=self.h2r_weight.shape[0])

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        nh4 = self._hidden_size * 4
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=nh4, name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=nh4, name=prefix + "h2h")
        gates = i2h + h2h
        sl = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(sl[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(sl[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(sl[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(sl[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"), name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size, weight=h2r_weight, no_bias=True,
                                  name=prefix + "out")
        return next_r, [next_r, next_c]
