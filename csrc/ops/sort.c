/* Ordering ops: topk, sort and argsort (MXNet 1.x names, attributes and semantics).
 *
 * Each row along the axis (or the flattened array for axis=None) is copied into (value, index)
 * pairs and ordered independently; rows run in parallel. The order is total and deterministic:
 * equal values keep their original index order (a stable sort) in both directions, and NaN
 * ranks above every number (last when ascending, first when descending). Full sorts use a
 * bottom-up merge sort (insertion-sorted runs); topk with k well below the row length selects
 * with a size-k heap ordered by (value, index), O(n log k).
 *
 * Supported data dtypes are MXNet's (float32/64, int32/64, int8, uint8; no float16/bool). Index
 * outputs take the `dtype` attribute (uint8, int32, int64, float16, float32, float64), which
 * must represent every index of the row exactly. sort and topk(ret_typ='value') have MXNet's
 * hidden second output: the int32 indices, which their gradient (_backward_topk) uses to put each
 * output gradient back at the position its value came from. argsort and topk's indices / mask
 * have no gradient.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/ew.h"
#include "ops/sort.h"

#define RUN 24 /* insertion-sorted run length before merging */

/* One ordering job: rows are (o, i) for o < outer, i < inner; row elements are n apart by
 * inner. The first k ordered elements of each row are written to the outputs that are set. */
typedef struct {
    const void *src;
    int64_t outer, n, inner, k;
    bool asc;
    void *val;          /* data dtype, shape (outer, k, inner) */
    void *idx;          /* idt, shape (outer, k, inner) */
    hg_dtype idt;
    void *mask;         /* data dtype, shape (outer, n, inner): 1 at the first k, else 0 */
    atomic_int oom;
} sort_job;

static inline void write_idx(void *base, hg_dtype dt, int64_t pos, int64_t v)
{
    switch (dt) {
    case HG_DTYPE_F32: ((float *)base)[pos] = (float)v; break;
    case HG_DTYPE_F64: ((double *)base)[pos] = (double)v; break;
    case HG_DTYPE_F16: ((uint16_t *)base)[pos] = hg_float_to_half((float)v); break;
    case HG_DTYPE_I32: ((int32_t *)base)[pos] = (int32_t)v; break;
    case HG_DTYPE_I64: ((int64_t *)base)[pos] = v; break;
    default: ((uint8_t *)base)[pos] = (uint8_t)v; break;
    }
}

/* Stable merge sort of pairs by value (BEFORE: strictly earlier), and heap selection of the
 * first k by (value, index). Both are stamped per value type and direction. */
#define DEFINE_ORDER(T, DIR, BEFORE)                                                            \
    static void msort_##T##_##DIR(pair_##T *a, pair_##T *tmp, int64_t n)                        \
    {                                                                                           \
        for (int64_t s = 0; s < n; s += RUN) {                                                  \
            int64_t e = s + RUN < n ? s + RUN : n;                                              \
            for (int64_t i = s + 1; i < e; i++) {                                               \
                pair_##T x = a[i];                                                              \
                int64_t j = i;                                                                  \
                while (j > s && BEFORE(x.v, a[j - 1].v)) {                                      \
                    a[j] = a[j - 1];                                                            \
                    j--;                                                                        \
                }                                                                               \
                a[j] = x;                                                                       \
            }                                                                                   \
        }                                                                                       \
        pair_##T *src = a, *dst = tmp;                                                          \
        for (int64_t w = RUN; w < n; w *= 2) {                                                  \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                         \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;    \
                int64_t p = lo, q = mid, o = lo;                                                \
                if (mid < hi && BEFORE(src[mid].v, src[mid - 1].v)) {                           \
                    while (p < mid && q < hi)                                                   \
                        dst[o++] = BEFORE(src[q].v, src[p].v) ? src[q++] : src[p++];            \
                }                                                                               \
                memcpy(dst + o, src + p, sizeof(pair_##T) * (size_t)(mid - p));                 \
                o += mid - p;                                                                   \
                memcpy(dst + o, src + q, sizeof(pair_##T) * (size_t)(hi - q));                  \
            }                                                                                   \
            pair_##T *t = src;                                                                  \
            src = dst;                                                                          \
            dst = t;                                                                            \
        }                                                                                       \
        if (src != a) memcpy(a, src, sizeof(pair_##T) * (size_t)n);                             \
    }                                                                                           \
    /* x comes after y in the total order (value, then index). */                               \
    static inline bool after_##T##_##DIR(pair_##T x, pair_##T y)                                \
    {                                                                                           \
        return BEFORE(y.v, x.v) || (x.v == y.v && x.i > y.i);                                   \
    }                                                                                           \
    static void hsift_##T##_##DIR(pair_##T *h, int64_t k, int64_t p)                            \
    {                                                                                           \
        pair_##T x = h[p];                                                                      \
        for (;;) {                                                                              \
            int64_t c = 2 * p + 1;                                                              \
            if (c >= k) break;                                                                  \
            if (c + 1 < k && after_##T##_##DIR(h[c + 1], h[c])) c++;                            \
            if (!after_##T##_##DIR(h[c], x)) break;                                             \
            h[p] = h[c];                                                                        \
            p = c;                                                                              \
        }                                                                                       \
        h[p] = x;                                                                               \
    }                                                                                           \
    /* Leaves the first k of a[0, n) in order in a[0, k); the rest of a is garbage. */          \
    static void hselect_##T##_##DIR(pair_##T *a, int64_t n, int64_t k)                          \
    {                                                                                           \
        for (int64_t p = k / 2 - 1; p >= 0; p--) hsift_##T##_##DIR(a, k, p);                    \
        for (int64_t j = k; j < n; j++) {                                                       \
            if (after_##T##_##DIR(a[0], a[j])) {                                                \
                a[0] = a[j];                                                                    \
                hsift_##T##_##DIR(a, k, 0);                                                     \
            }                                                                                   \
        }                                                                                       \
        for (int64_t e = k - 1; e > 0; e--) {                                                   \
            pair_##T t = a[0];                                                                  \
            a[0] = a[e];                                                                        \
            a[e] = t;                                                                           \
            hsift_##T##_##DIR(a, e, 0);                                                         \
        }                                                                                       \
    }

#define LESS(x, y) ((x) < (y))
#define GREATER(x, y) ((x) > (y))

/* Per value type: the pair, both directions, and the row driver. ISNAN(x) is 0 for integers. */
#define DEFINE_SORT(T, ISNAN)                                                                   \
    typedef struct {                                                                            \
        T v;                                                                                    \
        int32_t i;                                                                              \
    } pair_##T;                                                                                 \
    DEFINE_ORDER(T, asc, LESS)                                                                  \
    DEFINE_ORDER(T, desc, GREATER)                                                              \
    static void rows_##T(const sort_job *j, int64_t begin, int64_t end, pair_##T *buf,          \
                         pair_##T *tmp)                                                         \
    {                                                                                           \
        const T *src = j->src;                                                                  \
        const int64_t n = j->n, inner = j->inner, k = j->k;                                     \
        for (int64_t r = begin; r < end; r++) {                                                 \
            int64_t o = r / inner, i = r % inner, m = 0, q = 0;                                 \
            const T *x = src + o * n * inner + i;                                               \
            for (int64_t e = 0; e < n; e++) {                                                   \
                T v = x[e * inner];                                                             \
                if (ISNAN(v)) tmp[q++] = (pair_##T){v, (int32_t)e};                             \
                else buf[m++] = (pair_##T){v, (int32_t)e};                                      \
            }                                                                                   \
            /* NaN block: after the numbers when ascending, before them when descending. */     \
            pair_##T *num = buf;                                                                \
            int64_t kk = k < m ? k : m;                                                         \
            if (q > 0) {                                                                        \
                if (j->asc) {                                                                   \
                    memcpy(buf + m, tmp, sizeof(pair_##T) * (size_t)q);                         \
                } else {                                                                        \
                    memmove(buf + q, buf, sizeof(pair_##T) * (size_t)m);                        \
                    memcpy(buf, tmp, sizeof(pair_##T) * (size_t)q);                             \
                    num = buf + q;                                                              \
                    kk = k - q < 0 ? 0 : (k - q < m ? k - q : m);                               \
                }                                                                               \
            }                                                                                   \
            if (kk > 0) {                                                                       \
                if (kk * 8 > m) {                                                               \
                    if (j->asc) msort_##T##_asc(num, tmp, m);                                   \
                    else msort_##T##_desc(num, tmp, m);                                         \
                } else {                                                                        \
                    if (j->asc) hselect_##T##_asc(num, m, kk);                                  \
                    else hselect_##T##_desc(num, m, kk);                                        \
                }                                                                               \
            }                                                                                   \
            int64_t base = o * k * inner + i;                                                   \
            if (j->val)                                                                         \
                for (int64_t e = 0; e < k; e++) ((T *)j->val)[base + e * inner] = buf[e].v;     \
            if (j->idx)                                                                         \
                for (int64_t e = 0; e < k; e++)                                                 \
                    write_idx(j->idx, j->idt, base + e * inner, buf[e].i);                      \
            if (j->mask) {                                                                      \
                T *mk = (T *)j->mask + o * n * inner + i;                                       \
                for (int64_t e = 0; e < n; e++) mk[e * inner] = 0;                              \
                for (int64_t e = 0; e < k; e++) mk[(int64_t)buf[e].i * inner] = 1;              \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void range_##T(void *ctx, int64_t begin, int64_t end)                                \
    {                                                                                           \
        sort_job *j = ctx;                                                                      \
        size_t bytes = sizeof(pair_##T) * (size_t)(j->n > 0 ? j->n : 1) * 2;                    \
        pair_##T *buf = hg_alloc(bytes);                                                        \
        if (!buf) {                                                                             \
            atomic_store(&j->oom, 1);                                                           \
            return;                                                                             \
        }                                                                                       \
        rows_##T(j, begin, end, buf, buf + (j->n > 0 ? j->n : 1));                              \
        hg_free(buf, bytes);                                                                    \
    }

#define NOT_NAN(x) 0
#define IS_NAN(x) ((x) != (x))
DEFINE_SORT(f32, IS_NAN)
DEFINE_SORT(f64, IS_NAN)
DEFINE_SORT(i32, NOT_NAN)
DEFINE_SORT(i64, NOT_NAN)
DEFINE_SORT(i8, NOT_NAN)
DEFINE_SORT(u8, NOT_NAN)

static hg_status run_sort(const char *opname, hg_dtype dt, sort_job *j)
{
    hg_range_fn fn;
    switch (dt) {
    case HG_DTYPE_F32: fn = range_f32; break;
    case HG_DTYPE_F64: fn = range_f64; break;
    case HG_DTYPE_I32: fn = range_i32; break;
    case HG_DTYPE_I64: fn = range_i64; break;
    case HG_DTYPE_I8: fn = range_i8; break;
    case HG_DTYPE_U8: fn = range_u8; break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", opname, hg_dtype_name(dt));
    }
    atomic_init(&j->oom, 0);
    int64_t rows = j->outer * j->inner;
    int64_t grain = HG_GRAIN_ELEMWISE / 4 / (j->n > 0 ? j->n : 1);
    hg_parallel_for(rows, grain > 0 ? grain : 1, fn, j);
    if (atomic_load(&j->oom))
        return hg_error(HG_ERR_MEMORY, "%s: out of memory for a row of %lld elements", opname,
                        (long long)j->n);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Shape rules shared by the three ops
 * ------------------------------------------------------------------------------------------- */

/* Row layout of the data for an axis attribute (None: the flattened array). n is -1 when the
 * axis length is not known yet (graph inference). */
typedef struct {
    int axis; /* -1 for None */
    int64_t n;
} row_plan;

static hg_status plan_rows(const char *opname, const hg_attr_value *axis_attr, const hg_meta *x,
                           row_plan *p)
{
    char s[HG_SHAPE_STR];
    if (x->dtype == HG_DTYPE_F16 || x->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE,
                        "%s: dtype %s is not supported (use float32, float64, "
                        "int32, int64, int8 or uint8)",
                        opname, hg_dtype_name(x->dtype));
    if (axis_attr->is_none) {
        p->axis = -1;
        p->n = hg_shape_size(x->ndim, x->shape);
        for (int d = 0; d < x->ndim; d++)
            if (x->shape[d] < 0) p->n = -1;
    } else {
        int64_t axis = axis_attr->i;
        if (x->ndim == 0 || axis < -x->ndim || axis >= x->ndim)
            return hg_error(HG_ERR_VALUE,
                            "%s: axis=%lld is out of range for input of shape %s "
                            "(%d-d; axis must be in [%d, %d] or None)",
                            opname, (long long)axis, hg_shape_str(s, x->ndim, x->shape), x->ndim,
                            -x->ndim, x->ndim - 1);
        p->axis = (int)(axis < 0 ? axis + x->ndim : axis);
        p->n = x->shape[p->axis];
    }
    if (p->n > INT32_MAX)
        return hg_error(HG_ERR_VALUE,
                        "%s: %lld elements along the axis is more than the %d "
                        "supported",
                        opname, (long long)p->n, INT32_MAX);
    return HG_OK;
}

/* Output shape with k elements along the axis (None: (k,)). */
static void plan_shape(const hg_meta *x, const row_plan *p, int64_t k, hg_meta *out)
{
    if (p->axis < 0) {
        out->ndim = 1;
        out->shape[0] = k;
    } else {
        out->ndim = x->ndim;
        memcpy(out->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        out->shape[p->axis] = k;
    }
}

/* Index dtypes MXNet accepts, and the largest row length each represents exactly. */
static hg_status check_index_dtype(const char *opname, hg_dtype dt, int64_t n)
{
    int64_t max;
    switch (dt) {
    case HG_DTYPE_U8: max = UINT8_MAX; break;
    case HG_DTYPE_F16: max = 2048; break;
    case HG_DTYPE_F32: max = 16777216; break;
    case HG_DTYPE_I32: max = INT32_MAX; break;
    case HG_DTYPE_F64:
    case HG_DTYPE_I64: max = INT64_MAX; break;
    default:
        return hg_error(HG_ERR_TYPE,
                        "%s: dtype %s is not supported for indices (use uint8, "
                        "int32, int64, float16, float32 or float64)",
                        opname, hg_dtype_name(dt));
    }
    if (n > max)
        return hg_error(HG_ERR_VALUE,
                        "%s: dtype %s cannot represent the indices of %lld elements "
                        "exactly (at most %lld)",
                        opname, hg_dtype_name(dt), (long long)n, (long long)max);
    return HG_OK;
}

static void layout(const hg_tensor *x, const hg_attr_value *axis_attr, sort_job *j)
{
    j->src = hg_data(x);
    if (axis_attr->is_none) {
        j->outer = 1;
        j->n = x->size;
        j->inner = 1;
        return;
    }
    int axis = (int)(axis_attr->i < 0 ? axis_attr->i + x->ndim : axis_attr->i);
    j->outer = 1;
    j->inner = 1;
    for (int d = 0; d < axis; d++) j->outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) j->inner *= x->shape[d];
    j->n = x->shape[axis];
}

/* ---------------------------------------------------------------------------------------------
 * topk
 * ------------------------------------------------------------------------------------------- */

static const char *const k_ret_types[] = {
    [RET_VALUE] = "value", [RET_INDICES] = "indices", [RET_MASK] = "mask",
    [RET_BOTH] = "both",   [RET_NTYPES] = NULL,
};
_Static_assert(HG_COUNT(k_ret_types) == RET_NTYPES + 1, "k_ret_types must match its enum");
static const hg_attr_spec k_topk_attrs[] = {
    [TK_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "-1",
                 "axis to select along (None: the flattened array)", NULL},
    [TK_K] = {"k", HG_ATTR_INT, 0, "1", "number of elements to select (k < 1: all of them)", NULL},
    [TK_RET] = {"ret_typ", HG_ATTR_ENUM, 0, "indices",
                "what to return: the values, their indices, a 0/1 "
                "mask of the input's shape, or both values and indices",
                k_ret_types},
    [TK_ASCEND] = {"is_ascend", HG_ATTR_BOOL, 0, "False",
                   "select the k smallest instead of the k largest", NULL},
    [TK_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "dtype of the returned indices", NULL},
};
_Static_assert(HG_COUNT(k_topk_attrs) == TK_NATTRS, "k_topk_attrs must match its enum");

/* 'value' keeps the indices as a hidden second output (int32), as MXNet does, for the gradient. */
static int topk_num_outputs(const hg_attrs *a)
{
    return a->v[TK_RET].i == RET_BOTH || a->v[TK_RET].i == RET_VALUE ? 2 : 1;
}

static int topk_num_visible_outputs(const hg_attrs *a)
{
    return a->v[TK_RET].i == RET_BOTH ? 2 : 1;
}

/* The dtype of topk's index output for ret_typ; 'value' hides int32 indices. */
static hg_dtype topk_index_dtype(const hg_attrs *a)
{
    return a->v[TK_RET].i == RET_VALUE ? HG_DTYPE_I32 : (hg_dtype)a->v[TK_DTYPE].i;
}

/* k after MXNet's rule (k < 1 selects the whole row); -1 when the row length is unknown. */
static int64_t topk_k(const hg_attrs *a, int64_t n) { return a->v[TK_K].i >= 1 ? a->v[TK_K].i : n; }

static hg_status topk_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    const hg_meta *x = &in[0];
    int ret = (int)a->v[TK_RET].i;
    hg_dtype idt = topk_index_dtype(a);
    bool two = ret == RET_BOTH || ret == RET_VALUE;
    char s[HG_SHAPE_STR];
    out[0].dtype = ret == RET_INDICES ? idt : x->dtype;
    if (two) out[1].dtype = idt;
    if (x->ndim < 0) return HG_OK;
    row_plan p = {0, 0};
    HG_TRY(plan_rows("topk", &a->v[TK_AXIS], x, &p));
    int64_t k = topk_k(a, p.n);
    if (p.n >= 0 && (k > p.n || (k < 1 && p.n > 0))) {
        char ax[32] = "None";
        if (p.axis >= 0) snprintf(ax, sizeof ax, "%d", p.axis);
        return hg_error(HG_ERR_VALUE,
                        "topk: k=%lld must be in [1, %lld], the number of elements "
                        "along the axis (input shape %s, axis=%s)",
                        (long long)a->v[TK_K].i, (long long)p.n, hg_shape_str(s, x->ndim, x->shape),
                        ax);
    }
    if (ret != RET_MASK) HG_TRY(check_index_dtype("topk", idt, p.n));
    if (ret == RET_MASK) {
        out[0].ndim = x->ndim;
        memcpy(out[0].shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    } else {
        plan_shape(x, &p, k, &out[0]);
        if (two) plan_shape(x, &p, k, &out[1]);
    }
    return HG_OK;
}

static hg_status topk_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    sort_job j = {.asc = a->v[TK_ASCEND].b, .idt = topk_index_dtype(a)};
    layout(in[0], &a->v[TK_AXIS], &j);
    j.k = topk_k(a, j.n);
    switch ((int)a->v[TK_RET].i) {
    case RET_INDICES: j.idx = hg_data(out[0]); break;
    case RET_MASK: j.mask = hg_data(out[0]); break;
    default: /* value (hidden indices) and both */
        j.val = hg_data(out[0]);
        j.idx = hg_data(out[1]);
        break;
    }
    return run_sort("topk", in[0]->dtype, &j);
}

/* ---------------------------------------------------------------------------------------------
 * sort and argsort
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_sort_attrs[] = {
    [SO_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "-1",
                 "axis to sort along (None: the flattened array)", NULL},
    [SO_ASCEND] = {"is_ascend", HG_ATTR_BOOL, 0, "True", "ascending (True) or descending order",
                   NULL},
};
_Static_assert(HG_COUNT(k_sort_attrs) == SO_DTYPE, "k_sort_attrs: argsort's but dtype");
static const hg_attr_spec k_argsort_attrs[] = {
    [SO_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "-1",
                 "axis to sort along (None: the flattened array)", NULL},
    [SO_ASCEND] = {"is_ascend", HG_ATTR_BOOL, 0, "True", "ascending (True) or descending order",
                   NULL},
    [SO_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "dtype of the returned indices", NULL},
};
_Static_assert(HG_COUNT(k_argsort_attrs) == SO_NATTRS, "k_argsort_attrs must match its enum");

static hg_status sort_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    const hg_meta *x = &in[0];
    out[0].dtype = x->dtype;
    out[1].dtype = HG_DTYPE_I32;
    if (x->ndim < 0) return HG_OK;
    row_plan p = {0, 0};
    HG_TRY(plan_rows("sort", &a->v[SO_AXIS], x, &p));
    plan_shape(x, &p, p.n, &out[0]);
    plan_shape(x, &p, p.n, &out[1]);
    return HG_OK;
}

static hg_status sort_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    sort_job j = {.asc = a->v[SO_ASCEND].b, .idt = HG_DTYPE_I32};
    layout(in[0], &a->v[SO_AXIS], &j);
    j.k = j.n;
    j.val = hg_data(out[0]);
    j.idx = hg_data(out[1]);
    return run_sort("sort", in[0]->dtype, &j);
}

static hg_status argsort_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    const hg_meta *x = &in[0];
    const hg_attr_value *axis = &a->v[SO_AXIS];
    out[0].dtype = (hg_dtype)a->v[SO_DTYPE].i;
    if (x->ndim < 0) return HG_OK;
    if (x->ndim == 0 && (axis->is_none || axis->i == 0 || axis->i == -1)) {
        /* MXNet: a scalar's argsort is [0]. */
        HG_TRY(check_index_dtype("argsort", out[0].dtype, 1));
        if (x->dtype == HG_DTYPE_F16 || x->dtype == HG_DTYPE_BOOL)
            return hg_error(HG_ERR_TYPE, "argsort: dtype %s is not supported",
                            hg_dtype_name(x->dtype));
        out[0].ndim = 1;
        out[0].shape[0] = 1;
        return HG_OK;
    }
    row_plan p = {0, 0};
    HG_TRY(plan_rows("argsort", axis, x, &p));
    HG_TRY(check_index_dtype("argsort", out[0].dtype, p.n));
    plan_shape(x, &p, p.n, &out[0]);
    return HG_OK;
}

static hg_status argsort_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    sort_job j = {.asc = a->v[SO_ASCEND].b, .idt = (hg_dtype)a->v[SO_DTYPE].i};
    if (in[0]->ndim == 0) {
        write_idx(hg_data(out[0]), j.idt, 0, 0);
        return HG_OK;
    }
    layout(in[0], &a->v[SO_AXIS], &j);
    j.k = j.n;
    j.idx = hg_data(out[0]);
    return run_sort("argsort", in[0]->dtype, &j);
}

/* ---------------------------------------------------------------------------------------------
 * Gradients
 * ------------------------------------------------------------------------------------------- */

/* _backward_topk(ograd, indices, data) with topk's attributes: a zero array of data's shape with
 * ograd's k values of each row put back at their indices (distinct within a row, so a plain
 * store, done on raw element bytes: any dtype). */
static hg_status topk_bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    const hg_meta *x = &in[2];
    out[0] = *x;
    if (x->ndim < 0) return HG_OK;
    row_plan p = {0, 0};
    HG_TRY(plan_rows(op->name, &a->v[TK_AXIS], x, &p));
    hg_meta want;
    plan_shape(x, &p, topk_k(a, p.n), &want);
    for (int k = 0; k < 2; k++) {
        const hg_meta *m = &in[k];
        if (m->ndim < 0) continue;
        bool ok = m->ndim == want.ndim;
        for (int d = 0; ok && d < m->ndim; d++)
            ok = m->shape[d] < 0 || want.shape[d] < 0 || m->shape[d] == want.shape[d];
        if (!ok)
            return hg_error(
                HG_ERR_VALUE, "%s: %s has shape %s, topk of data %s gives %s", op->name,
                k ? "indices" : "the output gradient", hg_shape_str(s0, m->ndim, m->shape),
                hg_shape_str(s1, x->ndim, x->shape), hg_shape_str(s2, want.ndim, want.shape));
    }
    if (in[0].ndim >= 0 && in[0].dtype != x->dtype)
        return hg_error(HG_ERR_TYPE, "%s: the output gradient has dtype %s, data %s", op->name,
                        hg_dtype_name(in[0].dtype), hg_dtype_name(x->dtype));
    if (in[1].ndim >= 0) HG_TRY(check_index_dtype(op->name, in[1].dtype, p.n));
    return HG_OK;
}

static int64_t read_idx(const void *base, hg_dtype dt, int64_t pos)
{
    switch (dt) {
    case HG_DTYPE_F32: return (int64_t)((const float *)base)[pos];
    case HG_DTYPE_F64: return (int64_t)((const double *)base)[pos];
    case HG_DTYPE_F16: return (int64_t)hg_half_to_float(((const uint16_t *)base)[pos]);
    case HG_DTYPE_I32: return ((const int32_t *)base)[pos];
    case HG_DTYPE_I64: return ((const int64_t *)base)[pos];
    default: return ((const uint8_t *)base)[pos];
    }
}

typedef struct {
    const char *dy;
    const void *idx;
    char *dx;
    hg_dtype idt;
    size_t esz;
    int64_t n, inner, k;
} scatter_job;

/* Rows o of (n x inner) gradient blocks. Indices come from topk itself, so they are in range;
 * an out-of-range one (a hand-made input) is skipped rather than written out of bounds. */
static void scatter_range(void *ctx, int64_t b, int64_t e)
{
    const scatter_job *j = ctx;
    size_t esz = j->esz;
    for (int64_t o = b; o < e; o++) {
        char *dst = j->dx + (size_t)(o * j->n * j->inner) * esz;
        memset(dst, 0, (size_t)(j->n * j->inner) * esz);
        for (int64_t r = 0; r < j->k; r++)
            for (int64_t i = 0; i < j->inner; i++) {
                int64_t pos = (o * j->k + r) * j->inner + i, t = read_idx(j->idx, j->idt, pos);
                if (t >= 0 && t < j->n)
                    memcpy(dst + (size_t)(t * j->inner + i) * esz, j->dy + (size_t)pos * esz, esz);
            }
    }
}

static hg_status topk_bwd_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    sort_job l = {0};
    layout(in[2], &a->v[TK_AXIS], &l);
    scatter_job j = {hg_data(in[0]),
                     hg_data(in[1]),
                     hg_data(out[0]),
                     in[1]->dtype,
                     hg_dtype_size(in[2]->dtype),
                     l.n,
                     l.inner,
                     topk_k(a, l.n)};
    int64_t per = l.n * l.inner > 0 ? l.n * l.inner : 1;
    hg_parallel_for(l.outer, HG_GRAIN_ELEMWISE / per + 1, scatter_range, &j);
    return HG_OK;
}

/* topk: values (ret_typ value or both) scatter their gradient back; indices and mask: none. */
static hg_status topk_grad(hg_grad_ctx *g)
{
    int ret = (int)hg_g_attrs(g)->v[TK_RET].i;
    if (ret != RET_VALUE && ret != RET_BOTH) return hg_g_status(g);
    hg_sentry r, in[3] = {hg_g_ograd(g, 0), hg_g_out(g, 1), hg_g_in(g, 0)};
    hg_g_op_fwd_attrs(g, "_backward_topk", 3, in, NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

/* sort: a topk of the whole row (k=0) with its hidden int32 indices. */
static hg_status sort_grad(hg_grad_ctx *g)
{
    hg_sentry in[3] = {hg_g_ograd(g, 0), hg_g_out(g, 1), hg_g_in(g, 0)};
    hg_g_set(g, 0,
             hg_g_op(g, "_backward_topk", 3, in,
                     HG_KV("axis", hg_g_attr_str(g, SO_AXIS), "k", "0", "ret_typ", "value",
                           "is_ascend", hg_g_attr_str(g, SO_ASCEND), "dtype", "int32")));
    return hg_g_status(g);
}

const hg_op_def hg_ops_sort[] = {
    {.name = "topk",
     .doc = "the k largest (or smallest) elements along an axis: values, "
            "indices, a mask, or values and indices",
     .input_names = HG_NAMES("data"),
     .attrs = k_topk_attrs,
     .num_attrs = HG_COUNT(k_topk_attrs),
     .num_inputs = 1,
     .get_num_outputs = topk_num_outputs,
     .get_num_visible_outputs = topk_num_visible_outputs,
     .infer = topk_infer,
     .forward = topk_forward,
     .grad = topk_grad},
    {.name = "sort",
     .doc = "the input sorted along an axis (stable)",
     .input_names = HG_NAMES("data"),
     .attrs = k_sort_attrs,
     .num_attrs = HG_COUNT(k_sort_attrs),
     .num_inputs = 1,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .infer = sort_infer,
     .forward = sort_forward,
     .grad = sort_grad},
    {.name = "argsort",
     .doc = "indices that sort the input along an axis (stable)",
     .input_names = HG_NAMES("data"),
     .attrs = k_argsort_attrs,
     .num_attrs = HG_COUNT(k_argsort_attrs),
     .num_inputs = 1,
     .infer = argsort_infer,
     .forward = argsort_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "_backward_topk",
     .doc = "gradient of topk / sort values: ograd put back at the "
            "positions given by indices, zeros elsewhere",
     .input_names = HG_NAMES("ograd", "indices", "data"),
     .attrs = k_topk_attrs,
     .num_attrs = HG_COUNT(k_topk_attrs),
     .num_inputs = 3,
     .infer = topk_bwd_infer,
     .forward = topk_bwd_forward},
    {0},
};
