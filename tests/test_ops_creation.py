"""Creation ops (_zeros, _ones, _full, _arange, _eye) through mx.nd.* against NumPy."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['_zeros', '_ones', '_full', '_arange', '_eye']

DTYPES = ['float32', 'float64', 'float16', 'int32', 'int64', 'int8', 'uint8', 'bool']
SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 0, 3), (3, 1, 2, 1), (100000,)]


def _check(out, ref):
    assert out.shape == ref.shape
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out.asnumpy(), ref)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', SHAPES)
def test_zeros_ones(dtype, shape):
    if shape == ():  # a 0-d array needs NumPy shape semantics, as in MXNet
        for f in (nd.zeros, nd.ones):
            with pytest.raises(mx.MXNetError, match=r'shape=\(\) is not known'):
                f(shape, dtype=dtype)
    with mx.np_shape(shape == ()):
        _check(nd.zeros(shape, dtype=dtype), np.zeros(shape, dtype=dtype))
        _check(nd.ones(shape, dtype=dtype), np.ones(shape, dtype=dtype))


def test_defaults_float32():
    for x in (nd.zeros((2, 3)), nd.ones(4), nd.full((2,), 7), nd.arange(3), nd.empty((2, 2))):
        assert x.dtype == np.float32
    assert nd.zeros(5).shape == (5,)
    assert nd.ones([2, 2]).shape == (2, 2)
    assert nd._zeros(shape=(2,)).dtype == np.float32
    assert nd._ones().shape == ()


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(), (0,), (1,), (3, 4), (70000,)])
@pytest.mark.parametrize('value', [0, 1, -2.5, 3.75, 100])
def test_full(dtype, shape, value):
    out = nd.full(shape, value, dtype=dtype)
    if dtype == 'bool':
        ref = np.full(shape, value != 0)
    elif dtype.startswith('float'):
        ref = np.full(shape, value, dtype=dtype)
    else:
        ref = np.full(shape, int(value)).astype(dtype)  # truncation toward zero
    _check(out, ref)


def test_full_special_values():
    assert np.isnan(nd.full((3,), float('nan')).asnumpy()).all()
    assert (nd.full((2,), -np.inf, dtype='float64').asnumpy() == -np.inf).all()
    assert np.signbit(nd.full((2,), -0.0).asnumpy()).all()
    np.testing.assert_array_equal(nd.full((2,), 0.1, dtype='float64').asnumpy(), [0.1, 0.1])
    # The op directly, with positional value after the attrs in schema order.
    out = nd._full(shape=(2, 2), value=3, dtype='int64')
    _check(out, np.full((2, 2), 3, dtype='int64'))


def test_full_out():
    out = nd.zeros((2, 3))
    res = nd.full((2, 3), 4.0, out=out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 4.0, dtype='f4'))


@pytest.mark.parametrize('dtype', DTYPES)
def test_empty(dtype):
    x = nd.empty((3, 0, 2), dtype=dtype)
    assert x.shape == (3, 0, 2) and x.dtype == np.dtype(dtype)
    assert nd.empty((4, 5), dtype=dtype).shape == (4, 5)


@pytest.mark.parametrize('args,kw', [
    ((5,), {}), ((2, 10), {}), ((2, 10, 3), {}), ((10, 0, -2), {}), ((0, 1, 0.1), {}),
    ((-3.5, 2.25, 0.75), {}), ((1, -1, -0.25), {}), ((7.0,), {}), ((3, 4), {}),
    ((0, 1e5), {}),
])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_arange(args, kw, dtype):
    out = nd.arange(*args, dtype=dtype, **kw)
    ref = np.arange(*args, dtype=np.float64)
    assert out.dtype == np.dtype(dtype) and out.shape == ref.shape
    np.testing.assert_allclose(out.asnumpy(), ref.astype(dtype), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('dtype', ['int32', 'int64', 'int8', 'uint8', 'float16'])
def test_arange_dtypes(dtype):
    _check(nd.arange(0, 10, 2, dtype=dtype), np.arange(0, 10, 2).astype(dtype))
    if dtype != 'uint8':
        _check(nd.arange(5, -5, -3, dtype=dtype), np.arange(5, -5, -3).astype(dtype))


@pytest.mark.parametrize('repeat', [1, 2, 3])
def test_arange_repeat(repeat):
    _check(nd.arange(0, 4, repeat=repeat), np.repeat(np.arange(4, dtype='f4'), repeat))
    _check(nd.arange(3, 0, -1, repeat=repeat), np.repeat(np.arange(3, 0, -1, dtype='f4'), repeat))
    _check(nd.arange(0, 1, 0.25, repeat=repeat, dtype='float64'),
           np.repeat(np.arange(0, 1, 0.25), repeat))


def test_arange_op_directly():
    # stop=None: the interval is [0, start), as MXNet reads it.
    _check(nd._arange(start=4), np.arange(4, dtype='f4'))
    _check(nd._arange(start=1, stop=4, step=1.5, dtype='int32'), np.array([1, 2], dtype='i4'))
    [(shape, flag)] = mx._core.get_op('_arange')._infer(start=0, stop=10, step=3, repeat=2)
    assert tuple(shape) == (8,) and flag == 0


def test_arange_errors():
    with pytest.raises(mx.MXNetError, match='step'):
        nd.arange(0, 10, 0)
    with pytest.raises(mx.MXNetError, match='invalid range'):
        nd.arange(5, 1)             # wrong direction: negative length
    with pytest.raises(mx.MXNetError, match='invalid range'):
        nd.arange(1, 5, -1)
    with pytest.raises(mx.MXNetError, match='invalid range'):
        nd.arange(3, 3)             # empty, as MXNet
    with pytest.raises(mx.MXNetError, match='repeat'):
        nd.arange(0, 3, repeat=0)
    with pytest.raises(mx.MXNetError, match='start'):
        nd._arange(stop=3)          # start is required


@pytest.mark.parametrize('n,m,k', [(3, 0, 0), (3, 4, 1), (4, 3, -1), (3, 3, 5), (3, 3, -5),
                                   (0, 0, 0), (1, 1, 0), (5, 2, -3), (2, 5, 4)])
@pytest.mark.parametrize('dtype', ['float32', 'int32', 'float64', 'uint8'])
def test_eye(n, m, k, dtype):
    out = nd._eye(N=n, M=m, k=k, dtype=dtype)
    _check(out, np.eye(n, m or n, k, dtype=dtype))


def test_creation_errors():
    with pytest.raises(mx.MXNetError, match='negative dimension'):
        nd.zeros((2, -1))
    with pytest.raises(mx.MXNetError, match='_ones'):
        nd.ones((-3,))
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'foo'"):
        nd._zeros(shape=(2,), foo=1)
    with pytest.raises(mx.MXNetError, match='value'):
        nd._full(shape=(2,))
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd._zeros(shape=(2,), dtype='complex64')
    with pytest.raises(mx.MXNetError, match='non-negative'):
        nd._eye(N=-1)
    with pytest.raises(mx.MXNetError, match='dimensions'):
        nd._zeros(shape=(1,) * 11)
    with pytest.raises(mx.MXNetError):
        nd._zeros(nd.ones((2,)))   # no inputs: an NDArray is not a shape


@pytest.mark.parametrize('fn, value', [(nd.zeros, 0.0), (nd.ones, 1.0)])
def test_zeros_ones_write_out_as_mxnet_does(fn, value):
    """MXNet 1.9.1: nd.ones(shape, out=a) fills a and returns it; a dtype other than the one
    asked for (float32 by default) is an error ("Type inconsistent"), as is an unknown keyword."""
    for dtype in ('float32', 'float64', 'int32'):
        a = nd.array(np.full((2, 3), 5), dtype=dtype)
        res = fn((2, 3), dtype=dtype, out=a)
        assert res is a
        np.testing.assert_array_equal(a.asnumpy(), np.full((2, 3), value, dtype=dtype))
    with pytest.raises(mx.MXNetError):
        fn((2, 3), out=nd.ones((2, 3), dtype='float64') * 5)
    with pytest.raises(mx.MXNetError):
        fn((2, 3), out=nd.ones((3, 2)) * 5)
    with pytest.raises(mx.MXNetError, match='foo'):
        fn((2, 3), foo=1)
    empty = nd.ones((0, 4)) * 5
    assert fn((0, 4), out=empty) is empty and empty.shape == (0, 4)


def test_zeros_storage_type():
    assert nd.zeros((2,), stype='default').asnumpy().tolist() == [0.0, 0.0]
    with pytest.raises(mx.MXNetError, match="stype='csr'"):
        nd.zeros((2, 2), stype='csr')


@pytest.mark.parametrize('N, M, k', [(1, 0, 0), (3, 0, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5),
                                     (3, 4, -7), (0, 0, 0), (2, 0, 1)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16', 'int32', 'int64', 'uint8'])
def test_nd_eye_matches_numpy(N, M, k, dtype):
    got = nd.eye(N, M, k, dtype=dtype)
    want = np.eye(N, M or None, k, dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_nd_eye_defaults_and_out():
    assert nd.eye(2).dtype == np.float32 and nd.eye(2).context == mx.cpu()
    out = nd.ones((2, 3)) * 7
    assert nd.eye(2, 3, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(2, 3))
    with pytest.raises(mx.MXNetError):
        nd.eye(-1)


@pytest.mark.parametrize('dtype', ['int32', 'int64', 'int8', 'uint8'])
@pytest.mark.parametrize('args', [(1.3, 456.6, 1.3), (-1.5, 10.6, 1.7), (2.7, -10.6, -1.7),
                                  (0.5, 3, 0.5), (0, 300, 1)])
@pytest.mark.parametrize('repeat', [1, 3])
def test_arange_int_dtype_float_step(dtype, args, repeat):
    # MXNet casts start and step to the integer dtype before the arithmetic (1.3 -> 1, 0.5 -> 0),
    # the length still coming from the float values; the result wraps in the dtype (uint8/int8
    # past 255/127). NumPy's integer arange truncates start and step the same way for these cases.
    out = nd.arange(*args, repeat=repeat, dtype=dtype)
    n = int(np.ceil((args[1] - args[0]) / args[2]))
    start, step = np.int64(args[0]), np.int64(args[2])
    ref = (start + np.arange(n, dtype=np.int64) * step).astype(dtype)
    _check(out, np.repeat(ref, repeat))
    if dtype in ('int32', 'int64') and args != (0.5, 3, 0.5):
        _check(out, np.repeat(np.arange(*args, dtype=dtype), repeat))


def test_arange_float32_computed_in_float32():
    # start + i * step in float32, as MXNet's kernel does in the output dtype.
    out = nd.arange(0.1, 1000.0, 0.1, dtype='float32').asnumpy()
    i = np.arange(out.size, dtype=np.float32)
    np.testing.assert_array_equal(out, np.float32(0.1) + i * np.float32(0.1))
