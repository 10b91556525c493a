/* A pointwise (1x1) convolution and the depthwise convolution that alone reads its output, in
 * one pass (pwdw.c): MobileNetV2's expansion layer and the 3x3 layer after it. Run one after the
 * other, the expansion's output (6x the block's input: 32 x 96 x 112 x 112 floats, 154 MB, at
 * batch 32) is written to memory and read back; here each image's expanded channels are made a
 * group at a time into a per-thread buffer that stays in L2, and the depthwise layer reads them
 * from there, so the expanded tensor never exists.
 *
 * Layouts (float32, channel-first): x[N, C, I], w1[F, C], b1[F], w2[F, K] (K = prod(kernel)),
 * b2[F], y[N, F, P] with I = prod(dw.im), P = prod(dw.out). The depthwise geometry `dw` has
 * C = F and mult 1 (its N is ignored). Computed as
 *     mid = post1(w1 . x[n] + b1)    (the pointwise layer's formula and kernels: hg_gemm_epi_f32)
 *     y[n] = post2(dw(mid, w2) + b2) (hg_depthwise_fwd_f32)
 * b1, b2, post1, post2 may be NULL. Thread-safe; runs on the kernels' thread pool, each unit
 * (an image and a group of channels) on one thread. */
#ifndef HG_KERNELS_CPU_PWDW_H
#define HG_KERNELS_CPU_PWDW_H

#include <stdbool.h>
#include <stdint.h>

#include "core/post.h"
#include "kernels/cpu/depthwise.h"

/* Bytes of one thread's buffer of expanded planes: with a 112 x 112 layer's input image
 * (16 channels, 800 KB), 12 of its planes (600 KB) keep the two within a 2 MiB L2. */
#define HG_PWDW_BUF_BYTES (640 * 1024)

/* Whether a layer pair of these sizes can run fused: one expanded plane fits the buffer. */
bool hg_pwdw_fits(int64_t I);

/* Returns false when a thread's buffer cannot be allocated: y is then partly written, and the
 * caller runs the two layers, which write all of it. */
bool hg_pwdw_fwd_f32(int64_t N, int64_t C, int64_t F, const hg_dw_geom *dw, const float *x,
                     const float *w1, const float *b1, const hg_post *post1, const float *w2,
                     const float *b2, const hg_post *post2, float *y);

#endif
