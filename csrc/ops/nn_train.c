/* Layers that behave differently in training (Dropout) and the small normalisation and
 * activation ops Gluon's basic layers call: L2Normalization and log_sigmoid.
 *
 * Dropout follows MXNet 1.x: two outputs, (output, mask), only output visible. The mask has the
 * data's dtype and shape except that every axis in `axes` is 1 (one mask value shared along it),
 * and holds 1/(1-p) where an element is kept and 0 where it is dropped, so output = data * mask
 * with the mask broadcast. One uniform is drawn per mask element from the global generator
 * (core/rng.c), so `mx.random.seed(n)` replays the same masks. Outside training (and with
 * mode='training') or with p == 0 the output is a copy of the data and the mask is all ones,
 * and no random numbers are drawn.
 *
 * L2Normalization views the data as rows (instance: one row per sample; spatial: one row per
 * (sample, channel)) or as [N, C, S] (channel: a norm per sample and position across channels).
 * Sums of squares are accumulated in double; float16 is read and written through float.
 *
 * Gradients: Dropout's is dy * mask (the hidden output, broadcast along `axes`), which is right
 * in every mode because the forward always writes the mask it applied (ones when inactive).
 * L2Normalization's is (dy - y * sum(dy * y)) / norm over the same groups the forward summed,
 * from its output and hidden norm; log_sigmoid's is dy * sigmoid(-x).
 */
#include <math.h>
#include <string.h>

#include "core/parallel.h"
#include "core/rng.h"
#include "graph/grad.h"
#include "ops/ew.h"
#include "ops/nn_train.h"
#include "ops/ops_util.h"

typedef uint16_t f16;

#define RNG_CHUNK 4096

static hg_status require_float(const hg_op_def *op, const hg_meta *m)
{
    if (!hg_is_float(m->dtype))
        return hg_error(HG_ERR_TYPE, "%s: data must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(m->dtype));
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Dropout
 */

static const char *const k_dropout_modes[] = {
    [MODE_TRAINING] = "training",
    [MODE_ALWAYS] = "always",
    [MODE_NMODES] = NULL,
};
_Static_assert(HG_COUNT(k_dropout_modes) == MODE_NMODES + 1, "k_dropout_modes must match its enum");

static const hg_attr_spec k_dropout_attrs[] = {
    [D_P] = {"p", HG_ATTR_FLOAT, 0, "0.5", "fraction of the input that gets dropped, in [0, 1]",
             NULL},
    [D_MODE] = {"mode", HG_ATTR_ENUM, 0, "training",
                "training: drop only while training; always: also at inference", k_dropout_modes},
    [D_AXES] = {"axes", HG_ATTR_TUPLE, 0, "()",
                "axes along which one mask value is shared (variational dropout)", NULL},
    [D_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, HG_ATTR_OPTIONAL, "False",
                     "ignored (no cuDNN on CPU)", NULL},
};
_Static_assert(HG_COUNT(k_dropout_attrs) == D_NATTRS, "k_dropout_attrs must match its enum");

static hg_status dropout_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    double p = a->v[D_P].f;
    /* MXNet's DropoutParam range is [0, 1] inclusive; p == 1 drops everything. */
    if (!(p >= 0 && p <= 1))
        return hg_error(HG_ERR_VALUE, "%s: value %g for Parameter p exceed bound [0,1]", op->name,
                        p);
    HG_TRY(require_float(op, &in[0]));
    out[0] = in[0];
    if (nout > 1) out[1] = in[0];
    if (in[0].ndim < 0) return HG_OK; /* shape unknown yet (graph inference) */
    const hg_tuple *ax = &a->v[D_AXES].t;
    for (int i = 0; i < ax->n; i++) {
        int64_t k = ax->v[i], nd = in[0].ndim;
        if (k < -nd || k >= nd) {
            char buf[HG_SHAPE_STR];
            return hg_error(HG_ERR_INDEX,
                            "%s: axes entry %lld is out of range for data of "
                            "shape %s",
                            op->name, (long long)k, hg_shape_str(buf, in[0].ndim, in[0].shape));
        }
        if (nout > 1) out[1].shape[k < 0 ? k + nd : k] = 1;
    }
    return HG_OK;
}

/* output = data * mask, the mask broadcast along the shared axes. */
HG_EW_FLOAT(HG_EW_BINARY, dropout_mul, l *r)
static const hg_op_def k_dropout_mul = {
    .name = "Dropout", .ew = HG_EW_TABLE_FLOAT(dropout_mul), .ew_arity = 2};

/* Draws the mask: (u < keep) * (1 / keep), as MXNet's DropoutKernel: scale where u < keep
 * (probability keep), 0 elsewhere; with p == 1 (keep 0) that is 0 * inf, NaN everywhere, as
 * MXNet gives. The scale is rounded to the mask's dtype once, so every kept element carries
 * the same value. */
static void dropout_draw_mask(hg_tensor *m, double keep)
{
    const double scale = 1.0 / keep, zero = 0.0 * scale;
    const float scale_f = 1.0f / (float)keep, zero_f = 0.0f * scale_f;
    const f16 scale_h = hg_float_to_half(scale_f), zero_h = hg_float_to_half(zero_f);
    double u[RNG_CHUNK];
    for (int64_t i0 = 0; i0 < m->size; i0 += RNG_CHUNK) {
        int64_t n = m->size - i0 < RNG_CHUNK ? m->size - i0 : RNG_CHUNK;
        hg_rng_uniform(u, n);
        switch (m->dtype) {
        case HG_DTYPE_F32: {
            float *y = HG_DATA(m, float) + i0;
            for (int64_t i = 0; i < n; i++) y[i] = u[i] < keep ? scale_f : zero_f;
            break;
        }
        case HG_DTYPE_F64: {
            double *y = HG_DATA(m, double) + i0;
            for (int64_t i = 0; i < n; i++) y[i] = u[i] < keep ? scale : zero;
            break;
        }
        default: {
            f16 *y = HG_DATA(m, f16) + i0;
            for (int64_t i = 0; i < n; i++) y[i] = u[i] < keep ? scale_h : zero_h;
            break;
        }
        }
    }
}

static void fill_ones(hg_tensor *t)
{
    switch (t->dtype) {
    case HG_DTYPE_F32: {
        float *y = HG_DATA(t, float);
        for (int64_t i = 0; i < t->size; i++) y[i] = 1.0f;
        break;
    }
    case HG_DTYPE_F64: {
        double *y = HG_DATA(t, double);
        for (int64_t i = 0; i < t->size; i++) y[i] = 1.0;
        break;
    }
    default: {
        f16 *y = HG_DATA(t, f16), one = hg_float_to_half(1.0f);
        for (int64_t i = 0; i < t->size; i++) y[i] = one;
        break;
    }
    }
}

static hg_status dropout_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)nin;
    const double p = a->v[D_P].f;
    const bool active = p > 0 && (ctx->is_train || a->v[D_MODE].i == MODE_ALWAYS);
    hg_tensor *x = in[0], *y = out[0], *mask = nout > 1 ? out[1] : NULL;
    if (!active) {
        if (hg_data(y) != hg_data(x))
            memcpy(hg_data(y), hg_data(x), (size_t)x->size * hg_dtype_size(x->dtype));
        if (mask) fill_ones(mask);
        return HG_OK;
    }
    if (!mask) return hg_error(HG_ERR_INTERNAL, "Dropout: called without its mask output");
    dropout_draw_mask(mask, 1.0 - p);
    hg_tensor *args[2] = {x, mask};
    return hg_ew_forward(&k_dropout_mul, a, 2, args, y);
}

/* The mask already holds 1/(1-p) or 0 (ones when the forward was inactive). */
static hg_status dropout_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "broadcast_mul", HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 1)), NULL));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * L2Normalization
 */

static const char *const k_l2_modes[] = {
    [L2_INSTANCE] = "instance",
    [L2_CHANNEL] = "channel",
    [L2_SPATIAL] = "spatial",
    [L2_NMODES] = NULL,
};
_Static_assert(HG_COUNT(k_l2_modes) == L2_NMODES + 1, "k_l2_modes must match its enum");

static const hg_attr_spec k_l2_attrs[] = {
    [L2_EPS] = {"eps", HG_ATTR_FLOAT, 0, "1e-10",
                "added to the sum of squares before the square root", NULL},
    [L2_MODE] =
        {"mode", HG_ATTR_ENUM, 0, "instance",
         "instance: one norm per sample; channel: across channels at each position; spatial: one "
         "norm per (sample, channel)",
         k_l2_modes},
};
_Static_assert(HG_COUNT(k_l2_attrs) == L2_NATTRS, "k_l2_attrs must match its enum");

static hg_status l2_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    int mode = (int)a->v[L2_MODE].i;
    HG_TRY(require_float(op, &in[0]));
    out[0] = in[0];
    if (nout > 1) out[1].dtype = in[0].dtype;
    if (in[0].ndim < 0) return HG_OK;
    int need = mode == L2_INSTANCE ? 1 : 3;
    if (in[0].ndim < need) {
        char buf[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE,
                        "%s: at least %d dimension%s required in %s mode, got "
                        "data of shape %s",
                        op->name, need, need > 1 ? "s" : "", k_l2_modes[mode],
                        hg_shape_str(buf, in[0].ndim, in[0].shape));
    }
    if (nout < 2) return HG_OK;
    hg_meta *n = &out[1];
    if (mode == L2_INSTANCE) {
        n->ndim = 1;
        n->shape[0] = in[0].shape[0];
    } else if (mode == L2_SPATIAL) {
        n->ndim = 2;
        n->shape[0] = in[0].shape[0];
        n->shape[1] = in[0].shape[1];
    } else {
        *n = in[0];
        n->shape[1] = 1;
    }
    return HG_OK;
}

typedef struct {
    const void *x;
    void *y, *norm;
    int64_t rows, len;     /* row modes: rows of len elements */
    int64_t c, s, nsblk;   /* channel mode: [rows, c, s] in blocks of L2_SBLK positions */
    double eps;
} l2_job;

#define L2_SBLK 256

#define LD_f32(v) (v)
#define LD_f64(v) (v)
#define LD_f16(v) hg_half_to_float(v)
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define ST_f16(v) hg_float_to_half((float)(v))
/* Type the division runs in: float16 divides in float. */
#define CT_f32 float
#define CT_f64 double
#define CT_f16 float

/* Row modes: norm[r] = sqrt(sum x[r, :]^2 + eps), y[r, :] = x[r, :] / norm[r]. */
#define L2_ROWS(T)                                                                             \
    static void l2_rows_##T(void *ctx, int64_t r0, int64_t r1)                                 \
    {                                                                                          \
        const l2_job *j = ctx;                                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                    \
            const T *x = (const T *)j->x + r * j->len;                                         \
            T *y = (T *)j->y + r * j->len;                                                     \
            double acc = 0;                                                                    \
            for (int64_t i = 0; i < j->len; i++) {                                             \
                double v = LD_##T(x[i]);                                                       \
                acc += v * v;                                                                  \
            }                                                                                  \
            const T nt = ST_##T(sqrt(acc + j->eps));                                           \
            const CT_##T d = (CT_##T)LD_##T(nt);                                               \
            if (j->norm) ((T *)j->norm)[r] = nt;                                               \
            for (int64_t i = 0; i < j->len; i++) y[i] = ST_##T((CT_##T)LD_##T(x[i]) / d);      \
        }                                                                                      \
    }

/* Channel mode: one unit is a block of up to L2_SBLK positions of one sample; the channel loop
 * is outside so the inner loops stay contiguous. */
#define L2_CHANNEL(T)                                                                          \
    static void l2_channel_##T(void *ctx, int64_t u0, int64_t u1)                              \
    {                                                                                          \
        const l2_job *j = ctx;                                                                 \
        double acc[L2_SBLK];                                                                   \
        CT_##T d[L2_SBLK];                                                                     \
        for (int64_t u = u0; u < u1; u++) {                                                    \
            int64_t n = u / j->nsblk, s0 = (u % j->nsblk) * L2_SBLK;                           \
            int64_t m = j->s - s0 < L2_SBLK ? j->s - s0 : L2_SBLK;                             \
            const T *x = (const T *)j->x + n * j->c * j->s + s0;                               \
            T *y = (T *)j->y + n * j->c * j->s + s0;                                           \
            for (int64_t i = 0; i < m; i++) acc[i] = 0;                                        \
            for (int64_t c = 0; c < j->c; c++) {                                               \
                const T *xc = x + c * j->s;                                                    \
                for (int64_t i = 0; i < m; i++) {                                              \
                    double v = LD_##T(xc[i]);                                                  \
                    acc[i] += v * v;                                                           \
                }                                                                              \
            }                                                                                  \
            T *nrm = j->norm ? (T *)j->norm + n * j->s + s0 : NULL;                            \
            for (int64_t i = 0; i < m; i++) {                                                  \
                T nt = ST_##T(sqrt(acc[i] + j->eps));                                          \
                d[i] = (CT_##T)LD_##T(nt);                                                     \
                if (nrm) nrm[i] = nt;                                                          \
            }                                                                                  \
            for (int64_t c = 0; c < j->c; c++) {                                               \
                const T *xc = x + c * j->s;                                                    \
                T *yc = y + c * j->s;                                                          \
                for (int64_t i = 0; i < m; i++) yc[i] = ST_##T((CT_##T)LD_##T(xc[i]) / d[i]);  \
            }                                                                                  \
        }                                                                                      \
    }

L2_ROWS(f32)
L2_ROWS(f64)
L2_ROWS(f16)
L2_CHANNEL(f32)
L2_CHANNEL(f64)
L2_CHANNEL(f16)

static hg_status l2_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    const hg_tensor *x = in[0];
    int mode = (int)a->v[L2_MODE].i;
    l2_job j = {.x = hg_data(x),
                .y = hg_data(out[0]),
                .norm = nout > 1 ? hg_data(out[1]) : NULL,
                .eps = a->v[L2_EPS].f};
    int ti = x->dtype == HG_DTYPE_F32 ? 0 : x->dtype == HG_DTYPE_F64 ? 1 : 2;
    if (mode == L2_CHANNEL) {
        static const hg_range_fn fns[] = {l2_channel_f32, l2_channel_f64, l2_channel_f16};
        j.rows = x->shape[0];
        j.c = x->shape[1];
        j.s = hg_shape_size(x->ndim - 2, x->shape + 2);
        if (j.rows == 0 || j.s == 0) return HG_OK; /* no norm to write either */
        j.nsblk = (j.s + L2_SBLK - 1) / L2_SBLK;
        int64_t work = j.c * (j.s < L2_SBLK ? j.s : L2_SBLK);
        hg_parallel_for(j.rows * j.nsblk, HG_GRAIN_ELEMWISE / (work > 0 ? work : 1) + 1, fns[ti],
                        &j);
        return HG_OK;
    }
    static const hg_range_fn fns[] = {l2_rows_f32, l2_rows_f64, l2_rows_f16};
    int lead = mode == L2_INSTANCE ? 1 : 2; /* dims that index the rows */
    j.rows = hg_shape_size(lead, x->shape);
    j.len = hg_shape_size(x->ndim - lead, x->shape + lead);
    hg_parallel_for(j.rows, HG_GRAIN_ELEMWISE / (j.len > 0 ? j.len : 1) + 1, fns[ti], &j);
    return HG_OK;
}

/* Backward, from (dy, y, norm): dx = (dy - y * s) / norm with s = sum(dy * y) over each group
 * the forward normalised (y = x / norm, so d norm / dx = y). */
typedef struct {
    const void *dy, *y, *norm;
    void *dx;
    int64_t rows, len, c, s, nsblk;
} l2b_job;

#define L2_BWD(T)                                                                              \
    static void l2b_rows_##T(void *ctx, int64_t r0, int64_t r1)                                \
    {                                                                                          \
        const l2b_job *j = ctx;                                                                \
        for (int64_t r = r0; r < r1; r++) {                                                    \
            const T *dy = (const T *)j->dy + r * j->len, *y = (const T *)j->y + r * j->len;    \
            T *dx = (T *)j->dx + r * j->len;                                                   \
            double acc = 0;                                                                    \
            for (int64_t i = 0; i < j->len; i++)                                               \
                acc += (double)LD_##T(dy[i]) * (double)LD_##T(y[i]);                           \
            const CT_##T s = (CT_##T)acc, d = (CT_##T)LD_##T(((const T *)j->norm)[r]);         \
            for (int64_t i = 0; i < j->len; i++)                                               \
                dx[i] = ST_##T(((CT_##T)LD_##T(dy[i]) - (CT_##T)LD_##T(y[i]) * s) / d);        \
        }                                                                                      \
    }                                                                                          \
    static void l2b_channel_##T(void *ctx, int64_t u0, int64_t u1)                             \
    {                                                                                          \
        const l2b_job *j = ctx;                                                                \
        double acc[L2_SBLK];                                                                   \
        CT_##T s[L2_SBLK], d[L2_SBLK];                                                         \
        for (int64_t u = u0; u < u1; u++) {                                                    \
            int64_t n = u / j->nsblk, s0 = (u % j->nsblk) * L2_SBLK;                           \
            int64_t m = j->s - s0 < L2_SBLK ? j->s - s0 : L2_SBLK;                             \
            const int64_t base = n * j->c * j->s + s0;                                         \
            const T *dy = (const T *)j->dy + base, *y = (const T *)j->y + base;                \
            T *dx = (T *)j->dx + base;                                                         \
            const T *nrm = (const T *)j->norm + n * j->s + s0;                                 \
            for (int64_t i = 0; i < m; i++) acc[i] = 0;                                        \
            for (int64_t c = 0; c < j->c; c++)                                                 \
                for (int64_t i = 0; i < m; i++)                                                \
                    acc[i] += (double)LD_##T(dy[c * j->s + i]) * (double)LD_##T(y[c * j->s + i]); \
            for (int64_t i = 0; i < m; i++) {                                                  \
                s[i] = (CT_##T)acc[i];                                                         \
                d[i] = (CT_##T)LD_##T(nrm[i]);                                                 \
            }                                                                                  \
            for (int64_t c = 0; c < j->c; c++)                                                 \
                for (int64_t i = 0; i < m; i++) {                                              \
                    const int64_t k = c * j->s + i;                                            \
                    dx[k] = ST_##T(((CT_##T)LD_##T(dy[k]) - (CT_##T)LD_##T(y[k]) * s[i]) / d[i]); \
                }                                                                              \
        }                                                                                      \
    }

L2_BWD(f32)
L2_BWD(f64)
L2_BWD(f16)

static hg_status l2_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    hg_meta fwd[2] = {{.ndim = -1}, {.ndim = -1}};
    HG_TRY(l2_infer(op, a, 1, &in[1], 2, fwd)); /* the forward's rule: y is data-shaped */
    const hg_meta *want[3] = {&in[1], &in[1], &fwd[1]};
    for (int i = 0; i < 3; i++) {
        if (in[i].ndim < 0 || want[i]->ndim < 0) continue;
        if (in[i].dtype != in[1].dtype ||
            !hg_shape_equal(in[i].ndim, in[i].shape, want[i]->ndim, want[i]->shape))
            return hg_error(
                HG_ERR_VALUE,
                "%s: input %d has shape %s and dtype %s, expected %s "
                "and %s",
                op->name, i, hg_shape_str(b1, in[i].ndim, in[i].shape), hg_dtype_name(in[i].dtype),
                hg_shape_str(b2, want[i]->ndim, want[i]->shape), hg_dtype_name(in[1].dtype));
    }
    out[0] = in[1];
    return HG_OK;
}

static hg_status l2_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *y = in[1];
    int mode = (int)a->v[L2_MODE].i;
    l2b_job j = {
        .dy = hg_data(in[0]), .y = hg_data(y), .norm = hg_data(in[2]), .dx = hg_data(out[0])};
    int ti = y->dtype == HG_DTYPE_F32 ? 0 : y->dtype == HG_DTYPE_F64 ? 1 : 2;
    if (mode == L2_CHANNEL) {
        static const hg_range_fn fns[] = {l2b_channel_f32, l2b_channel_f64, l2b_channel_f16};
        j.rows = y->shape[0];
        j.c = y->shape[1];
        j.s = hg_shape_size(y->ndim - 2, y->shape + 2);
        if (j.rows == 0 || j.s == 0) return HG_OK;
        j.nsblk = (j.s + L2_SBLK - 1) / L2_SBLK;
        int64_t work = j.c * (j.s < L2_SBLK ? j.s : L2_SBLK);
        hg_parallel_for(j.rows * j.nsblk, HG_GRAIN_ELEMWISE / (work > 0 ? work : 1) + 1, fns[ti],
                        &j);
        return HG_OK;
    }
    static const hg_range_fn fns[] = {l2b_rows_f32, l2b_rows_f64, l2b_rows_f16};
    int lead = mode == L2_INSTANCE ? 1 : 2;
    j.rows = hg_shape_size(lead, y->shape);
    j.len = hg_shape_size(y->ndim - lead, y->shape + lead);
    hg_parallel_for(j.rows, HG_GRAIN_ELEMWISE / (j.len > 0 ? j.len : 1) + 1, fns[ti], &j);
    return HG_OK;
}

static hg_status l2_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_L2Normalization",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 0), hg_g_out(g, 1)), NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * log_sigmoid: log(1 / (1 + exp(-x))) = min(x, 0) - log1p(exp(-|x|)), which neither overflows
 * nor loses the small values for large |x|.
 */

HG_EW_UNARY(log_sigmoid, f32, fminf(v, 0.0f) - log1pf(expf(-fabsf(v))))
HG_EW_UNARY(log_sigmoid, f64, fmin(v, 0.0) - log1p(exp(-fabs(v))))

/* d log_sigmoid(x) = sigmoid(-x) = 1 / (1 + exp(x)); exp overflowing to inf gives 0, as it
 * should. Binary tile: l = dy, r = x. */
HG_EW_BINARY(log_sigmoid_grad, f32, l / (1.0f + expf(r)))
HG_EW_BINARY(log_sigmoid_grad, f64, l / (1.0 + exp(r)))

static hg_status log_sigmoid_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0,
             hg_g_op(g, "_backward_log_sigmoid", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

static hg_status float_infer_same(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    HG_TRY(require_float(op, &in[0]));
    return hg_infer_same(op, a, nin, in, nout, out);
}

const hg_op_def hg_ops_nn_train[] = {
    {.name = "Dropout",
     .doc = "randomly zeroes elements with probability p while training and scales the rest by "
            "1/(1-p); identity at inference unless mode='always'",
     .input_names = HG_NAMES("data"),
     .output_names = HG_NAMES("output", "mask"),
     .attrs = k_dropout_attrs,
     .num_attrs = HG_COUNT(k_dropout_attrs),
     .num_inputs = 1,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .flags = HG_OP_INPLACE | HG_OP_RANDOM,
     .infer = dropout_infer,
     .forward = dropout_forward,
     .grad = dropout_grad},
    {.name = "L2Normalization",
     .doc = "divides the data by its L2 norm: per sample (instance), across channels (channel) "
            "or per sample and channel (spatial)",
     .input_names = HG_NAMES("data"),
     .output_names = HG_NAMES("output", "norm"),
     .attrs = k_l2_attrs,
     .num_attrs = HG_COUNT(k_l2_attrs),
     .num_inputs = 1,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .infer = l2_infer,
     .forward = l2_forward,
     .grad = l2_grad},
    {.name = "_backward_L2Normalization",
     .doc = "gradient of L2Normalization from (ograd, output, norm): (dy - y * sum(dy * y)) / norm",
     .input_names = HG_NAMES("ograd", "output", "norm"),
     .attrs = k_l2_attrs,
     .num_attrs = HG_COUNT(k_l2_attrs),
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = l2_bwd_infer,
     .forward = l2_bwd_forward},
    {.name = "log_sigmoid",
     .doc = "log(sigmoid(x)), computed without overflow",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .infer = float_infer_same,
     .ew = HG_EW_TABLE_FLOAT(log_sigmoid),
     .ew_arity = 1,
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE,
     .grad = log_sigmoid_grad},
    {.name = "_backward_log_sigmoid",
     .doc = "gradient of log_sigmoid: ograd / (1 + exp(data))",
     .input_names = HG_NAMES("ograd", "data"),
     .num_inputs = 2,
     .infer = float_infer_same,
     .ew = HG_EW_TABLE_FLOAT(log_sigmoid_grad),
     .ew_arity = 2,
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE},
    {0},
};
