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

#include "core/parallel.h"

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

static dw_kernels_f32 pick_f32(void)
{
#ifdef DW_HAVE_X86
    if (__builtin_cpu_supports("avx512f")) DW_PICK(f32, avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) DW_PICK(f32, avx2);
#endif
    DW_PICK(f32, base);
}

#define T double
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

static dw_kernels_f64 pick_f64(void)
{
#ifdef DW_HAVE_X86
    if (__builtin_cpu_supports("avx512f")) DW_PICK(f64, avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) DW_PICK(f64, avx2);
#endif
    DW_PICK(f64, base);
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

DW_DRIVERS(float, f32)
DW_DRIVERS(double, f64)
