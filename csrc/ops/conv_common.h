/* What Convolution (conv.c) and Deconvolution (resample.c) share: the layout and cuDNN choices
 * and the shape-free checks of their kernel/stride/dilate/pad/... attributes. Each op passes
 * the schema positions of its attributes (their orders differ). */
#ifndef HG_OPS_CONV_COMMON_H
#define HG_OPS_CONV_COMMON_H

#include "../core/op.h"

enum { HG_LAYOUT_NCW, HG_LAYOUT_NCHW, HG_LAYOUT_NCDHW, HG_LAYOUT_NHWC, HG_LAYOUT_NDHWC };

extern const char *const hg_conv_tune_choices[];
extern const char *const hg_conv_layout_choices[];

typedef struct hg_conv_attr_index {
    const char *op;
    int kernel, num_filter, num_group, layout;
    int ntuples;            /* tuple attributes checked against the kernel's length */
    int tuples[5];          /* their schema positions */
    const char *names[5];   /* their names */
    bool positive[5];       /* entries >= 1 (stride, dilate) rather than >= 0 */
} hg_conv_attr_index;

/* Entry i of tuple attribute idx, or def when the tuple is empty ("()" means the default). */
static inline int64_t hg_conv_tuple_at(const hg_attrs *a, int idx, int i, int64_t def)
{
    return a->v[idx].t.n == 0 ? def : a->v[idx].t.v[i];
}

/* Checks: 1-3 spatial dims, tuple lengths and signs, num_filter/num_group, a channel-first
 * layout matching the kernel. Messages start with ix->op. */
hg_status hg_conv_check_attrs(const hg_attrs *a, const hg_conv_attr_index *ix);

#endif
