"""Fixtures of the recurrent cells (gluon.rnn, gluon.contrib.rnn) from real MXNet 1.9.1:

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_rnn_cells_ref.py [--out DIR]

rnn_cells.npz holds, for every case of CASES: the inputs `<case>:x` (and `<case>:vl`, the
valid lengths, where the case has them), the parameters `<case>:p:<name>`, MXNet's unrolled
outputs `<case>:out` and final states `<case>:s<i>`, and the gradients of
sum(out * `<case>:w`) + sum_i sum(s_i) with respect to the input (`<case>:gx`) and every
parameter (`<case>:g:<name>`).

`legacy:*` keys are mx.rnn's (the legacy symbolic package): `legacy:unpack:<cfg>:<name>`, the
per-gate arrays FusedRNNCell.unpack_weights cuts from the vector 0, 1, 2, ... of FUSED_CFGS,
and `legacy:fusedinit:<cfg>`, that vector initialized by mx.init.FusedRNN(None) under the
global initializer Constant(0.5).

`build(mx, case)` makes a case's cell with the library it is given, so the test runs the very
same construction with hybridgluon (tests/test_gluon_rnn_cell.py imports this file; it imports
MXNet only when run as a script). Random streams are NumPy's, seeded per case: adding a case
changes no other.
"""
import argparse
import os
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (cell description, input shape, layout, with valid lengths)
CASES = {
    'rnn_tanh': ('rnn', (3, 4, 5), 'NTC', False),
    'rnn_relu': ('rnn_relu', (4, 3, 5), 'TNC', False),
    'lstm': ('lstm', (3, 4, 5), 'NTC', False),
    'lstm_softsign': ('lstm_softsign', (3, 4, 5), 'NTC', False),
    'gru': ('gru', (3, 4, 5), 'NTC', False),
    'lstm_valid': ('lstm', (3, 5, 4), 'NTC', True),
    'gru_valid_tnc': ('gru', (5, 3, 4), 'TNC', True),
    'bi_lstm': ('bi_lstm', (3, 4, 5), 'NTC', False),
    'bi_gru_valid': ('bi_gru', (5, 3, 4), 'TNC', True),
    'stack': ('stack', (3, 4, 5), 'NTC', False),
    'stack_valid': ('stack', (3, 4, 5), 'NTC', True),
    'lstmp': ('lstmp', (3, 4, 5), 'NTC', False),
    'conv1d_rnn': ('conv1d_rnn', (2, 3, 2, 6), 'NTC', False),
    'conv2d_lstm': ('conv2d_lstm', (2, 3, 2, 5, 5), 'NTC', False),
    'conv1d_gru': ('conv1d_gru', (2, 3, 2, 6), 'NTC', False),
    'conv3d_gru': ('conv3d_gru', (3, 2, 2, 4, 4, 3), 'TNC', False),
}


# name: (num_hidden, num_layers, mode, bidirectional, input size)
FUSED_CFGS = {
    'lstm_bi2': (3, 2, 'lstm', True, 4),
    'gru_1': (2, 1, 'gru', False, 5),
    'rnn_tanh_uni3': (2, 3, 'rnn_tanh', False, 3),
}


def fused_size(h, layers, mode, bi, ni):
    gates = {'lstm': 4, 'gru': 3}.get(mode, 1)
    d = 2 if bi else 1
    return (ni + h + 2) * h * gates * d + (layers - 1) * gates * h * (h + d * h + 2) * d


def legacy_arrays(mx):
    """The legacy `legacy:*` fixtures (see the module docstring)."""
    arrays = {}
    for cfg, (h, layers, mode, bi, ni) in FUSED_CFGS.items():
        n = fused_size(h, layers, mode, bi, ni)
        cell = mx.rnn.FusedRNNCell(h, num_layers=layers, mode=mode, bidirectional=bi,
                                   prefix='f_')
        vec = mx.nd.arange(n)
        for name, v in cell.unpack_weights({'f_parameters': vec}).items():
            arrays['legacy:unpack:%s:%s' % (cfg, name)] = v.asnumpy()
        arr = mx.nd.zeros((n,))
        # MXNet 1.9.1's FusedRNN cannot be rebuilt from its JSON with an inner initializer
        # (a registry lookup bug), so the weights take the global one, as Module.init_params
        # does it: the variable's __init__ attribute names FusedRNN
        fused = mx.init.FusedRNN(None, h, layers, mode, bi, forget_bias=2.5)
        mx.init.Constant(0.5)(mx.init.InitDesc('f_parameters', attrs={'__init__': fused.dumps()}),
                       arr)
        arrays['legacy:fusedinit:%s' % cfg] = arr.asnumpy()
    return arrays


def build(mx, case):
    """The cell of `case`, built with the library `mx` (MXNet or hybridgluon)."""
    rnn, crnn = mx.gluon.rnn, mx.gluon.contrib.rnn
    kind = CASES[case][0]
    if kind == 'rnn':
        return rnn.RNNCell(6, prefix='rnn_')
    if kind == 'rnn_relu':
        return rnn.RNNCell(6, activation='relu', prefix='rnn_')
    if kind == 'lstm':
        return rnn.LSTMCell(6, prefix='lstm_')
    if kind == 'lstm_softsign':
        return rnn.LSTMCell(6, activation='softsign', recurrent_activation='tanh',
                            prefix='lstm_')
    if kind == 'gru':
        return rnn.GRUCell(6, prefix='gru_')
    if kind == 'bi_lstm':
        return rnn.BidirectionalCell(rnn.LSTMCell(6, prefix='l_'), rnn.LSTMCell(6, prefix='r_'))
    if kind == 'bi_gru':
        return rnn.BidirectionalCell(rnn.GRUCell(6, prefix='l_'), rnn.GRUCell(6, prefix='r_'))
    if kind == 'stack':
        stack = rnn.HybridSequentialRNNCell(prefix='stack_')
        with stack.name_scope():
            stack.add(rnn.LSTMCell(5, prefix='l0_'))
            stack.add(rnn.ResidualCell(rnn.GRUCell(5, prefix='l1_')))
            stack.add(rnn.RNNCell(4, prefix='l2_'))
        return stack
    if kind == 'lstmp':
        return crnn.LSTMPCell(6, 3, prefix='lstmp_')
    if kind == 'conv1d_rnn':
        return crnn.Conv1DRNNCell((2, 6), 3, 3, 3, i2h_pad=1, prefix='c_')
    if kind == 'conv2d_lstm':
        return crnn.Conv2DLSTMCell((2, 5, 5), 3, (3, 3), (3, 3), prefix='c_')
    if kind == 'conv1d_gru':
        return crnn.Conv1DGRUCell((2, 6), 3, 3, 5, h2h_dilate=2, prefix='c_')
    if kind == 'conv3d_gru':
        return crnn.Conv3DGRUCell((2, 4, 4, 3), 2, 3, 3, i2h_pad=(1, 1, 1), prefix='c_')
    raise KeyError(case)


def case_data(case, param_shapes):
    """Inputs, valid lengths, parameters and the output weight of `case` (NumPy, seeded)."""
    _, shape, layout, with_valid = CASES[case]
    rng = np.random.RandomState(zlib.crc32(case.encode()))
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    batch = shape[layout.find('N')]
    length = shape[layout.find('T')]
    vl = rng.randint(1, length + 1, batch).astype(np.float32) if with_valid else None
    if vl is not None:
        vl[0] = length  # one full-length sequence
    params = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
              for n, s in sorted(param_shapes.items())}
    return x, vl, params, rng


def run(mx, case, x, vl, params, w=None):
    """Unrolls the case's cell (with `params`) in `mx`: (out, states, grads of x, grads of the
    parameters), the gradients of sum(out * w) + sum(states) when `w` is given."""
    _, shape, layout, _ = CASES[case]
    cell = build(mx, case)
    cell.initialize()
    length = shape[layout.find('T')]
    xs = mx.nd.array(x)
    batch = shape[layout.find('N')]
    cell.unroll(length, xs, layout=layout, merge_outputs=True)  # decide deferred shapes
    pd = cell.collect_params()
    for n, v in params.items():
        pd[n].set_data(mx.nd.array(v))
    xs.attach_grad()
    kw = {} if vl is None else {'valid_length': mx.nd.array(vl)}
    with mx.autograd.record():
        out, states = cell.unroll(length, xs, layout=layout, merge_outputs=True,
                                  begin_state=cell.begin_state(batch_size=batch, func=mx.nd.zeros),
                                  **kw)
        if w is not None:
            loss = (out * mx.nd.array(w)).sum()
            for s in states:
                loss = loss + s.sum()
    grads = {}
    gx = None
    if w is not None:
        loss.backward()
        gx = xs.grad.asnumpy()
        grads = {n: p.grad().asnumpy() for n, p in pd.items()}
    return out.asnumpy(), [s.asnumpy() for s in states], gx, grads


def param_shapes(mx, case):
    _, shape, layout, _ = CASES[case]
    cell = build(mx, case)
    cell.initialize()
    cell.unroll(shape[layout.find('T')], mx.nd.zeros(shape), layout=layout,
                merge_outputs=True)
    return {n: p.shape for n, p in cell.collect_params().items()}


def main():
    import mxnet as mx
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default=HERE)
    args = ap.parse_args()
    arrays = {}
    for case in CASES:
        x, vl, params, rng = case_data(case, param_shapes(mx, case))
        out0, _, _, _ = run(mx, case, x, vl, params)
        w = rng.uniform(-1, 1, out0.shape).astype(np.float32)
        out, states, gx, grads = run(mx, case, x, vl, params, w)
        arrays['%s:x' % case] = x
        if vl is not None:
            arrays['%s:vl' % case] = vl
        arrays['%s:w' % case] = w
        for n, v in params.items():
            arrays['%s:p:%s' % (case, n)] = v
            arrays['%s:g:%s' % (case, n)] = grads[n]
        arrays['%s:out' % case] = out
        for i, s in enumerate(states):
            arrays['%s:s%d' % (case, i)] = s
        arrays['%s:gx' % case] = gx
    arrays.update(legacy_arrays(mx))
    path = os.path.join(args.out, 'rnn_cells.npz')
    np.savez_compressed(path, **arrays)
    print('wrote %s (%d cases)' % (path, len(CASES)))


if __name__ == '__main__':
    main()
