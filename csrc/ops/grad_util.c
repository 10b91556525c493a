/* Internal ops that gradient rules emit: _sum_to_like (the gradient of a broadcast: x summed
 * down to the shape of `like`, NumPy broadcasting rules in reverse). */
#include <string.h>

#include "core/op.h"
#include "graph/grad.h"

static hg_status sum_like_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    if (in[0].ndim < 0 || in[1].ndim < 0) {
        out[0].ndim = -1;
        return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    }
    const hg_meta *x = &in[0], *l = &in[1];
    char sa[HG_SHAPE_STR], sb[HG_SHAPE_STR];
    bool ok = l->ndim <= x->ndim;
    for (int d = 0; ok && d < l->ndim; d++) {
        int64_t xd = x->shape[x->ndim - l->ndim + d], ld = l->shape[d];
        ok = ld == xd || ld == 1;
    }
    if (!ok)
        return hg_error(HG_ERR_VALUE, "%s: cannot sum shape %s down to %s", op->name,
                        hg_shape_str(sa, x->ndim, x->shape), hg_shape_str(sb, l->ndim, l->shape));
    if (x->dtype == HG_DTYPE_BOOL) /* integer gradients (int ops under autograd) are summed too */
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name,
                        hg_dtype_name(x->dtype));
    out[0] = *l;
    out[0].dtype = x->dtype;
    return HG_OK;
}

/* Output offset of every x element: x is walked in order with an odometer over its dims; dims
 * of x that `like` lacks or has as 1 add nothing to the output offset. */
#define SUM_LIKE(NAME, T, ACC, LD, ST)                                                        \
    static void NAME(const hg_tensor *x, hg_tensor *y, ACC *acc)                             \
    {                                                                                         \
        const T *xp = hg_data(x);                                                             \
        T *yp = hg_data(y);                                                                   \
        int nd = x->ndim, lead = x->ndim - y->ndim;                                           \
        int64_t ostride[HG_MAX_NDIM], idx[HG_MAX_NDIM] = {0}, s = 1;                          \
        for (int d = nd - 1; d >= 0; d--) {                                                   \
            int64_t yd = d >= lead ? y->shape[d - lead] : 1;                                  \
            ostride[d] = yd == 1 ? 0 : s;                                                     \
            s *= yd;                                                                          \
        }                                                                                     \
        for (int64_t o = 0; o < y->size; o++) acc[o] = 0;                                     \
        int64_t inner = nd ? x->shape[nd - 1] : 1, outer = inner ? x->size / inner : 0;       \
        int64_t istride = nd ? ostride[nd - 1] : 0;                                           \
        for (int64_t r = 0; r < outer; r++) {                                                 \
            int64_t base = 0;                                                                 \
            for (int d = 0; d < nd - 1; d++) base += idx[d] * ostride[d];                     \
            const T *row = xp + r * inner;                                                    \
            if (istride) {                                                                    \
                for (int64_t i = 0; i < inner; i++) acc[base + i] += LD(row[i]);              \
            } else {                                                                          \
                ACC t = 0;                                                                    \
                for (int64_t i = 0; i < inner; i++) t += LD(row[i]);                          \
                acc[base] += t;                                                               \
            }                                                                                 \
            for (int d = nd - 2; d >= 0; d--) {                                               \
                if (++idx[d] < x->shape[d]) break;                                            \
                idx[d] = 0;                                                                   \
            }                                                                                 \
        }                                                                                     \
        for (int64_t o = 0; o < y->size; o++) yp[o] = ST(acc[o]);                             \
    }
#define ID(v) (v)
#define F2H(v) hg_float_to_half((float)(v))
SUM_LIKE(sum_like_f32, float, float, ID, ID)
SUM_LIKE(sum_like_f64, double, double, ID, ID)
SUM_LIKE(sum_like_f16, uint16_t, float, hg_half_to_float, F2H)
#define ST_I32(v) ((int32_t)(uint32_t)(uint64_t)(v)) /* wraps like C++ int32 arithmetic */
#define ST_I8(v) ((int8_t)(uint8_t)(uint64_t)(v))
#define ST_U8(v) ((uint8_t)(uint64_t)(v))
SUM_LIKE(sum_like_i64, int64_t, int64_t, ID, ID)
SUM_LIKE(sum_like_i32, int32_t, int64_t, ID, ST_I32)
SUM_LIKE(sum_like_i8, int8_t, int64_t, ID, ST_I8)
SUM_LIKE(sum_like_u8, uint8_t, int64_t, ID, ST_U8)

static hg_status sum_like_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    if (x->size == y->size) { /* nothing to reduce (only size-1 dims differ) */
        memcpy(hg_data(y), hg_data(x), hg_tensor_nbytes(x));
        return HG_OK;
    }
    if (x->dtype == HG_DTYPE_F32) {
        sum_like_f32(x, y, hg_data(y)); /* accumulates in place: y is not read otherwise */
        return HG_OK;
    }
    if (x->dtype == HG_DTYPE_F64) {
        sum_like_f64(x, y, hg_data(y));
        return HG_OK;
    }
    if (x->dtype == HG_DTYPE_I64) {
        sum_like_i64(x, y, hg_data(y));
        return HG_OK;
    }
    size_t nb = (x->dtype == HG_DTYPE_F16 ? sizeof(float) : sizeof(int64_t)) *
                (size_t)(y->size ? y->size : 1);
    void *acc = hg_alloc(nb);
    if (!acc) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    if (x->dtype == HG_DTYPE_F16) sum_like_f16(x, y, acc);
    else if (x->dtype == HG_DTYPE_I32) sum_like_i32(x, y, acc);
    else if (x->dtype == HG_DTYPE_I8) sum_like_i8(x, y, acc);
    else sum_like_u8(x, y, acc);
    hg_free(acc, nb);
    return HG_OK;
}

static hg_status sum_like_grad(hg_grad_ctx *g)
{
    /* broadcast_like needs equal ndim; adding to zeros broadcasts NumPy-style */
    hg_sentry z = hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 0)), NULL);
    hg_g_set(g, 0, hg_g_op(g, "broadcast_add", HG_GIN(z, hg_g_ograd(g, 0)), NULL));
    return hg_g_status(g);
}

const hg_op_def hg_ops_grad_util[] = {
    {
        .name = "_sum_to_like",
        .doc = "Sums data down to the shape of like (the gradient of a broadcast).",
        .input_names = HG_NAMES("data", "like"),
        .num_inputs = 2,
        .infer = sum_like_infer,
        .forward = sum_like_forward,
        .grad = sum_like_grad,
    },
    {0},
};
