/* Basic neural-network activations: the LeakyReLU family (leaky, prelu, rrelu, elu, selu,
 * gelu) with its gradient (_backward_LeakyReLU). softmax and its relatives live in softmax.c.
 * float16 is read and written through float.
 */
#include <string.h>
#include <tgmath.h>

#include "core/parallel.h"
#include "core/rng.h"
#include "graph/grad.h"
#include "kernels/cpu/vmath.h"
#include "ops/ew.h"
#include "ops/nn_basic.h"
#include "ops/ops_util.h"

typedef uint16_t f16;

#define LD_f32(p) (p)
#define LD_f64(p) (p)
#define LD_f16(p) hg_half_to_float(p)
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define ST_f16(v) hg_float_to_half((float)(v))

/* ---------------------------------------------------------------------------------------------
 * LeakyReLU
 */

/* LeakyReLU's act_types (ACT_ID in ops/nn_basic.h, MXNet's order: the index is the parsed
 * attribute value), with their element-wise kernels: X(ID, name, forward tile functions, their
 * arity, backward tile functions). rrelu's forward entry is its inference form (training draws
 * the slopes); rrelu and prelu have their own backward kernels, so their backward entries are
 * never called. Every per-act_type table below is built from this one list. */
#define LRELU_TYPES(X)                                                                          \
    X(RRELU, rrelu, lr_rrelu_eval, 1, lrg_leaky)                                                \
    X(LEAKY, leaky, lr_leaky, 1, lrg_leaky)                                                     \
    X(PRELU, prelu, lr_prelu, 2, lrg_leaky)                                                     \
    X(ELU, elu, lr_elu, 1, lrg_elu)                                                             \
    X(SELU, selu, lr_selu, 1, lrg_selu)                                                         \
    X(GELU, gelu, lr_gelu, 1, lrg_gelu)

static const char *const k_lrelu_types[] = {
#define LRELU_NAME(ID, NAME, FWD, ARITY, BWD) [ACT_##ID] = #NAME,
    LRELU_TYPES(LRELU_NAME)
#undef LRELU_NAME
        [ACT_NTYPES] = NULL,
};
_Static_assert(HG_COUNT(k_lrelu_types) == ACT_NTYPES + 1, "k_lrelu_types must match LRELU_TYPES");
static const hg_attr_spec k_lrelu_attrs[] = {
    [LR_ACT_TYPE] = {"act_type", HG_ATTR_ENUM, 0, "leaky",
                     "activation: rrelu, leaky, prelu, elu, selu or gelu", k_lrelu_types},
    [LR_SLOPE] = {"slope", HG_ATTR_FLOAT, 0, "0.25", "slope of the negative part (leaky and elu)",
                  NULL},
    [LR_LOWER] = {"lower_bound", HG_ATTR_FLOAT, 0, "0.125",
                  "lower bound of the random slope (rrelu)", NULL},
    [LR_UPPER] = {"upper_bound", HG_ATTR_FLOAT, 0, "0.334",
                  "upper bound of the random slope (rrelu)", NULL},
};
_Static_assert(HG_COUNT(k_lrelu_attrs) == LR_NATTRS, "k_lrelu_attrs must match its enum");

/* MXNet 1.9.1 declares both constants as float, so its float64 SELU uses them rounded to
 * float32 (a relative 3e-8 away from the exact ones); float literals give the same numbers. */
#define SELU_LAMBDA 1.0507009873554805f
#define SELU_ALPHA 1.6732632423543772f

/* Tile functions for hg_ew_forward. The attribute is copied to a local first: stores through
 * y could otherwise alias it (for double) and keep the loop from vectorising. */
#define LR_UNARY(NAME, T, SLOPE, EXPR)                                                          \
    static void NAME##_##T(int64_t n, const void *in0, int64_t s0, const void *in1,             \
                           int64_t s1, void *out, const hg_attrs *a)                            \
    {                                                                                           \
        typedef T elem;                                                                         \
        const elem *x = in0;                                                                    \
        elem *y = out;                                                                          \
        const elem k = (elem)(SLOPE);                                                           \
        (void)in1; (void)s1; (void)k; (void)a;                                                  \
        for (int64_t i = 0; i < n; i++) { elem v = x[i * s0]; y[i] = (elem)(EXPR); }            \
    }
#define LR_BOTH(NAME, SLOPE, EXPR) LR_UNARY(NAME, f32, SLOPE, EXPR) LR_UNARY(NAME, f64, SLOPE, EXPR)

LR_BOTH(lr_leaky, a->v[LR_SLOPE].f, v > 0 ? v : k * v)
LR_BOTH(lr_rrelu_eval, (a->v[LR_LOWER].f + a->v[LR_UPPER].f) / 2, v > 0 ? v : k * v)
LR_BOTH(lr_elu, a->v[LR_SLOPE].f, v > 0 ? v : k * expm1(v))
LR_BOTH(lr_selu, 0, (elem)SELU_LAMBDA *(v > 0 ? v : (elem)SELU_ALPHA * expm1(v)))
LR_BOTH(lr_gelu, 0, (elem)0.5 * v * (1 + erf(v * (elem)0.70710678118654752440)))
HG_EW_FLOAT(HG_EW_BINARY, lr_prelu, l > 0 ? l : l * r)

#define LR_IMPL(FN, ARITY)                                                                      \
    {.name = "LeakyReLU", .ew = HG_EW_TABLE_FLOAT(FN), .ew_arity = ARITY}
/* Indexed by act_type. */
static const hg_op_def k_lrelu_impl[] = {
#define LRELU_IMPL(ID, NAME, FWD, ARITY, BWD) [ACT_##ID] = LR_IMPL(FWD, ARITY),
    LRELU_TYPES(LRELU_IMPL)
#undef LRELU_IMPL
};
_Static_assert(HG_COUNT(k_lrelu_impl) == ACT_NTYPES, "k_lrelu_impl must match LRELU_TYPES");

static int lrelu_num_inputs(const hg_attrs *a) { return a->v[LR_ACT_TYPE].i == ACT_PRELU ? 2 : 1; }
/* rrelu has a second output, visible as in MXNet: the slopes it used (drawn per element in
 * training, the mean slope otherwise). */
static int lrelu_num_outputs(const hg_attrs *a) { return a->v[LR_ACT_TYPE].i == ACT_RRELU ? 2 : 1; }

bool hg_prelu_gamma_shape(const hg_meta *data, const hg_meta *gamma, int64_t *shape)
{
    int s = gamma->ndim - 1;
    for (int i = data->ndim - 1; i >= 0; i--) {
        if (s >= 0 && i <= 1 && (gamma->shape[s] == data->shape[i] || gamma->shape[s] == 1))
            shape[i] = gamma->shape[s--];
        else shape[i] = 1;
    }
    return s == -1;
}

static hg_status lrelu_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    int act = (int)a->v[LR_ACT_TYPE].i;
    (void)nin;
    if (!hg_is_float(in[0].dtype))
        return hg_error(HG_ERR_TYPE,
                        "%s(act_type='%s'): data must be float16, float32 or "
                        "float64, got %s",
                        op->name, k_lrelu_types[act], hg_dtype_name(in[0].dtype));
    if (act == ACT_RRELU && !(a->v[LR_LOWER].f <= a->v[LR_UPPER].f))
        return hg_error(HG_ERR_VALUE,
                        "%s(act_type='rrelu'): lower_bound %g must not exceed "
                        "upper_bound %g",
                        op->name, a->v[LR_LOWER].f, a->v[LR_UPPER].f);
    if (act == ACT_PRELU && in[0].ndim >= 0) {
        if (in[0].ndim == 0)
            return hg_error(HG_ERR_VALUE,
                            "%s(act_type='prelu'): data must have at least one "
                            "dimension, got shape []",
                            op->name);
        if (in[1].ndim < 0) { /* a weight not created yet: one slope per channel */
            in[1].ndim = 1;
            in[1].shape[0] = in[0].ndim > 1 ? in[0].shape[1] : in[0].shape[0];
            in[1].dtype = in[0].dtype;
        }
        int64_t g[HG_MAX_NDIM];
        if (in[1].ndim > in[0].ndim || !hg_prelu_gamma_shape(&in[0], &in[1], g))
            return hg_error(HG_ERR_VALUE,
                            "%s(act_type='prelu'): cannot broadcast gamma of shape "
                            "%s along axis 1 of data of shape %s",
                            op->name, hg_shape_str(b1, in[1].ndim, in[1].shape),
                            hg_shape_str(b2, in[0].ndim, in[0].shape));
        if (in[1].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE,
                            "%s(act_type='prelu'): gamma dtype %s differs from data "
                            "dtype %s",
                            op->name, hg_dtype_name(in[1].dtype), hg_dtype_name(in[0].dtype));
    }
    for (int i = 0; i < nout; i++) out[i] = in[0];
    return HG_OK;
}

/* rrelu while training: a slope drawn from U[lower, upper) per element, kept as the mask. */
#define RRELU_CHUNK 4096
static void rrelu_train(const hg_attrs *a, const hg_tensor *xt, hg_tensor *yt, hg_tensor *mt)
{
    double u[RRELU_CHUNK];
    const double lo = a->v[LR_LOWER].f, span = a->v[LR_UPPER].f - lo;
    for (int64_t i0 = 0; i0 < xt->size; i0 += RRELU_CHUNK) {
        int64_t m = xt->size - i0 < RRELU_CHUNK ? xt->size - i0 : RRELU_CHUNK;
        hg_rng_uniform(u, m);
        for (int64_t i = 0; i < m; i++) u[i] = lo + span * u[i];
        switch (xt->dtype) {
        case HG_DTYPE_F32: {
            const float *x = HG_DATA(xt, float) + i0;
            float *y = HG_DATA(yt, float) + i0, *k = HG_DATA(mt, float) + i0;
            for (int64_t i = 0; i < m; i++) {
                k[i] = (float)u[i];
                y[i] = x[i] > 0 ? x[i] : x[i] * k[i];
            }
            break;
        }
        case HG_DTYPE_F64: {
            const double *x = HG_DATA(xt, double) + i0;
            double *y = HG_DATA(yt, double) + i0, *k = HG_DATA(mt, double) + i0;
            for (int64_t i = 0; i < m; i++) {
                k[i] = u[i];
                y[i] = x[i] > 0 ? x[i] : x[i] * k[i];
            }
            break;
        }
        default: {
            const f16 *x = HG_DATA(xt, f16) + i0;
            f16 *y = HG_DATA(yt, f16) + i0, *k = HG_DATA(mt, f16) + i0;
            for (int64_t i = 0; i < m; i++) {
                k[i] = hg_float_to_half((float)u[i]);
                float v = hg_half_to_float(x[i]);
                y[i] = hg_float_to_half(v > 0 ? v : v * hg_half_to_float(k[i]));
            }
            break;
        }
        }
    }
}

/* rrelu's mask outside training: every element uses the mean slope. */
static void fill_slope(hg_tensor *t, double v)
{
    for (int64_t i = 0; i < t->size; i++) {
        if (t->dtype == HG_DTYPE_F32) HG_DATA(t, float)[i] = (float)v;
        else if (t->dtype == HG_DTYPE_F64) HG_DATA(t, double)[i] = v;
        else HG_DATA(t, f16)[i] = hg_float_to_half((float)v);
    }
}

static hg_status lrelu_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)nin;
    int act = (int)a->v[LR_ACT_TYPE].i;
    if (act == ACT_RRELU) {
        if (ctx->is_train) {
            rrelu_train(a, in[0], out[0], out[1]);
            return HG_OK;
        }
        if (nout > 1) fill_slope(out[1], (a->v[LR_LOWER].f + a->v[LR_UPPER].f) / 2);
    }
    if (act != ACT_PRELU) return hg_ew_forward(&k_lrelu_impl[act], a, 1, in, out[0]);
    /* prelu: view gamma with data's rank so the broadcasting driver lines it up on axis 1. */
    hg_meta dm = hg_meta_of(in[0]), gm = hg_meta_of(in[1]);
    int64_t g[HG_MAX_NDIM];
    hg_prelu_gamma_shape(&dm, &gm, g);
    hg_tensor *gv, *args[2] = {in[0], NULL};
    HG_TRY(hg_tensor_view(in[1], dm.ndim, g, &gv));
    args[1] = gv;
    hg_status st = hg_ew_forward(&k_lrelu_impl[ACT_PRELU], a, 2, args, out[0]);
    hg_tensor_free(gv);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * LeakyReLU backward: dx = dy * f'(x). Inputs (dy, data), plus gamma for prelu (which also
 * gives gamma its gradient, summed over the axes gamma is broadcast along) and the mask output
 * for rrelu (the slope the forward used: drawn per element while training, the mean slope
 * otherwise, so one rule serves both modes). At x == 0 every slope is the negative side's, as
 * in the forward.
 */

#define SQRT1_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

/* l = dy, r = data; the slope is copied to a local first (see LR_UNARY). */
#define LR_GRAD(NAME, T, SLOPE, EXPR)                                                           \
    static void NAME##_##T(int64_t n, const void *in0, int64_t s0, const void *in1,             \
                           int64_t s1, void *out, const hg_attrs *a)                            \
    {                                                                                           \
        typedef T elem;                                                                         \
        const elem *dy = in0, *x = in1;                                                         \
        elem *o = out;                                                                          \
        const elem k = (elem)(SLOPE);                                                           \
        (void)k; (void)a;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                       \
            elem v = x[i * s1];                                                                 \
            o[i] = (elem)(dy[i * s0] * (EXPR));                                                 \
        }                                                                                       \
    }
#define LR_GRAD_BOTH(NAME, SLOPE, EXPR)                                                         \
    LR_GRAD(NAME, f32, SLOPE, EXPR) LR_GRAD(NAME, f64, SLOPE, EXPR)

LR_GRAD_BOTH(lrg_leaky, a->v[LR_SLOPE].f, v > 0 ? (elem)1 : k)
LR_GRAD_BOTH(lrg_elu, a->v[LR_SLOPE].f, v > 0 ? (elem)1 : k * exp(v))
LR_GRAD_BOTH(lrg_selu, 0, (elem)SELU_LAMBDA *(v > 0 ? (elem)1 : (elem)SELU_ALPHA * exp(v)))
LR_GRAD_BOTH(lrg_gelu, 0,
             (elem)0.5 * (1 + erf(v * (elem)SQRT1_2)) +
                 v * exp(v * v * (elem)-0.5) * (elem)INV_SQRT_2PI)

/* Indexed by act_type; rrelu and prelu have their own kernels below. */
static const hg_op_def k_lrelu_grad_impl[] = {
#define LRELU_GRAD_IMPL(ID, NAME, FWD, ARITY, BWD) [ACT_##ID] = LR_IMPL(BWD, 2),
    LRELU_TYPES(LRELU_GRAD_IMPL)
#undef LRELU_GRAD_IMPL
};
_Static_assert(HG_COUNT(k_lrelu_grad_impl) == ACT_NTYPES,
               "k_lrelu_grad_impl must match LRELU_TYPES");

typedef struct {
    const void *dy, *x, *k; /* k: rrelu's mask, or prelu's gamma */
    void *dx;
    double *rows;           /* prelu: gamma's gradient per (axis 0, axis 1) row */
    int64_t B, R, ga, gb;   /* prelu: data as [A, B, R]; gamma as [ga, gb] on axes 0 and 1 */
} lrb_job;

#define LR_BWD_KERNELS(T, AT)                                                                   \
    static void rrelu_bwd_##T(void *ctx, int64_t i0, int64_t i1)                                \
    {                                                                                           \
        const lrb_job *j = ctx;                                                                 \
        const T *dy = j->dy, *x = j->x, *k = j->k;                                              \
        T *dx = j->dx;                                                                          \
        for (int64_t i = i0; i < i1; i++) {                                                     \
            const AT d = LD_##T(dy[i]);                                                         \
            dx[i] = ST_##T(LD_##T(x[i]) > 0 ? d : d * LD_##T(k[i]));                            \
        }                                                                                       \
    }                                                                                           \
    static void prelu_bwd_##T(void *ctx, int64_t r0, int64_t r1)                                \
    {                                                                                           \
        const lrb_job *j = ctx;                                                                 \
        const int64_t R = j->R;                                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const int64_t a = r / j->B, b = r % j->B;                                           \
            const int64_t gi = (j->ga > 1 ? a : 0) * j->gb + (j->gb > 1 ? b : 0);               \
            const AT g = LD_##T(((const T *)j->k)[gi]);                                         \
            const T *dy = (const T *)j->dy + r * R, *x = (const T *)j->x + r * R;               \
            T *dx = (T *)j->dx + r * R;                                                         \
            double acc = 0;                                                                     \
            for (int64_t i = 0; i < R; i++) {                                                   \
                const AT v = LD_##T(x[i]), d = LD_##T(dy[i]);                                   \
                dx[i] = ST_##T(v > 0 ? d : d * g);                                              \
                acc += v > 0 ? 0.0 : (double)(d * v);                                           \
            }                                                                                   \
            j->rows[r] = acc;                                                                   \
        }                                                                                       \
    }

LR_BWD_KERNELS(f32, float)
LR_BWD_KERNELS(f64, double)
LR_BWD_KERNELS(f16, float)

static int lrelu_grad_num_inputs(const hg_attrs *a)
{
    int act = (int)a->v[LR_ACT_TYPE].i;
    return act == ACT_PRELU || act == ACT_RRELU ? 3 : 2;
}

static int lrelu_grad_num_outputs(const hg_attrs *a)
{
    return a->v[LR_ACT_TYPE].i == ACT_PRELU ? 2 : 1;
}

static hg_status lrelu_grad_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    int act = (int)a->v[LR_ACT_TYPE].i;
    for (int i = 0; i < nin; i++)
        if (in[i].ndim >= 0 && in[i].dtype != in[1].dtype)
            return hg_error(HG_ERR_TYPE, "%s(act_type='%s'): input %d has dtype %s, data %s",
                            op->name, k_lrelu_types[act], i, hg_dtype_name(in[i].dtype),
                            hg_dtype_name(in[1].dtype));
    /* The forward's rule checks data (and gamma's placement) the same way. */
    hg_meta fin[2] = {in[1], nin > 2 ? in[2] : in[1]}, fout[2];
    HG_TRY(lrelu_infer(op, a, act == ACT_PRELU ? 2 : 1, fin, 1, fout));
    int last = act == ACT_RRELU ? 2 : 0; /* inputs that must have data's shape: dy, (mask) */
    for (int i = 0; i <= last; i += 2)
        if (in[i].ndim >= 0 && in[1].ndim >= 0 &&
            !hg_shape_equal(in[i].ndim, in[i].shape, in[1].ndim, in[1].shape))
            return hg_error(HG_ERR_VALUE, "%s(act_type='%s'): input %d has shape %s, data %s",
                            op->name, k_lrelu_types[act], i,
                            hg_shape_str(b1, in[i].ndim, in[i].shape),
                            hg_shape_str(b2, in[1].ndim, in[1].shape));
    out[0] = in[1];
    if (nout > 1) out[1] = fin[1];
    return HG_OK;
}

static hg_status prelu_backward(hg_tensor *const *in, hg_tensor *const *out)
{
    hg_tensor *x = in[1], *gamma = in[2];
    hg_meta dm = hg_meta_of(x), gm = hg_meta_of(gamma);
    int64_t gs[HG_MAX_NDIM];
    hg_prelu_gamma_shape(&dm, &gm, gs);
    const int64_t A = x->shape[0], B = x->ndim > 1 ? x->shape[1] : 1;
    lrb_job j = {hg_data(in[0]),
                 hg_data(x),
                 hg_data(gamma),
                 hg_data(out[0]),
                 NULL,
                 B,
                 hg_shape_size(x->ndim > 2 ? x->ndim - 2 : 0, x->shape + 2),
                 gs[0],
                 x->ndim > 1 ? gs[1] : 1};
    const size_t bytes = sizeof(double) * (size_t)(A * B + 1);
    if (!(j.rows = hg_alloc(bytes))) return hg_error(HG_ERR_MEMORY, "LeakyReLU: out of memory");
    hg_range_fn fn = x->dtype == HG_DTYPE_F32   ? prelu_bwd_f32
                     : x->dtype == HG_DTYPE_F64 ? prelu_bwd_f64
                                                : prelu_bwd_f16;
    hg_parallel_for(A * B, HG_GRAIN_ELEMWISE / (j.R > 0 ? j.R : 1) + 1, fn, &j);
    /* Rows sum into gamma's entries serially, in a fixed order: the result is deterministic. */
    const size_t gbytes = sizeof(double) * (size_t)(gamma->size + 1);
    double *acc = hg_alloc(gbytes);
    if (!acc) {
        hg_free(j.rows, bytes);
        return hg_error(HG_ERR_MEMORY, "LeakyReLU: out of memory");
    }
    for (int64_t i = 0; i < gamma->size; i++) acc[i] = 0;
    for (int64_t r = 0; r < A * B; r++)
        acc[(j.ga > 1 ? r / B : 0) * j.gb + (j.gb > 1 ? r % B : 0)] += j.rows[r];
    hg_tensor *dg = out[1];
    for (int64_t i = 0; i < gamma->size; i++) {
        if (dg->dtype == HG_DTYPE_F32) HG_DATA(dg, float)[i] = (float)acc[i];
        else if (dg->dtype == HG_DTYPE_F64) HG_DATA(dg, double)[i] = acc[i];
        else HG_DATA(dg, f16)[i] = hg_float_to_half((float)acc[i]);
    }
    hg_free(acc, gbytes);
    hg_free(j.rows, bytes);
    return HG_OK;
}

static hg_status lrelu_grad_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    int act = (int)a->v[LR_ACT_TYPE].i;
    if (act == ACT_PRELU) return prelu_backward(in, out);
    if (act == ACT_RRELU) {
        const hg_tensor *x = in[1];
        lrb_job j = {hg_data(in[0]), hg_data(x), hg_data(in[2]), hg_data(out[0]), NULL, 0, 0, 0, 0};
        hg_range_fn fn = x->dtype == HG_DTYPE_F32   ? rrelu_bwd_f32
                         : x->dtype == HG_DTYPE_F64 ? rrelu_bwd_f64
                                                    : rrelu_bwd_f16;
        hg_parallel_for(x->size, HG_GRAIN_ELEMWISE, fn, &j);
        return HG_OK;
    }
    return hg_ew_forward(&k_lrelu_grad_impl[act], a, 2, in, out[0]);
}

static hg_status lrelu_grad(hg_grad_ctx *g)
{
    int act = (int)hg_g_attrs(g)->v[LR_ACT_TYPE].i;
    hg_sentry dy = hg_g_ograd(g, 0), x = hg_g_in(g, 0), out[2];
    if (act == ACT_PRELU) {
        hg_g_op_fwd_attrs(g, "_backward_LeakyReLU", HG_GIN(dy, x, hg_g_in(g, 1)), NULL, 2, out);
        hg_g_set(g, 1, out[1]);
    } else if (act == ACT_RRELU) {
        hg_g_op_fwd_attrs(g, "_backward_LeakyReLU", HG_GIN(dy, x, hg_g_out(g, 1)), NULL, 1, out);
    } else {
        hg_g_op_fwd_attrs(g, "_backward_LeakyReLU", HG_GIN(dy, x), NULL, 1, out);
    }
    hg_g_set(g, 0, out[0]);
    return hg_g_status(g);
}

const hg_op_def hg_ops_nn_basic[] = {
    {.name = "LeakyReLU",
     .doc = "leaky ReLU family: leaky, prelu (gamma per channel on axis 1), rrelu (random "
            "slope when training), elu, selu, gelu",
     .input_names = HG_NAMES("data", "gamma"),
     .output_names = HG_NAMES("output", "mask"),
     .attrs = k_lrelu_attrs,
     .num_attrs = HG_COUNT(k_lrelu_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .flags = HG_OP_INPLACE,
     .get_num_inputs = lrelu_num_inputs,
     .get_num_outputs = lrelu_num_outputs,
     .get_num_visible_outputs = lrelu_num_outputs,
     .infer = lrelu_infer,
     .forward = lrelu_forward,
     .grad = lrelu_grad},
    {.name = "_backward_LeakyReLU",
     .doc = "gradient of LeakyReLU: dx = dy * f'(data); prelu also gives gamma's gradient; "
            "rrelu reads the forward's mask (the slopes it used)",
     .input_names = HG_NAMES("ograd", "data", "gamma_or_mask"),
     .output_names = HG_NAMES("data_grad", "gamma_grad"),
     .attrs = k_lrelu_attrs,
     .num_attrs = HG_COUNT(k_lrelu_attrs),
     .num_inputs = 3,
     .num_outputs = 2,
     .get_num_inputs = lrelu_grad_num_inputs,
     .get_num_outputs = lrelu_grad_num_outputs,
     .infer = lrelu_grad_infer,
     .forward = lrelu_grad_forward},
    {0},
};
