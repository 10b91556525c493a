/* Slicing ops: Concat, stack, SliceChannel (split), slice (crop), slice_axis, slice_like and the
 * internal _slice_assign / _slice_assign_scalar that NDArray.__setitem__ runs.
 *
 * Every op here only moves bytes, so all dtypes work by element size. They all reduce to one
 * primitive, strided_copy: an N-D walk over a shape with independent source and destination
 * strides. It first merges dimensions that are contiguous in both operands (a concat becomes a
 * few long rows), then walks rows with an odometer (no recursion) and memcpys a row whenever its
 * innermost dimension is contiguous on both sides. Long rows are cut into chunks so that even a
 * single huge row spreads over the thread pool.
 *
 * Gradients: each op's adjoint move (Concat <-> split, slice -> _slice_assign into zeros), with
 * _backward_Concat / _backward_slice_axis / _backward_slice_like where no forward op fits.
 *
 * slice follows MXNet 1.9's GetIndexRange: out-of-range begin/end are clamped the way NumPy does
 * (never an error), None entries take the step-dependent default, and axes beyond the given
 * entries are taken whole. slice_axis keeps MXNet's stricter checks (end <= size, begin < end).
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "ops/ops_util.h"
#include "ops/slicing.h"

#define NONE INT64_MIN /* a tuple entry given as None */
#define COPY_CHUNK 32768 /* elements per work item when a row is cut for the thread pool */

/* ---- the strided copy primitive ---------------------------------------------------------- */

typedef struct copy_job {
    int ndim;
    int64_t shape[HG_MAX_NDIM];
    int64_t ds[HG_MAX_NDIM], ss[HG_MAX_NDIM]; /* strides in bytes (may be 0 or negative) */
    char *dst;
    const char *src;
    size_t es;
    int64_t chunk, nchunks; /* the innermost dimension is cut into nchunks pieces of chunk */
} copy_job;

/* One element at a time through memcpy of a constant size: compiles to plain moves, and is
 * free of aliasing trouble whatever the dtype really is. */
#define ROW_LOOP(T)                                                                             \
    for (int64_t i = 0; i < n; i++) {                                                           \
        T v;                                                                                    \
        memcpy(&v, s + i * ss, sizeof v);                                                       \
        memcpy(d + i * ds, &v, sizeof v);                                                       \
    }

static void copy_row(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, size_t es)
{
    if (ds == (int64_t)es && ss == (int64_t)es) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: ROW_LOOP(uint8_t) break;
    case 2: ROW_LOOP(uint16_t) break;
    case 4: ROW_LOOP(uint32_t) break;
    case 8: ROW_LOOP(uint64_t) break;
    default:
        for (int64_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, es);
    }
}

/* Work items [begin, end): item k is chunk (k % nchunks) of row (k / nchunks). Offsets are kept
 * as integers so no pointer ever leaves its buffer while the odometer wraps. */
static void copy_items(void *ctx, int64_t begin, int64_t end)
{
    const copy_job *j = ctx;
    int last = j->ndim - 1;
    int64_t inner = j->shape[last], idx[HG_MAX_NDIM];
    int64_t row = begin / j->nchunks, c = begin % j->nchunks, od = 0, os = 0;
    for (int k = last - 1; k >= 0; k--) {
        idx[k] = row % j->shape[k];
        row /= j->shape[k];
        od += idx[k] * j->ds[k];
        os += idx[k] * j->ss[k];
    }
    for (int64_t it = begin; it < end; it++) {
        int64_t lo = c * j->chunk, n = inner - lo < j->chunk ? inner - lo : j->chunk;
        copy_row(j->dst + od + lo * j->ds[last], j->ds[last], j->src + os + lo * j->ss[last],
                 j->ss[last], n, j->es);
        if (++c < j->nchunks) continue;
        c = 0;
        for (int k = last - 1; k >= 0; k--) { /* odometer step over the outer dimensions */
            od += j->ds[k];
            os += j->ss[k];
            if (++idx[k] < j->shape[k]) break;
            od -= j->ds[k] * j->shape[k];
            os -= j->ss[k] * j->shape[k];
            idx[k] = 0;
        }
    }
}

/* dst[sum i_d * dst_st[d]] = src[sum i_d * src_st[d]] for every index i of shape. Strides are in
 * elements of es bytes; dst and src point at the element of index 0. A source stride of 0
 * broadcasts (a fill). The destination must not overlap the source. */
static void strided_copy(void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
                         int ndim, const int64_t *shape, size_t es)
{
    copy_job j;
    int n = 0;
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0) return;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue; /* its stride never matters */
        if (n > 0 && j.ds[n - 1] == dst_st[d] * shape[d] && j.ss[n - 1] == src_st[d] * shape[d]) {
            j.shape[n - 1] *= shape[d]; /* contiguous with the outer dimension on both sides */
            j.ds[n - 1] = dst_st[d];
            j.ss[n - 1] = src_st[d];
            continue;
        }
        j.shape[n] = shape[d];
        j.ds[n] = dst_st[d];
        j.ss[n] = src_st[d];
        n++;
    }
    if (n == 0) { /* a single element */
        j.shape[0] = 1;
        j.ds[0] = j.ss[0] = 1;
        n = 1;
    }
    j.ndim = n;
    for (int d = 0; d < n; d++) {
        j.ds[d] *= (int64_t)es;
        j.ss[d] *= (int64_t)es;
    }
    j.dst = dst;
    j.src = src;
    j.es = es;
    int64_t inner = j.shape[n - 1], rows = 1;
    for (int d = 0; d < n - 1; d++) rows *= j.shape[d];
    j.chunk = inner < COPY_CHUNK ? inner : COPY_CHUNK;
    j.nchunks = (inner + j.chunk - 1) / j.chunk;
    int64_t grain = (HG_GRAIN_ELEMWISE + j.chunk - 1) / j.chunk;
    hg_parallel_for(rows * j.nchunks, grain, copy_items, &j);
}

/* Copies all of src into dst (same size, no overlap; nothing when they are the same buffer, as
 * for an in-place run). */
static void copy_whole(hg_tensor *dst, const hg_tensor *src)
{
    if (hg_data(dst) == hg_data(src)) return;
    int64_t one = 1, n = src->size;
    strided_copy(hg_data(dst), &one, hg_data(src), &one, 1, &n, hg_dtype_size(src->dtype));
}

/* ---- shared checks --------------------------------------------------------------------------- */

static bool any_unknown(int nin, const hg_meta *in)
{
    for (int i = 0; i < nin; i++)
        if (in[i].ndim < 0) return true;
    return false;
}

static hg_status unknown_out(int nin, const hg_meta *in, int nout, hg_meta *out)
{
    for (int i = 0; i < nout; i++) {
        out[i].ndim = -1;
        out[i].dtype = nin ? in[0].dtype : HG_DTYPE_F32;
    }
    return HG_OK;
}

/* Normalises a possibly negative axis against ndim (valid range [-ndim, ndim)). */
static hg_status check_axis(const hg_op_def *op, const char *attr, int64_t axis, const hg_meta *m,
                            int ndim, int *out)
{
    char s[HG_SHAPE_STR];
    if (ndim <= 0 || axis < -ndim || axis >= ndim)
        return hg_error(HG_ERR_VALUE,
                        "%s: %s=%lld is out of range for an input of shape %s "
                        "(valid range [%d, %d))",
                        op->name, attr, (long long)axis, hg_shape_str(s, m->ndim, m->shape), -ndim,
                        ndim);
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return HG_OK;
}

static hg_status check_same_dtype(const hg_op_def *op, int nin, const hg_meta *in)
{
    for (int i = 1; i < nin; i++)
        if (in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE,
                            "%s: all inputs must have the same dtype, input 0 is %s "
                            "but input %d is %s",
                            op->name, hg_dtype_name(in[0].dtype), i, hg_dtype_name(in[i].dtype));
    return HG_OK;
}

/* ---- Concat ---------------------------------------------------------------------------------- */

static const hg_attr_spec k_concat_attrs[] = {
    [K_CONCAT_NUM_ARGS] = {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                           "Number of inputs to be concated.", NULL},
    [K_CONCAT_DIM] = {"dim", HG_ATTR_INT, 0, "1", "the dimension to be concated.", NULL},
};
_Static_assert(HG_COUNT(k_concat_attrs) == K_CONCAT_NATTRS, "k_concat_attrs must match its enum");

static hg_status concat_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    int axis = 0;
    if (nin < 1) return hg_error(HG_ERR_VALUE, "%s: num_args must be at least 1", op->name);
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    HG_TRY(check_same_dtype(op, nin, in));
    HG_TRY(check_axis(op, "dim", a->v[K_CONCAT_DIM].i, &in[0], in[0].ndim, &axis));
    /* MXNet's incomplete inference: the dims off the axis are shared by every input and the
     * output (known from a consumer); a single unknown size on the axis is the output's less
     * the others. */
    const hg_meta known = out[0];
    bool same_nd = known.ndim < 0 || known.ndim == in[0].ndim;
    for (int i = 1; i < nin; i++) same_nd &= in[i].ndim == in[0].ndim;
    for (int d = 0; same_nd && d < in[0].ndim; d++) {
        if (d == axis) continue;
        int64_t v = known.ndim >= 0 ? known.shape[d] : -1;
        for (int i = 0; i < nin && v < 0; i++) v = in[i].shape[d];
        for (int i = 0; i < nin; i++)
            if (in[i].shape[d] < 0) in[i].shape[d] = v;
    }
    if (same_nd && known.ndim >= 0 && known.shape[axis] >= 0) {
        int missing = -1, nmissing = 0;
        int64_t sum = 0;
        for (int i = 0; i < nin; i++) {
            if (in[i].shape[axis] < 0) {
                missing = i;
                nmissing++;
            } else {
                sum += in[i].shape[axis];
            }
        }
        if (nmissing == 1 && known.shape[axis] >= sum)
            in[missing].shape[axis] = known.shape[axis] - sum;
    }
    out[0] = in[0];
    for (int i = 1; i < nin; i++) {
        bool ok = in[i].ndim == in[0].ndim;
        for (int d = 0; ok && d < in[0].ndim; d++)
            ok = d == axis || in[i].shape[d] == in[0].shape[d] || in[i].shape[d] < 0 ||
                 in[0].shape[d] < 0;
        if (!ok)
            return hg_error(HG_ERR_VALUE,
                            "%s: the shapes of all inputs must match except on "
                            "dim %d, but input 0 has shape %s and input %d has shape %s",
                            op->name, axis, hg_shape_str(s0, in[0].ndim, in[0].shape), i,
                            hg_shape_str(s1, in[i].ndim, in[i].shape));
        int64_t di = in[i].shape[axis];
        out[0].shape[axis] = out[0].shape[axis] < 0 || di < 0 ? -1 : out[0].shape[axis] + di;
    }
    return HG_OK;
}

static hg_status concat_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *y = out[0];
    int nd = y->ndim,
        axis = (int)(a->v[K_CONCAT_DIM].i < 0 ? a->v[K_CONCAT_DIM].i + nd : a->v[K_CONCAT_DIM].i);
    size_t es = hg_dtype_size(y->dtype);
    int64_t yst[HG_MAX_NDIM], xst[HG_MAX_NDIM], off = 0;
    hg_contiguous_strides(nd, y->shape, yst);
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        hg_contiguous_strides(nd, x->shape, xst);
        strided_copy((char *)hg_data(y) + (size_t)(off * yst[axis]) * es, yst, hg_data(x), xst, nd,
                     x->shape, es);
        off += x->shape[axis];
    }
    return HG_OK;
}

/* ---- stack ----------------------------------------------------------------------------------- */

static const hg_attr_spec k_stack_attrs[] = {
    [K_STACK_AXIS] = {"axis", HG_ATTR_INT, 0, "0",
                      "The axis in the result array along which the input arrays are stacked.",
                      NULL},
    [K_STACK_NUM_ARGS] = {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                          "Number of inputs to be stacked.", NULL},
};
_Static_assert(HG_COUNT(k_stack_attrs) == K_STACK_NATTRS, "k_stack_attrs must match its enum");

static hg_status stack_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    int axis = 0;
    if (nin < 1) return hg_error(HG_ERR_VALUE, "%s: num_args must be at least 1", op->name);
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    HG_TRY(check_same_dtype(op, nin, in));
    for (int i = 1; i < nin; i++)
        if (!hg_shape_equal(in[0].ndim, in[0].shape, in[i].ndim, in[i].shape))
            return hg_error(HG_ERR_VALUE,
                            "%s: all inputs must have the same shape, but input 0 "
                            "has shape %s and input %d has shape %s",
                            op->name, hg_shape_str(s0, in[0].ndim, in[0].shape), i,
                            hg_shape_str(s1, in[i].ndim, in[i].shape));
    int nd = in[0].ndim;
    if (nd + 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE,
                        "%s: the result would have %d dimensions, more than the "
                        "%d supported",
                        op->name, nd + 1, HG_MAX_NDIM);
    HG_TRY(check_axis(op, "axis", a->v[K_STACK_AXIS].i, &in[0], nd + 1, &axis));
    out[0].ndim = nd + 1;
    out[0].dtype = in[0].dtype;
    for (int d = 0, k = 0; d < nd + 1; d++) out[0].shape[d] = d == axis ? nin : in[0].shape[k++];
    return HG_OK;
}

static hg_status stack_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *y = out[0];
    int nd = y->ndim,
        axis = (int)(a->v[K_STACK_AXIS].i < 0 ? a->v[K_STACK_AXIS].i + nd : a->v[K_STACK_AXIS].i);
    size_t es = hg_dtype_size(y->dtype);
    int64_t yst[HG_MAX_NDIM], dst_st[HG_MAX_NDIM], xst[HG_MAX_NDIM];
    hg_contiguous_strides(nd, y->shape, yst);
    for (int d = 0, k = 0; d < nd; d++) /* the output's strides without the new axis */
        if (d != axis) dst_st[k++] = yst[d];
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        hg_contiguous_strides(x->ndim, x->shape, xst);
        strided_copy((char *)hg_data(y) + (size_t)(i * yst[axis]) * es, dst_st, hg_data(x), xst,
                     x->ndim, x->shape, es);
    }
    return HG_OK;
}

/* ---- SliceChannel ---------------------------------------------------------------------------- */

static const hg_attr_spec k_split_attrs[] = {
    [K_SPLIT_NUM_OUTPUTS] = {"num_outputs", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                             "Number of splits. Note that this "
                             "should evenly divide the length of the `axis`.",
                             NULL},
    [K_SPLIT_AXIS] = {"axis", HG_ATTR_INT, 0, "1", "Axis along which to split.", NULL},
    [K_SPLIT_SQUEEZE] = {"squeeze_axis", HG_ATTR_BOOL, 0, "False",
                         "If true, Removes the axis with length 1 from the "
                         "shapes of the output arrays.",
                         NULL},
};
_Static_assert(HG_COUNT(k_split_attrs) == K_SPLIT_NATTRS, "k_split_attrs must match its enum");

static int split_num_outputs(const hg_attrs *a)
{
    int64_t n = a->v[K_SPLIT_NUM_OUTPUTS].i;
    return n < 1 || n > (1 << 20) ? 1 : (int)n; /* bad counts are reported by infer */
}

static hg_status split_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    char s[HG_SHAPE_STR];
    int64_t n = a->v[K_SPLIT_NUM_OUTPUTS].i;
    int axis = 0;
    if (n < 1 || n != nout)
        return hg_error(HG_ERR_VALUE, "%s: num_outputs must be between 1 and %d, got %lld",
                        op->name, 1 << 20, (long long)n);
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    hg_meta *x = &in[0];
    HG_TRY(check_axis(op, "axis", a->v[K_SPLIT_AXIS].i, x, x->ndim, &axis));
    bool squeeze = a->v[K_SPLIT_SQUEEZE].b;
    /* MXNet's incomplete inference: unknown input dims come back from known outputs. */
    for (int i = 0; i < nout; i++) {
        const hg_meta *o = &out[i];
        if (o->ndim != x->ndim - (squeeze ? 1 : 0)) continue;
        for (int d = 0, j = 0; d < x->ndim; d++) {
            if (d == axis) {
                if (x->shape[d] < 0 && squeeze) x->shape[d] = n;
                if (x->shape[d] < 0 && !squeeze && o->shape[j] >= 0) x->shape[d] = o->shape[j] * n;
                if (!squeeze) j++;
                continue;
            }
            if (x->shape[d] < 0) x->shape[d] = o->shape[j];
            j++;
        }
    }
    int64_t len = x->shape[axis];
    if (len >= 0 && len % n != 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: cannot split axis %d of the input of shape %s into "
                        "num_outputs=%lld evenly sized chunks: %lld does not divide %lld",
                        op->name, axis, hg_shape_str(s, x->ndim, x->shape), (long long)n,
                        (long long)n, (long long)len);
    if (squeeze && len >= 0 && len != n)
        return hg_error(HG_ERR_VALUE,
                        "%s: with squeeze_axis=True the size of the split axis must "
                        "equal num_outputs; input shape %s, axis=%d, num_outputs=%lld",
                        op->name, hg_shape_str(s, x->ndim, x->shape), axis, (long long)n);
    for (int i = 0; i < nout; i++) {
        out[i] = *x;
        out[i].shape[axis] = len < 0 ? -1 : len / n;
        if (squeeze) {
            memmove(out[i].shape + axis, out[i].shape + axis + 1,
                    sizeof(int64_t) * (size_t)(x->ndim - axis - 1));
            out[i].ndim--;
        }
    }
    return HG_OK;
}

static hg_status split_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0];
    int nd = x->ndim,
        axis = (int)(a->v[K_SPLIT_AXIS].i < 0 ? a->v[K_SPLIT_AXIS].i + nd : a->v[K_SPLIT_AXIS].i);
    size_t es = hg_dtype_size(x->dtype);
    int64_t xst[HG_MAX_NDIM], shape[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    hg_contiguous_strides(nd, x->shape, xst);
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    shape[axis] = x->shape[axis] / nout;
    hg_contiguous_strides(nd, shape, yst); /* the output as if not squeezed: same bytes */
    for (int i = 0; i < nout; i++)
        strided_copy(hg_data(out[i]), yst,
                     (const char *)hg_data(x) + (size_t)(i * shape[axis] * xst[axis]) * es, xst, nd,
                     shape, es);
    return HG_OK;
}

/* ---- slice ranges (MXNet's GetIndexRange) ---------------------------------------------------- */

hg_status hg_slice_resolve(const hg_op_def *op, const hg_tuple *tb, const hg_tuple *te,
                           const hg_tuple *ts, const hg_meta *x, slice_range *r)
{
    char s[HG_SHAPE_STR];
    int nd = x->ndim;
    if (nd < 1) return hg_error(HG_ERR_VALUE, "%s: slicing needs an input with ndim > 0", op->name);
    if (tb->n > nd || te->n > nd)
        return hg_error(HG_ERR_VALUE,
                        "%s: begin has %d and end has %d entries, more than the %d "
                        "dimensions of the input of shape %s",
                        op->name, tb->n, te->n, nd, hg_shape_str(s, x->ndim, x->shape));
    if (tb->n != te->n)
        return hg_error(HG_ERR_VALUE, "%s: begin and end must have the same length, got %d and %d",
                        op->name, tb->n, te->n);
    if (ts->n != 0 && ts->n != tb->n)
        return hg_error(HG_ERR_VALUE,
                        "%s: step must be empty or as long as begin (%d), got %d "
                        "entries",
                        op->name, tb->n, ts->n);
    for (int d = 0; d < nd; d++) {
        int64_t len = x->shape[d], st = d < ts->n && ts->v[d] != NONE ? ts->v[d] : 1;
        r->begin[d] = 0;
        r->step[d] = st;
        r->len[d] = len;
        if (d >= tb->n) continue;
        if (st == 0) return hg_error(HG_ERR_VALUE, "%s: step[%d] cannot be 0", op->name, d);
        if (len < 0) { /* unknown dimension (graph inference) */
            r->len[d] = -1;
            continue;
        }
        if (len == 0) continue;
        bool has_e = te->v[d] != NONE;
        int64_t b = tb->v[d] != NONE ? tb->v[d] : (st < 0 ? len - 1 : 0);
        int64_t e = has_e ? te->v[d] : (st < 0 ? -1 : len);
        if (b < 0) b += len;
        if (e < 0 && has_e) e += len;
        if (b < 0 && st > 0) b = 0;
        if (b > len - 1 && st < 0) b = len - 1;
        if (b < 0 || b > len - 1) b = -1; /* the range is empty whatever end is */
        if (e < -1) e = -1;
        if (e > len) e = len;
        int64_t n = 0;
        if (b >= 0 && st > 0 && e > b) n = (e - b - 1) / st + 1;
        if (b >= 0 && st < 0 && e < b) n = (b - e - 1) / (-st) + 1;
        r->begin[d] = n ? b : 0;
        r->len[d] = n;
    }
    return HG_OK;
}

/* The source (or destination) side of a slice: the first element and per-axis strides of x. */
static const char *slice_base(const hg_tensor *x, const slice_range *r, int64_t *st)
{
    int64_t xst[HG_MAX_NDIM], off = 0;
    hg_contiguous_strides(x->ndim, x->shape, xst);
    for (int d = 0; d < x->ndim; d++) {
        off += r->begin[d] * xst[d];
        st[d] = r->step[d] * xst[d];
    }
    return (const char *)hg_data(x) + (size_t)off * hg_dtype_size(x->dtype);
}

/* ---- slice ----------------------------------------------------------------------------------- */

static const hg_attr_spec k_slice_attrs[] = {
    [K_SLICE_BEGIN] = {"begin", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                       "starting indices for the slice operation, supports negative indices.",
                       NULL},
    [K_SLICE_END] = {"end", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                     "ending indices for the slice operation, supports negative indices.", NULL},
    [K_SLICE_STEP] = {"step", HG_ATTR_TUPLE, 0, "()",
                      "step for the slice operation, supports negative values.", NULL},
};
_Static_assert(HG_COUNT(k_slice_attrs) == K_SLICE_NATTRS, "k_slice_attrs must match its enum");

static hg_status slice_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    slice_range r;
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    HG_TRY(hg_slice_resolve(op, &a->v[K_SLICE_BEGIN].t, &a->v[K_SLICE_END].t, &a->v[K_SLICE_STEP].t,
                            &in[0], &r));
    out[0] = in[0];
    memcpy(out[0].shape, r.len, sizeof(int64_t) * (size_t)in[0].ndim);
    return HG_OK;
}

static hg_status slice_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0], *y = out[0];
    hg_meta m = hg_meta_of(x);
    slice_range r;
    int64_t xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    HG_TRY(hg_slice_resolve(op, &a->v[K_SLICE_BEGIN].t, &a->v[K_SLICE_END].t, &a->v[K_SLICE_STEP].t,
                            &m, &r));
    const char *src = slice_base(x, &r, xst);
    hg_contiguous_strides(y->ndim, y->shape, yst);
    strided_copy(hg_data(y), yst, src, xst, y->ndim, y->shape, hg_dtype_size(x->dtype));
    return HG_OK;
}

/* ---- slice_axis ------------------------------------------------------------------------------ */

static const hg_attr_spec k_slice_axis_attrs[] = {
    [K_SAX_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                    "Axis along which to be sliced, supports negative indexes.", NULL},
    [K_SAX_BEGIN] = {"begin", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                     "The beginning index along the axis to be sliced, supports negative indexes.",
                     NULL},
    [K_SAX_END] = {"end", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
                   "The ending index along the axis to be sliced, "
                   "supports negative indexes; None slices to the end.",
                   NULL},
};
_Static_assert(HG_COUNT(k_slice_axis_attrs) == K_SAX_NATTRS,
               "k_slice_axis_attrs must match its enum");

hg_status hg_slice_axis_resolve(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, int *axis,
                                int64_t *begin, int64_t *end)
{
    char s[HG_SHAPE_STR];
    HG_TRY(check_axis(op, "axis", a->v[K_SAX_AXIS].i, x, x->ndim, axis));
    int64_t len = x->shape[*axis], b = a->v[K_SAX_BEGIN].i, e = 0;
    bool has_e = !a->v[K_SAX_END].is_none;
    if (len < 0) { /* unknown dimension (graph inference) */
        *begin = 0;
        *end = -1;
        return HG_OK;
    }
    if (b < 0) b += len;
    if (len > 0) {
        e = has_e ? a->v[K_SAX_END].i : len;
        if (e < 0) e += len;
        if (e > len || b >= e || b < 0 || e < 0)
            return hg_error(HG_ERR_VALUE,
                            "%s: invalid begin=%lld, end=%s%lld for axis %d of size "
                            "%lld (input shape %s): need 0 <= begin < end <= size",
                            op->name, (long long)a->v[K_SAX_BEGIN].i, has_e ? "" : "None -> ",
                            (long long)(has_e ? a->v[K_SAX_END].i : len), *axis, (long long)len,
                            hg_shape_str(s, x->ndim, x->shape));
    } else {
        b = e = 0;
    }
    *begin = b;
    *end = e;
    return HG_OK;
}

static hg_status slice_axis_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    int axis = 0;
    int64_t b, e;
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    HG_TRY(hg_slice_axis_resolve(op, a, &in[0], &axis, &b, &e));
    out[0] = in[0];
    out[0].shape[axis] = e < 0 ? -1 : e - b;
    return HG_OK;
}

static hg_status slice_axis_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0], *y = out[0];
    hg_meta m = hg_meta_of(x);
    int axis = 0;
    int64_t b, e, xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    size_t es = hg_dtype_size(x->dtype);
    HG_TRY(hg_slice_axis_resolve(op, a, &m, &axis, &b, &e));
    hg_contiguous_strides(x->ndim, x->shape, xst);
    hg_contiguous_strides(y->ndim, y->shape, yst);
    strided_copy(hg_data(y), yst, (const char *)hg_data(x) + (size_t)(b * xst[axis]) * es, xst,
                 y->ndim, y->shape, es);
    return HG_OK;
}

/* ---- slice_like ------------------------------------------------------------------------------ */

static const hg_attr_spec k_slice_like_attrs[] = {
    [K_SLIKE_AXES] =
        {"axes", HG_ATTR_TUPLE, 0, "()",
         "List of axes on which input data will be sliced according "
         "to the corresponding size of the second input. By default will slice on all axes. "
         "Negative axes are supported.",
         NULL},
};
_Static_assert(HG_COUNT(k_slice_like_attrs) == K_SLIKE_NATTRS,
               "k_slice_like_attrs must match its enum");

static hg_status slice_like_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_tuple *axes = &a->v[K_SLIKE_AXES].t;
    const hg_meta *x = &in[0], *like = &in[1];
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    out[0] = *x;
    if (axes->n == 0 && x->ndim != like->ndim)
        return hg_error(HG_ERR_VALUE,
                        "%s: without axes every axis is sliced, so data and "
                        "shape_like need the same ndim, got shapes %s and %s",
                        op->name, hg_shape_str(s0, x->ndim, x->shape),
                        hg_shape_str(s1, like->ndim, like->shape));
    int n = axes->n ? axes->n : x->ndim;
    for (int i = 0; i < n; i++) {
        int64_t ax = axes->n ? axes->v[i] : i;
        if (ax < 0) ax += x->ndim;
        if (ax < 0 || ax >= x->ndim || ax >= like->ndim)
            return hg_error(HG_ERR_VALUE,
                            "%s: axis %lld is out of range for data of shape %s and "
                            "shape_like of shape %s",
                            op->name, (long long)axes->v[i], hg_shape_str(s0, x->ndim, x->shape),
                            hg_shape_str(s1, like->ndim, like->shape));
        if (x->shape[ax] >= 0 && like->shape[ax] > x->shape[ax])
            return hg_error(HG_ERR_VALUE,
                            "%s: axis %lld of shape_like (size %lld) exceeds the "
                            "data's size %lld; shapes %s and %s",
                            op->name, (long long)ax, (long long)like->shape[ax],
                            (long long)x->shape[ax], hg_shape_str(s0, x->ndim, x->shape),
                            hg_shape_str(s1, like->ndim, like->shape));
        out[0].shape[ax] = like->shape[ax];
    }
    return HG_OK;
}

static hg_status slice_like_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *x = in[0], *y = out[0];
    int64_t xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, xst);
    hg_contiguous_strides(y->ndim, y->shape, yst);
    strided_copy(hg_data(y), yst, hg_data(x), xst, y->ndim, y->shape, hg_dtype_size(x->dtype));
    return HG_OK;
}

/* ---- _slice_assign, _slice_assign_scalar ----------------------------------------------------- */

static hg_status slice_assign_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                    int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    slice_range r;
    if (any_unknown(1, in)) return unknown_out(nin, in, nout, out);
    HG_TRY(hg_slice_resolve(op, &a->v[K_SLICE_BEGIN].t, &a->v[K_SLICE_END].t, &a->v[K_SLICE_STEP].t,
                            &in[0], &r));
    if (in[1].ndim < 0) { /* graph inference: rhs takes the slice's shape */
        in[1] = in[0];
        memcpy(in[1].shape, r.len, sizeof(int64_t) * (size_t)in[0].ndim);
    }
    if (!hg_shape_equal(in[1].ndim, in[1].shape, in[0].ndim, r.len))
        return hg_error(HG_ERR_VALUE,
                        "%s: rhs has shape %s but the slice of lhs (shape %s) has "
                        "shape %s",
                        op->name, hg_shape_str(s0, in[1].ndim, in[1].shape),
                        hg_shape_str(s1, in[0].ndim, in[0].shape),
                        hg_shape_str(s2, in[0].ndim, r.len));
    HG_TRY(check_same_dtype(op, nin, in));
    out[0] = in[0];
    return HG_OK;
}

static hg_status slice_assign_forward(const hg_op_def *op, const hg_attrs *a,
                                      const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                      int nout, hg_tensor *const *out)
{
    const hg_tensor *v = in[1];
    hg_tensor *y = out[0];
    hg_meta m = hg_meta_of(in[0]);
    slice_range r;
    int64_t yst[HG_MAX_NDIM], vst[HG_MAX_NDIM];
    HG_TRY(hg_slice_resolve(op, &a->v[K_SLICE_BEGIN].t, &a->v[K_SLICE_END].t, &a->v[K_SLICE_STEP].t,
                            &m, &r));
    copy_whole(y, in[0]);
    char *dst = (char *)slice_base(y, &r, yst);
    hg_contiguous_strides(v->ndim, v->shape, vst);
    strided_copy(dst, yst, hg_data(v), vst, y->ndim, r.len, hg_dtype_size(y->dtype));
    return HG_OK;
}

static const hg_attr_spec k_slice_assign_scalar_attrs[] = {
    [K_SAS_SCALAR] = {"scalar", HG_ATTR_FLOAT, 0, "0", "The scalar value for assignment.", NULL},
    [K_SAS_BEGIN] = {"begin", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                     "starting indices for the slice operation, supports negative indices.", NULL},
    [K_SAS_END] = {"end", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
                   "ending indices for the slice operation, supports negative indices.", NULL},
    [K_SAS_STEP] = {"step", HG_ATTR_TUPLE, 0, "()",
                    "step for the slice operation, supports negative values.", NULL},
};
_Static_assert(HG_COUNT(k_slice_assign_scalar_attrs) == K_SAS_NATTRS,
               "k_slice_assign_scalar_attrs must match its enum");

static hg_status slice_assign_scalar_infer(const hg_op_def *op, const hg_attrs *a, int nin,
                                           hg_meta *in, int nout, hg_meta *out)
{
    slice_range r;
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    HG_TRY(hg_slice_resolve(op, &a->v[K_SAS_BEGIN].t, &a->v[K_SAS_END].t, &a->v[K_SAS_STEP].t,
                            &in[0], &r));
    out[0] = in[0];
    return HG_OK;
}

/* A double as an integer of the target type without undefined behaviour on NaN or overflow. */
static int64_t saturate_i64(double v)
{
    if (isnan(v)) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

void hg_slice_scalar_bytes(double v, hg_dtype dt, void *buf)
{
    union {
        float f;
        double d;
        uint16_t h;
        uint8_t u;
        int8_t i8;
        int32_t i32;
        int64_t i64;
    } x;
    memset(&x, 0, sizeof x);
    switch (dt) {
    case HG_DTYPE_F32: x.f = (float)v; break;
    case HG_DTYPE_F64: x.d = v; break;
    case HG_DTYPE_F16: x.h = hg_float_to_half((float)v); break;
    case HG_DTYPE_U8: x.u = (uint8_t)saturate_i64(v); break;
    case HG_DTYPE_I8: x.i8 = (int8_t)saturate_i64(v); break;
    case HG_DTYPE_I32: x.i32 = (int32_t)saturate_i64(v); break;
    case HG_DTYPE_I64: x.i64 = saturate_i64(v); break;
    case HG_DTYPE_BOOL: x.u = v != 0; break;
    default: break;
    }
    memcpy(buf, &x, hg_dtype_size(dt));
}

static hg_status slice_assign_scalar_forward(const hg_op_def *op, const hg_attrs *a,
                                             const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                             int nout, hg_tensor *const *out)
{
    hg_tensor *y = out[0];
    hg_meta m = hg_meta_of(in[0]);
    slice_range r;
    int64_t yst[HG_MAX_NDIM], zero[HG_MAX_NDIM] = {0};
    unsigned char value[16];
    HG_TRY(hg_slice_resolve(op, &a->v[K_SAS_BEGIN].t, &a->v[K_SAS_END].t, &a->v[K_SAS_STEP].t, &m,
                            &r));
    copy_whole(y, in[0]);
    hg_slice_scalar_bytes(a->v[K_SAS_SCALAR].f, y->dtype, value);
    char *dst = (char *)slice_base(y, &r, yst);
    strided_copy(dst, yst, value, zero, y->ndim, r.len, hg_dtype_size(y->dtype));
    return HG_OK;
}

/* ---- gradients --------------------------------------------------------------------------------
 * All these ops move bytes, so each gradient is the adjoint move: a split for a join, a scatter
 * into zeros for a slice. A _backward_X op takes (ograd, data...) and reads data for its shape
 * only; being linear in ograd, its own gradient is X again. */

/* Checks ograd (in[0]) has the shape the forward rule `fwd` gives for the data inputs
 * in[1..nin); the caller then shapes its outputs like the data. */
static hg_status bwd_check(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                           hg_status (*fwd)(const hg_op_def *, const hg_attrs *, int, hg_meta *,
                                            int, hg_meta *))
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    hg_meta y = {.ndim = -1, .dtype = in[0].dtype};
    HG_TRY(fwd(op, a, nin - 1, in + 1, 1, &y));
    if (in[0].ndim >= 0 && y.ndim >= 0 && !hg_shape_equal(in[0].ndim, in[0].shape, y.ndim, y.shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: ograd has shape %s but the forward output for data "
                        "of shape %s has shape %s",
                        op->name, hg_shape_str(s0, in[0].ndim, in[0].shape),
                        hg_shape_str(s1, in[1].ndim, in[1].shape),
                        hg_shape_str(s2, y.ndim, y.shape));
    return HG_OK;
}

/* Joins the gradients of all outputs with op `name` (Concat or stack) along `axis_key`. */
static hg_status join_grads(hg_grad_ctx *g, const char *name, const char *axis_key, int axis_attr)
{
    int n = hg_g_nout(g);
    hg_sentry *dys = malloc(sizeof(hg_sentry) * (size_t)n);
    if (!dys) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) dys[i] = hg_g_ograd(g, i);
    hg_g_set(
        g, 0,
        hg_g_op(g, name, n, dys,
                HG_KV("num_args", hg_g_fmt(g, "%d", n), axis_key, hg_g_attr_str(g, axis_attr))));
    free(dys);
    return hg_g_status(g);
}

/* Concat: _backward_Concat(ograd, data...) cuts ograd back into the inputs' shapes. */
static hg_status concat_grad(hg_grad_ctx *g)
{
    int n = hg_g_nin(g);
    hg_sentry *ins = malloc(sizeof(hg_sentry) * (size_t)(2 * n + 1));
    if (!ins) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_sentry *outs = ins + n + 1;
    ins[0] = hg_g_ograd(g, 0);
    for (int i = 0; i < n; i++) ins[i + 1] = hg_g_in(g, i);
    hg_g_opn(g, "_backward_Concat", n + 1, ins,
             HG_KV("num_args", hg_g_fmt(g, "%d", n), "dim", hg_g_attr_str(g, K_CONCAT_DIM)), n,
             outs);
    for (int i = 0; i < n; i++) hg_g_set(g, i, outs[i]);
    free(ins);
    return hg_g_status(g);
}

static int bwd_concat_num_inputs(const hg_attrs *a)
{
    int64_t n = a->v[K_CONCAT_NUM_ARGS].i;
    return n < 1 || n > (1 << 20) ? 2 : (int)n + 1; /* bad counts are reported by infer */
}

static int bwd_concat_num_outputs(const hg_attrs *a) { return bwd_concat_num_inputs(a) - 1; }

static hg_status bwd_concat_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    if (a->v[K_CONCAT_NUM_ARGS].i != nin - 1 || nout != nin - 1)
        return hg_error(HG_ERR_VALUE, "%s: num_args=%lld but %d data inputs were given", op->name,
                        (long long)a->v[K_CONCAT_NUM_ARGS].i, nin - 1);
    if (any_unknown(nin - 1, in + 1)) return unknown_out(nin, in, nout, out);
    HG_TRY(bwd_check(op, a, nin, in, concat_infer));
    for (int i = 0; i < nout; i++) {
        out[i] = in[i + 1];
        out[i].dtype = in[0].dtype;
    }
    return HG_OK;
}

static hg_status bwd_concat_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const hg_tensor *dy = in[0];
    int nd = dy->ndim,
        axis = (int)(a->v[K_CONCAT_DIM].i < 0 ? a->v[K_CONCAT_DIM].i + nd : a->v[K_CONCAT_DIM].i);
    size_t es = hg_dtype_size(dy->dtype);
    int64_t yst[HG_MAX_NDIM], xst[HG_MAX_NDIM], off = 0;
    hg_contiguous_strides(nd, dy->shape, yst);
    for (int i = 0; i < nout; i++) {
        hg_tensor *dx = out[i];
        hg_contiguous_strides(nd, dx->shape, xst);
        strided_copy(hg_data(dx), xst, (const char *)hg_data(dy) + (size_t)(off * yst[axis]) * es,
                     yst, nd, dx->shape, es);
        off += dx->shape[axis];
    }
    return HG_OK;
}

static hg_status bwd_concat_grad(hg_grad_ctx *g)
{
    return join_grads(g, "Concat", "dim", K_CONCAT_DIM);
}

/* stack: split ograd along the new axis, dropping it. */
static hg_status stack_grad(hg_grad_ctx *g)
{
    int n = hg_g_nin(g);
    hg_sentry *outs = malloc(sizeof(hg_sentry) * (size_t)n);
    if (!outs) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_g_opn(g, "SliceChannel", HG_GIN(hg_g_ograd(g, 0)),
             HG_KV("num_outputs", hg_g_fmt(g, "%d", n), "axis", hg_g_attr_str(g, K_STACK_AXIS),
                   "squeeze_axis", "True"),
             n, outs);
    for (int i = 0; i < n; i++) hg_g_set(g, i, outs[i]);
    free(outs);
    return hg_g_status(g);
}

/* SliceChannel: the outputs' gradients joined again (stacked when the axis was squeezed). */
static hg_status split_grad(hg_grad_ctx *g)
{
    if (hg_g_attrs(g)->v[K_SPLIT_SQUEEZE].b) return join_grads(g, "stack", "axis", K_SPLIT_AXIS);
    return join_grads(g, "Concat", "dim", K_SPLIT_AXIS);
}

/* slice: ograd written into zeros of data's shape (_slice_assign shares slice's schema). */
static hg_status slice_grad(hg_grad_ctx *g)
{
    hg_sentry z = hg_g_op(g, "zeros_like", HG_GIN(hg_g_in(g, 0)), NULL), r;
    hg_g_op_fwd_attrs(g, "_slice_assign", HG_GIN(z, hg_g_ograd(g, 0)), NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

/* _slice_assign: lhs gets ograd with the region zeroed, rhs the region. */
static hg_status slice_assign_grad(hg_grad_ctx *g)
{
    hg_sentry dy = hg_g_ograd(g, 0), r;
    if (hg_g_needs(g, 0)) {
        hg_g_op_fwd_attrs(g, "_slice_assign_scalar", HG_GIN(dy), HG_KV("scalar", "0"), 1, &r);
        hg_g_set(g, 0, r);
    }
    if (hg_g_needs(g, 1)) {
        hg_g_op_fwd_attrs(g, "slice", HG_GIN(dy), NULL, 1, &r);
        hg_g_set(g, 1, r);
    }
    return hg_g_status(g);
}

static hg_status slice_assign_scalar_grad(hg_grad_ctx *g)
{
    hg_sentry r;
    hg_g_op_fwd_attrs(g, "_slice_assign_scalar", HG_GIN(hg_g_ograd(g, 0)), HG_KV("scalar", "0"), 1,
                      &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

static hg_status slice_axis_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "_backward_slice_axis", true);
}

static hg_status bwd_slice_axis_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "slice_axis", false);
}

/* slice_like: shape_like gives only a shape. */
static hg_status slice_like_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0,
             hg_g_op(g, "_backward_slice_like", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

static hg_status bwd_slice_like_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "slice_like", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

static hg_status bwd_slice_axis_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                      int nout, hg_meta *out)
{
    if (any_unknown(1, in + 1)) return unknown_out(nin, in, nout, out);
    HG_TRY(bwd_check(op, a, nin, in, slice_axis_infer));
    out[0] = in[1];
    out[0].dtype = in[0].dtype;
    return HG_OK;
}

/* Zeros with ograd in [begin, end) of the axis. */
static hg_status bwd_slice_axis_forward(const hg_op_def *op, const hg_attrs *a,
                                        const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                        int nout, hg_tensor *const *out)
{
    const hg_tensor *dy = in[0];
    hg_tensor *dx = out[0];
    hg_meta m = hg_meta_of(in[1]);
    int axis = 0;
    int64_t b, e, xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    size_t es = hg_dtype_size(dx->dtype);
    HG_TRY(hg_slice_axis_resolve(op, a, &m, &axis, &b, &e));
    hg_ops_zero_fill(dx);
    hg_contiguous_strides(dx->ndim, dx->shape, xst);
    hg_contiguous_strides(dy->ndim, dy->shape, yst);
    strided_copy((char *)hg_data(dx) + (size_t)(b * xst[axis]) * es, xst, hg_data(dy), yst,
                 dy->ndim, dy->shape, es);
    return HG_OK;
}

static hg_status bwd_slice_like_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                      int nout, hg_meta *out)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_meta *dy = &in[0], *x = &in[1];
    if (any_unknown(nin, in)) return unknown_out(nin, in, nout, out);
    bool ok = dy->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++) ok = dy->shape[d] <= x->shape[d];
    if (!ok)
        return hg_error(HG_ERR_VALUE,
                        "%s: ograd of shape %s does not fit in data of shape %s "
                        "(same ndim, no dim larger)",
                        op->name, hg_shape_str(s0, dy->ndim, dy->shape),
                        hg_shape_str(s1, x->ndim, x->shape));
    out[0] = *x;
    out[0].dtype = dy->dtype;
    return HG_OK;
}

/* Zeros with ograd in the leading corner. */
static hg_status bwd_slice_like_forward(const hg_op_def *op, const hg_attrs *a,
                                        const hg_exec_ctx *ctx, int nin, hg_tensor *const *in,
                                        int nout, hg_tensor *const *out)
{
    const hg_tensor *dy = in[0];
    hg_tensor *dx = out[0];
    int64_t xst[HG_MAX_NDIM], yst[HG_MAX_NDIM];
    hg_ops_zero_fill(dx);
    hg_contiguous_strides(dx->ndim, dx->shape, xst);
    hg_contiguous_strides(dy->ndim, dy->shape, yst);
    strided_copy(hg_data(dx), xst, hg_data(dy), yst, dy->ndim, dy->shape, hg_dtype_size(dx->dtype));
    return HG_OK;
}

/* ---- the table ------------------------------------------------------------------------------- */

const hg_op_def hg_ops_slicing[] = {
    {.name = "Concat",
     .aliases = HG_NAMES("concat"),
     .doc = "Joins input arrays along a given axis (dim). Shapes must match except on dim.",
     .input_names = HG_NAMES("data"),
     .attrs = k_concat_attrs,
     .num_attrs = 2,
     .flags = HG_OP_VARARGS,
     .infer = concat_infer,
     .forward = concat_forward,
     .grad = concat_grad},
    {.name = "stack",
     .doc = "Joins a sequence of arrays of the same shape along a new axis.",
     .input_names = HG_NAMES("data"),
     .attrs = k_stack_attrs,
     .num_attrs = 2,
     .flags = HG_OP_VARARGS,
     .infer = stack_infer,
     .forward = stack_forward,
     .grad = stack_grad},
    {.name = "SliceChannel",
     .aliases = HG_NAMES("split"),
     .doc = "Splits an array along an axis into num_outputs equal parts (outputs output<i>).",
     .input_names = HG_NAMES("data"),
     .attrs = k_split_attrs,
     .num_attrs = 3,
     .num_inputs = 1,
     .get_num_outputs = split_num_outputs,
     .infer = split_infer,
     .forward = split_forward,
     .grad = split_grad},
    {.name = "slice",
     .aliases = HG_NAMES("crop"),
     .doc = "Slices a region of the array: begin/end/step per axis (None: the default; axes "
            "past the given entries are taken whole).",
     .input_names = HG_NAMES("data"),
     .attrs = k_slice_attrs,
     .num_attrs = 3,
     .num_inputs = 1,
     .infer = slice_infer,
     .forward = slice_forward,
     .grad = slice_grad},
    {.name = "slice_axis",
     .doc = "Slices [begin, end) along one axis.",
     .input_names = HG_NAMES("data"),
     .attrs = k_slice_axis_attrs,
     .num_attrs = 3,
     .num_inputs = 1,
     .infer = slice_axis_infer,
     .forward = slice_axis_forward,
     .grad = slice_axis_grad},
    {.name = "slice_like",
     .doc = "Slices data to the shape of shape_like on the given axes "
            "(all axes by default), starting at index 0.",
     .input_names = HG_NAMES("data", "shape_like"),
     .attrs = k_slice_like_attrs,
     .num_attrs = 1,
     .num_inputs = 2,
     .infer = slice_like_infer,
     .forward = slice_like_forward,
     .grad = slice_like_grad},
    {.name = "_slice_assign",
     .aliases = HG_NAMES("_crop_assign"),
     .doc = "A copy of lhs with the region begin/end/step replaced by rhs.",
     .input_names = HG_NAMES("lhs", "rhs"),
     .attrs = k_slice_attrs,
     .num_attrs = 3,
     .num_inputs = 2,
     .flags = HG_OP_INPLACE,
     .infer = slice_assign_infer,
     .forward = slice_assign_forward,
     .grad = slice_assign_grad},
    {.name = "_slice_assign_scalar",
     .aliases = HG_NAMES("_crop_assign_scalar"),
     .doc = "A copy of data with the region begin/end/step set to scalar.",
     .input_names = HG_NAMES("data"),
     .attrs = k_slice_assign_scalar_attrs,
     .num_attrs = 4,
     .num_inputs = 1,
     .flags = HG_OP_INPLACE,
     .infer = slice_assign_scalar_infer,
     .forward = slice_assign_scalar_forward,
     .grad = slice_assign_scalar_grad},
    {.name = "_backward_Concat",
     .doc = "The gradient of Concat: ograd cut into the shapes of "
            "the data inputs (read for their shapes only).",
     .input_names = HG_NAMES("data"),
     .attrs = k_concat_attrs,
     .num_attrs = 2,
     .flags = HG_OP_VARARGS,
     .get_num_inputs = bwd_concat_num_inputs,
     .get_num_outputs = bwd_concat_num_outputs,
     .infer = bwd_concat_infer,
     .forward = bwd_concat_forward,
     .grad = bwd_concat_grad},
    {.name = "_backward_slice_axis",
     .doc = "The gradient of slice_axis: zeros of data's shape "
            "with ograd in the sliced range.",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_slice_axis_attrs,
     .num_attrs = 3,
     .num_inputs = 2,
     .infer = bwd_slice_axis_infer,
     .forward = bwd_slice_axis_forward,
     .grad = bwd_slice_axis_grad},
    {.name = "_backward_slice_like",
     .doc = "The gradient of slice_like: zeros of data's shape "
            "with ograd in the leading corner.",
     .input_names = HG_NAMES("ograd", "data"),
     .num_inputs = 2,
     .infer = bwd_slice_like_infer,
     .forward = bwd_slice_like_forward,
     .grad = bwd_slice_like_grad},
    {0},
};
