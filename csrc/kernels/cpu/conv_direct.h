/* Direct 2-D convolution for layers with few input channels: a network's first layer on RGB
 * (ResNet's 7x7 stride 2, MobileNet's 3x3 stride 2, VGG's 3x3 stride 1). im2col would write
 * C*kh*kw (147 for ResNet) rows per output position for a product whose inner size is that
 * small, at stride 2 by a gather per element; here the output row is computed in registers
 * instead: vectors of outputs along the row times each filter's taps broadcast, from input
 * rows that are copied once per block of output rows, zero-padded and, at stride 2, split into
 * their even and odd columns so that every tap reads its inputs contiguously.
 *
 * float32, one group, dilation 1, stride 1 or 2 (both directions alike), any zero padding.
 * Layouts: x[N, C, H, W], w[F, C, kh, kw], b[F] (may be NULL), y[N, F, OH, OW]. Work is split
 * over the kernels' pool by blocks of output rows, one workspace slot per running thread.
 * Compiled for AVX-512, AVX2+FMA and baseline x86-64 and picked at run time. Sums run in a
 * fixed order (channel, tap row, tap column), so results do not depend on the thread count.
 * Thread-safe; allocates nothing. */
#ifndef HG_KERNELS_CPU_CONV_DIRECT_H
#define HG_KERNELS_CPU_CONV_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/post.h"

typedef struct hg_cdir_geom {
    int64_t N, C, F;      /* batch, input channels, filters */
    int64_t H, W, OH, OW; /* input and output sizes */
    int64_t kh, kw, s;    /* kernel size, stride */
    int64_t ph, pw;       /* zero padding */
} hg_cdir_geom;

/* Whether the kernel takes this geometry: at most HG_CDIR_MAX_C channels, kernels up to
 * HG_CDIR_MAX_K a side, stride 1 or 2, padding below the kernel size, a non-empty output; and
 * HG_NO_CONV_DIRECT not set. */
#define HG_CDIR_MAX_C 4
#define HG_CDIR_MAX_K 11
bool hg_conv_direct_applies(const hg_cdir_geom *g);

/* Workspace bytes for `threads` pool threads (>= 1). */
size_t hg_conv_direct_workspace(const hg_cdir_geom *g, int64_t threads);

/* y = post(conv(x, w) + b). ws: at least hg_conv_direct_workspace(g, t) bytes for some t >= 1
 * (fewer than the current thread count wants: fewer slots run). */
void hg_conv_direct_f32(const hg_cdir_geom *g, const float *x, const float *w, const float *b,
                        float *y, const hg_post *post, void *ws, size_t ws_bytes);

#endif
