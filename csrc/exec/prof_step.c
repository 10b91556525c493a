/* The profiler's view of a plan step: one event per kernel launch, named after the op (a plain
 * step) or the ops of the fused group ("fused[exp relu]", "FullyConnected+fused[Activation]",
 * "Convolution+BatchNorm" when folded), with the nodes it ran as the event's argument. */
#include <string.h>

#include "core/profiler.h"
#include "exec/plan_impl.h"

/* Appends s to buf (cap bytes, kept NUL-terminated; what does not fit is cut). Plain copies:
 * this runs for every profiled step, and snprintf would cost more than the event itself. */
static void put(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n >= cap) n = cap - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

void hg_plan_prof_step(const hg_plan *p, const hg_pstep *s, int64_t start)
{
    const hg_snode *nd = p->nodes[s->node];
    /* A split RNN (its concat never runs) and an alias (no kernel) are their node's op. */
    if (s->split || (!s->fold && s->producer < 0 && s->count <= 1)) {
        hg_prof_op(nd->op->name, nd->name, start);
        return;
    }
    char name[512], nodes[1024];
    size_t ln = 0, lo = 0;
    name[0] = nodes[0] = '\0';
    if (s->producer >= 0) {
        put(name, sizeof name, &ln, p->nodes[s->producer]->op->name);
        put(name, sizeof name, &ln, "+");
        put(nodes, sizeof nodes, &lo, p->nodes[s->producer]->name);
    }
    if (s->fold) {
        put(name, sizeof name, &ln, nd->op->name);
        put(nodes, sizeof nodes, &lo, " ");
        put(nodes, sizeof nodes, &lo, nd->name);
        if (s->post_node >= 0) {
            put(name, sizeof name, &ln, "+");
            put(name, sizeof name, &ln, p->nodes[s->post_node]->op->name);
            put(nodes, sizeof nodes, &lo, " ");
            put(nodes, sizeof nodes, &lo, p->nodes[s->post_node]->name);
        }
    } else {
        put(name, sizeof name, &ln, "fused[");
        for (int g = s->first; g < s->first + s->count; g++) {
            const hg_snode *gn = p->nodes[p->gnodes[g]];
            if (g > s->first) put(name, sizeof name, &ln, " ");
            put(name, sizeof name, &ln, gn->op->name);
            if (lo) put(nodes, sizeof nodes, &lo, " ");
            put(nodes, sizeof nodes, &lo, gn->name);
        }
        put(name, sizeof name, &ln, "]");
    }
    hg_prof_op(name, nodes, start);
}
