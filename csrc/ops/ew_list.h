/* The element-wise ops of elemwise_binary.c and elemwise_unary.c, written once for every device.
 *
 * Two kinds of X-macro lists live here, and nothing else may say what these ops compute:
 *
 * Expression lists, X(TYPES, ID, FEXPR, IEXPR): one expression per entry, of `v` (unary) or of
 * `l` and `r` (binary; in the scalar forms one side is the scalar attribute converted to the
 * element type). It is evaluated in the element type T and cast back to T; float16 runs as
 * float32 (rounded to half once at the end), bool has no entry. TYPES says for which dtypes:
 *   F  float32 and float64 use FEXPR; no integer form (IEXPR is written `-`, never expanded).
 *   S  every dtype uses FEXPR (IEXPR `-`).
 *   A  float types use FEXPR, integer types (int8, uint8, int32, int64) use IEXPR.
 *   V  as F, but the CPU's float32 tile is hand-written in elemwise_unary.c around a vectorised
 *      exp: FEXPR gives the CPU's float64 tile and both GPU tiles, and must agree with it.
 * The CPU expands them with the HG_EW_STAMP macros of ew.h into tile functions named
 * ID_f32, ID_f64, ... (binary expressions also into ID_s_* and ID_rs_*, the scalar forms);
 * csrc/kernels/cuda/ew.cu expands them into device functors U_ID / B_ID.
 *
 * Op lists, X(KIND, NAME, ALIASES, ID, DOC, FLAGS, GRAD): one registered op per row, in
 * registry order. KIND says how the op uses its expression ID, and with that its dtypes:
 *   SAME     elemwise_*: two equal-shaped inputs, binary expression ID, all dtypes
 *   BCAST    broadcast_*: NumPy broadcasting of two inputs, binary expression ID, all dtypes
 *   SCALAR   _*_scalar: l = element, r = attribute `scalar`, binary expression ID, all dtypes
 *   RSCALAR  _r*_scalar: l = attribute `scalar`, r = element
 *   UN       unary expression ID, float dtypes
 *   UN_ALL   unary expression ID, all dtypes
 *   UN_ROUND unary expression ID for float dtypes, the identity for integer dtypes
 *   ACT      Activation: the expression of the act_type attribute (ACT_TYPES below)
 * The CPU turns a row into an hg_op_def through the macro named KIND (in the .c file, which
 * also defines the GRAD rules); ew.cu turns it into a row {NAME, kernel} of hg_gpu_kernels_ew
 * and ignores ALIASES, DOC, FLAGS and GRAD. HG_EW_ACT_BW_OPS has rows X(TYPES, NAME, ID, VNAME,
 * DOC, GRAD) for the one-pass activation gradients (binary expressions of the same-shaped
 * ograd `l` and v = output or input `r`; TYPES FLOAT or ALL).
 *
 * So adding an element-wise op is one row here (plus its expression if it is new) and, for a
 * gradient, its rule in the .c file: both devices get it.
 *
 * Writing expressions that both compilers read alike:
 * - Unary expressions (and HG_EW_ACT_BW_EXPRS) are compiled under <tgmath.h> on the CPU, so
 *   exp(v) of a float is expf; C++ overloads pick the same float function on the GPU.
 * - Binary expressions are compiled under <math.h> on the CPU, where pow, hypot, floor take
 *   and return double: cast their operands to double explicitly, or C++ would pick the float
 *   overload on the GPU.
 * - Helpers are static inline and HG_HD (host and device); integer expressions stay integer;
 *   integer division and modulo by 0 (and by -1, which can trap) give what the helpers say.
 */
#ifndef HG_OPS_EW_LIST_H
#define HG_OPS_EW_LIST_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define HG_HD __host__ __device__
#else
#define HG_HD
#endif

/* Python-style modulo (result takes the divisor's sign); 0 when dividing by 0, as MXNet. */
static inline HG_HD double hg_ew_fmod_py(double l, double r)
{
    if (r == 0) return 0;
    double m = fmod(l, r);
    return (m != 0 && ((m < 0) != (r < 0))) ? m + r : m;
}
static inline HG_HD int64_t hg_ew_imod_py(int64_t l, int64_t r)
{
    if (r == 0 || r == -1) return 0;
    int64_t m = l % r;
    return (m != 0 && ((m < 0) != (r < 0))) ? m + r : m;
}
static inline HG_HD int64_t hg_ew_idiv(int64_t l, int64_t r)
{
    return r == 0 ? 0 : (r == -1 ? (int64_t)(0 - (uint64_t)l) : l / r);
}

/* Digamma (the derivative of gammaln), for the gradients of gamma and gammaln: reflection
 * below 0, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
 * to x^-14 (its first omitted term is below 1e-16 there). Poles (0, -1, -2, ...) give NaN. */
static inline HG_HD double hg_ew_digamma(double x)
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

/* log|gamma(v)| in v's precision. On the CPU lgamma and lgammaf write the global signgam: the
 * _r forms are the ones the pool's threads may call together. CUDA's lgamma writes nothing. */
#ifdef __CUDACC__
#define HG_EW_LGAMMA(v) lgamma(v)
#else
static inline float hg_ew_lgammaf_ts(float v)
{
    int sign;
    return lgammaf_r(v, &sign);
}
static inline double hg_ew_lgamma_ts(double v)
{
    int sign;
    return lgamma_r(v, &sign);
}
#define HG_EW_LGAMMA(v) _Generic((v), float: hg_ew_lgammaf_ts, default: hg_ew_lgamma_ts)(v)
#endif

/* ---- binary expressions: X(TYPES, ID, FEXPR, IEXPR) of l and r (<math.h> on the CPU) ------ */
/* max/min: a NaN on either side gives NaN, as MXNet's mshadow_op::maximum/minimum (and
 * NumPy's). modlg/modrg: the partial derivatives of mod, as MXNet's mshadow_op::mod_grad /
 * mod_rgrad: 1 and -floor(l / r) for float types, 0 for integer types. Comparisons and logical
 * ops give 1/0 in the input dtype. */
#define HG_EW_BINARY_EXPRS(X)                                                                   \
    X(A, add, l + r, l + r)                                                                     \
    X(A, sub, l - r, l - r)                                                                     \
    X(A, mul, l *r, l *r)                                                                       \
    X(A, div, l / r, hg_ew_idiv(l, r))                                                          \
    X(A, mod, hg_ew_fmod_py(l, r), hg_ew_imod_py(l, r))                                         \
    X(A, modlg, ((void)l, (void)r, 1), ((void)l, (void)r, 0))                                   \
    X(A, modrg, -floor((double)l / (double)r), ((void)l, (void)r, 0))                           \
    X(S, pow, pow((double)l, (double)r), -)                                                     \
    X(A, max, (l > r || l != l) ? l : r, l > r ? l : r)                                         \
    X(A, min, (l < r || l != l) ? l : r, l < r ? l : r)                                         \
    X(S, hypot_, hypot((double)l, (double)r), -)                                                \
    X(S, eq, l == r, -)                                                                         \
    X(S, ne, l != r, -)                                                                         \
    X(S, gt, l > r, -)                                                                          \
    X(S, ge, l >= r, -)                                                                         \
    X(S, lt, l < r, -)                                                                          \
    X(S, le, l <= r, -)                                                                         \
    X(S, land, (l != 0) && (r != 0), -)                                                         \
    X(S, lor, (l != 0) || (r != 0), -)                                                          \
    X(S, lxor, (l != 0) != (r != 0), -)

/* ---- unary expressions: X(TYPES, ID, FEXPR, IEXPR) of v (<tgmath.h> on the CPU) ----------- */
/* relu: NaN stays NaN, as MXNet's. rint: MXNet's, the floor when v is at most half above it,
 * so exact halves go down (-2.5 -> -3, 0.5 -> 0, 1.5 -> 1, 2.5 -> 2: "n.5 -> n"). */
#define HG_EW_UNARY_EXPRS(X)                                                                    \
    X(S, relu, (v > 0 || v != v) ? v : 0, -)                                                    \
    X(F, tanh_, tanh(v), -)                                                                     \
    X(F, softsign, v / (1 + fabs(v)), -)                                                        \
    X(F, softrelu, v > 20 ? v : log1p(exp(v)), -)                                               \
    X(V, exp_, exp(v), -)                                                                       \
    X(V, sigmoid, 1 / (1 + exp(-v)), -)                                                         \
    X(F, expm1_, expm1(v), -)                                                                   \
    X(F, log_, log(v), -)                                                                       \
    X(F, log1p_, log1p(v), -)                                                                   \
    X(F, log2_, log2(v), -)                                                                     \
    X(F, log10_, log10(v), -)                                                                   \
    X(F, sqrt_, sqrt(v), -)                                                                     \
    X(F, rsqrt, 1 / sqrt(v), -)                                                                 \
    X(F, cbrt_, cbrt(v), -)                                                                     \
    X(F, rcbrt, 1 / cbrt(v), -)                                                                 \
    X(S, square, v *v, -)                                                                       \
    X(A, abs_f, fabs(v), v < 0 ? -v : v)                                                        \
    X(S, sign, (v > 0) - (v < 0), -)                                                            \
    X(S, negative, -v, -)                                                                       \
    X(F, reciprocal, 1 / v, -)                                                                  \
    X(F, floor_, floor(v), -)                                                                   \
    X(F, ceil_, ceil(v), -)                                                                     \
    X(F, round_, round(v), -)                                                                   \
    X(F, rint_, v - floor(v) <= 0.5 ? floor(v) : floor(v) + 1, -)                               \
    X(F, trunc_, trunc(v), -)                                                                   \
    X(F, sin_, sin(v), -)                                                                       \
    X(F, cos_, cos(v), -)                                                                       \
    X(F, tan_, tan(v), -)                                                                       \
    X(F, arcsin, asin(v), -)                                                                    \
    X(F, arccos, acos(v), -)                                                                    \
    X(F, arctan, atan(v), -)                                                                    \
    X(F, sinh_, sinh(v), -)                                                                     \
    X(F, cosh_, cosh(v), -)                                                                     \
    X(F, arcsinh, asinh(v), -)                                                                  \
    X(F, arccosh, acosh(v), -)                                                                  \
    X(F, arctanh, atanh(v), -)                                                                  \
    X(F, degrees, v * (180 / 3.14159265358979323846), -)                                        \
    X(F, radians, v * (3.14159265358979323846 / 180), -)                                        \
    X(F, erf_, erf(v), -)                                                                       \
    X(F, gamma_, tgamma(v), -)                                                                  \
    X(F, gammaln, HG_EW_LGAMMA(v), -)                                                           \
    X(F, digamma_, hg_ew_digamma(v), -)                                                         \
    X(S, copy, v, -)                                                                            \
    X(S, zeros, 0, -)                                                                           \
    X(S, ones, 1, -)

/* ---- activation gradients: X(TYPES, ID, FEXPR, IEXPR), l = ograd, r = output (input for
 * softsign) (<tgmath.h> on the CPU). relu's gradient at 0 is 0 and NaN at NaN, as MXNet's;
 * softrelu's 1 - exp(-y) is written with expm1, accurate for small y. */
#define HG_EW_ACT_BW_EXPRS(X)                                                                   \
    X(S, bw_relu, r != r ? r : (r > 0 ? l : 0), -)                                              \
    X(F, bw_sigmoid, l * r * (1 - r), -)                                                        \
    X(F, bw_tanh, l * (1 - r * r), -)                                                           \
    X(F, bw_softrelu, -l *expm1(-r), -)                                                         \
    X(F, bw_softsign, l / ((1 + fabs(r)) * (1 + fabs(r))), -)

/* ---- the ops of elemwise_binary.c: X(KIND, NAME, ALIASES, ID, DOC, FLAGS, GRAD) ----------- */
#define HG_EW_BINARY_OPS(X)                                                                     \
    X(SAME, "elemwise_add", HG_NAMES("_add", "_plus", "_Plus"), add, "lhs + rhs (same shapes)", \
      0, add_grad)                                                                              \
    X(SAME, "elemwise_sub", HG_NAMES("_sub", "_minus", "_Minus"), sub,                          \
      "lhs - rhs (same shapes)", 0, sub_grad)                                                   \
    X(SAME, "elemwise_mul", HG_NAMES("_mul", "_Mul"), mul, "lhs * rhs (same shapes)", 0,        \
      mul_grad)                                                                                 \
    X(SAME, "elemwise_div", HG_NAMES("_div", "_Div"), div, "lhs / rhs (same shapes)", 0,        \
      div_grad)                                                                                 \
    X(SAME, "_mod", HG_NAMES("_Mod"), mod, "lhs mod rhs (same shapes)", 0, mod_grad)            \
    X(SAME, "_power", HG_NAMES("_Power"), pow, "lhs ** rhs (same shapes)", 0, power_grad)       \
    X(SAME, "_maximum", HG_NAMES("_Maximum"), max, "max(lhs, rhs) (same shapes)", 0,            \
      maximum_grad)                                                                             \
    X(SAME, "_minimum", HG_NAMES("_Minimum"), min, "min(lhs, rhs) (same shapes)", 0,            \
      minimum_grad)                                                                             \
    X(SAME, "_hypot", HG_NAMES("_Hypot"), hypot_, "sqrt(lhs^2 + rhs^2) (same shapes)", 0,       \
      hypot_grad)                                                                               \
    X(SAME, "_equal", NULL, eq, "lhs == rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL)         \
    X(SAME, "_not_equal", NULL, ne, "lhs != rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL)     \
    X(SAME, "_greater", NULL, gt, "lhs > rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL)        \
    X(SAME, "_greater_equal", NULL, ge, "lhs >= rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL) \
    X(SAME, "_lesser", NULL, lt, "lhs < rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL)         \
    X(SAME, "_lesser_equal", NULL, le, "lhs <= rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL)  \
    X(SAME, "_logical_and", NULL, land, "lhs and rhs as 1/0 (same shapes)", HG_OP_NO_GRAD,      \
      NULL)                                                                                     \
    X(SAME, "_logical_or", NULL, lor, "lhs or rhs as 1/0 (same shapes)", HG_OP_NO_GRAD, NULL)   \
    X(SAME, "_logical_xor", NULL, lxor, "lhs xor rhs as 1/0 (same shapes)", HG_OP_NO_GRAD,      \
      NULL)                                                                                     \
                                                                                                \
    X(BCAST, "broadcast_add", HG_NAMES("broadcast_plus"), add, "lhs + rhs, broadcasting", 0,    \
      add_bgrad)                                                                                \
    X(BCAST, "broadcast_sub", HG_NAMES("broadcast_minus"), sub, "lhs - rhs, broadcasting", 0,   \
      sub_bgrad)                                                                                \
    X(BCAST, "broadcast_mul", NULL, mul, "lhs * rhs, broadcasting", 0, mul_bgrad)               \
    X(BCAST, "broadcast_div", NULL, div, "lhs / rhs, broadcasting", 0, div_bgrad)               \
    X(BCAST, "broadcast_mod", NULL, mod, "lhs mod rhs, broadcasting", 0, mod_bgrad)             \
    X(BCAST, "_mod_lgrad", NULL, modlg,                                                         \
      "d(lhs mod rhs)/d lhs: 1 for float types, 0 for integer types (broadcasting)",            \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(BCAST, "_mod_rgrad", NULL, modrg,                                                         \
      "d(lhs mod rhs)/d rhs: -floor(lhs / rhs) for float types, 0 for integer types "           \
      "(broadcasting)",                                                                         \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(BCAST, "broadcast_power", NULL, pow, "lhs ** rhs, broadcasting", 0, power_bgrad)          \
    X(BCAST, "broadcast_maximum", NULL, max, "max(lhs, rhs), broadcasting", 0, maximum_bgrad)   \
    X(BCAST, "broadcast_minimum", NULL, min, "min(lhs, rhs), broadcasting", 0, minimum_bgrad)   \
    X(BCAST, "broadcast_hypot", NULL, hypot_, "sqrt(lhs^2 + rhs^2), broadcasting", 0,           \
      hypot_bgrad)                                                                              \
    X(BCAST, "broadcast_equal", NULL, eq, "lhs == rhs as 1/0, broadcasting", HG_OP_NO_GRAD,     \
      NULL)                                                                                     \
    X(BCAST, "broadcast_not_equal", NULL, ne, "lhs != rhs as 1/0, broadcasting", HG_OP_NO_GRAD, \
      NULL)                                                                                     \
    X(BCAST, "broadcast_greater", NULL, gt, "lhs > rhs as 1/0, broadcasting", HG_OP_NO_GRAD,    \
      NULL)                                                                                     \
    X(BCAST, "broadcast_greater_equal", NULL, ge, "lhs >= rhs as 1/0, broadcasting",            \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(BCAST, "broadcast_lesser", NULL, lt, "lhs < rhs as 1/0, broadcasting", HG_OP_NO_GRAD,     \
      NULL)                                                                                     \
    X(BCAST, "broadcast_lesser_equal", NULL, le, "lhs <= rhs as 1/0, broadcasting",             \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(BCAST, "broadcast_logical_and", NULL, land, "lhs and rhs as 1/0, broadcasting",           \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(BCAST, "broadcast_logical_or", NULL, lor, "lhs or rhs as 1/0, broadcasting",              \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(BCAST, "broadcast_logical_xor", NULL, lxor, "lhs xor rhs as 1/0, broadcasting",           \
      HG_OP_NO_GRAD, NULL)                                                                      \
                                                                                                \
    X(SCALAR, "_plus_scalar", HG_NAMES("_PlusScalar"), add, "data + scalar", 0, pass_sgrad)     \
    X(SCALAR, "_minus_scalar", HG_NAMES("_MinusScalar"), sub, "data - scalar", 0, pass_sgrad)   \
    X(RSCALAR, "_rminus_scalar", HG_NAMES("_RMinusScalar"), sub, "scalar - data", 0,            \
      rminus_sgrad)                                                                             \
    X(SCALAR, "_mul_scalar", HG_NAMES("_MulScalar"), mul, "data * scalar", 0, mul_sgrad)        \
    X(SCALAR, "_div_scalar", HG_NAMES("_DivScalar"), div, "data / scalar", 0, div_sgrad)        \
    X(RSCALAR, "_rdiv_scalar", HG_NAMES("_RDivScalar"), div, "scalar / data", 0, rdiv_sgrad)    \
    X(SCALAR, "_mod_scalar", HG_NAMES("_ModScalar"), mod, "data mod scalar", 0, pass_sgrad)     \
    X(RSCALAR, "_rmod_scalar", HG_NAMES("_RModScalar"), mod, "scalar mod data", 0, rmod_sgrad)  \
    X(SCALAR, "_power_scalar", HG_NAMES("_PowerScalar"), pow, "data ** scalar", 0, power_sgrad) \
    X(RSCALAR, "_rpower_scalar", HG_NAMES("_RPowerScalar"), pow, "scalar ** data", 0,           \
      rpower_sgrad)                                                                             \
    X(SCALAR, "_maximum_scalar", HG_NAMES("_MaximumScalar"), max, "max(data, scalar)", 0,       \
      maximum_sgrad)                                                                            \
    X(SCALAR, "_minimum_scalar", HG_NAMES("_MinimumScalar"), min, "min(data, scalar)", 0,       \
      minimum_sgrad)                                                                            \
    X(SCALAR, "_hypot_scalar", HG_NAMES("_HypotScalar"), hypot_, "sqrt(data^2 + scalar^2)", 0,  \
      hypot_sgrad)                                                                              \
    X(SCALAR, "_equal_scalar", HG_NAMES("_EqualScalar"), eq, "data == scalar as 1/0",           \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(SCALAR, "_not_equal_scalar", HG_NAMES("_NotEqualScalar"), ne, "data != scalar as 1/0",    \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(SCALAR, "_greater_scalar", HG_NAMES("_GreaterScalar"), gt, "data > scalar as 1/0",        \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(SCALAR, "_greater_equal_scalar", HG_NAMES("_GreaterEqualScalar"), ge,                     \
      "data >= scalar as 1/0", HG_OP_NO_GRAD, NULL)                                             \
    X(SCALAR, "_lesser_scalar", HG_NAMES("_LesserScalar"), lt, "data < scalar as 1/0",          \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(SCALAR, "_lesser_equal_scalar", HG_NAMES("_LesserEqualScalar"), le,                       \
      "data <= scalar as 1/0", HG_OP_NO_GRAD, NULL)                                             \
    X(SCALAR, "_logical_and_scalar", HG_NAMES("_LogicalAndScalar"), land,                       \
      "data and scalar as 1/0", HG_OP_NO_GRAD, NULL)                                            \
    X(SCALAR, "_logical_or_scalar", HG_NAMES("_LogicalOrScalar"), lor, "data or scalar as 1/0", \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(SCALAR, "_logical_xor_scalar", HG_NAMES("_LogicalXorScalar"), lxor,                       \
      "data xor scalar as 1/0", HG_OP_NO_GRAD, NULL)

/* ---- the ops of elemwise_unary.c: X(KIND, NAME, ALIASES, ID, DOC, FLAGS, GRAD) ------------ */
#define HG_EW_UNARY_OPS(X)                                                                      \
    X(UN_ALL, "relu", NULL, relu, "max(x, 0)", 0, relu_grad)                                    \
    X(UN, "sigmoid", NULL, sigmoid, "1 / (1 + exp(-x))", 0, sigmoid_grad)                       \
    X(UN, "tanh", NULL, tanh_, "hyperbolic tangent", 0, tanh_grad)                              \
    X(UN, "softsign", NULL, softsign, "x / (1 + |x|)", 0, softsign_grad)                        \
    X(UN, "exp", NULL, exp_, "e ** x", 0, exp_grad)                                             \
    X(UN, "expm1", NULL, expm1_, "exp(x) - 1, accurate near 0", 0, expm1_grad)                  \
    X(UN, "log", NULL, log_, "natural logarithm", 0, log_grad)                                  \
    X(UN, "log1p", NULL, log1p_, "log(1 + x), accurate near 0", 0, log1p_grad)                  \
    X(UN, "log2", NULL, log2_, "base-2 logarithm", 0, log2_grad)                                \
    X(UN, "log10", NULL, log10_, "base-10 logarithm", 0, log10_grad)                            \
    X(UN, "sqrt", NULL, sqrt_, "square root", 0, sqrt_grad)                                     \
    X(UN, "rsqrt", NULL, rsqrt, "1 / sqrt(x)", 0, rsqrt_grad)                                   \
    X(UN, "cbrt", NULL, cbrt_, "cube root", 0, cbrt_grad)                                       \
    X(UN, "rcbrt", NULL, rcbrt, "1 / cbrt(x)", 0, rcbrt_grad)                                   \
    X(UN_ALL, "square", NULL, square, "x * x", 0, square_grad)                                  \
    X(UN_ALL, "abs", NULL, abs_f, "absolute value", 0, abs_grad)                                \
    X(UN_ALL, "sign", NULL, sign, "-1, 0 or 1 by the sign of x", HG_OP_NO_GRAD, NULL)           \
    X(UN_ALL, "negative", NULL, negative, "-x", 0, negative_grad)                               \
    X(UN, "reciprocal", NULL, reciprocal, "1 / x", 0, reciprocal_grad)                          \
    X(UN_ROUND, "floor", NULL, floor_, "largest integer <= x", HG_OP_NO_GRAD, NULL)             \
    X(UN_ROUND, "ceil", NULL, ceil_, "smallest integer >= x", HG_OP_NO_GRAD, NULL)              \
    X(UN_ROUND, "round", NULL, round_, "nearest integer, halves away from zero", HG_OP_NO_GRAD, \
      NULL)                                                                                     \
    X(UN_ROUND, "rint", NULL, rint_,                                                            \
      "nearest integer, exact halves rounded down (as MXNet: n.5 -> n)", HG_OP_NO_GRAD, NULL)   \
    X(UN_ROUND, "trunc", NULL, trunc_, "integer part, toward zero", HG_OP_NO_GRAD, NULL)        \
    X(UN_ROUND, "fix", NULL, trunc_, "integer part, toward zero", HG_OP_NO_GRAD, NULL)          \
    X(UN, "sin", NULL, sin_, "sine", 0, sin_grad)                                               \
    X(UN, "cos", NULL, cos_, "cosine", 0, cos_grad)                                             \
    X(UN, "tan", NULL, tan_, "tangent", 0, tan_grad)                                            \
    X(UN, "arcsin", NULL, arcsin, "inverse sine", 0, arcsin_grad)                               \
    X(UN, "arccos", NULL, arccos, "inverse cosine", 0, arccos_grad)                             \
    X(UN, "arctan", NULL, arctan, "inverse tangent", 0, arctan_grad)                            \
    X(UN, "sinh", NULL, sinh_, "hyperbolic sine", 0, sinh_grad)                                 \
    X(UN, "cosh", NULL, cosh_, "hyperbolic cosine", 0, cosh_grad)                               \
    X(UN, "arcsinh", NULL, arcsinh, "inverse hyperbolic sine", 0, arcsinh_grad)                 \
    X(UN, "arccosh", NULL, arccosh, "inverse hyperbolic cosine", 0, arccosh_grad)               \
    X(UN, "arctanh", NULL, arctanh, "inverse hyperbolic tangent", 0, arctanh_grad)              \
    X(UN, "degrees", NULL, degrees, "radians to degrees", 0, degrees_grad)                      \
    X(UN, "radians", NULL, radians, "degrees to radians", 0, radians_grad)                      \
    X(UN, "erf", NULL, erf_, "Gauss error function", 0, erf_grad)                               \
    X(UN, "gamma", NULL, gamma_, "gamma function", 0, gamma_grad)                               \
    X(UN, "gammaln", NULL, gammaln, "log of the absolute value of the gamma function", 0,       \
      gammaln_grad)                                                                             \
    X(UN_ALL, "_copy", HG_NAMES("identity"), copy, "a copy of the input", 0, copy_grad)         \
    X(UN_ALL, "BlockGrad", HG_NAMES("stop_gradient"), copy, "identity that stops gradients",    \
      HG_OP_NO_GRAD, NULL)                                                                      \
    X(UN_ALL, "make_loss", NULL, copy, "identity marking a loss head (gradient of ones)", 0,     \
      make_loss_grad)                                                                           \
    X(UN_ALL, "zeros_like", NULL, zeros, "zeros of the input's shape and dtype", HG_OP_NO_GRAD, \
      NULL)                                                                                     \
    X(UN_ALL, "ones_like", NULL, ones, "ones of the input's shape and dtype", HG_OP_NO_GRAD,    \
      NULL)                                                                                     \
    X(ACT, "Activation", NULL, -, "element-wise activation function", 0, activation_grad)       \
    X(UN, "_digamma", NULL, digamma_, "digamma function, d gammaln / dx (for gradient rules)",  \
      0, NULL)

/* ---- _backward_<act>(ograd, v): X(TYPES, NAME, ID, VNAME, DOC, GRAD) ---------------------- */
#define HG_EW_ACT_BW_OPS(X)                                                                     \
    X(ALL, "_backward_relu", bw_relu, "output", "ograd * (output > 0)", bw_relu_grad)           \
    X(FLOAT, "_backward_sigmoid", bw_sigmoid, "output", "ograd * output * (1 - output)",        \
      bw_sigmoid_grad)                                                                          \
    X(FLOAT, "_backward_tanh", bw_tanh, "output", "ograd * (1 - output^2)", bw_tanh_grad)       \
    X(FLOAT, "_backward_softrelu", bw_softrelu, "output", "ograd * (1 - exp(-output))",         \
      bw_softrelu_grad)                                                                         \
    X(FLOAT, "_backward_softsign", bw_softsign, "data", "ograd / (1 + |data|)^2",               \
      bw_softsign_grad)

/* Activation's act_types, in MXNet's order (the index is the parsed attribute value), with
 * what each needs: X(ID, name, the op-def kind (UN / UN_ALL above), the unary expression,
 * whether the backward _backward_<name>(dy, v) takes v = the input x (else the output y)).
 * Every per-act_type table (CPU and GPU) is built from this one list. */
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

#endif
