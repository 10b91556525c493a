/* MXNet's output (loss) layers: SoftmaxOutput, the three RegressionOutputs, SVMOutput and
 * MakeLoss, plus softmax_cross_entropy and the element-wise hard_sigmoid and smooth_l1.
 *
 * An output layer's forward is a prediction (softmax, identity, sigmoid) and its backward is the
 * gradient of the loss it stands for, computed from the output and the label: the head gradient
 * is ignored (SoftmaxOutput's out_grad=True multiplies by what MXNet 1.9.1 passes there, the
 * output itself). In the gradient graph that is simply a rule that never reads hg_g_ograd: it
 * emits a _backward_X op over (output, label) or (data). The label gets no gradient (unset:
 * zeros where one is asked for). These layers are small next to the layers that feed them, so
 * their backward kernels read any float dtype through double one element at a time.
 */
#include <math.h>
#include <string.h>

#include "core/half.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/ew.h"
#include "ops/legacy_output.h"
#include "ops/ops_util.h"
#include "ops/softmax.h"

typedef uint16_t f16;

/* Any dtype as double (labels may be integer), and stores into a float tensor. */
static double ld(const hg_tensor *t, int64_t i)
{
    const void *p = hg_data(t);
    switch (t->dtype) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return hg_half_to_float(((const f16 *)p)[i]);
    case HG_DTYPE_U8: return ((const uint8_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static void st(hg_tensor *t, int64_t i, double v)
{
    void *p = hg_data(t);
    if (t->dtype == HG_DTYPE_F32) ((float *)p)[i] = (float)v;
    else if (t->dtype == HG_DTYPE_F64) ((double *)p)[i] = v;
    else ((f16 *)p)[i] = hg_float_to_half((float)v);
}

/* Rounds v through the tensor's dtype (MXNet multiplies by a scale cast to DType). */
static double as_dtype(hg_dtype dt, double v)
{
    if (dt == HG_DTYPE_F32) return (float)v;
    if (dt == HG_DTYPE_F16) return hg_half_to_float(hg_float_to_half((float)v));
    return v;
}

static hg_status need_float(const hg_op_def *op, const char *what, const hg_meta *m)
{
    if (m->ndim >= 0 && !hg_is_float(m->dtype))
        return hg_error(HG_ERR_TYPE, "%s: %s must be float16, float32 or float64, got %s", op->name,
                        what, hg_dtype_name(m->dtype));
    return HG_OK;
}

static hg_status need_label_dtype(const hg_op_def *op, const hg_meta *m)
{
    if (m->ndim >= 0 && m->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: label must be a numeric array, got bool", op->name);
    return HG_OK;
}

/* Label metas: fills an unknown label with `want` (data's dtype) and otherwise checks it. */
static hg_status label_expect(const hg_op_def *op, const hg_meta *x, hg_meta *lab, int nd,
                              const int64_t *want)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR], b3[HG_SHAPE_STR];
    if (hg_meta_merge(lab, lab->ndim >= 0 ? lab->dtype : x->dtype, nd, want)) return HG_OK;
    return hg_error(HG_ERR_VALUE, "%s: label of shape %s expected for data of shape %s, got %s",
                    op->name, hg_shape_str(b1, nd, want), hg_shape_str(b2, x->ndim, x->shape),
                    hg_shape_str(b3, lab->ndim, lab->shape));
}

static hg_status copy_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    if (hg_data(in[0]) != hg_data(out[0]))
        memcpy(hg_data(out[0]), hg_data(in[0]), (size_t)in[0]->size * hg_dtype_size(in[0]->dtype));
    return HG_OK;
}

/* The output ops' rule: input 0 gets op `name` over the forward's (output, label) (or, for
 * MakeLoss, its data), with the forward's attributes; the head gradient is never read. */
static hg_status loss_grad(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, name, nin, in, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxOutput (alias Softmax). The softmax runs over axis 1 (multi_output: data viewed as
 * [n, k, rest]), over the last axis (preserve_shape), or over data viewed as [n, size / n].
 * The backward is softmax minus the one-hot label (or minus the label itself when it has the
 * data's shape: a probability label), with label smoothing, ignored labels and MXNet's
 * normalisations.
 */

static const char *const k_norms[] = {"null", "batch", "valid", NULL};

static const hg_attr_spec k_so_attrs[] = {
    [SO_GRAD_SCALE] = {"grad_scale", HG_ATTR_FLOAT, 0, "1", "scales the gradient", NULL},
    [SO_IGNORE_LABEL] = {"ignore_label", HG_ATTR_FLOAT, 0, "-1",
                         "label whose instances get no gradient when use_ignore is set", NULL},
    [SO_MULTI_OUTPUT] = {"multi_output", HG_ATTR_BOOL, 0, "False",
                         "softmax over axis 1, one label per trailing position", NULL},
    [SO_USE_IGNORE] = {"use_ignore", HG_ATTR_BOOL, 0, "False",
                       "instances labelled ignore_label get no gradient", NULL},
    [SO_PRESERVE_SHAPE] = {"preserve_shape", HG_ATTR_BOOL, 0, "False", "softmax over the last axis",
                           NULL},
    [SO_NORMALIZATION] = {"normalization", HG_ATTR_ENUM, 0, "null",
                          "gradient normalisation: null, batch (batch size) or valid (number "
                          "of labels that are not ignore_label)",
                          k_norms},
    [SO_OUT_GRAD] = {"out_grad", HG_ATTR_BOOL, 0, "False",
                     "multiplies the gradient by the value MXNet passes as output gradient "
                     "(the output)",
                     NULL},
    [SO_SMOOTH_ALPHA] = {"smooth_alpha", HG_ATTR_FLOAT, 0, "0",
                         "label smoothing: alpha taken from the true class and spread over the "
                         "others",
                         NULL},
};
_Static_assert(HG_COUNT(k_so_attrs) == SO_NATTRS, "k_so_attrs must match its enum");

static hg_status so_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR], b3[HG_SHAPE_STR];
    hg_meta *x = &in[0], *lab = &in[1];
    hg_status st = need_float(op, "data", x);
    if (st == HG_OK) st = need_label_dtype(op, lab);
    if (st != HG_OK) return st;
    if (a->v[SO_SMOOTH_ALPHA].f < 0 || a->v[SO_SMOOTH_ALPHA].f > 1)
        return hg_error(HG_ERR_VALUE, "%s: smooth_alpha must be in [0, 1], got %g", op->name,
                        a->v[SO_SMOOTH_ALPHA].f);
    out[0] = *x;
    if (x->ndim < 0) return HG_OK;
    const int nd = x->ndim;
    bool multi = a->v[SO_MULTI_OUTPUT].b;
    if (nd < (multi ? 2 : 1))
        return hg_error(HG_ERR_VALUE, "%s: data must have at least %d dimensions, got %s", op->name,
                        multi ? 2 : 1, hg_shape_str(b1, nd, x->shape));
    if (lab->ndim >= 0 && hg_shape_equal(nd, x->shape, lab->ndim, lab->shape))
        return HG_OK; /* a probability label */
    if (!multi) {
        if (nd == 1 && lab->ndim < 0)
            return hg_error(HG_ERR_VALUE, "%s: data of shape %s needs a label of its shape",
                            op->name, hg_shape_str(b1, nd, x->shape));
        return label_expect(op, x, lab, nd - 1 ? nd - 1 : 1, x->shape);
    }
    /* multi_output: (n, rest), (n, d2, d3, ...) or (n, 1, d2, ...) */
    int64_t rest = 1, l2[HG_MAX_NDIM], l3[HG_MAX_NDIM];
    for (int d = 2; d < nd; d++) rest *= x->shape[d];
    int64_t l1[2] = {x->shape[0], rest};
    l2[0] = x->shape[0];
    for (int d = 2; d < nd; d++) l2[d - 1] = x->shape[d];
    memcpy(l3, x->shape, sizeof(int64_t) * (size_t)nd);
    l3[1] = 1;
    if (lab->ndim < 0) return label_expect(op, x, lab, 2, l1);
    if (hg_shape_equal(lab->ndim, lab->shape, 2, l1) ||
        hg_shape_equal(lab->ndim, lab->shape, nd - 1, l2) ||
        hg_shape_equal(lab->ndim, lab->shape, nd, l3))
        return HG_OK;
    return hg_error(HG_ERR_VALUE,
                    "%s: label of shape %s or %s expected for data of shape %s, got %s", op->name,
                    hg_shape_str(b1, 2, l1), hg_shape_str(b2, nd - 1, l2),
                    hg_shape_str(b3, nd, x->shape), hg_shape_str(b1, lab->ndim, lab->shape));
}

/* The [outer, n, inner] view the softmax runs over. */
static void so_view(const hg_attrs *a, const hg_tensor *x, int64_t *n, int64_t *inner)
{
    *inner = 1;
    if (a->v[SO_MULTI_OUTPUT].b) {
        *n = x->shape[1];
        for (int d = 2; d < x->ndim; d++) *inner *= x->shape[d];
    } else if (a->v[SO_PRESERVE_SHAPE].b) {
        *n = x->shape[x->ndim - 1];
    } else {
        *n = x->shape[0] ? x->size / x->shape[0] : 0;
    }
}

static hg_status so_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t n, inner;
    so_view(a, in[0], &n, &inner);
    hg_softmax_view(in[0], out[0], n, inner, 1.0, false);
    return HG_OK;
}

static hg_status so_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    hg_meta y = in[0], lab = in[1];
    hg_status st = so_infer(op, a, nin, in, nout, out);
    in[0] = y;
    in[1] = lab;
    return st;
}

/* A label value as the class MXNet's kernels read (static_cast<int>); values no int holds
 * (and NaN) name no class. */
static int64_t as_class(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (int64_t)(int)v : INT64_MIN;
}

static bool so_ignored(const hg_attrs *a, double label)
{
    return a->v[SO_USE_IGNORE].b && as_class(label) == as_class(a->v[SO_IGNORE_LABEL].f);
}

/* The number the gradient is divided by: MXNet counts labels that are not ignore_label for
 * 'valid' (whether or not use_ignore is set), at least 1. */
static double so_count(const hg_attrs *a, const hg_tensor *lab, int64_t nlab, int64_t batch)
{
    if (a->v[SO_NORMALIZATION].i == NORM_BATCH) return (double)batch;
    if (a->v[SO_NORMALIZATION].i != NORM_VALID) return 1;
    int64_t valid = nlab;
    for (int64_t i = 0; i < nlab; i++)
        if (as_class(ld(lab, i)) == as_class(a->v[SO_IGNORE_LABEL].f)) valid--;
    return valid ? (double)valid : 1;
}

static hg_status so_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *y = in[0], *lab = in[1];
    hg_tensor *dx = out[0];
    const double gs = a->v[SO_GRAD_SCALE].f;
    const bool og = a->v[SO_OUT_GRAD].b;
    if (y->size == 0) return HG_OK;
    if (hg_shape_equal(y->ndim, y->shape, lab->ndim, lab->shape)) {
        for (int64_t i = 0; i < y->size; i++) {
            double v = ld(y, i), g = (v - ld(lab, i)) * gs;
            st(dx, i, og ? g * v : g);
        }
        return HG_OK;
    }
    int64_t n, inner, rows;
    so_view(a, y, &n, &inner);
    rows = y->size / (n * inner);
    const double alpha = a->v[SO_MULTI_OUTPUT].b ? 0 : a->v[SO_SMOOTH_ALPHA].f;
    const double other = n > 1 ? alpha / (double)(n - 1) : 0;
    double scale;
    if (a->v[SO_MULTI_OUTPUT].b) {
        double cnt = so_count(a, lab, lab->size, y->shape[0]);
        double per = a->v[SO_NORMALIZATION].i == NORM_VALID ? 1 : (double)inner;
        scale = as_dtype(y->dtype, gs / per / cnt);
    } else {
        scale = as_dtype(y->dtype, gs / so_count(a, lab, lab->size, lab->size));
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < inner; c++) {
            const double l = ld(lab, r * inner + c);
            const int64_t k = as_class(l), base = r * n * inner + c;
            const bool skip = so_ignored(a, l);
            for (int64_t j = 0; j < n; j++) {
                const int64_t i = base + j * inner;
                const double v = ld(y, i);
                double g = skip ? 0 : j == k ? v - 1 + alpha : v - other;
                g = as_dtype(y->dtype, g) * scale;
                st(dx, i, og ? g * v : g);
            }
        }
    return HG_OK;
}

static hg_status so_grad(hg_grad_ctx *g)
{
    return loss_grad(g, "_backward_SoftmaxOutput", HG_GIN(hg_g_out(g, 0), hg_g_in(g, 1)));
}

/* ---------------------------------------------------------------------------------------------
 * LinearRegressionOutput, MAERegressionOutput, LogisticRegressionOutput: forward identity
 * (sigmoid for the logistic one); backward (out - label) (sign(out - label), -1 at 0, for MAE)
 * times grad_scale / m, m the number of outputs per example (label size / label rows). Their
 * _backward_ ops take (label, output) as MXNet's do.
 */

static const hg_attr_spec k_rg_attrs[] = {
    [RG_GRAD_SCALE] = {"grad_scale", HG_ATTR_FLOAT, 0, "1", "scales the gradient", NULL},
};
_Static_assert(HG_COUNT(k_rg_attrs) == RG_NATTRS, "k_rg_attrs must match its enum");

static hg_status rg_check(const hg_op_def *op, hg_meta *x, hg_meta *lab)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    hg_status st = need_float(op, "data", x);
    if (st == HG_OK) st = need_label_dtype(op, lab);
    if (st != HG_OK || x->ndim < 0) return st;
    if (x->ndim == 0)
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 1 dimension", op->name);
    if (lab->ndim < 0) { /* (n, 1) data takes a 1-D label by default, as in MXNet */
        int64_t n = x->shape[0];
        bool col = x->ndim == 2 && x->shape[1] == 1;
        return label_expect(op, x, lab, col ? 1 : x->ndim, col ? &n : x->shape);
    }
    int64_t lsize = 1;
    for (int d = 0; d < lab->ndim; d++) lsize *= lab->shape[d];
    if (lab->ndim == 0 || lab->shape[0] != x->shape[0] || lsize != hg_shape_size(x->ndim, x->shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: label of shape %s does not fit data of shape %s (same first "
                        "dimension and size expected)",
                        op->name, hg_shape_str(b1, lab->ndim, lab->shape),
                        hg_shape_str(b2, x->ndim, x->shape));
    return HG_OK;
}

static hg_status rg_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    out[0] = in[0];
    return rg_check(op, &in[0], &in[1]);
}

static hg_status rg_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    hg_meta y = in[1], lab = in[0];
    out[0] = in[1];
    return rg_check(op, &y, &lab);
}

static hg_status sigmoid_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    for (int64_t i = 0; i < in[0]->size; i++) st(out[0], i, 1 / (1 + exp(-ld(in[0], i))));
    return HG_OK;
}

static hg_status rg_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *lab = in[0], *y = in[1];
    if (y->size == 0) return HG_OK;
    const bool mae = strcmp(op->name, "_backward_mae_reg_out") == 0;
    const double m = (double)(lab->size / lab->shape[0]);
    const double scale = as_dtype(y->dtype, (float)(a->v[RG_GRAD_SCALE].f / m));
    for (int64_t i = 0; i < y->size; i++) {
        double d = ld(y, i) - ld(lab, i);
        st(out[0], i, as_dtype(y->dtype, mae ? (d > 0 ? 1 : -1) : d) * scale);
    }
    return HG_OK;
}

static hg_status rg_grad_named(hg_grad_ctx *g, const char *name)
{
    return loss_grad(g, name, HG_GIN(hg_g_in(g, 1), hg_g_out(g, 0)));
}
static hg_status linreg_grad(hg_grad_ctx *g)
{
    return rg_grad_named(g, "_backward_linear_reg_out");
}
static hg_status maereg_grad(hg_grad_ctx *g) { return rg_grad_named(g, "_backward_mae_reg_out"); }
static hg_status logreg_grad(hg_grad_ctx *g)
{
    return rg_grad_named(g, "_backward_logistic_reg_out");
}

/* ---------------------------------------------------------------------------------------------
 * SVMOutput: forward identity; backward the hinge (use_linear) or squared hinge loss gradient
 * over data viewed as [rows, classes], one label per row.
 */

static const hg_attr_spec k_sv_attrs[] = {
    [SV_MARGIN] = {"margin", HG_ATTR_FLOAT, 0, "1", "the margin of the hinge", NULL},
    [SV_REG] = {"regularization_coefficient", HG_ATTR_FLOAT, 0, "1",
                "scales the gradient (the SVM's regularisation parameter)", NULL},
    [SV_USE_LINEAR] = {"use_linear", HG_ATTR_BOOL, 0, "False",
                       "L1-SVM (hinge) instead of L2-SVM (squared hinge)", NULL},
};
_Static_assert(HG_COUNT(k_sv_attrs) == SV_NATTRS, "k_sv_attrs must match its enum");

static hg_status sv_check(const hg_op_def *op, hg_meta *x, hg_meta *lab)
{
    char b1[HG_SHAPE_STR];
    hg_status st = need_float(op, "data", x);
    if (st == HG_OK) st = need_label_dtype(op, lab);
    if (st != HG_OK || x->ndim < 0) return st;
    if (x->ndim < 2)
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 2 dimensions, got %s", op->name,
                        hg_shape_str(b1, x->ndim, x->shape));
    return label_expect(op, x, lab, x->ndim - 1, x->shape);
}

static hg_status sv_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    out[0] = in[0];
    return sv_check(op, &in[0], &in[1]);
}

static hg_status sv_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    hg_meta y = in[0], lab = in[1];
    out[0] = in[0];
    return sv_check(op, &y, &lab);
}

static hg_status sv_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *y = in[0], *lab = in[1];
    if (y->size == 0) return HG_OK;
    const hg_dtype dt = y->dtype;
    const double mg = as_dtype(dt, a->v[SV_MARGIN].f), rc = as_dtype(dt, a->v[SV_REG].f);
    const int64_t n = y->shape[y->ndim - 1], rows = y->size / n;
    const bool l1 = a->v[SV_USE_LINEAR].b;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t k = as_class(ld(lab, r));
        for (int64_t j = 0; j < n; j++) {
            const double v = ld(y, r * n + j);
            double g;
            if (j == k) g = l1 ? -(double)(mg > v) * rc : -rc * (mg > v ? 2 * (mg - v) : 0);
            else g = l1 ? (double)(mg > -v) * rc : -rc * (mg > -v ? -2 * (mg + v) : 0);
            st(out[0], r * n + j, g);
        }
    }
    return HG_OK;
}

static hg_status sv_grad(hg_grad_ctx *g)
{
    return loss_grad(g, "_backward_SVMOutput", HG_GIN(hg_g_out(g, 0), hg_g_in(g, 1)));
}

/* ---------------------------------------------------------------------------------------------
 * MakeLoss: forward identity; the gradient is grad_scale, divided by the rows of data viewed
 * as 2-D (batch) or by the number of elements above valid_thresh, at least 1 (valid).
 */

static const hg_attr_spec k_ml_attrs[] = {
    [ML_GRAD_SCALE] = {"grad_scale", HG_ATTR_FLOAT, 0, "1", "the gradient's value", NULL},
    [ML_VALID_THRESH] = {"valid_thresh", HG_ATTR_FLOAT, 0, "0",
                         "elements above it count as valid (normalization 'valid')", NULL},
    [ML_NORMALIZATION] = {"normalization", HG_ATTR_ENUM, 0, "null",
                          "null, batch (divide by the batch size) or valid (by the number of "
                          "valid elements)",
                          k_norms},
};
_Static_assert(HG_COUNT(k_ml_attrs) == ML_NATTRS, "k_ml_attrs must match its enum");

static hg_status ml_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    out[0] = in[0];
    return need_float(op, "data", &in[0]);
}

static hg_status ml_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    if (x->size == 0) return HG_OK;
    double g = a->v[ML_GRAD_SCALE].f;
    if (a->v[ML_NORMALIZATION].i == NORM_BATCH) {
        g /= (double)(x->ndim ? x->size / x->shape[x->ndim - 1] : 1);
    } else if (a->v[ML_NORMALIZATION].i == NORM_VALID) {
        const double th = as_dtype(x->dtype, a->v[ML_VALID_THRESH].f);
        int64_t cnt = 0;
        for (int64_t i = 0; i < x->size; i++) cnt += ld(x, i) > th;
        g = as_dtype(x->dtype, g) / as_dtype(x->dtype, (double)(cnt ? cnt : 1));
    }
    for (int64_t i = 0; i < x->size; i++) st(out[0], i, g);
    return HG_OK;
}

static hg_status ml_grad(hg_grad_ctx *g)
{
    return loss_grad(g, "_backward_MakeLoss", HG_GIN(hg_g_in(g, 0)));
}

/* ---------------------------------------------------------------------------------------------
 * softmax_cross_entropy(data (n, k), label (n,)) = sum_i -log(max(softmax(data_i)[label_i],
 * 1e-8)), of shape (1,). Its gradient (softmax - one_hot(label)) times the head gradient.
 */

static hg_status sce_check(const hg_op_def *op, hg_meta *x, hg_meta *lab)
{
    char b1[HG_SHAPE_STR];
    hg_status st = need_float(op, "data", x);
    if (st == HG_OK) st = need_label_dtype(op, lab);
    if (st != HG_OK || x->ndim < 0) return st;
    if (x->ndim != 2)
        return hg_error(HG_ERR_VALUE, "%s: data must be 2-D, got %s", op->name,
                        hg_shape_str(b1, x->ndim, x->shape));
    return label_expect(op, x, lab, 1, x->shape);
}

static hg_status sce_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    out[0] = (hg_meta){.ndim = 1, .dtype = in[0].dtype, .shape = {1}};
    if (in[0].ndim < 0) out[0].ndim = -1;
    return sce_check(op, &in[0], &in[1]);
}

/* Label values must name a class: checked where the kernel reads them. */
static hg_status sce_labels(const hg_op_def *op, const hg_tensor *lab, int64_t k)
{
    for (int64_t i = 0; i < lab->size; i++) {
        double l = ld(lab, i);
        if (!(l >= 0 && l < (double)k))
            return hg_error(HG_ERR_INDEX, "%s: label %g at %lld is not a class of 0..%lld",
                            op->name, l, (long long)i, (long long)(k - 1));
    }
    return HG_OK;
}

/* softmax of data into a tensor of its own shape and dtype (caller releases it). */
static hg_status sce_softmax(const hg_tensor *x, hg_tensor **p)
{
    hg_status s = hg_tensor_new(x->ndim, x->shape, x->dtype, p);
    if (s != HG_OK) return s;
    hg_softmax_view(x, *p, x->shape[1], 1, 1.0, false);
    return HG_OK;
}

static hg_status sce_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0], *lab = in[1];
    const int64_t n = x->shape[0], k = x->shape[1];
    hg_tensor *p = NULL;
    double loss = 0;
    hg_status s = sce_labels(op, lab, k);
    if (s == HG_OK && x->size) s = sce_softmax(x, &p);
    if (s != HG_OK) return s;
    for (int64_t i = 0; i < n && p; i++) {
        double v = as_dtype(x->dtype, ld(p, i * k + (int64_t)ld(lab, i)));
        loss += -log(v > 1e-8 ? v : as_dtype(x->dtype, 1e-8));
    }
    if (p) hg_tensor_free(p);
    st(out[0], 0, loss);
    return HG_OK;
}

static hg_status sce_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char b1[HG_SHAPE_STR];
    out[0] = in[1];
    if (in[0].ndim >= 0 && hg_shape_size(in[0].ndim, in[0].shape) != 1)
        return hg_error(HG_ERR_VALUE, "%s: ograd must hold one value, got shape %s", op->name,
                        hg_shape_str(b1, in[0].ndim, in[0].shape));
    return sce_check(op, &in[1], &in[2]);
}

static hg_status sce_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[1], *lab = in[2];
    const int64_t n = x->shape[0], k = x->shape[1];
    hg_tensor *p = NULL;
    if (x->size == 0) return HG_OK;
    hg_status s = sce_labels(op, lab, k);
    if (s == HG_OK) s = sce_softmax(x, &p);
    if (s != HG_OK) return s;
    const double dy = ld(in[0], 0);
    for (int64_t i = 0; i < n; i++) {
        const int64_t c = (int64_t)ld(lab, i);
        for (int64_t j = 0; j < k; j++) {
            double v = ld(p, i * k + j) - (j == c);
            st(out[0], i * k + j, dy * as_dtype(x->dtype, v));
        }
    }
    hg_tensor_free(p);
    return HG_OK;
}

static hg_status sce_grad(hg_grad_ctx *g)
{
    hg_sentry dx = hg_g_op(g, "_backward_softmax_cross_entropy",
                           HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)), NULL);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * hard_sigmoid(x) = clip(alpha * x + beta, 0, 1); smooth_l1(x, sigma = scalar) =
 * 0.5 (sigma x)^2 where |x| < 1 / sigma^2, |x| - 0.5 / sigma^2 elsewhere. Element-wise, with
 * _backward_ ops over (ograd, data).
 */

static const hg_attr_spec k_hs_attrs[] = {
    [HS_ALPHA] = {"alpha", HG_ATTR_FLOAT, 0, "0.2", "slope", NULL},
    [HS_BETA] = {"beta", HG_ATTR_FLOAT, 0, "0.5", "offset", NULL},
};
_Static_assert(HG_COUNT(k_hs_attrs) == HS_NATTRS, "k_hs_attrs must match its enum");

static const hg_attr_spec k_sl_attrs[] = {
    [SL_SCALAR] = {"scalar", HG_ATTR_FLOAT, 0, "1", "sigma", NULL},
    [SL_IS_INT] = {"is_int", HG_ATTR_BOOL, 0, "True",
                   "whether the scalar was given as an integer (kept for MXNet's attributes)",
                   NULL},
};
_Static_assert(HG_COUNT(k_sl_attrs) == SL_NATTRS, "k_sl_attrs must match its enum");

#define EW_LOSS_FNS(T)                                                                          \
    static void hsig_##T(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,   \
                         void *out, const hg_attrs *a)                                          \
    {                                                                                           \
        const T *x = in0, al = (T)(float)a->v[HS_ALPHA].f, be = (T)(float)a->v[HS_BETA].f;                    \
        T *y = out;                                                                             \
        (void)in1;                                                                              \
        (void)s1;                                                                               \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = al * x[i * s0] + be;                                                          \
            y[i] = v < 0 ? (T)0 : v > 1 ? (T)1 : v;                                             \
        }                                                                                       \
    }                                                                                           \
    static void hsig_bwd_##T(int64_t n, const void *in0, int64_t s0, const void *in1,           \
                             int64_t s1, void *out, const hg_attrs *a)                          \
    {                                                                                           \
        const T *dy = in0, *x = in1, al = (T)(float)a->v[HS_ALPHA].f, be = (T)(float)a->v[HS_BETA].f;         \
        T *dx = out;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = al * x[i * s1] + be;                                                          \
            dx[i] = v > 0 && v < 1 ? dy[i * s0] * al : (T)0;                                    \
        }                                                                                       \
    }                                                                                           \
    static void sl1_##T(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,    \
                        void *out, const hg_attrs *a)                                           \
    {                                                                                           \
        const T *x = in0, bsq = (T)(a->v[SL_SCALAR].f * a->v[SL_SCALAR].f), ib = (T)1 / bsq;    \
        T *y = out;                                                                             \
        (void)in1;                                                                              \
        (void)s1;                                                                               \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = x[i * s0];                                                                    \
            y[i] = v > ib ? v - (T)0.5 * ib : v < -ib ? -v - (T)0.5 * ib : (T)0.5 * v * v * bsq;   \
        }                                                                                       \
    }                                                                                           \
    static void sl1_bwd_##T(int64_t n, const void *in0, int64_t s0, const void *in1,            \
                            int64_t s1, void *out, const hg_attrs *a)                           \
    {                                                                                           \
        const T *dy = in0, *x = in1, bsq = (T)(a->v[SL_SCALAR].f * a->v[SL_SCALAR].f);          \
        const T ib = (T)1 / bsq;                                                                \
        T *dx = out;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = x[i * s1];                                                                    \
            dx[i] = dy[i * s0] * (v > ib ? (T)1 : v < -ib ? (T)-1 : bsq * v);                   \
        }                                                                                       \
    }
EW_LOSS_FNS(f32)
EW_LOSS_FNS(f64)

static hg_status ew_float_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    for (int i = 0; i < nin; i++) {
        hg_status s = need_float(op, i ? "data" : nin == 1 ? "data" : "ograd", &in[i]);
        if (s != HG_OK) return s;
    }
    return hg_infer_same(op, a, nin, in, nout, out);
}

static hg_status hsig_grad(hg_grad_ctx *g)
{
    return loss_grad(g, "_backward_hard_sigmoid", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)));
}

static hg_status sl1_grad(hg_grad_ctx *g)
{
    return loss_grad(g, "_backward_smooth_l1", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)));
}

/* ------------------------------------------------------------------------------------------- */

#define LOSS_DEF(NAME, ALIASES, DOC, ATTRS, INFER, FWD, GRAD)                                   \
    {.name = NAME,                                                                              \
     .aliases = ALIASES,                                                                        \
     .doc = DOC,                                                                                \
     .input_names = HG_NAMES("data", "label"),                                                  \
     .attrs = ATTRS,                                                                            \
     .num_attrs = HG_COUNT(ATTRS),                                                              \
     .num_inputs = 2,                                                                           \
     .num_outputs = 1,                                                                          \
     .infer = INFER,                                                                            \
     .forward = FWD,                                                                            \
     .grad = GRAD}
#define LOSS_BWD_DEF(NAME, DOC, INPUTS, ATTRS, INFER, FWD)                                      \
    {.name = NAME,                                                                              \
     .doc = DOC,                                                                                \
     .input_names = INPUTS,                                                                     \
     .attrs = ATTRS,                                                                            \
     .num_attrs = HG_COUNT(ATTRS),                                                              \
     .num_inputs = 2,                                                                           \
     .num_outputs = 1,                                                                          \
     .infer = INFER,                                                                            \
     .forward = FWD}
#define EW_DEF(NAME, DOC, ATTRS, ARITY, TABLE, GRAD)                                            \
    {.name = NAME,                                                                              \
     .doc = DOC,                                                                                \
     .input_names = ARITY == 1 ? HG_NAMES("data") : HG_NAMES("ograd", "data"),                  \
     .attrs = ATTRS,                                                                            \
     .num_attrs = HG_COUNT(ATTRS),                                                              \
     .num_inputs = ARITY,                                                                       \
     .num_outputs = 1,                                                                          \
     .flags = HG_OP_ELEMWISE,                                                                   \
     .infer = ew_float_infer,                                                                   \
     .ew = TABLE,                                                                               \
     .ew_arity = ARITY,                                                                         \
     .grad = GRAD}

const hg_op_def hg_ops_legacy_output[] = {
    LOSS_DEF("SoftmaxOutput", HG_NAMES("Softmax"),
             "softmax output layer: forward softmax, backward the cross-entropy gradient "
             "(output - label)",
             k_so_attrs, so_infer, so_forward, so_grad),
    LOSS_BWD_DEF("_backward_SoftmaxOutput", "gradient of SoftmaxOutput's loss from (output, label)",
                 HG_NAMES("output", "label"), k_so_attrs, so_bwd_infer, so_bwd_forward),
    LOSS_DEF("LinearRegressionOutput", NULL,
             "least squares output layer: forward identity, backward (output - label) * "
             "grad_scale / outputs per example",
             k_rg_attrs, rg_infer, copy_forward, linreg_grad),
    LOSS_DEF("MAERegressionOutput", NULL,
             "mean absolute error output layer: forward identity, backward sign(output - "
             "label) * grad_scale / outputs per example",
             k_rg_attrs, rg_infer, copy_forward, maereg_grad),
    LOSS_DEF("LogisticRegressionOutput", NULL,
             "logistic output layer: forward sigmoid, backward (output - label) * grad_scale "
             "/ outputs per example",
             k_rg_attrs, rg_infer, sigmoid_forward, logreg_grad),
    LOSS_BWD_DEF("_backward_linear_reg_out", "gradient of LinearRegressionOutput's loss",
                 HG_NAMES("label", "output"), k_rg_attrs, rg_bwd_infer, rg_bwd_forward),
    LOSS_BWD_DEF("_backward_mae_reg_out", "gradient of MAERegressionOutput's loss",
                 HG_NAMES("label", "output"), k_rg_attrs, rg_bwd_infer, rg_bwd_forward),
    LOSS_BWD_DEF("_backward_logistic_reg_out", "gradient of LogisticRegressionOutput's loss",
                 HG_NAMES("label", "output"), k_rg_attrs, rg_bwd_infer, rg_bwd_forward),
    LOSS_DEF("SVMOutput", NULL,
             "support vector machine output layer: forward identity, backward the (squared) "
             "hinge loss gradient",
             k_sv_attrs, sv_infer, copy_forward, sv_grad),
    LOSS_BWD_DEF("_backward_SVMOutput", "gradient of SVMOutput's loss from (output, label)",
                 HG_NAMES("output", "label"), k_sv_attrs, sv_bwd_infer, sv_bwd_forward),
    {.name = "MakeLoss",
     .doc = "marks data as a loss: forward identity, gradient grad_scale (normalised)",
     .input_names = HG_NAMES("data"),
     .attrs = k_ml_attrs,
     .num_attrs = HG_COUNT(k_ml_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .flags = HG_OP_INPLACE,
     .infer = ml_infer,
     .forward = copy_forward,
     .grad = ml_grad},
    {.name = "_backward_MakeLoss",
     .doc = "gradient of MakeLoss: grad_scale, normalised as the attributes say",
     .input_names = HG_NAMES("data"),
     .attrs = k_ml_attrs,
     .num_attrs = HG_COUNT(k_ml_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = ml_infer,
     .forward = ml_bwd_forward},
    {.name = "softmax_cross_entropy",
     .doc = "sum over the batch of -log softmax(data)[label]; data (n, k), label (n,)",
     .input_names = HG_NAMES("data", "label"),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = sce_infer,
     .forward = sce_forward,
     .grad = sce_grad},
    {.name = "_backward_softmax_cross_entropy",
     .doc = "gradient of softmax_cross_entropy: ograd * (softmax(data) - one_hot(label))",
     .input_names = HG_NAMES("ograd", "data", "label"),
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = sce_bwd_infer,
     .forward = sce_bwd_forward},
    EW_DEF("hard_sigmoid", "clip(alpha * x + beta, 0, 1)", k_hs_attrs, 1, HG_EW_TABLE_FLOAT(hsig),
           hsig_grad),
    EW_DEF("_backward_hard_sigmoid", "gradient of hard_sigmoid: ograd * alpha inside (0, 1)",
           k_hs_attrs, 2, HG_EW_TABLE_FLOAT(hsig_bwd), NULL),
    EW_DEF("smooth_l1", "smooth L1 loss with sigma = scalar, element-wise", k_sl_attrs, 1,
           HG_EW_TABLE_FLOAT(sl1), sl1_grad),
    EW_DEF("_backward_smooth_l1", "gradient of smooth_l1", k_sl_attrs, 2,
           HG_EW_TABLE_FLOAT(sl1_bwd), NULL),
    {0},
};
