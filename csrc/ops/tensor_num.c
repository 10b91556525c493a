/* Numeric tensor ops of MXNet 1.9.1 outside the element-wise tables: logical_not, cumsum,
 * moments, erfinv, all_finite / multi_all_finite, amp_cast / amp_multicast, _histogram and
 * _linspace, with the _backward_ ops their gradients use.
 *
 * Values go through tx_ld/tx_st (double) so one loop serves every dtype; cumsum accumulates in
 * the output dtype as MXNet does (integer sums wrap, float16 rounds every step), by reading back
 * the previous output element.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/grad.h"
#include "ops/ops_util.h"
#include "ops/tensor_num.h"
#include "ops/tx_util.h"

static bool any_unknown(const hg_meta *m)
{
    if (m->ndim < 0) return true;
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] < 0) return true;
    return false;
}

static hg_status same_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    out[0] = in[0];
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * logical_not
 * ------------------------------------------------------------------------------------------- */

static hg_status logical_not_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    for (int64_t i = 0; i < in[0]->size; i++)
        tx_st(hg_data(out[0]), out[0]->dtype, i, tx_ld(hg_data(in[0]), in[0]->dtype, i) == 0);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * cumsum and _backward_cumsum
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_cs_attrs[] = {
    [CS_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
                 "axis of the running sum (None: over the flattened array)", NULL},
    [CS_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_OPTIONAL, "None",
                  "dtype of the result and the accumulator (None: the input's; bool: int64)", NULL},
};
_Static_assert(HG_COUNT(k_cs_attrs) == CS_NATTRS, "k_cs_attrs must match its enum");

static hg_status cumsum_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    hg_dtype dt = a->v[CS_DTYPE].is_none ? in[0].dtype : (hg_dtype)a->v[CS_DTYPE].i;
    if (!a->v[CS_DTYPE].is_none && (dt == HG_DTYPE_BOOL || dt == HG_DTYPE_U8))
        return hg_error(HG_ERR_VALUE,
                        "cumsum: dtype %s is not one of float16, float32, float64, "
                        "int8, int32, int64",
                        hg_dtype_name(dt));
    if (dt == HG_DTYPE_BOOL) dt = HG_DTYPE_I64;
    out[0].dtype = dt;
    if (TX_UNKNOWN(in[0])) return HG_OK;
    if (a->v[CS_AXIS].is_none) {
        if (any_unknown(&in[0])) return HG_OK;
        out[0].ndim = 1;
        out[0].shape[0] = tx_prod(in[0].shape, 0, in[0].ndim);
        return HG_OK;
    }
    int axis = 0;
    HG_TRY(tx_axis(op->name, a->v[CS_AXIS].i, &in[0], &axis));
    out[0] = in[0];
    out[0].dtype = dt;
    return HG_OK;
}

/* Lanes along the axis: outer x mid x inner. */
static void cs_dims(const hg_attrs *a, const hg_tensor *x, int64_t *outer, int64_t *mid,
                    int64_t *inner)
{
    if (a->v[CS_AXIS].is_none) {
        *outer = 1;
        *mid = x->size;
        *inner = 1;
        return;
    }
    int axis = (int)(a->v[CS_AXIS].i < 0 ? a->v[CS_AXIS].i + x->ndim : a->v[CS_AXIS].i);
    *outer = tx_prod(x->shape, 0, axis);
    *mid = x->shape[axis];
    *inner = tx_prod(x->shape, axis + 1, x->ndim);
}

/* Running sums of src into dst along each lane, forward or reversed. */
static void running_sum(const hg_tensor *src, hg_tensor *dst, int64_t outer, int64_t mid,
                        int64_t inner, bool reverse)
{
    const void *s = hg_data(src);
    void *d = hg_data(dst);
    bool isint = tx_is_int(dst->dtype) && dst->dtype != HG_DTYPE_BOOL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            for (int64_t k = 0; k < mid; k++) {
                int64_t j = reverse ? mid - 1 - k : k, p = (o * mid + j) * inner + i;
                int64_t q = (o * mid + (reverse ? j + 1 : j - 1)) * inner + i;
                if (isint) {
                    int64_t acc = k ? tx_ldi(d, dst->dtype, q) : 0;
                    tx_sti(d, dst->dtype, p,
                           (int64_t)((uint64_t)acc + (uint64_t)tx_ldi(s, src->dtype, p)));
                } else {
                    double acc = k ? tx_ld(d, dst->dtype, q) : 0;
                    tx_st(d, dst->dtype, p, acc + tx_ld(s, src->dtype, p));
                }
            }
}

static hg_status cumsum_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    int64_t outer, mid, inner;
    cs_dims(a, in[0], &outer, &mid, &inner);
    running_sum(in[0], out[0], outer, mid, inner, false);
    return HG_OK;
}

/* _backward_cumsum(ograd, data): the reversed running sum of ograd, in data's shape and dtype. */
static hg_status bwd_cumsum_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    out[0] = in[1];
    return HG_OK;
}

static hg_status bwd_cumsum_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    int64_t outer, mid, inner;
    cs_dims(a, in[1], &outer, &mid, &inner);
    running_sum(in[0], out[0], outer, mid, inner, true);
    return HG_OK;
}

static hg_status cumsum_grad(hg_grad_ctx *g)
{
    hg_sentry r;
    hg_g_op_fwd_attrs(g, "_backward_cumsum", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * moments and _backward_moments
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_mo_attrs[] = {
    [MO_AXES] = {"axes", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
                 "axes to reduce (required in effect: MXNet refuses None and ())", NULL},
    [MO_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False", "keep reduced axes with size 1", NULL},
};
_Static_assert(HG_COUNT(k_mo_attrs) == MO_NATTRS, "k_mo_attrs must match its enum");

/* Which dims are reduced; fails on an axis out of range or repeated. */
static hg_status mo_mask(const hg_attrs *a, const hg_meta *x, bool *red)
{
    char s[HG_SHAPE_STR];
    const hg_tuple *t = &a->v[MO_AXES].t;
    if (a->v[MO_AXES].is_none || t->n == 0)
        return hg_error(HG_ERR_VALUE, "moments: empty axes are not supported (as in MXNet); "
                                      "give every axis for global moments");
    for (int d = 0; d < x->ndim; d++) red[d] = false;
    for (int i = 0; i < t->n; i++) {
        int64_t ax = t->v[i] < 0 ? t->v[i] + x->ndim : t->v[i];
        if (ax < 0 || ax >= x->ndim || red[ax])
            return hg_error(HG_ERR_VALUE,
                            "moments: axis %lld is out of range or repeated for input of shape "
                            "%s",
                            (long long)t->v[i], hg_shape_str(s, x->ndim, x->shape));
        red[ax] = true;
    }
    return HG_OK;
}

static hg_status mo_out_meta(const hg_attrs *a, const hg_meta *x, hg_meta *o)
{
    bool red[HG_MAX_NDIM];
    HG_TRY(mo_mask(a, x, red));
    o->ndim = 0;
    o->dtype = x->dtype;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d]) o->shape[o->ndim++] = x->shape[d];
        else if (a->v[MO_KEEPDIMS].b) o->shape[o->ndim++] = 1;
    }
    if (o->ndim == 0) { /* MXNet has no 0-d results */
        o->ndim = 1;
        o->shape[0] = 1;
    }
    return HG_OK;
}

static hg_status moments_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    out[0].dtype = out[1].dtype = in[0].dtype;
    if (any_unknown(&in[0])) return HG_OK;
    HG_TRY(mo_out_meta(a, &in[0], &out[0]));
    out[1] = out[0];
    return HG_OK;
}

/* For each element of x, the index of its reduced output: map[i]. Returns the output count. */
static int64_t *mo_map(const hg_attrs *a, const hg_tensor *x, int64_t *nout_elems)
{
    bool red[HG_MAX_NDIM];
    hg_meta m = hg_meta_of(x);
    if (mo_mask(a, &m, red) != HG_OK) return NULL;
    int64_t ostride[HG_MAX_NDIM], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        ostride[d] = red[d] ? 0 : s;
        if (!red[d]) s *= x->shape[d];
    }
    *nout_elems = s;
    int64_t *map = malloc(sizeof(int64_t) * (size_t)(x->size > 0 ? x->size : 1));
    if (!map) return NULL;
    int64_t coord[HG_MAX_NDIM] = {0}, o = 0;
    for (int64_t i = 0; i < x->size; i++) {
        map[i] = o;
        for (int d = x->ndim - 1; d >= 0; d--) {
            coord[d]++;
            o += ostride[d];
            if (coord[d] < x->shape[d]) break;
            o -= ostride[d] * coord[d];
            coord[d] = 0;
        }
    }
    return map;
}

static hg_status moments_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    int64_t no = 0;
    int64_t *map = mo_map(a, x, &no);
    if (!map) return hg_error(HG_ERR_MEMORY, "moments: out of memory");
    double *acc = calloc((size_t)(2 * no + 1), sizeof(double));
    if (!acc) {
        free(map);
        return hg_error(HG_ERR_MEMORY, "moments: out of memory");
    }
    double cnt = no ? (double)x->size / (double)no : 0;
    for (int64_t i = 0; i < x->size; i++) acc[map[i]] += tx_ld(hg_data(x), x->dtype, i);
    for (int64_t j = 0; j < no; j++) acc[j] /= cnt;
    for (int64_t i = 0; i < x->size; i++) {
        double dv = tx_ld(hg_data(x), x->dtype, i) - acc[map[i]];
        acc[no + map[i]] += dv * dv;
    }
    for (int64_t j = 0; j < no; j++) {
        tx_st(hg_data(out[0]), out[0]->dtype, j, acc[j]);
        tx_st(hg_data(out[1]), out[1]->dtype, j, acc[no + j] / cnt);
    }
    free(acc);
    free(map);
    return HG_OK;
}

/* _backward_moments(dmean, dvar, data, mean): dmean / N + dvar * 2 (x - mean) / N. */
static hg_status bwd_moments_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    out[0] = in[2];
    return HG_OK;
}

static hg_status bwd_moments_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                     int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[2];
    int64_t no = 0;
    int64_t *map = mo_map(a, x, &no);
    if (!map) return hg_error(HG_ERR_MEMORY, "_backward_moments: out of memory");
    double cnt = no ? (double)x->size / (double)no : 1;
    for (int64_t i = 0; i < x->size; i++) {
        int64_t j = map[i];
        double dm = tx_ld(hg_data(in[0]), in[0]->dtype, j);
        double dv = tx_ld(hg_data(in[1]), in[1]->dtype, j);
        double mu = tx_ld(hg_data(in[3]), in[3]->dtype, j);
        double xv = tx_ld(hg_data(x), x->dtype, i);
        tx_st(hg_data(out[0]), out[0]->dtype, i, (dm + 2 * dv * (xv - mu)) / cnt);
    }
    free(map);
    return HG_OK;
}

static hg_status moments_grad(hg_grad_ctx *g)
{
    hg_sentry r;
    hg_g_op_fwd_attrs(g, "_backward_moments",
                      HG_GIN(hg_g_ograd(g, 0), hg_g_ograd(g, 1), hg_g_in(g, 0), hg_g_out(g, 0)),
                      NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * erfinv and _backward_erfinv
 * ------------------------------------------------------------------------------------------- */

static hg_status float_same_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    out[0] = in[0];
    if (!hg_is_float(in[0].dtype))
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported (float types only)", op->name,
                        hg_dtype_name(in[0].dtype));
    return HG_OK;
}

static hg_status erfinv_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    for (int64_t i = 0; i < in[0]->size; i++)
        tx_st(hg_data(out[0]), out[0]->dtype, i, hg_erfinv(tx_ld(hg_data(in[0]), in[0]->dtype, i)));
    return HG_OK;
}

/* _backward_erfinv(ograd, data): ograd * sqrt(pi) / 2 * exp(erfinv(x)^2). */
static hg_status bwd_erfinv_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    for (int64_t i = 0; i < in[0]->size; i++) {
        double r = hg_erfinv(tx_ld(hg_data(in[1]), in[1]->dtype, i));
        tx_st(hg_data(out[0]), out[0]->dtype, i,
              tx_ld(hg_data(in[0]), in[0]->dtype, i) * 0.88622692545275801 * exp(r * r));
    }
    return HG_OK;
}

static hg_status erfinv_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_backward_erfinv", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * all_finite / multi_all_finite
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_af_attrs[] = {
    [AF_INIT] = {"init_output", HG_ATTR_BOOL, 0, "True",
                 "set the output to 1 first (else only a 0 is written when a value is not finite)",
                 NULL},
};
_Static_assert(HG_COUNT(k_af_attrs) == AF_NATTRS, "k_af_attrs must match its enum");
static const hg_attr_spec k_maf_attrs[] = {
    [MAF_NUM] = {"num_arrays", HG_ATTR_INT, 0, "1", "number of arrays", NULL},
    [MAF_INIT] = {"init_output", HG_ATTR_BOOL, 0, "True",
                  "set the output to 1 first (else only a 0 is written when a value is not "
                  "finite)",
                  NULL},
};
_Static_assert(HG_COUNT(k_maf_attrs) == MAF_NATTRS, "k_maf_attrs must match its enum");

static hg_status af_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    out[0].dtype = HG_DTYPE_F32;
    out[0].ndim = 1;
    out[0].shape[0] = 1;
    return HG_OK;
}

static bool tensor_finite(const hg_tensor *t)
{
    if (!hg_is_float(t->dtype)) return true;
    for (int64_t i = 0; i < t->size; i++)
        if (!isfinite(tx_ld(hg_data(t), t->dtype, i))) return false;
    return true;
}

static hg_status af_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    bool init = nin == 1 && op->num_attrs == AF_NATTRS ? a->v[AF_INIT].b : a->v[MAF_INIT].b;
    float *o = hg_data(out[0]);
    if (init) o[0] = 1;
    for (int i = 0; i < nin; i++)
        if (!tensor_finite(in[i])) o[0] = 0;
    return HG_OK;
}

static int maf_nin(const hg_attrs *a) { return (int)a->v[MAF_NUM].i; }

/* ---------------------------------------------------------------------------------------------
 * amp_cast / amp_multicast and _backward_amp_cast
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_ac_attrs[] = {
    [AC_DTYPE] = {"dtype", HG_ATTR_DTYPE, HG_ATTR_REQUIRED, NULL,
                  "dtype float32/float16 inputs are cast to (others pass unchanged)", NULL},
};
_Static_assert(HG_COUNT(k_ac_attrs) == AC_NATTRS, "k_ac_attrs must match its enum");
static const hg_attr_spec k_am_attrs[] = {
    [AM_NUM] = {"num_outputs", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of input/output pairs",
                NULL},
    [AM_NARROW] = {"cast_narrow", HG_ATTR_BOOL, 0, "False",
                   "cast to the narrowest float type instead of the widest", NULL},
};
_Static_assert(HG_COUNT(k_am_attrs) == AM_NATTRS, "k_am_attrs must match its enum");

static bool amp_float(hg_dtype dt) { return dt == HG_DTYPE_F32 || dt == HG_DTYPE_F16; }

static hg_status ac_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    out[0] = in[0];
    if (amp_float(in[0].dtype)) out[0].dtype = (hg_dtype)a->v[AC_DTYPE].i;
    return HG_OK;
}

static hg_status am_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    bool narrow = a->v[AM_NARROW].b;
    hg_dtype w = narrow ? HG_DTYPE_F32 : in[0].dtype;
    for (int i = 0; i < nin; i++) {
        if (!narrow && in[i].dtype == HG_DTYPE_F32) w = HG_DTYPE_F32;
        else if (narrow && in[i].dtype == HG_DTYPE_F16) w = HG_DTYPE_F16;
    }
    for (int i = 0; i < nin; i++) {
        out[i] = in[i];
        if (amp_float(in[i].dtype)) out[i].dtype = w;
    }
    return HG_OK;
}

static hg_status cast_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    for (int k = 0; k < nout; k++) {
        const hg_tensor *x = in[k];
        if (x->dtype == out[k]->dtype) {
            if (hg_data(x) != hg_data(out[k]))
                memcpy(hg_data(out[k]), hg_data(x), (size_t)x->size * hg_dtype_size(x->dtype));
            continue;
        }
        for (int64_t i = 0; i < x->size; i++)
            tx_st(hg_data(out[k]), out[k]->dtype, i, tx_ld(hg_data(x), x->dtype, i));
    }
    return HG_OK;
}

static int am_num(const hg_attrs *a) { return (int)a->v[AM_NUM].i; }

/* _backward_amp_cast(ograd, data): ograd cast to data's dtype. */
static hg_status bwd_ac_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    out[0] = in[0];
    out[0].dtype = in[1].dtype;
    return HG_OK;
}

static hg_status bwd_ac_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return cast_forward(op, a, ctx, 1, in, 1, out);
}

static hg_status amp_grad(hg_grad_ctx *g)
{
    for (int k = 0; k < hg_g_nin(g); k++)
        if (hg_g_needs(g, k))
            hg_g_set(
                g, k,
                hg_g_op(g, "_backward_amp_cast", HG_GIN(hg_g_ograd(g, k), hg_g_in(g, k)), NULL));
    return hg_g_status(g);
}

static hg_status bwd_ac_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_backward_amp_cast", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

/* ---------------------------------------------------------------------------------------------
 * _histogram
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_hi_attrs[] = {
    [HI_CNT] = {"bin_cnt", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
                "number of equal bins (None: the bins input gives the edges)", NULL},
    [HI_RANGE] = {"range", HG_ATTR_STRING, HG_ATTR_OPTIONAL, "None",
                  "(lower, upper) of the equal bins, given with bin_cnt", NULL},
};
_Static_assert(HG_COUNT(k_hi_attrs) == HI_NATTRS, "k_hi_attrs must match its enum");

static int hi_nin(const hg_attrs *a) { return a->v[HI_CNT].is_none ? 2 : 1; }

static hg_status hi_range(const hg_attrs *a, double *lo, double *hi)
{
    const char *s = a->v[HI_RANGE].s;
    while (*s == ' ' || *s == '(' || *s == '[') s++;
    char *end;
    *lo = strtod(s, &end);
    if (end == s) goto bad;
    s = end;
    while (*s == ' ' || *s == ',') s++;
    *hi = strtod(s, &end);
    if (end == s) goto bad;
    s = end;
    while (*s == ' ' || *s == ')' || *s == ']') s++;
    if (*s) goto bad;
    return HG_OK;
bad:
    return hg_error(HG_ERR_VALUE, "_histogram: range '%s' is not a pair (lower, upper)",
                    a->v[HI_RANGE].s);
}

static hg_status hi_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    char s[HG_SHAPE_STR];
    out[0].dtype = HG_DTYPE_I64;
    out[1].dtype = in[0].dtype;
    if (a->v[HI_CNT].is_none != a->v[HI_RANGE].is_none)
        return hg_error(HG_ERR_VALUE, "_histogram: bin_cnt and range go together (give both or "
                                      "neither)");
    if (!a->v[HI_CNT].is_none) {
        double lo, hi;
        HG_TRY(hi_range(a, &lo, &hi));
        if (!(lo <= hi))
            return hg_error(HG_ERR_VALUE, "_histogram: range lower %g is above upper %g", lo, hi);
        if (a->v[HI_CNT].i <= 0)
            return hg_error(HG_ERR_VALUE, "_histogram: bin_cnt must be positive, got %lld",
                            (long long)a->v[HI_CNT].i);
        out[0].ndim = out[1].ndim = 1;
        out[0].shape[0] = a->v[HI_CNT].i;
        out[1].shape[0] = a->v[HI_CNT].i + 1;
        return HG_OK;
    }
    if (any_unknown(&in[1])) return HG_OK;
    if (in[1].ndim != 1 || in[1].shape[0] < 2)
        return hg_error(HG_ERR_VALUE, "_histogram: bins must be 1-D with at least 2 edges, got %s",
                        hg_shape_str(s, in[1].ndim, in[1].shape));
    if (in[1].dtype != in[0].dtype)
        return hg_error(HG_ERR_TYPE, "_histogram: bins dtype %s differs from data dtype %s",
                        hg_dtype_name(in[1].dtype), hg_dtype_name(in[0].dtype));
    out[0].ndim = out[1].ndim = 1;
    out[0].shape[0] = in[1].shape[0] - 1;
    out[1].shape[0] = in[1].shape[0];
    return HG_OK;
}

static hg_status hi_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    hg_tensor *edges = out[1];
    int64_t *cnt = hg_data(out[0]), nb = out[0]->shape[0];
    memset(cnt, 0, sizeof(int64_t) * (size_t)nb);
    if (nin == 1) {
        double lo, hi;
        HG_TRY(hi_range(a, &lo, &hi));
        if (lo == hi) {
            lo -= 0.5;
            hi += 0.5;
        }
        for (int64_t i = 0; i <= nb; i++)
            tx_st(hg_data(edges), edges->dtype, i, (hi * (double)i + (double)(nb - i) * lo) / nb);
        for (int64_t i = 0; i < x->size; i++) {
            double v = tx_ld(hg_data(x), x->dtype, i);
            if (!(v >= lo && v <= hi)) continue;
            int64_t t = (int64_t)((v - lo) * (double)nb / (hi - lo));
            if (t > nb - 1) t = nb - 1;
            if (t > 0 && v < tx_ld(hg_data(edges), edges->dtype, t)) t--;
            if (t != nb - 1 && v >= tx_ld(hg_data(edges), edges->dtype, t + 1)) t++;
            cnt[t]++;
        }
        return HG_OK;
    }
    const hg_tensor *b = in[1];
    for (int64_t i = 0; i <= nb; i++)
        tx_st(hg_data(edges), edges->dtype, i, tx_ld(hg_data(b), b->dtype, i));
    for (int64_t i = 0; i < x->size; i++) {
        double v = tx_ld(hg_data(x), x->dtype, i);
        if (!(v >= tx_ld(hg_data(b), b->dtype, 0) && v <= tx_ld(hg_data(b), b->dtype, nb)))
            continue;
        int64_t t = 0; /* the last edge <= v, the right-most bin closed */
        while (t < nb && v >= tx_ld(hg_data(b), b->dtype, t + 1)) t++;
        cnt[t < nb - 1 ? t : nb - 1]++;
    }
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * _linspace
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_ls_attrs[] = {
    [LS_START] = {"start", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "first value", NULL},
    [LS_STOP] = {"stop", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "end of the interval", NULL},
    [LS_NUM] = {"num", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "number of values (>= 0)", NULL},
    [LS_ENDPOINT] = {"endpoint", HG_ATTR_BOOL, 0, "True", "whether stop is the last value", NULL},
    [LS_CTX] = {"ctx", HG_ATTR_STRING, 0, "", "context of the output (ignored: CPU)", NULL},
    [LS_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "the output dtype", NULL},
};
_Static_assert(HG_COUNT(k_ls_attrs) == LS_NATTRS, "k_ls_attrs must match its enum");

static hg_status ls_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    if (a->v[LS_NUM].i < 0)
        return hg_error(HG_ERR_VALUE, "_linspace: num must be non-negative, got %lld",
                        (long long)a->v[LS_NUM].i);
    out[0].ndim = 1;
    out[0].shape[0] = a->v[LS_NUM].i;
    out[0].dtype = (hg_dtype)a->v[LS_DTYPE].i;
    return HG_OK;
}

static hg_status ls_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    int64_t num = a->v[LS_NUM].i, steps = a->v[LS_ENDPOINT].b ? num - 1 : num;
    double start = a->v[LS_START].f, step = steps > 0 ? (a->v[LS_STOP].f - start) / steps : 0;
    for (int64_t i = 0; i < num; i++)
        tx_st(hg_data(out[0]), out[0]->dtype, i, start + step * (double)i);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Registry entries
 * ------------------------------------------------------------------------------------------- */

const hg_op_def hg_ops_tensor_num[] = {
    {.name = "logical_not",
     .doc = "1 where the input is zero, else 0 (the input's dtype)",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .infer = same_infer,
     .forward = logical_not_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "cumsum",
     .aliases = HG_NAMES("_np_cumsum"),
     .doc = "running sum along axis (or over the flattened array)",
     .input_names = HG_NAMES("a"),
     .attrs = k_cs_attrs,
     .num_attrs = HG_COUNT(k_cs_attrs),
     .num_inputs = 1,
     .infer = cumsum_infer,
     .forward = cumsum_forward,
     .grad = cumsum_grad},
    {.name = "_backward_cumsum",
     .doc = "the gradient of cumsum: the reversed running sum of ograd in data's shape",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_cs_attrs,
     .num_attrs = HG_COUNT(k_cs_attrs),
     .num_inputs = 2,
     .infer = bwd_cumsum_infer,
     .forward = bwd_cumsum_forward},
    {.name = "moments",
     .doc = "mean and variance over axes",
     .input_names = HG_NAMES("data"),
     .output_names = HG_NAMES("mean", "var"),
     .attrs = k_mo_attrs,
     .num_attrs = HG_COUNT(k_mo_attrs),
     .num_inputs = 1,
     .num_outputs = 2,
     .infer = moments_infer,
     .forward = moments_forward,
     .grad = moments_grad},
    {.name = "_backward_moments",
     .doc = "the gradient of moments: (dmean + 2 dvar (x - mean)) / N",
     .input_names = HG_NAMES("dmean", "dvar", "data", "mean"),
     .attrs = k_mo_attrs,
     .num_attrs = HG_COUNT(k_mo_attrs),
     .num_inputs = 4,
     .infer = bwd_moments_infer,
     .forward = bwd_moments_forward},
    {.name = "erfinv",
     .doc = "inverse of the error function",
     .input_names = HG_NAMES("data"),
     .num_inputs = 1,
     .infer = float_same_infer,
     .forward = erfinv_forward,
     .grad = erfinv_grad},
    {.name = "_backward_erfinv",
     .doc = "the gradient of erfinv: ograd * sqrt(pi) / 2 * exp(erfinv(x)^2)",
     .input_names = HG_NAMES("ograd", "data"),
     .num_inputs = 2,
     .infer = float_same_infer,
     .forward = bwd_erfinv_forward},
    {.name = "all_finite",
     .doc = "[1.] when every element is finite, else [0.] (float32)",
     .input_names = HG_NAMES("data"),
     .attrs = k_af_attrs,
     .num_attrs = HG_COUNT(k_af_attrs),
     .num_inputs = 1,
     .infer = af_infer,
     .forward = af_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "multi_all_finite",
     .doc = "[1.] when every element of every array is finite, else [0.] (float32)",
     .input_names = HG_NAMES("data"),
     .attrs = k_maf_attrs,
     .num_attrs = HG_COUNT(k_maf_attrs),
     .get_num_inputs = maf_nin,
     .infer = af_infer,
     .forward = af_forward,
     .flags = HG_OP_VARARGS | HG_OP_NO_GRAD},
    {.name = "amp_cast",
     .doc = "float32/float16 input cast to dtype; other dtypes pass unchanged",
     .input_names = HG_NAMES("data"),
     .attrs = k_ac_attrs,
     .num_attrs = HG_COUNT(k_ac_attrs),
     .num_inputs = 1,
     .infer = ac_infer,
     .forward = cast_forward,
     .grad = amp_grad},
    {.name = "amp_multicast",
     .doc = "float32/float16 inputs cast to the widest (or narrowest) float type among them",
     .input_names = HG_NAMES("data"),
     .attrs = k_am_attrs,
     .num_attrs = HG_COUNT(k_am_attrs),
     .get_num_inputs = am_num,
     .get_num_outputs = am_num,
     .infer = am_infer,
     .forward = cast_forward,
     .flags = HG_OP_VARARGS,
     .grad = amp_grad},
    {.name = "_backward_amp_cast",
     .doc = "ograd cast to data's dtype (the gradient of amp_cast and amp_multicast)",
     .input_names = HG_NAMES("ograd", "data"),
     .num_inputs = 2,
     .infer = bwd_ac_infer,
     .forward = bwd_ac_forward,
     .grad = bwd_ac_grad},
    {.name = "_histogram",
     .doc = "counts (int64) of data in bins, and the bin edges",
     .input_names = HG_NAMES("data", "bins"),
     .attrs = k_hi_attrs,
     .num_attrs = HG_COUNT(k_hi_attrs),
     .num_inputs = 2,
     .num_outputs = 2,
     .get_num_inputs = hi_nin,
     .infer = hi_infer,
     .forward = hi_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_linspace",
     .aliases = HG_NAMES("linspace"),
     .doc = "num evenly spaced values from start to stop",
     .attrs = k_ls_attrs,
     .num_attrs = HG_COUNT(k_ls_attrs),
     .num_inputs = 0,
     .num_outputs = 1,
     .infer = ls_infer,
     .forward = ls_forward,
     .flags = HG_OP_NO_INPUTS | HG_OP_NO_GRAD},
    {0},
};
