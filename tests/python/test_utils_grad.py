"""mx.test_utils.check_numeric_gradient and check_consistency (callables
standing in for symbols until oxnet has a symbolic API)."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal, check_consistency, check_numeric_gradient


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
    with pytest.raises(TypeError, match="Symbols are not supported yet"):
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
    with pytest.raises(TypeError, match="Symbols are not supported yet"):
        check_consistency(object(), ctx_list)
