"""The linalg ops' GPU kernels (csrc/kernels/cuda/linalg.cu) on matrices larger than the
conformance fixtures' (which are at most 5 x 5): sizes past one block of threads, batches, and
what a failure that depends on the data gives on a GPU (NaN or inf, not an error: docs/gpu.md).
Skipped without a GPU."""
import numpy as np
import pytest

import hybridgluon as mx

HAVE_GPU = mx.context.num_gpus() > 0
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not HAVE_GPU, reason='no GPU in this process')]

N = 150  # more rows than the 128 threads of a per-matrix block


def _run(op, xs, dtype, ctx, **attrs):
    arrs = [mx.nd.array(x, dtype=dtype, ctx=ctx) for x in xs]
    out = mx._core.get_op(op)(*arrs, **attrs)
    return [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def _check(op, xs, tol, dtype='float64', **attrs):
    want = _run(op, xs, dtype, mx.cpu(), **attrs)
    got = _run(op, xs, dtype, mx.gpu(0), **attrs)
    for k, (g, w) in enumerate(zip(got, want)):
        err = np.abs(g - w).max() / max(np.abs(w).max(), 1e-6)
        assert err <= tol, '%s output %d: error %.3g' % (op, k, err)


def _spd(rng, batch, n):
    a = rng.standard_normal((batch, n, n))
    return a @ a.transpose(0, 2, 1) + n * np.eye(n)


@pytest.mark.parametrize('lower', [True, False])
def test_cholesky_family_on_large_matrices(lower):
    rng = np.random.default_rng(0)
    s = _spd(rng, 3, N)
    _check('_linalg_potrf', [s], 1e-12, lower=lower)
    f = _run('_linalg_potrf', [s], 'float64', mx.cpu(), lower=lower)[0]
    _check('_linalg_potri', [f], 1e-11, lower=lower)
    b = rng.standard_normal((3, N, 7))
    _check('_linalg_trsm', [f, b], 1e-11, lower=lower, alpha=0.5)
    _check('_linalg_trmm', [f, b], 1e-12, lower=lower, transpose=True)


@pytest.mark.parametrize('op', ['_linalg_inverse', '_linalg_det', '_linalg_slogdet'])
def test_lu_family_on_large_matrices(op):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, N, N)) + 4 * np.eye(N)
    if op == '_linalg_det':
        a = a / 4  # keeps the determinant in range
    _check(op, [a], 1e-9)


def test_factorizations_on_large_matrices():
    rng = np.random.default_rng(2)
    _check('_linalg_gelqf', [rng.standard_normal((2, 90, N))], 1e-10)
    b = rng.standard_normal((2, 60, 60))
    _check('_linalg_syevd', [b + b.transpose(0, 2, 1)], 1e-8)


def test_data_dependent_failures_are_nan_on_gpu():
    x = mx.nd.array([[1.0, 2.0], [2.0, 1.0]], ctx=mx.gpu(0))  # not positive definite
    assert np.isnan(mx.nd.linalg.potrf(x).asnumpy()[1, 1])
    s = mx.nd.array([[1.0, 2.0], [2.0, 4.0]], ctx=mx.gpu(0))  # singular
    assert not np.isfinite(mx.nd.linalg.inverse(s).asnumpy()).all()
    assert mx.nd.linalg.det(s).asnumpy()[0] == 0
