/* hg_gpu_kernels_seq: GPU kernels of the sequence ops of ops/sequence_ops.c: SequenceLast, its
 * gradient _backward_SequenceLast, and SequenceReverse (its own gradient). SequenceMask is in
 * index.cu.
 *
 * The ops move whole rows of `rest` elements, so the kernels copy elements by size and work for
 * every dtype. Each thread reads its sequence's length straight from the length array (any
 * numeric dtype, converted as sequence_ops.c's sq_load_len does), so nothing waits for the GPU.
 * The CPU fails on a length outside what the op can use (SequenceLast: 1..T, SequenceReverse:
 * 0..T); the GPU cannot check without waiting, so it clamps such a length into that range
 * instead: no kernel reads or writes out of bounds.
 */
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "ops/sequence_ops.h"
}

namespace
{

/* The length array (NULL: every sequence is t long). */
struct len_arr {
    const void *p;
    int dt;
};

len_arr len_of(int nin, int want, hg_tensor *const *in)
{
    if (nin < want) return len_arr{NULL, 0};
    return len_arr{hg_data(in[want - 1]), (int)in[want - 1]->dtype};
}

/* sequence_ops.c's sq_float_len: values past any sequence (and NaN) are -1. */
__device__ __forceinline__ int64_t float_len(double v)
{
    return v > -1 && v < 9.0e18 ? (int64_t)v : -1;
}

/* Length of sequence i, clamped into [lo, t] (see the file comment). */
__device__ __forceinline__ int64_t seq_len(len_arr l, int64_t i, int64_t t, int64_t lo)
{
    int64_t v;
    if (!l.p) return t;
    switch (l.dt) {
    case HG_DTYPE_F32: v = float_len(((const float *)l.p)[i]); break;
    case HG_DTYPE_F64: v = float_len(((const double *)l.p)[i]); break;
    case HG_DTYPE_F16:
        v = float_len(__half2float(__ushort_as_half(((const uint16_t *)l.p)[i])));
        break;
    case HG_DTYPE_U8: v = ((const uint8_t *)l.p)[i]; break;
    case HG_DTYPE_I8: v = ((const int8_t *)l.p)[i]; break;
    case HG_DTYPE_I32: v = ((const int32_t *)l.p)[i]; break;
    case HG_DTYPE_I64: v = ((const int64_t *)l.p)[i]; break;
    default: v = 0; break;
    }
    return v < lo ? lo : (v > t ? t : v);
}

/* The (T, batch, rest) of data for the op's axis (sequence_ops.c's sq_dims). */
void sq_dims(const hg_attrs *a, const hg_tensor *x, int64_t *t, int64_t *b, int64_t *rest)
{
    const int axis = (int)a->v[SQ_AXIS].i;
    *t = x->shape[axis];
    *b = x->shape[1 - axis];
    *rest = 1;
    for (int d = 2; d < x->ndim; d++) *rest *= x->shape[d];
}

/* Row (step s, sequence i) of data: [T, batch] for axis 0, [batch, T] for axis 1. */
__device__ __forceinline__ int64_t last_row(int axis, int64_t s, int64_t i, int64_t t, int64_t b)
{
    return axis ? i * t + s : s * b + i;
}

/* ---- SequenceLast ---------------------------------------------------------------------------- */

/* y[i, r] = x[row(len[i] - 1, i), r] over (batch, rest); backward (bwd = true) stores the other
 * way round into the zeroed dx. */
template <typename T>
__global__ void last_kernel(const T *src, T *dst, len_arr len, int axis, int64_t t, int64_t b,
                            int64_t rest, bool bwd)
{
    GRID_LOOP(e, b * rest)
    {
        const int64_t i = e / rest, r = e % rest;
        const int64_t pos = last_row(axis, seq_len(len, i, t, 1) - 1, i, t, b) * rest + r;
        if (bwd) dst[pos] = src[e];
        else dst[e] = src[pos];
    }
}

hg_status last_launch(const hg_op_def *op, const hg_attrs *a, cudaStream_t s, const hg_tensor *x,
                      const hg_tensor *src, hg_tensor *dst, len_arr len, bool bwd)
{
    int64_t t, b, rest;
    sq_dims(a, x, &t, &b, &rest);
    const int axis = (int)a->v[SQ_AXIS].i;
    if (b * rest == 0 || t == 0) return HG_OK;
    const int64_t total = b * rest;
#define LAST(T)                                                                                \
    last_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                          \
        (const T *)hg_data(src), (T *)hg_data(dst), len, axis, t, b, rest, bwd)
    switch (hg_dtype_size(x->dtype)) {
    case 1: LAST(uint8_t); break;
    case 2: LAST(uint16_t); break;
    case 4: LAST(uint32_t); break;
    case 8: LAST(uint64_t); break;
    default: return bad_dtype(op, x->dtype);
    }
#undef LAST
    return hg_cuda_launched(op->name);
}

GPU_FWD(last_gpu)
{
    STREAM;
    return last_launch(op, a, s, in[0], in[0], out[0], len_of(nin, 2, in), false);
}

/* _backward_SequenceLast(ograd, data[, sequence_length]). */
GPU_FWD(last_bwd_gpu)
{
    STREAM;
    hg_tensor *dx = out[0];
    const size_t nbytes = (size_t)dx->size * hg_dtype_size(dx->dtype);
    if (nbytes) HG_TRY(hg_cuda_status(cudaMemsetAsync(hg_data(dx), 0, nbytes, s), op->name));
    return last_launch(op, a, s, in[1], in[0], dx, len_of(nin, 3, in), true);
}

/* ---- SequenceReverse ------------------------------------------------------------------------- */

/* Step st of sequence i comes from step len - 1 - st while st < len; the padding stays. */
template <typename T>
__global__ void rev_kernel(const T *x, T *y, len_arr len, int64_t t, int64_t b, int64_t rest)
{
    GRID_LOOP(e, t * b * rest)
    {
        const int64_t r = e % rest, row = e / rest, i = row % b, st = row / b;
        const int64_t l = seq_len(len, i, t, 0);
        const int64_t from = st < l ? l - 1 - st : st;
        y[e] = x[(from * b + i) * rest + r];
    }
}

GPU_FWD(rev_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int64_t t, b, rest;
    sq_dims(a, x, &t, &b, &rest);
    if (x->size == 0) return HG_OK;
    if (hg_data(x) == hg_data(out[0]))
        return hg_error(HG_ERR_INTERNAL, "%s: cannot run in place", op->name);
    const len_arr len = len_of(nin, 2, in);
    const int64_t total = x->size;
#define REV(T)                                                                                 \
    rev_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(                           \
        (const T *)hg_data(x), (T *)hg_data(out[0]), len, t, b, rest)
    switch (hg_dtype_size(x->dtype)) {
    case 1: REV(uint8_t); break;
    case 2: REV(uint16_t); break;
    case 4: REV(uint32_t); break;
    case 8: REV(uint64_t); break;
    default: return bad_dtype(op, x->dtype);
    }
#undef REV
    return hg_cuda_launched(op->name);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_seq[] = {
    {"SequenceLast", last_gpu},
    {"_backward_SequenceLast", last_bwd_gpu},
    {"SequenceReverse", rev_gpu},
    {NULL, NULL},
};
