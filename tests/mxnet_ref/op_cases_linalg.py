"""Cases of the linalg ops (_linalg_*) for the MXNet conformance fixtures, from a generator of
their own (so adding them leaves the other ops' inputs as they were). Inputs are well
conditioned: symmetric positive definite matrices for potrf, triangles with a dominant diagonal
for potri/trsm/trmm, matrices away from singular for inverse/det, and symmetric matrices with
separated eigenvalues for syevd (its gradient divides by the gaps). potrf and syevd read one
triangle only, so their gradients are compared on symmetric inputs, where MXNet's symmetric
rule is the derivative."""
import numpy as np

F32, F64 = 'float32', 'float64'


def build_linalg_cases(C, seed=20251125):
    rng = np.random.default_rng(seed)
    cases = []
    add = cases.append

    def n(*shape, dtype=F32):
        return rng.standard_normal(shape).astype(dtype)

    def spd(*shape, dtype=F32):
        m = rng.standard_normal(shape)
        return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)

    def tri(*shape, lower=True, dtype=F32):
        t = rng.standard_normal(shape)
        t = np.tril(t) if lower else np.triu(t)
        i = np.arange(shape[-1])
        t[..., i, i] = 2.0 + np.abs(t[..., i, i])
        return t.astype(dtype)

    def sym_gapped(*shape, dtype=F32):
        """Q diag(evenly spaced) Q^T: eigenvalue gaps of at least 1."""
        k = shape[-1]
        q, _ = np.linalg.qr(rng.standard_normal(shape))
        lam = np.arange(k) * 1.5 - k / 2.0 + rng.uniform(-0.2, 0.2, shape[:-1])
        return (q @ (lam[..., :, None] * np.swapaxes(q, -1, -2))).astype(dtype)

    def gen(*shape, dtype=F32):
        return (rng.standard_normal(shape) + 2.0 * np.eye(shape[-1])).astype(dtype)

    for dt in (F32, F64):
        add(C('_linalg_gemm', [n(2, 3, dtype=dt), n(3, 4, dtype=dt), n(2, 4, dtype=dt)],
              {'alpha': 2.0, 'beta': 0.5}))
        add(C('_linalg_gemm', [n(2, 4, 3, dtype=dt), n(2, 5, 4, dtype=dt), n(2, 3, 5, dtype=dt)],
              {'transpose_a': True, 'transpose_b': True, 'alpha': -1.5, 'beta': 2.0}))
        add(C('_linalg_gemm', [n(3, 2, 4, dtype=dt), n(4, 2, 5, dtype=dt), n(3, 2, 5, dtype=dt)],
              {'axis': 0}))
        add(C('_linalg_gemm2', [n(2, 3, 4, dtype=dt), n(2, 5, 4, dtype=dt)],
              {'transpose_b': True, 'alpha': 0.7}))
        add(C('_linalg_gemm2', [n(3, 4, 2, 2, dtype=dt), n(3, 4, 2, 5, dtype=dt)],
              {'transpose_a': True, 'axis': -3}))
        for lower in (True, False):
            add(C('_linalg_potrf', [spd(2, 4, 4, dtype=dt)], {'lower': lower}))
            add(C('_linalg_potri', [tri(2, 3, 3, lower=lower, dtype=dt)], {'lower': lower}))
            for right, trans in ((False, False), (True, True), (False, True), (True, False)):
                b = n(2, 4, 3, dtype=dt) if right else n(2, 3, 4, dtype=dt)
                attrs = {'lower': lower, 'rightside': right, 'transpose': trans, 'alpha': 1.5}
                add(C('_linalg_trmm', [tri(2, 3, 3, lower=lower, dtype=dt), b], attrs))
                add(C('_linalg_trsm', [tri(2, 3, 3, lower=lower, dtype=dt), b], attrs))
        add(C('_linalg_syrk', [n(2, 3, 4, dtype=dt)], {'alpha': 0.5}))
        add(C('_linalg_syrk', [n(3, 2, dtype=dt)], {'transpose': True}))
        add(C('_linalg_sumlogdiag', [spd(3, 3, dtype=dt)]))
        add(C('_linalg_sumlogdiag', [spd(2, 4, 4, dtype=dt)]))
        for off in (0, 1, -2):
            add(C('_linalg_extractdiag', [n(2, 4, 4, dtype=dt)], {'offset': off}))
            add(C('_linalg_makediag', [n(2, 3, dtype=dt)], {'offset': off}))
            for lower in ((True, False) if off == 0 else (True,)):
                add(C('_linalg_extracttrian', [n(2, 4, 4, dtype=dt)],
                      {'offset': off, 'lower': lower}))
                add(C('_linalg_maketrian', [n(2, 6, dtype=dt)], {'offset': off, 'lower': lower}))
        add(C('_linalg_gelqf', [n(3, 5, dtype=dt)]))
        add(C('_linalg_gelqf', [n(2, 4, 4, dtype=dt)]))
        add(C('_linalg_syevd', [sym_gapped(4, 4, dtype=dt)]))
        add(C('_linalg_syevd', [sym_gapped(2, 3, 3, dtype=dt)]))
        add(C('_linalg_inverse', [gen(3, 3, dtype=dt)]))
        add(C('_linalg_inverse', [gen(2, 4, 4, dtype=dt)]))
        add(C('_linalg_det', [gen(3, 3, dtype=dt)]))
        add(C('_linalg_det', [gen(2, 4, 4, dtype=dt)]))
        add(C('_linalg_slogdet', [gen(3, 3, dtype=dt)]))
        add(C('_linalg_slogdet', [gen(2, 4, 4, dtype=dt)]))
    return cases
