/* The GEMM entry points of gemm.c for one element type, included once per type by gemm.c,
 * which defines before it:
 *   T            the element type (float, double)
 *   NAME(x)      x with the type's suffix (x##_f32): the names of the type's functions
 *   GEMM_BLAS    the CBLAS ?gemm of the type (HG_CBLAS(sgemm))
 *   GEMM_GEMV    the CBLAS ?gemv of the type
 *   GEMM_SMALL   the type's own-kernel path (small_f32), returning false to leave it to the BLAS
 *   GEMM_PACKED  the type's own kernel for what would go to the BLAS (packed_f32), the same
 *   GEMM_PACKED_FOR(M, N, K)  whether a whole product goes to it
 *   GEMM_SMALL_EPI  GEMM_SMALL with a row bias and post-op: 1 done, 0 not its product, -1 its
 *                product but not in the form that applies them
 *   GEMM_POST    core/post.h's hg_post_f32 / hg_post_f64
 * and SPLIT_MNK, BATCH_GRAIN_WORK. */

/* One BLAS call on the calling thread (the BLAS runs single-threaded: see blas.h). */
static void NAME(blas)(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A,
                       int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc, bool packed,
                       const T *bias, const hg_post *post)
{
    if (M == 1 || N == 1) {
        /* A matrix-vector product (batch-1 Dense): gemv skips gemm's packing of the whole
         * matrix (gemm is 5-6x slower here on OpenBLAS 0.3.34). beta 0 must not keep NaN
         * from a recycled output buffer, which some BLAS versions' gemv do. */
        int64_t incy = M == 1 ? 1 : ldc;
        if (beta == 0)
            for (int64_t i = 0; i < M + N - 1; i++) C[i * incy] = 0;
        if (M == 1) /* C^T = op(B)^T a, a = row of op(A) */
            GEMM_GEMV(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, (blasint)(tb ? N : K),
                      (blasint)(tb ? K : N), alpha, B, (blasint)ldb, A, (blasint)(ta ? lda : 1),
                      beta, C, 1);
        else /* C = op(A) b, b = column of op(B) */
            GEMM_GEMV(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, (blasint)(ta ? K : M),
                      (blasint)(ta ? M : K), alpha, A, (blasint)lda, B, (blasint)(tb ? 1 : ldb),
                      beta, C, (blasint)ldc);
        return;
    }
    if (packed && GEMM_PACKED(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post))
        return;
    GEMM_BLAS(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (blasint)M, (blasint)N, (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C,
              (blasint)ldc);
    if (bias || (post && post->kind != HG_POST_NONE)) /* the packed kernel could not run */
        for (int64_t i = 0; i < M; i++) {
            T *c = C + i * ldc;
            if (bias)
                for (int64_t j = 0; j < N; j++) c[j] += bias[i];
            GEMM_POST(post, c, N);
        }
}

typedef struct {
    bool ta, tb, by_n, packed;
    int64_t M, N, K, lda, ldb, ldc, parts;
    T alpha, beta;
    const T *A, *B, *bias;
    T *C;
    const hg_post *post;
} NAME(split_job);

/* Parts [b, e) of a product split along the columns of C (by_n) or its rows. */
static void NAME(split_range)(void *ctx, int64_t b, int64_t e)
{
    const NAME(split_job) *j = ctx;
    int64_t len = j->by_n ? j->N : j->M;
    for (int64_t p = b; p < e; p++) {
        /* Boundaries on multiples of 32 (whole cache lines of C, whole column panels of the
         * packed kernel); the last takes the rest */
        int64_t lo = len * p / j->parts / 32 * 32;
        int64_t hi = p + 1 == j->parts ? len : len * (p + 1) / j->parts / 32 * 32;
        if (hi <= lo) continue;
        if (j->by_n)
            NAME(blas)(j->ta, j->tb, j->M, hi - lo, j->K, j->alpha, j->A, j->lda,
                       j->B + (j->tb ? lo * j->ldb : lo), j->ldb, j->beta, j->C + lo, j->ldc,
                       j->packed, j->bias, j->post);
        else
            NAME(blas)(j->ta, j->tb, hi - lo, j->N, j->K, j->alpha,
                       j->A + (j->ta ? lo : lo * j->lda), j->lda, j->B, j->ldb, j->beta,
                       j->C + lo * j->ldc, j->ldc, j->packed, j->bias ? j->bias + lo : NULL,
                       j->post);
    }
}

/* The BLAS runs on one thread; a product big enough to pay for it is split into one part
 * per pool thread along the longer side of C, so that one pool serves every kernel (the
 * BLAS's own threads spinning beside the pool's halve the speed of both on few cores). */
static void NAME(gemm_split)(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A,
                             int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc,
                             const T *bias, const hg_post *post)
{
    /* Also sets the BLAS to one thread before its first use (cheap after). */
    int threads = hg_get_num_threads();
    double mnk = (double)M * (double)N * (double)K;
    bool by_n = N >= M;
    int64_t len = by_n ? N : M;
    int64_t parts = mnk < SPLIT_MNK ? 1 : threads;
    if (parts > len / 32) parts = len / 32;
    /* Decided for the whole product, so that every part runs the same kernel as one thread
     * would (the same sums in the same order, whatever the thread count). */
    bool packed = GEMM_PACKED_FOR(M, N, K);
    if (parts < 2) {
        NAME(blas)(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, packed, bias, post);
        return;
    }
    NAME(split_job)
    j = {ta, tb, by_n, packed, M, N, K, lda, ldb, ldc, parts, alpha, beta, A, B, bias, C, post};
    hg_parallel_for(parts, 1, NAME(split_range), &j);
}

void NAME(hg_gemm)(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A,
                   int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        /* The product is empty: C = beta * C, exact zeros for beta 0 (C may hold NaN). */
        for (int64_t i = 0; i < M; i++) {
            T *c = C + i * ldc;
            if (beta == 0)
                for (int64_t j = 0; j < N; j++) c[j] = 0;
            else if (beta != 1)
                for (int64_t j = 0; j < N; j++) c[j] *= beta;
        }
        return;
    }
    if (GEMM_SMALL(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    NAME(gemm_split)(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, NULL);
}

bool NAME(hg_gemm_epi)(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A,
                       int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc,
                       const T *bias, const hg_post *post)
{
    if (M <= 0 || N <= 0 || K <= 0 || alpha == 0) return false;
    int small = GEMM_SMALL_EPI(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post);
    if (small != 0) return small > 0;
    if (!GEMM_PACKED_FOR(M, N, K)) return false;
    NAME(gemm_split)(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post);
    return true;
}

typedef struct {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc, sa, sb, sc;
    T alpha, beta;
    const T *A, *B;
    T *C;
} NAME(batch_job);

static void NAME(batch_range)(void *ctx, int64_t begin, int64_t end)
{
    const NAME(batch_job) *j = ctx;
    for (int64_t i = begin; i < end; i++)
        NAME(hg_gemm)(j->ta, j->tb, j->M, j->N, j->K, j->alpha, j->A + i * j->sa, j->lda,
                      j->B + i * j->sb, j->ldb, j->beta, j->C + i * j->sc, j->ldc);
}

void NAME(hg_gemm_batch)(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, T alpha,
                         const T *A, int64_t lda, int64_t sa, const T *B, int64_t ldb, int64_t sb,
                         T beta, T *C, int64_t ldc, int64_t sc)
{
    NAME(batch_job) j = {ta, tb, M, N, K, lda, ldb, ldc, sa, sb, sc, alpha, beta, A, B, C};
    double mnk = (double)M * (double)N * (double)K;
    if (batch > 1 && mnk < SPLIT_MNK) { /* else each product splits itself */
        int64_t per = (int64_t)mnk > 0 ? (int64_t)mnk : 1;
        hg_parallel_for(batch, (BATCH_GRAIN_WORK + per - 1) / per, NAME(batch_range), &j);
    } else {
        NAME(batch_range)(&j, 0, batch);
    }
}
