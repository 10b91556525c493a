/* Cast: converts between every dtype pair, float to int truncating with defined results for
 * NaN and out-of-range values. Its gradient is the output gradient cast back to the input's
 * dtype (_backward_Cast, which reads data for its dtype only). */
#include <stdbool.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/cast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HG_HAVE_F16C_PATH 1
#endif

/* ---- Cast -------------------------------------------------------------------------------- */

static const hg_attr_spec k_cast_attrs[] = {
    [CA_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_REQUIRED, NULL, "the output dtype", NULL},
};
_Static_assert(HG_COUNT(k_cast_attrs) == CA_NATTRS, "k_cast_attrs must match its enum");

static hg_status cast_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)op;
    (void)nin;
    (void)nout;
    /* The shape passes through both ways (MXNet's ElemwiseShape): an unknown input shape or
     * dimension comes back from an output known from a consumer. */
    if (out[0].ndim >= 0 && (in[0].ndim < 0 || in[0].ndim == out[0].ndim)) {
        if (in[0].ndim < 0) {
            in[0].ndim = out[0].ndim;
            for (int d = 0; d < out[0].ndim; d++) in[0].shape[d] = -1;
        }
        for (int d = 0; d < in[0].ndim; d++)
            if (in[0].shape[d] < 0) in[0].shape[d] = out[0].shape[d];
    }
    out[0] = in[0];
    out[0].dtype = (hg_dtype)a->v[CA_DTYPE].i;
    return HG_OK;
}

/* Float to integer without undefined behaviour, with the results x86 gives (and so NumPy and
 * MXNet there): truncate toward zero; NaN and values outside the int32 (int64) range become
 * INT32_MIN (INT64_MIN); 8-bit targets take the low byte of the int32, so -1.0 -> uint8 255. */
static inline int32_t f2i32(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}

static inline int64_t f2i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}

#define CV_INT(T, F, v) _Generic((v), float: (T)F(v), double: (T)F(v), default: (T)(v))
#define LD_f32(x) (x)
#define LD_f64(x) (x)
#define LD_f16(x) hg_half_to_float(x)
#define LD_u8(x) (x)
#define LD_i32(x) (x)
#define LD_i8(x) (x)
#define LD_i64(x) (x)
#define LD_b(x) ((x) != 0)
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define ST_f16(v) hg_float_to_half((float)(v))
#define ST_u8(v) CV_INT(uint8_t, f2i32, v)
#define ST_i32(v) CV_INT(int32_t, f2i32, v)
#define ST_i8(v) CV_INT(int8_t, f2i32, v)
#define ST_i64(v) CV_INT(int64_t, f2i64, v)
#define ST_b(v) ((uint8_t)((v) != 0))
#define DT_f32 HG_DTYPE_F32
#define DT_f64 HG_DTYPE_F64
#define DT_f16 HG_DTYPE_F16
#define DT_u8 HG_DTYPE_U8
#define DT_i32 HG_DTYPE_I32
#define DT_i8 HG_DTYPE_I8
#define DT_i64 HG_DTYPE_I64
#define DT_b HG_DTYPE_BOOL

#define CAST_SRC(X) X(f32, float) X(f64, double) X(f16, uint16_t) X(u8, uint8_t)                \
    X(i32, int32_t) X(i8, int8_t) X(i64, int64_t) X(b, uint8_t)
#define CAST_DST(X, S, ST) X(S, ST, f32, float) X(S, ST, f64, double) X(S, ST, f16, uint16_t)   \
    X(S, ST, u8, uint8_t) X(S, ST, i32, int32_t) X(S, ST, i8, int8_t) X(S, ST, i64, int64_t)   \
    X(S, ST, b, uint8_t)

typedef void (*cast_fn)(const void *in, void *out, int64_t b, int64_t e);

#define CAST_FN(S, ST, D, DT)                                                                   \
    static void cast_##S##_##D(const void *in, void *out, int64_t b, int64_t e)                 \
    {                                                                                           \
        const ST *x = in;                                                                       \
        DT *y = out;                                                                            \
        for (int64_t i = b; i < e; i++) y[i] = ST_##D(LD_##S(x[i]));                            \
    }
#define CAST_ROW_FNS(S, ST) CAST_DST(CAST_FN, S, ST)
CAST_SRC(CAST_ROW_FNS)

#define CAST_ENTRY(S, ST, D, DT) [DT_##D] = cast_##S##_##D,
#define CAST_ROW(S, ST) [DT_##S] = {CAST_DST(CAST_ENTRY, S, ST)},
static const cast_fn k_cast[HG_NUM_DTYPES][HG_NUM_DTYPES] = {CAST_SRC(CAST_ROW)};

typedef struct {
    cast_fn fn;
    const void *in;
    void *out;
} cast_job;

static void cast_range(void *ctx, int64_t b, int64_t e)
{
    const cast_job *j = ctx;
    j->fn(j->in, j->out, b, e);
}

#ifdef HG_HAVE_F16C_PATH
/* float32 <-> float16 with the F16C instructions where the CPU has them (chosen at run time;
 * the build targets baseline x86-64). Same results as hg_float_to_half: round to nearest even,
 * overflow to inf, subnormals kept; only NaN payloads may differ. */
__attribute__((target("avx,f16c"))) static void cast_f32_f16_f16c(const void *in, void *out,
                                                                  int64_t b, int64_t e)
{
    const float *x = in;
    uint16_t *y = out;
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < e; i++) y[i] = hg_float_to_half(x[i]);
}

__attribute__((target("avx,f16c"))) static void cast_f16_f32_f16c(const void *in, void *out,
                                                                  int64_t b, int64_t e)
{
    const uint16_t *x = in;
    float *y = out;
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < e; i++) y[i] = hg_half_to_float(x[i]);
}
#endif

static hg_status cast_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    if (x->dtype == y->dtype) {
        if (hg_data(y) != hg_data(x))
            memcpy(hg_data(y), hg_data(x), (size_t)x->size * hg_dtype_size(x->dtype));
        return HG_OK;
    }
    cast_job j = {k_cast[x->dtype][y->dtype], hg_data(x), hg_data(y)};
#ifdef HG_HAVE_F16C_PATH
    /* Every AVX2 processor has F16C; clang's __builtin_cpu_supports does not know "f16c". */
    if (__builtin_cpu_supports("avx2")) {
        if (x->dtype == HG_DTYPE_F32 && y->dtype == HG_DTYPE_F16) j.fn = cast_f32_f16_f16c;
        if (x->dtype == HG_DTYPE_F16 && y->dtype == HG_DTYPE_F32) j.fn = cast_f16_f32_f16c;
    }
#endif
    hg_parallel_for(x->size, HG_GRAIN_ELEMWISE, cast_range, &j);
    return HG_OK;
}

/* _backward_Cast(ograd, data): ograd converted to data's dtype. */
static hg_status cast_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    (void)a;
    (void)nin;
    (void)nout;
    out[0] = in[1];
    if (in[0].ndim < 0 || in[1].ndim < 0) return HG_OK;
    bool ok = in[0].ndim == in[1].ndim;
    for (int d = 0; ok && d < in[0].ndim; d++)
        ok = in[0].shape[d] < 0 || in[1].shape[d] < 0 || in[0].shape[d] == in[1].shape[d];
    if (!ok)
        return hg_error(HG_ERR_VALUE, "%s: the output gradient has shape %s, data %s", op->name,
                        hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, in[1].ndim, in[1].shape));
    return HG_OK;
}

/* Cast and _backward_Cast (a cast of input 0 too): the gradient goes back to input 0's dtype. */
static hg_status cast_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_backward_Cast", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

/* ---- registration ------------------------------------------------------------------------ */

const hg_op_def hg_ops_cast[] = {
    {.name = "Cast",
     .aliases = HG_NAMES("cast"),
     .doc = "converts to another dtype (float to int truncates)",
     .input_names = HG_NAMES("data"),
     .attrs = k_cast_attrs,
     .num_attrs = HG_COUNT(k_cast_attrs),
     .num_inputs = 1,
     .infer = cast_infer,
     .forward = cast_forward,
     .grad = cast_grad},
    {.name = "_backward_Cast",
     .doc = "gradient of Cast: ograd converted to data's dtype",
     .input_names = HG_NAMES("ograd", "data"),
     .num_inputs = 2,
     .infer = cast_bwd_infer,
     .forward = cast_forward,
     .grad = cast_grad},
    {0},
};
