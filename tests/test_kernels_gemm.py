"""Own float32 GEMM kernels for products with a small side or wide and shallow ones
(csrc/kernels/cpu/gemm_small*.c)
against a float64 NumPy reference, in every kernel set the CPU has (portable C, AVX2+FMA,
AVX-512F) and through the BLAS for comparison. hg_gemm_f32 is called directly with ctypes so that
transposes, leading dimensions, unaligned operands, alpha and beta can all be varied."""
import ctypes
import os

import numpy as np
import pytest

import hybridgluon as mx
from conftest import run_python

LEVELS = {'blas': 0, 'portable': 1, 'avx2': 2, 'avx512': 3}
F32_EPS = 2.0 ** -24  # unit roundoff


def _lib():
    h = ctypes.CDLL(os.path.join(os.path.dirname(mx.__file__), 'lib', 'libhybridgluon.so'))
    I64, F, P = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
    h.hg_gemm_f32.argtypes = [ctypes.c_bool, ctypes.c_bool, I64, I64, I64, F, P, I64, P, I64, F,
                              P, I64]
    h.hg_gemm_f32.restype = None
    h.hg_gemm_set_kernel.argtypes = [ctypes.c_int]
    h.hg_gemm_set_kernel.restype = ctypes.c_int
    h.hg_gemm_kernel.restype = ctypes.c_int
    h.hg_gemm_route_f32.argtypes = [ctypes.c_bool, ctypes.c_bool] + [I64] * 6
    h.hg_gemm_route_f32.restype = ctypes.c_int
    h.hg_set_num_threads.argtypes = [ctypes.c_int]
    h.hg_get_num_threads.restype = ctypes.c_int
    return h


LIB = _lib()


@pytest.fixture(params=list(LEVELS))
def kernel(request):
    """Runs the test with one kernel set forced; skipped where the CPU lacks it."""
    before = LIB.hg_gemm_kernel()
    got = LIB.hg_gemm_set_kernel(LEVELS[request.param])
    try:
        if got != LEVELS[request.param]:
            pytest.skip('this CPU has no %s' % request.param)
        yield request.param
    finally:
        LIB.hg_gemm_set_kernel(before)


def _buffer(rng, rows, cols, ld, offset):
    """A rows x cols float32 matrix with leading dimension ld, starting `offset` floats into its
    allocation (offset 1: not 16-byte aligned); padding holds NaN so that a read of it shows."""
    flat = np.full(offset + rows * ld + 3, np.nan, np.float32)
    view = flat[offset:offset + rows * ld].reshape(rows, ld)
    view[:, :cols] = rng.standard_normal((rows, cols))
    return flat, view[:, :cols]


def gemm(ta, tb, M, N, K, alpha=1.0, beta=0.0, pad=(0, 0, 0), offset=0, c0=None, rng=None):
    """C = alpha op(A) op(B) + beta C through hg_gemm_f32; returns (C, reference, error bound).
    c0: the initial C ('nan' fills it with NaN, which beta 0 must overwrite)."""
    rng = rng or np.random.default_rng(0)
    ar, ac = (K, M) if ta else (M, K)
    br, bc = (N, K) if tb else (K, N)
    fa, a = _buffer(rng, ar, ac, ac + pad[0], offset)
    fb, b = _buffer(rng, br, bc, bc + pad[1], offset)
    fc, c = _buffer(rng, M, N, N + pad[2], offset)
    if isinstance(c0, str):
        c[...] = np.nan
    before = c.astype('f8')
    lda, ldb, ldc = ac + pad[0], bc + pad[1], N + pad[2]
    ptr = [f.ctypes.data + 4 * offset for f in (fa, fb, fc)]
    LIB.hg_gemm_f32(ta, tb, M, N, K, alpha, ptr[0], lda, ptr[1], ldb, beta, ptr[2], ldc)
    opa = (a.T if ta else a).astype('f8')
    opb = (b.T if tb else b).astype('f8')
    want = alpha * (opa @ opb)
    mag = abs(alpha) * (np.abs(opa) @ np.abs(opb))
    if beta != 0:
        want += beta * before
        mag += abs(beta) * np.abs(before)
    # float32 accumulation in any order: |error| <= (K + 2) u sum |terms| (+ a tiny absolute
    # floor for exact zeros).
    bound = 2 * (K + 2) * F32_EPS * mag + 1e-30
    # Padding past each row of C must be untouched (NaN stays NaN).
    if pad[2]:
        assert np.isnan(fc[offset:offset + M * ldc].reshape(M, ldc)[:, N:]).all()
    return c.copy(), want, bound


def _check(got, want, bound, what):
    err = np.abs(got.astype('f8') - want)
    assert np.isfinite(got).all(), what
    assert (err <= bound).all(), '%s: max error %g (bound %g)' % (
        what, err.max(), bound.ravel()[np.argmax(err)])


SMALL = [1, 2, 3, 4, 5, 7, 8]
SIZES = [1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 64, 100, 129, 257]


@pytest.mark.parametrize('ta,tb', [(False, True), (False, False), (True, False), (True, True)])
def test_small_m(kernel, ta, tb):
    """M = 1..8 (batch-1..8 Dense): every layout, sizes around the vector widths and tiles."""
    rng = np.random.default_rng(1)
    for M in SMALL:
        for N in SIZES:
            for K in SIZES:
                got, want, bound = gemm(ta, tb, M, N, K, rng=rng)
                _check(got, want, bound, 'ta=%s tb=%s M=%d N=%d K=%d' % (ta, tb, M, N, K))


@pytest.mark.parametrize('ta,tb', [(False, True), (False, False), (True, False), (True, True)])
def test_small_n_and_k(kernel, ta, tb):
    """N = 1..8 (C^T = op(B)^T op(A)^T) and K = 1..8 (dW = dy^T x) with a large other side."""
    rng = np.random.default_rng(2)
    for small in SMALL:
        for big in [9, 16, 33, 100, 257]:
            for other in [1, 5, 16, 37]:
                for M, N, K in [(big, small, other), (big, other, small), (other, big, small)]:
                    got, want, bound = gemm(ta, tb, M, N, K, rng=rng)
                    _check(got, want, bound, 'ta=%s tb=%s M=%d N=%d K=%d' % (ta, tb, M, N, K))


@pytest.mark.parametrize('ta,tb', [(False, False), (True, False), (False, True)])
def test_wide_shallow(kernel, ta, tb):
    """Wide shallow products (N >= 768, K <= 256, M <= 512: pointwise convolutions over an
    image) through the row-update kernel where B runs along N and the set is AVX-512 (gemm.c:
    the BLAS is faster on AVX2), the BLAS otherwise; ragged
    vector tails, tiles and the limits' edges, with alpha, beta and padding."""
    rng = np.random.default_rng(6)
    for M, N, K in [(9, 768, 3), (17, 1000, 16), (96, 3136, 24), (513, 800, 20), (12, 769, 256),
                    (5, 2000, 257), (64, 12544, 9)]:
        got, want, bound = gemm(ta, tb, M, N, K, rng=rng)
        _check(got, want, bound, 'ta=%s tb=%s M=%d N=%d K=%d' % (ta, tb, M, N, K))
    got, want, bound = gemm(ta, tb, 33, 900, 40, -0.5, 0.25, (2, 3, 5), 1, None, rng)
    _check(got, want, bound, 'alpha/beta/pad')
    got, want, bound = gemm(ta, tb, 40, 800, 64, 1.0, 0.0, (0, 0, 0), 0, 'nan', rng)
    _check(got, want, bound, 'beta 0 over NaN')


@pytest.mark.parametrize('ta,tb', [(False, True), (False, False), (True, False), (True, True)])
def test_strides_alignment_alpha_beta(kernel, ta, tb):
    """Padded leading dimensions, operands one float off alignment, alpha/beta combinations, and
    beta 0 over a C full of NaN (must not leak)."""
    rng = np.random.default_rng(3)
    for M, N, K in [(1, 37, 45), (3, 21, 70), (8, 64, 16), (1, 1, 1), (2, 130, 9), (64, 3, 5),
                    (100, 70, 2), (33, 1, 40)]:
        for alpha, beta in [(1.0, 0.0), (0.5, 0.0), (1.0, 1.0), (-2.0, 0.25)]:
            for pad, offset in [((0, 0, 0), 1), ((3, 5, 7), 0), ((1, 2, 1), 1)]:
                c0 = 'nan' if beta == 0 else None
                got, want, bound = gemm(ta, tb, M, N, K, alpha, beta, pad, offset, c0, rng)
                _check(got, want, bound, 'ta=%s tb=%s M=%d N=%d K=%d alpha=%g beta=%g pad=%s '
                       'offset=%d' % (ta, tb, M, N, K, alpha, beta, pad, offset))


@pytest.mark.parametrize('ta,tb', [(False, True), (False, False), (True, False), (True, True)])
def test_packed_kernel_shapes(kernel, ta, tb):
    """Products the AVX-512 machines run on the packed kernel (sgemm_packed.c: N >= 24 and
    M N K >= 1e6), the BLAS elsewhere: rows past a multiple of its 12-row tile, columns past its
    32-wide panels and 1024-column blocks, K over several 256-deep blocks (beta applies to the
    first only) and the transposing copy's 16-wide tails."""
    rng = np.random.default_rng(7)
    for M, N, K in [(100, 49, 1000), (12, 1100, 310), (37, 300, 700), (512, 24, 513),
                    (25, 1025, 257), (130, 64, 600)]:
        got, want, bound = gemm(ta, tb, M, N, K, rng=rng)
        _check(got, want, bound, 'ta=%s tb=%s M=%d N=%d K=%d' % (ta, tb, M, N, K))
    for alpha, beta in [(0.5, 0.0), (1.0, 1.0), (-2.0, 0.25)]:
        got, want, bound = gemm(ta, tb, 61, 130, 530, alpha, beta, (3, 5, 7), 1,
                                'nan' if beta == 0 else None, rng)
        _check(got, want, bound, 'alpha=%g beta=%g padded, unaligned' % (alpha, beta))


class _Post(ctypes.Structure):
    _fields_ = [('kind', ctypes.c_int), ('lo', ctypes.c_float), ('hi', ctypes.c_float)]


def _post_ref(v, kind, lo, hi):
    """core/post.h's formulas in float32: relu keeps NaN, -0 -> +0; clip keeps NaN, upper
    bound first."""
    if kind == 1:
        return np.where((v > 0) | np.isnan(v), v, np.float32(0))
    if kind == 2:
        return np.where(v > hi, np.float32(hi), np.where(v < lo, np.float32(lo), v))
    return v


@pytest.mark.parametrize('post', [(0, 0, 0), (1, 0, 0), (2, -0.5, 0.25)],
                         ids=['bias only', 'relu', 'clip'])
def test_fused_epilogue_equals_separate_pass(kernel, post):
    """hg_gemm_epi_f32 (the packed AVX-512 kernel, or the small-side row-update kernel, applying
    a row bias and an activation to each tile it stores) gives the bits of hg_gemm_f32 followed
    by the same float32 epilogue, at 1 and 2 threads; products on other paths (the dot form,
    the BLAS) are refused and left untouched."""
    h = LIB
    I64, F, P = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
    h.hg_gemm_epi_f32.argtypes = [ctypes.c_bool, ctypes.c_bool, I64, I64, I64, F, P, I64, P, I64,
                                  F, P, I64, P, P]
    h.hg_gemm_epi_f32.restype = ctypes.c_bool
    po = _Post(*post)
    rng = np.random.default_rng(8)
    level = LIB.hg_gemm_kernel()
    packed, rows = level == 3, level != 0  # which kernels the set has
    wide = level >= 2  # wide shallow products take the row-update kernel on AVX2 and AVX-512
    cases = [  # M, N, K, ta, tb, the kernel that takes it (None: refused)
        (100, 49, 1000, False, False, packed), (64, 300, 576, True, False, packed),
        (37, 130, 900, False, True, packed), (130, 700, 64, False, False, packed),
        (130, 1100, 64, False, False, wide), (4, 100, 50, True, False, rows),
        (100, 4, 50, False, True, False), (30, 20, 30, False, False, False)]
    threads = LIB.hg_get_num_threads()
    try:
        for nthreads in (1, max(threads, 2)):
            LIB.hg_set_num_threads(nthreads)
            for M, N, K, ta, tb, takes in cases:
                a = rng.standard_normal((K, M) if ta else (M, K)).astype('f4')
                b = rng.standard_normal((N, K) if tb else (K, N)).astype('f4')
                bias = rng.standard_normal(M).astype('f4')
                a[0, 0] = np.nan  # a NaN row (or column) of C
                bias[3] = -0.0
                c = np.full((M, N), np.nan, np.float32)
                ok = h.hg_gemm_epi_f32(ta, tb, M, N, K, 1.0, a.ctypes.data, a.shape[1],
                                       b.ctypes.data, b.shape[1], 0.0, c.ctypes.data, N,
                                       bias.ctypes.data, ctypes.byref(po))
                assert ok == takes, (M, N, K, ta, tb)
                if not ok:
                    assert np.isnan(c).all()  # refused: nothing written
                    continue
                ref = np.full((M, N), np.nan, np.float32)
                LIB.hg_gemm_f32(ta, tb, M, N, K, 1.0, a.ctypes.data, a.shape[1], b.ctypes.data,
                                b.shape[1], 0.0, ref.ctypes.data, N)
                ref = _post_ref(ref + bias[:, None], *post)
                np.testing.assert_array_equal(c.view('u4'), ref.view('u4'))
                assert np.isnan(c).any()
    finally:
        LIB.hg_set_num_threads(threads)


def test_degenerate(kernel):
    """K == 0 and alpha == 0 give beta C exactly (zeros for beta 0, even over NaN)."""
    for ta, tb in [(False, True), (False, False)]:
        got, _, _ = gemm(ta, tb, 1, 5, 0, beta=0.0, c0='nan')
        assert (got == 0).all()
        got, _, _ = gemm(ta, tb, 3, 5, 7, alpha=0.0, beta=0.0, c0='nan')
        assert (got == 0).all()


@pytest.mark.parametrize('shape', [(1, 4096, 1024, False, True), (8, 1000, 300, False, True),
                                   (1, 3000, 700, False, False), (6, 2000, 333, False, False),
                                   (1030, 515, 3, True, False), (4099, 1, 513, False, True),
                                   (2050, 1, 700, True, False), (300, 130, 400, False, False),
                                   (64, 1000, 300, True, True), (1000, 50, 200, False, True)])
def test_threaded_matches_single(kernel, shape):
    """Products large enough to be split over threads: correct, and, on our own kernels, bitwise
    the same as on one thread (every element is computed by the same code in the same order
    either way). A product left to the BLAS is only checked for accuracy: OpenBLAS picks its
    kernels by the shape of each thread's share, and on some CPUs (AVX2 Zen) those sum in
    another order."""
    M, N, K, ta, tb = shape
    threads = LIB.hg_get_num_threads()
    try:
        LIB.hg_set_num_threads(max(threads, 2))
        got, want, bound = gemm(ta, tb, M, N, K, rng=np.random.default_rng(4))
        _check(got, want, bound, str(shape))
        LIB.hg_set_num_threads(1)
        one, _, _ = gemm(ta, tb, M, N, K, rng=np.random.default_rng(4))
    finally:
        LIB.hg_set_num_threads(threads)
    route = LIB.hg_gemm_route_f32(ta, tb, M, N, K, M if ta else K, K if tb else N, N)
    if route != 0:
        np.testing.assert_array_equal(got, one)
    else:
        _check(one, want, bound, str(shape) + ' one thread')


def test_route_reports_own_kernels(kernel):
    """hg_gemm_route_f32: the BLAS set routes everything to the BLAS; the others take a
    matrix-vector product (a side of 1) on their small-side kernels."""
    route = LIB.hg_gemm_route_f32(False, True, 1, 4096, 1024, 1024, 1024, 4096)
    assert route == (0 if kernel == 'blas' else 1)


def test_set_kernel_clamps():
    """AUTO and any set past the CPU's best give the best; BLAS and portable always exist."""
    before = LIB.hg_gemm_kernel()
    try:
        best = LIB.hg_gemm_set_kernel(-1)
        assert best in (1, 2, 3)
        assert LIB.hg_gemm_set_kernel(99) == best
        assert LIB.hg_gemm_set_kernel(0) == 0
        assert LIB.hg_gemm_set_kernel(1) == 1
    finally:
        LIB.hg_gemm_set_kernel(before)


def test_env_forces_kernel():
    """HG_GEMM_KERNEL, read once at first use, forces a set."""
    code = ('import ctypes, os, hybridgluon as mx; '
            'h = ctypes.CDLL(os.path.join(os.path.dirname(mx.__file__), "lib", '
            '"libhybridgluon.so")); print(h.hg_gemm_kernel())')
    for name, level in [('portable', 1), ('blas', 0)]:
        r = run_python(['-c', code], env=dict(os.environ, HG_GEMM_KERNEL=name))
        assert r.returncode == 0, r.stderr
        assert int(r.stdout.strip()) == level


@pytest.mark.parametrize('batch', [1, 3, 8])
def test_dense_ops_every_kernel(kernel, batch):
    """FullyConnected and dot at small batch through the ops, as the MLP runs them."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((batch, 512)).astype(np.float32)
    w = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    got = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b),
                               num_hidden=256).asnumpy()
    want = x.astype('f8') @ w.astype('f8').T + b
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    dy = rng.standard_normal((batch, 256)).astype(np.float32)
    dx = mx.nd.dot(mx.nd.array(dy), mx.nd.array(w)).asnumpy()
    np.testing.assert_allclose(dx, dy.astype('f8') @ w, rtol=1e-4, atol=1e-4)
    dw = mx.nd.dot(mx.nd.array(dy), mx.nd.array(x), transpose_a=True).asnumpy()
    np.testing.assert_allclose(dw, dy.astype('f8').T @ x, rtol=1e-4, atol=1e-4)


def test_batched_products_split_inside_the_pool(kernel):
    """batch_dot of products small enough to be spread over the pool, each large enough that it
    would split itself too: the nested split runs every share on the worker's thread."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((6, 2, 256)).astype(np.float32)
    b = rng.standard_normal((6, 256, 512)).astype(np.float32)
    got = mx.nd.batch_dot(mx.nd.array(a), mx.nd.array(b)).asnumpy()
    np.testing.assert_allclose(got, a.astype('f8') @ b, rtol=1e-4, atol=1e-4)
