/* hybridgluon public C API: the per-image step of an image-record pipeline (MXNet's
 * ImageRecordIter): crop, mirror, colour order, mean/std normalisation and HWC -> CHW, written
 * straight into one sample of a batch buffer.
 */
#ifndef HYBRIDGLUON_IMAGE_H
#define HYBRIDGLUON_IMAGE_H

#include "hybridgluon/hybridgluon.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How hg_image_to_chw maps a pixel value v of output channel c:
 *   float32 out: (v - m) * scale / std[c] + bias[c], m = mean_img[c][y][x] when mean_img is
 *                not NULL (float32, channels x h x w of the window, in output channel order),
 *                else mean[c] (bias carries MXNet's random illumination, scale its contrast);
 *   int8 out:    v - m rounded to nearest and saturated to [-128, 127] (no std, scale, bias);
 *   uint8 out:   v (no normalisation). */
typedef struct hg_image_norm {
    float mean[4];
    float std[4];
    float bias[4];
    float scale;
    const float *mean_img;
} hg_image_norm;

/* Writes the window (y0, x0, h, w) of an 8-bit image with c interleaved channels (rows
 * src_stride bytes apart, src_h x src_w pixels) into out as c planes of h x w: channel k of
 * the output is source channel c-1-k when reverse_channels (OpenCV's BGR(A) to RGB(A)), else k;
 * columns reversed when mirror. out_dtype: HG_DTYPE_F32 (normalised as hg_image_norm says; norm
 * may be NULL for mean 0, std 1, bias 0, scale 1), HG_DTYPE_U8 or HG_DTYPE_I8 (as hg_image_norm
 * says: what MXNet's ImageRecordUInt8Iter and ImageRecordInt8Iter store).
 * out_bytes is the size of out; the call fails (HG_ERR_VALUE, nothing written) when the window
 * leaves the image, c is not 1..4, or out is smaller than c*h*w elements.
 * Thread-safe: reads and writes only its arguments (the Python pipeline runs it on several
 * threads at once with the GIL released). */
HG_API hg_status hg_image_to_chw(const uint8_t *src, int64_t src_h, int64_t src_w, int64_t c,
                                 int64_t src_stride, int64_t y0, int64_t x0, int64_t h, int64_t w,
                                 int mirror, int reverse_channels, const hg_image_norm *norm,
                                 hg_dtype out_dtype, void *out, size_t out_bytes);

#ifdef __cplusplus
}
#endif

#endif
