/* cuDNN for the CUDA build (cudnn.h), loaded with dlopen at first use: libcudnn.so.9 (from the
 * nvidia-cudnn-cu13 wheel) is needed only by a process that convolves on a GPU, so importing
 * the package never depends on it. HG_CUDNN_LIBRARY names another copy (a path loads that file;
 * libcudnn.so.9 finds its sub-libraries, libcudnn_cnn.so.9 and the rest, next to itself).
 *
 * Only the legacy convolution API is used, and only the entry points and enum values below,
 * declared by hand with cuDNN 9's C ABI (checked against cudnn_graph.h, cudnn_ops.h and
 * cudnn_cnn.h of cuDNN 9.28): its enums are fixed numbers and its descriptors opaque pointers.
 *
 * One handle per device, bound to the calling thread's stream for it; the handle and the
 * algorithm cache are guarded by one mutex, as cuBLAS's handle is in cublas.c. Algorithms are
 * chosen on the first call of each geometry by cuDNN's heuristics, or by measuring them
 * (cudnnFind*Ex) with MXNET_CUDNN_AUTOTUNE_DEFAULT=1, then cached. */
#include "kernels/cuda/cudnn.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    STATUS_SUCCESS = 0,
    DATA_FLOAT = 0, /* cudnnDataType_t */
    DATA_DOUBLE = 1,
    DATA_HALF = 2,
    DEFAULT_MATH = 0, /* cudnnMathType_t */
    TENSOR_OP_MATH = 1,
    TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
    FMA_MATH = 3,
    TENSOR_NCHW = 0,       /* cudnnTensorFormat_t */
    CROSS_CORRELATION = 1, /* cudnnConvolutionMode_t: MXNet's convolution does not flip */
    MAX_ALGOS = 8,         /* CUDNN_CONVOLUTION_FWD_ALGO_COUNT, the largest of the three */
};

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the three have this layout. */
typedef struct {
    int algo;
    int status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
} algo_perf;

typedef void *desc; /* every descriptor and the handle are opaque pointers */
typedef int (*create_fn)(desc *);
typedef int (*destroy_fn)(desc);
typedef int (*set_stream_fn)(desc handle, cudaStream_t s);
typedef const char *(*error_string_fn)(int status);
typedef int (*set_tensor_fn)(desc, int dtype, int nd, const int *dims, const int *strides);
typedef int (*set_filter_fn)(desc, int dtype, int format, int nd, const int *dims);
typedef int (*set_conv_fn)(desc, int n, const int *pad, const int *stride, const int *dilation,
                           int mode, int compute);
typedef int (*set_int_fn)(desc, int);
/* The three heuristics take (handle, desc a, desc b, conv, desc c, requested, &returned, perf). */
typedef int (*get_algo_fn)(desc h, desc a, desc b, desc conv, desc c, int n, int *got,
                           algo_perf *perf);
/* The three workspace queries take (handle, desc a, desc b, conv, desc c, algo, &bytes). */
typedef int (*ws_size_fn)(desc h, desc a, desc b, desc conv, desc c, int algo, size_t *bytes);
/* The three products take (handle, alpha, desc a, a, desc b, b, conv, algo, ws, ws bytes, beta,
 * desc out, out). */
typedef int (*conv_fn)(desc h, const void *alpha, desc da, const void *a, desc db, const void *b,
                       desc conv, int algo, void *ws, size_t ws_bytes, const void *beta, desc dc,
                       void *c);
/* The three measured searches (cudnnFind*AlgorithmEx) take (handle, desc a, a, desc b, b, conv,
 * desc c, c, requested, &returned, perf, ws, ws bytes). */
typedef int (*find_fn)(desc h, desc da, const void *a, desc db, const void *b, desc conv, desc dc,
                       void *c, int n, int *got, algo_perf *perf, void *ws, size_t ws_bytes);

static struct {
    void *lib;
    create_fn create, create_tensor, create_filter, create_conv;
    destroy_fn destroy_tensor, destroy_filter, destroy_conv;
    set_stream_fn set_stream;
    error_string_fn error_string;
    set_tensor_fn set_tensor;
    set_filter_fn set_filter;
    set_conv_fn set_conv;
    set_int_fn set_groups, set_math;
    get_algo_fn get_algo[3];
    find_fn find[3]; /* optional: without them, the heuristics choose */
    ws_size_fn ws_size[3];
    conv_fn run[3];
    char error[512];
} g_dnn;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define MAX_DEV 64
static desc g_handle[MAX_DEV];
static cudaStream_t g_bound[MAX_DEV]; /* the stream g_handle[dev] is bound to */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void *sym(void *lib, const char *name, bool *ok)
{
    void *p = dlsym(lib, name);
    if (!p && *ok) {
        *ok = false;
        snprintf(g_dnn.error, sizeof g_dnn.error,
                 "the cuDNN library found lacks %s (cuDNN 9 is needed)", name);
    }
    return p;
}

static void load(void)
{
    const char *path = getenv("HG_CUDNN_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        snprintf(g_dnn.error, sizeof g_dnn.error,
                 "cuDNN was not found (%s): install it with `pip install nvidia-cudnn-cu13` (the "
                 "hybridgluon[cuda] extra) or name libcudnn.so.9 in HG_CUDNN_LIBRARY",
                 dlerror());
        return;
    }
    bool ok = true;
    g_dnn.create = (create_fn)sym(lib, "cudnnCreate", &ok);
    g_dnn.set_stream = (set_stream_fn)sym(lib, "cudnnSetStream", &ok);
    g_dnn.error_string = (error_string_fn)sym(lib, "cudnnGetErrorString", &ok);
    g_dnn.create_tensor = (create_fn)sym(lib, "cudnnCreateTensorDescriptor", &ok);
    g_dnn.destroy_tensor = (destroy_fn)sym(lib, "cudnnDestroyTensorDescriptor", &ok);
    g_dnn.set_tensor = (set_tensor_fn)sym(lib, "cudnnSetTensorNdDescriptor", &ok);
    g_dnn.create_filter = (create_fn)sym(lib, "cudnnCreateFilterDescriptor", &ok);
    g_dnn.destroy_filter = (destroy_fn)sym(lib, "cudnnDestroyFilterDescriptor", &ok);
    g_dnn.set_filter = (set_filter_fn)sym(lib, "cudnnSetFilterNdDescriptor", &ok);
    g_dnn.create_conv = (create_fn)sym(lib, "cudnnCreateConvolutionDescriptor", &ok);
    g_dnn.destroy_conv = (destroy_fn)sym(lib, "cudnnDestroyConvolutionDescriptor", &ok);
    g_dnn.set_conv = (set_conv_fn)sym(lib, "cudnnSetConvolutionNdDescriptor", &ok);
    g_dnn.set_groups = (set_int_fn)sym(lib, "cudnnSetConvolutionGroupCount", &ok);
    g_dnn.set_math = (set_int_fn)sym(lib, "cudnnSetConvolutionMathType", &ok);
    g_dnn.get_algo[HG_CUDNN_FWD] = (get_algo_fn)sym(lib, "cudnnGetConvolutionForwardAlgorithm_v7",
                                                    &ok);
    g_dnn.get_algo[HG_CUDNN_BWD_DATA] = (get_algo_fn)sym(
        lib, "cudnnGetConvolutionBackwardDataAlgorithm_v7", &ok);
    g_dnn.get_algo[HG_CUDNN_BWD_FILTER] = (get_algo_fn)sym(
        lib, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", &ok);
    g_dnn.ws_size[HG_CUDNN_FWD] = (ws_size_fn)sym(lib, "cudnnGetConvolutionForwardWorkspaceSize",
                                                  &ok);
    g_dnn.ws_size[HG_CUDNN_BWD_DATA] = (ws_size_fn)sym(
        lib, "cudnnGetConvolutionBackwardDataWorkspaceSize", &ok);
    g_dnn.ws_size[HG_CUDNN_BWD_FILTER] = (ws_size_fn)sym(
        lib, "cudnnGetConvolutionBackwardFilterWorkspaceSize", &ok);
    g_dnn.run[HG_CUDNN_FWD] = (conv_fn)sym(lib, "cudnnConvolutionForward", &ok);
    g_dnn.run[HG_CUDNN_BWD_DATA] = (conv_fn)sym(lib, "cudnnConvolutionBackwardData", &ok);
    g_dnn.run[HG_CUDNN_BWD_FILTER] = (conv_fn)sym(lib, "cudnnConvolutionBackwardFilter", &ok);
    g_dnn.find[HG_CUDNN_FWD] = (find_fn)dlsym(lib, "cudnnFindConvolutionForwardAlgorithmEx");
    g_dnn.find[HG_CUDNN_BWD_DATA] = (find_fn)dlsym(lib,
                                                   "cudnnFindConvolutionBackwardDataAlgorithmEx");
    g_dnn.find[HG_CUDNN_BWD_FILTER] = (find_fn)dlsym(
        lib, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    if (!ok) {
        dlclose(lib);
        return;
    }
    g_dnn.lib = lib;
}

static hg_status dnn_status(int st, const char *op, const char *what)
{
    if (st == STATUS_SUCCESS) return HG_OK;
    const char *msg = g_dnn.error_string ? g_dnn.error_string(st) : "";
    return hg_error(HG_ERR_INTERNAL, "%s: cuDNN error %d in %s: %s", op, st, what, msg ? msg : "");
}

/* The handle of gpu(dev), bound to the calling thread's stream for the device (the device's
 * own, or a CUDA graph capture's: hg_cuda_stream); created at first use. Caller holds g_lock. */
static hg_status handle_of(int dev, const char *op, desc *out)
{
    cudaStream_t s = hg_cuda_stream(dev);
    if (!s) return HG_ERR_INTERNAL;
    if (!g_handle[dev]) {
        desc h = NULL;
        HG_TRY(dnn_status(g_dnn.create(&h), op, "cudnnCreate"));
        g_handle[dev] = h;
        g_bound[dev] = NULL;
    }
    if (g_bound[dev] != s) {
        HG_TRY(dnn_status(g_dnn.set_stream(g_handle[dev], s), op, "cudnnSetStream"));
        g_bound[dev] = s;
    }
    *out = g_handle[dev];
    return HG_OK;
}

/* ---- the algorithm cache -------------------------------------------------------------------
 * Open addressing on a key of the product, the geometry, the dtype, the TF32 setting, the
 * workspace limit and the device. When the table is full, choices are made again each call. */

#define KEY_LEN 26
#define CACHE_SLOTS 1024

typedef struct {
    bool used;
    int64_t key[KEY_LEN];
    int algo, math;
    size_t ws;
} cache_entry;

static cache_entry g_cache[CACHE_SLOTS];

/* Whether algorithms are chosen by measuring them (cudnnFind*Ex) on the first call of each
 * geometry: MXNET_CUDNN_AUTOTUNE_DEFAULT=1 (or 2) asks for it, as MXNet's autotuning. Off by
 * default, unlike MXNet: the measured winners (FFT, Winograd) are faster but round float32
 * differently from the CPU, as TF32 would (docs/gpu.md has the figures). */
static bool autotune(void)
{
    static atomic_int v = -1;
    int on = atomic_load(&v);
    if (on < 0) {
        const char *e = getenv("MXNET_CUDNN_AUTOTUNE_DEFAULT");
        on = e && *e && strcmp(e, "0") != 0;
        atomic_store(&v, on);
    }
    return on;
}

static void make_key(int dev, hg_cudnn_conv_kind kind, const hg_cudnn_conv *c, bool tf32,
                     int64_t *key)
{
    int n = 0;
    key[n++] = dev;
    key[n++] = kind;
    key[n++] = c->dtype;
    key[n++] = c->nsp;
    key[n++] = tf32;
    key[n++] = autotune();
    key[n++] = (int64_t)c->ws_limit;
    key[n++] = c->N;
    key[n++] = c->C;
    key[n++] = c->F;
    key[n++] = c->G;
    for (int i = 0; i < 3; i++) {
        key[n++] = c->in[i];
        key[n++] = c->k[i];
        key[n++] = c->s[i];
        key[n++] = c->d[i];
        key[n++] = c->p[i];
    }
    (void)n; /* KEY_LEN entries: 11 + 15 */
}

static uint64_t key_hash(const int64_t *key)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < KEY_LEN; i++) {
        h ^= (uint64_t)key[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

/* The slot holding key, or the empty slot it would go to; -1 when the table is full. */
static int cache_slot(const int64_t *key)
{
    uint64_t h = key_hash(key);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        int s = (int)((h + (uint64_t)i) % CACHE_SLOTS);
        if (!g_cache[s].used || memcmp(g_cache[s].key, key, sizeof g_cache[s].key) == 0) return s;
    }
    return -1;
}

/* ---- descriptors ------------------------------------------------------------------------- */

typedef struct {
    desc x, w, y, conv;
} descs;

static void free_descs(descs *d)
{
    if (d->x) g_dnn.destroy_tensor(d->x);
    if (d->y) g_dnn.destroy_tensor(d->y);
    if (d->w) g_dnn.destroy_filter(d->w);
    if (d->conv) g_dnn.destroy_conv(d->conv);
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* A contiguous (N, ch, *sp) tensor descriptor of nd dims (4: the last two spatial dims). */
static hg_status set_tensor(desc t, int dtype, int nd, int64_t n, int64_t ch, const int64_t *sp,
                            const char *op)
{
    int dims[5], strides[5];
    int64_t d64[5] = {n, ch, sp[0], sp[1], sp[2]};
    if (nd == 4) d64[2] = sp[1], d64[3] = sp[2];
    int64_t st = 1;
    for (int i = nd - 1; i >= 0; i--) {
        if (!fits_int(d64[i]) || !fits_int(st))
            return hg_error(HG_ERR_VALUE, "%s: a dimension or stride over 2^31-1 for cuDNN", op);
        dims[i] = (int)d64[i];
        strides[i] = (int)st;
        st *= d64[i] > 0 ? d64[i] : 1;
    }
    return dnn_status(g_dnn.set_tensor(t, dtype, nd, dims, strides), op,
                      "cudnnSetTensorNdDescriptor");
}

static hg_status make_descs(const hg_cudnn_conv *c, const char *op, bool precise, descs *d)
{
    int dtype = c->dtype == HG_DTYPE_F64   ? DATA_DOUBLE
                : c->dtype == HG_DTYPE_F16 ? DATA_HALF
                                           : DATA_FLOAT;
    int compute = c->dtype == HG_DTYPE_F64 ? DATA_DOUBLE : DATA_FLOAT;
    int nd = c->nsp == 3 ? 5 : 4, first = 5 - nd; /* first spatial index used of the 3 */
    HG_TRY(dnn_status(g_dnn.create_tensor(&d->x), op, "cudnnCreateTensorDescriptor"));
    HG_TRY(dnn_status(g_dnn.create_tensor(&d->y), op, "cudnnCreateTensorDescriptor"));
    HG_TRY(dnn_status(g_dnn.create_filter(&d->w), op, "cudnnCreateFilterDescriptor"));
    HG_TRY(dnn_status(g_dnn.create_conv(&d->conv), op, "cudnnCreateConvolutionDescriptor"));
    HG_TRY(set_tensor(d->x, dtype, nd, c->N, c->C, c->in, op));
    HG_TRY(set_tensor(d->y, dtype, nd, c->N, c->F, c->out, op));
    int wdims[5], pad[3], stride[3], dil[3];
    int64_t w64[5] = {c->F, c->C / c->G, c->k[0], c->k[1], c->k[2]};
    if (nd == 4) w64[2] = c->k[1], w64[3] = c->k[2];
    for (int i = 0; i < nd; i++) {
        if (!fits_int(w64[i]))
            return hg_error(HG_ERR_VALUE, "%s: a weight dimension over 2^31-1 for cuDNN", op);
        wdims[i] = (int)w64[i];
    }
    for (int i = 0; i < nd - 2; i++) {
        int j = first + i;
        if (!fits_int(c->p[j]) || !fits_int(c->s[j]) || !fits_int(c->d[j]) || !fits_int(c->G))
            return hg_error(HG_ERR_VALUE, "%s: pad, stride or dilation over 2^31-1", op);
        pad[i] = (int)c->p[j];
        stride[i] = (int)c->s[j];
        dil[i] = (int)c->d[j];
    }
    HG_TRY(dnn_status(g_dnn.set_filter(d->w, dtype, TENSOR_NCHW, nd, wdims), op,
                      "cudnnSetFilterNdDescriptor"));
    HG_TRY(dnn_status(g_dnn.set_conv(d->conv, nd - 2, pad, stride, dil, CROSS_CORRELATION, compute),
                      op, "cudnnSetConvolutionNdDescriptor"));
    HG_TRY(dnn_status(g_dnn.set_groups(d->conv, (int)c->G), op, "cudnnSetConvolutionGroupCount"));
    /* float32 without TF32 and float64: no reduced-precision tensor-core paths. */
    int math = precise && c->dtype == HG_DTYPE_F32 ? FMA_MATH : DEFAULT_MATH;
    return dnn_status(g_dnn.set_math(d->conv, math), op, "cudnnSetConvolutionMathType");
}

/* The descriptors in the argument order of the product's cuDNN calls: heuristics, workspace
 * size and the call itself take (a, b, conv, c) = FWD (x, w, y), BWD_DATA (w, y, x),
 * BWD_FILTER (x, y, w). */
static void order(hg_cudnn_conv_kind kind, const descs *d, desc *a, desc *b, desc *c)
{
    switch (kind) {
    case HG_CUDNN_FWD: *a = d->x, *b = d->w, *c = d->y; break;
    case HG_CUDNN_BWD_DATA: *a = d->w, *b = d->y, *c = d->x; break;
    default: *a = d->x, *b = d->y, *c = d->w; break;
    }
}

static const char *const k_what[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                      "cudnnConvolutionBackwardFilter"};

/* Whether an algorithm's math type is allowed: when precise, none that rounds through tensor
 * cores (TF32 or half). */
static bool math_ok(int math_type, bool precise)
{
    return !precise ||
           (math_type != TENSOR_OP_MATH && math_type != TENSOR_OP_MATH_ALLOW_CONVERSION);
}

/* The fastest algorithm of a measured search within the workspace limit (-1: none, or no
 * search: no cuDNN entry point, autotuning off, or a CUDA graph being recorded, which cannot
 * wait for the measurements). Runs the product several times into p[2] (overwritten by the
 * call that follows). Caller holds g_lock. */
static int measured(int dev, desc h, hg_cudnn_conv_kind kind, const hg_cudnn_conv *c, bool precise,
                    desc a, const void *pa, desc b, const void *pb, desc conv, desc cc, void *pc,
                    int *math)
{
    if (!g_dnn.find[kind] || !autotune() || hg_gpu_capturing()) return -1;
    size_t ws_bytes = c->ws_limit;
    void *ws = NULL;
    while (ws_bytes && hg_device_alloc(dev, ws_bytes, &ws) != HG_OK) { /* less, then none */
        hg_error_clear();
        ws = NULL;
        ws_bytes = ws_bytes > ((size_t)16 << 20) ? ws_bytes / 4 : 0;
    }
    algo_perf perf[MAX_ALGOS];
    int got = 0, algo = -1;
    memset(perf, 0, sizeof perf);
    int st = g_dnn.find[kind](h, a, pa, b, pb, conv, cc, pc, MAX_ALGOS, &got, perf, ws, ws_bytes);
    if (ws) hg_device_free(dev, ws, ws_bytes);
    if (st != STATUS_SUCCESS) {
        (void)cudaGetLastError();
        return -1;
    }
    for (int i = 0; i < got && i < MAX_ALGOS && algo < 0; i++) {
        if (perf[i].status != STATUS_SUCCESS || perf[i].memory > ws_bytes ||
            !math_ok(perf[i].math_type, precise))
            continue;
        algo = perf[i].algo;
        *math = precise ? (c->dtype == HG_DTYPE_F32 ? FMA_MATH : DEFAULT_MATH) : perf[i].math_type;
    }
    return algo;
}

/* Chooses the product's algorithm: measured (see measured()), else by the heuristics (the first
 * that succeeds within the workspace limit and, when precise, uses no tensor-op math), and sets
 * its math type on d->conv. Caller holds g_lock. */
static hg_status choose(int dev, desc h, hg_cudnn_conv_kind kind, const hg_cudnn_conv *c,
                        bool precise, descs *d, const void *const *p, const char *op, int *algo,
                        int *math, size_t *ws)
{
    desc a, b, cc;
    order(kind, d, &a, &b, &cc);
    *algo = measured(dev, h, kind, c, precise, a, p[0], b, p[1], d->conv, cc, (void *)p[2], math);
    if (*algo < 0) {
        algo_perf perf[MAX_ALGOS];
        int got = 0;
        memset(perf, 0, sizeof perf);
        HG_TRY(dnn_status(g_dnn.get_algo[kind](h, a, b, d->conv, cc, MAX_ALGOS, &got, perf), op,
                          "the algorithm heuristics"));
        for (int i = 0; i < got && i < MAX_ALGOS; i++) {
            if (perf[i].status != STATUS_SUCCESS || perf[i].memory > c->ws_limit ||
                !math_ok(perf[i].math_type, precise))
                continue;
            *algo = perf[i].algo;
            *math = precise ? (c->dtype == HG_DTYPE_F32 ? FMA_MATH : DEFAULT_MATH)
                            : perf[i].math_type;
            break;
        }
    }
    if (*algo < 0) { /* algorithm 0 (implicit GEMM / sum of products) needs no workspace */
        *algo = 0;
        *math = precise && c->dtype == HG_DTYPE_F32 ? FMA_MATH : DEFAULT_MATH;
    }
    HG_TRY(dnn_status(g_dnn.set_math(d->conv, *math), op, "cudnnSetConvolutionMathType"));
    return dnn_status(g_dnn.ws_size[kind](h, a, b, d->conv, cc, *algo, ws), op,
                      "the workspace size query");
}

hg_status hg_cudnn_conv_run(int dev, const char *op, hg_cudnn_conv_kind kind,
                            const hg_cudnn_conv *c, void *x, void *w, void *y)
{
    pthread_once(&g_once, load);
    if (!g_dnn.lib) return hg_error(HG_ERR_UNSUPPORTED, "%s: %s", op, g_dnn.error);
    if (dev < 0 || dev >= MAX_DEV) return hg_gpu_check(dev);
    if (c->dtype != HG_DTYPE_F32 && c->dtype != HG_DTYPE_F64 && c->dtype != HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE, "%s: cuDNN convolves float16/32/64, not %s", op,
                        hg_dtype_name(c->dtype));
    HG_TRY(hg_cuda_use(dev));
    const bool tf32 = c->dtype == HG_DTYPE_F32 && hg_gpu_tf32();
    const bool precise = c->dtype != HG_DTYPE_F16 && !tf32;
    int64_t key[KEY_LEN];
    make_key(dev, kind, c, tf32, key);
    pthread_mutex_lock(&g_lock);
    descs d = {0};
    desc h = NULL, a, b, cc;
    int algo = 0, math = DEFAULT_MATH;
    size_t ws_bytes = 0;
    void *ws = NULL;
    hg_status st = handle_of(dev, op, &h);
    if (st == HG_OK) st = make_descs(c, op, precise, &d);
    if (st == HG_OK) {
        int slot = cache_slot(key);
        if (slot >= 0 && g_cache[slot].used) {
            algo = g_cache[slot].algo;
            math = g_cache[slot].math;
            ws_bytes = g_cache[slot].ws;
            st = dnn_status(g_dnn.set_math(d.conv, math), op, "cudnnSetConvolutionMathType");
        } else {
            const void *p[3];
            switch (kind) {
            case HG_CUDNN_FWD: p[0] = x, p[1] = w, p[2] = y; break;
            case HG_CUDNN_BWD_DATA: p[0] = w, p[1] = y, p[2] = x; break;
            default: p[0] = x, p[1] = y, p[2] = w; break;
            }
            st = choose(dev, h, kind, c, precise, &d, p, op, &algo, &math, &ws_bytes);
            if (st == HG_OK && slot >= 0) {
                cache_entry *e = &g_cache[slot];
                memcpy(e->key, key, sizeof e->key);
                e->algo = algo;
                e->math = math;
                e->ws = ws_bytes;
                e->used = true;
            }
        }
    }
    if (st == HG_OK && ws_bytes > 0) st = hg_device_alloc(dev, ws_bytes, &ws);
    if (st == HG_OK) {
        /* alpha 1, beta 0: float scalars for float/half data, double ones for double. */
        const float f1 = 1.0f, f0 = 0.0f;
        const double d1 = 1.0, d0 = 0.0;
        const void *alpha = c->dtype == HG_DTYPE_F64 ? (const void *)&d1 : (const void *)&f1;
        const void *beta = c->dtype == HG_DTYPE_F64 ? (const void *)&d0 : (const void *)&f0;
        const void *pa, *pb;
        void *pc;
        order(kind, &d, &a, &b, &cc);
        switch (kind) {
        case HG_CUDNN_FWD: pa = x, pb = w, pc = y; break;
        case HG_CUDNN_BWD_DATA: pa = w, pb = y, pc = x; break;
        default: pa = x, pb = y, pc = w; break;
        }
        st = dnn_status(
            g_dnn.run[kind](h, alpha, a, pa, b, pb, d.conv, algo, ws, ws_bytes, beta, cc, pc), op,
            k_what[kind]);
    }
    /* Stream-ordered: the block is reused only by work queued after this product. */
    if (ws) hg_device_free(dev, ws, ws_bytes);
    free_descs(&d);
    pthread_mutex_unlock(&g_lock);
    return st;
}
