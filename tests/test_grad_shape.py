"""Gradient rules of the shape, slicing and indexing families (csrc/ops/shape.c, slicing.c,
indexing.c) against float64 finite differences, and the _backward_* ops they emit against NumPy.

Index inputs (take's indices, pick's index, where's condition, Embedding's data,
SequenceMask's sequence_length, broadcast_like's / slice_like's shape input) get no gradient and
are left out with wrt=.
"""
import time

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core
from gradcheck import check_grad, symbolic_grad

GRADS_COVERED = [
    'Reshape', 'Flatten', 'transpose', 'expand_dims', 'squeeze', 'SwapAxis', 'tile', 'repeat',
    'reverse', 'broadcast_to', 'broadcast_axis', 'broadcast_like', 'diag',
    'Concat', 'stack', 'SliceChannel', 'slice', 'slice_axis', 'slice_like', '_slice_assign',
    '_slice_assign_scalar',
    'take', 'pick', 'where', 'clip', 'Embedding', 'SequenceMask',
    '_backward_Reshape', '_backward_tile', '_backward_repeat', '_backward_diag',
    '_backward_Concat', '_backward_slice_axis', '_backward_slice_like',
    '_backward_take', '_backward_pick', '_backward_clip',
]
NO_GRAD_COVERED = ['one_hot']
OPS_COVERED = [
    '_backward_Reshape', '_backward_tile', '_backward_repeat', '_backward_diag',
    '_backward_Concat', '_backward_slice_axis', '_backward_slice_like',
    '_backward_take', '_backward_pick', '_backward_clip',
]

# MXNet writes a None entry of slice's begin/end/step as "None", which the core's tuple parser
# does not read yet; the sentinel it stores for None (INT64_MIN) round-trips, so the symbolic
# tests spell None that way (test_slice_none_text checks the text form).
NONE = -2 ** 63


def randn(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def nd(a):
    return mx.nd.array(a, dtype=a.dtype)


# ---- shape family ----------------------------------------------------------------------------

RESHAPE_CASES = [
    ((2, 3, 4), (4, 0, 2), False), ((2, 3, 4), (6, 1, -1), False), ((2, 3, 4), (-1,), False),
    ((2, 3, 4), (2, -2), False), ((2, 3, 4), (-2, 1, 1), False), ((2, 3, 4), (-3, 4), False),
    ((2, 3, 4, 5), (-3, -3), False), ((2, 3, 4), (-4, 1, 2, -2), False),
    ((2, 3, 4), (2, -4, -1, 3, -2), False), ((10, 5, 4), (-1, 0), True),
    ((2, 3, 4), (0, -1), True), ((2, 3, 4), (-3, 0), True), ((1,), (1, 1, 1), False),
    ((1,), (-1,), False),
]


@pytest.mark.parametrize('shape,codes,reverse', RESHAPE_CASES)
def test_reshape(shape, codes, reverse):
    check_grad('Reshape', [randn(shape)], {'shape': codes, 'reverse': reverse})


def test_reshape_target_shape():
    check_grad('Reshape', [randn((2, 3, 4))], {'target_shape': (4, 0)})


@pytest.mark.parametrize('shape', [(2, 3, 4), (5, 2), (1,), (1, 1, 1)])
def test_flatten(shape):
    check_grad('Flatten', [randn(shape)])


@pytest.mark.parametrize('shape,axis', [((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((1,), 0),
                                        ((4,), -2)])
def test_expand_dims(shape, axis):
    check_grad('expand_dims', [randn(shape)], {'axis': axis})


@pytest.mark.parametrize('shape,axis', [((2, 1, 3), None), ((1, 3, 1), (0, 2)), ((1,), None),
                                        ((1, 1), (-1,)), ((4, 1), 1)])
def test_squeeze(shape, axis):
    check_grad('squeeze', [randn(shape)], {} if axis is None else {'axis': axis})


@pytest.mark.parametrize('shape,axes', [((2, 3, 4), ()), ((2, 3, 4), (1, 2, 0)),
                                        ((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (-1, 0, -2, 1)),
                                        ((3, 5), (1, 0)), ((1,), ()), ((1, 1), (1, 0)),
                                        ((4,), (0,))])
def test_transpose(shape, axes):
    check_grad('transpose', [randn(shape)], {'axes': axes})


@pytest.mark.parametrize('shape,d1,d2', [((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((3, 5), 0, 0),
                                         ((1,), 0, 0), ((1, 2), 1, 0)])
def test_swapaxis(shape, d1, d2):
    check_grad('SwapAxis', [randn(shape)], {'dim1': d1, 'dim2': d2})


@pytest.mark.parametrize('shape,reps', [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (2, 1, 2)),
                                        ((2, 3, 4), (1, 2, 1)), ((1,), (5,)), ((1,), (1,)),
                                        ((3,), (2, 2)), ((2, 3), (0, 2)), ((2, 3), ()),
                                        ((2, 300), (2, 1))])
def test_tile(shape, reps):
    with mx.np_shape(0 in reps):  # a zero-size result needs NumPy shape semantics, as in MXNet
        check_grad('tile', [randn(shape)], {'reps': reps})


@pytest.mark.parametrize('shape,repeats,axis', [((2, 3), 2, None), ((2, 3), 3, 0),
                                                ((2, 3), 2, 1), ((2, 3, 4), 2, -1),
                                                ((2, 3, 4), 3, -2), ((1,), 4, None),
                                                ((1,), 1, 0), ((2, 3), 0, 1), ((2, 3), 1, None)])
def test_repeat(shape, repeats, axis):
    attrs = {'repeats': repeats}
    if axis is not None:
        attrs['axis'] = axis
    check_grad('repeat', [randn(shape)], attrs)


@pytest.mark.parametrize('shape,axis', [((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)), ((5,), (0,)),
                                        ((1,), (0,)), ((2, 3), (-1, 0)), ((2, 3), (1, 1))])
def test_reverse(shape, axis):
    check_grad('reverse', [randn(shape)], {'axis': axis})


@pytest.mark.parametrize('shape,to', [((2, 1, 4), (2, 3, 4)), ((1, 1), (3, 5)), ((1,), (6,)),
                                      ((1,), (1,)), ((2, 1), (0, 4)), ((3, 1, 1), (3, 2, 0))])
def test_broadcast_to(shape, to):
    check_grad('broadcast_to', [randn(shape)], {'shape': to})


@pytest.mark.parametrize('shape,axis,size', [((2, 1, 1), (1, 2), (3, 5)), ((1, 3), (0,), (4,)),
                                             ((1,), (0,), (3,)), ((1,), (0,), (1,)),
                                             ((2, 1), (-1,), (3,))])
def test_broadcast_axis(shape, axis, size):
    check_grad('broadcast_axis', [randn(shape)], {'axis': axis, 'size': size})


@pytest.mark.parametrize('lhs,rhs,attrs', [
    ((2, 1, 4), (2, 3, 4), {}), ((1, 1), (3, 2), {}), ((1,), (1,), {}), ((1,), (5,), {}),
    ((2, 1), (7, 3, 5), {'lhs_axes': (1,), 'rhs_axes': (2,)}),
    ((1, 3, 1), (4, 6), {'lhs_axes': (0, 2), 'rhs_axes': (-1, 0)}),
])
def test_broadcast_like(lhs, rhs, attrs):
    g = check_grad('broadcast_like', [randn(lhs), randn(rhs, 1)], attrs, wrt=[0])
    assert g[0].shape == lhs


def test_broadcast_like_rhs_gets_no_gradient():
    a, b = randn((2, 1)), randn((2, 3), 1)
    ga, gb = symbolic_grad('broadcast_like', [a, b], {}, [0, 1], [np.ones((2, 3))])
    np.testing.assert_allclose(ga, np.full((2, 1), 3.0))
    np.testing.assert_array_equal(gb, np.zeros((2, 3)))


@pytest.mark.parametrize('shape,attrs', [
    ((4,), {}), ((4,), {'k': 2}), ((3,), {'k': -1}), ((1,), {}), ((1,), {'k': 3}),
    ((3, 3), {}), ((3, 5), {'k': 2}), ((5, 3), {'k': -2}), ((1, 1), {}),
    ((2, 3, 4), {'k': 1, 'axis1': 0, 'axis2': 2}), ((2, 3, 4), {'k': -1, 'axis1': -1, 'axis2': 1}),
    ((3, 2, 3), {'axis1': 2, 'axis2': 0}), ((2, 3), {'k': 3}),
])
def test_diag(shape, attrs):
    check_grad('diag', [randn(shape)], attrs)


# ---- slicing family --------------------------------------------------------------------------

@pytest.mark.parametrize('shapes,dim', [
    ([(2, 3, 4), (2, 5, 4)], 1), ([(2, 3), (4, 3), (1, 3)], 0), ([(2, 3), (2, 1)], -1),
    ([(1,), (1,)], 0), ([(3, 2)], 1), ([(2, 0), (2, 2)], 1),
])
def test_concat(shapes, dim):
    xs = [randn(s, i) for i, s in enumerate(shapes)]
    check_grad('Concat', xs, {'dim': dim, 'num_args': len(xs)})


def test_concat_many_inputs():
    xs = [randn((2, 1 + i % 3), i) for i in range(20)]
    check_grad('Concat', xs, {'dim': 1, 'num_args': len(xs)})


@pytest.mark.parametrize('shape,n,axis', [((2, 3), 2, 0), ((2, 3), 3, 1), ((2, 3), 2, 2),
                                          ((2, 3), 2, -1), ((1,), 1, 0), ((1,), 3, -2),
                                          ((2, 3, 4), 2, 1)])
def test_stack(shape, n, axis):
    xs = [randn(shape, i) for i in range(n)]
    check_grad('stack', xs, {'axis': axis, 'num_args': n})


@pytest.mark.parametrize('shape,n,axis,squeeze', [
    ((4, 6), 2, 1, False), ((4, 6), 3, 1, False), ((4, 6), 4, 0, False), ((2, 3, 4), 2, -1, False),
    ((4, 3), 4, 0, True), ((2, 3, 4), 3, 1, True), ((2, 1), 1, -1, True), ((1,), 1, 0, False),
    ((1, 2), 1, 0, True),
])
def test_slice_channel(shape, n, axis, squeeze):
    check_grad('SliceChannel', [randn(shape)],
               {'num_outputs': n, 'axis': axis, 'squeeze_axis': squeeze})


def test_slice_channel_unused_outputs_give_zeros():
    x = mx.sym.var('x')
    parts = mx.sym.SliceChannel(x, num_outputs=3, axis=1)
    g = parts[1]._gradient(['x'], ['h'])
    out = g.eval(x=mx.nd.ones((2, 3)), h=mx.nd.array(np.array([[5.], [7.]])))
    np.testing.assert_array_equal(out[0].asnumpy(), [[0, 5, 0], [0, 7, 0]])


SLICE_CASES = [
    ((4, 5), (1, 0), (3, 5), ()), ((4, 5), (0, 1), (4, 5), (2, 2)),
    ((4, 5), (3, 4), (0, 0), (-1, -2)), ((4, 5), (-1, NONE), (NONE, 1), (-2, -1)),
    ((4, 5), (NONE, NONE), (NONE, NONE), (-1, -3)), ((2, 3, 4), (1,), (2,), ()),
    ((2, 3, 4), (0, -1, NONE), (2, NONE, NONE), (1, -2, -3)), ((4, 5), (-10, 2), (10, 3), ()),
    ((1,), (0,), (1,), ()), ((1,), (NONE,), (NONE,), (-1,)), ((3, 1), (NONE, 0), (NONE, 1), ()),
    ((4, 5), (1, 0), (1, 5), ()),  # an empty slice: the gradient is all zeros
]


@pytest.mark.parametrize('shape,begin,end,step', SLICE_CASES)
def test_slice(shape, begin, end, step):
    check_grad('slice', [randn(shape)], {'begin': begin, 'end': end, 'step': step})


@pytest.mark.parametrize('shape,begin,end,step', SLICE_CASES)
def test_slice_assign(shape, begin, end, step):
    attrs = {'begin': begin, 'end': end, 'step': step}
    region = mx.nd.slice(mx.nd.zeros(shape), **attrs).shape
    check_grad('_slice_assign', [randn(shape), randn(region, 1)], attrs)
    check_grad('_slice_assign_scalar', [randn(shape)], dict(attrs, scalar=2.5))


def test_slice_assign_rhs_only():
    lhs, rhs = randn((3, 4)), randn((3, 2), 1)
    attrs = {'begin': (NONE, 1), 'end': (NONE, 3)}
    g, = symbolic_grad('_slice_assign', [lhs, rhs], attrs, [1], [np.arange(12.).reshape(3, 4)])
    np.testing.assert_array_equal(g, np.arange(12.).reshape(3, 4)[:, 1:3])


def test_slice_none_text():
    """None inside a tuple attribute string ("(None, 2)", as MXNet writes slice attributes)."""
    check_grad('slice', [randn((4, 5))], {'begin': (None, 1), 'end': (None, 4),
                                          'step': (None, 2)})


@pytest.mark.parametrize('shape,axis,begin,end', [
    ((4, 5), 0, 1, 3), ((4, 5), 1, -3, None), ((4, 5), -1, 0, -1), ((2, 3, 4), 1, 2, 3),
    ((1,), 0, 0, 1), ((1,), 0, -1, None), ((3, 1), 1, 0, None),
])
def test_slice_axis(shape, axis, begin, end):
    check_grad('slice_axis', [randn(shape)], {'axis': axis, 'begin': begin, 'end': end})


@pytest.mark.parametrize('shape,like,axes', [
    ((4, 5), (2, 3), ()), ((4, 5), (4, 5), ()), ((2, 3, 4), (9, 2), (1,)),
    ((2, 3, 4), (1, 9, 2), (0, -1)), ((1,), (1,), ()), ((3, 1), (2, 1), ()),
])
def test_slice_like(shape, like, axes):
    check_grad('slice_like', [randn(shape), np.zeros(like)], {'axes': axes}, wrt=[0])


# ---- indexing family -------------------------------------------------------------------------

@pytest.mark.parametrize('shape,idx,axis,mode', [
    ((5, 3), [0, 2, 2, 4, 0, 0], 0, 'clip'),
    ((5, 3), [[1, -1], [7, 2]], 0, 'clip'),
    ((5, 3), [[1, -1], [7, 2]], 0, 'wrap'),
    ((2, 4, 3), [3, 0, 3, -6], 1, 'wrap'),
    ((2, 4, 3), [[2], [2]], -1, 'clip'),
    ((2, 4, 3), [0, 1, 1], 0, 'raise'),
    ((1,), [0, 0, 0], 0, 'clip'),
    ((1, 1), [0], 1, 'wrap'),
    ((3, 200), [2, 0, 2, 2, 1], 0, 'clip'),  # wide rows
])
@pytest.mark.parametrize('idx_dtype', ['int32', 'float32', 'int64'])
def test_take(shape, idx, axis, mode, idx_dtype):
    check_grad('take', [randn(shape), np.array(idx, dtype=idx_dtype)],
               {'axis': axis, 'mode': mode}, wrt=[0])


def test_take_repeated_indices_accumulate():
    a = np.zeros((4, 2))
    idx = np.array([1, 1, 1, 3, 1, -5], dtype='int32')   # -5 clips to 0
    head = np.arange(12.).reshape(6, 2)
    g, = symbolic_grad('take', [a, idx], {}, [0], [head])
    ref = np.zeros((4, 2))
    np.add.at(ref, np.clip(idx, 0, 3), head)
    np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize('shape,axis,keepdims,mode', [
    ((4, 5), 1, False, 'clip'), ((4, 5), 0, False, 'wrap'), ((2, 3, 4), -1, True, 'clip'),
    ((2, 3, 4), 1, False, 'wrap'), ((5,), 0, False, 'clip'), ((1,), 0, False, 'clip'),
    ((1, 1), -1, True, 'wrap'),
])
def test_pick(shape, axis, keepdims, mode):
    rng = np.random.default_rng(3)
    ishape = list(shape)
    if keepdims:
        ishape[axis] = 1
    else:
        del ishape[axis]
    idx = rng.integers(-2, shape[axis] + 2, ishape or [1]).astype('float32')
    check_grad('pick', [randn(shape), idx], {'axis': axis, 'keepdims': keepdims, 'mode': mode},
               wrt=[0])


def test_one_hot_has_no_gradient():
    for name in NO_GRAD_COVERED:
        assert _core.op_info(name)['no_grad'], name
    g = mx.sym.one_hot(mx.sym.var('x'), depth=3)._gradient(['x'])
    out = g.eval(x=mx.nd.array(np.array([0., 2.])))
    np.testing.assert_array_equal(out[0].asnumpy(), [0, 0])


@pytest.mark.parametrize('shape,cond_shape,cond_dtype', [
    ((3, 4), (3, 4), 'float64'), ((3, 4), (3,), 'int32'), ((2, 3, 2), (2, 3, 2), 'int8'),
    ((1,), (1,), 'float32'), ((4,), (4,), 'uint8'), ((2, 3, 2), (2,), 'float64'),
])
def test_where(shape, cond_shape, cond_dtype):
    cond = (np.random.default_rng(5).random(cond_shape) > 0.5).astype(cond_dtype)
    check_grad('where', [cond, randn(shape), randn(shape, 1)], wrt=[1, 2])


def test_where_condition_gets_no_gradient():
    c, x, y = np.array([1., 0.]), np.ones(2), np.zeros(2)
    gc, gx, gy = symbolic_grad('where', [c, x, y], {}, [0, 1, 2], [np.array([3., 4.])])
    np.testing.assert_array_equal(gc, [0, 0])
    np.testing.assert_array_equal(gx, [3, 0])
    np.testing.assert_array_equal(gy, [0, 4])


@pytest.mark.parametrize('shape,lo,hi', [((3, 4), -0.5, 0.5), ((10,), 0.0, 1.0), ((1,), -1, 1),
                                         ((1,), 0.5, 1.0), ((2, 3), -5, 5)])
def test_clip(shape, lo, hi):
    x = randn(shape)
    x[np.abs(x - lo) < 1e-3] += 0.01     # away from the kinks
    x[np.abs(x - hi) < 1e-3] += 0.01
    check_grad('clip', [x], {'a_min': lo, 'a_max': hi})


def test_clip_gradient_passes_on_the_bounds():
    # MXNet 1.9.1's clip_grad zeroes only values strictly outside [a_min, a_max].
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, np.nan])
    g, = symbolic_grad('clip', [x], {'a_min': -0.5, 'a_max': 0.5}, [0], [np.ones(6)])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0, 1])


@pytest.mark.parametrize('data,vocab,dim', [
    ([[1, 3, 3], [9, 1, 1]], 10, 6), ([0, 0, 0], 1, 1), ([2], 4, 3), ([[12, -1]], 5, 2),
    (np.arange(40) % 7, 7, 130),
])
@pytest.mark.parametrize('idx_dtype', ['float32', 'int32'])
def test_embedding(data, vocab, dim, idx_dtype):
    check_grad('Embedding', [np.array(data, dtype=idx_dtype), randn((vocab, dim))],
               {'input_dim': vocab, 'output_dim': dim}, wrt=[1])


def test_embedding_data_gets_no_gradient_and_rows_accumulate():
    data, w = np.array([2., 2., 0., 2.]), np.zeros((3, 2))
    head = np.ones((4, 2))
    gd, gw = symbolic_grad('Embedding', [data, w], {'input_dim': 3, 'output_dim': 2}, [0, 1],
                           [head])
    np.testing.assert_array_equal(gd, np.zeros(4))
    np.testing.assert_array_equal(gw, [[1, 1], [0, 0], [3, 3]])


def _time_backward_take(ograd, idx, w, reps=5):
    best = 1e9
    for _ in range(reps):
        t = time.perf_counter()
        mx.nd._backward_take(ograd, idx, w, axis=0, mode='clip').wait_to_read()
        best = min(best, time.perf_counter() - t)
    return best


def test_embedding_gradient_cost_does_not_scale_with_vocab_times_indices():
    vocab, dim = 200000, 32
    w = mx.nd.zeros((vocab, dim))
    few = _time_backward_take(mx.nd.ones((1, dim)), mx.nd.array(np.array([5.])), w)
    many_idx = np.random.default_rng(0).integers(0, vocab, 2000).astype('float32')
    many = _time_backward_take(mx.nd.ones((2000, dim)), mx.nd.array(many_idx), w)
    # Both are dominated by zeroing the (vocab, dim) gradient once; a kernel that walked the
    # whole weight per index would be ~2000x slower for `many`.
    assert many < 20 * few + 0.05, (few, many)


@pytest.mark.parametrize('shape,lengths,axis,value', [
    ((4, 3, 2), None, 0, 0.0), ((4, 3, 2), [1, 4, 0], 0, -1.0), ((3, 4), [2, 0, 3], 1, 5.0),
    ((2, 5, 3), [5, 1], 1, 0.0), ((1, 1), [0], 0, 1.0), ((1, 1), [1], 1, 0.0),
])
def test_sequence_mask(shape, lengths, axis, value):
    if lengths is None:
        check_grad('SequenceMask', [randn(shape)], {'axis': axis, 'value': value})
    else:
        check_grad('SequenceMask', [randn(shape), np.array(lengths, dtype='float32')],
                   {'use_sequence_length': True, 'axis': axis, 'value': value}, wrt=[0])


# ---- the _backward_ ops: forward against NumPy, and their own (second-order) rules ------------

FLOATS = ['float32', 'float64', 'float16']


def close(out, ref, dtype):
    got = out.asnumpy()
    assert got.dtype == np.dtype(dtype) and got.shape == ref.shape, (got.dtype, got.shape)
    tol = 2e-2 if dtype == 'float16' else 1e-5
    np.testing.assert_allclose(got.astype('f8'), ref, rtol=tol, atol=tol)


def tile_ref(g, shape, reps):
    on = g.ndim
    xs = (1,) * (on - len(shape)) + tuple(shape)
    rs = (1,) * (on - len(reps)) + tuple(reps)
    split = [v for pair in zip(rs, xs) for v in pair]
    return g.reshape(split).sum(axis=tuple(range(0, 2 * on, 2))).reshape(shape)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,reps', [((2, 3), (2, 3)), ((2, 3), (4,)), ((3,), (2, 2)),
                                        ((2, 3), (0, 1)), ((1,), (7,)), ((5, 700), (3, 2))])
def test_backward_tile(dtype, shape, reps):
    x = np.zeros(shape, dtype)
    yshape = np.tile(x, reps).shape
    g = randn(yshape).astype(dtype)
    out = mx.nd._backward_tile(nd(g), nd(x), reps=reps)
    close(out, tile_ref(g.astype('f8'), shape, reps), dtype)
    with mx.np_shape(0 in reps):  # its gradient is a tile: zero-size needs np_shape
        check_grad('_backward_tile', [randn(yshape), np.zeros(shape)], {'reps': reps}, wrt=[0])


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,repeats,axis', [((2, 3), 2, None), ((2, 3), 3, 0),
                                                ((2, 3, 4), 2, -1), ((2, 3), 0, 1),
                                                ((1,), 5, None), ((300, 2), 3, 1)])
def test_backward_repeat(dtype, shape, repeats, axis):
    x = np.zeros(shape, dtype)
    attrs = {'repeats': repeats} if axis is None else {'repeats': repeats, 'axis': axis}
    g = randn(mx.nd.repeat(nd(x), **attrs).shape).astype(dtype)
    out = mx.nd._backward_repeat(nd(g), nd(x), **attrs)
    g8 = g.astype('f8')
    if repeats == 0:
        ref = np.zeros(shape)
    elif axis is None:
        ref = g8.reshape(-1, repeats).sum(1).reshape(shape)
    else:
        ax = axis % len(shape)
        ref = g8.reshape(shape[:ax + 1] + (repeats,) + shape[ax + 1:]).sum(ax + 1)
    close(out, ref, dtype)
    check_grad('_backward_repeat', [randn(g.shape), np.zeros(shape)], attrs, wrt=[0])


def diag_ref(g, shape, k=0, axis1=0, axis2=1):
    if len(shape) == 1:
        return np.diagonal(g, k).copy()
    x = np.zeros(shape)
    moved = np.moveaxis(x, (axis1, axis2), (-2, -1))   # a view: writes land in x
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    for i in range(g.shape[-1]):
        moved[..., r0 + i, c0 + i] = g[..., i]
    return x


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,attrs', [((4,), {}), ((3,), {'k': -2}), ((3, 5), {'k': 1}),
                                         ((2, 3, 4), {'k': -1, 'axis1': 2, 'axis2': 1}),
                                         ((1, 1), {})])
def test_backward_diag(dtype, shape, attrs):
    x = np.zeros(shape, dtype)
    g = randn(mx.nd.diag(nd(x), **attrs).shape).astype(dtype)
    out = mx.nd._backward_diag(nd(g), nd(x), **attrs)
    close(out, diag_ref(g.astype('f8'), shape, **attrs), dtype)
    check_grad('_backward_diag', [randn(g.shape), np.zeros(shape)], attrs, wrt=[0])


@pytest.mark.parametrize('dtype', FLOATS + ['int32'])
def test_backward_reshape(dtype):
    g = np.arange(24).reshape(4, 6).astype(dtype)
    x = np.zeros((2, 3, 4), dtype)
    out = mx.nd._backward_Reshape(nd(g), nd(x))
    close(out, g.reshape(2, 3, 4).astype('f8'), dtype)
    check_grad('_backward_Reshape', [randn((4, 6)), np.zeros((2, 3, 4))], wrt=[0])


@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_concat(dtype):
    xs = [np.zeros((2, n, 3), dtype) for n in (1, 4, 2)]
    g = randn((2, 7, 3)).astype(dtype)
    outs = mx.nd._backward_Concat(nd(g), *[nd(x) for x in xs], num_args=3, dim=1)
    for o, r in zip(outs, np.split(g.astype('f8'), [1, 5], axis=1)):
        close(o, r, dtype)
    check_grad('_backward_Concat', [randn((2, 7, 3))] + [x.astype('f8') for x in xs],
               {'num_args': 3, 'dim': 1}, wrt=[0])


@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_slice_axis(dtype):
    x = np.zeros((3, 5, 2), dtype)
    g = randn((3, 2, 2)).astype(dtype)
    out = mx.nd._backward_slice_axis(nd(g), nd(x), axis=1, begin=-3, end=-1)
    ref = np.zeros((3, 5, 2))
    ref[:, 2:4] = g
    close(out, ref, dtype)
    check_grad('_backward_slice_axis', [randn((3, 2, 2)), np.zeros((3, 5, 2))],
               {'axis': 1, 'begin': -3, 'end': -1}, wrt=[0])


@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_slice_like(dtype):
    x = np.zeros((3, 5, 2), dtype)
    g = randn((2, 5, 1)).astype(dtype)
    out = mx.nd._backward_slice_like(nd(g), nd(x))
    ref = np.zeros((3, 5, 2))
    ref[:2, :, :1] = g
    close(out, ref, dtype)
    check_grad('_backward_slice_like', [randn((2, 5, 1)), np.zeros((3, 5, 2))], wrt=[0])


def take_ref(g, idx, shape, axis, mode):
    n = shape[axis]
    idx = np.trunc(idx).astype(np.int64).ravel()
    idx = np.mod(idx, n) if mode == 'wrap' else np.clip(idx, 0, n - 1)
    x = np.zeros(shape)
    xm = np.moveaxis(x, axis, 0)
    gm = np.moveaxis(g.reshape(shape[:axis] + (idx.size,) + shape[axis + 1:]), axis, 0)
    np.add.at(xm, idx, gm)
    return x


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,idx,axis,mode', [
    ((6, 4), [[1, 1], [5, 1], [9, -3]], 0, 'clip'), ((2, 5, 3), [4, 4, -1, 7], 1, 'wrap'),
    ((3, 1000), [0, 2, 0, 0, 1, 2], 0, 'clip'), ((4, 3), [2, 2, 2], -1, 'clip'),
    ((5,), [], 0, 'clip'),
])
def test_backward_take(dtype, shape, idx, axis, mode):
    x = np.zeros(shape, dtype)
    ix = np.array(idx, dtype='float32')
    g = randn(mx.nd.take(nd(x), nd(ix), axis=axis, mode=mode).shape).astype(dtype)
    out = mx.nd._backward_take(nd(g), nd(ix), nd(x), axis=axis, mode=mode)
    close(out, take_ref(g.astype('f8'), ix, shape, axis % len(shape), mode), dtype)
    check_grad('_backward_take', [randn(g.shape), ix, np.zeros(shape)],
               {'axis': axis, 'mode': mode}, wrt=[0])


def test_backward_take_large_parallel():
    rng = np.random.default_rng(2)
    shape, idx = (500, 257), rng.integers(0, 500, 3000).astype('int64')
    g = rng.standard_normal((3000, 257)).astype('float32')
    out = mx.nd._backward_take(nd(g), nd(idx), mx.nd.zeros(shape), axis=0)
    close(out, take_ref(g.astype('f8'), idx, shape, 0, 'clip'), 'float32')


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,axis,keepdims,mode', [((4, 5), 1, False, 'clip'),
                                                      ((2, 3, 4), 0, True, 'wrap'),
                                                      ((6,), 0, False, 'clip')])
def test_backward_pick(dtype, shape, axis, keepdims, mode):
    rng = np.random.default_rng(4)
    x = np.zeros(shape, dtype)
    ishape = list(shape)
    ishape[axis] = 1
    idx = rng.integers(-3, shape[axis] + 3, ishape)
    g = randn(mx.nd.pick(nd(x), nd(idx.reshape(ishape if keepdims else
                                              [d for i, d in enumerate(ishape) if i != axis]
                                              or [1])),
                         axis=axis, keepdims=keepdims).shape).astype(dtype)
    fixed = np.mod(idx, shape[axis]) if mode == 'wrap' else np.clip(idx, 0, shape[axis] - 1)
    ref = np.zeros(shape)
    np.put_along_axis(ref, fixed, g.astype('f8').reshape(ishape), axis)
    pidx = nd(idx.reshape(g.shape).astype('float32'))
    out = mx.nd._backward_pick(nd(g), pidx, nd(x), axis=axis, keepdims=keepdims, mode=mode)
    close(out, ref, dtype)
    check_grad('_backward_pick', [randn(g.shape), idx.reshape(g.shape).astype('float32'),
                                  np.zeros(shape)],
               {'axis': axis, 'keepdims': keepdims, 'mode': mode}, wrt=[0])


@pytest.mark.parametrize('dtype', FLOATS)
def test_backward_clip(dtype):
    x = np.array([-2, -0.5, -0.25, 0, 0.5, 0.75, 3], dtype)
    g = np.arange(7).astype(dtype) + 1
    out = mx.nd._backward_clip(nd(g), nd(x), a_min=-0.5, a_max=0.5)
    close(out, np.array([0, 2, 3, 4, 5, 0, 0.]), dtype)
    check_grad('_backward_clip', [randn(7), x.astype('f8')], {'a_min': -0.5, 'a_max': 0.5},
               wrt=[0])


@pytest.mark.parametrize('call,parts', [
    (lambda: mx.nd._backward_tile(mx.nd.ones((3, 3)), mx.nd.ones((2, 3)), reps=(2, 1)),
     ['_backward_tile', 'ograd has shape [3,3]', '[4,3]']),
    (lambda: mx.nd._backward_repeat(mx.nd.ones((5,)), mx.nd.ones((2,)), repeats=2),
     ['_backward_repeat', 'ograd has shape [5]']),
    (lambda: mx.nd._backward_diag(mx.nd.ones((3,)), mx.nd.ones((2, 2))),
     ['_backward_diag', 'ograd has shape [3]']),
    (lambda: mx.nd._backward_Reshape(mx.nd.ones((5,)), mx.nd.ones((2, 3))),
     ['_backward_Reshape', '5 elements']),
    (lambda: mx.nd._backward_Concat(mx.nd.ones((2, 4)), mx.nd.ones((2, 1)), mx.nd.ones((2, 2)),
                                    num_args=2, dim=1),
     ['_backward_Concat', 'ograd has shape [2,4]']),
    (lambda: mx.nd._backward_slice_axis(mx.nd.ones((2, 2)), mx.nd.ones((2, 5)), axis=1, begin=0,
                                        end=3), ['_backward_slice_axis', 'ograd has shape']),
    (lambda: mx.nd._backward_slice_like(mx.nd.ones((2, 6)), mx.nd.ones((2, 5))),
     ['_backward_slice_like', 'does not fit']),
    (lambda: mx.nd._backward_take(mx.nd.ones((3, 2)), mx.nd.ones((2,)), mx.nd.ones((4, 2))),
     ['_backward_take', 'ograd has shape [3,2]']),
    (lambda: mx.nd._backward_take(mx.nd.ones((2,), dtype='bool'), mx.nd.ones((2,)),
                                  mx.nd.ones((4,), dtype='bool')),
     ['_backward_take', 'dtype bool is not supported']),
    (lambda: mx.nd._backward_pick(mx.nd.ones((3,)), mx.nd.ones((4,)), mx.nd.ones((4, 5))),
     ['_backward_pick', 'ograd has shape [3]']),
    (lambda: mx.nd._backward_pick(mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.ones((4, 5))),
     ['_backward_pick', 'index shape [3]']),
    (lambda: mx.nd._backward_clip(mx.nd.ones((3,)), mx.nd.ones((4,)), a_min=0, a_max=1),
     ['_backward_clip']),
])
def test_backward_ops_validate(call, parts):
    with pytest.raises(mx.MXNetError) as e:
        call()
    for p in parts:
        assert p in str(e.value), str(e.value)


def test_second_order_through_a_backward_op():
    # d/dx of sum(w * d/dx sum(h * tile(x))) pairs the tile rule with _backward_tile's rule.
    x = mx.sym.var('x')
    y = mx.sym.tile(x, reps=(2, 1))
    gx = y._gradient(['x'], ['h'])
    ggh = gx._gradient(['h'], ['w'])
    w = randn((2, 3), 1)
    assert ggh.list_inputs() == ['w']   # linear in h: x and h drop out
    out = ggh.eval(w=mx.nd.array(w))
    np.testing.assert_allclose(out[0].asnumpy(), np.tile(w, (2, 1)), rtol=1e-6)


# ---- through autograd: the imperative tape and a hybridized block ----------------------------

def test_slice_with_none_through_the_tape():
    from hybridgluon import autograd
    a = np.arange(20.).reshape(4, 5)
    x = mx.nd.array(a, dtype='float64')
    x.attach_grad()
    head = randn((2, 3))
    with autograd.record():
        y = mx.nd.slice(x, begin=(None, 3), end=(None, 0), step=(-2, -1))
    y.backward(mx.nd.array(head, dtype='float64'))
    ref = np.zeros((4, 5))
    ref[::-2, 3:0:-1] = head
    np.testing.assert_array_equal(y.asnumpy(), a[::-2, 3:0:-1])
    np.testing.assert_array_equal(x.grad.asnumpy(), ref)


class _Mixer(mx.gluon.HybridBlock):
    """Many of this file's rules in one graph: Embedding, take, pick, Concat, split, stack,
    slice, transpose, tile, clip, where, reverse, SequenceMask."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.emb = self.params.get('emb', shape=(7, 4))

    def hybrid_forward(self, F, x, idx, emb):
        e = F.Embedding(idx, emb, input_dim=7, output_dim=4)              # (2, 3, 4)
        t = F.take(x, idx, axis=1, mode='wrap')                          # (2, 2, 3, 4)
        p = F.pick(x, F.tile(F.slice_axis(idx, axis=1, begin=0, end=1), reps=(1, 4)), axis=1)
        halves = F.split(F.Concat(e, F.slice(t, begin=(0, 1), end=(2, 2)).reshape((2, 3, 4)),
                                  dim=2), num_outputs=2, axis=2)
        s = F.stack(halves[0], F.transpose(halves[1], axes=(0, 1, 2)), axis=1)
        m = F.SequenceMask(F.tile(F.clip(s, -0.8, 0.8), reps=(1, 1, 2, 1)),
                           F.ones((2,)) * 1, use_sequence_length=True, axis=1)
        w = F.where(m > 0, m, F.reverse(m, axis=2))
        return w * w, p * p


def test_rules_agree_imperative_and_hybridized():
    from hybridgluon import autograd
    rng = np.random.default_rng(9)
    x = mx.nd.array(rng.standard_normal((2, 5, 4)))
    idx = mx.nd.array(np.array([[1, 6, 6], [0, 3, 1]], dtype='float32'))
    emb0 = mx.nd.array(rng.standard_normal((7, 4)))
    grads = []
    for hybrid in (False, True):
        net = _Mixer()
        net.initialize()
        net.emb.set_data(emb0)
        if hybrid:
            net.hybridize()
        xx = x.copy()
        xx.attach_grad()
        with autograd.record():
            outs = net(xx, idx)
        autograd.backward(list(outs))
        grads.append((xx.grad.asnumpy(), net.emb.grad().asnumpy(), outs[0].asnumpy(),
                      outs[1].asnumpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.abs(grads[0][1]).sum() > 0 and np.abs(grads[0][0]).sum() > 0
