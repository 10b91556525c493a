/* What tensor_extra.c shares with its GPU kernels (kernels/cuda/tensor.cu): the schema positions
 * of the ops that have attributes, and the piece boundaries of _split_v2. Internal to csrc/ops
 * and the kernels. */
#ifndef HG_OPS_TENSOR_EXTRA_H
#define HG_OPS_TENSOR_EXTRA_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* reshape_like */
enum { RL_LB, RL_LE, RL_RB, RL_RE, RL_NATTRS };
/* scatter_nd, _backward_gather_nd, _scatter_set_nd */
enum { SND_SHAPE, SND_NATTRS };
/* depth_to_space, space_to_depth */
enum { DS_BLOCK, DS_NATTRS };
/* _ravel_multi_index, _unravel_index */
enum { RV_SHAPE, RV_NATTRS };
/* _split_v2 */
enum { SP_INDICES, SP_AXIS, SP_SQUEEZE, SP_SECTIONS, SP_NATTRS };
/* khatri_rao */
enum { KR_NUM_ARGS, KR_NATTRS };

static inline int hg_split_nout(const hg_attrs *a)
{
    return a->v[SP_SECTIONS].i > 0 ? (int)a->v[SP_SECTIONS].i : a->v[SP_INDICES].t.n;
}

/* _split_v2's piece boundaries: bounds[0..nout] along an axis of length len (MXNet's
 * GetSplitIndices for sections: the first len % sections pieces are one longer). */
static inline void hg_split_bounds(const hg_attrs *a, int64_t len, int64_t *bounds)
{
    int n = hg_split_nout(a);
    if (a->v[SP_SECTIONS].i > 0) {
        int64_t s = a->v[SP_SECTIONS].i, q = len / s, r = len % s;
        bounds[0] = 0;
        for (int i = 0; i < n; i++) bounds[i + 1] = bounds[i] + q + (i < r ? 1 : 0);
        return;
    }
    for (int i = 0; i < n; i++) bounds[i] = a->v[SP_INDICES].t.v[i];
    bounds[n] = len;
}

#ifdef __cplusplus
}
#endif

#endif
