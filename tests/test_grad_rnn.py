"""Gradients of the fused RNN op (its _backward_RNN: BPTT in C) against float64 central finite
differences, wrt data, parameters and initial states, for every mode and the options that
change the backward (layers, directions, projection, sequence lengths, clipping, outputs
without state outputs). MXNet's own gradients: the RNN fixtures of test_mxnet_conformance.py."""
import numpy as np
import pytest

import hybridgluon as mx
import rnn_ref
from gradcheck import check_grad

OPS_COVERED = ['_backward_RNN']
GRADS_COVERED = ['RNN', '_rnn_param_concat']


def _case(rng, mode, T, N, I, H, L=1, bi=False, P=None, seq=None, clip=None, so=True):
    D, R = (2 if bi else 1), (P or H)
    xs = [rng.uniform(-1, 1, (T, N, I)),
          rng.uniform(-0.5, 0.5, rnn_ref.param_size(mode, I, H, L, bi, P)),
          rng.uniform(-1, 1, (L * D, N, R))]
    if mode == 'lstm':
        xs.append(rng.uniform(-1, 1, (L * D, N, H)))
    attrs = dict(state_size=H, num_layers=L, bidirectional=bi, mode=mode, state_outputs=so)
    wrt = list(range(len(xs)))
    if P:
        attrs['projection_size'] = P
    if seq is not None:
        xs.append(np.array(seq, dtype=np.float64))
        attrs['use_sequence_length'] = True
    if clip is not None:
        attrs.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    return xs, attrs, wrt


@pytest.mark.parametrize('mode', ['rnn_relu', 'rnn_tanh', 'lstm', 'gru'])
@pytest.mark.parametrize('L,bi,so', [(1, False, False), (2, True, True), (3, False, True)])
def test_rnn_grad(mode, L, bi, so):
    rng = np.random.default_rng(L * 10 + bi)
    xs, attrs, wrt = _case(rng, mode, 3, 2, 3, 4, L, bi, so=so)
    check_grad('RNN', xs, attrs=attrs, wrt=wrt)


@pytest.mark.parametrize('L,bi', [(1, False), (2, True)])
def test_lstm_projection_grad(L, bi):
    xs, attrs, wrt = _case(np.random.default_rng(2), 'lstm', 3, 2, 3, 4, L, bi, P=2)
    check_grad('RNN', xs, attrs=attrs, wrt=wrt)


@pytest.mark.parametrize('mode', ['rnn_tanh', 'lstm', 'gru'])
def test_sequence_length_grad(mode):
    xs, attrs, wrt = _case(np.random.default_rng(3), mode, 4, 3, 3, 4, 2, True, seq=[2, 4, 1])
    check_grad('RNN', xs, attrs=attrs, wrt=wrt)


def test_lstm_clip_grad():
    """Clipped cell states pass no gradient to the pre-clip value."""
    xs, attrs, wrt = _case(np.random.default_rng(4), 'lstm', 4, 2, 3, 4, clip=(-0.35, 0.3))
    xs[1] *= 3
    y = mx.nd.RNN(*[mx.nd.array(x, dtype=x.dtype) for x in xs], **attrs)[2].asnumpy()
    assert (np.abs(y - 0.3) < 1e-12).any() or (np.abs(y + 0.35) < 1e-12).any()
    check_grad('RNN', xs, attrs=attrs, wrt=wrt)


def test_grad_imperative_tape_matches_symbolic():
    """autograd.record + backward (the tape) and a hybridized graph give the same gradients."""
    rng = np.random.default_rng(5)
    xs, attrs, _ = _case(rng, 'lstm', 5, 3, 4, 6, 2, True)
    arrs = [mx.nd.array(x) for x in xs]
    for a in arrs:
        a.attach_grad()
    dy = rng.standard_normal((5, 3, 12))
    with mx.autograd.record():
        out = mx.nd.RNN(*arrs, **attrs)
    out[0].backward(mx.nd.array(dy))
    tape = [a.grad.asnumpy() for a in arrs]
    from gradcheck import symbolic_grad
    heads = [dy, np.zeros((4, 3, 6)), np.zeros((4, 3, 6))]
    sym = symbolic_grad('RNN', [x.astype(np.float32) for x in xs], attrs, [0, 1, 2, 3], heads)
    for t, s in zip(tape, sym):
        np.testing.assert_allclose(t, s, rtol=1e-5, atol=1e-6)


def test_rnn_param_concat_grad():
    rng = np.random.default_rng(6)
    check_grad('_rnn_param_concat', [rng.standard_normal(4), rng.standard_normal(7),
                                     rng.standard_normal(2)], attrs={'dim': 0, 'num_args': 3})
