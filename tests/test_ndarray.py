"""The NDArray Python surface: creation, attributes, conversion, repr, views, DLPack, contexts,
seeding, errors and memory behaviour."""
import gc
import os

import numpy as np
import pytest

import hybridgluon as mx

from conftest import rss_kb

nd = mx.nd


def test_array_creation_dtypes():
    assert nd.array([1, 2, 3]).dtype == np.float32           # lists: float32
    assert nd.array(np.arange(3)).dtype == np.float32         # numpy int64 -> float32 (MXNet)
    assert nd.array(np.arange(3.0)).dtype == np.float32
    assert nd.array([1, 2], dtype='int32').dtype == np.int32
    assert nd.array([1, 2], dtype=np.float64).dtype == np.float64
    x = nd.array([1, 2], dtype='int64')
    assert nd.array(x).dtype == np.int64                     # NDArray source keeps its dtype
    assert nd.array(5).shape == () and nd.array(np.ones([])).shape == ()  # 0-d, as in MXNet
    for dt in ['float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64', 'bool']:
        a = np.array([[1, 0, 1]]).astype(dt)
        y = nd.array(a, dtype=dt)
        assert y.dtype == np.dtype(dt)
        np.testing.assert_array_equal(y.asnumpy(), a)
    with pytest.raises(TypeError):
        nd.array([1, 2], dtype='complex64')


def test_attributes():
    x = nd.zeros((2, 3, 4))
    assert x.shape == (2, 3, 4) and x.size == 24 and x.ndim == 3
    assert x.dtype is np.float32
    assert x.context == mx.cpu() and x.ctx == mx.cpu(0)
    assert x.stype == 'default'
    assert len(x) == 2
    assert x.T.shape == (4, 3, 2)
    assert x.tostype('default') is x
    assert x.wait_to_read() is None
    assert nd.waitall() is None


def test_creation_functions():
    np.testing.assert_array_equal(nd.zeros((2, 3)).asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(nd.ones(4, dtype='int32').asnumpy(), np.ones(4))
    np.testing.assert_array_equal(nd.full((2, 2), 7).asnumpy(), np.full((2, 2), 7))
    np.testing.assert_array_equal(nd.arange(5).asnumpy(), np.arange(5, dtype='float32'))
    assert nd.arange(5).dtype == np.float32
    np.testing.assert_allclose(nd.arange(1, 3, 0.5).asnumpy(), np.arange(1, 3, 0.5))
    assert nd.empty((3, 0)).shape == (3, 0)
    x = nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(nd.zeros_like(x).asnumpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(nd.ones_like(x).asnumpy(), np.ones((2, 2)))


def test_asscalar_and_bool():
    assert nd.array([3.5]).asscalar() == np.float32(3.5)
    with pytest.raises(ValueError, match='not a scalar'):
        nd.array([1, 2]).asscalar()
    assert bool(nd.array([1.0])) is True
    assert bool(nd.array([0.0])) is False
    with pytest.raises(ValueError, match='ambiguous'):
        bool(nd.array([1, 2]))


def test_astype_copy_copyto_context():
    x = nd.array([1.7, -2.2])
    y = x.astype('int32')
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y.asnumpy(), [1, -2])
    assert x.astype('float32', copy=False) is x
    z = x.copy()
    z[0] = 9
    assert x.asnumpy()[0] == np.float32(1.7)
    t = nd.zeros((2,))
    x.copyto(t)
    np.testing.assert_array_equal(t.asnumpy(), x.asnumpy())
    assert x.as_in_context(mx.cpu()) is x
    c = x.copyto(mx.cpu())
    assert c is not x and c.shape == x.shape
    with pytest.raises(mx.MXNetError):
        x.copyto(nd.zeros((3,)))



@pytest.mark.parametrize('ctx', [mx.cpu(), mx.cpu(1), mx.cpu_pinned()])
def test_copy_of_a_bool_array(ctx):
    """copy() of a bool array (which no op takes): its own bytes, on the same context."""
    src = np.array([[True, False, True], [False, False, True]])
    x = nd.array(src, ctx=ctx, dtype='bool')
    y = x.copy()
    assert y.dtype == np.bool_ and y.context == ctx and y.shape == (2, 3)
    x[0] = False
    np.testing.assert_array_equal(y.asnumpy(), src)
    np.testing.assert_array_equal(x.asnumpy(), [[False] * 3, [False, False, True]])

def test_repr_format():
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    assert repr(x) == '\n[[1. 2. 3.]\n [4. 5. 6.]]\n<NDArray 2x3 @cpu(0)>'
    assert str(nd.array([1])) == '\n[1.]\n<NDArray 1 @cpu(0)>'


def test_views_share_memory():
    x = nd.array(np.arange(12).reshape(3, 4))
    row = x[1]
    assert row.shape == (4,) and x._shares_storage(row)
    row[:] = 0
    np.testing.assert_array_equal(x.asnumpy()[1], np.zeros(4))
    part = x[1:3]
    part += 1
    np.testing.assert_array_equal(x.asnumpy()[2], np.arange(8, 12) + 1)
    r = x.reshape((4, 3))
    assert x._shares_storage(r)
    r[0] = 100
    assert x.asnumpy()[0, 0] == 100
    assert x.reshape(-1).shape == (12,)
    assert x.reshape(2, -1).shape == (2, 6)
    assert x.reshape((0, -1)).shape == (3, 4)
    assert x[2, 3].shape == (1,)
    assert x[0][0].shape == (1,)


def test_len_iter():
    x = nd.array(np.arange(6).reshape(3, 2))
    rows = [r.asnumpy() for r in x]
    np.testing.assert_array_equal(np.stack(rows), np.arange(6).reshape(3, 2))
    assert len(x) == 3


def test_numpy_interop_and_buffer():
    a = np.arange(6, dtype='float32').reshape(2, 3)
    x = nd.array(a)
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.array(x, dtype='float64'), a)
    m = memoryview(x)
    assert m.shape == (2, 3) and m.format == 'f' and not m.readonly
    # The buffer exposes the array's own memory.
    v = np.frombuffer(m, dtype='float32')
    v[0] = 42
    assert x.asnumpy()[0, 0] == 42


def test_dlpack_zero_copy_both_ways():
    x = nd.array(np.arange(6, dtype='float32').reshape(2, 3))
    a = np.from_dlpack(x)
    x[0, 0] = -1
    assert a[0, 0] == -1                                 # numpy views our memory
    if a.flags.writeable:                                # NumPy >= 2 takes versioned capsules
        a[0, 1] = -2
        assert x.asnumpy()[0, 1] == -2
    src = np.arange(8, dtype='float64').reshape(2, 4)
    y = nd.from_dlpack(src)
    assert y.dtype == np.float64 and y.shape == (2, 4)
    src[1, 1] = 99
    assert y.asnumpy()[1, 1] == 99                       # our view of numpy's memory
    del src
    gc.collect()
    assert y.asnumpy()[1, 1] == 99                       # kept alive by the capsule
    assert x.__dlpack_device__() == (1, 0)
    with pytest.raises(mx.MXNetError, match='contiguous'):
        nd.from_dlpack(np.arange(10.0)[::2])
    dtypes = ['float16', 'uint8', 'int8', 'int32', 'int64']
    if int(np.__version__.split('.')[0]) >= 2:   # NumPy 1.x cannot import DLPack booleans
        dtypes.append('bool')
    for dt in dtypes:
        z = nd.array(np.array([1, 0, 1]).astype(dt), dtype=dt)
        np.testing.assert_array_equal(np.from_dlpack(z), z.asnumpy())


def test_dlpack_with_torch():
    torch = pytest.importorskip('torch')
    x = nd.array([[1, 2], [3, 4]])
    t = torch.from_dlpack(x)
    t[0, 0] = 10
    assert x.asnumpy()[0, 0] == 10
    u = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = nd.from_dlpack(u)
    u[1, 2] = -5
    assert y.asnumpy()[1, 2] == -5


def test_contexts():
    assert mx.current_context() == mx.cpu(0)
    assert repr(mx.cpu()) == 'cpu(0)' and repr(mx.gpu(1)) == 'gpu(1)'
    assert mx.context.num_gpus() == 0
    with mx.cpu(0):
        assert mx.current_context() == mx.cpu(0)
    with pytest.raises(mx.MXNetError, match='GPU 0 is not available'):
        nd.zeros((2,), ctx=mx.gpu(0))
    with pytest.raises(mx.MXNetError, match='GPU'):
        with mx.gpu(0):
            pass
    assert mx.cpu() != mx.gpu() and hash(mx.cpu(0)) == hash(mx.cpu(0))


def test_seed_reproduces():
    mx.random.seed(7)
    a = nd.random.normal(shape=(5,)).asnumpy()
    b = nd.random.uniform(shape=(5,)).asnumpy()
    mx.random.seed(7)
    np.testing.assert_array_equal(a, nd.random.normal(shape=(5,)).asnumpy())
    np.testing.assert_array_equal(b, nd.random.uniform(shape=(5,)).asnumpy())
    mx.random.seed(8)
    assert not np.array_equal(a, nd.random.normal(shape=(5,)).asnumpy())
    with pytest.raises(ValueError):
        mx.random.seed(1.5)


def test_error_classes():
    assert issubclass(mx.MXNetError, RuntimeError)
    assert mx.base.MXNetError is mx.MXNetError
    with pytest.raises(mx.MXNetError) as e:
        nd.ones((2, 3)).reshape((4, 4))
    assert isinstance(e.value, ValueError)
    with pytest.raises(IndexError):
        nd.ones((2, 3))[5]
    with pytest.raises(mx.MXNetError):
        nd.zeros((-1, 2))


def _sanitized():
    with open('/proc/self/maps') as f:
        return 'libasan' in f.read()


@pytest.mark.skipif(not os.path.exists('/proc/self/status'), reason='needs /proc')
def test_many_small_arrays_leave_memory_flat():
    if _sanitized():
        pytest.skip('AddressSanitizer quarantines freed memory, so RSS grows by design')
    x = nd.ones((4,))
    for _ in range(20000):   # warm the pools
        x + 1
    before = rss_kb()
    for _ in range(1000000):
        y = x + 1
        del y
    after = rss_kb()
    assert after - before < 8 * 1024, (before, after)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64', 'int32', 'uint8'])
@pytest.mark.parametrize('shape', [(0,), (1,), (2, 3), (4, 1, 5)])
def test_contrib_isinf_isfinite_isnan(dtype, shape):
    rng = np.random.default_rng(7)
    x = rng.uniform(-5, 5, shape).astype(dtype)
    if np.issubdtype(x.dtype, np.floating) and x.size >= 3:
        x.flat[0], x.flat[1], x.flat[2] = np.inf, -np.inf, np.nan
    a = nd.array(x, dtype=dtype)
    names = (('isinf', np.isinf), ('isfinite', np.isfinite), ('isnan', np.isnan))
    if not np.issubdtype(x.dtype, np.floating):
        # MXNet compares |x| with inf cast to the integer dtype (0 for uint8, INT_MIN for
        # int32), so its isinf/isfinite on integers are not NumPy's; isnan is.
        names = names[2:]
    for name, ref in names:
        out = getattr(nd.contrib, name)(a)
        assert out.dtype == np.dtype(dtype) and out.shape == shape   # MXNet: 0/1 in data's dtype
        np.testing.assert_array_equal(out.asnumpy(), ref(x).astype(dtype))


def test_fluent_transpose_and_reshape_like_take_mxnet_keywords():
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(1, 0, 2)
    for y in (x.transpose(axes=(1, 0, 2)), x.transpose((1, 0, 2)), x.transpose(1, 0, 2)):
        np.testing.assert_array_equal(y.asnumpy(), want)
    assert x.transpose().shape == (4, 3, 2) and x.transpose(axes=None).shape == (4, 3, 2)
    with pytest.raises(TypeError, match='both'):
        x.transpose(1, 0, 2, axes=(1, 0, 2))
    r = x.reshape_like(rhs=nd.zeros((6, 4)))
    assert r.shape == (6, 4)
    np.testing.assert_array_equal(r.asnumpy(), np.arange(24).reshape(6, 4))
    assert x.reshape_like(nd.zeros((4, 6))).shape == (4, 6)
    assert x.reshape_like(nd.zeros((6, 1)), lhs_begin=0, lhs_end=2, rhs_begin=0,
                          rhs_end=1).shape == (6, 4)


@pytest.mark.parametrize('dtype', ['int32', 'int64', 'int8', 'uint8'])
@pytest.mark.parametrize('axis', [0, 1, -1])
def test_take_and_pick_integer_gradients(dtype, axis):
    # MXNet gives integer arrays integer gradients through take / pick (indexing uses them);
    # repeated indices add up, wrapping around in the dtype.
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, (4, 5, 3)).astype(dtype)
    idx = np.array([0, 2, 2, 1, 2, 0])
    g = rng.integers(0, 120, np.take(x, idx, axis=axis).shape).astype(dtype)
    a = nd.array(x, dtype=dtype)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.take(a, nd.array(idx), axis=axis)
    y.backward(nd.array(g, dtype=dtype))
    want = np.zeros(x.shape, np.int64)
    ax = axis % x.ndim
    for k, i in enumerate(idx):
        sl = [slice(None)] * x.ndim
        sl[ax] = i
        want[tuple(sl)] += np.take(g, k, axis=ax)
    assert a.grad.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.grad.asnumpy(), want.astype(dtype))   # wraps as C does
    p = rng.integers(0, x.shape[ax], np.delete(x.shape, ax))
    with mx.autograd.record():
        y = nd.pick(a, nd.array(p), axis=axis)
    y.backward()
    want = np.zeros(x.shape, dtype)
    np.put_along_axis(want, np.expand_dims(p, ax), 1, axis=ax)
    np.testing.assert_array_equal(a.grad.asnumpy(), want)
