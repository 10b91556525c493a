/* Spatial sampling ops of MXNet 1.x and their gradients: im2col / col2im (the sliding-block
 * reshapes of nn/im2col.h, on kernels/cpu/im2col.c), GridGenerator (affine and warp sampling
 * grids), BilinearSampler, SpatialTransformer (an affine grid followed by bilinear sampling),
 * ROIPooling (max pooling over regions of interest) and Correlation (FlowNet's patch
 * correlation of two feature maps).
 *
 * The arithmetic follows MXNet's CPU kernels, in the data's type, so that floor() of a sample
 * position and the bin edges of a region fall the same way: grid_generator-inl.h,
 * bilinear_sampler.cc, spatial_transformer.cc, roi_pooling.cc and correlation.cc. MXNet keeps
 * scratch outputs some of them hide (the sampler's "tmp", Correlation's padded copies); here
 * the gradients recompute what they need from the inputs instead, and only ROIPooling keeps
 * its hidden output (the argmax index its gradient scatters to). float32 and float64, and
 * float16 through float32 copies.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/half.h"
#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "kernels/cpu/im2col.h"
#include "ops/detect.h"
#include "ops/ops_util.h"

static const char *tuple_str(char *buf, const hg_tuple *t) { return hg_shape_str(buf, t->n, t->v); }

/* The sampling, region and correlation ops take float16 too (MXNet's CPU kernels switch on
 * every real type); it is computed in float32 (f16_run). */
static hg_status need_float(const char *op, const char *what, hg_dtype dt)
{
    if (!hg_is_float(dt))
        return hg_error(HG_ERR_TYPE, "%s: %s must be float16, float32 or float64, got %s", op, what,
                        hg_dtype_name(dt));
    return HG_OK;
}

static bool all_known(int n, const hg_meta *m)
{
    for (int i = 0; i < n; i++) {
        if (m[i].ndim < 0) return false;
        for (int d = 0; d < m[i].ndim; d++)
            if (m[i].shape[d] < 0) return false;
    }
    return true;
}

static void set_meta(hg_meta *m, hg_dtype dt, int nd, const int64_t *shape)
{
    m->ndim = nd;
    m->dtype = dt;
    memcpy(m->shape, shape, sizeof(int64_t) * (size_t)nd);
}

/* ==== im2col / col2im ======================================================================== */

enum { IC_KERNEL, IC_STRIDE, IC_DILATE, IC_PAD, IC_NATTRS };
enum { CI_OUTPUT_SIZE, CI_KERNEL, CI_STRIDE, CI_DILATE, CI_PAD, CI_NATTRS };

static const hg_attr_spec k_im2col_attrs[] = {
    [IC_KERNEL] = {"kernel", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "sliding kernel size: (w,), (h, w) or (d, h, w)", NULL},
    [IC_STRIDE] = {"stride", HG_ATTR_TUPLE, 0, "()", "stride per spatial dim; () means 1s", NULL},
    [IC_DILATE] = {"dilate", HG_ATTR_TUPLE, 0, "()", "kernel dilation per spatial dim; () means 1s",
                   NULL},
    [IC_PAD] = {"pad", HG_ATTR_TUPLE, 0, "()", "zero padding per spatial dim (both sides)", NULL},
};
_Static_assert(HG_COUNT(k_im2col_attrs) == IC_NATTRS, "k_im2col_attrs must match its enum");

static const hg_attr_spec k_col2im_attrs[] = {
    [CI_OUTPUT_SIZE] = {"output_size", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                        "spatial size of the image: (w,), (h, w) or (d, h, w)", NULL},
    [CI_KERNEL] = {"kernel", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "sliding kernel size: (w,), (h, w) or (d, h, w)", NULL},
    [CI_STRIDE] = {"stride", HG_ATTR_TUPLE, 0, "()", "stride per spatial dim; () means 1s", NULL},
    [CI_DILATE] = {"dilate", HG_ATTR_TUPLE, 0, "()", "kernel dilation per spatial dim; () means 1s",
                   NULL},
    [CI_PAD] = {"pad", HG_ATTR_TUPLE, 0, "()", "zero padding per spatial dim (both sides)", NULL},
};
_Static_assert(HG_COUNT(k_col2im_attrs) == CI_NATTRS, "k_col2im_attrs must match its enum");

/* Kernel, stride, dilation and padding as MXNet's SlidingParser leaves them, checked: 1-3 dims,
 * the others empty (defaults) or as long as the kernel. base: schema index of kernel. The
 * spatial sizes go in g->im (image) and g->out (block grid) from `im` (nsp sizes). */
static hg_status sliding_geom(const char *op, const hg_attrs *a, int base, const int64_t *im,
                              hg_im2col_geom *g, int *nsp_out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_tuple *k = &a->v[base].t;
    static const char *const names[] = {"stride", "dilate", "pad"};
    int nsp = k->n;
    if (nsp < 1 || nsp > 3)
        return hg_error(HG_ERR_VALUE, "%s: kernel must have 1, 2 or 3 dims, got kernel=%s", op,
                        tuple_str(s0, k));
    for (int j = 0; j < 3; j++) {
        const hg_tuple *t = &a->v[base + 1 + j].t;
        if (t->n != 0 && t->n != nsp)
            return hg_error(HG_ERR_VALUE, "%s: %s=%s must have as many dims as kernel=%s", op,
                            names[j], tuple_str(s0, t), tuple_str(s1, k));
        for (int i = 0; i < t->n; i++)
            if (j < 2 ? t->v[i] < 1 : t->v[i] < 0)
                return hg_error(HG_ERR_VALUE, "%s: %s=%s must be %s", op, names[j],
                                tuple_str(s0, t), j < 2 ? "positive" : "non-negative");
    }
    *nsp_out = nsp;
    int off = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        bool real = j >= 0;
        g->k[i] = real ? k->v[j] : 1;
        if (g->k[i] < 1)
            return hg_error(HG_ERR_VALUE, "%s: kernel=%s must be positive", op, tuple_str(s0, k));
        g->s[i] = real && a->v[base + 1].t.n ? a->v[base + 1].t.v[j] : 1;
        g->d[i] = real && a->v[base + 2].t.n ? a->v[base + 2].t.v[j] : 1;
        g->p[i] = real && a->v[base + 3].t.n ? a->v[base + 3].t.v[j] : 0;
        g->im[i] = real ? im[j] : 1;
        int64_t span = g->d[i] * (g->k[i] - 1) + 1, padded = g->im[i] + 2 * g->p[i];
        if (real && span > padded)
            return hg_error(HG_ERR_VALUE,
                            "%s: kernel=%s (dilated to %lld) exceeds the padded image size %lld "
                            "on spatial dim %d",
                            op, tuple_str(s0, k), (long long)span, (long long)padded, j);
        g->out[i] = (padded - span) / g->s[i] + 1;
    }
    return HG_OK;
}

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

static hg_status im2col_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR];
    int nsp = a->v[IC_KERNEL].t.n;
    if (in[0].ndim < 0) return HG_OK;
    if (in[0].ndim != nsp + 2)
        return hg_error(HG_ERR_VALUE,
                        "%s: data shape %s does not match kernel of %d dims: expected %d dims "
                        "(batch, channel and %d spatial)",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape), nsp, nsp + 2, nsp);
    if (!hg_is_float(in[0].dtype))
        return hg_error(HG_ERR_TYPE, "%s: data must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(in[0].dtype));
    if (!all_known(1, in)) return HG_OK;
    hg_im2col_geom g;
    HG_TRY(sliding_geom(op->name, a, IC_KERNEL, in[0].shape + 2, &g, &nsp));
    int64_t shape[3] = {in[0].shape[0], in[0].shape[1] * prod3(g.k), prod3(g.out)};
    set_meta(&out[0], in[0].dtype, 3, shape);
    return hg_shape_check(3, shape, in[0].dtype);
}

static hg_status col2im_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_tuple *os = &a->v[CI_OUTPUT_SIZE].t, *k = &a->v[CI_KERNEL].t;
    if (os->n != k->n)
        return hg_error(HG_ERR_VALUE, "%s: output_size=%s must have as many dims as kernel=%s",
                        op->name, tuple_str(s0, os), tuple_str(s1, k));
    for (int i = 0; i < os->n; i++)
        if (os->v[i] < 1)
            return hg_error(HG_ERR_VALUE, "%s: output_size=%s must be positive", op->name,
                            tuple_str(s0, os));
    hg_im2col_geom g;
    int nsp;
    HG_TRY(sliding_geom(op->name, a, CI_KERNEL, os->v, &g, &nsp));
    if (in[0].ndim < 0) return HG_OK;
    if (in[0].ndim != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 3-D (batch, channel * prod(kernel), blocks), got "
                        "shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
    if (!hg_is_float(in[0].dtype))
        return hg_error(HG_ERR_TYPE, "%s: data must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(in[0].dtype));
    if (!all_known(1, in)) return HG_OK;
    int64_t K = prod3(g.k);
    if (in[0].shape[2] != prod3(g.out))
        return hg_error(HG_ERR_VALUE,
                        "%s: data shape %s has %lld blocks, but output_size=%s with these "
                        "kernel, stride, dilate and pad gives %lld",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        (long long)in[0].shape[2], tuple_str(s1, os), (long long)prod3(g.out));
    if (in[0].shape[1] % K != 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: dim 1 of data shape %s must be a multiple of the kernel size %lld",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape), (long long)K);
    int64_t shape[5] = {in[0].shape[0], in[0].shape[1] / K};
    for (int i = 0; i < nsp; i++) shape[2 + i] = os->v[i];
    set_meta(&out[0], in[0].dtype, nsp + 2, shape);
    return hg_shape_check(nsp + 2, shape, in[0].dtype);
}

/* One direction over a batch: im2col (to_col) reads images and writes col blocks, col2im adds
 * col blocks into zeroed images. float16 goes through float copies in the workspace. */
static hg_status sliding_run(const hg_op_def *op, const hg_exec_ctx *ctx, bool to_col,
                             const hg_im2col_geom *g0, int64_t N, const hg_tensor *src,
                             hg_tensor *dst)
{
    hg_im2col_geom g = *g0;
    int64_t isz = g.C * prod3(g.im), csz = g.C * prod3(g.k) * prod3(g.out);
    int64_t ssz = to_col ? isz : csz, dsz = to_col ? csz : isz;
    hg_dtype dt = src->dtype;
    const void *s = hg_data(src);
    void *d = hg_data(dst);
    if (N * ssz == 0 || N * dsz == 0) {
        if (N * dsz > 0) memset(d, 0, hg_tensor_nbytes(dst));
        return HG_OK;
    }
    if (dt == HG_DTYPE_F16) {
        if (!ctx->workspace) return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
        float *fs = ctx->workspace, *fd = fs + N * ssz;
        hg_half_to_f32_n(s, fs, N * ssz);
        s = fs;
        d = fd;
        dt = HG_DTYPE_F32;
    }
    if (!to_col) memset(d, 0, (size_t)(N * dsz) * hg_dtype_size(dt));
    size_t es = hg_dtype_size(dt);
    for (int64_t n = 0; n < N; n++) {
        const char *sp = (const char *)s + (size_t)(n * ssz) * es;
        char *dp = (char *)d + (size_t)(n * dsz) * es;
        if (dt == HG_DTYPE_F32) {
            if (to_col) hg_im2col_f32(&g, (const float *)sp, (float *)dp);
            else hg_col2im_f32(&g, (const float *)sp, (float *)dp);
        } else {
            if (to_col) hg_im2col_f64(&g, (const double *)sp, (double *)dp);
            else hg_col2im_f64(&g, (const double *)sp, (double *)dp);
        }
    }
    if (src->dtype == HG_DTYPE_F16) hg_f32_to_half_n(d, hg_data(dst), N * dsz);
    return HG_OK;
}

/* im2col's geometry from its data meta (image = data's spatial dims). */
static hg_status im2col_geom_of(const char *op, const hg_attrs *a, const hg_meta *x,
                                hg_im2col_geom *g)
{
    int nsp;
    HG_TRY(sliding_geom(op, a, IC_KERNEL, x->shape + 2, g, &nsp));
    g->C = x->shape[1];
    return HG_OK;
}

static hg_status col2im_geom_of(const char *op, const hg_attrs *a, const hg_meta *col,
                                hg_im2col_geom *g)
{
    int nsp;
    HG_TRY(sliding_geom(op, a, CI_KERNEL, a->v[CI_OUTPUT_SIZE].t.v, g, &nsp));
    g->C = col->shape[1] / prod3(g->k);
    return HG_OK;
}

static size_t f16_pair_ws(const hg_meta *x, const hg_meta *y)
{
    if (x->dtype != HG_DTYPE_F16) return 0;
    return sizeof(float) *
           (size_t)(hg_shape_size(x->ndim, x->shape) + hg_shape_size(y->ndim, y->shape));
}

static size_t im2col_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    hg_meta x = in[0], o = {.ndim = -1};
    if (im2col_infer(&(hg_op_def){.name = "im2col"}, a, nin, &x, 1, &o) != HG_OK || o.ndim < 0)
        return 0;
    return f16_pair_ws(&in[0], &o);
}

static size_t col2im_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    hg_meta x = in[0], o = {.ndim = -1};
    if (col2im_infer(&(hg_op_def){.name = "col2im"}, a, nin, &x, 1, &o) != HG_OK || o.ndim < 0)
        return 0;
    return f16_pair_ws(&in[0], &o);
}

static hg_status im2col_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_meta x = hg_meta_of(in[0]);
    hg_im2col_geom g;
    HG_TRY(im2col_geom_of(op->name, a, &x, &g));
    return sliding_run(op, ctx, true, &g, x.shape[0], in[0], out[0]);
}

static hg_status col2im_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_meta c = hg_meta_of(in[0]);
    hg_im2col_geom g;
    HG_TRY(col2im_geom_of(op->name, a, &c, &g));
    return sliding_run(op, ctx, false, &g, c.shape[0], in[0], out[0]);
}

/* _backward_im2col(ograd, data) -> data gradient: col2im of the output gradient onto the
 * data's shape (data gives only the shape). */
static hg_status im2col_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    out[0].ndim = -1;
    if (!all_known(2, in)) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta x = in[1], o = {.ndim = -1};
    HG_TRY(im2col_infer(op, a, 1, &x, 1, &o));
    if (in[0].dtype != o.dtype || !hg_shape_equal(in[0].ndim, in[0].shape, o.ndim, o.shape))
        return hg_error(HG_ERR_VALUE, "%s: output gradient %s does not match im2col's output %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, o.ndim, o.shape));
    out[0] = in[1];
    return HG_OK;
}

static size_t im2col_bw_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)a;
    (void)nin;
    return f16_pair_ws(&in[0], &in[1]);
}

static hg_status im2col_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_meta x = hg_meta_of(in[1]);
    hg_im2col_geom g;
    HG_TRY(im2col_geom_of(op->name, a, &x, &g));
    return sliding_run(op, ctx, false, &g, x.shape[0], in[0], out[0]);
}

static hg_status im2col_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "_backward_im2col", true);
}

/* col2im's adjoint is im2col with the same sliding attributes. */
static hg_status col2im_grad(hg_grad_ctx *g)
{
    const char *kv[] = {
        "kernel", hg_g_attr_str(g, CI_KERNEL), "stride", hg_g_attr_str(g, CI_STRIDE),
        "dilate", hg_g_attr_str(g, CI_DILATE), "pad",    hg_g_attr_str(g, CI_PAD),
        NULL};
    hg_g_set(g, 0, hg_g_op(g, "im2col", HG_GIN(hg_g_ograd(g, 0)), kv));
    return hg_g_status(g);
}

/* ==== GridGenerator ========================================================================== */

static const char *const k_gg_types[] = {[GG_AFFINE] = "affine", [GG_WARP] = "warp", NULL};

static const hg_attr_spec k_gg_attrs[] = {
    [GG_TRANSFORM] = {"transform_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL,
                      "affine: data is (batch, 6) affine matrices; warp: data is an optical "
                      "flow (batch, 2, h, w)",
                      k_gg_types},
    [GG_TARGET] = {"target_shape", HG_ATTR_TUPLE, 0, "(0, 0)",
                   "output (H, W); required by affine, ignored by warp", NULL},
};
_Static_assert(HG_COUNT(k_gg_attrs) == GG_NATTRS, "k_gg_attrs must match its enum");

/* target_shape of an affine grid, checked (both entries positive). */
static hg_status affine_target(const char *op, const hg_tuple *t, int64_t *H, int64_t *W)
{
    char s0[HG_SHAPE_STR];
    if (t->n != 2 || t->v[0] < 1 || t->v[1] < 1)
        return hg_error(HG_ERR_VALUE, "%s: target_shape must be two positive sizes (H, W), got %s",
                        op, tuple_str(s0, t));
    *H = t->v[0];
    *W = t->v[1];
    return HG_OK;
}

static hg_status gg_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR];
    bool affine = a->v[GG_TRANSFORM].i == GG_AFFINE;
    int64_t H = 0, W = 0;
    if (affine) HG_TRY(affine_target(op->name, &a->v[GG_TARGET].t, &H, &W));
    if (in[0].ndim < 0) return HG_OK;
    HG_TRY(need_float(op->name, "data", in[0].dtype));
    if (affine) {
        if (in[0].ndim != 2 || (in[0].shape[1] >= 0 && in[0].shape[1] != 6))
            return hg_error(HG_ERR_VALUE,
                            "%s: with transform_type='affine' data must be (batch, 6) affine "
                            "matrices, got shape %s",
                            op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
        int64_t shape[4] = {in[0].shape[0], 2, H, W};
        set_meta(&out[0], in[0].dtype, 4, shape);
        return HG_OK;
    }
    if (in[0].ndim != 4 || (in[0].shape[1] >= 0 && in[0].shape[1] != 2))
        return hg_error(HG_ERR_VALUE,
                        "%s: with transform_type='warp' data must be an optical flow (batch, 2, "
                        "h, w), got shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
    set_meta(&out[0], in[0].dtype, 4, in[0].shape);
    return HG_OK;
}

/* Affine: out[n, 0] = t0 x + t1 y + t2 and out[n, 1] = t3 x + t4 y + t5 over the target grid,
 * x = -1 + w * 2/(W-1), y = -1 + h * 2/(H-1) (MXNet's grid_dst, in the data's type). Warp:
 * out[n, 0] = (flow_x + w) / ((W-1)/2) - 1, out[n, 1] = (flow_y + h) / ((H-1)/2) - 1. */
#define GG_KERNELS(T)                                                                              \
    static void gg_affine_##T(const T *th, T *o, int64_t N, int64_t H, int64_t W)                  \
    {                                                                                              \
        const T sx = (T)(2.0 / (double)(W - 1)), sy = (T)(2.0 / (double)(H - 1));                \
        for (int64_t n = 0; n < N; n++) {                                                          \
            const T *t = th + 6 * n;                                                               \
            T *ox = o + n * 2 * H * W, *oy = ox + H * W;                                           \
            for (int64_t h = 0; h < H; h++)                                                        \
                for (int64_t w = 0; w < W; w++) {                                                  \
                    T x = (T)-1.0 + (T)w * sx, y = (T)-1.0 + (T)h * sy;                            \
                    ox[h * W + w] = t[0] * x + t[1] * y + t[2];                                    \
                    oy[h * W + w] = t[3] * x + t[4] * y + t[5];                                    \
                }                                                                                  \
        }                                                                                          \
    }                                                                                              \
    static void gg_affine_bw_##T(const T *dy, T *dth, int64_t N, int64_t H, int64_t W)             \
    {                                                                                              \
        const T sx = (T)(2.0 / (double)(W - 1)), sy = (T)(2.0 / (double)(H - 1));                \
        for (int64_t n = 0; n < N; n++) {                                                          \
            const T *gx = dy + n * 2 * H * W, *gy = gx + H * W;                                    \
            T a[6] = {0, 0, 0, 0, 0, 0};                                                           \
            for (int64_t h = 0; h < H; h++)                                                        \
                for (int64_t w = 0; w < W; w++) {                                                  \
                    T x = (T)-1.0 + (T)w * sx, y = (T)-1.0 + (T)h * sy;                            \
                    T u = gx[h * W + w], v = gy[h * W + w];                                        \
                    a[0] += u * x;                                                                 \
                    a[1] += u * y;                                                                 \
                    a[2] += u;                                                                     \
                    a[3] += v * x;                                                                 \
                    a[4] += v * y;                                                                 \
                    a[5] += v;                                                                     \
                }                                                                                  \
            memcpy(dth + 6 * n, a, sizeof a);                                                      \
        }                                                                                          \
    }                                                                                              \
    static void gg_warp_##T(const T *f, T *o, int64_t N, int64_t H, int64_t W, bool bw)            \
    {                                                                                              \
        const T hx = (T)(((T)W - 1.0) / 2.0), hy = (T)(((T)H - 1.0) / 2.0);                        \
        for (int64_t n = 0; n < N; n++)                                                            \
            for (int64_t c = 0; c < 2; c++) {                                                      \
                const T *fi = f + (n * 2 + c) * H * W;                                             \
                T *oi = o + (n * 2 + c) * H * W, sc = c ? hy : hx;                                 \
                for (int64_t h = 0; h < H; h++)                                                    \
                    for (int64_t w = 0; w < W; w++) {                                              \
                        T v = fi[h * W + w];                                                       \
                        oi[h * W + w] = bw ? v / sc : (v + (T)(c ? h : w)) / sc - (T)1;            \
                    }                                                                              \
            }                                                                                      \
    }

GG_KERNELS(float)
GG_KERNELS(double)

static hg_status gg_run(const hg_attrs *a, bool backward, const hg_tensor *x, hg_tensor *y)
{
    bool f32 = x->dtype == HG_DTYPE_F32;
    if (a->v[GG_TRANSFORM].i == GG_AFFINE) {
        int64_t H = a->v[GG_TARGET].t.v[0], W = a->v[GG_TARGET].t.v[1];
        int64_t N = backward ? y->shape[0] : x->shape[0];
        if (!backward) {
            if (f32) gg_affine_float(hg_data(x), hg_data(y), N, H, W);
            else gg_affine_double(hg_data(x), hg_data(y), N, H, W);
        } else {
            if (f32) gg_affine_bw_float(hg_data(x), hg_data(y), N, H, W);
            else gg_affine_bw_double(hg_data(x), hg_data(y), N, H, W);
        }
        return HG_OK;
    }
    if (f32) gg_warp_float(hg_data(x), hg_data(y), x->shape[0], x->shape[2], x->shape[3], backward);
    else gg_warp_double(hg_data(x), hg_data(y), x->shape[0], x->shape[2], x->shape[3], backward);
    return HG_OK;
}

static hg_status gg_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    return gg_run(a, false, in[0], out[0]);
}

/* _backward_GridGenerator(ograd, data) -> data gradient (data gives the shape; the op is linear
 * in its data up to the warp's constant offsets). */
static hg_status gg_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    out[0].ndim = -1;
    if (!all_known(2, in)) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta x = in[1], o = {.ndim = -1};
    HG_TRY(gg_infer(op, a, 1, &x, 1, &o));
    if (in[0].dtype != o.dtype || !hg_shape_equal(in[0].ndim, in[0].shape, o.ndim, o.shape))
        return hg_error(HG_ERR_VALUE, "%s: output gradient %s does not match the grid %s", op->name,
                        hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, o.ndim, o.shape));
    out[0] = in[1];
    return HG_OK;
}

static hg_status gg_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    return gg_run(a, true, in[0], out[0]);
}

static hg_status gg_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "_backward_GridGenerator", true);
}

/* ==== BilinearSampler ======================================================================== */

static const hg_attr_spec k_bs_attrs[] = {
    [BS_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, HG_ATTR_OPTIONAL, "None",
                      "turn off cuDNN (ignored on CPU)", NULL},
};

/* data (N, C, H, W) sampled at grid (N, 2, h, w) (x then y, in [-1, 1]) -> (N, C, h, w). */
static hg_status bs_check(const char *op, const char *gname, hg_meta *in, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    if (in[0].ndim < 0 || in[1].ndim < 0) return HG_OK;
    HG_TRY(need_float(op, "data", in[0].dtype));
    if (in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: data and %s must have the same dtype, got %s and %s", op,
                        gname, hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE, "%s: data must be 4-D (batch, channel, y, x), got shape %s",
                        op, hg_shape_str(s0, in[0].ndim, in[0].shape));
    if (in[1].ndim != 4 || (in[1].shape[1] >= 0 && in[1].shape[1] != 2) ||
        (in[0].shape[0] >= 0 && in[1].shape[0] >= 0 && in[0].shape[0] != in[1].shape[0]))
        return hg_error(HG_ERR_VALUE,
                        "%s: %s must be (batch, 2, y, x) with data's batch, got %s for data %s", op,
                        gname, hg_shape_str(s0, in[1].ndim, in[1].shape),
                        hg_shape_str(s1, in[0].ndim, in[0].shape));
    if ((in[1].shape[2] >= 0 && in[1].shape[2] < 1) || (in[1].shape[3] >= 0 && in[1].shape[3] < 1))
        return hg_error(HG_ERR_VALUE, "%s: %s shape %s has an empty spatial dim", op, gname,
                        hg_shape_str(s0, in[1].ndim, in[1].shape));
    int64_t shape[4] = {in[0].shape[0], in[0].shape[1], in[1].shape[2], in[1].shape[3]};
    set_meta(&out[0], in[0].dtype, 4, shape);
    return HG_OK;
}

static hg_status bs_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    return bs_check(op->name, "grid", in, out);
}

typedef struct {
    const void *x, *grid, *dy;
    void *y, *dx, *dgrid;
    int64_t C, IH, IW, OH, OW;
} bs_job;

/* One sample point: the top-left corner (ty, tx) and its weights, as MXNet computes them. */
#define BS_POINT(T)                                                                                \
    const T yr = (gy + (T)1) * (T)(IH - 1) / (T)2, xr = (gx + (T)1) * (T)(IW - 1) / (T)2;         \
    const int64_t ty = (int64_t)floor(yr), tx = (int64_t)floor(xr);                                \
    const T wy = (T)1 - (yr - (T)ty), wx = (T)1 - (xr - (T)tx);                                    \
    const bool in_t = ty >= 0 && ty <= IH - 1, in_b = ty + 1 >= 0 && ty + 1 <= IH - 1;             \
    const bool in_l = tx >= 0 && tx <= IW - 1, in_r = tx + 1 >= 0 && tx + 1 <= IW - 1;

#define BS_KERNELS(T)                                                                              \
    static void bs_fwd_##T(void *ctx, int64_t n0, int64_t n1)                                      \
    {                                                                                              \
        const bs_job *j = ctx;                                                                     \
        const int64_t C = j->C, IH = j->IH, IW = j->IW, OH = j->OH, OW = j->OW;                    \
        for (int64_t n = n0; n < n1; n++) {                                                        \
            const T *g = (const T *)j->grid + n * 2 * OH * OW;                                     \
            for (int64_t p = 0; p < OH * OW; p++) {                                                \
                const T gx = g[p], gy = g[OH * OW + p];                                            \
                BS_POINT(T)                                                                        \
                for (int64_t c = 0; c < C; c++) {                                                  \
                    const T *x = (const T *)j->x + (n * C + c) * IH * IW;                          \
                    T tl = in_t && in_l ? x[ty * IW + tx] : 0;                                     \
                    T tr = in_t && in_r ? x[ty * IW + tx + 1] : 0;                                 \
                    T bl = in_b && in_l ? x[(ty + 1) * IW + tx] : 0;                               \
                    T br = in_b && in_r ? x[(ty + 1) * IW + tx + 1] : 0;                           \
                    ((T *)j->y)[(n * C + c) * OH * OW + p] =                                       \
                        tl * wy * wx + tr * wy * ((T)1 - wx) + bl * ((T)1 - wy) * wx +             \
                        br * ((T)1 - wy) * ((T)1 - wx);                                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* Images are independent: image n's data gradient and grid gradient only. */                \
    static void bs_bwd_##T(void *ctx, int64_t n0, int64_t n1)                                      \
    {                                                                                              \
        const bs_job *j = ctx;                                                                     \
        const int64_t C = j->C, IH = j->IH, IW = j->IW, OH = j->OH, OW = j->OW;                    \
        for (int64_t n = n0; n < n1; n++) {                                                        \
            const T *g = (const T *)j->grid + n * 2 * OH * OW;                                     \
            T *dg = j->dgrid ? (T *)j->dgrid + n * 2 * OH * OW : NULL;                             \
            for (int64_t p = 0; p < OH * OW; p++) {                                                \
                const T gx = g[p], gy = g[OH * OW + p];                                            \
                BS_POINT(T)                                                                        \
                T gyw = 0, gxw = 0;                                                                \
                for (int64_t c = 0; c < C; c++) {                                                  \
                    const T *x = (const T *)j->x + (n * C + c) * IH * IW;                          \
                    T *dx = j->dx ? (T *)j->dx + (n * C + c) * IH * IW : NULL;                     \
                    const T d = ((const T *)j->dy)[(n * C + c) * OH * OW + p];                     \
                    T tl = 0, tr = 0, bl = 0, br = 0;                                              \
                    if (in_t && in_l) {                                                            \
                        if (dx) dx[ty * IW + tx] += d * wy * wx;                                   \
                        tl = x[ty * IW + tx];                                                      \
                    }                                                                              \
                    if (in_t && in_r) {                                                            \
                        if (dx) dx[ty * IW + tx + 1] += d * wy * ((T)1 - wx);                      \
                        tr = x[ty * IW + tx + 1];                                                  \
                    }                                                                              \
                    if (in_b && in_l) {                                                            \
                        if (dx) dx[(ty + 1) * IW + tx] += d * ((T)1 - wy) * wx;                    \
                        bl = x[(ty + 1) * IW + tx];                                                \
                    }                                                                              \
                    if (in_b && in_r) {                                                            \
                        if (dx) dx[(ty + 1) * IW + tx + 1] += d * ((T)1 - wy) * ((T)1 - wx);       \
                        br = x[(ty + 1) * IW + tx + 1];                                            \
                    }                                                                              \
                    gyw -= d * (tr - br + (tl - tr - bl + br) * wx);                               \
                    gxw -= d * (bl - br + (tl - tr - bl + br) * wy);                               \
                }                                                                                  \
                if (dg) {                                                                          \
                    dg[OH * OW + p] = gyw * (T)(IH - 1) / (T)2;                                    \
                    dg[p] = gxw * (T)(IW - 1) / (T)2;                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

BS_KERNELS(float)
BS_KERNELS(double)

static int64_t bs_grain(const bs_job *j)
{
    int64_t work = j->C * j->OH * j->OW;
    return work > 0 ? HG_GRAIN_ELEMWISE / work + 1 : 1;
}

/* Samples x at grid into y (nothing else written). */
static void bs_sample(hg_dtype dt, const void *x, const void *grid, void *y, const int64_t *xs,
                      int64_t OH, int64_t OW)
{
    bs_job j = {
        .x = x, .grid = grid, .y = y, .C = xs[1], .IH = xs[2], .IW = xs[3], .OH = OH, .OW = OW};
    hg_parallel_for(xs[0], bs_grain(&j), dt == HG_DTYPE_F32 ? bs_fwd_float : bs_fwd_double, &j);
}

/* dx (zeroed here) and dgrid, either may be NULL. */
static void bs_backward(hg_dtype dt, const void *dy, const void *x, const void *grid, void *dx,
                        void *dgrid, const int64_t *xs, int64_t OH, int64_t OW)
{
    size_t es = hg_dtype_size(dt);
    if (dx) memset(dx, 0, es * (size_t)(xs[0] * xs[1] * xs[2] * xs[3]));
    bs_job j = {.x = x,
                .grid = grid,
                .dy = dy,
                .dx = dx,
                .dgrid = dgrid,
                .C = xs[1],
                .IH = xs[2],
                .IW = xs[3],
                .OH = OH,
                .OW = OW};
    hg_parallel_for(xs[0], bs_grain(&j), dt == HG_DTYPE_F32 ? bs_bwd_float : bs_bwd_double, &j);
}

static hg_status bs_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    bs_sample(in[0]->dtype, hg_data(in[0]), hg_data(in[1]), hg_data(out[0]), in[0]->shape,
              in[1]->shape[2], in[1]->shape[3]);
    return HG_OK;
}

/* _backward_BilinearSampler(ograd, data, grid) -> (data grad, grid grad). */
static hg_status bs_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    out[0].ndim = out[1].ndim = -1;
    if (!all_known(3, in)) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta o = {.ndim = -1};
    HG_TRY(bs_check(op->name, "grid", in + 1, &o));
    if (in[0].dtype != o.dtype || !hg_shape_equal(in[0].ndim, in[0].shape, o.ndim, o.shape))
        return hg_error(HG_ERR_VALUE, "%s: output gradient %s does not match the output %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, o.ndim, o.shape));
    out[0] = in[1];
    out[1] = in[2];
    return HG_OK;
}

static hg_status bs_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    bs_backward(in[1]->dtype, hg_data(in[0]), hg_data(in[1]), hg_data(in[2]), hg_data(out[0]),
                hg_data(out[1]), in[1]->shape, in[2]->shape[2], in[2]->shape[3]);
    return HG_OK;
}

static hg_status bs_grad(hg_grad_ctx *g)
{
    hg_sentry d[2];
    hg_g_op_fwd_attrs(g, "_backward_BilinearSampler",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)), NULL, 2, d);
    for (int k = 0; k < 2; k++)
        if (hg_g_needs(g, k)) hg_g_set(g, k, d[k]);
    return hg_g_status(g);
}

/* ==== SpatialTransformer ===================================================================== */

static const char *const k_st_transforms[] = {"affine", NULL};
static const char *const k_st_samplers[] = {"bilinear", NULL};
static const hg_attr_spec k_st_attrs[] = {
    [ST_TARGET] = {"target_shape", HG_ATTR_TUPLE, 0, "(0, 0)", "output (H, W)", NULL},
    [ST_TRANSFORM] = {"transform_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL,
                      "transformation type (affine)", k_st_transforms},
    [ST_SAMPLER] = {"sampler_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL,
                    "sampling type (bilinear)", k_st_samplers},
    [ST_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, HG_ATTR_OPTIONAL, "None",
                      "turn off cuDNN (ignored on CPU)", NULL},
};
_Static_assert(HG_COUNT(k_st_attrs) == ST_NATTRS, "k_st_attrs must match its enum");

static hg_status st_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR];
    int64_t H = 0, W = 0;
    HG_TRY(affine_target(op->name, &a->v[ST_TARGET].t, &H, &W));
    if (in[0].ndim < 0 || in[1].ndim < 0) return HG_OK;
    HG_TRY(need_float(op->name, "data", in[0].dtype));
    if (in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: data and loc must have the same dtype, got %s and %s",
                        op->name, hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE, "%s: data must be 4-D (batch, channel, y, x), got shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
    if (in[1].ndim != 2 || (in[1].shape[1] >= 0 && in[1].shape[1] != 6) ||
        (in[0].shape[0] >= 0 && in[1].shape[0] >= 0 && in[1].shape[0] != in[0].shape[0]))
        return hg_error(HG_ERR_VALUE,
                        "%s: loc must be (batch, 6) affine parameters with data's batch, got "
                        "shape %s",
                        op->name, hg_shape_str(s0, in[1].ndim, in[1].shape));
    int64_t shape[4] = {in[0].shape[0], in[0].shape[1], H, W};
    set_meta(&out[0], in[0].dtype, 4, shape);
    return HG_OK;
}

static size_t st_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (a->v[ST_TARGET].t.n != 2 || in[1].ndim != 2) return 0;
    return hg_dtype_size(in[0].dtype) *
           (size_t)(in[1].shape[0] * 2 * a->v[ST_TARGET].t.v[0] * a->v[ST_TARGET].t.v[1]);
}

/* The affine grid of loc in the workspace, then the bilinear sampler. */
static hg_status st_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    int64_t N = in[0]->shape[0], H = a->v[ST_TARGET].t.v[0], W = a->v[ST_TARGET].t.v[1];
    if (N == 0) return HG_OK;
    if (!ctx->workspace) return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
    if (in[0]->dtype == HG_DTYPE_F32) gg_affine_float(hg_data(in[1]), ctx->workspace, N, H, W);
    else gg_affine_double(hg_data(in[1]), ctx->workspace, N, H, W);
    bs_sample(in[0]->dtype, hg_data(in[0]), ctx->workspace, hg_data(out[0]), in[0]->shape, H, W);
    return HG_OK;
}

/* grid = GridGenerator(loc); (dx, dgrid) = _backward_BilinearSampler(dy, x, grid);
 * dloc = _backward_GridGenerator(dgrid, loc). */
static hg_status st_grad(hg_grad_ctx *g)
{
    const char *gkv[] = {"transform_type", "affine", "target_shape", hg_g_attr_str(g, ST_TARGET),
                         NULL};
    hg_sentry grid = hg_g_op(g, "GridGenerator", HG_GIN(hg_g_in(g, 1)), gkv);
    hg_sentry d[2];
    hg_g_opn(g, "_backward_BilinearSampler", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), grid), NULL, 2,
             d);
    if (hg_g_needs(g, 0)) hg_g_set(g, 0, d[0]);
    if (hg_g_needs(g, 1))
        hg_g_set(g, 1, hg_g_op(g, "_backward_GridGenerator", HG_GIN(d[1], hg_g_in(g, 1)), gkv));
    return hg_g_status(g);
}

/* ==== ROIPooling ============================================================================= */

static const hg_attr_spec k_rp_attrs[] = {
    [RP_POOLED] = {"pooled_size", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "output size (h, w) of each region", NULL},
    [RP_SCALE] = {"spatial_scale", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL,
                  "ratio of the feature map's size to the image's (the rois' coordinates), in "
                  "[0, 1]",
                  NULL},
};
_Static_assert(HG_COUNT(k_rp_attrs) == RP_NATTRS, "k_rp_attrs must match its enum");

static hg_status rp_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR];
    const hg_tuple *ps = &a->v[RP_POOLED].t;
    if (ps->n != 2 || ps->v[0] < 1 || ps->v[1] < 1)
        return hg_error(HG_ERR_VALUE, "%s: pooled_size must be two positive sizes (h, w), got %s",
                        op->name, tuple_str(s0, ps));
    double sc = a->v[RP_SCALE].f;
    if (!(sc >= 0.0 && sc <= 1.0))
        return hg_error(HG_ERR_VALUE, "%s: spatial_scale must be in [0, 1], got %g", op->name, sc);
    if (in[0].ndim < 0 || in[1].ndim < 0) return HG_OK;
    HG_TRY(need_float(op->name, "data", in[0].dtype));
    if (in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: data and rois must have the same dtype, got %s and %s",
                        op->name, hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE, "%s: data must be 4-D (batch, channel, y, x), got shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
    if (in[1].ndim != 2 || (in[1].shape[1] >= 0 && in[1].shape[1] != 5))
        return hg_error(HG_ERR_VALUE,
                        "%s: rois must be (num_rois, 5): (batch index, x1, y1, x2, y2), got "
                        "shape %s",
                        op->name, hg_shape_str(s0, in[1].ndim, in[1].shape));
    int64_t shape[4] = {in[1].shape[0], in[0].shape[1], ps->v[0], ps->v[1]};
    set_meta(&out[0], in[0].dtype, 4, shape);
    set_meta(&out[1], HG_DTYPE_I64, 4, shape);
    return HG_OK;
}

typedef struct {
    const void *x, *rois;
    void *y;
    int64_t *arg;
    int64_t N, C, H, W, PH, PW;
    double scale;
} rp_job;

/* Region r: its bins' max over the feature map of its batch index (MXNet's roi_pooling.cc:
 * rounded corners, at least 1x1, bins floor/ceil of multiples of size / pooled size, clipped;
 * an empty bin or a bad batch index gives 0 and index -1). arg: flat index into data. */
#define RP_KERNEL(T)                                                                               \
    static void rp_fwd_##T(void *ctx, int64_t r0, int64_t r1)                                      \
    {                                                                                              \
        const rp_job *j = ctx;                                                                     \
        const T sc = (T)j->scale;                                                                  \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const T *b = (const T *)j->rois + 5 * r;                                               \
            int64_t sw = (int64_t)round(b[1] * sc), sh = (int64_t)round(b[2] * sc);                \
            int64_t ew = (int64_t)round(b[3] * sc), eh = (int64_t)round(b[4] * sc);                \
            int64_t bi = (int64_t)b[0];                                                            \
            bool bad = bi < 0 || bi >= j->N;                                                       \
            int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1; \
            const T bh = (T)rh / (T)j->PH, bw = (T)rw / (T)j->PW;                                  \
            for (int64_t c = 0; c < j->C; c++) {                                                   \
                int64_t base = (bi * j->C + c) * j->H * j->W;                                      \
                const T *x = bad ? NULL : (const T *)j->x + base;                                  \
                T *y = (T *)j->y + (r * j->C + c) * j->PH * j->PW;                                 \
                int64_t *arg = j->arg + (r * j->C + c) * j->PH * j->PW;                            \
                for (int64_t ph = 0; ph < j->PH; ph++)                                             \
                    for (int64_t pw = 0; pw < j->PW; pw++) {                                       \
                        int64_t hs = (int64_t)floor((T)ph * bh) + sh;                              \
                        int64_t he = (int64_t)ceil((T)(ph + 1) * bh) + sh;                         \
                        int64_t ws = (int64_t)floor((T)pw * bw) + sw;                              \
                        int64_t we = (int64_t)ceil((T)(pw + 1) * bw) + sw;                         \
                        hs = hs < 0 ? 0 : (hs > j->H ? j->H : hs);                                 \
                        he = he < 0 ? 0 : (he > j->H ? j->H : he);                                 \
                        ws = ws < 0 ? 0 : (ws > j->W ? j->W : ws);                                 \
                        we = we < 0 ? 0 : (we > j->W ? j->W : we);                                 \
                        int64_t o = ph * j->PW + pw;                                               \
                        if (bad || he <= hs || we <= ws) {                                         \
                            y[o] = 0;                                                              \
                            arg[o] = -1;                                                           \
                            continue;                                                              \
                        }                                                                          \
                        T m = (T)-FLT_MAX;                                                         \
                        int64_t mi = -1;                                                           \
                        for (int64_t h = hs; h < he; h++)                                          \
                            for (int64_t w = ws; w < we; w++)                                      \
                                if (x[h * j->W + w] > m) {                                         \
                                    m = x[h * j->W + w];                                           \
                                    mi = base + h * j->W + w;                                      \
                                }                                                                  \
                        y[o] = m;                                                                  \
                        arg[o] = mi;                                                               \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
    }

RP_KERNEL(float)
RP_KERNEL(double)

static hg_status rp_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    rp_job j = {.x = hg_data(in[0]),
                .rois = hg_data(in[1]),
                .y = hg_data(out[0]),
                .arg = hg_data(out[1]),
                .N = in[0]->shape[0],
                .C = in[0]->shape[1],
                .H = in[0]->shape[2],
                .W = in[0]->shape[3],
                .PH = a->v[RP_POOLED].t.v[0],
                .PW = a->v[RP_POOLED].t.v[1],
                .scale = (float)a->v[RP_SCALE].f}; /* MXNet's spatial_scale is a float */
    int64_t work = j.C * j.H * j.W + 1;
    hg_parallel_for(in[1]->shape[0], HG_GRAIN_ELEMWISE / work + 1,
                    in[0]->dtype == HG_DTYPE_F32 ? rp_fwd_float : rp_fwd_double, &j);
    return HG_OK;
}

/* _backward_ROIPooling(ograd, maxidx, data) -> data gradient: each output's gradient added to
 * the element its max came from (data gives the shape). Regions may overlap: serial. */
static hg_status rp_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    out[0].ndim = -1;
    if (!all_known(3, in)) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    HG_TRY(need_float(op->name, "data", in[2].dtype));
    if (in[1].dtype != HG_DTYPE_I64 || in[0].dtype != in[2].dtype ||
        !hg_shape_equal(in[0].ndim, in[0].shape, in[1].ndim, in[1].shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: output gradient %s and int64 max indices %s must match in shape",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, in[1].ndim, in[1].shape));
    out[0] = in[2];
    return HG_OK;
}

static hg_status rp_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t n = in[0]->size, nx = out[0]->size;
    const int64_t *arg = hg_data(in[1]);
    memset(hg_data(out[0]), 0, hg_tensor_nbytes(out[0]));
    for (int64_t i = 0; i < n; i++)
        if (arg[i] >= nx)
            return hg_error(HG_ERR_VALUE, "%s: max index %lld is outside data of %lld elements",
                            op->name, (long long)arg[i], (long long)nx);
    if (in[0]->dtype == HG_DTYPE_F32) {
        const float *dy = hg_data(in[0]);
        float *dx = hg_data(out[0]);
        for (int64_t i = 0; i < n; i++)
            if (arg[i] >= 0) dx[arg[i]] += dy[i];
    } else {
        const double *dy = hg_data(in[0]);
        double *dx = hg_data(out[0]);
        for (int64_t i = 0; i < n; i++)
            if (arg[i] >= 0) dx[arg[i]] += dy[i];
    }
    return HG_OK;
}

/* The rois get a zero gradient, as in MXNet. */
static hg_status rp_grad(hg_grad_ctx *g)
{
    if (hg_g_needs(g, 0)) {
        hg_sentry d;
        hg_g_op_fwd_attrs(g, "_backward_ROIPooling",
                          HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 1), hg_g_in(g, 0)), NULL, 1, &d);
        hg_g_set(g, 0, d);
    }
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}

/* ==== Correlation ============================================================================ */

static const hg_attr_spec k_co_attrs[] = {
    [CO_KERNEL] = {"kernel_size", HG_ATTR_INT, 0, "1", "patch size (odd)", NULL},
    [CO_MAXD] = {"max_displacement", HG_ATTR_INT, 0, "1", "largest displacement compared", NULL},
    [CO_STRIDE1] = {"stride1", HG_ATTR_INT, 0, "1", "stride over data1's positions", NULL},
    [CO_STRIDE2] = {"stride2", HG_ATTR_INT, 0, "1",
                    "stride of the displacements within the neighbourhood", NULL},
    [CO_PAD] = {"pad_size", HG_ATTR_INT, 0, "0", "zero padding of both inputs", NULL},
    [CO_MULT] = {"is_multiply", HG_ATTR_BOOL, 0, "True",
                 "multiply the patches (True) or sum their absolute differences (False)", NULL},
};
_Static_assert(HG_COUNT(k_co_attrs) == CO_NATTRS, "k_co_attrs must match its enum");

typedef struct {
    int64_t N, C, H, W;         /* inputs */
    int64_t OC, OH, OW;         /* output: displacements, positions */
    int64_t k, maxd, s1, s2, pad, R, GW;
    bool mult;
} co_geom;

static hg_status co_geometry(const char *op, const hg_attrs *a, const hg_meta *x, co_geom *g)
{
    char s0[HG_SHAPE_STR];
    int64_t k = a->v[CO_KERNEL].i, maxd = a->v[CO_MAXD].i, s1 = a->v[CO_STRIDE1].i;
    int64_t s2 = a->v[CO_STRIDE2].i, pad = a->v[CO_PAD].i;
    if (k < 1 || k % 2 == 0)
        return hg_error(HG_ERR_VALUE, "%s: kernel_size must be a positive odd number, got %lld", op,
                        (long long)k);
    if (maxd < 0 || pad < 0 || s1 < 1 || s2 < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: max_displacement and pad_size must be non-negative and the strides "
                        "positive, got max_displacement=%lld, pad_size=%lld, stride1=%lld, "
                        "stride2=%lld",
                        op, (long long)maxd, (long long)pad, (long long)s1, (long long)s2);
    g->k = k;
    g->maxd = maxd;
    g->s1 = s1;
    g->s2 = s2;
    g->pad = pad;
    g->mult = a->v[CO_MULT].b;
    g->R = maxd / s2;
    g->GW = 2 * g->R + 1;
    g->OC = g->GW * g->GW;
    g->N = x->shape[0];
    g->C = x->shape[1];
    g->H = x->shape[2];
    g->W = x->shape[3];
    int64_t border = maxd + (k - 1) / 2;
    int64_t pw = g->W + 2 * pad - 2 * border, ph = g->H + 2 * pad - 2 * border;
    g->OW = pw > 0 ? (pw + s1 - 1) / s1 : 0;
    g->OH = ph > 0 ? (ph + s1 - 1) / s1 : 0;
    if (g->OW < 1 || g->OH < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: the neighbourhood and kernel do not fit in data of shape %s: "
                        "kernel_size=%lld, max_displacement=%lld and pad_size=%lld leave no "
                        "output position",
                        op, hg_shape_str(s0, x->ndim, x->shape), (long long)k, (long long)maxd,
                        (long long)pad);
    return HG_OK;
}

static hg_status co_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    /* the dtype is shared: either input gives it to the other */
    if (in[0].ndim < 0 && in[1].ndim >= 0) in[0].dtype = in[1].dtype;
    if (in[0].ndim < 0 || in[1].ndim < 0) return HG_OK;
    HG_TRY(need_float(op->name, "data1", in[0].dtype));
    if (in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: data1 and data2 must have the same dtype, got %s and %s",
                        op->name, hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    if (in[0].ndim != 4 || !hg_shape_equal(in[0].ndim, in[0].shape, in[1].ndim, in[1].shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: data1 and data2 must be 4-D (batch, channel, y, x) of one shape, "
                        "got %s and %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, in[1].ndim, in[1].shape));
    if (!all_known(2, in)) return HG_OK;
    co_geom g;
    HG_TRY(co_geometry(op->name, a, &in[0], &g));
    int64_t shape[4] = {g.N, g.OC, g.OH, g.OW};
    set_meta(&out[0], in[0].dtype, 4, shape);
    return HG_OK;
}

typedef struct {
    co_geom g;
    const void *x1, *x2, *dy;
    void *y, *dx1, *dx2;
} co_job;

/* Value of x (one image, channel-first) at padded position (y, x), 0 in the padding. */
#define CO_AT(T, p, g, c, yy, xx)                                                                  \
    ((yy) - (g)->pad < 0 || (yy) - (g)->pad >= (g)->H || (xx) - (g)->pad < 0 ||                    \
             (xx) - (g)->pad >= (g)->W                                                             \
         ? (T)0                                                                                    \
         : (p)[((c) * (g)->H + (yy) - (g)->pad) * (g)->W + (xx) - (g)->pad])

/* Output (n, tc, i, j): the mean over the k x k patch at (y1, x1) = (i, j) * stride1 + maxd
 * (top-left, in padded coordinates) and all channels of x1 * x2 or |x1 - x2|, x2's patch moved
 * by the displacement of tc. Images are independent (forward and backward). */
#define CO_KERNELS(T)                                                                              \
    static void co_fwd_##T(void *ctx, int64_t n0, int64_t n1)                                      \
    {                                                                                              \
        const co_job *j = ctx;                                                                     \
        const co_geom *g = &j->g;                                                                  \
        const T sum = (T)(g->k * g->k * g->C);                                                     \
        for (int64_t n = n0; n < n1; n++) {                                                        \
            const T *a = (const T *)j->x1 + n * g->C * g->H * g->W;                                \
            const T *b = (const T *)j->x2 + n * g->C * g->H * g->W;                                \
            T *y = (T *)j->y + n * g->OC * g->OH * g->OW;                                          \
            for (int64_t tc = 0; tc < g->OC; tc++) {                                               \
                int64_t so = (tc % g->GW - g->R) * g->s2, sp = (tc / g->GW - g->R) * g->s2;        \
                for (int64_t i = 0; i < g->OH; i++)                                                \
                    for (int64_t jj = 0; jj < g->OW; jj++) {                                       \
                        int64_t x1 = jj * g->s1 + g->maxd, y1 = i * g->s1 + g->maxd;               \
                        int64_t x2 = x1 + so, y2 = y1 + sp;                                        \
                        T acc = 0;                                                                 \
                        for (int64_t h = 0; h < g->k; h++)                                         \
                            for (int64_t w = 0; w < g->k; w++)                                     \
                                for (int64_t c = 0; c < g->C; c++) {                               \
                                    T u = CO_AT(T, a, g, c, y1 + h, x1 + w);                       \
                                    T v = CO_AT(T, b, g, c, y2 + h, x2 + w);                       \
                                    acc += g->mult ? u * v : (T)fabs((double)(u - v));             \
                                }                                                                  \
                        y[(tc * g->OH + i) * g->OW + jj] = acc / sum;                              \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void co_bwd_##T(void *ctx, int64_t n0, int64_t n1)                                      \
    {                                                                                              \
        const co_job *j = ctx;                                                                     \
        const co_geom *g = &j->g;                                                                  \
        const T sum = (T)(g->k * g->k * g->C);                                                     \
        const int64_t HW = g->H * g->W;                                                            \
        for (int64_t n = n0; n < n1; n++) {                                                        \
            const T *a = (const T *)j->x1 + n * g->C * HW, *b = (const T *)j->x2 + n * g->C * HW;  \
            T *da = j->dx1 ? (T *)j->dx1 + n * g->C * HW : NULL;                                   \
            T *db = j->dx2 ? (T *)j->dx2 + n * g->C * HW : NULL;                                   \
            const T *dy = (const T *)j->dy + n * g->OC * g->OH * g->OW;                            \
            for (int64_t tc = 0; tc < g->OC; tc++) {                                               \
                int64_t so = (tc % g->GW - g->R) * g->s2, sp = (tc / g->GW - g->R) * g->s2;        \
                for (int64_t i = 0; i < g->OH; i++)                                                \
                    for (int64_t jj = 0; jj < g->OW; jj++) {                                       \
                        int64_t x1 = jj * g->s1 + g->maxd, y1 = i * g->s1 + g->maxd;               \
                        int64_t x2 = x1 + so, y2 = y1 + sp;                                        \
                        const T d = dy[(tc * g->OH + i) * g->OW + jj] / sum;                       \
                        for (int64_t h = 0; h < g->k; h++)                                         \
                            for (int64_t w = 0; w < g->k; w++) {                                   \
                                int64_t ay = y1 + h - g->pad, ax = x1 + w - g->pad;                \
                                int64_t by = y2 + h - g->pad, bx = x2 + w - g->pad;                \
                                bool ain = ay >= 0 && ay < g->H && ax >= 0 && ax < g->W;           \
                                bool bin = by >= 0 && by < g->H && bx >= 0 && bx < g->W;           \
                                for (int64_t c = 0; c < g->C; c++) {                               \
                                    T u = ain ? a[c * HW + ay * g->W + ax] : (T)0;                 \
                                    T v = bin ? b[c * HW + by * g->W + bx] : (T)0;                 \
                                    if (g->mult) {                                                 \
                                        if (ain && da) da[c * HW + ay * g->W + ax] += d * v;       \
                                        if (bin && db) db[c * HW + by * g->W + bx] += d * u;       \
                                    } else {                                                       \
                                        T sg = u >= v ? (T)1 : (T)-1;                              \
                                        if (ain && da) da[c * HW + ay * g->W + ax] += d * sg;      \
                                        if (bin && db) db[c * HW + by * g->W + bx] -= d * sg;      \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
    }

CO_KERNELS(float)
CO_KERNELS(double)

static int64_t co_grain(const co_geom *g)
{
    int64_t work = g->OC * g->OH * g->OW * g->k * g->k * g->C;
    return work > 0 ? HG_GRAIN_ELEMWISE / work + 1 : 1;
}

static hg_status co_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta x = hg_meta_of(in[0]);
    co_job j = {.x1 = hg_data(in[0]), .x2 = hg_data(in[1]), .y = hg_data(out[0])};
    HG_TRY(co_geometry(op->name, a, &x, &j.g));
    hg_parallel_for(j.g.N, co_grain(&j.g), x.dtype == HG_DTYPE_F32 ? co_fwd_float : co_fwd_double,
                    &j);
    return HG_OK;
}

/* _backward_Correlation(ograd, data1, data2) -> (data1 grad, data2 grad). */
static hg_status co_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    out[0].ndim = out[1].ndim = -1;
    if (!all_known(3, in)) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta o = {.ndim = -1};
    HG_TRY(co_infer(op, a, 2, in + 1, 1, &o));
    if (in[0].dtype != o.dtype || !hg_shape_equal(in[0].ndim, in[0].shape, o.ndim, o.shape))
        return hg_error(HG_ERR_VALUE, "%s: output gradient %s does not match the output %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, o.ndim, o.shape));
    out[0] = in[1];
    out[1] = in[2];
    return HG_OK;
}

static hg_status co_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta x = hg_meta_of(in[1]);
    co_job j = {.dy = hg_data(in[0]),
                .x1 = hg_data(in[1]),
                .x2 = hg_data(in[2]),
                .dx1 = hg_data(out[0]),
                .dx2 = hg_data(out[1])};
    HG_TRY(co_geometry(op->name, a, &x, &j.g));
    memset(j.dx1, 0, hg_tensor_nbytes(out[0]));
    memset(j.dx2, 0, hg_tensor_nbytes(out[1]));
    hg_parallel_for(j.g.N, co_grain(&j.g), x.dtype == HG_DTYPE_F32 ? co_bwd_float : co_bwd_double,
                    &j);
    return HG_OK;
}

static hg_status co_grad(hg_grad_ctx *g)
{
    hg_sentry d[2];
    hg_g_op_fwd_attrs(g, "_backward_Correlation",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)), NULL, 2, d);
    for (int k = 0; k < 2; k++)
        if (hg_g_needs(g, k)) hg_g_set(g, k, d[k]);
    return hg_g_status(g);
}

/* ==== float16 ================================================================================
 * The float16 calls of the ops above run their float32 kernels on float32 copies: the
 * workspace holds a copy of every float16 input and output (64-byte aligned), then the float32
 * call's own workspace. Other outputs (ROIPooling's int64 indices) are written directly. */

#define F16_MAX 8

typedef hg_status (*sp_infer_fn)(const hg_op_def *, const hg_attrs *, int, hg_meta *, int,
                                 hg_meta *);
typedef hg_status (*sp_fwd_fn)(const hg_op_def *, const hg_attrs *, const hg_exec_ctx *, int,
                               hg_tensor *const *, int, hg_tensor *const *);
typedef size_t (*sp_ws_fn)(const hg_attrs *, int, const hg_meta *);

static size_t f16_round(size_t b) { return (b + 63) & ~(size_t)63; }

static size_t f16_ws(const char *name, const hg_attrs *a, int nin, const hg_meta *in, int nout,
                     sp_infer_fn infer, sp_ws_fn inner)
{
    if (nin > F16_MAX || nout > F16_MAX) return 0;
    bool any = false;
    for (int i = 0; i < nin; i++) any |= in[i].dtype == HG_DTYPE_F16;
    if (!any) return inner ? inner(a, nin, in) : 0;
    hg_meta mi[F16_MAX], mo[F16_MAX], m32[F16_MAX];
    for (int i = 0; i < nin; i++) mi[i] = in[i];
    for (int i = 0; i < nout; i++) mo[i].ndim = -1;
    if (infer(&(hg_op_def){.name = name}, a, nin, mi, nout, mo) != HG_OK) return 0;
    size_t b = 0;
    for (int i = 0; i < nin; i++) {
        m32[i] = in[i];
        if (in[i].dtype != HG_DTYPE_F16) continue;
        m32[i].dtype = HG_DTYPE_F32;
        b += f16_round(sizeof(float) * (size_t)hg_shape_size(in[i].ndim, in[i].shape));
    }
    for (int i = 0; i < nout; i++)
        if (mo[i].dtype == HG_DTYPE_F16)
            b += f16_round(sizeof(float) * (size_t)hg_shape_size(mo[i].ndim, mo[i].shape));
    return b + (inner ? inner(a, nin, m32) : 0);
}

static hg_status f16_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                         hg_tensor *const *in, int nout, hg_tensor *const *out, sp_fwd_fn fn)
{
    bool any = false;
    for (int i = 0; i < nin; i++) any |= in[i]->dtype == HG_DTYPE_F16;
    if (!any) return fn(op, a, ctx, nin, in, nout, out);
    if (nin > F16_MAX || nout > F16_MAX)
        return hg_error(HG_ERR_INTERNAL, "%s: too many inputs for float16", op->name);
    hg_storage st[2 * F16_MAX];
    hg_tensor tt[2 * F16_MAX];
    hg_tensor *pi[F16_MAX], *po[F16_MAX];
    char *w = ctx->workspace;
    size_t used = 0;
    for (int i = 0; i < nin + nout; i++) {
        hg_tensor *src = i < nin ? in[i] : out[i - nin];
        hg_tensor **slot = i < nin ? &pi[i] : &po[i - nin];
        if (src->dtype != HG_DTYPE_F16) {
            *slot = src;
            continue;
        }
        size_t nb = sizeof(float) * (size_t)src->size;
        if (nb > 0 && (!w || used + nb > ctx->workspace_bytes))
            return hg_error(HG_ERR_INTERNAL, "%s: workspace missing or too small", op->name);
        memset(&st[i], 0, sizeof st[i]);
        st[i].data = w ? w + used : NULL;
        st[i].nbytes = nb;
        memset(&tt[i], 0, sizeof tt[i]);
        tt[i].storage = &st[i];
        tt[i].size = src->size;
        tt[i].ndim = src->ndim;
        tt[i].dtype = HG_DTYPE_F32;
        memcpy(tt[i].shape, src->shape, sizeof(int64_t) * (size_t)src->ndim);
        if (i < nin && nb > 0) hg_half_to_f32_n(hg_data(src), (float *)(w + used), src->size);
        *slot = &tt[i];
        used += f16_round(nb);
    }
    hg_exec_ctx sub = {ctx->is_train, used < ctx->workspace_bytes ? w + used : NULL,
                       used < ctx->workspace_bytes ? ctx->workspace_bytes - used : 0};
    HG_TRY(fn(op, a, &sub, nin, pi, nout, po));
    for (int i = 0; i < nout; i++)
        if (out[i]->dtype == HG_DTYPE_F16 && out[i]->size > 0)
            hg_f32_to_half_n(hg_data(po[i]), hg_data(out[i]), out[i]->size);
    return HG_OK;
}

#define F16_OP(NAME, OPNAME, NIN, NOUT, INFER, FWD, INNER)                                         \
    static size_t NAME##_ws16(const hg_attrs *a, int nin, const hg_meta *in)                       \
    {                                                                                              \
        return f16_ws(OPNAME, a, nin, in, NOUT, INFER, INNER);                                     \
    }                                                                                              \
    static hg_status NAME##_fwd16(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,  \
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)  \
    {                                                                                              \
        return f16_run(op, a, ctx, nin, in, nout, out, FWD);                                       \
    }

F16_OP(gg, "GridGenerator", 1, 1, gg_infer, gg_forward, NULL)
F16_OP(gg_bw, "_backward_GridGenerator", 2, 1, gg_bw_infer, gg_bw_forward, NULL)
F16_OP(bs, "BilinearSampler", 2, 1, bs_infer, bs_forward, NULL)
F16_OP(bs_bw, "_backward_BilinearSampler", 3, 2, bs_bw_infer, bs_bw_forward, NULL)
F16_OP(st, "SpatialTransformer", 2, 1, st_infer, st_forward, st_workspace)
F16_OP(rp, "ROIPooling", 2, 2, rp_infer, rp_forward, NULL)
F16_OP(rp_bw, "_backward_ROIPooling", 3, 1, rp_bw_infer, rp_bw_forward, NULL)
F16_OP(co, "Correlation", 2, 1, co_infer, co_forward, NULL)
F16_OP(co_bw, "_backward_Correlation", 3, 2, co_bw_infer, co_bw_forward, NULL)

/* ==== registry =============================================================================== */

const hg_op_def hg_ops_spatial[] = {
    {.name = "im2col",
     .doc = "Sliding blocks of (N, C, *spatial) data as columns: (N, C * prod(kernel), blocks), "
            "rows in (channel, kernel offset) order, blocks in output-grid order; zero padding.",
     .input_names = HG_NAMES("data"),
     .attrs = k_im2col_attrs,
     .num_attrs = IC_NATTRS,
     .num_inputs = 1,
     .infer = im2col_infer,
     .forward = im2col_forward,
     .workspace = im2col_workspace,
     .grad = im2col_grad},
    {.name = "_backward_im2col",
     .doc = "Gradient of im2col from (ograd, data): col2im of ograd onto data's shape.",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_im2col_attrs,
     .num_attrs = IC_NATTRS,
     .num_inputs = 2,
     .infer = im2col_bw_infer,
     .forward = im2col_bw_forward,
     .workspace = im2col_bw_workspace},
    {.name = "col2im",
     .doc = "Adjoint of im2col: adds the columns (N, C * prod(kernel), blocks) back into images "
            "(N, C, *output_size).",
     .input_names = HG_NAMES("data"),
     .attrs = k_col2im_attrs,
     .num_attrs = CI_NATTRS,
     .num_inputs = 1,
     .infer = col2im_infer,
     .forward = col2im_forward,
     .workspace = col2im_workspace,
     .grad = col2im_grad},
    {.name = "GridGenerator",
     .doc = "Sampling grid (N, 2, H, W) in [-1, 1] for BilinearSampler: from (N, 6) affine "
            "matrices over target_shape, or from an optical flow (N, 2, H, W) (warp).",
     .input_names = HG_NAMES("data"),
     .attrs = k_gg_attrs,
     .num_attrs = GG_NATTRS,
     .num_inputs = 1,
     .infer = gg_infer,
     .forward = gg_fwd16,
     .workspace = gg_ws16,
     .grad = gg_grad},
    {.name = "_backward_GridGenerator",
     .doc = "Gradient of GridGenerator from (ograd, data).",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_gg_attrs,
     .num_attrs = GG_NATTRS,
     .num_inputs = 2,
     .infer = gg_bw_infer,
     .forward = gg_bw_fwd16,
     .workspace = gg_bw_ws16},
    {.name = "BilinearSampler",
     .doc = "Bilinear sampling of data (N, C, H, W) at grid (N, 2, h, w) (x, y in [-1, 1]); "
            "points outside the data read zeros. Output (N, C, h, w).",
     .input_names = HG_NAMES("data", "grid"),
     .attrs = k_bs_attrs,
     .num_attrs = BS_NATTRS,
     .num_inputs = 2,
     .infer = bs_infer,
     .forward = bs_fwd16,
     .workspace = bs_ws16,
     .grad = bs_grad},
    {.name = "_backward_BilinearSampler",
     .doc = "Gradients of BilinearSampler (data, grid) from (ograd, data, grid).",
     .input_names = HG_NAMES("ograd", "data", "grid"),
     .attrs = k_bs_attrs,
     .num_attrs = BS_NATTRS,
     .num_inputs = 3,
     .num_outputs = 2,
     .infer = bs_bw_infer,
     .forward = bs_bw_fwd16,
     .workspace = bs_bw_ws16},
    {.name = "SpatialTransformer",
     .doc = "Spatial transformer: an affine grid of loc (N, 6) over target_shape, then bilinear "
            "sampling of data (N, C, H, W).",
     .input_names = HG_NAMES("data", "loc"),
     .attrs = k_st_attrs,
     .num_attrs = ST_NATTRS,
     .num_inputs = 2,
     .infer = st_infer,
     .forward = st_fwd16,
     .workspace = st_ws16,
     .grad = st_grad},
    {.name = "ROIPooling",
     .doc = "Max pooling of each region (batch index, x1, y1, x2, y2) * spatial_scale of data "
            "into pooled_size bins: (num_rois, C, ph, pw). Hidden output: the flat argmax.",
     .input_names = HG_NAMES("data", "rois"),
     .output_names = HG_NAMES("output", "maxidx"),
     .attrs = k_rp_attrs,
     .num_attrs = RP_NATTRS,
     .num_inputs = 2,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .infer = rp_infer,
     .forward = rp_fwd16,
     .workspace = rp_ws16,
     .grad = rp_grad},
    {.name = "_backward_ROIPooling",
     .doc = "Gradient of ROIPooling's data from (ograd, maxidx, data).",
     .input_names = HG_NAMES("ograd", "maxidx", "data"),
     .attrs = k_rp_attrs,
     .num_attrs = RP_NATTRS,
     .num_inputs = 3,
     .infer = rp_bw_infer,
     .forward = rp_bw_fwd16,
     .workspace = rp_bw_ws16},
    {.name = "Correlation",
     .doc = "Correlation of two feature maps (FlowNet): per position and displacement, the mean "
            "over a kernel_size patch and the channels of data1 * data2 (or |data1 - data2|).",
     .input_names = HG_NAMES("data1", "data2"),
     .attrs = k_co_attrs,
     .num_attrs = CO_NATTRS,
     .num_inputs = 2,
     .infer = co_infer,
     .forward = co_fwd16,
     .workspace = co_ws16,
     .grad = co_grad},
    {.name = "_backward_Correlation",
     .doc = "Gradients of Correlation (data1, data2) from (ograd, data1, data2).",
     .input_names = HG_NAMES("ograd", "data1", "data2"),
     .attrs = k_co_attrs,
     .num_attrs = CO_NATTRS,
     .num_inputs = 3,
     .num_outputs = 2,
     .infer = co_bw_infer,
     .forward = co_bw_fwd16,
     .workspace = co_bw_ws16},
    {0},
};
