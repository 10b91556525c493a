/* GPU kernels of the ops that move or convert elements: the shape family (ops/shape.c), the
 * slicing ops (ops/slicing.c), Cast (ops/cast.c) and the ops of ops/nn_train.c (Dropout,
 * L2Normalization, log_sigmoid).
 *
 * As on the CPU, every data movement lowers to one primitive, the strided copy:
 *     dst[sum_d i_d * ds[d]] = src[sum_d i_d * ss[d]]    for every index i of a shape,
 * with strides in elements that may be 0 (broadcast, fill), negative (reverse), permuted
 * (transpose) or summed (diagonal). It moves elements by size, so every dtype works. The host
 * side drops size-1 dims and merges dims both operands walk as one (as the CPU's copies do),
 * then a contiguous copy becomes one cudaMemcpyAsync and anything else one kernel launch: one
 * thread per element, 32-bit index arithmetic when every offset fits. The shapes, axes and
 * ranges come from the same rules as the CPU forwards (the slicing ones are the CPU's own
 * helpers, ops/slicing.h); infer has validated the attributes, so the kernels trust them.
 *
 * Reshape and its kin (Flatten, expand_dims, squeeze, _backward_Reshape) copy the bytes with
 * cudaMemcpyAsync unless the output already is the input's storage.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "core/rng.h"
#include "ops/cast.h"
#include "ops/nn_train.h"
#include "ops/shape.h"
#include "ops/slicing.h"
}

namespace
{

#define LMAX (2 * HG_MAX_NDIM + 2) /* tile doubles the rank (kernels/cpu/strided_copy.h) */

/* ---- shared helpers -------------------------------------------------------------------------- */

/* Axis in [-nd, nd) to [0, nd); infer checked the range. */
int norm_axis(int64_t axis, int nd) { return (int)(axis < 0 ? axis + nd : axis); }

/* ---- the strided copy ------------------------------------------------------------------------ */

struct strided_plan {
    int nd;
    int64_t shape[LMAX], ds[LMAX], ss[LMAX];
};

/* dst[off_d(i)] = src[off_s(i)] (or = fill) for i < n, the offsets in index type I. */
template <typename T, typename I, bool FILL>
__global__ void strided_kernel(T *dst, const T *src, T fill, strided_plan p, I n)
{
    const I step = (I)gridDim.x * (I)blockDim.x;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += step) {
        I rem = i, so = 0, dof = 0;
        for (int d = p.nd - 1; d >= 0; d--) {
            const I sh = (I)p.shape[d], q = rem % sh;
            rem /= sh;
            so += q * (I)p.ss[d];
            dof += q * (I)p.ds[d];
        }
        dst[dof] = FILL ? fill : src[so];
    }
}

template <typename T>
hg_status strided_launch(const char *name, cudaStream_t s, void *dst, const void *src,
                         const void *fill, const strided_plan &p, int64_t n, bool narrow)
{
    const unsigned blocks = hg_cuda_blocks(n);
    T f = T();
    if (fill) memcpy(&f, fill, sizeof f);
    T *d = (T *)dst;
    const T *x = (const T *)src;
    if (narrow && fill)
        strided_kernel<T, int32_t, true><<<blocks, HG_CUDA_THREADS, 0, s>>>(d, x, f, p, (int32_t)n);
    else if (narrow)
        strided_kernel<T, int32_t, false>
            <<<blocks, HG_CUDA_THREADS, 0, s>>>(d, x, f, p, (int32_t)n);
    else if (fill)
        strided_kernel<T, int64_t, true><<<blocks, HG_CUDA_THREADS, 0, s>>>(d, x, f, p, n);
    else strided_kernel<T, int64_t, false><<<blocks, HG_CUDA_THREADS, 0, s>>>(d, x, f, p, n);
    return hg_cuda_launched(name);
}

/* dst[sum i_d * ds[d]] = src[sum i_d * ss[d]] (or the element of es bytes at `fill`, a host
 * pointer, when fill is not NULL) for every index i of shape[nd]. Strides are in elements; dst
 * and src point at the element of index 0. The destination must not overlap the source. */
hg_status strided_copy(const char *name, cudaStream_t s, size_t es, void *dst, const int64_t *ds,
                       const void *src, const int64_t *ss, int nd, const int64_t *shape,
                       const void *fill)
{
    strided_plan p;
    int m = 0;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 0) return HG_OK;
        n *= shape[d];
    }
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue; /* its stride never matters */
        const int64_t sd = fill ? 0 : ss[d];
        if (m > 0 && p.ds[m - 1] == ds[d] * shape[d] && p.ss[m - 1] == sd * shape[d]) {
            p.shape[m - 1] *= shape[d]; /* one run with the outer dim on both sides */
            p.ds[m - 1] = ds[d];
            p.ss[m - 1] = sd;
            continue;
        }
        p.shape[m] = shape[d];
        p.ds[m] = ds[d];
        p.ss[m] = sd;
        m++;
    }
    if (m == 0) { /* a single element */
        p.shape[0] = 1;
        p.ds[0] = p.ss[0] = 1;
        m = 1;
    }
    p.nd = m;
    if (m == 1 && p.ds[0] == 1 && !fill && p.ss[0] == 1) {
        if (dst == src) return HG_OK;
        return hg_cuda_status(
            cudaMemcpyAsync(dst, src, (size_t)n * es, cudaMemcpyDeviceToDevice, s), name);
    }
    if (m == 1 && p.ds[0] == 1 && fill && es == 1)
        return hg_cuda_status(cudaMemsetAsync(dst, *(const uint8_t *)fill, (size_t)n, s), name);
    /* 32-bit indices when the loop counter and every offset fit (with room for the stride). */
    int64_t reach_d = 0, reach_s = 0;
    for (int d = 0; d < m; d++) {
        reach_d += (p.shape[d] - 1) * (p.ds[d] < 0 ? -p.ds[d] : p.ds[d]);
        reach_s += (p.shape[d] - 1) * (p.ss[d] < 0 ? -p.ss[d] : p.ss[d]);
    }
    const int64_t lim = INT32_MAX - (1LL << 25);
    const bool narrow = n < lim && reach_d < lim && reach_s < lim;
    switch (es) {
    case 1: return strided_launch<uint8_t>(name, s, dst, src, fill, p, n, narrow);
    case 2: return strided_launch<uint16_t>(name, s, dst, src, fill, p, n, narrow);
    case 4: return strided_launch<uint32_t>(name, s, dst, src, fill, p, n, narrow);
    case 8: return strided_launch<uint64_t>(name, s, dst, src, fill, p, n, narrow);
    default: return hg_error(HG_ERR_INTERNAL, "%s: element size %zu", name, es);
    }
}

/* The shape family's view copy (kernels/cpu/strided_copy.h): out (contiguous, shape[nd]) = the
 * view of `in` with strides istr from element base. */
hg_status view_copy(const hg_op_def *op, cudaStream_t s, const hg_tensor *in, hg_tensor *out,
                    int nd, const int64_t *shape, const int64_t *istr, int64_t base)
{
    int64_t ostr[LMAX];
    size_t es = hg_dtype_size(in->dtype);
    hg_contiguous_strides(nd, shape, ostr);
    return strided_copy(op->name, s, es, hg_data(out), ostr, (const char *)hg_data(in) + base * es,
                        istr, nd, shape, NULL);
}

/* ---- shape.c --------------------------------------------------------------------------------- */

/* Reshape, Flatten, expand_dims, squeeze, _backward_Reshape: the input's bytes. */
GPU_FWD(copy_gpu)
{
    STREAM;
    return copy_whole(op, s, out[0], in[0]);
}

/* out = in broadcast over out's shape (same rank; the input's size-1 dims repeat). */
GPU_FWD(broadcast_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int64_t str[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < out[0]->ndim; d++)
        if (x->shape[d] != out[0]->shape[d]) str[d] = 0;
    return view_copy(op, s, x, out[0], out[0]->ndim, out[0]->shape, str, 0);
}

/* out dim d is input dim perm[d]. */
hg_status permute_gpu(const hg_op_def *op, cudaStream_t s, const hg_tensor *x, hg_tensor *y,
                      const int *perm)
{
    int64_t str[HG_MAX_NDIM], istr[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++) istr[d] = str[perm[d]];
    return view_copy(op, s, x, y, y->ndim, y->shape, istr, 0);
}

GPU_FWD(transpose_gpu)
{
    STREAM;
    const hg_tuple *ax = &a->v[TR_AXES].t;
    int nd = in[0]->ndim, perm[HG_MAX_NDIM];
    for (int d = 0; d < nd; d++) perm[d] = ax->n == 0 ? nd - 1 - d : norm_axis(ax->v[d], nd);
    return permute_gpu(op, s, in[0], out[0], perm);
}

GPU_FWD(swapaxis_gpu)
{
    STREAM;
    int nd = in[0]->ndim, perm[HG_MAX_NDIM];
    int d1 = norm_axis(a->v[SW_DIM1].i, nd), d2 = norm_axis(a->v[SW_DIM2].i, nd);
    for (int d = 0; d < nd; d++) perm[d] = d == d1 ? d2 : d == d2 ? d1 : d;
    return permute_gpu(op, s, in[0], out[0], perm);
}

/* Output dim i is viewed as (rep_i, dim_i) with input strides (0, stride_i). */
GPU_FWD(tile_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const hg_tuple *r = &a->v[TL_REPS].t;
    int64_t str[HG_MAX_NDIM], shape[LMAX], istr[LMAX];
    int on = out[0]->ndim;
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int i = 0; i < on; i++) {
        int xi = i - (on - x->ndim), ri = i - (on - r->n);
        shape[2 * i] = ri >= 0 ? r->v[ri] : 1;
        istr[2 * i] = 0;
        shape[2 * i + 1] = xi >= 0 ? x->shape[xi] : 1;
        istr[2 * i + 1] = xi >= 0 ? str[xi] : 0;
    }
    return view_copy(op, s, x, out[0], 2 * on, shape, istr, 0);
}

/* The axis is split into (dim, repeats) with input strides (stride, 0). */
GPU_FWD(repeat_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int64_t rep = a->v[RP_REPEATS].i, str[HG_MAX_NDIM], shape[LMAX], istr[LMAX];
    int m = 0;
    if (a->v[RP_AXIS].is_none) {
        shape[0] = x->size;
        istr[0] = 1;
        shape[1] = rep;
        istr[1] = 0;
        m = 2;
    } else {
        int ax = norm_axis(a->v[RP_AXIS].i, x->ndim);
        hg_contiguous_strides(x->ndim, x->shape, str);
        for (int d = 0; d < x->ndim; d++) {
            shape[m] = x->shape[d];
            istr[m++] = str[d];
            if (d == ax) {
                shape[m] = rep;
                istr[m++] = 0;
            }
        }
    }
    return view_copy(op, s, x, out[0], m, shape, istr, 0);
}

/* An axis named twice is reversed twice (as in MXNet). */
GPU_FWD(reverse_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const hg_tuple *t = &a->v[RV_AXIS].t;
    bool flip[HG_MAX_NDIM] = {false};
    int64_t str[HG_MAX_NDIM], base = 0;
    for (int i = 0; i < t->n; i++) {
        int ax = norm_axis(t->v[i], x->ndim);
        flip[ax] = !flip[ax];
    }
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++) {
        if (!flip[d]) continue;
        base += (x->shape[d] - 1) * str[d];
        str[d] = -str[d];
    }
    return view_copy(op, s, x, out[0], x->ndim, x->shape, str, base);
}

GPU_FWD(diag_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    int64_t k = a->v[DG_K].i;
    size_t es = hg_dtype_size(x->dtype);
    if (x->ndim == 1) { /* a square matrix of zeros with x on diagonal k */
        int64_t n = y->shape[0], r0 = k < 0 ? -k : 0, c0 = k > 0 ? k : 0, ds = n + 1, ss = 1;
        HG_TRY(zero_fill(op, s, y));
        return strided_copy(op->name, s, es, (char *)hg_data(y) + (r0 * n + c0) * es, &ds,
                            hg_data(x), &ss, 1, x->shape, NULL);
    }
    int x1 = norm_axis(a->v[DG_AXIS1].i, x->ndim), x2 = norm_axis(a->v[DG_AXIS2].i, x->ndim), m = 0;
    int64_t str[HG_MAX_NDIM], istr[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++)
        if (d != x1 && d != x2) istr[m++] = str[d];
    istr[m++] = str[x1] + str[x2];
    int64_t base = k > 0 ? k * str[x2] : -k * str[x1];
    return view_copy(op, s, x, y, y->ndim, y->shape, istr, base);
}

/* 1-D data: the k-th diagonal of ograd. N-D data: zeros with ograd on the diagonal. */
GPU_FWD(bwd_diag_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0], *x = in[1];
    hg_tensor *dx = out[0];
    int64_t k = a->v[DG_K].i;
    size_t es = hg_dtype_size(dx->dtype);
    if (x->ndim == 1) {
        int64_t n = dy->shape[1], base = (k < 0 ? -k * n : k), str = n + 1;
        return view_copy(op, s, dy, dx, 1, x->shape, &str, base);
    }
    int x1 = norm_axis(a->v[DG_AXIS1].i, x->ndim), x2 = norm_axis(a->v[DG_AXIS2].i, x->ndim), m = 0;
    int64_t str[HG_MAX_NDIM], ostr[HG_MAX_NDIM], gstr[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++)
        if (d != x1 && d != x2) ostr[m++] = str[d];
    ostr[m++] = str[x1] + str[x2];
    int64_t off = k > 0 ? k * str[x2] : -k * str[x1];
    HG_TRY(zero_fill(op, s, dx));
    hg_contiguous_strides(dy->ndim, dy->shape, gstr);
    return strided_copy(op->name, s, es, (char *)hg_data(dx) + off * es, ostr, hg_data(dy), gstr,
                        dy->ndim, dy->shape, NULL);
}

/* ---- the strided sum (_backward_tile, _backward_repeat) -------------------------------------- */

/* x[j] = sum over the reduced index k of g[sum j_d xstr[d] + sum k_d rstr[d]], accumulated in
 * double in the CPU's order (k row-major), so the sums have the CPU's bits. */
struct ssum_plan {
    int nx, nr;
    int64_t xshape[LMAX], xstr[LMAX], rshape[LMAX], rstr[LMAX];
};

template <typename T> __device__ __forceinline__ double ssum_ld(T v) { return (double)v; }
template <> __device__ __forceinline__ double ssum_ld<uint16_t>(uint16_t v) { return h2f(v); }
template <typename T> __device__ __forceinline__ T ssum_st(double v) { return (T)v; }
template <> __device__ __forceinline__ uint16_t ssum_st<uint16_t>(double v)
{
    return f2h((float)v);
}

template <typename T> __global__ void ssum_kernel(const T *g, T *x, ssum_plan p, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t rem = i, base = 0, idx[LMAX], roff = 0, nred = 1;
        for (int d = p.nx - 1; d >= 0; d--) {
            base += (rem % p.xshape[d]) * p.xstr[d];
            rem /= p.xshape[d];
        }
        for (int d = 0; d < p.nr; d++) {
            idx[d] = 0;
            nred *= p.rshape[d];
        }
        double acc = 0;
        for (int64_t k = 0; k < nred; k++) {
            acc += ssum_ld<T>(g[base + roff]);
            for (int d = p.nr - 1; d >= 0; d--) { /* odometer over the sum */
                roff += p.rstr[d];
                if (++idx[d] < p.rshape[d]) break;
                roff -= p.rstr[d] * p.rshape[d];
                idx[d] = 0;
            }
        }
        x[i] = ssum_st<T>(acc);
    }
}

/* Runs the sum into x (float types: the _backward_ ops' infer accepts no other). Reduced dims of
 * size 1 are dropped (an empty reduced dim makes every sum 0). */
hg_status strided_sum(const hg_op_def *op, cudaStream_t s, ssum_plan &p, const hg_tensor *g,
                      hg_tensor *x)
{
    if (x->size == 0) return HG_OK;
    int m = 0;
    for (int d = 0; d < p.nr; d++) {
        if (p.rshape[d] == 1) continue;
        p.rshape[m] = p.rshape[d];
        p.rstr[m++] = p.rstr[d];
    }
    p.nr = m;
    const unsigned blocks = hg_cuda_blocks(x->size);
    switch (x->dtype) {
    case HG_DTYPE_F32:
        ssum_kernel<float>
            <<<blocks, HG_CUDA_THREADS, 0, s>>>(HG_DATA(g, float), HG_DATA(x, float), p, x->size);
        break;
    case HG_DTYPE_F64:
        ssum_kernel<double>
            <<<blocks, HG_CUDA_THREADS, 0, s>>>(HG_DATA(g, double), HG_DATA(x, double), p, x->size);
        break;
    case HG_DTYPE_F16:
        ssum_kernel<uint16_t><<<blocks, HG_CUDA_THREADS, 0, s>>>(HG_DATA(g, uint16_t),
                                                                 HG_DATA(x, uint16_t), p, x->size);
        break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(x->dtype));
    }
    return hg_cuda_launched(op->name);
}

/* Output dim i of tile is (rep_i, dim_i) with strides (dim_i * S_i, S_i): sum over rep_i. */
GPU_FWD(bwd_tile_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0], *x = in[1];
    const hg_tuple *r = &a->v[TL_REPS].t;
    int on = dy->ndim;
    int64_t gstr[HG_MAX_NDIM];
    ssum_plan p;
    memset(&p, 0, sizeof p);
    hg_contiguous_strides(on, dy->shape, gstr);
    p.nx = p.nr = on;
    for (int i = 0; i < on; i++) {
        int xi = i - (on - x->ndim), ri = i - (on - r->n);
        int64_t dim = xi >= 0 ? x->shape[xi] : 1;
        p.xshape[i] = dim;
        p.xstr[i] = gstr[i];
        p.rshape[i] = ri >= 0 ? r->v[ri] : 1;
        p.rstr[i] = dim * gstr[i];
    }
    return strided_sum(op, s, p, dy, out[0]);
}

/* The repeated axis of the output is (dim, repeats) with strides (repeats * S, S). */
GPU_FWD(bwd_repeat_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0], *x = in[1];
    int64_t rep = a->v[RP_REPEATS].i, gstr[HG_MAX_NDIM];
    ssum_plan p;
    memset(&p, 0, sizeof p);
    p.nr = 1;
    p.rshape[0] = rep;
    if (a->v[RP_AXIS].is_none || rep == 0) { /* rep 0: an empty sum, whatever the axis */
        p.nx = 1;
        p.xshape[0] = x->size;
        p.xstr[0] = rep;
        p.rstr[0] = 1;
    } else {
        int ax = norm_axis(a->v[RP_AXIS].i, x->ndim);
        hg_contiguous_strides(dy->ndim, dy->shape, gstr);
        p.nx = x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            p.xshape[d] = x->shape[d];
            p.xstr[d] = d == ax ? rep * gstr[d] : gstr[d];
        }
        p.rstr[0] = gstr[ax];
    }
    return strided_sum(op, s, p, dy, out[0]);
}

/* ---- slicing.c ------------------------------------------------------------------------------- */

GPU_FWD(concat_gpu)
{
    STREAM;
    const hg_tensor *y = out[0];
    int nd = y->ndim, axis = norm_axis(a->v[K_CONCAT_DIM].i, nd);
    size_t es = hg_dtype_size(y->dtype);
    int64_t yst[HG_MAX_NDIM], xst[HG_MAX_NDIM], off = 0;
    hg_contiguous_strides(nd, y->shape, yst);
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        hg_contiguous_strides(nd, x->shape, xst);
        HG_TRY(strided_copy(op->name, s, es, (char *)hg_data(y) + off * yst[axis] * es, yst,
                            hg_data(x), xst, nd, x->shape, NULL));
        off += x->shape[axis];
    }
    return HG_OK;
}

GPU_FWD(bwd_concat_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    int nd = dy->ndim, axis = norm_axis(a->v[K_CONCAT_DIM].i, nd);
    size_t es = hg_dtype_size(dy->dtype);
    int64_t yst[HG_MAX_NDIM], xst[HG_MAX_NDIM], off = 0;
    hg_contiguous_strides(nd, dy->shape, yst);
    for (int i = 0; i < nout; i++) {
        hg_tensor *dx = out[i];
        hg_contiguous_strides(nd, dx->shape, xst);
        HG_TRY(strided_copy(op->name, s, es, hg_data(dx), xst,
                            (const char *)hg_data(dy) + off * yst[axis] * es, yst, nd, dx->shape,
                            NULL));
        off += dx->shape[axis];
    }
    return HG_OK;
}

GPU_FWD(stack_gpu)
{
    STREAM;
    const hg_tensor *y = out[0];
    int nd = y->ndim, axis = norm_axis(a->v[K_STACK_AXIS].i, nd);
    size_t es = hg_dtype_size(y->dtype);
    int64_t yst[HG_MAX_NDIM], dst_st[HG_MAX_NDIM], xst[HG_MAX_NDIM];
    hg_contiguous_strides(nd, y->shape, yst);
    for (int d = 0, k = 0; d < nd; d++) /* the output's strides without the new axis */
        if (d != axis) dst_st[k++] = yst[d];
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        hg_contiguous_strides(x->ndim, x->shape, xst);
        HG_TRY(strided_copy(op->name, s, es, (char *)hg_data(y) + i * yst[axis] * es, dst_st,
                            hg_data(x), xst, x->ndim, x->shape, NULL));
    }
    return HG_OK;
}

GPU_FWD(split_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int nd = x->ndim, axis = norm_axis(a->v[K_SPLIT_AXIS].i, nd);
    size_t es = hg_dtype_size(x->dtype);
    int64_t xst[HG_MAX_NDIM], shape[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    hg_contiguous_strides(nd, x->shape, xst);
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    shape[axis] = x->shape[axis] / nout;
    hg_contiguous_strides(nd, shape, yst); /* the output as if not squeezed: same bytes */
    for (int i = 0; i < nout; i++)
        HG_TRY(strided_copy(op->name, s, es, hg_data(out[i]), yst,
                            (const char *)hg_data(x) + i * shape[axis] * xst[axis] * es, xst, nd,
                            shape, NULL));
    return HG_OK;
}

/* The first element and per-axis strides of a slice r of x (slicing.c's slice_base), as an
 * element offset. */
int64_t slice_base(const hg_tensor *x, const slice_range *r, int64_t *st)
{
    int64_t xst[HG_MAX_NDIM], off = 0;
    hg_contiguous_strides(x->ndim, x->shape, xst);
    for (int d = 0; d < x->ndim; d++) {
        off += r->begin[d] * xst[d];
        st[d] = r->step[d] * xst[d];
    }
    return off;
}

GPU_FWD(slice_gpu)
{
    STREAM;
    const hg_tensor *x = in[0], *y = out[0];
    hg_meta m = hg_meta_of(x);
    slice_range r;
    int64_t xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    HG_TRY(hg_slice_resolve(op, &a->v[K_SLICE_BEGIN].t, &a->v[K_SLICE_END].t, &a->v[K_SLICE_STEP].t,
                            &m, &r));
    size_t es = hg_dtype_size(x->dtype);
    int64_t off = slice_base(x, &r, xst);
    hg_contiguous_strides(y->ndim, y->shape, yst);
    return strided_copy(op->name, s, es, hg_data(y), yst, (const char *)hg_data(x) + off * es, xst,
                        y->ndim, y->shape, NULL);
}

GPU_FWD(slice_axis_gpu)
{
    STREAM;
    const hg_tensor *x = in[0], *y = out[0];
    hg_meta m = hg_meta_of(x);
    int axis = 0;
    int64_t b, e, xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    size_t es = hg_dtype_size(x->dtype);
    HG_TRY(hg_slice_axis_resolve(op, a, &m, &axis, &b, &e));
    hg_contiguous_strides(x->ndim, x->shape, xst);
    hg_contiguous_strides(y->ndim, y->shape, yst);
    return strided_copy(op->name, s, es, hg_data(y), yst,
                        (const char *)hg_data(x) + b * xst[axis] * es, xst, y->ndim, y->shape,
                        NULL);
}

/* Zeros with ograd in [begin, end) of the axis. */
GPU_FWD(bwd_slice_axis_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    hg_tensor *dx = out[0];
    hg_meta m = hg_meta_of(in[1]);
    int axis = 0;
    int64_t b, e, xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    size_t es = hg_dtype_size(dx->dtype);
    HG_TRY(hg_slice_axis_resolve(op, a, &m, &axis, &b, &e));
    HG_TRY(zero_fill(op, s, dx));
    hg_contiguous_strides(dx->ndim, dx->shape, xst);
    hg_contiguous_strides(dy->ndim, dy->shape, yst);
    return strided_copy(op->name, s, es, (char *)hg_data(dx) + b * xst[axis] * es, xst, hg_data(dy),
                        yst, dy->ndim, dy->shape, NULL);
}

/* slice_like takes the leading corner of data; its gradient puts ograd back there in zeros. */
GPU_FWD(slice_like_gpu)
{
    STREAM;
    const hg_tensor *x = in[0], *y = out[0];
    int64_t xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, xst);
    hg_contiguous_strides(y->ndim, y->shape, yst);
    return strided_copy(op->name, s, hg_dtype_size(x->dtype), hg_data(y), yst, hg_data(x), xst,
                        y->ndim, y->shape, NULL);
}

GPU_FWD(bwd_slice_like_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    hg_tensor *dx = out[0];
    int64_t xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    HG_TRY(zero_fill(op, s, dx));
    hg_contiguous_strides(dx->ndim, dx->shape, xst);
    hg_contiguous_strides(dy->ndim, dy->shape, yst);
    return strided_copy(op->name, s, hg_dtype_size(dx->dtype), hg_data(dx), xst, hg_data(dy), yst,
                        dy->ndim, dy->shape, NULL);
}

/* _slice_assign: a copy of lhs (none when running in place) with the region replaced by rhs. */
GPU_FWD(slice_assign_gpu)
{
    STREAM;
    const hg_tensor *v = in[1];
    hg_tensor *y = out[0];
    hg_meta m = hg_meta_of(in[0]);
    slice_range r;
    int64_t yst[HG_MAX_NDIM], vst[HG_MAX_NDIM];
    HG_TRY(hg_slice_resolve(op, &a->v[K_SLICE_BEGIN].t, &a->v[K_SLICE_END].t, &a->v[K_SLICE_STEP].t,
                            &m, &r));
    HG_TRY(copy_whole(op, s, y, in[0]));
    size_t es = hg_dtype_size(y->dtype);
    int64_t off = slice_base(y, &r, yst);
    hg_contiguous_strides(v->ndim, v->shape, vst);
    return strided_copy(op->name, s, es, (char *)hg_data(y) + off * es, yst, hg_data(v), vst,
                        y->ndim, r.len, NULL);
}

GPU_FWD(slice_assign_scalar_gpu)
{
    STREAM;
    hg_tensor *y = out[0];
    hg_meta m = hg_meta_of(in[0]);
    slice_range r;
    int64_t yst[HG_MAX_NDIM];
    unsigned char value[16];
    HG_TRY(hg_slice_resolve(op, &a->v[K_SAS_BEGIN].t, &a->v[K_SAS_END].t, &a->v[K_SAS_STEP].t, &m,
                            &r));
    HG_TRY(copy_whole(op, s, y, in[0]));
    memset(value, 0, sizeof value);
    hg_slice_scalar_bytes(a->v[K_SAS_SCALAR].f, y->dtype, value);
    size_t es = hg_dtype_size(y->dtype);
    int64_t off = slice_base(y, &r, yst);
    return strided_copy(op->name, s, es, (char *)hg_data(y) + off * es, yst, NULL, NULL, y->ndim,
                        r.len, value);
}

/* ---- Cast (cast.c) --------------------------------------------------------------------------- */

/* Float to integer as cast.c: truncate toward zero; NaN and values outside the int32 (int64)
 * range become INT32_MIN (INT64_MIN); 8-bit targets take the low byte of the int32. */
__device__ __forceinline__ int32_t f2i32(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}
__device__ __forceinline__ int64_t f2i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}

/* One dtype: its storage type T, load (to the type cast.c's LD_ gives) and store (ST_). */
template <typename T, typename V> __device__ __forceinline__ T cv_int32(V v)
{
    if constexpr (std::is_floating_point<V>::value) return (T)f2i32((double)v);
    else return (T)v;
}
struct C_f32 {
    typedef float T;
    static __device__ __forceinline__ float ld(T x) { return x; }
    template <typename V> static __device__ __forceinline__ T st(V v) { return (float)v; }
};
struct C_f64 {
    typedef double T;
    static __device__ __forceinline__ double ld(T x) { return x; }
    template <typename V> static __device__ __forceinline__ T st(V v) { return (double)v; }
};
struct C_f16 {
    typedef uint16_t T;
    static __device__ __forceinline__ float ld(T x) { return h2f(x); }
    template <typename V> static __device__ __forceinline__ T st(V v) { return f2h((float)v); }
};
struct C_u8 {
    typedef uint8_t T;
    static __device__ __forceinline__ uint8_t ld(T x) { return x; }
    template <typename V> static __device__ __forceinline__ T st(V v) { return cv_int32<T>(v); }
};
struct C_i32 {
    typedef int32_t T;
    static __device__ __forceinline__ int32_t ld(T x) { return x; }
    template <typename V> static __device__ __forceinline__ T st(V v) { return cv_int32<T>(v); }
};
struct C_i8 {
    typedef int8_t T;
    static __device__ __forceinline__ int8_t ld(T x) { return x; }
    template <typename V> static __device__ __forceinline__ T st(V v) { return cv_int32<T>(v); }
};
struct C_i64 {
    typedef int64_t T;
    static __device__ __forceinline__ int64_t ld(T x) { return x; }
    template <typename V> static __device__ __forceinline__ T st(V v)
    {
        if constexpr (std::is_floating_point<V>::value) return f2i64((double)v);
        else return (T)v;
    }
};
struct C_b {
    typedef uint8_t T;
    static __device__ __forceinline__ int ld(T x) { return x != 0; }
    template <typename V> static __device__ __forceinline__ T st(V v) { return (uint8_t)(v != 0); }
};

template <class S, class D>
__global__ void cast_kernel(const typename S::T *x, typename D::T *y, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = D::st(S::ld(x[i]));
}

template <class S, class D> void cast_launch(const void *x, void *y, int64_t n, cudaStream_t s)
{
    cast_kernel<S, D><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>((const typename S::T *)x,
                                                                    (typename D::T *)y, n);
}

template <class S> bool cast_to(hg_dtype dt, const void *x, void *y, int64_t n, cudaStream_t s)
{
    switch (dt) {
    case HG_DTYPE_F32: cast_launch<S, C_f32>(x, y, n, s); return true;
    case HG_DTYPE_F64: cast_launch<S, C_f64>(x, y, n, s); return true;
    case HG_DTYPE_F16: cast_launch<S, C_f16>(x, y, n, s); return true;
    case HG_DTYPE_U8: cast_launch<S, C_u8>(x, y, n, s); return true;
    case HG_DTYPE_I32: cast_launch<S, C_i32>(x, y, n, s); return true;
    case HG_DTYPE_I8: cast_launch<S, C_i8>(x, y, n, s); return true;
    case HG_DTYPE_I64: cast_launch<S, C_i64>(x, y, n, s); return true;
    case HG_DTYPE_BOOL: cast_launch<S, C_b>(x, y, n, s); return true;
    default: return false;
    }
}

/* Cast and _backward_Cast: input 0 converted to the output's dtype. */
GPU_FWD(cast_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    if (x->dtype == y->dtype) return copy_whole(op, s, y, x);
    const void *xd = hg_data(x);
    void *yd = hg_data(y);
    int64_t n = x->size;
    if (n == 0) return HG_OK;
    bool ok = false;
    switch (x->dtype) {
    case HG_DTYPE_F32: ok = cast_to<C_f32>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_F64: ok = cast_to<C_f64>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_F16: ok = cast_to<C_f16>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_U8: ok = cast_to<C_u8>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_I32: ok = cast_to<C_i32>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_I8: ok = cast_to<C_i8>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_I64: ok = cast_to<C_i64>(y->dtype, xd, yd, n, s); break;
    case HG_DTYPE_BOOL: ok = cast_to<C_b>(y->dtype, xd, yd, n, s); break;
    default: break;
    }
    if (!ok)
        return hg_error(HG_ERR_TYPE, "%s: cast from %s to %s is not supported on GPU", op->name,
                        hg_dtype_name(x->dtype), hg_dtype_name(y->dtype));
    return hg_cuda_launched(op->name);
}

/* ---- nn_train.c: Dropout --------------------------------------------------------------------- */

/* Float element access for the float-only ops below; float16 computes in float. */
struct F_f32 {
    typedef float T;
    typedef float R;
    static __device__ __forceinline__ R ld(T x) { return x; }
    static __device__ __forceinline__ T st(R v) { return v; }
};
struct F_f64 {
    typedef double T;
    typedef double R;
    static __device__ __forceinline__ R ld(T x) { return x; }
    static __device__ __forceinline__ T st(R v) { return v; }
};
struct F_f16 {
    typedef uint16_t T;
    typedef float R;
    static __device__ __forceinline__ R ld(T x) { return h2f(x); }
    static __device__ __forceinline__ T st(R v) { return f2h(v); }
};

/* Runs F::template go<S>(args...) for the float dtype dt; false for any other dtype. */
#define FLOAT_DISPATCH(dt, CALL)                                                               \
    ((dt) == HG_DTYPE_F32   ? (CALL(F_f32), true)                                              \
     : (dt) == HG_DTYPE_F64 ? (CALL(F_f64), true)                                              \
     : (dt) == HG_DTYPE_F16 ? (CALL(F_f16), true)                                              \
                            : false)

/* A counter-based generator: splitmix64 of (seed, element index), so every mask element draws
 * independently of the launch geometry; the top 53 bits give a uniform double in [0, 1). */
__device__ __forceinline__ double uniform_at(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* mask[i] = u < keep ? scale : zero, the values rounded to the mask's dtype once, as the CPU's
 * dropout_draw_mask (p == 1: keep 0, 0 * inf = NaN everywhere, as MXNet gives). */
template <class F>
__global__ void dropout_mask_kernel(typename F::T *m, int64_t n, uint64_t seed, double keep,
                                    typename F::T scale, typename F::T zero)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        m[i] = uniform_at(seed, (uint64_t)i) < keep ? scale : zero;
}

template <class F> __global__ void fill_kernel(typename F::T *y, int64_t n, typename F::T v)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) y[i] = v;
}

/* y = x * mask with the mask broadcast along its size-1 dims (mstr 0 there). */
struct bcast_plan {
    int nd;
    int64_t shape[HG_MAX_NDIM], mstr[HG_MAX_NDIM];
};

template <class F>
__global__ void mask_mul_kernel(const typename F::T *x, const typename F::T *m, typename F::T *y,
                                bcast_plan p, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t rem = i, mo = 0;
        for (int d = p.nd - 1; d >= 0; d--) {
            mo += (rem % p.shape[d]) * p.mstr[d];
            rem /= p.shape[d];
        }
        y[i] = F::st(F::ld(x[i]) * F::ld(m[mo]));
    }
}

template <class F> struct dropout_run {
    typedef typename F::T T;
    typedef typename F::R R;
    /* Inactive: y = x, mask all ones. */
    static void ones(T *mask, int64_t n, cudaStream_t s)
    {
        T one, zero;
        host_values(1.0, &one, &zero); /* 1 / keep with keep 1: the dtype's one, made on the host */
        fill_kernel<F><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(mask, n, one);
    }
    static void draw(const hg_tensor *x, hg_tensor *mask, hg_tensor *y, double keep, uint64_t seed,
                     cudaStream_t s)
    {
        T scale, zero;
        host_values(keep, &scale, &zero);
        dropout_mask_kernel<F><<<hg_cuda_blocks(mask->size), HG_CUDA_THREADS, 0, s>>>(
            (T *)hg_data(mask), mask->size, seed, keep, scale, zero);
        bcast_plan p;
        int64_t mstr[HG_MAX_NDIM];
        p.nd = x->ndim;
        hg_contiguous_strides(mask->ndim, mask->shape, mstr);
        for (int d = 0; d < x->ndim; d++) {
            p.shape[d] = x->shape[d];
            p.mstr[d] = mask->shape[d] == x->shape[d] ? mstr[d] : 0;
        }
        mask_mul_kernel<F><<<hg_cuda_blocks(x->size), HG_CUDA_THREADS, 0, s>>>(
            (const T *)hg_data(x), (const T *)hg_data(mask), (T *)hg_data(y), p, x->size);
    }
    static void host_values(double keep, T *scale, T *zero);
};

/* The CPU's scale and zero per dtype: double for float64, float (then half) for the others. */
template <> void dropout_run<F_f64>::host_values(double keep, double *scale, double *zero)
{
    *scale = 1.0 / keep;
    *zero = 0.0 * *scale;
}
template <> void dropout_run<F_f32>::host_values(double keep, float *scale, float *zero)
{
    *scale = 1.0f / (float)keep;
    *zero = 0.0f * *scale;
}
template <> void dropout_run<F_f16>::host_values(double keep, uint16_t *scale, uint16_t *zero)
{
    const float sf = 1.0f / (float)keep, zf = 0.0f * sf;
    *scale = hg_float_to_half(sf);
    *zero = hg_float_to_half(zf);
}

/* Outside training (mode 'training') or with p == 0: y = x and a mask of ones. Otherwise a fresh
 * mask from the counter-based generator above, seeded from the global generator (so
 * mx.random.seed replays it); the mask cannot equal the CPU's stream, its distribution does. */
GPU_FWD(dropout_gpu)
{
    STREAM;
    const double p = a->v[D_P].f;
    const bool active = p > 0 && (ctx->is_train || a->v[D_MODE].i == MODE_ALWAYS);
    hg_tensor *x = in[0], *y = out[0], *mask = nout > 1 ? out[1] : NULL;
    const hg_dtype dt = x->dtype;
    if (!active) {
        HG_TRY(copy_whole(op, s, y, x));
        if (!mask || mask->size == 0) return HG_OK;
#define ONES(F) dropout_run<F>::ones((F::T *)hg_data(mask), mask->size, s)
        if (!FLOAT_DISPATCH(dt, ONES)) goto bad_type;
#undef ONES
        return hg_cuda_launched(op->name);
    }
    if (!mask) return hg_error(HG_ERR_INTERNAL, "Dropout: called without its mask output");
    if (x->size == 0) return HG_OK;
    {
        uint64_t seed;
        hg_rng_u64(&seed, 1);
#define DRAW(F) dropout_run<F>::draw(x, mask, y, 1.0 - p, seed, s)
        if (!FLOAT_DISPATCH(dt, DRAW)) goto bad_type;
#undef DRAW
    }
    return hg_cuda_launched(op->name);
bad_type:
    return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                    hg_dtype_name(dt));
}

/* ---- nn_train.c: L2Normalization ------------------------------------------------------------- */

#define L2_BLOCK 256 /* threads per row of the row modes */

/* Block-wide sum of a double per thread (blockDim.x == L2_BLOCK); every thread gets it. */
__device__ double block_sum(double v)
{
    __shared__ double buf[L2_BLOCK];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int w = L2_BLOCK / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    double r = buf[0];
    __syncthreads();
    return r;
}

/* Row modes: one block per row; norm = sqrt(sum x^2 + eps) rounded to the dtype once. */
template <class F>
__global__ void l2_rows_kernel(const typename F::T *x, typename F::T *y, typename F::T *norm,
                               int64_t rows, int64_t len, double eps)
{
    typedef typename F::R R;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename F::T *xr = x + r * len;
        typename F::T *yr = y + r * len;
        double acc = 0;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
            double v = F::ld(xr[i]);
            acc += v * v;
        }
        acc = block_sum(acc);
        const typename F::T nt = F::st((R)sqrt(acc + eps));
        const R d = F::ld(nt);
        if (norm && threadIdx.x == 0) norm[r] = nt;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) yr[i] = F::st(F::ld(xr[i]) / d);
    }
}

/* Channel mode: one thread per (sample, position), summing across the c channels. */
template <class F>
__global__ void l2_channel_kernel(const typename F::T *x, typename F::T *y, typename F::T *norm,
                                  int64_t rows, int64_t c, int64_t sp, double eps)
{
    typedef typename F::R R;
    const int64_t n = rows * sp, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += step) {
        const int64_t b = u / sp, q = u % sp;
        const typename F::T *xb = x + b * c * sp + q;
        typename F::T *yb = y + b * c * sp + q;
        double acc = 0;
        for (int64_t k = 0; k < c; k++) {
            double v = F::ld(xb[k * sp]);
            acc += v * v;
        }
        const typename F::T nt = F::st((R)sqrt(acc + eps));
        const R d = F::ld(nt);
        if (norm) norm[u] = nt;
        for (int64_t k = 0; k < c; k++) yb[k * sp] = F::st(F::ld(xb[k * sp]) / d);
    }
}

/* Backward from (dy, y, norm): dx = (dy - y * s) / norm, s = sum(dy * y) in double. */
template <class F>
__global__ void l2b_rows_kernel(const typename F::T *dy, const typename F::T *y,
                                const typename F::T *norm, typename F::T *dx, int64_t rows,
                                int64_t len)
{
    typedef typename F::R R;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t o = r * len;
        double acc = 0;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
            acc += (double)F::ld(dy[o + i]) * (double)F::ld(y[o + i]);
        acc = block_sum(acc);
        const R sm = (R)acc, d = F::ld(norm[r]);
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
            dx[o + i] = F::st((F::ld(dy[o + i]) - F::ld(y[o + i]) * sm) / d);
    }
}

template <class F>
__global__ void l2b_channel_kernel(const typename F::T *dy, const typename F::T *y,
                                   const typename F::T *norm, typename F::T *dx, int64_t rows,
                                   int64_t c, int64_t sp)
{
    typedef typename F::R R;
    const int64_t n = rows * sp, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += step) {
        const int64_t base = (u / sp) * c * sp + u % sp;
        double acc = 0;
        for (int64_t k = 0; k < c; k++)
            acc += (double)F::ld(dy[base + k * sp]) * (double)F::ld(y[base + k * sp]);
        const R sm = (R)acc, d = F::ld(norm[u]);
        for (int64_t k = 0; k < c; k++) {
            const int64_t q = base + k * sp;
            dx[q] = F::st((F::ld(dy[q]) - F::ld(y[q]) * sm) / d);
        }
    }
}

unsigned row_blocks(int64_t rows)
{
    return (unsigned)(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535);
}

GPU_FWD(l2norm_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const int mode = (int)a->v[L2_MODE].i;
    const double eps = a->v[L2_EPS].f;
    void *norm = nout > 1 ? hg_data(out[1]) : NULL;
    if (mode == L2_CHANNEL) {
        const int64_t rows = x->shape[0], c = x->shape[1];
        const int64_t sp = hg_shape_size(x->ndim - 2, x->shape + 2);
        if (rows == 0 || sp == 0) return HG_OK; /* no norm to write either */
#define L2C(F)                                                                                  \
    l2_channel_kernel<F><<<hg_cuda_blocks(rows * sp), HG_CUDA_THREADS, 0, s>>>(                 \
        (const F::T *)hg_data(x), (F::T *)hg_data(out[0]), (F::T *)norm, rows, c, sp, eps)
        if (!FLOAT_DISPATCH(x->dtype, L2C)) goto bad_type;
#undef L2C
        return hg_cuda_launched(op->name);
    }
    {
        const int lead = mode == L2_INSTANCE ? 1 : 2; /* dims that index the rows */
        const int64_t rows = hg_shape_size(lead, x->shape);
        const int64_t len = hg_shape_size(x->ndim - lead, x->shape + lead);
        if (rows == 0) return HG_OK;
#define L2R(F)                                                                                  \
    l2_rows_kernel<F><<<row_blocks(rows), L2_BLOCK, 0, s>>>(                                    \
        (const F::T *)hg_data(x), (F::T *)hg_data(out[0]), (F::T *)norm, rows, len, eps)
        if (!FLOAT_DISPATCH(x->dtype, L2R)) goto bad_type;
#undef L2R
    }
    return hg_cuda_launched(op->name);
bad_type:
    return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                    hg_dtype_name(x->dtype));
}

GPU_FWD(l2norm_bwd_gpu)
{
    STREAM;
    const hg_tensor *y = in[1];
    const int mode = (int)a->v[L2_MODE].i;
    const void *dy = hg_data(in[0]), *yd = hg_data(y), *norm = hg_data(in[2]);
    void *dx = hg_data(out[0]);
    if (mode == L2_CHANNEL) {
        const int64_t rows = y->shape[0], c = y->shape[1];
        const int64_t sp = hg_shape_size(y->ndim - 2, y->shape + 2);
        if (rows == 0 || sp == 0) return HG_OK;
#define L2BC(F)                                                                                 \
    l2b_channel_kernel<F><<<hg_cuda_blocks(rows * sp), HG_CUDA_THREADS, 0, s>>>(                \
        (const F::T *)dy, (const F::T *)yd, (const F::T *)norm, (F::T *)dx, rows, c, sp)
        if (!FLOAT_DISPATCH(y->dtype, L2BC)) goto bad_type;
#undef L2BC
        return hg_cuda_launched(op->name);
    }
    {
        const int lead = mode == L2_INSTANCE ? 1 : 2;
        const int64_t rows = hg_shape_size(lead, y->shape);
        const int64_t len = hg_shape_size(y->ndim - lead, y->shape + lead);
        if (rows == 0) return HG_OK;
#define L2BR(F)                                                                                 \
    l2b_rows_kernel<F><<<row_blocks(rows), L2_BLOCK, 0, s>>>(                                   \
        (const F::T *)dy, (const F::T *)yd, (const F::T *)norm, (F::T *)dx, rows, len)
        if (!FLOAT_DISPATCH(y->dtype, L2BR)) goto bad_type;
#undef L2BR
    }
    return hg_cuda_launched(op->name);
bad_type:
    return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                    hg_dtype_name(y->dtype));
}

/* ---- nn_train.c: log_sigmoid ----------------------------------------------------------------- */

/* log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)); its gradient dy / (1 + exp(x)). float16 runs
 * as float (the element-wise driver's fallback). Inputs of one shape (hg_infer_same). */
__device__ __forceinline__ float log_sigmoid(float v)
{
    return fminf(v, 0.0f) - log1pf(expf(-fabsf(v)));
}
__device__ __forceinline__ double log_sigmoid(double v)
{
    return fmin(v, 0.0) - log1p(exp(-fabs(v)));
}
__device__ __forceinline__ float log_sigmoid_grad(float l, float r) { return l / (1.0f + expf(r)); }
__device__ __forceinline__ double log_sigmoid_grad(double l, double r)
{
    return l / (1.0 + exp(r));
}

template <class F>
__global__ void log_sigmoid_kernel(const typename F::T *x, typename F::T *y, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = F::st(log_sigmoid(F::ld(x[i])));
}

template <class F>
__global__ void log_sigmoid_bwd_kernel(const typename F::T *dy, const typename F::T *x,
                                       typename F::T *dx, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dx[i] = F::st(log_sigmoid_grad(F::ld(dy[i]), F::ld(x[i])));
}

GPU_FWD(log_sigmoid_gpu)
{
    STREAM;
    const int64_t n = out[0]->size;
    if (n == 0) return HG_OK;
#define LS(F)                                                                                   \
    log_sigmoid_kernel<F><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(                        \
        (const F::T *)hg_data(in[0]), (F::T *)hg_data(out[0]), n)
    if (!FLOAT_DISPATCH(in[0]->dtype, LS))
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(in[0]->dtype));
#undef LS
    return hg_cuda_launched(op->name);
}

GPU_FWD(log_sigmoid_bwd_gpu)
{
    STREAM;
    const int64_t n = out[0]->size;
    if (n == 0) return HG_OK;
#define LSB(F)                                                                                  \
    log_sigmoid_bwd_kernel<F><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(                    \
        (const F::T *)hg_data(in[0]), (const F::T *)hg_data(in[1]), (F::T *)hg_data(out[0]), n)
    if (!FLOAT_DISPATCH(in[0]->dtype, LSB))
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(in[0]->dtype));
#undef LSB
    return hg_cuda_launched(op->name);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_layout[] = {
    /* shape.c */
    {"Reshape", copy_gpu},
    {"Flatten", copy_gpu},
    {"transpose", transpose_gpu},
    {"expand_dims", copy_gpu},
    {"squeeze", copy_gpu},
    {"SwapAxis", swapaxis_gpu},
    {"tile", tile_gpu},
    {"repeat", repeat_gpu},
    {"reverse", reverse_gpu},
    {"broadcast_to", broadcast_gpu},
    {"broadcast_axis", broadcast_gpu},
    {"broadcast_like", broadcast_gpu},
    {"diag", diag_gpu},
    {"_backward_Reshape", copy_gpu},
    {"_backward_tile", bwd_tile_gpu},
    {"_backward_repeat", bwd_repeat_gpu},
    {"_backward_diag", bwd_diag_gpu},
    /* slicing.c */
    {"Concat", concat_gpu},
    {"stack", stack_gpu},
    {"SliceChannel", split_gpu},
    {"slice", slice_gpu},
    {"slice_axis", slice_axis_gpu},
    {"slice_like", slice_like_gpu},
    {"_slice_assign", slice_assign_gpu},
    {"_slice_assign_scalar", slice_assign_scalar_gpu},
    {"_backward_Concat", bwd_concat_gpu},
    {"_backward_slice_axis", bwd_slice_axis_gpu},
    {"_backward_slice_like", bwd_slice_like_gpu},
    /* cast.c */
    {"Cast", cast_gpu},
    {"_backward_Cast", cast_gpu},
    /* nn_train.c */
    {"Dropout", dropout_gpu},
    {"L2Normalization", l2norm_gpu},
    {"_backward_L2Normalization", l2norm_bwd_gpu},
    {"log_sigmoid", log_sigmoid_gpu},
    {"_backward_log_sigmoid", log_sigmoid_bwd_gpu},
    {NULL, NULL},
};
