/* What the CUDA build's kernels share: the stream of each device and error translation (from
 * the core's CUDA runtime, core/cuda_runtime.h), launch geometry, and cuBLAS through a library
 * loaded at first use (csrc/kernels/cuda/cublas.c). Included by the .cu kernels (nvcc) and the
 * C files of kernels/cuda (gcc); compiled only with HG_CUDA. */
#ifndef HG_KERNELS_CUDA_RT_H
#define HG_KERNELS_CUDA_RT_H

#include <stdint.h>

#include "core/cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launch geometry for n elements with grid-stride loops: blocks of HG_CUDA_THREADS, at most
 * HG_CUDA_MAX_BLOCKS blocks (the loop covers the rest). */
#define HG_CUDA_THREADS 256
#define HG_CUDA_MAX_BLOCKS 65535
static inline unsigned hg_cuda_blocks(int64_t n)
{
    int64_t b = (n + HG_CUDA_THREADS - 1) / HG_CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b > HG_CUDA_MAX_BLOCKS ? HG_CUDA_MAX_BLOCKS : b);
}

/* cuBLAS, loaded with dlopen at first use (libcublas.so.13 from the nvidia-cublas wheel):
 * column-major GEMM as cuBLAS defines it, on gpu(dev)'s stream. dtype: HG_DTYPE_F32, F64 or F16
 * (F16 accumulates in float32). TF32 is used for float32 only when hg_gpu_set_tf32(1) was
 * called (core/device.h), so float32 results match the CPU by default.
 * Strided-batched: batch matrices at stride_a/b/c elements apart (batch 1: a plain GEMM).
 * Errors name the op and cuBLAS's status. */
hg_status hg_cublas_gemm(int dev, const char *op, hg_dtype dtype, int trans_a, int trans_b,
                         int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                         int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                         double beta, void *c, int64_t ldc, int64_t stride_c, int64_t batch);
/* Row-major convenience: C[M,N] = alpha * op(A) op(B) + beta * C for row-major A, B, C (with
 * their leading dims lda/ldb/ldc in elements), batched with strides. Implemented by swapping the
 * operands of the column-major call. */
hg_status hg_gemm_rm(int dev, const char *op, hg_dtype dtype, int trans_a, int trans_b, int64_t m,
                     int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                     int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, double beta,
                     void *c, int64_t ldc, int64_t stride_c, int64_t batch);

#ifdef __cplusplus
}
#endif

#endif
