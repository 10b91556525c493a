/* Matrix products: dot, batch_dot and FullyConnected, all lowered onto one row-major GEMM
 * (kernels/cpu/gemm.h). Every operand is contiguous, so an N-D operand is a 2-D matrix after
 * grouping its axes, and a transpose flag is just a BLAS transpose: nothing is copied for float32
 * and float64. float16 is computed in float32 through a workspace (MXNet's CPU kernels reject it;
 * accepting it lets cast('float16') networks run). Integer dtypes are rejected in the shape rule.
 *
 * Shape rules accept graph-inference metas: an input of ndim -1 leaves the output unknown, a dim
 * of -1 is carried through and skips the checks it takes part in. FullyConnected also fills in
 * unknown weight and bias shapes from the data shape and num_hidden.
 */
#include <string.h>

#include "../core/op.h"
#include "../kernels/cpu/gemm.h"

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
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported (float32, float64 and "
                        "float16 only)", op->name, hg_dtype_name(a));
    return HG_OK;
}

/* A dimension above what the 32-bit BLAS accepts; unknown (-1) sizes pass. */
static hg_status check_fits(const hg_op_def *op, int64_t m, int64_t n, int64_t k)
{
    if (hg_gemm_fits(m, n, k)) return HG_OK;
    return hg_error(HG_ERR_VALUE, "%s: matrix product of size M=%lld, N=%lld, K=%lld is too "
                    "large: the BLAS takes sizes below 2^31", op->name, (long long)m,
                    (long long)n, (long long)k);
}

static void half_to_f32(const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = hg_half_to_float(src[i]);
}

static void f32_to_half(const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = hg_float_to_half(src[i]);
}

/* Shared attributes of dot and batch_dot. */
enum { K_TA, K_TB, K_FSTYPE };
static const hg_attr_spec k_dot_attrs[] = {
    {"transpose_a", HG_ATTR_BOOL, 0, "False", "use the transpose of lhs", NULL},
    {"transpose_b", HG_ATTR_BOOL, 0, "False", "use the transpose of rhs", NULL},
    {"forward_stype", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
     "storage type of the output (accepted for compatibility; outputs are always dense)",
     HG_NAMES("default", "row_sparse", "csr")},
};

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
        half_to_f32(A, fa, batch * sa);
        half_to_f32(B, fb, batch * sb);
        hg_gemm_batch_f32(ta, tb, batch, M, N, K, 1.0f, fa, lda, sa, fb, ldb, sb, 0.0f, fc, N,
                          sc);
        f32_to_half(fc, C, batch * sc);
    }
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
        return hg_error(HG_ERR_VALUE, "dot: scalar tensors are not supported, got lhs %s and "
                        "rhs %s", hg_shape_str(sl, l->ndim, l->shape),
                        hg_shape_str(sr, r->ndim, r->shape));
    if (l->ndim == 1 && r->ndim == 1 && (ta || tb))
        return hg_error(HG_ERR_VALUE, "dot: cannot transpose vectors (lhs %s, rhs %s, "
                        "transpose_a=%d, transpose_b=%d)", hg_shape_str(sl, l->ndim, l->shape),
                        hg_shape_str(sr, r->ndim, r->shape), (int)ta, (int)tb);
    dot_dims d = dot_dims_of(l, r, ta, tb);
    if (d.K >= 0 && d.Kr >= 0 && d.K != d.Kr)
        return hg_error(HG_ERR_VALUE, "dot: shape mismatch: lhs %s X rhs %s with transpose_a=%s, "
                        "transpose_b=%s: contracted sizes %lld and %lld differ",
                        hg_shape_str(sl, l->ndim, l->shape), hg_shape_str(sr, r->ndim, r->shape),
                        ta ? "True" : "False", tb ? "True" : "False", (long long)d.K,
                        (long long)d.Kr);
    int nd = (l->ndim > 1 ? l->ndim - 1 : 0) + (r->ndim > 1 ? r->ndim - 1 : 0);
    if (nd > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "dot: result of lhs %s X rhs %s would have %d dimensions, "
                        "more than %d", hg_shape_str(sl, l->ndim, l->shape),
                        hg_shape_str(sr, r->ndim, r->shape), nd, HG_MAX_NDIM);
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
        return hg_error(HG_ERR_VALUE, "batch_dot: lhs and rhs must have the same number of "
                        "dimensions, at least 3; got lhs %s and rhs %s", sl, sr);
    int n = l->ndim;
    for (int i = 0; i < n - 2; i++) {
        if (l->shape[i] >= 0 && r->shape[i] >= 0 && l->shape[i] != r->shape[i])
            return hg_error(HG_ERR_VALUE, "batch_dot: the leading batch dimensions must be "
                            "equal, got lhs %s X rhs %s", sl, sr);
    }
    dot_dims d = batch_dims_of(l, r, ta, tb);
    if (d.K >= 0 && d.Kr >= 0 && d.K != d.Kr)
        return hg_error(HG_ERR_VALUE, "batch_dot: shape mismatch: lhs %s X rhs %s with "
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
                                   int nin, hg_tensor *const *in, int nout,
                                   hg_tensor *const *out)
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

enum { K_NUM_HIDDEN, K_NO_BIAS, K_FLATTEN };
static const hg_attr_spec k_fc_attrs[] = {
    {"num_hidden", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of hidden units (outputs)", NULL},
    {"no_bias", HG_ATTR_BOOL, 0, "False", "whether to leave out the bias input", NULL},
    {"flatten", HG_ATTR_BOOL, 0, "True",
     "collapse all but the first axis of data (otherwise apply to the last axis only)", NULL},
};

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
            return hg_error(HG_ERR_VALUE, "FullyConnected: bias shape %s does not match "
                            "num_hidden=%lld: expected [%lld]", hg_shape_str(s0, b->ndim, b->shape),
                            (long long)nh, (long long)nh);
    }
    if (x->ndim < 0) return HG_OK; /* the weight's inner size needs the data shape */
    if (x->ndim == 0)
        return hg_error(HG_ERR_VALUE, "FullyConnected: data must have at least one dimension, "
                        "got shape []");
    if (w->ndim == 2 && w->shape[1] >= 0) fc_backfill_data(x, flatten, w->shape[1]);
    int64_t M, K;
    fc_rows(x, flatten, &M, &K);
    int64_t want_w[2] = {nh, K};
    if (!hg_meta_merge(w, x->dtype, 2, want_w))
        return hg_error(HG_ERR_VALUE, "FullyConnected: weight shape %s does not match data "
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

static hg_status fc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                            int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
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
        half_to_f32(hg_data(in[0]), fx, M * K);
        half_to_f32(hg_data(in[1]), fw, H * K);
        if (bias) half_to_f32(bias, fb, H);
        fc_f32(M, H, K, fx, fw, bias ? fb : NULL, fo);
        f32_to_half(fo, hg_data(out[0]), M * H);
    }
    return HG_OK;
}

/* ---- registry ----------------------------------------------------------------------------- */

const hg_op_def hg_ops_matrix[] = {
    {.name = "dot", .doc = "Dot product of two arrays: 1-D . 1-D gives shape (1,); N-D contracts "
     "lhs's last axis (first if transpose_a) with rhs's first axis (last if transpose_b).",
     .input_names = HG_NAMES("lhs", "rhs"), .attrs = k_dot_attrs,
     .num_attrs = HG_COUNT(k_dot_attrs), .num_inputs = 2, .infer = dot_infer,
     .forward = dot_forward, .workspace = dot_workspace},
    {.name = "batch_dot", .doc = "Batched matrix product: (B..., N, M) . (B..., M, K) -> "
     "(B..., N, K), with optional transposes of each operand's last two axes.",
     .input_names = HG_NAMES("lhs", "rhs"), .attrs = k_dot_attrs,
     .num_attrs = HG_COUNT(k_dot_attrs), .num_inputs = 2, .infer = batch_dot_infer,
     .forward = batch_dot_forward, .workspace = batch_dot_workspace},
    {.name = "FullyConnected", .doc = "Fully connected layer: out = data . weight^T + bias, "
     "weight of shape (num_hidden, K).",
     .input_names = HG_NAMES("data", "weight", "bias"), .attrs = k_fc_attrs,
     .num_attrs = HG_COUNT(k_fc_attrs), .num_inputs = 3, .get_num_inputs = fc_num_inputs,
     .infer = fc_infer, .forward = fc_forward, .workspace = fc_workspace},
    {0},
};
