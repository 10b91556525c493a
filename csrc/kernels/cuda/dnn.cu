/* GPU kernels of the convnet ops: Convolution and Deconvolution with their gradients (cuDNN,
 * kernels/cuda/cudnn.c), Pooling and BatchNorm with their gradients (direct kernels here).
 *
 * Convolution is cuDNN's three products (cudnn.h): the forward, the data gradient and the
 * weight gradient; Deconvolution's forward is Convolution's data gradient with the roles of data
 * and output swapped, so it takes the same products the other way round (ops/deconv.c says
 * why). The bias is added, and its gradient summed per channel, by small kernels here. Every
 * case the CPU runs (1-D as 2-D with a unit height, 2-D, 3-D; groups, dilation) maps onto
 * cuDNN's NCHW / NCDHW descriptors; channel-last layouts are refused as the CPU refuses them.
 *
 * Pooling and BatchNorm are direct kernels rather than cuDNN's because their CPU semantics are
 * MXNet's own and cuDNN's differ: pooling's 'full' convention (windows clipped at the padded
 * end), lp pooling, max's gradient to the first maximal element of a window, channel-last
 * layouts; BatchNorm's inverse-std output, moving statistics updated by the backward op from
 * that inverse std, eps below cuDNN's minimum, any axis. The kernels follow the CPU code of
 * ops/pool.c and ops/norm.c step for step (windows, divisors, accumulation types): pooling one
 * thread per output element (its average / lp gradient one thread per data element, gathering
 * in the CPU's order; max's gradient with atomic adds), BatchNorm's channel sums in double over
 * chunks added in a fixed order (deterministic), then element-wise kernels.
 */
#include <cuda_fp16.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "ops/conv.h"
#include "ops/deconv.h"
#include "ops/norm.h"
#include "ops/pool.h"
}

namespace
{

/* ---- shared helpers -------------------------------------------------------------------------- */

/* Element type T computed in A (float16 in float). */
template <typename T> struct acc_of {
    typedef T type;
};
template <> struct acc_of<uint16_t> {
    typedef float type;
};

template <typename A, typename T> __device__ __forceinline__ A ld(T v) { return (A)v; }
template <> __device__ __forceinline__ float ld<float, uint16_t>(uint16_t v) { return h2f(v); }
template <typename T, typename A> __device__ __forceinline__ T st(A v) { return (T)v; }
template <> __device__ __forceinline__ uint16_t st<uint16_t, float>(float v) { return f2h(v); }

template <typename A> __device__ __forceinline__ A lowest();
template <> __device__ __forceinline__ float lowest<float>() { return -FLT_MAX; }
template <> __device__ __forceinline__ double lowest<double>() { return -DBL_MAX; }

/* Three extents, passed to kernels by value. */
struct dev_grid {
    int64_t v[3];
};

hg_status zero_fill(const char *name, cudaStream_t s, hg_tensor *t)
{
    size_t n = nbytes_of(t);
    if (n == 0) return HG_OK;
    return hg_cuda_status(cudaMemsetAsync(hg_data(t), 0, n, s), name);
}

/* ---- bias: add per channel, sum per channel ------------------------------------------------- */

/* y[n, f, p] += b[f] for y (rows of P elements, F channels). */
template <typename T>
__global__ void bias_add_kernel(T *y, const T *b, int64_t F, int64_t P, int64_t n)
{
    typedef typename acc_of<T>::type A;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = st<T, A>(ld<A, T>(y[i]) + ld<A, T>(b[(i / P) % F]));
}

/* y[n, f, p] = b[f] (a call with no input channels: the output is the bias alone). */
template <typename T>
__global__ void bias_fill_kernel(T *y, const T *b, int64_t F, int64_t P, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = b[(i / P) % F];
}

#define RED_THREADS 256

/* Sum of v over the block (blockDim.x == RED_THREADS), in a fixed order; every thread gets it. */
template <typename A> __device__ A block_sum(A v)
{
    __shared__ A buf[RED_THREADS];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int w = RED_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    A r = buf[0];
    __syncthreads();
    return r;
}

/* db[f] = sum over n, p of dy[n, f, p]; one block per channel (double sums for float32 and
 * float64, float for float16 as the CPU's float16 path). */
template <typename T>
__global__ void bias_grad_kernel(const T *dy, T *db, int64_t N, int64_t F, int64_t P)
{
    typedef typename acc_of<T>::type A0;
    typedef typename std::conditional<sizeof(T) == 2, float, double>::type A;
    for (int64_t f = blockIdx.x; f < F; f += gridDim.x) {
        A acc = 0;
        for (int64_t i = threadIdx.x; i < N * P; i += RED_THREADS) {
            const int64_t n = i / P, p = i % P;
            acc += (A)ld<A0, T>(dy[(n * F + f) * P + p]);
        }
        acc = block_sum<A>(acc);
        if (threadIdx.x == 0) db[f] = st<T, A0>((A0)acc);
    }
}

unsigned channel_blocks(int64_t c) { return (unsigned)(c < 1 ? 1 : c > 65535 ? 65535 : c); }

template <typename T>
hg_status bias_add_t(const char *name, cudaStream_t s, void *y, const void *b, int64_t F, int64_t P,
                     int64_t n, bool fill)
{
    if (n == 0) return HG_OK;
    if (fill)
        bias_fill_kernel<T>
            <<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>((T *)y, (const T *)b, F, P, n);
    else
        bias_add_kernel<T>
            <<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>((T *)y, (const T *)b, F, P, n);
    return hg_cuda_launched(name);
}

hg_status bias_add(const char *name, cudaStream_t s, hg_dtype dt, void *y, const void *b, int64_t F,
                   int64_t P, int64_t n, bool fill)
{
    switch (dt) {
    case HG_DTYPE_F32: return bias_add_t<float>(name, s, y, b, F, P, n, fill);
    case HG_DTYPE_F64: return bias_add_t<double>(name, s, y, b, F, P, n, fill);
    default: return bias_add_t<uint16_t>(name, s, y, b, F, P, n, fill);
    }
}

hg_status bias_grad(const char *name, cudaStream_t s, hg_dtype dt, const void *dy, void *db,
                    int64_t N, int64_t F, int64_t P)
{
    if (F == 0) return HG_OK;
    const unsigned blocks = channel_blocks(F);
    switch (dt) {
    case HG_DTYPE_F32:
        bias_grad_kernel<float>
            <<<blocks, RED_THREADS, 0, s>>>((const float *)dy, (float *)db, N, F, P);
        break;
    case HG_DTYPE_F64:
        bias_grad_kernel<double>
            <<<blocks, RED_THREADS, 0, s>>>((const double *)dy, (double *)db, N, F, P);
        break;
    default:
        bias_grad_kernel<uint16_t>
            <<<blocks, RED_THREADS, 0, s>>>((const uint16_t *)dy, (uint16_t *)db, N, F, P);
        break;
    }
    return hg_cuda_launched(name);
}

/* ---- Convolution ----------------------------------------------------------------------------- */

bool channel_last_layout(const hg_attrs *a, int idx)
{
    /* conv_common.h's layout enum: NCW, NCHW, NCDHW, NHWC, NDHWC */
    return !a->v[idx].is_none && a->v[idx].i >= 3;
}

hg_status refuse_layout(const hg_op_def *op, const hg_attrs *a, int idx)
{
    if (!channel_last_layout(a, idx)) return HG_OK;
    return hg_error(HG_ERR_UNSUPPORTED,
                    "%s: layout=%s is not supported (as in MXNet 1.9.1, only NCW, NCHW and NCDHW "
                    "run); shapes are inferred, but running it needs channel-first data: "
                    "transpose to %s",
                    op->name, a->v[idx].i == 3 ? "NHWC" : "NDHWC",
                    a->v[idx].i == 3 ? "NCHW" : "NCDHW");
}

int64_t tuple_at(const hg_attrs *a, int idx, int i, int64_t def)
{
    return a->v[idx].t.n == 0 ? def : a->v[idx].t.v[i];
}

/* The geometry of a Convolution call from its data x (N, C, *in) and output y (N, F, *out), as
 * conv.c's geom_full normalises it. */
hg_cudnn_conv conv_geom(const hg_attrs *a, const hg_tensor *x, const hg_tensor *y)
{
    hg_cudnn_conv c;
    memset(&c, 0, sizeof c);
    const int nsp = a->v[CV_KERNEL].t.n, off = 3 - nsp;
    c.dtype = x->dtype;
    c.nsp = nsp;
    c.N = x->shape[0];
    c.C = x->shape[1];
    c.F = a->v[CV_NUM_FILTER].i;
    c.G = a->v[CV_NUM_GROUP].i;
    for (int i = 0; i < 3; i++) {
        const bool real = i >= off;
        const int j = i - off;
        c.k[i] = real ? a->v[CV_KERNEL].t.v[j] : 1;
        c.s[i] = real ? tuple_at(a, CV_STRIDE, j, 1) : 1;
        c.d[i] = real ? tuple_at(a, CV_DILATE, j, 1) : 1;
        c.p[i] = real ? tuple_at(a, CV_PAD, j, 0) : 0;
        c.in[i] = real ? x->shape[2 + j] : 1;
        c.out[i] = real ? y->shape[2 + j] : 1;
    }
    const int64_t mb = a->v[CV_WORKSPACE].i;
    c.ws_limit = mb > 0 ? (size_t)mb << 20 : 0;
    return c;
}

int64_t spatial(const int64_t *v) { return v[0] * v[1] * v[2]; }

hg_status conv_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                   hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    HG_TRY(refuse_layout(op, a, CV_LAYOUT));
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    const hg_cudnn_conv c = conv_geom(a, in[0], out[0]);
    const void *bias = nin > 2 ? hg_data(in[2]) : NULL;
    const int64_t P = spatial(c.out), ny = out[0]->size;
    if (in[0]->size == 0 || in[1]->size == 0) { /* no input channels: the bias, or zeros */
        if (!bias) return zero_fill(op->name, s, out[0]);
        return bias_add(op->name, s, c.dtype, hg_data(out[0]), bias, c.F, P, ny, true);
    }
    HG_TRY(hg_cudnn_conv_run(ctx->device_id, op->name, HG_CUDNN_FWD, &c, hg_data(in[0]),
                             hg_data(in[1]), hg_data(out[0])));
    if (bias) HG_TRY(bias_add(op->name, s, c.dtype, hg_data(out[0]), bias, c.F, P, ny, false));
    return HG_OK;
}

/* _backward_Convolution(ograd, data, weight) -> (data grad, weight grad[, bias grad]);
 * grad_data / grad_weight = False leave zeros, as on the CPU. */
hg_status conv_bw_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    HG_TRY(refuse_layout(op, a, CV_LAYOUT));
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    const hg_cudnn_conv c = conv_geom(a, in[1], in[0]);
    const bool gd = a->v[CV_GRAD_DATA].b, gw = a->v[CV_GRAD_WEIGHT].b;
    const bool empty = in[1]->size == 0 || in[2]->size == 0 || in[0]->size == 0;
    if (!gd || empty) HG_TRY(zero_fill(op->name, s, out[0]));
    if (!gw || empty) HG_TRY(zero_fill(op->name, s, out[1]));
    void *dy = hg_data(in[0]);
    if (!empty && gd)
        HG_TRY(hg_cudnn_conv_run(ctx->device_id, op->name, HG_CUDNN_BWD_DATA, &c, hg_data(out[0]),
                                 hg_data(in[2]), dy));
    if (!empty && gw)
        HG_TRY(hg_cudnn_conv_run(ctx->device_id, op->name, HG_CUDNN_BWD_FILTER, &c, hg_data(in[1]),
                                 hg_data(out[1]), dy));
    if (nout > 2)
        HG_TRY(bias_grad(op->name, s, c.dtype, dy, hg_data(out[2]), c.N, c.F, spatial(c.out)));
    return HG_OK;
}

/* ---- Deconvolution --------------------------------------------------------------------------- */

/* The convolution whose data gradient Deconvolution's forward is: its data is our output (F
 * channels on the out grid), its output our data (C channels on the in grid), its weight ours
 * ((C, F/G, *k) is its (filters, channels/G, *k)); pads from deconv.h's rule (target_shape).
 *
 * cuDNN needs that convolution's output size to be our input size again. That holds unless a
 * target_shape asks, with stride 1, for an odd total pad: its odd unit lands in adj (= 1 = s)
 * and the convolution would have one output too many. Such a dim is computed with pad p - 1
 * on a grid one longer at the front (shift[i] = 1): output element o is element o + 1 there,
 * and the convolution's output size is our input size again. */
struct deconv_call {
    hg_cudnn_conv c;
    int64_t shift[3]; /* 1: that dim runs on the grid one longer at the front */
    bool shifted;
    int64_t big[3]; /* the grid cuDNN sees (our output grid plus the shifts) */
};

hg_status deconv_geom(const hg_op_def *op, const hg_attrs *a, const hg_tensor *x,
                      const hg_tensor *y, deconv_call *dc)
{
    memset(dc, 0, sizeof *dc);
    hg_cudnn_conv *c = &dc->c;
    const int nsp = a->v[DC_KERNEL].t.n, off = 3 - nsp;
    c->dtype = x->dtype;
    c->nsp = nsp;
    c->N = x->shape[0];
    c->C = y->shape[1];
    c->F = x->shape[1];
    c->G = a->v[DC_NUM_GROUP].i;
    for (int i = 0; i < 3; i++) {
        const int j = i - off;
        if (j < 0) {
            c->k[i] = c->s[i] = c->d[i] = c->in[i] = c->out[i] = dc->big[i] = 1;
            continue;
        }
        int64_t pad, adj, osz;
        c->k[i] = a->v[DC_KERNEL].t.v[j];
        c->s[i] = hg_deconv_tuple_at(a, DC_STRIDE, j, 1);
        c->d[i] = hg_deconv_tuple_at(a, DC_DILATE, j, 1);
        c->out[i] = x->shape[2 + j];
        hg_deconv_dim_geom(a, j, c->out[i], &pad, &adj, &osz);
        c->p[i] = pad;
        c->in[i] = y->shape[2 + j];
        const int64_t span = c->d[i] * (c->k[i] - 1) + 1;
        if ((c->in[i] + 2 * pad - span) / c->s[i] + 1 != c->out[i]) {
            if (c->s[i] != 1 || adj != 1 || pad < 1)
                return hg_error(HG_ERR_INTERNAL,
                                "%s: spatial dim %d has adj %lld with stride %lld and pad %lld, "
                                "which the GPU kernel cannot express",
                                op->name, j, (long long)adj, (long long)c->s[i], (long long)pad);
            dc->shift[i] = 1;
            dc->shifted = true;
            c->p[i] = pad - 1;
            c->in[i] += 1;
        }
        dc->big[i] = c->in[i];
    }
    const int64_t mb = a->v[DC_WORKSPACE].i;
    c->ws_limit = mb > 0 ? (size_t)mb << 20 : 0;
    return HG_OK;
}

/* Between a tensor of NC planes on grid sm and one on grid bg (each dim of bg longer by off at
 * the front): big[nc, q + off] = small[nc, q] (to_big), or small[nc, q] = big[nc, q + off]. */
template <typename T>
__global__ void shift_copy_kernel(T *small, T *big, int64_t n, dev_grid sm, dev_grid bg,
                                  dev_grid off, bool to_big)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const int64_t e = i % sm.v[2], b = (i / sm.v[2]) % sm.v[1];
        const int64_t a = (i / (sm.v[2] * sm.v[1])) % sm.v[0];
        const int64_t nc = i / (sm.v[2] * sm.v[1] * sm.v[0]);
        const int64_t bi = ((nc * bg.v[0] + a + off.v[0]) * bg.v[1] + b + off.v[1]) * bg.v[2] + e +
                           off.v[2];
        if (to_big) big[bi] = small[i];
        else small[i] = big[bi];
    }
}

hg_status shift_copy(const char *name, cudaStream_t s, size_t es, void *small, void *big,
                     int64_t NC, const int64_t *sm, const int64_t *bg, const int64_t *off,
                     bool to_big)
{
    dev_grid gs, gb, go;
    for (int i = 0; i < 3; i++) gs.v[i] = sm[i], gb.v[i] = bg[i], go.v[i] = off[i];
    const int64_t n = NC * sm[0] * sm[1] * sm[2];
    if (n == 0) return HG_OK;
    if (es == 4)
        shift_copy_kernel<uint32_t><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(
            (uint32_t *)small, (uint32_t *)big, n, gs, gb, go, to_big);
    else
        shift_copy_kernel<uint64_t><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(
            (uint64_t *)small, (uint64_t *)big, n, gs, gb, go, to_big);
    return hg_cuda_launched(name);
}

/* A temporary tensor of NC planes on the big grid (stream-ordered device memory). */
struct big_buf {
    void *p;
    size_t bytes;
};

hg_status deconv_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    HG_TRY(refuse_layout(op, a, DC_LAYOUT));
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    deconv_call dc;
    HG_TRY(deconv_geom(op, a, in[0], out[0], &dc));
    const hg_cudnn_conv &c = dc.c;
    const void *bias = nin > 2 ? hg_data(in[2]) : NULL;
    const int64_t ny = out[0]->size, F = out[0]->shape[1], P = ny / (c.N * F);
    if (in[0]->size == 0 || in[1]->size == 0) {
        if (!bias) return zero_fill(op->name, s, out[0]);
        return bias_add(op->name, s, c.dtype, hg_data(out[0]), bias, F, P, ny, true);
    }
    const int dev = ctx->device_id;
    const size_t es = hg_dtype_size(c.dtype);
    if (!dc.shifted) {
        HG_TRY(hg_cudnn_conv_run(dev, op->name, HG_CUDNN_BWD_DATA, &dc.c, hg_data(out[0]),
                                 hg_data(in[1]), hg_data(in[0])));
    } else { /* into the longer grid, then its part from the shifts on */
        big_buf b = {NULL, es * (size_t)(c.N * F * spatial(dc.big))};
        int64_t sm[3];
        for (int i = 0; i < 3; i++) sm[i] = dc.big[i] - dc.shift[i];
        HG_TRY(hg_device_alloc(dev, b.bytes, &b.p));
        hg_status st = hg_cudnn_conv_run(dev, op->name, HG_CUDNN_BWD_DATA, &dc.c, b.p,
                                         hg_data(in[1]), hg_data(in[0]));
        if (st == HG_OK)
            st = shift_copy(op->name, s, es, hg_data(out[0]), b.p, c.N * F, sm, dc.big, dc.shift,
                            false);
        hg_device_free(dev, b.p, b.bytes);
        HG_TRY(st);
    }
    if (bias) HG_TRY(bias_add(op->name, s, c.dtype, hg_data(out[0]), bias, F, P, ny, false));
    return HG_OK;
}

/* _backward_Deconvolution(ograd, data, weight): with that convolution, our data gradient is its
 * forward of our output gradient, our weight gradient its weight gradient of (our output
 * gradient, our data), our bias gradient the channel sums of our output gradient. Shifted dims
 * put the output gradient on the longer grid first, zeros in front. */
hg_status deconv_bw_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                        hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    HG_TRY(refuse_layout(op, a, DC_LAYOUT));
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    deconv_call dc;
    HG_TRY(deconv_geom(op, a, in[1], in[0], &dc));
    const hg_cudnn_conv &c = dc.c;
    const bool gd = a->v[DC_GRAD_DATA].b, gw = a->v[DC_GRAD_WEIGHT].b;
    const bool empty = in[1]->size == 0 || in[2]->size == 0 || in[0]->size == 0;
    if (!gd || empty) HG_TRY(zero_fill(op->name, s, out[0]));
    if (!gw || empty) HG_TRY(zero_fill(op->name, s, out[1]));
    void *dy = hg_data(in[0]);
    const int64_t F = in[0]->shape[1], P = c.N * F > 0 ? in[0]->size / (c.N * F) : 0;
    const int dev = ctx->device_id;
    big_buf b = {NULL, 0};
    void *dyc = dy; /* the output gradient on cuDNN's grid */
    if (!empty && (gd || gw) && dc.shifted) {
        const size_t es = hg_dtype_size(c.dtype);
        int64_t sm[3];
        for (int i = 0; i < 3; i++) sm[i] = dc.big[i] - dc.shift[i];
        b.bytes = es * (size_t)(c.N * F * spatial(dc.big));
        HG_TRY(hg_device_alloc(dev, b.bytes, &b.p));
        hg_status st = hg_cuda_status(cudaMemsetAsync(b.p, 0, b.bytes, s), op->name);
        if (st == HG_OK)
            st = shift_copy(op->name, s, es, dy, b.p, c.N * F, sm, dc.big, dc.shift, true);
        if (st != HG_OK) {
            hg_device_free(dev, b.p, b.bytes);
            return st;
        }
        dyc = b.p;
    }
    hg_status st = HG_OK;
    if (!empty && gd)
        st = hg_cudnn_conv_run(dev, op->name, HG_CUDNN_FWD, &dc.c, dyc, hg_data(in[2]),
                               hg_data(out[0]));
    if (st == HG_OK && !empty && gw)
        st = hg_cudnn_conv_run(dev, op->name, HG_CUDNN_BWD_FILTER, &dc.c, dyc, hg_data(out[1]),
                               hg_data(in[1]));
    if (b.p) hg_device_free(dev, b.p, b.bytes);
    HG_TRY(st);
    if (nout > 2) HG_TRY(bias_grad(op->name, s, c.dtype, dy, hg_data(out[2]), c.N, F, P));
    return HG_OK;
}

/* ---- Pooling --------------------------------------------------------------------------------- */

/* One call's geometry as 3 spatial axes (leading ones of size 1), and the layout: element
 * (n, c, d, h, w) of a channel-first tensor is at ((n*C + c)*D*H*W + (d*H + h)*W + w), of a
 * channel-last one at ((n*D*H*W + (d*H + h)*W + w)*C + c). */
struct pool_geom {
    int64_t N, C;
    int64_t id[3], od[3], k[3], s[3], p[3];
    int type, pv;
    bool cip, cl;
};

pool_geom pool_geometry(const hg_attrs *a, const hg_tensor *x, const hg_tensor *y)
{
    pool_geom g;
    memset(&g, 0, sizeof g);
    const int nd = x->ndim, nsp = nd - 2;
    g.cl = !a->v[P_LAYOUT].is_none && a->v[P_LAYOUT].i >= LAYOUT_NWC;
    g.N = x->shape[0];
    g.C = g.cl ? x->shape[nd - 1] : x->shape[1];
    const int first = g.cl ? 1 : 2; /* the first spatial dim of the tensors */
    const hg_tuple *kt = &a->v[P_KERNEL].t, *stt = &a->v[P_STRIDE].t, *pt = &a->v[P_PAD].t;
    for (int i = 0; i < 3; i++) {
        g.id[i] = g.od[i] = g.k[i] = g.s[i] = 1;
        g.p[i] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        const int j = 3 - nsp + i;
        g.id[j] = x->shape[first + i];
        g.od[j] = y->shape[first + i];
        if (a->v[P_GLOBAL].b) { /* the whole extent, stride 1, no pad */
            g.k[j] = g.id[j];
            continue;
        }
        g.k[j] = kt->v[i];
        g.s[j] = stt->n ? stt->v[i] : 1;
        g.p[j] = pt->n ? pt->v[i] : 0;
    }
    g.type = (int)a->v[P_POOL_TYPE].i;
    g.pv = a->v[P_P_VALUE].is_none ? 1 : (int)a->v[P_P_VALUE].i;
    g.cip = a->v[P_COUNT_INCLUDE_PAD].is_none || a->v[P_COUNT_INCLUDE_PAD].b;
    return g;
}

/* Flat index i of a tensor with spatial extents sp[3] -> its (n, c) and spatial position. */
__device__ __forceinline__ void pool_locate(const pool_geom &g, const int64_t *sp, int64_t i,
                                            int64_t *n, int64_t *c, int64_t *pos)
{
    const int64_t S = sp[0] * sp[1] * sp[2];
    int64_t r;
    if (g.cl) {
        *c = i % g.C;
        r = (i / g.C) % S;
        *n = i / (g.C * S);
    } else {
        r = i % S;
        *c = (i / S) % g.C;
        *n = i / (S * g.C);
    }
    pos[2] = r % sp[2];
    pos[1] = (r / sp[2]) % sp[1];
    pos[0] = r / (sp[2] * sp[1]);
}

/* Offset of spatial position 0 of plane (n, c) in a tensor with spatial extents sp[3], and the
 * stride between spatial positions. */
__device__ __forceinline__ void pool_plane(const pool_geom &g, const int64_t *sp, int64_t n,
                                           int64_t c, int64_t *base, int64_t *stride)
{
    const int64_t S = sp[0] * sp[1] * sp[2];
    *base = g.cl ? n * S * g.C + c : (n * g.C + c) * S;
    *stride = g.cl ? g.C : 1;
}

__device__ __forceinline__ int64_t pool_off(const int64_t *sp, int64_t d, int64_t h, int64_t w)
{
    return (d * sp[1] + h) * sp[2] + w;
}

/* The window of output position o on axis a: [lo, hi) clipped to the data, and the extent
 * counting padding (MXNet's pool.h: the window ends at min(start + k, x + p)). */
__device__ __forceinline__ void pool_window(const pool_geom &g, int ax, int64_t o, int64_t *lo,
                                            int64_t *hi, int64_t *padded)
{
    int64_t a0 = o * g.s[ax] - g.p[ax];
    int64_t a1 = a0 + g.k[ax] < g.id[ax] + g.p[ax] ? a0 + g.k[ax] : g.id[ax] + g.p[ax];
    *padded = a1 - a0 > 0 ? a1 - a0 : 0;
    *lo = a0 > 0 ? a0 : 0;
    *hi = a1 < g.id[ax] ? a1 : g.id[ax];
}

template <typename A> __device__ __forceinline__ A pow_p(A v, int pv)
{
    return pv == 1 ? v : pv == 2 ? v * v : v * v * v;
}
template <typename A> __device__ __forceinline__ A root_p(A v, int pv)
{
    return pv == 1 ? v : pv == 2 ? (A)sqrt((double)v) : (A)cbrt((double)v);
}

template <typename T> __global__ void pool_fwd_kernel(const T *x, T *y, pool_geom g, int64_t n)
{
    typedef typename acc_of<T>::type A;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t nn, cc, o[3], base, xs, lo[3], hi[3], ext[3];
        pool_locate(g, g.od, i, &nn, &cc, o);
        pool_plane(g, g.id, nn, cc, &base, &xs);
        for (int ax = 0; ax < 3; ax++) pool_window(g, ax, o[ax], &lo[ax], &hi[ax], &ext[ax]);
        A acc = g.type == POOL_MAX ? lowest<A>() : (A)0;
        for (int64_t d = lo[0]; d < hi[0]; d++)
            for (int64_t h = lo[1]; h < hi[1]; h++)
                for (int64_t w = lo[2]; w < hi[2]; w++) {
                    const A v = ld<A, T>(x[base + pool_off(g.id, d, h, w) * xs]);
                    if (g.type == POOL_MAX) acc = v > acc ? v : acc;
                    else if (g.type == POOL_LP) acc += pow_p<A>(v, g.pv);
                    else acc += v;
                }
        if (g.type == POOL_AVG) {
            int64_t cnt = 1;
            for (int ax = 0; ax < 3; ax++)
                cnt *= g.cip ? ext[ax] : (hi[ax] - lo[ax] > 0 ? hi[ax] - lo[ax] : 0);
            acc = acc / (A)cnt;
        } else if (g.type == POOL_LP) {
            acc = root_p<A>(acc, g.pv);
        }
        y[i] = st<T, A>(acc);
    }
}

template <typename T>
hg_status pool_fwd_t(const char *name, cudaStream_t s, const void *x, void *y, const pool_geom &g,
                     int64_t n)
{
    pool_fwd_kernel<T><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>((const T *)x, (T *)y, g, n);
    return hg_cuda_launched(name);
}

hg_status pool_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                   hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    const pool_geom g = pool_geometry(a, in[0], out[0]);
    const int64_t n = out[0]->size;
    if (n == 0) return HG_OK;
    switch (in[0]->dtype) {
    case HG_DTYPE_F32: return pool_fwd_t<float>(op->name, s, hg_data(in[0]), hg_data(out[0]), g, n);
    case HG_DTYPE_F64:
        return pool_fwd_t<double>(op->name, s, hg_data(in[0]), hg_data(out[0]), g, n);
    case HG_DTYPE_F16:
        return pool_fwd_t<uint16_t>(op->name, s, hg_data(in[0]), hg_data(out[0]), g, n);
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(in[0]->dtype));
    }
}

/* Gradient, avg / sum / lp: one thread per data element gathers from the outputs whose windows
 * hold it, in the CPU's (d, h, w) output order, so the sums are the CPU's. */
template <typename T>
__global__ void pool_bw_gather_kernel(const T *dy, const T *x, const T *y, T *dx, pool_geom g,
                                      int64_t n)
{
    typedef typename acc_of<T>::type A;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t nn, cc, q[3], ob, os, lo[3], hi[3];
        pool_locate(g, g.id, i, &nn, &cc, q);
        pool_plane(g, g.od, nn, cc, &ob, &os);
        for (int ax = 0; ax < 3; ax++) {
            /* o * s - p <= q < o * s - p + k */
            const int64_t num = q[ax] + g.p[ax] - g.k[ax] + 1;
            lo[ax] = num <= 0 ? 0 : (num + g.s[ax] - 1) / g.s[ax];
            const int64_t top = (q[ax] + g.p[ax]) / g.s[ax];
            hi[ax] = top < g.od[ax] - 1 ? top + 1 : g.od[ax];
        }
        const A xv = g.type == POOL_LP ? ld<A, T>(x[i]) : (A)0;
        A acc = 0;
        for (int64_t od = lo[0]; od < hi[0]; od++)
            for (int64_t oh = lo[1]; oh < hi[1]; oh++)
                for (int64_t ow = lo[2]; ow < hi[2]; ow++) {
                    const int64_t oi = ob + pool_off(g.od, od, oh, ow) * os;
                    const A gv = ld<A, T>(dy[oi]);
                    if (g.type == POOL_LP) {
                        const A yv = ld<A, T>(y[oi]);
                        const A r = g.pv == 1   ? (A)1
                                    : yv == 0   ? (A)0
                                    : g.pv == 2 ? xv / yv
                                                : (xv / yv) * (xv / yv);
                        acc += gv * r;
                    } else if (g.type == POOL_AVG) {
                        int64_t cnt = 1, wl, wh, ext;
                        const int64_t oo[3] = {od, oh, ow};
                        for (int ax = 0; ax < 3; ax++) {
                            pool_window(g, ax, oo[ax], &wl, &wh, &ext);
                            cnt *= g.cip ? ext : (wh - wl > 0 ? wh - wl : 0);
                        }
                        acc += cnt > 0 ? gv / (A)cnt : (A)0;
                    } else {
                        acc += gv;
                    }
                }
        dx[i] = st<T, A>(acc);
    }
}

__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }

/* Gradient, max: one thread per output sends its gradient to the first element of its window,
 * in (d, h, w) order, equal to the output (the CPU's rule for ties), adding into acc (dx itself,
 * or a float copy for float16), which starts at zero. */
template <typename T, typename A>
__global__ void pool_bw_max_kernel(const T *dy, const T *x, const T *y, A *acc, pool_geom g,
                                   int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t nn, cc, o[3], base, xs, lo[3], hi[3], ext[3];
        pool_locate(g, g.od, i, &nn, &cc, o);
        pool_plane(g, g.id, nn, cc, &base, &xs);
        for (int ax = 0; ax < 3; ax++) pool_window(g, ax, o[ax], &lo[ax], &hi[ax], &ext[ax]);
        const A yv = ld<A, T>(y[i]);
        for (int64_t d = lo[0]; d < hi[0]; d++)
            for (int64_t h = lo[1]; h < hi[1]; h++)
                for (int64_t w = lo[2]; w < hi[2]; w++) {
                    const int64_t xi = base + pool_off(g.id, d, h, w) * xs;
                    if (ld<A, T>(x[xi]) == yv) {
                        atomic_add(&acc[xi], ld<A, T>(dy[i]));
                        goto next;
                    }
                }
    next:;
    }
}

template <typename T> __global__ void to_type_kernel(const float *src, T *dst, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = st<T, float>(src[i]);
}

template <typename T>
hg_status pool_bw_t(const hg_op_def *op, int dev, cudaStream_t s, const void *dy, const void *x,
                    const void *y, hg_tensor *dxt, const pool_geom &g, int64_t ny)
{
    typedef typename acc_of<T>::type A;
    const int64_t nx = dxt->size;
    T *dx = (T *)hg_data(dxt);
    if (g.type != POOL_MAX) {
        pool_bw_gather_kernel<T><<<hg_cuda_blocks(nx), HG_CUDA_THREADS, 0, s>>>(
            (const T *)dy, (const T *)x, (const T *)y, dx, g, nx);
        return hg_cuda_launched(op->name);
    }
    A *acc = (A *)dx;
    const size_t abytes = sizeof(A) * (size_t)nx;
    if (sizeof(A) != sizeof(T)) HG_TRY(hg_device_alloc(dev, abytes, (void **)&acc));
    hg_status st = hg_cuda_status(cudaMemsetAsync(acc, 0, abytes, s), op->name);
    if (st == HG_OK && ny > 0) {
        pool_bw_max_kernel<T, A><<<hg_cuda_blocks(ny), HG_CUDA_THREADS, 0, s>>>(
            (const T *)dy, (const T *)x, (const T *)y, acc, g, ny);
        st = hg_cuda_launched(op->name);
    }
    if (st == HG_OK && sizeof(A) != sizeof(T)) {
        to_type_kernel<T>
            <<<hg_cuda_blocks(nx), HG_CUDA_THREADS, 0, s>>>((const float *)acc, dx, nx);
        st = hg_cuda_launched(op->name);
    }
    if (sizeof(A) != sizeof(T)) hg_device_free(dev, acc, abytes);
    return st;
}

/* _backward_Pooling(ograd, data[, output]) -> data gradient. */
hg_status pool_bw_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    const pool_geom g = pool_geometry(a, in[1], in[0]);
    const void *dy = hg_data(in[0]), *x = hg_data(in[1]), *y = nin > 2 ? hg_data(in[2]) : NULL;
    if ((g.type == POOL_MAX || g.type == POOL_LP) && !y)
        return hg_error(HG_ERR_VALUE, "%s: max and lp pooling need the forward output", op->name);
    if (out[0]->size == 0) return HG_OK;
    const int dev = ctx->device_id;
    const int64_t ny = in[0]->size;
    switch (in[1]->dtype) {
    case HG_DTYPE_F32: return pool_bw_t<float>(op, dev, s, dy, x, y, out[0], g, ny);
    case HG_DTYPE_F64: return pool_bw_t<double>(op, dev, s, dy, x, y, out[0], g, ny);
    case HG_DTYPE_F16: return pool_bw_t<uint16_t>(op, dev, s, dy, x, y, out[0], g, ny);
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(in[1]->dtype));
    }
}

/* ---- BatchNorm ------------------------------------------------------------------------------- */

/* The data as [O, C, I] around the channel axis; per channel n = O * I elements, element k of
 * channel c at ((k / I) * C + c) * I + k % I. Each channel's sums are split into B chunks of
 * `chunk` elements, one block each, whose partial sums (double) a per-channel kernel then adds in
 * chunk order: deterministic, and enough blocks to fill the GPU however few channels there are. */
struct bn_geom {
    int64_t O, C, I, n, B, chunk;
    double eps, momentum;
    bool batch, fix_gamma;
};

#define BN_CHUNK 8192 /* elements a block sums at least */
#define BN_MAX_B 512  /* chunks per channel at most */

bn_geom bn_geometry(const hg_attrs *a, const hg_exec_ctx *ctx, const hg_tensor *x)
{
    bn_geom g;
    int64_t axis = a->v[BN_AXIS].i;
    const int ax = (int)(axis < 0 ? axis + x->ndim : axis); /* infer checked the range */
    g.O = g.I = 1;
    for (int i = 0; i < ax; i++) g.O *= x->shape[i];
    for (int i = ax + 1; i < x->ndim; i++) g.I *= x->shape[i];
    g.C = x->shape[ax];
    g.n = g.O * g.I;
    g.B = (g.n + BN_CHUNK - 1) / BN_CHUNK;
    if (g.B < 1) g.B = 1;
    if (g.B > BN_MAX_B) g.B = BN_MAX_B;
    g.chunk = (g.n + g.B - 1) / g.B;
    g.eps = a->v[BN_EPS].f;
    g.momentum = a->v[BN_MOMENTUM].f;
    g.batch = ctx->is_train && !a->v[BN_USE_GLOBAL].b;
    g.fix_gamma = a->v[BN_FIX_GAMMA].b;
    return g;
}

__device__ __forceinline__ int64_t bn_at(const bn_geom &g, int64_t c, int64_t k)
{
    return ((k / g.I) * g.C + c) * g.I + k % g.I;
}

/* norm.c's bn_invstd: batch statistics with zero variance and eps 0 give 0, not inf. */
__device__ __forceinline__ double bn_invstd(double var, double eps, bool batch)
{
    if (batch && var == 0 && eps == 0) return 0;
    return 1.0 / sqrt(var + eps);
}

/* Block (c, b): part[c * B + b] = sum over its chunk of x (mean == NULL) or of (x - mean[c])^2. */
template <typename T>
__global__ void bn_part_kernel(const T *x, const double *mean, double *part, bn_geom g)
{
    const int64_t c = blockIdx.x / g.B, b = blockIdx.x % g.B;
    const int64_t k0 = b * g.chunk, k1 = k0 + g.chunk < g.n ? k0 + g.chunk : g.n;
    const double m = mean ? mean[c] : 0.0;
    double acc = 0;
    for (int64_t k = k0 + threadIdx.x; k < k1; k += RED_THREADS) {
        const double d = (double)x[bn_at(g, c, k)] - m;
        acc += mean ? d * d : d;
    }
    acc = block_sum<double>(acc);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

/* Block (c, b): the backward's S (sum dy) and D (sum dy * (x - mean)) over its chunk. */
template <typename T>
__global__ void bn_bwd_part_kernel(const T *dy, const T *x, const T *mean, double *ps, double *pd,
                                   bn_geom g)
{
    const int64_t c = blockIdx.x / g.B, b = blockIdx.x % g.B;
    const int64_t k0 = b * g.chunk, k1 = k0 + g.chunk < g.n ? k0 + g.chunk : g.n;
    const double m = (double)mean[c];
    double S = 0, D = 0;
    for (int64_t k = k0 + threadIdx.x; k < k1; k += RED_THREADS) {
        const int64_t e = bn_at(g, c, k);
        const double q = (double)dy[e];
        S += q;
        D += q * ((double)x[e] - m);
    }
    S = block_sum<double>(S);
    D = block_sum<double>(D);
    if (threadIdx.x == 0) {
        ps[blockIdx.x] = S;
        pd[blockIdx.x] = D;
    }
}

/* The chunk sums of channel c, in chunk order. */
__device__ __forceinline__ double bn_total(const double *part, const bn_geom &g, int64_t c)
{
    double t = 0;
    for (int64_t b = 0; b < g.B; b++) t += part[c * g.B + b];
    return t;
}

/* Per channel: the batch mean from the sums. */
__global__ void bn_mean_kernel(const double *part, double *mean, bn_geom g)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < g.C; c += step)
        mean[c] = g.n > 0 ? bn_total(part, g, c) / (double)g.n : 0.0;
}

/* Per channel: the statistics (batch: mean and the centred sums; else the moving ones), the
 * mean / inverse-std outputs, and y = x * scale + shift's coefficients. ch: mean, scale, shift. */
template <typename T>
__global__ void bn_stats_kernel(const double *part, double *ch, const T *gamma, const T *beta,
                                const T *rmean, const T *rvar, T *mean, T *var, bn_geom g)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < g.C; c += step) {
        double m, v;
        if (g.batch) {
            m = ch[c];
            v = g.n > 0 ? bn_total(part, g, c) / (double)g.n : 0.0;
        } else {
            m = (double)rmean[c];
            v = (double)rvar[c];
        }
        const double inv = bn_invstd(v, g.eps, g.batch);
        mean[c] = (T)m;
        var[c] = (T)inv;
        const double gm = g.fix_gamma ? 1.0 : (double)gamma[c];
        const double sc = gm * inv;
        ch[g.C + c] = sc;
        ch[2 * g.C + c] = (double)beta[c] - m * sc;
    }
}

template <typename T>
__global__ void bn_apply_kernel(const T *x, T *y, const double *ch, bn_geom g, int64_t total)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t c = (e / g.I) % g.C;
        const double sc = ch[g.C + c], sh = ch[2 * g.C + c];
        if (g.I == 1) y[e] = (T)((double)x[e] * sc + sh); /* norm.c's channel-last apply */
        else y[e] = x[e] * (T)sc + (T)sh;
    }
}

/* Per channel: the gradient coefficients (ch: a, b, d, mean), d gamma, d beta and, in training,
 * the moving statistics from the batch mean and the inverse std (norm.c's bn_update_moving). */
template <typename T>
__global__ void bn_bwd_coef_kernel(const double *ps, const double *pd, double *ch, const T *gamma,
                                   const T *mean, const T *var, T *mmean, T *mvar, T *dgamma,
                                   T *dbeta, bn_geom g)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < g.C; c += step) {
        const double S = bn_total(ps, g, c), D = bn_total(pd, g, c), m = (double)mean[c];
        const double inv_n = g.n > 0 ? 1.0 / (double)g.n : 0.0;
        const double inv = (double)var[c], w = g.fix_gamma ? 1.0 : (double)gamma[c];
        ch[c] = w * inv;
        ch[g.C + c] = g.batch ? -w * inv * inv * inv * D * inv_n : 0.0;
        ch[2 * g.C + c] = g.batch ? -w * inv * S * inv_n : 0.0;
        ch[3 * g.C + c] = m;
        dgamma[c] = (T)(g.fix_gamma ? 0.0 : D * inv);
        dbeta[c] = (T)S;
        if (g.batch && g.n > 0) {
            const double vr = inv > 0 ? 1 / (inv * inv) - g.eps : 0.0;
            mmean[c] = (T)((double)mmean[c] * g.momentum + m * (1 - g.momentum));
            mvar[c] = (T)((double)mvar[c] * g.momentum + vr * (1 - g.momentum));
        }
    }
}

template <typename T>
__global__ void bn_bwd_apply_kernel(const T *dy, const T *x, T *dx, const double *ch, bn_geom g,
                                    int64_t total)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t c = (e / g.I) % g.C;
        const double ca = ch[c], cb = ch[g.C + c], cd = ch[2 * g.C + c], m = ch[3 * g.C + c];
        if (g.I == 1) dx[e] = (T)(ca * (double)dy[e] + cb * ((double)x[e] - m) + cd);
        else dx[e] = (T)ca * dy[e] + (T)cb * (x[e] - (T)m) + (T)cd;
    }
}

/* Device scratch of doubles (stream-ordered, freed right after the kernels are queued). */
struct scratch {
    int dev;
    double *p;
    size_t bytes;
    scratch(int d) : dev(d), p(NULL), bytes(0) {}
    hg_status get(size_t n)
    {
        bytes = sizeof(double) * n;
        return hg_device_alloc(dev, bytes, (void **)&p);
    }
    ~scratch()
    {
        if (p) hg_device_free(dev, p, bytes);
    }
};

template <typename T>
hg_status bn_fwd_t(const char *name, int dev, cudaStream_t s, const bn_geom &g,
                   hg_tensor *const *in, hg_tensor *const *out)
{
    scratch w(dev);
    const int64_t CB = g.C * g.B;
    HG_TRY(w.get((size_t)(CB + 3 * g.C)));
    double *part = w.p, *ch = w.p + CB;
    const T *x = (const T *)hg_data(in[0]);
    const unsigned cblocks = hg_cuda_blocks(g.C);
    if (g.batch) {
        bn_part_kernel<T><<<(unsigned)CB, RED_THREADS, 0, s>>>(x, NULL, part, g);
        bn_mean_kernel<<<cblocks, HG_CUDA_THREADS, 0, s>>>(part, ch, g);
        bn_part_kernel<T><<<(unsigned)CB, RED_THREADS, 0, s>>>(x, ch, part, g);
    }
    bn_stats_kernel<T><<<cblocks, HG_CUDA_THREADS, 0, s>>>(
        part, ch, (const T *)hg_data(in[1]), (const T *)hg_data(in[2]), (const T *)hg_data(in[3]),
        (const T *)hg_data(in[4]), (T *)hg_data(out[1]), (T *)hg_data(out[2]), g);
    const int64_t total = in[0]->size;
    if (total > 0)
        bn_apply_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(
            x, (T *)hg_data(out[0]), ch, g, total);
    return hg_cuda_launched(name);
}

/* What both BatchNorm kernels check and set up first: the stream, and the geometry of x
 * (the data), whose channels times blocks must fit the kernels' int grid. */
hg_status bn_begin(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                   const hg_tensor *x, cudaStream_t *s, bn_geom *g)
{
    HG_TRY(stream_of(ctx->device_id, s));
    *g = bn_geometry(a, ctx, x);
    if ((uint64_t)g->C * (uint64_t)g->B > 0x7fffffffull)
        return hg_error(HG_ERR_VALUE, "%s: %lld channels are too many for the GPU kernel", op->name,
                        (long long)g->C);
    return HG_OK;
}

hg_status bn_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                 hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    bn_geom g;
    HG_TRY(bn_begin(op, a, ctx, in[0], &s, &g));
    if (g.C == 0) return HG_OK;
    switch (in[0]->dtype) {
    case HG_DTYPE_F32: return bn_fwd_t<float>(op->name, ctx->device_id, s, g, in, out);
    case HG_DTYPE_F64: return bn_fwd_t<double>(op->name, ctx->device_id, s, g, in, out);
    default: return bad_dtype(op, in[0]->dtype);
    }
}

template <typename T>
hg_status bn_bwd_t(const char *name, int dev, cudaStream_t s, const bn_geom &g,
                   hg_tensor *const *in, hg_tensor *const *out)
{
    scratch w(dev);
    const int64_t CB = g.C * g.B;
    HG_TRY(w.get((size_t)(2 * CB + 4 * g.C)));
    double *ps = w.p, *pd = w.p + CB, *ch = w.p + 2 * CB;
    const T *dy = (const T *)hg_data(in[0]), *x = (const T *)hg_data(in[1]);
    bn_bwd_part_kernel<T>
        <<<(unsigned)CB, RED_THREADS, 0, s>>>(dy, x, (const T *)hg_data(in[3]), ps, pd, g);
    bn_bwd_coef_kernel<T><<<hg_cuda_blocks(g.C), HG_CUDA_THREADS, 0, s>>>(
        ps, pd, ch, (const T *)hg_data(in[2]), (const T *)hg_data(in[3]), (const T *)hg_data(in[4]),
        (T *)hg_data(in[5]), (T *)hg_data(in[6]), (T *)hg_data(out[1]), (T *)hg_data(out[2]), g);
    const int64_t total = in[1]->size;
    if (total > 0)
        bn_bwd_apply_kernel<T><<<hg_cuda_blocks(total), HG_CUDA_THREADS, 0, s>>>(
            dy, x, (T *)hg_data(out[0]), ch, g, total);
    return hg_cuda_launched(name);
}

/* _backward_BatchNorm(dy, data, gamma, mean, var, moving_mean, moving_var) -> (d data, d gamma,
 * d beta); in training it updates moving_mean / moving_var (inputs 5 and 6) in place. */
hg_status bn_bw_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                    hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    bn_geom g;
    HG_TRY(bn_begin(op, a, ctx, in[1], &s, &g));
    if (g.C == 0) return HG_OK;
    switch (in[1]->dtype) {
    case HG_DTYPE_F32: return bn_bwd_t<float>(op->name, ctx->device_id, s, g, in, out);
    case HG_DTYPE_F64: return bn_bwd_t<double>(op->name, ctx->device_id, s, g, in, out);
    default: return bad_dtype(op, in[1]->dtype);
    }
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_dnn[] = {
    {"Convolution", conv_gpu},
    {"_backward_Convolution", conv_bw_gpu},
    {"Deconvolution", deconv_gpu},
    {"_backward_Deconvolution", deconv_bw_gpu},
    {"Pooling", pool_gpu},
    {"_backward_Pooling", pool_bw_gpu},
    {"BatchNorm", bn_gpu},
    {"_backward_BatchNorm", bn_bw_gpu},
    {NULL, NULL},
};
