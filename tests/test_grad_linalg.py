"""Gradient rules of the linalg ops (csrc/ops/linalg.c) against float64 central differences.

Ops that read one triangle of a symmetric input (potrf, syevd) are checked through a
symmetrising wrapper, as MXNet's own tests do: the rule's gradient is the symmetric one, and
finite differences of the op alone would see only the triangle it reads. The wrapped checks
compose the op with registered ops and differentiate the whole graph (Symbol._gradient) and, as
a second path, the imperative tape (autograd)."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad
from hybridgluon import _core

nd = mx.nd
GRADS_COVERED = ['_linalg_gemm', '_linalg_gemm2', '_linalg_potrf', '_linalg_potri',
                 '_linalg_trmm', '_linalg_trsm', '_linalg_syrk', '_linalg_sumlogdiag',
                 '_linalg_extractdiag', '_linalg_makediag', '_linalg_extracttrian',
                 '_linalg_maketrian', '_linalg_gelqf', '_linalg_syevd', '_linalg_inverse',
                 '_linalg_det', '_linalg_slogdet']


def _sym(x):
    return 0.5 * (x + np.swapaxes(x, -1, -2))


def _spd(rng, shape):
    m = rng.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _lower(rng, shape, lower=True):
    t = rng.standard_normal(shape)
    t = np.tril(t) if lower else np.triu(t)
    idx = np.arange(shape[-1])
    t[..., idx, idx] = 2.0 + np.abs(t[..., idx, idx])
    return t


def _fn_grads(fn, xs, heads, eps):
    """Symbolic (graph) gradient of sum(heads * fn(x)) and its finite differences."""
    names = ['x%d' % i for i in range(len(xs))]
    y = fn(mx.sym, *[mx.sym.var(n) for n in names])
    outs = y if isinstance(y, (list, tuple)) else [y]
    y = mx.sym.Group(list(outs)) if len(outs) > 1 else outs[0]
    hg = ['hg%d' % i for i in range(len(heads))]
    g = y._gradient(names, hg)
    feed = {n: nd.array(x, dtype='float64') for n, x in zip(names, xs)}
    feed.update({n: nd.array(h, dtype='float64') for n, h in zip(hg, heads)})
    inputs = g.list_inputs()
    got = _core.CachedOp(g, inputs)(*[feed[n] for n in inputs])
    got = [o.asnumpy() for o in (got if isinstance(got, (list, tuple)) else [got])]

    def loss(vals):
        r = fn(nd, *[nd.array(v, dtype='float64') for v in vals])
        r = r if isinstance(r, (list, tuple)) else [r]
        return sum(float((h * o.asnumpy()).sum()) for h, o in zip(heads, r))
    num = []
    for i, x in enumerate(xs):
        gi = np.zeros(x.shape)
        for j in range(x.size):
            p = [v.copy() for v in xs]
            m = [v.copy() for v in xs]
            p[i].reshape(-1)[j] += eps
            m[i].reshape(-1)[j] -= eps
            gi.reshape(-1)[j] = (loss(p) - loss(m)) / (2 * eps)
        num.append(gi)
    return got, num


def check_fn_grad(fn, xs, rtol=1e-5, atol=1e-7, eps=1e-6, seed=0):
    rng = np.random.default_rng(seed)
    r = fn(nd, *[nd.array(x, dtype='float64') for x in xs])
    shapes = [o.shape for o in (r if isinstance(r, (list, tuple)) else [r])]
    heads = [rng.standard_normal(s) for s in shapes]
    got, num = _fn_grads(fn, xs, heads, eps)
    for i, (s, n) in enumerate(zip(got, num)):
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol, err_msg='input %d' % i)
    # the imperative tape runs the same rule
    xa = [nd.array(x, dtype='float64') for x in xs]
    for x in xa:
        x.attach_grad()
    with mx.autograd.record():
        out = fn(nd, *xa)
    out = out if isinstance(out, (list, tuple)) else [out]
    mx.autograd.backward(list(out), [nd.array(h, dtype='float64') for h in heads])
    for i, (x, s) in enumerate(zip(xa, got)):
        np.testing.assert_allclose(x.grad.asnumpy(), s, rtol=1e-10, atol=1e-12,
                                   err_msg='autograd, input %d' % i)


@pytest.mark.parametrize('ta,tb', [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize('lead,axis', [((), -2), ((2,), -2), ((2, 3), 0), ((2, 3), -3)])
def test_gemm_gemm2_grad(rng, ta, tb, lead, axis):
    def mk(r, c):
        shape = list(lead) + [r, c]
        x = rng.standard_normal(shape)
        n = len(shape)
        ax = axis + n if axis < 0 else axis
        # move the rows from position n-2 to the row axis
        return np.moveaxis(x, n - 2, ax).copy()
    a = mk(4, 3) if ta else mk(3, 4)
    b = mk(5, 4) if tb else mk(4, 5)
    c = mk(3, 5)
    attrs = dict(transpose_a=ta, transpose_b=tb, alpha=1.5, axis=axis)
    check_grad('_linalg_gemm2', [a, b], attrs=attrs)
    check_grad('_linalg_gemm', [a, b, c], attrs=dict(attrs, beta=-0.7))


@pytest.mark.parametrize('lower', [True, False])
@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 4, 4)])
def test_potrf_potri_grad(rng, lower, shape):
    a = _spd(rng, shape)
    check_fn_grad(lambda F, x: F.linalg.potrf(0.5 * (x + F.swapaxes(x, -1, -2)), lower=lower),
                  [a])
    check_grad('_linalg_potri', [_lower(rng, shape, lower)], attrs=dict(lower=lower))


@pytest.mark.parametrize('op', ['_linalg_trmm', '_linalg_trsm'])
@pytest.mark.parametrize('rightside', [False, True])
@pytest.mark.parametrize('transpose', [False, True])
@pytest.mark.parametrize('lower', [True, False])
def test_trmm_trsm_grad(rng, op, rightside, transpose, lower):
    a = _lower(rng, (2, 3, 3), lower)
    b = rng.standard_normal((2, 4, 3) if rightside else (2, 3, 4))
    check_grad(op, [a, b], attrs=dict(rightside=rightside, transpose=transpose, lower=lower,
                                      alpha=-1.3))


@pytest.mark.parametrize('transpose', [False, True])
@pytest.mark.parametrize('shape', [(1, 1), (2, 3), (2, 4, 2)])
def test_syrk_grad(rng, transpose, shape):
    check_grad('_linalg_syrk', [rng.standard_normal(shape)],
               attrs=dict(transpose=transpose, alpha=0.7))


@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 3, 3)])
def test_sumlogdiag_grad(rng, shape):
    check_grad('_linalg_sumlogdiag', [_spd(rng, shape)])


@pytest.mark.parametrize('offset', [-2, 0, 1])
@pytest.mark.parametrize('lower', [True, False])
def test_diag_trian_grads(rng, offset, lower):
    a = rng.standard_normal((2, 3, 3))
    check_grad('_linalg_extractdiag', [a], attrs=dict(offset=offset))
    check_grad('_linalg_makediag', [rng.standard_normal((2, 3))], attrs=dict(offset=offset))
    check_grad('_linalg_extracttrian', [a], attrs=dict(offset=offset, lower=lower))
    m = 3 - abs(offset)
    check_grad('_linalg_maketrian', [rng.standard_normal((2, m * (m + 1) // 2))],
               attrs=dict(offset=offset, lower=lower))


@pytest.mark.parametrize('shape', [(1, 1), (3, 5), (2, 2, 4), (4, 4)])
def test_gelqf_grad(rng, shape):
    check_grad('_linalg_gelqf', [rng.standard_normal(shape)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 4, 4)])
def test_syevd_grad(rng, shape):
    a = rng.standard_normal(shape) * 3
    check_fn_grad(lambda F, x: list(F.linalg.syevd(0.5 * (x + F.swapaxes(x, -1, -2)))), [a],
                  rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 4, 4)])
def test_inverse_det_slogdet_grad(rng, shape):
    a = rng.standard_normal(shape) + 2 * np.eye(shape[-1])
    check_grad('_linalg_inverse', [a])
    check_grad('_linalg_det', [a])
    check_grad('_linalg_slogdet', [a])


def test_det_grad_of_singular_matrix_is_zero():
    a = nd.array(np.array([[1., 2.], [2., 4.]]), dtype='float64')
    a.attach_grad()
    with mx.autograd.record():
        d = nd.linalg.det(a)
    d.backward()
    assert d.asnumpy()[0] == 0
    assert np.all(a.grad.asnumpy() == 0)
    a.attach_grad()
    with mx.autograd.record():
        _, l = nd.linalg.slogdet(a)
    l.backward()
    assert np.all(a.grad.asnumpy() == 0)


def test_backward_ops_check_their_operands():
    with pytest.raises(mx.MXNetError, match='_backward_linalg_gemm2'):
        nd._backward_linalg_gemm2(nd.ones((2, 2)), nd.ones((2, 3)), nd.ones((3, 4)))
    with pytest.raises(mx.MXNetError, match='_backward_linalg_potrf'):
        nd._backward_linalg_potrf(nd.ones((3, 3)), nd.ones((2, 2)))
