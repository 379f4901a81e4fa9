"""Testing helpers with MXNet 1.9.1's names and behaviour.

:func:`check_symbolic_forward`, :func:`check_symbolic_backward`,
:func:`check_numeric_gradient` and :func:`check_consistency` take an
``mx.sym.Symbol`` as MXNet 1.9.1's do (bound with ``bind``/``simple_bind``);
the last two also take a Python callable over NDArrays (an imperative
"symbol" run under autograd)."""
from __future__ import annotations

import inspect
import numbers

import numpy as np

from .context import Context, current_context
from .io.io import DataIter as _DataIter
from .ndarray.ndarray import NDArray, array

_default_ctx = None


def default_context():
    """The context tests run on (``cpu(0)`` unless set)."""
    return _default_ctx or current_context()


def set_default_context(ctx):
    """Set the context :func:`default_context` returns."""
    global _default_ctx
    if not isinstance(ctx, Context):
        raise TypeError("set_default_context: ctx must be a Context")
    _default_ctx = ctx


def _as_np(a):
    return a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)


def default_dtype():
    """The dtype tests compute in by default (``np.float32``)."""
    return np.float32


def default_rtols():
    """Default relative tolerance per dtype (a dict ``np.dtype -> float``)."""
    return {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5,
            **{np.dtype(t): 0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)}}


def default_atols():
    """Default absolute tolerance per dtype (a dict ``np.dtype -> float``)."""
    return {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20,
            **{np.dtype(t): 0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)}}


def default_numeric_eps():
    """Default finite-difference step per floating dtype (a dict ``np.dtype -> float``)."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9, np.dtype(np.float64): 1.0 / 2**14}


def get_tolerance(dat, tol, default_tol):
    """The tolerance for comparing ``dat`` (an array or number): ``tol`` itself
    when it is a number, else ``tol[dtype]`` when ``tol`` is a dict holding
    the dtype, else ``default_tol[dtype]``. Returns a float."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = np.dtype(np.asarray(dat).dtype if isinstance(dat, numbers.Number) else dat.dtype)
    tol = {} if tol is None else tol
    if dtype in tol:
        return tol[dtype]
    if dtype in default_tol:
        return default_tol[dtype]
    return 0 if dtype.kind in "biu" else default_tol[np.dtype(np.float32)]


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing x and y: the larger of the two operands'
    tolerances (so the less precise dtype decides)."""
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False):
    """True when every element of a and b (NDArrays or NumPy) is close.
    ``rtol``/``atol`` are numbers, dicts ``dtype -> float`` or None for the
    per-dtype defaults (:func:`default_rtols`, :func:`default_atols`)."""
    a, b = _as_np(a), _as_np(b)
    rtol, atol = get_tols(a, b, rtol, atol)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False, use_broadcast=True,
                        mismatches=(10, 10)):
    """Raise AssertionError, showing the worst element, unless a and b
    (NDArrays or NumPy arrays) are close. Tolerances as in
    :func:`almost_equal`. As in MXNet 1.9.1 the shapes need only broadcast
    against each other (``()`` vs ``(1,)``) unless ``use_broadcast=False``;
    ``mismatches`` is accepted for MXNet's signature. Returns None."""
    a, b = _as_np(a), _as_np(b)
    if a.shape != b.shape:
        try:
            if not use_broadcast:
                raise ValueError
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise AssertionError(f"shape mismatch: {names[0]}{a.shape} vs {names[1]}{b.shape}") from None
        a, b = np.broadcast_arrays(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    diff = np.abs(a64 - b64)
    rel = diff / (np.abs(b64) * rtol + atol + 1e-300)
    if equal_nan:
        rel[np.isnan(a64) & np.isnan(b64)] = 0
    rel[np.isnan(rel)] = np.inf
    idx = np.unravel_index(np.argmax(rel), rel.shape) if rel.size else ()
    raise AssertionError(
        f"Items are not equal (rtol={rtol}, atol={atol}): worst at {idx}: "
        f"{names[0]}={a[idx]!r} {names[1]}={b[idx]!r}\n{names[0]}: {a}\n{names[1]}: {b}"
    )


def same(a, b):
    """True when a and b have identical shapes and values."""
    return bool(np.array_equal(_as_np(a), _as_np(b)))


def rand_shape_2d(dim0=10, dim1=10):
    """A random 2-D shape with sizes in [1, dim]."""
    return np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10):
    """A random 3-D shape with sizes in [1, dim]."""
    return np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1), np.random.randint(1, dim2 + 1)


def rand_shape_nd(num_dim, dim=10):
    """A random shape of ``num_dim`` sizes in [1, dim]."""
    return tuple(np.random.randint(1, dim + 1, size=num_dim))


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None):
    """A dense NDArray of uniform random values in [0, 1)."""
    if stype != "default":
        raise ValueError(f"rand_ndarray: storage type '{stype}' is not supported (only 'default')")
    return array(np.random.uniform(size=shape), ctx=ctx or default_context(), dtype=dtype or "float32")


# -- gradient and consistency checks -------------------------------------------------
# ``sym`` is an mx.sym.Symbol (as in MXNet 1.9.1) or a Python callable over
# NDArrays (an imperative "symbol" run under autograd).

_NOT_CALLABLE = (
    "{fn}: sym must be an mx.sym.Symbol or a Python callable taking NDArrays and returning an "
    "NDArray or a list of NDArrays; got {typ}."
)


def _is_symbol(sym):
    from .symbol import Symbol

    return isinstance(sym, Symbol)


def _require_callable(fn, sym):
    if isinstance(sym, (list, tuple)) or not callable(sym):
        raise TypeError(_NOT_CALLABLE.format(fn=fn, typ=type(sym).__name__))


def _positional_names(fn, n):
    """Names of fn's first n positional parameters ('arg0'... when not inspectable)."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if len(params) >= n:
        return [p.name for p in params[:n]]
    return [f"arg{i}" for i in range(n)]


def _as_outputs(res, fn):
    outs = [res] if isinstance(res, NDArray) else list(res) if isinstance(res, (list, tuple)) else None
    if not outs or not all(isinstance(o, NDArray) for o in outs):
        raise TypeError(f"{fn}: sym must return an NDArray or a list of NDArrays, got {type(res).__name__}")
    return outs


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None, atol=None,
                           grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=np.float32):
    """Check the autograd gradient of ``sym`` against central finite differences.

    sym : Symbol or callable
        A Symbol (one output) is bound to the arrays of ``location`` and its
        executor's ``backward`` is checked (MXNet 1.9.1's procedure: the
        output is multiplied by a random projection under ``make_loss``).
        A callable takes NDArrays and returns an NDArray or a list of
        NDArrays; it is called positionally with the arrays of ``location``
        when that is a list/tuple, or with them as keywords when it is a dict,
        and differentiated with autograd.
    location : list, tuple or dict of numpy.ndarray / NDArray
        The point where the gradient is checked. NumPy arrays are converted
        to ``dtype`` on ``ctx``; NDArrays are used as they are. With a Symbol:
        a list in ``sym.list_arguments()`` order, or a dict naming every
        argument. With a callable and a list, the argument names are the
        callable's positional parameter names.
    aux_states : list, tuple or dict, optional
        With a Symbol: its auxiliary states (list in
        ``list_auxiliary_states()`` order or dict), reset before every
        finite-difference forward. With a callable: extra inputs that are not
        differentiated (e.g. moving statistics), passed after ``location``
        (list) or as keywords (dict); a fresh copy is passed to every call, so
        a call that updates them does not leak.
    numeric_eps : float or dict dtype->float, optional
        Step of the finite differences (default per dtype:
        :func:`default_numeric_eps`; at least 1e-5 below float64).
    rtol, atol : float or dict dtype->float, optional
        Tolerances of the comparison (default per dtype).
    grad_nodes : list of names or dict name->grad_req, optional
        Arguments to check (default: all). With grad_req 'add' the gradient
        buffer starts non-zero and the added part is checked; with 'null' the
        buffer must stay untouched.
    use_forward_train : bool
        Run the finite-difference forwards in training mode.
    ctx : Context, optional
        Where to compute (default :func:`default_context`).
    grad_stype_dict : dict, optional
        Storage type of the gradients; only 'default' is supported.
    dtype : np.float16, np.float32 or np.float64
        Dtype of the arrays made from NumPy values.

    The outputs are projected on fixed random weights in [0.1, 1.1) and
    summed, so one scalar is differentiated. Returns None; raises
    AssertionError naming the argument when a gradient does not match.
    """
    from . import autograd

    if _is_symbol(sym):
        return _symbolic_numeric_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                          use_forward_train, ctx, grad_stype_dict, dtype)
    _require_callable("check_numeric_gradient", sym)
    if dtype not in (np.float16, np.float32, np.float64):
        raise ValueError(f"check_numeric_gradient: dtype must be np.float16, np.float32 or np.float64, got {dtype}")
    if grad_stype_dict:
        bad = {k: v for k, v in grad_stype_dict.items() if v != "default"}
        if bad:
            raise ValueError(f"check_numeric_gradient: only 'default' gradient storage is supported, got {bad}")
    ctx = ctx or default_context()
    if not isinstance(location, (list, tuple, dict)):
        raise TypeError("check_numeric_gradient: location must be a list, tuple or dict of arrays")
    keyword = isinstance(location, dict)
    names = list(location.keys()) if keyword else _positional_names(sym, len(location))
    values = list(location.values()) if keyword else list(location)

    def to_nd(v):
        return v if isinstance(v, NDArray) else array(np.asarray(v), ctx=ctx, dtype=dtype)

    loc = {n: to_nd(v) for n, v in zip(names, values)}
    loc_np = {n: v.asnumpy() for n, v in loc.items()}
    aux_np = None
    if aux_states is not None:
        if isinstance(aux_states, dict):
            aux_np = {k: _as_np(v) for k, v in aux_states.items()}
        else:
            aux_np = [_as_np(v) for v in aux_states]

    def call(arrays):
        aux = None
        if aux_np is not None:
            if isinstance(aux_np, dict):
                aux = {k: array(v, ctx=ctx, dtype=v.dtype) for k, v in aux_np.items()}
            else:
                aux = [array(v, ctx=ctx, dtype=v.dtype) for v in aux_np]
        if keyword:
            kw = dict(arrays)
            if aux:
                kw.update(aux)
            return _as_outputs(sym(**kw), "check_numeric_gradient")
        return _as_outputs(sym(*[arrays[n] for n in names], *(aux or [])), "check_numeric_gradient")

    if grad_nodes is None:
        grad_req = {n: "write" for n in names}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
    elif isinstance(grad_nodes, (list, tuple)):
        grad_req = {n: "write" for n in grad_nodes}
    else:
        raise ValueError("check_numeric_gradient: grad_nodes must be None, a list of names or a dict name->grad_req")
    unknown = [n for n in grad_req if n not in loc]
    if unknown:
        raise ValueError(f"check_numeric_gradient: grad_nodes {unknown} are not arguments (arguments: {names})")
    for n, r in grad_req.items():
        if r not in ("write", "add", "null"):
            raise ValueError(f"check_numeric_gradient: invalid grad_req {r!r} for argument {n}")

    # Symbolic (autograd) gradients.
    orig_grad = {n: np.random.normal(0, 0.01, size=loc[n].shape) for n in grad_req}
    grads = {n: array(orig_grad[n], ctx=ctx, dtype=loc[n].dtype) for n in grad_req}
    variables = [loc[n] for n in grad_req]
    autograd.mark_variables(variables, [grads[n] for n in grad_req], [grad_req[n] for n in grad_req])
    with autograd.record(train_mode=True):
        outs = call(loc)
    projs = [np.random.rand(*o.shape) + 0.1 for o in outs]
    autograd.backward(outs, [array(p, ctx=ctx, dtype=o.dtype) for p, o in zip(projs, outs)])
    sym_grads = {n: grads[n].asnumpy() for n in grad_req}

    eps = get_tolerance(outs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16) and eps < 1e-5:
        raise ValueError(f"check_numeric_gradient: numeric_eps={eps} is too small for {np.dtype(dtype).name}")

    # Finite differences: the forwards run without recording.
    def loss(arrays):
        with autograd.pause(train_mode=use_forward_train):
            res = call(arrays)
        return sum(float((r.asnumpy().astype(np.float64) * p).sum()) for r, p in zip(res, projs))

    for n, req in grad_req.items():
        v = loc_np[n]
        if req == "null":
            assert_almost_equal(orig_grad[n].astype(sym_grads[n].dtype), sym_grads[n], rtol, atol,
                                (f"ORIGINAL_{n}", f"BACKWARD_{n}"))
            continue
        if v.dtype.kind != "f":
            continue
        fd = np.zeros(v.shape, dtype=v.dtype)
        work = v.copy()
        flat, fd_flat = work.reshape(-1), fd.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            arrays = dict(loc)
            arrays[n] = array(work, ctx=ctx, dtype=loc[n].dtype)
            fp = loss(arrays)
            flat[i] = old - eps / 2.0
            arrays[n] = array(work, ctx=ctx, dtype=loc[n].dtype)
            fm = loss(arrays)
            flat[i] = old
            fd_flat[i] = (fp - fm) / eps
        got = sym_grads[n] if req == "write" else sym_grads[n] - orig_grad[n].astype(sym_grads[n].dtype)
        assert_almost_equal(fd, got, rtol, atol, (f"NUMERICAL_{n}", f"BACKWARD_{n}"))


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None,
                      rtol=None, atol=None, raise_on_err=True, ground_truth=None, equal_nan=False,
                      use_uniform=False, rand_type=np.float64):
    """Check that ``sym`` gives the same outputs and gradients in every
    configuration of ``ctx_list`` (contexts and dtypes).

    sym : Symbol, callable, or a list of them (one per entry of ``ctx_list``)
        A Symbol is ``simple_bind``-ed per entry (MXNet 1.9.1's procedure:
        arguments the entries do not name get their shapes inferred, aux
        states start at 0, outputs are named by ``list_outputs()`` and
        gradients by argument). A callable takes its arguments as keyword
        NDArrays and returns an NDArray or a list of NDArrays.
    ctx_list : list of dict
        Each entry is ``{'ctx': Context, '<arg>': shape, ..., 'type_dict':
        {'<arg>': dtype}}`` (dtype defaults to float32); with callables every
        entry names the same arguments (all of them).
    scale : float
        Spread of the random inputs: normal with this standard deviation, or
        uniform in ±0.92*scale with ``use_uniform``.
    grad_req : 'write', 'add', 'null', or a list/dict of them per argument.
    arg_params : dict name -> array, optional
        Input values to use instead of random ones (with a Symbol, the dict
        given is filled in with the random values, as MXNet does).
    aux_params : dict name -> array, optional
        Auxiliary states (Symbol) or extra keyword inputs that are not
        differentiated (callable).
    rtol, atol : float or dict dtype->float, optional
        Tolerances (default: per dtype, the less precise side decides).
    raise_on_err : bool
        Raise the first mismatch (True) or print it and go on (False).
    ground_truth : dict, optional
        Reference values by name instead of the most precise entry's results.
    equal_nan : bool
        Treat NaNs in the same place as equal.
    rand_type : numpy dtype of the generated inputs.

    The forward runs once in inference mode and is compared; then, unless
    grad_req is 'null', it runs recorded in training mode, backward uses the
    first entry's outputs (cast to the least precise output dtype) as head
    gradients, and outputs and gradients are compared. With callables,
    outputs are named 'output0', 'output1', ..., gradients by argument name.
    Returns the ground truth: a dict name -> NDArray (or the given
    ``ground_truth``).
    """
    from . import autograd

    if not isinstance(ctx_list, (list, tuple)) or len(ctx_list) < 2:
        raise ValueError("check_consistency: ctx_list must be a list of at least two configurations")
    if _is_symbol(sym) or (isinstance(sym, (list, tuple)) and sym and all(_is_symbol(x) for x in sym)):
        return _symbolic_consistency(sym, ctx_list, scale, grad_req, arg_params, aux_params, rtol, atol,
                                     raise_on_err, ground_truth, equal_nan, use_uniform, rand_type)
    syms = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    if len(syms) != len(ctx_list):
        raise ValueError(f"check_consistency: {len(syms)} callables for {len(ctx_list)} configurations")
    for s in syms:
        _require_callable("check_consistency", s)
    arg_names = sorted(k for k in ctx_list[0] if k not in ("ctx", "type_dict"))
    for c in ctx_list:
        if sorted(k for k in c if k not in ("ctx", "type_dict")) != arg_names:
            raise ValueError(f"check_consistency: every configuration must name the same arguments {arg_names}")
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise ValueError("check_consistency: grad_req must be a str, a list or a dict")
    arg_params = {} if arg_params is None else dict(arg_params)
    aux_params = {} if aux_params is None else dict(aux_params)
    for n in arg_names:
        if n not in arg_params:
            shape = tuple(ctx_list[0][n])
            if use_uniform:
                arg_params[n] = np.random.uniform(low=-0.92 * scale, high=0.92 * scale, size=shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=shape, scale=scale).astype(rand_type)

    def inputs(c):
        td = c.get("type_dict", {})
        ctx = c.get("ctx") or default_context()
        args = {n: array(np.asarray(arg_params[n]).reshape(c[n]), ctx=ctx, dtype=np.dtype(td.get(n, np.float32)))
                for n in arg_names}
        aux = {k: array(_as_np(v), ctx=ctx, dtype=np.dtype(td.get(k, _as_np(v).dtype))) for k, v in aux_params.items()}
        return args, aux

    def fail(msg, e):
        if raise_on_err:
            raise AssertionError(f"{msg}: {e}") from e
        print(f"{msg}: {e}")

    # Inference-mode forward.
    outputs = []
    for s, c in zip(syms, ctx_list):
        args, aux = inputs(c)
        with autograd.pause(train_mode=False):
            outputs.append(_as_outputs(s(**args, **aux), "check_consistency"))
    dtypes = [np.dtype(o[0].dtype) for o in outputs]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    out_names = [f"output{k}" for k in range(len(outputs[0]))]
    gt = ground_truth
    if gt is None:
        gt = dict(zip(out_names, outputs[gt_idx]))
    for i, outs in enumerate(outputs):
        if i == gt_idx:
            continue
        for name, arr in zip(out_names, outs):
            try:
                assert_almost_equal(arr, gt[name], rtol=rtol, atol=atol, equal_nan=equal_nan,
                                    names=(f"ctx{i}", f"ctx{gt_idx}"))
            except AssertionError as e:
                fail(f"check_consistency: predict error, configuration {i} vs {gt_idx} at {name}", e)
    if all(r == "null" for r in reqs.values()):
        return gt

    # Training-mode forward and backward.
    runs = []
    for s, c in zip(syms, ctx_list):
        args, aux = inputs(c)
        grads = {}
        for n in arg_names:
            if reqs[n] != "null":
                grads[n] = array(np.zeros(args[n].shape), ctx=args[n].context, dtype=args[n].dtype)
        marked = [n for n in arg_names if n in grads]
        autograd.mark_variables([args[n] for n in marked], [grads[n] for n in marked], [reqs[n] for n in marked])
        with autograd.record(train_mode=True):
            outs = _as_outputs(s(**args, **aux), "check_consistency")
        runs.append((outs, grads))

    def smaller(d1, d2):
        return d1 if d2 is None or np.dtype(d1).itemsize < np.dtype(d2).itemsize else d2

    least = [None] * len(runs[0][0])
    for outs, _ in runs:
        least = [smaller(o.dtype, d) for o, d in zip(outs, least)]
    head_np = [o.asnumpy().astype(d) for o, d in zip(runs[0][0], least)]
    for outs, _ in runs:
        autograd.backward(outs, [array(h, ctx=o.context, dtype=o.dtype) for h, o in zip(head_np, outs)])
    if ground_truth is None:
        gt_outs, gt_grads = runs[gt_idx]
        gt = dict(zip(out_names, gt_outs))
        gt.update({n: gt_grads.get(n) for n in arg_names})
    for i, (outs, grads) in enumerate(runs):
        if i == gt_idx:
            continue
        items = list(zip(out_names, outs)) + [(n, grads.get(n)) for n in arg_names]
        for name, arr in items:
            if gt.get(name) is None:
                if arr is not None:
                    fail(f"check_consistency: configuration {i} has a gradient for {name}, the reference none",
                         AssertionError(name))
                continue
            gtarr = gt[name]
            rt, at = rtol, atol
            sa, sg = smaller(arr.dtype, dtypes[i]), smaller(gtarr.dtype, dtypes[gt_idx])
            if np.dtype(sa) != np.dtype(arr.dtype) or np.dtype(sg) != np.dtype(gtarr.dtype):
                rt, at = get_tols(np.zeros(1, sa), np.zeros(1, sg), rtol, atol)
            try:
                assert_almost_equal(arr, gtarr, rtol=rt, atol=at, equal_nan=equal_nan,
                                    names=(f"ctx{i}", f"ctx{gt_idx}"))
            except AssertionError as e:
                fail(f"check_consistency: train error, configuration {i} vs {gt_idx} at {name}", e)
    return gt


# -- the same checks on symbols (bound executors), as MXNet 1.9.1 runs them ------------------


def _require_symbol(fn, sym):
    if not _is_symbol(sym):
        raise TypeError(f"{fn}: sym must be an mx.sym.Symbol, got {type(sym).__name__}")


def _check_dtype(fn, dtype, allow_asnumpy=True):
    if (allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy") or dtype in (np.float16, np.float32,
                                                                                       np.float64):
        return
    raise ValueError(f"{fn}: dtype must be {'asnumpy, ' if allow_asnumpy else ''}np.float16, np.float32 or "
                     f"np.float64, got {dtype!r}")


def _to_nd(v, ctx, dtype):
    """An NDArray of ``v`` on ``ctx``: NDArrays as they are, other values
    converted to ``dtype`` (their own dtype when ``dtype == 'asnumpy'``)."""
    if isinstance(v, NDArray):
        return v
    v = np.asarray(v)
    return array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)


def _by_name(fn, what, names, given):
    """``given`` (a list in ``names`` order or a dict naming every name) as a dict."""
    if isinstance(given, dict):
        if set(given) != set(names):
            raise ValueError(f"{fn}: Symbol {what} and the keys of the given {what} do not match: symbol {what} "
                             f"{sorted(names)}, given {sorted(given)}")
        return dict(given)
    if not isinstance(given, (list, tuple)):
        raise TypeError(f"{fn}: {what} must be a list, tuple or dict of arrays, got {type(given).__name__}")
    if len(given) < len(names):
        raise ValueError(f"{fn}: {len(given)} {what} given for the symbol's {len(names)} ({', '.join(names)})")
    return dict(zip(names, given))


def _parse_location(sym, location, ctx, dtype=np.float32, fn="check_symbolic_forward"):
    """The argument arrays of ``sym`` by name, sorted by name: ``location``
    is a list in ``sym.list_arguments()`` order or a dict naming every
    argument; NumPy values become NDArrays of ``dtype`` on ``ctx``."""
    loc = _by_name(fn, "arguments", sym.list_arguments(), location)
    return {k: _to_nd(loc[k], ctx, dtype) for k in sorted(loc)}


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32, fn="check_symbolic_forward"):
    """The auxiliary-state arrays of ``sym`` by name (None when
    ``aux_states`` is None); as :func:`_parse_location`."""
    if aux_states is None:
        return None
    aux = _by_name(fn, "auxiliary states", sym.list_auxiliary_states(), aux_states)
    return {k: array(_as_np(v), ctx=ctx, dtype=_as_np(v).dtype if isinstance(dtype, str) else dtype)
            for k, v in aux.items()}


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Binds ``sym`` to the NumPy arrays ``inputs`` (by argument name), runs
    forward and returns the output as a NumPy array (a list of them when
    there are several outputs)."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v, ctx=ctx) for k, v in inputs.items()})
    outs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outs[0] if len(outs) == 1 else outs


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True, dtype=np.float32):
    """Central finite differences of the sum of ``executor``'s first output.

    executor : Executor
        A bound executor; ``location`` is written into its arguments.
    location : dict name -> numpy.ndarray
        The point; the arguments named here are differentiated (those of a
        non-float dtype get zeros).
    aux_states : dict name -> numpy.ndarray, optional
        Written into the auxiliary states before every forward.
    eps : float
        The step: each element is moved by +-eps/2.
    use_forward_train : bool
        Run the forwards in training mode.
    dtype : numpy float type of the arguments.

    Returns a dict name -> numpy.ndarray of approximate gradients. The
    arguments are left at ``location``.
    """
    _check_dtype("numeric_grad", dtype, allow_asnumpy=False)
    approx = {k: np.zeros(np.shape(v), dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = np.asarray(v, dtype=dtype)

    def run():
        if aux_states is not None:
            for name, val in aux_states.items():
                executor.aux_dict[name][:] = val
        return executor.forward(is_train=use_forward_train)[0].asnumpy().astype(np.float64)

    for k, v in location.items():
        v = np.array(v, dtype=dtype, order="C")
        if v.dtype.kind != "f":
            continue
        work = v.copy()
        flat, out = work.reshape(-1), approx[k].reshape(-1)
        dst = executor.arg_dict[k]
        for i in range(flat.size):
            flat[i] = v.flat[i] + eps / 2.0
            dst[:] = work
            f_plus = run()
            flat[i] = v.flat[i] - eps / 2.0
            dst[:] = work
            f_minus = run()
            flat[i] = v.flat[i]
            out[i] = (f_plus - f_minus).sum() / eps
        dst[:] = v
    return approx


def _symbolic_numeric_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes, use_forward_train,
                               ctx, grad_stype_dict, dtype):
    """check_numeric_gradient on a Symbol (MXNet 1.9.1's procedure)."""
    from . import symbol as _sym

    fn = "check_numeric_gradient"
    _check_dtype(fn, dtype, allow_asnumpy=False)
    if grad_stype_dict:
        bad = {k: v for k, v in grad_stype_dict.items() if v != "default"}
        if bad:
            raise ValueError(f"{fn}: only 'default' gradient storage is supported, got {bad}")
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype, fn)
    loc_np = {k: v.asnumpy() for k, v in loc.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, fn)
    aux_np = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        grad_req = {k: "write" for k in sym.list_arguments()}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
    else:
        raise ValueError(f"{fn}: grad_nodes must be None, a list of names or a dict name->grad_req")
    unknown = [k for k in grad_req if k not in loc]
    if unknown:
        raise ValueError(f"{fn}: grad_nodes {unknown} are not arguments (arguments: {sym.list_arguments()})")
    for k, r in grad_req.items():
        if r not in ("write", "add", "null"):
            raise ValueError(f"{fn}: invalid grad_req {r!r} for argument {k}")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in loc.items()})
    if out_shapes is None:
        raise ValueError(f"{fn}: the shapes of the location do not determine the output shape")
    if len(out_shapes) != 1:
        raise ValueError(f"{fn}: sym must have one output, it has {len(out_shapes)} ({sym.list_outputs()})")

    # The output is projected on fixed random weights (not too small, so
    # that the finite differences keep their precision) and made a loss.
    proj_name = "__random_proj"
    out = _sym.make_loss(sym * _sym.var(proj_name))
    args = dict(loc)
    args[proj_name] = array(np.random.rand(*out_shapes[0]) + 0.1, ctx=ctx, dtype=dtype)
    grad_np = {k: np.random.normal(0, 0.01, size=args[k].shape) for k in grad_req}
    grad_np[proj_name] = np.random.normal(0, 0.01, size=out_shapes[0])
    grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grad_np.items()}
    exe = out.bind(ctx, args=args, args_grad=grads, grad_req=grad_req, aux_states=aux)
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16) and eps < 1e-5:
        raise ValueError(f"{fn}: numeric_eps={eps} is too small for {np.dtype(dtype).name}")
    exe.backward()
    sym_grads = {k: grads[k].asnumpy() for k in grad_req}

    wanted = {k: loc_np[k] for k, r in grad_req.items() if r != "null"}
    fd = numeric_grad(exe, wanted, aux_np, eps=eps, use_forward_train=use_forward_train, dtype=dtype)
    for k, r in grad_req.items():
        names = (f"NUMERICAL_{k}", f"BACKWARD_{k}")
        if r == "write":
            assert_almost_equal(fd[k], sym_grads[k], rtol, atol, names)
        elif r == "add":
            assert_almost_equal(fd[k], sym_grads[k] - grad_np[k], rtol, atol, names)
        else:
            assert_almost_equal(grad_np[k], sym_grads[k], rtol, atol, names)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32):
    """Binds ``sym`` at ``location``, runs forward (inference mode) and
    compares the outputs with ``expected``.

    sym : Symbol
    location : list (in ``sym.list_arguments()`` order) or dict of arrays
        The arguments' values (NumPy arrays are converted to ``dtype``).
    expected : list (in output order) or dict by ``sym.list_outputs()`` name
        The expected outputs (NumPy arrays or NDArrays); a list may be
        shorter than the outputs (the first ones are checked).
    rtol, atol : float or dict dtype->float, optional
        Tolerances (default per dtype).
    aux_states : list or dict, optional
        The auxiliary states (needed when ``sym`` has any).
    ctx : Context, optional
        Where to run (default :func:`default_context`).
    equal_nan : bool
        NaNs in the same places compare equal.
    dtype : 'asnumpy', np.float16, np.float32 or np.float64
        Dtype of the arrays made from NumPy values ('asnumpy': their own).

    Returns the executor's outputs (a list of NDArrays); raises
    AssertionError naming the output that differs.
    """
    fn = "check_symbolic_forward"
    _require_symbol(fn, sym)
    _check_dtype(fn, dtype)
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype, fn)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, fn)
    names = sym.list_outputs()
    if isinstance(expected, dict):
        expected = [expected[k] for k in names]
    elif isinstance(expected, (np.ndarray, NDArray)):
        expected = [expected]
    if len(expected) > len(names):
        raise ValueError(f"{fn}: {len(expected)} expected values for {len(names)} outputs ({names})")
    exe = sym.bind(ctx, args=loc, aux_states=aux)
    outputs = exe.forward(is_train=False)
    for name, exp, out in zip(names, expected, outputs):
        assert_almost_equal(exp, out, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32):
    """Binds ``sym`` at ``location``, runs forward (training mode) and
    backward with ``out_grads``, and compares the gradients with ``expected``.

    sym : Symbol
    location : list (in ``sym.list_arguments()`` order) or dict of arrays
    out_grads : list (in output order), dict by output name, or None
        Head gradients (None: ones, as for a loss output).
    expected : list (in ``list_arguments()`` order, may be shorter) or dict
        Expected gradients; only the arguments named here get gradient
        buffers (the others are not differentiated).
    rtol, atol : float or dict dtype->float, optional
    aux_states : list or dict, optional
    grad_req : 'write', 'add', 'null', or a list (argument order) / dict of them
        The buffers start with random values: with 'add' the added part is
        checked, with 'null' the buffer must be left as it was.
    ctx : Context, optional
    grad_stypes : dict name -> storage type, optional
        Only 'default' is supported.
    equal_nan : bool
    dtype : 'asnumpy', np.float16, np.float32 or np.float64

    Returns the gradient arrays (a dict name -> NDArray); raises
    AssertionError naming the argument whose gradient differs.
    """
    fn = "check_symbolic_backward"
    _require_symbol(fn, sym)
    _check_dtype(fn, dtype)
    ctx = ctx or default_context()
    arg_names = sym.list_arguments()
    loc = _parse_location(sym, location, ctx, dtype, fn)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, fn)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(arg_names, expected))
    elif not isinstance(expected, dict):
        raise TypeError(f"{fn}: expected must be a list or dict of arrays, got {type(expected).__name__}")
    unknown = [k for k in expected if k not in arg_names]
    if unknown:
        raise ValueError(f"{fn}: expected gradients for {unknown}, which are not arguments ({arg_names})")
    if grad_stypes:
        bad = {k: v for k, v in grad_stypes.items() if v not in (None, "default")}
        if bad:
            raise ValueError(f"{fn}: only 'default' gradient storage is supported, got {bad}")
    # the buffers start dirty, deterministically (sorted names) for reproducibility
    start = {k: np.random.normal(size=np.shape(_as_np(expected[k]))) for k in sorted(expected)}
    grads = {k: array(v, ctx=ctx, dtype=_as_np(expected[k]).dtype if isinstance(dtype, str) else dtype)
             for k, v in start.items()}
    if isinstance(grad_req, str):
        reqs = {k: grad_req for k in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        reqs = dict(grad_req)
    else:
        raise TypeError(f"{fn}: grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    exe = sym.bind(ctx, args=loc, args_grad=grads, grad_req=reqs, aux_states=aux)
    exe.forward(is_train=True)
    if isinstance(out_grads, (np.ndarray, NDArray)):
        out_grads = [out_grads]
    if isinstance(out_grads, (list, tuple)):
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = {k: _to_nd(g, ctx, dtype) for k, g in out_grads.items()}
    elif out_grads is not None:
        raise TypeError(f"{fn}: out_grads must be None, a list or a dict of arrays, got {type(out_grads).__name__}")
    exe.backward(out_grads)
    for k in expected:
        req = reqs.get(k, "null")
        names = (f"EXPECTED_{k}", f"BACKWARD_{k}")
        if req == "write":
            assert_almost_equal(expected[k], grads[k], rtol, atol, names, equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(expected[k], grads[k].asnumpy() - start[k], rtol, atol, names, equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(start[k], grads[k], rtol, atol, names, equal_nan=equal_nan)
        else:
            raise ValueError(f"{fn}: invalid grad_req {req!r} for argument {k}")
    return grads


def _symbolic_consistency(sym, ctx_list, scale, grad_req, arg_params, aux_params, rtol, atol, raise_on_err,
                          ground_truth, equal_nan, use_uniform, rand_type):
    """check_consistency on Symbols (MXNet 1.9.1's procedure)."""
    fn = "check_consistency"
    syms = [sym] * len(ctx_list) if _is_symbol(sym) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError(f"{fn}: {len(syms)} symbols for {len(ctx_list)} configurations")
    out_names = syms[0].list_outputs()
    arg_names = syms[0].list_arguments()
    exes = []
    for i, (s, c) in enumerate(zip(syms, ctx_list)):
        if s.list_arguments() != arg_names or s.list_outputs() != out_names:
            raise ValueError(f"{fn}: symbol {i} has arguments {s.list_arguments()} and outputs {s.list_outputs()}, "
                             f"symbol 0 {arg_names} and {out_names}")
        c = dict(c)
        ctx = c.pop("ctx", None) or default_context()
        exes.append(s.simple_bind(ctx, grad_req=grad_req, **c))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for n, arr in sorted(exes[0].arg_dict.items()):  # sorted: reproducible random inputs
        if n not in arg_params:
            if use_uniform:
                arg_params[n] = np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=arr.shape, scale=scale).astype(rand_type)
    for n in exes[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exes:
        for n, arr in exe.arg_dict.items():
            arr[:] = arg_params[n]
        for n, arr in exe.aux_dict.items():
            arr[:] = aux_params[n]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0

    def smaller(d1, d2):
        return d1 if d2 is None or np.dtype(d1).itemsize < np.dtype(d2).itemsize else d2

    def fail(msg, e):
        if raise_on_err:
            raise AssertionError(f"{fn}: {msg}: {e}") from e
        print(f"{fn}: {msg}: {e}")

    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))  # the first of the most precise
    for exe in exes:
        exe.forward(is_train=False)
    gt = ground_truth
    if gt is None:
        gt = dict(exes[gt_idx].output_dict)
        if grad_req != "null":
            gt.update(exes[gt_idx].grad_dict)
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(out_names, exe.outputs):
            try:
                assert_almost_equal(arr, gt[name], rtol=rtol, atol=atol, equal_nan=equal_nan,
                                    names=(f"ctx{i}_{name}", f"ctx{gt_idx}_{name}"))
            except AssertionError as e:
                fail(f"Predict Err: ctx {i} vs ctx {gt_idx} at {name}", e)
    if grad_req == "null":
        return gt

    for exe in exes:
        exe.forward(is_train=True)
    # the first executor's outputs, in the least precise dtype, are every executor's head gradients
    least = [o.dtype for o in exes[0].outputs]
    for exe in exes:
        least = [smaller(o.dtype, d) for o, d in zip(exe.outputs, least)]
    heads = [o.asnumpy().astype(d) for o, d in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([array(h, ctx=o.context, dtype=o.dtype) for h, o in zip(heads, exe.outputs)])
    if ground_truth is None:
        gt = dict(exes[gt_idx].output_dict)
        gt.update(exes[gt_idx].grad_dict)
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(out_names + arg_names, list(exe.outputs) + list(exe.grad_arrays)):
            gtarr = gt.get(name)
            if gtarr is None:
                if arr is not None:
                    fail(f"Train Err: ctx {i} has a gradient for {name}, ctx {gt_idx} none", AssertionError(name))
                continue
            rt, at = rtol, atol
            # a float32 gradient (e.g. BatchNorm's gamma) of a float16 network is compared at float16's tolerance
            sa, sg = smaller(arr.dtype, dtypes[i]), smaller(gtarr.dtype, dtypes[gt_idx])
            if np.dtype(sa) != np.dtype(arr.dtype) or np.dtype(sg) != np.dtype(gtarr.dtype):
                rt, at = get_tols(np.zeros(1, sa), np.zeros(1, sg), rtol, atol)
            try:
                assert_almost_equal(arr, gtarr, rtol=rt, atol=at, equal_nan=equal_nan,
                                    names=(f"ctx{i}_{name}", f"ctx{gt_idx}_{name}"))
            except AssertionError as e:
                fail(f"Train Err: {np.dtype(arr.dtype).name} ctx {i} vs {np.dtype(gtarr.dtype).name} ctx {gt_idx} "
                     f"at {name}", e)
    return gt


# ---------------------------------------------------------------------------
# Small helpers MXNet 1.9.1's test_utils also has
# ---------------------------------------------------------------------------


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol``, or the default relative tolerance of ``dtype`` when None."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol``, or the default absolute tolerance of ``dtype`` when None."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_etol(etol=None):
    """``etol`` (the tolerated fraction of mismatching elements), 0 when None."""
    return 0 if etol is None else etol


def effective_dtype(dat):
    """The dtype that decides comparison tolerances for ``dat`` (an NDArray
    or NumPy array): its own dtype (oxnet has no TF32 GPU arithmetic, which
    makes MXNet treat float32 as float16 on some GPUs)."""
    return np.dtype(dat.dtype)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """:func:`assert_almost_equal` with NumPy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """:func:`assert_almost_equal`, ignoring the positions where either
    array is NaN."""
    a, b = np.array(_as_np(a)), np.array(_as_np(b))
    skip = np.isnan(a) | np.isnan(b)
    a[skip] = 0
    b[skip] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"), equal_nan=False,
                                 mismatches=(10, 10)):
    """Like :func:`assert_almost_equal`, but with ``etol > 0`` a fraction
    of up to ``etol`` elements may differ; raises AssertionError naming the
    mismatch rate and the worst element otherwise. ``mismatches[0]`` bounds
    the number of mismatching positions listed."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    a, b = _as_np(a), _as_np(b)
    rtol, atol = get_tols(a, b, rtol, atol)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    rate = 1 - np.count_nonzero(close) / max(close.size, 1)
    if rate <= etol:
        return
    bad = np.argwhere(~close)[: max(int(mismatches[0]), 1)]
    where = ", ".join(f"{tuple(int(i) for i in p)}: {names[0]}={a[tuple(p)]!r} {names[1]}={b[tuple(p)]!r}"
                      for p in bad)
    raise AssertionError(f"mismatch rate {rate:.2%} exceeds etol={etol} (rtol={rtol}, atol={atol}); {where}")


def assert_exception(f, exception_type, *args, **kwargs):
    """Raise AssertionError unless ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type}")


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """Compare (nested tuples of) arrays with :func:`assert_almost_equal`;
    nothing is compared when either side is None."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for x, y in zip(t1, t2):
            compare_ndarray_tuple(x, y, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def assign_each(the_input, function):
    """A float64 NumPy array of ``function(x)`` for each element x of
    ``the_input`` (a copy of the input when ``function`` is None)."""
    if function is None:
        return np.array(the_input)
    src = np.asarray(the_input)
    out = np.zeros(src.shape)
    for idx in np.ndindex(*src.shape):
        out[idx] = function(src[idx])
    return out


def assign_each2(input1, input2, function):
    """A float64 NumPy array of ``function(x, y)`` over the elements of two
    arrays of one shape (a copy of ``input1`` when ``function`` is None)."""
    if function is None:
        return np.array(input1)
    x, y = np.asarray(input1), np.asarray(input2)
    assert x.shape == y.shape, f"assign_each2: shapes {x.shape} and {y.shape} differ"
    out = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        out[idx] = function(x[idx], y[idx])
    return out


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` with ``numpy_reduce_func`` (such as ``np.sum``) over
    ``axis`` (None, an int or a list), one axis at a time."""
    axes = [axis] if isinstance(axis, int) else (list(axis) if axis is not None else list(range(dat.ndim)))
    res = dat
    for ax in sorted(axes, reverse=True):
        res = numpy_reduce_func(res, axis=ax)
    if keepdims:
        shape = list(dat.shape)
        for ax in axes:
            shape[ax] = 1
        res = np.reshape(res, shape)
    return res


def collapse_sum_like(a, shape):
    """Sum the NumPy array ``a`` over the axes that ``shape`` (broadcastable
    to ``a``'s shape) lacks or has as 1; returns an array of ``shape``."""
    assert a.ndim >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            assert s == 1, f"collapse_sum_like: shape {shape} does not broadcast to {a.shape}"
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def random_arrays(*shapes):
    """Standard-normal NumPy arrays (``default_dtype()``) of the given shapes;
    one array when one shape is given (a 0-d array for ``()``)."""
    arrays = [np.array(np.random.randn(*s), dtype=default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """A list of NumPy arrays uniform in [low, high) (keywords ``low`` = 0,
    ``high`` = 1, ``dtype`` = ``default_dtype()``) of the given shapes."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError("Got unexpected argument/s : " + str(kwargs.keys()))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """``k`` elements of the list ``population`` in random order (NumPy's
    global random state)."""
    assert 0 <= k <= len(population)
    pool = list(population)
    np.random.shuffle(pool)
    return pool[:k]


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point (x, y) with x in [x_low, x_high), y in [y_low, y_high)."""
    return (np.random.randint(x_low, x_high, dtype=np.int64), np.random.randint(y_low, y_high, dtype=np.int64))


def same_array(array1, array2):
    """True when two NDArrays share memory: a change written to ``array1``
    shows in ``array2`` (array1 is restored afterwards)."""
    array1[:] += 1
    followed = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return followed and same(array1.asnumpy(), array2.asnumpy())


def create_vector(size, dtype=np.int64):
    """``mx.nd.arange(0, size)`` of ``dtype`` (int64 by default)."""
    from .ndarray.ndarray import arange

    return arange(0, size, dtype=dtype)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """A (rows, columns) NDArray whose row i holds the value i."""
    from .ndarray.ndarray import arange

    return arange(0, rows, dtype=dtype).reshape(rows, 1).broadcast_to((rows, columns))


def get_identity_mat(size):
    """A float32 identity matrix (size, size) as an NDArray."""
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """Two stacked float32 identity matrices, shape (2, size, size)."""
    return array(np.stack([np.eye(size, dtype=np.float32)] * 2))


def new_orthonormal_matrix_2d(n):
    """A random orthonormal (n, n) NumPy matrix (float64)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_matrix_with_real_eigvals_2d(n):
    """A random well-conditioned (n, n) NumPy matrix whose eigenvalues are
    real and lie in [-10, 10): Q^-1 D Q with Q a scaled reflection of
    condition number below 3."""
    eye = np.eye(n)
    while True:
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v /= np.linalg.norm(v)
        q = (eye - 2 * v @ v.T) @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(q, 2) < 3:
            break
    d = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(q) @ d @ q


def new_matrix_with_real_eigvals_nd(shape):
    """A stack (shape[:-2]) of :func:`new_matrix_with_real_eigvals_2d` matrices."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric (n, n) NumPy matrix with eigenvalues in [-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A stack (shape[:-2]) of :func:`new_sym_matrix_with_real_eigvals_2d` matrices."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


def mean_check(generator, mu, sigma, nsamples=1000000):
    """True when the mean of ``generator(nsamples)`` lies within
    mu +- 3 sigma / sqrt(nsamples)."""
    m = np.asarray(generator(nsamples)).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < m < mu + half)


def var_check(generator, sigma, nsamples=1000000):
    """True when the sample variance (ddof=1) of ``generator(nsamples)`` lies
    within sigma^2 +- 3 sqrt(2 sigma^4 / (nsamples - 1))."""
    v = np.asarray(generator(nsamples)).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma**4 / (nsamples - 1))
    return bool(sigma**2 - half < v < sigma**2 + half)


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equiprobable buckets [(ppf(i/n), ppf((i+1)/n))] of a
    distribution given its quantile function, and their probabilities."""
    assert nbuckets > 0
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, [1.0 / nbuckets] * nbuckets


def retry(n):
    """Decorator: run a (stochastic) test up to ``n`` times, re-raising the
    AssertionError of the last try."""
    assert n > 0

    def decorate(f):
        import functools

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    from .ndarray.ndarray import waitall

                    waitall()

        return wrapper

    return decorate


def use_np(func):
    """``mx.util.use_np`` (re-exported here as MXNet's test_utils does)."""
    from .util import use_np as _use_np

    return _use_np(func)


def getenv(name):
    """The value of environment variable ``name`` as the native library sees
    it (oxnet's core reads the process environment), or None."""
    import os

    return os.environ.get(name)


def setenv(name, value):
    """Set (or, with None, unset) environment variable ``name`` for the
    process, native library included."""
    import os

    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def environment(*args):
    """Context manager setting environment variables for its body and
    restoring them after: ``environment(name, value)`` or
    ``environment({name: value, ...})``; a value of None unsets."""
    import contextlib
    import os

    if len(args) == 1 and isinstance(args[0], dict):
        wanted = dict(args[0])
    else:
        assert len(args) == 2, "Expecting one dict arg or two args: env var name and value"
        wanted = {args[0]: args[1]}

    @contextlib.contextmanager
    def scope():
        saved = {k: os.environ.get(k) for k in wanted}
        try:
            for k, v in wanted.items():
                setenv(k, v)
            yield
        finally:
            for k, v in saved.items():
                setenv(k, v)

    return scope()


def discard_stderr():
    """Context manager sending the process's standard error (file descriptor
    2, native code included) to the null device for its body."""
    import contextlib
    import os
    import sys

    @contextlib.contextmanager
    def scope():
        try:
            fd = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            yield
            return
        sys.stderr.flush()
        saved = os.dup(fd)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), fd)
                try:
                    yield
                finally:
                    sys.stderr.flush()
                    os.dup2(saved, fd)
        finally:
            os.close(saved)

    return scope()


def list_gpus():
    """``range(n)`` for the n GPUs oxnet can use (empty: no GPU backend yet)."""
    from .context import num_gpus

    return range(num_gpus())


def is_op_runnable():
    """True: every registered operator runs on oxnet's CPU backend."""
    return True


def get_im2rec_path(home_env="MXNET_HOME"):
    """Path of the im2rec tool: ``$MXNET_HOME/tools/im2rec.py`` when that
    file exists, else oxnet's own ``oxnet/tools/im2rec.py`` (run it as
    ``python -m oxnet.tools.im2rec``)."""
    import os

    if home_env in os.environ:
        p = os.path.join(os.environ[home_env], "tools", "im2rec.py")
        if os.path.isfile(p):
            return p
    from .tools import im2rec

    return os.path.abspath(im2rec.__file__)


class DummyIter(_DataIter):
    """A data iterator that returns the first batch of ``real_iter`` forever
    (for speed tests); ``provide_data``, ``provide_label`` and
    ``batch_size`` are the real iterator's."""

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def next(self):
        """The first batch of the real iterator (never StopIteration)."""
        return self.the_batch


def _chi2_sf(stat, dof):
    """P(X >= stat) for a chi-square variable with ``dof`` degrees of
    freedom: the regularized upper incomplete gamma Q(dof/2, stat/2)."""
    import math

    a, x = dof / 2.0, stat / 2.0
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        # lower series: P(a, x) = x^a e^-x / Gamma(a + 1) * sum x^n / ((a+1)...(a+n))
        term = total = 1.0 / a
        n = 1
        while abs(term) > abs(total) * 1e-16 and n < 10000:
            term *= x / (a + n)
            total += term
            n += 1
        return max(0.0, 1.0 - total * math.exp(log_front))
    # continued fraction for Q(a, x) (modified Lentz)
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-16:
            break
    return min(1.0, math.exp(log_front) * h)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square goodness-of-fit test of ``generator(n)`` (n i.i.d.
    samples) against bucket probabilities ``probs``.

    ``buckets`` is a list of ascending, non-overlapping (low, high) ranges
    for a continuous distribution (a sample x counts in the range with
    low <= x < high), or of the possible values of a discrete one.
    Returns (p, observed counts, expected counts); a p above e.g. 0.05
    means the samples fit. (MXNet calls SciPy; oxnet computes the
    chi-square survival function itself.)"""
    assert isinstance(buckets, list)
    assert len(probs) == len(buckets)
    samples = np.asarray(generator(nsamples))
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(2 * len(buckets), dtype=np.float32)
        for i, (lo, hi) in enumerate(buckets):
            assert lo <= hi
            if i + 1 < len(buckets):
                assert hi <= buckets[i + 1][0]
            edges[2 * i], edges[2 * i + 1] = lo, hi
        ids = np.searchsorted(edges, samples, side="right")
        inside = ids % 2 == 1
        for i in range(len(buckets)):
            observed[i] = np.count_nonzero(inside & (ids // 2 == i))
    else:
        for i, v in enumerate(buckets):
            observed[i] = np.count_nonzero(samples == v)
    exp_f = expected.astype(np.float64)
    stat = float(np.sum((observed - exp_f) ** 2 / exp_f))
    return _chi2_sf(stat, len(buckets) - 1), observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2, alpha=0.05):
    """Run :func:`chi_square_check` ``nrepeat`` times; raise AssertionError
    unless at least ``nrepeat * success_rate`` runs have p > ``alpha``.
    Returns the list of p values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    ps = [r[0] for r in runs]
    if (np.array(ps) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            "Generator test fails, Chi-square p=%s, obs_freq=%s, expected_freq=%s.\nbuckets=%s, probs=%s"
            % (ps, [r[1] for r in runs], [r[2] for r in runs], buckets, probs)
        )
    return ps


def is_cd_run():
    """True when the environment variable CD_JOB is '1' (a continuous-delivery run)."""
    import os

    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """True on an aarch64 machine."""
    import platform

    return platform.machine() == "aarch64"


def has_tvm_ops():
    """False: oxnet has no TVM-generated operators."""
    return False


def locationError(a, b, index, names, maxError=False):  # noqa: N802 (MXNet's name)
    """The text 'Location of [maximum ]error: index, a=..., b=...' for the
    element ``index`` of two NumPy arrays."""
    which = "maximum " if maxError else ""
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % (which, str(index), names[0], a[index], names[1], b[index])
