/* cuBLAS for the CUDA build, loaded with dlopen at first use: the library (libcublas.so.13, from
 * the nvidia-cublas wheel that the `cuda` extra installs) is needed only by a process that
 * multiplies matrices on a GPU, so importing the package never depends on it. The handful of
 * entry points used are declared here with cuBLAS's C ABI (its enums are fixed numbers).
 * `import hybridgluon` preloads the wheel's copy (libinfo.py), so the soname resolves. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda/cuda_rt.h"

enum {
    CUBLAS_OK = 0,
    OP_N = 0,
    OP_T = 1,
    GEMM_DEFAULT = -1,
    R_32F = 0, /* cudaDataType: library_types.h */
    R_64F = 1,
    R_16F = 2,
    COMPUTE_32F = 68, /* cublasComputeType_t */
    COMPUTE_64F = 70,
    COMPUTE_32F_FAST_TF32 = 77,
};

typedef int (*create_fn)(void **handle);
typedef int (*set_stream_fn)(void *handle, cudaStream_t s);
typedef int (*set_workspace_fn)(void *handle, void *workspace, size_t bytes);
typedef int (*gemm_fn)(void *handle, int ta, int tb, int m, int n, int k, const void *alpha,
                       const void *a, int atype, int lda, long long sa, const void *b, int btype,
                       int ldb, long long sb, const void *beta, void *c, int ctype, int ldc,
                       long long sc, int batch, int compute, int algo);
typedef const char *(*status_fn)(int status);

static struct {
    void *lib;
    create_fn create;
    set_stream_fn set_stream;
    set_workspace_fn set_workspace; /* optional */
    gemm_fn gemm;
    status_fn status_string;
    char error[512];
} g_cublas;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define MAX_DEV 64
static void *g_handle[MAX_DEV];
static cudaStream_t g_bound[MAX_DEV]; /* the stream g_handle[dev] is bound to */
static void *g_workspace[MAX_DEV];    /* cuBLAS's workspace on dev, kept for the process */
#define WORKSPACE_BYTES ((size_t)32 << 20)
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void load(void)
{
    const char *path = getenv("HG_CUBLAS_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        snprintf(g_cublas.error, sizeof g_cublas.error,
                 "cuBLAS was not found (%s): install it with `pip install nvidia-cublas` (the "
                 "hybridgluon[cuda] extra) or name the library in HG_CUBLAS_LIBRARY",
                 dlerror());
        return;
    }
    g_cublas.create = (create_fn)dlsym(lib, "cublasCreate_v2");
    g_cublas.set_stream = (set_stream_fn)dlsym(lib, "cublasSetStream_v2");
    g_cublas.set_workspace = (set_workspace_fn)dlsym(lib, "cublasSetWorkspace_v2");
    g_cublas.gemm = (gemm_fn)dlsym(lib, "cublasGemmStridedBatchedEx");
    g_cublas.status_string = (status_fn)dlsym(lib, "cublasGetStatusString");
    if (!g_cublas.create || !g_cublas.set_stream || !g_cublas.gemm) {
        snprintf(g_cublas.error, sizeof g_cublas.error,
                 "the cuBLAS library found lacks cublasCreate_v2, cublasSetStream_v2 or "
                 "cublasGemmStridedBatchedEx (cuBLAS 12 or later is needed)");
        dlclose(lib);
        return;
    }
    g_cublas.lib = lib;
}

static hg_status cublas_status(int st, const char *op)
{
    if (st == CUBLAS_OK) return HG_OK;
    const char *msg = g_cublas.status_string ? g_cublas.status_string(st) : "";
    return hg_error(st == 3 /* ALLOC_FAILED */ ? HG_ERR_MEMORY : HG_ERR_INTERNAL,
                    "%s: cuBLAS error %d %s", op, st, msg ? msg : "");
}

/* The handle of gpu(dev), bound to the calling thread's stream for the device (the device's
 * own, or a CUDA graph capture's: hg_cuda_stream); created at first use. Caller holds g_lock.
 * A fixed workspace is bound with the stream, so that cuBLAS never allocates one of its own
 * while a graph is recorded (replays use it in stream order, as every other call does). */
static hg_status handle_of(int dev, const char *op, void **out)
{
    cudaStream_t s = hg_cuda_stream(dev);
    if (!s) return HG_ERR_INTERNAL;
    if (!g_handle[dev]) {
        void *h = NULL;
        HG_TRY(cublas_status(g_cublas.create(&h), op));
        if (g_cublas.set_workspace && !g_workspace[dev] &&
            cudaMalloc(&g_workspace[dev], WORKSPACE_BYTES) != cudaSuccess) {
            (void)cudaGetLastError(); /* cuBLAS then uses its own pool */
            g_workspace[dev] = NULL;
        }
        g_handle[dev] = h;
        g_bound[dev] = NULL;
    }
    if (g_bound[dev] != s) {
        HG_TRY(cublas_status(g_cublas.set_stream(g_handle[dev], s), op));
        /* setting the stream unbinds a user workspace: bind it again */
        if (g_workspace[dev])
            HG_TRY(cublas_status(
                g_cublas.set_workspace(g_handle[dev], g_workspace[dev], WORKSPACE_BYTES), op));
        g_bound[dev] = s;
    }
    *out = g_handle[dev];
    return HG_OK;
}

hg_status hg_cublas_gemm(int dev, const char *op, hg_dtype dtype, int trans_a, int trans_b,
                         int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                         int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                         double beta, void *c, int64_t ldc, int64_t stride_c, int64_t batch)
{
    if (m == 0 || n == 0 || batch == 0) return HG_OK;
    pthread_once(&g_once, load);
    if (!g_cublas.lib) return hg_error(HG_ERR_UNSUPPORTED, "%s: %s", op, g_cublas.error);
    if (dev < 0 || dev >= MAX_DEV) return hg_gpu_check(dev);
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX || batch > INT_MAX)
        return hg_error(HG_ERR_VALUE, "%s: a matrix dimension over 2^31-1 (%lld x %lld x %lld)", op,
                        (long long)m, (long long)n, (long long)k);
    int type, compute;
    float af = (float)alpha, bf = (float)beta;
    const void *pa = &af, *pb = &bf;
    switch (dtype) {
    case HG_DTYPE_F32:
        type = R_32F;
        compute = hg_gpu_tf32() ? COMPUTE_32F_FAST_TF32 : COMPUTE_32F;
        break;
    case HG_DTYPE_F16:
        type = R_16F;
        compute = COMPUTE_32F; /* half storage, float accumulation */
        break;
    case HG_DTYPE_F64:
        type = R_64F;
        compute = COMPUTE_64F;
        pa = &alpha;
        pb = &beta;
        break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: cuBLAS multiplies float16/32/64, not %s", op,
                        hg_dtype_name(dtype));
    }
    /* k == 0: C = beta * C, which cuBLAS does when k is 0 too. */
    HG_TRY(hg_cuda_use(dev));
    pthread_mutex_lock(&g_lock);
    void *h;
    hg_status st = handle_of(dev, op, &h);
    if (st == HG_OK)
        st = cublas_status(g_cublas.gemm(h, trans_a ? OP_T : OP_N, trans_b ? OP_T : OP_N, (int)m,
                                         (int)n, (int)k, pa, a, type, (int)lda, stride_a, b, type,
                                         (int)ldb, stride_b, pb, c, type, (int)ldc, stride_c,
                                         (int)batch, compute, GEMM_DEFAULT),
                           op);
    pthread_mutex_unlock(&g_lock);
    return st;
}

hg_status hg_gemm_rm(int dev, const char *op, hg_dtype dtype, int trans_a, int trans_b, int64_t m,
                     int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                     int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, double beta,
                     void *c, int64_t ldc, int64_t stride_c, int64_t batch)
{
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same call with the
     * operands swapped, m and n exchanged. */
    return hg_cublas_gemm(dev, op, dtype, trans_b, trans_a, n, m, k, alpha, b, ldb, stride_b, a,
                          lda, stride_a, beta, c, ldc, stride_c, batch);
}
