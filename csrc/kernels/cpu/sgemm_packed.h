/* Float32 GEMM on one thread for AVX-512 CPUs (sgemm_packed.c): row-major
 * C = post(alpha * op(A) * op(B) + beta * C + bias[i]) with gemm.h's conventions (beta 0 never
 * reads C; bias, one per row of C, and post may be NULL), the bias and post applied to each tile
 * of C as it is stored, where they were a pass over C of their own.
 * gemm.c sends it the products it would give the BLAS, one per pool thread's share of C.
 * Returns false, having done nothing, where the CPU lacks AVX-512F or the thread's packing
 * buffer (1 MiB, kept for the thread's life) cannot be allocated: the caller then uses the
 * BLAS. M, N, K > 0. Thread-safe. */
#ifndef HG_KERNELS_CPU_SGEMM_PACKED_H
#define HG_KERNELS_CPU_SGEMM_PACKED_H

#include <stdbool.h>
#include <stdint.h>

#include "core/post.h"

bool hg_sgemm_packed_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                            float *C, int64_t ldc, const float *bias, const hg_post *post);

#endif
