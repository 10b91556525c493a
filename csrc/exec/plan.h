/* Executing a symbol: a plan binds the symbol's variables to input slots, infers shapes and
 * dtypes for an input signature, and runs the nodes in topological order. Intermediate values
 * are released right after their last use, so their memory returns to the pool for the next
 * nodes. (Fusion and static memory planning build on this later.)
 */
#ifndef HG_EXEC_PLAN_H
#define HG_EXEC_PLAN_H

#include "graph/symbol.h"

typedef struct hg_plan hg_plan;

/* Every variable of s must be named in input_names (data and parameters alike). */
hg_status hg_plan_create(const hg_symbol *s, int ninputs, const char *const *input_names,
                         hg_plan **out);
void hg_plan_free(hg_plan *p);
int hg_plan_num_outputs(const hg_plan *p);

/* Shape/dtype inference. in[i].ndim == -1 (or a dim of -1) marks unknowns; on return in[] holds
 * what was inferred for the inputs (weights from data...) and out[] the outputs' metas.
 * partial: unknowns that remain are not an error. Errors name the node, its op and the shapes. */
hg_status hg_plan_infer(hg_plan *p, hg_meta *in, hg_meta *out, bool partial);

/* Runs the graph. outputs receive new tensors (owned by the caller). */
hg_status hg_plan_run(hg_plan *p, hg_tensor *const *inputs, bool is_train, hg_tensor **outputs);

/* Counters for introspection: kernels launched per run, bytes of intermediates at the peak. */
typedef struct hg_plan_stats {
    int kernels;
    int64_t peak_bytes, total_bytes;
} hg_plan_stats;
void hg_plan_get_stats(const hg_plan *p, hg_plan_stats *st);

#endif
