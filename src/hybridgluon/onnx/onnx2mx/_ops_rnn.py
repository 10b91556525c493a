"""Converters of ONNX's recurrent layers (LSTM, GRU, RNN) to the fused RNN op.

ONNX gives each direction's input and recurrent weights with the gates in its own order
(LSTM: i, o, f, c; GRU: z, r, h); MXNet's RNN op takes one flat vector, every weight matrix of
every direction first and then every bias, gates ordered i, f, c, o (LSTM) and r, z, n (GRU).
The weights must be constants: they are re-packed once, at import.
"""
import numpy as np

from ._registry import register

# position in ONNX's gate blocks of each of MXNet's gates
_GATES = {'LSTM': [0, 2, 3, 1], 'GRU': [1, 0, 2], 'RNN': [0]}
_MODES = {'Tanh': 'rnn_tanh', 'Relu': 'rnn_relu'}


def _reorder(w, order, hidden):
    return np.concatenate([w[g * hidden:(g + 1) * hidden] for g in order], axis=0)


def _packed(ctx, hidden, dirs, order):
    w, r = ctx.const(1, 'W'), ctx.const(2, 'R')
    b = ctx.const(3, 'B') if ctx.has(3) else np.zeros((dirs, 2 * len(order) * hidden), w.dtype)
    weights, biases = [], []
    n = len(order) * hidden
    for d in range(dirs):
        weights += [_reorder(w[d], order, hidden).reshape(-1),
                    _reorder(r[d], order, hidden).reshape(-1)]
        biases += [_reorder(b[d][:n], order, hidden), _reorder(b[d][n:], order, hidden)]
    return np.concatenate(weights + biases).astype(w.dtype)


def _zero_state(ctx, x, dirs, hidden):
    """Zeros of shape (dirs, batch, hidden) for a batch size that may be known only at run
    time: a slice of the input's zeros, broadcast."""
    z = ctx.op('zeros_like', ctx.op('slice', x, begin=(0, None, 0), end=(1, None, 1)))
    return ctx.op('broadcast_to', z, shape=(dirs, 0, hidden))


@register('LSTM', 'GRU', 'RNN')
def _rnn(ctx):
    a = ctx.attrs
    hidden = int(a['hidden_size'])
    direction = a.get('direction', 'forward')
    if direction not in ('forward', 'bidirectional'):
        ctx.fail("direction '%s' is not supported" % direction)
    dirs = 2 if direction == 'bidirectional' else 1
    if int(a.get('layout', 0)):
        ctx.fail('layout=1 (batch first) is not supported')
    if 'clip' in a or int(a.get('input_forget', 0)):
        ctx.fail('clip and input_forget are not supported')
    if ctx.op_type == 'LSTM' and ctx.has(7):
        ctx.fail('peephole weights (input P) are not supported')
    if ctx.op_type == 'GRU' and not int(a.get('linear_before_reset', 0)):
        ctx.fail('linear_before_reset=0 is not supported (MXNet runs cuDNN\'s GRU, which '
                 'applies the reset gate after the recurrent product)')
    acts = [s.lower() for s in a.get('activations', [])]
    default = {'LSTM': ['sigmoid', 'tanh', 'tanh'], 'GRU': ['sigmoid', 'tanh'],
               'RNN': ['tanh']}[ctx.op_type]
    mode = {'LSTM': 'lstm', 'GRU': 'gru'}.get(ctx.op_type)
    if ctx.op_type == 'RNN' and acts and acts[0] == 'relu':
        mode, default = 'rnn_relu', ['relu']
    mode = mode or 'rnn_tanh'
    if acts and acts != default * dirs and acts != default:
        ctx.fail('activations %s are not supported' % a['activations'])
    if ctx.has(4):
        seq = ctx.full_shape(0, 'sequence_lens must cover the whole sequence')[0]
        if not ctx.is_const(4) or np.any(ctx.const(4) != seq):
            ctx.fail('sequence_lens shorter than the sequence are not supported')
    # one packed vector per (W, R, B) triple: a W shared with another B packs differently
    params = ctx.graph.const_var(ctx.name + '_parameters',
                                 _packed(ctx, hidden, dirs, _GATES[ctx.op_type]),
                                 tuple(ctx.node.input[1:4]))
    x = ctx.sym(0)
    h0 = ctx.sym(5) if ctx.has(5) else _zero_state(ctx, x, dirs, hidden)
    args = [x, params, h0]
    if ctx.op_type == 'LSTM':
        args.append(ctx.sym(6) if ctx.has(6) else _zero_state(ctx, x, dirs, hidden))
    out = ctx.op('RNN', *args, state_size=hidden, num_layers=1, bidirectional=dirs == 2,
                 mode=mode, state_outputs=True)
    # (seq, batch, dirs * hidden) -> ONNX's Y (seq, dirs, batch, hidden)
    y = ctx.op('transpose', ctx.op('reshape', out[0], shape=(0, 0, dirs, hidden)),
               axes=(0, 2, 1, 3))
    outs = [y, out[1]]
    if ctx.op_type == 'LSTM':
        outs.append(out[2])
    return outs
