/* Symbol construction, traversal and MXNet JSON in/out. */
#include "graph/symbol.h"

#include <stdlib.h>
#include <string.h>

#include "graph/json.h"

#define MXNET_VERSION 10901

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Frees nodes whose count drops to zero without recursion: inputs go on an explicit stack. */
static void node_release(hg_snode *n)
{
    hg_snode **stack = NULL;
    int top = 0, cap = 0;
    while (n || top) {
        if (!n) n = stack[--top];
        if (atomic_fetch_sub(&n->refcount, 1) != 1) {
            n = NULL;
            continue;
        }
        for (int i = 0; i < n->nin; i++) {
            if (top == cap) {
                int nc = cap ? cap * 2 : 16;
                hg_snode **t = realloc(stack, sizeof *t * (size_t)nc);
                if (!t) break; /* out of memory: leak the rest rather than crash */
                stack = t;
                cap = nc;
            }
            stack[top++] = n->in[i].node;
        }
        for (int i = 0; i < n->nattr; i++) {
            free(n->keys[i]);
            free(n->vals[i]);
        }
        free(n->keys);
        free(n->vals);
        free(n->attrs);
        free(n->in);
        free(n->name);
        free(n->origin);
        for (int i = 0; i < n->nsub; i++) hg_symbol_free(n->sub[i]); /* depth = nesting */
        free(n->sub);
        if (n->ext_release) n->ext_release(n->ext);
        free(n);
        n = NULL;
    }
    free(stack);
}

static hg_symbol *symbol_alloc(int n)
{
    hg_symbol *s = malloc(sizeof *s);
    if (!s) return NULL;
    s->n = n;
    s->heads = calloc((size_t)(n ? n : 1), sizeof *s->heads);
    if (!s->heads) {
        free(s);
        return NULL;
    }
    return s;
}

void hg_symbol_free(hg_symbol *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++)
        if (s->heads[i].node) node_release(s->heads[i].node);
    free(s->heads);
    free(s);
}

/* Copies the attributes sorted by key (insertion sort: attribute lists are short). */
static hg_status node_set_attrs(hg_snode *n, int nattr, const char *const *keys,
                                const char *const *vals)
{
    n->keys = calloc((size_t)(nattr ? nattr : 1), sizeof(char *));
    n->vals = calloc((size_t)(nattr ? nattr : 1), sizeof(char *));
    if (!n->keys || !n->vals) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < nattr; i++) {
        if (!keys[i] || !vals[i]) return hg_error(HG_ERR_VALUE, "NULL attribute key or value");
        int j = n->nattr;
        for (int k = 0; k < n->nattr; k++) {
            int c = strcmp(keys[i], n->keys[k]);
            if (c == 0) { /* a repeated key: the last value wins */
                char *v = dupstr(vals[i]);
                if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
                free(n->vals[k]);
                n->vals[k] = v;
                j = -1;
                break;
            }
            if (c < 0) {
                j = k;
                break;
            }
        }
        if (j < 0) continue;
        char *k = dupstr(keys[i]), *v = dupstr(vals[i]);
        if (!k || !v) {
            free(k);
            free(v);
            return hg_error(HG_ERR_MEMORY, "out of memory");
        }
        memmove(n->keys + j + 1, n->keys + j, sizeof(char *) * (size_t)(n->nattr - j));
        memmove(n->vals + j + 1, n->vals + j, sizeof(char *) * (size_t)(n->nattr - j));
        n->keys[j] = k;
        n->vals[j] = v;
        n->nattr++;
    }
    return HG_OK;
}

static hg_snode *node_new(const char *name)
{
    hg_snode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    atomic_init(&n->refcount, 1);
    n->name = dupstr(name ? name : "");
    if (!n->name) {
        free(n);
        return NULL;
    }
    n->nout = n->nvisible = 1;
    return n;
}

static bool is_annotation(const char *k)
{
    size_t n = strlen(k);
    return n > 4 && k[0] == '_' && k[1] == '_' && k[n - 1] == '_' && k[n - 2] == '_';
}

hg_status hg_symbol_var(const char *name, int nattr, const char *const *keys,
                        const char *const *vals, hg_symbol **out)
{
    if (!name || !out) return hg_error(HG_ERR_VALUE, "hg_symbol_var: NULL argument");
    hg_snode *n = node_new(name);
    hg_symbol *s = symbol_alloc(1);
    hg_status st = (n && s) ? node_set_attrs(n, nattr, keys, vals)
                            : hg_error(HG_ERR_MEMORY, "out of memory");
    if (st != HG_OK) {
        if (n) node_release(n);
        hg_symbol_free(s);
        return st;
    }
    s->heads[0] = (hg_sentry){n, 0, 0};
    *out = s;
    return HG_OK;
}

static void free_attr_arrays(int nattr, char **keys, char **vals)
{
    for (int i = 0; keys && vals && i < nattr; i++) {
        free(keys[i]);
        free(vals[i]);
    }
    free(keys);
    free(vals);
}

hg_status hg_snode_set_attrs(hg_snode *n, int nattr, const char *const *keys,
                             const char *const *vals)
{
    if (!n || nattr < 0 || (nattr && (!keys || !vals)))
        return hg_error(HG_ERR_VALUE, "hg_snode_set_attrs: NULL argument");
    for (int i = 0; i < nattr; i++) {
        if (!keys[i] || !vals[i]) return hg_error(HG_ERR_VALUE, "NULL attribute key or value");
        if (n->op && !is_annotation(keys[i]))
            return hg_error(HG_ERR_VALUE,
                            "cannot set attribute %s of node %s (%s): the parameters of an "
                            "op are fixed when it is created; only annotations (__x__) can be "
                            "set afterwards",
                            keys[i], n->name, n->op->name);
    }
    /* The old attributes then the new ones, into fresh arrays (the last value of a key wins);
     * the node changes only when that succeeded. */
    int total = n->nattr + nattr;
    const char **k = malloc(sizeof(char *) * (size_t)(total ? total : 1));
    const char **v = malloc(sizeof(char *) * (size_t)(total ? total : 1));
    hg_snode tmp = {0};
    hg_status st = (k && v) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) {
        for (int i = 0; i < n->nattr; i++) {
            k[i] = n->keys[i];
            v[i] = n->vals[i];
        }
        for (int i = 0; i < nattr; i++) {
            k[n->nattr + i] = keys[i];
            v[n->nattr + i] = vals[i];
        }
        st = node_set_attrs(&tmp, total, k, v);
    }
    free(k);
    free(v);
    if (st != HG_OK) {
        free_attr_arrays(tmp.nattr, tmp.keys, tmp.vals);
        return st;
    }
    free_attr_arrays(n->nattr, n->keys, n->vals);
    n->keys = tmp.keys;
    n->vals = tmp.vals;
    n->nattr = tmp.nattr;
    return HG_OK;
}

/* Parses the op attributes of node n into n->attrs (annotations are kept, not parsed). */
static hg_status parse_node_attrs(hg_snode *n)
{
    const hg_op_def *op = n->op;
    n->attrs = malloc(sizeof *n->attrs);
    if (!n->attrs) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_attrs_set_defaults(op, n->attrs);
    /* Free-form ops get the keys outside their schema (kept in the node's sorted order). */
    const char **fk = NULL, **fv = NULL;
    int nfree = 0;
    if (op->parse_free && n->nattr > 0) {
        fk = malloc(sizeof(char *) * (size_t)n->nattr);
        fv = malloc(sizeof(char *) * (size_t)n->nattr);
    }
    hg_status st = !op->parse_free || n->nattr == 0 || (fk && fv)
                       ? HG_OK
                       : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n->nattr && st == HG_OK; i++) {
        if (is_annotation(n->keys[i])) continue;
        int k = hg_attr_index(op, n->keys[i]);
        if (k < 0 && op->parse_free) {
            fk[nfree] = n->keys[i];
            fv[nfree++] = n->vals[i];
            continue;
        }
        st = k < 0 ? hg_attr_unknown(op, n->keys[i]) : hg_attr_parse(op, k, n->vals[i], n->attrs);
    }
    if (st == HG_OK) st = hg_attrs_finish(op, n->attrs);
    if (st == HG_OK && op->parse_free) st = op->parse_free(op, nfree, fk, fv, n->attrs);
    free(fk);
    free(fv);
    if (st != HG_OK) return hg_error_prefix(st, "node '%s': ", n->name);
    n->nout = hg_op_num_outputs(op, n->attrs);
    n->nvisible = hg_op_num_visible_outputs(op, n->attrs);
    return HG_OK;
}

hg_status hg_snode_new_op(const hg_op_def *op, const char *name, int nattr, const char *const *keys,
                          const char *const *vals, int nin, const hg_sentry *in, hg_snode **out)
{
    if (!op || !name || !out || (nin && !in))
        return hg_error(HG_ERR_VALUE, "hg_snode_new_op: NULL argument");
    hg_snode *n = node_new(name);
    hg_status st = n ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) st = node_set_attrs(n, nattr, keys, vals);
    if (st == HG_OK) {
        n->op = op;
        st = parse_node_attrs(n);
    }
    if (st == HG_OK) {
        int want = hg_op_num_inputs(op, n->attrs);
        if (want != nin)
            st = hg_error(HG_ERR_VALUE, "node '%s' (%s): expects %d input(s), got %d", name,
                          op->name, want, nin);
    }
    if (st == HG_OK && !(n->in = calloc((size_t)(nin ? nin : 1), sizeof *n->in)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; st == HG_OK && i < nin; i++) {
        if (!in[i].node || in[i].index < 0 || in[i].index >= in[i].node->nout) {
            st = hg_error(HG_ERR_VALUE, "node '%s' (%s): input %d is not a valid output", name,
                          op->name, i);
            break;
        }
        n->in[i] = in[i];
        if (hg_op_mutates_input_a(op, n->attrs, i)) n->in[i].version++;
        atomic_fetch_add(&n->in[i].node->refcount, 1);
        n->nin++;
    }
    if (st != HG_OK) {
        if (n) node_release(n);
        return st;
    }
    *out = n;
    return HG_OK;
}

hg_status hg_snode_set_subgraphs(hg_snode *n, int nsub, const hg_symbol *const *subs)
{
    if (!n || nsub < 0 || (nsub && !subs) || n->nsub)
        return hg_error(HG_ERR_VALUE, "hg_snode_set_subgraphs: bad arguments");
    if (!nsub) return HG_OK;
    hg_symbol **copy = calloc((size_t)nsub, sizeof *copy);
    if (!copy) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < nsub; i++) {
        hg_status st = subs[i]
                           ? hg_symbol_group(1, &subs[i], &copy[i])
                           : hg_error(HG_ERR_VALUE, "node '%s': subgraph %d is NULL", n->name, i);
        if (st != HG_OK) {
            for (int k = 0; k < i; k++) hg_symbol_free(copy[k]);
            free(copy);
            return st;
        }
    }
    n->sub = copy;
    n->nsub = nsub;
    return HG_OK;
}

hg_status hg_snode_new_var(const char *name, hg_snode **out)
{
    hg_snode *n = node_new(name);
    if (!n || !(n->keys = calloc(1, sizeof(char *))) || !(n->vals = calloc(1, sizeof(char *)))) {
        if (n) node_release(n);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    *out = n;
    return HG_OK;
}

hg_status hg_snode_new_parsed(const hg_op_def *op, const char *name, const hg_attrs *a, int nin,
                              const hg_sentry *in, hg_snode **out)
{
    const char *keys[HG_MAX_ATTRS], *vals[HG_MAX_ATTRS];
    char text[HG_MAX_ATTRS][HG_MAX_TUPLE * 24 + 8];
    int nkv = 0;
    for (int i = 0; i < op->num_attrs && i < HG_MAX_ATTRS; i++) {
        if (!a->v[i].is_set) continue;
        hg_attr_format(op, i, a, text[nkv], sizeof text[nkv]);
        keys[nkv] = op->attrs[i].name;
        vals[nkv] = text[nkv];
        nkv++;
    }
    return hg_snode_new_op(op, name, nkv, keys, vals, nin, in, out);
}

void hg_snode_retain(hg_snode *n) { atomic_fetch_add(&n->refcount, 1); }
void hg_snode_release(hg_snode *n)
{
    if (n) node_release(n);
}

hg_status hg_symbol_from_entries(int n, const hg_sentry *e, hg_symbol **out)
{
    hg_symbol *s = symbol_alloc(n);
    if (!s) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        s->heads[i] = e[i];
        atomic_fetch_add(&e[i].node->refcount, 1);
    }
    *out = s;
    return HG_OK;
}

hg_status hg_symbol_op(const hg_op_def *op, const char *name, int nattr, const char *const *keys,
                       const char *const *vals, int nin, const hg_symbol *const *inputs,
                       hg_symbol **out)
{
    if (!op || !name || !out || (nin && !inputs))
        return hg_error(HG_ERR_VALUE, "hg_symbol_op: NULL argument");
    hg_sentry in_stack[8] = {{0}}, *in = in_stack;
    if (nin > 8 && !(in = malloc(sizeof *in * (size_t)nin)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = HG_OK;
    for (int i = 0; i < nin; i++) {
        if (!inputs[i] || inputs[i]->n != 1) {
            st = hg_error(HG_ERR_VALUE,
                          "node '%s' (%s): input %d has %d outputs; select one "
                          "output as the input",
                          name, op->name, i, inputs[i] ? inputs[i]->n : 0);
            break;
        }
        in[i] = inputs[i]->heads[0];
    }
    hg_snode *n = NULL;
    hg_symbol *s = NULL;
    if (st == HG_OK) st = hg_snode_new_op(op, name, nattr, keys, vals, nin, in, &n);
    if (in != in_stack) free(in);
    if (st == HG_OK && !(s = symbol_alloc(n->nvisible))) {
        node_release(n);
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    if (st != HG_OK) return st;
    for (int i = 0; i < n->nvisible; i++) {
        s->heads[i] = (hg_sentry){n, i, 0};
        if (i) atomic_fetch_add(&n->refcount, 1);
    }
    *out = s;
    return HG_OK;
}

hg_status hg_symbol_op_sub(const hg_op_def *op, const char *name, int nattr,
                           const char *const *keys, const char *const *vals, int nin,
                           const hg_symbol *const *inputs, int nsub, const hg_symbol *const *subs,
                           hg_symbol **out)
{
    hg_symbol *s;
    HG_TRY(hg_symbol_op(op, name, nattr, keys, vals, nin, inputs, &s));
    hg_status st = hg_snode_set_subgraphs(s->heads[0].node, nsub, subs);
    if (st != HG_OK) {
        hg_symbol_free(s);
        return st;
    }
    *out = s;
    return HG_OK;
}

hg_status hg_symbol_group(int n, const hg_symbol *const *syms, hg_symbol **out)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (!syms[i]) return hg_error(HG_ERR_VALUE, "hg_symbol_group: NULL symbol");
        total += syms[i]->n;
    }
    hg_symbol *s = symbol_alloc(total);
    if (!s) return hg_error(HG_ERR_MEMORY, "out of memory");
    int k = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < syms[i]->n; j++, k++) {
            s->heads[k] = syms[i]->heads[j];
            atomic_fetch_add(&s->heads[k].node->refcount, 1);
        }
    }
    *out = s;
    return HG_OK;
}

hg_status hg_symbol_output(const hg_symbol *s, int i, hg_symbol **out)
{
    if (i < 0 || i >= s->n)
        return hg_error(HG_ERR_INDEX,
                        "output index %d is out of range for a symbol with %d "
                        "output(s)",
                        i, s->n);
    hg_symbol *r = symbol_alloc(1);
    if (!r) return hg_error(HG_ERR_MEMORY, "out of memory");
    r->heads[0] = s->heads[i];
    atomic_fetch_add(&r->heads[0].node->refcount, 1);
    *out = r;
    return HG_OK;
}

/* ---- traversal ------------------------------------------------------------------------------ */

typedef struct {
    hg_snode **keys;
    int *vals;
    size_t cap;
} ptrmap; /* open addressing: node pointer -> topological index */

static size_t ptr_hash(const void *p, size_t cap)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static int ptrmap_get(const ptrmap *m, const hg_snode *k)
{
    for (size_t i = ptr_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return -1;
        if (m->keys[i] == k) return m->vals[i];
    }
}

static hg_status ptrmap_put(ptrmap *m, hg_snode *k, int v, int count)
{
    if ((size_t)(count + 1) * 2 > m->cap) {
        ptrmap big = {calloc(m->cap * 2, sizeof(hg_snode *)), calloc(m->cap * 2, sizeof(int)),
                      m->cap * 2};
        if (!big.keys || !big.vals) {
            free(big.keys);
            free(big.vals);
            return hg_error(HG_ERR_MEMORY, "out of memory");
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) ptrmap_put(&big, m->keys[i], m->vals[i], 0);
        free(m->keys);
        free(m->vals);
        *m = big;
    }
    size_t i = ptr_hash(k, m->cap);
    while (m->keys[i]) i = (i + 1) & (m->cap - 1);
    m->keys[i] = k;
    m->vals[i] = v;
    return HG_OK;
}

struct hg_nodemap {
    ptrmap map;
};

hg_status hg_nodemap_new(hg_snode *const *nodes, int n, hg_nodemap **out)
{
    size_t cap = 64;
    while (cap < (size_t)n * 2 + 2) cap *= 2;
    hg_nodemap *m = malloc(sizeof *m);
    if (m) m->map = (ptrmap){calloc(cap, sizeof(hg_snode *)), calloc(cap, sizeof(int)), cap};
    if (!m || !m->map.keys || !m->map.vals) {
        hg_nodemap_free(m);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; i < n; i++)
        if (ptrmap_get(&m->map, nodes[i]) < 0) ptrmap_put(&m->map, nodes[i], i, i);
    *out = m;
    return HG_OK;
}

int hg_nodemap_get(const hg_nodemap *m, const hg_snode *x) { return ptrmap_get(&m->map, x); }

void hg_nodemap_free(hg_nodemap *m)
{
    if (!m) return;
    free(m->map.keys);
    free(m->map.vals);
    free(m);
}

/* Post-order DFS from the heads with an explicit stack. The map gives each node's index. */
static hg_status topo(const hg_symbol *s, hg_snode ***out, int *count, ptrmap *map)
{
    typedef struct {
        hg_snode *n;
        int next;
    } frame;
    frame *stack = NULL;
    hg_snode **order = NULL;
    int top = 0, scap = 0, n = 0, ocap = 0;
    hg_status st = HG_OK;
    map->cap = 64;
    map->keys = calloc(map->cap, sizeof(hg_snode *));
    map->vals = calloc(map->cap, sizeof(int));
    if (!map->keys || !map->vals) return hg_error(HG_ERR_MEMORY, "out of memory");
    /* Nodes on the stack are marked with index -2 in a second map-free way: a visited set. */
    ptrmap seen = {calloc(64, sizeof(hg_snode *)), calloc(64, sizeof(int)), 64};
    int nseen = 0;
    if (!seen.keys || !seen.vals) {
        st = hg_error(HG_ERR_MEMORY, "out of memory");
        goto done;
    }
    for (int h = 0; h < s->n && st == HG_OK; h++) {
        hg_snode *root = s->heads[h].node;
        if (ptrmap_get(&seen, root) >= 0) continue;
        if ((st = ptrmap_put(&seen, root, 0, nseen++)) != HG_OK) break;
        if (top == scap) {
            scap = scap ? scap * 2 : 64;
            frame *t = realloc(stack, sizeof *t * (size_t)scap);
            if (!t) {
                st = hg_error(HG_ERR_MEMORY, "out of memory");
                break;
            }
            stack = t;
        }
        stack[top++] = (frame){root, 0};
        while (top && st == HG_OK) {
            frame *f = &stack[top - 1];
            if (f->next < f->n->nin) {
                hg_snode *c = f->n->in[f->next++].node;
                if (ptrmap_get(&seen, c) >= 0) continue;
                if ((st = ptrmap_put(&seen, c, 0, nseen++)) != HG_OK) break;
                if (top == scap) {
                    scap *= 2;
                    frame *t = realloc(stack, sizeof *t * (size_t)scap);
                    if (!t) {
                        st = hg_error(HG_ERR_MEMORY, "out of memory");
                        break;
                    }
                    stack = t;
                }
                stack[top++] = (frame){c, 0};
                continue;
            }
            if (n == ocap) {
                ocap = ocap ? ocap * 2 : 64;
                hg_snode **t = realloc(order, sizeof *t * (size_t)ocap);
                if (!t) {
                    st = hg_error(HG_ERR_MEMORY, "out of memory");
                    break;
                }
                order = t;
            }
            if ((st = ptrmap_put(map, f->n, n, n)) != HG_OK) break;
            order[n++] = f->n;
            top--;
        }
    }
done:
    free(stack);
    free(seen.keys);
    free(seen.vals);
    if (st != HG_OK) {
        free(order);
        free(map->keys);
        free(map->vals);
        map->keys = NULL;
        map->vals = NULL;
        return st;
    }
    *out = order;
    *count = n;
    return HG_OK;
}

hg_status hg_symbol_topo(const hg_symbol *s, hg_snode ***nodes, int *n)
{
    ptrmap map;
    HG_TRY(topo(s, nodes, n, &map));
    free(map.keys);
    free(map.vals);
    return HG_OK;
}

hg_status hg_symbol_topo_positions(const hg_symbol *s, hg_snode **nodes, int n, int **off,
                                   int **in_idx, int **head_idx)
{
    ptrmap map = {calloc(64, sizeof(hg_snode *)), calloc(64, sizeof(int)), 64};
    hg_status st = (map.keys && map.vals) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n && st == HG_OK; i++) st = ptrmap_put(&map, nodes[i], i, i);
    *off = *in_idx = *head_idx = NULL;
    if (st == HG_OK) {
        *off = malloc(sizeof(int) * (size_t)(n + 1));
        if (!*off) st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    if (st == HG_OK) {
        (*off)[0] = 0;
        for (int i = 0; i < n; i++) (*off)[i + 1] = (*off)[i] + nodes[i]->nin;
        *in_idx = malloc(sizeof(int) * (size_t)((*off)[n] + 1));
        *head_idx = malloc(sizeof(int) * (size_t)(s->n + 1));
        if (!*in_idx || !*head_idx) st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    if (st == HG_OK) {
        for (int i = 0; i < n; i++)
            for (int k = 0; k < nodes[i]->nin; k++)
                (*in_idx)[(*off)[i] + k] = ptrmap_get(&map, nodes[i]->in[k].node);
        for (int h = 0; h < s->n; h++) (*head_idx)[h] = ptrmap_get(&map, s->heads[h].node);
    }
    free(map.keys);
    free(map.vals);
    if (st != HG_OK) {
        free(*off);
        free(*in_idx);
        free(*head_idx);
        *off = *in_idx = *head_idx = NULL;
    }
    return st;
}

hg_status hg_snode_input_values(const hg_snode *nd, int i, hg_tensor **const *val, const int *off,
                                const int *in_idx, hg_tensor **ins)
{
    if (nd->nin > HG_MAX_IO) return hg_error(HG_ERR_VALUE, "%s: too many inputs", nd->op->name);
    for (int k = 0; k < nd->nin; k++) ins[k] = val[in_idx[off[i] + k]][nd->in[k].index];
    return HG_OK;
}

/* ---- JSON out ------------------------------------------------------------------------------- */

hg_status hg_symbol_compose(const hg_symbol *s, int n, const char *const *names,
                            const hg_symbol *const *with, hg_symbol **out)
{
    for (int i = 0; i < n; i++)
        if (!names[i] || !with[i] || with[i]->n != 1)
            return hg_error(HG_ERR_VALUE, "compose: argument %d must be one single-output symbol",
                            i);
    hg_snode **nodes = NULL, **copy = NULL;
    int count = 0;
    hg_status st = hg_symbol_topo(s, &nodes, &count);
    if (st != HG_OK) return st;
    hg_sentry *repl = calloc((size_t)count + 1, sizeof *repl);
    hg_sentry *heads = calloc((size_t)s->n + 1, sizeof *heads);
    copy = calloc((size_t)count + 1, sizeof *copy);
    if (!repl || !copy || !heads) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; st == HG_OK && i < count; i++) {
        hg_snode *nd = nodes[i];
        if (!nd->op) {
            repl[i] = (hg_sentry){nd, 0, 0};
            for (int k = 0; k < n; k++)
                if (strcmp(nd->name, names[k]) == 0) repl[i] = with[k]->heads[0];
            continue;
        }
        hg_sentry in_stack[8], *in = in_stack;
        if (nd->nin > 8 && !(in = malloc(sizeof *in * (size_t)nd->nin))) {
            st = hg_error(HG_ERR_MEMORY, "out of memory");
            break;
        }
        for (int k = 0; k < nd->nin; k++) {
            int pos = -1;
            for (int j = 0; j < i && pos < 0; j++)
                if (nodes[j] == nd->in[k].node) pos = j;
            hg_sentry src = repl[pos];
            in[k] = nodes[pos]->op ? (hg_sentry){src.node, nd->in[k].index, nd->in[k].version}
                                   : src;
        }
        st = hg_snode_new_op(nd->op, nd->name, nd->nattr, (const char *const *)nd->keys,
                             (const char *const *)nd->vals, nd->nin, in, &copy[i]);
        if (in != in_stack) free(in);
        if (st == HG_OK && nd->nsub)
            st = hg_snode_set_subgraphs(copy[i], nd->nsub, (const hg_symbol *const *)nd->sub);
        if (st == HG_OK && nd->origin) {
            size_t len = strlen(nd->origin) + 1;
            if ((copy[i]->origin = malloc(len))) memcpy(copy[i]->origin, nd->origin, len);
        }
        if (st == HG_OK) repl[i] = (hg_sentry){copy[i], 0, 0};
    }
    if (st == HG_OK) {
        for (int h = 0; h < s->n; h++) {
            int pos = -1;
            for (int j = 0; j < count && pos < 0; j++)
                if (nodes[j] == s->heads[h].node) pos = j;
            heads[h] = nodes[pos]->op ? (hg_sentry){repl[pos].node, s->heads[h].index, 0}
                                      : repl[pos];
        }
        st = hg_symbol_from_entries(s->n, heads, out);
    }
    for (int i = 0; copy && i < count; i++)
        if (copy[i]) node_release(copy[i]);
    free(copy);
    free(repl);
    free(heads);
    free(nodes);
    return st;
}

static void indent(hg_strbuf *sb, int level)
{
    hg_sb_put(sb, "\n", 1);
    for (int i = 0; i < level; i++) hg_sb_put(sb, "  ", 2);
}

/* An int array: one line when it has at most 10 numbers, else one number per line. */
static void int_array(hg_strbuf *sb, const int *v, int n, int level)
{
    if (n <= 10) {
        hg_sb_put(sb, "[", 1);
        for (int i = 0; i < n; i++) hg_sb_printf(sb, i ? ", %d" : "%d", v[i]);
        hg_sb_put(sb, "]", 1);
        return;
    }
    hg_sb_put(sb, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i) hg_sb_put(sb, ", ", 2);
        indent(sb, level + 1);
        hg_sb_printf(sb, "%d", v[i]);
    }
    indent(sb, level);
    hg_sb_put(sb, "]", 1);
}

static void entry_array(hg_strbuf *sb, const int *e, int n, int level)
{
    hg_sb_put(sb, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i) hg_sb_put(sb, ", ", 2);
        if (n > 10) indent(sb, level + 1);
        hg_sb_printf(sb, "[%d, %d, %d]", e[3 * i], e[3 * i + 1], e[3 * i + 2]);
    }
    if (n > 10) indent(sb, level);
    hg_sb_put(sb, "]", 1);
}

/* Writes s at indentation level b (0: the document; a subgraph nests inside its node). MXNet
 * writes the version attribute only on the document. */
static hg_status write_json(const hg_symbol *s, hg_strbuf *out, int b, bool top)
{
    hg_snode **nodes;
    int n;
    ptrmap map;
    HG_TRY(topo(s, &nodes, &n, &map));
    hg_strbuf sb = *out;
    int *tmp = malloc(sizeof(int) * (size_t)(3 * (s->n + 1) + n + 1 + 3 * 64));
    int tcap = 3 * (s->n + 1) + n + 1 + 3 * 64;
    hg_status st = tmp ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    hg_sb_puts(&sb, "{");
    indent(&sb, b + 1);
    hg_sb_puts(&sb, "\"nodes\": [");
    for (int i = 0; i < n && st == HG_OK; i++) {
        hg_snode *nd = nodes[i];
        if (i) hg_sb_put(&sb, ", ", 2);
        indent(&sb, b + 2);
        hg_sb_puts(&sb, "{");
        indent(&sb, b + 3);
        hg_sb_puts(&sb, "\"op\": ");
        hg_sb_json_string(&sb, nd->op ? nd->op->name : "null");
        hg_sb_put(&sb, ", ", 2);
        indent(&sb, b + 3);
        hg_sb_puts(&sb, "\"name\": ");
        hg_sb_json_string(&sb, nd->name);
        hg_sb_put(&sb, ", ", 2);
        if (nd->nattr) {
            indent(&sb, b + 3);
            hg_sb_puts(&sb, "\"attrs\": {");
            for (int k = 0; k < nd->nattr; k++) {
                if (k) hg_sb_put(&sb, ", ", 2);
                if (nd->nattr > 1) indent(&sb, b + 4);
                hg_sb_json_string(&sb, nd->keys[k]);
                hg_sb_puts(&sb, ": ");
                hg_sb_json_string(&sb, nd->vals[k]);
            }
            if (nd->nattr > 1) indent(&sb, b + 3);
            hg_sb_puts(&sb, "}, ");
        }
        indent(&sb, b + 3);
        hg_sb_puts(&sb, "\"inputs\": ");
        if (3 * nd->nin > tcap) {
            int *t = realloc(tmp, sizeof(int) * (size_t)(3 * nd->nin));
            if (!t) {
                st = hg_error(HG_ERR_MEMORY, "out of memory");
                break;
            }
            tmp = t;
            tcap = 3 * nd->nin;
        }
        for (int k = 0; k < nd->nin; k++) {
            tmp[3 * k] = ptrmap_get(&map, nd->in[k].node);
            tmp[3 * k + 1] = nd->in[k].index;
            tmp[3 * k + 2] = nd->in[k].version;
        }
        entry_array(&sb, tmp, nd->nin, b + 3);
        for (int k = 0; k < nd->nsub && st == HG_OK; k++) {
            if (k == 0) {
                hg_sb_put(&sb, ", ", 2);
                indent(&sb, b + 3);
                hg_sb_puts(&sb, "\"subgraphs\": [");
            } else {
                hg_sb_put(&sb, ", ", 2);
            }
            indent(&sb, b + 4);
            st = write_json(nd->sub[k], &sb, b + 4, false);
            if (k == nd->nsub - 1) {
                indent(&sb, b + 3);
                hg_sb_puts(&sb, "]");
            }
        }
        indent(&sb, b + 2);
        hg_sb_puts(&sb, "}");
    }
    if (st == HG_OK) {
        indent(&sb, b + 1);
        hg_sb_puts(&sb, "], ");
        /* arg_nodes, node_row_ptr and heads need up to n+1 and 3*heads ints. */
        int need = (n + 1) > 3 * s->n ? n + 1 : 3 * s->n;
        if (need > tcap) {
            int *t = realloc(tmp, sizeof(int) * (size_t)need);
            if (!t) st = hg_error(HG_ERR_MEMORY, "out of memory");
            else tmp = t;
        }
    }
    if (st == HG_OK) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (!nodes[i]->op) tmp[k++] = i;
        indent(&sb, b + 1);
        hg_sb_puts(&sb, "\"arg_nodes\": ");
        int_array(&sb, tmp, k, b + 1);
        hg_sb_put(&sb, ", ", 2);
        tmp[0] = 0;
        for (int i = 0; i < n; i++) tmp[i + 1] = tmp[i] + nodes[i]->nout;
        indent(&sb, b + 1);
        hg_sb_puts(&sb, "\"node_row_ptr\": ");
        int_array(&sb, tmp, n + 1, b + 1);
        hg_sb_put(&sb, ", ", 2);
        for (int h = 0; h < s->n; h++) {
            tmp[3 * h] = ptrmap_get(&map, s->heads[h].node);
            tmp[3 * h + 1] = s->heads[h].index;
            tmp[3 * h + 2] = 0;
        }
        indent(&sb, b + 1);
        hg_sb_puts(&sb, "\"heads\": ");
        entry_array(&sb, tmp, s->n, b + 1);
        if (top) {
            hg_sb_put(&sb, ", ", 2);
            indent(&sb, b + 1);
            hg_sb_printf(&sb, "\"attrs\": {\"mxnet_version\": [\"int\", %d]}", MXNET_VERSION);
        }
        indent(&sb, b);
        hg_sb_puts(&sb, "}");
    }
    free(tmp);
    free(nodes);
    free(map.keys);
    free(map.vals);
    *out = sb;
    return st;
}

hg_status hg_symbol_to_json(const hg_symbol *s, char **out)
{
    hg_strbuf sb = {0};
    hg_status st = write_json(s, &sb, 0, true);
    if (st == HG_OK && sb.oom) st = hg_error(HG_ERR_MEMORY, "out of memory writing JSON");
    if (st != HG_OK) {
        free(sb.buf);
        return st;
    }
    *out = sb.buf;
    return HG_OK;
}

/* ---- JSON in -------------------------------------------------------------------------------- */

static hg_status bad_json(const char *what, int node)
{
    if (node >= 0) return hg_error(HG_ERR_IO, "invalid symbol JSON: node %d: %s", node, what);
    return hg_error(HG_ERR_IO, "invalid symbol JSON: %s", what);
}

static bool json_int(const hg_json *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!v || v->type != HG_JSON_NUMBER || v->num != (double)(int64_t)v->num) return false;
    int64_t x = (int64_t)v->num;
    if (x < lo || x > hi) return false;
    *out = x;
    return true;
}

/* Reads an [node, index(, version)] entry referring to an earlier node. */
static hg_status read_entry(const hg_json *e, hg_snode **nodes, int limit, int where,
                            hg_sentry *out)
{
    int64_t id, idx, ver = 0;
    if (!e || e->type != HG_JSON_ARRAY || (e->n != 2 && e->n != 3) ||
        !json_int(e->items[0], 0, limit - 1, &id) || !json_int(e->items[1], 0, 1 << 20, &idx) ||
        (e->n == 3 && !json_int(e->items[2], 0, 1 << 30, &ver)))
        return bad_json("an input entry must be [node_id, output_index, version] referring to an "
                        "earlier node",
                        where);
    if (idx >= nodes[id]->nout)
        return bad_json("input refers to an output index the node does not have", where);
    *out = (hg_sentry){nodes[id], (int32_t)idx, (int32_t)ver};
    return HG_OK;
}

/* Collects the attributes of a node from "attrs", "attr" (older) and "param" (oldest). */
static hg_status read_attrs(const hg_json *jn, int where, int *nattr, const char ***keys,
                            const char ***vals)
{
    static const char *const names[] = {"attrs", "attr", "param"};
    int total = 0;
    for (int k = 0; k < 3; k++) {
        const hg_json *a = hg_json_get(jn, names[k]);
        if (!a) continue;
        if (a->type != HG_JSON_OBJECT) return bad_json("attrs must be an object", where);
        total += a->n;
    }
    *keys = calloc((size_t)(total ? total : 1), sizeof(char *));
    *vals = calloc((size_t)(total ? total : 1), sizeof(char *));
    if (!*keys || !*vals) return hg_error(HG_ERR_MEMORY, "out of memory");
    int n = 0;
    for (int k = 0; k < 3; k++) {
        const hg_json *a = hg_json_get(jn, names[k]);
        for (int i = 0; a && i < a->n; i++) {
            if (a->items[i]->type != HG_JSON_STRING)
                return bad_json("attribute values must be strings", where);
            bool dup = false; /* "param" merges without overwriting */
            for (int j = 0; j < n; j++) dup |= strcmp((*keys)[j], a->keys[i]) == 0;
            if (dup) continue;
            (*keys)[n] = a->keys[i];
            (*vals)[n] = a->items[i]->str;
            n++;
        }
    }
    *nattr = n;
    return HG_OK;
}

static hg_status read_doc(const hg_json *doc, int depth, hg_symbol **out);

static hg_status load_node(const hg_json *jn, hg_snode **nodes, int i, int depth, hg_snode **out)
{
    static const char *const allowed[] = {"op",
                                          "name",
                                          "attrs",
                                          "attr",
                                          "param",
                                          "inputs",
                                          "control_deps",
                                          "subgraphs",
                                          "backward_source_id",
                                          NULL};
    if (!jn || jn->type != HG_JSON_OBJECT) return bad_json("a node must be an object", i);
    for (int k = 0; k < jn->n; k++) {
        bool ok = false;
        for (int a = 0; allowed[a]; a++) ok |= strcmp(jn->keys[k], allowed[a]) == 0;
        if (!ok)
            return hg_error(HG_ERR_IO, "invalid symbol JSON: node %d: unknown field '%s'", i,
                            jn->keys[k]);
    }
    const hg_json *op = hg_json_get(jn, "op"), *name = hg_json_get(jn, "name"),
                  *inputs = hg_json_get(jn, "inputs"), *sub = hg_json_get(jn, "subgraphs");
    if (!op || op->type != HG_JSON_STRING || !name || name->type != HG_JSON_STRING || !inputs ||
        inputs->type != HG_JSON_ARRAY)
        return bad_json("needs string 'op', string 'name' and array 'inputs'", i);
    if (sub && (sub->type != HG_JSON_ARRAY || (sub->n > 0 && strcmp(op->str, "null") == 0)))
        return bad_json("'subgraphs' must be an array of graphs on an op node", i);
    if (depth > 16) return bad_json("subgraphs nested more than 16 deep", i);
    const char **keys = NULL, **vals = NULL;
    int nattr = 0;
    hg_sentry *in = NULL;
    hg_symbol *sym = NULL, **ins = NULL;
    hg_status st = read_attrs(jn, i, &nattr, &keys, &vals);
    if (st == HG_OK && strcmp(op->str, "null") == 0) {
        if (inputs->n) st = bad_json("a variable has no inputs", i);
        else st = hg_symbol_var(name->str, nattr, keys, vals, &sym);
    } else if (st == HG_OK) {
        const hg_op_def *def = hg_registry_find(op->str);
        if (!def) {
            st = hg_error(HG_ERR_IO,
                          "Failed loading Op %s of type %s: operator is not "
                          "registered in hybridgluon",
                          name->str, op->str);
        } else {
            in = calloc((size_t)(inputs->n ? inputs->n : 1), sizeof *in);
            ins = calloc((size_t)(inputs->n ? inputs->n : 1), sizeof *ins);
            if (!in || !ins) st = hg_error(HG_ERR_MEMORY, "out of memory");
            for (int k = 0; st == HG_OK && k < inputs->n; k++) {
                st = read_entry(inputs->items[k], nodes, i, i, &in[k]);
                if (st == HG_OK && !(ins[k] = symbol_alloc(1)))
                    st = hg_error(HG_ERR_MEMORY, "out of memory");
                if (st == HG_OK) {
                    ins[k]->heads[0] = (hg_sentry){in[k].node, in[k].index, 0};
                    atomic_fetch_add(&in[k].node->refcount, 1);
                }
            }
            int nsub = sub ? sub->n : 0;
            hg_symbol **subs = calloc((size_t)(nsub ? nsub : 1), sizeof *subs);
            if (!subs && st == HG_OK) st = hg_error(HG_ERR_MEMORY, "out of memory");
            for (int k = 0; st == HG_OK && k < nsub; k++) {
                st = read_doc(sub->items[k], depth + 1, &subs[k]);
                if (st != HG_OK)
                    hg_error_prefix(st, "subgraph %d of node %d ('%s'): ", k, i, name->str);
            }
            if (st == HG_OK)
                st = hg_symbol_op_sub(def, name->str, nattr, keys, vals, inputs->n,
                                      (const hg_symbol *const *)ins, nsub,
                                      (const hg_symbol *const *)subs, &sym);
            for (int k = 0; subs && k < nsub; k++) hg_symbol_free(subs[k]);
            free(subs);
            if (st == HG_OK) /* keep the versions the file recorded */
                for (int k = 0; k < inputs->n; k++)
                    sym->heads[0].node->in[k].version = in[k].version;
            if (st != HG_OK && def)
                hg_error_prefix(st, "Failed loading Op %s of type %s: ", name->str, op->str);
            for (int k = 0; ins && k < inputs->n; k++) hg_symbol_free(ins[k]);
        }
    }
    if (st == HG_OK) {
        *out = sym->heads[0].node;
        atomic_fetch_add(&(*out)->refcount, 1);
    }
    hg_symbol_free(sym);
    free(in);
    free(ins);
    free(keys);
    free(vals);
    return st;
}

hg_status hg_symbol_from_json(const char *text, size_t len, hg_symbol **out)
{
    if (!text || !out) return hg_error(HG_ERR_VALUE, "hg_symbol_from_json: NULL argument");
    hg_json *doc;
    HG_TRY(hg_json_parse(text, len, &doc));
    hg_status st = read_doc(doc, 0, out);
    hg_json_free(doc);
    return st;
}

/* One graph: the document, or a node's subgraph (depth > 0). */
static hg_status read_doc(const hg_json *doc, int depth, hg_symbol **out)
{
    static const char *const allowed[] = {"nodes", "arg_nodes", "node_row_ptr",
                                          "heads", "attrs",     NULL};
    hg_status st = HG_OK;
    hg_snode **nodes = NULL;
    int n = 0;
    hg_symbol *s = NULL;
    const hg_json *jnodes = hg_json_get(doc, "nodes"), *jheads = hg_json_get(doc, "heads"),
                  *jargs = hg_json_get(doc, "arg_nodes");
    if (doc->type != HG_JSON_OBJECT) st = bad_json("the document must be an object", -1);
    for (int k = 0; st == HG_OK && k < doc->n; k++) {
        bool ok = false;
        for (int a = 0; allowed[a]; a++) ok |= strcmp(doc->keys[k], allowed[a]) == 0;
        if (!ok) st = hg_error(HG_ERR_IO, "invalid symbol JSON: unknown field '%s'", doc->keys[k]);
    }
    if (st == HG_OK && (!jnodes || jnodes->type != HG_JSON_ARRAY || !jheads ||
                        jheads->type != HG_JSON_ARRAY || !jargs || jargs->type != HG_JSON_ARRAY))
        st = bad_json("needs arrays 'nodes', 'arg_nodes' and 'heads'", -1);
    if (st == HG_OK && !(nodes = calloc((size_t)(jnodes->n ? jnodes->n : 1), sizeof *nodes)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; st == HG_OK && i < jnodes->n; i++) {
        st = load_node(jnodes->items[i], nodes, i, depth, &nodes[i]);
        if (st == HG_OK) n++;
    }
    for (int k = 0; st == HG_OK && k < jargs->n; k++) {
        int64_t id;
        if (!json_int(jargs->items[k], 0, n - 1, &id) || nodes[id]->op)
            st = bad_json("arg_nodes entries must be indices of variable nodes", -1);
    }
    if (st == HG_OK && !(s = symbol_alloc(jheads->n)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (s) s->n = 0;
    for (int h = 0; st == HG_OK && h < jheads->n; h++) {
        st = read_entry(jheads->items[h], nodes, n, -1, &s->heads[h]);
        if (st == HG_OK) {
            atomic_fetch_add(&s->heads[h].node->refcount, 1);
            s->heads[h].version = 0;
            s->n++;
        }
    }
    for (int i = 0; i < n; i++) node_release(nodes[i]);
    free(nodes);
    if (st != HG_OK) {
        hg_symbol_free(s);
        return st;
    }
    *out = s;
    return HG_OK;
}
