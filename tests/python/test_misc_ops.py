"""MXNet 1.9.1's remaining tensor operators (gamma, gammaln, cumsum, histogram,
khatri_rao, batch_take, choose_element_0index, fill_element_0index,
onehot_encode, all_finite, multi_all_finite, multi_sum_sq, reset_arrays,
amp_cast, amp_multicast): values computed with MXNet 1.9.1 and pasted as
constants, edge cases and errors the registry table cannot express."""
import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

INF, NAN = float("inf"), float("nan")

# -- gamma / gammaln: MXNet 1.9.1's values and gradients, poles included -------

_XS = [-3.0, -2.5, -1.5, -0.5, -0.0, 0.0, 1e-8, 0.5, 1.0, 2.5, 10.0, 35.5, 172.0, -170.5, -10.3, INF, -INF, NAN]
_MX = {
    ("gamma", "float32"): (
        [NAN, -0.9453086256980896, 2.363271713256836, -3.544908046722412, -INF, INF, 100000000.0,
         1.772453784942627, 1.0, 1.3293405771255493, 362880.03125, INF, INF, -0.0, -5.262358513391518e-07, INF,
         NAN, NAN],
        [NAN, -1.0428236722946167, 1.6617505550384521, -0.1293533891439438, -INF, INF, -1.0000000272564224e+16,
         -3.480232000350952, -0.5772156715393066, 0.9347348213195801, 817116.125, INF, INF, -0.0,
         -2.453522483847337e-06, INF, NAN, NAN]),
    ("gammaln", "float32"): (
        [INF, -0.056243713945150375, 0.8600470423698425, 1.2655121088027954, INF, INF, 18.42068099975586,
         0.5723649263381958, 0.0, 0.28468286991119385, 12.801827430725098, 90.35492706298828, 711.7147216796875,
         -707.9984741210938, -14.45751667022705, INF, INF, NAN],
        [INF, 1.1031568050384521, 0.7031567692756653, 0.03648991510272026, INF, INF, -100000000.0,
         -1.9635107517242432, -0.5772156715393066, 0.7031567692756653, 2.2517528533935547, 3.555382013320923,
         5.144584655761719, 5.141664981842041, 4.662400722503662, INF, INF, NAN]),
    ("gamma", "float64"): (
        [NAN, -0.9453087204829419, 2.363271801207355, -3.5449077018110318, -INF, INF, 99999999.42278434,
         1.772453850905516, 1.0, 1.329340388179137, 362880.0, 1.7403941995805613e+39, INF,
         -3.312739521538607e-308, -5.26236323953561e-07, INF, NAN, NAN],
        [NAN, -1.0428236721046975, 1.661750459778802, -0.12935388846084703, -INF, INF, -9999999999999996.0,
         -3.4802307575806073, -0.5772156649015329, 0.9347346336255761, 817115.9795205317, 6.187766221552322e+39,
         INF, -1.703299665350665e-307, -2.4535261038955377e-06, INF, NAN, NAN]),
    ("gammaln", "float64"): (
        [INF, -0.05624371649767407, 0.8600470153764809, 1.2655121234846454, INF, INF, 18.42068073818021,
         0.5723649429247001, 0.0, 0.2846828704729192, 12.80182748008147, 90.35493026581838, 711.71472580229,
         -707.9984331450788, -14.457515440024208, INF, INF, NAN],
        [1.7976931348623157e+308, 1.103156724897171, 0.7031567248971711, 0.03649005823050411,
         1.7976931348623157e+308, 1.7976931348623157e+308, -100000000.57721563, -1.963509941769495,
         -0.5772156649015329, 0.7031567248971711, 2.251752589066721, 3.5553820065842476, 5.144584522528479,
         5.1416649400782495, 4.66240354801516, INF, 1.7976931348623157e+308, NAN]),
    ("gamma", "float16"): (
        [NAN, -0.9453125, 2.36328125, -3.544921875, -INF, INF, INF, 1.7724609375, 1.0, 1.3291015625, INF, INF,
         INF, -0.0, -5.364418029785156e-07, INF, NAN, NAN],
        [NAN, -1.04296875, 1.662109375, -0.12939453125, -INF, INF, INF, -3.48046875, -0.5771484375,
         0.9345703125, INF, INF, INF, -0.0, -2.5033950805664062e-06, INF, NAN, NAN]),
    ("gammaln", "float16"): (
        [INF, -0.056243896484375, 0.85986328125, 1.265625, INF, INF, INF, 0.572265625, 0.0, 0.28466796875,
         12.8046875, 90.375, 711.5, -708.0, -14.4453125, INF, INF, NAN],
        [INF, 1.103515625, 0.703125, 0.0364990234375, INF, INF, INF, -1.9638671875, -0.5771484375, 0.703125,
         2.251953125, 3.5546875, 5.14453125, 5.140625, 4.7109375, INF, INF, NAN]),
}


@pytest.mark.parametrize("fn,dtype", sorted(_MX))
def test_gamma_family_matches_mxnet(fn, dtype):
    want_y, want_g = _MX[(fn, dtype)]
    x = mx.nd.array(_XS, dtype=dtype)
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, fn)(x)
    y.backward()
    assert y.dtype == np.dtype(dtype) and x.grad.dtype == np.dtype(dtype)
    rtol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(y.asnumpy().astype(np.float64), want_y, rtol=rtol, equal_nan=True)
    # MXNet's digamma is good to ~2e-6 relative; oxnet's to ~1e-15
    np.testing.assert_allclose(x.grad.asnumpy().astype(np.float64), want_g, rtol=max(rtol, 5e-6), equal_nan=True)
    # the signs of the zeros and infinities
    assert np.array_equal(np.signbit(y.asnumpy()), np.signbit(np.array(want_y)))


def test_gamma_integer_inputs():
    # computed in float64 and truncated, as MXNet does
    assert mx.nd.gamma(mx.nd.array([1, 2, 3, 5], dtype="int32")).asnumpy().tolist() == [1, 1, 2, 24]
    assert mx.nd.gammaln(mx.nd.array([1, 2, 3, 5, 7], dtype="uint8")).asnumpy().tolist() == [0, 0, 0, 3, 6]
    # factorials are exact
    assert mx.nd.gamma(mx.nd.array([19.0], dtype="float64")).asnumpy()[0] == 6402373705728000.0


# -- cumsum ------------------------------------------------------------------------

def test_cumsum_dtypes_like_mxnet():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    for dt in ("int32", "int8", "uint8", "int64", "float16"):
        y = mx.nd.cumsum(x.astype(dt))
        assert y.dtype == np.dtype(dt) and y.asnumpy().tolist() == [1, 3, 6, 10, 15, 21]
    y = mx.nd.cumsum(x.astype("bool"))
    assert y.dtype == np.int64 and y.asnumpy().tolist() == [1, 2, 3, 4, 5, 6]
    # each element is converted to dtype before it is added (MXNet: [1, 3])
    assert mx.nd.cumsum(mx.nd.array([1.7, 2.6]), dtype="int32").asnumpy().tolist() == [1, 3]
    # int8: 300.0 becomes 44 as in MXNet's C cast, and sums wrap
    assert mx.nd.cumsum(mx.nd.array([1.7, 2.6, -0.5, 300]), dtype="int8").asnumpy().tolist() == [1, 3, 3, 47]
    assert mx.nd.cumsum(mx.nd.array([100, 100, 100], dtype="int8")).asnumpy().tolist() == [100, -56, 44]
    # positional axis and dtype in MXNet's order
    y = mx.nd.cumsum(x, 1, "float64")
    assert y.dtype == np.float64 and y.asnumpy().tolist() == [[1, 3, 6], [4, 9, 15]]
    assert mx.nd.cumsum(x, axis=-2).asnumpy().tolist() == [[1, 2, 3], [5, 7, 9]]
    assert mx.nd.cumsum(mx.nd.zeros((0, 3)), axis=0).shape == (0, 3)
    assert mx.nd.cumsum(mx.nd.zeros((0, 3))).shape == (0,)
    assert mx.nd._np_cumsum(x, axis=0).asnumpy().tolist() == [[1, 2, 3], [5, 7, 9]]


def test_cumsum_errors():
    x = mx.nd.ones((2, 3))
    with pytest.raises(MXNetError, match=r"cumsum: axis 2 is out of range.*\(2, 3\)"):
        mx.nd.cumsum(x, axis=2)
    with pytest.raises(MXNetError, match="cumsum: argument 'dtype' must be one of"):
        mx.nd.cumsum(x, dtype="uint8")


def test_cumsum_gradient_like_mxnet():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.cumsum(x, axis=1, dtype="float64")
    y.backward(mx.nd.array([[1, 2, 3], [4, 5, 6]], dtype="float64"))
    assert x.grad.dtype == np.float32 and x.grad.asnumpy().tolist() == [[6, 5, 3], [15, 11, 6]]
    with mx.autograd.record():
        y = mx.nd.cumsum(x)
    y.backward(mx.nd.array([1, 2, 3, 4, 5, 6]))
    assert x.grad.asnumpy().tolist() == [[21, 20, 18], [15, 11, 6]]
    # integer arrays: the gradient is integer too (MXNet: [[6, 5, 4], [3, 2, 1]])
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]], dtype="int32")
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.cumsum(a)
    y.backward()
    assert a.grad.dtype == np.int32 and a.grad.asnumpy().tolist() == [[6, 5, 4], [3, 2, 1]]


def test_cumsum_second_order():
    x = mx.nd.array([1.0, 2.0, 3.0], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.cumsum(x)
        (g,) = mx.autograd.grad([(y * y).sum()], [x], create_graph=True)
        z = (g * x).sum()
    z.backward()
    # g_i = 2 * sum_{j >= i} y_j, z = sum_i x_i g_i: dz/dx = g + J^T x, computed numerically
    def zf(v):
        yv = np.cumsum(v)
        gv = 2 * np.cumsum(yv[::-1])[::-1]
        return (gv * v).sum()
    v = np.array([1.0, 2.0, 3.0])
    num = [(zf(v + e) - zf(v - e)) / 2e-6 for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-6)


# -- histogram -----------------------------------------------------------------

@pytest.mark.parametrize("data,dtype,bins,rng,counts,edges", [
    # values from MXNet 1.9.1: edges rounded to data's dtype, values binned by the rounded edges
    ([0.7, 0.3, 0.6, 0.9], "float32", 10, (0, 1), [0, 0, 0, 1, 0, 0, 1, 1, 0, 1],
     [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ([1, 2, 3, 9, 5, 7, 10, 0], "int32", 4, (0, 10), [2, 2, 1, 3], [0, 2, 5, 7, 10]),
    ([1, 2, 3, 4, 5, 6], "int32", 3, (0.5, 6.5), [1, 2, 3], [0, 2, 4, 6]),
    ([1, 2, 3, 4, 5, 6], "int32", 4, (1, 6), [1, 1, 1, 3], [1, 2, 3, 4, 6]),
    ([0.5, 1.5], "int32", 2, (0.4, 1.6), [0, 1], [0, 1, 1]),
    ([0.5, 1.0, 2.5, 3.0, 3.0, -1, 7, 4.0], "float32", 4, (2, 2), [0, 0, 0, 1], [1.5, 1.75, 2.0, 2.25, 2.5]),
    ([NAN, 0.5, INF], "float32", 2, (0, 1), [0, 1], [0.0, 0.5, 1.0]),
])
def test_histogram_uniform_like_mxnet(data, dtype, bins, rng, counts, edges):
    c, e = mx.nd.histogram(mx.nd.array(data, dtype=dtype), bins=bins, range=rng)
    assert c.dtype == np.int64 and e.dtype == np.dtype(dtype)
    assert c.asnumpy().tolist() == counts
    np.testing.assert_allclose(e.asnumpy(), np.array(edges, dtype=dtype))


def test_histogram_edges_and_numpy_path():
    d = mx.nd.array([0.5, 1.0, 2.5, 3.0, 3.0, -1, 7, 4.0])
    c, e = mx.nd.histogram(d, bins=mx.nd.array([0, 1, 2.5, 4]))
    assert c.asnumpy().tolist() == [1, 1, 4] and e.asnumpy().tolist() == [0, 1, 2.5, 4]
    # edges that do not increase: scanned from the start as MXNet does
    assert mx.nd.histogram(d, bins=mx.nd.array([4, 1, 0]))[0].asnumpy().tolist() == [0, 0]
    # no range: NumPy's result (with a warning), both float32, as in MXNet
    with pytest.warns(UserWarning, match="range is not specified"):
        c, e = mx.nd.histogram(d, bins=4)
    assert c.dtype == np.float32 and c.asnumpy().tolist() == [2, 2, 3, 1]
    assert e.asnumpy().tolist() == [-1, 1, 3, 5, 7]
    c, e = mx.nd.histogram(d, bins=0, range=(0, 4))
    assert c.shape == (0,) and np.isnan(e.asnumpy()).all() and e.shape == (1,)


def test_histogram_errors():
    d = mx.nd.array([1.0, 2.0])
    with pytest.raises(ValueError, match="bins argument should be either an integer or an NDArray"):
        mx.nd.histogram(d, bins=[0, 1, 2])
    with pytest.raises(MXNetError, match=r"_histogram: the first element of range \(3\)"):
        mx.nd.histogram(d, bins=3, range=(3, 1))
    with pytest.raises(MXNetError, match="_histogram: bins has dtype float64, expected data's dtype float32"):
        mx.nd.histogram(d, bins=mx.nd.array([0, 1, 2], dtype="float64"))
    with pytest.raises(MXNetError, match=r"_histogram: bins must be a non-empty 1-D array.*\(2, 2\)"):
        mx.nd.histogram(d, bins=mx.nd.array([[0, 1], [2, 3]]))
    with pytest.raises(MXNetError, match="_histogram: bin_cnt and range must be given together"):
        mx.nd._histogram(d, bin_cnt=3)
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        c, _ = mx.nd.histogram(x, bins=2, range=(0, 2))
    with pytest.raises(MXNetError, match="_histogram: operator has no gradient"):
        c.backward()


# -- khatri_rao ----------------------------------------------------------------

def test_khatri_rao_doc_example_and_errors():
    a = mx.nd.array([[1, -1], [2, -3]])
    b = mx.nd.array([[1, 4], [2, 5], [3, 6]])
    assert mx.nd.khatri_rao(a, b).asnumpy().tolist() == [
        [1, -4], [2, -5], [3, -6], [2, -12], [4, -15], [6, -18]]
    with pytest.raises(MXNetError, match=r"khatri_rao: input 1 has shape \(3, 3\) with 3 columns, expected 2"):
        mx.nd.khatri_rao(a, mx.nd.ones((3, 3)))
    with pytest.raises(MXNetError, match=r"khatri_rao: input 0 has shape \(2, 2, 2\), expected a matrix"):
        mx.nd.khatri_rao(mx.nd.ones((2, 2, 2)))
    with pytest.raises(MXNetError, match="khatri_rao: .*int32; this operator only supports floating point"):
        mx.nd.khatri_rao(a.astype("int32"), b.astype("int32"))
    with pytest.raises(MXNetError, match="khatri_rao: input 1 has dtype float32, expected float64"):
        mx.nd.khatri_rao(a.astype("float64"), b)
    with pytest.raises(MXNetError, match="khatri_rao: argument 'num_args' must be at least 1"):
        mx.nd.khatri_rao()


# -- legacy: batch_take, choose_element_0index, fill_element_0index, onehot_encode ----

def test_batch_take():
    x = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    # indices clipped to the row (MXNet: [1, 4, 6] and [1, 3, 5])
    assert mx.nd.batch_take(x, mx.nd.array([0, 1, 5], dtype="int32")).asnumpy().tolist() == [1, 4, 6]
    assert mx.nd.batch_take(x, mx.nd.array([0, -1, -3], dtype="int32")).asnumpy().tolist() == [1, 3, 5]
    y = mx.nd.batch_take(x, mx.nd.array([[0, 1, 1]], dtype="int32"))
    assert y.shape == (1, 3) and y.asnumpy().tolist() == [[1, 4, 6]]
    assert mx.nd.batch_take(x.astype("int32"), mx.nd.array([0, 1, 0], dtype="int32")).dtype == np.int32
    with pytest.raises(MXNetError, match="batch_take: indices has dtype float32, expected int32"):
        mx.nd.batch_take(x, mx.nd.array([0, 1, 0]))
    with pytest.raises(MXNetError, match=r"batch_take: indices shape \(2,\) has 2 elements, expected 3"):
        mx.nd.batch_take(x, mx.nd.array([0, 1], dtype="int32"))
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.batch_take(a, mx.nd.array([0, 1, 0], dtype="int32"))
    with pytest.raises(MXNetError, match="batch_take: operator has no gradient"):
        y.backward()


def test_choose_element_0index_is_pick():
    x = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    assert mx.nd.choose_element_0index(x, mx.nd.array([0, 1, 5])).asnumpy().tolist() == [1, 4, 6]
    assert mx.nd.choose_element_0index(x, mx.nd.array([0, 1]), axis=0).asnumpy().tolist() == [1, 4]
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.choose_element_0index(a, mx.nd.array([0, 1, 0]))
    y.backward()
    assert a.grad.asnumpy().tolist() == [[1, 0], [0, 1], [1, 0]]


def test_fill_element_0index():
    x = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    y = mx.nd.fill_element_0index(x, mx.nd.array([10.5, 20, 30]), mx.nd.array([1, 0, 1]))
    assert y.asnumpy().tolist() == [[1, 10.5], [20, 4], [5, 30]]
    assert x.asnumpy().tolist() == [[1, 2], [3, 4], [5, 6]]  # a copy
    # out-of-range indices leave the row; fractions truncate
    y = mx.nd.fill_element_0index(x, mx.nd.array([10, 20, 30]), mx.nd.array([1.7, 5, -1]))
    assert y.asnumpy().tolist() == [[1, 10], [3, 4], [5, 6]]
    with pytest.raises(MXNetError, match="fill_element_0index: .* must have the same number of rows"):
        mx.nd.fill_element_0index(x, mx.nd.array([10, 20]), mx.nd.array([1, 0]))
    with pytest.raises(MXNetError, match="fill_element_0index: expects a matrix lhs, 1-D mhs and 1-D rhs"):
        mx.nd.fill_element_0index(mx.nd.ones((2, 3, 4)), mx.nd.array([10, 20]), mx.nd.array([1, 0]))
    a = x.copy()
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.fill_element_0index(a, mx.nd.array([10, 20, 30]), mx.nd.array([1, 0, 1]))
    with pytest.raises(MXNetError, match="fill_element_0index: operator has no gradient"):
        y.backward()


def test_onehot_encode():
    out = mx.nd.ones((3, 4)) * 5
    r = mx.nd.onehot_encode(mx.nd.array([0, -1, 1.7]), out)
    assert r is out
    assert out.asnumpy().tolist() == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]]
    with pytest.raises(MXNetError, match="_onehot_encode: lhs has dtype int32, only float32 is supported"):
        mx.nd.onehot_encode(mx.nd.array([0, 2, 1], dtype="int32"), mx.nd.zeros((3, 4)))
    with pytest.raises(MXNetError, match=r"_onehot_encode: 2 indices for a matrix of 3 rows"):
        mx.nd.onehot_encode(mx.nd.array([0, 2]), mx.nd.zeros((3, 4)))
    with pytest.raises(MXNetError, match="_onehot_encode: expects 1-D indices and a matrix"):
        mx.nd.onehot_encode(mx.nd.array([[0, 2, 1]]), mx.nd.zeros((3, 4)))


# -- AMP helpers ----------------------------------------------------------------

def test_all_finite():
    assert mx.nd.all_finite(mx.nd.array([1, 2, 3])).asnumpy().tolist() == [1]
    y = mx.nd.all_finite(mx.nd.array([1, NAN], dtype="float16"))
    assert y.dtype == np.float32 and y.shape == (1,) and y.asnumpy().tolist() == [0]
    assert mx.nd.all_finite(mx.nd.zeros((0,))).asnumpy().tolist() == [1]
    # init_output=False keeps out's value unless a non-finite value is found
    out = mx.nd.array([5.0])
    mx.nd.all_finite(mx.nd.array([1, 2, 3]), init_output=False, out=out)
    assert out.asnumpy().tolist() == [5]
    mx.nd.all_finite(mx.nd.array([1, INF]), init_output=False, out=out)
    assert out.asnumpy().tolist() == [0]
    with pytest.raises(MXNetError, match="all_finite: input 0 has dtype int32; .*floating point"):
        mx.nd.all_finite(mx.nd.array([1, 2], dtype="int32"))


def test_multi_all_finite_and_sum_sq():
    a, b = mx.nd.array([1, 2]), mx.nd.array([3, INF])
    assert mx.nd.multi_all_finite(a, b, num_arrays=2).asnumpy().tolist() == [0]
    assert mx.nd.multi_all_finite(a, a.astype("float64"), num_arrays=2).asnumpy().tolist() == [1]
    with pytest.raises(MXNetError, match=r"multi_all_finite: expected 1 input\(s\)"):
        mx.nd.multi_all_finite(a, b)
    y = mx.nd.multi_sum_sq(a, mx.nd.array([[3], [4]]), num_arrays=2)
    assert y.dtype == np.float32 and y.asnumpy().tolist() == [5, 25]
    # float16 squares overflow as in MXNet
    y = mx.nd.multi_sum_sq(mx.nd.array([300, 300], dtype="float16"), mx.nd.array([3, 4], dtype="float16"),
                           num_arrays=2)
    assert y.dtype == np.float32 and y.asnumpy().tolist() == [INF, 25]
    assert np.isnan(mx.nd.multi_sum_sq(mx.nd.array([1, NAN]), num_arrays=1).asnumpy()).all()
    with pytest.raises(MXNetError, match="multi_sum_sq: required argument 'num_arrays' is missing"):
        mx.nd.multi_sum_sq(a)
    with pytest.raises(MXNetError, match="multi_sum_sq: array 1 has dtype float64, expected float32"):
        mx.nd.multi_sum_sq(a, a.astype("float64"), num_arrays=2)


def test_reset_arrays_in_order():
    x = mx.nd.array(np.arange(6).reshape(2, 3))
    a = x * 2
    before = a + 1  # pushed before the reset: sees the old values
    assert mx.nd.reset_arrays(a, num_arrays=1) == []
    after = a + 1
    assert before.asnumpy().tolist() == (np.arange(6).reshape(2, 3) * 2 + 1).tolist()
    assert after.asnumpy().tolist() == [[1, 1, 1], [1, 1, 1]]
    with pytest.raises(MXNetError, match="reset_arrays: required argument 'num_arrays' is missing"):
        mx.nd.reset_arrays(a)
    with pytest.raises(MXNetError, match=r"reset_arrays: expected 2 input\(s\)"):
        mx.nd.reset_arrays(a, num_arrays=2)


def test_amp_cast_rules_and_gradient():
    x = mx.nd.array([1.5, -2.25, 65504 * 2, 1e-8])
    y = mx.nd.amp_cast(x, "float16")
    assert y.dtype == np.float16 and y.asnumpy().tolist() == [1.5, -2.25, INF, 0.0]
    assert mx.nd.amp_cast(x.astype("float16"), dtype="float64").dtype == np.float64
    # inputs other than float16 / float32 pass unchanged
    assert mx.nd.amp_cast(x.astype("float64"), dtype="float16").dtype == np.float64
    y = mx.nd.amp_cast(x.astype("int32"), dtype="float16")
    assert y.dtype == np.int32 and y.asnumpy().tolist() == [1, -2, 131008, 0]
    a = mx.nd.array([1.5, 2.0])
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.amp_cast(a, dtype="float16")
    y.backward(mx.nd.array([0.1, 3.0], dtype="float16"))
    # MXNet: [0.09997559, 3.0] float32
    assert a.grad.dtype == np.float32
    np.testing.assert_array_equal(a.grad.asnumpy(), np.array([0.1, 3.0], np.float16).astype(np.float32))
    with pytest.raises(MXNetError, match="amp_cast: required argument 'dtype' is missing"):
        mx.nd.amp_cast(x)
    with pytest.raises(MXNetError, match="amp_cast: dtype 'bfloat16' is not supported"):
        mx.nd.amp_cast(x, dtype="bfloat16")
    with pytest.raises(MXNetError, match="amp_cast: argument 'dtype' must be one of"):
        mx.nd.amp_cast(x, dtype="bool")


def test_amp_multicast_rules_and_gradient():
    h = mx.nd.array([1.5, 2.0]).astype("float16")
    f = mx.nd.array([0.1, 3.0])
    d = mx.nd.array([0.1, 5.0], dtype="float64")
    i = mx.nd.array([1, 2], dtype="int32")

    def dtypes(*xs, **kw):
        return [y.dtype for y in mx.nd.amp_multicast(*xs, num_outputs=len(xs), **kw)]

    assert dtypes(h, f) == [np.float32, np.float32]
    assert dtypes(h, f, cast_narrow=True) == [np.float16, np.float16]
    assert dtypes(h, h) == [np.float16, np.float16]
    assert dtypes(f, f, cast_narrow=True) == [np.float32, np.float32]
    assert dtypes(h, d, i) == [np.float16, np.float64, np.int32]
    assert dtypes(f, i) == [np.float32, np.int32]
    y = mx.nd.amp_multicast(f, num_outputs=1)
    assert y.dtype == np.float32 and y.asnumpy().tolist() == f.asnumpy().tolist()
    a, b = h.copy(), f.copy()
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        ys = mx.nd.amp_multicast(a, b, num_outputs=2)
    mx.autograd.backward(ys, [mx.nd.array([1, 2]), mx.nd.array([3, 4])])
    assert a.grad.dtype == np.float16 and a.grad.asnumpy().tolist() == [1, 2]
    assert b.grad.dtype == np.float32 and b.grad.asnumpy().tolist() == [3, 4]
    with pytest.raises(MXNetError, match="amp_multicast: required argument 'num_outputs' is missing"):
        mx.nd.amp_multicast(h, f)
    with pytest.raises(MXNetError, match=r"amp_multicast: expected 3 input\(s\)"):
        mx.nd.amp_multicast(h, f, num_outputs=3)


def test_no_warning_leaks():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mx.nd.histogram(mx.nd.array([1.0, 2.0]), bins=2, range=(0, 2))


def test_finite_checks_without_out_start_from_one():
    # init_output=False without out: defined (1 unless a non-finite value is
    # found), whatever the pooled memory held before
    for _ in range(3):
        junk = mx.nd.full((1,), 7.0)
        del junk
        assert mx.nd.all_finite(mx.nd.array([1, 2]), init_output=False).asnumpy().tolist() == [1]
        assert mx.nd.all_finite(mx.nd.array([1, INF]), init_output=False).asnumpy().tolist() == [0]
        y = mx.nd.multi_all_finite(mx.nd.array([1]), mx.nd.array([2]), num_arrays=2, init_output=False)
        assert y.asnumpy().tolist() == [1]
    out = mx.nd.array([1.0])
    mx.nd.multi_all_finite(mx.nd.array([1]), mx.nd.array([NAN]), num_arrays=2, init_output=False, out=out)
    assert out.asnumpy().tolist() == [0]


def test_variadic_count_error_is_short():
    # a mistyped count must not build a name per expected input
    with pytest.raises(MXNetError, match=r"expected 1000000000000 input\(s\) \(data0 \.\. data999999999999\)"):
        mx.nd.reset_arrays(mx.nd.zeros((2,)), num_arrays=10**12)
