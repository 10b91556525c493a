/* cv::resize-compatible kernels for interleaved images (image_resize.h): nearest, bilinear,
 * bicubic, area and Lanczos. The coefficient tables follow OpenCV's: source position
 * (d + 0.5) * scale - 0.5 computed in float; uint8 weights are rounded to 1/2048 and blended
 * in integers. Checked value for value against MXNet 1.9.1's _image_resize (its bundled
 * OpenCV) and cv2 in tests/test_ops_image.py. Serial and reentrant: scratch is malloc'd per
 * call. */
#include "kernels/cpu/image_resize.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define COEF_BITS 11
#define COEF_SCALE (1 << COEF_BITS)

/* For each destination index: the left source index and its weight fx (right weight). */
/* The vertical table (rows) keeps its fraction at the borders, where both taps read the same
 * clamped row: OpenCV clamps only the horizontal one, and the rounding shows it. */
static void linear_table(int64_t dn, int64_t sn, int64_t *ofs, float *fx, bool area, bool rows)
{
    double inv = (double)dn / (double)sn, scale = 1.0 / inv;
    for (int64_t d = 0; d < dn; d++) {
        float f;
        int64_t s;
        if (area) { /* INTER_AREA when enlarging: a linear blend only near source edges */
            s = (int64_t)floor((double)d * scale);
            f = (float)((double)(d + 1) - (double)(s + 1) * inv);
            f = f <= 0 ? 0.f : f - floorf(f);
        } else {
            f = (float)(((double)d + 0.5) * scale - 0.5);
            s = (int64_t)floorf(f);
            f -= (float)s;
        }
        if (rows && !area) {
            ofs[d] = s;
            fx[d] = f;
            continue;
        }
        if (s < 0) f = 0.f, s = 0;
        if (s >= sn - 1) f = 0.f, s = sn - 1;
        ofs[d] = s;
        fx[d] = f;
    }
}

static short fixed_coef(float v) { return (short)lrintf(v * (float)COEF_SCALE); }

/* One horizontally resampled row into buf (dw * c values). */
#define HROW(T, WT, buf, row)                                                                   \
    do {                                                                                        \
        const T *r_ = (row);                                                                    \
        for (int64_t dx = 0; dx < dw; dx++) {                                                   \
            const T *p = r_ + xofs[dx] * c;                                                     \
            const T *q = xofs[dx] + 1 < sw ? p + c : p;                                         \
            for (int64_t k = 0; k < c; k++)                                                     \
                (buf)[dx * c + k] = (WT)p[k] * ax0[dx] + (WT)q[k] * ax1[dx];                    \
        }                                                                                       \
    } while (0)

static void linear_u8(const uint8_t *src, int64_t sw, int64_t c, uint8_t *dst, int64_t dh,
                      int64_t dw, const int64_t *xofs, const float *fx, const int64_t *yofs,
                      const float *fy, int64_t sh, int32_t *rows)
{
    int32_t *ax0 = rows + 2 * dw * c, *ax1 = ax0 + dw;
    for (int64_t dx = 0; dx < dw; dx++) {
        ax0[dx] = fixed_coef(1.f - fx[dx]);
        ax1[dx] = fixed_coef(fx[dx]);
    }
    int32_t *r0 = rows, *r1 = rows + dw * c;
    for (int64_t dy = 0; dy < dh; dy++) {
        int64_t sy = yofs[dy] < 0 ? 0 : yofs[dy] > sh - 1 ? sh - 1 : yofs[dy];
        int64_t sy1 = yofs[dy] + 1 < 0 ? 0 : yofs[dy] + 1 > sh - 1 ? sh - 1 : yofs[dy] + 1;
        HROW(uint8_t, int32_t, r0, src + sy * sw * c);
        HROW(uint8_t, int32_t, r1, src + sy1 * sw * c);
        int32_t b0 = fixed_coef(1.f - fy[dy]), b1 = fixed_coef(fy[dy]);
        uint8_t *out = dst + dy * dw * c;
        /* OpenCV's vectorised vertical pass: 16-bit high products of the rows shifted by 4,
         * then a rounding shift by 2 (22 bits in all, as the scalar pass, rounded differently). */
        for (int64_t i = 0; i < dw * c; i++) {
            int32_t v = ((b0 * (r0[i] >> 4)) >> 16) + ((b1 * (r1[i] >> 4)) >> 16);
            v = (v + 2) >> 2;
            out[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

#define LINEAR_FLOAT(NAME, T, WT)                                                               \
    static void NAME(const T *src, int64_t sw, int64_t c, T *dst, int64_t dh, int64_t dw,       \
                     const int64_t *xofs, const float *fx, const int64_t *yofs, const float *fy, \
                     int64_t sh, WT *rows)                                                      \
    {                                                                                           \
        float *ax0 = (float *)(rows + 2 * dw * c), *ax1 = ax0 + dw;                             \
        for (int64_t dx = 0; dx < dw; dx++) {                                                   \
            ax0[dx] = 1.f - fx[dx];                                                             \
            ax1[dx] = fx[dx];                                                                   \
        }                                                                                       \
        WT *r0 = rows, *r1 = rows + dw * c;                                                     \
        for (int64_t dy = 0; dy < dh; dy++) {                                                   \
            int64_t sy = yofs[dy] < 0 ? 0 : yofs[dy] > sh - 1 ? sh - 1 : yofs[dy];              \
            int64_t sy1 = yofs[dy] + 1 > sh - 1 ? sh - 1 : yofs[dy] + 1 < 0 ? 0 : yofs[dy] + 1; \
            HROW(T, WT, r0, src + sy * sw * c);                                                 \
            HROW(T, WT, r1, src + sy1 * sw * c);                                                \
            float b0 = 1.f - fy[dy], b1 = fy[dy];                                               \
            T *out = dst + dy * dw * c;                                                         \
            for (int64_t i = 0; i < dw * c; i++) out[i] = (T)(r0[i] * b0 + r1[i] * b1);         \
        }                                                                                       \
    }
LINEAR_FLOAT(linear_f32, float, float)
LINEAR_FLOAT(linear_f64, double, double)

static int resize_linear(hg_img_elem el, const void *src, int64_t sh, int64_t sw, int64_t c,
                         void *dst, int64_t dh, int64_t dw, bool area)
{
    size_t wsz = el == HG_IMG_F64 ? sizeof(double) : el == HG_IMG_F32 ? sizeof(float) : 4;
    /* Two resampled rows, then the two weight arrays (float or int32, 4 bytes each). */
    size_t rows_bytes = (size_t)(2 * dw * c) * wsz + (size_t)(2 * dw) * 4 + 16;
    int64_t *xofs = malloc(sizeof(int64_t) * (size_t)(dw + dh));
    float *fxy = malloc(sizeof(float) * (size_t)(dw + dh));
    void *rows = malloc(rows_bytes);
    int rc = -1;
    if (!xofs || !fxy || !rows) goto done;
    int64_t *yofs = xofs + dw;
    float *fx = fxy, *fy = fxy + dw;
    linear_table(dw, sw, xofs, fx, area, false);
    linear_table(dh, sh, yofs, fy, area, true);
    switch (el) {
    case HG_IMG_U8: linear_u8(src, sw, c, dst, dh, dw, xofs, fx, yofs, fy, sh, rows); break;
    case HG_IMG_F32: linear_f32(src, sw, c, dst, dh, dw, xofs, fx, yofs, fy, sh, rows); break;
    case HG_IMG_F64: linear_f64(src, sw, c, dst, dh, dw, xofs, fx, yofs, fy, sh, rows); break;
    }
    rc = 0;
done:
    free(xofs);
    free(fxy);
    free(rows);
    return rc;
}

/* OpenCV's INTER_NEAREST: source index floor(d * (sn / dn)), at most sn - 1. */
static int resize_nearest(size_t esz, const void *src, int64_t sh, int64_t sw, int64_t c, void *dst,
                          int64_t dh, int64_t dw)
{
    int64_t *xofs = malloc(sizeof(int64_t) * (size_t)dw);
    if (!xofs) return -1;
    double fx = 1.0 / ((double)dw / (double)sw), fy = 1.0 / ((double)dh / (double)sh);
    for (int64_t dx = 0; dx < dw; dx++) {
        int64_t s = (int64_t)floor((double)dx * fx);
        xofs[dx] = s < sw - 1 ? s : sw - 1;
    }
    size_t pix = esz * (size_t)c;
    const char *s8 = src;
    char *d8 = dst;
    for (int64_t dy = 0; dy < dh; dy++) {
        int64_t sy = (int64_t)floor((double)dy * fy);
        sy = sy < sh - 1 ? sy : sh - 1;
        const char *row = s8 + (size_t)(sy * sw) * pix;
        char *out = d8 + (size_t)(dy * dw) * pix;
        for (int64_t dx = 0; dx < dw; dx++)
            memcpy(out + (size_t)dx * pix, row + (size_t)xofs[dx] * pix, pix);
    }
    free(xofs);
    return 0;
}

/* ---- INTER_AREA when shrinking: each destination pixel averages the source pixels its cell
 * covers, partly covered ones weighted by the covered fraction (OpenCV's area tables). */
typedef struct {
    int64_t di, si;
    float alpha;
} area_tab;

/* Fills tab (at most 2 * sn + 2 entries) and returns the entry count. */
static int64_t area_table(int64_t sn, int64_t dn, double scale, area_tab *tab)
{
    int64_t k = 0;
    for (int64_t d = 0; d < dn; d++) {
        double f1 = (double)d * scale, f2 = f1 + scale;
        double cell = fmin(scale, (double)sn - f1);
        int64_t s1 = (int64_t)ceil(f1), s2 = (int64_t)floor(f2);
        s2 = s2 < sn - 1 ? s2 : sn - 1;
        s1 = s1 < s2 ? s1 : s2;
        if ((double)s1 - f1 > 1e-3)
            tab[k++] = (area_tab){d, s1 - 1, (float)(((double)s1 - f1) / cell)};
        for (int64_t s = s1; s < s2; s++) tab[k++] = (area_tab){d, s, (float)(1.0 / cell)};
        if (f2 - (double)s2 > 1e-3)
            tab[k++] = (area_tab){d, s2, (float)(fmin(fmin(f2 - (double)s2, 1.0), cell) / cell)};
    }
    return k;
}

static double load_el(hg_img_elem el, const void *p, int64_t i)
{
    switch (el) {
    case HG_IMG_U8: return ((const uint8_t *)p)[i];
    case HG_IMG_F32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

/* Stores an accumulated float (double for float64 images) as OpenCV's saturate_cast does:
 * uint8 rounds half to even and clamps. */
static void store_el(hg_img_elem el, void *p, int64_t i, double v)
{
    switch (el) {
    case HG_IMG_U8: {
        long r = lrint(v);
        ((uint8_t *)p)[i] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        break;
    }
    case HG_IMG_F32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

static int resize_area_shrink(hg_img_elem el, const void *src, int64_t sh, int64_t sw, int64_t c,
                              void *dst, int64_t dh, int64_t dw)
{
    area_tab *xt = malloc(sizeof(area_tab) * (size_t)(2 * sw + 2));
    area_tab *yt = malloc(sizeof(area_tab) * (size_t)(2 * sh + 2));
    double *buf = malloc(sizeof(double) * (size_t)(2 * dw * c));
    int rc = -1;
    if (!xt || !yt || !buf) goto done;
    int64_t nx = area_table(sw, dw, (double)sw / (double)dw, xt);
    int64_t ny = area_table(sh, dh, (double)sh / (double)dh, yt);
    double *row = buf, *sum = buf + dw * c;
    bool dbl = el == HG_IMG_F64;
    for (int64_t j = 0, dy = 0; dy < dh; dy++) {
        for (int64_t i = 0; i < dw * c; i++) sum[i] = 0;
        for (; j < ny && yt[j].di == dy; j++) {
            for (int64_t i = 0; i < dw * c; i++) row[i] = 0;
            int64_t base = yt[j].si * sw * c;
            for (int64_t k = 0; k < nx; k++)
                for (int64_t q = 0; q < c; q++) {
                    double v = load_el(el, src, base + xt[k].si * c + q) * xt[k].alpha;
                    row[xt[k].di * c + q] = dbl ? row[xt[k].di * c + q] + v
                                                : (float)(row[xt[k].di * c + q] + (float)v);
                }
            for (int64_t i = 0; i < dw * c; i++)
                sum[i] = dbl ? sum[i] + row[i] * yt[j].alpha
                             : (float)(sum[i] + (float)(row[i] * yt[j].alpha));
        }
        for (int64_t i = 0; i < dw * c; i++) store_el(el, dst, dy * dw * c + i, sum[i]);
    }
    rc = 0;
done:
    free(xt);
    free(yt);
    free(buf);
    return rc;
}

/* Shrinking by whole factors kx, ky: block means. uint8 2x2 blocks round half up, as OpenCV's
 * vectorised path does; other factors go through float and round half to even. */
static void resize_area_fast(hg_img_elem el, const void *src, int64_t sw, int64_t c, void *dst,
                             int64_t dh, int64_t dw, int64_t kx, int64_t ky)
{
    float scale = 1.f / (float)(kx * ky);
    for (int64_t dy = 0; dy < dh; dy++)
        for (int64_t dx = 0; dx < dw; dx++)
            for (int64_t q = 0; q < c; q++) {
                double s = 0;
                for (int64_t y = 0; y < ky; y++)
                    for (int64_t x = 0; x < kx; x++)
                        s += load_el(el, src, ((dy * ky + y) * sw + dx * kx + x) * c + q);
                int64_t i = (dy * dw + dx) * c + q;
                if (el == HG_IMG_U8 && kx == 2 && ky == 2)
                    ((uint8_t *)dst)[i] = (uint8_t)(((int64_t)s + 2) >> 2);
                else if (el == HG_IMG_F64) store_el(el, dst, i, s * (double)scale);
                else store_el(el, dst, i, (double)((float)s * scale));
            }
}

/* ---- INTER_CUBIC and INTER_LANCZOS4: separable kernels of 4 and 8 taps, borders replicated --- */
/* Keys' cubic with A = -0.75. */
static void cubic_coefs(float x, float *c)
{
    const float A = -0.75f;
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = 1.f - c[0] - c[1] - c[2];
}

/* Lanczos with a = 4, normalised to sum 1; the sines come from one sin/cos pair rotated by
 * multiples of 45 degrees, as OpenCV computes them. */
static void lanczos4_coefs(float x, float *c)
{
    static const double s45 = 0.70710678118654752440;
    static const double cs[8][2] = {{1, 0},  {-s45, -s45}, {0, 1},  {s45, -s45},
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

/* For each destination index: the n clamped source indices and their weights. */
static void taps_table(int64_t dn, int64_t sn, int n, int64_t *ofs, float *w)
{
    double scale = (double)sn / (double)dn;
    for (int64_t d = 0; d < dn; d++) {
        float f = (float)(((double)d + 0.5) * scale - 0.5);
        int64_t s = (int64_t)floorf(f);
        f -= (float)s;
        if (n == 4) cubic_coefs(f, w + n * d);
        else lanczos4_coefs(f, w + n * d);
        for (int k = 0; k < n; k++) {
            int64_t j = s + k - (n / 2 - 1);
            ofs[n * d + k] = j < 0 ? 0 : j >= sn ? sn - 1 : j;
        }
    }
}

/* Horizontal pass into n rows, then the vertical blend. uint8 weights are rounded to 1/2048 and
 * the rows summed exactly in integers; the vertical sum is OpenCV's: for bicubic, float products
 * with the weights over 2^22 rounded half to even on whole blocks of 8 values (its vector
 * loop) and exact integers rounded once on the rest of the row; for Lanczos always the latter.
 * That is what MXNet's bundled OpenCV gives, value for value. float32 sums in float, float64
 * in double. */
static int resize_taps(hg_img_elem el, int n, const void *src, int64_t sh, int64_t sw, int64_t c,
                       void *dst, int64_t dh, int64_t dw)
{
    int64_t *xo = malloc(sizeof(int64_t) * (size_t)(n * (dw + dh)));
    float *xw = malloc(sizeof(float) * (size_t)(n * (dw + dh)));
    double *rows = malloc(sizeof(double) * (size_t)(n * dw * c));
    int rc = -1;
    if (!xo || !xw || !rows) goto done;
    int64_t *yo = xo + n * dw;
    float *yw = xw + n * dw;
    taps_table(dw, sw, n, xo, xw);
    taps_table(dh, sh, n, yo, yw);
    bool u8 = el == HG_IMG_U8, dbl = el == HG_IMG_F64;
    for (int64_t i = 0; u8 && i < n * (dw + dh); i++) xw[i] = (float)fixed_coef(xw[i]);
    for (int64_t dy = 0; dy < dh; dy++) {
        for (int r = 0; r < n; r++) {
            int64_t base = yo[n * dy + r] * sw * c;
            double *row = rows + r * dw * c;
            for (int64_t dx = 0; dx < dw; dx++)
                for (int64_t q = 0; q < c; q++) {
                    double acc = 0;
                    float facc = 0.f;
                    for (int k = 0; k < n; k++) {
                        double v = load_el(el, src, base + xo[n * dx + k] * c + q);
                        if (dbl || u8) acc += v * xw[n * dx + k];
                        else facc += (float)v * xw[n * dx + k];
                    }
                    row[dx * c + q] = dbl || u8 ? acc : facc;
                }
        }
        const float *b = yw + n * dy;
        int64_t simd_end = (dw * c / 8) * 8;
        for (int64_t i = 0; i < dw * c; i++) {
            int64_t o = dy * dw * c + i;
            if (u8 && n == 4 && i < simd_end) {
                float v = 0.f, sc = 1.f / (float)(COEF_SCALE * COEF_SCALE);
                for (int k = 0; k < n; k++) v += (float)rows[k * dw * c + i] * (b[k] * sc);
                store_el(el, dst, o, v);
            } else if (u8) {
                int64_t v = 0;
                for (int k = 0; k < n; k++) v += (int64_t)rows[k * dw * c + i] * (int64_t)b[k];
                v = (v + (1 << 21)) >> 22;
                ((uint8_t *)dst)[o] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            } else if (dbl) {
                double v = 0;
                for (int k = 0; k < n; k++) v += rows[k * dw * c + i] * b[k];
                store_el(el, dst, o, v);
            } else {
                float v = 0.f;
                for (int k = 0; k < n; k++) v += (float)rows[k * dw * c + i] * b[k];
                store_el(el, dst, o, v);
            }
        }
    }
    rc = 0;
done:
    free(xo);
    free(xw);
    free(rows);
    return rc;
}

int hg_image_resize_hwc(hg_img_elem el, hg_img_interp interp, const void *src, int64_t sh,
                        int64_t sw, int64_t c, void *dst, int64_t dh, int64_t dw)
{
    if (interp == HG_IMG_NEAREST) {
        size_t esz = el == HG_IMG_F64 ? 8 : el == HG_IMG_F32 ? 4 : 1;
        return resize_nearest(esz, src, sh, sw, c, dst, dh, dw);
    }
    if (interp == HG_IMG_CUBIC) return resize_taps(el, 4, src, sh, sw, c, dst, dh, dw);
    if (interp == HG_IMG_LANCZOS4) return resize_taps(el, 8, src, sh, sw, c, dst, dh, dw);
    double sx = (double)sw / (double)dw, sy = (double)sh / (double)dh;
    int64_t kx = (int64_t)lrint(sx), ky = (int64_t)lrint(sy);
    bool whole = fabs(sx - (double)kx) < 2.2e-16 && fabs(sy - (double)ky) < 2.2e-16;
    /* OpenCV turns an exact 2x bilinear shrink into an area shrink */
    if (interp == HG_IMG_LINEAR && whole && kx == 2 && ky == 2) interp = HG_IMG_AREA;
    if (interp == HG_IMG_AREA && sx >= 1 && sy >= 1) {
        if (whole) {
            resize_area_fast(el, src, sw, c, dst, dh, dw, kx, ky);
            return 0;
        }
        return resize_area_shrink(el, src, sh, sw, c, dst, dh, dw);
    }
    return resize_linear(el, src, sh, sw, c, dst, dh, dw, interp == HG_IMG_AREA);
}
