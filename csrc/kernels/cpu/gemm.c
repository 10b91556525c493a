/* Row-major GEMM glue over CBLAS (see gemm.h). The only file that calls ?gemm / ?gemv. */
#include "gemm.h"

#include "../../core/parallel.h"
#include "blas.h"
#include "hybridgluon/hybridgluon.h"

/* OpenBLAS runs a GEMM on the calling thread alone when M*N*K is at most 65536 * 4 (its default
 * GEMM_MULTITHREAD_THRESHOLD), a GEMV when M*N is below 2304 * 4; up to those sizes we may call it
 * from several pool workers at once without its own threads getting involved. */
#define SMALL_MNK 262144.0
#define SMALL_GEMV 9215.0
/* Multiply-adds per chunk of a batched loop below which splitting over threads does not pay. */
#define BATCH_GRAIN_WORK 65536

#define GEMM_IMPL(T, SUFFIX, BLAS, GEMV)                                                        \
    void hg_gemm_##SUFFIX(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha,           \
                          const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,       \
                          int64_t ldc)                                                          \
    {                                                                                           \
        if (M <= 0 || N <= 0) return;                                                           \
        if (K <= 0 || alpha == 0) {                                                             \
            /* The product is empty: C = beta * C, exact zeros for beta 0 (C may hold NaN). */  \
            for (int64_t i = 0; i < M; i++) {                                                   \
                T *c = C + i * ldc;                                                             \
                if (beta == 0)                                                                  \
                    for (int64_t j = 0; j < N; j++) c[j] = 0;                                   \
                else if (beta != 1)                                                             \
                    for (int64_t j = 0; j < N; j++) c[j] *= beta;                               \
            }                                                                                   \
            return;                                                                             \
        }                                                                                       \
        /* Applies the configured thread count to the BLAS before its first use (cheap after). */ \
        (void)hg_get_num_threads();                                                             \
        if (M == 1 || N == 1) {                                                                 \
            /* A matrix-vector product (batch-1 Dense): gemv skips gemm's packing of the whole \
             * matrix (gemm is 5-6x slower here on OpenBLAS 0.3.34). beta 0 must not keep NaN  \
             * from a recycled output buffer, which some BLAS versions' gemv do. */            \
            int64_t incy = M == 1 ? 1 : ldc;                                                    \
            if (beta == 0)                                                                      \
                for (int64_t i = 0; i < M + N - 1; i++) C[i * incy] = 0;                        \
            if (M == 1) /* C^T = op(B)^T a, a = row of op(A) */                                 \
                HG_CBLAS(GEMV)(CblasRowMajor, tb ? CblasNoTrans : CblasTrans,                   \
                               (blasint)(tb ? N : K), (blasint)(tb ? K : N), alpha, B,          \
                               (blasint)ldb, A, (blasint)(ta ? lda : 1), beta, C, 1);           \
            else /* C = op(A) b, b = column of op(B) */                                         \
                HG_CBLAS(GEMV)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,                   \
                               (blasint)(ta ? K : M), (blasint)(ta ? M : K), alpha, A,          \
                               (blasint)lda, B, (blasint)(tb ? 1 : ldb), beta, C,               \
                               (blasint)ldc);                                                   \
            return;                                                                             \
        }                                                                                       \
        HG_CBLAS(BLAS)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,                           \
                       tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K,      \
                       alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);         \
    }                                                                                           \
                                                                                                \
    typedef struct {                                                                            \
        bool ta, tb;                                                                            \
        int64_t M, N, K, lda, ldb, ldc, sa, sb, sc;                                             \
        T alpha, beta;                                                                          \
        const T *A, *B;                                                                         \
        T *C;                                                                                   \
    } batch_job_##SUFFIX;                                                                       \
                                                                                                \
    static void batch_range_##SUFFIX(void *ctx, int64_t begin, int64_t end)                     \
    {                                                                                           \
        const batch_job_##SUFFIX *j = ctx;                                                      \
        for (int64_t i = begin; i < end; i++)                                                   \
            hg_gemm_##SUFFIX(j->ta, j->tb, j->M, j->N, j->K, j->alpha, j->A + i * j->sa,         \
                             j->lda, j->B + i * j->sb, j->ldb, j->beta, j->C + i * j->sc,       \
                             j->ldc);                                                           \
    }                                                                                           \
                                                                                                \
    void hg_gemm_batch_##SUFFIX(bool ta, bool tb, int64_t batch, int64_t M, int64_t N,          \
                                int64_t K, T alpha, const T *A, int64_t lda, int64_t sa,        \
                                const T *B, int64_t ldb, int64_t sb, T beta, T *C,              \
                                int64_t ldc, int64_t sc)                                        \
    {                                                                                           \
        batch_job_##SUFFIX j = {ta, tb, M, N, K, lda, ldb, ldc, sa, sb, sc,                     \
                                alpha, beta, A, B, C};                                          \
        double mnk = (double)M * (double)N * (double)K;                                         \
        if (batch > 1 && mnk <= ((M == 1 || N == 1) ? SMALL_GEMV : SMALL_MNK)) {                \
            int64_t per = (int64_t)mnk > 0 ? (int64_t)mnk : 1;                                  \
            hg_parallel_for(batch, (BATCH_GRAIN_WORK + per - 1) / per, batch_range_##SUFFIX,    \
                            &j);                                                                \
        } else {                                                                                \
            batch_range_##SUFFIX(&j, 0, batch);                                                 \
        }                                                                                       \
    }

GEMM_IMPL(float, f32, sgemm, sgemv)
GEMM_IMPL(double, f64, dgemm, dgemv)
