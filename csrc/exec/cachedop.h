/* A cached op: what hybridize() builds. It runs a traced symbol through plans, and under
 * autograd recording it is ONE tape node: its forward plan also returns the activations the
 * backward needs (and nothing more), and that node's gradient rule emits one backward node that
 * runs the planned backward graph (symbolic differentiation of the traced graph). Plans are
 * made per set of inputs that need gradients (data usually does not).
 *
 * Reference counted: tape nodes keep their cached op alive. Thread-safe: one cached op may be
 * called from several threads at once (each plan serialises its own runs; the variants are
 * built under the op's lock). static_shape requires static_alloc, as in MXNet.
 *
 * The tape lives in the layer above (autograd runs its backward through plans), so the cached
 * op reaches it through hg_tape, which autograd installs when the library loads: exec includes
 * nothing from autograd.
 */
#ifndef HG_EXEC_CACHEDOP_H
#define HG_EXEC_CACHEDOP_H

#include "exec/plan.h"

typedef struct hg_cachedop hg_cachedop;

/* The autograd tape as a cached op uses it (see autograd.h for each function's contract). */
typedef struct hg_tape {
    bool (*is_training)(void);
    bool (*should_record)(int nin, hg_tensor *const *in);
    bool (*should_record_one)(const hg_tensor *t);
    hg_status (*record)(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in,
                        int nout, hg_tensor *const *out, void *owner, void (*retain)(void *),
                        void (*release)(void *));
} hg_tape;
/* Installs the tape (autograd does, at load time; the pointer is kept). Before that, calls run
 * in inference mode and record nothing. */
void hg_cachedop_set_tape(const hg_tape *tape);

HG_API hg_status hg_cachedop_create(const hg_symbol *s, int ninputs, const char *const *input_names,
                                    unsigned plan_flags, hg_cachedop **out);
HG_API void hg_cachedop_retain(hg_cachedop *c);
HG_API void hg_cachedop_release(hg_cachedop *c);
/* The inference plan (shape inference, stats of calls made without recording). */
HG_API hg_plan *hg_cachedop_plan(hg_cachedop *c);
/* Runs the graph; records it on the tape when recording and an input is recorded. outputs
 * receive new tensors. */
HG_API hg_status hg_cachedop_call(hg_cachedop *c, hg_tensor *const *inputs, hg_tensor **outputs);
/* A cached op's CUDA graph (GPU inference calls of a static_alloc + static_shape block, see
 * hg_cachedop_call): state 0 none yet, 1 warmed up (the next call records), 2 recorded (calls
 * replay it), 3 off (calls run op by op: the graph could not be recorded, why says why). */
typedef struct hg_cachedop_graph_stats {
    int state, captures;
    long long replays;
    size_t pool_bytes;
    char why[200];
} hg_cachedop_graph_stats;
HG_API void hg_cachedop_graph_stats_get(hg_cachedop *c, hg_cachedop_graph_stats *out);
/* Stats of the last training variant used (forward and backward plans); false if none. */
HG_API bool hg_cachedop_train_stats(hg_cachedop *c, hg_plan_stats *fwd, hg_plan_stats *bwd,
                                    int *nsaved);

#endif
