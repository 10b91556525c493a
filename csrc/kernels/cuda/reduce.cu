/* GPU kernels of the reductions (ops/reduce.c): sum, mean, prod, nansum, nanprod, max, min, norm
 * (ord 1 and 2) over a set of axes, and argmax / argmin over one axis or the flattened array;
 * and of their gradient ops (ops/reduce_grad.c), in a second table.
 *
 * Axes are resolved by the CPU's own rule (hg_reduce_axes: axis tuple, keepdims, exclude,
 * negative axes, None or () for all). As on the CPU, size-1 dims are dropped and neighbours of
 * the same kind (kept or reduced) merged; the kept groups, in order, index the outputs and the
 * reduced groups index the elements of one reduction, each a strided walk over the input.
 *
 * Arithmetic is the CPU's: floating inputs (and norm of any input) accumulate in double, integer
 * inputs in 64 bits that wrap (the result truncated to the type, a mean dividing in that type),
 * max / min keep the first NaN they meet, norm takes |x| or x*x in double. Only the order of the
 * additions differs (a tree instead of the CPU's lanes), which double accumulation makes
 * negligible. argmax / argmin give the first index of the extreme, or of the first NaN, stored
 * in the input's dtype.
 *
 * One thread reduces one output when the reductions are short or their elements lie along the
 * outputs' contiguous axis (coalesced across threads); a warp reduces one output when the
 * reduced elements are contiguous; a block of HG_CUDA_THREADS reduces one output when they are
 * many and the outputs few. The partial results meet in a fixed tree, so results do not vary
 * from run to run. An empty reduction gives the identity, finalised (sum 0, prod 1, mean NaN or
 * 0 for integers), as on the CPU; max, min, argmax and argmin of nothing fail in the shape rule.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "ops/reduce.h"

namespace
{

hg_status begin(const hg_exec_ctx *ctx, cudaStream_t *s)
{
    HG_TRY(hg_cuda_use(ctx->device_id));
    *s = hg_cuda_stream(ctx->device_id);
    return *s ? HG_OK : HG_ERR_INTERNAL; /* the message is set */
}

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }

/* Any input element as double (float16 storage is uint16_t: no other dtype uses it). */
template <typename T> struct is_fp {
    static constexpr bool v = false;
};
template <> struct is_fp<float> {
    static constexpr bool v = true;
};
template <> struct is_fp<double> {
    static constexpr bool v = true;
};
template <> struct is_fp<uint16_t> {
    static constexpr bool v = true;
};

template <typename T> __device__ __forceinline__ double ld_d(T v) { return (double)v; }
template <> __device__ __forceinline__ double ld_d<uint16_t>(uint16_t v) { return h2f(v); }

/* A double into an output of any dtype. float16 rounds through float and narrow integers
 * truncate through int32, as the CPU's conversions (x86) do for in-range values. */
__device__ void st_any(void *y, int dt, int64_t i, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: ((float *)y)[i] = (float)v; break;
    case HG_DTYPE_F64: ((double *)y)[i] = v; break;
    case HG_DTYPE_F16: ((uint16_t *)y)[i] = f2h((float)v); break;
    case HG_DTYPE_I32: ((int32_t *)y)[i] = (int32_t)v; break;
    case HG_DTYPE_I64: ((int64_t *)y)[i] = (int64_t)v; break;
    case HG_DTYPE_I8: ((int8_t *)y)[i] = (int8_t)(int32_t)v; break;
    case HG_DTYPE_U8: ((uint8_t *)y)[i] = (uint8_t)(int32_t)v; break;
    default: break;
    }
}

/* ---- geometry ----------------------------------------------------------------------------- */

/* Outputs are the kept groups in row-major order; element r of an output's reduction is the
 * reduced groups' index r in row-major order. Strides are in input elements. */
struct geom {
    int nk, nr;
    int64_t kshape[HG_MAX_NDIM], kstride[HG_MAX_NDIM];
    int64_t rshape[HG_MAX_NDIM], rstride[HG_MAX_NDIM];
    int64_t nout, R;
};

geom geom_build(int ndim, const int64_t *shape, const bool *red)
{
    int64_t gs[HG_MAX_NDIM], st[HG_MAX_NDIM];
    bool gr[HG_MAX_NDIM];
    int ng = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        if (ng > 0 && gr[ng - 1] == red[d]) {
            gs[ng - 1] *= shape[d];
        } else {
            gs[ng] = shape[d];
            gr[ng++] = red[d];
        }
    }
    int64_t s = 1;
    for (int k = ng - 1; k >= 0; k--) {
        st[k] = s;
        s *= gs[k];
    }
    geom g;
    g.nk = g.nr = 0;
    g.nout = g.R = 1;
    for (int k = 0; k < ng; k++) {
        if (gr[k]) {
            g.rshape[g.nr] = gs[k];
            g.rstride[g.nr++] = st[k];
            g.R *= gs[k];
        } else {
            g.kshape[g.nk] = gs[k];
            g.kstride[g.nk++] = st[k];
            g.nout *= gs[k];
        }
    }
    return g;
}

__device__ __forceinline__ int64_t walk(int64_t idx, int n, const int64_t *shape,
                                        const int64_t *stride)
{
    if (n == 1) return idx * stride[0];
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        int64_t q = idx / shape[d];
        off += (idx - q * shape[d]) * stride[d];
        idx = q;
    }
    return off;
}

/* ---- what is reduced: policies -------------------------------------------------------------
 * A policy P gives the accumulator type acc, its identity, the combination, the accumulator of
 * the input element at offset off (the r-th of its reduction), and writes output o. */

enum red_kind {
    RK_SUM,
    RK_MEAN,
    RK_PROD,
    RK_NANSUM,
    RK_NANPROD,
    RK_MAX,
    RK_MIN,
    RK_NORM1,
    RK_NORM2
};

/* max / min keep a NaN once seen and take a NaN that arrives (the CPU's F_MAX / F_MIN). */
__device__ __forceinline__ double f_max(double a, double b)
{
    return (a == a && !(a >= b)) ? b : a;
}
__device__ __forceinline__ double f_min(double a, double b)
{
    return (a == a && !(a <= b)) ? b : a;
}

/* Floating inputs, and norm of any input: double accumulators. */
template <typename T, int K> struct red_f {
    typedef double acc;
    const T *x;
    void *y;
    int odt;
    int64_t count; /* elements reduced into each output (mean) */

    static __device__ __forceinline__ acc ident()
    {
        return K == RK_PROD || K == RK_NANPROD ? 1.0
               : K == RK_MAX                   ? -INFINITY
               : K == RK_MIN                   ? INFINITY
                                               : 0.0;
    }
    static __device__ __forceinline__ acc comb(acc a, acc b)
    {
        if (K == RK_PROD || K == RK_NANPROD) return a * b;
        if (K == RK_MAX) return f_max(a, b);
        if (K == RK_MIN) return f_min(a, b);
        return a + b;
    }
    __device__ __forceinline__ acc elem(int64_t off, int64_t r) const
    {
        double v = ld_d(x[off]);
        if (K == RK_NANSUM) return v != v ? 0.0 : v;
        if (K == RK_NANPROD) return v != v ? 1.0 : v;
        if (K == RK_NORM1) return fabs(v);
        if (K == RK_NORM2) return v * v;
        return v;
    }
    __device__ __forceinline__ void finish(int64_t o, acc a) const
    {
        if (K == RK_MEAN) a /= (double)count;
        if (K == RK_NORM2) a = sqrt(a);
        st_any(y, odt, o, a);
    }
};

/* Integer inputs: 64-bit accumulators whose additions and products wrap (modulo 2^64, then the
 * output type's truncation: the same as MXNet's same-type accumulation). The output has the
 * input's dtype; a mean divides in that type, truncating, and a mean of nothing is 0. */
template <typename T, int K> struct red_i {
    typedef long long acc;
    const T *x;
    T *y;
    int64_t count;

    static __device__ __forceinline__ acc ident()
    {
        return K == RK_PROD  ? 1LL
               : K == RK_MAX ? (acc)INT64_MIN
               : K == RK_MIN ? (acc)INT64_MAX
                             : 0LL;
    }
    static __device__ __forceinline__ acc comb(acc a, acc b)
    {
        if (K == RK_PROD) return (acc)((unsigned long long)a * (unsigned long long)b);
        if (K == RK_MAX) return a >= b ? a : b;
        if (K == RK_MIN) return a <= b ? a : b;
        return (acc)((unsigned long long)a + (unsigned long long)b);
    }
    __device__ __forceinline__ acc elem(int64_t off, int64_t r) const { return (acc)x[off]; }
    __device__ __forceinline__ void finish(int64_t o, acc a) const
    {
        if (K != RK_MEAN || count == 1) y[o] = (T)a;
        else if (count > 1) y[o] = (T)((T)a / count);
        else y[o] = (T)0;
    }
};

/* argmax / argmin: the extreme and its index; i < 0 marks "no element yet". */
template <typename V> struct arg_acc {
    V v;
    long long i;
};

/* Whether b beats a: a NaN beats numbers and the earlier of two NaNs wins; otherwise the larger
 * (smaller) value, and of equal values the earlier. Folding a row in order with this rule is the
 * CPU's scan; it also combines partial results of interleaved index sets. */
template <typename V, bool MIN>
__device__ __forceinline__ bool arg_beats(const arg_acc<V> &a, const arg_acc<V> &b)
{
    if (b.i < 0) return false;
    if (a.i < 0) return true;
    bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) return an && bn ? b.i < a.i : bn;
    if (MIN ? b.v < a.v : b.v > a.v) return true;
    return b.v == a.v && b.i < a.i;
}

/* Floating values compare as double (exact for every float dtype), integers as int64. */
template <typename T, bool MIN> struct red_arg {
    typedef typename std::conditional<is_fp<T>::v, double, long long>::type val;
    typedef arg_acc<val> acc;
    const T *x;
    void *y;
    int odt; /* the input's dtype */

    static __device__ __forceinline__ acc ident() { return acc{(val)0, -1}; }
    static __device__ __forceinline__ acc comb(acc a, acc b)
    {
        return arg_beats<val, MIN>(a, b) ? b : a;
    }
    __device__ __forceinline__ acc elem(int64_t off, int64_t r) const
    {
        if constexpr (is_fp<T>::v) return acc{ld_d(x[off]), (long long)r};
        else return acc{(val)x[off], (long long)r};
    }
    __device__ __forceinline__ void finish(int64_t o, acc a) const
    {
        st_any(y, odt, o, (double)(a.i < 0 ? 0 : a.i));
    }
};

/* ---- the kernels -------------------------------------------------------------------------- */

__device__ __forceinline__ double shfl_down(double v, int d)
{
    return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ __forceinline__ long long shfl_down(long long v, int d)
{
    return __shfl_down_sync(0xffffffffu, v, d);
}
template <typename V> __device__ __forceinline__ arg_acc<V> shfl_down(arg_acc<V> a, int d)
{
    a.v = shfl_down(a.v, d);
    a.i = shfl_down(a.i, d);
    return a;
}

/* Lane 0 gets the combination of the warp's 32 values. */
template <class P> __device__ __forceinline__ typename P::acc warp_fold(typename P::acc v)
{
    for (int d = 16; d > 0; d >>= 1) v = P::comb(v, shfl_down(v, d));
    return v;
}

template <class P>
__device__ __forceinline__ typename P::acc run(const P &p, const geom &g, int64_t base, int64_t r0,
                                               int64_t step)
{
    typename P::acc a = P::ident();
    for (int64_t r = r0; r < g.R; r += step)
        a = P::comb(a, p.elem(base + walk(r, g.nr, g.rshape, g.rstride), r));
    return a;
}

/* One thread per output. */
template <class P> __global__ void red_thread(P p, geom g)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < g.nout;
         o += (int64_t)gridDim.x * blockDim.x)
        p.finish(o, run(p, g, walk(o, g.nk, g.kshape, g.kstride), 0, 1));
}

/* One warp per output. */
template <class P> __global__ void red_warp(P p, geom g)
{
    const int lane = threadIdx.x & 31;
    const int64_t nw = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t o = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; o < g.nout; o += nw) {
        typename P::acc a = warp_fold<P>(run(p, g, walk(o, g.nk, g.kshape, g.kstride), lane, 32));
        if (lane == 0) p.finish(o, a);
    }
}

/* One block (HG_CUDA_THREADS threads) per output: warps fold, then the first warp folds their
 * results. */
template <class P> __global__ void red_block(P p, geom g)
{
    __shared__ typename P::acc part[HG_CUDA_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    for (int64_t o = blockIdx.x; o < g.nout; o += gridDim.x) {
        typename P::acc a = run(p, g, walk(o, g.nk, g.kshape, g.kstride), threadIdx.x, blockDim.x);
        a = warp_fold<P>(a);
        if (lane == 0) part[warp] = a;
        __syncthreads();
        if (warp == 0) {
            a = lane < (int)(blockDim.x / 32) ? part[lane] : P::ident();
            a = warp_fold<P>(a);
            if (lane == 0) p.finish(o, a);
        }
        __syncthreads();
    }
}

template <class P> hg_status launch(const hg_op_def *op, cudaStream_t s, const P &p, const geom &g)
{
    bool contiguous = g.nr > 0 && g.rstride[g.nr - 1] == 1; /* reduced elements are neighbours */
    int64_t cap = HG_CUDA_MAX_BLOCKS;
    if ((contiguous && g.R >= 2048) || (g.nout <= 512 && g.R >= 2048)) {
        unsigned b = (unsigned)(g.nout < cap ? g.nout : cap);
        red_block<P><<<b, HG_CUDA_THREADS, 0, s>>>(p, g);
    } else if (contiguous && g.R >= 16) {
        int64_t b = (g.nout * 32 + HG_CUDA_THREADS - 1) / HG_CUDA_THREADS;
        red_warp<P><<<(unsigned)(b < cap ? b : cap), HG_CUDA_THREADS, 0, s>>>(p, g);
    } else {
        red_thread<P><<<hg_cuda_blocks(g.nout), HG_CUDA_THREADS, 0, s>>>(p, g);
    }
    return hg_cuda_launched(op->name);
}

/* ---- dispatch ----------------------------------------------------------------------------- */

template <typename T, int K>
hg_status red_typed(const hg_op_def *op, cudaStream_t s, const hg_tensor *x, hg_tensor *y,
                    const geom &g, int64_t count)
{
    if constexpr (is_fp<T>::v || K == RK_NORM1 || K == RK_NORM2) {
        red_f<T, K> p{(const T *)hg_data(x), hg_data(y), (int)y->dtype, count};
        return launch(op, s, p, g);
    } else {
        /* nansum / nanprod of integers are sum / prod: no NaN to skip */
        constexpr int KI = K == RK_NANSUM ? RK_SUM : K == RK_NANPROD ? RK_PROD : K;
        red_i<T, KI> p{(const T *)hg_data(x), (T *)hg_data(y), count};
        return launch(op, s, p, g);
    }
}

template <int K>
hg_status red_run(const hg_op_def *op, const hg_exec_ctx *ctx, const hg_attr_value *axis,
                  bool keepdims, bool exclude, const hg_tensor *x, hg_tensor *y)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    bool red[HG_MAX_NDIM];
    hg_meta xm = hg_meta_of(x), om;
    HG_TRY(hg_reduce_axes(op, axis, keepdims, exclude, &xm, &om, red));
    int64_t count = 1;
    for (int d = 0; d < x->ndim; d++)
        if (red[d]) count *= x->shape[d];
    geom g = geom_build(x->ndim, x->shape, red);
    switch (x->dtype) {
    case HG_DTYPE_F32: return red_typed<float, K>(op, s, x, y, g, count);
    case HG_DTYPE_F64: return red_typed<double, K>(op, s, x, y, g, count);
    case HG_DTYPE_F16: return red_typed<uint16_t, K>(op, s, x, y, g, count);
    case HG_DTYPE_U8: return red_typed<uint8_t, K>(op, s, x, y, g, count);
    case HG_DTYPE_I8: return red_typed<int8_t, K>(op, s, x, y, g, count);
    case HG_DTYPE_I32: return red_typed<int32_t, K>(op, s, x, y, g, count);
    case HG_DTYPE_I64: return red_typed<int64_t, K>(op, s, x, y, g, count);
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(x->dtype));
    }
}

#define RED_GPU(NAME, KIND)                                                                     \
    hg_status NAME##_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin, \
                         hg_tensor *const *in, int nout, hg_tensor *const *out)                 \
    {                                                                                           \
        return red_run<KIND>(op, ctx, &a->v[K_AXIS], a->v[K_KEEPDIMS].b, a->v[K_EXCLUDE].b,     \
                             in[0], out[0]);                                                    \
    }
RED_GPU(sum, RK_SUM)
RED_GPU(mean, RK_MEAN)
RED_GPU(prod, RK_PROD)
RED_GPU(nansum, RK_NANSUM)
RED_GPU(nanprod, RK_NANPROD)
RED_GPU(max, RK_MAX)
RED_GPU(min, RK_MIN)

hg_status norm_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                   hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_attr_value *ax = &a->v[N_AXIS];
    bool keep = a->v[N_KEEPDIMS].b;
    if (a->v[N_ORD].i == 1) return red_run<RK_NORM1>(op, ctx, ax, keep, false, in[0], out[0]);
    return red_run<RK_NORM2>(op, ctx, ax, keep, false, in[0], out[0]);
}

template <bool MIN>
hg_status arg_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                  const hg_tensor *x, hg_tensor *y)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    bool red[HG_MAX_NDIM];
    const hg_attr_value *ax = &a->v[A_AXIS];
    int axis = ax->is_none || x->ndim == 0 ? -1 : (int)(ax->i < 0 ? ax->i + x->ndim : ax->i);
    for (int d = 0; d < x->ndim; d++) red[d] = axis < 0 || d == axis;
    geom g = geom_build(x->ndim, x->shape, red);
    switch (x->dtype) {
    case HG_DTYPE_F32: {
        red_arg<float, MIN> p{(const float *)hg_data(x), hg_data(y), (int)y->dtype};
        return launch(op, s, p, g);
    }
    case HG_DTYPE_F64: {
        red_arg<double, MIN> p{(const double *)hg_data(x), hg_data(y), (int)y->dtype};
        return launch(op, s, p, g);
    }
    case HG_DTYPE_F16: {
        red_arg<uint16_t, MIN> p{(const uint16_t *)hg_data(x), hg_data(y), (int)y->dtype};
        return launch(op, s, p, g);
    }
    case HG_DTYPE_I32: {
        red_arg<int32_t, MIN> p{(const int32_t *)hg_data(x), hg_data(y), (int)y->dtype};
        return launch(op, s, p, g);
    }
    case HG_DTYPE_I64: {
        red_arg<int64_t, MIN> p{(const int64_t *)hg_data(x), hg_data(y), (int)y->dtype};
        return launch(op, s, p, g);
    }
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(x->dtype));
    }
}

hg_status argmax_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return arg_run<false>(op, a, ctx, in[0], out[0]);
}

hg_status argmin_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return arg_run<true>(op, a, ctx, in[0], out[0]);
}

/* ---- the reductions' gradient ops (ops/reduce_grad.c) --------------------------------------
 * _backward_X(dy, data[, y]) gives every data element its output's dy times the local
 * derivative, with the CPU's conventions: sum 1, mean 1 / R, nansum 0 at NaN, max / min 1 where
 * x equals the result, norm sign(x) (ord 1) or x / y (ord 2, 0 where y is 0), prod the product
 * of the other elements (from the nonzero product and the zero count of each output, a
 * reduction first). Values go through double; a sum of one dtype copies dy's bits. */

enum bk_kind { BK_SUM, BK_MEAN, BK_NANSUM, BK_PROD, BK_NANPROD, BK_MAXMIN, BK_NORM };

/* Any element as double. */
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

/* data as groups (size-1 dims dropped, neighbours of a kind merged, as geom_build); a data
 * element's dy offset is its kept groups' index, row-major (ostride 0 on reduced groups). */
struct bk_geom {
    int ng;
    int64_t shape[HG_MAX_NDIM], ostride[HG_MAX_NDIM];
};

bk_geom bk_geom_build(int ndim, const int64_t *shape, const bool *red)
{
    bk_geom g;
    bool gr[HG_MAX_NDIM];
    g.ng = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        if (g.ng > 0 && gr[g.ng - 1] == red[d]) {
            g.shape[g.ng - 1] *= shape[d];
        } else {
            g.shape[g.ng] = shape[d];
            gr[g.ng++] = red[d];
        }
    }
    int64_t s = 1;
    for (int k = g.ng - 1; k >= 0; k--) {
        g.ostride[k] = gr[k] ? 0 : s;
        if (!gr[k]) s *= g.shape[k];
    }
    return g;
}

__device__ __forceinline__ int64_t bk_out(const bk_geom &g, int64_t e)
{
    int64_t o = 0;
    for (int k = g.ng - 1; k >= 0; k--) {
        int64_t q = e / g.shape[k];
        o += (e - q * g.shape[k]) * g.ostride[k];
        e = q;
    }
    return o;
}

/* prod's first pass: the product of the nonzero elements (NaN left out for nanprod) and the
 * number of zeros of each output. */
struct pz_acc {
    double p;
    long long z;
};

__device__ __forceinline__ pz_acc shfl_down(pz_acc a, int d)
{
    a.p = shfl_down(a.p, d);
    a.z = shfl_down(a.z, d);
    return a;
}

template <typename T, bool NAN1> struct red_pz {
    typedef pz_acc acc;
    const T *x;
    double *p;
    long long *z;

    static __device__ __forceinline__ acc ident() { return acc{1.0, 0}; }
    static __device__ __forceinline__ acc comb(acc a, acc b) { return acc{a.p * b.p, a.z + b.z}; }
    __device__ __forceinline__ acc elem(int64_t off, int64_t r) const
    {
        double v = ld_d(x[off]);
        if (v == 0) return acc{1.0, 1};
        if (NAN1 && v != v) return acc{1.0, 0};
        return acc{v, 0};
    }
    __device__ __forceinline__ void finish(int64_t o, acc a) const
    {
        p[o] = a.p;
        z[o] = a.z;
    }
};

template <typename T>
hg_status pz_typed(const hg_op_def *op, cudaStream_t s, bool nan1, const hg_tensor *x,
                   const geom &g, double *p, long long *z)
{
    if (nan1) return launch(op, s, red_pz<T, true>{(const T *)hg_data(x), p, z}, g);
    return launch(op, s, red_pz<T, false>{(const T *)hg_data(x), p, z}, g);
}

hg_status pz_run(const hg_op_def *op, cudaStream_t s, bool nan1, const hg_tensor *x, const geom &g,
                 double *p, long long *z)
{
    switch (x->dtype) {
    case HG_DTYPE_F32: return pz_typed<float>(op, s, nan1, x, g, p, z);
    case HG_DTYPE_F64: return pz_typed<double>(op, s, nan1, x, g, p, z);
    case HG_DTYPE_F16: return pz_typed<uint16_t>(op, s, nan1, x, g, p, z);
    case HG_DTYPE_U8: return pz_typed<uint8_t>(op, s, nan1, x, g, p, z);
    case HG_DTYPE_I8: return pz_typed<int8_t>(op, s, nan1, x, g, p, z);
    case HG_DTYPE_I32: return pz_typed<int32_t>(op, s, nan1, x, g, p, z);
    default: return pz_typed<int64_t>(op, s, nan1, x, g, p, z);
    }
}

struct bk_args {
    const void *dy, *x, *y;
    void *dx;
    int tdy, tx, ty, kind, ord;
    double scale; /* mean: 1 / R */
    const double *prod;
    const long long *zeros;
    int64_t n;
    bk_geom g;
};

__global__ void bk_elem(bk_args p)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < p.n;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = bk_out(p.g, e);
        const double dy = ld_any(p.dy, p.tdy, o);
        double g = dy, x = 0, y = 0;
        if (p.kind != BK_SUM && p.kind != BK_MEAN) x = ld_any(p.x, p.tx, e);
        if (p.kind == BK_MAXMIN || (p.kind == BK_NORM && p.ord == 2)) y = ld_any(p.y, p.ty, o);
        switch (p.kind) {
        case BK_MEAN: g = dy * p.scale; break;
        case BK_NANSUM: g = x != x ? 0.0 : dy; break;
        case BK_MAXMIN: g = x == y ? dy : 0.0; break;
        case BK_NORM:
            if (p.ord == 1) g = x > 0 ? dy : x < 0 ? -dy : 0.0;
            else g = y == 0 ? 0.0 : dy * (x / y);
            break;
        case BK_PROD:
        case BK_NANPROD: {
            const long long z = p.zeros[o];
            const double pr = p.prod[o];
            if (p.kind == BK_NANPROD && x != x) g = 0.0; /* NaN counted as a constant 1 */
            else if (z == 0) g = dy * (pr / x);
            else if (z == 1 && x == 0) g = dy * pr; /* the other factors */
            else g = 0.0;                            /* another factor is 0 */
            break;
        }
        default: break;
        }
        st_any(p.dx, p.tx, e, g);
    }
}

/* dx[e] = dy[o]: the bits, for a sum whose dy has data's dtype. */
template <typename B> __global__ void bk_copy(const B *dy, B *dx, int64_t n, bk_geom g)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x)
        dx[e] = dy[bk_out(g, e)];
}

hg_status bk_run(int kind, const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                 hg_tensor *const *in, hg_tensor *dx)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    const hg_tensor *x = in[1];
    if (x->size == 0) return HG_OK;
    bool red[HG_MAX_NDIM];
    hg_meta xm = hg_meta_of(x), om;
    if (kind == BK_NORM)
        HG_TRY(hg_reduce_axes(op, &a->v[N_AXIS], a->v[N_KEEPDIMS].b, false, &xm, &om, red));
    else
        HG_TRY(hg_reduce_axes(op, &a->v[K_AXIS], a->v[K_KEEPDIMS].b, a->v[K_EXCLUDE].b, &xm, &om,
                              red));
    bk_args p;
    memset(&p, 0, sizeof p);
    p.g = bk_geom_build(x->ndim, x->shape, red);
    int64_t nout = 1;
    for (int k = 0; k < p.g.ng; k++)
        if (p.g.ostride[k]) nout *= p.g.shape[k];
    const unsigned grid = hg_cuda_blocks(x->size);
    if (kind == BK_SUM && in[0]->dtype == x->dtype) {
        size_t es = hg_dtype_size(x->dtype);
        if (es == 8)
            bk_copy<<<grid, HG_CUDA_THREADS, 0, s>>>((const uint64_t *)hg_data(in[0]),
                                                     (uint64_t *)hg_data(dx), x->size, p.g);
        else if (es == 4)
            bk_copy<<<grid, HG_CUDA_THREADS, 0, s>>>((const uint32_t *)hg_data(in[0]),
                                                     (uint32_t *)hg_data(dx), x->size, p.g);
        else if (es == 2)
            bk_copy<<<grid, HG_CUDA_THREADS, 0, s>>>((const uint16_t *)hg_data(in[0]),
                                                     (uint16_t *)hg_data(dx), x->size, p.g);
        else
            bk_copy<<<grid, HG_CUDA_THREADS, 0, s>>>((const uint8_t *)hg_data(in[0]),
                                                     (uint8_t *)hg_data(dx), x->size, p.g);
        return hg_cuda_launched(op->name);
    }
    p.dy = hg_data(in[0]);
    p.tdy = in[0]->dtype;
    p.x = hg_data(x);
    p.tx = x->dtype;
    if (kind == BK_MAXMIN || kind == BK_NORM) {
        p.y = hg_data(in[2]);
        p.ty = in[2]->dtype;
    }
    p.dx = hg_data(dx);
    p.kind = kind;
    p.ord = kind == BK_NORM ? (int)a->v[N_ORD].i : 0;
    p.scale = 1.0 / (double)(x->size / nout);
    p.n = x->size;
    void *tmp = NULL;
    size_t bytes = (sizeof(double) + sizeof(long long)) * (size_t)nout;
    if (kind == BK_PROD || kind == BK_NANPROD) {
        HG_TRY(hg_device_alloc(ctx->device_id, bytes, &tmp));
        double *pr = (double *)tmp;
        long long *z = (long long *)(pr + nout);
        geom g = geom_build(x->ndim, x->shape, red);
        hg_status st = pz_run(op, s, kind == BK_NANPROD, x, g, pr, z);
        if (st != HG_OK) {
            hg_device_free(ctx->device_id, tmp, bytes);
            return st;
        }
        p.prod = pr;
        p.zeros = z;
    }
    bk_elem<<<grid, HG_CUDA_THREADS, 0, s>>>(p);
    hg_status st = hg_cuda_launched(op->name);
    if (tmp) hg_device_free(ctx->device_id, tmp, bytes);
    return st;
}

#define BK_GPU(NAME, KIND)                                                                      \
    hg_status NAME##_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin, \
                         hg_tensor *const *in, int nout, hg_tensor *const *out)                 \
    {                                                                                           \
        return bk_run(KIND, op, a, ctx, in, out[0]);                                            \
    }
BK_GPU(bsum, BK_SUM)
BK_GPU(bmean, BK_MEAN)
BK_GPU(bnansum, BK_NANSUM)
BK_GPU(bprod, BK_PROD)
BK_GPU(bnanprod, BK_NANPROD)
BK_GPU(bmaxmin, BK_MAXMIN)
BK_GPU(bnorm, BK_NORM)

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_reduce[] = {
    {"sum", sum_gpu},         {"mean", mean_gpu},     {"prod", prod_gpu}, {"nansum", nansum_gpu},
    {"nanprod", nanprod_gpu}, {"max", max_gpu},       {"min", min_gpu},   {"norm", norm_gpu},
    {"argmax", argmax_gpu},   {"argmin", argmin_gpu}, {NULL, NULL},
};

/* The gradient ops of ops/reduce_grad.c, in a table of their own. */
extern "C" const hg_gpu_kernel hg_gpu_kernels_reduce_grad[] = {
    {"_backward_sum", bsum_gpu},
    {"_backward_mean", bmean_gpu},
    {"_backward_nansum", bnansum_gpu},
    {"_backward_prod", bprod_gpu},
    {"_backward_nanprod", bnanprod_gpu},
    {"_backward_max", bmaxmin_gpu},
    {"_backward_min", bmaxmin_gpu},
    {"_backward_norm", bnorm_gpu},
    {NULL, NULL},
};
