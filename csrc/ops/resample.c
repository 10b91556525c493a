/* Resampling ops (MXNet 1.x): Pad, UpSampling (nearest) and Deconvolution.
 *
 * Pad and UpSampling move elements without arithmetic (except the UpSampling sum mode), so they
 * copy by element size and serve every float dtype. Deconvolution is the adjoint of Convolution:
 * per image and group cols[F/g*K, I] = W_g^T . x_g (one GEMM), then col2im scatters each column
 * entry into the output window it touches (accumulating where windows overlap).
 *
 * Each op has a gradient rule and a _backward_<Op> kernel next to its forward: Pad's sums the
 * output gradient back onto the copied elements, UpSampling's sums each scale x scale block, and
 * Deconvolution's gathers the output gradient with im2col for both the data gradient (a
 * convolution with the same weight) and the weight gradient.
 */
#include <string.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "../graph/grad.h"
#include "../kernels/cpu/gemm.h"
#include "../kernels/cpu/im2col.h"
#include "conv_common.h"

static const char *tuple_str(char *buf, const hg_tuple *t)
{
    return hg_shape_str(buf, t->n, t->v);
}

static bool is_float(hg_dtype dt)
{
    return dt == HG_DTYPE_F32 || dt == HG_DTYPE_F64 || dt == HG_DTYPE_F16;
}

/* ---- Pad ------------------------------------------------------------------------------------ */

enum { K_PAD_MODE, K_PAD_WIDTH, K_PAD_VALUE };
enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT };

static const char *const k_pad_modes[] = {"constant", "edge", "reflect", NULL};

static const hg_attr_spec k_pad_attrs[] = {
    {"mode", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL, "padding type: constant, edge or reflect",
     k_pad_modes},
    {"pad_width", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "(before, after) pad sizes per axis, "
     "flattened; the first two axes must have 0", NULL},
    {"constant_value", HG_ATTR_FLOAT, 0, "0", "fill value of constant mode", NULL},
};

static hg_status pad_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                           int nout, hg_meta *out)
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
        return hg_error(HG_ERR_VALUE, "Pad: pad_width=%s has %d entries, but data shape %s needs "
                        "%d (2 per axis)", tuple_str(s0, pw), pw->n,
                        hg_shape_str(s1, x->ndim, x->shape), 2 * x->ndim);
    if (x->ndim != 4 && x->ndim != 5)
        return hg_error(HG_ERR_VALUE, "Pad: only 4-D or 5-D data is supported, got data shape %s",
                        hg_shape_str(s0, x->ndim, x->shape));
    if (pw->v[0] != 0 || pw->v[1] != 0 || pw->v[2] != 0 || pw->v[3] != 0)
        return hg_error(HG_ERR_VALUE, "Pad: padding on the first two axes (batch and channel) "
                        "must be zero, got pad_width=%s", tuple_str(s0, pw));
    if (!is_float(x->dtype))
        return hg_error(HG_ERR_TYPE, "Pad: dtype %s is not supported (float16, float32 and "
                        "float64 only)", hg_dtype_name(x->dtype));
    out[0].ndim = x->ndim;
    out[0].dtype = x->dtype;
    for (int i = 0; i < x->ndim; i++) {
        int64_t b = pw->v[2 * i], e = pw->v[2 * i + 1], n = x->shape[i];
        if (b < 0 || e < 0)
            return hg_error(HG_ERR_VALUE, "Pad: pad_width=%s must be non-negative",
                            tuple_str(s0, pw));
        if (n >= 0 && mode == PAD_REFLECT && (b >= n || e >= n) && (b || e))
            return hg_error(HG_ERR_VALUE, "Pad: reflect padding must be smaller than the input "
                            "size: pad_width=%s, data shape %s (axis %d)", tuple_str(s0, pw),
                            hg_shape_str(s1, x->ndim, x->shape), i);
        if (n == 0 && mode == PAD_EDGE && (b || e))
            return hg_error(HG_ERR_VALUE, "Pad: edge padding of an empty axis: pad_width=%s, data "
                            "shape %s (axis %d)", tuple_str(s0, pw),
                            hg_shape_str(s1, x->ndim, x->shape), i);
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
        return hg_error(HG_ERR_VALUE, "%s: pad_width=%s has %d entries, but the output gradient "
                        "%s needs %d (2 per axis)", op->name, tuple_str(s0, pw), pw->n,
                        hg_shape_str(s1, o->ndim, o->shape), 2 * o->ndim);
    hg_meta x = *o, fout = {.ndim = -1};
    for (int i = 0; i < o->ndim; i++) {
        x.shape[i] = o->shape[i] - pw->v[2 * i] - pw->v[2 * i + 1];
        if (x.shape[i] < 0)
            return hg_error(HG_ERR_VALUE, "%s: pad_width=%s is larger than the output gradient "
                            "%s", op->name, tuple_str(s0, pw), hg_shape_str(s1, o->ndim, o->shape));
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

enum { K_UP_SCALE, K_UP_NUM_FILTER, K_UP_TYPE, K_UP_MODE, K_UP_NUM_ARGS, K_UP_WORKSPACE };
enum { UP_NEAREST, UP_BILINEAR };
enum { UP_CONCAT, UP_SUM };

static const char *const k_up_types[] = {"nearest", "bilinear", NULL};
static const char *const k_up_modes[] = {"concat", "sum", NULL};

static const hg_attr_spec k_up_attrs[] = {
    {"scale", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "up-sampling scale", NULL},
    {"num_filter", HG_ATTR_INT, 0, "0", "input filter count (bilinear only)", NULL},
    {"sample_type", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL, "nearest or bilinear", k_up_types},
    {"multi_input_mode", HG_ATTR_ENUM, 0, "concat", "how to combine several inputs: concat "
     "(along channels) or sum", k_up_modes},
    {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of inputs", NULL},
    {"workspace", HG_ATTR_INT, 0, "512", "workspace limit in MB (ignored)", NULL},
};

static hg_status up_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                          int nout, hg_meta *out)
{
    (void)op;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    int64_t scale = a->v[K_UP_SCALE].i;
    if (a->v[K_UP_TYPE].i == UP_BILINEAR)
        return hg_error(HG_ERR_UNSUPPORTED, "UpSampling: sample_type='bilinear' is not supported "
                        "(it needs a deconvolution weight input); use sample_type='nearest'");
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
            return hg_error(HG_ERR_VALUE, "UpSampling: input %d should be 4-D (batch, channel, y, "
                            "x), got shape %s", i, hg_shape_str(s0, x->ndim, x->shape));
        if (x->dtype != x0->dtype)
            return hg_error(HG_ERR_TYPE, "UpSampling: all inputs must have the same dtype, input "
                            "0 is %s and input %d is %s", hg_dtype_name(x0->dtype), i,
                            hg_dtype_name(x->dtype));
        if (x->shape[0] != x0->shape[0])
            return hg_error(HG_ERR_VALUE, "UpSampling: inputs must have the same batch size, "
                            "input 0 has shape %s and input %d has shape %s",
                            hg_shape_str(s0, x0->ndim, x0->shape), i,
                            hg_shape_str(s1, x->ndim, x->shape));
        int64_t h = x->shape[2], w = x->shape[3];
        if (h < 1 || w < 1 || OH % h != 0 || OW % w != 0 || OH / h != OW / w)
            return hg_error(HG_ERR_VALUE, "UpSampling: input %d of shape %s does not divide the "
                            "output size (%lld, %lld) by one integer scale", i,
                            hg_shape_str(s0, x->ndim, x->shape), (long long)OH, (long long)OW);
        if (a->v[K_UP_MODE].i == UP_SUM) {
            if (i > 0 && x->shape[1] != chans)
                return hg_error(HG_ERR_VALUE, "UpSampling: number of channels must be the same "
                                "when multi_input_mode==sum, input 0 has shape %s and input %d "
                                "has shape %s", hg_shape_str(s0, x0->ndim, x0->shape), i,
                                hg_shape_str(s1, x->ndim, x->shape));
            chans = x->shape[1];
        } else {
            chans += x->shape[1];
        }
    }
    if (!is_float(x0->dtype))
        return hg_error(HG_ERR_TYPE, "UpSampling: dtype %s is not supported (float16, float32 "
                        "and float64 only)", hg_dtype_name(x0->dtype));
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

static hg_status up_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                            int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nout;
    const hg_tensor *y = out[0];
    bool sum = a->v[K_UP_MODE].i == UP_SUM;
    int64_t coff = 0;
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        up_job j = {hg_data(x), hg_data(y), x->shape[1], x->shape[2], x->shape[3],
                    y->shape[2] / x->shape[2], y->shape[1], coff, hg_dtype_size(y->dtype),
                    y->dtype, sum && i > 0};
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

static hg_status up_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                             int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    for (int i = 0; i < nout; i++) out[i].ndim = -1;
    for (int i = 0; i < nin; i++)
        if (in[i].ndim < 0) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta fout = {.ndim = -1};
    HG_TRY(up_infer(op, a, nin - 1, in + 1, 1, &fout));
    if (in[0].dtype != fout.dtype ||
        !hg_shape_equal(in[0].ndim, in[0].shape, fout.ndim, fout.shape))
        return hg_error(HG_ERR_VALUE, "%s: output gradient %s (%s) does not match the "
                        "up-sampled shape %s (%s)", op->name,
                        hg_shape_str(s0, in[0].ndim, in[0].shape), hg_dtype_name(in[0].dtype),
                        hg_shape_str(s1, fout.ndim, fout.shape), hg_dtype_name(fout.dtype));
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
        up_bw_job j = {hg_data(dy), hg_data(x), x->shape[1], x->shape[2], x->shape[3],
                       dy->shape[2] / x->shape[2], dy->shape[1], coff};
        int64_t rows = x->shape[0] * x->shape[1] * x->shape[2];
        int64_t work = j.W * j.s * j.s;
        hg_parallel_for(rows, work > 0 ? HG_GRAIN_ELEMWISE / work + 1 : rows + 1, fn, &j);
        if (!sum) coff += x->shape[1];
    }
    return HG_OK;
}

static hg_status up_grad(hg_grad_ctx *g)
{
    int k = hg_g_nin(g);
    hg_sentry in[HG_MAX_IO], dx[HG_MAX_IO];
    if (k + 1 > HG_MAX_IO)
        return hg_error(HG_ERR_UNSUPPORTED, "UpSampling: the gradient supports at most %d inputs, "
                        "got %d", HG_MAX_IO - 1, k);
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

/* ---- Deconvolution -------------------------------------------------------------------------- */

enum {
    K_KERNEL, K_STRIDE, K_DILATE, K_PAD, K_ADJ, K_TARGET, K_NUM_FILTER, K_NUM_GROUP, K_WORKSPACE,
    K_NO_BIAS, K_CUDNN_TUNE, K_CUDNN_OFF, K_LAYOUT
};


/* Deconvolution's schema; _backward_Deconvolution adds the grad_* switches after it. */
#define DECONV_ATTR_SPECS                                                                       \
    {"kernel", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "deconvolution kernel size: (w,), (h, w) " \
     "or (d, h, w)", NULL},                                                                     \
    {"stride", HG_ATTR_TUPLE, 0, "()", "stride per spatial dim; () means 1s", NULL},            \
    {"dilate", HG_ATTR_TUPLE, 0, "()", "dilation per spatial dim; () means 1s", NULL},          \
    {"pad", HG_ATTR_TUPLE, 0, "()", "padding removed from both sides of the output; () means "  \
     "0s", NULL},                                                                               \
    {"adj", HG_ATTR_TUPLE, 0, "()", "extra output size at the end of each spatial dim", NULL},  \
    {"target_shape", HG_ATTR_TUPLE, 0, "()", "output spatial shape: overrides pad and adj",     \
     NULL},                                                                                     \
    {"num_filter", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of output channels", NULL},     \
    {"num_group", HG_ATTR_INT, 0, "1", "number of groups channels are split into", NULL},       \
    {"workspace", HG_ATTR_INT, 0, "512", "workspace limit in MB (ignored on CPU)", NULL},       \
    {"no_bias", HG_ATTR_BOOL, 0, "True", "whether to leave out the bias input", NULL},          \
    {"cudnn_tune", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None", "cuDNN algorithm choice (ignored)",  \
     hg_conv_tune_choices},                                                                     \
    {"cudnn_off", HG_ATTR_BOOL, 0, "False", "turn off cuDNN (ignored)", NULL},                  \
    {"layout", HG_ATTR_ENUM, HG_ATTR_OPTIONAL, "None", "data layout: NCW, NCHW or NCDHW "       \
     "(channel-last layouts are not supported on CPU); None means channel-first",               \
     hg_conv_layout_choices}

static const hg_attr_spec k_deconv_attrs[] = {DECONV_ATTR_SPECS};

enum { K_GRAD_DATA = K_LAYOUT + 1, K_GRAD_WEIGHT };

static const hg_attr_spec k_deconv_bw_attrs[] = {
    DECONV_ATTR_SPECS,
    {"grad_data", HG_ATTR_BOOL, 0, "True", "compute the data gradient (else output 0 is zeros)",
     NULL},
    {"grad_weight", HG_ATTR_BOOL, 0, "True", "compute the weight gradient (else output 1 is "
     "zeros)", NULL},
};

static int deconv_num_inputs(const hg_attrs *a) { return a->v[K_NO_BIAS].b ? 2 : 3; }

/* Geometry normalised to 3 spatial dims (index 0 = depth, 2 = width); p is the effective pad. */
typedef struct deconv_geom {
    int nsp;
    int64_t N, C, F, G;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t Cg, Fg, K, I, P; /* C/G, F/G, prod(k), prod(in), prod(out) */
} deconv_geom;

static bool has_target(const hg_attrs *a)
{
    const hg_tuple *t = &a->v[K_TARGET].t;
    for (int i = 0; i < t->n; i++)
        if (t->v[i] != 0) return true;
    return false;
}

/* Pad, adj and output size of one spatial dim j (of nsp) with input size x (known). MXNet's
 * InferPad: a target shape sets the total pad to full - target, split with the odd unit in adj. */
static void dim_geom(const hg_attrs *a, int j, int64_t x, int64_t *pad, int64_t *adj,
                     int64_t *osz)
{
    int64_t k = a->v[K_KERNEL].t.v[j], s = hg_conv_tuple_at(a, K_STRIDE, j, 1);
    int64_t d = hg_conv_tuple_at(a, K_DILATE, j, 1);
    int64_t full = s * (x - 1) + d * (k - 1) + 1;
    if (has_target(a)) {
        int64_t total = full - a->v[K_TARGET].t.v[j];
        *adj = total % 2;
        *pad = (total + 1) / 2;
    } else {
        *pad = hg_conv_tuple_at(a, K_PAD, j, 0);
        *adj = hg_conv_tuple_at(a, K_ADJ, j, 0);
    }
    *osz = full - 2 * *pad + *adj;
}

static void deconv_geom_full(const hg_attrs *a, const hg_meta *x, deconv_geom *g)
{
    int nsp = a->v[K_KERNEL].t.n, off = 3 - nsp;
    g->nsp = nsp;
    g->N = x->shape[0];
    g->C = x->shape[1];
    g->F = a->v[K_NUM_FILTER].i;
    g->G = a->v[K_NUM_GROUP].i;
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
        g->k[i] = a->v[K_KERNEL].t.v[j];
        g->s[i] = hg_conv_tuple_at(a, K_STRIDE, j, 1);
        g->d[i] = hg_conv_tuple_at(a, K_DILATE, j, 1);
        g->in[i] = x->shape[2 + j];
        dim_geom(a, j, g->in[i], &g->p[i], &adj, &g->out[i]);
        g->K *= g->k[i];
        g->I *= g->in[i];
        g->P *= g->out[i];
    }
}

static const hg_conv_attr_index k_deconv_index = {
    "Deconvolution", K_KERNEL, K_NUM_FILTER, K_NUM_GROUP, K_LAYOUT, 5,
    {K_STRIDE, K_DILATE, K_PAD, K_ADJ, K_TARGET},
    {"stride", "dilate", "pad", "adj", "target_shape"},
    {true, true, false, false, false}};

/* The shared checks, plus Deconvolution's own: adj must stay below the stride. */
static hg_status deconv_check_attrs(const hg_attrs *a)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    HG_TRY(hg_conv_check_attrs(a, &k_deconv_index));
    for (int i = 0; i < a->v[K_KERNEL].t.n; i++)
        if (!has_target(a) &&
            hg_conv_tuple_at(a, K_ADJ, i, 0) >= hg_conv_tuple_at(a, K_STRIDE, i, 1))
            return hg_error(HG_ERR_VALUE, "Deconvolution: adj=%s must be smaller than stride=%s",
                            tuple_str(s0, &a->v[K_ADJ].t), tuple_str(s1, &a->v[K_STRIDE].t));
    return HG_OK;
}

static hg_status deconv_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)op;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    HG_TRY(deconv_check_attrs(a));
    const hg_tuple *kt = &a->v[K_KERNEL].t;
    int nsp = kt->n;
    int64_t F = a->v[K_NUM_FILTER].i, G = a->v[K_NUM_GROUP].i;
    bool has_bias = !a->v[K_NO_BIAS].b;
    hg_meta *x = &in[0], *w = &in[1], *b = has_bias ? &in[2] : NULL;
    hg_dtype dt = x->ndim >= 0 ? x->dtype : (w->ndim >= 0 ? w->dtype : HG_DTYPE_F32);
    if (b && !hg_meta_merge(b, dt, 1, &F))
        return hg_error(HG_ERR_VALUE, "Deconvolution: bias shape %s does not match "
                        "num_filter=%lld: expected [%lld]", hg_shape_str(s0, b->ndim, b->shape),
                        (long long)F, (long long)F);
    if (x->ndim < 0) return HG_OK;
    if (x->ndim != nsp + 2)
        return hg_error(HG_ERR_VALUE, "Deconvolution: data shape %s does not match kernel=%s: "
                        "expected %d dims (batch, channel and %d spatial)",
                        hg_shape_str(s0, x->ndim, x->shape), tuple_str(s1, kt), nsp + 2, nsp);
    if (x->dtype != HG_DTYPE_F32 && x->dtype != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "Deconvolution: dtype %s is not supported (float32 and "
                        "float64 only)", hg_dtype_name(x->dtype));
    if (x->shape[1] < 0 && w->ndim == nsp + 2 && w->shape[0] >= 0) x->shape[1] = w->shape[0];
    int64_t C = x->shape[1];
    if (C >= 0 && C % G != 0)
        return hg_error(HG_ERR_VALUE, "Deconvolution: input channels %lld (data shape %s) must "
                        "be divisible by num_group=%lld", (long long)C,
                        hg_shape_str(s0, x->ndim, x->shape), (long long)G);
    int64_t want_w[5] = {C, F / G};
    for (int i = 0; i < nsp; i++) want_w[2 + i] = kt->v[i];
    if (!hg_meta_merge(w, x->dtype, nsp + 2, want_w))
        return hg_error(HG_ERR_VALUE, "Deconvolution: weight shape %s does not match data shape "
                        "%s with num_filter=%lld, num_group=%lld, kernel=%s: expected %s",
                        hg_shape_str(s0, w->ndim, w->shape), hg_shape_str(s1, x->ndim, x->shape),
                        (long long)F, (long long)G, tuple_str(s2, kt),
                        hg_shape_str(s3, nsp + 2, want_w));
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return hg_error(HG_ERR_TYPE, "Deconvolution: data, weight and bias must have the same "
                        "dtype, got %s, %s and %s", hg_dtype_name(x->dtype),
                        hg_dtype_name(w->dtype), b ? hg_dtype_name(b->dtype) : "(none)");
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
            return hg_error(HG_ERR_VALUE, "Deconvolution: data shape %s has an empty spatial "
                            "dim", hg_shape_str(s0, x->ndim, x->shape));
        dim_geom(a, i, xi, &pad, &adj, &osz);
        if (has_target(a) && (pad < 0 || adj < 0)) /* total pad below 0 */
            return hg_error(HG_ERR_VALUE, "Deconvolution: target_shape=%s is too big for data "
                            "shape %s", tuple_str(s0, &a->v[K_TARGET].t),
                            hg_shape_str(s1, x->ndim, x->shape));
        if (osz < 1)
            return hg_error(HG_ERR_VALUE, "Deconvolution: pad=%s is too large for data shape %s: "
                            "the output size on spatial dim %d is %lld",
                            tuple_str(s0, &a->v[K_PAD].t), hg_shape_str(s1, x->ndim, x->shape),
                            i, (long long)osz);
        o->shape[2 + i] = osz;
        if (I >= 0) I *= xi;
    }
    if (!hg_gemm_fits(K, I, C >= 0 ? C / G : 0))
        return hg_error(HG_ERR_VALUE, "Deconvolution: matrix product of size M=%lld, N=%lld, "
                        "K=%lld is too large: the BLAS takes sizes below 2^31", (long long)K,
                        (long long)I, (long long)(C / G));
    return hg_shape_check(o->ndim, o->shape, o->dtype);
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
    deconv_geom g;
    deconv_geom_full(a, &in[0], &g);
    return hg_dtype_size(in[0].dtype) * (size_t)(g.Fg * g.K * g.I) * (size_t)deconv_slots(&g);
}

#define DECONV_IMPL(T, SUFFIX)                                                                  \
    typedef struct {                                                                            \
        const deconv_geom *g;                                                                   \
        const T *x, *w, *b;                                                                     \
        T *y, *ws;                                                                              \
        int64_t nslots;                                                                         \
    } deconv_job_##SUFFIX;                                                                      \
                                                                                                \
    static void deconv_image_##SUFFIX(const deconv_job_##SUFFIX *j, int64_t n, T *col)          \
    {                                                                                           \
        const deconv_geom *g = j->g;                                                            \
        T *y = j->y + n * g->F * g->P;                                                          \
        for (int64_t f = 0; f < g->F; f++) {                                                    \
            T bv = j->b ? j->b[f] : 0;                                                          \
            T *yr = y + f * g->P;                                                               \
            for (int64_t i = 0; i < g->P; i++) yr[i] = bv;                                      \
        }                                                                                       \
        if (g->Cg == 0) return;                                                                 \
        const hg_im2col_geom cg = deconv_col_geom(g);                                           \
        int64_t M = g->Fg * g->K;                                                               \
        for (int64_t gi = 0; gi < g->G; gi++) {                                                 \
            const T *x = j->x + (n * g->C + gi * g->Cg) * g->I;                                 \
            hg_gemm_##SUFFIX(true, false, M, g->I, g->Cg, 1, j->w + gi * g->Cg * M, M, x,       \
                             g->I, 0, col, g->I);                                               \
            hg_col2im_##SUFFIX(&cg, col, y + gi * g->Fg * g->P);                                \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    static void deconv_slots_##SUFFIX(void *ctx, int64_t begin, int64_t end)                    \
    {                                                                                           \
        const deconv_job_##SUFFIX *j = ctx;                                                     \
        for (int64_t t = begin; t < end; t++) {                                                 \
            T *col = j->ws + t * j->g->Fg * j->g->K * j->g->I;                                  \
            for (int64_t n = t; n < j->g->N; n += j->nslots) deconv_image_##SUFFIX(j, n, col);  \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    static void deconv_##SUFFIX(const deconv_geom *g, const hg_exec_ctx *ctx, const T *x,       \
                                const T *w, const T *b, T *y)                                   \
    {                                                                                           \
        int64_t nslots = deconv_slots(g);                                                       \
        size_t per = sizeof(T) * (size_t)(g->Fg * g->K * g->I);                                 \
        /* Never more slots than the workspace holds (the thread count could have changed). */  \
        if ((size_t)nslots * per > ctx->workspace_bytes) nslots = 1;                            \
        deconv_job_##SUFFIX j = {g, x, w, b, y, (T *)ctx->workspace, nslots};                   \
        if (nslots > 1)                                                                         \
            hg_parallel_for(nslots, 1, deconv_slots_##SUFFIX, &j);                              \
        else                                                                                    \
            deconv_slots_##SUFFIX(&j, 0, 1);                                                    \
    }
DECONV_IMPL(float, f32)
DECONV_IMPL(double, f64)

static hg_status deconv_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)nout;
    hg_meta x = hg_meta_of(in[0]);
    deconv_geom g;
    deconv_geom_full(a, &x, &g);
    const void *bias = nin > 2 ? hg_data(in[2]) : NULL;
    if (g.Cg > 0 && (ctx->workspace == NULL ||
                     ctx->workspace_bytes < hg_dtype_size(x.dtype) * (size_t)(g.Fg * g.K * g.I)))
        return hg_error(HG_ERR_INTERNAL, "Deconvolution: workspace missing or too small");
    if (x.dtype == HG_DTYPE_F32)
        deconv_f32(&g, ctx, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    else
        deconv_f64(&g, ctx, hg_data(in[0]), hg_data(in[1]), bias, hg_data(out[0]));
    return HG_OK;
}

/* _backward_Deconvolution(ograd, data, weight) -> (data grad, weight grad[, bias grad]). The
 * forward scatters W_g^T x_g with col2im, so per image and group, with col = im2col(dy_g) (the
 * output gradient gathered back onto the input's positions, [Fg*K, I]):
 *     dx_g  = W_g[Cg, Fg*K] . col             (a convolution of dy with the same weight)
 *     dW_g += x_g[Cg, I] . col^T
 *     db[f] += sum_p dy[f, p]
 * One im2col serves both products. Slots and partial sums as in _backward_Convolution. */

static hg_status deconv_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    (void)nin;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    bool has_bias = !a->v[K_NO_BIAS].b;
    for (int i = 0; i < nout; i++) out[i].ndim = -1;
    if (in[0].ndim < 0 || in[1].ndim < 0 || in[2].ndim < 0)
        return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    hg_meta fin[3] = {in[1], in[2], {.ndim = -1}}, fout = {.ndim = -1};
    HG_TRY(deconv_infer(op, a, has_bias ? 3 : 2, fin, 1, &fout));
    if (in[0].dtype != fout.dtype ||
        !hg_shape_equal(in[0].ndim, in[0].shape, fout.ndim, fout.shape))
        return hg_error(HG_ERR_VALUE, "%s: output gradient %s (%s) does not match the output "
                        "%s (%s) of data %s", op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_dtype_name(in[0].dtype), hg_shape_str(s1, fout.ndim, fout.shape),
                        hg_dtype_name(fout.dtype), hg_shape_str(s2, in[1].ndim, in[1].shape));
    out[0] = fin[0];
    out[1] = fin[1];
    if (has_bias) out[2] = fin[2];
    return HG_OK;
}

/* Elements of one slot's col buffer, of one slot's partial sums, and of all slot buffers. */
static int64_t dbw_col_elems(const deconv_geom *g) { return g->Fg * g->K * g->I; }

static int64_t dbw_part_elems(const deconv_geom *g, bool grad_w, bool bias)
{
    return (grad_w ? g->C * g->Fg * g->K : 0) + (bias ? g->F : 0);
}

static int64_t dbw_area(const deconv_geom *g, int64_t nslots, bool grad_w, bool bias)
{
    return nslots * dbw_col_elems(g) + (nslots - 1) * dbw_part_elems(g, grad_w, bias);
}

static size_t deconv_bw_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    deconv_geom g;
    deconv_geom_full(a, &in[1], &g);
    return hg_dtype_size(in[1].dtype) *
           (size_t)dbw_area(&g, deconv_slots(&g), a->v[K_GRAD_WEIGHT].b, !a->v[K_NO_BIAS].b);
}

#define DECONV_BW_IMPL(T, SUFFIX)                                                               \
    typedef struct {                                                                            \
        const deconv_geom *g;                                                                   \
        const T *dy, *x, *w;                                                                    \
        T *dx, *dw, *db; /* NULL: not computed */                                               \
        T *ws;                                                                                  \
        int64_t nslots, col_e, part_e;                                                          \
    } deconvbw_job_##SUFFIX;                                                                    \
                                                                                                \
    static void deconvbw_image_##SUFFIX(const deconvbw_job_##SUFFIX *j, int64_t n, T *col,      \
                                        T *dw, T *db)                                           \
    {                                                                                           \
        const deconv_geom *g = j->g;                                                            \
        const hg_im2col_geom cg = deconv_col_geom(g);                                           \
        const int64_t M = g->Fg * g->K;                                                         \
        for (int64_t gi = 0; gi < g->G && (j->dx || dw); gi++) {                                \
            hg_im2col_##SUFFIX(&cg, j->dy + (n * g->F + gi * g->Fg) * g->P, col);               \
            if (j->dx)                                                                          \
                hg_gemm_##SUFFIX(false, false, g->Cg, g->I, M, 1, j->w + gi * g->Cg * M, M,     \
                                 col, g->I, 0, j->dx + (n * g->C + gi * g->Cg) * g->I, g->I);   \
            if (dw)                                                                             \
                hg_gemm_##SUFFIX(false, true, g->Cg, M, g->I, 1,                                \
                                 j->x + (n * g->C + gi * g->Cg) * g->I, g->I, col, g->I, 1,     \
                                 dw + gi * g->Cg * M, M);                                       \
        }                                                                                       \
        if (db)                                                                                 \
            for (int64_t f = 0; f < g->F; f++) {                                                \
                const T *r = j->dy + (n * g->F + f) * g->P;                                     \
                T acc = 0;                                                                      \
                for (int64_t i = 0; i < g->P; i++) acc += r[i];                                 \
                db[f] += acc;                                                                   \
            }                                                                                   \
    }                                                                                           \
                                                                                                \
    static void deconvbw_slots_##SUFFIX(void *ctx, int64_t begin, int64_t end)                  \
    {                                                                                           \
        const deconvbw_job_##SUFFIX *j = ctx;                                                   \
        const deconv_geom *g = j->g;                                                            \
        for (int64_t t = begin; t < end; t++) {                                                 \
            T *col = j->ws + t * j->col_e, *dw = j->dw, *db = j->db;                            \
            if (t > 0) {                                                                        \
                T *part = j->ws + j->nslots * j->col_e + (t - 1) * j->part_e;                   \
                memset(part, 0, sizeof(T) * (size_t)j->part_e);                                 \
                if (dw) {                                                                       \
                    dw = part;                                                                  \
                    part += g->C * g->Fg * g->K;                                                \
                }                                                                               \
                if (db) db = part;                                                              \
            }                                                                                   \
            for (int64_t n = t; n < g->N; n += j->nslots)                                       \
                deconvbw_image_##SUFFIX(j, n, col, dw, db);                                     \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    static void deconvbw_##SUFFIX(const deconv_geom *g, const hg_exec_ctx *ctx, const T *dy,    \
                                  const T *x, const T *w, T *dx, T *dw, T *db)                  \
    {                                                                                           \
        int64_t nslots = deconv_slots(g), nw = g->C * g->Fg * g->K;                             \
        /* Never more slots than the workspace holds (the thread count could have changed). */  \
        if (sizeof(T) * (size_t)dbw_area(g, nslots, dw != NULL, db != NULL) >                   \
            ctx->workspace_bytes)                                                               \
            nslots = 1;                                                                         \
        deconvbw_job_##SUFFIX j = {g, dy, x, w, dx, dw, db, (T *)ctx->workspace, nslots,        \
                                   dbw_col_elems(g), dbw_part_elems(g, dw != NULL, db != NULL)}; \
        if (dw) memset(dw, 0, sizeof(T) * (size_t)nw);                                          \
        if (db) memset(db, 0, sizeof(T) * (size_t)g->F);                                        \
        if (nslots > 1)                                                                         \
            hg_parallel_for(nslots, 1, deconvbw_slots_##SUFFIX, &j);                            \
        else                                                                                    \
            deconvbw_slots_##SUFFIX(&j, 0, 1);                                                  \
        for (int64_t t = 1; t < nslots; t++) {                                                  \
            const T *part = j.ws + nslots * j.col_e + (t - 1) * j.part_e;                       \
            if (dw) {                                                                           \
                for (int64_t i = 0; i < nw; i++) dw[i] += part[i];                              \
                part += nw;                                                                     \
            }                                                                                   \
            if (db)                                                                             \
                for (int64_t f = 0; f < g->F; f++) db[f] += part[f];                            \
        }                                                                                       \
    }
DECONV_BW_IMPL(float, f32)
DECONV_BW_IMPL(double, f64)

static hg_status deconv_bw_forward(const hg_op_def *op, const hg_attrs *a,
                                   const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                   int nout, hg_tensor *const *out)
{
    (void)nin;
    hg_meta x = hg_meta_of(in[1]);
    deconv_geom g;
    deconv_geom_full(a, &x, &g);
    bool gd = a->v[K_GRAD_DATA].b, gw = a->v[K_GRAD_WEIGHT].b, bias = nout > 2;
    if (!gd) memset(hg_data(out[0]), 0, hg_tensor_nbytes(out[0]));
    if (!gw) memset(hg_data(out[1]), 0, hg_tensor_nbytes(out[1]));
    void *dx = gd ? hg_data(out[0]) : NULL, *dw = gw ? hg_data(out[1]) : NULL;
    void *db = bias ? hg_data(out[2]) : NULL;
    if ((dx || dw) && (ctx->workspace == NULL ||
                       ctx->workspace_bytes < hg_dtype_size(x.dtype) * (size_t)dbw_col_elems(&g)))
        return hg_error(HG_ERR_INTERNAL, "%s: workspace missing or too small", op->name);
    if (x.dtype == HG_DTYPE_F32)
        deconvbw_f32(&g, ctx, hg_data(in[0]), hg_data(in[1]), hg_data(in[2]), dx, dw, db);
    else
        deconvbw_f64(&g, ctx, hg_data(in[0]), hg_data(in[1]), hg_data(in[2]), dx, dw, db);
    return HG_OK;
}

static hg_status deconv_grad(hg_grad_ctx *g)
{
    bool bias = !hg_g_attrs(g)->v[K_NO_BIAS].b;
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

const hg_op_def hg_ops_resample[] = {
    {.name = "Pad", .aliases = HG_NAMES("pad"), .doc = "Pads 4-D or 5-D data on its spatial axes "
     "(constant, edge or reflect mode); pad_width holds (before, after) per axis.",
     .input_names = HG_NAMES("data"), .attrs = k_pad_attrs, .num_attrs = HG_COUNT(k_pad_attrs),
     .num_inputs = 1, .infer = pad_infer, .forward = pad_forward, .grad = pad_grad},
    {.name = "_backward_Pad", .doc = "Gradient of Pad: sums the output gradient back onto the "
     "data's elements.", .input_names = HG_NAMES("ograd"), .attrs = k_pad_attrs,
     .num_attrs = HG_COUNT(k_pad_attrs), .num_inputs = 1, .infer = pad_bw_infer,
     .forward = pad_bw_forward, .workspace = pad_bw_workspace, .grad = pad_bw_grad},
    {.name = "UpSampling", .doc = "Nearest-neighbour up-sampling of 4-D inputs by an integer "
     "scale; several inputs are brought to the first one's scaled size and concatenated along "
     "channels or summed.", .input_names = HG_NAMES("data"), .attrs = k_up_attrs,
     .num_attrs = HG_COUNT(k_up_attrs), .flags = HG_OP_VARARGS, .infer = up_infer,
     .forward = up_forward, .grad = up_grad},
    {.name = "_backward_UpSampling", .doc = "Gradient of UpSampling (nearest): one gradient per "
     "data input from (ograd, data_0, ...); num_args counts the data inputs.",
     .input_names = HG_NAMES("ograd"), .attrs = k_up_attrs, .num_attrs = HG_COUNT(k_up_attrs),
     .flags = HG_OP_VARARGS, .get_num_inputs = up_bw_num_inputs,
     .get_num_outputs = up_bw_num_outputs, .infer = up_bw_infer, .forward = up_bw_forward,
     .grad = up_bw_grad},
    {.name = "Deconvolution", .doc = "Transposed convolution (1-D, 2-D, 3-D) of channel-first "
     "data with weight (C, num_filter/num_group, *kernel) and optional bias (num_filter,); out = "
     "s(x-1) + d(k-1) + 1 - 2p + adj per spatial dim.",
     .input_names = HG_NAMES("data", "weight", "bias"), .attrs = k_deconv_attrs,
     .num_attrs = HG_COUNT(k_deconv_attrs), .num_inputs = 3, .get_num_inputs = deconv_num_inputs,
     .infer = deconv_infer, .forward = deconv_forward, .workspace = deconv_workspace,
     .grad = deconv_grad},
    {.name = "_backward_Deconvolution", .doc = "Gradients of Deconvolution: (data, weight[, "
     "bias]) from (ograd, data, weight); grad_data / grad_weight = False skip a part (zeros).",
     .input_names = HG_NAMES("ograd", "data", "weight"), .attrs = k_deconv_bw_attrs,
     .num_attrs = HG_COUNT(k_deconv_bw_attrs), .num_inputs = 3, .num_outputs = 3,
     .get_num_outputs = deconv_num_inputs, .infer = deconv_bw_infer,
     .forward = deconv_bw_forward, .workspace = deconv_bw_workspace},
    {0},
};
