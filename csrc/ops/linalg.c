/* MXNet's linalg operators (_linalg_gemm ... _linalg_slogdet), float32 and float64, batched over
 * the leading axes (gemm/gemm2 also over the axes around `axis`), with their gradient rules.
 *
 * Products and triangular multiply/solve go to the BLAS (GEMM through kernels/cpu/gemm.h, which
 * takes leading dimensions, so gemm's `axis` layout needs no copies; trmm/trsm/syrk through
 * row-major CBLAS); factorizations to LAPACK (kernels/cpu/lapack.h), which is column-major: a
 * row-major matrix is its transpose there, so potrf/potri swap 'L' and 'U', getrf factors A^T
 * (same determinant; getri then leaves inv(A) in row-major order), LQ of A is QR of A^T, and
 * syevd's eigenvectors (columns) come out as the rows of U, as in MXNet. Work arrays are sized
 * per call from the shapes (the op's workspace function); LAPACK failures (potrf of a matrix
 * that is not positive definite, a singular inverse) are errors naming the op and the batch item.
 *
 * Gradients follow MXNet's la_op-inl.h (which cites arXiv:1710.08717): each forward op's rule
 * emits one _backward_linalg_X op (ops/linalg_bwd.c) with the forward's attributes; the
 * diagonal/triangle copies are linear and adjoint in pairs, so their rules are each other
 * (extractdiag <-> makediag, extracttrian <-> maketrian). */
#include "ops/linalg.h"
#include "graph/grad.h"

/* ---- shape-rule helpers ------------------------------------------------------------------ */

static hg_status check_dtype(const hg_op_def *op, int nin, const hg_meta *in)
{
    for (int i = 0; i < nin; i++) {
        if (in[i].ndim < 0) continue;
        if (in[i].dtype != HG_DTYPE_F32 && in[i].dtype != HG_DTYPE_F64)
            return hg_error(HG_ERR_TYPE,
                            "%s: input %d has dtype %s; only float32 and float64 are "
                            "supported",
                            op->name, i, hg_dtype_name(in[i].dtype));
        if (in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "%s: inputs must share one dtype, got %s and %s", op->name,
                            hg_dtype_name(in[0].dtype), hg_dtype_name(in[i].dtype));
    }
    return HG_OK;
}

static hg_status check_large(const hg_op_def *op, int n, const int64_t *d)
{
    for (int i = 0; i < n; i++)
        if (d[i] > INT32_MAX)
            return hg_error(HG_ERR_VALUE,
                            "%s: matrix dimension %lld is too large: the BLAS/LAPACK take "
                            "sizes below 2^31",
                            op->name, (long long)d[i]);
    return HG_OK;
}

/* Input `i` is a batch of square matrices (ndim >= 2, last two dims equal). */
static hg_status check_square(const hg_op_def *op, const hg_meta *m, const char *what)
{
    char s[HG_SHAPE_STR];
    if (m->ndim < 2)
        return hg_error(HG_ERR_VALUE, "%s: %s must have at least 2 dimensions, got shape %s",
                        op->name, what, hg_shape_str(s, m->ndim, m->shape));
    if (!known_eq(m->shape[m->ndim - 1], m->shape[m->ndim - 2]))
        return hg_error(HG_ERR_VALUE, "%s: %s must be a tensor of square matrices, got shape %s",
                        op->name, what, hg_shape_str(s, m->ndim, m->shape));
    return check_large(op, 1, &m->shape[m->ndim - 1]);
}

/* Leading dims of m (all but the last `drop`), then the given trailing ones. */
static void make_meta(hg_meta *o, const hg_meta *m, int drop, int nadd, int64_t d0, int64_t d1)
{
    o->dtype = m->dtype;
    o->ndim = m->ndim - drop;
    memcpy(o->shape, m->shape, sizeof(int64_t) * (size_t)o->ndim);
    if (nadd > 0) o->shape[o->ndim++] = d0;
    if (nadd > 1) o->shape[o->ndim++] = d1;
}

/* ---- gemm / gemm2 ------------------------------------------------------------------------ */

static hg_status gemm_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    gemm_par p = gemm_params(op, a);
    const hg_meta *A = &in[0], *B = &in[1];
    if (A->ndim < 0 || B->ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, nin, in));
    hg_shape_str(s0, A->ndim, A->shape);
    hg_shape_str(s1, B->ndim, B->shape);
    if (A->ndim < 2 || A->ndim != B->ndim)
        return hg_error(HG_ERR_VALUE,
                        "%s: A and B must have the same number of dimensions, at least 2; got "
                        "A %s and B %s",
                        op->name, s0, s1);
    int n = A->ndim;
    int64_t axis = p.axis < 0 ? n + p.axis : p.axis;
    if (axis < 0 || axis >= n - 1)
        return hg_error(HG_ERR_VALUE, "%s: invalid row axis (%lld) for inputs of %d dimensions",
                        op->name, (long long)p.axis, n);
    int64_t dims[4] = {A->shape[axis], A->shape[n - 1], B->shape[axis], B->shape[n - 1]};
    HG_TRY(check_large(op, 4, dims));
    hg_meta o = *A;
    for (int i = 0; i < n - 1; i++)
        if (i != axis && !known_eq(A->shape[i], B->shape[i]))
            return hg_error(HG_ERR_VALUE,
                            "%s: shapes of A %s and B %s must be the same, except on the row/col "
                            "axes",
                            op->name, s0, s1);
    int64_t ka = p.ta ? dims[0] : dims[1], kb = p.tb ? dims[3] : dims[2];
    if (!known_eq(ka, kb))
        return hg_error(HG_ERR_VALUE,
                        "%s: incompatible matrix dimensions for multiplication: A %s, B %s, "
                        "transpose_a=%d, transpose_b=%d",
                        op->name, s0, s1, (int)p.ta, (int)p.tb);
    o.shape[axis] = p.ta ? dims[1] : dims[0];
    o.shape[n - 1] = p.tb ? dims[2] : dims[3];
    if (nin > 2 && in[2].ndim >= 0) {
        bool ok = in[2].ndim == n;
        for (int i = 0; ok && i < n; i++) ok = known_eq(in[2].shape[i], o.shape[i]);
        if (!ok)
            return hg_error(HG_ERR_VALUE, "%s: C has shape %s, the product has shape %s", op->name,
                            hg_shape_str(s0, in[2].ndim, in[2].shape),
                            hg_shape_str(s1, n, o.shape));
    }
    out[0] = o;
    return HG_OK;
}

static hg_status gemm_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    gemm_par p = gemm_params(op, a);
    int64_t axis = p.axis < 0 ? in[0]->ndim + p.axis : p.axis, b0, b1;
    mat A, B, D;
    gemm_view(in[0], axis, &b0, &b1, &A);
    gemm_view(in[1], axis, &b0, &b1, &B);
    gemm_view(out[0], axis, &b0, &b1, &D);
    if (nin > 2) copy_t(out[0], in[2]);
    vgemm(in[0]->dtype, b0, b1, p.ta, p.tb, p.alpha, A, B, nin > 2 ? p.beta : 0.0, D);
    return HG_OK;
}

/* ---- potrf / potri ----------------------------------------------------------------------- */

static hg_status square_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    HG_TRY(check_square(op, &in[0], "A"));
    out[0] = in[0];
    return HG_OK;
}

static hg_status potrf_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    bool lower = a->v[K_LOWER].b;
    int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    copy_t(out[0], in[0]);
    for (int64_t b = 0; b < batch; b++) {
        int info = hg_lapack_potrf(isdbl(dt), lower ? 'U' : 'L', (int)n,
                                   at(dt, hg_data(out[0]), b * n * n), (int)imax1(n));
        if (info > 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: matrix %lld of the batch is not positive definite (LAPACK "
                            "potrf: the leading minor of order %d is not positive)",
                            op->name, (long long)b, info);
        if (info < 0) return hg_error(HG_ERR_INTERNAL, "%s: potrf argument %d", op->name, -info);
    }
    zero_tri(dt, batch, n, hg_data(out[0]), lower);
    return HG_OK;
}

static hg_status potri_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    bool lower = a->v[K_LOWER].b;
    int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    copy_t(out[0], in[0]);
    for (int64_t b = 0; b < batch; b++) {
        int info = hg_lapack_potri(isdbl(dt), lower ? 'U' : 'L', (int)n,
                                   at(dt, hg_data(out[0]), b * n * n), (int)imax1(n));
        if (info > 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: triangular factor %lld of the batch is singular (LAPACK potri: "
                            "diagonal element %d is zero)",
                            op->name, (long long)b, info);
        if (info < 0) return hg_error(HG_ERR_INTERNAL, "%s: potri argument %d", op->name, -info);
    }
    mirror(dt, batch, n, hg_data(out[0]), lower);
    return HG_OK;
}

/* ---- trmm / trsm ------------------------------------------------------------------------- */

static hg_status tri_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_meta *A = &in[0], *B = &in[1];
    if (A->ndim < 0 || B->ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 2, in));
    HG_TRY(check_square(op, A, "A"));
    hg_shape_str(s0, A->ndim, A->shape);
    hg_shape_str(s1, B->ndim, B->shape);
    int n = A->ndim;
    if (B->ndim != n)
        return hg_error(HG_ERR_VALUE, "%s: A %s and B %s must have the same number of dimensions",
                        op->name, s0, s1);
    for (int i = 0; i < n - 2; i++)
        if (!known_eq(A->shape[i], B->shape[i]))
            return hg_error(HG_ERR_VALUE,
                            "%s: shapes of A %s and B %s must be the same, except on the last "
                            "two axes",
                            op->name, s0, s1);
    HG_TRY(check_large(op, 2, &B->shape[n - 2]));
    int64_t k = a->v[K_RIGHT].b ? B->shape[n - 1] : B->shape[n - 2];
    if (!known_eq(A->shape[n - 1], k))
        return hg_error(HG_ERR_VALUE,
                        "%s: incompatible matrix dimensions: A %s, B %s, rightside=%d", op->name,
                        s0, s1, (int)a->v[K_RIGHT].b);
    out[0] = *B;
    return HG_OK;
}

static hg_status tri_run(const hg_op_def *op, const hg_attrs *a, hg_tensor *const *in,
                         hg_tensor *const *out, bool solve)
{
    const hg_tensor *B = in[1];
    int64_t M = B->shape[B->ndim - 2], N = B->shape[B->ndim - 1];
    copy_t(out[0], B);
    btri(B->dtype, solve, nbatch(B, 2), a->v[K_RIGHT].b, a->v[K_TLOWER].b, a->v[K_TRANS].b,
         a->v[K_TALPHA].f, hg_data(in[0]), hg_data(out[0]), M, N);
    return HG_OK;
}

static hg_status trmm_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return tri_run(op, a, in, out, false);
}

static hg_status trsm_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return tri_run(op, a, in, out, true);
}

/* ---- syrk -------------------------------------------------------------------------------- */

static hg_status syrk_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    char s[HG_SHAPE_STR];
    const hg_meta *A = &in[0];
    if (A->ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    if (A->ndim < 2)
        return hg_error(HG_ERR_VALUE, "%s: A must have at least 2 dimensions, got shape %s",
                        op->name, hg_shape_str(s, A->ndim, A->shape));
    HG_TRY(check_large(op, 2, &A->shape[A->ndim - 2]));
    int64_t k = A->shape[A->ndim - (a->v[K_STRANS].b ? 1 : 2)];
    make_meta(&out[0], A, 2, 2, k, k);
    return HG_OK;
}

static hg_status syrk_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *A = in[0];
    hg_dtype dt = A->dtype;
    bool tr = a->v[K_STRANS].b;
    double alpha = a->v[K_SALPHA].f;
    int64_t r = A->shape[A->ndim - 2], c = A->shape[A->ndim - 1], batch = nbatch(A, 2);
    int64_t n = tr ? c : r, k = tr ? r : c;
    memset(hg_data(out[0]), 0, (size_t)out[0]->size * esz(dt));
    if (k == 0) return HG_OK;
    for (int64_t b = 0; b < batch; b++) {
        const void *x = at(dt, hg_data(A), b * r * c);
        void *y = at(dt, hg_data(out[0]), b * n * n);
        enum CBLAS_TRANSPOSE t = tr ? CblasTrans : CblasNoTrans;
        if (isdbl(dt))
            HG_CBLAS(dsyrk)(CblasRowMajor, CblasLower, t, (int)n, (int)k, alpha, x, (int)c, 0.0, y,
                            (int)n);
        else
            HG_CBLAS(ssyrk)(CblasRowMajor, CblasLower, t, (int)n, (int)k, (float)alpha, x, (int)c,
                            0.0f, y, (int)n);
    }
    mirror(dt, batch, n, hg_data(out[0]), true);
    return HG_OK;
}

/* ---- sumlogdiag, extractdiag / makediag, extracttrian / maketrian ------------------------ */

static hg_status sumlogdiag_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    HG_TRY(check_square(op, &in[0], "A"));
    make_meta(&out[0], &in[0], 2, in[0].ndim == 2 ? 1 : 0, 1, 0);
    return HG_OK;
}

static hg_status sumlogdiag_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    for (int64_t b = 0; b < batch; b++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += log(ld(dt, hg_data(in[0]), (b * n + i) * n + i));
        st(dt, hg_data(out[0]), b, s);
    }
    return HG_OK;
}

static bool is_trian(const hg_op_def *op) { return op->attrs == k_trian_attrs; }

static hg_status extract_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    char s[HG_SHAPE_STR];
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    HG_TRY(check_square(op, &in[0], "A"));
    int64_t off = a->v[K_OFFSET].i, n = in[0].shape[in[0].ndim - 1];
    int64_t m = n - llabs(off);
    if (n >= 0 && m <= 0)
        return hg_error(HG_ERR_VALUE, "%s: illegal offset %lld for matrices of shape %s", op->name,
                        (long long)off, hg_shape_str(s, in[0].ndim, in[0].shape));
    make_meta(&out[0], &in[0], 2, 1, n < 0 ? -1 : is_trian(op) ? m * (m + 1) / 2 : m, 0);
    return HG_OK;
}

static hg_status make_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    char s[HG_SHAPE_STR];
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    if (in[0].ndim < 1 || in[0].ndim + 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: A must have 1 to %d dimensions, got shape %s", op->name,
                        HG_MAX_NDIM - 1, hg_shape_str(s, in[0].ndim, in[0].shape));
    int64_t off = llabs(a->v[K_OFFSET].i), t = in[0].shape[in[0].ndim - 1], m = t;
    if (t >= 0 && is_trian(op)) {
        m = (int64_t)floor(0.5 + (sqrt(8.0 * (double)t + 1.0) - 1.0) * 0.5);
        if (m * (m + 1) / 2 != t)
            return hg_error(HG_ERR_VALUE,
                            "%s: the last axis of A (%lld) is not a triangular number "
                            "n*(n+1)/2",
                            op->name, (long long)t);
    }
    int64_t n = t < 0 ? -1 : m + off;
    HG_TRY(check_large(op, 1, &n));
    make_meta(&out[0], &in[0], 1, 2, n, n);
    return HG_OK;
}

/* Index pairs of diagonal `off` of an n x n matrix: element i is at (row, col). */
static void diag_pos(int64_t i, int64_t off, int64_t *row, int64_t *col)
{
    *row = i - (off < 0 ? off : 0);
    *col = i + (off > 0 ? off : 0);
}

/* Position in the packed triangle of element (r, c) of an n x n matrix, or -1 when the element
 * is not in the triangle that offset/lower select (MXNet's ordering: rows of the lower triangle,
 * rows of the transposed upper one). */
static int64_t trian_pos(int64_t r, int64_t c, int64_t off, bool lower)
{
    if (off > 0 || (off == 0 && !lower)) {
        int64_t t = r;
        r = c;
        c = t;
    }
    r -= llabs(off);
    return r >= c ? r * (r + 1) / 2 + c : -1;
}

/* extract: packed/diagonal <- matrix; otherwise matrix <- packed/diagonal (zero elsewhere). */
static void diag_trian_copy(const hg_op_def *op, const hg_attrs *a, const hg_tensor *mat_t,
                            const hg_tensor *vec_t, bool extract)
{
    hg_dtype dt = mat_t->dtype;
    int64_t n = mat_t->shape[mat_t->ndim - 1], batch = nbatch(mat_t, 2);
    int64_t off = a->v[K_OFFSET].i, len = vec_t->shape[vec_t->ndim - 1];
    void *M = hg_data(mat_t), *V = hg_data(vec_t);
    if (!extract) memset(M, 0, (size_t)mat_t->size * esz(dt));
    for (int64_t b = 0; b < batch; b++) {
        if (!is_trian(op)) {
            for (int64_t i = 0; i < len; i++) {
                int64_t r, c;
                diag_pos(i, off, &r, &c);
                int64_t mi = (b * n + r) * n + c, vi = b * len + i;
                if (extract) st(dt, V, vi, ld(dt, M, mi));
                else st(dt, M, mi, ld(dt, V, vi));
            }
            continue;
        }
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) {
                int64_t k = trian_pos(r, c, off, a->v[K_DLOWER].b);
                if (k < 0) continue;
                int64_t mi = (b * n + r) * n + c, vi = b * len + k;
                if (extract) st(dt, V, vi, ld(dt, M, mi));
                else st(dt, M, mi, ld(dt, V, vi));
            }
    }
}

static hg_status extract_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    diag_trian_copy(op, a, in[0], out[0], true);
    return HG_OK;
}

static hg_status make_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    diag_trian_copy(op, a, out[0], in[0], false);
    return HG_OK;
}

/* ---- inverse, det, slogdet --------------------------------------------------------------- */

static hg_status inverse_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    void *work = at(dt, ctx->workspace, n * n);
    int *piv = (int *)at(dt, work, hg_lapack_lwork_blocked(n));
    copy_t(out[0], in[0]);
    for (int64_t b = 0; b < batch; b++) {
        int info = invert(dt, n, at(dt, hg_data(out[0]), b * n * n), piv, false, work);
        if (info > 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: matrix %lld of the batch is singular (LAPACK getrf: U(%d,%d) is "
                            "exactly zero)",
                            op->name, (long long)b, info, info);
        if (info < 0)
            return hg_error(HG_ERR_INTERNAL, "%s: getrf/getri argument %d", op->name, -info);
    }
    return HG_OK;
}

static int det_num_outputs(const hg_op_def *op) { return op->num_outputs - 2; }

static hg_status det_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    HG_TRY(check_square(op, &in[0], "A"));
    int k = det_num_outputs(op);
    for (int i = 0; i < k; i++) make_meta(&out[i], &in[0], 2, in[0].ndim == 2 ? 1 : 0, 1, 0);
    out[k] = in[0];
    make_meta(&out[k + 1], &in[0], 1, 0, 0, 0);
    out[k + 1].dtype = HG_DTYPE_I32;
    return HG_OK;
}

/* LU-factors every matrix into LU (pivots into piv) and writes sign(det) and log|det|. */
static hg_status det_common(const hg_op_def *op, const hg_tensor *A, hg_tensor *LU, hg_tensor *piv,
                            void *sign, void *logdet)
{
    hg_dtype dt = A->dtype;
    int64_t n = A->shape[A->ndim - 1], batch = nbatch(A, 2);
    copy_t(LU, A);
    for (int64_t b = 0; b < batch; b++) {
        void *m = at(dt, hg_data(LU), b * n * n);
        int *p = HG_DATA(piv, int) + b * n;
        int info = n ? hg_lapack_getrf(isdbl(dt), (int)n, (int)n, m, (int)n, p) : 0;
        if (info < 0) return hg_error(HG_ERR_INTERNAL, "%s: getrf argument %d", op->name, -info);
        int changes = 0;
        double sg = 1, lg = 0;
        for (int64_t j = 0; j < n; j++) {
            double d = ld(dt, m, j * (n + 1));
            changes += p[j] != j + 1;
            sg *= (d > 0) - (d < 0);
            lg += log(fabs(d));
        }
        st(dt, sign, b, changes % 2 ? -sg : sg);
        st(dt, logdet, b, lg);
    }
    return HG_OK;
}

static hg_status det_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    int64_t batch = out[0]->size;
    void *sign = ctx->workspace;
    HG_TRY(det_common(op, in[0], out[1], out[2], sign, hg_data(out[0])));
    for (int64_t b = 0; b < batch; b++)
        st(dt, hg_data(out[0]), b, ld(dt, sign, b) * exp(ld(dt, hg_data(out[0]), b)));
    return HG_OK;
}

static size_t det_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return esz(in[0].dtype) * (size_t)imax1(hg_shape_size(in[0].ndim - 2, in[0].shape));
}

static hg_status slogdet_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return det_common(op, in[0], out[2], out[3], hg_data(out[0]), hg_data(out[1]));
}

/* ---- gelqf, syevd ------------------------------------------------------------------------ */

static hg_status gelqf_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s[HG_SHAPE_STR];
    const hg_meta *A = &in[0];
    if (A->ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    int n = A->ndim;
    if (n < 2 ||
        !(A->shape[n - 2] < 0 || A->shape[n - 1] < 0 || A->shape[n - 2] <= A->shape[n - 1]))
        return hg_error(HG_ERR_VALUE,
                        "%s: A must be a tensor of matrices with no more rows than columns, got "
                        "shape %s",
                        op->name, hg_shape_str(s, n, A->shape));
    HG_TRY(check_large(op, 1, &A->shape[n - 1]));
    out[0] = *A;
    make_meta(&out[1], A, 1, 1, A->shape[n - 2], 0);
    return HG_OK;
}

static size_t gelqf_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    int64_t m = in[0].shape[in[0].ndim - 2];
    return esz(in[0].dtype) * (size_t)(m + hg_lapack_lwork_blocked(m));
}

static hg_status gelqf_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    int64_t m = in[0]->shape[in[0]->ndim - 2], n = in[0]->shape[in[0]->ndim - 1];
    int64_t batch = nbatch(in[0], 2), lwork = hg_lapack_lwork_blocked(m);
    void *tau = ctx->workspace, *work = at(dt, tau, m);
    copy_t(out[0], in[0]);
    for (int64_t b = 0; b < batch; b++) {
        void *q = at(dt, hg_data(out[0]), b * m * n), *l = at(dt, hg_data(out[1]), b * m * m);
        int info = hg_lapack_geqrf(isdbl(dt), (int)n, (int)m, q, (int)n, tau, work, (int)lwork);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < m; j++) st(dt, l, i * m + j, j <= i ? ld(dt, q, i * n + j) : 0);
        if (info == 0)
            info = hg_lapack_orgqr(isdbl(dt), (int)n, (int)m, (int)m, q, (int)n, tau, work,
                                   (int)lwork);
        if (info != 0)
            return hg_error(HG_ERR_INTERNAL, "%s: geqrf/orgqr returned %d", op->name, info);
    }
    return HG_OK;
}

static hg_status syevd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(check_dtype(op, 1, in));
    HG_TRY(check_square(op, &in[0], "A"));
    int64_t n = in[0].shape[in[0].ndim - 1];
    if (n > 0 && hg_lapack_lwork_syevd(n) > INT32_MAX)
        return hg_error(HG_ERR_VALUE, "%s: matrices of size %lld are too large for LAPACK syevd",
                        op->name, (long long)n);
    out[0] = in[0];
    make_meta(&out[1], &in[0], 1, 0, 0, 0);
    return HG_OK;
}

static size_t syevd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    int64_t n = in[0].shape[in[0].ndim - 1];
    return esz(in[0].dtype) * (size_t)hg_lapack_lwork_syevd(n) +
           sizeof(int) * (size_t)hg_lapack_liwork_syevd(n);
}

static hg_status syevd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_dtype dt = in[0]->dtype;
    int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    int64_t lwork = hg_lapack_lwork_syevd(n);
    void *work = ctx->workspace;
    int *iwork = (int *)at(dt, work, lwork);
    copy_t(out[0], in[0]);
    for (int64_t b = 0; b < batch; b++) {
        void *u = at(dt, hg_data(out[0]), b * n * n), *l = at(dt, hg_data(out[1]), b * n);
        int info = hg_lapack_syevd(isdbl(dt), 'U', (int)n, u, (int)n, l, work, (int)lwork, iwork,
                                   (int)hg_lapack_liwork_syevd(n));
        if (info > 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: the eigenvalue algorithm failed to converge on matrix %lld of "
                            "the batch (LAPACK syevd info %d)",
                            op->name, (long long)b, info);
        if (info < 0) return hg_error(HG_ERR_INTERNAL, "%s: syevd argument %d", op->name, -info);
        /* MXNet's deterministic signs: each eigenvector's largest entry (first on ties) > 0 */
        for (int64_t i = 0; i < n; i++) {
            int64_t k = 0;
            for (int64_t j = 1; j < n; j++)
                if (fabs(ld(dt, u, i * n + j)) > fabs(ld(dt, u, i * n + k))) k = j;
            if (ld(dt, u, i * n + k) < 0)
                for (int64_t j = 0; j < n; j++) st(dt, u, i * n + j, -ld(dt, u, i * n + j));
        }
    }
    return HG_OK;
}

/* ---- gradient rules ---------------------------------------------------------------------- */

/* Emits bwd over (ograds of outputs og[0..nog), then the listed forward inputs / outputs) with the
 * forward's attributes, and hands its outputs to the forward inputs. */
static hg_status emit_bwd(hg_grad_ctx *g, const char *bwd, int nog, const int *og, int nsrc,
                          const int *src, bool with_attrs)
{
    hg_sentry in[8], r[3];
    int k = 0, nin = hg_g_nin(g);
    for (int i = 0; i < nog; i++) in[k++] = hg_g_ograd(g, og[i]);
    for (int i = 0; i < nsrc; i++)
        in[k++] = src[i] >= 0 ? hg_g_in(g, src[i]) : hg_g_out(g, -1 - src[i]);
    if (with_attrs) hg_g_op_fwd_attrs(g, bwd, k, in, NULL, nin, r);
    else hg_g_opn(g, bwd, k, in, NULL, nin, r);
    for (int i = 0; i < nin; i++)
        if (hg_g_needs(g, i)) hg_g_set(g, i, r[i]);
    return hg_g_status(g);
}

#define OUT(i) (-1 - (i))
#define IDX(...) (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (int[]){__VA_ARGS__}
static hg_status gemm_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_gemm", IDX(0), IDX(0, 1, 2), true);
}
static hg_status gemm2_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_gemm2", IDX(0), IDX(0, 1), true);
}
static hg_status potrf_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_potrf", IDX(0), IDX(OUT(0)), true);
}
static hg_status potri_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_potri", IDX(0), IDX(0, OUT(0)), true);
}
static hg_status trmm_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_trmm", IDX(0), IDX(0, 1), true);
}
static hg_status trsm_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_trsm", IDX(0), IDX(0, 1, OUT(0)), true);
}
static hg_status syrk_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_syrk", IDX(0), IDX(0), true);
}
static hg_status sumlogdiag_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_sumlogdiag", IDX(0), IDX(0), false);
}
static hg_status gelqf_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_gelqf", IDX(0, 1), IDX(OUT(0), OUT(1)), false);
}
static hg_status syevd_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_syevd", IDX(0, 1), IDX(OUT(0), OUT(1)), false);
}
static hg_status inverse_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_inverse", IDX(0), IDX(OUT(0)), false);
}
static hg_status det_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_det", IDX(0), IDX(OUT(0), OUT(1), OUT(2)), false);
}
static hg_status slogdet_grad(hg_grad_ctx *g)
{
    return emit_bwd(g, "_backward_linalg_slogdet", IDX(1), IDX(OUT(0), OUT(1), OUT(2), OUT(3)),
                    false);
}
#undef IDX
#undef OUT

/* The diagonal and triangle copies are adjoint in pairs. */
static hg_status diag_trian_grad(hg_grad_ctx *g, const char *adj)
{
    bool trian = strstr(adj, "trian") != NULL;
    const char *const *kv = trian ? HG_KV("offset", hg_g_attr_str(g, K_OFFSET), "lower",
                                          hg_g_attr_str(g, K_DLOWER))
                                  : HG_KV("offset", hg_g_attr_str(g, K_OFFSET));
    hg_g_set(g, 0, hg_g_op(g, adj, HG_GIN(hg_g_ograd(g, 0)), kv));
    return hg_g_status(g);
}
static hg_status extractdiag_grad(hg_grad_ctx *g) { return diag_trian_grad(g, "_linalg_makediag"); }
static hg_status makediag_grad(hg_grad_ctx *g) { return diag_trian_grad(g, "_linalg_extractdiag"); }
static hg_status extracttrian_grad(hg_grad_ctx *g)
{
    return diag_trian_grad(g, "_linalg_maketrian");
}
static hg_status maketrian_grad(hg_grad_ctx *g)
{
    return diag_trian_grad(g, "_linalg_extracttrian");
}

/* ---- registry ---------------------------------------------------------------------------- */

const hg_op_def hg_ops_linalg[] = {
    {.name = "_linalg_gemm",
     .aliases = HG_NAMES("linalg_gemm"),
     .doc = "General matrix multiply-accumulate: out = alpha * op(A) op(B) + beta * C, batched "
            "over the other axes.",
     .input_names = HG_NAMES("A", "B", "C"),
     .attrs = k_gemm_attrs,
     .num_attrs = HG_COUNT(k_gemm_attrs),
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = gemm_infer,
     .forward = gemm_forward,
     .grad = gemm_grad},
    {.name = "_linalg_gemm2",
     .aliases = HG_NAMES("linalg_gemm2"),
     .doc = "General matrix multiply: out = alpha * op(A) op(B), batched over the other axes.",
     .input_names = HG_NAMES("A", "B"),
     .attrs = k_gemm2_attrs,
     .num_attrs = HG_COUNT(k_gemm2_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = gemm_infer,
     .forward = gemm_forward,
     .grad = gemm2_grad},
    {.name = "_linalg_potrf",
     .aliases = HG_NAMES("linalg_potrf"),
     .doc = "Cholesky factor of symmetric positive definite matrices: A = L L^T (lower) or U^T U.",
     .input_names = HG_NAMES("A"),
     .attrs = k_chol_attrs,
     .num_attrs = HG_COUNT(k_chol_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = square_infer,
     .forward = potrf_forward,
     .grad = potrf_grad},
    {.name = "_linalg_potri",
     .aliases = HG_NAMES("linalg_potri"),
     .doc = "Inverse of A = L L^T (lower) or U^T U from its Cholesky factor.",
     .input_names = HG_NAMES("A"),
     .attrs = k_chol_attrs,
     .num_attrs = HG_COUNT(k_chol_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = square_infer,
     .forward = potri_forward,
     .grad = potri_grad},
    {.name = "_linalg_trmm",
     .aliases = HG_NAMES("linalg_trmm"),
     .doc = "Triangular matrix product: out = alpha * op(A) B, or alpha * B op(A) when rightside.",
     .input_names = HG_NAMES("A", "B"),
     .attrs = k_tri_attrs,
     .num_attrs = HG_COUNT(k_tri_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = tri_infer,
     .forward = trmm_forward,
     .grad = trmm_grad},
    {.name = "_linalg_trsm",
     .aliases = HG_NAMES("linalg_trsm"),
     .doc = "Triangular solve: out = alpha * op(A)^-1 B, or alpha * B op(A)^-1 when rightside.",
     .input_names = HG_NAMES("A", "B"),
     .attrs = k_tri_attrs,
     .num_attrs = HG_COUNT(k_tri_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = tri_infer,
     .forward = trsm_forward,
     .grad = trsm_grad},
    {.name = "_linalg_sumlogdiag",
     .aliases = HG_NAMES("linalg_sumlogdiag"),
     .doc = "Sum of the logarithms of the diagonal of square matrices.",
     .input_names = HG_NAMES("A"),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = sumlogdiag_infer,
     .forward = sumlogdiag_forward,
     .grad = sumlogdiag_grad},
    {.name = "_linalg_extractdiag",
     .aliases = HG_NAMES("linalg_extractdiag"),
     .doc = "Extracts a diagonal (offset: above > 0, below < 0) of square matrices.",
     .input_names = HG_NAMES("A"),
     .attrs = k_diag_attrs,
     .num_attrs = HG_COUNT(k_diag_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = extract_infer,
     .forward = extract_forward,
     .grad = extractdiag_grad},
    {.name = "_linalg_makediag",
     .aliases = HG_NAMES("linalg_makediag"),
     .doc =
         "Square matrices with the given diagonal (offset: above > 0, below < 0), zero elsewhere.",
     .input_names = HG_NAMES("A"),
     .attrs = k_diag_attrs,
     .num_attrs = HG_COUNT(k_diag_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = make_infer,
     .forward = make_forward,
     .grad = makediag_grad},
    {.name = "_linalg_extracttrian",
     .aliases = HG_NAMES("linalg_extracttrian"),
     .doc = "Extracts a triangle of square matrices into a vector of n*(n+1)/2 entries.",
     .input_names = HG_NAMES("A"),
     .attrs = k_trian_attrs,
     .num_attrs = HG_COUNT(k_trian_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = extract_infer,
     .forward = extract_forward,
     .grad = extracttrian_grad},
    {.name = "_linalg_maketrian",
     .aliases = HG_NAMES("linalg_maketrian"),
     .doc = "Square matrices with the given packed triangle, zero elsewhere.",
     .input_names = HG_NAMES("A"),
     .attrs = k_trian_attrs,
     .num_attrs = HG_COUNT(k_trian_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = make_infer,
     .forward = make_forward,
     .grad = maketrian_grad},
    {.name = "_linalg_syrk",
     .aliases = HG_NAMES("linalg_syrk"),
     .doc = "Symmetric rank-k update: out = alpha * A A^T, or alpha * A^T A when transpose.",
     .input_names = HG_NAMES("A"),
     .attrs = k_syrk_attrs,
     .num_attrs = HG_COUNT(k_syrk_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = syrk_infer,
     .forward = syrk_forward,
     .grad = syrk_grad},
    {.name = "_linalg_gelqf",
     .aliases = HG_NAMES("linalg_gelqf"),
     .doc = "LQ factorization A = L Q of matrices with no more rows than columns: Q has "
            "orthonormal rows, L is lower triangular.",
     .input_names = HG_NAMES("A"),
     .num_inputs = 1,
     .num_outputs = 2,
     .infer = gelqf_infer,
     .forward = gelqf_forward,
     .workspace = gelqf_workspace,
     .grad = gelqf_grad},
    {.name = "_linalg_syevd",
     .doc = "Eigendecomposition A = U^T diag(L) U of symmetric matrices: eigenvectors in the rows "
            "of U, eigenvalues ascending.",
     .input_names = HG_NAMES("A"),
     .num_inputs = 1,
     .num_outputs = 2,
     .infer = syevd_infer,
     .forward = syevd_forward,
     .workspace = syevd_workspace,
     .grad = syevd_grad},
    {.name = "_linalg_inverse",
     .aliases = HG_NAMES("linalg_inverse", "_npi_inv"),
     .doc = "Inverse of square matrices.",
     .input_names = HG_NAMES("A"),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = square_infer,
     .forward = inverse_forward,
     .workspace = getri_workspace,
     .grad = inverse_grad},
    {.name = "_linalg_det",
     .aliases = HG_NAMES("linalg_det", "_npi_det"),
     .doc = "Determinant of square matrices (hidden outputs: the LU factors and pivots).",
     .input_names = HG_NAMES("A"),
     .num_inputs = 1,
     .num_outputs = 3,
     .num_visible_outputs = 1,
     .infer = det_infer,
     .forward = det_forward,
     .workspace = det_workspace,
     .grad = det_grad},
    {.name = "_linalg_slogdet",
     .aliases = HG_NAMES("linalg_slogdet", "_npi_slogdet"),
     .doc = "Sign and log of the absolute value of the determinant of square matrices.",
     .input_names = HG_NAMES("A"),
     .num_inputs = 1,
     .num_outputs = 4,
     .num_visible_outputs = 2,
     .infer = det_infer,
     .forward = slogdet_forward,
     .grad = slogdet_grad},
    {0},
};
