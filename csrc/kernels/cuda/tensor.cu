/* GPU kernels of the shape and index ops of ops/tensor_extra.c (reshape_like, shape_array,
 * size_array, argmax_channel, batch_take, gather_nd and the scatters, depth_to_space /
 * space_to_depth, _ravel_multi_index / _unravel_index, _split_v2, fill_element_0index,
 * _onehot_encode, khatri_rao), of _sum_to_like (ops/grad_util.c, the gradient of every
 * broadcast) and of _identity_with_attr_like_rhs (ops/infer_util.c), on every dtype the CPU
 * accepts.
 *
 * Values go through tensor_common.h's ld/st, the CPU's tx_ld/tx_st, so conversions match;
 * pure moves copy elements by size. Index values the CPU checks while it runs (gather_nd and the
 * scatters, batch_take, fill_element_0index, _onehot_encode) cannot be checked on the GPU
 * without waiting for it, so there an invalid index never touches memory instead of failing:
 * a gather writes zeros for it and a scatter or fill skips it. Shapes and attributes were
 * checked by the op's infer before the kernel runs.
 *
 * Scatters that store (scatter_nd, _scatter_set_nd) let the last of repeated indices win, as the
 * CPU's sequential loop does: a first pass finds the largest row number per target. Scatters
 * that add go through a compare-and-swap of the CPU's own update (read as double, add, store as
 * the dtype), so only the order of repeated additions can differ from the CPU.
 */
#include "kernels/cuda/tensor_common.h"

extern "C" {
#include "ops/tensor_extra.h"
}

namespace
{

using namespace hg_tx;

/* Runs LAUNCH(T) with T the unsigned type of the element size es; false for another size. */
#define BY_SIZE(es, LAUNCH)                                                                    \
    ((es) == 1   ? (LAUNCH(uint8_t), true)                                                     \
     : (es) == 2 ? (LAUNCH(uint16_t), true)                                                    \
     : (es) == 4 ? (LAUNCH(uint32_t), true)                                                    \
     : (es) == 8 ? (LAUNCH(uint64_t), true)                                                    \
                 : false)

hg_status bad_size(const hg_op_def *op, size_t es)
{
    return hg_error(HG_ERR_INTERNAL, "%s: element size %zu", op->name, es);
}

struct dims_arg {
    int64_t v[HG_MAX_NDIM];
};

/* ---- _sum_to_like ------------------------------------------------------------------------ */

/* float16 storage, told apart from uint16_t. */
struct f16 {
    uint16_t u;
};

template <typename A, typename T> __device__ __forceinline__ A to_acc(T v)
{
    if constexpr (std::is_same<T, f16>::value) return (A)h2f(v.u);
    else if constexpr (std::is_integral<T>::value) return (A)(int64_t)v; /* wraps in uint64 */
    else return (A)v;
}

template <typename T, typename A> __device__ __forceinline__ T from_acc(A a)
{
    if constexpr (std::is_same<T, f16>::value) return f16{f2h((float)a)};
    else if constexpr (std::is_integral<T>::value)
        return (T)(typename std::make_unsigned<T>::type)(uint64_t)a;
    else return (T)a;
}

/* One thread per output, in grad_util.c's order: x's elements of the output in address order,
 * each run along a reduced last dim summed first and then added (bit-identical sums). */
template <typename T, typename A>
__global__ void sum_like_serial(const T *x, T *y, red_plan p, int64_t nout)
{
    GRID_LOOP(o, nout)
    {
        const int64_t base = plan_kept(p, o);
        A acc = 0, t = 0;
        for (int64_t r = 0; r < p.nred; r++) {
            t += to_acc<A>(x[base + plan_red(p, r)]);
            if ((r + 1) % p.last == 0) {
                acc += t;
                t = 0;
            }
        }
        y[o] = from_acc<T, A>(acc);
    }
}

template <typename T, typename A>
__global__ void sum_like_block(const T *x, T *y, red_plan p, int64_t nout)
{
    __shared__ A sh[HG_CUDA_THREADS];
    for (int64_t o = blockIdx.x; o < nout; o += gridDim.x) {
        const int64_t base = plan_kept(p, o);
        A acc = 0;
        for (int64_t r = threadIdx.x; r < p.nred; r += blockDim.x)
            acc += to_acc<A>(x[base + plan_red(p, r)]);
        acc = block_sum(acc, sh);
        if (threadIdx.x == 0) y[o] = from_acc<T, A>(acc);
    }
}

/* A: the CPU's accumulator in the serial kernel (float for float32 and float16); AB: the
 * block kernel's (double for floats). Integer sums wrap in uint64, as the CPU's int64 ones. */
template <typename T, typename A, typename AB>
hg_status sum_like_run(const hg_op_def *op, cudaStream_t s, const hg_tensor *x, hg_tensor *y,
                       const red_plan &p)
{
    const T *xp = (const T *)hg_data(x);
    T *yp = (T *)hg_data(y);
    if (!use_block_reduce(p.nred, y->size))
        return launch(op->name, s, y->size, sum_like_serial<T, A>, xp, yp, p, y->size);
    sum_like_block<T, AB><<<block_grid(y->size), HG_CUDA_THREADS, 0, s>>>(xp, yp, p, y->size);
    return hg_cuda_launched(op->name);
}

GPU_FWD(sum_to_like_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    if (x->size == y->size) return copy_whole(op, s, y, x); /* only size-1 dims differ */
    bool red[HG_MAX_NDIM];
    const int lead = x->ndim - y->ndim;
    for (int d = 0; d < x->ndim; d++) red[d] = d < lead || y->shape[d - lead] == 1;
    const red_plan p = make_red_plan(x, red);
    switch (x->dtype) {
    case HG_DTYPE_F32: return sum_like_run<float, float, double>(op, s, x, y, p);
    case HG_DTYPE_F64: return sum_like_run<double, double, double>(op, s, x, y, p);
    case HG_DTYPE_F16: return sum_like_run<f16, float, double>(op, s, x, y, p);
    case HG_DTYPE_I64: return sum_like_run<int64_t, uint64_t, uint64_t>(op, s, x, y, p);
    case HG_DTYPE_I32: return sum_like_run<int32_t, uint64_t, uint64_t>(op, s, x, y, p);
    case HG_DTYPE_I8: return sum_like_run<int8_t, uint64_t, uint64_t>(op, s, x, y, p);
    case HG_DTYPE_U8: return sum_like_run<uint8_t, uint64_t, uint64_t>(op, s, x, y, p);
    default: return bad_dtype(op, x->dtype); /* bool: infer refuses it */
    }
}

/* ---- copies: _identity_with_attr_like_rhs, reshape_like -------------------------------------- */

GPU_FWD(copy_gpu)
{
    STREAM;
    return copy_whole(op, s, out[0], in[0]);
}

/* ---- shape_array, size_array: values known on the host, passed by value ---------------------- */

__global__ void put_i64_kernel(int64_t *o, dims_arg v, int n) { GRID_LOOP(i, n) o[i] = v.v[i]; }

GPU_FWD(shape_array_gpu)
{
    STREAM;
    dims_arg v{};
    for (int d = 0; d < in[0]->ndim; d++) v.v[d] = in[0]->shape[d];
    return launch(op->name, s, in[0]->ndim, put_i64_kernel, (int64_t *)hg_data(out[0]), v,
                  in[0]->ndim);
}

GPU_FWD(size_array_gpu)
{
    STREAM;
    dims_arg v{};
    v.v[0] = in[0]->size;
    return launch(op->name, s, 1, put_i64_kernel, (int64_t *)hg_data(out[0]), v, 1);
}

/* ---- argmax_channel ---------------------------------------------------------------------- */

/* The first largest along axis 1; a NaN wins over any number (the first NaN). */
__global__ void argmax_channel_kernel(const void *x, int dt, void *y, int64_t n, int64_t inner,
                                      int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t o = e / inner, i = e % inner, base = o * n * inner + i;
        int64_t best = 0;
        double bv = ld(x, dt, base);
        for (int64_t j = 1; j < n; j++) {
            const double v = ld(x, dt, base + j * inner);
            if (v > bv || (v != v && bv == bv)) {
                bv = v;
                best = j;
            }
        }
        st(y, dt, e, (double)best);
    }
}

GPU_FWD(argmax_channel_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    int64_t inner = 1;
    for (int d = 2; d < x->ndim; d++) inner *= x->shape[d];
    return launch(op->name, s, out[0]->size, argmax_channel_kernel, (const void *)hg_data(x),
                  (int)x->dtype, hg_data(out[0]), x->shape[1], inner, out[0]->size);
}

/* ---- batch_take -------------------------------------------------------------------------- */

/* out[i] = x[i * m + clip(idx[i], 0, m - 1)]; a source past x (the CPU's error) gives 0. */
template <typename T>
__global__ void batch_take_kernel(const T *x, const int32_t *idx, T *y, int64_t m, int64_t xsize,
                                  int64_t n)
{
    GRID_LOOP(i, n)
    {
        const int64_t j = idx[i] < 0 ? 0 : (idx[i] >= m ? m - 1 : idx[i]), src = i * m + j;
        y[i] = src >= 0 && src < xsize ? x[src] : T(0);
    }
}

GPU_FWD(batch_take_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const int64_t m = x->shape[0] ? x->size / x->shape[0] : 0, n = out[0]->size;
    const size_t es = hg_dtype_size(x->dtype);
    hg_status st = HG_OK;
#define BT(T)                                                                                  \
    st = launch(op->name, s, n, batch_take_kernel<T>, (const T *)hg_data(x),                   \
                (const int32_t *)hg_data(in[1]), (T *)hg_data(out[0]), m, x->size, n)
    if (!BY_SIZE(es, BT)) return bad_size(op, es);
#undef BT
    return st;
}

/* ---- gather_nd and the scatters ----------------------------------------------------------- */

/* Column y of idx (m rows, n columns) as a flat offset in units of rows of an array of shape
 * sh (negative indices count from the end); -1 when an index is out of range. */
__device__ int64_t nd_offset(const void *idx, int idt, int64_t y, int64_t n, int m,
                             const dims_arg &sh)
{
    int64_t o = 0;
    for (int k = 0; k < m; k++) {
        int64_t j = ldi(idx, idt, k * n + y);
        if (j < 0) j += sh.v[k];
        if (j < 0 || j >= sh.v[k]) return -1;
        o = o * sh.v[k] + j;
    }
    return o;
}

template <typename T>
__global__ void gather_nd_kernel(const T *x, T *y, const void *idx, int idt, int64_t n, int m,
                                 dims_arg sh, int64_t inner, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t off = nd_offset(idx, idt, e / inner, n, m, sh);
        y[e] = off >= 0 ? x[off * inner + e % inner] : T(0);
    }
}

/* The index columns and the row size of an nd gather or scatter into `full` (the array the
 * indices address). */
struct nd_geom {
    int m;
    int64_t n, inner, rows; /* index columns, elements per row, rows of full */
    dims_arg sh;
};

nd_geom geom_of(const hg_tensor *idx, const hg_tensor *full)
{
    nd_geom g{};
    g.m = (int)idx->shape[0];
    g.n = idx->size / g.m;
    g.inner = 1;
    g.rows = 1;
    for (int d = 0; d < full->ndim; d++) {
        if (d < g.m) {
            g.sh.v[d] = full->shape[d];
            g.rows *= full->shape[d];
        } else {
            g.inner *= full->shape[d];
        }
    }
    return g;
}

GPU_FWD(gather_nd_gpu)
{
    STREAM;
    const hg_tensor *x = in[0], *idx = in[1];
    const nd_geom g = geom_of(idx, x);
    const size_t es = hg_dtype_size(x->dtype);
    const int64_t total = g.n * g.inner;
    hg_status st = HG_OK;
#define GN(T)                                                                                  \
    st = launch(op->name, s, total, gather_nd_kernel<T>, (const T *)hg_data(x),                \
                (T *)hg_data(out[0]), (const void *)hg_data(idx), (int)idx->dtype, g.n, g.m, g.sh, \
                g.inner, total)
    if (!BY_SIZE(es, GN)) return bad_size(op, es);
#undef GN
    return st;
}

__global__ void nd_offsets_kernel(const void *idx, int idt, int64_t n, int m, dims_arg sh,
                                  int64_t *offs)
{
    GRID_LOOP(y, n) offs[y] = nd_offset(idx, idt, y, n, m, sh);
}

/* win[t]: the largest y whose offset is t (win starts at -1). */
__global__ void nd_winner_kernel(const int64_t *offs, int64_t n, int64_t *win)
{
    GRID_LOOP(y, n)
    {
        if (offs[y] >= 0) atomicMax((long long *)&win[offs[y]], (long long)y);
    }
}

template <typename T>
__global__ void nd_store_kernel(const T *data, T *o, const int64_t *offs, const int64_t *win,
                                int64_t inner, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t y = e / inner, off = offs[y];
        if (off >= 0 && win[off] == y) o[off * inner + e % inner] = data[e];
    }
}

/* The CPU's update of one element, tx_st(old + v), on a value's bits. */
__device__ __forceinline__ uint64_t add_bits(uint64_t bits, int dt, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: return __float_as_uint((float)((double)__uint_as_float((uint32_t)bits) + v));
    case HG_DTYPE_F64:
        return (uint64_t)__double_as_longlong(__longlong_as_double((long long)bits) + v);
    case HG_DTYPE_F16: return f2h((float)((double)h2f((uint16_t)bits) + v));
    case HG_DTYPE_I32: return (uint32_t)wrap32(f2i((double)(int32_t)(uint32_t)bits + v));
    case HG_DTYPE_I64: return (uint64_t)f2i((double)(int64_t)bits + v);
    case HG_DTYPE_I8: return (uint8_t)wrap8(f2i((double)(int8_t)(uint8_t)bits + v));
    case HG_DTYPE_BOOL: return (double)(uint8_t)bits + v != 0;
    default: return (uint8_t)(uint64_t)f2i((double)(uint8_t)bits + v);
    }
}

/* Element i of o (dtype dt) = tx_st(tx_ld(element) + v), atomically. One-byte elements update
 * their aligned 32-bit word: it lies in the same allocation (allocations start 256-byte
 * aligned) and the compare-and-swap writes its other bytes back unchanged. */
__device__ void atomic_add_as_cpu(void *o, int dt, int64_t i, double v)
{
    if (dt == HG_DTYPE_F64 || dt == HG_DTYPE_I64) {
        unsigned long long *a = (unsigned long long *)o + i, old = *a, was;
        do {
            was = old;
            old = atomicCAS(a, was, (unsigned long long)add_bits(was, dt, v));
        } while (old != was);
    } else if (dt == HG_DTYPE_F32 || dt == HG_DTYPE_I32) {
        unsigned *a = (unsigned *)o + i, old = *a, was;
        do {
            was = old;
            old = atomicCAS(a, was, (unsigned)add_bits(was, dt, v));
        } while (old != was);
    } else if (dt == HG_DTYPE_F16) {
        unsigned short *a = (unsigned short *)o + i, old = *a, was;
        do {
            was = old;
            old = atomicCAS(a, was, (unsigned short)add_bits(was, dt, v));
        } while (old != was);
    } else {
        uint8_t *p = (uint8_t *)o + i;
        unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3), old = *w, was;
        const unsigned sh = (unsigned)((uintptr_t)p & 3) * 8;
        do {
            was = old;
            const unsigned b = (unsigned)add_bits((was >> sh) & 0xffu, dt, v) & 0xffu;
            old = atomicCAS(w, was, (was & ~(0xffu << sh)) | (b << sh));
        } while (old != was);
    }
}

__global__ void nd_add_kernel(const void *data, void *o, int dt, const int64_t *offs, int64_t inner,
                              int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t off = offs[e / inner];
        if (off >= 0) atomic_add_as_cpu(o, dt, off * inner + e % inner, ld(data, dt, e));
    }
}

/* o (already holding its base values) gets data's rows at the places idx addresses, stored
 * (the last repeat wins) or added. */
hg_status scatter_rows(const hg_op_def *op, cudaStream_t s, int dev, const hg_tensor *data,
                       const hg_tensor *idx, hg_tensor *o, bool add)
{
    const nd_geom g = geom_of(idx, o);
    const int64_t total = g.n * g.inner;
    if (total <= 0) return HG_OK;
    const size_t nb = sizeof(int64_t) * (size_t)(g.n + (add ? 0 : g.rows));
    void *tmp = NULL;
    HG_TRY(hg_device_alloc(dev, nb, &tmp));
    int64_t *offs = (int64_t *)tmp, *win = offs + g.n;
    hg_status st = launch(op->name, s, g.n, nd_offsets_kernel, (const void *)hg_data(idx),
                          (int)idx->dtype, g.n, g.m, g.sh, offs);
    if (st == HG_OK && add) {
        st = launch(op->name, s, total, nd_add_kernel, (const void *)hg_data(data), hg_data(o),
                    (int)o->dtype, (const int64_t *)offs, g.inner, total);
    } else if (st == HG_OK) {
        st = hg_cuda_status(cudaMemsetAsync(win, 0xff, sizeof(int64_t) * (size_t)g.rows, s),
                            op->name);
        if (st == HG_OK)
            st = launch(op->name, s, g.n, nd_winner_kernel, (const int64_t *)offs, g.n, win);
        const size_t es = hg_dtype_size(o->dtype);
#define SC(T)                                                                                  \
    st = launch(op->name, s, total, nd_store_kernel<T>, (const T *)hg_data(data),              \
                (T *)hg_data(o), (const int64_t *)offs, (const int64_t *)win, g.inner, total)
        if (st == HG_OK && !BY_SIZE(es, SC)) st = bad_size(op, es);
#undef SC
    }
    hg_device_free(dev, tmp, nb); /* stream-ordered: the kernels above run first */
    return st;
}

GPU_FWD(scatter_nd_gpu)
{
    STREAM;
    HG_TRY(zero_fill(op, s, out[0]));
    return scatter_rows(op, s, ctx->device_id, in[0], in[1], out[0], false);
}

GPU_FWD(bwd_gather_nd_gpu)
{
    STREAM;
    HG_TRY(zero_fill(op, s, out[0]));
    return scatter_rows(op, s, ctx->device_id, in[0], in[1], out[0], true);
}

GPU_FWD(scatter_set_nd_gpu)
{
    STREAM;
    HG_TRY(copy_whole(op, s, out[0], in[0]));
    return scatter_rows(op, s, ctx->device_id, in[1], in[2], out[0], false);
}

GPU_FWD(scatter_add_like_nd_gpu)
{
    STREAM;
    HG_TRY(copy_whole(op, s, out[0], in[0]));
    return scatter_rows(op, s, ctx->device_id, in[1], in[2], out[0], true);
}

/* ---- depth_to_space / space_to_depth --------------------------------------------------------- */

/* The spatial array S (N, C, H, W) and the depth array D (N, C*b*b, H/b, W/b) are related by
 * D[n, (i*b + j)*C + k, h, w] = S[n, k, h*b + i, w*b + j]; one thread per element of D. */
template <typename T>
__global__ void depth_space_kernel(const T *src, T *dst, bool to_space, int64_t b, int64_t C,
                                   int64_t H, int64_t W, int64_t total)
{
    const int64_t h2 = H / b, w2 = W / b;
    GRID_LOOP(di, total)
    {
        int64_t r = di;
        const int64_t w = r % w2;
        r /= w2;
        const int64_t h = r % h2;
        r /= h2;
        const int64_t k = r % C;
        r /= C;
        const int64_t j = r % b;
        r /= b;
        const int64_t i = r % b, n = r / b;
        const int64_t si = ((n * C + k) * H + h * b + i) * W + w * b + j;
        if (to_space) dst[si] = src[di];
        else dst[di] = src[si];
    }
}

GPU_FWD(depth_space_gpu)
{
    STREAM;
    const bool to_space = strcmp(op->name, "depth_to_space") == 0;
    const hg_tensor *sp = to_space ? out[0] : in[0];
    const int64_t b = a->v[DS_BLOCK].i, total = sp->size;
    const size_t es = hg_dtype_size(sp->dtype);
    hg_status st = HG_OK;
#define DS(T)                                                                                  \
    st = launch(op->name, s, total, depth_space_kernel<T>, (const T *)hg_data(in[0]),          \
                (T *)hg_data(out[0]), to_space, b, sp->shape[1], sp->shape[2], sp->shape[3],   \
                total)
    if (!BY_SIZE(es, DS)) return bad_size(op, es);
#undef DS
    return st;
}

/* ---- _ravel_multi_index / _unravel_index --------------------------------------------------- */

__global__ void ravel_kernel(const void *x, void *y, int dt, hg_tuple t, int64_t n)
{
    GRID_LOOP(i, n)
    {
        uint64_t r = 0; /* wraps as the CPU's int64 arithmetic does */
        for (int j = 0; j < t.n; j++) r = r * (uint64_t)t.v[j] + (uint64_t)ldi(x, dt, i + j * n);
        sti(y, dt, i, (int64_t)r);
    }
}

__global__ void unravel_kernel(const void *x, void *y, int dt, hg_tuple t, int64_t n)
{
    GRID_LOOP(i, n)
    {
        int64_t idx = ldi(x, dt, i);
        for (int j = t.n - 1; j > 0; j--) { /* t.v[j] > 0 for j > 0 (infer checked) */
            const int64_t q = idx / t.v[j];
            sti(y, dt, i + j * n, idx - q * t.v[j]);
            idx = q;
        }
        sti(y, dt, i, idx);
    }
}

GPU_FWD(ravel_gpu)
{
    STREAM;
    const int64_t n = out[0]->size;
    return launch(op->name, s, n, ravel_kernel, (const void *)hg_data(in[0]), hg_data(out[0]),
                  (int)in[0]->dtype, a->v[RV_SHAPE].t, n);
}

GPU_FWD(unravel_gpu)
{
    STREAM;
    const int64_t n = in[0]->size;
    return launch(op->name, s, n, unravel_kernel, (const void *)hg_data(in[0]), hg_data(out[0]),
                  (int)in[0]->dtype, a->v[RV_SHAPE].t, n);
}

/* ---- _split_v2 ----------------------------------------------------------------------------- */

/* Piece [b0, b0 + w) of an axis of length len: y[o, r] = x[o, b0 * inner + r] over rows of w *
 * inner elements. */
template <typename T>
__global__ void split_kernel(const T *x, T *y, int64_t len, int64_t b0, int64_t row, int64_t inner,
                             int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t o = e / row, r = e % row;
        y[e] = x[(o * len + b0) * inner + r];
    }
}

GPU_FWD(split_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const int axis = (int)(a->v[SP_AXIS].i < 0 ? a->v[SP_AXIS].i + x->ndim : a->v[SP_AXIS].i);
    int64_t bounds[HG_MAX_TUPLE + 1], inner = 1, outer = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    const int64_t len = x->shape[axis];
    hg_split_bounds(a, len, bounds);
    const size_t es = hg_dtype_size(x->dtype);
    for (int i = 0; i < nout; i++) {
        const int64_t row = (bounds[i + 1] - bounds[i]) * inner, total = outer * row;
        hg_status st = HG_OK;
#define SP(T)                                                                                  \
    st = launch(op->name, s, total, split_kernel<T>, (const T *)hg_data(x), (T *)hg_data(out[i]), \
                len, bounds[i], row, inner, total)
        if (!BY_SIZE(es, SP)) return bad_size(op, es);
#undef SP
        HG_TRY(st);
    }
    return HG_OK;
}

/* ---- fill_element_0index, _onehot_encode --------------------------------------------------- */

/* o[i, j] = v[i] for j = idx[i] in [0, k) (a row with another index is left alone). */
__global__ void fill0_kernel(void *o, int odt, const void *v, int vdt, const void *idx, int idt,
                             int64_t k, int64_t n)
{
    GRID_LOOP(i, n)
    {
        const int64_t j = ldi(idx, idt, i);
        if (j >= 0 && j < k) st(o, odt, i * k + j, vdt < 0 ? 1.0 : ld(v, vdt, i));
    }
}

GPU_FWD(fill0_gpu)
{
    STREAM;
    hg_tensor *o = out[0];
    HG_TRY(copy_whole(op, s, o, in[0]));
    return launch(op->name, s, o->shape[0], fill0_kernel, hg_data(o), (int)o->dtype,
                  (const void *)hg_data(in[1]), (int)in[1]->dtype, (const void *)hg_data(in[2]),
                  (int)in[2]->dtype, o->shape[1], o->shape[0]);
}

GPU_FWD(onehot_gpu)
{
    STREAM;
    hg_tensor *o = out[0];
    HG_TRY(zero_fill(op, s, o));
    return launch(op->name, s, o->shape[0], fill0_kernel, hg_data(o), (int)o->dtype,
                  (const void *)NULL, -1, (const void *)hg_data(in[0]), (int)in[0]->dtype,
                  o->shape[1], o->shape[0]);
}

/* ---- khatri_rao -------------------------------------------------------------------------- */

#define KR_MAX 64 /* matrices per launch: their pointers travel in the kernel's arguments */

struct kr_args {
    const void *p[KR_MAX];
    int64_t rows[KR_MAX];
    int n;
};

/* Row r is the mixed-radix number (i_0, ..., i_{n-1}) with the last input fastest; the product
 * is taken in double in the CPU's order (last input first). */
__global__ void kr_kernel(kr_args m, int dt, void *y, int64_t cols, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t r = e / cols, c = e % cols;
        double p = 1;
        int64_t rem = r;
        for (int k = m.n - 1; k >= 0; k--) {
            const int64_t ik = rem % m.rows[k];
            rem /= m.rows[k];
            p *= ld(m.p[k], dt, ik * cols + c);
        }
        st(y, dt, e, p);
    }
}

GPU_FWD(khatri_rao_gpu)
{
    STREAM;
    if (nin > KR_MAX)
        return hg_error(HG_ERR_UNSUPPORTED, "%s: at most %d matrices on GPU, got %d", op->name,
                        KR_MAX, nin);
    kr_args m{};
    m.n = nin;
    for (int k = 0; k < nin; k++) {
        m.p[k] = hg_data(in[k]);
        m.rows[k] = in[k]->shape[0];
    }
    hg_tensor *o = out[0];
    return launch(op->name, s, o->size, kr_kernel, m, (int)o->dtype, hg_data(o), o->shape[1],
                  o->size);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_tensor[] = {
    {"_sum_to_like", sum_to_like_gpu},
    {"_identity_with_attr_like_rhs", copy_gpu},
    {"reshape_like", copy_gpu},
    {"shape_array", shape_array_gpu},
    {"size_array", size_array_gpu},
    {"argmax_channel", argmax_channel_gpu},
    {"batch_take", batch_take_gpu},
    {"gather_nd", gather_nd_gpu},
    {"scatter_nd", scatter_nd_gpu},
    {"_backward_gather_nd", bwd_gather_nd_gpu},
    {"_scatter_set_nd", scatter_set_nd_gpu},
    {"_scatter_add_like_nd", scatter_add_like_nd_gpu},
    {"depth_to_space", depth_space_gpu},
    {"space_to_depth", depth_space_gpu},
    {"_ravel_multi_index", ravel_gpu},
    {"_unravel_index", unravel_gpu},
    {"_split_v2", split_gpu},
    {"fill_element_0index", fill0_gpu},
    {"_onehot_encode", onehot_gpu},
    {"khatri_rao", khatri_rao_gpu},
    {NULL, NULL},
};
