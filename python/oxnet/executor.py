"""``mx.executor.Executor``: a symbol bound to arrays.

Binding plans the graph once in the Rust core (gradient pass, shape and dtype
inference, memory planning); ``forward`` and ``backward`` push every node to
the engine and return at once; the arrays are reused by every call.
"""
from __future__ import annotations

import numpy as _np

from . import _native
from .base import MXNetError, dtype_name
from .context import Context, current_context
from .ndarray import NDArray, zeros

__all__ = ["Executor"]

_REQS = ("null", "write", "add", "inplace")


def _ctx(ctx):
    if ctx is None:
        return current_context()
    if isinstance(ctx, (list, tuple)):
        ctx = ctx[0]
    if not isinstance(ctx, Context):
        raise TypeError("ctx must be a Context, got %s" % type(ctx).__name__)
    return ctx


def _as_list(what, names, given, allow_missing):
    """Arrays in ``names`` order from a list or a dict (None where missing)."""
    if given is None:
        if allow_missing:
            return [None] * len(names)
        raise ValueError("%s: no arrays given for %s" % (what, ", ".join(names)))
    if isinstance(given, dict):
        extra = [k for k in given if k not in names]
        if extra and not allow_missing:
            pass
        out = []
        for n in names:
            a = given.get(n)
            if a is None and not allow_missing:
                raise ValueError("bind: %s '%s' is missing (expected %s)" % (what, n, ", ".join(names)))
            out.append(a)
        return out
    given = list(given)
    if len(given) != len(names):
        raise ValueError("bind: %d %s given for %d names (%s)" % (len(given), what, len(names), ", ".join(names)))
    return given


def _reqs(grad_req, names):
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, "null") for n in names]
    else:
        reqs = list(grad_req)
        if len(reqs) != len(names):
            raise ValueError("bind: %d grad_req values for %d arguments" % (len(reqs), len(names)))
    for r in reqs:
        if r not in _REQS:
            raise ValueError("grad_req must be one of %s, got '%s'" % (", ".join(_REQS), r))
    return ["write" if r == "inplace" else r for r in reqs]


class Executor:
    """A bound symbol. ``forward(is_train=False, **inputs)`` runs it and
    returns ``outputs``; ``backward(out_grads=None)`` writes the gradients
    into ``grad_arrays`` by each argument's ``grad_req``.

    Attributes: ``arg_arrays``, ``grad_arrays``, ``aux_arrays``,
    ``outputs``, and the same by name: ``arg_dict``, ``grad_dict``,
    ``aux_dict``, ``output_dict``.
    """

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None):
        self._symbol = symbol
        self._ctx = _ctx(ctx)
        self._group2ctx = group2ctx
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
        args = _as_list("argument", arg_names, args, False)
        for n, a in zip(arg_names, args):
            if not isinstance(a, NDArray):
                raise TypeError("bind: argument '%s' must be an NDArray, got %s" % (n, type(a).__name__))
        reqs = _reqs(grad_req, arg_names)
        grads = _as_list("gradient", arg_names, args_grad, True)
        if args_grad is None:
            reqs = ["null"] * len(arg_names)
        for i, (n, g) in enumerate(zip(arg_names, grads)):
            if g is None:
                reqs[i] = "null"
            elif not isinstance(g, NDArray):
                raise TypeError("bind: gradient of '%s' must be an NDArray, got %s" % (n, type(g).__name__))
        aux = _as_list("auxiliary state", aux_names, aux_states if aux_names else [], not aux_names)
        if aux_names and any(a is None for a in aux):
            raise ValueError("bind: auxiliary states %s are missing" % aux_names)
        self.arg_arrays = args
        self.grad_arrays = grads
        self.aux_arrays = aux
        self._grad_req = dict(zip(arg_names, reqs))
        self._h = _native.GraphExecutor(symbol.handle, self._ctx._pair(), args, grads, reqs, aux)
        self.outputs = self._h.outputs()
        self._monitor = None
        self._monitor_exec = None
        self._arg_dict = self._grad_dict = self._aux_dict = None

    # ------------------------------------------------------------ dicts
    @property
    def arg_dict(self):
        """Argument arrays by name."""
        if self._arg_dict is None:
            self._arg_dict = dict(zip(self._symbol.list_arguments(), self.arg_arrays))
        return self._arg_dict

    @property
    def grad_dict(self):
        """Gradient arrays by argument name (None where not requested)."""
        if self._grad_dict is None:
            self._grad_dict = dict(zip(self._symbol.list_arguments(), self.grad_arrays))
        return self._grad_dict

    @property
    def aux_dict(self):
        """Auxiliary-state arrays by name."""
        if self._aux_dict is None:
            self._aux_dict = dict(zip(self._symbol.list_auxiliary_states(), self.aux_arrays))
        return self._aux_dict

    @property
    def output_dict(self):
        """Output arrays by output name."""
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    # ---------------------------------------------------------- running
    def forward(self, is_train=False, **kwargs):
        """Copies the given inputs (by name, NDArrays or NumPy arrays) into
        the bound arguments and runs the graph; ``is_train`` selects training
        behaviour (Dropout, BatchNorm batch statistics and moving-average
        updates). Returns the list of outputs."""
        if kwargs:
            d = self.arg_dict
            for k, v in kwargs.items():
                if k not in d:
                    raise ValueError("forward: unknown argument '%s' (arguments: %s)" % (k, ", ".join(d)))
                dst = d[k]
                if isinstance(v, NDArray):
                    if v.shape != dst.shape:
                        raise ValueError("forward: argument '%s' has shape %s, the executor was bound with %s"
                                         % (k, v.shape, dst.shape))
                    v.copyto(dst)
                else:
                    v = _np.asarray(v)
                    if v.shape != dst.shape:
                        raise ValueError("forward: argument '%s' has shape %s, the executor was bound with %s"
                                         % (k, v.shape, dst.shape))
                    dst[:] = v
        self.outputs = self._h.forward(bool(is_train))
        if self._monitor is not None:
            self._run_monitor(is_train)
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Runs the gradient graph. ``out_grads``: the gradients of the
        outputs (an NDArray, a list, or a dict by output name); None seeds
        every output with ones (what a loss output needs)."""
        n = len(self.outputs)
        if out_grads is None:
            hg = [None] * n
        elif isinstance(out_grads, NDArray):
            hg = [out_grads]
        elif isinstance(out_grads, dict):
            hg = [out_grads.get(k) for k in self._symbol.list_outputs()]
        else:
            hg = list(out_grads)
        if len(hg) < n:
            raise ValueError("backward: %d out_grads for %d outputs" % (len(hg), n))
        hg = hg[:n]  # MXNet ignores extra ones
        for i, g in enumerate(hg):
            if g is not None and not isinstance(g, NDArray):
                raise TypeError("backward: out_grads must be NDArrays, got %s" % type(g).__name__)
            if g is not None and g.dtype != self.outputs[i].dtype:
                hg[i] = g.astype(self.outputs[i].dtype)  # MXNet copies with a cast
        if all(r == "null" for r in self._grad_req.values()):
            return
        self._h.backward(hg)

    # ------------------------------------------------------------ misc
    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies values from dicts of arrays into the bound arguments and
        auxiliary states; a name the executor lacks raises unless
        ``allow_extra_params``."""
        for name, array in (arg_params or {}).items():
            if name in self.arg_dict:
                dst = self.arg_dict[name]
                array.astype(dst.dtype).copyto(dst)
            elif not allow_extra_params:
                raise ValueError("Find name \"%s\" that is not in the arguments" % name)
        for name, array in (aux_params or {}).items():
            if name in self.aux_dict:
                dst = self.aux_dict[name]
                array.astype(dst.dtype).copyto(dst)
            elif not allow_extra_params:
                raise ValueError("Find name %s that is not in the auxiliary states" % name)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes, sharing the arrays whose
        shapes do not change. Arguments whose shape changes without being
        named raise unless ``partial_shaping``; a larger array than before
        raises unless ``allow_up_sizing``."""
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise ValueError("reshape: cannot infer every shape from %s" % kwargs)

        def pick(names, shapes, olds, what, grads=False):
            out = []
            for n, s, old in zip(names, shapes, olds):
                if old is None:
                    out.append(None)
                    continue
                if tuple(s) == old.shape:
                    out.append(old)
                    continue
                if n not in kwargs and not partial_shaping and not grads:
                    raise ValueError("reshape: shape of unspecified %s '%s' changed; set partial_shaping=True"
                                     % (what, n))
                size = int(_np.prod(s))
                if size > old.size:
                    if not allow_up_sizing:
                        raise ValueError("reshape: '%s' would grow from %s to %s; set allow_up_sizing=True"
                                         % (n, old.shape, tuple(s)))
                    out.append(zeros(s, ctx=self._ctx, dtype=old.dtype))
                else:
                    # a smaller array shares the old one's memory, as in MXNet
                    out.append(old.reshape((old.size,))[:size].reshape(tuple(s)))
            return out

        arg_names = self._symbol.list_arguments()
        args = pick(arg_names, arg_shapes, self.arg_arrays, "argument")
        grads = pick(arg_names, arg_shapes, self.grad_arrays, "gradient", grads=True)
        aux = pick(self._symbol.list_auxiliary_states(), aux_shapes, self.aux_arrays, "auxiliary state")
        reqs = [self._grad_req[n] for n in arg_names]
        return Executor(self._symbol, self._ctx, args, grads, reqs, aux, self._group2ctx)

    def set_monitor_callback(self, callback, monitor_all=False):
        """Calls ``callback(name, array)`` after each forward for every
        operator output (``monitor_all``: and every operator input)."""
        self._monitor = (callback, monitor_all)
        self._monitor_exec = None

    def _run_monitor(self, is_train):
        import json

        from .symbol import Group

        callback, monitor_all = self._monitor
        if self._monitor_exec is None:
            internals = self._symbol.get_internals()
            js = json.loads(internals.tojson())
            names = internals.list_outputs()
            keep = [i for i, (h, n) in enumerate(zip(js["heads"], names)) if js["nodes"][h[0]]["op"] != "null"]
            group = Group([internals[i] for i in keep])
            self._monitor_exec = (group.bind(self._ctx, self.arg_dict, aux_states=self.aux_dict), [names[i] for i in keep])
        ex, names = self._monitor_exec
        outs = ex.forward(is_train=False)
        if monitor_all:
            for n, a in self.arg_dict.items():
                callback(n, a)
        for n, a in zip(names, outs):
            callback(n, a)

    def debug_str(self):
        """The graph's listing with the planned memory: bytes of the shared
        blocks against the bytes the entries would take on their own."""
        planned, unplanned = self._h.memory_bytes()
        nf, nb = self._h.num_nodes()
        return (self._symbol.debug_str() + "Total %d operator nodes (%d forward, %d backward)\n"
                "Planned memory: %.3f MB of shared blocks for %.3f MB of intermediate results\n"
                "Total %d MB allocated\n"
                % (nf + nb, nf, nb, planned / 2**20, unplanned / 2**20, self._h.allocated_bytes() // 2**20))

    def get_optimized_symbol(self):
        """The forward graph the executor runs: subgraph nodes inlined and
        common subexpressions computed once (``MXNET_ELIMINATE_COMMON_EXPR``,
        on unless ``0``). Returns a Symbol."""
        from .symbol import Symbol

        return Symbol(self._h.optimized_symbol())

    def memory_bytes(self):
        """(bytes of the planned shared blocks, bytes of the intermediate
        results each on its own)."""
        return self._h.memory_bytes()


def simple_bind(symbol, ctx, grad_req, type_dict, group2ctx, shared_arg_names, shared_exec, shared_buffer, shapes):
    """``Symbol.simple_bind``: infers shapes and dtypes, allocates zeroed
    arrays (sharing those of ``shared_exec`` / ``shared_buffer`` with the
    same name and shape) and binds."""
    ctx = _ctx(ctx)
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        a, _, _ = symbol.infer_shape_partial(**shapes)
        missing = [n for n, s in zip(symbol.list_arguments(), a) if not s]
        raise MXNetError("simple_bind: cannot infer the shapes of %s from %s" % (", ".join(missing), shapes))
    types = {k: dtype_name(v) for k, v in (type_dict or {}).items()}
    arg_names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    known = {n: types[n] for n in arg_names + aux_names if n in types}
    a_t, _, x_t = symbol.infer_type_partial(**known)
    a_t = [dtype_name(t) if t is not None else types.get(n, "float32") for n, t in zip(arg_names, a_t)]
    x_t = [dtype_name(t) if t is not None else types.get(n, "float32") for n, t in zip(aux_names, x_t)]
    reqs = _reqs(grad_req, arg_names)
    shared = {}
    if shared_exec is not None:
        shared.update(shared_exec.arg_dict)
    if shared_buffer is not None:
        shared.update(shared_buffer)

    def alloc(n, s, t):
        old = shared.get(n)
        if old is not None and old.shape == tuple(s) and old.dtype == _np.dtype(t):
            return old
        a = zeros(tuple(s), ctx=ctx, dtype=t)
        if shared_buffer is not None and n not in shared_buffer:
            shared_buffer[n] = a
        return a

    args = [alloc(n, s, t) for n, s, t in zip(arg_names, arg_shapes, a_t)]
    grads = []
    for n, s, t, r in zip(arg_names, arg_shapes, a_t, reqs):
        if r == "null":
            grads.append(None)
        elif shared_exec is not None and shared_exec.grad_dict.get(n) is not None \
                and shared_exec.grad_dict[n].shape == tuple(s):
            grads.append(shared_exec.grad_dict[n])
        else:
            grads.append(zeros(tuple(s), ctx=ctx, dtype=t))
    aux = []
    for n, s, t in zip(aux_names, aux_shapes, x_t):
        old = shared_exec.aux_dict.get(n) if shared_exec is not None else None
        aux.append(old if old is not None and old.shape == tuple(s) else zeros(tuple(s), ctx=ctx, dtype=t))
    return Executor(symbol, ctx, args, grads, reqs, aux, group2ctx)
