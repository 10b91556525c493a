/* Direct convolution for deep layers at small batch (see conv_deep.h).
 *
 * The tile: 16 filters (two AVX2 vectors of the packed weights) x 6 output positions, taken in
 * row-major order across output rows, 12 accumulators. Per tap, two loads of weights and six
 * broadcasts of inputs feed twelve multiply-adds; each position reads its input at a fixed
 * offset from the tap's base in the padded copy, so the loop carries one input pointer and one
 * weight pointer. A block of 16 filters runs all of an image's tiles in turn: its packed
 * weights (16 x 9C floats, 295 KB at 512 channels) come from memory once and from L2 after. */
#include "kernels/cpu/conv_deep.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/parallel.h"

#define CDP_FB 16 /* filters a tile (two vectors) */
#define CDP_R 6   /* output positions a tile */
#define CDP_CB 64 /* channels a block of the taps' loop */

/* The size rule (conv.c adds: where Winograd does not take the layer). Measured on the 2-core
 * AMD EPYC (AVX2), 2 threads, a hybridized Convolution + BatchNorm in inference, this kernel
 * against the route the layer takes without it, median of 15 paired rounds in one process:
 *   512 -> 512 on 7x7, batch 1: 0.85-0.90x the time (115 GFLOP/s; im2col + GEMM repacks 9 MB
 *   of weights per call for 49 columns); batch 2: 0.83x; batch 4 (Winograd there): 0.98x;
 *   stride 2 into 7x7, 256 -> 512 and 512 -> 512: 0.93-0.95x; into 28x28, 128 -> 256: 1.0x;
 *   64 -> 128 from 56x56: 1.15x (few channels: short tap loops per tile);
 *   Winograd's layers, 256 -> 256 on 14x14: 1.2x; 128 -> 128 on 28x28: 1.9x.
 * Hence at least CDP_MIN_C channels and at most CDP_MAX_NP output positions in the batch.
 * 1x1 layers (the kernel takes them, one tap per channel) lose to the BLAS, whose packing is
 * small next to their products: MobileNetV2's 160 -> 960, 320 -> 1280 on 7x7 1.15-1.2x the
 * time, 960 -> 160 and 576 -> 160 1.0x; ResNet's 256 -> 512 stride 2 1.1x. Hence 3x3 only.
 * ResNet-18 (benchmarks/ab_switch.py's method, paired rounds): batch 1 0.934x, batch 2 0.956x,
 * resnet18_v2 (no BatchNorm to fold) at batch 1 0.956x; its 7x7 layers then take about ONNX
 * Runtime's time per layer (benchmarks/profile_layers.py). */
#define CDP_MIN_C 128
#define CDP_MAX_NP 128

static int64_t num_fb(const hg_cdir_geom *g) { return (g->F + CDP_FB - 1) / CDP_FB; }
static int64_t taps(const hg_cdir_geom *g) { return g->kh * g->kw; }
static int64_t pad_h(const hg_cdir_geom *g) { return g->H + 2 * g->ph; }
static int64_t pad_w(const hg_cdir_geom *g) { return g->W + 2 * g->pw; }
static int64_t num_tiles(const hg_cdir_geom *g) { return (g->OH * g->OW + CDP_R - 1) / CDP_R; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CDP_HAVE_X86 1
#define TGT __attribute__((target("avx2,fma")))

/* AVX2 + FMA without AVX-512: where AVX-512 is there, the GEMM route runs hybridgluon's own
 * AVX-512 kernel (sgemm_packed.c, twice the vector width), which this one was not measured
 * against (no AVX-512 machine at hand when it was written). */
static bool cpu_ok(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           !__builtin_cpu_supports("avx512f");
}

/* out[r][0..16) (+= with add) = sum over K taps of the block's weights times position r's input:
 * tap k of position r reads xb[koff[k] + off[r]]. One table of tap offsets rather than nested
 * channel and tap loops: unrolled, those made GCC keep 54 addresses, most of them on the stack. */
TGT static void tile(const float *xb, const int32_t *koff, const int64_t *off, const float *wp,
                     int64_t K, bool add, float *out)
{
    const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3], o4 = off[4], o5 = off[5];
    __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0;
    __m256 a3 = a0, b3 = a0, a4 = a0, b4 = a0, a5 = a0, b5 = a0;
    if (add) { /* the sums of the channel blocks before */
        a0 = _mm256_loadu_ps(out + 0 * CDP_FB), b0 = _mm256_loadu_ps(out + 0 * CDP_FB + 8);
        a1 = _mm256_loadu_ps(out + 1 * CDP_FB), b1 = _mm256_loadu_ps(out + 1 * CDP_FB + 8);
        a2 = _mm256_loadu_ps(out + 2 * CDP_FB), b2 = _mm256_loadu_ps(out + 2 * CDP_FB + 8);
        a3 = _mm256_loadu_ps(out + 3 * CDP_FB), b3 = _mm256_loadu_ps(out + 3 * CDP_FB + 8);
        a4 = _mm256_loadu_ps(out + 4 * CDP_FB), b4 = _mm256_loadu_ps(out + 4 * CDP_FB + 8);
        a5 = _mm256_loadu_ps(out + 5 * CDP_FB), b5 = _mm256_loadu_ps(out + 5 * CDP_FB + 8);
    }
#define CDP_POS(A, B, O)                                                                        \
    do {                                                                                        \
        const __m256 v = _mm256_broadcast_ss(xt + (O));                                         \
        A = _mm256_fmadd_ps(v, w0, A);                                                          \
        B = _mm256_fmadd_ps(v, w1, B);                                                          \
    } while (0)
    for (int64_t k = 0; k < K; k++, wp += CDP_FB) {
        const float *xt = xb + koff[k];
        const __m256 w0 = _mm256_loadu_ps(wp), w1 = _mm256_loadu_ps(wp + 8);
        CDP_POS(a0, b0, o0);
        CDP_POS(a1, b1, o1);
        CDP_POS(a2, b2, o2);
        CDP_POS(a3, b3, o3);
        CDP_POS(a4, b4, o4);
        CDP_POS(a5, b5, o5);
    }
#undef CDP_POS
    _mm256_storeu_ps(out + 0 * CDP_FB, a0);
    _mm256_storeu_ps(out + 0 * CDP_FB + 8, b0);
    _mm256_storeu_ps(out + 1 * CDP_FB, a1);
    _mm256_storeu_ps(out + 1 * CDP_FB + 8, b1);
    _mm256_storeu_ps(out + 2 * CDP_FB, a2);
    _mm256_storeu_ps(out + 2 * CDP_FB + 8, b2);
    _mm256_storeu_ps(out + 3 * CDP_FB, a3);
    _mm256_storeu_ps(out + 3 * CDP_FB + 8, b3);
    _mm256_storeu_ps(out + 4 * CDP_FB, a4);
    _mm256_storeu_ps(out + 4 * CDP_FB + 8, b4);
    _mm256_storeu_ps(out + 5 * CDP_FB, a5);
    _mm256_storeu_ps(out + 5 * CDP_FB + 8, b5);
}
#else
static bool cpu_ok(void) { return false; }
#endif

bool hg_conv_deep_applies(const hg_cdir_geom *g)
{
    static atomic_int off = -1;
    if (hg_env_on_once(&off, "HG_NO_CONV_DEEP")) return false;
    if (!cpu_ok()) return false;
    if (g->N < 1 || g->C < 1 || g->F < 1 || (g->s != 1 && g->s != 2)) return false;
    if (g->kh != g->kw || (g->kh != 3 && g->kh != 1)) return false;
    if (g->ph < 0 || g->ph >= g->kh || g->pw < 0 || g->pw >= g->kw) return false;
    if (g->OH < 1 || g->OW < 1 || (g->OH - 1) * g->s + g->kh > pad_h(g) ||
        (g->OW - 1) * g->s + g->kw > pad_w(g))
        return false;
    if (g->C * pad_h(g) * pad_w(g) > INT32_MAX) return false; /* tap offsets are int32 */
    return g->kh == 3 && g->C >= CDP_MIN_C && g->N * g->OH * g->OW <= CDP_MAX_NP;
}

size_t hg_conv_deep_packed_bytes(const hg_cdir_geom *g)
{
    return sizeof(float) * (size_t)(num_fb(g) * CDP_FB * g->C * taps(g));
}

typedef struct {
    const hg_cdir_geom *g;
    const float *w;
    float *wp;
} pack_job;

static void pack_range(void *ctx, int64_t b0, int64_t b1)
{
    const pack_job *j = ctx;
    const int64_t C = j->g->C, F = j->g->F, KK = taps(j->g);
    for (int64_t fb = b0; fb < b1; fb++) {
        float *dst = j->wp + fb * CDP_FB * C * KK;
        for (int64_t c = 0; c < C; c++)
            for (int64_t t = 0; t < KK; t++, dst += CDP_FB)
                for (int l = 0; l < CDP_FB; l++) {
                    const int64_t f = fb * CDP_FB + l;
                    dst[l] = f < F ? j->w[(f * C + c) * KK + t] : 0.0f;
                }
    }
}

void hg_conv_deep_pack_f32(const hg_cdir_geom *g, const float *w, float *wp)
{
    pack_job j = {g, w, wp};
    hg_parallel_for(num_fb(g), 1, pack_range, &j);
}

/* The padded copy (none without padding: the kernel reads x), the tiles' sums (per image,
 * block of filters and tile: 6 x 16), then the tap offsets. */
static bool padded(const hg_cdir_geom *g) { return g->ph > 0 || g->pw > 0; }
static int64_t pad_floats(const hg_cdir_geom *g)
{
    return padded(g) ? g->N * g->C * pad_h(g) * pad_w(g) : 0;
}
static int64_t acc_floats(const hg_cdir_geom *g)
{
    return g->N * num_fb(g) * num_tiles(g) * CDP_R * CDP_FB;
}

size_t hg_conv_deep_workspace(const hg_cdir_geom *g)
{
    return sizeof(float) * (size_t)(pad_floats(g) + acc_floats(g)) +
           sizeof(int32_t) * (size_t)(g->C * taps(g));
}

typedef struct {
    const hg_cdir_geom *g;
    const float *x, *wp, *b;
    float *y, *pad;  /* the padded copy (NULL: none) */
    const float *xp; /* what the tiles read: the padded copy, or x */
    const hg_post *post;
    float *acc;    /* the tiles' sums */
    int32_t *koff; /* tap k's offset in an image's padded copy */
} cdp_job;

#ifdef CDP_HAVE_X86
/* Planes [p0, p1) of (image, channel): the zero-padded copy. */
static void pad_range(void *ctx, int64_t p0, int64_t p1)
{
    const cdp_job *j = ctx;
    const hg_cdir_geom *g = j->g;
    const int64_t Hp = pad_h(g), Wp = pad_w(g);
    for (int64_t p = p0; p < p1; p++) {
        float *dst = j->pad + p * Hp * Wp;
        const float *src = j->x + p * g->H * g->W;
        memset(dst, 0, sizeof(float) * (size_t)(g->ph * Wp));
        for (int64_t h = 0; h < g->H; h++) {
            float *row = dst + (g->ph + h) * Wp;
            memset(row, 0, sizeof(float) * (size_t)g->pw);
            memcpy(row + g->pw, src + h * g->W, sizeof(float) * (size_t)g->W);
            memset(row + g->pw + g->W, 0, sizeof(float) * (size_t)g->pw);
        }
        memset(dst + (g->ph + g->H) * Wp, 0, sizeof(float) * (size_t)(g->ph * Wp));
    }
}

/* Units [u0, u1) of (image, block of 16 filters): every tile of the image, channel block by
 * channel block (CDP_CB channels: the block's weights, 36 KB, stay in L1 and L2 across the
 * tiles), each tile's sums kept in the unit's part of the workspace between the blocks. */
static void unit_range(void *ctx, int64_t u0, int64_t u1)
{
    const cdp_job *j = ctx;
    const hg_cdir_geom *g = j->g;
    const int64_t nfb = num_fb(g), C = g->C, F = g->F, OW = g->OW, P = g->OH * OW, s = g->s;
    const int64_t Wp = pad_w(g), HWp = pad_h(g) * Wp, nt = num_tiles(g), KK = taps(g);
    float v[CDP_R];
    int64_t off[CDP_R];
    for (int64_t u = u0; u < u1; u++) {
        const int64_t n = u / nfb, f0 = (u - n * nfb) * CDP_FB;
        const float *xb = j->xp + n * C * HWp, *wb = j->wp + f0 * C * KK;
        const int64_t nf = F - f0 < CDP_FB ? F - f0 : CDP_FB;
        float *acc = j->acc + u * nt * CDP_R * CDP_FB;
        for (int64_t c0 = 0; c0 < C; c0 += CDP_CB) {
            const int64_t K = (C - c0 < CDP_CB ? C - c0 : CDP_CB) * KK;
            for (int64_t t = 0; t < nt; t++) {
                const int64_t p0 = t * CDP_R, R = P - p0 < CDP_R ? P - p0 : CDP_R;
                for (int64_t r = 0; r < CDP_R; r++) { /* positions past P repeat the last one */
                    const int64_t p = p0 + (r < R ? r : R - 1), oh = p / OW, ow = p - oh * OW;
                    off[r] = oh * s * Wp + ow * s;
                }
                tile(xb, j->koff + c0 * KK, off, wb + c0 * KK * CDP_FB, K, c0 > 0,
                     acc + t * CDP_R * CDP_FB);
            }
        }
        for (int64_t t = 0; t < nt; t++) {
            const int64_t p0 = t * CDP_R, R = P - p0 < CDP_R ? P - p0 : CDP_R;
            const float *out = acc + t * CDP_R * CDP_FB;
            for (int64_t f = 0; f < nf; f++) {
                const float bv = j->b ? j->b[f0 + f] : 0.0f;
                for (int64_t r = 0; r < R; r++) v[r] = out[r * CDP_FB + f] + bv;
                hg_post_f32(j->post, v, R);
                memcpy(j->y + (n * F + f0 + f) * P + p0, v, sizeof(float) * (size_t)R);
            }
        }
    }
}
#endif

void hg_conv_deep_f32(const hg_cdir_geom *g, const float *x, const float *wp, const float *b,
                      float *y, const hg_post *post, void *ws)
{
#ifdef CDP_HAVE_X86
    float *acc = (float *)ws + pad_floats(g);
    float *pad = padded(g) ? ws : NULL;
    cdp_job j = {g, x, wp, b, y, pad, pad ? pad : x, post, acc, (int32_t *)(acc + acc_floats(g))};
    const int64_t Wp = pad_w(g), HWp = pad_h(g) * Wp;
    for (int64_t c = 0, k = 0; c < g->C; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t t = 0; t < g->kw; t++) j.koff[k++] = (int32_t)(c * HWp + i * Wp + t);
    if (padded(g)) hg_parallel_for(g->N * g->C, 64, pad_range, &j);
    hg_parallel_for(g->N * num_fb(g), 1, unit_range, &j);
#else /* never called: hg_conv_deep_applies says false */
    (void)g, (void)x, (void)wp, (void)b, (void)y, (void)post, (void)ws;
#endif
}
