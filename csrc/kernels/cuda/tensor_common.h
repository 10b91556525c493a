/* What the GPU kernels of the tensor families (tensor.cu: ops/tensor_extra.c, grad_util.c,
 * infer_util.c; tensor_num.cu: ops/tensor_num.c) share: element access of any dtype through
 * double or int64 exactly as ops/tx_util.h reads and writes on the CPU, launch helpers, and the
 * (kept, reduced) walk that _sum_to_like and moments use.
 *
 * The CPU forwards of these families go through tx_ld/tx_st, one code path for every dtype; the
 * kernels do the same with a switch on the dtype that is uniform across a launch, so their
 * conversions (floats truncated toward zero with NaN as 0, int32/int8/uint8 stores wrapping,
 * float16 through float) are the CPU's. Internal to csrc/kernels/cuda; device code: included only by the .cu files (nvcc). */
#ifndef HG_KERNELS_CUDA_TENSOR_COMMON_H
#define HG_KERNELS_CUDA_TENSOR_COMMON_H

#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/kernel_util.h"

namespace hg_tx
{

/* IEEE half <-> float as core/half.h converts (round to nearest even; NaN kept quiet with its
 * sign), so float16 results have the CPU's bits. */
__device__ __forceinline__ float h2f(uint16_t h)
{
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
        return __uint_as_float(((uint32_t)(h & 0x8000) << 16) | 0x7f800000u |
                               ((uint32_t)(h & 0x3ff) << 13));
    return __half2float(__ushort_as_half(h));
}

__device__ __forceinline__ uint16_t f2h(float f)
{
    if (f != f) return (uint16_t)(((__float_as_uint(f) >> 16) & 0x8000) | 0x7e00);
    return __half_as_ushort(__float2half_rn(f));
}

/* tx_f2i: float to integer as C++'s static_cast, defined for NaN (0) and out-of-range values. */
__device__ __forceinline__ int64_t f2i(double v)
{
    if (v != v) return 0;
    if (v <= -9.2e18) return INT64_MIN;
    if (v >= 9.2e18) return INT64_MAX;
    return (int64_t)v;
}

/* tx_ld: element i of dtype dt as double (bool and uint8 as 0..255). */
__device__ __forceinline__ double ld(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return h2f(((const uint16_t *)p)[i]);
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* tx_ldi: integers exactly, floats through f2i. */
__device__ __forceinline__ int64_t ldi(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case HG_DTYPE_I64: return ((const int64_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_U8:
    case HG_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    default: return f2i(ld(p, dt, i));
    }
}

/* Integer stores wrap as two's complement (gcc's conversion of an out-of-range value). */
__device__ __forceinline__ int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
__device__ __forceinline__ int8_t wrap8(int64_t v) { return (int8_t)(uint8_t)(uint64_t)v; }

/* tx_st: v stored as dtype dt. */
__device__ __forceinline__ void st(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case HG_DTYPE_F64: ((double *)p)[i] = v; break;
    case HG_DTYPE_F16: ((uint16_t *)p)[i] = f2h((float)v); break;
    case HG_DTYPE_I32: ((int32_t *)p)[i] = wrap32(f2i(v)); break;
    case HG_DTYPE_I64: ((int64_t *)p)[i] = f2i(v); break;
    case HG_DTYPE_I8: ((int8_t *)p)[i] = wrap8(f2i(v)); break;
    case HG_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)f2i(v); break;
    }
}

/* tx_sti: integer store with two's-complement wrap. */
__device__ __forceinline__ void sti(void *p, int dt, int64_t i, int64_t v)
{
    switch (dt) {
    case HG_DTYPE_I64: ((int64_t *)p)[i] = v; break;
    case HG_DTYPE_I32: ((int32_t *)p)[i] = wrap32(v); break;
    case HG_DTYPE_I8: ((int8_t *)p)[i] = wrap8(v); break;
    case HG_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case HG_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: st(p, dt, i, (double)v); break;
    }
}

/* What ld would read back after st(v) / sti(v): the value rounded to dtype dt. */
__device__ __forceinline__ double rnd(int dt, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: return (float)v;
    case HG_DTYPE_F64: return v;
    case HG_DTYPE_F16: return h2f(f2h((float)v));
    case HG_DTYPE_I32: return wrap32(f2i(v));
    case HG_DTYPE_I64: return (double)f2i(v);
    case HG_DTYPE_I8: return wrap8(f2i(v));
    case HG_DTYPE_BOOL: return v != 0;
    default: return (uint8_t)(uint64_t)f2i(v);
    }
}

__device__ __forceinline__ int64_t rndi(int dt, int64_t v)
{
    switch (dt) {
    case HG_DTYPE_I32: return wrap32(v);
    case HG_DTYPE_I8: return wrap8(v);
    case HG_DTYPE_U8: return (uint8_t)(uint64_t)v;
    case HG_DTYPE_BOOL: return v != 0;
    default: return v;
    }
}

/* ---- host side ---------------------------------------------------------------------------- */

/* One thread per element of n (grid-stride), on stream s; n <= 0 launches nothing. */
template <typename... P, typename... A>
hg_status launch(const char *name, cudaStream_t s, int64_t n, void (*k)(P...), A... args)
{
    if (n <= 0) return HG_OK;
    k<<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(args...);
    return hg_cuda_launched(name);
}

/* ---- walking a reduction: kept dims (one output each) and reduced dims ----------------------- */

/* x's dims of size > 1 split into kept and reduced ones, with x's strides. Output o is the
 * row-major index over the kept dims (what the CPU's output layout is for _sum_to_like and
 * moments), reduced index r the row-major index over the reduced ones, so walking r upwards
 * walks x's elements of one output in increasing address order, as the CPU loops do. */
struct red_plan {
    int nk, nr;
    int64_t ks[HG_MAX_NDIM], kst[HG_MAX_NDIM], rs[HG_MAX_NDIM], rst[HG_MAX_NDIM];
    int64_t nred; /* elements per output */
    int64_t last; /* length of x's last dim when it is reduced and longer than 1, else 1 */
};

static inline red_plan make_red_plan(const hg_tensor *x, const bool *red)
{
    red_plan p{};
    int64_t st[HG_MAX_NDIM], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    p.nk = p.nr = 0;
    p.nred = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (red[d]) p.nred *= x->shape[d];
        if (x->shape[d] == 1) continue;
        if (red[d]) {
            p.rs[p.nr] = x->shape[d];
            p.rst[p.nr++] = st[d];
        } else {
            p.ks[p.nk] = x->shape[d];
            p.kst[p.nk++] = st[d];
        }
    }
    const int l = x->ndim - 1;
    p.last = l >= 0 && red[l] && x->shape[l] > 1 ? x->shape[l] : 1;
    return p;
}

__device__ __forceinline__ int64_t plan_kept(const red_plan &p, int64_t o)
{
    int64_t b = 0;
    for (int d = p.nk - 1; d >= 0; d--) {
        b += (o % p.ks[d]) * p.kst[d];
        o /= p.ks[d];
    }
    return b;
}

__device__ __forceinline__ int64_t plan_red(const red_plan &p, int64_t r)
{
    int64_t b = 0;
    for (int d = p.nr - 1; d >= 0; d--) {
        b += (r % p.rs[d]) * p.rst[d];
        r /= p.rs[d];
    }
    return b;
}

/* One block per output beats one thread per output when each output sums many elements and
 * there are too few outputs to fill the GPU; the block's tree sum then orders the additions
 * differently from the CPU (float results agree to rounding). */
static inline bool use_block_reduce(int64_t nred, int64_t nout)
{
    return nred >= 256 && nout < 65536;
}

static inline unsigned block_grid(int64_t nout)
{
    return (unsigned)(nout < HG_CUDA_MAX_BLOCKS ? (nout < 1 ? 1 : nout) : HG_CUDA_MAX_BLOCKS);
}

/* Sum over the block of each thread's v (blockDim.x == HG_CUDA_THREADS, a power of two);
 * every thread gets the total. sh has HG_CUDA_THREADS elements. */
template <typename A> __device__ A block_sum(A v, A *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = HG_CUDA_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    A t = sh[0];
    __syncthreads(); /* sh is reused by the next call */
    return t;
}

} // namespace hg_tx

#endif
