/* What Convolution and Deconvolution share (see conv_common.h): shape-free attribute checks,
 * the packed im2col and the backward, whose body is conv_bw_tmpl.h, included once per type. */
#include "ops/conv_common.h"

#include <string.h>

#include "core/parallel.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"

const char *const hg_conv_tune_choices[] = {"off", "limited_workspace", "fastest", NULL};
const char *const hg_conv_layout_choices[] = {"NCW", "NCHW", "NCDHW", "NHWC", "NDHWC", NULL};

hg_status hg_conv_bw_infer(const hg_op_def *op, const hg_attrs *a, bool has_bias, hg_meta *in,
                           int nout, hg_meta *out,
                           hg_status (*fwd)(const hg_op_def *, const hg_attrs *, int, hg_meta *,
                                            int, hg_meta *))
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    for (int i = 0; i < nout; i++) out[i].ndim = -1;
    if (in[0].ndim < 0 || in[1].ndim < 0 || in[2].ndim < 0)
        return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta fin[3] = {in[1], in[2], {.ndim = -1}}, fout = {.ndim = -1};
    HG_TRY(fwd(op, a, has_bias ? 3 : 2, fin, 1, &fout));
    if (in[0].dtype != fout.dtype ||
        !hg_shape_equal(in[0].ndim, in[0].shape, fout.ndim, fout.shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: output gradient %s (%s) does not match the output "
                        "%s (%s) of data %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_dtype_name(in[0].dtype), hg_shape_str(s1, fout.ndim, fout.shape),
                        hg_dtype_name(fout.dtype), hg_shape_str(s2, in[1].ndim, in[1].shape));
    out[0] = fin[0];
    out[1] = fin[1];
    if (has_bias) out[2] = fin[2];
    return HG_OK;
}

static const char *tuple_str(char *buf, const hg_tuple *t) { return hg_shape_str(buf, t->n, t->v); }

/* Moves dim `from` of a known meta to position `to` (the dims between shift by one). */
static void meta_move_dim(hg_meta *m, int from, int to)
{
    if (m->ndim < 3) return;
    if (from < 0) from += m->ndim;
    if (to < 0) to += m->ndim;
    int64_t v = m->shape[from];
    if (from < to)
        for (int i = from; i < to; i++) m->shape[i] = m->shape[i + 1];
    else
        for (int i = from; i > to; i--) m->shape[i] = m->shape[i - 1];
    m->shape[to] = v;
}

hg_status hg_conv_infer_layout(const hg_op_def *op, const hg_attrs *a, int layout, int nin,
                               hg_meta *in, int nout, hg_meta *out, hg_conv_infer_fn cf)
{
    if (!hg_conv_channel_last(a, layout)) return cf(op, a, nin, in, nout, out);
    int nsp = a->v[layout].i == HG_LAYOUT_NHWC ? 2 : 3;
    for (int i = 0; i < 2 && i < nin; i++) /* data and weight: the last dim moves to 1 */
        if (in[i].ndim == nsp + 2) meta_move_dim(&in[i], -1, 1);
    if (out[0].ndim == nsp + 2) meta_move_dim(&out[0], -1, 1); /* known from consumers */
    hg_status st = cf(op, a, nin, in, nout, out);
    for (int i = 0; i < 2 && i < nin; i++)
        if (in[i].ndim == nsp + 2) meta_move_dim(&in[i], 1, -1);
    if (st == HG_OK && out[0].ndim == nsp + 2) meta_move_dim(&out[0], 1, -1);
    return st;
}

hg_status hg_conv_refuse_layout(const hg_op_def *op, const hg_attrs *a, int layout)
{
    if (!hg_conv_channel_last(a, layout)) return HG_OK;
    return hg_error(HG_ERR_UNSUPPORTED,
                    "%s: layout=%s is not supported by the CPU implementation (as in MXNet "
                    "1.9.1, whose CPU build runs only NCW, NCHW and NCDHW); shapes are inferred, "
                    "but running it needs channel-first data: transpose to %s",
                    op->name, hg_conv_layout_choices[a->v[layout].i],
                    a->v[layout].i == HG_LAYOUT_NHWC ? "NCHW" : "NCDHW");
}

hg_status hg_conv_check_attrs(const hg_attrs *a, const hg_conv_attr_index *ix)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_tuple *k = &a->v[ix->kernel].t;
    int nsp = k->n;
    if (nsp < 1 || nsp > 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: kernel must have 1, 2 or 3 dims (1-D, 2-D or 3-D), "
                        "got kernel=%s",
                        ix->op, tuple_str(s0, k));
    for (int j = 0; j < ix->ntuples; j++) {
        const hg_tuple *t = &a->v[ix->tuples[j]].t;
        if (t->n != 0 && t->n != nsp)
            return hg_error(HG_ERR_VALUE, "%s: %s=%s must have as many dims as kernel=%s", ix->op,
                            ix->names[j], tuple_str(s0, t), tuple_str(s1, k));
        for (int i = 0; i < t->n; i++)
            if (ix->positive[j] ? t->v[i] < 1 : t->v[i] < 0)
                return hg_error(HG_ERR_VALUE, "%s: %s=%s must be %s", ix->op, ix->names[j],
                                tuple_str(s0, t), ix->positive[j] ? "positive" : "non-negative");
    }
    for (int i = 0; i < nsp; i++)
        if (k->v[i] < 1)
            return hg_error(HG_ERR_VALUE, "%s: kernel=%s must be positive", ix->op,
                            tuple_str(s0, k));
    int64_t F = a->v[ix->num_filter].i, G = a->v[ix->num_group].i;
    if (F < 1)
        return hg_error(HG_ERR_VALUE, "%s: num_filter must be positive, got %lld", ix->op,
                        (long long)F);
    if (G < 1)
        return hg_error(HG_ERR_VALUE, "%s: num_group must be positive, got %lld", ix->op,
                        (long long)G);
    if (F % G != 0)
        return hg_error(HG_ERR_VALUE, "%s: num_filter=%lld must be divisible by num_group=%lld",
                        ix->op, (long long)F, (long long)G);
    if (!a->v[ix->layout].is_none) {
        int64_t lay = a->v[ix->layout].i;
        int lay_nsp = lay == HG_LAYOUT_NHWC ? 2 : lay == HG_LAYOUT_NDHWC ? 3 : (int)lay + 1;
        if (lay_nsp != nsp)
            return hg_error(HG_ERR_VALUE,
                            "%s: layout=%s does not match kernel=%s (%d spatial "
                            "dims)",
                            ix->op, hg_conv_layout_choices[lay], tuple_str(s0, k), nsp);
    }
    return HG_OK;
}

/* ---- backward ------------------------------------------------------------------------------ */

/* Elements of one slot's partial sums of dW and db. */
static int64_t bw_part_elems(const hg_conv_geom *g, const hg_conv_bw_plan *pl, bool grad_w,
                             bool bias)
{
    return (grad_w ? g->F * g->K : 0) + (bias ? (pl->bias_of_x ? g->C : g->F) : 0);
}

int64_t hg_conv_bw_area(const hg_conv_geom *g, const hg_conv_bw_plan *pl, bool grad_w, bool bias)
{
    return pl->nslots * pl->col_e + (pl->nslots - 1) * bw_part_elems(g, pl, grad_w, bias);
}

#define T float
#define NAME(x) x##_f32
#include "ops/conv_bw_tmpl.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "ops/conv_bw_tmpl.h"
#undef T
#undef NAME
