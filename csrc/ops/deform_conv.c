/* Deformable convolutions (MXNet 1.9.1's contrib DeformableConvolution, DCNv1, and
 * ModulatedDeformableConvolution, DCNv2), 2-D NCHW only as in MXNet. Each kernel tap of each
 * output position reads the data at its regular place plus a learned (dy, dx) offset, by
 * bilinear interpolation; DCNv2 also scales each sample by a mask. The two differ at the border
 * as MXNet's im2col kernels do: v1 samples only inside [0, H) x [0, W) and clamps taps to the
 * last row / column, v2 samples inside (-1, H) x (-1, W) with zero padding. The column buffer
 * (C * kh * kw * Ho * Wo samples of one image) is sized per call; everything is computed in
 * double and rounded once when stored. The gradient (one _backward_ op) is the exact derivative
 * of these piecewise-bilinear samples, which is what MXNet's col2im kernels compute. */
#include <math.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/detect.h"
#include "ops/ops_util.h"

static const char *const k_layouts[] = {"NCW", "NCHW", "NCDHW", NULL};

#define DC_COMMON_ATTRS                                                                         \
    [D_KERNEL] = {"kernel", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,                              \
                  "convolution kernel size (h, w)", NULL},                                      \
    [D_STRIDE] = {"stride", HG_ATTR_TUPLE, 0, "()", "stride (h, w); () means 1s", NULL},        \
    [D_DILATE] = {"dilate", HG_ATTR_TUPLE, 0, "()", "dilation (h, w); () means 1s", NULL},      \
    [D_PAD] = {"pad", HG_ATTR_TUPLE, 0, "()", "zero padding (h, w); () means 0s", NULL},        \
    [D_NUM_FILTER] = {"num_filter", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,                        \
                      "number of output channels", NULL},                                       \
    [D_NUM_GROUP] = {"num_group", HG_ATTR_INT, 0, "1", "number of channel groups", NULL},       \
    [D_NUM_DG] = {"num_deformable_group", HG_ATTR_INT, 0, "1",                                  \
                  "number of channel groups sharing one set of offsets", NULL},                 \
    [D_WORKSPACE] = {"workspace", HG_ATTR_INT, 0, "1024", "workspace limit in MB (ignored)",    \
                     NULL},                                                                     \
    [D_NO_BIAS] = {"no_bias", HG_ATTR_BOOL, 0, "False", "whether to leave out the bias input",  \
                   NULL},                                                                       \
    [D_LAYOUT] = {"layout", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None",                             \
                  "data layout; only NCHW (the 2-D default) is supported, as in MXNet",         \
                  k_layouts}

static const hg_attr_spec k_dc_attrs[] = {DC_COMMON_ATTRS};
_Static_assert(HG_COUNT(k_dc_attrs) == D_NATTRS, "k_dc_attrs must match its enum");
static const hg_attr_spec k_mdc_attrs[] = {
    DC_COMMON_ATTRS,
    [D_IM2COL] = {"im2col_step", HG_ATTR_INT, 0, "64",
                  "images per im2col pass (a memory knob; results do not depend on it)", NULL},
};
_Static_assert(HG_COUNT(k_mdc_attrs) == M_NATTRS, "k_mdc_attrs must match its enum");

static bool is_mod(const hg_op_def *op) { return op->attrs == k_mdc_attrs; }
static bool known(const hg_meta *m) { return m->ndim >= 0; }

static int dc_num_inputs(const hg_attrs *a) { return a->v[D_NO_BIAS].b ? 3 : 4; }
static int mdc_num_inputs(const hg_attrs *a) { return a->v[D_NO_BIAS].b ? 4 : 5; }

typedef struct {
    int64_t n, c, h, w, f, g, dg, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
    bool mod;
} dc_geom;

static int64_t tup(const hg_tuple *t, int i, int64_t def) { return t->n == 2 ? t->v[i] : def; }

static void geom_attrs(const hg_attrs *a, bool mod, dc_geom *g)
{
    g->kh = a->v[D_KERNEL].t.v[0], g->kw = a->v[D_KERNEL].t.v[1];
    g->sh = tup(&a->v[D_STRIDE].t, 0, 1), g->sw = tup(&a->v[D_STRIDE].t, 1, 1);
    g->dh = tup(&a->v[D_DILATE].t, 0, 1), g->dw = tup(&a->v[D_DILATE].t, 1, 1);
    g->ph = tup(&a->v[D_PAD].t, 0, 0), g->pw = tup(&a->v[D_PAD].t, 1, 0);
    g->f = a->v[D_NUM_FILTER].i, g->g = a->v[D_NUM_GROUP].i, g->dg = a->v[D_NUM_DG].i;
    g->mod = mod;
}

static hg_status check_tuple(const hg_op_def *op, const hg_attrs *a, int k, int64_t lo)
{
    const hg_tuple *t = &a->v[k].t;
    if (k != D_KERNEL && t->n == 0) return HG_OK;
    if (t->n != 2)
        return hg_error(HG_ERR_VALUE,
                        "%s: %s must have 2 entries (h, w): only 2-D deformable convolution is "
                        "implemented, as in MXNet",
                        op->name, op->attrs[k].name);
    if (t->v[0] < lo || t->v[1] < lo)
        return hg_error(HG_ERR_VALUE, "%s: %s entries must be >= %lld", op->name, op->attrs[k].name,
                        (long long)lo);
    return HG_OK;
}

static hg_status merge(const hg_op_def *op, const char *what, hg_meta *m, hg_dtype dt, int nd,
                       const int64_t *want)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    hg_meta before = *m;
    if (known(m) && m->dtype != dt)
        return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, data %s (must match)", op->name, what,
                        hg_dtype_name(m->dtype), hg_dtype_name(dt));
    if (!hg_meta_merge(m, dt, nd, want))
        return hg_error(HG_ERR_VALUE, "%s: %s has shape %s, expected %s", op->name, what,
                        hg_shape_str(s1, before.ndim, before.shape), hg_shape_str(s2, nd, want));
    return HG_OK;
}

/* Inputs: data, offset, [mask,] weight, [bias]. */
static hg_status dc_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    bool mod = is_mod(op);
    char s1[HG_SHAPE_STR];
    HG_TRY(check_tuple(op, a, D_KERNEL, 1));
    HG_TRY(check_tuple(op, a, D_STRIDE, 1));
    HG_TRY(check_tuple(op, a, D_DILATE, 1));
    HG_TRY(check_tuple(op, a, D_PAD, 0));
    if (!a->v[D_LAYOUT].is_none && a->v[D_LAYOUT].i != 1)
        return hg_error(HG_ERR_VALUE, "%s: layout %s is not supported (only NCHW)", op->name,
                        k_layouts[a->v[D_LAYOUT].i]);
    dc_geom g;
    geom_attrs(a, mod, &g);
    if (g.f < 1 || g.g < 1 || g.dg < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: num_filter, num_group and num_deformable_group must be >= 1",
                        op->name);
    HG_TRY(hg_c_check_float(op, "data", in[0].dtype));
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 4-D (batch, channel, height, width), got %s", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape));
    g.n = in[0].shape[0], g.c = in[0].shape[1], g.h = in[0].shape[2], g.w = in[0].shape[3];
    if (g.c % g.g || g.f % g.g)
        return hg_error(HG_ERR_VALUE,
                        "%s: channels (%lld) and num_filter (%lld) must be divisible by "
                        "num_group (%lld)",
                        op->name, (long long)g.c, (long long)g.f, (long long)g.g);
    if (g.c % g.dg)
        return hg_error(HG_ERR_VALUE,
                        "%s: channels (%lld) must be divisible by num_deformable_group (%lld)",
                        op->name, (long long)g.c, (long long)g.dg);
    if (mod && g.f % g.dg)
        return hg_error(HG_ERR_VALUE,
                        "%s: num_filter (%lld) must be divisible by num_deformable_group (%lld)",
                        op->name, (long long)g.f, (long long)g.dg);
    int64_t step = mod ? a->v[D_IM2COL].i : 0;
    if (mod && (step < 1 || (g.n > step && g.n % step)))
        return hg_error(HG_ERR_VALUE,
                        "%s: the batch size (%lld) must be at most or a multiple of im2col_step "
                        "(%lld >= 1)",
                        op->name, (long long)g.n, (long long)step);
    int64_t eh = g.dh * (g.kh - 1) + 1, ew = g.dw * (g.kw - 1) + 1;
    if (g.h + 2 * g.ph < eh || g.w + 2 * g.pw < ew)
        return hg_error(
            HG_ERR_VALUE, "%s: kernel (%lld, %lld) with dilation exceeds the padded input %s",
            op->name, (long long)g.kh, (long long)g.kw, hg_shape_str(s1, in[0].ndim, in[0].shape));
    g.ho = (g.h + 2 * g.ph - eh) / g.sh + 1, g.wo = (g.w + 2 * g.pw - ew) / g.sw + 1;
    hg_dtype dt = in[0].dtype;
    int64_t kk = g.kh * g.kw;
    int64_t off[4] = {g.n, 2 * g.dg * kk, g.ho, g.wo};
    HG_TRY(merge(op, "offset", &in[1], dt, 4, off));
    int wi = 2;
    if (mod) {
        int64_t msk[4] = {g.n, g.dg * kk, g.ho, g.wo};
        HG_TRY(merge(op, "mask", &in[2], dt, 4, msk));
        wi = 3;
    }
    int64_t wsh[4] = {g.f, g.c / g.g, g.kh, g.kw};
    HG_TRY(merge(op, "weight", &in[wi], dt, 4, wsh));
    if (nin > wi + 1) HG_TRY(merge(op, "bias", &in[wi + 1], dt, 1, &g.f));
    out[0].ndim = 4;
    out[0].shape[0] = g.n, out[0].shape[1] = g.f, out[0].shape[2] = g.ho, out[0].shape[3] = g.wo;
    return HG_OK;
}

/* The taps of one sample at (y, x) of an h-by-w plane: indices, weights and the weights'
 * derivatives in y and x. Returns 0 when the sample lies outside the region MXNet reads. */
static int taps(const dc_geom *g, double y, double x, int64_t *idx, double *wt, double *wy,
                double *wx)
{
    int64_t H = g->h, W = g->w;
    if (!g->mod) {
        if (!(y >= 0 && x >= 0 && y < (double)H && x < (double)W)) return 0;
        int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(x), y1, x1;
        double sy = 1, sx = 1;
        if (y0 >= H - 1) y1 = y0, y = (double)y0, sy = 0;
        else y1 = y0 + 1;
        if (x0 >= W - 1) x1 = x0, x = (double)x0, sx = 0;
        else x1 = x0 + 1;
        double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
        int64_t p[4] = {y0 * W + x0, y0 * W + x1, y1 * W + x0, y1 * W + x1};
        double w4[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
        double dy4[4] = {-hx * sy, -lx * sy, hx * sy, lx * sy};
        double dx4[4] = {-hy * sx, hy * sx, -ly * sx, ly * sx};
        for (int k = 0; k < 4; k++) idx[k] = p[k], wt[k] = w4[k], wy[k] = dy4[k], wx[k] = dx4[k];
        return 4;
    }
    if (!(y > -1 && x > -1 && y < (double)H && x < (double)W)) return 0;
    int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(x), y1 = y0 + 1, x1 = x0 + 1;
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    int64_t ys[4] = {y0, y0, y1, y1}, xs[4] = {x0, x1, x0, x1};
    double w4[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
    double dy4[4] = {-hx, -lx, hx, lx}, dx4[4] = {-hy, hy, -ly, ly};
    int n = 0;
    for (int k = 0; k < 4; k++) {
        if (ys[k] < 0 || ys[k] > H - 1 || xs[k] < 0 || xs[k] > W - 1) continue;
        idx[n] = ys[k] * W + xs[k], wt[n] = w4[k], wy[n] = dy4[k], wx[n] = dx4[k];
        n++;
    }
    return n;
}

/* The sample position of tap (i, j) at output (oy, ox) of image n, channel c. */
static void sample_pos(const dc_geom *g, const double *off, int64_t n, int64_t c, int64_t i,
                       int64_t j, int64_t oy, int64_t ox, double *y, double *x, int64_t *oi)
{
    int64_t P = g->ho * g->wo, kk = g->kh * g->kw, d = c / (g->c / g->dg);
    int64_t base = ((n * g->dg + d) * 2 * kk + 2 * (i * g->kw + j)) * P + oy * g->wo + ox;
    *oi = base;
    *y = (double)(oy * g->sh - g->ph + i * g->dh) + off[base];
    *x = (double)(ox * g->sw - g->pw + j * g->dw) + off[base + P];
}

static int64_t mask_index(const dc_geom *g, int64_t n, int64_t c, int64_t k, int64_t p)
{
    int64_t d = c / (g->c / g->dg);
    return ((n * g->dg + d) * g->kh * g->kw + k) * g->ho * g->wo + p;
}

/* col[(c * kk + k) * P + p]: the (masked) samples of image n. */
static void im2col(const dc_geom *g, const double *x, const double *off, const double *mask,
                   int64_t n, double *col)
{
    int64_t P = g->ho * g->wo, kk = g->kh * g->kw, HW = g->h * g->w;
    for (int64_t c = 0; c < g->c; c++) {
        const double *plane = x + (n * g->c + c) * HW;
        for (int64_t k = 0; k < kk; k++)
            for (int64_t p = 0; p < P; p++) {
                double y, xx, wt[4], wy[4], wx[4];
                int64_t oi, idx[4];
                sample_pos(g, off, n, c, k / g->kw, k % g->kw, p / g->wo, p % g->wo, &y, &xx, &oi);
                int nt = taps(g, y, xx, idx, wt, wy, wx);
                double v = 0;
                for (int t = 0; t < nt; t++) v += wt[t] * plane[idx[t]];
                if (mask) v *= mask[mask_index(g, n, c, k, p)];
                col[(c * kk + k) * P + p] = v;
            }
    }
}

static void geom_shapes(dc_geom *g, const hg_tensor *data, const hg_tensor *out_like)
{
    g->n = data->shape[0], g->c = data->shape[1], g->h = data->shape[2], g->w = data->shape[3];
    g->ho = out_like->shape[2], g->wo = out_like->shape[3];
}

static hg_status dc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    bool mod = is_mod(op);
    dc_geom g;
    geom_attrs(a, mod, &g);
    geom_shapes(&g, in[0], out[0]);
    int wi = mod ? 3 : 2;
    bool bias = nin > wi + 1;
    int64_t P = g.ho * g.wo, kk = g.kh * g.kw, cg = g.c / g.g, fg = g.f / g.g;
    double *x = hg_c_load(in[0]), *off = hg_c_load(in[1]);
    double *mask = mod ? hg_c_load(in[2]) : NULL, *w = hg_c_load(in[wi]);
    double *b = bias ? hg_c_load(in[wi + 1]) : NULL;
    double *col = hg_c_alloc(g.c * kk * P), *y = hg_c_alloc(out[0]->size);
    hg_status st = HG_OK;
    if (!x || !off || (mod && !mask) || !w || (bias && !b) || !col || !y) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    for (int64_t n = 0; n < g.n; n++) {
        im2col(&g, x, off, mask, n, col);
        for (int64_t f = 0; f < g.f; f++) {
            double *yo = y + (n * g.f + f) * P;
            double b0 = bias ? b[f] : 0;
            for (int64_t p = 0; p < P; p++) yo[p] = b0;
            int64_t grp = f / fg;
            for (int64_t cl = 0; cl < cg; cl++)
                for (int64_t k = 0; k < kk; k++) {
                    double wv = w[(f * cg + cl) * kk + k];
                    const double *cr = col + ((grp * cg + cl) * kk + k) * P;
                    for (int64_t p = 0; p < P; p++) yo[p] += wv * cr[p];
                }
        }
    }
    hg_c_store(out[0], y);
done:
    hg_c_free(x, in[0]->size);
    hg_c_free(off, in[1]->size);
    if (mod) hg_c_free(mask, in[2]->size);
    hg_c_free(w, in[wi]->size);
    if (bias) hg_c_free(b, in[wi + 1]->size);
    hg_c_free(col, g.c * kk * P);
    hg_c_free(y, out[0]->size);
    return st;
}

/* _backward_: (ograd, data, offset, [mask,] weight) -> gradients of data, offset, [mask,]
 * weight[, bias]. */
static int dc_bw_num_outputs(const hg_attrs *a) { return dc_num_inputs(a); }
static int mdc_bw_num_outputs(const hg_attrs *a) { return mdc_num_inputs(a); }

static hg_status dc_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    hg_meta fin[5], fout[1] = {{.ndim = -1}};
    for (int k = 0; k < nin - 1; k++) fin[k] = in[k + 1];
    fin[nin - 1] = (hg_meta){.ndim = -1};
    bool bias = nout == nin;
    HG_TRY(dc_infer(op, a, bias ? nin : nin - 1, fin, 1, fout));
    for (int k = 0; k < nout; k++)
        if (!known(&fin[k])) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    if (known(&in[0]) && !hg_shape_equal(in[0].ndim, in[0].shape, fout[0].ndim, fout[0].shape))
        return hg_error(HG_ERR_VALUE, "%s: ograd %s does not match the output %s", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, fout[0].ndim, fout[0].shape));
    for (int k = 0; k < nout; k++) out[k] = fin[k];
    return HG_OK;
}

static void col_grad(const dc_geom *g, const double *x, const double *off, const double *mask,
                     int64_t n, const double *dcol, double *dx, double *doff, double *dmask)
{
    int64_t P = g->ho * g->wo, kk = g->kh * g->kw, HW = g->h * g->w;
    for (int64_t c = 0; c < g->c; c++) {
        const double *plane = x + (n * g->c + c) * HW;
        double *dplane = dx + (n * g->c + c) * HW;
        for (int64_t k = 0; k < kk; k++)
            for (int64_t p = 0; p < P; p++) {
                double gv = dcol[(c * kk + k) * P + p];
                if (gv == 0) continue;
                double y, xx, wt[4], wy[4], wx[4];
                int64_t oi, idx[4];
                sample_pos(g, off, n, c, k / g->kw, k % g->kw, p / g->wo, p % g->wo, &y, &xx, &oi);
                int nt = taps(g, y, xx, idx, wt, wy, wx);
                double m = 1, v = 0, vy = 0, vx = 0;
                if (mask) m = mask[mask_index(g, n, c, k, p)];
                for (int t = 0; t < nt; t++) {
                    double d = plane[idx[t]];
                    v += wt[t] * d, vy += wy[t] * d, vx += wx[t] * d;
                    dplane[idx[t]] += m * gv * wt[t];
                }
                doff[oi] += m * gv * vy;
                doff[oi + P] += m * gv * vx;
                if (dmask) dmask[mask_index(g, n, c, k, p)] += gv * v;
            }
    }
}

static hg_status dc_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    bool mod = is_mod(op);
    dc_geom g;
    geom_attrs(a, mod, &g);
    geom_shapes(&g, in[1], in[0]);
    int wi = mod ? 4 : 3, wo = mod ? 3 : 2;
    bool bias = nout > wo + 1;
    int64_t P = g.ho * g.wo, kk = g.kh * g.kw, cg = g.c / g.g, fg = g.f / g.g;
    double *dy = hg_c_load(in[0]), *x = hg_c_load(in[1]), *off = hg_c_load(in[2]);
    double *mask = mod ? hg_c_load(in[3]) : NULL, *w = hg_c_load(in[wi]);
    double *col = hg_c_alloc(g.c * kk * P), *dcol = hg_c_alloc(g.c * kk * P);
    double *dx = hg_c_alloc(out[0]->size), *doff = hg_c_alloc(out[1]->size);
    double *dmask = mod ? hg_c_alloc(out[2]->size) : NULL, *dw = hg_c_alloc(out[wo]->size);
    double *db = bias ? hg_c_alloc(g.f) : NULL;
    hg_status st = HG_OK;
    if (!dy || !x || !off || (mod && (!mask || !dmask)) || !w || !col || !dcol || !dx || !doff ||
        !dw || (bias && !db)) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    memset(dx, 0, sizeof(double) * (size_t)out[0]->size);
    memset(doff, 0, sizeof(double) * (size_t)out[1]->size);
    if (mod) memset(dmask, 0, sizeof(double) * (size_t)out[2]->size);
    memset(dw, 0, sizeof(double) * (size_t)out[wo]->size);
    if (bias) memset(db, 0, sizeof(double) * (size_t)g.f);
    for (int64_t n = 0; n < g.n; n++) {
        im2col(&g, x, off, mask, n, col);
        memset(dcol, 0, sizeof(double) * (size_t)(g.c * kk * P));
        for (int64_t f = 0; f < g.f; f++) {
            const double *dyo = dy + (n * g.f + f) * P;
            int64_t grp = f / fg;
            if (bias)
                for (int64_t p = 0; p < P; p++) db[f] += dyo[p];
            for (int64_t cl = 0; cl < cg; cl++)
                for (int64_t k = 0; k < kk; k++) {
                    int64_t wk = (f * cg + cl) * kk + k, ck = ((grp * cg + cl) * kk + k) * P;
                    double wv = w[wk], acc = 0;
                    for (int64_t p = 0; p < P; p++) {
                        acc += dyo[p] * col[ck + p];
                        dcol[ck + p] += wv * dyo[p];
                    }
                    dw[wk] += acc;
                }
        }
        col_grad(&g, x, off, mask, n, dcol, dx, doff, dmask);
    }
    hg_c_store(out[0], dx);
    hg_c_store(out[1], doff);
    if (mod) hg_c_store(out[2], dmask);
    hg_c_store(out[wo], dw);
    if (bias) hg_c_store(out[wo + 1], db);
done:
    hg_c_free(dy, in[0]->size);
    hg_c_free(x, in[1]->size);
    hg_c_free(off, in[2]->size);
    if (mod) hg_c_free(mask, in[3]->size);
    hg_c_free(w, in[wi]->size);
    hg_c_free(col, g.c * kk * P);
    hg_c_free(dcol, g.c * kk * P);
    hg_c_free(dx, out[0]->size);
    hg_c_free(doff, out[1]->size);
    if (mod) hg_c_free(dmask, out[2]->size);
    hg_c_free(dw, out[wo]->size);
    if (bias) hg_c_free(db, g.f);
    return st;
}

static hg_status grad_common(hg_grad_ctx *g, const char *name, int nparts)
{
    bool bias = !hg_g_attrs(g)->v[D_NO_BIAS].b;
    int nout = nparts + (bias ? 1 : 0);
    hg_sentry in[5], out[5];
    in[0] = hg_g_ograd(g, 0);
    for (int k = 0; k < nparts; k++) in[k + 1] = hg_g_in(g, k);
    hg_g_op_fwd_attrs(g, name, nparts + 1, in, NULL, nout, out);
    for (int k = 0; k < nout; k++)
        if (hg_g_needs(g, k)) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

static hg_status dc_grad(hg_grad_ctx *g)
{
    return grad_common(g, "_backward_contrib_DeformableConvolution", 3);
}

static hg_status mdc_grad(hg_grad_ctx *g)
{
    return grad_common(g, "_backward_contrib_ModulatedDeformableConvolution", 4);
}

const hg_op_def hg_ops_deform_conv[] = {
    {.name = "_contrib_DeformableConvolution",
     .doc = "deformable 2-D convolution (DCNv1): each kernel tap samples the NCHW data at its "
            "place plus a learned offset (bilinear); offset is (N, 2 * num_deformable_group * "
            "kh * kw, Ho, Wo) holding (dy, dx) pairs per tap",
     .input_names = HG_NAMES("data", "offset", "weight", "bias"),
     .attrs = k_dc_attrs,
     .num_attrs = D_NATTRS,
     .num_inputs = 4,
     .get_num_inputs = dc_num_inputs,
     .num_outputs = 1,
     .infer = dc_infer,
     .forward = dc_forward,
     .grad = dc_grad},
    {.name = "_backward_contrib_DeformableConvolution",
     .doc = "DeformableConvolution's gradients: (data, offset, weight[, bias]) from (ograd, "
            "data, offset, weight)",
     .input_names = HG_NAMES("ograd", "data", "offset", "weight"),
     .attrs = k_dc_attrs,
     .num_attrs = D_NATTRS,
     .num_inputs = 4,
     .num_outputs = 4,
     .get_num_outputs = dc_bw_num_outputs,
     .infer = dc_bw_infer,
     .forward = dc_backward},
    {.name = "_contrib_ModulatedDeformableConvolution",
     .doc = "modulated deformable 2-D convolution (DCNv2): DeformableConvolution whose samples "
            "are also scaled by mask (N, num_deformable_group * kh * kw, Ho, Wo)",
     .input_names = HG_NAMES("data", "offset", "mask", "weight", "bias"),
     .attrs = k_mdc_attrs,
     .num_attrs = M_NATTRS,
     .num_inputs = 5,
     .get_num_inputs = mdc_num_inputs,
     .num_outputs = 1,
     .infer = dc_infer,
     .forward = dc_forward,
     .grad = mdc_grad},
    {.name = "_backward_contrib_ModulatedDeformableConvolution",
     .doc = "ModulatedDeformableConvolution's gradients: (data, offset, mask, weight[, bias]) "
            "from (ograd, data, offset, mask, weight)",
     .input_names = HG_NAMES("ograd", "data", "offset", "mask", "weight"),
     .attrs = k_mdc_attrs,
     .num_attrs = M_NATTRS,
     .num_inputs = 5,
     .num_outputs = 5,
     .get_num_outputs = mdc_bw_num_outputs,
     .infer = dc_bw_infer,
     .forward = dc_backward},
    {.name = NULL},
};
