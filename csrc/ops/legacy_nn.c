/* Two layers of MXNet's older CNNs: LRN (local response normalisation across channels, AlexNet)
 * and Crop (the FCN crop of a 4-D NCHW array to a size or to another array's height and
 * width), with their gradients.
 *
 * LRN: norm = knorm + alpha / nsize * sum of x^2 over the nsize channels centred on c (zero
 * padded), y = x * norm^-beta. norm is a hidden second output the backward reads, as in MXNet.
 * The kernels run over (n, c) planes of H*W contiguous elements, float32 or float64.
 */
#include <math.h>
#include <string.h>

#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/legacy_nn.h"
#include "ops/ops_util.h"

/* ---- LRN ---------------------------------------------------------------------------------- */

static const hg_attr_spec k_lrn_attrs[] = {
    [LRN_ALPHA] = {"alpha", HG_ATTR_FLOAT, 0, "0.0001", "the variance scaling alpha", NULL},
    [LRN_BETA] = {"beta", HG_ATTR_FLOAT, 0, "0.75", "the power beta", NULL},
    [LRN_KNORM] = {"knorm", HG_ATTR_FLOAT, 0, "2", "the constant k", NULL},
    [LRN_NSIZE] = {"nsize", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                   "the window width in channels (odd)", NULL},
};
_Static_assert(HG_COUNT(k_lrn_attrs) == LRN_NATTRS, "k_lrn_attrs must match its enum");

static hg_status lrn_check(const hg_op_def *op, const hg_attrs *a, const hg_meta *x)
{
    char b[HG_SHAPE_STR];
    if (a->v[LRN_NSIZE].i < 1 || a->v[LRN_NSIZE].i % 2 == 0)
        return hg_error(HG_ERR_VALUE, "%s: nsize must be a positive odd number, got %lld", op->name,
                        (long long)a->v[LRN_NSIZE].i);
    if (x->ndim >= 0 && x->dtype != HG_DTYPE_F32 && x->dtype != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: data must be float32 or float64, got %s", op->name,
                        hg_dtype_name(x->dtype));
    if (x->ndim >= 0 && x->ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D (batch, channel, height, width), got %s", op->name,
                        hg_shape_str(b, x->ndim, x->shape));
    return HG_OK;
}

static hg_status lrn_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    for (int i = 0; i < nout; i++) out[i] = in[0];
    return lrn_check(op, a, &in[0]);
}

typedef struct {
    const void *x, *dy, *norm, *t;
    void *y, *out; /* forward: y and norm; backward: dx (out) and the scratch t (y) */
    int64_t c, hw;
    double salpha, beta, knorm;
    int64_t half;
} lrn_job;

/* Sum over the window of channel k of f(plane c), as a running loop over the planes. */
#define LRN_KERNELS(T)                                                                          \
    static void lrn_fwd_##T(void *ctx, int64_t p0, int64_t p1)                                  \
    {                                                                                           \
        const lrn_job *j = ctx;                                                                 \
        const T *x = j->x;                                                                      \
        T *y = j->y, *norm = j->out;                                                            \
        for (int64_t p = p0; p < p1; p++) {                                                     \
            const int64_t n = p / j->c, k = p % j->c, o = p * j->hw;                            \
            const int64_t lo = k - j->half < 0 ? 0 : k - j->half;                               \
            const int64_t hi = k + j->half >= j->c ? j->c - 1 : k + j->half;                    \
            for (int64_t i = 0; i < j->hw; i++) norm[o + i] = 0;                                \
            for (int64_t c = lo; c <= hi; c++) {                                                \
                const T *xc = x + (n * j->c + c) * j->hw;                                       \
                for (int64_t i = 0; i < j->hw; i++) norm[o + i] += xc[i] * xc[i];               \
            }                                                                                   \
            for (int64_t i = 0; i < j->hw; i++) {                                               \
                norm[o + i] = (T)(norm[o + i] * (T)j->salpha + (T)j->knorm);                    \
                y[o + i] = (T)(x[o + i] * pow(norm[o + i], (T)-j->beta));                       \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* t = dy * x * norm^(-beta - 1), per plane */                                              \
    static void lrn_bwd_t_##T(void *ctx, int64_t p0, int64_t p1)                                \
    {                                                                                           \
        const lrn_job *j = ctx;                                                                 \
        const T *x = j->x, *dy = j->dy, *norm = j->norm;                                        \
        T *t = j->y;                                                                            \
        for (int64_t i = p0 * j->hw; i < p1 * j->hw; i++)                                       \
            t[i] = (T)(dy[i] * x[i] * pow(norm[i], (T)(-j->beta - 1)));                         \
    }                                                                                           \
    static void lrn_bwd_##T(void *ctx, int64_t p0, int64_t p1)                                  \
    {                                                                                           \
        const lrn_job *j = ctx;                                                                 \
        const T *x = j->x, *dy = j->dy, *norm = j->norm, *t = j->t;                             \
        T *dx = j->out;                                                                         \
        const T sc = (T)(-2.0 * j->beta * j->salpha);                                           \
        for (int64_t p = p0; p < p1; p++) {                                                     \
            const int64_t n = p / j->c, k = p % j->c, o = p * j->hw;                            \
            const int64_t lo = k - j->half < 0 ? 0 : k - j->half;                               \
            const int64_t hi = k + j->half >= j->c ? j->c - 1 : k + j->half;                    \
            for (int64_t i = 0; i < j->hw; i++) dx[o + i] = 0;                                  \
            for (int64_t c = lo; c <= hi; c++) {                                                \
                const T *tc = t + (n * j->c + c) * j->hw;                                       \
                for (int64_t i = 0; i < j->hw; i++) dx[o + i] += tc[i];                         \
            }                                                                                   \
            for (int64_t i = 0; i < j->hw; i++)                                                 \
                dx[o + i] = (T)(dy[o + i] * pow(norm[o + i], (T)-j->beta) +                     \
                                sc * dx[o + i] * x[o + i]);                                     \
        }                                                                                       \
    }
LRN_KERNELS(float)
LRN_KERNELS(double)

static lrn_job lrn_setup(const hg_attrs *a, const hg_tensor *x)
{
    /* MXNet's parameters are floats: alpha / nsize is computed in float */
    lrn_job j = {.c = x->shape[1],
                 .hw = x->shape[2] * x->shape[3],
                 .salpha = (float)((float)a->v[LRN_ALPHA].f / (float)a->v[LRN_NSIZE].i),
                 .beta = (float)a->v[LRN_BETA].f,
                 .knorm = (float)a->v[LRN_KNORM].f,
                 .half = a->v[LRN_NSIZE].i / 2};
    return j;
}

static int64_t lrn_grain(const lrn_job *j) { return 16384 / (j->hw + 1) + 1; }

static hg_status lrn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    if (x->size == 0) return HG_OK;
    lrn_job j = lrn_setup(a, x);
    j.x = hg_data(x);
    j.y = hg_data(out[0]);
    j.out = hg_data(out[1]);
    int64_t planes = x->shape[0] * j.c;
    hg_parallel_for(planes, lrn_grain(&j),
                    x->dtype == HG_DTYPE_F32 ? lrn_fwd_float : lrn_fwd_double, &j);
    return HG_OK;
}

/* _backward_LRN(ograd, data, norm) */
static hg_status lrn_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nout;
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    for (int i = 0; i < nin; i++) {
        hg_status s = lrn_check(op, a, &in[i]);
        if (s != HG_OK) return s;
        if (i && in[0].ndim >= 0 && in[i].ndim >= 0 &&
            (in[i].dtype != in[0].dtype ||
             !hg_shape_equal(in[0].ndim, in[0].shape, in[i].ndim, in[i].shape)))
            return hg_error(HG_ERR_VALUE, "%s: input %d is %s %s, ograd %s %s", op->name, i,
                            hg_shape_str(b1, in[i].ndim, in[i].shape), hg_dtype_name(in[i].dtype),
                            hg_shape_str(b2, in[0].ndim, in[0].shape), hg_dtype_name(in[0].dtype));
    }
    out[0] = in[1];
    return HG_OK;
}

static size_t lrn_bwd_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)a;
    (void)nin;
    return (size_t)hg_shape_size(in[1].ndim, in[1].shape) * hg_dtype_size(in[1].dtype);
}

static hg_status lrn_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[1];
    if (x->size == 0) return HG_OK;
    lrn_job j = lrn_setup(a, x);
    j.dy = hg_data(in[0]);
    j.x = hg_data(x);
    j.norm = hg_data(in[2]);
    j.y = ctx->workspace; /* t, written by the first pass */
    j.t = ctx->workspace;
    j.out = hg_data(out[0]);
    const bool f32 = x->dtype == HG_DTYPE_F32;
    int64_t planes = x->shape[0] * j.c;
    hg_parallel_for(planes, lrn_grain(&j), f32 ? lrn_bwd_t_float : lrn_bwd_t_double, &j);
    hg_parallel_for(planes, lrn_grain(&j), f32 ? lrn_bwd_float : lrn_bwd_double, &j);
    return HG_OK;
}

static hg_status lrn_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_LRN", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_out(g, 1)),
                      NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---- Crop --------------------------------------------------------------------------------- */

static const hg_attr_spec k_crop_attrs[] = {
    [CR_NUM_ARGS] = {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                     "1: crop to h_w; 2: crop to the height and width of the second input "
                     "(crop_like)",
                     NULL},
    [CR_OFFSET] = {"offset", HG_ATTR_TUPLE, 0, "(0, 0)", "crop offset (y, x)", NULL},
    [CR_H_W] = {"h_w", HG_ATTR_TUPLE, 0, "(0, 0)", "crop height and width (h, w)", NULL},
    [CR_CENTER] = {"center_crop", HG_ATTR_BOOL, 0, "False", "crop the centre (offset ignored)",
                   NULL},
};
_Static_assert(HG_COUNT(k_crop_attrs) == CR_NATTRS, "k_crop_attrs must match its enum");

/* The output height/width and offset for data x (4-D) and, with num_args 2, crop_like. */
static hg_status crop_geometry(const hg_op_def *op, const hg_attrs *a, const hg_meta *x,
                               const hg_meta *like, int64_t *hw, int64_t *off)
{
    char b1[HG_SHAPE_STR];
    const hg_tuple *o = &a->v[CR_OFFSET].t, *h = &a->v[CR_H_W].t;
    if (o->n != 2 || h->n != 2)
        return hg_error(HG_ERR_VALUE, "%s: offset and h_w must have 2 entries", op->name);
    if (like) {
        if (like->ndim != 4)
            return hg_error(HG_ERR_VALUE, "%s: crop_like must be 4-D, got %s", op->name,
                            hg_shape_str(b1, like->ndim, like->shape));
        hw[0] = like->shape[2];
        hw[1] = like->shape[3];
    } else {
        hw[0] = h->v[0];
        hw[1] = h->v[1];
        if (hw[0] < 1 || hw[1] < 1)
            return hg_error(HG_ERR_VALUE, "%s: h_w must be at least (1, 1), got (%lld, %lld)",
                            op->name, (long long)hw[0], (long long)hw[1]);
    }
    for (int d = 0; d < 2; d++) {
        int64_t room = x->shape[2 + d] - hw[d];
        if (room < 0)
            return hg_error(HG_ERR_VALUE, "%s: cannot crop %s to %s %lld", op->name,
                            hg_shape_str(b1, x->ndim, x->shape), d ? "width" : "height",
                            (long long)hw[d]);
        off[d] = a->v[CR_CENTER].b ? room / 2 : o->v[d];
        if (off[d] < 0 || off[d] > room)
            return hg_error(HG_ERR_VALUE,
                            "%s: offset[%d] = %lld is outside 0..%lld for data of shape %s",
                            op->name, d, (long long)off[d], (long long)room,
                            hg_shape_str(b1, x->ndim, x->shape));
    }
    return HG_OK;
}

static hg_status crop_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nout;
    char b1[HG_SHAPE_STR];
    int64_t hw[2], off[2];
    if (a->v[CR_NUM_ARGS].i != 1 && a->v[CR_NUM_ARGS].i != 2)
        return hg_error(HG_ERR_VALUE, "%s: num_args must be 1 or 2, got %lld", op->name,
                        (long long)a->v[CR_NUM_ARGS].i);
    out[0] = in[0];
    if (in[0].ndim < 0 || (nin == 2 && in[1].ndim < 0)) {
        out[0].ndim = -1;
        return HG_OK;
    }
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D (batch, channel, height, width), got %s", op->name,
                        hg_shape_str(b1, in[0].ndim, in[0].shape));
    hg_status s = crop_geometry(op, a, &in[0], nin == 2 ? &in[1] : NULL, hw, off);
    if (s != HG_OK) return s;
    out[0].shape[2] = hw[0];
    out[0].shape[3] = hw[1];
    return HG_OK;
}

static hg_meta meta_of(const hg_tensor *t)
{
    hg_meta m = {.ndim = t->ndim, .dtype = t->dtype};
    memcpy(m.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return m;
}

/* Copies the (h, w) window at off of big (H, W) planes to or from small ones. */
static void crop_copy(const hg_tensor *big, const hg_tensor *small, const int64_t *off,
                      bool to_small)
{
    const size_t es = hg_dtype_size(big->dtype);
    const int64_t planes = big->shape[0] * big->shape[1], bh = big->shape[2], bw = big->shape[3];
    const int64_t h = small->shape[2], w = small->shape[3];
    char *b = hg_data(big), *s = hg_data(small);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t r = 0; r < h; r++) {
            char *bp = b + (size_t)((p * bh + r + off[0]) * bw + off[1]) * es;
            char *sp = s + (size_t)((p * h + r) * w) * es;
            memcpy(to_small ? sp : bp, to_small ? bp : sp, (size_t)w * es);
        }
}

static hg_status crop_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    int64_t hw[2], off[2];
    hg_meta x = meta_of(in[0]), like;
    if (nin == 2) like = meta_of(in[1]);
    hg_status s = crop_geometry(op, a, &x, nin == 2 ? &like : NULL, hw, off);
    if (s == HG_OK && out[0]->size) crop_copy(in[0], out[0], off, true);
    return s;
}

/* _backward_Crop(ograd, data): zeros of data's shape with ograd at the crop window. */
static hg_status crop_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    hg_meta y;
    hg_status s = crop_infer(op, a, 2, (hg_meta[]){in[1], in[0]}, 1, &y);
    if (s != HG_OK) return s;
    out[0] = in[1];
    out[0].dtype = in[0].dtype;
    if (in[0].ndim < 0 || in[1].ndim < 0) return HG_OK;
    if (in[0].dtype != in[1].dtype || !hg_shape_equal(in[0].ndim, in[0].shape, y.ndim, y.shape))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s %s does not fit data %s %s", op->name,
                        hg_shape_str(b1, in[0].ndim, in[0].shape), hg_dtype_name(in[0].dtype),
                        hg_shape_str(b2, in[1].ndim, in[1].shape), hg_dtype_name(in[1].dtype));
    return HG_OK;
}

static hg_status crop_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t hw[2], off[2];
    hg_meta x = meta_of(in[1]), like = meta_of(in[0]);
    hg_status s = crop_geometry(op, a, &x, &like, hw, off);
    if (s != HG_OK) return s;
    hg_ops_zero_fill(out[0]);
    if (in[0]->size) crop_copy(out[0], in[0], off, false);
    return HG_OK;
}

/* The data gets ograd back in place; crop_like only lends its shape (no gradient). The
 * backward reads the crop window from ograd's shape, so it takes the forward's attributes with
 * num_args 2 (ograd as crop_like). */
static hg_status crop_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_Crop", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)),
                      HG_KV("num_args", "2"), 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

const hg_op_def hg_ops_legacy_nn[] = {
    {.name = "LRN",
     .doc = "local response normalisation across channels: x * (knorm + alpha / nsize * "
            "window sum of x^2)^-beta",
     .input_names = HG_NAMES("data"),
     .output_names = HG_NAMES("output", "tmp_norm"),
     .attrs = k_lrn_attrs,
     .num_attrs = HG_COUNT(k_lrn_attrs),
     .num_inputs = 1,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .infer = lrn_infer,
     .forward = lrn_forward,
     .grad = lrn_grad},
    {.name = "_backward_LRN",
     .doc = "gradient of LRN from (ograd, data, tmp_norm)",
     .input_names = HG_NAMES("ograd", "data", "tmp_norm"),
     .attrs = k_lrn_attrs,
     .num_attrs = HG_COUNT(k_lrn_attrs),
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = lrn_bwd_infer,
     .forward = lrn_bwd_forward,
     .workspace = lrn_bwd_ws},
    {.name = "Crop",
     .doc = "crops 4-D data (NCHW) to h_w or to crop_like's height and width, at offset or "
            "centred",
     .input_names = HG_NAMES("data"),
     .attrs = k_crop_attrs,
     .num_attrs = HG_COUNT(k_crop_attrs),
     .flags = HG_OP_VARARGS,
     .num_outputs = 1,
     .infer = crop_infer,
     .forward = crop_forward,
     .grad = crop_grad},
    {.name = "_backward_Crop",
     .doc = "gradient of Crop: zeros of data's shape with ograd at the crop window",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_crop_attrs,
     .num_attrs = HG_COUNT(k_crop_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = crop_bwd_infer,
     .forward = crop_bwd_forward},
    {0},
};
