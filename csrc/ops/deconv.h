/* Schema positions of Deconvolution and _backward_Deconvolution (deconv.c), and its output
 * geometry (pad and adj from target_shape), shared with the GPU kernels (kernels/cuda/dnn.cu).
 * Internal to csrc/. */
#ifndef HG_OPS_DECONV_H
#define HG_OPS_DECONV_H

#include "core/op.h"

enum {
    DC_KERNEL,
    DC_STRIDE,
    DC_DILATE,
    DC_PAD,
    DC_ADJ,
    DC_TARGET,
    DC_NUM_FILTER,
    DC_NUM_GROUP,
    DC_WORKSPACE,
    DC_NO_BIAS,
    DC_CUDNN_TUNE,
    DC_CUDNN_OFF,
    DC_LAYOUT,
    DC_NATTRS, /* the forward's schema ends here */
    DC_GRAD_DATA = DC_NATTRS,
    DC_GRAD_WEIGHT,
    DC_BW_NATTRS
};

/* Entry i of tuple attribute idx, or def when the tuple is empty ("()" means the default). */
static inline int64_t hg_deconv_tuple_at(const hg_attrs *a, int idx, int i, int64_t def)
{
    return a->v[idx].t.n == 0 ? def : a->v[idx].t.v[i];
}

static inline bool hg_deconv_has_target(const hg_attrs *a)
{
    const hg_tuple *t = &a->v[DC_TARGET].t;
    for (int i = 0; i < t->n; i++)
        if (t->v[i] != 0) return true;
    return false;
}

/* Pad, adj and output size of one spatial dim j (of nsp) with input size x (known). MXNet's
 * InferPad: a target shape sets the total pad to full - target, split with the odd unit in adj. */
static inline void hg_deconv_dim_geom(const hg_attrs *a, int j, int64_t x, int64_t *pad,
                                      int64_t *adj, int64_t *osz)
{
    int64_t k = a->v[DC_KERNEL].t.v[j], s = hg_deconv_tuple_at(a, DC_STRIDE, j, 1);
    int64_t d = hg_deconv_tuple_at(a, DC_DILATE, j, 1);
    int64_t full = s * (x - 1) + d * (k - 1) + 1;
    if (hg_deconv_has_target(a)) {
        int64_t total = full - a->v[DC_TARGET].t.v[j];
        *adj = total % 2;
        *pad = (total + 1) / 2;
    } else {
        *pad = hg_deconv_tuple_at(a, DC_PAD, j, 0);
        *adj = hg_deconv_tuple_at(a, DC_ADJ, j, 0);
    }
    *osz = full - 2 * *pad + *adj;
}

#endif
