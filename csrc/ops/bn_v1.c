/* BatchNorm_v1, MXNet's older batch normalisation (batch_norm_v1-inl.h), kept for old models
 * and MXNet's own tests: channel axis 1 of 2-D or 4-D data, fix_gamma on by default, and its
 * mean / var outputs are the batch mean and the (biased) batch variance in training, the moving
 * statistics otherwise (BatchNorm's var output is an inverse std instead). As in MXNet, the
 * moving statistics are updated by the backward pass in training, and no gradient flows back
 * through the mean / var outputs. Computed in double per channel; the ops are small. */
#include <math.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/ops_util.h"

enum { V1_EPS, V1_MOMENTUM, V1_FIX_GAMMA, V1_USE_GLOBAL, V1_OUTPUT_MEAN_VAR, V1_NATTRS };
static const hg_attr_spec k_v1_attrs[] = {
    [V1_EPS] = {"eps", HG_ATTR_FLOAT, 0, "0.001", "added to the variance before the square root",
                NULL},
    [V1_MOMENTUM] = {"momentum", HG_ATTR_FLOAT, 0, "0.9",
                     "moving statistics = momentum * moving + (1 - momentum) * batch", NULL},
    [V1_FIX_GAMMA] = {"fix_gamma", HG_ATTR_BOOL, 0, "True", "treat gamma as 1 (no gradient)", NULL},
    [V1_USE_GLOBAL] = {"use_global_stats", HG_ATTR_BOOL, 0, "False",
                       "normalise with the moving statistics also in training", NULL},
    [V1_OUTPUT_MEAN_VAR] = {"output_mean_var", HG_ATTR_BOOL, 0, "False",
                            "also output the mean and the variance used", NULL},
};
_Static_assert(HG_COUNT(k_v1_attrs) == V1_NATTRS, "k_v1_attrs must match its enum");

static int v1_visible(const hg_attrs *a) { return a->v[V1_OUTPUT_MEAN_VAR].b ? 3 : 1; }

static hg_status vec_meta(const hg_op_def *op, const char *what, hg_meta *m, hg_dtype dt, int64_t c)
{
    char s1[HG_SHAPE_STR];
    if (m->ndim >= 0 && m->dtype != dt)
        return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, data %s (must match)", op->name, what,
                        hg_dtype_name(m->dtype), hg_dtype_name(dt));
    hg_meta before = *m;
    if (!hg_meta_merge(m, dt, 1, &c))
        return hg_error(HG_ERR_VALUE,
                        "%s: %s must have shape (%lld,) (one value per channel), "
                        "got %s",
                        op->name, what, (long long)c, hg_shape_str(s1, before.ndim, before.shape));
    return HG_OK;
}

static const char *const k_vec_names[] = {"gamma", "beta", "moving_mean", "moving_var"};

/* Checks data (2-D or 4-D, float) and fills the four per-channel vectors from in[first..]. */
static hg_status v1_check(const hg_op_def *op, const hg_attrs *a, hg_meta *x, hg_meta *vecs,
                          int64_t *C)
{
    char s1[HG_SHAPE_STR];
    if (!(a->v[V1_EPS].f >= 0))
        return hg_error(HG_ERR_VALUE, "%s: eps must be >= 0, got %g", op->name, a->v[V1_EPS].f);
    HG_TRY(hg_c_check_float(op, "data", x->dtype));
    if (x->ndim != 2 && x->ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 2-D (batch, channel) or 4-D (batch, channel, height, "
                        "width), got %s",
                        op->name, hg_shape_str(s1, x->ndim, x->shape));
    *C = x->shape[1];
    for (int k = 0; k < 4; k++) HG_TRY(vec_meta(op, k_vec_names[k], &vecs[k], x->dtype, *C));
    return HG_OK;
}

static hg_status v1_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    for (int i = 0; i < 3; i++) out[i].dtype = in[0].dtype;
    if (in[0].ndim < 0) return HG_OK;
    int64_t C;
    HG_TRY(v1_check(op, a, &in[0], &in[1], &C));
    out[0] = in[0];
    for (int i = 1; i < 3; i++) {
        out[i].ndim = 1;
        out[i].shape[0] = C;
    }
    return HG_OK;
}

typedef struct {
    int64_t n, c, inner; /* data is (n, c, inner) */
} v1_geom;

static v1_geom geom_of(const hg_tensor *x)
{
    v1_geom g = {x->shape[0], x->shape[1], 1};
    for (int d = 2; d < x->ndim; d++) g.inner *= x->shape[d];
    return g;
}

/* Batch mean and biased variance per channel. */
static void batch_stats(const v1_geom *g, const double *x, double *mean, double *var)
{
    double cnt = (double)(g->n * g->inner);
    for (int64_t c = 0; c < g->c; c++) {
        double s = 0, q = 0;
        for (int64_t n = 0; n < g->n; n++)
            for (int64_t i = 0; i < g->inner; i++) s += x[(n * g->c + c) * g->inner + i];
        double m = cnt > 0 ? s / cnt : 0;
        for (int64_t n = 0; n < g->n; n++)
            for (int64_t i = 0; i < g->inner; i++) {
                double d = x[(n * g->c + c) * g->inner + i] - m;
                q += d * d;
            }
        mean[c] = m, var[c] = cnt > 0 ? q / cnt : 0;
    }
}

static hg_status v1_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    v1_geom g = geom_of(in[0]);
    bool batch = ctx->is_train && !a->v[V1_USE_GLOBAL].b, fix = a->v[V1_FIX_GAMMA].b;
    double eps = a->v[V1_EPS].f;
    double *x = hg_c_load(in[0]), *gm = hg_c_load(in[1]), *bt = hg_c_load(in[2]);
    double *mm = hg_c_load(in[3]), *mv = hg_c_load(in[4]), *y = hg_c_alloc(in[0]->size);
    double *mean = hg_c_alloc(g.c), *var = hg_c_alloc(g.c);
    hg_status st = HG_OK;
    if (!x || !gm || !bt || !mm || !mv || !y || !mean || !var) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    if (batch) batch_stats(&g, x, mean, var);
    else {
        memcpy(mean, mm, sizeof(double) * (size_t)g.c);
        memcpy(var, mv, sizeof(double) * (size_t)g.c);
    }
    for (int64_t c = 0; c < g.c; c++) {
        double w = fix ? 1.0 : gm[c], scale = w / sqrt(var[c] + eps);
        double shift = bt[c] - scale * mean[c];
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t i = 0; i < g.inner; i++) {
                int64_t k = (n * g.c + c) * g.inner + i;
                y[k] = x[k] * scale + shift;
            }
    }
    hg_c_store(out[0], y);
    hg_c_store(out[1], mean);
    hg_c_store(out[2], var);
done:
    hg_c_free(x, in[0]->size);
    hg_c_free(gm, in[1]->size);
    hg_c_free(bt, in[2]->size);
    hg_c_free(mm, in[3]->size);
    hg_c_free(mv, in[4]->size);
    hg_c_free(y, in[0]->size);
    hg_c_free(mean, g.c);
    hg_c_free(var, g.c);
    return st;
}

/* _backward_BatchNorm_v1(ograd, data, gamma, mean, var, moving_mean, moving_var) -> data, gamma
 * and beta gradients; in training (not use_global_stats) it also updates the moving stats. */
static hg_status v1_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    if (in[1].ndim < 0) return hg_error(HG_ERR_VALUE, "%s: data shape unknown", op->name);
    hg_meta vecs[4] = {in[2], in[2], in[5], in[6]};
    int64_t C;
    HG_TRY(v1_check(op, a, &in[1], vecs, &C));
    HG_TRY(vec_meta(op, "mean", &in[3], in[1].dtype, C));
    HG_TRY(vec_meta(op, "var", &in[4], in[1].dtype, C));
    if (in[0].ndim >= 0 && !hg_shape_equal(in[0].ndim, in[0].shape, in[1].ndim, in[1].shape))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s does not match data %s", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape));
    out[0] = in[1];
    out[1] = out[2] = vecs[0];
    return HG_OK;
}

static hg_status v1_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    v1_geom g = geom_of(in[1]);
    bool batch = ctx->is_train && !a->v[V1_USE_GLOBAL].b, fix = a->v[V1_FIX_GAMMA].b;
    double eps = a->v[V1_EPS].f, mom = a->v[V1_MOMENTUM].f, cnt = (double)(g.n * g.inner);
    double *dy = hg_c_load(in[0]), *x = hg_c_load(in[1]), *gm = hg_c_load(in[2]);
    double *bm = hg_c_load(in[3]), *bv = hg_c_load(in[4]), *mm = hg_c_load(in[5]);
    double *mv = hg_c_load(in[6]), *dx = hg_c_alloc(in[1]->size);
    double *dg = hg_c_alloc(g.c), *db = hg_c_alloc(g.c);
    hg_status st = HG_OK;
    if (!dy || !x || !gm || !bm || !bv || !mm || !mv || !dx || !dg || !db) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t c = 0; c < g.c; c++) {
        double w = fix ? 1.0 : gm[c];
        double m = batch ? bm[c] : mm[c], v = batch ? bv[c] : mv[c], inv = 1 / sqrt(v + eps);
        double sdy = 0, sdyx = 0; /* sum dy, sum dy * (x - m) */
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t i = 0; i < g.inner; i++) {
                int64_t k = (n * g.c + c) * g.inner + i;
                sdy += dy[k], sdyx += dy[k] * (x[k] - m);
            }
        dg[c] = fix ? 0.0 : sdyx * inv;
        db[c] = sdy;
        /* training: dx = w * inv * (dy - mean(dy) - (x - m) * inv^2 * mean(dy * (x - m))) */
        double a0 = w * inv, mdy = batch && cnt > 0 ? sdy / cnt : 0;
        double k2 = batch && cnt > 0 ? inv * inv * sdyx / cnt : 0;
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t i = 0; i < g.inner; i++) {
                int64_t k = (n * g.c + c) * g.inner + i;
                dx[k] = a0 * (dy[k] - mdy - (x[k] - m) * k2);
            }
        if (batch) {
            mm[c] = mm[c] * mom + bm[c] * (1 - mom);
            mv[c] = mv[c] * mom + bv[c] * (1 - mom);
        }
    }
    if (batch) {
        hg_c_store(in[5], mm);
        hg_c_store(in[6], mv);
    }
    hg_c_store(out[0], dx);
    hg_c_store(out[1], dg);
    hg_c_store(out[2], db);
done:
    hg_c_free(dy, in[0]->size);
    hg_c_free(x, in[1]->size);
    hg_c_free(gm, in[2]->size);
    hg_c_free(bm, in[3]->size);
    hg_c_free(bv, in[4]->size);
    hg_c_free(mm, in[5]->size);
    hg_c_free(mv, in[6]->size);
    hg_c_free(dx, in[1]->size);
    hg_c_free(dg, g.c);
    hg_c_free(db, g.c);
    return st;
}

static hg_status v1_grad(hg_grad_ctx *g)
{
    hg_sentry out[3];
    hg_g_op_fwd_attrs(g, "_backward_BatchNorm_v1",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1), hg_g_out(g, 1),
                             hg_g_out(g, 2), hg_g_in(g, 3), hg_g_in(g, 4)),
                      NULL, 3, out);
    for (int k = 0; k < 3; k++) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

const hg_op_def hg_ops_bn_v1[] = {
    {.name = "BatchNorm_v1",
     .doc = "MXNet's older batch normalisation over axis 1 of 2-D or 4-D data; mean / var "
            "outputs are the batch mean and variance in training (the moving statistics "
            "otherwise), which the backward folds into moving_mean / moving_var",
     .input_names = HG_NAMES("data", "gamma", "beta", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("output", "mean", "var"),
     .attrs = k_v1_attrs,
     .num_attrs = V1_NATTRS,
     .num_inputs = 5,
     .num_outputs = 3,
     .get_num_visible_outputs = v1_visible,
     .infer = v1_infer,
     .forward = v1_forward,
     .grad = v1_grad,
     .flags = HG_OP_AUX_IN_TRAIN,
     .mutate_inputs = (1u << 3) | (1u << 4)},
    {.name = "_backward_BatchNorm_v1",
     .doc = "gradient of BatchNorm_v1 from (ograd, data, gamma, mean, var, moving_mean, "
            "moving_var): data, gamma and beta gradients, and in training the update of the "
            "moving statistics",
     .input_names = HG_NAMES("ograd", "data", "gamma", "mean", "var", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("data_grad", "gamma_grad", "beta_grad"),
     .attrs = k_v1_attrs,
     .num_attrs = V1_NATTRS,
     .num_inputs = 7,
     .num_outputs = 3,
     .infer = v1_bwd_infer,
     .forward = v1_backward,
     .flags = HG_OP_AUX_IN_TRAIN,
     .mutate_inputs = (1u << 5) | (1u << 6)},
    {.name = NULL},
};
