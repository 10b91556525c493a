/* What the slicing ops (slicing.c) share with their GPU kernels (kernels/cuda/layout.cu): the
 * schema positions and the host-side rules that turn attributes into ranges. Internal to
 * csrc/; nothing here touches tensor data. */
#ifndef HG_OPS_SLICING_H
#define HG_OPS_SLICING_H

#include <stdint.h>

#include "core/op.h"

enum { K_CONCAT_NUM_ARGS, K_CONCAT_DIM, K_CONCAT_NATTRS };
enum { K_STACK_AXIS, K_STACK_NUM_ARGS, K_STACK_NATTRS };
enum { K_SPLIT_NUM_OUTPUTS, K_SPLIT_AXIS, K_SPLIT_SQUEEZE, K_SPLIT_NATTRS };
enum { K_SLICE_BEGIN, K_SLICE_END, K_SLICE_STEP, K_SLICE_NATTRS };
enum { K_SAX_AXIS, K_SAX_BEGIN, K_SAX_END, K_SAX_NATTRS };
enum { K_SLIKE_AXES, K_SLIKE_NATTRS };
enum { K_SAS_SCALAR, K_SAS_BEGIN, K_SAS_END, K_SAS_STEP, K_SAS_NATTRS };

/* A slice resolved against a shape: per axis the first index, the step and the length. */
typedef struct slice_range {
    int64_t begin[HG_MAX_NDIM], step[HG_MAX_NDIM], len[HG_MAX_NDIM];
} slice_range;

/* Resolves begin/end/step tuples against shape x into a start, step and length per axis (MXNet's
 * GetIndexRange). Validates the tuple lengths and steps (errors name op); out-of-range indices
 * clamp as in NumPy. Thread-safe. */
hg_status hg_slice_resolve(const hg_op_def *op, const hg_tuple *tb, const hg_tuple *te,
                           const hg_tuple *ts, const hg_meta *x, slice_range *r);

/* slice_axis's range on shape x (MXNet's GetSliceAxisParams): unlike slice, a range outside the
 * axis or an empty range is an error (on a non-empty axis). Unknown dims give end -1. */
hg_status hg_slice_axis_resolve(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, int *axis,
                                int64_t *begin, int64_t *end);

/* Writes v converted to dtype dt into buf (one element, at most 8 bytes): integers saturate, NaN
 * gives 0, bool is v != 0. */
void hg_slice_scalar_bytes(double v, hg_dtype dt, void *buf);

#endif
