/* The imperative autograd tape. While recording, every op whose inputs include a recorded
 * value becomes a graph node (graph/symbol.h) whose outputs keep their values for backward;
 * a tensor knows its node through tensor->autograd. backward() builds the gradient graph from
 * the ops' rules (graph/grad.h) and runs it with the executor (exec/plan.h), so imperative and
 * hybridized gradients come from the same code.
 *
 * Recording and training flags are per thread, as MXNet's are.
 */
#ifndef HG_AUTOGRAD_AUTOGRAD_H
#define HG_AUTOGRAD_AUTOGRAD_H

#include "graph/symbol.h"

enum { HG_GRAD_NULL = 0, HG_GRAD_WRITE = 1, HG_GRAD_ADD = 2 };

HG_API bool hg_ag_is_recording(void);
HG_API bool hg_ag_set_recording(bool on); /* returns the previous state */
HG_API bool hg_ag_is_training(void);
HG_API bool hg_ag_set_training(bool on);

/* Makes t a variable whose gradient goes to `grad` (same shape and dtype) with grad_req. A
 * variable that was already marked gets a new graph node (as MXNet's attach_grad does). */
HG_API hg_status hg_ag_mark_variable(hg_tensor *t, hg_tensor *grad, int grad_req);
/* The gradient buffer of a variable (borrowed), or NULL. */
HG_API hg_tensor *hg_ag_grad_buffer(const hg_tensor *t);

/* Whether t is part of the recorded graph (a variable or an op's output). */
bool hg_ag_should_record_one(const hg_tensor *t);
/* True when recording and some input is part of the recorded graph. */
HG_API bool hg_ag_should_record(int nin, hg_tensor *const *in);
/* Records one op application (outputs already computed). `owner` (may be NULL) is kept alive
 * by the node: the hybridized block behind a dynamic op definition. */
HG_API hg_status hg_ag_record(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in,
                              int nout, hg_tensor *const *out, void *owner, void (*retain)(void *),
                              void (*release)(void *));

/* A custom function's backward (MXNet's autograd.Function): given the gradients of the
 * function's nograd outputs, writes the gradients of its ngrad inputs into `grads` (arrays of
 * the inputs' shapes and dtypes, allocated by the caller). Called during backward, on the
 * thread that runs it. */
typedef hg_status (*hg_ag_function_fn)(void *ctx, int nograd, hg_tensor *const *ograds, int ngrad,
                                       hg_tensor *const *grads);
/* Records outputs = f(inputs), computed by the caller outside the tape, as one node whose
 * gradient calls `backward(ctx, ...)`. The node keeps ctx until it is freed, then calls
 * release(ctx) (may be NULL). Nothing is recorded when no input is part of the graph. */
HG_API hg_status hg_ag_record_function(int nin, hg_tensor *const *in, int nout,
                                       hg_tensor *const *out, hg_ag_function_fn backward, void *ctx,
                                       void (*release)(void *ctx));

/* Gradients of heads. head_grads[h] NULL (or head_grads NULL) means ones. nvars == 0: write
 * (or add) into every reachable variable's buffer by its grad_req. nvars > 0: the gradients
 * of those tensors are returned in grads_out (new references to fresh arrays, each on its
 * variable's device) and no buffer changes.
 * create_graph: the backward ops are themselves recorded (higher-order gradients).
 * Without retain_graph the values kept for backward are released afterwards. */
HG_API hg_status hg_ag_backward(int nheads, hg_tensor *const *heads, hg_tensor *const *head_grads,
                                int nvars, hg_tensor *const *vars, bool retain_graph,
                                bool create_graph, bool is_train, hg_tensor **grads_out);

/* Gradient hooks, installed from above (the distributed layer): a backward that writes the
 * variables' buffers (nvars == 0) calls begin() first; ready(buf) for each buffer with
 * grad_req 'write' as soon as its value for this backward is final (while later gradients are
 * still being computed); end() last, on failure too, and returns its own error, if any, as the
 * backward's. The hooks run on the thread that runs backward. Install once, before any
 * backward runs (NULL removes them); the table must outlive every backward. */
typedef struct hg_ag_grad_hooks {
    void (*begin)(void);
    void (*ready)(hg_tensor *buf);
    hg_status (*end)(void);
} hg_ag_grad_hooks;
HG_API void hg_ag_set_grad_hooks(const hg_ag_grad_hooks *hooks);

/* A tensor sharing t's data, outside the graph. */
HG_API hg_status hg_ag_detach(hg_tensor *t, hg_tensor **out);
/* The recorded graph that computed t, as a symbol (variables named var0, var1...). */
HG_API hg_status hg_ag_get_symbol(const hg_tensor *t, hg_symbol **out);

#endif
