"""_sample_uniform and _sample_normal (nd.sample_uniform/sample_normal, nd.random.uniform/normal
with array parameters): draws against the same affine map of _random_uniform/_random_normal's
numbers under one seed, shapes, dtypes, errors, no gradient.
_sample_multinomial (nd.random.multinomial) and its gradient op: draws checked exactly
against a NumPy reference fed the same uniform numbers (the global generator replayed by
seed), frequencies, shapes and dtypes, log-probabilities, errors (the gradient: in
test_grad_sample.py)."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd

OPS_COVERED = ['_sample_multinomial', '_backward_sample_multinomial', '_sample_uniform',
               '_sample_normal']


def _reference(p, m, u):
    """MXNet's rule: the first category whose running sum exceeds u (the last otherwise)."""
    k = p.shape[-1]
    rows = p.reshape(-1, k).astype(np.float64)
    u = u.reshape(rows.shape[0], m)
    out = np.empty((rows.shape[0], m), dtype=np.int64)
    for r in range(rows.shape[0]):
        cum = np.cumsum(rows[r])
        for j in range(m):
            hit = np.nonzero(u[r, j] < cum[:k - 1])[0]
            out[r, j] = hit[0] if hit.size else k - 1
    return out


def _probs(rng, shape, dtype):
    p = rng.uniform(0.05, 1, size=shape)
    return (p / p.sum(-1, keepdims=True)).astype(dtype)


@pytest.mark.parametrize('dshape,shape', [((3,), ()), ((4,), (5,)), ((2, 3), (4,)),
                                          ((2, 2, 5), (2, 3)), ((1,), ()), ((0, 3), (2,)),
                                          ((1, 1), (1,))])
@pytest.mark.parametrize('pdtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('dtype', ['int32', 'uint8', 'float16', 'float32', 'float64'])
def test_draws_match_the_reference(dshape, shape, pdtype, dtype):
    rng = np.random.default_rng(hash((dshape, shape)) % 2**32)
    p = _probs(rng, dshape, pdtype)
    rows = int(np.prod(dshape[:-1]))
    m = int(np.prod(shape)) if shape else 1
    mx.random.seed(123)
    u = nd.random.uniform(0, 1, shape=(max(rows * m, 1),), dtype='float64').asnumpy()
    mx.random.seed(123)
    got, logp = nd.random.multinomial(nd.array(p, dtype=pdtype), shape=shape, get_prob=True,
                                      dtype=dtype)
    want_shape = (dshape[:-1] + tuple(shape)) or (1,)
    assert got.shape == want_shape and logp.shape == want_shape
    assert got.dtype == np.dtype(dtype) and logp.dtype == np.dtype(pdtype)
    want = _reference(p, m, u[:rows * m])
    np.testing.assert_array_equal(got.asnumpy().reshape(rows, m), want)
    rows_p = p.reshape(-1, dshape[-1]).astype(np.float64)
    want_lp = np.log(np.take_along_axis(rows_p, want, axis=1)) if rows else want
    np.testing.assert_allclose(logp.asnumpy().reshape(rows, m).astype(np.float64), want_lp,
                               rtol=2e-3 if pdtype == 'float16' else 1e-6, atol=1e-3)


def test_frequencies_follow_the_probabilities():
    mx.random.seed(7)
    p = np.array([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    got = nd.random.multinomial(nd.array(p), shape=20000).asnumpy()
    for r in range(2):
        freq = np.bincount(got[r], minlength=3) / got.shape[1]
        np.testing.assert_allclose(freq, p[r], atol=0.015)
    assert not (got[1] == 1).any()  # a zero-probability category is never drawn


def test_seed_replays_and_sym_agrees():
    p = nd.array([[0.2, 0.3, 0.5]])
    mx.random.seed(3)
    a = nd.random.multinomial(p, shape=50).asnumpy()
    mx.random.seed(3)
    b = mx.sym.random.multinomial(mx.sym.var('d'), shape=50).eval(d=p)[0].asnumpy()
    np.testing.assert_array_equal(a, b)


def test_errors():
    with pytest.raises(mx.MXNetError, match='dtype must be'):
        nd.random.multinomial(nd.array([0.5, 0.5]), dtype='int64')
    with pytest.raises(mx.MXNetError, match='probabilities'):
        nd.random.multinomial(nd.array([1, 0], dtype='int32'))
    with pytest.raises(mx.MXNetError, match='at least one category'):
        nd.random.multinomial(nd.zeros((2, 0)))


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_backward_op_forward(dtype):
    og = np.array([[1.0, 2.0, -1.0]])
    p = np.array([[0.25, 0.5]])
    s = np.array([[1, 0, 1]], dtype=np.int32)
    got = nd._backward_sample_multinomial(nd.array(og, dtype=dtype), nd.array(p, dtype=dtype),
                                          nd.array(s, dtype='int32'))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.asnumpy(), [[2.0 / 0.25, 0.0 / 0.5]], rtol=1e-3)


PARAM_CASES = [((3,), ()), ((2,), (4,)), ((2, 3), (2, 2)), ((1,), ()), ((1,), (1,)),
               ((0, 2), (3,))]


@pytest.mark.parametrize('pshape,shape', PARAM_CASES)
@pytest.mark.parametrize('pdtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('dtype', [None, 'float16', 'float32', 'float64'])
def test_param_samplers_match_the_reference(pshape, shape, pdtype, dtype):
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, size=pshape).astype(pdtype)
    b = (a + rng.uniform(0.5, 3, size=pshape)).astype(pdtype)
    m = int(np.prod(shape)) if shape else 1  # draws per parameter element
    n = int(np.prod(pshape)) * m
    out_dtype = np.dtype(dtype or 'float32')
    want_shape = (pshape + tuple(shape)) or (1,)
    tol = 2e-3 if 'float16' in (pdtype, out_dtype) else 1e-6
    a64, b64 = a.astype(np.float64).reshape(-1, 1), b.astype(np.float64).reshape(-1, 1)
    for op, draw, ref in [
            ('sample_uniform', nd.random.uniform, lambda u: a64 + (b64 - a64) * u),
            ('sample_normal', nd.random.normal, lambda z: a64 + b64 * z)]:
        mx.random.seed(21)
        base = draw(0, 1, shape=(max(n, 1),), dtype='float64').asnumpy()[:n].reshape(-1, m) \
            if n else np.zeros((0, m))
        mx.random.seed(21)
        got = getattr(nd, op)(nd.array(a, dtype=pdtype), nd.array(b, dtype=pdtype), shape=shape,
                              dtype=dtype)
        assert got.shape == want_shape and got.dtype == out_dtype
        np.testing.assert_allclose(got.asnumpy().astype(np.float64).reshape(-1, m),
                                   ref(base), rtol=tol, atol=tol)


def test_param_samplers_front_ends_and_errors():
    lo, hi = nd.array([0.0, 5.0]), nd.array([1.0, 6.0])
    mx.random.seed(8)
    a = nd.random.uniform(lo, hi, shape=3)
    mx.random.seed(8)
    b = nd._sample_uniform(lo, hi, shape=(3,))
    mx.random.seed(8)
    c = mx.sym.random.uniform(mx.sym.var('l'), mx.sym.var('h'), shape=3).eval(l=lo, h=hi)[0]
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    np.testing.assert_array_equal(a.asnumpy(), c.asnumpy())
    assert ((a.asnumpy() >= lo.asnumpy()[:, None]) & (a.asnumpy() < hi.asnumpy()[:, None])).all()
    s = nd.sample_normal(mu=nd.array([10.0]), sigma=nd.array([0.5]))
    assert s.shape == (1,)
    assert nd.sample_normal(mu=nd.array([10.0]), sigma=nd.array([0.5]), shape=1).shape == (1, 1)
    np.testing.assert_array_equal(nd.random.normal(lo, nd.zeros((2,))).asnumpy(), [0, 5])
    with pytest.raises(mx.MXNetError, match='must match'):
        nd.sample_normal(nd.array([0, 1]), nd.array([1, 1, 1]))
    with pytest.raises(mx.MXNetError, match='dtype must be'):
        nd.sample_uniform(lo, hi, dtype='int32')
    with pytest.raises(ValueError):
        nd.random.uniform(lo, 1.0)
    x = nd.array([0.0, 1.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.sample_normal(x, nd.array([1.0, 1.0]))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0])  # no gradient, as MXNet's
