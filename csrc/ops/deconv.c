/* Deconvolution (MXNet 1.x), 1-D, 2-D and 3-D transposed convolution over channel-first data
 * (NHWC / NDHWC: shape inference only, as MXNet's CPU build; conv_common.h).
 *
 * The adjoint of Convolution: per image and group cols[F/g*K, I] = W_g^T . x_g (one GEMM), then
 * col2im scatters each column entry into the output window it touches (accumulating where
 * windows overlap). Every case runs as 3-D, as in conv.c. Images run in slots, one per thread,
 * for small layers; large ones split their GEMMs and col2im over the pool instead.
 *
 * The forward is Convolution's data gradient, so _backward_Deconvolution is Convolution's
 * backward with the roles swapped, and runs that very code (conv_common.h): the data gradient
 * is a convolution of the output gradient with the same weight, the weight gradient the same
 * im2col + GEMM. float32 and float64.
 */
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"
#include "ops/conv_common.h"
#include "ops/deconv.h"

static const char *tuple_str(char *buf, const hg_tuple *t) { return hg_shape_str(buf, t->n, t->v); }

/* Deconvolution's schema, then the two switches _backward_Deconvolution adds after it: the
 * forward's schema is the first DC_NATTRS entries of this table. */
static const hg_attr_spec k_deconv_attrs[] = {
    [DC_KERNEL] = {"kernel", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "deconvolution kernel size: (w,), (h, w) or (d, h, w)", NULL},
    [DC_STRIDE] = {"stride", HG_ATTR_TUPLE, 0, "()", "stride per spatial dim; () means 1s", NULL},
    [DC_DILATE] = {"dilate", HG_ATTR_TUPLE, 0, "()", "dilation per spatial dim; () means 1s", NULL},
    [DC_PAD] = {"pad", HG_ATTR_TUPLE, 0, "()",
                "padding removed from both sides of the output; () means 0s", NULL},
    [DC_ADJ] = {"adj", HG_ATTR_TUPLE, 0, "()", "extra output size at the end of each spatial dim",
                NULL},
    [DC_TARGET] = {"target_shape", HG_ATTR_TUPLE, 0, "()",
                   "output spatial shape: overrides pad and adj", NULL},
    [DC_NUM_FILTER] = {"num_filter", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                       "number of output channels", NULL},
    [DC_NUM_GROUP] = {"num_group", HG_ATTR_INT, 0, "1", "number of groups channels are split into",
                      NULL},
    [DC_WORKSPACE] = {"workspace", HG_ATTR_INT, 0, "512", "workspace limit in MB (ignored on CPU)",
                      NULL},
    [DC_NO_BIAS] = {"no_bias", HG_ATTR_BOOL, 0, "True", "whether to leave out the bias input",
                    NULL},
    [DC_CUDNN_TUNE] = {"cudnn_tune", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                       "cuDNN algorithm choice (ignored)", hg_conv_tune_choices},
    [DC_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, 0, "False", "turn off cuDNN (ignored)", NULL},
    [DC_LAYOUT] = {"layout", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                   "data layout: NCW, NCHW, NCDHW, NHWC or NDHWC (channel-last layouts: shapes "
                   "only, the CPU forward refuses them as MXNet's); None means channel-first",
                   hg_conv_layout_choices},
    [DC_GRAD_DATA] = {"grad_data", HG_ATTR_BOOL, 0, "True",
                      "compute the data gradient (else output 0 is zeros)", NULL},
    [DC_GRAD_WEIGHT] = {"grad_weight", HG_ATTR_BOOL, 0, "True",
                        "compute the weight gradient (else output 1 is zeros)", NULL},
};
_Static_assert(HG_COUNT(k_deconv_attrs) == DC_BW_NATTRS, "k_deconv_attrs must match its enum");

static int deconv_num_inputs(const hg_attrs *a) { return a->v[DC_NO_BIAS].b ? 2 : 3; }

/* Geometry normalised to 3 spatial dims (index 0 = depth, 2 = width); p is the effective pad. */
typedef struct deconv_geom {
    int nsp;
    int64_t N, C, F, G;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t Cg, Fg, K, I, P; /* C/G, F/G, prod(k), prod(in), prod(out) */
} deconv_geom;

static void deconv_geom_full(const hg_attrs *a, const hg_meta *x, deconv_geom *g)
{
    int nsp = a->v[DC_KERNEL].t.n, off = 3 - nsp;
    g->nsp = nsp;
    g->N = x->shape[0];
    g->C = x->shape[1];
    g->F = a->v[DC_NUM_FILTER].i;
    g->G = a->v[DC_NUM_GROUP].i;
    g->Cg = g->C / g->G;
    g->Fg = g->F / g->G;
    g->K = g->I = g->P = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        if (j < 0) {
            g->k[i] = g->s[i] = g->d[i] = g->in[i] = g->out[i] = 1;
            g->p[i] = 0;
            continue;
        }
        int64_t adj;
        g->k[i] = a->v[DC_KERNEL].t.v[j];
        g->s[i] = hg_conv_tuple_at(a, DC_STRIDE, j, 1);
        g->d[i] = hg_conv_tuple_at(a, DC_DILATE, j, 1);
        g->in[i] = x->shape[2 + j];
        hg_deconv_dim_geom(a, j, g->in[i], &g->p[i], &adj, &g->out[i]);
        g->K *= g->k[i];
        g->I *= g->in[i];
        g->P *= g->out[i];
    }
}

static const hg_conv_attr_index k_deconv_index = {
    "Deconvolution",
    DC_KERNEL,
    DC_NUM_FILTER,
    DC_NUM_GROUP,
    DC_LAYOUT,
    5,
    {DC_STRIDE, DC_DILATE, DC_PAD, DC_ADJ, DC_TARGET},
    {"stride", "dilate", "pad", "adj", "target_shape"},
    {true, true, false, false, false}};

/* The shared checks, plus Deconvolution's own: adj must stay below the stride. */
static hg_status deconv_check_attrs(const hg_attrs *a)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    HG_TRY(hg_conv_check_attrs(a, &k_deconv_index));
    for (int i = 0; i < a->v[DC_KERNEL].t.n; i++)
        if (!hg_deconv_has_target(a) &&
            hg_conv_tuple_at(a, DC_ADJ, i, 0) >= hg_conv_tuple_at(a, DC_STRIDE, i, 1))
            return hg_error(HG_ERR_VALUE, "Deconvolution: adj=%s must be smaller than stride=%s",
                            tuple_str(s0, &a->v[DC_ADJ].t), tuple_str(s1, &a->v[DC_STRIDE].t));
    return HG_OK;
}

static hg_status deconv_infer_cf(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    (void)op;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    HG_TRY(deconv_check_attrs(a));
    const hg_tuple *kt = &a->v[DC_KERNEL].t;
    int nsp = kt->n;
    int64_t F = a->v[DC_NUM_FILTER].i, G = a->v[DC_NUM_GROUP].i;
    bool has_bias = !a->v[DC_NO_BIAS].b;
    hg_meta *x = &in[0], *w = &in[1], *b = has_bias ? &in[2] : NULL;
    hg_dtype dt = x->ndim >= 0 ? x->dtype : (w->ndim >= 0 ? w->dtype : HG_DTYPE_F32);
    if (b && !hg_meta_merge(b, dt, 1, &F))
        return hg_error(HG_ERR_VALUE,
                        "Deconvolution: bias shape %s does not match "
                        "num_filter=%lld: expected [%lld]",
                        hg_shape_str(s0, b->ndim, b->shape), (long long)F, (long long)F);
    if (x->ndim < 0) return HG_OK;
    if (x->ndim != nsp + 2)
        return hg_error(HG_ERR_VALUE,
                        "Deconvolution: data shape %s does not match kernel=%s: "
                        "expected %d dims (batch, channel and %d spatial)",
                        hg_shape_str(s0, x->ndim, x->shape), tuple_str(s1, kt), nsp + 2, nsp);
    if (x->dtype != HG_DTYPE_F32 && x->dtype != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE,
                        "Deconvolution: dtype %s is not supported (float32 and "
                        "float64 only)",
                        hg_dtype_name(x->dtype));
    if (x->shape[1] < 0 && w->ndim == nsp + 2 && w->shape[0] >= 0) x->shape[1] = w->shape[0];
    int64_t C = x->shape[1];
    if (C >= 0 && C % G != 0)
        return hg_error(HG_ERR_VALUE,
                        "Deconvolution: input channels %lld (data shape %s) must "
                        "be divisible by num_group=%lld",
                        (long long)C, hg_shape_str(s0, x->ndim, x->shape), (long long)G);
    int64_t want_w[5] = {C, F / G};
    for (int i = 0; i < nsp; i++) want_w[2 + i] = kt->v[i];
    if (!hg_meta_merge(w, x->dtype, nsp + 2, want_w))
        return hg_error(HG_ERR_VALUE,
                        "Deconvolution: weight shape %s does not match data shape "
                        "%s with num_filter=%lld, num_group=%lld, kernel=%s: expected %s",
                        hg_shape_str(s0, w->ndim, w->shape), hg_shape_str(s1, x->ndim, x->shape),
                        (long long)F, (long long)G, tuple_str(s2, kt),
                        hg_shape_str(s3, nsp + 2, want_w));
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return hg_error(HG_ERR_TYPE,
                        "Deconvolution: data, weight and bias must have the same "
                        "dtype, got %s, %s and %s",
                        hg_dtype_name(x->dtype), hg_dtype_name(w->dtype),
                        b ? hg_dtype_name(b->dtype) : "(none)");
    hg_meta *o = &out[0];
    o->ndim = nsp + 2;
    o->dtype = x->dtype;
    o->shape[0] = x->shape[0];
    o->shape[1] = F;
    int64_t I = 1, K = F / G;
    for (int i = 0; i < nsp; i++) {
        int64_t xi = x->shape[2 + i], pad, adj, osz;
        K *= kt->v[i];
        if (xi < 0) {
            o->shape[2 + i] = -1;
            I = -1;
            continue;
        }
        if (xi < 1)
            return hg_error(HG_ERR_VALUE,
                            "Deconvolution: data shape %s has an empty spatial "
                            "dim",
                            hg_shape_str(s0, x->ndim, x->shape));
        hg_deconv_dim_geom(a, i, xi, &pad, &adj, &osz);
        if (hg_deconv_has_target(a) && (pad < 0 || adj < 0)) /* total pad below 0 */
            return hg_error(HG_ERR_VALUE,
                            "Deconvolution: target_shape=%s is too big for data "
                            "shape %s",
                            tuple_str(s0, &a->v[DC_TARGET].t), hg_shape_str(s1, x->ndim, x->shape));
        if (osz < 1)
            return hg_error(HG_ERR_VALUE,
                            "Deconvolution: pad=%s is too large for data shape %s: "
                            "the output size on spatial dim %d is %lld",
                            tuple_str(s0, &a->v[DC_PAD].t), hg_shape_str(s1, x->ndim, x->shape), i,
                            (long long)osz);
        o->shape[2 + i] = osz;
        if (I >= 0) I *= xi;
    }
    if (!hg_gemm_fits(K, I, C >= 0 ? C / G : 0))
        return hg_error(HG_ERR_VALUE,
                        "Deconvolution: matrix product of size M=%lld, N=%lld, "
                        "K=%lld is too large: the BLAS takes sizes below 2^31",
                        (long long)K, (long long)I, (long long)(C / G));
    return hg_shape_check(o->ndim, o->shape, o->dtype);
}

/* Channel-last layouts: the channel-first rule on moved dims (conv_common.h). */
static hg_status deconv_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    return hg_conv_infer_layout(op, a, DC_LAYOUT, nin, in, nout, out, deconv_infer_cf);
}

/* The im2col view of one group: the output (Fg channels of size out) is the image, the input's
 * positions are the window grid. */
static hg_im2col_geom deconv_col_geom(const deconv_geom *g)
{
    hg_im2col_geom c = {.C = g->Fg};
    for (int i = 0; i < 3; i++) {
        c.im[i] = g->out[i];
        c.out[i] = g->in[i];
        c.k[i] = g->k[i];
        c.s[i] = g->s[i];
        c.d[i] = g->d[i];
        c.p[i] = g->p[i];
    }
    return c;
}

static int64_t deconv_slots(const deconv_geom *g)
{
    double mnk = (double)g->Fg * (double)g->K * (double)g->I * (double)g->Cg;
    if (g->N < 2 || mnk > 262144.0) return 1;
    int64_t t = hg_get_num_threads();
    if (t < 1) t = 1;
    return t < g->N ? t : g->N;
}

static size_t deconv_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (hg_conv_channel_last(a, DC_LAYOUT)) return 0; /* refused by the forward */
    deconv_geom g;
    deconv_geom_full(a, &in[0], &g);
    return hg_dtype_size(in[0].dtype) * (size_t)(g.Fg * g.K * g.I) * (size_t)deconv_slots(&g);
}

#define T float
#define NAME(x) x##_f32
#include "ops/deconv_fwd_tmpl.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "ops/deconv_fwd_tmpl.h"
#undef T
#undef NAME

static hg_status deconv_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nout;
    HG_TRY(hg_conv_refuse_layout(op, a, DC_LAYOUT));
    hg_meta x = hg_meta_of(in[0]);
    deconv_geom g;
    deconv_geom_full(a, &x, &g);
    const void *bias = nin > 2 ? hg_data(in[2]) : NULL;
    if (g.Cg > 0 && (ctx->workspace == NULL ||
                     ctx->workspace_bytes < hg_dtype_size(x.dtype) * (size_t)(g.Fg * g.K * g.I)))
        return hg_error(HG_ERR_INTERNAL, "Deconvolution: workspace missing or too small");
    if (x.dtype == HG_DTYPE_F32)
        deconv_f32(&g, ctx, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    else deconv_f64(&g, ctx, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    return HG_OK;
}

/* _backward_Deconvolution(ograd, data, weight) -> (data grad, weight grad[, bias grad]). The
 * forward scatters W_g^T x_g with col2im, so per image and group, with col = im2col(dy_g) (the
 * output gradient gathered back onto the input's positions, [Fg*K, I]):
 *     dx_g  = W_g[Cg, Fg*K] . col             (a convolution of dy with the same weight)
 *     dW_g += x_g[Cg, I] . col^T
 *     db[f] += sum_p dy[f, p]
 * One im2col serves both products: this is _backward_Convolution's code (conv_common.h) with
 * the roles swapped (bw_geom), run on whole images. */

static hg_status deconv_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    (void)nin;
    return hg_conv_bw_infer(op, a, !a->v[DC_NO_BIAS].b, in, nout, out, deconv_infer);
}

/* The backward is Convolution's (conv_common.h) on the convolution whose data gradient this
 * op's forward is: its data is our output (F channels on the out grid), its output our data (C
 * channels on the in grid), its weight ours ((C, F/G, *k) is its (filters, channels/G, *k)). */
static hg_conv_geom bw_geom(const deconv_geom *g)
{
    hg_conv_geom c = {.nsp = g->nsp,
                      .N = g->N,
                      .C = g->F,
                      .F = g->C,
                      .G = g->G,
                      .Cg = g->Fg,
                      .Fg = g->Cg,
                      .K = g->Fg * g->K,
                      .P = g->I,
                      .I = g->P};
    for (int i = 0; i < 3; i++) {
        c.in[i] = g->out[i];
        c.out[i] = g->in[i];
        c.k[i] = g->k[i];
        c.s[i] = g->s[i];
        c.d[i] = g->d[i];
        c.p[i] = g->p[i];
    }
    return c;
}

/* Whole images (one im2col of Fg*K x I each, split over the pool), images dealt to the slots in
 * turn; the bias gradient sums the output gradient (that convolution's data). */
static hg_conv_bw_plan bw_plan(const deconv_geom *g)
{
    return (hg_conv_bw_plan){.nslots = deconv_slots(g),
                             .rows = g->in[0] * g->in[1],
                             .col_e = g->Fg * g->K * g->I,
                             .nb = 1,
                             .whole = true,
                             .bias_of_x = true};
}

static size_t deconv_bw_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (hg_conv_channel_last(a, DC_LAYOUT)) return 0; /* refused by the forward */
    deconv_geom g;
    deconv_geom_full(a, &in[1], &g);
    hg_conv_geom cg = bw_geom(&g);
    hg_conv_bw_plan pl = bw_plan(&g);
    return hg_dtype_size(in[1].dtype) *
           (size_t)hg_conv_bw_area(&cg, &pl, a->v[DC_GRAD_WEIGHT].b, !a->v[DC_NO_BIAS].b);
}

static hg_status deconv_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    HG_TRY(hg_conv_refuse_layout(op, a, DC_LAYOUT));
    hg_meta x = hg_meta_of(in[1]);
    deconv_geom g;
    deconv_geom_full(a, &x, &g);
    bool gd = a->v[DC_GRAD_DATA].b, gw = a->v[DC_GRAD_WEIGHT].b, bias = nout > 2;
    if (!gd) memset(hg_data(out[0]), 0, hg_tensor_nbytes(out[0]));
    if (!gw) memset(hg_data(out[1]), 0, hg_tensor_nbytes(out[1]));
    void *dx = gd ? hg_data(out[0]) : NULL, *dw = gw ? hg_data(out[1]) : NULL;
    void *db = bias ? hg_data(out[2]) : NULL;
    hg_conv_geom cg = bw_geom(&g);
    hg_conv_bw_plan pl = bw_plan(&g);
    size_t es = hg_dtype_size(x.dtype);
    if ((dx || dw) && (ctx->workspace == NULL || ctx->workspace_bytes < es * (size_t)pl.col_e))
        return hg_error(HG_ERR_INTERNAL, "%s: workspace missing or too small", op->name);
    /* Never more slots than the workspace holds (the thread count could have changed). */
    if (es * (size_t)hg_conv_bw_area(&cg, &pl, dw != NULL, db != NULL) > ctx->workspace_bytes)
        pl.nslots = 1;
    /* That convolution's x is our output gradient, its dy our data; our data gradient is its
     * forward output y. */
    if (x.dtype == HG_DTYPE_F32)
        hg_conv_bw_f32(&cg, &pl, ctx->workspace, hg_data(in[1]), hg_data(in[0]), hg_data(in[2]),
                       NULL, dx, dw, db);
    else
        hg_conv_bw_f64(&cg, &pl, ctx->workspace, hg_data(in[1]), hg_data(in[0]), hg_data(in[2]),
                       NULL, dx, dw, db);
    return HG_OK;
}

static hg_status deconv_grad(hg_grad_ctx *g)
{
    bool bias = !hg_g_attrs(g)->v[DC_NO_BIAS].b;
    hg_sentry out[3];
    hg_g_op_fwd_attrs(g, "_backward_Deconvolution",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)),
                      HG_KV("grad_data", hg_g_needs(g, 0) ? "True" : "False", "grad_weight",
                            hg_g_needs(g, 1) ? "True" : "False"),
                      bias ? 3 : 2, out);
    for (int k = 0; k < (bias ? 3 : 2); k++)
        if (hg_g_needs(g, k)) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

/* ---- registry ------------------------------------------------------------------------------- */

const hg_op_def hg_ops_deconv[] = {
    {.name = "Deconvolution",
     .doc = "Transposed convolution (1-D, 2-D, 3-D) of channel-first "
            "data with weight (C, num_filter/num_group, *kernel) and optional bias (num_filter,); "
            "out = "
            "s(x-1) + d(k-1) + 1 - 2p + adj per spatial dim.",
     .input_names = HG_NAMES("data", "weight", "bias"),
     .attrs = k_deconv_attrs,
     .num_attrs = DC_NATTRS,
     .num_inputs = 3,
     .get_num_inputs = deconv_num_inputs,
     .infer = deconv_infer,
     .forward = deconv_forward,
     .workspace = deconv_workspace,
     .grad = deconv_grad},
    {.name = "_backward_Deconvolution",
     .doc =
         "Gradients of Deconvolution: (data, weight[, "
         "bias]) from (ograd, data, weight); grad_data / grad_weight = False skip a part (zeros).",
     .input_names = HG_NAMES("ograd", "data", "weight"),
     .attrs = k_deconv_attrs,
     .num_attrs = DC_BW_NATTRS,
     .num_inputs = 3,
     .num_outputs = 3,
     .get_num_outputs = deconv_num_inputs,
     .infer = deconv_bw_infer,
     .forward = deconv_bw_forward,
     .workspace = deconv_bw_workspace},
    {0},
};
