/* SSD's anchor ops, as MXNet 1.9.1's contrib/multibox_*: MultiBoxPrior (anchor boxes for every
 * position of a feature map) and MultiBoxTarget (training targets: anchor-to-ground-truth
 * matching, hard negative mining, box regression targets). Both are legacy operators in MXNet,
 * whose type rule takes float32 only; the kernels here compute in float32 as MXNet's do, so the
 * matching's comparisons see the same numbers. Neither op has a gradient (MXNet's are
 * zeros). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/detect.h"
#include "ops/ops_util.h"

#define MAX_FLOATS HG_MBP_MAX_FLOATS

static bool known(const hg_meta *m) { return m->ndim >= 0; }

/* MXNet's legacy operators default to float32 inputs only. */
static hg_status check_f32(const hg_op_def *op, const char *what, hg_dtype dt)
{
    if (dt == HG_DTYPE_F32) return HG_OK;
    return hg_error(HG_ERR_TYPE, "%s: %s must be float32 (as in MXNet), got %s", op->name, what,
                    hg_dtype_name(dt));
}

/* ---- MultiBoxPrior ----------------------------------------------------------------------- */

static const hg_attr_spec k_mbp_attrs[] = {
    [MBP_SIZES] = {"sizes", HG_ATTR_STRING, 0, "(1,)", "anchor sizes (fractions of the image)",
                   NULL},
    [MBP_RATIOS] = {"ratios", HG_ATTR_STRING, 0, "(1,)", "anchor aspect ratios", NULL},
    [MBP_CLIP] = {"clip", HG_ATTR_BOOL, 0, "False", "clip the boxes to [0, 1]", NULL},
    [MBP_STEPS] = {"steps", HG_ATTR_STRING, 0, "(-1, -1)",
                   "(step_y, step_x) between anchor centres, -1 for 1 / feature size", NULL},
    [MBP_OFFSETS] = {"offsets", HG_ATTR_STRING, 0, "(0.5, 0.5)",
                     "(y, x) offsets of the centres within a cell, in [0, 1]", NULL},
};
_Static_assert(HG_COUNT(k_mbp_attrs) == MBP_NATTRS, "k_mbp_attrs must match its enum");

typedef hg_mbp_params mbp_params;

hg_status hg_mbp_parse(const hg_op_def *op, const hg_attrs *a, mbp_params *p)
{
    int nst, nof;
    if ((p->ns = hg_ops_parse_floats(op, "sizes", a->v[MBP_SIZES].s, p->sizes, MAX_FLOATS, false)) <
            0 ||
        (p->nr = hg_ops_parse_floats(op, "ratios", a->v[MBP_RATIOS].s, p->ratios, MAX_FLOATS,
                                     false)) < 0 ||
        (nst = hg_ops_parse_floats(op, "steps", a->v[MBP_STEPS].s, p->steps, MAX_FLOATS, false)) <
            0 ||
        (nof = hg_ops_parse_floats(op, "offsets", a->v[MBP_OFFSETS].s, p->offsets, MAX_FLOATS,
                                   false)) < 0)
        return HG_ERR_VALUE;
    if (p->ns < 1 || p->nr < 1)
        return hg_error(HG_ERR_VALUE, "%s: sizes and ratios need at least one value each",
                        op->name);
    if (nst != 2 || nof != 2)
        return hg_error(HG_ERR_VALUE, "%s: steps and offsets take 2 values (y, x), got %d and %d",
                        op->name, nst, nof);
    if (p->steps[0] * p->steps[1] < 0)
        return hg_error(HG_ERR_VALUE, "%s: give both steps (y, x) or neither, got %s", op->name,
                        a->v[MBP_STEPS].s);
    for (int i = 0; i < 2; i++)
        if (!(p->offsets[i] >= 0 && p->offsets[i] <= 1))
            return hg_error(HG_ERR_VALUE, "%s: offsets must lie in [0, 1], got %s", op->name,
                            a->v[MBP_OFFSETS].s);
    return HG_OK;
}

static hg_status mbp_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    mbp_params p;
    hg_status st = hg_mbp_parse(op, a, &p);
    if (st) return st;
    if ((st = check_f32(op, "data", in[0].dtype))) return st;
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    if (in[0].ndim < 4 || in[0].shape[2] <= 0 || in[0].shape[3] <= 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D (batch, channel, height, width) with height and "
                        "width > 0, got %s",
                        op->name, hg_shape_str(s, in[0].ndim, in[0].shape));
    out[0].ndim = 3;
    out[0].shape[0] = 1;
    out[0].shape[1] = in[0].shape[2] * in[0].shape[3] * (p.ns + p.nr - 1);
    out[0].shape[2] = 4;
    return HG_OK;
}

static void put_box(double *o, float cx, float cy, float w, float h)
{
    o[0] = cx - w, o[1] = cy - h, o[2] = cx + w, o[3] = cy + h;
}

static hg_status mbp_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    mbp_params p;
    hg_status st = hg_mbp_parse(op, a, &p);
    if (st) return st;
    int h = (int)in[0]->shape[2], w = (int)in[0]->shape[3];
    float sy = p.steps[0], sx = p.steps[1];
    if (sy <= 0 || sx <= 0) sy = 1.f / (float)h, sx = 1.f / (float)w;
    double *o = hg_c_alloc(out[0]->size);
    if (!o) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    int64_t k = 0;
    for (int r = 0; r < h; r++) {
        float cy = ((float)r + p.offsets[0]) * sy;
        for (int c = 0; c < w; c++) {
            float cx = ((float)c + p.offsets[1]) * sx;
            float ratio = sqrtf(p.ratios[0]);
            for (int i = 0; i < p.ns; i++, k += 4) /* the first ratio with every size */
                put_box(o + k, cx, cy, p.sizes[i] * (float)h / (float)w * ratio / 2,
                        p.sizes[i] / ratio / 2);
            for (int j = 1; j < p.nr; j++, k += 4) { /* the other ratios with the first size */
                ratio = sqrtf(p.ratios[j]);
                put_box(o + k, cx, cy, p.sizes[0] * (float)h / (float)w * ratio / 2,
                        p.sizes[0] / ratio / 2);
            }
        }
    }
    if (a->v[MBP_CLIP].b)
        for (int64_t i = 0; i < out[0]->size; i++) o[i] = o[i] < 0 ? 0 : o[i] > 1 ? 1 : o[i];
    hg_c_store(out[0], o);
    hg_c_free(o, out[0]->size);
    return HG_OK;
}

/* ---- MultiBoxTarget ---------------------------------------------------------------------- */

static const hg_attr_spec k_mbt_attrs[] = {
    [MBT_OVERLAP] = {"overlap_threshold", HG_ATTR_FLOAT, 0, "0.5",
                     "IoU above which an anchor is a positive match", NULL},
    [MBT_IGNORE] = {"ignore_label", HG_ATTR_FLOAT, 0, "-1", "class target of ignored anchors",
                    NULL},
    [MBT_NEG_RATIO] = {"negative_mining_ratio", HG_ATTR_FLOAT, 0, "-1",
                       "most negatives per positive, -1: every unmatched anchor is negative", NULL},
    [MBT_NEG_THRESH] = {"negative_mining_thresh", HG_ATTR_FLOAT, 0, "0.5",
                        "anchors with IoU below this may be mined as negatives", NULL},
    [MBT_MIN_NEG] = {"minimum_negative_samples", HG_ATTR_INT, 0, "0",
                     "accepted for MXNet compatibility; MXNet's kernel does not use it", NULL},
    [MBT_VARIANCES] = {"variances", HG_ATTR_STRING, 0, "(0.1, 0.1, 0.2, 0.2)",
                       "divisors of the 4 box regression targets", NULL},
};
_Static_assert(HG_COUNT(k_mbt_attrs) == MBT_NATTRS, "k_mbt_attrs must match its enum");

hg_status hg_mbt_variances(const hg_op_def *op, const hg_attrs *a, float *v)
{
    float tmp[MAX_FLOATS];
    int n = hg_ops_parse_floats(op, "variances", a->v[MBT_VARIANCES].s, tmp, MAX_FLOATS, false);
    if (n < 0) return HG_ERR_VALUE;
    if (n != 4) return hg_error(HG_ERR_VALUE, "%s: variances takes 4 values, got %d", op->name, n);
    memcpy(v, tmp, sizeof(float) * 4);
    return HG_OK;
}

static hg_status mbt_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    float var[4];
    hg_status st = hg_mbt_variances(op, a, var);
    if (st) return st;
    for (int i = 0; i < 3; i++)
        if ((i == 0 || known(&in[i])) && (st = check_f32(op, op->input_names[i], in[i].dtype)))
            return st;
    for (int i = 0; i < 3; i++) out[i].dtype = in[0].dtype;
    if (!known(&in[0]) || !known(&in[1]) || !known(&in[2])) return HG_OK;
    const hg_meta *an = &in[0], *lb = &in[1], *cp = &in[2];
    if (an->ndim != 3 || an->shape[0] != 1 || an->shape[1] <= 0 || an->shape[2] != 4)
        return hg_error(HG_ERR_VALUE, "%s: anchor must have shape (1, N > 0, 4), got %s", op->name,
                        hg_shape_str(s1, an->ndim, an->shape));
    if (lb->ndim != 3 || lb->shape[1] <= 0 || lb->shape[2] < 5)
        return hg_error(HG_ERR_VALUE,
                        "%s: label must have shape (batch, num_labels > 0, width >= 5), got %s",
                        op->name, hg_shape_str(s1, lb->ndim, lb->shape));
    if (cp->ndim != 3 || cp->shape[0] != lb->shape[0] || cp->shape[2] != an->shape[1] ||
        cp->shape[1] < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: cls_pred must have shape (%lld, num_classes, %lld) for anchor %s, "
                        "got %s",
                        op->name, (long long)lb->shape[0], (long long)an->shape[1],
                        hg_shape_str(s2, an->ndim, an->shape),
                        hg_shape_str(s1, cp->ndim, cp->shape));
    if (a->v[MBT_NEG_RATIO].f > 0 && !((float)a->v[MBT_NEG_THRESH].f > 0))
        return hg_error(HG_ERR_VALUE, "%s: negative_mining_thresh must be > 0 for mining",
                        op->name);
    int64_t b = lb->shape[0], n = an->shape[1];
    for (int i = 0; i < 3; i++) {
        out[i].ndim = 2;
        out[i].shape[0] = b;
        out[i].shape[1] = i < 2 ? n * 4 : n;
    }
    return HG_OK;
}

/* One batch's work: its inputs (as doubles), outputs and scratch. */
typedef struct {
    const hg_op_def *op;
    const hg_attrs *a;
    const double *anchor, *label, *pred; /* anchors (n, 4); this batch's labels and scores */
    int64_t n, nl, lw, nc;
    double *loc, *mask, *cls; /* this batch's outputs */
    float var[4];
    float *iou;         /* n * nl */
    float *best;        /* n: best IoU of each anchor (-1: not computed) */
    int64_t *match;     /* n: ground truth of that IoU */
    signed char *flag;  /* n: 1 positive, 0 negative, -1 ignored */
    bool *gt_done;      /* nl */
    struct neg {
        float key;
        int64_t j;
    } *neg; /* n */
} mbt_work;

static int by_key_desc(const void *pa, const void *pb)
{
    const struct neg *a = pa, *b = pb;
    if (a->key > b->key) return -1;
    if (a->key < b->key) return 1;
    return a->j < b->j ? -1 : a->j > b->j; /* std::stable_sort's order for ties */
}

static float iou_f(const double *an, const double *gt)
{
    float al = (float)an[0], at = (float)an[1], ar = (float)an[2], ab = (float)an[3];
    float gl = (float)gt[0], gtp = (float)gt[1], gr = (float)gt[2], gb = (float)gt[3];
    float iw = (ar < gr ? ar : gr) - (al > gl ? al : gl);
    float ih = (ab < gb ? ab : gb) - (at > gtp ? at : gtp);
    float inter = (iw > 0 ? iw : 0.f) * (ih > 0 ? ih : 0.f);
    float uni = (ar - al) * (ab - at) + (gr - gl) * (gb - gtp) - inter;
    return uni == 0 ? 0.f : inter / uni; /* MXNet's safe_divide: no area, no overlap */
}

/* Softmax probability of class 0 (background) of anchor j; scores are (classes, anchors). */
static float bg_prob(const double *pred, int64_t j, int64_t n, int64_t nc)
{
    float mx = (float)pred[j];
    for (int64_t k = 1; k < nc; k++)
        if ((float)pred[j + n * k] > mx) mx = (float)pred[j + n * k];
    float sum = 0;
    for (int64_t k = 0; k < nc; k++) sum += expf((float)pred[j + n * k] - mx);
    return expf((float)pred[j] - mx) / sum;
}

/* The best ground truth of anchor j by IoU (first of equals), into best/match. */
static void best_gt(mbt_work *w, int64_t j, int64_t nv)
{
    int64_t g = -1;
    float m = -1.0f;
    for (int64_t k = 0; k < nv; k++)
        if (w->iou[j * nv + k] > m) g = k, m = w->iou[j * nv + k];
    if (g != -1) w->best[j] = m, w->match[j] = g;
}

static void loc_target(const double *an, const double *gt, const float *v, double *dst)
{
    float al = (float)an[0], at = (float)an[1], ar = (float)an[2], ab = (float)an[3];
    float aw = ar - al, ah = ab - at, ax = (al + ar) * 0.5f, ay = (at + ab) * 0.5f;
    float gl = (float)gt[0], gtp = (float)gt[1], gr = (float)gt[2], gb = (float)gt[3];
    float gw = gr - gl, gh = gb - gtp, gx = (gl + gr) * 0.5f, gy = (gtp + gb) * 0.5f;
    dst[0] = (gx - ax) / aw / v[0];
    dst[1] = (gy - ay) / ah / v[1];
    dst[2] = logf(gw / aw) / v[2];
    dst[3] = logf(gh / ah) / v[3];
}

/* Hard negative mining: the unmatched anchors of lowest background probability. */
static hg_status mine_negatives(mbt_work *w, int64_t nv, int64_t npos)
{
    int64_t n = w->n;
    int64_t nneg = (int64_t)(int)((float)npos * (float)w->a->v[MBT_NEG_RATIO].f);
    if (nneg > n - npos) nneg = n - npos;
    if (nneg <= 0) return HG_OK;
    float thr = (float)w->a->v[MBT_NEG_THRESH].f;
    int64_t cnt = 0;
    for (int64_t j = 0; j < n; j++) {
        if (w->flag[j] == 1) continue;
        if (w->best[j] < 0) best_gt(w, j, nv);
        if (w->best[j] < thr && w->flag[j] == -1) {
            float prob = bg_prob(w->pred, j, n, w->nc);
            w->neg[cnt++] = (struct neg){-prob, j};
        }
    }
    if (cnt < nneg)
        return hg_error(HG_ERR_VALUE,
                        "%s: %lld negative samples wanted, only %lld anchors qualify "
                        "(lower negative_mining_ratio or raise negative_mining_thresh)",
                        w->op->name, (long long)nneg, (long long)cnt);
    qsort(w->neg, (size_t)cnt, sizeof(struct neg), by_key_desc);
    for (int64_t i = 0; i < nneg; i++) w->flag[w->neg[i].j] = 0;
    return HG_OK;
}

static hg_status mbt_batch(mbt_work *w)
{
    int64_t n = w->n, nv = 0, lw = w->lw;
    const double *lab = w->label;
    for (; nv < w->nl; nv++) {
        const double *row = lab + nv * lw;
        if ((float)row[0] != -1.0f) continue;
        for (int k = 1; k < 5; k++)
            if ((float)row[k] != -1.0f)
                return hg_error(HG_ERR_VALUE,
                                "%s: a padding label row (class -1) must be -1 throughout, "
                                "got %g at column %d",
                                w->op->name, row[k], k);
        break;
    }
    if (nv == 0) return HG_OK;
    for (int64_t j = 0; j < n; j++) {
        for (int64_t k = 0; k < nv; k++)
            w->iou[j * nv + k] = iou_f(w->anchor + 4 * j, lab + k * lw + 1);
        w->best[j] = -1, w->match[j] = -1, w->flag[j] = -1;
    }
    for (int64_t k = 0; k < nv; k++) w->gt_done[k] = false;
    int64_t npos = 0, left = nv;
    while (left > 0) { /* each ground truth takes its best free anchor, best pair first */
        int64_t ba = -1, bg = -1;
        float mo = 1e-6f;
        for (int64_t j = 0; j < n; j++) {
            if (w->flag[j] == 1) continue;
            for (int64_t k = 0; k < nv; k++)
                if (!w->gt_done[k] && w->iou[j * nv + k] > mo)
                    ba = j, bg = k, mo = w->iou[j * nv + k];
        }
        if (ba == -1) break;
        w->best[ba] = mo, w->match[ba] = bg, w->flag[ba] = 1;
        w->gt_done[bg] = true;
        npos++, left--;
    }
    float thr = (float)w->a->v[MBT_OVERLAP].f;
    if (thr > 0)
        for (int64_t j = 0; j < n; j++) {
            if (w->flag[j] == 1) continue;
            best_gt(w, j, nv);
            if (w->match[j] != -1 && w->best[j] > thr) w->flag[j] = 1, npos++;
        }
    if ((float)w->a->v[MBT_NEG_RATIO].f > 0) {
        hg_status st = mine_negatives(w, nv, npos);
        if (st) return st;
    } else {
        for (int64_t j = 0; j < n; j++)
            if (w->flag[j] != 1) w->flag[j] = 0;
    }
    for (int64_t j = 0; j < n; j++) {
        if (w->flag[j] == 1) {
            const double *gt = lab + lw * w->match[j];
            w->cls[j] = (double)(float)(gt[0] + 1);
            for (int k = 0; k < 4; k++) w->mask[4 * j + k] = 1;
            loc_target(w->anchor + 4 * j, gt + 1, w->var, w->loc + 4 * j);
        } else if (w->flag[j] == 0) {
            w->cls[j] = 0;
        }
    }
    return HG_OK;
}

static hg_status mbt_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t n = in[0]->shape[1], nb = in[1]->shape[0], nl = in[1]->shape[1];
    int64_t lw = in[1]->shape[2], nc = in[2]->shape[1];
    mbt_work w = {.op = op, .a = a, .n = n, .nl = nl, .lw = lw, .nc = nc};
    hg_status st = hg_mbt_variances(op, a, w.var);
    if (st) return st;
    double *an = hg_c_load(in[0]), *lb = hg_c_load(in[1]), *pr = hg_c_load(in[2]);
    double *loc = hg_c_alloc(out[0]->size), *mask = hg_c_alloc(out[1]->size);
    double *cls = hg_c_alloc(out[2]->size);
    size_t scratch = sizeof(float) * (size_t)(n * nl + n) + sizeof(int64_t) * (size_t)n +
                     (size_t)n + (size_t)nl + sizeof(*w.neg) * (size_t)n + 64;
    char *mem = hg_alloc(scratch);
    if (!an || !lb || !pr || !loc || !mask || !cls || !mem) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    /* carve the scratch, widest members first so each stays aligned */
    w.neg = (void *)mem;
    w.match = (int64_t *)(w.neg + n);
    w.iou = (float *)(w.match + n);
    w.best = w.iou + n * nl;
    w.flag = (signed char *)(w.best + n);
    w.gt_done = (bool *)(w.flag + n);
    w.anchor = an;
    for (int64_t i = 0; i < out[0]->size; i++) loc[i] = 0, mask[i] = 0;
    double ignore = (double)(float)a->v[MBT_IGNORE].f;
    for (int64_t i = 0; i < out[2]->size; i++) cls[i] = ignore;
    for (int64_t b = 0; b < nb && !st; b++) {
        w.label = lb + b * nl * lw;
        w.pred = pr + b * nc * n;
        w.loc = loc + b * n * 4, w.mask = mask + b * n * 4, w.cls = cls + b * n;
        st = mbt_batch(&w);
    }
    if (!st) {
        hg_c_store(out[0], loc);
        hg_c_store(out[1], mask);
        hg_c_store(out[2], cls);
    }
done:
    hg_c_free(an, in[0]->size);
    hg_c_free(lb, in[1]->size);
    hg_c_free(pr, in[2]->size);
    hg_c_free(loc, out[0]->size);
    hg_c_free(mask, out[1]->size);
    hg_c_free(cls, out[2]->size);
    if (mem) hg_free(mem, scratch);
    return st;
}

const hg_op_def hg_ops_contrib_multibox[] = {
    {.name = "_contrib_MultiBoxPrior",
     .doc = "SSD anchor boxes (1, height * width * (len(sizes) + len(ratios) - 1), 4) in corner "
            "format for the feature map's positions (no gradient: MXNet's is zero)",
     .input_names = HG_NAMES("data"),
     .attrs = k_mbp_attrs,
     .num_attrs = MBP_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = mbp_infer,
     .forward = mbp_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_MultiBoxTarget",
     .doc = "SSD training targets: box regression targets, their mask and class targets of "
            "the anchors against padded labels (batch, num_labels, [class, xmin, ymin, xmax, "
            "ymax, ...])",
     .input_names = HG_NAMES("anchor", "label", "cls_pred"),
     .output_names = HG_NAMES("loc_target", "loc_mask", "cls_target"),
     .attrs = k_mbt_attrs,
     .num_attrs = MBT_NATTRS,
     .num_inputs = 3,
     .num_outputs = 3,
     .infer = mbt_infer,
     .forward = mbt_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
