"""Element-wise operators against NumPy, with numerical-gradient checks of
every gradient rule (table-driven)."""
import numpy as np
import pytest

import oxnet as mx
from optest import check_grad, run

try:
    from math import erf as _erf

    np_erf = np.vectorize(_erf)
except ImportError:  # pragma: no cover
    np_erf = None

# name -> (numpy reference, input sampler)
pos = lambda s: np.random.uniform(0.5, 2.0, size=s)
unit = lambda s: np.random.uniform(-0.9, 0.9, size=s)
anyv = lambda s: np.random.uniform(-2, 2, size=s)
gt1 = lambda s: np.random.uniform(1.2, 3.0, size=s)
away0 = lambda s: np.random.choice([-1, 1], size=s) * np.random.uniform(0.3, 2, size=s)

UNARY = {
    "abs": (np.abs, away0),
    "negative": (np.negative, anyv),
    "exp": (np.exp, anyv),
    "log": (np.log, pos),
    "log2": (np.log2, pos),
    "log10": (np.log10, pos),
    "log1p": (np.log1p, pos),
    "expm1": (np.expm1, anyv),
    "sqrt": (np.sqrt, pos),
    "rsqrt": (lambda x: 1 / np.sqrt(x), pos),
    "cbrt": (np.cbrt, pos),
    "rcbrt": (lambda x: 1 / np.cbrt(x), pos),
    "square": (np.square, anyv),
    "reciprocal": (np.reciprocal, pos),
    "sin": (np.sin, anyv),
    "cos": (np.cos, anyv),
    "tan": (np.tan, unit),
    "arcsin": (np.arcsin, unit),
    "arccos": (np.arccos, unit),
    "arctan": (np.arctan, anyv),
    "sinh": (np.sinh, anyv),
    "cosh": (np.cosh, anyv),
    "tanh": (np.tanh, anyv),
    "arcsinh": (np.arcsinh, anyv),
    "arccosh": (np.arccosh, gt1),
    "arctanh": (np.arctanh, unit),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), anyv),
    "relu": (lambda x: np.maximum(x, 0), away0),
    "softsign": (lambda x: x / (1 + np.abs(x)), away0),
    "degrees": (np.degrees, anyv),
    "radians": (np.radians, anyv),
    "erf": (np_erf, anyv),
    "sign": (np.sign, away0),
    "floor": (np.floor, away0),
    "ceil": (np.ceil, away0),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), away0),
    "rint": (lambda x: np.where(x - np.floor(x) <= np.ceil(x) - x, np.floor(x), np.ceil(x)), away0),
    "fix": (np.fix, away0),
    "trunc": (np.trunc, away0),
    "logical_not": (lambda x: (x == 0).astype(x.dtype), lambda s: np.random.randint(0, 2, size=s).astype(float)),
    "_copy": (lambda x: x, anyv),
    "BlockGrad": (lambda x: x, anyv),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_forward(name, dtype):
    ref, sample = UNARY[name]
    x = sample((3, 5)).astype(dtype)
    got = run(name, [x]).asnumpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, ref(x), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradient(name):
    ref, sample = UNARY[name]
    if name == "BlockGrad":
        return
    check_grad(name, [sample((2, 3))])


def test_unary_float16_and_int():
    x = np.array([0.5, 1.5, 2.5], np.float16)
    np.testing.assert_allclose(run("exp", [x]).asnumpy(), np.exp(x), rtol=2e-3)
    i = np.array([1, 4, 9], np.int32)
    r = run("sqrt", [i]).asnumpy()
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, [1, 2, 3])


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "mod": lambda a, b: np.mod(a, b),
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "hypot": np.hypot,
    "equal": lambda a, b: (a == b).astype(a.dtype),
    "not_equal": lambda a, b: (a != b).astype(a.dtype),
    "greater": lambda a, b: (a > b).astype(a.dtype),
    "greater_equal": lambda a, b: (a >= b).astype(a.dtype),
    "lesser": lambda a, b: (a < b).astype(a.dtype),
    "lesser_equal": lambda a, b: (a <= b).astype(a.dtype),
    "logical_and": lambda a, b: np.logical_and(a, b).astype(a.dtype),
    "logical_or": lambda a, b: np.logical_or(a, b).astype(a.dtype),
    "logical_xor": lambda a, b: np.logical_xor(a, b).astype(a.dtype),
}
ELEMWISE_NAME = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul", "div": "elemwise_div"}
DIFFERENTIABLE = ["add", "sub", "mul", "div", "mod", "power", "maximum", "minimum", "hypot"]


def _pair(name, sa, sb):
    a = np.random.uniform(0.5, 2, size=sa)
    b = np.random.uniform(0.5, 2, size=sb)
    if name in ("equal", "not_equal", "greater_equal", "lesser_equal"):
        b = np.round(b)
        a = np.round(a)
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), (1,))])
def test_broadcast_binary_forward(name, shapes):
    a, b = _pair(name, *shapes)
    a, b = a.astype(np.float32), b.astype(np.float32)
    got = run("broadcast_" + name, [a, b]).asnumpy()
    np.testing.assert_allclose(got, BINARY[name](a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_elemwise_binary_forward(name):
    a, b = _pair(name, (4, 3), (4, 3))
    opname = ELEMWISE_NAME.get(name, "_" + name)
    got = run(opname, [a.astype(np.float64), b.astype(np.float64)]).asnumpy()
    np.testing.assert_allclose(got, BINARY[name](a, b), rtol=1e-12)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((2, 3), (3,))])
def test_broadcast_binary_gradient(name, shapes):
    a, b = _pair(name, *shapes)
    if name in ("maximum", "minimum"):
        b = b + 0.05  # keep away from ties
    check_grad("broadcast_" + name, [a, b])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_elemwise_binary_gradient(name):
    a, b = _pair(name, (2, 3), (2, 3))
    check_grad(ELEMWISE_NAME[name], [a, b])


def test_int_binary_semantics():
    a = np.array([7, -7, 5, 0], np.int32)
    b = np.array([2, 2, -3, 3], np.int32)
    np.testing.assert_array_equal(run("broadcast_mod", [a, b]).asnumpy(), np.mod(a, b))
    np.testing.assert_array_equal(run("broadcast_div", [a, b]).asnumpy(), np.array([3, -3, -1, 0], np.int32))
    np.testing.assert_array_equal(run("broadcast_add", [a, b]).asnumpy(), a + b)


SCALAR = {
    "_plus_scalar": lambda x, s: x + s,
    "_minus_scalar": lambda x, s: x - s,
    "_rminus_scalar": lambda x, s: s - x,
    "_mul_scalar": lambda x, s: x * s,
    "_div_scalar": lambda x, s: x / s,
    "_rdiv_scalar": lambda x, s: s / x,
    "_mod_scalar": lambda x, s: np.mod(x, s),
    "_rmod_scalar": lambda x, s: np.mod(s, x),
    "_power_scalar": lambda x, s: x**s,
    "_rpower_scalar": lambda x, s: s**x,
    "_maximum_scalar": np.maximum,
    "_minimum_scalar": np.minimum,
    "_hypot_scalar": np.hypot,
    "_equal_scalar": lambda x, s: (x == s).astype(x.dtype),
    "_not_equal_scalar": lambda x, s: (x != s).astype(x.dtype),
    "_greater_scalar": lambda x, s: (x > s).astype(x.dtype),
    "_greater_equal_scalar": lambda x, s: (x >= s).astype(x.dtype),
    "_lesser_scalar": lambda x, s: (x < s).astype(x.dtype),
    "_lesser_equal_scalar": lambda x, s: (x <= s).astype(x.dtype),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_ops(name):
    x = np.random.uniform(0.5, 2.5, size=(3, 4))
    s = 1.25
    got = run(name, [x], scalar=s).asnumpy()
    np.testing.assert_allclose(got, SCALAR[name](x, s), rtol=1e-12)
    if "equal" not in name and "greater" not in name and "lesser" not in name:
        check_grad(name, [x], {"scalar": s})


def test_operators_match_numpy():
    a_np = np.random.uniform(1, 2, size=(3, 4)).astype(np.float32)
    b_np = np.random.uniform(1, 2, size=(4,)).astype(np.float32)
    a, b = mx.nd.array(a_np), mx.nd.array(b_np)
    for f in [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
              lambda x, y: x ** y, lambda x, y: x % y, lambda x, y: 2 - x, lambda x, y: 3 / x,
              lambda x, y: 2 ** x, lambda x, y: -x, lambda x, y: abs(x - 1.5), lambda x, y: 5 % x]:
        np.testing.assert_allclose(f(a, b).asnumpy(), f(a_np, b_np), rtol=1e-5)
    for f in [lambda x, y: x > y, lambda x, y: x <= 1.5, lambda x, y: x == x, lambda x, y: x != y]:
        np.testing.assert_array_equal(f(a, b).asnumpy(), f(a_np, b_np).astype(np.float32))


def test_inplace_operators():
    a = mx.nd.ones((2, 3))
    ref = a
    a += 1
    a *= 3
    a -= mx.nd.ones((2, 3))
    a /= 5
    assert a is ref
    np.testing.assert_allclose(a.asnumpy(), np.ones((2, 3)))


def test_clip_where_addn_cast():
    x = np.random.uniform(-2, 2, size=(3, 4))
    np.testing.assert_allclose(run("clip", [x], a_min=-1, a_max=1).asnumpy(), np.clip(x, -1, 1))
    check_grad("clip", [x * 0.9 + 0.05], {"a_min": -1.0, "a_max": 1.0})
    c = (np.random.uniform(size=(3, 4)) > 0.5).astype(np.float64)
    y = np.random.uniform(size=(3, 4))
    got = mx.nd.where(mx.nd.array(c), mx.nd.array(x), mx.nd.array(y)).asnumpy()
    np.testing.assert_allclose(got, np.where(c, x, y).astype(np.float32))
    got = mx.nd.add_n(mx.nd.array(x), mx.nd.array(y), mx.nd.array(c)).asnumpy()
    np.testing.assert_allclose(got, (x + y + c).astype(np.float32), rtol=1e-6, atol=1e-6)
    check_grad("add_n", [x, y], {"num_args": 2})
    r = mx.nd.cast(mx.nd.array(x), dtype="float16")
    assert r.dtype == np.float16
    np.testing.assert_allclose(r.asnumpy(), x.astype(np.float16))
    with pytest.raises(ValueError, match="a_min"):
        mx.nd.clip(mx.nd.array(x), a_min=2, a_max=1)


def test_broadcast_to_like_axis():
    x = np.random.uniform(size=(1, 3))
    np.testing.assert_allclose(run("broadcast_to", [x], shape=(4, 3)).asnumpy(), np.broadcast_to(x, (4, 3)))
    np.testing.assert_allclose(run("broadcast_to", [x], shape=(2, 0)).asnumpy(), np.broadcast_to(x, (2, 3)))
    np.testing.assert_allclose(run("broadcast_axis", [x], axis=0, size=5).asnumpy(), np.broadcast_to(x, (5, 3)))
    check_grad("broadcast_to", [x], {"shape": (4, 3)})
    check_grad("broadcast_axis", [x], {"axis": 0, "size": 2})
    with pytest.raises(ValueError, match="broadcast"):
        mx.nd.broadcast_to(mx.nd.ones((2, 3)), shape=(4, 3))


def test_shape_error_names_op_and_shapes():
    with pytest.raises(ValueError) as e:
        mx.nd.ones((2, 3)) + mx.nd.ones((4, 5))
    assert "broadcast_add" in str(e.value) and "(2, 3)" in str(e.value) and "(4, 5)" in str(e.value)
    with pytest.raises(mx.MXNetError):
        mx.nd.elemwise_add(mx.nd.ones((2, 3)), mx.nd.ones((3, 2)))
    with pytest.raises(TypeError):
        mx.nd.elemwise_add(mx.nd.ones((2, 3)), mx.nd.ones((2, 3), dtype="int32"))
    with pytest.raises(ValueError, match="a_min"):
        mx.nd.clip(mx.nd.ones((2,)), a_max=1)


# mx.nd.<name>(lhs, rhs): NumPy reference for arrays and numbers alike
BINARY_FUNCS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "true_divide": np.true_divide,
    "modulo": np.mod,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "lesser": np.less,
    "lesser_equal": np.less_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("name", sorted(BINARY_FUNCS))
def test_binary_functions_arrays_and_numbers(name):
    ref = BINARY_FUNCS[name]
    f = getattr(mx.nd, name)
    rs = np.random.RandomState(3)
    # positive values away from each other's multiples keep %, ** and / tame;
    # a few equal pairs exercise the comparisons
    a = rs.uniform(0.5, 2.0, size=(2, 1, 4)).astype(np.float32)
    b = rs.uniform(0.5, 2.0, size=(3, 1)).astype(np.float32)
    a[0, 0, 0] = b[0, 0] = 1.5
    A, B = mx.nd.array(a), mx.nd.array(b)
    cases = [
        (f(A, B), ref(a, b)),  # broadcasting, array on both sides
        (f(A, 1.5), ref(a, np.float32(1.5))),  # array, number
        (f(1.5, A), ref(np.float32(1.5), a)),  # number, array
    ]
    for got, want in cases:
        assert isinstance(got, mx.nd.NDArray) and got.dtype == np.float32
        np.testing.assert_allclose(got.asnumpy(), want.astype(np.float32), rtol=1e-5, err_msg=name)
    # two numbers: a Python number, as in MXNet (comparisons give 1 or 0)
    assert f(3, 2) == ref(3, 2)
    with pytest.raises(TypeError, match=name):
        f(A, "2")
    with pytest.raises(TypeError, match=name):
        f([1, 2], A)


def test_binary_functions_record_gradients():
    x = mx.nd.array([0.5, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.maximum(x, 1.0) + mx.nd.subtract(10, x) * mx.nd.power(x, 2)
    y.backward()
    xn = x.asnumpy()
    want = (xn > 1.0) + (-(xn**2) + (10 - xn) * 2 * xn)
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)


def test_binary_functions_int_arrays_keep_dtype():
    a = mx.nd.array([1, 2, 3], dtype="int32")
    m = mx.nd.maximum(a, 2)
    assert m.dtype == np.int32 and m.asnumpy().tolist() == [2, 2, 3]
    assert mx.nd.equal(a, mx.nd.array([1, 0, 3], dtype="int32")).asnumpy().tolist() == [1, 0, 1]


def test_rint_ties_go_down_as_in_mxnet():
    # MXNet's rint: the nearer integer, the lower one at a tie (not NumPy's ties-to-even)
    for dtype in ("float32", "float64", "float16"):
        x = mx.nd.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -2.1, -1.9, 1.9, 2.1], dtype=dtype)
        assert mx.nd.rint(x).asnumpy().tolist() == [-3, -2, -1, 0, 1, 2, -2, -2, 2, 2], dtype


def test_erfinv_inverts_erf_and_edges():
    from test_registry_table import _erfinv

    x = np.array([-0.999999, -0.9, -0.3, 0.0, 1e-8, 0.5, 0.99, 0.9999999], np.float64)
    # near +-1 the inverse is ill-conditioned: an ulp of x moves erfinv by ~1e-10
    for dtype, tol in (("float64", 1e-9), ("float32", 2e-6)):
        got = mx.nd.erfinv(mx.nd.array(x, dtype=dtype)).asnumpy()
        np.testing.assert_allclose(got, _erfinv(x.astype(dtype)), rtol=tol, atol=tol, err_msg=dtype)
    edge = mx.nd.erfinv(mx.nd.array([1.0, -1.0, 1.5, np.nan])).asnumpy()
    assert edge[0] == np.inf and edge[1] == -np.inf and np.isnan(edge[2]) and np.isnan(edge[3])


def test_erf_of_exact_zero_returns():
    # erf's series never met its stop test at exactly 0: the kernel spun forever
    # (GELU of an exact 0 too)
    z = mx.nd.erf(mx.nd.array([0.0, -0.0, 0.25])).asnumpy()
    assert z[0] == 0 and z[1] == 0 and np.signbit(z[1]) and abs(z[2] - 0.2763263901682369) < 1e-7
    g = mx.nd.LeakyReLU(mx.nd.array([0.0, 1.0]), act_type="gelu").asnumpy()
    assert g[0] == 0 and abs(g[1] - 0.8413447) < 1e-6
