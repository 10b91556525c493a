"""Reductions (sum, mean, prod, nansum, nanprod, max, min, norm, argmax, argmin) against NumPy,
with MXNet 1.x semantics: full reductions give shape (1,), output dtype = input dtype (argmax
returns indices in the input dtype), integer sums wrap in the input type, integer means divide
like C, max/min/argmax propagate NaN, exclude reduces the axes not listed."""
import itertools

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['sum', 'mean', 'prod', 'nansum', 'nanprod', 'max', 'min', 'norm', 'argmax',
               'argmin']

AXES_OPS = ['sum', 'mean', 'prod', 'nansum', 'nanprod', 'max', 'min']
NP_OPS = {'sum': np.sum, 'mean': np.mean, 'prod': np.prod, 'nansum': np.nansum,
          'nanprod': np.nanprod, 'max': np.max, 'min': np.min}


def _arr(a):
    return nd.array(a, dtype=a.dtype)


def _zeros(shape, dtype='float32'):
    return _arr(np.zeros(shape, dtype))


def _ones(shape, dtype='float32'):
    return _arr(np.ones(shape, dtype))


def _as_mx_shape(r):
    r = np.asarray(r)
    return r.reshape(1) if r.ndim == 0 else r


def _red_axes(ndim, axis, exclude):
    """The input axes MXNet reduces for (axis, exclude); None/() reduce all."""
    if axis is None or axis == ():
        return tuple(range(ndim))
    listed = {a % ndim for a in ((axis,) if isinstance(axis, int) else axis)}
    return tuple(d for d in range(ndim) if (d not in listed) == exclude)


def _ref(name, a, axis=None, keepdims=False, exclude=False):
    """NumPy reference with MXNet's dtype rules."""
    axes = _red_axes(a.ndim, axis, exclude)
    if a.dtype.kind in 'iu':
        if name in ('sum', 'nansum', 'prod', 'nanprod'):  # wraps in the input type
            f = np.sum if 'sum' in name else np.prod
            r = f(a.astype(np.int64), axis=axes, keepdims=keepdims).astype(a.dtype)
        elif name == 'mean':  # sum in the input type, then C integer division
            s = np.sum(a.astype(np.int64), axis=axes, keepdims=keepdims).astype(a.dtype)
            s = s.astype(np.int64)
            cnt = int(np.prod([a.shape[d] for d in axes]))
            r = (np.sign(s) * (np.abs(s) // cnt)).astype(a.dtype)
        else:
            r = NP_OPS[name](a, axis=axes, keepdims=keepdims)
    else:
        r = NP_OPS[name](a.astype(np.float64), axis=axes, keepdims=keepdims).astype(a.dtype)
    return _as_mx_shape(r)


def _check(out, ref, rtol=1e-5, atol=1e-6):
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True)


def _data(name, shape, dtype, rng):
    if np.dtype(dtype).kind == 'f':
        lo, hi = (0.5, 1.5) if 'prod' in name else (-2, 2)
        return rng.uniform(lo, hi, shape).astype(dtype)
    lo, hi = (-2, 3) if 'prod' in name else (-50, 51)
    return rng.integers(lo, hi, shape).astype(dtype)


AXIS_SETTINGS = [None, 0, 1, 2, -1, (0, 2), ()]
FLAGS = [(False, False), (True, False), (False, True), (True, True)]


# ---- sum / mean / prod / nansum / nanprod / max / min ------------------------------------------

@pytest.mark.parametrize('name', AXES_OPS)
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_axes_ops_2x3x4(name, dtype, rng):
    a = _data(name, (2, 3, 4), dtype, rng)
    x = _arr(a)
    for axis, (keepdims, exclude) in itertools.product(AXIS_SETTINGS, FLAGS):
        out = getattr(nd, name)(x, axis=axis, keepdims=keepdims, exclude=exclude).asnumpy()
        _check(out, _ref(name, a, axis, keepdims, exclude))


@pytest.mark.parametrize('name', AXES_OPS)
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
@pytest.mark.parametrize('shape', [(1,), (7,), (1, 1), (4, 1, 5)])
def test_axes_ops_small_shapes(name, dtype, shape, rng):
    a = _data(name, shape, dtype, rng)
    x = _arr(a)
    for axis in [None, 0, -1]:
        for keepdims in (False, True):
            out = getattr(nd, name)(x, axis=axis, keepdims=keepdims).asnumpy()
            _check(out, _ref(name, a, axis, keepdims))


def test_full_reduction_shape_is_1():
    x = nd.array(np.arange(6).reshape(2, 3))
    for name in AXES_OPS + ['norm', 'argmax', 'argmin']:
        assert getattr(nd, name)(x).shape == (1,), name
    assert nd.sum(x, axis=(0, 1)).shape == (1,)
    assert nd.sum(x, keepdims=True).shape == (1, 1)
    # exclude with no axis is still a full reduction
    assert nd.sum(x, exclude=True).asnumpy().tolist() == [15.0]
    # exclude of every axis reduces nothing
    np.testing.assert_array_equal(nd.sum(x, axis=(0, 1), exclude=True).asnumpy(), x.asnumpy())


@pytest.mark.parametrize('name', ['sum', 'mean', 'max', 'min'])
def test_float16(name, rng):
    a = rng.uniform(-1, 1, (3, 40, 5)).astype(np.float16)
    for axis in [None, 1, (0, 2)]:
        out = getattr(nd, name)(_arr(a), axis=axis).asnumpy()
        _check(out, _ref(name, a, axis), rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize('dtype', ['int8', 'uint8', 'int64'])
def test_small_int_types_wrap(dtype, rng):
    a = rng.integers(0, 100, (4, 50)).astype(dtype)
    for name in ['sum', 'prod', 'max', 'min', 'mean']:
        for axis in [None, 0, 1]:
            _check(getattr(nd, name)(_arr(a), axis=axis).asnumpy(), _ref(name, a, axis))


def test_int_mean_truncates():
    a = np.array([[1, 2], [-3, -4]], dtype=np.int32)
    out = nd.mean(_arr(a), axis=1).asnumpy()
    assert out.dtype == np.int32
    assert out.tolist() == [1, -3]  # 3/2 -> 1, -7/2 -> -3 (toward zero)


def test_aliases_and_positional_axis(rng):
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    x = _arr(a)
    _check(nd.sum_axis(x, axis=1).asnumpy(), _ref('sum', a, 1))
    _check(nd.max_axis(x, axis=0).asnumpy(), _ref('max', a, 0))
    _check(nd.min_axis(x, axis=0).asnumpy(), _ref('min', a, 0))
    _check(nd.sum(x, 1).asnumpy(), _ref('sum', a, 1))  # positional: axis first
    _check(nd.sum(x, 1, True).asnumpy(), _ref('sum', a, 1, keepdims=True))


# ---- zero-size inputs ------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_zero_size(dtype):
    a = np.zeros((3, 0, 2), dtype=dtype)
    x = _arr(a)
    for name in ['sum', 'prod', 'nansum', 'nanprod']:
        for axis in [None, 1, (0, 1), 0, 2]:
            _check(getattr(nd, name)(x, axis=axis).asnumpy(), _ref(name, a, axis))
    # sum over the empty axis gives zeros of shape (3, 2); prod gives ones
    assert nd.sum(x, axis=1).asnumpy().tolist() == [[0, 0]] * 3
    assert nd.prod(x, axis=1).asnumpy().tolist() == [[1, 1]] * 3
    assert nd.sum(x, axis=1, keepdims=True).shape == (3, 1, 2)
    assert nd.sum(x, axis=0).shape == (0, 2)
    assert nd.sum(_arr(np.zeros((0,), dtype))).asnumpy().tolist() == [0]
    mean = nd.mean(x, axis=1).asnumpy()
    if dtype.startswith('float'):
        assert np.isnan(mean).all()
    else:
        assert (mean == 0).all()
    assert nd.norm(x, axis=1).asnumpy().tolist() == [[0, 0]] * 3


@pytest.mark.parametrize('name', ['max', 'min'])
def test_zero_size_max_min_raises(name):
    for shape, axis in [((0,), None), ((3, 0, 2), 1), ((3, 0, 2), 0)]:
        with pytest.raises(mx.MXNetError, match='size'):
            getattr(nd, name)(_zeros(shape), axis=axis)


# ---- NaN handling ----------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_nan(dtype):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0], [np.nan, 2.0, np.nan]], dtype=dtype)
    x = _arr(a)
    for name in AXES_OPS:
        for axis in [None, 0, 1]:
            _check(getattr(nd, name)(x, axis=axis).asnumpy(), _ref(name, a, axis))
    # long rows (vectorised paths) with a NaN in the middle
    b = np.arange(1000, dtype=dtype).reshape(2, 500)
    b[1, 321] = np.nan
    for name in ['max', 'min', 'nansum', 'sum']:
        _check(getattr(nd, name)(_arr(b), axis=1).asnumpy(), _ref(name, b, 1))
    assert nd.argmax(_arr(b), axis=1).asnumpy().tolist() == [499, 321]
    assert nd.argmin(_arr(b), axis=1).asnumpy().tolist() == [0, 321]


# ---- norm ------------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_norm(dtype, rng):
    a = rng.uniform(-2, 2, (2, 3, 4)).astype(dtype)
    x = _arr(a)
    for ordv in (1, 2):
        for axis in [None, 0, 1, -1, (0, 2), (1, 2), ()]:
            for keepdims in (False, True):
                axes = _red_axes(3, axis, False)
                af = a.astype(np.float64)
                r = (np.sum(np.abs(af), axis=axes, keepdims=keepdims) if ordv == 1 else
                     np.sqrt(np.sum(af * af, axis=axes, keepdims=keepdims)))
                out = nd.norm(x, ord=ordv, axis=axis, keepdims=keepdims).asnumpy()
                _check(out, _as_mx_shape(r.astype(dtype)))
    assert nd.norm(x).shape == (1,)
    np.testing.assert_allclose(nd.norm(x).asnumpy(), [np.linalg.norm(a.ravel())], rtol=1e-5)


def test_norm_out_dtype_and_ints(rng):
    a = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
    out = nd.norm(_arr(a), axis=1, out_dtype='float64').asnumpy()
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, np.linalg.norm(a.astype(np.float64), axis=1), rtol=1e-6)
    b = np.array([[3, 4], [6, 8]], dtype=np.int32)
    assert nd.norm(_arr(b), axis=1).asnumpy().tolist() == [5, 10]
    assert nd.norm(_arr(b), ord=1, axis=0).asnumpy().tolist() == [9, 12]
    out = nd.norm(_arr(b), out_dtype='float32')
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), [np.sqrt(125.0)], rtol=1e-6)
    h = a.astype(np.float16)
    np.testing.assert_allclose(nd.norm(_arr(h), axis=0).asnumpy().astype(np.float64),
                               np.linalg.norm(h.astype(np.float64), axis=0), rtol=2e-3)


def test_norm_errors():
    x = _ones((2, 3))
    with pytest.raises(mx.MXNetError, match='ord'):
        nd.norm(x, ord=3)
    with pytest.raises(mx.MXNetError, match='out_dtype'):
        nd.norm(x, out_dtype='uint8')
    with pytest.raises(mx.MXNetError, match='axis'):
        nd.norm(x, axis=2)


# ---- argmax / argmin -------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['argmax', 'argmin'])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'int64'])
def test_arg(name, dtype, rng):
    f = getattr(np, name)
    for shape in [(1,), (7,), (2, 3, 4), (3, 1, 5), (4, 300), (300, 4), (5, 20, 3)]:
        a = rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)
        x = _arr(a)
        for axis in [None] + list(range(len(shape))) + [-1]:
            for keepdims in (False, True):
                out = getattr(nd, name)(x, axis=axis, keepdims=keepdims).asnumpy()
                r = np.asarray(f(a, axis=axis))
                if keepdims:
                    r = (r.reshape((1,) * len(shape)) if axis is None else
                         np.expand_dims(r, axis % len(shape)))
                r = _as_mx_shape(r).astype(dtype)
                if len(shape) == 1:
                    r = r.reshape(1)  # 1-D input: always (1,)
                _check(out, r, rtol=0, atol=0)


@pytest.mark.parametrize('name', ['argmax', 'argmin'])
def test_arg_ties_first_and_float16(name, rng):
    a = np.array([[1, 3, 3, 0, 0], [2, 2, 2, 2, 2]], dtype=np.float32)
    exp = {'argmax': [1, 0], 'argmin': [3, 0]}[name]
    assert getattr(nd, name)(_arr(a), axis=1).asnumpy().tolist() == exp
    long_row = np.zeros((2, 1000), np.float32)
    long_row[:, 500:] = 1 if name == 'argmax' else -1
    assert getattr(nd, name)(_arr(long_row), axis=1).asnumpy().tolist() == [500, 500]
    h = rng.uniform(-1, 1, (6, 7)).astype(np.float16)
    for axis in [None, 0, 1]:
        out = getattr(nd, name)(_arr(h), axis=axis)
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out.asnumpy(),
                                      _as_mx_shape(getattr(np, name)(h, axis=axis)))


def test_arg_errors():
    x = _ones((2, 3))
    with pytest.raises(mx.MXNetError, match='axis'):
        nd.argmax(x, axis=2)
    with pytest.raises(mx.MXNetError, match='axis'):
        nd.argmin(x, axis=-3)
    with pytest.raises(mx.MXNetError, match='empty'):
        nd.argmax(_zeros((0,)))
    with pytest.raises(mx.MXNetError, match='zero dim-size'):
        nd.argmax(_zeros((3, 0, 2)), axis=1)
    assert nd.argmax(_zeros((3, 0, 2)), axis=0).shape == (0, 2)
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd.argmax(_ones((2, 3), 'int8'))


# ---- errors ----------------------------------------------------------------------------------

def test_axis_errors():
    x = _ones((2, 3, 4))
    for name in AXES_OPS + ['norm']:
        with pytest.raises(mx.MXNetError, match=r'axis 3 .*\[2,3,4\]'):
            getattr(nd, name)(x, axis=3)
        with pytest.raises(mx.MXNetError, match='out of range'):
            getattr(nd, name)(x, axis=(0, -4))
    with pytest.raises(mx.MXNetError, match='duplicate'):
        nd.sum(x, axis=(1, -2))


def test_unknown_kwarg():
    x = _ones((2, 3))
    for name in ['sum', 'max', 'norm', 'argmax']:
        with pytest.raises(mx.MXNetError, match='foo'):
            getattr(nd, name)(x, foo=1)


def test_infer_without_running():
    x = _ones((2, 3, 4), 'int32')
    assert mx._core.get_op('sum')._infer(x, axis=1, exclude=True) == [((3,), 4)]
    assert mx._core.get_op('norm')._infer(x, out_dtype='float64') == [((1,), 1)]
    assert mx._core.get_op('argmax')._infer(x, axis=-1, keepdims=True) == [((2, 3, 1), 4)]


# ---- large inputs: accuracy and the split / vectorised paths ---------------------------------

def test_float32_sum_accuracy(rng):
    a = rng.uniform(0, 1, 10 ** 6).astype(np.float32)
    exact = np.sum(a.astype(np.float64))
    out = nd.sum(_arr(a)).asnumpy()[0]
    assert abs(out - exact) / exact < 1e-5
    assert abs(nd.mean(_arr(a)).asnumpy()[0] - exact / a.size) / (exact / a.size) < 1e-5


@pytest.mark.parametrize('shape,axis', [
    ((300000,), None), ((3, 100000), 1), ((100000, 3), 0), ((100000, 3), 1),
    ((5, 300, 200), (0, 2)), ((400, 5, 200), (0, 2)), ((300, 1000), 0), ((60, 3, 50, 30), (0, 2)),
])
def test_large(shape, axis, rng):
    for dtype in ['float32', 'int32']:
        a = _data('sum', shape, dtype, rng)
        x = _arr(a)
        for name in ['sum', 'max', 'mean']:
            _check(getattr(nd, name)(x, axis=axis).asnumpy(), _ref(name, a, axis), rtol=1e-5,
                   atol=1e-4)
    a = rng.standard_normal(shape).astype(np.float32)
    r = np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=axis))
    _check(nd.norm(_arr(a), axis=axis).asnumpy(), _as_mx_shape(r.astype(np.float32)))
    single = axis if isinstance(axis, int) else None
    np.testing.assert_array_equal(nd.argmax(_arr(a), axis=single).asnumpy().astype(np.int64),
                                  _as_mx_shape(np.argmax(a, axis=single)))


# ---- NDArray methods -------------------------------------------------------------------------

def test_ndarray_methods(rng):
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    x = _arr(a)
    _check(x.sum(axis=1).asnumpy(), _ref('sum', a, 1))
    _check(x.max().asnumpy(), _ref('max', a))
    _check(x.min(axis=0, keepdims=True).asnumpy(), _ref('min', a, 0, keepdims=True))
    _check(x.mean().asnumpy(), _ref('mean', a))
    _check(x.prod(axis=0).asnumpy(), _ref('prod', a, 0))
    np.testing.assert_array_equal(x.argmax(axis=0).asnumpy(), np.argmax(a, axis=0))
    np.testing.assert_array_equal(x.argmin(axis=1).asnumpy(), np.argmin(a, axis=1))
    assert x.argmax(axis=0).dtype == np.float32
    np.testing.assert_allclose(x.norm().asnumpy(), [np.linalg.norm(a)], rtol=1e-5)
    assert x.sum().asscalar() == pytest.approx(float(np.sum(a.astype(np.float64))), rel=1e-5)
