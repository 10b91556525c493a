/* Memory planning (see memplan.h): a best-fit arena allocator over a sorted, coalesced free
 * list, and the walk over the steps that allocates each output and frees each value after its
 * last reader. Offsets only: no memory is touched here. */
#include "exec/memplan.h"

#include <stdlib.h>
#include <string.h>

enum { UNSET, LIVE, DEAD, ALIAS }; /* ALIAS: an alias step's output, in no block of its own */

typedef struct block {
    int64_t off, size;
} block;

typedef struct arena_plan {
    block *free_list; /* sorted by offset, coalesced */
    int nfree, capfree;
    int64_t end;
    bool no_reuse;
} arena_plan;

/* Output 0 may take input 0's buffer: ops that say so, and every op of the generic
 * element-wise driver (element i is read before element i is written, and an input of the
 * output's byte size is not broadcast). */
static bool may_inplace(const hg_op_def *op)
{
    return (op->flags & HG_OP_INPLACE) || (!op->forward && op->ew_arity > 0);
}

static int64_t arena_alloc(arena_plan *a, int64_t size)
{
    if (size == 0) return 0;
    if (!a->no_reuse) {
        int best = -1;
        for (int i = 0; i < a->nfree; i++)
            if (a->free_list[i].size >= size &&
                (best < 0 || a->free_list[i].size < a->free_list[best].size))
                best = i;
        if (best >= 0) {
            int64_t off = a->free_list[best].off;
            a->free_list[best].off += size;
            a->free_list[best].size -= size;
            if (a->free_list[best].size == 0) {
                memmove(a->free_list + best, a->free_list + best + 1,
                        sizeof(block) * (size_t)(a->nfree - best - 1));
                a->nfree--;
            }
            return off;
        }
        /* A free block at the end grows instead of leaving a hole. */
        if (a->nfree &&
            a->free_list[a->nfree - 1].off + a->free_list[a->nfree - 1].size == a->end) {
            int64_t off = a->free_list[--a->nfree].off;
            a->end = off + size;
            return off;
        }
    }
    int64_t off = a->end;
    a->end += size;
    return off;
}

static void arena_free(arena_plan *a, int64_t off, int64_t size, hg_status *st)
{
    if (size == 0 || a->no_reuse) return;
    if (a->nfree == a->capfree) {
        int nc = a->capfree ? a->capfree * 2 : 16;
        block *t = realloc(a->free_list, sizeof(block) * (size_t)nc);
        if (!t) {
            *st = hg_error(HG_ERR_MEMORY, "out of memory");
            return;
        }
        a->free_list = t;
        a->capfree = nc;
    }
    int i = 0;
    while (i < a->nfree && a->free_list[i].off < off) i++;
    memmove(a->free_list + i + 1, a->free_list + i, sizeof(block) * (size_t)(a->nfree - i));
    a->free_list[i] = (block){off, size};
    a->nfree++;
    if (i + 1 < a->nfree && a->free_list[i].off + a->free_list[i].size == a->free_list[i + 1].off) {
        a->free_list[i].size += a->free_list[i + 1].size;
        memmove(a->free_list + i + 1, a->free_list + i + 2,
                sizeof(block) * (size_t)(a->nfree - i - 2));
        a->nfree--;
    }
    if (i > 0 && a->free_list[i - 1].off + a->free_list[i - 1].size == a->free_list[i].off) {
        a->free_list[i - 1].size += a->free_list[i].size;
        memmove(a->free_list + i, a->free_list + i + 1, sizeof(block) * (size_t)(a->nfree - i - 1));
        a->nfree--;
    }
}

typedef struct walk {
    hg_plan *p;
    const bool *is_head;
    int64_t *at;
    int *last;   /* value -> the last step reading it (-1: none) */
    char *state; /* value -> UNSET, LIVE, DEAD or ALIAS */
    bool *aliased; /* value -> an alias step reads it: its block is never taken over in place */
    arena_plan a;
} walk;

/* Value e takes over the block of value from (which dies here). */
static void take_over(walk *w, int e, int from)
{
    w->at[e] = w->at[from];
    w->state[from] = DEAD;
}

/* The outputs of step s: in place over input 0 when the op allows it and input 0 dies here;
 * a fused group with a producer works in place on the producer's output (a split RNN's
 * producer, the concat, makes no output). */
static void place_outputs(walk *w, int s)
{
    hg_plan *p = w->p;
    const hg_pstep *sp = &p->steps[s];
    const hg_snode *nd = p->nodes[sp->node];
    int e0 = sp->nin ? p->sin[sp->in_base] : -1;
    for (int k = 0; k < sp->nout; k++) {
        int e = p->sout[sp->out_base + k];
        if (w->is_head[e] || p->fed_slot[e] >= 0) continue;
        if (sp->alias) {
            w->state[e] = ALIAS;
            continue;
        }
        int pe = p->sout[sp->out_base];
        if (k == 1 && sp->producer >= 0 && !sp->split && !w->a.no_reuse && w->state[pe] == LIVE &&
            hg_plan_same_size(&p->meta[pe], &p->meta[e])) {
            take_over(w, e, pe);
        } else if (k == 0 && sp->count == 1 && sp->producer < 0 && may_inplace(nd->op) && e0 >= 0 &&
                   !w->a.no_reuse && w->last[e0] == s && w->state[e0] == LIVE && !w->aliased[e0] &&
                   hg_plan_same_size(&p->meta[e0], &p->meta[e])) {
            take_over(w, e, e0);
        } else {
            w->at[e] = arena_alloc(&w->a, (int64_t)hg_plan_value_bytes(&p->meta[e]));
        }
        w->state[e] = LIVE;
    }
}

/* Values whose last reader is step s (a paired step: its pointwise step's inputs too), and
 * outputs nobody reads, free their blocks. */
static void free_dead(walk *w, int s, hg_status *st)
{
    hg_plan *p = w->p;
    const hg_pstep *sp = &p->steps[s];
    const hg_pstep *a = sp->pw_step >= 0 ? &p->steps[sp->pw_step] : NULL;
    int na = a ? a->nin : 0;
    for (int k = 0; k < sp->nin + sp->nout + na; k++) {
        int e = k < sp->nin              ? p->sin[sp->in_base + k]
                : k < sp->nin + sp->nout ? p->sout[sp->out_base + k - sp->nin]
                                         : p->sin[a->in_base + k - sp->nin - sp->nout];
        if (w->state[e] == LIVE && w->last[e] <= s) {
            arena_free(&w->a, w->at[e], (int64_t)hg_plan_value_bytes(&p->meta[e]), st);
            w->state[e] = DEAD;
        }
    }
}

hg_status hg_memplan_run(hg_plan *p, const bool *is_head, int64_t *at, int64_t *arena_bytes)
{
    walk w = {.p = p,
              .is_head = is_head,
              .at = at,
              .last = malloc(sizeof(int) * (size_t)(p->nentries + 1)),
              .state = calloc((size_t)p->nentries + 1, 1),
              .aliased = calloc((size_t)p->nentries + 1, sizeof(bool)),
              .a = {.no_reuse = (p->flags & HG_PLAN_NO_MEMPLAN) != 0}};
    hg_status st = (w.last && w.state && w.aliased) ? HG_OK
                                                    : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int e = 0; st == HG_OK && e < p->nentries; e++) {
        w.last[e] = -1;
        at[e] = -1;
    }
    /* Liveness: the last step reading each value. A value an alias views lives as long as the
     * alias is read (backwards, so that an alias of an alias extends the first source too). */
    for (int s = 0; st == HG_OK && s < p->nsteps; s++)
        for (int k = 0; k < p->steps[s].nin; k++) w.last[p->sin[p->steps[s].in_base + k]] = s;
    /* A paired depthwise step reads its pointwise step's inputs too (fold.c): they live to it. */
    for (int s = 0; st == HG_OK && s < p->nsteps; s++) {
        const hg_pstep *sp = &p->steps[s];
        if (sp->pw_step < 0) continue;
        const hg_pstep *a = &p->steps[sp->pw_step];
        for (int k = 0; k < a->nin; k++) {
            int e = p->sin[a->in_base + k];
            if (w.last[e] < s) w.last[e] = s;
        }
    }
    for (int s = p->nsteps - 1; st == HG_OK && s >= 0; s--) {
        const hg_pstep *sp = &p->steps[s];
        if (!sp->alias) continue;
        int src = p->sin[sp->in_base], e = p->sout[sp->out_base];
        w.aliased[src] = true;
        if (w.last[e] > w.last[src]) w.last[src] = w.last[e];
    }
    for (int s = 0; st == HG_OK && s < p->nsteps; s++) {
        hg_pstep *sp = &p->steps[s];
        place_outputs(&w, s);
        if (sp->ws_bytes) { /* the workspace lives for the step alone */
            sp->ws_off = arena_alloc(&w.a, (int64_t)sp->ws_bytes);
            arena_free(&w.a, sp->ws_off, (int64_t)sp->ws_bytes, &st);
        }
        free_dead(&w, s, &st);
    }
    *arena_bytes = w.a.end;
    free(w.last);
    free(w.state);
    free(w.aliased);
    free(w.a.free_list);
    return st;
}
