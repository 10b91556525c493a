/* Pooling (MXNet 1.x): max / avg / sum / lp pooling over 1-D, 2-D or 3-D data, channel-first
 * (NCW, NCHW, NCDHW) or channel-last (NWC, NHWC, NDHWC: copied to channel-first in the
 * workspace, pooled, copied back; the gradient likewise).
 *
 * Every case runs on a [D, H, W] view of each (n, c) plane: 1-D data is [1, 1, W], 2-D data is
 * [1, H, W]. Planes are independent, so the work is split over N*C. Windows follow MXNet's
 * pool.h: a window starts at o*s - p and ends at min(start + k, x + p); avg divides by that
 * padded extent (count_include_pad) or by the in-range part only; max only looks at in-range
 * elements (padding acts as -inf; an empty window gives the lowest finite value, as MXNet).
 * lp pooling is (sum x^p)^(1/p) with MXNet's signed powers (p = 1: plain sum, p = 3: cbrt).
 *
 * The main path works row by row: the window's input rows are combined into one W-long buffer
 * (contiguous, vectorised), then that buffer is pooled along W, with windows wholly inside the
 * row taking a branch-free loop. Fast paths: 2x2 stride-2 max pooling whose windows all lie
 * inside the data, and global pooling (a contiguous reduction per plane). float16 is read and
 * written through float. _backward_Pooling (the gradient) walks the same windows per plane.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "kernels/cpu/strided_copy.h"
#include "ops/pool.h"

typedef uint16_t f16;

static const char *const k_pool_types[] = {
    [POOL_MAX] = "max", [POOL_AVG] = "avg",   [POOL_SUM] = "sum",
    [POOL_LP] = "lp",   [POOL_NTYPES] = NULL,
};
_Static_assert(HG_COUNT(k_pool_types) == POOL_NTYPES + 1, "k_pool_types must match its enum");
static const char *const k_conventions[] = {
    [CONV_VALID] = "valid",
    [CONV_FULL] = "full",
    [CONV_SAME] = "same",
    [CONV_NCONVENTIONS] = NULL,
};
_Static_assert(HG_COUNT(k_conventions) == CONV_NCONVENTIONS + 1,
               "k_conventions must match its enum");
static const char *const k_layouts[] = {
    [LAYOUT_NCW] = "NCW",     [LAYOUT_NCHW] = "NCHW", [LAYOUT_NCDHW] = "NCDHW",
    [LAYOUT_NWC] = "NWC",     [LAYOUT_NHWC] = "NHWC", [LAYOUT_NDHWC] = "NDHWC",
    [LAYOUT_NLAYOUTS] = NULL,
};
_Static_assert(HG_COUNT(k_layouts) == LAYOUT_NLAYOUTS + 1, "k_layouts must match its enum");

static const hg_attr_spec k_pool_attrs[] = {
    [P_KERNEL] = {"kernel", HG_ATTR_TUPLE, 0, "()",
                  "pooling kernel size: (x,), (y, x) or (d, y, x); ignored with global_pool", NULL},
    [P_POOL_TYPE] = {"pool_type", HG_ATTR_ENUM, 0, "max", "pooling type: max, avg, sum or lp",
                     k_pool_types},
    [P_GLOBAL] = {"global_pool", HG_ATTR_BOOL, 0, "False",
                  "pool over the whole spatial extent (kernel, stride and pad are ignored)", NULL},
    [P_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, 0, "False",
                     "accepted for compatibility; no effect on CPU", NULL},
    [P_CONVENTION] =
        {"pooling_convention", HG_ATTR_ENUM, 0, "valid",
         "output size rule: valid (floor), full (ceil) or same (ceil(x / stride), 1-D only)",
         k_conventions},
    [P_STRIDE] = {"stride", HG_ATTR_TUPLE, 0, "()",
                  "stride per spatial axis; () means 1 on every axis", NULL},
    [P_PAD] = {"pad", HG_ATTR_TUPLE, 0, "()", "implicit padding per spatial axis; () means 0",
               NULL},
    [P_P_VALUE] = {"p_value", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None", "p of lp pooling (1, 2 or 3)",
                   NULL},
    [P_COUNT_INCLUDE_PAD] = {"count_include_pad", HG_ATTR_BOOL, HG_ATTR_OPTIONAL, "None",
                             "avg pooling: count padded elements in the divisor (None means True)",
                             NULL},
    [P_LAYOUT] = {"layout", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                  "data layout: NCW, NCHW, NCDHW, or channel-last NWC, NHWC, NDHWC; None means "
                  "channel-first",
                  k_layouts},
};
_Static_assert(HG_COUNT(k_pool_attrs) == P_NATTRS, "k_pool_attrs must match its enum");

/* The resolved geometry, always as 3 spatial axes (leading ones padded with 1). */
typedef struct {
    int nsp;                         /* spatial axes of the data: 1, 2 or 3 */
    int64_t k[3], s[3], p[3];        /* kernel, stride, pad */
} pool_geom;

static const char *layout_name(int l) { return k_layouts[l]; }

/* The geometry of channel-first data (pool_geometry handles the layout). */
static hg_status pool_geometry_cf(const hg_op_def *op, const hg_attrs *a, const hg_meta *in,
                                  pool_geom *g, int64_t *oshape)
{
    char buf[HG_SHAPE_STR], kb[HG_SHAPE_STR];
    const hg_tuple *kt = &a->v[P_KERNEL].t, *st = &a->v[P_STRIDE].t, *pt = &a->v[P_PAD].t;
    const bool global = a->v[P_GLOBAL].b;
    const int nd = in->ndim;
    if (nd < 3 || nd > 5)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 3-D (batch, channel, x), 4-D (batch, channel, y, x) "
                        "or 5-D (batch, channel, d, y, x), got shape %s",
                        op->name, hg_shape_str(buf, nd, in->shape));
    const int nsp = nd - 2;
    if (!global) {
        if (kt->n == 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: kernel is required unless global_pool=True (data shape %s)",
                            op->name, hg_shape_str(buf, nd, in->shape));
        if (kt->n > 3)
            return hg_error(HG_ERR_VALUE, "%s: %dD pooling is not supported (kernel %s)", op->name,
                            kt->n, hg_shape_str(kb, kt->n, kt->v));
        if (kt->n != nsp)
            return hg_error(HG_ERR_VALUE,
                            "%s: kernel %s needs %d-D data (batch, channel, ...), got shape %s",
                            op->name, hg_shape_str(kb, kt->n, kt->v), kt->n + 2,
                            hg_shape_str(buf, nd, in->shape));
    }
    if (st->n != 0 && st->n < nsp) /* MXNet ignores entries past the kernel's */
        return hg_error(
            HG_ERR_VALUE, "%s: stride %s must have at least %d entries for data of shape %s",
            op->name, hg_shape_str(kb, st->n, st->v), nsp, hg_shape_str(buf, nd, in->shape));
    if (pt->n != 0 && pt->n < nsp) /* MXNet ignores entries past the kernel's */
        return hg_error(HG_ERR_VALUE,
                        "%s: pad %s must have at least %d entries for data of shape %s", op->name,
                        hg_shape_str(kb, pt->n, pt->v), nsp, hg_shape_str(buf, nd, in->shape));
    const int conv = (int)a->v[P_CONVENTION].i;
    if (conv == CONV_SAME && !global) {
        if (nsp != 1)
            return hg_error(HG_ERR_VALUE,
                            "%s: pooling_convention='same' supports only 1-D pooling (3-D data "
                            "(batch, channel, x)), got shape %s",
                            op->name, hg_shape_str(buf, nd, in->shape));
        bool padded = false;
        for (int i = 0; i < pt->n; i++) padded |= pt->v[i] != 0;
        if (padded)
            return hg_error(HG_ERR_VALUE,
                            "%s: pooling_convention='same' does not allow pad, got pad %s",
                            op->name, hg_shape_str(kb, pt->n, pt->v));
    }
    g->nsp = nsp;
    oshape[0] = in->shape[0];
    oshape[1] = in->shape[1];
    for (int i = 0; i < 3; i++) {
        g->k[i] = 1;
        g->s[i] = 1;
        g->p[i] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        const int j = 3 - nsp + i;         /* position in the padded 3-axis geometry */
        const int64_t x = in->shape[2 + i];
        if (global) {
            /* MXNet: kernel = the whole extent, pad 0, stride 1, one output per axis. */
            g->k[j] = x;
            oshape[2 + i] = 1;
            continue;
        }
        const int64_t k = kt->v[i], s = st->n ? st->v[i] : 1, p = pt->n ? pt->v[i] : 0;
        if (k <= 0)
            return hg_error(HG_ERR_VALUE, "%s: kernel %s must be positive", op->name,
                            hg_shape_str(kb, kt->n, kt->v));
        if (s <= 0)
            return hg_error(HG_ERR_VALUE, "%s: stride %s must be positive", op->name,
                            hg_shape_str(kb, st->n, st->v));
        if (p < 0)
            return hg_error(HG_ERR_VALUE, "%s: pad %s must be non-negative", op->name,
                            hg_shape_str(kb, pt->n, pt->v));
        if (x < 0) {
            oshape[2 + i] = -1;
            continue;
        } /* unknown dim (graph inference) */
        if (k > x + 2 * p)
            return hg_error(HG_ERR_VALUE,
                            "%s: kernel size (%lld) exceeds input (%lld padded to %lld) on "
                            "spatial axis %d: kernel %s, data shape %s",
                            op->name, (long long)k, (long long)x, (long long)(x + 2 * p), i,
                            hg_shape_str(kb, kt->n, kt->v), hg_shape_str(buf, nd, in->shape));
        g->k[j] = k;
        g->s[j] = s;
        g->p[j] = p;
        if (conv == CONV_VALID) oshape[2 + i] = 1 + (x + 2 * p - k) / s;
        else if (conv == CONV_FULL) oshape[2 + i] = 1 + (x + 2 * p - k + s - 1) / s;
        else oshape[2 + i] = (x + 2 * p + s - 1) / s;
    }
    return HG_OK;
}

static bool channel_last(const hg_attrs *a)
{
    return !a->v[P_LAYOUT].is_none && a->v[P_LAYOUT].i >= LAYOUT_NWC;
}

/* Moves dim `from` of shape[nd] to position `to`, shifting the dims between by one. */
static void move_dim(int nd, int64_t *shape, int from, int to)
{
    int64_t v = shape[from];
    if (from < to)
        for (int i = from; i < to; i++) shape[i] = shape[i + 1];
    else
        for (int i = from; i > to; i--) shape[i] = shape[i - 1];
    shape[to] = v;
    (void)nd;
}

/* Checks the layout against the data's rank and resolves the geometry. Channel-last data
 * (NWC, NHWC, NDHWC: MXNet's CPU build pools them) is described by its channel-first view
 * (*cf, the channel moved to dim 1); oshape is in the data's own layout. */
static hg_status pool_geometry(const hg_op_def *op, const hg_attrs *a, const hg_meta *in,
                               pool_geom *g, int64_t *oshape, hg_meta *cf)
{
    char buf[HG_SHAPE_STR];
    *cf = *in;
    if (!a->v[P_LAYOUT].is_none && in->ndim >= 3 && in->ndim <= 5) {
        int l = (int)a->v[P_LAYOUT].i;
        int lnsp = l >= LAYOUT_NWC ? l - LAYOUT_NWC + 1 : l + 1;
        if (lnsp != in->ndim - 2)
            return hg_error(HG_ERR_VALUE, "%s: layout %s needs %d-D data, got shape %s", op->name,
                            layout_name(l), lnsp + 2, hg_shape_str(buf, in->ndim, in->shape));
        if (l >= LAYOUT_NWC) {
            move_dim(in->ndim, cf->shape, in->ndim - 1, 1);
            HG_TRY(pool_geometry_cf(op, a, cf, g, oshape));
            move_dim(in->ndim, oshape, 1, in->ndim - 1);
            return HG_OK;
        }
    }
    return pool_geometry_cf(op, a, in, g, oshape);
}

/* Channel-last <-> channel-first copies of (N, S, C) / (N, C, S) data. */
static void to_cf(const void *src, void *dst, size_t esz, int64_t N, int64_t S, int64_t C)
{
    int64_t shape[3] = {N, C, S}, istr[3] = {S * C, 1, C};
    hg_strided_copy(src, dst, esz, 3, shape, istr, 0);
}

static void to_cl(const void *src, void *dst, size_t esz, int64_t N, int64_t S, int64_t C)
{
    int64_t shape[3] = {N, S, C}, istr[3] = {C * S, 1, S};
    hg_strided_copy(src, dst, esz, 3, shape, istr, 0);
}

/* Bytes rounded up so that workspace parts stay aligned. */
static size_t ws_round(size_t b) { return (b + 63) & ~(size_t)63; }

static hg_status pool_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nin;
    (void)nout;
    hg_dtype dt = in[0].dtype;
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64 && dt != HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE, "%s: data must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(dt));
    if (a->v[P_POOL_TYPE].i == POOL_LP) {
        if (a->v[P_P_VALUE].is_none)
            return hg_error(HG_ERR_VALUE, "%s: pool_type='lp' needs p_value (1, 2 or 3)", op->name);
        int64_t pv = a->v[P_P_VALUE].i;
        if (pv < 1 || pv > 3)
            return hg_error(HG_ERR_VALUE, "%s: p_value must be 1, 2 or 3 for lp pooling, got %lld",
                            op->name, (long long)pv);
    }
    out[0].dtype = dt;
    if (in[0].ndim < 0) { /* data shape unknown yet: the output stays unknown, as in MXNet */
        out[0].ndim = -1;
        return HG_OK;
    }
    pool_geom g;
    hg_meta cf;
    out[0].ndim = in[0].ndim;
    return pool_geometry(op, a, &in[0], &g, out[0].shape, &cf);
}

/* ---------------------------------------------------------------------------------------------
 * Kernels
 */

typedef struct {
    const void *x;
    void *y;
    int64_t id[3], od[3];     /* input / output spatial extents (3-axis form) */
    int64_t k[3], s[3], p[3];
    int type, pv;
    bool cip;                 /* count_include_pad */
} pool_job;

#define LD_f32(v) (v)
#define LD_f64(v) (v)
#define LD_f16(v) hg_half_to_float(v)
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define ST_f16(v) hg_float_to_half((float)(v))
#define LOWEST_float (-FLT_MAX)
#define LOWEST_double (-DBL_MAX)

static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* Powers and roots of lp pooling, signed like MXNet's a_pow_p / a_root_p. */
#define POW_P(AT, v, pv) ((pv) == 1 ? (v) : (pv) == 2 ? (v) * (v) : (v) * (v) * (v))
#define ROOT_P(AT, v, pv) ((pv) == 1 ? (v) : (pv) == 2 ? (AT)sqrt(v) : (AT)cbrt(v))

/* Window by window: the fallback when the row buffer cannot be allocated. */
#define POOL_GENERIC(T, AT)                                                                     \
    static void pool_generic_##T(void *ctx, int64_t r0, int64_t r1)                             \
    {                                                                                           \
        const pool_job *j = ctx;                                                                \
        const int64_t D = j->id[0], H = j->id[1], W = j->id[2];                                 \
        const int64_t isz = D * H * W, osz = j->od[0] * j->od[1] * j->od[2];                    \
        const int type = j->type, pv = j->pv;                                                   \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = (const T *)j->x + r * isz;                                             \
            T *y = (T *)j->y + r * osz;                                                         \
            int64_t o = 0;                                                                      \
            for (int64_t od = 0; od < j->od[0]; od++) {                                         \
                int64_t d0 = od * j->s[0] - j->p[0], d1 = imin(d0 + j->k[0], D + j->p[0]);      \
                int64_t nd_ = imax(d1 - d0, 0);                                                 \
                d0 = imax(d0, 0); d1 = imin(d1, D);                                             \
                for (int64_t oh = 0; oh < j->od[1]; oh++) {                                     \
                    int64_t h0 = oh * j->s[1] - j->p[1], h1 = imin(h0 + j->k[1], H + j->p[1]);  \
                    int64_t nh = imax(h1 - h0, 0);                                              \
                    h0 = imax(h0, 0); h1 = imin(h1, H);                                         \
                    for (int64_t ow = 0; ow < j->od[2]; ow++, o++) {                            \
                        int64_t w0 = ow * j->s[2] - j->p[2];                                    \
                        int64_t w1 = imin(w0 + j->k[2], W + j->p[2]);                           \
                        int64_t nw = imax(w1 - w0, 0);                                          \
                        w0 = imax(w0, 0); w1 = imin(w1, W);                                     \
                        AT acc = type == POOL_MAX ? LOWEST_##AT : 0;                            \
                        for (int64_t d = d0; d < d1; d++)                                       \
                            for (int64_t h = h0; h < h1; h++) {                                 \
                                const T *row = x + (d * H + h) * W;                             \
                                if (type == POOL_MAX) {                                         \
                                    for (int64_t w = w0; w < w1; w++) {                         \
                                        AT v = LD_##T(row[w]);                                  \
                                        acc = v > acc ? v : acc;                                \
                                    }                                                           \
                                } else if (type == POOL_LP) {                                   \
                                    for (int64_t w = w0; w < w1; w++) {                         \
                                        AT v = LD_##T(row[w]);                                  \
                                        acc += POW_P(AT, v, pv);                                \
                                    }                                                           \
                                } else {                                                        \
                                    for (int64_t w = w0; w < w1; w++) acc += LD_##T(row[w]);    \
                                }                                                               \
                            }                                                                   \
                        if (type == POOL_AVG) {                                                 \
                            int64_t n = j->cip ? nd_ * nh * nw                                  \
                                               : imax(d1 - d0, 0) * imax(h1 - h0, 0) *          \
                                                     imax(w1 - w0, 0);                          \
                            acc = acc / (AT)n;                                                  \
                        } else if (type == POOL_LP) {                                           \
                            acc = ROOT_P(AT, acc, pv);                                          \
                        }                                                                       \
                        y[o] = ST_##T(acc);                                                     \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

/* The W pass of the row path: pools the combined row tmp[0, W) into res[0, OW), finalised (avg
 * divided, lp rooted). n_dh: the window's d*h extent counting padding; rows_in: without it.
 * Windows wholly inside the row take a branch-free loop, unrolled for the common 2/3 kernels. */
#define HPASS_LOOP(AT, K, S, STEP)                                                              \
    for (int64_t q = 0; q < cnt; q++) {                                                         \
        const AT *t = t0 + q * (S);                                                             \
        AT acc = init;                                                                          \
        for (int64_t e = 0; e < (K); e++) acc = STEP;                                           \
        r[q] = acc;                                                                             \
    }
#define HPASS_ALL(AT, STEP)                                                                     \
    if (k == 3 && s == 1) { HPASS_LOOP(AT, 3, 1, STEP) }                                        \
    else if (k == 3 && s == 2) { HPASS_LOOP(AT, 3, 2, STEP) }                                   \
    else if (k == 2 && s == 1) { HPASS_LOOP(AT, 2, 1, STEP) }                                   \
    else if (k == 2 && s == 2) { HPASS_LOOP(AT, 2, 2, STEP) }                                   \
    else { HPASS_LOOP(AT, k, s, STEP) }
#define HPASS_FN(AT)                                                                            \
    static void hpass_##AT(const pool_job *j, const AT *tmp, int64_t W, AT *res, int64_t n_dh,   \
                           int64_t rows_in)                                                     \
    {                                                                                           \
        const int64_t OW = j->od[2], k = j->k[2], s = j->s[2], p = j->p[2];                     \
        const int type = j->type, pv = j->pv;                                                   \
        const AT init = type == POOL_MAX ? LOWEST_##AT : 0;                                     \
        int64_t oa = imin((p + s - 1) / s, OW);                                                 \
        int64_t ob = W + p - k >= 0 ? imin((W + p - k) / s + 1, OW) : 0;                        \
        if (ob < oa) ob = oa;                                                                   \
        for (int64_t ow = 0; ow < OW; ow++) {                                                   \
            if (ow == oa) ow = ob; /* the interior is done below */                             \
            if (ow >= OW) break;                                                                \
            int64_t w0 = ow * s - p, w1 = imin(w0 + k, W + p);                                  \
            const int64_t nw = imax(w1 - w0, 0);                                                \
            w0 = imax(w0, 0); w1 = imin(w1, W);                                                 \
            AT acc = init;                                                                      \
            if (type == POOL_MAX) {                                                             \
                for (int64_t w = w0; w < w1; w++) acc = tmp[w] > acc ? tmp[w] : acc;            \
            } else {                                                                            \
                for (int64_t w = w0; w < w1; w++) acc += tmp[w];                                \
            }                                                                                   \
            if (type == POOL_AVG)                                                               \
                acc = acc / (AT)(j->cip ? n_dh * nw : rows_in * imax(w1 - w0, 0));              \
            else if (type == POOL_LP)                                                           \
                acc = ROOT_P(AT, acc, pv);                                                      \
            res[ow] = acc;                                                                      \
        }                                                                                       \
        const int64_t cnt = ob - oa;                                                            \
        const AT *t0 = tmp + oa * s - p;                                                        \
        AT *r = res + oa;                                                                       \
        if (cnt <= 0) return;                                                                   \
        if (type == POOL_MAX) {                                                                 \
            HPASS_ALL(AT, t[e] > acc ? t[e] : acc)                                              \
        } else {                                                                                \
            HPASS_ALL(AT, acc + t[e])                                                           \
        }                                                                                       \
        if (type == POOL_AVG) {                                                                 \
            const AT n = (AT)((j->cip ? n_dh : rows_in) * k);                                   \
            for (int64_t q = 0; q < cnt; q++) r[q] = r[q] / n;                                  \
        } else if (type == POOL_LP) {                                                           \
            for (int64_t q = 0; q < cnt; q++) r[q] = ROOT_P(AT, r[q], pv);                      \
        }                                                                                       \
    }
HPASS_FN(float)
HPASS_FN(double)

/* Row-wise windows (the main path): for one output row, first combine the window's input rows
 * into a W-long row buffer (contiguous, so it vectorises), then pool that buffer along W. */
#define POOL_COMBINE(T, AT, OPX)                                                                \
    for (int64_t w = 0; w < W; w++) {                                                           \
        AT v = LD_##T(row[w]);                                                                  \
        tmp[w] = OPX;                                                                           \
    }
#define POOL_ROWS(T, AT)                                                                        \
    static void pool_rows_##T(void *ctx, int64_t r0, int64_t r1)                                \
    {                                                                                           \
        const pool_job *j = ctx;                                                                \
        const int64_t D = j->id[0], H = j->id[1], W = j->id[2];                                 \
        const int64_t isz = D * H * W, osz = j->od[0] * j->od[1] * j->od[2];                    \
        const int type = j->type, pv = j->pv;                                                   \
        const size_t nbuf = sizeof(AT) * (size_t)(W + j->od[2] + 1);                            \
        AT *tmp = hg_alloc(nbuf), *res = tmp + W;                                               \
        if (!tmp) { pool_generic_##T(ctx, r0, r1); return; }                                    \
        const AT init = type == POOL_MAX ? LOWEST_##AT : 0;                                     \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = (const T *)j->x + r * isz;                                             \
            T *y = (T *)j->y + r * osz;                                                         \
            int64_t o = 0;                                                                      \
            for (int64_t od = 0; od < j->od[0]; od++) {                                         \
                int64_t d0 = od * j->s[0] - j->p[0], d1 = imin(d0 + j->k[0], D + j->p[0]);      \
                const int64_t nd_ = imax(d1 - d0, 0);                                           \
                d0 = imax(d0, 0); d1 = imin(d1, D);                                             \
                for (int64_t oh = 0; oh < j->od[1]; oh++) {                                     \
                    int64_t h0 = oh * j->s[1] - j->p[1], h1 = imin(h0 + j->k[1], H + j->p[1]);  \
                    const int64_t nh = imax(h1 - h0, 0);                                        \
                    h0 = imax(h0, 0); h1 = imin(h1, H);                                         \
                    for (int64_t w = 0; w < W; w++) tmp[w] = init;                              \
                    for (int64_t d = d0; d < d1; d++)                                           \
                        for (int64_t h = h0; h < h1; h++) {                                     \
                            const T *row = x + (d * H + h) * W;                                 \
                            if (type == POOL_MAX) {                                             \
                                POOL_COMBINE(T, AT, v > tmp[w] ? v : tmp[w])                    \
                            } else if (type == POOL_LP && pv == 2) {                            \
                                POOL_COMBINE(T, AT, tmp[w] + v * v)                             \
                            } else if (type == POOL_LP && pv == 3) {                            \
                                POOL_COMBINE(T, AT, tmp[w] + v * v * v)                         \
                            } else {                                                            \
                                POOL_COMBINE(T, AT, tmp[w] + v)                                 \
                            }                                                                   \
                        }                                                                       \
                    const int64_t rows_in = imax(d1 - d0, 0) * imax(h1 - h0, 0);                \
                    hpass_##AT(j, tmp, W, res, nd_ * nh, rows_in);                              \
                    for (int64_t ow = 0; ow < j->od[2]; ow++, o++) y[o] = ST_##T(res[ow]);      \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        hg_free(tmp, nbuf);                                                                     \
    }

/* Global pooling: each plane is one contiguous reduction. */
#define POOL_GLOBAL(T, AT)                                                                      \
    static void pool_global_##T(void *ctx, int64_t r0, int64_t r1)                              \
    {                                                                                           \
        const pool_job *j = ctx;                                                                \
        const int64_t n = j->id[0] * j->id[1] * j->id[2];                                       \
        const int type = j->type, pv = j->pv;                                                   \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = (const T *)j->x + r * n;                                               \
            AT acc[8];                                                                          \
            for (int q = 0; q < 8; q++) acc[q] = type == POOL_MAX ? LOWEST_##AT : 0;            \
            int64_t i = 0;                                                                      \
            if (type == POOL_MAX) {                                                             \
                for (; i + 8 <= n; i += 8)                                                      \
                    for (int q = 0; q < 8; q++) {                                               \
                        AT v = LD_##T(x[i + q]);                                                \
                        acc[q] = v > acc[q] ? v : acc[q];                                       \
                    }                                                                           \
                for (; i < n; i++) {                                                            \
                    AT v = LD_##T(x[i]);                                                        \
                    acc[0] = v > acc[0] ? v : acc[0];                                           \
                }                                                                               \
                for (int q = 1; q < 8; q++) acc[0] = acc[q] > acc[0] ? acc[q] : acc[0];         \
            } else {                                                                            \
                for (; i + 8 <= n; i += 8)                                                      \
                    for (int q = 0; q < 8; q++) {                                               \
                        AT v = LD_##T(x[i + q]);                                                \
                        acc[q] += type == POOL_LP ? POW_P(AT, v, pv) : v;                       \
                    }                                                                           \
                for (; i < n; i++) {                                                            \
                    AT v = LD_##T(x[i]);                                                        \
                    acc[0] += type == POOL_LP ? POW_P(AT, v, pv) : v;                           \
                }                                                                               \
                for (int q = 1; q < 8; q++) acc[0] += acc[q];                                   \
                if (type == POOL_AVG) acc[0] = acc[0] / (AT)n;                                  \
                else if (type == POOL_LP) acc[0] = ROOT_P(AT, acc[0], pv);                      \
            }                                                                                   \
            ((T *)j->y)[r] = ST_##T(acc[0]);                                                    \
        }                                                                                       \
    }

/* 2x2 stride-2 max pooling with every window inside the data (no padding). */
#define POOL_MAX22(T, AT)                                                                       \
    static void pool_max22_##T(void *ctx, int64_t r0, int64_t r1)                               \
    {                                                                                           \
        const pool_job *j = ctx;                                                                \
        const int64_t H = j->id[1], W = j->id[2], OH = j->od[1], OW = j->od[2];                 \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = (const T *)j->x + r * H * W;                                           \
            T *y = (T *)j->y + r * OH * OW;                                                     \
            for (int64_t oh = 0; oh < OH; oh++) {                                               \
                const T *a = x + 2 * oh * W, *b = a + W;                                        \
                T *yr = y + oh * OW;                                                            \
                for (int64_t ow = 0; ow < OW; ow++) {                                           \
                    AT m = LOWEST_##AT, v;                                                      \
                    v = LD_##T(a[2 * ow]); m = v > m ? v : m;                                   \
                    v = LD_##T(a[2 * ow + 1]); m = v > m ? v : m;                               \
                    v = LD_##T(b[2 * ow]); m = v > m ? v : m;                                   \
                    v = LD_##T(b[2 * ow + 1]); m = v > m ? v : m;                               \
                    yr[ow] = ST_##T(m);                                                         \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

typedef float f32;
typedef double f64;
POOL_GENERIC(f32, float)
POOL_GENERIC(f64, double)
POOL_GENERIC(f16, float)
POOL_ROWS(f32, float)
POOL_ROWS(f64, double)
POOL_ROWS(f16, float)
POOL_GLOBAL(f32, float)
POOL_GLOBAL(f64, double)
POOL_GLOBAL(f16, float)
POOL_MAX22(f32, float)
POOL_MAX22(f64, double)
POOL_MAX22(f16, float)

#define POOL_GRAIN 32768 /* window elements of work per parallel chunk */

static hg_status pool_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_meta m0 = hg_meta_of(in[0]), m;
    pool_geom g;
    int64_t oshape[HG_MAX_NDIM];
    HG_TRY(pool_geometry(op, a, &m0, &g, oshape, &m));
    const void *x = hg_data(in[0]);
    void *y = hg_data(out[0]);
    const bool cl = channel_last(a);
    const size_t esz = hg_dtype_size(m.dtype);
    const int64_t N = m.shape[0], C = m.shape[1];
    const int64_t S = N * C > 0 ? hg_shape_size(m.ndim, m.shape) / (N * C) : 0;
    const int64_t OS = N * C > 0 ? hg_shape_size(m.ndim, oshape) / (N * C) : 0;
    if (cl) { /* pooled channel-first in the workspace (pool_workspace) */
        if (!ctx->workspace && N * C * S > 0)
            return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
        void *xc = ctx->workspace;
        to_cf(x, xc, esz, N, S, C);
        x = xc;
        y = (char *)ctx->workspace + ws_round(esz * (size_t)(N * C * S));
        move_dim(m.ndim, oshape, m.ndim - 1, 1);
    }
    pool_job j = {.x = x,
                  .y = y,
                  .type = (int)a->v[P_POOL_TYPE].i,
                  .pv = a->v[P_P_VALUE].is_none ? 1 : (int)a->v[P_P_VALUE].i,
                  .cip = a->v[P_COUNT_INCLUDE_PAD].is_none || a->v[P_COUNT_INCLUDE_PAD].b};
    for (int i = 0; i < 3; i++) {
        j.id[i] = 1;
        j.od[i] = 1;
        j.k[i] = g.k[i];
        j.s[i] = g.s[i];
        j.p[i] = g.p[i];
    }
    for (int i = 0; i < g.nsp; i++) {
        j.id[3 - g.nsp + i] = m.shape[2 + i];
        j.od[3 - g.nsp + i] = oshape[2 + i];
    }
    const int64_t planes = m.shape[0] * m.shape[1];
    const int64_t ksz = j.k[0] * j.k[1] * j.k[2];
    const int64_t work = imax(1, j.od[0] * j.od[1] * j.od[2] * imax(ksz, 1));
    const int64_t grain = imax(1, POOL_GRAIN / work);
    const hg_dtype dt = in[0]->dtype;
    hg_range_fn fn;
    if (a->v[P_GLOBAL].b) {
        fn = dt == HG_DTYPE_F32   ? pool_global_f32
             : dt == HG_DTYPE_F64 ? pool_global_f64
                                  : pool_global_f16;
    } else if (j.type == POOL_MAX && g.nsp == 2 && j.k[1] == 2 && j.k[2] == 2 && j.s[1] == 2 &&
               j.s[2] == 2 && j.p[1] == 0 && j.p[2] == 0 && 2 * j.od[1] <= j.id[1] &&
               2 * j.od[2] <= j.id[2]) {
        fn = dt == HG_DTYPE_F32   ? pool_max22_f32
             : dt == HG_DTYPE_F64 ? pool_max22_f64
                                  : pool_max22_f16;
    } else {
        fn = dt == HG_DTYPE_F32   ? pool_rows_f32
             : dt == HG_DTYPE_F64 ? pool_rows_f64
                                  : pool_rows_f16;
    }
    hg_parallel_for(planes, grain, fn, &j);
    if (cl) to_cl(y, hg_data(out[0]), esz, N, OS, C);
    return HG_OK;
}

/* Channel-last data: its channel-first copy and the pooled output's (the forward's workspace). */
static size_t pool_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (!channel_last(a) || in[0].ndim < 3) return 0;
    pool_geom g;
    hg_meta cf;
    int64_t oshape[HG_MAX_NDIM];
    if (pool_geometry(&(hg_op_def){.name = "Pooling"}, a, &in[0], &g, oshape, &cf) != HG_OK)
        return 0;
    size_t esz = hg_dtype_size(in[0].dtype);
    return ws_round(esz * (size_t)hg_shape_size(in[0].ndim, in[0].shape)) +
           ws_round(esz * (size_t)hg_shape_size(in[0].ndim, oshape));
}

/* ---------------------------------------------------------------------------------------------
 * Gradient: _backward_Pooling(ograd, data[, output]) -> data gradient. max and lp read the
 * forward output (max sends each output's gradient to the first element of its window, in
 * (d, h, w) order, that equals it, as MXNet does with ties; lp scales by (x / y)^(p-1)); avg and
 * sum need only data's shape. Windows are the forward's, so the conventions, padding and
 * count_include_pad carry over. Planes are independent and split over threads; float16 sums in
 * a float copy of the gradient (the workspace).
 */

static int pool_bw_num_inputs(const hg_attrs *a)
{
    int64_t t = a->v[P_POOL_TYPE].i;
    return t == POOL_MAX || t == POOL_LP ? 3 : 2;
}

static hg_status pool_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0].ndim = -1;
    for (int i = 0; i < nin; i++)
        if (in[i].ndim < 0) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta fout = {.ndim = -1};
    HG_TRY(pool_infer(op, a, 1, &in[1], 1, &fout));
    for (int i = 0; i < nin; i += 2) /* ograd, and the forward output when given */
        if (in[i].dtype != fout.dtype ||
            !hg_shape_equal(in[i].ndim, in[i].shape, fout.ndim, fout.shape))
            return hg_error(HG_ERR_VALUE,
                            "%s: %s %s (%s) does not match the pooled shape %s "
                            "(%s) of data %s",
                            op->name, i ? "output" : "output gradient",
                            hg_shape_str(s0, in[i].ndim, in[i].shape), hg_dtype_name(in[i].dtype),
                            hg_shape_str(s1, fout.ndim, fout.shape), hg_dtype_name(fout.dtype),
                            hg_shape_str(s2, in[1].ndim, in[1].shape));
    out[0] = in[1];
    return HG_OK;
}

/* float16: a float gradient to sum into; channel-last: channel-first copies of ograd, data and
 * the output, and the channel-first data gradient, after it. */
static size_t pool_bw_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    size_t nx = (size_t)hg_shape_size(in[1].ndim, in[1].shape);
    size_t ny = (size_t)hg_shape_size(in[0].ndim, in[0].shape), esz = hg_dtype_size(in[1].dtype);
    size_t acc = in[1].dtype == HG_DTYPE_F16 ? ws_round(sizeof(float) * nx) : 0;
    if (!channel_last(a)) return acc;
    return acc + 2 * ws_round(esz * nx) + (nin > 2 ? 2 : 1) * ws_round(esz * ny);
}

typedef struct {
    const void *dy, *x, *y;  /* y: the forward output (max and lp only) */
    void *dx;
    void *acc;               /* float16: float gradient the planes sum into; else dx */
    int64_t id[3], od[3];
    int64_t k[3], s[3], p[3];
    int type, pv;
    bool cip;
} poolbw_job;

/* lp's d y / d x = (x / y)^(p-1), 0 where y is 0 (MXNet's lp_grad). */
#define LP_GRAD(AT, xv, yv, pv)                                                                 \
    ((pv) == 1 ? (AT)1                                                                          \
     : (yv) == 0 ? (AT)0                                                                        \
     : (pv) == 2 ? (xv) / (yv) : ((xv) / (yv)) * ((xv) / (yv)))

#define POOL_BW(T, AT)                                                                          \
    static void poolbw_##T(void *ctx, int64_t r0, int64_t r1)                                   \
    {                                                                                           \
        const poolbw_job *j = ctx;                                                              \
        const int64_t D = j->id[0], H = j->id[1], W = j->id[2];                                 \
        const int64_t isz = D * H * W, osz = j->od[0] * j->od[1] * j->od[2];                    \
        const int type = j->type, pv = j->pv;                                                   \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = j->x ? (const T *)j->x + r * isz : NULL;                               \
            const T *y = j->y ? (const T *)j->y + r * osz : NULL;                               \
            const T *dy = (const T *)j->dy + r * osz;                                           \
            AT *dx = (AT *)j->acc + r * isz;                                                    \
            memset(dx, 0, sizeof(AT) * (size_t)isz);                                            \
            int64_t o = 0;                                                                      \
            for (int64_t od = 0; od < j->od[0]; od++) {                                         \
                int64_t d0 = od * j->s[0] - j->p[0], d1 = imin(d0 + j->k[0], D + j->p[0]);      \
                const int64_t nd_ = imax(d1 - d0, 0);                                           \
                d0 = imax(d0, 0); d1 = imin(d1, D);                                             \
                for (int64_t oh = 0; oh < j->od[1]; oh++) {                                     \
                    int64_t h0 = oh * j->s[1] - j->p[1], h1 = imin(h0 + j->k[1], H + j->p[1]);  \
                    const int64_t nh = imax(h1 - h0, 0);                                        \
                    h0 = imax(h0, 0); h1 = imin(h1, H);                                         \
                    for (int64_t ow = 0; ow < j->od[2]; ow++, o++) {                            \
                        int64_t w0 = ow * j->s[2] - j->p[2];                                    \
                        int64_t w1 = imin(w0 + j->k[2], W + j->p[2]);                           \
                        const int64_t nw = imax(w1 - w0, 0);                                    \
                        w0 = imax(w0, 0); w1 = imin(w1, W);                                     \
                        const AT g = LD_##T(dy[o]);                                             \
                        if (type == POOL_MAX) { /* the first equal element, by a backward   \
                                                 * scan of selects: a search that stopped at it \
                                                 * branched on data and mispredicted */         \
                            const AT yv = LD_##T(y[o]);                                         \
                            int64_t at = -1;                                                    \
                            for (int64_t d = d1 - 1; d >= d0; d--)                              \
                                for (int64_t h = h1 - 1; h >= h0; h--)                          \
                                    for (int64_t w = w1 - 1; w >= w0; w--) {                    \
                                        int64_t i = (d * H + h) * W + w;                        \
                                        at = LD_##T(x[i]) == yv ? i : at;                       \
                                    }                                                           \
                            if (at >= 0) dx[at] += g;                                           \
                            continue;                                                           \
                        }                                                                       \
                        AT v = g;                                                               \
                        if (type == POOL_AVG) {                                                 \
                            int64_t n = j->cip ? nd_ * nh * nw                                  \
                                               : imax(d1 - d0, 0) * imax(h1 - h0, 0) *          \
                                                     imax(w1 - w0, 0);                          \
                            v = n > 0 ? g / (AT)n : 0;                                          \
                        }                                                                       \
                        for (int64_t d = d0; d < d1; d++)                                       \
                            for (int64_t h = h0; h < h1; h++) {                                 \
                                AT *row = dx + (d * H + h) * W;                                 \
                                if (type == POOL_LP) {                                          \
                                    const AT yv = LD_##T(y[o]);                                 \
                                    const T *xr = x + (d * H + h) * W;                          \
                                    for (int64_t w = w0; w < w1; w++) {                         \
                                        AT xv = LD_##T(xr[w]);                                  \
                                        row[w] += g * LP_GRAD(AT, xv, yv, pv);                  \
                                    }                                                           \
                                } else {                                                        \
                                    for (int64_t w = w0; w < w1; w++) row[w] += v;              \
                                }                                                               \
                            }                                                                   \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
            if ((void *)j->acc != j->dx)                                                        \
                for (int64_t i = 0; i < isz; i++)                                               \
                    ((T *)j->dx)[r * isz + i] = ST_##T(dx[i]);                                  \
        }                                                                                       \
    }

/* 2x2 stride-2 max pooling with every window inside the data: windows do not overlap, so each
 * output's gradient lands on one element (the first of the four equal to the output). Written
 * with selects rather than branches: which of the four wins is data-dependent and mispredicts. */
#define POOL_BW_MAX22(T, AT)                                                                    \
    static void poolbw_max22_##T(void *ctx, int64_t r0, int64_t r1)                             \
    {                                                                                           \
        const poolbw_job *j = ctx;                                                              \
        const int64_t H = j->id[1], W = j->id[2], OH = j->od[1], OW = j->od[2];                 \
        const T zero = 0; /* float16's zero is the all-zero pattern too */                      \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = (const T *)j->x + r * H * W;                                           \
            const T *y = (const T *)j->y + r * OH * OW, *dy = (const T *)j->dy + r * OH * OW;   \
            T *dx = (T *)j->dx + r * H * W;                                                     \
            if (2 * OH != H || 2 * OW != W) /* a last row or column no window covers */         \
                memset(dx, 0, sizeof(T) * (size_t)(H * W));                                     \
            for (int64_t oh = 0; oh < OH; oh++) {                                               \
                const T *a = x + 2 * oh * W, *b = a + W;                                        \
                const T *yr = y + oh * OW, *gr = dy + oh * OW;                                  \
                T *da = dx + 2 * oh * W, *db = da + W;                                          \
                for (int64_t ow = 0; ow < OW; ow++) {                                           \
                    const AT yv = LD_##T(yr[ow]);                                               \
                    const T g = gr[ow];                                                         \
                    const bool m0 = LD_##T(a[2 * ow]) == yv;                                    \
                    const bool m1 = !m0 & (LD_##T(a[2 * ow + 1]) == yv);                        \
                    const bool m2 = !(m0 | m1) & (LD_##T(b[2 * ow]) == yv);                     \
                    const bool m3 = !(m0 | m1 | m2) & (LD_##T(b[2 * ow + 1]) == yv);            \
                    da[2 * ow] = m0 ? g : zero;                                                 \
                    da[2 * ow + 1] = m1 ? g : zero;                                             \
                    db[2 * ow] = m2 ? g : zero;                                                 \
                    db[2 * ow + 1] = m3 ? g : zero;                                             \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

/* 3x3 stride-2 max pooling, padding at most 1 (ResNet's after its first layer): windows overlap,
 * so dx is zeroed and each output's gradient added to the first element of its window equal
 * to the output, found by a backward scan of selects as in the general loop; the windows
 * inside the data with the nine offsets fixed, those on the border through the general
 * clipping. The same sums in the same order as poolbw_##T. ResNet-18's pooling at batch 16
 * (16 x 64 planes of 112 x 112, pad 1), 2 threads, medians of 15-21 calls, two builds in
 * alternating processes on the 2-core AMD EPYC: the gradient op alone 58-62 -> 30 ms; a
 * hybridized ReLU + pooling block, forward and backward, 81-87 -> 51-62 ms. */
#define POOL_BW_MAX33S2(T)                                                                      \
    static void poolbw_max33s2_##T(void *ctx, int64_t r0, int64_t r1)                           \
    {                                                                                           \
        const poolbw_job *j = ctx;                                                              \
        const int64_t H = j->id[1], W = j->id[2], OH = j->od[1], OW = j->od[2];                 \
        const int64_t ph = j->p[1], pw = j->p[2];                                               \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *x = (const T *)j->x + r * H * W;                                           \
            const T *y = (const T *)j->y + r * OH * OW, *dy = (const T *)j->dy + r * OH * OW;   \
            T *dx = (T *)j->dx + r * H * W;                                                     \
            memset(dx, 0, sizeof(T) * (size_t)(H * W));                                         \
            for (int64_t oh = 0; oh < OH; oh++) {                                               \
                const int64_t h0 = 2 * oh - ph;                                                 \
                const bool rows_in = h0 >= 0 && h0 + 3 <= H;                                    \
                for (int64_t ow = 0; ow < OW; ow++) {                                           \
                    const int64_t w0 = 2 * ow - pw, o = oh * OW + ow;                           \
                    const T yv = y[o];                                                          \
                    int64_t at = -1;                                                            \
                    if (rows_in && w0 >= 0 && w0 + 3 <= W) {                                    \
                        const T *q = x + h0 * W + w0;                                           \
                        const int64_t b = h0 * W + w0;                                          \
                        at = q[2 * W + 2] == yv ? b + 2 * W + 2 : at;                           \
                        at = q[2 * W + 1] == yv ? b + 2 * W + 1 : at;                           \
                        at = q[2 * W] == yv ? b + 2 * W : at;                                   \
                        at = q[W + 2] == yv ? b + W + 2 : at;                                   \
                        at = q[W + 1] == yv ? b + W + 1 : at;                                   \
                        at = q[W] == yv ? b + W : at;                                           \
                        at = q[2] == yv ? b + 2 : at;                                           \
                        at = q[1] == yv ? b + 1 : at;                                           \
                        at = q[0] == yv ? b : at;                                               \
                    } else {                                                                    \
                        const int64_t ha = imax(h0, 0), hb = imin(h0 + 3, H);                   \
                        const int64_t wa = imax(w0, 0), wb = imin(w0 + 3, W);                   \
                        for (int64_t h = hb - 1; h >= ha; h--)                                  \
                            for (int64_t w = wb - 1; w >= wa; w--)                              \
                                at = x[h * W + w] == yv ? h * W + w : at;                       \
                    }                                                                           \
                    if (at >= 0) dx[at] += dy[o];                                               \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

POOL_BW(f32, float)
POOL_BW(f64, double)
POOL_BW(f16, float)
POOL_BW_MAX33S2(f32)
POOL_BW_MAX33S2(f64)
POOL_BW_MAX22(f32, float)
POOL_BW_MAX22(f64, double)
POOL_BW_MAX22(f16, float)

static hg_status pool_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nout;
    hg_meta m0 = hg_meta_of(in[1]), m;
    pool_geom g;
    int64_t oshape[HG_MAX_NDIM];
    HG_TRY(pool_geometry(op, a, &m0, &g, oshape, &m));
    const hg_dtype dt = m.dtype;
    const bool cl = channel_last(a);
    const size_t esz = hg_dtype_size(dt);
    const int64_t N = m.shape[0], C = m.shape[1], nx = hg_shape_size(m.ndim, m.shape);
    const int64_t ny = hg_shape_size(m.ndim, oshape);
    const int64_t S = N * C > 0 ? nx / (N * C) : 0, OS = N * C > 0 ? ny / (N * C) : 0;
    const void *dy = hg_data(in[0]), *x = hg_data(in[1]), *y = nin > 2 ? hg_data(in[2]) : NULL;
    void *dx = hg_data(out[0]);
    char *ws = ctx->workspace;
    size_t acc_b = dt == HG_DTYPE_F16 ? ws_round(sizeof(float) * (size_t)nx) : 0;
    if (cl && nx > 0) { /* channel-first copies after the float16 accumulator */
        if (!ws) return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
        char *p = ws + acc_b;
        void *dyc = p, *xc = p + ws_round(esz * (size_t)ny);
        void *dxc = (char *)xc + ws_round(esz * (size_t)nx);
        void *yc = y ? (char *)dxc + ws_round(esz * (size_t)nx) : NULL;
        to_cf(dy, dyc, esz, N, OS, C);
        to_cf(x, xc, esz, N, S, C);
        if (y) to_cf(y, yc, esz, N, OS, C);
        dy = dyc;
        x = xc;
        y = yc;
        dx = dxc;
        move_dim(m.ndim, oshape, m.ndim - 1, 1);
    }
    poolbw_job j = {.dy = dy,
                    .x = x,
                    .y = y,
                    .dx = dx,
                    .type = (int)a->v[P_POOL_TYPE].i,
                    .pv = a->v[P_P_VALUE].is_none ? 1 : (int)a->v[P_P_VALUE].i,
                    .cip = a->v[P_COUNT_INCLUDE_PAD].is_none || a->v[P_COUNT_INCLUDE_PAD].b};
    j.acc = dt == HG_DTYPE_F16 ? ctx->workspace : j.dx;
    if (dt == HG_DTYPE_F16 && !j.acc && out[0]->size > 0)
        return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
    for (int i = 0; i < 3; i++) {
        j.id[i] = 1;
        j.od[i] = 1;
        j.k[i] = g.k[i];
        j.s[i] = g.s[i];
        j.p[i] = g.p[i];
    }
    for (int i = 0; i < g.nsp; i++) {
        j.id[3 - g.nsp + i] = m.shape[2 + i];
        j.od[3 - g.nsp + i] = oshape[2 + i];
    }
    const int64_t planes = m.shape[0] * m.shape[1];
    const int64_t ksz = j.k[0] * j.k[1] * j.k[2];
    const int64_t work = imax(1, j.od[0] * j.od[1] * j.od[2] * imax(ksz, 1) +
                                     j.id[0] * j.id[1] * j.id[2]);
    const int64_t grain = imax(1, POOL_GRAIN / work);
    hg_range_fn fn;
    if (j.type == POOL_MAX && !a->v[P_GLOBAL].b && g.nsp == 2 && j.k[1] == 2 && j.k[2] == 2 &&
        j.s[1] == 2 && j.s[2] == 2 && j.p[1] == 0 && j.p[2] == 0 && 2 * j.od[1] <= j.id[1] &&
        2 * j.od[2] <= j.id[2]) {
        fn = dt == HG_DTYPE_F32   ? poolbw_max22_f32
             : dt == HG_DTYPE_F64 ? poolbw_max22_f64
                                  : poolbw_max22_f16;
    } else if (j.type == POOL_MAX && !a->v[P_GLOBAL].b && g.nsp == 2 && dt != HG_DTYPE_F16 &&
               j.k[1] == 3 && j.k[2] == 3 && j.s[1] == 2 && j.s[2] == 2 && j.p[1] <= 1 &&
               j.p[2] <= 1) {
        fn = dt == HG_DTYPE_F32 ? poolbw_max33s2_f32 : poolbw_max33s2_f64;
    } else {
        fn = dt == HG_DTYPE_F32 ? poolbw_f32 : dt == HG_DTYPE_F64 ? poolbw_f64 : poolbw_f16;
    }
    hg_parallel_for(planes, grain, fn, &j);
    if (cl && nx > 0) to_cl(dx, hg_data(out[0]), esz, N, S, C);
    return HG_OK;
}

static hg_status pool_grad(hg_grad_ctx *g)
{
    int64_t t = hg_g_attrs(g)->v[P_POOL_TYPE].i;
    hg_sentry dx;
    if (t == POOL_MAX || t == POOL_LP)
        hg_g_op_fwd_attrs(g, "_backward_Pooling",
                          HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_out(g, 0)), NULL, 1, &dx);
    else
        hg_g_op_fwd_attrs(g, "_backward_Pooling", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL, 1,
                          &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

const hg_op_def hg_ops_pool[] = {
    {.name = "Pooling",
     .aliases = HG_NAMES("_npx_pooling"),
     .doc = "max / avg / sum / lp pooling over 1-D, 2-D or 3-D channel-first data",
     .input_names = HG_NAMES("data"),
     .attrs = k_pool_attrs,
     .num_attrs = HG_COUNT(k_pool_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = pool_infer,
     .forward = pool_forward,
     .workspace = pool_workspace,
     .grad = pool_grad},
    {.name = "_backward_Pooling",
     .doc = "Gradient of Pooling: the data gradient from (ograd, "
            "data) and, for max and lp pooling, the forward output.",
     .input_names = HG_NAMES("ograd", "data", "output"),
     .attrs = k_pool_attrs,
     .num_attrs = HG_COUNT(k_pool_attrs),
     .num_inputs = 3,
     .num_outputs = 1,
     .get_num_inputs = pool_bw_num_inputs,
     .infer = pool_bw_infer,
     .forward = pool_bw_forward,
     .workspace = pool_bw_workspace},
    {0},
};
