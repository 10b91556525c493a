/* Control-flow nodes in a plan (see control_flow.h): the body plans, shape inference with the
 * per-step shapes, and the loops. The backward ops recompute what they need of the forward
 * (the states of every step, the number of while steps, the branch taken) instead of keeping
 * it from the forward run: the node stays one graph node with MXNet's outputs, and memory is
 * one state per step rather than every activation of every step. Each step of a backward then
 * runs the body's gradient graph, which recomputes that step's activations. */
#include "exec/control_flow.h"

#include <stdlib.h>
#include <string.h>

#include "graph/grad.h"

enum { K_FOREACH, K_WHILE, K_COND };

typedef struct body {
    hg_plan *fwd;  /* inputs: the subgraph's variables (MXNet's list_inputs order) */
    hg_plan *grad; /* backward nodes: inputs the variables then the heads' gradients; outputs
                    * the variables' gradients */
    int nvars, nheads;
} body;

struct hg_cflow {
    const hg_snode *node; /* borrowed: the owning plan keeps it */
    int kind;
    bool backward;
    int nin, nout;        /* the forward node's inputs and outputs */
    body b[3];
    const hg_op_def *add; /* elemwise_add, for gradients summed over steps */
    hg_attrs add_attrs;
};

/* ---- small tensor helpers ----------------------------------------------------------------- */

/* A step's slice of m: axis 0 dropped. MXNet's legacy shapes have no 0-d arrays, so a step
 * of 1-d data is a (1,) array unless NumPy shape semantics are on. */
static hg_meta drop0(const hg_meta *m)
{
    hg_meta r = {.ndim = -1, .dtype = m->dtype};
    if (m->ndim >= 1) {
        r.ndim = m->ndim - 1;
        memcpy(r.shape, m->shape + 1, sizeof(int64_t) * (size_t)r.ndim);
        if (r.ndim == 0 && !hg_np_shape()) {
            r.ndim = 1;
            r.shape[0] = 1;
        }
    }
    return r;
}

static hg_meta add0(int64_t n, const hg_meta *m)
{
    hg_meta r = {.ndim = -1, .dtype = m->dtype};
    if (m->ndim >= 0 && m->ndim < HG_MAX_NDIM) {
        r.ndim = m->ndim + 1;
        r.shape[0] = n;
        memcpy(r.shape + 1, m->shape, sizeof(int64_t) * (size_t)m->ndim);
    }
    return r;
}

static bool known(const hg_meta *m)
{
    if (m->ndim < 0) return false;
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] < 0) return false;
    return true;
}

/* Row r of t (axis 0 dropped), sharing t's storage. */
static hg_status row_of(hg_tensor *t, int64_t r, hg_tensor **out)
{
    hg_meta m = drop0(&(hg_meta){t->ndim, t->dtype, {0}});
    if (t->ndim > 1) memcpy(m.shape, t->shape + 1, sizeof(int64_t) * (size_t)m.ndim);
    size_t row = (size_t)hg_shape_size(m.ndim, m.shape) * hg_dtype_size(t->dtype);
    return hg_tensor_on_storage(t->storage, t->offset + (size_t)r * row, &m, out);
}

static void free_all(hg_tensor **t, int n)
{
    for (int i = 0; t && i < n; i++) {
        hg_tensor_free(t[i]);
        t[i] = NULL;
    }
}

static hg_status copy_into(hg_tensor *dst, const hg_tensor *src)
{
    if (dst == src) return HG_OK;
    if (hg_tensor_nbytes(dst) != hg_tensor_nbytes(src)) /* inference rules this out */
        return hg_error(HG_ERR_INTERNAL, "a loop value changed size between steps");
    memcpy(hg_data(dst), hg_data(src), hg_tensor_nbytes(src));
    return HG_OK;
}

/* A value carried from step to step (a state, a loop variable) must keep its shape and dtype:
 * the step after reads what this one wrote. */
static hg_status same_carried(const char *what, int j, const hg_meta *a, const hg_meta *b)
{
    if (!known(a) || !known(b)) return HG_OK;
    if (a->dtype == b->dtype && hg_shape_equal(a->ndim, a->shape, b->ndim, b->shape)) return HG_OK;
    char x[HG_SHAPE_STR], y[HG_SHAPE_STR];
    return hg_error(HG_ERR_VALUE, "%s %d is %s (%s) before a step and %s (%s) after it", what, j,
                    hg_shape_str(x, a->ndim, a->shape), hg_dtype_name(a->dtype),
                    hg_shape_str(y, b->ndim, b->shape), hg_dtype_name(b->dtype));
}

/* dst += src (same shape and dtype). */
static hg_status add_into(hg_cflow *c, hg_tensor *dst, hg_tensor *src)
{
    hg_tensor *in[2] = {dst, src}, *out[1] = {dst};
    return hg_op_run(c->add, &c->add_attrs, false, 2, in, 1, out);
}

/* Whether the first element of t is nonzero (a predicate: MXNet reads it as a scalar). */
static hg_status truthy(const hg_tensor *t, bool *out)
{
    if (t->size < 1) return hg_error(HG_ERR_VALUE, "the condition is an empty array");
    const void *p = hg_data(t);
    switch (t->dtype) {
    case HG_DTYPE_F32: *out = *(const float *)p != 0; break;
    case HG_DTYPE_F64: *out = *(const double *)p != 0; break;
    case HG_DTYPE_F16: *out = hg_half_to_float(*(const uint16_t *)p) != 0; break;
    case HG_DTYPE_U8: *out = *(const uint8_t *)p != 0; break;
    case HG_DTYPE_I8: *out = *(const int8_t *)p != 0; break;
    case HG_DTYPE_I32: *out = *(const int32_t *)p != 0; break;
    case HG_DTYPE_I64: *out = *(const int64_t *)p != 0; break;
    case HG_DTYPE_BOOL: *out = *(const uint8_t *)p != 0; break;
    default: return hg_error(HG_ERR_TYPE, "the condition has an unknown dtype");
    }
    return HG_OK;
}

/* ---- bodies ------------------------------------------------------------------------------- */

/* The first node of g (nested subgraphs included) that draws random numbers, or NULL. */
static hg_status find_random(const hg_symbol *g, int depth, const hg_snode **found)
{
    hg_snode **nodes = NULL;
    int n = 0;
    HG_TRY(hg_symbol_topo(g, &nodes, &n));
    hg_status st = HG_OK;
    for (int i = 0; i < n && !*found && st == HG_OK; i++) {
        if (nodes[i]->op && (nodes[i]->op->flags & HG_OP_RANDOM)) *found = nodes[i];
        for (int k = 0; k < nodes[i]->nsub && !*found && st == HG_OK && depth < 16; k++)
            st = find_random(nodes[i]->sub[k], depth + 1, found);
    }
    free(nodes);
    return st;
}

static hg_status body_make(const hg_symbol *g, bool grad, body *b)
{
    hg_snode **nodes = NULL, **vars = NULL, **hgv = NULL;
    hg_sentry *in = NULL, *hge = NULL;
    hg_symbol *gsym = NULL;
    int n = 0;
    hg_status st = hg_symbol_topo(g, &nodes, &n);
    b->nheads = g->n;
    if (st == HG_OK) {
        vars = calloc((size_t)n + 1, sizeof *vars);
        in = calloc((size_t)n + (size_t)g->n + 1, sizeof *in);
        hgv = calloc((size_t)g->n + 1, sizeof *hgv);
        hge = calloc((size_t)g->n + 1, sizeof *hge);
        if (!vars || !in || !hgv || !hge) st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; st == HG_OK && i < n; i++)
        if (!nodes[i]->op) {
            in[b->nvars] = (hg_sentry){nodes[i], 0, 0};
            vars[b->nvars++] = nodes[i];
        }
    if (st == HG_OK) st = hg_plan_create_entries(g, b->nvars, in, &b->fwd);
    /* A body runs once a step: its arena stays between runs (the plan is this node's alone,
     * and its lock serialises the runs). */
    if (st == HG_OK) hg_plan_set_flags(b->fwd, hg_plan_env_flags() | HG_PLAN_STATIC_ALLOC);
    for (int h = 0; grad && st == HG_OK && h < g->n; h++) {
        st = hg_snode_new_var("_head_grad", &hgv[h]);
        hge[h] = in[b->nvars + h] = (hg_sentry){hgv[h], 0, 0};
    }
    /* The backward recomputes each step's activations: draws would differ from the forward's,
     * and the gradient would belong to other numbers. Refused rather than wrong. */
    const hg_snode *rnd = NULL;
    if (grad && st == HG_OK) st = find_random(g, 0, &rnd);
    if (grad && st == HG_OK && rnd)
        st = hg_error(HG_ERR_UNSUPPORTED,
                      "the body draws random numbers (node '%s', %s): its gradient recomputes "
                      "the steps and would draw others; differentiating it is not supported "
                      "hybridized (call the block imperatively, or draw outside the loop)",
                      rnd->name, rnd->op->name);
    if (grad && st == HG_OK) st = hg_graph_grad(g->n, g->heads, hge, b->nvars, vars, &gsym);
    if (grad && st == HG_OK) st = hg_plan_create_entries(gsym, b->nvars + g->n, in, &b->grad);
    if (grad && st == HG_OK) hg_plan_set_flags(b->grad, hg_plan_env_flags() | HG_PLAN_STATIC_ALLOC);
    for (int h = 0; hgv && h < g->n; h++) hg_snode_release(hgv[h]);
    hg_symbol_free(gsym);
    free(nodes);
    free(vars);
    free(in);
    free(hgv);
    free(hge);
    return st;
}

static const hg_tuple *tup(const hg_cflow *c, int k) { return &c->node->attrs->v[k].t; }
static int64_t ival(const hg_cflow *c, int k) { return c->node->attrs->v[k].i; }

/* Attribute indices: the schemas of ops/control_flow.c (num_args, num_outputs first). */
enum { F_NOD = 2, F_STATE = 3, F_DATA = 4, F_REMAIN = 5 };
enum { W_NOD = 2, W_MAXIT = 3, W_COND = 4, W_FUNC = 5, W_VARS = 6 };
enum { C_COND = 2, C_THEN = 3, C_ELSE = 4 };

static hg_status locs_check(const hg_cflow *c, int k, const char *what, int count, int limit)
{
    const hg_tuple *t = tup(c, k);
    if (count >= 0 && t->n != count)
        return hg_error(HG_ERR_VALUE, "%s has %d entries, expected %d", what, t->n, count);
    for (int i = 0; i < t->n; i++)
        if (t->v[i] < 0 || t->v[i] >= limit)
            return hg_error(HG_ERR_VALUE, "%s entry %d (%lld) is out of range [0, %d)", what, i,
                            (long long)t->v[i], limit);
    return HG_OK;
}

/* The locations in attributes keys[0..n) name each of [0, limit) at most once. */
static hg_status distinct(const hg_cflow *c, const int *keys, int n, int limit, const char *what)
{
    char *seen = calloc((size_t)limit + 1, 1);
    if (!seen) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = HG_OK;
    for (int k = 0; k < n && st == HG_OK; k++) {
        const hg_tuple *t = tup(c, keys[k]);
        for (int i = 0; i < t->n && st == HG_OK; i++) {
            if (seen[t->v[i]])
                st = hg_error(HG_ERR_VALUE, "%s name input %lld twice", what, (long long)t->v[i]);
            seen[t->v[i]] = 1;
        }
    }
    free(seen);
    return st;
}

static hg_status check_layout(hg_cflow *c)
{
    int nout = c->nout;
    if (c->kind == K_FOREACH) {
        int nod = (int)ival(c, F_NOD), nv = c->b[0].nvars;
        if (nod < 0 || nod > nout) return hg_error(HG_ERR_VALUE, "num_out_data is out of range");
        if (c->b[0].nheads != nout)
            return hg_error(HG_ERR_VALUE, "the body has %d outputs, num_outputs is %d",
                            c->b[0].nheads, nout);
        int nd = tup(c, F_DATA)->n, ns = tup(c, F_STATE)->n;
        HG_TRY(locs_check(c, F_STATE, "in_state_locs", nout - nod, nv));
        HG_TRY(locs_check(c, F_DATA, "in_data_locs", -1, nv));
        HG_TRY(locs_check(c, F_REMAIN, "remain_locs", c->nin - nd - ns, nv));
        if (nd < 1) return hg_error(HG_ERR_VALUE, "foreach needs at least one data input");
        if (nd + ns + tup(c, F_REMAIN)->n != nv)
            return hg_error(HG_ERR_VALUE, "the body has %d inputs, the locations name %d", nv,
                            nd + ns + tup(c, F_REMAIN)->n);
        /* Each body input is fed by exactly one node input (a run frees the data slices it
         * made by location, so a shared location would free a state). */
        int keys[3] = {F_DATA, F_STATE, F_REMAIN};
        HG_TRY(distinct(c, keys, 3, nv, "in_data_locs, in_state_locs and remain_locs"));
    } else if (c->kind == K_WHILE) {
        int nod = (int)ival(c, W_NOD);
        if (nod < 0 || nod > nout) return hg_error(HG_ERR_VALUE, "num_out_data is out of range");
        if (ival(c, W_MAXIT) < 0) return hg_error(HG_ERR_VALUE, "max_iterations is negative");
        if (c->b[0].nheads != 1) return hg_error(HG_ERR_VALUE, "cond must have one output");
        if (c->b[1].nheads != nout)
            return hg_error(HG_ERR_VALUE, "func has %d outputs, num_outputs is %d", c->b[1].nheads,
                            nout);
        HG_TRY(locs_check(c, W_COND, "cond_input_locs", c->b[0].nvars, c->nin));
        HG_TRY(locs_check(c, W_FUNC, "func_input_locs", c->b[1].nvars, c->nin));
        HG_TRY(locs_check(c, W_VARS, "func_var_locs", nout - nod, c->b[1].nvars));
        int keys[1] = {W_VARS};
        HG_TRY(distinct(c, keys, 1, c->b[1].nvars, "func_var_locs"));
    } else {
        if (c->b[0].nheads != 1) return hg_error(HG_ERR_VALUE, "pred must have one output");
        for (int k = 1; k < 3; k++)
            if (c->b[k].nheads != nout)
                return hg_error(HG_ERR_VALUE, "%s has %d outputs, num_outputs is %d",
                                k == 1 ? "then" : "else", c->b[k].nheads, nout);
        HG_TRY(locs_check(c, C_COND, "cond_input_locs", c->b[0].nvars, c->nin));
        HG_TRY(locs_check(c, C_THEN, "then_input_locs", c->b[1].nvars, c->nin));
        HG_TRY(locs_check(c, C_ELSE, "else_input_locs", c->b[2].nvars, c->nin));
    }
    return HG_OK;
}

hg_status hg_cflow_new(const hg_snode *n, hg_cflow **out)
{
    static const char *const names[] = {"foreach", "while_loop", "cond"};
    static const int nsub[] = {1, 2, 3};
    hg_cflow *c = calloc(1, sizeof *c);
    if (!c) return hg_error(HG_ERR_MEMORY, "out of memory");
    c->node = n;
    c->kind = -1;
    const char *name = n->op->name;
    c->backward = strncmp(name, "_backward_", 10) == 0;
    const char *base = c->backward ? name + 10 : name + 1;
    for (int k = 0; k < 3; k++)
        if (strcmp(base, names[k]) == 0) c->kind = k;
    hg_status st = HG_OK;
    if (c->kind < 0) st = hg_error(HG_ERR_VALUE, "operator %s takes no subgraphs", name);
    else if (n->nsub != nsub[c->kind])
        st = hg_error(HG_ERR_VALUE, "needs %d subgraph(s), has %d", nsub[c->kind], n->nsub);
    if (st == HG_OK) {
        c->nout = (int)n->attrs->v[1].i;
        c->nin = c->backward ? n->nout : n->nin;
        c->add = hg_registry_find("elemwise_add");
        if (!c->add) st = hg_error(HG_ERR_INTERNAL, "elemwise_add is not registered");
        else hg_attrs_set_defaults(c->add, &c->add_attrs);
    }
    /* A while loop's condition and a cond's predicate are not differentiated. */
    for (int k = 0; st == HG_OK && k < n->nsub; k++) {
        bool grad = c->backward && !(c->kind != K_FOREACH && k == 0);
        st = body_make(n->sub[k], grad, &c->b[k]);
    }
    if (st == HG_OK) st = check_layout(c);
    if (st != HG_OK) {
        hg_error_prefix(st, "node '%s' (%s): ", n->name, name);
        hg_cflow_free(c);
        return st;
    }
    *out = c;
    return HG_OK;
}

void hg_cflow_free(hg_cflow *c)
{
    if (!c) return;
    for (int k = 0; k < 3; k++) {
        hg_plan_free(c->b[k].fwd);
        hg_plan_free(c->b[k].grad);
    }
    free(c);
}

/* ---- inference ---------------------------------------------------------------------------- */

/* Infers body k from the metas of its inputs (bin, updated) into bout. */
static hg_status body_infer(hg_cflow *c, int k, hg_meta *bin, hg_meta *bout)
{
    static const char *const what[3][3] = {
        {"the body", "", ""}, {"cond", "func", ""}, {"pred", "then", "else"}};
    hg_status st = hg_plan_infer(c->b[k].fwd, bin, bout, true);
    for (int h = 0; st == HG_OK && h < c->b[k].nheads; h++)
        if (bout[h].ndim < 0) st = hg_error(HG_ERR_VALUE, "cannot infer the shape of output %d", h);
    if (st != HG_OK) hg_error_prefix(st, "%s: ", what[c->kind][k]);
    return st;
}

/* Gathers the node inputs a subgraph reads (locations `locs`) into bin. */
static void gather(const hg_tuple *locs, const hg_meta *in, hg_meta *bin)
{
    for (int i = 0; i < locs->n; i++) bin[i] = in[locs->v[i]];
}

static void scatter_unknown(const hg_tuple *locs, const hg_meta *bin, hg_meta *in)
{
    for (int i = 0; i < locs->n; i++)
        if (!known(&in[locs->v[i]])) in[locs->v[i]] = bin[i];
}

static hg_status foreach_infer(hg_cflow *c, hg_meta *in, hg_meta *out, hg_meta *bin, hg_meta *bout)
{
    const hg_tuple *dl = tup(c, F_DATA), *sl = tup(c, F_STATE), *rl = tup(c, F_REMAIN);
    int nd = dl->n, ns = sl->n, nod = (int)ival(c, F_NOD);
    for (int j = 0; j < nd; j++) bin[dl->v[j]] = drop0(&in[j]);
    for (int j = 0; j < ns; j++) bin[sl->v[j]] = in[nd + j];
    for (int j = 0; j < rl->n; j++) bin[rl->v[j]] = in[nd + ns + j];
    HG_TRY(body_infer(c, 0, bin, bout));
    int64_t steps = in[0].ndim >= 1 ? in[0].shape[0] : -1;
    for (int j = 0; j < nod; j++) out[j] = add0(steps, &bout[j]);
    for (int j = 0; j < ns; j++) {
        const hg_meta *a = &bin[sl->v[j]], *b = &bout[nod + j];
        HG_TRY(same_carried("state", j, a, b));
        out[nod + j] = known(a) ? *a : *b;
        if (!known(&in[nd + j])) in[nd + j] = out[nod + j];
    }
    for (int j = 0; j < nd; j++)
        if (!known(&in[j]) && bin[dl->v[j]].ndim >= 0) in[j] = add0(steps, &bin[dl->v[j]]);
    for (int j = 0; j < rl->n; j++)
        if (!known(&in[nd + ns + j])) in[nd + ns + j] = bin[rl->v[j]];
    return HG_OK;
}

static hg_status while_infer(hg_cflow *c, hg_meta *in, hg_meta *out, hg_meta *bin, hg_meta *bout)
{
    const hg_tuple *cl = tup(c, W_COND), *fl = tup(c, W_FUNC), *vl = tup(c, W_VARS);
    int nod = (int)ival(c, W_NOD);
    gather(fl, in, bin);
    HG_TRY(body_infer(c, 1, bin, bout));
    scatter_unknown(fl, bin, in);
    for (int j = 0; j < nod; j++) out[j] = add0(ival(c, W_MAXIT), &bout[j]);
    for (int j = 0; j < vl->n; j++) {
        const hg_meta *a = &in[fl->v[vl->v[j]]];
        HG_TRY(same_carried("loop variable", j, a, &bout[nod + j]));
        out[nod + j] = known(a) ? *a : bout[nod + j];
    }
    gather(cl, in, bin);
    HG_TRY(body_infer(c, 0, bin, bout));
    scatter_unknown(cl, bin, in);
    return HG_OK;
}

static hg_status cond_infer(hg_cflow *c, hg_meta *in, hg_meta *out, hg_meta *bin, hg_meta *bout)
{
    gather(tup(c, C_COND), in, bin);
    HG_TRY(body_infer(c, 0, bin, bout));
    scatter_unknown(tup(c, C_COND), bin, in);
    for (int k = 2; k >= 1; k--) { /* then's metas win, as MXNet's outputs follow then */
        gather(tup(c, C_COND + k), in, bin);
        HG_TRY(body_infer(c, k, bin, bout));
        scatter_unknown(tup(c, C_COND + k), bin, in);
        for (int j = 0; j < c->nout; j++) {
            const hg_meta *e = &out[j], *t = &bout[j];
            if (k == 1 && known(e) && known(t) &&
                (e->dtype != t->dtype || !hg_shape_equal(e->ndim, e->shape, t->ndim, t->shape))) {
                char x[HG_SHAPE_STR], y[HG_SHAPE_STR];
                return hg_error(HG_ERR_VALUE,
                                "output %d is %s (%s) from then and %s (%s) from else", j,
                                hg_shape_str(x, t->ndim, t->shape), hg_dtype_name(t->dtype),
                                hg_shape_str(y, e->ndim, e->shape), hg_dtype_name(e->dtype));
            }
            out[j] = *t;
        }
    }
    return HG_OK;
}

hg_status hg_cflow_infer(hg_cflow *c, int nin, hg_meta *in, int nout, hg_meta *out)
{
    if (c->backward) { /* gradients have their inputs' metas */
        for (int k = 0; k < nout; k++) out[k] = in[c->nout + k];
        return HG_OK;
    }
    int most = 1;
    for (int k = 0; k < 3; k++) {
        most = c->b[k].nvars > most ? c->b[k].nvars : most;
        most = c->b[k].nheads > most ? c->b[k].nheads : most;
    }
    hg_meta *bin = malloc(sizeof(hg_meta) * (size_t)most);
    hg_meta *bout = malloc(sizeof(hg_meta) * (size_t)most);
    hg_status st = (bin && bout) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) {
        if (c->kind == K_FOREACH) st = foreach_infer(c, in, out, bin, bout);
        else if (c->kind == K_WHILE) st = while_infer(c, in, out, bin, bout);
        else st = cond_infer(c, in, out, bin, bout);
    }
    free(bin);
    free(bout);
    return st;
}

/* ---- forward runs --------------------------------------------------------------------------- */

/* Per-run scratch: tensor pointer arrays of the sizes a loop needs. */
typedef struct scratch {
    hg_tensor **bin, **bout, **tmp;
    int nb, no, nt;
} scratch;

static hg_status scratch_new(scratch *s, int nb, int no, int nt)
{
    *s = (scratch){calloc((size_t)nb + 1, sizeof(hg_tensor *)),
                   calloc((size_t)no + 1, sizeof(hg_tensor *)),
                   calloc((size_t)nt + 1, sizeof(hg_tensor *)),
                   nb,
                   no,
                   nt};
    if (!s->bin || !s->bout || !s->tmp) return hg_error(HG_ERR_MEMORY, "out of memory");
    return HG_OK;
}

static void scratch_free(scratch *s)
{
    free(s->bin);
    free(s->bout);
    free_all(s->tmp, s->nt);
    free(s->tmp);
}

/* The forward loop of foreach. keep (backward): when not NULL, keep[t * ns + j] receives a
 * copy of the state j that step t reads (t < steps), owned by the caller; out is then NULL,
 * the step outputs go to scratch and the last step does not run. */
static hg_status foreach_loop(hg_cflow *c, bool is_train, hg_tensor *const *in,
                              hg_tensor *const *out, hg_tensor **keep)
{
    const hg_tuple *dl = tup(c, F_DATA), *sl = tup(c, F_STATE), *rl = tup(c, F_REMAIN);
    int nd = dl->n, ns = sl->n, nod = (int)ival(c, F_NOD);
    int64_t steps = in[0]->ndim >= 1 ? in[0]->shape[0] : 0;
    for (int j = 1; j < nd; j++)
        if (in[j]->ndim < 1 || in[j]->shape[0] != steps)
            return hg_error(HG_ERR_VALUE, "data %d has %lld steps, data 0 has %lld", j,
                            (long long)(in[j]->ndim ? in[j]->shape[0] : 0), (long long)steps);
    body *b = &c->b[0];
    scratch s;
    /* tmp: two sets of states (ping-pong: a step never writes what it reads), then the step
     * outputs when they have no destination (backward) */
    hg_status st = scratch_new(&s, b->nvars, b->nheads, 2 * ns + nod);
    hg_tensor **cur = calloc((size_t)ns + 1, sizeof *cur);
    if (!cur && st == HG_OK) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int j = 0; st == HG_OK && j < ns; j++) cur[j] = in[nd + j];
    for (int j = 0; st == HG_OK && j < rl->n; j++) s.bin[rl->v[j]] = in[nd + ns + j];
    for (int64_t t = 0; st == HG_OK && t < steps; t++) {
        for (int j = 0; keep && j < ns && st == HG_OK; j++) {
            hg_meta m = hg_meta_of(cur[j]);
            st = hg_tensor_new_meta(&m, &keep[t * ns + j]);
            if (st == HG_OK) st = copy_into(keep[t * ns + j], cur[j]);
        }
        if (st != HG_OK || (keep && t == steps - 1)) break;
        bool last = t == steps - 1;
        for (int j = 0; j < nd && st == HG_OK; j++) st = row_of(in[j], t, &s.bin[dl->v[j]]);
        for (int j = 0; j < ns; j++) s.bin[sl->v[j]] = cur[j];
        for (int j = 0; j < nod && st == HG_OK; j++) {
            if (out) st = row_of(out[j], t, &s.bout[j]);
            else s.bout[j] = s.tmp[2 * ns + j];
        }
        for (int j = 0; j < ns; j++)
            s.bout[nod + j] = (last && out) ? out[nod + j] : s.tmp[(t & 1) * ns + j];
        if (st == HG_OK) st = hg_plan_run(b->fwd, s.bin, is_train, s.bout);
        for (int j = 0; j < nd; j++) {
            hg_tensor_free(s.bin[dl->v[j]]);
            s.bin[dl->v[j]] = NULL;
        }
        for (int j = 0; j < nod; j++) {
            if (out) hg_tensor_free(s.bout[j]);
            else if (st == HG_OK) s.tmp[2 * ns + j] = s.bout[j]; /* fresh: reused next step */
            s.bout[j] = NULL;
        }
        if (st != HG_OK) break;
        for (int j = 0; j < ns; j++) {
            if (!(last && out)) s.tmp[(t & 1) * ns + j] = s.bout[nod + j];
            cur[j] = s.bout[nod + j];
        }
    }
    if (st == HG_OK && out && steps == 0)
        for (int j = 0; j < ns && st == HG_OK; j++) st = copy_into(out[nod + j], in[nd + j]);
    free(cur);
    scratch_free(&s);
    return st;
}

static hg_status run_cond_graph(hg_cflow *c, bool is_train, hg_tensor **bin, bool *truth)
{
    hg_tensor *pred = NULL;
    hg_status st = hg_plan_run(c->b[0].fwd, bin, is_train, &pred);
    if (st == HG_OK) st = truthy(pred, truth);
    hg_tensor_free(pred);
    return st;
}

static void gather_t(const hg_tuple *locs, hg_tensor *const *in, hg_tensor **bin)
{
    for (int i = 0; i < locs->n; i++) bin[i] = in[locs->v[i]];
}

/* The loop variables' node inputs: var j is node input func_input_locs[func_var_locs[j]]. */
static int var_input(const hg_cflow *c, int j)
{
    return (int)tup(c, W_FUNC)->v[tup(c, W_VARS)->v[j]];
}

/* The forward loop of while_loop over node inputs `in` with the loop variables replaced as the
 * steps go. out may be NULL (backward): then *keep (grown here, owned by the caller, one
 * reference each) receives the loop variables step t reads at keep[t * nv + j], and *nsteps
 * the number of steps. */
static hg_status while_loop_run(hg_cflow *c, bool is_train, hg_tensor *const *in,
                                hg_tensor *const *out, hg_tensor ***keep, int64_t *nsteps)
{
    const hg_tuple *cl = tup(c, W_COND), *fl = tup(c, W_FUNC), *vl = tup(c, W_VARS);
    int nv = vl->n, nod = (int)ival(c, W_NOD), most = c->b[0].nvars + c->b[1].nvars;
    int64_t maxit = ival(c, W_MAXIT), step = 0, kcap = 0;
    scratch s;
    /* tmp: the loop variables, two sets (ping-pong) or with keep the one this run owns; then
     * the step outputs when they have no destination */
    hg_status st = scratch_new(&s, most, c->b[1].nheads, 2 * nv + nod);
    hg_tensor **cur_in = malloc(sizeof(hg_tensor *) * (size_t)(c->nin + 1));
    if (!cur_in && st == HG_OK) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < c->nin; k++) cur_in[k] = in[k];
    while (st == HG_OK && step < maxit) {
        bool go = false;
        gather_t(cl, cur_in, s.bin);
        if ((st = run_cond_graph(c, is_train, s.bin, &go)) != HG_OK || !go) break;
        if (keep) {
            if (step == kcap) {
                kcap = kcap ? kcap * 2 : 8;
                hg_tensor **t = realloc(*keep, sizeof *t * (size_t)(kcap * nv + 1));
                if (!t) {
                    st = hg_error(HG_ERR_MEMORY, "out of memory");
                    break;
                }
                *keep = t;
            }
            for (int j = 0; j < nv; j++) { /* the run's reference moves to keep */
                hg_tensor *v = cur_in[var_input(c, j)];
                if (s.tmp[j]) s.tmp[j] = NULL;
                else hg_tensor_retain(v);
                (*keep)[step * nv + j] = v;
            }
            *nsteps = step + 1;
        }
        gather_t(fl, cur_in, s.bin);
        for (int j = 0; j < nod && st == HG_OK; j++) {
            if (out) st = row_of(out[j], step, &s.bout[j]);
            else s.bout[j] = s.tmp[2 * nv + j];
        }
        for (int j = 0; j < nv; j++) s.bout[nod + j] = keep ? NULL : s.tmp[(step & 1) * nv + j];
        if (st == HG_OK) st = hg_plan_run(c->b[1].fwd, s.bin, is_train, s.bout);
        for (int j = 0; j < nod; j++) {
            if (out) hg_tensor_free(s.bout[j]);
            else if (st == HG_OK) s.tmp[2 * nv + j] = s.bout[j];
            s.bout[j] = NULL;
        }
        if (st != HG_OK) break;
        for (int j = 0; j < nv; j++) {
            hg_tensor *v = s.bout[nod + j];
            s.tmp[keep ? j : (step & 1) * nv + j] = v;
            cur_in[var_input(c, j)] = v;
        }
        step++;
    }
    if (st == HG_OK && out) {
        for (int j = 0; j < nv && st == HG_OK; j++)
            st = copy_into(out[nod + j], cur_in[var_input(c, j)]);
        for (int j = 0; j < nod; j++) {
            size_t row = out[j]->shape[0] ? hg_tensor_nbytes(out[j]) / (size_t)out[j]->shape[0] : 0;
            memset((char *)hg_data(out[j]) + row * (size_t)step, 0,
                   row * (size_t)(out[j]->shape[0] - step));
        }
    }
    if (nsteps && !keep) *nsteps = step;
    free(cur_in);
    scratch_free(&s);
    return st;
}

static hg_status cond_run(hg_cflow *c, bool is_train, hg_tensor *const *in, hg_tensor *const *out,
                          int *taken)
{
    int most = c->b[0].nvars + c->b[1].nvars + c->b[2].nvars + 1;
    hg_tensor **bin = calloc((size_t)most, sizeof *bin);
    if (!bin) return hg_error(HG_ERR_MEMORY, "out of memory");
    bool go = false;
    gather_t(tup(c, C_COND), in, bin);
    hg_status st = run_cond_graph(c, is_train, bin, &go);
    int k = go ? 1 : 2;
    if (taken) *taken = k;
    if (st == HG_OK && out) {
        gather_t(tup(c, C_COND + k), in, bin);
        st = hg_plan_run(c->b[k].fwd, bin, is_train, (hg_tensor **)out);
    }
    free(bin);
    return st;
}

/* ---- backward runs ---------------------------------------------------------------------- */

/* in: the gradients of the forward outputs (c->nout), then the forward inputs (c->nin); out:
 * the gradients of the forward inputs. */

static hg_status foreach_backward(hg_cflow *c, bool is_train, hg_tensor *const *og,
                                  hg_tensor *const *in, hg_tensor *const *gin)
{
    const hg_tuple *dl = tup(c, F_DATA), *sl = tup(c, F_STATE), *rl = tup(c, F_REMAIN);
    int nd = dl->n, ns = sl->n, nr = rl->n, nod = (int)ival(c, F_NOD);
    body *b = &c->b[0];
    int64_t steps = in[0]->shape[0];
    hg_tensor **keep = calloc((size_t)(steps * ns + 1), sizeof *keep);
    scratch s;
    hg_status st = scratch_new(&s, b->nvars + b->nheads, b->nvars, 2 * ns + nr);
    if (!keep && st == HG_OK) st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK && steps > 0) st = foreach_loop(c, is_train, in, NULL, keep);
    /* Gradients of the free variables: summed over the steps, starting from zero. */
    for (int j = 0; st == HG_OK && j < nr; j++) {
        hg_meta m = hg_meta_of(gin[nd + ns + j]);
        memset(hg_data(gin[nd + ns + j]), 0, hg_tensor_nbytes(gin[nd + ns + j]));
        st = hg_tensor_new_meta(&m, &s.tmp[2 * ns + j]);
    }
    for (int j = 0; st == HG_OK && j < ns; j++) {
        hg_meta m = hg_meta_of(gin[nd + j]);
        st = hg_tensor_new_meta(&m, &s.tmp[j]);
        if (st == HG_OK) st = hg_tensor_new_meta(&m, &s.tmp[ns + j]);
    }
    hg_tensor *const *dstate = og + nod; /* the gradient reaching the states after step t */
    hg_tensor **carry = calloc((size_t)ns + 1, sizeof *carry);
    if (!carry && st == HG_OK) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int j = 0; st == HG_OK && j < ns; j++) carry[j] = dstate[j];
    hg_tensor **bin = s.bin, **bog = s.bin + b->nvars, **bout = s.bout;
    for (int64_t t = steps - 1; st == HG_OK && t >= 0; t--) {
        for (int j = 0; j < nd && st == HG_OK; j++) st = row_of(in[j], t, &bin[dl->v[j]]);
        for (int j = 0; j < ns; j++) bin[sl->v[j]] = keep[t * ns + j];
        for (int j = 0; j < nr; j++) bin[rl->v[j]] = in[nd + ns + j];
        for (int j = 0; j < nod && st == HG_OK; j++) st = row_of(og[j], t, &bog[j]);
        for (int j = 0; j < ns; j++) bog[nod + j] = carry[j];
        for (int j = 0; j < nd && st == HG_OK; j++) st = row_of(gin[j], t, &bout[dl->v[j]]);
        for (int j = 0; j < ns; j++) bout[sl->v[j]] = s.tmp[(t & 1) * ns + j];
        for (int j = 0; j < nr; j++) bout[rl->v[j]] = s.tmp[2 * ns + j];
        if (st == HG_OK) st = hg_plan_run(b->grad, bin, is_train, bout);
        for (int j = 0; j < nr && st == HG_OK; j++)
            st = add_into(c, gin[nd + ns + j], s.tmp[2 * ns + j]);
        for (int j = 0; j < ns; j++) carry[j] = s.tmp[(t & 1) * ns + j];
        for (int j = 0; j < nd; j++) {
            hg_tensor_free(bin[dl->v[j]]);
            hg_tensor_free(bout[dl->v[j]]);
            bin[dl->v[j]] = bout[dl->v[j]] = NULL;
        }
        for (int j = 0; j < nod; j++) {
            hg_tensor_free(bog[j]);
            bog[j] = NULL;
        }
    }
    for (int j = 0; st == HG_OK && j < ns; j++) st = copy_into(gin[nd + j], carry[j]);
    free(carry);
    free_all(keep, (int)(steps * ns));
    free(keep);
    scratch_free(&s);
    return st;
}

static hg_status while_backward(hg_cflow *c, bool is_train, hg_tensor *const *og,
                                hg_tensor *const *in, hg_tensor *const *gin)
{
    const hg_tuple *fl = tup(c, W_FUNC), *vl = tup(c, W_VARS);
    int nv = vl->n, nod = (int)ival(c, W_NOD), nf = fl->n;
    body *b = &c->b[1];
    hg_tensor **keep = NULL;
    int64_t steps = 0;
    for (int k = 0; k < c->nin; k++) memset(hg_data(gin[k]), 0, hg_tensor_nbytes(gin[k]));
    hg_status st = while_loop_run(c, is_train, in, NULL, &keep, &steps);
    if (st != HG_OK) {
        free_all(keep, (int)(steps * nv));
        free(keep);
        return st;
    }
    scratch s;
    st = scratch_new(&s, b->nvars + b->nheads, b->nvars, 2 * nv + nf);
    int *var_of = malloc(sizeof(int) * (size_t)(nf + 1)); /* func input -> loop var or -1 */
    hg_tensor **carry = calloc((size_t)nv + 1, sizeof *carry);
    if ((!var_of || !carry) && st == HG_OK) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; st == HG_OK && i < nf; i++) var_of[i] = -1;
    for (int j = 0; st == HG_OK && j < nv; j++) var_of[vl->v[j]] = j;
    for (int i = 0; st == HG_OK && i < nf; i++) {
        hg_meta m = hg_meta_of(gin[fl->v[i]]);
        st = hg_tensor_new_meta(&m, &s.tmp[2 * nv + i]);
        if (st == HG_OK && var_of[i] >= 0) {
            st = hg_tensor_new_meta(&m, &s.tmp[var_of[i]]);
            if (st == HG_OK) st = hg_tensor_new_meta(&m, &s.tmp[nv + var_of[i]]);
        }
    }
    for (int j = 0; st == HG_OK && j < nv; j++) carry[j] = og[nod + j];
    hg_tensor **bin = s.bin, **bog = s.bin + b->nvars, **bout = s.bout;
    for (int64_t t = steps - 1; st == HG_OK && t >= 0; t--) {
        for (int i = 0; i < nf; i++)
            bin[i] = var_of[i] >= 0 ? keep[t * nv + var_of[i]] : in[fl->v[i]];
        for (int j = 0; j < nod && st == HG_OK; j++) st = row_of(og[j], t, &bog[j]);
        for (int j = 0; j < nv; j++) bog[nod + j] = carry[j];
        for (int i = 0; i < nf; i++)
            bout[i] = var_of[i] >= 0 ? s.tmp[(t & 1) * nv + var_of[i]] : s.tmp[2 * nv + i];
        if (st == HG_OK) st = hg_plan_run(b->grad, bin, is_train, bout);
        for (int i = 0; i < nf && st == HG_OK; i++)
            if (var_of[i] < 0) st = add_into(c, gin[fl->v[i]], s.tmp[2 * nv + i]);
        for (int j = 0; j < nv; j++) carry[j] = s.tmp[(t & 1) * nv + j];
        for (int j = 0; j < nod; j++) {
            hg_tensor_free(bog[j]);
            bog[j] = NULL;
        }
    }
    for (int j = 0; st == HG_OK && j < nv; j++) st = add_into(c, gin[var_input(c, j)], carry[j]);
    free(var_of);
    free(carry);
    free_all(keep, (int)(steps * nv));
    free(keep);
    scratch_free(&s);
    return st;
}

static hg_status cond_backward(hg_cflow *c, bool is_train, hg_tensor *const *og,
                               hg_tensor *const *in, hg_tensor *const *gin)
{
    int k = 0;
    for (int i = 0; i < c->nin; i++) memset(hg_data(gin[i]), 0, hg_tensor_nbytes(gin[i]));
    HG_TRY(cond_run(c, is_train, in, NULL, &k));
    const hg_tuple *locs = tup(c, C_COND + k);
    body *b = &c->b[k];
    scratch s;
    hg_status st = scratch_new(&s, b->nvars + b->nheads, b->nvars, 0);
    for (int i = 0; st == HG_OK && i < b->nvars; i++) s.bin[i] = in[locs->v[i]];
    for (int h = 0; st == HG_OK && h < b->nheads; h++) s.bin[b->nvars + h] = og[h];
    if (st == HG_OK) st = hg_plan_run(b->grad, s.bin, is_train, s.bout);
    for (int i = 0; st == HG_OK && i < b->nvars; i++) st = add_into(c, gin[locs->v[i]], s.bout[i]);
    free_all(s.bout, b->nvars);
    scratch_free(&s);
    return st;
}

hg_status hg_cflow_run(hg_cflow *c, bool is_train, int nin, hg_tensor *const *in, int nout,
                       hg_tensor *const *out)
{
    if (c->backward) {
        hg_tensor *const *og = in, *const *fin = in + c->nout;
        if (c->kind == K_FOREACH) return foreach_backward(c, is_train, og, fin, out);
        if (c->kind == K_WHILE) return while_backward(c, is_train, og, fin, out);
        return cond_backward(c, is_train, og, fin, out);
    }
    if (c->kind == K_FOREACH) return foreach_loop(c, is_train, in, out, NULL);
    if (c->kind == K_WHILE) return while_loop_run(c, is_train, in, out, NULL, NULL);
    return cond_run(c, is_train, in, out, NULL);
}
