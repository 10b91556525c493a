/* ROIAlign (Mask R-CNN's region feature pooling), as MXNet 1.9.1's contrib/roi_align: every
 * output bin averages a grid of bilinear samples of the data inside its region of interest;
 * position_sensitive takes each bin from its own channel group (PSRoIAlign) and aligned shifts
 * the boxes by half a pixel (Detectron2). Sample positions and weights are computed in the
 * data's dtype as MXNet does (so sample cells are the same), by one macro per float type. The
 * gradient scatters the same weights (_backward_contrib_ROIAlign); rois get none (MXNet's is
 * zero). RROIAlign, the rotated variant (forward only, as in MXNet), and PSROIPooling, R-FCN's
 * position-sensitive average pooling, live here too. */
#include <math.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/detect.h"
#include "ops/ops_util.h"

static const hg_attr_spec k_ra_attrs[] = {
    [RA_POOLED] = {"pooled_size", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "output (height, width) of each region", NULL},
    [RA_SCALE] = {"spatial_scale", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL,
                  "feature map size over image size (the factor applied to the boxes), in [0, 1]",
                  NULL},
    [RA_SAMPLE] = {"sample_ratio", HG_ATTR_INT, 0, "-1",
                   "samples per bin along each axis; <= 0: ceil(bin size)", NULL},
    [RA_PS] = {"position_sensitive", HG_ATTR_BOOL, 0, "False",
               "take bin (i, j) from channel group i * pooled_w + j (PSRoIAlign)", NULL},
    [RA_ALIGNED] = {"aligned", HG_ATTR_BOOL, 0, "False",
                    "shift boxes by -0.5 pixel (continuous coordinates, Detectron2)", NULL},
};
_Static_assert(HG_COUNT(k_ra_attrs) == RA_NATTRS, "k_ra_attrs must match its enum");

static bool known(const hg_meta *m) { return m->ndim >= 0; }

/* The checks ROIAlign and RROIAlign share: pooled_size, spatial_scale (MXNet's float32 value),
 * float data, rois of data's dtype, and once both shapes are known (*ready) 4-D data and rois
 * of shape (num_rois, ncols) whose columns are `cols`. */
static hg_status roi_infer_common(const hg_op_def *op, const hg_tuple *ps, double scale,
                                  const hg_meta *in, hg_meta *out, int ncols, const char *cols,
                                  bool *ready)
{
    char s1[HG_SHAPE_STR];
    if (ps->n != 2 || ps->v[0] < 1 || ps->v[1] < 1)
        return hg_error(HG_ERR_VALUE, "%s: pooled_size must be two sizes >= 1 (h, w)", op->name);
    double sc = (float)scale;
    if (!(sc >= 0 && sc <= 1))
        return hg_error(HG_ERR_VALUE, "%s: spatial_scale must lie in [0, 1], got %g", op->name,
                        scale);
    hg_status st = hg_c_check_float(op, "data", in[0].dtype);
    if (st) return st;
    if (known(&in[1]) && in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: rois has dtype %s, data %s (must match)", op->name,
                        hg_dtype_name(in[1].dtype), hg_dtype_name(in[0].dtype));
    out[0].dtype = in[0].dtype;
    if (!known(&in[0]) || !known(&in[1])) return HG_OK;
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D (batch, channel, height, width), got %s", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape));
    if (in[1].ndim != 2 || in[1].shape[1] != ncols)
        return hg_error(HG_ERR_VALUE, "%s: rois must have shape (num_rois, %d): %s, got %s",
                        op->name, ncols, cols, hg_shape_str(s1, in[1].ndim, in[1].shape));
    *ready = true;
    return HG_OK;
}

static hg_status ra_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    const hg_tuple *ps = &a->v[RA_POOLED].t;
    bool ready = false;
    hg_status st = roi_infer_common(op, ps, a->v[RA_SCALE].f, in, out, 5,
                                    "[batch index, x1, y1, x2, y2]", &ready);
    if (st || !ready) return st;
    int64_t c = in[0].shape[1], bins = ps->v[0] * ps->v[1];
    if (a->v[RA_PS].b && c % bins != 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: position_sensitive needs channels (%lld) divisible by "
                        "pooled_h * pooled_w (%lld)",
                        op->name, (long long)c, (long long)bins);
    out[0].ndim = 4;
    out[0].shape[0] = in[1].shape[0];
    out[0].shape[1] = a->v[RA_PS].b ? c / bins : c;
    out[0].shape[2] = ps->v[0], out[0].shape[3] = ps->v[1];
    return HG_OK;
}

/* One ROI: for every output bin, the samples' four taps and weights; calls EMIT(pos, w). */
typedef struct {
    int64_t n, c, h, w, ph, pw, cout, rois;
    int sample;
    bool ps, aligned;
    double scale;
} ra_geom;

/* The sample positions of MXNet's kernel in type T: bins of one ROI, a grid per bin, bilinear
 * taps clamped to the map (samples beyond [-1, size] contribute nothing). visit(bin, tap
 * offsets, weights) receives each sample with weights already divided by the grid count. */
#define RA_IMPL(SUF, T)                                                                       \
    static hg_status ra_roi_##SUF(const ra_geom *g, const double *roi, int64_t r,              \
                                  const double *x, double *y, const double *dy, double *dx)   \
    {                                                                                          \
        T off = g->aligned ? (T)0.5 : (T)0, sc = (T)g->scale;                                  \
        T sw = (T)roi[1] * sc - off, sh = (T)roi[2] * sc - off;                                \
        T rw = (T)roi[3] * sc - off - sw, rh = (T)roi[4] * sc - off - sh;                      \
        if (g->aligned && !(rw > 0 && rh > 0))                                                 \
            return hg_error(HG_ERR_VALUE,                                                      \
                            "ROIAlign: roi %lld has no area (aligned=True needs x2 > x1, "     \
                            "y2 > y1)",                                                        \
                            (long long)r);                                                     \
        if (!g->aligned) {                                                                     \
            rw = rw > (T)1 ? rw : (T)1;                                                        \
            rh = rh > (T)1 ? rh : (T)1;                                                        \
        }                                                                                      \
        T bh = rh / (T)g->ph, bw = rw / (T)g->pw;                                              \
        int gh = g->sample > 0 ? g->sample : (int)ceil(rh / (T)g->ph);                         \
        int gw = g->sample > 0 ? g->sample : (int)ceil(rw / (T)g->pw);                         \
        T count = (T)(gh * gw);                                                                \
        int64_t b = (int64_t)roi[0], hw = g->h * g->w;                                         \
        for (int64_t i = 0; i < g->ph; i++)                                                    \
            for (int64_t j = 0; j < g->pw; j++)                                                \
                for (int iy = 0; iy < gh; iy++) {                                              \
                    T yy = sh + (T)i * bh + (T)(iy + .5f) * bh / (T)gh;                        \
                    for (int ix = 0; ix < gw; ix++) {                                          \
                        T xx = sw + (T)j * bw + (T)(ix + .5f) * bw / (T)gw;                    \
                        if (yy < -1.0 || yy > (T)g->h || xx < -1.0 || xx > (T)g->w) continue;  \
                        T yv = yy <= 0 ? (T)0 : yy, xv = xx <= 0 ? (T)0 : xx;                  \
                        int64_t y0 = (int64_t)(int)yv, x0 = (int64_t)(int)xv, y1, x1;          \
                        if (y0 >= g->h - 1) y1 = y0 = g->h - 1, yv = (T)y0;                    \
                        else y1 = y0 + 1;                                                      \
                        if (x0 >= g->w - 1) x1 = x0 = g->w - 1, xv = (T)x0;                    \
                        else x1 = x0 + 1;                                                      \
                        T ly = yv - (T)y0, lx = xv - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;    \
                        int64_t pos[4] = {y0 * g->w + x0, y0 * g->w + x1, y1 * g->w + x0,      \
                                          y1 * g->w + x1};                                     \
                        T wt[4] = {hy * hx, hy * lx, ly * hx, ly * lx};                        \
                        for (int64_t c = 0; c < g->cout; c++) {                                \
                            int64_t cu = g->ps ? (c * g->ph + i) * g->pw + j : c;              \
                            int64_t cin = g->ps ? g->cout * g->ph * g->pw : g->cout;           \
                            int64_t base = (b * cin + cu) * hw;                                \
                            int64_t o = ((r * g->cout + c) * g->ph + i) * g->pw + j;           \
                            for (int k = 0; k < 4; k++) {                                      \
                                if (y) y[o] += (double)(wt[k] / count) * x[base + pos[k]];     \
                                if (dx) dx[base + pos[k]] += (double)(wt[k] / count) * dy[o];  \
                            }                                                                  \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
        return HG_OK;                                                                          \
    }
RA_IMPL(f, float)
RA_IMPL(d, double)

/* Forward (dy == NULL): y from x. Backward: dx from dy. */
static hg_status ra_run(const hg_op_def *op, const hg_attrs *a, const hg_tensor *data,
                        const hg_tensor *rois, const hg_tensor *dyt, hg_tensor *out)
{
    ra_geom g = {.n = data->shape[0],
                 .h = data->shape[2],
                 .w = data->shape[3],
                 .ph = a->v[RA_POOLED].t.v[0],
                 .pw = a->v[RA_POOLED].t.v[1],
                 .rois = rois->shape[0],
                 .sample = (int)a->v[RA_SAMPLE].i,
                 .ps = a->v[RA_PS].b,
                 .aligned = a->v[RA_ALIGNED].b,
                 .scale = (float)a->v[RA_SCALE].f};
    g.c = data->shape[1];
    g.cout = g.ps ? g.c / (g.ph * g.pw) : g.c;
    bool dbl = data->dtype == HG_DTYPE_F64;
    double *x = dyt ? NULL : hg_c_load(data), *rv = hg_c_load(rois);
    double *dy = dyt ? hg_c_load(dyt) : NULL, *o = hg_c_alloc(out->size);
    hg_status st = HG_OK;
    if ((!dyt && !x) || !rv || (dyt && !dy) || !o) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < out->size; i++) o[i] = 0;
    for (int64_t r = 0; r < g.rois && !st; r++) {
        const double *roi = rv + 5 * r;
        /* MXNet truncates the index to int: below 0 marks padding (zeros) */
        if (roi[0] <= -1) continue;
        if (!(roi[0] < (double)g.n)) {
            st = hg_error(HG_ERR_INDEX, "%s: roi %lld has batch index %g, data has %lld images",
                          op->name, (long long)r, roi[0], (long long)g.n);
            break;
        }
        double *y = dyt ? NULL : o, *dx = dyt ? o : NULL;
        st = dbl ? ra_roi_d(&g, roi, r, x, y, dy, dx) : ra_roi_f(&g, roi, r, x, y, dy, dx);
    }
    if (!st) hg_c_store(out, o);
done:
    hg_c_free(x, data->size);
    hg_c_free(rv, rois->size);
    hg_c_free(dy, dyt ? dyt->size : 0);
    hg_c_free(o, out->size);
    return st;
}

static hg_status ra_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return ra_run(op, a, in[0], in[1], NULL, out[0]);
}

/* _backward_contrib_ROIAlign(ograd, data, rois) -> the data's gradient */
static hg_status ra_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    hg_meta fwd[1] = {{.ndim = -1}};
    hg_status st = ra_infer(op, a, nin - 1, in + 1, 1, fwd);
    if (st) return st;
    if (!known(&in[1])) return hg_error(HG_ERR_VALUE, "%s: data shape unknown", op->name);
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    if (known(&in[0]) && !hg_shape_equal(in[0].ndim, in[0].shape, fwd[0].ndim, fwd[0].shape))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s does not match the output %s", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, fwd[0].ndim, fwd[0].shape));
    (void)nout;
    out[0] = in[1];
    return HG_OK;
}

static hg_status ra_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return ra_run(op, a, in[1], in[2], in[0], out[0]);
}

static hg_status ra_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_contrib_ROIAlign", 3,
                      (hg_sentry[]){hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)}, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}

/* ---- RROIAlign: rotated regions (forward only: MXNet has no backward) --------------------- */

static const hg_attr_spec k_rr_attrs[] = {
    [RR_POOLED] = {"pooled_size", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "output (height, width) of each region", NULL},
    [RR_SCALE] = {"spatial_scale", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL,
                  "feature map size over image size, in [0, 1]", NULL},
    [RR_SAMPLE] = {"sampling_ratio", HG_ATTR_INT, 0, "-1",
                   "samples per bin along each axis; <= 0: ceil(bin size)", NULL},
};
_Static_assert(HG_COUNT(k_rr_attrs) == RR_NATTRS, "k_rr_attrs must match its enum");

static hg_status rr_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    const hg_tuple *ps = &a->v[RR_POOLED].t;
    bool ready = false;
    hg_status st = roi_infer_common(
        op, ps, a->v[RR_SCALE].f, in, out, 6,
        "[batch index, centre x, centre y, width, height, angle in degrees]", &ready);
    if (st || !ready) return st;
    out[0].ndim = 4;
    out[0].shape[0] = in[1].shape[0], out[0].shape[1] = in[0].shape[1];
    out[0].shape[2] = ps->v[0], out[0].shape[3] = ps->v[1];
    return HG_OK;
}

/* One rotated roi in type T, as MXNet's kernel: the bin grid is laid in the roi's own frame
 * and rotated by theta about its centre. */
#define RR_IMPL(SUF, T, COS, SIN)                                                              \
    static void rr_roi_##SUF(const ra_geom *g, const double *roi, int64_t r, const double *x,   \
                             double *y)                                                        \
    {                                                                                          \
        T sc = (T)g->scale;                                                                    \
        T cw = (T)roi[1] * sc, ch = (T)roi[2] * sc, rw = (T)roi[3] * sc, rh = (T)roi[4] * sc;  \
        T theta = (T)((double)(T)roi[5] * M_PI / 180.0);                                       \
        rw = rw > (T)1 ? rw : (T)1;                                                            \
        rh = rh > (T)1 ? rh : (T)1;                                                            \
        T sh = (T)(-(double)rh / 2.0), sw = (T)(-(double)rw / 2.0);                            \
        T bh = rh / (T)g->ph, bw = rw / (T)g->pw;                                              \
        int gh = g->sample > 0 ? g->sample : (int)ceil(rh / (T)g->ph);                         \
        int gw = g->sample > 0 ? g->sample : (int)ceil(rw / (T)g->pw);                         \
        T count = (T)(gh * gw), ct = (T)COS(theta), st = (T)SIN(theta);                        \
        int64_t b = (int64_t)roi[0], hw = g->h * g->w;                                         \
        for (int64_t i = 0; i < g->ph; i++)                                                    \
            for (int64_t j = 0; j < g->pw; j++)                                                \
                for (int iy = 0; iy < gh; iy++) {                                              \
                    T yy = sh + (T)i * bh + (T)(iy + .5f) * bh / (T)gh;                        \
                    for (int ix = 0; ix < gw; ix++) {                                          \
                        T xx = sw + (T)j * bw + (T)(ix + .5f) * bw / (T)gw;                    \
                        T xv = xx * ct + yy * st + cw, yv = yy * ct - xx * st + ch;            \
                        if (yv < -1.0 || yv > (T)g->h || xv < -1.0 || xv > (T)g->w) continue;  \
                        if (yv <= 0) yv = 0;                                                   \
                        if (xv <= 0) xv = 0;                                                   \
                        int64_t y0 = (int64_t)(int)yv, x0 = (int64_t)(int)xv, y1, x1;          \
                        if (y0 >= g->h - 1) y1 = y0 = g->h - 1, yv = (T)y0;                    \
                        else y1 = y0 + 1;                                                      \
                        if (x0 >= g->w - 1) x1 = x0 = g->w - 1, xv = (T)x0;                    \
                        else x1 = x0 + 1;                                                      \
                        T ly = yv - (T)y0, lx = xv - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;    \
                        int64_t pos[4] = {y0 * g->w + x0, y0 * g->w + x1, y1 * g->w + x0,      \
                                          y1 * g->w + x1};                                     \
                        T wt[4] = {hy * hx, hy * lx, ly * hx, ly * lx};                        \
                        for (int64_t c = 0; c < g->c; c++) {                                   \
                            const double *xp = x + (b * g->c + c) * hw;                        \
                            double *o = y + ((r * g->c + c) * g->ph + i) * g->pw + j;          \
                            for (int k = 0; k < 4; k++) *o += (double)(wt[k] / count) * xp[pos[k]]; \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
    }
RR_IMPL(f, float, cos, sin)
RR_IMPL(d, double, cos, sin)

static hg_status rr_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *data = in[0], *rois = in[1];
    ra_geom g = {.n = data->shape[0],
                 .c = data->shape[1],
                 .h = data->shape[2],
                 .w = data->shape[3],
                 .ph = a->v[RR_POOLED].t.v[0],
                 .pw = a->v[RR_POOLED].t.v[1],
                 .rois = rois->shape[0],
                 .sample = (int)a->v[RR_SAMPLE].i,
                 .scale = (float)a->v[RR_SCALE].f};
    double *x = hg_c_load(data), *rv = hg_c_load(rois), *o = hg_c_alloc(out[0]->size);
    hg_status st = HG_OK;
    if (!x || !rv || !o) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < out[0]->size; i++) o[i] = 0;
    for (int64_t r = 0; r < g.rois; r++) {
        const double *roi = rv + 6 * r;
        if (!(roi[0] > -1 && roi[0] < (double)g.n)) { /* the index truncated to int */
            st = hg_error(HG_ERR_INDEX, "%s: roi %lld has batch index %g, data has %lld images",
                          op->name, (long long)r, roi[0], (long long)g.n);
            goto done;
        }
        if (data->dtype == HG_DTYPE_F64) rr_roi_d(&g, roi, r, x, o);
        else rr_roi_f(&g, roi, r, x, o);
    }
    hg_c_store(out[0], o);
done:
    hg_c_free(x, data->size);
    hg_c_free(rv, rois->size);
    hg_c_free(o, out[0]->size);
    return st;
}

/* ---- PSROIPooling: position-sensitive average pooling (R-FCN) ----------------------------- */

static const hg_attr_spec k_ps_attrs[] = {
    [PS_SCALE] = {"spatial_scale", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL,
                  "feature map size over image size, in [0, 1]", NULL},
    [PS_OUTDIM] = {"output_dim", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "output channels", NULL},
    [PS_POOLED] = {"pooled_size", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "output height and width",
                   NULL},
    [PS_GROUP] = {"group_size", HG_ATTR_INT, 0, "0",
                  "position-sensitive groups per side; 0: pooled_size", NULL},
};
_Static_assert(HG_COUNT(k_ps_attrs) == PS_NATTRS, "k_ps_attrs must match its enum");

static int64_t ps_group(const hg_attrs *a)
{
    return a->v[PS_GROUP].i ? a->v[PS_GROUP].i : a->v[PS_POOLED].i;
}

static hg_status ps_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR];
    int64_t od = a->v[PS_OUTDIM].i, ps = a->v[PS_POOLED].i, gs = ps_group(a);
    if (od < 1 || ps < 1 || gs < 1)
        return hg_error(HG_ERR_VALUE, "%s: output_dim, pooled_size and group_size must be >= 1",
                        op->name);
    double sc = (float)a->v[PS_SCALE].f;
    if (!(sc >= 0 && sc <= 1))
        return hg_error(HG_ERR_VALUE, "%s: spatial_scale must lie in [0, 1], got %g", op->name,
                        a->v[PS_SCALE].f);
    hg_status st = hg_c_check_float(op, "data", in[0].dtype);
    if (st) return st;
    if (known(&in[1]) && in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "%s: rois has dtype %s, data %s (must match)", op->name,
                        hg_dtype_name(in[1].dtype), hg_dtype_name(in[0].dtype));
    out[0].dtype = in[0].dtype;
    if (!known(&in[0]) || !known(&in[1])) return HG_OK;
    if (in[0].ndim != 4 || in[0].shape[1] < od * gs * gs)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D with at least output_dim * group_size^2 = %lld "
                        "channels, got %s",
                        op->name, (long long)(od * gs * gs),
                        hg_shape_str(s1, in[0].ndim, in[0].shape));
    if (in[1].ndim != 2 || in[1].shape[1] != 5)
        return hg_error(HG_ERR_VALUE,
                        "%s: rois must have shape (num_rois, 5): [batch index, x1, y1, x2, y2], "
                        "got %s",
                        op->name, hg_shape_str(s1, in[1].ndim, in[1].shape));
    out[0].ndim = 4;
    out[0].shape[0] = in[1].shape[0], out[0].shape[1] = od;
    out[0].shape[2] = out[0].shape[3] = ps;
    return HG_OK;
}

/* Bins of one roi in type T as MXNet's kernel (rounded corners, integer bins clipped to the
 * map); forward averages into y, backward spreads dy over the bin into dx. */
#define PS_IMPL(SUF, T, ROUND)                                                                 \
    static void ps_roi_##SUF(const hg_attrs *a, const int64_t *dims, const double *roi,         \
                             int64_t r, const double *x, double *y, const double *dy,          \
                             double *dx)                                                       \
    {                                                                                          \
        int64_t c = dims[1], h = dims[2], w = dims[3], od = a->v[PS_OUTDIM].i;                 \
        int64_t ps = a->v[PS_POOLED].i, gs = ps_group(a);                                      \
        T sc = (T)(float)a->v[PS_SCALE].f;                                                     \
        int64_t b = (int64_t)roi[0];                                                           \
        T sw = (T)ROUND((T)roi[1]) * sc, sh = (T)ROUND((T)roi[2]) * sc;                        \
        T ew = (T)(ROUND((T)roi[3]) + (T)1) * sc, eh = (T)(ROUND((T)roi[4]) + (T)1) * sc;      \
        T rw = ew - sw > (T)0.1 ? ew - sw : (T)0.1, rh = eh - sh > (T)0.1 ? eh - sh : (T)0.1;  \
        T bh = rh / (T)ps, bw = rw / (T)ps;                                                    \
        for (int64_t ct = 0; ct < od; ct++)                                                    \
            for (int64_t i = 0; i < ps; i++)                                                   \
                for (int64_t j = 0; j < ps; j++) {                                             \
                    int64_t h0 = (int64_t)floor((double)((T)i * bh + sh));                     \
                    int64_t w0 = (int64_t)floor((double)((T)j * bw + sw));                     \
                    int64_t h1 = (int64_t)ceil((double)((T)(i + 1) * bh + sh));                \
                    int64_t w1 = (int64_t)ceil((double)((T)(j + 1) * bw + sw));                \
                    h0 = h0 < 0 ? 0 : h0 > h ? h : h0, h1 = h1 < 0 ? 0 : h1 > h ? h : h1;      \
                    w0 = w0 < 0 ? 0 : w0 > w ? w : w0, w1 = w1 < 0 ? 0 : w1 > w ? w : w1;      \
                    int64_t gw = (int64_t)floor((double)((T)j * (T)gs / (T)ps));               \
                    int64_t gh = (int64_t)floor((double)((T)i * (T)gs / (T)ps));               \
                    gw = gw < 0 ? 0 : gw > gs - 1 ? gs - 1 : gw;                               \
                    gh = gh < 0 ? 0 : gh > gs - 1 ? gs - 1 : gh;                               \
                    int64_t base = (b * c + (ct * gs + gh) * gs + gw) * h * w;                 \
                    int64_t o = ((r * od + ct) * ps + i) * ps + j;                             \
                    if (h1 <= h0 || w1 <= w0) continue; /* an empty bin: 0, no gradient */     \
                    T area = (T)((h1 - h0) * (w1 - w0));                                       \
                    if (y) {                                                                   \
                        T sum = 0;                                                             \
                        for (int64_t p = h0; p < h1; p++)                                      \
                            for (int64_t q = w0; q < w1; q++) sum += (T)x[base + p * w + q];   \
                        y[o] = (double)(sum / area);                                           \
                    } else {                                                                   \
                        T g = (T)dy[o] / area;                                                 \
                        for (int64_t p = h0; p < h1; p++)                                      \
                            for (int64_t q = w0; q < w1; q++) dx[base + p * w + q] += (double)g; \
                    }                                                                          \
                }                                                                              \
    }
PS_IMPL(f, float, roundf)
PS_IMPL(d, double, round)

/* Forward (dyt == NULL): out = pooled data. Backward: out = the data's gradient. */
static hg_status ps_run(const hg_op_def *op, const hg_attrs *a, const hg_tensor *data,
                        const hg_tensor *rois, const hg_tensor *dyt, hg_tensor *out)
{
    double *x = dyt ? NULL : hg_c_load(data), *rv = hg_c_load(rois);
    double *dy = dyt ? hg_c_load(dyt) : NULL, *o = hg_c_alloc(out->size);
    hg_status st = HG_OK;
    if ((!dyt && !x) || !rv || (dyt && !dy) || !o) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t i = 0; i < out->size; i++) o[i] = 0;
    for (int64_t r = 0; r < rois->shape[0]; r++) {
        const double *roi = rv + 5 * r;
        if (!(roi[0] > -1 && roi[0] < (double)data->shape[0])) { /* truncated to int */
            st = hg_error(HG_ERR_INDEX, "%s: roi %lld has batch index %g, data has %lld images",
                          op->name, (long long)r, roi[0], (long long)data->shape[0]);
            goto done;
        }
        double *y = dyt ? NULL : o, *dx = dyt ? o : NULL;
        if (data->dtype == HG_DTYPE_F64) ps_roi_d(a, data->shape, roi, r, x, y, dy, dx);
        else ps_roi_f(a, data->shape, roi, r, x, y, dy, dx);
    }
    hg_c_store(out, o);
done:
    hg_c_free(x, data->size);
    hg_c_free(rv, rois->size);
    hg_c_free(dy, dyt ? dyt->size : 0);
    hg_c_free(o, out->size);
    return st;
}

static hg_status ps_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return ps_run(op, a, in[0], in[1], NULL, out[0]);
}

static hg_status ps_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)nout;
    hg_meta fwd[1] = {{.ndim = -1}};
    hg_status st = ps_infer(op, a, nin - 1, in + 1, 1, fwd);
    if (st) return st;
    if (!known(&in[1])) return hg_error(HG_ERR_VALUE, "%s: data shape unknown", op->name);
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    if (known(&in[0]) && !hg_shape_equal(in[0].ndim, in[0].shape, fwd[0].ndim, fwd[0].shape))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s does not match the output %s", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, fwd[0].ndim, fwd[0].shape));
    out[0] = in[1];
    return HG_OK;
}

static hg_status ps_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    return ps_run(op, a, in[1], in[2], in[0], out[0]);
}

static hg_status ps_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_contrib_PSROIPooling", 3,
                      (hg_sentry[]){hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)}, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 1)), NULL));
    return hg_g_status(g);
}

const hg_op_def hg_ops_contrib_roi[] = {
    {.name = "_contrib_ROIAlign",
     .doc = "region features (num_rois, C, pooled_h, pooled_w) of NCHW data, each bin the mean "
            "of bilinear samples",
     .input_names = HG_NAMES("data", "rois"),
     .attrs = k_ra_attrs,
     .num_attrs = RA_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = ra_infer,
     .forward = ra_forward,
     .grad = ra_grad},
    {.name = "_backward_contrib_ROIAlign",
     .doc = "ROIAlign's gradient with respect to data: the samples' weights scattered back",
     .input_names = HG_NAMES("ograd", "data", "rois"),
     .attrs = k_ra_attrs,
     .num_attrs = RA_NATTRS,
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = ra_bw_infer,
     .forward = ra_backward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_RROIAlign",
     .doc = "rotated region features (num_rois, C, pooled_h, pooled_w) of NCHW data; rois are "
            "[batch index, centre x, centre y, width, height, angle in degrees] (no gradient, as "
            "in MXNet)",
     .input_names = HG_NAMES("data", "rois"),
     .attrs = k_rr_attrs,
     .num_attrs = RR_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = rr_infer,
     .forward = rr_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_PSROIPooling",
     .doc = "position-sensitive roi average pooling (R-FCN): bin (i, j) of output channel k "
            "averages channel (k * group + gi) * group + gj",
     .input_names = HG_NAMES("data", "rois"),
     .attrs = k_ps_attrs,
     .num_attrs = PS_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = ps_infer,
     .forward = ps_forward,
     .grad = ps_grad},
    {.name = "_backward_contrib_PSROIPooling",
     .doc = "PSROIPooling's gradient with respect to data: each bin's gradient spread evenly",
     .input_names = HG_NAMES("ograd", "data", "rois"),
     .attrs = k_ps_attrs,
     .num_attrs = PS_NATTRS,
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = ps_bw_infer,
     .forward = ps_backward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
