/* Row-major GEMM glue over the linked CBLAS: C = alpha * op(A) * op(B) + beta * C, where op(A) is
 * M x K (A stored K x M when ta) and op(B) is K x N (B stored N x K when tb).
 *
 * Shared by dot, batch_dot, FullyConnected and (later) convolution. The BLAS takes 32-bit sizes:
 * callers check hg_gemm_fits() in their shape rule so the kernels never see a size they cannot
 * pass on. Degenerate sizes are handled here (M or N == 0: nothing; K == 0 or alpha == 0:
 * C = beta * C, with beta == 0 writing exact zeros) so callers need no special cases.
 * All functions are thread-safe; they allocate nothing but the packed kernel's buffer, once per
 * thread that runs it (sgemm_packed.h).
 *
 * float32 products with a small side (M, or N, or for some layouts K, at most 8: Dense at small
 * batch, forward and backward), and wide shallow ones (N >= 768, K <= 256, M <= 512: pointwise
 * convolutions over a whole image; gemm.c, WIDE_N; on AVX-512 those with M >= 2K, or K >= 128
 * and N >= 2048, take the packed kernel below) run on our own kernels instead of the BLAS,
 * vectorised for
 * AVX-512F, AVX2+FMA or portable C as the CPU allows (HG_GEMM_KERNEL=blas|portable|avx2|avx512
 * in the environment, read once, forces one; a set the CPU lacks falls back to the best it has).
 */
#ifndef HG_KERNELS_CPU_GEMM_H
#define HG_KERNELS_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/post.h"
#include "hybridgluon/hybridgluon.h" /* HG_API */

/* Largest M, N, K or leading dimension the 32-bit BLAS interface accepts. */
#define HG_GEMM_MAX_DIM INT32_MAX

/* True when m, n and k (all >= 0) can be passed to the BLAS. */
static inline bool hg_gemm_fits(int64_t m, int64_t n, int64_t k)
{
    return m <= HG_GEMM_MAX_DIM && n <= HG_GEMM_MAX_DIM && k <= HG_GEMM_MAX_DIM;
}

HG_API void hg_gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                        const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                        float *C, int64_t ldc);
HG_API void hg_gemm_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                        const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                        double *C, int64_t ldc);

/* C = post(alpha * op(A) * op(B) + beta * C + bias[i]) (bias: one per row of C, or NULL; post
 * NULL or HG_POST_NONE: none) in one pass, when the product runs on the packed AVX-512 kernel
 * (sgemm_packed.h) or the small-side row-update kernel (the wide shallow products of pointwise
 * convolutions): they apply the bias and activation to each tile of C as they store it.
 * Returns false, having done nothing, for a product that takes another path: the caller then
 * calls hg_gemm and applies them itself, which gives the same bits (same kernels, same
 * formulas). The float64 one always returns false. */
HG_API bool hg_gemm_epi_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                            float *C, int64_t ldc, const float *bias, const hg_post *post);
bool hg_gemm_epi_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                     const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                     double *C, int64_t ldc, const double *bias, const hg_post *post);

/* `batch` independent GEMMs; matrix i uses A + i*sa, B + i*sb, C + i*sc (strides in elements;
 * sa or sb may be 0 to reuse one operand). Many small products are spread over the kernels' thread
 * pool (each BLAS call then runs single-threaded in its worker); large ones run one after another
 * with the BLAS's own threading. */
void hg_gemm_batch_f32(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                       float alpha, const float *A, int64_t lda, int64_t sa, const float *B,
                       int64_t ldb, int64_t sb, float beta, float *C, int64_t ldc, int64_t sc);
void hg_gemm_batch_f64(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                       double alpha, const double *A, int64_t lda, int64_t sa, const double *B,
                       int64_t ldb, int64_t sb, double beta, double *C, int64_t ldc, int64_t sc);

/* The kernel set for small-side float32 products: BLAS (none of ours), portable C, AVX2+FMA,
 * AVX-512F. hg_gemm_set_kernel picks one (HG_GEMM_KERNEL_AUTO: the best the CPU has; a set it
 * lacks: the same) and returns the one now in effect; for tests and benchmarks. */
enum {
    HG_GEMM_KERNEL_AUTO = -1,
    HG_GEMM_KERNEL_BLAS = 0,
    HG_GEMM_KERNEL_PORTABLE = 1,
    HG_GEMM_KERNEL_AVX2 = 2,
    HG_GEMM_KERNEL_AVX512 = 3,
};
HG_API int hg_gemm_kernel(void);
HG_API int hg_gemm_set_kernel(int level);

/* Which code a float32 product of these operands runs on with the kernel set now in effect:
 * HG_GEMM_ROUTE_BLAS (the BLAS, one call per thread's share), HG_GEMM_ROUTE_SMALL (our
 * small-side kernels) or HG_GEMM_ROUTE_PACKED (our packed AVX-512 kernel). Our kernels give the
 * same bits whatever the thread count; the BLAS need not (OpenBLAS picks its kernels by the
 * shape of each share). For tests. */
enum { HG_GEMM_ROUTE_BLAS = 0, HG_GEMM_ROUTE_SMALL = 1, HG_GEMM_ROUTE_PACKED = 2 };
HG_API int hg_gemm_route_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda,
                             int64_t ldb, int64_t ldc);

#endif
