/* Macros that stamp out element-wise tile functions (see hg_ew_fn in core/op.h) per dtype.
 *
 * Unary:   HG_EW_UNARY(name, T, expr-of-v)              y[i] = expr(v = x[i])
 * Scalar:  HG_EW_SCALAR(name, T, expr-of-l-and-r)       l = x[i], r = (T)attrs[SC_SCALAR]
 *          HG_EW_RSCALAR: the same with l = scalar, r = x[i]
 * Binary:  HG_EW_BINARY(name, T, expr-of-l-and-r)       o[i] = expr(l = x[i*s0], r = y[i*s1])
 * The loops are written so that the compiler vectorises the stride-1 cases. Function names are
 * name##_##T-suffix; HG_EW_TABLE_* build the per-dtype table for hg_op_def.ew. The expressions
 * of elemwise_binary.c and elemwise_unary.c come from the lists of ops/ew_list.h (HG_EW_STAMP),
 * which csrc/kernels/cuda/ew.cu expands into the same ops' GPU kernels.
 * hg_ew_g1 / hg_ew_g2 shorten the gradient rules of these ops (graph/grad.h).
 */
#ifndef HG_OPS_EW_H
#define HG_OPS_EW_H

#include <math.h>
#include <stdint.h>

#include "core/op.h"
#include "graph/grad.h"
#include "ops/ew_attrs.h"

typedef float f32;
typedef double f64;
typedef int32_t i32;
typedef int64_t i64;
typedef int8_t i8;
typedef uint8_t u8;

#define HG_EW_UNARY(NAME, T, EXPR)                                                              \
    __attribute__((unused)) static void NAME##_##T(int64_t n, const void *in0, int64_t s0,      \
                                                   const void *in1, int64_t s1,                \
                           void *out, const hg_attrs *a)                                        \
    {                                                                                           \
        const T *x = (const T *)in0;                                                            \
        T *y = (T *)out;                                                                        \
        (void)in1; (void)s1; (void)a;                                                           \
        if (s0) {                                                                               \
            for (int64_t i = 0; i < n; i++) { T v = x[i]; (void)v; y[i] = (T)(EXPR); }         \
        } else {                                                                                \
            T v = x[0]; (void)v; T r = (T)(EXPR);                                              \
            for (int64_t i = 0; i < n; i++) y[i] = r;                                           \
        }                                                                                       \
    }

#define HG_EW_SCALAR_IMPL(NAME, T, EXPR, LHS, RHS)                                              \
    __attribute__((unused)) static void NAME##_##T(int64_t n, const void *in0, int64_t s0,      \
                                                   const void *in1, int64_t s1,                \
                           void *out, const hg_attrs *a)                                        \
    {                                                                                           \
        const T *x = (const T *)in0;                                                            \
        T *y = (T *)out;                                                                        \
        const T s = (T)a->v[SC_SCALAR].f;                                                       \
        (void)in1; (void)s1;                                                                    \
        if (s0) {                                                                               \
            for (int64_t i = 0; i < n; i++) { T v = x[i]; T l = LHS, r = RHS; y[i] = (T)(EXPR); } \
        } else {                                                                                \
            T v = x[0]; T l = LHS, r = RHS; T res = (T)(EXPR);                                  \
            for (int64_t i = 0; i < n; i++) y[i] = res;                                         \
        }                                                                                       \
    }
/* Array op scalar: l = element, r = scalar; reversed (_rminus_scalar...): l = scalar. */
#define HG_EW_SCALAR(NAME, T, EXPR) HG_EW_SCALAR_IMPL(NAME, T, EXPR, v, s)
#define HG_EW_RSCALAR(NAME, T, EXPR) HG_EW_SCALAR_IMPL(NAME, T, EXPR, s, v)

#define HG_EW_BINARY(NAME, T, EXPR)                                                             \
    __attribute__((unused)) static void NAME##_##T(int64_t n, const void *in0, int64_t s0,      \
                                                   const void *in1, int64_t s1,                \
                           void *out, const hg_attrs *a)                                        \
    {                                                                                           \
        const T *x = (const T *)in0, *y = (const T *)in1;                                       \
        T *o = (T *)out;                                                                        \
        (void)a;                                                                                \
        if (s0 && s1) {                                                                         \
            for (int64_t i = 0; i < n; i++) { T l = x[i], r = y[i]; o[i] = (T)(EXPR); }         \
        } else if (s0) {                                                                        \
            const T r = y[0];                                                                   \
            for (int64_t i = 0; i < n; i++) { T l = x[i]; o[i] = (T)(EXPR); }                   \
        } else if (s1) {                                                                        \
            const T l = x[0];                                                                   \
            for (int64_t i = 0; i < n; i++) { T r = y[i]; o[i] = (T)(EXPR); }                   \
        } else {                                                                                \
            const T l = x[0], r = y[0]; const T v = (T)(EXPR);                                  \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                           \
        }                                                                                       \
    }

/* Stamp one expression for a set of dtypes. */
#define HG_EW_FLOAT(KIND, NAME, EXPR) KIND(NAME, f32, EXPR) KIND(NAME, f64, EXPR)
#define HG_EW_INT(KIND, NAME, EXPR)                                                             \
    KIND(NAME, i32, EXPR) KIND(NAME, i64, EXPR) KIND(NAME, i8, EXPR) KIND(NAME, u8, EXPR)
#define HG_EW_ALL(KIND, NAME, EXPR) HG_EW_FLOAT(KIND, NAME, EXPR) HG_EW_INT(KIND, NAME, EXPR)

/* Stamp one entry X(TYPES, ID, FEXPR, IEXPR) of an expression list of ops/ew_list.h (TYPES F,
 * S, A, V as described there) with KIND (HG_EW_UNARY, HG_EW_BINARY, ...) under NAME. */
#define HG_EW_STAMP(KIND, TYPES, NAME, FEXPR, IEXPR) HG_EW_STAMP_##TYPES(KIND, NAME, FEXPR, IEXPR)
#define HG_EW_STAMP_F(KIND, NAME, FEXPR, IEXPR) HG_EW_FLOAT(KIND, NAME, FEXPR)
#define HG_EW_STAMP_S(KIND, NAME, FEXPR, IEXPR) HG_EW_ALL(KIND, NAME, FEXPR)
#define HG_EW_STAMP_A(KIND, NAME, FEXPR, IEXPR)                                                 \
    HG_EW_FLOAT(KIND, NAME, FEXPR) HG_EW_INT(KIND, NAME, IEXPR)
#define HG_EW_STAMP_V(KIND, NAME, FEXPR, IEXPR) KIND(NAME, f64, FEXPR) /* f32: by hand */

/* Tables for hg_op_def.ew, indexed by hg_dtype (f16 falls back to f32 in the driver). */
#define HG_EW_TABLE_FLOAT(NAME) {[HG_DTYPE_F32] = NAME##_f32, [HG_DTYPE_F64] = NAME##_f64}
#define HG_EW_TABLE_ALL(NAME)                                                                   \
    {[HG_DTYPE_F32] = NAME##_f32, [HG_DTYPE_F64] = NAME##_f64, [HG_DTYPE_I32] = NAME##_i32,     \
     [HG_DTYPE_I64] = NAME##_i64, [HG_DTYPE_I8] = NAME##_i8, [HG_DTYPE_U8] = NAME##_u8}

/* Gradient rules: emit op(x) / op(a, b) with no attributes. */
static inline hg_sentry hg_ew_g1(hg_grad_ctx *g, const char *op, hg_sentry x)
{
    return hg_g_op(g, op, HG_GIN(x), NULL);
}
static inline hg_sentry hg_ew_g2(hg_grad_ctx *g, const char *op, hg_sentry a, hg_sentry b)
{
    return hg_g_op(g, op, HG_GIN(a, b), NULL);
}

#endif
