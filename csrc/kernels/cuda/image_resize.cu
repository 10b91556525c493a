/* hg_gpu_kernels_image_resize: the GPU kernel of _image_resize (ops/image_geom.c), OpenCV's
 * cv::resize arithmetic as kernels/cpu/image_resize.c computes it, for uint8, float32 and
 * float64 (H, W, C) images and (N, H, W, C) batches.
 *
 * One thread per output element. It computes the coefficients of its column and row itself,
 * with the CPU's table formulas (float positions, 11-bit fixed-point weights for uint8), then
 * blends its taps in the CPU's order and types: uint8 sums are integers or the same float
 * expressions, float32 blends in float, float64 in double. The file is compiled with
 * -fmad=false (setup.py) so no product and sum fuse into an FMA, which keeps every rounding the
 * CPU's. The one difference that can remain: Lanczos weights come from double sin and cos,
 * which CUDA's library may round a unit in the last place away from the host's; the float
 * weights almost never notice. The method choice (a 2x bilinear shrink is an area shrink,
 * whole-factor area shrinks are block means) is the CPU's, made on the host. */
#include <math.h>
#include <stdint.h>

#include "kernels/cuda/kernel_util.h"

namespace
{

#define COEF_SCALE 2048

enum { E_U8, E_F32, E_F64 };
enum { I_NEAREST = 0, I_LINEAR = 1, I_CUBIC = 2, I_AREA = 3, I_LANCZOS4 = 4 };

/* Output element e of (n, dh, dw, c): its pixel and channel, and its image's offset in src. */
struct rz_geom {
    int64_t sh, sw, c, dh, dw;
};

struct rz_pos {
    int64_t q, dx, dy, src0;
};

__device__ __forceinline__ rz_pos pos_of(const rz_geom &g, int64_t e)
{
    rz_pos p;
    p.q = e % g.c;
    p.dx = (e / g.c) % g.dw;
    p.dy = (e / (g.c * g.dw)) % g.dh;
    p.src0 = (e / (g.c * g.dw * g.dh)) * g.sh * g.sw * g.c;
    return p;
}

__device__ __forceinline__ int32_t fixed_coef(float v)
{
    return (int32_t)(short)lrintf(v * (float)COEF_SCALE);
}

template <typename T> __device__ __forceinline__ double ld(const T *p, int64_t i)
{
    return (double)p[i];
}

/* image_resize.c's store_el: uint8 rounds half to even and clamps. */
__device__ __forceinline__ void st(uint8_t *p, int64_t i, double v)
{
    long r = lrint(v);
    p[i] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}
__device__ __forceinline__ void st(float *p, int64_t i, double v) { p[i] = (float)v; }
__device__ __forceinline__ void st(double *p, int64_t i, double v) { p[i] = v; }

/* ---- nearest -------------------------------------------------------------------------------- */

template <typename T> __global__ void nearest_kernel(const T *src, T *dst, rz_geom g, int64_t total)
{
    const double fx = 1.0 / ((double)g.dw / (double)g.sw), fy = 1.0 / ((double)g.dh / (double)g.sh);
    GRID_LOOP(e, total)
    {
        const rz_pos p = pos_of(g, e);
        int64_t sx = (int64_t)floor((double)p.dx * fx), sy = (int64_t)floor((double)p.dy * fy);
        sx = sx < g.sw - 1 ? sx : g.sw - 1;
        sy = sy < g.sh - 1 ? sy : g.sh - 1;
        dst[e] = src[p.src0 + (sy * g.sw + sx) * g.c + p.q];
    }
}

/* ---- bilinear, and area when enlarging -------------------------------------------------------
 * image_resize.c's linear_table entry of destination index d: left source index and weight. */
__device__ void linear_entry(int64_t d, int64_t dn, int64_t sn, bool area, bool rows, int64_t *ofs,
                             float *fx)
{
    double inv = (double)dn / (double)sn, scale = 1.0 / inv;
    float f;
    int64_t s;
    if (area) {
        s = (int64_t)floor((double)d * scale);
        f = (float)((double)(d + 1) - (double)(s + 1) * inv);
        f = f <= 0 ? 0.f : f - floorf(f);
    } else {
        f = (float)(((double)d + 0.5) * scale - 0.5);
        s = (int64_t)floorf(f);
        f -= (float)s;
    }
    if (!(rows && !area)) {
        if (s < 0) f = 0.f, s = 0;
        if (s >= sn - 1) f = 0.f, s = sn - 1;
    }
    *ofs = s;
    *fx = f;
}

__device__ __forceinline__ int64_t clamp_row(int64_t y, int64_t sh)
{
    return y < 0 ? 0 : y > sh - 1 ? sh - 1 : y;
}

__global__ void linear_u8_kernel(const uint8_t *src, uint8_t *dst, rz_geom g, bool area,
                                 int64_t total)
{
    GRID_LOOP(e, total)
    {
        const rz_pos p = pos_of(g, e);
        int64_t xo, yo;
        float fx, fy;
        linear_entry(p.dx, g.dw, g.sw, area, false, &xo, &fx);
        linear_entry(p.dy, g.dh, g.sh, area, true, &yo, &fy);
        const int32_t ax0 = fixed_coef(1.f - fx), ax1 = fixed_coef(fx);
        const int64_t rows[2] = {clamp_row(yo, g.sh), clamp_row(yo + 1, g.sh)};
        int32_t r[2];
        for (int k = 0; k < 2; k++) {
            const uint8_t *a = src + p.src0 + (rows[k] * g.sw + xo) * g.c + p.q;
            const uint8_t *b = xo + 1 < g.sw ? a + g.c : a;
            r[k] = (int32_t)*a * ax0 + (int32_t)*b * ax1;
        }
        const int32_t b0 = fixed_coef(1.f - fy), b1 = fixed_coef(fy);
        /* OpenCV's vectorised vertical pass (image_resize.c's linear_u8) */
        int32_t v = ((b0 * (r[0] >> 4)) >> 16) + ((b1 * (r[1] >> 4)) >> 16);
        v = (v + 2) >> 2;
        dst[e] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

template <typename T>
__global__ void linear_float_kernel(const T *src, T *dst, rz_geom g, bool area, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const rz_pos p = pos_of(g, e);
        int64_t xo, yo;
        float fx, fy;
        linear_entry(p.dx, g.dw, g.sw, area, false, &xo, &fx);
        linear_entry(p.dy, g.dh, g.sh, area, true, &yo, &fy);
        const float ax0 = 1.f - fx, ax1 = fx;
        const int64_t rows[2] = {clamp_row(yo, g.sh), clamp_row(yo + 1, g.sh)};
        T r[2];
        for (int k = 0; k < 2; k++) {
            const T *a = src + p.src0 + (rows[k] * g.sw + xo) * g.c + p.q;
            const T *b = xo + 1 < g.sw ? a + g.c : a;
            r[k] = (T)*a * ax0 + (T)*b * ax1;
        }
        const float b0 = 1.f - fy, b1 = fy;
        dst[e] = (T)(r[0] * b0 + r[1] * b1);
    }
}

/* ---- area when shrinking ----------------------------------------------------------------------
 * The entries of image_resize.c's area_table for destination index d: source indices
 * [first, last], weighted a_left below s1, a_mid below s2 and a_right at s2. */
struct area_span {
    int64_t first, last, s1, s2;
    float a_left, a_mid, a_right;
};

__device__ area_span area_of(int64_t d, int64_t sn, double scale)
{
    const double f1 = (double)d * scale, f2 = f1 + scale;
    const double cell = fmin(scale, (double)sn - f1);
    int64_t s1 = (int64_t)ceil(f1), s2 = (int64_t)floor(f2);
    s2 = s2 < sn - 1 ? s2 : sn - 1;
    s1 = s1 < s2 ? s1 : s2;
    area_span a;
    a.s1 = s1;
    a.s2 = s2;
    a.first = (double)s1 - f1 > 1e-3 ? s1 - 1 : s1;
    a.last = f2 - (double)s2 > 1e-3 ? s2 : s2 - 1;
    a.a_left = (float)(((double)s1 - f1) / cell);
    a.a_mid = (float)(1.0 / cell);
    a.a_right = (float)(fmin(fmin(f2 - (double)s2, 1.0), cell) / cell);
    return a;
}

__device__ __forceinline__ float area_weight(const area_span &a, int64_t s)
{
    return s < a.s1 ? a.a_left : s < a.s2 ? a.a_mid : a.a_right;
}

/* Each output sums its rows' horizontally weighted sums, in the CPU's entry order: in double
 * for float64, rounding to float after each step otherwise (image_resize.c's area_shrink). */
template <typename T>
__global__ void area_shrink_kernel(const T *src, T *dst, rz_geom g, bool dbl, int64_t total)
{
    const double scale_x = (double)g.sw / (double)g.dw, scale_y = (double)g.sh / (double)g.dh;
    GRID_LOOP(e, total)
    {
        const rz_pos p = pos_of(g, e);
        const area_span ax = area_of(p.dx, g.sw, scale_x), ay = area_of(p.dy, g.sh, scale_y);
        double sum = 0;
        for (int64_t sy = ay.first; sy <= ay.last; sy++) {
            const float wy = area_weight(ay, sy);
            const int64_t base = p.src0 + sy * g.sw * g.c + p.q;
            double row = 0;
            for (int64_t sx = ax.first; sx <= ax.last; sx++) {
                const double v = ld(src, base + sx * g.c) * area_weight(ax, sx);
                row = dbl ? row + v : (float)(row + (float)v);
            }
            sum = dbl ? sum + row * wy : (float)(sum + (float)(row * wy));
        }
        st(dst, e, sum);
    }
}

/* Whole factors kx, ky: block means (image_resize.c's area_fast). */
template <typename T>
__global__ void area_fast_kernel(const T *src, T *dst, rz_geom g, int64_t kx, int64_t ky, int el,
                                 int64_t total)
{
    const float scale = 1.f / (float)(kx * ky);
    GRID_LOOP(e, total)
    {
        const rz_pos p = pos_of(g, e);
        double s = 0;
        for (int64_t y = 0; y < ky; y++)
            for (int64_t x = 0; x < kx; x++)
                s += ld(src, p.src0 + ((p.dy * ky + y) * g.sw + p.dx * kx + x) * g.c + p.q);
        if (el == E_U8 && kx == 2 && ky == 2) st(dst, e, (double)(((int64_t)s + 2) >> 2));
        else if (el == E_F64) st(dst, e, s * (double)scale);
        else st(dst, e, (double)((float)s * scale));
    }
}

/* ---- bicubic and Lanczos ---------------------------------------------------------------------- */

/* Keys' cubic with A = -0.75 (image_resize.c's cubic_coefs). */
__device__ void cubic_coefs(float x, float *c)
{
    const float A = -0.75f;
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = 1.f - c[0] - c[1] - c[2];
}

/* Lanczos with a = 4 (image_resize.c's lanczos4_coefs). */
__device__ void lanczos4_coefs(float x, float *c)
{
    const double s45 = 0.70710678118654752440;
    const double cs[8][2] = {{1, 0},  {-s45, -s45}, {0, 1},  {s45, -s45},
                             {-1, 0}, {s45, s45},   {0, -1}, {-s45, s45}};
    if (x < 1.1920929e-07f) {
        for (int i = 0; i < 8; i++) c[i] = 0.f;
        c[3] = 1.f;
        return;
    }
    const double pi = 3.14159265358979323846;
    double y0 = -(x + 3) * pi * 0.25, s0 = sin(y0), c0 = cos(y0);
    float sum = 0.f;
    for (int i = 0; i < 8; i++) {
        double y = -(x + 3 - i) * pi * 0.25;
        c[i] = (float)((cs[i][0] * s0 + cs[i][1] * c0) / (y * y));
        sum += c[i];
    }
    sum = 1.f / sum;
    for (int i = 0; i < 8; i++) c[i] *= sum;
}

/* image_resize.c's taps_table entry of destination index d: N clamped source indices and
 * weights (rounded to 1/2048 for uint8). */
template <int N>
__device__ void taps_entry(int64_t d, int64_t dn, int64_t sn, bool u8, int64_t *ofs, float *w)
{
    double scale = (double)sn / (double)dn;
    float f = (float)(((double)d + 0.5) * scale - 0.5);
    int64_t s = (int64_t)floorf(f);
    f -= (float)s;
    if (N == 4) cubic_coefs(f, w);
    else lanczos4_coefs(f, w);
    for (int k = 0; k < N; k++) {
        int64_t j = s + k - (N / 2 - 1);
        ofs[k] = j < 0 ? 0 : j >= sn ? sn - 1 : j;
        if (u8) w[k] = (float)fixed_coef(w[k]);
    }
}

/* image_resize.c's resize_taps for one output: N horizontally blended rows, then the vertical
 * blend (uint8: OpenCV's float path on whole blocks of 8 values of a row for bicubic, exact
 * integers elsewhere). */
template <typename T, int N>
__global__ void taps_kernel(const T *src, T *dst, rz_geom g, int el, int64_t total)
{
    const bool u8 = el == E_U8, dbl = el == E_F64;
    const int64_t simd_end = (g.dw * g.c / 8) * 8;
    GRID_LOOP(e, total)
    {
        const rz_pos p = pos_of(g, e);
        int64_t xo[N], yo[N];
        float xw[N], yw[N];
        taps_entry<N>(p.dx, g.dw, g.sw, u8, xo, xw);
        taps_entry<N>(p.dy, g.dh, g.sh, u8, yo, yw);
        double rows[N];
        for (int r = 0; r < N; r++) {
            const int64_t base = p.src0 + yo[r] * g.sw * g.c + p.q;
            double acc = 0;
            float facc = 0.f;
            for (int k = 0; k < N; k++) {
                const double v = ld(src, base + xo[k] * g.c);
                if (dbl || u8) acc += v * xw[k];
                else facc += (float)v * xw[k];
            }
            rows[r] = dbl || u8 ? acc : facc;
        }
        const int64_t i = p.dx * g.c + p.q;
        if (u8 && N == 4 && i < simd_end) {
            float v = 0.f, sc = 1.f / (float)(COEF_SCALE * COEF_SCALE);
            for (int k = 0; k < N; k++) v += (float)rows[k] * (yw[k] * sc);
            st(dst, e, v);
        } else if (u8) {
            int64_t v = 0;
            for (int k = 0; k < N; k++) v += (int64_t)rows[k] * (int64_t)yw[k];
            v = (v + (1 << 21)) >> 22;
            dst[e] = (T)(v < 0 ? 0 : v > 255 ? 255 : v);
        } else if (dbl) {
            double v = 0;
            for (int k = 0; k < N; k++) v += rows[k] * yw[k];
            st(dst, e, v);
        } else {
            float v = 0.f;
            for (int k = 0; k < N; k++) v += (float)rows[k] * yw[k];
            st(dst, e, v);
        }
    }
}

/* ---- the op ---------------------------------------------------------------------------------- */

template <typename T>
hg_status resize_launch(cudaStream_t s, const T *src, T *dst, const rz_geom &g, int el, int interp,
                        int64_t total)
{
    if (interp == I_NEAREST) {
        nearest_kernel<T> LAUNCH(total)(src, dst, g, total);
        return HG_OK;
    }
    if (interp == I_CUBIC) {
        taps_kernel<T, 4> LAUNCH(total)(src, dst, g, el, total);
        return HG_OK;
    }
    if (interp == I_LANCZOS4) {
        taps_kernel<T, 8> LAUNCH(total)(src, dst, g, el, total);
        return HG_OK;
    }
    /* hg_image_resize_hwc's choice between the linear and area paths */
    const double sx = (double)g.sw / (double)g.dw, sy = (double)g.sh / (double)g.dh;
    const int64_t kx = (int64_t)lrint(sx), ky = (int64_t)lrint(sy);
    const bool whole = fabs(sx - (double)kx) < 2.2e-16 && fabs(sy - (double)ky) < 2.2e-16;
    if (interp == I_LINEAR && whole && kx == 2 && ky == 2) interp = I_AREA;
    if (interp == I_AREA && sx >= 1 && sy >= 1) {
        if (whole) area_fast_kernel<T> LAUNCH(total)(src, dst, g, kx, ky, el, total);
        else area_shrink_kernel<T> LAUNCH(total)(src, dst, g, el == E_F64, total);
        return HG_OK;
    }
    const bool area = interp == I_AREA;
    if constexpr (sizeof(T) == 1)
        linear_u8_kernel LAUNCH(total)((const uint8_t *)src, (uint8_t *)dst, g, area, total);
    else linear_float_kernel<T> LAUNCH(total)(src, dst, g, area, total);
    return HG_OK;
}

GPU_FWD(resize_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    const int nd = x->ndim;
    const rz_geom g = {x->shape[nd - 3], x->shape[nd - 2], x->shape[nd - 1], y->shape[nd - 3],
                       y->shape[nd - 2]};
    const int interp = (int)a->v[2].i; /* the schema's interp (checked by infer) */
    const int64_t total = y->size;
    if (total == 0) return HG_OK;
    switch (x->dtype) {
    case HG_DTYPE_U8:
        HG_TRY(resize_launch(s, (const uint8_t *)hg_data(x), (uint8_t *)hg_data(y), g, E_U8, interp,
                             total));
        break;
    case HG_DTYPE_F32:
        HG_TRY(resize_launch(s, (const float *)hg_data(x), (float *)hg_data(y), g, E_F32, interp,
                             total));
        break;
    case HG_DTYPE_F64:
        HG_TRY(resize_launch(s, (const double *)hg_data(x), (double *)hg_data(y), g, E_F64, interp,
                             total));
        break;
    default: return bad_dtype(op, x->dtype);
    }
    return hg_cuda_launched(op->name);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_image_resize[] = {
    {"_image_resize", resize_gpu},
    {NULL, NULL},
};
