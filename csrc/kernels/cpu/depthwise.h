/* Direct depthwise convolution (num_group == channels: each input channel has its own `mult`
 * filters and no filter mixes channels), forward and gradients, channel-first, 3 spatial dims
 * (1-D and 2-D callers set the leading sizes to 1). MobileNet's 3x3 layers are this case: run as
 * im2col + GEMM they become one 1 x 9 . 9 x P product per channel, all overhead and no reuse;
 * here each output row is accumulated tap by tap in vector registers straight from the image.
 *
 * Layouts: x[N, C, im...], w[C * mult, prod(k)], b[C * mult], y[N, C * mult, out...]; filter
 * f = c * mult + m reads channel c. The work is split over the kernels' thread pool (output
 * planes for the forward, channels for the gradients, so no two threads add to one element and
 * the sums do not depend on the thread count). Thread-safe; they allocate nothing.
 */
#ifndef HG_KERNELS_CPU_DEPTHWISE_H
#define HG_KERNELS_CPU_DEPTHWISE_H

#include <stdint.h>

#include "core/post.h"

/* Largest kernel size along the last axis the kernels take (callers use im2col + GEMM above). */
#define HG_DW_MAX_K 16

typedef struct hg_dw_geom {
    int64_t N, C, mult;               /* batch, channels, filters per channel */
    int64_t im[3];                    /* image spatial size */
    int64_t out[3];                   /* output spatial size */
    int64_t k[3], s[3], d[3], p[3];   /* kernel, stride, dilation, padding */
} hg_dw_geom;

/* y = post(conv(x, w) + b) (b and post may be NULL; post runs on each plane once written). */
void hg_depthwise_fwd_f32(const hg_dw_geom *g, const float *x, const float *w, const float *b,
                          float *y, const hg_post *post);
void hg_depthwise_fwd_f64(const hg_dw_geom *g, const double *x, const double *w, const double *b,
                          double *y, const hg_post *post);

/* From dy: dx (overwritten), dw and db (overwritten); any of the three may be NULL. */
void hg_depthwise_bwd_f32(const hg_dw_geom *g, const float *dy, const float *x, const float *w,
                          float *dx, float *dw, float *db);
void hg_depthwise_bwd_f64(const hg_dw_geom *g, const double *dy, const double *x, const double *w,
                          double *dx, double *dw, double *db);

#endif
