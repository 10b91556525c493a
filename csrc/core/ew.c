/* The generic element-wise driver: unary maps and NumPy-broadcasting binary ops over an op's
 * per-dtype tile functions, split across the thread pool. float16 runs through the float32 tile
 * function on converted tiles. Also the shared shape rules and helpers for shape rules. */
#include <string.h>

#include "core/op.h"
#include "core/parallel.h"

#define HALF_TILE 512

typedef struct {
    hg_ew_fn fn;
    const hg_attrs *a;
    const char *pa, *pb;
    char *po;
    size_t esz;
    int nd;                     /* collapsed outer dims (excluding the inner one) */
    int64_t shape[HG_MAX_NDIM]; /* outer dims */
    int64_t sa[HG_MAX_NDIM], sb[HG_MAX_NDIM];
    int64_t inner, isa, isb;
    int half;
} ew_job;

static void half_tile(const ew_job *j, int64_t n, const void *a, int64_t sa, const void *b,
                      int64_t sb, void *o)
{
    float ta[HALF_TILE], tb[HALF_TILE], to[HALF_TILE];
    const uint16_t *ha = a, *hb = b;
    uint16_t *ho = o;
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        for (int64_t k = 0; k < (sa ? m : 1); k++) ta[k] = hg_half_to_float(ha[(i + k) * sa]);
        if (hb)
            for (int64_t k = 0; k < (sb ? m : 1); k++) tb[k] = hg_half_to_float(hb[(i + k) * sb]);
        j->fn(m, ta, sa, hb ? tb : NULL, sb, to, j->a);
        for (int64_t k = 0; k < m; k++) ho[i + k] = hg_float_to_half(to[k]);
    }
}

static void ew_range(void *ctx, int64_t begin, int64_t end)
{
    const ew_job *j = ctx;
    while (begin < end) {
        int64_t row = begin / j->inner, col = begin % j->inner;
        int64_t cnt = j->inner - col < end - begin ? j->inner - col : end - begin;
        int64_t oa = col * j->isa, ob = col * j->isb, r = row;
        for (int d = j->nd - 1; d >= 0; d--) {
            int64_t idx = r % j->shape[d];
            r /= j->shape[d];
            oa += idx * j->sa[d];
            ob += idx * j->sb[d];
        }
        const char *a = j->pa + oa * (int64_t)j->esz;
        const char *b = j->pb ? j->pb + ob * (int64_t)j->esz : NULL;
        char *o = j->po + begin * (int64_t)j->esz;
        if (j->half) half_tile(j, cnt, a, j->isa, b, j->isb, o);
        else j->fn(cnt, a, j->isa, b, j->isb, o, j->a);
        begin += cnt;
    }
}

hg_status hg_ew_forward(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in,
                        hg_tensor *out)
{
    hg_dtype dt = in[0]->dtype;
    ew_job j;
    memset(&j, 0, sizeof j);
    j.fn = op->ew[dt];
    if (!j.fn && dt == HG_DTYPE_F16 && op->ew[HG_DTYPE_F32]) {
        j.fn = op->ew[HG_DTYPE_F32];
        j.half = 1;
    }
    if (!j.fn)
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name, hg_dtype_name(dt));
    j.a = a;
    j.esz = hg_dtype_size(dt);
    j.pa = hg_data(in[0]);
    j.pb = nin > 1 ? hg_data(in[1]) : NULL;
    j.po = hg_data(out);
    if (out->size == 0) return HG_OK;

    /* Strides of each input against the output shape (0 where broadcast), right-aligned. */
    int nd = out->ndim;
    int64_t sa[HG_MAX_NDIM], sb[HG_MAX_NDIM], shp[HG_MAX_NDIM];
    for (int k = 0; k < 2 && k < nin; k++) {
        const hg_tensor *t = in[k];
        int64_t *s = k ? sb : sa, st = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int td = d - (nd - t->ndim);
            int64_t dim = td >= 0 ? t->shape[td] : 1;
            s[d] = (dim == 1 && out->shape[d] != 1) ? 0 : st;
            st *= dim;
        }
    }
    if (nin < 2)
        for (int d = 0; d < nd; d++) sb[d] = 0;
    /* Collapse dims: merge d into d+1 when both inputs are contiguous across them. */
    int m = 0;
    int64_t csa[HG_MAX_NDIM], csb[HG_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
        if (out->shape[d] == 1) continue;
        if (m > 0 && csa[m - 1] == sa[d] * out->shape[d] && csb[m - 1] == sb[d] * out->shape[d]) {
            shp[m - 1] *= out->shape[d];
            csa[m - 1] = sa[d];
            csb[m - 1] = sb[d];
            continue;
        }
        shp[m] = out->shape[d];
        csa[m] = sa[d];
        csb[m] = sb[d];
        m++;
    }
    if (m == 0) { /* all ones: a single element */
        shp[0] = 1;
        csa[0] = csb[0] = 1;
        m = 1;
    }
    j.inner = shp[m - 1];
    j.isa = csa[m - 1] ? 1 : 0;
    j.isb = nin > 1 && csb[m - 1] ? 1 : 0;
    j.nd = m - 1;
    for (int d = 0; d < m - 1; d++) {
        j.shape[d] = shp[d];
        j.sa[d] = csa[d];
        j.sb[d] = csb[d];
    }
    hg_parallel_for(out->size, HG_GRAIN_ELEMWISE, ew_range, &j);
    return HG_OK;
}

hg_status hg_infer_broadcast(const hg_op_def *op, const hg_attrs *attrs, int nin, hg_meta *in,
                             int nout, hg_meta *outs)
{
    char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
    const char *opname = op->name;
    const hg_meta *x = &in[0], *y = &in[1];
    hg_meta *out = &outs[0];
    (void)attrs;
    (void)nin;
    (void)nout;
    if (x->ndim < 0 || y->ndim < 0) { /* graph inference: not decidable yet */
        out->ndim = -1;
        out->dtype = x->ndim < 0 ? y->dtype : x->dtype;
        return HG_OK;
    }
    if (x->dtype != y->dtype)
        return hg_error(HG_ERR_TYPE, "%s: input dtypes differ: %s and %s", opname,
                        hg_dtype_name(x->dtype), hg_dtype_name(y->dtype));
    int nd = x->ndim > y->ndim ? x->ndim : y->ndim;
    for (int d = 0; d < nd; d++) {
        int dx = d - (nd - x->ndim), dy = d - (nd - y->ndim);
        int64_t sx = dx >= 0 ? x->shape[dx] : 1, sy = dy >= 0 ? y->shape[dy] : 1;
        if (sx != sy && sx != 1 && sy != 1)
            return hg_error(HG_ERR_VALUE,
                            "%s: operands could not be broadcast together with "
                            "shapes %s %s",
                            opname, hg_shape_str(a, x->ndim, x->shape),
                            hg_shape_str(b, y->ndim, y->shape));
        out->shape[d] = sx == 1 ? sy : sx;
    }
    out->ndim = nd;
    out->dtype = x->dtype;
    return HG_OK;
}

hg_status hg_infer_same(const hg_op_def *op, const hg_attrs *attrs, int nin, hg_meta *in, int nout,
                        hg_meta *out)
{
    char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
    const char *opname = op->name;
    (void)attrs;
    (void)nout;
    for (int i = 0; i < nin; i++) {
        if (in[i].ndim < 0) { /* graph inference: a known input decides, else unknown */
            int k = 0;
            while (k < nin && in[k].ndim < 0) k++;
            out[0] = k < nin ? in[k] : in[0];
            return HG_OK;
        }
    }
    for (int i = 1; i < nin; i++) {
        if (!hg_shape_equal(in[0].ndim, in[0].shape, in[i].ndim, in[i].shape))
            return hg_error(HG_ERR_VALUE,
                            "%s: input shapes must be equal, got %s and %s (use the "
                            "broadcast_* ops to broadcast)",
                            opname, hg_shape_str(a, in[0].ndim, in[0].shape),
                            hg_shape_str(b, in[i].ndim, in[i].shape));
        if (in[i].dtype != in[0].dtype)
            return hg_error(HG_ERR_TYPE, "%s: input dtypes differ: %s and %s", opname,
                            hg_dtype_name(in[0].dtype), hg_dtype_name(in[i].dtype));
    }
    out[0] = in[0];
    return HG_OK;
}

bool hg_meta_merge(hg_meta *m, hg_dtype dt, int nd, const int64_t *want)
{
    if (m->ndim < 0) {
        m->ndim = nd;
        m->dtype = dt;
        memcpy(m->shape, want, sizeof(int64_t) * (size_t)nd);
        return true;
    }
    if (m->ndim != nd) return false;
    for (int i = 0; i < nd; i++)
        if (m->shape[i] >= 0 && want[i] >= 0 && m->shape[i] != want[i]) return false;
    for (int i = 0; i < nd; i++)
        if (m->shape[i] < 0) m->shape[i] = want[i];
    return true;
}
