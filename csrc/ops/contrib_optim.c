/* MXNet's contrib group_adagrad_update: AdaGrad with one history value per row of the weight
 * (the mean squared gradient of the row is accumulated), the step of mx.optimizer.contrib.
 * GroupAdaGrad. MXNet implements it for row_sparse gradients only; a dense gradient here is
 * the update of every row, which is what MXNet's optimizer computes for one with nd ops.
 * Contract as in optimizer.c: history is updated in place, the output is the new weight
 * (out may alias weight: each row is read before it is written); float32 attributes; float16
 * and float32 weights compute in float, float64 in double. */
#include <math.h>

#include "ops/contrib_util.h"
#include "ops/ops_util.h"

enum { GA_LR, GA_RESCALE, GA_CLIP, GA_EPS, GA_NATTRS };
static const hg_attr_spec k_ga_attrs[] = {
    [GA_LR] = {"lr", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "learning rate", NULL},
    [GA_RESCALE] = {"rescale_grad", HG_ATTR_FLOAT, 0, "1", "grad = rescale_grad * grad", NULL},
    [GA_CLIP] = {"clip_gradient", HG_ATTR_FLOAT, 0, "-1",
                 "clip the rescaled gradient to [-clip, clip]; < 0: no clipping", NULL},
    [GA_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-05", "added to the history under the root", NULL},
};
_Static_assert(HG_COUNT(k_ga_attrs) == GA_NATTRS, "k_ga_attrs must match its enum");

static hg_status ga_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    const hg_meta *w = &in[0], *g = &in[1], *h = &in[2];
    hg_status st = hg_c_check_float(op, "weight", w->dtype);
    if (st) return st;
    for (int i = 1; i < 3; i++)
        if (in[i].ndim >= 0 && in[i].dtype != w->dtype)
            return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, weight %s (must match)", op->name,
                            op->input_names[i], hg_dtype_name(in[i].dtype),
                            hg_dtype_name(w->dtype));
    out[0].dtype = w->dtype;
    if (w->ndim < 0 || g->ndim < 0 || h->ndim < 0) return HG_OK;
    int64_t rows = w->ndim ? w->shape[0] : 0;
    if (w->ndim < 1 || !hg_shape_equal(w->ndim, w->shape, g->ndim, g->shape) || h->ndim < 1 ||
        h->shape[0] != rows || hg_shape_size(h->ndim, h->shape) != rows)
        return hg_error(HG_ERR_VALUE,
                        "%s: want weight and grad of one shape (rows, ...) and history (rows, 1); "
                        "got %s, %s and %s",
                        op->name, hg_shape_str(s1, w->ndim, w->shape),
                        hg_shape_str(s2, g->ndim, g->shape), hg_shape_str(s3, h->ndim, h->shape));
    out[0] = *w;
    return HG_OK;
}

#define GA_ROWS(SUF, T, SQRT)                                                                  \
    static void ga_##SUF(const hg_attrs *a, const double *w, const double *g, double *h,       \
                         double *o, int64_t rows, int64_t len)                                 \
    {                                                                                          \
        T lr = (T)(float)a->v[GA_LR].f, rs = (T)(float)a->v[GA_RESCALE].f;                     \
        T clip = (T)(float)a->v[GA_CLIP].f, eps = (T)(float)a->v[GA_EPS].f;                    \
        for (int64_t r = 0; r < rows; r++) {                                                   \
            const double *gr = g + r * len;                                                    \
            T ssq = 0;                                                                         \
            for (int64_t j = 0; j < len; j++) {                                                \
                T v = (T)gr[j] * rs;                                                           \
                if (clip >= 0) v = v > clip ? clip : v < -clip ? -clip : v;                    \
                ssq += v * v;                                                                  \
            }                                                                                  \
            T hist = (T)h[r] + ssq / (T)len;                                                   \
            h[r] = hist;                                                                       \
            T den = SQRT(hist + eps);                                                          \
            for (int64_t j = 0; j < len; j++) {                                                \
                T v = (T)gr[j] * rs;                                                           \
                if (clip >= 0) v = v > clip ? clip : v < -clip ? -clip : v;                    \
                o[r * len + j] = (T)w[r * len + j] - lr * v / den;                             \
            }                                                                                  \
        }                                                                                      \
    }
GA_ROWS(f, float, sqrtf)
GA_ROWS(d, double, sqrt)

static hg_status ga_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *w = in[0];
    int64_t rows = w->shape[0], len = rows ? w->size / rows : 0;
    double *wv = hg_c_load(w), *gv = hg_c_load(in[1]), *hv = hg_c_load(in[2]);
    double *ov = hg_c_alloc(w->size);
    hg_status st = HG_OK;
    if (!wv || !gv || !hv || !ov) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    if (len > 0) {
        if (w->dtype == HG_DTYPE_F64) ga_d(a, wv, gv, hv, ov, rows, len);
        else ga_f(a, wv, gv, hv, ov, rows, len);
        hg_c_store(in[2], hv);
    }
    hg_c_store(out[0], ov);
done:
    hg_c_free(wv, w->size);
    hg_c_free(gv, in[1]->size);
    hg_c_free(hv, in[2]->size);
    hg_c_free(ov, w->size);
    return st;
}

const hg_op_def hg_ops_contrib_optim[] = {
    {.name = "_contrib_group_adagrad_update",
     .doc = "Group AdaGrad step: history[r] += mean(clip(rescale_grad * grad[r])^2); weight[r] "
            "-= lr * grad[r] / sqrt(history[r] + epsilon); returns the new weight",
     .input_names = HG_NAMES("weight", "grad", "history"),
     .attrs = k_ga_attrs,
     .num_attrs = GA_NATTRS,
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = ga_infer,
     .forward = ga_forward,
     .flags = HG_OP_NO_GRAD | HG_OP_INPLACE,
     .mutate_inputs = 1u << 2},
    {.name = NULL},
};
