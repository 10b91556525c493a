"""Op cases of the fused RNN op for the conformance fixtures (helper rnnop's, own seed): every
mode, one and two layers, both directions, LSTM projection, float32 and float64, with and
without state outputs, and empty / single-row edge cases; gradients wrt data, parameters and
states. Not here: sequence_length and LSTM cell clipping, which MXNet 1.9.1's CPU kernel
ignores (tests/test_ops_rnn.py checks them against the NumPy reference), dropout (random) and
the projection's gradient (MXNet's CPU has none; finite differences check ours).
"""
import os
import sys

import numpy as np

from op_cases import C

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rnn_ref  # noqa: E402


def build_rnn_cases(seed=20261127):
    rng = np.random.default_rng(seed)
    out = []

    def case(mode, T, N, I, H, L=1, bi=False, P=None, dtype='float32', so=True):
        D, R = (2 if bi else 1), (P or H)
        n = rnn_ref.param_size(mode, I, H, L, bi, P)
        xs = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-0.4, 0.4, n),
              rng.uniform(-1, 1, (L * D, N, R))]
        if mode == 'lstm':
            xs.append(rng.uniform(-1, 1, (L * D, N, H)))
        attrs = {'state_size': H, 'num_layers': L, 'mode': mode, 'bidirectional': bi,
                 'state_outputs': so}
        if P:
            attrs['projection_size'] = P
        # MXNet's CPU RNN has no backward for a projection: forward only there.
        out.append(C('RNN', [x.astype(dtype) for x in xs], attrs, grad=not P,
                     note='MXNet CPU: no projection backward' if P else ''))

    for mode in ('rnn_relu', 'rnn_tanh', 'lstm', 'gru'):
        case(mode, 5, 3, 4, 6)
        # float32 for rnn_relu: MXNet's float64 rnn_relu in training rounds to float32
        # somewhere (4e-8 off the float64 result, which ours and NumPy agree on to 1e-16).
        case(mode, 4, 2, 3, 5, L=2, bi=True, dtype='float32' if mode == 'rnn_relu' else 'float64')
        case(mode, 3, 1, 5, 4, L=2, so=False)
    case('lstm', 4, 3, 5, 6, P=3, dtype='float64')
    case('lstm', 3, 2, 4, 5, L=2, bi=True, P=2, dtype='float64')
    case('gru', 6, 4, 8, 7, bi=True)
    case('lstm', 1, 1, 3, 4, L=2, bi=True, dtype='float64')
    # _rnn_param_concat: Concat's arithmetic (its difference is in shape inference).
    out.append(C('_rnn_param_concat', [rng.uniform(-1, 1, 6).astype('float32'),
                                       rng.uniform(-1, 1, 4).astype('float32'),
                                       rng.uniform(-1, 1, 3).astype('float32')],
                 {'dim': 0, 'num_args': 3}))
    out.append(C('_rnn_param_concat', [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 5))],
                 {'dim': 1, 'num_args': 2}))
    return out
