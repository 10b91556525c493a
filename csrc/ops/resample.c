/* Resampling ops (MXNet 1.x): Pad and UpSampling (nearest; bilinear runs deconv.c's
 * Deconvolution through the registry, as MXNet does).
 *
 * Pad and UpSampling move elements without arithmetic (except the UpSampling sum mode), so they
 * copy by element size and serve every float dtype.
 *
 * Each op has a gradient rule and a _backward_<Op> kernel next to its forward: Pad's sums the
 * output gradient back onto the copied elements, UpSampling's sums each scale x scale block.
 */
#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/resample.h"

static const char *tuple_str(char *buf, const hg_tuple *t) { return hg_shape_str(buf, t->n, t->v); }

static bool is_float(hg_dtype dt)
{
    return dt == HG_DTYPE_F32 || dt == HG_DTYPE_F64 || dt == HG_DTYPE_F16;
}

/* ---- Pad ------------------------------------------------------------------------------------ */

static const char *const k_pad_modes[] = {[PAD_CONSTANT] = "constant",
                                          [PAD_EDGE] = "edge",
                                          [PAD_REFLECT] = "reflect",
                                          [PAD_NMODES] = NULL};
_Static_assert(HG_COUNT(k_pad_modes) == PAD_NMODES + 1, "k_pad_modes must match its enum");

static const hg_attr_spec k_pad_attrs[] = {
    [K_PAD_MODE] = {"mode", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL,
                    "padding type: constant, edge or reflect", k_pad_modes},
    [K_PAD_WIDTH] = {"pad_width", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                     "(before, after) pad sizes per axis, flattened; the first two axes must "
                     "have 0",
                     NULL},
    [K_PAD_VALUE] = {"constant_value", HG_ATTR_FLOAT, 0, "0", "fill value of constant mode", NULL},
};
_Static_assert(HG_COUNT(k_pad_attrs) == K_PAD_NATTRS, "k_pad_attrs must match its enum");

static hg_status pad_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)op;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    const hg_tuple *pw = &a->v[K_PAD_WIDTH].t;
    int64_t mode = a->v[K_PAD_MODE].i;
    if (x->ndim < 0) return HG_OK;
    if (pw->n != 2 * x->ndim)
        return hg_error(HG_ERR_VALUE,
                        "Pad: pad_width=%s has %d entries, but data shape %s needs "
                        "%d (2 per axis)",
                        tuple_str(s0, pw), pw->n, hg_shape_str(s1, x->ndim, x->shape), 2 * x->ndim);
    if (x->ndim != 4 && x->ndim != 5)
        return hg_error(HG_ERR_VALUE, "Pad: only 4-D or 5-D data is supported, got data shape %s",
                        hg_shape_str(s0, x->ndim, x->shape));
    if (pw->v[0] != 0 || pw->v[1] != 0 || pw->v[2] != 0 || pw->v[3] != 0)
        return hg_error(HG_ERR_VALUE,
                        "Pad: padding on the first two axes (batch and channel) "
                        "must be zero, got pad_width=%s",
                        tuple_str(s0, pw));
    if (!is_float(x->dtype))
        return hg_error(HG_ERR_TYPE,
                        "Pad: dtype %s is not supported (float16, float32 and "
                        "float64 only)",
                        hg_dtype_name(x->dtype));
    out[0].ndim = x->ndim;
    out[0].dtype = x->dtype;
    for (int i = 0; i < x->ndim; i++) {
        int64_t b = pw->v[2 * i], e = pw->v[2 * i + 1], n = x->shape[i];
        if (b < 0 || e < 0)
            return hg_error(HG_ERR_VALUE, "Pad: pad_width=%s must be non-negative",
                            tuple_str(s0, pw));
        if (n >= 0 && mode == PAD_REFLECT && (b >= n || e >= n) && (b || e))
            return hg_error(HG_ERR_VALUE,
                            "Pad: reflect padding must be smaller than the input "
                            "size: pad_width=%s, data shape %s (axis %d)",
                            tuple_str(s0, pw), hg_shape_str(s1, x->ndim, x->shape), i);
        if (n == 0 && mode == PAD_EDGE && (b || e))
            return hg_error(HG_ERR_VALUE,
                            "Pad: edge padding of an empty axis: pad_width=%s, data "
                            "shape %s (axis %d)",
                            tuple_str(s0, pw), hg_shape_str(s1, x->ndim, x->shape), i);
        out[0].shape[i] = n < 0 ? -1 : n + b + e;
    }
    return hg_shape_check(out[0].ndim, out[0].shape, out[0].dtype);
}

/* Source index of output index i along an axis of size n with `before` padding; -1: constant. */
static int64_t pad_src(int64_t i, int64_t n, int64_t before, int64_t mode)
{
    int64_t j = i - before;
    if (j >= 0 && j < n) return j;
    if (mode == PAD_CONSTANT) return -1;
    if (mode == PAD_EDGE) return j < 0 ? 0 : n - 1;
    return j < 0 ? -j : 2 * (n - 1) - j; /* reflect: pad < n, so one bounce suffices */
}

typedef struct {
    const hg_attrs *a;
    int nd;
    const int64_t *ishape, *oshape;
    const char *x;
    char *y;
    size_t es;
    uint64_t fill; /* constant_value's bits in the output dtype */
} pad_job;

static void fill_elems(char *dst, int64_t n, size_t es, uint64_t bits)
{
    for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * es, &bits, es);
}

/* Output rows (all axes but the last) [begin, end). */
static void pad_rows(void *ctx, int64_t begin, int64_t end)
{
    const pad_job *j = ctx;
    const hg_tuple *pw = &j->a->v[K_PAD_WIDTH].t;
    int64_t mode = j->a->v[K_PAD_MODE].i;
    int nd = j->nd, last = nd - 1;
    int64_t OW = j->oshape[last], IW = j->ishape[last], pb = pw->v[2 * last];
    size_t es = j->es;
    for (int64_t r = begin; r < end; r++) {
        char *dst = j->y + (size_t)(r * OW) * es;
        int64_t rem = r, src_row = 0, mul = 1;
        bool constant = false;
        for (int d = last - 1; d >= 0; d--) {
            int64_t o = rem % j->oshape[d];
            rem /= j->oshape[d];
            int64_t s = pad_src(o, j->ishape[d], pw->v[2 * d], mode);
            if (s < 0) constant = true;
            src_row += s * mul;
            mul *= j->ishape[d];
        }
        if (constant) {
            fill_elems(dst, OW, es, j->fill);
            continue;
        }
        const char *src = j->x + (size_t)(src_row * IW) * es;
        int64_t lo = pb < OW ? pb : OW, hi = pb + IW < OW ? pb + IW : OW;
        for (int64_t o = 0; o < lo; o++) {
            int64_t s = pad_src(o, IW, pb, mode);
            if (s < 0) memcpy(dst + (size_t)o * es, &j->fill, es);
            else memcpy(dst + (size_t)o * es, src + (size_t)s * es, es);
        }
        if (hi > lo) memcpy(dst + (size_t)lo * es, src, (size_t)(hi - lo) * es);
        for (int64_t o = hi; o < OW; o++) {
            int64_t s = pad_src(o, IW, pb, mode);
            if (s < 0) memcpy(dst + (size_t)o * es, &j->fill, es);
            else memcpy(dst + (size_t)o * es, src + (size_t)s * es, es);
        }
    }
}

static hg_status pad_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0], *y = out[0];
    pad_job j = {a, y->ndim, x->shape, y->shape, hg_data(x), hg_data(y), hg_dtype_size(y->dtype),
                 0};
    double v = a->v[K_PAD_VALUE].f;
    if (y->dtype == HG_DTYPE_F32) {
        float f = (float)v;
        memcpy(&j.fill, &f, sizeof f);
    } else if (y->dtype == HG_DTYPE_F64) {
        memcpy(&j.fill, &v, sizeof v);
    } else {
        uint16_t h = hg_float_to_half((float)v);
        memcpy(&j.fill, &h, sizeof h);
    }
    int64_t rows = hg_shape_size(y->ndim - 1, y->shape), OW = y->shape[y->ndim - 1];
    int64_t grain = OW > 0 ? HG_GRAIN_ELEMWISE / OW + 1 : rows + 1;
    hg_parallel_for(rows, grain, pad_rows, &j);
    return HG_OK;
}

/* _backward_Pad(ograd) -> data gradient: every output element's gradient goes back to the
 * element it was copied from (edge and reflect send several to one; constant cells send none).
 * The first two axes are never padded, so (n, c) planes are independent and split over threads;
 * within a plane the output rows are walked in order and added into their source rows.
 * float16 sums in a float copy (the workspace). */

static hg_status pad_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_meta *o = &in[0];
    const hg_tuple *pw = &a->v[K_PAD_WIDTH].t;
    out[0].ndim = -1;
    if (o->ndim < 0) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    if (pw->n != 2 * o->ndim)
        return hg_error(HG_ERR_VALUE,
                        "%s: pad_width=%s has %d entries, but the output gradient "
                        "%s needs %d (2 per axis)",
                        op->name, tuple_str(s0, pw), pw->n, hg_shape_str(s1, o->ndim, o->shape),
                        2 * o->ndim);
    hg_meta x = *o, fout = {.ndim = -1};
    for (int i = 0; i < o->ndim; i++) {
        x.shape[i] = o->shape[i] - pw->v[2 * i] - pw->v[2 * i + 1];
        if (x.shape[i] < 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: pad_width=%s is larger than the output gradient "
                            "%s",
                            op->name, tuple_str(s0, pw), hg_shape_str(s1, o->ndim, o->shape));
    }
    HG_TRY(pad_infer(op, a, 1, &x, 1, &fout));
    out[0] = x;
    return HG_OK;
}

static size_t pad_bw_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    if (in[0].dtype != HG_DTYPE_F16) return 0;
    const hg_tuple *pw = &a->v[K_PAD_WIDTH].t;
    size_t n = 1;
    for (int i = 0; i < in[0].ndim; i++)
        n *= (size_t)(in[0].shape[i] - pw->v[2 * i] - pw->v[2 * i + 1]);
    return sizeof(float) * n;
}

typedef struct {
    const hg_attrs *a;
    int nd;
    const int64_t *ishape, *oshape; /* ishape: the data (gradient) shape */
    const void *dy;
    void *dx, *acc;                 /* acc: where planes sum (dx, or the float16 workspace) */
} pad_bw_job;

#define PAD_BW(T, AT, LD, ST)                                                                   \
    static void pad_bw_planes_##T(void *ctx, int64_t begin, int64_t end)                        \
    {                                                                                           \
        const pad_bw_job *j = ctx;                                                              \
        const hg_tuple *pw = &j->a->v[K_PAD_WIDTH].t;                                           \
        const int64_t mode = j->a->v[K_PAD_MODE].i;                                             \
        const int nd = j->nd, last = nd - 1;                                                    \
        const int64_t OW = j->oshape[last], IW = j->ishape[last], pb = pw->v[2 * last];         \
        const int64_t orows = hg_shape_size(nd - 3, j->oshape + 2);                             \
        const int64_t isz = hg_shape_size(nd - 2, j->ishape + 2), osz = orows * OW;             \
        const int64_t lo = pb < OW ? pb : OW, hi = pb + IW < OW ? pb + IW : OW;                 \
        for (int64_t pl = begin; pl < end; pl++) {                                              \
            const T *dy = (const T *)j->dy + pl * osz;                                          \
            AT *dx = (AT *)j->acc + pl * isz;                                                   \
            memset(dx, 0, sizeof(AT) * (size_t)isz);                                            \
            for (int64_t r = 0; r < orows; r++) {                                               \
                int64_t rem = r, src_row = 0, mul = 1;                                          \
                bool constant = false;                                                          \
                for (int d = last - 1; d >= 2; d--) {                                           \
                    int64_t o = rem % j->oshape[d];                                             \
                    rem /= j->oshape[d];                                                        \
                    int64_t si = pad_src(o, j->ishape[d], pw->v[2 * d], mode);                  \
                    if (si < 0) constant = true;                                                \
                    src_row += si * mul;                                                        \
                    mul *= j->ishape[d];                                                        \
                }                                                                               \
                if (constant) continue;                                                         \
                const T *src = dy + r * OW;                                                     \
                AT *dst = dx + src_row * IW;                                                    \
                for (int64_t o = lo; o < hi; o++) dst[o - pb] += LD(src[o]);                    \
                if (mode == PAD_CONSTANT) continue;                                             \
                for (int64_t o = 0; o < lo; o++) dst[pad_src(o, IW, pb, mode)] += LD(src[o]);   \
                for (int64_t o = hi; o < OW; o++) dst[pad_src(o, IW, pb, mode)] += LD(src[o]);  \
            }                                                                                   \
            if (j->acc != j->dx)                                                                \
                for (int64_t i = 0; i < isz; i++) ((T *)j->dx)[pl * isz + i] = ST(dx[i]);       \
        }                                                                                       \
    }
#define PAD_ID(v) (v)
#define PAD_F2H(v) hg_float_to_half(v)
PAD_BW(float, float, PAD_ID, PAD_ID)
PAD_BW(double, double, PAD_ID, PAD_ID)
PAD_BW(uint16_t, float, hg_half_to_float, PAD_F2H)

static hg_status pad_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    const hg_tensor *dy = in[0], *dx = out[0];
    pad_bw_job j = {a, dx->ndim, dx->shape, dy->shape, hg_data(dy), hg_data(dx), hg_data(dx)};
    if (dx->dtype == HG_DTYPE_F16) {
        if (!ctx->workspace) return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
        j.acc = ctx->workspace;
    }
    int64_t planes = dx->shape[0] * dx->shape[1], work = dy->size / (planes ? planes : 1) + 1;
    hg_range_fn fn = dx->dtype == HG_DTYPE_F32   ? pad_bw_planes_float
                     : dx->dtype == HG_DTYPE_F64 ? pad_bw_planes_double
                                                 : pad_bw_planes_uint16_t;
    hg_parallel_for(planes, HG_GRAIN_ELEMWISE / work + 1, fn, &j);
    return HG_OK;
}

static hg_status pad_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_Pad", HG_GIN(hg_g_ograd(g, 0)), NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* _backward_Pad is linear: its adjoint is Pad itself with a zero fill. */
static hg_status pad_bw_grad(hg_grad_ctx *g)
{
    hg_sentry y;
    hg_g_op_fwd_attrs(g, "Pad", HG_GIN(hg_g_ograd(g, 0)), HG_KV("constant_value", "0"), 1, &y);
    hg_g_set(g, 0, y);
    return hg_g_status(g);
}

/* ---- UpSampling ----------------------------------------------------------------------------- */

static const char *const k_up_types[] = {
    [UP_NEAREST] = "nearest", [UP_BILINEAR] = "bilinear", [UP_NTYPES] = NULL};
_Static_assert(HG_COUNT(k_up_types) == UP_NTYPES + 1, "k_up_types must match its enum");
static const char *const k_up_modes[] = {
    [UP_CONCAT] = "concat", [UP_SUM] = "sum", [UP_NMODES] = NULL};
_Static_assert(HG_COUNT(k_up_modes) == UP_NMODES + 1, "k_up_modes must match its enum");

static const hg_attr_spec k_up_attrs[] = {
    [K_UP_SCALE] = {"scale", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "up-sampling scale", NULL},
    [K_UP_NUM_FILTER] = {"num_filter", HG_ATTR_INT, 0, "0", "input filter count (bilinear only)",
                         NULL},
    [K_UP_TYPE] = {"sample_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL, "nearest or bilinear",
                   k_up_types},
    [K_UP_MODE] = {"multi_input_mode", HG_ATTR_ENUM, 0, "concat",
                   "how to combine several inputs: concat (along channels) or sum", k_up_modes},
    [K_UP_NUM_ARGS] = {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of inputs", NULL},
    [K_UP_WORKSPACE] = {"workspace", HG_ATTR_INT, 0, "512", "workspace limit in MB (ignored)",
                        NULL},
};
_Static_assert(HG_COUNT(k_up_attrs) == K_UP_NATTRS, "k_up_attrs must match its enum");

/* ---- bilinear: MXNet runs it as a Deconvolution (upsampling-inl.h, GetDeconvolutionParam) with
 * kernel 2s - s%2, stride s, pad ceil((s-1)/2), num_group = num_filter = channels and no bias:
 * every channel is spread by its own (1, k, k) weight slice, the output is (s*H, s*W). Inputs:
 * data and weight (C, 1, k, k); the gradient is _backward_Deconvolution's with those attributes.
 */

/* The Deconvolution attributes as MXNet strings: kv = {key, value, ..., NULL}. */
typedef struct {
    char kernel[48], stride[48], pad[48], nf[24];
    const char *kv[13];
} up_deconv_attrs;

static void up_deconv_kv(const hg_attrs *a, up_deconv_attrs *d)
{
    long long s = a->v[K_UP_SCALE].i, k = 2 * s - s % 2, p = (s - 1 + 1) / 2;
    snprintf(d->kernel, sizeof d->kernel, "(%lld, %lld)", k, k);
    snprintf(d->stride, sizeof d->stride, "(%lld, %lld)", s, s);
    snprintf(d->pad, sizeof d->pad, "(%lld, %lld)", p, p);
    snprintf(d->nf, sizeof d->nf, "%lld", (long long)a->v[K_UP_NUM_FILTER].i);
    const char *kv[13] = {"kernel", d->kernel,   "stride", d->stride, "pad",  d->pad, "num_filter",
                          d->nf,    "num_group", d->nf,    "no_bias", "True", NULL};
    memcpy(d->kv, kv, sizeof kv);
}

/* Deconvolution's definition and parsed attributes for this UpSampling call. */
static hg_status up_deconv(const hg_attrs *a, const hg_op_def **op, hg_attrs *da)
{
    up_deconv_attrs d;
    up_deconv_kv(a, &d);
    *op = hg_registry_find("Deconvolution");
    if (!*op) return hg_error(HG_ERR_INTERNAL, "UpSampling: Deconvolution is not registered");
    hg_attrs_set_defaults(*op, da);
    for (int i = 0; d.kv[i]; i += 2) {
        int idx = hg_attr_index(*op, d.kv[i]);
        if (idx < 0)
            return hg_error(HG_ERR_INTERNAL, "UpSampling: Deconvolution has no %s", d.kv[i]);
        HG_TRY(hg_attr_parse(*op, idx, d.kv[i + 1], da));
    }
    return hg_attrs_finish(*op, da);
}

static hg_status up_bilinear_infer(const hg_attrs *a, int nin, hg_meta *in, hg_meta *out)
{
    char s0[HG_SHAPE_STR];
    int64_t scale = a->v[K_UP_SCALE].i, nf = a->v[K_UP_NUM_FILTER].i;
    if (nin != 2)
        return hg_error(HG_ERR_VALUE,
                        "UpSampling: sample_type='bilinear' takes 2 inputs (data and weight), "
                        "got num_args=%d",
                        nin);
    if (scale < 1 || scale > 1000)
        return hg_error(HG_ERR_VALUE, "UpSampling: scale must be in [1, 1000], got %lld",
                        (long long)scale);
    if (in[0].ndim < 0) return HG_OK;
    if (in[0].ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "UpSampling: bilinear data should be 4-D (batch, channel, y, x), got "
                        "shape %s",
                        hg_shape_str(s0, in[0].ndim, in[0].shape));
    if (in[0].dtype != HG_DTYPE_F32 && in[0].dtype != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE,
                        "UpSampling: sample_type='bilinear' supports float32 and float64 data, "
                        "got %s",
                        hg_dtype_name(in[0].dtype));
    if (in[0].shape[1] >= 0 && nf != in[0].shape[1])
        return hg_error(HG_ERR_VALUE,
                        "UpSampling: sample_type='bilinear' needs num_filter equal to the "
                        "channels of data: got num_filter=%lld for data shape %s",
                        (long long)nf, hg_shape_str(s0, in[0].ndim, in[0].shape));
    const hg_op_def *dop;
    hg_attrs da;
    HG_TRY(up_deconv(a, &dop, &da));
    HG_TRY(dop->infer(dop, &da, 2, in, 1, out));
    return HG_OK;
}

static size_t up_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    const hg_op_def *dop;
    hg_attrs da;
    if (a->v[K_UP_TYPE].i != UP_BILINEAR || up_deconv(a, &dop, &da) != HG_OK) return 0;
    return dop->workspace ? dop->workspace(&da, nin, in) : 0;
}

static hg_status up_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)op;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    int64_t scale = a->v[K_UP_SCALE].i;
    if (a->v[K_UP_TYPE].i == UP_BILINEAR) return up_bilinear_infer(a, nin, in, out);
    if (nin < 1) return hg_error(HG_ERR_VALUE, "UpSampling: num_args must be at least 1");
    if (scale < 1 || scale > 1000)
        return hg_error(HG_ERR_VALUE, "UpSampling: scale must be in [1, 1000], got %lld",
                        (long long)scale);
    for (int i = 0; i < nin; i++)
        if (in[i].ndim < 0) return HG_OK;
    const hg_meta *x0 = &in[0];
    int64_t OH = x0->shape[2] * scale, OW = x0->shape[3] * scale, chans = 0;
    for (int i = 0; i < nin; i++) {
        const hg_meta *x = &in[i];
        if (x->ndim != 4)
            return hg_error(HG_ERR_VALUE,
                            "UpSampling: input %d should be 4-D (batch, channel, y, "
                            "x), got shape %s",
                            i, hg_shape_str(s0, x->ndim, x->shape));
        if (x->dtype != x0->dtype)
            return hg_error(HG_ERR_TYPE,
                            "UpSampling: all inputs must have the same dtype, input "
                            "0 is %s and input %d is %s",
                            hg_dtype_name(x0->dtype), i, hg_dtype_name(x->dtype));
        if (x->shape[0] != x0->shape[0])
            return hg_error(HG_ERR_VALUE,
                            "UpSampling: inputs must have the same batch size, "
                            "input 0 has shape %s and input %d has shape %s",
                            hg_shape_str(s0, x0->ndim, x0->shape), i,
                            hg_shape_str(s1, x->ndim, x->shape));
        int64_t h = x->shape[2], w = x->shape[3];
        if (h < 1 || w < 1 || OH % h != 0 || OW % w != 0 || OH / h != OW / w)
            return hg_error(HG_ERR_VALUE,
                            "UpSampling: input %d of shape %s does not divide the "
                            "output size (%lld, %lld) by one integer scale",
                            i, hg_shape_str(s0, x->ndim, x->shape), (long long)OH, (long long)OW);
        if (a->v[K_UP_MODE].i == UP_SUM) {
            if (i > 0 && x->shape[1] != chans)
                return hg_error(HG_ERR_VALUE,
                                "UpSampling: number of channels must be the same "
                                "when multi_input_mode==sum, input 0 has shape %s and input %d "
                                "has shape %s",
                                hg_shape_str(s0, x0->ndim, x0->shape), i,
                                hg_shape_str(s1, x->ndim, x->shape));
            chans = x->shape[1];
        } else {
            chans += x->shape[1];
        }
    }
    if (!is_float(x0->dtype))
        return hg_error(HG_ERR_TYPE,
                        "UpSampling: dtype %s is not supported (float16, float32 "
                        "and float64 only)",
                        hg_dtype_name(x0->dtype));
    out[0].ndim = 4;
    out[0].dtype = x0->dtype;
    out[0].shape[0] = x0->shape[0];
    out[0].shape[1] = chans;
    out[0].shape[2] = OH;
    out[0].shape[3] = OW;
    return hg_shape_check(4, out[0].shape, out[0].dtype);
}

typedef struct {
    const char *x;
    char *y;
    int64_t C, H, W, s;     /* input channels and size, scale to the output */
    int64_t YC, coff;       /* output channels, first output channel of this input */
    size_t es;
    hg_dtype dt;
    bool add;               /* sum mode after the first input */
} up_job;

#define UP_ADD_ROW(T)                                                                           \
    for (int64_t ix = 0; ix < W; ix++) {                                                        \
        T v = ((const T *)src)[ix];                                                             \
        T *d = (T *)dst + ix * s;                                                               \
        for (int64_t k = 0; k < s; k++) d[k] += v;                                              \
    }

/* Input rows (n, c, iy) [begin, end): each fills s output rows. */
static void up_rows(void *ctx, int64_t begin, int64_t end)
{
    const up_job *j = ctx;
    int64_t W = j->W, s = j->s, OW = W * s;
    size_t es = j->es;
    for (int64_t r = begin; r < end; r++) {
        int64_t iy = r % j->H, nc = r / j->H, c = nc % j->C, n = nc / j->C;
        const char *src = j->x + (size_t)(r * W) * es;
        for (int64_t k = 0; k < s; k++) {
            int64_t oy = iy * s + k;
            char *dst = j->y + (size_t)((((n * j->YC + j->coff + c) * j->H * s) + oy) * OW) * es;
            if (!j->add) {
                if (k > 0) {
                    memcpy(dst, dst - (size_t)OW * es, (size_t)OW * es);
                    continue;
                }
                if (es == 4) {
                    for (int64_t ix = 0; ix < W; ix++)
                        for (int64_t q = 0; q < s; q++)
                            ((uint32_t *)dst)[ix * s + q] = ((const uint32_t *)src)[ix];
                } else if (es == 8) {
                    for (int64_t ix = 0; ix < W; ix++)
                        for (int64_t q = 0; q < s; q++)
                            ((uint64_t *)dst)[ix * s + q] = ((const uint64_t *)src)[ix];
                } else {
                    for (int64_t ix = 0; ix < W; ix++)
                        for (int64_t q = 0; q < s; q++)
                            ((uint16_t *)dst)[ix * s + q] = ((const uint16_t *)src)[ix];
                }
            } else if (j->dt == HG_DTYPE_F32) {
                UP_ADD_ROW(float)
            } else if (j->dt == HG_DTYPE_F64) {
                UP_ADD_ROW(double)
            } else {
                for (int64_t ix = 0; ix < W; ix++) {
                    float v = hg_half_to_float(((const uint16_t *)src)[ix]);
                    uint16_t *d = (uint16_t *)dst + ix * s;
                    for (int64_t q = 0; q < s; q++)
                        d[q] = hg_float_to_half(hg_half_to_float(d[q]) + v);
                }
            }
        }
    }
}

static hg_status up_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    if (a->v[K_UP_TYPE].i == UP_BILINEAR) {
        const hg_op_def *dop;
        hg_attrs da;
        HG_TRY(up_deconv(a, &dop, &da));
        return dop->forward(dop, &da, ctx, nin, in, nout, out);
    }
    const hg_tensor *y = out[0];
    bool sum = a->v[K_UP_MODE].i == UP_SUM;
    int64_t coff = 0;
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        up_job j = {hg_data(x),  hg_data(y),  x->shape[1],
                    x->shape[2], x->shape[3], y->shape[2] / x->shape[2],
                    y->shape[1], coff,        hg_dtype_size(y->dtype),
                    y->dtype,    sum && i > 0};
        int64_t rows = x->shape[0] * x->shape[1] * x->shape[2];
        int64_t work = j.W * j.s * j.s;
        hg_parallel_for(rows, work > 0 ? HG_GRAIN_ELEMWISE / work + 1 : rows + 1, up_rows, &j);
        if (!sum) coff += x->shape[1];
    }
    return HG_OK;
}

/* _backward_UpSampling(ograd, data_0 .. data_{k-1}) -> k data gradients: each input element
 * receives the sum of the scale x scale block it was copied to (from its own channels in concat
 * mode, from all channels in sum mode). The data inputs give only shapes. Input rows (n, c, y)
 * are independent and split over threads. */

static int up_bw_num_inputs(const hg_attrs *a) { return (int)a->v[K_UP_NUM_ARGS].i + 1; }
static int up_bw_num_outputs(const hg_attrs *a) { return (int)a->v[K_UP_NUM_ARGS].i; }

static hg_status up_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    for (int i = 0; i < nout; i++) out[i].ndim = -1;
    if (a->v[K_UP_TYPE].i == UP_BILINEAR)
        return hg_error(HG_ERR_VALUE,
                        "%s: sample_type='bilinear' differentiates through "
                        "_backward_Deconvolution, not this op",
                        op->name);
    for (int i = 0; i < nin; i++)
        if (in[i].ndim < 0) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta fout = {.ndim = -1};
    HG_TRY(up_infer(op, a, nin - 1, in + 1, 1, &fout));
    if (in[0].dtype != fout.dtype ||
        !hg_shape_equal(in[0].ndim, in[0].shape, fout.ndim, fout.shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: output gradient %s (%s) does not match the "
                        "up-sampled shape %s (%s)",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_dtype_name(in[0].dtype), hg_shape_str(s1, fout.ndim, fout.shape),
                        hg_dtype_name(fout.dtype));
    for (int i = 0; i < nout; i++) out[i] = in[1 + i];
    return HG_OK;
}

typedef struct {
    const void *dy;
    void *dx;
    int64_t C, H, W, s;   /* this input's channels and size, its scale */
    int64_t YC, coff;     /* ograd channels, first ograd channel of this input */
} up_bw_job;

#define UP_BW(T, AT, LD, ST)                                                                    \
    static void up_bw_rows_##T(void *ctx, int64_t begin, int64_t end)                           \
    {                                                                                           \
        const up_bw_job *j = ctx;                                                               \
        const int64_t W = j->W, s = j->s, OW = W * s, OH = j->H * s;                            \
        for (int64_t r = begin; r < end; r++) {                                                 \
            int64_t iy = r % j->H, nc = r / j->H, c = nc % j->C, n = nc / j->C;                 \
            const T *src = (const T *)j->dy + ((n * j->YC + j->coff + c) * OH + iy * s) * OW;   \
            T *dst = (T *)j->dx + r * W;                                                        \
            for (int64_t ix = 0; ix < W; ix++) {                                                \
                AT acc = 0;                                                                     \
                for (int64_t k = 0; k < s; k++) {                                               \
                    const T *q = src + k * OW + ix * s;                                         \
                    for (int64_t m = 0; m < s; m++) acc += LD(q[m]);                            \
                }                                                                               \
                dst[ix] = ST(acc);                                                              \
            }                                                                                   \
        }                                                                                       \
    }
UP_BW(float, float, PAD_ID, PAD_ID)
UP_BW(double, double, PAD_ID, PAD_ID)
UP_BW(uint16_t, float, hg_half_to_float, PAD_F2H)

static hg_status up_bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    const hg_tensor *dy = in[0];
    bool sum = a->v[K_UP_MODE].i == UP_SUM;
    int64_t coff = 0;
    hg_range_fn fn = dy->dtype == HG_DTYPE_F32   ? up_bw_rows_float
                     : dy->dtype == HG_DTYPE_F64 ? up_bw_rows_double
                                                 : up_bw_rows_uint16_t;
    for (int i = 0; i < nout; i++) {
        const hg_tensor *x = out[i];
        up_bw_job j = {hg_data(dy),  hg_data(x),  x->shape[1],
                       x->shape[2],  x->shape[3], dy->shape[2] / x->shape[2],
                       dy->shape[1], coff};
        int64_t rows = x->shape[0] * x->shape[1] * x->shape[2];
        int64_t work = j.W * j.s * j.s;
        hg_parallel_for(rows, work > 0 ? HG_GRAIN_ELEMWISE / work + 1 : rows + 1, fn, &j);
        if (!sum) coff += x->shape[1];
    }
    return HG_OK;
}

static hg_status up_grad(hg_grad_ctx *g)
{
    if (hg_g_attrs(g)->v[K_UP_TYPE].i == UP_BILINEAR) {
        up_deconv_attrs d;
        up_deconv_kv(hg_g_attrs(g), &d);
        hg_sentry dx[2];
        hg_g_opn(g, "_backward_Deconvolution", 2 + 1,
                 (hg_sentry[]){hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)}, d.kv, 2, dx);
        for (int i = 0; i < 2; i++)
            if (hg_g_needs(g, i)) hg_g_set(g, i, dx[i]);
        return hg_g_status(g);
    }
    int k = hg_g_nin(g);
    hg_sentry in[HG_MAX_IO], dx[HG_MAX_IO];
    if (k + 1 > HG_MAX_IO)
        return hg_error(HG_ERR_UNSUPPORTED,
                        "UpSampling: the gradient supports at most %d inputs, "
                        "got %d",
                        HG_MAX_IO - 1, k);
    in[0] = hg_g_ograd(g, 0);
    for (int i = 0; i < k; i++) in[1 + i] = hg_g_in(g, i);
    hg_g_op_fwd_attrs(g, "_backward_UpSampling", k + 1, in, NULL, k, dx);
    for (int i = 0; i < k; i++)
        if (hg_g_needs(g, i)) hg_g_set(g, i, dx[i]);
    return hg_g_status(g);
}

/* _backward_UpSampling is linear in ograd: its adjoint is UpSampling of its output gradients
 * (the data inputs only give shapes and get none). */
static hg_status up_bw_grad(hg_grad_ctx *g)
{
    int k = hg_g_nout(g);
    hg_sentry in[HG_MAX_IO];
    for (int i = 0; i < k && i < HG_MAX_IO; i++) in[i] = hg_g_ograd(g, i);
    hg_sentry y;
    hg_g_op_fwd_attrs(g, "UpSampling", k < HG_MAX_IO ? k : HG_MAX_IO, in, NULL, 1, &y);
    hg_g_set(g, 0, y);
    return hg_g_status(g);
}

/* ---- registry ------------------------------------------------------------------------------- */

const hg_op_def hg_ops_resample[] = {
    {.name = "Pad",
     .aliases = HG_NAMES("pad"),
     .doc = "Pads 4-D or 5-D data on its spatial axes "
            "(constant, edge or reflect mode); pad_width holds (before, after) per axis.",
     .input_names = HG_NAMES("data"),
     .attrs = k_pad_attrs,
     .num_attrs = HG_COUNT(k_pad_attrs),
     .num_inputs = 1,
     .infer = pad_infer,
     .forward = pad_forward,
     .grad = pad_grad},
    {.name = "_backward_Pad",
     .doc = "Gradient of Pad: sums the output gradient back onto the "
            "data's elements.",
     .input_names = HG_NAMES("ograd"),
     .attrs = k_pad_attrs,
     .num_attrs = HG_COUNT(k_pad_attrs),
     .num_inputs = 1,
     .infer = pad_bw_infer,
     .forward = pad_bw_forward,
     .workspace = pad_bw_workspace,
     .grad = pad_bw_grad},
    {.name = "UpSampling",
     .doc = "Up-sampling of 4-D inputs by an integer scale. nearest: several inputs are brought to "
            "the first one's scaled size and concatenated along channels or summed; bilinear: "
            "(data, weight (C, 1, k, k)) as a per-channel Deconvolution with kernel 2s - s%2, "
            "stride s, pad ceil((s-1)/2).",
     .input_names = HG_NAMES("data"),
     .attrs = k_up_attrs,
     .num_attrs = HG_COUNT(k_up_attrs),
     .flags = HG_OP_VARARGS,
     .infer = up_infer,
     .forward = up_forward,
     .workspace = up_workspace,
     .grad = up_grad},
    {.name = "_backward_UpSampling",
     .doc = "Gradient of UpSampling (nearest): one gradient per "
            "data input from (ograd, data_0, ...); num_args counts the data inputs.",
     .input_names = HG_NAMES("ograd"),
     .attrs = k_up_attrs,
     .num_attrs = HG_COUNT(k_up_attrs),
     .flags = HG_OP_VARARGS,
     .get_num_inputs = up_bw_num_inputs,
     .get_num_outputs = up_bw_num_outputs,
     .infer = up_bw_infer,
     .forward = up_bw_forward,
     .grad = up_bw_grad},
    {0},
};
