/* Shape family: ops that move elements without arithmetic (Reshape, Flatten, transpose,
 * expand_dims, squeeze, SwapAxis, tile, repeat, reverse, broadcast_to/_like/_axis, diag), their
 * gradient rules and the _backward_ ops those need (a strided sum for tile/repeat).
 *
 * Every data-movement op lowers to one primitive, the strided view copy
 * (csrc/kernels/cpu/strided_copy.h):
 *     out[i] = in[base + sum_d idx_d(i) * istr[d]]    over the output's (row-major) shape,
 * where the per-dim input strides (in elements) may be 0 (broadcast), negative (reverse),
 * permuted (transpose) or summed (diagonal). It moves bytes by element size, so every dtype
 * works (Cast and add_n, which look at values, are in cast.c and elemwise_binary.c). Shape rules
 * validate everything; the kernels trust them.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"
#include "graph/grad.h"
#include "kernels/cpu/strided_copy.h"
#include "ops/ops_util.h"
#include "ops/shape.h"

#define SMAX HG_STRIDED_MAX_DIMS
#define COPY_GRAIN_BYTES (1 << 18)

/* Normalises an axis into [0, ndim); false when it is out of range. */
static bool norm_axis(int64_t axis, int ndim, int *out)
{
    if (axis < -(int64_t)ndim || axis >= ndim) return false;
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return true;
}

/* ---- plain copies ------------------------------------------------------------------------ */

typedef struct {
    char *dst;
    const char *src;
} pcopy_job;

static void pcopy_range(void *ctx, int64_t b, int64_t e)
{
    const pcopy_job *j = ctx;
    memcpy(j->dst + b, j->src + b, (size_t)(e - b));
}

/* Copies nbytes on the pool; a no-op when the op runs in place. */
static void par_copy(void *dst, const void *src, size_t nbytes)
{
    if (dst == src || nbytes == 0) return;
    pcopy_job j = {dst, src};
    hg_parallel_for((int64_t)nbytes, COPY_GRAIN_BYTES, pcopy_range, &j);
}

/* Forward of the ops whose output is the input's bytes under another shape. */
static hg_status copy_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    par_copy(hg_data(out[0]), hg_data(in[0]), (size_t)in[0]->size * hg_dtype_size(in[0]->dtype));
    return HG_OK;
}

/* out = in broadcast over out's shape (same rank; the input's size-1 dims repeat). */
static void broadcast_copy(const hg_tensor *in, hg_tensor *out)
{
    int64_t str[HG_MAX_NDIM];
    hg_contiguous_strides(in->ndim, in->shape, str);
    for (int d = 0; d < out->ndim; d++)
        if (in->shape[d] != out->shape[d]) str[d] = 0;
    hg_strided_copy(hg_data(in), hg_data(out), hg_dtype_size(in->dtype), out->ndim, out->shape, str,
                    0);
}

static hg_status broadcast_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    broadcast_copy(in[0], out[0]);
    return HG_OK;
}

/* ---- Reshape ----------------------------------------------------------------------------- */

static const hg_attr_spec k_reshape_attrs[] = {
    [R_SHAPE] =
        {"shape", HG_ATTR_TUPLE, 0, "()",
         "target shape; codes: 0 copy a dim, -1 infer, -2 copy the rest, -3 merge two dims, "
         "-4 a b split a dim",
         NULL},
    [R_REVERSE] = {"reverse", HG_ATTR_BOOL, 0, "False",
                   "match the special codes from right to left", NULL},
    [R_TARGET] = {"target_shape", HG_ATTR_TUPLE, 0, "()",
                  "(deprecated, use shape) target shape; one 0 dim is inferred", NULL},
    [R_KEEP] = {"keep_highest", HG_ATTR_BOOL, 0, "False",
                "(deprecated, use shape) keep the input's first dim with target_shape", NULL},
};
_Static_assert(HG_COUNT(k_reshape_attrs) == R_NATTRS, "k_reshape_attrs must match its enum");

#define RMAX (HG_MAX_TUPLE + HG_MAX_NDIM)

static hg_status HG_PRINTF(4, 5)
    reshape_fail(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, const char *fmt, ...)
{
    char why[256], s[HG_SHAPE_STR], t[HG_MAX_TUPLE * 24 + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int k = a->v[R_SHAPE].t.n || !a->v[R_TARGET].is_set ? R_SHAPE : R_TARGET;
    hg_attr_format(op, k, a, t, sizeof t);
    return hg_error(HG_ERR_VALUE, "%s: cannot reshape input of shape %s with %s=%s%s: %s", op->name,
                    hg_shape_str(s, x->ndim, x->shape), op->attrs[k].name, t,
                    a->v[R_REVERSE].b ? ", reverse=True" : "", why);
}

/* Product of dims; false on int64 overflow. Unknown (-1) dims make it -1. */
static bool shape_prod(int nd, const int64_t *shape, int64_t *out)
{
    int64_t n = 1;
    bool unknown = false;
    for (int d = 0; d < nd; d++) {
        if (shape[d] < 0) {
            unknown = true;
            continue;
        }
        if (__builtin_mul_overflow(n, shape[d], &n)) return false;
    }
    *out = unknown ? -1 : n;
    return true;
}

/* Fills the one inferred dim tmp[inf] (holding 1) from the input size, then checks the total. */
static hg_status reshape_finish(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, int m,
                                int64_t *tmp, int inf, hg_meta *o)
{
    char ts[HG_SHAPE_STR];
    int64_t size, rest;
    if (m > HG_MAX_NDIM)
        return reshape_fail(op, a, x, "the result would have %d dims, more than %d", m,
                            HG_MAX_NDIM);
    if (!shape_prod(x->ndim, x->shape, &size) || !shape_prod(m, tmp, &rest))
        return reshape_fail(op, a, x, "the target size overflows");
    if (inf >= 0) {
        if (size < 0 || rest < 0) {
            tmp[inf] = -1; /* graph inference with unknown dims: stays unknown */
        } else if (rest == 0) {
            return reshape_fail(op, a, x,
                                "cannot infer the -1 dim: the other target dims "
                                "have zero size");
        } else {
            tmp[inf] = size / rest;
            rest *= tmp[inf];
        }
    }
    if (size >= 0 && rest >= 0 && size != rest)
        return reshape_fail(op, a, x,
                            "Target shape size is different to source. Target: %s "
                            "(%lld elements), source has %lld elements",
                            hg_shape_str(ts, m, tmp), (long long)rest, (long long)size);
    o->ndim = m;
    o->dtype = x->dtype;
    memcpy(o->shape, tmp, sizeof(int64_t) * (size_t)m);
    return HG_OK;
}

/* The special codes, as MXNet's InferReshapeShape reads them (reverse: both lists reversed). */
static hg_status reshape_codes(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, hg_meta *o)
{
    const hg_tuple *sh = &a->v[R_SHAPE].t;
    bool rev = a->v[R_REVERSE].b;
    int n = sh->n, nd = x->ndim, m = 0, si = 0, inf = -1;
    int64_t par[HG_MAX_TUPLE], src[HG_MAX_NDIM], tmp[RMAX];
    for (int i = 0; i < n; i++) par[i] = sh->v[rev ? n - 1 - i : i];
    for (int d = 0; d < nd; d++) src[d] = x->shape[rev ? nd - 1 - d : d];
    for (int i = 0; i < n; i++) {
        int64_t c = par[i];
        if (c > 0) {
            tmp[m++] = c;
            si++;
        } else if (c == 0) {
            if (si >= nd)
                return reshape_fail(op, a, x, "code 0 at position %d has no input dim to copy", i);
            tmp[m++] = src[si++];
        } else if (c == -1) {
            if (inf >= 0) return reshape_fail(op, a, x, "One and only one dim can be inferred");
            inf = m;
            tmp[m++] = 1;
            si++;
        } else if (c == -2) {
            while (si < nd) tmp[m++] = src[si++];
        } else if (c == -3) {
            if (si + 1 >= nd)
                return reshape_fail(op, a, x, "code -3 at position %d needs two input dims", i);
            int64_t d1 = src[si++], d2 = src[si++];
            tmp[m++] = d1 < 0 || d2 < 0 ? -1 : d1 * d2;
        } else if (c == -4) {
            if (i + 2 >= n) return reshape_fail(op, a, x, "code -4 must be followed by two dims");
            if (si >= nd)
                return reshape_fail(op, a, x,
                                    "code -4 at position %d has no input dim to "
                                    "split",
                                    i);
            int64_t d0 = src[si++], d1 = par[++i], d2 = par[++i];
            if (d1 < -1 || d2 < -1 || (d1 == -1 && d2 == -1))
                return reshape_fail(op, a, x,
                                    "the dims after -4 must be >= 0, one may be -1 "
                                    "(got %lld, %lld)",
                                    (long long)d1, (long long)d2);
            if (d0 >= 0) {
                if ((d1 == -1 && d2 == 0) || (d2 == -1 && d1 == 0))
                    return reshape_fail(op, a, x, "cannot split dim %lld into %lld x %lld",
                                        (long long)d0, (long long)d1, (long long)d2);
                if (d1 == -1) d1 = d0 / d2;
                if (d2 == -1) d2 = d0 / d1;
                int64_t pr;
                if (__builtin_mul_overflow(d1, d2, &pr) || pr != d0)
                    return reshape_fail(op, a, x,
                                        "Split dims %lld, %lld do not divide "
                                        "original dim %lld",
                                        (long long)d1, (long long)d2, (long long)d0);
            }
            tmp[m++] = d1;
            tmp[m++] = d2;
        } else {
            return reshape_fail(op, a, x,
                                "invalid value %lld in shape (codes are 0, -1, -2, "
                                "-3, -4 or positive dims)",
                                (long long)c);
        }
    }
    if (rev) {
        for (int i = 0; i < m / 2; i++) {
            int64_t t = tmp[i];
            tmp[i] = tmp[m - 1 - i];
            tmp[m - 1 - i] = t;
        }
        if (inf >= 0) inf = m - 1 - inf;
    }
    return reshape_finish(op, a, x, m, tmp, inf, o);
}

/* Deprecated target_shape: one 0 dim is inferred; keep_highest pins the first dim. */
static hg_status reshape_target(const hg_op_def *op, const hg_attrs *a, const hg_meta *x,
                                hg_meta *o)
{
    const hg_tuple *ts = &a->v[R_TARGET].t;
    bool keep = a->v[R_KEEP].b;
    int64_t tmp[RMAX];
    int m = ts->n, zeros = 0, inf = -1;
    for (int i = 0; i < m; i++) {
        if (ts->v[i] < 0)
            return reshape_fail(op, a, x, "negative dim %lld in target_shape", (long long)ts->v[i]);
        tmp[i] = ts->v[i];
    }
    if (keep) {
        if (m == 0 || x->ndim == 0)
            return reshape_fail(op, a, x, "keep_highest needs a first dim on both sides");
        tmp[0] = x->shape[0];
    }
    for (int i = keep ? 1 : 0; i < m; i++) {
        if (tmp[i] == 0) {
            zeros++;
            inf = i;
        }
    }
    if (zeros == 1) tmp[inf] = 1;
    else inf = -1;
    return reshape_finish(op, a, x, m, tmp, inf, o);
}

static hg_status reshape_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    if (in[0].ndim < 0) return hg_error(HG_ERR_VALUE, "%s: the input shape is unknown", op->name);
    /* Backwards (MXNet's ReverseReshapeInferShape): one unknown input dimension follows from a
     * fully known output (from a consumer), the sizes being equal. */
    int unknown = -1, nunknown = 0;
    int64_t known = 1, total = out[0].ndim >= 0 ? 1 : -1;
    for (int d = 0; d < in[0].ndim; d++) {
        if (in[0].shape[d] < 0) {
            unknown = d;
            nunknown++;
        } else {
            known *= in[0].shape[d];
        }
    }
    for (int d = 0; total >= 0 && d < out[0].ndim; d++)
        total = out[0].shape[d] < 0 ? -1 : total * out[0].shape[d];
    if (nunknown == 1 && total >= 0 && known > 0 && total % known == 0)
        in[0].shape[unknown] = total / known;
    if (a->v[R_SHAPE].t.n > 0) return reshape_codes(op, a, &in[0], &out[0]);
    if (a->v[R_TARGET].is_set) return reshape_target(op, a, &in[0], &out[0]);
    return reshape_fail(op, a, &in[0], "shape is empty; give the target shape, e.g. shape=(-1,)");
}

/* ---- Flatten, expand_dims, squeeze ------------------------------------------------------- */

static hg_status flatten_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)op;
    (void)a;
    (void)nin;
    (void)nout;
    const hg_meta *x = &in[0];
    int64_t rest = 1;
    for (int d = 1; d < x->ndim; d++) rest = x->shape[d] < 0 || rest < 0 ? -1 : rest * x->shape[d];
    out[0].ndim = 2;
    out[0].dtype = x->dtype;
    out[0].shape[0] = x->ndim > 0 ? x->shape[0] : 1;
    out[0].shape[1] = rest;
    return HG_OK;
}

static const hg_attr_spec k_expand_attrs[] = {
    [EX_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,
                 "position of the new size-1 axis, in [-ndim-1, ndim]", NULL},
};
_Static_assert(HG_COUNT(k_expand_attrs) == EX_NATTRS, "k_expand_attrs must match its enum");

static hg_status expand_dims_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    int nd = x->ndim, ax;
    if (nd + 1 > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: input %s already has the maximum of %d dims", op->name,
                        hg_shape_str(s, nd, x->shape), HG_MAX_NDIM);
    if (!norm_axis(a->v[EX_AXIS].i, nd + 1, &ax))
        return hg_error(HG_ERR_VALUE,
                        "%s: axis must be in the range [%d, %d] (%lld provided) "
                        "for input of shape %s",
                        op->name, -nd - 1, nd, (long long)a->v[EX_AXIS].i,
                        hg_shape_str(s, nd, x->shape));
    out[0].ndim = nd + 1;
    out[0].dtype = x->dtype;
    for (int d = 0, k = 0; d <= nd; d++) out[0].shape[d] = d == ax ? 1 : x->shape[k++];
    return HG_OK;
}

static const hg_attr_spec k_squeeze_attrs[] = {
    [SQ_AXIS] = {"axis", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
                 "size-1 axes to remove; None removes all of them", NULL},
};
_Static_assert(HG_COUNT(k_squeeze_attrs) == SQ_NATTRS, "k_squeeze_attrs must match its enum");

static hg_status squeeze_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    bool drop[HG_MAX_NDIM] = {false};
    int nd = x->ndim, m = 0;
    if (a->v[SQ_AXIS].is_none) {
        for (int d = 0; d < nd; d++) drop[d] = x->shape[d] == 1;
    } else {
        const hg_tuple *t = &a->v[SQ_AXIS].t;
        for (int i = 0; i < t->n; i++) {
            int ax;
            if (!norm_axis(t->v[i], nd, &ax))
                return hg_error(HG_ERR_VALUE,
                                "%s: axis %lld is out of bounds for array of "
                                "dimension %d (shape %s)",
                                op->name, (long long)t->v[i], nd, hg_shape_str(s, nd, x->shape));
            if (x->shape[ax] != 1)
                return hg_error(HG_ERR_VALUE,
                                "%s: cannot select an axis to squeeze out which "
                                "has size=%lld not equal to one (axis %lld of shape %s)",
                                op->name, (long long)x->shape[ax], (long long)t->v[i],
                                hg_shape_str(s, nd, x->shape));
            if (drop[ax])
                return hg_error(HG_ERR_VALUE, "%s: duplicate value %lld in axis", op->name,
                                (long long)t->v[i]);
            drop[ax] = true;
        }
    }
    for (int d = 0; d < nd; d++)
        if (!drop[d]) out[0].shape[m++] = x->shape[d];
    if (m == 0) out[0].shape[m++] = 1; /* never 0-d: MXNet keeps (1,) */
    out[0].ndim = m;
    out[0].dtype = x->dtype;
    return HG_OK;
}

/* ---- transpose, SwapAxis ----------------------------------------------------------------- */

static const hg_attr_spec k_transpose_attrs[] = {
    [TR_AXES] = {"axes", HG_ATTR_TUPLE, 0, "()", "target axis order; () reverses the axes", NULL},
};
_Static_assert(HG_COUNT(k_transpose_attrs) == TR_NATTRS, "k_transpose_attrs must match its enum");

/* The permutation of a transpose: out dim i is input dim perm[i]. */
static hg_status transpose_perm(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, int *perm)
{
    char s[HG_SHAPE_STR], t[HG_MAX_TUPLE * 24 + 8];
    const hg_tuple *ax = &a->v[TR_AXES].t;
    int nd = x->ndim;
    bool seen[HG_MAX_NDIM] = {false};
    if (ax->n == 0) {
        for (int d = 0; d < nd; d++) perm[d] = nd - 1 - d;
        return HG_OK;
    }
    if (ax->n != nd) goto bad;
    for (int d = 0; d < nd; d++) {
        if (!norm_axis(ax->v[d], nd, &perm[d]) || seen[perm[d]]) goto bad;
        seen[perm[d]] = true;
    }
    return HG_OK;
bad:
    hg_attr_format(op, 0, a, t, sizeof t);
    return hg_error(HG_ERR_VALUE,
                    "%s: axes=%s is not a permutation of the %d axes of the input "
                    "(shape %s)",
                    op->name, t, nd, hg_shape_str(s, nd, x->shape));
}

static hg_status transpose_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    int perm[HG_MAX_NDIM];
    /* Backwards (MXNet's TransposeShape): unknown input dims come from a known output. */
    if (out[0].ndim >= 0 && in[0].ndim < 0) {
        in[0].ndim = out[0].ndim;
        for (int d = 0; d < in[0].ndim; d++) in[0].shape[d] = -1;
    }
    HG_TRY(transpose_perm(op, a, &in[0], perm));
    if (out[0].ndim == in[0].ndim)
        for (int d = 0; d < in[0].ndim; d++)
            if (in[0].shape[perm[d]] < 0) in[0].shape[perm[d]] = out[0].shape[d];
    out[0].ndim = in[0].ndim;
    out[0].dtype = in[0].dtype;
    for (int d = 0; d < in[0].ndim; d++) out[0].shape[d] = in[0].shape[perm[d]];
    return HG_OK;
}

static void permute_copy(const hg_tensor *x, hg_tensor *y, const int *perm)
{
    int64_t str[HG_MAX_NDIM], istr[HG_MAX_NDIM];
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++) istr[d] = str[perm[d]];
    hg_strided_copy(hg_data(x), hg_data(y), hg_dtype_size(x->dtype), y->ndim, y->shape, istr, 0);
}

static hg_status transpose_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                   int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    int perm[HG_MAX_NDIM];
    hg_meta m = hg_meta_of(in[0]);
    HG_TRY(transpose_perm(op, a, &m, perm));
    permute_copy(in[0], out[0], perm);
    return HG_OK;
}

static const hg_attr_spec k_swap_attrs[] = {
    [SW_DIM1] = {"dim1", HG_ATTR_INT, 0, "0", "the first axis to swap", NULL},
    [SW_DIM2] = {"dim2", HG_ATTR_INT, 0, "0", "the second axis to swap", NULL},
};
_Static_assert(HG_COUNT(k_swap_attrs) == SW_NATTRS, "k_swap_attrs must match its enum");

static hg_status swap_perm(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, int *perm)
{
    char s[HG_SHAPE_STR];
    int nd = x->ndim, d1, d2;
    for (int k = SW_DIM1; k <= SW_DIM2; k++) {
        if (!norm_axis(a->v[k].i, nd, k == SW_DIM2 ? &d2 : &d1))
            return hg_error(HG_ERR_VALUE, "%s: %s=%lld is out of bounds for input of shape %s",
                            op->name, op->attrs[k].name, (long long)a->v[k].i,
                            hg_shape_str(s, nd, x->shape));
    }
    for (int d = 0; d < nd; d++) perm[d] = d == d1 ? d2 : d == d2 ? d1 : d;
    return HG_OK;
}

static hg_status swap_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nin;
    (void)nout;
    int perm[HG_MAX_NDIM];
    HG_TRY(swap_perm(op, a, &in[0], perm));
    out[0].ndim = in[0].ndim;
    out[0].dtype = in[0].dtype;
    for (int d = 0; d < in[0].ndim; d++) out[0].shape[d] = in[0].shape[perm[d]];
    return HG_OK;
}

static hg_status swap_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    int perm[HG_MAX_NDIM];
    hg_meta m = hg_meta_of(in[0]);
    HG_TRY(swap_perm(op, a, &m, perm));
    permute_copy(in[0], out[0], perm);
    return HG_OK;
}

/* ---- tile, repeat, reverse --------------------------------------------------------------- */

static const hg_attr_spec k_tile_attrs[] = {
    [TL_REPS] =
        {"reps", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL,
         "repetitions per axis; the shorter of reps and the input shape is padded with leading 1s",
         NULL},
};
_Static_assert(HG_COUNT(k_tile_attrs) == TL_NATTRS, "k_tile_attrs must match its enum");

static hg_status tile_shape(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR], t[HG_MAX_TUPLE * 24 + 8];
    const hg_meta *x = &in[0];
    const hg_tuple *r = &a->v[TL_REPS].t;
    int nd = x->ndim, on = nd > r->n ? nd : r->n;
    hg_attr_format(op, 0, a, t, sizeof t);
    if (on > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: reps=%s has more than %d entries", op->name, t,
                        HG_MAX_NDIM);
    for (int i = 0; i < r->n; i++)
        if (r->v[i] < 0)
            return hg_error(HG_ERR_VALUE, "%s: reps=%s must hold non-negative integers", op->name,
                            t);
    for (int i = 0; i < on; i++) {
        int xi = i - (on - nd), ri = i - (on - r->n);
        int64_t dim = xi >= 0 ? x->shape[xi] : 1, rep = ri >= 0 ? r->v[ri] : 1;
        if (dim < 0) {
            out[0].shape[i] = -1;
        } else if (__builtin_mul_overflow(dim, rep, &out[0].shape[i])) {
            return hg_error(HG_ERR_VALUE, "%s: tiling shape %s by reps=%s overflows", op->name,
                            hg_shape_str(s, nd, x->shape), t);
        }
    }
    out[0].ndim = on;
    out[0].dtype = x->dtype;
    return HG_OK;
}

/* tile's own shape rule (not _backward_tile's, whose result has the input's shape). */
static hg_status tile_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    HG_TRY(tile_shape(op, a, nin, in, nout, out));
    char s[HG_SHAPE_STR], t[HG_MAX_TUPLE * 24 + 8];
    int on = out[0].ndim;
    hg_attr_format(op, 0, a, t, sizeof t);
    /* Without NumPy shape semantics MXNet reads a 0 dim as unknown, so a zero-size result (a 0
     * in reps or in the input's shape) fails its shape inference. */
    if (!hg_np_shape())
        for (int i = 0; i < on; i++)
            if (out[0].shape[i] == 0)
                return hg_error(HG_ERR_VALUE,
                                "%s: tiling shape %s by reps=%s gives a zero-size result, which "
                                "needs NumPy shape semantics (mx.np_shape(True))",
                                op->name, hg_shape_str(s, in[0].ndim, in[0].shape), t);
    return HG_OK;
}

/* Output dim i is viewed as (rep_i, dim_i) with input strides (0, stride_i). */
static hg_status tile_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    const hg_tuple *r = &a->v[TL_REPS].t;
    int64_t str[HG_MAX_NDIM], shape[SMAX], istr[SMAX];
    int on = out[0]->ndim;
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int i = 0; i < on; i++) {
        int xi = i - (on - x->ndim), ri = i - (on - r->n);
        shape[2 * i] = ri >= 0 ? r->v[ri] : 1;
        istr[2 * i] = 0;
        shape[2 * i + 1] = xi >= 0 ? x->shape[xi] : 1;
        istr[2 * i + 1] = xi >= 0 ? str[xi] : 0;
    }
    hg_strided_copy(hg_data(x), hg_data(out[0]), hg_dtype_size(x->dtype), 2 * on, shape, istr, 0);
    return HG_OK;
}

static const hg_attr_spec k_repeat_attrs[] = {
    [RP_REPEATS] = {"repeats", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "repetitions of each element",
                    NULL},
    [RP_AXIS] = {"axis", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",
                 "axis to repeat along; None repeats the flattened input into a 1-D output", NULL},
};
_Static_assert(HG_COUNT(k_repeat_attrs) == RP_NATTRS, "k_repeat_attrs must match its enum");

static hg_status repeat_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    int64_t rep = a->v[RP_REPEATS].i, size;
    int ax = 0;
    if (rep < 0)
        return hg_error(HG_ERR_VALUE, "%s: repeats cannot be a negative number (got %lld)",
                        op->name, (long long)rep);
    if (!a->v[RP_AXIS].is_none && !norm_axis(a->v[RP_AXIS].i, x->ndim, &ax))
        return hg_error(HG_ERR_VALUE, "%s: axis = %lld out of bounds for input of shape %s",
                        op->name, (long long)a->v[RP_AXIS].i, hg_shape_str(s, x->ndim, x->shape));
    out[0].dtype = x->dtype;
    if (rep == 0) { /* MXNet: an empty 1-D array, whatever the axis */
        out[0].ndim = 1;
        out[0].shape[0] = 0;
        return HG_OK;
    }
    if (a->v[RP_AXIS].is_none) {
        out[0].ndim = 1;
        if (!shape_prod(x->ndim, x->shape, &size) ||
            (size >= 0 && __builtin_mul_overflow(size, rep, &out[0].shape[0])))
            return hg_error(HG_ERR_VALUE, "%s: repeating shape %s %lld times overflows", op->name,
                            hg_shape_str(s, x->ndim, x->shape), (long long)rep);
        if (size < 0) out[0].shape[0] = -1;
        return HG_OK;
    }
    out[0] = *x;
    if (x->shape[ax] >= 0 && __builtin_mul_overflow(x->shape[ax], rep, &out[0].shape[ax]))
        return hg_error(HG_ERR_VALUE, "%s: repeating shape %s %lld times overflows", op->name,
                        hg_shape_str(s, x->ndim, x->shape), (long long)rep);
    return HG_OK;
}

/* The axis is split into (dim, repeats) with input strides (stride, 0). */
static hg_status repeat_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    int64_t rep = a->v[RP_REPEATS].i, str[HG_MAX_NDIM], shape[SMAX], istr[SMAX];
    int m = 0, ax = 0;
    if (a->v[RP_AXIS].is_none) {
        shape[0] = x->size;
        istr[0] = 1;
        shape[1] = rep;
        istr[1] = 0;
        m = 2;
    } else {
        norm_axis(a->v[RP_AXIS].i, x->ndim, &ax);
        hg_contiguous_strides(x->ndim, x->shape, str);
        for (int d = 0; d < x->ndim; d++) {
            shape[m] = x->shape[d];
            istr[m++] = str[d];
            if (d == ax) {
                shape[m] = rep;
                istr[m++] = 0;
            }
        }
    }
    hg_strided_copy(hg_data(x), hg_data(out[0]), hg_dtype_size(x->dtype), m, shape, istr, 0);
    return HG_OK;
}

static const hg_attr_spec k_reverse_attrs[] = {
    [RV_AXIS] = {"axis", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "the axes to reverse", NULL},
};
_Static_assert(HG_COUNT(k_reverse_attrs) == RV_NATTRS, "k_reverse_attrs must match its enum");

/* flip[d]: whether dim d ends up reversed (an axis named twice reverses twice, as in MXNet). */
static hg_status reverse_axes(const hg_op_def *op, const hg_attrs *a, const hg_meta *x, bool *flip)
{
    char s[HG_SHAPE_STR];
    const hg_tuple *t = &a->v[RV_AXIS].t;
    for (int d = 0; d < x->ndim; d++) flip[d] = false;
    for (int i = 0; i < t->n; i++) {
        int ax;
        if (!norm_axis(t->v[i], x->ndim, &ax))
            return hg_error(HG_ERR_VALUE, "%s: axis %lld is out of bounds for input of shape %s",
                            op->name, (long long)t->v[i], hg_shape_str(s, x->ndim, x->shape));
        flip[ax] = !flip[ax];
    }
    return HG_OK;
}

static hg_status reverse_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                               int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    bool flip[HG_MAX_NDIM];
    HG_TRY(reverse_axes(op, a, &in[0], flip));
    out[0] = in[0];
    return HG_OK;
}

static hg_status reverse_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    bool flip[HG_MAX_NDIM];
    int64_t str[HG_MAX_NDIM], base = 0;
    hg_meta m = hg_meta_of(x);
    HG_TRY(reverse_axes(op, a, &m, flip));
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++) {
        if (!flip[d]) continue;
        base += (x->shape[d] - 1) * str[d];
        str[d] = -str[d];
    }
    hg_strided_copy(hg_data(x), hg_data(out[0]), hg_dtype_size(x->dtype), x->ndim, x->shape, str,
                    base);
    return HG_OK;
}

/* ---- broadcast_to, broadcast_axis, broadcast_like ---------------------------------------- */

static const hg_attr_spec k_bto_attrs[] = {
    [BT_SHAPE] = {"shape", HG_ATTR_TUPLE, 0, "()",
                  "target shape of the same rank; 0 keeps the input's dim", NULL},
};
_Static_assert(HG_COUNT(k_bto_attrs) == BT_NATTRS, "k_bto_attrs must match its enum");

static hg_status bto_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR], t[HG_MAX_TUPLE * 24 + 8];
    const hg_meta *x = &in[0];
    const hg_tuple *sh = &a->v[BT_SHAPE].t;
    hg_attr_format(op, 0, a, t, sizeof t);
    if (sh->n != x->ndim)
        return hg_error(HG_ERR_VALUE,
                        "%s: Operand of shape %s cannot be broadcasted to %s "
                        "(the ranks differ)",
                        op->name, hg_shape_str(s, x->ndim, x->shape), t);
    for (int d = 0; d < x->ndim; d++) {
        int64_t want = sh->v[d];
        if (want < 0 || (want != 0 && x->shape[d] != want && x->shape[d] != 1))
            return hg_error(HG_ERR_VALUE, "%s: Array cannot be broadcasted from %s to %s", op->name,
                            hg_shape_str(s, x->ndim, x->shape), t);
        out[0].shape[d] = want == 0 ? x->shape[d] : want;
    }
    out[0].ndim = x->ndim;
    out[0].dtype = x->dtype;
    return HG_OK;
}

static const hg_attr_spec k_baxis_attrs[] = {
    [BA_AXIS] = {"axis", HG_ATTR_TUPLE, 0, "()", "the size-1 axes to broadcast", NULL},
    [BA_SIZE] = {"size", HG_ATTR_TUPLE, 0, "()", "the target size of each axis", NULL},
};
_Static_assert(HG_COUNT(k_baxis_attrs) == BA_NATTRS, "k_baxis_attrs must match its enum");

static hg_status baxis_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    const hg_tuple *ax = &a->v[BA_AXIS].t, *sz = &a->v[BA_SIZE].t;
    if (ax->n != sz->n)
        return hg_error(HG_ERR_VALUE, "%s: axis has %d entries but size has %d", op->name, ax->n,
                        sz->n);
    out[0] = *x;
    for (int i = 0; i < ax->n; i++) {
        int d;
        if (!norm_axis(ax->v[i], x->ndim, &d))
            return hg_error(HG_ERR_VALUE, "%s: Invalid broadcast axis %lld for input of shape %s",
                            op->name, (long long)ax->v[i], hg_shape_str(s, x->ndim, x->shape));
        if (out[0].shape[d] != 1)
            return hg_error(HG_ERR_VALUE,
                            "%s: Broadcasting axis must have size 1, received "
                            "input shape %s (axis %lld)",
                            op->name, hg_shape_str(s, x->ndim, x->shape), (long long)ax->v[i]);
        if (sz->v[i] < 0)
            return hg_error(HG_ERR_VALUE, "%s: size %lld must be non-negative", op->name,
                            (long long)sz->v[i]);
        out[0].shape[d] = sz->v[i];
    }
    return HG_OK;
}

static const hg_attr_spec k_blike_attrs[] = {
    [BL_LHS_AXES] = {"lhs_axes", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
                     "axes of lhs to broadcast (None: all, by rhs's shape)", NULL},
    [BL_RHS_AXES] = {"rhs_axes", HG_ATTR_TUPLE, HG_ATTR_OPTIONAL, "None",
                     "axes of rhs whose sizes lhs_axes take", NULL},
};
_Static_assert(HG_COUNT(k_blike_attrs) == BL_NATTRS, "k_blike_attrs must match its enum");

static hg_status blike_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR], t[HG_SHAPE_STR];
    const hg_meta *l = &in[0], *r = &in[1];
    const hg_attr_value *la = &a->v[BL_LHS_AXES], *ra = &a->v[BL_RHS_AXES];
    hg_shape_str(s, l->ndim, l->shape);
    hg_shape_str(t, r->ndim, r->shape);
    out[0] = *l;
    if (la->is_none != ra->is_none)
        return hg_error(HG_ERR_VALUE, "%s: give both lhs_axes and rhs_axes or neither", op->name);
    if (la->is_none) {
        if (l->ndim != r->ndim)
            return hg_error(HG_ERR_VALUE, "%s: Operand of shape %s cannot be broadcasted to %s",
                            op->name, s, t);
        for (int d = 0; d < l->ndim; d++) {
            if (l->shape[d] != r->shape[d] && l->shape[d] != 1)
                return hg_error(HG_ERR_VALUE, "%s: Array cannot be broadcasted from %s to %s",
                                op->name, s, t);
            out[0].shape[d] = r->shape[d];
        }
        return HG_OK;
    }
    if (la->t.n == 0 || ra->t.n == 0) /* as MXNet: () is not "no axes given" */
        return hg_error(HG_ERR_VALUE, "%s: Empty axes tuple is not allowed", op->name);
    if (la->t.n != ra->t.n)
        return hg_error(HG_ERR_VALUE, "%s: lhs_axes and rhs_axes sizes do not match (%d vs %d)",
                        op->name, la->t.n, ra->t.n);
    for (int i = 0; i < la->t.n; i++) {
        int dl, dr;
        if (!norm_axis(la->t.v[i], l->ndim, &dl))
            return hg_error(HG_ERR_VALUE,
                            "%s: lhs_axes entry %lld is out of bounds for lhs of "
                            "shape %s",
                            op->name, (long long)la->t.v[i], s);
        if (!norm_axis(ra->t.v[i], r->ndim, &dr))
            return hg_error(HG_ERR_VALUE,
                            "%s: rhs_axes entry %lld is out of bounds for rhs of "
                            "shape %s",
                            op->name, (long long)ra->t.v[i], t);
        if (out[0].shape[dl] != 1 && out[0].shape[dl] != r->shape[dr])
            return hg_error(HG_ERR_VALUE,
                            "%s: Broadcasting axis must have size 1, received "
                            "lhs shape %s (axis %d) and rhs shape %s (axis %d)",
                            op->name, s, dl, t, dr);
        out[0].shape[dl] = r->shape[dr];
    }
    return HG_OK;
}

/* ---- diag -------------------------------------------------------------------------------- */

static const hg_attr_spec k_diag_attrs[] = {
    [DG_K] = {"k", HG_ATTR_INT, 0, "0", "the diagonal: > 0 above the main one, < 0 below", NULL},
    [DG_AXIS1] = {"axis1", HG_ATTR_INT, 0, "0", "first axis of the 2-D sub-arrays (N-D input)",
                  NULL},
    [DG_AXIS2] = {"axis2", HG_ATTR_INT, 0, "1", "second axis of the 2-D sub-arrays (N-D input)",
                  NULL},
};
_Static_assert(HG_COUNT(k_diag_attrs) == DG_NATTRS, "k_diag_attrs must match its enum");

static hg_status diag_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    const hg_meta *x = &in[0];
    int64_t k = a->v[DG_K].i;
    int nd = x->ndim, x1, x2;
    hg_shape_str(s, nd, x->shape);
    if (nd == 0)
        return hg_error(HG_ERR_VALUE, "%s: the input must have at least one dim", op->name);
    if (k < INT32_MIN || k > INT32_MAX)
        return hg_error(HG_ERR_VALUE, "%s: k=%lld is out of range", op->name, (long long)k);
    out[0].dtype = x->dtype;
    if (nd == 1) {
        int64_t n = x->shape[0] + (k < 0 ? -k : k);
        out[0].ndim = 2;
        out[0].shape[0] = out[0].shape[1] = n;
        return HG_OK;
    }
    if (!norm_axis(a->v[DG_AXIS1].i, nd, &x1) || !norm_axis(a->v[DG_AXIS2].i, nd, &x2))
        return hg_error(HG_ERR_VALUE,
                        "%s: axis1=%lld / axis2=%lld out of bounds for input of "
                        "shape %s",
                        op->name, (long long)a->v[DG_AXIS1].i, (long long)a->v[DG_AXIS2].i, s);
    if (x1 == x2)
        return hg_error(HG_ERR_VALUE,
                        "%s: axis1 and axis2 cannot refer to the same axis %d "
                        "(input shape %s)",
                        op->name, x1, s);
    int64_t h = x->shape[x1], w = x->shape[x2];
    if (k > 0) w -= k;
    if (k < 0) h += k;
    int64_t len = h < w ? h : w;
    if (len < 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: Diagonal does not exist: k=%lld for input of shape %s "
                        "(axis1=%d, axis2=%d)",
                        op->name, (long long)k, s, x1, x2);
    int m = 0;
    for (int d = 0; d < nd; d++)
        if (d != x1 && d != x2) out[0].shape[m++] = x->shape[d];
    out[0].shape[m++] = len;
    out[0].ndim = m;
    return HG_OK;
}

static hg_status diag_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    int64_t k = a->v[DG_K].i, esz = (int64_t)hg_dtype_size(x->dtype);
    if (x->ndim == 1) { /* a square matrix with x on diagonal k */
        int64_t n = y->shape[0], r0 = k < 0 ? -k : 0, c0 = k > 0 ? k : 0;
        char *yd = hg_data(y);
        const char *xd = hg_data(x);
        memset(yd, 0, (size_t)(y->size * esz));
        for (int64_t i = 0; i < x->shape[0]; i++)
            memcpy(yd + ((i + r0) * n + i + c0) * esz, xd + i * esz, (size_t)esz);
        return HG_OK;
    }
    int x1 = 0, x2 = 1, m = 0;
    int64_t str[HG_MAX_NDIM], istr[HG_MAX_NDIM];
    norm_axis(a->v[DG_AXIS1].i, x->ndim, &x1);
    norm_axis(a->v[DG_AXIS2].i, x->ndim, &x2);
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++)
        if (d != x1 && d != x2) istr[m++] = str[d];
    istr[m++] = str[x1] + str[x2];
    int64_t base = k > 0 ? k * str[x2] : -k * str[x1];
    hg_strided_copy(hg_data(x), hg_data(y), (size_t)esz, y->ndim, y->shape, istr, base);
    return HG_OK;
}

/* ---- gradients ----------------------------------------------------------------------------
 * Every op here is linear, so each backward is the adjoint data movement. Ops that only rename
 * the shape share _backward_Reshape; the others get a _backward_X(ograd, data) op whose output
 * has data's shape (data is read for its shape only). Each _backward_X is linear in ograd too,
 * so its own gradient is X again. */

/* The shared infer of _backward_X(ograd, data): X's rule on data must give ograd's shape; the
 * result has data's shape and ograd's dtype (a float type: the kernels add). */
static hg_status bwd_infer_via(const hg_op_def *op, const hg_attrs *a, hg_meta *in, hg_meta *out,
                               hg_status (*fwd)(const hg_op_def *, const hg_attrs *, int, hg_meta *,
                                                int, hg_meta *))
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    const hg_meta *g = &in[0];
    hg_meta x = in[1], y = {.ndim = -1, .dtype = x.dtype};
    out[0].dtype = g->dtype;
    if (g->dtype != HG_DTYPE_F32 && g->dtype != HG_DTYPE_F64 && g->dtype != HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported (float types only)", op->name,
                        hg_dtype_name(g->dtype));
    if (x.ndim < 0) return HG_OK;
    HG_TRY(fwd(op, a, 1, &x, 1, &y));
    if (g->ndim >= 0 && !hg_shape_equal(g->ndim, g->shape, y.ndim, y.shape))
        return hg_error(HG_ERR_VALUE,
                        "%s: ograd has shape %s but the forward output for data "
                        "of shape %s has shape %s",
                        op->name, hg_shape_str(s0, g->ndim, g->shape),
                        hg_shape_str(s1, x.ndim, x.shape), hg_shape_str(s2, y.ndim, y.shape));
    out[0] = in[1];
    out[0].dtype = g->dtype;
    return HG_OK;
}

/* _backward_Reshape(ograd, data): ograd's bytes under data's shape. */
static hg_status bwd_reshape_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                   int nout, hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    const hg_meta *g = &in[0], *x = &in[1];
    int64_t gn = -1, xn = -1;
    out[0].dtype = g->dtype;
    if (x->ndim < 0) return HG_OK;
    if (g->ndim >= 0 && shape_prod(g->ndim, g->shape, &gn) && shape_prod(x->ndim, x->shape, &xn) &&
        gn >= 0 && xn >= 0 && gn != xn)
        return hg_error(HG_ERR_VALUE,
                        "%s: ograd of shape %s has %lld elements but data of "
                        "shape %s has %lld",
                        op->name, hg_shape_str(s0, g->ndim, g->shape), (long long)gn,
                        hg_shape_str(s1, x->ndim, x->shape), (long long)xn);
    out[0] = *x;
    out[0].dtype = g->dtype;
    return HG_OK;
}

/* Reshape, Flatten, expand_dims, squeeze and _backward_Reshape itself: the gradient of input 0
 * is the incoming gradient under input 0's shape. */
static hg_status reshape_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_backward_Reshape", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL));
    return hg_g_status(g);
}

/* transpose by the inverse permutation (a reversal is its own inverse). */
static hg_status transpose_grad(hg_grad_ctx *g)
{
    const hg_tuple *ax = &hg_g_attrs(g)->v[TR_AXES].t;
    hg_sentry dy = hg_g_ograd(g, 0);
    int n = ax->n, inv[HG_MAX_TUPLE];
    bool ok = true;
    for (int d = 0; d < n; d++) inv[d] = -1;
    for (int d = 0; d < n && ok; d++) {
        int64_t p = ax->v[d] < 0 ? ax->v[d] + n : ax->v[d];
        ok = p >= 0 && p < n && inv[p] < 0;
        if (ok) inv[p] = d;
    }
    if (n == 0 || !ok) /* a bad axes tuple: the forward's infer reports it */
        return hg_ops_adjoint_grad(g, "transpose", false);
    char buf[HG_MAX_TUPLE * 4 + 8];
    size_t len = (size_t)snprintf(buf, sizeof buf, "(");
    for (int d = 0; d < n; d++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, d ? ", %d" : "%d", inv[d]);
    snprintf(buf + len, sizeof buf - len, n == 1 ? ",)" : ")");
    hg_g_set(g, 0, hg_g_op(g, "transpose", HG_GIN(dy), HG_KV("axes", hg_g_fmt(g, "%s", buf))));
    return hg_g_status(g);
}

static hg_status swap_grad(hg_grad_ctx *g) { return hg_ops_adjoint_grad(g, "SwapAxis", false); }
static hg_status reverse_grad(hg_grad_ctx *g) { return hg_ops_adjoint_grad(g, "reverse", false); }
static hg_status tile_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "_backward_tile", true);
}
static hg_status repeat_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "_backward_repeat", true);
}
static hg_status diag_grad(hg_grad_ctx *g)
{
    return hg_ops_adjoint_grad(g, "_backward_diag", true);
}
static hg_status bwd_tile_grad(hg_grad_ctx *g) { return hg_ops_adjoint_grad(g, "tile", false); }
static hg_status bwd_repeat_grad(hg_grad_ctx *g) { return hg_ops_adjoint_grad(g, "repeat", false); }
static hg_status bwd_diag_grad(hg_grad_ctx *g) { return hg_ops_adjoint_grad(g, "diag", false); }

/* broadcast_to / _axis / _like: the incoming gradient summed over the broadcast axes (the ranks
 * are equal, so _sum_to_like's rule applies); broadcast_like's rhs gives only a shape. */
static hg_status broadcast_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_sum_like(g, hg_g_ograd(g, 0), hg_g_in(g, 0)));
    return hg_g_status(g);
}

/* The strided sum, the adjoint of a view with repeats (tile, repeat): x (contiguous, shape
 * xshape) gets x[j] = sum over the reduced index k of g[sum j_d xstr[d] + sum k_d rstr[d]].
 * Each x row sums into a double accumulator, so float16 and long sums lose nothing, and rows
 * split across threads without two threads ever writing one element. */
#define SSUM_CHUNK 256

typedef struct {
    const void *g;
    void *x;
    hg_dtype dt;
    int nx, nr;
    int64_t nred;
    int64_t xshape[SMAX], xstr[SMAX], rshape[SMAX], rstr[SMAX];
} ssum;

#define SSUM_ROWS(NAME, T, LD, ST)                                                              \
    static void NAME(const ssum *s, int64_t b, int64_t e)                                       \
    {                                                                                           \
        const T *g = s->g;                                                                      \
        T *x = s->x;                                                                            \
        int q = s->nx - 1;                                                                      \
        int64_t inner = s->xshape[q], is = s->xstr[q];                                          \
        double acc[SSUM_CHUNK];                                                                 \
        for (int64_t row = b; row < e; row++) {                                                 \
            int64_t base = 0, t = row;                                                          \
            for (int d = q - 1; d >= 0; d--) {                                                  \
                base += (t % s->xshape[d]) * s->xstr[d];                                        \
                t /= s->xshape[d];                                                              \
            }                                                                                   \
            for (int64_t c0 = 0; c0 < inner; c0 += SSUM_CHUNK) {                                \
                int64_t cnt = hg_min64(SSUM_CHUNK, inner - c0), idx[SMAX] = {0}, roff = 0;      \
                for (int64_t i = 0; i < cnt; i++) acc[i] = 0;                                   \
                for (int64_t k = 0; k < s->nred; k++) {                                         \
                    const T *p = g + base + c0 * is + roff;                                     \
                    if (is == 1) {                                                              \
                        for (int64_t i = 0; i < cnt; i++) acc[i] += LD(p[i]);                   \
                    } else {                                                                    \
                        for (int64_t i = 0; i < cnt; i++) acc[i] += LD(p[i * is]);              \
                    }                                                                           \
                    for (int d = s->nr - 1; d >= 0; d--) { /* odometer over the sum */          \
                        roff += s->rstr[d];                                                     \
                        if (++idx[d] < s->rshape[d]) break;                                     \
                        roff -= s->rstr[d] * s->rshape[d];                                      \
                        idx[d] = 0;                                                             \
                    }                                                                           \
                }                                                                               \
                T *y = x + row * inner + c0;                                                    \
                for (int64_t i = 0; i < cnt; i++) y[i] = ST(acc[i]);                            \
            }                                                                                   \
        }                                                                                       \
    }
#define SS_ID(v) (v)
#define SS_F32(v) ((float)(v))
#define SS_F16(v) hg_float_to_half((float)(v))
SSUM_ROWS(ssum_f32, float, SS_ID, SS_F32)
SSUM_ROWS(ssum_f64, double, SS_ID, SS_ID)
SSUM_ROWS(ssum_f16, uint16_t, hg_half_to_float, SS_F16)

static void ssum_range(void *ctx, int64_t b, int64_t e)
{
    const ssum *s = ctx;
    if (s->dt == HG_DTYPE_F64) ssum_f64(s, b, e);
    else if (s->dt == HG_DTYPE_F16) ssum_f16(s, b, e);
    else ssum_f32(s, b, e);
}

/* Runs the sum; s->xshape/xstr/rshape/rstr and nx/nr are filled by the caller. */
static void strided_sum(ssum *s, const hg_tensor *g, hg_tensor *x)
{
    s->g = hg_data(g);
    s->x = hg_data(x);
    s->dt = x->dtype;
    if (s->nx == 0) { /* a 0-d x: one row of one element */
        s->xshape[0] = 1;
        s->xstr[0] = 0;
        s->nx = 1;
    }
    s->nred = 1;
    for (int d = 0; d < s->nr; d++) s->nred *= s->rshape[d];
    int64_t inner = s->xshape[s->nx - 1], rows = inner ? x->size / inner : 0;
    int64_t work = inner * (s->nred ? s->nred : 1), grain = HG_GRAIN_ELEMWISE / (work ? work : 1);
    hg_parallel_for(rows, grain > 0 ? grain : 1, ssum_range, s);
}

static hg_status bwd_tile_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    return bwd_infer_via(op, a, in, out, tile_shape);
}

/* Output dim i of tile is (rep_i, dim_i) with strides (dim_i * S_i, S_i): sum over rep_i. */
static hg_status bwd_tile_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *dy = in[0], *x = in[1];
    const hg_tuple *r = &a->v[TL_REPS].t;
    int on = dy->ndim;
    int64_t gstr[HG_MAX_NDIM];
    ssum s = {0};
    hg_contiguous_strides(on, dy->shape, gstr);
    s.nx = s.nr = on;
    for (int i = 0; i < on; i++) {
        int xi = i - (on - x->ndim), ri = i - (on - r->n);
        int64_t dim = xi >= 0 ? x->shape[xi] : 1;
        s.xshape[i] = dim;
        s.xstr[i] = gstr[i];
        s.rshape[i] = ri >= 0 ? r->v[ri] : 1;
        s.rstr[i] = dim * gstr[i];
    }
    strided_sum(&s, dy, out[0]);
    return HG_OK;
}

static hg_status bwd_repeat_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                  int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    return bwd_infer_via(op, a, in, out, repeat_infer);
}

/* The repeated axis of the output is (dim, repeats) with strides (repeats * S, S). */
static hg_status bwd_repeat_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                    int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *dy = in[0], *x = in[1];
    int64_t rep = a->v[RP_REPEATS].i, gstr[HG_MAX_NDIM];
    ssum s = {0};
    s.nr = 1;
    s.rshape[0] = rep;
    if (a->v[RP_AXIS].is_none || rep == 0) { /* rep 0: an empty sum, whatever the axis */
        s.nx = 1;
        s.xshape[0] = x->size;
        s.xstr[0] = rep;
        s.rstr[0] = 1;
    } else {
        int ax = 0;
        norm_axis(a->v[RP_AXIS].i, x->ndim, &ax);
        hg_contiguous_strides(dy->ndim, dy->shape, gstr);
        s.nx = x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            s.xshape[d] = x->shape[d];
            s.xstr[d] = d == ax ? rep * gstr[d] : gstr[d];
        }
        s.rstr[0] = gstr[ax];
    }
    strided_sum(&s, dy, out[0]);
    return HG_OK;
}

static hg_status bwd_diag_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                int nout, hg_meta *out)
{
    (void)nin;
    (void)nout;
    return bwd_infer_via(op, a, in, out, diag_infer);
}

/* 1-D data: the k-th diagonal of ograd. N-D data: zeros with ograd on the diagonal. */
static hg_status bwd_diag_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    (void)ctx;
    (void)nin;
    (void)nout;
    const hg_tensor *dy = in[0], *x = in[1];
    hg_tensor *dx = out[0];
    int64_t k = a->v[DG_K].i, esz = (int64_t)hg_dtype_size(dx->dtype);
    if (x->ndim == 1) {
        int64_t n = dy->shape[1], base = (k < 0 ? -k * n : k), str = n + 1;
        hg_strided_copy(hg_data(dy), hg_data(dx), (size_t)esz, 1, x->shape, &str, base);
        return HG_OK;
    }
    int x1 = 0, x2 = 1, m = 0, nd = dy->ndim;
    int64_t str[HG_MAX_NDIM], ostr[HG_MAX_NDIM], idx[HG_MAX_NDIM] = {0};
    norm_axis(a->v[DG_AXIS1].i, x->ndim, &x1);
    norm_axis(a->v[DG_AXIS2].i, x->ndim, &x2);
    hg_contiguous_strides(x->ndim, x->shape, str);
    for (int d = 0; d < x->ndim; d++)
        if (d != x1 && d != x2) ostr[m++] = str[d];
    ostr[m++] = str[x1] + str[x2];
    int64_t off = k > 0 ? k * str[x2] : -k * str[x1];
    memset(hg_data(dx), 0, hg_tensor_nbytes(dx));
    const char *src = hg_data(dy);
    char *dst = hg_data(dx);
    for (int64_t i = 0; i < dy->size; i++) { /* ograd in order, scattered with an odometer */
        memcpy(dst + off * esz, src + i * esz, (size_t)esz);
        for (int d = nd - 1; d >= 0; d--) {
            off += ostr[d];
            if (++idx[d] < dy->shape[d]) break;
            off -= ostr[d] * dy->shape[d];
            idx[d] = 0;
        }
    }
    return HG_OK;
}

#define DATA HG_NAMES("data")
#define BWD_IN HG_NAMES("ograd", "data")
#define OP(NAME, ALIASES, DOC, ATTRS, INFER, FWD, FL, GRAD)                                    \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .attrs = ATTRS,         \
     .num_attrs = HG_COUNT(ATTRS), .num_inputs = 1, .infer = INFER, .forward = FWD,             \
     .flags = (FL), .grad = GRAD}
#define OP_NOATTR(NAME, ALIASES, DOC, INFER, FWD, FL, GRAD)                                     \
    {.name = NAME, .aliases = ALIASES, .doc = DOC, .input_names = DATA, .num_inputs = 1,        \
     .infer = INFER, .forward = FWD, .flags = (FL), .grad = GRAD}
/* _backward_X(ograd, data) sharing X's attribute schema. */
#define BWD(NAME, DOC, ATTRS, INFER, FWD, GRAD)                                                 \
    {.name = NAME, .doc = DOC, .input_names = BWD_IN, .attrs = ATTRS,                           \
     .num_attrs = HG_COUNT(ATTRS), .num_inputs = 2, .infer = INFER, .forward = FWD,             \
     .grad = GRAD}

const hg_op_def hg_ops_shape[] = {
    OP("Reshape", HG_NAMES("reshape"),
       "the input's elements under a new shape (MXNet codes 0, -1, -2, -3, -4; reverse)",
       k_reshape_attrs, reshape_infer, copy_forward, HG_OP_INPLACE | HG_OP_VIEW, reshape_grad),
    OP_NOATTR("Flatten", HG_NAMES("flatten"), "reshapes (N, d1, d2, ...) to (N, d1*d2*...)",
              flatten_infer, copy_forward, HG_OP_INPLACE | HG_OP_VIEW, reshape_grad),
    OP("transpose", NULL, "permutes the axes (reverses them by default)", k_transpose_attrs,
       transpose_infer, transpose_forward, 0, transpose_grad),
    OP("expand_dims", NULL, "inserts a size-1 axis at `axis`", k_expand_attrs, expand_dims_infer,
       copy_forward, HG_OP_INPLACE | HG_OP_VIEW, reshape_grad),
    OP("squeeze", NULL, "removes size-1 axes (the result keeps at least one dim)", k_squeeze_attrs,
       squeeze_infer, copy_forward, HG_OP_INPLACE | HG_OP_VIEW, reshape_grad),
    OP("SwapAxis", HG_NAMES("swapaxes"), "interchanges two axes", k_swap_attrs, swap_infer,
       swap_forward, 0, swap_grad),
    OP("tile", NULL, "repeats the whole array reps times along each axis", k_tile_attrs, tile_infer,
       tile_forward, 0, tile_grad),
    OP("repeat", NULL, "repeats each element `repeats` times along axis (or flattened)",
       k_repeat_attrs, repeat_infer, repeat_forward, 0, repeat_grad),
    OP("reverse", HG_NAMES("flip"), "reverses the order of elements along the given axes",
       k_reverse_attrs, reverse_infer, reverse_forward, 0, reverse_grad),
    OP("broadcast_to", NULL, "broadcasts size-1 axes to `shape` (same rank; 0 keeps a dim)",
       k_bto_attrs, bto_infer, broadcast_forward, 0, broadcast_grad),
    OP("broadcast_axis", HG_NAMES("broadcast_axes"), "broadcasts size-1 axes to the given sizes",
       k_baxis_attrs, baxis_infer, broadcast_forward, 0, broadcast_grad),
    {.name = "broadcast_like",
     .doc = "broadcasts lhs to the shape of rhs (or of rhs's axes)",
     .input_names = HG_NAMES("lhs", "rhs"),
     .attrs = k_blike_attrs,
     .num_attrs = HG_COUNT(k_blike_attrs),
     .num_inputs = 2,
     .infer = blike_infer,
     .forward = broadcast_forward,
     .grad = broadcast_grad},
    OP("diag", NULL, "a 2-D matrix from a 1-D diagonal, or the k-th diagonal of an N-D array",
       k_diag_attrs, diag_infer, diag_forward, 0, diag_grad),
    {.name = "_backward_Reshape",
     .doc = "ograd's elements under data's shape (the gradient of "
            "Reshape, Flatten, expand_dims and squeeze)",
     .input_names = BWD_IN,
     .num_inputs = 2,
     .infer = bwd_reshape_infer,
     .forward = copy_forward,
     .flags = HG_OP_INPLACE,
     .grad = reshape_grad},
    BWD("_backward_tile", "the gradient of tile: ograd summed over the repetitions", k_tile_attrs,
        bwd_tile_infer, bwd_tile_forward, bwd_tile_grad),
    BWD("_backward_repeat", "the gradient of repeat: ograd summed over the repeats", k_repeat_attrs,
        bwd_repeat_infer, bwd_repeat_forward, bwd_repeat_grad),
    BWD("_backward_diag", "the gradient of diag: ograd put back on (or taken from) the diagonal",
        k_diag_attrs, bwd_diag_infer, bwd_diag_forward, bwd_diag_grad),
    {0},
};
