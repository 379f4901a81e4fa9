"""``mx.sym.Symbol``: a handle to outputs of the graph IR in the Rust core.

Symbols are composed by calling operator functions (``mx.sym.FullyConnected``)
and arithmetic; they are named by ``mx.name`` managers and take attributes
from ``mx.AttrScope``; they infer shapes and dtypes in both directions,
serialise to MXNet's ``-symbol.json`` and bind to arrays as an
:class:`~oxnet.executor.Executor`.
"""
from __future__ import annotations

import json as _json

import numpy as _np

from .. import _native
from .. import attribute as _attribute
from .. import name as _name
from ..base import MXNetError, dtype_name
from ..context import Context, current_context

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "pow", "power", "maximum", "minimum",
           "hypot", "zeros", "ones", "full", "arange", "eye", "linspace"]

_SH = _native.SymbolHandle

# The attribute names MXNet keeps in both spellings (``lr_mult`` and
# ``__lr_mult__``); any other user attribute must be ``__name__``.
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")

_DTYPE_TO_FLAG = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6,
                  "bool": 7}
_FLAG_TO_DTYPE = {str(v): k for k, v in _DTYPE_TO_FLAG.items()}


def _attr_str(v):
    """An operator parameter as MXNet writes it in attributes."""
    if isinstance(v, str):
        return v
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, _np.integer)):
        return str(int(v))
    if isinstance(v, (float, _np.floating)):
        return repr(float(v))
    if isinstance(v, (tuple, list)):
        parts = [_attr_str(x) for x in v]
        if len(parts) == 1 and isinstance(v, tuple):
            return "(%s,)" % parts[0]
        return "(%s)" % ", ".join(parts)
    if isinstance(v, type) or isinstance(v, _np.dtype):
        return _np.dtype(v).name
    return str(v)


def _user_attrs(attr, kwargs=None):
    """The scope's attributes updated with ``attr``, as strings, with the
    hidden keys in both spellings."""
    out = {}
    scoped = _attribute.current().get(attr)
    for k, v in (scoped or {}).items():
        out[k] = str(v)
    for k, v in (kwargs or {}).items():
        out[k] = str(v)
    for k in list(out):
        if k in _HIDDEN_KEYS:
            out.setdefault("__%s__" % k, out[k])
        elif k.startswith("__") and k.endswith("__") and k[2:-2] in _HIDDEN_KEYS:
            out.setdefault(k[2:-2], out[k])
    return out


class Symbol:
    """Symbolic outputs of a computation graph (one, or a group).

    Compose by calling operator functions of ``mx.sym`` and arithmetic;
    inspect with ``list_arguments()``, ``list_outputs()``, ``infer_shape()``;
    run with ``bind()`` / ``simple_bind()`` / ``eval()``.
    """

    __slots__ = ("_h", "__weakref__")

    def __init__(self, handle):
        self._h = handle

    # ----------------------------------------------------------- basics
    def __repr__(self):
        name = self.name
        if name is None:
            return "<Symbol group [%s]>" % ", ".join(self.list_outputs())
        return "<Symbol %s>" % name

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __len__(self):
        """The number of outputs."""
        return self._h.num_outputs()

    def __bool__(self):
        from ..base import NotImplementedForSymbol

        raise NotImplementedForSymbol(self.__bool__, "bool")

    @property
    def name(self):
        """The name of a single-output symbol; None for a group."""
        return self._h.name()

    @property
    def handle(self):
        """The native graph handle."""
        return self._h

    def __copy__(self):
        return Symbol(_SH.group([self._h]))

    def __deepcopy__(self, _memo):
        return Symbol(_SH.from_json(self._h.tojson()))

    def copy(self):
        """A copy of the symbol (graph nodes are immutable and shared)."""
        return self.__copy__()

    def __getstate__(self):
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        self._h = _SH.from_json(state["handle"])

    def __getitem__(self, index):
        """``sym[i]``: output ``i``; ``sym['name']``: the output of that name
        (e.g. ``'fc1_output'`` from ``get_internals()``); a slice gives a group."""
        if isinstance(index, str):
            names = self.list_outputs()
            idx = [i for i, n in enumerate(names) if n == index]
            if not idx:
                raise ValueError("There is no output named '%s' (outputs: %s)" % (index, ", ".join(names)))
            if len(idx) > 1:
                raise ValueError("There are multiple outputs with name '%s'" % index)
            index = idx[0]
        if isinstance(index, slice):
            return Group([self[i] for i in range(len(self))[index]])
        if not isinstance(index, (int, _np.integer)):
            raise TypeError("Symbol only supports integer, string or slice indices, got %s" % type(index).__name__)
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("Symbol index %d is out of range: it has %d output(s)" % (index, n))
        return Symbol(self._h.get_output(int(index)))

    # ------------------------------------------------------ composition
    def __call__(self, *args, **kwargs):
        """Composes: replaces this symbol's inputs with other symbols,
        positionally (in ``list_arguments()`` order) or by name. Returns the
        new symbol; ``name=`` renames its head."""
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args, **kwargs):
        """Composes in place (see ``__call__``)."""
        name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or keyword arguments, not both")
        for v in list(args) + list(kwargs.values()):
            if not isinstance(v, Symbol):
                raise TypeError("Compose expect `Symbol` as arguments")
        if args:
            names = self.list_arguments()
            if len(args) > len(names):
                raise TypeError("compose: %d positional symbols for %d arguments" % (len(args), len(names)))
            kwargs = dict(zip(names, args))
        subs = {k: v._h for k, v in kwargs.items()}
        h = self._h.compose(subs) if subs else self._h
        if name:
            h = _rename(h, name)
        self._h = h

    # -------------------------------------------------------- listing
    def list_arguments(self):
        """Names of the arguments (inputs that are not auxiliary states), in
        the order ``bind`` takes arrays."""
        return self._h.list_arguments()

    def list_outputs(self):
        """Names of the outputs (``fc1_output``, ...)."""
        return self._h.list_outputs()

    def list_auxiliary_states(self):
        """Names of the auxiliary states (inputs an operator updates in
        place, such as BatchNorm's ``moving_mean``)."""
        return self._h.list_auxiliary_states()

    def list_inputs(self):
        """Names of every input: arguments and auxiliary states, in graph order."""
        return self._h.list_inputs()

    def get_internals(self):
        """A group of every output of every node (variables included); index
        it by name, e.g. ``sym.get_internals()['fc1_output']``."""
        return Symbol(self._h.get_internals())

    def get_children(self):
        """The inputs of the head node as a group, or None for a variable."""
        h = self._h.get_children()
        return None if h is None else Symbol(h)

    # ------------------------------------------------------- attributes
    def attr(self, key):
        """The attribute ``key`` of the head node (a string), or None."""
        if len(self) != 1:
            return None
        v = self._h.list_attr().get(key)
        if v is None and key in _HIDDEN_KEYS:
            v = self._h.list_attr().get("__%s__" % key)
        return v

    def list_attr(self, recursive=False):
        """The head node's attributes (operator parameters and user attributes)."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        return self._h.list_attr()

    def attr_dict(self):
        """Every node's attributes: ``{node name: {key: value}}``."""
        return self._h.attr_dict()

    def _set_attr(self, **kwargs):
        """Sets user attributes on the head node(s) (string values)."""
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError("Set Attr only accepts string values")
        self._h.set_attr(_user_attrs(None, kwargs) if kwargs else {})

    # -------------------------------------------------------- inference
    def _known(self, args, kwargs, conv):
        known = {}
        if args:
            names = self.list_arguments()
            if len(args) > len(names):
                raise ValueError("%d positional values for %d arguments" % (len(args), len(names)))
            for n, v in zip(names, args):
                if v is not None:
                    known[n] = conv(v)
        for k, v in kwargs.items():
            if v is not None:
                known[k] = conv(v)
        return known

    def infer_shape(self, *args, **kwargs):
        """Infers the shapes of every argument, output and auxiliary state
        from the shapes given (positionally in ``list_arguments()`` order, or
        by name). Returns ``(arg_shapes, out_shapes, aux_shapes)``, or
        ``(None, None, None)`` when some shapes stay unknown."""
        res = self._infer_shape_impl(False, *args, **kwargs)
        if res[1] is None:
            arg_shapes, _, _ = self._infer_shape_impl(True, *args, **kwargs)
            names = self.list_arguments()
            unknown = [n for n, s in zip(names, arg_shapes or []) if not s or 0 in s]
            import warnings

            warnings.warn("Cannot decide shape for the following arguments (0s in shape means unknown "
                          "dimensions). Consider providing them as input:\n\t" +
                          "\n\t".join("%s: %s" % (n, s) for n, s in zip(names, arg_shapes)
                                        if n in unknown), stacklevel=2)
        return res

    def infer_shape_partial(self, *args, **kwargs):
        """Like ``infer_shape`` but returns what is known, with ``()`` for
        unknown shapes (as MXNet 1.x)."""
        return self._infer_shape_impl(True, *args, **kwargs)

    def _infer_shape_impl(self, partial, *args, **kwargs):
        def conv(v):
            if not isinstance(v, (tuple, list)):
                raise TypeError("Arguments need to be shapes (tuple), got %r" % (v,))
            return [int(x) for x in v]

        a, o, x = self._h.infer_shape(self._known(args, kwargs, conv))
        if partial:
            f = lambda v: [tuple(s) if s is not None else () for s in v]
            return f(a), f(o), f(x)
        # a 0 dimension is unknown (MXNet 1.x's partial shapes)
        if any(s is None or 0 in s for s in a + o + x):
            return None, None, None
        return [tuple(s) for s in a], [tuple(s) for s in o], [tuple(s) for s in x]

    def infer_type(self, *args, **kwargs):
        """Infers dtypes from the given ones (NumPy dtypes, positionally or
        by name). Returns ``(arg_types, out_types, aux_types)`` as NumPy
        type objects, or ``(None, None, None)`` when some stay unknown."""
        a, o, x = self._infer_type_impl(*args, **kwargs)
        if any(t is None for t in a + o + x):
            return None, None, None
        return a, o, x

    def infer_type_partial(self, *args, **kwargs):
        """Like ``infer_type`` with None for unknown dtypes."""
        return self._infer_type_impl(*args, **kwargs)

    def _infer_type_impl(self, *args, **kwargs):
        a, o, x = self._h.infer_type(self._known(args, kwargs, dtype_name))
        f = lambda v: [None if t is None else _np.dtype(t).type for t in v]
        return f(a), f(o), f(x)

    # ---------------------------------------------------- serialisation
    def tojson(self, remove_amp_cast=True):
        """The graph as MXNet 1.x ``-symbol.json`` text."""
        return self._h.tojson()

    def save(self, fname, remove_amp_cast=True):
        """Writes ``tojson()`` to the file ``fname``."""
        if not isinstance(fname, str):
            raise TypeError("fname need to be string")
        with open(fname, "w") as f:
            f.write(self.tojson())

    def debug_str(self):
        """A readable listing of the graph: one line per node with its op,
        inputs and attributes."""
        g = _json.loads(self.tojson())
        lines = []
        nodes = g["nodes"]
        for n in nodes:
            if n["op"] == "null":
                lines.append("Variable:%s" % n["name"])
                continue
            lines.append("-" * 20)
            lines.append("Op:%s, Name=%s" % (n["op"], n["name"]))
            lines.append("Inputs:")
            for k, (src, idx, _v) in enumerate(n["inputs"]):
                lines.append("\targ[%d]=%s(%d)" % (k, nodes[src]["name"], idx))
            attrs = n.get("attrs", {})
            if attrs:
                lines.append("Attrs:")
                for k, v in attrs.items():
                    lines.append("\t%s=%s" % (k, v))
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------ arithmetic
    def _binary(self, other, op, scalar_op, rscalar_op=None, reverse=False):
        if isinstance(other, Symbol):
            return _create(op, [other, self] if reverse else [self, other], {})
        if isinstance(other, (int, float, _np.number, bool)):
            return _create(rscalar_op if reverse else scalar_op, [self], {"scalar": other})
        return NotImplemented

    def __add__(self, o):
        return self._binary(o, "_Plus", "_PlusScalar", "_PlusScalar")

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, "_Minus", "_MinusScalar")

    def __rsub__(self, o):
        return self._binary(o, "_Minus", "_MinusScalar", "_RMinusScalar", reverse=True)

    def __mul__(self, o):
        return self._binary(o, "_Mul", "_MulScalar", "_MulScalar")

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, "_Div", "_DivScalar")

    def __rtruediv__(self, o):
        return self._binary(o, "_Div", "_DivScalar", "_RDivScalar", reverse=True)

    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __mod__(self, o):
        return self._binary(o, "_Mod", "_ModScalar")

    def __rmod__(self, o):
        return self._binary(o, "_Mod", "_ModScalar", "_RModScalar", reverse=True)

    def __pow__(self, o):
        return self._binary(o, "_Power", "_PowerScalar")

    def __rpow__(self, o):
        return self._binary(o, "_Power", "_PowerScalar", "_RPowerScalar", reverse=True)

    def __neg__(self):
        return self.__mul__(-1.0)

    def __abs__(self):
        return _create("abs", [self], {})

    def __iadd__(self, o):
        return self.__add__(o)

    def __isub__(self, o):
        return self.__sub__(o)

    def __imul__(self, o):
        return self.__mul__(o)

    def __itruediv__(self, o):
        return self.__truediv__(o)

    def __eq__(self, o):
        return self._binary(o, "_equal", "_equal_scalar", "_equal_scalar")

    def __ne__(self, o):
        return self._binary(o, "_not_equal", "_not_equal_scalar", "_not_equal_scalar")

    def __gt__(self, o):
        return self._binary(o, "_greater", "_greater_scalar", "_lesser_scalar")

    def __ge__(self, o):
        return self._binary(o, "_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar")

    def __lt__(self, o):
        return self._binary(o, "_lesser", "_lesser_scalar", "_greater_scalar")

    def __le__(self, o):
        return self._binary(o, "_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar")

    __hash__ = object.__hash__

    # ------------------------------------------------------ fluent ops
    def astype(self, dtype, **kwargs):
        """``cast(self, dtype=dtype)``."""
        return _create("Cast", [self], dict(kwargs, dtype=dtype))

    def __getattr__(self, name):
        # the fluent methods NDArray has: sym.reshape(...), sym.sum(...), ...
        if name.startswith("_") or name not in _FLUENT:
            raise AttributeError("'Symbol' object has no attribute '%s'" % name)
        opname = _FLUENT[name]

        def method(*args, **kwargs):
            return _op_function(opname)(self, *args, **kwargs)

        method.__name__ = name
        method.__doc__ = "``mx.sym.%s(self, ...)``." % opname
        return method

    # --------------------------------------------------------- running
    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Infers every shape from the given input shapes (``data=(32, 100)``),
        allocates the arguments, gradients (per ``grad_req``) and auxiliary
        states, and binds. Returns an :class:`~oxnet.executor.Executor`."""
        from ..executor import simple_bind

        # as MXNet, keyword arguments that are not shapes are ignored
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        return simple_bind(self, ctx, grad_req, type_dict, group2ctx, shared_arg_names, shared_exec,
                           shared_buffer, shapes)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Binds arrays to the symbol's arguments (a list in
        ``list_arguments()`` order or a dict by name), gradient arrays, and
        auxiliary states. Returns an :class:`~oxnet.executor.Executor`."""
        from ..executor import Executor

        return Executor(self, ctx, args, args_grad, grad_req, aux_states, group2ctx)

    def _gen_atomic_symbol(self):
        """A symbol of the head node's operator and attributes alone, over
        new variables (MXNet uses it to describe a node)."""
        js = _json.loads(self.tojson())
        node = js["nodes"][js["heads"][0][0]]
        if node["op"] == "null":
            return var(node["name"])
        h = _SH.create(node["op"], list(node.get("attrs", {}).items()), [], node["name"])
        return Symbol(h)

    def _bind(self, *a, **k):
        return self.bind(*a, **k)

    def eval(self, ctx=None, **kwargs):
        """Binds the given arrays (by name), runs forward and returns the
        list of outputs."""
        if ctx is None:
            ctx = current_context()
        return self.bind(ctx, kwargs).forward()

    def gradient(self, wrt):
        """Not supported (MXNet 1.9.1 does not implement it either); use
        ``bind(..., args_grad=...)`` and ``backward()``."""
        raise NotImplementedError("Symbol.gradient is not implemented in MXNet 1.x either; "
                                  "bind the symbol with gradient arrays and call backward()")

    def optimize_for(self, backend, args=None, aux=None, ctx=None, **kwargs):
        """Partitions the graph for ``backend`` (registered with
        ``mx.sym.register_backend``); returns the new symbol."""
        from .subgraph import optimize_for

        return optimize_for(self, backend, args, aux, ctx, **kwargs)

    def get_backend_symbol(self, backend):
        """The symbol partitioned by ``backend`` (``optimize_for`` without shapes)."""
        from .subgraph import get_backend_symbol

        return get_backend_symbol(self, backend)


def _rename(h, name):
    """The head of a single-output symbol with another name."""
    js = _json.loads(h.tojson())
    head = js["heads"][0][0]
    js["nodes"][head]["name"] = name
    return _SH.from_json(_json.dumps(js))


# Fluent methods: method name -> operator.
_FLUENT = {n: n for n in (
    "reshape reshape_like zeros_like ones_like broadcast_axes repeat pad swapaxes split split_v2 slice "
    "slice_axis slice_like take one_hot pick sort topk argsort argmax argmax_channel argmin clip abs sign "
    "flatten shape_array size_array expand_dims broadcast_to broadcast_like tile transpose flip "
    "depth_to_space space_to_depth diag sum nansum prod nanprod mean max min norm round rint fix floor ceil "
    "trunc sin cos tan arcsin arccos arctan degrees radians sinh cosh tanh arcsinh arccosh arctanh exp expm1 "
    "log log10 log2 log1p sqrt rsqrt cbrt rcbrt square reciprocal relu sigmoid softmax log_softmax softmin "
    "squeeze").split()}
_FLUENT["flatten"] = "Flatten"
_FLUENT["split"] = "SliceChannel"
_FLUENT["cast"] = "Cast"


def _create(opname, inputs, params, name=None, attr=None, hint=None):
    """One operator node over symbols ``inputs`` (a list whose ``None``
    entries become new variables) with parameters ``params``."""
    op = _native.get_op(opname)
    attrs = [(k, _attr_str(v)) for k, v in params.items()]
    if op.variadic and not any(k == "num_args" for k, _ in attrs) and "num_args" in _op_params(opname):
        attrs.append(("num_args", str(len(inputs))))
    user = _user_attrs(attr)
    name = _name.current().get(name, hint or opname.lower())
    handles = [None if s is None else s._h for s in inputs]
    return Symbol(_SH.create(opname, attrs + sorted(user.items()), handles, name))


def _op_params(opname):
    from ..ndarray._signatures import ARGS

    return ARGS.get(opname, ("num_args",))


_fn_cache = {}


def _op_function(opname):
    """``mx.sym.<opname>``: positional symbols fill the inputs in order,
    keyword symbols by name; other arguments are the operator's parameters
    (by keyword, or positionally in MXNet's order); ``name=`` and ``attr=``
    name the node and give it attributes."""
    f = _fn_cache.get(opname)
    if f is not None:
        return f
    op = _native.get_op(opname)
    from ..ndarray._signatures import ARGS, KWONLY
    from ..ndarray.op import _positional_params

    input_names = list(op.inputs)
    order = ARGS.get(opname)
    n_order_inputs = 0
    for a in order or ():
        if a not in input_names:
            break
        n_order_inputs += 1

    def fn(*args, name=None, attr=None, out=None, **kwargs):
        if out is not None:
            raise TypeError("%s: symbols take no out= argument" % opname)
        syms = []
        rest = []
        for a in args:
            if isinstance(a, Symbol):
                if rest:
                    raise TypeError("%s: Symbol input after a non-symbol positional argument" % opname)
                syms.append(a)
            elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Symbol) for x in a):
                syms.extend(a)
            else:
                rest.append(a)
        sym_kw = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
        user = {k: params.pop(k) for k in list(params) if k.startswith("__") and k.endswith("__")}
        if rest:
            _positional_params(opname, order, input_names, min(len(syms), n_order_inputs) if order else 0,
                               rest, params)
        for k in [k for k, v in params.items() if v is None and k in input_names]:
            params.pop(k)
        attr_all = dict(attr or {})
        attr_all.update({k: str(v) for k, v in user.items()})
        if op.variadic:
            inputs = syms + list(sym_kw.values())
            return _create(opname, inputs, params, name, attr_all)
        slots = _SH.op_input_names(opname, [(k, _attr_str(v)) for k, v in params.items()])
        inputs = [None] * len(slots)
        if len(syms) > len(slots):
            raise TypeError("%s: takes %d input(s) (%s), got %d" % (opname, len(slots), ", ".join(slots), len(syms)))
        for i, s in enumerate(syms):
            inputs[i] = s
        for k, v in sym_kw.items():
            if k not in slots:
                raise TypeError("%s: '%s' is not an input (inputs: %s)" % (opname, k, ", ".join(slots)))
            inputs[slots.index(k)] = v
        return _create(opname, inputs, params, name, attr_all)

    fn.__name__ = opname
    fn.__qualname__ = opname
    fn.__doc__ = (
        "%s\n\nInputs (Symbols, positionally or by keyword): %s%s\nParameters by keyword as in MXNet 1.9.1; "
        "name : str, attr : dict.\n\nReturns Symbol." % (op.doc, ", ".join(input_names), ", ..." if op.variadic else "")
    )
    _fn_cache[opname] = fn
    return fn


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None, stype=None, **kwargs):
    """Creates a variable (an input of the graph) named ``name``, with
    optional shape, dtype, learning-rate / weight-decay multipliers,
    initializer and ``__name__``-style attributes. Returns a Symbol."""
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    a = dict(_attribute.current().get(attr) or {})
    if shape is not None:
        a["__shape__"] = str(tuple(shape))
    if lr_mult is not None:
        a["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        a["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        a["__dtype__"] = str(_DTYPE_TO_FLAG[dtype_name(dtype)])
    if init is not None:
        a["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        a["__storage_type__"] = str({"default": 0, "row_sparse": 1, "csr": 2}[stype])
    for k, v in kwargs.items():
        if k.startswith("__") and k.endswith("__"):
            a[k] = str(v)
        else:
            raise ValueError("Attribute name=%s is not supported. Additional attributes must start and end "
                             "with double underscores, e.g, __yourattr__" % k)
    return Symbol(_SH.variable(name, _user_attrs(None, a)))


Variable = var


def Group(symbols, create_fn=Symbol):
    """A symbol whose outputs are the outputs of ``symbols`` in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return create_fn(_SH.group([s._h for s in symbols]))


def load_json(json_str):
    """A symbol from MXNet ``-symbol.json`` text."""
    if not isinstance(json_str, str):
        raise TypeError("json_str needs to be a string")
    return Symbol(_SH.from_json(json_str))


def load(fname):
    """A symbol from a ``-symbol.json`` file written by MXNet or oxnet."""
    if not isinstance(fname, str):
        raise TypeError("fname needs to be a string")
    with open(fname) as f:
        text = f.read()
    try:
        return load_json(text)
    except MXNetError as e:
        raise type(e)("%s: %s" % (fname, e)) from None


def _ufunc(lhs, rhs, op, lscalar, rscalar, fn_np):
    if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
        return _create(op, [lhs, rhs], {})
    if isinstance(lhs, Symbol):
        return _create(lscalar, [lhs], {"scalar": rhs})
    if isinstance(rhs, Symbol):
        return _create(rscalar, [rhs], {"scalar": lhs})
    return fn_np(lhs, rhs)


def pow(base, exp):
    """``base ** exp`` for symbols and/or numbers."""
    return _ufunc(base, exp, "_Power", "_PowerScalar", "_RPowerScalar", lambda a, b: a ** b)


power = pow


def maximum(left, right):
    """Element-wise maximum of symbols and/or numbers."""
    return _ufunc(left, right, "_Maximum", "_MaximumScalar", "_MaximumScalar", max)


def minimum(left, right):
    """Element-wise minimum of symbols and/or numbers."""
    return _ufunc(left, right, "_Minimum", "_MinimumScalar", "_MinimumScalar", min)


def hypot(left, right):
    """Element-wise sqrt(left**2 + right**2) of symbols and/or numbers."""
    return _ufunc(left, right, "_hypot", "_hypot_scalar", "_hypot_scalar", lambda a, b: _np.hypot(a, b))


def _init_op(opname, name, attr, params):
    params = {k: v for k, v in params.items() if v is not None}
    return _create(opname, [], params, name, attr)


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros of ``shape``."""
    return _init_op("_zeros", kwargs.pop("name", None), kwargs.pop("attr", None),
                    dict(kwargs, shape=shape, dtype=dtype_name(dtype or "float32")))


def ones(shape, dtype=None, **kwargs):
    """A symbol of ones of ``shape``."""
    return _init_op("_ones", kwargs.pop("name", None), kwargs.pop("attr", None),
                    dict(kwargs, shape=shape, dtype=dtype_name(dtype or "float32")))


def full(shape, val, dtype=None, **kwargs):
    """A symbol of ``shape`` filled with ``val``."""
    return _init_op("_full", kwargs.pop("name", None), kwargs.pop("attr", None),
                    dict(kwargs, shape=shape, value=val, dtype=dtype_name(dtype or "float32")))


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """A symbol of evenly spaced values in [start, stop)."""
    return _init_op("_arange", name, None, dict(start=start, stop=stop, step=step, repeat=repeat,
                                                infer_range=infer_range, dtype=dtype_name(dtype or "float32")))


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """A symbol of a 2-D identity-like matrix."""
    return _init_op("_eye", kwargs.pop("name", None), kwargs.pop("attr", None),
                    dict(kwargs, N=N, M=M, k=k, dtype=dtype_name(dtype or "float32")))


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """A symbol of ``num`` evenly spaced values over [start, stop]."""
    return _init_op("_linspace", name, None, dict(start=start, stop=stop, num=num, endpoint=endpoint,
                                                  dtype=dtype_name(dtype or "float32")))


def _ctx(ctx):
    if ctx is None:
        return current_context()
    if isinstance(ctx, (list, tuple)):
        ctx = ctx[0]
    if not isinstance(ctx, Context):
        raise TypeError("ctx must be a Context, got %s" % type(ctx).__name__)
    return ctx
