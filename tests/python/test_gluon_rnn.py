"""gluon.rnn layers and cells against MXNet 1.9.1 (outputs, states and
gradients of the input and of every Parameter).

tests/data/gluon_rnn_golden.npz holds MXNet 1.9.1's results; regenerate with
``python tests/python/test_gluon_rnn.py mxnet tests/data/gluon_rnn_golden.npz``.
"""
import os
import sys

import numpy as np

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "gluon_rnn_golden.npz")


def rnn_cases(mx):
    """name -> (block factory, input shape (T/N per layout), kind)."""
    rnn = mx.gluon.rnn

    def bi_cell():
        return rnn.BidirectionalCell(rnn.LSTMCell(3, prefix="l_"), rnn.GRUCell(3, prefix="r_"))

    def seq_cell():
        s = rnn.SequentialRNNCell()
        with s.name_scope():
            s.add(rnn.LSTMCell(4))
            s.add(rnn.ResidualCell(rnn.GRUCell(4)))
            s.add(rnn.RNNCell(3, activation="relu"))
        return s

    def hseq_cell():
        s = rnn.HybridSequentialRNNCell()
        with s.name_scope():
            s.add(rnn.RNNCell(4))
            s.add(rnn.DropoutCell(0.0))
            s.add(rnn.LSTMCell(3))
        return s

    return [
        ("rnn_relu", lambda: rnn.RNN(4), "layer", "TNC", None),
        ("rnn_tanh_2l_ntc", lambda: rnn.RNN(4, num_layers=2, activation="tanh", layout="NTC"), "layer", "NTC", None),
        ("lstm", lambda: rnn.LSTM(3), "layer", "TNC", None),
        ("lstm_bi_2l", lambda: rnn.LSTM(3, num_layers=2, bidirectional=True), "layer", "TNC", "states"),
        ("lstm_ntc_states", lambda: rnn.LSTM(4, layout="NTC"), "layer", "NTC", "states"),
        ("gru", lambda: rnn.GRU(5), "layer", "TNC", None),
        ("gru_bi_ntc", lambda: rnn.GRU(3, bidirectional=True, layout="NTC"), "layer", "NTC", "states"),
        ("rnncell", lambda: rnn.RNNCell(4), "cell", "NTC", None),
        ("lstmcell", lambda: rnn.LSTMCell(4), "cell", "NTC", None),
        ("grucell_tnc", lambda: rnn.GRUCell(4), "cell", "TNC", None),
        ("lstmcell_valid", lambda: rnn.LSTMCell(3), "cell", "NTC", "valid"),
        ("bicell", bi_cell, "cell", "NTC", None),
        ("bicell_valid", bi_cell, "cell", "NTC", "valid"),
        ("seqcell", seq_cell, "cell", "NTC", None),
        ("seqcell_valid", seq_cell, "cell", "NTC", "valid"),
        ("hseqcell", hseq_cell, "cell", "TNC", None),
        ("residualcell", lambda: rnn.ResidualCell(rnn.GRUCell(5)), "cell", "NTC", None),
    ]


def run_cases(mx):
    out = {}
    T, N, C = 5, 3, 5
    for name, make, kind, layout, extra in rnn_cases(mx):
        rng = np.random.RandomState(sum(map(ord, name)))
        shape = (T, N, C) if layout == "TNC" else (N, T, C)
        x = mx.nd.array(rng.randn(*shape).astype("float32"))
        blk = make()
        blk.initialize()
        valid = mx.nd.array([5, 2, 3]) if extra == "valid" else None
        if kind == "layer":
            blk(x)
        else:
            blk.unroll(T, x, layout=layout, merge_outputs=True, valid_length=valid)
        params = blk.collect_params()
        for k in sorted(params.keys(), key=lambda n: n.split("_", 1)[-1]):
            params[k].set_data(mx.nd.array(rng.uniform(-0.5, 0.5, size=params[k].shape).astype("float32")))
        x.attach_grad()
        with mx.autograd.record():
            if kind == "layer":
                if extra == "states":
                    states = [mx.nd.array(rng.randn(*s.shape).astype("float32")) for s in blk.begin_state(N)]
                    y, new_states = blk(x, states)
                else:
                    y, new_states = blk(x), []
            else:
                y, new_states = blk.unroll(T, x, layout=layout, merge_outputs=True, valid_length=valid)
            loss = (y * mx.nd.array(rng.randn(*y.shape).astype("float32"))).sum()
            for s in new_states:
                loss = loss + (s * mx.nd.array(rng.randn(*s.shape).astype("float32"))).sum()
        loss.backward()
        out[name + "/out"] = y.asnumpy()
        for i, s in enumerate(new_states):
            out[name + "/state%d" % i] = s.asnumpy()
        out[name + "/dx"] = x.grad.asnumpy()
        for k in params.keys():
            out[name + "/d_" + k.split("_", 1)[-1]] = params[k].grad().asnumpy()
    return out


def test_rnn_match_mxnet():
    import oxnet as mx

    golden = np.load(GOLDEN)
    ours = run_cases(mx)
    assert sorted(golden.files) == sorted(ours)
    for k in golden.files:
        assert ours[k].shape == golden[k].shape, (k, ours[k].shape, golden[k].shape)
        np.testing.assert_allclose(ours[k], golden[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_rnn_layer_names_and_shapes():
    import pytest

    import oxnet as mx

    layer = mx.gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, prefix="lstm_")
    assert sorted(layer.collect_params().keys())[:4] == ["lstm_l0_h2h_bias", "lstm_l0_h2h_weight",
                                                         "lstm_l0_i2h_bias", "lstm_l0_i2h_weight"]
    layer.initialize()
    x = mx.nd.ones((6, 2, 3))
    y = layer(x)
    assert y.shape == (6, 2, 8)
    assert layer.l0_i2h_weight.shape == (16, 3) and layer.l1_i2h_weight.shape == (16, 8)
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(4, 2, 4), (4, 2, 4)]
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(x, [mx.nd.zeros((4, 3, 4)), mx.nd.zeros((4, 3, 4))])
    with pytest.raises(NotImplementedError):
        mx.gluon.rnn.BidirectionalCell(mx.gluon.rnn.RNNCell(2), mx.gluon.rnn.RNNCell(2))(x, [])
    cell = mx.gluon.rnn.LSTMCell(3)
    cell.initialize()
    outs, st = cell.unroll(6, x, layout="TNC", merge_outputs=False)
    assert len(outs) == 6 and outs[0].shape == (2, 3) and len(st) == 2


def test_save_load_rnn_layer(tmp_path):
    import oxnet as mx

    a = mx.gluon.rnn.GRU(3, bidirectional=True, input_size=2)
    a.initialize()
    f = str(tmp_path / "gru.params")
    a.save_parameters(f)
    keys = sorted(mx.nd.load(f).keys())
    assert "_unfused.0.l_cell.i2h_weight" in keys and "_unfused.0.r_cell.h2h_bias" in keys
    b = mx.gluon.rnn.GRU(3, bidirectional=True, input_size=2)
    b.load_parameters(f)
    x = mx.nd.ones((4, 2, 2))
    np.testing.assert_allclose(a(x).asnumpy(), b(x).asnumpy(), rtol=1e-6)


if __name__ == "__main__":
    np.savez(sys.argv[2], **run_cases(__import__(sys.argv[1])))


def _lstmp_stack(mx, bi, nl):
    gluon = mx.gluon
    stack = gluon.rnn.HybridSequentialRNNCell(prefix="lstm0_")
    with stack.name_scope():
        for i in range(nl):
            if bi:
                stack.add(gluon.rnn.BidirectionalCell(gluon.contrib.rnn.LSTMPCell(5, 3, prefix="l%d_" % i),
                                                      gluon.contrib.rnn.LSTMPCell(5, 3, prefix="r%d_" % i)))
            else:
                stack.add(gluon.contrib.rnn.LSTMPCell(5, 3, prefix="l%d_" % i))
    return stack


def test_lstmp_cells_and_projected_lstm_layer():
    # tests/data/gluon_lstmp_golden.npz: MXNet 1.9.1's LSTMPCell stacks (uniform(-0.5, 0.5) parameters
    # drawn in sorted-name order from RandomState(nl + 10 * bi)), outputs 'y' and flattened states 's'
    import oxnet as mx

    golden = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "gluon_lstmp_golden.npz"))
    for bi in (False, True):
        for nl in (1, 2):
            rng = np.random.RandomState(nl + 10 * bi)
            x = mx.nd.array(rng.rand(3, 2, 4).astype("float32"))
            stack = _lstmp_stack(mx, bi, nl)
            stack.initialize()
            stack.unroll(3, x, layout="TNC", merge_outputs=True)
            for k in sorted(stack.collect_params().keys()):
                p = stack.collect_params()[k]
                p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape).astype("float32")))
            y, st = stack.unroll(3, x, layout="TNC", merge_outputs=True)
            key = "%d%d" % (bi, nl)
            np.testing.assert_allclose(y.asnumpy(), golden[key + "/y"], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.concatenate([s.asnumpy().ravel() for s in st]), golden[key + "/s"],
                                       rtol=1e-5, atol=1e-6)
            # the fused layer with projection_size computes the same
            fused = mx.gluon.rnn.LSTM(5, projection_size=3, num_layers=nl, bidirectional=bi, prefix="lstm0_")
            fused.initialize()
            begin = fused.begin_state(2)
            assert [b.shape for b in begin] == [(nl * (1 + bi), 2, 3), (nl * (1 + bi), 2, 5)]
            fused(x, begin)
            for k, p in fused.collect_params().items():
                p.set_data(stack.collect_params()[k].data())
            fy, fstates = fused(x, begin)
            np.testing.assert_allclose(fy.asnumpy(), y.asnumpy(), rtol=1e-5, atol=1e-6)
            assert fstates[0].shape == (nl * (1 + bi), 2, 3) and fstates[1].shape == (nl * (1 + bi), 2, 5)


def test_variational_dropout_cell():
    import oxnet as mx

    cell = mx.gluon.contrib.rnn.VariationalDropoutCell(mx.gluon.rnn.GRUCell(4), drop_inputs=0.5, drop_outputs=0.5)
    cell.initialize()
    x = mx.nd.ones((2, 6, 3))
    with mx.autograd.record():
        out, states = cell.unroll(6, x, merge_outputs=True)
    o = out.asnumpy()
    # one output mask per sequence: a dropped unit is zero at every step
    dropped = (o == 0).all(axis=1)
    assert dropped.any() and ((o == 0).any(axis=1) == dropped).all()
    # inference: no dropout
    out2, _ = cell.unroll(6, x, merge_outputs=True)
    assert (out2.asnumpy() != 0).all()
