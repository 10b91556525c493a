/* Direct depthwise convolution (see depthwise.h). Every loop nest walks output rows (o0, o1) and
 * kernel taps; the innermost loop runs along the last axis over the range of positions whose
 * input lies inside the image, computed per tap, so it carries no bounds checks and vectorises
 * (stride 1 and 2 get their own loops). The plane functions are compiled once per instruction
 * set (AVX-512, AVX2+FMA, baseline) through function attributes and picked at run time, as the
 * small-side GEMM kernels are. */
#include "depthwise.h"

#include <stdbool.h>
#include <string.h>

#include "../../core/parallel.h"

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
static inline int64_t dw_in_row(const hg_dw_geom *g, int64_t o0, int64_t o1, int64_t k0,
                                int64_t k1)
{
    int64_t i0 = o0 * g->s[0] - g->p[0] + k0 * g->d[0];
    int64_t i1 = o1 * g->s[1] - g->p[1] + k1 * g->d[1];
    if (i0 < 0 || i0 >= g->im[0] || i1 < 0 || i1 >= g->im[1]) return -1;
    return (i0 * g->im[1] + i1) * g->im[2];
}

/* Plane kernels for element type T, suffix SUF, instruction set ISA (function attribute TGT):
 *   fwd_plane: one output plane y[f] from its channel x[c] and filter w[f];
 *   bwd_dw:    dw[f] += taps' sums of dy[f] * shifted x[c] over one image;
 *   bwd_dx:    dx[c] += taps of w[f] scattered from dy[f] over one image. */
#define DW_PLANES(T, SUF, ISA, TGT)                                                             \
    TGT static inline void fwd_rows_##SUF##_##ISA(const hg_dw_geom *g, const dw_ranges *rg,        \
                                            const T *x, const T *w, T bias, T *y)               \
    {                                                                                           \
        const int64_t O2 = g->out[2], s2 = g->s[2];                                             \
        for (int64_t o0 = 0; o0 < g->out[0]; o0++)                                              \
            for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                                        \
                T *restrict yr = y + (o0 * g->out[1] + o1) * O2;                                \
                for (int64_t o = 0; o < O2; o++) yr[o] = bias;                                  \
                for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                        \
                    for (int64_t k1 = 0; k1 < g->k[1]; k1++) {                                  \
                        int64_t at = dw_in_row(g, o0, o1, k0, k1);                              \
                        if (at < 0) continue;                                                   \
                        const T *restrict xr = x + at;                                          \
                        const T *wk = w + (k0 * g->k[1] + k1) * g->k[2];                        \
                        for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                              \
                            const T wv = wk[k2];                                                \
                            int64_t ofs = rg->ofs[k2], lo = rg->lo[k2], hi = rg->hi[k2];        \
                            const T *restrict xs = xr + ofs;                                    \
                            if (s2 == 1)                                                        \
                                for (int64_t o = lo; o < hi; o++) yr[o] += wv * xs[o];          \
                            else if (s2 == 2)                                                   \
                                for (int64_t o = lo; o < hi; o++) yr[o] += wv * xs[2 * o];      \
                            else                                                                \
                                for (int64_t o = lo; o < hi; o++) yr[o] += wv * xs[o * s2];     \
                        }                                                                       \
                    }                                                                           \
            }                                                                                   \
    }                                                                                           \
                                                                                                \
    /* Through a zero-padded copy of the channel (buf, DW_BUF_BYTES): no range checks. With     \
     * unit strides on the last two axes the rows (o1, .) of one o0 are a single run of the     \
     * padded width, so each tap is one long vector loop over it (then the pad columns are     \
     * dropped); 7x7 planes then cost 9 short loops instead of 63. */                          \
    TGT static void fwd_plane_##SUF##_##ISA(const hg_dw_geom *g, const dw_ranges *rg,           \
                                            const T *x, const T *w, T bias, T *y)               \
    {                                                                                           \
        const int64_t O0 = g->out[0], O1 = g->out[1], O2 = g->out[2];                           \
        const int64_t I0p = g->im[0] + 2 * g->p[0], I1p = g->im[1] + 2 * g->p[1];               \
        const int64_t I2p = g->im[2] + 2 * g->p[2], pad_e = I0p * I1p * I2p;                    \
        const bool unit = g->s[1] == 1 && g->s[2] == 1;                                         \
        if ((pad_e + (unit ? O1 * I2p : 0)) * (int64_t)sizeof(T) > DW_BUF_BYTES) {              \
            fwd_rows_##SUF##_##ISA(g, rg, x, w, bias, y);                                       \
            return;                                                                             \
        }                                                                                       \
        _Alignas(64) T buf[DW_BUF_BYTES / sizeof(T)];                                           \
        T *restrict xp = buf;                                                                   \
        memset(xp, 0, sizeof(T) * (size_t)pad_e);                                               \
        for (int64_t i0 = 0; i0 < g->im[0]; i0++)                                               \
            for (int64_t i1 = 0; i1 < g->im[1]; i1++)                                           \
                memcpy(xp + ((i0 + g->p[0]) * I1p + i1 + g->p[1]) * I2p + g->p[2],              \
                       x + (i0 * g->im[1] + i1) * g->im[2], sizeof(T) * (size_t)g->im[2]);      \
        const int64_t K1 = g->k[1], K2 = g->k[2];                                               \
        for (int64_t o0 = 0; o0 < O0; o0++) {                                                   \
            if (unit) {                                                                         \
                T *restrict ext = buf + pad_e;                                                  \
                const int64_t L = (O1 - 1) * I2p + O2;                                          \
                for (int64_t e = 0; e < L; e++) ext[e] = bias;                                  \
                for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                        \
                    for (int64_t k1 = 0; k1 < K1; k1++)                                         \
                        for (int64_t k2 = 0; k2 < K2; k2++) {                                   \
                            const T wv = w[(k0 * K1 + k1) * K2 + k2];                           \
                            const T *restrict xs = xp + ((o0 * g->s[0] + k0 * g->d[0]) * I1p +  \
                                                         k1 * g->d[1]) * I2p + k2 * g->d[2];    \
                            for (int64_t e = 0; e < L; e++) ext[e] += wv * xs[e];               \
                        }                                                                       \
                for (int64_t o1 = 0; o1 < O1; o1++)                                             \
                    memcpy(y + (o0 * O1 + o1) * O2, ext + o1 * I2p, sizeof(T) * (size_t)O2);    \
                continue;                                                                       \
            }                                                                                   \
            for (int64_t o1 = 0; o1 < O1; o1++) {                                               \
                T *restrict yr = y + (o0 * O1 + o1) * O2;                                       \
                for (int64_t o = 0; o < O2; o++) yr[o] = bias;                                  \
                for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                        \
                    for (int64_t k1 = 0; k1 < K1; k1++) {                                       \
                        const T *xr = xp + ((o0 * g->s[0] + k0 * g->d[0]) * I1p +               \
                                            o1 * g->s[1] + k1 * g->d[1]) * I2p;                 \
                        for (int64_t k2 = 0; k2 < K2; k2++) {                                   \
                            const T wv = w[(k0 * K1 + k1) * K2 + k2];                           \
                            const T *restrict xs = xr + k2 * g->d[2];                           \
                            if (g->s[2] == 2)                                                   \
                                for (int64_t o = 0; o < O2; o++) yr[o] += wv * xs[2 * o];       \
                            else                                                                \
                                for (int64_t o = 0; o < O2; o++) yr[o] += wv * xs[o * g->s[2]]; \
                        }                                                                       \
                    }                                                                           \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    TGT static void bwd_dw_##SUF##_##ISA(const hg_dw_geom *g, const dw_ranges *rg, const T *dy,\
                                         const T *x, T *dw)   \
    {                                                                                           \
        const int64_t O2 = g->out[2], s2 = g->s[2];                                             \
        for (int64_t o0 = 0; o0 < g->out[0]; o0++)                                              \
            for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                                        \
                const T *restrict dr = dy + (o0 * g->out[1] + o1) * O2;                         \
                for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                        \
                    for (int64_t k1 = 0; k1 < g->k[1]; k1++) {                                  \
                        int64_t at = dw_in_row(g, o0, o1, k0, k1);                              \
                        if (at < 0) continue;                                                   \
                        const T *restrict xr = x + at;                                          \
                        T *dwk = dw + (k0 * g->k[1] + k1) * g->k[2];                            \
                        for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                              \
                            int64_t ofs = rg->ofs[k2], lo = rg->lo[k2], hi = rg->hi[k2], o = 0; \
                            const T *restrict xs = xr + ofs;                                    \
                            /* 8 independent partial sums: a vector of them, no reassociation   \
                             * of one float sum needed. */                                      \
                            T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;                      \
                            if (s2 == 1)                                                        \
                                for (o = lo; o + 8 <= hi; o += 8)                               \
                                    for (int q = 0; q < 8; q++)                                 \
                                        acc[q] += dr[o + q] * xs[o + q];                        \
                            else                                                                \
                                for (o = lo; o + 8 <= hi; o += 8)                               \
                                    for (int q = 0; q < 8; q++)                                 \
                                        acc[q] += dr[o + q] * xs[(o + q) * s2];                 \
                            for (; o < hi; o++) tail += dr[o] * xs[o * s2];                  \
                            dwk[k2] += ((acc[0] + acc[1]) + (acc[2] + acc[3])) +                \
                                       ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;          \
                        }                                                                       \
                    }                                                                           \
            }                                                                                   \
    }                                                                                           \
                                                                                                \
    TGT static void bwd_dx_##SUF##_##ISA(const hg_dw_geom *g, const dw_ranges *rg, const T *dy,\
                                         const T *w, T *dx)   \
    {                                                                                           \
        const int64_t O2 = g->out[2], s2 = g->s[2];                                             \
        for (int64_t o0 = 0; o0 < g->out[0]; o0++)                                              \
            for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                                        \
                const T *restrict dr = dy + (o0 * g->out[1] + o1) * O2;                         \
                for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                        \
                    for (int64_t k1 = 0; k1 < g->k[1]; k1++) {                                  \
                        int64_t at = dw_in_row(g, o0, o1, k0, k1);                              \
                        if (at < 0) continue;                                                   \
                        T *xr = dx + at;                                                        \
                        const T *wk = w + (k0 * g->k[1] + k1) * g->k[2];                        \
                        for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                              \
                            const T wv = wk[k2];                                                \
                            int64_t ofs = rg->ofs[k2], lo = rg->lo[k2], hi = rg->hi[k2];        \
                            T *restrict xs = xr + ofs;                                          \
                            if (s2 == 1)                                                        \
                                for (int64_t o = lo; o < hi; o++) xs[o] += wv * dr[o];          \
                            else                                                                \
                                for (int64_t o = lo; o < hi; o++) xs[o * s2] += wv * dr[o];     \
                        }                                                                       \
                    }                                                                           \
            }                                                                                   \
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

#define DW_ISA_SETS(T, SUF)                                                                     \
    DW_PLANES(T, SUF, base, )                                                                   \
    DW_PLANES(T, SUF, avx2, TGT_AVX2)                                                           \
    DW_PLANES(T, SUF, avx512, TGT_AVX512)                                                       \
    static dw_kernels_##SUF pick_##SUF(void)                                                    \
    {                                                                                           \
        if (__builtin_cpu_supports("avx512f"))                                                  \
            return (dw_kernels_##SUF){fwd_plane_##SUF##_avx512, bwd_dw_##SUF##_avx512,          \
                                      bwd_dx_##SUF##_avx512};                                   \
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))                    \
            return (dw_kernels_##SUF){fwd_plane_##SUF##_avx2, bwd_dw_##SUF##_avx2,              \
                                      bwd_dx_##SUF##_avx2};                                     \
        return (dw_kernels_##SUF){fwd_plane_##SUF##_base, bwd_dw_##SUF##_base,                  \
                                  bwd_dx_##SUF##_base};                                         \
    }
#define DW_BASE_SET(T, SUF)                                                                     \
    DW_PLANES(T, SUF, base, )                                                                   \
    static dw_kernels_##SUF pick_##SUF(void)                                                    \
    {                                                                                           \
        return (dw_kernels_##SUF){fwd_plane_##SUF##_base, bwd_dw_##SUF##_base,                  \
                                  bwd_dx_##SUF##_base};                                         \
    }

#ifdef DW_HAVE_X86
DW_ISA_SETS(float, f32)
DW_ISA_SETS(double, f64)
#else
DW_BASE_SET(float, f32)
DW_BASE_SET(double, f64)
#endif

/* Units per parallel chunk for units of `per` multiply-adds each. */
static int64_t dw_grain(int64_t per)
{
    return per > 0 ? HG_GRAIN_ELEMWISE / per + 1 : 1;
}

#define DW_DRIVERS(T, SUF)                                                                      \
    typedef struct {                                                                            \
        const hg_dw_geom *g;                                                                    \
        dw_kernels_##SUF k;                                                                     \
        dw_ranges rg;                                                                           \
        const T *x, *w, *b, *dy;                                                                \
        T *y, *dx, *dw, *db;                                                                    \
        int64_t I, P, K;                                                                        \
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
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    void hg_depthwise_fwd_##SUF(const hg_dw_geom *g, const T *x, const T *w, const T *b, T *y)  \
    {                                                                                           \
        dw_job_##SUF j = {.g = g, .k = pick_##SUF(), .x = x, .w = w, .b = b, .y = y};           \
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
