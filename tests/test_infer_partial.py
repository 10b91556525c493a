"""Partial shape inference with MXNet 1.9.1's semantics: 0 marks an unknown dimension, rules
run forwards and backwards (element-wise ops unify their shapes; FullyConnected, Convolution,
Concat and SliceChannel fill unknown input dimensions from a known output), and unknown
shapes come back as (). Expected shapes are worked out by hand; full inference and hybridized
results must not change."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd, sym
from hybridgluon.gluon import nn


def _args(s, **kw):
    arg, out, aux = s.infer_shape_partial(**kw)
    return dict(zip(s.list_arguments(), arg)), out


def test_elementwise_unifies_both_operands():
    a = sym.var('a', shape=(0, 3, 0))
    b = sym.var('b', shape=(2, 0, 0))
    c = sym.var('c', shape=(0, 0, 7))
    args, out = _args((a + b) * c)
    assert args == {'a': (2, 3, 7), 'b': (2, 3, 7), 'c': (2, 3, 7)}
    assert out == [(2, 3, 7)]


def test_elementwise_conflict_is_an_error():
    a = sym.var('a', shape=(2, 3))
    b = sym.var('b', shape=(4, 3))
    with pytest.raises(mx.MXNetError):
        (a + b).infer_shape()


def test_symbol_plus_is_same_shape_op():
    a, b = sym.var('a'), sym.var('b')
    c = a + b
    assert c.name.startswith('_plus')
    with pytest.raises(mx.MXNetError):
        c.infer_shape(a=(2, 3), b=(1, 3))  # no broadcasting, as MXNet's _Plus
    assert sym.broadcast_add(a, b).infer_shape(a=(2, 3), b=(1, 3))[1] == [(2, 3)]


def test_fully_connected_batch_from_output():
    x = sym.var('x', shape=(0, 6))
    y = sym.FullyConnected(x, num_hidden=4, name='fc') + sym.var('z', shape=(9, 0))
    args, out = _args(y)
    assert args == {'x': (9, 6), 'fc_weight': (4, 6), 'fc_bias': (4,), 'z': (9, 4)}
    assert out == [(9, 4)]


@pytest.mark.parametrize('stride,pad,dilate,want', [
    (1, 0, 1, (3, 2, 12, 12)),   # 10 + (3 - 1) - 0
    (1, 2, 1, (3, 2, 8, 8)),     # 10 + 2 - 4
    (1, 1, 2, (3, 2, 12, 12)),   # 10 + 2 * 2 - 2
    (2, 1, 1, (3, 2, 0, 0)),     # stride 2: the spatial size cannot be recovered
])
def test_convolution_data_from_output(stride, pad, dilate, want):
    x = sym.var('x', shape=(0, 2, 0, 0))
    y = sym.Convolution(x, num_filter=5, kernel=(3, 3), stride=(stride, stride),
                        pad=(pad, pad), dilate=(dilate, dilate), name='cv')
    y = y + sym.var('o', shape=(3, 5, 10, 10))
    args, _ = _args(y)
    assert args['x'] == want
    assert args['cv_weight'] == (5, 2, 3, 3)


def test_convolution_weight_without_data():
    args, out = _args(sym.Convolution(sym.var('x'), num_filter=8, kernel=(5, 3), name='cv'))
    assert args == {'x': (), 'cv_weight': (8, 0, 5, 3), 'cv_bias': (8,)}
    assert out == [()]


def test_concat_fills_missing_size():
    a = sym.var('a', shape=(0, 4))
    b = sym.var('b', shape=(0, 0))
    d = sym.var('d', shape=(5, 11))
    args, _ = _args(sym.Concat(a, b, dim=1) + d)
    assert args == {'a': (5, 4), 'b': (5, 7), 'd': (5, 11)}


def test_concat_two_missing_sizes_stay_unknown():
    a, b = sym.var('a', shape=(0, 0)), sym.var('b', shape=(0, 0))
    args, _ = _args(sym.Concat(a, b, dim=1) + sym.var('d', shape=(5, 11)))
    assert args['a'] == (5, 0) and args['b'] == (5, 0)


@pytest.mark.parametrize('squeeze,cshape,want', [
    (False, (2, 3, 4), (2, 9, 4)),
    (True, (2, 4), (2, 3, 4)),
])
def test_slice_channel_from_output(squeeze, cshape, want):
    a = sym.var('a', shape=(0, 0, 0))
    parts = sym.SliceChannel(a, num_outputs=3, axis=1, squeeze_axis=squeeze)
    args, _ = _args(parts[2] + sym.var('c', shape=cshape))
    assert args['a'] == want


def test_unknown_shapes_are_empty_tuples():
    y = sym.sin(sym.var('data'))
    arg, out, aux = y.infer_shape_partial()
    assert arg == [()] and out == [()] and aux == []
    with pytest.warns(UserWarning):
        assert y.infer_shape() == (None, None, None)


def test_full_inference_unchanged_and_hybridize_matches():
    x = sym.var('data')
    y = sym.FullyConnected(sym.relu(sym.Convolution(x, num_filter=4, kernel=(3, 3), name='c')),
                           num_hidden=5, name='f')
    arg, out, _ = y.infer_shape(data=(2, 3, 8, 8))
    assert dict(zip(y.list_arguments(), arg)) == {
        'data': (2, 3, 8, 8), 'c_weight': (4, 3, 3, 3), 'c_bias': (4,),
        'f_weight': (5, 144), 'f_bias': (5,)}
    assert out == [(2, 5)]

    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3), nn.Dense(5))
    net.initialize()
    xv = nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, 8, 8)))
    want = net(xv).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(xv).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_reshape_one_unknown_input_dim_from_output():
    x = sym.var('x')
    y = sym.elemwise_add(sym.reshape(x, shape=(-1, 6)), sym.ones(shape=(4, 6)))
    arg, out, _ = y.infer_shape(x=(2, 0, 3))
    assert arg == [(2, 4, 3)] and out == [(4, 6)]   # 24 / (2 * 3)
    args, _ = _args(y, x=(0, 0, 3))                  # two unknowns: undecided
    assert args['x'] == (0, 0, 3)


def test_transpose_and_ones_with_unknown_dims():
    o1 = sym.ones(shape=(2, -1))
    o2 = sym.ones(shape=(3, -1))
    y = o1 + sym.transpose(o2)
    assert y.infer_shape()[1] == [(2, 3)]
    out = y.bind(mx.cpu(), args={}).forward()[0]
    assert out.shape == (2, 3) and (out.asnumpy() == 2).all()
    with pytest.raises(mx.MXNetError):  # nothing decides the -1
        sym.ones(shape=(2, -1)).bind(mx.cpu(), args={}).forward()


def test_transpose_backwards_to_variable():
    x = sym.var('x', shape=(0, 0, 0))
    y = sym.transpose(x, axes=(1, 2, 0)) + sym.var('z', shape=(4, 5, 6))
    args, _ = _args(y)
    assert args['x'] == (6, 4, 5)


def test_cast_passes_shape_backwards():
    w = sym.var('w')
    y = sym.Convolution(sym.var('x', shape=(1, 0, 0, 0)), weight=sym.cast(w, dtype='float16'),
                        num_filter=16, kernel=(5, 5), no_bias=True)
    args, out = _args(y)
    assert args['w'] == (16, 0, 5, 5)


@pytest.mark.parametrize('lhs,rhs,want', [
    ((0, 3, 4), (0, 4, 5), (0, 3, 5)),
    ((0, 3, 4), (0, 0, 5), ()),      # the contracted size of rhs unknown: nothing inferred
    ((0, 3, 0), (0, 4, 5), ()),
])
def test_batch_dot_partial(lhs, rhs, want):
    y = sym.batch_dot(sym.var('x'), sym.var('y'))
    assert y.infer_shape_partial(x=lhs, y=rhs)[1] == [want]


def test_where_needs_known_condition():
    y = sym.where(sym.var('c'), sym.var('x'), sym.var('y'))
    assert y.infer_shape_partial(c=(0, 2), x=(3, 2), y=(3, 2))[1] == [()]
    arg, out, _ = y.infer_shape_partial(c=(3, 2), x=(3, 0), y=(0, 2))
    assert arg == [(3, 2)] * 3 and out == [(3, 2)]


def test_infer_type_fills_parameters_after_cast():
    x = sym.var('x')
    y = sym.FullyConnected(sym.Cast(x, dtype='float64'), num_hidden=3, name='fc')
    arg, out, _ = y.infer_type(x=np.float16)
    assert arg == [np.float16, np.float64, np.float64] and out == [np.float64]
    arg, out, _ = y.infer_type_partial()
    assert arg == [None, np.float64, np.float64] and out == [np.float64]


def test_fluent_names_follow_mxnet():
    d = sym.var('data')
    assert d.flip(axis=0).name.startswith('flip')
    assert d.swapaxes(dim1=0, dim2=1).name.startswith('swapaxes')
    assert d.astype('float16').name.startswith('cast')


@pytest.mark.parametrize('start,step,n,want', [(0, 1, 5, [0, 1, 2, 3, 4]),
                                               (2, 3, 4, [2, 5, 8, 11])])
def test_arange_infer_range_takes_length_from_graph(start, step, n, want):
    s = sym.elemwise_add(sym.arange(start=start, step=step, infer_range=True),
                         sym.zeros(shape=(n,)))
    out = s.bind(mx.cpu(), args={}).forward()[0].asnumpy()
    np.testing.assert_array_equal(out, want)
    with pytest.raises(mx.MXNetError, match='infer_range'):
        sym.arange(start=start, infer_range=True).bind(mx.cpu(), args={}).forward()
    assert sym.arange(3).infer_shape()[1] == [(3,)]  # without infer_range: [0, start)


def test_zeros_with_a_zero_dim_is_unknown_in_a_graph():
    # MXNet's exported RNN cells begin with _zeros(shape=(0, H)): in the legacy shape reading
    # the 0 is the batch size the consumer decides, in a graph only.
    begin = sym.zeros(shape=(0, 4))
    out = sym.elemwise_add(begin, sym.var('data'))
    _, shapes, _ = out.infer_shape(data=(3, 4))
    assert shapes == [(3, 4)]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ex = out.bind(mx.cpu(), {'data': nd.array(x)})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), x)
    loaded = sym.load_json(out.tojson())
    np.testing.assert_array_equal(loaded.eval(data=nd.array(x))[0].asnumpy(), x)
    # Imperatively a 0 stays a real zero-size dimension.
    assert nd.zeros((0, 4)).shape == (0, 4)
    # With NumPy shape semantics a 0 is a real dimension in a graph too.
    with mx.util.np_shape(True):
        with pytest.raises(mx.MXNetError):
            out.infer_shape(data=(3, 4))


def test_reshape_completes_its_input_from_its_decided_output():
    # Reshape decides its output from an input with an unknown dim; a later sweep must run it
    # again to fill that dim (2 = 6*1*5*6 / (3*5*6)), as MXNet does.
    net = sym.elemwise_add(sym.var('data').reshape((6, 1, -2)), sym.ones(shape=(6, 1, 5, 6)))
    arg, out, _ = net.infer_shape(data=(0, 3, 5, 6))
    assert arg == [(2, 3, 5, 6)] and out == [(6, 1, 5, 6)]
