/* hg_gpu_kernels_linalg: GPU kernels of the linalg ops (ops/linalg.c) and their _backward_ ops
 * (ops/linalg_bwd.c), float32 and float64 (the only dtypes their shape rules accept).
 *
 * Products go to cuBLAS (hg_gemm_rm), with the CPU's leading dimensions, so gemm's `axis`
 * layout needs no copies. Everything else is written here, as per-matrix routines that are
 * `__host__ __device__` (a host harness can check them against the CPU op):
 *  - trmm: one thread per output element; trsm: one thread per right-hand-side vector
 *    (substitution, in place);
 *  - potrf: one block per matrix, a column at a time (threads over the rows below);
 *  - getrf (inverse, det, slogdet): one block per matrix, LAPACK's partial pivoting on the
 *    row-major matrix read column-major (A^T), as the CPU's LAPACK call sees it, so LU and the
 *    pivots are those of the CPU's hidden outputs; the inverse then solves one unit vector per
 *    thread;
 *  - potri: the inverse of the triangle by substitution, then one GEMM.
 * Nothing waits for the GPU, so data-dependent failures that the CPU reports as errors (potrf of
 * a matrix that is not positive definite, an inverse of a singular matrix, potri of a singular
 * triangle) give NaN or inf in the result instead, as MXNet's cuSOLVER path does without
 * checking devInfo (docs/gpu.md). Scratch buffers come from the device allocator and are freed
 * after the launches (stream-ordered reuse makes that safe).
 */
#include <math.h>
#include <stdint.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/kernel_util.h"
#include "ops/linalg_attrs.h"

namespace
{

/* Runs the statements with T the element type of dt (float32 or float64). */
#define FOR_DTYPE(dt, ...)                                                                     \
    switch (dt) {                                                                              \
    case HG_DTYPE_F32: {                                                                       \
        typedef float T;                                                                       \
        __VA_ARGS__;                                                                           \
    } break;                                                                                   \
    case HG_DTYPE_F64: {                                                                       \
        typedef double T;                                                                      \
        __VA_ARGS__;                                                                           \
    } break;                                                                                   \
    default: return bad_dtype(op, dt);                                                         \
    }

/* Blocks of the per-matrix kernels (one block per matrix, grid-strided over the batch). */
#define MAT_THREADS 128
unsigned mat_blocks(int64_t batch)
{
    return (unsigned)(batch < 1 ? 1 : batch > HG_CUDA_MAX_BLOCKS ? HG_CUDA_MAX_BLOCKS : batch);
}

int64_t imax1(int64_t v) { return v > 1 ? v : 1; }

int64_t nbatch(const hg_tensor *t, int drop)
{
    int64_t b = 1;
    for (int i = 0; i < t->ndim - drop; i++) b *= t->shape[i];
    return b;
}

/* Device scratch memory for one call, freed when the kernel function returns (after its
 * launches are queued; the allocator reuses memory in stream order). */
struct scratch {
    int dev;
    void *p;
    size_t bytes;
    explicit scratch(int d) : dev(d), p(NULL), bytes(0) {}
    ~scratch()
    {
        if (p) hg_device_free(dev, p, bytes);
    }
    hg_status get(size_t n)
    {
        bytes = n;
        return n ? hg_device_alloc(dev, n, &p) : HG_OK;
    }
};

/* ---- products (cuBLAS) -------------------------------------------------------------------- */

/* A matrix of a batch as ops/linalg.h's `mat`: b0 outer blocks, each `rows` rows of b1
 * interleaved matrices of `cols` columns (b1 == 1 but for gemm with axis != -2). */
struct gmat {
    void *p;
    int64_t rows, cols;
};

/* Z = alpha op(X) op(Y) + beta Z for every matrix of the batch: ops/linalg.h's vgemm. */
hg_status vgemm(const hg_op_def *op, int dev, hg_dtype dt, int64_t b0, int64_t b1, bool tx, bool ty,
                double alpha, gmat X, gmat Y, double beta, gmat Z)
{
    const int64_t M = Z.rows, N = Z.cols, K = tx ? X.rows : X.cols;
    const int64_t ldx = b1 * X.cols, ldy = b1 * Y.cols, ldz = b1 * Z.cols;
    const int64_t nb = b1 == 1 ? 1 : b0, batch = b1 == 1 ? b0 : b1;
    const int64_t sx = b1 == 1 ? X.rows * X.cols : X.cols, sy = b1 == 1 ? Y.rows * Y.cols : Y.cols;
    const int64_t sz = b1 == 1 ? Z.rows * Z.cols : Z.cols;
    const size_t es = hg_dtype_size(dt);
    for (int64_t i = 0; i < nb; i++) {
        const char *x = (const char *)X.p + (size_t)(i * X.rows * ldx) * es;
        const char *y = (const char *)Y.p + (size_t)(i * Y.rows * ldy) * es;
        char *z = (char *)Z.p + (size_t)(i * Z.rows * ldz) * es;
        HG_TRY(hg_gemm_rm(dev, op->name, dt, tx, ty, M, N, K, alpha, x, imax1(ldx), sx, y,
                          imax1(ldy), sy, beta, z, imax1(ldz), sz, batch));
    }
    return HG_OK;
}

hg_status bgemm(const hg_op_def *op, int dev, hg_dtype dt, int64_t batch, bool tx, bool ty,
                double alpha, gmat X, gmat Y, double beta, gmat Z)
{
    return vgemm(op, dev, dt, batch, 1, tx, ty, alpha, X, Y, beta, Z);
}

/* The trailing matrix of t and the batch count. */
gmat tmat(const hg_tensor *t, int64_t *batch)
{
    if (batch) *batch = nbatch(t, 2);
    return gmat{hg_data(t), t->shape[t->ndim - 2], t->shape[t->ndim - 1]};
}

/* b0 x [rows] x b1 x [cols] grouping of a gemm operand around axis. */
gmat gemm_view(const hg_tensor *t, int64_t axis, int64_t *b0, int64_t *b1)
{
    *b0 = 1;
    *b1 = 1;
    for (int i = 0; i < axis; i++) *b0 *= t->shape[i];
    for (int i = (int)axis + 1; i < t->ndim - 1; i++) *b1 *= t->shape[i];
    return gmat{hg_data(t), t->shape[axis], t->shape[t->ndim - 1]};
}

/* ---- per-matrix routines ------------------------------------------------------------------ */

/* Element (i, j) of the triangle of the n x n row-major a (0 outside it). */
template <typename T>
__host__ __device__ T tri_at(const T *a, int64_t n, bool lower, int64_t i, int64_t j)
{
    return (lower ? j <= i : j >= i) ? a[i * n + j] : T(0);
}

/* Element (i, j) of op(A) for the triangle A. */
template <typename T>
__host__ __device__ T op_at(const T *a, int64_t n, bool lower, bool trans, int64_t i, int64_t j)
{
    return trans ? tri_at(a, n, lower, j, i) : tri_at(a, n, lower, i, j);
}

/* x (n elements, stride apart) := alpha op(A)^-1 x by substitution, reading only A's triangle:
 * forward when op(A) is lower triangular. */
template <typename T>
__host__ __device__ void tri_solve_vec(const T *a, int64_t n, bool lower, bool trans, T alpha, T *x,
                                       int64_t stride)
{
    const bool fwd = lower != trans;
    for (int64_t t = 0; t < n; t++) {
        const int64_t i = fwd ? t : n - 1 - t;
        T v = alpha * x[i * stride];
        if (fwd)
            for (int64_t j = 0; j < i; j++) v -= op_at(a, n, lower, trans, i, j) * x[j * stride];
        else
            for (int64_t j = i + 1; j < n; j++)
                v -= op_at(a, n, lower, trans, i, j) * x[j * stride];
        x[i * stride] = v / op_at(a, n, lower, trans, i, i);
    }
}

/* Element e of C = alpha op(A) B (or alpha B op(A) when right), B and C M x N. */
template <typename T>
__host__ __device__ T trmm_elem(const T *a, const T *b, int64_t M, int64_t N, bool right,
                                bool lower, bool trans, T alpha, int64_t r, int64_t c)
{
    T s = 0;
    if (right)
        for (int64_t k = 0; k < N; k++) s += b[r * N + k] * op_at(a, N, lower, trans, k, c);
    else
        for (int64_t k = 0; k < M; k++) s += op_at(a, M, lower, trans, r, k) * b[k * N + c];
    return alpha * s;
}

/* Position in the packed triangle of element (r, c), or -1: ops/linalg.c's trian_pos. */
__host__ __device__ int64_t trian_pos(int64_t r, int64_t c, int64_t off, bool lower)
{
    if (off > 0 || (off == 0 && !lower)) {
        const int64_t t = r;
        r = c;
        c = t;
    }
    r -= off < 0 ? -off : off;
    return r >= c ? r * (r + 1) / 2 + c : -1;
}

/* x := inv(M) e_k from the LU factors of M (LAPACK getrf's layout: M = P L U with unit L,
 * 1-based pivots), where M is the row-major storage s read column-major: M[i][j] = s[j n + i]. */
template <typename T>
__host__ __device__ void lu_solve_unit(const T *s, const int *piv, int64_t n, int64_t k, T *x,
                                       int64_t stride)
{
    for (int64_t i = 0; i < n; i++) x[i * stride] = i == k ? T(1) : T(0);
    for (int64_t j = 0; j < n; j++) {
        const int64_t q = piv[j] - 1;
        if (q != j) {
            const T t = x[j * stride];
            x[j * stride] = x[q * stride];
            x[q * stride] = t;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        T v = x[i * stride];
        for (int64_t j = 0; j < i; j++) v -= s[j * n + i] * x[j * stride];
        x[i * stride] = v;
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        T v = x[i * stride];
        for (int64_t j = i + 1; j < n; j++) v -= s[j * n + i] * x[j * stride];
        x[i * stride] = v / s[i * n + i];
    }
}

/* ---- element kernels ---------------------------------------------------------------------- */

template <typename T>
__global__ void trmm_kernel(const T *A, const T *B, T *C, int64_t batch, int64_t M, int64_t N,
                            bool right, bool lower, bool trans, T alpha)
{
    const int64_t n = right ? N : M;
    GRID_LOOP(e, batch * M * N)
    {
        const int64_t c = e % N, r = (e / N) % M, b = e / (M * N);
        C[e] = trmm_elem(A + b * n * n, B + b * M * N, M, N, right, lower, trans, alpha, r, c);
    }
}

/* One thread per vector: columns of X (left), rows (right: X op(A) = B is op(A)^T x = b). */
template <typename T>
__global__ void trsm_kernel(const T *A, T *X, int64_t batch, int64_t M, int64_t N, bool right,
                            bool lower, bool trans, T alpha)
{
    const int64_t nv = right ? M : N, n = right ? N : M;
    GRID_LOOP(e, batch * nv)
    {
        const int64_t b = e / nv, v = e % nv;
        T *x = X + b * M * N + (right ? v * N : v);
        tri_solve_vec(A + b * n * n, n, lower, right ? !trans : trans, alpha, x, right ? 1 : N);
    }
}

/* Symmetric from one triangle (lower_to_upper: from the lower), or the other triangle zeroed
 * (zero: the strict upper when lower_to_upper, else the strict lower). In place. */
template <typename T>
__global__ void tri_fix_kernel(T *p, int64_t batch, int64_t n, bool lower_to_upper, bool zero)
{
    GRID_LOOP(e, batch * n * n)
    {
        const int64_t j = e % n, i = (e / n) % n, m = e - i * n + j * n - j + i; /* (j, i) */
        if (lower_to_upper ? j > i : j < i) p[e] = zero ? T(0) : p[m];
    }
}

template <typename T> __global__ void eye_kernel(T *p, int64_t batch, int64_t n)
{
    GRID_LOOP(e, batch * n * n) p[e] = (e % n) == (e / n) % n ? T(1) : T(0);
}

template <typename T> __global__ void scale_kernel(const T *x, T *y, int64_t n, T alpha)
{
    GRID_LOOP(e, n) y[e] = alpha * x[e];
}

template <typename T> __global__ void sumlogdiag_kernel(const T *A, T *y, int64_t batch, int64_t n)
{
    GRID_LOOP(b, batch)
    {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += log((double)A[(b * n + i) * n + i]);
        y[b] = (T)s;
    }
}

/* dA = diag(dy / diag(A)), zero elsewhere. */
template <typename T>
__global__ void sumlogdiag_bwd_kernel(const T *dy, const T *A, T *dA, int64_t batch, int64_t n)
{
    GRID_LOOP(e, batch * n * n)
    {
        const int64_t j = e % n, i = (e / n) % n, b = e / (n * n);
        dA[e] = i == j ? (T)((double)dy[b] / (double)A[e]) : T(0);
    }
}

/* Diagonal `off` of the matrices <-> vectors of len. extract: V <- M, over V; else M <- V
 * (zero off the diagonal), over M. */
template <typename T>
__global__ void diag_kernel(T *M, T *V, int64_t batch, int64_t n, int64_t len, int64_t off,
                            bool extract)
{
    if (extract) {
        GRID_LOOP(e, batch * len)
        {
            const int64_t i = e % len, b = e / len;
            const int64_t r = i + (off < 0 ? -off : 0), c = i + (off > 0 ? off : 0);
            V[e] = M[(b * n + r) * n + c];
        }
        return;
    }
    GRID_LOOP(e, batch * n * n)
    {
        const int64_t c = e % n, r = (e / n) % n, b = e / (n * n);
        M[e] = c - r == off ? V[b * len + (off >= 0 ? r : c)] : T(0);
    }
}

/* The packed triangle <-> the matrices, over the matrix elements (each packed entry has one). */
template <typename T>
__global__ void trian_kernel(T *M, T *V, int64_t batch, int64_t n, int64_t len, int64_t off,
                             bool lower, bool extract)
{
    GRID_LOOP(e, batch * n * n)
    {
        const int64_t c = e % n, r = (e / n) % n, b = e / (n * n);
        const int64_t k = trian_pos(r, c, off, lower);
        if (extract) {
            if (k >= 0) V[b * len + k] = M[e];
        } else {
            M[e] = k >= 0 ? V[b * len + k] : T(0);
        }
    }
}

/* ---- factorizations: one block per matrix --------------------------------------------------- */

/* A barrier of the block running a per-matrix routine (nothing on the host, which runs such a
 * routine as one thread: tid 0 of nthr 1). */
__host__ __device__ __forceinline__ void block_sync()
{
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
}

/* Cholesky factor of the n x n matrix a into l: a = L L^T from a's lower triangle (lower), or
 * a = U^T U from its upper one (U = L^T stored); the other triangle of l zeroed. A column at a
 * time: thread 0 the diagonal, then the threads over the rows below. A pivot that is not
 * positive makes the rest NaN (the CPU reports the matrix as not positive definite). */
template <typename T>
__host__ __device__ void potrf_mat(const T *a, T *l, int64_t n, bool lower, int64_t tid,
                                   int64_t nthr)
{
#define SYM(i, j) (lower ? a[(i) * n + (j)] : a[(j) * n + (i)]) /* i >= j */
#define FAC(i, j) (lower ? l[(i) * n + (j)] : l[(j) * n + (i)]) /* i >= j */
    for (int64_t j = 0; j < n; j++) {
        if (tid == 0) {
            T d = SYM(j, j);
            for (int64_t k = 0; k < j; k++) d -= FAC(j, k) * FAC(j, k);
            FAC(j, j) = d > 0 ? sqrt(d) : T(NAN);
        }
        block_sync();
        const T djj = FAC(j, j);
        for (int64_t i = j + 1 + tid; i < n; i += nthr) {
            T v = SYM(i, j);
            for (int64_t k = 0; k < j; k++) v -= FAC(i, k) * FAC(j, k);
            FAC(i, j) = v / djj;
        }
        block_sync();
    }
#undef SYM
#undef FAC
    for (int64_t e = tid; e < n * n; e += nthr) {
        const int64_t i = e / n, j = e % n;
        if (lower ? j > i : j < i) l[e] = T(0);
    }
    block_sync();
}

/* LAPACK getrf (partial pivoting, the first largest |pivot|) of M, the row-major storage s of an
 * n x n matrix read column-major (M[i][j] = s[j n + i]), in place; 1-based pivots into p. A zero
 * pivot column is skipped, as LAPACK does (a singular matrix still factors, with a zero on U's
 * diagonal). *prow: a slot the block shares. */
template <typename T>
__host__ __device__ void getrf_mat(T *s, int *p, int64_t n, int64_t *prow, int64_t tid,
                                   int64_t nthr)
{
    for (int64_t j = 0; j < n; j++) {
        if (tid == 0) {
            int64_t best = j;
            T bv = fabs(s[j * n + j]);
            for (int64_t i = j + 1; i < n; i++) {
                const T v = fabs(s[j * n + i]);
                if (v > bv) {
                    bv = v;
                    best = i;
                }
            }
            *prow = best;
            p[j] = (int)(best + 1);
        }
        block_sync();
        const int64_t q = *prow;
        if (q != j)
            for (int64_t k = tid; k < n; k += nthr) {
                const T t = s[k * n + j];
                s[k * n + j] = s[k * n + q];
                s[k * n + q] = t;
            }
        block_sync();
        const T pv = s[j * n + j];
        if (pv != T(0))
            for (int64_t i = j + 1 + tid; i < n; i += nthr) s[j * n + i] /= pv;
        block_sync();
        const int64_t m = n - j - 1;
        for (int64_t e = tid; e < m * m; e += nthr) {
            const int64_t i = j + 1 + e % m, k = j + 1 + e / m;
            s[k * n + i] -= s[j * n + i] * s[k * n + j];
        }
        block_sync();
    }
}

template <typename T>
__global__ void potrf_kernel(const T *A, T *L, int64_t batch, int64_t n, bool lower)
{
    for (int64_t b = blockIdx.x; b < batch; b += gridDim.x)
        potrf_mat(A + b * n * n, L + b * n * n, n, lower, threadIdx.x, blockDim.x);
}

template <typename T> __global__ void getrf_kernel(T *LU, int *piv, int64_t batch, int64_t n)
{
    __shared__ int64_t prow;
    for (int64_t b = blockIdx.x; b < batch; b += gridDim.x)
        getrf_mat(LU + b * n * n, piv + b * n, n, &prow, threadIdx.x, blockDim.x);
}

/* inv(A) from the LU factors of A^T (getri's layout): row k of the output is column k of
 * inv(A^T). */
template <typename T>
__global__ void lu_inverse_kernel(const T *LU, const int *piv, T *out, int64_t batch, int64_t n)
{
    GRID_LOOP(e, batch * n)
    {
        const int64_t b = e / n, k = e % n;
        lu_solve_unit(LU + b * n * n, piv + b * n, n, k, out + b * n * n + k * n, 1);
    }
}

/* sign(det) and log|det| from the LU factors (ops/linalg.c's det_common); det: out0 = det (the
 * CPU's rounding: log|det| rounded to T first), else out0 = sign, out1 = log|det|. */
template <typename T>
__global__ void det_kernel(const T *LU, const int *piv, T *out0, T *out1, int64_t batch, int64_t n,
                           bool det)
{
    GRID_LOOP(b, batch)
    {
        const T *s = LU + b * n * n;
        int changes = 0;
        double sg = 1, lg = 0;
        for (int64_t j = 0; j < n; j++) {
            const double d = (double)s[j * (n + 1)];
            changes += piv[b * n + j] != j + 1;
            sg *= (d > 0) - (d < 0);
            lg += log(fabs(d));
        }
        sg = changes % 2 ? -sg : sg;
        if (det) {
            out0[b] = (T)((double)(T)sg * exp((double)(T)lg));
        } else {
            out0[b] = (T)sg;
            out1[b] = (T)lg;
        }
    }
}

/* dA = c inv(A)^T, c = dy (times det when times_det), zero where val == zero: column k of
 * inv(A^T) (= inv(A)^T) per thread. */
template <typename T>
__global__ void det_bwd_kernel(const T *dy, const T *val, double zero, const T *LU, const int *piv,
                               T *dA, int64_t batch, int64_t n, bool times_det)
{
    GRID_LOOP(e, batch * n)
    {
        const int64_t b = e / n, k = e % n;
        T *g = dA + b * n * n + k;
        const double v = (double)val[b];
        if (v == zero) {
            for (int64_t i = 0; i < n; i++) g[i * n] = T(0);
            continue;
        }
        const double c = (double)dy[b] * (times_det ? v : 1.0);
        lu_solve_unit(LU + b * n * n, piv + b * n, n, k, g, n);
        for (int64_t i = 0; i < n; i++) g[i * n] = (T)(c * (double)g[i * n]);
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

/* C = alpha op(A) B (or B op(A)), batch of M x N; C is not B. */
hg_status tri_mm(const hg_op_def *op, cudaStream_t s, hg_dtype dt, int64_t batch, bool right,
                 bool lower, bool trans, double alpha, const void *A, const void *B, void *C,
                 int64_t M, int64_t N)
{
    const int64_t total = batch * M * N;
    if (total == 0) return HG_OK;
    FOR_DTYPE(dt, trmm_kernel<T> LAUNCH(total)((const T *)A, (const T *)B, (T *)C, batch, M, N,
                                               right, lower, trans, (T)alpha));
    return hg_cuda_launched(op->name);
}

/* X := alpha op(A)^-1 X (or X op(A)^-1), in place. */
hg_status tri_sv(const hg_op_def *op, cudaStream_t s, hg_dtype dt, int64_t batch, bool right,
                 bool lower, bool trans, double alpha, const void *A, void *X, int64_t M, int64_t N)
{
    const int64_t total = batch * (right ? M : N);
    if (total == 0 || M == 0 || N == 0) return HG_OK;
    FOR_DTYPE(dt, trsm_kernel<T> LAUNCH(total)((const T *)A, (T *)X, batch, M, N, right, lower,
                                               trans, (T)alpha));
    return hg_cuda_launched(op->name);
}

/* mirror (zero = false) or zero_tri (zero = true) of ops/linalg.h, in place. */
hg_status tri_fix(const hg_op_def *op, cudaStream_t s, hg_dtype dt, int64_t batch, int64_t n,
                  void *p, bool lower_to_upper, bool zero)
{
    const int64_t total = batch * n * n;
    if (total == 0) return HG_OK;
    FOR_DTYPE(dt, tri_fix_kernel<T> LAUNCH(total)((T *)p, batch, n, lower_to_upper, zero));
    return hg_cuda_launched(op->name);
}

/* LU factors of every matrix of A into LU (A copied first unless it is LU) with pivots. */
hg_status getrf(const hg_op_def *op, cudaStream_t s, const hg_tensor *A, void *LU, int *piv)
{
    const hg_dtype dt = A->dtype;
    const int64_t n = A->shape[A->ndim - 1], batch = nbatch(A, 2);
    if (A->size == 0) return HG_OK;
    if (LU != hg_data(A))
        HG_TRY(hg_cuda_status(
            cudaMemcpyAsync(LU, hg_data(A), nbytes_of(A), cudaMemcpyDeviceToDevice, s), op->name));
    FOR_DTYPE(dt,
              getrf_kernel<T><<<mat_blocks(batch), MAT_THREADS, 0, s>>>((T *)LU, piv, batch, n));
    return hg_cuda_launched(op->name);
}

#define BEGIN                                                                                  \
    HG_TRY(hg_cuda_use(ctx->device_id));                                                       \
    STREAM;                                                                                    \
    const int dev = ctx->device_id;                                                            \
    (void)dev

/* ---- gemm, gemm2 ---------------------------------------------------------------------------- */

struct gemm_par {
    bool ta, tb;
    double alpha, beta;
    int64_t axis;
};

gemm_par gemm_params(const hg_op_def *op, const hg_attrs *a, int ndim)
{
    gemm_par p;
    if (op->num_attrs == K_GEMM_NATTRS)
        p = gemm_par{a->v[K_TA].b, a->v[K_TB].b, a->v[K_ALPHA].f, a->v[K_BETA].f, a->v[K_AXIS].i};
    else p = gemm_par{a->v[K2_TA].b, a->v[K2_TB].b, a->v[K2_ALPHA].f, 0.0, a->v[K2_AXIS].i};
    if (p.axis < 0) p.axis += ndim;
    return p;
}

GPU_FWD(gemm_gpu)
{
    BEGIN;
    const gemm_par p = gemm_params(op, a, in[0]->ndim);
    int64_t b0, b1;
    const gmat A = gemm_view(in[0], p.axis, &b0, &b1), B = gemm_view(in[1], p.axis, &b0, &b1);
    const gmat D = gemm_view(out[0], p.axis, &b0, &b1);
    if (out[0]->size == 0) return HG_OK;
    if (nin > 2) HG_TRY(copy_whole(op, s, out[0], in[2]));
    return vgemm(op, dev, in[0]->dtype, b0, b1, p.ta, p.tb, p.alpha, A, B, nin > 2 ? p.beta : 0.0,
                 D);
}

/* (dD, A, B[, C]) -> dA, dB[, dC]: linalg_bwd.c's gemm_bwd_forward. */
GPU_FWD(gemm_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const gemm_par p = gemm_params(op, a, in[0]->ndim);
    int64_t b0, b1;
    const gmat dD = gemm_view(in[0], p.axis, &b0, &b1), A = gemm_view(in[1], p.axis, &b0, &b1);
    const gmat B = gemm_view(in[2], p.axis, &b0, &b1), dA = gemm_view(out[0], p.axis, &b0, &b1);
    const gmat dB = gemm_view(out[1], p.axis, &b0, &b1);
    if (p.ta) HG_TRY(vgemm(op, dev, dt, b0, b1, p.tb, true, p.alpha, B, dD, 0, dA));
    else HG_TRY(vgemm(op, dev, dt, b0, b1, false, !p.tb, p.alpha, dD, B, 0, dA));
    if (p.tb) HG_TRY(vgemm(op, dev, dt, b0, b1, true, p.ta, p.alpha, dD, A, 0, dB));
    else HG_TRY(vgemm(op, dev, dt, b0, b1, !p.ta, false, p.alpha, A, dD, 0, dB));
    if (nout > 2 && out[2]->size > 0) {
        const int64_t n = out[2]->size;
        FOR_DTYPE(dt, scale_kernel<T> LAUNCH(n)((const T *)hg_data(in[0]), (T *)hg_data(out[2]), n,
                                                (T)p.beta));
        return hg_cuda_launched(op->name);
    }
    return HG_OK;
}

/* ---- trmm, trsm --------------------------------------------------------------------------- */

hg_status tri_fwd(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                  hg_tensor *const *in, hg_tensor *const *out, bool solve)
{
    BEGIN;
    const hg_tensor *B = in[1];
    const int64_t M = B->shape[B->ndim - 2], N = B->shape[B->ndim - 1], batch = nbatch(B, 2);
    const bool right = a->v[K_RIGHT].b, lower = a->v[K_TLOWER].b, tr = a->v[K_TRANS].b;
    const double alpha = a->v[K_TALPHA].f;
    if (!solve)
        return tri_mm(op, s, B->dtype, batch, right, lower, tr, alpha, hg_data(in[0]), hg_data(B),
                      hg_data(out[0]), M, N);
    HG_TRY(copy_whole(op, s, out[0], B));
    return tri_sv(op, s, B->dtype, batch, right, lower, tr, alpha, hg_data(in[0]), hg_data(out[0]),
                  M, N);
}

GPU_FWD(trmm_gpu) { return tri_fwd(op, a, ctx, in, out, false); }
GPU_FWD(trsm_gpu) { return tri_fwd(op, a, ctx, in, out, true); }

/* (dC, A, B[, C]) -> dA, dB: linalg_bwd.c's tri_bwd_run. */
hg_status tri_bwd(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                  hg_tensor *const *in, hg_tensor *const *out, bool solve)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const bool right = a->v[K_RIGHT].b, lower = a->v[K_TLOWER].b, tr = a->v[K_TRANS].b;
    const double alpha = a->v[K_TALPHA].f;
    int64_t batch;
    gmat dC = tmat(in[0], &batch), X = tmat(in[2], NULL);
    const gmat dA = tmat(out[0], NULL), dB = tmat(out[1], NULL);
    const void *A = hg_data(in[1]);
    double scale = alpha;
    if (solve) {
        HG_TRY(copy_whole(op, s, out[1], in[0]));
        HG_TRY(tri_sv(op, s, dt, batch, right, lower, !tr, alpha, A, dB.p, dB.rows, dB.cols));
        X = tmat(in[3], NULL);
        scale = -1.0 / alpha;
        dC = dB;
    } else {
        HG_TRY(tri_mm(op, s, dt, batch, right, lower, !tr, alpha, A, dC.p, dB.p, dB.rows, dB.cols));
    }
    if (right == tr) HG_TRY(bgemm(op, dev, dt, batch, tr, !tr, scale, dC, X, 0, dA));
    else HG_TRY(bgemm(op, dev, dt, batch, !tr, tr, scale, X, dC, 0, dA));
    return tri_fix(op, s, dt, batch, dA.rows, dA.p, lower, true);
}

GPU_FWD(trmm_bwd_gpu) { return tri_bwd(op, a, ctx, in, out, false); }
GPU_FWD(trsm_bwd_gpu) { return tri_bwd(op, a, ctx, in, out, true); }

/* ---- syrk ----------------------------------------------------------------------------------- */

GPU_FWD(syrk_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const bool tr = a->v[K_STRANS].b;
    int64_t batch;
    const gmat A = tmat(in[0], &batch), Y = tmat(out[0], NULL);
    const int64_t n = tr ? A.cols : A.rows, k = tr ? A.rows : A.cols;
    if (out[0]->size == 0) return HG_OK;
    if (k == 0) return zero_fill(op, s, out[0]);
    HG_TRY(bgemm(op, dev, dt, batch, tr, !tr, a->v[K_SALPHA].f, A, A, 0, Y));
    return tri_fix(op, s, dt, batch, n, Y.p, true, false); /* the CPU mirrors its lower half */
}

/* (dB, A) -> dA = alpha (dB + dB^T) A, or alpha A (dB + dB^T) when transposed. */
GPU_FWD(syrk_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const double alpha = a->v[K_SALPHA].f;
    int64_t batch;
    const gmat dB = tmat(in[0], &batch), A = tmat(in[1], NULL), dA = tmat(out[0], NULL);
    if (a->v[K_STRANS].b) {
        HG_TRY(bgemm(op, dev, dt, batch, false, false, alpha, A, dB, 0, dA));
        return bgemm(op, dev, dt, batch, false, true, alpha, A, dB, 1, dA);
    }
    HG_TRY(bgemm(op, dev, dt, batch, false, false, alpha, dB, A, 0, dA));
    return bgemm(op, dev, dt, batch, true, false, alpha, dB, A, 1, dA);
}

/* ---- sumlogdiag, diagonals, triangles ------------------------------------------------------- */

GPU_FWD(sumlogdiag_gpu)
{
    BEGIN;
    const int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    if (out[0]->size == 0) return HG_OK;
    FOR_DTYPE(in[0]->dtype, sumlogdiag_kernel<T> LAUNCH(batch)((const T *)hg_data(in[0]),
                                                               (T *)hg_data(out[0]), batch, n));
    return hg_cuda_launched(op->name);
}

GPU_FWD(sumlogdiag_bwd_gpu)
{
    BEGIN;
    const int64_t n = in[1]->shape[in[1]->ndim - 1], batch = nbatch(in[1], 2);
    const int64_t total = out[0]->size;
    if (total == 0) return HG_OK;
    FOR_DTYPE(in[0]->dtype, sumlogdiag_bwd_kernel<T> LAUNCH(total)((const T *)hg_data(in[0]),
                                                                   (const T *)hg_data(in[1]),
                                                                   (T *)hg_data(out[0]), batch, n));
    return hg_cuda_launched(op->name);
}

/* extract: matrices in[0] -> vectors out[0]; make: vectors in[0] -> matrices out[0]. */
hg_status diag_trian(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                     hg_tensor *const *in, hg_tensor *const *out, bool trian, bool extract)
{
    BEGIN;
    const hg_tensor *mt = extract ? in[0] : out[0], *vt = extract ? out[0] : in[0];
    const int64_t n = mt->shape[mt->ndim - 1], batch = nbatch(mt, 2);
    const int64_t len = vt->shape[vt->ndim - 1], off = a->v[K_OFFSET].i;
    const int64_t total = trian || !extract ? batch * n * n : batch * len;
    if (total == 0) return HG_OK;
    void *M = hg_data(mt), *V = hg_data(vt);
    if (trian) {
        FOR_DTYPE(mt->dtype, trian_kernel<T> LAUNCH(total)((T *)M, (T *)V, batch, n, len, off,
                                                           a->v[K_DLOWER].b, extract));
    } else {
        FOR_DTYPE(mt->dtype,
                  diag_kernel<T> LAUNCH(total)((T *)M, (T *)V, batch, n, len, off, extract));
    }
    return hg_cuda_launched(op->name);
}

GPU_FWD(extractdiag_gpu) { return diag_trian(op, a, ctx, in, out, false, true); }
GPU_FWD(makediag_gpu) { return diag_trian(op, a, ctx, in, out, false, false); }
GPU_FWD(extracttrian_gpu) { return diag_trian(op, a, ctx, in, out, true, true); }
GPU_FWD(maketrian_gpu) { return diag_trian(op, a, ctx, in, out, true, false); }

/* ---- potrf, potri ----------------------------------------------------------------------------- */

GPU_FWD(potrf_gpu)
{
    BEGIN;
    const int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    if (in[0]->size == 0) return HG_OK;
    if (hg_data(in[0]) == hg_data(out[0]))
        return hg_error(HG_ERR_INTERNAL, "%s: cannot run in place", op->name);
    FOR_DTYPE(in[0]->dtype,
              potrf_kernel<T><<<mat_blocks(batch), MAT_THREADS, 0, s>>>(
                  (const T *)hg_data(in[0]), (T *)hg_data(out[0]), batch, n, a->v[K_LOWER].b));
    return hg_cuda_launched(op->name);
}

/* inv(A) from A's Cholesky factor: W = inv(triangle), then W^T W (lower) or W W^T (upper),
 * made exactly symmetric from the triangle the CPU computes. */
GPU_FWD(potri_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const bool lower = a->v[K_LOWER].b;
    int64_t batch;
    const gmat L = tmat(in[0], &batch), Y = tmat(out[0], NULL);
    const int64_t n = L.rows;
    if (in[0]->size == 0) return HG_OK;
    scratch w(dev);
    HG_TRY(w.get(nbytes_of(in[0])));
    const gmat W = {w.p, n, n};
    FOR_DTYPE(dt, eye_kernel<T> LAUNCH(batch * n * n)((T *)w.p, batch, n));
    HG_TRY(hg_cuda_launched(op->name));
    HG_TRY(tri_sv(op, s, dt, batch, false, lower, false, 1.0, L.p, W.p, n, n));
    HG_TRY(bgemm(op, dev, dt, batch, lower, !lower, 1.0, W, W, 0, Y));
    return tri_fix(op, s, dt, batch, n, Y.p, lower, false);
}

/* (dB, B) -> dA = 0.5 B^-T copyLTU(B^T dB) B^-1 (lower; transposed roles when upper). */
GPU_FWD(potrf_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const bool lower = a->v[K_LOWER].b;
    int64_t batch;
    const gmat B = tmat(in[1], &batch), dA = tmat(out[0], NULL);
    const int64_t n = B.rows;
    HG_TRY(tri_mm(op, s, dt, batch, !lower, lower, true, 1.0, B.p, hg_data(in[0]), dA.p, n, n));
    HG_TRY(tri_fix(op, s, dt, batch, n, dA.p, lower, false));
    HG_TRY(tri_sv(op, s, dt, batch, false, lower, lower, 1.0, B.p, dA.p, n, n));
    return tri_sv(op, s, dt, batch, true, lower, !lower, 0.5, B.p, dA.p, n, n);
}

/* (dA, B, A) -> dB = -tril(A (dA + dA^T) B^-T) for lower B. */
GPU_FWD(potri_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const bool lower = a->v[K_LOWER].b;
    int64_t batch;
    const gmat dA = tmat(in[0], &batch), B = tmat(in[1], NULL), A = tmat(in[2], NULL);
    const gmat dB = tmat(out[0], NULL);
    const int64_t n = B.rows;
    if (lower) {
        HG_TRY(bgemm(op, dev, dt, batch, false, false, 1, A, dA, 0, dB));
        HG_TRY(bgemm(op, dev, dt, batch, false, true, 1, A, dA, 1, dB));
    } else {
        HG_TRY(bgemm(op, dev, dt, batch, false, false, 1, dA, A, 0, dB));
        HG_TRY(bgemm(op, dev, dt, batch, true, false, 1, dA, A, 1, dB));
    }
    HG_TRY(tri_sv(op, s, dt, batch, lower, lower, true, -1.0, B.p, dB.p, n, n));
    return tri_fix(op, s, dt, batch, n, dB.p, lower, true);
}

/* ---- inverse, det, slogdet ------------------------------------------------------------------ */

GPU_FWD(inverse_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    if (in[0]->size == 0) return HG_OK;
    scratch w(dev);
    const size_t lu_bytes = nbytes_of(in[0]);
    HG_TRY(w.get(lu_bytes + sizeof(int) * (size_t)(batch * n)));
    int *piv = (int *)((char *)w.p + lu_bytes);
    HG_TRY(getrf(op, s, in[0], w.p, piv));
    FOR_DTYPE(dt, lu_inverse_kernel<T> LAUNCH(batch * n)((const T *)w.p, piv, (T *)hg_data(out[0]),
                                                         batch, n));
    return hg_cuda_launched(op->name);
}

/* (dA, A = inv(B)) -> dB = -A^T dA A^T */
GPU_FWD(inverse_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    int64_t batch;
    const gmat dA = tmat(in[0], &batch), A = tmat(in[1], NULL), dB = tmat(out[0], NULL);
    if (in[1]->size == 0) return HG_OK;
    scratch w(dev);
    HG_TRY(w.get(nbytes_of(in[1])));
    const gmat tmp = {w.p, A.rows, A.cols};
    HG_TRY(bgemm(op, dev, dt, batch, false, true, 1.0, dA, A, 0, tmp));
    return bgemm(op, dev, dt, batch, true, false, -1.0, A, tmp, 0, dB);
}

/* det: (det, LU, pivots); slogdet: (sign, log|det|, LU, pivots). */
hg_status det_fwd(const hg_op_def *op, const hg_exec_ctx *ctx, hg_tensor *const *in,
                  hg_tensor *const *out, bool det)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    hg_tensor *LU = out[det ? 1 : 2], *piv = out[det ? 2 : 3];
    HG_TRY(getrf(op, s, in[0], hg_data(LU), (int *)hg_data(piv)));
    FOR_DTYPE(dt, det_kernel<T> LAUNCH(batch)((const T *)hg_data(LU), (const int *)hg_data(piv),
                                              (T *)hg_data(out[0]),
                                              det ? NULL : (T *)hg_data(out[1]), batch, n, det));
    return hg_cuda_launched(op->name);
}

GPU_FWD(det_gpu) { return det_fwd(op, ctx, in, out, true); }
GPU_FWD(slogdet_gpu) { return det_fwd(op, ctx, in, out, false); }

hg_status det_bwd(const hg_op_def *op, const hg_exec_ctx *ctx, const hg_tensor *dy,
                  const hg_tensor *val, double zero, const hg_tensor *LU, const hg_tensor *piv,
                  hg_tensor *dA, bool times_det)
{
    BEGIN;
    const int64_t n = LU->shape[LU->ndim - 1], batch = nbatch(LU, 2);
    if (LU->size == 0) return HG_OK;
    FOR_DTYPE(LU->dtype,
              det_bwd_kernel<T> LAUNCH(batch * n)(
                  (const T *)hg_data(dy), (const T *)hg_data(val), zero, (const T *)hg_data(LU),
                  (const int *)hg_data(piv), (T *)hg_data(dA), batch, n, times_det));
    return hg_cuda_launched(op->name);
}

/* (ograd, det, LU, pivots) */
GPU_FWD(det_bwd_gpu) { return det_bwd(op, ctx, in[0], in[1], 0.0, in[2], in[3], out[0], true); }
/* (ograd of log|det|, sign, log|det|, LU, pivots) */
GPU_FWD(slogdet_bwd_gpu)
{
    return det_bwd(op, ctx, in[0], in[2], -INFINITY, in[3], in[4], out[0], false);
}

/* ---- gelqf, syevd ------------------------------------------------------------------------- */

/* LQ of the m x n row-major a (m <= n) as the CPU's LAPACK computes it: geqrf then orgqr of
 * a^T (column-major), i.e. Householder reflectors on the rows of a, with geqr2's and org2r's
 * sign conventions (beta = -sign(alpha) |(alpha, x)|; no reflection where x is zero), so L's
 * diagonal signs are the CPU's. a becomes Q, l (m x m) L; tau (m) is scratch, sh two shared
 * slots. Threads over the rows below the reflector's. */
template <typename T>
__host__ __device__ void gelqf_mat(T *a, T *l, T *tau, T *sh, int64_t m, int64_t n, int64_t tid,
                                   int64_t nthr)
{
    for (int64_t i = 0; i < m; i++) {
        T *v = a + i * n; /* v[i] is 1 implicitly, v[i+1..n) the reflector */
        if (tid == 0) {
            const T alpha = v[i];
            T xn = 0;
            for (int64_t k = i + 1; k < n; k++) xn += v[k] * v[k];
            xn = sqrt(xn);
            if (xn == T(0)) {
                tau[i] = 0;
                sh[0] = alpha;
                sh[1] = 1;
            } else {
                const T beta = -copysign(hypot(alpha, xn), alpha);
                tau[i] = (beta - alpha) / beta;
                sh[0] = beta;
                sh[1] = T(1) / (alpha - beta);
            }
        }
        block_sync();
        const T t = tau[i], beta = sh[0], scale = sh[1];
        for (int64_t k = i + 1 + tid; k < n; k += nthr) v[k] *= scale;
        block_sync();
        for (int64_t j = i + 1 + tid; j < m; j += nthr) {
            T *r = a + j * n, w = r[i];
            for (int64_t k = i + 1; k < n; k++) w += v[k] * r[k];
            w *= t;
            r[i] -= w;
            for (int64_t k = i + 1; k < n; k++) r[k] -= w * v[k];
        }
        if (tid == 0) v[i] = beta;
        block_sync();
    }
    for (int64_t e = tid; e < m * m; e += nthr) {
        const int64_t i = e / m, j = e % m;
        l[e] = j <= i ? a[i * n + j] : T(0);
    }
    block_sync();
    for (int64_t i = m - 1; i >= 0; i--) {
        T *v = a + i * n;
        const T t = tau[i];
        for (int64_t j = i + 1 + tid; j < m; j += nthr) {
            T *r = a + j * n, w = r[i];
            for (int64_t k = i + 1; k < n; k++) w += v[k] * r[k];
            w *= t;
            r[i] -= w;
            for (int64_t k = i + 1; k < n; k++) r[k] -= w * v[k];
        }
        block_sync();
        for (int64_t k = tid; k < n; k += nthr) v[k] = k > i ? -t * v[k] : k == i ? 1 - t : T(0);
        block_sync();
    }
}

template <typename T>
__global__ void gelqf_kernel(T *Q, T *L, T *tau, int64_t batch, int64_t m, int64_t n)
{
    __shared__ T sh[2];
    for (int64_t b = blockIdx.x; b < batch; b += gridDim.x)
        gelqf_mat(Q + b * m * n, L + b * m * m, tau + b * m, sh, m, n, threadIdx.x, blockDim.x);
}

/* Eigenvalues (ascending, into w) and eigenvectors (the rows of u) of the symmetric n x n matrix
 * whose lower triangle a holds: cyclic Jacobi rotations on s (n x n scratch) with the rotations
 * accumulated in v (n x n scratch), until the off-diagonal part is below the unit roundoff of
 * the whole, then MXNet's deterministic signs (each eigenvector's largest entry, the first on
 * ties, positive). sh: three shared slots. Threads over the rows a rotation touches. */
template <typename T>
__host__ __device__ void syevd_mat(const T *a, T *u, T *w, T *s, T *v, T *sh, int64_t n,
                                   int64_t tid, int64_t nthr)
{
    const T eps = sizeof(T) == 4 ? T(6e-8) : T(1.2e-16);
    for (int64_t e = tid; e < n * n; e += nthr) {
        const int64_t i = e / n, j = e % n;
        s[e] = i >= j ? a[e] : a[j * n + i];
        v[e] = i == j ? T(1) : T(0);
    }
    block_sync();
    for (int sweep = 0; sweep < 100; sweep++) {
        if (tid == 0) {
            T off = 0, all = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) {
                    const T x = s[i * n + j] * s[i * n + j];
                    all += x;
                    if (i != j) off += x;
                }
            sh[2] = off <= eps * eps * all ? T(1) : T(0);
        }
        block_sync();
        if (sh[2] != T(0)) break;
        for (int64_t p = 0; p < n - 1; p++)
            for (int64_t q = p + 1; q < n; q++) {
                const T apq = s[p * n + q];
                if (apq == T(0)) continue; /* uniform: every thread reads the same value */
                const T app = s[p * n + p], aqq = s[q * n + q];
                const T th = (aqq - app) / (2 * apq);
                const T t = (th >= 0 ? T(1) : T(-1)) / (fabs(th) + sqrt(th * th + 1));
                const T c = 1 / sqrt(t * t + 1), sn = t * c;
                block_sync();
                for (int64_t k = tid; k < n; k += nthr) {
                    if (k != p && k != q) {
                        const T akp = s[k * n + p], akq = s[k * n + q];
                        s[k * n + p] = s[p * n + k] = c * akp - sn * akq;
                        s[k * n + q] = s[q * n + k] = sn * akp + c * akq;
                    }
                    const T vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - sn * vkq;
                    v[k * n + q] = sn * vkp + c * vkq;
                }
                if (tid == 0) {
                    s[p * n + p] = app - t * apq;
                    s[q * n + q] = aqq + t * apq;
                    s[p * n + q] = s[q * n + p] = 0;
                }
                block_sync();
            }
    }
    /* selection sort of the eigenvalues, the columns of v along */
    for (int64_t i = 0; i < n; i++) {
        if (tid == 0) {
            int64_t k = i;
            for (int64_t j = i + 1; j < n; j++)
                if (s[j * (n + 1)] < s[k * (n + 1)]) k = j;
            sh[0] = (T)k;
        }
        block_sync();
        const int64_t k = (int64_t)sh[0];
        if (k != i) {
            for (int64_t r = tid; r < n; r += nthr) {
                const T x = v[r * n + i];
                v[r * n + i] = v[r * n + k];
                v[r * n + k] = x;
            }
            block_sync();
            if (tid == 0) {
                const T x = s[i * (n + 1)];
                s[i * (n + 1)] = s[k * (n + 1)];
                s[k * (n + 1)] = x;
            }
        }
        block_sync();
    }
    for (int64_t i = tid; i < n; i += nthr) {
        int64_t k = 0;
        for (int64_t j = 1; j < n; j++)
            if (fabs(v[j * n + i]) > fabs(v[k * n + i])) k = j;
        const T sg = v[k * n + i] < 0 ? T(-1) : T(1);
        for (int64_t j = 0; j < n; j++) u[i * n + j] = sg * v[j * n + i];
        w[i] = s[i * (n + 1)];
    }
    block_sync();
}

template <typename T>
__global__ void syevd_kernel(const T *A, T *U, T *W, T *S, int64_t batch, int64_t n)
{
    __shared__ T sh[3];
    for (int64_t b = blockIdx.x; b < batch; b += gridDim.x)
        syevd_mat(A + b * n * n, U + b * n * n, W + b * n, S + 2 * b * n * n,
                  S + (2 * b + 1) * n * n, sh, n, threadIdx.x, blockDim.x);
}

/* Y of syevd's gradient into dA: Y_ii = dL_i, Y_ij = Y_ji = (T_ij - T_ji) / (2 (L_i - L_j))
 * for i > j, the gap clamped to eps (linalg_bwd.c). */
template <typename T>
__global__ void syevd_y_kernel(const T *Tm, const T *L, const T *dL, T *Y, int64_t batch, int64_t n,
                               double eps)
{
    GRID_LOOP(e, batch * n * n)
    {
        const int64_t j = e % n, i = (e / n) % n, b = e / (n * n), o = b * n * n;
        if (i == j) {
            Y[e] = dL[b * n + i];
            continue;
        }
        const int64_t hi = i > j ? i : j, lo = i > j ? j : i;
        double den = (double)L[b * n + hi] - (double)L[b * n + lo];
        den = 2.0 * (den < eps ? eps : den);
        Y[e] = (T)(((double)Tm[o + hi * n + lo] - (double)Tm[o + lo * n + hi]) / den);
    }
}

GPU_FWD(gelqf_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    int64_t batch;
    const gmat A = tmat(in[0], &batch);
    const int64_t m = A.rows, n = A.cols;
    if (in[0]->size == 0) return zero_fill(op, s, out[1]);
    HG_TRY(copy_whole(op, s, out[0], in[0]));
    scratch w(dev);
    HG_TRY(w.get(hg_dtype_size(dt) * (size_t)(batch * m)));
    FOR_DTYPE(dt, gelqf_kernel<T><<<mat_blocks(batch), MAT_THREADS, 0, s>>>(
                      (T *)hg_data(out[0]), (T *)hg_data(out[1]), (T *)w.p, batch, m, n));
    return hg_cuda_launched(op->name);
}

GPU_FWD(syevd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    const int64_t n = in[0]->shape[in[0]->ndim - 1], batch = nbatch(in[0], 2);
    if (in[0]->size == 0) return HG_OK;
    scratch w(dev);
    HG_TRY(w.get(2 * nbytes_of(in[0])));
    FOR_DTYPE(dt, syevd_kernel<T><<<mat_blocks(batch), MAT_THREADS, 0, s>>>(
                      (const T *)hg_data(in[0]), (T *)hg_data(out[0]), (T *)hg_data(out[1]),
                      (T *)w.p, batch, n));
    return hg_cuda_launched(op->name);
}

/* (dQ, dL, Q, L) -> dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T */
GPU_FWD(gelqf_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    int64_t batch;
    const gmat dQ = tmat(in[0], &batch), Q = tmat(in[2], NULL), L = tmat(in[3], NULL);
    const gmat dA = tmat(out[0], NULL);
    const int64_t m = L.rows;
    if (out[0]->size == 0) return HG_OK;
    scratch w(dev);
    HG_TRY(w.get(nbytes_of(in[1])));
    const gmat M = {w.p, m, m};
    HG_TRY(tri_mm(op, s, dt, batch, false, true, true, 1.0, L.p, hg_data(in[1]), M.p, m, m));
    HG_TRY(bgemm(op, dev, dt, batch, false, true, -1.0, dQ, Q, 1.0, M));
    HG_TRY(tri_fix(op, s, dt, batch, m, M.p, true, false));
    HG_TRY(copy_whole(op, s, out[0], in[0]));
    HG_TRY(bgemm(op, dev, dt, batch, false, false, 1.0, M, Q, 1.0, dA));
    return tri_sv(op, s, dt, batch, false, true, true, 1.0, L.p, dA.p, dA.rows, dA.cols);
}

/* (dU, dL, U, L) -> dA = U^T Y U, T = dU U^T */
GPU_FWD(syevd_bwd_gpu)
{
    BEGIN;
    const hg_dtype dt = in[0]->dtype;
    int64_t batch;
    const gmat dU = tmat(in[0], &batch), U = tmat(in[2], NULL), dA = tmat(out[0], NULL);
    const int64_t n = U.rows, total = out[0]->size;
    if (total == 0) return HG_OK;
    scratch w(dev);
    HG_TRY(w.get(nbytes_of(in[2])));
    const gmat Tm = {w.p, n, n};
    HG_TRY(bgemm(op, dev, dt, batch, false, true, 1.0, dU, U, 0, Tm));
    FOR_DTYPE(dt, syevd_y_kernel<T> LAUNCH(total)((const T *)Tm.p, (const T *)hg_data(in[3]),
                                                  (const T *)hg_data(in[1]), (T *)dA.p, batch, n,
                                                  dt == HG_DTYPE_F64 ? 1e-100 : 1e-30));
    HG_TRY(hg_cuda_launched(op->name));
    HG_TRY(bgemm(op, dev, dt, batch, true, false, 1.0, U, dA, 0, Tm));
    return bgemm(op, dev, dt, batch, false, false, 1.0, Tm, U, 0, dA);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_linalg[] = {
    {"_linalg_gemm", gemm_gpu},
    {"_linalg_gemm2", gemm_gpu},
    {"_backward_linalg_gemm", gemm_bwd_gpu},
    {"_backward_linalg_gemm2", gemm_bwd_gpu},
    {"_linalg_trmm", trmm_gpu},
    {"_linalg_trsm", trsm_gpu},
    {"_backward_linalg_trmm", trmm_bwd_gpu},
    {"_backward_linalg_trsm", trsm_bwd_gpu},
    {"_linalg_syrk", syrk_gpu},
    {"_backward_linalg_syrk", syrk_bwd_gpu},
    {"_linalg_sumlogdiag", sumlogdiag_gpu},
    {"_backward_linalg_sumlogdiag", sumlogdiag_bwd_gpu},
    {"_linalg_extractdiag", extractdiag_gpu},
    {"_linalg_makediag", makediag_gpu},
    {"_linalg_extracttrian", extracttrian_gpu},
    {"_linalg_maketrian", maketrian_gpu},
    {"_linalg_potrf", potrf_gpu},
    {"_linalg_potri", potri_gpu},
    {"_backward_linalg_potrf", potrf_bwd_gpu},
    {"_backward_linalg_potri", potri_bwd_gpu},
    {"_linalg_inverse", inverse_gpu},
    {"_backward_linalg_inverse", inverse_bwd_gpu},
    {"_linalg_det", det_gpu},
    {"_backward_linalg_det", det_bwd_gpu},
    {"_linalg_slogdet", slogdet_gpu},
    {"_backward_linalg_slogdet", slogdet_bwd_gpu},
    {"_linalg_gelqf", gelqf_gpu},
    {"_backward_linalg_gelqf", gelqf_bwd_gpu},
    {"_linalg_syevd", syevd_gpu},
    {"_backward_linalg_syevd", syevd_bwd_gpu},
    {NULL, NULL},
};
