/* Direct convolution for deep layers at small batch, on weights packed once (an inference plan
 * keeps them per step, exec/fold.c and exec/plan.c): ResNet's 3x3 layers on 7x7 outputs at
 * batch 1 and 2, and its stride-2 layer into them. There the im2col product has a few dozen
 * columns, for which the BLAS packs all of the weights (megabytes, cold) at every call; here a
 * tile of 16 filters x 6 output positions stays in registers while the taps run, each tap one
 * load of the packed weights (16 filters side by side) and a broadcast of each position's input.
 *
 * float32, one group, dilation 1, stride 1 or 2 (both directions alike), kernel k x k with k 3
 * or 1 (the size rule takes 3 only), zero padding below k. Layouts: x[N, C, H, W],
 * y[N, F, OH, OW], the packed weights of hg_conv_deep_pack_f32, b[F] (may be NULL). With
 * padding, the input is copied once per call, zero-padded, into the workspace; work is split
 * over the kernels' pool by blocks of 16 filters. AVX2 + FMA CPUs without AVX-512 only
 * (hg_conv_deep_applies says false elsewhere). Sums run in a fixed order (channel, tap row, tap column), so results do
 * not depend on the thread count.
 * Thread-safe; allocates nothing. */
#ifndef HG_KERNELS_CPU_CONV_DEEP_H
#define HG_KERNELS_CPU_CONV_DEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/post.h"
#include "kernels/cpu/conv_direct.h"

/* The geometry is conv_direct.h's. Whether the kernel takes it (a square kernel of 3 or 1,
 * stride 1 or 2, padding below the kernel; the CPU's instruction sets) and is expected to beat
 * the other routes on it (a size rule; conv_deep.c says why). */
bool hg_conv_deep_applies(const hg_cdir_geom *g);

/* Bytes of the packed weights, and the packing of w[F, C, k, k] into them: per block of 16
 * filters, per channel and tap, the block's 16 weights side by side (zeros past F). */
size_t hg_conv_deep_packed_bytes(const hg_cdir_geom *g);
void hg_conv_deep_pack_f32(const hg_cdir_geom *g, const float *w, float *wp);

/* Workspace bytes of the forward: the padded input, the tiles' sums, the taps' offsets. */
size_t hg_conv_deep_workspace(const hg_cdir_geom *g);

/* y = post(conv(x, w) + b), w packed by hg_conv_deep_pack_f32. ws: hg_conv_deep_workspace(g)
 * bytes. */
void hg_conv_deep_f32(const hg_cdir_geom *g, const float *x, const float *wp, const float *b,
                      float *y, const hg_post *post, void *ws);

#endif
