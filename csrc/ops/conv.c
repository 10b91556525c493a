/* Convolution (MXNet 1.x), 1-D, 2-D and 3-D, channel-first layouts (NCW, NCHW, NCDHW); NHWC
 * and NDHWC get shape inference only, as in MXNet's CPU build (conv_common.h).
 *
 * Every case is run as 3-D: missing leading spatial dims get size 1, kernel 1, stride 1,
 * dilation 1 and pad 0, so one im2col and one loop nest serve all ranks. Per image and group the
 * input patch matrix col[(c, kd, kh, kw), (od, oh, ow)] is built in the workspace and the output
 * is one GEMM: out_g[F/g, P] = W_g[F/g, C/g*K] . col[C/g*K, P], started from the bias (beta 1).
 * A 1x1 kernel with stride 1 and no pad needs no im2col: the image itself is the col matrix.
 *
 * The forward cuts images into tiles of output rows whose col blocks stay in L2 and spreads
 * them over the thread pool (see "forward plan"); the backward runs images in parallel slots,
 * tile by tile (see the gradient section). Depthwise layers (num_group == channels) skip both
 * for the direct kernel of kernels/cpu/depthwise.c; float32 3x3 stride-1 layers with enough
 * channels and positions take the Winograd forward of kernels/cpu/winograd.c (is_winograd) and
 * its data and weight gradients (wino_dgrad, wino_wgrad); float32 layers with at most 4 input
 * channels the direct kernel of kernels/cpu/conv_direct.c (is_direct). float16 is computed in
 * float32 through the workspace (by im2col).
 *
 * The shape rule accepts graph-inference metas: it fills unknown weight (F, C/g, *k) and bias
 * (F,) shapes, back-fills an unknown channel count from a known weight, and carries unknown (-1)
 * dims through to the output.
 */
#include <string.h>

#include "core/half.h"
#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "kernels/cpu/conv_deep.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/pwdw.h"
#include "kernels/cpu/winograd.h"
#include "ops/conv.h"
#include "ops/conv_common.h"

/* Convolution's schema, then the two switches _backward_Convolution adds after it: the forward's
 * schema is the first CV_NATTRS entries of this table. */
static const hg_attr_spec k_conv_attrs[] = {
    [CV_KERNEL] = {"kernel", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "convolution kernel size: (w,), (h, w) or (d, h, w)", NULL},
    [CV_STRIDE] = {"stride", HG_ATTR_TUPLE, 0, "()", "stride per spatial dim; () means 1s", NULL},
    [CV_DILATE] = {"dilate", HG_ATTR_TUPLE, 0, "()", "dilation per spatial dim; () means 1s", NULL},
    [CV_PAD] = {"pad", HG_ATTR_TUPLE, 0, "()",
                "zero padding per spatial dim (both sides); () means 0s", NULL},
    [CV_NUM_FILTER] = {"num_filter", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                       "number of output channels", NULL},
    [CV_NUM_GROUP] = {"num_group", HG_ATTR_INT, 0, "1", "number of groups channels are split into",
                      NULL},
    [CV_WORKSPACE] = {"workspace", HG_ATTR_INT, 0, "1024", "workspace limit in MB (ignored on CPU)",
                      NULL},
    [CV_NO_BIAS] = {"no_bias", HG_ATTR_BOOL, 0, "False", "whether to leave out the bias input",
                    NULL},
    [CV_CUDNN_TUNE] = {"cudnn_tune", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                       "cuDNN algorithm choice (ignored)", hg_conv_tune_choices},
    [CV_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, 0, "False", "turn off cuDNN (ignored)", NULL},
    [CV_LAYOUT] = {"layout", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",
                   "data layout: NCW, NCHW, NCDHW, NHWC or NDHWC (channel-last layouts: shapes "
                   "only, the CPU forward refuses them as MXNet's); None means channel-first",
                   hg_conv_layout_choices},
    [CV_GRAD_DATA] = {"grad_data", HG_ATTR_BOOL, 0, "True",
                      "compute the data gradient (else output 0 is zeros)", NULL},
    [CV_GRAD_WEIGHT] = {"grad_weight", HG_ATTR_BOOL, 0, "True",
                        "compute the weight gradient (else output 1 is zeros)", NULL},
};
_Static_assert(HG_COUNT(k_conv_attrs) == CV_BW_NATTRS, "k_conv_attrs must match its enum");

static int conv_num_inputs(const hg_attrs *a) { return a->v[CV_NO_BIAS].b ? 2 : 3; }

/* Fills the attribute part of the geometry (no shapes). */
static void geom_attrs(const hg_attrs *a, hg_conv_geom *g)
{
    int nsp = a->v[CV_KERNEL].t.n, off = 3 - nsp;
    g->nsp = nsp;
    for (int i = 0; i < 3; i++) {
        bool real = i >= off;
        int j = i - off;
        g->k[i] = real ? a->v[CV_KERNEL].t.v[j] : 1;
        g->s[i] = real ? hg_conv_tuple_at(a, CV_STRIDE, j, 1) : 1;
        g->d[i] = real ? hg_conv_tuple_at(a, CV_DILATE, j, 1) : 1;
        g->p[i] = real ? hg_conv_tuple_at(a, CV_PAD, j, 0) : 0;
    }
    g->F = a->v[CV_NUM_FILTER].i;
    g->G = a->v[CV_NUM_GROUP].i;
}

static int64_t out_size(int64_t x, int64_t k, int64_t s, int64_t d, int64_t p)
{
    return (x + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Full geometry of a validated call from the data meta (all dims known). */
static void geom_full(const hg_attrs *a, const hg_meta *x, hg_conv_geom *g)
{
    geom_attrs(a, g);
    int off = 3 - g->nsp;
    g->N = x->shape[0];
    g->C = x->shape[1];
    g->Cg = g->C / g->G;
    g->Fg = g->F / g->G;
    g->K = g->Cg;
    g->P = 1;
    g->I = 1;
    for (int i = 0; i < 3; i++) {
        g->in[i] = i >= off ? x->shape[2 + i - off] : 1;
        g->out[i] = out_size(g->in[i], g->k[i], g->s[i], g->d[i], g->p[i]);
        g->K *= g->k[i];
        g->P *= g->out[i];
        g->I *= g->in[i];
    }
}

/* num_group == channels (MobileNet's 3x3 layers): the direct kernel of depthwise.c, no GEMM. */
static bool is_depthwise(const hg_conv_geom *g)
{
    return g->G > 1 && g->Cg == 1 && g->k[2] <= HG_DW_MAX_K;
}

static hg_wino_geom wino_geom(const hg_conv_geom *g)
{
    return (hg_wino_geom){.N = g->N,
                          .C = g->C,
                          .F = g->F,
                          .H = g->in[1],
                          .W = g->in[2],
                          .ph = g->p[1],
                          .pw = g->p[2]};
}

/* float32 2-D 3x3 with stride 1, no dilation, one group (and HG_NO_WINOGRAD not set): the
 * layers winograd.c computes. */
static bool wino_shape(const hg_conv_geom *g, hg_dtype dt)
{
    if (dt != HG_DTYPE_F32 || g->nsp != 2 || g->G != 1) return false;
    for (int i = 1; i < 3; i++)
        if (g->k[i] != 3 || g->s[i] != 1 || g->d[i] != 1) return false;
    return hg_winograd_enabled();
}

/* Where the size rule of winograd.c says it beats im2col: the Winograd forward (F(2x2, 3x3) or
 * F(4x4, 3x3), winograd.c decides). */
static bool is_winograd(const hg_conv_geom *g, hg_dtype dt)
{
    hg_wino_geom wg = wino_geom(g);
    return wino_shape(g, dt) && hg_winograd_pays(&wg);
}

/* The gradients of the same layers: winograd.c's data gradient (the forward on dy with the
 * weights turned; padding at most 2) and weight gradient, each where its size rule says it
 * pays. ResNet-18's 3x3 stride-1 layers at batch 16, 2 threads, im2col -> Winograd, ms per
 * call: data gradient 56x56 20.5 -> 9.6, 28x28 19.1 -> 10.0, 14x14 15.5 -> 11.2, 7x7 17.5 ->
 * 15.7; weight gradient 26.1 -> 15.6, 20.8 -> 12.9, 15.6 -> 10.4, 17.6 -> 15.5. Its training
 * step at batch 16: 979 -> 789 ms. */
static bool wino_dgrad(const hg_conv_geom *g, hg_dtype dt)
{
    hg_wino_geom wg = wino_geom(g);
    return wino_shape(g, dt) && hg_winograd_bwd_data_pays(&wg);
}

static bool wino_wgrad(const hg_conv_geom *g, hg_dtype dt)
{
    hg_wino_geom wg = wino_geom(g);
    return wino_shape(g, dt) && hg_winograd_bwd_weight_pays(&wg);
}

/* The geometry of the direct kernels (conv_direct.h, conv_deep.h). */
static hg_cdir_geom cdir_geom(const hg_conv_geom *g)
{
    return (hg_cdir_geom){.N = g->N,
                          .C = g->C,
                          .F = g->F,
                          .H = g->in[1],
                          .W = g->in[2],
                          .OH = g->out[1],
                          .OW = g->out[2],
                          .kh = g->k[1],
                          .kw = g->k[2],
                          .s = g->s[1],
                          .ph = g->p[1],
                          .pw = g->p[2]};
}

/* float32 2-D layers, one group, no dilation, the same stride both ways: the geometries of
 * the direct kernels (conv_direct.c, conv_deep.c), whose own rules then decide. */
static bool direct_shape(const hg_conv_geom *g, hg_dtype dt)
{
    if (dt != HG_DTYPE_F32 || g->nsp != 2 || g->G != 1 || g->s[1] != g->s[2]) return false;
    return g->d[1] == 1 && g->d[2] == 1;
}

/* At most HG_CDIR_MAX_C input channels (first layers on RGB), stride 1 or 2: conv_direct.c. */
static bool is_direct(const hg_conv_geom *g, hg_dtype dt)
{
    if (!direct_shape(g, dt)) return false;
    hg_cdir_geom cg = cdir_geom(g);
    return hg_conv_direct_applies(&cg);
}

/* Deep layers on few positions that conv_deep.c's rule takes (and Winograd does not): its
 * direct kernel, on weights packed once (conv_prep). */
static bool is_deep(const hg_conv_geom *g, hg_dtype dt)
{
    if (!direct_shape(g, dt)) return false;
    hg_cdir_geom cg = cdir_geom(g);
    return !is_winograd(g, dt) && hg_conv_deep_applies(&cg);
}

static hg_dw_geom dw_geom(const hg_conv_geom *g)
{
    hg_dw_geom d = {.N = g->N, .C = g->C, .mult = g->Fg};
    for (int i = 0; i < 3; i++) {
        d.im[i] = g->in[i];
        d.out[i] = g->out[i];
        d.k[i] = g->k[i];
        d.s[i] = g->s[i];
        d.d[i] = g->d[i];
        d.p[i] = g->p[i];
    }
    return d;
}

/* A pointwise convolution (attributes a1, data x) and the depthwise one (a2) that reads its
 * output, as kernels/cpu/pwdw.h runs them: float32, channel-first, a1 1x1 with stride 1, no pad
 * and one group, a2 one filter per channel. *dw: a2's geometry. */
bool hg_conv_pwdw_geom(const hg_attrs *a1, const hg_attrs *a2, const hg_meta *x, hg_dw_geom *dw)
{
    int nsp = x->ndim - 2;
    if (x->dtype != HG_DTYPE_F32 || nsp < 1 || nsp > 3 || a1->v[CV_KERNEL].t.n != nsp ||
        a2->v[CV_KERNEL].t.n != nsp || hg_conv_channel_last(a1, CV_LAYOUT) ||
        hg_conv_channel_last(a2, CV_LAYOUT))
        return false;
    hg_conv_geom g1, g2;
    geom_full(a1, x, &g1);
    if (g1.G != 1 || !hg_conv_is_pointwise(&g1)) return false;
    hg_meta m = *x;
    m.shape[1] = g1.F;
    geom_full(a2, &m, &g2);
    if (!is_depthwise(&g2) || g2.Fg != 1 || g2.C != g1.F || g2.P <= 0) return false;
    *dw = dw_geom(&g2);
    return hg_pwdw_fits(g2.I);
}

static const char *tuple_str(char *buf, const hg_tuple *t) { return hg_shape_str(buf, t->n, t->v); }

static const hg_conv_attr_index k_conv_index = {"Convolution",
                                                CV_KERNEL,
                                                CV_NUM_FILTER,
                                                CV_NUM_GROUP,
                                                CV_LAYOUT,
                                                3,
                                                {CV_STRIDE, CV_DILATE, CV_PAD},
                                                {"stride", "dilate", "pad"},
                                                {true, true, false}};

static hg_status conv_infer_cf(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    HG_TRY(hg_conv_check_attrs(a, &k_conv_index));
    hg_conv_geom g;
    geom_attrs(a, &g);
    int nsp = g.nsp, off = 3 - nsp;
    bool has_bias = !a->v[CV_NO_BIAS].b;
    hg_meta *x = &in[0], *w = &in[1], *b = has_bias ? &in[2] : NULL;
    hg_dtype dt = x->ndim >= 0 ? x->dtype : (w->ndim >= 0 ? w->dtype : HG_DTYPE_F32);
    if (b) {
        if (!hg_meta_merge(b, dt, 1, &g.F))
            return hg_error(HG_ERR_VALUE,
                            "Convolution: bias shape %s does not match "
                            "num_filter=%lld: expected [%lld]",
                            hg_shape_str(s0, b->ndim, b->shape), (long long)g.F, (long long)g.F);
    }
    if (x->ndim < 0) {
        /* Without the data shape the weight is still known but for its channel count. */
        int64_t part[5] = {g.F, -1};
        for (int i = 0; i < nsp; i++) part[2 + i] = g.k[off + i];
        if (!hg_meta_merge(w, dt, nsp + 2, part))
            return hg_error(HG_ERR_VALUE,
                            "Convolution: weight shape %s does not match num_filter=%lld, "
                            "kernel=%s: expected %s",
                            hg_shape_str(s0, w->ndim, w->shape), (long long)g.F,
                            tuple_str(s1, &a->v[CV_KERNEL].t), hg_shape_str(s2, nsp + 2, part));
        return HG_OK;
    }
    if (x->ndim != nsp + 2)
        return hg_error(HG_ERR_VALUE,
                        "Convolution: data shape %s does not match kernel=%s: "
                        "expected %d dims (batch, channel and %d spatial)",
                        hg_shape_str(s0, x->ndim, x->shape), tuple_str(s1, &a->v[CV_KERNEL].t),
                        nsp + 2, nsp);
    /* Backwards from a known output (MXNet's incomplete inference): the batch size always,
     * a spatial size where the stride is 1. */
    if (out[0].ndim == nsp + 2) {
        if (x->shape[0] < 0) x->shape[0] = out[0].shape[0];
        for (int i = 0; i < nsp; i++) {
            int j = off + i;
            int64_t oi = out[0].shape[2 + i];
            if (x->shape[2 + i] < 0 && oi >= 0 && g.s[j] == 1)
                x->shape[2 + i] = oi + g.d[j] * (g.k[j] - 1) - 2 * g.p[j];
        }
    }
    if (x->dtype != HG_DTYPE_F32 && x->dtype != HG_DTYPE_F64 && x->dtype != HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE,
                        "Convolution: dtype %s is not supported (float32, float64 "
                        "and float16 only)",
                        hg_dtype_name(x->dtype));
    /* An unknown channel count comes back from a known weight. */
    if (x->shape[1] < 0 && w->ndim == nsp + 2 && w->shape[1] >= 0) x->shape[1] = w->shape[1] * g.G;
    int64_t C = x->shape[1];
    if (C >= 0 && C % g.G != 0)
        return hg_error(HG_ERR_VALUE,
                        "Convolution: input channels %lld (data shape %s) must be "
                        "divisible by num_group=%lld",
                        (long long)C, hg_shape_str(s0, x->ndim, x->shape), (long long)g.G);
    int64_t want_w[5] = {g.F, C >= 0 ? C / g.G : -1};
    for (int i = 0; i < nsp; i++) want_w[2 + i] = g.k[off + i];
    if (!hg_meta_merge(w, x->dtype, nsp + 2, want_w))
        return hg_error(HG_ERR_VALUE,
                        "Convolution: weight shape %s does not match data shape %s "
                        "with num_filter=%lld, num_group=%lld, kernel=%s: expected %s",
                        hg_shape_str(s0, w->ndim, w->shape), hg_shape_str(s1, x->ndim, x->shape),
                        (long long)g.F, (long long)g.G, tuple_str(s2, &a->v[CV_KERNEL].t),
                        hg_shape_str(s3, nsp + 2, want_w));
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return hg_error(HG_ERR_TYPE,
                        "Convolution: data, weight and bias must have the same "
                        "dtype, got %s, %s and %s",
                        hg_dtype_name(x->dtype), hg_dtype_name(w->dtype),
                        b ? hg_dtype_name(b->dtype) : "(none)");
    hg_meta *o = &out[0];
    o->ndim = nsp + 2;
    o->dtype = x->dtype;
    o->shape[0] = x->shape[0];
    o->shape[1] = g.F;
    int64_t P = 1, K = C >= 0 ? C / g.G : -1;
    for (int i = 0; i < nsp; i++) {
        int j = off + i;
        int64_t xi = x->shape[2 + i];
        if (xi < 0) {
            o->shape[2 + i] = -1;
            P = -1;
            continue;
        }
        int64_t span = g.d[j] * (g.k[j] - 1) + 1;
        if (xi + 2 * g.p[j] < span)
            return hg_error(HG_ERR_VALUE,
                            "Convolution: kernel=%s with dilate=%s and pad=%s is "
                            "larger than the padded input: data shape %s gives an output size "
                            "below 1 on spatial dim %d",
                            tuple_str(s0, &a->v[CV_KERNEL].t), tuple_str(s1, &a->v[CV_DILATE].t),
                            tuple_str(s2, &a->v[CV_PAD].t), hg_shape_str(s3, x->ndim, x->shape), i);
        o->shape[2 + i] = out_size(xi, g.k[j], g.s[j], g.d[j], g.p[j]);
        if (P >= 0) P *= o->shape[2 + i];
        if (K >= 0) K *= g.k[j];
    }
    if (!hg_gemm_fits(g.F / g.G, P, K))
        return hg_error(HG_ERR_VALUE,
                        "Convolution: matrix product of size M=%lld, N=%lld, "
                        "K=%lld is too large: the BLAS takes sizes below 2^31",
                        (long long)(g.F / g.G), (long long)P, (long long)K);
    for (int d = 0; d < o->ndim; d++)
        if (o->shape[d] < 0) return HG_OK; /* partial: the known dims are all there is */
    return hg_shape_check(o->ndim, o->shape, o->dtype);
}

/* Channel-last layouts: the channel-first rule on moved dims (conv_common.h). */
static hg_status conv_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    return hg_conv_infer_layout(op, a, CV_LAYOUT, nin, in, nout, out, conv_infer_cf);
}

/* ---- kernel -------------------------------------------------------------------------------- */

/* ---- forward plan --------------------------------------------------------------------------
 * The forward splits every image and group into tiles of whole output rows (o0, o1). A tile's
 * im2col block (K x rows*O2) is written into a col buffer small enough to stay in the core's L2
 * until the GEMM packs it (whole-image col matrices of a 3x3 layer are megabytes: writing them to
 * memory and reading them back cost about as much as the product). The (image, group, tile)
 * units are spread over the thread pool in contiguous runs, one slot (and col buffer) per
 * thread, each GEMM running single-threaded; so batch 1 runs in parallel too, with no GEMM-level
 * split and its synchronisation per product. */

/* Bytes of one tile's col block we aim for (a quarter to a half of the L2 of current cores). */
/* Measured on the 2-core AVX-512 machine, 3x3 64->64 at 56x56: 256 KB tiles 141 GFLOP/s, 1 MB
 * 57, whole images (7 MB) 52. */
#define TILE_BYTES (256 * 1024)
/* Columns a packed block of the backward has at least, where images have fewer positions (see
 * bw_pack). */
#define BW_MIN_COLS 512
#define BW_PACK_BYTES (16 << 20)
/* Units a layer is cut into at least (when it has that many output rows), so that any thread
 * count up to this keeps every thread busy; independent of the thread count so that the
 * workspace size is too. */
#define MIN_UNITS 8
/* Multiply-adds below which a layer runs on the calling thread alone. */
#define SERIAL_WORK 200000.0

/* Columns a tile has at least (when the image has that many): narrower products waste the
 * GEMM's packing of the weights. ResNet-18's 3x3 stride-2 layer 128 -> 256 at batch 16 (2
 * threads): 64 columns 11.3 ms, 256 9.2 ms (a wider tile outgrows L2 less than it saves in
 * weight packing: 1.2 MB of weights per tile). */
#define MIN_COLS 256
/* Small images (fewer than MIN_COLS positions) are packed up to MIN_COLS columns a block
 * (pack_images), keeping at least PACK_UNITS blocks: ResNet-18's 3x3 stride-2 layer 256 -> 512
 * (7x7 outputs) at batch 16, one image (49 columns) a block: 10.5 ms; 6 images: 8.2 ms. */
#define PACK_UNITS 4

/* How many blocks of `per` elements fit in TILE_BYTES (per == 0, no input channels or an empty
 * row: as many as asked, callers clip it). */
static int64_t fit(size_t esize, int64_t per)
{
    return per > 0 ? (int64_t)(TILE_BYTES / esize) / per : INT64_MAX / 2;
}

typedef struct conv_plan {
    int64_t rows;   /* output rows (o0, o1) per tile */
    int64_t ntiles; /* tiles per image and group */
    int64_t units;  /* N * G * ntiles */
    int64_t col_e;  /* elements of one col buffer (0: pointwise, the image is the col matrix) */
    bool whole;     /* too few units: whole images, one GEMM each, split by the GEMM itself */
    int64_t nb;     /* > 1: small images packed nb to a unit (see pack_images) */
} conv_plan;

/* Images packed side by side into one col block (nb > 1) when several whole ones fit in a tile:
 * LeNet's 8x8 outputs make 16 x 64 x 150 products per image, mostly call and packing overhead;
 * packed they become 16 x 384 x 150. Not for pointwise layers (their image is the col matrix
 * already) nor for wide images (their own product is wide enough). The output then goes
 * through a buffer of Fg x nb*P (out_g rows are per image). */
static int64_t pack_images(const hg_conv_geom *g, size_t esize)
{
    if (hg_conv_is_pointwise(g) || g->P >= 1024) return 1;
    const int64_t S = hg_conv_pack_cols(g);
    int64_t nb = fit(esize, g->K * S);
    if (S > 0 && nb * S < MIN_COLS) { /* deep layers: wide enough, within BW_PACK_BYTES */
        int64_t most = (int64_t)(BW_PACK_BYTES / esize) / (g->K > 0 ? g->K * S : 1);
        nb = (MIN_COLS + S - 1) / S;
        if (nb > most) nb = most;
    }
    if (nb > g->N) nb = g->N;
    return nb < 2 ? 1 : nb;
}

/* epi: the call adds a bias or applies a post after the product (pointwise tiles then fit in
 * cache for it). */
#define PW_MIN_COLS 1024
static conv_plan fwd_plan(const hg_conv_geom *g, size_t esize, bool epi)
{
    conv_plan pl;
    int64_t R = g->out[0] * g->out[1], O2 = g->out[2];
    int64_t rows = fit(esize, g->K * O2);
    int64_t rows_min = (MIN_COLS + O2 - 1) / O2;
    if (hg_conv_is_pointwise(g)) {
        /* No col. With an epilogue: the tile's output (and input) in about TILE_BYTES, so that
         * the bias and activation pass after the product finds it in cache; whole images
         * (MobileNetV2's 16 -> 96 at 112x112: 4.8 MB of output each) went to memory and back:
         * the model at batch 32, 2 threads, 3-5% slower (interleaved runs). Without one, whole
         * images (fewer, larger products). */
        rows = epi ? fit(esize, (g->K > g->Fg ? g->K : g->Fg) * O2) : R;
        /* at least PW_MIN_COLS columns: narrower products leave the GEMM's own wide kernel
         * (gemm.c, WIDE_N) for the BLAS, which is slow at these inner sizes (16..160) */
        if (rows * O2 < PW_MIN_COLS) rows = (PW_MIN_COLS + O2 - 1) / O2;
    }
    if (rows < rows_min) rows = rows_min;
    if (rows > R) rows = R;
    int64_t imgs = g->N * g->G;
    if (imgs > 0 && imgs < MIN_UNITS) { /* cut fewer images finer (none: an empty batch) */
        int64_t want = (MIN_UNITS + imgs - 1) / imgs, cap = (R + want - 1) / want;
        if (cap < rows_min) cap = rows_min;
        if (rows > cap) rows = cap;
    }
    pl.ntiles = (R + rows - 1) / rows;
    pl.units = imgs * pl.ntiles;
    /* Deep layers at small batch (few output positions, long K): too few units to keep the
     * threads busy; the GEMM of a whole image splits its filters instead. */
    pl.whole = pl.units < MIN_UNITS;
    if (pl.whole) {
        rows = R;
        pl.ntiles = 1;
        pl.units = imgs;
    }
    pl.rows = rows;
    pl.col_e = hg_conv_is_pointwise(g) ? 0 : g->K * rows * O2;
    pl.nb = pack_images(g, esize);
    if (pl.nb > 1) { /* enough units for the threads before images are packed */
        int64_t cap = g->N * g->G / PACK_UNITS;
        if (pl.nb > cap) pl.nb = cap < 1 ? 1 : cap;
    }
    if (pl.nb > 1) {
        pl.whole = false;
        pl.rows = R;
        pl.ntiles = 1;
        pl.units = g->G * ((g->N + pl.nb - 1) / pl.nb);
        /* col block, then output buffer */
        pl.col_e = (g->K + g->Fg) * pl.nb * hg_conv_pack_cols(g);
    }
    return pl;
}

/* Slots the forward runs in (the thread count, at most one per unit; 1 for small layers). */
static int64_t fwd_slots(const hg_conv_geom *g, const conv_plan *pl)
{
    if (pl->whole || (double)g->N * g->F * g->P * g->K < SERIAL_WORK) return 1;
    int64_t t = hg_get_num_threads();
    if (t < 1) t = 1;
    return t < pl->units ? t : pl->units;
}

/* Bytes of col buffers at the start of the forward's workspace (float16 appends its copies). */
static size_t col_bytes(const hg_conv_geom *g, size_t esize)
{
    if (is_depthwise(g)) return 0;
    conv_plan pl = fwd_plan(g, esize, false); /* pointwise: no col, whatever the tiles */
    return esize * (size_t)pl.col_e * (size_t)fwd_slots(g, &pl);
}

/* The workspace of the route the call takes without packed weights. */
static size_t conv_workspace_own(const hg_conv_geom *gp, const hg_meta *in)
{
    const hg_conv_geom g = *gp;
    if (is_winograd(&g, in[0].dtype)) {
        hg_wino_geom wg = wino_geom(&g);
        return hg_winograd_workspace(&wg, hg_get_num_threads());
    }
    if (is_direct(&g, in[0].dtype)) {
        hg_cdir_geom cg = cdir_geom(&g);
        return hg_conv_direct_workspace(&cg, hg_get_num_threads());
    }
    if (in[0].dtype != HG_DTYPE_F16) return col_bytes(&g, hg_dtype_size(in[0].dtype));
    /* float copies of data, weight, bias and output after the col buffers */
    return col_bytes(&g, sizeof(float)) +
           sizeof(float) * (size_t)(g.N * g.C * g.I + g.F * g.K + g.F + g.N * g.F * g.P);
}

/* The route's workspace, or the deep kernel's where a plan may give the call packed weights. */
static size_t conv_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (hg_conv_channel_last(a, CV_LAYOUT)) return 0; /* refused by the forward */
    hg_conv_geom g;
    geom_full(a, &in[0], &g);
    size_t own = conv_workspace_own(&g, in);
    if (is_deep(&g, in[0].dtype)) {
        hg_cdir_geom cg = cdir_geom(&g);
        size_t deep = hg_conv_deep_workspace(&cg);
        return deep > own ? deep : own;
    }
    return own;
}

/* Weights an inference plan keeps between calls (core/op.h; exec/fold.c, exec/plan.c): packed
 * for the deep direct kernel where it takes the layer (conv_deep.h). */
static size_t conv_prep_bytes(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (hg_conv_channel_last(a, CV_LAYOUT)) return 0;
    hg_conv_geom g;
    geom_full(a, &in[0], &g);
    if (!is_deep(&g, in[0].dtype)) return 0;
    hg_cdir_geom cg = cdir_geom(&g);
    return hg_conv_deep_packed_bytes(&cg);
}

static hg_status conv_prep(const hg_attrs *a, int nin, const hg_meta *in, const void *w, void *dst,
                           size_t bytes)
{
    size_t want = conv_prep_bytes(a, nin, in);
    if (!want || want != bytes)
        return hg_error(HG_ERR_INTERNAL,
                        "Convolution: no prepared weights of %zu bytes for this layer (it "
                        "wants %zu)",
                        bytes, want);
    hg_conv_geom g;
    geom_full(a, &in[0], &g);
    hg_cdir_geom cg = cdir_geom(&g);
    hg_conv_deep_pack_f32(&cg, w, dst);
    return HG_OK;
}

#define T float
#define NAME(x) x##_f32
#include "ops/conv_fwd_tmpl.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "ops/conv_fwd_tmpl.h"
#undef T
#undef NAME

static hg_status conv_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nout;
    HG_TRY(hg_conv_refuse_layout(op, a, CV_LAYOUT));
    hg_meta x = hg_meta_of(in[0]);
    hg_conv_geom g;
    geom_full(a, &x, &g);
    const void *bias = nin > 2 ? hg_data(in[2]) : NULL;
    if (ctx->prep && is_deep(&g, x.dtype)) { /* packed weights from the plan (conv_prep) */
        hg_cdir_geom cg = cdir_geom(&g);
        if (ctx->prep_bytes == hg_conv_deep_packed_bytes(&cg) &&
            ctx->workspace_bytes >= hg_conv_deep_workspace(&cg)) {
            hg_conv_deep_f32(&cg, hg_data(in[0]), ctx->prep, bias, hg_data(out[0]), &ctx->post,
                             ctx->workspace);
            return HG_OK;
        }
    }
    if (is_winograd(&g, x.dtype)) {
        hg_wino_geom wg = wino_geom(&g);
        hg_winograd_fwd_f32(&wg, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]), &ctx->post,
                            ctx->workspace, ctx->workspace_bytes);
    } else if (is_direct(&g, x.dtype)) {
        hg_cdir_geom cg = cdir_geom(&g);
        hg_conv_direct_f32(&cg, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]), &ctx->post,
                           ctx->workspace, ctx->workspace_bytes);
    } else if (x.dtype == HG_DTYPE_F32) {
        conv_f32(&g, ctx, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    } else if (x.dtype == HG_DTYPE_F64) {
        conv_f64(&g, ctx, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    } else {
        size_t cb = col_bytes(&g, sizeof(float));
        float *fx = (float *)((char *)ctx->workspace + cb), *fw = fx + g.N * g.C * g.I;
        float *fb = fw + g.F * g.K, *fy = fb + g.F;
        hg_exec_ctx sub = {ctx->is_train, cb ? ctx->workspace : NULL, cb, 0, ctx->post};
        hg_half_to_f32_n(hg_data(in[0]), fx, g.N * g.C * g.I);
        hg_half_to_f32_n(hg_data(in[1]), fw, g.F * g.K);
        if (bias) hg_half_to_f32_n(bias, fb, g.F);
        conv_f32(&g, &sub, fx, fw, bias ? fb : NULL, fy);
        hg_f32_to_half_n(fy, hg_data(out[0]), g.N * g.F * g.P);
    }
    return HG_OK;
}

/* ---- gradient ------------------------------------------------------------------------------ */

/* _backward_Convolution(ograd, data, weight) -> (data grad, weight grad[, bias grad]). Per image
 * and group, with col = im2col(x_g):
 *     dW_g += dy_g[Fg, P] . col^T[P, K]                      (one GEMM)
 *     dcol  = W_g^T[K, Fg] . dy_g[Fg, P];  dx_g = col2im(dcol)
 *     db[f] += sum_p dy[f, p]
 * run by the backward Deconvolution shares (conv_common.h, conv_bw_tmpl.h): images in slots,
 * one per thread, tile by tile; conv.c chooses the slots, tiles and packing (bw_plan).
 * grad_data / grad_weight = False skip that part (the first layer's data gradient is never
 * used) and leave zeros. */

static hg_status conv_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    return hg_conv_bw_infer(op, a, !a->v[CV_NO_BIAS].b, in, nout, out, conv_infer);
}

/* Image slots of the backward: one per thread (at most one per image; 1 for small layers). With
 * fewer images than threads the products split themselves over the pool instead. */
static int64_t num_slots(const hg_conv_geom *g)
{
    if (g->N < 2 || (double)g->N * (double)g->F * (double)g->P * (double)g->K < SERIAL_WORK)
        return 1;
    int64_t t = hg_get_num_threads();
    if (t < 1) t = 1;
    return t < g->N ? t : g->N;
}

/* Output rows per tile of the backward: a col block of about TILE_BYTES, as in the forward. */
static int64_t bw_rows(const hg_conv_geom *g, size_t esize)
{
    int64_t R = g->out[0] * g->out[1];
    if (hg_conv_is_pointwise(g)) return R;
    int64_t rows = fit(esize, g->K * g->out[2]);
    return rows < 1 ? 1 : (rows > R ? R : rows);
}

/* Images packed per block in the backward: as in the forward, at most N / MIN_UNITS so that the
 * slots get whole blocks. Deep layers (fewer than BW_MIN_COLS positions per image: ResNet's 7x7
 * and 14x14 stages at any batch) pack more: per image, the weight gradient's product has only
 * P (49, 196) as its inner size, so the BLAS streams the whole dW (9 MB in ResNet-18's last
 * stage) through memory at a few flops per element, once per image. A slot's images go in as
 * few blocks of at least BW_MIN_COLS columns as they fill, evenly. ResNet-18's 3x3 layers at
 * batch 16, forward + backward: 7x7 190 -> 106 ms, 14x14 117 -> 88 ms (2 threads, loaded
 * machine); 256 or 1024 columns, or 4x larger tiles, measured the same. */
static int64_t bw_pack(const hg_conv_geom *g, size_t esize)
{
    int64_t nb = pack_images(g, esize), cap = g->N / MIN_UNITS;
    nb = nb > cap ? (cap < 1 ? 1 : cap) : nb;
    int64_t S = hg_conv_pack_cols(g);
    if (S > 0 && S < BW_MIN_COLS && g->N > 1) {
        int64_t slots = num_slots(g), per = (g->N + slots - 1) / slots;
        int64_t want = (BW_MIN_COLS + S - 1) / S, q = (per + want - 1) / want;
        int64_t deep = (per + q - 1) / q;
        /* the block's col part at most BW_PACK_BYTES (a layer with a huge K packs fewer) */
        int64_t most = (int64_t)(BW_PACK_BYTES / esize) / (g->K > 0 ? g->K * S : 1);
        if (deep > most) deep = most;
        if (deep > nb) nb = deep;
    }
    return nb;
}

/* Elements of one slot's col buffer (packed: the col block, then the gathered dy block) and of
 * one slot's gradient partial sums. */
static int64_t bw_col_elems(const hg_conv_geom *g, size_t esize)
{
    int64_t nb = bw_pack(g, esize);
    if (nb > 1) return (g->K + g->Fg) * nb * hg_conv_pack_cols(g);
    return hg_conv_is_pointwise(g) ? 0 : g->K * bw_rows(g, esize) * g->out[2];
}

static hg_conv_bw_plan bw_plan(const hg_conv_geom *g, size_t esize)
{
    return (hg_conv_bw_plan){.nslots = num_slots(g),
                             .rows = bw_rows(g, esize),
                             .col_e = bw_col_elems(g, esize),
                             .nb = bw_pack(g, esize)};
}

/* Workspace elements of the backward (none for the depthwise kernel). */
static int64_t bw_slot_area(const hg_conv_geom *g, size_t esize, bool grad_w, bool bias)
{
    if (is_depthwise(g)) return 0;
    hg_conv_bw_plan pl = bw_plan(g, esize);
    return hg_conv_bw_area(g, &pl, grad_w, bias);
}

static size_t conv_bw_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (hg_conv_channel_last(a, CV_LAYOUT)) return 0; /* refused by the forward */
    hg_conv_geom g;
    geom_full(a, &in[1], &g);
    bool gd = a->v[CV_GRAD_DATA].b, gw = a->v[CV_GRAD_WEIGHT].b, bias = !a->v[CV_NO_BIAS].b;
    size_t es = in[1].dtype == HG_DTYPE_F16 ? sizeof(float) : hg_dtype_size(in[1].dtype);
    if (in[1].dtype == HG_DTYPE_F32) { /* the Winograd parts run one after the other */
        hg_wino_geom wg = wino_geom(&g);
        int64_t t = hg_get_num_threads();
        bool wd = gd && wino_dgrad(&g, in[1].dtype), ww = gw && wino_wgrad(&g, in[1].dtype);
        size_t most = 0, b;
        if (wd) most = hg_winograd_bwd_data_workspace(&wg, t);
        if (ww && (b = hg_winograd_bwd_weight_workspace(&wg, t)) > most) most = b;
        if ((gd && !wd) || (gw && !ww)) {
            b = es * (size_t)bw_slot_area(&g, es, gw && !ww, bias);
            if (b > most) most = b;
        }
        return most;
    }
    size_t area = (size_t)bw_slot_area(&g, es, gw, bias);
    if (in[1].dtype != HG_DTYPE_F16) return es * area;
    /* float copies of ograd, data, weight and of the three gradients after the slot area */
    return sizeof(float) *
           (area + (size_t)(g.N * g.F * g.P + 2 * g.N * g.C * g.I + 2 * g.F * g.K + g.F));
}

typedef struct {
    const hg_conv_geom *g;
    const float *dy;
    float *db;
} bias_job;

static void bias_range(void *ctx, int64_t f0, int64_t f1)
{
    const bias_job *j = ctx;
    const int64_t F = j->g->F, P = j->g->P;
    for (int64_t f = f0; f < f1; f++) {
        double acc = 0.0;
        for (int64_t n = 0; n < j->g->N; n++) {
            const float *r = j->dy + (n * F + f) * P;
            float part = 0.0f;
            for (int64_t i = 0; i < P; i++) part += r[i];
            acc += part;
        }
        j->db[f] = (float)acc;
    }
}

/* db[f] = sum over images and positions of dy (the Winograd gradients leave it alone). */
static void bias_sum_f32(const hg_conv_geom *g, const float *dy, float *db)
{
    bias_job j = {g, dy, db};
    hg_parallel_for(g->F, 1 + 65536 / (g->N * g->P + 1), bias_range, &j);
}

/* The backward of one float32 or float64 call: the depthwise kernel, or the shared backward of
 * conv_common.c on conv.c's plan. */
static void convbw(const hg_conv_geom *g, const hg_exec_ctx *ctx, hg_dtype dt, bool wino,
                   const void *dy, const void *x, const void *w, void *dx, void *dw, void *db)
{
    if (is_depthwise(g)) {
        const hg_dw_geom dg = dw_geom(g);
        if (dt == HG_DTYPE_F32) hg_depthwise_bwd_f32(&dg, dy, x, w, dx, dw, db);
        else hg_depthwise_bwd_f64(&dg, dy, x, w, dx, dw, db);
        return;
    }
    size_t es = dt == HG_DTYPE_F32 ? sizeof(float) : sizeof(double);
    if (wino) { /* float32 data (conv_bw_workspace sized the workspace for this path) */
        hg_wino_geom wg = wino_geom(g);
        bool wd = dx && wino_dgrad(g, dt), ww = dw && wino_wgrad(g, dt);
        if (wd) hg_winograd_bwd_data_f32(&wg, dy, w, dx, ctx->workspace, ctx->workspace_bytes);
        if (ww) hg_winograd_bwd_weight_f32(&wg, x, dy, dw, ctx->workspace, ctx->workspace_bytes);
        if (wd) dx = NULL;
        if (ww) dw = NULL;
        if (!dx && !dw) { /* nothing left for im2col but the bias */
            if (db) bias_sum_f32(g, dy, db);
            return;
        }
    }
    hg_conv_bw_plan pl = bw_plan(g, es);
    /* Never more slots than the workspace holds (the thread count could have changed). */
    if (es * (size_t)hg_conv_bw_area(g, &pl, dw != NULL, db != NULL) > ctx->workspace_bytes)
        pl.nslots = 1;
    if (dt == HG_DTYPE_F32) hg_conv_bw_f32(g, &pl, ctx->workspace, dy, x, w, dx, NULL, dw, db);
    else hg_conv_bw_f64(g, &pl, ctx->workspace, dy, x, w, dx, NULL, dw, db);
}

static hg_status conv_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    HG_TRY(hg_conv_refuse_layout(op, a, CV_LAYOUT));
    hg_meta x = hg_meta_of(in[1]);
    hg_conv_geom g;
    geom_full(a, &x, &g);
    bool gd = a->v[CV_GRAD_DATA].b, gw = a->v[CV_GRAD_WEIGHT].b, bias = nout > 2;
    if (!gd) memset(hg_data(out[0]), 0, hg_tensor_nbytes(out[0]));
    if (!gw) memset(hg_data(out[1]), 0, hg_tensor_nbytes(out[1]));
    void *dx = gd ? hg_data(out[0]) : NULL, *dw = gw ? hg_data(out[1]) : NULL;
    void *db = bias ? hg_data(out[2]) : NULL;
    if (x.dtype != HG_DTYPE_F16) {
        convbw(&g, ctx, x.dtype, x.dtype == HG_DTYPE_F32, hg_data(in[0]), hg_data(in[1]),
               hg_data(in[2]), dx, dw, db);
        return HG_OK;
    }
    size_t area = sizeof(float) * (size_t)bw_slot_area(&g, sizeof(float), gw, bias);
    int64_t ny = g.N * g.F * g.P, nx = g.N * g.C * g.I, nw = g.F * g.K;
    float *fdy = (float *)((char *)ctx->workspace + area), *fx = fdy + ny, *fw = fx + nx;
    float *fdx = fw + nw, *fdw = fdx + nx, *fdb = fdw + nw;
    hg_exec_ctx sub = {ctx->is_train, area ? ctx->workspace : NULL, area};
    hg_half_to_f32_n(hg_data(in[0]), fdy, ny);
    hg_half_to_f32_n(hg_data(in[1]), fx, nx);
    hg_half_to_f32_n(hg_data(in[2]), fw, nw);
    /* float16: im2col on the float copies (the workspace is sized for it, not for Winograd) */
    convbw(&g, &sub, HG_DTYPE_F32, false, fdy, fx, fw, dx ? fdx : NULL, dw ? fdw : NULL,
           db ? fdb : NULL);
    if (dx) hg_f32_to_half_n(fdx, dx, nx);
    if (dw) hg_f32_to_half_n(fdw, dw, nw);
    if (db) hg_f32_to_half_n(fdb, db, g.F);
    return HG_OK;
}

/* Gradient rule: one _backward_Convolution node, told which of data and weight are wanted. */
static hg_status conv_grad(hg_grad_ctx *g)
{
    bool bias = !hg_g_attrs(g)->v[CV_NO_BIAS].b;
    hg_sentry out[3];
    hg_g_op_fwd_attrs(g, "_backward_Convolution",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)),
                      HG_KV("grad_data", hg_g_needs(g, 0) ? "True" : "False", "grad_weight",
                            hg_g_needs(g, 1) ? "True" : "False"),
                      bias ? 3 : 2, out);
    for (int k = 0; k < (bias ? 3 : 2); k++)
        if (hg_g_needs(g, k)) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

/* ---- registry ----------------------------------------------------------------------------- */

const hg_op_def hg_ops_conv[] = {
    {.name = "Convolution",
     .doc = "N-D convolution (1-D, 2-D, 3-D) over channel-first data "
            "(N, C, *spatial) with weight (num_filter, C/num_group, *kernel) and optional bias "
            "(num_filter,); out = floor((x + 2p - d(k-1) - 1)/s) + 1 per spatial dim.",
     .input_names = HG_NAMES("data", "weight", "bias"),
     .attrs = k_conv_attrs,
     .num_attrs = CV_NATTRS,
     .num_inputs = 3,
     .get_num_inputs = conv_num_inputs,
     .infer = conv_infer,
     .forward = conv_forward,
     .workspace = conv_workspace,
     .prep_bytes = conv_prep_bytes,
     .prep = conv_prep,
     .grad = conv_grad},
    {.name = "_backward_Convolution",
     .doc = "Gradients of Convolution: (data, weight[, bias]) "
            "from (ograd, data, weight); grad_data / grad_weight = False skip a part (zeros).",
     .input_names = HG_NAMES("ograd", "data", "weight"),
     .attrs = k_conv_attrs,
     .num_attrs = CV_BW_NATTRS,
     .num_inputs = 3,
     .num_outputs = 3,
     .get_num_outputs = conv_num_inputs,
     .infer = conv_bw_infer,
     .forward = conv_bw_forward,
     .workspace = conv_bw_workspace},
    {0},
};
