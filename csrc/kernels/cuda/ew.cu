/* hg_gpu_kernels_ew: GPU kernels of the element-wise ops of elemwise_binary.c and
 * elemwise_unary.c.
 *
 * Generated from the lists of ops/ew_list.h that the CPU tile functions are stamped from: each
 * expression becomes a device functor (U_<id> of v, B_<id> of l and r) evaluated in the element
 * type, each op row a row {name, kernel} of the table, the kernel chosen by the row's KIND. C++
 * picks the same float or double math functions there as C does on the CPU, so the GPU computes
 * the CPU's expression, up to the last bits of the math library and FMA contraction.
 *
 * The driver mirrors core/ew.c: the output is contiguous, the inputs broadcast against it with
 * stride 0 in broadcast dims, and dims are collapsed where both inputs are contiguous across
 * them. The collapsed 1-d case (equal shapes, a one-element operand) takes a flat kernel; the
 * rest an N-d kernel that gets the collapsed shape and strides by value. float16 is computed in
 * float32 and rounded once to half, as the CPU's float16 fallback does; the _*_scalar ops convert
 * their scalar to the element type on the host, as the CPU's tile does. One thread per element in
 * grid-stride loops, 64-bit sizes; everything is enqueued on the device's stream and nothing waits
 * for it. An output may share input 0's buffer (in-place ops): each thread reads its element's
 * inputs before it writes the element.
 */
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#include "kernels/cuda/cuda_rt.h"
#include "ops/ew_attrs.h"
#include "ops/ew_list.h"

/* The shared expressions compare uint8 values with 0 (abs, sign, relu): pointless for uint8,
 * meaningful for the signed types they are also instantiated for. */
#pragma nv_diag_suppress 186

#define KERNEL_ARGS                                                                             \
    const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,                    \
        hg_tensor *const *in, int nout, hg_tensor *const *out

/* ---- element types ---------------------------------------------------------------------------
 * io<S>: how a stored element S is loaded into the type C the expression computes in, and
 * stored back. float16 (IEEE half bits, as the CPU stores them) computes in float. */
template <class S> struct io {
    typedef S C;
    static __device__ __forceinline__ C ld(S x) { return x; }
    static __device__ __forceinline__ S st(C x) { return x; }
};
template <> struct io<__half> {
    typedef float C;
    static __device__ __forceinline__ float ld(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half st(float x) { return __float2half_rn(x); }
};

template <class T> struct is_float : std::is_floating_point<T> {};

/* The value of an expression as element type T, as the CPU tile's cast (T)(expr) gives it. A
 * floating value out of an integer type's range (pow and hypot of integers compute in double)
 * is undefined in C; the CPU build runs on x86-64, whose cvttsd2si gives the "integer
 * indefinite" 0x80..0 of its 32-bit form (narrower types keep its low bits) or of its 64-bit
 * form for int64, NaN included. The GPU's conversions saturate instead: mirror x86. */
template <class T, class X> static __device__ __forceinline__ T to_elem(X x)
{
    if constexpr (is_float<T>::value || !is_float<X>::value) return (T)x;
    else if constexpr (sizeof(T) == 8)
        return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (T)x : (T)INT64_MIN;
    else return (T)(x > -2147483649.0 && x < 2147483648.0 ? (int32_t)x : INT32_MIN);
}

/* ---- the expressions as functors -------------------------------------------------------------
 * TYPES F and V: float types only; S: one expression for every type; A: FEXPR for float types,
 * IEXPR for integer types (ops/ew_list.h). Each evaluates in T and converts to T (to_elem), as
 * the CPU tile. */
#define FN_F(P, ARGS, USE, ID, FEXPR, IEXPR)                                                    \
    struct P##ID {                                                                              \
        template <class T> static __device__ __forceinline__ T f ARGS                           \
        {                                                                                       \
            static_assert(is_float<T>::value, #ID " has float types only");                    \
            USE;                                                                                \
            return to_elem<T>(FEXPR);                                                              \
        }                                                                                       \
    };
#define FN_V FN_F
#define FN_S(P, ARGS, USE, ID, FEXPR, IEXPR)                                                    \
    struct P##ID {                                                                              \
        template <class T> static __device__ __forceinline__ T f ARGS                           \
        {                                                                                       \
            USE;                                                                                \
            return to_elem<T>(FEXPR);                                                              \
        }                                                                                       \
    };
#define FN_A(P, ARGS, USE, ID, FEXPR, IEXPR)                                                    \
    struct P##ID {                                                                              \
        template <class T> static __device__ __forceinline__ T f ARGS                           \
        {                                                                                       \
            USE;                                                                                \
            if constexpr (is_float<T>::value) return to_elem<T>(FEXPR);                            \
            else return to_elem<T>(IEXPR);                                                         \
        }                                                                                       \
    };
#define UNARY_FN(TYPES, ID, FEXPR, IEXPR) FN_##TYPES(U_, (T v), (void)v, ID, FEXPR, IEXPR)
#define BINARY_FN(TYPES, ID, FEXPR, IEXPR)                                                      \
    FN_##TYPES(B_, (T l, T r), ((void)l, (void)r), ID, FEXPR, IEXPR)
HG_EW_UNARY_EXPRS(UNARY_FN)
HG_EW_BINARY_EXPRS(BINARY_FN)
HG_EW_ACT_BW_EXPRS(BINARY_FN)
#undef UNARY_FN
#undef BINARY_FN

/* One-operand maps: a unary expression, a rounding expression (the identity on integers), a
 * binary expression with the scalar on the right (SCALAR) or on the left (RSCALAR). */
template <class E> struct unary_fn {
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        return E::template f<C>(v);
    }
};
template <class E> struct round_fn {
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (is_float<C>::value) return E::template f<C>(v);
        else return v;
    }
};
template <class E, class C, bool Rev> struct scalar_fn {
    C s;
    __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (Rev) return E::template f<C>(s, v);
        else return E::template f<C>(v, s);
    }
};

/* ---- kernels ------------------------------------------------------------------------------ */
/* Grid-stride loops: for (int64_t i = first(); i < n; i += stride()). */
static __device__ __forceinline__ int64_t first()
{
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
static __device__ __forceinline__ int64_t stride() { return (int64_t)gridDim.x * blockDim.x; }

/* y[i] = fn(x[i]): unary and scalar ops (their output has the input's shape). */
template <class S, class Fn> __global__ void k_map(int64_t n, const S *x, S *y, Fn fn)
{
    for (int64_t i = first(); i < n; i += stride()) y[i] = io<S>::st(fn(io<S>::ld(x[i])));
}

/* o[i] = E(a[i * sa], b[i * sb]) with strides 0 or 1: the collapsed 1-d case. */
template <class E, class S>
__global__ void k_binary_flat(int64_t n, const S *a, int64_t sa, const S *b, int64_t sb, S *o)
{
    typedef typename io<S>::C C;
    for (int64_t i = first(); i < n; i += stride())
        o[i] = io<S>::st(E::template f<C>(io<S>::ld(a[i * sa]), io<S>::ld(b[i * sb])));
}

/* The collapsed broadcast: dims 0..nd-1 (outermost first) of the output and each input's
 * strides in elements (0: broadcast). Passed by value. */
struct ew_dims {
    int nd;
    int64_t shape[HG_MAX_NDIM];
    int64_t sa[HG_MAX_NDIM], sb[HG_MAX_NDIM];
};

/* Input offsets of output element i, in index type I (32-bit when the output is small enough:
 * then every offset is too, and the divisions are cheaper). Unrolled so that the dims are read
 * at fixed positions of the parameter block. */
template <class I> __device__ __forceinline__ void ew_offsets(I i, const ew_dims &d, I *oa, I *ob)
{
    I pa = 0, pb = 0;
#pragma unroll
    for (int k = HG_MAX_NDIM - 1; k >= 0; k--) {
        if (k < d.nd) {
            I dim = (I)d.shape[k], idx = i % dim;
            i /= dim;
            pa += idx * (I)d.sa[k];
            pb += idx * (I)d.sb[k];
        }
    }
    *oa = pa;
    *ob = pb;
}

template <class E, class S>
__global__ void k_binary_nd(int64_t n, const S *a, const S *b, S *o, ew_dims d)
{
    typedef typename io<S>::C C;
    if (n <= (int64_t)UINT32_MAX) {
        for (int64_t i = first(); i < n; i += stride()) {
            uint32_t oa, ob;
            ew_offsets<uint32_t>((uint32_t)i, d, &oa, &ob);
            o[i] = io<S>::st(E::template f<C>(io<S>::ld(a[oa]), io<S>::ld(b[ob])));
        }
    } else {
        for (int64_t i = first(); i < n; i += stride()) {
            int64_t oa, ob;
            ew_offsets<int64_t>(i, d, &oa, &ob);
            o[i] = io<S>::st(E::template f<C>(io<S>::ld(a[oa]), io<S>::ld(b[ob])));
        }
    }
}

/* ---- host side ---------------------------------------------------------------------------- */
template <class S> struct tag {
    typedef S type;
};

/* Calls fn(tag<S>()) with the storage type of dt: float types always, integer types when Ints
 * (the op kind has integer forms). Other dtypes: the CPU driver's error. */
template <bool Ints, class Fn> static hg_status by_dtype(const hg_op_def *op, hg_dtype dt, Fn fn)
{
    switch (dt) {
    case HG_DTYPE_F32: return fn(tag<float>());
    case HG_DTYPE_F64: return fn(tag<double>());
    case HG_DTYPE_F16: return fn(tag<__half>());
    default: break;
    }
    if constexpr (Ints) {
        switch (dt) {
        case HG_DTYPE_U8: return fn(tag<uint8_t>());
        case HG_DTYPE_I8: return fn(tag<int8_t>());
        case HG_DTYPE_I32: return fn(tag<int32_t>());
        case HG_DTYPE_I64: return fn(tag<int64_t>());
        default: break;
        }
    }
    return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name, hg_dtype_name(dt));
}

/* The dtypes the CPU runs: a tile function for dt, or float16 through float32's. */
static hg_status check_dtype(const hg_op_def *op, hg_dtype dt)
{
    if (op->ew[dt] || (dt == HG_DTYPE_F16 && op->ew[HG_DTYPE_F32])) return HG_OK;
    return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported", op->name, hg_dtype_name(dt));
}

static hg_status stream_of(const hg_exec_ctx *ctx, cudaStream_t *s)
{
    HG_TRY(hg_cuda_use(ctx->device_id));
    *s = hg_cuda_stream(ctx->device_id);
    return *s ? HG_OK : HG_ERR_INTERNAL; /* the message is set */
}

/* Broadcast strides of in[0] (and in[1]) against out, collapsed as core/ew.c collapses them. */
static void plan_dims(int nin, hg_tensor *const *in, const hg_tensor *out, ew_dims *d)
{
    int nd = out->ndim;
    int64_t sa[HG_MAX_NDIM], sb[HG_MAX_NDIM];
    for (int k = 0; k < 2 && k < nin; k++) {
        const hg_tensor *t = in[k];
        int64_t *s = k ? sb : sa, st = 1;
        for (int i = nd - 1; i >= 0; i--) {
            int ti = i - (nd - t->ndim);
            int64_t dim = ti >= 0 ? t->shape[ti] : 1;
            s[i] = (dim == 1 && out->shape[i] != 1) ? 0 : st;
            st *= dim;
        }
    }
    if (nin < 2)
        for (int i = 0; i < nd; i++) sb[i] = 0;
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (out->shape[i] == 1) continue;
        if (m > 0 && d->sa[m - 1] == sa[i] * out->shape[i] &&
            d->sb[m - 1] == sb[i] * out->shape[i]) {
            d->shape[m - 1] *= out->shape[i];
            d->sa[m - 1] = sa[i];
            d->sb[m - 1] = sb[i];
            continue;
        }
        d->shape[m] = out->shape[i];
        d->sa[m] = sa[i];
        d->sb[m] = sb[i];
        m++;
    }
    if (m == 0) { /* all ones: a single element */
        d->shape[0] = 1;
        d->sa[0] = d->sb[0] = 1;
        m = 1;
    }
    d->nd = m;
}

/* SAME, BCAST and the _backward_<act> ops: out = E(in[0], in[1]). Same-shape ops (Bcast false:
 * hg_infer_same made the shapes equal) are flat. */
template <class E, bool Ints, bool Bcast> static hg_status binary_gpu(KERNEL_ARGS)
{
    const hg_tensor *y = out[0];
    int64_t n = y->size;
    if (n == 0) return HG_OK;
    HG_TRY(check_dtype(op, in[0]->dtype));
    cudaStream_t s;
    HG_TRY(stream_of(ctx, &s));
    ew_dims d;
    memset(&d, 0, sizeof d);
    if constexpr (Bcast) {
        plan_dims(nin, in, y, &d);
    } else {
        d.nd = 1;
        d.sa[0] = d.sb[0] = 1;
    }
    return by_dtype<Ints>(op, in[0]->dtype, [&](auto t) {
        typedef typename decltype(t)::type S;
        const S *pa = (const S *)hg_data(in[0]), *pb = (const S *)hg_data(in[1]);
        S *po = (S *)hg_data(y);
        if constexpr (Bcast) { /* only broadcasting ops need (and instantiate) the N-d kernel */
            if (d.nd > 1) {
                k_binary_nd<E, S><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(n, pa, pb, po, d);
                return hg_cuda_launched(op->name);
            }
        }
        k_binary_flat<E, S><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(n, pa, d.sa[0] ? 1 : 0,
                                                                          pb, d.sb[0] ? 1 : 0, po);
        return hg_cuda_launched(op->name);
    });
}

/* Unary ops and Activation's act_types: out = Fn(in[0]). */
template <class Fn, bool Ints> static hg_status unary_gpu(KERNEL_ARGS)
{
    int64_t n = out[0]->size;
    if (n == 0) return HG_OK;
    HG_TRY(check_dtype(op, in[0]->dtype));
    cudaStream_t s;
    HG_TRY(stream_of(ctx, &s));
    return by_dtype<Ints>(op, in[0]->dtype, [&](auto t) {
        typedef typename decltype(t)::type S;
        k_map<S><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(n, (const S *)hg_data(in[0]),
                                                               (S *)hg_data(out[0]), Fn());
        return hg_cuda_launched(op->name);
    });
}

/* _*_scalar (Rev false: data op scalar) and _r*_scalar (Rev true: scalar op data). The scalar
 * is converted to the type the expression computes in here, on the host, as the CPU tile
 * converts it (float for float16). is_int only matters to the front end (the CPU ignores it). */
template <class E, bool Rev> static hg_status scalar_gpu(KERNEL_ARGS)
{
    int64_t n = out[0]->size;
    if (n == 0) return HG_OK;
    HG_TRY(check_dtype(op, in[0]->dtype));
    cudaStream_t s;
    HG_TRY(stream_of(ctx, &s));
    return by_dtype<true>(op, in[0]->dtype, [&](auto t) {
        typedef typename decltype(t)::type S;
        typedef typename io<S>::C C;
        scalar_fn<E, C, Rev> fn = {(C)a->v[SC_SCALAR].f};
        k_map<S><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(n, (const S *)hg_data(in[0]),
                                                               (S *)hg_data(out[0]), fn);
        return hg_cuda_launched(op->name);
    });
}

/* The kernel of each op kind of ops/ew_list.h for expression ID. */
#define GPU_SAME(ID) binary_gpu<B_##ID, true, false>
#define GPU_BCAST(ID) binary_gpu<B_##ID, true, true>
#define GPU_SCALAR(ID) scalar_gpu<B_##ID, false>
#define GPU_RSCALAR(ID) scalar_gpu<B_##ID, true>
#define GPU_UN(ID) unary_gpu<unary_fn<U_##ID>, false>
#define GPU_UN_ALL(ID) unary_gpu<unary_fn<U_##ID>, true>
#define GPU_UN_ROUND(ID) unary_gpu<round_fn<U_##ID>, true>
#define GPU_ACT(ID) activation_gpu
#define GPU_BW_ALL(ID) binary_gpu<B_##ID, true, false>
#define GPU_BW_FLOAT(ID) binary_gpu<B_##ID, false, false>

/* Activation: the kernel of the act_type's own op kind and expression. */
static hg_status activation_gpu(KERNEL_ARGS)
{
    switch (a->v[AC_ACT_TYPE].i) {
#define ACT_CASE(ID, NAME, MK, FN, BW_X)                                                        \
    case ACT_##ID: return GPU_##MK(FN)(op, a, ctx, nin, in, nout, out);
        ACT_TYPES(ACT_CASE)
#undef ACT_CASE
    default: break;
    }
    return hg_error(HG_ERR_INTERNAL, "%s: act_type %lld out of range", op->name,
                    (long long)a->v[AC_ACT_TYPE].i);
}

/* ---- add_n ---------------------------------------------------------------------------------
 * The CPU sums the inputs in order into an accumulator per element: float32/float64 in their
 * own type, float16 in float (rounded once), integers in the unsigned type of their width (so
 * sums wrap). Up to ADDN_PTRS inputs go to one launch, by value; more are summed in passes
 * through a device buffer of accumulators, and the output is written by the last pass only, so
 * it may share any input's buffer. */
#define ADDN_PTRS 64
template <class S> struct addn_acc {
    typedef typename io<S>::C A;
};
template <> struct addn_acc<int8_t> {
    typedef uint8_t A;
};
template <> struct addn_acc<int32_t> {
    typedef uint32_t A;
};
template <> struct addn_acc<int64_t> {
    typedef uint64_t A;
};

template <class S> struct addn_ptrs {
    const S *x[ADDN_PTRS];
};

/* acc_in NULL: the first pass (starts from x[0]); acc_out NULL: the last pass (writes y). */
template <class S, class A>
__global__ void k_addn(int64_t n, addn_ptrs<S> p, int k, const A *acc_in, A *acc_out, S *y)
{
    for (int64_t i = first(); i < n; i += stride()) {
        A s = acc_in ? acc_in[i] : (A)io<S>::ld(p.x[0][i]);
        for (int j = acc_in ? 0 : 1; j < k; j++) s = (A)(s + (A)io<S>::ld(p.x[j][i]));
        if (acc_out) acc_out[i] = s;
        else y[i] = io<S>::st((typename io<S>::C)s);
    }
}

static hg_status addn_gpu(KERNEL_ARGS)
{
    int64_t n = out[0]->size;
    if (n == 0) return HG_OK;
    cudaStream_t s;
    HG_TRY(stream_of(ctx, &s));
    int dev = ctx->device_id;
    /* bool is rejected by addn_infer, as on the CPU. */
    return by_dtype<true>(op, in[0]->dtype, [&](auto t) {
        typedef typename decltype(t)::type S;
        typedef typename addn_acc<S>::A A;
        A *acc = NULL;
        size_t acc_bytes = 0;
        if (nin > ADDN_PTRS) {
            acc_bytes = sizeof(A) * (size_t)n;
            HG_TRY(hg_device_alloc(dev, acc_bytes, (void **)&acc));
        }
        hg_status st = HG_OK;
        for (int b = 0; b < nin && st == HG_OK; b += ADDN_PTRS) {
            int k = nin - b < ADDN_PTRS ? nin - b : ADDN_PTRS;
            addn_ptrs<S> p;
            memset(&p, 0, sizeof p);
            for (int j = 0; j < k; j++) p.x[j] = (const S *)hg_data(in[b + j]);
            bool last = b + k >= nin;
            k_addn<S, A><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(
                n, p, k, b ? acc : NULL, last ? NULL : acc, (S *)hg_data(out[0]));
            st = hg_cuda_launched(op->name);
        }
        if (acc) hg_device_free(dev, acc, acc_bytes); /* stream-ordered: after the passes */
        return st;
    });
}

/* ---- the table ------------------------------------------------------------------------------
 * Every row of the op lists, plus add_n (its own CPU forward). */
#define GPU_ROW(KIND, NAME, ALIASES, ID, DOC, FL, GR) {NAME, GPU_##KIND(ID)},
#define GPU_BW_ROW(TYPES, NAME, ID, VNAME, DOC, GR) {NAME, GPU_BW_##TYPES(ID)},

/* The lists expand to rows, which clang-format would run together. */
/* clang-format off */
extern "C" const hg_gpu_kernel hg_gpu_kernels_ew[] = {
    HG_EW_BINARY_OPS(GPU_ROW)
    HG_EW_UNARY_OPS(GPU_ROW)
    HG_EW_ACT_BW_OPS(GPU_BW_ROW)
    {"add_n", addn_gpu},
    {NULL, NULL},
};
/* clang-format on */
