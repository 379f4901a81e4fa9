"""mx.test_utils: check_numeric_gradient and check_consistency on callables
(imperative "symbols" run under autograd) and on mx.sym Symbols, and
check_symbolic_forward / check_symbolic_backward (behaviour checked side by
side with MXNet 1.9.1's test_utils)."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import (assert_almost_equal, check_consistency, check_numeric_gradient,
                              check_symbolic_backward, check_symbolic_forward, numeric_grad, simple_forward)


def test_numeric_gradient_list_and_dict():
    x = np.random.uniform(-1, 1, (3, 4))
    w = np.random.uniform(-1, 1, (5, 4))
    check_numeric_gradient(lambda data, weight: mx.nd.FullyConnected(data, weight, num_hidden=5, no_bias=True),
                           [x, w])
    check_numeric_gradient(lambda data, weight: mx.nd.dot(data, weight, transpose_b=True),
                           {"data": x, "weight": w}, dtype=np.float64)


def test_numeric_gradient_several_outputs_and_grad_nodes():
    x = np.random.uniform(0.5, 1.5, (2, 6))
    check_numeric_gradient(lambda a: mx.nd.split(mx.nd.log(a), num_outputs=2, axis=1), [x], dtype=np.float64)
    # Only b is checked ('add' keeps the starting buffer and adds to it); a's 'null' buffer stays as it was.
    a, b = np.random.uniform(-1, 1, (2, 3)), np.random.uniform(-1, 1, (2, 3))
    check_numeric_gradient(lambda a, b: a * b, [a, b], grad_nodes={"a": "null", "b": "add"}, dtype=np.float64)
    check_numeric_gradient(lambda a, b: a * b, [a, b], grad_nodes=["b"])


class _WrongSquare(mx.autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x * x

    def backward(self, dy):
        (x,) = self.saved_tensors
        return dy * x * 3  # the true gradient is 2 * x


class _RightSquare(_WrongSquare):
    def backward(self, dy):
        (x,) = self.saved_tensors
        return dy * x * 2


def test_numeric_gradient_detects_wrong_gradient():
    x = np.random.uniform(0.5, 1.5, (2, 3))
    check_numeric_gradient(lambda x: _RightSquare()(x), [x], dtype=np.float64)
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        check_numeric_gradient(lambda x: _WrongSquare()(x), [x], dtype=np.float64)


def test_numeric_gradient_aux_states_not_differentiated():
    x = np.random.uniform(-1, 1, (2, 3))
    mean = np.random.uniform(-1, 1, (3,))
    check_numeric_gradient(lambda x, mean: mx.nd.broadcast_sub(x, mean.reshape((1, 3))) * 2, [x],
                           aux_states=[mean], dtype=np.float64)


def test_numeric_gradient_rejects_symbols_and_bad_args():
    with pytest.raises(TypeError, match="must be an mx.sym.Symbol or a Python callable"):
        check_numeric_gradient("not a symbol", [np.ones((2,))])
    with pytest.raises(ValueError, match="grad_nodes"):
        check_numeric_gradient(lambda a: a * 2, [np.ones((2,))], grad_nodes=["b"])
    with pytest.raises(ValueError, match="too small"):
        check_numeric_gradient(lambda a: a * 2, [np.ones((2,))], numeric_eps=1e-7)


def test_consistency_across_dtypes():
    def fc(data, weight):
        return mx.nd.FullyConnected(data, weight, num_hidden=4, no_bias=True)

    ctx_list = [{"ctx": mx.cpu(0), "data": (3, 5), "weight": (4, 5),
                 "type_dict": {"data": t, "weight": t}} for t in (np.float64, np.float32, np.float16)]
    x, w = np.random.normal(size=(3, 5)), np.random.normal(size=(4, 5))
    gt = check_consistency(fc, ctx_list, arg_params={"data": x, "weight": w})
    assert set(gt) == {"output0", "data", "weight"}
    assert gt["output0"].dtype == np.float64
    out = x @ w.T
    assert_almost_equal(gt["output0"], out)
    # The head gradient is the first entry's output cast to the least precise dtype.
    head = out.astype(np.float16).astype(np.float64)
    assert_almost_equal(gt["data"], head @ w)
    assert_almost_equal(gt["weight"], head.T @ x)
    check_consistency(fc, ctx_list[:2], grad_req="null", use_uniform=True)


def test_consistency_detects_difference():
    ctx_list = [{"ctx": mx.cpu(0), "x": (4,), "type_dict": {"x": t}} for t in (np.float64, np.float32)]
    # A "kernel" that is off by 1% in float32 only.
    def f(x):
        return x * (1.01 if x.dtype == np.float32 else 1.0)

    with pytest.raises(AssertionError, match="configuration 1 vs 0 at output0"):
        check_consistency(f, ctx_list, arg_params={"x": np.array([1.0, 2.0, 3.0, 4.0])})
    check_consistency(f, ctx_list, arg_params={"x": np.array([1.0, 2.0, 3.0, 4.0])}, raise_on_err=False)
    with pytest.raises(TypeError, match="must be an mx.sym.Symbol or a Python callable"):
        check_consistency(object(), ctx_list)


# ---------------------------------------------------------------- symbols
def test_symbolic_forward_list_dict_and_mismatch():
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    d = mx.sym.dot(lhs, rhs, name="d")
    m1, m2 = np.array([[1., 2], [3, 4]]), np.array([[5., 6], [7, 8]])
    outs = check_symbolic_forward(d, [m1, m2], [np.array([[19, 22], [43, 50]])])
    assert outs[0].dtype == np.float32
    check_symbolic_forward(d, {"rhs": m2, "lhs": m1}, {"d_output": m1 @ m2})
    with pytest.raises(AssertionError, match="EXPECTED_d_output"):
        check_symbolic_forward(d, [m1, m2], [np.array([[19, 22], [43, 51]])])
    with pytest.raises(ValueError, match="do not match"):
        check_symbolic_forward(d, {"lhs": m1}, [m1])
    with pytest.raises(TypeError, match="must be an mx.sym.Symbol"):
        check_symbolic_forward(lambda a: a, [m1], [m1])
    # 'asnumpy' keeps the NumPy dtypes
    assert check_symbolic_forward(lhs * 2, [m1], [m1 * 2], dtype="asnumpy")[0].dtype == np.float64


def test_symbolic_forward_aux_states_and_several_outputs():
    x = np.random.uniform(-1, 1, (4, 3))
    bn = mx.sym.BatchNorm(mx.sym.var("x"), fix_gamma=False, eps=1e-5, name="bn")
    mean, var = np.array([0.1, -0.2, 0.3]), np.array([1.5, 0.5, 2.0])
    gamma, beta = np.array([1.0, 2.0, 0.5]), np.array([0.0, 1.0, -1.0])
    expect = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
    check_symbolic_forward(bn, [x, gamma, beta], [expect], aux_states=[mean, var], rtol=1e-4, atol=1e-5)
    check_symbolic_forward(bn, [x, gamma, beta], [expect], aux_states={"bn_moving_var": var, "bn_moving_mean": mean},
                           rtol=1e-4, atol=1e-5)
    parts = mx.sym.split(mx.sym.var("x"), num_outputs=3, axis=1)
    check_symbolic_forward(parts, [x], [x[:, :1], x[:, 1:2], x[:, 2:]])
    with pytest.raises(ValueError, match="4 expected values for 3 outputs"):
        check_symbolic_forward(parts, [x], [x] * 4)


def test_symbolic_backward_grad_reqs():
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    y = (lhs + rhs) * lhs
    a, b = np.random.uniform(-1, 1, (2, 3)), np.random.uniform(-1, 1, (2, 3))
    og = np.random.uniform(-1, 1, (2, 3))
    ga, gb = og * (2 * a + b), og * a
    grads = check_symbolic_backward(y, [a, b], [og], [ga, gb])
    assert sorted(grads) == ["lhs", "rhs"]
    assert_almost_equal(grads["rhs"], gb)
    check_symbolic_backward(y, {"lhs": a, "rhs": b}, {y.list_outputs()[0]: og}, {"lhs": ga, "rhs": gb},
                            grad_req={"lhs": "add", "rhs": "null"}, dtype=np.float64)
    check_symbolic_backward(y, [a, b], [og], [ga, gb], grad_req=["write", "add"])
    with pytest.raises(AssertionError, match="EXPECTED_lhs"):
        check_symbolic_backward(y, [a, b], [og], [ga + 0.1, gb], grad_req="add")
    # no out_grads: ones (a loss output)
    check_symbolic_backward(mx.sym.make_loss(y), [a, b], None, [2 * a + b, a])
    with pytest.raises(ValueError, match="not arguments"):
        check_symbolic_backward(y, [a, b], [og], {"nope": ga})


def test_symbolic_numeric_gradient():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    x, w, bias = np.random.uniform(-1, 1, (2, 4)), np.random.uniform(-1, 1, (3, 4)), np.random.uniform(-1, 1, (3,))
    check_numeric_gradient(fc, [x, w, bias])
    check_numeric_gradient(fc, {"data": x, "fc_weight": w, "fc_bias": bias}, grad_nodes={"data": "add", "fc_weight": "null"},
                           dtype=np.float64)
    check_numeric_gradient(fc, [x, w, bias], grad_nodes=["fc_bias"])
    # auxiliary states are reset before every finite-difference forward
    bn = mx.sym.BatchNorm(data, fix_gamma=False, name="bn")
    xb = np.random.uniform(-1, 1, (4, 3, 2))
    check_numeric_gradient(bn, [xb, np.random.uniform(0.5, 1, 3), np.zeros(3)], aux_states=[np.zeros(3), np.ones(3)],
                           dtype=np.float64)
    # a wrong gradient is caught: BlockGrad hides half of d(x*x)/dx
    with pytest.raises(AssertionError, match="NUMERICAL_data"):
        check_numeric_gradient(mx.sym.BlockGrad(data) * data, [x])
    with pytest.raises(ValueError, match="one output"):
        check_numeric_gradient(mx.sym.Group([fc, fc]), [x, w, bias])
    with pytest.raises(ValueError, match="grad_nodes"):
        check_numeric_gradient(fc, [x, w, bias], grad_nodes=["weight"])


def test_numeric_grad_on_an_executor():
    x = mx.sym.var("x")
    exe = (x * x).bind(mx.cpu(), {"x": mx.nd.zeros((3,), dtype="float64")})
    v = np.array([1.0, -2.0, 0.5])
    g = numeric_grad(exe, {"x": v.copy()}, eps=1e-6, dtype=np.float64)
    assert_almost_equal(g["x"], 2 * v, rtol=1e-6, atol=1e-6)  # the sum's gradient
    assert_almost_equal(exe.arg_dict["x"], v)  # left at the location
    assert_almost_equal(simple_forward(x * 2 + 1, x=v), 2 * v + 1)


def test_symbolic_consistency():
    conv = mx.sym.Convolution(num_filter=3, kernel=(3, 3), name="conv")
    ctx_list = [{"ctx": mx.cpu(0), "conv_data": (2, 2, 6, 6), "type_dict": {"conv_data": t}}
                for t in (np.float64, np.float32, np.float16)]
    params = {}
    gt = check_consistency(conv, ctx_list, arg_params=params)
    assert sorted(gt) == ["conv_bias", "conv_data", "conv_output", "conv_weight"]
    assert gt["conv_output"].dtype == np.float64
    assert sorted(params) == ["conv_bias", "conv_data", "conv_weight"]  # filled in, as MXNet does
    cat = mx.sym.Concat(name="concat", num_args=2)
    cl = [{"ctx": mx.cpu(0), "concat_arg0": (2, 3), "concat_arg1": (2, 3),
           "type_dict": {"concat_arg0": t, "concat_arg1": t}} for t in (np.float64, np.float32)]
    assert sorted(check_consistency(cat, cl, grad_req="null")) == ["concat_output"]
    check_consistency([cat, cat], cl, grad_req={"concat_arg0": "write"})
    bn = mx.sym.BatchNorm(name="bn")
    check_consistency(bn, [{"ctx": mx.cpu(0), "bn_data": (2, 3, 4), "type_dict": {"bn_data": t}}
                           for t in (np.float32, np.float64)])
    wrong = {"concat_output": mx.nd.zeros((2, 6))}
    with pytest.raises(AssertionError, match="Predict Err: ctx 1 vs ctx 0 at concat_output"):
        check_consistency(cat, cl, ground_truth=wrong, grad_req="null")
    check_consistency(cat, cl, ground_truth=wrong, grad_req="null", raise_on_err=False)


def test_assert_almost_equal_broadcasts_as_mxnet():
    # MXNet 1.9.1 compares with np.allclose: shapes need only broadcast (np.dot of vectors is () vs (1,))
    assert_almost_equal(np.float32(2.0), mx.nd.array([2.0]))
    with pytest.raises(AssertionError, match="shape mismatch"):
        assert_almost_equal(np.ones(3), np.ones(2))
    with pytest.raises(AssertionError, match="shape mismatch"):
        assert_almost_equal(np.ones(()), np.ones(1), use_broadcast=False)
    with pytest.raises(AssertionError, match="worst at"):
        assert_almost_equal(np.ones((2, 1)), np.array([1.0, 1.5]))


def test_numpy_symbol_class_is_absent_but_checkable():
    # MXNet's own test_utils asks isinstance(sym, mxnet.symbol.numpy._Symbol) in check_numeric_gradient
    from oxnet.symbol.numpy import _Symbol

    assert not isinstance(mx.sym.var("x"), _Symbol)
    with pytest.raises(mx.base.NotBuiltError, match="not built in oxnet"):
        _Symbol(None)
