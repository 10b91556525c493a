/* The tape (see autograd.h): per-tensor records, recording op applications as graph nodes, and
 * backward through the gradient graph, run by a plan (or op by op while recording, for
 * higher-order gradients). What the tape keeps per node (values for backward, a variable's
 * gradient buffer) is its own record, hung on the node's extension slot (graph/symbol.h). */
#include "autograd/autograd.h"
#include "core/device.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cachedop.h"
#include "exec/plan.h"
#include "graph/grad.h"

typedef struct ag_info {
    hg_snode *node; /* a reference */
    int index;
    bool constant;  /* an input recorded as a constant: no gradient, not a reason to record */
} ag_info;

/* The tape's record of a graph node (tape nodes only). */
typedef struct ag_node {
    hg_tensor **saved;  /* the outputs' values kept for backward (nout references), or NULL */
    int nsaved;
    hg_tensor *grad;    /* a variable's gradient buffer (a reference) and request */
    int grad_req;
    void *owner;        /* kept alive with the node (a hybridized block's op definition) */
    void (*owner_release)(void *owner);
} ag_node;

static void release_saved(ag_node *r)
{
    if (!r || !r->saved) return;
    for (int i = 0; i < r->nsaved; i++) hg_tensor_free(r->saved[i]);
    free(r->saved);
    r->saved = NULL;
}

static void ag_node_free(void *p)
{
    ag_node *r = p;
    release_saved(r);
    hg_tensor_free(r->grad);
    if (r->owner_release) r->owner_release(r->owner);
    free(r);
}

/* The tape's record of n, or NULL (a node the tape did not make: gradient graph, symbols). */
static ag_node *rec_of(const hg_snode *n) { return n->ext_release == ag_node_free ? n->ext : NULL; }

static hg_tensor **saved_of(const hg_snode *n)
{
    const ag_node *r = rec_of(n);
    return r ? r->saved : NULL;
}

static hg_tensor *grad_of(const hg_snode *n)
{
    const ag_node *r = rec_of(n);
    return r ? r->grad : NULL;
}

/* Gives n a record keeping `nout` values (filled by the caller). */
static hg_status attach_record(hg_snode *n, int nout, ag_node **out)
{
    ag_node *r = calloc(1, sizeof *r);
    if (r && !(r->saved = calloc((size_t)nout, sizeof(hg_tensor *)))) {
        free(r);
        r = NULL;
    }
    if (!r) return hg_error(HG_ERR_MEMORY, "out of memory");
    r->nsaved = nout;
    n->ext = r;
    n->ext_release = ag_node_free;
    *out = r;
    return HG_OK;
}

static _Thread_local bool g_recording, g_training;

bool hg_ag_is_recording(void) { return g_recording; }
bool hg_ag_is_training(void) { return g_training; }

bool hg_ag_set_recording(bool on)
{
    bool old = g_recording;
    g_recording = on;
    return old;
}

bool hg_ag_set_training(bool on)
{
    bool old = g_training;
    g_training = on;
    return old;
}

extern void (*hg_autograd_release_hook)(hg_tensor *t);

static void info_release(hg_tensor *t)
{
    ag_info *i = t->autograd;
    t->autograd = NULL;
    if (!i) return;
    hg_snode_release(i->node);
    free(i);
}

static const hg_tape k_tape = {hg_ag_is_training, hg_ag_should_record, hg_ag_should_record_one,
                               hg_ag_record};

__attribute__((constructor)) static void install_hook(void)
{
    hg_autograd_release_hook = info_release;
    hg_cachedop_set_tape(&k_tape);
}

/* Points t at (node, index); takes a new reference to node. */
static hg_status set_info(hg_tensor *t, hg_snode *node, int index, bool constant)
{
    ag_info *i = t->autograd;
    if (!i && !(i = malloc(sizeof *i))) return hg_error(HG_ERR_MEMORY, "out of memory");
    else if (t->autograd) hg_snode_release(i->node);
    hg_snode_retain(node);
    *i = (ag_info){node, index, constant};
    t->autograd = i;
    return HG_OK;
}

/* A header sharing t's data, without autograd record: what nodes keep. */
static hg_status view_of(hg_tensor *t, hg_tensor **out)
{
    return hg_tensor_view(t, t->ndim, t->shape, out);
}

static hg_status new_var(hg_tensor *t, const char *name, hg_snode **out)
{
    hg_snode *n = NULL;
    ag_node *r = NULL;
    hg_status st = hg_snode_new_var(name, &n);
    if (st == HG_OK) st = attach_record(n, 1, &r);
    if (st == HG_OK) st = view_of(t, &r->saved[0]);
    if (st != HG_OK) {
        hg_snode_release(n);
        return st;
    }
    *out = n;
    return HG_OK;
}

hg_status hg_ag_mark_variable(hg_tensor *t, hg_tensor *grad, int grad_req)
{
    if (!t) return hg_error(HG_ERR_VALUE, "mark_variables: NULL array");
    if (grad_req < HG_GRAD_NULL || grad_req > HG_GRAD_ADD)
        return hg_error(HG_ERR_VALUE, "grad_req must be 'write', 'add' or 'null'");
    /* The buffer may have another dtype (MXNet binds float64 gradient arrays to float16
     * arguments): the gradient is computed in the variable's dtype and cast into it. */
    if (grad_req != HG_GRAD_NULL &&
        (!grad || !hg_shape_equal(grad->ndim, grad->shape, t->ndim, t->shape))) {
        char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE,
                        "mark_variables: the gradient buffer (%s) must have the "
                        "variable's shape %s",
                        grad ? hg_shape_str(a, grad->ndim, grad->shape) : "none",
                        hg_shape_str(b, t->ndim, t->shape));
    }
    hg_snode *n = NULL;
    HG_TRY(new_var(t, "var", &n));
    if (grad) hg_tensor_retain(grad);
    rec_of(n)->grad = grad;
    rec_of(n)->grad_req = grad_req;
    hg_status st = set_info(t, n, 0, false);
    hg_snode_release(n);
    return st;
}

hg_tensor *hg_ag_grad_buffer(const hg_tensor *t)
{
    const ag_info *i = t ? t->autograd : NULL;
    return (i && !i->node->op && !i->constant) ? grad_of(i->node) : NULL;
}

/* Whether i is the output of an op whose graph a backward pass without retain_graph freed. As
 * MXNet clears such arrays' history, a later recorded op takes them as constants. */
static bool is_freed(const ag_info *i) { return i->node->op && !saved_of(i->node); }

/* Whether t joins the graph: a variable or an op output still recorded. */
static bool in_graph(const hg_tensor *t)
{
    const ag_info *i = t->autograd;
    return i && !i->constant && !is_freed(i);
}

bool hg_ag_should_record_one(const hg_tensor *t) { return in_graph(t); }

bool hg_ag_should_record(int nin, hg_tensor *const *in)
{
    if (!g_recording) return false;
    for (int k = 0; k < nin; k++)
        if (in_graph(in[k])) return true;
    return false;
}

static void *function_owner_of(const hg_op_def *op);
static void function_retain(void *p);
static void function_release(void *p);

hg_status hg_ag_record(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in,
                       int nout, hg_tensor *const *out, void *owner, void (*retain)(void *),
                       void (*release)(void *))
{
    if (!owner && (owner = function_owner_of(op))) {
        /* A Function's backward recorded by create_graph: its definition lives in the call's
         * record, which the new node must keep alive too. */
        retain = function_retain;
        release = function_release;
    }
    /* As MXNet: an output already in a graph (a variable, a recorded result, or an input of this
     * very op, as with out=x) would make the recorded history wrong. */
    for (int i = 0; i < nout; i++) {
        bool is_input = false;
        for (int k = 0; k < nin && !is_input; k++) is_input = in[k] == out[i];
        if (is_input || (out[i]->autograd && in_graph(out[i])))
            return hg_error(HG_ERR_VALUE,
                            "%s: Inplace operations (+=, -=, x[:]=, etc) are not "
                            "supported when recording with autograd.",
                            op->name);
    }
    hg_sentry stack[8] = {{0}}, *e = stack;
    if (nin > 8 && !(e = malloc(sizeof *e * (size_t)nin)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = HG_OK;
    for (int k = 0; k < nin && st == HG_OK; k++) {
        if (!in[k]->autograd || is_freed(in[k]->autograd)) {
            /* a constant: its value is kept by a variable node */
            hg_snode *c = NULL;
            st = new_var(in[k], "const", &c);
            if (st == HG_OK) st = set_info(in[k], c, 0, true);
            hg_snode_release(c);
        }
        if (st == HG_OK) {
            const ag_info *i = in[k]->autograd;
            e[k] = (hg_sentry){i->node, i->index, 0};
        }
    }
    hg_snode *n = NULL;
    if (st == HG_OK) st = hg_snode_new_parsed(op, op->name, a, nin, e, &n);
    if (e != stack) free(e);
    if (st == HG_OK && n->nout != nout)
        st = hg_error(HG_ERR_INTERNAL, "%s: recorded %d outputs, the op has %d", op->name, nout,
                      n->nout);
    ag_node *r = NULL;
    if (st == HG_OK) st = attach_record(n, nout, &r);
    for (int i = 0; i < nout && st == HG_OK; i++) st = view_of(out[i], &r->saved[i]);
    if (st == HG_OK && owner) {
        retain(owner);
        r->owner = owner;
        r->owner_release = release;
    }
    for (int i = 0; i < nout && st == HG_OK; i++) st = set_info(out[i], n, i, false);
    hg_snode_release(n);
    return st;
}

/* ---- custom functions (MXNet's autograd.Function) ----------------------------------------- */

/* One recorded call: its two dynamic op definitions (the forward node's, whose gradient rule
 * emits one backward node, and that node's, whose kernel is the callback) and the metadata
 * of the call's inputs and outputs. Kept alive by the forward node (a reference count). */
typedef struct ag_function {
    hg_op_def fwd_def, bwd_def;
    atomic_long refs;
    hg_ag_function_fn fn;
    void *ctx;
    void (*release)(void *ctx);
    int nin, nout;
    hg_meta *meta; /* nin input metas, then nout output metas */
} ag_function;

#define FUNCTION_OF(op, field) ((ag_function *)((char *)(op) - offsetof(ag_function, field)))

static void function_retain(void *p) { atomic_fetch_add(&((ag_function *)p)->refs, 1); }

static void function_release(void *p)
{
    ag_function *f = p;
    if (atomic_fetch_sub(&f->refs, 1) != 1) return;
    if (f->release) f->release(f->ctx);
    free(f->meta);
    free(f);
}

static hg_status function_fwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                    int nout, hg_meta *out)
{
    const ag_function *f = FUNCTION_OF(op, fwd_def);
    memcpy(out, f->meta + f->nin, sizeof *out * (size_t)f->nout);
    return HG_OK;
}

static hg_status function_fwd_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return hg_error(HG_ERR_UNSUPPORTED,
                    "%s: a custom Function's forward runs in Python, "
                    "not as part of a graph",
                    op->name);
}

static hg_status function_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                    int nout, hg_meta *out)
{
    const ag_function *f = FUNCTION_OF(op, bwd_def);
    memcpy(out, f->meta, sizeof *out * (size_t)f->nin);
    return HG_OK;
}

static hg_status function_bwd_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const ag_function *f = FUNCTION_OF(op, bwd_def);
    return f->fn(f->ctx, nin, in, nout, out);
}

static void *function_owner_of(const hg_op_def *op)
{
    return op->forward == function_bwd_run ? FUNCTION_OF(op, bwd_def) : NULL;
}

/* The rule: one backward node reading every output's gradient, giving every input's. */
static hg_status function_grad(hg_grad_ctx *g)
{
    ag_function *f = FUNCTION_OF(hg_g_node(g)->op, fwd_def);
    hg_sentry *in = malloc(sizeof *in * (size_t)(f->nout + f->nin));
    if (!in) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_sentry *out = in + f->nout;
    for (int h = 0; h < f->nout; h++) in[h] = hg_g_ograd(g, h);
    hg_g_op_def(g, &f->bwd_def, f->nout, in, NULL, f->nin, out);
    for (int k = 0; k < f->nin; k++) hg_g_set(g, k, out[k]);
    free(in);
    return hg_g_status(g);
}

hg_status hg_ag_record_function(int nin, hg_tensor *const *in, int nout, hg_tensor *const *out,
                                hg_ag_function_fn backward, void *ctx, void (*release)(void *ctx))
{
    if (nin < 1 || nout < 1 || !in || !out || !backward)
        return hg_error(HG_ERR_VALUE, "record_function: a Function needs inputs and outputs");
    if (!hg_ag_should_record(nin, in)) {
        if (release) release(ctx);
        return HG_OK;
    }
    ag_function *f = calloc(1, sizeof *f);
    hg_meta *meta = malloc(sizeof *meta * (size_t)(nin + nout));
    if (!f || !meta) {
        free(f);
        free(meta);
        if (release) release(ctx);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int k = 0; k < nin; k++) meta[k] = hg_meta_of(in[k]);
    for (int k = 0; k < nout; k++) meta[nin + k] = hg_meta_of(out[k]);
    *f = (ag_function){
        .fwd_def = {.name = "_CustomFunction",
                    .doc = "a custom Function (forward run in Python; one tape node)",
                    .num_inputs = nin,
                    .num_outputs = nout,
                    .infer = function_fwd_infer,
                    .forward = function_fwd_run,
                    .grad = function_grad},
        .bwd_def = {.name = "_backward_CustomFunction",
                    .doc = "the Function's backward",
                    .num_inputs = nout,
                    .num_outputs = nin,
                    .infer = function_bwd_infer,
                    .forward = function_bwd_run},
        .fn = backward,
        .ctx = ctx,
        .release = release,
        .nin = nin,
        .nout = nout,
        .meta = meta,
    };
    atomic_init(&f->refs, 1);
    hg_attrs none = {0};
    hg_status st = hg_ag_record(&f->fwd_def, &none, nin, in, nout, out, f, function_retain,
                                function_release);
    function_release(f); /* the node holds its own reference */
    return st;
}

hg_status hg_ag_detach(hg_tensor *t, hg_tensor **out)
{
    if (!t || !out) return hg_error(HG_ERR_VALUE, "detach: NULL argument");
    return view_of(t, out);
}

hg_status hg_ag_get_symbol(const hg_tensor *t, hg_symbol **out)
{
    const ag_info *i = t ? t->autograd : NULL;
    if (!i || i->constant)
        return hg_error(HG_ERR_VALUE, "get_symbol: the array is not part of a recorded graph");
    hg_sentry e = {i->node, i->index, 0};
    return hg_symbol_from_entries(1, &e, out);
}

/* ---- backward -------------------------------------------------------------------------- */

static _Atomic(const hg_ag_grad_hooks *) g_grad_hooks;

void hg_ag_set_grad_hooks(const hg_ag_grad_hooks *hooks) { atomic_store(&g_grad_hooks, hooks); }

/* A plan output became final: a variable's buffer the plan writes in place (run_planned). */
static void notify_ready(void *ctx, hg_tensor *out) { ((const hg_ag_grad_hooks *)ctx)->ready(out); }

typedef struct bw {
    hg_snode **fwd;      /* forward nodes reachable from the heads */
    int nfwd;
    hg_sentry *heads, *hgrads;
    hg_snode **wrt;
    int nwrt;
    hg_snode **hg_vars;  /* head-gradient variables we made */
    hg_symbol *gsym;
} bw;

static void bw_free(bw *b, int nheads)
{
    for (int h = 0; b->hg_vars && h < nheads; h++) hg_snode_release(b->hg_vars[h]);
    free(b->hg_vars);
    free(b->fwd);
    free(b->heads);
    free(b->hgrads);
    free(b->wrt);
    hg_symbol_free(b->gsym);
}

static hg_status collect(bw *b, int nheads, hg_tensor *const *heads, hg_tensor *const *head_grads,
                         int nvars, hg_tensor *const *vars)
{
    b->heads = calloc((size_t)nheads + 1, sizeof(hg_sentry));
    b->hgrads = calloc((size_t)nheads + 1, sizeof(hg_sentry));
    b->hg_vars = calloc((size_t)nheads + 1, sizeof(hg_snode *));
    if (!b->heads || !b->hgrads || !b->hg_vars) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int h = 0; h < nheads; h++) {
        const ag_info *i = heads[h]->autograd;
        if (!i || i->constant)
            return hg_error(HG_ERR_VALUE,
                            "Cannot differentiate node because it is not in a "
                            "computational graph: head %d was not computed under "
                            "autograd.record() from an array with attach_grad()",
                            h);
        b->heads[h] = (hg_sentry){i->node, i->index, 0};
        hg_tensor *g = head_grads ? head_grads[h] : NULL;
        if (!g) continue;
        /* Any dtype: as in MXNet, the head gradient enters the backward graph as it is (a
         * float32 gradient for an int32 Cast output reaches _backward_Cast unrounded). */
        if (!hg_shape_equal(g->ndim, g->shape, heads[h]->ndim, heads[h]->shape)) {
            char a[HG_SHAPE_STR], c[HG_SHAPE_STR];
            return hg_error(HG_ERR_VALUE, "head_grads[%d] has shape %s (%s), the head %s (%s)", h,
                            hg_shape_str(a, g->ndim, g->shape), hg_dtype_name(g->dtype),
                            hg_shape_str(c, heads[h]->ndim, heads[h]->shape),
                            hg_dtype_name(heads[h]->dtype));
        }
        HG_TRY(new_var(g, "head_grad", &b->hg_vars[h]));
        b->hgrads[h] = (hg_sentry){b->hg_vars[h], 0, 0};
    }
    hg_symbol view = {nheads, b->heads};
    HG_TRY(hg_symbol_topo(&view, &b->fwd, &b->nfwd));
    for (int i = 0; i < b->nfwd; i++)
        if (b->fwd[i]->op && !saved_of(b->fwd[i]))
            return hg_error(HG_ERR_VALUE,
                            "the graph was freed by an earlier backward pass: "
                            "call backward(retain_graph=True) to differentiate it again");
    b->wrt = malloc(sizeof(hg_snode *) * (size_t)((nvars ? nvars : b->nfwd) + 1));
    if (!b->wrt) return hg_error(HG_ERR_MEMORY, "out of memory");
    if (nvars) {
        for (int w = 0; w < nvars; w++) {
            const ag_info *i = vars[w]->autograd;
            if (!i || i->constant || i->node->op)
                return hg_error(HG_ERR_VALUE,
                                "variables[%d] is not a marked variable: call "
                                "attach_grad() (or mark_variables) on it before recording",
                                w);
            b->wrt[b->nwrt++] = i->node;
        }
    } else {
        for (int i = 0; i < b->nfwd; i++)
            if (!b->fwd[i]->op && grad_of(b->fwd[i]) && rec_of(b->fwd[i])->grad_req != HG_GRAD_NULL)
                b->wrt[b->nwrt++] = b->fwd[i];
    }
    return HG_OK;
}

/* Whether the gradient of b->wrt[w] can be written by the plan straight into the variable's
 * gradient buffer (grad_req 'write'), sparing a copy of every parameter's gradient per step.
 * Only when the buffer has the variable's dtype and shape (the gradient's), is no other
 * variable's buffer, and shares no storage with a value the plan reads (a buffer used in the
 * forward pass as a constant would otherwise be overwritten while it is read). */
static bool write_in_place(const bw *b, int w, hg_tensor *const *vals, int nfeed,
                           hg_tensor *const *grads)
{
    const hg_snode *var = b->wrt[w];
    const ag_node *r = rec_of(var);
    hg_tensor **saved = saved_of(var);
    if (!r || r->grad_req != HG_GRAD_WRITE || !r->grad || !saved || !saved[0]) return false;
    const hg_tensor *buf = r->grad, *v = saved[0];
    if (buf->dtype != v->dtype || !hg_shape_equal(buf->ndim, buf->shape, v->ndim, v->shape))
        return false;
    for (int k = 0; k < nfeed; k++)
        if (vals[k]->storage == buf->storage) return false;
    for (int u = 0; u < w; u++)
        if (grads[u] && grads[u]->storage == buf->storage) return false;
    return true;
}

/* Runs the gradient graph with a plan: every value a node kept is fed, nothing forward runs.
 * With into_buffers (backward, not autograd.grad), a gradient the plan wrote into its
 * variable's buffer (write_in_place) comes back as NULL in grads, with the buffer marked fresh;
 * the others come back as new arrays. */
static hg_status run_planned(bw *b, bool is_train, bool into_buffers, hg_tensor **grads,
                             const hg_ag_grad_hooks *hooks)
{
    hg_snode **nodes = NULL;
    int n = 0, nfeed = 0;
    HG_TRY(hg_symbol_topo(b->gsym, &nodes, &n));
    int cap = 0;
    for (int i = 0; i < n; i++) cap += saved_of(nodes[i]) ? nodes[i]->nout : 0;
    hg_sentry *feed = malloc(sizeof *feed * (size_t)(cap + 1));
    hg_tensor **vals = malloc(sizeof *vals * (size_t)(cap + 1));
    hg_plan *plan = NULL;
    hg_status st = (feed && vals) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n && st == HG_OK; i++) {
        hg_tensor **saved = saved_of(nodes[i]);
        if (!saved) continue;
        for (int k = 0; k < nodes[i]->nout; k++) {
            if (!saved[k]) continue;
            feed[nfeed] = (hg_sentry){nodes[i], k, 0};
            vals[nfeed++] = saved[k];
        }
    }
    if (st == HG_OK) st = hg_plan_create_entries(b->gsym, nfeed, feed, &plan);
    bool *direct = st == HG_OK ? calloc((size_t)b->nwrt + 1, sizeof *direct) : NULL;
    if (st == HG_OK && !direct) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int w = 0; w < b->nwrt && st == HG_OK; w++)
        if ((direct[w] = into_buffers && write_in_place(b, w, vals, nfeed, grads)))
            grads[w] = grad_of(b->wrt[w]);
    /* The buffers written in place are reported as their steps finish; the plan also
     * reports fresh arrays and nested runs' outputs, which the hook ignores (not buffers). */
    hg_plan_notify was = {0};
    if (hooks) was = hg_plan_set_notify((hg_plan_notify){notify_ready, (void *)hooks});
    if (st == HG_OK) st = hg_plan_run(plan, vals, is_train, grads);
    if (hooks) hg_plan_set_notify(was);
    for (int w = 0; direct && w < b->nwrt; w++) {
        if (!direct[w]) continue;
        if (st == HG_OK) atomic_store(&grads[w]->fresh_grad, 1);
        grads[w] = NULL; /* the variable's own buffer: neither accumulated nor freed */
    }
    free(direct);
    hg_plan_free(plan);
    free(feed);
    free(vals);
    free(nodes);
    return st;
}

/* A new array with v's values, recorded when v is part of the graph. */
static hg_status copy_recorded(hg_tensor *v, hg_tensor **out)
{
    static const hg_op_def *copy;
    if (!copy) copy = hg_registry_find("_copy");
    hg_attrs a;
    hg_attrs_set_defaults(copy, &a);
    HG_TRY(hg_op_run(copy, &a, false, 1, &v, 1, out));
    if (hg_ag_should_record(1, &v)) return hg_ag_record(copy, &a, 1, &v, 1, out, NULL, NULL, NULL);
    return HG_OK;
}

/* Runs the gradient graph op by op. With `record` (create_graph), recording is on so the
 * gradients are themselves part of the graph, and the kept values temporarily carry their
 * nodes' records so that the backward ops link to the forward graph. Without it, this is how a
 * backward on a GPU runs: each op through hg_op_run and its GPU kernel (plans run on the CPU
 * only). */
static hg_status run_recorded(bw *b, bool is_train, bool record, hg_tensor **grads)
{
    hg_snode **nodes = NULL;
    int n = 0, *off = NULL, *in_idx = NULL, *head_idx = NULL;
    HG_TRY(hg_symbol_topo(b->gsym, &nodes, &n));
    hg_status st = hg_symbol_topo_positions(b->gsym, nodes, n, &off, &in_idx, &head_idx);
    hg_tensor ***val = calloc((size_t)n + 1, sizeof(hg_tensor **));
    if (st == HG_OK && !val) st = hg_error(HG_ERR_MEMORY, "out of memory");
    bool was = hg_ag_set_recording(record);
    for (int i = 0; i < n && st == HG_OK; i++) {
        hg_snode *nd = nodes[i];
        if (!(val[i] = calloc((size_t)nd->nout, sizeof(hg_tensor *)))) {
            st = hg_error(HG_ERR_MEMORY, "out of memory");
            break;
        }
        hg_tensor **saved = saved_of(nd);
        if (saved) {
            for (int k = 0; k < nd->nout && st == HG_OK; k++) {
                if (!saved[k]) continue;
                st = view_of(saved[k], &val[i][k]);
                if (!record) continue;
                if (st == HG_OK && nd->op) st = set_info(val[i][k], nd, k, false);
                if (st == HG_OK && !nd->op) {
                    /* a variable: the same record as the variable itself, if it has one */
                    st = set_info(val[i][k], nd, 0, !grad_of(nd));
                }
            }
            continue;
        }
        hg_tensor *ins[HG_MAX_IO];
        if ((st = hg_snode_input_values(nd, i, val, off, in_idx, ins)) != HG_OK) break;
        st = hg_op_run(nd->op, nd->attrs, is_train, nd->nin, ins, nd->nout, val[i]);
        if (st == HG_OK && record && hg_ag_should_record(nd->nin, ins))
            st = hg_ag_record(nd->op, nd->attrs, nd->nin, ins, nd->nout, val[i], NULL, NULL, NULL);
    }
    /* A gradient that is a value kept from before (a head gradient passed on unchanged) is
     * copied: the caller gets a new array, as from MXNet, and may place it on its device. */
    for (int h = 0; h < b->gsym->n && st == HG_OK; h++) {
        hg_tensor *v = val[head_idx[h]][b->gsym->heads[h].index];
        if (saved_of(nodes[head_idx[h]])) {
            st = copy_recorded(v, &grads[h]);
        } else {
            grads[h] = v;
            hg_tensor_retain(v);
        }
    }
    hg_ag_set_recording(was);
    for (int i = 0; val && i < n; i++)
        for (int k = 0; val[i] && k < nodes[i]->nout; k++) hg_tensor_free(val[i][k]);
    for (int i = 0; val && i < n; i++) free(val[i]);
    free(val);
    free(off);
    free(in_idx);
    free(head_idx);
    free(nodes);
    return st;
}

static hg_status accumulate(hg_snode *var, hg_tensor *g)
{
    hg_tensor *buf = grad_of(var);
    if (!hg_shape_equal(buf->ndim, buf->shape, g->ndim, g->shape)) {
        char a[HG_SHAPE_STR], c[HG_SHAPE_STR];
        return hg_error(HG_ERR_INTERNAL, "gradient of shape %s for a variable of shape %s",
                        hg_shape_str(a, g->ndim, g->shape), hg_shape_str(c, buf->ndim, buf->shape));
    }
    if (buf->dtype != g->dtype) { /* a buffer of another dtype: cast, then write or add */
        static const hg_op_def *cast;
        if (!cast) cast = hg_registry_find("_backward_Cast");
        hg_attrs a;
        hg_attrs_set_defaults(cast, &a);
        hg_tensor *in[2] = {g, buf}, *out[1] = {NULL};
        if (rec_of(var)->grad_req == HG_GRAD_WRITE) out[0] = buf;
        HG_TRY(hg_op_run(cast, &a, false, 2, in, 1, out));
        if (out[0] == buf) {
            atomic_store(&buf->fresh_grad, 1);
            return HG_OK;
        }
        hg_status st = accumulate(var, out[0]);
        hg_tensor_free(out[0]);
        return st;
    }
    if (rec_of(var)->grad_req == HG_GRAD_WRITE) {
        HG_TRY(hg_tensor_copy_any(g, buf)); /* either may be on a GPU */
    } else {
        static const hg_op_def *add;
        if (!add) add = hg_registry_find("elemwise_add");
        hg_attrs a;
        hg_attrs_set_defaults(add, &a);
        hg_tensor *in[2] = {buf, g}, *out[1] = {buf};
        HG_TRY(hg_op_run(add, &a, false, 2, in, 1, out));
    }
    atomic_store(&buf->fresh_grad, 1);
    return HG_OK;
}

hg_status hg_ag_backward(int nheads, hg_tensor *const *heads, hg_tensor *const *head_grads,
                         int nvars, hg_tensor *const *vars, bool retain_graph, bool create_graph,
                         bool is_train, hg_tensor **grads_out)
{
    if (nheads < 1 || !heads || nvars < 0 || (nvars && (!vars || !grads_out)))
        return hg_error(HG_ERR_VALUE, "backward: bad arguments");
    for (int h = 0; h < nheads; h++)
        if (!heads[h]) return hg_error(HG_ERR_VALUE, "backward: head %d is NULL", h);
    bw b = {0};
    hg_tensor **grads = NULL;
    hg_status st = collect(&b, nheads, heads, head_grads, nvars, vars);
    if (st == HG_OK && b.nwrt == 0) {
        bw_free(&b, nheads);
        return HG_OK; /* nothing to differentiate for */
    }
    if (st == HG_OK) st = hg_graph_grad(nheads, b.heads, b.hgrads, b.nwrt, b.wrt, &b.gsym);
    if (st == HG_OK && !(grads = calloc((size_t)b.nwrt, sizeof *grads)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    bool on_gpu = false;
    for (int h = 0; h < nheads; h++) on_gpu |= hg_on_gpu(heads[h]);
    const hg_ag_grad_hooks *hooks = nvars == 0 && st == HG_OK ? atomic_load(&g_grad_hooks) : NULL;
    if (hooks) hooks->begin();
    if (st == HG_OK)
        st = create_graph || on_gpu ? run_recorded(&b, is_train, create_graph, grads)
                                    : run_planned(&b, is_train, nvars == 0, grads, hooks);
    for (int w = 0; w < b.nwrt && st == HG_OK; w++) {
        if (nvars) {
            /* Both runners give fresh arrays, so relabelling moves nobody else's: the gradient
             * lives on its variable's device, as in MXNet (cpu(1) gives cpu(1)). */
            hg_storage *s = grads[w]->storage;
            s->device_type = vars[w]->storage->device_type;
            s->device_id = vars[w]->storage->device_id;
            grads_out[w] = grads[w];
            grads[w] = NULL;
        } else if (grads[w]) { /* NULL: already written in place (run_planned) */
            st = accumulate(b.wrt[w], grads[w]);
            if (st == HG_OK && hooks && rec_of(b.wrt[w])->grad_req == HG_GRAD_WRITE)
                hooks->ready(grad_of(b.wrt[w]));
        }
    }
    if (hooks) {
        hg_status end = hooks->end();
        if (st == HG_OK) st = end;
    }
    if (st == HG_OK && !retain_graph)
        for (int i = 0; i < b.nfwd; i++)
            if (b.fwd[i]->op) release_saved(rec_of(b.fwd[i]));
    for (int w = 0; grads && w < b.nwrt; w++) hg_tensor_free(grads[w]);
    free(grads);
    bw_free(&b, nheads);
    return st;
}
