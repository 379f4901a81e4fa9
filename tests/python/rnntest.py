"""NumPy reference of MXNet 1.9.1's fused RNN operator (no oxnet import, so
the same code can be run next to real MXNet).

Parameter layout: for each layer, each direction: i2h weight (G*H, in), h2h
weight (G*H, H); then for each layer, each direction: i2h bias (G*H), h2h
bias (G*H). Gates: lstm i, f, g, o; gru r, z, n (cuDNN's GRU: the reset gate
multiplies the h2h product plus its bias)."""
import numpy as np

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def n_params(mode, input_size, state_size, num_layers, bidirectional=False):
    g, h, d = GATES[mode], state_size, 2 if bidirectional else 1
    return sum(d * (g * h * (input_size if layer == 0 else d * h) + g * h * h + 2 * g * h)
               for layer in range(num_layers))


def _sig(x):
    return 1 / (1 + np.exp(-x))


def unpack(params, mode, input_size, state_size, num_layers, bidirectional=False):
    """[(wx, wh, bx, bh)] per (layer, direction)."""
    g, h, d = GATES[mode], state_size, 2 if bidirectional else 1
    ws, off = [], 0
    for layer in range(num_layers):
        inp = input_size if layer == 0 else d * h
        for _ in range(d):
            wx = params[off:off + g * h * inp].reshape(g * h, inp)
            off += g * h * inp
            wh = params[off:off + g * h * h].reshape(g * h, h)
            off += g * h * h
            ws.append([wx, wh])
    for k in range(num_layers * d):
        ws[k] += [params[off:off + g * h], params[off + g * h:off + 2 * g * h]]
        off += 2 * g * h
    assert off == params.size
    return ws


def rnn_ref(data, parameters, state, *rest, state_size, num_layers, mode, bidirectional=False,
            state_outputs=False, use_sequence_length=False, p=0.0):
    """Forward of RNN in float64: out, [hy, [cy]]. With use_sequence_length the
    steps at or past a sequence's length output zeros and keep the state."""
    rest = list(rest)
    cell = rest.pop(0) if mode == "lstm" else None
    lens = rest.pop(0) if use_sequence_length else None
    t_len, n, input_size = data.shape
    h, d = state_size, 2 if bidirectional else 1
    lens = np.full(n, t_len) if lens is None else np.clip(np.asarray(lens).astype(np.int64), 0, t_len)
    ws = unpack(parameters.astype(np.float64), mode, input_size, h, num_layers, bidirectional)
    hy, cy = np.zeros(state.shape), np.zeros(state.shape)
    x = data.astype(np.float64)
    for layer in range(num_layers):
        out = np.zeros((t_len, n, d * h))
        for dr in range(d):
            s = layer * d + dr
            wx, wh, bx, bh = ws[s]
            hs = state[s].astype(np.float64).copy()
            cs = cell[s].astype(np.float64).copy() if cell is not None else None
            for t in (range(t_len) if dr == 0 else reversed(range(t_len))):
                valid = (t < lens)[:, None]
                a = x[t] @ wx.T + bx
                r = hs @ wh.T + bh
                if mode in ("rnn_relu", "rnn_tanh"):
                    z = a + r
                    new = np.tanh(z) if mode == "rnn_tanh" else np.maximum(z, 0)
                elif mode == "lstm":
                    z = a + r
                    i, f, gg, o = (z[:, k * h:(k + 1) * h] for k in range(4))
                    c = _sig(f) * cs + _sig(i) * np.tanh(gg)
                    new = _sig(o) * np.tanh(c)
                    cs = np.where(valid, c, cs)
                else:
                    rg = _sig(a[:, :h] + r[:, :h])
                    zg = _sig(a[:, h:2 * h] + r[:, h:2 * h])
                    ng = np.tanh(a[:, 2 * h:] + rg * r[:, 2 * h:])
                    new = (1 - zg) * ng + zg * hs
                hs = np.where(valid, new, hs)
                out[t, :, dr * h:(dr + 1) * h] = np.where(valid, new, 0)
            hy[s] = hs
            if cs is not None:
                cy[s] = cs
        x = out
    if not state_outputs:
        return x
    return [x, hy, cy] if mode == "lstm" else [x, hy]
