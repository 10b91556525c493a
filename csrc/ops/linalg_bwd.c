/* The _backward_linalg_X ops that the linalg gradient rules (ops/linalg.c) emit, one per
 * forward op, each MXNet's sequence of BLAS calls from la_op-inl.h. They take the output
 * gradients and the forward inputs/outputs MXNet's FGradient passes, and re-run the forward
 * op's shape rule on those operands, so that a direct call with inconsistent arrays is an error
 * naming the op rather than a kernel reading past a buffer. */
#include "ops/linalg.h"

/* ---- backward ops ------------------------------------------------------------------------ */

/* How a _backward_linalg_X's inputs relate to X: the forward inputs it holds (their metas rebuild
 * X's shape rule; an index of the forward output whose meta equals the input's is fine too,
 * since those are square batches), and, for every other input, which of X's outputs it must
 * match. The gradients are the forward inputs' metas. */
typedef struct {
    const char *fwd;          /* the forward op (its definition gives the shape rule) */
    int nfin;                 /* forward inputs */
    int8_t fin[3];            /* backward input holding a meta of forward input i */
    int8_t match[5];          /* backward input j must equal forward output match[j] (-1: a
                                 forward input, checked by the rule) */
} bwd_desc;

static hg_status bwd_infer_desc(const hg_op_def *op, const bwd_desc *d, const hg_attrs *a, int nin,
                                hg_meta *in, int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_op_def *f = hg_registry_find(d->fwd);
    hg_meta fin[3], fout[4];
    if (!f)
        return hg_error(HG_ERR_INTERNAL, "%s: forward op %s is not registered", op->name, d->fwd);
    for (int i = 0; i < nout; i++) out[i].ndim = -1;
    for (int i = 0; i < nin; i++)
        if (in[i].ndim < 0) return HG_OK;
    for (int i = 0; i < d->nfin; i++) fin[i] = in[d->fin[i]];
    for (int i = 0; i < f->num_outputs; i++) fout[i].ndim = -1;
    HG_TRY(f->infer(f, a, d->nfin, fin, f->num_outputs, fout));
    for (int j = 0; j < nin; j++) {
        int k = d->match[j];
        if (k < 0) continue;
        const hg_meta *w = &fout[k];
        bool ok = w->ndim == in[j].ndim && w->dtype == in[j].dtype;
        for (int t = 0; ok && t < w->ndim; t++) ok = known_eq(w->shape[t], in[j].shape[t]);
        if (!ok)
            return hg_error(HG_ERR_VALUE,
                            "%s: input %d has shape %s (%s), %s of the operands gives output %d "
                            "of shape %s (%s)",
                            op->name, j, hg_shape_str(s0, in[j].ndim, in[j].shape),
                            hg_dtype_name(in[j].dtype), d->fwd, k,
                            hg_shape_str(s1, w->ndim, w->shape), hg_dtype_name(w->dtype));
    }
    for (int i = 0; i < nout; i++) out[i] = fin[i];
    return HG_OK;
}

#define BWD_INFER(fn, ...)                                                                      \
    static hg_status fn(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout, \
                        hg_meta *out)                                                           \
    {                                                                                           \
        static const bwd_desc d = __VA_ARGS__;                                                  \
        return bwd_infer_desc(op, &d, a, nin, in, nout, out);                                   \
    }
/* (dD, A, B, C) -> dA, dB, dC */
BWD_INFER(gemm_bwd_infer, {"_linalg_gemm", 3, {1, 2, 3}, {0, -1, -1, -1, -1}})
/* (dC, A, B) -> dA, dB */
BWD_INFER(gemm2_bwd_infer, {"_linalg_gemm2", 2, {1, 2, 0}, {0, -1, -1, -1, -1}})
/* (dB, B) -> dA */
BWD_INFER(potrf_bwd_infer, {"_linalg_potrf", 1, {1, 0, 0}, {0, 0, -1, -1, -1}})
/* (dA, B, A) -> dB */
BWD_INFER(potri_bwd_infer, {"_linalg_potri", 1, {1, 0, 0}, {0, -1, 0, -1, -1}})
/* (dC, A, B) -> dA, dB */
BWD_INFER(trmm_bwd_infer, {"_linalg_trmm", 2, {1, 2, 0}, {0, -1, -1, -1, -1}})
/* (dC, A, B, C) -> dA, dB */
BWD_INFER(trsm_bwd_infer, {"_linalg_trsm", 2, {1, 2, 0}, {0, -1, -1, 0, -1}})
/* (dB, A) -> dA */
BWD_INFER(syrk_bwd_infer, {"_linalg_syrk", 1, {1, 0, 0}, {0, -1, -1, -1, -1}})
BWD_INFER(sumlogdiag_bwd_infer, {"_linalg_sumlogdiag", 1, {1, 0, 0}, {0, -1, -1, -1, -1}})
/* (dQ, dL, Q, L) -> dA */
BWD_INFER(gelqf_bwd_infer, {"_linalg_gelqf", 1, {2, 0, 0}, {0, 1, 0, 1, -1}})
/* (dU, dL, U, L) -> dA */
BWD_INFER(syevd_bwd_infer, {"_linalg_syevd", 1, {2, 0, 0}, {0, 1, 0, 1, -1}})
/* (dA, A) -> dB */
BWD_INFER(inverse_bwd_infer, {"_linalg_inverse", 1, {1, 0, 0}, {0, 0, -1, -1, -1}})
/* (ddet, det, LU, pivot) -> dA */
BWD_INFER(det_bwd_infer, {"_linalg_det", 1, {2, 0, 0}, {0, 0, 1, 2, -1}})
/* (dlogabsdet, sign, logabsdet, LU, pivot) -> dA */
BWD_INFER(slogdet_bwd_infer, {"_linalg_slogdet", 1, {3, 0, 0}, {1, 0, 1, 2, 3}})
#undef BWD_INFER

static hg_status gemm_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    gemm_par p = gemm_params(op, a);
    hg_dtype dt = in[0]->dtype;
    int64_t axis = p.axis < 0 ? in[0]->ndim + p.axis : p.axis, b0, b1;
    mat dD, A, B, dA, dB;
    gemm_view(in[0], axis, &b0, &b1, &dD);
    gemm_view(in[1], axis, &b0, &b1, &A);
    gemm_view(in[2], axis, &b0, &b1, &B);
    gemm_view(out[0], axis, &b0, &b1, &dA);
    gemm_view(out[1], axis, &b0, &b1, &dB);
    if (p.ta) vgemm(dt, b0, b1, p.tb, true, p.alpha, B, dD, 0, dA);
    else vgemm(dt, b0, b1, false, !p.tb, p.alpha, dD, B, 0, dA);
    if (p.tb) vgemm(dt, b0, b1, true, p.ta, p.alpha, dD, A, 0, dB);
    else vgemm(dt, b0, b1, !p.ta, false, p.alpha, A, dD, 0, dB);
    if (nout > 2)
        for (int64_t i = 0; i < out[2]->size; i++)
            st(dt, hg_data(out[2]), i, p.beta * ld(dt, hg_data(in[0]), i));
    return HG_OK;
}

static hg_status potrf_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    /* dA = 0.5 B^-T copyLTU(B^T dB) B^-1 (lower; transposed roles when upper) */
    hg_dtype dt = in[0]->dtype;
    bool lower = a->v[K_LOWER].b;
    int64_t batch;
    mat B = tmat(in[1], &batch), dA = tmat(out[0], NULL);
    int64_t n = B.rows;
    copy_t(out[0], in[0]);
    btri(dt, false, batch, !lower, lower, true, 1.0, B.p, dA.p, n, n);
    mirror(dt, batch, n, dA.p, lower);
    btri(dt, true, batch, false, lower, lower, 1.0, B.p, dA.p, n, n);
    btri(dt, true, batch, true, lower, !lower, 0.5, B.p, dA.p, n, n);
    return HG_OK;
}

static hg_status potri_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    /* dB = -tril(A (dA + dA^T) B^-T) for lower B (dA need not be symmetric) */
    hg_dtype dt = in[0]->dtype;
    bool lower = a->v[K_LOWER].b;
    int64_t batch;
    mat dA = tmat(in[0], &batch), B = tmat(in[1], NULL), A = tmat(in[2], NULL);
    mat dB = tmat(out[0], NULL);
    int64_t n = B.rows;
    if (lower) {
        bgemm(dt, batch, false, false, 1, A, dA, 0, dB);
        bgemm(dt, batch, false, true, 1, A, dA, 1, dB);
    } else {
        bgemm(dt, batch, false, false, 1, dA, A, 0, dB);
        bgemm(dt, batch, true, false, 1, dA, A, 1, dB);
    }
    btri(dt, true, batch, lower, lower, true, -1.0, B.p, dB.p, n, n);
    zero_tri(dt, batch, n, dB.p, lower);
    return HG_OK;
}

static hg_status tri_bwd_run(const hg_attrs *a, hg_tensor *const *in, hg_tensor *const *out,
                             bool solve)
{
    hg_dtype dt = in[0]->dtype;
    bool right = a->v[K_RIGHT].b, lower = a->v[K_TLOWER].b, tr = a->v[K_TRANS].b;
    double alpha = a->v[K_TALPHA].f;
    int64_t batch;
    mat dC = tmat(in[0], &batch), B = tmat(in[2], NULL), dA = tmat(out[0], NULL);
    mat dB = tmat(out[1], NULL);
    /* trmm: dA from dC and B, dB = alpha op(A)^T-side product of dC. trsm: dB first (a solve
     * with the transposed triangle), then dA = -(1/alpha) (dB and the output C). */
    mat X = B;
    double scale = alpha;
    copy_t(out[1], in[0]);
    if (solve) {
        btri(dt, true, batch, right, lower, !tr, alpha, hg_data(in[1]), dB.p, dB.rows, dB.cols);
        X = tmat(in[3], NULL);
        scale = -1.0 / alpha;
        dC = dB;
    }
    if (right == tr) bgemm(dt, batch, tr, !tr, scale, dC, X, 0, dA);
    else bgemm(dt, batch, !tr, tr, scale, X, dC, 0, dA);
    zero_tri(dt, batch, dA.rows, dA.p, lower);
    if (!solve)
        btri(dt, false, batch, right, lower, !tr, alpha, hg_data(in[1]), dB.p, dB.rows, dB.cols);
    return HG_OK;
}

static hg_status trmm_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return tri_bwd_run(a, in, out, false);
}

static hg_status trsm_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return tri_bwd_run(a, in, out, true);
}

static hg_status syrk_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    /* dA = alpha (dB + dB^T) A, or alpha A (dB + dB^T) when transposed */
    hg_dtype dt = in[0]->dtype;
    double alpha = a->v[K_SALPHA].f;
    int64_t batch;
    mat dB = tmat(in[0], &batch), A = tmat(in[1], NULL), dA = tmat(out[0], NULL);
    if (a->v[K_STRANS].b) {
        bgemm(dt, batch, false, false, alpha, A, dB, 0, dA);
        bgemm(dt, batch, false, true, alpha, A, dB, 1, dA);
    } else {
        bgemm(dt, batch, false, false, alpha, dB, A, 0, dA);
        bgemm(dt, batch, true, false, alpha, dB, A, 1, dA);
    }
    return HG_OK;
}

static hg_status sumlogdiag_bwd_forward(const hg_op_def *op, const hg_attrs *a,
                                        const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                        int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    int64_t batch;
    mat A = tmat(in[1], &batch);
    int64_t n = A.rows;
    memset(hg_data(out[0]), 0, (size_t)out[0]->size * esz(dt));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++) {
            int64_t k = (b * n + i) * n + i;
            st(dt, hg_data(out[0]), k, ld(dt, hg_data(in[0]), b) / ld(dt, A.p, k));
        }
    return HG_OK;
}

static size_t sq_workspace_at(const hg_meta *m)
{
    return esz(m->dtype) * (size_t)hg_shape_size(m->ndim, m->shape);
}

static size_t gelqf_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return sq_workspace_at(&in[1]); /* one M like dL */
}

static hg_status gelqf_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    /* dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T */
    hg_dtype dt = in[0]->dtype;
    int64_t batch;
    mat dQ = tmat(in[0], &batch), Q = tmat(in[2], NULL), L = tmat(in[3], NULL);
    mat dA = tmat(out[0], NULL), M = {ctx->workspace, L.rows, L.cols};
    int64_t m = L.rows;
    copy_t(out[0], in[0]);
    memcpy(M.p, hg_data(in[1]), (size_t)in[1]->size * esz(dt));
    btri(dt, false, batch, false, true, true, 1.0, L.p, M.p, m, m);
    bgemm(dt, batch, false, true, -1.0, dQ, Q, 1.0, M);
    mirror(dt, batch, m, M.p, true);
    bgemm(dt, batch, false, false, 1.0, M, Q, 1.0, dA);
    btri(dt, true, batch, false, true, true, 1.0, L.p, dA.p, dA.rows, dA.cols);
    return HG_OK;
}

static size_t syevd_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return sq_workspace_at(&in[2]); /* one matrix like U */
}

static hg_status syevd_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    /* dA = U^T Y U, Y symmetric: Y_ii = dL_i, Y_ij = (T_ij - T_ji) / (2 (L_i - L_j)) for i > j,
     * T = dU U^T (a vanishing eigenvalue gap clamped to eps, as MXNet does) */
    hg_dtype dt = in[0]->dtype;
    int64_t batch;
    mat dU = tmat(in[0], &batch), U = tmat(in[2], NULL), dA = tmat(out[0], NULL);
    mat T = {ctx->workspace, U.rows, U.cols};
    int64_t n = U.rows;
    const void *L = hg_data(in[3]), *dL = hg_data(in[1]);
    double eps = isdbl(dt) ? 1e-100 : 1e-30;
    bgemm(dt, batch, false, true, 1.0, dU, U, 0, T);
    for (int64_t b = 0; b < batch; b++) {
        int64_t o = b * n * n;
        for (int64_t i = 0; i < n; i++) {
            for (int64_t j = 0; j < i; j++) {
                double den = ld(dt, L, b * n + i) - ld(dt, L, b * n + j);
                den = 2.0 * (den < eps ? eps : den);
                double e = (ld(dt, T.p, o + i * n + j) - ld(dt, T.p, o + j * n + i)) / den;
                st(dt, dA.p, o + i * n + j, e);
                st(dt, dA.p, o + j * n + i, e);
            }
            st(dt, dA.p, o + i * n + i, ld(dt, dL, b * n + i));
        }
    }
    bgemm(dt, batch, true, false, 1.0, U, dA, 0, T);
    bgemm(dt, batch, false, false, 1.0, T, U, 0, dA);
    return HG_OK;
}

static size_t inverse_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return sq_workspace_at(&in[1]);
}

static hg_status inverse_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    /* dB = -A^T dA A^T with A = inv(B) */
    hg_dtype dt = in[0]->dtype;
    int64_t batch;
    mat dA = tmat(in[0], &batch), A = tmat(in[1], NULL), dB = tmat(out[0], NULL);
    mat T = {ctx->workspace, A.rows, A.cols};
    bgemm(dt, batch, false, true, 1.0, dA, A, 0, T);
    bgemm(dt, batch, true, false, -1.0, A, T, 0, dB);
    return HG_OK;
}

/* d det / dA = det inv(A)^T, d log|det| / dA = inv(A)^T: inv(A) from the stored LU factors of
 * A^T (getri leaves inv(A) in row-major order); a singular matrix gets a zero gradient. */
static hg_status det_bwd_run(const hg_op_def *op, const hg_exec_ctx *ctx, const hg_tensor *dy,
                             const hg_tensor *val, double zero, const hg_tensor *LU,
                             const hg_tensor *piv, hg_tensor *dA, bool times_det)
{
    hg_dtype dt = LU->dtype;
    int64_t batch;
    mat lu = tmat(LU, &batch);
    int64_t n = lu.rows;
    void *m = ctx->workspace, *work = at(dt, m, n * n);
    for (int64_t b = 0; b < batch; b++) {
        void *g = at(dt, hg_data(dA), b * n * n);
        double v = ld(dt, hg_data(val), b);
        if (v == zero) {
            memset(g, 0, (size_t)(n * n) * esz(dt));
            continue;
        }
        double c = ld(dt, hg_data(dy), b) * (times_det ? v : 1.0);
        memcpy(m, at(dt, lu.p, b * n * n), (size_t)(n * n) * esz(dt));
        int info = invert(dt, n, m, HG_DATA(piv, int) + b * n, true, work);
        if (info != 0)
            return hg_error(HG_ERR_VALUE, "%s: cannot invert matrix %lld of the batch (getri %d)",
                            op->name, (long long)b, info);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) st(dt, g, i * n + j, c * ld(dt, m, j * n + i));
    }
    return HG_OK;
}

static size_t det_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return getri_workspace(a, 1, &in[nin - 2]);
}

static hg_status det_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return det_bwd_run(op, ctx, in[0], in[1], 0.0, in[2], in[3], out[0], true);
}

static hg_status slogdet_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return det_bwd_run(op, ctx, in[0], in[2], -INFINITY, in[3], in[4], out[0], false);
}

/* ---- registry ---------------------------------------------------------------------------- */

const hg_op_def hg_ops_linalg_bwd[] = {
    {.name = "_backward_linalg_gemm",
     .doc = "gradient of _linalg_gemm",
     .input_names = HG_NAMES("ograd", "A", "B", "C"),
     .attrs = k_gemm_attrs,
     .num_attrs = HG_COUNT(k_gemm_attrs),
     .num_inputs = 4,
     .num_outputs = 3,
     .infer = gemm_bwd_infer,
     .forward = gemm_bwd_forward},
    {.name = "_backward_linalg_gemm2",
     .doc = "gradient of _linalg_gemm2",
     .input_names = HG_NAMES("ograd", "A", "B"),
     .attrs = k_gemm2_attrs,
     .num_attrs = HG_COUNT(k_gemm2_attrs),
     .num_inputs = 3,
     .num_outputs = 2,
     .infer = gemm2_bwd_infer,
     .forward = gemm_bwd_forward},
    {.name = "_backward_linalg_potrf",
     .doc = "gradient of _linalg_potrf",
     .input_names = HG_NAMES("ograd", "B"),
     .attrs = k_chol_attrs,
     .num_attrs = HG_COUNT(k_chol_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = potrf_bwd_infer,
     .forward = potrf_bwd_forward},
    {.name = "_backward_linalg_potri",
     .doc = "gradient of _linalg_potri",
     .input_names = HG_NAMES("ograd", "B", "A"),
     .attrs = k_chol_attrs,
     .num_attrs = HG_COUNT(k_chol_attrs),
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = potri_bwd_infer,
     .forward = potri_bwd_forward},
    {.name = "_backward_linalg_trmm",
     .doc = "gradient of _linalg_trmm",
     .input_names = HG_NAMES("ograd", "A", "B"),
     .attrs = k_tri_attrs,
     .num_attrs = HG_COUNT(k_tri_attrs),
     .num_inputs = 3,
     .num_outputs = 2,
     .infer = trmm_bwd_infer,
     .forward = trmm_bwd_forward},
    {.name = "_backward_linalg_trsm",
     .doc = "gradient of _linalg_trsm",
     .input_names = HG_NAMES("ograd", "A", "B", "C"),
     .attrs = k_tri_attrs,
     .num_attrs = HG_COUNT(k_tri_attrs),
     .num_inputs = 4,
     .num_outputs = 2,
     .infer = trsm_bwd_infer,
     .forward = trsm_bwd_forward},
    {.name = "_backward_linalg_sumlogdiag",
     .doc = "gradient of _linalg_sumlogdiag",
     .input_names = HG_NAMES("ograd", "A"),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = sumlogdiag_bwd_infer,
     .forward = sumlogdiag_bwd_forward},
    {.name = "_backward_linalg_syrk",
     .doc = "gradient of _linalg_syrk",
     .input_names = HG_NAMES("ograd", "A"),
     .attrs = k_syrk_attrs,
     .num_attrs = HG_COUNT(k_syrk_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = syrk_bwd_infer,
     .forward = syrk_bwd_forward},
    {.name = "_backward_linalg_gelqf",
     .doc = "gradient of _linalg_gelqf",
     .input_names = HG_NAMES("ograd_Q", "ograd_L", "Q", "L"),
     .num_inputs = 4,
     .num_outputs = 1,
     .infer = gelqf_bwd_infer,
     .forward = gelqf_bwd_forward,
     .workspace = gelqf_bwd_workspace},
    {.name = "_backward_linalg_syevd",
     .doc = "gradient of _linalg_syevd",
     .input_names = HG_NAMES("ograd_U", "ograd_L", "U", "L"),
     .num_inputs = 4,
     .num_outputs = 1,
     .infer = syevd_bwd_infer,
     .forward = syevd_bwd_forward,
     .workspace = syevd_bwd_workspace},
    {.name = "_backward_linalg_inverse",
     .doc = "gradient of _linalg_inverse",
     .input_names = HG_NAMES("ograd", "A"),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = inverse_bwd_infer,
     .forward = inverse_bwd_forward,
     .workspace = inverse_bwd_workspace},
    {.name = "_backward_linalg_det",
     .doc = "gradient of _linalg_det",
     .input_names = HG_NAMES("ograd", "det", "LU", "pivot"),
     .num_inputs = 4,
     .num_outputs = 1,
     .infer = det_bwd_infer,
     .forward = det_bwd_forward,
     .workspace = det_bwd_workspace},
    {.name = "_backward_linalg_slogdet",
     .doc = "gradient of _linalg_slogdet",
     .input_names = HG_NAMES("ograd", "sign", "logabsdet", "LU", "pivot"),
     .num_inputs = 5,
     .num_outputs = 1,
     .infer = slogdet_bwd_infer,
     .forward = slogdet_bwd_forward,
     .workspace = det_bwd_workspace},
    {0},
};
