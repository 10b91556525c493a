/* Multi-head attention's interleaved matmuls, as MXNet 1.9.1's contrib/transformer: the query,
 * key and value projections stay interleaved in one (seq, batch, heads * parts * head_dim)
 * tensor and each op reads its part in place, batched over (batch * heads):
 *   selfatt_qk(qkv)          -> (B*H, L, L)    q k^T / sqrt(head_dim)
 *   selfatt_valatt(qkv, att) -> (L, B, H*D)    att v, heads interleaved again
 *   encdec_qk(q, kv)         -> (B*H, Lq, Lk)
 *   encdec_valatt(kv, att)   -> (Lq, B, H*D)
 * MXNet runs them in float32 only; float64 is accepted here as well (for gradient checks). The
 * gradients are _backward_interleaved_* ops: the same strided products transposed. */
#include <math.h>
#include <string.h>

#include "ops/contrib_transformer.h"
#include "ops/contrib_util.h"
#include "ops/ops_util.h"

static const hg_attr_spec k_im_attrs[] = {
    [IM_HEADS] = {"heads", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of attention heads", NULL},
};
_Static_assert(HG_COUNT(k_im_attrs) == IM_NATTRS, "k_im_attrs must match its enum");

/* One head-batched operand inside a (seq, batch, heads * parts * dim) tensor: element
 * (b * heads + h, row, d) sits at row * srow + b * sb + h * sh + off + d. */
typedef struct {
    int64_t srow, sb, sh, off;
} view;

static view interleaved(int64_t batch, int64_t heads, int64_t parts, int64_t dim, int part)
{
    return (view){batch * heads * parts * dim, heads * parts * dim, parts * dim, part * dim};
}

static int64_t at(const view *v, int64_t bh, int64_t heads, int64_t row)
{
    return row * v->srow + (bh / heads) * v->sb + (bh % heads) * v->sh + v->off;
}

typedef struct {
    int64_t bh, heads, lq, lk, d; /* batches (B*H), heads, rows of q/att, rows of k/v, dim */
} dims;

/* s[bh, i, j] = scale * sum_d q(bh, i, d) k(bh, j, d) */
static void qk(const dims *z, const double *qp, view qv, const double *kp, view kv, double scale,
               double *s)
{
    for (int64_t bh = 0; bh < z->bh; bh++)
        for (int64_t i = 0; i < z->lq; i++) {
            const double *q = qp + at(&qv, bh, z->heads, i);
            for (int64_t j = 0; j < z->lk; j++) {
                const double *k = kp + at(&kv, bh, z->heads, j);
                double acc = 0;
                for (int64_t d = 0; d < z->d; d++) acc += q[d] * k[d];
                s[(bh * z->lq + i) * z->lk + j] = scale * acc;
            }
        }
}

/* dq(bh, i, :) += scale * sum_j ds[bh, i, j] k(bh, j, :); dk(bh, j, :) likewise from q. */
static void qk_backward(const dims *z, const double *ds, const double *qp, view qv,
                        const double *kp, view kv, double scale, double *dq, double *dk)
{
    for (int64_t bh = 0; bh < z->bh; bh++)
        for (int64_t i = 0; i < z->lq; i++) {
            int64_t qo = at(&qv, bh, z->heads, i);
            for (int64_t j = 0; j < z->lk; j++) {
                int64_t ko = at(&kv, bh, z->heads, j);
                double g = scale * ds[(bh * z->lq + i) * z->lk + j];
                for (int64_t d = 0; d < z->d; d++) {
                    dq[qo + d] += g * kp[ko + d];
                    dk[ko + d] += g * qp[qo + d];
                }
            }
        }
}

/* o(bh, i, :) = sum_j att[bh, i, j] v(bh, j, :) */
static void av(const dims *z, const double *att, const double *vp, view vv, double *op, view ov)
{
    for (int64_t bh = 0; bh < z->bh; bh++)
        for (int64_t i = 0; i < z->lq; i++) {
            double *o = op + at(&ov, bh, z->heads, i);
            for (int64_t d = 0; d < z->d; d++) o[d] = 0;
            for (int64_t j = 0; j < z->lk; j++) {
                const double *v = vp + at(&vv, bh, z->heads, j);
                double w = att[(bh * z->lq + i) * z->lk + j];
                for (int64_t d = 0; d < z->d; d++) o[d] += w * v[d];
            }
        }
}

/* datt[bh, i, j] = do(bh, i, :) . v(bh, j, :); dv(bh, j, :) += sum_i att[bh, i, j] do(bh, i, :) */
static void av_backward(const dims *z, const double *dop, view ov, const double *att,
                        const double *vp, view vv, double *datt, double *dv)
{
    for (int64_t bh = 0; bh < z->bh; bh++)
        for (int64_t i = 0; i < z->lq; i++) {
            const double *g = dop + at(&ov, bh, z->heads, i);
            for (int64_t j = 0; j < z->lk; j++) {
                int64_t vo = at(&vv, bh, z->heads, j);
                double w = att[(bh * z->lq + i) * z->lk + j], acc = 0;
                for (int64_t d = 0; d < z->d; d++) {
                    acc += g[d] * vp[vo + d];
                    dv[vo + d] += w * g[d];
                }
                datt[(bh * z->lq + i) * z->lk + j] = acc;
            }
        }
}

/* ---- shape rules ------------------------------------------------------------------------- */

static bool known(const hg_meta *m) { return m->ndim >= 0; }

static hg_status check_types(const hg_op_def *op, int nin, const hg_meta *in, int nout,
                             hg_meta *out)
{
    hg_dtype dt = in[0].dtype;
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: %s must be float32 or float64, got %s", op->name,
                        op->input_names[0], hg_dtype_name(dt));
    for (int i = 1; i < nin; i++)
        if (known(&in[i]) && in[i].dtype != dt)
            return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, %s has %s (they must match)",
                            op->name, op->input_names[i], hg_dtype_name(in[i].dtype),
                            op->input_names[0], hg_dtype_name(dt));
    for (int i = 0; i < nout; i++) out[i].dtype = dt;
    return HG_OK;
}

/* A (seq, batch, heads * parts * dim) tensor: its head_dim, or an error. */
static hg_status split_dim(const hg_op_def *op, const hg_attrs *a, const hg_meta *m, int parts,
                           int64_t *dim)
{
    char s[HG_SHAPE_STR];
    int64_t h = a->v[IM_HEADS].i;
    if (h < 1)
        return hg_error(HG_ERR_VALUE, "%s: heads must be >= 1, got %lld", op->name, (long long)h);
    if (m->ndim != 3 || m->shape[2] % (h * parts) != 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: want a 3-D (seq_length, batch, heads * %d * head_dim) tensor with "
                        "heads=%lld, got %s",
                        op->name, parts, (long long)h, hg_shape_str(s, m->ndim, m->shape));
    *dim = m->shape[2] / (h * parts);
    return HG_OK;
}

static void set3(hg_meta *m, int64_t a, int64_t b, int64_t c)
{
    m->ndim = 3;
    m->shape[0] = a, m->shape[1] = b, m->shape[2] = c;
}

/* The attention map of a valatt op: (B*H, lq, lk). */
static hg_status check_att(const hg_op_def *op, const hg_meta *att, int64_t bh, int64_t lq,
                           int64_t lk)
{
    char s[HG_SHAPE_STR];
    if (att->ndim != 3 || att->shape[0] != bh || (lq >= 0 && att->shape[1] != lq) ||
        att->shape[2] != lk)
        return hg_error(HG_ERR_VALUE, "%s: attention must have shape (%lld, %s, %lld), got %s",
                        op->name, (long long)bh, lq >= 0 ? "seq_length" : "query length",
                        (long long)lk, hg_shape_str(s, att->ndim, att->shape));
    return HG_OK;
}

static hg_status sqk_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    int64_t d = 0;
    hg_status st = check_types(op, nin, in, nout, out);
    if (st || !known(&in[0])) return st;
    if ((st = split_dim(op, a, &in[0], 3, &d))) return st;
    set3(&out[0], in[0].shape[1] * a->v[IM_HEADS].i, in[0].shape[0], in[0].shape[0]);
    return HG_OK;
}

static hg_status sva_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    int64_t d = 0;
    hg_status st = check_types(op, nin, in, nout, out);
    if (st || !known(&in[0]) || !known(&in[1])) return st;
    if ((st = split_dim(op, a, &in[0], 3, &d))) return st;
    int64_t l = in[0].shape[0], b = in[0].shape[1], h = a->v[IM_HEADS].i;
    if ((st = check_att(op, &in[1], b * h, l, l))) return st;
    set3(&out[0], l, b, h * d);
    return HG_OK;
}

static hg_status eqk_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    int64_t dq = 0, dk = 0;
    hg_status st = check_types(op, nin, in, nout, out);
    if (st || !known(&in[0]) || !known(&in[1])) return st;
    if ((st = split_dim(op, a, &in[0], 1, &dq)) || (st = split_dim(op, a, &in[1], 2, &dk)))
        return st;
    if (dq != dk || in[0].shape[1] != in[1].shape[1])
        return hg_error(HG_ERR_VALUE,
                        "%s: queries %s and keys_values %s differ in batch or head_dim "
                        "(keys_values.shape[2] must be 2 * queries.shape[2])",
                        op->name, hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape));
    set3(&out[0], in[0].shape[1] * a->v[IM_HEADS].i, in[0].shape[0], in[1].shape[0]);
    return HG_OK;
}

static hg_status eva_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    int64_t d = 0;
    hg_status st = check_types(op, nin, in, nout, out);
    if (st || !known(&in[0]) || !known(&in[1])) return st;
    if ((st = split_dim(op, a, &in[0], 2, &d))) return st;
    int64_t lk = in[0].shape[0], b = in[0].shape[1], h = a->v[IM_HEADS].i;
    if ((st = check_att(op, &in[1], b * h, -1, lk))) return st;
    set3(&out[0], in[1].shape[1], b, h * d);
    return HG_OK;
}

/* Backward shape rules: the gradients are shaped like the forward inputs (in[1..]). */
static hg_status bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    for (int i = 0; i < nout; i++) {
        if (!known(&in[i + 1])) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
        out[i] = in[i + 1];
    }
    return HG_OK;
}

/* ---- kernels ----------------------------------------------------------------------------- */

/* Loads the inputs as doubles and allocates zeroed double outputs; all freed by release. */
typedef struct {
    int nin, nout;
    double *in[4], *out[2];
    int64_t nin_sz[4], nout_sz[2];
} bufs;

static hg_status acquire(const hg_op_def *op, bufs *b, int nin, hg_tensor *const *in, int nout,
                         hg_tensor *const *out)
{
    memset(b, 0, sizeof(*b));
    b->nin = nin, b->nout = nout;
    bool ok = true;
    for (int i = 0; i < nin; i++) {
        b->nin_sz[i] = in[i]->size;
        ok = (b->in[i] = hg_c_load(in[i])) && ok;
    }
    for (int i = 0; i < nout; i++) {
        b->nout_sz[i] = out[i]->size;
        ok = (b->out[i] = hg_c_alloc(out[i]->size)) && ok;
        for (int64_t k = 0; b->out[i] && k < out[i]->size; k++) b->out[i][k] = 0;
    }
    return ok ? HG_OK : hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
}

static void release(bufs *b, hg_tensor *const *out, bool store)
{
    for (int i = 0; i < b->nout; i++) {
        if (store) hg_c_store(out[i], b->out[i]);
        hg_c_free(b->out[i], b->nout_sz[i]);
    }
    for (int i = 0; i < b->nin; i++) hg_c_free(b->in[i], b->nin_sz[i]);
}

/* The dims and views of each op from its (forward) inputs x0, x1. */
typedef enum { SELF_QK, SELF_VA, ENC_QK, ENC_VA } im_kind;

typedef struct {
    dims z;
    view a, b; /* selfatt_qk: q, k; selfatt_valatt: v, out; encdec_qk: q, k; encdec_va: v, out */
    double scale;
} plan;

static plan make_plan(im_kind kind, int64_t heads, const hg_tensor *x0, const hg_tensor *x1)
{
    plan p = {.z.heads = heads};
    int64_t l0 = x0->shape[0], b = x0->shape[1];
    p.z.bh = b * heads;
    switch (kind) {
    case SELF_QK:
        p.z.d = x0->shape[2] / (3 * heads), p.z.lq = p.z.lk = l0;
        p.a = interleaved(b, heads, 3, p.z.d, 0), p.b = interleaved(b, heads, 3, p.z.d, 1);
        break;
    case SELF_VA:
        p.z.d = x0->shape[2] / (3 * heads), p.z.lq = p.z.lk = l0;
        p.a = interleaved(b, heads, 3, p.z.d, 2), p.b = interleaved(b, heads, 1, p.z.d, 0);
        break;
    case ENC_QK:
        p.z.d = x0->shape[2] / heads, p.z.lq = l0, p.z.lk = x1->shape[0];
        p.a = interleaved(b, heads, 1, p.z.d, 0), p.b = interleaved(b, heads, 2, p.z.d, 0);
        break;
    case ENC_VA:
        p.z.d = x0->shape[2] / (2 * heads), p.z.lk = l0, p.z.lq = x1->shape[1];
        p.a = interleaved(b, heads, 2, p.z.d, 1), p.b = interleaved(b, heads, 1, p.z.d, 0);
        break;
    }
    /* MXNet (float32 only) scales by 1 / sqrt(head_dim) computed in float */
    p.scale = x0->dtype == HG_DTYPE_F32 ? (double)(1.0f / sqrtf((float)p.z.d))
                                        : 1.0 / sqrt((double)p.z.d);
    return p;
}

static hg_status im_run(const hg_op_def *op, im_kind kind, bool backward, const hg_attrs *a,
                        int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    bufs b;
    hg_status st = acquire(op, &b, nin, in, nout, out);
    if (st) {
        release(&b, out, false);
        return st;
    }
    int o = backward ? 1 : 0; /* backward ops take the output gradient first */
    plan p = make_plan(kind, a->v[IM_HEADS].i, in[o], nin > o + 1 ? in[o + 1] : in[o]);
    const double *x0 = b.in[o], *x1 = nin > o + 1 ? b.in[o + 1] : NULL, *dy = b.in[0];
    switch (kind) {
    case SELF_QK: /* one input: q and k are both parts of x0 */
        if (!backward) qk(&p.z, x0, p.a, x0, p.b, p.scale, b.out[0]);
        else qk_backward(&p.z, dy, x0, p.a, x0, p.b, p.scale, b.out[0], b.out[0]);
        break;
    case ENC_QK:
        if (!backward) qk(&p.z, x0, p.a, x1, p.b, p.scale, b.out[0]);
        else qk_backward(&p.z, dy, x0, p.a, x1, p.b, p.scale, b.out[0], b.out[1]);
        break;
    case SELF_VA:
    case ENC_VA: /* x0 holds v, x1 is the attention */
        if (!backward) av(&p.z, x1, x0, p.a, b.out[0], p.b);
        else av_backward(&p.z, dy, p.b, x1, x0, p.a, b.out[1], b.out[0]);
        break;
    }
    release(&b, out, true);
    return HG_OK;
}

#define IM_KERNELS(NAME, KIND)                                                                 \
    static hg_status NAME##_forward(const hg_op_def *op, const hg_attrs *a,                    \
                                    const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,     \
                                    int nout, hg_tensor *const *out)                           \
    {                                                                                          \
        (void)ctx;                                                                             \
        return im_run(op, KIND, false, a, nin, in, nout, out);                                 \
    }                                                                                          \
    static hg_status NAME##_backward(const hg_op_def *op, const hg_attrs *a,                   \
                                     const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,    \
                                     int nout, hg_tensor *const *out)                          \
    {                                                                                          \
        (void)ctx;                                                                             \
        return im_run(op, KIND, true, a, nin, in, nout, out);                                  \
    }                                                                                          \
    static hg_status NAME##_grad(hg_grad_ctx *g)                                               \
    {                                                                                          \
        int n = hg_g_nin(g);                                                                   \
        hg_sentry in[3] = {hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 0)};                    \
        if (n > 1) in[2] = hg_g_in(g, 1);                                                      \
        hg_sentry dx[2];                                                                       \
        hg_g_op_fwd_attrs(g, "_backward_interleaved_matmul_" #NAME, n + 1, in, NULL, n, dx);   \
        for (int i = 0; i < n; i++) hg_g_set(g, i, dx[i]);                                     \
        return hg_g_status(g);                                                                 \
    }
IM_KERNELS(selfatt_qk, SELF_QK)
IM_KERNELS(selfatt_valatt, SELF_VA)
IM_KERNELS(encdec_qk, ENC_QK)
IM_KERNELS(encdec_valatt, ENC_VA)

#define IM_OPS(NAME, INPUTS, NIN, DOC)                                                         \
    {.name = "_contrib_interleaved_matmul_" #NAME,                                             \
     .doc = DOC,                                                                               \
     .input_names = INPUTS,                                                                    \
     .attrs = k_im_attrs,                                                                      \
     .num_attrs = IM_NATTRS,                                                                   \
     .num_inputs = NIN,                                                                        \
     .num_outputs = 1,                                                                         \
     .infer = NAME##_infer_fn,                                                                 \
     .forward = NAME##_forward,                                                                \
     .grad = NAME##_grad},                                                                     \
    {.name = "_backward_interleaved_matmul_" #NAME,                                            \
     .doc = "gradient of interleaved_matmul_" #NAME " (output gradient, then its inputs)",     \
     .input_names = HG_NAMES("ograd", "in0", "in1"),                                           \
     .attrs = k_im_attrs,                                                                      \
     .num_attrs = IM_NATTRS,                                                                   \
     .num_inputs = NIN + 1,                                                                    \
     .num_outputs = NIN,                                                                       \
     .infer = bw_infer,                                                                        \
     .forward = NAME##_backward,                                                               \
     .flags = HG_OP_NO_GRAD}
#define selfatt_qk_infer_fn sqk_infer
#define selfatt_valatt_infer_fn sva_infer
#define encdec_qk_infer_fn eqk_infer
#define encdec_valatt_infer_fn eva_infer

const hg_op_def hg_ops_contrib_transformer[] = {
    IM_OPS(selfatt_qk, HG_NAMES("queries_keys_values"), 1,
           "q k^T / sqrt(head_dim) per (batch, head) from interleaved (L, B, H * 3 * D) "
           "projections; output (B * H, L, L)"),
    IM_OPS(selfatt_valatt, HG_NAMES("queries_keys_values", "attention"), 2,
           "attention (B * H, L, L) times the value part of interleaved (L, B, H * 3 * D) "
           "projections; output (L, B, H * D)"),
    IM_OPS(encdec_qk, HG_NAMES("queries", "keys_values"), 2,
           "queries (Lq, B, H * D) times the key part of keys_values (Lk, B, H * 2 * D), "
           "scaled by 1 / sqrt(D); output (B * H, Lq, Lk)"),
    IM_OPS(encdec_valatt, HG_NAMES("keys_values", "attention"), 2,
           "attention (B * H, Lq, Lk) times the value part of keys_values (Lk, B, H * 2 * D); "
           "output (Lq, B, H * D)"),
    {.name = NULL},
};
