/* Shape and index ops of MXNet 1.9.1 that move elements without arithmetic: reshape_like,
 * shape_array, size_array, argmax_channel, batch_take, gather_nd / scatter_nd (and their
 * adjoints), depth_to_space / space_to_depth, _ravel_multi_index / _unravel_index, _split_v2,
 * fill_element_0index, _onehot_encode and khatri_rao.
 *
 * Elements are copied by size (any dtype) or read through tx_ld/tx_st. Index values that
 * MXNet would use unchecked to address memory are checked here: the kernel fails with
 * HG_ERR_INDEX naming the op instead of reading or writing outside the buffers.
 */
#include <string.h>

#include "graph/grad.h"
#include "ops/ops_util.h"
#include "ops/tensor_extra.h"
#include "ops/tx_util.h"

static bool any_unknown(const hg_meta *m)
{
    if (m->ndim < 0) return true;
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] < 0) return true;
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * reshape_like
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_rl_attrs[] = {
    [RL_LB] = {"lhs_begin", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
               "first lhs dim replaced (None: 0)", NULL},
    [RL_LE] = {"lhs_end", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
               "end of the replaced lhs dims (None: ndim)", NULL},
    [RL_RB] = {"rhs_begin", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None", "first rhs dim used (None: 0)",
               NULL},
    [RL_RE] = {"rhs_end", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
               "end of the rhs dims used (None: ndim)", NULL},
};
_Static_assert(HG_COUNT(k_rl_attrs) == RL_NATTRS, "k_rl_attrs must match its enum");

static hg_status rl_range(const hg_attrs *a, int kb, int ke, int ndim, const char *side, int *b,
                          int *e)
{
    int64_t vb = a->v[kb].is_none ? 0 : a->v[kb].i, ve = a->v[ke].is_none ? ndim : a->v[ke].i;
    if (vb < 0) vb += ndim;
    if (ve < 0) ve += ndim;
    if (vb < 0 || ve > ndim || vb > ve)
        return hg_error(HG_ERR_VALUE,
                        "reshape_like: %s_begin/%s_end give the invalid range [%lld, %lld) for "
                        "a %d-d %s",
                        side, side, (long long)vb, (long long)ve, ndim, side);
    *b = (int)vb;
    *e = (int)ve;
    return HG_OK;
}

static hg_status rl_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0].dtype = in[0].dtype;
    if (any_unknown(&in[0]) || any_unknown(&in[1])) return HG_OK;
    int lb = 0, le = 0, rb = 0, re = 0;
    HG_TRY(rl_range(a, RL_LB, RL_LE, in[0].ndim, "lhs", &lb, &le));
    HG_TRY(rl_range(a, RL_RB, RL_RE, in[1].ndim, "rhs", &rb, &re));
    int nd = lb + (re - rb) + (in[0].ndim - le);
    if (nd > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "reshape_like: the result would have %d dims (at most %d)",
                        nd, HG_MAX_NDIM);
    hg_meta o = {.ndim = 0, .dtype = in[0].dtype};
    for (int d = 0; d < lb; d++) o.shape[o.ndim++] = in[0].shape[d];
    for (int d = rb; d < re; d++) o.shape[o.ndim++] = in[1].shape[d];
    for (int d = le; d < in[0].ndim; d++) o.shape[o.ndim++] = in[0].shape[d];
    if (tx_prod(o.shape, 0, o.ndim) != tx_prod(in[0].shape, 0, in[0].ndim))
        return hg_error(HG_ERR_VALUE,
                        "reshape_like: cannot reshape lhs of shape %s into %s (from rhs dims "
                        "[%d, %d)): the sizes differ",
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, o.ndim, o.shape), rb, re);
    out[0] = o;
    return HG_OK;
}

static hg_status copy_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    if (hg_data(out[0]) != hg_data(in[0]))
        memcpy(hg_data(out[0]), hg_data(in[0]), (size_t)in[0]->size * hg_dtype_size(in[0]->dtype));
    return HG_OK;
}

static hg_status rl_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "reshape_like", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * shape_array, size_array, argmax_channel
 * ------------------------------------------------------------------------------------------- */

static hg_status shape_array_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    out[0].dtype = HG_DTYPE_I64;
    if (TX_UNKNOWN(in[0])) return HG_OK;
    out[0].ndim = 1;
    out[0].shape[0] = in[0].ndim;
    return HG_OK;
}

static hg_status shape_array_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    for (int d = 0; d < in[0]->ndim; d++) HG_DATA(out[0], int64_t)[d] = in[0]->shape[d];
    return HG_OK;
}

static hg_status size_array_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    out[0].dtype = HG_DTYPE_I64;
    out[0].ndim = 1;
    out[0].shape[0] = 1;
    return HG_OK;
}

static hg_status size_array_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    HG_DATA(out[0], int64_t)[0] = in[0]->size;
    return HG_OK;
}

/* argmax_channel is MXNet's legacy argmax over axis 1 (keepdims false), in data's dtype. */
static hg_status argmax_channel_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                      int nout, hg_meta *out)
{
    char s[HG_SHAPE_STR];
    out[0].dtype = in[0].dtype;
    if (TX_UNKNOWN(in[0])) return HG_OK;
    if (in[0].ndim < 2 || in[0].shape[1] == 0)
        return hg_error(HG_ERR_VALUE,
                        "argmax_channel: input of shape %s has no (non-empty) axis 1 to search",
                        hg_shape_str(s, in[0].ndim, in[0].shape));
    out[0] = in[0];
    out[0].ndim = in[0].ndim - 1;
    for (int d = 1; d < out[0].ndim; d++) out[0].shape[d] = in[0].shape[d + 1];
    return HG_OK;
}

static hg_status argmax_channel_forward(const hg_op_def *op, const hg_attrs *a,
                                        const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                        int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    int64_t outer = x->shape[0], n = x->shape[1], inner = tx_prod(x->shape, 2, x->ndim);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t best = 0, base = o * n * inner + i;
            double bv = tx_ld(hg_data(x), x->dtype, base);
            for (int64_t j = 1; j < n; j++) {
                double v = tx_ld(hg_data(x), x->dtype, base + j * inner);
                if (v > bv || (v != v && bv == bv)) {
                    bv = v;
                    best = j;
                }
            }
            tx_st(hg_data(out[0]), out[0]->dtype, o * inner + i, (double)best);
        }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * batch_take: out[i] = a[i * M + clip(indices[i], 0, M - 1)], M = a.size / a.shape[0]
 * ------------------------------------------------------------------------------------------- */

static hg_status batch_take_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0].dtype = in[0].dtype;
    if (in[1].dtype != HG_DTYPE_I32)
        return hg_error(HG_ERR_TYPE, "batch_take: indices must be int32, got %s",
                        hg_dtype_name(in[1].dtype));
    if (any_unknown(&in[0]) || any_unknown(&in[1])) return HG_OK;
    const hg_meta *x = &in[0];
    if (x->ndim < 2)
        return hg_error(HG_ERR_VALUE, "batch_take: data must have at least 2 dims, got shape %s",
                        hg_shape_str(s1, x->ndim, x->shape));
    int64_t last = x->shape[x->ndim - 1];
    if ((last ? tx_prod(x->shape, 0, x->ndim) / last : 0) != tx_prod(in[1].shape, 0, in[1].ndim))
        return hg_error(HG_ERR_VALUE,
                        "batch_take: indices of shape %s must have as many elements as data of "
                        "shape %s without its last axis",
                        hg_shape_str(s1, in[1].ndim, in[1].shape),
                        hg_shape_str(s2, x->ndim, x->shape));
    out[0] = in[1];
    out[0].dtype = x->dtype;
    return HG_OK;
}

static hg_status batch_take_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    size_t esz = hg_dtype_size(x->dtype);
    int64_t m = x->shape[0] ? x->size / x->shape[0] : 0;
    const int32_t *idx = hg_data(in[1]);
    for (int64_t i = 0; i < out[0]->size; i++) {
        int64_t j = idx[i] < 0 ? 0 : (idx[i] >= m ? m - 1 : idx[i]);
        int64_t src = i * m + j;
        if (src < 0 || src >= x->size)
            return hg_error(HG_ERR_INDEX,
                            "batch_take: row %lld addresses element %lld of data with %lld "
                            "elements",
                            (long long)i, (long long)src, (long long)x->size);
        memcpy((char *)hg_data(out[0]) + (size_t)i * esz, (const char *)hg_data(x) + src * esz,
               esz);
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * gather_nd, scatter_nd, _backward_gather_nd, _scatter_set_nd
 *
 * indices has shape (M, Y...): column y is an index into data's first M dims; the result has
 * shape Y + data.shape[M:]. Negative indices count from the end (MXNet 1.9).
 * ------------------------------------------------------------------------------------------- */

static hg_status gnd_shape(const char *op, const hg_meta *data, const hg_meta *idx, hg_meta *o)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    if (idx->ndim < 1 || idx->shape[0] < 1 || idx->shape[0] > data->ndim ||
        idx->ndim - 1 + data->ndim - idx->shape[0] > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE,
                        "%s: indices of shape %s do not fit data of shape %s (indices.shape[0] "
                        "must be in [1, data.ndim])",
                        op, hg_shape_str(s1, idx->ndim, idx->shape),
                        hg_shape_str(s2, data->ndim, data->shape));
    o->ndim = 0;
    for (int d = 1; d < idx->ndim; d++) o->shape[o->ndim++] = idx->shape[d];
    for (int d = (int)idx->shape[0]; d < data->ndim; d++) o->shape[o->ndim++] = data->shape[d];
    if (o->ndim == 0) o->shape[o->ndim++] = 1;
    return HG_OK;
}

static hg_status gather_nd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    out[0].dtype = in[0].dtype;
    if (any_unknown(&in[0]) || any_unknown(&in[1])) return HG_OK;
    hg_meta o = {.dtype = in[0].dtype};
    HG_TRY(gnd_shape(op->name, &in[0], &in[1], &o));
    out[0] = o;
    return HG_OK;
}

/* For column y of idx (M rows, n columns), the flat offset in units of `inner` elements of an
 * array of shape `shape`; fails on an index out of range. */
static hg_status gnd_offset(const char *op, const hg_tensor *idx, int64_t y, int64_t n, int m,
                            const int64_t *shape, int64_t *off)
{
    int64_t o = 0;
    for (int k = 0; k < m; k++) {
        int64_t j = tx_ldi(hg_data(idx), idx->dtype, k * n + y);
        if (j < 0) j += shape[k];
        if (j < 0 || j >= shape[k])
            return hg_error(HG_ERR_INDEX, "%s: index %lld is out of range for axis %d of size %lld",
                            op, (long long)tx_ldi(hg_data(idx), idx->dtype, k * n + y), k,
                            (long long)shape[k]);
        o = o * shape[k] + j;
    }
    *off = o;
    return HG_OK;
}

static hg_status gather_nd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0], *idx = in[1];
    int m = (int)idx->shape[0];
    int64_t n = idx->size / m, inner = tx_prod(x->shape, m, x->ndim);
    size_t row = (size_t)inner * hg_dtype_size(x->dtype);
    for (int64_t y = 0; y < n; y++) {
        int64_t off;
        HG_TRY(gnd_offset(op->name, idx, y, n, m, x->shape, &off));
        memcpy((char *)hg_data(out[0]) + (size_t)y * row, (const char *)hg_data(x) + off * row,
               row);
    }
    return HG_OK;
}

static const hg_attr_spec k_snd_attrs[] = {
    [SND_SHAPE] = {"shape", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "shape of the result", NULL},
};
_Static_assert(HG_COUNT(k_snd_attrs) == SND_NATTRS, "k_snd_attrs must match its enum");

/* scatter_nd(data, indices) and _backward_gather_nd(data, indices): data has the shape
 * gather_nd would give for an array of `shape`. */
static hg_status scatter_nd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    const hg_tuple *t = &a->v[SND_SHAPE].t;
    out[0].dtype = in[0].dtype;
    hg_meta full = {.ndim = t->n, .dtype = in[0].dtype};
    for (int d = 0; d < t->n; d++) {
        if (t->v[d] < 0) return hg_error(HG_ERR_VALUE, "%s: shape has a negative dim", op->name);
        full.shape[d] = t->v[d];
    }
    out[0] = full;
    if (any_unknown(&in[0]) || any_unknown(&in[1])) return HG_OK;
    hg_meta g = {.dtype = in[0].dtype};
    HG_TRY(gnd_shape(op->name, &full, &in[1], &g));
    if (!hg_shape_equal(g.ndim, g.shape, in[0].ndim, in[0].shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: data of shape %s does not match indices of shape %s into shape %s",
                        op->name, hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape),
                        hg_shape_str((char[HG_SHAPE_STR]){0}, full.ndim, full.shape));
    return HG_OK;
}

/* out (already holding its base values) gets data's rows at the indexed places, added or
 * stored. */
static hg_status scatter_rows(const hg_op_def *op, const hg_tensor *data, const hg_tensor *idx,
                              hg_tensor *o, bool add)
{
    int m = (int)idx->shape[0];
    int64_t n = idx->size / m, inner = tx_prod(o->shape, m, o->ndim);
    size_t esz = hg_dtype_size(o->dtype);
    for (int64_t y = 0; y < n; y++) {
        int64_t off;
        HG_TRY(gnd_offset(op->name, idx, y, n, m, o->shape, &off));
        if (!add) {
            memcpy((char *)hg_data(o) + (size_t)(off * inner) * esz,
                   (const char *)hg_data(data) + (size_t)(y * inner) * esz, (size_t)inner * esz);
            continue;
        }
        for (int64_t e = 0; e < inner; e++)
            tx_st(hg_data(o), o->dtype, off * inner + e,
                  tx_ld(hg_data(o), o->dtype, off * inner + e) +
                      tx_ld(hg_data(data), data->dtype, y * inner + e));
    }
    return HG_OK;
}

static hg_status scatter_nd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_ops_zero_fill(out[0]);
    return scatter_rows(op, in[0], in[1], out[0], false);
}

static hg_status bwd_gather_nd_forward(const hg_op_def *op, const hg_attrs *a,
                                       const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                       int nout, hg_tensor *const *out)
{
    hg_ops_zero_fill(out[0]);
    return scatter_rows(op, in[0], in[1], out[0], true);
}

/* _scatter_set_nd(lhs, rhs, indices): lhs with rhs stored at the indices. */
static hg_status scatter_set_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0] = in[0];
    if (any_unknown(&in[0]) || any_unknown(&in[1]) || any_unknown(&in[2])) return HG_OK;
    if (in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "_scatter_set_nd: rhs dtype %s differs from lhs dtype %s",
                        hg_dtype_name(in[1].dtype), hg_dtype_name(in[0].dtype));
    hg_meta g = {.dtype = in[0].dtype};
    HG_TRY(gnd_shape(op->name, &in[0], &in[2], &g));
    if (!hg_shape_equal(g.ndim, g.shape, in[1].ndim, in[1].shape))
        return hg_error(
            HG_ERR_VALUE, "_scatter_set_nd: rhs of shape %s does not match the indexed shape %s",
            hg_shape_str(s1, in[1].ndim, in[1].shape), hg_shape_str(s2, g.ndim, g.shape));
    return HG_OK;
}

static hg_status scatter_set_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    copy_forward(op, a, ctx, 1, in, 1, out);
    return scatter_rows(op, in[1], in[2], out[0], false);
}

static hg_status gather_nd_grad(hg_grad_ctx *g)
{
    hg_sentry x = hg_g_in(g, 0), idx = hg_g_in(g, 1);
    hg_sentry z = hg_g_op(g, "zeros_like", HG_GIN(x), NULL);
    hg_g_set(g, 0, hg_g_op(g, "_scatter_add_like_nd", HG_GIN(z, hg_g_ograd(g, 0), idx), NULL));
    return hg_g_status(g);
}

static hg_status scatter_nd_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "gather_nd", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}

/* _scatter_add_like_nd(base, data, indices): base with data added at the indices. It is the
 * gradient of gather_nd in graphs (the result shape comes from base, so no attribute has to
 * know the forward's shape when the rule runs). */
static hg_status scatter_add_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    return scatter_set_infer(op, a, nin, in, nout, out);
}

static hg_status scatter_add_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    copy_forward(op, a, ctx, 1, in, 1, out);
    return scatter_rows(op, in[1], in[2], out[0], true);
}

static hg_status scatter_add_grad(hg_grad_ctx *g)
{
    hg_sentry dy = hg_g_ograd(g, 0);
    if (hg_g_needs(g, 0)) hg_g_set(g, 0, hg_g_op(g, "_copy", HG_GIN(dy), NULL));
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "gather_nd", HG_GIN(dy, hg_g_in(g, 2)), NULL));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * depth_to_space / space_to_depth (NCHW, DCR order as MXNet)
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_ds_attrs[] = {
    [DS_BLOCK] = {"block_size", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                  "size of the square blocks moved between depth and space", NULL},
};
_Static_assert(HG_COUNT(k_ds_attrs) == DS_NATTRS, "k_ds_attrs must match its enum");

static hg_status ds_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    char s[HG_SHAPE_STR];
    bool to_space = strcmp(op->name, "depth_to_space") == 0;
    int64_t b = a->v[DS_BLOCK].i;
    out[0].dtype = in[0].dtype;
    if (b <= 0)
        return hg_error(HG_ERR_VALUE, "%s: block_size must be positive, got %lld", op->name,
                        (long long)b);
    if (any_unknown(&in[0])) return HG_OK;
    const hg_meta *x = &in[0];
    if (x->ndim != 4)
        return hg_error(HG_ERR_VALUE, "%s: input must be 4-D (N, C, H, W), got shape %s", op->name,
                        hg_shape_str(s, x->ndim, x->shape));
    for (int d = 0; d < 4; d++)
        if (x->shape[d] == 0) /* MXNet refuses empty inputs here */
            return hg_error(HG_ERR_VALUE, "%s: dim %d of input shape %s is 0", op->name, d,
                            hg_shape_str(s, x->ndim, x->shape));
    out[0] = *x;
    if (to_space) {
        if (b > x->shape[1] || x->shape[1] % (b * b) != 0) /* b <= C: b * b cannot overflow */
            return hg_error(HG_ERR_VALUE,
                            "depth_to_space: channels of input shape %s are not a multiple of "
                            "block_size^2 (block_size %lld)",
                            hg_shape_str(s, x->ndim, x->shape), (long long)b);
        out[0].shape[1] = x->shape[1] / (b * b);
        out[0].shape[2] = x->shape[2] * b;
        out[0].shape[3] = x->shape[3] * b;
    } else {
        if (x->shape[2] % b != 0 || x->shape[3] % b != 0)
            return hg_error(HG_ERR_VALUE,
                            "space_to_depth: height and width of input shape %s are not "
                            "multiples of block_size %lld",
                            hg_shape_str(s, x->ndim, x->shape), (long long)b);
        out[0].shape[1] = x->shape[1] * b * b;
        out[0].shape[2] = x->shape[2] / b;
        out[0].shape[3] = x->shape[3] / b;
    }
    return HG_OK;
}

/* The spatial array S (n, c, H, W) and the depth array D (n, c*b*b, H/b, W/b) are related by
 * D[n, (i*b + j)*c + k, h, w] = S[n, k, h*b + i, w*b + j]. */
static hg_status ds_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    bool to_space = strcmp(op->name, "depth_to_space") == 0;
    const hg_tensor *sp = to_space ? out[0] : in[0], *dp = to_space ? in[0] : out[0];
    int64_t b = a->v[DS_BLOCK].i, N = sp->shape[0], C = sp->shape[1], H = sp->shape[2],
            W = sp->shape[3], h2 = H / b, w2 = W / b;
    size_t esz = hg_dtype_size(sp->dtype);
    char *s = hg_data(sp), *d = hg_data(dp);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < b; i++)
            for (int64_t j = 0; j < b; j++)
                for (int64_t k = 0; k < C; k++)
                    for (int64_t h = 0; h < h2; h++)
                        for (int64_t w = 0; w < w2; w++) {
                            int64_t di = (((n * b + i) * b + j) * C + k) * h2 * w2 + h * w2 + w;
                            int64_t si = ((n * C + k) * H + h * b + i) * W + w * b + j;
                            if (to_space) memcpy(s + si * esz, d + di * esz, esz);
                            else memcpy(d + di * esz, s + si * esz, esz);
                        }
    return HG_OK;
}

static hg_status ds_grad(hg_grad_ctx *g)
{
    bool to_space = strcmp(hg_g_node(g)->op->name, "depth_to_space") == 0;
    hg_g_set(g, 0,
             hg_g_op(g, to_space ? "space_to_depth" : "depth_to_space", HG_GIN(hg_g_ograd(g, 0)),
                     HG_KV("block_size", hg_g_attr_str(g, DS_BLOCK))));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * _ravel_multi_index / _unravel_index
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_rv_attrs[] = {
    [RV_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()",
                  "shape of the array the indices apply to (the first dim may be -1)", NULL},
};
_Static_assert(HG_COUNT(k_rv_attrs) == RV_NATTRS, "k_rv_attrs must match its enum");

static hg_status rv_check_shape(const char *op, const hg_tuple *t)
{
    if (t->n == 0) return hg_error(HG_ERR_VALUE, "%s: the shape attribute is empty", op);
    for (int d = 1; d < t->n; d++)
        if (t->v[d] <= 0)
            return hg_error(HG_ERR_VALUE, "%s: shape dim %d must be positive, got %lld", op, d,
                            (long long)t->v[d]);
    return HG_OK;
}

static hg_status ravel_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s[HG_SHAPE_STR];
    const hg_tuple *t = &a->v[RV_SHAPE].t;
    out[0].dtype = in[0].dtype;
    HG_TRY(rv_check_shape(op->name, t));
    if (any_unknown(&in[0])) return HG_OK;
    if (in[0].ndim != 2 || in[0].shape[0] != t->n)
        return hg_error(HG_ERR_VALUE,
                        "_ravel_multi_index: data must be 2-D with shape[0] == %d (the length "
                        "of shape), got %s",
                        t->n, hg_shape_str(s, in[0].ndim, in[0].shape));
    out[0].ndim = 1;
    out[0].shape[0] = in[0].shape[1];
    return HG_OK;
}

static hg_status unravel_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    char s[HG_SHAPE_STR];
    const hg_tuple *t = &a->v[RV_SHAPE].t;
    out[0].dtype = in[0].dtype;
    HG_TRY(rv_check_shape(op->name, t));
    if (any_unknown(&in[0])) return HG_OK;
    if (in[0].ndim != 1)
        return hg_error(HG_ERR_VALUE, "_unravel_index: data must be 1-D, got shape %s",
                        hg_shape_str(s, in[0].ndim, in[0].shape));
    out[0].ndim = 2;
    out[0].shape[0] = t->n;
    out[0].shape[1] = in[0].shape[0];
    return HG_OK;
}

static hg_status ravel_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tuple *t = &a->v[RV_SHAPE].t;
    int64_t n = out[0]->size;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = 0;
        for (int j = 0; j < t->n; j++)
            r = r * t->v[j] + tx_ldi(hg_data(in[0]), in[0]->dtype, i + j * n);
        tx_sti(hg_data(out[0]), out[0]->dtype, i, r);
    }
    return HG_OK;
}

static hg_status unravel_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tuple *t = &a->v[RV_SHAPE].t;
    int64_t n = in[0]->size;
    for (int64_t i = 0; i < n; i++) {
        int64_t idx = tx_ldi(hg_data(in[0]), in[0]->dtype, i);
        for (int j = t->n - 1; j > 0; j--) {
            int64_t q = idx / t->v[j];
            tx_sti(hg_data(out[0]), out[0]->dtype, i + j * n, idx - q * t->v[j]);
            idx = q;
        }
        tx_sti(hg_data(out[0]), out[0]->dtype, i, idx);
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _split_v2
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_split_attrs[] = {
    [SP_INDICES] = {"indices", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                    "start of each piece along axis (the first is 0)", NULL},
    [SP_AXIS] = {"axis", HG_ATTR_INT, 0, "1", "axis to split along", NULL},
    [SP_SQUEEZE] = {"squeeze_axis", HG_ATTR_BOOL, 0, "False",
                    "drop the split axis (every piece must then have length 1)", NULL},
    [SP_SECTIONS] = {"sections", HG_ATTR_INT, 0, "0",
                     "number of equal pieces (0: split at indices)", NULL},
};
_Static_assert(HG_COUNT(k_split_attrs) == SP_NATTRS, "k_split_attrs must match its enum");

static hg_status split_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s[HG_SHAPE_STR];
    for (int i = 0; i < nout; i++) out[i].dtype = in[0].dtype;
    if (nout < 1 || nout > HG_MAX_TUPLE)
        return hg_error(HG_ERR_VALUE, "_split_v2: %d pieces (give 1 to %d)", nout, HG_MAX_TUPLE);
    if (any_unknown(&in[0])) return HG_OK;
    int axis = 0;
    HG_TRY(tx_axis("_split_v2", a->v[SP_AXIS].i, &in[0], &axis));
    int64_t len = in[0].shape[axis], bounds[HG_MAX_TUPLE + 1];
    hg_split_bounds(a, len, bounds);
    for (int i = 0; i < nout; i++) {
        if (bounds[i] < 0 || bounds[i] > bounds[i + 1] || bounds[i + 1] > len)
            return hg_error(HG_ERR_VALUE,
                            "_split_v2: piece %d [%lld, %lld) does not fit axis %d of shape %s "
                            "(indices must be increasing and within the axis)",
                            i, (long long)bounds[i], (long long)bounds[i + 1], axis,
                            hg_shape_str(s, in[0].ndim, in[0].shape));
        out[i] = in[0];
        out[i].shape[axis] = bounds[i + 1] - bounds[i];
        if (a->v[SP_SQUEEZE].b) {
            if (out[i].shape[axis] != 1)
                return hg_error(HG_ERR_VALUE,
                                "_split_v2: squeeze_axis needs pieces of length 1, piece %d has "
                                "%lld",
                                i, (long long)out[i].shape[axis]);
            for (int d = axis; d < in[0].ndim - 1; d++) out[i].shape[d] = in[0].shape[d + 1];
            out[i].ndim--;
        }
    }
    return HG_OK;
}

static hg_status split_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    int axis = (int)(a->v[SP_AXIS].i < 0 ? a->v[SP_AXIS].i + x->ndim : a->v[SP_AXIS].i);
    int64_t len = x->shape[axis], outer = tx_prod(x->shape, 0, axis),
            inner = tx_prod(x->shape, axis + 1, x->ndim), bounds[HG_MAX_TUPLE + 1];
    size_t esz = hg_dtype_size(x->dtype);
    hg_split_bounds(a, len, bounds);
    for (int i = 0; i < nout; i++) {
        int64_t w = bounds[i + 1] - bounds[i];
        size_t row = (size_t)(w * inner) * esz;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)hg_data(out[i]) + (size_t)o * row,
                   (const char *)hg_data(x) + (size_t)((o * len + bounds[i]) * inner) * esz, row);
    }
    return HG_OK;
}

static hg_status split_grad(hg_grad_ctx *g)
{
    const hg_attrs *a = hg_g_attrs(g);
    int n = hg_g_nout(g);
    hg_sentry parts[HG_MAX_TUPLE];
    const char *axis = hg_g_attr_str(g, SP_AXIS);
    for (int i = 0; i < n; i++) {
        parts[i] = hg_g_ograd(g, i);
        if (a->v[SP_SQUEEZE].b)
            parts[i] = hg_g_op(g, "expand_dims", HG_GIN(parts[i]), HG_KV("axis", axis));
    }
    hg_g_set(g, 0,
             hg_g_op(g, "Concat", n, parts, HG_KV("dim", axis, "num_args", hg_g_fmt(g, "%d", n))));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * fill_element_0index(lhs, mhs, rhs): lhs with lhs[i, rhs[i]] = mhs[i];
 * _onehot_encode(indices, like): zeros of like's shape with out[i, indices[i]] = 1
 * ------------------------------------------------------------------------------------------- */

static hg_status fill0_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    out[0] = in[0];
    if (any_unknown(&in[0]) || any_unknown(&in[1]) || any_unknown(&in[2])) return HG_OK;
    if (in[0].ndim != 2 || in[1].ndim != 1 || in[2].ndim != 1 || in[1].shape[0] != in[0].shape[0] ||
        in[2].shape[0] != in[0].shape[0])
        return hg_error(HG_ERR_VALUE,
                        "fill_element_0index: lhs must be 2-D (n, k) and mhs, rhs 1-D (n,); got "
                        "%s, %s, %s",
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape),
                        hg_shape_str(s3, in[2].ndim, in[2].shape));
    return HG_OK;
}

static hg_status fill0_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_tensor *o = out[0];
    copy_forward(op, a, ctx, 1, in, 1, out);
    int64_t n = o->shape[0], k = o->shape[1];
    for (int64_t i = 0; i < n; i++) {
        int64_t j = tx_ldi(hg_data(in[2]), in[2]->dtype, i);
        if (j < 0 || j >= k)
            return hg_error(HG_ERR_INDEX,
                            "fill_element_0index: index %lld of row %lld is out of range [0, "
                            "%lld)",
                            (long long)j, (long long)i, (long long)k);
        tx_st(hg_data(o), o->dtype, i * k + j, tx_ld(hg_data(in[1]), in[1]->dtype, i));
    }
    return HG_OK;
}

static hg_status onehot_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0] = in[1];
    if (any_unknown(&in[0]) || any_unknown(&in[1])) return HG_OK;
    if (in[1].ndim != 2 || in[0].ndim != 1 || in[0].shape[0] != in[1].shape[0])
        return hg_error(HG_ERR_VALUE,
                        "_onehot_encode: indices must be 1-D (n,) and the output 2-D (n, k); "
                        "got %s and %s",
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape));
    return HG_OK;
}

static hg_status onehot_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_tensor *o = out[0];
    int64_t n = o->shape[0], k = o->shape[1];
    hg_ops_zero_fill(o);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = tx_ldi(hg_data(in[0]), in[0]->dtype, i);
        if (j < 0 || j >= k)
            return hg_error(HG_ERR_INDEX, "_onehot_encode: index %lld is out of range [0, %lld)",
                            (long long)j, (long long)k);
        tx_st(hg_data(o), o->dtype, i * k + j, 1);
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * khatri_rao: column-wise Kronecker product of matrices (I_k, R) -> (prod I_k, R)
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_kr_attrs[] = {
    [KR_NUM_ARGS] = {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of matrices", NULL},
};
_Static_assert(HG_COUNT(k_kr_attrs) == KR_NATTRS, "k_kr_attrs must match its enum");

static hg_status kr_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    char s[HG_SHAPE_STR];
    out[0].dtype = in[0].dtype;
    if (nin < 1) return hg_error(HG_ERR_VALUE, "khatri_rao: needs at least one matrix");
    int64_t rows = 1, cols = -1;
    for (int i = 0; i < nin; i++) {
        if (any_unknown(&in[i])) return HG_OK;
        if (in[i].ndim != 2 || (cols >= 0 && in[i].shape[1] != cols))
            return hg_error(HG_ERR_VALUE,
                            "khatri_rao: input %d of shape %s is not a matrix with the others' "
                            "column count",
                            i, hg_shape_str(s, in[i].ndim, in[i].shape));
        if (in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "khatri_rao: input %d has dtype %s, input 0 %s", i,
                            hg_dtype_name(in[i].dtype), hg_dtype_name(in[0].dtype));
        cols = in[i].shape[1];
        rows *= in[i].shape[0];
    }
    out[0].ndim = 2;
    out[0].shape[0] = rows;
    out[0].shape[1] = cols;
    return HG_OK;
}

static hg_status kr_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_tensor *o = out[0];
    int64_t rows = o->shape[0], cols = o->shape[1];
    for (int64_t r = 0; r < rows; r++) {
        /* Row r is the mixed-radix number (i_0, ..., i_{n-1}) with the last input fastest. */
        for (int64_t c = 0; c < cols; c++) {
            double p = 1;
            int64_t rem = r;
            for (int k = nin - 1; k >= 0; k--) {
                int64_t ik = rem % in[k]->shape[0];
                rem /= in[k]->shape[0];
                p *= tx_ld(hg_data(in[k]), in[k]->dtype, ik * cols + c);
            }
            tx_st(hg_data(o), o->dtype, r * cols + c, p);
        }
    }
    return HG_OK;
}

static int kr_nin(const hg_attrs *a) { return (int)a->v[KR_NUM_ARGS].i; }

/* ---------------------------------------------------------------------------------------------
 * Registry entries
 * ------------------------------------------------------------------------------------------- */

const hg_op_def hg_ops_tensor_extra[] = {
    {.name = "reshape_like",
     .doc = "lhs reshaped so that dims [lhs_begin, lhs_end) become rhs's dims "
            "[rhs_begin, rhs_end)",
     .input_names = HG_NAMES("lhs", "rhs"),
     .attrs = k_rl_attrs,
     .num_attrs = HG_COUNT(k_rl_attrs),
     .num_inputs = 2,
     .infer = rl_infer,
     .forward = copy_forward,
     .grad = rl_grad},
    {.name = "shape_array",
     .doc = "the shape of the input as a 1-D int64 array",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .infer = shape_array_infer,
     .forward = shape_array_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "size_array",
     .doc = "the number of elements of the input as a (1,) int64 array",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .infer = size_array_infer,
     .forward = size_array_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "argmax_channel",
     .doc = "index of the largest element along axis 1 (data's dtype)",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .infer = argmax_channel_infer,
     .forward = argmax_channel_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "batch_take",
     .doc = "one element of each row of a, chosen by int32 indices (clipped)",
     .input_names = HG_NAMES("a", "indices"),
     .num_inputs = 2,
     .infer = batch_take_infer,
     .forward = batch_take_forward}, /* no gradient: differentiating it is an error, as in MXNet */
    {.name = "gather_nd",
     .doc = "elements or slices of data addressed by the columns of indices",
     .input_names = HG_NAMES("data", "indices"),
     .num_inputs = 2,
     .infer = gather_nd_infer,
     .forward = gather_nd_forward,
     .grad = gather_nd_grad},
    {.name = "scatter_nd",
     .doc = "zeros of shape with data stored at the places indices address",
     .input_names = HG_NAMES("data", "indices"),
     .attrs = k_snd_attrs,
     .num_attrs = HG_COUNT(k_snd_attrs),
     .num_inputs = 2,
     .infer = scatter_nd_infer,
     .forward = scatter_nd_forward,
     .grad = scatter_nd_grad},
    {.name = "_backward_gather_nd",
     .doc = "zeros of shape with data added at the places indices address (repeats add up)",
     .input_names = HG_NAMES("data", "indices"),
     .attrs = k_snd_attrs,
     .num_attrs = HG_COUNT(k_snd_attrs),
     .num_inputs = 2,
     .infer = scatter_nd_infer,
     .forward = bwd_gather_nd_forward,
     .grad = scatter_nd_grad},
    {.name = "_scatter_set_nd",
     .doc = "lhs with rhs stored at the places indices address",
     .input_names = HG_NAMES("lhs", "rhs", "indices"),
     .attrs = k_snd_attrs,
     .num_attrs = HG_COUNT(k_snd_attrs),
     .num_inputs = 3,
     .infer = scatter_set_infer,
     .forward = scatter_set_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_scatter_add_like_nd",
     .doc = "base with data added at the places indices address (gather_nd's gradient)",
     .input_names = HG_NAMES("base", "data", "indices"),
     .num_inputs = 3,
     .infer = scatter_add_infer,
     .forward = scatter_add_forward,
     .grad = scatter_add_grad},
    {.name = "depth_to_space",
     .doc = "moves depth blocks of size block_size^2 into spatial blocks (NCHW)",
     .input_names = HG_NAMES("data"),
     .attrs = k_ds_attrs,
     .num_attrs = HG_COUNT(k_ds_attrs),
     .num_inputs = 1,
     .infer = ds_infer,
     .forward = ds_forward,
     .grad = ds_grad},
    {.name = "space_to_depth",
     .doc = "moves spatial blocks of block_size x block_size into depth (NCHW)",
     .input_names = HG_NAMES("data"),
     .attrs = k_ds_attrs,
     .num_attrs = HG_COUNT(k_ds_attrs),
     .num_inputs = 1,
     .infer = ds_infer,
     .forward = ds_forward,
     .grad = ds_grad},
    {.name = "_ravel_multi_index",
     .aliases = HG_NAMES("ravel_multi_index"),
     .doc = "flat indices of the multi-indices in the columns of data into shape",
     .input_names = HG_NAMES("data"),
     .attrs = k_rv_attrs,
     .num_attrs = HG_COUNT(k_rv_attrs),
     .num_inputs = 1,
     .infer = ravel_infer,
     .forward = ravel_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_unravel_index",
     .aliases = HG_NAMES("unravel_index"),
     .doc = "multi-indices (one column each) of the flat indices in data into shape",
     .input_names = HG_NAMES("data"),
     .attrs = k_rv_attrs,
     .num_attrs = HG_COUNT(k_rv_attrs),
     .num_inputs = 1,
     .infer = unravel_infer,
     .forward = unravel_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_split_v2",
     .doc = "pieces of data along axis, split at indices or into sections",
     .input_names = HG_NAMES("data"),
     .attrs = k_split_attrs,
     .num_attrs = HG_COUNT(k_split_attrs),
     .num_inputs = 1,
     .get_num_outputs = hg_split_nout,
     .infer = split_infer,
     .forward = split_forward,
     .grad = split_grad},
    {.name = "fill_element_0index",
     .doc = "lhs with lhs[i, rhs[i]] set to mhs[i]",
     .input_names = HG_NAMES("lhs", "mhs", "rhs"),
     .num_inputs = 3,
     .infer = fill0_infer,
     .forward = fill0_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_onehot_encode",
     .doc = "one-hot rows: zeros of the second input's shape with 1 at (i, indices[i])",
     .input_names = HG_NAMES("lhs", "rhs"),
     .num_inputs = 2,
     .infer = onehot_infer,
     .forward = onehot_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "khatri_rao",
     .doc = "column-wise Kronecker product of matrices with equal column counts",
     .input_names = HG_NAMES("args"),
     .attrs = k_kr_attrs,
     .num_attrs = HG_COUNT(k_kr_attrs),
     .get_num_inputs = kr_nin,
     .infer = kr_infer,
     .forward = kr_forward,
     .flags = HG_OP_VARARGS | HG_OP_NO_GRAD},
    {0},
};
