/* Optimizer updates: MXNet 1.9.1's *_update ops (sgd, momentum, NAG, Adam, AdamW, RMSProp,
 * signSGD/Signum, FTRL, FTML, LAMB and mp_lamb) and reset_arrays, plus _adagrad_update /
 * _adadelta_update, which MXNet computes in Python with several nd ops, so that every optimizer
 * step is one C call.
 *
 * Contract (as MXNet's): inputs are (weight, grad, states...); the states are updated in place
 * (mutate_inputs marks them) and the output is the new weight, which the Python optimizer writes
 * back with `out=weight`. Scalar attributes are float32 in MXNet, so they are rounded through
 * float before use even for float64 weights; float32 and float16 weights compute in float,
 * float64 in double. The mp_* variants keep float32 states and a float32 master copy of a
 * (usually float16) weight, update the master copy and write the weight as its rounding.
 * Each kernel reads an element's inputs before writing its output, so out may alias weight.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "ops/ew.h"
#include "ops/ops_util.h"
#include "ops/optimizer.h"

#define OPT_MAX_IN 6
#define OPT_GRAIN (HG_GRAIN_ELEMWISE / 4) /* ~20 flops and a square root per element */

typedef struct opt_job {
    void *in[OPT_MAX_IN];
    void *out;
    double p[HG_MAX_ATTRS]; /* the attributes in schema order, as MXNet's float32 params */
} opt_job;

/* Element access in the weight's storage type; float16 goes through float. */
static inline float ld_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }
static inline void st_f32(void *p, int64_t i, float v) { ((float *)p)[i] = v; }
static inline double ld_f64(const void *p, int64_t i) { return ((const double *)p)[i]; }
static inline void st_f64(void *p, int64_t i, double v) { ((double *)p)[i] = v; }
static inline float ld_f16(const void *p, int64_t i)
{
    return hg_half_to_float(((const uint16_t *)p)[i]);
}
static inline void st_f16(void *p, int64_t i, float v) { ((uint16_t *)p)[i] = hg_float_to_half(v); }

/* float32 arrays of the mp_* variants (states, master copy). */
#define F32(k) ((float *)j->in[k])

#define SQRT(x) _Generic((x), float: sqrtf, default: sqrt)(x)
/* mshadow_op::clip: NaN passes through. */
#define CLIP(x, b) ((x) > (b) ? (b) : ((x) < -(b) ? -(b) : (x)))
#define SIGN(x) ((real)(((x) > 0) - ((x) < 0)))
#define P(k) ((real)j->p[k])
#define W j->in[0]
#define G j->in[1]
#define S(k) j->in[2 + (k)]

/* Stamps out one kernel per weight storage type (f32, f64, f16) from BODY(R, LD, ST), a block
 * that updates element i of job j computing in type R (also named `real` for P and SIGN). */
#define OPT_KERNEL(NAME, R, SFX, BODY)                                                        \
    static void NAME##_##SFX(void *ctx, int64_t b, int64_t e)                                 \
    {                                                                                         \
        typedef R real __attribute__((unused));                                               \
        const opt_job *j = ctx;                                                               \
        for (int64_t i = b; i < e; i++) BODY(R, ld_##SFX, st_##SFX)                           \
    }
#define OPT_KERNELS(NAME, BODY)                                                               \
    OPT_KERNEL(NAME, float, f32, BODY)                                                        \
    OPT_KERNEL(NAME, double, f64, BODY)                                                       \
    OPT_KERNEL(NAME, float, f16, BODY)                                                        \
    static const hg_range_fn NAME##_fns[3] = {NAME##_f32, NAME##_f64, NAME##_f16};

/* ---------------------------------------------------------------------------------------------
 * Shared attribute fragments and checks
 */

#define A_LR {"lr", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "learning rate", NULL}
#define A_WD                                                                                   \
    {"wd", HG_ATTR_FLOAT, 0, "0", "weight decay: adds wd * weight to the gradient", NULL}
#define A_RESCALE                                                                              \
    {"rescale_grad", HG_ATTR_FLOAT, 0, "1", "the gradient is multiplied by this first", NULL}
#define A_CLIP                                                                                 \
    {"clip_gradient", HG_ATTR_FLOAT, 0, "-1",                                                  \
     "clip the rescaled gradient to [-clip_gradient, clip_gradient]; negative: off", NULL}
#define A_LAZY                                                                                 \
    {"lazy_update", HG_ATTR_BOOL, 0, "True",                                                   \
     "lazy update for row_sparse gradients (dense storage only here: no effect)", NULL}
#define A_MOMENTUM                                                                             \
    {"momentum", HG_ATTR_FLOAT, 0, "0", "decay rate of the momentum", NULL}
#define A_CLIP_WEIGHTS                                                                         \
    {"clip_weights", HG_ATTR_FLOAT, 0, "-1",                                                   \
     "clip the new weight to [-clip_weights, clip_weights]; negative: off", NULL}

static int type_index(hg_dtype dt) { return dt == HG_DTYPE_F32 ? 0 : dt == HG_DTYPE_F64 ? 1 : 2; }

/* Input k's name; the list is NULL-terminated and shorter than the inputs of the variadic
 * multi-tensor updates, which are named by position. */
static const char *input_name(const hg_op_def *op, int k)
{
    if (!op->input_names || (op->flags & HG_OP_VARARGS)) return "input";
    for (int i = 0; i <= k; i++)
        if (!op->input_names[i]) return "input";
    return op->input_names[k];
}

/* Inputs [0, n_same) must have the weight's shape; of those, [0, n_w) the weight's dtype and
 * [n_w, n_same) float32 (mp master copies and states). Unknown shapes (graph inference) are
 * filled in from the weight. */
static hg_status check_inputs(const hg_op_def *op, hg_meta *in, int n_same, int n_w)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_meta *w = &in[0];
    if (!hg_is_float(w->dtype))
        return hg_error(HG_ERR_TYPE, "%s: weight must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(w->dtype));
    for (int k = 1; k < n_same; k++) {
        hg_dtype want = k < n_w ? w->dtype : HG_DTYPE_F32;
        if (!hg_meta_merge(&in[k], want, w->ndim, w->shape))
            return hg_error(HG_ERR_VALUE, "%s: %s shape %s does not match weight shape %s",
                            op->name, input_name(op, k), hg_shape_str(s0, in[k].ndim, in[k].shape),
                            hg_shape_str(s1, w->ndim, w->shape));
        if (in[k].dtype != want)
            return hg_error(HG_ERR_TYPE, "%s: %s must be %s (%s), got %s", op->name,
                            input_name(op, k), hg_dtype_name(want),
                            k < n_w ? "the weight's dtype" : "a float32 master copy or state",
                            hg_dtype_name(in[k].dtype));
    }
    return HG_OK;
}

static hg_status infer_result(const hg_op_def *op, hg_meta *in, hg_meta *out, int n_same, int n_w)
{
    if (in[0].ndim < 0) { /* weight shape unknown yet (graph inference) */
        out[0] = in[0];
        return HG_OK;
    }
    HG_TRY(check_inputs(op, in, n_same, n_w));
    out[0] = in[0];
    return HG_OK;
}

/* All inputs elementwise and of the weight's dtype. */
static hg_status infer_plain(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)a;
    (void)nout;
    return infer_result(op, in, out, nin, nin);
}

/* mp_*: weight and grad of one float dtype, the rest float32. */
static hg_status infer_mp(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nout;
    return infer_result(op, in, out, nin, 2);
}

static void job_init(opt_job *j, const hg_op_def *op, const hg_attrs *a, int nin,
                     hg_tensor *const *in, hg_tensor *out)
{
    memset(j, 0, sizeof *j);
    for (int k = 0; k < nin && k < OPT_MAX_IN; k++) j->in[k] = hg_data(in[k]);
    j->out = hg_data(out);
    for (int k = 0; k < op->num_attrs; k++) {
        const hg_attr_value *v = &a->v[k];
        switch (op->attrs[k].type) {
        case HG_ATTR_FLOAT: j->p[k] = (double)(float)v->f; break;
        case HG_ATTR_INT: j->p[k] = (double)v->i; break;
        case HG_ATTR_BOOL: j->p[k] = v->b ? 1.0 : 0.0; break;
        default: break;
        }
    }
}

static void job_run(opt_job *j, const hg_range_fn fns[3], hg_dtype dt, int64_t n)
{
    hg_parallel_for(n, OPT_GRAIN, fns[type_index(dt)], j);
}

/* A forward for ops whose attributes are all the kernel needs. */
#define OPT_FORWARD(NAME)                                                                      \
    static hg_status NAME##_forward(const hg_op_def *op, const hg_attrs *a,                    \
                                    const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,     \
                                    int nout, hg_tensor *const *out)                           \
    {                                                                                          \
        (void)ctx; (void)nout;                                                                 \
        opt_job j;                                                                             \
        job_init(&j, op, a, nin, in, out[0]);                                                  \
        job_run(&j, NAME##_fns, in[0]->dtype, out[0]->size);                                   \
        return HG_OK;                                                                          \
    }

/* ---------------------------------------------------------------------------------------------
 * SGD: w = (1 - lr*wd) * w - lr * clip(rescale_grad * g); with momentum:
 * mom = momentum * mom - lr*wd * w - lr * clip(rescale_grad * g); w += mom.
 */

static const hg_attr_spec k_sgd_attrs[] = {
    [SGD_LR] = A_LR,     [SGD_WD] = A_WD,     [SGD_RG] = A_RESCALE,
    [SGD_CLIP] = A_CLIP, [SGD_LAZY] = A_LAZY,
};
_Static_assert(HG_COUNT(k_sgd_attrs) == SGD_NATTRS, "k_sgd_attrs must match its enum");

static const hg_attr_spec k_sgd_mom_attrs[] = {
    [SGDM_LR] = A_LR,      [SGDM_MOM] = A_MOMENTUM, [SGDM_WD] = A_WD,
    [SGDM_RG] = A_RESCALE, [SGDM_CLIP] = A_CLIP,    [SGDM_LAZY] = A_LAZY,
};
_Static_assert(HG_COUNT(k_sgd_mom_attrs) == SGDM_NATTRS, "k_sgd_mom_attrs must match its enum");

#define SGD_BODY(R, LD, ST)                                                                    \
    {                                                                                          \
        const R lr = P(SGD_LR), wd = P(SGD_WD), rg = P(SGD_RG), cg = P(SGD_CLIP);              \
        const R w = LD(W, i), g = LD(G, i);                                                    \
        ST(j->out, i, cg >= 0 ? (1 - lr * wd) * w - lr * CLIP(rg * g, cg)                      \
                              : (1 - lr * wd) * w - (lr * rg) * g);                            \
    }
OPT_KERNELS(sgd, SGD_BODY)
OPT_FORWARD(sgd)

#define SGD_MOM_BODY(R, LD, ST)                                                                \
    {                                                                                          \
        const R lr = P(SGDM_LR), mu = P(SGDM_MOM), wd = P(SGDM_WD), rg = P(SGDM_RG);           \
        const R cg = P(SGDM_CLIP), w = LD(W, i), g = LD(G, i);                                 \
        R m = LD(S(0), i);                                                                     \
        m = cg >= 0 ? mu * m - lr * wd * w - lr * CLIP(rg * g, cg)                             \
                    : mu * m - lr * wd * w - lr * rg * g;                                      \
        ST(S(0), i, m);                                                                        \
        ST(j->out, i, w + LD(S(0), i));                                                        \
    }
OPT_KERNELS(sgd_mom, SGD_MOM_BODY)
OPT_FORWARD(sgd_mom)

/* mp: inputs (weight, grad, weight32) / (weight, grad, mom, weight32). */
#define MP_SGD_BODY(R, LD, ST)                                                                 \
    {                                                                                          \
        const float lr = (float)j->p[SGD_LR], wd = (float)j->p[SGD_WD];                        \
        const float rg = (float)j->p[SGD_RG], cg = (float)j->p[SGD_CLIP];                      \
        const float g = (float)LD(G, i);                                                       \
        float w = F32(2)[i];                                                                   \
        w = cg >= 0 ? (1 - lr * wd) * w - lr * CLIP(rg * g, cg)                                \
                    : (1 - lr * wd) * w - (lr * rg) * g;                                       \
        F32(2)[i] = w;                                                                         \
        ST(j->out, i, (R)w);                                                                   \
    }
OPT_KERNELS(mp_sgd, MP_SGD_BODY)
OPT_FORWARD(mp_sgd)

#define MP_SGD_MOM_BODY(R, LD, ST)                                                             \
    {                                                                                          \
        const float lr = (float)j->p[SGDM_LR], mu = (float)j->p[SGDM_MOM];                     \
        const float wd = (float)j->p[SGDM_WD], rg = (float)j->p[SGDM_RG];                      \
        const float cg = (float)j->p[SGDM_CLIP], g = (float)LD(G, i);                          \
        float w = F32(3)[i], m = F32(2)[i];                                                    \
        m = cg >= 0 ? mu * m - lr * wd * w - lr * CLIP(rg * g, cg)                             \
                    : mu * m - lr * wd * w - lr * rg * g;                                      \
        F32(2)[i] = m;                                                                         \
        w = w + m;                                                                             \
        F32(3)[i] = w;                                                                         \
        ST(j->out, i, (R)w);                                                                   \
    }
OPT_KERNELS(mp_sgd_mom, MP_SGD_MOM_BODY)
OPT_FORWARD(mp_sgd_mom)

/* ---------------------------------------------------------------------------------------------
 * NAG: mom = momentum * mom; w' = w - mom + (momentum + 1) * (mom - lr * (g' + wd*w));
 * mom -= lr * (g' + wd*w) with g' = clip(rescale_grad * g). As in MXNet, the momentum's weight
 * decay term reads the weight after the output was written: with out=weight (how the optimizer
 * calls it) that is the new weight, and the mp variant uses its new master weight alike.
 */

static const hg_attr_spec k_nag_attrs[] = {
    [NAG_LR] = A_LR,      [NAG_MOM] = A_MOMENTUM, [NAG_WD] = A_WD,
    [NAG_RG] = A_RESCALE, [NAG_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_nag_attrs) == NAG_NATTRS, "k_nag_attrs must match its enum");

#define NAG_BODY(R, LD, ST)                                                                    \
    {                                                                                          \
        const R lr = P(NAG_LR), mu = P(NAG_MOM), wd = P(NAG_WD), rg = P(NAG_RG);               \
        const R cg = P(NAG_CLIP), w = LD(W, i), g = LD(G, i);                                  \
        const R gr = cg >= 0 ? CLIP(rg * g, cg) : rg * g;                                      \
        ST(S(0), i, mu * LD(S(0), i));                                                         \
        const R m = LD(S(0), i);                                                               \
        ST(j->out, i, w - m + (mu + 1) * (m - lr * (gr + wd * w)));                            \
        ST(S(0), i, m - lr * (gr + wd * LD(W, i)));                                            \
    }
OPT_KERNELS(nag_mom, NAG_BODY)
OPT_FORWARD(nag_mom)

#define MP_NAG_BODY(R, LD, ST)                                                                 \
    {                                                                                          \
        const float lr = (float)j->p[NAG_LR], mu = (float)j->p[NAG_MOM];                       \
        const float wd = (float)j->p[NAG_WD], rg = (float)j->p[NAG_RG];                        \
        const float cg = (float)j->p[NAG_CLIP], g = (float)LD(G, i);                           \
        const float gr = cg >= 0 ? CLIP(rg * g, cg) : rg * g;                                  \
        float w = F32(3)[i], m = mu * F32(2)[i];                                               \
        w = w - m + (mu + 1) * (m - lr * (gr + wd * w));                                       \
        F32(2)[i] = m - lr * (gr + wd * w);                                                    \
        F32(3)[i] = w;                                                                         \
        ST(j->out, i, (R)w);                                                                   \
    }
OPT_KERNELS(mp_nag_mom, MP_NAG_BODY)
OPT_FORWARD(mp_nag_mom)

/* ---------------------------------------------------------------------------------------------
 * Adam: g' = clip(rescale_grad * g + wd * w); mean = b1*mean + (1-b1)*g';
 * var = b2*var + (1-b2)*g'^2; w' = w - lr * mean / (sqrt(var) + epsilon). Bias correction is
 * folded into lr by the Python optimizer.
 */

static const hg_attr_spec k_adam_attrs[] = {
    [ADAM_LR] = A_LR,
    [ADAM_B1] = {"beta1", HG_ATTR_FLOAT, 0, "0.9", "decay rate of the first moment", NULL},
    [ADAM_B2] = {"beta2", HG_ATTR_FLOAT, 0, "0.999", "decay rate of the second moment", NULL},
    [ADAM_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-08", "added to sqrt(var) against division by 0",
                  NULL},
    [ADAM_WD] = A_WD,
    [ADAM_RG] = A_RESCALE,
    [ADAM_CLIP] = A_CLIP,
    [ADAM_LAZY] = A_LAZY,
};
_Static_assert(HG_COUNT(k_adam_attrs) == ADAM_NATTRS, "k_adam_attrs must match its enum");

#define ADAM_BODY(R, LD, ST)                                                                   \
    {                                                                                          \
        const R lr = P(ADAM_LR), b1 = P(ADAM_B1), b2 = P(ADAM_B2), eps = P(ADAM_EPS);          \
        const R wd = P(ADAM_WD), rg = P(ADAM_RG), cg = P(ADAM_CLIP);                           \
        const R w = LD(W, i);                                                                  \
        R gr = LD(G, i) * rg + w * wd;                                                         \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, b1 * LD(S(0), i) + (1 - b1) * gr);                                         \
        ST(S(1), i, b2 * LD(S(1), i) + (1 - b2) * gr * gr);                                    \
        ST(j->out, i, w - lr * LD(S(0), i) / (SQRT(LD(S(1), i)) + eps));                       \
    }
OPT_KERNELS(adam, ADAM_BODY)
OPT_FORWARD(adam)

/* ---------------------------------------------------------------------------------------------
 * AdamW (MXNet's contrib adamw_update): rescale_grad is an input array (one float32 value)
 * so that a loss scaler can set it without re-creating the op; a non-finite or zero value skips
 * the step. g' = clip(rescale_grad * g); mean, var as Adam;
 * w' = w - eta * (lr * mean / (sqrt(var) + epsilon) + wd * w).
 */

static const hg_attr_spec k_adamw_attrs[] = {
    [ADW_LR] = A_LR,
    [ADW_B1] = {"beta1", HG_ATTR_FLOAT, 0, "0.9", "decay rate of the first moment", NULL},
    [ADW_B2] = {"beta2", HG_ATTR_FLOAT, 0, "0.999", "decay rate of the second moment", NULL},
    [ADW_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-08", "added to sqrt(var) against division by 0",
                 NULL},
    [ADW_WD] = A_WD,
    [ADW_ETA] = {"eta", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "learning rate schedule multiplier",
                 NULL},
    [ADW_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_adamw_attrs) == ADW_NATTRS, "k_adamw_attrs must match its enum");

#define ADAMW_BODY(R, LD, ST)                                                                  \
    {                                                                                          \
        const R lr = P(ADW_LR), b1 = P(ADW_B1), b2 = P(ADW_B2), eps = P(ADW_EPS);              \
        const R wd = P(ADW_WD), eta = P(ADW_ETA), cg = P(ADW_CLIP), rg = P(ADW_SCALE);         \
        const R w = LD(W, i);                                                                  \
        R gr = rg * LD(G, i);                                                                  \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, b1 * LD(S(0), i) + (1 - b1) * gr);                                         \
        ST(S(1), i, b2 * LD(S(1), i) + (1 - b2) * gr * gr);                                    \
        ST(j->out, i, w - eta * (lr * LD(S(0), i) / (SQRT(LD(S(1), i)) + eps) + wd * w));      \
    }
OPT_KERNELS(adamw, ADAMW_BODY)

static hg_status adamw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    hg_meta *s = &in[4];
    if (s->ndim < 0) { /* graph inference: one value */
        const int64_t one = 1;
        hg_meta_merge(s, HG_DTYPE_F32, 1, &one);
    }
    if (s->dtype != HG_DTYPE_F32)
        return hg_error(HG_ERR_TYPE, "%s: rescale_grad must be float32, got %s", op->name,
                        hg_dtype_name(s->dtype));
    if (hg_shape_size(s->ndim, s->shape) < 1)
        return hg_error(HG_ERR_VALUE, "%s: rescale_grad must hold one value, got an empty array",
                        op->name);
    return infer_result(op, in, out, 4, 4);
}

static hg_status adamw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    const float scale = HG_DATA(in[4], float)[0];
    if (!isfinite(scale) || scale == 0) { /* skipped step: the weight stays as it is */
        if (hg_data(out[0]) != hg_data(in[0]))
            memcpy(hg_data(out[0]), hg_data(in[0]),
                   (size_t)in[0]->size * hg_dtype_size(in[0]->dtype));
        return HG_OK;
    }
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    j.p[ADW_SCALE] = scale;
    job_run(&j, adamw_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

/* mp_adamw_update: weight and grad in a float type (float16 in practice), mean, var and the
 * float32 master copy weight32 updated in place; the new weight32 rounded to the weight's type is
 * the output. Inputs: weight, grad, mean, var, weight32, rescale_grad. */
#define MP_ADAMW_BODY(R, LD, ST)                                                               \
    {                                                                                          \
        const float lr = (float)j->p[ADW_LR], b1 = (float)j->p[ADW_B1];                        \
        const float b2 = (float)j->p[ADW_B2], eps = (float)j->p[ADW_EPS];                      \
        const float wd = (float)j->p[ADW_WD], eta = (float)j->p[ADW_ETA];                      \
        const float cg = (float)j->p[ADW_CLIP], rg = (float)j->p[ADW_SCALE];                   \
        float w = F32(4)[i];                                                                   \
        float gr = rg * (float)LD(G, i);                                                       \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        const float m = b1 * F32(2)[i] + (1 - b1) * gr;                                        \
        const float v = b2 * F32(3)[i] + (1 - b2) * gr * gr;                                   \
        F32(2)[i] = m;                                                                         \
        F32(3)[i] = v;                                                                         \
        w = w - eta * (lr * m / (sqrtf(v) + eps) + wd * w);                                    \
        F32(4)[i] = w;                                                                         \
        ST(j->out, i, (R)w);                                                                   \
    }
OPT_KERNELS(mp_adamw, MP_ADAMW_BODY)

/* rescale_grad (the last input): float32, one value. */
static hg_status check_scale(const hg_op_def *op, hg_meta *s)
{
    if (s->ndim < 0) { /* graph inference: one value */
        const int64_t one = 1;
        hg_meta_merge(s, HG_DTYPE_F32, 1, &one);
    }
    if (s->dtype != HG_DTYPE_F32)
        return hg_error(HG_ERR_TYPE, "%s: rescale_grad must be float32, got %s", op->name,
                        hg_dtype_name(s->dtype));
    if (hg_shape_size(s->ndim, s->shape) < 1)
        return hg_error(HG_ERR_VALUE, "%s: rescale_grad must hold one value, got an empty array",
                        op->name);
    return HG_OK;
}

static hg_status mp_adamw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    HG_TRY(check_scale(op, &in[5]));
    return infer_result(op, in, out, 5, 2);
}

/* A non-finite or zero rescale_grad skips the step (MXNet's PrepareInputBlobs): nothing is
 * updated and the output is the weight as it is. */
static bool skip_step(float scale) { return !isfinite(scale) || scale == 0; }

static void copy_weight(const hg_tensor *w, hg_tensor *out)
{
    if (hg_data(out) != hg_data(w))
        memcpy(hg_data(out), hg_data(w), (size_t)w->size * hg_dtype_size(w->dtype));
}

static hg_status mp_adamw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    const float scale = HG_DATA(in[5], float)[0];
    if (skip_step(scale)) {
        copy_weight(in[0], out[0]);
        return HG_OK;
    }
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    j.p[ADW_SCALE] = scale;
    job_run(&j, mp_adamw_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

/* multi_adamw_update / multi_mp_adamw_update: num_weights groups of (weight, grad, mean, var)
 * or (weight, grad, mean, var, weight32), then one rescale_grad; one output per weight. The
 * per-weight lrs, wds and etas are float tuples: MXNet's Tuple<float>, kept here as the
 * attribute's text ("(0.1, 0.2)" or "[0.1, 0.2]") and parsed by the op, since attribute
 * tuples hold integers; the text holds at most HG_MAX_STR - 1 bytes. */
static const hg_attr_spec k_multi_adamw_attrs[] = {
    [MADW_LRS] = {"lrs", HG_ATTR_STRING, HG_ATTR_REQUIRED, NULL,
                  "learning rates, one per weight (a tuple of floats)", NULL},
    [MADW_B1] = {"beta1", HG_ATTR_FLOAT, 0, "0.9", "decay rate of the first moment", NULL},
    [MADW_B2] = {"beta2", HG_ATTR_FLOAT, 0, "0.999", "decay rate of the second moment", NULL},
    [MADW_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-08", "added to sqrt(var) against division by 0",
                  NULL},
    [MADW_WDS] = {"wds", HG_ATTR_STRING, HG_ATTR_REQUIRED, NULL,
                  "weight decays, one per weight (a tuple of floats)", NULL},
    [MADW_ETAS] = {"etas", HG_ATTR_STRING, HG_ATTR_REQUIRED, NULL,
                   "learning rate schedule multipliers, one per weight (a tuple of floats)", NULL},
    [MADW_CLIP] = A_CLIP,
    [MADW_NUM] = {"num_weights", HG_ATTR_INT, 0, "1", "number of weights updated", NULL},
};
_Static_assert(HG_COUNT(k_multi_adamw_attrs) == MADW_NATTRS,
               "k_multi_adamw_attrs must match its enum");

#define MADW_MAX_WEIGHTS (HG_MAX_STR / 2) /* "1," is the shortest entry */
/* multi_mp: mean 5k+2, var 5k+3 and weight32 5k+4 for the groups within the 32-input mask. */
#define MP_MULTI_MUTATES 0x39ce739cu

/* Parses a float tuple attribute into v (as MXNet's float32 values); n: its length. */
static hg_status parse_floats(const hg_op_def *op, const hg_attrs *a, int k, float *v, int *n)
{
    *n = hg_ops_parse_floats(op, op->attrs[k].name, a->v[k].s, v, MADW_MAX_WEIGHTS, false);
    return *n < 0 ? HG_ERR_VALUE : HG_OK;
}

typedef struct madw_params {
    float lrs[MADW_MAX_WEIGHTS], wds[MADW_MAX_WEIGHTS], etas[MADW_MAX_WEIGHTS];
} madw_params;

static hg_status multi_params(const hg_op_def *op, const hg_attrs *a, madw_params *p)
{
    const int64_t nw = a->v[MADW_NUM].i;
    float *dst[3] = {p->lrs, p->wds, p->etas};
    const int keys[3] = {MADW_LRS, MADW_WDS, MADW_ETAS};
    for (int t = 0; t < 3; t++) {
        int n;
        HG_TRY(parse_floats(op, a, keys[t], dst[t], &n));
        if (n != nw)
            return hg_error(HG_ERR_VALUE, "%s: %s has %d values for num_weights=%lld", op->name,
                            op->attrs[keys[t]].name, n, (long long)nw);
    }
    return HG_OK;
}

static int multi_stride(const hg_op_def *op) { return strstr(op->name, "_mp_") ? 5 : 4; }
static int multi_adamw_nin(const hg_attrs *a) { return (int)a->v[MADW_NUM].i * 4 + 1; }
static int multi_mp_adamw_nin(const hg_attrs *a) { return (int)a->v[MADW_NUM].i * 5 + 1; }
static int multi_adamw_nout(const hg_attrs *a) { return (int)a->v[MADW_NUM].i; }

static hg_status multi_adamw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    const int64_t nw = a->v[MADW_NUM].i;
    const int st = multi_stride(op);
    if (nw < 1 || nw > MADW_MAX_WEIGHTS)
        return hg_error(HG_ERR_VALUE, "%s: num_weights must be in [1, %d], got %lld", op->name,
                        MADW_MAX_WEIGHTS, (long long)nw);
    if (nin != nw * st + 1 || nout != nw)
        return hg_error(HG_ERR_VALUE, "%s: num_weights=%lld needs %lld inputs, got %d", op->name,
                        (long long)nw, (long long)(nw * st + 1), nin);
    madw_params p;
    HG_TRY(multi_params(op, a, &p));
    HG_TRY(check_scale(op, &in[nin - 1]));
    for (int k = 0; k < nw; k++)
        HG_TRY(infer_result(op, &in[k * st], &out[k], st, st == 5 ? 2 : 4));
    return HG_OK;
}

static hg_status multi_adamw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    const int st = multi_stride(op);
    const float scale = HG_DATA(in[nin - 1], float)[0];
    if (skip_step(scale)) {
        for (int k = 0; k < nout; k++) copy_weight(in[k * st], out[k]);
        return HG_OK;
    }
    madw_params p;
    HG_TRY(multi_params(op, a, &p));
    for (int k = 0; k < nout; k++) {
        opt_job j;
        memset(&j, 0, sizeof j);
        for (int i = 0; i < st; i++) j.in[i] = hg_data(in[k * st + i]);
        j.out = hg_data(out[k]);
        j.p[ADW_LR] = p.lrs[k];
        j.p[ADW_B1] = (float)a->v[MADW_B1].f;
        j.p[ADW_B2] = (float)a->v[MADW_B2].f;
        j.p[ADW_EPS] = (float)a->v[MADW_EPS].f;
        j.p[ADW_WD] = p.wds[k];
        j.p[ADW_ETA] = p.etas[k];
        j.p[ADW_CLIP] = (float)a->v[MADW_CLIP].f;
        j.p[ADW_SCALE] = scale;
        job_run(&j, st == 5 ? mp_adamw_fns : adamw_fns, in[k * st]->dtype, out[k]->size);
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * RMSProp (Tieleman & Hinton): g' = clip(rescale_grad * g + wd * w);
 * n = (1-gamma1) * g'^2 + gamma1 * n; w' = w - lr * g' / sqrt(n + epsilon).
 * Centered (Graves, rmspropalex): also g = (1-gamma1) * g' + gamma1 * g;
 * delta = gamma2 * delta - lr * g' / sqrt(n - g^2 + epsilon); w' = w + delta.
 * Both then clip the weight to [-clip_weights, clip_weights] when clip_weights >= 0.
 */

static const hg_attr_spec k_rmsprop_attrs[] = {
    [RMS_LR] = A_LR,
    [RMS_G1] = {"gamma1", HG_ATTR_FLOAT, 0, "0.95", "decay rate of the mean squared gradient",
                NULL},
    [RMS_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-08", "added under the square root", NULL},
    [RMS_WD] = A_WD,
    [RMS_RG] = A_RESCALE,
    [RMS_CLIP] = A_CLIP,
    [RMS_CLIPW] = A_CLIP_WEIGHTS,
};
_Static_assert(HG_COUNT(k_rmsprop_attrs) == RMS_NATTRS, "k_rmsprop_attrs must match its enum");

#define RMSPROP_BODY(R, LD, ST)                                                                \
    {                                                                                          \
        const R lr = P(RMS_LR), g1 = P(RMS_G1), eps = P(RMS_EPS), wd = P(RMS_WD);              \
        const R rg = P(RMS_RG), cg = P(RMS_CLIP), cw = P(RMS_CLIPW);                           \
        const R w = LD(W, i);                                                                  \
        R gr = rg * LD(G, i) + wd * w;                                                         \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, (1 - g1) * (gr * gr) + g1 * LD(S(0), i));                                  \
        R nw = w - lr * (gr / SQRT(LD(S(0), i) + eps));                                        \
        if (cw >= 0) nw = CLIP(nw, cw);                                                        \
        ST(j->out, i, nw);                                                                     \
    }
OPT_KERNELS(rmsprop, RMSPROP_BODY)
OPT_FORWARD(rmsprop)

static const hg_attr_spec k_rmspropalex_attrs[] = {
    [RMSA_LR] = A_LR,
    [RMSA_G1] = {"gamma1", HG_ATTR_FLOAT, 0, "0.95", "decay rate of the gradient moments", NULL},
    [RMSA_G2] = {"gamma2", HG_ATTR_FLOAT, 0, "0.9", "momentum of the update", NULL},
    [RMSA_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-08", "added under the square root", NULL},
    [RMSA_WD] = A_WD,
    [RMSA_RG] = A_RESCALE,
    [RMSA_CLIP] = A_CLIP,
    [RMSA_CLIPW] = A_CLIP_WEIGHTS,
};
_Static_assert(HG_COUNT(k_rmspropalex_attrs) == RMSA_NATTRS,
               "k_rmspropalex_attrs must match its enum");

#define RMSPROPALEX_BODY(R, LD, ST)                                                            \
    {                                                                                          \
        const R lr = P(RMSA_LR), g1 = P(RMSA_G1), g2 = P(RMSA_G2), eps = P(RMSA_EPS);          \
        const R wd = P(RMSA_WD), rg = P(RMSA_RG), cg = P(RMSA_CLIP), cw = P(RMSA_CLIPW);       \
        const R w = LD(W, i);                                                                  \
        R gr = rg * LD(G, i) + wd * w;                                                         \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, (1 - g1) * gr * gr + g1 * LD(S(0), i));                                    \
        ST(S(1), i, (1 - g1) * gr + g1 * LD(S(1), i));                                         \
        const R n = LD(S(0), i), gm = LD(S(1), i);                                             \
        ST(S(2), i, g2 * LD(S(2), i) - (lr * gr / SQRT(n - gm * gm + eps)));                   \
        R nw = w + LD(S(2), i);                                                                \
        if (cw >= 0) nw = CLIP(nw, cw);                                                        \
        ST(j->out, i, nw);                                                                     \
    }
OPT_KERNELS(rmspropalex, RMSPROPALEX_BODY)
OPT_FORWARD(rmspropalex)

/* ---------------------------------------------------------------------------------------------
 * signSGD: w' = (1 - lr*wd) * w - lr * sign(g) (clip_gradient has no effect).
 * Signum: mom = momentum * mom - (1-momentum) * (wd * w + clip(rescale_grad * g));
 * w' = (1 - lr*wd_lh) * w + lr * sign(mom).
 */

static const hg_attr_spec k_signsgd_attrs[] = {
    [SSGD_LR] = A_LR,
    [SSGD_WD] = A_WD,
    [SSGD_RG] = A_RESCALE,
    [SSGD_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_signsgd_attrs) == SSGD_NATTRS, "k_signsgd_attrs must match its enum");

#define SIGNSGD_BODY(R, LD, ST)                                                                \
    {                                                                                          \
        const R lr = P(SSGD_LR), wd = P(SSGD_WD), g = LD(G, i);                                \
        ST(j->out, i, (1 - lr * wd) * LD(W, i) - lr * SIGN(g));                                \
    }
OPT_KERNELS(signsgd, SIGNSGD_BODY)
OPT_FORWARD(signsgd)

static const hg_attr_spec k_signum_attrs[] = {
    [SGNM_LR] = A_LR,
    [SGNM_MOM] = A_MOMENTUM,
    [SGNM_WD] = A_WD,
    [SGNM_RG] = A_RESCALE,
    [SGNM_CLIP] = A_CLIP,
    [SGNM_WDLH] = {"wd_lh", HG_ATTR_FLOAT, 0, "0",
                   "decoupled weight decay (Loshchilov & Hutter), not part of the momentum", NULL},
};
_Static_assert(HG_COUNT(k_signum_attrs) == SGNM_NATTRS, "k_signum_attrs must match its enum");

#define SIGNUM_BODY(R, LD, ST)                                                                 \
    {                                                                                          \
        const R lr = P(SGNM_LR), mu = P(SGNM_MOM), wd = P(SGNM_WD), rg = P(SGNM_RG);           \
        const R cg = P(SGNM_CLIP), wdlh = P(SGNM_WDLH), w = LD(W, i), g = LD(G, i);            \
        R m = LD(S(0), i);                                                                     \
        m = cg >= 0 ? mu * m - (1 - mu) * wd * w - (1 - mu) * CLIP(rg * g, cg)                 \
                    : mu * m - (1 - mu) * wd * w - (1 - mu) * rg * g;                          \
        ST(S(0), i, m);                                                                        \
        m = LD(S(0), i);                                                                       \
        ST(j->out, i, (1 - lr * wdlh) * w + lr * SIGN(m));                                     \
    }
OPT_KERNELS(signum, SIGNUM_BODY)
OPT_FORWARD(signum)

/* ---------------------------------------------------------------------------------------------
 * FTRL-proximal: g' = clip(rescale_grad * g);
 * z += g' - (sqrt(n + g'^2) - sqrt(n)) * w / lr; n += g'^2;
 * w' = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1).
 */

static const hg_attr_spec k_ftrl_attrs[] = {
    [FTRL_LR] = A_LR,
    [FTRL_L1] = {"lamda1", HG_ATTR_FLOAT, 0, "0.01", "L1 regularisation coefficient", NULL},
    [FTRL_BETA] = {"beta", HG_ATTR_FLOAT, 0, "1", "per-coordinate learning rate beta", NULL},
    [FTRL_WD] = A_WD,
    [FTRL_RG] = A_RESCALE,
    [FTRL_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_ftrl_attrs) == FTRL_NATTRS, "k_ftrl_attrs must match its enum");

#define FTRL_BODY(R, LD, ST)                                                                   \
    {                                                                                          \
        const R lr = P(FTRL_LR), l1 = P(FTRL_L1), beta = P(FTRL_BETA), wd = P(FTRL_WD);        \
        const R rg = P(FTRL_RG), cg = P(FTRL_CLIP), w = LD(W, i);                              \
        R gr = LD(G, i) * rg;                                                                  \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        const R n0 = LD(S(1), i);                                                              \
        ST(S(0), i, LD(S(0), i) + (gr - (SQRT(n0 + gr * gr) - SQRT(n0)) * w / lr));            \
        ST(S(1), i, n0 + gr * gr);                                                             \
        const R z = LD(S(0), i), n = LD(S(1), i);                                              \
        ST(j->out, i, (SIGN(z) * l1 - z) / ((beta + SQRT(n)) / lr + wd) *                      \
                          (R)(z > l1 || z < -l1));                                             \
    }
OPT_KERNELS(ftrl, FTRL_BODY)
OPT_FORWARD(ftrl)

/* ---------------------------------------------------------------------------------------------
 * LAMB, phase 1 (the per-element direction, written to a new array):
 * g' = clip(rescale_grad * g); mean, var as Adam (without wd);
 * out = mean^ / (sqrt(var^) + epsilon) + wd * w, with mean^ = mean / (1 - beta1^t) and
 * var^ = var / (1 - beta2^t) when bias_correction (else mean and var themselves).
 * Phase 2 (after the caller's norms r1 = |w|, r2 = |out1|): r1 is clamped to
 * [lower_bound, upper_bound] (each when >= 0); w' = w - lr * r1/r2 * g, or lr alone when
 * either norm is 0.
 */

static const hg_attr_spec k_lamb1_attrs[] = {
    [L1_B1] = {"beta1", HG_ATTR_FLOAT, 0, "0.9", "decay rate of the first moment", NULL},
    [L1_B2] = {"beta2", HG_ATTR_FLOAT, 0, "0.999", "decay rate of the second moment", NULL},
    [L1_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-06", "added to sqrt(var) against division by 0",
                NULL},
    [L1_T] = {"t", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "update count (for the bias correction)",
              NULL},
    [L1_BIAS] = {"bias_correction", HG_ATTR_BOOL, 0, "True", "divide the moments by 1 - beta^t",
                 NULL},
    [L1_WD] = {"wd", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "weight decay", NULL},
    [L1_RG] = A_RESCALE,
    [L1_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_lamb1_attrs) == L1_NATTRS, "k_lamb1_attrs must match its enum");

#define LAMB1_BODY(R, LD, ST)                                                                  \
    {                                                                                          \
        const R b1 = P(L1_B1), b2 = P(L1_B2), eps = P(L1_EPS), wd = P(L1_WD);                  \
        const R rg = P(L1_RG), cg = P(L1_CLIP), b1t = P(L1_B1T), b2t = P(L1_B2T);              \
        R gr = LD(G, i) * rg;                                                                  \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, b1 * LD(S(0), i) + (1 - b1) * gr);                                         \
        ST(S(1), i, b2 * LD(S(1), i) + (1 - b2) * gr * gr);                                    \
        R m = LD(S(0), i), v = LD(S(1), i);                                                    \
        if (j->p[L1_BIAS] != 0) {                                                              \
            m = m / (1 - b1t);                                                                 \
            v = v / (1 - b2t);                                                                 \
        }                                                                                      \
        ST(j->out, i, m / (SQRT(v) + eps) + wd * LD(W, i));                                    \
    }
OPT_KERNELS(lamb1, LAMB1_BODY)

static hg_status lamb1_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    /* MXNet: std::pow(float beta, int t), then the weight's type. */
    j.p[L1_B1T] = pow(j.p[L1_B1], (double)a->v[L1_T].i);
    j.p[L1_B2T] = pow(j.p[L1_B2], (double)a->v[L1_T].i);
    if (in[0]->dtype != HG_DTYPE_F64) {
        j.p[L1_B1T] = (float)j.p[L1_B1T];
        j.p[L1_B2T] = (float)j.p[L1_B2T];
    }
    job_run(&j, lamb1_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

static const hg_attr_spec k_lamb2_attrs[] = {
    [L2_LR] = A_LR,
    [L2_LB] = {"lower_bound", HG_ATTR_FLOAT, 0, "-1",
               "lower limit of the weight norm; negative: none", NULL},
    [L2_UB] = {"upper_bound", HG_ATTR_FLOAT, 0, "-1",
               "upper limit of the weight norm; negative: none", NULL},
};
_Static_assert(HG_COUNT(k_lamb2_attrs) == L2_NATTRS, "k_lamb2_attrs must match its enum");

#define LAMB2_BODY(R, LD, ST)                                                                  \
    {                                                                                          \
        const R rate = P(L2_RATE);                                                             \
        ST(j->out, i, LD(W, i) - rate * LD(G, i));                                             \
    }
OPT_KERNELS(lamb2, LAMB2_BODY)

static hg_status lamb2_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR];
    for (int k = 2; k < 4; k++) {
        hg_meta *r = &in[k];
        if (r->ndim < 0) { /* graph inference: a norm, shape (1,) */
            const int64_t one = 1;
            hg_meta_merge(r, in[0].dtype, 1, &one);
        }
        if (r->ndim < 1 || r->shape[0] != 1 || hg_shape_size(r->ndim, r->shape) < 1)
            return hg_error(HG_ERR_VALUE, "%s: %s must be a norm of shape [1], got shape %s",
                            op->name, input_name(op, k), hg_shape_str(s0, r->ndim, r->shape));
        if (in[0].ndim >= 0 && r->dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "%s: %s must have the weight's dtype %s, got %s", op->name,
                            input_name(op, k), hg_dtype_name(in[0].dtype), hg_dtype_name(r->dtype));
    }
    return infer_result(op, in, out, 2, 2);
}

static double load_scalar(const hg_tensor *t)
{
    switch (t->dtype) {
    case HG_DTYPE_F64: return HG_DATA(t, double)[0];
    case HG_DTYPE_F16: return hg_half_to_float(HG_DATA(t, uint16_t)[0]);
    default: return HG_DATA(t, float)[0];
    }
}

static hg_status lamb2_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    const double lb = j.p[L2_LB], ub = j.p[L2_UB];
    double r1 = load_scalar(in[2]), r2 = load_scalar(in[3]), lr = j.p[L2_LR];
    if (lb >= 0) r1 = fmax(r1, lb);
    if (ub >= 0) r1 = fmin(r1, ub);
    if (r1 != 0 && r2 != 0) {
        if (in[0]->dtype == HG_DTYPE_F64) lr = lr * r1 / r2;
        else lr = (float)lr * (float)r1 / (float)r2; /* in the weight's precision */
    }
    j.p[L2_RATE] = lr;
    job_run(&j, lamb2_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * mp_lamb_update_phase1/2: LAMB on a float32 master copy. Phase 1 reads the (float16) weight's
 * gradient, updates the float32 mean and var in place and returns the float32 direction g
 * (wd applies to weight32); phase 2 returns weight32 - lr * r1/r2 * g in the weight's dtype
 * (r1, r2: float32 norms of shape [1]). All arithmetic in float, as MXNet's kernels.
 */

#define MPLAMB1_BODY(R, LD, ST)                                                                \
    {                                                                                          \
        const float b1 = (float)P(L1_B1), b2 = (float)P(L1_B2), eps = (float)P(L1_EPS);        \
        const float wd = (float)P(L1_WD), rg = (float)P(L1_RG), cg = (float)P(L1_CLIP);        \
        float gr = (float)LD(G, i) * rg;                                                       \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        F32(2)[i] = b1 * F32(2)[i] + (1 - b1) * gr;                                            \
        F32(3)[i] = b2 * F32(3)[i] + (1 - b2) * gr * gr;                                       \
        float m = F32(2)[i], v = F32(3)[i];                                                    \
        if (j->p[L1_BIAS] != 0) {                                                              \
            m = (float)(m / (1. - j->p[L1_B1T]));                                              \
            v = v / (1 - (float)j->p[L1_B2T]);                                                 \
        }                                                                                      \
        ((float *)j->out)[i] = m / (sqrtf(v) + eps) + wd * F32(4)[i];                          \
    }
OPT_KERNELS(mplamb1, MPLAMB1_BODY)

static hg_status mplamb1_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    HG_TRY(infer_mp(op, a, nin, in, nout, out));
    out[0].dtype = HG_DTYPE_F32;
    return HG_OK;
}

static hg_status mplamb1_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    j.p[L1_B1T] = (float)pow(j.p[L1_B1], (double)a->v[L1_T].i);
    j.p[L1_B2T] = (float)pow(j.p[L1_B2], (double)a->v[L1_T].i);
    job_run(&j, mplamb1_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

#define MPLAMB2_BODY(R, LD, ST)                                                                \
    {                                                                                          \
        const float rate = (float)P(L2_RATE);                                                  \
        ST(j->out, i, (R)(F32(4)[i] - rate * F32(1)[i]));                                      \
    }
OPT_KERNELS(mplamb2, MPLAMB2_BODY)

static hg_status mplamb2_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR];
    if (in[0].ndim < 0) {
        out[0] = in[0];
        return HG_OK;
    }
    for (int k = 2; k < 4; k++) {
        const int64_t one = 1;
        if (in[k].ndim < 0) hg_meta_merge(&in[k], HG_DTYPE_F32, 1, &one);
        if (in[k].ndim != 1 || in[k].shape[0] != 1 || in[k].dtype != HG_DTYPE_F32)
            return hg_error(HG_ERR_VALUE, "%s: %s must be a float32 norm of shape [1], got %s %s",
                            op->name, input_name(op, k), hg_dtype_name(in[k].dtype),
                            hg_shape_str(s0, in[k].ndim, in[k].shape));
    }
    /* weight32 (input 4) and g (input 1) are float32 arrays of the weight's shape. */
    hg_meta chk[2] = {in[0], in[1]};
    HG_TRY(check_inputs(op, chk, 2, 1));
    in[1] = chk[1];
    chk[1] = in[4];
    hg_status st = check_inputs(op, chk, 2, 1);
    if (st != HG_OK) return hg_error_prefix(st, "(weight32) ");
    in[4] = chk[1];
    out[0] = in[0];
    return HG_OK;
}

static hg_status mplamb2_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    float r1 = HG_DATA(in[2], float)[0], r2 = HG_DATA(in[3], float)[0], lr = (float)j.p[L2_LR];
    if (j.p[L2_LB] >= 0) r1 = fmaxf(r1, (float)j.p[L2_LB]);
    if (j.p[L2_UB] >= 0) r1 = fminf(r1, (float)j.p[L2_UB]);
    if (r1 != 0.0f && r2 != 0.0f) lr = lr * r1 / r2;
    j.p[L2_RATE] = lr;
    job_run(&j, mplamb2_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * FTML (Zheng & Kwok 2017): g' = clip(rescale_grad * g + wd * w); v = beta2 v + (1 - beta2) g'^2;
 * d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon);
 * z = beta1 z + (1 - beta1) g' - (d_t - beta1 d) w; d = d_t; w' = -z / d_t.
 */

static const hg_attr_spec k_ftml_attrs[] = {
    [FT_LR] = A_LR,
    [FT_B1] = {"beta1", HG_ATTR_FLOAT, 0, "0.6", "decay rate of the first moment", NULL},
    [FT_B2] = {"beta2", HG_ATTR_FLOAT, 0, "0.999", "decay rate of the second moment", NULL},
    [FT_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-08", "added to the root of the second moment",
                NULL},
    [FT_T] = {"t", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "update count", NULL},
    [FT_WD] = A_WD,
    [FT_RG] = A_RESCALE,
    [FT_CLIP] = {"clip_grad", HG_ATTR_FLOAT, 0, "-1",
                 "clip the rescaled gradient to [-clip_grad, clip_grad]; negative: off", NULL},
};
_Static_assert(HG_COUNT(k_ftml_attrs) == FT_NATTRS, "k_ftml_attrs must match its enum");

#define FTML_BODY(R, LD, ST)                                                                   \
    {                                                                                          \
        const R lr = P(FT_LR), b1 = P(FT_B1), b2 = P(FT_B2), eps = P(FT_EPS), wd = P(FT_WD);   \
        const R rg = P(FT_RG), cg = P(FT_CLIP), b1t = P(FT_B1T), b2t = P(FT_B2T);              \
        const R w = LD(W, i);                                                                  \
        R gr = rg * LD(G, i) + wd * w;                                                         \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        const R v = b2 * LD(S(1), i) + (1 - b2) * gr * gr;                                     \
        ST(S(1), i, v);                                                                        \
        const R dt = (1 - b1t) / lr * (SQRT(LD(S(1), i) / (1 - b2t)) + eps);                   \
        const R z = b1 * LD(S(2), i) + (1 - b1) * gr - (dt - b1 * LD(S(0), i)) * w;            \
        ST(S(2), i, z);                                                                        \
        ST(S(0), i, dt);                                                                       \
        ST(j->out, i, -LD(S(2), i) / LD(S(0), i));                                             \
    }
OPT_KERNELS(ftml, FTML_BODY)

static hg_status ftml_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    opt_job j;
    job_init(&j, op, a, nin, in, out[0]);
    j.p[FT_B1T] = pow(j.p[FT_B1], (double)a->v[FT_T].i);
    j.p[FT_B2T] = pow(j.p[FT_B2], (double)a->v[FT_T].i);
    if (in[0]->dtype != HG_DTYPE_F64) {
        j.p[FT_B1T] = (float)j.p[FT_B1T];
        j.p[FT_B2T] = (float)j.p[FT_B2T];
    }
    job_run(&j, ftml_fns, in[0]->dtype, out[0]->size);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * reset_arrays: sets every input to zero in place (MXNet's multi-array gradient reset). It has
 * no outputs; all inputs are mutated (the mask covers the first 32, the kernel writes all).
 */

static const hg_attr_spec k_reset_attrs[] = {
    [RA_NUM] = {"num_arrays", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of arrays", NULL},
};

static int reset_nin(const hg_attrs *a) { return (int)a->v[RA_NUM].i; }
static int reset_nout(const hg_attrs *a)
{
    (void)a;
    return 0;
}

static hg_status reset_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)op;
    (void)in;
    (void)out;
    (void)nout;
    if (a->v[RA_NUM].i != nin || nin < 1)
        return hg_error(HG_ERR_VALUE, "reset_arrays: num_arrays=%lld but %d arrays were given",
                        (long long)a->v[RA_NUM].i, nin);
    return HG_OK;
}

static hg_status reset_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nout;
    (void)out;
    for (int k = 0; k < nin; k++) hg_ops_zero_fill(in[k]);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * AdaGrad and AdaDelta, dense versions of MXNet 1.9.1's Python updates:
 * AdaGrad: g' = clip(rescale_grad * g); history += g'^2;
 *          w' = w - lr * (g' / sqrt(history + epsilon) + wd * w).
 * AdaDelta: g' = clip(rescale_grad * g); acc_g = rho * acc_g + (1-rho) * g'^2;
 *           d = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g';
 *           acc_delta = rho * acc_delta + (1-rho) * d^2; w' = w - (d + wd * w).
 */

static const hg_attr_spec k_adagrad_attrs[] = {
    [AG_LR] = A_LR,
    [AG_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-07", "added to the history under the square root",
                NULL},
    [AG_WD] = A_WD,
    [AG_RG] = A_RESCALE,
    [AG_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_adagrad_attrs) == AG_NATTRS, "k_adagrad_attrs must match its enum");

#define ADAGRAD_BODY(R, LD, ST)                                                                \
    {                                                                                          \
        const R lr = P(AG_LR), eps = P(AG_EPS), wd = P(AG_WD), rg = P(AG_RG);                  \
        const R cg = P(AG_CLIP), w = LD(W, i);                                                 \
        R gr = LD(G, i) * rg;                                                                  \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, LD(S(0), i) + gr * gr);                                                    \
        const R div = gr / SQRT(LD(S(0), i) + eps);                                            \
        ST(j->out, i, w + (div + w * wd) * -lr);                                               \
    }
OPT_KERNELS(adagrad, ADAGRAD_BODY)
OPT_FORWARD(adagrad)

static const hg_attr_spec k_adadelta_attrs[] = {
    [AD_RHO] = {"rho", HG_ATTR_FLOAT, 0, "0.9", "decay rate of both accumulators", NULL},
    [AD_EPS] = {"epsilon", HG_ATTR_FLOAT, 0, "1e-05", "added under both square roots", NULL},
    [AD_WD] = A_WD,
    [AD_RG] = A_RESCALE,
    [AD_CLIP] = A_CLIP,
};
_Static_assert(HG_COUNT(k_adadelta_attrs) == AD_NATTRS, "k_adadelta_attrs must match its enum");

#define ADADELTA_BODY(R, LD, ST)                                                               \
    {                                                                                          \
        const R rho = P(AD_RHO), eps = P(AD_EPS), wd = P(AD_WD), rg = P(AD_RG);                \
        const R cg = P(AD_CLIP), w = LD(W, i);                                                 \
        R gr = LD(G, i) * rg;                                                                  \
        if (cg >= 0) gr = CLIP(gr, cg);                                                        \
        ST(S(0), i, LD(S(0), i) * rho + (1 - rho) * gr * gr);                                  \
        const R d = SQRT(LD(S(1), i) + eps) / SQRT(LD(S(0), i) + eps) * gr;                    \
        ST(S(1), i, LD(S(1), i) * rho + (1 - rho) * d * d);                                    \
        ST(j->out, i, w - (d + wd * w));                                                       \
    }
OPT_KERNELS(adadelta, ADADELTA_BODY)
OPT_FORWARD(adadelta)

/* ---------------------------------------------------------------------------------------------
 * Registry
 */

/* HG_COUNT(INPUTS) counts the NULL that HG_NAMES appends. */
#define OPT_OP(NAME, DOC, INPUTS, ATTRS, INFER, FWD, MUTATE)                                   \
    {.name = NAME, .doc = DOC, .input_names = INPUTS, .attrs = ATTRS,                           \
     .num_attrs = HG_COUNT(ATTRS), .num_inputs = HG_COUNT(INPUTS) - 1, .infer = INFER,          \
     .forward = FWD, .flags = HG_OP_NO_GRAD | HG_OP_INPLACE, .mutate_inputs = MUTATE}

const hg_op_def hg_ops_optimizer[] = {
    OPT_OP("sgd_update", "SGD: weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad)",
           HG_NAMES("weight", "grad"), k_sgd_attrs, infer_plain, sgd_forward, 0),
    OPT_OP("sgd_mom_update", "SGD with momentum; updates mom in place",
           HG_NAMES("weight", "grad", "mom"), k_sgd_mom_attrs, infer_plain, sgd_mom_forward,
           1u << 2),
    OPT_OP("mp_sgd_update", "SGD on a float32 master copy (weight32) of a low-precision weight",
           HG_NAMES("weight", "grad", "weight32"), k_sgd_attrs, infer_mp, mp_sgd_forward, 1u << 2),
    OPT_OP("mp_sgd_mom_update", "SGD with momentum on a float32 master copy (weight32)",
           HG_NAMES("weight", "grad", "mom", "weight32"), k_sgd_mom_attrs, infer_mp,
           mp_sgd_mom_forward, (1u << 2) | (1u << 3)),
    OPT_OP("nag_mom_update", "Nesterov accelerated gradient; updates mom in place",
           HG_NAMES("weight", "grad", "mom"), k_nag_attrs, infer_plain, nag_mom_forward, 1u << 2),
    OPT_OP("mp_nag_mom_update", "Nesterov accelerated gradient on a float32 master copy",
           HG_NAMES("weight", "grad", "mom", "weight32"), k_nag_attrs, infer_mp, mp_nag_mom_forward,
           (1u << 2) | (1u << 3)),
    OPT_OP("adam_update",
           "Adam (bias correction folded into lr by the caller); updates mean "
           "and var in place",
           HG_NAMES("weight", "grad", "mean", "var"), k_adam_attrs, infer_plain, adam_forward,
           (1u << 2) | (1u << 3)),
    {.name = "_adamw_update",
     .aliases = HG_NAMES("_contrib_adamw_update"),
     .doc = "AdamW (decoupled weight decay); rescale_grad is a one-value float32 array and a "
            "non-finite or zero value skips the update",
     .input_names = HG_NAMES("weight", "grad", "mean", "var", "rescale_grad"),
     .attrs = k_adamw_attrs,
     .num_attrs = HG_COUNT(k_adamw_attrs),
     .num_inputs = 5,
     .infer = adamw_infer,
     .forward = adamw_forward,
     .flags = HG_OP_NO_GRAD | HG_OP_INPLACE,
     .mutate_inputs = (1u << 2) | (1u << 3)},
    {.name = "_mp_adamw_update",
     .aliases = HG_NAMES("_contrib_mp_adamw_update"),
     .doc = "AdamW with a float32 master copy (weight32); rescale_grad is a one-value float32 "
            "array and a non-finite or zero value skips the update",
     .input_names = HG_NAMES("weight", "grad", "mean", "var", "weight32", "rescale_grad"),
     .attrs = k_adamw_attrs,
     .num_attrs = HG_COUNT(k_adamw_attrs),
     .num_inputs = 6,
     .infer = mp_adamw_infer,
     .forward = mp_adamw_forward,
     .flags = HG_OP_NO_GRAD | HG_OP_INPLACE,
     .mutate_inputs = (1u << 2) | (1u << 3) | (1u << 4)},
    {.name = "_multi_adamw_update",
     .aliases = HG_NAMES("_contrib_multi_adamw_update"),
     .doc = "AdamW on num_weights (weight, grad, mean, var) groups then one rescale_grad; "
            "per-weight lrs, wds, etas; returns the new weights",
     .input_names = HG_NAMES("data"),
     .attrs = k_multi_adamw_attrs,
     .num_attrs = HG_COUNT(k_multi_adamw_attrs),
     .get_num_inputs = multi_adamw_nin,
     .get_num_outputs = multi_adamw_nout,
     .infer = multi_adamw_infer,
     .forward = multi_adamw_forward,
     .flags = HG_OP_VARARGS | HG_OP_NO_GRAD,
     .mutate_inputs = 0xccccccccu}, /* mean 4k+2, var 4k+3 (within the 32-input mask) */
    {.name = "_multi_mp_adamw_update",
     .aliases = HG_NAMES("_contrib_multi_mp_adamw_update"),
     .doc = "AdamW with float32 master copies on num_weights (weight, grad, mean, var, weight32) "
            "groups then one rescale_grad; returns the new weights",
     .input_names = HG_NAMES("data"),
     .attrs = k_multi_adamw_attrs,
     .num_attrs = HG_COUNT(k_multi_adamw_attrs),
     .get_num_inputs = multi_mp_adamw_nin,
     .get_num_outputs = multi_adamw_nout,
     .infer = multi_adamw_infer,
     .forward = multi_adamw_forward,
     .flags = HG_OP_VARARGS | HG_OP_NO_GRAD,
     .mutate_inputs = MP_MULTI_MUTATES},
    OPT_OP("rmsprop_update", "RMSProp (Tieleman & Hinton); updates n in place",
           HG_NAMES("weight", "grad", "n"), k_rmsprop_attrs, infer_plain, rmsprop_forward, 1u << 2),
    OPT_OP("rmspropalex_update", "centered RMSProp (Graves 2013); updates n, g, delta in place",
           HG_NAMES("weight", "grad", "n", "g", "delta"), k_rmspropalex_attrs, infer_plain,
           rmspropalex_forward, (1u << 2) | (1u << 3) | (1u << 4)),
    OPT_OP("signsgd_update", "signSGD: weight = (1 - lr*wd)*weight - lr*sign(grad)",
           HG_NAMES("weight", "grad"), k_signsgd_attrs, infer_plain, signsgd_forward, 0),
    OPT_OP("signum_update", "Signum: SGD on the sign of the momentum; updates mom in place",
           HG_NAMES("weight", "grad", "mom"), k_signum_attrs, infer_plain, signum_forward, 1u << 2),
    OPT_OP("ftrl_update", "FTRL-proximal; updates z and n in place",
           HG_NAMES("weight", "grad", "z", "n"), k_ftrl_attrs, infer_plain, ftrl_forward,
           (1u << 2) | (1u << 3)),
    {.name = "lamb_update_phase1",
     .doc = "LAMB phase 1: updates mean and var in place and returns the update direction g",
     .input_names = HG_NAMES("weight", "grad", "mean", "var"),
     .attrs = k_lamb1_attrs,
     .num_attrs = HG_COUNT(k_lamb1_attrs),
     .num_inputs = 4,
     .infer = infer_plain,
     .forward = lamb1_forward,
     .flags = HG_OP_NO_GRAD,
     .mutate_inputs = (1u << 2) | (1u << 3)},
    OPT_OP("lamb_update_phase2",
           "LAMB phase 2: weight - lr * r1/r2 * g (trust ratio of the "
           "norms r1 = |weight|, r2 = |g|)",
           HG_NAMES("weight", "g", "r1", "r2"), k_lamb2_attrs, lamb2_infer, lamb2_forward, 0),
    {.name = "mp_lamb_update_phase1",
     .doc = "LAMB phase 1 on a float32 master copy: updates mean and var in place and returns "
            "the float32 direction g",
     .input_names = HG_NAMES("weight", "grad", "mean", "var", "weight32"),
     .attrs = k_lamb1_attrs,
     .num_attrs = HG_COUNT(k_lamb1_attrs),
     .num_inputs = 5,
     .infer = mplamb1_infer,
     .forward = mplamb1_forward,
     .flags = HG_OP_NO_GRAD,
     .mutate_inputs = (1u << 2) | (1u << 3)},
    {.name = "mp_lamb_update_phase2",
     .doc = "LAMB phase 2 on a float32 master copy: weight32 - lr * r1/r2 * g in the weight's "
            "dtype",
     .input_names = HG_NAMES("weight", "g", "r1", "r2", "weight32"),
     .attrs = k_lamb2_attrs,
     .num_attrs = HG_COUNT(k_lamb2_attrs),
     .num_inputs = 5,
     .infer = mplamb2_infer,
     .forward = mplamb2_forward,
     .flags = HG_OP_NO_GRAD},
    OPT_OP("ftml_update", "FTML (Follow the Moving Leader); updates d, v and z in place",
           HG_NAMES("weight", "grad", "d", "v", "z"), k_ftml_attrs, infer_plain, ftml_forward,
           (1u << 2) | (1u << 3) | (1u << 4)),
    {.name = "reset_arrays",
     .doc = "sets every input array to zero in place (no outputs)",
     .input_names = HG_NAMES("data"),
     .attrs = k_reset_attrs,
     .num_attrs = HG_COUNT(k_reset_attrs),
     .get_num_inputs = reset_nin,
     .get_num_outputs = reset_nout,
     .infer = reset_infer,
     .forward = reset_forward,
     .flags = HG_OP_VARARGS | HG_OP_NO_GRAD,
     .mutate_inputs = 0xffffffffu},
    OPT_OP("_adagrad_update", "AdaGrad (dense); updates history in place",
           HG_NAMES("weight", "grad", "history"), k_adagrad_attrs, infer_plain, adagrad_forward,
           1u << 2),
    OPT_OP("_adadelta_update", "AdaDelta (dense); updates acc_g and acc_delta in place",
           HG_NAMES("weight", "grad", "acc_g", "acc_delta"), k_adadelta_attrs, infer_plain,
           adadelta_forward, (1u << 2) | (1u << 3)),
    {0},
};
