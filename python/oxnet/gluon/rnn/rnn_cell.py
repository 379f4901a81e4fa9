"""Recurrent cells (``mx.gluon.rnn``): one time step per call, or a whole
sequence with ``unroll(length, inputs, begin_state, layout, merge_outputs,
valid_length)``."""
from __future__ import annotations

from ... import ndarray
from ...base import numeric_types
from ..block import Block, HybridBlock, _is_symbol
from ..nn import LeakyReLU
from ..utils import _indent

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]


def _is_tensor(x):
    return isinstance(x, ndarray.NDArray) or _is_symbol(x)


def _as_list(x):
    """The outputs of a split as a list (a grouped Symbol iterates over its outputs)."""
    if isinstance(x, (list, tuple)):
        return list(x)
    if _is_symbol(x):
        return list(x) if len(x.list_outputs()) > 1 else [x]
    return [x]


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _get_begin_state(cell, F, begin_state, inputs, batch_size, layout="NTC"):
    if begin_state is None:
        if F is ndarray:
            ctx = inputs.context if _is_tensor(inputs) else inputs[0].context
            with ctx:
                begin_state = cell.begin_state(func=F.zeros, batch_size=batch_size)
        else:
            begin_state = _symbolic_zero_states(cell, F, inputs, layout)
    return begin_state


def _symbolic_zero_states(cell, F, inputs, layout):
    """Zero begin states of a traced graph, with the batch size taken from
    ``inputs`` (a (N, T, C)-like tensor in ``layout`` or a list of (N, C)
    steps), so the graph works for any batch size."""
    if _is_tensor(inputs):
        x, batch_axis = inputs, layout.find("N")
    else:
        x, batch_axis = inputs[0], 0
    ones_n = F.sum(F.zeros_like(x), axis=batch_axis, exclude=True)  # (N,) zeros
    col = F.expand_dims(ones_n, axis=1)  # (N, 1)
    states = []
    for info in cell.state_info(0):
        shape = tuple(info["shape"])
        if len(shape) != 2 or shape[0] != 0:
            raise ValueError(f"{cell.name}: cannot size begin state of shape {shape} from the input; pass begin_state")
        states.append(F.broadcast_to(col, shape=(0, shape[1])))
    return states


def _F_of(x):
    if _is_symbol(x):
        from ... import symbol

        return symbol
    return ndarray


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Bring ``inputs`` (a tensor in ``layout`` or a list of per-step tensors)
    to a merged tensor (merge=True), a list of steps (merge=False) or leave
    it (None). Returns (inputs, time axis, F, batch size)."""
    if inputs is None:
        raise AssertionError("unroll(inputs=None) has been deprecated. Please create input variables outside unroll.")
    axis = layout.find("T")
    batch_axis = layout.find("N")
    batch_size = 0
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if _is_tensor(inputs):
        F = _F_of(inputs)
        if F is ndarray:
            batch_size = inputs.shape[batch_axis]
        if merge is False:
            n = inputs.shape[in_axis] if F is ndarray else length
            if F is ndarray and length is not None and length != n:
                raise AssertionError(f"unroll: length {length} does not match the input's {n} time steps")
            inputs = _as_list(F.split(inputs, axis=in_axis, num_outputs=n, squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise AssertionError(f"unroll: length {length} does not match the {len(inputs)} inputs given")
        F = _F_of(inputs[0])
        if F is ndarray:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if _is_tensor(inputs) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    if not _is_tensor(data):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    if not merge:
        outputs = _as_list(F.split(outputs, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return outputs


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    F = _F_of(sequences[0])
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length, use_sequence_length=True)
    if unroll_step > 1 or F is not ndarray:
        return _as_list(F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True))
    return [rev[0]]


class RecurrentCell(Block):
    """Base class of recurrent cells: ``cell(inputs, states)`` runs one step
    and returns (output, new states)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters (before a new sequence)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """A list of dicts (shape, __layout__) describing each state."""
        raise NotImplementedError()

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states made by ``func`` (default zeros): a list of arrays."""
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called "
                                 "directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info, **kwargs) if info is not None else dict(kwargs)
            states.append(func(name="%sbegin_state_%d" % (self._prefix, self._init_counter), **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Run ``length`` steps over ``inputs`` (a tensor in ``layout`` or a list
        of per-step (N, C) tensors). ``merge_outputs``: True gives one tensor,
        False a list, None whatever the input was. With ``valid_length`` (N,),
        outputs past each sequence's length are zero and the states are those
        of its last valid step. Returns (outputs, states)."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*s, axis=0), sequence_length=valid_length, use_sequence_length=True,
                                     axis=0) for s in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        func = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}.get(activation) \
            if isinstance(activation, str) else None
        if func:
            return func(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: returns (output, new states)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell computed by ``hybrid_forward(F, inputs, states, **params)``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    _num_gates = 1

    def _make_params(self, hidden_size, input_size, i2h_w, h2h_w, i2h_b, h2h_b):
        ng = self._num_gates
        self.i2h_weight = self.params.get("i2h_weight", shape=(ng * hidden_size, input_size), init=i2h_w,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(ng * hidden_size, hidden_size), init=h2h_w,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(ng * hidden_size,), init=i2h_b, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(ng * hidden_size,), init=h2h_b, allow_deferred_init=True)

    def _infer_param_shapes(self, inputs, *args):
        self.i2h_weight.shape = (self.i2h_weight.shape[0], inputs.shape[-1])

    def __repr__(self):
        shape = self.i2h_weight.shape
        mapping = "{0} -> {1}".format(shape[1] if shape[1] else None, shape[0])
        if isinstance(self, RNNCell):
            return "{}({}, {})".format(self.__class__.__name__, mapping, self._activation)
        return "{}({})".format(self.__class__.__name__, mapping)


class RNNCell(_GatedCell):
    """Elman cell: ``h' = activation(W_i x + b_i + W_h h + b_h)`` (activation
    default 'tanh'); one state of shape (N, hidden_size)."""

    _num_gates = 1

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._activation = activation
        self._input_size = input_size
        self._make_params(hidden_size, input_size, i2h_weight_initializer, h2h_weight_initializer,
                          i2h_bias_initializer, h2h_bias_initializer)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=self._hidden_size,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=self._hidden_size,
                               name=prefix + "h2h")
        output = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"), self._activation,
                                      name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    """LSTM cell (gates in MXNet's order i, f, c, o); states [h, c] of shape
    (N, hidden_size); ``activation`` / ``recurrent_activation`` default
    'tanh' / 'sigmoid'."""

    _num_gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None,
                 activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._make_params(hidden_size, input_size, i2h_weight_initializer, h2h_weight_initializer,
                          i2h_bias_initializer, h2h_bias_initializer)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        nh4 = self._hidden_size * 4
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=nh4, name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=nh4, name=prefix + "h2h")
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        sl = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        in_gate = self._get_activation(F, sl[0], self._recurrent_activation, name=prefix + "i")
        forget_gate = self._get_activation(F, sl[1], self._recurrent_activation, name=prefix + "f")
        in_transform = self._get_activation(F, sl[2], self._activation, name=prefix + "c")
        out_gate = self._get_activation(F, sl[3], self._recurrent_activation, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"), name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=self._activation,
                                                       name=prefix + "activation0"), name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """GRU cell (gates r, z, n as MXNet/cuDNN); one state (N, hidden_size)."""

    _num_gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._make_params(hidden_size, input_size, i2h_weight_initializer, h2h_weight_initializer,
                          i2h_bias_initializer, h2h_bias_initializer)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        prev_h = states[0]
        nh3 = self._hidden_size * 3
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=nh3, name=prefix + "i2h")
        h2h = F.FullyConnected(data=prev_h, weight=h2h_weight, bias=h2h_bias, num_hidden=nh3, name=prefix + "h2h")
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"), act_type="sigmoid",
                                  name=prefix + "r_act")
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"), act_type="sigmoid",
                                   name=prefix + "z_act")
        next_h_tmp = F.Activation(F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + "mul0"),
                                                 name=prefix + "plus2"), act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update_gate, name=prefix + "ones_like0")
        next_h = F.elemwise_add(F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + "minus0"),
                                               next_h_tmp, name=prefix + "mul1"),
                                F.elemwise_mul(update_gate, prev_h, name=prefix + "mul20"), name=prefix + "out")
        return next_h, [next_h]


class _SequentialCellMixin:
    def __repr__(self):
        return "{name}(\n{modstr}\n)".format(
            name=self.__class__.__name__,
            modstr="\n".join("({i}): {m}".format(i=i, m=_indent(m.__repr__(), 2)) for i, m in self._children.items()))

    def add(self, cell):
        """Append a cell to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called "
                                 "directly. Call the modifier cell instead.")
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise AssertionError("A BidirectionalCell in a sequential cell cannot be stepped; use unroll")
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.append(state)
        return inputs, sum(next_states, [])

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Unroll each cell over the whole sequence in turn; see RecurrentCell.unroll."""
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        num_cells = len(self._children)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        p = 0
        next_states = []
        for i, cell in enumerate(self._children.values()):
            n = len(cell.state_info())
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=states, layout=layout,
                                         merge_outputs=None if i < num_cells - 1 else merge_outputs,
                                         valid_length=valid_length)
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_SequentialCellMixin, RecurrentCell):
    """A stack of recurrent cells applied one after another at each step."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)


class HybridSequentialRNNCell(_SequentialCellMixin, HybridRecurrentCell):
    """A stack of hybrid recurrent cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Apply dropout with probability ``rate`` to the input of each step (no states)."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types):
            raise AssertionError("rate must be a number")
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return "{name}(rate={r}, axes={a})".format(name=self.__class__.__name__, r=self._rate, a=self._axes)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name="t%d_fwd" % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if _is_tensor(inputs):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs,
                              valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base class of cells that wrap another cell (``base_cell``) and modify it."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise AssertionError("Cell %s is already modified. One cell cannot be modified twice" % base_cell.name)
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=ndarray.zeros, **kwargs):
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. DropoutCell) the base cell cannot be called "
                                 "directly. Call the modifier cell instead.")
        self.base_cell._modified = False
        begin = self.base_cell.begin_state(func=func, **kwargs)
        self.base_cell._modified = True
        return begin

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return "{name}({base_cell})".format(name=self.__class__.__name__, base_cell=self.base_cell)


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): in training, each output / state element
    keeps its previous value with probability zoneout_outputs / zoneout_states."""

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't support step. Please "
                                 "add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return "{name}(p_out={o}, p_state={s}, {b})".format(name=self.__class__.__name__, o=self.zoneout_outputs,
                                                            s=self.zoneout_states, b=self.base_cell)

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = F.where(mask(p_outputs, next_output), next_output, prev_output) if p_outputs != 0.0 else next_output
        states = ([F.where(mask(p_states, new_s), new_s, old_s) for new_s, old_s in zip(next_states, states)]
                  if p_states != 0.0 else next_states)
        self._prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """Add the input to the wrapped cell's output at each step."""

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name="t%d_fwd" % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                merge_outputs=merge_outputs, valid_length=valid_length)
        self.base_cell._modified = True
        merge_outputs = _is_tensor(outputs) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Run ``l_cell`` forward and ``r_cell`` backward over the sequence and
    concatenate their outputs (only ``unroll``; a single step raises)."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self):
        return "{name}(forward={l}, backward={r})".format(name=self.__class__.__name__, l=self._children["l_cell"],
                                                          r=self._children["r_cell"])

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. DropoutCell) the base cell cannot be called "
                                 "directly. Call the modifier cell instead.")
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = list(_reverse_sequences(inputs, length, valid_length))
        states = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        l_cell, r_cell = self._children.values()
        nl = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:nl], layout=layout,
                                            merge_outputs=merge_outputs, valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=states[nl:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = _is_tensor(l_outputs)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r_outputs, _, _, _ = _format_sequence(None, reversed_r_outputs, layout, merge_outputs)
        if merge_outputs:
            reversed_r_outputs = F.stack(*reversed_r_outputs, axis=axis)
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2, name="%sout" % self._output_prefix)
        else:
            outputs = [F.concat(lo, ro, dim=1, name="%st%d" % (self._output_prefix, i))
                       for i, (lo, ro) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states
