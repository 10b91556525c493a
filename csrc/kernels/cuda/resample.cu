/* hg_gpu_kernels_resample: GPU kernels of the resampling ops of ops/resample.c: Pad and its
 * gradient _backward_Pad, UpSampling and _backward_UpSampling (nearest); and of
 * ops/contrib_resize.c: _contrib_AdaptiveAvgPooling2D, _contrib_BilinearResize2D and their
 * _backward_ ops; and of ops/legacy_nn.c: LRN, Crop and their _backward_ ops (the last two
 * groups are described at their kernels below).
 *
 * Pad moves elements by size; 4-D data is treated as 5-D with a unit depth axis, so one kernel
 * serves both. _backward_Pad is a gather: each data element sums, per spatial axis, the output
 * cells that copied it (its interior cell, and the edge or reflect cells that map to it), in the
 * order the CPU adds them (output rows in order; within a row the interior cell, then the left
 * padding, then the right), in the CPU's accumulator type (float for float16), so sums are the
 * CPU's bit for bit. UpSampling (nearest) copies each input's cells into the output, one launch
 * per input in the CPU's order (sum mode adds input after input, float16 rounding after each
 * add as the CPU does); _backward_UpSampling sums each scale x scale block in the CPU's order.
 * UpSampling with sample_type='bilinear' is a Deconvolution (resample.c): it runs the GPU kernel
 * of Deconvolution when that op has one.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "ops/contrib_resize.h"
#include "ops/legacy_nn.h"
#include "ops/resample.h"
}

namespace
{

/* ---- shared helpers -------------------------------------------------------------------------- */

/* Element types as stored (S) and as summed (A): float16 is uint16_t bits summed in float. */
template <typename S> struct acc {
    typedef S A;
    static __device__ __forceinline__ A ld(S v) { return v; }
    static __device__ __forceinline__ S st(A v) { return v; }
};
template <> struct acc<uint16_t> {
    typedef float A;
    static __device__ __forceinline__ float ld(uint16_t v) { return h2f(v); }
    static __device__ __forceinline__ uint16_t st(float v) { return f2h(v); }
};

/* Runs M(T) for the float dtypes these ops take (float16 as its uint16_t bits). */
#define BY_FLOAT(dt, M)                                                                        \
    ((dt) == HG_DTYPE_F32   ? (M(float), true)                                                 \
     : (dt) == HG_DTYPE_F64 ? (M(double), true)                                                \
     : (dt) == HG_DTYPE_F16 ? (M(uint16_t), true)                                              \
                            : false)

/* ---- Pad ------------------------------------------------------------------------------------- */

/* Shapes as 5-D (4-D data gets a unit axis 2) with the padding before each axis. */
struct pad_plan {
    int64_t ishape[5], oshape[5], before[5];
    int mode;
};

pad_plan pad_plan_of(const hg_attrs *a, const hg_tensor *x, const hg_tensor *y)
{
    const hg_tuple *pw = &a->v[K_PAD_WIDTH].t;
    pad_plan p;
    const int nd = x->ndim, off = 5 - nd;
    for (int d = 0; d < 5; d++) {
        p.ishape[d] = p.oshape[d] = 1;
        p.before[d] = 0;
    }
    for (int d = 0; d < nd; d++) {
        const int q = d < 2 ? d : d + off;
        p.ishape[q] = x->shape[d];
        p.oshape[q] = y->shape[d];
        p.before[q] = pw->v[2 * d];
    }
    p.mode = (int)a->v[K_PAD_MODE].i;
    return p;
}

/* resample.c's pad_src: the source index of output index i, -1 for a constant cell. */
__device__ __forceinline__ int64_t pad_src(int64_t i, int64_t n, int64_t before, int mode)
{
    const int64_t j = i - before;
    if (j >= 0 && j < n) return j;
    if (mode == PAD_CONSTANT) return -1;
    if (mode == PAD_EDGE) return j < 0 ? 0 : n - 1;
    return j < 0 ? -j : 2 * (n - 1) - j;
}

template <typename T>
__global__ void pad_kernel(const T *x, T *y, pad_plan p, T fill, int64_t total)
{
    GRID_LOOP(e, total)
    {
        int64_t rem = e, src = 0, mul = 1;
        bool constant = false;
        for (int d = 4; d >= 0; d--) {
            const int64_t o = rem % p.oshape[d];
            rem /= p.oshape[d];
            const int64_t si = pad_src(o, p.ishape[d], p.before[d], p.mode);
            if (si < 0) constant = true;
            src += si * mul;
            mul *= p.ishape[d];
        }
        y[e] = constant ? fill : x[src];
    }
}

GPU_FWD(pad_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    const int64_t total = y->size;
    if (total == 0) return HG_OK;
    const pad_plan p = pad_plan_of(a, x, y);
    const double v = a->v[K_PAD_VALUE].f;
    switch (y->dtype) {
    case HG_DTYPE_F32:
        pad_kernel<float> LAUNCH(total)((const float *)hg_data(x), (float *)hg_data(y), p, (float)v,
                                        total);
        break;
    case HG_DTYPE_F64:
        pad_kernel<double> LAUNCH(total)((const double *)hg_data(x), (double *)hg_data(y), p, v,
                                         total);
        break;
    case HG_DTYPE_F16:
        pad_kernel<uint16_t> LAUNCH(total)((const uint16_t *)hg_data(x), (uint16_t *)hg_data(y), p,
                                           hg_float_to_half((float)v), total);
        break;
    default: return bad_dtype(op, y->dtype);
    }
    return hg_cuda_launched(op->name);
}

/* The output cells of one axis that copy input index j: up to three intervals [lo, hi). With
 * `last`, the interior cell comes first (the CPU's order within a row); otherwise they are in
 * ascending order. */
__device__ __forceinline__ int pad_cells(int64_t j, int64_t n, int64_t b, int64_t on, int mode,
                                         bool last, int64_t *lo, int64_t *hi)
{
    int64_t llo = 0, lhi = 0, rlo = 0, rhi = 0; /* left and right padding cells */
    const int64_t after = on - b - n;
    if (mode == PAD_EDGE) {
        if (j == 0) lhi = b;
        if (j == n - 1) {
            rlo = b + n;
            rhi = b + n + after;
        }
    } else if (mode == PAD_REFLECT) {
        if (j >= 1 && j <= b) {
            llo = b - j;
            lhi = llo + 1;
        }
        const int64_t r = b + 2 * (n - 1) - j;
        if (r >= b + n && r < on) {
            rlo = r;
            rhi = r + 1;
        }
    }
    int c = 0;
    if (last) {
        lo[c] = b + j;
        hi[c++] = b + j + 1;
    }
    if (lhi > llo) {
        lo[c] = llo;
        hi[c++] = lhi;
    }
    if (!last) {
        lo[c] = b + j;
        hi[c++] = b + j + 1;
    }
    if (rhi > rlo) {
        lo[c] = rlo;
        hi[c++] = rhi;
    }
    return c;
}

/* dx[pl, j2, j3, j4] = the sum of dy over the cells that copied it. */
template <typename T> __global__ void pad_bw_kernel(const T *dy, T *dx, pad_plan p, int64_t total)
{
    typedef typename acc<T>::A A;
    const int64_t isz = p.ishape[2] * p.ishape[3] * p.ishape[4];
    const int64_t osz = p.oshape[2] * p.oshape[3] * p.oshape[4];
    GRID_LOOP(e, total)
    {
        const int64_t pl = e / isz, r = e % isz;
        const int64_t j4 = r % p.ishape[4], j3 = (r / p.ishape[4]) % p.ishape[3],
                      j2 = r / (p.ishape[4] * p.ishape[3]);
        int64_t lo2[3], hi2[3], lo3[3], hi3[3], lo4[3], hi4[3];
        const int c2 = pad_cells(j2, p.ishape[2], p.before[2], p.oshape[2], p.mode, false, lo2,
                                 hi2);
        const int c3 = pad_cells(j3, p.ishape[3], p.before[3], p.oshape[3], p.mode, false, lo3,
                                 hi3);
        const int c4 = pad_cells(j4, p.ishape[4], p.before[4], p.oshape[4], p.mode, true, lo4, hi4);
        const T *g = dy + pl * osz;
        A sum = 0;
        for (int a2 = 0; a2 < c2; a2++)
            for (int64_t o2 = lo2[a2]; o2 < hi2[a2]; o2++)
                for (int a3 = 0; a3 < c3; a3++)
                    for (int64_t o3 = lo3[a3]; o3 < hi3[a3]; o3++) {
                        const T *row = g + (o2 * p.oshape[3] + o3) * p.oshape[4];
                        for (int a4 = 0; a4 < c4; a4++)
                            for (int64_t o4 = lo4[a4]; o4 < hi4[a4]; o4++)
                                sum += acc<T>::ld(row[o4]);
                    }
        dx[e] = acc<T>::st(sum);
    }
}

GPU_FWD(pad_bw_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    hg_tensor *dx = out[0];
    const int64_t total = dx->size;
    if (total == 0) return HG_OK;
    const pad_plan p = pad_plan_of(a, dx, dy);
#define PADBW(T)                                                                               \
    pad_bw_kernel<T> LAUNCH(total)((const T *)hg_data(dy), (T *)hg_data(dx), p, total)
    if (!BY_FLOAT(dx->dtype, PADBW)) return bad_dtype(op, dx->dtype);
#undef PADBW
    return hg_cuda_launched(op->name);
}

/* ---- UpSampling (nearest) -------------------------------------------------------------------- */

/* Output channels [coff, coff + C) from x of (N, C, H, W) at scale sc into y of (N, YC, H sc,
 * W sc): copied, or added (sum mode after the first input, rounding as the CPU does). */
template <typename T>
__global__ void up_kernel(const T *x, T *y, int64_t C, int64_t H, int64_t W, int64_t sc, int64_t YC,
                          int64_t coff, bool add, int64_t total)
{
    const int64_t OW = W * sc, OH = H * sc;
    GRID_LOOP(e, total)
    {
        const int64_t ox = e % OW, oy = (e / OW) % OH, c = (e / (OW * OH)) % C,
                      n = e / (OW * OH * C);
        const T v = x[((n * C + c) * H + oy / sc) * W + ox / sc];
        T *d = y + ((n * YC + coff + c) * OH + oy) * OW + ox;
        if (add) *d = acc<T>::st(acc<T>::ld(*d) + acc<T>::ld(v));
        else *d = v;
    }
}

/* UpSampling with sample_type='bilinear' is resample.c's Deconvolution: the same attributes,
 * built the same way (up_deconv), and Deconvolution's GPU kernel. */
hg_status up_bilinear(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const long long sc = a->v[K_UP_SCALE].i, k = 2 * sc - sc % 2, pd = sc / 2;
    char kernel[48], stride[48], pad[48], nf[24];
    snprintf(kernel, sizeof kernel, "(%lld, %lld)", k, k);
    snprintf(stride, sizeof stride, "(%lld, %lld)", sc, sc);
    snprintf(pad, sizeof pad, "(%lld, %lld)", pd, pd);
    snprintf(nf, sizeof nf, "%lld", (long long)a->v[K_UP_NUM_FILTER].i);
    const char *kv[] = {"kernel", kernel,      "stride", stride,    "pad",  pad, "num_filter",
                        nf,       "num_group", nf,       "no_bias", "True", NULL};
    const hg_op_def *dop = hg_registry_find("Deconvolution");
    hg_kernel_fn fn = dop ? hg_gpu_kernel_of(dop) : NULL;
    if (!fn)
        return hg_error(HG_ERR_UNSUPPORTED,
                        "%s: sample_type='bilinear' has no GPU kernel while Deconvolution has "
                        "none",
                        op->name);
    hg_attrs da;
    hg_attrs_set_defaults(dop, &da);
    for (int i = 0; kv[i]; i += 2) {
        const int idx = hg_attr_index(dop, kv[i]);
        if (idx < 0)
            return hg_error(HG_ERR_INTERNAL, "%s: Deconvolution has no %s", op->name, kv[i]);
        HG_TRY(hg_attr_parse(dop, idx, kv[i + 1], &da));
    }
    HG_TRY(hg_attrs_finish(dop, &da));
    return fn(dop, &da, ctx, nin, in, nout, out);
}

GPU_FWD(up_gpu)
{
    if (a->v[K_UP_TYPE].i == UP_BILINEAR) return up_bilinear(op, a, ctx, nin, in, nout, out);
    STREAM;
    hg_tensor *y = out[0];
    const bool sum = a->v[K_UP_MODE].i == UP_SUM;
    int64_t coff = 0;
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        const int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3];
        const int64_t sc = y->shape[2] / H, total = x->shape[0] * C * H * sc * W * sc;
        if (total > 0) {
#define UP(T)                                                                                  \
    up_kernel<T> LAUNCH(total)((const T *)hg_data(x), (T *)hg_data(y), C, H, W, sc, y->shape[1], \
                               coff, sum && i > 0, total)
            if (!BY_FLOAT(y->dtype, UP)) return bad_dtype(op, y->dtype);
#undef UP
            HG_TRY(hg_cuda_launched(op->name));
        }
        if (!sum) coff += C;
    }
    return HG_OK;
}

/* dx[n, c, iy, ix] = the sum of dy's scale x scale block of it (rows, then columns). */
template <typename T>
__global__ void up_bw_kernel(const T *dy, T *dx, int64_t C, int64_t H, int64_t W, int64_t sc,
                             int64_t YC, int64_t coff, int64_t total)
{
    typedef typename acc<T>::A A;
    const int64_t OW = W * sc, OH = H * sc;
    GRID_LOOP(e, total)
    {
        const int64_t ix = e % W, iy = (e / W) % H, c = (e / (W * H)) % C, n = e / (W * H * C);
        const T *src = dy + ((n * YC + coff + c) * OH + iy * sc) * OW + ix * sc;
        A sum = 0;
        for (int64_t k = 0; k < sc; k++)
            for (int64_t m = 0; m < sc; m++) sum += acc<T>::ld(src[k * OW + m]);
        dx[e] = acc<T>::st(sum);
    }
}

/* _backward_UpSampling(ograd, data_0, ...) -> one gradient per data input. */
GPU_FWD(up_bw_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    const bool sum = a->v[K_UP_MODE].i == UP_SUM;
    int64_t coff = 0;
    for (int i = 0; i < nout; i++) {
        hg_tensor *dx = out[i];
        const int64_t C = dx->shape[1], H = dx->shape[2], W = dx->shape[3], total = dx->size;
        if (total > 0) {
            const int64_t sc = dy->shape[2] / H;
#define UPBW(T)                                                                                \
    up_bw_kernel<T> LAUNCH(total)((const T *)hg_data(dy), (T *)hg_data(dx), C, H, W, sc,       \
                                  dy->shape[1], coff, total)
            if (!BY_FLOAT(dx->dtype, UPBW)) return bad_dtype(op, dx->dtype);
#undef UPBW
            HG_TRY(hg_cuda_launched(op->name));
        }
        if (!sum) coff += C;
    }
    return HG_OK;
}

/* ---- _contrib_AdaptiveAvgPooling2D, _contrib_BilinearResize2D ---------------------------------
 * contrib_resize.c computes in double (hg_c_load / hg_c_store): the kernels load each element
 * as double, do the CPU's double arithmetic in its order (no FMA contraction), and store as
 * hg_c_store does (float16 through float). The index rules are float32, as on the CPU. The
 * backward ops are gathers: each data cell sums, in the CPU's order of output cells, what the
 * CPU's scatter adds into it, so the sums are the CPU's bit for bit. */

template <typename T> __device__ __forceinline__ double ld_d(T v) { return (double)v; }
template <> __device__ __forceinline__ double ld_d<uint16_t>(uint16_t v) { return h2f(v); }
template <typename T> __device__ __forceinline__ T st_d(double v) { return (T)v; }
template <> __device__ __forceinline__ uint16_t st_d<uint16_t>(double v) { return f2h((float)v); }

/* contrib_resize.c's start_ind / end_ind. */
__device__ __forceinline__ int64_t start_ind(int64_t a, int64_t b, int64_t c)
{
    return (int64_t)floorf(__fdiv_rn((float)(a * c), (float)b));
}
__device__ __forceinline__ int64_t end_ind(int64_t a, int64_t b, int64_t c)
{
    return (int64_t)ceilf(__fdiv_rn((float)((a + 1) * c), (float)b));
}

/* y (planes, oh, ow) = the mean of x (planes, h, w) over each output's cell. */
template <typename T>
__global__ void ap_kernel(const T *x, T *y, int64_t h, int64_t w, int64_t oh, int64_t ow,
                          int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t j = e % ow, i = (e / ow) % oh, p = e / (ow * oh);
        const int64_t h0 = start_ind(i, oh, h), h1 = end_ind(i, oh, h);
        const int64_t w0 = start_ind(j, ow, w), w1 = end_ind(j, ow, w);
        const T *xp = x + p * h * w;
        double sum = 0;
        for (int64_t r = h0; r < h1; r++)
            for (int64_t c = w0; c < w1; c++) sum += ld_d(xp[r * w + c]);
        y[e] = st_d<T>(sum / (double)((h1 - h0) * (w1 - w0)));
    }
}

/* dx (planes, h, w): the sum of dy / cell size over the outputs whose cells hold it. */
template <typename T>
__global__ void ap_bw_kernel(const T *dy, T *dx, int64_t h, int64_t w, int64_t oh, int64_t ow,
                             int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t c = e % w, r = (e / w) % h, p = e / (w * h);
        const T *g = dy + p * oh * ow;
        double sum = 0;
        for (int64_t i = 0; i < oh; i++) {
            const int64_t h0 = start_ind(i, oh, h), h1 = end_ind(i, oh, h);
            if (r < h0 || r >= h1) continue;
            for (int64_t j = 0; j < ow; j++) {
                const int64_t w0 = start_ind(j, ow, w), w1 = end_ind(j, ow, w);
                if (c < w0 || c >= w1) continue;
                sum += ld_d(g[i * ow + j]) / (double)((h1 - h0) * (w1 - w0));
            }
        }
        dx[e] = st_d<T>(sum);
    }
}

/* contrib_resize.c's tap: source cell, step to the next one (0/1) and its weight. */
struct tap {
    int64_t i0, step;
    double lam;
};

__device__ __forceinline__ tap src_tap(int64_t in, int64_t out, int64_t i, bool align, bool same)
{
    if (same) return tap{i, 0, 0.0};
    const float scale = out > 1 ? (align ? __fdiv_rn((float)(in - 1), (float)(out - 1))
                                         : __fdiv_rn((float)in, (float)out))
                                : 0.f;
    float r = align ? __fmul_rn(scale, (float)i)
                    : __fsub_rn(__fmul_rn(scale, __fadd_rn((float)i, 0.5f)), 0.5f);
    if (!align && r < 0) r = 0;
    const int64_t i0 = (int64_t)(int)r;
    return tap{i0, i0 < in - 1 ? 1 : 0, (double)__fsub_rn(r, (float)i0)};
}

/* The four weights a00, a01, a10, a11 of two taps, as the CPU rounds them. */
__device__ __forceinline__ void tap_weights(const tap &th, const tap &tw, double *wt)
{
    const double h1 = __dadd_rn(1.0, -th.lam), w1 = __dadd_rn(1.0, -tw.lam);
    wt[0] = __dmul_rn(h1, w1);
    wt[1] = __dmul_rn(h1, tw.lam);
    wt[2] = __dmul_rn(th.lam, w1);
    wt[3] = __dmul_rn(th.lam, tw.lam);
}

template <typename T>
__global__ void br_kernel(const T *x, T *y, int64_t h, int64_t w, int64_t oh, int64_t ow,
                          bool align, int64_t total)
{
    const bool same = h == oh && w == ow;
    GRID_LOOP(e, total)
    {
        const int64_t j = e % ow, i = (e / ow) % oh, p = e / (ow * oh);
        const tap th = src_tap(h, oh, i, align, same), tw = src_tap(w, ow, j, align, same);
        double wt[4];
        tap_weights(th, tw, wt);
        const T *xp = x + p * h * w;
        const int64_t o00 = th.i0 * w + tw.i0, o01 = o00 + tw.step, o10 = o00 + th.step * w,
                      o11 = o10 + tw.step;
        double v = __dadd_rn(__dmul_rn(wt[0], ld_d(xp[o00])), __dmul_rn(wt[1], ld_d(xp[o01])));
        v = __dadd_rn(v, __dmul_rn(wt[2], ld_d(xp[o10])));
        v = __dadd_rn(v, __dmul_rn(wt[3], ld_d(xp[o11])));
        y[e] = st_d<T>(v);
    }
}

/* dx (planes, h, w): what the CPU's scatter adds into each cell, in its order (outputs in
 * order, corners 00, 01, 10, 11 within one). */
template <typename T>
__global__ void br_bw_kernel(const T *dy, T *dx, int64_t h, int64_t w, int64_t oh, int64_t ow,
                             bool align, int64_t total)
{
    const bool same = h == oh && w == ow;
    GRID_LOOP(e, total)
    {
        const int64_t c = e % w, r = (e / w) % h, p = e / (w * h);
        const T *gp = dy + p * oh * ow;
        double sum = 0;
        for (int64_t i = 0; i < oh; i++) {
            const tap th = src_tap(h, oh, i, align, same);
            const bool r0 = th.i0 == r, r1 = th.i0 + th.step == r;
            if (!r0 && !r1) continue;
            for (int64_t j = 0; j < ow; j++) {
                const tap tw = src_tap(w, ow, j, align, same);
                const bool c0 = tw.i0 == c, c1 = tw.i0 + tw.step == c;
                if (!c0 && !c1) continue;
                double wt[4];
                tap_weights(th, tw, wt);
                const double g = ld_d(gp[i * ow + j]);
                if (r0 && c0) sum = __dadd_rn(sum, __dmul_rn(wt[0], g));
                if (r0 && c1) sum = __dadd_rn(sum, __dmul_rn(wt[1], g));
                if (r1 && c0) sum = __dadd_rn(sum, __dmul_rn(wt[2], g));
                if (r1 && c1) sum = __dadd_rn(sum, __dmul_rn(wt[3], g));
            }
        }
        dx[e] = st_d<T>(sum);
    }
}

/* Launches one of the four resize kernels K over (x -> y): big is the (h, w) side (the data
 * forward, the data-shaped gradient backward), as contrib_resize.c's run_planes. */
#define RESIZE_GPU(NAME, KERNEL, BW, ...)                                                      \
    GPU_FWD(NAME)                                                                              \
    {                                                                                          \
        STREAM;                                                                                \
        const hg_tensor *x = in[0];                                                            \
        hg_tensor *y = out[0];                                                                 \
        const hg_tensor *big = BW ? y : x, *small = BW ? x : y;                                \
        const int64_t h = big->shape[2], w = big->shape[3], oh = small->shape[2],              \
                      ow = small->shape[3], total = y->size;                                   \
        if (total == 0) return HG_OK;                                                          \
        if (!BY_FLOAT(y->dtype, KERNEL)) return bad_dtype(op, y->dtype);                       \
        return hg_cuda_launched(op->name);                                                     \
    }

#define AP_K(T)                                                                                \
    ap_kernel<T> LAUNCH(total)((const T *)hg_data(x), (T *)hg_data(y), h, w, oh, ow, total)
#define AP_BW_K(T)                                                                             \
    ap_bw_kernel<T> LAUNCH(total)((const T *)hg_data(x), (T *)hg_data(y), h, w, oh, ow, total)
#define BR_K(T)                                                                                \
    br_kernel<T> LAUNCH(total)((const T *)hg_data(x), (T *)hg_data(y), h, w, oh, ow,           \
                               a->v[BR_ALIGN].b, total)
#define BR_BW_K(T)                                                                             \
    br_bw_kernel<T> LAUNCH(total)((const T *)hg_data(x), (T *)hg_data(y), h, w, oh, ow,        \
                                  a->v[BR_ALIGN].b, total)
RESIZE_GPU(ap_gpu, AP_K, false)
RESIZE_GPU(ap_bw_gpu, AP_BW_K, true)
RESIZE_GPU(br_gpu, BR_K, false)
RESIZE_GPU(br_bw_gpu, BR_BW_K, true)

/* ---- LRN, Crop (ops/legacy_nn.c) -------------------------------------------------------------
 * LRN follows legacy_nn.c's expressions: the window sum of squares in the element type, then C's
 * double pow (the float kernel promotes to it as C does) and the products in the CPU's order and
 * types, without FMA contraction. Crop moves elements by size. */

/* legacy_nn.c's lrn_setup: MXNet's parameters are floats (alpha / nsize in float). */
struct lrn_par {
    int64_t c, hw, half;
    double salpha, beta, knorm;
};

lrn_par lrn_of(const hg_attrs *a, const hg_tensor *x)
{
    lrn_par p;
    p.c = x->shape[1];
    p.hw = x->shape[2] * x->shape[3];
    p.salpha = (float)((float)a->v[LRN_ALPHA].f / (float)a->v[LRN_NSIZE].i);
    p.beta = (float)a->v[LRN_BETA].f;
    p.knorm = (float)a->v[LRN_KNORM].f;
    p.half = a->v[LRN_NSIZE].i / 2;
    return p;
}

__device__ __forceinline__ float mul_rn(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ double mul_rn(double x, double y) { return __dmul_rn(x, y); }
__device__ __forceinline__ float add_rn(float x, float y) { return __fadd_rn(x, y); }
__device__ __forceinline__ double add_rn(double x, double y) { return __dadd_rn(x, y); }

/* The window [lo, hi] of channel k. */
__device__ __forceinline__ void lrn_window(const lrn_par &p, int64_t k, int64_t *lo, int64_t *hi)
{
    *lo = k - p.half < 0 ? 0 : k - p.half;
    *hi = k + p.half >= p.c ? p.c - 1 : k + p.half;
}

template <typename T>
__global__ void lrn_kernel(const T *x, T *y, T *norm, lrn_par p, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t i = e % p.hw, k = (e / p.hw) % p.c, n = e / (p.hw * p.c);
        int64_t lo, hi;
        lrn_window(p, k, &lo, &hi);
        T s = 0;
        for (int64_t c = lo; c <= hi; c++) {
            const T v = x[(n * p.c + c) * p.hw + i];
            s = add_rn(s, mul_rn(v, v));
        }
        s = (T)add_rn(mul_rn(s, (T)p.salpha), (T)p.knorm);
        norm[e] = s;
        y[e] = (T)__dmul_rn((double)x[e], pow((double)s, (double)(T)-p.beta));
    }
}

GPU_FWD(lrn_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const int64_t total = x->size;
    if (total == 0) return HG_OK;
    const lrn_par p = lrn_of(a, x);
#define LRN(T)                                                                                 \
    lrn_kernel<T> LAUNCH(total)((const T *)hg_data(x), (T *)hg_data(out[0]),                  \
                                (T *)hg_data(out[1]), p, total)
    switch (x->dtype) {
    case HG_DTYPE_F32: LRN(float); break;
    case HG_DTYPE_F64: LRN(double); break;
    default: return bad_dtype(op, x->dtype);
    }
#undef LRN
    return hg_cuda_launched(op->name);
}

/* t = dy * x * norm^(-beta - 1) */
template <typename T>
__global__ void lrn_bw_t_kernel(const T *dy, const T *x, const T *norm, T *t, double e1,
                                int64_t total)
{
    GRID_LOOP(e, total)
    t[e] = (T)__dmul_rn((double)mul_rn(dy[e], x[e]), pow((double)norm[e], (double)(T)e1));
}

/* dx = dy * norm^-beta + sc * (window sum of t) * x */
template <typename T>
__global__ void lrn_bw_kernel(const T *dy, const T *x, const T *norm, const T *t, T *dx, lrn_par p,
                              int64_t total)
{
    const T sc = (T)(-2.0 * p.beta * p.salpha);
    GRID_LOOP(e, total)
    {
        const int64_t i = e % p.hw, k = (e / p.hw) % p.c, n = e / (p.hw * p.c);
        int64_t lo, hi;
        lrn_window(p, k, &lo, &hi);
        T s = 0;
        for (int64_t c = lo; c <= hi; c++) s = add_rn(s, t[(n * p.c + c) * p.hw + i]);
        const double a1 = __dmul_rn((double)dy[e], pow((double)norm[e], (double)(T)-p.beta));
        dx[e] = (T)__dadd_rn(a1, (double)mul_rn(mul_rn(sc, s), x[e]));
    }
}

/* _backward_LRN(ograd, data, tmp_norm); t lives in the op's workspace. */
GPU_FWD(lrn_bw_gpu)
{
    STREAM;
    const hg_tensor *x = in[1];
    const int64_t total = x->size;
    if (total == 0) return HG_OK;
    if (!ctx->workspace) return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
    const lrn_par p = lrn_of(a, x);
#define LRNBW(T)                                                                               \
    do {                                                                                       \
        const T *dy = (const T *)hg_data(in[0]), *xx = (const T *)hg_data(x),                  \
                *nm = (const T *)hg_data(in[2]);                                               \
        T *t = (T *)ctx->workspace;                                                            \
        lrn_bw_t_kernel<T> LAUNCH(total)(dy, xx, nm, t, -p.beta - 1, total);                   \
        HG_TRY(hg_cuda_launched(op->name));                                                    \
        lrn_bw_kernel<T> LAUNCH(total)(dy, xx, nm, t, (T *)hg_data(out[0]), p, total);         \
    } while (0)
    switch (x->dtype) {
    case HG_DTYPE_F32: LRNBW(float); break;
    case HG_DTYPE_F64: LRNBW(double); break;
    default: return bad_dtype(op, x->dtype);
    }
#undef LRNBW
    return hg_cuda_launched(op->name);
}

/* The crop window's offset (legacy_nn.c's crop_geometry, already validated by infer) for data
 * big and the cropped small. */
void crop_offset(const hg_attrs *a, const hg_tensor *big, const hg_tensor *small, int64_t *off)
{
    for (int d = 0; d < 2; d++) {
        const int64_t room = big->shape[2 + d] - small->shape[2 + d];
        off[d] = a->v[CR_CENTER].b ? room / 2 : a->v[CR_OFFSET].t.v[d];
    }
}

/* small[p, r, c] <-> big[p, r + oy, c + ox] over small's elements. */
template <typename T>
__global__ void crop_kernel(T *big, T *small, int64_t bh, int64_t bw, int64_t h, int64_t w,
                            int64_t oy, int64_t ox, bool to_small, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t c = e % w, r = (e / w) % h, p = e / (w * h);
        T *b = big + (p * bh + r + oy) * bw + ox + c;
        if (to_small) small[e] = *b;
        else *b = small[e];
    }
}

hg_status crop_launch(const hg_op_def *op, cudaStream_t s, const hg_attrs *a, hg_tensor *big,
                      hg_tensor *small, bool to_small)
{
    const int64_t total = small->size;
    if (total == 0) return HG_OK;
    int64_t off[2];
    crop_offset(a, big, small, off);
#define CROP(T)                                                                                \
    crop_kernel<T> LAUNCH(total)((T *)hg_data(big), (T *)hg_data(small), big->shape[2],         \
                                 big->shape[3], small->shape[2], small->shape[3], off[0],       \
                                 off[1], to_small, total)
    switch (hg_dtype_size(big->dtype)) {
    case 1: CROP(uint8_t); break;
    case 2: CROP(uint16_t); break;
    case 4: CROP(uint32_t); break;
    case 8: CROP(uint64_t); break;
    default: return bad_dtype(op, big->dtype);
    }
#undef CROP
    return hg_cuda_launched(op->name);
}

GPU_FWD(crop_gpu)
{
    STREAM;
    return crop_launch(op, s, a, in[0], out[0], true);
}

/* _backward_Crop(ograd, data): zeros with ograd at the window. */
GPU_FWD(crop_bw_gpu)
{
    STREAM;
    hg_tensor *dx = out[0];
    const size_t nb = (size_t)dx->size * hg_dtype_size(dx->dtype);
    if (nb) HG_TRY(hg_cuda_status(cudaMemsetAsync(hg_data(dx), 0, nb, s), op->name));
    return crop_launch(op, s, a, dx, in[0], false);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_resample[] = {
    {"Pad", pad_gpu},
    {"_backward_Pad", pad_bw_gpu},
    {"UpSampling", up_gpu},
    {"_backward_UpSampling", up_bw_gpu},
    {"_contrib_AdaptiveAvgPooling2D", ap_gpu},
    {"_backward_contrib_AdaptiveAvgPooling2D", ap_bw_gpu},
    {"_contrib_BilinearResize2D", br_gpu},
    {"_backward_contrib_BilinearResize2D", br_bw_gpu},
    {"LRN", lrn_gpu},
    {"_backward_LRN", lrn_bw_gpu, 1}, /* its scratch t is the op's workspace */
    {"Crop", crop_gpu},
    {"_backward_Crop", crop_bw_gpu},
    {NULL, NULL},
};
