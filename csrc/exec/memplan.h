/* The memory planner of a lowered plan, kept apart from the graph work (as ggml keeps its
 * allocator apart from the graph): given the steps (fusion decided), it places every internal
 * value at an offset in one arena. Liveness over the steps, best-fit reuse of freed blocks,
 * outputs in place over input 0 where the op allows it and input 0 dies there. Values fed by
 * the caller and the heads are not in the arena. HG_PLAN_NO_MEMPLAN gives every value its own
 * block (the debug switch that proves reuse changes no result). */
#ifndef HG_EXEC_MEMPLAN_H
#define HG_EXEC_MEMPLAN_H

#include "exec/plan_impl.h"

#define HG_PLAN_ALIGN 64 /* every block starts on a cache line */

/* Bytes of a value's block (rounded up to HG_PLAN_ALIGN). */
static inline size_t hg_plan_value_bytes(const hg_meta *m)
{
    size_t b = (size_t)hg_shape_size(m->ndim, m->shape) * hg_dtype_size(m->dtype);
    return (b + HG_PLAN_ALIGN - 1) / HG_PLAN_ALIGN * HG_PLAN_ALIGN;
}

/* Equal element count and dtype: an input that is not broadcast (aligned byte sizes may be
 * equal for a broadcast (1, 3) input and its (4, 3) output). */
static inline bool hg_plan_same_size(const hg_meta *a, const hg_meta *b)
{
    return a->dtype == b->dtype &&
           hg_shape_size(a->ndim, a->shape) == hg_shape_size(b->ndim, b->shape);
}

/* Places the values of p's steps: at[e] receives value e's arena offset (-1: not in the arena;
 * at has p->nentries entries), each step's ws_off its workspace's, *arena_bytes the arena's
 * size. is_head[e]: value e is a head. Fails only when memory runs out. */
hg_status hg_memplan_run(hg_plan *p, const bool *is_head, int64_t *at, int64_t *arena_bytes);

#endif
