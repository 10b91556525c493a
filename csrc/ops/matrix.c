/* Matrix products: dot, batch_dot and FullyConnected, all lowered onto one row-major GEMM
 * (kernels/cpu/gemm.h). Every operand is contiguous, so an N-D operand is a 2-D matrix after
 * grouping its axes, and a transpose flag is just a BLAS transpose: nothing is copied for float32
 * and float64. float16 is computed in float32 through a workspace (MXNet's CPU kernels reject it;
 * accepting it lets cast('float16') networks run). Integer dtypes are rejected in the shape rule.
 *
 * Shape rules accept graph-inference metas: an input of ndim -1 leaves the output unknown, a dim
 * of -1 is carried through and skips the checks it takes part in. FullyConnected also fills in
 * unknown weight and bias shapes from the data shape and num_hidden.
 *
 * Gradients: _backward_dot, _backward_batch_dot and _backward_FullyConnected(dy, lhs, rhs...)
 * with the forward's attributes plus `wrt` compute one input's gradient each, as one GEMM with
 * transpose flags over the same 2-D views as the forward (no copies, whatever the operands'
 * ranks); the FullyConnected bias gradient is a column sum of dy over the batch rows. Each is
 * linear in dy and in the other operand, so their own rules (second derivatives) are more dots.
 */
#include <string.h>

#include "core/half.h"
#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "kernels/cpu/gemm.h"
#include "ops/matrix.h"

/* ---- shared helpers ----------------------------------------------------------------------- */

/* Product of n dims; -1 when any of them is unknown. */
static int64_t prod_dims(const int64_t *s, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (s[i] < 0) return -1;
        p *= s[i];
    }
    return p;
}

static bool is_float(hg_dtype dt)
{
    return dt == HG_DTYPE_F32 || dt == HG_DTYPE_F64 || dt == HG_DTYPE_F16;
}

/* Both operands float and of one dtype. */
static hg_status check_dtypes(const hg_op_def *op, const char *na, hg_dtype a, const char *nb,
                              hg_dtype b)
{
    if (a != b)
        return hg_error(HG_ERR_TYPE, "%s: %s and %s must have the same dtype, got %s and %s",
                        op->name, na, nb, hg_dtype_name(a), hg_dtype_name(b));
    if (!is_float(a))
        return hg_error(HG_ERR_TYPE,
                        "%s: dtype %s is not supported (float32, float64 and "
                        "float16 only)",
                        op->name, hg_dtype_name(a));
    return HG_OK;
}

/* A dimension above what the 32-bit BLAS accepts; unknown (-1) sizes pass. */
static hg_status check_fits(const hg_op_def *op, int64_t m, int64_t n, int64_t k)
{
    if (hg_gemm_fits(m, n, k)) return HG_OK;
    return hg_error(HG_ERR_VALUE,
                    "%s: matrix product of size M=%lld, N=%lld, K=%lld is too "
                    "large: the BLAS takes sizes below 2^31",
                    op->name, (long long)m, (long long)n, (long long)k);
}

static const hg_attr_spec k_dot_attrs[] = {
    [K_TA] = {"transpose_a", HG_ATTR_BOOL, 0, "False", "use the transpose of lhs", NULL},
    [K_TB] = {"transpose_b", HG_ATTR_BOOL, 0, "False", "use the transpose of rhs", NULL},
    [K_FSTYPE] = {"forward_stype", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                  "storage type of the output (accepted for compatibility; outputs are always "
                  "dense)",
                  HG_NAMES("default", "row_sparse", "csr")},
};
_Static_assert(HG_COUNT(k_dot_attrs) == K_DOT_NATTRS, "k_dot_attrs must match its enum");

/* Calls the GEMM of the tensors' dtype: C[i] = op(A[i]) op(B[i]) for i < batch, with float16
 * staged through float32 copies in ws. */
static void gemm_dispatch(hg_dtype dt, bool ta, bool tb, int64_t batch, int64_t M, int64_t N,
                          int64_t K, const void *A, const void *B, void *C, void *ws)
{
    int64_t lda = ta ? M : K, ldb = tb ? K : N;
    int64_t sa = M * K, sb = K * N, sc = M * N;
    if (dt == HG_DTYPE_F64) {
        hg_gemm_batch_f64(ta, tb, batch, M, N, K, 1.0, A, lda, sa, B, ldb, sb, 0.0, C, N, sc);
    } else if (dt == HG_DTYPE_F32) {
        hg_gemm_batch_f32(ta, tb, batch, M, N, K, 1.0f, A, lda, sa, B, ldb, sb, 0.0f, C, N, sc);
    } else {
        float *fa = ws, *fb = fa + batch * sa, *fc = fb + batch * sb;
        hg_half_to_f32_n(A, fa, batch * sa);
        hg_half_to_f32_n(B, fb, batch * sb);
        hg_gemm_batch_f32(ta, tb, batch, M, N, K, 1.0f, fa, lda, sa, fb, ldb, sb, 0.0f, fc, N, sc);
        hg_f32_to_half_n(fc, C, batch * sc);
    }
}

/* The gradient of one operand of C[i] = op(A[i]) op(B[i]) (op(A) is M x K, op(B) is K x N), in
 * that operand's storage layout: wrt 0 gives dA, wrt 1 gives dB. Each case is one GEMM:
 *   dA = dC op(B)^T, stored transposed (op(B) dC^T) when ta;
 *   dB = op(A)^T dC, stored transposed (dC^T op(A)) when tb.
 * The three matrices are a permutation of the forward's, so the forward's float16 workspace
 * size serves. */
static void gemm_grad(hg_dtype dt, int wrt, bool ta, bool tb, int64_t batch, int64_t M, int64_t N,
                      int64_t K, const void *dC, const void *A, const void *B, void *out, void *ws)
{
    if (wrt == 0 && !ta) gemm_dispatch(dt, false, !tb, batch, M, K, N, dC, B, out, ws);
    else if (wrt == 0) gemm_dispatch(dt, tb, true, batch, K, M, N, B, dC, out, ws);
    else if (!tb) gemm_dispatch(dt, !ta, false, batch, K, N, M, A, dC, out, ws);
    else gemm_dispatch(dt, true, ta, batch, N, K, M, dC, A, out, ws);
}

/* Shape rule of a _backward_X(dy, operands...): X's own rule on copies of the operands must
 * give dy's shape and dtype; the gradient is operand `wrt`'s meta. */
typedef hg_status (*infer_fn)(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out);

static hg_status bwd_infer(const hg_op_def *op, infer_fn fwd, const char *fwd_name,
                           const hg_attrs *a, int wrt, int nin, hg_meta *in, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    hg_meta ops[3], y;
    int nops = nin - 1;
    if (wrt < 0 || wrt >= nops)
        return hg_error(HG_ERR_VALUE, "%s: wrt=%d must name one of the %d operands", op->name, wrt,
                        nops);
    out[0].ndim = -1;
    for (int k = 0; k < nops; k++) {
        if (in[1 + k].ndim < 0) return HG_OK;
        ops[k] = in[1 + k];
    }
    y.ndim = -1;
    HG_TRY(fwd(op, a, nops, ops, 1, &y));
    const hg_meta *dy = &in[0];
    if (y.ndim >= 0 && dy->ndim >= 0) {
        bool ok = y.ndim == dy->ndim;
        for (int d = 0; ok && d < y.ndim; d++)
            ok = y.shape[d] < 0 || dy->shape[d] < 0 || y.shape[d] == dy->shape[d];
        if (!ok)
            return hg_error(HG_ERR_VALUE,
                            "%s: the output gradient has shape %s, but %s of these "
                            "operands has shape %s",
                            op->name, hg_shape_str(s0, dy->ndim, dy->shape), fwd_name,
                            hg_shape_str(s1, y.ndim, y.shape));
        if (dy->dtype != y.dtype)
            return hg_error(HG_ERR_TYPE, "%s: the output gradient has dtype %s, %s gives %s",
                            op->name, hg_dtype_name(dy->dtype), fwd_name, hg_dtype_name(y.dtype));
    }
    out[0] = in[1 + wrt];
    return HG_OK;
}

/* The rule of dot, batch_dot and FullyConnected: input k's gradient is bwd(dy, inputs...) with
 * the forward's attributes and wrt=k. */
static hg_status matmul_grad(hg_grad_ctx *g, const char *bwd)
{
    hg_sentry in[4], r;
    int nin = hg_g_nin(g);
    in[0] = hg_g_ograd(g, 0);
    for (int k = 0; k < nin; k++) in[1 + k] = hg_g_in(g, k);
    for (int k = 0; k < nin; k++) {
        if (!hg_g_needs(g, k)) continue;
        hg_g_op_fwd_attrs(g, bwd, nin + 1, in, HG_KV("wrt", hg_g_fmt(g, "%d", k)), 1, &r);
        hg_g_set(g, k, r);
    }
    return hg_g_status(g);
}

/* Rule of _backward_dot / _backward_batch_dot (inputs dC, A, B; out = gradient of operand w).
 * The output is bilinear in dC and the other operand O; with G its incoming gradient,
 * <G, out> = <dC, fwd(A with G in place of operand w)>, so
 *   d dC = fwd(G, B) or fwd(A, G),   d O = bwd(dC, ...G in place of operand w..., wrt = other).
 * The operand w itself is read for its shape only. */
static hg_status bwd_matmul_grad(hg_grad_ctx *g, const char *fwd, const char *bwd, int ta_k,
                                 int tb_k, int wrt_k)
{
    int w = (int)hg_g_attrs(g)->v[wrt_k].i;
    if (w != 0 && w != 1) return hg_error(HG_ERR_VALUE, "%s: wrt=%d must be 0 or 1", bwd, w);
    hg_sentry G = hg_g_ograd(g, 0), in[3] = {hg_g_in(g, 0), hg_g_in(g, 1), hg_g_in(g, 2)};
    hg_sentry ops[2] = {in[1], in[2]}, r;
    ops[w] = G;
    if (hg_g_needs(g, 0))
        hg_g_set(g, 0,
                 hg_g_op(g, fwd, 2, ops,
                         HG_KV("transpose_a", hg_g_attr_str(g, ta_k), "transpose_b",
                               hg_g_attr_str(g, tb_k))));
    if (hg_g_needs(g, 2 - w)) {
        hg_sentry bin[3] = {in[0], ops[0], ops[1]};
        hg_g_op_fwd_attrs(g, bwd, 3, bin, HG_KV("wrt", w ? "0" : "1"), 1, &r);
        hg_g_set(g, 2 - w, r);
    }
    return hg_g_status(g);
}

/* ---- dot ---------------------------------------------------------------------------------- */

/* The 2-D view of dot: op(lhs) is M x K, op(rhs) is Kr x N (K == Kr when valid). lhs's axes
 * group as (all but last, last), or (first, rest) when transposed; rhs's as (first, rest), or
 * (all but last, last) when transposed. A 1-D operand is a single row / column. */
typedef struct {
    int64_t M, N, K, Kr;
} dot_dims;

static dot_dims dot_dims_of(const hg_meta *l, const hg_meta *r, bool ta, bool tb)
{
    dot_dims d;
    if (l->ndim == 1) {
        d.M = 1;
        d.K = l->shape[0];
    } else if (ta) {
        d.K = l->shape[0];
        d.M = prod_dims(l->shape + 1, l->ndim - 1);
    } else {
        d.M = prod_dims(l->shape, l->ndim - 1);
        d.K = l->shape[l->ndim - 1];
    }
    if (r->ndim == 1) {
        d.N = 1;
        d.Kr = r->shape[0];
    } else if (tb) {
        d.N = prod_dims(r->shape, r->ndim - 1);
        d.Kr = r->shape[r->ndim - 1];
    } else {
        d.Kr = r->shape[0];
        d.N = prod_dims(r->shape + 1, r->ndim - 1);
    }
    return d;
}

static hg_status dot_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    char sl[HG_SHAPE_STR], sr[HG_SHAPE_STR];
    const hg_meta *l = &in[0], *r = &in[1];
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    if (l->ndim < 0 || r->ndim < 0) return HG_OK; /* not known yet */
    HG_TRY(check_dtypes(op, "lhs", l->dtype, "rhs", r->dtype));
    if (l->ndim == 0 || r->ndim == 0)
        return hg_error(HG_ERR_VALUE,
                        "dot: scalar tensors are not supported, got lhs %s and "
                        "rhs %s",
                        hg_shape_str(sl, l->ndim, l->shape), hg_shape_str(sr, r->ndim, r->shape));
    if (l->ndim == 1 && r->ndim == 1 && (ta || tb))
        return hg_error(HG_ERR_VALUE,
                        "dot: cannot transpose vectors (lhs %s, rhs %s, "
                        "transpose_a=%d, transpose_b=%d)",
                        hg_shape_str(sl, l->ndim, l->shape), hg_shape_str(sr, r->ndim, r->shape),
                        (int)ta, (int)tb);
    dot_dims d = dot_dims_of(l, r, ta, tb);
    if (d.K >= 0 && d.Kr >= 0 && d.K != d.Kr)
        return hg_error(HG_ERR_VALUE,
                        "dot: shape mismatch: lhs %s X rhs %s with transpose_a=%s, "
                        "transpose_b=%s: contracted sizes %lld and %lld differ",
                        hg_shape_str(sl, l->ndim, l->shape), hg_shape_str(sr, r->ndim, r->shape),
                        ta ? "True" : "False", tb ? "True" : "False", (long long)d.K,
                        (long long)d.Kr);
    int nd = (l->ndim > 1 ? l->ndim - 1 : 0) + (r->ndim > 1 ? r->ndim - 1 : 0);
    if (nd > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE,
                        "dot: result of lhs %s X rhs %s would have %d dimensions, "
                        "more than %d",
                        hg_shape_str(sl, l->ndim, l->shape), hg_shape_str(sr, r->ndim, r->shape),
                        nd, HG_MAX_NDIM);
    HG_TRY(check_fits(op, d.M, d.N, d.K >= 0 ? d.K : d.Kr));
    hg_meta *o = &out[0];
    o->dtype = l->dtype;
    o->ndim = 0;
    if (l->ndim > 1) {
        const int64_t *s = ta ? l->shape + 1 : l->shape;
        for (int i = 0; i < l->ndim - 1; i++) o->shape[o->ndim++] = s[i];
    }
    if (r->ndim > 1) {
        const int64_t *s = tb ? r->shape : r->shape + 1;
        for (int i = 0; i < r->ndim - 1; i++) o->shape[o->ndim++] = s[i];
    }
    if (o->ndim == 0) { /* vector . vector */
        o->ndim = 1;
        o->shape[0] = 1;
    }
    return HG_OK;
}

static size_t dot_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    if (in[0].dtype != HG_DTYPE_F16) return 0;
    dot_dims d = dot_dims_of(&in[0], &in[1], a->v[K_TA].b, a->v[K_TB].b);
    return sizeof(float) * (size_t)(d.M * d.K + d.K * d.N + d.M * d.N);
}

static hg_status dot_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    hg_meta l = hg_meta_of(in[0]), r = hg_meta_of(in[1]);
    dot_dims d = dot_dims_of(&l, &r, ta, tb);
    gemm_dispatch(l.dtype, ta, tb, 1, d.M, d.N, d.K, hg_data(in[0]), hg_data(in[1]),
                  hg_data(out[0]), ctx->workspace);
    return HG_OK;
}

/* ---- batch_dot ---------------------------------------------------------------------------- */

/* op(lhs[b]) is M x K, op(rhs[b]) is Kr x N over the leading batch axes. */
static dot_dims batch_dims_of(const hg_meta *l, const hg_meta *r, bool ta, bool tb)
{
    int n = l->ndim;
    dot_dims d;
    d.M = l->shape[ta ? n - 1 : n - 2];
    d.K = l->shape[ta ? n - 2 : n - 1];
    d.Kr = r->shape[tb ? n - 1 : n - 2];
    d.N = r->shape[tb ? n - 2 : n - 1];
    return d;
}

static hg_status batch_dot_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    char sl[HG_SHAPE_STR], sr[HG_SHAPE_STR];
    const hg_meta *l = &in[0], *r = &in[1];
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    if (l->ndim < 0 || r->ndim < 0) return HG_OK;
    HG_TRY(check_dtypes(op, "lhs", l->dtype, "rhs", r->dtype));
    hg_shape_str(sl, l->ndim, l->shape);
    hg_shape_str(sr, r->ndim, r->shape);
    if (l->ndim < 3 || l->ndim != r->ndim)
        return hg_error(HG_ERR_VALUE,
                        "batch_dot: lhs and rhs must have the same number of "
                        "dimensions, at least 3; got lhs %s and rhs %s",
                        sl, sr);
    int n = l->ndim;
    /* As MXNet: with the last dim of lhs or the second-to-last of rhs unknown, nothing is
     * inferred (partial inference leaves the output unknown). */
    if (l->shape[n - 1] < 0 || r->shape[n - 2] < 0) return HG_OK;
    for (int i = 0; i < n - 2; i++) {
        if (l->shape[i] >= 0 && r->shape[i] >= 0 && l->shape[i] != r->shape[i])
            return hg_error(HG_ERR_VALUE,
                            "batch_dot: the leading batch dimensions must be "
                            "equal, got lhs %s X rhs %s",
                            sl, sr);
    }
    dot_dims d = batch_dims_of(l, r, ta, tb);
    if (d.K >= 0 && d.Kr >= 0 && d.K != d.Kr)
        return hg_error(HG_ERR_VALUE,
                        "batch_dot: shape mismatch: lhs %s X rhs %s with "
                        "transpose_a=%s, transpose_b=%s: contracted sizes %lld and %lld differ",
                        sl, sr, ta ? "True" : "False", tb ? "True" : "False", (long long)d.K,
                        (long long)d.Kr);
    HG_TRY(check_fits(op, d.M, d.N, d.K >= 0 ? d.K : d.Kr));
    hg_meta *o = &out[0];
    o->dtype = l->dtype;
    o->ndim = n;
    for (int i = 0; i < n - 2; i++) o->shape[i] = l->shape[i] >= 0 ? l->shape[i] : r->shape[i];
    o->shape[n - 2] = d.M;
    o->shape[n - 1] = d.N;
    return HG_OK;
}

static size_t batch_dot_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    if (in[0].dtype != HG_DTYPE_F16) return 0;
    dot_dims d = batch_dims_of(&in[0], &in[1], a->v[K_TA].b, a->v[K_TB].b);
    int64_t batch = prod_dims(in[0].shape, in[0].ndim - 2);
    return sizeof(float) * (size_t)(batch * (d.M * d.K + d.K * d.N + d.M * d.N));
}

static hg_status batch_dot_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    hg_meta l = hg_meta_of(in[0]), r = hg_meta_of(in[1]);
    dot_dims d = batch_dims_of(&l, &r, ta, tb);
    int64_t batch = prod_dims(l.shape, l.ndim - 2);
    gemm_dispatch(l.dtype, ta, tb, batch, d.M, d.N, d.K, hg_data(in[0]), hg_data(in[1]),
                  hg_data(out[0]), ctx->workspace);
    return HG_OK;
}

/* ---- FullyConnected ----------------------------------------------------------------------- */

static const hg_attr_spec k_fc_attrs[] = {
    [K_NUM_HIDDEN] = {"num_hidden", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                      "number of hidden units (outputs)", NULL},
    [K_NO_BIAS] = {"no_bias", HG_ATTR_BOOL, 0, "False", "whether to leave out the bias input",
                   NULL},
    [K_FLATTEN] = {"flatten", HG_ATTR_BOOL, 0, "True",
                   "collapse all but the first axis of data (otherwise apply to the last axis "
                   "only)",
                   NULL},
};
_Static_assert(HG_COUNT(k_fc_attrs) == K_FC_NATTRS, "k_fc_attrs must match its enum");

static int fc_num_inputs(const hg_attrs *a) { return a->v[K_NO_BIAS].b ? 2 : 3; }

/* Rows M and inner size K of the data as the product sees it. */
static void fc_rows(const hg_meta *x, bool flatten, int64_t *M, int64_t *K)
{
    if (flatten) {
        *M = x->shape[0];
        *K = prod_dims(x->shape + 1, x->ndim - 1);
    } else {
        *M = prod_dims(x->shape, x->ndim - 1);
        *K = x->shape[x->ndim - 1];
    }
}

/* Fills one unknown data dim from the weight's inner size (deferred shapes in graphs). */
static void fc_backfill_data(hg_meta *x, bool flatten, int64_t wk)
{
    int first = flatten ? 1 : x->ndim - 1, unknown = -1;
    int64_t known = 1;
    if (wk < 0 || first < 0) return;
    for (int i = first; i < x->ndim; i++) {
        if (x->shape[i] >= 0) {
            known *= x->shape[i];
        } else if (unknown >= 0) {
            return; /* two unknowns: ambiguous */
        } else {
            unknown = i;
        }
    }
    if (unknown >= 0 && known > 0 && wk % known == 0) x->shape[unknown] = wk / known;
}

static hg_status fc_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    int64_t nh = a->v[K_NUM_HIDDEN].i;
    bool flatten = a->v[K_FLATTEN].b, has_bias = !a->v[K_NO_BIAS].b;
    hg_meta *x = &in[0], *w = &in[1], *b = has_bias ? &in[2] : NULL;
    if (nh < 1)
        return hg_error(HG_ERR_VALUE, "FullyConnected: num_hidden must be positive, got %lld",
                        (long long)nh);
    if (b) { /* (num_hidden,) or (num_hidden, 1); known from the attributes alone */
        int64_t want[2] = {nh, 1};
        hg_dtype bdt = x->ndim >= 0 ? x->dtype : b->dtype;
        if (!hg_meta_merge(b, bdt, b->ndim == 2 ? 2 : 1, want))
            return hg_error(HG_ERR_VALUE,
                            "FullyConnected: bias shape %s does not match "
                            "num_hidden=%lld: expected [%lld]",
                            hg_shape_str(s0, b->ndim, b->shape), (long long)nh, (long long)nh);
    }
    if (x->ndim < 0) return HG_OK; /* the weight's inner size needs the data shape */
    if (x->ndim == 0)
        return hg_error(HG_ERR_VALUE, "FullyConnected: data must have at least one dimension, "
                                      "got shape []");
    if (w->ndim == 2 && w->shape[1] >= 0) fc_backfill_data(x, flatten, w->shape[1]);
    /* The batch dimensions come back from a known output (MXNet's incomplete inference). */
    if (flatten && out[0].ndim == 2 && x->shape[0] < 0) x->shape[0] = out[0].shape[0];
    for (int d = 0; !flatten && out[0].ndim == x->ndim && d < x->ndim - 1; d++)
        if (x->shape[d] < 0) x->shape[d] = out[0].shape[d];
    int64_t M, K;
    fc_rows(x, flatten, &M, &K);
    int64_t want_w[2] = {nh, K};
    if (!hg_meta_merge(w, x->dtype, 2, want_w))
        return hg_error(HG_ERR_VALUE,
                        "FullyConnected: weight shape %s does not match data "
                        "shape %s with num_hidden=%lld, flatten=%s: expected %s",
                        hg_shape_str(s0, w->ndim, w->shape), hg_shape_str(s1, x->ndim, x->shape),
                        (long long)nh, flatten ? "True" : "False", hg_shape_str(s2, 2, want_w));
    HG_TRY(check_dtypes(op, "data", x->dtype, "weight", w->dtype));
    if (b) HG_TRY(check_dtypes(op, "data", x->dtype, "bias", b->dtype));
    HG_TRY(check_fits(op, M, nh, K >= 0 ? K : w->shape[1]));
    hg_meta *o = &out[0];
    o->dtype = x->dtype;
    if (flatten) {
        o->ndim = 2;
        o->shape[0] = x->shape[0];
    } else {
        o->ndim = x->ndim;
        memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)(x->ndim - 1));
    }
    o->shape[o->ndim - 1] = nh;
    return HG_OK;
}

static size_t fc_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    if (in[0].dtype != HG_DTYPE_F16) return 0;
    int64_t M, K, nh = a->v[K_NUM_HIDDEN].i;
    fc_rows(&in[0], a->v[K_FLATTEN].b, &M, &K);
    return sizeof(float) * (size_t)(M * K + nh * K + M * nh + nh);
}

/* out[M, H] = x[M, K] . w[H, K]^T (+ bias[H] on every row, by starting C from the bias). */
#define FC_IMPL(T, SUFFIX)                                                                      \
    static void fc_##SUFFIX(int64_t M, int64_t H, int64_t K, const T *x, const T *w,            \
                            const T *bias, T *o)                                                \
    {                                                                                           \
        if (bias)                                                                               \
            for (int64_t i = 0; i < M; i++) memcpy(o + i * H, bias, sizeof(T) * (size_t)H);     \
        hg_gemm_##SUFFIX(false, true, M, H, K, 1, x, K, w, K, bias ? 1 : 0, o, H);              \
    }
FC_IMPL(float, f32)
FC_IMPL(double, f64)

static hg_status fc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_meta x = hg_meta_of(in[0]);
    int64_t M, K, H = a->v[K_NUM_HIDDEN].i;
    fc_rows(&x, a->v[K_FLATTEN].b, &M, &K);
    const void *bias = nin > 2 ? hg_data(in[2]) : NULL;
    if (x.dtype == HG_DTYPE_F32) {
        fc_f32(M, H, K, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    } else if (x.dtype == HG_DTYPE_F64) {
        fc_f64(M, H, K, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    } else {
        float *fx = ctx->workspace, *fw = fx + M * K, *fo = fw + H * K, *fb = fo + M * H;
        hg_half_to_f32_n(hg_data(in[0]), fx, M * K);
        hg_half_to_f32_n(hg_data(in[1]), fw, H * K);
        if (bias) hg_half_to_f32_n(bias, fb, H);
        fc_f32(M, H, K, fx, fw, bias ? fb : NULL, fo);
        hg_f32_to_half_n(fo, hg_data(out[0]), M * H);
    }
    return HG_OK;
}

/* ---- gradient ops ------------------------------------------------------------------------- */

_Static_assert((int)K_WRT == (int)K_DOT_NATTRS && (int)K_WRT == (int)K_FC_NATTRS,
               "wrt follows the forward's attrs");
static const hg_attr_spec k_dot_bwd_attrs[] = {
    [K_TA] = {"transpose_a", HG_ATTR_BOOL, 0, "False", "the forward's transpose_a", NULL},
    [K_TB] = {"transpose_b", HG_ATTR_BOOL, 0, "False", "the forward's transpose_b", NULL},
    [K_FSTYPE] = {"forward_stype", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                  "the forward's forward_stype", HG_NAMES("default", "row_sparse", "csr")},
    [K_WRT] = {"wrt", HG_ATTR_INT, 0, "0", "whose gradient: 0 lhs, 1 rhs", NULL},
};
_Static_assert(HG_COUNT(k_dot_bwd_attrs) == K_BWD_NATTRS, "k_dot_bwd_attrs must match its enum");
static const hg_attr_spec k_fc_bwd_attrs[] = {
    [K_NUM_HIDDEN] = {"num_hidden", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "the forward's num_hidden",
                      NULL},
    [K_NO_BIAS] = {"no_bias", HG_ATTR_BOOL, 0, "False", "the forward's no_bias", NULL},
    [K_FLATTEN] = {"flatten", HG_ATTR_BOOL, 0, "True", "the forward's flatten", NULL},
    [K_WRT] = {"wrt", HG_ATTR_INT, 0, "0", "whose gradient: 0 data, 1 weight, 2 bias", NULL},
};
_Static_assert(HG_COUNT(k_fc_bwd_attrs) == K_BWD_NATTRS, "k_fc_bwd_attrs must match its enum");

static int fc_bwd_num_inputs(const hg_attrs *a) { return fc_num_inputs(a) + 1; }

static hg_status dot_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    return bwd_infer(op, dot_infer, "dot", a, (int)a->v[K_WRT].i, nin, in, out);
}

static hg_status batch_dot_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                     int nout, hg_meta *out)
{
    return bwd_infer(op, batch_dot_infer, "batch_dot", a, (int)a->v[K_WRT].i, nin, in, out);
}

static hg_status fc_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    return bwd_infer(op, fc_infer, "FullyConnected", a, (int)a->v[K_WRT].i, nin, in, out);
}

static size_t dot_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return dot_workspace(a, nin - 1, in + 1);
}

static size_t batch_dot_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return batch_dot_workspace(a, nin - 1, in + 1);
}

static size_t fc_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return fc_workspace(a, nin - 1, in + 1);
}

static hg_status dot_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    hg_meta l = hg_meta_of(in[1]), r = hg_meta_of(in[2]);
    dot_dims d = dot_dims_of(&l, &r, ta, tb);
    gemm_grad(l.dtype, (int)a->v[K_WRT].i, ta, tb, 1, d.M, d.N, d.K, hg_data(in[0]), hg_data(in[1]),
              hg_data(in[2]), hg_data(out[0]), ctx->workspace);
    return HG_OK;
}

static hg_status batch_dot_bwd_forward(const hg_op_def *op, const hg_attrs *a,
                                       const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                       int nout, hg_tensor *const *out)
{
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    hg_meta l = hg_meta_of(in[1]), r = hg_meta_of(in[2]);
    dot_dims d = batch_dims_of(&l, &r, ta, tb);
    int64_t batch = prod_dims(l.shape, l.ndim - 2);
    gemm_grad(l.dtype, (int)a->v[K_WRT].i, ta, tb, batch, d.M, d.N, d.K, hg_data(in[0]),
              hg_data(in[1]), hg_data(in[2]), hg_data(out[0]), ctx->workspace);
    return HG_OK;
}

/* Column sums of a rows x cols matrix into double accumulators, columns split over the pool. */
#define COLSUM_W 512
typedef struct {
    const void *src;
    void *dst;
    hg_dtype dt;
    int64_t rows, cols;
} colsum_job;

#define COLSUM_ADD(T, LD)                                                                       \
    for (int64_t r = 0; r < j->rows; r++) {                                                     \
        const T *p = (const T *)j->src + r * j->cols + c;                                       \
        for (int64_t i = 0; i < w; i++) acc[i] += LD(p[i]);                                     \
    }
#define ID(v) (v)

static void colsum_range(void *ctx, int64_t b, int64_t e)
{
    const colsum_job *j = ctx;
    double acc[COLSUM_W];
    for (int64_t blk = b; blk < e; blk++) {
        int64_t c = blk * COLSUM_W, w = j->cols - c < COLSUM_W ? j->cols - c : COLSUM_W;
        for (int64_t i = 0; i < w; i++) acc[i] = 0;
        if (j->dt == HG_DTYPE_F32) {
            COLSUM_ADD(float, ID)
            for (int64_t i = 0; i < w; i++) ((float *)j->dst)[c + i] = (float)acc[i];
        } else if (j->dt == HG_DTYPE_F64) {
            COLSUM_ADD(double, ID)
            for (int64_t i = 0; i < w; i++) ((double *)j->dst)[c + i] = acc[i];
        } else {
            COLSUM_ADD(uint16_t, hg_half_to_float)
            for (int64_t i = 0; i < w; i++)
                ((uint16_t *)j->dst)[c + i] = hg_float_to_half((float)acc[i]);
        }
    }
}

static hg_status fc_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_meta x = hg_meta_of(in[1]);
    int64_t M, K, H = a->v[K_NUM_HIDDEN].i;
    int wrt = (int)a->v[K_WRT].i;
    fc_rows(&x, a->v[K_FLATTEN].b, &M, &K);
    if (wrt == 2) { /* the bias: dy summed over the batch rows */
        colsum_job j = {hg_data(in[0]), hg_data(out[0]), x.dtype, M, H};
        int64_t nblk = (H + COLSUM_W - 1) / COLSUM_W, per = M * COLSUM_W;
        hg_parallel_for(nblk, per >= HG_GRAIN_ELEMWISE ? 1 : HG_GRAIN_ELEMWISE / per, colsum_range,
                        &j);
        return HG_OK;
    }
    /* out = data2 (M x K) . weight^T (H x K)^T: transpose_b */
    gemm_grad(x.dtype, wrt, false, true, 1, M, H, K, hg_data(in[0]), hg_data(in[1]), hg_data(in[2]),
              hg_data(out[0]), ctx->workspace);
    return HG_OK;
}

static hg_status dot_grad(hg_grad_ctx *g) { return matmul_grad(g, "_backward_dot"); }
static hg_status batch_dot_grad(hg_grad_ctx *g) { return matmul_grad(g, "_backward_batch_dot"); }
static hg_status fc_grad(hg_grad_ctx *g) { return matmul_grad(g, "_backward_FullyConnected"); }

static hg_status dot_bwd_grad(hg_grad_ctx *g)
{
    return bwd_matmul_grad(g, "dot", "_backward_dot", K_TA, K_TB, K_WRT);
}

static hg_status batch_dot_bwd_grad(hg_grad_ctx *g)
{
    return bwd_matmul_grad(g, "batch_dot", "_backward_batch_dot", K_TA, K_TB, K_WRT);
}

/* Inputs (dy, data, weight[, bias]). data and weight as in bwd_matmul_grad, with the forward
 * being FullyConnected without bias; the bias gradient's adjoint broadcasts G over dy's rows. */
static hg_status fc_bwd_grad(hg_grad_ctx *g)
{
    int w = (int)hg_g_attrs(g)->v[K_WRT].i, nin = hg_g_nin(g);
    if (w < 0 || w >= nin - 1)
        return hg_error(HG_ERR_VALUE,
                        "_backward_FullyConnected: wrt=%d must name one of the %d "
                        "operands",
                        w, nin - 1);
    hg_sentry G = hg_g_ograd(g, 0), in[4], r;
    for (int k = 0; k < nin; k++) in[k] = hg_g_in(g, k);
    if (w == 2) {
        if (!hg_g_needs(g, 0)) return hg_g_status(g);
        hg_sentry flat = hg_g_op(g, "Reshape", HG_GIN(G), HG_KV("shape", "(-1,)"));
        hg_sentry z = hg_g_op(g, "zeros_like", HG_GIN(in[0]), NULL);
        hg_g_set(g, 0, hg_g_op(g, "broadcast_add", HG_GIN(z, flat), NULL));
        return hg_g_status(g);
    }
    hg_sentry ops[2] = {in[1], in[2]};
    ops[w] = G;
    if (hg_g_needs(g, 0))
        hg_g_set(g, 0,
                 hg_g_op(g, "FullyConnected", 2, ops,
                         HG_KV("num_hidden", hg_g_attr_str(g, K_NUM_HIDDEN), "no_bias", "True",
                               "flatten", hg_g_attr_str(g, K_FLATTEN))));
    if (hg_g_needs(g, 2 - w)) {
        in[1 + w] = G;
        hg_g_op_fwd_attrs(g, "_backward_FullyConnected", nin, in, HG_KV("wrt", w ? "0" : "1"), 1,
                          &r);
        hg_g_set(g, 2 - w, r);
    }
    return hg_g_status(g);
}

/* ---- registry ----------------------------------------------------------------------------- */

const hg_op_def hg_ops_matrix[] = {
    {.name = "dot",
     .doc = "Dot product of two arrays: 1-D . 1-D gives shape (1,); N-D contracts "
            "lhs's last axis (first if transpose_a) with rhs's first axis (last if transpose_b).",
     .input_names = HG_NAMES("lhs", "rhs"),
     .attrs = k_dot_attrs,
     .num_attrs = HG_COUNT(k_dot_attrs),
     .num_inputs = 2,
     .infer = dot_infer,
     .forward = dot_forward,
     .workspace = dot_workspace,
     .grad = dot_grad},
    {.name = "batch_dot",
     .doc = "Batched matrix product: (B..., N, M) . (B..., M, K) -> "
            "(B..., N, K), with optional transposes of each operand's last two axes.",
     .input_names = HG_NAMES("lhs", "rhs"),
     .attrs = k_dot_attrs,
     .num_attrs = HG_COUNT(k_dot_attrs),
     .num_inputs = 2,
     .infer = batch_dot_infer,
     .forward = batch_dot_forward,
     .workspace = batch_dot_workspace,
     .grad = batch_dot_grad},
    {.name = "FullyConnected",
     .doc = "Fully connected layer: out = data . weight^T + bias, "
            "weight of shape (num_hidden, K).",
     .input_names = HG_NAMES("data", "weight", "bias"),
     .attrs = k_fc_attrs,
     .num_attrs = HG_COUNT(k_fc_attrs),
     .num_inputs = 3,
     .get_num_inputs = fc_num_inputs,
     .infer = fc_infer,
     .forward = fc_forward,
     .workspace = fc_workspace,
     .grad = fc_grad},
    {.name = "_backward_dot",
     .doc = "gradient of dot with respect to lhs (wrt=0) or rhs (wrt=1)",
     .input_names = HG_NAMES("ograd", "lhs", "rhs"),
     .attrs = k_dot_bwd_attrs,
     .num_attrs = HG_COUNT(k_dot_bwd_attrs),
     .num_inputs = 3,
     .infer = dot_bwd_infer,
     .forward = dot_bwd_forward,
     .workspace = dot_bwd_workspace,
     .grad = dot_bwd_grad},
    {.name = "_backward_batch_dot",
     .doc = "gradient of batch_dot with respect to lhs (wrt=0) or rhs (wrt=1)",
     .input_names = HG_NAMES("ograd", "lhs", "rhs"),
     .attrs = k_dot_bwd_attrs,
     .num_attrs = HG_COUNT(k_dot_bwd_attrs),
     .num_inputs = 3,
     .infer = batch_dot_bwd_infer,
     .forward = batch_dot_bwd_forward,
     .workspace = batch_dot_bwd_workspace,
     .grad = batch_dot_bwd_grad},
    {.name = "_backward_FullyConnected",
     .doc = "gradient of FullyConnected with respect to data (wrt=0), weight (1) or bias (2)",
     .input_names = HG_NAMES("ograd", "data", "weight", "bias"),
     .attrs = k_fc_bwd_attrs,
     .num_attrs = HG_COUNT(k_fc_bwd_attrs),
     .num_inputs = 4,
     .get_num_inputs = fc_bwd_num_inputs,
     .infer = fc_bwd_infer,
     .forward = fc_bwd_forward,
     .workspace = fc_bwd_workspace,
     .grad = fc_bwd_grad},
    {0},
};
