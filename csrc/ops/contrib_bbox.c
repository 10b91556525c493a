/* Bounding-box contrib ops, as MXNet 1.9.1's src/operator/contrib/bounding_box: box_iou
 * (pairwise IoU), box_nms (greedy non-maximum suppression, with a hidden record output that
 * its gradient routes through), bipartite_matching (greedy matching by sorted score),
 * box_encode and box_decode (SSD/Faster R-CNN box regression targets). Kernels compute in
 * double (contrib_util.h); the orders and tie rules (stable sorts) follow MXNet's, so outputs
 * agree element for element. Only box_nms has a gradient; MXNet's rules for the others are
 * zeros. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/detect.h"
#include "ops/ops_util.h"

static const char *const k_formats[] = {"corner", "center", NULL};

static bool known(const hg_meta *m) { return m->ndim >= 0; }

/* Overlap of two boxes along one axis: a[0], a[2] are (left, right) for corner boxes and
 * (centre, width) for centre boxes. */
static double intersect1(const double *a, const double *b, int fmt)
{
    double l, r;
    if (fmt == FMT_CORNER) {
        l = a[0] > b[0] ? a[0] : b[0];
        r = a[2] < b[2] ? a[2] : b[2];
    } else {
        double al = a[0] - a[2] / 2, ar = a[0] + a[2] / 2;
        double bl = b[0] - b[2] / 2, br = b[0] + b[2] / 2;
        l = bl > al ? bl : al;
        r = br < ar ? br : ar;
    }
    double w = r - l;
    return w > 0 ? w : 0;
}

static double box_area(const double *b, int fmt)
{
    double w = fmt == FMT_CORNER ? b[2] - b[0] : b[2];
    double h = fmt == FMT_CORNER ? b[3] - b[1] : b[3];
    return w < 0 || h < 0 ? 0 : w * h;
}

/* ---- box_iou ----------------------------------------------------------------------------- */

static const hg_attr_spec k_iou_attrs[] = {
    [IOU_FORMAT] = {"format", HG_ATTR_ENUM, 0, "corner",
                    "box encoding: corner [xmin, ymin, xmax, ymax] or center [x, y, w, h]",
                    k_formats},
};
_Static_assert(HG_COUNT(k_iou_attrs) == IOU_NATTRS, "k_iou_attrs must match its enum");

static hg_status check_boxes(const hg_op_def *op, const char *what, const hg_meta *m)
{
    char s[HG_SHAPE_STR];
    if (m->ndim < 2 || m->shape[m->ndim - 1] != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: %s must have ndim >= 2 and a last dimension of 4, got %s", op->name,
                        what, hg_shape_str(s, m->ndim, m->shape));
    return HG_OK;
}

static hg_status iou_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    hg_status st = hg_c_check_float(op, "lhs", in[0].dtype);
    if (st) return st;
    if (known(&in[1]) && in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: lhs and rhs dtypes differ (%s, %s)", op->name,
                        hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    out[0].dtype = in[0].dtype;
    if (!known(&in[0]) || !known(&in[1])) return HG_OK;
    if ((st = check_boxes(op, "lhs", &in[0])) || (st = check_boxes(op, "rhs", &in[1]))) return st;
    int nd = in[0].ndim + in[1].ndim - 2;
    if (nd > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: the output would have %d dimensions (at most %d)",
                        op->name, nd, HG_MAX_NDIM);
    out[0].ndim = nd;
    memcpy(out[0].shape, in[0].shape, sizeof(int64_t) * (size_t)(in[0].ndim - 1));
    memcpy(out[0].shape + in[0].ndim - 1, in[1].shape, sizeof(int64_t) * (size_t)(in[1].ndim - 1));
    return HG_OK;
}

static hg_status iou_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    int fmt = (int)a->v[IOU_FORMAT].i;
    int64_t nl = in[0]->size / 4, nr = in[1]->size / 4;
    double *l = hg_c_load(in[0]), *r = hg_c_load(in[1]), *o = hg_c_alloc(out[0]->size);
    hg_status st = HG_OK;
    if (!l || !r || !o) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < nl; i++)
        for (int64_t j = 0; j < nr; j++) {
            const double *p = l + 4 * i, *q = r + 4 * j;
            double inter = intersect1(p, q, fmt) * intersect1(p + 1, q + 1, fmt);
            o[i * nr + j] = inter <= 0 ? 0 : inter / (box_area(p, fmt) + box_area(q, fmt) - inter);
        }
    hg_c_store(out[0], o);
done:
    hg_c_free(l, in[0]->size);
    hg_c_free(r, in[1]->size);
    hg_c_free(o, out[0]->size);
    return st;
}

/* ---- box_nms ----------------------------------------------------------------------------- */

static const hg_attr_spec k_nms_attrs[] = {
    [NMS_OVERLAP] = {"overlap_thresh", HG_ATTR_FLOAT, 0, "0.5",
                     "IoU above which the box with the smaller score is suppressed", NULL},
    [NMS_VALID] = {"valid_thresh", HG_ATTR_FLOAT, 0, "0",
                   "boxes whose score is not above this are dropped first", NULL},
    [NMS_TOPK] = {"topk", HG_ATTR_INT, 0, "-1",
                  "apply nms to the topk boxes of highest score only, -1 for all", NULL},
    [NMS_COORD] = {"coord_start", HG_ATTR_INT, 0, "2",
                   "index of the first of the 4 consecutive coordinates", NULL},
    [NMS_SCORE] = {"score_index", HG_ATTR_INT, 0, "1", "index of the score", NULL},
    [NMS_ID] = {"id_index", HG_ATTR_INT, 0, "-1", "index of the class id, -1 for none", NULL},
    [NMS_BG] = {"background_id", HG_ATTR_INT, 0, "-1",
                "class id of the background, whose boxes are dropped", NULL},
    [NMS_FORCE] = {"force_suppress", HG_ATTR_BOOL, 0, "False",
                   "suppress across classes (otherwise only boxes of the same class)", NULL},
    [NMS_IN_FMT] = {"in_format", HG_ATTR_ENUM, 0, "corner", "input box encoding", k_formats},
    [NMS_OUT_FMT] = {"out_format", HG_ATTR_ENUM, 0, "corner", "output box encoding", k_formats},
};
_Static_assert(HG_COUNT(k_nms_attrs) == NMS_NATTRS, "k_nms_attrs must match its enum");

static hg_status nms_check_width(const hg_op_def *op, const hg_attrs *a, int64_t w)
{
    int64_t cs = a->v[NMS_COORD].i, ce = cs + 3, si = a->v[NMS_SCORE].i, id = a->v[NMS_ID].i;
    int64_t expected = id >= 0 ? 6 : 5;
    if (w < expected)
        return hg_error(HG_ERR_VALUE,
                        "%s: the last dimension must have at least %lld elements (score, "
                        "4 coordinates%s), got %lld",
                        op->name, (long long)expected, id >= 0 ? ", class id" : "", (long long)w);
    if (si < 0 || si >= w)
        return hg_error(HG_ERR_VALUE, "%s: score_index %lld out of range [0, %lld)", op->name,
                        (long long)si, (long long)w);
    if (si >= cs && si <= ce)
        return hg_error(HG_ERR_VALUE,
                        "%s: score_index %lld conflicts with the coordinates [%lld, %lld]",
                        op->name, (long long)si, (long long)cs, (long long)ce);
    if (cs < 0 || ce >= w)
        return hg_error(HG_ERR_VALUE, "%s: coordinates [%lld, %lld] out of range [0, %lld)",
                        op->name, (long long)cs, (long long)ce, (long long)w);
    if (id >= 0) {
        if (id >= w)
            return hg_error(HG_ERR_VALUE, "%s: id_index %lld out of range [0, %lld)", op->name,
                            (long long)id, (long long)w);
        if (id >= cs && id <= ce)
            return hg_error(HG_ERR_VALUE,
                            "%s: id_index %lld conflicts with the coordinates [%lld, %lld]",
                            op->name, (long long)id, (long long)cs, (long long)ce);
        if (id == si)
            return hg_error(HG_ERR_VALUE, "%s: id_index %lld conflicts with score_index", op->name,
                            (long long)id);
    }
    return HG_OK;
}

static hg_status nms_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    char s[HG_SHAPE_STR];
    hg_status st = hg_c_check_float(op, "data", in[0].dtype);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    if (nout > 1) out[1].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    if (in[0].ndim < 2)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must have ndim >= 2 (..., num_box, box_width), got %s", op->name,
                        hg_shape_str(s, in[0].ndim, in[0].shape));
    if ((st = nms_check_width(op, a, in[0].shape[in[0].ndim - 1]))) return st;
    out[0] = in[0];
    if (nout > 1) {
        out[1] = in[0];
        out[1].shape[in[0].ndim - 1] = 1;
    }
    return HG_OK;
}

typedef struct {
    double score;
    int64_t idx;
} nms_key;

static int by_score_desc(const void *pa, const void *pb)
{
    const nms_key *a = pa, *b = pb;
    if (a->score > b->score) return -1;
    if (a->score < b->score) return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx; /* stable: MXNet's std::stable_sort */
}

static void corner_center(double *b, int to)
{
    if (b[0] < 0) return; /* MXNet skips rows whose first coordinate is negative (-1 padding) */
    double p = b[0], q = b[1], r = b[2], t = b[3];
    if (to == FMT_CENTER) {
        b[0] = (p + r) / 2, b[1] = (q + t) / 2, b[2] = r - p, b[3] = t - q;
    } else {
        b[0] = p - r / 2, b[1] = q - t / 2, b[2] = p + r / 2, b[3] = q + t / 2;
    }
}

/* One batch of NMS over n boxes of width w at x (global indices base..base+n): writes the kept
 * rows to o and their global indices to rec. cand/area: scratch of n. */
static void nms_batch(const hg_attrs *a, const double *x, int64_t base, int64_t n, int64_t w,
                      int64_t topk, nms_key *cand, double *area, double *o, double *rec)
{
    int64_t cs = a->v[NMS_COORD].i, si = a->v[NMS_SCORE].i, id = a->v[NMS_ID].i;
    int fmt = (int)a->v[NMS_IN_FMT].i;
    double valid = (double)(float)a->v[NMS_VALID].f, thr = (double)(float)a->v[NMS_OVERLAP].f;
    bool force = a->v[NMS_FORCE].b;
    int64_t nv = 0;
    for (int64_t i = 0; i < n; i++) {
        const double *row = x + (base + i) * w;
        if (row[si] > valid && (id < 0 || row[id] != (double)a->v[NMS_BG].i))
            cand[nv++] = (nms_key){row[si], base + i};
    }
    qsort(cand, (size_t)nv, sizeof(nms_key), by_score_desc);
    int64_t k = nv < topk ? nv : topk;
    for (int64_t j = 0; j < k; j++) area[j] = box_area(x + cand[j].idx * w + cs, fmt);
    for (int64_t r = 0; r < k; r++) {
        if (cand[r].idx < 0) continue;
        const double *rb = x + cand[r].idx * w;
        for (int64_t p = r + 1; p < k; p++) {
            if (cand[p].idx < 0) continue;
            const double *pb = x + cand[p].idx * w;
            if (!force && id >= 0 && (int64_t)rb[id] != (int64_t)pb[id]) continue;
            double inter = intersect1(rb + cs, pb + cs, fmt) *
                           intersect1(rb + cs + 1, pb + cs + 1, fmt);
            if (inter / (area[r] + area[p] - inter) > thr) cand[p].idx = -1;
        }
    }
    int64_t count = 0;
    for (int64_t j = 0; j < k; j++) {
        if (cand[j].idx < 0) continue;
        memcpy(o + (base + count) * w, x + cand[j].idx * w, sizeof(double) * (size_t)w);
        rec[base + count] = (double)cand[j].idx;
        count++;
    }
}

static hg_status nms_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *t = in[0];
    int64_t w = t->shape[t->ndim - 1], n = t->shape[t->ndim - 2];
    int64_t total = t->size / w, nb = n > 0 ? total / n : 0; /* infer: w >= 5 */
    int64_t topk = a->v[NMS_TOPK].i < 0 ? n : hg_min64(n, a->v[NMS_TOPK].i);
    double *x = hg_c_load(t), *o = hg_c_alloc(t->size), *rec = hg_c_alloc(total);
    double *area = hg_c_alloc(n);
    nms_key *cand = hg_alloc(sizeof(nms_key) * (size_t)(n > 0 ? n : 1));
    hg_status st = HG_OK;
    if (!x || !o || !rec || !area || !cand) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    if (topk < 1) { /* MXNet: the input unchanged and the identity record */
        memcpy(o, x, sizeof(double) * (size_t)t->size);
        for (int64_t i = 0; i < total; i++) rec[i] = (double)i;
    } else {
        for (int64_t i = 0; i < t->size; i++) o[i] = -1;
        for (int64_t i = 0; i < total; i++) rec[i] = -1;
        for (int64_t b = 0; b < nb; b++) nms_batch(a, x, b * n, n, w, topk, cand, area, o, rec);
        int fi = (int)a->v[NMS_IN_FMT].i, fo = (int)a->v[NMS_OUT_FMT].i;
        if (fi != fo)
            for (int64_t i = 0; i < total; i++) corner_center(o + i * w + a->v[NMS_COORD].i, fo);
    }
    hg_c_store(out[0], o);
    if (nout > 1) hg_c_store(out[1], rec);
done:
    hg_c_free(x, t->size);
    hg_c_free(o, t->size);
    hg_c_free(rec, total);
    hg_c_free(area, n);
    if (cand) hg_free(cand, sizeof(nms_key) * (size_t)(n > 0 ? n : 1));
    return st;
}

/* The gradient flows back to the rows each output row was copied from (the record). */
static hg_status nms_grad(hg_grad_ctx *g)
{
    hg_g_set(
        g, 0,
        hg_g_op(g, "_backward_contrib_box_nms", HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 1)), NULL));
    return hg_g_status(g);
}

static hg_status nms_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    hg_status st = hg_c_check_float(op, "ograd", in[0].dtype);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    int64_t w = in[0].ndim >= 2 ? in[0].shape[in[0].ndim - 1] : 0;
    int64_t rows = w ? hg_shape_size(in[0].ndim, in[0].shape) / w : 0;
    if (in[0].ndim < 2 ||
        (known(&in[1]) && (in[1].ndim != in[0].ndim || in[1].shape[in[1].ndim - 1] != 1 ||
                           hg_shape_size(in[1].ndim, in[1].shape) != rows)))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s and record %s do not match", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape));
    out[0] = in[0];
    return HG_OK;
}

static hg_status nms_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *dy = in[0];
    int64_t w = dy->shape[dy->ndim - 1], rows = in[1]->size;
    double *g = hg_c_load(dy), *rec = hg_c_load(in[1]), *dx = hg_c_alloc(dy->size);
    hg_status st = HG_OK;
    if (!g || !rec || !dx) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < dy->size; i++) dx[i] = 0;
    for (int64_t i = 0; i < rows; i++) {
        int64_t src = (int64_t)rec[i];
        if (src < 0 || src >= rows) continue; /* suppressed row, or a record not from box_nms */
        memcpy(dx + src * w, g + i * w, sizeof(double) * (size_t)w);
    }
    hg_c_store(out[0], dx);
done:
    hg_c_free(g, dy->size);
    hg_c_free(rec, rows);
    hg_c_free(dx, dy->size);
    return st;
}

/* ---- bipartite_matching ------------------------------------------------------------------ */

static const hg_attr_spec k_bm_attrs[] = {
    [BM_ASCEND] = {"is_ascend", HG_ATTR_BOOL, 0, "False",
                   "match the lowest scores first (then threshold is an upper bound)", NULL},
    [BM_THRESH] = {"threshold", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL,
                   "scores not above (is_ascend: not below) this end the matching", NULL},
    [BM_TOPK] = {"topk", HG_ATTR_INT, 0, "-1", "limit of matches, -1 for none", NULL},
};
_Static_assert(HG_COUNT(k_bm_attrs) == BM_NATTRS, "k_bm_attrs must match its enum");

static hg_status bm_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    hg_status st = hg_c_check_float(op, "data", in[0].dtype);
    if (st) return st;
    out[0].dtype = out[1].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    if (in[0].ndim < 2)
        return hg_error(HG_ERR_VALUE, "%s: the score matrix must have ndim >= 2, got %s", op->name,
                        hg_shape_str(s, in[0].ndim, in[0].shape));
    out[0] = out[1] = in[0];
    out[0].ndim = out[1].ndim = in[0].ndim - 1;
    out[1].shape[in[0].ndim - 2] = in[0].shape[in[0].ndim - 1];
    return HG_OK;
}

static int by_score_asc(const void *pa, const void *pb)
{
    const nms_key *a = pa, *b = pb;
    if (a->score < b->score) return -1;
    if (a->score > b->score) return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static hg_status bm_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *t = in[0];
    int64_t nr = t->shape[t->ndim - 2], nc = t->shape[t->ndim - 1], m = nr * nc;
    int64_t nb = m ? t->size / m : 0;
    bool asc = a->v[BM_ASCEND].b;
    double thr = (double)(float)a->v[BM_THRESH].f;
    int64_t topk = a->v[BM_TOPK].i;
    double *x = hg_c_load(t), *rm = hg_c_alloc(out[0]->size), *cm = hg_c_alloc(out[1]->size);
    nms_key *keys = hg_alloc(sizeof(nms_key) * (size_t)(m > 0 ? m : 1));
    hg_status st = HG_OK;
    if (!x || !rm || !cm || !keys) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < out[0]->size; i++) rm[i] = -1;
    for (int64_t i = 0; i < out[1]->size; i++) cm[i] = -1;
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t j = 0; j < m; j++) keys[j] = (nms_key){x[b * m + j], j};
        qsort(keys, (size_t)m, sizeof(nms_key), asc ? by_score_asc : by_score_desc);
        double *rmk = rm + b * nr, *cmk = cm + b * nc;
        int64_t count = 0;
        for (int64_t j = 0; j < m; j++) {
            int64_t r = keys[j].idx / nc, c = keys[j].idx % nc;
            if (rmk[r] != -1 || cmk[c] != -1) continue;
            double sc = keys[j].score;
            if (!((!asc && sc > thr) || (asc && sc < thr))) break;
            rmk[r] = (double)c;
            cmk[c] = (double)r;
            /* MXNet's loop checks after counting, so topk allows topk + 1 matches */
            if (topk > 0 && ++count > topk) break;
        }
    }
    hg_c_store(out[0], rm);
    hg_c_store(out[1], cm);
done:
    hg_c_free(x, t->size);
    hg_c_free(rm, out[0]->size);
    hg_c_free(cm, out[1]->size);
    if (keys) hg_free(keys, sizeof(nms_key) * (size_t)(m > 0 ? m : 1));
    return st;
}

/* ---- box_encode / box_decode ------------------------------------------------------------- */

static hg_status same_dtypes(const hg_op_def *op, int nin, const hg_meta *in)
{
    hg_status st = hg_c_check_float(op, op->input_names[0], in[0].dtype);
    if (st) return st;
    for (int i = 1; i < nin; i++)
        if (known(&in[i]) && in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, %s has %s (they must match)",
                            op->name, op->input_names[i], hg_dtype_name(in[i].dtype),
                            op->input_names[0], hg_dtype_name(in[0].dtype));
    return HG_OK;
}

static hg_status enc_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)a;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    hg_status st = same_dtypes(op, nin, in);
    if (st) return st;
    out[0].dtype = out[1].dtype = in[0].dtype;
    for (int i = 4; i < 6; i++)
        if (!hg_meta_merge(&in[i], in[0].dtype, 1, (int64_t[]){4}))
            return hg_error(HG_ERR_VALUE, "%s: %s must have shape (4,), got %s", op->name,
                            op->input_names[i], hg_shape_str(s1, in[i].ndim, in[i].shape));
    for (int i = 0; i < 4; i++)
        if (!known(&in[i])) return HG_OK;
    const hg_meta *sm = &in[0], *mt = &in[1], *an = &in[2], *rf = &in[3];
    if (an->ndim != 3 || an->shape[2] != 4)
        return hg_error(HG_ERR_VALUE, "%s: anchors must have shape (B, N, 4), got %s", op->name,
                        hg_shape_str(s1, an->ndim, an->shape));
    if (rf->ndim != 3 || rf->shape[2] != 4 || rf->shape[0] != an->shape[0])
        return hg_error(HG_ERR_VALUE, "%s: refs must have shape (%lld, M, 4), got %s", op->name,
                        (long long)an->shape[0], hg_shape_str(s1, rf->ndim, rf->shape));
    for (int i = 0; i < 2; i++) {
        const hg_meta *m = i ? mt : sm;
        if (m->ndim != 2 || m->shape[0] != an->shape[0] || m->shape[1] != an->shape[1])
            return hg_error(HG_ERR_VALUE, "%s: %s must have shape (B, N) of anchors %s, got %s",
                            op->name, op->input_names[i], hg_shape_str(s2, an->ndim, an->shape),
                            hg_shape_str(s1, m->ndim, m->shape));
    }
    out[0] = out[1] = *an;
    return HG_OK;
}

static hg_status enc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nout;
    double *v[6] = {0};
    int64_t nb = in[2]->shape[0], n = in[2]->shape[1], m = in[3]->shape[1];
    double *tg = hg_c_alloc(out[0]->size), *mk = hg_c_alloc(out[1]->size);
    hg_status st = HG_OK;
    for (int i = 0; i < nin; i++) v[i] = hg_c_load(in[i]);
    for (int i = 0; i < nin; i++)
        if (!v[i]) st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    if (!tg || !mk) st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    if (st) goto done;
    const double *smp = v[0], *mat = v[1], *anc = v[2], *ref = v[3], *mean = v[4], *std = v[5];
    for (int64_t i = 0; i < nb * n; i++) {
        double *o = tg + 4 * i, *k = mk + 4 * i;
        bool valid = smp[i] > 0.5;
        for (int j = 0; j < 4; j++) k[j] = valid, o[j] = 0;
        if (!valid) continue;
        int64_t match = (int64_t)mat[i];
        if (match < 0 || match >= m) {
            st = hg_error(HG_ERR_INDEX,
                          "%s: matches value %lld out of range [0, %lld) for a "
                          "positive sample",
                          op->name, (long long)match, (long long)m);
            goto done;
        }
        const double *r = ref + ((i / n) * m + match) * 4, *an = anc + 4 * i;
        double rw = r[2] - r[0], rh = r[3] - r[1], rx = r[0] + rw * 0.5, ry = r[1] + rh * 0.5;
        double aw = an[2] - an[0], ah = an[3] - an[1], ax = an[0] + aw * 0.5, ay = an[1] + ah * 0.5;
        o[0] = ((rx - ax) / aw - mean[0]) / std[0];
        o[1] = ((ry - ay) / ah - mean[1]) / std[1];
        o[2] = (log(rw / aw) - mean[2]) / std[2];
        o[3] = (log(rh / ah) - mean[3]) / std[3];
    }
    hg_c_store(out[0], tg);
    hg_c_store(out[1], mk);
done:
    for (int i = 0; i < nin; i++) hg_c_free(v[i], in[i]->size);
    hg_c_free(tg, out[0]->size);
    hg_c_free(mk, out[1]->size);
    return st;
}

static const hg_attr_spec k_dec_attrs[] = {
    [DEC_STD0] = {"std0", HG_ATTR_FLOAT, 0, "1", "multiplies the 1st encoded value", NULL},
    [DEC_STD1] = {"std1", HG_ATTR_FLOAT, 0, "1", "multiplies the 2nd encoded value", NULL},
    [DEC_STD2] = {"std2", HG_ATTR_FLOAT, 0, "1", "multiplies the 3rd encoded value", NULL},
    [DEC_STD3] = {"std3", HG_ATTR_FLOAT, 0, "1", "multiplies the 4th encoded value", NULL},
    [DEC_CLIP] = {"clip", HG_ATTR_FLOAT, 0, "-1",
                  "if > 0, the log-size offsets are clipped to this value", NULL},
    [DEC_FORMAT] = {"format", HG_ATTR_ENUM, 0, "center", "anchor encoding", k_formats},
};
_Static_assert(HG_COUNT(k_dec_attrs) == DEC_NATTRS, "k_dec_attrs must match its enum");

static hg_status dec_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)a;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    hg_status st = same_dtypes(op, nin, in);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    if (!known(&in[0]) || !known(&in[1])) return HG_OK;
    const hg_meta *d = &in[0], *an = &in[1];
    if (d->ndim != 3 || d->shape[2] != 4)
        return hg_error(HG_ERR_VALUE, "%s: data must have shape (B, N, 4), got %s", op->name,
                        hg_shape_str(s1, d->ndim, d->shape));
    if (an->ndim < 3 || an->shape[an->ndim - 1] != 4 ||
        hg_shape_size(an->ndim, an->shape) != d->shape[1] * 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: anchors must have shape (1, %lld, 4) for data %s, got %s", op->name,
                        (long long)d->shape[1], hg_shape_str(s2, d->ndim, d->shape),
                        hg_shape_str(s1, an->ndim, an->shape));
    out[0] = *d;
    return HG_OK;
}

static hg_status dec_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t n = in[0]->shape[1], rows = in[0]->size / 4;
    double *x = hg_c_load(in[0]), *an = hg_c_load(in[1]), *o = hg_c_alloc(out[0]->size);
    hg_status st = HG_OK;
    if (!x || !an || !o) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    double sd[4], clip = (double)(float)a->v[DEC_CLIP].f;
    for (int j = 0; j < 4; j++) sd[j] = (double)(float)a->v[DEC_STD0 + j].f;
    bool corner = a->v[DEC_FORMAT].i == FMT_CORNER;
    for (int64_t i = 0; i < rows; i++) {
        const double *p = x + 4 * i, *q = an + 4 * (i % n);
        double ax = q[0], ay = q[1], aw = q[2], ah = q[3];
        if (corner) {
            aw -= ax, ah -= ay;
            ax += aw * 0.5, ay += ah * 0.5;
        }
        double ox = p[0] * sd[0] * aw + ax, oy = p[1] * sd[1] * ah + ay;
        double dw = p[2] * sd[2], dh = p[3] * sd[3];
        if (clip > 0) {
            dw = dw < clip ? dw : clip;
            dh = dh < clip ? dh : clip;
        }
        double ow = exp(dw) * aw * 0.5, oh = exp(dh) * ah * 0.5;
        double *r = o + 4 * i;
        r[0] = ox - ow, r[1] = oy - oh, r[2] = ox + ow, r[3] = oy + oh;
    }
    hg_c_store(out[0], o);
done:
    hg_c_free(x, in[0]->size);
    hg_c_free(an, in[1]->size);
    hg_c_free(o, out[0]->size);
    return st;
}

const hg_op_def hg_ops_contrib_bbox[] = {
    {.name = "_contrib_box_iou",
     .doc = "intersection over union of every box of lhs with every box of rhs; output shape "
            "lhs.shape[:-1] + rhs.shape[:-1] (no gradient: MXNet's is zero)",
     .input_names = HG_NAMES("lhs", "rhs"),
     .attrs = k_iou_attrs,
     .num_attrs = IOU_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = iou_infer,
     .forward = iou_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_box_nms",
     .aliases = HG_NAMES("_contrib_box_non_maximum_suppression"),
     .doc = "greedy non-maximum suppression per batch: kept boxes first, by descending score, "
            "then rows of -1",
     .input_names = HG_NAMES("data"),
     .output_names = HG_NAMES("output", "record"),
     .attrs = k_nms_attrs,
     .num_attrs = NMS_NATTRS,
     .num_inputs = 1,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .infer = nms_infer,
     .forward = nms_forward,
     .grad = nms_grad},
    {.name = "_backward_contrib_box_nms",
     .doc = "box_nms's gradient: each output row's gradient goes back to the input row it was "
            "copied from (record), the rest get zero",
     .input_names = HG_NAMES("ograd", "record"),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = nms_bw_infer,
     .forward = nms_bw_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_bipartite_matching",
     .doc = "greedy bipartite matching of a (..., rows, cols) score matrix by sorted score: "
            "the column matched to each row and the row matched to each column (-1: none)",
     .input_names = HG_NAMES("data"),
     .attrs = k_bm_attrs,
     .num_attrs = BM_NATTRS,
     .num_inputs = 1,
     .num_outputs = 2,
     .infer = bm_infer,
     .forward = bm_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_box_encode",
     .doc = "box regression targets (normalised centre offsets and log sizes) of the anchors "
            "against their matched references, and the mask of positive samples",
     .input_names = HG_NAMES("samples", "matches", "anchors", "refs", "means", "stds"),
     .num_inputs = 6,
     .num_outputs = 2,
     .infer = enc_infer,
     .forward = enc_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_box_decode",
     .doc = "corner boxes from regression offsets (B, N, 4) and anchors (1, N, 4)",
     .input_names = HG_NAMES("data", "anchors"),
     .attrs = k_dec_attrs,
     .num_attrs = DEC_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = dec_infer,
     .forward = dec_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
