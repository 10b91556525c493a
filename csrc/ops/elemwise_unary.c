/* Unary element-wise ops (math, rounding, trigonometry, activations) and Activation, with their
 * gradient rules. Integer dtypes are accepted where the op is meaningful on integers (abs, sign,
 * rounding, copies). The hot activations differentiate in one pass through _backward_<act>
 * ops (gradient and output, or input for softsign); the other rules compose registered ops.
 * The expressions and the op rows are the lists of ops/ew_list.h, which the GPU kernels
 * (csrc/kernels/cuda/ew.cu) expand too; this file stamps the CPU tiles and holds the rules. */
#include <tgmath.h>

#include "kernels/cpu/vmath.h"
#include "ops/ew.h"
#include "ops/ew_list.h"

/* The unary expressions and the activation gradients (ops/ew_list.h) as tile functions. */
#define STAMP_UNARY(TYPES, ID, FEXPR, IEXPR) HG_EW_STAMP(HG_EW_UNARY, TYPES, ID, FEXPR, IEXPR)
#define STAMP_BINARY(TYPES, ID, FEXPR, IEXPR) HG_EW_STAMP(HG_EW_BINARY, TYPES, ID, FEXPR, IEXPR)
HG_EW_UNARY_EXPRS(STAMP_UNARY)
HG_EW_ACT_BW_EXPRS(STAMP_BINARY)
#undef STAMP_UNARY
#undef STAMP_BINARY

/* float32 exp and sigmoid run through the vectorised exp (libm's expf cannot vectorise). */
static void exp__f32(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1, void *out,
                     const hg_attrs *a)
{
    const float *x = in0;
    float *y = out;
    if (!s0) {
        float v = expf(x[0]);
        for (int64_t i = 0; i < n; i++) y[i] = v;
        return;
    }
    hg_vexp_f32(x, y, n);
}

static void sigmoid_f32(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,
                        void *out, const hg_attrs *a)
{
    const float *x = in0;
    float *y = out;
    if (!s0) {
        float v = 1 / (1 + expf(-x[0]));
        for (int64_t i = 0; i < n; i++) y[i] = v;
        return;
    }
    for (int64_t i = 0; i < n; i++) y[i] = -x[i];
    hg_vexp_f32_inplace(y, n);
    for (int64_t i = 0; i < n; i++) y[i] = 1 / (1 + y[i]);
}

/* ---- gradient rules ---------------------------------------------------------------------- */
/* Shorthands: forward input, output and incoming gradient; op(x), op(a, b), op(x, scalar=v). */
#define X hg_g_in(g, 0)
#define Y hg_g_out(g, 0)
#define DY hg_g_ograd(g, 0)
#define U(OP, A) hg_ew_g1(g, OP, A)
#define B(OP, A, C) hg_ew_g2(g, OP, A, C)
#define S(OP, A, V) hg_g_scalar(g, OP, A, V)
#define MUL(D) B("elemwise_mul", DY, D)
#define DIV(D) B("elemwise_div", DY, D)
/* NAME_grad: the input's gradient is EXPR. */
#define RULE(NAME, EXPR)                                                                        \
    static hg_status NAME##_grad(hg_grad_ctx *g)                                                \
    {                                                                                           \
        hg_g_set(g, 0, EXPR);                                                                   \
        return hg_g_status(g);                                                                  \
    }

RULE(relu, B("_backward_relu", DY, Y))
RULE(sigmoid, B("_backward_sigmoid", DY, Y))
RULE(tanh, B("_backward_tanh", DY, Y))
RULE(softsign, B("_backward_softsign", DY, X))
RULE(exp, MUL(Y))
RULE(expm1, MUL(U("exp", X)))
RULE(log, DIV(X))
RULE(log1p, DIV(S("_plus_scalar", X, 1)))
RULE(log2, DIV(S("_mul_scalar", X, 0.69314718055994530942)))
RULE(log10, DIV(S("_mul_scalar", X, 2.30258509299404568402)))
RULE(sqrt, DIV(S("_mul_scalar", Y, 2)))                                  /* 1 / (2 sqrt(x)) */
RULE(rsqrt, MUL(S("_mul_scalar", B("elemwise_div", Y, X), -0.5)))        /* -x^-1.5 / 2 */
RULE(cbrt, DIV(S("_mul_scalar", U("square", Y), 3)))                     /* 1 / (3 cbrt(x)^2) */
RULE(rcbrt, MUL(S("_mul_scalar", B("elemwise_div", Y, X), -1.0 / 3)))   /* -x^(-4/3) / 3 */
RULE(square, MUL(S("_mul_scalar", X, 2)))
RULE(abs, MUL(U("sign", X)))                                             /* 0 at 0 */
RULE(negative, U("negative", DY))
RULE(reciprocal, MUL(U("negative", U("square", Y))))
RULE(sin, MUL(U("cos", X)))
RULE(cos, MUL(U("negative", U("sin", X))))
RULE(tan, MUL(S("_plus_scalar", U("square", Y), 1)))
RULE(arcsin, DIV(U("sqrt", S("_rminus_scalar", U("square", X), 1))))
RULE(arccos, DIV(U("negative", U("sqrt", S("_rminus_scalar", U("square", X), 1)))))
RULE(arctan, DIV(S("_plus_scalar", U("square", X), 1)))
RULE(sinh, MUL(U("cosh", X)))
RULE(cosh, MUL(U("sinh", X)))
RULE(arcsinh, DIV(U("sqrt", S("_plus_scalar", U("square", X), 1))))
RULE(arccosh, DIV(U("sqrt", S("_minus_scalar", U("square", X), 1))))
RULE(arctanh, DIV(S("_rminus_scalar", U("square", X), 1)))
/* A constant derivative, written through ones_like(x) so that the gradient stays connected to
 * x: as with MXNet's _backward_degrees(dy, x), differentiating it again gives zeros, not an
 * "unreachable variable" error (test_higher_order_grad's radians case). */
RULE(degrees, MUL(S("_mul_scalar", U("ones_like", X), 180 / 3.14159265358979323846)))
RULE(radians, MUL(S("_mul_scalar", U("ones_like", X), 3.14159265358979323846 / 180)))
RULE(erf, MUL(S("_mul_scalar", U("exp", U("negative", U("square", X))), 1.12837916709551257390)))
RULE(gamma, MUL(B("elemwise_mul", Y, U("_digamma", X))))
RULE(gammaln, MUL(U("_digamma", X)))
RULE(copy, DY)
RULE(make_loss, U("ones_like", X)) /* a loss head: ones, whatever flows in (as MXNet) */

static const char *const k_act_backward[] = {
#define ACT_BACKWARD(ID, NAME, MK, FN, BW_X) [ACT_##ID] = "_backward_" #NAME,
    ACT_TYPES(ACT_BACKWARD)
#undef ACT_BACKWARD
};
_Static_assert(HG_COUNT(k_act_backward) == ACT_NTYPES, "k_act_backward must match ACT_TYPES");
static const bool k_act_backward_takes_x[] = {
#define ACT_BW_X(ID, NAME, MK, FN, BW_X) [ACT_##ID] = BW_X,
    ACT_TYPES(ACT_BW_X)
#undef ACT_BW_X
};
_Static_assert(HG_COUNT(k_act_backward_takes_x) == ACT_NTYPES,
               "k_act_backward_takes_x must match ACT_TYPES");

static hg_status activation_grad(hg_grad_ctx *g)
{
    int act = (int)hg_g_attrs(g)->v[AC_ACT_TYPE].i;
    hg_g_set(g, 0, B(k_act_backward[act], DY, k_act_backward_takes_x[act] ? X : Y));
    return hg_g_status(g);
}

/* Second order: each _backward_<act>(a, v) is linear in a, so d/da is the same op applied to
 * the incoming gradient; d/dv differentiates the activation's derivative. relu's derivative
 * is piecewise constant: v gets none. */
#define A0 hg_g_in(g, 0)
#define V1 hg_g_in(g, 1)
#define BW_RULE(ACT, DV)                                                                        \
    static hg_status bw_##ACT##_grad(hg_grad_ctx *g)                                            \
    {                                                                                           \
        if (hg_g_needs(g, 0)) hg_g_set(g, 0, B("_backward_" #ACT, DY, V1));                     \
        if (hg_g_needs(g, 1)) hg_g_set(g, 1, DV);                                               \
        return hg_g_status(g);                                                                  \
    }
#define DA B("elemwise_mul", DY, A0)
BW_RULE(relu, (hg_sentry){0})
BW_RULE(sigmoid, B("elemwise_mul", DA, S("_rminus_scalar", S("_mul_scalar", V1, 2), 1)))
BW_RULE(tanh, S("_mul_scalar", B("elemwise_mul", DA, V1), -2))
BW_RULE(softrelu, B("elemwise_mul", DA, U("exp", U("negative", V1))))
/* d/dx a / (1 + |x|)^2 = -2 a sign(x) / (1 + |x|)^3 */
BW_RULE(softsign,
        S("_mul_scalar",
          B("elemwise_div", B("elemwise_mul", B("_backward_softsign", DA, V1), U("sign", V1)),
            S("_plus_scalar", U("abs", V1), 1)),
          -2))
#undef X
#undef Y
#undef DY
#undef U
#undef B
#undef S
#undef MUL
#undef DIV
#undef RULE
#undef A0
#undef V1
#undef DA
#undef BW_RULE

/* Rounding is the identity on integers. */
#define INT_IDENTITY(T) [HG_DTYPE_I32] = copy_i32, [HG_DTYPE_I64] = copy_i64,                  \
                        [HG_DTYPE_I8] = copy_i8, [HG_DTYPE_U8] = copy_u8
#define ROUNDING(NAME) {[HG_DTYPE_F32] = NAME##_f32, [HG_DTYPE_F64] = NAME##_f64, INT_IDENTITY(T)}

#define DATA HG_NAMES("data")
/* The rows of HG_EW_UNARY_OPS (ops/ew_list.h): KIND(NAME, ALIASES, ID, DOC, FLAGS, GRAD);
 * GR: the gradient rule (NULL: none). */
#define UN(NAME, ALIASES, FN, DOC, FL, GR)                                                     \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_FLOAT(FN), .ew_arity = 1,                        \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define UN_ALL(NAME, ALIASES, FN, DOC, FL, GR)                                                  \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 1,                          \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define UN_ROUND(NAME, ALIASES, FN, DOC, FL, GR)                                                \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = ROUNDING(FN), .ew_arity = 1,                                 \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
/* The rows of HG_EW_ACT_BW_OPS: _backward_<act>(ograd, v), the one-pass activation
 * gradients, over the tiles of TYPES (FLOAT or ALL). */
#define UN_BW(TYPES, NAME, FN, VNAME, DOC, GR)                                                  \
    {.name = NAME, .doc = DOC, .input_names = HG_NAMES("ograd", VNAME), .num_inputs = 2,       \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_##TYPES(FN), .ew_arity = 2,                      \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE, .grad = GR},

/* Activation(act_type): dispatches to the matching unary op's tile functions. */
static const char *const k_act_types[] = {
#define ACT_NAME(ID, NAME, MK, FN, BW_X) [ACT_##ID] = #NAME,
    ACT_TYPES(ACT_NAME)
#undef ACT_NAME
        [ACT_NTYPES] = NULL,
};
_Static_assert(HG_COUNT(k_act_types) == ACT_NTYPES + 1, "k_act_types must match ACT_TYPES");
static const hg_attr_spec k_act_attrs[] = {
    [AC_ACT_TYPE] = {"act_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL,
                     "activation function: relu, sigmoid, tanh, softrelu or softsign", k_act_types},
};
_Static_assert(HG_COUNT(k_act_attrs) == AC_NATTRS, "k_act_attrs must match its enum");
static const hg_op_def k_act_impl[] = {
#define ACT_IMPL(ID, NAME, MK, FN, BW_X) [ACT_##ID] = MK(#NAME, NULL, FN, "", 0, NULL),
    ACT_TYPES(ACT_IMPL)
#undef ACT_IMPL
};
_Static_assert(HG_COUNT(k_act_impl) == ACT_NTYPES, "k_act_impl must match ACT_TYPES");

/* Tile functions that pick the act_type's own per tile, so Activation runs on the generic
 * element-wise driver and joins fused groups. No float16 entry: the driver then computes in
 * float32. infer rejects the act_type/dtype pairs the chosen op lacks. */
#define ACT_TILE(SUF, DT)                                                                      \
    static void act_##SUF(int64_t n, const void *x, int64_t sx, const void *y, int64_t sy,      \
                          void *out, const hg_attrs *a)                                        \
    {                                                                                          \
        k_act_impl[a->v[AC_ACT_TYPE].i].ew[DT](n, x, sx, y, sy, out, a);                       \
    }
ACT_TILE(f32, HG_DTYPE_F32)
ACT_TILE(f64, HG_DTYPE_F64)
ACT_TILE(u8, HG_DTYPE_U8)
ACT_TILE(i8, HG_DTYPE_I8)
ACT_TILE(i32, HG_DTYPE_I32)
ACT_TILE(i64, HG_DTYPE_I64)

static hg_status activation_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    const hg_op_def *impl = &k_act_impl[a->v[AC_ACT_TYPE].i];
    hg_dtype dt = in[0].dtype;
    if (!impl->ew[dt] && !(dt == HG_DTYPE_F16 && impl->ew[HG_DTYPE_F32]))
        return hg_error(HG_ERR_TYPE, "Activation(act_type='%s'): dtype %s is not supported",
                        impl->name, hg_dtype_name(dt));
    return hg_infer_same(op, a, nin, in, nout, out);
}

/* Activation(act_type) runs the act_tile functions above. */
#define ACT(NAME, ALIASES, FN, DOC, FL, GR)                                                     \
    {.name = NAME,                                                                              \
     .aliases = ALIASES,                                                                        \
     .doc = DOC,                                                                                \
     .input_names = DATA,                                                                       \
     .attrs = k_act_attrs,                                                                      \
     .num_attrs = 1,                                                                            \
     .num_inputs = 1,                                                                           \
     .infer = activation_infer,                                                                 \
     .ew = {[HG_DTYPE_F32] = act_f32,                                                           \
            [HG_DTYPE_F64] = act_f64,                                                           \
            [HG_DTYPE_U8] = act_u8,                                                             \
            [HG_DTYPE_I8] = act_i8,                                                             \
            [HG_DTYPE_I32] = act_i32,                                                           \
            [HG_DTYPE_I64] = act_i64},                                                          \
     .ew_arity = 1,                                                                             \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL),                                            \
     .grad = GR}
#define OP_ROW(KIND, ...) KIND(__VA_ARGS__),

/* The lists expand to rows, which clang-format would run together. */
/* clang-format off */
const hg_op_def hg_ops_elemwise_unary[] = {
    HG_EW_UNARY_OPS(OP_ROW)
    HG_EW_ACT_BW_OPS(UN_BW)
    {0},
};
/* clang-format on */
