"""gluon.rnn cells: numbers and gradients against real MXNet 1.9.1 (tests/mxnet_ref/rnn_cells.npz,
made by gen_rnn_cells_ref.py, whose `build` constructs the same cells here), float64 finite
differences of a small unroll, MXNet's names, unroll's forms (list / tensor, NTC / TNC,
merge_outputs, valid_length), imperative against hybridized, export and errors."""
import importlib.util
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon, nd
from hybridgluon.gluon import rnn

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    'gen_rnn_cells_ref', os.path.join(HERE, 'mxnet_ref', 'gen_rnn_cells_ref.py'))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
FIX = np.load(os.path.join(HERE, 'mxnet_ref', 'rnn_cells.npz'))


def _fixture(case):
    params = {k.split(':', 2)[2]: FIX[k] for k in FIX.files if k.startswith(case + ':p:')}
    vl = FIX[case + ':vl'] if case + ':vl' in FIX.files else None
    return FIX[case + ':x'], vl, params, FIX[case + ':w']


@pytest.mark.parametrize('case', sorted(ref.CASES))
def test_matches_mxnet(case):
    x, vl, params, w = _fixture(case)
    out, states, gx, grads = ref.run(mx, case, x, vl, params, w)
    np.testing.assert_allclose(out, FIX[case + ':out'], rtol=1e-4, atol=1e-5)
    assert len(states) == len([k for k in FIX.files if k.startswith(case + ':s')])
    for i, s in enumerate(states):
        np.testing.assert_allclose(s, FIX['%s:s%d' % (case, i)], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gx, FIX[case + ':gx'], rtol=1e-4, atol=1e-5)
    assert sorted(grads) == sorted(params)
    for n, g in grads.items():
        np.testing.assert_allclose(g, FIX['%s:g:%s' % (case, n)], rtol=1e-4, atol=1e-5,
                                   err_msg=n)


@pytest.mark.parametrize('case', ['lstm', 'gru_valid_tnc', 'stack', 'conv2d_lstm', 'lstmp'])
def test_hybridized_matches_mxnet(case):
    """Each step through the cached op: same outputs and gradients."""
    x, vl, params, w = _fixture(case)
    real_build = ref.build

    def hybrid_build(mx_, c):
        cell = real_build(mx_, c)
        cell.hybridize()
        return cell
    ref.build = hybrid_build
    try:
        out, states, gx, grads = ref.run(mx, case, x, vl, params, w)
    finally:
        ref.build = real_build
    np.testing.assert_allclose(out, FIX[case + ':out'], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gx, FIX[case + ':gx'], rtol=1e-4, atol=1e-5)
    for n, g in grads.items():
        np.testing.assert_allclose(g, FIX['%s:g:%s' % (case, n)], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('make', [lambda: rnn.LSTMCell(3, prefix='c_'),
                                  lambda: rnn.GRUCell(3, prefix='c_'),
                                  lambda: rnn.RNNCell(3, activation='relu', prefix='c_')])
def test_unroll_gradient_finite_differences(make):
    """float64: the autograd gradient of a 3-step unroll against central differences, for the
    input and for the recurrent weight."""
    rng = np.random.RandomState(3)
    cell = make()
    cell.initialize()
    x = rng.uniform(-1, 1, (2, 3, 4))
    cell.unroll(3, nd.array(x, dtype='float32'), merge_outputs=True)
    cell.cast('float64')
    pd = cell.collect_params()
    for p in pd.values():
        p.set_data(nd.array(rng.uniform(-0.6, 0.6, p.shape), dtype='float64'))
    w = rng.uniform(-1, 1, (2, 3, 3))

    def begin():  # the default begin state is float32, as in MXNet
        return cell.begin_state(batch_size=2, dtype='float64')

    def loss_of(xv):
        out, states = cell.unroll(3, nd.array(xv, dtype='float64'), begin_state=begin(),
                                  merge_outputs=True)
        total = (out.asnumpy() * w).sum()
        return total + sum(s.asnumpy().sum() for s in states)

    xs = nd.array(x, dtype='float64')
    xs.attach_grad()
    with mx.autograd.record():
        out, states = cell.unroll(3, xs, begin_state=begin(), merge_outputs=True)
        loss = (out * nd.array(w, dtype='float64')).sum()
        for s in states:
            loss = loss + s.sum()
    loss.backward()
    eps = 1e-6
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        num[idx] = (loss_of(x + d) - loss_of(x - d)) / (2 * eps)
    np.testing.assert_allclose(xs.grad.asnumpy(), num, rtol=1e-6, atol=1e-8)
    h2h = pd['c_h2h_weight']
    wv = h2h.data().asnumpy()
    analytic = h2h.grad().asnumpy()
    for idx in [(0, 0), (1, 2), (h2h.shape[0] - 1, 1)]:
        d = np.zeros_like(wv)
        d[idx] = eps
        h2h.set_data(nd.array(wv + d, dtype='float64'))
        up = loss_of(x)
        h2h.set_data(nd.array(wv - d, dtype='float64'))
        down = loss_of(x)
        h2h.set_data(nd.array(wv, dtype='float64'))
        np.testing.assert_allclose(analytic[idx], (up - down) / (2 * eps), rtol=1e-6,
                                   atol=1e-8)


def _numpy_lstm(x, h, c, wi, wh, bi, bh):
    """One LSTM step in NumPy (gates i, f, g, o)."""
    def sig(v):
        return 1 / (1 + np.exp(-v))
    g = x @ wi.T + bi + h @ wh.T + bh
    i, f, cand, o = np.split(g, 4, axis=1)
    c = sig(f) * c + sig(i) * np.tanh(cand)
    return sig(o) * np.tanh(c), c


def test_lstm_step_against_numpy():
    rng = np.random.RandomState(0)
    cell = rnn.LSTMCell(4, input_size=3)
    cell.initialize(mx.init.Uniform(0.5))
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    h = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    c = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    out, (h1, c1) = cell(nd.array(x), [nd.array(h), nd.array(c)])
    p = {k[len(cell.prefix):]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    eh, ec = _numpy_lstm(x, h, c, p['i2h_weight'], p['h2h_weight'], p['i2h_bias'],
                         p['h2h_bias'])
    np.testing.assert_allclose(out.asnumpy(), eh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1.asnumpy(), eh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1.asnumpy(), ec, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('cls,alias', [(rnn.RNNCell, 'rnn'), (rnn.LSTMCell, 'lstm'),
                                       (rnn.GRUCell, 'gru')])
def test_names_as_mxnet(cls, alias):
    cell = cls(8, prefix='rnn_')
    assert sorted(cell.collect_params().keys()) == ['rnn_h2h_bias', 'rnn_h2h_weight',
                                                    'rnn_i2h_bias', 'rnn_i2h_weight']
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    grouped = mx.sym.Group(outputs)
    assert grouped.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    _, outs, _ = grouped.infer_shape(rnn_t0_data=(10, 5), rnn_t1_data=(10, 5),
                                     rnn_t2_data=(10, 5))
    assert outs == [(10, 8)] * 3
    with mx.name.NameManager():
        assert cls(8).prefix == alias + '0_'


def test_begin_state_and_state_info():
    cell = rnn.LSTMCell(5, prefix='l_')
    assert cell.state_info(3) == [{'shape': (3, 5), '__layout__': 'NC'}] * 2
    states = cell.begin_state(batch_size=3, func=nd.ones)
    assert [s.shape for s in states] == [(3, 5), (3, 5)]
    assert all((s.asnumpy() == 1).all() for s in states)
    syms = cell.begin_state(func=mx.sym.var)
    assert [s.name for s in syms] == ['l_begin_state_2', 'l_begin_state_3']
    cell.reset()
    assert [s.name for s in cell.begin_state(func=mx.sym.var)] == ['l_begin_state_0',
                                                                   'l_begin_state_1']
    stack = rnn.SequentialRNNCell()
    stack.add(rnn.LSTMCell(5))
    stack.add(rnn.GRUCell(4))
    assert [i['shape'] for i in stack.state_info(2)] == [(2, 5), (2, 5), (2, 4)]
    assert len(stack) == 2 and isinstance(stack[1], rnn.GRUCell)


def test_unroll_forms_agree():
    rng = np.random.RandomState(1)
    cell = rnn.GRUCell(4, input_size=3)
    cell.initialize()
    x = nd.array(rng.uniform(-1, 1, (2, 5, 3)))
    merged, s1 = cell.unroll(5, x, layout='NTC', merge_outputs=True)
    listed, s2 = cell.unroll(5, x, layout='NTC', merge_outputs=False)
    tnc, s3 = cell.unroll(5, nd.swapaxes(x, 0, 1), layout='TNC', merge_outputs=True)
    steps, s4 = cell.unroll(5, [x[:, t, :] for t in range(5)], merge_outputs=None)
    assert merged.shape == (2, 5, 4) and isinstance(listed, list) and len(listed) == 5
    assert isinstance(steps, list)
    for t in range(5):
        np.testing.assert_allclose(listed[t].asnumpy(), merged[:, t, :].asnumpy(), rtol=1e-6)
        np.testing.assert_allclose(steps[t].asnumpy(), merged[:, t, :].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(tnc.asnumpy(), np.swapaxes(merged.asnumpy(), 0, 1), rtol=1e-6)
    for other in (s2, s3, s4):
        np.testing.assert_allclose(other[0].asnumpy(), s1[0].asnumpy(), rtol=1e-6)


def test_valid_length_masks_and_keeps_last_state():
    rng = np.random.RandomState(2)
    cell = rnn.LSTMCell(4, input_size=3)
    cell.initialize()
    x = nd.array(rng.uniform(-1, 1, (3, 6, 3)))
    lengths = [2, 6, 4]
    out, states = cell.unroll(6, x, valid_length=nd.array(lengths), merge_outputs=True)
    for i, n in enumerate(lengths):
        alone, alone_states = cell.unroll(n, x[i:i + 1, :n, :], merge_outputs=True)
        np.testing.assert_allclose(out[i:i + 1, :n].asnumpy(), alone.asnumpy(), rtol=1e-5,
                                   atol=1e-6)
        assert (out[i, n:].asnumpy() == 0).all()
        for s, a in zip(states, alone_states):
            np.testing.assert_allclose(s[i:i + 1].asnumpy(), a.asnumpy(), rtol=1e-5, atol=1e-6)


def test_bidirectional_outputs_concatenate_directions():
    rng = np.random.RandomState(4)
    left, right = rnn.RNNCell(3, input_size=2, prefix='l_'), rnn.RNNCell(3, input_size=2,
                                                                          prefix='r_')
    bi = rnn.BidirectionalCell(left, right)
    bi.initialize()
    x = nd.array(rng.uniform(-1, 1, (2, 4, 2)))
    out, states = bi.unroll(4, x, merge_outputs=True)
    lo, _ = left.unroll(4, x, merge_outputs=True)
    ro, _ = right.unroll(4, x[:, ::-1, :], merge_outputs=True)
    np.testing.assert_allclose(out[:, :, :3].asnumpy(), lo.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(out[:, :, 3:].asnumpy(), ro.asnumpy()[:, ::-1], rtol=1e-6)
    assert len(states) == 2
    with pytest.raises(NotImplementedError):
        bi(x[:, 0, :], bi.begin_state(batch_size=2))


def test_modifier_cells():
    base = rnn.RNNCell(4, input_size=4, prefix='b_')
    res = rnn.ResidualCell(base)
    assert res.prefix == 'b_residualcell'
    assert sorted(res.collect_params().keys()) == sorted(base.collect_params().keys())
    res.initialize()
    x = nd.array(np.random.RandomState(5).uniform(-1, 1, (2, 3, 4)))
    out, _ = res.unroll(3, x, merge_outputs=True)
    base._modified = False
    plain, _ = base.unroll(3, x, merge_outputs=True)
    base._modified = True
    np.testing.assert_allclose(out.asnumpy(), plain.asnumpy() + x.asnumpy(), rtol=1e-6)
    with pytest.raises(AssertionError):
        base.begin_state(batch_size=2)
    with pytest.raises(AssertionError):
        rnn.ZoneoutCell(base)  # already modified
    zone = rnn.ZoneoutCell(rnn.GRUCell(4, input_size=4), zoneout_outputs=0.5,
                           zoneout_states=0.5)
    zone.initialize()
    zo, _ = zone.unroll(3, x, merge_outputs=True)  # not training: no zoneout
    zone.base_cell._modified = False
    go, _ = zone.base_cell.unroll(3, x, merge_outputs=True)
    np.testing.assert_allclose(zo.asnumpy(), go.asnumpy(), rtol=1e-6)


def test_dropout_cell():
    cell = rnn.DropoutCell(0.5)
    x = nd.ones((4, 3, 50))
    out, states = cell.unroll(3, x, merge_outputs=True)
    assert states == [] and (out.asnumpy() == 1).all()
    with mx.autograd.record():
        out, _ = cell.unroll(3, x, merge_outputs=True)
    vals = set(np.unique(out.asnumpy()).tolist())
    assert vals == {0.0, 2.0}
    with pytest.raises(TypeError):
        rnn.DropoutCell('0.5')


def test_cell_inside_hybridblock_exports(tmp_path):
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.cell = rnn.LSTMCell(3)

        def hybrid_forward(self, F, seq):
            return self.cell.unroll(4, seq, merge_outputs=True)[0]

    net = Net()
    net.initialize()
    x = nd.array(np.random.RandomState(6).uniform(-1, 1, (2, 4, 5)))
    imperative = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), imperative, rtol=1e-6)
    prefix = str(tmp_path / 'lstm')
    net.export(prefix)
    loaded = gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'],
                                       prefix + '-0000.params')
    np.testing.assert_allclose(loaded(x).asnumpy(), imperative, rtol=1e-6)


def test_hybrid_sequential_in_hybridblock():
    class BiStack(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                a, b = rnn.HybridSequentialRNNCell(), rnn.HybridSequentialRNNCell()
                for s in (a, b):
                    s.add(rnn.LSTMCell(4))
                    s.add(rnn.GRUCell(4))
                self.bi = rnn.BidirectionalCell(a, b)

        def hybrid_forward(self, F, x):
            return self.bi.unroll(3, x, layout='NTC', merge_outputs=True)[0]

    net = BiStack()
    net.initialize()
    x = nd.array(np.random.RandomState(7).uniform(-1, 1, (5, 3, 6)))
    imperative = net(x)
    assert imperative.shape == (5, 3, 8)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), imperative.asnumpy(), rtol=1e-5, atol=1e-6)


def test_deferred_input_size():
    cell = rnn.LSTMCell(10)
    cell.hybridize()
    cell.initialize()
    cell.unroll(3, nd.ones((2, 3, 7)))
    assert cell.i2h_weight.shape == (40, 7)


def test_unroll_errors():
    cell = rnn.RNNCell(3, input_size=2)
    cell.initialize()
    with pytest.raises(ValueError):
        cell.unroll(4, [nd.ones((1, 2))] * 3)
    with pytest.raises(ValueError):
        cell.unroll(3, None)
    with pytest.raises(ValueError):
        cell.unroll(4, nd.ones((1, 3, 2)), merge_outputs=False)


def test_repr():
    assert repr(rnn.LSTMCell(5, input_size=3)) == 'LSTMCell(3 -> 20)'
    assert repr(rnn.RNNCell(5)) == 'RNNCell(None -> 5, tanh)'
    stack = rnn.SequentialRNNCell()
    stack.add(rnn.GRUCell(2, input_size=1))
    assert repr(stack) == 'SequentialRNNCell(\n(0): GRUCell(1 -> 6)\n)'


def test_context_default_ctx():
    """MXNet 1.x's deprecated Context.default_ctx (MXNet's cell export test passes it to
    SymbolBlock.imports): the current context, settable."""
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.current_context() == mx.cpu()
    with mx.cpu(0):
        with pytest.warns(DeprecationWarning):
            assert mx.Context.default_ctx == mx.cpu(0)
    old = mx.current_context()
    with pytest.warns(DeprecationWarning):
        mx.Context.default_ctx = mx.cpu_pinned(0)
    try:
        assert mx.current_context() == mx.cpu_pinned(0)
    finally:
        mx.Context._default.value = old
