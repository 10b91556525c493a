/* Sampling ops: _random_uniform, _random_normal, _random_randint and _shuffle. All draw from
 * the global generator in core/rng.c, so `mx.random.seed(n)` replays the same numbers.
 *
 * Samples are drawn in chunks of RNG_CHUNK into a stack buffer and converted to the output
 * dtype, so no temporary as large as the output is needed. Drawing is serial (the generator is
 * one stream); only _shuffle's row copies run in parallel. An empty shape gives shape (1,), as
 * MXNet's front end does. None has a gradient (HG_OP_NO_GRAD: zero flows back); MXNet registers
 * none for _shuffle either.
 */
#include <math.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "core/rng.h"

#define RNG_CHUNK 4096

/* ---------------------------------------------------------------------------------------------
 * Shared helpers
 */

/* Attribute order shared by the three samplers: two parameters, then shape, ctx, dtype. */
enum { P0, P1, R_SHAPE, R_CTX, R_DTYPE, R_NATTRS };

static hg_status sample_shape(const hg_op_def *op, const hg_attrs *a, hg_dtype dt, hg_meta *out)
{
    const hg_tuple *t = &a->v[R_SHAPE].t;
    if (t->n > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: shape has %d dimensions, at most %d are supported",
                        op->name, t->n, HG_MAX_NDIM);
    out->dtype = dt;
    if (t->n == 0) {
        out->ndim = 1;
        out->shape[0] = 1;
    } else {
        out->ndim = t->n;
        memcpy(out->shape, t->v, sizeof(int64_t) * (size_t)t->n);
    }
    hg_status st = hg_shape_check(out->ndim, out->shape, dt);
    return st ? hg_error_prefix(st, "%s: ", op->name) : HG_OK;
}

/* dtype attribute of the float samplers: None means float32. */
static hg_status float_dtype(const hg_op_def *op, const hg_attrs *a, hg_dtype *dt)
{
    *dt = a->v[R_DTYPE].is_none ? HG_DTYPE_F32 : (hg_dtype)a->v[R_DTYPE].i;
    if (*dt != HG_DTYPE_F32 && *dt != HG_DTYPE_F64 && *dt != HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE, "%s: dtype must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(*dt));
    return HG_OK;
}

/* Stores m doubles into t at element offset i0. Float outputs only. */
static void store_floats(hg_tensor *t, int64_t i0, const double *v, int64_t m)
{
    switch (t->dtype) {
    case HG_DTYPE_F32: {
        float *y = HG_DATA(t, float) + i0;
        for (int64_t i = 0; i < m; i++) y[i] = (float)v[i];
        break;
    }
    case HG_DTYPE_F64: memcpy(HG_DATA(t, double) + i0, v, sizeof(double) * (size_t)m); break;
    default: {
        uint16_t *y = HG_DATA(t, uint16_t) + i0;
        for (int64_t i = 0; i < m; i++) y[i] = hg_float_to_half((float)v[i]);
        break;
    }
    }
}

#define FLOAT_SAMPLER_ATTRS(A, ADEF, ADOC, B, BDEF, BDOC)                                       \
    [P0] = {A, HG_ATTR_FLOAT, 0, ADEF, ADOC, NULL},                                             \
    [P1] = {B, HG_ATTR_FLOAT, 0, BDEF, BDOC, NULL},                                             \
    [R_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()", "shape of the output; () gives (1,)", NULL},  \
    [R_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context of the output (ignored: CPU)", NULL},     \
    [R_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",                              \
                 "float16, float32 or float64; None means float32", NULL}

/* ---------------------------------------------------------------------------------------------
 * _random_uniform
 */

static const hg_attr_spec k_uniform_attrs[] = {
    FLOAT_SAMPLER_ATTRS("low", "0", "lower bound (included)", "high", "1",
                        "upper bound (excluded)"),
};
_Static_assert(HG_COUNT(k_uniform_attrs) == R_NATTRS, "k_uniform_attrs must match its enum");

static hg_status uniform_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    (void)in;
    (void)nout;
    double lo = a->v[P0].f, hi = a->v[P1].f;
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
        return hg_error(HG_ERR_VALUE,
                        "%s: low must be less than or equal to high and both "
                        "finite, got low=%g, high=%g",
                        op->name, lo, hi);
    hg_dtype dt;
    HG_TRY(float_dtype(op, a, &dt));
    return sample_shape(op, a, dt, &out[0]);
}

/* float32 with low < high, the initialisers' case: draw, scale and convert in one pass with the
 * generator's state in registers. The same arithmetic as uniform_forward's general path, so the
 * same values. */
static void uniform_f32(float *y, int64_t n, double lo, double hi, double below_d, float below_f)
{
    const double span = hi - lo;
    const float hi_f = (float)hi;
    hg_rng_state st;
    hg_rng_acquire(&st);
    for (int64_t i = 0; i < n; i++) {
        double v = lo + span * hg_rng_unit(&st);
        v = v < hi ? v : below_d;
        float f = (float)v;
        y[i] = f < hi_f ? f : below_f;
    }
    hg_rng_release(&st);
}

static hg_status uniform_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    const double lo = a->v[P0].f, hi = a->v[P1].f, span = hi - lo;
    /* low + span * u can round up to high; keep samples in [low, high) as documented. */
    const float below_f = lo < hi ? fmaxf((float)lo, nextafterf((float)hi, -INFINITY)) : (float)lo;
    const double below_d = lo < hi ? nextafter(hi, -INFINITY) : lo;
    double u[RNG_CHUNK];
    hg_tensor *t = out[0];
    if (t->dtype == HG_DTYPE_F32 && lo < hi) {
        uniform_f32(HG_DATA(t, float), t->size, lo, hi, below_d, below_f);
        return HG_OK;
    }
    for (int64_t i0 = 0; i0 < t->size; i0 += RNG_CHUNK) {
        int64_t m = t->size - i0 < RNG_CHUNK ? t->size - i0 : RNG_CHUNK;
        hg_rng_uniform(u, m);
        for (int64_t i = 0; i < m; i++) {
            double v = lo + span * u[i];
            u[i] = v < hi ? v : below_d;
        }
        store_floats(t, i0, u, m);
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _random_normal
 */

static const hg_attr_spec k_normal_attrs[] = {
    FLOAT_SAMPLER_ATTRS("loc", "0", "mean of the distribution", "scale", "1",
                        "standard deviation of the distribution"),
};
_Static_assert(HG_COUNT(k_normal_attrs) == R_NATTRS, "k_normal_attrs must match its enum");

static hg_status normal_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)in;
    (void)nout;
    if (!(a->v[P1].f >= 0))
        return hg_error(HG_ERR_VALUE, "%s: scale must be non-negative, got scale=%g", op->name,
                        a->v[P1].f);
    hg_dtype dt;
    HG_TRY(float_dtype(op, a, &dt));
    return sample_shape(op, a, dt, &out[0]);
}

static hg_status normal_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    const double loc = a->v[P0].f, scale = a->v[P1].f;
    double z[RNG_CHUNK];
    hg_tensor *t = out[0];
    for (int64_t i0 = 0; i0 < t->size; i0 += RNG_CHUNK) {
        int64_t m = t->size - i0 < RNG_CHUNK ? t->size - i0 : RNG_CHUNK;
        hg_rng_normal(z, m);
        for (int64_t i = 0; i < m; i++) z[i] = loc + scale * z[i];
        store_floats(t, i0, z, m);
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _random_randint
 */

static const hg_attr_spec k_randint_attrs[] = {
    [P0] = {"low", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "lower bound (included)", NULL},
    [P1] = {"high", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "upper bound (excluded)", NULL},
    [R_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()", "shape of the output; () gives (1,)", NULL},
    [R_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context of the output (ignored: CPU)", NULL},
    [R_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",
                 "int32 or int64; None means int32", NULL},
};
_Static_assert(HG_COUNT(k_randint_attrs) == R_NATTRS, "k_randint_attrs must match its enum");

static hg_status randint_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    (void)in;
    (void)nout;
    int64_t lo = a->v[P0].i, hi = a->v[P1].i;
    hg_dtype dt = a->v[R_DTYPE].is_none ? HG_DTYPE_I32 : (hg_dtype)a->v[R_DTYPE].i;
    if (dt != HG_DTYPE_I32 && dt != HG_DTYPE_I64)
        return hg_error(HG_ERR_TYPE, "%s: dtype must be int32 or int64, got %s", op->name,
                        hg_dtype_name(dt));
    if (lo >= hi)
        return hg_error(HG_ERR_VALUE, "%s: low must be less than high, got low=%lld, high=%lld",
                        op->name, (long long)lo, (long long)hi);
    if (dt == HG_DTYPE_I32 && (lo < INT32_MIN || hi - 1 > INT32_MAX))
        return hg_error(HG_ERR_VALUE, "%s: [low, high) = [%lld, %lld) does not fit dtype int32",
                        op->name, (long long)lo, (long long)hi);
    return sample_shape(op, a, dt, &out[0]);
}

/* Buffered 64-bit draws: one lock of the generator per RNG_CHUNK values, not per value. */
typedef struct {
    uint64_t buf[RNG_CHUNK];
    int pos, len;
} u64_stream;

static uint64_t stream_next(u64_stream *s)
{
    if (s->pos == s->len) {
        hg_rng_u64(s->buf, RNG_CHUNK);
        s->pos = 0;
        s->len = RNG_CHUNK;
    }
    return s->buf[s->pos++];
}

/* Uniform in [0, bound) without modulo bias: draws past the last whole multiple of bound are
 * rejected. bound == 0 stands for 2^64. */
static uint64_t stream_below(u64_stream *s, uint64_t bound)
{
    if (bound == 0) return stream_next(s);
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound, x;
    do {
        x = stream_next(s);
    } while (x >= limit);
    return x % bound;
}

static hg_status randint_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    const uint64_t lo = (uint64_t)a->v[P0].i, span = (uint64_t)a->v[P1].i - lo;
    hg_tensor *t = out[0];
    u64_stream *s = hg_alloc(sizeof *s);
    if (!s) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    s->pos = s->len = 0;
    /* Two's-complement wrap-around makes lo + r exact for any int64 range. */
    if (t->dtype == HG_DTYPE_I32) {
        int32_t *y = HG_DATA(t, int32_t);
        for (int64_t i = 0; i < t->size; i++) y[i] = (int32_t)(int64_t)(lo + stream_below(s, span));
    } else {
        int64_t *y = HG_DATA(t, int64_t);
        for (int64_t i = 0; i < t->size; i++) y[i] = (int64_t)(lo + stream_below(s, span));
    }
    hg_free(s, sizeof *s);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _shuffle
 */

static hg_status shuffle_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)op;
    (void)a;
    (void)nin;
    (void)nout;
    out[0] = in[0];
    return HG_OK;
}

typedef struct {
    const char *x;
    char *y;
    const int64_t *perm;
    size_t row; /* bytes per row */
} shuffle_job;

static void shuffle_rows(void *ctx, int64_t b, int64_t e)
{
    const shuffle_job *j = ctx;
    switch (j->row) { /* 1-D arrays: one element per row, copied by type */
    case 4:
        for (int64_t i = b; i < e; i++)
            ((uint32_t *)j->y)[i] = ((const uint32_t *)j->x)[j->perm[i]];
        break;
    case 8:
        for (int64_t i = b; i < e; i++)
            ((uint64_t *)j->y)[i] = ((const uint64_t *)j->x)[j->perm[i]];
        break;
    default:
        for (int64_t i = b; i < e; i++)
            memcpy(j->y + (size_t)i * j->row, j->x + (size_t)j->perm[i] * j->row, j->row);
        break;
    }
}

static hg_status shuffle_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_tensor *x = in[0], *y = out[0];
    size_t esz = hg_dtype_size(x->dtype);
    int64_t n = x->ndim ? x->shape[0] : 1;
    if (n <= 1) { /* nothing to permute */
        memcpy(hg_data(y), hg_data(x), (size_t)x->size * esz);
        return HG_OK;
    }
    size_t pbytes = sizeof(int64_t) * (size_t)n;
    int64_t *perm = hg_alloc(pbytes);
    u64_stream *s = hg_alloc(sizeof *s);
    if (!perm || !s) {
        hg_free(perm, pbytes);
        hg_free(s, sizeof *s);
        return hg_error(HG_ERR_MEMORY, "%s: out of memory for %lld rows", op->name, (long long)n);
    }
    s->pos = s->len = 0;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t k = (int64_t)stream_below(s, (uint64_t)i + 1), tmp = perm[i];
        perm[i] = perm[k];
        perm[k] = tmp;
    }
    shuffle_job j = {hg_data(x), hg_data(y), perm, (size_t)(x->size / n) * esz};
    int64_t grain = HG_GRAIN_ELEMWISE / (int64_t)(j.row ? j.row : 1) + 1;
    hg_parallel_for(n, grain, shuffle_rows, &j);
    hg_free(perm, pbytes);
    hg_free(s, sizeof *s);
    return HG_OK;
}

#define SAMPLER(NAME, ALIASES, DOC, ATTRS, INFER, FWD)                                          \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .attrs = ATTRS,                              \
     .num_attrs = HG_COUNT(ATTRS), .num_inputs = 0, .num_outputs = 1,                           \
     .flags = HG_OP_NO_INPUTS | HG_OP_RANDOM | HG_OP_NO_GRAD, .infer = INFER, .forward = FWD}

const hg_op_def hg_ops_random[] = {
    SAMPLER("_random_uniform", HG_NAMES("uniform", "random_uniform"),
            "samples from the uniform distribution on [low, high)", k_uniform_attrs, uniform_infer,
            uniform_forward),
    SAMPLER("_random_normal", HG_NAMES("normal", "random_normal"),
            "samples from the normal distribution N(loc, scale^2)", k_normal_attrs, normal_infer,
            normal_forward),
    SAMPLER("_random_randint", HG_NAMES("random_randint"),
            "integers drawn uniformly from [low, high)", k_randint_attrs, randint_infer,
            randint_forward),
    {.name = "_shuffle",
     .aliases = HG_NAMES("shuffle"),
     .doc = "a copy of data with its rows (axis 0) randomly permuted",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .num_outputs = 1,
     .flags = HG_OP_RANDOM | HG_OP_NO_GRAD,
     .infer = shuffle_infer,
     .forward = shuffle_forward},
    {0},
};
