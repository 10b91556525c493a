/* GPU kernels of the softmax family (ops/softmax.c): softmax, log_softmax and softmin (axis,
 * temperature, dtype, softmax's length mask), SoftmaxActivation, their _backward_ ops, and the
 * softmax-based output layers of ops/legacy_output.c: SoftmaxOutput, softmax_cross_entropy and
 * their _backward_ ops.
 *
 * The data is viewed as [outer, n, inner] as on the CPU; a column is one (outer, inner) pair,
 * its n entries inner apart. A block reduces one column when the entries are contiguous
 * (inner == 1) or few columns are long, a thread otherwise (consecutive threads then read
 * consecutive columns). The arithmetic is the CPU's, operation for operation: the compute type
 * is float unless either side is float64 (then double), the row's maximum of t * x is
 * subtracted before the exponential, the sum of exponentials is accumulated in double, and
 * softmax rounds each exponential through the output dtype before scaling it by 1 / sum (the
 * CPU stores it, then rescales in place). Only the order of the additions differs. A NaN in a
 * column makes the whole column NaN, on either side. The length-masked forms run in double, as
 * on the CPU.
 *
 * softmax_cross_entropy checks its labels where the CPU reads them; a GPU kernel cannot fail
 * after launch, so a label that names no class makes the loss (or that row's gradient) NaN
 * instead of an error.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include "kernels/cuda/cuda_rt.h"
#include "ops/legacy_output.h"
#include "ops/softmax.h"

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

/* Loads as the CPU's LD_*: float16 and float32 give float, float64 double. */
__device__ __forceinline__ float ldf(float v) { return v; }
__device__ __forceinline__ double ldf(double v) { return v; }
__device__ __forceinline__ float ldf(uint16_t v) { return h2f(v); }
/* Stores as the CPU's ST_* (float16 through float). */
__device__ __forceinline__ void st(float *p, double v) { *p = (float)v; }
__device__ __forceinline__ void st(double *p, double v) { *p = v; }
__device__ __forceinline__ void st(uint16_t *p, double v) { *p = f2h((float)v); }
/* v rounded through dtype T and read back: what the CPU gets storing and reloading it. */
__device__ __forceinline__ float rt(const float *, float v) { return v; }
__device__ __forceinline__ double rt(const float *, double v) { return (float)v; }
__device__ __forceinline__ double rt(const double *, double v) { return v; }
__device__ __forceinline__ float rt(const uint16_t *, float v) { return h2f(f2h(v)); }
__device__ __forceinline__ double rt(const uint16_t *, double v) { return h2f(f2h((float)v)); }
__device__ __forceinline__ float ex(float v) { return expf(v); }
__device__ __forceinline__ double ex(double v) { return exp(v); }

/* Any dtype's element as double (lengths and labels may be integers or floats). */
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

/* v rounded through a float dtype (MXNet scales by values cast to DType). */
__device__ __forceinline__ double as_dtype(int dt, double v)
{
    if (dt == HG_DTYPE_F32) return (float)v;
    if (dt == HG_DTYPE_F16) return h2f(f2h((float)v));
    return v;
}

/* The compute type of a (TI, TO) pair: double when either is float64. */
template <typename TI, typename TO> struct calc {
    typedef float type;
};
template <typename TO> struct calc<double, TO> {
    typedef double type;
};
template <typename TI> struct calc<TI, double> {
    typedef double type;
};
template <> struct calc<double, double> {
    typedef double type;
};

struct op_max {
    template <typename V> __device__ __forceinline__ V operator()(V a, V b) const
    {
        return b > a ? b : a;
    }
};
struct op_add {
    template <typename V> __device__ __forceinline__ V operator()(V a, V b) const { return a + b; }
};

/* The fold of one value per thread over the block; every thread gets it. sh holds 32 values.
 * All threads of the block must call it. */
template <typename V, class F> __device__ V block_fold(V v, V ident, F f, V *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int d = 16; d > 0; d >>= 1) v = f(v, __shfl_down_sync(FULL_MASK, v, d));
    if (nw == 1) return __shfl_sync(FULL_MASK, v, 0);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? sh[lane] : ident;
        for (int d = 16; d > 0; d >>= 1) v = f(v, __shfl_down_sync(FULL_MASK, v, d));
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    v = sh[0];
    __syncthreads();
    return v;
}

/* Threads per block for columns of n entries (a multiple of 32). */
unsigned block_for(int64_t n) { return n >= 2048 ? 256 : n >= 512 ? 128 : n >= 128 ? 64 : 32; }

unsigned grid_for(int64_t items)
{
    return (unsigned)(items < 1 ? 1 : items < HG_CUDA_MAX_BLOCKS ? items : HG_CUDA_MAX_BLOCKS);
}

/* Block per column, or thread per column. */
bool use_block(int64_t cols, int64_t n, int64_t inner)
{
    return inner == 1 || (cols < 1024 && n >= 256);
}

/* ---- softmax / log_softmax / softmin forward ---------------------------------------------- */

/* The shift of a column: the largest t * x is sign(t) times the largest sign(t) * x. */
template <typename TI, typename TO>
__global__ void sm_fwd_block(const TI *__restrict__ x, TO *__restrict__ y, int64_t cols, int64_t n,
                             int64_t inner, double t_, bool log)
{
    typedef typename calc<TI, TO>::type AT;
    __shared__ AT shm[32];
    __shared__ double shs[32];
    const AT t = (AT)t_, sg = t > 0 ? (AT)1 : (AT)-1;
    for (int64_t c = blockIdx.x; c < cols; c += gridDim.x) {
        const int64_t base = (c / inner) * n * inner + c % inner;
        const TI *xc = x + base;
        TO *yc = y + base;
        AT mp = (AT)-INFINITY;
        for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
            AT v = (AT)ldf(xc[k * inner]) * sg;
            mp = v > mp ? v : mp;
        }
        const AT m = block_fold(mp, (AT)-INFINITY, op_max(), shm) * sg;
        double s = 0;
        for (int64_t k = threadIdx.x; k < n; k += blockDim.x)
            s += (double)ex((AT)(((AT)ldf(xc[k * inner]) - m) * t));
        s = block_fold(s, 0.0, op_add(), shs);
        if (log) {
            const AT ls = (AT)::log(s);
            for (int64_t k = threadIdx.x; k < n; k += blockDim.x)
                st(yc + k * inner, ((AT)ldf(xc[k * inner]) - m) * t - ls);
        } else {
            const AT inv = (AT)(1 / s);
            for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
                AT e = ex((AT)(((AT)ldf(xc[k * inner]) - m) * t));
                st(yc + k * inner, (AT)rt((const TO *)0, e) * inv);
            }
        }
    }
}

template <typename TI, typename TO>
__global__ void sm_fwd_thread(const TI *__restrict__ x, TO *__restrict__ y, int64_t cols, int64_t n,
                              int64_t inner, double t_, bool log)
{
    typedef typename calc<TI, TO>::type AT;
    const AT t = (AT)t_, sg = t > 0 ? (AT)1 : (AT)-1;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t base = (c / inner) * n * inner + c % inner;
        const TI *xc = x + base;
        TO *yc = y + base;
        AT mp = (AT)ldf(xc[0]) * sg;
        for (int64_t k = 1; k < n; k++) {
            AT v = (AT)ldf(xc[k * inner]) * sg;
            mp = v > mp ? v : mp;
        }
        const AT m = mp * sg;
        double s = 0;
        for (int64_t k = 0; k < n; k++) s += (double)ex((AT)(((AT)ldf(xc[k * inner]) - m) * t));
        if (log) {
            const AT ls = (AT)::log(s);
            for (int64_t k = 0; k < n; k++)
                st(yc + k * inner, ((AT)ldf(xc[k * inner]) - m) * t - ls);
        } else {
            const AT inv = (AT)(1 / s);
            for (int64_t k = 0; k < n; k++) {
                AT e = ex((AT)(((AT)ldf(xc[k * inner]) - m) * t));
                st(yc + k * inner, (AT)rt((const TO *)0, e) * inv);
            }
        }
    }
}

template <typename TI, typename TO>
void sm_fwd_launch(cudaStream_t s, const void *x, void *y, int64_t size, int64_t n, int64_t inner,
                   double t, bool log)
{
    int64_t cols = size / n;
    if (use_block(cols, n, inner))
        sm_fwd_block<TI, TO><<<grid_for(cols), block_for(n), 0, s>>>((const TI *)x, (TO *)y, cols,
                                                                     n, inner, t, log);
    else
        sm_fwd_thread<TI, TO><<<hg_cuda_blocks(cols), HG_CUDA_THREADS, 0, s>>>(
            (const TI *)x, (TO *)y, cols, n, inner, t, log);
}

/* Calls F<TI, TO>::run(args...) for the float dtypes of two tensors. */
#define FLOAT_PAIR(DI, DO, FN, ...)                                                             \
    do {                                                                                        \
        if (DI == HG_DTYPE_F32 && DO == HG_DTYPE_F32) FN<float, float>(__VA_ARGS__);            \
        else if (DI == HG_DTYPE_F32 && DO == HG_DTYPE_F64) FN<float, double>(__VA_ARGS__);      \
        else if (DI == HG_DTYPE_F32) FN<float, uint16_t>(__VA_ARGS__);                          \
        else if (DI == HG_DTYPE_F64 && DO == HG_DTYPE_F32) FN<double, float>(__VA_ARGS__);      \
        else if (DI == HG_DTYPE_F64 && DO == HG_DTYPE_F64) FN<double, double>(__VA_ARGS__);     \
        else if (DI == HG_DTYPE_F64) FN<double, uint16_t>(__VA_ARGS__);                         \
        else if (DO == HG_DTYPE_F32) FN<uint16_t, float>(__VA_ARGS__);                          \
        else if (DO == HG_DTYPE_F64) FN<uint16_t, double>(__VA_ARGS__);                         \
        else FN<uint16_t, uint16_t>(__VA_ARGS__);                                               \
    } while (0)

/* y = softmax(t * x) (log: its logarithm) over the [outer, n, inner] view, as
 * hg_softmax_view. */
hg_status softmax_view(const char *name, cudaStream_t s, const hg_tensor *x, hg_tensor *y,
                       int64_t n, int64_t inner, double t, bool log)
{
    if (x->size == 0) return HG_OK;
    FLOAT_PAIR(x->dtype, y->dtype, sm_fwd_launch, s, hg_data(x), hg_data(y), x->size, n, inner, t,
               log);
    return hg_cuda_launched(name);
}

/* dx = t * y * (dy - sum(dy * y)) (log: t * (dy - exp(y) * sum(dy))), as hg_softmax_bwd_view:
 * the products of the sum are taken in the loaded type (float for float32 / float16), the sum
 * in double, the rest in the compute type. */
template <typename TI, typename TO>
__global__ void sm_bwd_block(const TI *__restrict__ dy, const TI *__restrict__ y,
                             TO *__restrict__ dx, int64_t cols, int64_t n, int64_t inner, double t_,
                             bool log)
{
    typedef typename calc<TI, TO>::type AT;
    __shared__ double shs[32];
    const AT t = (AT)t_;
    for (int64_t c = blockIdx.x; c < cols; c += gridDim.x) {
        const int64_t base = (c / inner) * n * inner + c % inner;
        double s = 0;
        for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
            const int64_t i = base + k * inner;
            s += log ? (double)ldf(dy[i]) : (double)(ldf(dy[i]) * ldf(y[i]));
        }
        const AT sa = (AT)block_fold(s, 0.0, op_add(), shs);
        for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
            const int64_t i = base + k * inner;
            if (log) st(dx + i, t * ((AT)ldf(dy[i]) - ex((AT)ldf(y[i])) * sa));
            else st(dx + i, t * (AT)ldf(y[i]) * ((AT)ldf(dy[i]) - sa));
        }
    }
}

template <typename TI, typename TO>
__global__ void sm_bwd_thread(const TI *__restrict__ dy, const TI *__restrict__ y,
                              TO *__restrict__ dx, int64_t cols, int64_t n, int64_t inner,
                              double t_, bool log)
{
    typedef typename calc<TI, TO>::type AT;
    const AT t = (AT)t_;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t base = (c / inner) * n * inner + c % inner;
        double s = 0;
        for (int64_t k = 0; k < n; k++) {
            const int64_t i = base + k * inner;
            s += log ? (double)ldf(dy[i]) : (double)(ldf(dy[i]) * ldf(y[i]));
        }
        const AT sa = (AT)s;
        for (int64_t k = 0; k < n; k++) {
            const int64_t i = base + k * inner;
            if (log) st(dx + i, t * ((AT)ldf(dy[i]) - ex((AT)ldf(y[i])) * sa));
            else st(dx + i, t * (AT)ldf(y[i]) * ((AT)ldf(dy[i]) - sa));
        }
    }
}

template <typename TI, typename TO>
void sm_bwd_launch(cudaStream_t s, const void *dy, const void *y, void *dx, int64_t size, int64_t n,
                   int64_t inner, double t, bool log)
{
    int64_t cols = size / n;
    if (use_block(cols, n, inner))
        sm_bwd_block<TI, TO><<<grid_for(cols), block_for(n), 0, s>>>(
            (const TI *)dy, (const TI *)y, (TO *)dx, cols, n, inner, t, log);
    else
        sm_bwd_thread<TI, TO><<<hg_cuda_blocks(cols), HG_CUDA_THREADS, 0, s>>>(
            (const TI *)dy, (const TI *)y, (TO *)dx, cols, n, inner, t, log);
}

hg_status softmax_bwd_view(const char *name, cudaStream_t s, const hg_tensor *dy,
                           const hg_tensor *y, hg_tensor *dx, int64_t n, int64_t inner, double t,
                           bool log)
{
    if (y->size == 0) return HG_OK;
    FLOAT_PAIR(y->dtype, dx->dtype, sm_bwd_launch, s, hg_data(dy), hg_data(y), hg_data(dx), y->size,
               n, inner, t, log);
    return hg_cuda_launched(name);
}

/* ---- the length-masked forms (use_length), in double -------------------------------------- */

/* The length of column c: clamped to [0, n], NaN gives 0. */
__device__ __forceinline__ int64_t col_len(const void *len, int ldt, int64_t c, int64_t n)
{
    double l = ld_any(len, ldt, c);
    return !(l > 0) ? 0 : l >= (double)n ? n : (int64_t)l;
}

template <typename TO>
__global__ void sml_fwd(const void *x, int xdt, const void *len, int ldt, TO *y, int64_t cols,
                        int64_t n, int64_t inner, double t, bool log)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t base = (c / inner) * n * inner + c % inner, L = col_len(len, ldt, c, n);
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < L; k++) {
            double v = ld_any(x, xdt, base + k * inner) * t;
            m = v > m ? v : m;
        }
        for (int64_t k = 0; k < L; k++) s += exp(ld_any(x, xdt, base + k * inner) * t - m);
        for (int64_t k = 0; k < n; k++) {
            double v = ld_any(x, xdt, base + k * inner) * t - m;
            st(y + base + k * inner, k >= L ? 0.0 : log ? v - ::log(s) : exp(v) / s);
        }
    }
}

template <typename TO>
__global__ void sml_bwd(const void *dy, const void *y, int ydt, const void *len, int ldt, TO *dx,
                        int64_t cols, int64_t n, int64_t inner, double t, bool log)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t base = (c / inner) * n * inner + c % inner, L = col_len(len, ldt, c, n);
        double s = 0;
        for (int64_t k = 0; k < L; k++) {
            double d = ld_any(dy, ydt, base + k * inner);
            s += log ? d : d * ld_any(y, ydt, base + k * inner);
        }
        for (int64_t k = 0; k < n; k++) {
            const int64_t i = base + k * inner;
            double d = ld_any(dy, ydt, i), v = ld_any(y, ydt, i);
            double g = log ? d - exp(v) * s : v * (d - s);
            st(dx + i, k >= L ? 0.0 : t * g);
        }
    }
}

/* ---- the ops ------------------------------------------------------------------------------ */

bool sm_is_log(const hg_op_def *op) { return strstr(op->name, "log_softmax") != NULL; }

/* 1 / temperature, negated for softmin. */
double sm_scale(const hg_op_def *op, const hg_attrs *a)
{
    double t = a->v[SM_TEMPERATURE].is_none ? 1.0 : 1.0 / a->v[SM_TEMPERATURE].f;
    return strstr(op->name, "softmin") ? -t : t;
}

int sm_axis(const hg_attrs *a, int nd)
{
    return (int)(a->v[SM_AXIS].i < 0 ? a->v[SM_AXIS].i + nd : a->v[SM_AXIS].i);
}

bool sm_use_length(const hg_attrs *a)
{
    return !a->v[SM_USE_LENGTH].is_none && a->v[SM_USE_LENGTH].b;
}

int64_t inner_of(const hg_tensor *t, int axis)
{
    int64_t inner = 1;
    for (int d = axis + 1; d < t->ndim; d++) inner *= t->shape[d];
    return inner;
}

/* softmax, log_softmax, softmin: (data[, length]). */
hg_status softmax_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    int axis = sm_axis(a, x->ndim);
    int64_t n = x->shape[axis], inner = inner_of(x, axis);
    double t = sm_scale(op, a);
    bool log = sm_is_log(op);
    if (nin == 2) {
        if (n == 0 || y->size == 0) return HG_OK;
        int64_t cols = y->size / n;
        unsigned g = hg_cuda_blocks(cols);
        const hg_tensor *len = in[1];
        if (y->dtype == HG_DTYPE_F32)
            sml_fwd<<<g, HG_CUDA_THREADS, 0, s>>>(hg_data(x), x->dtype, hg_data(len), len->dtype,
                                                  (float *)hg_data(y), cols, n, inner, t, log);
        else if (y->dtype == HG_DTYPE_F64)
            sml_fwd<<<g, HG_CUDA_THREADS, 0, s>>>(hg_data(x), x->dtype, hg_data(len), len->dtype,
                                                  (double *)hg_data(y), cols, n, inner, t, log);
        else
            sml_fwd<<<g, HG_CUDA_THREADS, 0, s>>>(hg_data(x), x->dtype, hg_data(len), len->dtype,
                                                  (uint16_t *)hg_data(y), cols, n, inner, t, log);
        return hg_cuda_launched(op->name);
    }
    return softmax_view(op->name, s, x, y, n, inner, t, log);
}

/* _backward_softmax / _log_softmax / _softmin: (dy, y[, length][, data]). */
hg_status softmax_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                          hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *dy = in[0], *y = in[1];
    hg_tensor *dx = out[0];
    int axis = sm_axis(a, y->ndim);
    int64_t n = y->shape[axis], inner = inner_of(y, axis);
    double t = sm_scale(op, a);
    bool log = sm_is_log(op);
    if (sm_use_length(a)) {
        if (n == 0 || dx->size == 0) return HG_OK;
        int64_t cols = dx->size / n;
        unsigned g = hg_cuda_blocks(cols);
        const hg_tensor *len = in[2];
        if (dx->dtype == HG_DTYPE_F32)
            sml_bwd<<<g, HG_CUDA_THREADS, 0, s>>>(hg_data(dy), hg_data(y), y->dtype, hg_data(len),
                                                  len->dtype, (float *)hg_data(dx), cols, n, inner,
                                                  t, log);
        else if (dx->dtype == HG_DTYPE_F64)
            sml_bwd<<<g, HG_CUDA_THREADS, 0, s>>>(hg_data(dy), hg_data(y), y->dtype, hg_data(len),
                                                  len->dtype, (double *)hg_data(dx), cols, n, inner,
                                                  t, log);
        else
            sml_bwd<<<g, HG_CUDA_THREADS, 0, s>>>(hg_data(dy), hg_data(y), y->dtype, hg_data(len),
                                                  len->dtype, (uint16_t *)hg_data(dx), cols, n,
                                                  inner, t, log);
        return hg_cuda_launched(op->name);
    }
    return softmax_bwd_view(op->name, s, dy, y, dx, n, inner, t, log);
}

/* SoftmaxActivation's view: the last axis (instance) or axis 1 (channel). */
void sa_view(const hg_attrs *a, const hg_tensor *x, int64_t *n, int64_t *inner)
{
    *inner = 1;
    if (a->v[SA_MODE].i == 0) {
        *n = x->shape[x->ndim - 1];
        return;
    }
    *n = x->shape[1];
    for (int d = 2; d < x->ndim; d++) *inner *= x->shape[d];
}

hg_status sa_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                 hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    int64_t n, inner;
    sa_view(a, in[0], &n, &inner);
    return softmax_view(op->name, s, in[0], out[0], n, inner, 1.0, false);
}

hg_status sa_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    int64_t n, inner;
    sa_view(a, in[1], &n, &inner);
    return softmax_bwd_view(op->name, s, in[0], in[1], out[0], n, inner, 1.0, false);
}

/* ---- SoftmaxOutput ------------------------------------------------------------------------ */

/* The [outer, n, inner] view: axis 1 (multi_output), the last axis (preserve_shape), or the data
 * as [n0, size / n0]. */
void so_view(const hg_attrs *a, const hg_tensor *x, int64_t *n, int64_t *inner)
{
    *inner = 1;
    if (a->v[SO_MULTI_OUTPUT].b) {
        *n = x->shape[1];
        for (int d = 2; d < x->ndim; d++) *inner *= x->shape[d];
    } else if (a->v[SO_PRESERVE_SHAPE].b) {
        *n = x->shape[x->ndim - 1];
    } else {
        *n = x->shape[0] ? x->size / x->shape[0] : 0;
    }
}

hg_status so_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                 hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    int64_t n, inner;
    so_view(a, in[0], &n, &inner);
    return softmax_view(op->name, s, in[0], out[0], n, inner, 1.0, false);
}

/* A label as the class MXNet's kernels read (static_cast<int>); values no int holds (and NaN)
 * name no class. */
__device__ __forceinline__ long long as_class(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (long long)(int)v : (long long)INT64_MIN;
}

/* Counts the labels equal (as classes) to the ignored one, into *cnt. */
__global__ void so_count_ignored(const void *lab, int ldt, int64_t nlab, double ignore,
                                 unsigned long long *cnt)
{
    unsigned long long k = 0;
    const long long ign = as_class(ignore);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nlab;
         i += (int64_t)gridDim.x * blockDim.x)
        k += as_class(ld_any(lab, ldt, i)) == ign;
    for (int d = 16; d > 0; d >>= 1) k += __shfl_down_sync(FULL_MASK, k, d);
    if ((threadIdx.x & 31) == 0 && k) atomicAdd(cnt, k);
}

struct so_bwd_args {
    const void *y, *lab;
    void *dx;
    int dt, ldt;
    int64_t size, n, inner, nlab;
    double gs, alpha, other, scale, per, ignore;
    bool out_grad, use_ignore, same_shape;
    const unsigned long long *ignored; /* 'valid' normalisation: labels to leave out, or NULL */
};

template <typename T> __global__ void so_bwd(so_bwd_args p)
{
    const T *y = (const T *)p.y;
    T *dx = (T *)p.dx;
    double scale = p.scale;
    if (p.ignored) {
        unsigned long long valid = (unsigned long long)p.nlab - *p.ignored;
        scale = as_dtype(p.dt, p.gs / p.per / (valid ? (double)valid : 1.0));
    }
    const long long ign = as_class(p.ignore);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.size;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double v = ldf(y[i]);
        double g;
        if (p.same_shape) {
            g = (v - ld_any(p.lab, p.ldt, i)) * p.gs;
        } else {
            const int64_t r = i / (p.n * p.inner), j = i / p.inner % p.n, c = i % p.inner;
            const double l = ld_any(p.lab, p.ldt, r * p.inner + c);
            const long long k = as_class(l);
            const bool skip = p.use_ignore && k == ign;
            g = skip ? 0 : j == k ? v - 1 + p.alpha : v - p.other;
            g = as_dtype(p.dt, g) * scale;
        }
        st(dx + i, p.out_grad ? g * v : g);
    }
}

/* _backward_SoftmaxOutput: (output, label). */
hg_status so_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *y = in[0], *lab = in[1];
    if (y->size == 0) return HG_OK;
    so_bwd_args p;
    memset(&p, 0, sizeof p);
    p.y = hg_data(y);
    p.lab = hg_data(lab);
    p.dx = hg_data(out[0]);
    p.dt = y->dtype;
    p.ldt = lab->dtype;
    p.size = y->size;
    p.nlab = lab->size;
    p.gs = a->v[SO_GRAD_SCALE].f;
    p.ignore = a->v[SO_IGNORE_LABEL].f;
    p.out_grad = a->v[SO_OUT_GRAD].b;
    p.use_ignore = a->v[SO_USE_IGNORE].b;
    p.same_shape = hg_shape_equal(y->ndim, y->shape, lab->ndim, lab->shape);
    void *tmp = NULL;
    if (!p.same_shape) {
        so_view(a, y, &p.n, &p.inner);
        bool multi = a->v[SO_MULTI_OUTPUT].b;
        int64_t norm = a->v[SO_NORMALIZATION].i;
        p.alpha = multi ? 0 : a->v[SO_SMOOTH_ALPHA].f;
        p.other = p.n > 1 ? p.alpha / (double)(p.n - 1) : 0;
        p.per = multi && norm != NORM_VALID ? (double)p.inner : 1.0;
        double cnt = norm == NORM_BATCH ? (double)(multi ? y->shape[0] : lab->size) : 1.0;
        /* the host's value of scale (the kernel's when 'valid' counts on the device) */
        double sc = multi ? p.gs / p.per / cnt : p.gs / cnt;
        p.scale = sc;
        if (y->dtype == HG_DTYPE_F32) p.scale = (float)sc;
        else if (y->dtype == HG_DTYPE_F16) p.scale = hg_half_to_float(hg_float_to_half((float)sc));
        if (norm == NORM_VALID) {
            HG_TRY(hg_device_alloc(ctx->device_id, sizeof(unsigned long long), &tmp));
            hg_status st = hg_cuda_status(cudaMemsetAsync(tmp, 0, sizeof(unsigned long long), s),
                                          op->name);
            if (st == HG_OK) {
                so_count_ignored<<<hg_cuda_blocks(p.nlab), HG_CUDA_THREADS, 0, s>>>(
                    p.lab, p.ldt, p.nlab, p.ignore, (unsigned long long *)tmp);
                st = hg_cuda_launched(op->name);
            }
            if (st != HG_OK) {
                hg_device_free(ctx->device_id, tmp, sizeof(unsigned long long));
                return st;
            }
            p.ignored = (const unsigned long long *)tmp;
        }
    }
    unsigned g = hg_cuda_blocks(p.size);
    if (y->dtype == HG_DTYPE_F32) so_bwd<float><<<g, HG_CUDA_THREADS, 0, s>>>(p);
    else if (y->dtype == HG_DTYPE_F64) so_bwd<double><<<g, HG_CUDA_THREADS, 0, s>>>(p);
    else so_bwd<uint16_t><<<g, HG_CUDA_THREADS, 0, s>>>(p);
    hg_status st = hg_cuda_launched(op->name);
    if (tmp) hg_device_free(ctx->device_id, tmp, sizeof(unsigned long long));
    return st;
}

/* ---- softmax_cross_entropy ---------------------------------------------------------------- */

/* Row i of x (k entries): the CPU's softmax into a tensor of x's dtype, as doubles p_j read back
 * from it, computed by the whole block. pj(j) gives entry j. */
template <typename T> struct sce_row {
    typedef typename calc<T, T>::type AT;
    const T *x;
    AT m, inv;

    __device__ double pj(int64_t j) const
    {
        AT e = ex((AT)((AT)ldf(x[j]) - m));
        return (double)rt((const T *)0, (AT)rt((const T *)0, e) * inv);
    }
};

template <typename T> __device__ sce_row<T> sce_softmax(const T *x, int64_t k)
{
    typedef typename calc<T, T>::type AT;
    __shared__ AT shm[32];
    __shared__ double shs[32];
    AT mp = (AT)-INFINITY;
    for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
        AT v = (AT)ldf(x[j]);
        mp = v > mp ? v : mp;
    }
    sce_row<T> r;
    r.x = x;
    r.m = block_fold(mp, (AT)-INFINITY, op_max(), shm);
    double s = 0;
    for (int64_t j = threadIdx.x; j < k; j += blockDim.x)
        s += (double)ex((AT)((AT)ldf(x[j]) - r.m));
    r.inv = (AT)(1 / block_fold(s, 0.0, op_add(), shs));
    return r;
}

/* loss[i] = -log(max(p[i, label_i], 1e-8 in the dtype)); NaN for a label that names no class. */
template <typename T>
__global__ void sce_rows(const T *__restrict__ x, const void *lab, int ldt, int64_t n, int64_t k,
                         int dt, double *__restrict__ loss)
{
    for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
        sce_row<T> r = sce_softmax(x + i * k, k);
        if (threadIdx.x == 0) {
            double l = ld_any(lab, ldt, i);
            if (!(l >= 0 && l < (double)k)) {
                loss[i] = NAN;
            } else {
                double v = r.pj((int64_t)l);
                loss[i] = -::log(v > 1e-8 ? v : as_dtype(dt, 1e-8));
            }
        }
    }
}

/* out[0] = the sum of the n row losses. */
template <typename T> __global__ void sce_total(const double *__restrict__ loss, int64_t n, T *out)
{
    __shared__ double sh[32];
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += loss[i];
    s = block_fold(s, 0.0, op_add(), sh);
    if (threadIdx.x == 0) st(out, s);
}

template <typename T>
hg_status sce_launch(const char *name, cudaStream_t s, const hg_tensor *x, const hg_tensor *lab,
                     hg_tensor *y, double *loss)
{
    const int64_t n = x->shape[0], k = x->shape[1];
    sce_rows<T><<<grid_for(n), block_for(k), 0, s>>>((const T *)hg_data(x), hg_data(lab),
                                                     lab->dtype, n, k, x->dtype, loss);
    HG_TRY(hg_cuda_launched(name));
    sce_total<T><<<1, HG_CUDA_THREADS, 0, s>>>(loss, n, (T *)hg_data(y));
    return hg_cuda_launched(name);
}

/* softmax_cross_entropy: (data (n, k), label (n,)) -> (1,). */
hg_status sce_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                  hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *x = in[0], *lab = in[1];
    const int64_t n = x->shape[0], k = x->shape[1];
    if (n > 0 && k == 0) /* every label fails the CPU's check: there is no class */
        return hg_error(HG_ERR_INDEX, "%s: the labels name no class of data of shape (%lld, 0)",
                        op->name, (long long)n);
    if (n == 0)
        return hg_cuda_status(cudaMemsetAsync(hg_data(out[0]), 0, hg_dtype_size(x->dtype), s),
                              op->name);
    void *loss;
    size_t bytes = sizeof(double) * (size_t)n;
    HG_TRY(hg_device_alloc(ctx->device_id, bytes, &loss));
    hg_status st;
    if (x->dtype == HG_DTYPE_F32)
        st = sce_launch<float>(op->name, s, x, lab, out[0], (double *)loss);
    else if (x->dtype == HG_DTYPE_F64)
        st = sce_launch<double>(op->name, s, x, lab, out[0], (double *)loss);
    else st = sce_launch<uint16_t>(op->name, s, x, lab, out[0], (double *)loss);
    hg_device_free(ctx->device_id, loss, bytes);
    return st;
}

/* dx[i, j] = dy * (p[i, j] - (j == label_i)) rounded through the dtype first, as on the CPU. */
template <typename T>
__global__ void sce_bwd(const void *dy, int dydt, const T *__restrict__ x, const void *lab, int ldt,
                        int64_t n, int64_t k, int dt, T *__restrict__ dx)
{
    const double g = ld_any(dy, dydt, 0);
    for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
        sce_row<T> r = sce_softmax(x + i * k, k);
        double l = ld_any(lab, ldt, i);
        bool ok = l >= 0 && l < (double)k;
        int64_t c = ok ? (int64_t)l : -1;
        for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
            double v = r.pj(j) - (double)(j == c);
            st(dx + i * k + j, ok ? g * as_dtype(dt, v) : (double)NAN);
        }
    }
}

/* _backward_softmax_cross_entropy: (ograd (one value), data, label). */
hg_status sce_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *dy = in[0], *x = in[1], *lab = in[2];
    const int64_t n = x->shape[0], k = x->shape[1];
    if (x->size == 0) return HG_OK;
    unsigned g = grid_for(n), b = block_for(k);
    if (x->dtype == HG_DTYPE_F32)
        sce_bwd<float><<<g, b, 0, s>>>(hg_data(dy), dy->dtype, (const float *)hg_data(x),
                                       hg_data(lab), lab->dtype, n, k, x->dtype,
                                       (float *)hg_data(out[0]));
    else if (x->dtype == HG_DTYPE_F64)
        sce_bwd<double><<<g, b, 0, s>>>(hg_data(dy), dy->dtype, (const double *)hg_data(x),
                                        hg_data(lab), lab->dtype, n, k, x->dtype,
                                        (double *)hg_data(out[0]));
    else
        sce_bwd<uint16_t><<<g, b, 0, s>>>(hg_data(dy), dy->dtype, (const uint16_t *)hg_data(x),
                                          hg_data(lab), lab->dtype, n, k, x->dtype,
                                          (uint16_t *)hg_data(out[0]));
    return hg_cuda_launched(op->name);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_softmax[] = {
    {"softmax", softmax_gpu},
    {"log_softmax", softmax_gpu},
    {"softmin", softmax_gpu},
    {"_backward_softmax", softmax_bwd_gpu},
    {"_backward_log_softmax", softmax_bwd_gpu},
    {"_backward_softmin", softmax_bwd_gpu},
    {"SoftmaxActivation", sa_gpu},
    {"_backward_SoftmaxActivation", sa_bwd_gpu},
    {"SoftmaxOutput", so_gpu},
    {"_backward_SoftmaxOutput", so_bwd_gpu},
    {"softmax_cross_entropy", sce_gpu},
    {"_backward_softmax_cross_entropy", sce_bwd_gpu},
    {NULL, NULL},
};
