/* Binary element-wise ops: same-shape elemwise_*, NumPy-broadcasting broadcast_*, the
 * _*_scalar forms (array op scalar, and the reversed r-forms), with their gradient rules, and
 * add_n (the sum of any number of equal-shaped inputs, accumulated in a local block so the
 * output may alias an input; its gradient hands the output gradient to every input).
 * Comparisons and logical ops return 1/0 in the input dtype, as MXNet does, and have no
 * gradient. Integer division and modulo by zero give 0 instead of trapping. The expressions and
 * the op rows (add_n aside) are the lists of ops/ew_list.h, which the GPU kernels
 * (csrc/kernels/cuda/ew.cu) expand too; this file stamps the CPU tiles and holds the rules. */
#include <stdio.h>
#include <string.h>

#include "core/parallel.h"
#include "ops/ew.h"
#include "ops/ew_list.h"
#include "ops/ops_util.h"

/* Each binary expression (ops/ew_list.h) as a broadcast/same-shape tile, a scalar tile (ID_s)
 * and a reversed-scalar tile (ID_rs); the ones no op uses are dropped by the compiler. */
#define STAMP_BINARY(TYPES, ID, FEXPR, IEXPR)                                                   \
    HG_EW_STAMP(HG_EW_BINARY, TYPES, ID, FEXPR, IEXPR)                                          \
    HG_EW_STAMP(HG_EW_SCALAR, TYPES, ID##_s, FEXPR, IEXPR)                                      \
    HG_EW_STAMP(HG_EW_RSCALAR, TYPES, ID##_rs, FEXPR, IEXPR)
HG_EW_BINARY_EXPRS(STAMP_BINARY)
#undef STAMP_BINARY

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
/* The rows of HG_EW_BINARY_OPS (ops/ew_list.h): KIND(NAME, ALIASES, ID, DOC, FLAGS, GRAD). */
#define SAME(NAME, ALIASES, ID, DOC, FL, GR)                                                    \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = LHS_RHS, .num_inputs = 2,     \
     .infer = hg_infer_same, .ew = HG_EW_TABLE_ALL(ID), .ew_arity = 2,                          \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define BCAST(NAME, ALIASES, ID, DOC, FL, GR)                                                   \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = LHS_RHS, .num_inputs = 2,     \
     .infer = hg_infer_broadcast, .ew = HG_EW_TABLE_ALL(ID), .ew_arity = 2, .flags = (FL),     \
     .grad = GR}
#define SCALAR_OF(NAME, ALIASES, FN, DOC, FL, GR)                                               \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = HG_NAMES("data"),             \
     .attrs = k_scalar_attrs, .num_attrs = HG_COUNT(k_scalar_attrs), .num_inputs = 1,           \
     .infer = hg_infer_same,                                                                    \
     .ew = HG_EW_TABLE_ALL(FN), .ew_arity = 1,                                                  \
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE | (FL), .grad = GR}
#define SCALAR(NAME, ALIASES, ID, DOC, FL, GR) SCALAR_OF(NAME, ALIASES, ID##_s, DOC, FL, GR)
#define RSCALAR(NAME, ALIASES, ID, DOC, FL, GR) SCALAR_OF(NAME, ALIASES, ID##_rs, DOC, FL, GR)
#define OP_ROW(KIND, ...) KIND(__VA_ARGS__),

/* The list expands to rows, which clang-format would run together. */
/* clang-format off */
const hg_op_def hg_ops_elemwise_binary[] = {
    HG_EW_BINARY_OPS(OP_ROW)
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
/* clang-format on */
