/* Reductions: sum, mean, prod, nansum, nanprod, max, min over a set of axes (MXNet's axis /
 * keepdims / exclude), norm (L1, L2) and argmax / argmin over one axis or the flattened array.
 *
 * One driver serves them all. After dropping size-1 dims and merging neighbours of the same kind
 * (kept or reduced), the input is a row-major sequence of alternating kept and reduced groups.
 * A trailing kept group is `inner`: a contiguous block both in the input and in the output, so
 * each output row of `inner` values is reduced by adding whole input rows into it (acc[i] op=
 * x[r*inner + i], vectorisable). When the last group is reduced (inner == 1) each output is a
 * reduction of contiguous runs, done with LANES independent accumulators so the loop vectorises;
 * when those runs are short, a whole block of (last kept dim x run) is reduced as segments at
 * once (sum over axes (0, 2) of (N, C, L) is C segment sums per n). The innermost reduced group
 * always has stride `inner`, so consecutive reduce indices are consecutive rows; other reduced and
 * kept groups are walked with div/mod once per run.
 *
 * Accumulators are double for floating inputs (and for norm on any input), int64 for integer
 * inputs. float32 / float64 sum, mean, max, min and L2 read the input directly (fused kernels);
 * other cases convert tiles into the accumulator type first. Float sums are thus accumulated in
 * double (MXNet uses Kahan summation in the input type; this is at least as accurate). Integer
 * sums and products wrap exactly as MXNet's same-type accumulation does, because arithmetic
 * modulo 2^64 truncated to the type is the same as arithmetic modulo 2^bits. float16 is computed
 * in double. argmax / argmin of contiguous float rows find the extreme with the vectorised max /
 * min kernel, then its first position.
 *
 * The work is split over (output row, column chunk) items and, when there are too few of those
 * for the thread pool, also over parts of the reduction whose partial results are combined in a
 * fixed order afterwards. All splits depend on the shape only, so results do not depend on the
 * number of threads.
 *
 * Gradients: each rule emits the op's _backward_X (reduce_grad.c); argmax / argmin have none.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/reduce.h"

#define TILE 1024     /* elements converted at a time; accumulators per column chunk */
#define LANES 8       /* independent accumulators of a contiguous (inner == 1) reduction */
#define ACC_SZ 8      /* bytes of one accumulator (double or int64) */
#define PART_WORK 65536 /* elements per part when one output's reduction is split */

typedef enum red_kind {
    RED_SUM,
    RED_MEAN,
    RED_PROD,
    RED_NANSUM,
    RED_NANPROD,
    RED_MAX,
    RED_MIN,
    RED_NORM1,
    RED_NORM2,
    RED_NKINDS
} red_kind;
typedef enum { COMB_ADD, COMB_MUL, COMB_MAX, COMB_MIN } red_comb;
typedef enum { MAP_NONE, MAP_NAN0, MAP_NAN1, MAP_ABS, MAP_SQUARE } red_map;
typedef enum { FIN_NONE, FIN_MEAN, FIN_SQRT } red_fin;
typedef enum { DOM_F, DOM_I } red_dom;

/* Tiles and accumulator arrays hold doubles or int64s by domain; the union keeps either view
 * legal for the kernels, which see them as void *. */
typedef union {
    double f[TILE];
    int64_t i[TILE];
} red_tile;

typedef union {
    double f[LANES];
    int64_t i[LANES];
} red_lanes;

/* ---- geometry ----------------------------------------------------------------------------- */

typedef struct red_geom {
    int64_t outer, inner; /* output = outer rows of inner values */
    int nk, nr;           /* kept dims before inner / reduced dims (innermost last) */
    int64_t kshape[HG_MAX_NDIM], kstride[HG_MAX_NDIM];
    int64_t rshape[HG_MAX_NDIM], rstride[HG_MAX_NDIM];
    int64_t R;   /* elements reduced into each output */
    int64_t run; /* size of the innermost reduced group: consecutive rows of `inner` */
} red_geom;

static void geom_build(int ndim, const int64_t *shape, const bool *red, red_geom *g)
{
    int64_t gs[HG_MAX_NDIM], st[HG_MAX_NDIM];
    bool gr[HG_MAX_NDIM];
    int ng = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        if (ng > 0 && gr[ng - 1] == red[d]) {
            gs[ng - 1] *= shape[d];
        } else {
            gs[ng] = shape[d];
            gr[ng++] = red[d];
        }
    }
    memset(g, 0, sizeof *g);
    g->inner = 1;
    if (ng > 0 && !gr[ng - 1]) g->inner = gs[--ng];
    int64_t s = g->inner;
    for (int k = ng - 1; k >= 0; k--) {
        st[k] = s;
        s *= gs[k];
    }
    g->outer = g->R = 1;
    for (int k = 0; k < ng; k++) {
        if (gr[k]) {
            g->rshape[g->nr] = gs[k];
            g->rstride[g->nr++] = st[k];
            g->R *= gs[k];
        } else {
            g->kshape[g->nk] = gs[k];
            g->kstride[g->nk++] = st[k];
            g->outer *= gs[k];
        }
    }
    g->run = g->nr ? g->rshape[g->nr - 1] : 1;
}

/* Input offset (elements) of index o over the first nk kept dims. */
static int64_t kept_offset(const red_geom *g, int64_t o, int nk)
{
    int64_t off = 0;
    for (int d = nk - 1; d >= 0; d--) {
        off += (o % g->kshape[d]) * g->kstride[d];
        o /= g->kshape[d];
    }
    return off;
}

/* Input offset of run number `grp` over the reduced dims other than the innermost. */
static int64_t run_offset(const red_geom *g, int64_t grp)
{
    int64_t off = 0;
    for (int d = g->nr - 2; d >= 0; d--) {
        off += (grp % g->rshape[d]) * g->rstride[d];
        grp /= g->rshape[d];
    }
    return off;
}

/* ---- tile conversion ---------------------------------------------------------------------- */

#define LOAD_CASE(DT, T, DST, EXPR)                                                             \
    case DT: {                                                                                  \
        const T *s = src;                                                                       \
        for (int64_t i = 0; i < n; i++) DST[i] = EXPR;                                          \
        break;                                                                                  \
    }

static void load_f(hg_dtype dt, const void *src, int64_t n, double *t, red_map map)
{
    switch (dt) {
        LOAD_CASE(HG_DTYPE_F32, float, t, s[i])
        LOAD_CASE(HG_DTYPE_F64, double, t, s[i])
        LOAD_CASE(HG_DTYPE_F16, uint16_t, t, hg_half_to_float(s[i]))
        LOAD_CASE(HG_DTYPE_I32, int32_t, t, (double)s[i])
        LOAD_CASE(HG_DTYPE_I64, int64_t, t, (double)s[i])
        LOAD_CASE(HG_DTYPE_I8, int8_t, t, s[i])
        LOAD_CASE(HG_DTYPE_U8, uint8_t, t, s[i])
    default: break;
    }
    switch (map) {
    case MAP_NAN0:
        for (int64_t i = 0; i < n; i++) t[i] = t[i] != t[i] ? 0.0 : t[i];
        break;
    case MAP_NAN1:
        for (int64_t i = 0; i < n; i++) t[i] = t[i] != t[i] ? 1.0 : t[i];
        break;
    case MAP_ABS:
        for (int64_t i = 0; i < n; i++) t[i] = fabs(t[i]);
        break;
    case MAP_SQUARE:
        for (int64_t i = 0; i < n; i++) t[i] = t[i] * t[i];
        break;
    default: break;
    }
}

static void load_i(hg_dtype dt, const void *src, int64_t n, int64_t *t)
{
    switch (dt) {
        LOAD_CASE(HG_DTYPE_I32, int32_t, t, s[i])
        LOAD_CASE(HG_DTYPE_I64, int64_t, t, s[i])
        LOAD_CASE(HG_DTYPE_I8, int8_t, t, s[i])
        LOAD_CASE(HG_DTYPE_U8, uint8_t, t, s[i])
    default: break;
    }
}

#define STORE_CASE(DT, T, EXPR)                                                                 \
    case DT: {                                                                                  \
        T *d = dst;                                                                             \
        for (int64_t i = 0; i < n; i++) d[i] = EXPR;                                            \
        break;                                                                                  \
    }

static void store_f(hg_dtype dt, const double *v, int64_t n, void *dst)
{
    switch (dt) {
        STORE_CASE(HG_DTYPE_F32, float, (float)v[i])
        STORE_CASE(HG_DTYPE_F64, double, v[i])
        STORE_CASE(HG_DTYPE_F16, uint16_t, hg_float_to_half((float)v[i]))
        STORE_CASE(HG_DTYPE_I32, int32_t, (int32_t)v[i])
        STORE_CASE(HG_DTYPE_I64, int64_t, (int64_t)v[i])
        STORE_CASE(HG_DTYPE_I8, int8_t, (int8_t)v[i])
        STORE_CASE(HG_DTYPE_U8, uint8_t, (uint8_t)v[i])
    default: break;
    }
}

/* Integer results wrap to the output type first (as MXNet's same-type accumulation does); a mean
 * then divides in that type, truncating like MXNet. count == 0 (mean of nothing) gives 0. */
static void store_i(hg_dtype dt, const int64_t *v, int64_t n, void *dst, int64_t div)
{
#define Q(T) (div > 1 ? (T)((T)v[i] / div) : div == 1 ? (T)v[i] : (T)0)
    switch (dt) {
        STORE_CASE(HG_DTYPE_I32, int32_t, Q(int32_t))
        STORE_CASE(HG_DTYPE_I64, int64_t, Q(int64_t))
        STORE_CASE(HG_DTYPE_I8, int8_t, Q(int8_t))
        STORE_CASE(HG_DTYPE_U8, uint8_t, Q(uint8_t))
    default: break;
    }
#undef Q
}

void hg_reduce_load(hg_dtype dt, const void *src, int64_t n, double *dst)
{
    load_f(dt, src, n, dst, MAP_NONE);
}

void hg_reduce_store(hg_dtype dt, const double *src, int64_t n, void *dst)
{
    store_f(dt, src, n, dst);
}

/* ---- combine kernels ---------------------------------------------------------------------- */

/* max/min keep a NaN once seen and take a NaN that arrives (MXNet's red::maximum semantics).
 * `&` rather than `&&`: both comparisons always run, so gcc may if-convert and vectorise (it will
 * not speculate a possibly trapping comparison under the default -ftrapping-math). */
#define F_ADD(a, b) ((a) + (b))
#define F_MUL(a, b) ((a) * (b))
#define F_MAX(a, b) ((((a) == (a)) & !((a) >= (b))) ? (b) : (a))
#define F_MIN(a, b) ((((a) == (a)) & !((a) <= (b))) ? (b) : (a))
#define I_ADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define I_MUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define I_MAX(a, b) ((a) >= (b) ? (a) : (b))
#define I_MIN(a, b) ((a) <= (b) ? (a) : (b))

/* Kernels over a source of type S whose elements become accumulators of type D via LD(v):
 * rows:  acc[i] = op(acc[i], LD(x[k*stride + i])) for k < m, i < w.
 * lanes: ln[j % LANES] = op(ln[j % LANES], LD(x[j])) for j < n (tail into the first lanes); the
 *        lanes live in a local array during the loop so gcc keeps them in vector registers.
 * segs:  out[s] = op over LD(x[s*len .. s*len + len)) for s < m (many short reductions).
 * The tile kernels have S == D (data already converted and mapped); the fused ones read float32
 * or float64 input directly, skipping the tile, for the common sum / mean / max / min / L2. */
#define SEG_SHORT 16 /* segments shorter than this are folded by a plain scalar loop */
#define DEF_LANES(SUF, S, D, OP, LD)                                                            \
    static void lanes_##SUF(void *ln_, const void *x_, int64_t n)                               \
    {                                                                                           \
        const S *restrict x = x_;                                                               \
        D ln[LANES];                                                                            \
        memcpy(ln, ln_, sizeof ln);                                                             \
        int64_t j = 0;                                                                          \
        for (; j + LANES <= n; j += LANES)                                                      \
            for (int k = 0; k < LANES; k++) ln[k] = OP(ln[k], LD(x[j + k]));                    \
        for (int k = 0; j < n; j++, k++) ln[k] = OP(ln[k], LD(x[j]));                           \
        memcpy(ln_, ln, sizeof ln);                                                             \
    }

/* gcc does not vectorise the NaN-aware select of max/min across lanes by itself, so those lanes
 * are written with GCC vector extensions: LANES doubles as LANES/2 vectors of two. KEEP(a, b)
 * is the mask of lanes where the accumulator a stays (it is NaN, or already at least as good). */
typedef double red_v2d __attribute__((vector_size(16)));
typedef int64_t red_v2l __attribute__((vector_size(16)));
#define KEEP_MAX(a, b) (((a) != (a)) | ((a) >= (b)))
#define KEEP_MIN(a, b) (((a) != (a)) | ((a) <= (b)))
#define DEF_VLANES(SUF, S, KEEP)                                                                \
    static void lanes_##SUF(void *ln_, const void *x_, int64_t n)                               \
    {                                                                                           \
        const S *restrict x = x_;                                                               \
        double *l = ln_;                                                                        \
        red_v2d v[LANES / 2];                                                                   \
        memcpy(v, l, sizeof v);                                                                 \
        int64_t j = 0;                                                                          \
        for (; j + LANES <= n; j += LANES)                                                      \
            for (int k = 0; k < LANES / 2; k++) {                                               \
                red_v2d b = {x[j + 2 * k], x[j + 2 * k + 1]};                                   \
                red_v2l keep = KEEP(v[k], b);                                                   \
                v[k] = (red_v2d)(((red_v2l)v[k] & keep) | ((red_v2l)b & ~keep));                \
            }                                                                                   \
        memcpy(l, v, sizeof v);                                                                 \
        for (int k = 0; j < n; j++, k++) {                                                      \
            double b = x[j];                                                                    \
            l[k] = KEEP(l[k], b) ? l[k] : b;                                                    \
        }                                                                                       \
    }

/* float32 max/min compare in float (exact: a max picks one of its inputs), four to a vector. */
typedef float red_v4f __attribute__((vector_size(16)));
typedef int32_t red_v4i __attribute__((vector_size(16)));
#define DEF_VLANES_F32(SUF, KEEP)                                                               \
    static void lanes_##SUF(void *ln_, const void *x_, int64_t n)                               \
    {                                                                                           \
        const float *restrict x = x_;                                                           \
        double *l = ln_;                                                                        \
        red_v4f v[LANES / 4];                                                                   \
        for (int k = 0; k < LANES / 4; k++)                                                     \
            for (int e = 0; e < 4; e++) v[k][e] = (float)l[4 * k + e];                          \
        int64_t j = 0;                                                                          \
        for (; j + LANES <= n; j += LANES)                                                      \
            for (int k = 0; k < LANES / 4; k++) {                                               \
                red_v4f b;                                                                      \
                memcpy(&b, x + j + 4 * k, sizeof b);                                            \
                red_v4i keep = KEEP(v[k], b);                                                   \
                v[k] = (red_v4f)(((red_v4i)v[k] & keep) | ((red_v4i)b & ~keep));                \
            }                                                                                   \
        for (int k = 0; k < LANES / 4; k++)                                                     \
            for (int e = 0; e < 4; e++) l[4 * k + e] = v[k][e];                                 \
        for (int k = 0; j < n; j++, k++) {                                                      \
            double b = x[j];                                                                    \
            l[k] = KEEP(l[k], b) ? l[k] : b;                                                    \
        }                                                                                       \
    }

#define DEF_ROWS_SEGS(SUF, S, D, OP, LD)                                                        \
    static void rows_##SUF(void *acc_, const void *x_, int64_t m, int64_t w, int64_t stride)    \
    {                                                                                           \
        D *restrict acc = acc_;                                                                 \
        const S *restrict x = x_;                                                               \
        for (int64_t k = 0; k < m; k++, x += stride)                                            \
            for (int64_t i = 0; i < w; i++) acc[i] = OP(acc[i], LD(x[i]));                      \
    }                                                                                           \
    static void segs_##SUF(void *out_, const void *x_, int64_t m, int64_t len, D ident)        \
    {                                                                                           \
        D *restrict out = out_;                                                                 \
        const S *restrict x = x_;                                                               \
        for (int64_t s = 0; s < m; s++, x += len) {                                             \
            D a = ident;                                                                        \
            if (len < SEG_SHORT) {                                                              \
                for (int64_t k = 0; k < len; k++) a = OP(a, LD(x[k]));                          \
            } else {                                                                            \
                D ln[LANES];                                                                    \
                for (int k = 0; k < LANES; k++) ln[k] = ident;                                  \
                lanes_##SUF(ln, x, len);                                                        \
                for (int k = 0; k < LANES; k++) a = OP(a, ln[k]);                               \
            }                                                                                   \
            out[s] = a;                                                                         \
        }                                                                                       \
    }
#define DEF_KERNELS(SUF, S, D, OP, LD) DEF_LANES(SUF, S, D, OP, LD) DEF_ROWS_SEGS(SUF, S, D, OP, LD)
#define DEF_FOLD(SUF, D, OP)                                                                    \
    static void fold_##SUF(const void *ln_, void *out)                                          \
    {                                                                                           \
        const D *ln = ln_;                                                                      \
        D a = ln[0];                                                                            \
        for (int k = 1; k < LANES; k++) a = OP(a, ln[k]);                                       \
        *(D *)out = a;                                                                          \
    }
#define AS_IS(v) (v)
#define TO_F(v) ((double)(v))
#define SQ_F(v) ((double)(v) * (double)(v))

DEF_KERNELS(add_f, double, double, F_ADD, AS_IS)
DEF_KERNELS(mul_f, double, double, F_MUL, AS_IS)
DEF_VLANES(max_f, double, KEEP_MAX)
DEF_ROWS_SEGS(max_f, double, double, F_MAX, AS_IS)
DEF_VLANES(min_f, double, KEEP_MIN)
DEF_ROWS_SEGS(min_f, double, double, F_MIN, AS_IS)
DEF_KERNELS(add_i, int64_t, int64_t, I_ADD, AS_IS)
DEF_KERNELS(mul_i, int64_t, int64_t, I_MUL, AS_IS)
DEF_KERNELS(max_i, int64_t, int64_t, I_MAX, AS_IS)
DEF_KERNELS(min_i, int64_t, int64_t, I_MIN, AS_IS)
DEF_KERNELS(add_f32, float, double, F_ADD, TO_F)
DEF_KERNELS(sq_f32, float, double, F_ADD, SQ_F)
DEF_VLANES_F32(max_f32, KEEP_MAX)
DEF_ROWS_SEGS(max_f32, float, double, F_MAX, TO_F)
DEF_VLANES_F32(min_f32, KEEP_MIN)
DEF_ROWS_SEGS(min_f32, float, double, F_MIN, TO_F)
DEF_KERNELS(sq_f64, double, double, F_ADD, SQ_F)
DEF_FOLD(add_f, double, F_ADD)
DEF_FOLD(mul_f, double, F_MUL)
DEF_FOLD(max_f, double, F_MAX)
DEF_FOLD(min_f, double, F_MIN)
DEF_FOLD(add_i, int64_t, I_ADD)
DEF_FOLD(mul_i, int64_t, I_MUL)
DEF_FOLD(max_i, int64_t, I_MAX)
DEF_FOLD(min_i, int64_t, I_MIN)

/* A kernel set. segs takes the identity by value, so its type differs by domain: FNS_F fills
 * segs_f, FNS_I segs_i. */
typedef struct red_fns {
    void (*rows)(void *acc, const void *x, int64_t m, int64_t w, int64_t stride);
    void (*lanes)(void *ln, const void *x, int64_t n);
    void (*segs_f)(void *out, const void *x, int64_t m, int64_t len, double ident);
    void (*segs_i)(void *out, const void *x, int64_t m, int64_t len, int64_t ident);
} red_fns;

#define FNS_F(SUF) {rows_##SUF, lanes_##SUF, segs_##SUF, NULL}
#define FNS_I(SUF) {rows_##SUF, lanes_##SUF, NULL, segs_##SUF}
static const red_fns k_tile_fns[2][4] = {
    [DOM_F] = {[COMB_ADD] = FNS_F(add_f),
               [COMB_MUL] = FNS_F(mul_f),
               [COMB_MAX] = FNS_F(max_f),
               [COMB_MIN] = FNS_F(min_f)},
    [DOM_I] = {[COMB_ADD] = FNS_I(add_i),
               [COMB_MUL] = FNS_I(mul_i),
               [COMB_MAX] = FNS_I(max_i),
               [COMB_MIN] = FNS_I(min_i)},
};
static void (*const k_folds[2][4])(const void *, void *) = {
    [DOM_F] = {[COMB_ADD] = fold_add_f,
               [COMB_MUL] = fold_mul_f,
               [COMB_MAX] = fold_max_f,
               [COMB_MIN] = fold_min_f},
    [DOM_I] = {[COMB_ADD] = fold_add_i,
               [COMB_MUL] = fold_mul_i,
               [COMB_MAX] = fold_max_i,
               [COMB_MIN] = fold_min_i},
};

/* The fused kernels for (input dtype, combine, map), or NULL: use tiles. */
static const red_fns *fused_fns(hg_dtype dt, red_comb comb, red_map map)
{
    static const red_fns f32[] = {FNS_F(add_f32), FNS_F(sq_f32), FNS_F(max_f32), FNS_F(min_f32)};
    static const red_fns f64[] = {FNS_F(add_f), FNS_F(sq_f64), FNS_F(max_f), FNS_F(min_f)};
    const red_fns *t = dt == HG_DTYPE_F32 ? f32 : dt == HG_DTYPE_F64 ? f64 : NULL;
    if (!t) return NULL;
    if (comb == COMB_ADD && map == MAP_NONE) return &t[0];
    if (comb == COMB_ADD && map == MAP_SQUARE) return &t[1];
    if (comb == COMB_MAX && map == MAP_NONE) return &t[2];
    if (comb == COMB_MIN && map == MAP_NONE) return &t[3];
    return NULL;
}

/* ---- the reduction driver ----------------------------------------------------------------- */

#define SEG_MAX 256 /* runs up to this long (inner == 1) are reduced as segments, see seg_block */

typedef struct red_job {
    red_geom g;
    const char *x;
    char *y;
    hg_dtype in_dt, out_dt;
    size_t esz, osz;
    red_dom dom;
    red_comb comb;
    red_map map;
    red_fin fin;
    red_fns tile_fn;       /* kernels over converted tiles */
    const red_fns *fused;  /* kernels reading the input directly, or NULL */
    void (*fold)(const void *ln, void *out);
    double ident_f;
    int64_t ident_i;
    int64_t count;         /* elements reduced into each output (mean) */
    bool seg;              /* segment mode (seg_block) rather than row mode (row_block) */
    int64_t row_w;         /* outputs per output row: inner (rows) or the last kept dim (segs) */
    int64_t cw, nchunk;    /* column chunk width and chunks per output row */
    int64_t items, steps;  /* work items; reduction steps of each item */
    int64_t parts;         /* > 1: each item's steps split into parts, combined afterwards */
    char *part;            /* parts > 1: accumulators [item][part][cw] */
} red_job;

static void fill_ident(const red_job *j, void *acc, int64_t n)
{
    if (j->dom == DOM_F)
        for (int64_t i = 0; i < n; i++) ((double *)acc)[i] = j->ident_f;
    else
        for (int64_t i = 0; i < n; i++) ((int64_t *)acc)[i] = j->ident_i;
}

/* Converts m rows of w input elements, `stride` apart, starting at offset off into dst[m*w]. */
static void load_rows(const red_job *j, int64_t off, int64_t m, int64_t w, int64_t stride,
                      void *dst)
{
    for (int64_t k = 0; k < m; k++) {
        const char *src = j->x + (off + k * stride) * (int64_t)j->esz;
        if (j->dom == DOM_F) load_f(j->in_dt, src, w, (double *)dst + k * w, j->map);
        else load_i(j->in_dt, src, w, (int64_t *)dst + k * w);
    }
}

static void segs(const red_job *j, const red_fns *fn, void *out, const void *x, int64_t m,
                 int64_t len)
{
    if (j->dom == DOM_F) fn->segs_f(out, x, m, len, j->ident_f);
    else fn->segs_i(out, x, m, len, j->ident_i);
}

static void *tile_ptr(const red_job *j, red_tile *t)
{
    return j->dom == DOM_F ? (void *)t->f : (void *)t->i;
}

/* Finalises n accumulators (scratch, modified) and writes outputs starting at output index idx. */
static void store_out(const red_job *j, void *acc, int64_t n, int64_t idx)
{
    char *dst = j->y + idx * (int64_t)j->osz;
    if (j->dom == DOM_I) {
        store_i(j->out_dt, acc, n, dst, j->fin == FIN_MEAN ? j->count : 1);
        return;
    }
    double *a = acc;
    if (j->fin == FIN_MEAN)
        for (int64_t i = 0; i < n; i++) a[i] /= (double)j->count;
    else if (j->fin == FIN_SQRT)
        for (int64_t i = 0; i < n; i++) a[i] = sqrt(a[i]);
    store_f(j->out_dt, a, n, dst);
}

/* Row mode. Step r is the r-th reduced element; rows of one run are consecutive. Reduces steps
 * [r0, r1) of output row o, columns [c0, c0 + w), into acc[w]: with inner > 1 by adding whole
 * rows into acc, with inner == 1 into LANES accumulators folded at the end. */
static void row_block(const red_job *j, int64_t o, int64_t c0, int64_t w, int64_t r0, int64_t r1,
                      void *acc)
{
    const red_geom *g = &j->g;
    red_tile t;
    red_lanes lanes;
    void *ln = j->dom == DOM_F ? (void *)lanes.f : (void *)lanes.i, *tp = tile_ptr(j, &t);
    int64_t base = kept_offset(g, o, g->nk) + c0;
    bool horiz = g->inner == 1;
    fill_ident(j, horiz ? ln : acc, horiz ? LANES : w);
    for (int64_t r = r0; r < r1;) {
        int64_t row = r % g->run;
        int64_t off = base + run_offset(g, r / g->run) + row * g->inner;
        int64_t m = g->run - row < r1 - r ? g->run - row : r1 - r; /* rows left in this run */
        if (j->fused) {
            const char *src = j->x + off * (int64_t)j->esz;
            if (horiz) j->fused->lanes(ln, src, m);
            else j->fused->rows(acc, src, m, w, g->inner);
        } else if (horiz) {
            if (m > TILE) m = TILE;
            load_rows(j, off, 1, m, m, tp);
            j->tile_fn.lanes(ln, tp, m);
        } else {
            if (m > TILE / w) m = TILE / w;
            load_rows(j, off, m, w, g->inner, tp);
            j->tile_fn.rows(acc, tp, m, w, w);
        }
        r += m;
    }
    if (horiz) j->fold(ln, acc);
}

/* Segment mode (inner == 1, short last run L, a kept dim K right before it): the K*L block of
 * one step is contiguous, so each step reduces K segments of L at once and adds them into
 * acc[K]. Step r indexes the reduced dims other than the last; o the kept dims other than K. */
static void seg_block(const red_job *j, int64_t o, int64_t k0, int64_t w, int64_t r0, int64_t r1,
                      void *acc)
{
    const red_geom *g = &j->g;
    red_tile t, tmp;
    void *tp = tile_ptr(j, &t), *mp = tile_ptr(j, &tmp);
    int64_t L = g->run, base = kept_offset(g, o, g->nk - 1) + k0 * L;
    fill_ident(j, acc, w);
    for (int64_t r = r0; r < r1; r++) {
        int64_t off = base + run_offset(g, r);
        if (j->fused) {
            segs(j, j->fused, mp, j->x + off * (int64_t)j->esz, w, L);
        } else {
            load_rows(j, off, 1, w * L, w * L, tp);
            segs(j, &j->tile_fn, mp, tp, w, L);
        }
        j->tile_fn.rows(acc, mp, 1, w, w);
    }
}

/* Item `it` is output row o, column chunk c: it covers outputs [*idx, *idx + *w). */
static void item_run(const red_job *j, int64_t it, int64_t r0, int64_t r1, void *acc, int64_t *w,
                     int64_t *idx)
{
    int64_t o = it / j->nchunk, c0 = it % j->nchunk * j->cw;
    *w = j->row_w - c0 < j->cw ? j->row_w - c0 : j->cw;
    *idx = o * j->row_w + c0;
    if (j->seg) seg_block(j, o, c0, *w, r0, r1, acc);
    else row_block(j, o, c0, *w, r0, r1, acc);
}

static void direct_range(void *ctx, int64_t b, int64_t e)
{
    const red_job *j = ctx;
    red_tile acc;
    void *ap = tile_ptr(j, &acc);
    for (int64_t it = b; it < e; it++) {
        int64_t w, idx;
        item_run(j, it, 0, j->steps, ap, &w, &idx);
        store_out(j, ap, w, idx);
    }
}

static void part_range(void *ctx, int64_t b, int64_t e)
{
    const red_job *j = ctx;
    for (int64_t it = b; it < e; it++) {
        int64_t item = it / j->parts, p = it % j->parts, w, idx;
        int64_t r0 = j->steps * p / j->parts, r1 = j->steps * (p + 1) / j->parts;
        item_run(j, item, r0, r1, j->part + it * j->cw * ACC_SZ, &w, &idx);
    }
}

/* Combines the parts of each item in order (so results do not depend on the thread count). */
static void part_combine(const red_job *j)
{
    for (int64_t item = 0; item < j->items; item++) {
        int64_t c0 = item % j->nchunk * j->cw;
        int64_t w = j->row_w - c0 < j->cw ? j->row_w - c0 : j->cw;
        char *acc = j->part + item * j->parts * j->cw * ACC_SZ;
        for (int64_t p = 1; p < j->parts; p++)
            j->tile_fn.rows(acc, acc + p * j->cw * ACC_SZ, 1, w, w);
        store_out(j, acc, w, item / j->nchunk * j->row_w + c0);
    }
}

static void job_setup(red_job *j, red_kind kind, const hg_tensor *x, hg_tensor *y)
{
    static const red_comb comb[] = {
        [RED_SUM] = COMB_ADD,    [RED_MEAN] = COMB_ADD,    [RED_PROD] = COMB_MUL,
        [RED_NANSUM] = COMB_ADD, [RED_NANPROD] = COMB_MUL, [RED_MAX] = COMB_MAX,
        [RED_MIN] = COMB_MIN,    [RED_NORM1] = COMB_ADD,   [RED_NORM2] = COMB_ADD,
    };
    _Static_assert(HG_COUNT(comb) == RED_NKINDS, "comb must match red_kind");
    static const red_map map[] = {
        [RED_SUM] = MAP_NONE,    [RED_MEAN] = MAP_NONE,    [RED_PROD] = MAP_NONE,
        [RED_NANSUM] = MAP_NAN0, [RED_NANPROD] = MAP_NAN1, [RED_MAX] = MAP_NONE,
        [RED_MIN] = MAP_NONE,    [RED_NORM1] = MAP_ABS,    [RED_NORM2] = MAP_SQUARE,
    };
    _Static_assert(HG_COUNT(map) == RED_NKINDS, "map must match red_kind");
    bool fl = x->dtype == HG_DTYPE_F32 || x->dtype == HG_DTYPE_F64 || x->dtype == HG_DTYPE_F16;
    j->x = hg_data(x);
    j->y = hg_data(y);
    j->in_dt = x->dtype;
    j->out_dt = y->dtype;
    j->esz = hg_dtype_size(x->dtype);
    j->osz = hg_dtype_size(y->dtype);
    j->dom = fl || kind == RED_NORM1 || kind == RED_NORM2 ? DOM_F : DOM_I;
    j->comb = comb[kind];
    j->map = j->dom == DOM_F ? map[kind] : MAP_NONE;
    j->fin = kind == RED_MEAN ? FIN_MEAN : kind == RED_NORM2 ? FIN_SQRT : FIN_NONE;
    j->tile_fn = k_tile_fns[j->dom][j->comb];
    j->fused = fused_fns(j->in_dt, j->comb, j->map);
    j->fold = k_folds[j->dom][j->comb];
    switch (j->comb) {
    case COMB_ADD:
        j->ident_f = 0;
        j->ident_i = 0;
        break;
    case COMB_MUL:
        j->ident_f = 1;
        j->ident_i = 1;
        break;
    case COMB_MAX:
        j->ident_f = -INFINITY;
        j->ident_i = INT64_MIN;
        break;
    case COMB_MIN:
        j->ident_f = INFINITY;
        j->ident_i = INT64_MAX;
        break;
    }
}

/* Chooses the mode, the column chunks and the parts from the shape alone. */
static void job_plan(red_job *j)
{
    const red_geom *g = &j->g;
    j->seg = g->inner == 1 && g->nk > 0 && g->nr > 0 && g->run <= SEG_MAX;
    if (j->seg) {
        j->row_w = g->kshape[g->nk - 1];
        int64_t cap = j->fused ? TILE : TILE / g->run;
        j->cw = j->row_w < cap ? j->row_w : cap;
        j->steps = g->R / g->run;
    } else {
        j->row_w = g->inner;
        j->cw = g->inner < TILE ? g->inner : TILE;
        j->steps = g->R;
    }
    j->nchunk = (j->row_w + j->cw - 1) / j->cw;
    j->items = (j->seg ? g->outer / j->row_w : g->outer) * j->nchunk;
    j->parts = 1;
    int64_t size = g->outer * g->inner * g->R;
    if (j->items < 8 && size >= 4 * PART_WORK) {
        j->parts = size / PART_WORK;
        if (j->parts > 64) j->parts = 64;
        if (j->parts > j->steps) j->parts = j->steps;
    }
}

static hg_status reduce_run(red_kind kind, const bool *red, const hg_tensor *x, hg_tensor *y)
{
    red_job j;
    memset(&j, 0, sizeof j);
    job_setup(&j, kind, x, y);
    j.count = 1;
    for (int d = 0; d < x->ndim; d++)
        if (red[d]) j.count *= x->shape[d];
    if (x->size == 0) { /* empty reductions: the identity, finalised (mean: NaN, int 0) */
        red_tile acc;
        void *ap = tile_ptr(&j, &acc);
        for (int64_t o = 0; o < y->size; o += TILE) {
            int64_t n = y->size - o < TILE ? y->size - o : TILE;
            fill_ident(&j, ap, n);
            store_out(&j, ap, n, o);
        }
        return HG_OK;
    }
    geom_build(x->ndim, x->shape, red, &j.g);
    job_plan(&j);
    if (j.parts == 1) {
        int64_t work = x->size / j.items;
        int64_t grain = work >= HG_GRAIN_ELEMWISE ? 1 : HG_GRAIN_ELEMWISE / work;
        hg_parallel_for(j.items, grain, direct_range, &j);
        return HG_OK;
    }
    size_t bytes = (size_t)(j.items * j.parts * j.cw) * ACC_SZ;
    j.part = hg_alloc(bytes);
    if (!j.part) return hg_error(HG_ERR_MEMORY, "reduction: out of memory for %zu bytes", bytes);
    hg_parallel_for(j.items * j.parts, 1, part_range, &j);
    part_combine(&j);
    hg_free(j.part, bytes);
    return HG_OK;
}

/* ---- argmax / argmin ---------------------------------------------------------------------- */

typedef struct arg_job {
    red_geom g;
    const char *x;
    char *y;
    hg_dtype dt;
    size_t esz;
    red_dom dom;
    bool is_min;
    const red_fns *fused; /* float32/float64 max or min kernels, or NULL */
    int64_t cw, nchunk;
} arg_job;

/* First index of the max (min); a NaN wins and stays (as MXNet's maximum reducer does). */
#define ARG_ROWS(SUF, D, BETTER)                                                                \
    static void arg_##SUF(D *restrict best, int64_t *restrict idx, const D *restrict t,         \
                          int64_t m, int64_t w, int64_t r)                                      \
    {                                                                                           \
        for (int64_t k = 0; k < m; k++, t += w)                                                 \
            for (int64_t i = 0; i < w; i++) {                                                   \
                D a = best[i], v = t[i];                                                        \
                bool up = BETTER;                                                               \
                best[i] = up ? v : a;                                                           \
                idx[i] = up ? r + k : idx[i];                                                   \
            }                                                                                   \
    }
ARG_ROWS(max_f, double, (a == a) & !(a >= v))
ARG_ROWS(min_f, double, (a == a) & !(a <= v))
ARG_ROWS(max_i, int64_t, v > a)
ARG_ROWS(min_i, int64_t, v < a)

/* inner == 1 on float32/float64: the extreme by the vectorised lanes kernel, then the first index
 * holding it, or the first NaN when there is one (a NaN wins, as in the scan). */
static int64_t arg_contiguous(const arg_job *j, const red_fns *fn, int64_t base)
{
    red_comb comb = j->is_min ? COMB_MIN : COMB_MAX;
    double ln[LANES], best;
    for (int k = 0; k < LANES; k++) ln[k] = j->is_min ? INFINITY : -INFINITY;
    const void *src = j->x + base * (int64_t)j->esz;
    int64_t n = j->g.R;
    fn->lanes(ln, src, n);
    k_folds[DOM_F][comb](ln, &best);
    /* Blocks of 16 are tested with vector compares, then the block with the hit is rescanned. */
#define FIND(T, VT, VI, PER, HIT)                                                               \
    do {                                                                                        \
        const T *p = src;                                                                       \
        const T bt = (T)best;                                                                   \
        const VT bv = bt - (VT){0};                                                             \
        (void)bv;                                                                               \
        int64_t i = 0;                                                                          \
        for (; i + 16 <= n; i += 16) {                                                          \
            VI h = {0};                                                                         \
            for (int k = 0; k < 16 / PER; k++) {                                                \
                VT v;                                                                           \
                memcpy(&v, p + i + PER * k, sizeof v);                                          \
                h |= HIT(v, bv);                                                                \
            }                                                                                   \
            int any = 0;                                                                        \
            for (int e = 0; e < PER; e++) any |= h[e] != 0;                                     \
            if (any) break;                                                                     \
        }                                                                                       \
        for (; i < n; i++)                                                                      \
            if (HIT(p[i], bt)) return i;                                                        \
    } while (0)
#define IS_NAN(v, b) ((v) != (v))
#define IS_EQ(v, b) ((v) == (b))
    bool nan = best != best;
    if (j->dt == HG_DTYPE_F32 && nan) FIND(float, red_v4f, red_v4i, 4, IS_NAN);
    else if (j->dt == HG_DTYPE_F32) FIND(float, red_v4f, red_v4i, 4, IS_EQ);
    else if (nan) FIND(double, red_v2d, red_v2l, 2, IS_NAN);
    else FIND(double, red_v2d, red_v2l, 2, IS_EQ);
    return 0;
#undef FIND
#undef IS_NAN
#undef IS_EQ
}

static void arg_block(const arg_job *j, int64_t o, int64_t c0, int64_t w, int64_t *idx)
{
    const red_geom *g = &j->g;
    red_tile t;
    double best_f[TILE];
    int64_t best_i[TILE];
    int64_t base = kept_offset(g, o, g->nk) + c0;
    if (g->inner == 1 && j->fused) {
        idx[0] = arg_contiguous(j, j->fused, base);
        return;
    }
    for (int64_t i = 0; i < w; i++) {
        idx[i] = 0;
        best_f[i] = j->is_min ? INFINITY : -INFINITY;
        best_i[i] = j->is_min ? INT64_MAX : INT64_MIN;
    }
    for (int64_t r = 0; r < g->R;) {
        int64_t m = g->R - r;
        if (w != g->inner) m = 1; /* a column chunk: rows are not contiguous */
        else if (m > TILE / w) m = TILE / w;
        const char *src = j->x + (base + r * g->inner) * (int64_t)j->esz;
        if (j->dom == DOM_F) {
            load_f(j->dt, src, m * w, t.f, MAP_NONE);
            if (j->is_min) arg_min_f(best_f, idx, t.f, m, w, r);
            else arg_max_f(best_f, idx, t.f, m, w, r);
        } else {
            load_i(j->dt, src, m * w, t.i);
            if (j->is_min) arg_min_i(best_i, idx, t.i, m, w, r);
            else arg_max_i(best_i, idx, t.i, m, w, r);
        }
        r += m;
    }
}

/* inner == 1 with short rows: row o is x[o*R .. o*R + R); a tile holds several rows. */
static void arg_short_rows(const arg_job *j, int64_t b, int64_t e)
{
    red_tile t;
    double v[TILE];
    int64_t R = j->g.R, per = TILE / R;
    for (int64_t o = b; o < e;) {
        int64_t m = e - o < per ? e - o : per;
        const char *src = j->x + o * R * (int64_t)j->esz;
        for (int64_t k = 0; k < m; k++) {
            int64_t bi = 0;
            if (j->dom == DOM_F) {
                double best = j->is_min ? INFINITY : -INFINITY;
                if (k == 0) load_f(j->dt, src, m * R, t.f, MAP_NONE);
                if (j->is_min) arg_min_f(&best, &bi, t.f + k * R, R, 1, 0);
                else arg_max_f(&best, &bi, t.f + k * R, R, 1, 0);
            } else {
                int64_t best = j->is_min ? INT64_MAX : INT64_MIN;
                if (k == 0) load_i(j->dt, src, m * R, t.i);
                if (j->is_min) arg_min_i(&best, &bi, t.i + k * R, R, 1, 0);
                else arg_max_i(&best, &bi, t.i + k * R, R, 1, 0);
            }
            v[k] = (double)bi;
        }
        store_f(j->dt, v, m, j->y + o * (int64_t)j->esz);
        o += m;
    }
}

static void arg_range(void *ctx, int64_t b, int64_t e)
{
    const arg_job *j = ctx;
    int64_t idx[TILE];
    double v[TILE];
    if (j->g.inner == 1 && (j->g.R < SEG_SHORT || (!j->fused && j->g.R <= SEG_MAX))) {
        arg_short_rows(j, b, e);
        return;
    }
    for (int64_t it = b; it < e; it++) {
        int64_t o = it / j->nchunk, c0 = it % j->nchunk * j->cw;
        int64_t w = j->g.inner - c0 < j->cw ? j->g.inner - c0 : j->cw;
        arg_block(j, o, c0, w, idx);
        for (int64_t i = 0; i < w; i++) v[i] = (double)idx[i];
        store_f(j->dt, v, w, j->y + (o * j->g.inner + c0) * (int64_t)j->esz);
    }
}

static hg_status arg_run(bool is_min, const hg_attrs *a, const hg_tensor *x, hg_tensor *y)
{
    bool red[HG_MAX_NDIM];
    const hg_attr_value *ax = &a->v[A_AXIS];
    int axis = ax->is_none || x->ndim == 0 ? -1 : (int)(ax->i < 0 ? ax->i + x->ndim : ax->i);
    for (int d = 0; d < x->ndim; d++) red[d] = axis < 0 || d == axis;
    arg_job j;
    memset(&j, 0, sizeof j);
    geom_build(x->ndim, x->shape, red, &j.g);
    j.x = hg_data(x);
    j.y = hg_data(y);
    j.dt = x->dtype;
    j.esz = hg_dtype_size(x->dtype);
    j.dom = j.dt == HG_DTYPE_I32 || j.dt == HG_DTYPE_I64 ? DOM_I : DOM_F;
    j.is_min = is_min;
    j.fused = fused_fns(j.dt, is_min ? COMB_MIN : COMB_MAX, MAP_NONE);
    /* A single reduced axis: run == R, and (inner == 1) rows of one element are scanned. */
    j.cw = j.g.inner < TILE ? j.g.inner : TILE;
    j.nchunk = (j.g.inner + j.cw - 1) / j.cw;
    int64_t items = j.g.outer * j.nchunk, work = j.g.R * j.cw;
    hg_parallel_for(items, work >= HG_GRAIN_ELEMWISE ? 1 : HG_GRAIN_ELEMWISE / work, arg_range, &j);
    return HG_OK;
}

/* ---- shape and dtype rules ---------------------------------------------------------------- */

static bool dtype_ok(hg_dtype dt)
{
    return dt != HG_DTYPE_BOOL && (int)dt >= 0 && dt < HG_NUM_DTYPES;
}

/* MXNet's ReduceAxesShapeImpl: fills red[] (which input dims are reduced) and out's shape.
 * axis None or () reduces everything (exclude is then ignored); full reductions without
 * keepdims give shape (1,). */
hg_status hg_reduce_axes(const hg_op_def *op, const hg_attr_value *axis, bool keepdims,
                         bool exclude, const hg_meta *x, hg_meta *out, bool *red)
{
    char s[HG_SHAPE_STR];
    int nd = x->ndim;
    bool listed[HG_MAX_NDIM] = {false};
    bool all = axis->is_none || axis->t.n == 0;
    for (int k = 0; !all && k < axis->t.n; k++) {
        int64_t v = axis->t.v[k];
        if (v < -nd || v >= nd)
            return hg_error(HG_ERR_VALUE,
                            "%s: reduction axis %lld is out of range for an input "
                            "of shape %s (ndim %d)",
                            op->name, (long long)v, hg_shape_str(s, nd, x->shape), nd);
        if (v < 0) v += nd;
        if (listed[v])
            return hg_error(HG_ERR_VALUE,
                            "%s: reduction axes have duplicates: axis %lld given "
                            "twice for an input of shape %s",
                            op->name, (long long)v, hg_shape_str(s, nd, x->shape));
        listed[v] = true;
    }
    int k = 0;
    for (int d = 0; d < nd; d++) {
        red[d] = all || (exclude ? !listed[d] : listed[d]);
        if (keepdims) out->shape[k++] = red[d] ? 1 : x->shape[d];
        else if (!red[d]) out->shape[k++] = x->shape[d];
    }
    if (k == 0 && !keepdims) out->shape[k++] = 1;
    out->ndim = k;
    return HG_OK;
}

static hg_status check_input(const hg_op_def *op, const hg_meta *x)
{
    if (!dtype_ok(x->dtype))
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name,
                        hg_dtype_name(x->dtype));
    return HG_OK;
}

static hg_status sum_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    bool red[HG_MAX_NDIM];
    (void)nin;
    (void)nout;
    HG_TRY(check_input(op, &in[0]));
    out[0].dtype = in[0].dtype;
    return hg_reduce_axes(op, &a->v[K_AXIS], a->v[K_KEEPDIMS].b, a->v[K_EXCLUDE].b, &in[0], &out[0],
                          red);
}

/* MXNet rejects max/min of an empty input (there is no identity to return). */
static hg_status minmax_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    char s[HG_SHAPE_STR];
    HG_TRY(sum_infer(op, a, nin, in, nout, out));
    if (hg_shape_size(in[0].ndim, in[0].shape) == 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: reduction input's size should be > 0, got shape %s "
                        "(zero-size array to a reduction with no identity)",
                        op->name, hg_shape_str(s, in[0].ndim, in[0].shape));
    return HG_OK;
}

static hg_status norm_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    bool red[HG_MAX_NDIM];
    (void)nin;
    (void)nout;
    HG_TRY(check_input(op, &in[0]));
    if (a->v[N_ORD].i != 1 && a->v[N_ORD].i != 2)
        return hg_error(HG_ERR_VALUE, "norm: ord=%lld is not supported, only ord=1 and ord=2",
                        (long long)a->v[N_ORD].i);
    const hg_attr_value *od = &a->v[N_OUT_DTYPE];
    out[0].dtype = in[0].dtype;
    if (!od->is_none) {
        hg_dtype dt = (hg_dtype)od->i;
        if (dt == HG_DTYPE_U8 || !dtype_ok(dt))
            return hg_error(HG_ERR_TYPE,
                            "norm: out_dtype %s is not supported (float16, float32, "
                            "float64, int32, int64 or int8)",
                            hg_dtype_name(dt));
        out[0].dtype = dt;
    }
    return hg_reduce_axes(op, &a->v[N_AXIS], a->v[N_KEEPDIMS].b, false, &in[0], &out[0], red);
}

/* MXNet's ReduceAxisShapeImpl plus the emptiness checks of its SearchAxisCompute. */
static hg_status arg_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    char s[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    const hg_attr_value *ax = &a->v[A_AXIS];
    bool keep = a->v[A_KEEPDIMS].b;
    int nd = x->ndim;
    (void)nin;
    (void)nout;
    hg_dtype dt = x->dtype;
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64 && dt != HG_DTYPE_F16 && dt != HG_DTYPE_I32 &&
        dt != HG_DTYPE_I64)
        return hg_error(HG_ERR_TYPE,
                        "%s: dtype %s is not supported (the output holds indices "
                        "in the input dtype; use float32/float64/float16/int32/int64)",
                        op->name, hg_dtype_name(dt));
    out[0].dtype = dt;
    int64_t size = hg_shape_size(nd, x->shape);
    if (ax->is_none || nd == 0) {
        if (!ax->is_none && ax->i != 0 && ax->i != -1)
            return hg_error(HG_ERR_VALUE,
                            "%s: axis %lld is out of bounds for an array of "
                            "dimension 1",
                            op->name, (long long)ax->i);
        if (size == 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: attempt to search an empty sequence (input shape "
                            "%s)",
                            op->name, hg_shape_str(s, nd, x->shape));
        out[0].ndim = keep ? nd : 1;
        for (int d = 0; d < out[0].ndim; d++) out[0].shape[d] = 1;
        return HG_OK;
    }
    if (ax->i < -nd || ax->i >= nd)
        return hg_error(HG_ERR_VALUE,
                        "%s: axis %lld exceeds the input dimension of %d (input "
                        "shape %s)",
                        op->name, (long long)ax->i, nd, hg_shape_str(s, nd, x->shape));
    int axis = (int)(ax->i < 0 ? ax->i + nd : ax->i);
    if (x->shape[axis] == 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: searching input tensor of shape %s along axis = %d of "
                        "zero dim-size is not allowed",
                        op->name, hg_shape_str(s, nd, x->shape), axis);
    if (nd == 1) {
        out[0].ndim = 1;
        out[0].shape[0] = 1;
        return HG_OK;
    }
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (d != axis) out[0].shape[k++] = x->shape[d];
        else if (keep) out[0].shape[k++] = 1;
    }
    out[0].ndim = k;
    return HG_OK;
}

/* ---- forwards ----------------------------------------------------------------------------- */

static hg_status axes_forward(red_kind kind, const hg_op_def *op, const hg_attrs *a, int axis_k,
                              int keep_k, int excl_k, hg_tensor *x, hg_tensor *y)
{
    bool red[HG_MAX_NDIM];
    hg_meta xm = hg_meta_of(x), om;
    HG_TRY(hg_reduce_axes(op, &a->v[axis_k], a->v[keep_k].b, excl_k >= 0 && a->v[excl_k].b, &xm,
                          &om, red));
    return reduce_run(kind, red, x, y);
}

#define RED_FORWARD(NAME, KIND)                                                                 \
    static hg_status NAME##_forward(const hg_op_def *op, const hg_attrs *a,                     \
                                    const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,      \
                                    int nout, hg_tensor *const *out)                            \
    {                                                                                           \
        (void)ctx; (void)nin; (void)nout;                                                       \
        return axes_forward(KIND, op, a, K_AXIS, K_KEEPDIMS, K_EXCLUDE, in[0], out[0]);         \
    }
RED_FORWARD(sum, RED_SUM)
RED_FORWARD(mean, RED_MEAN)
RED_FORWARD(prod, RED_PROD)
RED_FORWARD(nansum, RED_NANSUM)
RED_FORWARD(nanprod, RED_NANPROD)
RED_FORWARD(max, RED_MAX)
RED_FORWARD(min, RED_MIN)

static hg_status norm_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    red_kind kind = a->v[N_ORD].i == 1 ? RED_NORM1 : RED_NORM2;
    return axes_forward(kind, op, a, N_AXIS, N_KEEPDIMS, -1, in[0], out[0]);
}

static hg_status argmax_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    return arg_run(false, a, in[0], out[0]);
}

static hg_status argmin_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    return arg_run(true, a, in[0], out[0]);
}

/* ---- gradient rules ----------------------------------------------------------------------- */

/* d X(x) = _backward_X(dy, x[, y]) with X's attributes; the ops live in reduce_grad.c. */
static hg_status red_grad(hg_grad_ctx *g, const char *bwd, bool with_out)
{
    hg_sentry r, in[3] = {hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_out(g, 0)};
    hg_g_op_fwd_attrs(g, bwd, with_out ? 3 : 2, in, NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

#define RED_GRAD(NAME, WITH_OUT)                                                                \
    static hg_status NAME##_grad(hg_grad_ctx *g)                                                \
    {                                                                                           \
        return red_grad(g, "_backward_" #NAME, WITH_OUT);                                       \
    }
RED_GRAD(sum, false)
RED_GRAD(mean, false)
RED_GRAD(prod, false)
RED_GRAD(nansum, false)
RED_GRAD(nanprod, false)
RED_GRAD(max, true)
RED_GRAD(min, true)
RED_GRAD(norm, true)

/* ---- the op table ------------------------------------------------------------------------- */

static const hg_attr_spec k_axes_attrs[] = {
    [K_AXIS] =
        {"axis", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
         "axis or axes to reduce; None or () reduces all into shape (1,); negative counts from the "
         "end",
         NULL},
    [K_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False",
                    "keep the reduced axes as dimensions of size 1", NULL},
    [K_EXCLUDE] = {"exclude", HG_ATTR_BOOL, 0, "False", "reduce the axes that are NOT in axis",
                   NULL},
};
_Static_assert(HG_COUNT(k_axes_attrs) == K_NATTRS, "k_axes_attrs must match its enum");

static const hg_attr_spec k_norm_attrs[] = {
    [N_ORD] = {"ord", HG_ATTR_INT, 0, "2",
               "order of the norm: 1 (sum of |x|) or 2 (sqrt of sum of x^2)", NULL},
    [N_AXIS] = {"axis", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
                "axis or axes to reduce; None or () reduces all into shape (1,)", NULL},
    [N_OUT_DTYPE] = {"out_dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",
                     "dtype of the output (None: the input's)", NULL},
    [N_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False",
                    "keep the reduced axes as dimensions of size 1", NULL},
};
_Static_assert(HG_COUNT(k_norm_attrs) == N_NATTRS, "k_norm_attrs must match its enum");

static const hg_attr_spec k_arg_attrs[] = {
    [A_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
                "axis to search; None searches the flattened array", NULL},
    [A_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False",
                    "keep the reduced axis as a dimension of size 1", NULL},
};
_Static_assert(HG_COUNT(k_arg_attrs) == A_NATTRS, "k_arg_attrs must match its enum");

#define DATA HG_NAMES("data")
#define AXES_OP(NAME, ALIASES, FN, INFER, DOC)                                                  \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .attrs = k_axes_attrs,  \
     .num_attrs = HG_COUNT(k_axes_attrs), .num_inputs = 1, .num_outputs = 1, .infer = INFER,    \
     .forward = FN##_forward, .grad = FN##_grad}
#define ARG_OP(NAME, FN, DOC)                                                                   \
    {.name = NAME, .doc = DOC, .input_names = DATA, .attrs = k_arg_attrs,                       \
     .num_attrs = HG_COUNT(k_arg_attrs), .num_inputs = 1, .num_outputs = 1,                     \
     .infer = arg_infer, .forward = FN##_forward, .flags = HG_OP_NO_GRAD}

const hg_op_def hg_ops_reduce[] = {
    AXES_OP("sum", HG_NAMES("sum_axis"), sum, sum_infer, "sum over the given axes"),
    AXES_OP("mean", NULL, mean, sum_infer,
            "mean over the given axes (integer inputs: integer division, like MXNet)"),
    AXES_OP("prod", NULL, prod, sum_infer, "product over the given axes"),
    AXES_OP("nansum", NULL, nansum, sum_infer, "sum over the given axes, NaN counted as 0"),
    AXES_OP("nanprod", NULL, nanprod, sum_infer, "product over the given axes, NaN counted as 1"),
    AXES_OP("max", HG_NAMES("max_axis"), max, minmax_infer,
            "maximum over the given axes (NaN propagates)"),
    AXES_OP("min", HG_NAMES("min_axis"), min, minmax_infer,
            "minimum over the given axes (NaN propagates)"),
    {.name = "norm",
     .doc = "L1 or L2 norm over the given axes (all: shape (1,))",
     .input_names = DATA,
     .attrs = k_norm_attrs,
     .num_attrs = HG_COUNT(k_norm_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = norm_infer,
     .forward = norm_forward,
     .grad = norm_grad},
    ARG_OP("argmax", argmax,
           "index of the first maximum along axis (None: of the flattened array), in the input's "
           "dtype"),
    ARG_OP("argmin", argmin,
           "index of the first minimum along axis (None: of the flattened array), in the input's "
           "dtype"),
    {0},
};
