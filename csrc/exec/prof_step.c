/* The profiler's view of a plan step: one event per kernel launch, named after the op (a plain
 * step) or the ops of the fused group ("fused[exp relu]", "FullyConnected+fused[Activation]",
 * "Convolution+BatchNorm" when folded), with the nodes it ran as the event's argument. */
#include <stdio.h>

#include "core/profiler.h"
#include "exec/plan_impl.h"

void hg_plan_prof_step(const hg_plan *p, const hg_pstep *s, int64_t start)
{
    const hg_snode *nd = p->nodes[s->node];
    if (!s->fold && s->producer < 0 && s->count <= 1) {
        hg_prof_op(nd->op->name, nd->name, start);
        return;
    }
    /* Names longer than the buffers are cut: the event stays, its label is shortened. */
    char name[512], nodes[1024];
    size_t ln = 0, lo = 0;
#define PUT(buf, len, ...)                                                                         \
    len += (len < sizeof buf ? (size_t)snprintf(buf + len, sizeof buf - len, __VA_ARGS__) : 0)
    name[0] = nodes[0] = '\0';
    if (s->producer >= 0) {
        PUT(name, ln, "%s+", p->nodes[s->producer]->op->name);
        PUT(nodes, lo, "%s", p->nodes[s->producer]->name);
    }
    if (s->fold) {
        PUT(name, ln, "%s", nd->op->name);
        PUT(nodes, lo, " %s", nd->name);
    } else {
        PUT(name, ln, "fused[");
        for (int g = s->first; g < s->first + s->count; g++) {
            const hg_snode *gn = p->nodes[p->gnodes[g]];
            PUT(name, ln, "%s%s", g > s->first ? " " : "", gn->op->name);
            PUT(nodes, lo, "%s%s", lo ? " " : "", gn->name);
        }
        PUT(name, ln, "]");
    }
#undef PUT
    hg_prof_op(name, nodes, start);
}
