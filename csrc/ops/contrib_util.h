/* Helpers shared by the contrib op files (csrc/ops/contrib_*.c): the box ops and friends do
 * little arithmetic per byte moved, so their kernels compute in double over copies of the
 * inputs and round once when storing, whatever the float dtype (float16, float32, float64).
 * Buffers come from hg_alloc and hold at least one element, so an empty tensor needs no
 * special case. */
#ifndef HG_OPS_CONTRIB_UTIL_H
#define HG_OPS_CONTRIB_UTIL_H

#include <stddef.h>

#include "core/op.h"

/* A double copy of t's elements (size max(t->size, 1)), or NULL when out of memory. Free with
 * hg_c_free(p, t->size). */
double *hg_c_load(const hg_tensor *t);
/* n doubles of scratch (at least one), or NULL. */
double *hg_c_alloc(int64_t n);
void hg_c_free(double *p, int64_t n);
/* Writes v[0..t->size) into t, converting to t's dtype (integers are truncated toward zero). */
void hg_c_store(hg_tensor *t, const double *v);
/* Infer helper: "float16, float32 or float64", or an HG_ERR_TYPE naming the op and input. */
hg_status hg_c_check_float(const hg_op_def *op, const char *what, hg_dtype dt);

#endif
