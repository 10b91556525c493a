/* Lowering one signature's graph to steps: element-wise fusion decides the steps, the memory
 * planner (memplan.c) places their values in one arena, and the statistics are counted from the
 * result. Each is its own pass; hg_plan_lower runs them in that order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "exec/memplan.h"
#include "ops/rnn.h"

static int in_entry(const hg_plan *p, int i, int k)
{
    return p->entry[p->in_idx[p->off[i] + k]] + p->nodes[i]->in[k].index;
}

/* ---- fusion ---------------------------------------------------------------------------- */

/* A node the tile loop can run: the generic element-wise driver's op (tile functions, no
 * kernel of its own), float32/float64, every input either the output's size or one element. */
static bool fusable(const hg_plan *p, int i)
{
    const hg_snode *nd = p->nodes[i];
    if (!p->needed[i] || !nd->op || nd->op->forward || nd->nout != 1) return false;
    if (nd->nin < 1 || nd->nin > 2 || nd->nin != nd->op->ew_arity) return false;
    const hg_meta *o = &p->meta[p->entry[i]];
    if (o->dtype != HG_DTYPE_F32 && o->dtype != HG_DTYPE_F64) return false;
    if (!nd->op->ew[o->dtype]) return false;
    int64_t size = hg_shape_size(o->ndim, o->shape);
    if (size == 0) return false;
    for (int k = 0; k < nd->nin; k++) {
        const hg_meta *m = &p->meta[in_entry(p, i, k)];
        int64_t s = hg_shape_size(m->ndim, m->shape);
        if (m->dtype != o->dtype || (s != size && s != 1)) return false;
    }
    return true;
}

/* group[i]: the root (last node) of node i's fused group, -1 when not fusable. A producer joins
 * its consumer's group when the consumer is its only reader and the sizes agree. Each root
 * keeps a chain of its members (first[root], then next[member]), so a merge relabels the
 * (at most HG_FUSE_MAX) members it moves instead of scanning the graph. */
static void find_groups(const hg_plan *p, int *group, int *gsize, int *first, int *next)
{
    for (int i = 0; i < p->n; i++) {
        group[i] = (p->flags & HG_PLAN_NO_FUSION) || !fusable(p, i) ? -1 : i;
        gsize[i] = group[i] >= 0 ? 1 : 0;
        first[i] = i;
        next[i] = -1;
    }
    if (p->flags & HG_PLAN_NO_FUSION) return;
    for (int i = 0; i < p->n; i++) {
        if (group[i] < 0) continue;
        const hg_meta *o = &p->meta[p->entry[i]];
        int64_t size = hg_shape_size(o->ndim, o->shape);
        for (int k = 0; k < p->nodes[i]->nin; k++) {
            int src = p->in_idx[p->off[i] + k], e = in_entry(p, i, k);
            if (group[src] < 0 || p->uses[e] != 1 || p->fed_slot[e] >= 0) continue;
            const hg_meta *m = &p->meta[e];
            if (hg_shape_size(m->ndim, m->shape) != size) continue;
            int from = group[src], to = group[i];
            if (from == to || gsize[from] + gsize[to] > HG_FUSE_MAX) continue;
            int j = first[from];
            for (;; j = next[j]) {
                group[j] = to;
                if (next[j] < 0) break;
            }
            next[j] = first[to];
            first[to] = first[from];
            gsize[to] += gsize[from];
            gsize[from] = 0;
        }
    }
}

void hg_plan_clear(hg_plan *p)
{
    if (p->vt)
        for (int e = 0; e < p->nentries; e++) hg_tensor_free(p->vt[e]);
    free(p->vt);
    free(p->cur);
    free(p->head_owner);
    free(p->alias_e);
    p->alias_e = NULL;
    p->nalias = 0;
    hg_fold_prep_free(p); /* before the steps: it counts them */
    free(p->steps);
    free(p->sin);
    free(p->sout);
    free(p->gnodes);
    free(p->gin);
    p->vt = p->cur = NULL;
    p->head_owner = p->sin = p->sout = p->gnodes = p->gin = NULL;
    p->steps = NULL;
    p->nsteps = 0;
    p->lowered = false;
}

/* Step workspace of node i's op. */
static size_t node_workspace(const hg_plan *p, int i)
{
    const hg_op_def *op = p->nodes[i]->op;
    if (!op->workspace) return 0;
    hg_meta im[HG_MAX_IO];
    int nin = p->nodes[i]->nin < HG_MAX_IO ? p->nodes[i]->nin : HG_MAX_IO;
    for (int k = 0; k < nin; k++) im[k] = p->meta[in_entry(p, i, k)];
    size_t ws = op->workspace(p->nodes[i]->attrs, nin, im);
    return (ws + HG_PLAN_ALIGN - 1) / HG_PLAN_ALIGN * HG_PLAN_ALIGN;
}

/* The members of every group in topological order: those of root r are
 * list[start[r]..start[r + 1]) (a counting sort of the labels; start has n + 1 entries). */
static void group_members(const hg_plan *p, const int *group, int *start, int *list)
{
    for (int i = 0; i <= p->n; i++) start[i] = 0;
    for (int i = 0; i < p->n; i++)
        if (group[i] >= 0) start[group[i] + 1]++;
    for (int i = 0; i < p->n; i++) start[i + 1] += start[i];
    for (int i = 0; i < p->n; i++)
        if (group[i] >= 0) list[start[group[i]]++] = i;
    for (int i = p->n; i > 0; i--) start[i] = start[i - 1]; /* back to each bucket's start */
    start[0] = 0;
}

/* For each group root: an op (with its own kernel, one output read only by the group, of the
 * group's size) that the step runs first so the group works on its output while it is in
 * cache: conv/FC + bias + activation. producer[r] = -1 when none; taken[p] marks the ops. */
static void find_producers(const hg_plan *p, const int *group, const int *mstart, const int *mlist,
                           int *producer, bool *taken)
{
    for (int r = 0; r < p->n; r++) {
        producer[r] = -1;
        if (group[r] != r) continue;
        const hg_meta *o = &p->meta[p->entry[r]];
        for (int m = mstart[r]; m < mstart[r + 1] && producer[r] < 0; m++) {
            int j = mlist[m];
            for (int k = 0; k < p->nodes[j]->nin && producer[r] < 0; k++) {
                int src = p->in_idx[p->off[j] + k], e = in_entry(p, j, k);
                const hg_snode *pn = p->nodes[src];
                if (!pn->op || !p->needed[src] || group[src] >= 0 || taken[src] ||
                    !pn->op->forward || pn->nout != 1 || p->uses[e] != 1 || p->fed_slot[e] >= 0 ||
                    !hg_plan_same_size(&p->meta[e], o))
                    continue;
                producer[r] = src;
                taken[src] = true;
            }
        }
    }
}

/* RNN nodes fed by a _rnn_param_concat that nothing else reads, whose inputs are exactly the
 * layer's weight and bias blocks: split_of[rnn] = the concat (taken: it never runs), -1
 * elsewhere. Training plans keep the vector when the backward reads it (it is then an output
 * of the forward plan, so read twice). */
static void find_splits(const hg_plan *p, const int *group, bool *taken, int *split_of)
{
    hg_meta pm[64];
    for (int i = 0; i < p->n; i++) {
        const hg_snode *nd = p->nodes[i];
        if (!p->needed[i] || group[i] >= 0 || taken[i] || !nd->op || nd->nin < 2 ||
            strcmp(nd->op->name, "RNN") != 0)
            continue;
        int q = p->in_idx[p->off[i] + 1], e = in_entry(p, i, 1);
        const hg_snode *c = p->nodes[q];
        if (!c->op || strcmp(c->op->name, "_rnn_param_concat") != 0 || !p->needed[q] ||
            group[q] >= 0 || taken[q] || p->uses[e] != 1 || p->fed_slot[e] >= 0 || c->nin > 64)
            continue;
        int dim = hg_attr_index(c->op, "dim");
        if (dim < 0) continue;
        for (int k = 0; k < c->nin; k++) pm[k] = p->meta[in_entry(p, q, k)];
        if (!hg_rnn_split_ok(nd->attrs, &p->meta[in_entry(p, i, 0)], c->attrs->v[dim].i, c->nin,
                             pm))
            continue;
        split_of[i] = q;
        taken[q] = true;
    }
}

/* Where the next step's inputs and outputs go in p->sin / p->sout / p->gnodes. */
typedef struct cursor {
    int ni, no, ng;
} cursor;

/* A convolution and the BatchNorm after it (node i, fold_of q): folded in inference. */
static void step_fold(hg_plan *p, hg_pstep *s, int i, int q, cursor *c)
{
    s->producer = q;
    s->fold = true;
    s->count = 1;
    s->pnin = p->nodes[q]->nin;
    for (int k = 0; k < s->pnin; k++) p->sin[c->ni++] = in_entry(p, q, k);
    for (int k = 1; k < p->nodes[i]->nin; k++) p->sin[c->ni++] = in_entry(p, i, k);
    s->nin = c->ni - s->in_base;
    p->sout[c->no++] = p->entry[q];
    for (int k = 0; k < p->nodes[i]->nout; k++) p->sout[c->no++] = p->entry[i] + k;
    s->nout = 1 + p->nodes[i]->nout;
    s->ws_bytes = hg_fold_workspace(p, q);
}

/* An RNN (node i) on the arrays of the concat q before it (find_splits). */
static void step_split(hg_plan *p, hg_pstep *s, int i, int q, cursor *c)
{
    s->count = 1;
    s->producer = q;
    s->split = p->nodes[q]->nin;
    p->sin[c->ni++] = in_entry(p, i, 0);
    for (int k = 0; k < s->split; k++) p->sin[c->ni++] = in_entry(p, q, k);
    for (int k = 2; k < p->nodes[i]->nin; k++) p->sin[c->ni++] = in_entry(p, i, k);
    s->nin = c->ni - s->in_base;
    s->nout = p->nodes[i]->nout;
    for (int k = 0; k < s->nout; k++) p->sout[c->no++] = p->entry[i] + k;
    s->ws_bytes = node_workspace(p, i);
}

static void step_plain(hg_plan *p, hg_pstep *s, int i, cursor *c)
{
    s->count = 1;
    s->nin = p->nodes[i]->nin;
    s->nout = p->nodes[i]->nout;
    for (int k = 0; k < s->nin; k++) p->sin[c->ni++] = in_entry(p, i, k);
    for (int k = 0; k < s->nout; k++) p->sout[c->no++] = p->entry[i] + k;
    s->ws_bytes = node_workspace(p, i);
}

/* The inputs of fused node gnodes[g] (group root r): from inside the group as a local index,
 * from outside as a value id, each outside value once among the step's inputs. */
static void group_inputs(hg_plan *p, hg_pstep *s, const int *group, int r, int g, int pe, cursor *c)
{
    int j = p->gnodes[g];
    for (int k = 0; k < 2; k++) p->gin[2 * g + k] = 0;
    for (int k = 0; k < p->nodes[j]->nin; k++) {
        int src = p->in_idx[p->off[j] + k], e = in_entry(p, j, k), local = -1;
        for (int q = s->first; q < g && group[src] == r; q++)
            if (p->gnodes[q] == src) local = q - s->first;
        if (local >= 0) {
            p->gin[2 * g + k] = -(1 + local);
            continue;
        }
        p->gin[2 * g + k] = e;
        bool seen = e == pe;
        for (int q = s->in_base + (pe >= 0 ? s->pnin : 0); q < c->ni; q++) seen |= p->sin[q] == e;
        if (!seen) p->sin[c->ni++] = e;
    }
}

/* A fused group (root i): its nodes in topological order, inputs from outside deduplicated;
 * with a producer, that op's inputs come first and its output is the step's first. */
static void step_group(hg_plan *p, hg_pstep *s, int i, const int *group, const int *mstart,
                       const int *mlist, int producer, cursor *c)
{
    int pe = -1;
    if (producer >= 0) {
        s->producer = producer;
        s->pnin = p->nodes[producer]->nin;
        for (int k = 0; k < s->pnin; k++) p->sin[c->ni++] = in_entry(p, producer, k);
        pe = p->entry[producer];
        p->sout[c->no++] = pe;
        s->ws_bytes = node_workspace(p, producer);
    }
    s->first = c->ng;
    for (int m = mstart[i]; m < mstart[i + 1]; m++) p->gnodes[c->ng++] = mlist[m];
    s->count = c->ng - s->first;
    s->nout = pe >= 0 ? 2 : 1;
    p->sout[c->no++] = p->entry[i];
    for (int g = s->first; g < c->ng; g++) group_inputs(p, s, group, i, g, pe, c);
    s->nin = c->ni - s->in_base;
}

static bool post_of_node(const hg_plan *p, int j, hg_post *po);

/* Builds the steps (fusion decided) into p; returns HG_OK or a memory error. */
static hg_status build_steps(hg_plan *p, const int *group, const int *mstart, const int *mlist,
                             const int *producer, const bool *taken, const int *fold_of,
                             const int *split_of, const int *post_of, const bool *is_post)
{
    int nin_total = 0, nout_total = 0, nsteps = 0, ngn = 0;
    for (int i = 0; i < p->n; i++) {
        if (!p->needed[i]) continue;
        nin_total += p->nodes[i]->nin;
        nout_total += p->nodes[i]->nout;
        ngn += group[i] >= 0;
        nsteps += (group[i] < 0 && !taken[i]) || group[i] == i;
    }
    p->steps = calloc((size_t)nsteps + 1, sizeof(hg_pstep));
    p->sin = malloc(sizeof(int) * (size_t)(nin_total + 1));
    p->sout = malloc(sizeof(int) * (size_t)(nout_total + 1));
    p->gnodes = malloc(sizeof(int) * (size_t)(ngn + 1));
    p->gin = malloc(sizeof(int) * (size_t)(2 * ngn + 2));
    if (!p->steps || !p->sin || !p->sout || !p->gnodes || !p->gin)
        return hg_error(HG_ERR_MEMORY, "out of memory");
    cursor c = {0, 0, 0};
    for (int i = 0; i < p->n; i++) {
        if (!p->needed[i] || (group[i] >= 0 && group[i] != i) || (group[i] < 0 && taken[i]))
            continue;
        hg_pstep *s = &p->steps[p->nsteps++];
        s->node = i;
        s->producer = -1;
        s->post_node = -1;
        s->dw_step = s->pw_step = -1;
        s->in_base = c.ni;
        s->out_base = c.no;
        if (group[i] < 0 && fold_of[i] >= 0) {
            step_fold(p, s, i, fold_of[i], &c);
            if (post_of[i] >= 0 && post_of_node(p, post_of[i], &s->post)) s->post_node = post_of[i];
        } else if (group[i] < 0 && is_post[i]) { /* applied by the fold: a view of its output */
            step_plain(p, s, i, &c);
            s->alias = true;
        } else if (group[i] < 0 && split_of[i] >= 0) step_split(p, s, i, split_of[i], &c);
        else if (group[i] < 0) step_plain(p, s, i, &c);
        else step_group(p, s, i, group, mstart, mlist, producer[i], &c);
    }
    return HG_OK;
}

/* BatchNorm nodes right after a convolution that fold into it in inference: fold_of[bn] = the
 * convolution (taken), -1 elsewhere. */
static void find_folds(const hg_plan *p, const int *group, bool *taken, int *fold_of)
{
    for (int i = 0; i < p->n; i++) {
        if (!p->needed[i] || group[i] >= 0 || taken[i] || !p->nodes[i]->op || p->nodes[i]->nin != 5)
            continue;
        int c = p->in_idx[p->off[i]];
        if (!taken[c] && group[c] < 0 && p->needed[c] && hg_fold_match(p, i, c)) {
            fold_of[i] = c;
            taken[c] = true;
        }
    }
}

static bool mutated(const hg_plan *p, int e);

/* The activation node j as a post-op (core/post.h), or false when it is none: a float32 ReLU
 * (Activation(act_type='relu') or relu) or clip. */
static bool post_of_node(const hg_plan *p, int j, hg_post *po)
{
    const hg_snode *nd = p->nodes[j];
    if (!nd->op || nd->nin != 1 || nd->nout != 1) return false;
    const char *name = nd->op->name;
    if (strcmp(name, "relu") == 0) {
        *po = (hg_post){HG_POST_RELU, 0, 0};
        return true;
    }
    if (strcmp(name, "Activation") == 0) {
        int k = hg_attr_index(nd->op, "act_type");
        if (k < 0 || nd->attrs->v[k].is_none ||
            strcmp(nd->op->attrs[k].choices[nd->attrs->v[k].i], "relu") != 0)
            return false;
        *po = (hg_post){HG_POST_RELU, 0, 0};
        return true;
    }
    if (strcmp(name, "clip") == 0) {
        int lo = hg_attr_index(nd->op, "a_min"), hi = hg_attr_index(nd->op, "a_max");
        if (lo < 0 || hi < 0) return false;
        /* the clip kernel's float32 bounds: (float)a_min, (float)a_max */
        *po = (hg_post){HG_POST_CLIP, (float)nd->attrs->v[lo].f, (float)nd->attrs->v[hi].f};
        return true;
    }
    return false;
}

/* Folds whose output only a ReLU or clip reads: the fold applies it as it writes (post_of[bn] =
 * that node, -1 elsewhere) and the node's step becomes an alias of the fold's output (is_post).
 * The output is then overwritten in place, so it must have no other reader (not a head: in
 * training the backward reads it through the forward plan's heads) and the activation's output
 * must be one an alias may stand for (mark_aliases' conditions). */
static void find_posts(const hg_plan *p, const int *group, const bool *taken, const int *fold_of,
                       int *post_of, bool *is_post)
{
    for (int i = 0; i < p->n; i++) {
        post_of[i] = -1;
        is_post[i] = false;
    }
    for (int i = 0; i < p->n; i++) {
        if (fold_of[i] < 0) continue;
        int e = p->entry[i];
        if (p->uses[e] != 1 || p->fed_slot[e] >= 0 || p->meta[e].dtype != HG_DTYPE_F32) continue;
        int j = -1;
        for (int q = i + 1; q < p->n && j < 0; q++)
            for (int k = 0; k < p->nodes[q]->nin; k++)
                if (p->needed[q] && in_entry(p, q, k) == e) j = q;
        hg_post po;
        if (j < 0 || group[j] >= 0 || taken[j] || fold_of[j] >= 0 || p->cf[j] ||
            !post_of_node(p, j, &po))
            continue;
        int oe = p->entry[j];
        bool head = false;
        for (int h = 0; h < p->nheads; h++) head |= p->head_entry[h] == oe;
        if (head || p->fed_slot[oe] >= 0 || p->meta[oe].dtype != HG_DTYPE_F32 ||
            !hg_plan_same_size(&p->meta[oe], &p->meta[e]) || mutated(p, oe))
            continue;
        post_of[i] = j;
        is_post[j] = true;
    }
}

/* The fusion pass: decides groups, producers and folds, then builds p's steps. */
static hg_status plan_fusion(hg_plan *p)
{
    size_t n1 = (size_t)p->n + 1;
    int *group = malloc(sizeof(int) * n1), *gsize = malloc(sizeof(int) * n1);
    int *producer = malloc(sizeof(int) * n1), *fold_of = malloc(sizeof(int) * n1);
    int *split_of = malloc(sizeof(int) * n1), *post_of = malloc(sizeof(int) * n1);
    bool *is_post = malloc(sizeof(bool) * n1);
    int *mstart = malloc(sizeof(int) * n1); /* group chains, then members */
    int *mlist = malloc(sizeof(int) * n1);
    bool *taken = calloc(n1, sizeof(bool));
    hg_status st = HG_OK;
    if (!group || !gsize || !producer || !taken || !fold_of || !split_of || !mstart || !mlist ||
        !post_of || !is_post)
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) {
        find_groups(p, group, gsize, mstart, mlist);
        for (int i = 0; i < p->n; i++) producer[i] = fold_of[i] = split_of[i] = -1;
        group_members(p, group, mstart, mlist);
        if (!(p->flags & HG_PLAN_NO_FUSION)) {
            find_producers(p, group, mstart, mlist, producer, taken);
            find_folds(p, group, taken, fold_of);
            find_splits(p, group, taken, split_of);
        }
        for (int i = 0; i < p->n; i++) /* a group of one without a producer is a plain step */
            if (group[i] >= 0 && gsize[group[i]] == 1 && producer[group[i]] < 0) group[i] = -1;
        group_members(p, group, mstart, mlist);
        find_posts(p, group, taken, fold_of, post_of, is_post);
        st = build_steps(p, group, mstart, mlist, producer, taken, fold_of, split_of, post_of,
                         is_post);
    }
    free(group);
    free(gsize);
    free(producer);
    free(taken);
    free(fold_of);
    free(split_of);
    free(post_of);
    free(is_post);
    free(mstart);
    free(mlist);
    return st;
}

/* The first head of each value owns it (later heads with the same value copy it). */
static hg_status own_heads(hg_plan *p, bool *is_head)
{
    int *first = malloc(sizeof(int) * (size_t)(p->nentries + 1));
    if (!first) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int e = 0; e < p->nentries; e++) first[e] = -1;
    for (int h = 0; h < p->nheads; h++) {
        int e = p->head_entry[h];
        is_head[e] = true;
        if (first[e] < 0) first[e] = h;
        p->head_owner[h] = first[e];
    }
    free(first);
    return HG_OK;
}

/* Whether value e is read as an input that its reader may update (BatchNorm's moving
 * statistics, an optimizer's state): such a value is never an alias of another. */
static bool mutated(const hg_plan *p, int e)
{
    for (int i = 0; i < p->n; i++) {
        const hg_snode *nd = p->nodes[i];
        if (!p->needed[i] || !nd->op) continue;
        for (int k = 0; k < nd->nin; k++)
            if (in_entry(p, i, k) == e && hg_op_mutates_input_a(nd->op, nd->attrs, k)) return true;
    }
    return false;
}

/* Fold steps of a pointwise convolution whose output (or its ReLU / clip's) only the fold step
 * of a depthwise convolution reads: paired, so that in inference the depthwise step runs both
 * and the pointwise output is never made (fold.c). HG_NO_PWDW=1 keeps them apart. */
static hg_status find_pairs(hg_plan *p, const bool *is_head)
{
    if ((p->flags & HG_PLAN_NO_FUSION) || hg_env_on("HG_NO_PWDW")) return HG_OK;
    int *made_by = malloc(sizeof(int) * (size_t)(p->nentries + 1)); /* entry -> fold step */
    if (!made_by) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int e = 0; e < p->nentries; e++) made_by[e] = -1;
    for (int b = 0; b < p->nsteps; b++) {
        hg_pstep *sb = &p->steps[b];
        if (!sb->fold) continue;
        int e = in_entry(p, sb->producer, 0), a = made_by[e];
        if (a >= 0 && p->uses[e] == 1 && !is_head[e] && p->fed_slot[e] < 0) {
            hg_pstep *sa = &p->steps[a];
            int eo = p->entry[sa->node]; /* the BatchNorm's output, which the post-op reads */
            bool inner = eo == e || (p->uses[eo] == 1 && !is_head[eo] && p->fed_slot[eo] < 0);
            if (inner && sa->pw_step < 0 && hg_fold_pair_match(p, sa, sb)) {
                sa->dw_step = b;
                sb->pw_step = a;
                sb->ws_bytes = hg_fold_pair_workspace(p, sa, sb);
            }
        }
        made_by[p->entry[sb->node]] = b;
        if (sb->post_node >= 0) made_by[p->entry[sb->post_node]] = b;
    }
    free(made_by);
    return HG_OK;
}

/* View ops whose output stays inside the plan become aliases: the output is input 0's data
 * under the output's shape, so nothing is copied (a Reshape of a parameter, which the fused
 * RNN layers apply to every weight at every call). An output that leaves the plan (a head:
 * callers get fresh tensors) or that a reader may update keeps its own buffer. */
static hg_status mark_aliases(hg_plan *p, const bool *is_head)
{
    int n = 0;
    for (int s = 0; s < p->nsteps; s++) {
        hg_pstep *sp = &p->steps[s];
        const hg_snode *nd = p->nodes[sp->node];
        if (sp->alias) { /* a post-op's node (find_posts checked it) */
            n++;
            continue;
        }
        if (sp->fold || sp->producer >= 0 || sp->count != 1 || !nd->op ||
            !(nd->op->flags & HG_OP_VIEW) || p->cf[sp->node] || sp->nin != 1 || sp->nout != 1)
            continue;
        int src = p->sin[sp->in_base], e = p->sout[sp->out_base];
        if (is_head[e] || p->fed_slot[e] >= 0 || p->meta[e].dtype != p->meta[src].dtype ||
            !hg_plan_same_size(&p->meta[e], &p->meta[src]) || mutated(p, e))
            continue;
        sp->alias = true;
        n++;
    }
    p->nalias = 0;
    if (!n) return HG_OK;
    if (!(p->alias_e = malloc(sizeof(int) * (size_t)n)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int s = 0; s < p->nsteps; s++)
        if (p->steps[s].alias) p->alias_e[p->nalias++] = p->sout[p->steps[s].out_base];
    return HG_OK;
}

/* Headers for every arena value, all sharing the arena storage; an alias's header, placed by
 * each run, rests on the arena storage between runs. */
static hg_status arena_headers(hg_plan *p, const int64_t *at)
{
    if (!p->arena_storage) {
        p->arena_storage = hg_alloc(sizeof *p->arena_storage);
        if (!p->arena_storage) return hg_error(HG_ERR_MEMORY, "out of memory");
        memset(p->arena_storage, 0, sizeof *p->arena_storage);
        atomic_init(&p->arena_storage->refcount, 1);
        p->arena_storage->device_type = HG_DEVICE_CPU;
    }
    hg_status st = HG_OK;
    for (int e = 0; st == HG_OK && e < p->nentries; e++) {
        if (at[e] < 0) continue;
        st = hg_tensor_on_storage(p->arena_storage, (size_t)at[e], &p->meta[e], &p->vt[e]);
        p->cur[e] = p->vt[e];
    }
    for (int a = 0; st == HG_OK && a < p->nalias; a++) {
        int e = p->alias_e[a];
        st = hg_tensor_on_storage(p->arena_storage, 0, &p->meta[e], &p->vt[e]);
        p->cur[e] = p->vt[e];
    }
    return st;
}

/* The statistics of the lowered plan: kernels, fusion, and the bytes the values would take
 * without the planner (every internal value, fused intermediates and workspaces in their own
 * blocks) beside the arena's. */
static void count_stats(hg_plan *p, const bool *is_head, int64_t arena_bytes)
{
    int64_t unplanned = 0;
    int fused_groups = 0, fused_ops = 0, folded = 0;
    for (int s = 0; s < p->nsteps; s++) {
        const hg_pstep *sp = &p->steps[s];
        if (sp->fold) {
            folded++;
        } else if (sp->count > 1 || (sp->producer >= 0 && !sp->split)) {
            fused_groups++;
            fused_ops += sp->count + (sp->producer >= 0);
            for (int g = sp->first; g < sp->first + sp->count - 1; g++)
                unplanned += (int64_t)hg_plan_value_bytes(&p->meta[p->entry[p->gnodes[g]]]);
        }
        for (int k = 0; k < sp->nout; k++) {
            int e = p->sout[sp->out_base + k];
            if (!is_head[e] && p->fed_slot[e] < 0 && !sp->alias)
                unplanned += (int64_t)hg_plan_value_bytes(&p->meta[e]);
        }
        unplanned += (int64_t)sp->ws_bytes;
    }
    p->stats.kernels = p->nsteps;
    p->stats.fused_groups = fused_groups;
    p->stats.fused_ops = fused_ops;
    p->stats.folded_bn = folded;
    p->stats.planned_bytes = p->stats.peak_bytes = arena_bytes;
    p->stats.unplanned_bytes = p->stats.total_bytes = unplanned;
}

hg_status hg_plan_lower(hg_plan *p)
{
    hg_plan_clear(p);
    int64_t *at = malloc(sizeof(int64_t) * (size_t)(p->nentries + 1)); /* arena offset */
    bool *is_head = calloc((size_t)p->nentries + 1, sizeof(bool));
    p->vt = calloc((size_t)p->nentries + 1, sizeof(hg_tensor *));
    p->cur = calloc((size_t)p->nentries + 1, sizeof(hg_tensor *));
    p->head_owner = malloc(sizeof(int) * (size_t)(p->nheads + 1));
    int64_t arena_bytes = 0;
    hg_status st = HG_OK;
    if (!at || !is_head || !p->vt || !p->cur || !p->head_owner)
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) st = plan_fusion(p);
    if (st == HG_OK) st = own_heads(p, is_head);
    if (st == HG_OK) st = find_pairs(p, is_head);
    if (st == HG_OK) st = mark_aliases(p, is_head);
    if (st == HG_OK) st = hg_memplan_run(p, is_head, at, &arena_bytes);
    if (st == HG_OK) st = arena_headers(p, at);
    if (st == HG_OK) count_stats(p, is_head, arena_bytes);
    free(at);
    free(is_head);
    if (st != HG_OK) {
        hg_plan_clear(p);
        return st;
    }
    p->arena_bytes = (size_t)arena_bytes;
    p->lowered = true;
    return HG_OK;
}

hg_status hg_plan_describe_locked(const hg_plan *p, char **out)
{
    size_t cap = 256 + (size_t)p->nsteps * 200, len = 0;
    char *t = malloc(cap);
    if (!t) return hg_error(HG_ERR_MEMORY, "out of memory");
#define PUT(...) len += (size_t)snprintf(t + len, len < cap ? cap - len : 0, __VA_ARGS__)
    PUT("plan: %d steps, %d fused groups (%d ops), arena %lld bytes (unplanned %lld)\n", p->nsteps,
        p->stats.fused_groups, p->stats.fused_ops, (long long)p->stats.planned_bytes,
        (long long)p->stats.unplanned_bytes);
    for (int s = 0; s < p->nsteps && len < cap; s++) {
        const hg_pstep *sp = &p->steps[s];
        if (sp->fold) {
            PUT("  %d: %s+%s%s%s (folded in inference%s) -> %s", s,
                p->nodes[sp->producer]->op->name, p->nodes[sp->node]->op->name,
                sp->post_node >= 0 ? "+" : "",
                sp->post_node >= 0 ? p->nodes[sp->post_node]->op->name : "",
                sp->dw_step >= 0   ? "; made inside the depthwise step that reads it"
                : sp->pw_step >= 0 ? "; runs the pointwise step before it too"
                                   : "",
                p->nodes[sp->node]->name);
        } else if (sp->split) {
            PUT("  %d: %s (%s on the %d arrays of %s, not concatenated)", s,
                p->nodes[sp->node]->name, p->nodes[sp->node]->op->name, sp->split,
                p->nodes[sp->producer]->name);
        } else if (sp->count > 1 || sp->producer >= 0) {
            if (sp->producer >= 0) PUT("  %d: %s+fused[", s, p->nodes[sp->producer]->op->name);
            else PUT("  %d: fused[", s);
            for (int g = sp->first; g < sp->first + sp->count && len < cap; g++)
                PUT("%s%s", g > sp->first ? " " : "", p->nodes[p->gnodes[g]]->op->name);
            PUT("] -> %s", p->nodes[sp->node]->name);
        } else {
            PUT("  %d: %s (%s%s)", s, p->nodes[sp->node]->name, p->nodes[sp->node]->op->name,
                !sp->alias                                   ? ""
                : p->nodes[sp->node]->op->flags & HG_OP_VIEW ? ", a view"
                                                             : ", applied by its fold");
        }
        size_t kept = hg_plan_prep_bytes(p, s);
        if (kept) PUT(" (weights kept packed, %zu bytes)", kept);
        PUT("\n");
    }
#undef PUT
    if (len >= cap) t[cap - 1] = '\0';
    *out = t;
    return HG_OK;
}
