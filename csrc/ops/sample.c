/* Sampling from distributions given as arrays: _sample_uniform and _sample_normal (one
 * distribution per element of the parameter arrays, MXNet's nd.sample_uniform/sample_normal),
 * _sample_multinomial (MXNet's nd.random.multinomial) and its gradient,
 * _backward_sample_multinomial.
 *
 * _sample_uniform(low, high) and _sample_normal(mu, sigma) draw `shape` samples per element:
 * the output has shape params.shape + shape, float32 unless `dtype`; the draws run over the
 * output in order, in the same chunks as _random_uniform/_random_normal, so one seed gives the
 * same numbers as theirs. As MXNet's, they pass no gradient (zeros).
 *
 * _sample_multinomial reads data of shape (..., k), each row a categorical distribution, and
 * draws `shape` samples per row: out[0] has shape data.shape[:-1] + shape ((1,) when that is
 * empty, as MXNet's front end gives), the drawn category ids in `dtype`. With get_prob=True a
 * second output holds log(p) of each draw, in data's dtype, whose gradient (the REINFORCE
 * estimator's) is ograd / p added at the drawn category. A row's probabilities are read as
 * they are: a draw is the first category whose running sum exceeds a uniform number in [0, 1)
 * (MXNet's rule), so rows summing below 1 give the last category for the remainder. The
 * numbers come from the global generator (core/rng.c), serially, so a seed replays them.
 */
#include <math.h>
#include <string.h>

#include "core/op.h"
#include "core/rng.h"
#include "graph/grad.h"

#define RNG_CHUNK 4096

enum { MN_SHAPE, MN_GET_PROB, MN_DTYPE, MN_NATTRS };

static const hg_attr_spec k_multinomial_attrs[] = {
    [MN_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()", "samples drawn per distribution", NULL},
    [MN_GET_PROB] = {"get_prob", HG_ATTR_BOOL, 0, "False",
                     "also return the log-probability of each draw", NULL},
    [MN_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "int32",
                  "dtype of the samples: float16, float32, float64, int32 or uint8", NULL},
};
_Static_assert(HG_COUNT(k_multinomial_attrs) == MN_NATTRS, "one spec per attribute");

static bool is_float(hg_dtype t)
{
    return t == HG_DTYPE_F32 || t == HG_DTYPE_F64 || t == HG_DTYPE_F16;
}

static double load(const hg_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case HG_DTYPE_F32: return HG_DATA(t, const float)[i];
    case HG_DTYPE_F64: return HG_DATA(t, const double)[i];
    case HG_DTYPE_F16: return hg_half_to_float(HG_DATA(t, const uint16_t)[i]);
    case HG_DTYPE_I32: return HG_DATA(t, const int32_t)[i];
    case HG_DTYPE_U8: return HG_DATA(t, const uint8_t)[i];
    default: return 0; /* infer admits no other dtype */
    }
}

static void store(hg_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case HG_DTYPE_F32: HG_DATA(t, float)[i] = (float)v; break;
    case HG_DTYPE_F64: HG_DATA(t, double)[i] = v; break;
    case HG_DTYPE_F16: HG_DATA(t, uint16_t)[i] = hg_float_to_half((float)v); break;
    case HG_DTYPE_I32: HG_DATA(t, int32_t)[i] = (int32_t)v; break;
    case HG_DTYPE_U8: HG_DATA(t, uint8_t)[i] = (uint8_t)v; break;
    default: break;
    }
}

static int multinomial_num_outputs(const hg_attrs *a) { return a->v[MN_GET_PROB].b ? 2 : 1; }

static hg_status multinomial_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    (void)nin;
    const hg_meta *d = &in[0];
    const hg_tuple *s = &a->v[MN_SHAPE].t;
    hg_dtype dt = (hg_dtype)a->v[MN_DTYPE].i;
    if (!is_float(d->dtype))
        return hg_error(HG_ERR_TYPE, "%s: data must hold probabilities (float16/32/64), got %s",
                        op->name, hg_dtype_name(d->dtype));
    if (!is_float(dt) && dt != HG_DTYPE_I32 && dt != HG_DTYPE_U8)
        return hg_error(HG_ERR_TYPE,
                        "%s: dtype must be float16, float32, float64, int32 or uint8, got %s",
                        op->name, hg_dtype_name(dt));
    if (d->ndim < 1 || d->shape[d->ndim - 1] < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must have at least one dimension with at least one "
                        "category in the last, got ndim %d",
                        op->name, d->ndim);
    if (d->ndim - 1 + s->n > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: the output would have %d dimensions, at most %d",
                        op->name, d->ndim - 1 + s->n, HG_MAX_NDIM);
    out[0].dtype = dt;
    out[0].ndim = d->ndim - 1 + s->n;
    memcpy(out[0].shape, d->shape, sizeof(int64_t) * (size_t)(d->ndim - 1));
    memcpy(out[0].shape + d->ndim - 1, s->v, sizeof(int64_t) * (size_t)s->n);
    if (out[0].ndim == 0) {
        out[0].ndim = 1;
        out[0].shape[0] = 1;
    }
    hg_status st = hg_shape_check(out[0].ndim, out[0].shape, dt);
    if (st) return hg_error_prefix(st, "%s: ", op->name);
    if (nout > 1) {
        out[1] = out[0];
        out[1].dtype = d->dtype;
    }
    return HG_OK;
}

static hg_status multinomial_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    const hg_tensor *d = in[0];
    const int64_t k = d->shape[d->ndim - 1], rows = d->size / k;
    const int64_t m = rows ? out[0]->size / rows : 0; /* draws per row */
    double u[RNG_CHUNK];
    int64_t have = 0, next = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < m; j++) {
            if (next == have) {
                int64_t left = (rows - r) * m - j;
                have = left < RNG_CHUNK ? left : RNG_CHUNK;
                hg_rng_uniform(u, have);
                next = 0;
            }
            double x = u[next++], acc = 0;
            int64_t c = 0;
            for (; c < k - 1; c++) {
                acc += load(d, r * k + c);
                if (x < acc) break;
            }
            store(out[0], r * m + j, (double)c);
            if (nout > 1) store(out[1], r * m + j, log(load(d, r * k + c)));
        }
    }
    return HG_OK;
}

/* Only the log-probabilities carry a gradient; the drawn ids are constants. */
static hg_status multinomial_grad(hg_grad_ctx *g)
{
    if (!hg_g_attrs(g)->v[MN_GET_PROB].b) {
        hg_g_set(g, 0, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 0)), NULL));
    } else {
        hg_g_set(g, 0,
                 hg_g_op(g, "_backward_sample_multinomial",
                         HG_GIN(hg_g_ograd(g, 1), hg_g_in(g, 0), hg_g_out(g, 0)), NULL));
    }
    return hg_g_status(g);
}

/* _backward_sample_multinomial(ograd, data, samples): zeros of data's shape plus, for each draw
 * j of row r, ograd[r, j] / data[r, samples[r, j]] at that category. */
static hg_status bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    const hg_meta *og = &in[0], *d = &in[1], *s = &in[2];
    int64_t k = d->ndim > 0 ? d->shape[d->ndim - 1] : 0, rows = 1, n = 1, ns = 1;
    for (int i = 0; i + 1 < d->ndim; i++) rows *= d->shape[i];
    for (int i = 0; i < og->ndim; i++) n *= og->shape[i];
    for (int i = 0; i < s->ndim; i++) ns *= s->shape[i];
    if (!is_float(d->dtype) || og->dtype != d->dtype || k < 1 || n != ns || (rows && n % rows))
        return hg_error(HG_ERR_VALUE,
                        "%s: expects (ograd, data, samples) with ograd of the samples' size "
                        "and data's float dtype",
                        op->name);
    out[0] = *d;
    return HG_OK;
}

static hg_status bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *og = in[0], *d = in[1], *s = in[2];
    hg_tensor *gx = out[0];
    const int64_t k = d->shape[d->ndim - 1], rows = d->size / k;
    const int64_t m = rows ? og->size / rows : 0;
    memset(hg_data(gx), 0, hg_tensor_nbytes(gx));
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < m; j++) {
            double c = load(s, r * m + j);
            if (!(c >= 0 && c < (double)k)) continue; /* not a category: no contribution */
            int64_t at = r * k + (int64_t)c;
            store(gx, at, load(gx, at) + load(og, r * m + j) / load(d, at));
        }
    }
    return HG_OK;
}

/* ---- _sample_uniform, _sample_normal --------------------------------------------------- */

enum { SP_SHAPE, SP_DTYPE, SP_NATTRS };

static const hg_attr_spec k_param_sampler_attrs[] = {
    [SP_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()", "samples drawn per parameter element", NULL},
    [SP_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",
                  "float16, float32 or float64; None means float32", NULL},
};
_Static_assert(HG_COUNT(k_param_sampler_attrs) == SP_NATTRS, "one spec per attribute");

static hg_status param_sampler_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                     int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    const hg_tuple *s = &a->v[SP_SHAPE].t;
    hg_dtype dt = a->v[SP_DTYPE].is_none ? HG_DTYPE_F32 : (hg_dtype)a->v[SP_DTYPE].i;
    if (!is_float(dt))
        return hg_error(HG_ERR_TYPE, "%s: dtype must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(dt));
    for (int k = 0; k < 2; k++)
        if (!is_float(in[k].dtype))
            return hg_error(HG_ERR_TYPE, "%s: %s must be a float array, got %s", op->name,
                            op->input_names[k], hg_dtype_name(in[k].dtype));
    bool same = in[0].ndim == in[1].ndim;
    for (int d = 0; same && d < in[0].ndim; d++) same = in[0].shape[d] == in[1].shape[d];
    if (!same) {
        char x[HG_SHAPE_STR], y[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE, "%s: %s of shape %s and %s of shape %s must match", op->name,
                        op->input_names[0], hg_shape_str(x, in[0].ndim, in[0].shape),
                        op->input_names[1], hg_shape_str(y, in[1].ndim, in[1].shape));
    }
    if (in[0].ndim + s->n > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: the output would have %d dimensions, at most %d",
                        op->name, in[0].ndim + s->n, HG_MAX_NDIM);
    out[0].dtype = dt;
    out[0].ndim = in[0].ndim + s->n;
    memcpy(out[0].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].ndim);
    memcpy(out[0].shape + in[0].ndim, s->v, sizeof(int64_t) * (size_t)s->n);
    if (out[0].ndim == 0) {
        out[0].ndim = 1;
        out[0].shape[0] = 1;
    }
    hg_status st = hg_shape_check(out[0].ndim, out[0].shape, dt);
    return st ? hg_error_prefix(st, "%s: ", op->name) : HG_OK;
}

/* Draws out->size numbers (uniform in [0, 1) or standard normal) chunk by chunk; draw i
 * takes the parameters of element i / m (m draws per element). */
static void param_sample(const hg_tensor *p0, const hg_tensor *p1, hg_tensor *out, bool normal)
{
    const int64_t n = p0->size, m = n ? out->size / n : 0;
    double v[RNG_CHUNK];
    for (int64_t i0 = 0; i0 < out->size; i0 += RNG_CHUNK) {
        int64_t c = out->size - i0 < RNG_CHUNK ? out->size - i0 : RNG_CHUNK;
        if (normal) hg_rng_normal(v, c);
        else hg_rng_uniform(v, c);
        for (int64_t j = 0; j < c; j++) {
            int64_t e = (i0 + j) / m;
            double a = load(p0, e), b = load(p1, e), x;
            if (normal) {
                x = a + b * v[j];
            } else {
                x = a + (b - a) * v[j];
                if (a < b && x >= b) x = nextafter(b, a); /* [low, high), as _random_uniform */
            }
            store(out, i0 + j, x);
        }
    }
}

static hg_status uniform_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    param_sample(in[0], in[1], out[0], false);
    return HG_OK;
}

static hg_status normal_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    param_sample(in[0], in[1], out[0], true);
    return HG_OK;
}

#define PARAM_SAMPLER(NAME, ALIAS, DOC, IN0, IN1, FWD)                                          \
    {.name = NAME,                                                                              \
     .aliases = HG_NAMES(ALIAS),                                                                \
     .doc = DOC,                                                                                \
     .input_names = HG_NAMES(IN0, IN1),                                                         \
     .attrs = k_param_sampler_attrs,                                                            \
     .num_attrs = SP_NATTRS,                                                                    \
     .num_inputs = 2,                                                                           \
     .num_outputs = 1,                                                                          \
     .flags = HG_OP_RANDOM | HG_OP_NO_GRAD,                                                     \
     .infer = param_sampler_infer,                                                              \
     .forward = FWD}

const hg_op_def hg_ops_sample[] = {
    PARAM_SAMPLER("_sample_uniform", "sample_uniform",
                  "samples from U[low, high) for every element of low and high", "low", "high",
                  uniform_forward),
    PARAM_SAMPLER("_sample_normal", "sample_normal",
                  "samples from N(mu, sigma^2) for every element of mu and sigma", "mu", "sigma",
                  normal_forward),
    {.name = "_sample_multinomial",
     .aliases = HG_NAMES("sample_multinomial"),
     .doc = "draws category ids from the categorical distributions in the last axis of data",
     .input_names = HG_NAMES("data"),
     .attrs = k_multinomial_attrs,
     .num_attrs = MN_NATTRS,
     .num_inputs = 1,
     .get_num_outputs = multinomial_num_outputs,
     .flags = HG_OP_RANDOM,
     .infer = multinomial_infer,
     .forward = multinomial_forward,
     .grad = multinomial_grad},
    {.name = "_backward_sample_multinomial",
     .doc = "gradient of _sample_multinomial's log-probabilities with respect to data",
     .input_names = HG_NAMES("ograd", "data", "samples"),
     .num_inputs = 3,
     .num_outputs = 1,
     .flags = HG_OP_NO_GRAD,
     .infer = bw_infer,
     .forward = bw_forward},
    {0},
};
