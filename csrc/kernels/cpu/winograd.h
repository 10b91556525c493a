/* Winograd F(m x m, 3x3) forward convolution, float32, 2-D, stride 1, dilation 1, one group, any
 * zero padding: each m x m block of outputs (a "tile") is computed from its (m+2) x (m+2) input
 * window with (m+2)^2 multiplies per channel pair instead of 9 m^2, as (m+2)^2 independent GEMMs
 *     M[xi] (F x tiles) = U[xi] (F x C) . V[xi] (C x tiles),
 * between the weight transform U = G g G^T and the input transform V = B^T d B, followed by the
 * output transform y = A^T M A (+ bias), clipped at the right and bottom borders. m = 4 (36
 * GEMMs) for outputs of at least 16 a side, else m = 2 (16 GEMMs; winograd.c, choose_m).
 *
 * Layouts: x[N, C, H, W], w[F, C, 3, 3], b[F] (may be NULL), y[N, F, OH, OW] with
 * OH = H + 2*ph - 2, OW = W + 2*pw - 2. U is recomputed at every call (weights may change
 * between calls) into the front of the workspace. Kept by inference plans instead (as
 * conv_deep.h's packed weights are), it gained nothing: ResNet-18 at batch 1 0.996x the time,
 * batch 32 0.98x (paired rounds), for 1.8-4x the weights' memory, since the BLAS then packs a
 * U that comes cold from memory (sgemm_oncopy 12 -> 15% of the time) rather than from cache
 * right after the transform. The tiles of all images are then cut into
 * blocks whose V and M live in per-thread slots of the workspace, spread over the kernels'
 * thread pool (each block's GEMMs run single-threaded inside its slot). The transforms are
 * vectorised over tiles for AVX2 or baseline x86-64, picked at run time.
 *
 * Rounding differs from im2col + GEMM (the transforms scale and add before multiplying): F(2x2)
 * stays within a few float32 ulps of the sums' magnitude, F(4x4) about ten times that
 * (tests/test_winograd.py).
 * Thread-safe; allocates nothing.
 */
#ifndef HG_KERNELS_CPU_WINOGRAD_H
#define HG_KERNELS_CPU_WINOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/post.h"

typedef struct hg_wino_geom {
    int64_t N, C, F; /* batch, input channels, filters */
    int64_t H, W;    /* input size */
    int64_t ph, pw;  /* zero padding (both sides) */
} hg_wino_geom;

/* False when HG_NO_WINOGRAD is set to anything but "" or "0" (read once): callers then keep
 * their general path. */
bool hg_winograd_enabled(void);

/* Whether the Winograd kernel is expected to beat im2col + GEMM on this geometry (enough
 * channels, and enough tiles to pay for the weight transform); a size rule, not a timing. */
bool hg_winograd_pays(const hg_wino_geom *g);

/* Workspace bytes the forward wants for `threads` pool threads (>= 1). */
size_t hg_winograd_workspace(const hg_wino_geom *g, int64_t threads);

/* y = post(conv(x, w) + b) (b and post may be NULL). ws: workspace of ws_bytes, at least
 * hg_winograd_workspace(g, t) for some t >= 1 (fewer bytes than the current thread count
 * wants: fewer slots or smaller blocks). */
void hg_winograd_fwd_f32(const hg_wino_geom *g, const float *x, const float *w, const float *b,
                         float *y, const hg_post *post, void *ws, size_t ws_bytes);

/* The gradients of the forward above (same geometry g: the forward's x, w and y sizes).
 *
 * Data gradient: dx = conv(dy, w turned 180 degrees with filters and channels swapped), padding
 * 2 - p, i.e. the forward on the output gradient; for padding at most 2 (the _pays rule says
 * false otherwise). dx is overwritten. The turned weights go to the front of the workspace.
 *
 * Weight gradient: dw = sum over tiles of G^T ((A dy A^T) . (B^T d B)) G, as (m+2)^2 GEMMs
 * (F x tiles) . (tiles x C) per block of tiles, each thread summing its blocks in its own
 * workspace slot; m = 4 for outputs of at least 16 a side. dw is overwritten.
 *
 * Workspace as for the forward: at least the _workspace bytes for some thread count >= 1. */
bool hg_winograd_bwd_data_pays(const hg_wino_geom *g);
size_t hg_winograd_bwd_data_workspace(const hg_wino_geom *g, int64_t threads);
void hg_winograd_bwd_data_f32(const hg_wino_geom *g, const float *dy, const float *w, float *dx,
                              void *ws, size_t ws_bytes);
bool hg_winograd_bwd_weight_pays(const hg_wino_geom *g);
size_t hg_winograd_bwd_weight_workspace(const hg_wino_geom *g, int64_t threads);
void hg_winograd_bwd_weight_f32(const hg_wino_geom *g, const float *x, const float *dy, float *dw,
                                void *ws, size_t ws_bytes);

#endif
