/* Direct convolution for few input channels (see conv_direct.h).
 *
 * A unit is a block of CD_RB output rows of one image. Its slot of the workspace receives, per
 * channel and input row the block reads, the row zero-padded on both sides and, at stride s,
 * split into s phases (phase p holds padded columns p, p + s, p + 2s, ...), each PL floats
 * long: the input of output column o through tap column k is then phase k % s at o + k / s.
 * The block kernel keeps FB filters x NV vectors of outputs in registers and runs the taps in
 * (channel, row, column) order: per tap NV loads and FB broadcasts for FB * NV multiply-adds.
 *
 * Measured on the 2-core AVX-512 machine, 2 threads, against im2col + GEMM: ResNet-18's 7x7
 * stride-2 layer (3 -> 64, 224x224) at batch 16 27 -> 20.5 ms, at batch 1 1.8 -> 0.92 ms;
 * MobileNetV2's 3x3 stride-2 layer (3 -> 32) at batch 16 8.8 -> 2.9 ms. HG_NO_CONV_DIRECT
 * (read once) turns the kernel off. */
#include "kernels/cpu/conv_direct.h"

#include <stdatomic.h>
#include <string.h>

#include "core/env.h"
#include "core/parallel.h"
#include "hybridgluon/hybridgluon.h"

#define CD_RB 8 /* output rows a unit */

/* Padded phase length: every chunk of output columns (at most 64) plus the largest tap offset
 * reads inside it. */
static int64_t phase_len(const hg_cdir_geom *g) { return (g->OW + 64 + g->kw + 15) & ~(int64_t)15; }
static int64_t rows_in(const hg_cdir_geom *g) { return (CD_RB - 1) * g->s + g->kh; }
static int64_t slot_floats(const hg_cdir_geom *g)
{
    return g->C * rows_in(g) * g->s * phase_len(g);
}
static int64_t num_units(const hg_cdir_geom *g) { return g->N * ((g->OH + CD_RB - 1) / CD_RB); }

bool hg_conv_direct_applies(const hg_cdir_geom *g)
{
    static atomic_int off = -1;
    if (hg_env_on_once(&off, "HG_NO_CONV_DIRECT")) return false;
    return g->C >= 1 && g->C <= HG_CDIR_MAX_C && g->F >= 1 && g->kh >= 1 &&
           g->kh <= HG_CDIR_MAX_K && g->kw >= 1 && g->kw <= HG_CDIR_MAX_K &&
           (g->s == 1 || g->s == 2) && g->ph >= 0 && g->ph < g->kh && g->pw >= 0 && g->pw < g->kw &&
           g->OH > 0 && g->OW > 0;
}

size_t hg_conv_direct_workspace(const hg_cdir_geom *g, int64_t threads)
{
    int64_t u = num_units(g), t = threads < 1 ? 1 : threads;
    return sizeof(float) * (size_t)((t < u ? t : u) * slot_floats(g));
}

typedef struct cd_job {
    const hg_cdir_geom *g;
    const float *x, *w, *b;
    float *y;
    const hg_post *post;
    float *ws;
    int64_t nslots, PL, RI;
    int64_t kofs[HG_CDIR_MAX_K]; /* tap column kw reads phase kw % s at kw / s */
} cd_job;

/* The unit's input rows, padded and split into phases (see the top). */
static void fill_unit(const cd_job *j, int64_t n, int64_t oh0, float *buf)
{
    const hg_cdir_geom *g = j->g;
    const int64_t s = g->s, PL = j->PL;
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t r = 0; r < j->RI; r++) {
            const int64_t ih = oh0 * s - g->ph + r;
            const float *xr = ih >= 0 && ih < g->H ? j->x + ((n * g->C + c) * g->H + ih) * g->W
                                                   : NULL;
            for (int64_t p = 0; p < s; p++) {
                float *dst = buf + ((c * j->RI + r) * s + p) * PL;
                if (!xr) {
                    memset(dst, 0, sizeof(float) * (size_t)PL);
                    continue;
                }
                /* q with 0 <= q s + p - pw < W: [lo, hi) */
                const int64_t off = p - g->pw;
                int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
                int64_t hi = g->W - off > 0 ? (g->W - off - 1) / s + 1 : 0;
                if (hi > PL) hi = PL;
                if (lo > hi) lo = hi;
                memset(dst, 0, sizeof(float) * (size_t)lo);
                if (s == 1) memcpy(dst + lo, xr + lo + off, sizeof(float) * (size_t)(hi - lo));
                else
                    for (int64_t q = lo; q < hi; q++) dst[q] = xr[2 * q + off];
                memset(dst + hi, 0, sizeof(float) * (size_t)(PL - hi));
            }
        }
}

/* The block kernel for one instruction set: FB filters from f0 x NV vectors of VL outputs from
 * ow0 of output row oh (local input row r0 for tap row 0). Filters past F compute on the last
 * filter's weights and are not stored. cd_tile_ISA is its body for a kernel of KH x KW taps
 * (0: the layer's, read at run time); cd_block_ISA instantiates it with constant 3 x 3 and
 * 7 x 7 (MobileNet's and ResNet's stems), whose tap loops then unroll. With the sizes read at
 * run time the short tap loops' branches and address arithmetic cost, on the 2-core AMD EPYC
 * (AVX2, 2 threads, median of 20 paired rounds, batch 1): MobileNetV2's 3 -> 32 3x3 stride-2
 * stem 495 -> 412 us, at batch 8 6.0 -> 5.3 ms; ResNet-18's 3 -> 64 7x7 stride-2 stem
 * 3.16 -> 2.86 ms. The taps run in the same order either way: the sums have the same bits. */
#define CD_KERNEL(ISA, TGT, VL, FB, NV, SPLAT, FMA)                                                       \
    typedef float cd_v_##ISA __attribute__((vector_size(4 * (VL)), aligned(4), may_alias));     \
    TGT static inline __attribute__((always_inline)) void cd_tile_##ISA(                        \
        const cd_job *j, const float *buf, int64_t r0, int64_t f0, int64_t ow0,                 \
        float *const *out, const int64_t KHc, const int64_t KWc)                                \
    {                                                                                           \
        const hg_cdir_geom *g = j->g;                                                           \
        const int64_t kh_n = KHc ? KHc : g->kh, kw_n = KWc ? KWc : g->kw;                       \
        const int64_t s = g->s, PL = j->PL, KK = kh_n * kw_n, F = g->F;                         \
        const float *wf[FB];                                                                    \
        cd_v_##ISA acc[FB][NV];                                                                 \
        for (int f = 0; f < (FB); f++) {                                                        \
            const int64_t ff = f0 + f < F ? f0 + f : F - 1;                                     \
            wf[f] = j->w + ff * g->C * KK;                                                      \
            const float bv = j->b ? j->b[ff] : 0.0f;                                            \
            for (int v = 0; v < (NV); v++) acc[f][v] = SPLAT(bv);                               \
        }                                                                                       \
        const int64_t *kofs = j->kofs;                                                          \
        for (int64_t c = 0; c < g->C; c++)                                                      \
            for (int64_t kh = 0; kh < kh_n; kh++) {                                             \
                const float *row = buf + ((c * j->RI + r0 + kh) * s) * PL + ow0;                \
                const int64_t t0 = c * KK + kh * kw_n;                                          \
                for (int64_t kw = 0; kw < kw_n; kw++) {                                         \
                    const float *src = row + kofs[kw];                                          \
                    cd_v_##ISA xv[NV];                                                          \
                    for (int v = 0; v < (NV); v++) xv[v] = *(const cd_v_##ISA *)(src + v * (VL)); \
                    for (int f = 0; f < (FB); f++) {                                            \
                        const cd_v_##ISA wv = SPLAT(wf[f][t0 + kw]);                            \
                        for (int v = 0; v < (NV); v++) acc[f][v] = FMA(wv, xv[v], acc[f][v]);   \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        const int64_t n = g->OW - ow0 < (VL) * (NV) ? g->OW - ow0 : (VL) * (NV);                \
        for (int f = 0; f < (FB) && f0 + f < F; f++) {                                          \
            float *o = out[f] + ow0;                                                            \
            if (n == (VL) * (NV)) {                                                             \
                for (int v = 0; v < (NV); v++) *(cd_v_##ISA *)(o + v * (VL)) = acc[f][v];       \
            } else {                                                                            \
                float tmp[(VL) * (NV)];                                                         \
                for (int v = 0; v < (NV); v++) *(cd_v_##ISA *)(tmp + v * (VL)) = acc[f][v];     \
                memcpy(o, tmp, sizeof(float) * (size_t)n);                                      \
            }                                                                                   \
            hg_post_f32(j->post, o, n);                                                         \
        }                                                                                       \
    }                                                                                           \
    TGT static void cd_block_##ISA(const cd_job *j, const float *buf, int64_t r0, int64_t f0,   \
                                   int64_t ow0, float *const *out)                             \
    {                                                                                           \
        const int64_t kh = j->g->kh, kw = j->g->kw;                                             \
        if (kh == 3 && kw == 3) cd_tile_##ISA(j, buf, r0, f0, ow0, out, 3, 3);                    \
        else if (kh == 7 && kw == 7) cd_tile_##ISA(j, buf, r0, f0, ow0, out, 7, 7);               \
        else cd_tile_##ISA(j, buf, r0, f0, ow0, out, 0, 0);                                     \
    }                                                                                           \
    enum { CD_FB_##ISA = (FB), CD_COLS_##ISA = (VL) * (NV) };

/* Splats and multiply-adds per instruction set: the build is ISO C (no contraction), so the
 * AVX sets name their FMAs. */
#define CD_SPLAT4(x) ((cd_v_base){(x), (x), (x), (x)})
#define CD_MADD(a, b, c) ((a) * (b) + (c))
CD_KERNEL(base, , 4, 4, 3, CD_SPLAT4, CD_MADD)
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CD_HAVE_X86 1
#define CD_SPLAT8(x) ((cd_v_avx2)_mm256_set1_ps(x))
#define CD_FMA8(a, b, c) ((cd_v_avx2)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
CD_KERNEL(avx2, __attribute__((target("avx2,fma"))), 8, 4, 3, CD_SPLAT8, CD_FMA8)
#define CD_SPLAT16(x) ((cd_v_avx512)_mm512_set1_ps(x))
#define CD_FMA16(a, b, c) ((cd_v_avx512)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
CD_KERNEL(avx512, __attribute__((target("avx512f,avx2,fma"))), 16, 6, 4, CD_SPLAT16, CD_FMA16)
#endif

typedef void (*cd_block_fn)(const cd_job *, const float *, int64_t, int64_t, int64_t,
                            float *const *);
typedef struct cd_isa {
    cd_block_fn block;
    int64_t fb, cols;
} cd_isa;

static cd_isa pick(void)
{
#ifdef CD_HAVE_X86
    if (__builtin_cpu_supports("avx512f"))
        return (cd_isa){cd_block_avx512, CD_FB_avx512, CD_COLS_avx512};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (cd_isa){cd_block_avx2, CD_FB_avx2, CD_COLS_avx2};
#endif
    return (cd_isa){cd_block_base, CD_FB_base, CD_COLS_base};
}

/* Slots [t0, t1): slot t runs its contiguous share of the units in its buffer. */
static void cd_slots(void *ctx, int64_t t0, int64_t t1)
{
    const cd_job *j = ctx;
    const hg_cdir_geom *g = j->g;
    const cd_isa isa = pick();
    const int64_t per = (g->OH + CD_RB - 1) / CD_RB, U = g->N * per, P = g->OH * g->OW;
    for (int64_t t = t0; t < t1; t++) {
        float *buf = j->ws + t * slot_floats(g);
        for (int64_t u = U * t / j->nslots; u < U * (t + 1) / j->nslots; u++) {
            const int64_t n = u / per, oh0 = (u - n * per) * CD_RB;
            const int64_t oh1 = oh0 + CD_RB < g->OH ? oh0 + CD_RB : g->OH;
            fill_unit(j, n, oh0, buf);
            for (int64_t oh = oh0; oh < oh1; oh++)
                for (int64_t f0 = 0; f0 < g->F; f0 += isa.fb) {
                    float *out[6];
                    for (int64_t f = 0; f < isa.fb && f0 + f < g->F; f++)
                        out[f] = j->y + (n * g->F + f0 + f) * P + oh * g->OW;
                    for (int64_t ow0 = 0; ow0 < g->OW; ow0 += isa.cols)
                        isa.block(j, buf, (oh - oh0) * g->s, f0, ow0, out);
                }
        }
    }
}

void hg_conv_direct_f32(const hg_cdir_geom *g, const float *x, const float *w, const float *b,
                        float *y, const hg_post *post, void *ws, size_t ws_bytes)
{
    int64_t U = num_units(g), t = hg_get_num_threads();
    if (U == 0) return;
    int64_t fit = (int64_t)(ws_bytes / (sizeof(float) * (size_t)slot_floats(g)));
    int64_t nslots = t < U ? t : U;
    if (nslots > fit) nslots = fit;
    if (nslots < 1) nslots = 1; /* the caller gives at least one slot (conv_direct.h) */
    cd_job j = {g, x, w, b, y, post, ws, nslots, phase_len(g), rows_in(g), {0}};
    for (int64_t kw = 0; kw < g->kw; kw++) j.kofs[kw] = (kw % g->s) * j.PL + kw / g->s;
    if (nslots > 1) hg_parallel_for(nslots, 1, cd_slots, &j);
    else cd_slots(&j, 0, 1);
}
