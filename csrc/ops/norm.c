/* Normalisation ops (MXNet 1.x): BatchNorm, LayerNorm, InstanceNorm, GroupNorm. Forward only.
 *
 * Statistics are accumulated in double (two passes: mean, then the centred sum of squares, which
 * avoids the cancellation of E[x^2] - E[x]^2). All variances are biased (divide by the count).
 *
 * BatchNorm views the data as [outer, C, inner] with C = shape[axis]; statistics are per channel,
 * so the stats pass is split over channels and the output pass over (outer, channel) rows.
 * MXNet's CPU BatchNorm updates moving_mean / moving_var in its BACKWARD pass, not in forward
 * (MXNET_COMPAT §8.10): a forward-only pass, even in training mode, leaves them unchanged, so this
 * forward never writes its auxiliary inputs. The update belongs with the autograd rule; the op
 * still declares them in mutate_inputs so graphs treat them as auxiliary states.
 *
 * When the inner extent is small (channel-last data) the per-channel walk would stride through
 * memory, so the statistics are gathered instead as partial sums over chunks of the outer axis.
 *
 * LayerNorm, InstanceNorm and GroupNorm share one contiguous row kernel: InstanceNorm normalises
 * rows of (N*C, spatial), GroupNorm rows of (N*G, C/G*spatial), LayerNorm over the last axis rows
 * of (outer, R); gamma/beta are indexed per row (channel resp. group) or, for LayerNorm, per
 * element. LayerNorm over an inner axis ([outer, R, inner], inner > 1) sweeps blocks of inner
 * positions along R instead, so memory is still read contiguously.
 */
#include <math.h>
#include <string.h>

#include "../core/op.h"
#include "../core/parallel.h"

enum { BN_EPS, BN_MOMENTUM, BN_FIX_GAMMA, BN_USE_GLOBAL, BN_OUTPUT_MEAN_VAR, BN_AXIS, BN_CUDNN_OFF,
       BN_MIN_CALIB, BN_MAX_CALIB };
enum { LN_AXIS, LN_EPS, LN_OUTPUT_MEAN_VAR };
enum { IN_EPS };
enum { GN_NUM_GROUPS, GN_EPS, GN_OUTPUT_MEAN_VAR };

static const hg_attr_spec k_bn_attrs[] = {
    {"eps", HG_ATTR_FLOAT, 0, "0.001", "added to the variance before the square root", NULL},
    {"momentum", HG_ATTR_FLOAT, 0, "0.9", "running-average momentum of the moving statistics",
     NULL},
    {"fix_gamma", HG_ATTR_BOOL, 0, "True", "treat gamma as 1", NULL},
    {"use_global_stats", HG_ATTR_BOOL, 0, "False",
     "use moving_mean / moving_var in training too (no batch statistics)", NULL},
    {"output_mean_var", HG_ATTR_BOOL, 0, "False", "accepted for compatibility", NULL},
    {"axis", HG_ATTR_INT, 0, "1", "the channel axis", NULL},
    {"cudnn_off", HG_ATTR_BOOL, 0, "False", "accepted for compatibility; no effect on CPU", NULL},
    {"min_calib_range", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
     "quantisation calibration (accepted, unused)", NULL},
    {"max_calib_range", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",
     "quantisation calibration (accepted, unused)", NULL},
};

static const hg_attr_spec k_ln_attrs[] = {
    {"axis", HG_ATTR_INT, 0, "-1", "the axis to normalise over", NULL},
    {"eps", HG_ATTR_FLOAT, 0, "1e-05", "added to the variance before the square root", NULL},
    {"output_mean_var", HG_ATTR_BOOL, 0, "False", "accepted for compatibility", NULL},
};

static const hg_attr_spec k_in_attrs[] = {
    {"eps", HG_ATTR_FLOAT, 0, "0.001", "added to the variance before the square root", NULL},
};

static const hg_attr_spec k_gn_attrs[] = {
    {"num_groups", HG_ATTR_INT, 0, "1", "number of channel groups", NULL},
    {"eps", HG_ATTR_FLOAT, 0, "1e-05", "added to the variance before the square root", NULL},
    {"output_mean_var", HG_ATTR_BOOL, 0, "False", "accepted for compatibility", NULL},
};

/* ---------------------------------------------------------------------------------------------
 * Shape inference helpers
 */

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
            return hg_error(HG_ERR_VALUE, "%s: %s shape %s does not match data shape %s: "
                            "expected [%lld] (%s)", op->name, bn_names[i],
                            hg_shape_str(s0, in[i].ndim, in[i].shape),
                            hg_shape_str(s1, in[0].ndim, in[0].shape), (long long)n, what);
        if (in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "%s: %s dtype %s does not match data dtype %s",
                            op->name, bn_names[i], hg_dtype_name(in[i].dtype),
                            hg_dtype_name(in[0].dtype));
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
                           int64_t *size)
{
    char s0[HG_SHAPE_STR];
    HG_TRY(check_float(op, in[0].dtype));
    if (in[0].ndim < 1)
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 1 dim, got shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape));
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
    HG_TRY(data_axis(op, a->v[BN_AXIS].i, nin, in, &ax, &C));
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
                for (int64_t o = 0; o < O; o++) {                                               \
                    const T *p = x + (o * C + c) * I;                                           \
                    for (int64_t i = 0; i < I; i++) s += p[i];                                  \
                }                                                                               \
                m = n > 0 ? s / (double)n : 0.0;                                                \
                double q = 0;                                                                   \
                for (int64_t o = 0; o < O; o++) {                                               \
                    const T *p = x + (o * C + c) * I;                                           \
                    for (int64_t i = 0; i < I; i++) {                                           \
                        double d = p[i] - m;                                                    \
                        q += d * d;                                                             \
                    }                                                                           \
                }                                                                               \
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

static hg_status bn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                            int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin; (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    int ax = 0;
    HG_TRY(norm_axis(op, a->v[BN_AXIS].i, &m, &ax));
    bn_job j = {.x = hg_data(in[0]), .gamma = hg_data(in[1]), .beta = hg_data(in[2]),
                .rmean = hg_data(in[3]), .rvar = hg_data(in[4]), .y = hg_data(out[0]),
                .mean = hg_data(out[1]), .var = hg_data(out[2]),
                .O = prod(m.shape, 0, ax), .C = m.shape[ax], .I = prod(m.shape, ax + 1, m.ndim),
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
        hg_parallel_for(j.C, imax(1, HG_GRAIN_ELEMWISE / per_c),
                        f32 ? bn_stats_f32 : bn_stats_f64, &j);
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
    HG_TRY(data_axis(op, a->v[LN_AXIS].i, nin, in, &ax, &R));
    HG_TRY(infer_params(op, nin, in, 1, R, "one value per element on the axis"));
    set_meta(&out[0], in[0].dtype, in[0].ndim, in[0].shape);
    int64_t ms[HG_MAX_NDIM];
    memcpy(ms, in[0].shape, sizeof(int64_t) * (size_t)in[0].ndim);
    ms[ax] = 1;
    set_meta(&out[1], in[0].dtype, in[0].ndim, ms);
    set_meta(&out[2], in[0].dtype, in[0].ndim, ms);
    return HG_OK;
}

static hg_status ln_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                            int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx; (void)nin; (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    int ax = 0;
    HG_TRY(norm_axis(op, a->v[LN_AXIS].i, &m, &ax));
    row_job j = {.x = hg_data(in[0]), .gamma = hg_data(in[1]), .beta = hg_data(in[2]),
                 .y = hg_data(out[0]), .mean = hg_data(out[1]), .stat = hg_data(out[2]),
                 .R = m.shape[ax], .I = prod(m.shape, ax + 1, m.ndim), .pgroups = 0,
                 .eps = a->v[LN_EPS].f, .store_var = false};
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
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 2 dims (batch, channel, ...), "
                        "got shape %s", op->name, hg_shape_str(s0, x->ndim, x->shape));
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

static hg_status in_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                            int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op; (void)ctx; (void)nin; (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    row_job j = {.x = hg_data(in[0]), .gamma = hg_data(in[1]), .beta = hg_data(in[2]),
                 .y = hg_data(out[0]), .mean = hg_data(out[1]), .stat = hg_data(out[2]),
                 .R = prod(m.shape, 2, m.ndim), .I = 1, .pgroups = m.shape[1],
                 .eps = a->v[IN_EPS].f, .store_var = true};
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
    if (in[0].ndim >= 0) HG_TRY(check_float(op, in[0].dtype));
    hg_dtype dt = in[0].ndim >= 0 ? in[0].dtype : HG_DTYPE_F32;
    for (int i = 1; i < nin; i++) {
        if (!hg_meta_merge(&in[i], dt, 1, &G))
            return hg_error(HG_ERR_VALUE, "%s: %s shape %s does not match num_groups=%lld: "
                            "expected [%lld] (one value per group)", op->name,
                            i == 1 ? "gamma" : "beta", hg_shape_str(s0, in[i].ndim, in[i].shape),
                            (long long)G, (long long)G);
    }
    if (in[0].ndim < 0) {
        for (int i = 0; i < 3; i++) out[i].ndim = -1;
        return HG_OK;
    }
    if (in[0].ndim < 3) /* MXNet 1.x: CHECK_GE(dshape.ndim(), 3) */
        return hg_error(HG_ERR_VALUE, "%s: data must have at least 3 dims (batch, channel, "
                        "spatial...), got shape %s", op->name,
                        hg_shape_str(s0, in[0].ndim, in[0].shape));
    HG_TRY(infer_params(op, nin, in, 1, G, "one value per group"));
    const int64_t C = in[0].shape[1];
    if (C >= 0 && C % G != 0)
        return hg_error(HG_ERR_VALUE, "%s: channels (%lld, data shape %s) must be divisible by "
                        "num_groups=%lld", op->name, (long long)C,
                        hg_shape_str(s0, in[0].ndim, in[0].shape), (long long)G);
    set_meta(&out[0], in[0].dtype, in[0].ndim, in[0].shape);
    const int64_t ms[2] = {in[0].shape[0], G}; /* mean / std: (batch, num_groups) */
    set_meta(&out[1], in[0].dtype, 2, ms);
    set_meta(&out[2], in[0].dtype, 2, ms);
    return HG_OK;
}

static hg_status gn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                            int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op; (void)ctx; (void)nin; (void)nout;
    hg_meta m = hg_meta_of(in[0]);
    const int64_t G = a->v[GN_NUM_GROUPS].i;
    row_job j = {.x = hg_data(in[0]), .gamma = hg_data(in[1]), .beta = hg_data(in[2]),
                 .y = hg_data(out[0]), .mean = hg_data(out[1]), .stat = hg_data(out[2]),
                 .R = m.shape[1] / G * prod(m.shape, 2, m.ndim), .I = 1, .pgroups = G,
                 .eps = a->v[GN_EPS].f, .store_var = false};
    row_run(&j, m.dtype, m.shape[0] * G);
    return HG_OK;
}

const hg_op_def hg_ops_norm[] = {
    {.name = "BatchNorm", .aliases = HG_NAMES("_npx_batch_norm"),
     .doc = "batch normalisation over all axes but `axis`; batch statistics in training, "
            "moving statistics otherwise (moving stats are updated in backward, as MXNet's CPU "
            "kernel)",
     .input_names = HG_NAMES("data", "gamma", "beta", "moving_mean", "moving_var"),
     .output_names = HG_NAMES("output", "mean", "var"), .attrs = k_bn_attrs,
     .num_attrs = HG_COUNT(k_bn_attrs), .num_inputs = 5, .num_outputs = 3,
     .num_visible_outputs = 1, .infer = bn_infer, .forward = bn_forward,
     .mutate_inputs = (1u << 3) | (1u << 4)},
    {.name = "LayerNorm", .aliases = HG_NAMES("_npx_layer_norm"),
     .doc = "layer normalisation along `axis`: (x - mean) / sqrt(var + eps) * gamma + beta",
     .input_names = HG_NAMES("data", "gamma", "beta"),
     .output_names = HG_NAMES("output", "mean", "std"), .attrs = k_ln_attrs,
     .num_attrs = HG_COUNT(k_ln_attrs), .num_inputs = 3, .num_outputs = 3,
     .num_visible_outputs = 1, .infer = ln_infer, .forward = ln_forward},
    {.name = "InstanceNorm",
     .doc = "instance normalisation: per (sample, channel) over the spatial axes",
     .input_names = HG_NAMES("data", "gamma", "beta"),
     .output_names = HG_NAMES("output", "mean", "var"), .attrs = k_in_attrs,
     .num_attrs = HG_COUNT(k_in_attrs), .num_inputs = 3, .num_outputs = 3,
     .num_visible_outputs = 1, .infer = in_infer, .forward = in_forward},
    {.name = "GroupNorm",
     .doc = "group normalisation: per (sample, group of channels); gamma / beta per group",
     .input_names = HG_NAMES("data", "gamma", "beta"),
     .output_names = HG_NAMES("output", "mean", "std"), .attrs = k_gn_attrs,
     .num_attrs = HG_COUNT(k_gn_attrs), .num_inputs = 3, .num_outputs = 3,
     .num_visible_outputs = 1, .infer = gn_infer, .forward = gn_forward},
    {0},
};
