/* Shared pieces of the linalg ops (ops/linalg.c: forward ops and gradient rules;
 * ops/linalg_bwd.c: the _backward_linalg_X ops): element access for float32/float64 on void
 * pointers, batched BLAS calls on row-major matrices, the attribute schemas (both files' tables
 * use them; an op tells gemm from gemm2 by its attribute count) and the LU inverse. Internal to
 * csrc/ops; everything is static inline. */
#ifndef HG_OPS_LINALG_H
#define HG_OPS_LINALG_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/lapack.h"
#include "ops/linalg_attrs.h"

static inline size_t esz(hg_dtype dt) { return dt == HG_DTYPE_F64 ? 8 : 4; }

static inline bool isdbl(hg_dtype dt) { return dt == HG_DTYPE_F64; }

static inline double ld(hg_dtype dt, const void *p, int64_t i)
{
    return isdbl(dt) ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline void st(hg_dtype dt, void *p, int64_t i, double v)
{
    if (isdbl(dt)) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

static inline void *at(hg_dtype dt, const void *p, int64_t i)
{
    return (char *)p + (size_t)i * esz(dt);
}

static inline int64_t imax1(int64_t v) { return v > 1 ? v : 1; }

static inline void copy_t(hg_tensor *dst, const hg_tensor *src)
{
    memcpy(hg_data(dst), hg_data(src), (size_t)src->size * esz(src->dtype));
}

/* A matrix of a batch laid out as gemm's `axis` describes: b0 outer blocks, each `rows` rows of
 * b1 interleaved matrices of `cols` columns. b1 == 1 for everything but gemm with axis != -2. */
typedef struct {
    void *p;
    int64_t rows, cols;
} mat;

/* Z = alpha op(X) op(Y) + beta Z for every matrix of the batch (b0 x b1 of them). */
static inline void vgemm(hg_dtype dt, int64_t b0, int64_t b1, bool tx, bool ty, double alpha, mat X,
                         mat Y, double beta, mat Z)
{
    int64_t M = Z.rows, N = Z.cols, K = tx ? X.rows : X.cols;
    int64_t ldx = b1 * X.cols, ldy = b1 * Y.cols, ldz = b1 * Z.cols;
    int64_t nb = b1 == 1 ? 1 : b0, batch = b1 == 1 ? b0 : b1;
    int64_t sx = b1 == 1 ? X.rows * X.cols : X.cols, sy = b1 == 1 ? Y.rows * Y.cols : Y.cols;
    int64_t sz = b1 == 1 ? Z.rows * Z.cols : Z.cols;
    for (int64_t i = 0; i < nb; i++) {
        const void *x = at(dt, X.p, i * X.rows * ldx), *y = at(dt, Y.p, i * Y.rows * ldy);
        void *z = at(dt, Z.p, i * Z.rows * ldz);
        if (isdbl(dt))
            hg_gemm_batch_f64(tx, ty, batch, M, N, K, alpha, x, imax1(ldx), sx, y, imax1(ldy), sy,
                              beta, z, imax1(ldz), sz);
        else
            hg_gemm_batch_f32(tx, ty, batch, M, N, K, (float)alpha, x, imax1(ldx), sx, y,
                              imax1(ldy), sy, (float)beta, z, imax1(ldz), sz);
    }
}

/* Plain batch of contiguous matrices. */
static inline void bgemm(hg_dtype dt, int64_t batch, bool tx, bool ty, double alpha, mat X, mat Y,
                         double beta, mat Z)
{
    vgemm(dt, batch, 1, tx, ty, alpha, X, Y, beta, Z);
}

/* B (M x N, per batch item) = alpha op(A)^{-1} B (solve) or alpha op(A) B, A on the right when
 * right: the row-major CBLAS trsm / trmm, A an n x n triangle. */
static inline void btri(hg_dtype dt, bool solve, int64_t batch, bool right, bool lower, bool trans,
                        double alpha, const void *A, void *B, int64_t M, int64_t N)
{
    int64_t n = right ? N : M;
    if (M == 0 || N == 0) return;
    enum CBLAS_SIDE side = right ? CblasRight : CblasLeft;
    enum CBLAS_UPLO uplo = lower ? CblasLower : CblasUpper;
    enum CBLAS_TRANSPOSE tr = trans ? CblasTrans : CblasNoTrans;
    for (int64_t b = 0; b < batch; b++) {
        const void *a = at(dt, A, b * n * n);
        void *x = at(dt, B, b * M * N);
        if (isdbl(dt) && solve)
            HG_CBLAS(dtrsm)(CblasRowMajor, side, uplo, tr, CblasNonUnit, (int)M, (int)N, alpha, a,
                            (int)n, x, (int)N);
        else if (isdbl(dt))
            HG_CBLAS(dtrmm)(CblasRowMajor, side, uplo, tr, CblasNonUnit, (int)M, (int)N, alpha, a,
                            (int)n, x, (int)N);
        else if (solve)
            HG_CBLAS(strsm)(CblasRowMajor, side, uplo, tr, CblasNonUnit, (int)M, (int)N,
                            (float)alpha, a, (int)n, x, (int)N);
        else
            HG_CBLAS(strmm)(CblasRowMajor, side, uplo, tr, CblasNonUnit, (int)M, (int)N,
                            (float)alpha, a, (int)n, x, (int)N);
    }
}

/* Zeroes the strict upper (zero_upper) or strict lower triangle of each n x n matrix. */
static inline void zero_tri(hg_dtype dt, int64_t batch, int64_t n, void *p, bool zero_upper)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                if (zero_upper ? j > i : j < i) st(dt, p, (b * n + i) * n + j, 0);
}

/* Makes each n x n matrix symmetric from its lower (lower_to_upper) or upper triangle. */
static inline void mirror(hg_dtype dt, int64_t batch, int64_t n, void *p, bool lower_to_upper)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < i; j++) {
                int64_t lo = (b * n + i) * n + j, up = (b * n + j) * n + i;
                if (lower_to_upper) st(dt, p, up, ld(dt, p, lo));
                else st(dt, p, lo, ld(dt, p, up));
            }
}

static inline bool known_eq(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

static inline int64_t nbatch(const hg_tensor *t, int drop)
{
    int64_t b = 1;
    for (int i = 0; i < t->ndim - drop; i++) b *= t->shape[i];
    return b;
}

static const hg_attr_spec k_gemm_attrs[] = {
    [K_TA] = {"transpose_a", HG_ATTR_BOOL, 0, "False", "multiply with the transpose of A", NULL},
    [K_TB] = {"transpose_b", HG_ATTR_BOOL, 0, "False", "multiply with the transpose of B", NULL},
    [K_ALPHA] = {"alpha", HG_ATTR_FLOAT, 0, "1.0", "scalar factor of A*B", NULL},
    [K_BETA] = {"beta", HG_ATTR_FLOAT, 0, "1.0", "scalar factor of C", NULL},
    [K_AXIS] = {"axis", HG_ATTR_INT, 0, "-2", "axis of the matrix rows", NULL},
};

_Static_assert(HG_COUNT(k_gemm_attrs) == K_GEMM_NATTRS, "k_gemm_attrs must match its enum");

static const hg_attr_spec k_gemm2_attrs[] = {
    [K2_TA] = {"transpose_a", HG_ATTR_BOOL, 0, "False", "multiply with the transpose of A", NULL},
    [K2_TB] = {"transpose_b", HG_ATTR_BOOL, 0, "False", "multiply with the transpose of B", NULL},
    [K2_ALPHA] = {"alpha", HG_ATTR_FLOAT, 0, "1.0", "scalar factor of A*B", NULL},
    [K2_AXIS] = {"axis", HG_ATTR_INT, 0, "-2", "axis of the matrix row indices", NULL},
};

_Static_assert(HG_COUNT(k_gemm2_attrs) == K_GEMM2_NATTRS, "k_gemm2_attrs must match its enum");

typedef struct {
    bool ta, tb;
    double alpha, beta;
    int64_t axis;
} gemm_par;

static inline gemm_par gemm_params(const hg_op_def *op, const hg_attrs *a)
{
    gemm_par p;
    if (op->num_attrs == K_GEMM_NATTRS) {
        p = (gemm_par){a->v[K_TA].b, a->v[K_TB].b, a->v[K_ALPHA].f, a->v[K_BETA].f, a->v[K_AXIS].i};
    } else {
        p = (gemm_par){a->v[K2_TA].b, a->v[K2_TB].b, a->v[K2_ALPHA].f, 0.0, a->v[K2_AXIS].i};
    }
    return p;
}

/* b0 x [rows] x b1 x [cols] grouping of a gemm operand around axis. */
static inline void gemm_view(const hg_tensor *t, int64_t axis, int64_t *b0, int64_t *b1, mat *m)
{
    int n = t->ndim;
    *b0 = 1;
    *b1 = 1;
    for (int i = 0; i < axis; i++) *b0 *= t->shape[i];
    for (int i = (int)axis + 1; i < n - 1; i++) *b1 *= t->shape[i];
    *m = (mat){hg_data(t), t->shape[axis], t->shape[n - 1]};
}

static const hg_attr_spec k_chol_attrs[] = {
    [K_LOWER] = {"lower", HG_ATTR_BOOL, 0, "True",
                 "True if the triangular matrix is lower triangular, False if upper", NULL},
};

static const hg_attr_spec k_tri_attrs[] = {
    [K_TRANS] = {"transpose", HG_ATTR_BOOL, 0, "False", "use the transpose of the triangle", NULL},
    [K_RIGHT] = {"rightside", HG_ATTR_BOOL, 0, "False", "multiply the triangle from the right",
                 NULL},
    [K_TLOWER] = {"lower", HG_ATTR_BOOL, 0, "True",
                  "True if the triangular matrix is lower triangular, False if upper", NULL},
    [K_TALPHA] = {"alpha", HG_ATTR_FLOAT, 0, "1.0", "scalar factor of the result", NULL},
};

_Static_assert(HG_COUNT(k_tri_attrs) == K_TRI_NATTRS, "k_tri_attrs must match its enum");

static const hg_attr_spec k_syrk_attrs[] = {
    [K_STRANS] = {"transpose", HG_ATTR_BOOL, 0, "False", "use the transpose of A", NULL},
    [K_SALPHA] = {"alpha", HG_ATTR_FLOAT, 0, "1.0", "scalar factor of the result", NULL},
};

_Static_assert(HG_COUNT(k_syrk_attrs) == K_SYRK_NATTRS, "k_syrk_attrs must match its enum");

static const hg_attr_spec k_diag_attrs[] = {
    [K_OFFSET] = {"offset", HG_ATTR_INT, 0, "0",
                  "offset of the diagonal versus the main diagonal (negative: below)", NULL},
};

static const hg_attr_spec k_trian_attrs[] = {
    [K_OFFSET] = {"offset", HG_ATTR_INT, 0, "0",
                  "offset of the diagonal versus the main diagonal (negative: below)", NULL},
    [K_DLOWER] = {"lower", HG_ATTR_BOOL, 0, "True",
                  "the lower triangle if True, else the upper (only when offset=0)", NULL},
};

_Static_assert(HG_COUNT(k_trian_attrs) == K_DIAG_NATTRS, "k_trian_attrs must match its enum");

static inline size_t getri_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    /* a copy of one matrix, the work array, the pivots */
    int64_t n = in[0].shape[in[0].ndim - 1];
    return esz(in[0].dtype) * (size_t)(n * n + hg_lapack_lwork_blocked(n)) +
           sizeof(int) * (size_t)imax1(n);
}

/* inv(A) in place of the row-major n x n matrix p (its LU factors when have_lu, with piv). */
static inline int invert(hg_dtype dt, int64_t n, void *p, int *piv, bool have_lu, void *work)
{
    int info = have_lu ? 0 : hg_lapack_getrf(isdbl(dt), (int)n, (int)n, p, (int)imax1(n), piv);
    if (info != 0) return info;
    return hg_lapack_getri(isdbl(dt), (int)n, p, (int)imax1(n), piv, work,
                           (int)hg_lapack_lwork_blocked(n));
}

/* The trailing matrix of t, with the batch count. */
static inline mat tmat(const hg_tensor *t, int64_t *batch)
{
    if (batch) *batch = nbatch(t, 2);
    return (mat){hg_data(t), t->shape[t->ndim - 2], t->shape[t->ndim - 1]};
}

#endif
