"""The legacy symbolic `mx.rnn` package: names and shapes as MXNet 1.9.1, numbers of the bound
graphs against the Gluon cells (themselves checked against MXNet), FusedRNNCell's weight
layout and FusedRNN initializer against real MXNet fixtures (rnn_cells.npz, legacy:* keys),
weight packing round trips, encode_sentences, the iterator and checkpoints."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = np.load(os.path.join(HERE, 'mxnet_ref', 'rnn_cells.npz'))
FUSED_CFGS = {  # as tests/mxnet_ref/gen_rnn_cells_ref.py
    'lstm_bi2': (3, 2, 'lstm', True, 4),
    'gru_1': (2, 1, 'gru', False, 5),
    'rnn_tanh_uni3': (2, 3, 'rnn_tanh', False, 3),
}


def _unroll3(cell):
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, states = cell.unroll(3, inputs)
    return mx.sym.Group(outputs), states


@pytest.mark.parametrize('make', [lambda: mx.rnn.RNNCell(7, prefix='rnn_'),
                                  lambda: mx.rnn.LSTMCell(7, prefix='rnn_'),
                                  lambda: mx.rnn.GRUCell(7, prefix='rnn_')])
def test_cell_names_and_shapes(make):
    cell = make()
    grouped, _ = _unroll3(cell)
    assert sorted(cell.params._params) == ['rnn_h2h_bias', 'rnn_h2h_weight', 'rnn_i2h_bias',
                                           'rnn_i2h_weight']
    assert grouped.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    shapes = {'rnn_t%d_data' % i: (4, 5) for i in range(3)}
    assert grouped.infer_shape(**shapes)[1] == [(4, 7)] * 3


def _bind_values(sym, rng, **given):
    """Random values for every argument of `sym` not in `given` (shapes inferred)."""
    args, _, _ = sym.infer_shape(**{k: v.shape for k, v in given.items()})
    vals = dict(given)
    for name, shape in zip(sym.list_arguments(), args):
        if name not in vals:
            vals[name] = rng.uniform(-0.5, 0.5, shape).astype(np.float32)
    return vals


@pytest.mark.parametrize('kind', ['rnn', 'lstm', 'gru'])
def test_numbers_match_gluon_cells(kind):
    """The legacy graph and the Gluon cell compute the same thing from the same weights."""
    rng = np.random.RandomState(0)
    legacy = {'rnn': lambda: mx.rnn.RNNCell(4, prefix='c_'),
              'lstm': lambda: mx.rnn.LSTMCell(4, prefix='c_'),
              'gru': lambda: mx.rnn.GRUCell(4, prefix='c_')}[kind]()
    data = mx.sym.Variable('data')
    out, _ = legacy.unroll(3, data, layout='NTC', merge_outputs=True)
    x = rng.uniform(-1, 1, (2, 3, 5)).astype(np.float32)
    vals = _bind_values(out, rng, data=x)
    got = out.eval(**{k: nd.array(v) for k, v in vals.items()})[0].asnumpy()
    gluon_cell = {'rnn': mx.gluon.rnn.RNNCell, 'lstm': mx.gluon.rnn.LSTMCell,
                  'gru': mx.gluon.rnn.GRUCell}[kind](4, input_size=5, prefix='c_')
    gluon_cell.initialize()
    for name, p in gluon_cell.collect_params().items():
        p.set_data(nd.array(vals[name]))
    want, _ = gluon_cell.unroll(3, nd.array(x), merge_outputs=True)
    np.testing.assert_allclose(got, want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_lstm_forget_bias_initializer():
    cell = mx.rnn.LSTMCell(3, prefix='l_', forget_bias=2.0)
    var = cell.params.get('i2h_bias')
    arr = nd.zeros((12,))
    mx.init.Uniform()(mx.init.InitDesc(var.name, attrs=var.list_attr()), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0] * 3 + [2] * 3 + [0] * 6)


def test_residual_and_bidirectional_eval():
    cell = mx.rnn.ResidualCell(mx.rnn.BidirectionalCell(mx.rnn.GRUCell(25, prefix='rnn_l_'),
                                                        mx.rnn.GRUCell(25, prefix='rnn_r_')))
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(2)]
    outputs, states = cell.unroll(2, inputs, merge_outputs=False)
    assert len(states) == 2 and len(states[0]) == 1  # [l_states, r_states], as MXNet
    grouped = mx.sym.Group(outputs)
    vals = {'rnn_t0_data': nd.ones((10, 50)) + 5, 'rnn_t1_data': nd.ones((10, 50)) + 5}
    for side in 'lr':
        vals.update({'rnn_%s_i2h_weight' % side: nd.zeros((75, 50)),
                     'rnn_%s_i2h_bias' % side: nd.zeros((75,)),
                     'rnn_%s_h2h_weight' % side: nd.zeros((75, 25)),
                     'rnn_%s_h2h_bias' % side: nd.zeros((75,))})
    for out in grouped.eval(**vals):
        np.testing.assert_array_equal(out.asnumpy(), np.full((10, 50), 6.0))


def test_bidirectional_merged_output_reverses_right_cell():
    rng = np.random.RandomState(1)
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(3, prefix='l_'), mx.rnn.RNNCell(3, prefix='r_'),
                                  output_prefix='bi_')
    data = mx.sym.Variable('data')
    out, _ = bi.unroll(4, data, merge_outputs=True)
    assert out.list_outputs() == ['bi_out_output']
    x = rng.uniform(-1, 1, (2, 4, 2)).astype(np.float32)
    vals = _bind_values(out, rng, data=x)
    got = out.eval(**{k: nd.array(v) for k, v in vals.items()})[0].asnumpy()
    right = mx.rnn.RNNCell(3, prefix='r_')
    rout, _ = right.unroll(4, data, merge_outputs=True)
    rvals = {k: nd.array(v) for k, v in vals.items() if k.startswith('r_')}
    want = rout.eval(data=nd.array(x[:, ::-1].copy()), **rvals)[0].asnumpy()[:, ::-1]
    np.testing.assert_allclose(got[:, :, 3:], want, rtol=1e-5, atol=1e-6)


def test_stack_and_zoneout_shapes():
    stack = mx.rnn.SequentialRNNCell()
    for i in range(3):
        cell = mx.rnn.LSTMCell(6, prefix='s%d_' % i)
        stack.add(mx.rnn.ResidualCell(cell) if i == 1 else cell)
    grouped, states = _unroll3(stack)
    assert grouped.list_outputs() == ['s2_t%d_out_output' % t for t in range(3)]
    assert len(states) == 6
    shapes = {'rnn_t%d_data' % i: (4, 5) for i in range(3)}
    assert grouped.infer_shape(**shapes)[1] == [(4, 6)] * 3
    zone = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(6, prefix='z_'), zoneout_outputs=0.5,
                              zoneout_states=0.5)
    zgrouped, _ = _unroll3(zone)
    assert zgrouped.infer_shape(**shapes)[1] == [(4, 6)] * 3
    with pytest.raises(AssertionError):
        zone.base_cell.begin_state()


def test_conv_cells():
    for cls in (mx.rnn.ConvRNNCell, mx.rnn.ConvLSTMCell, mx.rnn.ConvGRUCell):
        cell = cls(input_shape=(1, 3, 16, 10), num_hidden=10, h2h_kernel=(3, 3),
                   h2h_dilate=(1, 1), i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1),
                   i2h_dilate=(1, 1), prefix='rnn_')
        grouped, _ = _unroll3(cell)
        assert sorted(cell.params._params) == ['rnn_h2h_bias', 'rnn_h2h_weight',
                                               'rnn_i2h_bias', 'rnn_i2h_weight']
        shapes = {'rnn_t%d_data' % i: (1, 3, 16, 10) for i in range(3)}
        assert grouped.infer_shape(**shapes)[1] == [(1, 10, 16, 10)] * 3
    with pytest.raises(ValueError):
        mx.rnn.ConvRNNCell(input_shape=(1, 3, 8, 8), num_hidden=2, h2h_kernel=(2, 3))


def test_unpack_pack_weights():
    cell = mx.rnn.LSTMCell(3, prefix='l_')
    rng = np.random.RandomState(2)
    args = {'l_i2h_weight': nd.array(rng.rand(12, 5)), 'l_i2h_bias': nd.array(rng.rand(12)),
            'l_h2h_weight': nd.array(rng.rand(12, 3)), 'l_h2h_bias': nd.array(rng.rand(12)),
            'other': nd.ones((1,))}
    unpacked = cell.unpack_weights(args)
    assert sorted(unpacked) == sorted(['other'] + ['l_%s_%s_%s' % (g, s, k)
                                                   for g in ('i2h', 'h2h')
                                                   for s in 'ifco' for k in ('weight', 'bias')])
    np.testing.assert_array_equal(unpacked['l_i2h_f_weight'].asnumpy(),
                                  args['l_i2h_weight'].asnumpy()[3:6])
    packed = cell.pack_weights(unpacked)
    for k, v in args.items():
        np.testing.assert_array_equal(packed[k].asnumpy(), v.asnumpy())


@pytest.mark.parametrize('cfg', sorted(FUSED_CFGS))
def test_fused_unpack_matches_mxnet(cfg):
    h, layers, mode, bi, ni = FUSED_CFGS[cfg]
    cell = mx.rnn.FusedRNNCell(h, num_layers=layers, mode=mode, bidirectional=bi, prefix='f_')
    want = {k.split(':', 3)[3]: FIX[k] for k in FIX.files
            if k.startswith('legacy:unpack:%s:' % cfg)}
    n = sum(v.size for v in want.values())
    vec = nd.arange(n)
    got = cell.unpack_weights({'f_parameters': vec})
    assert sorted(got) == sorted(want)
    for name, v in want.items():
        np.testing.assert_array_equal(got[name].asnumpy(), v, err_msg=name)
    repacked = cell.pack_weights(got)['f_parameters']
    np.testing.assert_array_equal(repacked.asnumpy(), vec.asnumpy())
    with pytest.raises(ValueError):
        cell.unpack_weights({'f_parameters': nd.arange(n + 1)})


@pytest.mark.parametrize('cfg', sorted(FUSED_CFGS))
def test_fused_initializer_matches_mxnet(cfg):
    h, layers, mode, bi, ni = FUSED_CFGS[cfg]
    want = FIX['legacy:fusedinit:%s' % cfg]
    fused = mx.init.FusedRNN(None, h, layers, mode, bi, forget_bias=2.5)
    arr = nd.zeros(want.shape)
    mx.init.Constant(0.5)(mx.init.InitDesc('f_parameters', attrs={'__init__': fused.dumps()}),
                          arr)
    np.testing.assert_array_equal(arr.asnumpy(), want)


def test_unfuse_names_and_shapes():
    cell = mx.rnn.FusedRNNCell(100, num_layers=3, mode='lstm', prefix='test_',
                               bidirectional=True, dropout=0.5).unfuse()
    grouped, _ = _unroll3(cell)
    assert grouped.list_outputs() == ['test_bi_l2_t%d_output' % t for t in range(3)]
    shapes = {'rnn_t%d_data' % i: (10, 50) for i in range(3)}
    assert grouped.infer_shape(**shapes)[1] == [(10, 200)] * 3
    with pytest.raises(ValueError):
        mx.rnn.FusedRNNCell(4, mode='tanh')
    with pytest.raises(NotImplementedError):
        mx.rnn.FusedRNNCell(4)(mx.sym.var('x'), [])


def test_encode_sentences():
    result, vocab = mx.rnn.encode_sentences([['a', 'b', 'c'], ['b', 'c', 'd']],
                                            vocab={'a': 1, 'b': 2, 'c': 3}, invalid_label=-1,
                                            invalid_key='\n', start_label=0,
                                            unknown_token='UNK')
    assert vocab == {'a': 1, 'b': 2, 'c': 3, 'UNK': 0}
    assert result == [[1, 2, 3], [2, 3, 0]]
    result, vocab = mx.rnn.encode_sentences([['x', 'y'], ['y', 'z']], invalid_label=0,
                                            start_label=0)
    assert vocab == {'\n': 0, 'x': 1, 'y': 2, 'z': 3}  # ids skip the invalid label
    assert result == [[1, 2], [2, 3]]
    with pytest.raises(AssertionError):
        mx.rnn.encode_sentences([['q']], vocab={'a': 1})


def test_bucket_sentence_iter():
    sentences = [[1, 2, 3], [4, 5], [6, 7, 8], [9, 10], [1, 2, 3, 4, 5, 6]]
    it = mx.rnn.BucketSentenceIter(sentences, 2, buckets=[2, 3], invalid_label=0)
    assert it.buckets == [2, 3] and it.default_bucket_key == 3
    seen = []
    for batch in it:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert data.shape == (2, batch.bucket_key)
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
        assert (label[:, -1] == 0).all()
        seen.extend(tuple(r) for r in data)
    assert sorted(seen) == [(1, 2, 3), (4, 5), (6, 7, 8), (9, 10)]


def test_rnn_checkpoint_round_trip(tmp_path):
    cell = mx.rnn.LSTMCell(2, prefix='l_')
    sym, _ = cell.unroll(2, mx.sym.Variable('data'), merge_outputs=True)
    rng = np.random.RandomState(3)
    args = {'l_i2h_weight': nd.array(rng.rand(8, 3)), 'l_i2h_bias': nd.array(rng.rand(8)),
            'l_h2h_weight': nd.array(rng.rand(8, 2)), 'l_h2h_bias': nd.array(rng.rand(8))}
    prefix = str(tmp_path / 'ck')
    mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)(1, sym, args, {})
    _, saved, _ = mx.model.load_checkpoint(prefix, 2)
    assert 'l_i2h_f_weight' in saved and 'l_i2h_weight' not in saved
    _, arg, aux = mx.rnn.load_rnn_checkpoint(cell, prefix, 2)
    assert aux == {}
    for k, v in args.items():
        np.testing.assert_array_equal(arg[k].asnumpy(), v.asnumpy())
