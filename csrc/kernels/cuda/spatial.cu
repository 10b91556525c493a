/* hg_gpu_kernels_spatial: GPU kernels of the sampling ops of ops/spatial.c: GridGenerator,
 * BilinearSampler, SpatialTransformer, Correlation and their gradients (ROIPooling is with the
 * region ops in detect.cu); and the deformable convolutions of ops/deform_conv.c
 * (DeformableConvolution, ModulatedDeformableConvolution and their gradients): an im2col of
 * bilinear samples per image and cuBLAS GEMMs per group, all in double as the CPU computes
 * them (the GEMMs add in cuBLAS's order), the column gradient scattered with double atomics.
 *
 * The arithmetic is spatial.c's, step by step in the data's type (float16 in float32, as the
 * CPU's float16 path computes on float32 copies), with products that nvcc may not fuse into an
 * FMA (det_common.h), so sample positions, floor() of them and the weights are the CPU's bits.
 * Reductions that one CPU loop runs in order (the affine grid's gradient, Correlation's patch
 * sums, BilinearSampler's grid gradient over channels) run in the same order in one thread.
 * Gradients that scatter into the data (BilinearSampler's and Correlation's) add with atomics,
 * in float32 for float32 and float16 (then converted once) and float64 for float64: their
 * order of addition differs from the CPU's, so float32 results agree to rounding.
 */
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

/* ---- GridGenerator ---------------------------------------------------------------------- */

/* spatial.c's grid steps 2 / (W - 1) and 2 / (H - 1) in T. */
template <typename T> struct gg_steps {
    T sx, sy;
};

template <typename T> gg_steps<T> steps_of(int64_t H, int64_t W)
{
    return gg_steps<T>{(T)(2.0 / (double)(W - 1)), (T)(2.0 / (double)(H - 1))};
}

/* Affine grid (N, 2, H, W) from theta (N, 6): G is the grid's storage type. */
template <typename S, typename G>
__global__ void gg_affine_kernel(const S *th, G *o, int64_t N, int64_t H, int64_t W,
                                 gg_steps<typename hg_det::acc_of<S>::type> st)
{
    typedef typename hg_det::acc_of<S>::type T;
    GRID_LOOP(e, N * H * W)
    {
        const int64_t w = e % W, h = (e / W) % H, n = e / (H * W);
        const T x = add((T)-1.0, mul((T)w, st.sx)), y = add((T)-1.0, mul((T)h, st.sy));
        const S *t = th + 6 * n;
        G *ox = o + n * 2 * H * W, *oy = ox + H * W;
        stv(ox, h * W + w, add(add(mul(ldv(t, 0), x), mul(ldv(t, 1), y)), ldv(t, 2)));
        stv(oy, h * W + w, add(add(mul(ldv(t, 3), x), mul(ldv(t, 4), y)), ldv(t, 5)));
    }
}

/* dtheta[n, k]: one thread per (n, k), the grid walked in the CPU's order. */
template <typename S>
__global__ void gg_affine_bw_kernel(const S *dy, S *dth, int64_t N, int64_t H, int64_t W,
                                    gg_steps<typename hg_det::acc_of<S>::type> st)
{
    typedef typename hg_det::acc_of<S>::type T;
    GRID_LOOP(e, N * 6)
    {
        const int64_t n = e / 6, k = e % 6;
        const S *g = dy + (n * 2 + (k >= 3 ? 1 : 0)) * H * W;
        T a = 0;
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++) {
                const T u = ldv(g, h * W + w);
                switch (k % 3) {
                case 0: a = add(a, mul(u, add((T)-1.0, mul((T)w, st.sx)))); break;
                case 1: a = add(a, mul(u, add((T)-1.0, mul((T)h, st.sy)))); break;
                default: a = add(a, u); break;
                }
            }
        stv(dth, e, a);
    }
}

/* Warp: out = (flow + position) / ((size - 1) / 2) - 1; backward: dy / ((size - 1) / 2). */
template <typename S>
__global__ void gg_warp_kernel(const S *f, S *o, int64_t N, int64_t H, int64_t W, bool bw)
{
    typedef typename hg_det::acc_of<S>::type T;
    const T hx = (T)(((double)(T)W - 1.0) / 2.0), hy = (T)(((double)(T)H - 1.0) / 2.0);
    GRID_LOOP(e, N * 2 * H * W)
    {
        const int64_t w = e % W, h = (e / W) % H, c = (e / (H * W)) % 2;
        const T v = ldv(f, e), sc = c ? hy : hx;
        stv(o, e, bw ? v / sc : add(v, (T)(c ? h : w)) / sc - (T)1);
    }
}

template <typename S>
hg_status gg_launch(const hg_op_def *op, cudaStream_t s, const hg_attrs *a, bool bw,
                    const hg_tensor *x, hg_tensor *y)
{
    typedef typename hg_det::acc_of<S>::type T;
    if (a->v[GG_TRANSFORM].i == GG_AFFINE) {
        const int64_t H = a->v[GG_TARGET].t.v[0], W = a->v[GG_TARGET].t.v[1];
        const int64_t N = bw ? y->shape[0] : x->shape[0];
        const gg_steps<T> st = steps_of<T>(H, W);
        if (N * H * W == 0) return HG_OK;
        if (bw)
            gg_affine_bw_kernel<S> LAUNCH(N * 6)((const S *)hg_data(x), (S *)hg_data(y), N, H, W,
                                                 st);
        else
            gg_affine_kernel<S, S> LAUNCH(N * H * W)((const S *)hg_data(x), (S *)hg_data(y), N, H,
                                                     W, st);
        return hg_cuda_launched(op->name);
    }
    if (x->size == 0) return HG_OK;
    gg_warp_kernel<S> LAUNCH(x->size)((const S *)hg_data(x), (S *)hg_data(y), x->shape[0],
                                      x->shape[2], x->shape[3], bw);
    return hg_cuda_launched(op->name);
}

GPU_FWD(gg_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[0]->dtype, return gg_launch<S>(op, s, a, false, in[0], out[0]));
    return HG_OK;
}

/* _backward_GridGenerator(ograd, data) -> the data's gradient. */
GPU_FWD(gg_bw_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[0]->dtype, return gg_launch<S>(op, s, a, true, in[0], out[0]));
    return HG_OK;
}

/* ---- BilinearSampler -------------------------------------------------------------------- */

/* One sample point as spatial.c's BS_POINT: top-left corner, its weights, which taps exist. */
template <typename T> struct bs_point {
    int64_t ty, tx;
    T wy, wx;
    bool in_t, in_b, in_l, in_r;
};

template <typename T>
__device__ __forceinline__ bs_point<T> bs_at(T gx, T gy, int64_t IH, int64_t IW)
{
    bs_point<T> p;
    const T yr = mul(add(gy, (T)1), (T)(IH - 1)) / (T)2;
    const T xr = mul(add(gx, (T)1), (T)(IW - 1)) / (T)2;
    p.ty = (int64_t)floor(yr);
    p.tx = (int64_t)floor(xr);
    p.wy = (T)1 - (yr - (T)p.ty);
    p.wx = (T)1 - (xr - (T)p.tx);
    p.in_t = p.ty >= 0 && p.ty <= IH - 1;
    p.in_b = p.ty + 1 >= 0 && p.ty + 1 <= IH - 1;
    p.in_l = p.tx >= 0 && p.tx <= IW - 1;
    p.in_r = p.tx + 1 >= 0 && p.tx + 1 <= IW - 1;
    return p;
}

struct bs_dims {
    int64_t N, C, IH, IW, OH, OW;
};

/* y (N, C, OH, OW) from x at grid (N, 2, OH, OW) of storage G. */
template <typename S, typename G>
__global__ void bs_fwd_kernel(const S *x, const G *grid, S *y, bs_dims d)
{
    typedef typename hg_det::acc_of<S>::type T;
    const int64_t P = d.OH * d.OW;
    GRID_LOOP(e, d.N * d.C * P)
    {
        const int64_t p = e % P, nc = e / P, n = nc / d.C;
        const G *g = grid + n * 2 * P;
        const bs_point<T> q = bs_at<T>((T)ldv(g, p), (T)ldv(g, P + p), d.IH, d.IW);
        const S *xp = x + nc * d.IH * d.IW;
        const int64_t t0 = q.ty * d.IW + q.tx, b0 = t0 + d.IW;
        const T tl = q.in_t && q.in_l ? ldv(xp, t0) : (T)0;
        const T tr = q.in_t && q.in_r ? ldv(xp, t0 + 1) : (T)0;
        const T bl = q.in_b && q.in_l ? ldv(xp, b0) : (T)0;
        const T br = q.in_b && q.in_r ? ldv(xp, b0 + 1) : (T)0;
        const T uy = (T)1 - q.wy, ux = (T)1 - q.wx;
        T v = add(mul(mul(tl, q.wy), q.wx), mul(mul(tr, q.wy), ux));
        v = add(v, mul(mul(bl, uy), q.wx));
        v = add(v, mul(mul(br, uy), ux));
        stv(y, e, v);
    }
}

/* One thread per (n, output position): the channels in the CPU's order for the grid
 * gradient, the data gradient added atomically into dx (type A, zeroed; may be NULL). */
template <typename S, typename A>
__global__ void bs_bwd_kernel(const S *dy, const S *x, const S *grid, A *dx, S *dgrid, bs_dims d)
{
    typedef typename hg_det::acc_of<S>::type T;
    const int64_t P = d.OH * d.OW;
    GRID_LOOP(e, d.N * P)
    {
        const int64_t p = e % P, n = e / P;
        const S *g = grid + n * 2 * P;
        const bs_point<T> q = bs_at<T>(ldv(g, p), ldv(g, P + p), d.IH, d.IW);
        const int64_t t0 = q.ty * d.IW + q.tx, b0 = t0 + d.IW;
        const T uy = (T)1 - q.wy, ux = (T)1 - q.wx;
        T gyw = 0, gxw = 0;
        for (int64_t c = 0; c < d.C; c++) {
            const int64_t plane = (n * d.C + c) * d.IH * d.IW;
            const S *xp = x + plane;
            A *dp = dx ? dx + plane : NULL;
            const T dv = ldv(dy, (n * d.C + c) * P + p);
            T tl = 0, tr = 0, bl = 0, br = 0;
            if (q.in_t && q.in_l) {
                if (dp) hg_det::atomic_add(dp + t0, (A)mul(mul(dv, q.wy), q.wx));
                tl = ldv(xp, t0);
            }
            if (q.in_t && q.in_r) {
                if (dp) hg_det::atomic_add(dp + t0 + 1, (A)mul(mul(dv, q.wy), ux));
                tr = ldv(xp, t0 + 1);
            }
            if (q.in_b && q.in_l) {
                if (dp) hg_det::atomic_add(dp + b0, (A)mul(mul(dv, uy), q.wx));
                bl = ldv(xp, b0);
            }
            if (q.in_b && q.in_r) {
                if (dp) hg_det::atomic_add(dp + b0 + 1, (A)mul(mul(dv, uy), ux));
                br = ldv(xp, b0 + 1);
            }
            const T m = ((tl - tr) - bl) + br;
            gyw = gyw - mul(dv, add(tr - br, mul(m, q.wx)));
            gxw = gxw - mul(dv, add(bl - br, mul(m, q.wy)));
        }
        stv(dgrid, n * 2 * P + P + p, mul(gyw, (T)(d.IH - 1)) / (T)2);
        stv(dgrid, n * 2 * P + p, mul(gxw, (T)(d.IW - 1)) / (T)2);
    }
}

bs_dims bs_dims_of(const hg_tensor *x, int64_t OH, int64_t OW)
{
    return bs_dims{x->shape[0], x->shape[1], x->shape[2], x->shape[3], OH, OW};
}

template <typename S, typename G>
hg_status bs_sample(const hg_op_def *op, cudaStream_t s, const hg_tensor *x, const G *grid,
                    hg_tensor *y, int64_t OH, int64_t OW)
{
    const bs_dims d = bs_dims_of(x, OH, OW);
    const int64_t n = d.N * d.C * OH * OW;
    if (n == 0) return HG_OK;
    bs_fwd_kernel<S, G> LAUNCH(n)((const S *)hg_data(x), grid, (S *)hg_data(y), d);
    return hg_cuda_launched(op->name);
}

GPU_FWD(bs_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[0]->dtype,
                    return bs_sample<S, S>(op, s, in[0], (const S *)hg_data(in[1]), out[0],
                                           in[1]->shape[2], in[1]->shape[3]));
    return HG_OK;
}

/* _backward_BilinearSampler(ograd, data, grid) -> (data grad, grid grad). */
template <typename S>
hg_status bs_bw_typed(const hg_op_def *op, int dev, cudaStream_t s, hg_tensor *const *in,
                      hg_tensor *const *out)
{
    typedef typename hg_det::acc_of<S>::type A;
    const bs_dims d = bs_dims_of(in[1], in[2]->shape[2], in[2]->shape[3]);
    accum<A> acc;
    HG_TRY((hg_det::accum_begin<A, S>(op, dev, s, out[0], &acc)));
    hg_status st = HG_OK;
    if (d.N * d.OH * d.OW > 0) {
        bs_bwd_kernel<S, A> LAUNCH(d.N * d.OH *
                                   d.OW)((const S *)hg_data(in[0]), (const S *)hg_data(in[1]),
                                         (const S *)hg_data(in[2]), acc.p, (S *)hg_data(out[1]), d);
        st = hg_cuda_launched(op->name);
    }
    return hg_det::accum_end<A, S>(op, dev, s, out[0], &acc, st);
}

GPU_FWD(bs_bw_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[1]->dtype, return bs_bw_typed<S>(op, ctx->device_id, s, in, out));
    return HG_OK;
}

/* ---- SpatialTransformer ----------------------------------------------------------------- */

/* The affine grid of loc in device scratch (the compute type, as the CPU's workspace), then
 * the bilinear sampler. The gradient is built from GridGenerator and BilinearSampler ops. */
template <typename S>
hg_status st_typed(const hg_op_def *op, const hg_attrs *a, int dev, cudaStream_t s,
                   hg_tensor *const *in, hg_tensor *const *out)
{
    typedef typename hg_det::acc_of<S>::type T;
    const int64_t N = in[0]->shape[0], H = a->v[ST_TARGET].t.v[0], W = a->v[ST_TARGET].t.v[1];
    if (N == 0 || out[0]->size == 0) return HG_OK;
    const size_t nb = (size_t)(N * 2 * H * W) * sizeof(T);
    void *grid = NULL;
    HG_TRY(hg_device_alloc(dev, nb, &grid));
    gg_affine_kernel<S, T> LAUNCH(N * H * W)((const S *)hg_data(in[1]), (T *)grid, N, H, W,
                                             steps_of<T>(H, W));
    hg_status st = hg_cuda_launched(op->name);
    if (st == HG_OK) st = bs_sample<S, T>(op, s, in[0], (const T *)grid, out[0], H, W);
    hg_device_free(dev, grid, nb);
    return st;
}

GPU_FWD(st_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[0]->dtype, return st_typed<S>(op, a, ctx->device_id, s, in, out));
    return HG_OK;
}

/* ---- Correlation ------------------------------------------------------------------------ */

/* spatial.c's co_geom, from the attributes and data's shape (checked by the shape rule). */
struct co_geom {
    int64_t N, C, H, W, OC, OH, OW, k, maxd, s1, s2, pad, R, GW;
    bool mult;
};

co_geom co_geometry(const hg_attrs *a, const hg_tensor *x)
{
    co_geom g;
    g.k = a->v[CO_KERNEL].i, g.maxd = a->v[CO_MAXD].i, g.s1 = a->v[CO_STRIDE1].i;
    g.s2 = a->v[CO_STRIDE2].i, g.pad = a->v[CO_PAD].i, g.mult = a->v[CO_MULT].b;
    g.R = g.maxd / g.s2, g.GW = 2 * g.R + 1, g.OC = g.GW * g.GW;
    g.N = x->shape[0], g.C = x->shape[1], g.H = x->shape[2], g.W = x->shape[3];
    const int64_t border = g.maxd + (g.k - 1) / 2;
    const int64_t pw = g.W + 2 * g.pad - 2 * border, ph = g.H + 2 * g.pad - 2 * border;
    g.OW = pw > 0 ? (pw + g.s1 - 1) / g.s1 : 0;
    g.OH = ph > 0 ? (ph + g.s1 - 1) / g.s1 : 0;
    return g;
}

/* Output element e's (n, displacement, y1, x1, y2, x2): patch corners in padded coordinates. */
struct co_pos {
    int64_t n, y1, x1, y2, x2;
};

__device__ __forceinline__ co_pos co_pos_of(const co_geom &g, int64_t e)
{
    const int64_t jj = e % g.OW, i = (e / g.OW) % g.OH, tc = (e / (g.OW * g.OH)) % g.OC;
    co_pos p;
    p.n = e / (g.OW * g.OH * g.OC);
    p.x1 = jj * g.s1 + g.maxd, p.y1 = i * g.s1 + g.maxd;
    p.x2 = p.x1 + (tc % g.GW - g.R) * g.s2, p.y2 = p.y1 + (tc / g.GW - g.R) * g.s2;
    return p;
}

template <typename S> __global__ void co_fwd_kernel(const S *x1, const S *x2, S *y, co_geom g)
{
    typedef typename hg_det::acc_of<S>::type T;
    const T sum = (T)(g.k * g.k * g.C);
    const int64_t HW = g.H * g.W;
    GRID_LOOP(e, g.N * g.OC * g.OH * g.OW)
    {
        const co_pos p = co_pos_of(g, e);
        const S *a = x1 + p.n * g.C * HW, *b = x2 + p.n * g.C * HW;
        T acc = 0;
        for (int64_t h = 0; h < g.k; h++)
            for (int64_t w = 0; w < g.k; w++) {
                const int64_t ay = p.y1 + h - g.pad, ax = p.x1 + w - g.pad;
                const int64_t by = p.y2 + h - g.pad, bx = p.x2 + w - g.pad;
                const bool ain = ay >= 0 && ay < g.H && ax >= 0 && ax < g.W;
                const bool bin = by >= 0 && by < g.H && bx >= 0 && bx < g.W;
                for (int64_t c = 0; c < g.C; c++) {
                    const T u = ain ? (T)ldv(a, c * HW + ay * g.W + ax) : (T)0;
                    const T v = bin ? (T)ldv(b, c * HW + by * g.W + bx) : (T)0;
                    acc = add(acc, g.mult ? mul(u, v) : (T)fabs((double)(u - v)));
                }
            }
        stv(y, e, acc / sum);
    }
}

/* One thread per output element; its patch gradients added atomically into da, db (type A). */
template <typename S, typename A>
__global__ void co_bwd_kernel(const S *dy, const S *x1, const S *x2, A *da, A *db, co_geom g)
{
    typedef typename hg_det::acc_of<S>::type T;
    const T sum = (T)(g.k * g.k * g.C);
    const int64_t HW = g.H * g.W;
    GRID_LOOP(e, g.N * g.OC * g.OH * g.OW)
    {
        const co_pos p = co_pos_of(g, e);
        const int64_t base = p.n * g.C * HW;
        const S *a = x1 + base, *b = x2 + base;
        A *pa = da + base, *pb = db + base;
        const T d = ldv(dy, e) / sum;
        for (int64_t h = 0; h < g.k; h++)
            for (int64_t w = 0; w < g.k; w++) {
                const int64_t ay = p.y1 + h - g.pad, ax = p.x1 + w - g.pad;
                const int64_t by = p.y2 + h - g.pad, bx = p.x2 + w - g.pad;
                const bool ain = ay >= 0 && ay < g.H && ax >= 0 && ax < g.W;
                const bool bin = by >= 0 && by < g.H && bx >= 0 && bx < g.W;
                for (int64_t c = 0; c < g.C; c++) {
                    const int64_t ia = c * HW + ay * g.W + ax, ib = c * HW + by * g.W + bx;
                    const T u = ain ? (T)ldv(a, ia) : (T)0;
                    const T v = bin ? (T)ldv(b, ib) : (T)0;
                    if (g.mult) {
                        if (ain) hg_det::atomic_add(pa + ia, (A)mul(d, v));
                        if (bin) hg_det::atomic_add(pb + ib, (A)mul(d, u));
                    } else {
                        const T sg = mul(d, u >= v ? (T)1 : (T)-1);
                        if (ain) hg_det::atomic_add(pa + ia, (A)sg);
                        if (bin) hg_det::atomic_add(pb + ib, (A)-sg);
                    }
                }
            }
    }
}

GPU_FWD(co_gpu)
{
    STREAM;
    const co_geom g = co_geometry(a, in[0]);
    const int64_t n = g.N * g.OC * g.OH * g.OW;
    if (n == 0) return HG_OK;
    HG_DET_DISPATCH(op, in[0]->dtype,
                    co_fwd_kernel<S> LAUNCH(n)((const S *)hg_data(in[0]), (const S *)hg_data(in[1]),
                                               (S *)hg_data(out[0]), g));
    return hg_cuda_launched(op->name);
}

/* _backward_Correlation(ograd, data1, data2) -> (data1 grad, data2 grad). */
template <typename S>
hg_status co_bw_typed(const hg_op_def *op, const hg_attrs *a, int dev, cudaStream_t s,
                      hg_tensor *const *in, hg_tensor *const *out)
{
    typedef typename hg_det::acc_of<S>::type A;
    const co_geom g = co_geometry(a, in[1]);
    const int64_t n = g.N * g.OC * g.OH * g.OW;
    accum<A> da, db;
    HG_TRY((hg_det::accum_begin<A, S>(op, dev, s, out[0], &da)));
    hg_status st = hg_det::accum_begin<A, S>(op, dev, s, out[1], &db);
    if (st != HG_OK) return hg_det::accum_end<A, S>(op, dev, s, out[0], &da, st);
    if (n > 0) {
        co_bwd_kernel<S, A> LAUNCH(n)((const S *)hg_data(in[0]), (const S *)hg_data(in[1]),
                                      (const S *)hg_data(in[2]), da.p, db.p, g);
        st = hg_cuda_launched(op->name);
    }
    st = hg_det::accum_end<A, S>(op, dev, s, out[0], &da, st);
    return hg_det::accum_end<A, S>(op, dev, s, out[1], &db, st);
}

GPU_FWD(co_bw_gpu)
{
    STREAM;
    HG_DET_DISPATCH(op, in[1]->dtype, return co_bw_typed<S>(op, a, ctx->device_id, s, in, out));
    return HG_OK;
}

/* ---- DeformableConvolution, ModulatedDeformableConvolution -------------------------------- */

/* deform_conv.c's dc_geom. */
struct dc_geom {
    int64_t n, c, h, w, f, g, dg, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
    bool mod;
};

int64_t tup(const hg_tuple *t, int i, int64_t def) { return t->n == 2 ? t->v[i] : def; }

/* The geometry from the attributes, data and a tensor of the output's shape. */
dc_geom dc_geom_of(const hg_attrs *a, bool mod, const hg_tensor *data, const hg_tensor *out_like)
{
    dc_geom g;
    g.kh = a->v[D_KERNEL].t.v[0], g.kw = a->v[D_KERNEL].t.v[1];
    g.sh = tup(&a->v[D_STRIDE].t, 0, 1), g.sw = tup(&a->v[D_STRIDE].t, 1, 1);
    g.dh = tup(&a->v[D_DILATE].t, 0, 1), g.dw = tup(&a->v[D_DILATE].t, 1, 1);
    g.ph = tup(&a->v[D_PAD].t, 0, 0), g.pw = tup(&a->v[D_PAD].t, 1, 0);
    g.f = a->v[D_NUM_FILTER].i, g.g = a->v[D_NUM_GROUP].i, g.dg = a->v[D_NUM_DG].i;
    g.mod = mod;
    g.n = data->shape[0], g.c = data->shape[1], g.h = data->shape[2], g.w = data->shape[3];
    g.ho = out_like->shape[2], g.wo = out_like->shape[3];
    return g;
}

/* The taps of a sample at (y, x): indices, weights and the weights' derivatives in y and x,
 * as deform_conv.c's taps(); returns how many (0 outside the region the variant reads). */
__device__ int dc_taps(const dc_geom &g, double y, double x, int64_t *idx, double *wt, double *wy,
                       double *wx)
{
    const int64_t H = g.h, W = g.w;
    if (!g.mod) {
        if (!(y >= 0 && x >= 0 && y < (double)H && x < (double)W)) return 0;
        int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(x), y1, x1;
        double sy = 1, sx = 1;
        if (y0 >= H - 1) y1 = y0, y = (double)y0, sy = 0;
        else y1 = y0 + 1;
        if (x0 >= W - 1) x1 = x0, x = (double)x0, sx = 0;
        else x1 = x0 + 1;
        const double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
        idx[0] = y0 * W + x0, idx[1] = y0 * W + x1, idx[2] = y1 * W + x0, idx[3] = y1 * W + x1;
        wt[0] = __dmul_rn(hy, hx), wt[1] = __dmul_rn(hy, lx);
        wt[2] = __dmul_rn(ly, hx), wt[3] = __dmul_rn(ly, lx);
        wy[0] = __dmul_rn(-hx, sy), wy[1] = __dmul_rn(-lx, sy);
        wy[2] = __dmul_rn(hx, sy), wy[3] = __dmul_rn(lx, sy);
        wx[0] = __dmul_rn(-hy, sx), wx[1] = __dmul_rn(hy, sx);
        wx[2] = __dmul_rn(-ly, sx), wx[3] = __dmul_rn(ly, sx);
        return 4;
    }
    if (!(y > -1 && x > -1 && y < (double)H && x < (double)W)) return 0;
    const int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(x);
    const double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    const double w4[4] = {__dmul_rn(hy, hx), __dmul_rn(hy, lx), __dmul_rn(ly, hx),
                          __dmul_rn(ly, lx)};
    const double dy4[4] = {-hx, -lx, hx, lx}, dx4[4] = {-hy, hy, -ly, ly};
    int n = 0;
    for (int k = 0; k < 4; k++) {
        const int64_t yy = y0 + (k >> 1), xx = x0 + (k & 1);
        if (yy < 0 || yy > H - 1 || xx < 0 || xx > W - 1) continue;
        idx[n] = yy * W + xx, wt[n] = w4[k], wy[n] = dy4[k], wx[n] = dx4[k];
        n++;
    }
    return n;
}

/* Sample (c, k, p) of image n: its position, the index of its (dy) offset and its mask. */
struct dc_sample {
    double y, x;
    int64_t oi, mi;
};

__device__ __forceinline__ dc_sample dc_sample_of(const dc_geom &g, const void *off, int dt,
                                                  int64_t n, int64_t c, int64_t k, int64_t p)
{
    const int64_t P = g.ho * g.wo, kk = g.kh * g.kw, d = c / (g.c / g.dg);
    const int64_t i = k / g.kw, j = k % g.kw, oy = p / g.wo, ox = p % g.wo;
    dc_sample s;
    s.oi = ((n * g.dg + d) * 2 * kk + 2 * k) * P + p;
    s.mi = ((n * g.dg + d) * kk + k) * P + p;
    s.y = (double)(oy * g.sh - g.ph + i * g.dh) + hg_tx::ld(off, dt, s.oi);
    s.x = (double)(ox * g.sw - g.pw + j * g.dw) + hg_tx::ld(off, dt, s.oi + P);
    return s;
}

/* col[(c * kk + k) * P + p]: the (masked) samples of image n, in double. */
__global__ void dc_im2col_kernel(dc_geom g, const void *x, const void *off, const void *mask,
                                 int dt, int64_t n, double *col)
{
    const int64_t P = g.ho * g.wo, kk = g.kh * g.kw;
    GRID_LOOP(e, g.c * kk * P)
    {
        const int64_t p = e % P, k = (e / P) % kk, c = e / (P * kk);
        const dc_sample s = dc_sample_of(g, off, dt, n, c, k, p);
        int64_t idx[4];
        double wt[4], wy[4], wx[4];
        const int nt = dc_taps(g, s.y, s.x, idx, wt, wy, wx);
        const int64_t plane = (n * g.c + c) * g.h * g.w;
        double v = 0;
        for (int t = 0; t < nt; t++)
            v = __dadd_rn(v, __dmul_rn(wt[t], hg_tx::ld(x, dt, plane + idx[t])));
        if (mask) v = __dmul_rn(v, hg_tx::ld(mask, dt, s.mi));
        col[e] = v;
    }
}

/* The column gradient of image n back to the data, offsets and mask (double, atomics). */
__global__ void dc_col_grad_kernel(dc_geom g, const void *x, const void *off, const void *mask,
                                   int dt, int64_t n, const double *dcol, double *dx, double *doff,
                                   double *dmask)
{
    const int64_t P = g.ho * g.wo, kk = g.kh * g.kw;
    GRID_LOOP(e, g.c * kk * P)
    {
        const double gv = dcol[e];
        if (gv == 0) continue;
        const int64_t p = e % P, k = (e / P) % kk, c = e / (P * kk);
        const dc_sample s = dc_sample_of(g, off, dt, n, c, k, p);
        int64_t idx[4];
        double wt[4], wy[4], wx[4];
        const int nt = dc_taps(g, s.y, s.x, idx, wt, wy, wx);
        const int64_t plane = (n * g.c + c) * g.h * g.w;
        const double m = mask ? hg_tx::ld(mask, dt, s.mi) : 1, mg = __dmul_rn(m, gv);
        double v = 0, vy = 0, vx = 0;
        for (int t = 0; t < nt; t++) {
            const double d = hg_tx::ld(x, dt, plane + idx[t]);
            v = __dadd_rn(v, __dmul_rn(wt[t], d));
            vy = __dadd_rn(vy, __dmul_rn(wy[t], d));
            vx = __dadd_rn(vx, __dmul_rn(wx[t], d));
            atomicAdd(dx + plane + idx[t], __dmul_rn(mg, wt[t]));
        }
        atomicAdd(doff + s.oi, __dmul_rn(mg, vy));
        atomicAdd(doff + s.oi + P, __dmul_rn(mg, vx));
        if (dmask) atomicAdd(dmask + s.mi, __dmul_rn(gv, v));
    }
}

__global__ void to_double_kernel(const void *src, int dt, double *dst, int64_t n)
{
    GRID_LOOP(i, n) dst[i] = hg_tx::ld(src, dt, i);
}

__global__ void from_double_kernel(const double *src, void *dst, int dt, int64_t n)
{
    GRID_LOOP(i, n) hg_tx::st(dst, dt, i, src[i]);
}

/* y[n, f, p] = bias[f] (0 without one). */
__global__ void dc_bias_kernel(const void *b, int dt, double *y, int64_t f, int64_t P,
                               int64_t total)
{
    GRID_LOOP(e, total) y[e] = b ? hg_tx::ld(b, dt, (e / P) % f) : 0;
}

/* db[f] = the sum of dy[n, f, p] over n then p (the CPU's order). */
__global__ void dc_db_kernel(const double *dy, double *db, int64_t N, int64_t F, int64_t P)
{
    GRID_LOOP(f, F)
    {
        double s = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t p = 0; p < P; p++) s = __dadd_rn(s, dy[(n * F + f) * P + p]);
        db[f] = s;
    }
}

/* A double view of tensor t: t itself when it is float64, else a converted copy in sc. */
double *as_double(cudaStream_t s, scratch *sc, const hg_tensor *t)
{
    if (t->dtype == HG_DTYPE_F64) return (double *)hg_data(t);
    double *d = carve<double>(sc, t->size);
    if (t->size > 0) to_double_kernel LAUNCH(t->size)(hg_data(t), (int)t->dtype, d, t->size);
    return d;
}

size_t dbl_bytes(const hg_tensor *t)
{
    return t->dtype == HG_DTYPE_F64 ? 0 : piece(sizeof(double), t->size);
}

/* Stores the double result d into t unless d is t's own memory. */
hg_status store_double(const char *name, cudaStream_t s, const double *d, hg_tensor *t)
{
    if (t->size == 0 || (const void *)d == hg_data(t)) return HG_OK;
    from_double_kernel LAUNCH(t->size)(d, hg_data(t), (int)t->dtype, t->size);
    return hg_cuda_launched(name);
}

/* Forward: per image, the column buffer then one GEMM per group (batched), in double. */
hg_status dc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, bool mod,
                     int nin, hg_tensor *const *in, hg_tensor *const *out)
{
    STREAM;
    const dc_geom g = dc_geom_of(a, mod, in[0], out[0]);
    const int wi = mod ? 3 : 2;
    const bool bias = nin > wi + 1;
    const int dt = (int)in[0]->dtype;
    const int64_t P = g.ho * g.wo, kk = g.kh * g.kw, cg = g.c / g.g, fg = g.f / g.g;
    if (out[0]->size == 0) return HG_OK;
    scratch sc = {NULL, 0, 0};
    sc.n = dbl_bytes(in[wi]) + dbl_bytes(out[0]) + piece(sizeof(double), g.c * kk * P);
    HG_TRY(hg_device_alloc(ctx->device_id, sc.n, (void **)&sc.p));
    const double *w = as_double(s, &sc, in[wi]);
    double *y = dt == HG_DTYPE_F64 ? (double *)hg_data(out[0]) : carve<double>(&sc, out[0]->size);
    double *col = carve<double>(&sc, g.c * kk * P);
    dc_bias_kernel LAUNCH(out[0]->size)(bias ? hg_data(in[wi + 1]) : NULL, dt, y, g.f, P,
                                        out[0]->size);
    hg_status st = hg_cuda_launched(op->name);
    for (int64_t n = 0; n < g.n && st == HG_OK && g.c * kk * P > 0; n++) {
        dc_im2col_kernel LAUNCH(g.c * kk * P)(g, hg_data(in[0]), hg_data(in[1]),
                                              mod ? hg_data(in[2]) : NULL, dt, n, col);
        st = hg_cuda_launched(op->name);
        if (st == HG_OK)
            st = hg_gemm_rm(ctx->device_id, op->name, HG_DTYPE_F64, 0, 0, fg, P, cg * kk, 1.0, w,
                            cg * kk, fg * cg * kk, col, P, cg * kk * P, 1.0, y + n * g.f * P, P,
                            fg * P, g.g);
    }
    if (st == HG_OK) st = store_double(op->name, s, y, out[0]);
    hg_device_free(ctx->device_id, sc.p, sc.n);
    return st;
}

GPU_FWD(dc_gpu) { return dc_forward(op, a, ctx, false, nin, in, out); }
GPU_FWD(mdc_gpu) { return dc_forward(op, a, ctx, true, nin, in, out); }

/* Backward (ograd, data, offset, [mask,] weight) -> (data, offset, [mask,] weight[, bias]):
 * per image the column buffer, the column gradient W^T dy and the weight gradient dy col^T
 * (GEMMs per group), then the column gradient through the samples. */
hg_status dc_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, bool mod,
                      int nout, hg_tensor *const *in, hg_tensor *const *out)
{
    STREAM;
    const dc_geom g = dc_geom_of(a, mod, in[1], in[0]);
    const int wi = mod ? 4 : 3, wo = mod ? 3 : 2;
    const bool bias = nout > wo + 1;
    const int dt = (int)in[1]->dtype;
    const int64_t P = g.ho * g.wo, kk = g.kh * g.kw, cg = g.c / g.g, fg = g.f / g.g;
    const int64_t ncol = g.c * kk * P;
    scratch sc = {NULL, 0, 0};
    sc.n = dbl_bytes(in[0]) + dbl_bytes(in[wi]) + 2 * piece(sizeof(double), ncol);
    for (int k = 0; k < nout; k++) sc.n += piece(sizeof(double), out[k]->size);
    HG_TRY(hg_device_alloc(ctx->device_id, sc.n, (void **)&sc.p));
    const double *dy = as_double(s, &sc, in[0]), *w = as_double(s, &sc, in[wi]);
    double *col = carve<double>(&sc, ncol), *dcol = carve<double>(&sc, ncol);
    double *acc[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; k < nout; k++) acc[k] = carve<double>(&sc, out[k]->size);
    hg_status st = hg_cuda_status(
        cudaMemsetAsync(acc[0], 0, sc.n - (size_t)((char *)acc[0] - sc.p), s), op->name);
    double *dx = acc[0], *doff = acc[1], *dmask = mod ? acc[2] : NULL, *dw = acc[wo];
    for (int64_t n = 0; n < g.n && st == HG_OK && ncol > 0; n++) {
        const double *dyn = dy + n * g.f * P;
        dc_im2col_kernel LAUNCH(ncol)(g, hg_data(in[1]), hg_data(in[2]),
                                      mod ? hg_data(in[3]) : NULL, dt, n, col);
        st = hg_cuda_launched(op->name);
        if (st == HG_OK)
            st = hg_gemm_rm(ctx->device_id, op->name, HG_DTYPE_F64, 1, 0, cg * kk, P, fg, 1.0, w,
                            cg * kk, fg * cg * kk, dyn, P, fg * P, 0.0, dcol, P, cg * kk * P, g.g);
        if (st == HG_OK)
            st = hg_gemm_rm(ctx->device_id, op->name, HG_DTYPE_F64, 0, 1, fg, cg * kk, P, 1.0, dyn,
                            P, fg * P, col, P, cg * kk * P, 1.0, dw, cg * kk, fg * cg * kk, g.g);
        if (st == HG_OK) {
            dc_col_grad_kernel LAUNCH(ncol)(g, hg_data(in[1]), hg_data(in[2]),
                                            mod ? hg_data(in[3]) : NULL, dt, n, dcol, dx, doff,
                                            dmask);
            st = hg_cuda_launched(op->name);
        }
    }
    if (st == HG_OK && bias && g.f > 0) {
        dc_db_kernel LAUNCH(g.f)(dy, acc[wo + 1], g.n, g.f, P);
        st = hg_cuda_launched(op->name);
    }
    for (int k = 0; k < nout && st == HG_OK; k++) st = store_double(op->name, s, acc[k], out[k]);
    hg_device_free(ctx->device_id, sc.p, sc.n);
    return st;
}

GPU_FWD(dc_bw_gpu) { return dc_backward(op, a, ctx, false, nout, in, out); }
GPU_FWD(mdc_bw_gpu) { return dc_backward(op, a, ctx, true, nout, in, out); }

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_spatial[] = {
    {"GridGenerator", gg_gpu},
    {"_backward_GridGenerator", gg_bw_gpu},
    {"BilinearSampler", bs_gpu},
    {"_backward_BilinearSampler", bs_bw_gpu},
    {"SpatialTransformer", st_gpu},
    {"Correlation", co_gpu},
    {"_backward_Correlation", co_bw_gpu},
    {"_contrib_DeformableConvolution", dc_gpu},
    {"_backward_contrib_DeformableConvolution", dc_bw_gpu},
    {"_contrib_ModulatedDeformableConvolution", mdc_gpu},
    {"_backward_contrib_ModulatedDeformableConvolution", mdc_bw_gpu},
    {NULL, NULL},
};
