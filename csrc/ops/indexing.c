/* Indexing ops: take, pick, one_hot, where, clip, Embedding and SequenceMask (MXNet 1.x names,
 * attributes and semantics).
 *
 * Index arrays may have any dtype: values are read as int64, floats truncated toward zero (as
 * MXNet's static_cast<int>), NaN and values beyond int64 saturate so no cast is undefined. The
 * gathers copy whole elements by size, so take/pick/where/Embedding work on every dtype. Only
 * take(mode='raise') checks data values, and so is the one kernel that may fail (HG_ERR_INDEX).
 * Gradient rules are at the end, with the scatters they need (_backward_take, _backward_pick)
 * and _backward_clip.
 */
#include <stdatomic.h>
#include <string.h>

#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/ew.h"
#include "ops/indexing.h"
#include "ops/ops_util.h"

/* ---------------------------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------------------------- */

/* Dims of -1 are unknown during graph inference; they match anything. */
static inline bool dim_match(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }

static bool shape_match(const hg_meta *x, const hg_meta *y)
{
    if (x->ndim != y->ndim) return false;
    for (int d = 0; d < x->ndim; d++)
        if (!dim_match(x->shape[d], y->shape[d])) return false;
    return true;
}

/* Product of dims [begin, end); -1 when one of them is unknown. */
static int64_t dims_size(const hg_meta *m, int begin, int end)
{
    int64_t n = 1;
    for (int d = begin; d < end; d++) {
        if (m->shape[d] < 0) return -1;
        n *= m->shape[d];
    }
    return n;
}

/* Normalises a possibly negative axis against ndim, or fails naming op, attribute and shape. */
static hg_status norm_axis(const char *op, const char *attr, int64_t axis, const hg_meta *m,
                           int *out)
{
    char s[HG_SHAPE_STR];
    if (axis < -m->ndim || axis >= m->ndim || m->ndim == 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: %s=%lld is out of range for input of shape %s (%d-d; "
                        "%s must be in [%d, %d])",
                        op, attr, (long long)axis, hg_shape_str(s, m->ndim, m->shape), m->ndim,
                        attr, -m->ndim, m->ndim - 1);
    *out = (int)(axis < 0 ? axis + m->ndim : axis);
    return HG_OK;
}

static inline int64_t f2i(double v)
{
    if (v != v || v <= -9.2e18) return INT64_MIN; /* NaN counts as out of range everywhere */
    if (v >= 9.2e18) return INT64_MAX;
    return (int64_t)v;
}

/* Reads indices [begin, begin + n) of an index array of any dtype as int64. */
static void load_idx(const void *p, hg_dtype dt, int64_t begin, int64_t n, int64_t *out)
{
    switch (dt) {
    case HG_DTYPE_F32: {
        const float *x = (const float *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = f2i(x[i]);
        break;
    }
    case HG_DTYPE_F64: {
        const double *x = (const double *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = f2i(x[i]);
        break;
    }
    case HG_DTYPE_F16: {
        const uint16_t *x = (const uint16_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = f2i(hg_half_to_float(x[i]));
        break;
    }
    case HG_DTYPE_I32: {
        const int32_t *x = (const int32_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i];
        break;
    }
    case HG_DTYPE_I64: {
        const int64_t *x = (const int64_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i];
        break;
    }
    case HG_DTYPE_I8: {
        const int8_t *x = (const int8_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i];
        break;
    }
    case HG_DTYPE_U8:
    case HG_DTYPE_BOOL:
    default: {
        const uint8_t *x = (const uint8_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i];
        break;
    }
    }
}

/* Maps an index into [0, n) by mode; for MODE_RAISE returns -1 when it is out of range. */
static inline int64_t fix_index(int64_t j, int64_t n, int mode)
{
    switch (mode) {
    case MODE_WRAP: {
        int64_t m = j % n;
        return m < 0 ? m + n : m;
    }
    case MODE_RAISE: return (j < 0 || j >= n) ? -1 : j;
    default: return j < 0 ? 0 : (j >= n ? n - 1 : j);
    }
}

/* Converts a whole index array to int64 in [0, n) by mode (multi-threaded for large arrays).
 * For MODE_RAISE, *bad receives the position of an out-of-range index, or -1. */
typedef struct {
    const void *src;
    hg_dtype dt;
    int64_t *dst, n;
    int mode;
    atomic_llong bad;
} idx_job;

static void idx_range(void *ctx, int64_t begin, int64_t end)
{
    idx_job *j = ctx;
    load_idx(j->src, j->dt, begin, end - begin, j->dst + begin);
    for (int64_t i = begin; i < end; i++) {
        int64_t v = fix_index(j->dst[i], j->n, j->mode);
        if (v < 0) {
            long long expect = -1;
            atomic_compare_exchange_strong(&j->bad, &expect, (long long)i);
            v = 0;
        }
        j->dst[i] = v;
    }
}

static int64_t convert_indices(const hg_tensor *idx, int64_t n, int mode, int64_t *dst)
{
    idx_job j = {.src = hg_data(idx), .dt = idx->dtype, .dst = dst, .n = n, .mode = mode};
    atomic_init(&j.bad, -1);
    hg_parallel_for(idx->size, HG_GRAIN_ELEMWISE, idx_range, &j);
    return (int64_t)atomic_load(&j.bad);
}

/* Value of element i of an index array, as a double (for error messages). */
static double index_value(const hg_tensor *t, int64_t i)
{
    const void *p = hg_data(t);
    switch (t->dtype) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return hg_half_to_float(((const uint16_t *)p)[i]);
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Copies one element of esz bytes; constant-size memcpy compiles to a single move. */
static inline void copy_elem(char *dst, const char *src, size_t esz)
{
    switch (esz) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, esz); break;
    }
}

void hg_index_store_value(void *dst, hg_dtype dt, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: *(float *)dst = (float)v; break;
    case HG_DTYPE_F64: *(double *)dst = v; break;
    case HG_DTYPE_F16: *(uint16_t *)dst = hg_float_to_half((float)v); break;
    case HG_DTYPE_I32:
        *(int32_t *)dst = v != v           ? 0
                          : v <= INT32_MIN ? INT32_MIN
                          : v >= INT32_MAX ? INT32_MAX
                                           : (int32_t)v;
        break;
    case HG_DTYPE_I64: *(int64_t *)dst = v != v ? 0 : f2i(v); break;
    case HG_DTYPE_I8:
        *(int8_t *)dst = v != v          ? 0
                         : v <= INT8_MIN ? INT8_MIN
                         : v >= INT8_MAX ? INT8_MAX
                                         : (int8_t)v;
        break;
    case HG_DTYPE_U8:
        *(uint8_t *)dst = v != v ? 0 : v <= 0 ? 0 : v >= UINT8_MAX ? UINT8_MAX : (uint8_t)v;
        break;
    case HG_DTYPE_BOOL: *(uint8_t *)dst = v != 0; break;
    default: break;
    }
}

/* Fills n elements of esz bytes with the pattern in val. */
static void fill_elems(char *dst, int64_t n, const char *val, size_t esz)
{
    switch (esz) {
    case 1: memset(dst, *val, (size_t)n); break;
    case 2: {
        uint16_t v, *d = (uint16_t *)(void *)dst;
        memcpy(&v, val, 2);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    case 4: {
        uint32_t v, *d = (uint32_t *)(void *)dst;
        memcpy(&v, val, 4);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    default: {
        uint64_t v, *d = (uint64_t *)(void *)dst;
        memcpy(&v, val, 8);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    }
}

/* Workspace of one int64 per index: the index input is input `k`. */
static size_t idx_ws(const hg_meta *m)
{
    int64_t n = hg_shape_size(m->ndim, m->shape);
    return (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
}

/* Gathers rows: out[o, j, :] = src[o, idx[j], :] for o < outer, j < m, rows of `row` bytes. */
typedef struct {
    const char *src;
    char *dst;
    const int64_t *idx;
    int64_t m, n;  /* indices per outer slice, source rows per outer slice */
    size_t row, esz;
} gather_job;

#define GATHER_ELEMS(T)                                                                         \
    do {                                                                                        \
        const T *s = (const T *)(const void *)src;                                              \
        T *d = (T *)(void *)g->dst + r;                                                         \
        for (int64_t i = 0; i < cnt; i++) d[i] = s[idx[i]];                                     \
    } while (0)

static void gather_range(void *ctx, int64_t begin, int64_t end)
{
    const gather_job *g = ctx;
    for (int64_t r = begin; r < end;) {
        /* One outer slice at a time: rows r .. r + cnt share the source slice. */
        int64_t o = r / g->m, j = r % g->m, cnt = g->m - j < end - r ? g->m - j : end - r;
        const char *src = g->src + (size_t)(o * g->n) * g->row;
        const int64_t *idx = g->idx + j;
        if (g->row != g->esz) {
            for (int64_t i = 0; i < cnt; i++)
                memcpy(g->dst + (size_t)(r + i) * g->row, src + (size_t)idx[i] * g->row, g->row);
        } else {
            switch (g->esz) {
            case 1: GATHER_ELEMS(uint8_t); break;
            case 2: GATHER_ELEMS(uint16_t); break;
            case 4: GATHER_ELEMS(uint32_t); break;
            default: GATHER_ELEMS(uint64_t); break;
            }
        }
        r += cnt;
    }
}

static void gather_rows(const char *src, char *dst, const int64_t *idx, int64_t outer, int64_t m,
                        int64_t n, size_t row, size_t esz)
{
    gather_job g = {src, dst, idx, m, n, row, esz};
    int64_t grain = (int64_t)(HG_GRAIN_ELEMWISE * 4 / (row ? row : 1));
    hg_parallel_for(outer * m, grain > 0 ? grain : 1, gather_range, &g);
}

#define UNKNOWN(m) ((m).ndim < 0)

/* ---------------------------------------------------------------------------------------------
 * take
 * ------------------------------------------------------------------------------------------- */

static const char *const k_take_modes[] = {
    [MODE_CLIP] = "clip",
    [MODE_WRAP] = "wrap",
    [MODE_RAISE] = "raise",
    [MODE_NMODES] = NULL,
};
_Static_assert(HG_COUNT(k_take_modes) == MODE_NMODES + 1, "k_take_modes must match its enum");
static const hg_attr_spec k_take_attrs[] = {
    [TK_AXIS] = {"axis", HG_ATTR_INT, 0, "0",
                 "the axis of the input to take from (negative counts from the end)", NULL},
    [TK_MODE] = {"mode", HG_ATTR_ENUM, 0, "clip",
                 "out-of-range indices: clip to the range, wrap around, or raise an error",
                 k_take_modes},
};
_Static_assert(HG_COUNT(k_take_attrs) == TK_NATTRS, "k_take_attrs must match its enum");

static hg_status take_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    const hg_meta *x = &in[0], *idx = &in[1];
    char s[HG_SHAPE_STR];
    out[0].dtype = x->dtype;
    if (UNKNOWN(*x) || UNKNOWN(*idx)) return HG_OK;
    int axis = 0;
    HG_TRY(norm_axis("take", "axis", a->v[TK_AXIS].i, x, &axis));
    if (x->ndim + idx->ndim - 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "take: result would have %d dimensions (at most %d)",
                        x->ndim + idx->ndim - 1, HG_MAX_NDIM);
    int64_t nidx = dims_size(idx, 0, idx->ndim);
    if (x->shape[axis] == 0 && nidx != 0)
        return hg_error(HG_ERR_INDEX, "take: cannot take from axis %d of size 0 (input shape %s)",
                        axis, hg_shape_str(s, x->ndim, x->shape));
    int nd = 0;
    for (int d = 0; d < axis; d++) out[0].shape[nd++] = x->shape[d];
    for (int d = 0; d < idx->ndim; d++) out[0].shape[nd++] = idx->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) out[0].shape[nd++] = x->shape[d];
    out[0].ndim = nd;
    return HG_OK;
}

static size_t take_ws(const hg_attrs *a, int nin, const hg_meta *in) { return idx_ws(&in[1]); }

static hg_status take_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0], *idx = in[1];
    int axis = (int)(a->v[TK_AXIS].i < 0 ? a->v[TK_AXIS].i + x->ndim : a->v[TK_AXIS].i);
    int mode = (int)a->v[TK_MODE].i;
    int64_t n = x->shape[axis], outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    int64_t *iv = ctx->workspace;
    int64_t bad = convert_indices(idx, n, mode, iv);
    if (bad >= 0)
        return hg_error(HG_ERR_INDEX,
                        "take: indices contain an index out of bounds (%g at "
                        "position %lld; axis %d has size %lld, mode='raise')",
                        index_value(idx, bad), (long long)bad, axis, (long long)n);
    size_t esz = hg_dtype_size(x->dtype);
    gather_rows(hg_data(x), hg_data(out[0]), iv, outer, idx->size, n, (size_t)inner * esz, esz);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * pick
 * ------------------------------------------------------------------------------------------- */

/* pick has no raise mode: its list is take's first two. */
static const char *const k_pick_modes[] = {
    [MODE_CLIP] = "clip",
    [MODE_WRAP] = "wrap",
    [MODE_RAISE] = NULL,
};
_Static_assert(HG_COUNT(k_pick_modes) == MODE_RAISE + 1, "k_pick_modes must match its enum");
static const hg_attr_spec k_pick_attrs[] = {
    [PK_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "-1",
                 "the axis to pick along (None is not supported)", NULL},
    [PK_KEEPDIMS] = {"keepdims", HG_ATTR_BOOL, 0, "False", "keep the picked axis with size 1",
                     NULL},
    [PK_MODE] = {"mode", HG_ATTR_ENUM, 0, "clip",
                 "out-of-range indices: clip to the range or wrap around", k_pick_modes},
};
_Static_assert(HG_COUNT(k_pick_attrs) == PK_NATTRS, "k_pick_attrs must match its enum");

static hg_status pick_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    hg_meta *x = &in[0], *idx = &in[1];
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR], s4[HG_SHAPE_STR];
    out[0].dtype = x->dtype;
    if (a->v[PK_AXIS].is_none)
        return hg_error(HG_ERR_VALUE, "pick: axis=None is not supported, give an axis");
    if (UNKNOWN(*x)) return HG_OK;
    int axis = 0;
    HG_TRY(norm_axis("pick", "axis", a->v[PK_AXIS].i, x, &axis));
    /* The index has the data's shape without the axis, or with it kept as 1 (MXNet takes
     * either, whatever keepdims says: the elements lie in the same order); the result has the
     * shape keepdims asks for. */
    hg_meta dropped = {.ndim = 0, .dtype = x->dtype}, kept = dropped;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis) dropped.shape[dropped.ndim++] = x->shape[d];
        kept.shape[kept.ndim++] = d != axis ? x->shape[d] : 1;
    }
    if (dropped.ndim == 0) dropped.shape[dropped.ndim++] = 1; /* MXNet has no 0-d result */
    hg_meta o = a->v[PK_KEEPDIMS].b ? kept : dropped;
    if (UNKNOWN(*idx)) {
        hg_dtype dt = idx->dtype;
        *idx = o;
        idx->dtype = dt;
    } else if (!shape_match(idx, &dropped) && !shape_match(idx, &kept)) {
        return hg_error(
            HG_ERR_VALUE,
            "pick: index shape %s does not match the data shape %s "
            "without axis %d (%s) or with it kept as 1 (%s)",
            hg_shape_str(s1, idx->ndim, idx->shape), hg_shape_str(s3, x->ndim, x->shape), axis,
            hg_shape_str(s2, dropped.ndim, dropped.shape), hg_shape_str(s4, kept.ndim, kept.shape));
    }
    if (x->shape[axis] == 0 && dims_size(&o, 0, o.ndim) != 0)
        return hg_error(HG_ERR_INDEX, "pick: cannot pick from axis %d of size 0 (data shape %s)",
                        axis, hg_shape_str(s1, x->ndim, x->shape));
    out[0] = o;
    return HG_OK;
}

static size_t pick_ws(const hg_attrs *a, int nin, const hg_meta *in) { return idx_ws(&in[1]); }

typedef struct {
    const char *src;
    char *dst;
    const int64_t *idx;
    int64_t n, inner;
    size_t esz;
} pick_job;

static void pick_range(void *ctx, int64_t begin, int64_t end)
{
    const pick_job *p = ctx;
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r / p->inner, i = r % p->inner;
        copy_elem(p->dst + (size_t)r * p->esz,
                  p->src + (size_t)((o * p->n + p->idx[r]) * p->inner + i) * p->esz, p->esz);
    }
}

static hg_status pick_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    int axis = (int)(a->v[PK_AXIS].i < 0 ? a->v[PK_AXIS].i + x->ndim : a->v[PK_AXIS].i);
    int64_t n = x->shape[axis], inner = 1;
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    int64_t *iv = ctx->workspace;
    convert_indices(in[1], n, (int)a->v[PK_MODE].i, iv);
    pick_job p = {hg_data(x), hg_data(out[0]), iv, n, inner, hg_dtype_size(x->dtype)};
    hg_parallel_for(out[0]->size, HG_GRAIN_ELEMWISE, pick_range, &p);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * one_hot
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_one_hot_attrs[] = {
    [OH_DEPTH] = {"depth", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "size of the one-hot dimension",
                  NULL},
    [OH_ON] = {"on_value", HG_ATTR_FLOAT, 0, "1", "value at the index", NULL},
    [OH_OFF] = {"off_value", HG_ATTR_FLOAT, 0, "0", "value everywhere else", NULL},
    [OH_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "dtype of the output", NULL},
};
_Static_assert(HG_COUNT(k_one_hot_attrs) == OH_NATTRS, "k_one_hot_attrs must match its enum");

static hg_status one_hot_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    int64_t depth = a->v[OH_DEPTH].i;
    out[0].dtype = (hg_dtype)a->v[OH_DTYPE].i;
    if (out[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "one_hot: dtype bool is not supported (use float32, "
                                     "float64, float16, uint8, int8, int32 or int64)");
    if (depth < 0)
        return hg_error(HG_ERR_VALUE, "one_hot: depth must be >= 0, got %lld", (long long)depth);
    if (UNKNOWN(in[0])) return HG_OK;
    if (in[0].ndim + 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "one_hot: result would have %d dimensions (at most %d)",
                        in[0].ndim + 1, HG_MAX_NDIM);
    out[0].ndim = in[0].ndim + 1;
    memcpy(out[0].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].ndim);
    out[0].shape[in[0].ndim] = depth;
    return HG_OK;
}

typedef struct {
    const hg_tensor *idx;
    char *dst;
    int64_t depth;
    size_t esz;
    char on[8], off[8];
} one_hot_job;

static void one_hot_range(void *ctx, int64_t begin, int64_t end)
{
    const one_hot_job *j = ctx;
    int64_t buf[256];
    for (int64_t b = begin; b < end; b += 256) {
        int64_t cnt = end - b < 256 ? end - b : 256;
        load_idx(hg_data(j->idx), j->idx->dtype, b, cnt, buf);
        char *row = j->dst + (size_t)(b * j->depth) * j->esz;
        fill_elems(row, cnt * j->depth, j->off, j->esz);
        for (int64_t i = 0; i < cnt; i++)
            if (buf[i] >= 0 && buf[i] < j->depth)
                copy_elem(row + (size_t)(i * j->depth + buf[i]) * j->esz, j->on, j->esz);
    }
}

static hg_status one_hot_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    one_hot_job j = {.idx = in[0],
                     .dst = hg_data(out[0]),
                     .depth = a->v[OH_DEPTH].i,
                     .esz = hg_dtype_size(out[0]->dtype)};
    hg_index_store_value(j.on, out[0]->dtype, a->v[OH_ON].f);
    hg_index_store_value(j.off, out[0]->dtype, a->v[OH_OFF].f);
    int64_t grain = HG_GRAIN_ELEMWISE / (j.depth ? j.depth : 1);
    hg_parallel_for(in[0]->size, grain > 0 ? grain : 1, one_hot_range, &j);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * where
 * ------------------------------------------------------------------------------------------- */

static hg_status where_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    const hg_meta *c = &in[0], *x = &in[1], *y = &in[2];
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    out[0].dtype = x->dtype;
    if (x->dtype != y->dtype)
        return hg_error(HG_ERR_TYPE, "where: x and y must have the same dtype, got %s and %s",
                        hg_dtype_name(x->dtype), hg_dtype_name(y->dtype));
    /* As MXNet, nothing is inferred before the condition's shape is fully known. */
    if (UNKNOWN(*c)) return HG_OK;
    for (int d = 0; d < c->ndim; d++)
        if (c->shape[d] < 0) return HG_OK;
    /* x, y and the output (known from a consumer) share one shape, both ways. */
    for (int d = 0; !UNKNOWN(*x) && x->ndim == y->ndim && d < x->ndim; d++) {
        int64_t v = x->shape[d] >= 0 ? x->shape[d] : y->shape[d];
        if (v < 0 && out[0].ndim == x->ndim) v = out[0].shape[d];
        if (in[1].shape[d] < 0) in[1].shape[d] = v;
        if (in[2].shape[d] < 0) in[2].shape[d] = v;
    }
    if (UNKNOWN(*x) || UNKNOWN(*y)) return HG_OK;
    if (!shape_match(x, y))
        return hg_error(HG_ERR_VALUE, "where: x and y must have the same shape, got %s and %s",
                        hg_shape_str(s1, x->ndim, x->shape), hg_shape_str(s2, y->ndim, y->shape));
    if (!UNKNOWN(*c) && !shape_match(c, x) &&
        !(c->ndim == 1 && x->ndim >= 1 && dim_match(c->shape[0], x->shape[0])))
        return hg_error(HG_ERR_VALUE,
                        "where: condition shape %s must equal the shape of x %s "
                        "or be 1-D of length x.shape[0] (y shape %s)",
                        hg_shape_str(s1, c->ndim, c->shape), hg_shape_str(s2, x->ndim, x->shape),
                        hg_shape_str(s3, y->ndim, y->shape));
    out[0] = *x;
    return HG_OK;
}

/* Writes n 0/1 flags: condition element [begin + i] is nonzero (-0.0 counts as zero). */
static void load_cond(const void *p, hg_dtype dt, int64_t begin, int64_t n, uint8_t *out)
{
    switch (dt) {
    case HG_DTYPE_F32: {
        const float *x = (const float *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i] != 0;
        break;
    }
    case HG_DTYPE_F64: {
        const double *x = (const double *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i] != 0;
        break;
    }
    case HG_DTYPE_F16: {
        const uint16_t *x = (const uint16_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = (x[i] & 0x7fff) != 0;
        break;
    }
    case HG_DTYPE_I32: {
        const int32_t *x = (const int32_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i] != 0;
        break;
    }
    case HG_DTYPE_I64: {
        const int64_t *x = (const int64_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i] != 0;
        break;
    }
    default: {
        const uint8_t *x = (const uint8_t *)p + begin;
        for (int64_t i = 0; i < n; i++) out[i] = x[i] != 0;
        break;
    }
    }
}

typedef struct {
    const hg_tensor *c;
    const char *x, *y;
    char *o;
    size_t esz, row; /* row: bytes per condition element (esz, or a whole row for 1-D cond) */
} where_job;

#define WHERE_SEL(T)                                                                            \
    do {                                                                                        \
        const T *xs = (const T *)(const void *)x, *ys = (const T *)(const void *)y;             \
        T *os = (T *)(void *)o;                                                                 \
        for (int64_t i = 0; i < cnt; i++) os[i] = m[i] ? xs[i] : ys[i];                         \
    } while (0)

static void where_range(void *ctx, int64_t begin, int64_t end)
{
    const where_job *j = ctx;
    uint8_t m[512];
    for (int64_t b = begin; b < end; b += 512) {
        int64_t cnt = end - b < 512 ? end - b : 512;
        load_cond(hg_data(j->c), j->c->dtype, b, cnt, m);
        size_t off = (size_t)b * j->row;
        const char *x = j->x + off, *y = j->y + off;
        char *o = j->o + off;
        if (j->row != j->esz) {
            for (int64_t i = 0; i < cnt; i++)
                memcpy(o + (size_t)i * j->row, (m[i] ? x : y) + (size_t)i * j->row, j->row);
            continue;
        }
        switch (j->esz) {
        case 1: WHERE_SEL(uint8_t); break;
        case 2: WHERE_SEL(uint16_t); break;
        case 4: WHERE_SEL(uint32_t); break;
        default: WHERE_SEL(uint64_t); break;
        }
    }
}

static hg_status where_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *c = in[0], *x = in[1];
    where_job j = {c, hg_data(x), hg_data(in[2]), hg_data(out[0]), hg_dtype_size(x->dtype), 0};
    j.row = (size_t)(x->size / (c->size ? c->size : 1)) * j.esz;
    int64_t grain = (int64_t)(HG_GRAIN_ELEMWISE * j.esz / j.row);
    hg_parallel_for(c->size, grain > 0 ? grain : 1, where_range, &j);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * clip: an element-wise op (runs through the generic driver; float16 via float32 tiles).
 * Bounds convert to the dtype first, as MXNet's DType(a_min); for integers the truncated
 * bound is saturated to the type's range so the conversion is defined.
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_clip_attrs[] = {
    [CL_MIN] = {"a_min", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "minimum value", NULL},
    [CL_MAX] = {"a_max", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "maximum value", NULL},
};
_Static_assert(HG_COUNT(k_clip_attrs) == CL_NATTRS, "k_clip_attrs must match its enum");

static inline double sat(double v, double lo, double hi)
{
    return v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
}

#define CLIP_TILE(T, LO, HI)                                                                    \
    static void clip_##T(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,   \
                         void *out, const hg_attrs *a)                                          \
    {                                                                                           \
        const T *x = (const T *)in0;                                                            \
        T *y = (T *)out;                                                                        \
        const T lo = (T)(LO), hi = (T)(HI);                                                     \
        (void)in1; (void)s1;                                                                    \
        if (!s0) {                                                                              \
            T v = x[0], r = v > hi ? hi : (v < lo ? lo : v);                                    \
            for (int64_t i = 0; i < n; i++) y[i] = r;                                           \
            return;                                                                             \
        }                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = x[i];                                                                         \
            y[i] = v > hi ? hi : (v < lo ? lo : v);                                             \
        }                                                                                       \
    }
#define CLIP_INT(T, MIN, MAX)                                                                   \
    CLIP_TILE(T, sat(a->v[CL_MIN].f, MIN, MAX), sat(a->v[CL_MAX].f, MIN, MAX))

CLIP_TILE(f32, a->v[CL_MIN].f, a->v[CL_MAX].f)
CLIP_TILE(f64, a->v[CL_MIN].f, a->v[CL_MAX].f)
CLIP_INT(i32, INT32_MIN, INT32_MAX)
CLIP_INT(i64, -9.2e18, 9.2e18)
CLIP_INT(i8, INT8_MIN, INT8_MAX)
CLIP_INT(u8, 0, UINT8_MAX)

/* _backward_clip(ograd, data): ograd where a_min <= data <= a_max, else 0. MXNet's clip_grad
 * zeroes only values strictly outside, so a value sitting on a bound (clip(relu(x), 0, 6) at
 * 0) passes its gradient; NaN passes too. Both values are loaded before the test (and its two
 * comparisons joined with |) so that it compiles to a select: the form that loaded ograd only
 * where kept compiled to two branches per element, which a ReLU6 gradient mispredicts about half
 * the time (95 ms on 19 M floats, an add takes 17). */
#define CLIP_BWD_TILE(T)                                                                        \
    static void clip_bwd_##T(int64_t n, const void *in0, int64_t s0, const void *in1,           \
                             int64_t s1, void *out, const hg_attrs *a)                          \
    {                                                                                           \
        const T *restrict l = (const T *)in0, *restrict r = (const T *)in1;                     \
        T *restrict o = (T *)out;                                                               \
        const T lo = (T)a->v[CL_MIN].f, hi = (T)a->v[CL_MAX].f;                                 \
        if (s0 && s1) {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                   \
                const T v = r[i], g = l[i]; /* both loaded: a select, not a branch */           \
                o[i] = ((v < lo) | (v > hi)) ? 0 : g;                                           \
            }                                                                                   \
            return;                                                                             \
        }                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                       \
            const T v = r[s1 ? i : 0], g = l[s0 ? i : 0];                                       \
            o[i] = ((v < lo) | (v > hi)) ? 0 : g;                                               \
        }                                                                                       \
    }
CLIP_BWD_TILE(f32)
CLIP_BWD_TILE(f64)

static hg_status bwd_clip_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    if (!hg_is_float(in[0].dtype))
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported (float types only)", op->name,
                        hg_dtype_name(in[0].dtype));
    return hg_infer_same(op, a, nin, in, nout, out);
}

static hg_status clip_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    if (in[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "clip: dtype bool is not supported");
    return hg_infer_same(op, a, nin, in, nout, out);
}

/* ---------------------------------------------------------------------------------------------
 * Embedding: out[..., :] = weight[clip(data[...]), :]
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_embedding_attrs[] = {
    [EM_INPUT_DIM] = {"input_dim", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                      "vocabulary size (rows of weight)", NULL},
    [EM_OUTPUT_DIM] = {"output_dim", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                       "embedding size (columns of weight)", NULL},
    [EM_DTYPE] = {"dtype", HG_ATTR_DTYPE, 0, "float32", "dtype of weight when it is not given",
                  NULL},
    [EM_SPARSE_GRAD] = {"sparse_grad", HG_ATTR_BOOL, 0, "False",
                        "row-sparse weight gradient (computed dense here)", NULL},
};
_Static_assert(HG_COUNT(k_embedding_attrs) == EM_NATTRS, "k_embedding_attrs must match its enum");

static hg_status embedding_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    int64_t din = a->v[EM_INPUT_DIM].i, dout = a->v[EM_OUTPUT_DIM].i;
    hg_meta *w = &in[1];
    char s[HG_SHAPE_STR];
    if (din < 1 || dout < 1)
        return hg_error(HG_ERR_VALUE,
                        "Embedding: input_dim and output_dim must be >= 1, got "
                        "input_dim=%lld, output_dim=%lld",
                        (long long)din, (long long)dout);
    if (UNKNOWN(*w)) {
        w->ndim = 2;
        w->dtype = (hg_dtype)a->v[EM_DTYPE].i;
    } else if (w->ndim != 2 || !dim_match(w->shape[0], din) || !dim_match(w->shape[1], dout)) {
        return hg_error(HG_ERR_VALUE,
                        "Embedding: weight shape %s does not match (input_dim, "
                        "output_dim) = [%lld,%lld]",
                        hg_shape_str(s, w->ndim, w->shape), (long long)din, (long long)dout);
    }
    w->shape[0] = din;
    w->shape[1] = dout;
    out[0].dtype = w->dtype;
    if (UNKNOWN(in[0])) return HG_OK;
    if (in[0].ndim + 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "Embedding: result would have %d dimensions (at most %d)",
                        in[0].ndim + 1, HG_MAX_NDIM);
    out[0].ndim = in[0].ndim + 1;
    memcpy(out[0].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].ndim);
    out[0].shape[in[0].ndim] = dout;
    return HG_OK;
}

static size_t embedding_ws(const hg_attrs *a, int nin, const hg_meta *in) { return idx_ws(&in[0]); }

static hg_status embedding_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *w = in[1];
    int64_t *iv = ctx->workspace;
    convert_indices(in[0], w->shape[0], MODE_CLIP, iv);
    size_t esz = hg_dtype_size(w->dtype);
    gather_rows(hg_data(w), hg_data(out[0]), iv, 1, in[0]->size, w->shape[0],
                (size_t)w->shape[1] * esz, esz);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SequenceMask: positions at or past each sequence's length are set to `value`.
 * ------------------------------------------------------------------------------------------- */

static const hg_attr_spec k_seqmask_attrs[] = {
    [SM_USE_LEN] = {"use_sequence_length", HG_ATTR_BOOL, 0, "False",
                    "take sequence_length as a second input (otherwise the op is the identity)",
                    NULL},
    [SM_VALUE] = {"value", HG_ATTR_FLOAT, 0, "0", "value written at masked positions", NULL},
    [SM_AXIS] = {"axis", HG_ATTR_INT, 0, "0", "the time axis: 0 for (T, B, ...), 1 for (B, T, ...)",
                 NULL},
};
_Static_assert(HG_COUNT(k_seqmask_attrs) == SM_NATTRS, "k_seqmask_attrs must match its enum");

static int seqmask_num_inputs(const hg_attrs *a) { return a->v[SM_USE_LEN].b ? 2 : 1; }

static hg_status seqmask_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    const hg_meta *x = &in[0];
    int64_t axis = a->v[SM_AXIS].i;
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    out[0].dtype = x->dtype;
    if (axis != 0 && axis != 1)
        return hg_error(HG_ERR_VALUE, "SequenceMask: axis must be 0 or 1, got %lld",
                        (long long)axis);
    if (UNKNOWN(*x)) return HG_OK;
    if (x->ndim < 2)
        return hg_error(HG_ERR_VALUE,
                        "SequenceMask: data must have at least 2 dimensions, got "
                        "shape %s",
                        hg_shape_str(s1, x->ndim, x->shape));
    if (a->v[SM_USE_LEN].b) {
        hg_meta *len = &in[1];
        int64_t batch = x->shape[1 - axis];
        if (UNKNOWN(*len)) {
            len->ndim = 1;
            len->shape[0] = batch;
        } else if (len->ndim != 1 || !dim_match(len->shape[0], batch)) {
            return hg_error(HG_ERR_VALUE,
                            "SequenceMask: sequence_length shape %s must be [%lld] "
                            "(the batch axis %d of data shape %s)",
                            hg_shape_str(s1, len->ndim, len->shape), (long long)batch,
                            (int)(1 - axis), hg_shape_str(s2, x->ndim, x->shape));
        }
    }
    out[0] = *x;
    return HG_OK;
}

static size_t seqmask_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    return nin > 1 ? idx_ws(&in[1]) : 0;
}

typedef struct {
    const char *src;
    char *dst;
    const int64_t *len;
    int64_t t_len, batch, rest;
    int axis;
    size_t esz;
    char val[8];
} seqmask_job;

static void seqmask_range(void *ctx, int64_t begin, int64_t end)
{
    const seqmask_job *j = ctx;
    size_t row = (size_t)j->rest * j->esz;
    for (int64_t r = begin; r < end; r++) {
        int64_t t = j->axis == 0 ? r / j->batch : r % j->t_len;
        int64_t b = j->axis == 0 ? r % j->batch : r / j->t_len;
        char *o = j->dst + (size_t)r * row;
        if (t >= j->len[b]) fill_elems(o, j->rest, j->val, j->esz);
        else if (o != j->src + (size_t)r * row) memcpy(o, j->src + (size_t)r * row, row);
    }
}

static hg_status seqmask_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    size_t nbytes = hg_tensor_nbytes(x);
    if (!a->v[SM_USE_LEN].b) {
        if (hg_data(out[0]) != hg_data(x)) memcpy(hg_data(out[0]), hg_data(x), nbytes);
        return HG_OK;
    }
    int axis = (int)a->v[SM_AXIS].i;
    seqmask_job j = {.src = hg_data(x),
                     .dst = hg_data(out[0]),
                     .len = ctx->workspace,
                     .t_len = x->shape[axis],
                     .batch = x->shape[1 - axis],
                     .axis = axis,
                     .esz = hg_dtype_size(x->dtype)};
    j.rest = x->size / (j.t_len * j.batch);
    load_idx(hg_data(in[1]), in[1]->dtype, 0, in[1]->size, (int64_t *)ctx->workspace);
    hg_index_store_value(j.val, x->dtype, a->v[SM_VALUE].f);
    int64_t grain = HG_GRAIN_ELEMWISE / (j.rest ? j.rest : 1);
    hg_parallel_for(j.t_len * j.batch, grain > 0 ? grain : 1, seqmask_range, &j);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Gradients. Index inputs (indices, index, condition, data of Embedding, sequence_length) get
 * none. The gathers' adjoints are scatters into zeros: _backward_take adds (indices repeat),
 * _backward_pick stores (each position is picked once). They read data for its shape only.
 * ------------------------------------------------------------------------------------------- */

/* The infer of _backward_X(ograd, index, data): X's rule on (data, index) must give ograd's
 * shape; the result has data's shape and ograd's dtype. */
static hg_status bwd_gather_infer(const hg_op_def *op, const hg_attrs *a, hg_meta *in, hg_meta *out,
                                  hg_status (*fwd)(const hg_op_def *, const hg_attrs *, int,
                                                   hg_meta *, int, hg_meta *))
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR], s3[HG_SHAPE_STR];
    const hg_meta *g = &in[0];
    hg_meta fin[2] = {in[2], in[1]}, y = {.ndim = -1, .dtype = in[2].dtype};
    out[0].dtype = g->dtype;
    /* Integer gradients are MXNet's too (sums wrap around in the dtype); bool has none. */
    if (g->dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: dtype bool is not supported", op->name);
    if (UNKNOWN(in[2]) || UNKNOWN(in[1])) return HG_OK;
    hg_status st = fwd(op, a, 2, fin, 1, &y);
    if (st != HG_OK) return hg_error_prefix(st, "%s: ", op->name);
    if (!UNKNOWN(*g) && !shape_match(g, &y))
        return hg_error(HG_ERR_VALUE,
                        "%s: ograd has shape %s but the forward output for data "
                        "of shape %s and index of shape %s has shape %s",
                        op->name, hg_shape_str(s0, g->ndim, g->shape),
                        hg_shape_str(s1, in[2].ndim, in[2].shape),
                        hg_shape_str(s2, in[1].ndim, in[1].shape),
                        hg_shape_str(s3, y.ndim, y.shape));
    out[0] = in[2];
    out[0].dtype = g->dtype;
    return HG_OK;
}

/* Input `k` gets op `name` over (ograd, the forward's inputs `ins`...) with the forward's
 * attributes; for a _backward_X op, name is X and the rest of its inputs follow ograd. */
static hg_status emit_grad(hg_grad_ctx *g, int k, const char *name, int nin, const int *ins)
{
    hg_sentry in[4], r;
    in[0] = hg_g_ograd(g, 0);
    for (int i = 0; i < nin; i++) in[i + 1] = hg_g_in(g, ins[i]);
    hg_g_op_fwd_attrs(g, name, nin + 1, in, NULL, 1, &r);
    hg_g_set(g, k, r);
    return hg_g_status(g);
}

static hg_status take_grad(hg_grad_ctx *g)
{
    return emit_grad(g, 0, "_backward_take", 2, (const int[]){1, 0});
}

static hg_status bwd_take_grad(hg_grad_ctx *g) /* the adjoint of the scatter is the gather */
{
    return emit_grad(g, 0, "take", 1, (const int[]){1});
}

static hg_status pick_grad(hg_grad_ctx *g)
{
    return emit_grad(g, 0, "_backward_pick", 2, (const int[]){1, 0});
}

static hg_status bwd_pick_grad(hg_grad_ctx *g)
{
    return emit_grad(g, 0, "pick", 1, (const int[]){1});
}

static hg_status clip_grad(hg_grad_ctx *g)
{
    return emit_grad(g, 0, "_backward_clip", 1, (const int[]){0});
}

static hg_status bwd_clip_grad(hg_grad_ctx *g) /* piecewise constant in data */
{
    return emit_grad(g, 0, "_backward_clip", 1, (const int[]){1});
}

static hg_status where_grad(hg_grad_ctx *g)
{
    hg_sentry c = hg_g_in(g, 0), dy = hg_g_ograd(g, 0);
    hg_sentry z = hg_g_op(g, "zeros_like", HG_GIN(dy), NULL);
    if (hg_g_needs(g, 1)) hg_g_set(g, 1, hg_g_op(g, "where", HG_GIN(c, dy, z), NULL));
    if (hg_g_needs(g, 2)) hg_g_set(g, 2, hg_g_op(g, "where", HG_GIN(c, z, dy), NULL));
    return hg_g_status(g);
}

/* Embedding is take(weight, data, axis=0, mode='clip'): the weight gets the row scatter. */
static hg_status embedding_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 1,
             hg_g_op(g, "_backward_take", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0), hg_g_in(g, 1)),
                     HG_KV("axis", "0", "mode", "clip")));
    return hg_g_status(g);
}

/* Masked positions are constants: the same mask with value 0 on the gradient. */
static hg_status seqmask_grad(hg_grad_ctx *g)
{
    hg_sentry dy = hg_g_ograd(g, 0), r;
    if (!hg_g_attrs(g)->v[SM_USE_LEN].b) {
        hg_g_set(g, 0, hg_g_op(g, "_copy", HG_GIN(dy), NULL));
        return hg_g_status(g);
    }
    hg_g_op_fwd_attrs(g, "SequenceMask", HG_GIN(dy, hg_g_in(g, 1)), HG_KV("value", "0"), 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

/* _backward_take(ograd, indices, a): zeros of a's shape plus, for each index j, ograd's row j
 * added to row idx[j]. Work items are (outer slice, range of a's rows) pairs: each zeroes its
 * rows, then walks all the indices in order and adds the rows that land in its range. So
 * repeated indices add up without atomics, the sum order is fixed (deterministic), rows are
 * touched whole (no strided passes), and the cost is O(rows of a + indices x row). */
typedef struct {
    const char *g;
    char *x;
    const int64_t *idx;
    int64_t m, n, inner, nranges;
    hg_dtype dt;
} scatter_job;

#define SCATTER_ADD(T, LD, ST)                                                                  \
    do {                                                                                        \
        const T *gs = (const T *)(const void *)j->g + (o * j->m) * j->inner;                    \
        T *xs = (T *)(void *)j->x + (o * j->n) * j->inner;                                      \
        for (int64_t k = 0; k < j->m; k++) {                                                    \
            int64_t r = j->idx[k];                                                              \
            if (r < lo || r >= hi) continue;                                                    \
            const T *src = gs + k * j->inner;                                                   \
            T *dst = xs + r * j->inner;                                                         \
            for (int64_t i = 0; i < j->inner; i++) dst[i] = ST(LD(dst[i]) + LD(src[i]));        \
        }                                                                                       \
    } while (0)
#define SC_ID(v) (v)

static void scatter_range(void *ctx, int64_t begin, int64_t end)
{
    const scatter_job *j = ctx;
    size_t esz = hg_dtype_size(j->dt);
    for (int64_t u = begin; u < end; u++) {
        int64_t o = u / j->nranges, q = u % j->nranges;
        int64_t lo = q * j->n / j->nranges, hi = (q + 1) * j->n / j->nranges;
        memset(j->x + (size_t)((o * j->n + lo) * j->inner) * esz, 0,
               (size_t)((hi - lo) * j->inner) * esz);
        /* Signed integers add as their unsigned twins: the same two's-complement wrap-around
         * MXNet gives, without signed overflow. */
        switch (j->dt) {
        case HG_DTYPE_F64: SCATTER_ADD(double, SC_ID, SC_ID); break;
        case HG_DTYPE_F16: SCATTER_ADD(uint16_t, hg_half_to_float, hg_float_to_half); break;
        case HG_DTYPE_F32: SCATTER_ADD(float, SC_ID, SC_ID); break;
        case HG_DTYPE_I64: SCATTER_ADD(uint64_t, SC_ID, SC_ID); break;
        case HG_DTYPE_I32: SCATTER_ADD(uint32_t, SC_ID, SC_ID); break;
        default: SCATTER_ADD(uint8_t, SC_ID, SC_ID); break; /* int8, uint8 */
        }
    }
}

static hg_status bwd_take_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    return bwd_gather_infer(op, a, in, out, take_infer);
}

static hg_status bwd_take_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *dy = in[0], *idx = in[1];
    hg_tensor *dx = out[0];
    int axis = (int)(a->v[TK_AXIS].i < 0 ? a->v[TK_AXIS].i + dx->ndim : a->v[TK_AXIS].i);
    int64_t n = dx->shape[axis], outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= dx->shape[d];
    for (int d = axis + 1; d < dx->ndim; d++) inner *= dx->shape[d];
    if (dx->size == 0) return HG_OK;
    int64_t *iv = ctx->workspace;
    int64_t bad = convert_indices(idx, n, (int)a->v[TK_MODE].i, iv);
    if (bad >= 0)
        return hg_error(HG_ERR_INDEX,
                        "%s: indices contain an index out of bounds (%g at "
                        "position %lld; axis %d has size %lld, mode='raise')",
                        op->name, index_value(idx, bad), (long long)bad, axis, (long long)n);
    /* Splitting a's rows costs: every range re-reads all the indices and finds its ograd rows
     * scattered (a single range streams ograd in order). So split only as far as the threads
     * need work, and not for small jobs. */
    int64_t threads = hg_get_num_threads(), nranges = 1;
    if (outer < threads && (idx->size + n) * inner > 4 * HG_GRAIN_ELEMWISE)
        nranges = (threads + outer - 1) / outer;
    if (nranges > n) nranges = n;
    scatter_job j = {hg_data(dy), hg_data(dx), iv, idx->size, n, inner, nranges, dx->dtype};
    int64_t per_item = (n / nranges + idx->size) * inner;
    int64_t grain = HG_GRAIN_ELEMWISE / (per_item > 0 ? per_item : 1);
    hg_parallel_for(outer * nranges, grain > 0 ? grain : 1, scatter_range, &j);
    return HG_OK;
}

static size_t bwd_idx_ws(const hg_attrs *a, int nin, const hg_meta *in) { return idx_ws(&in[1]); }

/* _backward_pick(ograd, index, data): zeros of data's shape with ograd at the picked places. */
static hg_status bwd_pick_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    return bwd_gather_infer(op, a, in, out, pick_infer);
}

static void unpick_range(void *ctx, int64_t begin, int64_t end)
{
    const pick_job *p = ctx; /* src: ograd in order; dst: the data-shaped gradient */
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r / p->inner, i = r % p->inner;
        copy_elem(p->dst + (size_t)((o * p->n + p->idx[r]) * p->inner + i) * p->esz,
                  p->src + (size_t)r * p->esz, p->esz);
    }
}

static hg_status bwd_pick_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    hg_tensor *dx = out[0];
    int axis = (int)(a->v[PK_AXIS].i < 0 ? a->v[PK_AXIS].i + dx->ndim : a->v[PK_AXIS].i);
    int64_t n = dx->shape[axis], inner = 1;
    for (int d = axis + 1; d < dx->ndim; d++) inner *= dx->shape[d];
    hg_ops_zero_fill(dx);
    if (in[0]->size == 0) return HG_OK;
    int64_t *iv = ctx->workspace;
    convert_indices(in[1], n, (int)a->v[PK_MODE].i, iv);
    pick_job p = {hg_data(in[0]), hg_data(dx), iv, n, inner, hg_dtype_size(dx->dtype)};
    hg_parallel_for(in[0]->size, HG_GRAIN_ELEMWISE, unpick_range, &p);
    return HG_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Registry entries
 * ------------------------------------------------------------------------------------------- */

const hg_op_def hg_ops_indexing[] = {
    {.name = "take",
     .doc = "elements of a along axis at the given indices",
     .input_names = HG_NAMES("a", "indices"),
     .attrs = k_take_attrs,
     .num_attrs = HG_COUNT(k_take_attrs),
     .num_inputs = 2,
     .infer = take_infer,
     .forward = take_forward,
     .workspace = take_ws,
     .grad = take_grad},
    {.name = "pick",
     .aliases = HG_NAMES("choose_element_0index"),
     .doc = "one element per position along axis, chosen by index",
     .input_names = HG_NAMES("data", "index"),
     .attrs = k_pick_attrs,
     .num_attrs = HG_COUNT(k_pick_attrs),
     .num_inputs = 2,
     .infer = pick_infer,
     .forward = pick_forward,
     .workspace = pick_ws,
     .grad = pick_grad},
    {.name = "one_hot",
     .doc = "one-hot encoding of integer indices (a new last axis of depth)",
     .input_names = HG_NAMES("indices"),
     .attrs = k_one_hot_attrs,
     .num_attrs = HG_COUNT(k_one_hot_attrs),
     .num_inputs = 1,
     .infer = one_hot_infer,
     .forward = one_hot_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = "where",
     .doc = "x where condition is nonzero, else y (condition same shape as x, "
            "or 1-D selecting rows)",
     .input_names = HG_NAMES("condition", "x", "y"),
     .num_inputs = 3,
     .infer = where_infer,
     .forward = where_forward,
     .grad = where_grad},
    {.name = "clip",
     .doc = "values limited to [a_min, a_max]",
     .input_names = HG_NAMES("data"),
     .attrs = k_clip_attrs,
     .num_attrs = HG_COUNT(k_clip_attrs),
     .num_inputs = 1,
     .infer = clip_infer,
     .ew = HG_EW_TABLE_ALL(clip),
     .ew_arity = 1,
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE,
     .grad = clip_grad},
    {.name = "Embedding",
     /* MXNet's SparseEmbedding has Embedding's inputs and attributes; its row_sparse gradient
      * is a dense one here (no sparse storage), with the same values. */
     .aliases = HG_NAMES("_contrib_SparseEmbedding"),
     .doc = "rows of weight looked up by integer indices",
     .input_names = HG_NAMES("data", "weight"),
     .attrs = k_embedding_attrs,
     .num_attrs = HG_COUNT(k_embedding_attrs),
     .num_inputs = 2,
     .infer = embedding_infer,
     .forward = embedding_forward,
     .workspace = embedding_ws,
     .grad = embedding_grad},
    {.name = "SequenceMask",
     .doc = "sets positions beyond each sequence's length to value",
     .input_names = HG_NAMES("data", "sequence_length"),
     .attrs = k_seqmask_attrs,
     .num_attrs = HG_COUNT(k_seqmask_attrs),
     .num_inputs = 2,
     .get_num_inputs = seqmask_num_inputs,
     .infer = seqmask_infer,
     .forward = seqmask_forward,
     .workspace = seqmask_ws,
     .flags = HG_OP_INPLACE,
     .grad = seqmask_grad},
    {.name = "_backward_take",
     .doc = "the gradient of take (and Embedding): zeros of a's shape "
            "with ograd's rows added at the indices (repeats accumulate)",
     .input_names = HG_NAMES("ograd", "indices", "a"),
     .attrs = k_take_attrs,
     .num_attrs = HG_COUNT(k_take_attrs),
     .num_inputs = 3,
     .infer = bwd_take_infer,
     .forward = bwd_take_forward,
     .workspace = bwd_idx_ws,
     .grad = bwd_take_grad},
    {.name = "_backward_pick",
     .doc = "the gradient of pick: zeros of data's shape with ograd "
            "at the picked positions",
     .input_names = HG_NAMES("ograd", "index", "data"),
     .attrs = k_pick_attrs,
     .num_attrs = HG_COUNT(k_pick_attrs),
     .num_inputs = 3,
     .infer = bwd_pick_infer,
     .forward = bwd_pick_forward,
     .workspace = bwd_idx_ws,
     .grad = bwd_pick_grad},
    {.name = "_backward_clip",
     .doc = "the gradient of clip: ograd where a_min <= data <= a_max, "
            "else 0",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_clip_attrs,
     .num_attrs = HG_COUNT(k_clip_attrs),
     .num_inputs = 2,
     .infer = bwd_clip_infer,
     .ew = HG_EW_TABLE_FLOAT(clip_bwd),
     .ew_arity = 2,
     .flags = HG_OP_ELEMWISE | HG_OP_INPLACE,
     .grad = bwd_clip_grad},
    {0},
};
