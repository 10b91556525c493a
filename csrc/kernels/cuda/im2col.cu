/* hg_gpu_kernels_im2col: GPU kernels of im2col, col2im and _backward_im2col (ops/spatial.c).
 *
 * The geometry is spatial.c's: 1-D and 2-D windows are 3-D ones with leading sizes 1, columns
 * (N, C * prod(kernel), blocks) with rows in (channel, kernel offset) order. im2col gathers one
 * column entry per thread (zero outside the image). col2im is a gather too: each image element
 * adds the column entries that land on it in kernel-offset order, which is the order in which
 * the CPU's scatter adds them into its zeroed image (each kernel offset reaches an element at
 * most once), so the sums are the CPU's bit for bit. float16 computes in float32 and rounds
 * once, as the CPU's float32 copies do. */
#include <stdint.h>

#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

namespace
{

struct geom {
    int64_t C, im[3], out[3], k[3], s[3], d[3], p[3];
};

/* spatial.c's sliding_geom without its checks (infer made them): the attributes from index
 * base (kernel, stride, dilate, pad), image spatial sizes im (as many as kernel has). */
geom make_geom(const hg_attrs *a, int base, const int64_t *im, int64_t C)
{
    geom g;
    const hg_tuple *k = &a->v[base].t;
    const int nsp = k->n, off = 3 - nsp;
    g.C = C;
    for (int i = 0; i < 3; i++) {
        const int j = i - off;
        const bool real = j >= 0;
        g.k[i] = real ? k->v[j] : 1;
        g.s[i] = real && a->v[base + 1].t.n ? a->v[base + 1].t.v[j] : 1;
        g.d[i] = real && a->v[base + 2].t.n ? a->v[base + 2].t.v[j] : 1;
        g.p[i] = real && a->v[base + 3].t.n ? a->v[base + 3].t.v[j] : 0;
        g.im[i] = real ? im[j] : 1;
        const int64_t span = g.d[i] * (g.k[i] - 1) + 1, padded = g.im[i] + 2 * g.p[i];
        g.out[i] = (padded - span) / g.s[i] + 1;
    }
    return g;
}

template <typename T> struct acc_of {
    typedef T type;
};
template <> struct acc_of<uint16_t> {
    typedef float type;
};

__device__ __forceinline__ float ldv(uint16_t v) { return h2f(v); }
__device__ __forceinline__ float ldv(float v) { return v; }
__device__ __forceinline__ double ldv(double v) { return v; }
__device__ __forceinline__ void stv(uint16_t *p, float v) { *p = f2h(v); }
__device__ __forceinline__ void stv(float *p, float v) { *p = v; }
__device__ __forceinline__ void stv(double *p, double v) { *p = v; }

/* col[n, (c, k0, k1, k2), (o0, o1, o2)] = x[n, c, o*s - p + k*d] (0 outside the image). */
template <typename T> __global__ void im2col_kernel(const T *x, T *col, geom g, int64_t total)
{
    const int64_t O = g.out[0] * g.out[1] * g.out[2], K = g.k[0] * g.k[1] * g.k[2];
    const int64_t I = g.im[0] * g.im[1] * g.im[2];
    GRID_LOOP(e, total)
    {
        const int64_t o = e % O, row = e / O, kk = row % K, nc = row / K;
        const int64_t o2 = o % g.out[2], o1 = (o / g.out[2]) % g.out[1],
                      o0 = o / (g.out[2] * g.out[1]);
        const int64_t k2 = kk % g.k[2], k1 = (kk / g.k[2]) % g.k[1], k0 = kk / (g.k[2] * g.k[1]);
        const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
        const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
        const int64_t i2 = o2 * g.s[2] - g.p[2] + k2 * g.d[2];
        typename acc_of<T>::type v = 0;
        if (i0 >= 0 && i0 < g.im[0] && i1 >= 0 && i1 < g.im[1] && i2 >= 0 && i2 < g.im[2])
            v = ldv(x[nc * I + (i0 * g.im[1] + i1) * g.im[2] + i2]);
        stv(col + e, v);
    }
}

/* The grid position o along one dim whose window places kernel offset k on image index i, or
 * -1 when none does. */
__device__ __forceinline__ int64_t grid_pos(int64_t i, int64_t k, const geom &g, int d)
{
    const int64_t t = i + g.p[d] - k * g.d[d];
    if (t < 0 || t % g.s[d] != 0) return -1;
    const int64_t o = t / g.s[d];
    return o < g.out[d] ? o : -1;
}

/* x[n, c, i] = the sum, over kernel offsets in order, of the column entries that im2col took
 * from element i. */
template <typename T> __global__ void col2im_kernel(const T *col, T *x, geom g, int64_t total)
{
    const int64_t O = g.out[0] * g.out[1] * g.out[2], K = g.k[0] * g.k[1] * g.k[2];
    const int64_t I = g.im[0] * g.im[1] * g.im[2];
    GRID_LOOP(e, total)
    {
        const int64_t i = e % I, nc = e / I;
        const int64_t i2 = i % g.im[2], i1 = (i / g.im[2]) % g.im[1], i0 = i / (g.im[2] * g.im[1]);
        const T *cp = col + nc * K * O;
        typename acc_of<T>::type sum = 0;
        int64_t kk = 0;
        for (int64_t k0 = 0; k0 < g.k[0]; k0++) {
            const int64_t o0 = grid_pos(i0, k0, g, 0);
            for (int64_t k1 = 0; k1 < g.k[1]; k1++) {
                const int64_t o1 = grid_pos(i1, k1, g, 1);
                for (int64_t k2 = 0; k2 < g.k[2]; k2++, kk++) {
                    const int64_t o2 = grid_pos(i2, k2, g, 2);
                    if (o0 < 0 || o1 < 0 || o2 < 0) continue;
                    sum += ldv(cp[kk * O + (o0 * g.out[1] + o1) * g.out[2] + o2]);
                }
            }
        }
        stv(x + e, sum);
    }
}

/* to_col: x (N*C images) -> col; else col -> x (dst, N*C images of g.im). */
hg_status sliding_run(const hg_op_def *op, const hg_exec_ctx *ctx, bool to_col, const geom &g,
                      const hg_tensor *src, hg_tensor *dst)
{
    STREAM;
    const int64_t n = dst->size;
    if (n == 0) return HG_OK;
#define SLIDE(T)                                                                               \
    do {                                                                                       \
        if (to_col) im2col_kernel<T> LAUNCH(n)((const T *)hg_data(src), (T *)hg_data(dst), g, n); \
        else col2im_kernel<T> LAUNCH(n)((const T *)hg_data(src), (T *)hg_data(dst), g, n);     \
    } while (0)
    switch (dst->dtype) {
    case HG_DTYPE_F32: SLIDE(float); break;
    case HG_DTYPE_F64: SLIDE(double); break;
    case HG_DTYPE_F16: SLIDE(uint16_t); break;
    default: return bad_dtype(op, dst->dtype);
    }
#undef SLIDE
    return hg_cuda_launched(op->name);
}

/* im2col's schema: kernel, stride, dilate, pad from 0; col2im's: output_size, then those. */
GPU_FWD(im2col_gpu)
{
    const hg_tensor *x = in[0];
    const geom g = make_geom(a, 0, x->shape + 2, x->shape[1]);
    return sliding_run(op, ctx, true, g, x, out[0]);
}

GPU_FWD(col2im_gpu)
{
    const int64_t K = a->v[1].t.v[0] * (a->v[1].t.n > 1 ? a->v[1].t.v[1] : 1) *
                      (a->v[1].t.n > 2 ? a->v[1].t.v[2] : 1);
    const geom g = make_geom(a, 1, a->v[0].t.v, in[0]->shape[1] / K);
    return sliding_run(op, ctx, false, g, in[0], out[0]);
}

/* (ograd, data) -> col2im of ograd onto data's shape. */
GPU_FWD(im2col_bwd_gpu)
{
    const hg_tensor *x = in[1];
    const geom g = make_geom(a, 0, x->shape + 2, x->shape[1]);
    return sliding_run(op, ctx, false, g, in[0], out[0]);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_im2col[] = {
    {"im2col", im2col_gpu},
    {"col2im", col2im_gpu},
    {"_backward_im2col", im2col_bwd_gpu},
    {NULL, NULL},
};
