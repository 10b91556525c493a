/* hg_gpu_kernels_creation: GPU kernels of the creation ops (ops/creation.c: _zeros, _ones,
 * _full, _arange, _eye) and of _linspace and _histogram (ops/tensor_num.c), which also compute
 * their values from attributes.
 *
 * The ops without inputs run here when their output is on a GPU: the Python creation functions
 * (nd.zeros, ones, full, arange, eye, linspace) allocate it there for a GPU context, and `out=`
 * may name a GPU array. Values are the CPU's: a fill value is converted on the host with
 * creation.c's conversion and written as a bit pattern; arange and linspace compute each element
 * in the CPU's types (the file is compiled with -fmad=false, setup.py, so no product and sum
 * fuse into an FMA). _histogram's bin edges come from its attributes or its bins input, never
 * from the data, so it needs no reduction first: edges are written per thread, and each element
 * finds its bin as the CPU's loop does (reading the edges as stored in the edges' dtype) and
 * counts with a 64-bit atomic add, which is exact in any order. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/tensor_common.h"

extern "C" {
#include "ops/tensor_num.h"
}

namespace
{

/* ---- fills ---------------------------------------------------------------------------------- */

/* creation.c's to_i64: double -> int64 without undefined behaviour. */
int64_t to_i64(double v)
{
    if (!(v == v)) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

/* creation.c's elem_from_double: v as one element of dtype dt, in the low bytes of the result. */
uint64_t pattern_of(hg_dtype dt, double v)
{
    uint64_t bits = 0;
    switch (dt) {
    case HG_DTYPE_F32: {
        float x = (float)v;
        memcpy(&bits, &x, 4);
        break;
    }
    case HG_DTYPE_F64: memcpy(&bits, &v, 8); break;
    case HG_DTYPE_F16: bits = hg_float_to_half((float)v); break;
    case HG_DTYPE_U8: bits = (uint8_t)to_i64(v); break;
    case HG_DTYPE_I8: bits = (uint8_t)(int8_t)to_i64(v); break;
    case HG_DTYPE_I32: bits = (uint32_t)(int32_t)to_i64(v); break;
    case HG_DTYPE_I64: bits = (uint64_t)to_i64(v); break;
    case HG_DTYPE_BOOL: bits = v != 0; break;
    default: break;
    }
    return bits;
}

/* y[i] = one when i is on the k-th diagonal of an (n, m) matrix (m > 0), else zero; m == 0:
 * every element is `one`. */
template <typename T> __global__ void fill_kernel(T *y, T one, int64_t m, int64_t k, int64_t total)
{
    GRID_LOOP(i, total) y[i] = m == 0 || i % m - i / m == k ? one : (T)0;
}

/* Every element of t set to the bit pattern `bits` (m == 0), or the eye pattern. */
hg_status fill(const hg_op_def *op, const hg_exec_ctx *ctx, hg_tensor *t, uint64_t bits, int64_t m,
               int64_t k)
{
    STREAM;
    const int64_t n = t->size;
    if (n == 0) return HG_OK;
    if (bits == 0) return zero_fill(op, s, t);
    switch (hg_dtype_size(t->dtype)) {
    case 1: fill_kernel<uint8_t> LAUNCH(n)((uint8_t *)hg_data(t), (uint8_t)bits, m, k, n); break;
    case 2: fill_kernel<uint16_t> LAUNCH(n)((uint16_t *)hg_data(t), (uint16_t)bits, m, k, n); break;
    case 4: fill_kernel<uint32_t> LAUNCH(n)((uint32_t *)hg_data(t), (uint32_t)bits, m, k, n); break;
    case 8: fill_kernel<uint64_t> LAUNCH(n)((uint64_t *)hg_data(t), bits, m, k, n); break;
    default: return bad_dtype(op, t->dtype);
    }
    return hg_cuda_launched(op->name);
}

/* creation.c's schemas: _zeros/_ones/_full (shape, ctx, dtype, value), _arange (start, stop,
 * step, repeat, infer_range, ctx, dtype), _eye (N, M, k, ctx, dtype). */
enum { IN_VALUE = 3 };
enum { AR_START, AR_STOP, AR_STEP, AR_REPEAT, AR_INFER_RANGE };
enum { EYE_K = 2 };

GPU_FWD(zeros_gpu) { return fill(op, ctx, out[0], 0, 0, 0); }
GPU_FWD(ones_gpu) { return fill(op, ctx, out[0], pattern_of(out[0]->dtype, 1), 0, 0); }
GPU_FWD(full_gpu)
{
    return fill(op, ctx, out[0], pattern_of(out[0]->dtype, a->v[IN_VALUE].f), 0, 0);
}

GPU_FWD(eye_gpu)
{
    hg_tensor *t = out[0];
    if (t->shape[1] == 0) return HG_OK; /* an (n, 0) matrix has no elements */
    return fill(op, ctx, t, pattern_of(t->dtype, 1), t->shape[1], a->v[EYE_K].i);
}

/* ---- _arange ---------------------------------------------------------------------------------
 * creation.c's arange_range: start and step cast to the dtype first, start + (i / repeat) *
 * step in the dtype (float16 in float), integers in uint64_t arithmetic keeping the low bits. */
struct ar_par {
    double start, step;
    int64_t repeat;
    uint64_t s0, d; /* integer dtypes: start and step cast to the dtype, as uint64_t */
};

__global__ void arange_kernel(void *y, int dt, ar_par p, int64_t n)
{
    GRID_LOOP(i, n)
    {
        const int64_t q = p.repeat == 1 ? i : i / p.repeat;
        switch (dt) {
        case HG_DTYPE_F32: {
            const float s0 = (float)p.start, d = (float)p.step, k = (float)q;
            ((float *)y)[i] = s0 + k * d;
            break;
        }
        case HG_DTYPE_F64: ((double *)y)[i] = p.start + (double)q * p.step; break;
        case HG_DTYPE_F16: {
            const float s0 = (float)p.start, d = (float)p.step, k = (float)q;
            ((uint16_t *)y)[i] = hg_tx::f2h(s0 + k * d);
            break;
        }
        case HG_DTYPE_U8: ((uint8_t *)y)[i] = (uint8_t)(p.s0 + (uint64_t)q * p.d); break;
        case HG_DTYPE_I8: ((int8_t *)y)[i] = (int8_t)(uint8_t)(p.s0 + (uint64_t)q * p.d); break;
        case HG_DTYPE_I32: ((int32_t *)y)[i] = (int32_t)(uint32_t)(p.s0 + (uint64_t)q * p.d); break;
        case HG_DTYPE_I64: ((int64_t *)y)[i] = (int64_t)(p.s0 + (uint64_t)q * p.d); break;
        case HG_DTYPE_BOOL: ((uint8_t *)y)[i] = p.start + (double)q * p.step != 0; break;
        default: break;
        }
    }
}

/* The CPU's integer start and step: to_i64, then cast to the dtype T, then to uint64_t. */
template <typename T> void int_par(ar_par *p)
{
    p->s0 = (uint64_t)(T)to_i64(p->start);
    p->d = (uint64_t)(T)to_i64(p->step);
}

GPU_FWD(arange_gpu)
{
    STREAM;
    ar_par p;
    /* creation.c's arange_bounds: with stop None the interval is [0, start) */
    const bool from0 = a->v[AR_STOP].is_none && !a->v[AR_INFER_RANGE].b;
    p.start = from0 ? 0 : a->v[AR_START].f;
    p.step = a->v[AR_STEP].f;
    p.repeat = a->v[AR_REPEAT].i;
    p.s0 = p.d = 0;
    switch (out[0]->dtype) {
    case HG_DTYPE_U8: int_par<uint8_t>(&p); break;
    case HG_DTYPE_I8: int_par<int8_t>(&p); break;
    case HG_DTYPE_I32: int_par<int32_t>(&p); break;
    case HG_DTYPE_I64: int_par<int64_t>(&p); break;
    default: break;
    }
    return hg_tx::launch(op->name, s, out[0]->size, arange_kernel, hg_data(out[0]),
                         (int)out[0]->dtype, p, out[0]->size);
}

/* ---- _linspace: start + step * i stored as tx_st stores ----------------------------------- */

__global__ void linspace_kernel(void *y, int dt, double start, double step, int64_t n)
{
    GRID_LOOP(i, n) hg_tx::st(y, dt, i, start + step * (double)i);
}

GPU_FWD(linspace_gpu)
{
    STREAM;
    const int64_t num = a->v[LS_NUM].i, steps = a->v[LS_ENDPOINT].b ? num - 1 : num;
    const double start = a->v[LS_START].f;
    const double step = steps > 0 ? (a->v[LS_STOP].f - start) / steps : 0;
    return hg_tx::launch(op->name, s, num, linspace_kernel, hg_data(out[0]), (int)out[0]->dtype,
                         start, step, num);
}

/* ---- _histogram ------------------------------------------------------------------------------ */

/* tensor_num.c's hi_range: "(lower, upper)" (checked by infer). */
hg_status hist_range(const hg_attrs *a, double *lo, double *hi)
{
    const char *s = a->v[HI_RANGE].s;
    while (*s == ' ' || *s == '(' || *s == '[') s++;
    char *end;
    *lo = strtod(s, &end);
    if (end == s) goto bad;
    s = end;
    while (*s == ' ' || *s == ',') s++;
    *hi = strtod(s, &end);
    if (end == s) goto bad;
    return HG_OK;
bad:
    return hg_error(HG_ERR_VALUE, "_histogram: range '%s' is not a pair (lower, upper)",
                    a->v[HI_RANGE].s);
}

/* Edge i of nb equal bins over [lo, hi], as the CPU writes it (before rounding to the dtype). */
__device__ __forceinline__ double equal_edge(double lo, double hi, int64_t nb, int64_t i)
{
    return (hi * (double)i + (double)(nb - i) * lo) / nb;
}

__global__ void equal_edges_kernel(void *edges, int dt, double lo, double hi, int64_t nb)
{
    GRID_LOOP(i, nb + 1) hg_tx::st(edges, dt, i, equal_edge(lo, hi, nb, i));
}

/* Counts of x in nb equal bins: the CPU's first guess from the position, corrected by the
 * stored edges (what tx_ld reads back of them, computed here rather than read). */
__global__ void equal_count_kernel(const void *x, int dt, int64_t n, int edt, double lo, double hi,
                                   int64_t nb, unsigned long long *cnt)
{
    GRID_LOOP(i, n)
    {
        const double v = hg_tx::ld(x, dt, i);
        if (!(v >= lo && v <= hi)) continue;
        const double pos = (v - lo) * (double)nb / (hi - lo);
        int64_t t = pos == pos && pos < 9.2e18 ? (int64_t)pos : 0;
        if (t > nb - 1) t = nb - 1;
        if (t < 0) t = 0;
        if (t > 0 && v < hg_tx::rnd(edt, equal_edge(lo, hi, nb, t))) t--;
        if (t != nb - 1 && v >= hg_tx::rnd(edt, equal_edge(lo, hi, nb, t + 1))) t++;
        atomicAdd(cnt + t, 1ull);
    }
}

__global__ void copy_edges_kernel(const void *b, int bdt, void *edges, int edt, int64_t n)
{
    GRID_LOOP(i, n) hg_tx::st(edges, edt, i, hg_tx::ld(b, bdt, i));
}

/* Given edges b[0..nb]: the last edge <= v by the CPU's walk, the right-most bin closed. */
__global__ void edges_count_kernel(const void *x, int dt, int64_t n, const void *b, int bdt,
                                   int64_t nb, unsigned long long *cnt)
{
    GRID_LOOP(i, n)
    {
        const double v = hg_tx::ld(x, dt, i);
        if (!(v >= hg_tx::ld(b, bdt, 0) && v <= hg_tx::ld(b, bdt, nb))) continue;
        int64_t t = 0;
        while (t < nb && v >= hg_tx::ld(b, bdt, t + 1)) t++;
        atomicAdd(cnt + (t < nb - 1 ? t : nb - 1), 1ull);
    }
}

GPU_FWD(histogram_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *counts = out[0], *edges = out[1];
    const int64_t nb = counts->shape[0];
    unsigned long long *cnt = (unsigned long long *)hg_data(counts);
    HG_TRY(zero_fill(op, s, counts));
    if (nin == 1) {
        double lo, hi;
        HG_TRY(hist_range(a, &lo, &hi));
        if (lo == hi) {
            lo -= 0.5;
            hi += 0.5;
        }
        HG_TRY(hg_tx::launch(op->name, s, nb + 1, equal_edges_kernel, hg_data(edges),
                             (int)edges->dtype, lo, hi, nb));
        return hg_tx::launch(op->name, s, x->size, equal_count_kernel, (const void *)hg_data(x),
                             (int)x->dtype, x->size, (int)edges->dtype, lo, hi, nb, cnt);
    }
    const hg_tensor *b = in[1];
    HG_TRY(hg_tx::launch(op->name, s, nb + 1, copy_edges_kernel, (const void *)hg_data(b),
                         (int)b->dtype, hg_data(edges), (int)edges->dtype, nb + 1));
    return hg_tx::launch(op->name, s, x->size, edges_count_kernel, (const void *)hg_data(x),
                         (int)x->dtype, x->size, (const void *)hg_data(b), (int)b->dtype, nb, cnt);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_creation[] = {
    {"_zeros", zeros_gpu},         {"_ones", ones_gpu}, {"_full", full_gpu},
    {"_arange", arange_gpu},       {"_eye", eye_gpu},   {"_linspace", linspace_gpu},
    {"_histogram", histogram_gpu}, {NULL, NULL},
};
