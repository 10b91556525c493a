/* Plan creation, inference and the run loop (see plan.h). */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hg_plan {
    hg_symbol *sym;     /* keeps the nodes alive */
    hg_snode **nodes;
    int n;
    int *off, *in_idx;  /* inputs of node i: in_idx[off[i]..off[i+1]) (topological positions) */
    int *entry;         /* first value slot of node i (a node has nout slots) */
    int nentries;
    int *var_slot;      /* node i is a variable: its input slot, else -1 */
    int ninputs;
    int *head_entry, nheads;
    int *last_use;      /* value slot -> index of the last node reading it (n: an output) */
    hg_meta *meta;      /* per value slot */
    hg_meta *sig;       /* input metas the current inference was done for */
    bool inferred;
    hg_plan_stats stats;
};

void hg_plan_free(hg_plan *p)
{
    if (!p) return;
    hg_symbol_free(p->sym);
    free(p->nodes);
    free(p->off);
    free(p->in_idx);
    free(p->entry);
    free(p->var_slot);
    free(p->head_entry);
    free(p->last_use);
    free(p->meta);
    free(p->sig);
    free(p);
}

int hg_plan_num_outputs(const hg_plan *p) { return p->nheads; }

hg_status hg_plan_create(const hg_symbol *s, int ninputs, const char *const *input_names,
                         hg_plan **out)
{
    if (!s || !out || (ninputs && !input_names))
        return hg_error(HG_ERR_VALUE, "hg_plan_create: NULL argument");
    hg_plan *p = calloc(1, sizeof *p);
    if (!p) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = hg_symbol_group(1, &s, &p->sym);
    int *head_pos = NULL;
    if (st == HG_OK) st = hg_symbol_topo(p->sym, &p->nodes, &p->n);
    if (st == HG_OK)
        st = hg_symbol_topo_positions(p->sym, p->nodes, p->n, &p->off, &p->in_idx, &head_pos);
    if (st == HG_OK) {
        p->entry = malloc(sizeof(int) * (size_t)(p->n + 1));
        p->var_slot = malloc(sizeof(int) * (size_t)(p->n + 1));
        p->head_entry = malloc(sizeof(int) * (size_t)(p->sym->n + 1));
        p->sig = calloc((size_t)(ninputs + 1), sizeof(hg_meta));
        if (!p->entry || !p->var_slot || !p->head_entry || !p->sig)
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
        p->last_use = malloc(sizeof(int) * (size_t)(e + 1));
        if (!p->meta || !p->last_use) st = hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; st == HG_OK && i < p->n; i++) {
        p->var_slot[i] = -1;
        if (p->nodes[i]->op) continue;
        for (int k = 0; k < ninputs; k++) {
            if (input_names[k] && strcmp(input_names[k], p->nodes[i]->name) == 0) {
                p->var_slot[i] = k;
                break;
            }
        }
        if (p->var_slot[i] < 0)
            st = hg_error(HG_ERR_VALUE, "the graph needs input '%s', which was not given",
                          p->nodes[i]->name);
    }
    if (st == HG_OK) {
        for (int e = 0; e < p->nentries; e++) p->last_use[e] = -1;
        for (int i = 0; i < p->n; i++)
            for (int k = 0; k < p->nodes[i]->nin; k++) {
                int src = p->entry[p->in_idx[p->off[i] + k]] + p->nodes[i]->in[k].index;
                p->last_use[src] = i;
            }
        for (int h = 0; h < p->nheads; h++) p->last_use[p->head_entry[h]] = p->n;
    }
    free(head_pos);
    if (st != HG_OK) {
        hg_plan_free(p);
        return st;
    }
    *out = p;
    return HG_OK;
}

static bool meta_known(const hg_meta *m)
{
    if (m->ndim < 0) return false;
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] < 0) return false;
    return true;
}

static hg_status infer_node(hg_plan *p, int i, bool partial)
{
    hg_snode *nd = p->nodes[i];
    hg_meta im_stack[8], *im = im_stack;
    if (nd->nin > 8 && !(im = malloc(sizeof(hg_meta) * (size_t)nd->nin)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    /* An unknown input produced by another op means an earlier rule could not decide: then
     * this rule's failure is not an error yet (partial inference). Unknown variables are
     * parameters the rule is expected to fill in, so its errors about them are real. */
    bool upstream_unknown = false;
    for (int k = 0; k < nd->nin; k++) {
        int src = p->in_idx[p->off[i] + k];
        im[k] = p->meta[p->entry[src] + nd->in[k].index];
        upstream_unknown |= !meta_known(&im[k]) && p->nodes[src]->op != NULL;
    }
    hg_meta *om = &p->meta[p->entry[i]];
    for (int k = 0; k < nd->nout; k++) {
        om[k].ndim = -1;
        om[k].dtype = nd->nin ? im[0].dtype : HG_DTYPE_F32;
    }
    hg_status st = nd->op->infer(nd->op, nd->attrs, nd->nin, im, nd->nout, om);
    if (st == HG_OK) {
        /* Unknown inputs the rule filled in (weights from data) flow back to their values. */
        for (int k = 0; k < nd->nin; k++) {
            hg_meta *src = &p->meta[p->entry[p->in_idx[p->off[i] + k]] + nd->in[k].index];
            if (!meta_known(src) && meta_known(&im[k])) *src = im[k];
        }
    } else if (partial && upstream_unknown) {
        hg_error_clear(); /* cannot decide yet: leave the outputs unknown */
        st = HG_OK;
    } else {
        char shapes[HG_ERROR_MAX / 2], buf[HG_SHAPE_STR];
        size_t len = 0;
        shapes[0] = '\0';
        for (int k = 0; k < nd->nin && len < sizeof shapes - HG_SHAPE_STR; k++)
            len += (size_t)snprintf(shapes + len, sizeof shapes - len, "%s%s", k ? ", " : "",
                                    im[k].ndim < 0 ? "?" : hg_shape_str(buf, im[k].ndim,
                                                                       im[k].shape));
        hg_error_prefix(st, "Error in operator %s (%s), input shapes (%s): ", nd->name,
                        nd->op->name, shapes);
    }
    if (im != im_stack) free(im);
    return st;
}

hg_status hg_plan_infer(hg_plan *p, hg_meta *in, hg_meta *out, bool partial)
{
    for (int e = 0; e < p->nentries; e++) p->meta[e].ndim = -1;
    for (int i = 0; i < p->n; i++)
        if (p->var_slot[i] >= 0) p->meta[p->entry[i]] = in[p->var_slot[i]];
    /* Two sweeps: the second picks up what the first filled in backwards (an unknown weight
     * shape completed by its consumer feeds nodes that come before that consumer). */
    for (int sweep = 0; sweep < 2; sweep++) {
        for (int i = 0; i < p->n; i++) {
            if (!p->nodes[i]->op) continue;
            hg_status st = infer_node(p, i, partial || sweep == 0);
            if (st != HG_OK) {
                p->inferred = false;
                return st;
            }
        }
    }
    for (int i = 0; i < p->n; i++)
        if (p->var_slot[i] >= 0) in[p->var_slot[i]] = p->meta[p->entry[i]];
    for (int h = 0; h < p->nheads; h++) {
        out[h] = p->meta[p->head_entry[h]];
        if (!partial && !meta_known(&out[h]))
            return hg_error(HG_ERR_VALUE, "cannot infer the shape of output %d", h);
    }
    return HG_OK;
}

static bool same_signature(const hg_plan *p, hg_tensor *const *inputs)
{
    if (!p->inferred) return false;
    for (int k = 0; k < p->ninputs; k++) {
        const hg_meta *m = &p->sig[k];
        if (m->dtype != inputs[k]->dtype ||
            !hg_shape_equal(m->ndim, m->shape, inputs[k]->ndim, inputs[k]->shape))
            return false;
    }
    return true;
}

hg_status hg_plan_run(hg_plan *p, hg_tensor *const *inputs, bool is_train, hg_tensor **outputs)
{
    if (!p || (p->ninputs && !inputs) || !outputs)
        return hg_error(HG_ERR_VALUE, "hg_plan_run: NULL argument");
    for (int k = 0; k < p->ninputs; k++)
        if (!inputs[k]) return hg_error(HG_ERR_VALUE, "hg_plan_run: input %d is NULL", k);
    if (!same_signature(p, inputs)) {
        hg_meta *in = malloc(sizeof(hg_meta) * (size_t)(p->ninputs + 1));
        hg_meta *out = malloc(sizeof(hg_meta) * (size_t)(p->nheads + 1));
        hg_status st = (in && out) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
        for (int k = 0; st == HG_OK && k < p->ninputs; k++) in[k] = hg_meta_of(inputs[k]);
        if (st == HG_OK) st = hg_plan_infer(p, in, out, false);
        for (int k = 0; st == HG_OK && k < p->ninputs; k++) {
            hg_meta given = hg_meta_of(inputs[k]);
            if (!hg_shape_equal(in[k].ndim, in[k].shape, given.ndim, given.shape)) {
                char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
                st = hg_error(HG_ERR_VALUE, "input %d has shape %s but the graph needs %s", k,
                              hg_shape_str(a, given.ndim, given.shape),
                              hg_shape_str(b, in[k].ndim, in[k].shape));
            }
        }
        free(in);
        free(out);
        if (st != HG_OK) return st;
        for (int k = 0; k < p->ninputs; k++) p->sig[k] = hg_meta_of(inputs[k]);
        p->inferred = true;
    }
    hg_tensor **val = calloc((size_t)(p->nentries + 1), sizeof *val);
    if (!val) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = HG_OK;
    hg_tensor *ins_stack[16], **ins = ins_stack;
    int kernels = 0;
    int64_t live = 0, peak = 0, total = 0;
    for (int i = 0; i < p->n && st == HG_OK; i++) {
        hg_snode *nd = p->nodes[i];
        if (!nd->op) {
            val[p->entry[i]] = inputs[p->var_slot[i]];
            hg_tensor_retain(val[p->entry[i]]);
            continue;
        }
        if (nd->nin > 16 && ins == ins_stack) {
            int maxin = 0;
            for (int j = 0; j < p->n; j++)
                maxin = p->nodes[j]->nin > maxin ? p->nodes[j]->nin : maxin;
            if (!(ins = malloc(sizeof *ins * (size_t)maxin))) {
                st = hg_error(HG_ERR_MEMORY, "out of memory");
                break;
            }
        }
        for (int k = 0; k < nd->nin; k++)
            ins[k] = val[p->entry[p->in_idx[p->off[i] + k]] + nd->in[k].index];
        st = hg_op_run(nd->op, nd->attrs, is_train, nd->nin, ins, nd->nout, &val[p->entry[i]]);
        if (st != HG_OK) {
            hg_error_prefix(st, "node '%s' (%s): ", nd->name, nd->op->name);
            break;
        }
        kernels++;
        for (int k = 0; k < nd->nout; k++) {
            int64_t b = (int64_t)hg_tensor_nbytes(val[p->entry[i] + k]);
            live += b;
            total += b;
            if (p->last_use[p->entry[i] + k] < 0) { /* a hidden output nobody reads */
                live -= b;
                hg_tensor_free(val[p->entry[i] + k]);
                val[p->entry[i] + k] = NULL;
            }
        }
        peak = live > peak ? live : peak;
        /* Release values whose last reader was this node. */
        for (int k = 0; k < nd->nin; k++) {
            int src = p->entry[p->in_idx[p->off[i] + k]] + nd->in[k].index;
            if (p->last_use[src] == i && val[src]) {
                if (p->nodes[p->in_idx[p->off[i] + k]]->op)
                    live -= (int64_t)hg_tensor_nbytes(val[src]);
                hg_tensor_free(val[src]);
                val[src] = NULL;
            }
        }
    }
    if (ins != ins_stack) free(ins);
    if (st == HG_OK) {
        for (int h = 0; h < p->nheads; h++) {
            hg_tensor *v = val[p->head_entry[h]];
            bool shared = v == NULL;
            for (int g = 0; g < h; g++) shared |= outputs[g] == v;
            bool is_input = false;
            for (int k = 0; k < p->ninputs; k++) is_input |= inputs[k] == v;
            if (shared || is_input || !v) { /* outputs are always fresh arrays */
                hg_tensor *c = NULL;
                st = v ? hg_tensor_new(v->ndim, v->shape, v->dtype, &c)
                       : hg_error(HG_ERR_INTERNAL, "output %d was released early", h);
                if (st != HG_OK) {
                    for (int g = 0; g < h; g++) {
                        hg_tensor_free(outputs[g]);
                        outputs[g] = NULL;
                    }
                    break;
                }
                memcpy(hg_data(c), hg_data(v), hg_tensor_nbytes(v));
                outputs[h] = c;
            } else {
                hg_tensor_retain(v);
                outputs[h] = v;
            }
        }
        p->stats.kernels = kernels;
        p->stats.peak_bytes = peak;
        p->stats.total_bytes = total;
    }
    for (int e = 0; e < p->nentries; e++) hg_tensor_free(val[e]);
    free(val);
    return st;
}

void hg_plan_get_stats(const hg_plan *p, hg_plan_stats *st) { *st = p->stats; }
