/* hg_gpu_kernels_detect: GPU kernels of the region and box ops: ROIPooling (ops/spatial.c),
 * ROIAlign, RROIAlign, PSROIPooling (ops/contrib_roi.c), box_iou, box_encode, box_decode
 * (ops/contrib_bbox.c) and MultiBoxPrior (ops/contrib_multibox.c), with the gradients the
 * registry has; then the ops that match and select by sorted score: box_nms (and its
 * gradient), bipartite_matching and MultiBoxTarget. The deformable convolutions are in
 * spatial.cu.
 *
 * Each kernel follows its CPU op step by step: ROIPooling in the data's type (float16 in
 * float32), the contrib ops' positions in the data's type and their sums in double, the box
 * ops in double, MultiBoxPrior in float32; products go through det_common.h's mul() so nvcc
 * fuses no FMA the CPU does not. One thread computes one output element with the CPU's loop
 * order, so forwards agree bit for bit (libm's cos, exp and log aside, which CUDA gives within
 * an ulp). Gradients scatter with atomics (double for the contrib ops, as their CPU sums are):
 * their order of addition differs from the CPU's.
 *
 * The CPU fails on a region whose batch index is outside the data (ROIAlign, RROIAlign,
 * PSROIPooling), on an aligned ROIAlign box without area, and on a box_encode match outside
 * refs; the GPU cannot check without waiting for the data, so such a region's outputs are
 * zeros (no gradient) and such a sample's targets are zeros.
 *
 * The selecting ops sort each batch with a merge sort in the CPU's strict order (score, then
 * index: MXNet's stable sorts), so they keep and order exactly what the CPU does. box_nms runs
 * one block per batch: the greedy suppression walks the sorted candidates in order, each step
 * testing the later ones in parallel. bipartite_matching's greedy walk is one thread per batch.
 * MultiBoxTarget runs one block per batch, its best-pair search a block reduction that picks
 * the CPU's pair (largest IoU, then first anchor, then first label); its mining sorts the
 * candidates' background probabilities (CUDA's expf may differ from libm's in the last bit, so
 * two candidates within an ulp could swap). Inputs the CPU rejects (a padding label row that
 * is not -1 throughout, fewer mining candidates than wanted) are taken as far as they go.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/det_common.h"
#include "kernels/cuda/kernel_util.h"
#include "kernels/cuda/tensor_common.h"

extern "C" {
#include "ops/detect.h"
}

using hg_det::accum;
using hg_det::add;
using hg_det::align64;
using hg_det::carve;
using hg_det::ldv;
using hg_det::mul;
using hg_det::piece;
using hg_det::scratch;
using hg_det::stv;

namespace
{

/* ---- ROIPooling ------------------------------------------------------------------------- */

struct rp_dims {
    int64_t N, C, H, W, PH, PW;
};

/* Output (r, c, ph, pw): the max of its bin (first of equals), and the flat index of it. */
template <typename S>
__global__ void rp_fwd_kernel(const S *x, const S *rois, S *y, int64_t *arg, rp_dims d,
                              typename hg_det::acc_of<S>::type sc, int64_t total)
{
    typedef typename hg_det::acc_of<S>::type T;
    GRID_LOOP(e, total)
    {
        const int64_t pw = e % d.PW, ph = (e / d.PW) % d.PH, c = (e / (d.PW * d.PH)) % d.C;
        const int64_t r = e / (d.PW * d.PH * d.C);
        const S *b = rois + 5 * r;
        const int64_t sw = (int64_t)round((double)mul(ldv(b, 1), sc));
        const int64_t sh = (int64_t)round((double)mul(ldv(b, 2), sc));
        const int64_t ew = (int64_t)round((double)mul(ldv(b, 3), sc));
        const int64_t eh = (int64_t)round((double)mul(ldv(b, 4), sc));
        const int64_t bi = (int64_t)ldv(b, 0);
        const bool bad = bi < 0 || bi >= d.N;
        const int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1,
                      rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;
        const T bh = (T)rh / (T)d.PH, bw = (T)rw / (T)d.PW;
        int64_t hs = (int64_t)floor((double)mul((T)ph, bh)) + sh;
        int64_t he = (int64_t)ceil((double)mul((T)(ph + 1), bh)) + sh;
        int64_t ws = (int64_t)floor((double)mul((T)pw, bw)) + sw;
        int64_t we = (int64_t)ceil((double)mul((T)(pw + 1), bw)) + sw;
        hs = hs < 0 ? 0 : (hs > d.H ? d.H : hs);
        he = he < 0 ? 0 : (he > d.H ? d.H : he);
        ws = ws < 0 ? 0 : (ws > d.W ? d.W : ws);
        we = we < 0 ? 0 : (we > d.W ? d.W : we);
        if (bad || he <= hs || we <= ws) {
            stv(y, e, (T)0);
            arg[e] = -1;
            continue;
        }
        const int64_t base = (bi * d.C + c) * d.H * d.W;
        T m = (T)-FLT_MAX;
        int64_t mi = -1;
        for (int64_t h = hs; h < he; h++)
            for (int64_t w = ws; w < we; w++) {
                const T v = ldv(x, base + h * d.W + w);
                if (v > m) {
                    m = v;
                    mi = base + h * d.W + w;
                }
            }
        stv(y, e, m);
        arg[e] = mi;
    }
}

GPU_FWD(rp_gpu)
{
    STREAM;
    const rp_dims d = {in[0]->shape[0], in[0]->shape[1],        in[0]->shape[2],
                       in[0]->shape[3], a->v[RP_POOLED].t.v[0], a->v[RP_POOLED].t.v[1]};
    const int64_t total = out[0]->size;
    if (total == 0) return HG_OK;
    const double sc = (float)a->v[RP_SCALE].f; /* MXNet's spatial_scale is a float */
    HG_DET_DISPATCH(op, in[0]->dtype,
                    rp_fwd_kernel<S> LAUNCH(total)((const S *)hg_data(in[0]),
                                                   (const S *)hg_data(in[1]), (S *)hg_data(out[0]),
                                                   (int64_t *)hg_data(out[1]), d,
                                                   (typename hg_det::acc_of<S>::type)sc, total));
    return hg_cuda_launched(op->name);
}

/* dx[arg[i]] += dy[i] for the indices inside dx (the CPU fails on one past it). */
template <typename S, typename A>
__global__ void rp_bwd_kernel(const S *dy, const int64_t *arg, A *dx, int64_t n, int64_t nx)
{
    GRID_LOOP(i, n)
    {
        const int64_t k = arg[i];
        if (k >= 0 && k < nx) hg_det::atomic_add(dx + k, (A)ldv(dy, i));
    }
}

template <typename S>
hg_status rp_bw_typed(const hg_op_def *op, int dev, cudaStream_t s, hg_tensor *const *in,
                      hg_tensor *const *out)
{
    typedef typename hg_det::acc_of<S>::type A;
    accum<A> acc;
    HG_TRY((hg_det::accum_begin<A, S>(op, dev, s, out[0], &acc)));
    hg_status st = HG_OK;
    if (in[0]->size > 0) {
        rp_bwd_kernel<S, A> LAUNCH(in[0]->size)((const S *)hg_data(in[0]),
                                                (const int64_t *)hg_data(in[1]), acc.p, in[0]->size,
                                                out[0]->size);
        st = hg_cuda_launched(op->name);
    }
    return hg_det::accum_end<A, S>(op, dev, s, out[0], &acc, st);
}

/* _backward_ROIPooling(ograd, maxidx, data) -> the data's gradient. */
GPU_FWD(rp_bw_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[0]->dtype, return rp_bw_typed<S>(op, ctx->device_id, s, in, out));
    return HG_OK;
}

/* ---- ROIAlign and RROIAlign --------------------------------------------------------------- */

/* contrib_roi.c's ra_geom. */
struct ra_geom {
    int64_t n, c, h, w, ph, pw, cout;
    int sample;
    bool ps, aligned;
    double scale;
};

/* The four taps of sample (yy, xx) of an h-by-w map, as contrib_roi.c clamps them; false for
 * a sample beyond [-1, size], which contributes nothing. */
template <typename T>
__device__ __forceinline__ bool ra_taps(T yy, T xx, int64_t h, int64_t w, int64_t *pos, T *wt)
{
    if (yy < -1.0 || yy > (T)h || xx < -1.0 || xx > (T)w) return false;
    T yv = yy <= 0 ? (T)0 : yy, xv = xx <= 0 ? (T)0 : xx;
    int64_t y0 = (int64_t)(int)yv, x0 = (int64_t)(int)xv, y1, x1;
    if (y0 >= h - 1) y1 = y0 = h - 1, yv = (T)y0;
    else y1 = y0 + 1;
    if (x0 >= w - 1) x1 = x0 = w - 1, xv = (T)x0;
    else x1 = x0 + 1;
    const T ly = yv - (T)y0, lx = xv - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;
    pos[0] = y0 * w + x0, pos[1] = y0 * w + x1, pos[2] = y1 * w + x0, pos[3] = y1 * w + x1;
    wt[0] = mul(hy, hx), wt[1] = mul(hy, lx), wt[2] = mul(ly, hx), wt[3] = mul(ly, lx);
    return true;
}

/* The sample grid of one bin: rows gh, columns gw, and the count. */
template <typename T> __device__ __forceinline__ int ra_grid(int sample, T size, int64_t pooled)
{
    return sample > 0 ? sample : (int)ceil((double)(size / (T)pooled));
}

/* The position of sample k of bin i: start + i * bin + (k + .5) * bin / grid. */
template <typename T>
__device__ __forceinline__ T ra_pos(T start, int64_t i, T bin, int k, int grid)
{
    return add(add(start, mul((T)i, bin)), mul((T)(k + .5f), bin) / (T)grid);
}

/* ROIAlign output element e = (r, c, i, j): forward (dy == NULL) sums its samples in double
 * into y[e]; backward adds dy[e]'s share of each sample into dx. */
template <typename S>
__global__ void ra_kernel(ra_geom g, const S *rois, const S *x, S *y, const S *dy, double *dx,
                          int64_t total)
{
    typedef typename hg_det::acc_of<S>::type T;
    GRID_LOOP(e, total)
    {
        const int64_t j = e % g.pw, i = (e / g.pw) % g.ph, c = (e / (g.pw * g.ph)) % g.cout;
        const int64_t r = e / (g.pw * g.ph * g.cout);
        double roi[5];
        for (int k = 0; k < 5; k++) roi[k] = (double)ldv(rois, 5 * r + k);
        double acc = 0;
        const T off = g.aligned ? (T)0.5 : (T)0, sc = (T)g.scale;
        const T sw = mul((T)roi[1], sc) - off, sh = mul((T)roi[2], sc) - off;
        T rw = (mul((T)roi[3], sc) - off) - sw, rh = (mul((T)roi[4], sc) - off) - sh;
        /* padding (index <= -1), and what the CPU rejects: skipped */
        bool skip = roi[0] <= -1 || !(roi[0] < (double)g.n) || (g.aligned && !(rw > 0 && rh > 0));
        if (!g.aligned) {
            rw = rw > (T)1 ? rw : (T)1;
            rh = rh > (T)1 ? rh : (T)1;
        }
        const T bh = rh / (T)g.ph, bw = rw / (T)g.pw;
        const int gh = ra_grid<T>(g.sample, rh, g.ph), gw = ra_grid<T>(g.sample, rw, g.pw);
        const T count = (T)(gh * gw);
        const int64_t b = skip ? 0 : (int64_t)roi[0], hw = g.h * g.w;
        const int64_t cu = g.ps ? (c * g.ph + i) * g.pw + j : c;
        const int64_t cin = g.ps ? g.cout * g.ph * g.pw : g.cout;
        const int64_t base = (b * cin + cu) * hw;
        const double d = dy && !skip ? (double)ldv(dy, e) : 0;
        for (int iy = 0; iy < gh && !skip; iy++) {
            const T yy = ra_pos(sh, i, bh, iy, gh);
            for (int ix = 0; ix < gw; ix++) {
                const T xx = ra_pos(sw, j, bw, ix, gw);
                int64_t pos[4];
                T wt[4];
                if (!ra_taps(yy, xx, g.h, g.w, pos, wt)) continue;
                for (int k = 0; k < 4; k++) {
                    const double f = (double)(wt[k] / count);
                    if (dy) atomicAdd(dx + base + pos[k], __dmul_rn(f, d));
                    else acc = __dadd_rn(acc, __dmul_rn(f, (double)ldv(x, base + pos[k])));
                }
            }
        }
        if (!dy) stv(y, e, (T)acc);
    }
}

ra_geom ra_geom_of(const hg_attrs *a, const hg_tensor *data)
{
    ra_geom g;
    g.n = data->shape[0], g.c = data->shape[1], g.h = data->shape[2], g.w = data->shape[3];
    g.ph = a->v[RA_POOLED].t.v[0], g.pw = a->v[RA_POOLED].t.v[1];
    g.sample = (int)a->v[RA_SAMPLE].i;
    g.ps = a->v[RA_PS].b, g.aligned = a->v[RA_ALIGNED].b;
    g.scale = (float)a->v[RA_SCALE].f;
    g.cout = g.ps ? g.c / (g.ph * g.pw) : g.c;
    return g;
}

GPU_FWD(ra_gpu)
{
    STREAM;
    const ra_geom g = ra_geom_of(a, in[0]);
    const int64_t total = out[0]->size;
    if (total == 0) return HG_OK;
    HG_DET_DISPATCH(op, in[0]->dtype,
                    ra_kernel<S> LAUNCH(total)(g, (const S *)hg_data(in[1]),
                                               (const S *)hg_data(in[0]), (S *)hg_data(out[0]),
                                               (const S *)NULL, (double *)NULL, total));
    return hg_cuda_launched(op->name);
}

template <typename S>
hg_status ra_bw_typed(const hg_op_def *op, const hg_attrs *a, int dev, cudaStream_t s,
                      hg_tensor *const *in, hg_tensor *const *out)
{
    const ra_geom g = ra_geom_of(a, in[1]);
    const int64_t total = in[0]->size;
    accum<double> acc;
    HG_TRY((hg_det::accum_begin<double, S>(op, dev, s, out[0], &acc)));
    hg_status st = HG_OK;
    if (total > 0) {
        ra_kernel<S> LAUNCH(total)(g, (const S *)hg_data(in[2]), (const S *)NULL, (S *)NULL,
                                   (const S *)hg_data(in[0]), acc.p, total);
        st = hg_cuda_launched(op->name);
    }
    return hg_det::accum_end<double, S>(op, dev, s, out[0], &acc, st);
}

/* _backward_contrib_ROIAlign(ograd, data, rois) -> the data's gradient. */
GPU_FWD(ra_bw_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[1]->dtype, return ra_bw_typed<S>(op, a, ctx->device_id, s, in, out));
    return HG_OK;
}

/* RROIAlign output element e = (r, c, i, j): the bin grid in the roi's frame, rotated by its
 * angle about its centre. */
template <typename S>
__global__ void rr_kernel(ra_geom g, const S *rois, const S *x, S *y, int64_t total)
{
    typedef typename hg_det::acc_of<S>::type T;
    GRID_LOOP(e, total)
    {
        const int64_t j = e % g.pw, i = (e / g.pw) % g.ph, c = (e / (g.pw * g.ph)) % g.c;
        const int64_t r = e / (g.pw * g.ph * g.c);
        double roi[6];
        for (int k = 0; k < 6; k++) roi[k] = (double)ldv(rois, 6 * r + k);
        const bool skip = !(roi[0] > -1 && roi[0] < (double)g.n);
        const T sc = (T)g.scale;
        const T cw = mul((T)roi[1], sc), ch = mul((T)roi[2], sc);
        T rw = mul((T)roi[3], sc), rh = mul((T)roi[4], sc);
        const T theta = (T)(__dmul_rn((double)(T)roi[5], 3.14159265358979323846) / 180.0);
        rw = rw > (T)1 ? rw : (T)1;
        rh = rh > (T)1 ? rh : (T)1;
        const T sh = (T)(-(double)rh / 2.0), sw = (T)(-(double)rw / 2.0);
        const T bh = rh / (T)g.ph, bw = rw / (T)g.pw;
        const int gh = ra_grid<T>(g.sample, rh, g.ph), gw = ra_grid<T>(g.sample, rw, g.pw);
        const T count = (T)(gh * gw), ct = (T)cos((double)theta), st = (T)sin((double)theta);
        const int64_t b = skip ? 0 : (int64_t)roi[0], hw = g.h * g.w;
        const int64_t base = (b * g.c + c) * hw;
        double acc = 0;
        for (int iy = 0; iy < gh && !skip; iy++) {
            const T yy = ra_pos(sh, i, bh, iy, gh);
            for (int ix = 0; ix < gw; ix++) {
                const T xx = ra_pos(sw, j, bw, ix, gw);
                const T xv = add(add(mul(xx, ct), mul(yy, st)), cw);
                const T yv = add(add(mul(yy, ct), -mul(xx, st)), ch);
                int64_t pos[4];
                T wt[4];
                if (!ra_taps(yv, xv, g.h, g.w, pos, wt)) continue;
                for (int k = 0; k < 4; k++)
                    acc = __dadd_rn(
                        acc, __dmul_rn((double)(wt[k] / count), (double)ldv(x, base + pos[k])));
            }
        }
        stv(y, e, (T)acc);
    }
}

GPU_FWD(rr_gpu)
{
    STREAM;
    ra_geom g = {};
    g.n = in[0]->shape[0], g.c = in[0]->shape[1], g.h = in[0]->shape[2], g.w = in[0]->shape[3];
    g.ph = a->v[RR_POOLED].t.v[0], g.pw = a->v[RR_POOLED].t.v[1];
    g.sample = (int)a->v[RR_SAMPLE].i;
    g.scale = (float)a->v[RR_SCALE].f;
    const int64_t total = out[0]->size;
    if (total == 0) return HG_OK;
    HG_DET_DISPATCH(op, in[0]->dtype,
                    rr_kernel<S> LAUNCH(total)(g, (const S *)hg_data(in[1]),
                                               (const S *)hg_data(in[0]), (S *)hg_data(out[0]),
                                               total));
    return hg_cuda_launched(op->name);
}

/* ---- PSROIPooling ------------------------------------------------------------------------ */

struct ps_geom {
    int64_t n, c, h, w, od, ps, gs;
    double scale;
};

__device__ __forceinline__ float ps_round(float v) { return roundf(v); }
__device__ __forceinline__ double ps_round(double v) { return round(v); }

__device__ __forceinline__ int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Output element e = (r, ct, i, j): forward averages its bin into y; backward spreads dy[e]
 * over the bin into dx (double). An empty bin and a bad batch index give 0. */
template <typename S>
__global__ void ps_kernel(ps_geom g, const S *rois, const S *x, S *y, const S *dy, double *dx,
                          int64_t total)
{
    typedef typename hg_det::acc_of<S>::type T;
    GRID_LOOP(e, total)
    {
        const int64_t j = e % g.ps, i = (e / g.ps) % g.ps, ct = (e / (g.ps * g.ps)) % g.od;
        const int64_t r = e / (g.ps * g.ps * g.od);
        double roi[5];
        for (int k = 0; k < 5; k++) roi[k] = (double)ldv(rois, 5 * r + k);
        const T sc = (T)g.scale;
        const T sw = mul(ps_round((T)roi[1]), sc), sh = mul(ps_round((T)roi[2]), sc);
        const T ew = mul(add(ps_round((T)roi[3]), (T)1), sc);
        const T eh = mul(add(ps_round((T)roi[4]), (T)1), sc);
        const T rw = ew - sw > (T)0.1 ? ew - sw : (T)0.1, rh = eh - sh > (T)0.1 ? eh - sh : (T)0.1;
        const T bh = rh / (T)g.ps, bw = rw / (T)g.ps;
        const int64_t h0 = clamp64((int64_t)floor((double)add(mul((T)i, bh), sh)), 0, g.h);
        const int64_t w0 = clamp64((int64_t)floor((double)add(mul((T)j, bw), sw)), 0, g.w);
        const int64_t h1 = clamp64((int64_t)ceil((double)add(mul((T)(i + 1), bh), sh)), 0, g.h);
        const int64_t w1 = clamp64((int64_t)ceil((double)add(mul((T)(j + 1), bw), sw)), 0, g.w);
        const int64_t gw = clamp64((int64_t)floor((double)(mul((T)j, (T)g.gs) / (T)g.ps)), 0,
                                   g.gs - 1);
        const int64_t gh = clamp64((int64_t)floor((double)(mul((T)i, (T)g.gs) / (T)g.ps)), 0,
                                   g.gs - 1);
        const bool skip = !(roi[0] > -1 && roi[0] < (double)g.n) || h1 <= h0 || w1 <= w0;
        if (skip) {
            if (!dy) stv(y, e, (T)0);
            continue;
        }
        const int64_t b = (int64_t)roi[0];
        const int64_t base = (b * g.c + (ct * g.gs + gh) * g.gs + gw) * g.h * g.w;
        const T area = (T)((h1 - h0) * (w1 - w0));
        if (!dy) {
            T sum = 0;
            for (int64_t p = h0; p < h1; p++)
                for (int64_t q = w0; q < w1; q++) sum = add(sum, (T)ldv(x, base + p * g.w + q));
            stv(y, e, sum / area);
        } else {
            const T gv = (T)ldv(dy, e) / area;
            for (int64_t p = h0; p < h1; p++)
                for (int64_t q = w0; q < w1; q++) atomicAdd(dx + base + p * g.w + q, (double)gv);
        }
    }
}

ps_geom ps_geom_of(const hg_attrs *a, const hg_tensor *data)
{
    ps_geom g;
    g.n = data->shape[0], g.c = data->shape[1], g.h = data->shape[2], g.w = data->shape[3];
    g.od = a->v[PS_OUTDIM].i, g.ps = a->v[PS_POOLED].i;
    g.gs = a->v[PS_GROUP].i ? a->v[PS_GROUP].i : g.ps;
    g.scale = (float)a->v[PS_SCALE].f;
    return g;
}

GPU_FWD(ps_gpu)
{
    STREAM;
    const ps_geom g = ps_geom_of(a, in[0]);
    const int64_t total = out[0]->size;
    if (total == 0) return HG_OK;
    HG_DET_DISPATCH(op, in[0]->dtype,
                    ps_kernel<S> LAUNCH(total)(g, (const S *)hg_data(in[1]),
                                               (const S *)hg_data(in[0]), (S *)hg_data(out[0]),
                                               (const S *)NULL, (double *)NULL, total));
    return hg_cuda_launched(op->name);
}

template <typename S>
hg_status ps_bw_typed(const hg_op_def *op, const hg_attrs *a, int dev, cudaStream_t s,
                      hg_tensor *const *in, hg_tensor *const *out)
{
    const ps_geom g = ps_geom_of(a, in[1]);
    const int64_t total = in[0]->size;
    accum<double> acc;
    HG_TRY((hg_det::accum_begin<double, S>(op, dev, s, out[0], &acc)));
    hg_status st = HG_OK;
    if (total > 0) {
        ps_kernel<S> LAUNCH(total)(g, (const S *)hg_data(in[2]), (const S *)NULL, (S *)NULL,
                                   (const S *)hg_data(in[0]), acc.p, total);
        st = hg_cuda_launched(op->name);
    }
    return hg_det::accum_end<double, S>(op, dev, s, out[0], &acc, st);
}

/* _backward_contrib_PSROIPooling(ograd, data, rois) -> the data's gradient. */
GPU_FWD(ps_bw_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[1]->dtype, return ps_bw_typed<S>(op, a, ctx->device_id, s, in, out));
    return HG_OK;
}

/* ---- box_iou, box_encode, box_decode ---------------------------------------------------- */

/* contrib_bbox.c's intersect1 and box_area, in double. */
__device__ __forceinline__ double intersect1(const double *a, const double *b, int fmt)
{
    double l, r;
    if (fmt == FMT_CORNER) {
        l = a[0] > b[0] ? a[0] : b[0];
        r = a[2] < b[2] ? a[2] : b[2];
    } else {
        const double al = a[0] - a[2] / 2, ar = a[0] + a[2] / 2;
        const double bl = b[0] - b[2] / 2, br = b[0] + b[2] / 2;
        l = bl > al ? bl : al;
        r = br < ar ? br : ar;
    }
    const double w = r - l;
    return w > 0 ? w : 0;
}

__device__ __forceinline__ double box_area(const double *b, int fmt)
{
    const double w = fmt == FMT_CORNER ? b[2] - b[0] : b[2];
    const double h = fmt == FMT_CORNER ? b[3] - b[1] : b[3];
    return w < 0 || h < 0 ? 0 : __dmul_rn(w, h);
}

__device__ __forceinline__ void load4(const void *p, int dt, int64_t at, double *v)
{
    for (int k = 0; k < 4; k++) v[k] = hg_tx::ld(p, dt, at + k);
}

__global__ void iou_kernel(const void *l, const void *r, void *o, int dt, int64_t nr, int fmt,
                           int64_t total)
{
    GRID_LOOP(e, total)
    {
        double p[4], q[4];
        load4(l, dt, 4 * (e / nr), p);
        load4(r, dt, 4 * (e % nr), q);
        const double inter = __dmul_rn(intersect1(p, q, fmt), intersect1(p + 1, q + 1, fmt));
        hg_tx::st(o, dt, e,
                  inter <= 0 ? 0 : inter / ((box_area(p, fmt) + box_area(q, fmt)) - inter));
    }
}

GPU_FWD(iou_gpu)
{
    STREAM;
    const int64_t nr = in[1]->size / 4, total = out[0]->size;
    if (total == 0) return HG_OK;
    iou_kernel LAUNCH(total)(hg_data(in[0]), hg_data(in[1]), hg_data(out[0]), (int)in[0]->dtype, nr,
                             (int)a->v[IOU_FORMAT].i, total);
    return hg_cuda_launched(op->name);
}

/* box_encode: sample i of (B * N): targets and mask (a bad match: zeros, see the top). */
__global__ void enc_kernel(const void *smp, const void *mat, const void *anc, const void *ref,
                           const void *mean, const void *stdv, void *tg, void *mk, int dt,
                           int64_t n, int64_t m, int64_t total)
{
    GRID_LOOP(i, total)
    {
        const bool valid = hg_tx::ld(smp, dt, i) > 0.5;
        double o[4] = {0, 0, 0, 0};
        const double mv = hg_tx::ld(mat, dt, i);
        const int64_t match = mv > -1 && mv < (double)m ? (int64_t)mv : -1;
        if (valid && match >= 0) {
            double r[4], an[4], mu[4], sd[4];
            load4(ref, dt, ((i / n) * m + match) * 4, r);
            load4(anc, dt, 4 * i, an);
            load4(mean, dt, 0, mu);
            load4(stdv, dt, 0, sd);
            const double rw = r[2] - r[0], rh = r[3] - r[1];
            const double rx = __dadd_rn(r[0], __dmul_rn(rw, 0.5));
            const double ry = __dadd_rn(r[1], __dmul_rn(rh, 0.5));
            const double aw = an[2] - an[0], ah = an[3] - an[1];
            const double ax = __dadd_rn(an[0], __dmul_rn(aw, 0.5));
            const double ay = __dadd_rn(an[1], __dmul_rn(ah, 0.5));
            o[0] = ((rx - ax) / aw - mu[0]) / sd[0];
            o[1] = ((ry - ay) / ah - mu[1]) / sd[1];
            o[2] = (log(rw / aw) - mu[2]) / sd[2];
            o[3] = (log(rh / ah) - mu[3]) / sd[3];
        }
        for (int k = 0; k < 4; k++) {
            hg_tx::st(tg, dt, 4 * i + k, o[k]);
            hg_tx::st(mk, dt, 4 * i + k, valid ? 1.0 : 0.0);
        }
    }
}

GPU_FWD(enc_gpu)
{
    STREAM;
    const int64_t n = in[2]->shape[1], m = in[3]->shape[1], total = in[2]->shape[0] * n;
    if (total == 0) return HG_OK;
    enc_kernel LAUNCH(total)(hg_data(in[0]), hg_data(in[1]), hg_data(in[2]), hg_data(in[3]),
                             hg_data(in[4]), hg_data(in[5]), hg_data(out[0]), hg_data(out[1]),
                             (int)in[0]->dtype, n, m, total);
    return hg_cuda_launched(op->name);
}

struct dec_params {
    double sd[4], clip;
    bool corner;
};

__global__ void dec_kernel(const void *x, const void *anc, void *o, int dt, dec_params pr,
                           int64_t n, int64_t rows)
{
    GRID_LOOP(i, rows)
    {
        double p[4], q[4];
        load4(x, dt, 4 * i, p);
        load4(anc, dt, 4 * (i % n), q);
        double ax = q[0], ay = q[1], aw = q[2], ah = q[3];
        if (pr.corner) {
            aw -= ax, ah -= ay;
            ax = __dadd_rn(ax, __dmul_rn(aw, 0.5)), ay = __dadd_rn(ay, __dmul_rn(ah, 0.5));
        }
        const double ox = __dadd_rn(__dmul_rn(__dmul_rn(p[0], pr.sd[0]), aw), ax);
        const double oy = __dadd_rn(__dmul_rn(__dmul_rn(p[1], pr.sd[1]), ah), ay);
        double dw = __dmul_rn(p[2], pr.sd[2]), dh = __dmul_rn(p[3], pr.sd[3]);
        if (pr.clip > 0) {
            dw = dw < pr.clip ? dw : pr.clip;
            dh = dh < pr.clip ? dh : pr.clip;
        }
        const double ow = __dmul_rn(__dmul_rn(exp(dw), aw), 0.5);
        const double oh = __dmul_rn(__dmul_rn(exp(dh), ah), 0.5);
        hg_tx::st(o, dt, 4 * i, ox - ow);
        hg_tx::st(o, dt, 4 * i + 1, oy - oh);
        hg_tx::st(o, dt, 4 * i + 2, ox + ow);
        hg_tx::st(o, dt, 4 * i + 3, oy + oh);
    }
}

GPU_FWD(dec_gpu)
{
    STREAM;
    const int64_t n = in[0]->shape[1], rows = in[0]->size / 4;
    if (rows == 0) return HG_OK;
    dec_params pr;
    for (int j = 0; j < 4; j++) pr.sd[j] = (double)(float)a->v[DEC_STD0 + j].f;
    pr.clip = (double)(float)a->v[DEC_CLIP].f;
    pr.corner = a->v[DEC_FORMAT].i == FMT_CORNER;
    dec_kernel LAUNCH(rows)(hg_data(in[0]), hg_data(in[1]), hg_data(out[0]), (int)in[0]->dtype, pr,
                            n, rows);
    return hg_cuda_launched(op->name);
}

/* ---- MultiBoxPrior ----------------------------------------------------------------------- */

/* Per box of a position: half width and half height (float32, computed on the host exactly as
 * contrib_multibox.c does), the centre's offsets and steps. */
struct mbp_boxes {
    float hw[2 * HG_MBP_MAX_FLOATS], hh[2 * HG_MBP_MAX_FLOATS];
    float sy, sx, oy, ox;
    int nbox;
    bool clip;
};

__device__ __forceinline__ float clip01(float v, bool clip)
{
    return clip ? (v < 0 ? 0.f : v > 1 ? 1.f : v) : v;
}

__global__ void mbp_kernel(float *o, mbp_boxes bx, int64_t w, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t k = e % bx.nbox, c = (e / bx.nbox) % w, r = e / (bx.nbox * w);
        const float cy = ((float)r + bx.oy) * bx.sy, cx = ((float)c + bx.ox) * bx.sx;
        o[4 * e] = clip01(cx - bx.hw[k], bx.clip);
        o[4 * e + 1] = clip01(cy - bx.hh[k], bx.clip);
        o[4 * e + 2] = clip01(cx + bx.hw[k], bx.clip);
        o[4 * e + 3] = clip01(cy + bx.hh[k], bx.clip);
    }
}

GPU_FWD(mbp_gpu)
{
    STREAM;
    hg_mbp_params p;
    HG_TRY(hg_mbp_parse(op, a, &p));
    if (in[0]->dtype != HG_DTYPE_F32) return bad_dtype(op, in[0]->dtype);
    const int h = (int)in[0]->shape[2], w = (int)in[0]->shape[3];
    mbp_boxes bx;
    bx.sy = p.steps[0], bx.sx = p.steps[1];
    if (bx.sy <= 0 || bx.sx <= 0) bx.sy = 1.f / (float)h, bx.sx = 1.f / (float)w;
    bx.oy = p.offsets[0], bx.ox = p.offsets[1];
    bx.clip = a->v[MBP_CLIP].b;
    int k = 0;
    float ratio = sqrtf(p.ratios[0]);
    for (int i = 0; i < p.ns; i++, k++) { /* the first ratio with every size */
        bx.hw[k] = p.sizes[i] * (float)h / (float)w * ratio / 2;
        bx.hh[k] = p.sizes[i] / ratio / 2;
    }
    for (int j = 1; j < p.nr; j++, k++) { /* the other ratios with the first size */
        ratio = sqrtf(p.ratios[j]);
        bx.hw[k] = p.sizes[0] * (float)h / (float)w * ratio / 2;
        bx.hh[k] = p.sizes[0] / ratio / 2;
    }
    bx.nbox = k;
    const int64_t total = (int64_t)h * w * k;
    if (total == 0) return HG_OK;
    mbp_kernel LAUNCH(total)((float *)hg_data(out[0]), bx, w, total);
    return hg_cuda_launched(op->name);
}

/* ---- sorting: per-segment merge sort of (key, index) ------------------------------------- */

/* The orders of the CPU's stable sorts: by key (descending, or ascending), equal keys by
 * index. A negative index marks an entry that is not a candidate: those go last. */
__device__ __forceinline__ bool key_before(double av, int64_t ai, double bv, int64_t bi, bool asc)
{
    const bool ao = ai >= 0, bo = bi >= 0;
    if (ao != bo) return ao;
    if (!ao) return ai > bi;
    if (asc ? av < bv : av > bv) return true;
    if (asc ? bv < av : bv > av) return false;
    return ai < bi;
}

/* One merge pass over segments of n: sorted runs of w pairwise into runs of 2w. */
__global__ void seg_merge_kernel(const double *ks, const int64_t *is, double *kd, int64_t *id,
                                 int64_t n, int64_t w, bool asc, int64_t total)
{
    GRID_LOOP(p, total)
    {
        const int64_t base = (p / n) * n, q = p % n, run = q / w;
        const int64_t pb = (run ^ 1) * w, pe = pb + w < n ? pb + w : n;
        const double v = ks[p];
        const int64_t ix = is[p];
        int64_t dst = q;
        if (pb < n) {
            int64_t lo = pb, hi = pe; /* partner entries before (v, ix): a prefix */
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (key_before(ks[base + mid], is[base + mid], v, ix, asc)) lo = mid + 1;
                else hi = mid;
            }
            dst = (run & ~(int64_t)1) * w + (q - run * w) + (lo - pb);
        }
        kd[base + dst] = v;
        id[base + dst] = ix;
    }
}

/* Sorts every segment of n entries of (k, i) (total entries, both buffers of total); the
 * result is left in (k, i) (the pass buffers are swapped back as needed). */
hg_status seg_sort(const char *name, cudaStream_t s, double *k, int64_t *i, double *k2, int64_t *i2,
                   int64_t n, int64_t total, bool asc)
{
    double *ka = k, *kb = k2;
    int64_t *ia = i, *ib = i2;
    for (int64_t w = 1; w < n; w *= 2) {
        seg_merge_kernel LAUNCH(total)(ka, ia, kb, ib, n, w, asc, total);
        HG_TRY(hg_cuda_launched(name));
        double *kt = ka;
        ka = kb, kb = kt;
        int64_t *it = ia;
        ia = ib, ib = it;
    }
    if (ka == k) return HG_OK;
    HG_TRY(hg_cuda_status(
        cudaMemcpyAsync(k, ka, sizeof(double) * (size_t)total, cudaMemcpyDeviceToDevice, s), name));
    return hg_cuda_status(
        cudaMemcpyAsync(i, ia, sizeof(int64_t) * (size_t)total, cudaMemcpyDeviceToDevice, s), name);
}

__global__ void fill_kernel(void *p, int dt, double v, int64_t n)
{
    GRID_LOOP(i, n) hg_tx::st(p, dt, i, v);
}

/* ---- box_nms ------------------------------------------------------------------------------ */

struct nms_params {
    int64_t cs, si, id, w, n, topk;
    double valid, thr, bg;
    int fin, fout;
    bool force;
};

/* Entry g of every batch's candidates: its score and row (-1 - row when it is no candidate). */
__global__ void nms_gather_kernel(const void *x, int dt, nms_params p, double *key, int64_t *idx,
                                  int64_t total)
{
    GRID_LOOP(g, total)
    {
        const double sc = hg_tx::ld(x, dt, g * p.w + p.si);
        const bool ok = sc > p.valid && (p.id < 0 || hg_tx::ld(x, dt, g * p.w + p.id) != p.bg);
        key[g] = ok ? sc : 0;
        idx[g] = ok ? g : -1 - g;
    }
}

__device__ __forceinline__ void row4(const void *x, int dt, const nms_params &p, int64_t g,
                                     double *b)
{
    load4(x, dt, g * p.w + p.cs, b);
}

/* One block per batch: greedy suppression over the sorted candidates (the first topk), then
 * the kept rows, in order, into o (converted to out_format) and their rows into rec. */
__global__ void nms_kernel(const void *x, int dt, nms_params p, const int64_t *idx, double *area,
                           uint8_t *alive, int64_t *pos, void *o, void *rec, int64_t nb)
{
    for (int64_t b = blockIdx.x; b < nb; b += gridDim.x) {
        const int64_t base = b * p.n;
        int64_t lo = 0, hi = p.n; /* candidates are a prefix */
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (idx[base + mid] >= 0) lo = mid + 1;
            else hi = mid;
        }
        const int64_t k = lo < p.topk ? lo : p.topk;
        for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
            double bx[4];
            row4(x, dt, p, idx[base + j], bx);
            area[base + j] = box_area(bx, p.fin);
            alive[base + j] = 1;
        }
        __syncthreads();
        for (int64_t r = 0; r < k; r++) {
            if (alive[base + r]) {
                const int64_t gr = idx[base + r];
                double rb[4];
                row4(x, dt, p, gr, rb);
                const int64_t rid = p.id >= 0 ? (int64_t)hg_tx::ld(x, dt, gr * p.w + p.id) : 0;
                for (int64_t q = r + 1 + threadIdx.x; q < k; q += blockDim.x) {
                    if (!alive[base + q]) continue;
                    const int64_t gq = idx[base + q];
                    if (!p.force && p.id >= 0 && rid != (int64_t)hg_tx::ld(x, dt, gq * p.w + p.id))
                        continue;
                    double qb[4];
                    row4(x, dt, p, gq, qb);
                    const double inter = __dmul_rn(intersect1(rb, qb, p.fin),
                                                   intersect1(rb + 1, qb + 1, p.fin));
                    if (inter / ((area[base + r] + area[base + q]) - inter) > p.thr)
                        alive[base + q] = 0;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            int64_t c = 0;
            for (int64_t j = 0; j < k; j++) pos[base + j] = alive[base + j] ? c++ : -1;
        }
        __syncthreads();
        for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
            if (pos[base + j] < 0) continue;
            const int64_t g = idx[base + j], dst = base + pos[base + j];
            double bx[4];
            row4(x, dt, p, g, bx);
            if (p.fin != p.fout && bx[0] >= 0) { /* contrib_bbox.c's corner_center */
                const double a0 = bx[0], a1 = bx[1], a2 = bx[2], a3 = bx[3];
                if (p.fout == FMT_CENTER)
                    bx[0] = (a0 + a2) / 2, bx[1] = (a1 + a3) / 2, bx[2] = a2 - a0, bx[3] = a3 - a1;
                else
                    bx[0] = a0 - a2 / 2, bx[1] = a1 - a3 / 2, bx[2] = a0 + a2 / 2,
                    bx[3] = a1 + a3 / 2;
            }
            for (int64_t c = 0; c < p.w; c++) {
                const bool coord = c >= p.cs && c < p.cs + 4;
                hg_tx::st(o, dt, dst * p.w + c,
                          coord ? bx[c - p.cs] : hg_tx::ld(x, dt, g * p.w + c));
            }
            if (rec) hg_tx::st(rec, dt, dst, (double)g);
        }
        __syncthreads();
    }
}

__global__ void iota_kernel(void *p, int dt, int64_t n)
{
    GRID_LOOP(i, n) hg_tx::st(p, dt, i, (double)i);
}

GPU_FWD(nms_gpu)
{
    STREAM;
    const hg_tensor *t = in[0];
    nms_params p;
    p.w = t->shape[t->ndim - 1], p.n = t->shape[t->ndim - 2];
    const int64_t total = p.w ? t->size / p.w : 0, nb = p.n > 0 ? total / p.n : 0;
    const int dt = (int)t->dtype;
    p.topk = a->v[NMS_TOPK].i < 0 ? p.n : (p.n < a->v[NMS_TOPK].i ? p.n : a->v[NMS_TOPK].i);
    p.cs = a->v[NMS_COORD].i, p.si = a->v[NMS_SCORE].i, p.id = a->v[NMS_ID].i;
    p.valid = (double)(float)a->v[NMS_VALID].f, p.thr = (double)(float)a->v[NMS_OVERLAP].f;
    p.bg = (double)a->v[NMS_BG].i;
    p.fin = (int)a->v[NMS_IN_FMT].i, p.fout = (int)a->v[NMS_OUT_FMT].i;
    p.force = a->v[NMS_FORCE].b;
    void *rec = nout > 1 ? hg_data(out[1]) : NULL;
    if (total == 0) return HG_OK;
    if (p.topk < 1) { /* MXNet: the input unchanged and the identity record */
        HG_TRY(copy_whole(op, s, out[0], t));
        if (rec) iota_kernel LAUNCH(total)(rec, dt, total);
        return hg_cuda_launched(op->name);
    }
    fill_kernel LAUNCH(t->size)(hg_data(out[0]), dt, -1.0, t->size);
    if (rec) fill_kernel LAUNCH(total)(rec, dt, -1.0, total);
    HG_TRY(hg_cuda_launched(op->name));
    scratch sc = {NULL, 0, 0};
    sc.n = 3 * piece(sizeof(double), total) + 3 * piece(sizeof(int64_t), total) + piece(1, total);
    HG_TRY(hg_device_alloc(ctx->device_id, sc.n, (void **)&sc.p));
    double *key = carve<double>(&sc, total), *key2 = carve<double>(&sc, total);
    int64_t *idx = carve<int64_t>(&sc, total), *idx2 = carve<int64_t>(&sc, total);
    double *area = carve<double>(&sc, total);
    int64_t *pos = carve<int64_t>(&sc, total);
    uint8_t *alive = carve<uint8_t>(&sc, total);
    nms_gather_kernel LAUNCH(total)(hg_data(t), dt, p, key, idx, total);
    hg_status st = hg_cuda_launched(op->name);
    if (st == HG_OK) st = seg_sort(op->name, s, key, idx, key2, idx2, p.n, total, false);
    if (st == HG_OK) {
        const unsigned grid = (unsigned)(nb < HG_CUDA_MAX_BLOCKS ? nb : HG_CUDA_MAX_BLOCKS);
        nms_kernel<<<grid, HG_CUDA_THREADS, 0, s>>>(hg_data(t), dt, p, idx, area, alive, pos,
                                                    hg_data(out[0]), rec, nb);
        st = hg_cuda_launched(op->name);
    }
    hg_device_free(ctx->device_id, sc.p, sc.n);
    return st;
}

/* dx row rec[i] = dy row i for the records inside the data (the rest stay zero). */
__global__ void nms_bw_kernel(const void *dy, const void *rec, void *dx, int dt, int rdt, int64_t w,
                              int64_t rows)
{
    GRID_LOOP(e, rows * w)
    {
        const int64_t i = e / w, c = e % w;
        const double r = hg_tx::ld(rec, rdt, i);
        if (!(r > -1 && r < (double)rows)) continue; /* suppressed, or not a box_nms record */
        hg_tx::st(dx, dt, (int64_t)r * w + c, hg_tx::ld(dy, dt, e));
    }
}

/* _backward_contrib_box_nms(ograd, record) -> the data's gradient. */
GPU_FWD(nms_bw_gpu)
{
    STREAM;
    const hg_tensor *dy = in[0];
    const int64_t w = dy->shape[dy->ndim - 1], rows = in[1]->size;
    HG_TRY(zero_fill(op, s, out[0]));
    if (rows * w == 0) return HG_OK;
    nms_bw_kernel LAUNCH(rows * w)(hg_data(dy), hg_data(in[1]), hg_data(out[0]), (int)dy->dtype,
                                   (int)in[1]->dtype, w, rows);
    return hg_cuda_launched(op->name);
}

/* ---- bipartite_matching ------------------------------------------------------------------- */

__global__ void bm_gather_kernel(const void *x, int dt, double *key, int64_t *idx, int64_t m,
                                 int64_t total)
{
    GRID_LOOP(g, total)
    {
        key[g] = hg_tx::ld(x, dt, g);
        idx[g] = g % m;
    }
}

/* One thread per batch: the greedy walk down the sorted scores, as contrib_bbox.c's. */
__global__ void bm_match_kernel(const double *key, const int64_t *idx, uint8_t *rused,
                                uint8_t *cused, void *rm, void *cm, int dt, int64_t nr, int64_t nc,
                                bool asc, double thr, int64_t topk, int64_t nb)
{
    GRID_LOOP(b, nb)
    {
        const int64_t m = nr * nc;
        int64_t count = 0;
        for (int64_t j = 0; j < m; j++) {
            const int64_t r = idx[b * m + j] / nc, c = idx[b * m + j] % nc;
            if (rused[b * nr + r] || cused[b * nc + c]) continue;
            const double sc = key[b * m + j];
            if (!((!asc && sc > thr) || (asc && sc < thr))) break;
            rused[b * nr + r] = cused[b * nc + c] = 1;
            hg_tx::st(rm, dt, b * nr + r, (double)c);
            hg_tx::st(cm, dt, b * nc + c, (double)r);
            /* MXNet's loop checks after counting, so topk allows topk + 1 matches */
            if (topk > 0 && ++count > topk) break;
        }
    }
}

GPU_FWD(bm_gpu)
{
    STREAM;
    const hg_tensor *t = in[0];
    const int64_t nr = t->shape[t->ndim - 2], nc = t->shape[t->ndim - 1], m = nr * nc;
    const int64_t nb = m ? t->size / m : 0;
    const int dt = (int)t->dtype;
    if (out[0]->size) fill_kernel LAUNCH(out[0]->size)(hg_data(out[0]), dt, -1.0, out[0]->size);
    if (out[1]->size) fill_kernel LAUNCH(out[1]->size)(hg_data(out[1]), dt, -1.0, out[1]->size);
    HG_TRY(hg_cuda_launched(op->name));
    if (t->size == 0) return HG_OK;
    const int64_t total = t->size;
    scratch sc = {NULL, 0, 0};
    sc.n = 2 * piece(sizeof(double), total) + 2 * piece(sizeof(int64_t), total) +
           piece(1, nb * nr) + piece(1, nb * nc);
    HG_TRY(hg_device_alloc(ctx->device_id, sc.n, (void **)&sc.p));
    double *key = carve<double>(&sc, total), *key2 = carve<double>(&sc, total);
    int64_t *idx = carve<int64_t>(&sc, total), *idx2 = carve<int64_t>(&sc, total);
    uint8_t *rused = carve<uint8_t>(&sc, nb * nr), *cused = carve<uint8_t>(&sc, nb * nc);
    hg_status st = hg_cuda_status(cudaMemsetAsync(rused, 0, (size_t)(nb * nr), s), op->name);
    if (st == HG_OK) st = hg_cuda_status(cudaMemsetAsync(cused, 0, (size_t)(nb * nc), s), op->name);
    if (st == HG_OK) {
        bm_gather_kernel LAUNCH(total)(hg_data(t), dt, key, idx, m, total);
        st = hg_cuda_launched(op->name);
    }
    const bool asc = a->v[BM_ASCEND].b;
    if (st == HG_OK) st = seg_sort(op->name, s, key, idx, key2, idx2, m, total, asc);
    if (st == HG_OK) {
        bm_match_kernel LAUNCH(nb)(key, idx, rused, cused, hg_data(out[0]), hg_data(out[1]), dt, nr,
                                   nc, asc, (double)(float)a->v[BM_THRESH].f, a->v[BM_TOPK].i, nb);
        st = hg_cuda_launched(op->name);
    }
    hg_device_free(ctx->device_id, sc.p, sc.n);
    return st;
}

/* ---- MultiBoxTarget ---------------------------------------------------------------------- */

/* contrib_multibox.c's iou_f, in float32 (anchor, ground truth: corner boxes). */
__device__ __forceinline__ float mbt_iou(const float *an, const float *gt)
{
    const float iw = fminf(an[2], gt[2]) - fmaxf(an[0], gt[0]);
    const float ih = fminf(an[3], gt[3]) - fmaxf(an[1], gt[1]);
    const float inter = __fmul_rn(iw > 0 ? iw : 0.f, ih > 0 ? ih : 0.f);
    const float uni = __fadd_rn(__fmul_rn(an[2] - an[0], an[3] - an[1]),
                                __fmul_rn(gt[2] - gt[0], gt[3] - gt[1])) -
                      inter;
    return uni == 0 ? 0.f : inter / uni; /* MXNet's safe_divide: no area, no overlap */
}

struct mbt_params {
    int64_t n, nl, lw, nc;
    float overlap, neg_ratio, neg_thresh, ignore, var[4];
};

/* Batch b's scratch: IoU (n * nl), best IoU, matched label and flag per anchor (1 positive,
 * 0 negative, -1 ignored), labels done, and the candidate count of mining. */
struct mbt_scratch {
    float *iou, *best;
    int64_t *match, *nneg;
    signed char *flag;
    uint8_t *done;
    double *key;
    int64_t *idx;
};

__device__ __forceinline__ void mbt_anchor(const float *anc, int64_t j, float *v)
{
    for (int k = 0; k < 4; k++) v[k] = anc[4 * j + k];
}

/* The best label of anchor j by IoU (first of equals), into best/match (contrib_multibox.c's
 * best_gt). */
__device__ __forceinline__ void mbt_best_gt(const mbt_scratch &w, int64_t o, int64_t j, int64_t nv,
                                            int64_t nl)
{
    int64_t g = -1;
    float m = -1.0f;
    for (int64_t k = 0; k < nv; k++)
        if (w.iou[(o + j) * nl + k] > m) g = k, m = w.iou[(o + j) * nl + k];
    if (g != -1) w.best[o + j] = m, w.match[o + j] = g;
}

/* The softmax probability of class 0 of anchor j (scores (classes, anchors)). */
__device__ __forceinline__ float mbt_bg_prob(const float *pred, int64_t j, int64_t n, int64_t nc)
{
    float mx = pred[j];
    for (int64_t k = 1; k < nc; k++)
        if (pred[j + n * k] > mx) mx = pred[j + n * k];
    float sum = 0;
    for (int64_t k = 0; k < nc; k++) sum = __fadd_rn(sum, expf(pred[j + n * k] - mx));
    return expf(pred[j] - mx) / sum;
}

/* One block per batch: the labels in use, the IoU table, each label's best free anchor (best
 * pair first, as the CPU's serial search picks it), the anchors above the overlap threshold,
 * and the mining candidates (key -probability, for the sort; the rest marked -1 - j). */
__global__ void mbt_match_kernel(const float *anc, const float *lab, const float *pred,
                                 mbt_params p, mbt_scratch w, int64_t nb)
{
    __shared__ float sv[HG_CUDA_THREADS];
    __shared__ int64_t si[HG_CUDA_THREADS];
    __shared__ int64_t s_nv, s_npos;
    const int64_t n = p.n, nl = p.nl;
    for (int64_t b = blockIdx.x; b < nb; b += gridDim.x) {
        const int64_t o = b * n;
        const float *lb = lab + b * nl * p.lw;
        if (threadIdx.x == 0) {
            int64_t nv = 0; /* labels up to the first padding row (class -1) */
            while (nv < nl && lb[nv * p.lw] != -1.0f) nv++;
            s_nv = nv;
            s_npos = 0;
            w.nneg[b] = 0;
        }
        __syncthreads();
        const int64_t nv = s_nv;
        for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
            w.best[o + e] = -1, w.match[o + e] = -1, w.flag[o + e] = -1;
            w.key[o + e] = 0, w.idx[o + e] = -1 - e;
        }
        for (int64_t e = threadIdx.x; e < n * nv; e += blockDim.x) {
            const int64_t j = e / nv, k = e % nv;
            float an[4];
            mbt_anchor(anc, j, an);
            w.iou[(o + j) * nl + k] = mbt_iou(an, lb + k * p.lw + 1);
        }
        for (int64_t k = threadIdx.x; k < nv; k += blockDim.x) w.done[b * nl + k] = 0;
        __syncthreads();
        if (nv == 0) continue; /* no labels: every anchor ignored */
        for (int64_t left = nv; left > 0; left--) {
            /* the largest IoU above 1e-6 of a free anchor and a label not done; the first
             * (anchor, label) of equals */
            float bv = 1e-6f;
            int64_t bi = -1;
            for (int64_t e = threadIdx.x; e < n * nv; e += blockDim.x) {
                const int64_t j = e / nv, k = e % nv;
                if (w.flag[o + j] == 1 || w.done[b * nl + k]) continue;
                const float v = w.iou[(o + j) * nl + k];
                if (v > bv) bv = v, bi = e;
            }
            sv[threadIdx.x] = bv, si[threadIdx.x] = bi;
            __syncthreads();
            for (int h = HG_CUDA_THREADS / 2; h > 0; h >>= 1) {
                if ((int)threadIdx.x < h) {
                    const float v2 = sv[threadIdx.x + h];
                    const int64_t i2 = si[threadIdx.x + h];
                    if (i2 >= 0 && (si[threadIdx.x] < 0 || v2 > sv[threadIdx.x] ||
                                    (v2 == sv[threadIdx.x] && i2 < si[threadIdx.x])))
                        sv[threadIdx.x] = v2, si[threadIdx.x] = i2;
                }
                __syncthreads();
            }
            const int64_t win = si[0];
            if (threadIdx.x == 0 && win >= 0) {
                const int64_t j = win / nv, k = win % nv;
                w.best[o + j] = sv[0], w.match[o + j] = k, w.flag[o + j] = 1;
                w.done[b * nl + k] = 1;
                s_npos++;
            }
            __syncthreads();
            if (win < 0) break;
        }
        if (p.overlap > 0)
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                if (w.flag[o + j] == 1) continue;
                mbt_best_gt(w, o, j, nv, nl);
                if (w.match[o + j] != -1 && w.best[o + j] > p.overlap) {
                    w.flag[o + j] = 1;
                    atomicAdd((unsigned long long *)&s_npos, 1ull);
                }
            }
        __syncthreads();
        const int64_t npos = s_npos;
        if (!(p.neg_ratio > 0)) {
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                if (w.flag[o + j] != 1) w.flag[o + j] = 0;
            continue;
        }
        int64_t nneg = (int64_t)(int)((float)npos * p.neg_ratio);
        if (nneg > n - npos) nneg = n - npos;
        if (nneg <= 0) continue;
        if (threadIdx.x == 0) w.nneg[b] = nneg;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            if (w.flag[o + j] == 1) continue;
            if (w.best[o + j] < 0) mbt_best_gt(w, o, j, nv, nl);
            if (w.best[o + j] < p.neg_thresh && w.flag[o + j] == -1) {
                w.key[o + j] = -(double)mbt_bg_prob(pred + b * p.nc * n, j, n, p.nc);
                w.idx[o + j] = j;
            }
        }
        __syncthreads();
    }
}

/* The first nneg sorted candidates of each batch become negatives. (The CPU fails when fewer
 * than nneg qualify; here those that do are taken.) */
__global__ void mbt_mine_kernel(mbt_scratch w, int64_t n, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t b = e / n, t = e % n, j = w.idx[e];
        if (t < w.nneg[b] && j >= 0) w.flag[b * n + j] = 0;
    }
}

/* Anchor (b, j)'s targets from its flag and match. */
__global__ void mbt_out_kernel(const float *anc, const float *lab, mbt_params p, mbt_scratch w,
                               float *loc, float *mask, float *cls, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t b = e / p.n, j = e % p.n;
        const signed char f = w.flag[e];
        for (int k = 0; k < 4; k++) loc[4 * e + k] = 0, mask[4 * e + k] = 0;
        if (f == 0) cls[e] = 0;
        else if (f != 1) cls[e] = p.ignore;
        if (f != 1) continue;
        const float *gt = lab + (b * p.nl + w.match[e]) * p.lw;
        cls[e] = (float)((double)gt[0] + 1);
        for (int k = 0; k < 4; k++) mask[4 * e + k] = 1;
        float an[4];
        mbt_anchor(anc, j, an);
        const float aw = an[2] - an[0], ah = an[3] - an[1];
        const float ax = (an[0] + an[2]) * 0.5f, ay = (an[1] + an[3]) * 0.5f;
        const float gw = gt[3] - gt[1], gh = gt[4] - gt[2];
        const float gx = (gt[1] + gt[3]) * 0.5f, gy = (gt[2] + gt[4]) * 0.5f;
        loc[4 * e] = (gx - ax) / aw / p.var[0];
        loc[4 * e + 1] = (gy - ay) / ah / p.var[1];
        loc[4 * e + 2] = logf(gw / aw) / p.var[2];
        loc[4 * e + 3] = logf(gh / ah) / p.var[3];
    }
}

GPU_FWD(mbt_gpu)
{
    STREAM;
    for (int i = 0; i < 3; i++)
        if (in[i]->dtype != HG_DTYPE_F32) return bad_dtype(op, in[i]->dtype);
    mbt_params p;
    HG_TRY(hg_mbt_variances(op, a, p.var));
    p.n = in[0]->shape[1], p.nl = in[1]->shape[1], p.lw = in[1]->shape[2];
    p.nc = in[2]->shape[1];
    p.overlap = (float)a->v[MBT_OVERLAP].f, p.neg_ratio = (float)a->v[MBT_NEG_RATIO].f;
    p.neg_thresh = (float)a->v[MBT_NEG_THRESH].f, p.ignore = (float)a->v[MBT_IGNORE].f;
    const int64_t nb = in[1]->shape[0], total = nb * p.n;
    if (total == 0) return HG_OK;
    scratch sc = {NULL, 0, 0};
    sc.n = piece(sizeof(float), total * p.nl) + piece(sizeof(float), total) +
           piece(sizeof(int64_t), total) + piece(sizeof(int64_t), nb) + piece(1, total) +
           piece(1, nb * p.nl) + 2 * piece(sizeof(double), total) +
           2 * piece(sizeof(int64_t), total);
    HG_TRY(hg_device_alloc(ctx->device_id, sc.n, (void **)&sc.p));
    mbt_scratch w;
    w.iou = carve<float>(&sc, total * p.nl), w.best = carve<float>(&sc, total);
    w.match = carve<int64_t>(&sc, total), w.nneg = carve<int64_t>(&sc, nb);
    w.flag = carve<signed char>(&sc, total), w.done = carve<uint8_t>(&sc, nb * p.nl);
    w.key = carve<double>(&sc, total);
    double *key2 = carve<double>(&sc, total);
    w.idx = carve<int64_t>(&sc, total);
    int64_t *idx2 = carve<int64_t>(&sc, total);
    const float *anc = (const float *)hg_data(in[0]), *lab = (const float *)hg_data(in[1]);
    const unsigned grid = (unsigned)(nb < HG_CUDA_MAX_BLOCKS ? nb : HG_CUDA_MAX_BLOCKS);
    mbt_match_kernel<<<grid, HG_CUDA_THREADS, 0, s>>>(anc, lab, (const float *)hg_data(in[2]), p, w,
                                                      nb);
    hg_status st = hg_cuda_launched(op->name);
    if (st == HG_OK && p.neg_ratio > 0)
        st = seg_sort(op->name, s, w.key, w.idx, key2, idx2, p.n, total, false);
    if (st == HG_OK && p.neg_ratio > 0) {
        mbt_mine_kernel LAUNCH(total)(w, p.n, total);
        st = hg_cuda_launched(op->name);
    }
    if (st == HG_OK) {
        mbt_out_kernel LAUNCH(total)(anc, lab, p, w, (float *)hg_data(out[0]),
                                     (float *)hg_data(out[1]), (float *)hg_data(out[2]), total);
        st = hg_cuda_launched(op->name);
    }
    hg_device_free(ctx->device_id, sc.p, sc.n);
    return st;
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_detect[] = {
    {"ROIPooling", rp_gpu},
    {"_backward_ROIPooling", rp_bw_gpu},
    {"_contrib_ROIAlign", ra_gpu},
    {"_backward_contrib_ROIAlign", ra_bw_gpu},
    {"_contrib_RROIAlign", rr_gpu},
    {"_contrib_PSROIPooling", ps_gpu},
    {"_backward_contrib_PSROIPooling", ps_bw_gpu},
    {"_contrib_box_iou", iou_gpu},
    {"_contrib_box_encode", enc_gpu},
    {"_contrib_box_decode", dec_gpu},
    {"_contrib_MultiBoxPrior", mbp_gpu},
    {"_contrib_box_nms", nms_gpu},
    {"_backward_contrib_box_nms", nms_bw_gpu},
    {"_contrib_bipartite_matching", bm_gpu},
    {"_contrib_MultiBoxTarget", mbt_gpu},
    {NULL, NULL},
};
