"""Element-wise unary and binary ops (incl. scalar forms and broadcasting) against NumPy."""
import math

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

SHAPES = [(), (0,), (1,), (5,), (3, 4), (2, 0, 3), (2, 3, 4, 5), (70000,)]
FLOATS = ['float32', 'float64']
INTS = ['int32', 'int64', 'int8', 'uint8']


def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


# name -> (numpy reference, input domain (lo, hi), integer dtypes supported)
UNARY = {
    'relu': (lambda x: np.maximum(x, 0), (-3, 3), True),
    'sigmoid': (lambda x: 1 / (1 + np.exp(-x)), (-5, 5), False),
    'tanh': (np.tanh, (-3, 3), False),
    'softsign': (lambda x: x / (1 + np.abs(x)), (-3, 3), False),
    'exp': (np.exp, (-3, 3), False),
    'expm1': (np.expm1, (-1, 1), False),
    'log': (np.log, (0.1, 5), False),
    'log1p': (np.log1p, (-0.5, 3), False),
    'log2': (np.log2, (0.1, 5), False),
    'log10': (np.log10, (0.1, 5), False),
    'sqrt': (np.sqrt, (0, 5), False),
    'rsqrt': (lambda x: 1 / np.sqrt(x), (0.1, 5), False),
    'cbrt': (np.cbrt, (-5, 5), False),
    'rcbrt': (lambda x: 1 / np.cbrt(x), (0.1, 5), False),
    'square': (np.square, (-3, 3), True),
    'abs': (np.abs, (-3, 3), True),
    'sign': (np.sign, (-3, 3), True),
    'negative': (np.negative, (-3, 3), True),
    'reciprocal': (lambda x: 1 / x, (0.5, 3), False),
    'floor': (np.floor, (-3, 3), True),
    'ceil': (np.ceil, (-3, 3), True),
    'round': (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), (-3, 3), True),
    'rint': (lambda x: np.where(x - np.floor(x) <= 0.5, np.floor(x), np.floor(x) + 1), (-3, 3),
             True),
    'trunc': (np.trunc, (-3, 3), True),
    'fix': (np.fix, (-3, 3), True),
    'sin': (np.sin, (-3, 3), False),
    'cos': (np.cos, (-3, 3), False),
    'tan': (np.tan, (-1, 1), False),
    'arcsin': (np.arcsin, (-0.9, 0.9), False),
    'arccos': (np.arccos, (-0.9, 0.9), False),
    'arctan': (np.arctan, (-3, 3), False),
    'sinh': (np.sinh, (-2, 2), False),
    'cosh': (np.cosh, (-2, 2), False),
    'arcsinh': (np.arcsinh, (-2, 2), False),
    'arccosh': (np.arccosh, (1.1, 3), False),
    'arctanh': (np.arctanh, (-0.9, 0.9), False),
    'degrees': (np.degrees, (-3, 3), False),
    'radians': (np.radians, (-90, 90), False),
    'erf': (_vec(math.erf), (-2, 2), False),
    'gamma': (_vec(math.gamma), (0.5, 4), False),
    'gammaln': (_vec(math.lgamma), (0.5, 4), False),
    '_copy': (lambda x: x.copy(), (-3, 3), True),
    'BlockGrad': (lambda x: x.copy(), (-3, 3), True),
    'make_loss': (lambda x: x.copy(), (-3, 3), True),
    'zeros_like': (np.zeros_like, (-3, 3), True),
    'ones_like': (np.ones_like, (-3, 3), True),
}

BINARY = {  # name suffix -> numpy reference
    'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'div': np.divide,
    'mod': np.mod, 'power': np.power, 'maximum': np.maximum, 'minimum': np.minimum,
    'hypot': np.hypot, 'equal': np.equal, 'not_equal': np.not_equal, 'greater': np.greater,
    'greater_equal': np.greater_equal, 'lesser': np.less, 'lesser_equal': np.less_equal,
    'logical_and': np.logical_and, 'logical_or': np.logical_or, 'logical_xor': np.logical_xor,
}
SAME_NAMES = {'add': 'elemwise_add', 'sub': 'elemwise_sub', 'mul': 'elemwise_mul',
              'div': 'elemwise_div', 'mod': '_mod', 'power': '_power', 'maximum': '_maximum',
              'minimum': '_minimum', 'hypot': '_hypot'}
SCALAR = {'add': ('_plus_scalar', None), 'sub': ('_minus_scalar', '_rminus_scalar'),
          'mul': ('_mul_scalar', None), 'div': ('_div_scalar', '_rdiv_scalar'),
          'mod': ('_mod_scalar', '_rmod_scalar'), 'power': ('_power_scalar', '_rpower_scalar'),
          'maximum': ('_maximum_scalar', None), 'minimum': ('_minimum_scalar', None),
          'hypot': ('_hypot_scalar', None)}


def _same(name):
    return SAME_NAMES.get(name, '_' + name)


def _scalar_names(name):
    if name in SCALAR:
        return SCALAR[name]
    base = {'lesser': 'lesser', 'lesser_equal': 'lesser_equal'}.get(name, name)
    return ('_%s_scalar' % base, None)


OPS_COVERED = (list(UNARY) + ['Activation'] +
               ['broadcast_' + n for n in BINARY] + [_same(n) for n in BINARY] +
               [n for k in BINARY for n in _scalar_names(k) if n])


def _data(rng, shape, dtype, lo, hi):
    x = rng.uniform(lo, hi, size=shape)
    if np.dtype(dtype).kind in 'iu':
        lo = 0 if dtype == 'uint8' else lo
        x = rng.integers(int(math.floor(lo)), int(math.ceil(hi)) + 1, size=shape)
    return np.asarray(x).astype(dtype)


def _tol(dtype):
    return {'float32': 2e-6, 'float64': 1e-12, 'float16': 2e-3}.get(dtype, 0)


@pytest.mark.parametrize('name', sorted(UNARY))
@pytest.mark.parametrize('shape', SHAPES)
def test_unary(name, shape, rng):
    ref, (lo, hi), ints = UNARY[name]
    dtypes = FLOATS + (INTS if ints else [])
    for dtype in dtypes:
        x = _data(rng, shape, dtype, lo, hi)
        got = getattr(nd, name)(nd.array(x, dtype=dtype))
        assert got.dtype == np.dtype(dtype)
        assert got.shape == shape
        want = ref(x.astype('float64') if dtype in FLOATS else x).astype(dtype)
        if dtype in FLOATS:
            np.testing.assert_allclose(got.asnumpy(), want.reshape(got.shape), rtol=_tol(dtype) * 4,
                                       atol=_tol(dtype))
        else:
            np.testing.assert_array_equal(got.asnumpy(), want.reshape(got.shape))


@pytest.mark.parametrize('name', ['relu', 'sigmoid', 'exp', 'sqrt', 'negative', 'abs'])
def test_unary_float16(name, rng):
    ref, (lo, hi), _ = UNARY[name]
    x = _data(rng, (7, 5), 'float32', lo, hi).astype('float16')
    got = getattr(nd, name)(nd.array(x, dtype='float16'))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.asnumpy().astype('float64'), ref(x.astype('float64')),
                               rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize('act', ['relu', 'sigmoid', 'tanh', 'softrelu', 'softsign'])
def test_activation(act, rng):
    x = rng.uniform(-30, 30, size=(4, 6)).astype('float32')
    refs = {'relu': lambda v: np.maximum(v, 0), 'sigmoid': lambda v: 1 / (1 + np.exp(-v)),
            'tanh': np.tanh, 'softrelu': lambda v: np.where(v > 20, v, np.log1p(np.exp(v))),
            'softsign': lambda v: v / (1 + np.abs(v))}
    got = nd.Activation(nd.array(x), act_type=act).asnumpy()
    np.testing.assert_allclose(got, refs[act](x.astype('float64')), rtol=1e-5, atol=1e-6)


def test_activation_bad_attr():
    with pytest.raises(mx.MXNetError, match='act_type'):
        nd.Activation(nd.ones((2,)), act_type='swish')
    with pytest.raises(mx.MXNetError, match='act_type'):
        nd.Activation(nd.ones((2,)))


def _binary_inputs(rng, name, shape_a, shape_b, dtype):
    lo, hi = (-3, 3)
    a = _data(rng, shape_a, dtype, lo, hi)
    b = _data(rng, shape_b, dtype, lo, hi)
    if name in ('div', 'mod'):
        b = np.where(b == 0, 2, b).astype(dtype)
    if name == 'power':
        a = np.abs(a).astype(dtype) + (1 if np.dtype(dtype).kind in 'iu' else 0.5)
        b = (np.abs(b) % 3).astype(dtype)
    return a, b


def _ref_binary(name, a, b, dtype):
    if np.dtype(dtype).kind in 'iu' and name == 'div':
        q = np.trunc(a.astype('float64') / b)
        return q.astype(dtype)
    out = BINARY[name](a, b)
    return np.asarray(out).astype(dtype)


BCAST_CASES = [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)),
               ((5,), (2, 1, 5)), ((0, 3), (1, 3)), ((1,), (1,)), ((2, 1, 3, 1), (1, 4, 1, 5)),
               ((300, 257), (257,))]


@pytest.mark.parametrize('name', sorted(BINARY))
@pytest.mark.parametrize('dtype', FLOATS + ['int32', 'int64', 'uint8'])
def test_broadcast_binary(name, dtype, rng):
    if name == 'hypot' and dtype not in FLOATS:
        pytest.skip('hypot on integers rounds')
    for sa, sb in BCAST_CASES:
        a, b = _binary_inputs(rng, name, sa, sb, dtype)
        got = getattr(nd, 'broadcast_' + name)(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype))
        want = _ref_binary(name, a, b, dtype)
        assert got.shape == want.shape and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=_tol(dtype) * 4, atol=_tol(dtype))
        same = _same(name)
        if sa == sb:
            got = getattr(nd, same)(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype))
            np.testing.assert_allclose(got.asnumpy(), want, rtol=_tol(dtype) * 4, atol=_tol(dtype))


@pytest.mark.parametrize('name', sorted(BINARY))
def test_scalar_ops(name, rng):
    fwd, rev = _scalar_names(name)
    for dtype in FLOATS + ['int32']:
        a, _ = _binary_inputs(rng, name, (4, 5), (1,), dtype)
        s = 2.0 if name != 'power' else 2.0
        got = getattr(nd, fwd)(nd.array(a, dtype=dtype), scalar=s)
        want = _ref_binary(name, a, np.full((1,), s).astype(dtype), dtype)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=_tol(dtype) * 4, atol=_tol(dtype))
        if rev:
            got = getattr(nd, rev)(nd.array(a, dtype=dtype), scalar=s)
            safe = np.where(a == 0, 1, a).astype(dtype) if name in ('div', 'mod') else a
            got = getattr(nd, rev)(nd.array(safe, dtype=dtype), scalar=s)
            want = _ref_binary(name, np.full((1,), s).astype(dtype), safe, dtype)
            np.testing.assert_allclose(got.asnumpy(), want, rtol=_tol(dtype) * 4,
                                       atol=_tol(dtype))


def test_python_operators_match_numpy(rng):
    a = rng.uniform(1, 3, size=(3, 4)).astype('float32')
    b = rng.uniform(1, 3, size=(4,)).astype('float32')
    x, y = nd.array(a), nd.array(b)
    cases = [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b), (x % y, np.mod(a, b)),
             (x ** y, a ** b), (x + 1, a + 1), (1 + x, 1 + a), (2 - x, 2 - a), (x - 2, a - 2),
             (3 / x, 3 / a), (x / 3, a / 3), (2 ** x, 2 ** a), (x ** 2, a ** 2), (-x, -a),
             (abs(-x), a), (x // y, a // b), (7 // x, 7 // a), (x // 2, a // 2),
             (x > y, (a > b).astype('float32')), (x <= 2, (a <= 2).astype('float32')),
             (x == x, np.ones_like(a)), (x != 2, (a != 2).astype('float32')),
             (2 < x, (2 < a).astype('float32'))]
    for got, want in cases:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_integer_floordiv_and_mod_follow_python():
    a = np.array([7, -7, 7, -7, 0], dtype='int32')
    b = np.array([2, 2, -2, -2, 3], dtype='int32')
    x, y = nd.array(a, dtype='int32'), nd.array(b, dtype='int32')
    np.testing.assert_array_equal((x // y).asnumpy(), a // b)
    np.testing.assert_array_equal((x % y).asnumpy(), a % b)


def test_integer_division_by_zero_does_not_crash():
    x = nd.array([1, 2, -3], dtype='int32')
    z = nd.zeros((3,), dtype='int32')
    np.testing.assert_array_equal((x / z).asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal((x % z).asnumpy(), [0, 0, 0])
    big = nd.array([-2147483648], dtype='int32')
    assert (big / nd.array([-1], dtype='int32')).shape == (1,)


def test_inplace_operators():
    a = np.arange(6, dtype='float32').reshape(2, 3)
    x = nd.array(a)
    ptr = x._data_ptr
    x += 1
    x *= nd.array([1, 2, 3])
    x -= 0.5
    x /= 2
    assert x._data_ptr == ptr
    np.testing.assert_allclose(x.asnumpy(), ((a + 1) * [1, 2, 3] - 0.5) / 2)
    with pytest.raises(mx.MXNetError):
        y = nd.ones((1, 3))
        y += nd.ones((2, 3))  # result shape differs from y's


def test_broadcast_errors_name_op_and_shapes():
    with pytest.raises(mx.MXNetError, match=r'broadcast_add.*\[2,3\] \[4\]'):
        nd.ones((2, 3)) + nd.ones((4,))
    with pytest.raises(mx.MXNetError, match=r'elemwise_add.*\[2,3\].*\[3\]'):
        nd.elemwise_add(nd.ones((2, 3)), nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd.ones((2,)) + nd.ones((2,), dtype='float64')
    with pytest.raises(TypeError):
        nd.ones((2,)) + 'a'


def test_unknown_or_ill_typed_keyword():
    with pytest.raises(mx.MXNetError, match=r"Cannot find argument 'foo'.*_plus_scalar"):
        nd._plus_scalar(nd.ones((2,)), scalar=1, foo=3)
    with pytest.raises(mx.MXNetError, match='scalar'):
        nd._plus_scalar(nd.ones((2,)), scalar='abc')
    with pytest.raises(ValueError):
        nd.relu(nd.ones((2,)), bogus=True)


def test_unsupported_dtype_is_clean_error():
    with pytest.raises(mx.MXNetError, match='exp.*int32'):
        nd.exp(nd.ones((2,), dtype='int32'))


def test_exp_and_sigmoid_float32_edge_values():
    x = np.array([-200, -104, -87.5, -20, -1e-8, 0, 1e-8, 20, 88, 88.7, 89, 1e4, np.inf, -np.inf,
                  np.nan], dtype='float32')
    x = np.concatenate([x, np.linspace(-90, 90, 1001, dtype='float32')])
    with np.errstate(over='ignore'):
        want_exp = np.exp(x.astype('float64'))
        want_sig = 1 / (1 + np.exp(-x.astype('float64')))
    with np.errstate(over='ignore'):
        want_exp = want_exp.astype('float32')
    np.testing.assert_allclose(nd.exp(nd.array(x)).asnumpy(), want_exp, rtol=3e-7, atol=0)
    np.testing.assert_allclose(nd.sigmoid(nd.array(x)).asnumpy(), want_sig, rtol=1e-6, atol=1e-30)


def test_exp_float32_same_bits_on_every_instruction_set():
    """The portable, AVX2 and AVX-512 versions of the vectorised exp (HG_VMATH forces one, read
    once) give the same bits, tails and edge values included."""
    import os
    from conftest import run_python
    code = (
        'import ctypes, os, sys, numpy as np, hybridgluon as mx\n'
        'h = ctypes.CDLL(os.path.join(os.path.dirname(mx.__file__), "lib", "libhybridgluon.so"))\n'
        'h.hg_vexp_impl.restype = ctypes.c_char_p\n'
        'rng = np.random.default_rng(3)\n'
        'x = np.concatenate([rng.uniform(-110, 95, 100003), [np.nan, -np.nan, np.inf, -np.inf, '
        '-0.0, 0.0, 88.72283935546875, 88.72284, -104, -104.00001, 1e-30]]).astype("f4")\n'
        'y = mx.nd.exp(mx.nd.array(x)).asnumpy()\n'
        'print(h.hg_vexp_impl().decode()); sys.stdout.flush()\n'
        'sys.stdout.buffer.write(y.tobytes())\n')
    outs = {}
    for name in ['portable', 'avx2', 'avx512']:
        r = run_python(['-c', code], env=dict(os.environ, HG_VMATH=name), text=False)
        assert r.returncode == 0, r.stderr.decode()
        impl, data = r.stdout.split(b'\n', 1)
        outs[impl.decode()] = data
    assert 'portable' in outs and len(outs) >= 2 or not _cpu_has('avx2'), outs.keys()
    first = next(iter(outs.values()))
    for impl, data in outs.items():
        assert data == first, impl


def _cpu_has(flag):
    try:
        with open('/proc/cpuinfo') as f:
            return flag in f.read().split()
    except OSError:
        return False


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_rint_rounds_exact_halves_down_as_mxnet(dtype):
    # MXNet 1.9.1 documents rint(n.5) = n (it takes the floor when x - floor(x) <= 0.5);
    # NumPy's rint would round half to even.
    x = nd.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4, 2.6, -2.6], dtype=dtype)
    np.testing.assert_array_equal(nd.rint(x).asnumpy(),
                                  [-4, -3, -2, -1, 0, 1, 2, 3, 2, 3, -3])
