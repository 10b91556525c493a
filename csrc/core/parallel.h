/* The kernels' thread pool. One pool for the process; the BLAS runs on one thread beside it
 * (kernels/cpu/blas.h), as the pool splits large products itself. */
#ifndef HG_CORE_PARALLEL_H
#define HG_CORE_PARALLEL_H

#include <stdint.h>

/* Calls fn(ctx, begin, end) over [0, n) split into contiguous chunks. Runs on the calling thread
 * alone when n < grain or only one thread is configured; otherwise the pool's workers and the
 * caller share the chunks. Blocks until all are done. Not re-entrant from inside fn (a nested
 * call runs serially). */
typedef void (*hg_range_fn)(void *ctx, int64_t begin, int64_t end);
void hg_parallel_for(int64_t n, int64_t grain, hg_range_fn fn, void *ctx);

/* Work per element below which an element-wise loop stays on one thread. */
#define HG_GRAIN_ELEMWISE 32768

#endif
