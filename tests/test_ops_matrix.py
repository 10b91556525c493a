"""Matrix products (dot, batch_dot, FullyConnected) against NumPy references."""
import ctypes

import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['dot', 'batch_dot', 'FullyConnected']

TOL = {'float32': dict(rtol=1e-5, atol=1e-5), 'float64': dict(rtol=1e-12, atol=1e-12),
       'float16': dict(rtol=2e-2, atol=2e-2)}


def _nd(x, dtype):
    return mx.nd.array(np.asarray(x), dtype=dtype)


def _close(got, want, dtype):
    assert got.dtype == np.dtype(dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype('f8'), want, **TOL[dtype])


def dot_ref(a, b, ta, tb):
    """MXNet dot: contracts lhs's last axis (first if ta) with rhs's first axis (last if tb)."""
    a = a.astype('f8')
    b = b.astype('f8')
    if a.ndim == 1 and b.ndim == 1:
        return np.array([np.dot(a, b)])
    if ta and a.ndim > 1:
        a = np.moveaxis(a, 0, -1)
    if tb and b.ndim > 1:
        b = np.moveaxis(b, -1, 0)
    return np.tensordot(a, b, axes=([-1], [0]))


def _rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# (lhs shape, rhs shape, transpose_a, transpose_b)
DOT_CASES = [
    ((5,), (5,), False, False),
    ((1,), (1,), False, False),
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((1, 1), (1, 1), False, False),
    ((1, 1), (1, 1), True, True),
    ((4,), (4, 3), False, False),
    ((4,), (3, 4), False, True),
    ((3, 4), (4,), False, False),
    ((4, 3), (4,), True, False),
    ((4, 1), (4, 3), True, False),
    ((4, 1), (3, 4), True, True),
    ((3, 4), (1, 4), False, True),
    ((4, 3), (1, 4), True, True),
    ((1, 40), (40, 30), False, False),
    ((30, 40), (40, 1), False, False),
    ((2, 3, 4), (4, 5), False, False),
    ((2, 3, 4), (4, 5, 6), False, False),
    ((4, 2, 3), (4, 5, 6), True, False),
    ((2, 3, 4), (5, 6, 4), False, True),
    ((4, 2, 3), (5, 6, 4), True, True),
    ((2, 3, 4), (4,), False, False),
    ((0, 3), (3, 4), False, False),
    ((2, 0), (0, 4), False, False),
    ((0, 2), (0, 4), True, False),
    ((2, 0), (4, 0), False, True),
    ((3, 4), (4, 0), False, False),
    ((0,), (0,), False, False),
    ((33, 65), (65, 17), False, False),
]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('ls,rs,ta,tb', DOT_CASES)
def test_dot(rng, ls, rs, ta, tb, dtype):
    a, b = _rand(rng, ls, dtype), _rand(rng, rs, dtype)
    out = mx.nd.dot(_nd(a, dtype), _nd(b, dtype), transpose_a=ta, transpose_b=tb).asnumpy()
    _close(out, dot_ref(a, b, ta, tb), dtype)


def test_dot_numpy_equivalents(rng):
    a, b = _rand(rng, (6, 7), 'f8'), _rand(rng, (7, 3), 'f8')
    np.testing.assert_allclose(mx.nd.dot(_nd(a, 'float64'), _nd(b, 'float64')).asnumpy(),
                               np.dot(a, b), rtol=1e-12)
    np.testing.assert_allclose(
        mx.nd.dot(_nd(a.T, 'float64'), _nd(b.T, 'float64'), True, True).asnumpy(),
        np.dot(a, b), rtol=1e-12)
    v = _rand(rng, (7,), 'f8')
    out = mx.nd.dot(_nd(v, 'float64'), _nd(v, 'float64')).asnumpy()
    assert out.shape == (1,)
    np.testing.assert_allclose(out[0], np.dot(v, v), rtol=1e-12)


def test_dot_zero_size_gives_zeros():
    a = mx.nd.array(np.zeros((2, 0), 'f4'))
    b = mx.nd.array(np.zeros((0, 4), 'f4'))
    # Fill a recycled buffer with garbage first, so stale memory would show.
    mx.nd.dot(mx.nd.array(np.full((2, 3), np.nan, 'f4')), mx.nd.array(np.ones((3, 4), 'f4')))
    out = mx.nd.dot(a, b).asnumpy()
    assert out.shape == (2, 4)
    assert np.array_equal(out, np.zeros((2, 4), 'f4'))


def test_dot_vector_result_ignores_stale_nan():
    # Matrix-vector products (M or N == 1) with a recycled output buffer full of NaN.
    for ls, rs in [((1, 6), (6, 5)), ((5, 6), (6, 1))]:
        shape = (ls[0], rs[1])
        junk = mx.nd.array(np.full(shape, np.nan, 'f4'))
        del junk
        out = mx.nd.dot(mx.nd.array(np.ones(ls, 'f4')), mx.nd.array(np.ones(rs, 'f4')))
        assert np.array_equal(out.asnumpy(), np.full(shape, 6, 'f4'))


def test_dot_float16(rng):
    a, b = _rand(rng, (5, 6), 'f2'), _rand(rng, (6, 3), 'f2')
    out = mx.nd.dot(_nd(a, 'float16'), _nd(b, 'float16')).asnumpy()
    _close(out, dot_ref(a, b, False, False), 'float16')


def test_dot_large_threads(rng):
    # Big enough for the BLAS's own threading.
    a, b = _rand(rng, (130, 257), 'f4'), _rand(rng, (257, 190), 'f4')
    out = mx.nd.dot(_nd(a, 'float32'), _nd(b, 'float32')).asnumpy()
    np.testing.assert_allclose(out, a.astype('f8') @ b, rtol=1e-4, atol=1e-4)


def test_dot_default_attrs_and_forward_stype(rng):
    a, b = _rand(rng, (2, 3), 'f4'), _rand(rng, (3, 2), 'f4')
    out = mx.nd.dot(_nd(a, 'float32'), _nd(b, 'float32'), forward_stype=None).asnumpy()
    _close(out, a.astype('f8') @ b, 'float32')
    out = mx.nd.dot(_nd(a, 'float32'), _nd(b, 'float32'), forward_stype='default').asnumpy()
    _close(out, a.astype('f8') @ b, 'float32')
    # Positional attributes after the inputs fill transpose_a, transpose_b in schema order.
    out = mx.nd.dot(_nd(a, 'float32'), _nd(a, 'float32'), True).asnumpy()
    _close(out, a.T.astype('f8') @ a, 'float32')


def test_dot_errors():
    a = mx.nd.array(np.ones((2, 3), 'f4'))
    b = mx.nd.array(np.ones((4, 5), 'f4'))
    with pytest.raises(mx.MXNetError, match=r'\[2,3\].*\[4,5\]'):
        mx.nd.dot(a, b)
    with pytest.raises(mx.MXNetError, match=r'\[2,3\].*\[2,3\]'):
        mx.nd.dot(a, a)
    with pytest.raises(mx.MXNetError, match='transpose'):
        mx.nd.dot(mx.nd.array(np.ones(3, 'f4')), mx.nd.array(np.ones(3, 'f4')), transpose_a=True)
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.nd.dot(a, mx.nd.array(np.ones((3, 2)), dtype='float64'))
    with pytest.raises(mx.MXNetError, match='int32'):
        mx.nd.dot(mx.nd.array(np.ones((2, 3)), dtype='int32'),
                  mx.nd.array(np.ones((3, 2)), dtype='int32'))
    with pytest.raises(mx.MXNetError, match='foo'):
        mx.nd.dot(a, a, foo=1)
    with pytest.raises(mx.MXNetError):
        mx.nd.dot(a, a, forward_stype='bogus')
    with pytest.raises(mx.MXNetError, match='dimensions'):  # 6 + 5 axes > HG_MAX_NDIM
        mx.nd.dot(mx.nd.array(np.ones((1,) * 7, 'f4')), mx.nd.array(np.ones((1,) * 6, 'f4')))


def test_dot_infer(rng):
    op = mx._core.get_op('dot')
    a = mx.nd.array(np.ones((4, 2, 3), 'f4'))
    b = mx.nd.array(np.ones((5, 6, 4), 'f4'))
    assert op._infer(a, b, transpose_a=True, transpose_b=True)[0][0] == (2, 3, 5, 6)


BATCH_CASES = [
    ((3, 2, 4), (3, 4, 5), False, False),
    ((3, 4, 2), (3, 4, 5), True, False),
    ((3, 2, 4), (3, 5, 4), False, True),
    ((3, 4, 2), (3, 5, 4), True, True),
    ((2, 3, 2, 4), (2, 3, 4, 5), False, False),
    ((2, 3, 4, 2), (2, 3, 5, 4), True, True),
    ((1, 1, 1), (1, 1, 1), False, False),
    ((0, 2, 4), (0, 4, 5), False, False),
    ((3, 2, 0), (3, 0, 5), False, False),
    ((3, 0, 4), (3, 4, 5), False, False),
    ((300, 3, 4), (300, 4, 2), False, False),  # many small products: split over threads
    ((2, 70, 80), (2, 60, 80), False, True),
]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('ls,rs,ta,tb', BATCH_CASES)
def test_batch_dot(rng, ls, rs, ta, tb, dtype):
    a, b = _rand(rng, ls, dtype), _rand(rng, rs, dtype)
    out = mx.nd.batch_dot(_nd(a, dtype), _nd(b, dtype), transpose_a=ta, transpose_b=tb)
    ra = np.swapaxes(a, -1, -2) if ta else a
    rb = np.swapaxes(b, -1, -2) if tb else b
    _close(out.asnumpy(), np.matmul(ra.astype('f8'), rb.astype('f8')), dtype)


_PARALLEL_BATCH = """
import numpy as np, hybridgluon as mx
rng = np.random.default_rng(0)
for ta, tb, (n, m, k, p) in [(False, False, (96, 16, 12, 16)), (True, True, (96, 16, 12, 16)),
                              (False, False, (9000, 1, 4, 4)), (True, False, (9000, 4, 4, 1))]:
    a = rng.standard_normal((n, m, k)).astype('f4')
    b = rng.standard_normal((n, k, p)).astype('f4')
    ra = np.swapaxes(a, 1, 2).copy() if ta else a
    rb = np.swapaxes(b, 1, 2).copy() if tb else b
    out = mx.nd.batch_dot(mx.nd.array(ra), mx.nd.array(rb), transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(out.asnumpy(), np.matmul(a.astype('f8'), b), rtol=1e-4, atol=1e-4)
print('ok')
"""


def test_batch_dot_thread_pool():
    """Many small products are spread over the kernels' thread pool. Run in a fresh process (the
    pool's first job starts its workers) with a time limit, so a pool hang fails instead of
    blocking the suite."""
    import os
    import subprocess
    from conftest import run_python
    try:
        res = run_python(['-c', _PARALLEL_BATCH], env=dict(os.environ, HG_NUM_THREADS='2'),
                         timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail('batch_dot on the thread pool did not finish in 30 s (pool hang)')
    assert res.returncode == 0 and 'ok' in res.stdout, res.stderr


def test_batch_dot_float16(rng):
    a, b = _rand(rng, (2, 3, 4), 'f2'), _rand(rng, (2, 4, 5), 'f2')
    out = mx.nd.batch_dot(_nd(a, 'float16'), _nd(b, 'float16')).asnumpy()
    _close(out, np.matmul(a.astype('f8'), b.astype('f8')), 'float16')


def test_batch_dot_errors():
    a = mx.nd.array(np.ones((2, 3, 4), 'f4'))
    with pytest.raises(mx.MXNetError, match=r'\[2,3,4\].*\[2,5,6\]'):
        mx.nd.batch_dot(a, mx.nd.array(np.ones((2, 5, 6), 'f4')))
    with pytest.raises(mx.MXNetError, match='batch'):
        mx.nd.batch_dot(a, mx.nd.array(np.ones((3, 4, 6), 'f4')))
    with pytest.raises(mx.MXNetError, match='at least 3'):
        mx.nd.batch_dot(mx.nd.array(np.ones((3, 4), 'f4')), mx.nd.array(np.ones((4, 3), 'f4')))
    with pytest.raises(mx.MXNetError, match='at least 3'):
        mx.nd.batch_dot(a, mx.nd.array(np.ones((1, 2, 4, 5), 'f4')))
    with pytest.raises(mx.MXNetError, match='int64'):
        mx.nd.batch_dot(mx.nd.array(np.ones((2, 3, 4)), dtype='int64'),
                        mx.nd.array(np.ones((2, 4, 3)), dtype='int64'))


def fc_ref(x, w, b, flatten):
    x = x.astype('f8')
    if flatten:
        x = x.reshape(x.shape[0], int(np.prod(x.shape[1:])))
    out = x @ w.astype('f8').T
    return out + b.astype('f8').reshape(-1) if b is not None else out


FC_CASES = [
    ((4, 7), 5, True),
    ((4, 7), 5, False),
    ((2, 3, 4, 5), 6, True),
    ((2, 3, 4, 5), 6, False),
    ((1, 512), 256, True),
    ((1, 1), 1, True),
    ((0, 7), 3, True),
    ((3, 0), 4, True),
    ((2, 0, 3), 4, False),
    ((6,), 3, True),
    ((6,), 3, False),
    ((64, 100), 33, True),
]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('no_bias', [False, True])
@pytest.mark.parametrize('shape,nh,flatten', FC_CASES)
def test_fully_connected(rng, shape, nh, flatten, no_bias, dtype):
    x = _rand(rng, shape, dtype)
    k = (int(np.prod(shape[1:])) if flatten else shape[-1]) if len(shape) > 1 else \
        (1 if flatten else shape[0])
    w = _rand(rng, (nh, k), dtype)
    b = None if no_bias else _rand(rng, (nh,), dtype)
    args = [_nd(x, dtype), _nd(w, dtype)] + ([] if no_bias else [_nd(b, dtype)])
    out = mx.nd.FullyConnected(*args, num_hidden=nh, no_bias=no_bias, flatten=flatten)
    if len(shape) == 1 and flatten:
        want = fc_ref(x.reshape(-1, 1), w, b, True)
    elif len(shape) == 1:
        want = fc_ref(x.reshape(1, -1), w, b, False).reshape(nh)
    else:
        want = fc_ref(x, w, b, flatten)
        if not flatten:
            want = want.reshape(shape[:-1] + (nh,))
    _close(out.asnumpy(), want, dtype)


def test_fully_connected_bias_2d_and_float16(rng):
    x, w, b = _rand(rng, (3, 4), 'f4'), _rand(rng, (2, 4), 'f4'), _rand(rng, (2, 1), 'f4')
    out = mx.nd.FullyConnected(_nd(x, 'float32'), _nd(w, 'float32'), _nd(b, 'float32'),
                               num_hidden=2)
    _close(out.asnumpy(), fc_ref(x, w, b, True), 'float32')
    xh, wh, bh = (v.astype('f2') for v in (x, w, b[:, 0]))
    out = mx.nd.FullyConnected(_nd(xh, 'float16'), _nd(wh, 'float16'), _nd(bh, 'float16'),
                               num_hidden=2)
    _close(out.asnumpy(), fc_ref(xh, wh, bh, True), 'float16')


def test_fully_connected_errors():
    x = mx.nd.array(np.ones((2, 7), 'f4'))
    w = mx.nd.array(np.ones((10, 5), 'f4'))
    b = mx.nd.array(np.ones((10,), 'f4'))
    with pytest.raises(mx.MXNetError, match=r'weight shape \[10,5\].*expected \[10,7\]'):
        mx.nd.FullyConnected(x, w, b, num_hidden=10)
    with pytest.raises(mx.MXNetError, match=r'expected \[3,7\]'):
        mx.nd.FullyConnected(x, mx.nd.array(np.ones((10, 7), 'f4')), num_hidden=3,
                             no_bias=True)
    with pytest.raises(mx.MXNetError, match=r'bias shape \[4\]'):
        mx.nd.FullyConnected(x, mx.nd.array(np.ones((10, 7), 'f4')),
                             mx.nd.array(np.ones((4,), 'f4')), num_hidden=10)
    with pytest.raises(mx.MXNetError, match='num_hidden'):
        mx.nd.FullyConnected(x, w, b)
    with pytest.raises(mx.MXNetError, match='num_hidden'):
        mx.nd.FullyConnected(x, w, b, num_hidden=0)
    with pytest.raises(mx.MXNetError, match='num_hidden'):
        mx.nd.FullyConnected(x, w, b, num_hidden='10.5')
    with pytest.raises(mx.MXNetError, match='input'):  # no_bias=True takes 2 inputs
        mx.nd.FullyConnected(x, mx.nd.array(np.ones((10, 7), 'f4')), b, num_hidden=10,
                             no_bias=True)
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.nd.FullyConnected(x, mx.nd.array(np.ones((10, 7)), dtype='float64'), b,
                             num_hidden=10)
    with pytest.raises(mx.MXNetError, match='int32'):
        mx.nd.FullyConnected(mx.nd.array(np.ones((2, 7)), dtype='int32'),
                             mx.nd.array(np.ones((10, 7)), dtype='int32'), num_hidden=10,
                             no_bias=True)
    with pytest.raises(mx.MXNetError, match='foo'):
        mx.nd.FullyConnected(x, w, b, num_hidden=10, foo=1)


# ---- shape rule with unknown inputs (what graph inference will pass) --------------------------
# The shape rule is reached directly through ctypes so that inputs of unknown shape (ndim -1,
# which no NDArray can have) can be given. The structs mirror csrc/core/op.h and tensor.h.

MAX_NDIM, MAX_ATTRS, MAX_TUPLE, MAX_STR = 10, 16, 32, 48


class _Meta(ctypes.Structure):
    _fields_ = [('ndim', ctypes.c_int), ('dtype', ctypes.c_int),
                ('shape', ctypes.c_int64 * MAX_NDIM)]


class _Tuple(ctypes.Structure):
    _fields_ = [('n', ctypes.c_int), ('v', ctypes.c_int64 * MAX_TUPLE)]


class _Union(ctypes.Union):
    _fields_ = [('i', ctypes.c_int64), ('f', ctypes.c_double), ('b', ctypes.c_bool),
                ('t', _Tuple), ('s', ctypes.c_char * MAX_STR)]


class _Value(ctypes.Structure):
    _fields_ = [('is_none', ctypes.c_bool), ('is_set', ctypes.c_bool), ('u', _Union)]


class _Attrs(ctypes.Structure):
    _fields_ = [('n', ctypes.c_int), ('v', _Value * MAX_ATTRS)]


_INFER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                          ctypes.POINTER(_Meta), ctypes.c_int, ctypes.POINTER(_Meta))


class _OpDef(ctypes.Structure):
    _fields_ = [('name', ctypes.c_char_p), ('aliases', ctypes.c_void_p),
                ('doc', ctypes.c_char_p), ('input_names', ctypes.c_void_p),
                ('output_names', ctypes.c_void_p), ('attrs', ctypes.c_void_p),
                ('num_attrs', ctypes.c_int), ('num_inputs', ctypes.c_int),
                ('num_outputs', ctypes.c_int), ('num_visible_outputs', ctypes.c_int),
                ('flags', ctypes.c_uint), ('get_num_inputs', ctypes.c_void_p),
                ('get_num_outputs', ctypes.c_void_p),
                ('get_num_visible_outputs', ctypes.c_void_p), ('infer', _INFER)]


def _lib():
    import os
    path = os.path.join(os.path.dirname(mx.__file__), 'lib', 'libhybridgluon.so')
    lib = ctypes.CDLL(path)
    lib.hg_op_find.restype = ctypes.c_void_p
    lib.hg_op_find.argtypes = [ctypes.c_char_p]
    lib.hg_last_error.restype = ctypes.c_char_p
    lib.hg_attrs_init_defaults.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.hg_attr_parse.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                                  ctypes.c_void_p]
    return lib


def _meta(shape, dtype=0):
    m = _Meta()
    if shape is None:
        m.ndim = -1
    else:
        m.ndim = len(shape)
        for i, d in enumerate(shape):
            m.shape[i] = d
    m.dtype = dtype
    return m


def _shape(m):
    return None if m.ndim < 0 else tuple(m.shape[i] for i in range(m.ndim))


def _infer_raw(name, inputs, **attrs):
    """Runs op `name`'s shape rule on metas; returns (status, input shapes, output shapes)."""
    lib = _lib()
    opp = lib.hg_op_find(name.encode())
    op = _OpDef.from_address(opp)
    assert op.name == name.encode() and op.num_attrs == 3, \
        'ctypes mirror of hg_op_def is out of date with csrc/core/op.h'
    a = _Attrs()
    assert lib.hg_attrs_init_defaults(opp, ctypes.byref(a)) == 0
    keys = ['num_hidden', 'no_bias', 'flatten'] if name == 'FullyConnected' else \
        ['transpose_a', 'transpose_b', 'forward_stype']
    for k, v in attrs.items():
        assert lib.hg_attr_parse(opp, keys.index(k), str(v).encode(), ctypes.byref(a)) == 0
    ins = (_Meta * len(inputs))(*[_meta(s) for s in inputs])
    outs = (_Meta * 1)(_meta(None))
    st = op.infer(opp, ctypes.addressof(a), len(inputs), ins, 1, outs)
    err = lib.hg_last_error().decode() if st else ''
    return st, [_shape(m) for m in ins], _shape(outs[0]), err


def test_fc_infer_fills_unknown_weight_and_bias():
    st, ins, out, _ = _infer_raw('FullyConnected', [(4, 3, 5), None, None], num_hidden=10)
    assert st == 0 and ins == [(4, 3, 5), (10, 15), (10,)] and out == (4, 10)
    st, ins, out, _ = _infer_raw('FullyConnected', [(4, 3, 5), None], num_hidden=10,
                                 no_bias=True, flatten=False)
    assert st == 0 and ins == [(4, 3, 5), (10, 5)] and out == (4, 3, 10)
    # Partially known weight (deferred init: unknown in-units) is completed.
    st, ins, out, _ = _infer_raw('FullyConnected', [(4, 6), (10, -1), None], num_hidden=10)
    assert st == 0 and ins[1] == (10, 6) and ins[2] == (10,)
    # Unknown data: the output stays unknown but the bias is still known from num_hidden.
    st, ins, out, _ = _infer_raw('FullyConnected', [None, None, None], num_hidden=10)
    assert st == 0 and out is None and ins[2] == (10,)
    # An unknown data dim is filled back from the weight; an unknown batch dim carries through.
    st, ins, out, _ = _infer_raw('FullyConnected', [(-1, -1), (10, 6), (10,)], num_hidden=10)
    assert st == 0 and ins[0] == (-1, 6) and out == (-1, 10)
    st, _, _, err = _infer_raw('FullyConnected', [(2, 7), (10, 5), None], num_hidden=10)
    assert st != 0 and 'weight shape [10,5]' in err and '[10,7]' in err


def test_dot_infer_unknown():
    st, _, out, _ = _infer_raw('dot', [None, (3, 4)])
    assert st == 0 and out is None
    st, _, out, _ = _infer_raw('dot', [(-1, 3), (3, 4)])
    assert st == 0 and out == (-1, 4)
    st, _, out, _ = _infer_raw('batch_dot', [(-1, 2, 3), (5, 3, 4)])
    assert st == 0 and out == (5, 2, 4)
    st, _, out, err = _infer_raw('dot', [(), (3,)])
    assert st != 0 and 'scalar' in err
    st, _, out, err = _infer_raw('dot', [(2, 3), (4, 5)])
    assert st != 0 and '[2,3]' in err and '[4,5]' in err
    # M = 2^31 rows does not fit the 32-bit BLAS (checked without allocating anything).
    st, _, out, err = _infer_raw('dot', [(2 ** 31, 1), (1, 1)])
    assert st != 0 and '2^31' in err
    st, _, out, _ = _infer_raw('dot', [(2 ** 31 - 1, 1), (1, 1)])
    assert st == 0 and out == (2 ** 31 - 1, 1)


# ---- the GEMM glue itself (kernels/cpu/gemm.h), with leading dimensions wider than the matrices
# as convolution will use them ----------------------------------------------------------------

@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('m,n,k', [(3, 4, 5), (1, 4, 5), (3, 1, 5), (1, 1, 5), (3, 4, 0),
                                   (0, 4, 5), (17, 9, 33)])
@pytest.mark.parametrize('ta', [False, True])
@pytest.mark.parametrize('tb', [False, True])
def test_gemm_glue_strided(rng, m, n, k, ta, tb, dtype):
    lib = _lib()
    ct = ctypes.c_float if dtype == 'float32' else ctypes.c_double
    fn = lib.hg_gemm_f32 if dtype == 'float32' else lib.hg_gemm_f64
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    fn.argtypes = [ctypes.c_bool, ctypes.c_bool, i64, i64, i64, ct, ptr, i64, ptr, i64, ct, ptr,
                   i64]
    fn.restype = None
    pad = 3
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    A = rng.standard_normal((a_rows, a_cols + pad)).astype(dtype)
    B = rng.standard_normal((b_rows, b_cols + pad)).astype(dtype)
    C = rng.standard_normal((m, n + pad)).astype(dtype)
    opa = A[:, :a_cols].T if ta else A[:, :a_cols]
    opb = B[:, :b_cols].T if tb else B[:, :b_cols]
    for alpha, beta in [(1.0, 0.0), (0.5, 1.0), (2.0, -1.5)]:
        c = C.copy()
        if beta == 0:
            c[:, :n] = np.nan  # beta 0 must overwrite, not scale
        want = c.copy()
        want[:, :n] = alpha * (opa.astype('f8') @ opb) + (beta * C[:, :n] if beta else 0)
        fn(ta, tb, m, n, k, alpha, A.ctypes.data, a_cols + pad, B.ctypes.data, b_cols + pad,
           beta, c.ctypes.data, n + pad)
        np.testing.assert_allclose(c, want, **TOL[dtype])
