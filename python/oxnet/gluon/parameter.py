"""Gluon parameters (``mx.gluon.Parameter``, ``Constant``, ``ParameterDict``).

A :class:`Parameter` holds one copy of a weight per context (and one
gradient buffer per context unless ``grad_req='null'``). A shape with 0 in
it is unknown: with ``allow_deferred_init=True`` initialization waits until
the first forward pass fills the shape in.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np

from .. import autograd, context, initializer, ndarray
from ..base import MXNetError
from ..context import Context, cpu
from ..ndarray import NDArray
from .utils import _brief_print_list, _indent, shape_is_known

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict", "tensor_types"]


def _tensor_types():
    try:
        from ..symbol import Symbol

        return (Symbol, NDArray)
    except ImportError:
        return (NDArray,)


tensor_types = _tensor_types()


class DeferredInitializationError(MXNetError):
    """A Parameter whose initialization waits for its shape was used before
    the first forward pass gave it one."""


def _init_module():
    """``oxnet.initializer`` (imported late: it imports ndarray helpers)."""
    from .. import initializer

    return initializer


def _default_initializer():
    """MXNet's default global initializer: ``mx.init.Uniform()`` (scale 0.07)."""
    return _init_module().Uniform()


def _run_initializer(name, init, default_init, arr):
    """Fill ``arr`` for the parameter ``name`` the way MXNet's
    ``Parameter._finish_deferred_init`` does: the parameter's own ``init``
    (or the global default) is applied by its ``_init_weight``."""
    initializer = _init_module()
    initializer.create(default_init)(initializer.InitDesc(name, {"__init__": init}), arr)


def _np_dtype(dtype):
    if isinstance(dtype, str) and dtype == "bfloat16":
        return dtype
    return np.dtype(dtype)


class Parameter:
    """A weight of a Block, with one copy per context.

    Parameters
    ----------
    name : str
    grad_req : {'write', 'add', 'null'}, default 'write'
    shape : int or tuple of int, default None (0 in a dimension = unknown)
    dtype : numpy dtype or str, default 'float32'
    lr_mult, wd_mult : float, default 1.0
    init : Initializer or str, default None (the global initializer)
    allow_deferred_init : bool, default False
    differentiable : bool, default True (False forces grad_req='null')
    stype, grad_stype : 'default' only (sparse storage is not supported)
    """

    def __init__(self, name, grad_req="write", shape=None, dtype="float32", lr_mult=1.0, wd_mult=1.0,
                 init=None, allow_deferred_init=False, differentiable=True, stype="default",
                 grad_stype="default"):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self._shape = tuple(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        for what, st in (("stype", stype), ("grad_stype", grad_stype)):
            if st not in ("default", "row_sparse", "csr"):
                raise AssertionError(
                    f"{what} for Parameter '{name}' must be one of 'default', 'row_sparse', or 'csr', but got '{st}'"
                )
            if st != "default":
                raise MXNetError(
                    f"Parameter '{name}': {what}='{st}' is not supported by oxnet (sparse storage is not "
                    "implemented); use 'default'"
                )
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self):
        """How backward writes this parameter's gradient: 'write', 'add' or 'null'."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [d.detach() for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The parameter's dtype; assigning casts the data (see :meth:`cast`)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape (0 marks a dimension not known yet), or None."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape) if new_shape is not None else None
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or not all(
            j in (-1, 0, i) for i, j in zip(new_shape, self._shape)
        ):
            raise AssertionError(f"Expected shape {new_shape} is incompatible with given shape {self._shape}.")
        self._shape = new_shape

    @property
    def stype(self):
        """Storage type: always 'default' (dense) in oxnet."""
        return self._stype

    def _set_trainer(self, trainer):
        self._trainer = trainer

    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = context.current_context()
            idx = self._ctx_map.get(ctx._pair()) if self._ctx_map is not None else None
            if idx is not None:
                return arr_list[idx]
            raise RuntimeError(
                "Parameter '%s' was not initialized on context %s. It was only initialized on %s."
                % (self.name, str(ctx), str(self._ctx_list))
            )
        if self._deferred_init:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing Parameters. "
                "You can also avoid deferred initialization by specifying in_units, "
                "num_features, etc., for network layers." % self.name
            )
        raise RuntimeError(
            "Parameter '%s' has not been initialized. Note that you should initialize parameters "
            "and create Trainer with Block.collect_params() instead of Block.params because the "
            "later does not include Parameters of nested child Blocks" % self.name
        )

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """(Re)initialize from the NDArray ``data`` on ``ctx`` (a Context or list),
        casting per ``cast_dtype`` / ``dtype_source`` ('current' or 'saved')."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            raise ValueError(f"dtype_source must be 'current' or 'saved', got {dtype_source!r}")
        if self.shape:
            if len(self.shape) != len(data.shape) or not all(
                s in (0, -1, d) for s, d in zip(self.shape, data.shape)
            ):
                raise AssertionError(
                    "Failed loading Parameter '%s' from saved params: shape incompatible expected %s vs saved %s"
                    % (self.name, str(self.shape), str(data.shape))
                )
            self.shape = tuple(d if s in (0, -1) else s for s, d in zip(self.shape, data.shape))
        if self.dtype:
            if cast_dtype and _np_dtype(self.dtype) != _np_dtype(data.dtype):
                if dtype_source == "current":
                    data = data.astype(self.dtype, copy=False)
                else:
                    self.dtype = data.dtype
            elif _np_dtype(self.dtype) != _np_dtype(data.dtype):
                raise AssertionError(
                    "Failed loading Parameter '%s' from saved params: dtype incompatible expected %s vs saved %s. "
                    "Set cast_dtype=True to cast the dtype of saved params."
                    % (self.name, str(_np_dtype(self.dtype)), str(_np_dtype(data.dtype)))
                )
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                if ctx is not None and set(ctx) != set(self._deferred_init[1]):
                    raise AssertionError(
                        "Failed to load Parameter '%s' on %s because it was previous initialized on %s."
                        % (self.name, str(ctx), str(self.list_ctx()))
                    )
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            if ctx is not None and set(ctx) != set(self.list_ctx()):
                raise AssertionError(
                    "Failed to load Parameter '%s' on %s because it was previous initialized on %s."
                    % (self.name, str(ctx), str(self.list_ctx()))
                )
            self.set_data(data)
        self._deferred_init = ()

    def _finish_deferred_init(self):
        """Run a deferred initialization now that the shape is known."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not shape_is_known(self.shape):
            raise AssertionError(
                "Cannot initialize Parameter '%s' because it has invalid shape: %s. Please specify "
                "in_units, in_channels, etc for `Block`s." % (self.name, str(self.shape))
            )
        with autograd.pause():
            if data is None:
                data = ndarray.zeros(self.shape, dtype=self.dtype, ctx=cpu())
                _run_initializer(self.name, init, default_init, data)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        self._ctx_map = {c._pair(): i for i, c in enumerate(self._ctx_list)}
        self._data = [data.copyto(c) for c in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == "null":
            self._grad = None
            return
        self._grad = [ndarray.zeros(d.shape, dtype=d.dtype, ctx=d.context) for d in self._data]
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    def _reduce(self):
        """The average of the copies over all contexts, on cpu."""
        block = self.list_data()
        if len(block) > 1:
            total = block[0].copyto(cpu())
            for w in block[1:]:
                total = total + w.copyto(cpu())
            return total / len(block)
        return block[0].copyto(cpu())

    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(), force_reinit=False):
        """Create the data (and gradient) arrays on ``ctx`` (a Context or a list;
        default the current context). ``init`` overrides the parameter's own
        ``init``, which overrides ``default_init`` (default ``mx.init.Uniform()``).
        A parameter with an unknown shape and ``allow_deferred_init`` waits
        for its first forward pass; otherwise an unknown shape raises ValueError.
        """
        if default_init is None:
            default_init = _default_initializer()
        if self._data is not None and not force_reinit:
            warnings.warn(
                "Parameter '%s' is already initialized, ignoring. Set force_reinit=True to re-initialize."
                % self.name,
                stacklevel=2,
            )
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [context.current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError("Cannot initialize Parameter '%s' because it has invalid shape: %s."
                             % (self.name, str(self.shape)))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def reset_ctx(self, ctx):
        """Move the parameter to ``ctx`` (a Context or list of them)."""
        if ctx is None:
            ctx = [context.current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError("Cannot reset context for Parameter '%s' because it has not been initialized."
                             % self.name)

    def set_data(self, data):
        """Set the value on every context (``data``: an NDArray or array-like)."""
        if not isinstance(data, NDArray):
            data = ndarray.array(data, dtype=self.dtype)
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise AssertionError("Parameter '%s' has not been initialized" % self.name)
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        tr = self._trainer
        if tr is not None and getattr(tr, "_kv_initialized", False) and getattr(tr, "_update_on_kvstore", False):
            if self not in getattr(tr, "_params_to_init", ()):
                tr._reset_kvstore()
        for arr in self._data:
            arr[:] = data

    def row_sparse_data(self, row_id):
        """MXNet's copy of selected rows of a 'row_sparse' Parameter; oxnet has
        no sparse storage (every Parameter is 'default')."""
        raise MXNetError(f"Parameter.row_sparse_data ('{self.name}'): row_sparse Parameters are not implemented "
                         "in oxnet; use data()")

    def list_row_sparse_data(self, row_id):
        """See :meth:`row_sparse_data` (not implemented: no sparse storage)."""
        raise MXNetError(f"Parameter.list_row_sparse_data ('{self.name}'): row_sparse Parameters are not "
                         "implemented in oxnet; use list_data()")

    def data(self, ctx=None):
        """The NDArray on ``ctx`` (default: the only context, or the current one)."""
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """The NDArrays on all contexts, in initialization order."""
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because grad_req='null'" % self.name)
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient buffers on all contexts."""
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because grad_req='null'" % self.name)
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts this parameter lives on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError("Parameter '%s' has not been initialized" % self.name)
        return self._ctx_list

    def zero_grad(self):
        """Set the gradient buffers to 0 (nothing happens without them)."""
        if self._grad is None:
            return
        for g in self._grad:
            g[:] = 0

    def var(self):
        """A Symbol variable for this parameter (name, shape, dtype, lr_mult,
        wd_mult, init attributes)."""
        if self._var is None:
            try:
                from .. import symbol
            except ImportError:
                raise MXNetError(f"Parameter.var ('{self.name}'): the symbolic API (oxnet.symbol) is not "
                                 "available in this build") from None

            init = self.init
            if init is not None and not isinstance(init, str):
                init = init.dumps() if hasattr(init, "dumps") else None
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                   wd_mult=self.wd_mult, init=init)
        return self._var

    def cast(self, dtype):
        """Cast the data and gradient to ``dtype``."""
        self._dtype = dtype
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
            if self._grad is None:
                return
            self._grad = [g.astype(dtype) for g in self._grad]
            autograd.mark_variables(self._data, self._grad, self.grad_req)


class Constant(Parameter):
    """A parameter that training leaves alone (grad_req is always 'null');
    ``set_data`` still changes it. ``value``: an NDArray or array-like."""

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = ndarray.array(value)
        self.value = value
        initializer = _init_module()
        const_value = value

        class _ConstantInit(initializer.Initializer):
            def _init_weight(self, _, arr):
                const_value.copyto(arr)

        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_ConstantInit())

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(
                'Constant parameter "{}" does not support grad_req other than "null", and new value "{}" '
                "is ignored.".format(self.name, req)
            )
        self._grad_req = "null"


class ParameterDict:
    """An ordered dict of Parameters with a name prefix.

    ``get(name, **kwargs)`` returns ``prefix + name``, taking it from
    ``shared`` or creating it when absent.
    """

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + " " if self._prefix else ""
        content = "\n".join(_indent("  {0}".format(v), 2) for v in self.values())
        return "{name}(\n{content}\n)".format(name=name, content=content)

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        """(name, Parameter) pairs in insertion order."""
        return self._params.items()

    def keys(self):
        """Parameter names in insertion order."""
        return self._params.keys()

    def values(self):
        """Parameters in insertion order."""
        return self._params.values()

    @property
    def prefix(self):
        """The prefix prepended to names created with :meth:`get`."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name, **kwargs):
        """Return the Parameter ``prefix + name``, from this dict or the shared
        one, else a new ``Parameter(prefix + name, **kwargs)``. For an existing
        one, unknown (0) shape dimensions are filled from ``shape``; other
        attributes must match."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if hasattr(param, k) and getattr(param, k) is not None:
                existing = getattr(param, k)
                if k == "shape":
                    v = (v,) if isinstance(v, int) else tuple(v)
                    if len(v) == len(existing):
                        merged = []
                        ok = True
                        for d1, d2 in zip(v, existing):
                            if d1 != d2 and d1 > 0 and d2 > 0:
                                ok = False
                                break
                            merged.append(d2 if d1 in (0, -1) else d1)
                        if ok:
                            param._shape = tuple(merged)
                            continue
                elif k == "dtype" and _np_dtype(v) == _np_dtype(existing):
                    continue
                if not (v is None or v == existing):
                    raise AssertionError(
                        "Cannot retrieve Parameter '%s' because desired attribute does not match with stored "
                        "for attribute '%s': desired '%s' vs stored '%s'." % (name, k, str(v), str(existing))
                    )
            else:
                setattr(param, k, v)
        return param

    def get_constant(self, name, value=None):
        """Return the Constant ``prefix + name``, creating it from ``value``
        when absent (KeyError when absent and no value is given)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(
                    "No constant named '{}'. Please specify value if you want to create a new constant.".format(name)
                )
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise AssertionError("Parameter '{}' already exists but it is not a constant.".format(name))
            if isinstance(value, NDArray):
                value = value.asnumpy()
            value = np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise AssertionError("Constant '{}' already exists but it's value doesn't match new value".format(name))
        return param

    def update(self, other):
        """Add every Parameter of ``other`` (a dict-like); the same name must
        map to the same Parameter object."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise AssertionError(
                    "Cannot update self with other because they have different Parameters with the same name '%s'" % k
                )
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False, force_reinit=False):
        """Initialize every Parameter; ``init`` (default ``mx.init.Uniform()``)
        is used where a Parameter has no ``init`` of its own."""
        if init is None:
            init = _default_initializer()
        if verbose and hasattr(init, "set_verbosity"):
            init.set_verbosity(verbose=verbose)
        for _, v in self.items():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set every gradient buffer to 0."""
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx):
        """Move every Parameter to ``ctx``."""
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self):
        """The contexts any Parameter lives on."""
        s = []
        for p in self.values():
            for c in p.list_ctx():
                if c not in s:
                    s.append(c)
        return s

    def setattr(self, name, value):
        """Set attribute ``name`` (e.g. 'grad_req', 'lr_mult') on every Parameter."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename, strip_prefix=""):
        """Save to ``filename`` in MXNet's ``.params`` format, names with
        ``strip_prefix`` removed."""
        arg_dict = {}
        for param in self.values():
            weight = param._reduce()
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    "Prefix '%s' is to be striped before saving, but Parameter's name '%s' does not start with '%s'. "
                    "this may be due to your Block shares parameters from other Blocks or you forgot to use "
                    "'with name_scope()' when creating child blocks." % (strip_prefix, param.name, strip_prefix)
                )
            arg_dict[param.name[len(strip_prefix):]] = weight
        ndarray.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
             cast_dtype=False, dtype_source="current"):
        """Load from a ``.params`` file (names get ``restore_prefix`` prepended).
        Missing names raise unless ``allow_missing``; names not in this dict
        raise unless ``ignore_extra``."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise AssertionError(
                        "restore_prefix is '%s' but Parameters name '%s' does not start with '%s'."
                        % (restore_prefix, name, restore_prefix)
                    )
        loaded = ndarray.load(filename)
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
                  filename=None, cast_dtype=False, dtype_source="current"):
        """Load from a dict of name -> NDArray ('arg:'/'aux:' prefixes dropped)."""
        lprefix = len(restore_prefix)
        if isinstance(param_dict, dict):
            loaded = [(k[4:] if k.startswith("arg:") or k.startswith("aux:") else k, v) for k, v in param_dict.items()]
        else:
            loaded = param_dict
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        where = "file: %s" % filename if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise AssertionError(
                        "Parameter '%s' is missing in %s, which contains parameters: %s. "
                        "Please make sure source and target networks have the same prefix."
                        % (name[lprefix:], where, _brief_print_list(arg_dict.keys()))
                    )
        for name in arg_dict:
            if name not in self._params:
                if not ignore_extra:
                    raise AssertionError(
                        "Parameter '%s' loaded from %s is not present in ParameterDict, choices are: %s. "
                        "Set ignore_extra to True to ignore. Please make sure source and target networks "
                        "have the same prefix." % (name[lprefix:], where, _brief_print_list(self._params.keys()))
                    )
                continue
            self[name]._load_init(arg_dict[name], ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
