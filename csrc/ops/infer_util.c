/* Ops that exist for shape inference: _identity_with_attr_like_rhs, MXNet's way of tying an
 * intermediate value's shape to another one's. It returns its first input unchanged; its shape
 * rule makes both inputs and the output one shape (forwards and backwards), which lets a
 * consumer's shape reach a value no other rule decides (a weight computed by broadcast_add from
 * a variable of unknown shape). */
#include <string.h>

#include "graph/grad.h"
#include "ops/ops_util.h"

static hg_status like_rhs_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    hg_meta u = {.ndim = -1};
    const hg_meta *all[3] = {&in[0], &in[1], &out[0]};
    for (int k = 0; k < 3; k++) {
        const hg_meta *m = all[k];
        if (m->ndim < 0) continue;
        if (u.ndim < 0) {
            u = *m;
            continue;
        }
        if (u.ndim != m->ndim) goto mismatch;
        for (int d = 0; d < u.ndim; d++) {
            if (u.shape[d] < 0) u.shape[d] = m->shape[d];
            else if (m->shape[d] >= 0 && m->shape[d] != u.shape[d]) goto mismatch;
        }
    }
    for (int k = 0; k < 2 && u.ndim >= 0; k++) {
        hg_dtype dt = in[k].dtype;
        in[k].ndim = u.ndim;
        memcpy(in[k].shape, u.shape, sizeof(int64_t) * (size_t)u.ndim);
        in[k].dtype = dt;
    }
    out[0] = in[0];
    return HG_OK;
mismatch:
    return hg_error(HG_ERR_VALUE, "%s: lhs shape %s and rhs shape %s must be equal", op->name,
                    hg_shape_str(s0, in[0].ndim, in[0].shape),
                    hg_shape_str(s1, in[1].ndim, in[1].shape));
}

static hg_status like_rhs_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    if (hg_data(out[0]) != hg_data(in[0]))
        memcpy(hg_data(out[0]), hg_data(in[0]), (size_t)in[0]->size * hg_dtype_size(in[0]->dtype));
    return HG_OK;
}

/* As MXNet: the gradient passes to lhs; rhs only lends its shape (zero gradient). */
static hg_status like_rhs_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_copy", HG_GIN(hg_g_ograd(g, 0)), NULL));
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}

const hg_op_def hg_ops_infer_util[] = {
    {.name = "_identity_with_attr_like_rhs",
     .doc = "lhs unchanged; lhs, rhs and the output share one shape (for shape inference)",
     .input_names = HG_NAMES("lhs", "rhs"),
     .num_inputs = 2,
     .flags = HG_OP_INPLACE,
     .infer = like_rhs_infer,
     .forward = like_rhs_forward,
     .grad = like_rhs_grad},
    {0},
};
