"""Gluon Blocks (``mx.gluon.Block``, ``HybridBlock``, ``SymbolBlock``).

A Block owns Parameters and child Blocks and computes ``forward``. Names
follow MXNet 1.9.1: a Block made outside any name scope is called
``<classname><n>_`` (``dense0_``) by the global name manager; a child made
inside its parent's ``name_scope()`` gets the parent's prefix plus its own
counter (``model_dense0_``); Parameters are named ``prefix + name``
(``dense0_weight``).
"""
from __future__ import annotations

import copy
import re
import threading
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

from .. import autograd, initializer, ndarray
from ..base import MXNetError
from ..ndarray import NDArray
from .parameter import DeferredInitializationError, Parameter, ParameterDict
from .utils import HookHandle, _brief_print_list, _indent

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


try:  # the symbolic API is imported before gluon by oxnet/__init__.py
    from .. import symbol as _symbol

    _SymbolType = _symbol.Symbol
except ImportError:  # pragma: no cover - a build without oxnet.symbol
    _symbol = None
    _SymbolType = ()


def _symbol_module():
    """``oxnet.symbol`` when the symbolic API is present, else None."""
    return _symbol


def _cached_op_available():
    return _symbol is not None and hasattr(ndarray, "CachedOp")


def _is_symbol(x):
    return isinstance(x, _SymbolType)


class _FallbackNameManager:
    """MXNet's NameManager counter (used only while ``oxnet.name`` is absent)."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}

    def get(self, name, hint):
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return "%s%d" % (hint, n)


def _global_name(hint):
    try:
        from .. import name as _name

        cur = getattr(_name.NameManager._current, "value", None)
        if cur is None:
            cur = _name.NameManager._current.value = _name.NameManager()
        return cur.get(None, hint)
    except ImportError:
        cur = getattr(_FallbackNameManager._current, "value", None)
        if cur is None:
            cur = _FallbackNameManager._current.value = _FallbackNameManager()
        return cur.get(None, hint)


class _BlockScope:
    """The name scope of a Block: children made inside it get its prefix."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """The (prefix, ParameterDict) of a new Block with hint ``hint``."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _global_name(hint) + "_"
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = "%s%d_" % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        try:
            from .. import name as _name

            self._name_scope = _name.Prefix(self._block.prefix)
            self._name_scope.__enter__()
        except ImportError:
            self._name_scope = None
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        if self._name_scope is not None:
            self._name_scope.__exit__(ptype, value, trace)
            self._name_scope = None
        _BlockScope._current.value = self._old_scope


def _flatten(args, inout_str):
    """Flatten nested lists of arrays/symbols; returns (flat list, format)."""
    if isinstance(args, NDArray):
        return [args], 0
    if _is_symbol(args):
        n = len(args.list_outputs())
        return [args], (n if n > 1 else 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError(
            "When hybridized, the input of HybridBlock {} must be (nested) list of Symbol or NDArray, "
            "but got {} of type {}".format(inout_str, str(args), str(type(args)))
        )
    flat, fmts = [], []
    for i in args:
        a, f = _flatten(i, inout_str)
        flat.extend(a)
        fmts.append(f)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of :func:`_flatten`."""

    def merge(args, fmt):
        if isinstance(fmt, int):
            if fmt < -1:
                raise ValueError("Unsupported encoded format {}.".format(fmt))
            if fmt == 0:
                return args[0], args[1:]
            if fmt == -1:
                if args[0] is not None:
                    raise ValueError(
                        "We do not support passing types that are not None when the initial HybridBlock has "
                        "received NoneType and has been hybridized. Received arg = {}, fmt = {}.".format(args[0], fmt)
                    )
                return None, args[1:]
            return args[:fmt], args[fmt:]
        ret = []
        for i in fmt:
            res, args = merge(args, i)
            ret.append(res)
        return ret, args

    return merge(args, fmt)[0]


def _gather_type_ctx_info(args):
    """(has_symbol, has_ndarray, set of contexts, first context) of nested args."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if _is_symbol(args):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_sym = has_nd = False
        ctxs = set()
        first = None
        for a in args:
            s, n, c, f = _gather_type_ctx_info(a)
            has_sym = has_sym or s
            has_nd = has_nd or n
            if first is None and f is not None:
                first = f
            ctxs |= c
            if has_sym and has_nd:
                break
        return has_sym, has_nd, ctxs, first
    return False, False, set(), None


class Block:
    """Base class of all layers and models.

    Parameters
    ----------
    prefix : str, optional
        Prefix of the names of this Block's Parameters and children
        (default: made from the class name, e.g. ``dense0_``).
    params : ParameterDict, optional
        Share these Parameters instead of creating new ones.

    Subclasses define ``forward(*args)``; children assigned as attributes
    (``self.fc = nn.Dense(10)``) are registered automatically.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        modstr = "\n".join(
            "  ({key}): {block}".format(key=key, block=_indent(block.__repr__(), 2))
            for key, block in self.__dict__.items()
            if isinstance(block, Block)
        )
        return "{name}(\n{modstr}\n)".format(name=self.__class__.__name__, modstr=modstr)

    def __setattr__(self, name, value):
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(
                    "Changing attribute type for {name} from {type1} to {type2} is not allowed.".format(
                        name=name, type1=type(existing), type2=type(value)
                    )
                )
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise AssertionError(
                    "Overriding Parameter attribute %s is not allowed. If you want to share parameters between "
                    "blocks, please set 'params' at Block construction instead." % name
                )
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _check_container_with_block(self):
        children = set(id(c) for c in self._children.values())

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(e) for e in data)
            if isinstance(data, dict):
                return any(unregistered(v) for v in data.values())
            if isinstance(data, Block):
                return id(data) not in children
            return False

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or k == "_children"):
                if unregistered(v):
                    warnings.warn(
                        '"{name}" is an unregistered container with Blocks. Note that Blocks inside the list, '
                        "tuple or dict will not be registered automatically. Make sure to register them using "
                        "register_child() or switching to nn.Sequential/nn.HybridSequential instead. ".format(
                            name=self.__class__.__name__ + "." + k
                        ),
                        stacklevel=3,
                    )

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """Prefix of this Block's names (``dense0_``)."""
        return self._prefix

    @property
    def name(self):
        """This Block's name (the prefix without its trailing underscore)."""
        return self._name

    def name_scope(self):
        """Scope in which children get this Block's prefix: ``with self.name_scope(): ...``."""
        return self._scope

    @property
    def params(self):
        """This Block's own ParameterDict (children's Parameters not included)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this Block's and all descendants' Parameters;
        ``select`` is a regular expression the names must match (``re.match``),
        e.g. ``'.*weight|.*bias'``."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: v for n, v in self.params.items() if pattern.match(n)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + k: v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename, deduplicate=False):
        """Save Parameters to ``filename`` in MXNet's ``.params`` format, keyed
        by attribute path (``0.weight``, ``features.1.bias``). With
        ``deduplicate`` a shared Parameter is saved once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {v: k for k, v in params.items()}
            params = {v: k for k, v in reverse.items()}
        ndarray.save(filename, {k: v._reduce() for k, v in params.items()})

    def save_params(self, filename):
        """Deprecated: save ``collect_params()`` with this Block's prefix stripped."""
        warnings.warn("save_params is deprecated. Please use save_parameters.")
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False, cast_dtype=False,
                        dtype_source="current"):
        """Load Parameters saved by :meth:`save_parameters` (or by
        ``collect_params().save``, whose names carry the Block's prefix).

        allow_missing : bool -- skip Parameters absent from the file.
        ignore_extra : bool -- skip names in the file this Block lacks.
        cast_dtype : bool -- cast to the dtype given by ``dtype_source``
        ('current': the Parameter's, 'saved': the file's).
        """
        loaded = ndarray.load(filename)
        if isinstance(loaded, list):
            if loaded:
                raise MXNetError(f"load_parameters: {filename} holds unnamed arrays, not named parameters")
            loaded = {}
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded.keys()):
            # a file written by collect_params().save / save_params
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            inv = defaultdict(list)
            for k, v in params.items():
                inv[v].append(k)
            for name, param in params.items():
                if not any(p in loaded for p in inv[param]):
                    raise AssertionError(
                        "Parameter '%s' is missing in file '%s', which contains parameters: %s. "
                        "Set allow_missing=True to ignore missing parameters."
                        % (name, filename, _brief_print_list(loaded.keys()))
                    )
        for name in loaded:
            if not ignore_extra and name not in params:
                raise ValueError(
                    "Parameter '%s' loaded from file '%s' is not present in ParameterDict, which contains "
                    "parameters %s. Set ignore_extra=True to ignore. "
                    % (name, filename, _brief_print_list(self._params.keys()))
                )
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated alias of :meth:`load_parameters`."""
        warnings.warn("load_params is deprecated. Please use load_parameters.")
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix):
        """Save the structure and cached graphs to ``prefix-model.json`` and the
        Parameters to ``prefix-model.params`` (MXNet 1.9.1's Block.save); a
        Block built the same way (same classes and children) restores both
        with :meth:`load`."""
        import json

        model = {}

        def walk(blk, index, structure):
            mdl = {"orig_name": blk.name}
            structure[type(blk).__name__.lower() + str(index[0])] = mdl
            if isinstance(blk, HybridBlock):
                if blk._cached_graph:
                    mdl["in_format"] = blk._in_format
                    mdl["out_format"] = blk._out_format
                    syms, out = blk._cached_graph
                    mdl["inputs"] = [s.tojson() for s in syms]
                    mdl["symbol"] = out.tojson()
                    mdl["hybridized"] = True
                else:
                    mdl["hybridized"] = False
            children = {}
            mdl["children"] = children
            for ch_name, child in blk._children.items():
                index[0] += 1
                children[child.name] = ch_name
                walk(child, index, mdl)

        walk(self, [0], model)
        with open(prefix + "-model.json", "w") as fp:
            json.dump(model, fp)
        self.save_parameters(prefix + "-model.params")

    def load(self, prefix):
        """Restore what :meth:`save` wrote under ``prefix`` into this Block
        (built the same way): names, cached graphs and Parameters."""
        import json

        with open(prefix + "-model.json") as fp:
            model = json.load(fp)

        def walk(blk, index, structure):
            key = type(blk).__name__.lower() + str(index[0])
            if key not in structure:
                raise MXNetError(f"Block.load: {prefix}-model.json has no entry {key!r}; the Block was built "
                                 "differently from the one saved")
            mdl = structure[key]
            blk._name = mdl["orig_name"]
            if isinstance(blk, HybridBlock) and mdl.get("hybridized"):
                symbol = _symbol_module()
                blk._in_format = mdl["in_format"]
                blk._out_format = mdl["out_format"]
                blk._cached_graph = ([symbol.load_json(i) for i in mdl["inputs"]], symbol.load_json(mdl["symbol"]))
                blk._cached_op = None
                blk._active = True
            for p in list(blk.params.keys()):
                param = blk.params._params.pop(p)
                blk.params._params[blk.name + "_" + p[len(blk.params._prefix):]] = param
            for child in blk._children.values():
                index[0] += 1
                walk(child, index, mdl)
            children = mdl["children"]
            for ch_name in list(blk._children.keys()):
                child = blk._children.pop(ch_name)
                blk._children[children.get(child.name, ch_name)] = child

        walk(self, [0], model)
        self.load_parameters(prefix + "-model.params")

    def register_child(self, block, name=None):
        """Register ``block`` as a child (named by position when ``name`` is None)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before each forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after each forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant (children first) and on this
        Block; returns self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False, force_reinit=False):
        """Initialize all Parameters (``collect_params().initialize``);
        ``init`` defaults to ``mx.init.Uniform()``."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlock descendants (a plain Block itself always
        runs imperatively)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Cast all Parameters (and children's) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for _, p in self.params.items():
            p.cast(dtype)

    def __call__(self, *args):
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, *args):
        """Override to compute the output from NDArray inputs."""
        raise NotImplementedError

    def register_op_hook(self, callback, monitor_all=False):
        """Install an operator output callback on hybridized descendants."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def summary(self, *inputs):
        """Print MXNet's table of layers, output shapes and parameter counts
        for a forward pass on ``inputs`` (the Block must not be hybridized)."""
        summary = OrderedDict()
        seen = set()
        hooks = []

        def shape_str(args):
            def to_shapes(a):
                if isinstance(a, (list, tuple)):
                    return [to_shapes(x) for x in a]
                return a.shape if isinstance(a, NDArray) else a

            shapes = to_shapes(args)
            s = str(shapes)[1:-1] if isinstance(shapes, list) else str(shapes)
            return s.replace("L", "")

        def register(block):
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError('"{}" must not be hybridized to print summary.'.format(block.name))

            def hook(block, _, outputs):
                key = "%s-%i" % (block.__class__.__name__, len(summary))
                entry = summary[key] = OrderedDict()
                entry["output_shape"] = shape_str(outputs)
                n = 0
                entry["trainable"] = 0
                entry["shared"] = 0
                for p in block.params.values():
                    size = int(np.prod(p.data().shape))
                    n += size
                    entry["trainable"] += 0 if p.grad_req == "null" else size
                    if p in seen:
                        entry["shared"] += size
                    else:
                        seen.add(p)
                entry["n_params"] = n

            from .nn.basic_layers import HybridSequential, Sequential

            if not isinstance(block, (Sequential, HybridSequential)):
                hooks.append(block.register_forward_hook(hook))

        summary["Input"] = OrderedDict(output_shape=shape_str(inputs), n_params=0, trainable=0, shared=0)
        try:
            self.apply(register)
            self(*inputs)
            fmt = "{:>20}  {:>42} {:>15}"
            print("-" * 80)
            print(fmt.format("Layer (type)", "Output Shape", "Param #"))
            print("=" * 80)
            total = trainable = shared = 0
            for layer, e in summary.items():
                print(fmt.format(layer, str(e["output_shape"]), e["n_params"]))
                total += e["n_params"]
                trainable += e["trainable"]
                shared += e["shared"]
            print("=" * 80)
            print("Parameters in forward computation graph, duplicate included")
            print("   Total params: " + str(total))
            print("   Trainable params: " + str(trainable))
            print("   Non-trainable params: " + str(total - trainable))
            print("Shared params in forward computation graph: " + str(shared))
            print("Unique parameters in model: " + str(total - shared))
            print("-" * 80)
        finally:
            for h in hooks:
                h.detach()


class HybridBlock(Block):
    """A Block whose computation is ``hybrid_forward(F, x, *args, **params)``
    with ``F`` the operator namespace (``mx.nd`` imperatively, ``mx.sym`` when
    traced). Parameters registered as attributes arrive as keyword arguments
    (their NDArray on the input's context).

    Parameters with unknown shapes are initialized on the first call: built-in
    layers work their shapes out from the input (``_infer_param_shapes``);
    other Blocks use :meth:`infer_shape`.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._callback = None
        self._monitor_all = False
        self._backend = None
        self._backend_opts = {}

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block, name=None):
        """Register a child; children of a HybridBlock must be HybridBlocks."""
        if not isinstance(block, HybridBlock):
            raise ValueError(
                "Children of HybridBlock must also be HybridBlock, but %s has type %s. If you are using "
                "Sequential, please try HybridSequential instead." % (str(block), str(type(block)))
            )
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False, static_shape=False,
                  inline_limit=2, forward_bulk_size=None, backward_bulk_size=None, **kwargs):
        """Turn on (``active=True``) or off the cached-graph execution of this
        Block and its descendants (see :meth:`_call_cached_op`)."""
        if kwargs:
            self._backend_opts = kwargs
        self._backend = backend
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape),
                       ("inline_limit", inline_limit)]
        if forward_bulk_size is not None:
            self._flags.append(("forward_bulk_size", forward_bulk_size))
        if backward_bulk_size is not None:
            self._flags.append(("backward_bulk_size", backward_bulk_size))
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(
                '"{block}" is being hybridized while still having forward hook/pre-hook. If "{block}" is a child '
                "of HybridBlock, the hooks will not take effect.".format(block=self)
            )
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, inline_limit=inline_limit,
                          forward_bulk_size=forward_bulk_size, backward_bulk_size=backward_bulk_size)

    def cast(self, dtype):
        """Cast Parameters to ``dtype`` (and drop the cached graph)."""
        self._clear_cached_op()
        super().cast(dtype)

    def register_op_hook(self, callback, monitor_all=False):
        """MXNet calls ``callback`` on every operator output inside the cached
        graph; oxnet's CachedOp has no per-operator callback yet."""
        raise MXNetError(
            "HybridBlock.register_op_hook: per-operator callbacks inside a hybridized graph are not implemented "
            "in oxnet; run the block without hybridize() and use forward hooks, or mx.profiler"
        )

    # ---- deferred shape inference -------------------------------------
    def _infer_param_shapes(self, *args):
        """Fill unknown Parameter shapes from the inputs. Built-in layers
        override this; the default uses the symbolic graph (:meth:`infer_shape`)."""
        self.infer_shape(*args)

    def _deferred_infer_shape(self, *args):
        try:
            self._infer_param_shapes(*args)
        except Exception as e:  # noqa: BLE001 (re-raised with context)
            raise ValueError("Deferred initialization failed because shape cannot be inferred. {}".format(e)) from e

    def infer_shape(self, *args):
        """Infer the shapes of all Parameters from the input arrays ``args``:
        built-in layers work them out from the input shapes directly; other
        Blocks through the symbolic graph of ``hybrid_forward`` (or, where that
        cannot tell, one forward pass in predict mode without recording)."""
        if type(self)._infer_param_shapes is not HybridBlock._infer_param_shapes:
            self._infer_param_shapes(*args)
            return
        try:
            self._infer_attrs("infer_shape", "shape", *args)
        except Exception as sym_err:  # noqa: BLE001 (fall back, then report both)
            try:
                with autograd.pause(train_mode=False):
                    self._forward_imperative(*args)
            except Exception as e:  # noqa: BLE001
                raise ValueError("{} cannot infer its Parameter shapes: {} ({})".format(self.name, sym_err, e)) from e

    def infer_type(self, *args):
        """Infer the dtypes of all Parameters from the inputs."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _infer_attrs(self, infer_fn, attr, *args):
        if _symbol_module() is None:
            raise MXNetError(
                f"{type(self).__name__}.{infer_fn}: inferring Parameter {attr}s of a custom HybridBlock needs "
                "the symbolic API (oxnet.symbol), which this build lacks; give the Parameters full shapes"
            )
        inputs, out = self._get_graph(*args)
        flat, _ = _flatten(args, "input")
        flat = [a for a in flat if a is not None]
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**{i.name: getattr(j, attr) for i, j in zip(inputs, flat)})
        if arg_attrs is None:
            raise ValueError(f"{infer_fn} could not infer every {attr} of {self.name}")
        sdict = dict(zip(out.list_arguments(), arg_attrs))
        sdict.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in sdict:
                setattr(p, attr, sdict[p.name])

    # ---- forward --------------------------------------------------------
    def forward(self, x, *args):
        """Run ``hybrid_forward`` with F=mx.nd on NDArrays (or F=mx.sym on
        Symbols); uses the cached graph when hybridized."""
        if isinstance(x, NDArray) and not args:  # the common case, without the walk over args
            has_symbol, has_ndarray, ctx_set, first_ctx = False, True, None, x.context
        else:
            has_symbol, has_ndarray, ctx_set, first_ctx = _gather_type_ctx_info([x] + list(args))
        if has_symbol and has_ndarray:
            raise ValueError(
                "In HybridBlock, we do not support mixed NDArrays and Symbols types for the input. "
                "Please check the type of the args.\n"
            )
        if not has_symbol and not has_ndarray:
            raise ValueError(
                "In HybridBlock, there must be one NDArray or one Symbol in the input. "
                "Please check the type of the args.\n"
            )
        if has_ndarray:
            ctx = first_ctx
            if self._active and _cached_op_available():
                if ctx_set is not None and len(ctx_set) > 1:
                    raise ValueError(
                        "Find multiple contexts in the input, After hybridized, the HybridBlock only supports "
                        "one input context. Find all contexts = {}".format(ctx_set)
                    )
                with ctx:
                    return self._call_cached_op(x, *args)
            with ctx:
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for _, v in self.params.items():
                        v._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                return self.hybrid_forward(ndarray, x, *args, **params)
        symbol = _symbol_module()
        params = {k: v.var() for k, v in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override: compute the output with operators from ``F``."""
        raise NotImplementedError

    # ---- cached graph (needs oxnet.symbol and ndarray.CachedOp) --------
    def _get_graph(self, *args):
        if not self._cached_graph:
            symbol = _symbol_module()
            flat, self._in_format = _flatten(args, "input")
            real = sum(a is not None for a in flat)
            if real == 0:
                raise ValueError("All args are None and we do not support such a case. Received args={}".format(args))
            flat_inputs, sym_inputs = [], []
            cnt = 0
            for a in flat:
                if a is None:
                    flat_inputs.append(None)
                    continue
                s = symbol.var("data{}".format(cnt) if real > 1 else "data")
                cnt += 1
                flat_inputs.append(s)
                sym_inputs.append(s)
            grouped = _regroup(flat_inputs, self._in_format)
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *grouped, **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = sym_inputs, (symbol.Group(out) if len(out) > 1 else out[0])
        return self._cached_graph

    def _build_cache(self, *args):
        data, out = self._get_graph(*args)
        data_names = {d.name: i for i, d in enumerate(data)}
        input_names = out.list_inputs()
        expected = set(input_names)
        params = self.collect_params()
        for name in expected:
            if name not in params and name not in data_names:
                raise AssertionError("Unknown input to HybridBlock: %s" % name)
        unused = [i for n, i in data_names.items() if n not in expected]
        if unused:
            warnings.warn("The %s input to HybridBlock is not used by any computation. Is this intended?"
                          % ", ".join("%d-th" % i for i in unused), stacklevel=4)
        unused_p = [n for n in params.keys() if n not in expected]
        if unused_p:
            warnings.warn("Parameter %s is not used by any computation. Is this intended?" % ", ".join(unused_p),
                          stacklevel=4)
        flat, _ = _flatten(args, "input")
        try:
            for name in input_names:
                if name in params:
                    params[name].data()
        except DeferredInitializationError:
            self._infer_shapes_for_graph(*args)
            for name in input_names:
                if name in params:
                    params[name]._finish_deferred_init()
        if self._backend:
            out = self._partition(out, data_names, params, flat)
            self._cached_graph = data, out
            input_names = out.list_inputs()
        self._cached_op_args = []
        data_indices, param_indices = [], []
        for i, name in enumerate(input_names):
            if name in data_names:
                data_indices.append(i)
                self._cached_op_args.append((True, data_names[name]))
            else:
                param_indices.append(i)
                if name not in params:
                    raise RuntimeError("A parameter was added to the graph during optimization but it was not added "
                                       "to the parameter dicts.\nPlease check the backend.")
                self._cached_op_args.append((False, params[name]))
        flags = [("data_indices", data_indices), ("param_indices", param_indices)] + self._flags
        self._cached_op = ndarray.CachedOp(out, flags)

    def _partition(self, out, data_names, params, flat):
        """``out.optimize_for(backend, ...)`` with the current Parameter values."""
        real = [a for a in flat if a is not None]
        arg_dict, aux_dict = {}, {}
        for name in out.list_arguments():
            if name in data_names and data_names[name] < len(real):
                arg_dict[name] = real[data_names[name]]
            elif name in params:
                arg_dict[name] = params[name].data()
        for name in out.list_auxiliary_states():
            if name in params:
                aux_dict[name] = params[name].data()
        ctx = real[0].context if real else None
        try:
            return out.optimize_for(self._backend, arg_dict, aux_dict, ctx, **self._backend_opts)
        except ImportError as e:
            raise MXNetError(f"hybridize(backend={self._backend!r}): graph partitioning (Symbol.optimize_for) is "
                             f"not available in this build ({e})") from None

    def optimize_for(self, x, *args, backend=None, clear=False, static_alloc=False, static_shape=False,
                     inline_limit=2, forward_bulk_size=None, backward_bulk_size=None, **kwargs):
        """Hybridize with ``backend`` and build the partitioned graph for the
        inputs ``x, *args`` now (MXNet 1.9.1's HybridBlock.optimize_for)."""
        if kwargs:
            self._backend_opts = kwargs
        if not backend:
            raise ValueError('Must specify "backend" to optimize_for')
        self.hybridize(True, backend, clear, static_alloc, static_shape, inline_limit, forward_bulk_size,
                       backward_bulk_size)
        has_symbol, has_ndarray, ctx_set, _ = _gather_type_ctx_info([x] + list(args))
        if not has_symbol and not has_ndarray:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the input. Please check "
                             "the type of the args.\n")
        if len(ctx_set) > 1:
            raise ValueError("Found multiple contexts in the input, After hybridized, the HybridBlock only supports "
                             "one input context. Find all contexts = {}".format(ctx_set))
        self._build_cache(x, *args)

    def _infer_shapes_for_graph(self, *args):
        """Fill unknown Parameter shapes before the graph is built."""
        try:
            self.infer_shape(*args)
        except Exception as e:  # noqa: BLE001
            raise ValueError("Deferred initialization failed because shape cannot be inferred. {}".format(e)) from e

    def _forward_imperative(self, x, *args):
        saved = []

        def off(b):
            if isinstance(b, HybridBlock):
                saved.append((b, b._active))
                b._active = False

        self.apply(off)
        try:
            return self.forward(x, *args)
        finally:
            for b, was in saved:
                b._active = was

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = _flatten(args, "input")
        if fmt != self._in_format:
            if len(self._in_format) > len(fmt):
                valid = all(self._in_format[i] == -1 for i in range(len(fmt), len(self._in_format)))
                valid = valid and fmt == self._in_format[: len(fmt)]
            elif len(self._in_format) < len(fmt):
                valid = all(fmt[i] == -1 for i in range(len(self._in_format), len(fmt)))
                valid = valid and fmt[: len(self._in_format)] == self._in_format
            else:
                valid = False
            if not valid:
                raise ValueError(
                    "The argument structure of HybridBlock does not match the cached version. Stored format = {}, "
                    "input format = {}".format(fmt, self._in_format)
                )
        real = [a for a in flat if a is not None]
        key = real[0]._ctx
        try:
            cargs = [real[i] if is_arg else i._data[i._ctx_map[key]] for is_arg, i in self._cached_op_args]
        except (KeyError, TypeError):  # not initialized there: data() raises the informative error
            ctx = real[0].context
            cargs = [real[i] if is_arg else i.data(ctx) for is_arg, i in self._cached_op_args]
        out = self._cached_op(*cargs)
        if isinstance(out, NDArray):
            out = [out]
        return _regroup(out, self._out_format)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write the cached graph to ``path-symbol.json`` and the Parameters to
        ``path-%04d.params`` (``arg:``/``aux:`` names), MXNet's files for
        ``SymbolBlock.imports`` / ``mx.model.load_checkpoint``. The Block must
        have been hybridized and run once."""
        if not self._cached_graph:
            raise RuntimeError(
                "Please first call block.hybridize() and then run forward with this block at least once before "
                "calling export."
            )
        sym = self._cached_graph[1]
        sym.save("%s-symbol.json" % path)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for is_arg, param in self._cached_op_args:
            if is_arg:
                continue
            if param.name in arg_names:
                arg_dict["arg:%s" % param.name] = param._reduce()
            elif param.name in aux_names:
                arg_dict["aux:%s" % param.name] = param._reduce()
            else:
                warnings.warn('Parameter "{name}" is not found in the graph. '.format(name=param.name), stacklevel=3)
        ndarray.save("%s-%04d.params" % (path, epoch), arg_dict)


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for n in names:
        i = 0
        while i < len(prefix) and i < len(n) and prefix[i] == n[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class SymbolBlock(HybridBlock):
    """A HybridBlock made from a Symbol: ``SymbolBlock(outputs, inputs,
    params=None)`` where ``inputs`` are the variables fed by the call's
    arguments; every other argument / auxiliary state of ``outputs`` becomes
    a Parameter (named as in the graph). Runs the graph as a CachedOp."""

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False, ignore_extra=False):
        """Load a model exported by ``HybridBlock.export`` (MXNet's or oxnet's):
        ``symbol_file`` (``-symbol.json``), ``input_names`` (a name or list),
        ``param_file`` (``.params``, optional), ``ctx``. Returns a SymbolBlock."""
        symbol = _symbol_module()
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(i, dtype="float32") for i in input_names]
        else:
            inputs = [symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra, cast_dtype=True,
                                      dtype_source="saved")
        return ret

    def __repr__(self):
        return "{name}(\n{block} : {i} -> {o}\n)".format(name=self.__class__.__name__, block=self._cached_graph[1],
                                                         i=len(self._cached_graph[0]),
                                                         o=len(self._cached_graph[1].list_outputs()))

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        symbol = _symbol_module()
        self._prefix = ""
        self._params = ParameterDict("", params)
        if _is_symbol(inputs) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        input_names = set()
        for i in syms:
            if len(i.get_internals().list_outputs()) != 1:
                raise AssertionError("Input symbols must be variable, but %s is an output of operators" % str(i))
            input_names.add(i.name)
        out = symbol.Group(out) if len(out) > 1 else out[0]
        arg_params = out.list_arguments()
        aux_params = out.list_auxiliary_states()
        arg_types, aux_types = _infer_param_types(syms, out, arg_params, aux_params)
        for i, arg in enumerate(arg_params):
            if arg not in input_names:
                self.params.get(arg, allow_deferred_init=True, dtype=arg_types[i])
        for i, aux in enumerate(aux_params):
            if aux not in input_names:
                self.params.get(aux, grad_req="null", allow_deferred_init=True, dtype=aux_types[i])
        self._cached_graph = syms, out
        len_prefix = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[len_prefix:]: val for key, val in self._params.items()}
        self._active = True

    def forward(self, x, *args):
        """Run the graph on NDArrays (or compose it with Symbols)."""
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        if not _is_symbol(x):
            raise AssertionError("HybridBlock requires the first argument to forward be either Symbol or NDArray, "
                                 "but got %s" % type(x))
        flat, in_fmt = _flatten([x] + list(args), "input")
        if in_fmt != self._in_format:
            raise AssertionError("Invalid input format")
        ret = copy.copy(self._cached_graph[1])
        ret._compose(**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)

    def _infer_param_shapes(self, *args):
        self._infer_attrs("infer_shape", "shape", *args)

    def _infer_shapes_for_graph(self, *args):
        try:
            self._infer_attrs("infer_shape", "shape", *args)
        except Exception as e:  # noqa: BLE001
            raise ValueError("Deferred initialization failed because shape cannot be inferred. {}".format(e)) from e

    def _clear_cached_op(self):
        tmp = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = tmp

    def hybridize(self, active=True, **kwargs):
        """A SymbolBlock always runs its graph; this only sets the flags."""
        super().hybridize(True, **kwargs)

    def cast(self, dtype):
        """Cast Parameters (BatchNorm statistics stay float32 under float16)."""
        self._clear_cached_op()
        super().cast(dtype)
        if np.dtype(dtype).name == "float16":
            names = self._cached_graph[1].get_internals().list_inputs()
            for node in names:
                for stat, mean in (("running_var", "running_mean"), ("moving_var", "moving_mean")):
                    if node.endswith(stat):
                        prefix = node[: -len(stat)]
                        sibs = [prefix + t for t in (mean, "gamma", "beta")]
                        if all(p in names for p in sibs):
                            for n in [node] + sibs:
                                self.params.get(n).cast("float32")

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError

    def reset_ctx(self, ctx):
        """Move every Parameter to ``ctx``."""
        for p in self.collect_params().values():
            p.reset_ctx(ctx)


def _infer_param_types(in_params, out_params, arg_params, aux_params, default_dtype="float32"):
    """dtypes of the graph's arguments and auxiliary states (float32 where unknown)."""
    arg_types = aux_types = None
    try:
        known = {}
        for p in in_params:
            t = p.infer_type()[0]
            if not t:
                known = None
                break
            known[p.name] = t[0]
        if known is not None:
            arg_types, _, aux_types = out_params.infer_type(**known)
    except Exception:  # noqa: BLE001 (types stay unknown)
        arg_types = aux_types = None
    if arg_types is None or len(arg_types) != len(arg_params):
        arg_types = [default_dtype] * len(arg_params)
    if aux_types is None or len(aux_types) != len(aux_params):
        aux_types = [default_dtype] * len(aux_params)
    return [t if t is not None else default_dtype for t in arg_types], \
        [t if t is not None else default_dtype for t in aux_types]
