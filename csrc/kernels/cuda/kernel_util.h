/* What the .cu kernel files share on the host side: the grid-stride loop, the signature of an
 * op's GPU forward and the stream it runs on, and the small helpers every family needs (byte
 * size, whole-buffer copy and zero fill on the stream, the unsupported-dtype error). Internal
 * to csrc/kernels/cuda; included only by the .cu files (nvcc). */
#ifndef HG_KERNELS_CUDA_KERNEL_UTIL_H
#define HG_KERNELS_CUDA_KERNEL_UTIL_H

#include <stdint.h>

#include "kernels/cuda/cuda_rt.h"

/* One thread per index i of [0, n), grid-stride: any grid covers any n. */
#define GRID_LOOP(i, n)                                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x,                           \
                 step_ = (int64_t)gridDim.x * blockDim.x;                                      \
         i < (n); i += step_)

/* An op's GPU forward (hg_gpu_kernel.forward). */
#define GPU_FWD(NAME)                                                                          \
    hg_status NAME(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,    \
                   hg_tensor *const *in, int nout, hg_tensor *const *out)

/* `s`, the stream of the forward's device (inside a GPU_FWD). */
#define STREAM                                                                                 \
    cudaStream_t s;                                                                            \
    HG_TRY(stream_of(ctx->device_id, &s))

/* The launch configuration of a grid-stride kernel over n elements on stream s. */
#define LAUNCH(n) <<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>

/* The stream of gpu(dev); on failure the status of the error hg_cuda_stream set. */
static inline hg_status stream_of(int dev, cudaStream_t *s)
{
    *s = hg_cuda_stream(dev);
    if (*s) return HG_OK;
    hg_status st = hg_cuda_use(dev);
    return st != HG_OK ? st : HG_ERR_INTERNAL;
}

static inline size_t nbytes_of(const hg_tensor *t)
{
    return (size_t)t->size * hg_dtype_size(t->dtype);
}

/* Copies all of src into dst (same byte size) unless they are the same buffer. */
static inline hg_status copy_whole(const hg_op_def *op, cudaStream_t s, hg_tensor *dst,
                                   const hg_tensor *src)
{
    size_t n = nbytes_of(src);
    if (n == 0 || hg_data(dst) == hg_data(src)) return HG_OK;
    return hg_cuda_status(
        cudaMemcpyAsync(hg_data(dst), hg_data(src), n, cudaMemcpyDeviceToDevice, s), op->name);
}

static inline hg_status zero_fill(const hg_op_def *op, cudaStream_t s, hg_tensor *t)
{
    size_t n = nbytes_of(t);
    if (n == 0) return HG_OK;
    return hg_cuda_status(cudaMemsetAsync(hg_data(t), 0, n, s), op->name);
}

static inline hg_status bad_dtype(const hg_op_def *op, hg_dtype dt)
{
    return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                    hg_dtype_name(dt));
}

#endif
