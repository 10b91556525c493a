/* MXNet 1.9.1's contrib quantize / dequantize (the plain, not _v2, operators) between float32
 * and uint8 / int8, with one-element float32 ranges. MXNet's CPU builds (oneDNN, the pip
 * wheels) run these through oneDNN reorders, and that is the behaviour copied here, checked
 * against real MXNet's fixtures: quantize scales by 255 (uint8) or 127 (int8) over
 * max(|min_range|, |max_range|), rounds to nearest even and saturates to the type; uint8
 * keeps the input range as its output range, int8 returns [-r, r]. dequantize multiplies by
 * r / 255.5 (uint8) or r / 127.5 (int8), MXNet's kUint8Range and kInt8Range. No gradient
 * (MXNet's is zero). */
#include <math.h>

#include "ops/contrib_util.h"
#include "ops/ops_util.h"

static bool known(const hg_meta *m) { return m->ndim >= 0; }

enum { Q_INT8, Q_UINT8 };
static const char *const k_qtypes[] = {"int8", "uint8", NULL};
static const char *const k_dqtypes[] = {"float32", NULL};
enum { Q_OUT_TYPE, Q_NATTRS };
static const hg_attr_spec k_q_attrs[] = {
    [Q_OUT_TYPE] = {"out_type", HG_ATTR_ENUM, 0, "uint8", "int8 or uint8", k_qtypes},
};
_Static_assert(HG_COUNT(k_q_attrs) == Q_NATTRS, "k_q_attrs must match its enum");
static const hg_attr_spec k_dq_attrs[] = {
    [Q_OUT_TYPE] = {"out_type", HG_ATTR_ENUM, 0, "float32", "float32", k_dqtypes},
};

/* min_range and max_range: float32 of one element, (1,) as MXNet's shape rule assigns. */
static hg_status check_ranges(const hg_op_def *op, hg_meta *in)
{
    char s[HG_SHAPE_STR];
    for (int i = 1; i < 3; i++) {
        if (!hg_meta_merge(&in[i], HG_DTYPE_F32, 1, (int64_t[]){1}) || in[i].dtype != HG_DTYPE_F32)
            return hg_error(HG_ERR_VALUE, "%s: %s must be a float32 array of shape (1,), got %s %s",
                            op->name, op->input_names[i], hg_dtype_name(in[i].dtype),
                            hg_shape_str(s, in[i].ndim, in[i].shape));
    }
    return HG_OK;
}

static hg_status q_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                         hg_meta *out)
{
    (void)nin;
    (void)nout;
    if (in[0].dtype != HG_DTYPE_F32)
        return hg_error(HG_ERR_TYPE, "%s: data must be float32, got %s", op->name,
                        hg_dtype_name(in[0].dtype));
    hg_status st = check_ranges(op, in);
    if (st) return st;
    out[0].dtype = a->v[Q_OUT_TYPE].i == Q_INT8 ? HG_DTYPE_I8 : HG_DTYPE_U8;
    for (int i = 1; i < 3; i++) {
        out[i].dtype = HG_DTYPE_F32;
        out[i].ndim = 1, out[i].shape[0] = 1;
    }
    if (!known(&in[0])) return HG_OK;
    out[0].ndim = in[0].ndim;
    for (int d = 0; d < in[0].ndim; d++) out[0].shape[d] = in[0].shape[d];
    return HG_OK;
}

static float max_abs(float a, float b) { return fabsf(a) > fabsf(b) ? fabsf(a) : fabsf(b); }

static hg_status q_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                           hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const float *x = hg_data(in[0]);
    float lo = *HG_DATA(in[1], float), hi = *HG_DATA(in[2], float);
    float *omin = hg_data(out[1]), *omax = hg_data(out[2]);
    int64_t n = in[0]->size;
    float range = max_abs(lo, hi);
    if (a->v[Q_OUT_TYPE].i == Q_UINT8) {
        float scale = 255.f / range;
        uint8_t *y = hg_data(out[0]);
        for (int64_t i = 0; i < n; i++) {
            float v = rintf(x[i] * scale); /* NaN fails both tests: 0 */
            y[i] = v >= 255.f ? 255 : v > 0.f ? (uint8_t)v : 0;
        }
        *omin = lo, *omax = hi;
    } else {
        float scale = 127.f / range;
        int8_t *y = hg_data(out[0]);
        for (int64_t i = 0; i < n; i++) {
            float v = rintf(x[i] * scale);
            y[i] = v >= 127.f ? 127 : v <= -128.f ? -128 : v == v ? (int8_t)v : 0;
        }
        *omin = -range, *omax = range;
    }
    return HG_OK;
}

static hg_status dq_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    if (in[0].dtype != HG_DTYPE_U8 && in[0].dtype != HG_DTYPE_I8)
        return hg_error(HG_ERR_TYPE, "%s: data must be uint8 or int8, got %s", op->name,
                        hg_dtype_name(in[0].dtype));
    hg_status st = check_ranges(op, in);
    if (st) return st;
    out[0] = in[0];
    out[0].dtype = HG_DTYPE_F32;
    return HG_OK;
}

static hg_status dq_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    float lo = *HG_DATA(in[1], float), hi = *HG_DATA(in[2], float);
    float *y = hg_data(out[0]);
    int64_t n = in[0]->size;
    if (in[0]->dtype == HG_DTYPE_U8) {
        const uint8_t *x = hg_data(in[0]);
        float f = max_abs(lo, hi) / 255.5f;
        for (int64_t i = 0; i < n; i++) y[i] = (float)x[i] * f;
    } else {
        const int8_t *x = hg_data(in[0]);
        float f = max_abs(lo, hi) / 127.5f;
        for (int64_t i = 0; i < n; i++) y[i] = (float)x[i] * f;
    }
    return HG_OK;
}

const hg_op_def hg_ops_contrib_quant[] = {
    {.name = "_contrib_quantize",
     .doc = "float32 data to uint8 (affine over [min_range, max_range]) or int8 (symmetric), "
            "with the range the output stands for",
     .input_names = HG_NAMES("data", "min_range", "max_range"),
     .output_names = HG_NAMES("output", "min_output", "max_output"),
     .attrs = k_q_attrs,
     .num_attrs = Q_NATTRS,
     .num_inputs = 3,
     .num_outputs = 3,
     .infer = q_infer,
     .forward = q_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_dequantize",
     .doc = "uint8 or int8 data back to float32 over [min_range, max_range]",
     .input_names = HG_NAMES("data", "min_range", "max_range"),
     .attrs = k_dq_attrs,
     .num_attrs = Q_NATTRS,
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = dq_infer,
     .forward = dq_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
