/* cv::resize-compatible nearest and bilinear kernels for interleaved images (image_resize.h).
 * The coefficient tables follow OpenCV's: source position (d + 0.5) * scale - 0.5 computed in
 * float, clamped to the first and last sample; uint8 weights are those rounded to 1/2048. */
#include "kernels/cpu/image_resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define COEF_BITS 11
#define COEF_SCALE (1 << COEF_BITS)

/* For each destination index: the left source index and its weight fx (right weight). */
static void linear_table(int64_t dn, int64_t sn, int64_t *ofs, float *fx)
{
    double scale = (double)sn / (double)dn;
    for (int64_t d = 0; d < dn; d++) {
        float f = (float)(((double)d + 0.5) * scale - 0.5);
        int64_t s = (int64_t)floorf(f);
        f -= (float)s;
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
        int64_t sy = yofs[dy], sy1 = sy + 1 < sh ? sy + 1 : sy;
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
            int64_t sy = yofs[dy], sy1 = sy + 1 < sh ? sy + 1 : sy;                             \
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
                         void *dst, int64_t dh, int64_t dw)
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
    linear_table(dw, sw, xofs, fx);
    linear_table(dh, sh, yofs, fy);
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

int hg_image_resize_hwc(hg_img_elem el, hg_img_interp interp, const void *src, int64_t sh,
                        int64_t sw, int64_t c, void *dst, int64_t dh, int64_t dw)
{
    if (interp == HG_IMG_NEAREST) {
        size_t esz = el == HG_IMG_F64 ? 8 : el == HG_IMG_F32 ? 4 : 1;
        return resize_nearest(esz, src, sh, sw, c, dst, dh, dw);
    }
    return resize_linear(el, src, sh, sw, c, dst, dh, dw);
}
