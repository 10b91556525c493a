/* Cutting a control-flow body out of the graph it was traced in (MXNet's MXSymbolCutSubgraph).
 * The body's nodes carry "__subgraph_name__"; values they read from outside become variables
 * of the body and inputs of the control-flow node. Symbols are immutable here (MXNet edits
 * its graph in place), so the nodes whose inputs change are copied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/symbol.h"

#define SUBG_KEY "__subgraph_name__"

static const char *node_attr(const hg_snode *n, const char *key)
{
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->keys[i], key) == 0) return n->vals[i];
    return NULL;
}

static bool in_subgraph(const hg_snode *n, const char *name)
{
    const char *v = node_attr(n, SUBG_KEY);
    return v && strcmp(v, name) == 0;
}

/* The name MXNet gives output `index` of node n (list_outputs): a variable's own name, else
 * "<node>_<output name>", "<node>_output" or "<node>_output<i>". */
static void output_name(const hg_snode *n, int index, char *buf, size_t size)
{
    if (!n->op) {
        snprintf(buf, size, "%s", n->name);
        return;
    }
    const char *const *names = n->op->output_names;
    int count = 0;
    while (names && names[count]) count++;
    if (names && index < count) snprintf(buf, size, "%s_%s", n->name, names[index]);
    else if (n->nout > 1) snprintf(buf, size, "%s_output%d", n->name, index);
    else snprintf(buf, size, "%s_output", n->name);
}

typedef struct {
    hg_sentry *outside; /* distinct outside values, in the order they were cut */
    hg_snode **vars;    /* the variable standing for each */
    int n, cap;
} cuts;

/* The variable that replaces outside value e (made on first use). */
static hg_status cut_var(cuts *c, hg_sentry e, hg_sentry *out)
{
    for (int k = 0; k < c->n; k++)
        if (c->outside[k].node == e.node && c->outside[k].index == e.index) {
            *out = (hg_sentry){c->vars[k], 0, 0};
            return HG_OK;
        }
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 8;
        hg_sentry *o = realloc(c->outside, sizeof *o * (size_t)nc);
        if (o) c->outside = o;
        hg_snode **v = o ? realloc(c->vars, sizeof *v * (size_t)nc) : NULL;
        if (!o || !v) return hg_error(HG_ERR_MEMORY, "out of memory");
        c->vars = v;
        c->cap = nc;
    }
    char name[512];
    output_name(e.node, e.index, name, sizeof name);
    hg_snode *var;
    HG_TRY(hg_snode_new_var(name, &var));
    c->outside[c->n] = (hg_sentry){e.node, e.index, 0};
    c->vars[c->n++] = var;
    *out = (hg_sentry){var, 0, 0};
    return HG_OK;
}

static hg_status copy_node(const hg_snode *nd, const hg_sentry *in, hg_snode **out)
{
    HG_TRY(hg_snode_new_op(nd->op, nd->name, nd->nattr, (const char *const *)nd->keys,
                           (const char *const *)nd->vals, nd->nin, in, out));
    hg_snode *c = *out;
    for (int k = 0; k < nd->nin; k++) c->in[k].version = in[k].version;
    hg_status st = hg_snode_set_subgraphs(c, nd->nsub, (const hg_symbol *const *)nd->sub);
    if (st == HG_OK && nd->origin) {
        size_t len = strlen(nd->origin) + 1;
        if ((c->origin = malloc(len))) memcpy(c->origin, nd->origin, len);
    }
    if (st != HG_OK) {
        hg_snode_release(c);
        *out = NULL;
    }
    return st;
}

hg_status hg_symbol_cut_subgraph(const hg_symbol *s, hg_symbol **out, int *ncut, hg_symbol ***cut)
{
    if (!s || !out || !ncut || !cut || s->n < 1)
        return hg_error(HG_ERR_VALUE, "hg_symbol_cut_subgraph: bad arguments");
    *ncut = 0;
    *cut = NULL;
    *out = NULL;
    const char *name = node_attr(s->heads[0].node, SUBG_KEY);
    if (!name) return hg_symbol_group(1, &s, out);
    hg_snode **nodes = NULL, **copy = NULL;
    hg_nodemap *pos = NULL;
    int n = 0;
    cuts c = {0};
    hg_sentry *heads = NULL, *in = NULL;
    hg_status st = hg_symbol_topo(s, &nodes, &n);
    if (st == HG_OK) st = hg_nodemap_new(nodes, n, &pos);
    int most = 1;
    for (int i = 0; i < n; i++) most = nodes[i]->nin > most ? nodes[i]->nin : most;
    if (st == HG_OK) {
        copy = calloc((size_t)n + 1, sizeof *copy);
        heads = calloc((size_t)s->n, sizeof *heads);
        in = calloc((size_t)most, sizeof *in);
        if (!copy || !heads || !in) st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    /* copy[i]: node i's replacement when one of its inputs changed (NULL: unchanged). */
    for (int i = 0; st == HG_OK && i < n; i++) {
        hg_snode *nd = nodes[i];
        if (!nd->op) continue;
        bool inside = in_subgraph(nd, name), changed = false;
        for (int k = 0; k < nd->nin && st == HG_OK; k++) {
            hg_sentry e = nd->in[k];
            hg_snode *src = e.node;
            if (inside && !in_subgraph(src, name)) {
                st = cut_var(&c, e, &in[k]);
                changed = true;
                continue;
            }
            hg_snode *r = copy[hg_nodemap_get(pos, src)];
            in[k] = r ? (hg_sentry){r, e.index, e.version} : e;
            changed |= r != NULL;
        }
        if (st == HG_OK && changed) st = copy_node(nd, in, &copy[i]);
    }
    for (int h = 0; st == HG_OK && h < s->n; h++) {
        hg_snode *r = copy[hg_nodemap_get(pos, s->heads[h].node)];
        heads[h] = r ? (hg_sentry){r, s->heads[h].index, 0} : s->heads[h];
    }
    if (st == HG_OK) st = hg_symbol_from_entries(s->n, heads, out);
    hg_symbol **syms = NULL;
    if (st == HG_OK && !(syms = calloc((size_t)(c.n ? c.n : 1), sizeof *syms)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < c.n; k++)
        st = hg_symbol_from_entries(1, &c.outside[k], &syms[k]);
    if (st == HG_OK) {
        *ncut = c.n;
        *cut = syms;
    } else {
        for (int k = 0; syms && k < c.n; k++) hg_symbol_free(syms[k]);
        free(syms);
        hg_symbol_free(*out);
        *out = NULL;
    }
    for (int i = 0; copy && i < n; i++) hg_snode_release(copy[i]);
    for (int k = 0; k < c.n; k++) hg_snode_release(c.vars[k]);
    free(c.outside);
    free(c.vars);
    free(copy);
    free(heads);
    free(in);
    hg_nodemap_free(pos);
    free(nodes);
    return st;
}
