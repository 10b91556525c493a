/* The strided view copy (strided_copy.c): out[i] = in[base + sum_d idx_d(i) * istr[d]] over
 * the output's row-major shape, strides in elements (0: broadcast, negative: reverse, permuted:
 * transpose, summed: diagonal). Multi-threaded on the pool. */
#ifndef HG_KERNELS_STRIDED_COPY_H
#define HG_KERNELS_STRIDED_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

#define HG_STRIDED_MAX_DIMS (2 * HG_MAX_NDIM + 2) /* tile doubles the rank */

/* out (contiguous, shape[nd]) = the view of `in` with strides istr (elements) from base.
 * Size-1 dims are dropped and dims the input walks as one are merged first, so e.g. a reshape
 * or a broadcast of a whole row becomes a single memcpy / fill per row. */
void hg_strided_copy(const void *in, void *out, size_t esz, int nd, const int64_t *shape,
                     const int64_t *istr, int64_t base);

#endif
