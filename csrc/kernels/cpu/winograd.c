/* Winograd F(2x2, 3x3) and F(4x4, 3x3) forward convolution and its gradients (see winograd.h).
 *
 * Tiles are numbered over (image, tile row, tile column); a block is a run of consecutive tiles
 * and splits into segments, runs along one tile row. A block's V[nxi][C][vld] and M[nxi][F][vld]
 * (nxi = 16 or 36) sit in its slot of the workspace. The transforms work on a whole block of one
 * channel (input) or filter (output) at a time with the tiles as the vector lanes: the input
 * transform first copies, for each of a window's rows, the window's columns of every tile into
 * rows of the block (zeros for the padding), so that its loop reads unit-stride and carries no
 * bounds checks; the output transform writes a block's m output rows interleaved and copies each
 * segment's part into place, clipped at the borders. The transforms are compiled for AVX2 and
 * for baseline x86-64 through function attributes and picked at run time, as depthwise.c does.
 */
#include "kernels/cpu/winograd.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/parallel.h"
#include "hybridgluon/hybridgluon.h"
#include "kernels/cpu/gemm.h"

/* ---- plan ---------------------------------------------------------------------------------- */

/* Tiles per block at most. Measured on the 2-core Zen 3 machine, one thread, resnet18's 3x3
 * layers: blocks of 16 tiles lose to im2col at 512 channels (0.85x at batch 32: every block's
 * GEMMs pack all of U for a few columns); 64 to 256 tiles win 1.4-1.7x at batch 8, 128 and 256
 * best. V and M of 128 tiles at 512 channels are 8 MB: they live in L3, which the GEMMs' own
 * packing tolerates. */
#define WG_TB 128
/* Tiles a block keeps at least when blocks are made smaller to give every thread one: below,
 * one block runs with its GEMMs split over the threads instead (each block packs all of U). */
#define WG_TB_EVEN 32
/* A block's row length in V and M: its tiles rounded up to whole vectors of 8. */
#define WG_VLD ((WG_TB + 7) & ~7)
static int64_t row_len(int64_t tb) { return (tb + 7) & ~(int64_t)7; }

/* floats rounded up to a whole 64-byte line */
static int64_t lines(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* Tiles of m x m outputs (m = 2: F(2x2, 3x3); m = 4: F(4x4, 3x3), see choose_m). */
static int64_t tiles_y(const hg_wino_geom *g, int m) { return (g->H + 2 * g->ph - 2 + m - 1) / m; }
static int64_t tiles_x(const hg_wino_geom *g, int m) { return (g->W + 2 * g->pw - 2 + m - 1) / m; }
static int64_t ntiles(const hg_wino_geom *g, int m) { return g->N * tiles_y(g, m) * tiles_x(g, m); }
static int64_t num_tiles(const hg_wino_geom *g) { return ntiles(g, 2); }
/* the (m + 2)^2 matrices of U, V and M */
static int nxi(int m) { return (m + 2) * (m + 2); }
/* F(4x4, 3x3)'s V and M take 36 rows a tile against 16: half the tiles a block */
#define WG4_TB 64
static int64_t block_max(int m) { return m == 4 ? WG4_TB : WG_TB; }

/* Distance between the 16 matrices of U, V and M: a whole number of lines plus one, so that
 * the 16 rows a transform writes side by side do not fall into the same cache sets (F * C and
 * C * tb are often multiples of 4 KB: 16 such streams thrashed L1 and L2, 5x slower). */
static int64_t xi_stride(int64_t n) { return lines(n) + 16; }

static int64_t u_floats(const hg_wino_geom *g, int m) { return nxi(m) * xi_stride(g->F * g->C); }

/* One slot: V and M of a block of up to tb tiles. */
static int64_t slot_floats(const hg_wino_geom *g, int64_t tb, int m)
{
    return nxi(m) * (xi_stride(g->C * row_len(tb)) + xi_stride(g->F * row_len(tb)));
}

typedef struct wg_plan {
    int64_t tb;     /* tiles per block (the last may have fewer), at most WG_TB */
    int64_t blocks; /* ceil(tiles / tb) */
    int64_t slots;  /* blocks run at once, one slot of workspace each */
} wg_plan;

static wg_plan make_plan(const hg_wino_geom *g, int64_t threads, int m)
{
    wg_plan p = {0, 0, 1};
    int64_t T = ntiles(g, m), TB = block_max(m);
    if (T == 0) return p;
    int64_t nb = (T + TB - 1) / TB;
    /* a multiple of the threads, so that the last round keeps them all busy */
    int64_t even = (nb + threads - 1) / threads * threads;
    if (T / even >= WG_TB_EVEN) nb = even;
    p.tb = (T + nb - 1) / nb;
    p.blocks = (T + p.tb - 1) / p.tb;
    p.slots = threads < p.blocks ? threads : p.blocks;
    return p;
}

/* F(4x4, 3x3) multiplies 36 / 16 per output and channel pair against F(2x2)'s 16 / 4 and its
 * transforms touch fewer values per output, but its tiles cover 4x4 outputs (more lost at the
 * borders of small images: 14x14 outputs take 16x16, 7x7 8x8) and its transforms round more
 * (constants up to 8: errors of about 3e-6 of the outputs' size, rms, against 3e-7; see
 * tests/test_winograd.py). Hence F(4x4) for outputs of at least WG4_MIN_OUT a side (or 12 with
 * WG4_MIN_TILES tiles). ResNet-18's 3x3 layers, 2 threads, F(2x2) -> F(4x4), ms: batch 16,
 * 56x56 64 channels 10.1 -> 8.5, 28x28 10.0 -> 6.1, 14x14 10.6 -> 9.1, 7x7 13.4 -> 15.9;
 * batch 1, 56x56 0.60 -> 0.53, 28x28 0.63 -> 0.53, 14x14 1.03 -> 1.25. HG_WINO_M=2|4 forces
 * one (read once; for tests). */
#define WG4_MIN_OUT 16
#define WG4_MIN_TILES 64

/* HG_WINO_M's tile size, 0 when unset (read once). */
static int forced_m(void)
{
    static atomic_int forced = -1;
    int f = atomic_load_explicit(&forced, memory_order_relaxed);
    if (f < 0) {
        const char *e = getenv("HG_WINO_M");
        f = e && e[0] == '4' ? 4 : e && e[0] == '2' ? 2 : 0;
        atomic_store_explicit(&forced, f, memory_order_relaxed);
    }
    return f;
}

static int choose_m(const hg_wino_geom *g)
{
    int f = forced_m();
    if (f) return f;
    int64_t OH = g->H + 2 * g->ph - 2, OW = g->W + 2 * g->pw - 2;
    if (OH >= WG4_MIN_OUT && OW >= WG4_MIN_OUT) return 4;
    /* 12..15 a side (ResNet's 14x14 stage) loses a quarter of its 4x4 tiles to the border but
     * still wins with enough of them: batch 4 3.45 -> 3.20 ms, batch 32 18.8 -> 17.6 */
    return OH >= 12 && OW >= 12 && ntiles(g, 4) >= WG4_MIN_TILES ? 4 : 2;
}

/* The weight gradient's: F(4x4) from WG4_MIN_OUT a side only. ResNet-18 at batch 16, 2 threads,
 * F(2x2) -> F(4x4): 56x56 16.1 -> 11.2 ms, 28x28 12.7 -> 8.6 ms, 14x14 10.7 -> 13.4 ms. */
static int choose_m_wgrad(const hg_wino_geom *g)
{
    int f = forced_m();
    if (f) return f;
    int64_t OH = g->H + 2 * g->ph - 2, OW = g->W + 2 * g->pw - 2;
    return OH >= WG4_MIN_OUT && OW >= WG4_MIN_OUT ? 4 : 2;
}

size_t hg_winograd_workspace(const hg_wino_geom *g, int64_t threads)
{
    int m = choose_m(g);
    wg_plan p = make_plan(g, threads < 1 ? 1 : threads, m);
    if (p.blocks == 0) return 0;
    return sizeof(float) * (size_t)(u_floats(g, m) + p.slots * slot_floats(g, p.tb, m));
}

/* The size rule. The GEMMs do 16 multiply-adds per tile and channel pair against im2col's 36;
 * each call pays for the weight transform (16 stores per pair, read back and packed by every
 * block's GEMMs) and per tile for the transforms (about C + F vector adds). Measured on the
 * 2-core Zen 3 machine, one thread, pad 1 (im2col's time / Winograd's):
 *   C = F = 64..512 with >= 64 tiles: 1.3-1.8; 8..32 channels at 28x28..112x112: 1.2-1.6;
 *   256 channels, 49 tiles (resnet18's 14x14 at batch 1): 1.3; 25 tiles: 1.1; 16: 1.0;
 *   512 channels, 64 tiles: 1.35; 49 (14x14): 1.0; 32: 0.9; 16 (7x7 at batch 1): 0.7;
 *   16-128 channels, 4 tiles: 0.55-0.85; 3 input channels (a first layer): 0.75.
 * (Two threads, batch 1: resnet18's 56x56, 28x28 and 14x14 layers 1.5-1.8.)
 * Hence: at least WG_MIN_CH channels in and out, WG_MIN_TILES tiles, and tiles * 16 >= C + F
 * (the weight transform's share grows with the channels). */
#define WG_MIN_CH 8
#define WG_MIN_TILES 8

bool hg_winograd_pays(const hg_wino_geom *g)
{
    int64_t T = num_tiles(g);
    return g->C >= WG_MIN_CH && g->F >= WG_MIN_CH && T >= WG_MIN_TILES && T * 16 >= g->C + g->F;
}

bool hg_winograd_enabled(void)
{
    static atomic_int off = -1;
    return !hg_env_on_once(&off, "HG_NO_WINOGRAD");
}

/* ---- transforms ---------------------------------------------------------------------------- */

/* The columns a tile row's windows start with: s[j * ld + k] = xr[c0 + m k + j] for
 * j = 0..m+1 and k in [0, len), zero outside [0, W) (all zero when xr is NULL: a padding row).
 * m: the tile size, 2 or 4 (a constant at every call, so each is compiled for its own). */
static inline void stage_row_m(const float *restrict xr, int64_t W, int64_t c0, int64_t len,
                               float *restrict s, int64_t ld, const int m)
{
    const int a = m + 2; /* window width */
    if (!xr) {
        for (int j = 0; j < a; j++) memset(s + j * ld, 0, sizeof(float) * (size_t)len);
        return;
    }
    /* interior: all a columns inside, c0 + m k >= 0 and c0 + m k + a - 1 <= W - 1 */
    int64_t lo = c0 >= 0 ? 0 : (m - 1 - c0) / m;
    int64_t hi = W - a - c0 >= 0 ? (W - a - c0) / m + 1 : 0;
    if (lo > len) lo = len;
    if (hi > len) hi = len;
    if (hi < lo) hi = lo;
    for (int64_t k = lo; k < hi; k++) {
        const float *p = xr + c0 + m * k;
        for (int j = 0; j < a; j++) s[j * ld + k] = p[j];
    }
    for (int64_t k = 0; k < len; k++) { /* the borders */
        if (k == lo) k = hi;
        if (k == len) break;
        for (int j = 0; j < a; j++) {
            int64_t c = c0 + m * k + j;
            s[j * ld + k] = c >= 0 && c < W ? xr[c] : 0.0f;
        }
    }
}

/* The transforms of 8 tiles side by side as vectors of GCC and Clang (the compilers do not
 * vectorise these loops by themselves: the 16 row streams of V and M could overlap as far as
 * they can tell). Blocks are padded to whole vectors (see in_part and out_chan). */
typedef float wg_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define WG_LD(p) (*(const wg_v8 *)(p))
#define WG_ST(p, v) (*(wg_v8 *)(p) = (v))

/* B^T d B of the 4x4 windows of tiles k..k+7, row i's four columns staged at S + 4i * ld. */
#define WG_IN_STEP(S, ld, v, vs, k)                                                             \
    {                                                                                           \
        wg_v8 h[4][4];                                                                          \
        for (int i = 0; i < 4; i++) { /* B^T along the row */                                  \
            const float *r = (S) + 4 * i * (ld) + (k);                                          \
            wg_v8 d0 = WG_LD(r), d1 = WG_LD(r + (ld));                                          \
            wg_v8 d2 = WG_LD(r + 2 * (ld)), d3 = WG_LD(r + 3 * (ld));                           \
            h[i][0] = d0 - d2;                                                                  \
            h[i][1] = d1 + d2;                                                                  \
            h[i][2] = d2 - d1;                                                                  \
            h[i][3] = d1 - d3;                                                                  \
        }                                                                                       \
        for (int j = 0; j < 4; j++) { /* and down the columns */                               \
            WG_ST((v) + j * (vs) + (k), h[0][j] - h[2][j]);                                     \
            WG_ST((v) + (4 + j) * (vs) + (k), h[1][j] + h[2][j]);                               \
            WG_ST((v) + (8 + j) * (vs) + (k), h[2][j] - h[1][j]);                               \
            WG_ST((v) + (12 + j) * (vs) + (k), h[1][j] - h[3][j]);                              \
        }                                                                                       \
    }

#if defined(__clang__)
#define WG_ZIP_LO(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define WG_ZIP_HI(a, b) __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
#else
typedef int32_t wg_i8 __attribute__((vector_size(32)));
#define WG_ZIP_LO(a, b) __builtin_shuffle(a, b, (wg_i8){0, 8, 1, 9, 2, 10, 3, 11})
#define WG_ZIP_HI(a, b) __builtin_shuffle(a, b, (wg_i8){4, 12, 5, 13, 6, 14, 7, 15})
#endif

/* A^T M A + bias of tiles k..k+7 (M rows m + xi * ms), interleaved into the output rows
 * r0 and r1 at 2k: (y00, y01) and (y10, y11) of each tile side by side. */
#define WG_OUT_STEP(m, ms, k, r0, r1)                                                           \
    {                                                                                           \
        wg_v8 s0[4], s1[4];                                                                     \
        for (int j = 0; j < 4; j++) { /* A^T down the columns */                               \
            wg_v8 m1 = WG_LD((m) + (4 + j) * (ms) + (k)), m2 = WG_LD((m) + (8 + j) * (ms) + (k)); \
            s0[j] = WG_LD((m) + j * (ms) + (k)) + m1 + m2;                                      \
            s1[j] = m1 - m2 - WG_LD((m) + (12 + j) * (ms) + (k));                               \
        }                                                                                       \
        wg_v8 y00 = s0[0] + s0[1] + s0[2] + bias, y01 = s0[1] - s0[2] - s0[3] + bias;           \
        wg_v8 y10 = s1[0] + s1[1] + s1[2] + bias, y11 = s1[1] - s1[2] - s1[3] + bias;           \
        WG_ST((r0) + 2 * (k), WG_ZIP_LO(y00, y01));                                             \
        WG_ST((r0) + 2 * (k) + 8, WG_ZIP_HI(y00, y01));                                         \
        WG_ST((r1) + 2 * (k), WG_ZIP_LO(y10, y11));                                             \
        WG_ST((r1) + 2 * (k) + 8, WG_ZIP_HI(y10, y11));                                         \
    }

/* F(4x4, 3x3) (Lavin and Gray's matrices): B^T d B of the 6x6 windows of tiles k..k+7 (row i's
 * six columns staged at S + 6i * ld), into V[xi][k], xi = 6 r + q. B^T's rows:
 *   (4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0), (0, -2, -1, 2, 1, 0),
 *   (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1). */
#define WG4_BT(o, d)                                                                            \
    {                                                                                           \
        (o)[0] = 4.0f * (d)[0] - 5.0f * (d)[2] + (d)[4];                                        \
        (o)[1] = (d)[3] + (d)[4] - 4.0f * ((d)[1] + (d)[2]);                                    \
        (o)[2] = (d)[4] - (d)[3] + 4.0f * ((d)[1] - (d)[2]);                                    \
        (o)[3] = (d)[4] - (d)[2] + 2.0f * ((d)[3] - (d)[1]);                                    \
        (o)[4] = (d)[4] - (d)[2] + 2.0f * ((d)[1] - (d)[3]);                                    \
        (o)[5] = 4.0f * (d)[1] - 5.0f * (d)[3] + (d)[5];                                        \
    }

#define WG4_IN_STEP(S, ld, v, vs, k)                                                            \
    {                                                                                           \
        wg_v8 h[6][6];                                                                          \
        for (int i = 0; i < 6; i++) { /* B^T along the row */                                  \
            const float *r = (S) + 6 * i * (ld) + (k);                                          \
            wg_v8 d[6];                                                                         \
            for (int q = 0; q < 6; q++) d[q] = WG_LD(r + q * (ld));                             \
            WG4_BT(h[i], d)                                                                     \
        }                                                                                       \
        for (int q = 0; q < 6; q++) { /* and down the columns */                               \
            wg_v8 e[6], o[6];                                                                   \
            for (int i = 0; i < 6; i++) e[i] = h[i][q];                                         \
            WG4_BT(o, e)                                                                        \
            for (int r = 0; r < 6; r++) WG_ST((v) + (6 * r + q) * (vs) + (k), o[r]);            \
        }                                                                                       \
    }

/* A^T M A + bias of tiles k..k+7 (M rows m + xi * ms) into the four output rows r[0..3] at 4k,
 * the four outputs of each tile side by side. A^T's rows: (1, 1, 1, 1, 1, 0),
 * (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1). */
#define WG4_AT(o, m)                                                                            \
    {                                                                                           \
        wg_v8 p12 = (m)[1] + (m)[2], n12 = (m)[1] - (m)[2];                                     \
        wg_v8 p34 = (m)[3] + (m)[4], n34 = (m)[3] - (m)[4];                                     \
        (o)[0] = (m)[0] + p12 + p34;                                                            \
        (o)[1] = n12 + 2.0f * n34;                                                              \
        (o)[2] = p12 + 4.0f * p34;                                                              \
        (o)[3] = n12 + 8.0f * n34 + (m)[5];                                                     \
    }

#define WG4_OUT_STEP(m, ms, k, r)                                                               \
    {                                                                                           \
        wg_v8 t[4][6];                                                                          \
        for (int q = 0; q < 6; q++) { /* A^T down the columns */                               \
            wg_v8 c[6], o[4];                                                                   \
            for (int i = 0; i < 6; i++) c[i] = WG_LD((m) + (6 * i + q) * (ms) + (k));           \
            WG4_AT(o, c)                                                                        \
            for (int a = 0; a < 4; a++) t[a][q] = o[a];                                         \
        }                                                                                       \
        for (int a = 0; a < 4; a++) { /* and along the rows, then the tiles interleaved */     \
            wg_v8 y[4];                                                                         \
            WG4_AT(y, t[a])                                                                     \
            for (int b = 0; b < 4; b++) y[b] += bias;                                           \
            wg_v8 z0 = WG_ZIP_LO(y[0], y[2]), z1 = WG_ZIP_LO(y[1], y[3]);                       \
            wg_v8 z2 = WG_ZIP_HI(y[0], y[2]), z3 = WG_ZIP_HI(y[1], y[3]);                       \
            WG_ST((r)[a] + 4 * (k), WG_ZIP_LO(z0, z1));                                         \
            WG_ST((r)[a] + 4 * (k) + 8, WG_ZIP_HI(z0, z1));                                     \
            WG_ST((r)[a] + 4 * (k) + 16, WG_ZIP_LO(z2, z3));                                    \
            WG_ST((r)[a] + 4 * (k) + 24, WG_ZIP_HI(z2, z3));                                    \
        }                                                                                       \
    }

/* The m columns of a tile row's m x m output tiles: s[j * ld + k] = yr[c0 + m k + j] for
 * j < m and k in [0, len), zero at and past W (all zero when yr is NULL: a row past the
 * output). The weight gradient's counterpart of stage_row_m. */
static inline void stage_row_dy(const float *restrict yr, int64_t W, int64_t c0, int64_t len,
                                float *restrict s, int64_t ld, const int m)
{
    if (!yr) {
        for (int j = 0; j < m; j++) memset(s + j * ld, 0, sizeof(float) * (size_t)len);
        return;
    }
    int64_t hi = W - m - c0 >= 0 ? (W - m - c0) / m + 1 : 0; /* all m columns inside */
    if (hi > len) hi = len;
    for (int64_t k = 0; k < hi; k++)
        for (int j = 0; j < m; j++) s[j * ld + k] = yr[c0 + m * k + j];
    for (int64_t k = hi; k < len; k++)
        for (int j = 0; j < m; j++) {
            int64_t c = c0 + m * k + j;
            s[j * ld + k] = c < W ? yr[c] : 0.0f;
        }
}

/* A dy A^T of the 2x2 output gradients of tiles k..k+7 (row i's two columns staged at
 * S + 2i * ld): the adjoint of the output transform, into D[xi][k] (row stride ds). */
#define WG_DY_STEP(S, ld, d, ds, k)                                                             \
    {                                                                                           \
        wg_v8 a = WG_LD((S) + (k)), b = WG_LD((S) + (ld) + (k));                                \
        wg_v8 c = WG_LD((S) + 2 * (ld) + (k)), e = WG_LD((S) + 3 * (ld) + (k));                 \
        wg_v8 p[4] = {a, a + c, a - c, -c}, q[4] = {b, b + e, b - e, -e};                       \
        for (int r = 0; r < 4; r++) {                                                           \
            WG_ST((d) + (4 * r) * (ds) + (k), p[r]);                                            \
            WG_ST((d) + (4 * r + 1) * (ds) + (k), p[r] + q[r]);                                 \
            WG_ST((d) + (4 * r + 2) * (ds) + (k), p[r] - q[r]);                                 \
            WG_ST((d) + (4 * r + 3) * (ds) + (k), -q[r]);                                       \
        }                                                                                       \
    }

/* F(4x4): A dy A^T of tiles k..k+7 (row i's four columns staged at S + 4i * ld), A = the
 * transpose of WG4_AT's A^T: rows (1, 0, 0, 0), (1, 1, 1, 1), (1, -1, 1, -1), (1, 2, 4, 8),
 * (1, -2, 4, -8), (0, 0, 0, 1). */
#define WG4_A(o, d)                                                                             \
    {                                                                                           \
        wg_v8 p02 = (d)[0] + (d)[2], p13 = (d)[1] + (d)[3];                                     \
        wg_v8 q02 = (d)[0] + 4.0f * (d)[2], q13 = 2.0f * (d)[1] + 8.0f * (d)[3];                \
        (o)[0] = (d)[0];                                                                        \
        (o)[1] = p02 + p13;                                                                     \
        (o)[2] = p02 - p13;                                                                     \
        (o)[3] = q02 + q13;                                                                     \
        (o)[4] = q02 - q13;                                                                     \
        (o)[5] = (d)[3];                                                                        \
    }

#define WG4_DY_STEP(S, ld, dd, ds, k)                                                           \
    {                                                                                           \
        wg_v8 h[4][6];                                                                          \
        for (int i = 0; i < 4; i++) { /* A along the row */                                    \
            wg_v8 d[4];                                                                         \
            for (int q = 0; q < 4; q++) d[q] = WG_LD((S) + (4 * i + q) * (ld) + (k));           \
            WG4_A(h[i], d)                                                                      \
        }                                                                                       \
        for (int q = 0; q < 6; q++) { /* and down the columns */                               \
            wg_v8 e[4], o[6];                                                                   \
            for (int i = 0; i < 4; i++) e[i] = h[i][q];                                         \
            WG4_A(o, e)                                                                         \
            for (int r = 0; r < 6; r++) WG_ST((dd) + (6 * r + q) * (ds) + (k), o[r]);           \
        }                                                                                       \
    }

/* A run of tiles along one tile row: len tiles of tile row ty of image n from column tx, at
 * position pos of its block. */
typedef struct wg_seg {
    int64_t n, ty, tx, len, pos;
} wg_seg;

/* Where a channel's input transform reads: x0 (channel c of image 0), the distance between
 * images, the image size and padding. */
typedef struct wg_src {
    const float *x0;
    int64_t istride, H, W, ph, pw;
} wg_src;

/* A block's windows staged for the input transform: for each segment, row i of its windows
 * (i < m + 2) at S + (m + 2) i * n8 + pos, as stage_row_m lays it out. */
static inline void stage_windows(const wg_src *src, const wg_seg *segs, int64_t nseg, int64_t n8,
                                 float *restrict S, const int m)
{
    const int a = m + 2;
    for (int64_t q = 0; q < nseg; q++) {
        const wg_seg *sg = &segs[q];
        const float *xn = src->x0 + sg->n * src->istride;
        for (int64_t i = 0; i < a; i++) {
            int64_t iy = m * sg->ty - src->ph + i;
            stage_row_m(iy >= 0 && iy < src->H ? xn + iy * src->W : NULL, src->W,
                        m * sg->tx - src->pw, sg->len, S + a * i * n8 + sg->pos, n8, m);
        }
    }
}

/* A block's m x m output-gradient tiles staged for the dy transform: row i (i < m) at
 * S + m i * n8 + pos, as stage_row_dy lays it out (src: dy's plane, no padding). */
static inline void stage_tiles(const wg_src *src, const wg_seg *segs, int64_t nseg, int64_t n8,
                               float *restrict S, const int m)
{
    for (int64_t q = 0; q < nseg; q++) {
        const wg_seg *sg = &segs[q];
        const float *yn = src->x0 + sg->n * src->istride;
        for (int64_t i = 0; i < m; i++) {
            int64_t oy = m * sg->ty + i;
            stage_row_dy(oy < src->H ? yn + oy * src->W : NULL, src->W, m * sg->tx, sg->len,
                         S + m * i * n8 + sg->pos, n8, m);
        }
    }
}

/*   in_chan:  V[xi][k] (row stride vs) of one channel for the nseg segments of a block, k in
 *             [0, n8) (n8: the block's tiles rounded up to 8); S holds 16 * n8 floats whose
 *             columns from the block's tile count on are zero;
 *   out_chan: the two output rows r0, r1 (2 * n8 each, interleaved) of nt tiles of one filter
 *             from M[xi][k] (row stride ms), plus bias;
 *   wt_filt:  U[xi][c] (row stride us) of one filter w[C][3][3]. */
#define WG_KERNELS(ISA, TGT)                                                                    \
    TGT static void in_chan_##ISA(const wg_src *src, const wg_seg *segs, int64_t nseg,          \
                                  int64_t n8, float *restrict S, float *restrict v, int64_t vs) \
    {                                                                                           \
        stage_windows(src, segs, nseg, n8, S, 2);                                               \
        for (int64_t k = 0; k < n8; k += 8) WG_IN_STEP(S, n8, v, vs, k)                         \
    }                                                                                           \
                                                                                                \
    TGT static void dy_chan_##ISA(const wg_src *src, const wg_seg *segs, int64_t nseg,          \
                                  int64_t n8, float *restrict S, float *restrict d, int64_t ds) \
    {                                                                                           \
        stage_tiles(src, segs, nseg, n8, S, 2);                                                 \
        for (int64_t k = 0; k < n8; k += 8) WG_DY_STEP(S, n8, d, ds, k)                         \
    }                                                                                           \
                                                                                                \
    TGT static void dy4_chan_##ISA(const wg_src *src, const wg_seg *segs, int64_t nseg,         \
                                   int64_t n8, float *restrict S, float *restrict d,            \
                                   int64_t ds)                                                  \
    {                                                                                           \
        stage_tiles(src, segs, nseg, n8, S, 4);                                                 \
        for (int64_t k = 0; k < n8; k += 8) WG4_DY_STEP(S, n8, d, ds, k)                        \
    }                                                                                           \
                                                                                                \
    TGT static void out_chan_##ISA(const float *restrict m, int64_t ms, int64_t nt, float bias, \
                                   float *restrict r0, float *restrict r1)                      \
    {                                                                                           \
        int64_t k = 0;                                                                          \
        for (; k + 8 <= nt; k += 8) WG_OUT_STEP(m, ms, k, r0, r1)                               \
        if (k < nt) { /* the last tiles through a copy padded with zeros */                     \
            float pad[16 * 8] = {0};                                                            \
            for (int xi = 0; xi < 16; xi++)                                                     \
                for (int64_t e = k; e < nt; e++) pad[xi * 8 + e - k] = m[xi * ms + e];          \
            WG_OUT_STEP(pad, 8, 0, r0 + 2 * k, r1 + 2 * k)                                      \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    TGT static void wt_filt_##ISA(const float *restrict w, int64_t C, float *restrict u,        \
                                  int64_t us)                                                   \
    {                                                                                           \
        for (int64_t c = 0; c < C; c++) {                                                       \
            const float *g = w + 9 * c;                                                         \
            float t[4][3]; /* G g */                                                            \
            for (int j = 0; j < 3; j++) {                                                       \
                t[0][j] = g[j];                                                                 \
                t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);                                  \
                t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);                                  \
                t[3][j] = g[6 + j];                                                             \
            }                                                                                   \
            for (int r = 0; r < 4; r++) { /* (G g) G^T */                                       \
                u[(4 * r) * us + c] = t[r][0];                                                  \
                u[(4 * r + 1) * us + c] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);                 \
                u[(4 * r + 2) * us + c] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);                 \
                u[(4 * r + 3) * us + c] = t[r][2];                                              \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    TGT static void in4_chan_##ISA(const wg_src *src, const wg_seg *segs, int64_t nseg,         \
                                   int64_t n8, float *restrict S, float *restrict v,            \
                                   int64_t vs)                                                  \
    {                                                                                           \
        stage_windows(src, segs, nseg, n8, S, 4);                                               \
        for (int64_t k = 0; k < n8; k += 8) WG4_IN_STEP(S, n8, v, vs, k)                        \
    }                                                                                           \
                                                                                                \
    TGT static void out4_chan_##ISA(const float *restrict m, int64_t ms, int64_t nt,            \
                                    float bias, float *const *r)                                \
    {                                                                                           \
        int64_t k = 0;                                                                          \
        for (; k + 8 <= nt; k += 8) WG4_OUT_STEP(m, ms, k, r)                                   \
        if (k < nt) { /* the last tiles through a copy padded with zeros */                     \
            float pad[36 * 8] = {0};                                                            \
            for (int xi = 0; xi < 36; xi++)                                                     \
                for (int64_t e = k; e < nt; e++) pad[xi * 8 + e - k] = m[xi * ms + e];          \
            float *rk[4] = {r[0] + 4 * k, r[1] + 4 * k, r[2] + 4 * k, r[3] + 4 * k};            \
            WG4_OUT_STEP(pad, 8, 0, rk)                                                         \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    TGT static void wt4_filt_##ISA(const float *restrict w, int64_t C, float *restrict u,       \
                                   int64_t us)                                                  \
    {                                                                                           \
        for (int64_t c = 0; c < C; c++) {                                                       \
            const float *g = w + 9 * c;                                                         \
            float t[6][3]; /* G g, G's rows (1/4, 0, 0), -(1, 1, 1)/6, -(1, -1, 1)/6,          \
                            * (1/24, 1/12, 1/6), (1/24, -1/12, 1/6), (0, 0, 1) */              \
            for (int j = 0; j < 3; j++) {                                                       \
                float g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];                                  \
                t[0][j] = 0.25f * g0;                                                           \
                t[1][j] = (-1.0f / 6.0f) * (g0 + g1 + g2);                                      \
                t[2][j] = (-1.0f / 6.0f) * (g0 - g1 + g2);                                      \
                t[3][j] = (1.0f / 24.0f) * g0 + (1.0f / 12.0f) * g1 + (1.0f / 6.0f) * g2;       \
                t[4][j] = (1.0f / 24.0f) * g0 - (1.0f / 12.0f) * g1 + (1.0f / 6.0f) * g2;       \
                t[5][j] = g2;                                                                   \
            }                                                                                   \
            for (int r = 0; r < 6; r++) { /* (G g) G^T */                                       \
                float a = t[r][0], b = t[r][1], e = t[r][2];                                    \
                u[(6 * r) * us + c] = 0.25f * a;                                                \
                u[(6 * r + 1) * us + c] = (-1.0f / 6.0f) * (a + b + e);                         \
                u[(6 * r + 2) * us + c] = (-1.0f / 6.0f) * (a - b + e);                         \
                u[(6 * r + 3) * us + c] =                                                       \
                    (1.0f / 24.0f) * a + (1.0f / 12.0f) * b + (1.0f / 6.0f) * e;                \
                u[(6 * r + 4) * us + c] =                                                       \
                    (1.0f / 24.0f) * a - (1.0f / 12.0f) * b + (1.0f / 6.0f) * e;                \
                u[(6 * r + 5) * us + c] = e;                                                    \
            }                                                                                   \
        }                                                                                       \
    }

WG_KERNELS(base, )
#if defined(__x86_64__) && defined(__GNUC__)
#define WG_HAVE_AVX2 1
WG_KERNELS(avx2, __attribute__((target("avx2,fma"))))
#endif

typedef struct wg_kernels {
    void (*in_chan)(const wg_src *, const wg_seg *, int64_t, int64_t, float *, float *, int64_t);
    void (*out_chan)(const float *, int64_t, int64_t, float, float *, float *);
    void (*wt_filt)(const float *, int64_t, float *, int64_t);
    void (*dy_chan)(const wg_src *, const wg_seg *, int64_t, int64_t, float *, float *, int64_t);
    void (*in4_chan)(const wg_src *, const wg_seg *, int64_t, int64_t, float *, float *, int64_t);
    void (*out4_chan)(const float *, int64_t, int64_t, float, float *const *);
    void (*wt4_filt)(const float *, int64_t, float *, int64_t);
    void (*dy4_chan)(const wg_src *, const wg_seg *, int64_t, int64_t, float *, float *, int64_t);
} wg_kernels;

static wg_kernels pick_kernels(void)
{
#ifdef WG_HAVE_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (wg_kernels){in_chan_avx2,  out_chan_avx2,  wt_filt_avx2,  dy_chan_avx2,
                            in4_chan_avx2, out4_chan_avx2, wt4_filt_avx2, dy4_chan_avx2};
#endif
    return (wg_kernels){in_chan_base,  out_chan_base,  wt_filt_base,  dy_chan_base,
                        in4_chan_base, out4_chan_base, wt4_filt_base, dy4_chan_base};
}

/* ---- driver -------------------------------------------------------------------------------- */

typedef struct wg_job {
    const hg_wino_geom *g;
    wg_kernels k;
    wg_plan p;
    int64_t OH, OW, TY, TX; /* output size, tile rows and columns per image */
    int64_t vld;            /* row length of V and M: tiles per block rounded up to 8 */
    int m;                  /* tile size: 4, else 2 */
    const float *x, *w, *b;
    float *y, *u, *slots;
    const hg_post *post;    /* applied to each output row segment before it is stored */
} wg_job;

/* Filters [f0, f1) of the weight transform. */
static void wt_range(void *ctx, int64_t f0, int64_t f1)
{
    const wg_job *j = ctx;
    const int64_t C = j->g->C, us = xi_stride(j->g->F * C);
    for (int64_t f = f0; f < f1; f++)
        (j->m == 4 ? j->k.wt4_filt : j->k.wt_filt)(j->w + f * C * 9, C, j->u + f * C, us);
}

/* The segments of tiles [t0, t1) (at most WG_TB); returns their count. */
static int64_t block_segs(const wg_job *j, int64_t t0, int64_t t1, wg_seg *segs)
{
    int64_t per = j->TY * j->TX, ns = 0;
    for (int64_t t = t0; t < t1; ns++) {
        wg_seg *s = &segs[ns];
        int64_t r;
        s->n = t / per;
        r = t - s->n * per;
        s->ty = r / j->TX;
        s->tx = r - s->ty * j->TX;
        s->len = j->TX - s->tx < t1 - t ? j->TX - s->tx : t1 - t;
        s->pos = t - t0;
        t += s->len;
    }
    return ns;
}

/* Input transform of channels [c0, c1) of tiles [t0, t1) into V (row stride vld). */
static void in_part(const wg_job *j, int64_t t0, int64_t t1, float *V, int64_t c0, int64_t c1)
{
    const hg_wino_geom *g = j->g;
    const int64_t HW = g->H * g->W, nt = t1 - t0, n8 = (nt + 7) & ~(int64_t)7;
    const int64_t vld = j->vld, vs = xi_stride(g->C * vld);
    const int rows = j->m == 4 ? 36 : 16; /* staged columns: a window's */
    wg_seg segs[WG_TB];
    float S[36 * WG_VLD];
    int64_t nseg = block_segs(j, t0, t1, segs);
    for (int r = 0; r < rows; r++) /* the padding columns of the last vector */
        memset(S + r * n8 + nt, 0, sizeof(float) * (size_t)(n8 - nt));
    wg_src src = {j->x, g->C * HW, g->H, g->W, g->ph, g->pw};
    for (int64_t c = c0; c < c1; c++) {
        src.x0 = j->x + c * HW;
        (j->m == 4 ? j->k.in4_chan : j->k.in_chan)(&src, segs, nseg, n8, S, V + c * vld, vs);
    }
}

/* out_part for 4x4 tiles: four output rows a tile row. */
static void out4_part(const wg_job *j, int64_t t0, int64_t t1, const float *M, int64_t f0,
                      int64_t f1)
{
    const int64_t F = j->g->F, P = j->OH * j->OW, OW = j->OW, vld = j->vld, nt = t1 - t0;
    const int64_t ms = xi_stride(F * vld);
    wg_seg segs[WG_TB];
    float rb[4][4 * WG4_TB + 32];
    float *r[4] = {rb[0], rb[1], rb[2], rb[3]};
    int64_t nseg = block_segs(j, t0, t1, segs);
    for (int64_t f = f0; f < f1; f++) {
        j->k.out4_chan(M + f * vld, ms, nt, j->b ? j->b[f] : 0.0f, r);
        for (int a = 0; a < 4; a++) hg_post_f32(j->post, r[a], 4 * nt);
        for (int64_t q = 0; q < nseg; q++) { /* rows and columns past the output: dropped */
            const wg_seg *s = &segs[q];
            int64_t oy = 4 * s->ty, ox = 4 * s->tx, w = 4 * s->len;
            if (ox + w > OW) w = OW - ox;
            float *y0 = j->y + (s->n * F + f) * P + oy * OW + ox;
            for (int a = 0; a < 4 && oy + a < j->OH; a++)
                memcpy(y0 + a * OW, r[a] + 4 * s->pos, sizeof(float) * (size_t)w);
        }
    }
}

/* Output transform of filters [f0, f1) of tiles [t0, t1) from M (row stride vld). */
static void out_part(const wg_job *j, int64_t t0, int64_t t1, const float *M, int64_t f0,
                     int64_t f1)
{
    if (j->m == 4) {
        out4_part(j, t0, t1, M, f0, f1);
        return;
    }
    const int64_t F = j->g->F, P = j->OH * j->OW, OW = j->OW, vld = j->vld;
    const int64_t ms = xi_stride(F * vld);
    wg_seg segs[WG_TB];
    float r0[2 * WG_VLD], r1[2 * WG_VLD];
    int64_t nseg = block_segs(j, t0, t1, segs);
    for (int64_t f = f0; f < f1; f++) {
        j->k.out_chan(M + f * vld, ms, t1 - t0, j->b ? j->b[f] : 0.0f, r0, r1);
        hg_post_f32(j->post, r0, 2 * (t1 - t0));
        hg_post_f32(j->post, r1, 2 * (t1 - t0));
        for (int64_t q = 0; q < nseg; q++) { /* rows and columns past the output: dropped */
            const wg_seg *s = &segs[q];
            int64_t oy = 2 * s->ty, ox = 2 * s->tx, w = 2 * s->len;
            if (ox + w > OW) w = OW - ox;
            float *y0 = j->y + (s->n * F + f) * P + oy * OW + ox;
            memcpy(y0, r0 + 2 * s->pos, sizeof(float) * (size_t)w);
            if (oy + 1 < j->OH) memcpy(y0 + OW, r1 + 2 * s->pos, sizeof(float) * (size_t)w);
        }
    }
}

/* The 16 products M[xi] = U[xi] . V[xi] of a block of nt tiles (split over the pool when called
 * outside it and big enough). */
static void products(const wg_job *j, int64_t nt, const float *V, float *M)
{
    const int64_t C = j->g->C, F = j->g->F, vld = j->vld;
    hg_gemm_batch_f32(false, false, nxi(j->m), F, nt, C, 1.0f, j->u, C, xi_stride(F * C), V, vld,
                      xi_stride(C * vld), 0.0f, M, vld, xi_stride(F * vld));
}

/* Slots [s0, s1): slot s runs its contiguous share of the blocks through its V and M. */
static void slot_range(void *ctx, int64_t s0, int64_t s1)
{
    const wg_job *j = ctx;
    const int64_t T = ntiles(j->g, j->m), tb = j->p.tb;
    for (int64_t s = s0; s < s1; s++) {
        float *V = j->slots + s * slot_floats(j->g, tb, j->m);
        float *M = V + nxi(j->m) * xi_stride(j->g->C * j->vld);
        int64_t b0 = j->p.blocks * s / j->p.slots, b1 = j->p.blocks * (s + 1) / j->p.slots;
        for (int64_t bk = b0; bk < b1; bk++) {
            int64_t t0 = bk * tb, t1 = t0 + tb < T ? t0 + tb : T;
            in_part(j, t0, t1, V, 0, j->g->C);
            products(j, t1 - t0, V, M);
            out_part(j, t0, t1, M, 0, j->g->F);
        }
    }
}

/* One block of all tiles, each phase split over the pool. */
static void one_in(void *ctx, int64_t c0, int64_t c1)
{
    const wg_job *j = ctx;
    in_part(j, 0, ntiles(j->g, j->m), j->slots, c0, c1);
}

static void one_out(void *ctx, int64_t f0, int64_t f1)
{
    const wg_job *j = ctx;
    out_part(j, 0, ntiles(j->g, j->m), j->slots + nxi(j->m) * xi_stride(j->g->C * j->vld), f0, f1);
}

void hg_winograd_fwd_f32(const hg_wino_geom *g, const float *x, const float *w, const float *b,
                         float *y, const hg_post *post, void *ws, size_t ws_bytes)
{
    int64_t threads = hg_get_num_threads();
    const int m = choose_m(g);
    wg_plan p = make_plan(g, threads < 1 ? 1 : threads, m);
    if (p.blocks == 0) return;
    /* Fit the workspace (the thread count may have grown since it was sized): fewer slots,
     * then smaller blocks. */
    int64_t avail = (int64_t)(ws_bytes / sizeof(float)) - u_floats(g, m);
    if (p.slots * slot_floats(g, p.tb, m) > avail) {
        p.slots = avail / slot_floats(g, p.tb, m);
        if (p.slots < 1) { /* one slot of blocks of at least 1 tile fits (see winograd.h) */
            p.slots = 1;
            while (p.tb > 1 && slot_floats(g, p.tb, m) > avail) p.tb--;
            p.blocks = (ntiles(g, m) + p.tb - 1) / p.tb;
        }
    }
    wg_job j = {.g = g,
                .k = pick_kernels(),
                .p = p,
                .x = x,
                .w = w,
                .b = b,
                .y = y,
                .post = post,
                .u = ws,
                .m = m,
                .OH = g->H + 2 * g->ph - 2,
                .OW = g->W + 2 * g->pw - 2};
    j.TY = tiles_y(g, m);
    j.TX = tiles_x(g, m);
    j.slots = j.u + u_floats(g, m);
    j.vld = row_len(p.tb);
    /* grains: about 16K floats written per chunk of a transform */
    hg_parallel_for(g->F, 1024 / g->C + 1, wt_range, &j);
    if (p.slots > 1) {
        hg_parallel_for(p.slots, 1, slot_range, &j);
    } else if (p.blocks > 1) {
        slot_range(&j, 0, 1);
    } else {
        int64_t T = ntiles(g, m);
        hg_parallel_for(g->C, 1024 / T + 1, one_in, &j);
        products(&j, T, j.slots, j.slots + nxi(m) * xi_stride(g->C * j.vld));
        hg_parallel_for(g->F, 1024 / T + 1, one_out, &j);
    }
}

/* ---- data gradient --------------------------------------------------------------------------- */

/* dx = conv(dy, w') with w'[c][f] = w[f][c] turned by 180 degrees and padding 2 - p: the forward
 * above on the output gradient (its input size is the forward's output size, and its output
 * size the forward's input size). */
static hg_wino_geom dgrad_geom(const hg_wino_geom *g)
{
    return (hg_wino_geom){.N = g->N,
                          .C = g->F,
                          .F = g->C,
                          .H = g->H + 2 * g->ph - 2,
                          .W = g->W + 2 * g->pw - 2,
                          .ph = 2 - g->ph,
                          .pw = 2 - g->pw};
}

/* floats of w' at the front of the data gradient's workspace */
static int64_t flip_floats(const hg_wino_geom *g) { return lines(9 * g->F * g->C); }

bool hg_winograd_bwd_data_pays(const hg_wino_geom *g)
{
    if (g->ph > 2 || g->pw > 2) return false;
    hg_wino_geom d = dgrad_geom(g);
    return d.H > 0 && d.W > 0 && hg_winograd_pays(&d);
}

size_t hg_winograd_bwd_data_workspace(const hg_wino_geom *g, int64_t threads)
{
    hg_wino_geom d = dgrad_geom(g);
    return sizeof(float) * (size_t)flip_floats(g) + hg_winograd_workspace(&d, threads);
}

typedef struct flip_job {
    const float *w;
    float *wf;
    int64_t F, C;
} flip_job;

/* Input channels [c0, c1): wf[c][f][t] = w[f][c][8 - t]. */
static void flip_range(void *ctx, int64_t c0, int64_t c1)
{
    const flip_job *j = ctx;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t f = 0; f < j->F; f++) {
            const float *src = j->w + (f * j->C + c) * 9;
            float *dst = j->wf + (c * j->F + f) * 9;
            for (int t = 0; t < 9; t++) dst[t] = src[8 - t];
        }
}

void hg_winograd_bwd_data_f32(const hg_wino_geom *g, const float *dy, const float *w, float *dx,
                              void *ws, size_t ws_bytes)
{
    hg_wino_geom d = dgrad_geom(g);
    size_t fb = sizeof(float) * (size_t)flip_floats(g);
    flip_job fj = {w, ws, g->F, g->C};
    hg_parallel_for(g->C, 4096 / (9 * g->F + 1) + 1, flip_range, &fj);
    hg_winograd_fwd_f32(&d, dy, fj.wf, NULL, dx, NULL, (char *)ws + fb, ws_bytes - fb);
}

/* ---- weight gradient ------------------------------------------------------------------------- */

/* With V = B^T d B of a tile's input window and D = A dy A^T of its output gradient, the
 * forward's y = A^T (U . V) A gives dL/dU = D . V, and U = G g G^T gives dL/dg = G^T (dL/dU) G.
 * Summed over tiles (G^T . G is linear, so it runs once at the end):
 *     Z[xi] (F x C) = sum over blocks of D[xi] (F x tb) . V[xi]^T (tb x C),   xi = 0..15,
 *     dw[f][c] = G^T Z[.][f][c] G:
 * 16 multiply-adds per tile and channel pair against im2col's 36, on the forward's tiles and
 * input transform (tiles past the output see zero gradients; padding is zeros). Each slot
 * sums its blocks into its own Z; the slots' Z are added in the final transform, so no
 * thread ever writes another's memory. */

static int64_t z_floats(const hg_wino_geom *g, int m) { return u_floats(g, m); }

/* One slot of the weight gradient: V, D and Z. */
static int64_t wslot_floats(const hg_wino_geom *g, int64_t tb, int m)
{
    return slot_floats(g, tb, m) + z_floats(g, m);
}

bool hg_winograd_bwd_weight_pays(const hg_wino_geom *g) { return hg_winograd_pays(g); }

/* Few tiles (at most WGW_WHOLE_TILES, where the slot path would give each of two threads one
 * block): one block of all tiles, whose 16 products split over the pool, instead of
 * per-thread blocks, each with its own Z to sum (16 MB a thread at 512 channels). Where V and D
 * of all tiles take at most WGW_WHOLE floats. ResNet-18's 7x7 layers at batch 16 (256 tiles, 2
 * threads): 18.1 -> 15.3 ms; its 14x14 ones (784 tiles) lost, 10.4 -> 12.3 ms. */
#define WGW_WHOLE (8 << 20)
#define WGW_WHOLE_TILES (2 * WG_TB)

static wg_plan wgrad_plan(const hg_wino_geom *g, int64_t threads, int m)
{
    int64_t T = ntiles(g, m);
    if (T > 0 && T <= WGW_WHOLE_TILES && nxi(m) * (g->C + g->F) * row_len(T) <= WGW_WHOLE)
        return (wg_plan){.tb = T, .blocks = 1, .slots = 1};
    return make_plan(g, threads, m);
}

size_t hg_winograd_bwd_weight_workspace(const hg_wino_geom *g, int64_t threads)
{
    const int m = choose_m_wgrad(g);
    wg_plan p = wgrad_plan(g, threads < 1 ? 1 : threads, m);
    return sizeof(float) * (size_t)(p.blocks == 0 ? 0 : p.slots * wslot_floats(g, p.tb, m));
}

typedef struct wgw_job {
    wg_job j;          /* the forward's job: geometry, plan, kernels, x, tile counts, vld */
    const float *dy;   /* [N, F, OH, OW] */
    float *dw;         /* [F, C, 3, 3] */
    int64_t sf;        /* floats per slot */
} wgw_job;

static float *slot_v(const wgw_job *w, int64_t s) { return w->j.slots + s * w->sf; }
static float *slot_d(const wgw_job *w, int64_t s)
{
    return slot_v(w, s) + nxi(w->j.m) * xi_stride(w->j.g->C * w->j.vld);
}
static float *slot_z(const wgw_job *w, int64_t s)
{
    return slot_d(w, s) + nxi(w->j.m) * xi_stride(w->j.g->F * w->j.vld);
}

/* D of filters [f0, f1) of tiles [t0, t1) (row stride vld). */
static void dy_part(const wgw_job *w, int64_t t0, int64_t t1, float *D, int64_t f0, int64_t f1)
{
    const wg_job *j = &w->j;
    const int64_t P = j->OH * j->OW, nt = t1 - t0, n8 = (nt + 7) & ~(int64_t)7;
    const int64_t vld = j->vld, ds = xi_stride(j->g->F * vld);
    const int rows = j->m == 4 ? 16 : 4; /* staged columns: a tile's outputs */
    wg_seg segs[WG_TB];
    float S[16 * WG_VLD];
    int64_t nseg = block_segs(j, t0, t1, segs);
    for (int r = 0; r < rows; r++) memset(S + r * n8 + nt, 0, sizeof(float) * (size_t)(n8 - nt));
    wg_src src = {NULL, j->g->F * P, j->OH, j->OW, 0, 0};
    for (int64_t f = f0; f < f1; f++) {
        src.x0 = w->dy + f * P;
        (j->m == 4 ? j->k.dy4_chan : j->k.dy_chan)(&src, segs, nseg, n8, S, D + f * vld, ds);
    }
}

/* Z[xi] (+)= D[xi] . V[xi]^T of a block of nt tiles (split over the pool when called outside it
 * and big enough). */
static void wproducts(const wgw_job *w, int64_t nt, const float *V, const float *D, float *Z,
                      bool first)
{
    const int64_t C = w->j.g->C, F = w->j.g->F, vld = w->j.vld;
    hg_gemm_batch_f32(false, true, nxi(w->j.m), F, C, nt, 1.0f, D, vld, xi_stride(F * vld), V, vld,
                      xi_stride(C * vld), first ? 0.0f : 1.0f, Z, C, xi_stride(F * C));
}

static void wslot_range(void *ctx, int64_t s0, int64_t s1)
{
    const wgw_job *w = ctx;
    const wg_job *j = &w->j;
    const int64_t T = ntiles(j->g, j->m), tb = j->p.tb;
    for (int64_t s = s0; s < s1; s++) {
        float *V = slot_v(w, s), *D = slot_d(w, s), *Z = slot_z(w, s);
        int64_t b0 = j->p.blocks * s / j->p.slots, b1 = j->p.blocks * (s + 1) / j->p.slots;
        for (int64_t bk = b0; bk < b1; bk++) {
            int64_t t0 = bk * tb, t1 = t0 + tb < T ? t0 + tb : T;
            in_part(j, t0, t1, V, 0, j->g->C);
            dy_part(w, t0, t1, D, 0, j->g->F);
            wproducts(w, t1 - t0, V, D, Z, bk == b0);
        }
    }
}

/* One block of all tiles (vld >= the tile count), its transforms split over the pool by
 * channel and by filter, each in runs of at most WG_TB tiles (the transforms' staging size). */
static void wone_in(void *ctx, int64_t c0, int64_t c1)
{
    const wgw_job *w = ctx;
    const int64_t T = ntiles(w->j.g, w->j.m);
    for (int64_t t = 0; t < T; t += WG_TB)
        in_part(&w->j, t, t + WG_TB < T ? t + WG_TB : T, slot_v(w, 0) + t, c0, c1);
}

static void wone_dy(void *ctx, int64_t f0, int64_t f1)
{
    const wgw_job *w = ctx;
    const int64_t T = ntiles(w->j.g, w->j.m);
    for (int64_t t = 0; t < T; t += WG_TB)
        dy_part(w, t, t + WG_TB < T ? t + WG_TB : T, slot_d(w, 0) + t, f0, f1);
}

/* z[xi] = the slots' Z[xi][f][c] summed, xi < nxi. */
static void sum_z(const wgw_job *w, int64_t f, int64_t c, float *z, int nz)
{
    const int64_t C = w->j.g->C, zs = xi_stride(w->j.g->F * C), ns = w->j.p.slots;
    for (int xi = 0; xi < nz; xi++) {
        float acc = 0.0f;
        for (int64_t s = 0; s < ns; s++) acc += slot_z(w, s)[xi * zs + f * C + c];
        z[xi] = acc;
    }
}

/* F(4x4): dw of filters [f0, f1) = G^T Z G with WG4's G (6 x 3, see wt4_filt). */
static void wfinal4_range(void *ctx, int64_t f0, int64_t f1)
{
    const wgw_job *w = ctx;
    const int64_t C = w->j.g->C;
    for (int64_t f = f0; f < f1; f++)
        for (int64_t c = 0; c < C; c++) {
            float z[36], t[3][6];
            sum_z(w, f, c, z, 36);
            for (int q = 0; q < 6; q++) { /* G^T down the columns */
                const float z0 = z[q], z1 = z[6 + q], z2 = z[12 + q], z3 = z[18 + q];
                const float z4 = z[24 + q], z5 = z[30 + q];
                t[0][q] = 0.25f * z0 - (1.0f / 6.0f) * (z1 + z2) + (1.0f / 24.0f) * (z3 + z4);
                t[1][q] = (1.0f / 6.0f) * (z2 - z1) + (1.0f / 12.0f) * (z3 - z4);
                t[2][q] = (1.0f / 6.0f) * (z3 + z4 - z1 - z2) + z5;
            }
            float *o = w->dw + (f * C + c) * 9;
            for (int r = 0; r < 3; r++) { /* and G along the rows */
                const float *u = t[r];
                o[3 * r] = 0.25f * u[0] - (1.0f / 6.0f) * (u[1] + u[2]) +
                           (1.0f / 24.0f) * (u[3] + u[4]);
                o[3 * r + 1] = (1.0f / 6.0f) * (u[2] - u[1]) + (1.0f / 12.0f) * (u[3] - u[4]);
                o[3 * r + 2] = (1.0f / 6.0f) * (u[3] + u[4] - u[1] - u[2]) + u[5];
            }
        }
}

/* F(2x2): dw of filters [f0, f1) = G^T Z G. */
static void wfinal_range(void *ctx, int64_t f0, int64_t f1)
{
    const wgw_job *w = ctx;
    const int64_t C = w->j.g->C;
    for (int64_t f = f0; f < f1; f++)
        for (int64_t c = 0; c < C; c++) {
            float z[16], t[3][4];
            sum_z(w, f, c, z, 16);
            for (int q = 0; q < 4; q++) { /* G^T down the columns */
                t[0][q] = z[q] + 0.5f * (z[4 + q] + z[8 + q]);
                t[1][q] = 0.5f * (z[4 + q] - z[8 + q]);
                t[2][q] = 0.5f * (z[4 + q] + z[8 + q]) + z[12 + q];
            }
            float *o = w->dw + (f * C + c) * 9;
            for (int r = 0; r < 3; r++) { /* and G along the rows */
                o[3 * r] = t[r][0] + 0.5f * (t[r][1] + t[r][2]);
                o[3 * r + 1] = 0.5f * (t[r][1] - t[r][2]);
                o[3 * r + 2] = 0.5f * (t[r][1] + t[r][2]) + t[r][3];
            }
        }
}

void hg_winograd_bwd_weight_f32(const hg_wino_geom *g, const float *x, const float *dy, float *dw,
                                void *ws, size_t ws_bytes)
{
    int64_t threads = hg_get_num_threads();
    const int m = choose_m_wgrad(g);
    wg_plan p = wgrad_plan(g, threads < 1 ? 1 : threads, m);
    if (p.blocks == 0) { /* no tiles: no products */
        memset(dw, 0, sizeof(float) * (size_t)(g->F * g->C * 9));
        return;
    }
    /* Fit the workspace as the forward does: fewer slots, then smaller blocks. */
    int64_t avail = (int64_t)(ws_bytes / sizeof(float));
    if (p.slots * wslot_floats(g, p.tb, m) > avail) {
        p.slots = avail / wslot_floats(g, p.tb, m);
        if (p.slots < 1) {
            p.slots = 1;
            if (p.tb > WG_TB) p.tb = WG_TB; /* blocks of the slot path: staged whole */
            while (p.tb > 1 && wslot_floats(g, p.tb, m) > avail) p.tb--;
            p.blocks = (ntiles(g, m) + p.tb - 1) / p.tb;
        }
    }
    wgw_job w = {.j = {.g = g,
                       .k = pick_kernels(),
                       .p = p,
                       .x = x,
                       .m = m,
                       .OH = g->H + 2 * g->ph - 2,
                       .OW = g->W + 2 * g->pw - 2,
                       .slots = ws},
                 .dy = dy,
                 .dw = dw};
    w.j.TY = tiles_y(g, m);
    w.j.TX = tiles_x(g, m);
    w.j.vld = row_len(p.tb);
    w.sf = wslot_floats(g, p.tb, m);
    if (p.slots > 1) {
        hg_parallel_for(p.slots, 1, wslot_range, &w);
    } else if (p.blocks > 1) {
        wslot_range(&w, 0, 1);
    } else {
        int64_t T = ntiles(g, m);
        hg_parallel_for(g->C, 1024 / T + 1, wone_in, &w);
        hg_parallel_for(g->F, 1024 / T + 1, wone_dy, &w);
        wproducts(&w, T, slot_v(&w, 0), slot_d(&w, 0), slot_z(&w, 0), true);
    }
    hg_parallel_for(g->F, 4096 / (nxi(m) * g->C * p.slots) + 1,
                    m == 4 ? wfinal4_range : wfinal_range, &w);
}
