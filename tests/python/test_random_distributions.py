"""MXNet 1.9.1's distributions: the Python namespaces and their dispatch,
shapes and dtypes, errors, and densities against values computed with real
MXNet 1.9.1 (pasted below as constants). Moments of the samplers are checked
in test_registry_table.py."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal

A = mx.nd.array

SAMPLERS = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial", "negative_binomial",
            "generalized_negative_binomial", "shuffle", "randint"]
LIKE = ["uniform_like", "normal_like", "exponential_like", "gamma_like", "poisson_like", "negative_binomial_like",
        "generalized_negative_binomial_like"]


def test_namespaces():
    for n in SAMPLERS:
        assert getattr(mx.random, n) is getattr(mx.nd.random, n), n
    for n in LIKE:
        assert callable(getattr(mx.nd.random, n)), n
    for d in ["uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
              "generalized_negative_binomial", "multinomial"]:
        assert callable(getattr(mx.nd, "sample_" + d))
    for d in ["exponential", "gamma", "poisson", "negative_binomial", "generalized_negative_binomial"]:
        assert callable(getattr(mx.nd, "random_" + d))
    for d in ["uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
              "generalized_negative_binomial", "dirichlet"]:
        assert callable(getattr(mx.nd, "random_pdf_" + d))


def test_ndarray_parameters_dispatch_to_sample_ops():
    low, high = A([0, 10]), A([1, 11])
    u = mx.nd.random.uniform(low, high, shape=(3, 4))
    assert u.shape == (2, 3, 4) and u.dtype == np.float32
    v = u.asnumpy()
    assert (v[0] >= 0).all() and (v[0] < 1).all() and (v[1] >= 10).all() and (v[1] < 11).all()
    # no shape: one draw per distribution; float64 parameters still give float32 (MXNet)
    n = mx.nd.random.normal(A([0, 1], dtype="float64"), A([1, 2], dtype="float64"))
    assert n.shape == (2,) and n.dtype == np.float32
    assert mx.nd.random.gamma(A([1.0]), A([1.0]), shape=2, dtype="float64").dtype == np.float64
    assert mx.nd.random.randn(2, 3, loc=A([1.0]), scale=A([2.0])).shape == (1, 2, 3)
    assert mx.nd.random.poisson(A([[1.0, 2.0]]), shape=5).shape == (1, 2, 5)
    assert mx.nd.random.negative_binomial(A([1.0]), A([0.5])).shape == (1,)
    assert mx.nd.random.generalized_negative_binomial(A([1.0]), A([0.5]), shape=(2,)).shape == (1, 2)
    # exponential takes the scale (1 / rate) in Python, as in MXNet
    mx.random.seed(3)
    e = mx.nd.random.exponential(A([0.5, 4.0]), shape=20000).asnumpy()
    assert abs(e[0].mean() - 0.5) < 0.03 and abs(e[1].mean() - 4.0) < 0.2
    assert abs(mx.nd.random.exponential(4.0, shape=20000).asnumpy().mean() - 4.0) < 0.2
    out = mx.nd.zeros((2, 3))
    mx.nd.random.uniform(A([0, 1]), A([1, 2]), shape=3, out=out)
    assert (out.asnumpy() > 0).any()


def test_parameter_type_errors_as_in_mxnet():
    with pytest.raises(AssertionError, match="must all have the same type"):
        mx.nd.random.gamma(A([1.0]), 1.0)
    with pytest.raises(AssertionError, match="must all have the same type"):
        mx.nd.random.negative_binomial(3, A([0.5]))
    with pytest.raises(ValueError, match="must be either NDArray or numbers"):
        mx.nd.random.poisson("4")
    with pytest.raises(TypeError, match="_random_randint"):
        mx.nd.random.randint(A([0.0]), A([3.0]))


def test_seed_reproduces_every_sampler():
    def draw():
        return [mx.random.gamma(0.7, 2, shape=50), mx.random.poisson(40, shape=50), mx.random.exponential(2, shape=9),
                mx.random.negative_binomial(2, 0.3, shape=9), mx.random.generalized_negative_binomial(2, 0.3, shape=9),
                mx.nd.random.gamma_like(mx.nd.zeros((3, 3)), alpha=2),
                mx.nd.sample_poisson(A([1.0, 100.0]), shape=7), mx.nd.random.multinomial(A([0.3, 0.7]), shape=9)]
    mx.random.seed(11)
    a = [x.asnumpy() for x in draw()]
    mx.random.seed(11)
    b = [x.asnumpy() for x in draw()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_scalar_parameter_errors_name_the_operator():
    cases = [
        (lambda: mx.nd.random.gamma(-1, 1), "_random_gamma: alpha (-1) must be positive"),
        (lambda: mx.nd.random.gamma(1, 0), "_random_gamma: beta (0) must be positive"),
        (lambda: mx.nd.random_exponential(lam=0), "_random_exponential: lam (0) must be positive"),
        (lambda: mx.nd.random.exponential(-2.0), "_random_exponential: lam (-0.5) must be positive"),
        (lambda: mx.nd.random.poisson(-1), "_random_poisson: lam (-1) must be non-negative"),
        (lambda: mx.nd.random.negative_binomial(-1, 0.5), "_random_negative_binomial: k (-1) must be non-negative"),
        (lambda: mx.nd.random.negative_binomial(2, 1.5), "_random_negative_binomial: p (1.5) must be in (0, 1]"),
        (lambda: mx.nd.random.generalized_negative_binomial(-1, 1), "mu (-1) must be non-negative"),
        (lambda: mx.nd.random.generalized_negative_binomial(1, -1), "alpha (-1) must be non-negative"),
        (lambda: mx.nd.random.normal_like(mx.nd.zeros(2), scale=-1), "_random_normal_like: scale (-1) must be positive"),
        (lambda: mx.nd.random.uniform_like(mx.nd.zeros(2), low=2, high=1), "low (2) must not exceed high (1)"),
        (lambda: mx.nd.random.uniform_like(mx.nd.zeros(2, dtype="int32")), "data has dtype int32"),
        (lambda: mx.nd.random.gamma(1, 1, dtype="int32"), "int32 is not supported"),
    ]
    for fn, text in cases:
        with pytest.raises(mx.base.MXNetError, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            fn().wait_to_read()


def test_sample_op_errors():
    with pytest.raises(mx.base.MXNetError, match=r"_sample_normal: sigma has shape \(3,\), but mu has shape \(2,\)"):
        mx.nd.sample_normal(A([0, 1]), A([1, 2, 3]))
    with pytest.raises(mx.base.MXNetError, match="_sample_gamma: beta has dtype float64, but alpha has dtype float32"):
        mx.nd.sample_gamma(A([1, 1]), A([1, 2], dtype="float64"))
    with pytest.raises(mx.base.MXNetError, match="_sample_poisson: lam has dtype int32"):
        mx.nd.sample_poisson(A([1, 2], dtype="int32"))
    # Values are checked when the sampler runs: the error names the operator,
    # the argument and the element, and raises at the wait.
    with pytest.raises(mx.base.MXNetError, match=r"_sample_normal: sigma \(-2\) must be non-negative \(parameter element 1\)"):
        mx.nd.sample_normal(A([0, 1]), A([1, -2])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"_sample_negative_binomial: p \(0\) must be in \(0, 1\]"):
        mx.nd.sample_negative_binomial(A([1, 1]), A([0.5, 0])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"_sample_uniform: low \(3\) must not exceed high \(2\)"):
        mx.nd.sample_uniform(A([3]), A([2])).asnumpy()
    # waitall reports the asynchronous errors (each once); then the engine is clean
    for _ in range(4):
        try:
            mx.nd.waitall()
            break
        except mx.base.MXNetError:
            pass
    mx.nd.waitall()
    # Degenerate but valid: MXNet's own example draws 0 for a zero-shape gamma
    mx.random.seed(1)
    g = mx.nd.sample_gamma(A([0.0, 2.5]), A([1.0, 0.7]), shape=4).asnumpy()
    assert (g[0] == 0).all() and (g[1] > 0).all()


def test_multinomial_shapes_dtypes_errors():
    p = A([[0, 0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1, 0]])
    assert mx.nd.random.multinomial(p).shape == (2,)
    s = mx.nd.random.multinomial(p, shape=(2, 3))
    assert s.shape == (2, 2, 3) and s.dtype == np.int32
    v = s.asnumpy()
    assert (v[0] != 0).all() and (v[1] != 4).all()  # zero-probability outcomes never drawn
    idx, lp = mx.nd.random.multinomial(p.astype("float64"), get_prob=True, dtype="uint8")
    assert idx.dtype == np.uint8 and lp.dtype == np.float64
    assert mx.nd.sample_multinomial(A([0.2, 0.8]), shape=4).shape == (4,)
    with pytest.raises(mx.base.MXNetError, match="_sample_multinomial: data has dtype int32"):
        mx.nd.random.multinomial(A([1, 2], dtype="int32"))
    with pytest.raises(mx.base.MXNetError, match="_sample_multinomial: dtype int64 is not supported"):
        mx.nd.random.multinomial(p, dtype="int64")


def test_samplers_have_no_gradient():
    # As in MXNet: sampling ops pass no gradient to their parameters (zeros)
    x = A([[0.1, 0.2, 0.7], [0.5, 0.5, 0]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.random.normal(x, x, shape=3) + mx.nd.random.multinomial(x, shape=3).astype("float32").sum()
    y.backward()
    assert (x.grad.asnumpy() == 0).all()


# -- densities: values and gradients from MXNet 1.9.1 --------------------------

S22 = [[0.5, 1.5], [2, 3]]
COUNTS = [[0, 1], [2, 3]]

MXNET_PDF = [
    ("random_pdf_normal", [S22, [0, 1], [1, 2]], False, [0.35206532, 0.1295176, 0.17603266, 0.12098536]),
    ("random_pdf_normal", [S22, [0, 1], [1, 2]], True, [-1.0439385, -2.0439386, -1.7370857, -2.1120858]),
    ("random_pdf_uniform", [S22, [0, 1], [1, 2]], False, [1, 1, 1, 1]),
    ("random_pdf_exponential", [[[0.5, -1.5], [2, 3]], [1, 2]], False, [0.60653067, 4.481689, 0.03663128, 0.0049575]),
    ("random_pdf_gamma", [S22, [1, 2], [1, 2]], False, [0.60653067, 0.22313017, 0.14652511, 0.02974503]),
    ("random_pdf_poisson", [[[0, 1], [2, 3.5]], [1, 2]], False, [0.36787945, 0.36787945, 0.27067056, 0.13163513]),
    ("random_pdf_poisson", [[-1, 1.5], [1, 2]], False, [0.0, 0.28795183]),
    ("random_pdf_negative_binomial", [COUNTS, [1, 2], [0.5, 0.3]], False, [0.5, 0.25, 0.1323, 0.12348001]),
    ("random_pdf_negative_binomial", [[1.5, 2], [2.5, 2], [0.4, 0.5]], False, [0.15968192, 0.1875]),
    ("random_pdf_generalized_negative_binomial", [COUNTS, [1, 2], [0.5, 0.3]], False,
     [0.44444448, 0.29629627, 0.21199873, 0.14133248]),
    ("random_pdf_dirichlet", [[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], [[1, 2, 3], [2, 2, 2]]], False, [4.5, 0.96]),
    ("random_pdf_dirichlet", [[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], [1, 2, 3]], False, [4.5, 3.84]),
    ("random_pdf_dirichlet", [[[0.2, 0.3, 0.4]], [[1, 2, 3]]], False, [2.88]),
]


@pytest.mark.parametrize("op,ins,is_log,expected", MXNET_PDF, ids=[f"{c[0]}-{i}" for i, c in enumerate(MXNET_PDF)])
def test_pdf_values_match_mxnet(op, ins, is_log, expected):
    y = getattr(mx.nd, op)(*[A(x) for x in ins], is_log=is_log)
    assert_almost_equal(y.asnumpy().ravel(), np.array(expected, np.float32), rtol=1e-5, atol=1e-6)


def test_pdf_shapes_and_errors():
    assert mx.nd.random_pdf_dirichlet(A([[[0.2, 0.3, 0.5]], [[0.1, 0.1, 0.8]]]), A([[1, 2, 3], [2, 2, 2]])).shape == (2, 1)
    assert mx.nd.random_pdf_dirichlet(A([0.2, 0.3, 0.5]), A([1, 2, 3])).shape == (1,)
    h = mx.nd.random_pdf_normal(A([0.5, 1.5], dtype="float16"), A([0, 1], dtype="float16"), A([1, 2], dtype="float16"))
    assert h.dtype == np.float16
    with pytest.raises(mx.base.MXNetError, match=r"_random_pdf_normal: sample shape \(3,\) must start with the parameters' shape \(2,\)"):
        mx.nd.random_pdf_normal(A([0.5, 1.5, 3]), A([0, 1]), A([1, 2]))
    with pytest.raises(mx.base.MXNetError, match=r"sample shape \(2,\) must start with the parameters' shape \(1, 2\)"):
        mx.nd.random_pdf_normal(A([0.5, 1.5]), A([[0, 1]]), A([[1, 2]]))
    with pytest.raises(mx.base.MXNetError, match=r"_random_pdf_gamma: beta has shape \(3,\), but alpha has shape \(2,\)"):
        mx.nd.random_pdf_gamma(A([0.5, 1.5]), A([1, 2]), A([1, 2, 3]))
    with pytest.raises(mx.base.MXNetError, match="_random_pdf_dirichlet: sample of shape .1, 3. and alpha of shape .1, 2."):
        mx.nd.random_pdf_dirichlet(A([[0.2, 0.3, 0.5]]), A([[1, 2]]))
    with pytest.raises(mx.base.MXNetError, match="_random_pdf_poisson: sample has dtype int32"):
        mx.nd.random_pdf_poisson(A([1, 2], dtype="int32"), A([1, 2], dtype="int32"))
    with pytest.raises(mx.base.MXNetError, match="_random_pdf_exponential: lam has dtype float64, but sample has dtype float32"):
        mx.nd.random_pdf_exponential(A([1, 2]), A([1, 2], dtype="float64"))


MXNET_PDF_GRAD = [
    ("random_pdf_normal", [[0.5, 1.5], [0, 1], [1, 2]], False,
     [[-0.17603266093287223, -0.02416675696392744], [0.17603266093287223, 0.02416675696392744],
      [-0.2640489913993084, -0.0906253386147279]]),
    ("random_pdf_uniform", [[0.5, 1.5], [0, 1], [1, 2]], True, [[0, 0], [1, 1], [-1, -1]]),
    ("random_pdf_exponential", [[0.5, 1.5], [1, 2]], False,
     [[-0.6065306597126334, -0.19914827347145578], [0.3032653298563167, -0.09957413673572789]]),
    ("random_pdf_gamma", [[0.5, 1.5], [1, 2], [1, 2]], True,
     [[-1.0, -1.3333333333333335], [-0.11593151565841242, 0.6758279535696424], [0.5, -0.5]]),
    ("random_pdf_poisson", [[1, 3], [2, 2]], False, [[0, 0], [-0.1353352832366127, 0.09022352215774178]]),
    ("random_pdf_negative_binomial", [[1, 2], [2, 3], [0.4, 0.5]], True,
     [[0, 0], [-0.416290731874155, -0.10981384722661214], [3.333333333333333, 2.0]]),
    ("random_pdf_generalized_negative_binomial", [[1, 2], [2, 3], [0.4, 0.5]], True,
     [[0, 0], [-0.2777777777777778, -0.13333333333333333], [-0.21522223325064505, -0.46817040583671266]]),
    ("random_pdf_dirichlet", [[[0.2, 0.3, 0.5]], [[1, 2, 3]]], False,
     [[0.0, 14.999999999999995, 17.999999999999993], [3.032529394046547, 0.35712238053328677, 0.405837687480246]]),
]


@pytest.mark.parametrize("op,ins,is_log,expected", MXNET_PDF_GRAD, ids=[c[0] for c in MXNET_PDF_GRAD])
def test_pdf_gradients_match_mxnet(op, ins, is_log, expected):
    xs = [A(x, dtype="float64") for x in ins]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(*xs, is_log=is_log)
    y.backward()
    for x, e in zip(xs, expected):
        assert_almost_equal(x.grad.asnumpy().ravel(), np.array(e, np.float64), rtol=1e-6, atol=1e-9)
