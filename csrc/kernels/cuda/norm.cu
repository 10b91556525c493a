/* GPU kernels of the row normalisations of ops/norm.c: LayerNorm, InstanceNorm, GroupNorm and
 * their _backward_ ops (BatchNorm's are in dnn.cu).
 *
 * As on the CPU, the data is a set of rows: InstanceNorm's are (N*C, spatial), GroupNorm's
 * (N*G, C/G*spatial), LayerNorm's the (outer, inner) pairs of [outer, R, inner], a row's R
 * entries `inner` apart. One block normalises one row. The arithmetic is the CPU kernel's, form
 * for form: the statistics are two passes accumulated in double (the mean, then the centred sum
 * of squares), and the final scaling is done in the element type where the CPU does it in the
 * element type (per-row gamma, and LayerNorm over the last axis) and in double where the CPU
 * does (LayerNorm over an inner axis). float16 computes as float32 (the CPU widens float16 to a
 * float32 copy, runs the float32 kernel and narrows the results). Only the order of the
 * additions differs from the CPU.
 *
 * The backward ops' gamma / beta gradients are summed in double: per row first (InstanceNorm,
 * GroupNorm: the row's sums are kept in a device buffer, then summed per channel / group in row
 * order), or per element of the normalised axis over all rows (LayerNorm).
 */
#include <cuda_fp16.h>
#include <math.h>

#include "kernels/cuda/cuda_rt.h"
#include "ops/norm.h"

namespace
{

hg_status begin(const hg_exec_ctx *ctx, cudaStream_t *s)
{
    HG_TRY(hg_cuda_use(ctx->device_id));
    *s = hg_cuda_stream(ctx->device_id);
    return *s ? HG_OK : HG_ERR_INTERNAL; /* the message is set */
}

#define FULL_MASK 0xffffffffu
#define NORM_THREADS 256

/* The element type S of a tensor and the type T the CPU computes in: float16 as float. */
template <typename S> struct calc {
    typedef S type;
};
template <> struct calc<uint16_t> {
    typedef float type;
};

__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ double ld(double v) { return v; }
__device__ __forceinline__ float ld(uint16_t v) { return __half2float(__ushort_as_half(v)); }
__device__ __forceinline__ void st(float *p, float v) { *p = v; }
__device__ __forceinline__ void st(double *p, double v) { *p = v; }
__device__ __forceinline__ void st(uint16_t *p, float v)
{
    *p = __half_as_ushort(__float2half_rn(v));
}

/* Products and sums rounded one at a time, as the CPU computes them (no fused multiply-add). */
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }

/* The sum of one double per thread over the block; every thread gets it. sh holds 32 values.
 * All threads of the block must call it. */
__device__ double block_sum(double v, double *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(FULL_MASK, v, d);
    if (nw == 1) return __shfl_sync(FULL_MASK, v, 0);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? sh[lane] : 0.0;
        for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(FULL_MASK, v, d);
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    v = sh[0];
    __syncthreads();
    return v;
}

unsigned grid_for(int64_t items)
{
    return (unsigned)(items < 1 ? 1 : items < HG_CUDA_MAX_BLOCKS ? items : HG_CUDA_MAX_BLOCKS);
}

/* Threads per block for rows of R entries (a multiple of 32). */
unsigned block_for(int64_t R) { return R >= 2048 ? 256 : R >= 512 ? 128 : R >= 128 ? 64 : 32; }

/* A normalisation's rows: row t is (o, i) = (t / I, t % I), its entry k at
 * o * R * I + k * I + i. pgroups > 0: gamma / beta per row, index t % pgroups (InstanceNorm,
 * GroupNorm, I == 1); 0: per entry of the row (LayerNorm). */
struct rows {
    int64_t R, I, nrows, pgroups;
    double eps;
    __device__ int64_t base(int64_t t) const { return (t / I) * R * I + t % I; }
};

/* ---- forward ------------------------------------------------------------------------------ */

template <typename S>
__global__ void norm_fwd(const S *__restrict__ x, const S *__restrict__ gm,
                         const S *__restrict__ bt, S *__restrict__ y, S *__restrict__ mean,
                         S *__restrict__ stat, rows w, bool store_var)
{
    typedef typename calc<S>::type T;
    __shared__ double sh[32];
    const int64_t R = w.R, I = w.I;
    for (int64_t t = blockIdx.x; t < w.nrows; t += gridDim.x) {
        const S *p = x + w.base(t);
        S *q = y + w.base(t);
        double s = 0, ss = 0;
        for (int64_t k = threadIdx.x; k < R; k += blockDim.x) s += (double)ld(p[k * I]);
        s = block_sum(s, sh);
        const double m = R > 0 ? s / (double)R : 0.0;
        for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
            const double d = (double)ld(p[k * I]) - m;
            ss += d * d;
        }
        ss = block_sum(ss, sh);
        const double v = R > 0 ? ss / (double)R : 0.0, sd = sqrt(v + w.eps);
        if (threadIdx.x == 0) {
            st(mean + t, (T)m);
            st(stat + t, (T)(store_var ? v : sd));
        }
        const double inv = 1.0 / sd;
        if (w.pgroups > 0) {
            /* per-row gamma: y = x * scale + shift, both rounded to T */
            const int64_t c = t % w.pgroups;
            const double g = (double)ld(gm[c]), b = (double)ld(bt[c]);
            const T sc = (T)(g * inv), shf = (T)(b - m * g * inv);
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x)
                st(q + k, add(mul(ld(p[k]), sc), shf));
        } else if (I == 1) {
            /* LayerNorm over the last axis: (x - mean) * inv * gamma + beta in T */
            const T mt = (T)m, it = (T)inv;
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x)
                st(q + k, add(mul(mul(sub(ld(p[k]), mt), it), ld(gm[k])), ld(bt[k])));
        } else {
            /* LayerNorm over an inner axis: the same in double */
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
                const double gk = (double)ld(gm[k]), bk = (double)ld(bt[k]);
                st(q + k * I, (T)(((double)ld(p[k * I]) - m) * inv * gk + bk));
            }
        }
    }
}

template <typename S>
void launch_fwd(cudaStream_t s, hg_tensor *const *in, hg_tensor *const *out, rows w, bool store_var)
{
    norm_fwd<S><<<grid_for(w.nrows), block_for(w.R), 0, s>>>(
        (const S *)hg_data(in[0]), (const S *)hg_data(in[1]), (const S *)hg_data(in[2]),
        (S *)hg_data(out[0]), (S *)hg_data(out[1]), (S *)hg_data(out[2]), w, store_var);
}

hg_status run_fwd(const hg_op_def *op, const hg_exec_ctx *ctx, hg_tensor *const *in,
                  hg_tensor *const *out, rows w, bool store_var)
{
    if (w.nrows == 0) return HG_OK;
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    switch (in[0]->dtype) {
    case HG_DTYPE_F32: launch_fwd<float>(s, in, out, w, store_var); break;
    case HG_DTYPE_F64: launch_fwd<double>(s, in, out, w, store_var); break;
    case HG_DTYPE_F16: launch_fwd<uint16_t>(s, in, out, w, store_var); break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(in[0]->dtype));
    }
    return hg_cuda_launched(op->name);
}

int64_t prod(const int64_t *sh, int b, int e)
{
    int64_t p = 1;
    for (int i = b; i < e; i++) p *= sh[i];
    return p;
}

/* LayerNorm's rows for data x: [outer, R, inner] around the axis (checked by the shape rule). */
rows ln_rows(const hg_attrs *a, const hg_tensor *x)
{
    int64_t ax = a->v[LN_AXIS].i;
    if (ax < 0) ax += x->ndim;
    rows w;
    w.R = x->shape[ax];
    w.I = prod(x->shape, (int)ax + 1, x->ndim);
    w.nrows = prod(x->shape, 0, (int)ax) * w.I;
    w.pgroups = 0;
    w.eps = a->v[LN_EPS].f;
    return w;
}

rows in_rows(const hg_attrs *a, const hg_tensor *x)
{
    rows w;
    w.R = prod(x->shape, 2, x->ndim);
    w.I = 1;
    w.nrows = x->shape[0] * x->shape[1];
    w.pgroups = x->shape[1];
    w.eps = a->v[IN_EPS].f;
    return w;
}

rows gn_rows(const hg_attrs *a, const hg_tensor *x)
{
    const int64_t G = a->v[GN_NUM_GROUPS].i;
    rows w;
    w.R = x->shape[1] / G * prod(x->shape, 2, x->ndim);
    w.I = 1;
    w.nrows = x->shape[0] * G;
    w.pgroups = G;
    w.eps = a->v[GN_EPS].f;
    return w;
}

hg_status layer_norm_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                         hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return run_fwd(op, ctx, in, out, ln_rows(a, in[0]), false);
}

hg_status instance_norm_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return run_fwd(op, ctx, in, out, in_rows(a, in[0]), true);
}

hg_status group_norm_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                         hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return run_fwd(op, ctx, in, out, gn_rows(a, in[0]), false);
}

/* ---- backward ----------------------------------------------------------------------------- */

/* Inputs (dy, x, gamma, mean, stat); stat is the variance (InstanceNorm) or the std. */
template <typename S> struct bwd_args {
    const S *dy, *x, *gm, *mean, *stat;
    S *dx, *dgamma, *dbeta;
    double *rs; /* per-gamma rows: the row's d gamma and d beta sums, 2 per row */
    bool stat_is_var;
};

__device__ __forceinline__ double inv_of(double stat, double eps, bool is_var)
{
    return is_var ? 1.0 / sqrt(stat + eps) : 1.0 / stat;
}

/* d data, one block per row, in the CPU's three forms; per-gamma rows also keep their sums. */
template <typename S> __global__ void norm_bwd_dx(bwd_args<S> p, rows w)
{
    typedef typename calc<S>::type T;
    __shared__ double sh[32];
    const int64_t R = w.R, I = w.I;
    const double invR = R > 0 ? 1.0 / (double)R : 0.0;
    for (int64_t t = blockIdx.x; t < w.nrows; t += gridDim.x) {
        const S *x = p.x + w.base(t), *dy = p.dy + w.base(t);
        S *dx = p.dx + w.base(t);
        const double m = (double)ld(p.mean[t]);
        const double inv = inv_of((double)ld(p.stat[t]), w.eps, p.stat_is_var);
        double s1 = 0, s2 = 0;
        if (w.pgroups > 0) {
            const int64_t c = t % w.pgroups;
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
                const double d = (double)ld(dy[k]);
                s1 += d;
                s2 += d * ((double)ld(x[k]) - m);
            }
            s1 = block_sum(s1, sh);
            s2 = block_sum(s2, sh) * inv;
            if (threadIdx.x == 0) {
                p.rs[2 * t] = s2;
                p.rs[2 * t + 1] = s1;
            }
            const double g = (double)ld(p.gm[c]);
            const T a = (T)(g * inv), b = (T)(-g * inv * inv * s2 * invR),
                    cc = (T)(-g * inv * s1 * invR), mt = (T)m;
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x)
                st(dx + k, add(add(mul(a, ld(dy[k])), mul(b, sub(ld(x[k]), mt))), cc));
        } else if (I == 1) {
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
                const double xh = ((double)ld(x[k]) - m) * inv;
                const double gd = (double)ld(dy[k]) * (double)ld(p.gm[k]);
                s1 += gd;
                s2 += gd * xh;
            }
            s1 = block_sum(s1, sh);
            s2 = block_sum(s2, sh);
            const T it = (T)inv, mt = (T)m, c1 = (T)(s1 * invR), c2 = (T)(s2 * invR);
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
                const T xh = mul(sub(ld(x[k]), mt), it);
                st(dx + k, mul(it, sub(sub(mul(ld(dy[k]), ld(p.gm[k])), c1), mul(xh, c2))));
            }
        } else {
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
                const double g = (double)ld(p.gm[k]);
                const double xh = ((double)ld(x[k * I]) - m) * inv, d = (double)ld(dy[k * I]);
                s1 += d * g;
                s2 += d * g * xh;
            }
            s1 = block_sum(s1, sh) * invR;
            s2 = block_sum(s2, sh) * invR;
            for (int64_t k = threadIdx.x; k < R; k += blockDim.x) {
                const double g = (double)ld(p.gm[k]);
                const double xh = ((double)ld(x[k * I]) - m) * inv;
                st(dx + k * I, (T)(inv * ((double)ld(dy[k * I]) * g - s1 - xh * s2)));
            }
        }
    }
}

/* d gamma / d beta of per-row gamma: block c sums the rows c, c + P, ... */
template <typename S> __global__ void norm_bwd_dg_rows(bwd_args<S> p, int64_t nrows, int64_t P)
{
    typedef typename calc<S>::type T;
    __shared__ double sh[32];
    for (int64_t c = blockIdx.x; c < P; c += gridDim.x) {
        double g = 0, b = 0;
        for (int64_t t = c + threadIdx.x * P; t < nrows; t += (int64_t)blockDim.x * P) {
            g += p.rs[2 * t];
            b += p.rs[2 * t + 1];
        }
        g = block_sum(g, sh);
        b = block_sum(b, sh);
        if (threadIdx.x == 0) {
            st(p.dgamma + c, (T)g);
            st(p.dbeta + c, (T)b);
        }
    }
}

/* d gamma / d beta of LayerNorm: block k sums entry k of every row. */
template <typename S> __global__ void norm_bwd_dg_cols(bwd_args<S> p, rows w)
{
    typedef typename calc<S>::type T;
    __shared__ double sh[32];
    for (int64_t k = blockIdx.x; k < w.R; k += gridDim.x) {
        double g = 0, b = 0;
        for (int64_t t = threadIdx.x; t < w.nrows; t += blockDim.x) {
            const int64_t e = w.base(t) + k * w.I;
            const double m = (double)ld(p.mean[t]);
            const double inv = inv_of((double)ld(p.stat[t]), w.eps, p.stat_is_var);
            const double d = (double)ld(p.dy[e]);
            g += d * (((double)ld(p.x[e]) - m) * inv);
            b += d;
        }
        g = block_sum(g, sh);
        b = block_sum(b, sh);
        if (threadIdx.x == 0) {
            st(p.dgamma + k, (T)g);
            st(p.dbeta + k, (T)b);
        }
    }
}

template <typename S>
hg_status launch_bwd(const hg_op_def *op, const hg_exec_ctx *ctx, cudaStream_t s,
                     hg_tensor *const *in, hg_tensor *const *out, rows w, bool stat_is_var)
{
    bwd_args<S> p;
    p.dy = (const S *)hg_data(in[0]);
    p.x = (const S *)hg_data(in[1]);
    p.gm = (const S *)hg_data(in[2]);
    p.mean = (const S *)hg_data(in[3]);
    p.stat = (const S *)hg_data(in[4]);
    p.dx = (S *)hg_data(out[0]);
    p.dgamma = (S *)hg_data(out[1]);
    p.dbeta = (S *)hg_data(out[2]);
    p.rs = NULL;
    p.stat_is_var = stat_is_var;
    const int64_t P = w.pgroups > 0 ? w.pgroups : w.R;
    if (w.nrows == 0) {
        /* no rows: zero gradients for gamma and beta, as the CPU's empty sums */
        if (P > 0) {
            HG_TRY(
                hg_cuda_status(cudaMemsetAsync(p.dgamma, 0, sizeof(S) * (size_t)P, s), op->name));
            HG_TRY(hg_cuda_status(cudaMemsetAsync(p.dbeta, 0, sizeof(S) * (size_t)P, s), op->name));
        }
        return HG_OK;
    }
    const size_t rs_bytes = sizeof(double) * 2 * (size_t)w.nrows;
    if (w.pgroups > 0) HG_TRY(hg_device_alloc(ctx->device_id, rs_bytes, (void **)&p.rs));
    norm_bwd_dx<S><<<grid_for(w.nrows), block_for(w.R), 0, s>>>(p, w);
    hg_status stt = hg_cuda_launched(op->name);
    if (stt == HG_OK && P > 0) {
        if (w.pgroups > 0)
            norm_bwd_dg_rows<S>
                <<<grid_for(P), block_for(w.nrows / P), 0, s>>>(p, w.nrows, w.pgroups);
        else norm_bwd_dg_cols<S><<<grid_for(P), block_for(w.nrows), 0, s>>>(p, w);
        stt = hg_cuda_launched(op->name);
    }
    if (p.rs) hg_device_free(ctx->device_id, p.rs, rs_bytes);
    return stt;
}

hg_status run_bwd(const hg_op_def *op, const hg_exec_ctx *ctx, hg_tensor *const *in,
                  hg_tensor *const *out, rows w, bool stat_is_var)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    switch (in[1]->dtype) {
    case HG_DTYPE_F32: return launch_bwd<float>(op, ctx, s, in, out, w, stat_is_var);
    case HG_DTYPE_F64: return launch_bwd<double>(op, ctx, s, in, out, w, stat_is_var);
    case HG_DTYPE_F16: return launch_bwd<uint16_t>(op, ctx, s, in, out, w, stat_is_var);
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(in[1]->dtype));
    }
}

hg_status layer_norm_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return run_bwd(op, ctx, in, out, ln_rows(a, in[1]), false);
}

hg_status instance_norm_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return run_bwd(op, ctx, in, out, in_rows(a, in[1]), true);
}

hg_status group_norm_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return run_bwd(op, ctx, in, out, gn_rows(a, in[1]), false);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_norm[] = {
    {"LayerNorm", layer_norm_gpu},
    {"_backward_LayerNorm", layer_norm_bwd_gpu},
    {"InstanceNorm", instance_norm_gpu},
    {"_backward_InstanceNorm", instance_norm_bwd_gpu},
    {"GroupNorm", group_norm_gpu},
    {"_backward_GroupNorm", group_norm_bwd_gpu},
    {NULL, NULL},
};
