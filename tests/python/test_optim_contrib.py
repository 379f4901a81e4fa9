"""MXNet 1.9.1's contrib optimizer updates: mx.nd.contrib.adamw_update,
mp_adamw_update, multi_adamw_update, multi_mp_adamw_update,
multi_lamb_update, multi_mp_lamb_update and group_adagrad_update (operators
_adamw_update, ..., _contrib_group_adagrad_update).

The constants are what MXNet 1.9.1 returned for the calls in the tests (run
with ``import mxnet as mx`` and ``out=`` the weights, as MXNet's optimizers
call them). oxnet follows MXNet's arithmetic type where it shows (float16
without master weights, LAMB's float32 direction); float32 results agree to a
few units in the last place, float16 ones to one unit at most. The
NumPy-reference checks are in test_registry_table.py.
"""
import numpy as np
import pytest

import oxnet as mx

W = [[0.5, -1.25, 2.0], [0.75, -0.5, 1.5]]
G = [[0.25, 0.5, -2.0], [1.0, -0.75, 0.125]]
W2, G2 = [0.375, -0.625], [-0.5, 0.25]
M = [[0.0625, -0.125, 0.25], [0.0, 0.5, -0.25]]
V = [[0.25, 0.125, 0.5], [0.0625, 0.375, 0.25]]
M2, V2 = [0.125, -0.0625], [0.5, 0.25]

# MXNet 1.9.1's results
LAMB_W = [[[0.436274915933609, -1.1688377857208252, 1.954331398010254], [0.6022952795028687, -0.6998612284660339, 1.6193944215774536]], [0.353878915309906, -0.59530109167099]]
LAMB_M = [[[0.08125000447034836, -0.062499985098838806, 0.024999946355819702], [0.10000002384185791, 0.3749999701976776, -0.21249999105930328]], [0.062499985098838806, -0.031249992549419403]]
LAMB_V = [[[0.24981249868869781, 0.125124990940094, 0.5034999847412109], [0.06343749165534973, 0.375187486410141, 0.24976563453674316]], [0.499750018119812, 0.24981249868869781]]
MPLAMB_W = [[[0.444580078125, -1.2275390625, 1.935546875], [0.64892578125, -0.62744140625, 1.576171875]], [0.348388671875, -0.58251953125]]
MPLAMB_W32 = [[[0.44464895129203796, -1.227344036102295, 1.9356803894042969], [0.6487098336219788, -0.6274573802947998, 1.576032042503357]], [0.348501980304718, -0.582598865032196]]
MPLAMB_M = [[[0.10625001043081284, -0.012499973177909851, 0.12499997019767761], [0.10000002384185791, 0.34999996423721313, -0.19999998807907104]], [0.012499973177909851, -0.0062499865889549255]]
MPLAMB_V = [[[0.25, 0.12587499618530273, 0.500499963760376], [0.06343749165534973, 0.37562498450279236, 0.24981249868869781]], [0.500499963760376, 0.25]]
MADAMW_W = [[[0.48812294006347656, -1.2384560108184814, 1.9825823307037354], [0.7225101590156555, -0.5250241160392761, 1.5131338834762573]], [0.3704735040664673, -0.6199995875358582]]
MADAMW_M = [[[0.09375, -0.037499964237213135, 0.10500001907348633], [0.12000000476837158, 0.3374999761581421, -0.20624998211860657]], [0.037499964237213135, -0.018749982118606567]]
MADAMW_V = [[[0.24989062547683716, 0.12543749809265137, 0.5009399652481079], [0.06387746334075928, 0.3758906126022339, 0.2497851550579071]], [0.5000625252723694, 0.24989062547683716]]
MPADAMW_W = [[0.46435546875, -1.185546875, 1.912109375], [0.673828125, -0.49951171875, 1.4453125]]
MPADAMW_W32 = [[0.46437498927116394, -1.185738444328308, 1.912186861038208], [0.6737034320831299, -0.49943387508392334, 1.445007562637329]]
MPADAMW_M = [[0.10625001043081284, -0.012499973177909851, -0.17500010132789612], [0.20000004768371582, 0.2999999523162842, -0.19999998807907104]]
MPADAMW_V = [[0.25, 0.12587499618530273, 0.5154998302459717], [0.06643745303153992, 0.37687498331069946, 0.24981249868869781]]
ADAMW_W = [[0.48250001668930054, -1.2559216022491455, 1.9965232610702515], [0.7100687026977539, -0.504802942276001, 1.5077893733978271]]
ADAMW_M = [[0.14999999105930328, 0.09999998658895493, -0.09999997913837433], [0.29999998211860657, 0.10000002384185791, -0.15000000596046448]]
ADAMW_V = [[0.25, 0.16875001788139343, 0.5875000357627869], [0.1718750298023224, 0.46875, 0.24062499403953552]]


def a(v, dt="float32"):
    return mx.nd.array(np.array(v, dtype=dt), dtype=dt)


def close(got, want, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(got.asnumpy(), np.float64), np.array(want), rtol=rtol, atol=atol)


def half(got, want):
    """float16 results: within one unit in the last place of MXNet's."""
    g = got.asnumpy()
    assert g.dtype == np.float16
    np.testing.assert_allclose(g.astype(np.float64), np.array(want), rtol=2 ** -10, atol=0)


def test_adamw_update_matches_mxnet_and_leaves_grad():
    w, g, m, v = a(W), a(G), a(M), a(V)
    r = mx.nd.contrib.adamw_update(w, g, m, v, 2.0, 0.1, 0.5, beta1=0.8, beta2=0.95, epsilon=1e-6, wd=0.01,
                                   clip_gradient=1.5, out=w)
    assert r is w
    close(w, ADAMW_W)
    close(m, ADAMW_M)
    close(v, ADAMW_V)
    # MXNet 1.9.1 also writes rescale_grad * grad into grad; oxnet leaves it.
    np.testing.assert_array_equal(g.asnumpy(), np.array(G, np.float32))


def test_adamw_update_rescale_as_array_and_by_keyword():
    want = None
    for rescale in (2.0, a([2.0]), a([[2.0]])):
        m, v = a(M), a(V)
        out = mx.nd.contrib.adamw_update(a(W), a(G), m, v, rescale, lr=0.1, eta=0.5, beta1=0.8, beta2=0.95,
                                         epsilon=1e-6, wd=0.01, clip_gradient=1.5)
        close(out, ADAMW_W)
        want = out.asnumpy() if want is None else want
    w = mx.nd._internal._adamw_update(weight=a(W), grad=a(G), mean=a(M), var=a(V), rescale_grad=a([2.0]), lr=0.1,
                                      eta=0.5, beta1=0.8, beta2=0.95, epsilon=1e-6, wd=0.01, clip_gradient=1.5)
    np.testing.assert_array_equal(w.asnumpy(), want)


@pytest.mark.parametrize("rescale", [0.0, float("nan"), float("inf"), -float("inf")])
def test_adamw_skips_update_for_bad_rescale(rescale):
    w, m, v = a(W), a(M), a(V)
    mx.nd.contrib.adamw_update(w, a(G), m, v, rescale, 0.1, 0.5, out=w)
    for x, want in ((w, W), (m, M), (v, V)):
        np.testing.assert_array_equal(x.asnumpy(), np.array(want, np.float32))
    # a fresh output gets the weight (MXNet leaves it uninitialized)
    w32 = a(W)
    out = mx.nd.contrib.mp_adamw_update(a(W, "float16"), a(G, "float16"), a(M), a(V), w32, rescale, 0.1, 0.5)
    np.testing.assert_array_equal(out.asnumpy(), np.array(W, np.float16))
    np.testing.assert_array_equal(w32.asnumpy(), np.array(W, np.float32))


def test_mp_adamw_update_matches_mxnet():
    w, m, v, w32 = a(W, "float16"), a(M), a(V), a(W)
    mx.nd.contrib.mp_adamw_update(w, a(G, "float16"), m, v, w32, 2.0, 0.1, 0.5, wd=0.1, out=w)
    half(w, MPADAMW_W)
    close(w32, MPADAMW_W32)
    close(m, MPADAMW_M)
    close(v, MPADAMW_V)


def test_multi_adamw_update_matches_mxnet():
    w, m, v = [a(W), a(W2)], [a(M), a(M2)], [a(V), a(V2)]
    r = mx.nd.contrib.multi_adamw_update(w, [a(G), a(G2)], m, v, 1.5, lrs=(0.1, 0.2), wds=(0.01, 0.02),
                                         etas=(0.5, 0.25), clip_gradient=1.2, out=w)
    assert len(r) == 2
    for k in range(2):
        close(w[k], MADAMW_W[k])
        close(m[k], MADAMW_M[k])
        close(v[k], MADAMW_V[k])


def test_multi_mp_adamw_update_matches_mxnet():
    # MXNet 1.9.1's results
    MMP_W = [[[0.4599609375, -1.201171875, 1.9072265625], [0.6533203125, -0.483154296875, 1.4404296875]], [0.37744140625, -0.6220703125]]
    MMP_W32 = [[[0.46000000834465027, -1.2015929222106934, 1.9070587158203125], [0.6535232067108154, -0.4831446409225464, 1.4400056600570679]], [0.37738004326820374, -0.6221874952316284]]
    MMP_M = [[[0.15000000596046448, 0.09999996423721313, -0.10000002384185791], [0.2999999523162842, 0.10000002384185791, -0.15000000596046448]], [-0.09999996423721313, 0.04999998211860657]]
    MMP_V = [[[0.25, 0.12587499618530273, 0.5017499923706055], [0.06468749046325684, 0.3768749237060547, 0.24981249868869781]], [0.500499963760376, 0.25]]
    w, m, v, w32 = [a(W, "float16"), a(W2, "float16")], [a(M), a(M2)], [a(V), a(V2)], [a(W), a(W2)]
    mx.nd.contrib.multi_mp_adamw_update(w, [a(G, "float16"), a(G2, "float16")], m, v, w32, 2.0, lrs=(0.1, 0.2),
                                        wds=(0.1, 0.05), etas=(0.5, 0.25), beta1=0.8, clip_gradient=1.5, out=w)
    for k in range(2):
        half(w[k], MMP_W[k])
        close(w32[k], MMP_W32[k])
        close(m[k], MMP_M[k])
        close(v[k], MMP_V[k])


def test_multi_lamb_update_matches_mxnet():
    w, m, v = [a(W), a(W2)], [a(M), a(M2)], [a(V), a(V2)]
    r = mx.nd.contrib.multi_lamb_update(w, [a(G), a(G2)], m, v, step_count=(3, 1), lrs=(0.1, 0.05),
                                        wds=(0.01, 0.2), out=w)
    assert len(r) == 2
    for k in range(2):
        close(w[k], LAMB_W[k])
        close(m[k], LAMB_M[k])
        close(v[k], LAMB_V[k])


def test_multi_mp_lamb_update_matches_mxnet():
    w, m, v, w32 = [a(W, "float16"), a(W2, "float16")], [a(M), a(M2)], [a(V), a(V2)], [a(W), a(W2)]
    mx.nd.contrib.multi_mp_lamb_update(w, [a(G, "float16"), a(G2, "float16")], m, v, w32, step_count=(3, 1),
                                       lrs=(0.1, 0.05), wds=(0.01, 0.2), lower_bound=1.0, upper_bound=2.0,
                                       rescale_grad=2.0, clip_gradient=1.0, out=w)
    for k in range(2):
        half(w[k], MPLAMB_W[k])
        close(w32[k], MPLAMB_W32[k])
        close(m[k], MPLAMB_M[k])
        close(v[k], MPLAMB_V[k])


def test_group_adagrad_update_matches_mxnet():
    # MXNet 1.9.1 runs it with a row_sparse grad only; this is its result for
    # the grad rows [1, 2] and [3, 4] (row 1 has no gradient).
    w, h = mx.nd.ones((3, 2)), mx.nd.ones((3, 1))
    r = mx.nd.contrib.group_adagrad_update(w, a([[1, 2], [0, 0], [3, 4]]), h, lr=0.1, out=w)
    assert r is w
    close(w, [[0.94654780626297, 0.8930956721305847], [1.0, 1.0], [0.918350338935852, 0.8911338448524475]])
    close(h, [[3.5], [1.0], [13.5]])
    # positional parameters in MXNet's order (weight, grad, history, lr, rescale_grad, clip_gradient, epsilon)
    w2 = mx.nd.contrib.group_adagrad_update(mx.nd.ones((3, 2)), a([[1, 2], [0, 0], [3, 4]]), mx.nd.ones((3, 1)), 0.1)
    np.testing.assert_array_equal(w2.asnumpy(), w.asnumpy())


def test_contrib_namespace_lists_the_updates():
    names = dir(mx.nd.contrib)
    for n in ("adamw_update", "mp_adamw_update", "multi_adamw_update", "multi_mp_adamw_update",
              "multi_lamb_update", "multi_mp_lamb_update", "group_adagrad_update"):
        assert n in names and callable(getattr(mx.nd.contrib, n)), n
    for n in ("_adamw_update", "_mp_adamw_update", "_multi_adamw_update", "_multi_mp_adamw_update",
              "_multi_lamb_update", "_multi_mp_lamb_update", "_contrib_group_adagrad_update"):
        assert callable(getattr(mx.nd._internal, n)), n


def _err(exc, text, fn):
    with pytest.raises(exc) as e:
        r = fn()
        for x in r if isinstance(r, list) else [r]:
            x.wait_to_read()
    assert text in str(e.value), str(e.value)


def test_errors():
    w, g, m, v = a(W), a(G), a(M), a(V)
    _err(ValueError, "_adamw_update: required argument 'eta'",
         lambda: mx.nd._internal._adamw_update(w, g, m, v, a([1.0]), lr=0.1))
    _err(ValueError, "_adamw_update: unknown argument 'lrs'",
         lambda: mx.nd._internal._adamw_update(w, g, m, v, a([1.0]), lr=0.1, eta=1, lrs=(0.1,)))
    _err(mx.base.MXNetError, "_adamw_update: var has shape (3, 2), expected (2, 3) like weight",
         lambda: mx.nd.contrib.adamw_update(w, g, m, mx.nd.zeros((3, 2)), 1.0, 0.1, 1.0))
    _err(TypeError, "_adamw_update: rescale_grad has dtype float64, expected float32",
         lambda: mx.nd.contrib.adamw_update(w, g, m, v, a([1.0], "float64"), 0.1, 1.0))
    _err(mx.base.MXNetError, "_adamw_update: rescale_grad has shape (0,), expected one value",
         lambda: mx.nd.contrib.adamw_update(w, g, m, v, mx.nd.zeros((0,)), 0.1, 1.0))
    _err(TypeError, "_mp_adamw_update: mean has dtype float16, expected float32 (mixed-precision states",
         lambda: mx.nd.contrib.mp_adamw_update(a(W, "float16"), a(G, "float16"), a(M, "float16"), v, w, 1.0, 0.1,
                                               1.0))
    _err(TypeError, "_adamw_update: weight has dtype int32, expected a float dtype",
         lambda: mx.nd.contrib.adamw_update(a(W, "int32"), a(G, "int32"), a(M, "int32"), a(V, "int32"), 1.0, 0.1,
                                            1.0))
    _err(ValueError, "_multi_adamw_update: 'etas' has 1 values, expected one per tensor (2)",
         lambda: mx.nd.contrib.multi_adamw_update([w, a(W2)], [g, a(G2)], [m, a(M2)], [v, a(V2)], 1.0,
                                                  lrs=(0.1, 0.1), wds=(0, 0), etas=(1.0,)))
    _err(mx.base.MXNetError, "_multi_adamw_update: grad 1 (input 5) has shape (3,), expected (2,) like weight 1",
         lambda: mx.nd.contrib.multi_adamw_update([w, a(W2)], [g, mx.nd.zeros(3)], [m, a(M2)], [v, a(V2)], 1.0,
                                                  lrs=(0.1, 0.1), wds=(0, 0), etas=(1, 1)))
    _err(ValueError, "_multi_lamb_update: 'step_count' has 1 values, expected one per tensor (2)",
         lambda: mx.nd.contrib.multi_lamb_update([w, a(W2)], [g, a(G2)], [m, a(M2)], [v, a(V2)], step_count=(1,),
                                                 lrs=(0.1, 0.1), wds=(0, 0)))
    _err(ValueError, "_multi_lamb_update: required argument 'step_count'",
         lambda: mx.nd._internal._multi_lamb_update(w, g, m, v, num_tensors=1, learning_rates=(0.1,), wds=(0,)))
    _err(ValueError, "_multi_mp_lamb_update: num_tensors must be between 1 and 65536",
         lambda: mx.nd._internal._multi_mp_lamb_update(w, g, m, v, w, num_tensors=10 ** 12, step_count=(1,),
                                                       learning_rates=(0.1,), wds=(0,)))
    _err(ValueError, "weights32",
         lambda: mx.nd.contrib.multi_mp_lamb_update([w], [g], [m], [v], [], step_count=(1,), lrs=(0.1,), wds=(0,)))
    _err(TypeError, "_contrib_group_adagrad_update: unknown argument(s) 'wd'",
         lambda: mx.nd.contrib.group_adagrad_update(w, g, mx.nd.ones((2, 1)), lr=0.1, wd=0.1))
    _err(mx.base.MXNetError, "_contrib_group_adagrad_update: history has shape (2, 3), expected one value per row",
         lambda: mx.nd.contrib.group_adagrad_update(w, g, mx.nd.ones((2, 3)), lr=0.1))
    _err(mx.base.MXNetError, "_contrib_group_adagrad_update: grad has shape (3, 2), expected (2, 3) like weight",
         lambda: mx.nd.contrib.group_adagrad_update(w, mx.nd.ones((3, 2)), mx.nd.ones((2, 1)), lr=0.1))
    _err(ValueError, "_contrib_group_adagrad_update: required argument 'lr'",
         lambda: mx.nd.contrib.group_adagrad_update(w, g, mx.nd.ones((2, 1))))


def test_updates_have_no_gradient_effect():
    """The updates are not differentiable: recording them gives zero gradients."""
    w, g = a(W), a(G)
    g.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.adamw_update(w, g, a(M), a(V), 1.0, 0.1, 1.0)
    out.backward()
    np.testing.assert_array_equal(g.grad.asnumpy(), np.zeros((2, 3), np.float32))


def test_sparse_aliases_are_the_dense_updates():
    """MXNet's _sparse_<name> aliases (mx.nd.sparse.<name>) of the dense updates."""
    for n in ("sgd_update", "sgd_mom_update", "adam_update", "ftrl_update", "adagrad_update"):
        assert mx._native.get_op("_sparse_" + n).name == n
    w, m = a([1.0, 2.0]), a([0.1, 0.2])
    # MXNet 1.9.1: mx.nd.sparse.sgd_mom_update on these dense arrays
    close(mx.nd._internal._sparse_sgd_mom_update(w, a([0.5, -1.0]), m, lr=0.1, momentum=0.9, wd=0.1), [1.03, 2.26])


def test_adamw_update_float16_computes_in_float16_like_mxnet():
    """Without master weights MXNet 1.9.1 rounds every parameter and
    intermediate to float16 (epsilon=1e-8 becomes 0): the results are equal."""
    w, m, v = a(W, "float16"), a(M, "float16"), a(V, "float16")
    mx.nd.contrib.adamw_update(w, a(G, "float16"), m, v, 1.5, 0.1, 0.7, beta1=0.85, beta2=0.99, wd=0.05,
                               clip_gradient=1.2, out=w)
    # MXNet 1.9.1's results
    h_w = [[0.46728515625, -1.20703125, 1.9267578125], [0.67822265625, -0.51171875, 1.4736328125]]
    h_m = [[0.109375, 0.00628662109375, 0.032470703125], [0.1800537109375, 0.25634765625, -0.184326171875]]
    h_v = [[0.2490234375, 0.12939453125, 0.509765625], [0.0762939453125, 0.384033203125, 0.2479248046875]]
    for x, want in ((w, h_w), (m, h_m), (v, h_v)):
        assert x.dtype == np.float16
        np.testing.assert_array_equal(x.asnumpy().astype(np.float64), np.array(want))


def test_multi_adamw_update_takes_rescale_grad_in_weight_dtype_or_float32():
    """MXNet's _multi_adamw_update wants rescale_grad in the weights' dtype,
    its Python wrapper passes float32: both work (for float64 weights
    MXNet 1.9.1 leaves the weights unchanged; oxnet updates them)."""
    outs = []
    for dt in ("float64", "float32"):
        w, m, v = a(W, "float64"), a(M, "float64"), a(V, "float64")
        mx.nd._internal._multi_adamw_update(w, a(G, "float64"), m, v, a([2.0], dt), num_weights=1, lrs=(0.1,),
                                            wds=(0.01,), etas=(0.5,), beta1=0.8, beta2=0.95, epsilon=1e-6,
                                            clip_gradient=1.5, out=[w])
        assert w.dtype == np.float64
        outs.append(w.asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    close(a(outs[0]), ADAMW_W, rtol=1e-6)
    _err(TypeError, "_multi_adamw_update: rescale_grad (input 4) has dtype float16, expected float64 (or float32)",
         lambda: mx.nd._internal._multi_adamw_update(a(W, "float64"), a(G, "float64"), a(M, "float64"),
                                                     a(V, "float64"), a([2.0], "float16"), num_weights=1, lrs=(0.1,),
                                                     wds=(0.01,), etas=(0.5,)))


@pytest.mark.parametrize("dt", ["float16", "float64"])
def test_multi_lamb_update_in_the_weights_dtype_like_mxnet(dt):
    """Without master weights MXNet 1.9.1's LAMB computes in the weights'
    dtype (float16: every operation rounded; the direction d in float32)."""
    want = {
        "float16": [[[0.413330078125, -1.2158203125, 1.9208984375], [0.515625, -0.6171875, 1.5712890625]],
                    [[0.109375, 0.00616455078125, 0.0325927734375], [0.179931640625, 0.25634765625, -0.1844482421875]],
                    [[0.2489013671875, 0.1292724609375, 0.50927734375], [0.075927734375, 0.3837890625, 0.2479248046875]]],
        "float64": [[[0.41329181760049893, -1.215885873072985, 1.9217269357142142],
                     [0.5156780391158722, -0.6177123943382965, 1.5719600722789893]],
                    [[0.1093749925494194, 0.006249979138374329, 0.032500027418137734],
                     [0.17999997854232674, 0.2562500387430191, -0.18437501043081284]],
                    [[0.24890625104308128, 0.12937499582767487, 0.5093999921798695],
                     [0.0762749880075444, 0.3839062415063381, 0.24785156454890966]]],
    }[dt]
    w, m, v = [a(W, dt)], [a(M, dt)], [a(V, dt)]
    mx.nd.contrib.multi_lamb_update(w, [a(G, dt)], m, v, step_count=(2,), lrs=(0.1,), wds=(0.05,), beta1=0.85,
                                    beta2=0.99, epsilon=1e-3, rescale_grad=1.5, clip_gradient=1.2, out=w)
    for x, y in zip((w[0], m[0], v[0]), want):
        assert x.dtype == np.dtype(dt)
        if dt == "float16":
            half(x, y)
        else:
            close(x, y, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dt", ["float16", "float32"])
def test_group_adagrad_update_3d_in_the_arrays_dtype_like_mxnet(dt):
    """Rows of a 3-d weight; MXNet 1.9.1 computes in the arrays' dtype (its
    results with a row_sparse grad holding every row, pasted)."""
    want = {
        "float16": ([[[0.40673828125, -1.4365234375], [2.310546875, 0.439208984375]],
                     [[-0.17919921875, 1.4462890625], [0.0361328125, 1.3564453125]]], [[1.45703125], [1.1064453125]]),
        "float32": ([[[0.4068315029144287, -1.4363369941711426], [2.3105616569519043, 0.4394383132457733]],
                     [[-0.17928990721702576, 1.446548342704773], [0.03619326651096344, 1.3563445806503296]]],
                    [[1.45703125], [1.1064453125]]),
    }[dt]
    w = a([[[0.5, -1.25], [2.0, 0.75]], [[-0.5, 1.5], [0.25, 1.0]]], dt)
    g = a([[[0.25, 0.5], [-2.0, 1.0]], [[-0.75, 0.125], [0.5, -1.5]]], dt)
    h = a([[0.5], [0.25]], dt)
    mx.nd.contrib.group_adagrad_update(w, g, h, lr=0.3, rescale_grad=1.5, clip_gradient=1.25, epsilon=1e-3, out=w)
    assert w.dtype == np.dtype(dt) and h.dtype == np.dtype(dt)
    np.testing.assert_array_equal(w.asnumpy().astype(np.float64), np.array(want[0]))
    np.testing.assert_array_equal(h.asnumpy().astype(np.float64), np.array(want[1]))
