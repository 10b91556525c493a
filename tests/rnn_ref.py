"""A NumPy reference of MXNet's fused RNN operator (mode rnn_relu, rnn_tanh, lstm, gru), written
from the documented equations, for tests/test_ops_rnn.py and the fixture generator.

The flat parameter vector is MXNet's: every weight of every layer and direction first (per layer,
per direction: i2h (G*H, in), h2h (G*H, P or H), with a projection also h2r (P, H)), then every
bias (per layer, per direction: i2h (G*H,), h2h (G*H,)). Gates: LSTM i, f, g, o; GRU r, z, n with
the reset gate applied to (W_hn h + b_hn). Computed in float64 whatever the inputs' dtype.
"""
import numpy as np

GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}


def param_size(mode, input_size, H, L=1, bidirectional=False, projection_size=None):
    G, D, P = GATES[mode], 2 if bidirectional else 1, projection_size or None
    R = P or H
    n = 0
    for layer in range(L):
        ni = input_size if layer == 0 else D * R
        n += D * (G * H * ni + G * H * R + (P * H if P else 0) + 2 * G * H)
    return n


def unpack(params, mode, input_size, H, L=1, bidirectional=False, projection_size=None):
    """[(layer, dir) -> dict(wx, wh, wr, bx, bh)] in MXNet's order."""
    G, D, P = GATES[mode], 2 if bidirectional else 1, projection_size or None
    R = P or H
    p = np.asarray(params, dtype=np.float64)
    off = 0
    out = {}

    def take(*shape):
        nonlocal off
        size = int(np.prod(shape))
        a = p[off:off + size].reshape(shape)
        off += size
        return a

    for layer in range(L):
        ni = input_size if layer == 0 else D * R
        for d in range(D):
            out[layer, d] = {'wx': take(G * H, ni), 'wh': take(G * H, R),
                             'wr': take(P, H) if P else None}
    for layer in range(L):
        for d in range(D):
            out[layer, d]['bx'] = take(G * H)
            out[layer, d]['bh'] = take(G * H)
    assert off == p.size, (off, p.size)
    return out


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _cell(mode, w, x, h, c, clip):
    gx = x @ w['wx'].T + w['bx']
    gh = h @ w['wh'].T + w['bh']
    if mode == 'rnn_tanh':
        return np.tanh(gx + gh), None
    if mode == 'rnn_relu':
        return np.maximum(gx + gh, 0.0), None
    if mode == 'gru':
        xr, xz, xn = np.split(gx, 3, axis=1)
        hr, hz, hn = np.split(gh, 3, axis=1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1.0 - z) * n + z * h, None
    i, f, g, o = np.split(gx + gh, 4, axis=1)
    c = _sig(f) * c + _sig(i) * np.tanh(g)
    if clip is not None:
        c = np.clip(c, clip[0], clip[1])
    h = _sig(o) * np.tanh(c)
    if w['wr'] is not None:
        h = h @ w['wr'].T
    return h, c


def rnn(x, params, h0, c0=None, mode='lstm', state_size=None, num_layers=1,
        bidirectional=False, projection_size=None, sequence_length=None, clip=None):
    """(y, hy, cy or None) of the fused RNN on x (T, N, C) in layout TNC."""
    x = np.asarray(x, dtype=np.float64)
    T, N, ni = x.shape
    H, L, D = state_size, num_layers, 2 if bidirectional else 1
    w = unpack(params, mode, ni, H, L, bidirectional, projection_size)
    h0 = np.asarray(h0, dtype=np.float64)
    c0 = None if c0 is None else np.asarray(c0, dtype=np.float64)
    lens = np.full(N, T) if sequence_length is None else np.asarray(sequence_length).astype(int)
    hy, cy = np.zeros_like(h0), None if c0 is None else np.zeros_like(c0)
    inp = x
    for layer in range(L):
        outs = []
        for d in range(D):
            k = layer * D + d
            R = h0.shape[2]
            y = np.zeros((T, N, R))
            for b in range(N):
                h, c = h0[k, b:b + 1], None if c0 is None else c0[k, b:b + 1]
                steps = range(lens[b]) if d == 0 else range(lens[b] - 1, -1, -1)
                for t in steps:
                    h, c = _cell(mode, w[layer, d], inp[t, b:b + 1], h, c, clip)
                    y[t, b] = h[0]
                hy[k, b] = h[0]
                if c is not None:
                    cy[k, b] = c[0]
            outs.append(y)
        inp = np.concatenate(outs, axis=2)
    return inp, hy, cy
