/* Binary element-wise ops: same-shape elemwise_*, NumPy-broadcasting broadcast_*, the
 * _*_scalar forms (array op scalar, and the reversed r-forms), with their gradient rules, and
 * add_n (the sum of any number of equal-shaped inputs, accumulated in a local block so the
 * output may alias an input; its gradient hands the output gradient to every input).
 * Comparisons and logical ops return 1/0 in the input dtype, as MXNet does, and have no
 * gradient. Integer division and modulo by zero give 0 instead of trapping. */
#include <stdio.h>
#include <string.h>

#include "core/parallel.h"
#include "ops/ew.h"
#include "ops/ops_util.h"

/* Python-style modulo (result takes the divisor's sign); 0 when dividing by 0, as MXNet. */
static inline double fmod_py(double l, double r)
{
    if (r == 0) return 0;
    double m = fmod(l, r);
    return (m != 0 && ((m < 0) != (r < 0))) ? m + r : m;
}
static inline int64_t imod_py(int64_t l, int64_t r)
{
    if (r == 0 || r == -1) return 0;
    int64_t m = l % r;
    return (m != 0 && ((m < 0) != (r < 0))) ? m + r : m;
}
static inline int64_t idiv(int64_t l, int64_t r)
{
    return r == 0 ? 0 : (r == -1 ? (int64_t)(0 - (uint64_t)l) : l / r);
}

#define HG_EW_INT(KIND, NAME, EXPR)                                                             \
    KIND(NAME, i32, EXPR) KIND(NAME, i64, EXPR) KIND(NAME, i8, EXPR) KIND(NAME, u8, EXPR)

/* Each kernel: broadcast/same-shape form, scalar form and reversed-scalar form, for floats (with
 * its own expression) and integers. */
#define ARITH(NAME, FEXPR, IEXPR)                                                               \
    HG_EW_FLOAT(HG_EW_BINARY, NAME, FEXPR) HG_EW_INT(HG_EW_BINARY, NAME, IEXPR)                 \
    HG_EW_FLOAT(HG_EW_SCALAR, NAME##_s, FEXPR) HG_EW_INT(HG_EW_SCALAR, NAME##_s, IEXPR)         \
    HG_EW_FLOAT(HG_EW_RSCALAR, NAME##_rs, FEXPR) HG_EW_INT(HG_EW_RSCALAR, NAME##_rs, IEXPR)

ARITH(add, l + r, l + r)
ARITH(sub, l - r, l - r)
ARITH(mul, l *r, l *r)
ARITH(div, l / r, idiv(l, r))
ARITH(mod, fmod_py(l, r), imod_py(l, r))
/* The partial derivatives of mod, as MXNet's mshadow_op::mod_grad / mod_rgrad: 1 and
 * -floor(l / r) for float types, 0 for integer types (integer mod passes no gradient). */
HG_EW_FLOAT(HG_EW_BINARY, modlg, ((void)l, (void)r, 1))
HG_EW_INT(HG_EW_BINARY, modlg, ((void)l, (void)r, 0))
HG_EW_FLOAT(HG_EW_BINARY, modrg, -floor((double)l / (double)r))
HG_EW_INT(HG_EW_BINARY, modrg, ((void)l, (void)r, 0))
ARITH(pow, pow(l, r), pow((double)l, (double)r))
/* A NaN on either side gives NaN, as MXNet's mshadow_op::maximum/minimum (and NumPy's). */
ARITH(max, (l > r || l != l) ? l : r, l > r ? l : r)
ARITH(min, (l < r || l != l) ? l : r, l < r ? l : r)
ARITH(hypot_, hypot(l, r), hypot((double)l, (double)r))
ARITH(eq, l == r, l == r)
ARITH(ne, l != r, l != r)
ARITH(gt, l > r, l > r)
ARITH(ge, l >= r, l >= r)
ARITH(lt, l < r, l < r)
ARITH(le, l <= r, l <= r)
ARITH(land, (l != 0) && (r != 0), (l != 0) && (r != 0))
ARITH(lor, (l != 0) || (r != 0), (l != 0) || (r != 0))
ARITH(lxor, (l != 0) != (r != 0), (l != 0) != (r != 0))

/* ---- gradient rules ----------------------------------------------------------------------
 * One rule serves the same-shape op and its broadcast_ form: with bc set, a term that mixes an
 * input with an output-shaped value uses the broadcast_ op, and each input's gradient is summed
 * down to its shape (hg_g_sum_like). Ties of maximum/minimum send the gradient to lhs, as
 * MXNet's _backward_maximum (lhs >= rhs) and _backward_minimum (lhs <= rhs) do. */
#define L hg_g_in(g, 0)
#define R hg_g_in(g, 1)
#define X hg_g_in(g, 0) /* the array of a scalar op */
#define Y hg_g_out(g, 0)
#define DY hg_g_ograd(g, 0)
#define SC (hg_g_attrs(g)->v[SC_SCALAR].f)
#define U(OP, A) hg_ew_g1(g, OP, A)
#define B(OP, A, C) hg_ew_g2(g, OP, A, C)
#define S(OP, A, V) hg_g_scalar(g, OP, A, V)
/* a OP b where one side may have an input's shape (the same-shape op otherwise). */
#define MIX(OP, SAME, A, C) B(bc ? "broadcast_" OP : SAME, A, C)
#define NEED(K) hg_g_needs(g, K)

/* Sets input k's gradient from an output-shaped value d. */
static void set_in(hg_grad_ctx *g, bool bc, int k, hg_sentry d)
{
    hg_g_set(g, k, bc ? hg_g_sum_like(g, d, hg_g_in(g, k)) : d);
}

static hg_status add_rule(hg_grad_ctx *g, bool bc)
{
    if (NEED(0)) set_in(g, bc, 0, DY);
    if (NEED(1)) set_in(g, bc, 1, DY);
    return hg_g_status(g);
}

static hg_status sub_rule(hg_grad_ctx *g, bool bc)
{
    if (NEED(0)) set_in(g, bc, 0, DY);
    if (NEED(1)) hg_g_set(g, 1, U("negative", bc ? hg_g_sum_like(g, DY, R) : DY));
    return hg_g_status(g);
}

static hg_status mul_rule(hg_grad_ctx *g, bool bc)
{
    if (NEED(0)) set_in(g, bc, 0, MIX("mul", "elemwise_mul", DY, R));
    if (NEED(1)) set_in(g, bc, 1, MIX("mul", "elemwise_mul", DY, L));
    return hg_g_status(g);
}

/* d/dl = dy / r; d/dr = -dy l / r^2 = -(dy / r) * out */
static hg_status div_rule(hg_grad_ctx *g, bool bc)
{
    hg_sentry t = MIX("div", "elemwise_div", DY, R);
    if (NEED(0)) set_in(g, bc, 0, t);
    if (NEED(1)) set_in(g, bc, 1, U("negative", B("elemwise_mul", t, Y)));
    return hg_g_status(g);
}

/* l mod r = l - floor(l / r) r: d/dl = 1, d/dr = -floor(l / r) for float types; 0 for
 * integer types, as MXNet (the _mod_lgrad / _mod_rgrad factors). */
static hg_status mod_rule(hg_grad_ctx *g, bool bc)
{
    if (NEED(0)) set_in(g, bc, 0, B("elemwise_mul", DY, B("_mod_lgrad", L, R)));
    if (NEED(1)) set_in(g, bc, 1, B("elemwise_mul", DY, B("_mod_rgrad", L, R)));
    return hg_g_status(g);
}

/* d/dl = dy r l^(r-1); d/dr = dy out log(l) */
static hg_status power_rule(hg_grad_ctx *g, bool bc)
{
    if (NEED(0)) {
        hg_sentry p = MIX("power", "_power", L, S("_minus_scalar", R, 1));
        set_in(g, bc, 0, B("elemwise_mul", DY, MIX("mul", "elemwise_mul", p, R)));
    }
    if (NEED(1))
        set_in(g, bc, 1, MIX("mul", "elemwise_mul", B("elemwise_mul", DY, Y), U("log", L)));
    return hg_g_status(g);
}

/* maximum / minimum: the gradient goes to lhs where the comparison op lhs_wins(l, r) gives 1,
 * to rhs where its complement rhs_wins does. */
static hg_status select_rule(hg_grad_ctx *g, bool bc, const char *lhs_wins, const char *rhs_wins)
{
    char name[40];
    if (NEED(0)) {
        snprintf(name, sizeof name, "%s%s", bc ? "broadcast" : "", lhs_wins);
        set_in(g, bc, 0, B("elemwise_mul", DY, B(name, L, R)));
    }
    if (NEED(1)) {
        snprintf(name, sizeof name, "%s%s", bc ? "broadcast" : "", rhs_wins);
        set_in(g, bc, 1, B("elemwise_mul", DY, B(name, L, R)));
    }
    return hg_g_status(g);
}
static hg_status maximum_rule(hg_grad_ctx *g, bool bc)
{
    return select_rule(g, bc, "_greater_equal", "_lesser");
}
static hg_status minimum_rule(hg_grad_ctx *g, bool bc)
{
    return select_rule(g, bc, "_lesser_equal", "_greater");
}

/* d/dl = dy l / out, d/dr = dy r / out */
static hg_status hypot_rule(hg_grad_ctx *g, bool bc)
{
    hg_sentry t = B("elemwise_div", DY, Y);
    if (NEED(0)) set_in(g, bc, 0, MIX("mul", "elemwise_mul", t, L));
    if (NEED(1)) set_in(g, bc, 1, MIX("mul", "elemwise_mul", t, R));
    return hg_g_status(g);
}

#define BOTH_FORMS(NAME)                                                                        \
    static hg_status NAME##_grad(hg_grad_ctx *g) { return NAME##_rule(g, false); }              \
    static hg_status NAME##_bgrad(hg_grad_ctx *g) { return NAME##_rule(g, true); }
BOTH_FORMS(add)
BOTH_FORMS(sub)
BOTH_FORMS(mul)
BOTH_FORMS(div)
BOTH_FORMS(mod)
BOTH_FORMS(power)
BOTH_FORMS(maximum)
BOTH_FORMS(minimum)
BOTH_FORMS(hypot)

/* Scalar forms: x the array, s the scalar. */
#define RULE(NAME, EXPR)                                                                        \
    static hg_status NAME##_sgrad(hg_grad_ctx *g)                                               \
    {                                                                                           \
        hg_g_set(g, 0, EXPR);                                                                   \
        return hg_g_status(g);                                                                  \
    }
#define MUL(D) B("elemwise_mul", DY, D)
RULE(pass, DY)
RULE(rminus, U("negative", DY))
RULE(mul, S("_mul_scalar", DY, SC))
RULE(div, S("_div_scalar", DY, SC))
RULE(rdiv, MUL(S("_rdiv_scalar", U("square", X), -SC)))                /* -s / x^2 */
RULE(rmod, U("negative", MUL(U("floor", S("_rdiv_scalar", X, SC)))))    /* -floor(s / x) */
RULE(power, MUL(S("_mul_scalar", S("_power_scalar", X, SC - 1), SC)))   /* s x^(s-1) */
RULE(rpower, S("_mul_scalar", MUL(Y), log(SC)))                         /* s^x log(s) */
RULE(maximum, MUL(S("_greater_equal_scalar", X, SC)))                   /* ties (x == s): x */
RULE(minimum, MUL(S("_lesser_equal_scalar", X, SC)))                    /* ties (x == s): x */
RULE(hypot, MUL(B("elemwise_div", X, Y)))
#undef L
#undef R
#undef X
#undef Y
#undef DY
#undef SC
#undef U
#undef B
#undef S
#undef MIX
#undef NEED
#undef RULE
#undef MUL

/* ---- add_n ------------------------------------------------------------------------------- */

enum { AN_NUM_ARGS, AN_NATTRS };
static const hg_attr_spec k_addn_attrs[] = {
    [AN_NUM_ARGS] = {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of inputs", NULL},
};
_Static_assert(HG_COUNT(k_addn_attrs) == AN_NATTRS, "k_addn_attrs must match its enum");

static hg_status addn_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    if (nin < 1)
        return hg_error(HG_ERR_VALUE, "%s: num_args must be at least 1 (got %d)", op->name, nin);
    if (in[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: dtype bool is not supported", op->name);
    return hg_infer_same(op, a, nin, in, nout, out);
}

#define ADDN_BLOCK 1024 /* elements summed across all inputs before moving on: stays in L1 */

typedef struct {
    hg_tensor *const *in;
    int nin;
    void *out;
    hg_dtype dt;
} addn_job;

/* Each block is summed into a local buffer before it is stored, so the output may alias any
 * input (in place, or an input given twice). Integer sums wrap (computed unsigned) instead of
 * overflowing signed arithmetic. */
#define ADDN_FN(NAME, T, U)                                                                     \
    static void NAME(const addn_job *j, int64_t b, int64_t e)                                   \
    {                                                                                           \
        T acc[ADDN_BLOCK];                                                                      \
        T *y = j->out;                                                                          \
        for (int64_t s = b; s < e; s += ADDN_BLOCK) {                                           \
            int64_t n = hg_min64(ADDN_BLOCK, e - s);                                            \
            const T *x0 = (const T *)hg_data(j->in[0]) + s;                                     \
            for (int64_t i = 0; i < n; i++) acc[i] = x0[i];                                     \
            for (int k = 1; k < j->nin; k++) {                                                  \
                const T *xk = (const T *)hg_data(j->in[k]) + s;                                 \
                for (int64_t i = 0; i < n; i++) acc[i] = (T)((U)acc[i] + (U)xk[i]);             \
            }                                                                                   \
            memcpy(y + s, acc, sizeof(T) * (size_t)n);                                          \
        }                                                                                       \
    }
ADDN_FN(addn_f32, float, float)
ADDN_FN(addn_f64, double, double)
ADDN_FN(addn_u8, uint8_t, uint8_t)
ADDN_FN(addn_i32, int32_t, uint32_t)
ADDN_FN(addn_i8, int8_t, uint8_t)
ADDN_FN(addn_i64, int64_t, uint64_t)

static void addn_f16(const addn_job *j, int64_t b, int64_t e)
{
    float acc[ADDN_BLOCK];
    uint16_t *y = j->out;
    for (int64_t s = b; s < e; s += ADDN_BLOCK) {
        int64_t n = hg_min64(ADDN_BLOCK, e - s);
        const uint16_t *x0 = (const uint16_t *)hg_data(j->in[0]) + s;
        for (int64_t i = 0; i < n; i++) acc[i] = hg_half_to_float(x0[i]);
        for (int k = 1; k < j->nin; k++) {
            const uint16_t *xk = (const uint16_t *)hg_data(j->in[k]) + s;
            for (int64_t i = 0; i < n; i++) acc[i] += hg_half_to_float(xk[i]);
        }
        for (int64_t i = 0; i < n; i++) y[s + i] = hg_float_to_half(acc[i]);
    }
}

static void addn_range(void *ctx, int64_t b, int64_t e)
{
    const addn_job *j = ctx;
    switch (j->dt) {
    case HG_DTYPE_F32: addn_f32(j, b, e); break;
    case HG_DTYPE_F64: addn_f64(j, b, e); break;
    case HG_DTYPE_F16: addn_f16(j, b, e); break;
    case HG_DTYPE_U8: addn_u8(j, b, e); break;
    case HG_DTYPE_I32: addn_i32(j, b, e); break;
    case HG_DTYPE_I8: addn_i8(j, b, e); break;
    case HG_DTYPE_I64: addn_i64(j, b, e); break;
    default: break; /* bool is rejected by addn_infer */
    }
}

static hg_status addn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nout;
    addn_job j = {in, nin, hg_data(out[0]), in[0]->dtype};
    hg_parallel_for(out[0]->size, HG_GRAIN_ELEMWISE / (nin > 1 ? nin : 1) + 1, addn_range, &j);
    return HG_OK;
}

static hg_status addn_grad(hg_grad_ctx *g)
{
    hg_sentry dy = hg_g_ograd(g, 0);
    for (int k = 0; k < hg_g_nin(g); k++) hg_g_set(g, k, dy);
    return hg_g_status(g);
}

static const hg_attr_spec k_scalar_attrs[] = {
    [SC_SCALAR] = {"scalar", HG_ATTR_FLOAT, 0, "1", "scalar input value", NULL},
    [SC_IS_INT] = {"is_int", HG_ATTR_BOOL, 0, "True",
                   "whether the scalar was an integer in the front end", NULL},
};
_Static_assert(HG_COUNT(k_scalar_attrs) == SC_NATTRS, "k_scalar_attrs must match its enum");

#define LHS_RHS HG_NAMES("lhs", "rhs")
/* FL: flags; GR: the gradient rule. Comparisons and logical ops pass NG (no gradient). */
#define SAME(NAME, ALIASES, FN, DOC, FL, GR)                                                    \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = LHS_RHS, .num_inputs = 2,     \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 2,                          \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define BCAST(NAME, ALIASES, FN, DOC, FL, GR)                                                   \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = LHS_RHS, .num_inputs = 2,     \
     .infer = hg_infer_broadcast, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 2, .flags = (FL),     \
     .grad = GR}
#define SCALAR(NAME, ALIASES, FN, DOC, FL, GR)                                                  \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = HG_NAMES("data"),             \
     .attrs = k_scalar_attrs, .num_attrs = HG_COUNT(k_scalar_attrs), .num_inputs = 1,           \
     .infer = hg_infer_same,                                                                    \
     .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 1,                                                  \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define NG HG_OP_NO_GRAD

const hg_op_def hg_ops_elemwise_binary[] = {
    SAME("elemwise_add", HG_NAMES("_add", "_plus", "_Plus"), add, "lhs + rhs (same shapes)", 0,
         add_grad),
    SAME("elemwise_sub", HG_NAMES("_sub", "_minus", "_Minus"), sub, "lhs - rhs (same shapes)", 0,
         sub_grad),
    SAME("elemwise_mul", HG_NAMES("_mul", "_Mul"), mul, "lhs * rhs (same shapes)", 0, mul_grad),
    SAME("elemwise_div", HG_NAMES("_div", "_Div"), div, "lhs / rhs (same shapes)", 0, div_grad),
    SAME("_mod", HG_NAMES("_Mod"), mod, "lhs mod rhs (same shapes)", 0, mod_grad),
    SAME("_power", HG_NAMES("_Power"), pow, "lhs ** rhs (same shapes)", 0, power_grad),
    SAME("_maximum", HG_NAMES("_Maximum"), max, "max(lhs, rhs) (same shapes)", 0, maximum_grad),
    SAME("_minimum", HG_NAMES("_Minimum"), min, "min(lhs, rhs) (same shapes)", 0, minimum_grad),
    SAME("_hypot", HG_NAMES("_Hypot"), hypot_, "sqrt(lhs^2 + rhs^2) (same shapes)", 0, hypot_grad),
    SAME("_equal", NULL, eq, "lhs == rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_not_equal", NULL, ne, "lhs != rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_greater", NULL, gt, "lhs > rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_greater_equal", NULL, ge, "lhs >= rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_lesser", NULL, lt, "lhs < rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_lesser_equal", NULL, le, "lhs <= rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_logical_and", NULL, land, "lhs and rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_logical_or", NULL, lor, "lhs or rhs as 1/0 (same shapes)", NG, NULL),
    SAME("_logical_xor", NULL, lxor, "lhs xor rhs as 1/0 (same shapes)", NG, NULL),

    BCAST("broadcast_add", HG_NAMES("broadcast_plus"), add, "lhs + rhs, broadcasting", 0,
          add_bgrad),
    BCAST("broadcast_sub", HG_NAMES("broadcast_minus"), sub, "lhs - rhs, broadcasting", 0,
          sub_bgrad),
    BCAST("broadcast_mul", NULL, mul, "lhs * rhs, broadcasting", 0, mul_bgrad),
    BCAST("broadcast_div", NULL, div, "lhs / rhs, broadcasting", 0, div_bgrad),
    BCAST("broadcast_mod", NULL, mod, "lhs mod rhs, broadcasting", 0, mod_bgrad),
    BCAST("_mod_lgrad", NULL, modlg,
          "d(lhs mod rhs)/d lhs: 1 for float types, 0 for integer types (broadcasting)", NG, NULL),
    BCAST("_mod_rgrad", NULL, modrg,
          "d(lhs mod rhs)/d rhs: -floor(lhs / rhs) for float types, 0 for integer types "
          "(broadcasting)",
          NG, NULL),
    BCAST("broadcast_power", NULL, pow, "lhs ** rhs, broadcasting", 0, power_bgrad),
    BCAST("broadcast_maximum", NULL, max, "max(lhs, rhs), broadcasting", 0, maximum_bgrad),
    BCAST("broadcast_minimum", NULL, min, "min(lhs, rhs), broadcasting", 0, minimum_bgrad),
    BCAST("broadcast_hypot", NULL, hypot_, "sqrt(lhs^2 + rhs^2), broadcasting", 0, hypot_bgrad),
    BCAST("broadcast_equal", NULL, eq, "lhs == rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_not_equal", NULL, ne, "lhs != rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_greater", NULL, gt, "lhs > rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_greater_equal", NULL, ge, "lhs >= rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_lesser", NULL, lt, "lhs < rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_lesser_equal", NULL, le, "lhs <= rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_logical_and", NULL, land, "lhs and rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_logical_or", NULL, lor, "lhs or rhs as 1/0, broadcasting", NG, NULL),
    BCAST("broadcast_logical_xor", NULL, lxor, "lhs xor rhs as 1/0, broadcasting", NG, NULL),

    SCALAR("_plus_scalar", HG_NAMES("_PlusScalar"), add_s, "data + scalar", 0, pass_sgrad),
    SCALAR("_minus_scalar", HG_NAMES("_MinusScalar"), sub_s, "data - scalar", 0, pass_sgrad),
    SCALAR("_rminus_scalar", HG_NAMES("_RMinusScalar"), sub_rs, "scalar - data", 0, rminus_sgrad),
    SCALAR("_mul_scalar", HG_NAMES("_MulScalar"), mul_s, "data * scalar", 0, mul_sgrad),
    SCALAR("_div_scalar", HG_NAMES("_DivScalar"), div_s, "data / scalar", 0, div_sgrad),
    SCALAR("_rdiv_scalar", HG_NAMES("_RDivScalar"), div_rs, "scalar / data", 0, rdiv_sgrad),
    SCALAR("_mod_scalar", HG_NAMES("_ModScalar"), mod_s, "data mod scalar", 0, pass_sgrad),
    SCALAR("_rmod_scalar", HG_NAMES("_RModScalar"), mod_rs, "scalar mod data", 0, rmod_sgrad),
    SCALAR("_power_scalar", HG_NAMES("_PowerScalar"), pow_s, "data ** scalar", 0, power_sgrad),
    SCALAR("_rpower_scalar", HG_NAMES("_RPowerScalar"), pow_rs, "scalar ** data", 0, rpower_sgrad),
    SCALAR("_maximum_scalar", HG_NAMES("_MaximumScalar"), max_s, "max(data, scalar)", 0,
           maximum_sgrad),
    SCALAR("_minimum_scalar", HG_NAMES("_MinimumScalar"), min_s, "min(data, scalar)", 0,
           minimum_sgrad),
    SCALAR("_hypot_scalar", HG_NAMES("_HypotScalar"), hypot__s, "sqrt(data^2 + scalar^2)", 0,
           hypot_sgrad),
    SCALAR("_equal_scalar", HG_NAMES("_EqualScalar"), eq_s, "data == scalar as 1/0", NG, NULL),
    SCALAR("_not_equal_scalar", HG_NAMES("_NotEqualScalar"), ne_s, "data != scalar as 1/0", NG,
           NULL),
    SCALAR("_greater_scalar", HG_NAMES("_GreaterScalar"), gt_s, "data > scalar as 1/0", NG, NULL),
    SCALAR("_greater_equal_scalar", HG_NAMES("_GreaterEqualScalar"), ge_s, "data >= scalar as 1/0",
           NG, NULL),
    SCALAR("_lesser_scalar", HG_NAMES("_LesserScalar"), lt_s, "data < scalar as 1/0", NG, NULL),
    SCALAR("_lesser_equal_scalar", HG_NAMES("_LesserEqualScalar"), le_s, "data <= scalar as 1/0",
           NG, NULL),
    SCALAR("_logical_and_scalar", HG_NAMES("_LogicalAndScalar"), land_s, "data and scalar as 1/0",
           NG, NULL),
    SCALAR("_logical_or_scalar", HG_NAMES("_LogicalOrScalar"), lor_s, "data or scalar as 1/0", NG,
           NULL),
    SCALAR("_logical_xor_scalar", HG_NAMES("_LogicalXorScalar"), lxor_s, "data xor scalar as 1/0",
           NG, NULL),

    {.name = "add_n",
     .aliases = HG_NAMES("ElementWiseSum"),
     .doc = "the element-wise sum of all inputs (equal shapes)",
     .input_names = HG_NAMES("args"),
     .attrs = k_addn_attrs,
     .num_attrs = HG_COUNT(k_addn_attrs),
     .infer = addn_infer,
     .forward = addn_forward,
     .flags = HG_OP_VARARGS | HG_OP_INPLACE,
     .grad = addn_grad},
    {0},
};
