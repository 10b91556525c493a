/* A pointwise convolution and the depthwise one after it, in one pass (see pwdw.h).
 *
 * Work units: (image, group of G expanded channels). A unit's product, G x I = (G x C) . (C x I),
 * writes its planes into the thread's buffer with the bias and activation applied as it stores
 * them; the depthwise kernel then reads the G planes from the buffer (in L2) and writes the G
 * output planes. Nested in a unit, both calls run on its thread (the pool runs a nested loop
 * serially). Each output element gets the same arithmetic as in the two separate layers, in the
 * same order, so only the route of the product (a G-row product may take another kernel than
 * the whole layer's F rows) can change the last bits.
 *
 * Measured on MobileNetV2 at batch 32 (2 threads, AVX-512): the expansion layer of its second
 * block, 16 -> 96 channels at 112 x 112, took 25 ms and the depthwise layer after it 18 ms, most
 * of it moving the 154 MB expanded tensor through memory (ONNX Runtime: 17.5 + 8.4 ms). */
#include "kernels/cpu/pwdw.h"

#include <stdatomic.h>

#include "core/parallel.h"
#include "core/thread_buf.h"
#include "hybridgluon/hybridgluon.h"
#include "kernels/cpu/gemm.h"

#define BUF_FLOATS (HG_PWDW_BUF_BYTES / sizeof(float))

bool hg_pwdw_fits(int64_t I) { return I > 0 && (uint64_t)I <= BUF_FLOATS; }

/* ---- per-thread buffer (kept for the thread's life, freed when it exits) ------------------- */

static hg_thread_buf g_buf = HG_THREAD_BUF_INIT(BUF_FLOATS * sizeof(float));

static float *thread_buf(void) { return hg_thread_buf_get(&g_buf); }

/* ---- the fused forward ---------------------------------------------------------------------- */

typedef struct {
    int64_t C, F, G, groups, I, P, K;
    hg_dw_geom dw;
    const float *x, *w1, *b1, *w2, *b2;
    const hg_post *post1, *post2;
    float *y;
    _Atomic int failed;
} pwdw_job;

/* rows [0, n) of y (length len each) = post(y + b[row]) (b NULL: + 0, which turns -0 into +0
 * before a clip): the separate convolution's epilogue (conv_fwd_tmpl.h), for a product that
 * hg_gemm_epi_f32 refused. */
static void epilogue(float *y, int64_t n, int64_t len, const float *b, const hg_post *post)
{
    for (int64_t r = 0; r < n; r++) {
        float *row = y + r * len, bv = b ? b[r] : 0.0f;
        for (int64_t i = 0; i < len; i++) row[i] += bv;
        hg_post_f32(post, row, len);
    }
}

static void unit_range(void *ctx, int64_t u0, int64_t u1)
{
    pwdw_job *j = ctx;
    float *mid = thread_buf();
    if (!mid) {
        atomic_store(&j->failed, 1);
        return;
    }
    static const hg_post none = {HG_POST_NONE, 0, 0};
    const hg_post *p1 = j->post1 ? j->post1 : &none;
    for (int64_t u = u0; u < u1; u++) {
        int64_t n = u / j->groups, f0 = (u - n * j->groups) * j->G;
        int64_t g = j->F - f0 < j->G ? j->F - f0 : j->G;
        const float *w1 = j->w1 + f0 * j->C, *x = j->x + n * j->C * j->I;
        const float *b1 = j->b1 ? j->b1 + f0 : NULL;
        const bool epi = b1 || p1->kind != HG_POST_NONE;
        if (!epi || !hg_gemm_epi_f32(false, false, g, j->I, j->C, 1, w1, j->C, x, j->I, 0, mid,
                                     j->I, b1, p1)) {
            hg_gemm_f32(false, false, g, j->I, j->C, 1, w1, j->C, x, j->I, 0, mid, j->I);
            if (epi) epilogue(mid, g, j->I, b1, p1);
        }
        hg_dw_geom d = j->dw;
        d.N = 1;
        d.C = g;
        d.mult = 1;
        hg_depthwise_fwd_f32(&d, mid, j->w2 + f0 * j->K, j->b2 ? j->b2 + f0 : NULL,
                             j->y + (n * j->F + f0) * j->P, j->post2);
    }
}

/* G: the planes a unit makes. At most the buffer's worth, a multiple of 12 (the rows of the
 * packed GEMM kernel's tile) or, where the depthwise kernel works in blocks of 16 channels
 * (outputs of at most 16 x 16), of 48; and small enough that there are four units per thread
 * when the images alone give too few.
 * With large planes a unit is then a few planes (32 -> 32 channels at 112 x 112, batch 1: 4),
 * and each unit reads the whole input image. Units of a few output rows with all the planes
 * instead (the expanded rows a band needs, the rows two bands share kept, the depthwise pass
 * on the band, its rows copied out) read it once, but were slower on the 2-core AMD EPYC
 * machine (one thread, paired rounds in one process): 0.86-0.93x for 32 -> 32 at 112 x 112,
 * 0.64-0.89x for 16 -> 96 at 112 x 112 stride 2, and 0.96x on MobileNetV2 at batch 1. The
 * band's product, its input rows one plane (50 KB) apart, ran 1.5x slower than the long rows
 * here unless the rows were first copied together, and the copies ate the gain. */
static int64_t group_size(int64_t N, int64_t F, int64_t I, const hg_dw_geom *dw)
{
    int64_t G = (int64_t)BUF_FLOATS / I, step = dw->out[1] * dw->out[2] <= 256 ? 48 : 12;
    int64_t T = hg_get_num_threads() > 0 ? hg_get_num_threads() : 1;
    if (N < 4 * T) {
        int64_t want = (4 * T + N - 1) / N; /* groups per image */
        int64_t cap = (F + want - 1) / want;
        if (cap < G) G = cap;
    }
    if (G >= step) G -= G % step;
    else if (G >= 12) G -= G % 12;
    if (G > F) G = F;
    return G < 1 ? 1 : G;
}

bool hg_pwdw_fwd_f32(int64_t N, int64_t C, int64_t F, const hg_dw_geom *dw, const float *x,
                     const float *w1, const float *b1, const hg_post *post1, const float *w2,
                     const float *b2, const hg_post *post2, float *y)
{
    int64_t I = dw->im[0] * dw->im[1] * dw->im[2];
    if (N <= 0 || F <= 0) return true;
    if (!hg_pwdw_fits(I)) return false;
    pwdw_job j = {.C = C,
                  .F = F,
                  .I = I,
                  .dw = *dw,
                  .x = x,
                  .w1 = w1,
                  .b1 = b1,
                  .w2 = w2,
                  .b2 = b2,
                  .post1 = post1,
                  .post2 = post2,
                  .y = y};
    j.G = group_size(N, F, I, dw);
    j.groups = (F + j.G - 1) / j.G;
    j.P = dw->out[0] * dw->out[1] * dw->out[2];
    j.K = dw->k[0] * dw->k[1] * dw->k[2];
    atomic_init(&j.failed, 0);
    hg_parallel_for(N * j.groups, 1, unit_range, &j);
    return !atomic_load(&j.failed);
}
