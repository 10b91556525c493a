/* Symbolic differentiation: a reverse sweep over a forward graph that calls each op's
 * gradient rule and sums the gradients reaching every value (see grad.h). */
#include "graph/grad.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gsum {   /* gradients reaching one forward value */
    hg_sentry *v;
    int n, cap;
} gsum;

struct hg_grad_ctx {
    hg_status st;
    const hg_snode *node;
    gsum *ograds;        /* per output of node */
    hg_sentry *zeros;    /* per output: zeros_like emitted on demand */
    const bool *needs;   /* per input of node */
    hg_sentry *igrads;   /* per input of node */
    hg_snode **made;     /* every node emitted (references owned here) */
    int nmade, capmade;
    char **texts;        /* strings handed out by hg_g_fmt / hg_g_attr_str */
    int ntexts, captexts;
    long counter;
};

static const hg_sentry NO_ENTRY = {NULL, 0, 0};

static bool fail(hg_grad_ctx *g, hg_status st)
{
    if (g->st == HG_OK) g->st = st;
    return false;
}

static bool grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap) return true;
    int nc = *cap ? *cap * 2 : 8;
    while (nc < need) nc *= 2;
    void *t = realloc(*arr, elem * (size_t)nc);
    if (!t) return false;
    *arr = t;
    *cap = nc;
    return true;
}

const hg_attrs *hg_g_attrs(const hg_grad_ctx *g) { return g->node->attrs; }
const hg_snode *hg_g_node(const hg_grad_ctx *g) { return g->node; }
int hg_g_nin(const hg_grad_ctx *g) { return g->node->nin; }
int hg_g_nout(const hg_grad_ctx *g) { return g->node->nout; }
hg_status hg_g_status(const hg_grad_ctx *g) { return g->st; }

hg_sentry hg_g_in(const hg_grad_ctx *g, int k)
{
    return (k >= 0 && k < g->node->nin) ? g->node->in[k] : NO_ENTRY;
}

hg_sentry hg_g_out(const hg_grad_ctx *g, int i) { return (hg_sentry){(hg_snode *)g->node, i, 0}; }

bool hg_g_needs(const hg_grad_ctx *g, int k) { return k >= 0 && k < g->node->nin && g->needs[k]; }

void hg_g_set(hg_grad_ctx *g, int k, hg_sentry grad)
{
    if (k < 0 || k >= g->node->nin) {
        fail(g, hg_error(HG_ERR_INTERNAL, "gradient rule sets input %d of %d", k, g->node->nin));
        return;
    }
    g->igrads[k] = grad;
}

static const char *keep_text(hg_grad_ctx *g, char *t)
{
    if (!t || !grow((void **)&g->texts, &g->captexts, g->ntexts + 1, sizeof(char *))) {
        free(t);
        fail(g, hg_error(HG_ERR_MEMORY, "out of memory"));
        return "";
    }
    g->texts[g->ntexts++] = t;
    return t;
}

const char *hg_g_fmt(hg_grad_ctx *g, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t n = strlen(buf) + 1;
    char *t = malloc(n);
    if (t) memcpy(t, buf, n);
    return keep_text(g, t);
}

const char *hg_g_attr_str(hg_grad_ctx *g, int k)
{
    char buf[HG_MAX_TUPLE * 24 + 8];
    hg_attr_format(g->node->op, k, g->node->attrs, buf, sizeof buf);
    return hg_g_fmt(g, "%s", buf);
}

/* Emits one node; outputs go to out[0..nout) (nout may be less than the op's count). */
static void emit(hg_grad_ctx *g, const hg_op_def *op, int nkv, const char *const *keys,
                 const char *const *vals, int nin, const hg_sentry *in, int nout, hg_sentry *out)
{
    for (int i = 0; i < nout; i++) out[i] = NO_ENTRY;
    if (g->st != HG_OK) return;
    for (int k = 0; k < nin; k++)
        if (!in[k].node) {
            fail(g, hg_error(HG_ERR_INTERNAL, "gradient rule passes an empty input %d to %s", k,
                             op->name));
            return;
        }
    char name[256];
    snprintf(name, sizeof name, "%s_backward_%s%ld", g->node->name, op->name, g->counter++);
    hg_snode *n = NULL;
    hg_status st = hg_snode_new_op(op, name, nkv, keys, vals, nin, in, &n);
    if (st != HG_OK) {
        fail(g, st);
        return;
    }
    if (!grow((void **)&g->made, &g->capmade, g->nmade + 1, sizeof(hg_snode *))) {
        hg_snode_release(n);
        fail(g, hg_error(HG_ERR_MEMORY, "out of memory"));
        return;
    }
    g->made[g->nmade++] = n;
    if (nout > n->nout) {
        fail(g, hg_error(HG_ERR_INTERNAL, "%s has %d outputs, the rule asks for %d", op->name,
                         n->nout, nout));
        return;
    }
    for (int i = 0; i < nout; i++) out[i] = (hg_sentry){n, i, 0};
}

static const hg_op_def *find_op(hg_grad_ctx *g, const char *name)
{
    const hg_op_def *op = hg_registry_find(name);
    if (!op) fail(g, hg_error(HG_ERR_INTERNAL, "gradient rule uses unknown op '%s'", name));
    return op;
}

static int split_kv(const char *const *kv, const char **keys, const char **vals, int max)
{
    int n = 0;
    for (int i = 0; kv && kv[i] && n < max; i += 2) {
        keys[n] = kv[i];
        vals[n] = kv[i + 1] ? kv[i + 1] : "";
        n++;
        if (!kv[i + 1]) break;
    }
    return n;
}

void hg_g_opn(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in, const char *const *kv,
              int nout, hg_sentry *out)
{
    const char *keys[HG_MAX_ATTRS * 2], *vals[HG_MAX_ATTRS * 2];
    int nkv = split_kv(kv, keys, vals, HG_MAX_ATTRS * 2);
    const hg_op_def *op = find_op(g, name);
    if (!op) {
        for (int i = 0; i < nout; i++) out[i] = NO_ENTRY;
        return;
    }
    emit(g, op, nkv, keys, vals, nin, in, nout, out);
}

void hg_g_op_def(hg_grad_ctx *g, const hg_op_def *op, int nin, const hg_sentry *in,
                 const char *const *kv, int nout, hg_sentry *out)
{
    const char *keys[HG_MAX_ATTRS * 2], *vals[HG_MAX_ATTRS * 2];
    int nkv = split_kv(kv, keys, vals, HG_MAX_ATTRS * 2);
    emit(g, op, nkv, keys, vals, nin, in, nout, out);
}

hg_sentry hg_g_op(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in,
                  const char *const *kv)
{
    hg_sentry out;
    hg_g_opn(g, name, nin, in, kv, 1, &out);
    return out;
}

void hg_g_op_fwd_attrs(hg_grad_ctx *g, const char *name, int nin, const hg_sentry *in,
                       const char *const *kv, int nout, hg_sentry *out)
{
    const hg_snode *f = g->node;
    enum { MAXKV = HG_MAX_ATTRS * 4 };
    const char *keys[MAXKV], *vals[MAXKV];
    int n = 0;
    for (int i = 0; i < f->nattr && n < MAXKV; i++) {
        if (f->keys[i][0] == '_' && f->keys[i][1] == '_') continue; /* annotations */
        keys[n] = f->keys[i];
        vals[n++] = f->vals[i];
    }
    /* Later keys override earlier ones when the node is built. */
    n += split_kv(kv, keys + n, vals + n, MAXKV - n);
    const hg_op_def *op = find_op(g, name);
    if (!op) {
        for (int i = 0; i < nout; i++) out[i] = NO_ENTRY;
        return;
    }
    emit(g, op, n, keys, vals, nin, in, nout, out);
}

/* The rule of every node with subgraphs (control flow): one backward node, _backward_<op>,
 * with the forward attributes and subgraphs, reading the output gradients and the forward
 * inputs and returning every input's gradient (the executor runs the bodies' gradients). */
static hg_status subgraph_grad(hg_grad_ctx *g)
{
    const hg_snode *f = g->node;
    char name[64];
    snprintf(name, sizeof name, "_backward_%s", f->op->name + (f->op->name[0] == '_'));
    int nin = f->nout + f->nin;
    hg_sentry *in = malloc(sizeof *in * (size_t)nin), *out = malloc(sizeof *out * (size_t)f->nin);
    if (!in || !out) {
        free(in);
        free(out);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; i < f->nout; i++) in[i] = hg_g_ograd(g, i);
    for (int k = 0; k < f->nin; k++) in[f->nout + k] = f->in[k];
    hg_g_op_fwd_attrs(g, name, nin, in, NULL, f->nin, out);
    if (g->st == HG_OK && g->nmade > 0) {
        hg_snode *b = g->made[g->nmade - 1];
        hg_status st = hg_snode_set_subgraphs(b, f->nsub, (const hg_symbol *const *)f->sub);
        if (st != HG_OK) fail(g, st);
    }
    for (int k = 0; g->st == HG_OK && k < f->nin; k++)
        if (g->needs[k]) hg_g_set(g, k, out[k]);
    free(in);
    free(out);
    return g->st;
}

hg_sentry hg_g_scalar(hg_grad_ctx *g, const char *scalar_op, hg_sentry x, double v)
{
    return hg_g_op(g, scalar_op, HG_GIN(x), HG_KV("scalar", hg_g_fmt(g, "%.17g", v)));
}

hg_sentry hg_g_sum_like(hg_grad_ctx *g, hg_sentry x, hg_sentry like)
{
    return hg_g_op(g, "_sum_to_like", HG_GIN(x, like), NULL);
}

hg_sentry hg_g_ograd(hg_grad_ctx *g, int i)
{
    if (i < 0 || i >= g->node->nout) {
        fail(g,
             hg_error(HG_ERR_INTERNAL, "gradient rule asks for output %d of %d", i, g->node->nout));
        return NO_ENTRY;
    }
    if (g->ograds[i].n) return g->ograds[i].v[0]; /* summed before the rule runs */
    if (!g->zeros[i].node) g->zeros[i] = hg_g_op(g, "zeros_like", HG_GIN(hg_g_out(g, i)), NULL);
    return g->zeros[i];
}

/* Replaces the gradients in s by their sum (one entry). */
static void sum_grads(hg_grad_ctx *g, gsum *s)
{
    if (s->n <= 1) return;
    hg_sentry r = hg_g_op(g, "add_n", s->n, s->v, HG_KV("num_args", hg_g_fmt(g, "%d", s->n)));
    s->v[0] = r;
    s->n = r.node ? 1 : 0;
}

static void add_grad(hg_grad_ctx *g, gsum *s, hg_sentry e)
{
    if (!grow((void **)&s->v, &s->cap, s->n + 1, sizeof(hg_sentry))) {
        fail(g, hg_error(HG_ERR_MEMORY, "out of memory"));
        return;
    }
    s->v[s->n++] = e;
}

hg_status hg_graph_grad(int nheads, const hg_sentry *heads, const hg_sentry *head_grads, int nwrt,
                        hg_snode *const *wrt, hg_symbol **out)
{
    if (nheads < 1 || !heads || nwrt < 0 || (nwrt && !wrt) || !out)
        return hg_error(HG_ERR_VALUE, "hg_graph_grad: bad arguments");
    hg_symbol *fwd = NULL;
    hg_snode **nodes = NULL;
    int n = 0, *off = NULL, *in_idx = NULL, *head_idx = NULL, *entry = NULL;
    bool *needs = NULL;
    gsum *grads = NULL;
    hg_grad_ctx g = {0};
    hg_status st = hg_symbol_from_entries(nheads, heads, &fwd);
    if (st == HG_OK) st = hg_symbol_topo(fwd, &nodes, &n);
    if (st == HG_OK) st = hg_symbol_topo_positions(fwd, nodes, n, &off, &in_idx, &head_idx);
    int nentries = 0;
    if (st == HG_OK) {
        entry = malloc(sizeof(int) * (size_t)(n + 1));
        needs = calloc((size_t)(n + 1), sizeof(bool));
        if (entry)
            for (int i = 0; i < n; i++) {
                entry[i] = nentries;
                nentries += nodes[i]->nout;
            }
        grads = calloc((size_t)(nentries + 1), sizeof(gsum));
        if (!entry || !needs || !grads) st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    /* needs[i]: node i depends on a wrt variable, so gradients must flow through it. */
    for (int i = 0; st == HG_OK && i < n; i++) {
        for (int w = 0; w < nwrt; w++) needs[i] |= nodes[i] == wrt[w];
        for (int k = 0; k < nodes[i]->nin && !needs[i]; k++)
            needs[i] = needs[in_idx[off[i] + k]] && !hg_op_mutates_input(nodes[i]->op, k);
    }
    for (int h = 0; st == HG_OK && h < nheads; h++) {
        if (!needs[head_idx[h]]) continue;
        hg_sentry hgr = head_grads ? head_grads[h] : NO_ENTRY;
        if (!hgr.node) {
            g.node = heads[h].node;
            hgr = hg_g_op(&g, "ones_like", HG_GIN(heads[h]), NULL);
        }
        add_grad(&g, &grads[entry[head_idx[h]] + heads[h].index], hgr);
        st = g.st;
    }
    bool need_stack[16], *need_in = need_stack;
    hg_sentry ig_stack[16], *igrads = ig_stack;
    hg_sentry z_stack[16], *zeros = z_stack;
    for (int i = n - 1; st == HG_OK && i >= 0; i--) {
        hg_snode *nd = nodes[i];
        if (!nd->op || !needs[i]) continue;
        bool any = false;
        for (int k = 0; k < nd->nout; k++) any |= grads[entry[i] + k].n > 0;
        if (!any) continue;
        if (!nd->op->grad && !nd->nsub) {
            if (nd->op->flags & HG_OP_NO_GRAD) continue;
            st = hg_error(HG_ERR_VALUE,
                          "cannot differentiate through node '%s': operator %s "
                          "has no gradient",
                          nd->name, nd->op->name);
            break;
        }
        int big = nd->nin > nd->nout ? nd->nin : nd->nout;
        if (big > 16 && need_in == need_stack) {
            int most = 16;
            for (int j = 0; j < n; j++) {
                most = nodes[j]->nin > most ? nodes[j]->nin : most;
                most = nodes[j]->nout > most ? nodes[j]->nout : most;
            }
            need_in = malloc(sizeof(bool) * (size_t)most);
            igrads = malloc(sizeof(hg_sentry) * (size_t)most);
            zeros = malloc(sizeof(hg_sentry) * (size_t)most);
            if (!need_in || !igrads || !zeros) {
                st = hg_error(HG_ERR_MEMORY, "out of memory");
                break;
            }
        }
        g.node = nd;
        g.ograds = &grads[entry[i]];
        g.zeros = zeros;
        g.needs = need_in;
        g.igrads = igrads;
        for (int k = 0; k < nd->nout; k++) {
            zeros[k] = NO_ENTRY;
            sum_grads(&g, &grads[entry[i] + k]);
        }
        for (int k = 0; k < nd->nin; k++) {
            need_in[k] = needs[in_idx[off[i] + k]] && !hg_op_mutates_input(nd->op, k);
            igrads[k] = NO_ENTRY;
        }
        if (g.st == HG_OK) g.st = nd->nsub ? subgraph_grad(&g) : nd->op->grad(&g);
        st = g.st;
        if (st != HG_OK) {
            hg_error_prefix(st, "gradient of node '%s' (%s): ", nd->name, nd->op->name);
            break;
        }
        for (int k = 0; k < nd->nin && st == HG_OK; k++) {
            if (!need_in[k] || !igrads[k].node) continue;
            add_grad(&g, &grads[entry[in_idx[off[i] + k]] + nd->in[k].index], igrads[k]);
            st = g.st;
        }
    }
    if (need_in != need_stack) free(need_in);
    if (igrads != ig_stack) free(igrads);
    if (zeros != z_stack) free(zeros);
    hg_sentry *res = NULL;
    if (st == HG_OK && !(res = malloc(sizeof *res * (size_t)(nwrt + 1))))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int w = 0; st == HG_OK && w < nwrt; w++) {
        int pos = -1;
        for (int i = 0; i < n && pos < 0; i++)
            if (nodes[i] == wrt[w]) pos = i;
        hg_sentry self = {wrt[w], 0, 0};
        g.node = wrt[w];
        if (pos >= 0 && grads[entry[pos]].n) {
            sum_grads(&g, &grads[entry[pos]]);
            res[w] = grads[entry[pos]].v[0];
        } else {
            res[w] = hg_g_op(&g, "zeros_like", HG_GIN(self), NULL);
        }
        st = g.st;
    }
    if (st == HG_OK) st = hg_symbol_from_entries(nwrt, res, out);
    free(res);
    for (int e = 0; e < nentries; e++) free(grads ? grads[e].v : NULL);
    free(grads);
    for (int i = 0; i < g.nmade; i++) hg_snode_release(g.made[i]);
    free(g.made);
    for (int i = 0; i < g.ntexts; i++) free(g.texts[i]);
    free(g.texts);
    free(needs);
    free(entry);
    free(off);
    free(in_idx);
    free(head_idx);
    free(nodes);
    hg_symbol_free(fwd);
    return st;
}
