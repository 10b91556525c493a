/* Executing a symbol. A plan binds input slots to graph values (variables, or the outputs of op
 * nodes whose values the caller already has: the activations a backward pass reads), removes
 * the nodes no output needs, and for each input signature (shapes and dtypes) infers the
 * metas, fuses chains of element-wise ops into one pass over the data, and assigns every
 * intermediate value a place in one arena by liveness with best-fit reuse (and in place where
 * an op allows it). Running a planned signature touches no hash table, string or Python object.
 *
 * Returned outputs are always fresh tensors, never overwritten by a later run. Every run
 * compares the inputs' shapes and dtypes with the lowered signature (a few integer compares)
 * and re-plans on a difference, whatever the flags: no kernel ever touches a buffer sized for
 * another call.
 *
 * Thread-safety: every entry point may be called from several threads on one plan. A plan
 * holds one lowered signature and one arena, so runs (and inference, which may re-lower) are
 * serialised by the plan's lock; different plans run concurrently. The caller keeps the input
 * tensors alive until hg_plan_run returns.
 */
#ifndef HG_EXEC_PLAN_H
#define HG_EXEC_PLAN_H

#include "graph/symbol.h"

typedef struct hg_plan hg_plan;

enum {
    HG_PLAN_STATIC_ALLOC = 1 << 0, /* keep the arena between runs */
    HG_PLAN_STATIC_SHAPE = 1 << 1, /* MXNet's flag; the signature is still checked every run
                                    * (a changed one re-plans), so it changes nothing here */
    HG_PLAN_NO_FUSION = 1 << 2,    /* every op runs as its own kernel (also: HG_NO_FUSION=1) */
    HG_PLAN_NO_MEMPLAN = 1 << 3,   /* every value gets its own memory (also: HG_NO_MEMPLAN=1) */
};

/* Every variable of s must be named in input_names (data and parameters alike); names the
 * graph does not use are allowed. */
hg_status hg_plan_create(const hg_symbol *s, int ninputs, const char *const *input_names,
                         hg_plan **out);
/* Input k is the value inputs[k] (a variable node's output 0, or an op node's output, which
 * is then not computed). Every variable the outputs need must be among the inputs. A
 * NULL node marks an input the graph does not use. */
hg_status hg_plan_create_entries(const hg_symbol *s, int ninputs, const hg_sentry *inputs,
                                 hg_plan **out);
void hg_plan_free(hg_plan *p);
void hg_plan_set_flags(hg_plan *p, unsigned flags);
/* The flags the environment asks for (HG_NO_FUSION=1, HG_NO_MEMPLAN=1). */
HG_API unsigned hg_plan_env_flags(void);
HG_API int hg_plan_num_outputs(const hg_plan *p);

/* Shape/dtype inference. in[i].ndim == -1 (or a dim of -1) marks unknowns; on return in[] holds
 * what was inferred for the inputs (weights from data...) and out[] the outputs' metas.
 * partial: unknowns that remain are not an error. Errors name the node, its op and the shapes. */
HG_API hg_status hg_plan_infer(hg_plan *p, hg_meta *in, hg_meta *out, bool partial);
/* Infers the graph for these inputs (NULL: unknown) and writes the metas of the outputs of
 * nodes[0..n), in order (out holds the sum of their nout). A graph run node by node (a GPU
 * call of a cached op) takes the shapes of nodes without inputs from here: their attributes
 * may leave dims to the graph's inference. */
hg_status hg_plan_value_metas(hg_plan *p, hg_tensor *const *inputs, int n,
                              const hg_snode *const *nodes, hg_meta *out);

/* Runs the graph. An outputs[h] that is NULL receives a new tensor (owned by the caller) on
 * the device of the first input (cpu(0) without inputs); a given one (of the output's shape
 * and dtype) is written in place. */
hg_status hg_plan_run(hg_plan *p, hg_tensor *const *inputs, bool is_train, hg_tensor **outputs);

/* Output notification for the plan runs of the calling thread: while set, a run calls
 * fn(ctx, outputs[h]) as soon as the step that computes output h has run (outputs copied from
 * an input, at the end), so a caller can use an output while the rest of the graph runs.
 * Nested runs (a cached op's backward plan inside a step) notify too: their outputs are the
 * outer step's, so the outer caller's tensors are reported when their inner step finishes.
 * Only the calling thread's runs notify (the setting is thread-local); fn runs with the plan's
 * lock held and must not run a plan. Returns the previous setting ({NULL, NULL}: off). */
typedef struct hg_plan_notify {
    void (*fn)(void *ctx, hg_tensor *out);
    void *ctx;
} hg_plan_notify;
hg_plan_notify hg_plan_set_notify(hg_plan_notify n);

/* Introspection of the current signature's plan (after a run). */
typedef struct hg_plan_stats {
    int kernels;             /* kernel launches per run (a fused group counts once) */
    int fused_groups;        /* groups of >= 2 element-wise ops run as one pass */
    int fused_ops;           /* ops inside those groups */
    int folded_bn;           /* convolution + BatchNorm steps (BN folded when not training) */
    int64_t planned_bytes;   /* the arena: every intermediate value and workspace */
    int64_t unplanned_bytes; /* what the same values need without reuse or fusion */
    int64_t peak_bytes, total_bytes; /* older names of planned / unplanned */
} hg_plan_stats;
HG_API void hg_plan_get_stats(hg_plan *p, hg_plan_stats *st);
/* A readable listing of the plan's steps: "fused[exp0 _mulscalar0 relu1]", "dense0 (FC)"...
 * *out is malloc'ed. */
HG_API hg_status hg_plan_describe(hg_plan *p, char **out);

#endif
