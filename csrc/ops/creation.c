/* Creation ops: _zeros, _ones, _full, _arange, _eye. They take no inputs; shape and dtype come
 * from the attributes and every dtype is supported. Values are computed in double and converted
 * to the output dtype (integers truncate toward zero, bool is value != 0).
 */
#include <math.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"

/* ---------------------------------------------------------------------------------------------
 * Shared helpers
 */

/* double -> int64 without undefined behaviour for NaN or out-of-range values. */
static int64_t to_i64(double v)
{
    if (!(v == v)) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

/* Writes v as one element of dtype dt into dst (hg_dtype_size(dt) bytes). */
static void elem_from_double(hg_dtype dt, double v, void *dst)
{
    switch (dt) {
    case HG_DTYPE_F32: {
        float x = (float)v;
        memcpy(dst, &x, 4);
        break;
    }
    case HG_DTYPE_F64: memcpy(dst, &v, 8); break;
    case HG_DTYPE_F16: {
        uint16_t x = hg_float_to_half((float)v);
        memcpy(dst, &x, 2);
        break;
    }
    case HG_DTYPE_U8: {
        uint8_t x = (uint8_t)to_i64(v);
        memcpy(dst, &x, 1);
        break;
    }
    case HG_DTYPE_I8: {
        int8_t x = (int8_t)to_i64(v);
        memcpy(dst, &x, 1);
        break;
    }
    case HG_DTYPE_I32: {
        int32_t x = (int32_t)to_i64(v);
        memcpy(dst, &x, 4);
        break;
    }
    case HG_DTYPE_I64: {
        int64_t x = to_i64(v);
        memcpy(dst, &x, 8);
        break;
    }
    case HG_DTYPE_BOOL: {
        uint8_t x = v != 0;
        memcpy(dst, &x, 1);
        break;
    }
    default: break;
    }
}

typedef struct {
    char *dst;
    size_t esz;
    uint64_t pattern; /* one element's bytes in the low esz bytes */
} fill_job;

static void fill_range(void *ctx, int64_t b, int64_t e)
{
    const fill_job *j = ctx;
    switch (j->esz) {
    case 1: memset(j->dst + b, (int)(uint8_t)j->pattern, (size_t)(e - b)); break;
    case 2: {
        uint16_t *p = (uint16_t *)j->dst, v = (uint16_t)j->pattern;
        for (int64_t i = b; i < e; i++) p[i] = v;
        break;
    }
    case 4: {
        uint32_t *p = (uint32_t *)j->dst, v = (uint32_t)j->pattern;
        for (int64_t i = b; i < e; i++) p[i] = v;
        break;
    }
    default: {
        uint64_t *p = (uint64_t *)j->dst, v = j->pattern;
        for (int64_t i = b; i < e; i++) p[i] = v;
        break;
    }
    }
}

/* Fills every element of t with v converted to t's dtype. */
static void fill_value(hg_tensor *t, double v)
{
    fill_job j = {hg_data(t), hg_dtype_size(t->dtype), 0};
    elem_from_double(t->dtype, v, &j.pattern); /* little-endian: the low bytes */
    hg_parallel_for(t->size, HG_GRAIN_ELEMWISE, fill_range, &j);
}

static hg_status shape_from_attr(const hg_op_def *op, const hg_tuple *t, hg_dtype dt, hg_meta *out)
{
    if (t->n > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: shape has %d dimensions, at most %d are supported",
                        op->name, t->n, HG_MAX_NDIM);
    out->ndim = t->n;
    out->dtype = dt;
    memcpy(out->shape, t->v, sizeof(int64_t) * (size_t)t->n);
    hg_status st = hg_shape_check(out->ndim, out->shape, dt);
    return st ? hg_error_prefix(st, "%s: ", op->name) : HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _zeros, _ones, _full
 */

enum { IN_SHAPE, IN_CTX, IN_DTYPE, IN_VALUE, IN_NATTRS };

#define INIT_ATTRS                                                                              \
    [IN_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()", "the shape of the output", NULL},            \
    [IN_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context of the output (ignored: CPU)", NULL},    \
    [IN_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "the output dtype", NULL}

static const hg_attr_spec k_init_attrs[] = {INIT_ATTRS};
_Static_assert(HG_COUNT(k_init_attrs) == IN_VALUE, "k_init_attrs: all but value");
static const hg_attr_spec k_full_attrs[] = {
    INIT_ATTRS,
    [IN_VALUE] = {"value", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "the value to fill with", NULL},
};
_Static_assert(HG_COUNT(k_full_attrs) == IN_NATTRS, "k_full_attrs must match its enum");

static hg_status init_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nin;
    (void)in;
    (void)nout;
    /* In a graph a dimension given as -1 is unknown (MXNet): the consumers' shapes, known
     * already in out[0], decide it. So is a 0 in the legacy shape reading (MXNet's exported
     * begin states are _zeros(shape=(0, H))); imperatively a 0 stays a zero-size dim. */
    const hg_tuple *t = &a->v[IN_SHAPE].t;
    const int64_t unknown_below = hg_graph_infer() && !hg_np_shape() ? 1 : 0;
    bool unknown = false;
    for (int d = 0; d < t->n; d++) unknown |= t->v[d] < unknown_below;
    if (!unknown || t->n > HG_MAX_NDIM)
        return shape_from_attr(op, t, (hg_dtype)a->v[IN_DTYPE].i, &out[0]);
    char s[HG_SHAPE_STR];
    hg_meta m = {.ndim = t->n, .dtype = (hg_dtype)a->v[IN_DTYPE].i};
    for (int d = 0; d < t->n; d++) {
        m.shape[d] = t->v[d] >= unknown_below ? t->v[d] : -1;
        if (t->v[d] < -1)
            return hg_error(HG_ERR_VALUE, "%s: invalid dimension %lld in shape %s", op->name,
                            (long long)t->v[d], hg_shape_str(s, t->n, t->v));
        if (m.shape[d] < 0 && out[0].ndim == t->n) m.shape[d] = out[0].shape[d];
    }
    out[0] = m;
    for (int d = 0; d < m.ndim; d++)
        if (m.shape[d] < 0) return HG_OK; /* partial: a later sweep may decide it */
    return hg_shape_check(m.ndim, m.shape, m.dtype);
}

static hg_status zeros_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    fill_value(out[0], 0);
    return HG_OK;
}

static hg_status ones_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    fill_value(out[0], 1);
    return HG_OK;
}

static hg_status full_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    fill_value(out[0], a->v[IN_VALUE].f);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _arange
 */

enum { AR_START, AR_STOP, AR_STEP, AR_REPEAT, AR_INFER_RANGE, AR_CTX, AR_DTYPE, AR_NATTRS };

static const hg_attr_spec k_arange_attrs[] = {
    [AR_START] = {"start", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL,
                  "start of the interval (the end when stop is None; the start is then 0)", NULL},
    [AR_STOP] = {"stop", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None", "end of the interval (excluded)",
                 NULL},
    [AR_STEP] = {"step", HG_ATTR_FLOAT, 0, "1", "spacing between values", NULL},
    [AR_REPEAT] = {"repeat", HG_ATTR_INT, 0, "1", "times each value is repeated", NULL},
    [AR_INFER_RANGE] = {"infer_range", HG_ATTR_BOOL, 0, "False",
                        "infer the stop from the output shape in a graph (ignored imperatively)",
                        NULL},
    [AR_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context of the output (ignored: CPU)", NULL},
    [AR_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "the output dtype", NULL},
};
_Static_assert(HG_COUNT(k_arange_attrs) == AR_NATTRS, "k_arange_attrs must match its enum");

/* MXNet's reading: with stop None the interval is [0, start). */
static void arange_bounds(const hg_attrs *a, double *start, double *stop)
{
    if (a->v[AR_STOP].is_none && !a->v[AR_INFER_RANGE].b) {
        *start = 0;
        *stop = a->v[AR_START].f;
    } else {
        *start = a->v[AR_START].f;
        *stop = a->v[AR_STOP].f;
    }
}

static hg_status arange_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)in;
    (void)nout;
    double start, stop, step = a->v[AR_STEP].f;
    int64_t repeat = a->v[AR_REPEAT].i;
    arange_bounds(a, &start, &stop);
    if (!(step != 0))
        return hg_error(HG_ERR_VALUE, "%s: step must be non-zero, got step=%g", op->name, step);
    if (repeat <= 0)
        return hg_error(HG_ERR_VALUE, "%s: repeat must be positive, got repeat=%lld", op->name,
                        (long long)repeat);
    if (a->v[AR_STOP].is_none && a->v[AR_INFER_RANGE].b) {
        /* MXNet's infer_range: the length comes from the graph (a consumer's shape). */
        if (out[0].ndim != 1 || out[0].shape[0] < 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: infer_range=True without stop: the length must come from the "
                            "graph, and nothing there decides it",
                            op->name);
        out[0].dtype = (hg_dtype)a->v[AR_DTYPE].i;
        return hg_shape_check(1, out[0].shape, out[0].dtype);
    }
    double len = ceil((stop - start) / step);
    /* MXNet rejects empty ranges too: start must lie strictly before stop in step's direction. */
    if (!(len > 0))
        return hg_error(HG_ERR_VALUE,
                        "%s: invalid range (start, stop, step) = (%g, %g, %g): "
                        "it has no elements",
                        op->name, start, stop, step);
    if (len * (double)repeat > 4.0e18)
        return hg_error(HG_ERR_VALUE,
                        "%s: range (start, stop, step) = (%g, %g, %g) with repeat "
                        "%lld is too long",
                        op->name, start, stop, step, (long long)repeat);
    out[0].ndim = 1;
    out[0].shape[0] = (int64_t)len * repeat;
    out[0].dtype = (hg_dtype)a->v[AR_DTYPE].i;
    hg_status st = hg_shape_check(1, out[0].shape, out[0].dtype);
    return st ? hg_error_prefix(st, "%s: ", op->name) : HG_OK;
}

typedef struct {
    hg_tensor *t;
    double start, step;
    int64_t repeat;
} arange_job;

/* MXNet casts start and step to the output dtype first and computes start + (i / repeat) * step
 * in that dtype: an integer arange with a float step uses the truncated step (1.3 -> 1), and
 * integer results wrap like the dtype does. repeat == 1 skips the division per element. */
#define ARANGE_LOOP(T, ST, EXPR)                                                                \
    do {                                                                                        \
        T *y = HG_DATA(j->t, T);                                                                \
        for (int64_t i = b; i < e; i++) {                                                       \
            ST k = (ST)(j->repeat == 1 ? i : i / j->repeat);                                    \
            y[i] = EXPR;                                                                        \
        }                                                                                       \
    } while (0)

/* Integer dtypes: the arithmetic runs in uint64_t so overflow wraps instead of being undefined;
 * the final cast keeps the dtype's low bits, as two's-complement arithmetic in T would. */
#define ARANGE_INT(T)                                                                           \
    do {                                                                                        \
        uint64_t s0 = (uint64_t)(T)to_i64(j->start), d = (uint64_t)(T)to_i64(j->step);          \
        ARANGE_LOOP(T, uint64_t, (T)(s0 + k * d));                                              \
    } while (0)

static void arange_range(void *ctx, int64_t b, int64_t e)
{
    const arange_job *j = ctx;
    switch (j->t->dtype) {
    case HG_DTYPE_F32: {
        float s0 = (float)j->start, d = (float)j->step;
        ARANGE_LOOP(float, float, s0 + k * d);
        break;
    }
    case HG_DTYPE_F64: ARANGE_LOOP(double, double, j->start + k * j->step); break;
    case HG_DTYPE_F16: {
        float s0 = (float)j->start, d = (float)j->step;
        ARANGE_LOOP(uint16_t, float, hg_float_to_half(s0 + k * d));
        break;
    }
    case HG_DTYPE_U8: ARANGE_INT(uint8_t); break;
    case HG_DTYPE_I8: ARANGE_INT(int8_t); break;
    case HG_DTYPE_I32: ARANGE_INT(int32_t); break;
    case HG_DTYPE_I64: ARANGE_INT(int64_t); break;
    case HG_DTYPE_BOOL: ARANGE_LOOP(uint8_t, double, j->start + k * j->step != 0); break;
    default: break;
    }
}

static hg_status arange_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    arange_job j = {out[0], 0, a->v[AR_STEP].f, a->v[AR_REPEAT].i};
    double stop;
    arange_bounds(a, &j.start, &stop);
    hg_parallel_for(out[0]->size, HG_GRAIN_ELEMWISE, arange_range, &j);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _eye
 */

enum { EYE_N, EYE_M, EYE_K, EYE_CTX, EYE_DTYPE, EYE_NATTRS };

static const hg_attr_spec k_eye_attrs[] = {
    [EYE_N] = {"N", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of rows", NULL},
    [EYE_M] = {"M", HG_ATTR_INT, 0, "0", "number of columns (0: N)", NULL},
    [EYE_K] = {"k", HG_ATTR_INT, 0, "0",
               "index of the diagonal: 0 the main one, > 0 above it, < 0 below it", NULL},
    [EYE_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context of the output (ignored: CPU)", NULL},
    [EYE_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "the output dtype", NULL},
};
_Static_assert(HG_COUNT(k_eye_attrs) == EYE_NATTRS, "k_eye_attrs must match its enum");

static hg_status eye_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    (void)in;
    (void)nout;
    int64_t n = a->v[EYE_N].i, m = a->v[EYE_M].i;
    if (n < 0 || m < 0)
        return hg_error(HG_ERR_VALUE, "%s: N and M must be non-negative, got N=%lld, M=%lld",
                        op->name, (long long)n, (long long)m);
    out[0].ndim = 2;
    out[0].shape[0] = n;
    out[0].shape[1] = m ? m : n;
    out[0].dtype = (hg_dtype)a->v[EYE_DTYPE].i;
    hg_status st = hg_shape_check(2, out[0].shape, out[0].dtype);
    return st ? hg_error_prefix(st, "%s: ", op->name) : HG_OK;
}

static hg_status eye_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)in;
    (void)nout;
    hg_tensor *t = out[0];
    int64_t n = t->shape[0], m = t->shape[1], k = a->v[EYE_K].i;
    size_t esz = hg_dtype_size(t->dtype);
    char one[8], *p = hg_data(t);
    fill_value(t, 0);
    elem_from_double(t->dtype, 1, one);
    if (k >= m || k <= -n) return HG_OK; /* the diagonal lies outside the array */
    /* Row i has its one at column i + k when that column exists. */
    int64_t r0 = k < 0 ? -k : 0;
    for (int64_t i = r0; i < n && i + k < m; i++)
        memcpy(p + (size_t)(i * m + i + k) * esz, one, esz);
    return HG_OK;
}

#define CREATION(NAME, DOC, ATTRS, INFER, FWD)                                                  \
    {.name = NAME, .doc = DOC, .attrs = ATTRS, .num_attrs = HG_COUNT(ATTRS), .num_inputs = 0,   \
     .num_outputs = 1, .flags = HG_OP_NO_INPUTS | HG_OP_NO_GRAD, .infer = INFER,              \
     .forward = FWD}

const hg_op_def hg_ops_creation[] = {
    CREATION("_zeros", "an array of zeros", k_init_attrs, init_infer, zeros_forward),
    CREATION("_ones", "an array of ones", k_init_attrs, init_infer, ones_forward),
    CREATION("_full", "an array filled with value", k_full_attrs, init_infer, full_forward),
    CREATION("_arange", "evenly spaced values in [start, stop), each repeated repeat times",
             k_arange_attrs, arange_infer, arange_forward),
    CREATION("_eye", "a 2-D array with ones on the k-th diagonal and zeros elsewhere", k_eye_attrs,
             eye_infer, eye_forward),
    {0},
};
