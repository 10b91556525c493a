/* Gradients as graph rewrites. Every op's gradient rule (hg_op_def.grad) emits the ops of its
 * backward pass into a graph; hg_graph_grad walks a forward graph from its heads back to the
 * requested variables and calls the rules. The imperative tape and hybridized blocks both use it,
 * so each derivative is written once.
 *
 * Writing a rule: read the forward node through the accessors, emit ops with hg_g_op, and give
 * each input its gradient with hg_g_set. Emission errors are sticky: a failed hg_g_op returns an
 * empty entry and the rule's final `return hg_g_status(g)` reports the first error.
 *
 *     static hg_status exp_grad(hg_grad_ctx *g)      // d exp(x) = dy * exp(x)
 *     {
 *         hg_g_set(g, 0, hg_g_op(g, "elemwise_mul", HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 0)),
 *                                NULL));
 *         return hg_g_status(g);
 *     }
 *
 * Gradients have the shape and dtype of the input they belong to.
 */
#ifndef HG_GRAPH_GRAD_H
#define HG_GRAPH_GRAD_H

#include "graph/symbol.h"

/* The forward node being differentiated. */
const hg_attrs *hg_g_attrs(const hg_grad_ctx *g);
const hg_snode *hg_g_node(const hg_grad_ctx *g);
int hg_g_nin(const hg_grad_ctx *g);
int hg_g_nout(const hg_grad_ctx *g);
hg_sentry hg_g_in(const hg_grad_ctx *g, int k);  /* forward input k */
hg_sentry hg_g_out(const hg_grad_ctx *g, int i); /* forward output i (hidden outputs too) */
/* The gradient flowing into output i; zeros_like(output i) when none flows. */
hg_sentry hg_g_ograd(hg_grad_ctx *g, int i);
/* Whether input k needs a gradient (a rule may skip work for the others). */
bool hg_g_needs(const hg_grad_ctx *g, int k);
/* Sets the gradient of input k. An input left unset gets no gradient (as from BlockGrad). */
void hg_g_set(hg_grad_ctx *g, int k, hg_sentry grad);

/* Emits op `name` over in[0..nin) with MXNet attribute strings kv = {key, value, ..., NULL}
 * (kv may be NULL) and returns its output 0. */
hg_sentry hg_g_op(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in,
                  const char *const *kv);
/* The same for an op with several outputs: out[0..nout) receive its outputs. */
void hg_g_opn(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in, const char *const *kv,
              int nout, hg_sentry *out);
/* The same with an op definition instead of a name (dynamic ops: a hybridized block's). */
void hg_g_op_def(hg_grad_ctx *g, const hg_op_def *op, int nin, const hg_sentry *in,
                 const char *const *kv, int nout, hg_sentry *out);
/* Emits op `name` with the forward node's own attributes (a _backward_X op sharing X's schema).
 * Extra kv pairs are added or override. */
void hg_g_op_fwd_attrs(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in,
                       const char *const *kv, int nout, hg_sentry *out);
/* The forward attribute at schema index k in MXNet's string form; the text lives as long as
 * the context. */
const char *hg_g_attr_str(hg_grad_ctx *g, int k);
/* printf into text that lives as long as the context (numbers for kv lists). */
const char *hg_g_fmt(hg_grad_ctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Helpers used by many rules. */
hg_sentry hg_g_scalar(hg_grad_ctx *g, const char *scalar_op, hg_sentry x, double v);
/* Sums x down to the shape of `like` (the gradient of a broadcast). */
hg_sentry hg_g_sum_like(hg_grad_ctx *g, hg_sentry x, hg_sentry like);
hg_status hg_g_status(const hg_grad_ctx *g);

#define HG_GIN(...)                                                         \
    (int)(sizeof((hg_sentry[]){__VA_ARGS__}) / sizeof(hg_sentry)), (hg_sentry[]) \
    {                                                                       \
        __VA_ARGS__                                                         \
    }
#define HG_KV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Builds the gradients of heads[0..nheads) with respect to the variable nodes wrt[0..nwrt).
 * head_grads[h].node == NULL means ones_like(head h). The result has one head per wrt node:
 * its gradient, or zeros_like(it) when no head depends on it. The result shares the forward
 * nodes it reads (activations). Errors name the node whose rule failed or is missing. */
HG_API hg_status hg_graph_grad(int nheads, const hg_sentry *heads, const hg_sentry *head_grads,
                               int nwrt, hg_snode *const *wrt, hg_symbol **out);

#endif
