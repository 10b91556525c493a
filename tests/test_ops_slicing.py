"""Slicing ops (Concat, stack, SliceChannel, slice, slice_axis, slice_like, _slice_assign,
_slice_assign_scalar) against NumPy, and NDArray indexing end to end (it runs these ops)."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.base import MXNetError

OPS_COVERED = ['Concat', 'stack', 'SliceChannel', 'slice', 'slice_axis', 'slice_like',
               '_slice_assign', '_slice_assign_scalar']

ALL_DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int8', 'int32', 'int64']


def rand(rng, shape, dtype='float32'):
    if np.dtype(dtype).kind == 'f':
        return rng.standard_normal(shape).astype(dtype)
    lo, hi = (0, 100) if np.dtype(dtype).kind == 'u' else (-50, 50)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def nd(a):
    return mx.nd.array(a, dtype=a.dtype)


def check(out, ref):
    got = out.asnumpy()
    assert got.dtype == ref.dtype
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_array_equal(got, ref)


# ---- Concat -----------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ['int32', 'float64', 'float32', 'float16', 'uint8', 'int64'])
@pytest.mark.parametrize('n', [2, 4])
@pytest.mark.parametrize('dim', [0, 1, 2, -1])
def test_concat(rng, dtype, n, dim):
    base = [2, 3, 4]
    arrs = []
    for i in range(n):
        shape = list(base)
        shape[dim] = int(rng.integers(0, 4)) if i % 2 else 1 + i  # some pieces are 0-size
        arrs.append(rand(rng, shape, dtype))
    out = mx.nd.concat(*[nd(a) for a in arrs], dim=dim)
    check(out, np.concatenate(arrs, axis=dim))
    out = mx.nd.Concat(*[nd(a) for a in arrs], num_args=n, dim=dim)
    check(out, np.concatenate(arrs, axis=dim))


def test_concat_default_dim_and_small_shapes(rng):
    a, b = rand(rng, (1, 1)), rand(rng, (1, 1))
    check(mx.nd.concat(nd(a), nd(b)), np.concatenate([a, b], axis=1))  # dim=1 by default
    z = np.zeros((0, 3), np.float32)
    check(mx.nd.concat(nd(z), nd(z), dim=0), np.zeros((0, 3), np.float32))
    check(mx.nd.concat(nd(z), nd(z), dim=1), np.zeros((0, 6), np.float32))
    one = rand(rng, (5,))
    check(mx.nd.concat(nd(one), dim=0), one)
    check(mx.nd.concatenate([nd(a), nd(b)]), np.concatenate([a, b], axis=0))


def test_concat_large_parallel(rng):
    arrs = [rand(rng, (300, k)) for k in (100, 257, 3)]
    check(mx.nd.concat(*[nd(a) for a in arrs], dim=1), np.concatenate(arrs, axis=1))
    arrs = [rand(rng, (70000,)), rand(rng, (50001,))]
    check(mx.nd.concat(*[nd(a) for a in arrs], dim=0), np.concatenate(arrs))


def test_concat_errors(rng):
    a, b = nd(rand(rng, (2, 3))), nd(rand(rng, (3, 4)))
    with pytest.raises(MXNetError, match=r'\[2,3\].*\[3,4\]'):
        mx.nd.concat(a, b, dim=1)
    with pytest.raises(MXNetError, match='dim=2'):
        mx.nd.concat(a, a, dim=2)
    with pytest.raises(MXNetError, match='dim=-3'):
        mx.nd.concat(a, a, dim=-3)
    with pytest.raises(MXNetError, match='dtype'):
        mx.nd.concat(a, nd(rand(rng, (2, 3), 'float64')), dim=0)
    with pytest.raises(MXNetError, match=r'\[2,3\].*\[3\]'):
        mx.nd.concat(a, nd(rand(rng, (3,))), dim=0)
    with pytest.raises(MXNetError, match='expects 3 input'):
        mx.nd.Concat(a, a, num_args=3)
    with pytest.raises(MXNetError, match="Cannot find argument 'axis'"):
        mx.nd.concat(a, a, axis=0)


# ---- stack ------------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('axis', [0, 1, 2, -1, -3])
def test_stack(rng, dtype, axis):
    for shape in [(2, 3), (1, 1), (0, 4)]:
        arrs = [rand(rng, shape, dtype) for _ in range(3)]
        check(mx.nd.stack(*[nd(a) for a in arrs], axis=axis), np.stack(arrs, axis=axis))
    a = rand(rng, (4,), dtype)
    check(mx.nd.stack(nd(a)), np.stack([a]))


def test_stack_errors(rng):
    a, b = nd(rand(rng, (2, 3))), nd(rand(rng, (3, 2)))
    with pytest.raises(MXNetError, match=r'\[2,3\].*\[3,2\]'):
        mx.nd.stack(a, b)
    with pytest.raises(MXNetError, match='axis=3'):
        mx.nd.stack(a, a, axis=3)
    with pytest.raises(MXNetError, match="Cannot find argument 'dim'"):
        mx.nd.stack(a, a, dim=0)


# ---- SliceChannel -----------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_split(rng, dtype):
    x = rand(rng, (4, 6, 2), dtype)
    for axis, n in [(0, 2), (1, 3), (1, 6), (-1, 2), (2, 1), (0, 4)]:
        outs = mx.nd.split(nd(x), num_outputs=n, axis=axis)
        refs = np.split(x, n, axis=axis)
        if n == 1:
            check(outs, refs[0])
            continue
        assert isinstance(outs, list) and len(outs) == n
        for o, r in zip(outs, refs):
            check(o, r)
    outs = mx.nd.SliceChannel(nd(x), num_outputs=4, axis=0, squeeze_axis=True)
    for o, r in zip(outs, np.split(x, 4, axis=0)):
        check(o, r[0])
    # default axis is 1
    for o, r in zip(mx.nd.split(nd(x), num_outputs=2), np.split(x, 2, axis=1)):
        check(o, r)
    one = rand(rng, (1, 1), dtype)
    check(mx.nd.split(nd(one), num_outputs=1, squeeze_axis=True), one[:, 0])


def test_split_zero_size_and_method(rng):
    x = np.zeros((0, 4), np.float32)
    outs = mx.nd.split(nd(x), num_outputs=2, axis=1)
    assert [o.shape for o in outs] == [(0, 2), (0, 2)]
    y = rand(rng, (2, 4))
    for o, r in zip(nd(y).split(num_outputs=2, axis=1), np.split(y, 2, axis=1)):
        check(o, r)


def test_split_errors(rng):
    x = nd(rand(rng, (2, 4)))
    with pytest.raises(MXNetError, match=r'\[2,4\].*evenly'):
        mx.nd.split(x, num_outputs=3, axis=1)
    with pytest.raises(MXNetError, match='squeeze_axis'):
        mx.nd.split(x, num_outputs=2, axis=1, squeeze_axis=True)
    with pytest.raises(MXNetError, match='axis=2'):
        mx.nd.split(x, num_outputs=2, axis=2)
    with pytest.raises(MXNetError, match='num_outputs'):
        mx.nd.split(x, num_outputs=0)
    with pytest.raises(MXNetError, match='num_outputs'):
        mx.nd.split(x, axis=1)
    with pytest.raises(MXNetError, match="Cannot find argument 'dim'"):
        mx.nd.split(x, num_outputs=2, dim=1)


# ---- slice ------------------------------------------------------------------------------------

def _np_key(begin, end, step):
    step = step or (None,) * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _pick(rng, n):
    """A slice bound: None, in range, negative or out of range."""
    return None if rng.random() < 0.25 else int(rng.integers(-n - 3, n + 4))


def _random_key(rng, shape):
    k = int(rng.integers(1, len(shape) + 1))
    begin, end, step = [], [], []
    for d in range(k):
        n = shape[d]
        s = 1 if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
        begin.append(_pick(rng, n))
        end.append(_pick(rng, n))
        step.append(None if (s == 1 and rng.random() < 0.5) else s)
    return tuple(begin), tuple(end), tuple(step)


@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_slice_random_against_numpy(rng, dtype):
    for shape in [(5,), (4, 6), (3, 1, 5), (2, 3, 4, 5), (0, 3), (1,)]:
        x = rand(rng, shape, dtype)
        for _ in range(25):
            b, e, s = _random_key(rng, shape)
            check(mx.nd.slice(nd(x), begin=b, end=e, step=s), x[_np_key(b, e, s)])


def test_slice_cases(rng):
    x = rand(rng, (4, 5, 6))
    X = nd(x)
    check(mx.nd.slice(X, begin=(1,), end=(3,)), x[1:3])  # partial: other axes whole
    check(mx.nd.slice(X, begin=(None, 1), end=(None, None), step=(-1, 2)), x[::-1, 1::2])
    check(mx.nd.slice(X, begin=(-1, -2, 0), end=(0, -5, 6), step=(-1, -1, 3)),
          x[-1:0:-1, -2:-5:-1, ::3])
    check(mx.nd.slice(X, (0, 0), (2, 2)), x[0:2, 0:2])  # positional attrs
    check(mx.nd.crop(X, begin=(1, 1, 1), end=(2, 2, 2)), x[1:2, 1:2, 1:2])
    check(mx.nd.slice(X, begin=(10,), end=(20,)), x[10:20])  # clamps to empty
    check(mx.nd.slice(X, begin=(), end=()), x)
    check(mx.nd.slice(X, begin=(0,), end=(4,), step=(None,)), x)
    big = rand(rng, (400, 300))
    check(mx.nd.slice(nd(big), begin=(None, 1), end=(None, None), step=(-1, 2)), big[::-1, 1::2])
    check(mx.nd.slice(nd(big), begin=(3,), end=(390,)), big[3:390])
    wide = rand(rng, (3, 100001))  # rows cut into chunks, strided on both axes
    check(mx.nd.slice(nd(wide), begin=(None, None), end=(None, None), step=(-1, -2)),
          wide[::-1, ::-2])
    long = rand(rng, (200000,))
    check(mx.nd.slice(nd(long), begin=(None,), end=(None,), step=(-1,)), long[::-1])


def test_slice_errors(rng):
    x = nd(rand(rng, (2, 3)))
    with pytest.raises(MXNetError, match='step'):
        mx.nd.slice(x, begin=(0,), end=(1,), step=(0,))
    with pytest.raises(MXNetError, match='same length'):
        mx.nd.slice(x, begin=(0, 0), end=(1,))
    with pytest.raises(MXNetError, match=r'\[2,3\]'):
        mx.nd.slice(x, begin=(0, 0, 0), end=(1, 1, 1))
    with pytest.raises(MXNetError, match='step'):
        mx.nd.slice(x, begin=(0, 0), end=(1, 1), step=(1,))
    with pytest.raises(MXNetError, match='begin'):
        mx.nd.slice(x, end=(1,))
    with pytest.raises(MXNetError, match="Cannot find argument 'axis'"):
        mx.nd.slice(x, begin=(0,), end=(1,), axis=0)


# ---- slice_axis -------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_slice_axis(rng, dtype):
    x = rand(rng, (3, 5, 4), dtype)
    X = nd(x)
    check(mx.nd.slice_axis(X, axis=1, begin=1, end=3), x[:, 1:3])
    check(mx.nd.slice_axis(X, axis=-1, begin=-3, end=None), x[..., -3:])
    check(mx.nd.slice_axis(X, axis=0, begin=-2, end=-1), x[-2:-1])
    check(mx.nd.slice_axis(X, axis=2, begin=0), x)
    check(mx.nd.slice_axis(X, 1, 2, 5), x[:, 2:5])
    check(X.slice_axis(axis=1, begin=0, end=1), x[:, 0:1])
    z = rand(rng, (2, 0), dtype)
    check(mx.nd.slice_axis(nd(z), axis=1, begin=0, end=None), z)
    one = rand(rng, (1,), dtype)
    check(mx.nd.slice_axis(nd(one), axis=0, begin=0, end=1), one)


def test_slice_axis_errors(rng):
    x = nd(rand(rng, (3, 5)))
    with pytest.raises(MXNetError, match='axis=2'):
        mx.nd.slice_axis(x, axis=2, begin=0, end=1)
    with pytest.raises(MXNetError, match=r'begin=3.*\[3,5\]'):
        mx.nd.slice_axis(x, axis=1, begin=3, end=2)
    with pytest.raises(MXNetError, match='end=6'):
        mx.nd.slice_axis(x, axis=1, begin=0, end=6)
    with pytest.raises(MXNetError, match='begin=-7'):
        mx.nd.slice_axis(x, axis=1, begin=-7, end=2)
    with pytest.raises(MXNetError, match='axis'):
        mx.nd.slice_axis(x, begin=0, end=1)


# ---- slice_like -------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_slice_like(rng, dtype):
    x = rand(rng, (4, 5, 6), dtype)
    like = np.zeros((2, 3, 4), np.float32)
    check(mx.nd.slice_like(nd(x), nd(like)), x[:2, :3, :4])
    check(mx.nd.slice_like(nd(x), nd(like), axes=(0, 2)), x[:2, :, :4])
    check(mx.nd.slice_like(nd(x), nd(like), axes=(-1,)), x[..., :4])
    check(mx.nd.slice_like(nd(x), nd(np.zeros((1, 5), np.float32)), axes=(0,)), x[:1])
    check(mx.nd.slice_like(nd(x), nd(np.zeros((0, 5, 6), np.float32))), x[:0])
    one = rand(rng, (1, 1), dtype)
    check(mx.nd.slice_like(nd(one), nd(one)), one)


def test_slice_like_errors(rng):
    x = nd(rand(rng, (4, 5)))
    with pytest.raises(MXNetError, match=r'\[4,5\].*\[2\]'):
        mx.nd.slice_like(x, nd(rand(rng, (2,))))
    with pytest.raises(MXNetError, match='exceeds'):
        mx.nd.slice_like(x, nd(rand(rng, (5, 5))))
    with pytest.raises(MXNetError, match='axis 2'):
        mx.nd.slice_like(x, nd(rand(rng, (2, 2))), axes=(2,))
    with pytest.raises(MXNetError, match="Cannot find argument 'axis'"):
        mx.nd.slice_like(x, x, axis=(0,))


# ---- _slice_assign, _slice_assign_scalar ------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL_DTYPES)
def test_slice_assign_random(rng, dtype):
    op = mx._core.get_op('_slice_assign')
    for shape in [(5,), (4, 6), (3, 2, 5), (0, 3), (1,)]:
        x = rand(rng, shape, dtype)
        for _ in range(15):
            b, e, s = _random_key(rng, shape)
            key = _np_key(b, e, s)
            v = rand(rng, x[key].shape, dtype)
            ref = x.copy()
            ref[key] = v
            X = nd(x)
            check(op(X, nd(v), begin=b, end=e, step=s), ref)
            check(X, x)  # the input is not modified


@pytest.mark.parametrize('dtype', ALL_DTYPES + ['bool'])
def test_slice_assign_scalar_random(rng, dtype):
    op = mx._core.get_op('_slice_assign_scalar')
    for shape in [(5,), (4, 6), (3, 2, 5), (0, 3), (1,)]:
        x = rand(rng, shape, 'int8').astype(dtype)
        for _ in range(15):
            b, e, s = _random_key(rng, shape)
            ref = x.copy()
            ref[_np_key(b, e, s)] = 3
            check(op(nd(x), scalar=3, begin=b, end=e, step=s), ref)


def test_slice_assign_cases(rng):
    sa, sas = mx._core.get_op('_slice_assign'), mx._core.get_op('_slice_assign_scalar')
    x = rand(rng, (300, 400))
    ref = x.copy()
    ref[::-2, 5:300:3] = 1.5
    check(sas(nd(x), scalar=1.5, begin=(None, 5), end=(None, 300), step=(-2, 3)), ref)
    v = rand(rng, (100, 400))
    ref = x.copy()
    ref[100:200] = v
    check(sa(nd(x), nd(v), begin=(100,), end=(200,)), ref)
    check(mx.nd._crop_assign_scalar(nd(x), begin=(0,), end=(1,)),
          np.concatenate([np.zeros((1, 400), np.float32), x[1:]]))  # scalar defaults to 0
    i = np.arange(6, dtype=np.int32)
    check(sas(nd(i), scalar=2.7, begin=(1,), end=(3,)), np.array([0, 2, 2, 3, 4, 5], np.int32))


def test_slice_assign_errors(rng):
    sa = mx._core.get_op('_slice_assign')
    x = nd(rand(rng, (4, 3)))
    with pytest.raises(MXNetError, match=r'\[2,2\].*\[2,3\]'):
        sa(x, nd(rand(rng, (2, 2))), begin=(0,), end=(2,))
    with pytest.raises(MXNetError, match='dtype'):
        sa(x, nd(rand(rng, (2, 3), 'float64')), begin=(0,), end=(2,))
    with pytest.raises(MXNetError, match='step'):
        mx.nd._slice_assign_scalar(x, begin=(0,), end=(2,), step=(0,))
    with pytest.raises(MXNetError, match="Cannot find argument 'value'"):
        mx.nd._slice_assign_scalar(x, value=1, begin=(0,), end=(2,))


def test_infer_without_running(rng):
    x = nd(rand(rng, (3, 4), 'int32'))
    i32 = 4  # MXNet type flag
    assert mx._core.get_op('SliceChannel')._infer(x, num_outputs=2) == [((3, 2), i32)] * 2
    assert mx._core.get_op('slice')._infer(x, begin=(None,), end=(-1,)) == [((2, 4), i32)]
    assert mx._core.get_op('Concat')._infer(x, x, x, dim=0) == [((9, 4), i32)]
    assert mx._core.get_op('stack')._infer(x, x, axis=-1) == [((3, 4, 2), i32)]
    with pytest.raises(MXNetError, match='end=5'):
        mx._core.get_op('slice_axis')._infer(x, axis=1, begin=0, end=5)


# ---- NDArray indexing end to end --------------------------------------------------------------

GET_KEYS = [
    1, -1, slice(1, 3), slice(None, None, -1), slice(None, None, 2), slice(-2, None),
    (slice(None), 1), (Ellipsis, slice(None, None, 2)), (1, 2), (-1, -2), (None, 1),
    (slice(None), slice(-3, None)), (1, slice(None), slice(None, None, -2)), (Ellipsis, 1),
    (slice(10, 20),), (0, Ellipsis, 0), (slice(None), None, slice(1, 3)), (slice(5, 0, -2), 2),
]


@pytest.mark.parametrize('key', GET_KEYS, ids=[repr(k) for k in GET_KEYS])
def test_getitem(key):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    got = nd(x)[key]
    check(got, x[key])


def test_getitem_int_to_element():
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    check(nd(x)[1, 2, 3], np.array([x[1, 2, 3]]))  # MXNet 1.x: shape (1,), never 0-d
    check(nd(x)[2][3], x[2, 3])


def test_getitem_out_of_range():
    X = nd(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(IndexError) as err:
        X[3]
    assert isinstance(err.value, MXNetError)  # raised by the core
    with pytest.raises(IndexError):
        X[-4]
    with pytest.raises(IndexError):
        X[1, 4]
    with pytest.raises(IndexError):
        X[:, 4]
    with pytest.raises(IndexError):
        X[:, -5]
    with pytest.raises(IndexError):
        X[0, 0, 0]


def test_getitem_array_index():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    check(nd(x)[[0, 2]], x[[0, 2]])
    check(nd(x)[:, [1, -1]], x[:, [1, -1]])


def _setitem_cases():
    return [
        ((slice(1, 3),), lambda s: np.full(s, 2.0, np.float32), None),
        ((slice(None), 0), None, 7),
        ((slice(None, None, 2), slice(1, None)), lambda s: np.arange(np.prod(s), dtype=np.float32)
         .reshape(s), None),
        ((slice(None, None, -1), slice(None, None, 2)), None, -1.5),
        ((-1, slice(1, 3)), lambda s: np.ones(s, np.float32) * 9, None),
        ((slice(1, 2), Ellipsis, 3), None, 4),
        ((slice(0, 4, 2),), None, 3.0),
    ]


@pytest.mark.parametrize('case', range(7))
def test_setitem(case):
    key, make, scalar = _setitem_cases()[case]
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    X = nd(x)
    ref = x.copy()
    if make is not None:
        value = make(ref[key].shape)
        ref[key] = value
        X[key] = nd(value)
    else:
        ref[key] = scalar
        X[key] = scalar
    check(X, ref)


def test_setitem_numpy_value_and_int_dtype():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    X = nd(x)
    X[::2, 1:3] = np.array([[10, 11], [12, 13]], np.int32)
    x[::2, 1:3] = [[10, 11], [12, 13]]
    check(X, x)
    X[:, 0] = 7
    x[:, 0] = 7
    check(X, x)


def test_setitem_needs_other_ops():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    X = nd(x)
    ref = x.copy()
    X[1] = 5  # through _full
    ref[1] = 5
    check(X, ref)
    X[...] = 0
    check(X, np.zeros_like(x))
    X = nd(x)
    ref = x.copy()
    v = np.array([1, 2, 3, 4, 5], np.float32)
    X[::2, 1:] = nd(v)  # through broadcast_to
    ref[::2, 1:] = v
    check(X, ref)


def test_setitem_errors():
    X = nd(np.zeros((3, 4), np.float32))
    with pytest.raises(IndexError):
        X[3, 0] = 1
    with pytest.raises(IndexError):
        X[0, 0, 0] = 1
    with pytest.raises(MXNetError):
        X[::2, 0] = nd(np.zeros((3,), np.float32))  # 3 values for 2 places


# Known bugs in hybridgluon/ndarray/indexing.py (reported, not fixed here): the tests show the
# NumPy behaviour MXNet follows and turn into XPASS once indexing.py is fixed.

@pytest.mark.parametrize('key', [(1, None), (slice(None), 1, None), (1, None, 2)])
def test_getitem_newaxis_after_int(key):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    check(nd(x)[key], x[key])


@pytest.mark.parametrize('key', [slice(-10, None, -1), (slice(None), slice(-10, None, -1))])
def test_getitem_empty_negative_step(key):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    check(nd(x)[key], x[key])


def test_getitem_numpy_array_key():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    check(nd(x)[np.array([0, 2])], x[np.array([0, 2])])
