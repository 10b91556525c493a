/* Binary element-wise ops: same-shape elemwise_*, NumPy-broadcasting broadcast_*, and the
 * _*_scalar forms (array op scalar, and the reversed r-forms). Comparisons and logical ops
 * return 1/0 in the input dtype, as MXNet does. Integer division and modulo by zero give 0
 * instead of trapping. */
#include "ew.h"

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
ARITH(mul, l * r, l * r)
ARITH(div, l / r, idiv(l, r))
ARITH(mod, fmod_py(l, r), imod_py(l, r))
ARITH(pow, pow(l, r), pow((double)l, (double)r))
ARITH(max, l > r ? l : r, l > r ? l : r)
ARITH(min, l < r ? l : r, l < r ? l : r)
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

static const hg_attr_spec k_scalar_attrs[] = {
    {"scalar", HG_ATTR_FLOAT, 0, "1", "scalar input value", NULL},
    {"is_int", HG_ATTR_BOOL, 0, "True", "whether the scalar was an integer in the front end",
     NULL},
};

#define LHS_RHS HG_NAMES("lhs", "rhs")
#define SAME(NAME, ALIASES, FN, DOC, FL)                                                        \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = LHS_RHS, .num_inputs = 2,     \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 2,                          \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL)}
#define BCAST(NAME, ALIASES, FN, DOC, FL)                                                       \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = LHS_RHS, .num_inputs = 2,     \
     .infer = hg_infer_broadcast, .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 2, .flags = (FL)}
#define SCALAR(NAME, ALIASES, FN, DOC, FL)                                                      \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = HG_NAMES("data"),             \
     .attrs = k_scalar_attrs, .num_attrs = 2, .num_inputs = 1, .infer = hg_infer_same,          \
     .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 1,                                                  \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL)}
#define NG HG_OP_NO_GRAD

const hg_op_def hg_ops_elemwise_binary[] = {
    SAME("elemwise_add", HG_NAMES("_add", "_plus", "_Plus"), add, "lhs + rhs (same shapes)", 0),
    SAME("elemwise_sub", HG_NAMES("_sub", "_minus", "_Minus"), sub, "lhs - rhs (same shapes)", 0),
    SAME("elemwise_mul", HG_NAMES("_mul", "_Mul"), mul, "lhs * rhs (same shapes)", 0),
    SAME("elemwise_div", HG_NAMES("_div", "_Div"), div, "lhs / rhs (same shapes)", 0),
    SAME("_mod", HG_NAMES("_Mod"), mod, "lhs mod rhs (same shapes)", 0),
    SAME("_power", HG_NAMES("_Power"), pow, "lhs ** rhs (same shapes)", 0),
    SAME("_maximum", HG_NAMES("_Maximum"), max, "max(lhs, rhs) (same shapes)", 0),
    SAME("_minimum", HG_NAMES("_Minimum"), min, "min(lhs, rhs) (same shapes)", 0),
    SAME("_hypot", HG_NAMES("_Hypot"), hypot_, "sqrt(lhs^2 + rhs^2) (same shapes)", 0),
    SAME("_equal", NULL, eq, "lhs == rhs as 1/0 (same shapes)", NG),
    SAME("_not_equal", NULL, ne, "lhs != rhs as 1/0 (same shapes)", NG),
    SAME("_greater", NULL, gt, "lhs > rhs as 1/0 (same shapes)", NG),
    SAME("_greater_equal", NULL, ge, "lhs >= rhs as 1/0 (same shapes)", NG),
    SAME("_lesser", NULL, lt, "lhs < rhs as 1/0 (same shapes)", NG),
    SAME("_lesser_equal", NULL, le, "lhs <= rhs as 1/0 (same shapes)", NG),
    SAME("_logical_and", NULL, land, "lhs and rhs as 1/0 (same shapes)", NG),
    SAME("_logical_or", NULL, lor, "lhs or rhs as 1/0 (same shapes)", NG),
    SAME("_logical_xor", NULL, lxor, "lhs xor rhs as 1/0 (same shapes)", NG),

    BCAST("broadcast_add", HG_NAMES("broadcast_plus"), add, "lhs + rhs, broadcasting", 0),
    BCAST("broadcast_sub", HG_NAMES("broadcast_minus"), sub, "lhs - rhs, broadcasting", 0),
    BCAST("broadcast_mul", NULL, mul, "lhs * rhs, broadcasting", 0),
    BCAST("broadcast_div", NULL, div, "lhs / rhs, broadcasting", 0),
    BCAST("broadcast_mod", NULL, mod, "lhs mod rhs, broadcasting", 0),
    BCAST("broadcast_power", NULL, pow, "lhs ** rhs, broadcasting", 0),
    BCAST("broadcast_maximum", NULL, max, "max(lhs, rhs), broadcasting", 0),
    BCAST("broadcast_minimum", NULL, min, "min(lhs, rhs), broadcasting", 0),
    BCAST("broadcast_hypot", NULL, hypot_, "sqrt(lhs^2 + rhs^2), broadcasting", 0),
    BCAST("broadcast_equal", NULL, eq, "lhs == rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_not_equal", NULL, ne, "lhs != rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_greater", NULL, gt, "lhs > rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_greater_equal", NULL, ge, "lhs >= rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_lesser", NULL, lt, "lhs < rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_lesser_equal", NULL, le, "lhs <= rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_logical_and", NULL, land, "lhs and rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_logical_or", NULL, lor, "lhs or rhs as 1/0, broadcasting", NG),
    BCAST("broadcast_logical_xor", NULL, lxor, "lhs xor rhs as 1/0, broadcasting", NG),

    SCALAR("_plus_scalar", HG_NAMES("_PlusScalar"), add_s, "data + scalar", 0),
    SCALAR("_minus_scalar", HG_NAMES("_MinusScalar"), sub_s, "data - scalar", 0),
    SCALAR("_rminus_scalar", HG_NAMES("_RMinusScalar"), sub_rs, "scalar - data", 0),
    SCALAR("_mul_scalar", HG_NAMES("_MulScalar"), mul_s, "data * scalar", 0),
    SCALAR("_div_scalar", HG_NAMES("_DivScalar"), div_s, "data / scalar", 0),
    SCALAR("_rdiv_scalar", HG_NAMES("_RDivScalar"), div_rs, "scalar / data", 0),
    SCALAR("_mod_scalar", HG_NAMES("_ModScalar"), mod_s, "data mod scalar", 0),
    SCALAR("_rmod_scalar", HG_NAMES("_RModScalar"), mod_rs, "scalar mod data", 0),
    SCALAR("_power_scalar", HG_NAMES("_PowerScalar"), pow_s, "data ** scalar", 0),
    SCALAR("_rpower_scalar", HG_NAMES("_RPowerScalar"), pow_rs, "scalar ** data", 0),
    SCALAR("_maximum_scalar", HG_NAMES("_MaximumScalar"), max_s, "max(data, scalar)", 0),
    SCALAR("_minimum_scalar", HG_NAMES("_MinimumScalar"), min_s, "min(data, scalar)", 0),
    SCALAR("_hypot_scalar", HG_NAMES("_HypotScalar"), hypot__s, "sqrt(data^2 + scalar^2)", 0),
    SCALAR("_equal_scalar", HG_NAMES("_EqualScalar"), eq_s, "data == scalar as 1/0", NG),
    SCALAR("_not_equal_scalar", HG_NAMES("_NotEqualScalar"), ne_s, "data != scalar as 1/0", NG),
    SCALAR("_greater_scalar", HG_NAMES("_GreaterScalar"), gt_s, "data > scalar as 1/0", NG),
    SCALAR("_greater_equal_scalar", HG_NAMES("_GreaterEqualScalar"), ge_s,
           "data >= scalar as 1/0", NG),
    SCALAR("_lesser_scalar", HG_NAMES("_LesserScalar"), lt_s, "data < scalar as 1/0", NG),
    SCALAR("_lesser_equal_scalar", HG_NAMES("_LesserEqualScalar"), le_s,
           "data <= scalar as 1/0", NG),
    SCALAR("_logical_and_scalar", HG_NAMES("_LogicalAndScalar"), land_s,
           "data and scalar as 1/0", NG),
    SCALAR("_logical_or_scalar", HG_NAMES("_LogicalOrScalar"), lor_s, "data or scalar as 1/0",
           NG),
    SCALAR("_logical_xor_scalar", HG_NAMES("_LogicalXorScalar"), lxor_s,
           "data xor scalar as 1/0", NG),
    {0},
};
