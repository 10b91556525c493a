/* GPU kernels of the matrix products (ops/matrix.c): dot, batch_dot, FullyConnected and their
 * _backward_ ops.
 *
 * As on the CPU every operand is contiguous, so an N-D operand is a 2-D matrix after grouping
 * its axes and a transpose flag is a BLAS transpose: nothing is copied. The products go to
 * cuBLAS through hg_gemm_rm (float32, float64, and float16 accumulating in float32, which is
 * what the CPU's float32 staging of float16 computes); the shape rules accept no other dtype.
 * FullyConnected seeds C with the bias and multiplies with beta 1, as the CPU does, so the bias
 * is added inside the GEMM's accumulation (one rounding for float16). A contraction over zero
 * elements gives zeros (or the bias) without calling cuBLAS, which needs leading dims >= 1.
 */
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_rt.h"
#include "ops/matrix.h"

namespace
{

/* The stream of the kernel's device, made current for the launches that follow. */
hg_status begin(const hg_exec_ctx *ctx, cudaStream_t *s)
{
    HG_TRY(hg_cuda_use(ctx->device_id));
    *s = hg_cuda_stream(ctx->device_id);
    return *s ? HG_OK : HG_ERR_INTERNAL; /* the message is set */
}

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }

/* ---- shapes (the CPU's 2-D views, ops/matrix.c) ----------------------------------------- */

int64_t prod_dims(const int64_t *s, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= s[i];
    return p;
}

/* op(lhs) is M x K, op(rhs) is K x N. */
struct mm_dims {
    int64_t M, N, K;
};

/* dot: lhs's axes group as (all but last, last), or (first, rest) when transposed; rhs's as
 * (first, rest), or (all but last, last) when transposed; a 1-D operand is a row / column. */
mm_dims dot_dims(const hg_tensor *l, const hg_tensor *r, bool ta, bool tb)
{
    mm_dims d;
    if (l->ndim == 1) {
        d.M = 1;
        d.K = l->shape[0];
    } else if (ta) {
        d.K = l->shape[0];
        d.M = prod_dims(l->shape + 1, l->ndim - 1);
    } else {
        d.M = prod_dims(l->shape, l->ndim - 1);
        d.K = l->shape[l->ndim - 1];
    }
    if (r->ndim == 1) d.N = 1;
    else if (tb) d.N = prod_dims(r->shape, r->ndim - 1);
    else d.N = prod_dims(r->shape + 1, r->ndim - 1);
    return d;
}

/* batch_dot: the last two axes of each operand, over the leading batch axes. */
mm_dims batch_dims(const hg_tensor *l, const hg_tensor *r, bool ta, bool tb, int64_t *batch)
{
    int n = l->ndim;
    mm_dims d;
    d.M = l->shape[ta ? n - 1 : n - 2];
    d.K = l->shape[ta ? n - 2 : n - 1];
    d.N = r->shape[tb ? n - 2 : n - 1];
    *batch = prod_dims(l->shape, n - 2);
    return d;
}

/* FullyConnected: rows M and inner size K of the data. */
void fc_rows(const hg_tensor *x, bool flatten, int64_t *M, int64_t *K)
{
    if (flatten) {
        *M = x->shape[0];
        *K = prod_dims(x->shape + 1, x->ndim - 1);
    } else {
        *M = prod_dims(x->shape, x->ndim - 1);
        *K = x->shape[x->ndim - 1];
    }
}

/* ---- GEMM --------------------------------------------------------------------------------- */

/* C[i] = op(A[i]) op(B[i]) (+ C[i] when beta is 1) for i < batch, row-major, matrices packed
 * one after the other. */
hg_status gemm(const hg_op_def *op, int dev, cudaStream_t s, hg_dtype dt, bool ta, bool tb,
               int64_t batch, int64_t M, int64_t N, int64_t K, const void *A, const void *B,
               void *C, double beta)
{
    if (batch == 0 || M == 0 || N == 0) return HG_OK;
    if (K == 0) {
        if (beta != 0) return HG_OK;
        size_t bytes = (size_t)(batch * M * N) * hg_dtype_size(dt);
        return hg_cuda_status(cudaMemsetAsync(C, 0, bytes, s), op->name);
    }
    int64_t lda = ta ? M : K, ldb = tb ? K : N;
    return hg_gemm_rm(dev, op->name, dt, ta, tb, M, N, K, 1.0, A, lda, M * K, B, ldb, K * N, beta,
                      C, N, M * N, batch);
}

/* The gradient of one operand of C[i] = op(A[i]) op(B[i]) in that operand's storage layout, as
 * one GEMM (the CPU's gemm_grad): wrt 0 gives dA, wrt 1 gives dB. */
hg_status gemm_grad(const hg_op_def *op, int dev, cudaStream_t s, hg_dtype dt, int wrt, bool ta,
                    bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, const void *dC,
                    const void *A, const void *B, void *out)
{
    if (wrt == 0 && !ta) return gemm(op, dev, s, dt, false, !tb, batch, M, K, N, dC, B, out, 0);
    if (wrt == 0) return gemm(op, dev, s, dt, tb, true, batch, K, M, N, B, dC, out, 0);
    if (!tb) return gemm(op, dev, s, dt, !ta, false, batch, K, N, M, A, dC, out, 0);
    return gemm(op, dev, s, dt, true, ta, batch, N, K, M, dC, A, out, 0);
}

/* ---- FullyConnected's bias ---------------------------------------------------------------- */

/* o[i, j] = b[j]: bits copied, so one kernel per element size serves every float dtype. */
template <typename T>
__global__ void bias_rows(T *__restrict__ o, const T *__restrict__ b, int64_t n, int64_t H)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        o[i] = b[i % H];
}

hg_status fill_bias(const hg_op_def *op, cudaStream_t s, hg_dtype dt, void *o, const void *b,
                    int64_t M, int64_t H)
{
    int64_t n = M * H;
    unsigned g = hg_cuda_blocks(n);
    if (dt == HG_DTYPE_F64)
        bias_rows<<<g, HG_CUDA_THREADS, 0, s>>>((uint64_t *)o, (const uint64_t *)b, n, H);
    else if (dt == HG_DTYPE_F32)
        bias_rows<<<g, HG_CUDA_THREADS, 0, s>>>((uint32_t *)o, (const uint32_t *)b, n, H);
    else bias_rows<<<g, HG_CUDA_THREADS, 0, s>>>((uint16_t *)o, (const uint16_t *)b, n, H);
    return hg_cuda_launched(op->name);
}

/* Column sums of a rows x cols matrix (the bias gradient), accumulated in double as the CPU
 * does, then rounded to the dtype (float16 through float). */
__device__ __forceinline__ double ld_d(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ double ld_d(const double *p, int64_t i) { return p[i]; }
__device__ __forceinline__ double ld_d(const uint16_t *p, int64_t i) { return h2f(p[i]); }
__device__ __forceinline__ void st_d(float *p, int64_t i, double v) { p[i] = (float)v; }
__device__ __forceinline__ void st_d(double *p, int64_t i, double v) { p[i] = v; }
__device__ __forceinline__ void st_d(uint16_t *p, int64_t i, double v) { p[i] = f2h((float)v); }

/* One thread per column: consecutive threads read consecutive columns of a row. */
template <typename T>
__global__ void colsum_thread(const T *__restrict__ x, T *__restrict__ y, int64_t rows,
                              int64_t cols)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        double acc = 0;
        for (int64_t r = 0; r < rows; r++) acc += ld_d(x, r * cols + c);
        st_d(y, c, acc);
    }
}

#define COLSUM_BLOCK 256
/* One block per column for few, long columns: a strided sum per thread, then a tree. */
template <typename T>
__global__ void colsum_block(const T *__restrict__ x, T *__restrict__ y, int64_t rows, int64_t cols)
{
    __shared__ double sh[COLSUM_BLOCK];
    for (int64_t c = blockIdx.x; c < cols; c += gridDim.x) {
        double acc = 0;
        for (int64_t r = threadIdx.x; r < rows; r += COLSUM_BLOCK) acc += ld_d(x, r * cols + c);
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (int w = COLSUM_BLOCK / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) st_d(y, c, sh[0]);
        __syncthreads();
    }
}

template <typename T>
void colsum_launch(cudaStream_t s, const void *x, void *y, int64_t rows, int64_t cols)
{
    if (cols < 2048 && rows >= 256) {
        unsigned g = (unsigned)(cols < HG_CUDA_MAX_BLOCKS ? cols : HG_CUDA_MAX_BLOCKS);
        colsum_block<T><<<g, COLSUM_BLOCK, 0, s>>>((const T *)x, (T *)y, rows, cols);
    } else {
        colsum_thread<T>
            <<<hg_cuda_blocks(cols), HG_CUDA_THREADS, 0, s>>>((const T *)x, (T *)y, rows, cols);
    }
}

/* ---- kernels ------------------------------------------------------------------------------ */

hg_status dot_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                  hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    mm_dims d = dot_dims(in[0], in[1], ta, tb);
    return gemm(op, ctx->device_id, s, in[0]->dtype, ta, tb, 1, d.M, d.N, d.K, hg_data(in[0]),
                hg_data(in[1]), hg_data(out[0]), 0);
}

hg_status batch_dot_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                        hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    int64_t batch;
    mm_dims d = batch_dims(in[0], in[1], ta, tb, &batch);
    return gemm(op, ctx->device_id, s, in[0]->dtype, ta, tb, batch, d.M, d.N, d.K, hg_data(in[0]),
                hg_data(in[1]), hg_data(out[0]), 0);
}

/* out[M, H] = x[M, K] . w[H, K]^T (+ bias[H] on every row). */
hg_status fc_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                 hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    int64_t M, K, H = a->v[K_NUM_HIDDEN].i;
    hg_dtype dt = in[0]->dtype;
    fc_rows(in[0], a->v[K_FLATTEN].b, &M, &K);
    bool bias = nin > 2;
    if (bias) HG_TRY(fill_bias(op, s, dt, hg_data(out[0]), hg_data(in[2]), M, H));
    return gemm(op, ctx->device_id, s, dt, false, true, 1, M, H, K, hg_data(in[0]), hg_data(in[1]),
                hg_data(out[0]), bias ? 1.0 : 0.0);
}

/* Inputs (dC, lhs, rhs). */
hg_status dot_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    mm_dims d = dot_dims(in[1], in[2], ta, tb);
    return gemm_grad(op, ctx->device_id, s, in[1]->dtype, (int)a->v[K_WRT].i, ta, tb, 1, d.M, d.N,
                     d.K, hg_data(in[0]), hg_data(in[1]), hg_data(in[2]), hg_data(out[0]));
}

hg_status batch_dot_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    bool ta = a->v[K_TA].b, tb = a->v[K_TB].b;
    int64_t batch;
    mm_dims d = batch_dims(in[1], in[2], ta, tb, &batch);
    return gemm_grad(op, ctx->device_id, s, in[1]->dtype, (int)a->v[K_WRT].i, ta, tb, batch, d.M,
                     d.N, d.K, hg_data(in[0]), hg_data(in[1]), hg_data(in[2]), hg_data(out[0]));
}

/* Inputs (dy, data, weight[, bias]); wrt 2 is the bias: dy summed over the batch rows. */
hg_status fc_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                     hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(begin(ctx, &s));
    int64_t M, K, H = a->v[K_NUM_HIDDEN].i;
    int wrt = (int)a->v[K_WRT].i;
    hg_dtype dt = in[1]->dtype;
    fc_rows(in[1], a->v[K_FLATTEN].b, &M, &K);
    if (wrt == 2) {
        if (dt == HG_DTYPE_F32) colsum_launch<float>(s, hg_data(in[0]), hg_data(out[0]), M, H);
        else if (dt == HG_DTYPE_F64)
            colsum_launch<double>(s, hg_data(in[0]), hg_data(out[0]), M, H);
        else colsum_launch<uint16_t>(s, hg_data(in[0]), hg_data(out[0]), M, H);
        return hg_cuda_launched(op->name);
    }
    return gemm_grad(op, ctx->device_id, s, dt, wrt, false, true, 1, M, H, K, hg_data(in[0]),
                     hg_data(in[1]), hg_data(in[2]), hg_data(out[0]));
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_blas[] = {
    {"dot", dot_gpu},
    {"batch_dot", batch_dot_gpu},
    {"FullyConnected", fc_gpu},
    {"_backward_dot", dot_bwd_gpu},
    {"_backward_batch_dot", batch_dot_bwd_gpu},
    {"_backward_FullyConnected", fc_bwd_gpu},
    {NULL, NULL},
};
