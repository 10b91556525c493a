/* The strided view copy: one primitive under every data-movement op of the shape family
 * (csrc/ops/shape.c). The copy merges dims the input walks as one, then runs rows of memcpy /
 * fill / gather, or cache-blocked tiles when the input's unit-stride dim is not the output's
 * inner dim (any transpose). Elements move as raw words of their size, so every dtype works. */
#include "kernels/cpu/strided_copy.h"

#include <string.h>

#include "core/parallel.h"

#define COPY_GRAIN_BYTES (1 << 18)

/* Element words that may alias any type: the kernels move float/int data as raw words. */
typedef uint8_t __attribute__((may_alias)) w8;
typedef uint16_t __attribute__((may_alias)) w16;
typedef uint32_t __attribute__((may_alias)) w32;
typedef uint64_t __attribute__((may_alias)) w64;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct {
    const char *in;
    char *out;
    int64_t esz;
    int nd;
    int64_t base; /* input offset of output element 0, in elements */
    int64_t shape[HG_STRIDED_MAX_DIMS], istr[HG_STRIDED_MAX_DIMS], ostr[HG_STRIDED_MAX_DIMS];
    /* Blocked path: dim p has input stride 1; tiles of bp x bq along p and the inner dim. */
    int p;
    int64_t bp, bq, nbp, nbq;
} sview;

#define GATHER(W)                                                                               \
    do {                                                                                        \
        const W *x_ = (const W *)src;                                                           \
        W *y_ = (W *)dst;                                                                       \
        if (s == 0) {                                                                           \
            W v_ = x_[0];                                                                       \
            for (int64_t i = 0; i < n; i++) y_[i] = v_;                                         \
        } else {                                                                                \
            for (int64_t i = 0; i < n; i++) y_[i] = x_[i * s];                                  \
        }                                                                                       \
    } while (0)

/* dst[i] = src[i * s] for i < n (s in elements; 0 fills, negative walks backwards). */
static void copy_run(int64_t esz, const char *src, int64_t s, char *dst, int64_t n)
{
    if (s == 1) {
        memcpy(dst, src, (size_t)(n * esz));
        return;
    }
    switch (esz) {
    case 1: GATHER(w8); break;
    case 2: GATHER(w16); break;
    case 4: GATHER(w32); break;
    default: GATHER(w64); break;
    }
}

#define PLANE(W)                                                                                \
    do {                                                                                        \
        const W *x_ = (const W *)src;                                                           \
        W *y_ = (W *)dst;                                                                       \
        if (s1 == 0) {                                                                          \
            for (int64_t r = 0; r < n2; r++) {                                                  \
                W v_ = x_[r * s2];                                                              \
                for (int64_t c = 0; c < n1; c++) y_[r * n1 + c] = v_;                           \
            }                                                                                   \
        } else {                                                                                \
            for (int64_t r = 0; r < n2; r++)                                                    \
                for (int64_t c = 0; c < n1; c++) y_[r * n1 + c] = x_[r * s2 + c * s1];          \
        }                                                                                       \
    } while (0)

/* dst[r * n1 + c] = src[r * s2 + c * s1]: n2 short rows in one call, so a tiny inner dim
 * (repeat, a tiled column) costs no index arithmetic per row. */
static void copy_plane(int64_t esz, const char *src, int64_t s2, int64_t s1, char *dst, int64_t n2,
                       int64_t n1)
{
    if (s1 == 1) {
        for (int64_t r = 0; r < n2; r++)
            memcpy(dst + r * n1 * esz, src + r * s2 * esz, (size_t)(n1 * esz));
        return;
    }
    switch (esz) {
    case 1: PLANE(w8); break;
    case 2: PLANE(w16); break;
    case 4: PLANE(w32); break;
    default: PLANE(w64); break;
    }
}

/* Long rows: the range is in elements, so one huge row still splits across threads. */
static void sview_elems(void *ctx, int64_t b, int64_t e)
{
    const sview *v = ctx;
    int nd = v->nd;
    int64_t inner = v->shape[nd - 1], is = v->istr[nd - 1];
    while (b < e) {
        int64_t row = b / inner, col = b % inner;
        int64_t cnt = min64(inner - col, e - b);
        int64_t off = v->base + col * is;
        for (int d = nd - 2; d >= 0; d--) {
            off += (row % v->shape[d]) * v->istr[d];
            row /= v->shape[d];
        }
        copy_run(v->esz, v->in + off * v->esz, is, v->out + b * v->esz, cnt);
        b += cnt;
    }
}

/* Short rows: the range is in rows, copied a plane (the last two dims) at a time. */
static void sview_rows(void *ctx, int64_t b, int64_t e)
{
    const sview *v = ctx;
    int nd = v->nd;
    int64_t n1 = v->shape[nd - 1], s1 = v->istr[nd - 1];
    int64_t n2 = nd > 1 ? v->shape[nd - 2] : 1, s2 = nd > 1 ? v->istr[nd - 2] : 0;
    while (b < e) {
        int64_t plane = b / n2, r0 = b % n2, cnt = min64(n2 - r0, e - b);
        int64_t off = v->base + r0 * s2;
        for (int d = nd - 3; d >= 0; d--) {
            off += (plane % v->shape[d]) * v->istr[d];
            plane /= v->shape[d];
        }
        copy_plane(v->esz, v->in + off * v->esz, s2, s1, v->out + b * n1 * v->esz, cnt, n1);
        b += cnt;
    }
}

#define TILE(W)                                                                                 \
    do {                                                                                        \
        const W *x_ = (const W *)src;                                                           \
        W *y_ = (W *)dst;                                                                       \
        if (nq >= 8) {                                                                          \
            for (int64_t i = 0; i < np; i++)                                                    \
                for (int64_t k = 0; k < nq; k++) y_[i * so + k] = x_[i + k * si];               \
        } else { /* a short inner dim (NCHW -> NHWC with 3 channels): long loops over i */      \
            for (int64_t k = 0; k < nq; k++)                                                    \
                for (int64_t i = 0; i < np; i++) y_[i * so + k] = x_[i + k * si];               \
        }                                                                                       \
    } while (0)

/* dst[i * so + k] = src[i + k * si]: one tile of a transpose, small enough to stay in L1. */
static void copy_tile(int64_t esz, const char *src, int64_t si, char *dst, int64_t so, int64_t np,
                      int64_t nq)
{
    switch (esz) {
    case 1: TILE(w8); break;
    case 2: TILE(w16); break;
    case 4: TILE(w32); break;
    default: TILE(w64); break;
    }
}

static void sview_tiles(void *ctx, int64_t b, int64_t e)
{
    const sview *v = ctx;
    int q = v->nd - 1, p = v->p;
    for (int64_t u = b; u < e; u++) {
        int64_t t = u, iq = t % v->nbq;
        t /= v->nbq;
        int64_t ip = t % v->nbp;
        t /= v->nbp;
        int64_t ioff = v->base, ooff = 0;
        for (int d = q - 1; d >= 0; d--) {
            if (d == p) continue;
            int64_t k = t % v->shape[d];
            t /= v->shape[d];
            ioff += k * v->istr[d];
            ooff += k * v->ostr[d];
        }
        int64_t p0 = ip * v->bp, q0 = iq * v->bq;
        int64_t np = min64(v->bp, v->shape[p] - p0), nq = min64(v->bq, v->shape[q] - q0);
        ioff += p0 + q0 * v->istr[q];
        ooff += p0 * v->ostr[p] + q0;
        copy_tile(v->esz, v->in + ioff * v->esz, v->istr[q], v->out + ooff * v->esz, v->ostr[p], np,
                  nq);
    }
}

void hg_strided_copy(const void *in, void *out, size_t esz, int nd, const int64_t *shape,
                     const int64_t *istr, int64_t base)
{
    sview v;
    int m = 0;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    if (n == 0) return;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        if (m > 0 && v.istr[m - 1] == istr[d] * shape[d]) {
            v.shape[m - 1] *= shape[d];
            v.istr[m - 1] = istr[d];
            continue;
        }
        v.shape[m] = shape[d];
        v.istr[m] = istr[d];
        m++;
    }
    if (m == 0) {
        v.shape[0] = 1;
        v.istr[0] = 1;
        m = 1;
    }
    v.in = in;
    v.out = out;
    v.esz = (int64_t)esz;
    v.nd = m;
    v.base = base;
    v.p = -1;
    int q = m - 1;
    int64_t grain = COPY_GRAIN_BYTES / v.esz;
    if (v.istr[q] != 0 && v.istr[q] != 1)
        for (int d = 0; d < q; d++)
            if (v.istr[d] == 1) v.p = d;
    if (v.p < 0) {
        if (v.shape[q] >= 256 || m == 1) hg_parallel_for(n, grain, sview_elems, &v);
        else hg_parallel_for(n / v.shape[q], grain / v.shape[q], sview_rows, &v);
        return;
    }
    /* A transpose: tiles of about t x t elements, t * esz >= 128 bytes so each row of a tile
     * spans whole cache lines on both sides; a short side lends its room to the other. */
    int64_t t = 128 / v.esz < 32 ? 32 : 128 / v.esz;
    hg_contiguous_strides(m, v.shape, v.ostr);
    v.bq = min64(v.shape[q], t);
    v.bp = min64(v.shape[v.p], t * t / v.bq);
    v.bq = min64(v.shape[q], t * t / v.bp);
    v.nbp = (v.shape[v.p] + v.bp - 1) / v.bp;
    v.nbq = (v.shape[q] + v.bq - 1) / v.bq;
    int64_t units = n / (v.shape[v.p] * v.shape[q]) * v.nbp * v.nbq;
    grain /= v.bp * v.bq;
    hg_parallel_for(units, grain < 1 ? 1 : grain, sview_tiles, &v);
}
