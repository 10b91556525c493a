/* What the reductions (reduce.c) share with their gradient ops (reduce_grad.c): the schema
 * positions, the axis rule and the conversions between any dtype and double tiles. Internal to
 * csrc/ops. */
#ifndef HG_OPS_REDUCE_H
#define HG_OPS_REDUCE_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Schema positions, the same for a reduction and its gradient op: the axes ops (sum, mean, prod,
 * nansum, nanprod, max, min) share one schema, norm has its own. */
enum { K_AXIS, K_KEEPDIMS, K_EXCLUDE, K_NATTRS };
enum { N_ORD, N_AXIS, N_OUT_DTYPE, N_KEEPDIMS, N_NATTRS };
/* argmax and argmin. */
enum { A_AXIS, A_KEEPDIMS, A_NATTRS };

/* MXNet's ReduceAxesShapeImpl: red[d] tells whether input dim d is reduced; out gets the output
 * shape (dtype untouched). Errors name op and the bad axis. */
hg_status hg_reduce_axes(const hg_op_def *op, const hg_attr_value *axis, bool keepdims,
                         bool exclude, const hg_meta *x, hg_meta *out, bool *red);

/* n elements of dtype dt to doubles and back (integers truncate, float16 rounds). */
void hg_reduce_load(hg_dtype dt, const void *src, int64_t n, double *dst);
void hg_reduce_store(hg_dtype dt, const double *src, int64_t n, void *dst);

#ifdef __cplusplus
}
#endif

#endif
