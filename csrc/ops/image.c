/* MXNet 1.9.1's image tensor ops (nd.image / sym.image): normalize, which maps each channel
 * of a (C, H, W) or (N, C, H, W) image to (x - mean[c]) / std[c] (C is 1 or 3; mean and std
 * hold 1 or C floats), and to_tensor, which turns (H, W, C) or (N, H, W, C) pixels into float32
 * (C, H, W) / (N, C, H, W) values divided by 255. Arithmetic follows MXNet's kernels: float for
 * every input dtype but float64 (integer results truncate and wrap as MXNet's casts do). */
#include <stdlib.h>

#include "ops/contrib_util.h"
#include "ops/ops_util.h"

#define MAX_CH 3

enum { NM_MEAN, NM_STD, NM_NATTRS };
static const hg_attr_spec k_nm_attrs[] = {
    [NM_MEAN] = {"mean", HG_ATTR_STRING, 0, "(0, 0, 0, 0)",
                 "per-channel means: 1 or C numbers (the default fits no image: as in MXNet)",
                 NULL},
    [NM_STD] = {"std", HG_ATTR_STRING, 0, "(1, 1, 1, 1)",
                "per-channel standard deviations: 1 or C numbers", NULL},
};
_Static_assert(HG_COUNT(k_nm_attrs) == NM_NATTRS, "k_nm_attrs must match its enum");

static bool known(const hg_meta *m) { return m->ndim >= 0; }

/* mean[c] and std[c] for c < 3, the one-number forms repeated. */
static hg_status nm_params(const hg_op_def *op, const hg_attrs *a, int nch, float *mean, float *sd)
{
    float m[5], s[5];
    int nm = hg_ops_parse_floats(op, op->attrs[NM_MEAN].name, a->v[NM_MEAN].s, m, 5, true);
    if (nm < 0) return HG_ERR_VALUE; /* the message is set */
    int ns = hg_ops_parse_floats(op, op->attrs[NM_STD].name, a->v[NM_STD].s, s, 5, true);
    if (ns < 0) return HG_ERR_VALUE; /* the message is set */
    if (nm != 1 && nm != nch)
        return hg_error(HG_ERR_VALUE, "%s: mean must have 1 or %d elements (the channels), got %d",
                        op->name, nch, nm);
    if (ns != 1 && ns != nch)
        return hg_error(HG_ERR_VALUE, "%s: std must have 1 or %d elements (the channels), got %d",
                        op->name, nch, ns);
    for (int c = 0; c < MAX_CH; c++) {
        mean[c] = m[nm == 1 ? 0 : c < nm ? c : 0];
        sd[c] = s[ns == 1 ? 0 : c < ns ? c : 0];
    }
    return HG_OK;
}

static hg_status nm_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR];
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    if (in[0].ndim != 3 && in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must have shape (channels, height, width) or (N, channels, "
                        "height, width), got %s",
                        op->name, hg_shape_str(s1, in[0].ndim, in[0].shape));
    int64_t nch = in[0].shape[in[0].ndim - 3];
    if (nch != 1 && nch != 3)
        return hg_error(HG_ERR_VALUE, "%s: the channel dimension must have 1 or 3 elements, got %s",
                        op->name, hg_shape_str(s1, in[0].ndim, in[0].shape));
    float mean[MAX_CH], sd[MAX_CH];
    HG_TRY(nm_params(op, a, (int)nch, mean, sd));
    out[0] = in[0];
    return HG_OK;
}

/* Forward (dy == false): y = (x - mean) / std. Backward: dx = dy / std. */
static hg_status nm_run(const hg_op_def *op, const hg_attrs *a, const hg_tensor *x, bool backward,
                        hg_tensor *out)
{
    int nd = x->ndim;
    int64_t nch = x->shape[nd - 3], plane = x->shape[nd - 2] * x->shape[nd - 1];
    float mean[MAX_CH], sd[MAX_CH];
    HG_TRY(nm_params(op, a, (int)nch, mean, sd));
    if (x->dtype == HG_DTYPE_F32 && out->dtype == HG_DTYPE_F32) {
        /* float32, the usual case: plane by plane, no conversions (the same float arithmetic
         * as below, 10x faster than going through double). */
        const float *xs = hg_data(x);
        float *ys = hg_data(out);
        for (int64_t q = 0; q < x->size / (plane > 0 ? plane : 1); q++) {
            const float m = mean[q % nch], d = sd[q % nch];
            const float *xp = xs + q * plane;
            float *yp = ys + q * plane;
            if (backward)
                for (int64_t i = 0; i < plane; i++) yp[i] = xp[i] / d;
            else
                for (int64_t i = 0; i < plane; i++) yp[i] = (xp[i] - m) / d;
        }
        return HG_OK;
    }
    double *v = hg_c_load(x);
    if (!v) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    bool dbl = x->dtype == HG_DTYPE_F64, integer = !hg_is_float(x->dtype);
    for (int64_t i = 0; i < x->size; i++) {
        int64_t c = (i / plane) % nch;
        double r;
        if (dbl) r = backward ? v[i] / (double)sd[c] : (v[i] - (double)mean[c]) / (double)sd[c];
        else {
            float f = (float)v[i];
            r = (double)(backward ? f / sd[c] : (f - mean[c]) / sd[c]);
        }
        v[i] = integer ? (double)(int64_t)r : r;
    }
    hg_c_store(out, v);
    hg_c_free(v, x->size);
    return HG_OK;
}

static hg_status nm_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return nm_run(op, a, in[0], false, out[0]);
}

static hg_status nm_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return nm_run(op, a, in[0], true, out[0]);
}

static hg_status nm_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_image_normalize", HG_GIN(hg_g_ograd(g, 0)), NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---- to_tensor ---------------------------------------------------------------------------- */

static hg_status tt_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR];
    out[0].dtype = HG_DTYPE_F32;
    if (!known(&in[0])) return HG_OK;
    if (in[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: data must be a number dtype, got bool", op->name);
    int nd = in[0].ndim;
    if (nd != 3 && nd != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: image must have shape (height, width, channels) or (N, height, "
                        "width, channels), got %s",
                        op->name, hg_shape_str(s1, nd, in[0].shape));
    out[0].ndim = nd;
    if (nd == 4) out[0].shape[0] = in[0].shape[0];
    out[0].shape[nd - 3] = in[0].shape[nd - 1];
    out[0].shape[nd - 2] = in[0].shape[nd - 3];
    out[0].shape[nd - 1] = in[0].shape[nd - 2];
    return HG_OK;
}

static hg_status tt_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    int nd = x->ndim;
    int64_t ch = x->shape[nd - 1], len = x->shape[nd - 3] * x->shape[nd - 2];
    int64_t batch = nd == 4 ? x->shape[0] : 1;
    double *v = hg_c_load(x);
    if (!v) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    float *y = HG_DATA(out[0], float);
    bool dbl = x->dtype == HG_DTYPE_F64;
    for (int64_t n = 0; n < batch; n++)
        for (int64_t c = 0; c < ch; c++)
            for (int64_t i = 0; i < len; i++) {
                double s = v[(n * len + i) * ch + c];
                y[(n * ch + c) * len + i] = dbl ? (float)(s / 255.0) : (float)s / 255.0f;
            }
    hg_c_free(v, x->size);
    return HG_OK;
}

const hg_op_def hg_ops_image[] = {
    {.name = "_image_normalize",
     .doc = "per-channel (x - mean[c]) / std[c] of a (C, H, W) or (N, C, H, W) image, C in "
            "{1, 3}; mean and std hold 1 or C numbers",
     .input_names = HG_NAMES("data"),
     .attrs = k_nm_attrs,
     .num_attrs = NM_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = nm_infer,
     .forward = nm_forward,
     .grad = nm_grad},
    {.name = "_backward_image_normalize",
     .doc = "normalize's gradient: ograd / std[c]",
     .input_names = HG_NAMES("ograd"),
     .attrs = k_nm_attrs,
     .num_attrs = NM_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = nm_infer,
     .forward = nm_backward},
    {.name = "_image_to_tensor",
     .doc = "float32 (C, H, W) or (N, C, H, W) values / 255 of (H, W, C) or (N, H, W, C) "
            "pixels (no gradient: MXNet's copies the output gradient unshaped)",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = tt_infer,
     .forward = tt_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
