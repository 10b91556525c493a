"""nd's Python front ends with MXNet 1.9.1's signatures: the NDArray-or-scalar functions
(nd.add ... nd.logical_xor), onehot_encode, moveaxis, linspace, from_numpy, nd._internal,
nd.CachedOp, pickling, DLPack methods, inplace views, and NaN propagation of maximum/relu."""
import operator
import pickle

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd

# name: (NumPy function, Python function on two numbers)
UFUNCS = {
    'add': (np.add, operator.add), 'subtract': (np.subtract, operator.sub),
    'multiply': (np.multiply, operator.mul), 'divide': (np.divide, operator.truediv),
    'true_divide': (np.divide, operator.truediv), 'modulo': (np.mod, operator.mod),
    'power': (np.power, operator.pow), 'maximum': (np.maximum, max),
    'minimum': (np.minimum, min), 'equal': (np.equal, operator.eq),
    'not_equal': (np.not_equal, operator.ne), 'greater': (np.greater, operator.gt),
    'greater_equal': (np.greater_equal, operator.ge), 'lesser': (np.less, operator.lt),
    'lesser_equal': (np.less_equal, operator.le), 'logical_and': (np.logical_and, None),
    'logical_or': (np.logical_or, None), 'logical_xor': (np.logical_xor, None),
}


@pytest.mark.parametrize('name', sorted(UFUNCS))
def test_ufunc_array_scalar_and_broadcast(name):
    ref, _ = UFUNCS[name]
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 3, size=(3, 4)).round(1)
    b = rng.uniform(0.5, 3, size=(4,)).round(1)
    b[0] = a[0, 0]  # a tie for the comparisons
    fn = getattr(nd, name)
    want = ref(a, b).astype(np.float64)
    got = fn(nd.array(a, dtype='float64'), nd.array(b, dtype='float64'))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    s = 1.5
    np.testing.assert_allclose(fn(nd.array(a, dtype='float64'), s).asnumpy(),
                               ref(a, s).astype(np.float64), rtol=1e-12)
    np.testing.assert_allclose(fn(s, nd.array(a, dtype='float64')).asnumpy(),
                               ref(s, a).astype(np.float64), rtol=1e-12)


@pytest.mark.parametrize('name', sorted(UFUNCS))
def test_ufunc_two_numbers_give_a_python_number(name):
    ref, py = UFUNCS[name]
    got = getattr(nd, name)(3, 2)
    assert not isinstance(got, nd.NDArray)
    assert got == (py(3, 2) if py else int(ref(3, 2)))


def test_ufunc_rejects_other_types():
    with pytest.raises(TypeError):
        nd.add(nd.ones((2,)), [1, 2])


def test_maximum_minimum_relu_propagate_nan():
    a = nd.array([np.nan, 1, -1, np.nan])
    b = nd.array([0, np.nan, 0, np.nan])
    np.testing.assert_equal(nd.maximum(a, b).asnumpy(), [np.nan, np.nan, 0, np.nan])
    np.testing.assert_equal(nd.minimum(a, b).asnumpy(), [np.nan, np.nan, -1, np.nan])
    np.testing.assert_equal(nd.maximum(a, 0).asnumpy(), [np.nan, 1, 0, np.nan])
    np.testing.assert_equal(nd.relu(a).asnumpy(), [np.nan, 1, 0, np.nan])
    a.attach_grad()
    with mx.autograd.record():
        y = nd.relu(a)
    y.backward()
    np.testing.assert_equal(a.grad.asnumpy(), [np.nan, 1, 0, np.nan])
    ints = nd.array([-3, 0, 4], dtype='int32')
    np.testing.assert_equal(nd.relu(ints).asnumpy(), [0, 0, 4])


def test_onehot_encode_writes_out():
    out = nd.ones((4, 5))
    idx = np.array([1, 4, 0, 1])
    res = nd.onehot_encode(nd.array(idx), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(5)[idx])
    with pytest.raises(mx.MXNetError, match='onehot_encode'):
        nd.onehot_encode(nd.array([1, 2]), nd.zeros((3, 5)))


@pytest.mark.parametrize('src,dst', [(0, -1), (-1, 0), ((0, 1), (2, 0)), ([2], [1]), (1, 1)])
def test_moveaxis(src, dst):
    x = np.arange(24).reshape(2, 3, 4).astype(np.float32)
    np.testing.assert_array_equal(nd.moveaxis(nd.array(x), src, dst).asnumpy(),
                                  np.moveaxis(x, src, dst))


def test_moveaxis_errors():
    x = nd.zeros((2, 3))
    with pytest.raises(ValueError):
        nd.moveaxis(x, 2, 0)
    with pytest.raises(ValueError):
        nd.moveaxis(x, (0, 1), 0)
    with pytest.raises(ValueError):
        nd.moveaxis(x, (0, 0), (0, 1))


@pytest.mark.parametrize('num', [0, 1, 2, 7, 50])
@pytest.mark.parametrize('endpoint', [True, False])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_linspace(num, endpoint, dtype):
    start, stop = 0.1, 7.3
    got = nd.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    steps = num - 1 if endpoint else num
    step = (stop - start) / steps if steps > 0 else 0.0
    want = (start + step * np.arange(num)).astype(dtype)  # MXNet's kernel: start + i * step
    assert got.dtype == np.dtype(dtype) and got.shape == (num,)
    np.testing.assert_array_equal(got.asnumpy(), want)
    if dtype != 'int32' and num > 1:
        np.testing.assert_allclose(got.asnumpy(), np.linspace(start, stop, num, endpoint,
                                                              dtype=dtype), rtol=1e-6)
    assert nd.linspace(0, 1, 3, ctx=mx.cpu(1)).context == mx.cpu(1)
    with pytest.raises(mx.MXNetError):
        nd.linspace(0, 1, -1)


def test_from_numpy_zero_copy_and_copy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = nd.from_numpy(x)
    assert not x.flags['WRITEABLE']
    y[1, 1] = 100
    assert x[1, 1] == 100  # the memory is shared
    z = nd.from_numpy(x)  # a second import of the now read-only array still shares
    z[0, 0] = -1
    assert x[0, 0] == -1
    c = np.ones((2, 2), dtype=np.int32)
    d = nd.from_numpy(c, zero_copy=False)
    d[:] = 5
    assert c.flags['WRITEABLE'] and (c == 1).all() and d.dtype == np.int32
    for arr in [np.array(3.0).reshape(()), np.zeros((1, 0, 2))]:
        np.testing.assert_array_equal(nd.from_numpy(arr).asnumpy(), arr)
    with pytest.raises(ValueError, match='c-contiguous'):
        nd.from_numpy(np.ones((2, 3)).T)


def test_internal_namespace():
    assert nd._internal._plus_scalar(nd.ones((2,)), scalar=2).asnumpy().tolist() == [3, 3]
    assert nd._internal._Plus(nd.ones((2,)), nd.ones((2,))).asnumpy().tolist() == [2, 2]
    assert all(n.startswith('_') for n in dir(nd._internal) if callable(getattr(nd._internal, n))
               and not n.startswith('__'))


def test_cached_op():
    data, w = mx.sym.var('data'), mx.sym.var('w')
    sym = mx.sym.FullyConnected(data, w, num_hidden=3, no_bias=True) * 2
    op = nd.CachedOp(sym)
    x = nd.array(np.arange(8).reshape(2, 4))
    wv = nd.array(np.ones((3, 4)))
    o = op(x, wv)
    want = 2 * np.arange(8).reshape(2, 4) @ np.ones((4, 3))
    np.testing.assert_allclose(o.asnumpy(), want)
    out = nd.zeros((2, 3))
    assert op(x, wv, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), want)
    wv.attach_grad()
    with mx.autograd.record():
        y = op(x, wv)
    y.backward()
    np.testing.assert_allclose(wv.grad.asnumpy(), 2 * np.tile(x.asnumpy().sum(0), (3, 1)))
    with pytest.raises(mx.MXNetError, match='expected 2 inputs'):
        op(x)


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'uint8'])
def test_pickle_and_state(dtype):
    a = nd.array(np.arange(6).reshape(2, 3), dtype=dtype)
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    state = a.__getstate__()
    assert isinstance(state['handle'], bytearray)
    c = nd.zeros((1,))
    c.__setstate__(state)
    assert c.shape == (2, 3) and c.dtype == a.dtype
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())


def test_state_is_mxnets_format():
    # the bytes MXNet 1.9.1 gives for nd.array([[1, 2], [3, 4]]).__getstate__()['handle']
    want = (b'\xc9\xfa\x93\xf9\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00'
            b'\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
            b'\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@')
    assert bytes(nd.array([[1, 2], [3, 4]]).__getstate__()['handle']) == want


def test_dlpack_methods_share_memory():
    a = nd.array([1, 2, 3])
    for pack in (a.to_dlpack_for_read(), a.to_dlpack_for_write()):
        b = nd.from_dlpack(pack)
        b[0] = 7
        assert a.asnumpy()[0] == 7


@pytest.mark.parametrize('method,args', [('squeeze', {'axis': 0}), ('expand_dims', {'axis': 1}),
                                         ('flatten', {})])
def test_inplace_is_a_view_default_a_copy(method, args):
    x = nd.array(np.arange(6).reshape(1, 2, 3))
    copy = getattr(x, method)(**args)
    view = getattr(x, method)(inplace=True, **args)
    want = copy.asnumpy().copy()
    np.testing.assert_array_equal(view.asnumpy(), want)
    x[:] = -1
    np.testing.assert_array_equal(copy.asnumpy(), want)
    assert (view.asnumpy() == -1).all()


@pytest.mark.parametrize('name', ['arcsinh', 'arccosh', 'arctanh', 'degrees', 'radians', 'rcbrt'])
def test_fluent_unary(name):
    x = nd.array([1.5, 2.0]) if name == 'arccosh' else nd.array([0.25, 0.5])
    np.testing.assert_allclose(getattr(x, name)().asnumpy(), getattr(nd, name)(x).asnumpy())


SYM_FUNCS = {'maximum': (np.maximum, '_maximum'), 'minimum': (np.minimum, '_minimum'),
             'pow': (np.power, '_power'), 'power': (np.power, '_power'),
             'hypot': (np.hypot, '_hypot')}


@pytest.mark.parametrize('name', sorted(SYM_FUNCS))
def test_sym_symbol_or_number(name):
    ref, op = SYM_FUNCS[name]
    fn = getattr(mx.sym, name)
    a, b = mx.sym.var('a'), mx.sym.var('b')
    av, bv = np.array([0.5, 2.0, 3.0]), np.array([1.5, 2.0, 0.5])
    feed = {'a': nd.array(av, dtype='float64'), 'b': nd.array(bv, dtype='float64')}
    both = fn(a, b)
    assert both.name.startswith(op)
    np.testing.assert_allclose(both.eval(**feed)[0].asnumpy(), ref(av, bv), rtol=1e-12)
    np.testing.assert_allclose(fn(a, 2.5).eval(a=feed['a'])[0].asnumpy(), ref(av, 2.5),
                               rtol=1e-12)
    np.testing.assert_allclose(fn(2.5, a).eval(a=feed['a'])[0].asnumpy(), ref(2.5, av),
                               rtol=1e-12)
    assert fn(3, 4) == ref(3, 4)
    with pytest.raises(TypeError):
        fn(a, 'x')


def test_sym_linspace_matches_nd():
    for num, endpoint, dtype in [(7, True, 'int32'), (5, False, 'float64'), (0, True, None),
                                 (1, True, 'float32')]:
        got = mx.sym.linspace(0.1, 7.3, num, endpoint=endpoint, dtype=dtype).eval()[0]
        want = nd.linspace(0.1, 7.3, num, endpoint=endpoint, dtype=dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


def test_sym_random():
    mx.random.seed(11)
    u = mx.sym.random.uniform(-2, 3, shape=(200,))
    assert u.name.startswith('_random_uniform')
    v = u.eval()[0].asnumpy()
    assert v.shape == (200,) and v.min() >= -2 and v.max() < 3 and v.std() > 0.5
    n = mx.sym.random.normal(loc=4, scale=0.5, shape=(2000,), dtype='float64').eval()[0]
    assert n.dtype == np.float64 and abs(n.asnumpy().mean() - 4) < 0.1
    r = mx.sym.random.randn(3, 4, loc=1).eval()[0]
    assert r.shape == (3, 4)
    i = mx.sym.random.randint(2, 5, shape=(50,)).eval()[0].asnumpy()
    assert i.dtype == np.int32 and set(i.tolist()) <= {2, 3, 4}
    x = mx.sym.var('x')
    s = mx.sym.random.shuffle(x).eval(x=nd.arange(10))[0].asnumpy()
    assert sorted(s.tolist()) == list(range(10))
    with pytest.raises(ValueError):
        mx.sym.random.uniform(x, 1.0)
    mx.random.seed(11)
    assert (mx.sym.random.uniform(-2, 3, shape=(200,)).eval()[0].asnumpy() == v).all()


@pytest.mark.parametrize('ctx', [mx.Context('cpu_shared', 0), mx.cpu_pinned(1)])
def test_pinned_and_shared_contexts_stay_distinct(ctx):
    assert ctx != mx.cpu(ctx.device_id) and hash(ctx) != hash(mx.cpu(ctx.device_id))
    assert repr(ctx) == '%s(%d)' % (ctx.device_type, ctx.device_id)
    made = [nd.zeros((2,), ctx=ctx), nd.ones((2,), ctx=ctx), nd.empty((2,), ctx=ctx),
            nd.array([1, 2], ctx=ctx), nd.full((2,), 3, ctx=ctx), nd.arange(2, ctx=ctx),
            nd.random.uniform(shape=2, ctx=ctx), nd.linspace(0, 1, 2, ctx=ctx)]
    for a in made:
        assert a.context == ctx
    a = made[1]
    assert a.copy().context == ctx and a.copyto(ctx).context == ctx
    assert (a + 1).context == mx.cpu(ctx.device_id)  # op outputs are cpu(i), as in MXNet
    back = a.as_in_context(mx.cpu())
    assert back.context == mx.cpu() and (back.asnumpy() == 1).all()
    loaded = nd.load_frombuffer(nd.utils._save_bytes([a]))[0]
    assert (loaded.asnumpy() == 1).all()


def test_broadcast_like_refuses_empty_axes():
    a, b = nd.ones((1, 3)), nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match='Empty axes tuple'):
        nd.broadcast_like(a, b, lhs_axes=(), rhs_axes=())
    assert nd.broadcast_like(a, b).shape == (2, 3)
    assert nd.broadcast_like(a, b, lhs_axes=(0,), rhs_axes=(0,)).shape == (2, 3)


ADV_KEYS = [
    ([1, 0, 1],),
    (slice(None), [2, 0]),
    ([0, 1], [1, 2]),
    ([[0], [1]], slice(1, 3), [0, 2]),
    (1, [0, 2], slice(None)),
    ([1, 1, 0], 0, [3, 3, 1]),
    (Ellipsis, [0, -1]),
    (None, [1, 0], 2),
    (np.array([True, False]),),
    (slice(None), np.array([True, False, True]), 1),
]


@pytest.mark.parametrize('key', ADV_KEYS, ids=[str(i) for i in range(len(ADV_KEYS))])
def test_advanced_getitem_and_setitem_follow_numpy(key):
    base = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    x = nd.array(base)
    want = base[key]
    got = x[key]
    np.testing.assert_array_equal(got.asnumpy().reshape(want.shape), want)
    # the same index through NDArrays
    nd_key = tuple(nd.array(k, dtype='int32') if isinstance(k, list) else k for k in key)
    np.testing.assert_array_equal(x[nd_key].asnumpy().reshape(want.shape), want)
    for value in [-7.0, np.full(want.shape, -3.0) - np.arange(want.size).reshape(want.shape),
                  nd.array(-np.arange(want.shape[-1] if want.ndim else 1))]:
        ref = base.copy()
        ref[key] = value.asnumpy() if isinstance(value, nd.NDArray) else value
        y = nd.array(base)
        y[key] = value
        np.testing.assert_array_equal(y.asnumpy(), ref)


def test_repeated_positions_last_write_wins():
    x = nd.zeros((4,))
    x[[1, 1, 3]] = nd.array([5, 6, 7])
    np.testing.assert_array_equal(x.asnumpy(), [0, 6, 0, 7])


def test_basic_setitem_value_broadcast_and_newaxis():
    base = np.zeros((3, 4, 5), dtype=np.float32)
    x = nd.array(base)
    x[1, :, 2] = nd.array(np.arange(4).reshape(1, 1, 4))  # leading 1s dropped, as NumPy
    base[1, :, 2] = np.arange(4)
    x[None, 0, None, 1, 2] = 9  # MXNet ignores newaxis in assignment
    base[0, 1, 2] = 9
    x[2, 3, 4] = [8]
    base[2, 3, 4] = 8
    np.testing.assert_array_equal(x.asnumpy(), base)


def test_setitem_under_record_is_refused_like_mxnet():
    x = nd.zeros((3,))
    y = nd.ones((2,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(mx.MXNetError, match='Inplace operations'):
            x[1:] = y
        with pytest.raises(mx.MXNetError, match='Inplace operations'):
            nd.elemwise_add(x[:2], y, out=y)
        x[1:] = 2  # nothing recorded: fine
    np.testing.assert_array_equal(x.asnumpy(), [0, 2, 2])


def test_contiguous_basic_index_is_a_view():
    from itertools import product
    base = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    cases = [slice(None), slice(1, 3), slice(2, 3), slice(None, None, 2), slice(None, None, -1),
             slice(3, 3)]
    for key in product(cases, repeat=3):
        want = base[key]
        assert (nd.NDArray._basic_indexing_slice_is_contiguous(key, base.shape)
                == want.flags['C_CONTIGUOUS']), key
        x = nd.array(base)
        got = x[key]
        np.testing.assert_array_equal(got.asnumpy(), want)
        if want.flags['C_CONTIGUOUS'] and want.size:
            assert x._shares_storage(got), key
            got[:] = -1
            assert (x.asnumpy()[key] == -1).all()
    x = nd.array(base)
    v = x[2, 1:3]
    assert v.shape == (2, 6) and x._shares_storage(v)
    np.testing.assert_array_equal(v.asnumpy(), base[2, 1:3])


def test_gradient_through_index_views():
    x = nd.array(np.arange(24).reshape(2, 3, 4))
    x.attach_grad()
    with mx.autograd.record():
        w = (x[1, 1:3] * 2).sum() + x[:, 2, :].sum() + x[:, ::2, 1].sum()
    w.backward()
    want = np.zeros((2, 3, 4))
    want[1, 1:3] += 2
    want[:, 2, :] += 1
    want[:, ::2, 1] += 1
    np.testing.assert_array_equal(x.grad.asnumpy(), want)


def test_python2_division_names_and_flags():
    a = nd.array([2.0, 4.0])
    np.testing.assert_array_equal(a.__div__(2).asnumpy(), [1, 2])
    np.testing.assert_array_equal(a.__rdiv__(8).asnumpy(), [4, 2])
    b = a.copy()
    assert b.__idiv__(2) is b
    np.testing.assert_array_equal(b.asnumpy(), [1, 2])
    assert a.writable and a.as_nd_ndarray() is a


@pytest.mark.parametrize('spec,axis', [(3, 1), ((1, 5, 9), 1), ((2,), -1), ((1,), 0), (1, 0),
                                       ((0, 4), 1), ((4, 4), 1)])
def test_split_v2_matches_numpy(spec, axis):
    x = np.arange(2 * 12, dtype=np.float32).reshape(2, 12)
    want = np.split(x, spec if isinstance(spec, int) else list(spec), axis=axis)
    empty = any(w.size == 0 for w in want)  # a Symbol's empty part: slice_axis refuses it
    for got in (nd.split_v2(nd.array(x), spec, axis=axis),
                nd.array(x).split_v2(spec, axis=axis)) + (() if empty else (
                mx.sym.split_v2(mx.sym.var('d'), spec, axis=axis).eval(d=nd.array(x)),)):
        got = got if isinstance(got, list) else [got]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.asnumpy(), w)


def test_split_v2_squeeze_and_errors():
    x = nd.array(np.arange(6).reshape(3, 2))
    parts = nd.split_v2(x, 3, axis=0, squeeze_axis=True)
    assert [p.shape for p in parts] == [(2,)] * 3
    with pytest.raises(ValueError, match='equal division'):
        nd.split_v2(x, 2, axis=0)
    with pytest.raises(ValueError):
        nd.split_v2(x, [1], axis=0)
    with pytest.raises(mx.MXNetError, match='increasing'):
        nd.split_v2(x, (2, 1), axis=0)
    with pytest.raises(mx.MXNetError, match='squeeze_axis'):
        nd.split_v2(x, (1,), axis=0, squeeze_axis=True)
