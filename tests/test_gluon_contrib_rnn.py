"""gluon.contrib.rnn: convolutional cells (names, shapes, deferred channels, against a NumPy
convolution), LSTMPCell, VariationalDropoutCell (one mask per sequence) and dynamic_unroll.
Their numbers against real MXNet are in test_gluon_rnn_cell.py (the conv*/lstmp fixtures)."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd
from hybridgluon.gluon import contrib, rnn

crnn = contrib.rnn


def _symbolic_unroll(cell, prefix, in_shape):
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    grouped = mx.sym.Group(outputs)
    assert sorted(cell.collect_params().keys()) == [prefix + 'h2h_bias', prefix + 'h2h_weight',
                                                    prefix + 'i2h_bias', prefix + 'i2h_weight']
    assert grouped.list_outputs() == [prefix + 't%d_out_output' % t for t in range(3)]
    _, outs, _ = grouped.infer_shape(**{'rnn_t%d_data' % t: in_shape for t in range(3)})
    return outs


@pytest.mark.parametrize('kind', ['RNN', 'LSTM', 'GRU'])
@pytest.mark.parametrize('dims', [1, 2, 3])
def test_conv_cell_shapes(kind, dims):
    spatial = (12, 9, 7)[:dims]
    cls = getattr(crnn, 'Conv%dD%sCell' % (dims, kind))
    cell = cls((4,) + spatial, 6, 3, 3, prefix='rnn_')
    outs = _symbolic_unroll(cell, 'rnn_', (2, 4) + spatial)
    assert outs == [(2, 6) + tuple(s - 2 for s in spatial)] * 3
    gates = {'RNN': 1, 'LSTM': 4, 'GRU': 3}[kind]
    assert cell.i2h_weight.shape == (6 * gates, 4) + (3,) * dims
    assert cell.h2h_weight.shape == (6 * gates, 6) + (3,) * dims
    assert len(cell.state_info(2)) == (2 if kind == 'LSTM' else 1)


def test_conv_cell_rejects_bad_settings():
    with pytest.raises(ValueError):
        crnn.Conv2DRNNCell((3, 8, 8), 4, 3, 2)  # even h2h kernel
    with pytest.raises(ValueError):
        crnn.Conv2DLSTMCell((3, 8, 8), 4, (3, 3, 3), 3)  # kernel of the wrong rank


def _conv1d(x, w, b, pad, dilate=1):
    """NumPy 1-D convolution, NCW, stride 1."""
    n, c, width = x.shape
    f, _, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    out_w = width + 2 * pad - dilate * (k - 1)
    out = np.zeros((n, f, out_w))
    for j in range(out_w):
        patch = xp[:, :, j:j + dilate * (k - 1) + 1:dilate]
        out[:, :, j] = np.einsum('nck,fck->nf', patch, w)
    return out + b[None, :, None]


def test_conv_rnn_step_against_numpy():
    rng = np.random.RandomState(0)
    cell = crnn.Conv1DRNNCell((2, 7), 3, 3, 3, i2h_pad=1, activation='relu')
    cell.initialize(mx.init.Uniform(0.5))
    x = rng.uniform(-1, 1, (2, 2, 7)).astype(np.float32)
    h = rng.uniform(-1, 1, (2, 3, 7)).astype(np.float32)
    out, _ = cell(nd.array(x), [nd.array(h)])
    p = {k[len(cell.prefix):]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    want = np.maximum(_conv1d(x, p['i2h_weight'], p['i2h_bias'], 1) +
                      _conv1d(h, p['h2h_weight'], p['h2h_bias'], 1), 0)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_conv_fill_shape():
    cell = crnn.Conv1DLSTMCell((0, 7), 10, (3,), (3,))
    cell.hybridize()
    cell.initialize()
    x = nd.ones((8, 3, 5, 7))
    x.attach_grad()
    with mx.autograd.record():
        out, _ = cell.unroll(3, x, merge_outputs=True)
    out.backward()
    assert out.shape == (8, 3, 10, 5)
    assert cell.i2h_weight.shape[1] == 5
    assert np.abs(x.grad.asnumpy()).sum() > 0


def test_lstmp_names_and_step():
    cell = crnn.LSTMPCell(10, 4, prefix='rnn_')
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    grouped = mx.sym.Group(outputs)
    assert sorted(cell.collect_params().keys()) == ['rnn_h2h_bias', 'rnn_h2h_weight',
                                                    'rnn_h2r_weight', 'rnn_i2h_bias',
                                                    'rnn_i2h_weight']
    assert grouped.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    assert grouped.infer_shape(rnn_t0_data=(5, 3), rnn_t1_data=(5, 3),
                               rnn_t2_data=(5, 3))[1] == [(5, 4)] * 3
    assert [i['shape'] for i in cell.state_info(5)] == [(5, 4), (5, 10)]


def test_vardrop_mask_is_shared_over_time():
    cell = crnn.VariationalDropoutCell(rnn.RNNCell(30, prefix='rnn_'), drop_inputs=0.5,
                                       drop_states=0.5, drop_outputs=0.5)
    cell.initialize(init='xavier')
    x = nd.ones((4, 5, 20))
    with mx.autograd.record():
        out1, _ = cell.unroll(5, x, merge_outputs=True)
        out2, _ = cell.unroll(5, x, merge_outputs=True)
    zeros1 = out1.asnumpy() == 0
    for t in range(1, 5):  # the output mask zeroes the same units at every step
        assert (zeros1[:, t] == zeros1[:, 0]).all()
    assert zeros1.any()
    assert not np.allclose(out1.asnumpy(), out2.asnumpy())  # a new mask per sequence
    inference, _ = cell.unroll(5, x, merge_outputs=True)
    cell.base_cell._modified = False
    plain, _ = cell.base_cell.unroll(5, x, merge_outputs=True)
    np.testing.assert_allclose(inference.asnumpy(), plain.asnumpy(), rtol=1e-6)


def test_vardrop_without_state_dropout_masks_along_time():
    cell = crnn.VariationalDropoutCell(rnn.GRUCell(6), drop_inputs=0.5, drop_outputs=0.5)
    cell.initialize()
    x = nd.ones((3, 4, 5))
    with mx.autograd.record():
        outs, _ = cell.unroll(4, x, merge_outputs=False)
    assert isinstance(outs, list) and len(outs) == 4
    zero = [o.asnumpy() == 0 for o in outs]
    assert all((z == zero[0]).all() for z in zero)


def test_vardrop_refuses_state_dropout_of_bidirectional():
    bi = rnn.BidirectionalCell(rnn.GRUCell(3), rnn.GRUCell(3))
    with pytest.raises(AssertionError):
        crnn.VariationalDropoutCell(bi, drop_states=0.5)


@pytest.mark.skipif(not hasattr(nd.contrib, 'foreach'),
                    reason='needs contrib.foreach (control-flow branch)')
@pytest.mark.parametrize('layout', ['TNC', 'NTC'])
def test_dynamic_unroll_matches_unroll(layout):
    rng = np.random.RandomState(1)
    cell = rnn.LSTMCell(4, input_size=3)
    cell.initialize()
    shape = (5, 2, 3) if layout == 'TNC' else (2, 5, 3)
    x = nd.array(rng.uniform(-1, 1, shape))
    vl = nd.array([3, 5])
    begin = cell.begin_state(batch_size=2)
    want, want_states = cell.unroll(5, x, begin_state=begin, layout=layout,
                                    merge_outputs=True, valid_length=vl)
    got, got_states = crnn.rnn_cell.dynamic_unroll(cell, x, begin, layout=layout,
                                                   valid_length=vl)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)


def _python_foreach(body, data, init_states):
    """MXNet's foreach semantics as a Python loop (body(step, states) -> (out, states),
    outputs stacked on axis 0), to test dynamic_unroll's own logic without the operator."""
    states, outs = list(init_states), []
    for t in range(data.shape[0]):
        out, states = body(data[t], states)
        outs.append(out)
    return nd.stack(*outs, axis=0), states


@pytest.mark.parametrize('layout', ['TNC', 'NTC'])
@pytest.mark.parametrize('with_valid', [False, True])
def test_dynamic_unroll_logic(monkeypatch, layout, with_valid):
    """Layout handling and the valid-length freezing of states, with the loop done in
    Python (the foreach operator itself is tested by the control-flow tests)."""
    monkeypatch.setattr(nd.contrib, 'foreach', _python_foreach, raising=False)
    rng = np.random.RandomState(2)
    cell = rnn.GRUCell(4, input_size=3)
    cell.initialize()
    shape = (5, 3, 3) if layout == 'TNC' else (3, 5, 3)
    x = nd.array(rng.uniform(-1, 1, shape))
    vl = nd.array([2, 5, 4]) if with_valid else None
    begin = cell.begin_state(batch_size=3)
    want, want_states = cell.unroll(5, x, begin_state=begin, layout=layout,
                                    merge_outputs=True, valid_length=vl)
    got, got_states = crnn.rnn_cell.dynamic_unroll(cell, x, begin, layout=layout,
                                                   valid_length=vl)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    assert len(got_states) == len(want_states)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
