/* GPU kernels of the indexing ops (ops/indexing.c): take, pick, one_hot, where, clip, Embedding,
 * SequenceMask and the gradient ops _backward_take, _backward_pick, _backward_clip, on every
 * dtype the CPU accepts.
 *
 * Index arrays may have any dtype and are read as the CPU reads them: floats truncated toward
 * zero, NaN and values beyond int64 saturated (f2i), then mapped into range by the op's mode.
 * One thread per output element reads its index directly (a uniform switch on the index dtype),
 * so no conversion pass or workspace is needed. Gathers move elements by size, so every dtype
 * works.
 *
 * take(mode='raise') cannot check the indices without waiting for the GPU, so on the GPU an
 * out-of-range index is clipped (as mode='clip') instead of failing: no kernel ever reads or
 * writes out of bounds. _backward_take adds with atomics (repeated indices accumulate), so its
 * float sums may differ from the CPU's in the last bits (the order of the additions).
 */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "ops/indexing.h"
}

namespace
{

/* ---- shared helpers -------------------------------------------------------------------------- */

/* An index array: device pointer and dtype. */
struct idx_arr {
    const void *p;
    int dt;
};

idx_arr idx_of(const hg_tensor *t) { return idx_arr{hg_data(t), (int)t->dtype}; }

/* indexing.c's f2i: NaN counts as out of range everywhere. */
__device__ __forceinline__ int64_t f2i(double v)
{
    if (v != v || v <= -9.2e18) return INT64_MIN;
    if (v >= 9.2e18) return INT64_MAX;
    return (int64_t)v;
}

/* Element i of an index array as int64 (indexing.c's load_idx). */
__device__ __forceinline__ int64_t idx_at(idx_arr a, int64_t i)
{
    switch (a.dt) {
    case HG_DTYPE_F32: return f2i(((const float *)a.p)[i]);
    case HG_DTYPE_F64: return f2i(((const double *)a.p)[i]);
    case HG_DTYPE_F16: return f2i(h2f(((const uint16_t *)a.p)[i]));
    case HG_DTYPE_I32: return ((const int32_t *)a.p)[i];
    case HG_DTYPE_I64: return ((const int64_t *)a.p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)a.p)[i];
    default: return ((const uint8_t *)a.p)[i]; /* uint8, bool */
    }
}

/* Maps an index into [0, n) by mode (n > 0). 'raise' clips on the GPU (see the file comment). */
__device__ __forceinline__ int64_t fix_index(int64_t j, int64_t n, int mode)
{
    if (mode == MODE_WRAP) {
        int64_t m = j % n;
        return m < 0 ? m + n : m;
    }
    return j < 0 ? 0 : (j >= n ? n - 1 : j);
}

/* Runs LAUNCH(T) with T the unsigned type of the element size es; false for another size. */
#define BY_SIZE(es, LAUNCH)                                                                    \
    ((es) == 1   ? (LAUNCH(uint8_t), true)                                                     \
     : (es) == 2 ? (LAUNCH(uint16_t), true)                                                    \
     : (es) == 4 ? (LAUNCH(uint32_t), true)                                                    \
     : (es) == 8 ? (LAUNCH(uint64_t), true)                                                    \
                 : false)

/* ---- take, Embedding ------------------------------------------------------------------------- */

/* y[o, j, i] = x[o, fix(idx[j]), i] over [outer, m, inner], x of [outer, n, inner]. */
template <typename T>
__global__ void take_kernel(const T *x, T *y, idx_arr idx, int64_t m, int64_t n, int64_t inner,
                            int mode, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t i = e % inner, t = e / inner, jj = t % m, o = t / m;
        const int64_t k = fix_index(idx_at(idx, jj), n, mode);
        y[e] = x[(o * n + k) * inner + i];
    }
}

hg_status take_launch(const hg_op_def *op, cudaStream_t s, const hg_tensor *x, idx_arr idx,
                      int64_t m, int64_t n, int64_t inner, int mode, hg_tensor *y)
{
    const int64_t total = y->size;
    if (total == 0) return HG_OK;
#define TAKE(T)                                                                                \
    take_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                          \
        (const T *)hg_data(x), (T *)hg_data(y), idx, m, n, inner, mode, total)
    if (!BY_SIZE(hg_dtype_size(x->dtype), TAKE)) return bad_dtype(op, x->dtype);
#undef TAKE
    return hg_cuda_launched(op->name);
}

GPU_FWD(take_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int axis = (int)(a->v[TK_AXIS].i < 0 ? a->v[TK_AXIS].i + x->ndim : a->v[TK_AXIS].i);
    int64_t n = x->shape[axis], inner = 1;
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    return take_launch(op, s, x, idx_of(in[1]), in[1]->size, n, inner, (int)a->v[TK_MODE].i,
                       out[0]);
}

/* Embedding is take(weight, data, axis=0, mode='clip'). */
GPU_FWD(embedding_gpu)
{
    STREAM;
    const hg_tensor *w = in[1];
    return take_launch(op, s, w, idx_of(in[0]), in[0]->size, w->shape[0], w->shape[1], MODE_CLIP,
                       out[0]);
}

/* _backward_take(ograd, indices, a): zeros of a's shape plus ograd's rows added at the indices.
 * Signed integers add as their unsigned twins (two's-complement wrap-around, as the CPU). */
__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(__half *p, __half v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(uint32_t *p, uint32_t v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(uint64_t *p, uint64_t v)
{
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
/* A byte: compare-and-swap on its aligned 32-bit word (device allocations are 256-byte aligned
 * and at least a word, so the word lies inside the allocation). */
__device__ __forceinline__ void atomic_add(uint8_t *p, uint8_t v)
{
    unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3);
    const unsigned shift = (unsigned)((uintptr_t)p & 3) * 8;
    unsigned old = *w, assumed;
    do {
        assumed = old;
        const unsigned b = ((assumed >> shift) + v) & 0xffu;
        old = atomicCAS(w, assumed, (assumed & ~(0xffu << shift)) | (b << shift));
    } while (old != assumed);
}

template <typename T>
__global__ void scatter_add_kernel(const T *g, T *x, idx_arr idx, int64_t m, int64_t n,
                                   int64_t inner, int mode, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t i = e % inner, t = e / inner, jj = t % m, o = t / m;
        const int64_t k = fix_index(idx_at(idx, jj), n, mode);
        atomic_add(&x[(o * n + k) * inner + i], g[e]);
    }
}

GPU_FWD(bwd_take_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    hg_tensor *dx = out[0];
    int axis = (int)(a->v[TK_AXIS].i < 0 ? a->v[TK_AXIS].i + dx->ndim : a->v[TK_AXIS].i);
    int64_t n = dx->shape[axis], inner = 1;
    for (int d = axis + 1; d < dx->ndim; d++) inner *= dx->shape[d];
    if (dx->size == 0) return HG_OK;
    HG_TRY(zero_fill(op, s, dx));
    const int64_t total = dy->size, m = in[1]->size;
    if (total == 0) return HG_OK;
    const idx_arr idx = idx_of(in[1]);
    const int mode = (int)a->v[TK_MODE].i;
    const unsigned blocks = hg_cuda_blocks(total);
#define SCATTER(T)                                                                             \
    scatter_add_kernel<T><<<blocks, HG_CUDA_THREADS, 0, s>>>(                                  \
        (const T *)hg_data(dy), (T *)hg_data(dx), idx, m, n, inner, mode, total)
    switch (dx->dtype) {
    case HG_DTYPE_F32: SCATTER(float); break;
    case HG_DTYPE_F64: SCATTER(double); break;
    case HG_DTYPE_F16: SCATTER(__half); break;
    case HG_DTYPE_I32: SCATTER(uint32_t); break;
    case HG_DTYPE_I64: SCATTER(uint64_t); break;
    case HG_DTYPE_I8:
    case HG_DTYPE_U8: SCATTER(uint8_t); break;
    default: return bad_dtype(op, dx->dtype);
    }
#undef SCATTER
    return hg_cuda_launched(op->name);
}

/* ---- pick ------------------------------------------------------------------------------------ */

/* y[r] = x[(o * n + fix(idx[r])) * inner + i], r = o * inner + i; the index has one entry per
 * output element (the data's shape without the axis, or with it kept as 1). */
template <typename T>
__global__ void pick_kernel(const T *x, T *y, idx_arr idx, int64_t n, int64_t inner, int mode,
                            int64_t total)
{
    GRID_LOOP(r, total)
    {
        const int64_t o = r / inner, i = r % inner;
        y[r] = x[(o * n + fix_index(idx_at(idx, r), n, mode)) * inner + i];
    }
}

/* The adjoint: dx (zeroed) gets dy at the picked places; each place is picked once. */
template <typename T>
__global__ void unpick_kernel(const T *g, T *x, idx_arr idx, int64_t n, int64_t inner, int mode,
                              int64_t total)
{
    GRID_LOOP(r, total)
    {
        const int64_t o = r / inner, i = r % inner;
        x[(o * n + fix_index(idx_at(idx, r), n, mode)) * inner + i] = g[r];
    }
}

GPU_FWD(pick_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int axis = (int)(a->v[PK_AXIS].i < 0 ? a->v[PK_AXIS].i + x->ndim : a->v[PK_AXIS].i);
    int64_t n = x->shape[axis], inner = 1, total = out[0]->size;
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    if (total == 0) return HG_OK;
    const idx_arr idx = idx_of(in[1]);
    const int mode = (int)a->v[PK_MODE].i;
#define PICK(T)                                                                                \
    pick_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                          \
        (const T *)hg_data(x), (T *)hg_data(out[0]), idx, n, inner, mode, total)
    if (!BY_SIZE(hg_dtype_size(x->dtype), PICK)) return bad_dtype(op, x->dtype);
#undef PICK
    return hg_cuda_launched(op->name);
}

GPU_FWD(bwd_pick_gpu)
{
    STREAM;
    hg_tensor *dx = out[0];
    int axis = (int)(a->v[PK_AXIS].i < 0 ? a->v[PK_AXIS].i + dx->ndim : a->v[PK_AXIS].i);
    int64_t n = dx->shape[axis], inner = 1, total = in[0]->size;
    for (int d = axis + 1; d < dx->ndim; d++) inner *= dx->shape[d];
    HG_TRY(zero_fill(op, s, dx));
    if (total == 0) return HG_OK;
    const idx_arr idx = idx_of(in[1]);
    const int mode = (int)a->v[PK_MODE].i;
#define UNPICK(T)                                                                              \
    unpick_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                        \
        (const T *)hg_data(in[0]), (T *)hg_data(dx), idx, n, inner, mode, total)
    if (!BY_SIZE(hg_dtype_size(dx->dtype), UNPICK)) return bad_dtype(op, dx->dtype);
#undef UNPICK
    return hg_cuda_launched(op->name);
}

/* ---- one_hot --------------------------------------------------------------------------------- */

/* y[r, c] = on where the index of r (read as the CPU's load_idx, no mode) is c, else off. */
template <typename T>
__global__ void one_hot_kernel(idx_arr idx, T *y, int64_t depth, T on, T off, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t r = e / depth, c = e % depth;
        y[e] = idx_at(idx, r) == c ? on : off;
    }
}

GPU_FWD(one_hot_gpu)
{
    STREAM;
    hg_tensor *y = out[0];
    const int64_t depth = a->v[OH_DEPTH].i, total = y->size;
    if (total == 0) return HG_OK;
    unsigned char on[8], off[8];
    memset(on, 0, sizeof on);
    memset(off, 0, sizeof off);
    hg_index_store_value(on, y->dtype, a->v[OH_ON].f);
    hg_index_store_value(off, y->dtype, a->v[OH_OFF].f);
    const idx_arr idx = idx_of(in[0]);
#define ONE_HOT(T)                                                                             \
    do {                                                                                       \
        T von, voff;                                                                           \
        memcpy(&von, on, sizeof von);                                                          \
        memcpy(&voff, off, sizeof voff);                                                       \
        one_hot_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                   \
            idx, (T *)hg_data(y), depth, von, voff, total);                                    \
    } while (0)
    switch (hg_dtype_size(y->dtype)) {
    case 1: ONE_HOT(uint8_t); break;
    case 2: ONE_HOT(uint16_t); break;
    case 4: ONE_HOT(uint32_t); break;
    case 8: ONE_HOT(uint64_t); break;
    default: return bad_dtype(op, y->dtype);
    }
#undef ONE_HOT
    return hg_cuda_launched(op->name);
}

/* ---- where ----------------------------------------------------------------------------------- */

/* Whether condition element i is nonzero (-0.0 counts as zero, NaN as nonzero). */
__device__ __forceinline__ bool cond_at(idx_arr c, int64_t i)
{
    switch (c.dt) {
    case HG_DTYPE_F32: return ((const float *)c.p)[i] != 0;
    case HG_DTYPE_F64: return ((const double *)c.p)[i] != 0;
    case HG_DTYPE_F16: return (((const uint16_t *)c.p)[i] & 0x7fff) != 0;
    case HG_DTYPE_I32: return ((const int32_t *)c.p)[i] != 0;
    case HG_DTYPE_I64: return ((const int64_t *)c.p)[i] != 0;
    default: return ((const uint8_t *)c.p)[i] != 0; /* uint8, int8, bool */
    }
}

/* out[e] = cond[e / row] ? x[e] : y[e]; row is 1 for a condition of x's shape, the size of a
 * row of x for a 1-D condition over x's first axis. */
template <typename T>
__global__ void where_kernel(idx_arr c, const T *x, const T *y, T *o, int64_t row, int64_t total)
{
    GRID_LOOP(e, total) o[e] = cond_at(c, e / row) ? x[e] : y[e];
}

GPU_FWD(where_gpu)
{
    STREAM;
    const hg_tensor *c = in[0], *x = in[1];
    const int64_t total = out[0]->size;
    if (total == 0 || c->size == 0) return HG_OK;
    const int64_t row = x->size / c->size;
    const idx_arr cond = idx_of(c);
#define WHERE(T)                                                                               \
    where_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                         \
        cond, (const T *)hg_data(x), (const T *)hg_data(in[2]), (T *)hg_data(out[0]), row, total)
    if (!BY_SIZE(hg_dtype_size(x->dtype), WHERE)) return bad_dtype(op, x->dtype);
#undef WHERE
    return hg_cuda_launched(op->name);
}

/* ---- clip, _backward_clip -------------------------------------------------------------------- */

/* Element access in the type the CPU's tile computes in (float16 through float32). */
template <typename T> struct acc_t {
    typedef T R;
    static __device__ __forceinline__ R ld(T v) { return v; }
    static __device__ __forceinline__ T st(R v) { return v; }
};
template <> struct acc_t<__half> {
    typedef float R;
    static __device__ __forceinline__ R ld(__half v) { return h2f(__half_as_ushort(v)); }
    static __device__ __forceinline__ __half st(R v) { return __ushort_as_half(f2h(v)); }
};

/* y = v > hi ? hi : (v < lo ? lo : v) (NaN passes), with bounds already in the compute type. */
template <typename T>
__global__ void clip_kernel(const T *x, T *y, typename acc_t<T>::R lo, typename acc_t<T>::R hi,
                            int64_t n)
{
    typedef acc_t<T> A;
    GRID_LOOP(i, n)
    {
        const typename A::R v = A::ld(x[i]);
        y[i] = A::st(v > hi ? hi : (v < lo ? lo : v));
    }
}

/* indexing.c's sat: an integer bound from a double, saturated to the type's range (NaN: 0). */
double sat(double v, double lo, double hi) { return v != v ? 0 : v < lo ? lo : v > hi ? hi : v; }

template <typename T>
void clip_launch(const hg_tensor *x, hg_tensor *y, typename acc_t<T>::R lo, typename acc_t<T>::R hi,
                 cudaStream_t s)
{
    clip_kernel<T><<<hg_cuda_blocks(y->size), HG_CUDA_THREADS, 0, s>>>(
        (const T *)hg_data(x), (T *)hg_data(y), lo, hi, y->size);
}

GPU_FWD(clip_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    const double lo = a->v[CL_MIN].f, hi = a->v[CL_MAX].f;
    if (y->size == 0) return HG_OK;
    switch (x->dtype) {
    case HG_DTYPE_F32: clip_launch<float>(x, y, (float)lo, (float)hi, s); break;
    case HG_DTYPE_F64: clip_launch<double>(x, y, lo, hi, s); break;
    case HG_DTYPE_F16: clip_launch<__half>(x, y, (float)lo, (float)hi, s); break;
    case HG_DTYPE_I32:
        clip_launch<int32_t>(x, y, (int32_t)sat(lo, INT32_MIN, INT32_MAX),
                             (int32_t)sat(hi, INT32_MIN, INT32_MAX), s);
        break;
    case HG_DTYPE_I64:
        clip_launch<int64_t>(x, y, (int64_t)sat(lo, -9.2e18, 9.2e18),
                             (int64_t)sat(hi, -9.2e18, 9.2e18), s);
        break;
    case HG_DTYPE_I8:
        clip_launch<int8_t>(x, y, (int8_t)sat(lo, INT8_MIN, INT8_MAX),
                            (int8_t)sat(hi, INT8_MIN, INT8_MAX), s);
        break;
    case HG_DTYPE_U8:
        clip_launch<uint8_t>(x, y, (uint8_t)sat(lo, 0, UINT8_MAX), (uint8_t)sat(hi, 0, UINT8_MAX),
                             s);
        break;
    default: return bad_dtype(op, x->dtype);
    }
    return hg_cuda_launched(op->name);
}

/* dx = ograd where a_min <= data <= a_max (and where data is NaN), else 0. */
template <typename T>
__global__ void clip_bwd_kernel(const T *g, const T *x, T *dx, typename acc_t<T>::R lo,
                                typename acc_t<T>::R hi, int64_t n)
{
    typedef acc_t<T> A;
    GRID_LOOP(i, n)
    {
        const typename A::R l = A::ld(g[i]), r = A::ld(x[i]);
        dx[i] = A::st((r < lo || r > hi) ? (typename A::R)0 : l);
    }
}

template <typename T>
void clip_bwd_launch(hg_tensor *const *in, hg_tensor *dx, typename acc_t<T>::R lo,
                     typename acc_t<T>::R hi, cudaStream_t s)
{
    clip_bwd_kernel<T><<<hg_cuda_blocks(dx->size), HG_CUDA_THREADS, 0, s>>>(
        (const T *)hg_data(in[0]), (const T *)hg_data(in[1]), (T *)hg_data(dx), lo, hi, dx->size);
}

GPU_FWD(bwd_clip_gpu)
{
    STREAM;
    hg_tensor *dx = out[0];
    const double lo = a->v[CL_MIN].f, hi = a->v[CL_MAX].f;
    if (dx->size == 0) return HG_OK;
    switch (dx->dtype) {
    case HG_DTYPE_F32: clip_bwd_launch<float>(in, dx, (float)lo, (float)hi, s); break;
    case HG_DTYPE_F64: clip_bwd_launch<double>(in, dx, lo, hi, s); break;
    case HG_DTYPE_F16: clip_bwd_launch<__half>(in, dx, (float)lo, (float)hi, s); break;
    default: return bad_dtype(op, dx->dtype);
    }
    return hg_cuda_launched(op->name);
}

/* ---- SequenceMask ---------------------------------------------------------------------------- */

/* Rows of `rest` elements at (t, b) (axis 0: row t * batch + b; axis 1: b * t_len + t) are set to
 * val where t >= len[b], else copied. */
template <typename T>
__global__ void seqmask_kernel(const T *x, T *y, idx_arr len, int64_t t_len, int64_t batch,
                               int64_t rest, int axis, T val, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t r = e / rest;
        const int64_t t = axis == 0 ? r / batch : r % t_len;
        const int64_t b = axis == 0 ? r % batch : r / t_len;
        y[e] = t >= idx_at(len, b) ? val : x[e];
    }
}

GPU_FWD(seqmask_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    const size_t nbytes = (size_t)x->size * hg_dtype_size(x->dtype);
    if (x->size == 0) return HG_OK;
    if (!a->v[SM_USE_LEN].b) {
        if (hg_data(y) == hg_data(x)) return HG_OK;
        return hg_cuda_status(
            cudaMemcpyAsync(hg_data(y), hg_data(x), nbytes, cudaMemcpyDeviceToDevice, s), op->name);
    }
    const int axis = (int)a->v[SM_AXIS].i;
    const int64_t t_len = x->shape[axis], batch = x->shape[1 - axis];
    const int64_t rest = x->size / (t_len * batch), total = x->size;
    unsigned char val[8];
    memset(val, 0, sizeof val);
    hg_index_store_value(val, x->dtype, a->v[SM_VALUE].f);
    const idx_arr len = idx_of(in[1]);
#define SEQMASK(T)                                                                             \
    do {                                                                                       \
        T v;                                                                                   \
        memcpy(&v, val, sizeof v);                                                             \
        seqmask_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                   \
            (const T *)hg_data(x), (T *)hg_data(y), len, t_len, batch, rest, axis, v, total);  \
    } while (0)
    switch (hg_dtype_size(x->dtype)) {
    case 1: SEQMASK(uint8_t); break;
    case 2: SEQMASK(uint16_t); break;
    case 4: SEQMASK(uint32_t); break;
    case 8: SEQMASK(uint64_t); break;
    default: return bad_dtype(op, x->dtype);
    }
#undef SEQMASK
    return hg_cuda_launched(op->name);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_index[] = {
    {"take", take_gpu},
    {"pick", pick_gpu},
    {"one_hot", one_hot_gpu},
    {"where", where_gpu},
    {"clip", clip_gpu},
    {"Embedding", embedding_gpu},
    {"SequenceMask", seqmask_gpu},
    {"_backward_take", bwd_take_gpu},
    {"_backward_pick", bwd_pick_gpu},
    {"_backward_clip", bwd_clip_gpu},
    {NULL, NULL},
};
