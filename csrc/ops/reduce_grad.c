/* The gradient ops of the reductions in reduce.c: _backward_X(dy, data[, y]) writes the gradient
 * of data for X in {sum, mean, nansum, prod, nanprod, max, min, norm}, with X's own attributes.
 * data is read for its shape (and, where the local derivative needs them, its values); y is the
 * forward output. Each output element of dy is broadcast back along the reduced axes and scaled
 * by the local derivative, MXNet's conventions:
 *   sum 1, mean 1/R, nansum 0 at NaN else 1, max/min 1 where x equals the result (every tied
 *   position gets the whole dy, as MXNet's eq), norm ord=1 sign(x), ord=2 x/y.
 * Two choices differ from MXNet where MXNet gives NaN: prod's derivative is the exact product of
 * the other elements (MXNet divides y by x, 0/0 at zeros), and norm ord=2 gives 0 where the norm
 * is 0 (MXNet 0/0).
 *
 * Geometry: after dropping size-1 dims and merging neighbours of the same kind, data is rows of
 * `inner` elements; each row maps to a base offset in dy and its elements step by istride (1 when
 * the last group is kept, 0 when it is reduced). Rows run in parallel; values go through double
 * tiles, so every dtype pair (dy of norm's out_dtype, data of another) takes the same path.
 */
#include <string.h>

#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/reduce.h"

#define TILE 1024

typedef enum { BK_SUM, BK_MEAN, BK_NANSUM, BK_PROD, BK_NANPROD, BK_MAXMIN, BK_NORM } bk_kind;

typedef struct {
    bk_kind kind;
    int ord;                                   /* norm: 1 or 2 */
    int nd;                                    /* merged dims of data; the last is `inner` */
    int64_t shape[HG_MAX_NDIM], ostride[HG_MAX_NDIM];
    int64_t inner, istride, rows, nout;
    const char *dy, *x, *y;
    char *dx;
    hg_dtype tdy, tx, ty;
    size_t edy, ex, ey;
    double scale;                              /* mean: 1 / (elements per output) */
    double *prod;                              /* prod: product of the nonzero elements */
    int64_t *zeros;                            /* prod: number of zeros */
} bk_job;

static void bk_geom(bk_job *j, int ndim, const int64_t *shape, const bool *red)
{
    int64_t gs[HG_MAX_NDIM];
    bool gr[HG_MAX_NDIM];
    int ng = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        if (ng > 0 && gr[ng - 1] == red[d]) {
            gs[ng - 1] *= shape[d];
        } else {
            gs[ng] = shape[d];
            gr[ng++] = red[d];
        }
    }
    if (ng == 0) { /* one element */
        gs[0] = 1;
        gr[0] = true;
        ng = 1;
    }
    int64_t s = 1;
    for (int k = ng - 1; k >= 0; k--) {
        j->ostride[k] = gr[k] ? 0 : s;
        if (!gr[k]) s *= gs[k];
    }
    memcpy(j->shape, gs, sizeof(int64_t) * (size_t)ng);
    j->nd = ng;
    j->nout = s;
    j->inner = gs[ng - 1];
    j->istride = gr[ng - 1] ? 0 : 1;
    j->rows = 1;
    for (int k = 0; k < ng - 1; k++) j->rows *= gs[k];
}

/* w values of an output-shaped tensor from offset o: contiguous, or one value repeated. */
static void load_out(const char *base, hg_dtype dt, size_t esz, int64_t o, int64_t w,
                     int64_t istride, double *t)
{
    if (istride) {
        hg_reduce_load(dt, base + (size_t)o * esz, w, t);
        return;
    }
    hg_reduce_load(dt, base + (size_t)o * esz, 1, t);
    for (int64_t i = 1; i < w; i++) t[i] = t[0];
}

/* sum with dy and data of one dtype: a plain broadcast copy. */
static void copy_block(const bk_job *j, int64_t o, int64_t e, int64_t w)
{
    const char *src = j->dy + (size_t)o * j->edy;
    char *dst = j->dx + (size_t)e * j->ex;
    if (j->istride) {
        memcpy(dst, src, (size_t)w * j->ex);
        return;
    }
    switch (j->ex) {
    case 8: {
        uint64_t v;
        memcpy(&v, src, 8);
        for (int64_t i = 0; i < w; i++) memcpy(dst + 8 * i, &v, 8);
        break;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, src, 4);
        for (int64_t i = 0; i < w; i++) memcpy(dst + 4 * i, &v, 4);
        break;
    }
    default:
        for (int64_t i = 0; i < w; i++) memcpy(dst + (size_t)i * j->ex, src, j->ex);
        break;
    }
}

/* The gradient of w data elements from element e, whose dy values start at output offset o. */
static void bk_block(const bk_job *j, int64_t o, int64_t e, int64_t w)
{
    double dy[TILE], x[TILE], y[TILE], g[TILE];
    if (j->kind == BK_SUM && j->tdy == j->tx) {
        copy_block(j, o, e, w);
        return;
    }
    load_out(j->dy, j->tdy, j->edy, o, w, j->istride, dy);
    if (j->kind != BK_SUM && j->kind != BK_MEAN)
        hg_reduce_load(j->tx, j->x + (size_t)e * j->ex, w, x);
    if (j->kind == BK_MAXMIN || (j->kind == BK_NORM && j->ord == 2))
        load_out(j->y, j->ty, j->ey, o, w, j->istride, y);
    switch (j->kind) {
    case BK_SUM: memcpy(g, dy, sizeof(double) * (size_t)w); break;
    case BK_MEAN:
        for (int64_t i = 0; i < w; i++) g[i] = dy[i] * j->scale;
        break;
    case BK_NANSUM:
        for (int64_t i = 0; i < w; i++) g[i] = x[i] != x[i] ? 0.0 : dy[i];
        break;
    case BK_MAXMIN:
        for (int64_t i = 0; i < w; i++) g[i] = x[i] == y[i] ? dy[i] : 0.0;
        break;
    case BK_NORM:
        if (j->ord == 1) {
            for (int64_t i = 0; i < w; i++) g[i] = x[i] > 0 ? dy[i] : x[i] < 0 ? -dy[i] : 0.0;
        } else {
            for (int64_t i = 0; i < w; i++) g[i] = y[i] == 0 ? 0.0 : dy[i] * (x[i] / y[i]);
        }
        break;
    case BK_PROD:
    case BK_NANPROD:
        for (int64_t i = 0; i < w; i++) {
            int64_t oi = o + i * j->istride, z = j->zeros[oi];
            double p = j->prod[oi], v = x[i];
            if (j->kind == BK_NANPROD && v != v) g[i] = 0.0;    /* NaN counted as a constant 1 */
            else if (z == 0) g[i] = dy[i] * (p / v);
            else if (z == 1 && v == 0) g[i] = dy[i] * p;        /* the other factors */
            else g[i] = 0.0;                                    /* another factor is 0 */
        }
        break;
    }
    hg_reduce_store(j->tx, g, w, j->dx + (size_t)e * j->ex);
}

/* Calls fn(j, o, e, w) for every tile of rows [r0, r1): o is the dy offset of the tile's
 * first element, e its data offset. */
typedef void (*bk_tile_fn)(const bk_job *j, int64_t o, int64_t e, int64_t w);

static void bk_walk(const bk_job *j, int64_t r0, int64_t r1, bk_tile_fn fn)
{
    int64_t idx[HG_MAX_NDIM] = {0}, rem = r0;
    for (int d = j->nd - 2; d >= 0; d--) {
        idx[d] = rem % j->shape[d];
        rem /= j->shape[d];
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t base = 0;
        for (int d = 0; d < j->nd - 1; d++) base += idx[d] * j->ostride[d];
        for (int64_t c = 0; c < j->inner; c += TILE) {
            int64_t w = j->inner - c < TILE ? j->inner - c : TILE;
            fn(j, base + c * j->istride, r * j->inner + c, w);
        }
        for (int d = j->nd - 2; d >= 0; d--) {
            if (++idx[d] < j->shape[d]) break;
            idx[d] = 0;
        }
    }
}

static void bk_range(void *ctx, int64_t r0, int64_t r1) { bk_walk(ctx, r0, r1, bk_block); }

/* prod's first pass (serial: many rows meet in one output): nonzero product and zero count. */
static void prod_scan(const bk_job *j, int64_t o, int64_t e, int64_t w)
{
    double x[TILE];
    hg_reduce_load(j->tx, j->x + (size_t)e * j->ex, w, x);
    for (int64_t i = 0; i < w; i++) {
        int64_t oi = o + i * j->istride;
        if (x[i] == 0) j->zeros[oi]++;
        else if (!(j->kind == BK_NANPROD && x[i] != x[i])) j->prod[oi] *= x[i];
    }
}

static hg_status bk_run(bk_job *j, const bool *red, hg_tensor *const *in, hg_tensor *dx)
{
    const hg_tensor *x = in[1];
    if (x->size == 0) return HG_OK;
    bk_geom(j, x->ndim, x->shape, red);
    j->dy = hg_data(in[0]);
    j->tdy = in[0]->dtype;
    j->edy = hg_dtype_size(j->tdy);
    j->x = hg_data(in[1]);
    j->tx = x->dtype;
    j->ex = hg_dtype_size(j->tx);
    if (j->kind == BK_MAXMIN || j->kind == BK_NORM) {
        j->y = hg_data(in[2]);
        j->ty = in[2]->dtype;
        j->ey = hg_dtype_size(j->ty);
    }
    j->dx = hg_data(dx);
    j->scale = 1.0 / (double)(x->size / j->nout);
    size_t pbytes = 0;
    void *pbuf = NULL;
    if (j->kind == BK_PROD || j->kind == BK_NANPROD) {
        pbytes = (sizeof(double) + sizeof(int64_t)) * (size_t)j->nout;
        pbuf = hg_alloc(pbytes);
        if (!pbuf) return hg_error(HG_ERR_MEMORY, "prod gradient: out of memory");
        double *p = pbuf;
        int64_t *z = (int64_t *)(p + j->nout);
        for (int64_t o = 0; o < j->nout; o++) {
            p[o] = 1.0;
            z[o] = 0;
        }
        j->prod = p;
        j->zeros = z;
        bk_walk(j, 0, j->rows, prod_scan);
    }
    int64_t grain = j->inner >= HG_GRAIN_ELEMWISE ? 1 : HG_GRAIN_ELEMWISE / j->inner;
    hg_parallel_for(j->rows, grain, bk_range, j);
    if (pbuf) hg_free(pbuf, pbytes);
    return HG_OK;
}

/* ---- shape rules -------------------------------------------------------------------------- */

static hg_status check_like(const hg_op_def *op, const char *what, const hg_meta *m,
                            const hg_meta *want, const hg_meta *x)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    if (m->ndim < 0) return HG_OK;
    bool ok = m->ndim == want->ndim;
    for (int d = 0; ok && d < m->ndim; d++)
        ok = m->shape[d] < 0 || want->shape[d] < 0 || m->shape[d] == want->shape[d];
    if (!ok)
        return hg_error(HG_ERR_VALUE,
                        "%s: %s has shape %s, but reducing data of shape %s gives "
                        "%s",
                        op->name, what, hg_shape_str(s0, m->ndim, m->shape),
                        hg_shape_str(s1, x->ndim, x->shape),
                        hg_shape_str(s2, want->ndim, want->shape));
    if (m->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: %s of dtype bool is not supported", op->name, what);
    return HG_OK;
}

/* in: (dy, data[, y]); the gradient has data's shape and dtype. */
static hg_status bk_infer_impl(const hg_op_def *op, const hg_attr_value *axis, bool keepdims,
                               bool exclude, int nin, hg_meta *in, hg_meta *out)
{
    bool red[HG_MAX_NDIM];
    const hg_meta *x = &in[1];
    hg_meta want = {0};
    if (x->ndim < 0) {
        out[0].ndim = -1;
        return HG_OK;
    }
    if (x->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: data of dtype bool is not supported", op->name);
    HG_TRY(hg_reduce_axes(op, axis, keepdims, exclude, x, &want, red));
    HG_TRY(check_like(op, "the output gradient", &in[0], &want, x));
    if (nin > 2) HG_TRY(check_like(op, "the forward output", &in[2], &want, x));
    out[0] = *x;
    return HG_OK;
}

static hg_status bk_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    return bk_infer_impl(op, &a->v[K_AXIS], a->v[K_KEEPDIMS].b, a->v[K_EXCLUDE].b, nin, in, out);
}

static hg_status bk_norm_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nout;
    if (a->v[N_ORD].i != 1 && a->v[N_ORD].i != 2)
        return hg_error(HG_ERR_VALUE, "%s: ord=%lld is not supported, only ord=1 and ord=2",
                        op->name, (long long)a->v[N_ORD].i);
    return bk_infer_impl(op, &a->v[N_AXIS], a->v[N_KEEPDIMS].b, false, nin, in, out);
}

/* ---- kernels ------------------------------------------------------------------------------ */

static hg_status bk_forward(bk_kind kind, const hg_op_def *op, const hg_attrs *a,
                            hg_tensor *const *in, hg_tensor *dx)
{
    bool red[HG_MAX_NDIM];
    hg_meta xm = hg_meta_of(in[1]), om;
    bk_job j = {.kind = kind};
    if (kind == BK_NORM) {
        j.ord = (int)a->v[N_ORD].i;
        HG_TRY(hg_reduce_axes(op, &a->v[N_AXIS], a->v[N_KEEPDIMS].b, false, &xm, &om, red));
    } else {
        HG_TRY(hg_reduce_axes(op, &a->v[K_AXIS], a->v[K_KEEPDIMS].b, a->v[K_EXCLUDE].b, &xm, &om,
                              red));
    }
    return bk_run(&j, red, in, dx);
}

#define BK_FORWARD(NAME, KIND)                                                                  \
    static hg_status NAME##_forward(const hg_op_def *op, const hg_attrs *a,                     \
                                    const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,      \
                                    int nout, hg_tensor *const *out)                            \
    {                                                                                           \
        (void)ctx; (void)nin; (void)nout;                                                       \
        return bk_forward(KIND, op, a, in, out[0]);                                             \
    }
BK_FORWARD(bsum, BK_SUM)
BK_FORWARD(bmean, BK_MEAN)
BK_FORWARD(bnansum, BK_NANSUM)
BK_FORWARD(bprod, BK_PROD)
BK_FORWARD(bnanprod, BK_NANPROD)
BK_FORWARD(bmaxmin, BK_MAXMIN)
BK_FORWARD(bnorm, BK_NORM)

/* _backward_sum and _backward_mean are linear in dy: their adjoints are sum and mean again, so
 * second derivatives through them work. */
static hg_status adjoint(hg_grad_ctx *g, const char *op)
{
    hg_sentry r;
    hg_g_op_fwd_attrs(g, op, HG_GIN(hg_g_ograd(g, 0)), NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

static hg_status bsum_grad(hg_grad_ctx *g) { return adjoint(g, "sum"); }
static hg_status bmean_grad(hg_grad_ctx *g) { return adjoint(g, "mean"); }

/* ---- the op table ------------------------------------------------------------------------- */

static const hg_attr_spec k_axes_attrs[] = {
    [K_AXIS] = {"axis", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None", "the forward reduction's axis",
                NULL},
    [K_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False", "the forward reduction's keepdims", NULL},
    [K_EXCLUDE] = {"exclude", HG_ATTR_BOOL, 0, "False", "the forward reduction's exclude", NULL},
};
_Static_assert(HG_COUNT(k_axes_attrs) == K_NATTRS, "k_axes_attrs must match its enum");

static const hg_attr_spec k_norm_attrs[] = {
    [N_ORD] = {"ord", HG_ATTR_INT, 0, "2", "the forward norm's order (1 or 2)", NULL},
    [N_AXIS] = {"axis", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None", "the forward norm's axis", NULL},
    [N_OUT_DTYPE] = {"out_dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",
                     "the forward norm's out_dtype", NULL},
    [N_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False", "the forward norm's keepdims", NULL},
};
_Static_assert(HG_COUNT(k_norm_attrs) == N_NATTRS, "k_norm_attrs must match its enum");

#define BK_OP(NAME, FN, NIN, INS, ATTRS, INFER, GRAD, DOC)                                      \
    {.name = NAME, .doc = DOC, .input_names = INS, .attrs = ATTRS, .num_attrs = HG_COUNT(ATTRS), \
     .num_inputs = NIN, .num_outputs = 1, .infer = INFER, .forward = FN##_forward, .grad = GRAD}
#define IN2 HG_NAMES("ograd", "data")
#define IN3 HG_NAMES("ograd", "data", "output")

const hg_op_def hg_ops_reduce_grad[] = {
    BK_OP("_backward_sum", bsum, 2, IN2, k_axes_attrs, bk_infer, bsum_grad,
          "gradient of sum: ograd broadcast back over the reduced axes"),
    BK_OP("_backward_mean", bmean, 2, IN2, k_axes_attrs, bk_infer, bmean_grad,
          "gradient of mean: ograd / count broadcast back over the reduced axes"),
    BK_OP("_backward_nansum", bnansum, 2, IN2, k_axes_attrs, bk_infer, NULL,
          "gradient of nansum: ograd broadcast back, 0 at NaN data"),
    BK_OP("_backward_prod", bprod, 2, IN2, k_axes_attrs, bk_infer, NULL,
          "gradient of prod: ograd times the product of the other elements (exact at zeros)"),
    BK_OP("_backward_nanprod", bnanprod, 2, IN2, k_axes_attrs, bk_infer, NULL,
          "gradient of nanprod: as prod with NaN counted as 1, 0 at NaN data"),
    BK_OP("_backward_max", bmaxmin, 3, IN3, k_axes_attrs, bk_infer, NULL,
          "gradient of max: ograd at every position equal to the maximum"),
    BK_OP("_backward_min", bmaxmin, 3, IN3, k_axes_attrs, bk_infer, NULL,
          "gradient of min: ograd at every position equal to the minimum"),
    BK_OP("_backward_norm", bnorm, 3, IN3, k_norm_attrs, bk_norm_infer, NULL,
          "gradient of norm: ograd * sign(x) (ord=1) or ograd * x / norm (ord=2, 0 at norm 0)"),
    {0},
};
