/* Spatial resampling contrib ops on NCHW data, as MXNet 1.9.1's: AdaptiveAvgPooling2D (average
 * over the input cells [floor(i H / h), ceil((i + 1) H / h)) of each output cell) and
 * BilinearResize2D (bilinear interpolation to a size given directly, by scale, by a `like`
 * array or by rounding to even/odd, with or without aligned corners). Index arithmetic is done
 * in float32 as MXNet's kernels do, so the sampled cells and weights are the same; the sums
 * run in double. Gradients are _backward_ ops that scatter the same weights. */
#include <math.h>
#include <string.h>

#include "ops/contrib_resize.h"
#include "ops/contrib_util.h"
#include "ops/ops_util.h"

static bool known(const hg_meta *m) { return m->ndim >= 0; }

static hg_status check_nchw(const hg_op_def *op, const hg_meta *m)
{
    char s[HG_SHAPE_STR];
    hg_status st = hg_c_check_float(op, "data", m->dtype);
    if (st) return st;
    if (known(m) && m->ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D (batch, channel, height, width), got %s", op->name,
                        hg_shape_str(s, m->ndim, m->shape));
    return HG_OK;
}

/* Runs fn over (x, y) as doubles: x read, y zeroed then written, y stored. */
typedef void (*plane_fn)(const hg_attrs *a, const double *x, int64_t h, int64_t w, double *y,
                         int64_t oh, int64_t ow, int64_t planes);

static hg_status run_planes(const hg_op_def *op, const hg_attrs *a, const hg_tensor *x,
                            const hg_tensor *big, hg_tensor *y, plane_fn fn)
{
    /* big: the larger-grid tensor whose h, w are the "input" side of the index rule (the data
     * forward, the data-shaped gradient backward) */
    double *xv = hg_c_load(x), *yv = hg_c_alloc(y->size);
    hg_status st = HG_OK;
    if (!xv || !yv) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < y->size; i++) yv[i] = 0;
    const hg_tensor *small = big == x ? y : x;
    fn(a, xv, big->shape[2], big->shape[3], yv, small->shape[2], small->shape[3],
       big->shape[0] * big->shape[1]);
    hg_c_store(y, yv);
done:
    hg_c_free(xv, x->size);
    hg_c_free(yv, y->size);
    return st;
}

/* ---- AdaptiveAvgPooling2D ---------------------------------------------------------------- */

static const hg_attr_spec k_ap_attrs[] = {
    [AP_OUT] = {"output_size", HG_ATTR_TUPLE, 0, "()",
                "output (height, width), or one size for both; () for 1 x 1", NULL},
};
_Static_assert(HG_COUNT(k_ap_attrs) == AP_NATTRS, "k_ap_attrs must match its enum");

static hg_status ap_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    hg_status st = check_nchw(op, &in[0]);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    const hg_tuple *t = &a->v[AP_OUT].t;
    int64_t oh = t->n == 1 || t->n == 2 ? t->v[0] : 1, ow = t->n == 2 ? t->v[1] : oh;
    if (t->n > 2) oh = ow = 1; /* MXNet: more than two sizes mean 1 x 1 */
    if (oh < 1 || ow < 1)
        return hg_error(HG_ERR_VALUE, "%s: output_size must be >= 1, got %lld x %lld", op->name,
                        (long long)oh, (long long)ow);
    out[0] = in[0];
    out[0].shape[2] = oh, out[0].shape[3] = ow;
    return HG_OK;
}

static int64_t start_ind(int64_t a, int64_t b, int64_t c)
{
    return (int64_t)floorf((float)(a * c) / (float)b);
}
static int64_t end_ind(int64_t a, int64_t b, int64_t c)
{
    return (int64_t)ceilf((float)((a + 1) * c) / (float)b);
}

/* forward: x (h, w) -> y (oh, ow); backward (bw): x holds dy (oh, ow), y gets dx (h, w) */
static void ap_planes(bool bw, const double *x, int64_t h, int64_t w, double *y, int64_t oh,
                      int64_t ow, int64_t planes)
{
    for (int64_t p = 0; p < planes; p++) {
        const double *xp = x + p * (bw ? oh * ow : h * w);
        double *yp = y + p * (bw ? h * w : oh * ow);
        for (int64_t i = 0; i < oh; i++) {
            int64_t h0 = start_ind(i, oh, h), h1 = end_ind(i, oh, h);
            for (int64_t j = 0; j < ow; j++) {
                int64_t w0 = start_ind(j, ow, w), w1 = end_ind(j, ow, w);
                double k = (double)((h1 - h0) * (w1 - w0));
                if (!bw) {
                    double s = 0;
                    for (int64_t r = h0; r < h1; r++)
                        for (int64_t c = w0; c < w1; c++) s += xp[r * w + c];
                    yp[i * ow + j] = s / k;
                } else {
                    double g = xp[i * ow + j] / k;
                    for (int64_t r = h0; r < h1; r++)
                        for (int64_t c = w0; c < w1; c++) yp[r * w + c] += g;
                }
            }
        }
    }
}
static void ap_fwd(const hg_attrs *a, const double *x, int64_t h, int64_t w, double *y, int64_t oh,
                   int64_t ow, int64_t planes)
{
    (void)a;
    ap_planes(false, x, h, w, y, oh, ow, planes);
}
static void ap_bwd(const hg_attrs *a, const double *x, int64_t h, int64_t w, double *y, int64_t oh,
                   int64_t ow, int64_t planes)
{
    (void)a;
    ap_planes(true, x, h, w, y, oh, ow, planes);
}

static hg_status ap_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return run_planes(op, a, in[0], in[0], out[0], ap_fwd);
}

/* _backward_ ops take (ograd, data) and give the data's gradient. */
static hg_status bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    if (!known(&in[1])) return hg_error(HG_ERR_VALUE, "%s: data shape unknown", op->name);
    out[0] = in[1];
    out[0].dtype = in[0].dtype;
    return HG_OK;
}

static hg_status ap_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return run_planes(op, a, in[0], out[0], out[0], ap_bwd);
}

/* ---- BilinearResize2D -------------------------------------------------------------------- */

static const char *const k_modes[] = {"size",       "odd_scale",   "like",      "to_even_down",
                                      "to_even_up", "to_odd_down", "to_odd_up", NULL};
static const hg_attr_spec k_br_attrs[] = {
    [BR_H] = {"height", HG_ATTR_INT, 0, "1", "output height (mode size, no scale_height)", NULL},
    [BR_W] = {"width", HG_ATTR_INT, 0, "1", "output width (mode size, no scale_width)", NULL},
    [BR_SH] = {"scale_height", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
               "output height = scale_height * input height", NULL},
    [BR_SW] = {"scale_width", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
               "output width = scale_width * input width", NULL},
    [BR_MODE] = {"mode", HG_ATTR_ENUM, 0, "size",
                 "size, odd_scale, like (the size of the second input), to_even_down, "
                 "to_even_up, to_odd_down or to_odd_up",
                 k_modes},
    [BR_ALIGN] = {"align_corners", HG_ATTR_BOOL, 0, "True",
                  "map the corner pixels' centres onto each other", NULL},
};
_Static_assert(HG_COUNT(k_br_attrs) == BR_NATTRS, "k_br_attrs must match its enum");

static int br_num_inputs(const hg_attrs *a) { return a->v[BR_MODE].i == M_LIKE ? 2 : 1; }

static int64_t to_parity(int64_t n, int odd, int up)
{
    return (n % 2 == odd) ? n : n + (up ? 1 : -1);
}

static hg_status br_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    char s[HG_SHAPE_STR];
    hg_status st = check_nchw(op, &in[0]);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    int mode = (int)a->v[BR_MODE].i;
    if (!known(&in[0]) || (mode == M_LIKE && !known(&in[1]))) return HG_OK;
    int64_t h = in[0].shape[2], w = in[0].shape[3], oh = 0, ow = 0;
    const hg_attr_value *sh = &a->v[BR_SH], *sw = &a->v[BR_SW];
    if (a->v[BR_H].i < 1 || a->v[BR_W].i < 1)
        return hg_error(HG_ERR_VALUE, "%s: height and width must be >= 1", op->name);
    if ((mode == M_ODD_SCALE || (mode == M_SIZE && !sh->is_none)) && (sh->is_none || sw->is_none))
        return hg_error(HG_ERR_VALUE,
                        "%s: mode '%s' with scales needs both scale_height and "
                        "scale_width",
                        op->name, k_modes[mode]);
    switch (mode) {
    case M_SIZE: /* MXNet picks both sizes by whether scale_height is given */
        oh = sh->is_none ? a->v[BR_H].i : (int64_t)(int)((float)sh->f * (float)h);
        ow = sh->is_none ? a->v[BR_W].i : (int64_t)(int)((float)sw->f * (float)w);
        break;
    case M_ODD_SCALE:
        oh = h % 2 == 0 ? (int64_t)(int16_t)((float)h * (float)sh->f)
                        : (int64_t)(int16_t)((float)(h - 1) * (float)sh->f) + 1;
        ow = w % 2 == 0 ? (int64_t)(int16_t)((float)w * (float)sw->f)
                        : (int64_t)(int16_t)((float)(w - 1) * (float)sw->f) + 1;
        break;
    case M_LIKE:
        if (nin < 2 || in[1].ndim != 4)
            return hg_error(HG_ERR_VALUE, "%s: mode 'like' needs a 4-D like array, got %s",
                            op->name, hg_shape_str(s, in[1].ndim, in[1].shape));
        oh = in[1].shape[2], ow = in[1].shape[3];
        break;
    case M_EVEN_DOWN: oh = to_parity(h, 0, 0), ow = to_parity(w, 0, 0); break;
    case M_EVEN_UP: oh = to_parity(h, 0, 1), ow = to_parity(w, 0, 1); break;
    case M_ODD_DOWN: oh = to_parity(h, 1, 0), ow = to_parity(w, 1, 0); break;
    default: oh = to_parity(h, 1, 1), ow = to_parity(w, 1, 1); break;
    }
    if (oh < 1 || ow < 1 || oh > 32767 || ow > 32767 || h < 1 || w < 1)
        return hg_error(
            HG_ERR_VALUE, "%s: input %s would resize to %lld x %lld (sizes must be in [1, 32767])",
            op->name, hg_shape_str(s, in[0].ndim, in[0].shape), (long long)oh, (long long)ow);
    out[0] = in[0];
    out[0].shape[2] = oh, out[0].shape[3] = ow;
    return HG_OK;
}

/* The source position of output index i, in float as MXNet computes it: (cell, next-cell
 * offset 0/1, weight of the next cell). */
typedef struct {
    int64_t i0, step;
    double lam;
} tap;

static tap src_tap(int64_t in, int64_t out, int64_t i, bool align)
{
    float scale = out > 1 ? (align ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out)
                          : 0.f;
    float r = align ? scale * (float)i : scale * ((float)i + 0.5f) - 0.5f;
    if (!align && r < 0) r = 0;
    int64_t i0 = (int64_t)(int)r;
    return (tap){i0, i0 < in - 1 ? 1 : 0, (double)(r - (float)i0)};
}

static void br_planes(bool bw, bool align, const double *x, int64_t h, int64_t w, double *y,
                      int64_t oh, int64_t ow, int64_t planes)
{
    bool same = h == oh && w == ow; /* MXNet copies (and its weights would agree) */
    for (int64_t i = 0; i < oh; i++) {
        tap th = same ? (tap){i, 0, 0} : src_tap(h, oh, i, align);
        for (int64_t j = 0; j < ow; j++) {
            tap tw = same ? (tap){j, 0, 0} : src_tap(w, ow, j, align);
            int64_t o00 = th.i0 * w + tw.i0, o01 = o00 + tw.step, o10 = o00 + th.step * w,
                    o11 = o10 + tw.step;
            double a00 = (1 - th.lam) * (1 - tw.lam), a01 = (1 - th.lam) * tw.lam,
                   a10 = th.lam * (1 - tw.lam), a11 = th.lam * tw.lam;
            for (int64_t p = 0; p < planes; p++) {
                if (!bw) {
                    const double *xp = x + p * h * w;
                    y[p * oh * ow + i * ow + j] = a00 * xp[o00] + a01 * xp[o01] + a10 * xp[o10] +
                                                  a11 * xp[o11];
                } else {
                    double g = x[p * oh * ow + i * ow + j];
                    double *yp = y + p * h * w;
                    yp[o00] += a00 * g, yp[o01] += a01 * g, yp[o10] += a10 * g, yp[o11] += a11 * g;
                }
            }
        }
    }
}
static void br_fwd(const hg_attrs *a, const double *x, int64_t h, int64_t w, double *y, int64_t oh,
                   int64_t ow, int64_t planes)
{
    br_planes(false, a->v[BR_ALIGN].b, x, h, w, y, oh, ow, planes);
}
static void br_bwd(const hg_attrs *a, const double *x, int64_t h, int64_t w, double *y, int64_t oh,
                   int64_t ow, int64_t planes)
{
    br_planes(true, a->v[BR_ALIGN].b, x, h, w, y, oh, ow, planes);
}

static hg_status br_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return run_planes(op, a, in[0], in[0], out[0], br_fwd);
}

static hg_status br_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return run_planes(op, a, in[0], out[0], out[0], br_bwd);
}

/* The data's gradient; `like` only lends its shape (MXNet gives it zeros). */
static hg_status resize_grad(hg_grad_ctx *g, const char *bw)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, bw, 2, (hg_sentry[]){hg_g_ograd(g, 0), hg_g_in(g, 0)}, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    if (hg_g_nin(g) > 1 && hg_g_needs(g, 1))
        hg_g_set(g, 1, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}
static hg_status ap_grad(hg_grad_ctx *g)
{
    return resize_grad(g, "_backward_contrib_AdaptiveAvgPooling2D");
}
static hg_status br_grad(hg_grad_ctx *g)
{
    return resize_grad(g, "_backward_contrib_BilinearResize2D");
}

const hg_op_def hg_ops_contrib_resize[] = {
    {.name = "_contrib_AdaptiveAvgPooling2D",
     .doc = "average pooling of NCHW data to a given output size, cells chosen adaptively",
     .input_names = HG_NAMES("data"),
     .attrs = k_ap_attrs,
     .num_attrs = AP_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = ap_infer,
     .forward = ap_forward,
     .grad = ap_grad},
    {.name = "_backward_contrib_AdaptiveAvgPooling2D",
     .doc = "AdaptiveAvgPooling2D's gradient: each output's gradient spread over its cell",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_ap_attrs,
     .num_attrs = AP_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = bw_infer,
     .forward = ap_backward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_BilinearResize2D",
     .doc = "bilinear resize of NCHW data",
     .input_names = HG_NAMES("data", "like"),
     .attrs = k_br_attrs,
     .num_attrs = BR_NATTRS,
     .num_inputs = 2, /* at most: like only in mode 'like' */
     .get_num_inputs = br_num_inputs,
     .num_outputs = 1,
     .infer = br_infer,
     .forward = br_forward,
     .grad = br_grad},
    {.name = "_backward_contrib_BilinearResize2D",
     .doc = "BilinearResize2D's gradient: each output's gradient scattered with its weights",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_br_attrs,
     .num_attrs = BR_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = bw_infer,
     .forward = br_backward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
