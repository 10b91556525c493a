/* Internals shared by the plan's files: plan.c (analysis, inference, run loop), lower.c
 * (fusion and statistics per signature), memplan.c (the memory plan), fuse.c (running a fused
 * group) and fold.c (BatchNorm folding). */
#ifndef HG_EXEC_PLAN_IMPL_H
#define HG_EXEC_PLAN_IMPL_H

#include <pthread.h>

#include "exec/plan.h"

/* One kernel launch. A plain step runs node `node`; a fused step runs the element-wise nodes
 * gnodes[first..first+count) tile by tile, its inputs sin[in_base..) being the values read
 * from outside the group and its output (the last of sout) the last node's. A fused step may
 * start with a producer op whose output the group reads (outputs: producer's, group's). */
typedef struct hg_pstep {
    int node;
    int producer;             /* >= 0: this op runs first, the group then works on its output in
                               * place (conv/FC + bias + activation in one step) */
    int pnin;                 /* the producer's inputs: the first pnin of sin */
    bool fold;                /* producer = a convolution, node = the BatchNorm after it: in
                               * inference the normalisation is folded into the weights */
    int post_node;            /* >= 0 (fold steps): the ReLU / clip that alone reads the fold's
                               * output; the fold applies it (`post`) and that node's step is
                               * an alias of the fold's output (lower.c, find_posts) */
    hg_post post;
    int split;                /* > 0: an RNN run on the split arrays of the _rnn_param_concat
                               * before it (node `producer`), which then never runs: sin holds
                               * data, the `split` arrays, then the RNN's other inputs */
    int dw_step, pw_step;     /* fold steps paired for inference (fold.c): on the pointwise
                               * step, the depthwise step that runs both (-1: none); on that
                               * step, the pointwise one */
    bool alias;               /* a view op (HG_OP_VIEW) whose output only steps of this plan
                               * read: no kernel runs, the output's header points at input 0's
                               * data for the run (see lower.c, mark_aliases) */
    int first, count;
    int nin, nout;
    int in_base, out_base;    /* into sin / sout (value ids = entries) */
    size_t ws_bytes;
    int64_t ws_off;           /* workspace offset in the arena */
} hg_pstep;

#define HG_FUSE_MAX 16 /* ops in one fused group (tile buffers live on the stack) */

struct hg_plan {
    pthread_mutex_t lock;     /* held by run, infer, set_flags, stats and describe: everything
                               * below except the analysis of creation changes per signature */
    hg_symbol *sym;           /* keeps the nodes alive */
    hg_snode **nodes;
    int n;
    int *off, *in_idx; /* inputs of node i: in_idx[off[i]..off[i+1]) (topological positions) */
    int *entry; /* first value (entry) of node i; node i has nout of them */
    int nentries;
    int ninputs;
    int *input_entry; /* input slot -> entry (-1: unused by the graph) */
    int *fed_slot; /* entry -> input slot, or -1 */
    /* input slot -> 1: a step writes it in inference, 2: in training (BatchNorm's moving
     * statistics, an optimizer's state; a control-flow node's inputs, all, both ways): the
     * run counts them as written (core/tensor.h's write versions) */
    uint8_t *in_writes;
    int nheads;
    int *head_entry;
    bool *needed; /* node runs (dead-code elimination, fed values) */
    int *uses; /* entry -> readers among needed nodes + heads */
    struct hg_cflow **cf; /* per node: the control-flow runner of a node with subgraphs */
    hg_meta *meta; /* per entry, for the current signature */
    hg_meta *sig; /* input metas the current plan was made for */
    unsigned flags;
    bool inferred, lowered, print;

    /* Lowered for the current signature (lower.c). */
    hg_pstep *steps;
    int nsteps;
    int *sin, *sout; /* step input / output value ids */
    int *gnodes; /* fused groups: node positions, in order */
    int *gin; /* input k of fused node gnodes[j] is gin[2 * j + k]: >= 0 a value
                               * id, < 0: -(1 + group-local index of the producing node) */
    hg_tensor **vt; /* entry -> tensor header into the arena (internal values) */
    hg_tensor **cur; /* entry -> the tensor used in this run */
    int *head_owner; /* head h -> first head with the same entry */
    int *alias_e; /* the outputs of alias steps, whose headers a run points at their sources */
    int nalias;
    size_t arena_bytes;
    hg_plan_stats stats;

    /* Per step (fold steps only): the folded weights of the last inference run, kept while
     * their sources' write versions stay the same (fold.c). Dropped with the signature. */
    struct hg_prep *prep;

    void *arena; /* current arena (kept with HG_PLAN_STATIC_ALLOC) */
    size_t arena_cap;
    hg_storage *arena_storage; /* storage every arena header shares; data = arena */
};

/* With the plan's lock held. */
hg_status hg_plan_lower(hg_plan *p);
hg_status hg_plan_describe_locked(const hg_plan *p, char **out);
void hg_plan_clear(hg_plan *p); /* drops the lowered signature */
hg_status hg_plan_run_fused(hg_plan *p, const hg_pstep *s, hg_tensor **cur);

/* BatchNorm folding (fold.c). */
bool hg_fold_match(const hg_plan *p, int bn, int conv);
size_t hg_fold_workspace(const hg_plan *p, int conv);
hg_status hg_fold_run(hg_plan *p, const hg_pstep *s, hg_tensor **cur, bool is_train);
/* Frees the folded weights kept for p's steps (hg_plan_clear). */
void hg_fold_prep_free(hg_plan *p);
/* Bytes of the convolution's prepared weights step s keeps now (0: none; core/op.h). */
size_t hg_plan_prep_bytes(const hg_plan *p, int s);
/* For a step that runs one op (node) in inference: its input 1 in the op's prepared form
 * (core/op.h; *bytes long), made once and kept in the step's entry while input 1's write
 * version and address stay the same; NULL (*bytes 0) where the op has none for these inputs,
 * or input 1 is not a variable of the graph (a value a step computes), or is untracked, or
 * there is no memory for it. The plan's lock guards the entries. */
const void *hg_plan_prep(hg_plan *p, const hg_pstep *s, int node, hg_tensor *const *in, int nin,
                         size_t *bytes);
/* Whether fold steps a (a pointwise convolution) and b (a depthwise one on a's output) can run
 * as one pass, and the workspace b then needs. */
bool hg_fold_pair_match(const hg_plan *p, const hg_pstep *a, const hg_pstep *b);
size_t hg_fold_pair_workspace(const hg_plan *p, const hg_pstep *a, const hg_pstep *b);

/* Records step s that started at `start` with the profiler (prof_step.c). */
void hg_plan_prof_step(const hg_plan *p, const hg_pstep *s, int64_t start);

#endif
