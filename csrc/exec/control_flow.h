/* Running control-flow nodes (_foreach, _while_loop, _cond and their backward ops) inside a
 * plan. Such a node holds its body graphs as subgraphs; the plan that contains it makes one
 * hg_cflow per node when it is created, which plans every subgraph once (and, for a backward
 * node, the subgraph's gradient graph). Inference infers the bodies with the per-step shapes;
 * a run loops in C over the body plans. Thread-safety: the owning plan serialises its runs and
 * inference; the body plans have their own locks (taken after the owner's). Per-run memory
 * (the carried states, the per-step values a backward recomputes) belongs to the run.
 */
#ifndef HG_EXEC_CONTROL_FLOW_H
#define HG_EXEC_CONTROL_FLOW_H

#include "exec/plan.h"

typedef struct hg_cflow hg_cflow;

/* Plans node n's subgraphs. Errors name the node (a wrong number of subgraphs, locations
 * that do not fit the inputs). */
hg_status hg_cflow_new(const hg_snode *n, hg_cflow **out);
void hg_cflow_free(hg_cflow *c);
/* The node's shape/dtype rule (same contract as hg_op_def.infer). */
hg_status hg_cflow_infer(hg_cflow *c, int nin, hg_meta *in, int nout, hg_meta *out);
/* Runs the node: out[] are allocated with the inferred metas. */
hg_status hg_cflow_run(hg_cflow *c, bool is_train, int nin, hg_tensor *const *in, int nout,
                       hg_tensor *const *out);

#endif
