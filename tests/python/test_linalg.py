"""mx.nd.linalg and the _linalg_* operators: what the registry table cannot
express. Values marked "MXNet 1.9.1" were computed with real MXNet 1.9.1
and pasted here; the table (test_registry_table.py) checks every operator
against NumPy and by numerical gradient."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal

NAMES = ["gemm", "gemm2", "potrf", "potri", "trsm", "trmm", "syrk", "sumlogdiag", "extractdiag", "makediag",
         "extracttrian", "maketrian", "inverse", "det", "slogdet", "gelqf", "syevd"]

A3 = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, -0.2], [0.5, -0.2, 2.0]])
H3 = np.array([[1.0, -0.5, 0.25], [0.3, 0.7, -1.1], [0.9, 0.2, 0.4]])


def f64(x):
    return mx.nd.array(np.asarray(x, dtype=np.float64), dtype="float64")


def grad_of(fn, a, heads):
    x = f64(a)
    x.attach_grad()
    with mx.autograd.record():
        out = fn(x)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
    mx.autograd.backward(outs, [f64(h) for h in heads])
    return [o.asnumpy() for o in outs], x.grad.asnumpy()


def test_namespace_and_aliases():
    for n in NAMES:
        f = getattr(mx.nd.linalg, n)
        assert callable(f) and f.__name__ == n and f.__doc__
    for n in NAMES[:-1]:
        assert callable(getattr(mx.nd, "linalg_" + n))
    # As in MXNet 1.9.1: syevd has no top-level alias.
    with pytest.raises(AttributeError):
        mx.nd.linalg_syevd
    assert "linalg" in dir(mx.nd) and "linalg_gemm2" in dir(mx.nd)
    # MXNet 1.9.1's signatures.
    import inspect

    assert list(inspect.signature(mx.nd.linalg.gemm).parameters)[:8] == [
        "A", "B", "C", "transpose_a", "transpose_b", "alpha", "beta", "axis"]
    assert list(inspect.signature(mx.nd.linalg.trsm).parameters)[:6] == [
        "A", "B", "transpose", "rightside", "lower", "alpha"]
    assert list(inspect.signature(mx.nd.linalg.syevd).parameters)[0] == "A"
    out = mx.nd.linalg.gemm2(A=mx.nd.ones((2, 3)), B=mx.nd.ones((3, 4)), alpha=2.0)
    assert_almost_equal(out, np.full((2, 4), 6.0))


def test_positional_order_is_mxnets():
    a = mx.nd.array(np.arange(6).reshape(2, 3))
    b = mx.nd.array(np.arange(8).reshape(2, 4))
    # gemm2(A, B, transpose_a, transpose_b, alpha, axis)
    out = mx.nd.linalg.gemm2(a, b, True, False, 2.0)
    assert_almost_equal(out, 2.0 * a.asnumpy().T @ b.asnumpy())
    c = mx.nd.ones((3, 4))
    # gemm(A, B, C, transpose_a, transpose_b, alpha, beta, axis)
    out = mx.nd.linalg_gemm(a, b, c, True, False, 1.0, 3.0)
    assert_almost_equal(out, a.asnumpy().T @ b.asnumpy() + 3.0)
    # trsm(A, B, transpose, rightside, lower, alpha)
    t = mx.nd.array([[1.0, 0.0], [1.0, 1.0]])
    out = mx.nd.linalg.trsm(t, mx.nd.array([[2.0, 2.0, 2.0], [4.0, 4.0, 4.0]]), False, False, True, 0.5)
    assert_almost_equal(out, np.ones((2, 3)))
    # extracttrian(A, offset, lower)
    x = mx.nd.array(np.arange(16).reshape(4, 4))
    assert_almost_equal(mx.nd.linalg.extracttrian(x, 0, False), [0, 1, 5, 2, 6, 10, 3, 7, 11, 15])


def test_potrf_potri_lower_keyword():
    """MXNet accepts 'lower' for potrf / potri although its signatures do not list it."""
    a = mx.nd.array([[4.0, 1.0], [1.0, 4.25]])
    assert_almost_equal(mx.nd.linalg_potrf(a, lower=False), [[2.0, 0.5], [0.0, 2.0]])
    assert_almost_equal(mx.nd.linalg.potrf(a), [[2.0, 0.0], [0.5, 2.0]])
    # MXNet 1.9.1
    assert_almost_equal(mx.nd.linalg_potri(mx.nd.array([[2.0, 7.0], [0.5, 2.0]]), lower=False),
                        [[3.3125, -0.875], [-0.875, 0.25]])
    with pytest.raises(TypeError, match="lower"):
        mx.nd.linalg_potrf(a, lowr=False)


def test_mxnet_doc_examples():
    L = mx.nd.linalg
    A = mx.nd.array([[1.0, 1.0], [1.0, 1.0]])
    B = mx.nd.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    C = mx.nd.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    assert_almost_equal(L.gemm(A, B, C, transpose_b=True, alpha=2.0, beta=10.0), np.full((2, 3), 14.0))
    assert_almost_equal(L.gemm2(A, B, transpose_b=True, alpha=2.0), np.full((2, 3), 4.0))
    Ab = mx.nd.array([[[1.0, 1.0]], [[0.1, 0.1]]])
    assert_almost_equal(L.gemm(Ab, Ab, mx.nd.array([[[10.0]], [[0.01]]]), transpose_b=True, alpha=2.0, beta=10.0),
                        [[[104.0]], [[0.14]]])
    assert_almost_equal(L.potrf(mx.nd.array([[[4.0, 1.0], [1.0, 4.25]], [[16.0, 4.0], [4.0, 17.0]]])),
                        [[[2.0, 0], [0.5, 2.0]], [[4.0, 0], [1.0, 4.0]]])
    assert_almost_equal(L.potri(mx.nd.array([[2.0, 0], [0.5, 2.0]])), [[0.265625, -0.0625], [-0.0625, 0.25]])
    T = mx.nd.array([[1.0, 0], [1.0, 1.0]])
    assert_almost_equal(L.trmm(T, mx.nd.ones((2, 3)), alpha=2.0), [[2.0] * 3, [4.0] * 3])
    a = mx.nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert_almost_equal(L.syrk(a), [[14.0, 32.0], [32.0, 77.0]])
    assert_almost_equal(L.syrk(a, transpose=True), [[17.0, 22.0, 27.0], [22.0, 29.0, 36.0], [27.0, 36.0, 45.0]])
    assert_almost_equal(L.sumlogdiag(mx.nd.array([[[1.0, 1.0], [1.0, 7.0]], [[3.0, 0], [0, 17.0]]])),
                        [1.9459101, 3.9318256])
    assert L.sumlogdiag(mx.nd.array([[1.0, 1.0], [1.0, 7.0]])).shape == (1,)
    sq = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    assert_almost_equal(L.extractdiag(sq), [1.0, 4.0])
    assert_almost_equal(L.extractdiag(sq, 1), [2.0])
    assert_almost_equal(L.makediag(mx.nd.array([1.0, 2.0]), 1), [[0, 1.0, 0], [0, 0, 2.0], [0, 0, 0]])
    assert_almost_equal(L.extracttrian(sq), [1.0, 3.0, 4.0])
    assert_almost_equal(L.extracttrian(sq, lower=False), [1.0, 2.0, 4.0])
    assert_almost_equal(L.extracttrian(sq, -1), [3.0])
    v = mx.nd.array([1.0, 2.0, 3.0])
    assert_almost_equal(L.maketrian(v), [[1.0, 0.0], [2.0, 3.0]])
    assert_almost_equal(L.maketrian(v, lower=False), [[1.0, 2.0], [0.0, 3.0]])
    assert_almost_equal(L.maketrian(v, offset=-1), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 3.0, 0.0]])
    # MXNet 1.9.1: the upper triangle is filled column by column.
    assert_almost_equal(L.maketrian(mx.nd.arange(6), lower=False), [[0, 1, 3], [0, 2, 4], [0, 0, 5]])
    assert_almost_equal(L.inverse(mx.nd.array([[1.0, 4.0], [2.0, 3.0]])), [[-0.6, 0.8], [0.4, -0.2]])
    assert_almost_equal(L.det(mx.nd.array([[[1.0, 4.0], [2.0, 3.0]], [[2.0, 3.0], [1.0, 4.0]]])), [-5.0, 5.0])


def test_det_slogdet_singular_like_mxnet():
    L = mx.nd.linalg
    # MXNet 1.9.1, signs of zeros included.
    sign, logabs = L.slogdet(mx.nd.array([[[2.0, 3.0], [1.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]],
                                          [[1.0, 2.0], [4.0, 3.0]], [[2.0, 1.0], [4.0, 2.0]]]))
    s = sign.asnumpy()
    assert_almost_equal(s, [1.0, 0.0, -1.0, 0.0])
    assert np.signbit(s).tolist() == [False, True, True, False]
    assert_almost_equal(logabs, [1.609438, -np.inf, 1.609438, -np.inf])
    d = L.det(mx.nd.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [4.0, 2.0]]])).asnumpy()
    assert d.tolist() == [0.0, 0.0] and np.signbit(d).tolist() == [True, False]
    # No gradient through a singular matrix (zeros, as in MXNet).
    _, g = grad_of(L.det, [[1.0, 2.0], [2.0, 4.0]], [[1.0]])
    assert (g == 0).all()
    _, g = grad_of(lambda x: L.slogdet(x)[1], [[1.0, 2.0], [2.0, 4.0]], [[1.0]])
    assert (g == 0).all()
    # MXNet 1.9.1: only logabsdet carries a gradient.
    x = f64([[2.0, 1.0], [1.0, 2.0]])
    x.attach_grad()
    with mx.autograd.record():
        out = L.slogdet(x)
    mx.autograd.backward(out, [f64([5.0]), f64([1.0])])
    assert_almost_equal(x.grad, [[2 / 3, -1 / 3], [-1 / 3, 2 / 3]])


def test_gradients_match_mxnet():
    L = mx.nd.linalg
    # potrf / syevd: symmetric gradients (MXNet 1.9.1).
    outs, g = grad_of(L.potrf, A3, [H3])
    assert_almost_equal(outs[0], [[2.0, 0.0, 0.0], [0.5, 1.6583123951777, 0.0],
                                  [0.25, -0.19598237397554635, 1.3780750738225074]], rtol=1e-12, atol=1e-12)
    assert_almost_equal(g, [[0.22399675510333406, 0.010265352121635736, 0.18749525493005617],
                            [0.010265352121635735, 0.22021159493998294, 0.07745399314694823],
                            [0.18749525493005617, 0.07745399314694823, 0.1451299742656542]], rtol=1e-10, atol=1e-12)
    _, g = grad_of(lambda a: L.potrf(a, lower=False), A3, [H3])
    assert_almost_equal(g, [[0.2669162641953884, -0.12915827774046812, 0.12298644191782936],
                            [-0.1291582777404681, 0.1738884883639447, -0.31451075480414453],
                            [0.12298644191782936, -0.31451075480414453, 0.1451299742656542]], rtol=1e-10, atol=1e-12)
    outs, g = grad_of(L.syevd, A3, [H3, [0.5, -1.0, 2.0]])
    assert_almost_equal(outs[0], [[-0.35701920717682045, 0.40213512032730525, 0.8431041636157292],
                                  [-0.3733124124320824, 0.7659465678268953, -0.5234154162406162],
                                  [0.8562564618331198, 0.5016106061812715, 0.12333560449231275]], rtol=1e-9, atol=1e-10)
    assert_almost_equal(outs[1], [1.6928770621373783, 2.649284505646261, 4.657838432216361], rtol=1e-10)
    assert_almost_equal(g, [[1.6026579634527378, 0.9275806341513971, -0.09901629285654556],
                            [0.9275806341513971, -0.16149784099601766, 0.717830428751395],
                            [-0.09901629285654551, 0.717830428751395, 0.058839877543279816]], rtol=1e-8, atol=1e-9)
    outs, g = grad_of(L.gelqf, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [H3[:2], H3[:2, :2]])
    assert_almost_equal(outs[0], [[-0.2672612419124243, -0.5345224838248488, -0.8017837257372732],
                                  [0.8728715609439696, 0.21821789023599236, -0.43643578047198456]], rtol=1e-10)
    assert_almost_equal(outs[1], [[-3.7416573867739413, 0.0], [-8.55235974119758, 1.963961012123933]], rtol=1e-10)
    assert_almost_equal(g, [[-1.5277540961072211, -1.5843027415483057, 0.3182340641432964],
                            [0.344134191774036, 0.3657908346437712, -0.7327376923645867]], rtol=1e-9, atol=1e-10)


def test_syevd_conventions():
    L = mx.nd.linalg
    # MXNet 1.9.1: rows are eigenvectors, the largest entry of each positive.
    u, w = L.syevd(mx.nd.array([[1.0, 2.0], [2.0, 4.0]]))
    assert_almost_equal(u, [[0.89442719, -0.4472136], [0.4472136, 0.89442719]])
    assert_almost_equal(w, [0.0, 5.0], atol=1e-6)
    u, w = L.syevd(mx.nd.array([[2.0, 0.0], [0.0, 1.0]]))
    assert_almost_equal(u, [[0.0, 1.0], [1.0, 0.0]])
    u, w = L.syevd(mx.nd.array([[2.0, 0.0], [0.0, 2.0]]))
    assert_almost_equal(u, np.eye(2))
    # Only the lower triangle is read.
    u2, w2 = L.syevd(mx.nd.array([[1.0, 5.0], [2.0, 4.0]]))
    assert_almost_equal(w2, [0.0, 5.0], atol=1e-6)
    # A larger batch: U A U^T = diag(w), U orthonormal, w ascending.
    rng = np.random.RandomState(3)
    m = rng.randn(3, 12, 12)
    a = m + np.swapaxes(m, 1, 2)
    u, w = L.syevd(f64(a))
    u, w = u.asnumpy(), w.asnumpy()
    for k in range(3):
        assert_almost_equal(u[k] @ a[k] @ u[k].T, np.diag(w[k]), atol=1e-10)
        assert_almost_equal(u[k] @ u[k].T, np.eye(12), atol=1e-12)
        assert (np.diff(w[k]) >= 0).all()
        assert_almost_equal(w[k], np.linalg.eigvalsh(a[k]), rtol=1e-10, atol=1e-10)
    # Entries whose squares overflow float64.
    u, w = L.syevd(f64(a[0] * 1e200))
    assert_almost_equal(w, np.linalg.eigvalsh(a[0]) * 1e200, rtol=1e-10)
    # NaN input gives NaN, and returns (no endless sweeps).
    _, w = L.syevd(mx.nd.array([[1.0, 0.5], [0.5, np.nan]]))
    assert np.isnan(w.asnumpy()).any()


def test_larger_factorizations():
    rng = np.random.RandomState(5)
    m = rng.randn(2, 40, 40)
    spd = m @ np.swapaxes(m, 1, 2) + 40 * np.eye(40)
    L = mx.nd.linalg.potrf(f64(spd)).asnumpy()
    assert_almost_equal(L, np.linalg.cholesky(spd), rtol=1e-10, atol=1e-10)
    assert_almost_equal(mx.nd.linalg.potri(f64(L)), np.linalg.inv(spd), rtol=1e-8, atol=1e-12)
    assert_almost_equal(mx.nd.linalg.inverse(f64(m)), np.linalg.inv(m), rtol=1e-7, atol=1e-9)
    assert_almost_equal(mx.nd.linalg.det(f64(m[:, :10, :10])), np.linalg.det(m[:, :10, :10]), rtol=1e-10)
    q, lo = mx.nd.linalg.gelqf(f64(m[:, :20, :]))
    q, lo = q.asnumpy(), lo.asnumpy()
    assert_almost_equal(lo @ q, m[:, :20, :], atol=1e-10)
    assert_almost_equal(q @ np.swapaxes(q, 1, 2), np.broadcast_to(np.eye(20), (2, 20, 20)), atol=1e-12)
    assert (np.triu(lo, 1) == 0).all()
    # gemm on big float32 products (the AVX2 path) with alpha / beta.
    a = rng.randn(300, 260).astype(np.float32)
    b = rng.randn(260, 280).astype(np.float32)
    c = rng.randn(300, 280).astype(np.float32)
    out = mx.nd.linalg.gemm(mx.nd.array(a), mx.nd.array(b), mx.nd.array(c), alpha=0.5, beta=-2.0)
    assert_almost_equal(out, 0.5 * (a.astype(np.float64) @ b) - 2.0 * c, rtol=1e-4, atol=1e-3)


def test_float32_matches_float64():
    rng = np.random.RandomState(11)
    m = rng.uniform(-1, 1, (2, 4, 4))
    spd = m @ np.swapaxes(m, 1, 2) + np.eye(4)
    tri = np.tril(m) + 2 * np.eye(4)
    cases = [("potrf", [spd], {}), ("potri", [tri], {}), ("trsm", [tri, m], {"rightside": True}),
             ("trmm", [tri, m], {"transpose": True}), ("syrk", [m], {}), ("sumlogdiag", [spd], {}),
             ("inverse", [spd], {}), ("det", [m], {}), ("slogdet", [m], {}), ("gelqf", [m[:, :3]], {}),
             ("syevd", [spd], {}), ("gemm2", [m, m], {"transpose_b": True}), ("extracttrian", [m], {}),
             ("maketrian", [m[:, 0, :3]], {}), ("extractdiag", [m], {}), ("makediag", [m[:, 0]], {})]
    for name, ins, params in cases:
        f = getattr(mx.nd.linalg, name)
        o64 = f(*[f64(x) for x in ins], **params)
        o32 = f(*[mx.nd.array(x, dtype="float32") for x in ins], **params)
        o64 = o64 if isinstance(o64, list) else [o64]
        o32 = o32 if isinstance(o32, list) else [o32]
        for x, y in zip(o64, o32):
            assert y.dtype == np.float32 and x.dtype == np.float64, name
            assert_almost_equal(y, x.asnumpy().astype(np.float32), rtol=1e-4, atol=1e-5, names=(name, "float64"))


def test_zero_sized_batches():
    assert mx.nd.linalg.inverse(mx.nd.ones((0, 2, 2))).shape == (0, 2, 2)
    assert mx.nd.linalg.det(mx.nd.ones((0, 3, 3))).shape == (0,)
    assert mx.nd.linalg.gemm2(mx.nd.ones((0, 2, 3)), mx.nd.ones((0, 3, 4))).shape == (0, 2, 4)
    u, w = mx.nd.linalg.syevd(mx.nd.ones((0, 3, 3)))
    assert u.shape == (0, 3, 3) and w.shape == (0, 3)


def _err(fn, exc, *texts):
    with pytest.raises(exc) as e:
        r = fn()
        for x in r if isinstance(r, list) else [r]:
            x.asnumpy()
    for t in texts:
        assert t in str(e.value), str(e.value)


def test_shape_and_dtype_errors():
    L = mx.nd.linalg
    _err(lambda: L.potrf(mx.nd.ones((2, 3))), ValueError, "_linalg_potrf", "input A", "(2, 3)", "square")
    _err(lambda: L.det(mx.nd.ones((3,))), ValueError, "_linalg_det", "(3,)")
    _err(lambda: L.gemm2(mx.nd.ones((2, 3)), mx.nd.ones((4, 5))), ValueError,
         "_linalg_gemm2", "(2, 3)", "(4, 5)", "3 vs 4")
    _err(lambda: L.gemm2(mx.nd.ones((2, 2, 3)), mx.nd.ones((3, 3, 5))), ValueError, "(2, 2, 3)", "(3, 3, 5)")
    _err(lambda: L.gemm2(mx.nd.ones((2, 3, 4)), mx.nd.ones((2, 3, 4)), axis=2), ValueError,
         "_linalg_gemm2", "row axis 2")
    _err(lambda: L.gemm(mx.nd.ones((2, 3)), mx.nd.ones((3, 5)), mx.nd.ones((2, 4))), ValueError,
         "_linalg_gemm", "input C", "(2, 4)", "(2, 5)")
    _err(lambda: L.trsm(mx.nd.ones((2, 2)), mx.nd.ones((3, 2))), ValueError, "_linalg_trsm", "(3, 2)")
    _err(lambda: L.trmm(mx.nd.ones((2, 2, 2)), mx.nd.ones((3, 2, 2))), ValueError, "_linalg_trmm", "(3, 2, 2)")
    _err(lambda: L.gelqf(mx.nd.ones((3, 2))), ValueError, "_linalg_gelqf", "(3, 2)")
    _err(lambda: L.extractdiag(mx.nd.ones((3, 3)), offset=3), ValueError, "_linalg_extractdiag", "offset 3")
    _err(lambda: L.extracttrian(mx.nd.ones((3, 3)), offset=-3), ValueError, "_linalg_extracttrian", "offset -3")
    _err(lambda: L.maketrian(mx.nd.ones((4,))), ValueError, "_linalg_maketrian", "(4,)", "triangular number")
    for dt in ("float16", "int32"):
        _err(lambda: L.potrf(mx.nd.ones((2, 2), dtype=dt)), TypeError, "_linalg_potrf", dt, "float32")
    _err(lambda: L.gemm2(mx.nd.ones((2, 2)), mx.nd.ones((2, 2), dtype="float64")), TypeError,
         "_linalg_gemm2", "float64", "float32")
    _err(lambda: L.potrf(mx.nd.ones((2, 2)), lower="maybe"), ValueError, "lower")


def test_numerical_failures_raise_at_wait():
    L = mx.nd.linalg
    _err(lambda: L.potrf(mx.nd.array([[[4.0, 0], [0, 1]], [[1.0, 2.0], [2.0, 1.0]]])), ValueError,
         "_linalg_potrf", "matrix 1", "not positive definite")
    _err(lambda: L.potrf(mx.nd.array([[np.nan, 0], [0, 1.0]])), ValueError, "not positive definite")
    _err(lambda: L.inverse(mx.nd.array([[1.0, 2.0], [2.0, 4.0]])), ValueError, "_linalg_inverse", "singular")
    _err(lambda: L.potri(mx.nd.array([[0.0, 0.0], [0.0, 1.0]])), ValueError, "_linalg_potri", "diagonal")
    # The engine keeps working afterwards.
    assert_almost_equal(L.potrf(mx.nd.array([[4.0, 0], [0, 1.0]])), [[2.0, 0], [0, 1.0]])
    # trsm divides by a zero diagonal like MXNet (no error): inf.
    out = L.trsm(mx.nd.array([[0.0, 0.0], [1.0, 1.0]]), mx.nd.ones((2, 2))).asnumpy()
    assert np.isinf(out).all()


def test_syevd_gradient_with_equal_eigenvalues_like_mxnet():
    """MXNet 1.9.1 takes an eigengap below eps (1e-30 float32, 1e-100 float64)
    as eps: huge but finite gradients, no NaN."""
    for dt, big in (("float32", 1e30), ("float64", 1e100)):
        a = mx.nd.array(np.eye(3), dtype=dt)
        a.attach_grad()
        with mx.autograd.record():
            u, w = mx.nd.linalg.syevd(a)
            s = (u * mx.nd.array(np.arange(9).reshape(3, 3), dtype=dt)).sum() + w.sum()
        s.backward()
        assert_almost_equal(a.grad, np.array([[1.0, big, 2 * big], [big, 1.0, big], [2 * big, big, 1.0]]),
                            rtol=1e-6)


def test_large_batches_run_in_parallel_with_the_same_results():
    rng = np.random.RandomState(21)
    m = rng.randn(5000, 3, 3)
    spd = m @ np.swapaxes(m, 1, 2) + np.eye(3)
    assert_almost_equal(mx.nd.linalg.potrf(f64(spd)), np.linalg.cholesky(spd), rtol=1e-10, atol=1e-12)
    sign, logabs = np.linalg.slogdet(m)
    s, la = mx.nd.linalg.slogdet(f64(m))
    assert_almost_equal(s, sign)
    assert_almost_equal(la, logabs, rtol=1e-10, atol=1e-12)
    # The first failing matrix of the batch is the one reported.
    bad = spd.copy()
    bad[1234] = -np.eye(3)
    bad[4321] = -np.eye(3)
    _err(lambda: mx.nd.linalg.potrf(f64(bad)), ValueError, "matrix 1234 of the batch")


def test_outputs_too_large_raise():
    _err(lambda: mx.nd.linalg.makediag(mx.nd.ones((2,)), offset=10**12), ValueError, "_linalg_makediag", "too large")
    _err(lambda: mx.nd.linalg.maketrian(mx.nd.ones((3,)), offset=-2**62), ValueError, "_linalg_maketrian", "too large")
    _err(lambda: mx.nd.linalg.gemm2(mx.nd.zeros((2**40, 0)), mx.nd.zeros((0, 2**40))), ValueError, "too large")
    _err(lambda: mx.nd.linalg.syrk(mx.nd.zeros((2**40, 0))), ValueError, "_linalg_syrk", "too large")
