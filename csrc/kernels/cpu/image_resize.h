/* Image resizing with OpenCV's cv::resize arithmetic (MXNet's _image_resize calls cv::resize):
 * nearest, bilinear, bicubic, area (pixel-area averaging) and Lanczos sampling of an interleaved
 * (H, W, C) image, half-pixel centres, borders replicated. uint8 uses OpenCV's 11-bit
 * fixed-point weights and its roundings; float32 blends in float, float64 in double. */
#ifndef HG_KERNELS_CPU_IMAGE_RESIZE_H
#define HG_KERNELS_CPU_IMAGE_RESIZE_H

#include <stdint.h>

typedef enum { HG_IMG_U8, HG_IMG_F32, HG_IMG_F64 } hg_img_elem;
typedef enum {
    HG_IMG_NEAREST = 0,
    HG_IMG_LINEAR = 1,
    HG_IMG_CUBIC = 2,
    HG_IMG_AREA = 3,
    HG_IMG_LANCZOS4 = 4
} hg_img_interp;

/* Resizes src (sh, sw, c) into dst (dh, dw, c), all sizes >= 1; interp is OpenCV's code.
 * Returns 0, or -1 when scratch memory (O(sw + sh + dw * c)) cannot be allocated. Reentrant:
 * no shared state. */
int hg_image_resize_hwc(hg_img_elem el, hg_img_interp interp, const void *src, int64_t sh,
                        int64_t sw, int64_t c, void *dst, int64_t dh, int64_t dw);

#endif
