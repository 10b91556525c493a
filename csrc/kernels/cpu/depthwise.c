/* Direct depthwise convolution (see depthwise.h). Every loop nest walks output rows (o0, o1) and
 * kernel taps; the innermost loop runs along the last axis over the range of positions whose
 * input lies inside the image, computed per tap, so it carries no bounds checks and vectorises
 * (stride 1 and 2 get their own loops). The plane functions are compiled once per instruction
 * set (AVX-512, AVX2+FMA, baseline) through function attributes and picked at run time, as the
 * small-side GEMM kernels are: depthwise_tmpl.h holds them, included once per element type and
 * instruction set. */
#include "kernels/cpu/depthwise.h"

#include <stdbool.h>
#include <string.h>

#include "core/env.h"
#include "core/parallel.h"
#include "kernels/cpu/gather2.h"

/* Positions o in [0, n) whose input index o*s + ofs lies in [0, size). */
static inline void dw_range(int64_t ofs, int64_t s, int64_t size, int64_t n, int64_t *lo,
                            int64_t *hi)
{
    int64_t l = ofs >= 0 ? 0 : (-ofs + s - 1) / s;
    int64_t h = size - ofs <= 0 ? 0 : (size - ofs - 1) / s + 1;
    if (h > n) h = n;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Stack buffer of the forward's padded plane (pool threads have megabytes of stack); larger
 * planes take the range-checked loops. */
#define DW_BUF_BYTES (160 * 1024)

/* Per tap along the last axis: its input offset and the range of output positions inside. */
typedef struct dw_ranges {
    int64_t ofs[HG_DW_MAX_K], lo[HG_DW_MAX_K], hi[HG_DW_MAX_K];
} dw_ranges;

static dw_ranges dw_make_ranges(const hg_dw_geom *g)
{
    dw_ranges r;
    for (int64_t k2 = 0; k2 < g->k[2] && k2 < HG_DW_MAX_K; k2++) {
        r.ofs[k2] = k2 * g->d[2] - g->p[2];
        dw_range(r.ofs[k2], g->s[2], g->im[2], g->out[2], &r.lo[k2], &r.hi[k2]);
    }
    return r;
}

/* Offset of the input row (i0, i1) that output row (o0, o1) reads through tap (k0, k1), or -1
 * when that row lies in the padding. */
static inline int64_t dw_in_row(const hg_dw_geom *g, int64_t o0, int64_t o1, int64_t k0, int64_t k1)
{
    int64_t i0 = o0 * g->s[0] - g->p[0] + k0 * g->d[0];
    int64_t i1 = o1 * g->s[1] - g->p[1] + k1 * g->d[1];
    if (i0 < 0 || i0 >= g->im[0] || i1 < 0 || i1 >= g->im[1]) return -1;
    return (i0 * g->im[1] + i1) * g->im[2];
}

/* Output width from which fwd_3x3 computes row by row straight into the output (narrower:
 * one long loop over the padded rows into a buffer, then the rows copied out). */
#define DW_DIRECT_W 32

/* Whether the plane kernel fwd_3x3 takes this geometry: 2-D (a leading size of 1), 3x3 taps
 * without dilation, strides (1, 1) or (2, 2), padding at most 2 (MobileNet's is 1), and its
 * copies of the padded plane (and output buffer) fit DW_BUF_BYTES. */
static inline bool dw_is_3x3(const hg_dw_geom *g, size_t esize)
{
    if (g->im[0] != 1 || g->k[0] != 1 || g->k[1] != 3 || g->k[2] != 3 || g->s[0] != 1 ||
        g->d[0] != 1 || g->d[1] != 1 || g->d[2] != 1 || g->s[1] != g->s[2] ||
        (g->s[1] != 1 && g->s[1] != 2) || g->p[0] != 0 || g->p[1] > 2 || g->p[2] > 2 ||
        g->out[0] != 1 || g->out[1] < 1 || g->out[2] < 1)
        return false;
    double OH = (double)g->out[1], OW = (double)g->out[2], elems;
    bool ext = g->out[2] < DW_DIRECT_W;
    if (g->s[1] == 1) elems = (OH + 2) * (OW + 2) + (ext ? OH * (OW + 2) : 0);
    else elems = (4 * OH + 2) * (OW + 1) + (ext ? OH * (OW + 1) : 0);
    return elems * (double)esize <= DW_BUF_BYTES;
}

/* The geometry of a stride-1 3x3 layer's data gradient as a forward 3x3 pass over dy: dy's
 * plane in, the data's plane out, padding 2 - p (the filter turned by 180 degrees). */
static inline hg_dw_geom dw_dx_geom(const hg_dw_geom *g)
{
    hg_dw_geom t = *g;
    for (int a = 1; a < 3; a++) {
        t.im[a] = g->out[a];
        t.out[a] = g->im[a];
        t.p[a] = 2 - g->p[a];
    }
    return t;
}

/* Whether the data gradient of a stride-1 dw_is_3x3 geometry runs as fwd_3x3 on dy: that
 * transposed geometry (dw_dx_geom) must fit the buffer too. */
static inline bool dw_dx_is_3x3(const hg_dw_geom *g, size_t esize)
{
    hg_dw_geom t = dw_dx_geom(g);
    return dw_is_3x3(&t, esize);
}

/* Whether bwd_dx_3x3s2's padded dy plane and row fit the buffer. */
static inline bool dw_dx_s2_fits(const hg_dw_geom *g, size_t esize)
{
    double DP = (double)g->out[2] + 3, DR = (double)g->out[1] + 3;
    return (DR * DP + 2 * DP) * (double)esize <= DW_BUF_BYTES;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define DW_HAVE_X86 1
#define TGT_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define TGT_AVX2 __attribute__((target("avx2,fma")))
#include <immintrin.h>

#include "kernels/cpu/post_avx2.h"
#include "kernels/cpu/post_avx512.h"
#include "kernels/cpu/tr16.h"
#include "kernels/cpu/tr8.h"
#endif

typedef struct dw_kernels_f32 {
    void (*fwd)(const hg_dw_geom *, const dw_ranges *, const float *, const float *, float,
                float *);
    void (*dw)(const hg_dw_geom *, const dw_ranges *, const float *, const float *, float *);
    void (*dx)(const hg_dw_geom *, const dw_ranges *, const float *, const float *, float *);
} dw_kernels_f32;
typedef struct dw_kernels_f64 {
    void (*fwd)(const hg_dw_geom *, const dw_ranges *, const double *, const double *, double,
                double *);
    void (*dw)(const hg_dw_geom *, const dw_ranges *, const double *, const double *, double *);
    void (*dx)(const hg_dw_geom *, const dw_ranges *, const double *, const double *, double *);
} dw_kernels_f64;

/* The planes of one element type: for each instruction set the CPU may have, T, NAME and TGT
 * for depthwise_tmpl.h; then pick_<suffix>, the set this CPU runs. */
#define DW_PICK(SUF, ISA)                                                                       \
    return (dw_kernels_##SUF){fwd_plane_##SUF##_##ISA, bwd_dw_##SUF##_##ISA, bwd_dx_##SUF##_##ISA}

#define T float
#define DW_GATHER2 hg_gather2_f32
#define TGT
#define NAME(x) x##_f32_base
#include "kernels/cpu/depthwise_tmpl.h"
#undef TGT
#undef NAME
#ifdef DW_HAVE_X86
#define TGT TGT_AVX2
#define NAME(x) x##_f32_avx2
#include "kernels/cpu/depthwise_tmpl.h"
#undef TGT
#undef NAME
#define TGT TGT_AVX512
#define NAME(x) x##_f32_avx512
#include "kernels/cpu/depthwise_tmpl.h"
#undef TGT
#undef NAME
#endif
#undef T

#undef DW_GATHER2

static dw_kernels_f32 pick_f32(void)
{
#ifdef DW_HAVE_X86
    if (__builtin_cpu_supports("avx512f")) DW_PICK(f32, avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) DW_PICK(f32, avx2);
#endif
    DW_PICK(f32, base);
}

#define T double
#define DW_GATHER2 hg_gather2_f64
#define TGT
#define NAME(x) x##_f64_base
#include "kernels/cpu/depthwise_tmpl.h"
#undef TGT
#undef NAME
#ifdef DW_HAVE_X86
#define TGT TGT_AVX2
#define NAME(x) x##_f64_avx2
#include "kernels/cpu/depthwise_tmpl.h"
#undef TGT
#undef NAME
#define TGT TGT_AVX512
#define NAME(x) x##_f64_avx512
#include "kernels/cpu/depthwise_tmpl.h"
#undef TGT
#undef NAME
#endif
#undef T

#undef DW_GATHER2

static dw_kernels_f64 pick_f64(void)
{
#ifdef DW_HAVE_X86
    if (__builtin_cpu_supports("avx512f")) DW_PICK(f64, avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) DW_PICK(f64, avx2);
#endif
    DW_PICK(f64, base);
}

/* ---- channel blocks: float32 3x3 layers with small planes on AVX-512 or AVX2 ---------------- */

/* A plane of 14x14 or 7x7 outputs is too short for the plane kernel's vectors along a row: per
 * channel it pays for the padded copy, nine taps over a few vectors, the copy out and the post
 * as separate short loops (MobileNetV2's 960 channels at 7x7, batch 1: 65 us on 2 threads,
 * where ONNX Runtime's channel-blocked kernel takes 20). Here 16 channels (AVX2: 8) go
 * together: their padded planes are transposed (tr16.h, tr8.h) into one vector per pixel, each
 * output pixel is nine vector multiply-adds with every lane busy, bias and post are applied to
 * the vector, and the outputs are transposed back. The sums run in dw3_plane's order (bias, then
 * the taps row by row, each a fused multiply-add), so the results are the
 * same bit for bit. Sizes: at most DWB_MAX_IN padded input pixels and DWB_MAX_OUT outputs per
 * plane (their buffers, 64 + 16 KiB, on the pool thread's stack). On the 2-core AVX2 machine
 * (AMD EPYC, one thread, batch 1, minimum of 25 rounds, noisy): 384 x 14 x 14 177 -> 70-96 us
 * against the plane kernel, 576 x 14 x 14 256 -> 102-148, 960 x 7 x 7 171 -> 58-92. */
#define DWB_MAX_IN 1024
#define DWB_MAX_OUT 256

/* The vector set of the float32 3x3 kernels below: 2 AVX-512, 1 AVX2 + FMA, 0 neither.
 * HG_DW_AVX2=1 takes the AVX2 kernels on an AVX-512 CPU (for tests: they give the same bits). */
static int dw_simd(void)
{
#ifdef DW_HAVE_X86
    static atomic_int avx2 = -1;
    if (__builtin_cpu_supports("avx512f") && !hg_env_on_once(&avx2, "HG_DW_AVX2")) return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
    return 0;
}

/* Whether the blocked forward takes g (float32, AVX-512 or AVX2, HG_NO_DW_BLOCKED not set): one
 * filter per channel, dw_is_3x3's geometry, and planes within the limits. */
static bool dwb_applies(const hg_dw_geom *g)
{
#ifdef DW_HAVE_X86
    static atomic_int off = -1;
    if (hg_env_on_once(&off, "HG_NO_DW_BLOCKED") || !dw_simd() || g->mult != 1 ||
        !dw_is_3x3(g, sizeof(float)))
        return false;
    int64_t s = g->s[1], OH = g->out[1], OW = g->out[2];
    return ((OH - 1) * s + 3) * ((OW - 1) * s + 3) <= DWB_MAX_IN && OH * OW <= DWB_MAX_OUT;
#else
    (void)g;
    return false;
#endif
}

/* Units per parallel chunk for units of `per` multiply-adds each. */
static int64_t dw_grain(int64_t per) { return per > 0 ? HG_GRAIN_ELEMWISE / per + 1 : 1; }

#define DW_DRIVERS(T, SUF)                                                                      \
    typedef struct {                                                                            \
        const hg_dw_geom *g;                                                                    \
        dw_kernels_##SUF k;                                                                     \
        dw_ranges rg;                                                                           \
        const T *x, *w, *b, *dy;                                                                \
        T *y, *dx, *dw, *db;                                                                    \
        int64_t I, P, K;                                                                        \
        const hg_post *post;                                                                    \
    } dw_job_##SUF;                                                                             \
                                                                                                \
    static void fwd_range_##SUF(void *ctx, int64_t u0, int64_t u1)                              \
    {                                                                                           \
        const dw_job_##SUF *j = ctx;                                                            \
        const int64_t F = j->g->C * j->g->mult;                                                 \
        for (int64_t u = u0; u < u1; u++) { /* u = n * F + f */                                 \
            int64_t n = u / F, f = u - n * F, c = f / j->g->mult;                               \
            j->k.fwd(j->g, &j->rg, j->x + (n * j->g->C + c) * j->I, j->w + f * j->K,            \
                     j->b ? j->b[f] : (T)0, j->y + u * j->P);                                   \
            hg_post_##SUF(j->post, j->y + u * j->P, j->P);                                      \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    void hg_depthwise_fwd_##SUF(const hg_dw_geom *g, const T *x, const T *w, const T *b, T *y,  \
                                const hg_post *post)                                            \
    {                                                                                           \
        if (DW_BLOCKED_##SUF(g, x, w, b, y, post)) return;                                      \
        dw_job_##SUF j = {.g = g, .k = pick_##SUF(), .x = x, .w = w, .b = b, .y = y,            \
                          .post = post};                                                        \
        j.rg = dw_make_ranges(g);                                                               \
        j.I = g->im[0] * g->im[1] * g->im[2];                                                   \
        j.P = g->out[0] * g->out[1] * g->out[2];                                                \
        j.K = g->k[0] * g->k[1] * g->k[2];                                                      \
        hg_parallel_for(g->N * g->C * g->mult, dw_grain(j.P * j.K), fwd_range_##SUF, &j);       \
    }                                                                                           \
                                                                                                \
    /* Channels [c0, c1) with all their filters and images: no element is shared with another  \
     * channel, and each sum runs in a fixed order. */                                         \
    static void bwd_range_##SUF(void *ctx, int64_t c0, int64_t c1)                              \
    {                                                                                           \
        const dw_job_##SUF *j = ctx;                                                            \
        const hg_dw_geom *g = j->g;                                                             \
        const int64_t M = g->mult, F = g->C * M;                                                \
        for (int64_t c = c0; c < c1; c++) {                                                     \
            for (int64_t f = c * M; f < (c + 1) * M; f++) {                                     \
                if (j->db) {                                                                    \
                    T acc = 0;                                                                  \
                    for (int64_t n = 0; n < g->N; n++) {                                        \
                        const T *r = j->dy + (n * F + f) * j->P;                                \
                        for (int64_t i = 0; i < j->P; i++) acc += r[i];                         \
                    }                                                                           \
                    j->db[f] = acc;                                                             \
                }                                                                               \
                if (j->dw) {                                                                    \
                    memset(j->dw + f * j->K, 0, sizeof(T) * (size_t)j->K);                      \
                    for (int64_t n = 0; n < g->N; n++)                                          \
                        j->k.dw(g, &j->rg, j->dy + (n * F + f) * j->P,                          \
                                j->x + (n * g->C + c) * j->I, j->dw + f * j->K);                \
                }                                                                               \
            }                                                                                   \
            if (j->dx)                                                                          \
                for (int64_t n = 0; n < g->N; n++) {                                            \
                    T *dx = j->dx + (n * g->C + c) * j->I;                                      \
                    memset(dx, 0, sizeof(T) * (size_t)j->I);                                    \
                    for (int64_t f = c * M; f < (c + 1) * M; f++)                               \
                        j->k.dx(g, &j->rg, j->dy + (n * F + f) * j->P, j->w + f * j->K, dx);    \
                }                                                                               \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    void hg_depthwise_bwd_##SUF(const hg_dw_geom *g, const T *dy, const T *x, const T *w,       \
                                T *dx, T *dw, T *db)                                            \
    {                                                                                           \
        dw_job_##SUF j = {.g = g, .k = pick_##SUF(), .x = x, .w = w, .dy = dy, .dx = dx,        \
                          .dw = dw, .db = db};                                                  \
        j.rg = dw_make_ranges(g);                                                               \
        j.I = g->im[0] * g->im[1] * g->im[2];                                                   \
        j.P = g->out[0] * g->out[1] * g->out[2];                                                \
        j.K = g->k[0] * g->k[1] * g->k[2];                                                      \
        int64_t per = g->N * g->mult * j.P * j.K * ((dx != NULL) + (dw != NULL));               \
        hg_parallel_for(g->C, dw_grain(per), bwd_range_##SUF, &j);                              \
    }

/* ---- float32 3x3 planes on AVX-512 or AVX2, straight from the image ----------------------
 * The planes of dw_is_3x3's geometries (any size: no copy, no buffer) for CPUs with AVX-512 or
 * AVX2: each vector of 16 (8) outputs of a row is nine fused multiply-adds, whose operands come
 * from plain loads inside the image and masked ones at its edges (lanes left or right of the
 * image read as zero, as the padded copy's would);
 * at stride 2 each input row's two loads are split into even and odd columns by permutes. The
 * bias starts the sum, the taps follow row by row (the blocked kernel's order: the same bits),
 * and the post-op is applied before the store. Measured against fwd_3x3 (padded copy, then
 * separate multiplies and adds), one thread, batch 1, per plane: 32 x 112 x 112 stride 1
 * 9.3 -> 5.1 us, 96 x 112 x 112 stride 2 5.0 -> 3.8, 144 x 56 x 56 stride 1 2.4 -> 1.7,
 * 192 x 28 x 28 0.57 -> 0.40; on 2 threads the first three layers take 102, 179 and 117 us
 * (ONNX Runtime 103, 131, 100). At stride 2 the permutes, on the same port as half the
 * multiply-adds, bound it. On AVX2 (AMD EPYC, one thread, minimum of 25 rounds) it is ahead of
 * the portable loops at stride 2 (192 x 28 x 28 150 -> 83-100 us, 576 x 14 x 14 180 -> 70-90)
 * and level with them at stride 1 within the noise; with masked loads everywhere it ran at half
 * their speed there. */

/* Whether dw3 takes g: fwd_3x3's geometries without its buffer's limit. */
static bool dw3_applies(const hg_dw_geom *g)
{
#ifdef DW_HAVE_X86
    static atomic_int off = -1;
    if (hg_env_on_once(&off, "HG_NO_DW_DIRECT") || !dw_simd() || g->im[0] != 1 || g->k[0] != 1 ||
        g->k[1] != 3 || g->k[2] != 3 || g->s[0] != 1 || g->d[0] != 1 || g->d[1] != 1 ||
        g->d[2] != 1 || g->s[1] != g->s[2] || (g->s[1] != 1 && g->s[1] != 2) || g->p[0] != 0 ||
        g->p[1] > 2 || g->p[2] > 2 || g->out[0] != 1 || g->out[1] < 1 || g->out[2] < 1)
        return false;
    return true;
#else
    (void)g;
    return false;
#endif
}

/* Output rows per block: their sums are independent chains (one chain of nine dependent
 * multiply-adds per vector would wait on each one's latency), and at stride 1 each input row
 * loaded serves up to three of them. */
#define DW3_ROWS 4

#ifdef DW_HAVE_X86
typedef struct {
    const hg_dw_geom *g;
    const float *x, *w, *b;
    float *y;
    const hg_post *post;
} dw3_job;

typedef struct {
    const hg_dw_geom *g;
    const float *x, *w, *b;
    float *y;
    const hg_post *post;
    int64_t blocks; /* channel blocks per image */
} dwb_job;

/* dw3_tmpl.h in AVX-512 */
#define VW 16
#define V __m512
#define VM __mmask16
#define TGT_V TGT_AVX512
#define VN(x) x##_avx512
#define V_SET1 _mm512_set1_ps
#define V_ZERO _mm512_setzero_ps
#define V_FMA _mm512_fmadd_ps
#define V_LOAD _mm512_load_ps
#define V_STORE _mm512_store_ps
#define V_LOADU _mm512_loadu_ps
#define V_STOREU _mm512_storeu_ps
#define V_MLOAD _mm512_maskz_loadu_ps
#define V_MSTORE _mm512_mask_storeu_ps
#define VM_RANGE(lo, hi) ((__mmask16)(((1u << (hi)) - 1) & ~((1u << (lo)) - 1)))
#define V_EVEN(a, b)                                                                            \
    _mm512_permutex2var_ps(                                                                     \
        a, _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), b)
#define V_ODD(a, b)                                                                             \
    _mm512_permutex2var_ps(                                                                     \
        a, _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1), b)
#define V_POST hg_post_m512
#define V_TR hg_tr16_f32
#include "kernels/cpu/dw3_tmpl.h" /* undefines its parameters */

/* dw3_tmpl.h in AVX2: lane masks are vectors (maskload reads nothing in a masked lane); the
 * even / odd split shuffles within 128-bit halves, then puts the 64-bit quarters in order. */
TGT_AVX2 static inline __m256i dw_lanes8(int64_t lo, int64_t hi)
{
    return _mm256_andnot_si256(hg_lanes8(lo), hg_lanes8(hi));
}
#define VW 8
#define V __m256
#define VM __m256i
#define TGT_V TGT_AVX2
#define VN(x) x##_avx2
#define V_SET1 _mm256_set1_ps
#define V_ZERO _mm256_setzero_ps
#define V_FMA _mm256_fmadd_ps
#define V_LOAD _mm256_load_ps
#define V_STORE _mm256_store_ps
#define V_LOADU _mm256_loadu_ps
#define V_STOREU _mm256_storeu_ps
#define V_MLOAD(m, p) _mm256_maskload_ps(p, m)
#define V_MSTORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define VM_RANGE dw_lanes8
#define V_EVEN(a, b)                                                                            \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8))
#define V_ODD(a, b)                                                                             \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8))
#define V_POST hg_post_m256
#define V_TR hg_tr8_f32
#include "kernels/cpu/dw3_tmpl.h" /* undefines its parameters */
#endif

/* The forward of a float32 layer dw3 takes (true: done). */
static bool dw3_f32(const hg_dw_geom *g, const float *x, const float *w, const float *b, float *y,
                    const hg_post *post)
{
    if (!dw3_applies(g)) return false;
#ifdef DW_HAVE_X86
    dw3_job j = {g, x, w, b, y, post};
    hg_parallel_for(g->N * g->C * g->mult, dw_grain(g->out[1] * g->out[2] * 9),
                    dw_simd() == 2 ? dw3_range_avx512 : dw3_range_avx2, &j);
#endif
    return true;
}

/* The blocked forward of a float32 layer where it applies (true: done). */
static bool blocked_f32(const hg_dw_geom *g, const float *x, const float *w, const float *b,
                        float *y, const hg_post *post)
{
    if (!dwb_applies(g)) return false;
#ifdef DW_HAVE_X86
    const int64_t vw = dw_simd() == 2 ? 16 : 8; /* channels per block */
    dwb_job j = {g, x, w, b, y, post, (g->C + vw - 1) / vw};
    int64_t per = vw * g->out[1] * g->out[2] * 9;
    hg_parallel_for(g->N * j.blocks, dw_grain(per),
                    dw_simd() == 2 ? dwb_range_avx512 : dwb_range_avx2, &j);
#endif
    return true;
}
static bool fwd_fast_f32(const hg_dw_geom *g, const float *x, const float *w, const float *b,
                         float *y, const hg_post *post)
{
    return blocked_f32(g, x, w, b, y, post) || dw3_f32(g, x, w, b, y, post);
}
#define DW_BLOCKED_f32 fwd_fast_f32
#define DW_BLOCKED_f64(g, x, w, b, y, post) false

DW_DRIVERS(float, f32)
DW_DRIVERS(double, f64)
