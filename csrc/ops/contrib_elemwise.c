/* Element-wise contrib ops (MXNet's _contrib_ prefix): the straight-through estimators round_ste
 * and sign_ste (rounding forward, identity gradient), gradientmultiplier (identity forward,
 * gradient scaled by `scalar`) and quadratic (a x^2 + b x + c). They run on the generic
 * element-wise driver, so they fuse like any unary map. */
#include "ops/contrib_elemwise.h"
#include "ops/ew.h"
#include "ops/ops_util.h"

/* The straight-through estimators: rounding forward; MXNet's rule is CloneGradient, the
 * incoming gradient passed on unchanged. Rounding is the identity on integers. */
HG_EW_FLOAT(HG_EW_UNARY, ste_round, round(v))
HG_EW_ALL(HG_EW_UNARY, ste_sign, (v > 0) - (v < 0))
HG_EW_ALL(HG_EW_UNARY, ste_copy, v)

static hg_status ste_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_copy", HG_GIN(hg_g_ograd(g, 0)), NULL));
    return hg_g_status(g);
}

/* gradientmultiplier shares the _*_scalar schema (scalar, is_int) as in MXNet. */
static const hg_attr_spec k_gm_attrs[] = {
    [SC_SCALAR] = {"scalar", HG_ATTR_FLOAT, 0, "1", "factor the gradient is multiplied by", NULL},
    [SC_IS_INT] = {"is_int", HG_ATTR_BOOL, 0, "True",
                   "whether the scalar was an integer in the front end", NULL},
};
_Static_assert(HG_COUNT(k_gm_attrs) == SC_NATTRS, "k_gm_attrs must match its enum");

static hg_status gm_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_scalar(g, "_mul_scalar", hg_g_ograd(g, 0), hg_g_attrs(g)->v[SC_SCALAR].f));
    return hg_g_status(g);
}

/* quadratic: MXNet's a, b and c are float32 fields, so they are rounded to float before use
 * whatever the data's dtype. */
static const hg_attr_spec k_quad_attrs[] = {
    [QA] = {"a", HG_ATTR_FLOAT, 0, "0", "coefficient of the quadratic term", NULL},
    [QB] = {"b", HG_ATTR_FLOAT, 0, "0", "coefficient of the linear term", NULL},
    [QC] = {"c", HG_ATTR_FLOAT, 0, "0", "constant term", NULL},
};
_Static_assert(HG_COUNT(k_quad_attrs) == Q_NATTRS, "k_quad_attrs must match its enum");

#define QUAD(T)                                                                                \
    static void quad_##T(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,   \
                         void *out, const hg_attrs *at)                                        \
    {                                                                                          \
        const T *x = in0;                                                                      \
        T *y = out;                                                                            \
        (void)in1;                                                                             \
        (void)s1;                                                                              \
        const T a = (T)(float)at->v[QA].f, b = (T)(float)at->v[QB].f,                          \
                c = (T)(float)at->v[QC].f;                                                     \
        for (int64_t i = 0; i < n; i++) {                                                      \
            T v = x[s0 ? i : 0];                                                               \
            y[i] = (T)(a * v * v + b * v + c);                                                 \
        }                                                                                      \
    }
QUAD(f32)
QUAD(f64)
QUAD(i32)
QUAD(i64)
QUAD(i8)
QUAD(u8)

/* d/dx (a x^2 + b x + c) = 2a x + b: itself a quadratic (0, 2a, b). */
static hg_status quad_grad(hg_grad_ctx *g)
{
    const hg_attrs *a = hg_g_attrs(g);
    const char *b2 = hg_g_fmt(g, "%.9g", 2.0 * (double)(float)a->v[QA].f);
    const char *c2 = hg_g_fmt(g, "%.9g", (double)(float)a->v[QB].f);
    hg_sentry d = hg_g_op(g, "_contrib_quadratic", HG_GIN(hg_g_in(g, 0)),
                          HG_KV("a", "0", "b", b2, "c", c2));
    hg_g_set(g, 0, hg_g_op(g, "elemwise_mul", HG_GIN(hg_g_ograd(g, 0), d), NULL));
    return hg_g_status(g);
}

#define ROUND_TABLE                                                                             \
    {[HG_DTYPE_F32] = ste_round_f32, [HG_DTYPE_F64] = ste_round_f64, [HG_DTYPE_I32] = ste_copy_i32, \
     [HG_DTYPE_I64] = ste_copy_i64, [HG_DTYPE_I8] = ste_copy_i8, [HG_DTYPE_U8] = ste_copy_u8}
#define DATA HG_NAMES("data")
#define EW_OP(NAME, TABLE, DOC, ATTRS, NATTRS, GR)                                              \
    {.name = NAME, .doc = DOC, .input_names = DATA, .num_inputs = 1, .attrs = ATTRS,            \
     .num_attrs = NATTRS, .infer = hg_infer_same, .ew = TABLE, .ew_arity = 1,                   \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE, .grad = GR}

const hg_op_def hg_ops_contrib_elemwise[] = {
    EW_OP("_contrib_round_ste", ROUND_TABLE,
          "round to the nearest integer (halves away from zero); straight-through gradient", NULL,
          0, ste_grad),
    EW_OP("_contrib_sign_ste", HG_EW_TABLE_ALL(ste_sign),
          "-1, 0 or 1 by the sign of x; straight-through gradient", NULL, 0, ste_grad),
    EW_OP("_contrib_gradientmultiplier", HG_EW_TABLE_ALL(ste_copy),
          "identity forward; the gradient is multiplied by scalar", k_gm_attrs, SC_NATTRS, gm_grad),
    EW_OP("_contrib_quadratic", HG_EW_TABLE_ALL(quad), "a * x^2 + b * x + c", k_quad_attrs,
          Q_NATTRS, quad_grad),
    {0},
};
