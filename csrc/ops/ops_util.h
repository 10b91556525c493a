/* Small helpers that several op families share (internal to csrc/ops): a parallel zero fill,
 * the float-dtype test, the gradient rule of ops whose adjoint is one _backward_ op, and the
 * parser of float-tuple attribute text. Each was a static copy in two or more family files. */
#ifndef HG_OPS_UTIL_H
#define HG_OPS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"
#include "graph/grad.h"

static inline int64_t hg_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* float16, float32 or float64. */
static inline bool hg_is_float(hg_dtype dt)
{
    return dt == HG_DTYPE_F32 || dt == HG_DTYPE_F64 || dt == HG_DTYPE_F16;
}

/* Sets every byte of t's data to 0, in parallel for large tensors. */
void hg_ops_zero_fill(hg_tensor *t);

/* The gradient of a linear op whose adjoint is the single op `name` with the forward's attrs:
 * input 0 gets name(ograd) or, when with_in0, name(ograd, in0) (a _backward_ op that reads the
 * forward's data for its shape). The other inputs get nothing. */
hg_status hg_ops_adjoint_grad(hg_grad_ctx *g, const char *name, bool with_in0);

/* MXNet's Tuple<float> attribute text ("(0.5, 0.25)", "[1, 2]", "0.5") of op's attribute
 * `attr`: writes at most `max` values to v and returns their count, or -1 with the error set
 * (bad text, more than max values, or none when min_one). */
int hg_ops_parse_floats(const hg_op_def *op, const char *attr, const char *text, float *v, int max,
                        bool min_one);

#endif
