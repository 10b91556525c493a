/* GPU kernels of the numeric ops of ops/tensor_num.c: logical_not, cumsum, moments, erfinv,
 * all_finite / multi_all_finite, amp_cast / amp_multicast and the _backward_ ops of their
 * gradients, on every dtype the CPU accepts (_histogram and _linspace have none).
 *
 * As on the CPU, values go through double (tensor_common.h's ld/st are tx_util.h's), so
 * conversions and roundings are the CPU's:
 * - cumsum accumulates in the output dtype, one thread per lane along the axis in the CPU's
 *   order, so its sums are the CPU's bit for bit (integer sums wrap, float16 rounds every step).
 * - moments sums in double in x's address order when one thread per output is enough, and with
 *   one block per output (another order, double sums) for long reductions with few outputs.
 * - erfinv is the CPU's polynomial and Newton steps in double on CUDA's erf and exp.
 * - all_finite writes its flag with a one-thread kernel and clears it from any thread that sees
 *   a non-finite value; with init_output false the output is left alone when all are finite.
 */
#include "kernels/cuda/tensor_common.h"

extern "C" {
#include "ops/tensor_num.h"
}

namespace
{

using namespace hg_tx;

/* ---- element-wise: logical_not, casts ------------------------------------------------------- */

__global__ void logical_not_kernel(const void *x, void *y, int dt, int64_t n)
{
    GRID_LOOP(i, n) st(y, dt, i, ld(x, dt, i) == 0 ? 1.0 : 0.0);
}

GPU_FWD(logical_not_gpu)
{
    STREAM;
    return launch(op->name, s, in[0]->size, logical_not_kernel, (const void *)hg_data(in[0]),
                  hg_data(out[0]), (int)in[0]->dtype, in[0]->size);
}

__global__ void cast_kernel(const void *x, int xdt, void *y, int ydt, int64_t n)
{
    GRID_LOOP(i, n) st(y, ydt, i, ld(x, xdt, i));
}

/* amp_cast, amp_multicast, _backward_amp_cast: output k is input k in output k's dtype. */
GPU_FWD(amp_cast_gpu)
{
    STREAM;
    for (int k = 0; k < nout; k++) {
        const hg_tensor *x = in[k];
        if (x->dtype == out[k]->dtype) {
            HG_TRY(copy_whole(op, s, out[k], x));
            continue;
        }
        HG_TRY(launch(op->name, s, x->size, cast_kernel, (const void *)hg_data(x), (int)x->dtype,
                      hg_data(out[k]), (int)out[k]->dtype, x->size));
    }
    return HG_OK;
}

/* ---- cumsum, _backward_cumsum ----------------------------------------------------------------- */

/* Running sums of src into dst along each of outer * inner lanes of length mid, forwards or
 * reversed; each step reads the previous sum as stored in dst's dtype (tensor_num.c). */
__global__ void cumsum_kernel(const void *src, int sdt, void *dst, int ddt, int64_t mid,
                              int64_t inner, bool reverse, int64_t lanes)
{
    const bool isint = ddt == HG_DTYPE_I32 || ddt == HG_DTYPE_I64 || ddt == HG_DTYPE_I8 ||
                       ddt == HG_DTYPE_U8;
    GRID_LOOP(l, lanes)
    {
        const int64_t o = l / inner, i = l % inner;
        int64_t iacc = 0;
        double facc = 0;
        for (int64_t k = 0; k < mid; k++) {
            const int64_t j = reverse ? mid - 1 - k : k, p = (o * mid + j) * inner + i;
            if (isint) {
                const int64_t v = (int64_t)((uint64_t)iacc + (uint64_t)ldi(src, sdt, p));
                sti(dst, ddt, p, v);
                iacc = rndi(ddt, v);
            } else {
                const double v = facc + ld(src, sdt, p);
                st(dst, ddt, p, v);
                facc = rnd(ddt, v);
            }
        }
    }
}

/* tensor_num.c's cs_dims: lanes along the axis, or the flattened array (axis None). */
void cs_dims(const hg_attrs *a, const hg_tensor *x, int64_t *outer, int64_t *mid, int64_t *inner)
{
    *outer = *mid = *inner = 1;
    if (a->v[CS_AXIS].is_none) {
        *mid = x->size;
        return;
    }
    const int axis = (int)(a->v[CS_AXIS].i < 0 ? a->v[CS_AXIS].i + x->ndim : a->v[CS_AXIS].i);
    for (int d = 0; d < x->ndim; d++) {
        if (d < axis) *outer *= x->shape[d];
        else if (d > axis) *inner *= x->shape[d];
    }
    *mid = x->shape[axis];
}

GPU_FWD(cumsum_gpu)
{
    STREAM;
    int64_t outer, mid, inner;
    cs_dims(a, in[0], &outer, &mid, &inner);
    const int64_t lanes = outer * inner;
    return launch(op->name, s, lanes, cumsum_kernel, (const void *)hg_data(in[0]),
                  (int)in[0]->dtype, hg_data(out[0]), (int)out[0]->dtype, mid, inner, false, lanes);
}

/* _backward_cumsum(ograd, data): the reversed running sum of ograd in data's shape and dtype. */
GPU_FWD(bwd_cumsum_gpu)
{
    STREAM;
    int64_t outer, mid, inner;
    cs_dims(a, in[1], &outer, &mid, &inner);
    const int64_t lanes = outer * inner;
    return launch(op->name, s, lanes, cumsum_kernel, (const void *)hg_data(in[0]),
                  (int)in[0]->dtype, hg_data(out[0]), (int)out[0]->dtype, mid, inner, true, lanes);
}

/* ---- moments, _backward_moments -------------------------------------------------------------- */

/* red[d]: whether moments reduces dim d (infer checked the axes: in range, not repeated). */
void mo_mask(const hg_attrs *a, const hg_tensor *x, bool *red)
{
    const hg_tuple *t = &a->v[MO_AXES].t;
    for (int d = 0; d < x->ndim; d++) red[d] = false;
    for (int i = 0; i < t->n; i++) red[t->v[i] < 0 ? t->v[i] + x->ndim : t->v[i]] = true;
}

/* Sums without fused multiply-adds, as the CPU rounds them. */
__device__ __forceinline__ double sq_add(double acc, double d)
{
    return __dadd_rn(acc, __dmul_rn(d, d));
}

/* One thread per output: tensor_num.c's loops (sums in x's address order, then the mean, then
 * the squared deviations from it). */
__global__ void moments_serial(const void *x, int dt, void *mean, void *var, int odt, red_plan p,
                               double cnt, int64_t nout)
{
    GRID_LOOP(o, nout)
    {
        const int64_t base = plan_kept(p, o);
        double acc = 0;
        for (int64_t r = 0; r < p.nred; r++) acc += ld(x, dt, base + plan_red(p, r));
        const double mu = acc / cnt;
        double sq = 0;
        for (int64_t r = 0; r < p.nred; r++) sq = sq_add(sq, ld(x, dt, base + plan_red(p, r)) - mu);
        st(mean, odt, o, mu);
        st(var, odt, o, sq / cnt);
    }
}

__global__ void moments_block(const void *x, int dt, void *mean, void *var, int odt, red_plan p,
                              double cnt, int64_t nout)
{
    __shared__ double sh[HG_CUDA_THREADS];
    for (int64_t o = blockIdx.x; o < nout; o += gridDim.x) {
        const int64_t base = plan_kept(p, o);
        double acc = 0;
        for (int64_t r = threadIdx.x; r < p.nred; r += blockDim.x)
            acc += ld(x, dt, base + plan_red(p, r));
        const double mu = block_sum(acc, sh) / cnt;
        double sq = 0;
        for (int64_t r = threadIdx.x; r < p.nred; r += blockDim.x)
            sq = sq_add(sq, ld(x, dt, base + plan_red(p, r)) - mu);
        sq = block_sum(sq, sh);
        if (threadIdx.x == 0) {
            st(mean, odt, o, mu);
            st(var, odt, o, sq / cnt);
        }
    }
}

GPU_FWD(moments_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    bool red[HG_MAX_NDIM];
    mo_mask(a, x, red);
    const red_plan p = make_red_plan(x, red);
    int64_t no = 1; /* outputs: the kept dims' product, as tensor_num.c's mo_map counts them */
    for (int d = 0; d < x->ndim; d++)
        if (!red[d]) no *= x->shape[d];
    const double cnt = no ? (double)x->size / (double)no : 0;
    const void *xp = hg_data(x);
    void *mp = hg_data(out[0]), *vp = hg_data(out[1]);
    const int dt = (int)x->dtype, odt = (int)out[0]->dtype;
    if (!use_block_reduce(p.nred, no))
        return launch(op->name, s, no, moments_serial, xp, dt, mp, vp, odt, p, cnt, no);
    moments_block<<<block_grid(no), HG_CUDA_THREADS, 0, s>>>(xp, dt, mp, vp, odt, p, cnt, no);
    return hg_cuda_launched(op->name);
}

/* x's dims with the stride of each in the reduced output (0 for a reduced dim). */
struct out_map {
    int nd;
    int64_t shape[HG_MAX_NDIM], ostr[HG_MAX_NDIM];
};

struct bm_args {
    const void *dm, *dv, *x, *mu;
    int dmt, dvt, xt, mut;
};

/* (dmean + 2 dvar (x - mean)) / N, in the CPU's order of operations. */
__global__ void bwd_moments_kernel(bm_args g, void *y, int ydt, out_map m, double cnt, int64_t n)
{
    GRID_LOOP(i, n)
    {
        int64_t rem = i, j = 0;
        for (int d = m.nd - 1; d >= 0; d--) {
            j += (rem % m.shape[d]) * m.ostr[d];
            rem /= m.shape[d];
        }
        const double dm = ld(g.dm, g.dmt, j), dv = ld(g.dv, g.dvt, j), mu = ld(g.mu, g.mut, j);
        const double xv = ld(g.x, g.xt, i);
        st(y, ydt, i, __dadd_rn(dm, __dmul_rn(2 * dv, xv - mu)) / cnt);
    }
}

/* _backward_moments(dmean, dvar, data, mean). */
GPU_FWD(bwd_moments_gpu)
{
    STREAM;
    const hg_tensor *x = in[2];
    bool red[HG_MAX_NDIM];
    mo_mask(a, x, red);
    out_map m{};
    int64_t s_out = 1;
    m.nd = x->ndim;
    for (int d = x->ndim - 1; d >= 0; d--) {
        m.shape[d] = x->shape[d];
        m.ostr[d] = red[d] ? 0 : s_out;
        if (!red[d]) s_out *= x->shape[d];
    }
    const double cnt = s_out ? (double)x->size / (double)s_out : 1;
    const bm_args g = {hg_data(in[0]),    hg_data(in[1]),    hg_data(x),    hg_data(in[3]),
                       (int)in[0]->dtype, (int)in[1]->dtype, (int)x->dtype, (int)in[3]->dtype};
    return launch(op->name, s, x->size, bwd_moments_kernel, g, hg_data(out[0]), (int)out[0]->dtype,
                  m, cnt, x->size);
}

/* ---- erfinv, _backward_erfinv ------------------------------------------------------------------ */

__global__ void erfinv_kernel(const void *x, void *y, int dt, int64_t n)
{
    GRID_LOOP(i, n) st(y, dt, i, hg_erfinv(ld(x, dt, i)));
}

/* ograd * sqrt(pi) / 2 * exp(erfinv(x)^2) */
__global__ void bwd_erfinv_kernel(const void *g, int gdt, const void *x, int xdt, void *y, int ydt,
                                  int64_t n)
{
    GRID_LOOP(i, n)
    {
        const double r = hg_erfinv(ld(x, xdt, i));
        st(y, ydt, i, ld(g, gdt, i) * 0.88622692545275801 * exp(r * r));
    }
}

GPU_FWD(erfinv_gpu)
{
    STREAM;
    return launch(op->name, s, in[0]->size, erfinv_kernel, (const void *)hg_data(in[0]),
                  hg_data(out[0]), (int)in[0]->dtype, in[0]->size);
}

GPU_FWD(bwd_erfinv_gpu)
{
    STREAM;
    return launch(op->name, s, in[0]->size, bwd_erfinv_kernel, (const void *)hg_data(in[0]),
                  (int)in[0]->dtype, (const void *)hg_data(in[1]), (int)in[1]->dtype,
                  hg_data(out[0]), (int)out[0]->dtype, in[0]->size);
}

/* ---- all_finite, multi_all_finite -------------------------------------------------------------- */

__global__ void set_flag_kernel(float *o, float v) { *o = v; }

template <typename T> __device__ __forceinline__ bool finite_of(T v) { return isfinite(v); }
template <> __device__ __forceinline__ bool finite_of<uint16_t>(uint16_t h)
{
    return (h & 0x7c00) != 0x7c00; /* float16: exponent all ones is inf or NaN */
}

template <typename T> __global__ void clear_if_not_finite(const T *x, int64_t n, float *o)
{
    GRID_LOOP(i, n)
    {
        if (!finite_of(x[i])) *o = 0.0f; /* every writer writes the same value */
    }
}

GPU_FWD(all_finite_gpu)
{
    STREAM;
    const bool init = nin == 1 && op->num_attrs == AF_NATTRS ? a->v[AF_INIT].b : a->v[MAF_INIT].b;
    float *o = (float *)hg_data(out[0]);
    if (init) {
        set_flag_kernel<<<1, 1, 0, s>>>(o, 1.0f);
        HG_TRY(hg_cuda_launched(op->name));
    }
    for (int i = 0; i < nin; i++) {
        const hg_tensor *x = in[i];
        const int64_t n = x->size;
        switch (x->dtype) { /* other dtypes hold only finite values */
        case HG_DTYPE_F32:
            HG_TRY(launch(op->name, s, n, clear_if_not_finite<float>, (const float *)hg_data(x), n,
                          o));
            break;
        case HG_DTYPE_F64:
            HG_TRY(launch(op->name, s, n, clear_if_not_finite<double>, (const double *)hg_data(x),
                          n, o));
            break;
        case HG_DTYPE_F16:
            HG_TRY(launch(op->name, s, n, clear_if_not_finite<uint16_t>,
                          (const uint16_t *)hg_data(x), n, o));
            break;
        default: break;
        }
    }
    return HG_OK;
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_tensor_num[] = {
    {"logical_not", logical_not_gpu},
    {"cumsum", cumsum_gpu},
    {"_backward_cumsum", bwd_cumsum_gpu},
    {"moments", moments_gpu},
    {"_backward_moments", bwd_moments_gpu},
    {"erfinv", erfinv_gpu},
    {"_backward_erfinv", bwd_erfinv_gpu},
    {"all_finite", all_finite_gpu},
    {"multi_all_finite", all_finite_gpu},
    {"amp_cast", amp_cast_gpu},
    {"amp_multicast", amp_cast_gpu},
    {"_backward_amp_cast", amp_cast_gpu},
    {NULL, NULL},
};
