"""The fused gluon.rnn layers (RNN, LSTM, GRU): against the NumPy reference and real MXNet 1.9.1
(.params files saved by MXNet's save_parameters and its export, tests/mxnet_ref/rnn/, written by
gen_rnn_ref.py), imperative vs hybridized (outputs and gradients), layouts, states in and out,
deferred input size, sequence lengths, save/load names, export + SymbolBlock.imports, and the C
predictor running an exported LSTM."""
import ctypes
import json
import os

import numpy as np
import pytest

import hybridgluon as mx
import rnn_ref
from hybridgluon import gluon

REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref', 'rnn')


def _io():
    a = np.load(os.path.join(REF, 'io.npz'), allow_pickle=False)
    return json.loads(bytes(a['meta']).decode('utf-8')), a


def _flat(layer):
    """The layer's parameters joined in MXNet's order (the reference's input)."""
    names = [n for n in ['%s%d_%s_%s' % (d, l, g, t) for t in ('weight', 'bias')
                         for l in range(layer._num_layers) for d in 'lr'[:layer._dir]
                         for g in ('i2h', 'h2h', 'h2r')]
             if hasattr(layer, n)]
    return np.concatenate([getattr(layer, n).data().asnumpy().reshape(-1) for n in names])


def _reference(layer, x, states):
    """NumPy result of a layer (layout TNC input), with its parameters."""
    mode = layer._mode
    c0 = states[1] if mode == 'lstm' else None
    return rnn_ref.rnn(x, _flat(layer), states[0], c0, mode, layer._hidden_size,
                       layer._num_layers, layer._dir == 2, layer._projection_size)


@pytest.mark.parametrize('name', ['lstm_bi2', 'gru_ntc', 'rnn_relu2', 'rnn_tanh_bi', 'lstmp'])
@pytest.mark.parametrize('hybridize', [False, True])
def test_loads_mxnet_params_and_gives_mxnet_numbers(name, hybridize):
    meta, a = _io()
    m = meta[name]
    layer = getattr(gluon.rnn, m['class'])(prefix=name + '_', **m['kwargs'])
    layer.load_parameters(os.path.join(REF, name + '.params'))
    assert {k: list(v.shape) for k, v in layer.collect_params().items()} == m['params']
    if hybridize:
        layer.hybridize()
    x = mx.nd.array(a[name + '_x'])
    states = [mx.nd.array(a['%s_s%d' % (name, i)]) for i in range(m['nstates'])]
    out, new_states = layer(x, states)
    np.testing.assert_allclose(out.asnumpy(), a[name + '_y'], rtol=1e-5, atol=1e-6)
    for i, s in enumerate(new_states):
        np.testing.assert_allclose(s.asnumpy(), a['%s_hy%d' % (name, i)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('name', ['lstm_bi2', 'gru_ntc', 'lstmp'])
def test_imports_mxnet_export(name):
    meta, a = _io()
    net = gluon.SymbolBlock.imports(os.path.join(REF, name + '-symbol.json'),
                                    ['data0', 'data1', 'data2'][:1 + meta[name]['nstates']],
                                    os.path.join(REF, name + '-0000.params'))
    x = a[name + '_x']
    batch = x.shape[meta[name]['kwargs'].get('layout', 'TNC').find('N')]
    layer = getattr(gluon.rnn, meta[name]['class'])(**meta[name]['kwargs'])
    zeros = [mx.nd.zeros(s['shape']) for s in layer.state_info(batch)]
    y = net(mx.nd.array(x), *zeros)
    np.testing.assert_allclose(y.asnumpy(), a[name + '_y0'], rtol=1e-5, atol=1e-6)


def test_save_parameters_uses_mxnet_names(tmp_path):
    layer = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    layer.initialize()
    path = str(tmp_path / 'l.params')
    layer.save_parameters(path)
    assert set(mx.nd.load(path)) == {'_unfused.%d.%s_cell.%s_%s' % (l, d, g, t)
                                     for l in range(2) for d in 'lr' for g in ('i2h', 'h2h')
                                     for t in ('weight', 'bias')}
    other = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    other.load_parameters(path)
    for k, p in layer.collect_params().items():
        q = other.collect_params()[k.replace(layer.prefix, other.prefix)]
        np.testing.assert_array_equal(p.data().asnumpy(), q.data().asnumpy())
    g = gluon.rnn.GRU(4, input_size=3)
    g.initialize()
    g.save_parameters(path)
    assert set(mx.nd.load(path)) == {'_unfused.0.i2h_weight', '_unfused.0.h2h_weight',
                                     '_unfused.0.i2h_bias', '_unfused.0.h2h_bias'}


@pytest.mark.parametrize('cls,kw', [
    (gluon.rnn.RNN, {'num_layers': 2, 'activation': 'tanh'}),
    (gluon.rnn.RNN, {'bidirectional': True}),
    (gluon.rnn.LSTM, {'num_layers': 2, 'bidirectional': True}),
    (gluon.rnn.LSTM, {'projection_size': 3}),
    (gluon.rnn.GRU, {'num_layers': 3}),
    (gluon.rnn.GRU, {'bidirectional': True, 'layout': 'NTC'}),
])
def test_layer_matches_numpy_and_hybridized(cls, kw):
    rng = np.random.default_rng(1)
    layout = kw.get('layout', 'TNC')
    x = rng.uniform(-1, 1, (5, 3, 4) if layout == 'TNC' else (3, 5, 4)).astype(np.float32)
    outs, grads = [], []
    states = [mx.nd.array(rng.uniform(-1, 1, s['shape'])) for s in cls(6, **kw).state_info(3)]
    for hybridize in (False, True):
        mx.random.seed(7)
        layer = cls(6, **kw)
        layer.initialize(mx.init.Uniform(0.4))
        if hybridize:
            layer.hybridize()
        xa = mx.nd.array(x)
        xa.attach_grad()
        with mx.autograd.record():
            out, new_states = layer(xa, states)
            loss = (out * out).sum() + sum((s * s).sum() for s in new_states)
        loss.backward()
        xt = x if layout == 'TNC' else x.transpose(1, 0, 2)
        ref = _reference(layer, xt, [s.asnumpy() for s in states])
        y = out.asnumpy() if layout == 'TNC' else out.asnumpy().transpose(1, 0, 2)
        np.testing.assert_allclose(y, ref[0], rtol=1e-4, atol=1e-5)
        for s, r in zip(new_states, ref[1:]):
            np.testing.assert_allclose(s.asnumpy(), r, rtol=1e-4, atol=1e-5)
        outs.append(out.asnumpy())
        grads.append([xa.grad.asnumpy()] + [p.grad().asnumpy()
                                            for _, p in sorted(layer.collect_params().items(),
                                                               key=lambda kv: kv[0][-14:])])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-6)
    for g0, g1 in zip(*grads):
        np.testing.assert_allclose(g0, g1, rtol=1e-5, atol=1e-5)


def test_states_default_to_zeros_and_are_returned_only_when_given():
    layer = gluon.rnn.LSTM(5, num_layers=2)
    layer.initialize()
    x = mx.nd.ones((4, 2, 3))
    y = layer(x)
    assert isinstance(y, mx.nd.NDArray) and y.shape == (4, 2, 5)
    out, states = layer(x, layer.begin_state(2))
    np.testing.assert_array_equal(out.asnumpy(), y.asnumpy())
    assert [s.shape for s in states] == [(2, 2, 5), (2, 2, 5)]
    with pytest.raises(ValueError, match='Invalid recurrent state shape'):
        layer(x, [mx.nd.zeros((2, 3, 5)), mx.nd.zeros((2, 3, 5))])


def test_deferred_input_size_and_repr():
    for hybridize in (False, True):
        layer = gluon.rnn.GRU(8, num_layers=2, bidirectional=True)
        assert 'GRU(None -> 8, TNC, num_layers=2, bidirectional)' == repr(layer)
        layer.initialize()
        if hybridize:
            layer.hybridize()
        layer(mx.nd.ones((3, 2, 11)))
        assert layer.l0_i2h_weight.shape == (24, 11) and layer.r0_i2h_weight.shape == (24, 11)
        assert layer.l1_i2h_weight.shape == (24, 16)
        assert repr(layer) == 'GRU(11 -> 8, TNC, num_layers=2, bidirectional)'


def test_parameter_names_and_shapes():
    layer = gluon.rnn.LSTM(6, num_layers=2, bidirectional=True, input_size=4,
                           projection_size=3, prefix='lstm_')
    shapes = {k: v.shape for k, v in layer.collect_params().items()}
    assert shapes['lstm_l0_i2h_weight'] == (24, 4)
    assert shapes['lstm_r0_h2h_weight'] == (24, 3)
    assert shapes['lstm_l0_h2r_weight'] == (3, 6)
    assert shapes['lstm_l1_i2h_weight'] == (24, 6)
    assert shapes['lstm_r1_h2h_bias'] == (24,)
    assert len(shapes) == 20
    assert [s['shape'] for s in layer.state_info(7)] == [(4, 7, 3), (4, 7, 6)]


@pytest.mark.parametrize('cls,mode', [(gluon.rnn.LSTM, 'lstm'), (gluon.rnn.GRU, 'gru')])
def test_use_sequence_length(cls, mode):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (6, 3, 3)).astype(np.float32)
    lens = np.array([6, 2, 4], dtype=np.float32)
    for hybridize in (False, True):
        layer = cls(5, bidirectional=True, use_sequence_length=True, input_size=3)
        layer.initialize(mx.init.Uniform(0.5))
        if hybridize:
            layer.hybridize()
        states = [mx.nd.array(rng.uniform(-1, 1, s.shape)) for s in layer.begin_state(3)]
        out, new_states = layer(mx.nd.array(x), states, mx.nd.array(lens))
        c0 = states[1].asnumpy() if mode == 'lstm' else None
        ref = rnn_ref.rnn(x, _flat(layer), states[0].asnumpy(), c0, mode, 5, 1, True, None,
                          lens.astype(int))
        np.testing.assert_allclose(out.asnumpy(), ref[0], rtol=1e-5, atol=1e-6)
        for s, r in zip(new_states, ref[1:]):
            np.testing.assert_allclose(s.asnumpy(), r, rtol=1e-5, atol=1e-6)
        assert np.all(out.asnumpy()[2:, 1] == 0)


def test_dropout_only_in_training():
    layer = gluon.rnn.GRU(6, num_layers=3, dropout=0.5, input_size=4)
    layer.initialize()
    x = mx.nd.ones((5, 2, 4))
    a, b = layer(x).asnumpy(), layer(x).asnumpy()
    np.testing.assert_array_equal(a, b)
    with mx.autograd.record():
        c = layer(x)
    assert np.abs(c.asnumpy() - a).max() > 1e-4


def test_float64_layer():
    layer = gluon.rnn.LSTM(4, dtype='float64', input_size=3)
    layer.initialize()
    y = layer(mx.nd.ones((2, 2, 3), dtype='float64'))
    assert y.dtype == np.float64
    ref = _reference(layer, np.ones((2, 2, 3)), [np.zeros((1, 2, 4))] * 2)
    np.testing.assert_allclose(y.asnumpy(), ref[0], rtol=1e-12)


def test_export_and_imports_round_trip(tmp_path):
    layer = gluon.rnn.LSTM(6, num_layers=2, bidirectional=True, layout='NTC')
    layer.initialize(mx.init.Uniform(0.3))
    layer.hybridize()
    x = mx.nd.array(np.random.default_rng(3).uniform(-1, 1, (2, 5, 4)))
    y = layer(x)
    path = str(tmp_path / 'lstm')
    layer.export(path)
    net = gluon.SymbolBlock.imports(path + '-symbol.json', ['data0', 'data1', 'data2'],
                                    path + '-0000.params')
    z = net(x, mx.nd.zeros((4, 2, 6)), mx.nd.zeros((4, 2, 6)))
    np.testing.assert_allclose(z.asnumpy(), y.asnumpy(), rtol=1e-6, atol=1e-6)
    graph = json.loads(open(path + '-symbol.json').read())
    ops = [n['op'] for n in graph['nodes']]
    assert 'RNN' in ops and '_rnn_param_concat' in ops


def test_inside_hybridized_sequential():
    """A layer traced inside a parent: the zero states are graph nodes whose batch size the
    data decides."""
    net = gluon.nn.HybridSequential()
    net.add(gluon.rnn.LSTM(5, bidirectional=True), gluon.nn.Dense(3, flatten=False))
    net.initialize()
    x = mx.nd.array(np.random.default_rng(4).uniform(-1, 1, (4, 2, 3)))
    y0 = net(x).asnumpy()
    net.hybridize()
    with mx.autograd.record():
        y1 = net(x)
    y1.backward()
    np.testing.assert_allclose(y1.asnumpy(), y0, rtol=1e-5, atol=1e-6)
    assert net[0].l0_i2h_weight.grad().abs().sum().asscalar() > 0


# ---- the C predictor ---------------------------------------------------------------------------

def _predict_c(json_path, params_path, x, state_shapes):
    """Runs the exported graph through hybridgluon's C predictor (libhybridgluon, no Python in
    the loop): input data0 = x, the state inputs data1, ... left at their initial zeros."""
    L = ctypes.CDLL(os.path.join(mx.get_lib_dir(), 'libhybridgluon.so'))

    class Spec(ctypes.Structure):
        _fields_ = [('name', ctypes.c_char_p), ('ndim', ctypes.c_int),
                    ('shape', ctypes.POINTER(ctypes.c_int64)), ('dtype', ctypes.c_int)]

    P = ctypes.c_void_p
    L.hg_predictor_create_from_files.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                                 ctypes.c_int, ctypes.c_int,
                                                 ctypes.POINTER(Spec), ctypes.POINTER(P)]
    L.hg_predictor_set_input.argtypes = [P, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    L.hg_predictor_forward.argtypes = [P]
    L.hg_predictor_output_shape.argtypes = [P, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                            ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    L.hg_predictor_get_output.argtypes = [P, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    L.hg_predictor_free.argtypes = [P]
    L.hg_predictor_free.restype = None
    L.hg_last_error.restype = ctypes.c_char_p
    x = np.ascontiguousarray(x, dtype=np.float32)
    shapes = [x.shape] + list(state_shapes)
    dims = [(ctypes.c_int64 * 3)(*s) for s in shapes]
    spec = (Spec * len(shapes))(*[Spec(b'data%d' % i, 3, d, 0) for i, d in enumerate(dims)])
    p = P()
    assert L.hg_predictor_create_from_files(json_path.encode(), params_path.encode(), 1, 0,
                                            len(shapes), spec, ctypes.byref(p)) == 0, \
        L.hg_last_error()
    try:
        assert L.hg_predictor_set_input(p, b'data0', x.ctypes.data, x.nbytes) == 0
        assert L.hg_predictor_forward(p) == 0, L.hg_last_error()
        shape, nd = (ctypes.c_int64 * 8)(), ctypes.c_int()
        assert L.hg_predictor_output_shape(p, 0, shape, 8, ctypes.byref(nd)) == 0
        y = np.empty(tuple(shape[:nd.value]), dtype=np.float32)
        assert L.hg_predictor_get_output(p, 0, y.ctypes.data, y.nbytes) == 0
        return y
    finally:
        L.hg_predictor_free(p)


def test_c_predictor_runs_exported_lstm(tmp_path):
    layer = gluon.rnn.LSTM(8, num_layers=2, input_size=5)
    layer.initialize(mx.init.Uniform(0.3))
    layer.hybridize()
    x = np.random.default_rng(5).uniform(-1, 1, (6, 3, 5)).astype(np.float32)
    y = layer(mx.nd.array(x)).asnumpy()
    path = str(tmp_path / 'lstm')
    layer.export(path)
    states = [s['shape'] for s in layer.state_info(3)]
    np.testing.assert_allclose(_predict_c(path + '-symbol.json', path + '-0000.params', x,
                                          states), y, rtol=1e-6, atol=1e-6)


def test_c_predictor_runs_mxnet_exported_lstm():
    meta, a = _io()
    x = a['lstm_bi2_x']
    states = [(4, x.shape[1], 6)] * 2  # 2 layers x 2 directions, hidden 6
    y = _predict_c(os.path.join(REF, 'lstm_bi2-symbol.json'),
                   os.path.join(REF, 'lstm_bi2-0000.params'), x, states)
    np.testing.assert_allclose(y, a['lstm_bi2_y0'], rtol=1e-5, atol=1e-6)


def test_threads_share_a_hybridized_lstm():
    """Calls from several threads (the GIL released in C) give the serial results."""
    import threading
    layer = gluon.rnn.LSTM(16, num_layers=2, input_size=8)
    layer.initialize(mx.init.Uniform(0.3))
    layer.hybridize()
    rng = np.random.default_rng(6)
    xs = [mx.nd.array(rng.uniform(-1, 1, (5, 12, 8))) for _ in range(4)]
    want = [layer(x).asnumpy() for x in xs]
    got = [None] * len(xs)

    def run(i):
        for _ in range(3):
            got[i] = layer(xs[i]).asnumpy()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)


@pytest.mark.parametrize('kind,kw', [
    ('LSTM', dict(num_layers=2)),
    ('LSTM', dict(num_layers=2, bidirectional=True, projection_size=3)),
    ('GRU', dict(num_layers=3, bidirectional=True)),
    ('RNN', dict(num_layers=1, activation='tanh')),
])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_hybridized_inference_runs_on_the_parameter_arrays(kind, kw, dtype):
    """In inference the plan runs the RNN on the layer's weights and biases themselves (no flat
    vector is built): the same numbers as the imperative layer, which concatenates them; and a
    training pass (whose backward reads the vector) still builds it."""
    rng = np.random.RandomState(7)
    layer = getattr(gluon.rnn, kind)(5, input_size=4, **kw)
    layer.initialize(mx.init.Uniform(0.5))
    layer.cast(dtype)
    x = mx.nd.array(rng.uniform(-1, 1, (6, 2, 4)), dtype=dtype)
    want = layer(x).asnumpy()
    layer.hybridize()
    got = layer(x).asnumpy()
    assert 'not concatenated' in layer._cached_op.stats()['plan']
    tol = 1e-5 if dtype == 'float32' else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    x.attach_grad()
    with mx.autograd.record():
        y = layer(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), want, rtol=tol, atol=tol)
    # Parameters changed in place are read afresh at the next call (nothing is cached).
    for p in layer.collect_params().values():
        p.data()[:] = p.data() * 0.5
    layer2 = getattr(gluon.rnn, kind)(5, input_size=4, **kw)
    layer2.initialize()
    layer2.cast(dtype)
    for (n, p), p2 in zip(sorted(layer.collect_params().items()),
                          [v for _, v in sorted(layer2.collect_params().items())]):
        p2.set_data(p.data())
    np.testing.assert_allclose(layer(x).asnumpy(), layer2(x).asnumpy(), rtol=tol, atol=tol)
