/* Plans (see plan.h): graph analysis at creation (inputs, dead nodes, uses), inference, and
 * per signature the lowering to steps: element-wise fusion and the memory plan. The run loop
 * is in this file too; fused groups run tile by tile in fuse.c. */
#include "exec/plan.h"
#include "core/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/profiler.h"
#include "exec/control_flow.h"
#include "exec/plan_impl.h"
#include "ops/rnn.h"

void hg_plan_free(hg_plan *p)
{
    if (!p) return;
    hg_plan_clear(p);
    if (p->arena) hg_free(p->arena, p->arena_cap);
    if (p->arena_storage) hg_free(p->arena_storage, sizeof *p->arena_storage);
    hg_symbol_free(p->sym);
    free(p->nodes);
    free(p->off);
    free(p->in_idx);
    free(p->entry);
    free(p->input_entry);
    free(p->fed_slot);
    free(p->in_writes);
    free(p->head_entry);
    for (int i = 0; p->cf && i < p->n; i++) hg_cflow_free(p->cf[i]);
    free(p->cf);
    free(p->needed);
    free(p->uses);
    free(p->meta);
    free(p->sig);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

int hg_plan_num_outputs(const hg_plan *p) { return p->nheads; }

void hg_plan_set_flags(hg_plan *p, unsigned flags)
{
    pthread_mutex_lock(&p->lock);
    if (p->flags != flags) hg_plan_clear(p);
    p->flags = flags;
    p->inferred = false;
    pthread_mutex_unlock(&p->lock);
}

unsigned hg_plan_env_flags(void)
{
    return (hg_env_on("HG_NO_FUSION") ? HG_PLAN_NO_FUSION : 0) |
           (hg_env_on("HG_NO_MEMPLAN") ? HG_PLAN_NO_MEMPLAN : 0);
}

static int entry_of(const hg_plan *p, int node_pos, int index)
{
    return p->entry[node_pos] + index;
}

static int input_entry_of(const hg_plan *p, int i, int k)
{
    return p->entry[p->in_idx[p->off[i] + k]] + p->nodes[i]->in[k].index;
}

/* Finds the topological position of every input entry, marks the nodes the heads need, counts
 * the uses of every value. */
static hg_status analyse(hg_plan *p, const hg_sentry *inputs)
{
    int n = p->n;
    hg_nodemap *pos;
    HG_TRY(hg_nodemap_new(p->nodes, n, &pos));
    for (int k = 0; k < p->ninputs; k++) {
        p->input_entry[k] = -1;
        int i = inputs[k].node ? hg_nodemap_get(pos, inputs[k].node) : -1;
        if (i < 0) continue;
        if (inputs[k].index < 0 || inputs[k].index >= p->nodes[i]->nout) {
            hg_nodemap_free(pos);
            return hg_error(HG_ERR_VALUE, "input %d: node '%s' has no output %d", k,
                            p->nodes[i]->name, inputs[k].index);
        }
        p->input_entry[k] = entry_of(p, i, inputs[k].index);
    }
    hg_nodemap_free(pos);
    for (int e = 0; e < p->nentries; e++) p->fed_slot[e] = -1;
    for (int k = 0; k < p->ninputs; k++)
        if (p->input_entry[k] >= 0 && p->fed_slot[p->input_entry[k]] < 0)
            p->fed_slot[p->input_entry[k]] = k;
    /* Dead-code elimination: a node runs when a value it makes is needed and not fed. */
    bool *want = calloc((size_t)p->nentries + 1, sizeof(bool));
    if (!want) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int h = 0; h < p->nheads; h++) want[p->head_entry[h]] = true;
    hg_status st = HG_OK;
    for (int i = n - 1; i >= 0 && st == HG_OK; i--) {
        hg_snode *nd = p->nodes[i];
        bool need = false;
        for (int k = 0; k < nd->nout; k++)
            need |= want[entry_of(p, i, k)] && p->fed_slot[entry_of(p, i, k)] < 0;
        if (!nd->op) {
            if (need)
                st = hg_error(HG_ERR_VALUE, "the graph needs input '%s', which was not given",
                              nd->name);
            continue;
        }
        p->needed[i] = need;
        if (!need) continue;
        for (int k = 0; k < nd->nin; k++) want[input_entry_of(p, i, k)] = true;
    }
    for (int e = 0; e < p->nentries; e++) p->uses[e] = 0;
    for (int i = 0; i < n; i++) {
        if (!p->needed[i]) continue;
        for (int k = 0; k < p->nodes[i]->nin; k++) p->uses[input_entry_of(p, i, k)]++;
    }
    for (int h = 0; h < p->nheads; h++) p->uses[p->head_entry[h]]++;
    free(want);
    /* the inputs the run writes, by entry then by slot */
    uint8_t *wr = calloc((size_t)p->nentries + 1, 1);
    if (!wr) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        const hg_snode *nd = p->nodes[i];
        if (!p->needed[i] || !nd->op) continue;
        for (int k = 0; k < nd->nin; k++) {
            uint8_t *w = &wr[input_entry_of(p, i, k)];
            if (nd->nsub) *w |= 3;
            if (hg_op_writes_input(nd->op, nd->attrs, false, k)) *w |= 1;
            if (hg_op_writes_input(nd->op, nd->attrs, true, k)) *w |= 2;
        }
    }
    for (int k = 0; k < p->ninputs; k++)
        p->in_writes[k] = p->input_entry[k] >= 0 ? wr[p->input_entry[k]] : 0;
    free(wr);
    return st;
}

hg_status hg_plan_create_entries(const hg_symbol *s, int ninputs, const hg_sentry *inputs,
                                 hg_plan **out)
{
    if (!s || !out || ninputs < 0 || (ninputs && !inputs))
        return hg_error(HG_ERR_VALUE, "hg_plan_create: NULL argument");
    hg_plan *p = calloc(1, sizeof *p);
    if (!p) return hg_error(HG_ERR_MEMORY, "out of memory");
    pthread_mutex_init(&p->lock, NULL);
    hg_status st = hg_symbol_group(1, &s, &p->sym);
    int *head_pos = NULL;
    if (st == HG_OK) st = hg_symbol_topo(p->sym, &p->nodes, &p->n);
    if (st == HG_OK)
        st = hg_symbol_topo_positions(p->sym, p->nodes, p->n, &p->off, &p->in_idx, &head_pos);
    if (st == HG_OK) {
        p->entry = malloc(sizeof(int) * (size_t)(p->n + 1));
        p->needed = calloc((size_t)(p->n + 1), sizeof(bool));
        p->head_entry = malloc(sizeof(int) * (size_t)(p->sym->n + 1));
        p->input_entry = malloc(sizeof(int) * (size_t)(ninputs + 1));
        p->sig = calloc((size_t)(ninputs + 1), sizeof(hg_meta));
        if (!p->entry || !p->needed || !p->head_entry || !p->input_entry || !p->sig)
            st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    if (st == HG_OK) {
        int e = 0;
        for (int i = 0; i < p->n; i++) {
            p->entry[i] = e;
            e += p->nodes[i]->nout;
        }
        p->nentries = e;
        p->ninputs = ninputs;
        p->nheads = p->sym->n;
        for (int h = 0; h < p->nheads; h++)
            p->head_entry[h] = p->entry[head_pos[h]] + p->sym->heads[h].index;
        p->meta = calloc((size_t)(e + 1), sizeof(hg_meta));
        p->fed_slot = malloc(sizeof(int) * (size_t)(e + 1));
        p->in_writes = malloc((size_t)ninputs + 1);
        p->uses = malloc(sizeof(int) * (size_t)(e + 1));
        if (!p->meta || !p->fed_slot || !p->uses || !p->in_writes)
            st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    if (st == HG_OK) st = analyse(p, inputs);
    if (st == HG_OK && !(p->cf = calloc((size_t)p->n + 1, sizeof *p->cf)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    /* Control-flow nodes that run plan their subgraphs now, once. */
    for (int i = 0; st == HG_OK && i < p->n; i++)
        if (p->nodes[i]->nsub && p->needed[i]) st = hg_cflow_new(p->nodes[i], &p->cf[i]);
    if (st == HG_OK) {
        p->flags = hg_plan_env_flags();
        p->print = hg_env_on("HG_PRINT_PLAN");
    }
    free(head_pos);
    if (st != HG_OK) {
        hg_plan_free(p);
        return st;
    }
    *out = p;
    return HG_OK;
}

hg_status hg_plan_create(const hg_symbol *s, int ninputs, const char *const *input_names,
                         hg_plan **out)
{
    if (!s || !out || ninputs < 0 || (ninputs && !input_names))
        return hg_error(HG_ERR_VALUE, "hg_plan_create: NULL argument");
    hg_snode **nodes;
    int n;
    hg_status st = hg_symbol_topo(s, &nodes, &n);
    if (st != HG_OK) return st;
    hg_sentry *in = calloc((size_t)ninputs + 1, sizeof *in);
    if (!in) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < ninputs; k++) {
        if (!input_names[k]) continue;
        for (int i = 0; i < n; i++)
            if (!nodes[i]->op && strcmp(nodes[i]->name, input_names[k]) == 0) {
                in[k] = (hg_sentry){nodes[i], 0, 0};
                break;
            }
    }
    if (st == HG_OK) st = hg_plan_create_entries(s, ninputs, in, out);
    free(in);
    free(nodes);
    return st;
}

/* ---- inference ------------------------------------------------------------------------- */

static bool meta_known(const hg_meta *m)
{
    if (m->ndim < 0) return false;
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] < 0) return false;
    return true;
}

/* Merges what b knows of a value into a (MXNet's shape unification, where 0 / -1 is an
 * unknown dimension): returns false on a conflict; *changed is set when a learned something. */
static bool meta_merge(hg_meta *a, const hg_meta *b, bool *changed)
{
    if (b->ndim < 0) return true;
    if (a->ndim < 0) {
        int dt = a->dtype;
        *a = *b;
        a->dtype = (hg_dtype)dt;
        *changed = true;
        return true;
    }
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++) {
        if (b->shape[d] < 0) continue;
        if (a->shape[d] < 0) {
            a->shape[d] = b->shape[d];
            *changed = true;
        } else if (a->shape[d] != b->shape[d]) {
            return false;
        }
    }
    return true;
}

static hg_status merge_error(const hg_snode *nd, const char *what, int k, const hg_meta *a,
                             const hg_meta *b)
{
    char x[HG_SHAPE_STR], y[HG_SHAPE_STR];
    hg_status st = hg_error(HG_ERR_VALUE, "%s %d: shape %s is inconsistent with %s", what, k,
                            hg_shape_str(x, a->ndim, a->shape), hg_shape_str(y, b->ndim, b->shape));
    hg_error_prefix(st, "Error in operator %s (%s): ", nd->name, nd->op->name);
    if (nd->origin) hg_error_prefix(st, "%s: ", nd->origin);
    return st;
}

/* Runs node i's rule. The rule sees its inputs' metas (unknown dimensions -1) and its outputs'
 * metas as known so far (from consumers: MXNet's rules run backwards too), and may fill unknown
 * input dimensions; what it learns flows back to the values. *changed: some meta changed;
 * *back: a change other than this node's outputs found from its inputs (something a node
 * before it may need). *deferred: a failure was put off (partial: an undecided input may
 * decide it later). */
static hg_status infer_node(hg_plan *p, int i, bool partial, bool *changed, bool *deferred,
                            bool *back)
{
    hg_snode *nd = p->nodes[i];
    hg_meta im_stack[8], *im = im_stack;
    hg_meta om_old[8];
    if (nd->nin > 8 && !(im = malloc(sizeof(hg_meta) * (size_t)nd->nin)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    /* An unknown input produced by another op means an earlier rule could not decide: then
     * this rule's failure is not an error yet (partial inference). Unknown variables are
     * parameters the rule is expected to fill in, so its errors about them are real; but
     * data (the first input) given with unknown (0) dimensions may not decide it yet. */
    bool upstream_unknown = nd->nin == 0;
    for (int k = 0; k < nd->nin; k++) {
        int src = p->in_idx[p->off[i] + k], e = input_entry_of(p, i, k);
        im[k] = p->meta[e];
        upstream_unknown |= !meta_known(&im[k]) && p->nodes[src]->op != NULL && p->fed_slot[e] < 0;
        upstream_unknown |= k == 0 && im[k].ndim >= 0 && !meta_known(&im[k]);
    }
    /* Type inference without dtypes given (MXNet's default type rule): a parameter variable of
     * undecided dtype takes the first decided input's, an auxiliary state the op updates
     * float32 (BatchNorm's statistics, also for float16 data). */
    int decided = -1;
    for (int k = 0; k < nd->nin && decided < 0; k++)
        if ((unsigned)im[k].dtype < HG_NUM_DTYPES) decided = (int)im[k].dtype;
    for (int k = 0; decided >= 0 && k < nd->nin; k++) {
        int src = p->in_idx[p->off[i] + k];
        if ((unsigned)im[k].dtype < HG_NUM_DTYPES || p->nodes[src]->op) continue;
        im[k].dtype = hg_op_mutates_input(nd->op, k) ? HG_DTYPE_F32 : (hg_dtype)decided;
        p->meta[input_entry_of(p, i, k)].dtype = im[k].dtype;
        *changed = *back = true;
    }
    hg_meta *om = &p->meta[p->entry[i]];
    int nold = nd->nout < 8 ? nd->nout : 8;
    for (int k = 0; k < nd->nout; k++) {
        if (k < nold) om_old[k] = om[k];
        om[k].dtype = nd->nin ? im[0].dtype : HG_DTYPE_F32;
    }
    hg_status st = HG_OK;
    /* Same-shape element-wise ops: every input and output has one shape, each dimension known
     * if any of them knows it (MXNet's ElemwiseShape, forwards and backwards). */
    if ((nd->op->flags & HG_OP_ELEMWISE) && nd->nin > 0) {
        hg_meta u = {.ndim = -1};
        bool ok = true, dummy = false;
        for (int k = 0; ok && k < nd->nin; k++) ok = meta_merge(&u, &im[k], &dummy);
        for (int k = 0; ok && k < nold; k++) ok = meta_merge(&u, &om_old[k], &dummy);
        if (ok && u.ndim >= 0)
            for (int k = 0; k < nd->nin; k++) {
                hg_dtype dt = im[k].dtype;
                bool c = false;
                meta_merge(&im[k], &u, &c);
                im[k].dtype = dt;
            }
    }
    if (p->cf[i]) st = hg_cflow_infer(p->cf[i], nd->nin, im, nd->nout, om);
    else st = nd->op->infer(nd->op, nd->attrs, nd->nin, im, nd->nout, om);
    if (st == HG_OK) {
        bool out_learned = false;
        /* What the consumers knew of the outputs stays known. */
        for (int k = 0; k < nold && st == HG_OK; k++) {
            hg_meta before = om_old[k];
            bool c = false;
            hg_meta now = om[k];
            if (!meta_merge(&now, &before, &c)) {
                st = merge_error(nd, "output", k, &om[k], &before);
                break;
            }
            now.dtype = om[k].dtype;
            om[k] = now;
            if (before.dtype != now.dtype ||
                !hg_shape_equal(before.ndim, before.shape, now.ndim, now.shape)) {
                *changed = out_learned = true;
                *back |= before.ndim >= 0; /* consumers had known it otherwise */
            }
        }
        /* Unknown input dimensions the rule filled in (weights from data, data from outputs)
         * flow back to their values. */
        for (int k = 0; k < nd->nin && st == HG_OK; k++) {
            hg_meta *src = &p->meta[input_entry_of(p, i, k)];
            if (meta_known(src)) continue;
            hg_meta m = *src;
            bool c = false;
            if (!meta_merge(&m, &im[k], &c)) {
                st = merge_error(nd, "input", k, &im[k], src);
                break;
            }
            if (c || (src->ndim < 0 && im[k].ndim >= 0)) {
                m.dtype = src->ndim < 0 ? im[k].dtype : src->dtype;
                *src = m;
                *changed = *back = true;
            }
            /* A rule that has just decided its outputs from an input it could not complete
             * (Reshape(6, 1, -2) of (0, 3, 5, 6) gives (6, 1, 5, 6)) completes that input from
             * them when it runs again: one more sweep. */
            if (out_learned && !meta_known(src)) *back = true;
        }
    } else if (partial && upstream_unknown) {
        hg_error_clear(); /* cannot decide yet: leave the outputs as they were */
        for (int k = 0; k < nold; k++) om[k] = om_old[k];
        *deferred = true;
        /* Input dimensions the rule filled before it stopped (MXNet's rules report "not
         * complete" after writing what they could) still flow back where they agree. */
        for (int k = 0; k < nd->nin; k++) {
            hg_meta *src = &p->meta[input_entry_of(p, i, k)];
            if (src->ndim < 0 || im[k].ndim != src->ndim || meta_known(src)) continue;
            hg_meta m = *src;
            bool c = false;
            if (meta_merge(&m, &im[k], &c) && c) {
                *src = m;
                *changed = *back = true;
            }
        }
        st = HG_OK;
    } else {
        char shapes[HG_ERROR_MAX / 2], buf[HG_SHAPE_STR];
        size_t len = 0;
        shapes[0] = '\0';
        for (int k = 0; k < nd->nin && len < sizeof shapes - HG_SHAPE_STR; k++)
            len += (size_t)snprintf(shapes + len, sizeof shapes - len, "%s%s", k ? ", " : "",
                                    im[k].ndim < 0 ? "?"
                                                   : hg_shape_str(buf, im[k].ndim, im[k].shape));
        hg_error_prefix(st, "Error in operator %s (%s), input shapes (%s): ", nd->name,
                        nd->op->name, shapes);
        if (nd->origin) hg_error_prefix(st, "%s: ", nd->origin);
    }
    if (im != im_stack) free(im);
    return st;
}

static bool meta_equal(const hg_meta *a, const hg_meta *b)
{
    return a->dtype == b->dtype && hg_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}

/* hg_plan_infer with the plan's lock held. */
static hg_status infer_graph(hg_plan *p, hg_meta *in, hg_meta *out, bool partial)
{
    /* The lowered signature answers without disturbing it (dynamic ops infer per call). */
    bool same = p->inferred && p->lowered;
    for (int k = 0; same && k < p->ninputs; k++)
        same = p->input_entry[k] < 0 || meta_equal(&in[k], &p->sig[k]);
    if (same) {
        for (int h = 0; h < p->nheads; h++) out[h] = p->meta[p->head_entry[h]];
        return HG_OK;
    }
    p->lowered = false;
    for (int e = 0; e < p->nentries; e++) p->meta[e].ndim = -1;
    for (int k = 0; k < p->ninputs; k++)
        if (p->input_entry[k] >= 0) p->meta[p->input_entry[k]] = in[k];
    p->inferred = false;
    /* Sweeps until nothing changes: a sweep may fill in values backwards (an unknown weight or
     * data shape completed by its consumer) that nodes before that consumer need. The nodes
     * are in topological order, so a sweep that learned nothing backwards and put nothing off
     * is final: a fully known graph takes one sweep. Failures are put off while something may
     * still change; the last sweep reports them unless partial. */
    bool changed = true, deferred = true, back = true;
    for (int sweep = 0; changed && (back || deferred) && sweep < p->n + 2; sweep++) {
        changed = deferred = back = false;
        for (int i = 0; i < p->n; i++) {
            if (!p->needed[i]) continue;
            hg_status st = infer_node(p, i, true, &changed, &deferred, &back);
            if (st != HG_OK) return st;
        }
    }
    if (deferred && !partial) {
        bool c = false, d = false, b = false;
        for (int i = 0; i < p->n; i++) {
            if (!p->needed[i]) continue;
            hg_status st = infer_node(p, i, false, &c, &d, &b);
            if (st != HG_OK) return st;
        }
    }
    /* Every value a run computes must be decided (a rule may leave dimensions unknown in
     * partial inference, as _ones(shape=(-1, 3)) does until a consumer decides them). */
    for (int i = 0; !partial && i < p->n; i++) {
        if (!p->needed[i]) continue;
        for (int k = 0; k < p->nodes[i]->nout; k++) {
            const hg_meta *m = &p->meta[entry_of(p, i, k)];
            if (m->ndim < 0 || meta_known(m)) continue;
            char buf[HG_SHAPE_STR];
            return hg_error(HG_ERR_VALUE,
                            "cannot infer the shape of output %d of operator %s (%s): got %s "
                            "(-1: unknown)",
                            k, p->nodes[i]->name, p->nodes[i]->op->name,
                            hg_shape_str(buf, m->ndim, m->shape));
        }
    }
    for (int k = 0; k < p->ninputs; k++)
        if (p->input_entry[k] >= 0) in[k] = p->meta[p->input_entry[k]];
    for (int h = 0; h < p->nheads; h++) {
        out[h] = p->meta[p->head_entry[h]];
        if (!partial && !meta_known(&out[h]))
            return hg_error(HG_ERR_VALUE, "cannot infer the shape of output %d", h);
    }
    return HG_OK;
}

/* The sweeps with the thread's graph-inference flag set (see hg_set_graph_infer). */
static hg_status infer_locked(hg_plan *p, hg_meta *in, hg_meta *out, bool partial)
{
    bool prev = hg_set_graph_infer(true);
    hg_status st = infer_graph(p, in, out, partial);
    hg_set_graph_infer(prev);
    return st;
}

hg_status hg_plan_infer(hg_plan *p, hg_meta *in, hg_meta *out, bool partial)
{
    pthread_mutex_lock(&p->lock);
    hg_status st = infer_locked(p, in, out, partial);
    pthread_mutex_unlock(&p->lock);
    return st;
}

hg_status hg_plan_value_metas(hg_plan *p, hg_tensor *const *inputs, int n,
                              const hg_snode *const *nodes, hg_meta *out)
{
    hg_meta *in = malloc(sizeof(hg_meta) * (size_t)(p->ninputs + 1));
    hg_meta *heads = malloc(sizeof(hg_meta) * (size_t)(p->nheads + 1));
    hg_status st = (in && heads) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < p->ninputs; k++) {
        if (inputs[k]) in[k] = hg_meta_of(inputs[k]);
        else in[k] = (hg_meta){.ndim = -1, .dtype = HG_DTYPE_F32};
    }
    pthread_mutex_lock(&p->lock);
    if (st == HG_OK) st = infer_locked(p, in, heads, false);
    for (int j = 0, o = 0; st == HG_OK && j < n; o += nodes[j]->nout, j++) {
        int i = 0;
        while (i < p->n && p->nodes[i] != nodes[j]) i++;
        if (i == p->n) {
            st = hg_error(HG_ERR_INTERNAL, "node '%s' is not in the plan", nodes[j]->name);
            break;
        }
        memcpy(out + o, p->meta + p->entry[i], sizeof(hg_meta) * (size_t)nodes[j]->nout);
    }
    pthread_mutex_unlock(&p->lock);
    free(in);
    free(heads);
    return st;
}

/* ---- running --------------------------------------------------------------------------- */

/* Whether the lowered signature is the inputs' one. Runs before every run, static flags or
 * not: the steps, the arena's layout and every workspace were sized from these metas. */
static bool same_signature(const hg_plan *p, hg_tensor *const *inputs)
{
    if (!p->inferred || !p->lowered) return false;
    for (int k = 0; k < p->ninputs; k++) {
        const hg_meta *m = &p->sig[k];
        if (m->dtype != inputs[k]->dtype ||
            !hg_shape_equal(m->ndim, m->shape, inputs[k]->ndim, inputs[k]->shape))
            return false;
    }
    return true;
}

static hg_status replan(hg_plan *p, hg_tensor *const *inputs)
{
    hg_meta *in = malloc(sizeof(hg_meta) * (size_t)(p->ninputs + 1));
    hg_meta *out = malloc(sizeof(hg_meta) * (size_t)(p->nheads + 1));
    hg_status st = (in && out) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < p->ninputs; k++) in[k] = hg_meta_of(inputs[k]);
    if (st == HG_OK) st = infer_locked(p, in, out, false);
    for (int k = 0; st == HG_OK && k < p->ninputs; k++) {
        hg_meta given = hg_meta_of(inputs[k]);
        if (p->input_entry[k] < 0) continue;
        if (!hg_shape_equal(in[k].ndim, in[k].shape, given.ndim, given.shape) ||
            in[k].dtype != given.dtype) {
            char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
            st = hg_error(HG_ERR_VALUE, "input %d has shape %s (%s) but the graph needs %s (%s)", k,
                          hg_shape_str(a, given.ndim, given.shape), hg_dtype_name(given.dtype),
                          hg_shape_str(b, in[k].ndim, in[k].shape), hg_dtype_name(in[k].dtype));
        }
    }
    free(in);
    free(out);
    if (st != HG_OK) return st;
    for (int k = 0; k < p->ninputs; k++) p->sig[k] = hg_meta_of(inputs[k]);
    p->inferred = true;
    st = hg_plan_lower(p);
    if (st == HG_OK && p->print) {
        char *text = NULL;
        if (hg_plan_describe_locked(p, &text) == HG_OK) fprintf(stderr, "%s", text);
        free(text);
    }
    return st;
}

/* The arena for this run: kept between runs with static_alloc, else taken from the pool. The
 * storage every arena header shares is made by lowering (never freed through its count). */
static hg_status arena_acquire(hg_plan *p)
{
    size_t need = p->arena_bytes ? p->arena_bytes : 64;
    if (p->arena && p->arena_cap >= need) return HG_OK;
    if (p->arena) hg_free(p->arena, p->arena_cap);
    p->arena = hg_alloc(need);
    p->arena_cap = p->arena ? need : 0;
    p->arena_storage->data = p->arena;
    p->arena_storage->nbytes = p->arena_cap;
    if (!p->arena)
        return hg_error(HG_ERR_MEMORY, "cannot allocate %zu bytes for the graph's values", need);
    return HG_OK;
}

static void arena_release(hg_plan *p)
{
    if ((p->flags & HG_PLAN_STATIC_ALLOC) || !p->arena) return;
    hg_free(p->arena, p->arena_cap);
    p->arena = NULL;
    p->arena_cap = 0;
    p->arena_storage->data = NULL;
}

static hg_status run_op(hg_plan *p, int node, const int *ins, int nin, const int *outs, int nout,
                        const hg_pstep *s, hg_tensor **cur, bool is_train);

/* An RNN on the arrays its parameter vector would be made of (lower.c, find_splits). */
static hg_status run_split(hg_plan *p, const hg_pstep *s, hg_tensor **cur, bool is_train)
{
    hg_snode *nd = p->nodes[s->node];
    const int *ins = p->sin + s->in_base;
    hg_tensor *in[8] = {NULL}, *out[8] = {NULL}, *stack[64], **pieces = stack;
    if (nd->nin > 8 || s->nout > 8) return hg_error(HG_ERR_INTERNAL, "RNN: too many inputs");
    if (s->split > 64 && !(pieces = malloc(sizeof *pieces * (size_t)s->split)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    in[0] = cur[ins[0]];
    for (int k = 0; k < s->split; k++) pieces[k] = cur[ins[1 + k]];
    for (int k = 2; k < nd->nin; k++) in[k] = cur[ins[s->split + k - 1]];
    for (int k = 0; k < s->nout; k++) out[k] = cur[p->sout[s->out_base + k]];
    hg_exec_ctx ctx = {is_train, s->ws_bytes ? (char *)p->arena + s->ws_off : NULL, s->ws_bytes};
    hg_status st = hg_rnn_forward_split(nd->op, nd->attrs, &ctx, s->split, pieces, in, out);
    if (st != HG_OK) hg_error_prefix(st, "node '%s' (%s): ", nd->name, nd->op->name);
    if (pieces != stack) free(pieces);
    return st;
}

static hg_status run_step(hg_plan *p, const hg_pstep *s, hg_tensor **cur, bool is_train)
{
    if (s->alias) { /* the output's header onto input 0's data (no kernel: see mark_aliases) */
        const hg_tensor *src = cur[p->sin[s->in_base]];
        hg_tensor *v = cur[p->sout[s->out_base]];
        v->storage = src->storage;
        v->offset = src->offset;
        return HG_OK;
    }
    if (s->fold) return hg_fold_run(p, s, cur, is_train);
    if (s->split) return run_split(p, s, cur, is_train);
    if (s->producer >= 0) {
        HG_TRY(run_op(p, s->producer, p->sin + s->in_base, s->pnin, p->sout + s->out_base, 1, s,
                      cur, is_train));
        return hg_plan_run_fused(p, s, cur);
    }
    if (s->count > 1) return hg_plan_run_fused(p, s, cur);
    return run_op(p, s->node, p->sin + s->in_base, s->nin, p->sout + s->out_base, s->nout, s, cur,
                  is_train);
}

static hg_status run_op(hg_plan *p, int node, const int *ins, int nin, const int *outs, int nout,
                        const hg_pstep *s, hg_tensor **cur, bool is_train)
{
    hg_snode *nd = p->nodes[node];
    hg_tensor *in_stack[16], *out_stack[8], **in = in_stack, **out = out_stack;
    if ((nin > 16 && !(in = malloc(sizeof *in * (size_t)nin))) ||
        (nout > 8 && !(out = malloc(sizeof *out * (size_t)nout)))) {
        if (in != in_stack) free(in);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int k = 0; k < nin; k++) in[k] = cur[ins[k]];
    for (int k = 0; k < nout; k++) out[k] = cur[outs[k]];
    hg_exec_ctx ctx = {is_train, s->ws_bytes ? (char *)p->arena + s->ws_off : NULL, s->ws_bytes};
    /* weights the op prepares once (conv.c: packed for its deep direct kernel) */
    if (!is_train && nd->op->prep_bytes)
        ctx.prep = hg_plan_prep(p, s, node, in, nin, &ctx.prep_bytes);
    hg_status st;
    if (p->cf[node]) st = hg_cflow_run(p->cf[node], is_train, nin, in, nout, out);
    else if (nd->op->forward) st = nd->op->forward(nd->op, nd->attrs, &ctx, nin, in, nout, out);
    else st = hg_ew_forward(nd->op, nd->attrs, nin, in, out[0]);
    if (st != HG_OK) hg_error_prefix(st, "node '%s' (%s): ", nd->name, nd->op->name);
    if (in != in_stack) free(in);
    if (out != out_stack) free(out);
    return st;
}

/* A fresh tensor for value e. As with hg_op_run, it lives on the first input's device (a block
 * called on cpu(1) answers on cpu(1)); a plan without inputs leaves it on cpu(0). */
static hg_status new_output(const hg_plan *p, hg_tensor *const *inputs, int e, hg_tensor **out)
{
    HG_TRY(hg_tensor_new_meta(&p->meta[e], out));
    if (p->ninputs > 0) {
        (*out)->storage->device_type = hg_device_kind(inputs[0]->storage->device_type);
        (*out)->storage->device_id = inputs[0]->storage->device_id;
    }
    return HG_OK;
}

static _Thread_local hg_plan_notify t_notify;

hg_plan_notify hg_plan_set_notify(hg_plan_notify n)
{
    hg_plan_notify old = t_notify;
    t_notify = n;
    return old;
}

/* For notification: the heads computed by steps, ordered by step, in *order (heads[] of
 * nheads ints: the head indices sorted by their producing step; step_of[h]: that step, or
 * nsteps for a head no step computes). Fills by counting sort; returns false without memory. */
static bool heads_by_step(const hg_plan *p, int *step_of, int *order)
{
    int *last = malloc(sizeof(int) * (size_t)(p->nentries + 1));
    int *count = calloc((size_t)p->nsteps + 2, sizeof(int));
    if (!last || !count) {
        free(last);
        free(count);
        return false;
    }
    for (int e = 0; e < p->nentries; e++) last[e] = p->nsteps;
    for (int i = 0; i < p->nsteps; i++)
        for (int k = 0; k < p->steps[i].nout; k++) last[p->sout[p->steps[i].out_base + k]] = i;
    for (int h = 0; h < p->nheads; h++) {
        int e = p->head_entry[h];
        step_of[h] = p->fed_slot[e] >= 0 || p->head_owner[h] != h ? p->nsteps : last[e];
        count[step_of[h] + 1]++;
    }
    for (int i = 0; i <= p->nsteps; i++) count[i + 1] += count[i];
    for (int h = 0; h < p->nheads; h++) order[count[step_of[h]]++] = h;
    free(last);
    free(count);
    return true;
}

static hg_status run_locked(hg_plan *p, hg_tensor *const *inputs, bool is_train,
                            hg_tensor **outputs)
{
    hg_status st = HG_OK;
    if (!same_signature(p, inputs) && (st = replan(p, inputs)) != HG_OK) return st;
    if ((st = arena_acquire(p)) != HG_OK) return st;
    hg_tensor **cur = p->cur;
    for (int k = 0; k < p->ninputs; k++)
        if (p->input_entry[k] >= 0) cur[p->input_entry[k]] = inputs[k];
    uint8_t given_stack[64], *given = given_stack;
    if (p->nheads > 64 && !(given = malloc((size_t)p->nheads)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int h = 0; h < p->nheads && st == HG_OK; h++) {
        given[h] = outputs[h] != NULL;
        const hg_meta *m = &p->meta[p->head_entry[h]];
        if (given[h] && (outputs[h]->dtype != m->dtype ||
                         !hg_shape_equal(outputs[h]->ndim, outputs[h]->shape, m->ndim, m->shape)))
            st = hg_error(HG_ERR_VALUE, "hg_plan_run: output %d has the wrong shape or dtype", h);
    }
    /* The outputs the plan computes go straight to their tensors (fresh, or the caller's). */
    for (int h = 0; h < p->nheads && st == HG_OK; h++) {
        int e = p->head_entry[h];
        if (p->fed_slot[e] >= 0 || p->head_owner[h] != h) continue;
        if (!given[h]) st = new_output(p, inputs, e, &outputs[h]);
        cur[e] = outputs[h];
    }
    hg_plan_notify notify = t_notify;
    int *step_of = NULL, *order = NULL, next = 0;
    if (notify.fn && st == HG_OK) {
        step_of = malloc(sizeof(int) * (size_t)(p->nheads + 1));
        order = malloc(sizeof(int) * (size_t)(p->nheads + 1));
        if (!step_of || !order || !heads_by_step(p, step_of, order))
            st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; i < p->nsteps && st == HG_OK; i++) {
        int64_t t0 = hg_prof_active(HG_PROF_SYMBOLIC) ? hg_prof_now() : 0;
        st = run_step(p, &p->steps[i], cur, is_train);
        if (t0 && st == HG_OK) hg_plan_prof_step(p, &p->steps[i], t0);
        for (; order && st == HG_OK && next < p->nheads && step_of[order[next]] == i; next++)
            notify.fn(notify.ctx, outputs[order[next]]);
    }
    /* Outputs that are inputs, or repeat another output, are copies. */
    for (int h = 0; h < p->nheads && st == HG_OK; h++) {
        int e = p->head_entry[h];
        if (p->fed_slot[e] < 0 && p->head_owner[h] == h) continue;
        hg_tensor *v = cur[e];
        if (!given[h]) st = new_output(p, inputs, e, &outputs[h]);
        if (st == HG_OK && outputs[h] != v)
            memcpy(hg_data(outputs[h]), hg_data(v), hg_tensor_nbytes(v));
    }
    for (; order && st == HG_OK && next < p->nheads; next++)
        notify.fn(notify.ctx, outputs[order[next]]);
    free(step_of);
    free(order);
    if (st != HG_OK)
        for (int h = 0; h < p->nheads; h++) {
            if (given[h]) continue;
            hg_tensor_free(outputs[h]);
            outputs[h] = NULL;
        }
    /* written: the caller's outputs and the inputs the steps update (core/tensor.h) */
    for (int h = 0; h < p->nheads; h++)
        if (given[h]) hg_tensor_wrote(outputs[h]);
    for (int k = 0; k < p->ninputs; k++)
        if (p->in_writes[k] & (is_train ? 2 : 1)) hg_tensor_wrote(inputs[k]);
    if (given != given_stack) free(given);
    /* The aliases' headers go back to the arena storage they hold a reference to. */
    for (int a = 0; a < p->nalias; a++) {
        p->vt[p->alias_e[a]]->storage = p->arena_storage;
        p->vt[p->alias_e[a]]->offset = 0;
    }
    arena_release(p);
    return st;
}

hg_status hg_plan_run(hg_plan *p, hg_tensor *const *inputs, bool is_train, hg_tensor **outputs)
{
    if (!p || (p->ninputs && !inputs) || !outputs)
        return hg_error(HG_ERR_VALUE, "hg_plan_run: NULL argument");
    for (int k = 0; k < p->ninputs; k++) {
        if (!inputs[k]) return hg_error(HG_ERR_VALUE, "hg_plan_run: input %d is NULL", k);
        /* Plans run CPU kernels on host memory; a GPU array must never reach them. Cached
         * graphs (hybridized blocks, Symbol executors) on a GPU run op by op instead
         * (cachedop.c), and autograd's backward too. */
        if (hg_on_gpu(inputs[k]))
            return hg_error(HG_ERR_UNSUPPORTED,
                            "input %d is on gpu(%d): plans run on the CPU only in this version "
                            "(on a GPU, graphs run op by op; see docs/gpu.md)",
                            k, inputs[k]->storage->device_id);
    }
    pthread_mutex_lock(&p->lock);
    hg_status st = run_locked(p, inputs, is_train, outputs);
    pthread_mutex_unlock(&p->lock);
    return st;
}

void hg_plan_get_stats(hg_plan *p, hg_plan_stats *st)
{
    pthread_mutex_lock(&p->lock);
    *st = p->stats;
    pthread_mutex_unlock(&p->lock);
}

hg_status hg_plan_describe(hg_plan *p, char **out)
{
    pthread_mutex_lock(&p->lock);
    hg_status st = hg_plan_describe_locked(p, out);
    pthread_mutex_unlock(&p->lock);
    return st;
}
