/* SequenceLast and SequenceReverse, MXNet's sequence ops over a time axis (SequenceMask lives in
 * indexing.c), with their gradients.
 *
 * Data is [T, batch, rest...] (axis 0) or, for SequenceLast, [batch, T, rest...] (axis 1). With
 * use_sequence_length, a (batch,) array gives each sequence's length (any numeric dtype, read as
 * an integer); without, every sequence is T long. Both ops move whole rows of `rest` elements,
 * so they work for every dtype. A length outside what the op can use (SequenceLast: 1..T,
 * SequenceReverse: 0..T) is an error naming the batch entry: MXNet reads outside the data
 * there.
 */
#include <string.h>

#include "core/half.h"
#include "graph/grad.h"
#include "ops/ops_util.h"
#include "ops/sequence_ops.h"

static const hg_attr_spec k_sq_attrs[] = {
    [SQ_USE_LEN] = {"use_sequence_length", HG_ATTR_BOOL, 0, "False",
                    "take a sequence_length input: the length of each sequence", NULL},
    [SQ_AXIS] = {"axis", HG_ATTR_INT, 0, "0",
                 "the sequence axis: 0 or 1 for SequenceLast, 0 for SequenceReverse", NULL},
};
_Static_assert(HG_COUNT(k_sq_attrs) == SQ_NATTRS, "k_sq_attrs must match its enum");

static int sq_num_inputs(const hg_attrs *a) { return a->v[SQ_USE_LEN].b ? 2 : 1; }
static int sq_bwd_num_inputs(const hg_attrs *a) { return sq_num_inputs(a) + 1; }

static bool sq_is_reverse(const hg_op_def *op) { return strstr(op->name, "Reverse") != NULL; }

/* The (T, batch, rest) of data for the op's axis. */
static void sq_dims(const hg_attrs *a, const int64_t *shape, int ndim, int64_t *t, int64_t *b,
                    int64_t *rest)
{
    const int axis = (int)a->v[SQ_AXIS].i;
    *t = shape[axis];
    *b = shape[1 - axis];
    *rest = 1;
    for (int d = 2; d < ndim; d++) *rest *= shape[d];
}

/* Checks data (and the length input, filled when unknown). */
static hg_status sq_check(const hg_op_def *op, const hg_attrs *a, hg_meta *x, hg_meta *len)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    const int64_t axis = a->v[SQ_AXIS].i;
    if (axis != 0 && (axis != 1 || sq_is_reverse(op)))
        return hg_error(HG_ERR_VALUE, "%s: axis must be %s, got %lld", op->name,
                        sq_is_reverse(op) ? "0" : "0 or 1", (long long)axis);
    if (len && len->ndim >= 0 && len->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: sequence_length must be numeric, got bool", op->name);
    if (x->ndim < 0) return HG_OK;
    if (x->ndim < 2)
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 2 dimensions, got %s", op->name,
                        hg_shape_str(b1, x->ndim, x->shape));
    if (!len) return HG_OK;
    int64_t batch = x->shape[1 - axis];
    if (!hg_meta_merge(len, len->ndim >= 0 ? len->dtype : x->dtype, 1, &batch))
        return hg_error(HG_ERR_VALUE,
                        "%s: sequence_length must have shape (%lld,) for data of "
                        "shape %s, got %s",
                        op->name, (long long)batch, hg_shape_str(b1, x->ndim, x->shape),
                        hg_shape_str(b2, len->ndim, len->shape));
    return HG_OK;
}

/* A float length as an integer; values past any sequence (and NaN) become -1, an error. */
static int64_t sq_float_len(double v) { return v > -1 && v < 9.0e18 ? (int64_t)v : -1; }

static int64_t sq_load_len(const hg_tensor *t, int64_t i)
{
    const void *p = hg_data(t);
    switch (t->dtype) {
    case HG_DTYPE_F32: return sq_float_len(((const float *)p)[i]);
    case HG_DTYPE_F64: return sq_float_len(((const double *)p)[i]);
    case HG_DTYPE_F16: return sq_float_len(hg_half_to_float(((const uint16_t *)p)[i]));
    case HG_DTYPE_U8: return ((const uint8_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return ((const int64_t *)p)[i];
    default: return 0; /* bool: rejected by sq_check */
    }
}

/* Each sequence's length, checked against [lo, t]. */
static hg_status sq_lengths(const hg_op_def *op, const hg_tensor *len, int64_t t, int64_t b,
                            int64_t lo, int64_t *out)
{
    for (int64_t i = 0; i < b; i++) {
        out[i] = len ? sq_load_len(len, i) : t;
        if (out[i] < lo || out[i] > t)
            return hg_error(HG_ERR_INDEX,
                            "%s: sequence_length[%lld] = %lld is outside %lld..%lld (the "
                            "sequence axis has %lld steps)",
                            op->name, (long long)i, (long long)out[i], (long long)lo, (long long)t,
                            (long long)t);
    }
    return HG_OK;
}

static size_t sq_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    int64_t t, b, rest;
    sq_dims(a, in[0].shape, in[0].ndim, &t, &b, &rest);
    return (size_t)b * sizeof(int64_t);
}

/* ---- SequenceLast ------------------------------------------------------------------------- */

static hg_status last_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nout;
    hg_status s = sq_check(op, a, &in[0], nin == 2 ? &in[1] : NULL);
    if (s != HG_OK) return s;
    out[0] = in[0];
    if (in[0].ndim < 0) return HG_OK;
    out[0].ndim = in[0].ndim - 1;
    out[0].shape[0] = in[0].shape[1 - a->v[SQ_AXIS].i];
    for (int d = 1; d < out[0].ndim; d++) out[0].shape[d] = in[0].shape[d + 1];
    return HG_OK;
}

/* Offset in elements of row (step s, sequence i) of data. */
static int64_t last_row(const hg_attrs *a, int64_t s, int64_t i, int64_t t, int64_t b, int64_t rest)
{
    return (a->v[SQ_AXIS].i ? i * t + s : s * b + i) * rest;
}

static hg_status last_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nout;
    const hg_tensor *x = in[0];
    int64_t t, b, rest, *len = ctx->workspace;
    sq_dims(a, x->shape, x->ndim, &t, &b, &rest);
    if (b * rest == 0) return HG_OK;
    hg_status s = sq_lengths(op, nin == 2 ? in[1] : NULL, t, b, 1, len);
    if (s != HG_OK) return s;
    const size_t es = hg_dtype_size(x->dtype), row = (size_t)rest * es;
    for (int64_t i = 0; i < b; i++)
        memcpy((char *)hg_data(out[0]) + (size_t)i * row,
               (const char *)hg_data(x) + (size_t)last_row(a, len[i] - 1, i, t, b, rest) * es, row);
    return HG_OK;
}

/* _backward_SequenceLast(ograd, data[, sequence_length]): zeros of data's shape with each
 * sequence's ograd row at its last step. */
static hg_status last_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    hg_meta y;
    hg_status s = last_infer(op, a, nin - 1, in + 1, nout, &y);
    if (s != HG_OK) return s;
    out[0] = in[1];
    out[0].dtype = in[0].dtype;
    if (in[0].ndim >= 0 && y.ndim >= 0 &&
        (!hg_shape_equal(in[0].ndim, in[0].shape, y.ndim, y.shape) || in[0].dtype != in[1].dtype))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s %s does not match the output %s %s", op->name,
                        hg_shape_str(b1, in[0].ndim, in[0].shape), hg_dtype_name(in[0].dtype),
                        hg_shape_str(b2, y.ndim, y.shape), hg_dtype_name(in[1].dtype));
    return HG_OK;
}

static size_t last_bwd_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    return sq_ws(a, nin - 1, in + 1);
}

static hg_status last_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nout;
    const hg_tensor *dy = in[0], *x = in[1];
    int64_t t, b, rest, *len = ctx->workspace;
    sq_dims(a, x->shape, x->ndim, &t, &b, &rest);
    hg_ops_zero_fill(out[0]);
    if (b * rest == 0) return HG_OK;
    hg_status s = sq_lengths(op, nin == 3 ? in[2] : NULL, t, b, 1, len);
    if (s != HG_OK) return s;
    const size_t es = hg_dtype_size(x->dtype), row = (size_t)rest * es;
    for (int64_t i = 0; i < b; i++)
        memcpy((char *)hg_data(out[0]) + (size_t)last_row(a, len[i] - 1, i, t, b, rest) * es,
               (const char *)hg_data(dy) + (size_t)i * row, row);
    return HG_OK;
}

static hg_status last_grad(hg_grad_ctx *g)
{
    hg_sentry in[3] = {hg_g_ograd(g, 0), hg_g_in(g, 0)}, dx;
    int nin = 2;
    if (hg_g_nin(g) == 2) in[nin++] = hg_g_in(g, 1);
    hg_g_op_fwd_attrs(g, "_backward_SequenceLast", nin, in, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---- SequenceReverse ---------------------------------------------------------------------- */

static hg_status rev_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nout;
    out[0] = in[0];
    return sq_check(op, a, &in[0], nin == 2 ? &in[1] : NULL);
}

/* Step s of sequence i comes from step len - 1 - s while s < len; the padding stays. */
static hg_status rev_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nout;
    const hg_tensor *x = in[0];
    int64_t t, b, rest, *len = ctx->workspace;
    sq_dims(a, x->shape, x->ndim, &t, &b, &rest);
    if (x->size == 0) return HG_OK;
    hg_status s = sq_lengths(op, nin == 2 ? in[1] : NULL, t, b, 0, len);
    if (s != HG_OK) return s;
    const size_t es = hg_dtype_size(x->dtype), row = (size_t)rest * es;
    const char *src = hg_data(x);
    char *dst = hg_data(out[0]);
    if (src == dst) return hg_error(HG_ERR_INTERNAL, "%s: cannot run in place", op->name);
    for (int64_t step = 0; step < t; step++)
        for (int64_t i = 0; i < b; i++) {
            int64_t from = step < len[i] ? len[i] - 1 - step : step;
            memcpy(dst + (size_t)(step * b + i) * row, src + (size_t)(from * b + i) * row, row);
        }
    return HG_OK;
}

/* The reversal is a permutation that is its own inverse: the gradient reverses ograd. */
static hg_status rev_grad(hg_grad_ctx *g)
{
    hg_sentry in[2] = {hg_g_ograd(g, 0)}, dx;
    int nin = 1;
    if (hg_g_nin(g) == 2) in[nin++] = hg_g_in(g, 1);
    hg_g_op_fwd_attrs(g, "SequenceReverse", nin, in, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

const hg_op_def hg_ops_sequence[] = {
    {.name = "SequenceLast",
     .doc = "the last step of each sequence (its length's, or the last one)",
     .input_names = HG_NAMES("data", "sequence_length"),
     .attrs = k_sq_attrs,
     .num_attrs = HG_COUNT(k_sq_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .get_num_inputs = sq_num_inputs,
     .infer = last_infer,
     .forward = last_forward,
     .workspace = sq_ws,
     .grad = last_grad},
    {.name = "_backward_SequenceLast",
     .doc = "gradient of SequenceLast: ograd placed at each sequence's last step, zeros "
            "elsewhere",
     .input_names = HG_NAMES("ograd", "data", "sequence_length"),
     .attrs = k_sq_attrs,
     .num_attrs = HG_COUNT(k_sq_attrs),
     .num_inputs = 3,
     .num_outputs = 1,
     .get_num_inputs = sq_bwd_num_inputs,
     .infer = last_bwd_infer,
     .forward = last_bwd_forward,
     .workspace = last_bwd_ws},
    {.name = "SequenceReverse",
     .doc = "reverses each sequence along axis 0 within its length; padding stays in place",
     .input_names = HG_NAMES("data", "sequence_length"),
     .attrs = k_sq_attrs,
     .num_attrs = HG_COUNT(k_sq_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .get_num_inputs = sq_num_inputs,
     .infer = rev_infer,
     .forward = rev_forward,
     .workspace = sq_ws,
     .grad = rev_grad},
    {0},
};
