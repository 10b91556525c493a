/* Cached ops (see cachedop.h): the inference plan, and per gradient mask a training variant
 * made of two dynamic op definitions (forward with the kept activations as hidden outputs,
 * backward) and their plans. */
#include "exec/cachedop.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/env.h"
#include "graph/grad.h"

static const hg_tape *g_tape;

void hg_cachedop_set_tape(const hg_tape *tape) { g_tape = tape; }

typedef struct variant {
    hg_op_def fwd_def, bwd_def;
    struct hg_cachedop *owner;
    char *mask;          /* per input: its gradient is needed */
    int nmask, nsaved;
    hg_plan *fwd_plan, *bwd_plan;
    struct variant *next;
} variant;

/* The CUDA graph of a static block's GPU inference calls (see call_graph). */
enum { GRAPH_NONE, GRAPH_WARM, GRAPH_READY, GRAPH_OFF };
#define MAX_CAPTURES 8 /* recordings (new shapes, moved inputs) before calls stay op by op */

typedef struct gpu_graph {
    int state, captures, dev;
    long long replays;
    hg_gpu_graph *graph;
    hg_meta *meta;     /* per input: the shape and dtype the graph was made for */
    void **ptr;        /* per input: its data at the warm-up call, then the one recorded */
    char *moved;       /* per input: times it was seen at a new address (2: it has a slot) */
    hg_tensor **slot;  /* per input: the graph's copy of it (inputs that move between calls) */
    hg_tensor **outs;  /* the graph's outputs, copied out after each replay */
    char why[200];
} gpu_graph;

struct hg_cachedop {
    atomic_long refcount;
    pthread_mutex_t lock; /* guards variants and last (the plans have their own locks) */
    hg_symbol *sym;
    int ninputs, nheads;
    hg_sentry *inputs;   /* the input variables (node NULL: unused name) */
    unsigned flags;
    hg_plan *plan;
    variant *variants, *last;
    pthread_mutex_t glock; /* guards gg, and orders each replay's copies and launch */
    gpu_graph gg;
};

#define VARIANT_OF(op, field) ((variant *)((char *)(op)-offsetof(variant, field)))

static void variant_free(variant *v)
{
    hg_plan_free(v->fwd_plan);
    hg_plan_free(v->bwd_plan);
    free(v->mask);
    free(v);
}

/* Drops the graph and the arrays it keeps (a replay still queued runs first: stream order). */
static void graph_reset(hg_cachedop *c)
{
    gpu_graph *g = &c->gg;
    hg_gpu_graph_free(g->graph);
    g->graph = NULL;
    for (int k = 0; g->slot && k < c->ninputs; k++) {
        hg_tensor_free(g->slot[k]);
        g->slot[k] = NULL;
    }
    for (int h = 0; g->outs && h < c->nheads; h++) {
        hg_tensor_free(g->outs[h]);
        g->outs[h] = NULL;
    }
}

void hg_cachedop_retain(hg_cachedop *c) { atomic_fetch_add(&c->refcount, 1); }

void hg_cachedop_release(hg_cachedop *c)
{
    if (!c || atomic_fetch_sub(&c->refcount, 1) != 1) return;
    for (variant *v = c->variants, *next; v; v = next) {
        next = v->next;
        variant_free(v);
    }
    hg_plan_free(c->plan);
    graph_reset(c);
    free(c->gg.meta);
    free(c->gg.ptr);
    free(c->gg.slot);
    free(c->gg.moved);
    free(c->gg.outs);
    pthread_mutex_destroy(&c->glock);
    hg_symbol_free(c->sym);
    free(c->inputs);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void owner_retain(void *o) { hg_cachedop_retain(o); }
static void owner_release(void *o) { hg_cachedop_release(o); }

hg_plan *hg_cachedop_plan(hg_cachedop *c) { return c->plan; }

hg_status hg_cachedop_create(const hg_symbol *s, int ninputs, const char *const *input_names,
                             unsigned plan_flags, hg_cachedop **out)
{
    if (!s || !out || ninputs < 0 || (ninputs && !input_names))
        return hg_error(HG_ERR_VALUE, "hg_cachedop_create: NULL argument");
    if ((plan_flags & HG_PLAN_STATIC_SHAPE) && !(plan_flags & HG_PLAN_STATIC_ALLOC))
        return hg_error(HG_ERR_VALUE, "static_alloc must be True when static_shape is True");
    hg_cachedop *c = calloc(1, sizeof *c);
    if (!c) return hg_error(HG_ERR_MEMORY, "out of memory");
    atomic_init(&c->refcount, 1);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->glock, NULL);
    c->ninputs = ninputs;
    c->nheads = s->n;
    c->flags = plan_flags;
    hg_snode **nodes = NULL;
    int n = 0;
    hg_status st = hg_symbol_group(1, &s, &c->sym);
    if (st == HG_OK) st = hg_symbol_topo(c->sym, &nodes, &n);
    if (st == HG_OK && !(c->inputs = calloc((size_t)ninputs + 1, sizeof(hg_sentry))))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < ninputs; k++)
        for (int i = 0; input_names[k] && i < n; i++)
            if (!nodes[i]->op && strcmp(nodes[i]->name, input_names[k]) == 0) {
                c->inputs[k] = (hg_sentry){nodes[i], 0, 0};
                break;
            }
    free(nodes);
    if (st == HG_OK) st = hg_plan_create_entries(c->sym, ninputs, c->inputs, &c->plan);
    if (st == HG_OK) hg_plan_set_flags(c->plan, plan_flags);
    if (st != HG_OK) {
        hg_cachedop_release(c);
        return st;
    }
    *out = c;
    return HG_OK;
}

/* ---- the dynamic op definitions of a training variant ------------------------------------ */

static hg_status fwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    variant *v = VARIANT_OF(op, fwd_def);
    hg_meta *copy = malloc(sizeof(hg_meta) * (size_t)(nin + 1));
    if (!copy) return hg_error(HG_ERR_MEMORY, "out of memory");
    memcpy(copy, in, sizeof(hg_meta) * (size_t)nin);
    hg_status st = hg_plan_infer(v->fwd_plan, copy, out, false);
    free(copy);
    return st;
}

static hg_status fwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    variant *v = VARIANT_OF(op, fwd_def);
    return hg_plan_run(v->fwd_plan, in, ctx->is_train, (hg_tensor **)out);
}

static hg_status bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    variant *v = VARIANT_OF(op, bwd_def);
    int base = v->owner->nheads + v->nsaved, j = 0;
    for (int k = 0; k < v->owner->ninputs; k++)
        if (v->mask[k]) out[j++] = in[base + k];
    return HG_OK;
}

static hg_status bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    variant *v = VARIANT_OF(op, bwd_def);
    return hg_plan_run(v->bwd_plan, in, ctx->is_train, (hg_tensor **)out);
}

/* The rule of the whole block: one backward node reading the output gradients, the kept
 * activations and the inputs; it returns the gradients of the inputs in the mask. */
static hg_status fwd_grad(hg_grad_ctx *g)
{
    const hg_snode *node = hg_g_node(g);
    variant *v = VARIANT_OF(node->op, fwd_def);
    int nh = v->owner->nheads, nin = nh + v->nsaved + v->owner->ninputs;
    hg_sentry *in = malloc(sizeof *in * (size_t)nin);
    hg_sentry *out = malloc(sizeof *out * (size_t)(v->nmask + 1));
    if (!in || !out) {
        free(in);
        free(out);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int h = 0; h < nh; h++) in[h] = hg_g_ograd(g, h);
    for (int s = 0; s < v->nsaved; s++) in[nh + s] = hg_g_out(g, nh + s);
    for (int k = 0; k < v->owner->ninputs; k++) in[nh + v->nsaved + k] = hg_g_in(g, k);
    hg_g_op_def(g, &v->bwd_def, nin, in, NULL, v->nmask, out);
    for (int k = 0, j = 0; k < v->owner->ninputs; k++)
        if (v->mask[k]) hg_g_set(g, k, out[j++]);
    free(in);
    free(out);
    return hg_g_status(g);
}

/* ---- building a training variant --------------------------------------------------------- */

/* The forward graph's nodes, for the questions build_variant asks of every backward node:
 * is it a forward node, and was this forward value already kept. Linear in the graph's size
 * (a hash of the node pointers and one flag per forward value). */
typedef struct {
    hg_nodemap *pos;
    int *first;  /* forward position -> its first value's index in seen */
    bool *seen;  /* forward value already among the kept ones */
} fwd_index;

static hg_status fwd_index_new(hg_snode *const *fwd, int n, fwd_index *ix)
{
    *ix = (fwd_index){0};
    HG_TRY(hg_nodemap_new(fwd, n, &ix->pos));
    ix->first = malloc(sizeof(int) * (size_t)(n + 1));
    int total = 0;
    for (int i = 0; ix->first && i < n; i++) {
        ix->first[i] = total;
        total += fwd[i]->nout;
    }
    ix->seen = calloc((size_t)total + 1, sizeof(bool));
    if (!ix->first || !ix->seen) return hg_error(HG_ERR_MEMORY, "out of memory");
    return HG_OK;
}

static void fwd_index_free(fwd_index *ix)
{
    hg_nodemap_free(ix->pos);
    free(ix->first);
    free(ix->seen);
}

static bool is_fwd(const fwd_index *ix, const hg_snode *x)
{
    return hg_nodemap_get(ix->pos, x) >= 0;
}

/* Keeps forward value e (once). */
static hg_status add_saved(fwd_index *ix, hg_sentry **saved, int *n, int *cap, hg_sentry e)
{
    bool *seen = &ix->seen[ix->first[hg_nodemap_get(ix->pos, e.node)] + e.index];
    if (*seen) return HG_OK;
    *seen = true;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        hg_sentry *t = realloc(*saved, sizeof *t * (size_t)nc);
        if (!t) return hg_error(HG_ERR_MEMORY, "out of memory");
        *saved = t;
        *cap = nc;
    }
    (*saved)[(*n)++] = (hg_sentry){e.node, e.index, 0};
    return HG_OK;
}

static hg_status build_variant(hg_cachedop *c, const char *mask, variant **out)
{
    variant *v = calloc(1, sizeof *v);
    if (!v || !(v->mask = malloc((size_t)c->ninputs + 1))) {
        free(v);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    memcpy(v->mask, mask, (size_t)c->ninputs);
    v->owner = c;
    int nh = c->nheads, nfwd = 0, nbwd = 0, cap = 0;
    hg_snode **fwd = NULL, **bnodes = NULL, **wrt = malloc(sizeof(hg_snode *) * (c->ninputs + 1));
    hg_snode **hgv = calloc((size_t)nh + 1, sizeof(hg_snode *));
    hg_sentry *hge = calloc((size_t)nh + 1, sizeof(hg_sentry)), *saved = NULL, *bin = NULL;
    hg_symbol *gsym = NULL, *fsym = NULL;
    fwd_index ix = {0};
    hg_status st = (wrt && hgv && hge) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < c->ninputs; k++)
        if (mask[k]) wrt[v->nmask++] = c->inputs[k].node;
    for (int h = 0; st == HG_OK && h < nh; h++) {
        st = hg_snode_new_var("_head_grad", &hgv[h]);
        hge[h] = (hg_sentry){hgv[h], 0, 0};
    }
    if (st == HG_OK) st = hg_graph_grad(nh, c->sym->heads, hge, v->nmask, wrt, &gsym);
    if (st == HG_OK) st = hg_symbol_topo(c->sym, &fwd, &nfwd);
    if (st == HG_OK) st = hg_symbol_topo(gsym, &bnodes, &nbwd);
    if (st == HG_OK) st = fwd_index_new(fwd, nfwd, &ix);
    /* Kept activations: forward op values that backward nodes (or the gradients) read. */
    int nsaved = 0;
    for (int i = 0; st == HG_OK && i < nbwd; i++) {
        if (is_fwd(&ix, bnodes[i])) continue;
        for (int k = 0; st == HG_OK && k < bnodes[i]->nin; k++)
            if (bnodes[i]->in[k].node->op && is_fwd(&ix, bnodes[i]->in[k].node))
                st = add_saved(&ix, &saved, &nsaved, &cap, bnodes[i]->in[k]);
    }
    for (int h = 0; st == HG_OK && h < gsym->n; h++)
        if (gsym->heads[h].node->op && is_fwd(&ix, gsym->heads[h].node))
            st = add_saved(&ix, &saved, &nsaved, &cap, gsym->heads[h]);
    fwd_index_free(&ix);
    v->nsaved = nsaved;
    /* Forward plan: the block's outputs, then the kept values. */
    hg_sentry *fheads = NULL;
    if (st == HG_OK && !(fheads = malloc(sizeof *fheads * (size_t)(nh + nsaved + 1))))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) {
        memcpy(fheads, c->sym->heads, sizeof *fheads * (size_t)nh);
        if (nsaved) memcpy(fheads + nh, saved, sizeof *fheads * (size_t)nsaved);
        st = hg_symbol_from_entries(nh + nsaved, fheads, &fsym);
    }
    free(fheads);
    if (st == HG_OK) st = hg_plan_create_entries(fsym, c->ninputs, c->inputs, &v->fwd_plan);
    /* Backward plan: inputs are the output gradients, the kept values and the block inputs. */
    int nbin = nh + nsaved + c->ninputs;
    if (st == HG_OK && !(bin = malloc(sizeof *bin * (size_t)(nbin + 1))))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) {
        memcpy(bin, hge, sizeof *bin * (size_t)nh);
        if (nsaved) memcpy(bin + nh, saved, sizeof *bin * (size_t)nsaved);
        memcpy(bin + nh + nsaved, c->inputs, sizeof *bin * (size_t)c->ninputs);
        st = hg_plan_create_entries(gsym, nbin, bin, &v->bwd_plan);
    }
    if (st == HG_OK) {
        hg_plan_set_flags(v->fwd_plan, c->flags);
        hg_plan_set_flags(v->bwd_plan, c->flags);
        v->fwd_def = (hg_op_def){
            .name = "_CachedOp",
            .doc = "a hybridized block (one tape node)",
            .num_inputs = c->ninputs,
            .num_outputs = nh + nsaved,
            .num_visible_outputs = nh,
            .infer = fwd_infer,
            .forward = fwd_forward,
            .grad = fwd_grad,
        };
        v->bwd_def = (hg_op_def){
            .name = "_backward_CachedOp",
            .doc = "the planned backward graph of a hybridized block",
            .num_inputs = nbin,
            .num_outputs = v->nmask ? v->nmask : 1,
            .infer = bwd_infer,
            .forward = bwd_forward,
        };
    }
    for (int h = 0; hgv && h < nh; h++) hg_snode_release(hgv[h]);
    free(hgv);
    free(hge);
    free(wrt);
    free(fwd);
    free(bnodes);
    free(saved);
    free(bin);
    hg_symbol_free(gsym);
    hg_symbol_free(fsym);
    if (st != HG_OK) {
        variant_free(v);
        return st;
    }
    *out = v;
    return HG_OK;
}

/* The variant for this gradient mask, built on first use. Variants live as long as the op. */
static hg_status get_variant(hg_cachedop *c, const char *mask, variant **out)
{
    hg_status st = HG_OK;
    pthread_mutex_lock(&c->lock);
    variant *v = c->variants;
    while (v && memcmp(v->mask, mask, (size_t)c->ninputs) != 0) v = v->next;
    if (!v && (st = build_variant(c, mask, &v)) == HG_OK) {
        v->next = c->variants;
        c->variants = v;
    }
    if (st == HG_OK) *out = c->last = v;
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* A node without inputs (zeros, a random draw) in a GPU call, made on gpu(dev) with the metas m
 * the graph's inference gives it (its attributes may leave dims to inference, as a traced
 * begin state's batch size). Through its GPU kernel; an op without one runs on the host and
 * its result is copied over. */
static hg_status run_source(const hg_snode *nd, const hg_meta *m, int dev, bool train,
                            hg_tensor **out)
{
    bool ws = false;
    hg_kernel_fn k = hg_gpu_kernel_ws(nd->op, &ws);
    bool on_gpu = k && !ws, any = false;
    hg_status st = HG_OK;
    for (int o = 0; o < nd->nout && st == HG_OK; o++) {
        st = on_gpu ? hg_tensor_new_on(&m[o], HG_DEVICE_GPU, dev, false, &out[o])
                    : hg_tensor_new_meta(&m[o], &out[o]);
        if (st == HG_OK) any |= out[o]->size > 0;
    }
    hg_exec_ctx ctx = {.is_train = train, .device_id = on_gpu ? dev : 0};
    if (st == HG_OK && any) {
        if (on_gpu) st = k(nd->op, nd->attrs, &ctx, 0, NULL, nd->nout, out);
        else if (nd->op->forward)
            st = nd->op->forward(nd->op, nd->attrs, &ctx, 0, NULL, nd->nout, out);
        else st = hg_error(HG_ERR_UNSUPPORTED, "Operator %s has no kernel", nd->op->name);
    }
    for (int o = 0; !on_gpu && st == HG_OK && o < nd->nout; o++) { /* to the GPU */
        hg_tensor *g = NULL;
        st = hg_tensor_new_on(&m[o], HG_DEVICE_GPU, dev, false, &g);
        if (st == HG_OK) st = hg_tensor_copy_any(out[o], g);
        hg_tensor_free(out[o]);
        out[o] = g;
    }
    if (st != HG_OK)
        for (int o = 0; o < nd->nout; o++) {
            hg_tensor_free(out[o]);
            out[o] = NULL;
        }
    return st;
}

/* The metas of the nodes without inputs of a GPU call (see run_source): *at[i] is node i's
 * first meta in *metas, -1 for other nodes. Nothing to do (NULLs) when there are none. */
static hg_status source_metas(hg_cachedop *c, hg_tensor *const *inputs, hg_snode **nodes, int n,
                              int **at, hg_meta **metas)
{
    *at = NULL;
    *metas = NULL;
    int ns = 0, nm = 0;
    for (int i = 0; i < n; i++)
        if (nodes[i]->op && nodes[i]->nin == 0) ns++, nm += nodes[i]->nout;
    if (!ns) return HG_OK;
    const hg_snode **src = malloc(sizeof *src * (size_t)ns);
    *at = malloc(sizeof(int) * (size_t)n);
    *metas = malloc(sizeof(hg_meta) * (size_t)nm);
    hg_status st = (src && *at && *metas) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0, j = 0, o = 0; st == HG_OK && i < n; i++) {
        (*at)[i] = -1;
        if (nodes[i]->op && nodes[i]->nin == 0) {
            src[j++] = nodes[i];
            (*at)[i] = o;
            o += nodes[i]->nout;
        }
    }
    if (st == HG_OK) st = hg_plan_value_metas(c->plan, inputs, ns, src, *metas);
    free(src);
    if (st != HG_OK) {
        free(*at);
        free(*metas);
        *at = NULL;
        *metas = NULL;
    }
    return st;
}

/* A head that is one of the block's inputs, for a node-by-node call: a copy (the outputs are
 * the caller's own arrays), recorded as _copy when the input is recorded, so the gradient flows
 * through it as through the planned block's. */
static hg_status copy_head(hg_tensor *v, const hg_tape *tape, bool train, hg_tensor **out)
{
    if (tape && tape->should_record(1, &v)) {
        const hg_op_def *copy = hg_registry_find("_copy");
        if (!copy) return hg_error(HG_ERR_INTERNAL, "the _copy op is not registered");
        hg_attrs a;
        hg_attrs_set_defaults(copy, &a);
        HG_TRY(hg_op_run(copy, &a, train, 1, &v, 1, out));
        hg_status st = tape->record(copy, &a, 1, &v, 1, out, NULL, NULL, NULL);
        if (st != HG_OK) {
            hg_tensor_free(*out);
            *out = NULL;
        }
        return st;
    }
    hg_meta m = hg_meta_of(v);
    HG_TRY(hg_tensor_new_on(&m, v->storage->device_type, v->storage->device_id, false, out));
    hg_status st = hg_tensor_copy_any(v, *out);
    if (st != HG_OK) {
        hg_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* A call whose inputs are on a GPU: plans run on the CPU only, so the graph runs node by node,
 * each op through hg_op_run and its GPU kernel, and each recorded on the tape as an imperative
 * op would be (the backward then runs on the GPU the same way). Same results as the plan,
 * without its fusion and memory planning. */
static hg_status call_eager(hg_cachedop *c, hg_tensor *const *inputs, hg_tensor **outputs,
                            const hg_tape *tape, bool train)
{
    hg_snode **nodes = NULL;
    int n = 0, *off = NULL, *in_idx = NULL, *head_idx = NULL;
    HG_TRY(hg_symbol_topo(c->sym, &nodes, &n));
    hg_status st = hg_symbol_topo_positions(c->sym, nodes, n, &off, &in_idx, &head_idx);
    int dev = -1, *src_at = NULL;
    hg_meta *src_meta = NULL;
    for (int k = 0; k < c->ninputs && dev < 0; k++)
        if (inputs[k] && hg_on_gpu(inputs[k])) dev = inputs[k]->storage->device_id;
    if (st == HG_OK && dev >= 0) st = source_metas(c, inputs, nodes, n, &src_at, &src_meta);
    hg_tensor ***val = st == HG_OK ? calloc((size_t)n + 1, sizeof(hg_tensor **)) : NULL;
    if (st == HG_OK && !val) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n && st == HG_OK; i++) {
        hg_snode *nd = nodes[i];
        if (!(val[i] = calloc((size_t)nd->nout + 1, sizeof(hg_tensor *)))) {
            st = hg_error(HG_ERR_MEMORY, "out of memory");
            break;
        }
        if (!nd->op) { /* a variable: the caller's array */
            for (int k = 0; k < c->ninputs && !val[i][0]; k++)
                if (c->inputs[k].node == nd) val[i][0] = inputs[k];
            if (!val[i][0]) st = hg_error(HG_ERR_VALUE, "input '%s' was not given", nd->name);
            else hg_tensor_retain(val[i][0]);
            continue;
        }
        hg_tensor *ins[HG_MAX_IO];
        if ((st = hg_snode_input_values(nd, i, val, off, in_idx, ins)) != HG_OK) break;
        if (src_at && src_at[i] >= 0) st = run_source(nd, src_meta + src_at[i], dev, train, val[i]);
        else st = hg_op_run(nd->op, nd->attrs, train, nd->nin, ins, nd->nout, val[i]);
        if (st != HG_OK) {
            hg_error_prefix(st, "node '%s' (%s): ", nd->name, nd->op->name);
            break;
        }
        if (tape && tape->should_record(nd->nin, ins))
            st = tape->record(nd->op, nd->attrs, nd->nin, ins, nd->nout, val[i], NULL, NULL, NULL);
    }
    /* Outputs are the caller's own arrays: a head that is an input is copied. */
    for (int h = 0; h < c->nheads && st == HG_OK; h++) {
        hg_tensor *v = val[head_idx[h]][c->sym->heads[h].index];
        if (!nodes[head_idx[h]]->op) {
            st = copy_head(v, tape, train, &outputs[h]);
        } else {
            hg_tensor_retain(v);
            outputs[h] = v;
        }
    }
    if (st != HG_OK)
        for (int h = 0; h < c->nheads; h++) {
            hg_tensor_free(outputs[h]);
            outputs[h] = NULL;
        }
    for (int i = 0; val && i < n; i++)
        for (int k = 0; val[i] && k < nodes[i]->nout; k++) hg_tensor_free(val[i][k]);
    for (int i = 0; val && i < n; i++) free(val[i]);
    free(val);
    free(off);
    free(in_idx);
    free(head_idx);
    free(nodes);
    free(src_at);
    free(src_meta);
    return st;
}

/* ---- CUDA graphs for static blocks on a GPU ---------------------------------------------------
 * A static_alloc + static_shape block called on GPU arrays without recording replays one CUDA
 * graph per call instead of launching its ops one by one. The first call with a signature (the
 * inputs' shapes, dtypes and device) runs op by op: it warms cuDNN's algorithm choices and
 * cuBLAS up. The second records the same op-by-op run (hg_gpu_capture_begin) and replays it;
 * later calls with that signature replay it.
 * - An input whose data moved between the warm-up and the recording (a new batch each call) is
 *   copied into an array the graph keeps (its slot) before each replay. The others (parameters)
 *   are read where they are; a later call that passes such an input at another address records
 *   the graph again, reading it there (a reloaded parameter), and the second time it moves it
 *   gets a slot too. So a replay only ever reads memory the caller passed in this call or the
 *   graph keeps.
 * - Outputs: the graph writes its own arrays; each call copies them into new ones.
 * - What cannot be replayed (host copies or waits, random draws, an op without a GPU kernel)
 *   makes the recording fail; the block then runs op by op for good (stats say why).
 * - A new signature records again; after MAX_CAPTURES recordings the block stays op by op. */

static bool graphs_enabled(const hg_cachedop *c)
{
    static atomic_int off = -1;
    return (c->flags & HG_PLAN_STATIC_ALLOC) && (c->flags & HG_PLAN_STATIC_SHAPE) &&
           !hg_env_on_once(&off, "HG_NO_CUDA_GRAPHS");
}

static bool same_meta(const hg_meta *m, const hg_tensor *t)
{
    return m->ndim == t->ndim && m->dtype == t->dtype &&
           memcmp(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) == 0;
}

static void graph_off(hg_cachedop *c, const char *why)
{
    graph_reset(c);
    c->gg.state = GRAPH_OFF;
    snprintf(c->gg.why, sizeof c->gg.why, "%s", why);
}

/* Records the graph for these inputs (c->glock held). A failed recording turns graphs off
 * for the block; the caller then runs the call op by op. */
static hg_status graph_record(hg_cachedop *c, hg_tensor *const *inputs)
{
    gpu_graph *g = &c->gg;
    graph_reset(c);
    if (++g->captures > MAX_CAPTURES) {
        graph_off(c, "recorded too many times (inputs change shape or move between calls)");
        return HG_ERR_UNSUPPORTED;
    }
    hg_tensor **ins = calloc((size_t)c->ninputs + 1, sizeof *ins);
    if (!ins) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = HG_OK;
    for (int k = 0; k < c->ninputs && st == HG_OK; k++) {
        if (g->ptr[k] != hg_data(inputs[k])) g->moved[k] = 2; /* since the warm-up */
        if (g->moved[k] >= 2) { /* a new batch each call: the graph reads its own copy */
            hg_meta m = hg_meta_of(inputs[k]);
            st = hg_tensor_new_on(&m, HG_DEVICE_GPU, g->dev, false, &g->slot[k]);
            if (st == HG_OK) st = hg_tensor_copy_any(inputs[k], g->slot[k]);
        }
        ins[k] = g->slot[k] ? g->slot[k] : inputs[k];
        g->ptr[k] = hg_data(inputs[k]);
    }
    if (st != HG_OK) {
        free(ins);
        graph_reset(c);
        return st;
    }
    if ((st = hg_gpu_capture_begin(g->dev)) != HG_OK) {
        free(ins);
        graph_reset(c);
        graph_off(c, hg_last_error());
        return st;
    }
    hg_status run = call_eager(c, ins, g->outs, NULL, false);
    st = hg_gpu_capture_end(g->dev, run == HG_OK, &g->graph);
    free(ins);
    if (run != HG_OK || st != HG_OK) {
        char why[200];
        snprintf(why, sizeof why, "%s", hg_last_error());
        for (int h = 0; h < c->nheads; h++) { /* call_eager freed them on failure */
            hg_tensor_free(g->outs[h]);
            g->outs[h] = NULL;
        }
        graph_off(c, why);
        return run != HG_OK ? run : st;
    }
    g->state = GRAPH_READY;
    return HG_OK;
}

/* One call through the graph (c->glock held): the moved inputs into their slots, the replay,
 * the outputs copied out, all queued in this order on the device's stream. */
static hg_status graph_replay(hg_cachedop *c, hg_tensor *const *inputs, hg_tensor **outputs)
{
    gpu_graph *g = &c->gg;
    hg_status st = HG_OK;
    for (int k = 0; k < c->ninputs && st == HG_OK; k++)
        if (g->slot[k]) st = hg_tensor_copy_any(inputs[k], g->slot[k]);
    if (st == HG_OK) st = hg_gpu_graph_launch(g->graph);
    for (int h = 0; h < c->nheads && st == HG_OK; h++) {
        hg_meta m = hg_meta_of(g->outs[h]);
        st = hg_tensor_new_on(&m, HG_DEVICE_GPU, g->dev, false, &outputs[h]);
        if (st == HG_OK) st = hg_tensor_copy_any(g->outs[h], outputs[h]);
    }
    if (st != HG_OK)
        for (int h = 0; h < c->nheads; h++) {
            hg_tensor_free(outputs[h]);
            outputs[h] = NULL;
        }
    else g->replays++;
    return st;
}

/* Allocates the per-input tables of c->gg on first use (c->glock held). */
static hg_status graph_tables(hg_cachedop *c)
{
    gpu_graph *g = &c->gg;
    if (g->meta) return HG_OK;
    size_t n = (size_t)c->ninputs + 1;
    g->meta = calloc(n, sizeof *g->meta);
    g->ptr = calloc(n, sizeof *g->ptr);
    g->slot = calloc(n, sizeof *g->slot);
    g->moved = calloc(n, 1);
    g->outs = calloc((size_t)c->nheads + 1, sizeof *g->outs);
    if (g->meta && g->ptr && g->slot && g->moved && g->outs) return HG_OK;
    free(g->meta);
    free(g->ptr);
    free(g->slot);
    free(g->moved);
    free(g->outs);
    g->meta = NULL, g->ptr = NULL, g->slot = NULL, g->moved = NULL, g->outs = NULL;
    return hg_error(HG_ERR_MEMORY, "out of memory");
}

/* A GPU inference call of a static block: replays, records or warms up (see above). Inputs
 * that are not all on one GPU run op by op (which reports mixed devices). */
static hg_status call_graph(hg_cachedop *c, hg_tensor *const *inputs, hg_tensor **outputs)
{
    int dev = -1;
    for (int k = 0; k < c->ninputs; k++) {
        if (!inputs[k] || !hg_on_gpu(inputs[k]) ||
            (dev >= 0 && inputs[k]->storage->device_id != dev))
            return call_eager(c, inputs, outputs, NULL, false);
        dev = inputs[k]->storage->device_id;
    }
    pthread_mutex_lock(&c->glock);
    gpu_graph *g = &c->gg;
    hg_status st = graph_tables(c);
    if (st != HG_OK || g->state == GRAPH_OFF) goto eager;
    bool same = g->state != GRAPH_NONE && g->dev == dev;
    for (int k = 0; same && k < c->ninputs; k++) same = same_meta(&g->meta[k], inputs[k]);
    if (!same) { /* a new signature: this call warms it up */
        graph_reset(c);
        g->state = GRAPH_WARM;
        g->dev = dev;
        for (int k = 0; k < c->ninputs; k++) {
            g->meta[k] = hg_meta_of(inputs[k]);
            g->ptr[k] = hg_data(inputs[k]);
        }
        goto eager;
    }
    if (g->state == GRAPH_READY)
        for (int k = 0; k < c->ninputs; k++)
            if (!g->slot[k] && g->ptr[k] != hg_data(inputs[k])) {
                /* A fixed input moved (a reloaded parameter): record again, reading it at its
                 * new address; the second time it moves it gets a slot. */
                g->state = GRAPH_WARM;
                if (g->moved[k] < 2) g->moved[k]++;
                g->ptr[k] = hg_data(inputs[k]);
            }
    if (g->state == GRAPH_WARM && graph_record(c, inputs) != HG_OK) {
        hg_error_clear();
        goto eager;
    }
    st = graph_replay(c, inputs, outputs);
    pthread_mutex_unlock(&c->glock);
    return st;
eager:
    pthread_mutex_unlock(&c->glock);
    return st != HG_OK ? st : call_eager(c, inputs, outputs, NULL, false);
}

void hg_cachedop_graph_stats_get(hg_cachedop *c, hg_cachedop_graph_stats *out)
{
    pthread_mutex_lock(&c->glock);
    out->state = c->gg.state;
    out->captures = c->gg.captures;
    out->replays = c->gg.replays;
    out->pool_bytes = hg_gpu_graph_bytes(c->gg.graph);
    snprintf(out->why, sizeof out->why, "%s", c->gg.why);
    pthread_mutex_unlock(&c->glock);
}

hg_status hg_cachedop_call(hg_cachedop *c, hg_tensor *const *inputs, hg_tensor **outputs)
{
    if (!c || (c->ninputs && !inputs) || !outputs)
        return hg_error(HG_ERR_VALUE, "hg_cachedop_call: NULL argument");
    const hg_tape *tape = g_tape;
    bool train = tape && tape->is_training();
    for (int k = 0; k < c->ninputs; k++)
        if (inputs[k] && hg_on_gpu(inputs[k])) {
            bool rec = tape && tape->should_record(c->ninputs, inputs);
            if (!rec && !train && graphs_enabled(c)) return call_graph(c, inputs, outputs);
            return call_eager(c, inputs, outputs, tape, train);
        }
    if (!tape || !tape->should_record(c->ninputs, inputs))
        return hg_plan_run(c->plan, inputs, train, outputs);
    char stack[64], *mask = stack;
    if (c->ninputs > 64 && !(mask = malloc((size_t)c->ninputs)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; k < c->ninputs; k++)
        mask[k] = c->inputs[k].node && tape->should_record_one(inputs[k]);
    variant *v = NULL;
    hg_status st = get_variant(c, mask, &v);
    if (mask != stack) free(mask);
    if (st != HG_OK) return st;
    int nout = c->nheads + v->nsaved;
    hg_tensor **all = calloc((size_t)nout + 1, sizeof *all);
    if (!all) return hg_error(HG_ERR_MEMORY, "out of memory");
    st = hg_plan_run(v->fwd_plan, inputs, train, all);
    if (st == HG_OK) {
        hg_attrs none = {0};
        st = tape->record(&v->fwd_def, &none, c->ninputs, inputs, nout, all, c, owner_retain,
                          owner_release);
    }
    for (int i = 0; i < nout; i++) {
        if (st == HG_OK && i < c->nheads) outputs[i] = all[i];
        else hg_tensor_free(all[i]);
    }
    free(all);
    return st;
}

bool hg_cachedop_train_stats(hg_cachedop *c, hg_plan_stats *fwd, hg_plan_stats *bwd, int *nsaved)
{
    pthread_mutex_lock(&c->lock);
    variant *v = c->last;
    pthread_mutex_unlock(&c->lock);
    if (!v) return false;
    hg_plan_get_stats(v->fwd_plan, fwd);
    hg_plan_get_stats(v->bwd_plan, bwd);
    *nsaved = v->nsaved;
    return true;
}
