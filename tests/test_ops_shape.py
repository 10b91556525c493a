"""Shape family: Reshape, Flatten, transpose, expand_dims, squeeze, SwapAxis, tile, repeat,
reverse, broadcast_to/_axis/_like, diag, Cast, add_n, and the NDArray methods built on them.
References are NumPy; Reshape's special codes use the expected shapes from MXNet's docs."""
import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['Reshape', 'Flatten', 'transpose', 'expand_dims', 'squeeze', 'SwapAxis', 'tile',
               'repeat', 'reverse', 'broadcast_to', 'broadcast_axis', 'broadcast_like', 'diag',
               'Cast', 'add_n']

DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64', 'bool']


def rand(shape, dtype, rng):
    if dtype == 'bool':
        return rng.random(shape) > 0.5
    if dtype == 'uint8':
        return rng.integers(0, 100, shape).astype(dtype)
    if dtype.startswith('int'):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def nd(a):
    return mx.nd.array(a, dtype=a.dtype)


def check(out, ref):
    got = out.asnumpy()
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_array_equal(got, ref)


def raises(fn, *parts):
    with pytest.raises(mx.MXNetError) as e:
        fn()
    for p in parts:
        assert p in str(e.value), str(e.value)


# ---- Reshape ---------------------------------------------------------------------------------

RESHAPE_CASES = [  # (input shape, shape codes, reverse, expected), from MXNet's Reshape docs
    ((2, 3, 4), (4, 0, 2), False, (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), False, (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), False, (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), False, (3, 1, 8)),
    ((2, 3, 4), (-1,), False, (24,)),
    ((2, 3, 4), (2, -1), False, (2, 12)),
    ((2, 3, 4), (-2,), False, (2, 3, 4)),
    ((2, 3, 4), (2, -2), False, (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), False, (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), False, (6, 4)),
    ((2, 3, 4, 5), (-3, -3), False, (6, 20)),
    ((2, 3, 4), (0, -3), False, (2, 12)),
    ((2, 3, 4), (-3, -2), False, (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), False, (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), False, (2, 1, 3, 4)),
    ((10, 5, 4), (-1, 0), False, (40, 5)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    ((2, 3, 4), (0, -1), True, (3, 8)),
    ((2, 3, 4), (-1, 4), True, (6, 4)),
    ((2, 3, 4), (-3, 0), True, (6, 4)),
    ((2, 3, 4), (-2,), True, (2, 3, 4)),
    ((6,), (2, 3), False, (2, 3)),
    ((1,), (-1,), False, (1,)),
    ((1,), (1, 1, 1), False, (1, 1, 1)),
    ((0, 3), (-1, 3), False, (0, 3)),
    ((2, 0, 4), (-1, 4), False, (0, 4)),
    ((0, 3), (-3,), False, (0,)),
    ((0, 3), (0, 3), True, (0, 3)),
]


@pytest.mark.parametrize('ishape,codes,reverse,expect', RESHAPE_CASES)
def test_reshape_codes(ishape, codes, reverse, expect, rng):
    a = rand(ishape, 'float32', rng)
    out = mx.nd.Reshape(nd(a), shape=codes, reverse=reverse)
    check(out, a.reshape(expect))
    op = mx._core.get_op('Reshape')
    (shape, flag), = op._infer(nd(a), shape=codes, reverse=reverse)
    assert tuple(shape) == expect


@pytest.mark.parametrize('dtype', DTYPES)
def test_reshape_dtypes_and_alias(dtype, rng):
    a = rand((3, 4, 5), dtype, rng)
    check(mx.nd.reshape(nd(a), shape=(-1, 5)), a.reshape(-1, 5))
    check(mx.nd.Reshape(nd(a), (-4, 1, 3, -4, 2, -1, 0)), a.reshape(1, 3, 2, 2, 5))


def test_reshape_target_shape():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check(mx.nd.Reshape(nd(a), target_shape=(4, 0)), a.reshape(4, 6))
    check(mx.nd.Reshape(nd(a), target_shape=(5, 0), keep_highest=True), a.reshape(2, 12))
    raises(lambda: mx.nd.Reshape(nd(a), target_shape=(5, 5)), 'Target shape size is different')


@pytest.mark.parametrize('ishape,codes,msg', [
    ((2, 3, 4), (-1, -1), 'One and only one dim can be inferred'),
    ((2, 3, 4), (5, -1), 'Target shape size is different to source'),
    ((2, 3), (4, 2), 'Target shape size is different to source'),
    ((2, 3), (7,), 'Target shape size is different to source'),
    ((2, 3, 4), (2, 3, -3), 'needs two input dims'),
    ((2, 3, 4), (-4, 3, -1, -2), 'do not divide original dim'),
    ((2, 3, 4), (-4, -1, -1, -2), '-4'),
    ((2, 3, 4), (2, -4, 1), 'followed by two dims'),
    ((2, 3, 4), (0, 0, 0, 0), 'no input dim to copy'),
    ((2, 3, 4), (-5, 4), 'invalid value -5'),
    ((0, 3), (0, -1), 'cannot infer'),
    ((2, 3), (), 'shape is empty'),
])
def test_reshape_errors(ishape, codes, msg):
    x = nd(np.zeros(ishape, np.float32))
    raises(lambda: mx.nd.Reshape(x, shape=codes), 'Reshape', msg,
           '[' + ','.join(str(d) for d in ishape) + ']')
    with pytest.raises(mx.MXNetError):
        x.reshape(codes)


def test_reshape_unknown_kwarg():
    x = nd(np.zeros((2, 3), np.float32))
    raises(lambda: mx.nd.Reshape(x, shape=(3, 2), foo=1), "Cannot find argument 'foo'")


# ---- Flatten, expand_dims, squeeze -----------------------------------------------------------

@pytest.mark.parametrize('shape', [(2, 3, 4), (5,), (1,), (0, 3), (3, 0, 2), (2, 1, 1, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float16', 'int8', 'bool'])
def test_flatten(shape, dtype, rng):
    a = rand(shape, dtype, rng)
    ref = a.reshape(shape[0], -1) if a.size else a.reshape(shape[0], int(np.prod(shape[1:])))
    check(mx.nd.Flatten(nd(a)), ref)
    check(mx.nd.flatten(nd(a)), ref)


@pytest.mark.parametrize('shape', [(2, 3), (4,), (1,), (0, 2)])
def test_expand_dims(shape, rng):
    a = rand(shape, 'float32', rng)
    nd_ = len(shape)
    for ax in range(-nd_ - 1, nd_ + 1):
        check(mx.nd.expand_dims(nd(a), axis=ax), np.expand_dims(a, ax))
    raises(lambda: mx.nd.expand_dims(nd(a), axis=nd_ + 1), 'expand_dims', 'axis')
    raises(lambda: mx.nd.expand_dims(nd(a), axis=-nd_ - 2), 'expand_dims', 'axis')
    raises(lambda: mx.nd.expand_dims(nd(a)), 'axis')


@pytest.mark.parametrize('dtype', DTYPES)
def test_expand_dims_dtypes(dtype, rng):
    a = rand((3, 2), dtype, rng)
    check(mx.nd.expand_dims(nd(a), 1), a[:, None, :])


@pytest.mark.parametrize('shape,axis,expect', [
    ((1, 3, 1, 4), None, (3, 4)),
    ((1, 3, 1, 4), 0, (3, 1, 4)),
    ((1, 3, 1, 4), (0, 2), (3, 4)),
    ((1, 3, 1, 4), -2, (1, 3, 4)),
    ((1, 3, 1, 4), (), (1, 3, 1, 4)),
    ((1, 1), None, (1,)),
    ((1,), None, (1,)),
    ((1, 1, 1), (0, 1, 2), (1,)),
    ((2, 3), None, (2, 3)),
    ((0, 1, 3), None, (0, 3)),
    ((0, 1, 3), 1, (0, 3)),
])
def test_squeeze(shape, axis, expect, rng):
    a = rand(shape, 'int32', rng)
    out = mx.nd.squeeze(nd(a), axis=axis)
    check(out, a.reshape(expect))


def test_squeeze_errors():
    x = nd(np.zeros((1, 3, 1), np.float32))
    raises(lambda: mx.nd.squeeze(x, axis=1), 'squeeze', 'not equal to one', '[1,3,1]')
    raises(lambda: mx.nd.squeeze(x, axis=3), 'squeeze', 'out of bounds')
    raises(lambda: mx.nd.squeeze(x, axis=-4), 'squeeze', 'out of bounds')
    raises(lambda: mx.nd.squeeze(x, axis=(0, -3)), 'squeeze', 'duplicate')


# ---- transpose, SwapAxis ---------------------------------------------------------------------

TRANSPOSE_CASES = [
    ((2, 3, 4), ()),
    ((2, 3, 4), (0, 2, 1)),
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (1, 0, 2)),
    ((2, 3, 4), (-1, 0, 1)),
    ((2, 3, 4, 5), (0, 2, 3, 1)),
    ((2, 3, 4, 5), (3, 1, 0, 2)),
    ((2, 3, 4, 5, 2), (4, 2, 0, 3, 1)),
    ((67, 129), (1, 0)),
    ((300, 500), ()),
    ((1000, 3), (1, 0)),
    ((3, 1000), (1, 0)),
    ((5, 70, 33), (2, 1, 0)),
    ((8, 3, 16, 16), (0, 2, 3, 1)),
    ((4, 1, 37, 5), (3, 2, 1, 0)),
    ((6,), ()),
    ((1, 1), ()),
    ((0, 3), ()),
    ((3, 0, 2), (2, 0, 1)),
]


@pytest.mark.parametrize('shape,axes', TRANSPOSE_CASES)
def test_transpose(shape, axes, rng):
    for dtype in ('float32', 'float64', 'float16', 'uint8', 'bool'):
        a = rand(shape, dtype, rng)
        out = mx.nd.transpose(nd(a), axes=axes)
        check(out, np.ascontiguousarray(np.transpose(a, axes or None)))


@pytest.mark.parametrize('dtype', DTYPES)
def test_transpose_dtypes(dtype, rng):
    a = rand((5, 6, 7), dtype, rng)
    check(mx.nd.transpose(nd(a), (1, 2, 0)), a.transpose(1, 2, 0))
    check(mx.nd.transpose(nd(a)), a.T)


def test_transpose_errors():
    x = nd(np.zeros((2, 3, 4), np.float32))
    raises(lambda: mx.nd.transpose(x, axes=(0, 0, 1)), 'transpose', 'not a permutation', '[2,3,4]')
    raises(lambda: mx.nd.transpose(x, axes=(0, 1)), 'transpose', 'not a permutation')
    raises(lambda: mx.nd.transpose(x, axes=(0, 1, 3)), 'transpose', 'not a permutation')


@pytest.mark.parametrize('dtype', DTYPES)
def test_swapaxis(dtype, rng):
    a = rand((2, 3, 4), dtype, rng)
    check(mx.nd.SwapAxis(nd(a), dim1=0, dim2=2), np.swapaxes(a, 0, 2))
    check(mx.nd.swapaxes(nd(a), dim1=1, dim2=-1), np.swapaxes(a, 1, 2))
    check(mx.nd.SwapAxis(nd(a)), a)
    check(mx.nd.SwapAxis(nd(a), 2, 1), np.swapaxes(a, 2, 1))
    z = rand((0, 3), dtype, rng)
    check(mx.nd.SwapAxis(nd(z), dim1=0, dim2=1), z.T)


def test_swapaxis_errors():
    x = nd(np.zeros((2, 3), np.float32))
    raises(lambda: mx.nd.SwapAxis(x, dim1=0, dim2=2), 'SwapAxis', 'dim2', '[2,3]')
    raises(lambda: mx.nd.SwapAxis(x, dim1=-3, dim2=0), 'SwapAxis', 'dim1')


# ---- tile, repeat, reverse -------------------------------------------------------------------

@pytest.mark.parametrize('shape,reps', [
    ((2, 3), (2,)), ((2, 3), (2, 3)), ((2, 3), (1, 2, 3, 2)), ((2, 3), ()), ((3,), (4, 2)),
    ((2, 3), (0, 2)), ((0, 3), (2, 2)), ((1,), (5,)), ((1, 1), (3, 1)), ((4, 5, 6), (2, 1, 3)),
    ((100, 70), (3, 2)),
])
def test_tile(shape, reps, rng):
    # A zero-size result needs NumPy shape semantics, as in MXNet (see test_tile_zero_size).
    with mx.np_shape(np.tile(np.zeros(shape), reps).size == 0):
        for dtype in ('float32', 'int64', 'float16', 'bool'):
            a = rand(shape, dtype, rng)
            check(mx.nd.tile(nd(a), reps=reps), np.tile(a, reps))


@pytest.mark.parametrize('shape,reps', [
    ((2, 3), (0,)), ((2, 3), (2, 0)), ((2, 3), (0, 0, 1)), ((0, 3), (2, 2)), ((4,), (3, 0)),
])
def test_tile_zero_size(shape, reps, rng):
    # Without np_shape MXNet reads a 0 dim as unknown, so its tile refuses a zero-size result;
    # with it, the result is NumPy's.
    a = rand(shape, 'float32', rng)
    with mx.np_shape(False):
        raises(lambda: mx.nd.tile(nd(a), reps=reps), 'tile', 'zero-size', 'np_shape')
        if 0 not in shape:  # a graph's shape rule refuses it too
            y = mx.sym.tile(mx.sym.var('x'), reps=reps)
            with pytest.raises(mx.MXNetError, match='zero-size'):
                y.infer_shape(x=shape)
    with mx.np_shape(True):
        check(mx.nd.tile(nd(a), reps=reps), np.tile(a, reps))
    # The setting is restored on leaving the block.
    raises(lambda: mx.nd.tile(nd(a), reps=reps), 'tile', 'zero-size')


def test_tile_errors():
    x = nd(np.zeros((2, 3), np.float32))
    raises(lambda: mx.nd.tile(x, reps=(2, -1)), 'tile', 'non-negative')
    raises(lambda: mx.nd.tile(x), 'reps')
    raises(lambda: mx.nd.tile(x, reps=(1,) * 11), 'tile')


@pytest.mark.parametrize('shape,repeats,axis', [
    ((2, 3), 2, None), ((2, 3), 3, 0), ((2, 3), 2, 1), ((2, 3), 2, -1), ((2, 3, 4), 3, 1),
    ((1,), 4, None), ((0, 3), 2, 0), ((0, 3), 2, None), ((2, 3), 1, 1), ((50, 60), 3, 1),
])
def test_repeat(shape, repeats, axis, rng):
    for dtype in DTYPES:
        a = rand(shape, dtype, rng)
        check(mx.nd.repeat(nd(a), repeats=repeats, axis=axis), np.repeat(a, repeats, axis))


def test_repeat_zero_and_errors():
    x = nd(np.ones((2, 3), np.float32))
    # MXNet returns an empty 1-D array for repeats=0 whatever the axis.
    assert mx.nd.repeat(x, repeats=0).shape == (0,)
    assert mx.nd.repeat(x, repeats=0, axis=1).shape == (0,)
    raises(lambda: mx.nd.repeat(x, repeats=-1), 'repeat', 'negative')
    raises(lambda: mx.nd.repeat(x, repeats=2, axis=2), 'repeat', 'out of bounds', '[2,3]')
    raises(lambda: mx.nd.repeat(x), 'repeats')


@pytest.mark.parametrize('shape,axis', [
    ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), (2,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (0, 1, 2)),
    ((2, 3, 4), -1), ((5,), 0), ((1,), 0), ((0, 3), 1), ((33, 65), (0, 1)), ((2, 3, 4), ()),
])
def test_reverse(shape, axis, rng):
    for dtype in DTYPES:
        a = rand(shape, dtype, rng)
        ref = np.flip(a, axis) if axis != () else a
        check(mx.nd.reverse(nd(a), axis=axis), np.ascontiguousarray(ref))
        check(mx.nd.flip(nd(a), axis=axis), np.ascontiguousarray(ref))


def test_reverse_twice_and_errors(rng):
    a = rand((2, 3), 'float32', rng)
    check(mx.nd.reverse(nd(a), axis=(1, 1)), a)  # MXNet reverses twice: the identity
    check(mx.nd.reverse(nd(a), axis=(0, -2, 1)), a[:, ::-1].copy())
    raises(lambda: mx.nd.reverse(nd(a), axis=2), 'reverse', 'out of bounds', '[2,3]')
    raises(lambda: mx.nd.reverse(nd(a)), 'axis')


# ---- broadcast_to, broadcast_axis, broadcast_like --------------------------------------------

@pytest.mark.parametrize('shape,target,expect', [
    ((1, 3), (4, 3), (4, 3)), ((2, 1, 1), (2, 3, 4), (2, 3, 4)), ((2, 1), (0, 5), (2, 5)),
    ((1, 1), (3, 0), (3, 1)), ((0, 1), (0, 3), (0, 3)), ((1,), (7,), (7,)), ((3,), (3,), (3,)),
    ((1, 1), (2, 0), (2, 1)), ((200, 1), (200, 300), (200, 300)), ((1, 4, 1), (3, 4, 5), (3, 4, 5)),
])
def test_broadcast_to(shape, target, expect, rng):
    for dtype in DTYPES:
        a = rand(shape, dtype, rng)
        check(mx.nd.broadcast_to(nd(a), shape=target), np.broadcast_to(a, expect).copy())


def test_broadcast_to_errors():
    x = nd(np.zeros((2, 3), np.float32))
    raises(lambda: mx.nd.broadcast_to(x, shape=(4, 3)), 'broadcast_to', 'cannot be broadcasted',
           '[2,3]')
    raises(lambda: mx.nd.broadcast_to(x, shape=(2, 2, 3)), 'broadcast_to', 'cannot be broadcasted')
    raises(lambda: mx.nd.broadcast_to(x, shape=(-1, 3)), 'broadcast_to')


@pytest.mark.parametrize('shape,axis,size', [
    ((1, 3, 1), (0, 2), (2, 4)), ((1, 3, 1), (-1,), (5,)), ((2, 1), 1, 3), ((1,), 0, 1),
    ((1, 3), (0,), (0,)), ((3, 1), (), ()), ((0, 1), 1, 4),
])
def test_broadcast_axis(shape, axis, size, rng):
    axes = axis if isinstance(axis, tuple) else (axis,)
    sizes = size if isinstance(size, tuple) else (size,)
    target = list(shape)
    for ax, sz in zip(axes, sizes):
        target[ax] = sz
    for dtype in DTYPES:
        a = rand(shape, dtype, rng)
        ref = np.broadcast_to(a, tuple(target)).copy()
        check(mx.nd.broadcast_axis(nd(a), axis=axis, size=size), ref)
        check(mx.nd.broadcast_axes(nd(a), axis=axis, size=size), ref)


def test_broadcast_axis_errors():
    x = nd(np.zeros((2, 1), np.float32))
    raises(lambda: mx.nd.broadcast_axis(x, axis=0, size=3), 'broadcast_axis', 'size 1', '[2,1]')
    raises(lambda: mx.nd.broadcast_axis(x, axis=2, size=3), 'broadcast_axis', 'axis')
    raises(lambda: mx.nd.broadcast_axis(x, axis=(1,), size=(3, 4)), 'broadcast_axis', 'entries')


@pytest.mark.parametrize('dtype', DTYPES)
def test_broadcast_like(dtype, rng):
    a = rand((1, 3), dtype, rng)
    b = rand((4, 3), 'float32', rng)
    check(mx.nd.broadcast_like(nd(a), nd(b)), np.broadcast_to(a, (4, 3)).copy())
    c = rand((5, 6), 'float32', rng)
    check(mx.nd.broadcast_like(nd(a), nd(c), lhs_axes=(0,), rhs_axes=(1,)),
          np.broadcast_to(a, (6, 3)).copy())
    check(mx.nd.broadcast_like(nd(a), nd(c), lhs_axes=(-2,), rhs_axes=(0,)),
          np.broadcast_to(a, (5, 3)).copy())
    z = rand((0, 3), 'float32', rng)
    check(mx.nd.broadcast_like(nd(a), nd(z)), np.zeros((0, 3), a.dtype))


def test_broadcast_like_errors():
    a = nd(np.zeros((2, 3), np.float32))
    raises(lambda: mx.nd.broadcast_like(a, nd(np.zeros((4, 3), np.float32))), 'broadcast_like',
           'cannot be broadcasted', '[2,3]', '[4,3]')
    raises(lambda: mx.nd.broadcast_like(a, nd(np.zeros((3,), np.float32))), 'broadcast_like')
    raises(lambda: mx.nd.broadcast_like(a, a, lhs_axes=(0,)), 'broadcast_like', 'both')
    raises(lambda: mx.nd.broadcast_like(a, a, lhs_axes=(0,), rhs_axes=(0, 1)), 'do not match')
    raises(lambda: mx.nd.broadcast_like(a, a, lhs_axes=(5,), rhs_axes=(0,)), 'out of bounds')


# ---- diag ------------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES)
def test_diag_2d_1d(dtype, rng):
    m = rand((4, 5), dtype, rng)
    v = rand((4,), dtype, rng)
    for k in (0, 1, -1, 3, -2, 5, -4):
        check(mx.nd.diag(nd(m), k=k), np.diag(m, k))
    for k in (0, 1, -1, 2):
        check(mx.nd.diag(nd(v), k=k), np.diag(v, k))
    check(mx.nd.diag(nd(m)), np.diag(m))


def test_diag_nd_and_edges(rng):
    a = rand((3, 4, 5), 'float32', rng)
    for k, ax1, ax2 in [(0, 0, 1), (1, 0, 1), (-1, 1, 2), (2, 2, 0), (0, -1, -3), (-2, 0, 2)]:
        check(mx.nd.diag(nd(a), k=k, axis1=ax1, axis2=ax2),
              np.ascontiguousarray(np.diagonal(a, k, ax1, ax2)))
    m = rand((3, 3), 'float32', rng)
    check(mx.nd.diag(nd(m), axis1=1, axis2=0), np.diagonal(m, 0, 1, 0).copy())
    check(mx.nd.diag(nd(m), k=3), np.zeros((0,), np.float32))
    check(mx.nd.diag(nd(np.zeros((0,), np.float32))), np.zeros((0, 0), np.float32))
    check(mx.nd.diag(nd(np.zeros((0,), np.float32)), k=2), np.zeros((2, 2), np.float32))
    check(mx.nd.diag(nd(np.array([7.0], np.float32))), np.array([[7.0]], np.float32))


def test_diag_errors():
    m = nd(np.zeros((3, 3), np.float32))
    raises(lambda: mx.nd.diag(m, k=4), 'diag', 'Diagonal does not exist', '[3,3]')
    raises(lambda: mx.nd.diag(m, axis1=1, axis2=1), 'diag', 'same axis')
    raises(lambda: mx.nd.diag(m, axis1=2), 'diag', 'out of bounds')


# ---- Cast ------------------------------------------------------------------------------------

@pytest.mark.parametrize('src', DTYPES)
def test_cast_all_pairs(src):
    vals = np.array([0, 1, 2, 5, 100, 127, 3, 0], np.float64)
    a = vals.astype(src)
    for dst in DTYPES:
        out = mx.nd.Cast(nd(a), dtype=dst)
        check(out, a.astype(dst))
        check(mx.nd.cast(nd(a), dst), a.astype(dst))


def test_cast_fractions_and_negatives():
    a = np.array([2.7, -2.7, 0.5, -0.5, 99.9, -1.5, 0.0], np.float32)
    for src in ('float32', 'float64', 'float16'):
        x = a.astype(src)
        for dst in ('int32', 'int8', 'int64', 'bool', 'float32', 'float64', 'float16'):
            check(mx.nd.Cast(nd(x), dtype=dst), x.astype(dst))
    i = np.array([-1, -128, 127, 0, 5], np.int32)
    for dst in ('int8', 'int64', 'float32', 'float16', 'bool', 'uint8'):
        check(mx.nd.Cast(nd(i), dtype=dst), i.astype(dst))


def test_cast_out_of_range_is_defined():
    a = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 300.0, -1.0], np.float64)
    x = nd(a)
    # x86 semantics (what NumPy and MXNet give there): no crash, no undefined values.
    i32 = mx.nd.Cast(x, dtype='int32').asnumpy()
    assert list(i32) == [-2**31] * 5 + [300, -1]
    i64 = mx.nd.Cast(x, dtype='int64').asnumpy()
    assert list(i64[:3]) == [-2**63] * 3 and list(i64[3:]) == [10**10, -10**10, 300, -1]
    u8 = mx.nd.Cast(x, dtype='uint8').asnumpy()
    assert list(u8) == [0, 0, 0, 0, 0, 44, 255]
    assert list(mx.nd.Cast(x, dtype='bool').asnumpy()) == [True] * 7
    f16 = mx.nd.Cast(x, dtype='float16').asnumpy()
    assert np.isnan(f16[0]) and f16[1] == np.inf and f16[3] == np.inf and f16[5] == 300


def test_cast_float16_rounding(rng):
    # Wide magnitudes: subnormal halves, ties, overflow to inf; lengths off the SIMD width.
    mags = 2.0 ** rng.uniform(-27, 17, 1003)
    a = (mags * rng.choice([-1, 1], mags.size)).astype(np.float32)
    a[:6] = [0.0, -0.0, 65519.0, 65520.0, 1e-8, np.float32(2.0 ** -25)]
    h = mx.nd.Cast(nd(a), dtype='float16').asnumpy()
    with np.errstate(over='ignore'):
        ref = a.astype(np.float16)
    np.testing.assert_array_equal(h.view(np.uint16), ref.view(np.uint16))
    back = mx.nd.Cast(nd(h), dtype='float32').asnumpy()
    np.testing.assert_array_equal(back, h.astype(np.float32))
    n = mx.nd.Cast(nd(np.array([np.nan] * 9, np.float32)), dtype='float16').asnumpy()
    assert np.isnan(n).all()


def test_cast_sizes_and_errors(rng):
    for shape in [(0,), (1,), (3, 0), (70000,)]:
        a = rand(shape, 'float32', rng)
        check(mx.nd.Cast(nd(a), dtype='float64'), a.astype('float64'))
        check(mx.nd.Cast(nd(a), dtype='float16'), a.astype('float16'))
    x = nd(np.zeros((2,), np.float32))
    raises(lambda: mx.nd.Cast(x), 'dtype')
    raises(lambda: mx.nd.Cast(x, dtype='complex64'), 'dtype')


# ---- add_n -----------------------------------------------------------------------------------

@pytest.mark.parametrize('n', [1, 2, 3, 5])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16', 'uint8', 'int32', 'int8',
                                   'int64'])
def test_add_n(n, dtype, rng):
    for shape in [(3, 4), (1,), (0, 2), (5000,)]:
        arrs = [rand(shape, dtype, rng) for _ in range(n)]
        if dtype == 'uint8':
            arrs = [(x % 40).astype(dtype) for x in arrs]
        ref = arrs[0].copy()
        for x in arrs[1:]:
            ref = (ref + x).astype(dtype)
        out = mx.nd.add_n(*[nd(x) for x in arrs])
        if dtype == 'float16':
            np.testing.assert_allclose(out.asnumpy().astype(np.float32), ref.astype(np.float32),
                                       rtol=2e-3, atol=2e-3)
        else:
            check(out, ref)
    a = rand((2, 3), dtype, rng)
    assert mx.nd.ElementWiseSum(nd(a), nd(a)).shape == (2, 3)


def test_add_n_in_place(rng):
    a = rand((3, 2000), 'float32', rng)
    x = nd(a)
    out = mx.nd.add_n(x, x, x, out=x)
    np.testing.assert_allclose(out.asnumpy(), 3 * a, rtol=1e-6)
    np.testing.assert_allclose(x.asnumpy(), 3 * a, rtol=1e-6)


def test_add_n_errors():
    a = nd(np.zeros((2, 3), np.float32))
    b = nd(np.zeros((3, 2), np.float32))
    raises(lambda: mx.nd.add_n(a, b), 'add_n', '[2,3]', '[3,2]')
    raises(lambda: mx.nd.add_n(a, nd(np.zeros((2, 3), np.float64))), 'add_n', 'dtype')
    raises(lambda: mx.nd.add_n(nd(np.zeros((2,), bool)), nd(np.zeros((2,), bool))), 'bool')


# ---- NDArray methods -------------------------------------------------------------------------

def test_ndarray_reshape_views(rng):
    a = rand((2, 3, 4), 'float32', rng)
    x = nd(a)
    y = x.reshape(4, 0, 2)
    assert y.shape == (4, 3, 2)
    assert x._shares_storage(y)
    np.testing.assert_array_equal(y.asnumpy(), a.reshape(4, 3, 2))
    assert x.reshape((-3, 4)).shape == (6, 4)
    assert x.reshape(shape=(-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    z = mx.nd.array(np.zeros((10, 5, 4), np.float32))
    assert z.reshape(-1, 0).shape == (40, 5)
    assert z.reshape(-1, 0, reverse=True).shape == (50, 4)
    assert z.reshape((-1, 0), reverse=True).shape == (50, 4)
    y._copy_from(nd(np.full((4, 3, 2), 7, np.float32)))
    assert (x.asnumpy() == 7).all()
    with pytest.raises(mx.MXNetError):
        x.reshape(5, -1)


def test_ndarray_shape_methods(rng):
    a = rand((2, 1, 3), 'float32', rng)
    x = nd(a)
    e = x.expand_dims(0, inplace=True)  # a view only with inplace=True, as MXNet's
    assert e.shape == (1, 2, 1, 3) and x._shares_storage(e)
    assert not x._shares_storage(x.expand_dims(0))
    assert x.expand_dims(-1).shape == (2, 1, 3, 1)
    s = x.squeeze(inplace=True)
    assert s.shape == (2, 3) and x._shares_storage(s)
    assert not x._shares_storage(x.squeeze())
    assert x.squeeze(axis=1).shape == (2, 3)
    check(x.transpose(), a.T.copy())
    check(x.transpose(1, 0, 2), a.transpose(1, 0, 2).copy())
    check(x.transpose((2, 0, 1)), a.transpose(2, 0, 1).copy())
    check(x.T, a.T.copy())
    v = nd(np.arange(3, dtype=np.float32))
    assert v.T is v
    check(x.swapaxes(0, 2), np.swapaxes(a, 0, 2).copy())
    check(x.flatten(), a.reshape(2, 3))
    check(x.astype('int32'), a.astype(np.int32))
    check(x.astype(np.float16), a.astype(np.float16))
    assert x.astype('float32', copy=False) is x
    check(x.tile((2, 1, 1)), np.tile(a, (2, 1, 1)))
    check(x.repeat(2, axis=2), np.repeat(a, 2, axis=2))
    check(x.flip(2), np.flip(a, 2).copy())
    check(x.broadcast_to((2, 4, 3)), np.broadcast_to(a, (2, 4, 3)).copy())


def test_large_transpose_matches_numpy(rng):
    a = rand((1030, 777), 'float32', rng)
    check(mx.nd.transpose(nd(a)), a.T.copy())
    b = rand((2, 130, 3, 66), 'int8', rng)
    check(mx.nd.transpose(nd(b), axes=(3, 1, 0, 2)), b.transpose(3, 1, 0, 2).copy())
