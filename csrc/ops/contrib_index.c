/* Small contrib ops on indices and whole arrays, as MXNet 1.9.1's: div_sqrt_dim (x divided by
 * the square root of its last dimension, the scaling of dot-product attention), index_array
 * (the index of every element), index_copy (rows of a tensor replaced at given indices),
 * allclose (one uint8 verdict on two arrays) and arange_like (a range shaped like its input). */
#include <math.h>
#include <string.h>

#include "ops/contrib_index.h"
#include "ops/contrib_util.h"
#include "ops/ops_util.h"

static bool known(const hg_meta *m) { return m->ndim >= 0; }

/* ---- div_sqrt_dim ------------------------------------------------------------------------ */

static hg_status dsd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    char s[HG_SHAPE_STR];
    if (in[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: dtype bool is not supported", op->name);
    if (known(&in[0]) && in[0].ndim < 1)
        return hg_error(HG_ERR_VALUE, "%s: data needs at least one dimension, got %s", op->name,
                        hg_shape_str(s, in[0].ndim, in[0].shape));
    return hg_infer_same(op, a, nin, in, nout, out);
}

/* MXNet divides by sqrt(d) cast to the data's dtype: integer data is divided by the integer
 * part of the root, with integer division. */
#define DSD(T, CAST)                                                                           \
    static void dsd_##T(const hg_tensor *x, hg_tensor *y)                                      \
    {                                                                                          \
        int64_t d = x->shape[x->ndim - 1];                                                     \
        T r = (T)CAST(sqrt((double)d));                                                        \
        const T *p = hg_data(x);                                                               \
        T *q = hg_data(y);                                                                     \
        for (int64_t i = 0; i < x->size; i++) q[i] = (T)(p[i] / r);                            \
    }
#define ID(v) (v)
#define TRUNC(v) ((int64_t)(v))
DSD(float, ID)
DSD(double, ID)
DSD(int32_t, TRUNC)
DSD(int64_t, TRUNC)
DSD(int8_t, TRUNC)
DSD(uint8_t, TRUNC)

static hg_status dsd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    if (x->size == 0) return HG_OK;
    switch (x->dtype) {
    case HG_DTYPE_F32: dsd_float(x, out[0]); break;
    case HG_DTYPE_F64: dsd_double(x, out[0]); break;
    case HG_DTYPE_I32: dsd_int32_t(x, out[0]); break;
    case HG_DTYPE_I64: dsd_int64_t(x, out[0]); break;
    case HG_DTYPE_I8: dsd_int8_t(x, out[0]); break;
    case HG_DTYPE_U8: dsd_uint8_t(x, out[0]); break;
    case HG_DTYPE_F16: {
        double *v = hg_c_load(x);
        if (!v) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        float r = sqrtf((float)x->shape[x->ndim - 1]);
        for (int64_t i = 0; i < x->size; i++) v[i] = (float)v[i] / r;
        hg_c_store(out[0], v);
        hg_c_free(v, x->size);
        break;
    }
    default: break;
    }
    return HG_OK;
}

static hg_status dsd_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_contrib_div_sqrt_dim", HG_GIN(hg_g_ograd(g, 0)), NULL));
    return hg_g_status(g);
}

/* ---- index_array ------------------------------------------------------------------------- */

static const hg_attr_spec k_ia_attrs[] = {
    [IA_AXES] = {"axes", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
                 "the axes whose indices are given (negative: from the end); None for all", NULL},
};
_Static_assert(HG_COUNT(k_ia_attrs) == IA_NATTRS, "k_ia_attrs must match its enum");

static hg_status ia_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    out[0].dtype = HG_DTYPE_I64;
    if (!known(&in[0])) return HG_OK;
    int nd = in[0].ndim;
    const hg_attr_value *ax = &a->v[IA_AXES];
    int k = ax->is_none ? nd : ax->t.n;
    for (int i = 0; !ax->is_none && i < k; i++)
        if (ax->t.v[i] < -nd || ax->t.v[i] >= nd)
            return hg_error(HG_ERR_VALUE, "%s: axis %lld is out of range for %d dimensions",
                            op->name, (long long)ax->t.v[i], nd);
    if (nd + 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: data has too many dimensions (%d)", op->name, nd);
    out[0].ndim = nd + 1;
    memcpy(out[0].shape, in[0].shape, sizeof(int64_t) * (size_t)nd);
    out[0].shape[nd] = k;
    return HG_OK;
}

static hg_status ia_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    int nd = x->ndim;
    const hg_attr_value *ax = &a->v[IA_AXES];
    int k = ax->is_none ? nd : ax->t.n, axes[HG_MAX_TUPLE];
    for (int i = 0; i < k; i++)
        axes[i] = ax->is_none ? i : (int)(ax->t.v[i] < 0 ? ax->t.v[i] + nd : ax->t.v[i]);
    int64_t *o = hg_data(out[0]), idx[HG_MAX_NDIM] = {0};
    for (int64_t e = 0; e < x->size; e++) {
        for (int i = 0; i < k; i++) o[e * k + i] = idx[axes[i]];
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < x->shape[d]) break;
            idx[d] = 0;
        }
    }
    return HG_OK;
}

/* ---- index_copy -------------------------------------------------------------------------- */

static hg_status ic_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    const hg_meta *old = &in[0], *idx = &in[1], *nw = &in[2];
    if (known(nw) && nw->dtype != old->dtype)
        return hg_error(HG_ERR_TYPE, "%s: new_tensor has dtype %s, old_tensor %s (must match)",
                        op->name, hg_dtype_name(nw->dtype), hg_dtype_name(old->dtype));
    if (known(idx) && idx->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: index_vector must be numeric, got bool", op->name);
    out[0].dtype = old->dtype;
    if (!known(old) || !known(idx) || !known(nw)) return HG_OK;
    bool ok = old->ndim >= 1 && idx->ndim == 1 && nw->ndim == old->ndim &&
              nw->shape[0] == idx->shape[0];
    for (int d = 1; ok && d < old->ndim; d++) ok = nw->shape[d] == old->shape[d];
    if (!ok)
        return hg_error(HG_ERR_VALUE,
                        "%s: want old_tensor (N, ...), index_vector (K,) and new_tensor (K, ...) "
                        "with the same trailing dimensions; got %s, %s and %s",
                        op->name, hg_shape_str(s1, old->ndim, old->shape),
                        hg_shape_str(s2, idx->ndim, idx->shape),
                        hg_shape_str(s3, nw->ndim, nw->shape));
    out[0] = *old;
    return HG_OK;
}

static hg_status ic_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *old = in[0], *nw = in[2];
    int64_t n = old->shape[0], k = in[1]->size;
    size_t row = n ? hg_tensor_nbytes(old) / (size_t)n : 0;
    double *idx = hg_c_load(in[1]);
    if (!idx) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    hg_status st = HG_OK;
    for (int64_t i = 0; i < k; i++)
        if (!(idx[i] >= 0 && (int64_t)idx[i] < n)) {
            st = hg_error(HG_ERR_INDEX, "%s: index_vector[%lld] = %g is out of range [0, %lld)",
                          op->name, (long long)i, idx[i], (long long)n);
            goto done;
        }
    if (hg_data(out[0]) != hg_data(old))
        memcpy(hg_data(out[0]), hg_data(old), hg_tensor_nbytes(old));
    for (int64_t i = 0; i < k; i++)
        memcpy((char *)hg_data(out[0]) + (size_t)(int64_t)idx[i] * row,
               (const char *)hg_data(nw) + (size_t)i * row, row);
done:
    hg_c_free(idx, k);
    return st;
}

/* The copied rows take nothing from old_tensor; new_tensor's rows get their rows' gradient. */
static hg_status ic_grad(hg_grad_ctx *g)
{
    hg_sentry dy = hg_g_ograd(g, 0), idx = hg_g_in(g, 1), nw = hg_g_in(g, 2);
    if (hg_g_needs(g, 0)) {
        hg_sentry z = hg_g_op(g, "zeros_like", HG_GIN(nw), NULL);
        hg_g_set(g, 0, hg_g_op(g, "_contrib_index_copy", HG_GIN(dy, idx, z), NULL));
    }
    if (hg_g_needs(g, 2)) hg_g_set(g, 2, hg_g_op(g, "take", HG_GIN(dy, idx), HG_KV("axis", "0")));
    return hg_g_status(g);
}

/* ---- allclose ---------------------------------------------------------------------------- */

static const hg_attr_spec k_ac_attrs[] = {
    [AC_RTOL] = {"rtol", HG_ATTR_FLOAT, 0, "1e-05", "relative tolerance", NULL},
    [AC_ATOL] = {"atol", HG_ATTR_FLOAT, 0, "1e-08", "absolute tolerance", NULL},
    [AC_NAN] = {"equal_nan", HG_ATTR_BOOL, 0, "True", "whether NaN equals NaN", NULL},
};
_Static_assert(HG_COUNT(k_ac_attrs) == AC_NATTRS, "k_ac_attrs must match its enum");

static hg_status ac_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0].dtype = HG_DTYPE_U8;
    out[0].ndim = 0;
    if (known(&in[1]) && in[0].dtype != in[1].dtype)
        return hg_error(HG_ERR_TYPE, "%s: a has dtype %s, b %s (must match)", op->name,
                        hg_dtype_name(in[0].dtype), hg_dtype_name(in[1].dtype));
    if (known(&in[0]) && known(&in[1]) &&
        !hg_shape_equal(in[0].ndim, in[0].shape, in[1].ndim, in[1].shape))
        return hg_error(HG_ERR_VALUE, "%s: a %s and b %s must have the same shape", op->name,
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape));
    return HG_OK;
}

static hg_status ac_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    double *x = hg_c_load(in[0]), *y = hg_c_load(in[1]);
    hg_status st = HG_OK;
    if (!x || !y) {
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
        goto done;
    }
    /* MXNet's float tolerances, compared in the data's arithmetic (double holds it exactly) */
    double rtol = (float)a->v[AC_RTOL].f, atol = (float)a->v[AC_ATOL].f;
    bool eq_nan = a->v[AC_NAN].b, all = true;
    for (int64_t i = 0; all && i < in[0]->size; i++) {
        double p = x[i], q = y[i];
        if (isnan(p) || isnan(q)) all = eq_nan && isnan(p) && isnan(q);
        else all = p == q || fabs(p - q) <= atol + rtol * fabs(q);
    }
    *(uint8_t *)hg_data(out[0]) = all;
done:
    hg_c_free(x, in[0]->size);
    hg_c_free(y, in[1]->size);
    return st;
}

/* ---- arange_like ------------------------------------------------------------------------- */

static const hg_attr_spec k_al_attrs[] = {
    [AL_START] = {"start", HG_ATTR_FLOAT, 0, "0", "first value", NULL},
    [AL_STEP] = {"step", HG_ATTR_FLOAT, 0, "1", "spacing of the values", NULL},
    [AL_REPEAT] = {"repeat", HG_ATTR_INT, 0, "1", "times each value repeats", NULL},
    [AL_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context (the output is on the input's)", NULL},
    [AL_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
                 "a 1-D range as long as this axis; None: the input's whole shape", NULL},
};
_Static_assert(HG_COUNT(k_al_attrs) == AL_NATTRS, "k_al_attrs must match its enum");

static hg_status al_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)nin;
    (void)nout;
    if (in[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: dtype bool is not supported", op->name);
    if (a->v[AL_REPEAT].i < 1)
        return hg_error(HG_ERR_VALUE, "%s: repeat must be >= 1, got %lld", op->name,
                        (long long)a->v[AL_REPEAT].i);
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    if (a->v[AL_AXIS].is_none) {
        out[0] = in[0];
        return HG_OK;
    }
    int64_t ax = a->v[AL_AXIS].i, nd = in[0].ndim;
    if (ax < -nd || ax >= nd)
        return hg_error(HG_ERR_VALUE, "%s: axis %lld is out of range for %lld dimensions", op->name,
                        (long long)ax, (long long)nd);
    out[0].ndim = 1;
    out[0].shape[0] = in[0].shape[ax < 0 ? ax + nd : ax];
    return HG_OK;
}

/* MXNet computes start + (i / repeat) * step with start and step cast to the data's dtype
 * (so an int32 range from 1.5 by 0.7 is all ones). */
static hg_status al_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    hg_tensor *y = out[0];
    double *v = hg_c_alloc(y->size);
    if (!v) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    double start = a->v[AL_START].f, step = a->v[AL_STEP].f;
    int64_t rep = a->v[AL_REPEAT].i;
    hg_dtype dt = in[0]->dtype;
    for (int64_t i = 0; i < y->size; i++) {
        double k = (double)(i / rep);
        if (dt == HG_DTYPE_F64) v[i] = start + k * step;
        else if (hg_is_float(dt)) v[i] = (float)((float)start + (float)k * (float)step);
        else v[i] = (double)((int64_t)start + (int64_t)k * (int64_t)step);
    }
    hg_c_store(y, v);
    hg_c_free(v, y->size);
    return HG_OK;
}

const hg_op_def hg_ops_contrib_index[] = {
    {.name = "_contrib_div_sqrt_dim",
     .doc = "data / sqrt(data.shape[-1])",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = dsd_infer,
     .forward = dsd_forward,
     .flags = HG_OP_INPLACE,
     .grad = dsd_grad},
    {.name = "_contrib_index_array",
     .doc = "int64 array data.shape + (k,): the index of every element along the chosen axes",
     .input_names = HG_NAMES("data"),
     .attrs = k_ia_attrs,
     .num_attrs = IA_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = ia_infer,
     .forward = ia_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_index_copy",
     .doc = "a copy of old_tensor whose rows index_vector[i] are new_tensor[i]",
     .input_names = HG_NAMES("old_tensor", "index_vector", "new_tensor"),
     .num_inputs = 3,
     .num_outputs = 1,
     .infer = ic_infer,
     .forward = ic_forward,
     .grad = ic_grad},
    {.name = "_contrib_allclose",
     .doc = "uint8 scalar: 1 when |a - b| <= atol + rtol * |b| everywhere (NaN equal to NaN "
            "when equal_nan)",
     .input_names = HG_NAMES("a", "b"),
     .attrs = k_ac_attrs,
     .num_attrs = AC_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = ac_infer,
     .forward = ac_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_contrib_arange_like",
     .doc = "start, start + step, ... (each value repeat times) in the shape of data, or along "
            "one of its axes (no gradient: MXNet's is zero)",
     .input_names = HG_NAMES("data"),
     .attrs = k_al_attrs,
     .num_attrs = AL_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = al_infer,
     .forward = al_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
