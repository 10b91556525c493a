/* What the GPU kernels of the detection and spatial-sampling ops (spatial.cu, detect.cu)
 * share: typed element access (float16 is computed in float32, as the CPU's float16 paths
 * do), products that nvcc may not fuse into an FMA (the CPU build does not contract, so a
 * fused a * b + c would round differently from the CPU), double atomics, and a scratch buffer
 * for gradients that are scattered (accumulated in a wider type, then converted once), and
 * device scratch carved into aligned pieces.
 * Device code: included only by the .cu files (nvcc). */
#ifndef HG_KERNELS_CUDA_DET_COMMON_H
#define HG_KERNELS_CUDA_DET_COMMON_H

#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/kernel_util.h"
#include "kernels/cuda/tensor_common.h"

namespace hg_det
{

/* The compute type of a storage type: float16 (stored as uint16_t) computes in float. */
template <typename S> struct acc_of {
    typedef S type;
};
template <> struct acc_of<uint16_t> {
    typedef float type;
};

__device__ __forceinline__ float ldv(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ double ldv(const double *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ldv(const uint16_t *p, int64_t i) { return hg_tx::h2f(p[i]); }
__device__ __forceinline__ void stv(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void stv(double *p, int64_t i, double v) { p[i] = v; }
__device__ __forceinline__ void stv(uint16_t *p, int64_t i, float v) { p[i] = hg_tx::f2h(v); }

/* Products and sums rounded on their own (never contracted into an FMA). */
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }

/* Runs the statement (the macro's last arguments) with S the storage type of float dtype DT (float, double, or uint16_t for
 * float16); other dtypes return an error naming the op. */
#define HG_DET_DISPATCH(OP, DT, ...)                                                           \
    switch (DT) {                                                                              \
    case HG_DTYPE_F32: {                                                                       \
        typedef float S;                                                                       \
        __VA_ARGS__;                                                                           \
    } break;                                                                                   \
    case HG_DTYPE_F64: {                                                                       \
        typedef double S;                                                                      \
        __VA_ARGS__;                                                                           \
    } break;                                                                                   \
    case HG_DTYPE_F16: {                                                                       \
        typedef uint16_t S;                                                                    \
        __VA_ARGS__;                                                                           \
    } break;                                                                                   \
    default: return bad_dtype(OP, (hg_dtype)(DT));                                            \
    }

/* Converts n accumulated values of type A into dst (storage S). */
template <typename A, typename S> __global__ void store_kernel(const A *src, S *dst, int64_t n)
{
    GRID_LOOP(i, n) stv(dst, i, (typename acc_of<S>::type)src[i]);
}

/* A zeroed accumulator of type A for tensor t: t's own memory when its storage type is A,
 * else device scratch (finish converts it into t and frees it). */
template <typename A> struct accum {
    A *p;
    bool own;
    size_t nbytes;
};

template <typename A, typename S>
hg_status accum_begin(const hg_op_def *op, int dev, cudaStream_t s, hg_tensor *t, accum<A> *acc)
{
    acc->own = false;
    acc->nbytes = (size_t)t->size * sizeof(A);
    if (std::is_same<A, S>::value) {
        acc->p = (A *)hg_data(t);
    } else {
        void *w = NULL;
        HG_TRY(hg_device_alloc(dev, acc->nbytes ? acc->nbytes : sizeof(A), &w));
        acc->p = (A *)w;
        acc->own = true;
    }
    if (acc->nbytes) {
        hg_status st = hg_cuda_status(cudaMemsetAsync(acc->p, 0, acc->nbytes, s), op->name);
        if (st != HG_OK) {
            if (acc->own) hg_device_free(dev, acc->p, acc->nbytes ? acc->nbytes : sizeof(A));
            return st;
        }
    }
    return HG_OK;
}

/* Stores the accumulator into t (when it is scratch) and frees the scratch; st is the status
 * of the work in between (returned unless the store fails). */
template <typename A, typename S>
hg_status accum_end(const hg_op_def *op, int dev, cudaStream_t s, hg_tensor *t, accum<A> *acc,
                    hg_status st)
{
    if (!acc->own) return st;
    if (st == HG_OK && t->size > 0) {
        store_kernel<A, S>
            <<<hg_cuda_blocks(t->size), HG_CUDA_THREADS, 0, s>>>(acc->p, (S *)hg_data(t), t->size);
        st = hg_cuda_launched(op->name);
    }
    hg_device_free(dev, acc->p, acc->nbytes ? acc->nbytes : sizeof(A));
    return st;
}

/* Device scratch carved into aligned pieces; freed in one call. */
struct scratch {
    char *p;
    size_t n, used;
};

static inline size_t align64(size_t b) { return (b + 63) & ~(size_t)63; }

/* The scratch bytes of count elements of el bytes (carve takes at least one). */
static inline size_t piece(size_t el, int64_t count)
{
    return align64(el * (size_t)(count > 0 ? count : 1));
}

template <typename X> inline X *carve(scratch *sc, int64_t count)
{
    X *r = (X *)(sc->p + sc->used);
    sc->used += piece(sizeof(X), count);
    return r;
}

} // namespace hg_det

#endif
