/* The softmax family: softmax / log_softmax / softmin along any axis (with an optional length
 * mask), SoftmaxActivation, and their gradients (_backward_* ops). legacy_output.c's
 * SoftmaxOutput and softmax_cross_entropy reuse the kernels through ops/softmax.h.
 *
 * softmax works on the input viewed as [outer, n, inner] (n = the axis). The last axis
 * (inner == 1) runs row by row over contiguous memory; other axes process blocks of SM_COLS
 * neighbouring columns so the innermost loops stay contiguous. Every row subtracts its maximum
 * before exponentiating, so large inputs do not overflow. float16 is read and written through
 * float; the sum of exponentials is always accumulated in double. softmin is softmax with the
 * scale t = -1 / temperature (the kernels handle a negative t).
 */
#include <string.h>
#include <tgmath.h>

#include "core/parallel.h"
#include "core/rng.h"
#include "graph/grad.h"
#include "kernels/cpu/vmath.h"
#include "ops/ew.h"
#include "ops/ops_util.h"
#include "ops/softmax.h"

typedef uint16_t f16;

/* ---------------------------------------------------------------------------------------------
 * softmax / log_softmax
 */

static const hg_attr_spec k_softmax_attrs[] = {
    [SM_AXIS] = {"axis", HG_ATTR_INT, 0, "-1", "the axis along which to compute softmax", NULL},
    [SM_TEMPERATURE] = {"temperature", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
                        "temperature T: computes softmax(x / T); None means 1", NULL},
    [SM_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",
                  "output dtype (float16, float32 or float64); None: the input's dtype", NULL},
    [SM_USE_LENGTH] = {"use_length", HG_ATTR_BOOL, HG_ATTR_OPTIONAL, "False",
                       "whether the length input masks the data: along axis, only the first length "
                       "entries of each slice take part, the rest are 0",
                       NULL},
};
_Static_assert(HG_COUNT(k_softmax_attrs) == SM_NATTRS, "k_softmax_attrs must match its enum");

static int softmax_num_inputs(const hg_attrs *a)
{
    return (!a->v[SM_USE_LENGTH].is_none && a->v[SM_USE_LENGTH].b) ? 2 : 1;
}

/* The length input of use_length: the data's shape without the axis (a 1-D data gives (1,)),
 * any integer or float dtype (read as an integer count). Fills it when unknown. */
static hg_status softmax_length_infer(const hg_op_def *op, const hg_attrs *a, const hg_meta *x,
                                      hg_meta *len)
{
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR], b3[HG_SHAPE_STR];
    if (len->ndim >= 0 && (len->dtype == HG_DTYPE_BOOL || len->dtype == HG_DTYPE_F16))
        return hg_error(HG_ERR_TYPE, "%s: length must be an integer or float32/64 array, got %s",
                        op->name, hg_dtype_name(len->dtype));
    if (x->ndim < 0) return HG_OK;
    int nd = x->ndim, axis = (int)(a->v[SM_AXIS].i < 0 ? a->v[SM_AXIS].i + nd : a->v[SM_AXIS].i);
    int64_t want[HG_MAX_NDIM] = {1};
    int k = 0;
    for (int d = 0; d < nd; d++)
        if (d != axis) want[k++] = x->shape[d];
    if (k == 0) k = 1;
    hg_dtype dt = len->ndim >= 0 ? len->dtype : HG_DTYPE_I32;
    if (!hg_meta_merge(len, dt, k, want))
        return hg_error(HG_ERR_VALUE,
                        "%s: length must have the data's shape without axis %d, %s for data of "
                        "shape %s, got %s",
                        op->name, axis, hg_shape_str(b1, k, want), hg_shape_str(b2, nd, x->shape),
                        hg_shape_str(b3, len->ndim, len->shape));
    return HG_OK;
}

/* MXNet's log_softmax and softmin take no length input. */
static int softmax_data_only(const hg_attrs *a)
{
    (void)a;
    return 1;
}

static hg_status softmax_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nout;
    if (nin == 1 && softmax_num_inputs(a) == 2)
        return hg_error(HG_ERR_VALUE,
                        "%s: use_length=True needs a length input, which only "
                        "softmax takes",
                        op->name);
    if (!hg_is_float(in[0].dtype))
        return hg_error(HG_ERR_TYPE, "%s: data must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(in[0].dtype));
    hg_dtype odt = in[0].dtype;
    if (!a->v[SM_DTYPE].is_none) {
        odt = (hg_dtype)a->v[SM_DTYPE].i;
        if (!hg_is_float(odt))
            return hg_error(HG_ERR_TYPE, "%s: dtype must be float16, float32 or float64, got %s",
                            op->name, hg_dtype_name(odt));
    }
    if (!a->v[SM_TEMPERATURE].is_none && !(a->v[SM_TEMPERATURE].f != 0))
        return hg_error(HG_ERR_VALUE, "%s: temperature must be non-zero, got %g", op->name,
                        a->v[SM_TEMPERATURE].f);
    out[0] = in[0];
    out[0].dtype = odt;
    if (in[0].ndim < 0) return HG_OK; /* shape unknown yet (graph inference) */
    int64_t axis = a->v[SM_AXIS].i, nd = in[0].ndim;
    if (axis < -nd || axis >= nd || nd == 0) {
        char buf[HG_SHAPE_STR];
        return hg_error(HG_ERR_INDEX, "%s: axis %lld is out of range for data of shape %s",
                        op->name, (long long)axis, hg_shape_str(buf, in[0].ndim, in[0].shape));
    }
    return nin == 2 ? softmax_length_infer(op, a, &in[0], &in[1]) : HG_OK;
}

typedef struct {
    const void *x;
    void *y;
    int64_t n, inner, nblk; /* axis length, elements after the axis, column blocks per outer */
    double t;               /* 1 / temperature */
    bool log;
} sm_job;

#define SM_COLS 64
#define SM_GRAIN 16384 /* elements of work per parallel chunk */

#define LD_f32(p) (p)
#define LD_f64(p) (p)
#define LD_f16(p) hg_half_to_float(p)
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define ST_f16(v) hg_float_to_half((float)(v))

#define sm_exp_tile_float hg_vexp_f32_inplace

static void sm_exp_tile_double(double *e, int64_t w)
{
    for (int64_t c = 0; c < w; c++) e[c] = exp(e[c]);
}

/* Kernels per (input, output, compute) type. The shift is the row's largest x * t: with t < 0
 * that is the smallest x, found as the largest -x. Exponentials go through a stack tile so that
 * the shift, the exp, the stores and the sum (SM_ACC double partial sums) each vectorise. */
#define SM_TILE 256
#define SM_ACC 8
#define SOFTMAX_KERNELS(TI, TO, AT)                                                             \
    static void sm_last_##TI##_##TO(void *ctx, int64_t r0, int64_t r1)                          \
    {                                                                                           \
        const sm_job *j = ctx;                                                                  \
        const int64_t n = j->n;                                                                 \
        const AT t = (AT)j->t, sg = t > 0 ? 1 : -1;                                             \
        AT e[SM_TILE];                                                                          \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const TI *x = (const TI *)j->x + r * n;                                             \
            TO *y = (TO *)j->y + r * n;                                                         \
            AT mp[SM_ACC];                                                                      \
            double acc[SM_ACC];                                                                 \
            for (int k = 0; k < SM_ACC; k++) { mp[k] = LD_##TI(x[0]) * sg; acc[k] = 0; }        \
            int64_t i = 0;                                                                      \
            for (; i + SM_ACC <= n; i += SM_ACC)                                                \
                for (int k = 0; k < SM_ACC; k++) {                                              \
                    AT v = LD_##TI(x[i + k]) * sg;                                              \
                    mp[k] = v > mp[k] ? v : mp[k];                                              \
                }                                                                               \
            for (; i < n; i++) { AT v = LD_##TI(x[i]) * sg; mp[0] = v > mp[0] ? v : mp[0]; }    \
            for (int k = 1; k < SM_ACC; k++) mp[0] = mp[k] > mp[0] ? mp[k] : mp[0];             \
            const AT m = mp[0] * sg;                                                            \
            for (int64_t i0 = 0; i0 < n; i0 += SM_TILE) {                                       \
                const int64_t w = n - i0 < SM_TILE ? n - i0 : SM_TILE;                          \
                for (int64_t c = 0; c < w; c++) e[c] = (LD_##TI(x[i0 + c]) - m) * t;            \
                sm_exp_tile_##AT(e, w);                                                         \
                if (!j->log)                                                                    \
                    for (int64_t c = 0; c < w; c++) y[i0 + c] = ST_##TO(e[c]);                  \
                int64_t c = 0;                                                                  \
                for (; c + SM_ACC <= w; c += SM_ACC)                                            \
                    for (int k = 0; k < SM_ACC; k++) acc[k] += e[c + k];                        \
                for (; c < w; c++) acc[0] += e[c];                                              \
            }                                                                                   \
            double s = 0;                                                                       \
            for (int k = 0; k < SM_ACC; k++) s += acc[k];                                       \
            if (j->log) {                                                                       \
                const AT ls = (AT)log(s);                                                       \
                for (int64_t c = 0; c < n; c++) y[c] = ST_##TO((LD_##TI(x[c]) - m) * t - ls);   \
            } else {                                                                            \
                const AT inv = (AT)(1 / s);                                                     \
                for (int64_t c = 0; c < n; c++) y[c] = ST_##TO(LD_##TO(y[c]) * inv);            \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void sm_mid_##TI##_##TO(void *ctx, int64_t b0, int64_t b1)                           \
    {                                                                                           \
        const sm_job *j = ctx;                                                                  \
        const int64_t n = j->n, inner = j->inner;                                               \
        const AT t = (AT)j->t, sg = t > 0 ? 1 : -1;                                             \
        AT m[SM_COLS], e[SM_COLS];                                                              \
        double s[SM_COLS];                                                                      \
        for (int64_t b = b0; b < b1; b++) {                                                     \
            const int64_t o = b / j->nblk, c0 = (b % j->nblk) * SM_COLS;                        \
            const int64_t w = inner - c0 < SM_COLS ? inner - c0 : SM_COLS;                      \
            const TI *x = (const TI *)j->x + o * n * inner + c0;                                \
            TO *y = (TO *)j->y + o * n * inner + c0;                                            \
            for (int64_t c = 0; c < w; c++) { m[c] = LD_##TI(x[c]) * sg; s[c] = 0; }            \
            for (int64_t k = 1; k < n; k++) {                                                   \
                const TI *xk = x + k * inner;                                                   \
                for (int64_t c = 0; c < w; c++) {                                               \
                    AT v = LD_##TI(xk[c]) * sg;                                                 \
                    m[c] = v > m[c] ? v : m[c];                                                 \
                }                                                                               \
            }                                                                                   \
            for (int64_t c = 0; c < w; c++) m[c] *= sg;                                         \
            for (int64_t k = 0; k < n; k++) {                                                   \
                const TI *xk = x + k * inner;                                                   \
                TO *yk = y + k * inner;                                                         \
                for (int64_t c = 0; c < w; c++) e[c] = (LD_##TI(xk[c]) - m[c]) * t;             \
                sm_exp_tile_##AT(e, w);                                                         \
                for (int64_t c = 0; c < w; c++) s[c] += e[c];                                   \
                if (!j->log)                                                                    \
                    for (int64_t c = 0; c < w; c++) yk[c] = ST_##TO(e[c]);                      \
            }                                                                                   \
            if (j->log) {                                                                       \
                for (int64_t c = 0; c < w; c++) e[c] = (AT)log(s[c]);                           \
                for (int64_t k = 0; k < n; k++) {                                               \
                    const TI *xk = x + k * inner;                                               \
                    TO *yk = y + k * inner;                                                     \
                    for (int64_t c = 0; c < w; c++)                                             \
                        yk[c] = ST_##TO((LD_##TI(xk[c]) - m[c]) * t - e[c]);                    \
                }                                                                               \
            } else {                                                                            \
                for (int64_t c = 0; c < w; c++) e[c] = (AT)(1 / s[c]);                          \
                for (int64_t k = 0; k < n; k++) {                                               \
                    TO *yk = y + k * inner;                                                     \
                    for (int64_t c = 0; c < w; c++) yk[c] = ST_##TO(LD_##TO(yk[c]) * e[c]);     \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

/* Compute in double whenever either side is float64, as MXNet's accumulation type does. */
SOFTMAX_KERNELS(f32, f32, float)
SOFTMAX_KERNELS(f32, f64, double)
SOFTMAX_KERNELS(f32, f16, float)
SOFTMAX_KERNELS(f64, f32, double)
SOFTMAX_KERNELS(f64, f64, double)
SOFTMAX_KERNELS(f64, f16, double)
SOFTMAX_KERNELS(f16, f32, float)
SOFTMAX_KERNELS(f16, f64, double)
SOFTMAX_KERNELS(f16, f16, float)

/* Indexed [input dtype][output dtype]; HG_DTYPE_F32/F64/F16 are 0, 1, 2. */
#define SM_ROW(TI) {sm_last_##TI##_f32, sm_last_##TI##_f64, sm_last_##TI##_f16}
#define SM_MID(TI) {sm_mid_##TI##_f32, sm_mid_##TI##_f64, sm_mid_##TI##_f16}
static const hg_range_fn k_sm_last[3][3] = {SM_ROW(f32), SM_ROW(f64), SM_ROW(f16)};
static const hg_range_fn k_sm_mid[3][3] = {SM_MID(f32), SM_MID(f64), SM_MID(f16)};

/* Which member of the family op is: log_softmax, and the scale t applied to x (1 / temperature,
 * negated for softmin). */
static bool sm_is_log(const hg_op_def *op) { return strstr(op->name, "log_softmax") != NULL; }

static double sm_scale(const hg_op_def *op, const hg_attrs *a)
{
    double t = a->v[SM_TEMPERATURE].is_none ? 1.0 : 1.0 / a->v[SM_TEMPERATURE].f;
    return strstr(op->name, "softmin") ? -t : t;
}

static int sm_axis(const hg_attrs *a, int nd)
{
    return (int)(a->v[SM_AXIS].i < 0 ? a->v[SM_AXIS].i + nd : a->v[SM_AXIS].i);
}

void hg_softmax_view(const hg_tensor *x, hg_tensor *y, int64_t n, int64_t inner, double t, bool log)
{
    if (x->size == 0) return;
    sm_job j = {hg_data(x), hg_data(y), n, inner, 1, t, log};
    int64_t outer = x->size / (n * inner);
    if (j.inner == 1) {
        int64_t grain = SM_GRAIN / j.n + 1;
        hg_parallel_for(outer, grain, k_sm_last[x->dtype][y->dtype], &j);
    } else {
        j.nblk = (j.inner + SM_COLS - 1) / SM_COLS;
        int64_t grain = SM_GRAIN / (j.n * (j.inner < SM_COLS ? j.inner : SM_COLS)) + 1;
        hg_parallel_for(outer * j.nblk, grain, k_sm_mid[x->dtype][y->dtype], &j);
    }
}

/* Any dtype as double (the length input may be integer or float), and float stores. */
static double sm_ld(const hg_tensor *t, int64_t i)
{
    const void *p = hg_data(t);
    switch (t->dtype) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return hg_half_to_float(((const f16 *)p)[i]);
    case HG_DTYPE_U8: return ((const uint8_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static void sm_st(hg_tensor *t, int64_t i, double v)
{
    void *p = hg_data(t);
    if (t->dtype == HG_DTYPE_F32) ((float *)p)[i] = (float)v;
    else if (t->dtype == HG_DTYPE_F64) ((double *)p)[i] = v;
    else ((f16 *)p)[i] = hg_float_to_half((float)v);
}

/* The length-masked forms (use_length): one slice along the axis per work item, computed in
 * double; entries at or past the slice's length are 0 in the output and in the gradient. A
 * length outside [0, n] is clamped to it. */
typedef struct {
    const hg_tensor *a, *b, *len; /* forward: x; backward: dy, y */
    hg_tensor *out;
    int64_t n, inner;
    double t;
    bool log;
} sml_job;

static int64_t sml_len(const sml_job *j, int64_t col)
{
    double l = sm_ld(j->len, col);
    return !(l > 0) ? 0 : l >= (double)j->n ? j->n : (int64_t)l; /* NaN: 0 */
}

static void sml_fwd(void *ctx, int64_t c0, int64_t c1)
{
    const sml_job *j = ctx;
    for (int64_t col = c0; col < c1; col++) {
        const int64_t base = (col / j->inner) * j->n * j->inner + col % j->inner,
                      len = sml_len(j, col);
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < len; k++) {
            double v = sm_ld(j->a, base + k * j->inner) * j->t;
            m = v > m ? v : m;
        }
        for (int64_t k = 0; k < len; k++) s += exp(sm_ld(j->a, base + k * j->inner) * j->t - m);
        for (int64_t k = 0; k < j->n; k++) {
            double v = sm_ld(j->a, base + k * j->inner) * j->t - m;
            sm_st(j->out, base + k * j->inner, k >= len ? 0.0 : j->log ? v - log(s) : exp(v) / s);
        }
    }
}

static void sml_bwd(void *ctx, int64_t c0, int64_t c1)
{
    const sml_job *j = ctx;
    for (int64_t col = c0; col < c1; col++) {
        const int64_t base = (col / j->inner) * j->n * j->inner + col % j->inner,
                      len = sml_len(j, col);
        double s = 0;
        for (int64_t k = 0; k < len; k++) {
            double dy = sm_ld(j->a, base + k * j->inner);
            s += j->log ? dy : dy * sm_ld(j->b, base + k * j->inner);
        }
        for (int64_t k = 0; k < j->n; k++) {
            double dy = sm_ld(j->a, base + k * j->inner), y = sm_ld(j->b, base + k * j->inner);
            double g = j->log ? dy - exp(y) * s : y * (dy - s);
            sm_st(j->out, base + k * j->inner, k >= len ? 0.0 : j->t * g);
        }
    }
}

static void sml_run(hg_range_fn fn, const hg_tensor *a, const hg_tensor *b, const hg_tensor *len,
                    hg_tensor *out, int axis, double t, bool log)
{
    sml_job j = {a, b, len, out, out->shape[axis], 1, t, log};
    for (int d = axis + 1; d < out->ndim; d++) j.inner *= out->shape[d];
    if (j.n == 0 || out->size == 0) return;
    int64_t cols = out->size / j.n;
    hg_parallel_for(cols, SM_GRAIN / (4 * j.n) + 1, fn, &j);
}

/* softmax, log_softmax and softmin. */
static hg_status softmax_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nout;
    hg_tensor *x = in[0], *y = out[0];
    int axis = sm_axis(a, x->ndim);
    if (nin == 2) {
        sml_run(sml_fwd, x, NULL, in[1], y, axis, sm_scale(op, a), sm_is_log(op));
        return HG_OK;
    }
    int64_t inner = 1;
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    hg_softmax_view(x, y, x->shape[axis], inner, sm_scale(op, a), sm_is_log(op));
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * softmax / log_softmax backward. One kernel reads (dy, y) and writes dx, two sweeps over each
 * row (the row's sum, then dx), with t = 1 / temperature:
 *     softmax:      dx = t * y * (dy - sum(dy * y))
 *     log_softmax:  dx = t * (dy - exp(y) * sum(dy))
 * dy and y have the forward output's dtype; when the forward had a dtype attribute the data is a
 * third input whose only use is to give dx the data's dtype.
 */

static bool sm_use_length(const hg_attrs *a)
{
    return !a->v[SM_USE_LENGTH].is_none && a->v[SM_USE_LENGTH].b;
}

/* (ograd, output[, length when use_length][, data when dtype is given]) */
static int softmax_bwd_num_inputs(const hg_attrs *a)
{
    return 2 + sm_use_length(a) + !a->v[SM_DTYPE].is_none;
}

static hg_status softmax_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    (void)nout;
    char b1[HG_SHAPE_STR], b2[HG_SHAPE_STR];
    const int ilen = sm_use_length(a) ? 2 : -1, idata = a->v[SM_DTYPE].is_none ? -1 : nin - 1;
    for (int i = 0; i < nin; i++)
        if (i != ilen && in[i].ndim >= 0 && !hg_is_float(in[i].dtype))
            return hg_error(HG_ERR_TYPE, "%s: input %d must be float16, float32 or float64, got %s",
                            op->name, i, hg_dtype_name(in[i].dtype));
    if (in[0].dtype != in[1].dtype)
        return hg_error(HG_ERR_TYPE, "%s: ograd dtype %s differs from output dtype %s", op->name,
                        hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    out[0] = in[1];
    out[0].dtype = idata >= 0 ? in[idata].dtype : in[1].dtype;
    for (int i = 1; i < nin; i++)
        if (i != ilen && in[0].ndim >= 0 && in[i].ndim >= 0 &&
            !hg_shape_equal(in[0].ndim, in[0].shape, in[i].ndim, in[i].shape))
            return hg_error(HG_ERR_VALUE, "%s: input %d has shape %s, ograd %s", op->name, i,
                            hg_shape_str(b1, in[i].ndim, in[i].shape),
                            hg_shape_str(b2, in[0].ndim, in[0].shape));
    if (in[0].ndim < 0) return HG_OK;
    int64_t axis = a->v[SM_AXIS].i, nd = in[0].ndim;
    if (axis < -nd || axis >= nd || nd == 0)
        return hg_error(HG_ERR_INDEX, "%s: axis %lld is out of range for data of shape %s",
                        op->name, (long long)axis, hg_shape_str(b1, in[0].ndim, in[0].shape));
    return ilen >= 0 ? softmax_length_infer(op, a, &in[0], &in[ilen]) : HG_OK;
}

typedef struct {
    const void *dy, *y;
    void *dx;
    int64_t n, inner, nblk;
    double t;
    bool log;
} smb_job;

/* TI: dtype of dy and y; TO: dtype of dx; AT: compute type. Sums are accumulated in double. */
#define SOFTMAX_BWD_KERNELS(TI, TO, AT)                                                         \
    static void smb_last_##TI##_##TO(void *ctx, int64_t r0, int64_t r1)                         \
    {                                                                                           \
        const smb_job *j = ctx;                                                                 \
        const int64_t n = j->n;                                                                 \
        const AT t = (AT)j->t;                                                                  \
        AT e[SM_TILE];                                                                          \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const TI *dy = (const TI *)j->dy + r * n, *y = (const TI *)j->y + r * n;            \
            TO *dx = (TO *)j->dx + r * n;                                                       \
            double acc[SM_ACC] = {0};                                                           \
            int64_t i = 0;                                                                      \
            if (j->log) {                                                                       \
                for (; i + SM_ACC <= n; i += SM_ACC)                                            \
                    for (int k = 0; k < SM_ACC; k++) acc[k] += LD_##TI(dy[i + k]);              \
                for (; i < n; i++) acc[0] += LD_##TI(dy[i]);                                    \
            } else {                                                                            \
                for (; i + SM_ACC <= n; i += SM_ACC)                                            \
                    for (int k = 0; k < SM_ACC; k++)                                            \
                        acc[k] += (double)(LD_##TI(dy[i + k]) * LD_##TI(y[i + k]));             \
                for (; i < n; i++) acc[0] += (double)(LD_##TI(dy[i]) * LD_##TI(y[i]));          \
            }                                                                                   \
            double s = 0;                                                                       \
            for (int k = 0; k < SM_ACC; k++) s += acc[k];                                       \
            const AT sa = (AT)s;                                                                \
            if (!j->log) {                                                                      \
                for (int64_t c = 0; c < n; c++)                                                 \
                    dx[c] = ST_##TO(t * LD_##TI(y[c]) * (LD_##TI(dy[c]) - sa));                 \
                continue;                                                                       \
            }                                                                                   \
            for (int64_t i0 = 0; i0 < n; i0 += SM_TILE) {                                       \
                const int64_t w = n - i0 < SM_TILE ? n - i0 : SM_TILE;                          \
                for (int64_t c = 0; c < w; c++) e[c] = LD_##TI(y[i0 + c]);                      \
                sm_exp_tile_##AT(e, w);                                                         \
                for (int64_t c = 0; c < w; c++)                                                 \
                    dx[i0 + c] = ST_##TO(t * (LD_##TI(dy[i0 + c]) - e[c] * sa));                \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void smb_mid_##TI##_##TO(void *ctx, int64_t b0, int64_t b1)                          \
    {                                                                                           \
        const smb_job *j = ctx;                                                                 \
        const int64_t n = j->n, inner = j->inner;                                               \
        const AT t = (AT)j->t;                                                                  \
        AT e[SM_COLS], sa[SM_COLS];                                                             \
        double s[SM_COLS];                                                                      \
        for (int64_t b = b0; b < b1; b++) {                                                     \
            const int64_t o = b / j->nblk, c0 = (b % j->nblk) * SM_COLS;                        \
            const int64_t w = inner - c0 < SM_COLS ? inner - c0 : SM_COLS;                      \
            const int64_t base = o * n * inner + c0;                                            \
            const TI *dy = (const TI *)j->dy + base, *y = (const TI *)j->y + base;              \
            TO *dx = (TO *)j->dx + base;                                                        \
            for (int64_t c = 0; c < w; c++) s[c] = 0;                                           \
            for (int64_t k = 0; k < n; k++) {                                                   \
                const TI *dyk = dy + k * inner, *yk = y + k * inner;                            \
                if (j->log)                                                                     \
                    for (int64_t c = 0; c < w; c++) s[c] += LD_##TI(dyk[c]);                    \
                else                                                                            \
                    for (int64_t c = 0; c < w; c++)                                             \
                        s[c] += (double)(LD_##TI(dyk[c]) * LD_##TI(yk[c]));                     \
            }                                                                                   \
            for (int64_t c = 0; c < w; c++) sa[c] = (AT)s[c];                                   \
            for (int64_t k = 0; k < n; k++) {                                                   \
                const TI *dyk = dy + k * inner, *yk = y + k * inner;                            \
                TO *dxk = dx + k * inner;                                                       \
                if (j->log) {                                                                   \
                    for (int64_t c = 0; c < w; c++) e[c] = LD_##TI(yk[c]);                      \
                    sm_exp_tile_##AT(e, w);                                                     \
                    for (int64_t c = 0; c < w; c++)                                             \
                        dxk[c] = ST_##TO(t * (LD_##TI(dyk[c]) - e[c] * sa[c]));                 \
                } else {                                                                        \
                    for (int64_t c = 0; c < w; c++)                                             \
                        dxk[c] = ST_##TO(t * LD_##TI(yk[c]) * (LD_##TI(dyk[c]) - sa[c]));       \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

SOFTMAX_BWD_KERNELS(f32, f32, float)
SOFTMAX_BWD_KERNELS(f32, f64, double)
SOFTMAX_BWD_KERNELS(f32, f16, float)
SOFTMAX_BWD_KERNELS(f64, f32, double)
SOFTMAX_BWD_KERNELS(f64, f64, double)
SOFTMAX_BWD_KERNELS(f64, f16, double)
SOFTMAX_BWD_KERNELS(f16, f32, float)
SOFTMAX_BWD_KERNELS(f16, f64, double)
SOFTMAX_BWD_KERNELS(f16, f16, float)

#define SMB_ROW(TI) {smb_last_##TI##_f32, smb_last_##TI##_f64, smb_last_##TI##_f16}
#define SMB_MID(TI) {smb_mid_##TI##_f32, smb_mid_##TI##_f64, smb_mid_##TI##_f16}
static const hg_range_fn k_smb_last[3][3] = {SMB_ROW(f32), SMB_ROW(f64), SMB_ROW(f16)};
static const hg_range_fn k_smb_mid[3][3] = {SMB_MID(f32), SMB_MID(f64), SMB_MID(f16)};

void hg_softmax_bwd_view(const hg_tensor *dy, const hg_tensor *y, hg_tensor *dx, int64_t n,
                         int64_t inner, double t, bool log)
{
    if (y->size == 0) return;
    smb_job j = {hg_data(dy), hg_data(y), hg_data(dx), n, inner, 1, t, log};
    int64_t outer = y->size / (n * inner);
    if (j.inner == 1) {
        hg_parallel_for(outer, SM_GRAIN / j.n + 1, k_smb_last[y->dtype][dx->dtype], &j);
    } else {
        j.nblk = (j.inner + SM_COLS - 1) / SM_COLS;
        int64_t grain = SM_GRAIN / (j.n * (j.inner < SM_COLS ? j.inner : SM_COLS)) + 1;
        hg_parallel_for(outer * j.nblk, grain, k_smb_mid[y->dtype][dx->dtype], &j);
    }
}

static hg_status softmax_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *y = in[1];
    hg_tensor *dx = out[0];
    int axis = sm_axis(a, y->ndim);
    if (sm_use_length(a)) {
        sml_run(sml_bwd, in[0], y, in[2], dx, axis, sm_scale(op, a), sm_is_log(op));
        return HG_OK;
    }
    int64_t inner = 1;
    for (int d = axis + 1; d < y->ndim; d++) inner *= y->shape[d];
    hg_softmax_bwd_view(in[0], y, dx, y->shape[axis], inner, sm_scale(op, a), sm_is_log(op));
    return HG_OK;
}

/* dx from (dy, y[, length][, data for dx's dtype]) by the matching backward op; the length
 * gets no gradient. */
static hg_status softmax_grad_common(hg_grad_ctx *g, const char *bwd)
{
    const hg_attrs *a = hg_g_attrs(g);
    hg_sentry in[4] = {hg_g_ograd(g, 0), hg_g_out(g, 0)}, dx;
    int nin = 2;
    if (sm_use_length(a)) in[nin++] = hg_g_in(g, 1);
    if (!a->v[SM_DTYPE].is_none) in[nin++] = hg_g_in(g, 0);
    hg_g_op_fwd_attrs(g, bwd, nin, in, NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

static hg_status softmax_grad(hg_grad_ctx *g)
{
    return softmax_grad_common(g, "_backward_softmax");
}

static hg_status log_softmax_grad(hg_grad_ctx *g)
{
    return softmax_grad_common(g, "_backward_log_softmax");
}

static hg_status softmin_grad(hg_grad_ctx *g)
{
    return softmax_grad_common(g, "_backward_softmin");
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxActivation: softmax over the last axis (mode 'instance') or over axis 1 with the
 * trailing axes as independent columns (mode 'channel'). MXNet's own backward always works
 * over axis 1, which differs from the derivative of the 'instance' forward for data of more
 * than 2 dimensions; this one is the derivative of the forward in both modes (equal to
 * MXNet's for 2-D data, the layer's usual input).
 */

static const char *const k_sa_modes[] = {"instance", "channel", NULL};
static const hg_attr_spec k_sa_attrs[] = {
    [SA_MODE] = {"mode", HG_ATTR_ENUM, 0, "instance",
                 "instance: softmax over the last axis; channel: over axis 1", k_sa_modes},
};
_Static_assert(HG_COUNT(k_sa_attrs) == SA_NATTRS, "k_sa_attrs must match its enum");

static hg_status sa_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    char b[HG_SHAPE_STR];
    for (int i = 0; i < nin; i++)
        if (in[i].ndim >= 0 && !hg_is_float(in[i].dtype))
            return hg_error(HG_ERR_TYPE, "%s: input %d must be float16, float32 or float64, got %s",
                            op->name, i, hg_dtype_name(in[i].dtype));
    if (nin == 2 && in[0].ndim >= 0 && in[1].ndim >= 0 &&
        (in[0].dtype != in[1].dtype ||
         !hg_shape_equal(in[0].ndim, in[0].shape, in[1].ndim, in[1].shape)))
        return hg_error(HG_ERR_VALUE, "%s: ograd and output must have the same shape and dtype",
                        op->name);
    out[0] = in[nin - 1];
    if (in[0].ndim < 0) return HG_OK;
    int need = a->v[SA_MODE].i == 1 ? 2 : 1;
    if (in[0].ndim < need)
        return hg_error(HG_ERR_VALUE, "%s: mode '%s' needs data of at least %d dimensions, got %s",
                        op->name, k_sa_modes[a->v[SA_MODE].i], need,
                        hg_shape_str(b, in[0].ndim, in[0].shape));
    return HG_OK;
}

/* The [outer, n, inner] view of the mode. */
static void sa_view(const hg_attrs *a, const hg_tensor *x, int64_t *n, int64_t *inner)
{
    *inner = 1;
    if (a->v[SA_MODE].i == 0) {
        *n = x->shape[x->ndim - 1];
        return;
    }
    *n = x->shape[1];
    for (int d = 2; d < x->ndim; d++) *inner *= x->shape[d];
}

static hg_status sa_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t n, inner;
    sa_view(a, in[0], &n, &inner);
    hg_softmax_view(in[0], out[0], n, inner, 1.0, false);
    return HG_OK;
}

static hg_status sa_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    int64_t n, inner;
    sa_view(a, in[1], &n, &inner);
    hg_softmax_bwd_view(in[0], in[1], out[0], n, inner, 1.0, false);
    return HG_OK;
}

static hg_status sa_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_SoftmaxActivation", HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 0)),
                      NULL, 1, &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

#define SM_DEF(NAME, DOC, GRAD, INPUTS, NUM_INPUTS)                                             \
    {.name = NAME,                                                                              \
     .doc = DOC,                                                                                \
     .input_names = INPUTS,                                                                     \
     .attrs = k_softmax_attrs,                                                                  \
     .num_attrs = HG_COUNT(k_softmax_attrs),                                                    \
     .num_inputs = 2,                                                                           \
     .num_outputs = 1,                                                                          \
     .get_num_inputs = NUM_INPUTS,                                                              \
     .infer = softmax_infer,                                                                    \
     .forward = softmax_forward,                                                                \
     .grad = GRAD}
#define SM_BWD_DEF(NAME, DOC)                                                                   \
    {.name = NAME,                                                                              \
     .doc = DOC,                                                                                \
     .input_names = HG_NAMES("ograd", "output", "length_or_data", "data"),                      \
     .attrs = k_softmax_attrs,                                                                  \
     .num_attrs = HG_COUNT(k_softmax_attrs),                                                    \
     .num_inputs = 4,                                                                           \
     .num_outputs = 1,                                                                          \
     .get_num_inputs = softmax_bwd_num_inputs,                                                  \
     .infer = softmax_bwd_infer,                                                                \
     .forward = softmax_bwd_forward}

const hg_op_def hg_ops_softmax[] = {
    SM_DEF("softmax", "softmax(x / temperature) along axis (numerically stable)", softmax_grad,
           HG_NAMES("data", "length"), softmax_num_inputs),
    SM_DEF("log_softmax", "log(softmax(x / temperature)) along axis", log_softmax_grad,
           HG_NAMES("data"), softmax_data_only),
    SM_DEF("softmin", "softmax(-x / temperature) along axis", softmin_grad, HG_NAMES("data"),
           softmax_data_only),
    SM_BWD_DEF("_backward_softmax",
               "gradient of softmax: t * y * (dy - sum(dy * y)) along axis (t = 1 / temperature)"),
    SM_BWD_DEF("_backward_log_softmax",
               "gradient of log_softmax: t * (dy - exp(y) * sum(dy)) along axis"),
    SM_BWD_DEF("_backward_softmin", "gradient of softmin: -t * y * (dy - sum(dy * y)) along axis"),
    {.name = "SoftmaxActivation",
     .doc = "softmax over the last axis (mode instance) or axis 1 (mode channel)",
     .input_names = HG_NAMES("data"),
     .attrs = k_sa_attrs,
     .num_attrs = HG_COUNT(k_sa_attrs),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = sa_infer,
     .forward = sa_forward,
     .grad = sa_grad},
    {.name = "_backward_SoftmaxActivation",
     .doc = "gradient of SoftmaxActivation: y * (dy - sum(dy * y)) over the mode's axis",
     .input_names = HG_NAMES("ograd", "output"),
     .attrs = k_sa_attrs,
     .num_attrs = HG_COUNT(k_sa_attrs),
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = sa_infer,
     .forward = sa_bwd_forward},
    {0},
};
