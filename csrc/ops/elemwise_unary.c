/* Unary element-wise ops (math, rounding, trigonometry, activations) and Activation, with their
 * gradient rules. Integer dtypes are accepted where the op is meaningful on integers (abs, sign,
 * rounding, copies). The hot activations differentiate in one pass through _backward_<act>
 * ops (gradient and output, or input for softsign); the other rules compose registered ops. */
#include <tgmath.h>

#include "kernels/cpu/vmath.h"
#include "ops/ew.h"

#define F(NAME, EXPR) HG_EW_FLOAT(HG_EW_UNARY, NAME, EXPR)
#define A(NAME, EXPR) HG_EW_ALL(HG_EW_UNARY, NAME, EXPR)

A(relu, (v > 0 || v != v) ? v : 0) /* NaN stays NaN, as MXNet's */
F(tanh_, tanh(v))
F(softsign, v / (1 + fabs(v)))
F(softrelu, v > 20 ? v : log1p(exp(v)))
HG_EW_UNARY(exp_, f64, exp(v))
HG_EW_UNARY(sigmoid, f64, 1 / (1 + exp(-v)))

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
F(expm1_, expm1(v))
F(log_, log(v))
F(log1p_, log1p(v))
F(log2_, log2(v))
F(log10_, log10(v))
F(sqrt_, sqrt(v))
F(rsqrt, 1 / sqrt(v))
F(cbrt_, cbrt(v))
F(rcbrt, 1 / cbrt(v))
A(square, v *v)
F(abs_f, fabs(v))
HG_EW_UNARY(abs_f, i32, v < 0 ? -v : v)
HG_EW_UNARY(abs_f, i64, v < 0 ? -v : v)
HG_EW_UNARY(abs_f, i8, v < 0 ? -v : v)
HG_EW_UNARY(abs_f, u8, v)
A(sign, (v > 0) - (v < 0))
A(negative, -v)
F(reciprocal, 1 / v)
F(floor_, floor(v))
F(ceil_, ceil(v))
F(round_, round(v))
/* MXNet's rint: the floor when x is at most half above it, so exact halves go down
 * (-2.5 -> -3, 0.5 -> 0, 1.5 -> 1, 2.5 -> 2), as MXNet documents ("n.5 -> n"). */
F(rint_, v - floor(v) <= 0.5 ? floor(v) : floor(v) + 1)
F(trunc_, trunc(v))
F(sin_, sin(v))
F(cos_, cos(v))
F(tan_, tan(v))
F(arcsin, asin(v))
F(arccos, acos(v))
F(arctan, atan(v))
F(sinh_, sinh(v))
F(cosh_, cosh(v))
F(arcsinh, asinh(v))
F(arccosh, acosh(v))
F(arctanh, atanh(v))
F(degrees, v * (180 / 3.14159265358979323846))
F(radians, v * (3.14159265358979323846 / 180))
F(erf_, erf(v))
F(gamma_, tgamma(v))
/* lgamma and lgammaf write the global signgam: the _r forms are the ones the pool's threads may
 * call together. */
static inline float lgammaf_ts(float v)
{
    int sign;
    return lgammaf_r(v, &sign);
}
static inline double lgamma_ts(double v)
{
    int sign;
    return lgamma_r(v, &sign);
}
#define LGAMMA_TS(v) _Generic((v), float: lgammaf_ts, default: lgamma_ts)(v)
F(gammaln, LGAMMA_TS(v))

/* Digamma (the derivative of gammaln), for the gradients of gamma and gammaln: reflection
 * below 0, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
 * to x^-14 (its first omitted term is below 1e-16 there). Poles (0, -1, -2, ...) give NaN. */
static double digamma(double x)
{
    double r = 0;
    if (x <= 0) {
        if (x == floor(x)) return NAN;
        r = -3.14159265358979323846 / tan(3.14159265358979323846 * x);
        x = 1 - x;
    }
    for (; x < 10; x += 1) r -= 1 / x;
    double f = 1 / (x * x);
    double tail = f *
                  (1.0 / 12 -
                   f * (1.0 / 120 -
                        f * (1.0 / 252 -
                             f * (1.0 / 240 - f * (1.0 / 132 - f * (691.0 / 32760 - f / 12))))));
    return r + log(x) - 0.5 / x - tail;
}
F(digamma_, digamma(v))
A(copy, v)
A(zeros, 0)
A(ones, 1)

/* Activation backward tiles: l = incoming gradient, r = the forward output (the input for
 * softsign). relu's gradient at 0 is 0, as MXNet's. */
#define BW(NAME, EXPR) HG_EW_FLOAT(HG_EW_BINARY, NAME, EXPR)
HG_EW_ALL(HG_EW_BINARY, bw_relu, r != r ? r : (r > 0 ? l : 0)) /* NaN at NaN, as MXNet's */
BW(bw_sigmoid, l * r * (1 - r))
BW(bw_tanh, l * (1 - r * r))
BW(bw_softrelu, -l *expm1(-r)) /* 1 - exp(-y), accurate for small y */
BW(bw_softsign, l / ((1 + fabs(r)) * (1 + fabs(r))))

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

/* Activation's act_types, in MXNet's order (the index is the parsed attribute value), with
 * what each needs: X(ID, name, the op-def maker, the tile functions, whether the backward
 * _backward_<name>(dy, v) takes v = the input x (else the output y)). Every per-act_type table
 * below is built from this one list. */
#define ACT_TYPES(X)                                                                            \
    X(RELU, relu, UN_ALL, relu, false)                                                          \
    X(SIGMOID, sigmoid, UN, sigmoid, false)                                                     \
    X(TANH, tanh, UN, tanh_, false)                                                             \
    X(SOFTRELU, softrelu, UN, softrelu, false)                                                  \
    X(SOFTSIGN, softsign, UN, softsign, true)

enum {
#define ACT_ENUM(ID, NAME, MK, FN, BW_X) ACT_##ID,
    ACT_TYPES(ACT_ENUM)
#undef ACT_ENUM
        ACT_NTYPES
};
enum { AC_ACT_TYPE, AC_NATTRS }; /* Activation's schema */

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
/* GR: the gradient rule (NULL: none). */
#define UN(NAME, ALIASES, FN, DOC, FL, GR)                                                     \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_FLOAT(FN), .ew_arity = 1,                        \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define UN_ALL(NAME, ALIASES, FN, DOC, FL, GR)                                                  \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 1,                          \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
/* _backward_<act>(ograd, v): the one-pass activation gradients. */
#define UN_BW(NAME, TABLE, VNAME, DOC, GR)                                                      \
    {.name = NAME, .doc = DOC, .input_names = HG_NAMES("ograd", VNAME), .num_inputs = 2,       \
     .infer = hg_infer_same, .ew = TABLE, .ew_arity = 2,                                        \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE, .grad = GR}
#define UN_ROUND(NAME, FN, DOC)                                                                 \
    {.name = NAME, .doc = DOC, .input_names = DATA, .num_inputs = 1, .infer = hg_infer_same,    \
     .ew = ROUNDING(FN), .ew_arity = 1,                                                         \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | HG_OP_NO_GRAD}

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

const hg_op_def hg_ops_elemwise_unary[] = {
    UN_ALL("relu", NULL, relu, "max(x, 0)", 0, relu_grad),
    UN("sigmoid", NULL, sigmoid, "1 / (1 + exp(-x))", 0, sigmoid_grad),
    UN("tanh", NULL, tanh_, "hyperbolic tangent", 0, tanh_grad),
    UN("softsign", NULL, softsign, "x / (1 + |x|)", 0, softsign_grad),
    UN("exp", NULL, exp_, "e ** x", 0, exp_grad),
    UN("expm1", NULL, expm1_, "exp(x) - 1, accurate near 0", 0, expm1_grad),
    UN("log", NULL, log_, "natural logarithm", 0, log_grad),
    UN("log1p", NULL, log1p_, "log(1 + x), accurate near 0", 0, log1p_grad),
    UN("log2", NULL, log2_, "base-2 logarithm", 0, log2_grad),
    UN("log10", NULL, log10_, "base-10 logarithm", 0, log10_grad),
    UN("sqrt", NULL, sqrt_, "square root", 0, sqrt_grad),
    UN("rsqrt", NULL, rsqrt, "1 / sqrt(x)", 0, rsqrt_grad),
    UN("cbrt", NULL, cbrt_, "cube root", 0, cbrt_grad),
    UN("rcbrt", NULL, rcbrt, "1 / cbrt(x)", 0, rcbrt_grad),
    UN_ALL("square", NULL, square, "x * x", 0, square_grad),
    UN_ALL("abs", NULL, abs_f, "absolute value", 0, abs_grad),
    UN_ALL("sign", NULL, sign, "-1, 0 or 1 by the sign of x", HG_OP_NO_GRAD, NULL),
    UN_ALL("negative", NULL, negative, "-x", 0, negative_grad),
    UN("reciprocal", NULL, reciprocal, "1 / x", 0, reciprocal_grad),
    UN_ROUND("floor", floor_, "largest integer <= x"),
    UN_ROUND("ceil", ceil_, "smallest integer >= x"),
    UN_ROUND("round", round_, "nearest integer, halves away from zero"),
    UN_ROUND("rint", rint_, "nearest integer, exact halves rounded down (as MXNet: n.5 -> n)"),
    UN_ROUND("trunc", trunc_, "integer part, toward zero"),
    UN_ROUND("fix", trunc_, "integer part, toward zero"),
    UN("sin", NULL, sin_, "sine", 0, sin_grad),
    UN("cos", NULL, cos_, "cosine", 0, cos_grad),
    UN("tan", NULL, tan_, "tangent", 0, tan_grad),
    UN("arcsin", NULL, arcsin, "inverse sine", 0, arcsin_grad),
    UN("arccos", NULL, arccos, "inverse cosine", 0, arccos_grad),
    UN("arctan", NULL, arctan, "inverse tangent", 0, arctan_grad),
    UN("sinh", NULL, sinh_, "hyperbolic sine", 0, sinh_grad),
    UN("cosh", NULL, cosh_, "hyperbolic cosine", 0, cosh_grad),
    UN("arcsinh", NULL, arcsinh, "inverse hyperbolic sine", 0, arcsinh_grad),
    UN("arccosh", NULL, arccosh, "inverse hyperbolic cosine", 0, arccosh_grad),
    UN("arctanh", NULL, arctanh, "inverse hyperbolic tangent", 0, arctanh_grad),
    UN("degrees", NULL, degrees, "radians to degrees", 0, degrees_grad),
    UN("radians", NULL, radians, "degrees to radians", 0, radians_grad),
    UN("erf", NULL, erf_, "Gauss error function", 0, erf_grad),
    UN("gamma", NULL, gamma_, "gamma function", 0, gamma_grad),
    UN("gammaln", NULL, gammaln, "log of the absolute value of the gamma function", 0,
       gammaln_grad),
    UN_ALL("_copy", HG_NAMES("identity"), copy, "a copy of the input", 0, copy_grad),
    UN_ALL("BlockGrad", HG_NAMES("stop_gradient"), copy, "identity that stops gradients",
           HG_OP_NO_GRAD, NULL),
    UN_ALL("make_loss", NULL, copy, "identity marking a loss head (gradient of ones)", 0,
           make_loss_grad),
    UN_ALL("zeros_like", NULL, zeros, "zeros of the input's shape and dtype", HG_OP_NO_GRAD, NULL),
    UN_ALL("ones_like", NULL, ones, "ones of the input's shape and dtype", HG_OP_NO_GRAD, NULL),
    {.name = "Activation",
     .doc = "element-wise activation function",
     .input_names = DATA,
     .attrs = k_act_attrs,
     .num_attrs = 1,
     .num_inputs = 1,
     .infer = activation_infer,
     .ew = {[HG_DTYPE_F32] = act_f32,
            [HG_DTYPE_F64] = act_f64,
            [HG_DTYPE_U8] = act_u8,
            [HG_DTYPE_I8] = act_i8,
            [HG_DTYPE_I32] = act_i32,
            [HG_DTYPE_I64] = act_i64},
     .ew_arity = 1,
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE,
     .grad = activation_grad},
    UN("_digamma", NULL, digamma_, "digamma function, d gammaln / dx (for gradient rules)", 0,
       NULL),
    UN_BW("_backward_relu", HG_EW_TABLE_ALL(bw_relu), "output", "ograd * (output > 0)",
          bw_relu_grad),
    UN_BW("_backward_sigmoid", HG_EW_TABLE_FLOAT(bw_sigmoid), "output",
          "ograd * output * (1 - output)", bw_sigmoid_grad),
    UN_BW("_backward_tanh", HG_EW_TABLE_FLOAT(bw_tanh), "output", "ograd * (1 - output^2)",
          bw_tanh_grad),
    UN_BW("_backward_softrelu", HG_EW_TABLE_FLOAT(bw_softrelu), "output",
          "ograd * (1 - exp(-output))", bw_softrelu_grad),
    UN_BW("_backward_softsign", HG_EW_TABLE_FLOAT(bw_softsign), "data", "ograd / (1 + |data|)^2",
          bw_softsign_grad),
    {0},
};
