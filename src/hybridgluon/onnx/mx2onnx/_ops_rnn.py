"""ONNX converter of the fused RNN op (vanilla RNN, LSTM, GRU; stacked, bidirectional).

MXNet keeps every layer's weights in one flat vector: all i2h/h2h weights (layer by layer,
forward then backward direction), then all biases in the same order, gates stacked as
LSTM (i, f, g, o) and GRU (r, z, n). ONNX wants per-layer W (dirs, gates*H, in),
R (dirs, gates*H, H) and B (dirs, 2*gates*H) with LSTM gates (i, o, f, c) and GRU (z, r, h).
The slicing and gate reordering are graph nodes over the parameter input, which ONNX
runtimes fold once at load time.
"""
from ._builder import converter

_GATES = {'lstm': 4, 'gru': 3, 'rnn_tanh': 1, 'rnn_relu': 1}
# ONNX gate k comes from MXNet gate _ORDER[mode][k].
_ORDER = {'lstm': [0, 3, 1, 2], 'gru': [1, 0, 2], 'rnn_tanh': [0], 'rnn_relu': [0]}


def _block(b, flat, offset, gates, hidden, cols, order):
    """flat[offset : offset + gates*hidden*cols] as (1, gates*hidden, cols) in ONNX's gate
    order (cols=None: a bias, (1, gates*hidden))."""
    size = gates * hidden * (cols or 1)
    part = b.slice(flat, [offset], [offset + size], [0])
    part = b.reshape(part, [gates, hidden] + ([cols] if cols else []))
    if order != list(range(gates)):
        part = b.add('Gather', [part, b.i64(order)], axis=0)
    return b.reshape(part, [1, gates * hidden] + ([cols] if cols else [])), size


def _fill_zero(n, k):
    """Input k is absent or a zeros generator (ONNX's default initial state)."""
    return k >= len(n.inputs) or n.in_fills[k] == 0.0


@converter('RNN')
def _rnn(b, n):
    mode = n.attrs.str('mode')
    if mode not in _GATES:
        n.unsupported('mode', mode)
    for attr in ('projection_size', 'lstm_state_clip_min', 'lstm_state_clip_max'):
        if n.attrs.has(attr):
            n.unsupported(attr, n.attrs.get(attr))
    if n.attrs.bool('use_sequence_length'):
        n.unsupported('use_sequence_length', True)
    hidden, layers = n.attrs.int('state_size'), n.attrs.int('num_layers')
    dirs = 2 if n.attrs.bool('bidirectional') else 1
    gates, order = _GATES[mode], _ORDER[mode]
    x, flat = n.inputs[0], n.inputs[1]
    in_size = n.in_shapes[0][2]
    lstm = mode == 'lstm'
    # Offsets of each (layer, direction)'s weights, then of its biases.
    w_off, offset = [], 0
    for layer in range(layers):
        cols = in_size if layer == 0 else dirs * hidden
        for _ in range(dirs):
            w_off.append((offset, cols))
            offset += gates * hidden * (cols + hidden)
    hs, cs = [], []
    for layer in range(layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            k = layer * dirs + d
            off, cols = w_off[k]
            w, size = _block(b, flat, off, gates, hidden, cols, order)
            r, _ = _block(b, flat, off + size, gates, hidden, hidden, order)
            boff = offset + k * 2 * gates * hidden
            bi, bsize = _block(b, flat, boff, gates, hidden, None, order)
            bh, _ = _block(b, flat, boff + bsize, gates, hidden, None, order)
            ws.append(w)
            rs.append(r)
            bs.append(b.add('Concat', [bi, bh], axis=1))
        cat = (lambda t: t[0] if dirs == 1 else b.add('Concat', t, axis=0))
        ins = [x, cat(ws), cat(rs), cat(bs), '']
        lo, hi = layer * dirs, (layer + 1) * dirs
        ins.append('' if _fill_zero(n, 2) else b.slice(n.inputs[2], [lo], [hi], [0]))
        if lstm:
            ins.append('' if _fill_zero(n, 3) else b.slice(n.inputs[3], [lo], [hi], [0]))
        while ins and ins[-1] == '':
            ins.pop()
        attrs = dict(hidden_size=hidden,
                     direction='bidirectional' if dirs == 2 else 'forward')
        if mode == 'gru':
            attrs['linear_before_reset'] = 1
        if mode.startswith('rnn_'):
            attrs['activations'] = ['Relu' if mode == 'rnn_relu' else 'Tanh'] * dirs
        outs = b.add({'lstm': 'LSTM', 'gru': 'GRU'}.get(mode, 'RNN'), ins,
                     n_out=3 if lstm else 2, **attrs)
        y = outs[0]                                  # (T, dirs, N, H)
        y = b.add('Transpose', [y], perm=[0, 2, 1, 3])
        x = b.reshape(y, [0, 0, -1])                 # (T, N, dirs * H)
        hs.append(outs[1])
        if lstm:
            cs.append(outs[2])
    result = [x]
    if n.attrs.bool('state_outputs'):
        result.append(hs[0] if layers == 1 else b.add('Concat', hs, axis=0))
        if lstm:
            result.append(cs[0] if layers == 1 else b.add('Concat', cs, axis=0))
    return result
