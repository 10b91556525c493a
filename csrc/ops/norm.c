/* Normalisation ops (MXNet 1.x): BatchNorm, LayerNorm, InstanceNorm, GroupNorm, and their
 * gradients (_backward_* ops that return the data, gamma and beta gradients in one sweep).
 *
 * SyncBatchNorm (contrib) is BatchNorm on one CPU device, its third output the variance.
 *
 * Statistics are accumulated in double (two passes: mean, then the centred sum of squares, which
 * avoids the cancellation of E[x^2] - E[x]^2). All variances are biased (divide by the count).
 *
 * BatchNorm views the data as [outer, C, inner] with C = shape[axis]; statistics are per channel,
 * so the stats pass is split over channels and the output pass over (outer, channel) rows.
 * Training (is_train and not use_global_stats) normalises with the batch statistics. As in
 * MXNet 1.9.1's CPU kernel (checked by the conformance fixtures, docs/compat.md) the moving
 * statistics are updated by the backward op, _backward_BatchNorm, which receives moving_mean /
 * moving_var as inputs it mutates: moving = moving * momentum + batch * (1 - momentum), with
 * the biased batch variance recovered from the forward's inverse std (1 / inv^2 - eps, MXNet's
 * INVSTD_TO_VARIANCE). So a forward-only pass, even in training mode, leaves them unchanged, and
 * a training step (forward + backward) updates them exactly once however the backward graph is
 * scheduled. An empty batch leaves them.
 *
 * When the inner extent is small (channel-last data) the per-channel walk would stride through
 * memory, so the statistics are gathered instead as partial sums over chunks of the outer axis.
 *
 * LayerNorm, InstanceNorm and GroupNorm share one contiguous row kernel: InstanceNorm normalises
 * rows of (N*C, spatial), GroupNorm rows of (N*G, C/G*spatial), LayerNorm over the last axis rows
 * of (outer, R); gamma/beta are indexed per row (channel resp. group) or, for LayerNorm, per
 * element. LayerNorm over an inner axis ([outer, R, inner], inner > 1) sweeps blocks of inner
 * positions along R instead, so memory is still read contiguously. Their backward kernels follow
 * the same layouts; gamma and beta gradients are summed per chunk of rows into partial sums that
 * are added in a fixed order, so results do not depend on the thread count.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/half.h"
#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/norm.h"

static const hg_attr_spec k_bn_attrs[] = {
    [BN_EPS] = {"eps", HG_ATTR_FLOAT, 0, "0.001", "added to the variance before the square root",
                NULL},
    [BN_MOMENTUM] = {"momentum", HG_ATTR_FLOAT, 0, "0.9",
                     "running-average momentum of the moving statistics", NULL},
    [BN_FIX_GAMMA] = {"fix_gamma", HG_ATTR_BOOL, 0, "True", "treat gamma as 1", NULL},
    [BN_USE_GLOBAL] = {"use_global_stats", HG_ATTR_BOOL, 0, "False",
                       "use moving_mean / moving_var in training too (no batch statistics)", NULL},
    [BN_OUTPUT_MEAN_VAR] = {"output_mean_var", HG_ATTR_BOOL, 0, "False",
                            "also return the mean and the inverse standard deviation", NULL},
    [BN_AXIS] = {"axis", HG_ATTR_INT, 0, "1", "the channel axis", NULL},
    [BN_CUDNN_OFF] = {"cudnn_off", HG_ATTR_BOOL, 0, "False",
                      "accepted for compatibility; no effect on CPU", NULL},
    [BN_MIN_CALIB] = {"min_calib_range", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
                      "quantisation calibration (accepted, unused)", NULL},
    [BN_MAX_CALIB] = {"max_calib_range", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
                      "quantisation calibration (accepted, unused)", NULL},
};
_Static_assert(HG_COUNT(k_bn_attrs) == BN_NATTRS, "k_bn_attrs must match its enum");

static const hg_attr_spec k_ln_attrs[] = {
    [LN_AXIS] = {"axis", HG_ATTR_INT, 0, "-1", "the axis to normalise over", NULL},
    [LN_EPS] = {"eps", HG_ATTR_FLOAT, 0, "1e-05", "added to the variance before the square root",
                NULL},
    [LN_OUTPUT_MEAN_VAR] = {"output_mean_var", HG_ATTR_BOOL, 0, "False",
                            "also return the mean and the std", NULL},
};
_Static_assert(HG_COUNT(k_ln_attrs) == LN_NATTRS, "k_ln_attrs must match its enum");

static const hg_attr_spec k_in_attrs[] = {
    [IN_EPS] = {"eps", HG_ATTR_FLOAT, 0, "0.001", "added to the variance before the square root",
                NULL},
};
_Static_assert(HG_COUNT(k_in_attrs) == IN_NATTRS, "k_in_attrs must match its enum");

static const hg_attr_spec k_gn_attrs[] = {
    [GN_NUM_GROUPS] = {"num_groups", HG_ATTR_INT, 0, "1", "number of channel groups", NULL},
    [GN_EPS] = {"eps", HG_ATTR_FLOAT, 0, "1e-05", "added to the variance before the square root",
                NULL},
    [GN_OUTPUT_MEAN_VAR] = {"output_mean_var", HG_ATTR_BOOL, 0, "False",
                            "also return the mean and the std", NULL},
};
_Static_assert(HG_COUNT(k_gn_attrs) == GN_NATTRS, "k_gn_attrs must match its enum");

/* output_mean_var=True shows the statistics outputs too (mean and inverse std for BatchNorm,
 * mean and std for LayerNorm / GroupNorm), as MXNet does. */
static int bn_visible(const hg_attrs *a) { return a->v[BN_OUTPUT_MEAN_VAR].b ? 3 : 1; }
static int ln_visible(const hg_attrs *a) { return a->v[LN_OUTPUT_MEAN_VAR].b ? 3 : 1; }
static int gn_visible(const hg_attrs *a) { return a->v[GN_OUTPUT_MEAN_VAR].b ? 3 : 1; }

/* ---------------------------------------------------------------------------------------------
 * Shape inference helpers
 */

/* LayerNorm and GroupNorm also take float16 (as MXNet's CPU build), computed in float32. */
static hg_status check_float16ok(const hg_op_def *op, hg_dtype dt)
{
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64 && dt != HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE, "%s: data must be float16, float32 or float64, got %s",
                        op->name, hg_dtype_name(dt));
    return HG_OK;
}

static hg_status check_float(const hg_op_def *op, hg_dtype dt)
{
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: data must be float32 or float64, got %s", op->name,
                        hg_dtype_name(dt));
    return HG_OK;
}

/* Fills / checks the parameter inputs in[first..nin) as 1-D of length n (-1: unknown). */
static hg_status infer_params(const hg_op_def *op, int nin, hg_meta *in, int first, int64_t n,
                              const char *what)
{
    static const char *const bn_names[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    for (int i = first; i < nin; i++) {
        if (!hg_meta_merge(&in[i], in[0].dtype, 1, &n))
            return hg_error(HG_ERR_VALUE,
                            "%s: %s shape %s does not match data shape %s: "
                            "expected [%lld] (%s)",
                            op->name, bn_names[i], hg_shape_str(s0, in[i].ndim, in[i].shape),
                            hg_shape_str(s1, in[0].ndim, in[0].shape), (long long)n, what);
        if (in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "%s: %s dtype %s does not match data dtype %s", op->name,
                            bn_names[i], hg_dtype_name(in[i].dtype), hg_dtype_name(in[0].dtype));
    }
    return HG_OK;
}

static hg_status norm_axis(const hg_op_def *op, int64_t axis, const hg_meta *x, int *out)
{
    char s0[HG_SHAPE_STR];
    if (axis < -x->ndim || axis >= x->ndim)
        return hg_error(HG_ERR_VALUE, "%s: axis %lld is out of range for data of shape %s",
                        op->name, (long long)axis, hg_shape_str(s0, x->ndim, x->shape));
    *out = (int)(axis < 0 ? axis + x->ndim : axis);
    return HG_OK;
}

static hg_status check_eps(const hg_op_def *op, double eps)
{
    if (!(eps >= 0))
        return hg_error(HG_ERR_VALUE, "%s: eps must be non-negative, got %g", op->name, eps);
    return HG_OK;
}

static void set_meta(hg_meta *m, hg_dtype dt, int nd, const int64_t *shape)
{
    m->ndim = nd;
    m->dtype = dt;
    if (nd > 0) memcpy(m->shape, shape, sizeof(int64_t) * (size_t)nd);
}

static int64_t prod(const int64_t *s, int b, int e)
{
    int64_t p = 1;
    for (int i = b; i < e; i++) p *= s[i];
    return p;
}

/* BatchNorm / LayerNorm: float data of at least 1 dim, the normalised axis, and its size
 * (an unknown size comes back from a known 1-D parameter). */
static hg_status data_axis(const hg_op_def *op, int64_t axis, int nin, hg_meta *in, int *ax,
                           int64_t *size, bool f16)
{
    char s0[HG_SHAPE_STR];
    HG_TRY(f16 ? check_float16ok(op, in[0].dtype) : check_float(op, in[0].dtype));
    if (in[0].ndim < 1)
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 1 dim, got shape %s", op->name,
                        hg_shape_str(s0, in[0].ndim, in[0].shape));
    HG_TRY(norm_axis(op, axis, &in[0], ax));
    *size = in[0].shape[*ax];
    for (int i = 1; i < nin && *size < 0; i++)
        if (in[i].ndim == 1 && in[i].shape[0] >= 0) *size = in[0].shape[*ax] = in[i].shape[0];
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * BatchNorm
 */

static hg_status bn_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    HG_TRY(check_eps(op, a->v[BN_EPS].f));
    if (in[0].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    int ax = 0;
    int64_t C;
    HG_TRY(data_axis(op, a->v[BN_AXIS].i, nin, in, &ax, &C, false));
    HG_TRY(infer_params(op, nin, in, 1, C, "one value per channel on the axis"));
    set_meta(&out[0], in[0].dtype, in[0].ndim, in[0].shape);
    set_meta(&out[1], in[0].dtype, 1, &C);
    set_meta(&out[2], in[0].dtype, 1, &C);
    return HG_OK;
}

typedef struct {
    const void *x, *gamma, *beta, *rmean, *rvar;
    void *y, *mean, *var;
    double *scale, *shift;   /* per channel: y = x * scale + shift */
    double *part;            /* chunked statistics: nchunk x C partial sums */
    const double *cmean;     /* chunked statistics: the mean, for the second pass */
    int64_t O, C, I, nchunk;
    double eps;
    bool batch_stats, fix_gamma;
} bn_job;

/* The `var` output holds the inverse standard deviation 1 / sqrt(var + eps), as MXNet's CPU
 * kernel (its docs: output_mean_var gives the mean and "the inverse of data_var"); the backward
 * recovers the variance from it. Batch statistics with zero variance and eps = 0 give 0, not inf
 * (MXNet: "nobody likes to divide by zero"); moving statistics are used as they are. */
static double bn_invstd(double var, double eps, bool batch)
{
    if (batch && var == 0 && eps == 0) return 0;
    return 1.0 / sqrt(var + eps);
}

/* Row sums of float32 data for the BatchNorm statistics and its backward's sums: eight-lane
 * float partial sums (four vectors in flight), added into a double every BN_FLUSH elements. A
 * plain double accumulator is one dependent add per element (about 4 cycles): it made a
 * training BatchNorm of 16x96x112x112 take 28 ms, 3x a copy of the data. Float lanes over at
 * most BN_FLUSH / 8 elements each keep the statistics within float rounding of the double
 * sums. Compiled for AVX2 and baseline x86-64, picked at run time. */
typedef float bn_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define BN_LD(p) (*(const bn_v8 *)(p))
#define BN_FLUSH 4096

/* by pointer: a 32-byte vector argument would change the ABI between the AVX2 and the
 * baseline callers (GCC's -Wpsabi) */
static double bn_hsum(const bn_v8 *a)
{
    double t = 0;
    for (int k = 0; k < 8; k++) t += (*a)[k];
    return t;
}

#define BN_ROW_KERNELS(ISA, TGT)                                                                \
    /* sum of p[0, n) */                                                                        \
    TGT static double bn_rsum_##ISA(const float *p, int64_t n)                                  \
    {                                                                                           \
        double tot = 0;                                                                         \
        for (int64_t i = 0; i < n;) {                                                           \
            const int64_t e = n - i > BN_FLUSH ? i + BN_FLUSH : n;                              \
            bn_v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                       \
            for (; i + 32 <= e; i += 32) {                                                      \
                a0 += BN_LD(p + i);                                                             \
                a1 += BN_LD(p + i + 8);                                                         \
                a2 += BN_LD(p + i + 16);                                                        \
                a3 += BN_LD(p + i + 24);                                                        \
            }                                                                                   \
            for (; i + 8 <= e; i += 8) a0 += BN_LD(p + i);                                      \
            const bn_v8 a = (a0 + a1) + (a2 + a3);                                              \
            double t = bn_hsum(&a);                                                             \
            for (; i < e; i++) t += p[i];                                                       \
            tot += t;                                                                           \
        }                                                                                       \
        return tot;                                                                             \
    }                                                                                           \
    /* sum of (p - m)^2 */                                                                      \
    TGT static double bn_rsq_##ISA(const float *p, int64_t n, float m)                          \
    {                                                                                           \
        double tot = 0;                                                                         \
        const bn_v8 mv = {m, m, m, m, m, m, m, m};                                              \
        for (int64_t i = 0; i < n;) {                                                           \
            const int64_t e = n - i > BN_FLUSH ? i + BN_FLUSH : n;                              \
            bn_v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                       \
            for (; i + 32 <= e; i += 32) {                                                      \
                bn_v8 d0 = BN_LD(p + i) - mv, d1 = BN_LD(p + i + 8) - mv;                       \
                bn_v8 d2 = BN_LD(p + i + 16) - mv, d3 = BN_LD(p + i + 24) - mv;                 \
                a0 += d0 * d0;                                                                  \
                a1 += d1 * d1;                                                                  \
                a2 += d2 * d2;                                                                  \
                a3 += d3 * d3;                                                                  \
            }                                                                                   \
            for (; i + 8 <= e; i += 8) {                                                        \
                bn_v8 d0 = BN_LD(p + i) - mv;                                                   \
                a0 += d0 * d0;                                                                  \
            }                                                                                   \
            const bn_v8 a = (a0 + a1) + (a2 + a3);                                              \
            double t = bn_hsum(&a);                                                             \
            for (; i < e; i++) t += (double)(p[i] - m) * (double)(p[i] - m);                    \
            tot += t;                                                                           \
        }                                                                                       \
        return tot;                                                                             \
    }                                                                                           \
    /* *s += sum of q, *d += sum of q * (p - m) */                                              \
    TGT static void bn_rsum2_##ISA(const float *q, const float *p, int64_t n, float m,          \
                                   double *s, double *d)                                        \
    {                                                                                           \
        const bn_v8 mv = {m, m, m, m, m, m, m, m};                                              \
        for (int64_t i = 0; i < n;) {                                                           \
            const int64_t e = n - i > BN_FLUSH ? i + BN_FLUSH : n;                              \
            bn_v8 s0 = {0}, s1 = {0}, d0 = {0}, d1 = {0};                                       \
            for (; i + 16 <= e; i += 16) {                                                      \
                bn_v8 q0 = BN_LD(q + i), q1 = BN_LD(q + i + 8);                                 \
                s0 += q0;                                                                       \
                s1 += q1;                                                                       \
                d0 += q0 * (BN_LD(p + i) - mv);                                                 \
                d1 += q1 * (BN_LD(p + i + 8) - mv);                                             \
            }                                                                                   \
            const bn_v8 sv = s0 + s1, dv = d0 + d1;                                             \
            double ts = bn_hsum(&sv), td = bn_hsum(&dv);                                        \
            for (; i < e; i++) {                                                                \
                ts += q[i];                                                                     \
                td += (double)q[i] * (double)(p[i] - m);                                        \
            }                                                                                   \
            *s += ts;                                                                           \
            *d += td;                                                                           \
        }                                                                                       \
    }

BN_ROW_KERNELS(base, )
#if defined(__x86_64__) && defined(__GNUC__)
#define BN_HAVE_AVX2 1
BN_ROW_KERNELS(avx2, __attribute__((target("avx2,fma"))))
#endif

static bool bn_avx2(void)
{
#ifdef BN_HAVE_AVX2
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

static double bn_rsum_f32(const float *p, int64_t n)
{
#ifdef BN_HAVE_AVX2
    if (bn_avx2()) return bn_rsum_avx2(p, n);
#endif
    return bn_rsum_base(p, n);
}

static double bn_rsq_f32(const float *p, int64_t n, float m)
{
#ifdef BN_HAVE_AVX2
    if (bn_avx2()) return bn_rsq_avx2(p, n, m);
#endif
    return bn_rsq_base(p, n, m);
}

static void bn_rsum2_f32(const float *q, const float *p, int64_t n, float m, double *s, double *d)
{
#ifdef BN_HAVE_AVX2
    if (bn_avx2()) {
        bn_rsum2_avx2(q, p, n, m, s, d);
        return;
    }
#endif
    bn_rsum2_base(q, p, n, m, s, d);
}

/* The same for float64: plain double loops. */
static double bn_rsum_f64(const double *p, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += p[i];
    return s;
}

static double bn_rsq_f64(const double *p, int64_t n, double m)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (p[i] - m) * (p[i] - m);
    return s;
}

static void bn_rsum2_f64(const double *q, const double *p, int64_t n, double m, double *s,
                         double *d)
{
    double ts = 0, td = 0;
    for (int64_t i = 0; i < n; i++) {
        ts += q[i];
        td += q[i] * (p[i] - m);
    }
    *s += ts;
    *d += td;
}

/* Statistics in float32 are centred on the float-rounded mean mt: sum (x - m)^2 = sum (x - mt)^2
 * - n (m - mt)^2, whose last term is below double rounding here, so it is dropped. */
#define BN_KERNELS(T)                                                                           \
    static void bn_stats_##T(void *ctx, int64_t c0, int64_t c1)                                 \
    {                                                                                           \
        const bn_job *j = ctx;                                                                  \
        const T *x = j->x;                                                                      \
        const int64_t O = j->O, C = j->C, I = j->I, n = O * I;                                  \
        for (int64_t c = c0; c < c1; c++) {                                                     \
            double m, v;                                                                        \
            if (j->batch_stats) {                                                               \
                double s = 0;                                                                   \
                for (int64_t o = 0; o < O; o++) s += bn_rsum_##T(x + (o * C + c) * I, I);       \
                m = n > 0 ? s / (double)n : 0.0;                                                \
                double q = 0;                                                                   \
                for (int64_t o = 0; o < O; o++) q += bn_rsq_##T(x + (o * C + c) * I, I, (T)m);  \
                v = n > 0 ? q / (double)n : 0.0;                                                \
            } else {                                                                            \
                m = ((const T *)j->rmean)[c];                                                   \
                v = ((const T *)j->rvar)[c];                                                    \
            }                                                                                   \
            const double inv = bn_invstd(v, j->eps, j->batch_stats);                            \
            ((T *)j->mean)[c] = (T)m;                                                           \
            ((T *)j->var)[c] = (T)inv;                                                          \
            double g = j->fix_gamma ? 1.0 : (double)((const T *)j->gamma)[c];                   \
            double sc = g * inv;                                                                \
            j->scale[c] = sc;                                                                   \
            j->shift[c] = (double)((const T *)j->beta)[c] - m * sc;                             \
        }                                                                                       \
    }                                                                                           \
    static void bn_apply_##T(void *ctx, int64_t r0, int64_t r1)                                 \
    {                                                                                           \
        const bn_job *j = ctx;                                                                  \
        const int64_t C = j->C, I = j->I;                                                       \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *p = (const T *)j->x + r * I;                                               \
            T *q = (T *)j->y + r * I;                                                           \
            const int64_t c = r % C;                                                            \
            const T sc = (T)j->scale[c], sh = (T)j->shift[c];                                   \
            for (int64_t i = 0; i < I; i++) q[i] = p[i] * sc + sh;                              \
        }                                                                                       \
    }                                                                                           \
    /* inner == 1 (channel-last): rows of C channels, contiguous. */                            \
    static void bn_apply_last_##T(void *ctx, int64_t o0, int64_t o1)                            \
    {                                                                                           \
        const bn_job *j = ctx;                                                                  \
        const int64_t C = j->C;                                                                 \
        for (int64_t o = o0; o < o1; o++) {                                                     \
            const T *p = (const T *)j->x + o * C;                                               \
            T *q = (T *)j->y + o * C;                                                           \
            for (int64_t c = 0; c < C; c++)                                                     \
                q[c] = (T)(p[c] * j->scale[c] + j->shift[c]);                                   \
        }                                                                                       \
    }

typedef float f32;
typedef double f64;
BN_KERNELS(f32)
BN_KERNELS(f64)

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* Batch statistics when the inner extent is small (channel-last data): a per-channel walk would
 * stride through memory, so the outer axis is split into chunks that each sweep their rows
 * contiguously into nchunk x C partial sums (pass 1: sums, pass 2: centred squares). */
#define BN_CHUNK_KERNELS(T)                                                                     \
    static void bn_chunk_##T(void *ctx, int64_t k0, int64_t k1)                                 \
    {                                                                                           \
        const bn_job *j = ctx;                                                                  \
        const int64_t O = j->O, C = j->C, I = j->I;                                             \
        for (int64_t k = k0; k < k1; k++) {                                                     \
            double *acc = j->part + k * C;                                                      \
            for (int64_t c = 0; c < C; c++) acc[c] = 0;                                         \
            const int64_t o0 = O * k / j->nchunk, o1 = O * (k + 1) / j->nchunk;                 \
            for (int64_t o = o0; o < o1; o++) {                                                 \
                const T *p = (const T *)j->x + o * C * I;                                       \
                if (I == 1 && j->cmean) {                                                       \
                    for (int64_t c = 0; c < C; c++) {                                           \
                        double d = p[c] - j->cmean[c];                                          \
                        acc[c] += d * d;                                                        \
                    }                                                                           \
                } else if (I == 1) {                                                            \
                    for (int64_t c = 0; c < C; c++) acc[c] += p[c];                             \
                } else {                                                                        \
                    for (int64_t c = 0; c < C; c++) {                                           \
                        const double m = j->cmean ? j->cmean[c] : 0.0;                          \
                        double t = 0;                                                           \
                        for (int64_t i = 0; i < I; i++) {                                       \
                            double d = p[c * I + i] - m;                                        \
                            t += j->cmean ? d * d : d;                                          \
                        }                                                                       \
                        acc[c] += t;                                                            \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

BN_CHUNK_KERNELS(f32)
BN_CHUNK_KERNELS(f64)

#define BN_CHUNK_INNER 64   /* inner extents below this use the chunked statistics */
#define BN_MAX_CHUNKS 64

/* Sums the partial rows into out[c] / n. */
static void bn_chunk_reduce(const bn_job *j, double *out)
{
    const double n = (double)(j->O * j->I);
    for (int64_t c = 0; c < j->C; c++) {
        double t = 0;
        for (int64_t k = 0; k < j->nchunk; k++) t += j->part[k * j->C + c];
        out[c] = n > 0 ? t / n : 0.0;
    }
}

/* From the batch mean and variance: the mean / var (inverse std) outputs and the per-channel
 * output coefficients. */
#define BN_FINISH(T)                                                                            \
    static void bn_finish_##T(bn_job *j, const double *m, const double *v)                      \
    {                                                                                           \
        for (int64_t c = 0; c < j->C; c++) {                                                    \
            const double inv = bn_invstd(v[c], j->eps, true);                                   \
            ((T *)j->mean)[c] = (T)m[c];                                                        \
            ((T *)j->var)[c] = (T)inv;                                                          \
            double g = j->fix_gamma ? 1.0 : (double)((const T *)j->gamma)[c];                   \
            double sc = g * inv;                                                                \
            j->scale[c] = sc;                                                                   \
            j->shift[c] = (double)((const T *)j->beta)[c] - m[c] * sc;                          \
        }                                                                                       \
    }

BN_FINISH(f32)
BN_FINISH(f64)

static hg_status bn_chunked_stats(const hg_op_def *op, bn_job *j, bool f32)
{
    const int64_t rows_per = imax(1, HG_GRAIN_ELEMWISE / imax(1, j->C * j->I));
    j->nchunk = (j->O + rows_per - 1) / rows_per;
    if (j->nchunk > BN_MAX_CHUNKS) j->nchunk = BN_MAX_CHUNKS;
    if (j->nchunk < 1) j->nchunk = 1;
    const size_t bytes = sizeof(double) * (size_t)((j->nchunk + 2) * j->C);
    double *buf = hg_alloc(bytes);
    if (!buf) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    double *m = buf + j->nchunk * j->C, *v = m + j->C;
    j->part = buf;
    j->cmean = NULL;
    hg_range_fn fn = f32 ? bn_chunk_f32 : bn_chunk_f64;
    hg_parallel_for(j->nchunk, 1, fn, j);
    bn_chunk_reduce(j, m);
    j->cmean = m;
    hg_parallel_for(j->nchunk, 1, fn, j);
    bn_chunk_reduce(j, v);
    if (f32) bn_finish_f32(j, m, v);
    else bn_finish_f64(j, m, v);
    hg_free(buf, bytes);
    return HG_OK;
}

static hg_status bn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    int ax = 0;
    HG_TRY(norm_axis(op, a->v[BN_AXIS].i, &m, &ax));
    bn_job j = {.x = hg_data(in[0]),
                .gamma = hg_data(in[1]),
                .beta = hg_data(in[2]),
                .rmean = hg_data(in[3]),
                .rvar = hg_data(in[4]),
                .y = hg_data(out[0]),
                .mean = hg_data(out[1]),
                .var = hg_data(out[2]),
                .O = prod(m.shape, 0, ax),
                .C = m.shape[ax],
                .I = prod(m.shape, ax + 1, m.ndim),
                .eps = a->v[BN_EPS].f,
                .batch_stats = ctx->is_train && !a->v[BN_USE_GLOBAL].b,
                .fix_gamma = a->v[BN_FIX_GAMMA].b};
    if (j.C == 0) return HG_OK;
    double *buf = hg_alloc(sizeof(double) * 2 * (size_t)j.C);
    if (!buf) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    j.scale = buf;
    j.shift = buf + j.C;
    const bool f32 = m.dtype == HG_DTYPE_F32;
    const int64_t per_c = imax(1, j.O * j.I);
    if (j.batch_stats && j.I < BN_CHUNK_INNER && j.O > 1) {
        hg_status st = bn_chunked_stats(op, &j, f32);
        if (st != HG_OK) {
            hg_free(buf, sizeof(double) * 2 * (size_t)j.C);
            return st;
        }
    } else {
        hg_parallel_for(j.C, imax(1, HG_GRAIN_ELEMWISE / per_c), f32 ? bn_stats_f32 : bn_stats_f64,
                        &j);
    }
    if (j.I == 1)
        hg_parallel_for(j.O, imax(1, HG_GRAIN_ELEMWISE / j.C),
                        f32 ? bn_apply_last_f32 : bn_apply_last_f64, &j);
    else
        hg_parallel_for(j.O * j.C, imax(1, HG_GRAIN_ELEMWISE / imax(1, j.I)),
                        f32 ? bn_apply_f32 : bn_apply_f64, &j);
    hg_free(buf, sizeof(double) * 2 * (size_t)j.C);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * BatchNorm backward: (dy, data, gamma, mean, var, moving_mean, moving_var) -> (d data,
 * d gamma, d beta), where mean and var are the forward's hidden outputs (var holds the inverse
 * std), i.e. the statistics the forward normalised with: batch statistics in training, the moving
 * ones otherwise. In training it also updates moving_mean / moving_var in place. Per channel,
 * with n = outer * inner, w = gamma (1 with fix_gamma) and the sums S = sum(dy),
 * D = sum(dy * (x - mean)):
 *     training:  dx = w * inv * (dy - S / n - (x - mean) * inv^2 * D / n)
 *     otherwise: dx = w * inv * dy   (the statistics do not depend on the data)
 *     d gamma = D * inv (0 with fix_gamma), d beta = S.
 * The training flag is the executor's, as in MXNet, so the backward must run with the flag the
 * forward ran with.
 */

typedef struct {
    const void *dy, *x;
    void *dx;
    const double *m;      /* per channel mean */
    double *sum;          /* per channel: S at [c], D at [C + c] */
    double *a, *b, *d;    /* per channel: dx = a * dy + b * (x - m) + d */
    double *part;         /* chunked sums: nchunk x 2C */
    int64_t O, C, I, nchunk;
} bnb_job;

#define BN_BWD_KERNELS(T)                                                                       \
    static void bnb_sums_##T(void *ctx, int64_t c0, int64_t c1)                                 \
    {                                                                                           \
        const bnb_job *j = ctx;                                                                 \
        const int64_t O = j->O, C = j->C, I = j->I;                                             \
        for (int64_t c = c0; c < c1; c++) {                                                     \
            /* the mean input has the data's type: (T)m is m exactly */                        \
            const T m = (T)j->m[c];                                                             \
            double s = 0, d = 0;                                                                \
            for (int64_t o = 0; o < O; o++)                                                     \
                bn_rsum2_##T((const T *)j->dy + (o * C + c) * I,                                \
                             (const T *)j->x + (o * C + c) * I, I, m, &s, &d);                  \
            j->sum[c] = s;                                                                      \
            j->sum[C + c] = d;                                           \
        }                                                                                       \
    }                                                                                           \
    static void bnb_chunk_##T(void *ctx, int64_t k0, int64_t k1)                                \
    {                                                                                           \
        const bnb_job *j = ctx;                                                                 \
        const int64_t O = j->O, C = j->C, I = j->I;                                             \
        for (int64_t k = k0; k < k1; k++) {                                                     \
            double *s = j->part + k * 2 * C, *d = s + C;                                        \
            for (int64_t c = 0; c < 2 * C; c++) s[c] = 0;                                       \
            for (int64_t o = O * k / j->nchunk; o < O * (k + 1) / j->nchunk; o++) {             \
                const T *p = (const T *)j->x + o * C * I, *q = (const T *)j->dy + o * C * I;    \
                if (I == 1) {                                                                   \
                    for (int64_t c = 0; c < C; c++) {                                           \
                        s[c] += q[c];                                                           \
                        d[c] += q[c] * (p[c] - j->m[c]);                                        \
                    }                                                                           \
                    continue;                                                                   \
                }                                                                               \
                for (int64_t c = 0; c < C; c++) {                                               \
                    const double m = j->m[c];                                                   \
                    double ts = 0, td = 0;                                                      \
                    for (int64_t i = 0; i < I; i++) {                                           \
                        ts += q[c * I + i];                                                     \
                        td += q[c * I + i] * (p[c * I + i] - m);                                \
                    }                                                                           \
                    s[c] += ts;                                                                 \
                    d[c] += td;                                                                 \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void bnb_apply_##T(void *ctx, int64_t r0, int64_t r1)                                \
    {                                                                                           \
        const bnb_job *j = ctx;                                                                 \
        const int64_t C = j->C, I = j->I;                                                       \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const int64_t c = r % C;                                                            \
            const T *p = (const T *)j->x + r * I, *q = (const T *)j->dy + r * I;                \
            T *o = (T *)j->dx + r * I;                                                          \
            const T a = (T)j->a[c], b = (T)j->b[c], d = (T)j->d[c], m = (T)j->m[c];            \
            for (int64_t i = 0; i < I; i++) o[i] = a * q[i] + b * (p[i] - m) + d;               \
        }                                                                                       \
    }                                                                                           \
    static void bnb_apply_last_##T(void *ctx, int64_t o0, int64_t o1)                           \
    {                                                                                           \
        const bnb_job *j = ctx;                                                                 \
        const int64_t C = j->C;                                                                 \
        for (int64_t o = o0; o < o1; o++) {                                                     \
            const T *p = (const T *)j->x + o * C, *q = (const T *)j->dy + o * C;                \
            T *y = (T *)j->dx + o * C;                                                          \
            for (int64_t c = 0; c < C; c++)                                                     \
                y[c] = (T)(j->a[c] * q[c] + j->b[c] * (p[c] - j->m[c]) + j->d[c]);              \
        }                                                                                       \
    }

BN_BWD_KERNELS(f32)
BN_BWD_KERNELS(f64)

static double tensor_at(const hg_tensor *t, int64_t i)
{
    return t->dtype == HG_DTYPE_F32 ? (double)HG_DATA(t, float)[i] : HG_DATA(t, double)[i];
}

static void tensor_set(hg_tensor *t, int64_t i, double v)
{
    if (t->dtype == HG_DTYPE_F32) HG_DATA(t, float)[i] = (float)v;
    else HG_DATA(t, double)[i] = v;
}

/* Checks that in[k] is 1-D of length n and has the data's dtype (names[k] in messages). */
static hg_status check_vectors(const hg_op_def *op, int nin, hg_meta *in, int first, int64_t n,
                               hg_dtype dt, const char *const *names)
{
    char s0[HG_SHAPE_STR];
    for (int k = first; k < nin; k++) {
        if (!hg_meta_merge(&in[k], dt, 1, &n))
            return hg_error(HG_ERR_VALUE, "%s: %s has shape %s, expected [%lld]", op->name,
                            names[k], hg_shape_str(s0, in[k].ndim, in[k].shape), (long long)n);
        if (in[k].dtype != dt)
            return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, expected %s", op->name, names[k],
                            hg_dtype_name(in[k].dtype), hg_dtype_name(dt));
    }
    return HG_OK;
}

/* dy must match the data in shape and dtype (input 0 of every backward op here). */
static hg_status check_ograd(const hg_op_def *op, const hg_meta *dy, const hg_meta *x)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    if (dy->ndim >= 0 &&
        (dy->dtype != x->dtype || !hg_shape_equal(dy->ndim, dy->shape, x->ndim, x->shape)))
        return hg_error(HG_ERR_VALUE, "%s: ograd has shape %s and dtype %s, data %s and %s",
                        op->name, hg_shape_str(s0, dy->ndim, dy->shape), hg_dtype_name(dy->dtype),
                        hg_shape_str(s1, x->ndim, x->shape), hg_dtype_name(x->dtype));
    return HG_OK;
}

static hg_status bn_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    static const char *const names[] = {"ograd", "data",        "gamma",     "mean",
                                        "var",   "moving_mean", "moving_var"};
    (void)nout;
    if (in[1].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    int ax = 0;
    int64_t C;
    HG_TRY(data_axis(op, a->v[BN_AXIS].i, 1, &in[1], &ax, &C, false));
    HG_TRY(check_ograd(op, &in[0], &in[1]));
    HG_TRY(check_vectors(op, nin, in, 2, C, in[1].dtype, names));
    set_meta(&out[0], in[1].dtype, in[1].ndim, in[1].shape);
    set_meta(&out[1], in[1].dtype, 1, &C);
    set_meta(&out[2], in[1].dtype, 1, &C);
    return HG_OK;
}

/* MXNet's CPU update of the moving statistics (see the file's top): in[3] holds the batch mean
 * (here m), in[4] the inverse std, from which the biased variance is 1 / inv^2 - eps; a zero
 * inverse std (zero variance with eps = 0) stands for variance 0. */
static void bn_update_moving(hg_tensor *const *in, const double *m, int64_t C, double eps,
                             double mom)
{
    for (int64_t c = 0; c < C; c++) {
        const double inv = tensor_at(in[4], c), var = inv > 0 ? 1 / (inv * inv) - eps : 0.0;
        tensor_set(in[5], c, tensor_at(in[5], c) * mom + m[c] * (1 - mom));
        tensor_set(in[6], c, tensor_at(in[6], c) * mom + var * (1 - mom));
    }
}

static hg_status bn_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_meta mx = hg_meta_of(in[1]);
    int ax = 0;
    HG_TRY(norm_axis(op, a->v[BN_AXIS].i, &mx, &ax));
    const bool f32 = mx.dtype == HG_DTYPE_F32, fix_gamma = a->v[BN_FIX_GAMMA].b;
    const bool batch = ctx->is_train && !a->v[BN_USE_GLOBAL].b;
    const double eps = a->v[BN_EPS].f;
    bnb_job j = {.dy = hg_data(in[0]),
                 .x = hg_data(in[1]),
                 .dx = hg_data(out[0]),
                 .O = prod(mx.shape, 0, ax),
                 .C = mx.shape[ax],
                 .I = prod(mx.shape, ax + 1, mx.ndim)};
    if (j.C == 0) return HG_OK;
    const int64_t n = j.O * j.I;
    const bool chunked = j.I < BN_CHUNK_INNER && j.O > 1;
    if (chunked) {
        const int64_t rows_per = imax(1, HG_GRAIN_ELEMWISE / imax(1, j.C * j.I));
        j.nchunk = imax(1, (j.O + rows_per - 1) / rows_per);
        if (j.nchunk > BN_MAX_CHUNKS) j.nchunk = BN_MAX_CHUNKS;
    }
    const size_t bytes = sizeof(double) * (size_t)(j.C * (6 + 2 * j.nchunk));
    double *buf = hg_alloc(bytes);
    if (!buf) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    double *m = buf;
    j.m = m;
    j.sum = buf + j.C;
    j.a = buf + 3 * j.C;
    j.b = buf + 4 * j.C;
    j.d = buf + 5 * j.C;
    j.part = buf + 6 * j.C;
    for (int64_t c = 0; c < j.C; c++) m[c] = tensor_at(in[3], c);
    if (chunked) {
        hg_parallel_for(j.nchunk, 1, f32 ? bnb_chunk_f32 : bnb_chunk_f64, &j);
        for (int64_t c = 0; c < 2 * j.C; c++) {
            double t = 0;
            for (int64_t k = 0; k < j.nchunk; k++) t += j.part[k * 2 * j.C + c];
            j.sum[c] = t;
        }
    } else {
        hg_parallel_for(j.C, imax(1, HG_GRAIN_ELEMWISE / imax(1, n)),
                        f32 ? bnb_sums_f32 : bnb_sums_f64, &j);
    }
    const double inv_n = n > 0 ? 1.0 / (double)n : 0.0;
    for (int64_t c = 0; c < j.C; c++) {
        const double inv = tensor_at(in[4], c), w = fix_gamma ? 1.0 : tensor_at(in[2], c);
        const double S = j.sum[c], D = j.sum[j.C + c];
        j.a[c] = w * inv;
        j.b[c] = batch ? -w * inv * inv * inv * D * inv_n : 0.0;
        j.d[c] = batch ? -w * inv * S * inv_n : 0.0;
        tensor_set(out[1], c, fix_gamma ? 0.0 : D * inv);
        tensor_set(out[2], c, S);
    }
    if (batch && n > 0) bn_update_moving(in, m, j.C, eps, a->v[BN_MOMENTUM].f);
    if (n > 0) {
        if (j.I == 1)
            hg_parallel_for(j.O, imax(1, HG_GRAIN_ELEMWISE / j.C),
                            f32 ? bnb_apply_last_f32 : bnb_apply_last_f64, &j);
        else
            hg_parallel_for(j.O * j.C, imax(1, HG_GRAIN_ELEMWISE / j.I),
                            f32 ? bnb_apply_f32 : bnb_apply_f64, &j);
    }
    hg_free(buf, bytes);
    return HG_OK;
}

static hg_status bn_grad(hg_grad_ctx *g)
{
    hg_sentry out[3];
    hg_g_op_fwd_attrs(g, "_backward_BatchNorm",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1), hg_g_out(g, 1),
                             hg_g_out(g, 2), hg_g_in(g, 3), hg_g_in(g, 4)),
                      NULL, 3, out);
    for (int k = 0; k < 3; k++) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * SyncBatchNorm (contrib): BatchNorm over axis 1 whose statistics are shared by ndev devices; on
 * one CPU device it is BatchNorm, except that its third output is the batch variance rather
 * than the inverse std (sync_batch_norm-inl.h). It runs BatchNorm's kernels on BatchNorm
 * attributes built from its own, converting that output (and back for the backward, whose
 * moving-statistics update and gradients are BatchNorm's).
 */

enum {
    SBN_EPS,
    SBN_MOMENTUM,
    SBN_FIX_GAMMA,
    SBN_USE_GLOBAL,
    SBN_OUTPUT_MEAN_VAR,
    SBN_NDEV,
    SBN_KEY,
    SBN_NATTRS
};

static const hg_attr_spec k_sbn_attrs[] = {
    [SBN_EPS] = {"eps", HG_ATTR_FLOAT, 0, "0.001", "added to the variance before the square root",
                 NULL},
    [SBN_MOMENTUM] = {"momentum", HG_ATTR_FLOAT, 0, "0.9",
                      "running-average momentum of the moving statistics", NULL},
    [SBN_FIX_GAMMA] = {"fix_gamma", HG_ATTR_BOOL, 0, "True", "treat gamma as 1", NULL},
    [SBN_USE_GLOBAL] = {"use_global_stats", HG_ATTR_BOOL, 0, "False",
                        "use moving_mean / moving_var in training too", NULL},
    [SBN_OUTPUT_MEAN_VAR] = {"output_mean_var", HG_ATTR_BOOL, 0, "False",
                             "also return the mean and the variance", NULL},
    [SBN_NDEV] = {"ndev", HG_ATTR_INT, 0, "1", "devices sharing the statistics (1 on CPU)", NULL},
    [SBN_KEY] = {"key", HG_ATTR_STRING, HG_ATTR_REQUIRED, NULL,
                 "synchronisation key of the layer (its prefix)", NULL},
};
_Static_assert(HG_COUNT(k_sbn_attrs) == SBN_NATTRS, "k_sbn_attrs must match its enum");

extern const hg_op_def hg_ops_norm[]; /* [0] is BatchNorm */

static int sbn_visible(const hg_attrs *a) { return a->v[SBN_OUTPUT_MEAN_VAR].b ? 3 : 1; }

static hg_status sbn_bn_attrs(const hg_op_def *op, const hg_attrs *a, hg_attrs *b)
{
    if (a->v[SBN_NDEV].i != 1)
        return hg_error(HG_ERR_UNSUPPORTED,
                        "%s: ndev=%lld devices: this build synchronises one CPU device only",
                        op->name, (long long)a->v[SBN_NDEV].i);
    hg_attrs_set_defaults(&hg_ops_norm[0], b);
    b->v[BN_EPS].f = a->v[SBN_EPS].f;
    b->v[BN_MOMENTUM].f = a->v[SBN_MOMENTUM].f;
    b->v[BN_FIX_GAMMA].b = a->v[SBN_FIX_GAMMA].b;
    b->v[BN_USE_GLOBAL].b = a->v[SBN_USE_GLOBAL].b;
    b->v[BN_OUTPUT_MEAN_VAR].b = a->v[SBN_OUTPUT_MEAN_VAR].b;
    b->v[BN_AXIS].i = 1;
    return HG_OK;
}

static hg_status sbn_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    hg_attrs b;
    HG_TRY(sbn_bn_attrs(op, a, &b));
    return bn_infer(op, &b, nin, in, nout, out);
}

/* inverse std <-> biased variance (0 stands for a zero variance with eps = 0, as in BatchNorm) */
static double sbn_inv_to_var(double inv, double eps) { return inv > 0 ? 1 / (inv * inv) - eps : 0; }
static double sbn_var_to_inv(double var, double eps) { return bn_invstd(var, eps, true); }

static hg_status sbn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_attrs b;
    HG_TRY(sbn_bn_attrs(op, a, &b));
    HG_TRY(bn_forward(op, &b, ctx, nin, in, nout, out));
    for (int64_t c = 0; c < out[2]->size; c++)
        tensor_set(out[2], c, sbn_inv_to_var(tensor_at(out[2], c), b.v[BN_EPS].f));
    return HG_OK;
}

static hg_status sbn_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    hg_attrs b;
    HG_TRY(sbn_bn_attrs(op, a, &b));
    return bn_bwd_infer(op, &b, nin, in, nout, out);
}

static size_t sbn_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)a;
    (void)nin;
    return hg_dtype_size(in[4].dtype) * (size_t)hg_shape_size(in[4].ndim, in[4].shape);
}

/* BatchNorm's backward with input 4 (the variance) replaced by the inverse std, in the
 * workspace. */
static hg_status sbn_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_attrs b;
    HG_TRY(sbn_bn_attrs(op, a, &b));
    hg_storage st;
    hg_tensor inv;
    memset(&st, 0, sizeof st);
    memset(&inv, 0, sizeof inv);
    st.data = ctx->workspace;
    st.nbytes = ctx->workspace_bytes;
    inv.storage = &st;
    inv.size = in[4]->size;
    inv.ndim = in[4]->ndim;
    inv.dtype = in[4]->dtype;
    memcpy(inv.shape, in[4]->shape, sizeof(int64_t) * (size_t)in[4]->ndim);
    if (inv.size > 0 && !ctx->workspace)
        return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
    for (int64_t c = 0; c < inv.size; c++)
        tensor_set(&inv, c, sbn_var_to_inv(tensor_at(in[4], c), b.v[BN_EPS].f));
    hg_tensor *ins[7];
    for (int i = 0; i < nin && i < 7; i++) ins[i] = in[i];
    ins[4] = &inv;
    return bn_bwd_forward(op, &b, ctx, nin, ins, nout, out);
}

static hg_status sbn_grad(hg_grad_ctx *g)
{
    hg_sentry out[3];
    hg_g_op_fwd_attrs(g, "_backward__contrib_SyncBatchNorm",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1), hg_g_out(g, 1),
                             hg_g_out(g, 2), hg_g_in(g, 3), hg_g_in(g, 4)),
                      NULL, 3, out);
    for (int k = 0; k < 3; k++) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * Row normalisation: LayerNorm, InstanceNorm, GroupNorm
 */

typedef struct {
    const void *x, *gamma, *beta;
    void *y, *mean, *stat;
    int64_t R, I;       /* row length; LayerNorm's inner extent (blocked path when > 1) */
    int64_t pgroups;    /* > 0: gamma/beta per row, index row % pgroups; 0: per element */
    double eps;
    bool store_var;     /* the second stat output is the variance (else the std) */
} row_job;

#define ROW_KERNEL(T)                                                                           \
    static void row_norm_##T(void *ctx, int64_t r0, int64_t r1)                                 \
    {                                                                                           \
        const row_job *j = ctx;                                                                 \
        const int64_t R = j->R;                                                                 \
        const T *g = j->gamma, *b = j->beta;                                                    \
        for (int64_t r = r0; r < r1; r++) {                                                     \
            const T *p = (const T *)j->x + r * R;                                               \
            T *q = (T *)j->y + r * R;                                                           \
            double s = 0, ss = 0;                                                               \
            for (int64_t k = 0; k < R; k++) s += p[k];                                          \
            const double m = R > 0 ? s / (double)R : 0.0;                                       \
            for (int64_t k = 0; k < R; k++) {                                                   \
                double d = p[k] - m;                                                            \
                ss += d * d;                                                                    \
            }                                                                                   \
            const double v = R > 0 ? ss / (double)R : 0.0, sd = sqrt(v + j->eps);              \
            ((T *)j->mean)[r] = (T)m;                                                           \
            ((T *)j->stat)[r] = (T)(j->store_var ? v : sd);                                     \
            const double inv = 1.0 / sd;                                                        \
            if (j->pgroups > 0) {                                                               \
                const int64_t c = r % j->pgroups;                                               \
                const T sc = (T)(g[c] * inv), sh = (T)(b[c] - m * g[c] * inv);                  \
                for (int64_t k = 0; k < R; k++) q[k] = p[k] * sc + sh;                          \
            } else {                                                                            \
                const T mt = (T)m, it = (T)inv;                                                 \
                for (int64_t k = 0; k < R; k++) q[k] = (p[k] - mt) * it * g[k] + b[k];          \
            }                                                                                   \
        }                                                                                       \
    }

ROW_KERNEL(f32)
ROW_KERNEL(f64)

/* LayerNorm with inner > 1: a row walks memory with step `inner`, so instead each task takes one
 * outer index and a block of up to LN_BLOCK inner positions and sweeps the R axis contiguously,
 * keeping the block's statistics in small double arrays. Task t: outer t / nblk, block t % nblk. */
#define LN_BLOCK 256

#define LN_BLOCK_KERNEL(T)                                                                      \
    static void ln_block_##T(void *ctx, int64_t t0, int64_t t1)                                 \
    {                                                                                           \
        const row_job *j = ctx;                                                                 \
        const int64_t R = j->R, I = j->I, nblk = (I + LN_BLOCK - 1) / LN_BLOCK;                 \
        const T *g = j->gamma, *b = j->beta;                                                    \
        double m[LN_BLOCK], inv[LN_BLOCK];                                                      \
        for (int64_t t = t0; t < t1; t++) {                                                     \
            const int64_t o = t / nblk, i0 = (t % nblk) * LN_BLOCK;                             \
            const int64_t B = I - i0 < LN_BLOCK ? I - i0 : LN_BLOCK;                            \
            const T *p = (const T *)j->x + o * R * I + i0;                                      \
            T *q = (T *)j->y + o * R * I + i0;                                                  \
            for (int64_t i = 0; i < B; i++) { m[i] = 0; inv[i] = 0; }                           \
            for (int64_t k = 0; k < R; k++)                                                     \
                for (int64_t i = 0; i < B; i++) m[i] += p[k * I + i];                           \
            for (int64_t i = 0; i < B; i++) m[i] = R > 0 ? m[i] / (double)R : 0.0;              \
            for (int64_t k = 0; k < R; k++)                                                     \
                for (int64_t i = 0; i < B; i++) {                                               \
                    double d = p[k * I + i] - m[i];                                             \
                    inv[i] += d * d;                                                            \
                }                                                                               \
            for (int64_t i = 0; i < B; i++) {                                                   \
                const double sd = sqrt((R > 0 ? inv[i] / (double)R : 0.0) + j->eps);            \
                ((T *)j->mean)[o * I + i0 + i] = (T)m[i];                                       \
                ((T *)j->stat)[o * I + i0 + i] = (T)sd;                                         \
                inv[i] = 1.0 / sd;                                                              \
            }                                                                                   \
            for (int64_t k = 0; k < R; k++) {                                                   \
                const double gk = g[k], bk = b[k];                                              \
                for (int64_t i = 0; i < B; i++)                                                 \
                    q[k * I + i] = (T)((p[k * I + i] - m[i]) * inv[i] * gk + bk);               \
            }                                                                                   \
        }                                                                                       \
    }

LN_BLOCK_KERNEL(f32)
LN_BLOCK_KERNEL(f64)

static void row_run(row_job *j, hg_dtype dt, int64_t rows)
{
    if (rows == 0) return;
    hg_parallel_for(rows, imax(1, HG_GRAIN_ELEMWISE / imax(1, j->R)),
                    dt == HG_DTYPE_F32 ? row_norm_f32 : row_norm_f64, j);
}

static hg_status ln_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    HG_TRY(check_eps(op, a->v[LN_EPS].f));
    if (in[0].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    int ax = 0;
    int64_t R;
    HG_TRY(data_axis(op, a->v[LN_AXIS].i, nin, in, &ax, &R, true));
    HG_TRY(infer_params(op, nin, in, 1, R, "one value per element on the axis"));
    set_meta(&out[0], in[0].dtype, in[0].ndim, in[0].shape);
    int64_t ms[HG_MAX_NDIM];
    memcpy(ms, in[0].shape, sizeof(int64_t) * (size_t)in[0].ndim);
    ms[ax] = 1;
    set_meta(&out[1], in[0].dtype, in[0].ndim, ms);
    set_meta(&out[2], in[0].dtype, in[0].ndim, ms);
    return HG_OK;
}

static hg_status ln_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    int ax = 0;
    HG_TRY(norm_axis(op, a->v[LN_AXIS].i, &m, &ax));
    row_job j = {.x = hg_data(in[0]),
                 .gamma = hg_data(in[1]),
                 .beta = hg_data(in[2]),
                 .y = hg_data(out[0]),
                 .mean = hg_data(out[1]),
                 .stat = hg_data(out[2]),
                 .R = m.shape[ax],
                 .I = prod(m.shape, ax + 1, m.ndim),
                 .pgroups = 0,
                 .eps = a->v[LN_EPS].f,
                 .store_var = false};
    const int64_t O = prod(m.shape, 0, ax);
    if (j.I > 1 && O * j.I > 0) {
        const int64_t tasks = O * ((j.I + LN_BLOCK - 1) / LN_BLOCK);
        const int64_t work = imax(1, j.R * (j.I < LN_BLOCK ? j.I : LN_BLOCK));
        hg_parallel_for(tasks, imax(1, HG_GRAIN_ELEMWISE / work),
                        m.dtype == HG_DTYPE_F32 ? ln_block_f32 : ln_block_f64, &j);
        return HG_OK;
    }
    row_run(&j, m.dtype, O * j.I);
    return HG_OK;
}

/* InstanceNorm and GroupNorm: data (N, C, spatial...). */
static hg_status channel_data(const hg_op_def *op, const hg_meta *x)
{
    char s0[HG_SHAPE_STR];
    if (x->ndim < 2)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must have at least 2 dims (batch, channel, ...), "
                        "got shape %s",
                        op->name, hg_shape_str(s0, x->ndim, x->shape));
    return HG_OK;
}

static hg_status in_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    HG_TRY(check_eps(op, a->v[IN_EPS].f));
    if (in[0].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    HG_TRY(check_float(op, in[0].dtype));
    HG_TRY(channel_data(op, &in[0]));
    int64_t C = in[0].shape[1];
    for (int i = 1; i < nin && C < 0; i++)
        if (in[i].ndim == 1 && in[i].shape[0] >= 0) C = in[0].shape[1] = in[i].shape[0];
    HG_TRY(infer_params(op, nin, in, 1, C, "one value per channel"));
    set_meta(&out[0], in[0].dtype, in[0].ndim, in[0].shape);
    set_meta(&out[1], in[0].dtype, 2, in[0].shape);
    set_meta(&out[2], in[0].dtype, 2, in[0].shape);
    return HG_OK;
}

static hg_status in_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    row_job j = {.x = hg_data(in[0]),
                 .gamma = hg_data(in[1]),
                 .beta = hg_data(in[2]),
                 .y = hg_data(out[0]),
                 .mean = hg_data(out[1]),
                 .stat = hg_data(out[2]),
                 .R = prod(m.shape, 2, m.ndim),
                 .I = 1,
                 .pgroups = m.shape[1],
                 .eps = a->v[IN_EPS].f,
                 .store_var = true};
    row_run(&j, m.dtype, m.shape[0] * m.shape[1]);
    return HG_OK;
}

static hg_status gn_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nout;
    char s0[HG_SHAPE_STR];
    HG_TRY(check_eps(op, a->v[GN_EPS].f));
    const int64_t G = a->v[GN_NUM_GROUPS].i;
    if (G < 1)
        return hg_error(HG_ERR_VALUE, "%s: num_groups must be positive, got %lld", op->name,
                        (long long)G);
    /* gamma / beta are per group in MXNet 1.x, so they are known without the data. */
    if (in[0].ndim >= 0) HG_TRY(check_float16ok(op, in[0].dtype));
    hg_dtype dt = in[0].ndim >= 0 ? in[0].dtype : HG_DTYPE_F32;
    for (int i = 1; i < nin; i++) {
        if (!hg_meta_merge(&in[i], dt, 1, &G))
            return hg_error(HG_ERR_VALUE,
                            "%s: %s shape %s does not match num_groups=%lld: "
                            "expected [%lld] (one value per group)",
                            op->name, i == 1 ? "gamma" : "beta",
                            hg_shape_str(s0, in[i].ndim, in[i].shape), (long long)G, (long long)G);
    }
    if (in[0].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    if (in[0].ndim < 3) /* MXNet 1.x: CHECK_GE(dshape.ndim(), 3) */
        return hg_error(HG_ERR_VALUE,
                        "%s: data must have at least 3 dims (batch, channel, "
                        "spatial...), got shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
    HG_TRY(infer_params(op, nin, in, 1, G, "one value per group"));
    const int64_t C = in[0].shape[1];
    if (C >= 0 && C % G != 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: channels (%lld, data shape %s) must be divisible by "
                        "num_groups=%lld",
                        op->name, (long long)C, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        (long long)G);
    set_meta(&out[0], in[0].dtype, in[0].ndim, in[0].shape);
    const int64_t ms[2] = {in[0].shape[0], G}; /* mean / std: (batch, num_groups) */
    set_meta(&out[1], in[0].dtype, 2, ms);
    set_meta(&out[2], in[0].dtype, 2, ms);
    return HG_OK;
}

static hg_status gn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    const int64_t G = a->v[GN_NUM_GROUPS].i;
    row_job j = {.x = hg_data(in[0]),
                 .gamma = hg_data(in[1]),
                 .beta = hg_data(in[2]),
                 .y = hg_data(out[0]),
                 .mean = hg_data(out[1]),
                 .stat = hg_data(out[2]),
                 .R = m.shape[1] / G * prod(m.shape, 2, m.ndim),
                 .I = 1,
                 .pgroups = G,
                 .eps = a->v[GN_EPS].f,
                 .store_var = false};
    row_run(&j, m.dtype, m.shape[0] * G);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * LayerNorm / InstanceNorm / GroupNorm backward: (dy, data, gamma, mean, std or var) ->
 * (d data, d gamma, d beta). Per normalised row of R elements, with xhat = (x - mean) * inv and
 * g = dy * gamma:
 *     dx = inv * (g - mean(g) - xhat * mean(g * xhat))
 *     d gamma += dy * xhat, d beta += dy   (per element for LayerNorm, per row's channel/group)
 * The rows are split into at most ROWB_CHUNKS fixed chunks, each summing its own d gamma / d beta
 * partials, which are then added in chunk order.
 */

#define ROWB_CHUNKS 64

typedef struct {
    const void *dy, *x, *gamma, *mean, *stat;
    void *dx;
    double *part;      /* nchunk x 2P: d gamma partials, then d beta partials */
    int64_t R, I, P;   /* row length; LayerNorm's inner extent; gamma entries */
    int64_t pgroups;   /* > 0: gamma per row, index row % pgroups; 0: per element of the row */
    int64_t ntask, nchunk;
    double eps;
    bool stat_is_var;  /* the stat input is the variance (InstanceNorm), else the std */
} rowb_job;

static double rowb_inv(const rowb_job *j, double stat)
{
    return j->stat_is_var ? 1.0 / sqrt(stat + j->eps) : 1.0 / stat;
}

#define ROW_BWD_KERNELS(T)                                                                      \
    static void rowb_rows_##T(void *ctx, int64_t k0, int64_t k1)                                \
    {                                                                                           \
        const rowb_job *j = ctx;                                                                \
        const int64_t R = j->R, P = j->P;                                                       \
        const double invR = R > 0 ? 1.0 / (double)R : 0.0;                                      \
        const T *gm = j->gamma;                                                                 \
        for (int64_t k = k0; k < k1; k++) {                                                     \
            double *dg = j->part + k * 2 * P, *db = dg + P;                                     \
            for (int64_t p = 0; p < 2 * P; p++) dg[p] = 0;                                      \
            for (int64_t r = j->ntask * k / j->nchunk; r < j->ntask * (k + 1) / j->nchunk;      \
                 r++) {                                                                         \
                const T *x = (const T *)j->x + r * R, *dy = (const T *)j->dy + r * R;           \
                T *dx = (T *)j->dx + r * R;                                                     \
                const double m = ((const T *)j->mean)[r];                                       \
                const double inv = rowb_inv(j, ((const T *)j->stat)[r]);                        \
                double s1 = 0, s2 = 0;                                                          \
                if (j->pgroups > 0) {                                                           \
                    const int64_t p = r % j->pgroups;                                           \
                    for (int64_t i = 0; i < R; i++) {                                           \
                        s1 += dy[i];                                                            \
                        s2 += dy[i] * (x[i] - m);                                               \
                    }                                                                           \
                    s2 *= inv;                                                                  \
                    dg[p] += s2;                                                                \
                    db[p] += s1;                                                                \
                    const double g = gm[p];                                                     \
                    const T a = (T)(g * inv), b = (T)(-g * inv * inv * s2 * invR),              \
                            c = (T)(-g * inv * s1 * invR), mt = (T)m;                           \
                    for (int64_t i = 0; i < R; i++) dx[i] = a * dy[i] + b * (x[i] - mt) + c;    \
                    continue;                                                                   \
                }                                                                               \
                for (int64_t i = 0; i < R; i++) {                                               \
                    const double xh = (x[i] - m) * inv, gd = (double)dy[i] * gm[i];             \
                    s1 += gd;                                                                   \
                    s2 += gd * xh;                                                              \
                    dg[i] += dy[i] * xh;                                                        \
                    db[i] += dy[i];                                                             \
                }                                                                               \
                const T it = (T)inv, mt = (T)m, c1 = (T)(s1 * invR), c2 = (T)(s2 * invR);       \
                for (int64_t i = 0; i < R; i++) {                                               \
                    const T xh = (x[i] - mt) * it;                                              \
                    dx[i] = it * (dy[i] * gm[i] - c1 - xh * c2);                                \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* LayerNorm with inner > 1: tasks of (outer index, block of LN_BLOCK inner positions). */  \
    static void rowb_block_##T(void *ctx, int64_t k0, int64_t k1)                               \
    {                                                                                           \
        const rowb_job *j = ctx;                                                                \
        const int64_t R = j->R, I = j->I, P = j->P, nblk = (I + LN_BLOCK - 1) / LN_BLOCK;       \
        const double invR = R > 0 ? 1.0 / (double)R : 0.0;                                      \
        const T *gm = j->gamma;                                                                 \
        double m[LN_BLOCK], inv[LN_BLOCK], s1[LN_BLOCK], s2[LN_BLOCK];                          \
        for (int64_t k = k0; k < k1; k++) {                                                     \
            double *dg = j->part + k * 2 * P, *db = dg + P;                                     \
            for (int64_t p = 0; p < 2 * P; p++) dg[p] = 0;                                      \
            for (int64_t t = j->ntask * k / j->nchunk; t < j->ntask * (k + 1) / j->nchunk;      \
                 t++) {                                                                         \
                const int64_t o = t / nblk, i0 = (t % nblk) * LN_BLOCK;                         \
                const int64_t B = I - i0 < LN_BLOCK ? I - i0 : LN_BLOCK;                        \
                const int64_t base = o * R * I + i0;                                            \
                const T *x = (const T *)j->x + base, *dy = (const T *)j->dy + base;             \
                T *dx = (T *)j->dx + base;                                                      \
                for (int64_t i = 0; i < B; i++) {                                               \
                    m[i] = ((const T *)j->mean)[o * I + i0 + i];                                \
                    inv[i] = rowb_inv(j, ((const T *)j->stat)[o * I + i0 + i]);                 \
                    s1[i] = s2[i] = 0;                                                          \
                }                                                                               \
                for (int64_t r = 0; r < R; r++) {                                               \
                    const double g = gm[r];                                                     \
                    double tg = 0, tb = 0;                                                      \
                    for (int64_t i = 0; i < B; i++) {                                           \
                        const double xh = (x[r * I + i] - m[i]) * inv[i], d = dy[r * I + i];    \
                        s1[i] += d * g;                                                         \
                        s2[i] += d * g * xh;                                                    \
                        tg += d * xh;                                                           \
                        tb += d;                                                                \
                    }                                                                           \
                    dg[r] += tg;                                                                \
                    db[r] += tb;                                                                \
                }                                                                               \
                for (int64_t i = 0; i < B; i++) {                                               \
                    s1[i] *= invR;                                                              \
                    s2[i] *= invR;                                                              \
                }                                                                               \
                for (int64_t r = 0; r < R; r++) {                                               \
                    const double g = gm[r];                                                     \
                    for (int64_t i = 0; i < B; i++) {                                           \
                        const double xh = (x[r * I + i] - m[i]) * inv[i];                       \
                        dx[r * I + i] = (T)(inv[i] * (dy[r * I + i] * g - s1[i] - xh * s2[i])); \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

ROW_BWD_KERNELS(f32)
ROW_BWD_KERNELS(f64)

/* Runs the job (ntask tasks of `work` elements each) and writes d gamma / d beta. */
static hg_status rowb_run(const hg_op_def *op, rowb_job *j, hg_dtype dt, int64_t work,
                          hg_tensor *dgamma, hg_tensor *dbeta)
{
    j->nchunk = j->ntask * imax(1, work) / HG_GRAIN_ELEMWISE;
    if (j->nchunk > ROWB_CHUNKS) j->nchunk = ROWB_CHUNKS;
    if (j->nchunk > j->ntask) j->nchunk = j->ntask;
    if (j->nchunk < 1) j->nchunk = 1;
    const size_t bytes = sizeof(double) * (size_t)(2 * j->P * j->nchunk + 1);
    if (!(j->part = hg_alloc(bytes))) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    const bool f32 = dt == HG_DTYPE_F32;
    hg_range_fn fn = j->I > 1 ? (f32 ? rowb_block_f32 : rowb_block_f64)
                              : (f32 ? rowb_rows_f32 : rowb_rows_f64);
    hg_parallel_for(j->nchunk, 1, fn, j);
    for (int64_t p = 0; p < j->P; p++) {
        double g = 0, b = 0;
        for (int64_t k = 0; k < j->nchunk; k++) {
            g += j->part[k * 2 * j->P + p];
            b += j->part[k * 2 * j->P + j->P + p];
        }
        tensor_set(dgamma, p, g);
        tensor_set(dbeta, p, b);
    }
    hg_free(j->part, bytes);
    return HG_OK;
}

static rowb_job rowb_from(hg_tensor *const *in, hg_tensor *const *out, int64_t R, int64_t I,
                          int64_t pgroups, double eps, bool stat_is_var)
{
    rowb_job j = {.dy = hg_data(in[0]),
                  .x = hg_data(in[1]),
                  .gamma = hg_data(in[2]),
                  .mean = hg_data(in[3]),
                  .stat = hg_data(in[4]),
                  .dx = hg_data(out[0]),
                  .R = R,
                  .I = I,
                  .P = pgroups > 0 ? pgroups : R,
                  .pgroups = pgroups,
                  .eps = eps,
                  .stat_is_var = stat_is_var};
    return j;
}

/* Shared shape rule: data as the forward's rule sees it (in[1..3): data, gamma, beta-shaped
 * gamma), dy like data, the statistics shaped like the forward's outputs. */
static hg_status
rowb_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, hg_meta *out,
           hg_status (*fwd)(const hg_op_def *, const hg_attrs *, int, hg_meta *, int, hg_meta *))
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    (void)nin;
    hg_meta fin[3] = {in[1], in[2], in[2]}, fout[3];
    for (int i = 0; i < 3; i++) fout[i].ndim = -1;
    HG_TRY(fwd(op, a, 3, fin, 3, fout));
    if (fin[0].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    HG_TRY(check_ograd(op, &in[0], &fin[0]));
    for (int k = 3; k < 5; k++) {
        const hg_meta *want = &fout[k - 2];
        if (in[k].ndim >= 0 && (in[k].dtype != want->dtype ||
                                !hg_shape_equal(in[k].ndim, in[k].shape, want->ndim, want->shape)))
            return hg_error(HG_ERR_VALUE, "%s: %s has shape %s, expected %s", op->name,
                            k == 3 ? "mean" : "the std / var input",
                            hg_shape_str(s0, in[k].ndim, in[k].shape),
                            hg_shape_str(s1, want->ndim, want->shape));
    }
    in[1] = fin[0];
    in[2] = fin[1];
    out[0] = fin[0];
    out[1] = out[2] = fin[1];
    return HG_OK;
}

static hg_status ln_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nout;
    return rowb_infer(op, a, nin, in, out, ln_infer);
}

static hg_status in_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nout;
    return rowb_infer(op, a, nin, in, out, in_infer);
}

static hg_status gn_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nout;
    return rowb_infer(op, a, nin, in, out, gn_infer);
}

static hg_status ln_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[1]);
    int ax = 0;
    HG_TRY(norm_axis(op, a->v[LN_AXIS].i, &m, &ax));
    const int64_t R = m.shape[ax], I = prod(m.shape, ax + 1, m.ndim), O = prod(m.shape, 0, ax);
    rowb_job j = rowb_from(in, out, R, I, 0, a->v[LN_EPS].f, false);
    j.ntask = I > 1 ? O * ((I + LN_BLOCK - 1) / LN_BLOCK) : O * I; /* no rows when I == 0 */
    return rowb_run(op, &j, m.dtype, R * (I < LN_BLOCK ? I : LN_BLOCK), out[1], out[2]);
}

static hg_status in_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[1]);
    const int64_t R = prod(m.shape, 2, m.ndim);
    rowb_job j = rowb_from(in, out, R, 1, m.shape[1], a->v[IN_EPS].f, true);
    j.ntask = m.shape[0] * m.shape[1];
    return rowb_run(op, &j, m.dtype, R, out[1], out[2]);
}

static hg_status gn_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_meta m = hg_meta_of(in[1]);
    const int64_t G = a->v[GN_NUM_GROUPS].i, R = m.shape[1] / G * prod(m.shape, 2, m.ndim);
    rowb_job j = rowb_from(in, out, R, 1, G, a->v[GN_EPS].f, false);
    j.ntask = m.shape[0] * G;
    return rowb_run(op, &j, m.dtype, R, out[1], out[2]);
}

/* ---------------------------------------------------------------------------------------------
 * float16 (LayerNorm, GroupNorm and their gradients): every input is widened to float32 in the
 * workspace, the float32 kernel runs on those copies, and the outputs are narrowed back. The
 * workspace holds a float32 copy of each input and output (sizes from the op's shape rule).
 */

#define F16_MAX 8

typedef hg_status (*norm_infer_fn)(const hg_op_def *, const hg_attrs *, int, hg_meta *, int,
                                   hg_meta *);
typedef hg_status (*norm_fwd_fn)(const hg_op_def *, const hg_attrs *, const hg_exec_ctx *, int,
                                 hg_tensor *const *, int, hg_tensor *const *);

static size_t f16_round(size_t b) { return (b + 63) & ~(size_t)63; }

static size_t f16_workspace(const char *name, const hg_attrs *a, int nin, const hg_meta *in,
                            int nout, norm_infer_fn infer)
{
    if (in[0].dtype != HG_DTYPE_F16) return 0;
    hg_meta mi[F16_MAX], mo[F16_MAX];
    for (int i = 0; i < nin; i++) mi[i] = in[i];
    for (int i = 0; i < nout; i++) mo[i].ndim = -1;
    if (infer(&(hg_op_def){.name = name}, a, nin, mi, nout, mo) != HG_OK) return 0;
    size_t b = 0;
    for (int i = 0; i < nin; i++)
        b += f16_round(sizeof(float) * (size_t)hg_shape_size(mi[i].ndim, mi[i].shape));
    for (int i = 0; i < nout; i++)
        b += f16_round(sizeof(float) * (size_t)hg_shape_size(mo[i].ndim, mo[i].shape));
    return b;
}

/* Runs fn on float32 copies of float16 tensors; other dtypes go straight to fn. */
static hg_status f16_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                         hg_tensor *const *in, int nout, hg_tensor *const *out, norm_fwd_fn fn)
{
    if (in[0]->dtype != HG_DTYPE_F16) return fn(op, a, ctx, nin, in, nout, out);
    hg_storage st[2 * F16_MAX];
    hg_tensor tt[2 * F16_MAX];
    hg_tensor *pi[F16_MAX], *po[F16_MAX];
    char *w = ctx->workspace;
    for (int i = 0; i < nin + nout; i++) {
        hg_tensor *src = i < nin ? in[i] : out[i - nin];
        size_t nb = sizeof(float) * (size_t)src->size;
        if (nb > 0 && !w) return hg_error(HG_ERR_INTERNAL, "%s: workspace missing", op->name);
        memset(&st[i], 0, sizeof st[i]);
        st[i].data = w;
        st[i].nbytes = nb;
        memset(&tt[i], 0, sizeof tt[i]);
        tt[i].storage = &st[i];
        tt[i].size = src->size;
        tt[i].ndim = src->ndim;
        tt[i].dtype = HG_DTYPE_F32;
        memcpy(tt[i].shape, src->shape, sizeof(int64_t) * (size_t)src->ndim);
        if (i < nin) {
            hg_half_to_f32_n(hg_data(src), (float *)w, src->size);
            pi[i] = &tt[i];
        } else {
            po[i - nin] = &tt[i];
        }
        if (w) w += f16_round(nb);
    }
    HG_TRY(fn(op, a, ctx, nin, pi, nout, po));
    for (int i = 0; i < nout; i++) hg_f32_to_half_n(hg_data(po[i]), hg_data(out[i]), out[i]->size);
    return HG_OK;
}

static size_t ln_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return f16_workspace("LayerNorm", a, nin, in, 3, ln_infer);
}

static size_t gn_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return f16_workspace("GroupNorm", a, nin, in, 3, gn_infer);
}

static size_t ln_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return f16_workspace("_backward_LayerNorm", a, nin, in, 3, ln_bwd_infer);
}

static size_t gn_bwd_workspace(const hg_attrs *a, int nin, const hg_meta *in)
{
    return f16_workspace("_backward_GroupNorm", a, nin, in, 3, gn_bwd_infer);
}

static hg_status ln_forward16(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return f16_run(op, a, ctx, nin, in, nout, out, ln_forward);
}

static hg_status gn_forward16(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return f16_run(op, a, ctx, nin, in, nout, out, gn_forward);
}

static hg_status ln_bwd_forward16(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return f16_run(op, a, ctx, nin, in, nout, out, ln_bwd_forward);
}

static hg_status gn_bwd_forward16(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return f16_run(op, a, ctx, nin, in, nout, out, gn_bwd_forward);
}

/* One rule for the three: (dy, data, gamma, mean, std/var) -> data, gamma, beta gradients. */
static hg_status row_norm_grad(hg_grad_ctx *g)
{
    char name[48];
    snprintf(name, sizeof name, "_backward_%s", hg_g_node(g)->op->name);
    hg_sentry out[3];
    hg_g_op_fwd_attrs(
        g, name,
        HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1), hg_g_out(g, 1), hg_g_out(g, 2)),
        NULL, 3, out);
    for (int k = 0; k < 3; k++) hg_g_set(g, k, out[k]);
    return hg_g_status(g);
}

const hg_op_def hg_ops_norm[] = {
    {.name = "BatchNorm",
     .aliases = HG_NAMES("_npx_batch_norm"),
     .doc = "batch normalisation over all axes but `axis`; batch statistics in training, "
            "moving statistics otherwise (moving stats are updated by the backward in training, "
            "as MXNet's CPU kernel)",
     .input_names = HG_NAMES("data", "gamma", "beta", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("output", "mean", "var"),
     .attrs = k_bn_attrs,
     .num_attrs = HG_COUNT(k_bn_attrs),
     .num_inputs = 5,
     .num_outputs = 3,
     .get_num_visible_outputs = bn_visible,
     .infer = bn_infer,
     .forward = bn_forward,
     .grad = bn_grad,
     .flags = HG_OP_AUX_IN_TRAIN,
     .mutate_inputs = (1u << 3) | (1u << 4)},
    {.name = "_backward_BatchNorm",
     .doc = "gradient of BatchNorm from (ograd, data, gamma, mean, var = inverse std): data, "
            "gamma and beta gradients; when training and not use_global_stats, batch statistics "
            "and the in-place update of moving_mean / moving_var",
     .input_names = HG_NAMES("ograd", "data", "gamma", "mean", "var", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("data_grad", "gamma_grad", "beta_grad"),
     .attrs = k_bn_attrs,
     .num_attrs = HG_COUNT(k_bn_attrs),
     .num_inputs = 7,
     .num_outputs = 3,
     .infer = bn_bwd_infer,
     .forward = bn_bwd_forward,
     .flags = HG_OP_AUX_IN_TRAIN,
     .mutate_inputs = (1u << 5) | (1u << 6)},
    {.name = "_contrib_SyncBatchNorm",
     .doc = "batch normalisation over axis 1 with statistics shared across ndev devices (one on "
            "CPU: BatchNorm); output_mean_var gives the batch mean and variance",
     .input_names = HG_NAMES("data", "gamma", "beta", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("output", "mean", "var"),
     .attrs = k_sbn_attrs,
     .num_attrs = SBN_NATTRS,
     .num_inputs = 5,
     .num_outputs = 3,
     .get_num_visible_outputs = sbn_visible,
     .infer = sbn_infer,
     .forward = sbn_forward,
     .grad = sbn_grad,
     .flags = HG_OP_AUX_IN_TRAIN,
     .mutate_inputs = (1u << 3) | (1u << 4)},
    {.name = "_backward__contrib_SyncBatchNorm",
     .doc = "gradient of SyncBatchNorm from (ograd, data, gamma, mean, var, moving_mean, "
            "moving_var): BatchNorm's, with its moving-statistics update in training",
     .input_names = HG_NAMES("ograd", "data", "gamma", "mean", "var", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("data_grad", "gamma_grad", "beta_grad"),
     .attrs = k_sbn_attrs,
     .num_attrs = SBN_NATTRS,
     .num_inputs = 7,
     .num_outputs = 3,
     .infer = sbn_bwd_infer,
     .forward = sbn_bwd_forward,
     .workspace = sbn_bwd_workspace,
     .flags = HG_OP_AUX_IN_TRAIN,
     .mutate_inputs = (1u << 5) | (1u << 6)},
    {.name = "LayerNorm",
     .aliases = HG_NAMES("_npx_layer_norm"),
     .doc = "layer normalisation along `axis`: (x - mean) / sqrt(var + eps) * gamma + beta",
     .input_names = HG_NAMES("data", "gamma", "beta"),
     .output_names = HG_NAMES("output", "mean", "std"),
     .attrs = k_ln_attrs,
     .num_attrs = HG_COUNT(k_ln_attrs),
     .num_inputs = 3,
     .num_outputs = 3,
     .get_num_visible_outputs = ln_visible,
     .infer = ln_infer,
     .forward = ln_forward16,
     .workspace = ln_workspace,
     .grad = row_norm_grad},
    {.name = "_backward_LayerNorm",
     .doc = "gradient of LayerNorm from (ograd, data, gamma, mean, std): data, gamma and beta "
            "gradients",
     .input_names = HG_NAMES("ograd", "data", "gamma", "mean", "std"),
     .output_names = HG_NAMES("data_grad", "gamma_grad", "beta_grad"),
     .attrs = k_ln_attrs,
     .num_attrs = HG_COUNT(k_ln_attrs),
     .num_inputs = 5,
     .num_outputs = 3,
     .infer = ln_bwd_infer,
     .forward = ln_bwd_forward16,
     .workspace = ln_bwd_workspace},
    {.name = "InstanceNorm",
     .doc = "instance normalisation: per (sample, channel) over the spatial axes",
     .input_names = HG_NAMES("data", "gamma", "beta"),
     .output_names = HG_NAMES("output", "mean", "var"),
     .attrs = k_in_attrs,
     .num_attrs = HG_COUNT(k_in_attrs),
     .num_inputs = 3,
     .num_outputs = 3,
     .num_visible_outputs = 1,
     .infer = in_infer,
     .forward = in_forward,
     .grad = row_norm_grad},
    {.name = "_backward_InstanceNorm",
     .doc = "gradient of InstanceNorm from (ograd, data, gamma, mean, var): data, gamma and "
            "beta gradients",
     .input_names = HG_NAMES("ograd", "data", "gamma", "mean", "var"),
     .output_names = HG_NAMES("data_grad", "gamma_grad", "beta_grad"),
     .attrs = k_in_attrs,
     .num_attrs = HG_COUNT(k_in_attrs),
     .num_inputs = 5,
     .num_outputs = 3,
     .infer = in_bwd_infer,
     .forward = in_bwd_forward},
    {.name = "GroupNorm",
     .doc = "group normalisation: per (sample, group of channels); gamma / beta per group",
     .input_names = HG_NAMES("data", "gamma", "beta"),
     .output_names = HG_NAMES("output", "mean", "std"),
     .attrs = k_gn_attrs,
     .num_attrs = HG_COUNT(k_gn_attrs),
     .num_inputs = 3,
     .num_outputs = 3,
     .get_num_visible_outputs = gn_visible,
     .infer = gn_infer,
     .forward = gn_forward16,
     .workspace = gn_workspace,
     .grad = row_norm_grad},
    {.name = "_backward_GroupNorm",
     .doc = "gradient of GroupNorm from (ograd, data, gamma, mean, std): data, gamma and beta "
            "gradients (gamma / beta per group)",
     .input_names = HG_NAMES("ograd", "data", "gamma", "mean", "std"),
     .output_names = HG_NAMES("data_grad", "gamma_grad", "beta_grad"),
     .attrs = k_gn_attrs,
     .num_attrs = HG_COUNT(k_gn_attrs),
     .num_inputs = 5,
     .num_outputs = 3,
     .infer = gn_bwd_infer,
     .forward = gn_bwd_forward16,
     .workspace = gn_bwd_workspace},
    {0},
};
