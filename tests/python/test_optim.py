"""MXNet 1.9.1's remaining single-call optimizer updates: the multi-tensor SGD
family (multi_*, preloaded_multi_*), ftml_update, mp_nag_mom_update, LAMB's
two phases and multi_lars.

MXNET holds the results MXNet 1.9.1 gave for the cases in ``_run`` (run there
with ``import mxnet as mx``; outputs first, then the updated states, each with
its dtype). MXNet computes in float32 and oxnet in float64 per element, so
float32 values agree to a few units in the last place (within rtol 1e-6).
The NumPy-reference and state checks of every operator are in
test_registry_table.py; this file holds MXNet's numbers, out= semantics and
the errors.
"""
import numpy as np
import pytest

import oxnet as mx

W1, G1, M1 = [1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.1, -0.2, 0.3]
W2, G2, M2 = [[1.0, -2.0], [0.5, 4.0]], [[0.1, 0.2], [-3.0, 0.4]], [[0.0, 1.0], [-1.0, 0.5]]
W, G = [1.0, -2.0, 0.5, 0.0], [0.5, -1.0, 2.0, -0.3]
S1, S2, S3 = [0.1, -0.2, 0.3, 0.0], [0.01, 0.2, 0.0, 0.1], [0.1, -0.1, 0.2, 0.0]
GG = [0.3, -0.1, 0.2, 0.5]


def _run(mx):
    """Every case: name -> list of result arrays (outputs, then updated states)."""
    nd = mx.nd

    def a(v, dt="float32"):
        return nd.array(np.array(v, dtype=dt), dtype=dt)

    res = {}

    def multi(name, mom, mp, pre, **kw):
        ws, states = [], []
        ins = []
        for w, g, m in [(W1, G1, M1), (W2, G2, M2)]:
            dt = "float16" if mp else "float32"
            wa = a(w, dt)
            ws.append(wa)
            ins += [wa, a(g, dt)]
            if mom:
                ins.append(a(m))
                states.append(ins[-1])
            if mp:
                ins.append(a(w))
                states.append(ins[-1])
        if pre:
            ins += [a([0.1, 0.2]), a([0.01, 0.02])]
        else:
            kw.update(lrs=(0.1, 0.2), wds=(0.01, 0.02))
        getattr(nd, name)(*ins, num_weights=2, out=ws, **kw)
        return ws + states

    for name, mom, mp, pre in [("multi_sgd_update", 0, 0, 0), ("multi_sgd_mom_update", 1, 0, 0),
                               ("multi_mp_sgd_update", 0, 1, 0), ("multi_mp_sgd_mom_update", 1, 1, 0),
                               ("preloaded_multi_sgd_update", 0, 0, 1), ("preloaded_multi_sgd_mom_update", 1, 0, 1),
                               ("preloaded_multi_mp_sgd_update", 0, 1, 1),
                               ("preloaded_multi_mp_sgd_mom_update", 1, 1, 1)]:
        kw = {"momentum": 0.9} if mom else {}
        res[name] = multi(name, mom, mp, pre, **kw)
        res[name + "/clip"] = multi(name, mom, mp, pre, rescale_grad=2.0, clip_gradient=1.5, **kw)

    def single(name, ins, **kw):
        out = getattr(nd, name)(*ins, **kw)
        return [out] + ins[2:]

    res["ftml_update"] = single("ftml_update", [a(W), a(G), a(S1), a(S2), a(S3)], lr=0.1, t=1)
    res["ftml_update/clip"] = single("ftml_update", [a(W), a(G), a(S1), a(S2), a(S3)], lr=0.1, t=3, wd=0.1,
                                     rescale_grad=2.0, clip_grad=1.5, beta1=0.5, beta2=0.9, epsilon=1e-3)
    res["mp_nag_mom_update"] = single("mp_nag_mom_update", [a(W, "float16"), a(G, "float16"), a(S1), a(W)],
                                      lr=0.1, momentum=0.9, wd=0.01)
    res["mp_nag_mom_update/clip"] = single("mp_nag_mom_update", [a(W, "float16"), a(G, "float16"), a(S1), a(W)],
                                           lr=0.1, momentum=0.9, wd=0.01, rescale_grad=2.0, clip_gradient=1.5)
    res["lamb_update_phase1"] = single("lamb_update_phase1", [a(W), a(G), a(S1), a(S2)], t=1, wd=0.01)
    res["lamb_update_phase1/clip"] = single("lamb_update_phase1", [a(W), a(G), a(S1), a(S2)], t=3, wd=0.1,
                                            bias_correction=False, rescale_grad=2.0, clip_gradient=1.5, beta1=0.5,
                                            beta2=0.8, epsilon=1e-3)
    res["lamb_update_phase1/t3"] = single("lamb_update_phase1", [a(W), a(G), a(S1), a(S2)], t=3, wd=0.1,
                                          rescale_grad=2.0, clip_gradient=1.5, beta1=0.5, beta2=0.8, epsilon=1e-3)
    res["mp_lamb_update_phase1"] = single("mp_lamb_update_phase1",
                                          [a(W, "float16"), a(G, "float16"), a(S1), a(S2), a([1.5, -2.0, 0.25, 1.0])],
                                          t=2, wd=0.01)
    for key, r1, r2, kw in [("", 2.0, 4.0, {}), ("/r1_zero", 0.0, 4.0, {}), ("/r2_zero", 2.0, 0.0, {}),
                            ("/lower", 2.0, 4.0, {"lower_bound": 3.0}), ("/upper", 2.0, 4.0, {"upper_bound": 1.0}),
                            ("/r1_zero_lower", 0.0, 4.0, {"lower_bound": 1.0}),
                            ("/bounds_zero", 2.0, 4.0, {"lower_bound": 0.0, "upper_bound": 0.0})]:
        res["lamb_update_phase2" + key] = single("lamb_update_phase2", [a(W), a(GG), a([r1]), a([r2])], lr=0.1, **kw)
    res["mp_lamb_update_phase2"] = single("mp_lamb_update_phase2",
                                          [a(W, "float16"), a(GG), a([2.0]), a([4.0]), a([1.001, -1.999, 0.501, 0.001])],
                                          lr=0.1, upper_bound=1.5)
    lars_in = [a([0.1, 0.2, 0.3, 0.4, 0.5]), a([4.0, 9.0, 0.0, 1.0, 16.0]), a([1.0, 4.0, 1.0, 0.0, 0.25]),
               a([0.01, 0.0, 0.1, 0.2, 0.5])]
    res["multi_lars"] = [nd.multi_lars(*lars_in, eta=0.001, eps=1e-8)]
    res["multi_lars/rescale"] = [nd.multi_lars(*lars_in, eta=0.5, eps=0.1, rescale_grad=2.0)]
    res["multi_lars/rescale_zero"] = [nd.multi_lars(*lars_in, eta=0.5, eps=0.1, rescale_grad=0.0)]
    return {k: [x.asnumpy() for x in v] for k, v in res.items()}


MXNET = {
    'multi_sgd_update': [
        ('float32', [0.949000001, 2.09800005, 2.79699993]),
        ('float32', [[0.976000011, -2.03200006], [1.09800005, 3.90400004]]),
    ],
    'multi_sgd_update/clip': [
        ('float32', [0.898999989, 2.148, 2.84699988]),
        ('float32', [[0.95599997, -2.07200003], [0.797999978, 3.82399988]]),
    ],
    'multi_sgd_mom_update': [
        ('float32', [1.03900003, 1.91799998, 3.06699991]),
        ('float32', [[0.976000011, -1.13199997], [0.198000073, 4.35400009]]),
        ('float32', [0.0389999934, -0.0819999948, 0.0670000166]),
        ('float32', [[-0.0240000021, 0.867999971], [-0.301999927, 0.353999972]]),
    ],
    'multi_sgd_mom_update/clip': [
        ('float32', [0.988999963, 1.96800005, 3.1170001]),
        ('float32', [[0.95599997, -1.17199993], [-0.101999938, 4.27400017]]),
        ('float32', [-0.0110000074, -0.0319999903, 0.117000014]),
        ('float32', [[-0.0440000035, 0.828000009], [-0.601999938, 0.273999989]]),
    ],
    'multi_mp_sgd_update': [
        ('float16', [0.94921875, 2.09765625, 2.796875]),
        ('float16', [[0.976074219, -2.03125], [1.09765625, 3.90429688]]),
        ('float32', [0.949000001, 2.09800005, 2.79699993]),
        ('float32', [[0.976004899, -2.03199029], [1.09800005, 3.90401959]]),
    ],
    'multi_mp_sgd_update/clip': [
        ('float16', [0.898925781, 2.1484375, 2.84765625]),
        ('float16', [[0.956054688, -2.07226562], [0.797851562, 3.82421875]]),
        ('float32', [0.898999989, 2.148, 2.84699988]),
        ('float32', [[0.956009746, -2.07198048], [0.797999978, 3.82403898]]),
    ],
    'multi_mp_sgd_mom_update': [
        ('float16', [1.0390625, 1.91796875, 3.06640625]),
        ('float16', [[0.976074219, -1.13183594], [0.197998047, 4.35546875]]),
        ('float32', [0.0389999934, -0.0819999948, 0.0670000166]),
        ('float32', [1.03900003, 1.91799998, 3.06699991]),
        ('float32', [[-0.0239951182, 0.868009746], [-0.301999927, 0.354019523]]),
        ('float32', [[0.976004899, -1.13199019], [0.198000073, 4.35401964]]),
    ],
    'multi_mp_sgd_mom_update/clip': [
        ('float16', [0.988769531, 1.96777344, 3.1171875]),
        ('float16', [[0.956054688, -1.171875], [-0.101989746, 4.2734375]]),
        ('float32', [-0.0110000074, -0.0319999903, 0.117000014]),
        ('float32', [0.988999963, 1.96800005, 3.1170001]),
        ('float32', [[-0.0439902358, 0.8280195], [-0.601999938, 0.27403903]]),
        ('float32', [[0.956009746, -1.1719805], [-0.101999938, 4.27403927]]),
    ],
    'preloaded_multi_sgd_update': [
        ('float32', [0.949000001, 2.09800005, 2.79699993]),
        ('float32', [[0.976000011, -2.03200006], [1.09800005, 3.90400004]]),
    ],
    'preloaded_multi_sgd_update/clip': [
        ('float32', [0.898999989, 2.148, 2.84699988]),
        ('float32', [[0.95599997, -2.07200003], [0.797999978, 3.82399988]]),
    ],
    'preloaded_multi_sgd_mom_update': [
        ('float32', [1.03900003, 1.91799998, 3.06699991]),
        ('float32', [[0.976000011, -1.13199997], [0.198000073, 4.35400009]]),
        ('float32', [0.0389999934, -0.0819999948, 0.0670000166]),
        ('float32', [[-0.0240000021, 0.867999971], [-0.301999927, 0.353999972]]),
    ],
    'preloaded_multi_sgd_mom_update/clip': [
        ('float32', [0.988999963, 1.96800005, 3.1170001]),
        ('float32', [[0.95599997, -1.17199993], [-0.101999938, 4.27400017]]),
        ('float32', [-0.0110000074, -0.0319999903, 0.117000014]),
        ('float32', [[-0.0440000035, 0.828000009], [-0.601999938, 0.273999989]]),
    ],
    'preloaded_multi_mp_sgd_update': [
        ('float16', [0.94921875, 2.09765625, 2.796875]),
        ('float16', [[0.976074219, -2.03125], [1.09765625, 3.90429688]]),
        ('float32', [0.949000001, 2.09800005, 2.79699993]),
        ('float32', [[0.976004899, -2.03199029], [1.09800005, 3.90401959]]),
    ],
    'preloaded_multi_mp_sgd_update/clip': [
        ('float16', [0.898925781, 2.1484375, 2.84765625]),
        ('float16', [[0.956054688, -2.07226562], [0.797851562, 3.82421875]]),
        ('float32', [0.898999989, 2.148, 2.84699988]),
        ('float32', [[0.956009746, -2.07198048], [0.797999978, 3.82403898]]),
    ],
    'preloaded_multi_mp_sgd_mom_update': [
        ('float16', [1.0390625, 1.91796875, 3.06640625]),
        ('float16', [[0.976074219, -1.13183594], [0.197998047, 4.35546875]]),
        ('float32', [0.0389999934, -0.0819999948, 0.0670000166]),
        ('float32', [1.03900003, 1.91799998, 3.06699991]),
        ('float32', [[-0.0239951182, 0.868009746], [-0.301999927, 0.354019523]]),
        ('float32', [[0.976004899, -1.13199019], [0.198000073, 4.35401964]]),
    ],
    'preloaded_multi_mp_sgd_mom_update/clip': [
        ('float16', [0.988769531, 1.96777344, 3.1171875]),
        ('float16', [[0.956054688, -1.171875], [-0.101989746, 4.2734375]]),
        ('float32', [-0.0110000074, -0.0319999903, 0.117000014]),
        ('float32', [0.988999963, 1.96800005, 3.1170001]),
        ('float32', [[-0.0439902358, 0.8280195], [-0.601999938, 0.27403903]]),
        ('float32', [[0.956009746, -1.1719805], [-0.101999938, 4.27403927]]),
    ],
    'ftml_update': [
        ('float32', [0.975000083, -1.99611866, 0.373750001, 0.00300013088]),
        ('float32', [12.8000793, 56.6819267, 7.99999952, 39.9982529]),
        ('float32', [0.0102399969, 0.200799987, 0.0039999485, 0.0999899954]),
        ('float32', [-12.4800787, 113.143852, -2.98999977, -0.119999997]),
    ],
    'ftml_update/clip': [
        ('float32', [0.892899454, -1.94395411, 0.384108722, 0.0502083823]),
        ('float32', [6.06906319, 10.7054768, 7.98161936, 5.97509813]),
        ('float32', [0.130000025, 0.405000031, 0.225000054, 0.126000002]),
        ('float32', [-5.41906309, 20.810955, -3.06580973, -0.300000012]),
    ],
    'mp_nag_mom_update': [
        ('float16', [0.983886719, -1.96777344, 0.362060547, 0.0570068359]),
        ('float32', [0.0390158929, -0.0780317858, 0.0696379691, 0.0299478751]),
        ('float32', [0.984100044, -1.96820009, 0.362049997, 0.057009276]),
    ],
    'mp_nag_mom_update/clip': [
        ('float16', [0.889160156, -1.87304688, 0.45703125, 0.114013672]),
        ('float32', [-0.0108891055, -0.0281267911, 0.119542956, 0.0598957501]),
        ('float32', [0.889100015, -1.87320006, 0.457050025, 0.114018552]),
    ],
    'lamb_update_phase1': [
        ('float32', [0.44749707, -0.217593804, 2.35499859, -0.030001305]),
        ('float32', [0.140000015, -0.280000031, 0.470000058, -0.0300000086]),
        ('float32', [0.0102399969, 0.200799987, 0.0039999485, 0.0999899954]),
    ],
    'lamb_update_phase1/clip': [
        ('float32', [1.30331647, -1.28692186, 1.38964379, -0.767515182]),
        ('float32', [0.550000012, -0.850000024, 0.899999976, -0.300000012]),
        ('float32', [0.207999989, 0.610000014, 0.449999988, 0.15200001]),
    ],
    'lamb_update_phase1/t3': [
        ('float32', [1.06132042, -1.06809568, 1.12000561, -0.613230646]),
        ('float32', [0.550000012, -0.850000024, 0.899999976, -0.300000012]),
        ('float32', [0.207999989, 0.610000014, 0.449999988, 0.15200001]),
    ],
    'mp_lamb_update_phase1': [
        ('float32', [0.340556532, -0.167036325, 1.75121439, -0.0123286303]),
        ('float32', [0.140000015, -0.280000031, 0.470000058, -0.0300048906]),
        ('float32', [0.0102399969, 0.200799987, 0.0039999485, 0.0999900252]),
        ('float32', [1.5, -2.0, 0.25, 1.0]),
    ],
    'lamb_update_phase2': [
        ('float32', [0.985000014, -1.995, 0.49000001, -0.0250000004]),
        ('float32', [2.0]),
        ('float32', [4.0]),
    ],
    'lamb_update_phase2/r1_zero': [
        ('float32', [0.970000029, -1.99000001, 0.479999989, -0.0500000007]),
        ('float32', [0.0]),
        ('float32', [4.0]),
    ],
    'lamb_update_phase2/r2_zero': [
        ('float32', [0.970000029, -1.99000001, 0.479999989, -0.0500000007]),
        ('float32', [2.0]),
        ('float32', [0.0]),
    ],
    'lamb_update_phase2/lower': [
        ('float32', [0.977500021, -1.99249995, 0.485000014, -0.0375000015]),
        ('float32', [2.0]),
        ('float32', [4.0]),
    ],
    'lamb_update_phase2/upper': [
        ('float32', [0.992500007, -1.99749994, 0.495000005, -0.0125000002]),
        ('float32', [2.0]),
        ('float32', [4.0]),
    ],
    'lamb_update_phase2/r1_zero_lower': [
        ('float32', [0.992500007, -1.99749994, 0.495000005, -0.0125000002]),
        ('float32', [0.0]),
        ('float32', [4.0]),
    ],
    'lamb_update_phase2/bounds_zero': [
        ('float32', [0.970000029, -1.99000001, 0.479999989, -0.0500000007]),
        ('float32', [2.0]),
        ('float32', [4.0]),
    ],
    'mp_lamb_update_phase2': [
        ('float16', [0.989746094, -1.99511719, 0.493408203, -0.0177459717]),
        ('float32', [2.0]),
        ('float32', [4.0]),
        ('float32', [1.00100005, -1.99899995, 0.500999987, 0.00100000005]),
    ],
    'multi_lars': [
        ('float32', [0.000196078443, 0.000300000014, 0.300000012, 0.400000006, 0.000800000038]),
    ],
    'multi_lars/rescale': [
        ('float32', [0.0471698157, 0.0731707364, 0.300000012, 0.400000006, 0.322580665]),
    ],
    'multi_lars/rescale_zero': [
        ('float32', [0.833333313, 3.0, 0.300000012, 0.400000006, 0.476190507]),
    ],
}


def _tols(dt):
    return {"float16": (1e-3, 1e-3), "float32": (1e-6, 1e-6)}[dt]


_RESULTS = {}


def _results():
    if not _RESULTS:
        _RESULTS.update(_run(mx))
    return _RESULTS


@pytest.mark.parametrize("case", sorted(MXNET))
def test_matches_mxnet(case):
    got = _results()[case]
    want = MXNET[case]
    assert len(got) == len(want)
    for k, (g, (dt, e)) in enumerate(zip(got, want)):
        assert str(g.dtype) == dt, f"{case} result {k}: dtype {g.dtype}, MXNet {dt}"
        rtol, atol = _tols(dt)
        np.testing.assert_allclose(g.astype(np.float64), np.array(e), rtol=rtol, atol=atol,
                                   err_msg=f"{case} result {k}")


def _arr(v, dt="float32"):
    return mx.nd.array(np.array(v, dtype=dt), dtype=dt)


def _pairs():
    return [_arr(W1), _arr(G1), _arr(W2), _arr(G2)]


def test_multi_out_updates_weights_in_place():
    ins = _pairs()
    w1, w2 = ins[0], ins[2]
    res = mx.nd.multi_sgd_update(*ins, lrs=(0.1, 0.2), wds=(0.01, 0.02), num_weights=2, out=[w1, w2])
    assert res[0] is w1 and res[1] is w2
    np.testing.assert_allclose(w1.asnumpy(), MXNET["multi_sgd_update"][0][1], rtol=1e-6)
    np.testing.assert_allclose(w2.asnumpy(), MXNET["multi_sgd_update"][1][1], rtol=1e-6)


def test_multi_single_weight_out_array():
    w, g = _arr(W1), _arr(G1)
    res = mx.nd.multi_sgd_update(w, g, lrs=(0.1,), wds=(0.01,), out=w)
    assert res is w
    np.testing.assert_allclose(w.asnumpy(), MXNET["multi_sgd_update"][0][1], rtol=1e-6)
    # a scalar lrs is a one-element tuple, as in MXNet
    w = _arr(W1)
    mx.nd.multi_sgd_update(w, g, lrs=0.1, wds=0.01, num_weights=1, out=w)
    np.testing.assert_allclose(w.asnumpy(), MXNET["multi_sgd_update"][0][1], rtol=1e-6)


def test_multi_without_out_returns_new_arrays():
    # MXNet 1.9.1 fails to infer the output shapes without out= ("shape must
    # have a valid ndim"); oxnet returns the new weights and leaves the inputs.
    ins = _pairs()
    res = mx.nd.multi_sgd_update(*ins, lrs=(0.1, 0.2), wds=(0.01, 0.02), num_weights=2)
    assert isinstance(res, list) and len(res) == 2
    assert res[0].shape == (3,) and res[1].shape == (2, 2)
    np.testing.assert_allclose(res[1].asnumpy(), MXNET["multi_sgd_update"][1][1], rtol=1e-6)
    np.testing.assert_array_equal(ins[0].asnumpy(), np.array(W1, np.float32))


def test_multi_mp_momentum_states_change_in_place_only():
    w16, g16, mom, w32 = _arr(W1, "float16"), _arr(G1, "float16"), _arr(M1), _arr(W1)
    mx.nd.multi_mp_sgd_mom_update(w16, g16, mom, w32, lrs=(0.1,), wds=(0.01,), momentum=0.9, out=w16)
    want = MXNET["multi_mp_sgd_mom_update"]
    np.testing.assert_allclose(mom.asnumpy(), want[2][1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w32.asnumpy(), want[3][1], rtol=1e-6)
    np.testing.assert_allclose(w16.asnumpy().astype(np.float64), want[0][1], rtol=1e-3)


def test_mp_lamb_phase2_leaves_weight32():
    w32 = _arr([1.001, -1.999, 0.501, 0.001])
    before = w32.asnumpy().copy()
    out = mx.nd.mp_lamb_update_phase2(_arr(W, "float16"), _arr(GG), _arr([2.0]), _arr([4.0]), w32, lr=0.1)
    out.wait_to_read()
    np.testing.assert_array_equal(w32.asnumpy(), before)


def test_many_weights():
    # MXNet's kernel holds at most 60 tensors (61 crashes it); oxnet has no limit.
    n = 70
    ws = [mx.nd.ones((2,)) * i for i in range(n)]
    ins = [a for w in ws for a in (w, mx.nd.ones((2,)))]
    mx.nd.multi_sgd_update(*ins, lrs=(0.5,) * n, wds=(0.0,) * n, num_weights=n, out=ws)
    np.testing.assert_allclose(np.stack([w.asnumpy() for w in ws])[:, 0], np.arange(n) - 0.5)


@pytest.mark.parametrize("call,exc,text", [
    # num_weights defaults to 1 (as in MXNet): two tensors need num_weights=2
    (lambda: mx.nd.multi_sgd_update(*_pairs(), lrs=(0.1, 0.2), wds=(0.0, 0.0)), ValueError, "num_weights = 1"),
    (lambda: mx.nd.multi_sgd_update(*_pairs(), lrs=(0.1,), wds=(0.0, 0.0), num_weights=2), ValueError,
     "'lrs' has 1 learning rates, expected num_weights = 2"),
    (lambda: mx.nd.multi_sgd_update(*_pairs(), wds=(0.0, 0.0), num_weights=2), ValueError, "'lrs' is missing"),
    (lambda: mx.nd.multi_sgd_update(*_pairs()[:3], lrs=(0.1, 0.2), wds=(0.0, 0.0), num_weights=2), ValueError,
     "expected 4 input(s)"),
    (lambda: mx.nd.multi_sgd_update(*_pairs(), lrs=(0.1, 0.2), wds=(0.0, 0.0), num_weights=0), ValueError,
     "num_weights must be between 1 and 65536, got 0"),
    (lambda: mx.nd.preloaded_multi_sgd_update(*_pairs(), num_weights=10**12), ValueError,
     "num_weights must be between 1 and 65536"),
    (lambda: mx.nd.multi_sgd_update(*_pairs(), lrs=(0.1, 0.2), wds=(0.0, 0.0), num_weights=2, momentum=0.9),
     ValueError, "unknown argument 'momentum'"),
    (lambda: mx.nd.multi_sgd_update(_arr(W1), _arr(G2), lrs=(0.1,), wds=(0.0,)), ValueError,
     "grad 0 (input 1) has shape (2, 2), expected (3,) like weight 0"),
    (lambda: mx.nd.multi_sgd_update(_arr(W1), _arr(G1), _arr(W2, "float64"), _arr(G2, "float64"), lrs=(0.1, 0.2),
                                    wds=(0.0, 0.0), num_weights=2), TypeError,
     "weight 1 (input 2) has dtype float64, expected float32 like weight 0"),
    (lambda: mx.nd.multi_sgd_update(_arr(W1, "int32"), _arr(G1, "int32"), lrs=(0.1,), wds=(0.0,)), TypeError,
     "expected a float dtype"),
    (lambda: mx.nd.multi_mp_sgd_update(_arr(W1, "float16"), _arr(G1, "float16"), _arr(W1, "float16"), lrs=(0.1,),
                                       wds=(0.0,)), TypeError, "weight32 0 (input 2) has dtype float16, expected float32"),
    (lambda: mx.nd.preloaded_multi_sgd_update(_arr(W1), _arr(G1), _arr([0.1, 0.2]), _arr([0.0])), ValueError,
     "lrs (input 2) has shape (2,), expected num_weights = 1 values"),
    (lambda: mx.nd.preloaded_multi_sgd_update(_arr(W1), _arr(G1), _arr([0.1], "float64"), _arr([0.0])), TypeError,
     "lrs (input 2) has dtype float64, expected float32"),
    (lambda: mx.nd.multi_sgd_update(*_pairs(), lrs=(0.1, 0.2), wds=(0.0, 0.0), num_weights=2,
                                    out=[mx.nd.zeros((2, 2)), mx.nd.zeros(3)]), ValueError, "out[0] has shape (2, 2)"),
    (lambda: mx.nd.ftml_update(*[_arr(W)] * 5, lr=0.1), ValueError, "required argument 't'"),
    (lambda: mx.nd.ftml_update(*[_arr(W)] * 5, lr=0.1, t=1, clip_gradient=1.0), TypeError,
     "unknown argument(s) 'clip_gradient'"),
    (lambda: mx.nd.lamb_update_phase1(*[_arr(W)] * 4, t=1), ValueError, "required argument 'wd'"),
    (lambda: mx.nd.lamb_update_phase2(_arr(W), _arr(GG), _arr([1.0, 2.0]), _arr([2.0]), lr=0.1), ValueError,
     "r1 must hold one value (shape (1,)), got shape (2,)"),
    (lambda: mx.nd.lamb_update_phase2(_arr(W), _arr(GG), _arr([1.0], "float64"), _arr([2.0]), lr=0.1), TypeError,
     "r1 has dtype float64, expected float32"),
    (lambda: mx.nd.mp_lamb_update_phase1(_arr(W, "float16"), _arr(G, "float16"), _arr(S1, "float16"), _arr(S2),
                                         _arr(W), t=1, wd=0.0), TypeError, "mean has dtype float16, expected float32"),
    (lambda: mx.nd.mp_nag_mom_update(_arr(W, "float16"), _arr(G), _arr(S1), _arr(W), lr=0.1), TypeError,
     "grad has dtype float32, expected float16"),
    (lambda: mx.nd.multi_lars(*[_arr([1.0, 2.0], "float64")] * 4, eta=0.1, eps=0.0), TypeError,
     "lrs has dtype float64, expected float32"),
    (lambda: mx.nd.multi_lars(_arr([0.1]), _arr([1.0]), _arr([1.0]), _arr([0.1, 0.2]), eta=0.1, eps=0.0),
     ValueError, "shape (2,)"),
    (lambda: mx.nd.multi_lars(*[_arr([1.0])] * 4, eta=0.1), ValueError, "required argument 'eps'"),
])
def test_errors(call, exc, text):
    with pytest.raises(exc) as e:
        call()
    assert text in str(e.value), str(e.value)
    # raised by the operator (the Python wrapper checks keyword names itself)
    assert isinstance(e.value, mx.base.MXNetError) or "unknown argument(s)" in text


def _h(v):
    return _arr(v, "float16")


@pytest.mark.parametrize("ins,want", [
    # MXNet 1.9.1's values: float16 squares round to float16 (255^2 -> 65024), sums are float32
    (lambda: [_h([255.0])], [65024.0]),
    (lambda: [_h([200.0, 200.0]), _h([1.0])], [80000.0, 1.0]),
    (lambda: [mx.nd.ones((2, 3)), mx.nd.ones((4,))], [6.0, 4.0]),
    (lambda: [_arr([1e20, 1e20], "float64")], [np.inf]),
])
def test_multi_sum_sq_matches_mxnet(ins, want):
    arrays = ins()
    got = mx.nd.multi_sum_sq(*arrays, num_arrays=len(arrays))
    assert got.dtype == np.float32 and got.shape == (len(arrays),)
    np.testing.assert_array_equal(got.asnumpy(), np.array(want, np.float32))


def test_multi_sum_sq_errors_and_no_gradient():
    with pytest.raises(ValueError, match="required argument 'num_arrays'"):
        mx.nd.multi_sum_sq(mx.nd.ones(2))
    with pytest.raises(TypeError, match="array 1 has dtype float64, expected float32 like array 0"):
        mx.nd.multi_sum_sq(mx.nd.ones(2), _arr([1.0], "float64"), num_arrays=2)
    with pytest.raises(ValueError, match="unknown argument 'foo'"):
        mx.nd.multi_sum_sq(mx.nd.ones(2), num_arrays=1, foo=1)
    with pytest.raises(ValueError, match="num_arrays must be between 1 and 65536, got -1"):
        mx.nd.multi_sum_sq(mx.nd.ones(2), num_arrays=-1)
    x = mx.nd.ones(2)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.multi_sum_sq(x, num_arrays=1)
    with pytest.raises(mx.base.MXNetError, match="multi_sum_sq: operator has no gradient"):
        y.backward()


def test_docs_and_no_gradient():
    for name in ["multi_sgd_update", "preloaded_multi_mp_sgd_mom_update", "ftml_update", "mp_nag_mom_update",
                 "lamb_update_phase1", "mp_lamb_update_phase2", "multi_lars", "multi_sum_sq"]:
        assert getattr(mx.nd, name).__doc__.strip(), name
    w, g = _arr(W1), _arr(G1)
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.multi_sgd_update(w, g, lrs=(0.1,), wds=(0.0,))
    y.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), np.zeros(3, np.float32))


def test_adam_uses_float32_parameters_like_mxnet():
    # MXNet holds beta2 = 0.999 as float32; 1 - beta2 then differs from the
    # float64 value by 1e-5 relative, which the variance shows (MXNet 1.9.1's values).
    w, mean, var = _arr(W), _arr(S1), _arr(S2)
    mx.nd.adam_update(w, _arr(G), mean, var, lr=0.01, wd=0.01, out=w)
    np.testing.assert_allclose(w.asnumpy(), [0.986073077, -1.99370754, 0.425792456, 0.000948731031], rtol=1e-6)
    np.testing.assert_allclose(mean.asnumpy(), [0.141000003, -0.282000005, 0.470500052, -0.0300000086], rtol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), [0.0102500971, 0.200840384, 0.0040199738, 0.0999899954], rtol=1e-6)
