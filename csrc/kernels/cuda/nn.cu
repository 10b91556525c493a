/* GPU kernels of LeakyReLU (ops/nn_basic.c) and of the ops of ops/legacy_output.c that are not
 * softmaxes (those are in softmax.cu): LinearRegressionOutput, MAERegressionOutput,
 * LogisticRegressionOutput, SVMOutput, MakeLoss, hard_sigmoid, smooth_l1, and the _backward_ ops
 * of all of them.
 *
 * LeakyReLU computes as the CPU's element-wise tiles do: in the dtype for float32 and float64,
 * in float for float16 (read and written through float), with the attribute converted to that
 * type first. rrelu outside training is leaky with the mean slope (its mask output holds that
 * slope); in training the slopes are drawn on the device from a counter-based hash seeded by
 * the global generator, so they are uniform in [lower, upper) like the CPU's but not the same
 * numbers. prelu's gamma lines up with data axes 0 and 1 by the CPU's rule
 * (hg_prelu_gamma_shape); its gradient sums in double, one block per gamma entry.
 *
 * The output layers' backward kernels read any float dtype through double one element at a
 * time, round through the dtype where the CPU does, and count on the device where the CPU's
 * normalisation counts (MakeLoss 'valid'), so nothing waits for the device.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include "kernels/cuda/cuda_rt.h"
#include "ops/legacy_output.h"
#include "ops/nn_basic.h"

extern "C" {
#include "core/rng.h"
}

namespace
{

hg_status begin(const hg_exec_ctx *ctx, cudaStream_t *s)
{
    HG_TRY(hg_cuda_use(ctx->device_id));
    *s = hg_cuda_stream(ctx->device_id);
    return *s ? HG_OK : HG_ERR_INTERNAL; /* the message is set */
}

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }

/* Loads in the compute type (float for float16 and float32, double for float64) and stores. */
__device__ __forceinline__ float ldf(float v) { return v; }
__device__ __forceinline__ double ldf(double v) { return v; }
__device__ __forceinline__ float ldf(uint16_t v) { return h2f(v); }
__device__ __forceinline__ void st(float *p, double v) { *p = (float)v; }
__device__ __forceinline__ void st(double *p, double v) { *p = v; }
__device__ __forceinline__ void st(uint16_t *p, double v) { *p = f2h((float)v); }

template <typename T> struct calc {
    typedef float type;
};
template <> struct calc<double> {
    typedef double type;
};

__device__ __forceinline__ float m_expm1(float v) { return expm1f(v); }
__device__ __forceinline__ double m_expm1(double v) { return expm1(v); }
__device__ __forceinline__ float m_exp(float v) { return expf(v); }
__device__ __forceinline__ double m_exp(double v) { return exp(v); }
__device__ __forceinline__ float m_erf(float v) { return erff(v); }
__device__ __forceinline__ double m_erf(double v) { return erf(v); }

/* Any dtype's element as double (labels may be integers). */
__device__ double ld_any(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return h2f(((const uint16_t *)p)[i]);
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

__device__ __forceinline__ double as_dtype(int dt, double v)
{
    if (dt == HG_DTYPE_F32) return (float)v;
    if (dt == HG_DTYPE_F16) return h2f(f2h((float)v));
    return v;
}

double as_dtype_host(hg_dtype dt, double v)
{
    if (dt == HG_DTYPE_F32) return (float)v;
    if (dt == HG_DTYPE_F16) return hg_half_to_float(hg_float_to_half((float)v));
    return v;
}

#define GRID_LOOP(i, n)                                                                         \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                   \
         i += (int64_t)gridDim.x * blockDim.x)

/* Calls FN<T>(args) for a float dtype. */
#define FLOAT_TYPED(DT, FN, ...)                                                                \
    do {                                                                                        \
        if ((DT) == HG_DTYPE_F32) FN<float>(__VA_ARGS__);                                       \
        else if ((DT) == HG_DTYPE_F64) FN<double>(__VA_ARGS__);                                 \
        else FN<uint16_t>(__VA_ARGS__);                                                         \
    } while (0)

/* ---- LeakyReLU ---------------------------------------------------------------------------- */

/* MXNet 1.9.1 declares both as float, so float64 SELU uses them rounded to float32. */
#define SELU_LAMBDA 1.0507009873554805f
#define SELU_ALPHA 1.6732632423543772f
#define SQRT1_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

/* leaky, rrelu (k: the mean slope), elu, selu, gelu. k is the slope attribute in the compute
 * type. */
template <typename T> __global__ void lrelu_fwd(const T *x, T *y, int64_t n, int act, double k_)
{
    typedef typename calc<T>::type C;
    const C k = (C)k_;
    GRID_LOOP(i, n)
    {
        const C v = ldf(x[i]);
        C r;
        switch (act) {
        case ACT_ELU: r = v > 0 ? v : k * m_expm1(v); break;
        case ACT_SELU: r = (C)SELU_LAMBDA * (v > 0 ? v : (C)SELU_ALPHA * m_expm1(v)); break;
        case ACT_GELU: r = (C)0.5 * v * (1 + m_erf(v * (C)SQRT1_2)); break;
        default: r = v > 0 ? v : k * v; break;
        }
        st(y + i, r);
    }
}

/* Data as [A, B, R] (axes 0, 1, the rest); gamma as [ga, gb] on axes 0 and 1 (1: broadcast). */
struct prelu_geom {
    int64_t A, B, R, ga, gb;
};

prelu_geom prelu_geom_of(const hg_tensor *x, const hg_tensor *gamma)
{
    hg_meta dm = hg_meta_of(x), gm = hg_meta_of(gamma);
    int64_t gs[HG_MAX_NDIM];
    hg_prelu_gamma_shape(&dm, &gm, gs);
    prelu_geom g;
    g.A = x->shape[0];
    g.B = x->ndim > 1 ? x->shape[1] : 1;
    g.R = 1;
    for (int d = 2; d < x->ndim; d++) g.R *= x->shape[d];
    g.ga = gs[0];
    g.gb = x->ndim > 1 ? gs[1] : 1;
    return g;
}

__device__ __forceinline__ int64_t gamma_index(const prelu_geom &g, int64_t i)
{
    const int64_t row = i / g.R, a = row / g.B, b = row % g.B;
    return (g.ga > 1 ? a : 0) * g.gb + (g.gb > 1 ? b : 0);
}

template <typename T>
__global__ void prelu_fwd(const T *x, const T *gamma, T *y, int64_t n, prelu_geom g)
{
    typedef typename calc<T>::type C;
    GRID_LOOP(i, n)
    {
        const C l = ldf(x[i]), r = ldf(gamma[gamma_index(g, i)]);
        st(y + i, l > 0 ? l : l * r);
    }
}

template <typename T> __global__ void fill_value(T *y, int64_t n, double v)
{
    GRID_LOOP(i, n) st(y + i, v);
}

/* A uniform double in [0, 1) for element i: splitmix64 of the seed and the index. */
__device__ __forceinline__ double unit_hash(unsigned long long seed, int64_t i)
{
    unsigned long long z = seed + (unsigned long long)(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* rrelu in training: slope k = lower + span * u, kept (in the dtype) as the mask. */
template <typename T>
__global__ void rrelu_train(const T *x, T *y, T *mask, int64_t n, double lo, double span,
                            unsigned long long seed)
{
    typedef typename calc<T>::type C;
    GRID_LOOP(i, n)
    {
        st(mask + i, lo + span * unit_hash(seed, i));
        const C k = ldf(mask[i]), v = ldf(x[i]);
        st(y + i, v > 0 ? v : v * k);
    }
}

template <typename T>
void lrelu_launch(cudaStream_t s, const hg_attrs *a, bool train, hg_tensor *const *in, int nout,
                  hg_tensor *const *out)
{
    const int act = (int)a->v[LR_ACT_TYPE].i;
    const int64_t n = in[0]->size;
    const unsigned g = hg_cuda_blocks(n);
    const T *x = (const T *)hg_data(in[0]);
    T *y = (T *)hg_data(out[0]);
    const double lo = a->v[LR_LOWER].f, hi = a->v[LR_UPPER].f;
    if (act == ACT_PRELU) {
        prelu_fwd<T><<<g, HG_CUDA_THREADS, 0, s>>>(x, (const T *)hg_data(in[1]), y, n,
                                                   prelu_geom_of(in[0], in[1]));
    } else if (act == ACT_RRELU && train) {
        uint64_t seed;
        hg_rng_u64(&seed, 1);
        rrelu_train<T><<<g, HG_CUDA_THREADS, 0, s>>>(x, y, (T *)hg_data(out[1]), n, lo, hi - lo,
                                                     (unsigned long long)seed);
    } else {
        if (act == ACT_RRELU && nout > 1)
            fill_value<T><<<g, HG_CUDA_THREADS, 0, s>>>((T *)hg_data(out[1]), n, (lo + hi) / 2);
        lrelu_fwd<T><<<g, HG_CUDA_THREADS, 0, s>>>(
            x, y, n, act, act == ACT_RRELU ? (lo + hi) / 2 : a->v[LR_SLOPE].f);
    }
}

hg_status lrelu_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                    hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    if (in[0]->size == 0) return HG_OK;
    FLOAT_TYPED(in[0]->dtype, lrelu_launch, s, a, ctx->is_train, in, nout, out);
    return hg_cuda_launched(op->name);
}

/* dx = dy * f'(x) for leaky, elu, selu, gelu (the CPU's lrg_* tiles); rrelu: the mask's slope. */
template <typename T>
__global__ void lrelu_bwd(const T *dy, const T *x, const T *mask, T *dx, int64_t n, int act,
                          double k_)
{
    typedef typename calc<T>::type C;
    const C k = (C)k_;
    GRID_LOOP(i, n)
    {
        const C v = ldf(x[i]), d = ldf(dy[i]);
        C f;
        switch (act) {
        case ACT_RRELU: f = v > 0 ? (C)1 : ldf(mask[i]); break;
        case ACT_ELU: f = v > 0 ? (C)1 : k * m_exp(v); break;
        case ACT_SELU: f = (C)SELU_LAMBDA * (v > 0 ? (C)1 : (C)SELU_ALPHA * m_exp(v)); break;
        case ACT_GELU:
            f = (C)0.5 * (1 + m_erf(v * (C)SQRT1_2)) + v * m_exp(v * v * (C)-0.5) * (C)INV_SQRT_2PI;
            break;
        default: f = v > 0 ? (C)1 : k; break;
        }
        st(dx + i, act == ACT_RRELU ? (v > 0 ? d : d * f) : d * f);
    }
}

template <typename T>
__global__ void prelu_bwd_dx(const T *dy, const T *x, const T *gamma, T *dx, int64_t n,
                             prelu_geom g)
{
    typedef typename calc<T>::type C;
    GRID_LOOP(i, n)
    {
        const C v = ldf(x[i]), d = ldf(dy[i]), r = ldf(gamma[gamma_index(g, i)]);
        st(dx + i, v > 0 ? d : d * r);
    }
}

/* dgamma[e] = sum of dy * x over x <= 0 in the elements gamma entry e scales; one block each. */
template <typename T>
__global__ void prelu_bwd_dgamma(const T *dy, const T *x, T *dg, int64_t ng, prelu_geom g)
{
    typedef typename calc<T>::type C;
    __shared__ double sh[HG_CUDA_THREADS / 32];
    const int64_t na = g.ga > 1 ? 1 : g.A, nb = g.gb > 1 ? 1 : g.B, cnt = na * nb * g.R;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int64_t e = blockIdx.x; e < ng; e += gridDim.x) {
        double acc = 0;
        for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
            const int64_t r = k % g.R, ab = k / g.R;
            const int64_t a = g.ga > 1 ? e / g.gb : ab / nb, b = g.gb > 1 ? e % g.gb : ab % nb;
            const int64_t i = (a * g.B + b) * g.R + r;
            const C v = ldf(x[i]), d = ldf(dy[i]);
            acc += v > 0 ? 0.0 : (double)(d * v);
        }
        for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(FULL_MASK, acc, d);
        if (lane == 0) sh[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            acc = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0;
            for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(FULL_MASK, acc, d);
            if (lane == 0) st(dg + e, acc);
        }
        __syncthreads();
    }
}

template <typename T>
void lrelu_bwd_launch(cudaStream_t s, const hg_attrs *a, hg_tensor *const *in,
                      hg_tensor *const *out)
{
    const int act = (int)a->v[LR_ACT_TYPE].i;
    const hg_tensor *x = in[1];
    const int64_t n = x->size;
    const unsigned g = hg_cuda_blocks(n);
    const T *dy = (const T *)hg_data(in[0]), *xd = (const T *)hg_data(x);
    if (act == ACT_PRELU) {
        prelu_geom pg = prelu_geom_of(in[1], in[2]);
        const T *gamma = (const T *)hg_data(in[2]);
        int64_t ng = in[2]->size;
        prelu_bwd_dx<T><<<g, HG_CUDA_THREADS, 0, s>>>(dy, xd, gamma, (T *)hg_data(out[0]), n, pg);
        unsigned gb = (unsigned)(ng < HG_CUDA_MAX_BLOCKS ? ng : HG_CUDA_MAX_BLOCKS);
        prelu_bwd_dgamma<T><<<gb, HG_CUDA_THREADS, 0, s>>>(dy, xd, (T *)hg_data(out[1]), ng, pg);
        return;
    }
    const T *mask = act == ACT_RRELU ? (const T *)hg_data(in[2]) : NULL;
    lrelu_bwd<T><<<g, HG_CUDA_THREADS, 0, s>>>(dy, xd, mask, (T *)hg_data(out[0]), n, act,
                                               a->v[LR_SLOPE].f);
}

/* _backward_LeakyReLU: (dy, data[, gamma or mask]) -> dx[, dgamma]. */
hg_status lrelu_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                        hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    if (in[1]->size == 0) { /* dgamma of nothing is zero */
        if (nout > 1 && out[1]->size > 0)
            return hg_cuda_status(
                cudaMemsetAsync(hg_data(out[1]), 0,
                                (size_t)out[1]->size * hg_dtype_size(out[1]->dtype), s),
                op->name);
        return HG_OK;
    }
    FLOAT_TYPED(in[1]->dtype, lrelu_bwd_launch, s, a, in, out);
    return hg_cuda_launched(op->name);
}

/* ---- identity forwards -------------------------------------------------------------------- */

/* LinearRegressionOutput, MAERegressionOutput, SVMOutput, MakeLoss: the data (in place for
 * MakeLoss when the planner shares the buffer). */
hg_status copy_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                   hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    if (hg_data(in[0]) == hg_data(out[0])) return HG_OK;
    size_t bytes = (size_t)in[0]->size * hg_dtype_size(in[0]->dtype);
    return hg_cuda_status(
        cudaMemcpyAsync(hg_data(out[0]), hg_data(in[0]), bytes, cudaMemcpyDeviceToDevice, s),
        op->name);
}

template <typename T> __global__ void sigmoid_k(const T *x, T *y, int64_t n)
{
    GRID_LOOP(i, n) st(y + i, 1 / (1 + exp(-(double)ldf(x[i]))));
}

template <typename T> void sigmoid_launch(cudaStream_t s, const hg_tensor *x, hg_tensor *y)
{
    sigmoid_k<T><<<hg_cuda_blocks(x->size), HG_CUDA_THREADS, 0, s>>>((const T *)hg_data(x),
                                                                     (T *)hg_data(y), x->size);
}

/* LogisticRegressionOutput: sigmoid, in double. */
hg_status logreg_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    FLOAT_TYPED(in[0]->dtype, sigmoid_launch, s, in[0], out[0]);
    return hg_cuda_launched(op->name);
}

/* ---- regression outputs' backward --------------------------------------------------------- */

/* (out - label) (its sign, -1 at 0, for MAE) rounded through the dtype, times scale. */
template <typename T>
__global__ void rg_bwd(const void *lab, int ldt, const T *y, T *dx, int64_t n, int dt, bool mae,
                       double scale)
{
    GRID_LOOP(i, n)
    {
        double d = (double)ldf(y[i]) - ld_any(lab, ldt, i);
        st(dx + i, as_dtype(dt, mae ? (d > 0 ? 1 : -1) : d) * scale);
    }
}

template <typename T>
void rg_bwd_launch(cudaStream_t s, const hg_tensor *lab, const hg_tensor *y, hg_tensor *dx,
                   bool mae, double scale)
{
    rg_bwd<T><<<hg_cuda_blocks(y->size), HG_CUDA_THREADS, 0, s>>>(
        hg_data(lab), lab->dtype, (const T *)hg_data(y), (T *)hg_data(dx), y->size, y->dtype, mae,
        scale);
}

/* _backward_{linear,mae,logistic}_reg_out: (label, output). The scale is grad_scale / the
 * outputs per example, rounded through float and then the dtype, as on the CPU. */
hg_status rg_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *lab = in[0], *y = in[1];
    if (y->size == 0) return HG_OK;
    const bool mae = strcmp(op->name, "_backward_mae_reg_out") == 0;
    const double m = (double)(lab->size / lab->shape[0]);
    const double scale = as_dtype_host(y->dtype, (float)(a->v[RG_GRAD_SCALE].f / m));
    FLOAT_TYPED(y->dtype, rg_bwd_launch, s, lab, y, out[0], mae, scale);
    return hg_cuda_launched(op->name);
}

/* ---- SVMOutput's backward ----------------------------------------------------------------- */

__device__ __forceinline__ long long as_class(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (long long)(int)v : (long long)INT64_MIN;
}

/* The hinge (l1) or squared hinge gradient over [rows, n], one label per row. */
template <typename T>
__global__ void sv_bwd(const T *y, const void *lab, int ldt, T *dx, int64_t size, int64_t n,
                       double mg, double rc, bool l1)
{
    GRID_LOOP(i, size)
    {
        const int64_t r = i / n, j = i % n;
        const long long k = as_class(ld_any(lab, ldt, r));
        const double v = ldf(y[i]);
        double g;
        if (j == k) g = l1 ? -(double)(mg > v) * rc : -rc * (mg > v ? 2 * (mg - v) : 0);
        else g = l1 ? (double)(mg > -v) * rc : -rc * (mg > -v ? -2 * (mg + v) : 0);
        st(dx + i, g);
    }
}

template <typename T>
void sv_bwd_launch(cudaStream_t s, const hg_tensor *y, const hg_tensor *lab, hg_tensor *dx,
                   double mg, double rc, bool l1)
{
    const int64_t n = y->shape[y->ndim - 1];
    sv_bwd<T><<<hg_cuda_blocks(y->size), HG_CUDA_THREADS, 0, s>>>(
        (const T *)hg_data(y), hg_data(lab), lab->dtype, (T *)hg_data(dx), y->size, n, mg, rc, l1);
}

/* _backward_SVMOutput: (output, label). */
hg_status sv_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *y = in[0], *lab = in[1];
    if (y->size == 0) return HG_OK;
    const double mg = as_dtype_host(y->dtype, a->v[SV_MARGIN].f);
    const double rc = as_dtype_host(y->dtype, a->v[SV_REG].f);
    FLOAT_TYPED(y->dtype, sv_bwd_launch, s, y, lab, out[0], mg, rc, a->v[SV_USE_LINEAR].b);
    return hg_cuda_launched(op->name);
}

/* ---- MakeLoss's backward ------------------------------------------------------------------ */

/* *cnt += the number of elements above th. */
template <typename T>
__global__ void count_above(const T *x, int64_t n, double th, unsigned long long *cnt)
{
    unsigned long long k = 0;
    GRID_LOOP(i, n) k += (double)ldf(x[i]) > th;
    for (int d = 16; d > 0; d >>= 1) k += __shfl_down_sync(FULL_MASK, k, d);
    if ((threadIdx.x & 31) == 0 && k) atomicAdd(cnt, k);
}

/* dx = g everywhere; with a count ('valid'), g = gs / max(count, 1), both rounded through the
 * dtype. */
template <typename T>
__global__ void ml_fill(T *dx, int64_t n, double g, const unsigned long long *cnt, int dt)
{
    if (cnt) g = as_dtype(dt, g) / as_dtype(dt, (double)(*cnt ? *cnt : 1));
    GRID_LOOP(i, n) st(dx + i, g);
}

template <typename T>
hg_status ml_bwd_launch(const char *name, int dev, cudaStream_t s, const hg_attrs *a,
                        const hg_tensor *x, hg_tensor *dx)
{
    const unsigned grid = hg_cuda_blocks(x->size);
    double g = a->v[ML_GRAD_SCALE].f;
    if (a->v[ML_NORMALIZATION].i == NORM_BATCH) {
        g /= (double)(x->ndim ? x->size / x->shape[x->ndim - 1] : 1);
    } else if (a->v[ML_NORMALIZATION].i == NORM_VALID) {
        const double th = as_dtype_host(x->dtype, a->v[ML_VALID_THRESH].f);
        void *cnt;
        HG_TRY(hg_device_alloc(dev, sizeof(unsigned long long), &cnt));
        hg_status st = hg_cuda_status(cudaMemsetAsync(cnt, 0, sizeof(unsigned long long), s), name);
        if (st == HG_OK) {
            count_above<T><<<grid, HG_CUDA_THREADS, 0, s>>>((const T *)hg_data(x), x->size, th,
                                                            (unsigned long long *)cnt);
            ml_fill<T><<<grid, HG_CUDA_THREADS, 0, s>>>((T *)hg_data(dx), x->size, g,
                                                        (const unsigned long long *)cnt, x->dtype);
            st = hg_cuda_launched(name);
        }
        hg_device_free(dev, cnt, sizeof(unsigned long long));
        return st;
    }
    ml_fill<T><<<grid, HG_CUDA_THREADS, 0, s>>>((T *)hg_data(dx), x->size, g, NULL, x->dtype);
    return hg_cuda_launched(name);
}

/* _backward_MakeLoss: (data). */
hg_status ml_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *x = in[0];
    if (x->size == 0) return HG_OK;
    if (x->dtype == HG_DTYPE_F32)
        return ml_bwd_launch<float>(op->name, ctx->device_id, s, a, x, out[0]);
    if (x->dtype == HG_DTYPE_F64)
        return ml_bwd_launch<double>(op->name, ctx->device_id, s, a, x, out[0]);
    return ml_bwd_launch<uint16_t>(op->name, ctx->device_id, s, a, x, out[0]);
}

/* ---- hard_sigmoid and smooth_l1 ------------------------------------------------------------
 * Element-wise ops of legacy_output.c whose CPU side is a pair of tile functions (float32 and
 * float64; float16 goes through the float32 one): the same expressions in the same type. */

enum { EW_HSIG, EW_HSIG_BWD, EW_SL1, EW_SL1_BWD };

/* x = in0 for the forwards; (dy, x) = (in0, in1) for the backwards. */
template <typename T>
__global__ void loss_ew(const T *in0, const T *in1, T *out, int64_t n, int fn, double p0, double p1)
{
    typedef typename calc<T>::type C;
    const C a = (C)p0, b = (C)p1; /* alpha, beta; or bsq = sigma^2, unused */
    GRID_LOOP(i, n)
    {
        C r;
        if (fn == EW_HSIG) {
            C v = a * (C)ldf(in0[i]) + b;
            r = v < 0 ? (C)0 : v > 1 ? (C)1 : v;
        } else if (fn == EW_HSIG_BWD) {
            C v = a * (C)ldf(in1[i]) + b;
            r = v > 0 && v < 1 ? (C)ldf(in0[i]) * a : (C)0;
        } else {
            const C bsq = a, ib = (C)1 / bsq;
            if (fn == EW_SL1) {
                C v = ldf(in0[i]);
                r = v > ib ? v - (C)0.5 * ib : v < -ib ? -v - (C)0.5 * ib : (C)0.5 * v * v * bsq;
            } else {
                C v = ldf(in1[i]);
                r = (C)ldf(in0[i]) * (v > ib ? (C)1 : v < -ib ? (C)-1 : bsq * v);
            }
        }
        st(out + i, r);
    }
}

template <typename T>
void loss_ew_launch(cudaStream_t s, int nin, hg_tensor *const *in, hg_tensor *out, int fn,
                    double p0, double p1)
{
    const T *in1 = nin > 1 ? (const T *)hg_data(in[1]) : NULL;
    loss_ew<T><<<hg_cuda_blocks(out->size), HG_CUDA_THREADS, 0, s>>>(
        (const T *)hg_data(in[0]), in1, (T *)hg_data(out), out->size, fn, p0, p1);
}

hg_status loss_ew_run(const hg_op_def *op, const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                      hg_tensor *out, int fn, double p0, double p1)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    FLOAT_TYPED(out->dtype, loss_ew_launch, s, nin, in, out, fn, p0, p1);
    return hg_cuda_launched(op->name);
}

/* alpha and beta are rounded to float first, as the CPU's tiles do for both dtypes. */
hg_status hsig_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                   hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return loss_ew_run(op, ctx, nin, in, out[0], op->name[0] == '_' ? EW_HSIG_BWD : EW_HSIG,
                       (float)a->v[HS_ALPHA].f, (float)a->v[HS_BETA].f);
}

hg_status sl1_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                  hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    double sg = a->v[SL_SCALAR].f;
    return loss_ew_run(op, ctx, nin, in, out[0], op->name[0] == '_' ? EW_SL1_BWD : EW_SL1, sg * sg,
                       0);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_nn[] = {
    {"LeakyReLU", lrelu_gpu},
    {"_backward_LeakyReLU", lrelu_bwd_gpu},
    {"LinearRegressionOutput", copy_gpu},
    {"MAERegressionOutput", copy_gpu},
    {"LogisticRegressionOutput", logreg_gpu},
    {"_backward_linear_reg_out", rg_bwd_gpu},
    {"_backward_mae_reg_out", rg_bwd_gpu},
    {"_backward_logistic_reg_out", rg_bwd_gpu},
    {"SVMOutput", copy_gpu},
    {"_backward_SVMOutput", sv_bwd_gpu},
    {"MakeLoss", copy_gpu},
    {"_backward_MakeLoss", ml_bwd_gpu},
    {"hard_sigmoid", hsig_gpu},
    {"_backward_hard_sigmoid", hsig_gpu},
    {"smooth_l1", sl1_gpu},
    {"_backward_smooth_l1", sl1_gpu},
    {NULL, NULL},
};
