/* The softmax kernels shared by the ops that compute a softmax over a view of their data
 * (softmax.c's own ops, SoftmaxOutput and softmax_cross_entropy in legacy_output.c).
 *
 * The view is [outer, n, inner]: the softmax runs over the n entries of each (outer, inner)
 * column, outer = size / (n * inner). x and y are float16/32/64 (their dtypes may differ) and
 * contiguous; t scales x before the exponential (1 / temperature; negative gives softmin). An
 * empty x is a no-op. Thread-safe; both run on the shared thread pool. */
#ifndef HG_OPS_SOFTMAX_H
#define HG_OPS_SOFTMAX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Schema positions of softmax, log_softmax, softmin and their _backward_ ops (softmax.c). */
enum { SM_AXIS, SM_TEMPERATURE, SM_DTYPE, SM_USE_LENGTH, SM_NATTRS };
/* SoftmaxActivation and its _backward_ op. */
enum { SA_MODE, SA_NATTRS };

/* y = softmax(t * x) (log: its logarithm) over the view. */
void hg_softmax_view(const hg_tensor *x, hg_tensor *y, int64_t n, int64_t inner, double t,
                     bool log);
/* dx = t * y * (dy - sum(dy * y)) (log: t * (dy - exp(y) * sum(dy))) over the view; dy and y
 * share a dtype, dx may have another. */
void hg_softmax_bwd_view(const hg_tensor *dy, const hg_tensor *y, hg_tensor *dx, int64_t n,
                         int64_t inner, double t, bool log);

#ifdef __cplusplus
}
#endif

#endif
