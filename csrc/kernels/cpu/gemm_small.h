/* Own float32 kernels for matrix products with one small side (batch-1..8 Dense forward and
 * backward), where a BLAS pays for packing or threading that the work cannot repay. Internal to
 * gemm.c, which chooses them; each exists once per instruction set (AVX-512F, AVX2+FMA and
 * portable C), compiled from the one body in gemm_small_tmpl.h and picked at run time.
 *
 * Both kernels compute C = alpha * (sum over k) + beta * C, never reading C when beta is 0 (so a
 * recycled output holding NaN is overwritten), and work on a sub-range of C so that gemm.c can
 * split the product over threads; they are thread-safe and allocate nothing.
 */
#ifndef HG_KERNELS_CPU_GEMM_SMALL_H
#define HG_KERNELS_CPU_GEMM_SMALL_H

#include <stdint.h>

#include "core/post.h"

typedef struct {
    int64_t M, N, K;
    float alpha, beta;
    /* dot: row i of A at A + i*lda, contiguous over k. axpy: A(i, k) at A[i*ars + k*acs]. */
    const float *A;
    int64_t lda, ars, acs;
    /* dot: row j of B (length K) at B + j*ldb. axpy: row k of B (length N) at B + k*ldb. */
    const float *B;
    int64_t ldb;
    /* C(i, j) at C[i*rsc + j*csc]; axpy needs csc == 1. */
    float *C;
    int64_t rsc, csc;
    /* axpy only, both may be NULL: C(i, :) = post(... + bias[i]), applied to each row of a tile
     * as it is stored (the formulas of core/post.h, so the bits of a pass after the product) */
    const float *bias;
    const hg_post *post;
} hg_gemm_small_args;

/* dot ("NT", dot-product form): C(i, j) = alpha * <A row i, B row j> + beta * C(i, j) for all
 * i < M and j in [j0, j1). Meant for small M: B is read once per block of rows of C.
 * axpy ("NN", row-update form): C(i, :) = alpha * sum_k A(i, k) * (B row k) + beta * C(i, :) for
 * i in [i0, i1) and columns [n0, n1). Meant for small M (B read once) or small K (B's K rows
 * stay in cache while every row of C is written once). */
typedef void (*hg_gemm_dot_fn)(const hg_gemm_small_args *p, int64_t j0, int64_t j1);
typedef void (*hg_gemm_axpy_fn)(const hg_gemm_small_args *p, int64_t i0, int64_t i1, int64_t n0,
                                int64_t n1);

void hg_gemm_dot_portable(const hg_gemm_small_args *p, int64_t j0, int64_t j1);
void hg_gemm_axpy_portable(const hg_gemm_small_args *p, int64_t i0, int64_t i1, int64_t n0,
                           int64_t n1);

#if defined(__x86_64__) && defined(__GNUC__)
#define HG_GEMM_HAVE_X86 1
void hg_gemm_dot_avx2(const hg_gemm_small_args *p, int64_t j0, int64_t j1);
void hg_gemm_axpy_avx2(const hg_gemm_small_args *p, int64_t i0, int64_t i1, int64_t n0, int64_t n1);
void hg_gemm_dot_avx512(const hg_gemm_small_args *p, int64_t j0, int64_t j1);
void hg_gemm_axpy_avx512(const hg_gemm_small_args *p, int64_t i0, int64_t i1, int64_t n0,
                         int64_t n1);
#endif

#endif
