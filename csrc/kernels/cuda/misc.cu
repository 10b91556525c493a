/* hg_gpu_kernels_misc: GPU kernels of the element-wise contrib ops (ops/contrib_elemwise.c:
 * _contrib_round_ste, _contrib_sign_ste, _contrib_gradientmultiplier, _contrib_quadratic), the
 * index contrib ops (ops/contrib_index.c: _contrib_div_sqrt_dim, _contrib_index_array,
 * _contrib_index_copy, _contrib_allclose, _contrib_arange_like) and the ordering ops
 * (ops/sort.c: sort, argsort, topk, _backward_topk). Their gradients are other ops (_copy,
 * _mul_scalar, elemwise_mul, take, zeros_like) or listed here.
 *
 * Arithmetic mirrors the CPU's expression by expression: float sums and products that C
 * evaluates one rounding at a time use the __*_rn intrinsics so nvcc cannot contract them into
 * FMAs; constants the CPU casts (to float, or from double to an integer type) are cast on the
 * host, which is the CPU's x86-64; float16 computes in float32 and rounds once to half, as the
 * CPU's float16 fallback does.
 *
 * Ordering: sort.c orders each row totally and deterministically (equal values by their index,
 * NaN after every number when ascending and before them when descending, NaNs by index). The
 * GPU sorts every row with that same strict order as a bottom-up merge sort: each pass merges
 * runs of width w, every element finding its place by a binary search in the partner run (no
 * two elements are equal under the order, so the place is unique). The first k of each row are
 * then what the CPU's full sort or heap selection gives.
 *
 * The CPU fails on an index_copy index outside [0, N); the GPU cannot check without waiting, so
 * it skips such a row instead. With repeated indices the last copy wins, as on the CPU.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "ops/contrib_elemwise.h"
#include "ops/contrib_index.h"
#include "ops/sort.h"
}

namespace
{

/* ---- shared helpers -------------------------------------------------------------------------- */

/* Runs M(T) with T the unsigned type of the element size es; false for another size. */
#define BY_SIZE(es, M)                                                                         \
    ((es) == 1   ? (M(uint8_t), true)                                                          \
     : (es) == 2 ? (M(uint16_t), true)                                                         \
     : (es) == 4 ? (M(uint32_t), true)                                                         \
     : (es) == 8 ? (M(uint64_t), true)                                                         \
                 : false)

/* Element i of an array of any dtype as double (contrib_util.c's hg_c_load). */
__device__ __forceinline__ double load_f64(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return h2f(((const uint16_t *)p)[i]);
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i]; /* uint8, bool */
    }
}

/* ---- element-wise contrib ops ------------------------------------------------------------------
 * One functor per op and a driver over the dtypes the CPU's ew table has (float16 through
 * float32; no bool). F computes on the element type C (float for float16). */

struct round_ste_f {
    __device__ float operator()(float v) const { return roundf(v); }
    __device__ double operator()(double v) const { return round(v); }
    template <typename T> __device__ T operator()(T v) const { return v; }
};

struct sign_ste_f {
    template <typename T> __device__ T operator()(T v) const
    {
        if constexpr (std::is_unsigned<T>::value) return (T)(v > 0);
        else return (T)((v > 0) - (v < 0));
    }
};

struct copy_f {
    template <typename T> __device__ T operator()(T v) const { return v; }
};

/* a x^2 + b x + c with the coefficients already cast to the element type on the host. Integers
 * compute in unsigned arithmetic at least 32 bits wide: the bits of C's wrapping int math. */
template <typename T> struct quad_f {
    T qa, qb, qc;
    __device__ T operator()(T v) const
    {
        if constexpr (sizeof(T) == 8) {
            uint64_t x = (uint64_t)v;
            return (T)((uint64_t)qa * x * x + (uint64_t)qb * x + (uint64_t)qc);
        } else {
            uint32_t x = (uint32_t)(int32_t)v;
            return (T)((uint32_t)(int32_t)qa * x * x + (uint32_t)(int32_t)qb * x +
                       (uint32_t)(int32_t)qc);
        }
    }
};
template <> struct quad_f<float> {
    float qa, qb, qc;
    __device__ float operator()(float v) const
    {
        return __fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(qa, v), v), __fmul_rn(qb, v)), qc);
    }
};
template <> struct quad_f<double> {
    double qa, qb, qc;
    __device__ double operator()(double v) const
    {
        return __dadd_rn(__dadd_rn(__dmul_rn(__dmul_rn(qa, v), v), __dmul_rn(qb, v)), qc);
    }
};

template <typename T, typename F> __global__ void unary_kernel(const T *x, T *y, F f, int64_t n)
{
    GRID_LOOP(i, n) y[i] = f(x[i]);
}

template <typename F>
__global__ void unary_half_kernel(const uint16_t *x, uint16_t *y, F f, int64_t n)
{
    GRID_LOOP(i, n) y[i] = f2h(f(h2f(x[i])));
}

template <typename T, typename F>
void unary_launch(cudaStream_t s, const hg_tensor *x, hg_tensor *y, F f)
{
    const int64_t n = y->size;
    unary_kernel<T, F> LAUNCH(n)((const T *)hg_data(x), (T *)hg_data(y), f, n);
}

/* Drives F over every dtype but float16 (FH: the float functor float16 computes with). */
template <typename F, typename FH>
hg_status unary_run(const hg_op_def *op, cudaStream_t s, const hg_tensor *x, hg_tensor *y, F f,
                    FH fh)
{
    if (y->size == 0) return HG_OK;
    const int64_t n = y->size;
    switch (x->dtype) {
    case HG_DTYPE_F32: unary_launch<float>(s, x, y, f); break;
    case HG_DTYPE_F64: unary_launch<double>(s, x, y, f); break;
    case HG_DTYPE_F16:
        unary_half_kernel<FH> LAUNCH(n)((const uint16_t *)hg_data(x), (uint16_t *)hg_data(y), fh,
                                        n);
        break;
    case HG_DTYPE_I32: unary_launch<int32_t>(s, x, y, f); break;
    case HG_DTYPE_I64: unary_launch<int64_t>(s, x, y, f); break;
    case HG_DTYPE_I8: unary_launch<int8_t>(s, x, y, f); break;
    case HG_DTYPE_U8: unary_launch<uint8_t>(s, x, y, f); break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name,
                        hg_dtype_name(x->dtype));
    }
    return hg_cuda_launched(op->name);
}

GPU_FWD(round_ste_gpu)
{
    STREAM;
    return unary_run(op, s, in[0], out[0], round_ste_f(), round_ste_f());
}

GPU_FWD(sign_ste_gpu)
{
    STREAM;
    return unary_run(op, s, in[0], out[0], sign_ste_f(), sign_ste_f());
}

GPU_FWD(gradmul_gpu)
{
    STREAM;
    return unary_run(op, s, in[0], out[0], copy_f(), copy_f());
}

/* The coefficients as contrib_elemwise.c's quad_T casts them: (T)(float)attr, on the host. */
template <typename T> quad_f<T> quad_of(const hg_attrs *a)
{
    return quad_f<T>{(T)(float)a->v[QA].f, (T)(float)a->v[QB].f, (T)(float)a->v[QC].f};
}

GPU_FWD(quadratic_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    if (y->size == 0) return HG_OK;
    const int64_t n = y->size;
    switch (x->dtype) {
    case HG_DTYPE_F32: unary_launch<float>(s, x, y, quad_of<float>(a)); break;
    case HG_DTYPE_F64: unary_launch<double>(s, x, y, quad_of<double>(a)); break;
    case HG_DTYPE_F16:
        unary_half_kernel<quad_f<float>> LAUNCH(n)((const uint16_t *)hg_data(x),
                                                   (uint16_t *)hg_data(y), quad_of<float>(a), n);
        break;
    case HG_DTYPE_I32: unary_launch<int32_t>(s, x, y, quad_of<int32_t>(a)); break;
    case HG_DTYPE_I64: unary_launch<int64_t>(s, x, y, quad_of<int64_t>(a)); break;
    case HG_DTYPE_I8: unary_launch<int8_t>(s, x, y, quad_of<int8_t>(a)); break;
    case HG_DTYPE_U8: unary_launch<uint8_t>(s, x, y, quad_of<uint8_t>(a)); break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name,
                        hg_dtype_name(x->dtype));
    }
    return hg_cuda_launched(op->name);
}

/* ---- _contrib_div_sqrt_dim ------------------------------------------------------------------- */

/* y = x / r with r computed on the host as contrib_index.c's DSD casts it. */
template <typename T> struct div_f {
    T r;
    __device__ T operator()(T v) const { return (T)(v / r); }
};
template <> struct div_f<float> {
    float r;
    __device__ float operator()(float v) const { return __fdiv_rn(v, r); }
};
template <> struct div_f<double> {
    double r;
    __device__ double operator()(double v) const { return __ddiv_rn(v, r); }
};

GPU_FWD(dsd_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    if (x->size == 0) return HG_OK;
    const int64_t n = x->size, d = x->shape[x->ndim - 1];
    const double root = sqrt((double)d);
    switch (x->dtype) {
    case HG_DTYPE_F32: unary_launch<float>(s, x, y, div_f<float>{(float)root}); break;
    case HG_DTYPE_F64: unary_launch<double>(s, x, y, div_f<double>{root}); break;
    case HG_DTYPE_F16:
        unary_half_kernel<div_f<float>> LAUNCH(n)(
            (const uint16_t *)hg_data(x), (uint16_t *)hg_data(y), div_f<float>{sqrtf((float)d)}, n);
        break;
    case HG_DTYPE_I32:
        unary_launch<int32_t>(s, x, y, div_f<int32_t>{(int32_t)(int64_t)root});
        break;
    case HG_DTYPE_I64: unary_launch<int64_t>(s, x, y, div_f<int64_t>{(int64_t)root}); break;
    case HG_DTYPE_I8: unary_launch<int8_t>(s, x, y, div_f<int8_t>{(int8_t)(int64_t)root}); break;
    case HG_DTYPE_U8: unary_launch<uint8_t>(s, x, y, div_f<uint8_t>{(uint8_t)(int64_t)root}); break;
    default: return bad_dtype(op, x->dtype);
    }
    return hg_cuda_launched(op->name);
}

/* ---- _contrib_index_array -------------------------------------------------------------------- */

struct ia_plan {
    int64_t shape[HG_MAX_NDIM], stride[HG_MAX_NDIM];
    int axes[HG_MAX_TUPLE];
    int k;
};

/* out[e, j] = the coordinate of element e along axes[j]. */
__global__ void ia_kernel(int64_t *o, ia_plan p, int64_t total)
{
    GRID_LOOP(t, total)
    {
        const int64_t e = t / p.k;
        const int ax = p.axes[t % p.k];
        o[t] = (e / p.stride[ax]) % p.shape[ax];
    }
}

GPU_FWD(ia_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const int nd = x->ndim;
    const hg_attr_value *ax = &a->v[IA_AXES];
    ia_plan p;
    p.k = ax->is_none ? nd : ax->t.n;
    for (int i = 0; i < p.k; i++)
        p.axes[i] = ax->is_none ? i : (int)(ax->t.v[i] < 0 ? ax->t.v[i] + nd : ax->t.v[i]);
    int64_t st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        p.shape[d] = x->shape[d];
        p.stride[d] = st;
        st *= x->shape[d];
    }
    const int64_t total = out[0]->size;
    if (total == 0 || p.k == 0) return HG_OK;
    ia_kernel LAUNCH(total)((int64_t *)hg_data(out[0]), p, total);
    return hg_cuda_launched(op->name);
}

/* ---- _contrib_index_copy --------------------------------------------------------------------- */

/* The row an index names, or -1 where the CPU would fail (see the file comment). */
__device__ __forceinline__ int64_t ic_row(const void *idx, int dt, int64_t i, int64_t n)
{
    const double v = load_f64(idx, dt, i);
    return v >= 0 && v < (double)n ? (int64_t)v : -1;
}

/* owner[row] = 1 + the last i that copies into row (0: none). */
__global__ void ic_claim_kernel(const void *idx, int dt, int64_t k, int64_t n,
                                unsigned long long *owner)
{
    GRID_LOOP(i, k)
    {
        const int64_t t = ic_row(idx, dt, i, n);
        if (t >= 0) atomicMax(owner + t, (unsigned long long)(i + 1));
    }
}

template <typename T>
__global__ void ic_copy_kernel(const T *nw, T *y, const void *idx, int dt, int64_t k, int64_t n,
                               int64_t row, const unsigned long long *owner)
{
    GRID_LOOP(e, k * row)
    {
        const int64_t i = e / row, r = e % row, t = ic_row(idx, dt, i, n);
        if (t >= 0 && owner[t] == (unsigned long long)(i + 1)) y[t * row + r] = nw[e];
    }
}

GPU_FWD(ic_gpu)
{
    STREAM;
    const hg_tensor *old = in[0], *idx = in[1], *nw = in[2];
    hg_tensor *y = out[0];
    const int64_t n = old->shape[0], k = idx->size;
    const size_t es = hg_dtype_size(old->dtype), nbytes = (size_t)old->size * es;
    if (hg_data(y) != hg_data(old) && nbytes)
        HG_TRY(hg_cuda_status(
            cudaMemcpyAsync(hg_data(y), hg_data(old), nbytes, cudaMemcpyDeviceToDevice, s),
            op->name));
    if (n == 0 || k == 0 || old->size == 0) return HG_OK;
    const int64_t row = old->size / n;
    void *owner = NULL;
    const size_t obytes = (size_t)n * sizeof(unsigned long long);
    HG_TRY(hg_device_alloc(ctx->device_id, obytes, &owner));
    hg_status st = hg_cuda_status(cudaMemsetAsync(owner, 0, obytes, s), op->name);
    if (st == HG_OK) {
        ic_claim_kernel LAUNCH(k)(hg_data(idx), (int)idx->dtype, k, n, (unsigned long long *)owner);
        st = hg_cuda_launched(op->name);
    }
    if (st == HG_OK) {
#define IC(T)                                                                                  \
    ic_copy_kernel<T> LAUNCH(k *row)((const T *)hg_data(nw), (T *)hg_data(y), hg_data(idx),     \
                                     (int)idx->dtype, k, n, row,                                \
                                     (const unsigned long long *)owner)
        st = BY_SIZE(es, IC) ? hg_cuda_launched(op->name) : bad_dtype(op, old->dtype);
#undef IC
    }
    hg_device_free(ctx->device_id, owner, obytes);
    return st;
}

/* ---- _contrib_allclose ----------------------------------------------------------------------- */

/* *res starts at 1; any element that is not close clears it. */
__global__ void ac_kernel(const void *x, const void *y, int dt, int64_t n, double rtol, double atol,
                          bool eq_nan, uint8_t *res)
{
    GRID_LOOP(i, n)
    {
        const double p = load_f64(x, dt, i), q = load_f64(y, dt, i);
        bool ok;
        if (isnan(p) || isnan(q)) ok = eq_nan && isnan(p) && isnan(q);
        else ok = p == q || fabs(__dadd_rn(p, -q)) <= __dadd_rn(atol, __dmul_rn(rtol, fabs(q)));
        if (!ok) *res = 0;
    }
}

GPU_FWD(ac_gpu)
{
    STREAM;
    uint8_t *res = (uint8_t *)hg_data(out[0]);
    HG_TRY(hg_cuda_status(cudaMemsetAsync(res, 1, 1, s), op->name));
    const int64_t n = in[0]->size;
    if (n == 0) return HG_OK;
    /* MXNet's float tolerances (contrib_index.c's ac_forward) */
    const double rtol = (float)a->v[AC_RTOL].f, atol = (float)a->v[AC_ATOL].f;
    ac_kernel LAUNCH(n)(hg_data(in[0]), hg_data(in[1]), (int)in[0]->dtype, n, rtol, atol,
                        a->v[AC_NAN].b, res);
    return hg_cuda_launched(op->name);
}

/* ---- _contrib_arange_like -------------------------------------------------------------------- */

/* Value i: start + (i / repeat) * step in the data's arithmetic (contrib_index.c's al_forward),
 * stored as hg_c_store stores a double. */
template <typename T>
__global__ void al_int_kernel(T *y, int64_t n, int64_t rep, int64_t start, int64_t step)
{
    GRID_LOOP(i, n)
    {
        const uint64_t k = (uint64_t)(i / rep);
        const double v = (double)(int64_t)((uint64_t)start + k * (uint64_t)step);
        /* x86's conversion of 2^63 (a sum rounded up) is INT64_MIN; the GPU's saturates */
        const int64_t w = v >= 9.2233720368547758e18 ? INT64_MIN : (int64_t)v;
        y[i] = (T)w;
    }
}

__global__ void al_f64_kernel(double *y, int64_t n, int64_t rep, double start, double step)
{
    GRID_LOOP(i, n) y[i] = __dadd_rn(start, __dmul_rn((double)(i / rep), step));
}

__global__ void al_f32_kernel(void *y, bool half, int64_t n, int64_t rep, float start, float step)
{
    GRID_LOOP(i, n)
    {
        const float v = __fadd_rn(start, __fmul_rn((float)(double)(i / rep), step));
        if (half) ((uint16_t *)y)[i] = f2h(v);
        else ((float *)y)[i] = v;
    }
}

GPU_FWD(al_gpu)
{
    STREAM;
    hg_tensor *y = out[0];
    const int64_t n = y->size, rep = a->v[AL_REPEAT].i;
    const double start = a->v[AL_START].f, step = a->v[AL_STEP].f;
    if (n == 0) return HG_OK;
    void *p = hg_data(y);
    const int64_t is = (int64_t)start, ist = (int64_t)step;
    switch (in[0]->dtype) {
    case HG_DTYPE_F64: al_f64_kernel LAUNCH(n)((double *)p, n, rep, start, step); break;
    case HG_DTYPE_F32:
    case HG_DTYPE_F16:
        al_f32_kernel LAUNCH(n)(p, in[0]->dtype == HG_DTYPE_F16, n, rep, (float)start, (float)step);
        break;
    case HG_DTYPE_I32: al_int_kernel<int32_t> LAUNCH(n)((int32_t *)p, n, rep, is, ist); break;
    case HG_DTYPE_I64: al_int_kernel<int64_t> LAUNCH(n)((int64_t *)p, n, rep, is, ist); break;
    case HG_DTYPE_I8: al_int_kernel<int8_t> LAUNCH(n)((int8_t *)p, n, rep, is, ist); break;
    case HG_DTYPE_U8: al_int_kernel<uint8_t> LAUNCH(n)((uint8_t *)p, n, rep, is, ist); break;
    default: return bad_dtype(op, in[0]->dtype);
    }
    return hg_cuda_launched(op->name);
}

/* ---- sort, argsort, topk --------------------------------------------------------------------- */

/* x = (xv, xi) strictly before y = (yv, yi) in sort.c's order. */
template <typename T>
__device__ __forceinline__ bool before(T xv, int32_t xi, T yv, int32_t yi, bool asc)
{
    const bool xn = xv != xv, yn = yv != yv;
    if (xn || yn) {
        if (xn && yn) return xi < yi;
        return asc ? yn : xn;
    }
    if (asc ? xv < yv : yv < xv) return true;
    if (asc ? yv < xv : xv < yv) return false;
    return xi < yi;
}

/* Row r = o * inner + i of the data, element e, into keys[r * n + e]. */
template <typename T>
__global__ void sort_gather_kernel(const T *x, T *key, int32_t *idx, int64_t n, int64_t inner,
                                   int64_t total)
{
    GRID_LOOP(p, total)
    {
        const int64_t i = p % inner, e = (p / inner) % n, o = p / (inner * n);
        const int64_t d = (o * inner + i) * n + e;
        key[d] = x[p];
        idx[d] = (int32_t)e;
    }
}

/* One merge pass: runs of width w (sorted) pairwise into runs of 2w. */
template <typename T>
__global__ void sort_merge_kernel(const T *ks, const int32_t *is, T *kd, int32_t *id, int64_t n,
                                  int64_t w, bool asc, int64_t total)
{
    GRID_LOOP(p, total)
    {
        const int64_t r = p / n, q = p % n, run = q / w, base = r * n;
        const int64_t pb = (run ^ 1) * w, pe = pb + w < n ? pb + w : n;
        const T v = ks[p];
        const int32_t ix = is[p];
        int64_t dst = q;
        if (pb < n) {
            /* how many of the partner run come before (v, ix): a prefix of it */
            int64_t lo = pb, hi = pe;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (before(ks[base + mid], is[base + mid], v, ix, asc)) lo = mid + 1;
                else hi = mid;
            }
            const int64_t start = (run & ~(int64_t)1) * w;
            dst = start + (q - run * w) + (lo - pb);
        }
        kd[base + dst] = v;
        id[base + dst] = ix;
    }
}

/* sort.c's write_idx. */
__device__ __forceinline__ void write_idx(void *base, int dt, int64_t pos, int64_t v)
{
    switch (dt) {
    case HG_DTYPE_F32: ((float *)base)[pos] = (float)v; break;
    case HG_DTYPE_F64: ((double *)base)[pos] = (double)v; break;
    case HG_DTYPE_F16: ((uint16_t *)base)[pos] = f2h((float)v); break;
    case HG_DTYPE_I32: ((int32_t *)base)[pos] = (int32_t)v; break;
    case HG_DTYPE_I64: ((int64_t *)base)[pos] = v; break;
    default: ((uint8_t *)base)[pos] = (uint8_t)v; break;
    }
}

/* The first k of each sorted row into the (outer, k, inner) outputs and/or the mask. */
template <typename T>
__global__ void sort_out_kernel(const T *key, const int32_t *idx, int64_t n, int64_t inner,
                                int64_t k, T *val, void *iout, int idt, T *mask, int64_t total)
{
    GRID_LOOP(p, total)
    {
        const int64_t r = p / k, e = p % k, o = r / inner, i = r % inner;
        const int64_t src = r * n + e, pos = (o * k + e) * inner + i;
        if (val) val[pos] = key[src];
        if (iout) write_idx(iout, idt, pos, idx[src]);
        if (mask) mask[(o * n + idx[src]) * inner + i] = (T)1;
    }
}

/* One ordering job, as sort.c's sort_job. */
struct sort_job {
    const hg_tensor *x;
    int64_t outer, n, inner, k;
    bool asc;
    void *val, *idx, *mask;
    int idt;
};

/* sort.c's layout(). */
void layout(sort_job *j, const hg_tensor *x, const hg_attr_value *axis_attr)
{
    j->x = x;
    j->outer = 1;
    j->inner = 1;
    if (axis_attr->is_none) {
        j->n = x->size;
        return;
    }
    const int axis = (int)(axis_attr->i < 0 ? axis_attr->i + x->ndim : axis_attr->i);
    for (int d = 0; d < axis; d++) j->outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) j->inner *= x->shape[d];
    j->n = x->shape[axis];
}

template <typename T>
hg_status sort_typed(const hg_op_def *op, int dev, cudaStream_t s, const sort_job *j)
{
    const int64_t rows = j->outer * j->inner, total = rows * j->n;
    if (j->mask)
        HG_TRY(hg_cuda_status(cudaMemsetAsync(j->mask, 0, (size_t)total * sizeof(T), s), op->name));
    if (total == 0 || j->k == 0) return HG_OK;
    /* index buffers first: they keep the key buffers aligned for any T */
    const size_t nb = (size_t)total * (sizeof(T) + sizeof(int32_t)) * 2;
    void *ws = NULL;
    HG_TRY(hg_device_alloc(dev, nb, &ws));
    int32_t *ia = (int32_t *)ws, *ib = ia + total;
    T *ka = (T *)(ib + total), *kb = ka + total;
    sort_gather_kernel<T> LAUNCH(total)((const T *)hg_data(j->x), ka, ia, j->n, j->inner, total);
    hg_status st = hg_cuda_launched(op->name);
    for (int64_t w = 1; st == HG_OK && w < j->n; w *= 2) {
        sort_merge_kernel<T> LAUNCH(total)(ka, ia, kb, ib, j->n, w, j->asc, total);
        st = hg_cuda_launched(op->name);
        T *kt = ka;
        ka = kb;
        kb = kt;
        int32_t *it = ia;
        ia = ib;
        ib = it;
    }
    if (st == HG_OK) {
        const int64_t nout = rows * j->k;
        sort_out_kernel<T> LAUNCH(nout)(ka, ia, j->n, j->inner, j->k, (T *)j->val, j->idx, j->idt,
                                        (T *)j->mask, nout);
        st = hg_cuda_launched(op->name);
    }
    hg_device_free(dev, ws, nb);
    return st;
}

hg_status run_sort(const hg_op_def *op, const hg_exec_ctx *ctx, const sort_job *j)
{
    STREAM;
    switch (j->x->dtype) {
    case HG_DTYPE_F32: return sort_typed<float>(op, ctx->device_id, s, j);
    case HG_DTYPE_F64: return sort_typed<double>(op, ctx->device_id, s, j);
    case HG_DTYPE_I32: return sort_typed<int32_t>(op, ctx->device_id, s, j);
    case HG_DTYPE_I64: return sort_typed<int64_t>(op, ctx->device_id, s, j);
    case HG_DTYPE_I8: return sort_typed<int8_t>(op, ctx->device_id, s, j);
    case HG_DTYPE_U8: return sort_typed<uint8_t>(op, ctx->device_id, s, j);
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name,
                        hg_dtype_name(j->x->dtype));
    }
}

/* topk's k (sort.c's topk_k: k < 1 selects the whole row). */
int64_t topk_k(const hg_attrs *a, int64_t n) { return a->v[TK_K].i >= 1 ? a->v[TK_K].i : n; }

GPU_FWD(topk_gpu)
{
    sort_job j = {};
    j.asc = a->v[TK_ASCEND].b;
    const int ret = (int)a->v[TK_RET].i;
    j.idt = ret == RET_VALUE ? HG_DTYPE_I32 : (int)a->v[TK_DTYPE].i;
    layout(&j, in[0], &a->v[TK_AXIS]);
    j.k = topk_k(a, j.n);
    switch (ret) {
    case RET_INDICES: j.idx = hg_data(out[0]); break;
    case RET_MASK: j.mask = hg_data(out[0]); break;
    default: /* value (hidden indices) and both */
        j.val = hg_data(out[0]);
        j.idx = hg_data(out[1]);
        break;
    }
    return run_sort(op, ctx, &j);
}

GPU_FWD(sort_gpu)
{
    sort_job j = {};
    j.asc = a->v[SO_ASCEND].b;
    j.idt = HG_DTYPE_I32;
    layout(&j, in[0], &a->v[SO_AXIS]);
    j.k = j.n;
    j.val = hg_data(out[0]);
    j.idx = hg_data(out[1]);
    return run_sort(op, ctx, &j);
}

GPU_FWD(argsort_gpu)
{
    sort_job j = {};
    j.asc = a->v[SO_ASCEND].b;
    j.idt = (int)a->v[SO_DTYPE].i;
    if (in[0]->ndim == 0) {
        /* a scalar's argsort is [0]: zero bits in every index dtype */
        STREAM;
        return hg_cuda_status(cudaMemsetAsync(hg_data(out[0]), 0, hg_dtype_size(out[0]->dtype), s),
                              op->name);
    }
    layout(&j, in[0], &a->v[SO_AXIS]);
    j.k = j.n;
    j.idx = hg_data(out[0]);
    return run_sort(op, ctx, &j);
}

/* sort.c's read_idx; a value no row has (NaN, out of int64) gives -1, which is skipped as the
 * CPU skips x86's INT64_MIN for it. */
__device__ __forceinline__ int64_t read_idx(const void *base, int dt, int64_t pos)
{
    double v;
    switch (dt) {
    case HG_DTYPE_F32: v = ((const float *)base)[pos]; break;
    case HG_DTYPE_F64: v = ((const double *)base)[pos]; break;
    case HG_DTYPE_F16: v = h2f(((const uint16_t *)base)[pos]); break;
    case HG_DTYPE_I32: return ((const int32_t *)base)[pos];
    case HG_DTYPE_I64: return ((const int64_t *)base)[pos];
    default: return ((const uint8_t *)base)[pos];
    }
    return v > -9.2e18 && v < 9.2e18 ? (int64_t)v : -1;
}

/* dx[o, idx[o, r, i], i] = dy[o, r, i] into the zeroed dx. */
template <typename T>
__global__ void topk_bwd_kernel(const T *dy, const void *idx, int idt, T *dx, int64_t n,
                                int64_t inner, int64_t k, int64_t total)
{
    GRID_LOOP(pos, total)
    {
        const int64_t o = pos / (k * inner), i = pos % inner, t = read_idx(idx, idt, pos);
        if (t >= 0 && t < n) dx[(o * n + t) * inner + i] = dy[pos];
    }
}

/* _backward_topk(ograd, indices, data). */
GPU_FWD(topk_bwd_gpu)
{
    STREAM;
    hg_tensor *dx = out[0];
    HG_TRY(zero_fill(op, s, dx));
    sort_job l = {};
    layout(&l, in[2], &a->v[TK_AXIS]);
    const int64_t k = topk_k(a, l.n), total = in[0]->size;
    if (total == 0 || k == 0 || l.inner == 0) return HG_OK;
#define TB(T)                                                                                  \
    topk_bwd_kernel<T> LAUNCH(total)((const T *)hg_data(in[0]), hg_data(in[1]),                 \
                                     (int)in[1]->dtype, (T *)hg_data(dx), l.n, l.inner, k, total)
    if (!BY_SIZE(hg_dtype_size(dx->dtype), TB)) return bad_dtype(op, dx->dtype);
#undef TB
    return hg_cuda_launched(op->name);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_misc[] = {
    {"_contrib_round_ste", round_ste_gpu},
    {"_contrib_sign_ste", sign_ste_gpu},
    {"_contrib_gradientmultiplier", gradmul_gpu},
    {"_contrib_quadratic", quadratic_gpu},
    {"_contrib_div_sqrt_dim", dsd_gpu},
    {"_contrib_index_array", ia_gpu},
    {"_contrib_index_copy", ic_gpu},
    {"_contrib_allclose", ac_gpu},
    {"_contrib_arange_like", al_gpu},
    {"topk", topk_gpu},
    {"sort", sort_gpu},
    {"argsort", argsort_gpu},
    {"_backward_topk", topk_bwd_gpu},
    {NULL, NULL},
};
