/* GPU kernels of multi-head attention's interleaved matmuls (ops/contrib_transformer.c):
 * _contrib_interleaved_matmul_{selfatt_qk, selfatt_valatt, encdec_qk, encdec_valatt} and their
 * _backward_interleaved_matmul_* ops.
 *
 * Each operand is a strided batch of matrices read in place: in a (seq, batch, heads * parts *
 * dim) tensor, the matrix of (batch b, head h) for part p has its rows batch * heads * parts * dim
 * apart, starts at (b * heads + h) * parts * dim + p * dim, so consecutive (b, h) batches are
 * parts * dim apart. Every product is then one strided-batched GEMM through hg_gemm_rm. The
 * outputs are zeroed first, as the CPU's: a gradient leaves the parts of the interleaved input
 * that the op does not read at zero, and a contraction over zero elements gives zeros without
 * calling cuBLAS. The CPU accumulates each dot product in double; cuBLAS accumulates float32
 * in float32 (no TF32 unless hg_gpu_set_tf32 asked for it), so float32 differs by rounding.
 */
#include <math.h>

#include "kernels/cuda/cuda_rt.h"
#include "ops/contrib_transformer.h"

namespace
{

/* One head-batched operand: base pointer (offset applied), row stride, batch stride. */
struct mat {
    const void *p;
    int64_t ld, stride;
};

mat part_of(const hg_tensor *t, int64_t heads, int64_t parts, int64_t dim, int part)
{
    const int64_t es = (int64_t)hg_dtype_size(t->dtype);
    mat m;
    m.p = (const char *)hg_data(t) + es * part * dim;
    m.ld = t->shape[1] * heads * parts * dim;
    m.stride = parts * dim;
    return m;
}

/* An attention-shaped (bh, rows, cols) tensor, contiguous. */
mat dense(const hg_tensor *t)
{
    mat m;
    m.p = hg_data(t);
    m.ld = t->shape[2];
    m.stride = t->shape[1] * t->shape[2];
    return m;
}

struct gemm_ctx {
    const hg_op_def *op;
    int dev;
    hg_dtype dt;
};

/* C[i] = alpha op(A[i]) op(B[i]) over bh batches, row-major; C must be zeroed already (nothing
 * runs when the product is empty or contracts zero elements). */
hg_status gemm(const gemm_ctx &g, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
               mat A, mat B, mat C, int64_t bh)
{
    if (M <= 0 || N <= 0 || K <= 0 || bh <= 0) return HG_OK;
    return hg_gemm_rm(g.dev, g.op->name, g.dt, ta, tb, M, N, K, alpha, A.p, A.ld, A.stride, B.p,
                      B.ld, B.stride, 0.0, (void *)C.p, C.ld, C.stride, bh);
}

hg_status zero_outputs(const hg_op_def *op, cudaStream_t s, int nout, hg_tensor *const *out)
{
    for (int i = 0; i < nout; i++) {
        const size_t nb = (size_t)out[i]->size * hg_dtype_size(out[i]->dtype);
        if (nb) HG_TRY(hg_cuda_status(cudaMemsetAsync(hg_data(out[i]), 0, nb, s), op->name));
    }
    return HG_OK;
}

/* 1 / sqrt(head_dim) as the CPU computes it: in float for float32 (as MXNet). */
double qk_scale(hg_dtype dt, int64_t d)
{
    return dt == HG_DTYPE_F32 ? (double)(1.0f / sqrtf((float)d)) : 1.0 / sqrt((double)d);
}

enum kind { SELF_QK, SELF_VA, ENC_QK, ENC_VA };

/* The forward inputs x0, x1 of an op (backward: in[1], in[2]); the output gradient dy. */
hg_status im_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, kind k,
                 bool backward, int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    HG_TRY(hg_cuda_use(ctx->device_id));
    cudaStream_t s = hg_cuda_stream(ctx->device_id);
    if (!s) return HG_ERR_INTERNAL; /* the message is set */
    const int o = backward ? 1 : 0;
    const hg_tensor *x0 = in[o], *x1 = nin > o + 1 ? in[o + 1] : in[o];
    const hg_dtype dt = x0->dtype;
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(dt));
    HG_TRY(zero_outputs(op, s, nout, out));
    const gemm_ctx g = {op, ctx->device_id, dt};
    const int64_t H = a->v[IM_HEADS].i, B = x0->shape[1], bh = B * H;
    switch (k) {
    case SELF_QK:
    case ENC_QK: {
        /* S = scale q k^T: q (lq, d), k (lk, d) */
        const bool self = k == SELF_QK;
        const int64_t d = x0->shape[2] / (self ? 3 * H : H);
        const int64_t lq = x0->shape[0], lk = self ? lq : x1->shape[0];
        const double sc = qk_scale(dt, d);
        const mat q = part_of(x0, H, self ? 3 : 1, d, 0),
                  kk = part_of(x1, H, self ? 3 : 2, d, self ? 1 : 0);
        if (!backward && d == 0) {
            /* the CPU's scale * 0 with scale = 1 / sqrt(0): NaN (all-ones bits are a NaN) */
            const size_t nb = (size_t)out[0]->size * hg_dtype_size(dt);
            return hg_cuda_status(cudaMemsetAsync(hg_data(out[0]), 0xFF, nb, s), op->name);
        }
        if (!backward) return gemm(g, 0, 1, lq, lk, d, sc, q, kk, dense(out[0]), bh);
        /* dq = scale dS k, dk = scale dS^T q, into the q and k parts of the gradient(s) */
        const mat ds = dense(in[0]);
        const mat dq = part_of(out[0], H, self ? 3 : 1, d, 0);
        const mat dk = self ? part_of(out[0], H, 3, d, 1) : part_of(out[1], H, 2, d, 0);
        HG_TRY(gemm(g, 0, 0, lq, d, lk, sc, ds, kk, dq, bh));
        return gemm(g, 1, 0, lk, d, lq, sc, ds, q, dk, bh);
    }
    case SELF_VA:
    case ENC_VA: {
        /* x0 holds v (lk, d), x1 is the attention (bh, lq, lk); the output (lq, B, H * d) */
        const bool self = k == SELF_VA;
        const int parts = self ? 3 : 2;
        const int64_t d = x0->shape[2] / (parts * H);
        const int64_t lk = x0->shape[0], lq = self ? lk : x1->shape[1];
        const mat v = part_of(x0, H, parts, d, parts - 1), att = dense(x1);
        if (!backward)
            return gemm(g, 0, 0, lq, d, lk, 1.0, att, v, part_of(out[0], H, 1, d, 0), bh);
        /* d att = dO v^T; dv = att^T dO, into the value part of the first gradient */
        const mat dout = part_of(in[0], H, 1, d, 0);
        HG_TRY(gemm(g, 0, 1, lq, lk, d, 1.0, dout, v, dense(out[1]), bh));
        return gemm(g, 1, 0, lk, d, lq, 1.0, att, dout, part_of(out[0], H, parts, d, parts - 1),
                    bh);
    }
    }
    return HG_OK;
}

#define IM_GPU(NAME, KIND)                                                                      \
    hg_status NAME##_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,        \
                         int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)        \
    {                                                                                           \
        return im_run(op, a, ctx, KIND, false, nin, in, nout, out);                             \
    }                                                                                           \
    hg_status NAME##_bwd_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,    \
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)    \
    {                                                                                           \
        return im_run(op, a, ctx, KIND, true, nin, in, nout, out);                              \
    }
IM_GPU(selfatt_qk, SELF_QK)
IM_GPU(selfatt_valatt, SELF_VA)
IM_GPU(encdec_qk, ENC_QK)
IM_GPU(encdec_valatt, ENC_VA)

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_transformer[] = {
    {"_contrib_interleaved_matmul_selfatt_qk", selfatt_qk_gpu},
    {"_backward_interleaved_matmul_selfatt_qk", selfatt_qk_bwd_gpu},
    {"_contrib_interleaved_matmul_selfatt_valatt", selfatt_valatt_gpu},
    {"_backward_interleaved_matmul_selfatt_valatt", selfatt_valatt_bwd_gpu},
    {"_contrib_interleaved_matmul_encdec_qk", encdec_qk_gpu},
    {"_backward_interleaved_matmul_encdec_qk", encdec_qk_bwd_gpu},
    {"_contrib_interleaved_matmul_encdec_valatt", encdec_valatt_gpu},
    {"_backward_interleaved_matmul_encdec_valatt", encdec_valatt_bwd_gpu},
    {NULL, NULL},
};
