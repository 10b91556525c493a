"""The fused RNN op against the NumPy reference (tests/rnn_ref.py): every mode, layers,
directions, projection, sequence lengths, cell clipping, float32 and float64, empty and
single-row edge cases; shape inference of the parameter vector; dropout; clear errors.
Real MXNet's numbers: tests/mxnet_ref/op_cases_rnn.py (test_mxnet_conformance.py); gradients
against finite differences: tests/test_grad_rnn.py."""
import numpy as np
import pytest

import hybridgluon as mx
import rnn_ref

OPS_COVERED = ['RNN', '_rnn_param_concat']

MODES = ['rnn_relu', 'rnn_tanh', 'lstm', 'gru']


def _inputs(rng, mode, T, N, I, H, L=1, bi=False, P=None, dtype='float32'):
    D, R = (2 if bi else 1), (P or H)
    xs = [rng.uniform(-1, 1, (T, N, I)),
          rng.uniform(-0.5, 0.5, rnn_ref.param_size(mode, I, H, L, bi, P)),
          rng.uniform(-1, 1, (L * D, N, R))]
    if mode == 'lstm':
        xs.append(rng.uniform(-1, 1, (L * D, N, H)))
    return [x.astype(dtype) for x in xs]


def _run(xs, mode, H, L=1, bi=False, P=None, seq=None, clip=None, **extra):
    kw = dict(state_size=H, num_layers=L, bidirectional=bi, mode=mode, state_outputs=True)
    kw.update(extra)
    args = [mx.nd.array(x, dtype=x.dtype) for x in xs]
    if P:
        kw['projection_size'] = P
    if seq is not None:
        args.append(mx.nd.array(seq))
        kw['use_sequence_length'] = True
    if clip is not None:
        kw.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    out = mx.nd.RNN(*args, **kw)
    return [o.asnumpy() for o in out]


def _check(xs, mode, H, L=1, bi=False, P=None, seq=None, clip=None, tol=None):
    ours = _run(xs, mode, H, L, bi, P, seq, clip)
    ref = rnn_ref.rnn(xs[0], xs[1], xs[2], xs[3] if mode == 'lstm' else None, mode, H, L, bi,
                      P, seq, clip)
    ref = [r for r in ref if r is not None]
    assert len(ours) == len(ref)
    tol = tol or (1e-5 if xs[0].dtype == np.float32 else 1e-12)
    for o, r in zip(ours, ref):
        assert o.dtype == xs[0].dtype
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('shape,L,bi', [((5, 3, 4, 6), 1, False), ((4, 2, 3, 5), 2, True),
                                        ((3, 1, 7, 4), 3, False), ((1, 4, 2, 3), 1, True),
                                        ((6, 5, 16, 9), 2, False)])
def test_forward_matches_numpy(mode, dtype, shape, L, bi):
    rng = np.random.default_rng(hash((mode, dtype, shape, L, bi)) % 2**32)
    T, N, I, H = shape
    _check(_inputs(rng, mode, T, N, I, H, L, bi, dtype=dtype), mode, H, L, bi)


@pytest.mark.parametrize('L,bi', [(1, False), (2, True), (3, False)])
def test_lstm_projection(L, bi):
    rng = np.random.default_rng(3)
    xs = _inputs(rng, 'lstm', 4, 3, 5, 6, L, bi, P=3, dtype='float64')
    _check(xs, 'lstm', 6, L, bi, P=3)
    y, hy, cy = _run(xs, 'lstm', 6, L, bi, P=3)
    assert y.shape == (4, 3, (2 if bi else 1) * 3) and hy.shape[2] == 3 and cy.shape[2] == 6


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('bi', [False, True])
def test_sequence_length(mode, bi):
    """cuDNN's semantics: steps past a row's length give zeros, the state stops there, the
    backward direction starts at the row's last valid step."""
    rng = np.random.default_rng(4)
    xs = _inputs(rng, mode, 5, 4, 3, 4, 2, bi, dtype='float64')
    seq = [3, 5, 1, 0]
    _check(xs, mode, 4, 2, bi, seq=seq)
    y = _run(xs, mode, 4, 2, bi, seq=seq)[0]
    assert np.all(y[3:, 0] == 0) and np.all(y[:, 3] == 0) and np.all(y[1:, 2] == 0)
    # A row of full length is the same as without lengths.
    full = _run(xs, mode, 4, 2, bi)[0]
    np.testing.assert_allclose(y[:, 1], full[:, 1], rtol=1e-12)


def test_sequence_length_integer_dtype_and_clamp():
    rng = np.random.default_rng(5)
    xs = _inputs(rng, 'gru', 4, 3, 3, 4, dtype='float64')
    args = [mx.nd.array(x, dtype=x.dtype) for x in xs]
    kw = dict(state_size=4, num_layers=1, mode='gru', use_sequence_length=True)
    a = mx.nd.RNN(*args, mx.nd.array([2, 9, 4], dtype='int32'), **kw).asnumpy()
    b = mx.nd.RNN(*args, mx.nd.array([2, 4, 4], dtype='float64'), **kw).asnumpy()
    np.testing.assert_array_equal(a, b)  # lengths past T are T


@pytest.mark.parametrize('clip_nan', [False, True])
def test_lstm_cell_clipping(clip_nan):
    rng = np.random.default_rng(6)
    xs = _inputs(rng, 'lstm', 5, 3, 4, 5, 2, True, dtype='float64')
    xs[1] *= 4  # large gates: the cell state leaves the range
    _check(xs, 'lstm', 5, 2, True, clip=(-0.4, 0.3))
    cy = _run(xs, 'lstm', 5, 2, True, clip=(-0.4, 0.3), lstm_state_clip_nan=clip_nan)[2]
    assert cy.min() >= -0.4 and cy.max() <= 0.3
    assert cy.min() == -0.4 and cy.max() == 0.3


@pytest.mark.parametrize('mode', MODES)
def test_empty_sequence_and_batch(mode):
    rng = np.random.default_rng(7)
    xs = _inputs(rng, mode, 0, 3, 4, 5, 2, True, dtype='float64')
    out = _run(xs, mode, 5, 2, True)
    assert out[0].shape == (0, 3, 10)
    np.testing.assert_array_equal(out[1], xs[2])  # no step: the states are the initial ones
    if mode == 'lstm':
        np.testing.assert_array_equal(out[2], xs[3])
    xs = _inputs(rng, mode, 3, 0, 4, 5, 1, False, dtype='float32')
    out = _run(xs, mode, 5)
    assert out[0].shape == (3, 0, 5) and out[1].shape == (1, 0, 5)


def test_visible_outputs_and_names():
    d = mx.sym.var('data')
    for mode, names in [('lstm', ['output', 'state_output', 'statecell_output']),
                        ('gru', ['output', 'state_output'])]:
        s = mx.sym.RNN(d, state_size=4, num_layers=2, mode=mode, state_outputs=True, name='r')
        assert s.list_outputs() == ['r_' + n for n in names]
        s = mx.sym.RNN(d, state_size=4, num_layers=2, mode=mode, name='r')
        assert s.list_outputs() == ['r_output']
    s = mx.sym.RNN(d, state_size=4, num_layers=1, mode='lstm', name='r')
    assert s.list_arguments() == ['data', 'r_parameters', 'r_state', 'r_state_cell']
    s = mx.sym.RNN(d, state_size=4, num_layers=1, mode='rnn_tanh', name='r')
    assert s.list_arguments() == ['data', 'r_parameters', 'r_state']


@pytest.mark.parametrize('mode,L,bi,P', [('lstm', 2, True, None), ('gru', 1, False, None),
                                         ('rnn_relu', 3, True, None), ('lstm', 2, True, 3)])
def test_infer_shape_fills_parameters(mode, L, bi, P):
    kw = dict(state_size=5, num_layers=L, mode=mode, bidirectional=bi, state_outputs=True)
    if P:
        kw['projection_size'] = P
    s = mx.sym.RNN(mx.sym.var('data'), name='r', **kw)
    args, outs, _ = s.infer_shape(data=(7, 3, 4))
    D, R = (2 if bi else 1), (P or 5)
    assert args[1] == (rnn_ref.param_size(mode, 4, 5, L, bi, P),)
    assert args[2] == (L * D, 3, R)
    assert outs[0] == (7, 3, D * R) and outs[1] == (L * D, 3, R)
    _, out_types, _ = s.infer_type(data='float64')
    assert all(t == np.float64 for t in out_types)


def test_dropout_between_layers():
    rng = np.random.default_rng(8)
    xs = _inputs(rng, 'lstm', 6, 4, 5, 8, 3, False, dtype='float32')
    args = [mx.nd.array(x) for x in xs]
    kw = dict(state_size=8, num_layers=3, mode='lstm', p=0.5)
    # Predict mode: no dropout, the NumPy result.
    np.testing.assert_allclose(mx.nd.RNN(*args, **kw).asnumpy(),
                               rnn_ref.rnn(xs[0], xs[1], xs[2], xs[3], 'lstm', 8, 3)[0],
                               rtol=1e-5, atol=1e-5)
    with mx.autograd.train_mode():
        mx.random.seed(11)
        a = mx.nd.RNN(*args, **kw).asnumpy()
        mx.random.seed(11)
        b = mx.nd.RNN(*args, **kw).asnumpy()
        c = mx.nd.RNN(*args, **kw).asnumpy()
    np.testing.assert_array_equal(a, b)  # the seed replays the masks
    assert np.abs(a - c).max() > 1e-3
    with mx.autograd.train_mode():  # one layer: nothing between layers to drop
        one = mx.nd.RNN(args[0], mx.nd.array(rnn_ref.param_size('gru', 5, 8) * [0.1]),
                        mx.nd.zeros((1, 4, 8)), state_size=8, num_layers=1, mode='gru', p=0.5)
    ref = rnn_ref.rnn(xs[0], np.full(rnn_ref.param_size('gru', 5, 8), 0.1),
                      np.zeros((1, 4, 8)), None, 'gru', 8, 1)[0]
    np.testing.assert_allclose(one.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_errors():
    x = mx.nd.ones((3, 2, 4))
    n = rnn_ref.param_size('lstm', 4, 5)
    good = [x, mx.nd.ones((n,)), mx.nd.zeros((1, 2, 5)), mx.nd.zeros((1, 2, 5))]
    with pytest.raises(mx.MXNetError, match='parameters must have shape'):
        mx.nd.RNN(x, mx.nd.ones((n + 1,)), *good[2:], state_size=5, num_layers=1, mode='lstm')
    with pytest.raises(mx.MXNetError, match='state must have shape'):
        mx.nd.RNN(*good[:2], mx.nd.zeros((2, 2, 5)), good[3], state_size=5, num_layers=1,
                  mode='lstm')
    with pytest.raises(mx.MXNetError, match='3-D'):
        mx.nd.RNN(mx.nd.ones((3, 4)), *good[1:], state_size=5, num_layers=1, mode='lstm')
    with pytest.raises(mx.MXNetError, match='float16'):
        mx.nd.RNN(*[a.astype('float16') for a in good], state_size=5, num_layers=1, mode='lstm')
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.nd.RNN(good[0], good[1].astype('float64'), *good[2:], state_size=5, num_layers=1,
                  mode='lstm')
    with pytest.raises(mx.MXNetError, match='projection_size'):
        mx.nd.RNN(*good[:3], state_size=5, num_layers=1, mode='gru', projection_size=2)
    with pytest.raises(mx.MXNetError, match='together'):
        mx.nd.RNN(*good, state_size=5, num_layers=1, mode='lstm', lstm_state_clip_min=-1)
    with pytest.raises(mx.MXNetError, match='dropout'):
        mx.nd.RNN(*good, state_size=5, num_layers=1, mode='lstm', p=1.5)
    with pytest.raises(mx.MXNetError, match='positive'):
        mx.nd.RNN(*good, state_size=0, num_layers=1, mode='lstm')
    with pytest.raises(mx.MXNetError, match='mode'):
        mx.nd.RNN(*good, state_size=5, num_layers=1, mode='peephole')


def test_rnn_param_concat_fills_one_unknown():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    s = mx.sym._internal._rnn_param_concat(a, b, dim=0, num_args=2)
    r = mx.sym.RNN(mx.sym.var('data'), s, state_size=3, num_layers=1, mode='rnn_tanh')
    n = rnn_ref.param_size('rnn_tanh', 4, 3)
    args, _, _ = r.infer_shape_partial(data=(2, 2, 4), a=(5,))
    assert dict(zip(r.list_arguments(), args))['b'] == (n - 5,)
    x, y = np.arange(5.0), np.arange(3.0) + 10
    out = mx.nd._internal._rnn_param_concat(mx.nd.array(x), mx.nd.array(y), dim=0, num_args=2)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate([x, y]))


def _gemm_lib():
    import ctypes
    import os
    h = ctypes.CDLL(os.path.join(os.path.dirname(mx.__file__), 'lib', 'libhybridgluon.so'))
    h.hg_gemm_set_kernel.argtypes = [ctypes.c_int]
    h.hg_gemm_set_kernel.restype = ctypes.c_int
    h.hg_gemm_kernel.restype = ctypes.c_int
    return h


@pytest.mark.parametrize('level', [0, 2, 3])  # BLAS, AVX2+FMA, AVX-512F
@pytest.mark.parametrize('mode,N,L,bi,P', [('lstm', 11, 2, True, None), ('gru', 20, 1, False, None),
                                           ('rnn_tanh', 9, 2, False, None),
                                           ('lstm', 13, 1, True, 3),
                                           # last row blocks of 4 (AVX2) / 6 and 7 (AVX-512)
                                           ('lstm', 16, 1, False, None),
                                           ('gru', 22, 1, True, None),
                                           ('rnn_tanh', 31, 1, False, None)])
def test_packed_recurrent_kernels(level, mode, N, L, bi, P):
    """float32 with more than 8 batch rows runs the recurrent products on packed weights
    (kernels/cpu/rnn_gemm.h, per instruction set): forward against NumPy, gradients against the
    float64 op (whose backward finite differences check)."""
    lib = _gemm_lib()
    before = lib.hg_gemm_kernel()
    if lib.hg_gemm_set_kernel(level) != level:
        lib.hg_gemm_set_kernel(before)
        pytest.skip('the CPU lacks this kernel set')
    try:
        rng = np.random.default_rng(N)
        xs = _inputs(rng, mode, 7, N, 5, 37, L, bi, P=P, dtype='float64')
        _check([x.astype(np.float32) for x in xs], mode, 37, L, bi, P, tol=2e-5)
        grads = []
        for dt in ('float64', 'float32'):
            arrs = [mx.nd.array(x, dtype=dt) for x in xs]
            for a in arrs:
                a.attach_grad()
            kw = dict(state_size=37, num_layers=L, bidirectional=bi, mode=mode,
                      state_outputs=True)
            if P:
                kw['projection_size'] = P
            with mx.autograd.record():
                out = mx.nd.RNN(*arrs, **kw)
                loss = sum((o * o).sum() for o in out)
            loss.backward()
            grads.append([a.grad.asnumpy() for a in arrs])
        for g64, g32 in zip(*grads):
            np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-4)
    finally:
        lib.hg_gemm_set_kernel(before)
