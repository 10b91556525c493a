/* The per-image step of the image-record pipeline (hybridgluon/image.h): one pass over a crop
 * window that reorders channels, mirrors, normalises and writes planar CHW into a batch slot.
 * Doing it in one pass in C is what lets the Python iterator keep its threads off the GIL. */
#include "hybridgluon/image.h"

#include <math.h>

#include "core/error.h"

/* One output plane: row r of channel k reads source channel `sc`, columns walked backwards
 * when mirrored (the source pointer steps by -c instead of +c). */
static void plane_f32(const uint8_t *src, int64_t c, int64_t stride, int64_t h, int64_t w,
                      int mirror, int64_t sc, float mean, float mul, float bias,
                      const float *mean_img, float *out)
{
    for (int64_t y = 0; y < h; ++y) {
        const uint8_t *row = src + y * stride + sc + (mirror ? (w - 1) * c : 0);
        int64_t step = mirror ? -c : c;
        float *o = out + y * w;
        if (mean_img) {
            const float *m = mean_img + y * w;
            for (int64_t x = 0; x < w; ++x) o[x] = ((float)row[x * step] - m[x]) * mul + bias;
        } else {
            for (int64_t x = 0; x < w; ++x) o[x] = ((float)row[x * step] - mean) * mul + bias;
        }
    }
}

static void plane_u8(const uint8_t *src, int64_t c, int64_t stride, int64_t h, int64_t w,
                     int mirror, int64_t sc, uint8_t *out)
{
    for (int64_t y = 0; y < h; ++y) {
        const uint8_t *row = src + y * stride + sc + (mirror ? (w - 1) * c : 0);
        int64_t step = mirror ? -c : c;
        uint8_t *o = out + y * w;
        for (int64_t x = 0; x < w; ++x) o[x] = row[x * step];
    }
}

/* int8 is MXNet's quantised input: the mean is subtracted, std and scale are not applied, and
 * the difference is rounded to nearest and saturated (OpenCV's saturate_cast). */
static int8_t sat_i8(float v)
{
    long r = lrintf(v);
    return (int8_t)(r > 127 ? 127 : r < -128 ? -128 : r);
}

static void plane_i8(const uint8_t *src, int64_t c, int64_t stride, int64_t h, int64_t w,
                     int mirror, int64_t sc, float mean, const float *mean_img, int8_t *out)
{
    for (int64_t y = 0; y < h; ++y) {
        const uint8_t *row = src + y * stride + sc + (mirror ? (w - 1) * c : 0);
        int64_t step = mirror ? -c : c;
        int8_t *o = out + y * w;
        const float *m = mean_img ? mean_img + y * w : NULL;
        for (int64_t x = 0; x < w; ++x) o[x] = sat_i8((float)row[x * step] - (m ? m[x] : mean));
    }
}

hg_status hg_image_to_chw(const uint8_t *src, int64_t src_h, int64_t src_w, int64_t c,
                          int64_t src_stride, int64_t y0, int64_t x0, int64_t h, int64_t w,
                          int mirror, int reverse_channels, const hg_image_norm *norm,
                          hg_dtype out_dtype, void *out, size_t out_bytes)
{
    if (!src || !out) return hg_error(HG_ERR_VALUE, "image_to_chw: NULL image or output");
    if (c < 1 || c > 4) {
        return hg_error(HG_ERR_VALUE, "image_to_chw: images have 1 to 4 channels, got %lld",
                        (long long)c);
    }
    if (h <= 0 || w <= 0 || y0 < 0 || x0 < 0 || y0 > src_h - h || x0 > src_w - w ||
        src_stride < src_w * c) {
        return hg_error(HG_ERR_VALUE,
                        "image_to_chw: crop window (y %lld, x %lld, %lld x %lld) does not fit "
                        "in the %lld x %lld image",
                        (long long)y0, (long long)x0, (long long)h, (long long)w, (long long)src_h,
                        (long long)src_w);
    }
    size_t esize;
    switch (out_dtype) {
    case HG_DTYPE_F32: esize = 4; break;
    case HG_DTYPE_U8:
    case HG_DTYPE_I8: esize = 1; break;
    default:
        return hg_error(HG_ERR_TYPE, "image_to_chw: output dtype must be float32, uint8 or int8");
    }
    size_t plane = (size_t)h * (size_t)w;
    if (out_bytes / esize < plane * (size_t)c) {
        return hg_error(HG_ERR_VALUE, "image_to_chw: output holds %zu bytes, needs %zu", out_bytes,
                        plane * (size_t)c * esize);
    }
    const uint8_t *win = src + y0 * src_stride + x0 * c;
    for (int64_t k = 0; k < c; ++k) {
        int64_t sc = reverse_channels ? c - 1 - k : k;
        float mean = norm ? norm->mean[k] : 0.0f;
        float mul = norm ? norm->scale / norm->std[k] : 1.0f;
        float bias = norm ? norm->bias[k] : 0.0f;
        const float *mimg = norm && norm->mean_img ? norm->mean_img + (size_t)k * plane : NULL;
        if (out_dtype == HG_DTYPE_F32) {
            plane_f32(win, c, src_stride, h, w, mirror, sc, mean, mul, bias, mimg,
                      (float *)out + (size_t)k * plane);
        } else if (out_dtype == HG_DTYPE_I8) {
            plane_i8(win, c, src_stride, h, w, mirror, sc, mean, mimg,
                     (int8_t *)out + (size_t)k * plane);
        } else {
            plane_u8(win, c, src_stride, h, w, mirror, sc, (uint8_t *)out + (size_t)k * plane);
        }
    }
    return HG_OK;
}
