/* Unary element-wise ops (math, rounding, trigonometry, activations) and Activation. Integer
 * dtypes are accepted where the op is meaningful on integers (abs, sign, rounding, copies). */
#include <tgmath.h>

#include "ew.h"
#include "../kernels/cpu/vmath.h"

#define F(NAME, EXPR) HG_EW_FLOAT(HG_EW_UNARY, NAME, EXPR)
#define A(NAME, EXPR) HG_EW_ALL(HG_EW_UNARY, NAME, EXPR)

A(relu, v > 0 ? v : 0)
F(tanh_, tanh(v))
F(softsign, v / (1 + fabs(v)))
F(softrelu, v > 20 ? v : log1p(exp(v)))
HG_EW_UNARY(exp_, f64, exp(v))
HG_EW_UNARY(sigmoid, f64, 1 / (1 + exp(-v)))

/* float32 exp and sigmoid run through the vectorised exp (libm's expf cannot vectorise). */
static void exp__f32(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,
                     void *out, const hg_attrs *a)
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
A(square, v * v)
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
F(rint_, rint(v))
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
F(gammaln, lgamma(v))
A(copy, v)
A(zeros, 0)
A(ones, 1)

/* Rounding is the identity on integers. */
#define INT_IDENTITY(T) [HG_DTYPE_I32] = copy_i32, [HG_DTYPE_I64] = copy_i64,                  \
                        [HG_DTYPE_I8] = copy_i8, [HG_DTYPE_U8] = copy_u8
#define ROUNDING(NAME) {[HG_DTYPE_F32] = NAME##_f32, [HG_DTYPE_F64] = NAME##_f64, INT_IDENTITY(T)}

#define DATA HG_NAMES("data")
#define UN(NAME, ALIASES, FN, DOC, FL)                                                          \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_FLOAT(FN), .ew_arity = 1,                        \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL)}
#define UN_ALL(NAME, ALIASES, FN, DOC, FL)                                                      \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 1,                          \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL)}
#define UN_ROUND(NAME, FN, DOC)                                                                 \
    {.name = NAME, .doc = DOC, .input_names = DATA, .num_inputs = 1, .infer = hg_infer_same,    \
     .ew = ROUNDING(FN), .ew_arity = 1,                                                         \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | HG_OP_NO_GRAD}

/* Activation(act_type): dispatches to the matching unary op's tile functions. */
static const char *const k_act_types[] = {"relu", "sigmoid", "tanh", "softrelu", "softsign", NULL};
static const hg_attr_spec k_act_attrs[] = {
    {"act_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL,
     "activation function: relu, sigmoid, tanh, softrelu or softsign", k_act_types},
};
static const hg_op_def k_act_impl[] = {
    UN_ALL("relu", NULL, relu, "", 0), UN("sigmoid", NULL, sigmoid, "", 0),
    UN("tanh", NULL, tanh_, "", 0), UN("softrelu", NULL, softrelu, "", 0),
    UN("softsign", NULL, softsign, "", 0),
};

static hg_status activation_forward(const hg_op_def *op, const hg_attrs *a,
                                    const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                    int nout, hg_tensor *const *out)
{
    (void)op; (void)ctx; (void)nout;
    return hg_ew_forward(&k_act_impl[a->v[0].i], a, nin, in, out[0]);
}

static hg_status activation_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    const hg_op_def *impl = &k_act_impl[a->v[0].i];
    hg_dtype dt = in[0].dtype;
    if (!impl->ew[dt] && !(dt == HG_DTYPE_F16 && impl->ew[HG_DTYPE_F32]))
        return hg_error(HG_ERR_TYPE, "Activation(act_type='%s'): dtype %s is not supported",
                        impl->name, hg_dtype_name(dt));
    return hg_infer_same(op, a, nin, in, nout, out);
}

const hg_op_def hg_ops_elemwise_unary[] = {
    UN_ALL("relu", NULL, relu, "max(x, 0)", 0),
    UN("sigmoid", NULL, sigmoid, "1 / (1 + exp(-x))", 0),
    UN("tanh", NULL, tanh_, "hyperbolic tangent", 0),
    UN("softsign", NULL, softsign, "x / (1 + |x|)", 0),
    UN("exp", NULL, exp_, "e ** x", 0),
    UN("expm1", NULL, expm1_, "exp(x) - 1, accurate near 0", 0),
    UN("log", NULL, log_, "natural logarithm", 0),
    UN("log1p", NULL, log1p_, "log(1 + x), accurate near 0", 0),
    UN("log2", NULL, log2_, "base-2 logarithm", 0),
    UN("log10", NULL, log10_, "base-10 logarithm", 0),
    UN("sqrt", NULL, sqrt_, "square root", 0),
    UN("rsqrt", NULL, rsqrt, "1 / sqrt(x)", 0),
    UN("cbrt", NULL, cbrt_, "cube root", 0),
    UN("rcbrt", NULL, rcbrt, "1 / cbrt(x)", 0),
    UN_ALL("square", NULL, square, "x * x", 0),
    UN_ALL("abs", NULL, abs_f, "absolute value", 0),
    UN_ALL("sign", NULL, sign, "-1, 0 or 1 by the sign of x", HG_OP_NO_GRAD),
    UN_ALL("negative", NULL, negative, "-x", 0),
    UN("reciprocal", NULL, reciprocal, "1 / x", 0),
    UN_ROUND("floor", floor_, "largest integer <= x"),
    UN_ROUND("ceil", ceil_, "smallest integer >= x"),
    UN_ROUND("round", round_, "nearest integer, halves away from zero"),
    UN_ROUND("rint", rint_, "nearest integer, halves to even"),
    UN_ROUND("trunc", trunc_, "integer part, toward zero"),
    UN_ROUND("fix", trunc_, "integer part, toward zero"),
    UN("sin", NULL, sin_, "sine", 0),
    UN("cos", NULL, cos_, "cosine", 0),
    UN("tan", NULL, tan_, "tangent", 0),
    UN("arcsin", NULL, arcsin, "inverse sine", 0),
    UN("arccos", NULL, arccos, "inverse cosine", 0),
    UN("arctan", NULL, arctan, "inverse tangent", 0),
    UN("sinh", NULL, sinh_, "hyperbolic sine", 0),
    UN("cosh", NULL, cosh_, "hyperbolic cosine", 0),
    UN("arcsinh", NULL, arcsinh, "inverse hyperbolic sine", 0),
    UN("arccosh", NULL, arccosh, "inverse hyperbolic cosine", 0),
    UN("arctanh", NULL, arctanh, "inverse hyperbolic tangent", 0),
    UN("degrees", NULL, degrees, "radians to degrees", 0),
    UN("radians", NULL, radians, "degrees to radians", 0),
    UN("erf", NULL, erf_, "Gauss error function", 0),
    UN("gamma", NULL, gamma_, "gamma function", 0),
    UN("gammaln", NULL, gammaln, "log of the absolute value of the gamma function", 0),
    UN_ALL("_copy", HG_NAMES("identity"), copy, "a copy of the input", 0),
    UN_ALL("BlockGrad", HG_NAMES("stop_gradient"), copy, "identity that stops gradients",
           HG_OP_NO_GRAD),
    UN_ALL("make_loss", NULL, copy, "identity marking a loss head (gradient of ones)", 0),
    UN_ALL("zeros_like", NULL, zeros, "zeros of the input's shape and dtype", HG_OP_NO_GRAD),
    UN_ALL("ones_like", NULL, ones, "ones of the input's shape and dtype", HG_OP_NO_GRAD),
    {.name = "Activation", .doc = "element-wise activation function", .input_names = DATA,
     .attrs = k_act_attrs, .num_attrs = 1, .num_inputs = 1, .infer = activation_infer,
     .forward = activation_forward, .flags = HG_OP_ELEMWISE | HG_OP_INPLACE},
    {0},
};
