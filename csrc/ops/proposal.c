/* Region proposals of a Faster R-CNN RPN, as MXNet 1.9.1's contrib Proposal (one image) and
 * MultiProposal (a batch): anchors of every (ratio, scale) at every feature-map cell, moved by
 * the predicted deltas and clipped to the image, small boxes and cells in the padding marked
 * with score -1, the pre_nms_top_n best kept (stable order), greedy NMS, and the first
 * post_nms_top_n survivors written out (rows past the survivors repeat them cyclically). The
 * arithmetic is float32 with MXNet's float / double mix, so boxes and the order of near-equal
 * scores come out as MXNet's. No gradient (MXNet's backward writes zeros). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/ops_util.h"

#define MAX_ANCHOR_PARAMS 32

enum {
    PR_PRE,
    PR_POST,
    PR_THRESH,
    PR_MIN_SIZE,
    PR_SCALES,
    PR_RATIOS,
    PR_STRIDE,
    PR_OUTPUT_SCORE,
    PR_IOU_LOSS,
    PR_NATTRS
};
static const hg_attr_spec k_pr_attrs[] = {
    [PR_PRE] = {"rpn_pre_nms_top_n", HG_ATTR_INT, 0, "6000",
                "boxes kept (best scores) before NMS; <= 0: all", NULL},
    [PR_POST] = {"rpn_post_nms_top_n", HG_ATTR_INT, 0, "300", "boxes output per image after NMS",
                 NULL},
    [PR_THRESH] = {"threshold", HG_ATTR_FLOAT, 0, "0.7",
                   "NMS overlap (IoU) above which a box is suppressed", NULL},
    [PR_MIN_SIZE] = {"rpn_min_size", HG_ATTR_INT, 0, "16",
                     "boxes narrower or lower than this times the image scale get score -1", NULL},
    [PR_SCALES] = {"scales", HG_ATTR_STRING, 0, "(4, 8, 16, 32)", "anchor scales", NULL},
    [PR_RATIOS] = {"ratios", HG_ATTR_STRING, 0, "(0.5, 1, 2)", "anchor aspect ratios", NULL},
    [PR_STRIDE] = {"feature_stride", HG_ATTR_INT, 0, "16", "image pixels per feature-map cell",
                   NULL},
    [PR_OUTPUT_SCORE] = {"output_score", HG_ATTR_BOOL, 0, "False", "also output each box's score",
                         NULL},
    [PR_IOU_LOSS] = {"iou_loss", HG_ATTR_BOOL, 0, "False",
                     "deltas move the corners (IoU loss) instead of centre and size", NULL},
};
_Static_assert(HG_COUNT(k_pr_attrs) == PR_NATTRS, "k_pr_attrs must match its enum");

static bool is_multi(const hg_op_def *op) { return op->name[9] == 'M'; } /* _contrib_M... */
static bool known(const hg_meta *m) { return m->ndim >= 0; }
static int pr_visible(const hg_attrs *a) { return a->v[PR_OUTPUT_SCORE].b ? 2 : 1; }

static hg_status pr_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    float sc[MAX_ANCHOR_PARAMS], ra[MAX_ANCHOR_PARAMS];
    int ns = hg_ops_parse_floats(op, op->attrs[PR_SCALES].name, a->v[PR_SCALES].s, sc,
                                 MAX_ANCHOR_PARAMS, true);
    if (ns < 0) return HG_ERR_VALUE;
    int nr = hg_ops_parse_floats(op, op->attrs[PR_RATIOS].name, a->v[PR_RATIOS].s, ra,
                                 MAX_ANCHOR_PARAMS, true);
    if (nr < 0) return HG_ERR_VALUE;
    if (a->v[PR_POST].i < 1 || a->v[PR_STRIDE].i < 1)
        return hg_error(HG_ERR_VALUE, "%s: rpn_post_nms_top_n and feature_stride must be >= 1",
                        op->name);
    for (int i = 0; i < 3; i++)
        if (known(&in[i]) && in[i].dtype != HG_DTYPE_F32)
            return hg_error(HG_ERR_TYPE, "%s: %s must be float32 (as in MXNet), got %s", op->name,
                            op->input_names[i], hg_dtype_name(in[i].dtype));
    out[0].dtype = out[1].dtype = HG_DTYPE_F32;
    if (!known(&in[0])) return HG_OK;
    if (in[0].ndim != 4 || in[0].shape[1] != 2 * (int64_t)ns * nr || in[0].shape[2] < 1 ||
        in[0].shape[3] < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: cls_prob must be (batch, 2 * num_anchors, height, width) with "
                        "num_anchors = %d scales x %d ratios and a non-empty map, got %s",
                        op->name, ns, nr, hg_shape_str(s1, in[0].ndim, in[0].shape));
    int64_t n = in[0].shape[0];
    if (!is_multi(op) && n != 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: one image only (batch %lld): use MultiProposal for a batch", op->name,
                        (long long)n);
    int64_t bb[4] = {n, 2 * in[0].shape[1], in[0].shape[2], in[0].shape[3]}, info[2] = {n, 3};
    hg_meta b0 = in[1], i0 = in[2];
    if (!hg_meta_merge(&in[1], HG_DTYPE_F32, 4, bb))
        return hg_error(HG_ERR_VALUE, "%s: bbox_pred has shape %s, expected %s", op->name,
                        hg_shape_str(s1, b0.ndim, b0.shape), hg_shape_str(s2, 4, bb));
    if (!hg_meta_merge(&in[2], HG_DTYPE_F32, 2, info))
        return hg_error(HG_ERR_VALUE,
                        "%s: im_info has shape %s, expected (%lld, 3): height, width, scale",
                        op->name, hg_shape_str(s1, i0.ndim, i0.shape), (long long)n);
    int64_t rows = n * a->v[PR_POST].i;
    out[0].ndim = out[1].ndim = 2;
    out[0].shape[0] = out[1].shape[0] = rows;
    out[0].shape[1] = 5, out[1].shape[1] = 1;
    return HG_OK;
}

/* Anchors around the first cell, (ratio, scale) pairs in MXNet's order: (num, 4). */
static void make_anchors(int stride, const float *ra, int nr, const float *sc, int ns, float *anc)
{
    float base[4] = {0.0f, 0.0f, (float)(stride - 1.0), (float)(stride - 1.0)};
    int k = 0;
    for (int j = 0; j < nr; j++)
        for (int s = 0; s < ns; s++, k++) {
            float w = base[2] - base[0] + 1.0f, h = base[3] - base[1] + 1.0f;
            float xc = (float)(base[0] + 0.5 * (w - 1.0f)),
                  yc = (float)(base[1] + 0.5 * (h - 1.0f));
            float size_ratios = floorf(w * h / ra[j]);
            float nw = floorf(sqrtf(size_ratios) + 0.5f) * sc[s];
            float nh = floorf((nw / sc[s] * ra[j]) + 0.5f) * sc[s];
            anc[4 * k + 0] = xc - 0.5f * (nw - 1.0f);
            anc[4 * k + 1] = yc - 0.5f * (nh - 1.0f);
            anc[4 * k + 2] = xc + 0.5f * (nw - 1.0f);
            anc[4 * k + 3] = yc + 0.5f * (nh - 1.0f);
        }
}

typedef struct {
    const float *score;
    int64_t idx;
} pr_key;

/* Descending score, ties in index order: std::stable_sort's result. */
static int key_cmp(const void *pa, const void *pb)
{
    const pr_key *a = pa, *b = pb;
    float sa = *a->score, sb = *b->score;
    if (sa > sb) return -1;
    if (sa < sb) return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

typedef struct {
    int64_t A, H, W, pre, post;
    int stride;
    float thresh, min_size;
    bool iou;
} pr_geom;

/* One image: fg scores (A, H, W), deltas (4A, H, W), info (3) -> rows post of out / score. */
static void one_image(const pr_geom *g, const float *anc, const float *fg, const float *dl,
                      const float *info, float bidx, float *props, pr_key *keys, float *ord,
                      float *area, char *supp, int64_t *keep, float *out, float *osc)
{
    int64_t A = g->A, H = g->H, W = g->W, count = A * H * W;
    float imh = info[0], imw = info[1];
    int real_h = (int)(info[0] / (float)g->stride), real_w = (int)(info[1] / (float)g->stride);
    for (int64_t a = 0; a < A; a++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++) {
                float *p = props + 5 * (h * (W * A) + w * A + a);
                float x1 = anc[4 * a] + (float)(w * g->stride);
                float y1 = anc[4 * a + 1] + (float)(h * g->stride);
                float x2 = anc[4 * a + 2] + (float)(w * g->stride);
                float y2 = anc[4 * a + 3] + (float)(h * g->stride);
                float d0 = dl[((a * 4 + 0) * H + h) * W + w],
                      d1 = dl[((a * 4 + 1) * H + h) * W + w];
                float d2 = dl[((a * 4 + 2) * H + h) * W + w],
                      d3 = dl[((a * 4 + 3) * H + h) * W + w];
                float px1, py1, px2, py2;
                if (g->iou) {
                    px1 = x1 + d0, py1 = y1 + d1, px2 = x2 + d2, py2 = y2 + d3;
                } else {
                    float width = (float)(x2 - x1 + 1.0), height = (float)(y2 - y1 + 1.0);
                    float cx = (float)(x1 + 0.5 * (width - 1.0));
                    float cy = (float)(y1 + 0.5 * (height - 1.0));
                    float pcx = d0 * width + cx, pcy = d1 * height + cy;
                    float pw = expf(d2) * width, ph = expf(d3) * height;
                    px1 = (float)(pcx - 0.5 * (pw - 1.0));
                    py1 = (float)(pcy - 0.5 * (ph - 1.0));
                    px2 = (float)(pcx + 0.5 * (pw - 1.0));
                    py2 = (float)(pcy + 0.5 * (ph - 1.0));
                }
                p[0] = fmaxf(fminf(px1, imw - 1.0f), 0.0f);
                p[1] = fmaxf(fminf(py1, imh - 1.0f), 0.0f);
                p[2] = fmaxf(fminf(px2, imw - 1.0f), 0.0f);
                p[3] = fmaxf(fminf(py2, imh - 1.0f), 0.0f);
                p[4] = fg[(a * H + h) * W + w];
                if (h >= real_h || w >= real_w) p[4] = -1.0f;
            }
    for (int64_t i = 0; i < count; i++) {
        float *p = props + 5 * i;
        float iw = p[2] - p[0] + 1.0f, ih = p[3] - p[1] + 1.0f;
        if (iw < g->min_size || ih < g->min_size) {
            p[0] -= g->min_size / 2, p[1] -= g->min_size / 2;
            p[2] += g->min_size / 2, p[3] += g->min_size / 2;
            p[4] = -1.0f;
        }
        keys[i] = (pr_key){props + 5 * i + 4, i};
    }
    qsort(keys, (size_t)count, sizeof(pr_key), key_cmp);
    for (int64_t i = 0; i < g->pre; i++) memcpy(ord + 5 * i, props + 5 * keys[i].idx, 20);
    for (int64_t i = 0; i < g->pre; i++) {
        const float *d = ord + 5 * i;
        area[i] = (d[2] - d[0] + 1) * (d[3] - d[1] + 1);
        supp[i] = 0;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < g->pre && n < g->post; i++) {
        if (supp[i]) continue;
        keep[n++] = i;
        const float *di = ord + 5 * i;
        for (int64_t j = i + 1; j < g->pre; j++) {
            if (supp[j]) continue;
            const float *dj = ord + 5 * j;
            float xx1 = fmaxf(di[0], dj[0]), yy1 = fmaxf(di[1], dj[1]);
            float xx2 = fminf(di[2], dj[2]), yy2 = fminf(di[3], dj[3]);
            float w = fmaxf(0.0f, xx2 - xx1 + 1.0f), h = fmaxf(0.0f, yy2 - yy1 + 1.0f);
            float inter = w * h, ovr = inter / (area[i] + area[j] - inter);
            if (ovr > g->thresh) supp[j] = 1;
        }
    }
    /* n >= 1: the best box is never suppressed */
    int64_t rows = (int64_t)g->post;
    for (int64_t i = 0; i < rows; i++) {
        const float *d = ord + 5 * keep[i % n];
        out[5 * i] = bidx;
        for (int j = 0; j < 4; j++) out[5 * i + 1 + j] = d[j];
        osc[i] = d[4];
    }
}

static hg_status pr_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    float sc[MAX_ANCHOR_PARAMS], ra[MAX_ANCHOR_PARAMS],
        anc[4 * MAX_ANCHOR_PARAMS * MAX_ANCHOR_PARAMS];
    int ns = hg_ops_parse_floats(op, op->attrs[PR_SCALES].name, a->v[PR_SCALES].s, sc,
                                 MAX_ANCHOR_PARAMS, true);
    int nr = hg_ops_parse_floats(op, op->attrs[PR_RATIOS].name, a->v[PR_RATIOS].s, ra,
                                 MAX_ANCHOR_PARAMS, true);
    if (ns < 0 || nr < 0) return HG_ERR_VALUE;
    pr_geom g = {.A = (int64_t)ns * nr,
                 .H = in[0]->shape[2],
                 .W = in[0]->shape[3],
                 .stride = (int)a->v[PR_STRIDE].i,
                 .thresh = (float)a->v[PR_THRESH].f,
                 .iou = a->v[PR_IOU_LOSS].b};
    int64_t count = g.A * g.H * g.W, nimg = in[0]->shape[0];
    g.pre = a->v[PR_PRE].i > 0 ? a->v[PR_PRE].i : count;
    g.pre = hg_min64(g.pre, count);
    g.post = a->v[PR_POST].i;
    make_anchors(g.stride, ra, nr, sc, ns, anc);
    size_t bytes = sizeof(float) * (size_t)(5 * count + 5 * g.pre + g.pre) +
                   sizeof(pr_key) * (size_t)count + sizeof(int64_t) * (size_t)g.pre +
                   (size_t)g.pre + 64;
    char *buf = hg_alloc(bytes);
    if (!buf) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    pr_key *keys = (pr_key *)buf;
    int64_t *keep = (int64_t *)(keys + count);
    float *props = (float *)(keep + g.pre), *ord = props + 5 * count, *area = ord + 5 * g.pre;
    char *supp = (char *)(area + g.pre);
    const float *cls = HG_DATA(in[0], float), *dl = HG_DATA(in[1], float);
    const float *info = HG_DATA(in[2], float);
    hg_status st = HG_OK;
    for (int64_t b = 0; b < nimg; b++) {
        const float *ib = info + 3 * b;
        int rh = (int)(ib[0] / (float)g.stride), rw = (int)(ib[1] / (float)g.stride);
        if (!(rh <= g.H && rw <= g.W)) {
            st = hg_error(HG_ERR_VALUE,
                          "%s: image %lld of size (%g, %g) needs a %d x %d feature map, got "
                          "%lld x %lld",
                          op->name, (long long)b, ib[0], ib[1], rh, rw, (long long)g.H,
                          (long long)g.W);
            break;
        }
        g.min_size = (float)a->v[PR_MIN_SIZE].i * ib[2];
        one_image(&g, anc, cls + (2 * b + 1) * count, dl + b * 4 * count, ib, (float)b, props, keys,
                  ord, area, supp, keep, HG_DATA(out[0], float) + 5 * b * g.post,
                  HG_DATA(out[1], float) + b * g.post);
    }
    hg_free(buf, bytes);
    return st;
}

const hg_op_def hg_ops_proposal[] = {
    {.name = "_contrib_Proposal",
     .doc = "region proposals of one image from RPN scores (1, 2A, H, W), box deltas (1, 4A, H, "
            "W) and im_info (1, 3): rois (post_nms_top_n, 5) = [0, x1, y1, x2, y2] (+ scores)",
     .input_names = HG_NAMES("cls_prob", "bbox_pred", "im_info"),
     .output_names = HG_NAMES("output", "score"),
     .attrs = k_pr_attrs,
     .num_attrs = PR_NATTRS,
     .num_inputs = 3,
     .num_outputs = 2,
     .get_num_visible_outputs = pr_visible,
     .infer = pr_infer,
     .forward = pr_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_MultiProposal",
     .doc = "Proposal over a batch: rois (batch * post_nms_top_n, 5) = [image index, x1, y1, x2, "
            "y2] (+ scores)",
     .input_names = HG_NAMES("cls_prob", "bbox_pred", "im_info"),
     .output_names = HG_NAMES("output", "score"),
     .attrs = k_pr_attrs,
     .num_attrs = PR_NATTRS,
     .num_inputs = 3,
     .num_outputs = 2,
     .get_num_visible_outputs = pr_visible,
     .infer = pr_infer,
     .forward = pr_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
