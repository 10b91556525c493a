/* Running a fused group: the group's element-wise ops run tile by tile, each tile's
 * intermediate values staying in small stack buffers (in L1) instead of full arrays. */
#include <string.h>

#include "core/parallel.h"
#include "exec/plan_impl.h"

#define TILE 512 /* elements per tile: 16 buffers of float64 stay within 64 KiB */

typedef struct fused_job {
    const hg_plan *p;
    const hg_pstep *s;
    hg_tensor *const *cur;
    size_t esz;
} fused_job;

static void fused_range(void *ctx, int64_t begin, int64_t end)
{
    const fused_job *j = ctx;
    const hg_plan *p = j->p;
    const hg_pstep *s = j->s;
    _Alignas(64) double buf[HG_FUSE_MAX][TILE];
    const hg_tensor *out = j->cur[p->sout[s->out_base + s->nout - 1]];
    char *po = hg_data(out);
    for (int64_t t = begin; t < end; t += TILE) {
        int64_t n = end - t < TILE ? end - t : TILE;
        for (int g = 0; g < s->count; g++) {
            const hg_snode *nd = p->nodes[p->gnodes[s->first + g]];
            const void *in[2] = {NULL, NULL};
            int64_t stride[2] = {0, 0};
            for (int k = 0; k < nd->nin; k++) {
                int code = p->gin[2 * (s->first + g) + k];
                if (code < 0) {
                    in[k] = buf[-code - 1];
                    stride[k] = 1;
                    continue;
                }
                const hg_tensor *x = j->cur[code];
                if (x->size == 1) {
                    in[k] = hg_data(x);
                } else {
                    in[k] = (const char *)hg_data(x) + (size_t)t * j->esz;
                    stride[k] = 1;
                }
            }
            void *o = g == s->count - 1 ? po + (size_t)t * j->esz : (void *)buf[g];
            nd->op->ew[out->dtype](n, in[0], stride[0], in[1], stride[1], o, nd->attrs);
        }
    }
}

hg_status hg_plan_run_fused(hg_plan *p, const hg_pstep *s, hg_tensor **cur)
{
    const hg_tensor *out = cur[p->sout[s->out_base + s->nout - 1]];
    fused_job j = {p, s, cur, hg_dtype_size(out->dtype)};
    /* The grain counts elements times ops: a long chain is worth threads sooner. */
    int64_t grain = HG_GRAIN_ELEMWISE / s->count;
    hg_parallel_for(out->size, grain < TILE ? TILE : grain, fused_range, &j);
    return HG_OK;
}
