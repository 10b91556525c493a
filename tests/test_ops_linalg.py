"""The linalg ops (csrc/ops/linalg.c) against NumPy references: float32 and float64, single
matrices, batches, empty batches and 1 x 1 matrices, every attribute setting; the backward ops
called directly against closed forms; and the errors for bad shapes, dtypes and matrices that
LAPACK rejects. Their gradients are in test_grad_linalg.py, MXNet's own numbers in the
conformance fixtures (tests/mxnet_ref/op_cases_linalg.py)."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['_linalg_gemm', '_linalg_gemm2', '_linalg_potrf', '_linalg_potri',
               '_linalg_trmm', '_linalg_trsm', '_linalg_syrk', '_linalg_sumlogdiag',
               '_linalg_extractdiag', '_linalg_makediag', '_linalg_extracttrian',
               '_linalg_maketrian', '_linalg_gelqf', '_linalg_syevd', '_linalg_inverse',
               '_linalg_det', '_linalg_slogdet',
               '_backward_linalg_gemm', '_backward_linalg_gemm2', '_backward_linalg_potrf',
               '_backward_linalg_potri', '_backward_linalg_trmm', '_backward_linalg_trsm',
               '_backward_linalg_syrk', '_backward_linalg_sumlogdiag',
               '_backward_linalg_gelqf', '_backward_linalg_syevd', '_backward_linalg_inverse',
               '_backward_linalg_det', '_backward_linalg_slogdet']

DTYPES = ['float32', 'float64']
TOL = {'float32': dict(rtol=1e-4, atol=1e-5), 'float64': dict(rtol=1e-10, atol=1e-12)}
BATCHES = [(), (1,), (3,), (2, 2), (0,)]


def T(x):
    return np.swapaxes(x, -1, -2)


def _arr(x, dtype):
    return nd.array(np.asarray(x, dtype=dtype), dtype=dtype)


def _spd(rng, shape):
    m = rng.standard_normal(shape)
    return m @ T(m) + shape[-1] * np.eye(shape[-1])


def _tri(rng, shape, lower=True):
    t = rng.standard_normal(shape)
    t = np.tril(t) if lower else np.triu(t)
    i = np.arange(shape[-1])
    t[..., i, i] = 2.0 + np.abs(t[..., i, i])
    return t


def _check(ours, ref, dtype):
    assert ours.dtype == np.dtype(dtype)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    np.testing.assert_allclose(ours.asnumpy(), ref, **TOL[dtype])


# ---- gemm / gemm2 --------------------------------------------------------------------------

def _to_axis(x, axis):
    """Moves the row axis of x (at -2) to `axis` (as gemm's axis attribute reads it)."""
    n = x.ndim
    return np.moveaxis(x, n - 2, axis + n if axis < 0 else axis).copy()


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('lead,axis', [((), -2), ((3,), -2), ((0,), -2), ((2, 3), 0),
                                        ((2, 3), -3), ((2, 3), 1), ((4,), 0)])
@pytest.mark.parametrize('ta,tb', [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_gemm2(rng, dtype, lead, axis, ta, tb):
    m, k, n = 3, 4, 2
    a = rng.standard_normal(lead + ((k, m) if ta else (m, k)))
    b = rng.standard_normal(lead + ((n, k) if tb else (k, n)))
    c = rng.standard_normal(lead + (m, n))
    prod = (T(a) if ta else a) @ (T(b) if tb else b)
    ax = [_to_axis(x, axis) for x in (a, b, c)]
    attrs = dict(transpose_a=ta, transpose_b=tb, alpha=1.5, axis=axis)
    out = nd.linalg.gemm(*[_arr(x, dtype) for x in ax], beta=-0.5, **attrs)
    _check(out, _to_axis(1.5 * prod - 0.5 * c, axis), dtype)
    out = nd.linalg.gemm2(_arr(ax[0], dtype), _arr(ax[1], dtype), **attrs)
    _check(out, _to_axis(1.5 * prod, axis), dtype)


def test_gemm_defaults_and_aliases(rng):
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    out = nd.linalg_gemm(_arr(a, 'float64'), _arr(b, 'float64'), _arr(c, 'float64'))
    _check(out, a @ b + c, 'float64')  # alpha = beta = 1
    _check(nd.linalg_gemm2(_arr(a, 'float64'), _arr(b, 'float64')), a @ b, 'float64')
    # a product over an empty contraction: C scaled by beta
    out = nd.linalg.gemm(nd.zeros((2, 0)), nd.zeros((0, 4)), _arr(c, 'float32'), beta=2.0)
    _check(out, 2 * c, 'float32')


# ---- potrf / potri -------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('batch', BATCHES)
@pytest.mark.parametrize('n', [1, 4])
@pytest.mark.parametrize('lower', [True, False])
def test_potrf_potri(rng, dtype, batch, n, lower):
    a = _spd(rng, batch + (n, n))
    chol = np.linalg.cholesky(a) if a.size else np.zeros(a.shape)
    ref = chol if lower else T(chol)
    out = nd.linalg.potrf(_arr(a, dtype), lower=lower)
    _check(out, ref, dtype)
    # potri reads only the factor's triangle: garbage in the other one changes nothing
    t = _tri(rng, batch + (n, n), lower)
    junk = t + (np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)) * 7
    inv = np.linalg.inv(t @ T(t) if lower else T(t) @ t) if t.size else t
    _check(nd.linalg.potri(_arr(junk, dtype), lower=lower), inv, dtype)


def test_potrf_reads_one_triangle(rng):
    a = _spd(rng, (3, 3))
    junk = np.tril(a) + np.triu(np.full((3, 3), 100.0), 1)
    _check(nd.linalg.potrf(_arr(junk, 'float64')), np.linalg.cholesky(a), 'float64')


# ---- trmm / trsm ---------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('batch', [(), (2,), (0,)])
@pytest.mark.parametrize('rightside', [False, True])
@pytest.mark.parametrize('transpose', [False, True])
@pytest.mark.parametrize('lower', [True, False])
def test_trmm_trsm(rng, dtype, batch, rightside, transpose, lower):
    t = _tri(rng, batch + (3, 3), lower)
    other = np.triu(rng.standard_normal((3, 3)), 1) if lower else \
        np.tril(rng.standard_normal((3, 3)), -1)
    a = t + other  # the op must ignore the other triangle
    b = rng.standard_normal(batch + ((5, 3) if rightside else (3, 5)))
    opa = T(t) if transpose else t
    attrs = dict(rightside=rightside, transpose=transpose, lower=lower, alpha=-2.0)
    ref = -2.0 * (b @ opa if rightside else opa @ b)
    _check(nd.linalg.trmm(_arr(a, dtype), _arr(b, dtype), **attrs), ref, dtype)
    if t.size:
        inv = np.linalg.inv(opa)
        ref = -2.0 * (b @ inv if rightside else inv @ b)
    else:
        ref = b
    _check(nd.linalg.trsm(_arr(a, dtype), _arr(b, dtype), **attrs), ref, dtype)


# ---- syrk, sumlogdiag ----------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(1, 1), (3, 4), (2, 4, 3), (0, 2, 3), (3, 0)])
@pytest.mark.parametrize('transpose', [False, True])
def test_syrk(rng, dtype, shape, transpose):
    a = rng.standard_normal(shape)
    ref = 0.5 * (T(a) @ a if transpose else a @ T(a))
    _check(nd.linalg.syrk(_arr(a, dtype), transpose=transpose, alpha=0.5), ref, dtype)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 4, 4), (2, 2, 3, 3), (0, 2, 2)])
def test_sumlogdiag(rng, dtype, shape):
    a = _spd(rng, shape)
    ref = np.log(np.diagonal(a, axis1=-2, axis2=-1)).sum(-1)
    if len(shape) == 2:
        ref = ref.reshape(1)
    _check(nd.linalg.sumlogdiag(_arr(a, dtype)), ref, dtype)


# ---- diagonals and triangles ---------------------------------------------------------------

def _packed(a, off, lower):
    """MXNet's order: the rows of the lower triangle, or the columns of the upper one."""
    n = a.shape[-1]
    m = n - abs(off)
    if off < 0 or (off == 0 and lower):
        idx = [(i + abs(off), j) for i in range(m) for j in range(i + 1)]
    else:
        idx = [(j, i + abs(off)) for i in range(m) for j in range(i + 1)]
    return np.stack([a[..., r, c] for r, c in idx], axis=-1)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('batch', [(), (2,), (2, 1), (0,)])
@pytest.mark.parametrize('n', [1, 2, 4])
def test_extract_make_diag_trian(rng, dtype, batch, n):
    a = rng.standard_normal(batch + (n, n))
    for off in range(1 - n, n):
        d = np.diagonal(a, offset=off, axis1=-2, axis2=-1)
        _check(nd.linalg.extractdiag(_arr(a, dtype), offset=off), d, dtype)
        made = np.zeros(batch + (n, n))
        rows = np.arange(n - abs(off)) + max(-off, 0)
        made[..., rows, rows + off] = d
        _check(nd.linalg.makediag(_arr(d, dtype), offset=off), made, dtype)
        for lower in ([True, False] if off == 0 else [True]):
            p = _packed(a, off, lower)
            _check(nd.linalg.extracttrian(_arr(a, dtype), offset=off, lower=lower), p, dtype)
            low = off < 0 or (off == 0 and lower)
            ref = np.tril(a, off) if low else np.triu(a, off)
            out = nd.linalg.maketrian(_arr(p, dtype), offset=off, lower=lower)
            _check(out, ref, dtype)


# ---- gelqf, syevd --------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(1, 1), (3, 5), (4, 4), (2, 2, 6), (0, 2, 3), (1, 7)])
def test_gelqf(rng, dtype, shape):
    a = rng.standard_normal(shape)
    q, lo = nd.linalg.gelqf(_arr(a, dtype))
    m = shape[-2]
    assert q.shape == shape and lo.shape == shape[:-1] + (m,)
    q, lo = q.asnumpy().astype(np.float64), lo.asnumpy().astype(np.float64)
    tol = TOL[dtype]
    np.testing.assert_allclose(lo, np.tril(lo), atol=0)
    np.testing.assert_allclose(q @ T(q), np.broadcast_to(np.eye(m), shape[:-2] + (m, m)), **tol)
    np.testing.assert_allclose(lo @ q, a, **tol)
    # the same Householder factorization as NumPy's QR of A^T
    for idx in np.ndindex(*shape[:-2]):
        qr_q, qr_r = np.linalg.qr(a[idx].T)
        np.testing.assert_allclose(q[idx], qr_q.T, **tol)
        np.testing.assert_allclose(lo[idx], qr_r.T, **tol)


def _eig_ref(a):
    lam, v = np.linalg.eigh(a)
    u = T(v).copy()
    for idx in np.ndindex(*u.shape[:-1]):
        row = u[idx]
        if row[np.argmax(np.abs(row))] < 0:
            u[idx] = -row
    return u, lam


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(1, 1), (2, 2), (5, 5), (3, 4, 4), (0, 3, 3)])
def test_syevd(rng, dtype, shape):
    a = rng.standard_normal(shape)
    a = a + T(a)
    u, lam = nd.linalg.syevd(_arr(a, dtype))
    ref_u, ref_l = _eig_ref(a)
    _check(lam, ref_l, dtype)
    _check(u, ref_u, dtype)
    # only the lower triangle is read
    junk = np.tril(a) + np.triu(np.full(shape[-2:], 50.0), 1)
    _check(nd.linalg.syevd(_arr(junk, dtype))[1], ref_l, dtype)


def test_syevd_mxnet_example():
    u, lam = nd.linalg.syevd(_arr([[1., 2.], [2., 4.]], 'float64'))
    np.testing.assert_allclose(u.asnumpy(), [[0.89442719, -0.4472136], [0.4472136, 0.89442719]],
                               rtol=1e-7)
    np.testing.assert_allclose(lam.asnumpy(), [0., 5.], atol=1e-12)


# ---- inverse, det, slogdet -----------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 4, 4), (2, 1, 2, 2), (0, 3, 3)])
def test_inverse_det_slogdet(rng, dtype, shape):
    a = rng.standard_normal(shape) + 2 * np.eye(shape[-1])
    a[..., [0, -1], :] = a[..., [-1, 0], :]  # a row swap: some determinants are negative
    _check(nd.linalg.inverse(_arr(a, dtype)), np.linalg.inv(a) if a.size else a, dtype)
    det = np.linalg.det(a) if a.size else np.zeros(shape[:-2])
    sign, logabs = np.linalg.slogdet(a) if a.size else (det, det)
    if len(shape) == 2:
        det, sign, logabs = det.reshape(1), sign.reshape(1), logabs.reshape(1)
    _check(nd.linalg.det(_arr(a, dtype)), det, dtype)
    s, lg = nd.linalg.slogdet(_arr(a, dtype))
    _check(s, sign, dtype)
    _check(lg, logabs, dtype)


def test_det_of_singular_matrix():
    a = _arr([[1., 2.], [2., 4.]], 'float64')
    assert nd.linalg.det(a).asnumpy()[0] == 0
    s, lg = nd.linalg.slogdet(a)
    assert s.asnumpy()[0] == 0 and lg.asnumpy()[0] == -np.inf


def test_det_hidden_outputs():
    y = mx.sym.linalg.det(mx.sym.var('a'))
    assert len(y.list_outputs()) == 1
    assert len(mx.sym.linalg.slogdet(mx.sym.var('a')).list_outputs()) == 2
    assert nd._npi_det is not None and nd._npi_slogdet is not None and nd._npi_inv is not None


# ---- backward ops called directly ----------------------------------------------------------

def test_backward_ops_direct(rng):
    f8 = 'float64'
    a, b, c = (rng.standard_normal(s) for s in [(2, 3, 4), (2, 4, 5), (2, 3, 5)])
    g = rng.standard_normal((2, 3, 5))
    da, db, dc = nd._backward_linalg_gemm(*[_arr(x, f8) for x in (g, a, b, c)], alpha=2.0,
                                          beta=3.0)
    _check(da, 2 * g @ T(b), f8)
    _check(db, 2 * T(a) @ g, f8)
    _check(dc, 3 * g, f8)
    da, db = nd._backward_linalg_gemm2(*[_arr(x, f8) for x in (g, a, b)])
    _check(da, g @ T(b), f8)
    _check(db, T(a) @ g, f8)
    s = _spd(rng, (2, 3, 3))
    gs = rng.standard_normal((2, 3, 3))
    _check(nd._backward_linalg_syrk(_arr(gs, f8), _arr(a[:, :, :3], f8)),
           (gs + T(gs)) @ a[:, :, :3], f8)
    _check(nd._backward_linalg_sumlogdiag(_arr(np.array([2., 3.]), f8), _arr(s, f8)),
           np.array([2., 3.])[:, None, None] * np.eye(3) / s, f8)
    inv = np.linalg.inv(s)
    _check(nd._backward_linalg_inverse(_arr(gs, f8), _arr(inv, f8)), -T(inv) @ gs @ T(inv), f8)
    t = _tri(rng, (2, 3, 3))
    bb = rng.standard_normal((2, 3, 4))
    gc = rng.standard_normal((2, 3, 4))
    da, db = nd._backward_linalg_trmm(_arr(gc, f8), _arr(t, f8), _arr(bb, f8))
    _check(da, np.tril(gc @ T(bb)), f8)
    _check(db, T(t) @ gc, f8)
    cc = np.linalg.solve(t, bb)
    da, db = nd._backward_linalg_trsm(_arr(gc, f8), _arr(t, f8), _arr(bb, f8), _arr(cc, f8))
    _check(db, np.linalg.solve(T(t), gc), f8)
    _check(da, np.tril(-np.linalg.solve(T(t), gc) @ T(cc)), f8)


def test_backward_factorizations_direct(rng):
    """The backward ops of potrf/potri/gelqf/syevd/det/slogdet against the tape's gradient of
    the forward op (whose rule is checked by finite differences in test_grad_linalg.py)."""
    f8 = 'float64'
    s = _spd(rng, (2, 3, 3))
    lo = np.linalg.cholesky(s)
    g = rng.standard_normal((2, 3, 3))
    da = nd._backward_linalg_potrf(_arr(g, f8), _arr(lo, f8)).asnumpy()
    # the symmetric gradient: <dA, dS> = <g, dL> for a symmetric perturbation dS
    ds = rng.standard_normal((2, 3, 3))
    ds = ds + T(ds)
    eps = 1e-6
    fd = (np.linalg.cholesky(s + eps * ds) - np.linalg.cholesky(s - eps * ds)) / (2 * eps)
    np.testing.assert_allclose((da * ds).sum(), (g * fd).sum(), rtol=1e-6)
    inv = np.linalg.inv(s)
    db = nd._backward_linalg_potri(_arr(g, f8), _arr(lo, f8), _arr(inv, f8)).asnumpy()
    dl = np.tril(rng.standard_normal((2, 3, 3)))
    fd = (np.linalg.inv((lo + eps * dl) @ T(lo + eps * dl))
          - np.linalg.inv((lo - eps * dl) @ T(lo - eps * dl))) / (2 * eps)
    np.testing.assert_allclose((db * dl).sum(), (g * fd).sum(), rtol=1e-6)
    a = rng.standard_normal((2, 3)) + np.eye(2, 3)
    q, lq = nd.linalg.gelqf(_arr(a, f8))
    gq, gl = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))
    da = nd._backward_linalg_gelqf(_arr(gq, f8), _arr(gl, f8), q, lq).asnumpy()
    dd = rng.standard_normal((2, 3))

    def lq_of(x):
        qq, rr = np.linalg.qr(x.T)
        return qq.T, rr.T
    (qp, lp), (qm, lm) = lq_of(a + eps * dd), lq_of(a - eps * dd)
    fd = ((gq * (qp - qm)).sum() + (gl * (lp - lm)).sum()) / (2 * eps)
    np.testing.assert_allclose((da * dd).sum(), fd, rtol=1e-6)
    gd = np.array([1.5, -0.5])
    a8 = _arr(s, f8)
    a8.attach_grad()
    with mx.autograd.record():
        d = nd.linalg.det(a8)
    d.backward(_arr(gd, f8))
    ref = gd[:, None, None] * np.linalg.det(s)[:, None, None] * T(np.linalg.inv(s))
    np.testing.assert_allclose(a8.grad.asnumpy(), ref, rtol=1e-10)
    with mx.autograd.record():
        _, lg = nd.linalg.slogdet(a8)
    lg.backward(_arr(gd, f8))
    np.testing.assert_allclose(a8.grad.asnumpy(), gd[:, None, None] * T(np.linalg.inv(s)),
                               rtol=1e-10)
    sym = s + T(s)
    u, lam = nd.linalg.syevd(_arr(sym, f8))
    gu, glam = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3))
    da = nd._backward_linalg_syevd(_arr(gu, f8), _arr(glam, f8), u, lam).asnumpy()
    uu, ll = u.asnumpy(), lam.asnumpy()
    ref = np.zeros_like(da)
    for k in range(2):
        tt = gu[k] @ uu[k].T
        y = np.diag(glam[k])
        for i in range(3):
            for j in range(i):
                y[i, j] = y[j, i] = (tt[i, j] - tt[j, i]) / (2 * (ll[k, i] - ll[k, j]))
        ref[k] = uu[k].T @ y @ uu[k]
    np.testing.assert_allclose(da, ref, rtol=1e-10, atol=1e-12)


# ---- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize('call,match', [
    (lambda: nd.linalg.potrf(nd.array(-np.eye(3))), r'_linalg_potrf: matrix 0 .*positive def'),
    (lambda: nd.linalg.potrf(nd.array(np.stack([np.eye(2), -np.eye(2)]))), r'matrix 1 of the'),
    (lambda: nd.linalg.potri(nd.zeros((2, 2))), r'_linalg_potri: .*singular'),
    (lambda: nd.linalg.inverse(nd.zeros((2, 2))), r'_linalg_inverse: matrix 0 .*singular'),
    (lambda: nd.linalg.potrf(nd.ones((2, 3))), r'_linalg_potrf: A must be .*square'),
    (lambda: nd.linalg.det(nd.ones((3,))), r'_linalg_det: A must have at least 2'),
    (lambda: nd.linalg.det(nd.ones((2, 2), dtype='int32')), r'_linalg_det: .*int32'),
    (lambda: nd.linalg.gemm2(nd.ones((2, 2), dtype='float16'), nd.ones((2, 2), dtype='float16')),
     r'float16'),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((2, 3))), r'_linalg_gemm2: incompatible'),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((2, 3, 3))), r'same number of dim'),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3, 4)), nd.ones((3, 4, 5))), r'must be the same'),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((3, 2)), axis=1), r'invalid row axis'),
    (lambda: nd.linalg.gemm(nd.ones((2, 3)), nd.ones((3, 2)), nd.ones((2, 3))), r'C has shape'),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((3, 2), dtype='float64')), r'one dtype'),
    (lambda: nd.linalg.trsm(nd.ones((3, 3)), nd.ones((2, 4))), r'_linalg_trsm: incompatible'),
    (lambda: nd.linalg.trmm(nd.ones((2, 3, 3)), nd.ones((3, 3, 4))), r'must be the same'),
    (lambda: nd.linalg.extractdiag(nd.ones((3, 3)), offset=3), r'illegal offset 3'),
    (lambda: nd.linalg.extracttrian(nd.ones((3, 3)), offset=-3), r'illegal offset -3'),
    (lambda: nd.linalg.maketrian(nd.ones((2, 4))), r'not a triangular number'),
    (lambda: nd.linalg.gelqf(nd.ones((3, 2))), r'no more rows than columns'),
    (lambda: nd.linalg.syevd(nd.ones((2, 3))), r'_linalg_syevd: A must be .*square'),
    (lambda: nd.linalg.syrk(nd.ones((3,))), r'at least 2 dimensions'),
])
def test_errors(call, match):
    with pytest.raises(mx.MXNetError, match=match):
        call()


def test_symbol_and_hybridized_paths(rng):
    a = _spd(rng, (2, 3, 3))
    x = mx.sym.var('x')
    y = mx.sym.linalg.sumlogdiag(mx.sym.linalg.potrf(x))
    assert y.infer_shape(x=(2, 3, 3))[1] == [(2,)]
    out = y.eval(x=_arr(a, 'float64'))[0]
    np.testing.assert_allclose(out.asnumpy(), 0.5 * np.linalg.slogdet(a)[1], rtol=1e-10)
