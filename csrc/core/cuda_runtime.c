/* The CUDA build's runtime: device discovery, one stream per device, the caching allocator of
 * device memory, copies and fills. Compiled only with HG_CUDA (setup.py: HG_CUDA=1; the CPU
 * build compiles this file to nothing); linked with CUDA's static runtime, which loads the driver itself: without a driver or a device it answers
 * "no device", and hg_gpu_count() is 0.
 *
 * The allocator keeps freed blocks per size class (two classes per power of two, from 512 B) and
 * hands them out again at once: every kernel and copy on a device is ordered on its one stream,
 * so work queued after a reuse runs after the work that last touched the block. A cudaMalloc that
 * fails releases the cache (after the device is idle) and tries once more before giving up with
 * an out-of-memory error that names the device and the sizes. */
#ifdef HG_CUDA
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_runtime.h"
#include "core/rng.h"

#define MAX_DEV 64
#define NUM_CLASSES 80
#define MIN_BLOCK 512

typedef struct {
    void **items;
    int n, cap;
} stack;

typedef struct {
    pthread_mutex_t lock;
    stack free[NUM_CLASSES];
    size_t cached, live;
    cudaStream_t stream;
} dev_state;

static dev_state g_dev[MAX_DEV];

/* Page-locked staging for copies to host memory (see staged_to_host). */
typedef struct {
    pthread_mutex_t lock;
    void *buf[2];
    cudaEvent_t done[2];
    bool ready, failed;
} stage;

static stage g_stage[MAX_DEV];

/* The calling thread's capture (hg_gpu_capture_begin): its stream, and the pool of the blocks
 * it freed while capturing (per size class; they belong to the graph being recorded). */
typedef struct capture {
    int dev;
    cudaStream_t stream;
    stack free[NUM_CLASSES];
    size_t bytes;          /* in the pool */
    uint64_t rng_draws;    /* hg_rng_thread_draws() at the start */
    hg_status failed;      /* a refused call (a sync, a host copy) made the capture unusable */
    char why[160];
} capture;

static _Thread_local capture *tl_cap;

static bool capturing_on(int dev) { return tl_cap && tl_cap->dev == dev; }

/* Refuses what a replay cannot repeat, for the calling thread's capture on dev. */
static hg_status refuse_in_capture(int dev, const char *what)
{
    if (!capturing_on(dev)) return HG_OK;
    if (tl_cap->failed == HG_OK) {
        tl_cap->failed = HG_ERR_UNSUPPORTED;
        snprintf(tl_cap->why, sizeof tl_cap->why, "%s", what);
    }
    return hg_error(HG_ERR_UNSUPPORTED, "%s cannot be recorded in a CUDA graph (gpu(%d))", what,
                    dev);
}
static int g_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void discover(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver or no device: not an error, zero GPUs */
        n = 0;
    }
    g_count = n > MAX_DEV ? MAX_DEV : n;
    for (int i = 0; i < MAX_DEV; i++) {
        pthread_mutex_init(&g_dev[i].lock, NULL);
        pthread_mutex_init(&g_stage[i].lock, NULL);
    }
}

int hg_gpu_count(void)
{
    pthread_once(&g_once, discover);
    return g_count;
}

int hg_built_with_cuda(void) { return 1; }

hg_status hg_gpu_check(int id)
{
    int n = hg_gpu_count();
    if (id < 0 || id >= n)
        return hg_error(HG_ERR_VALUE,
                        "GPU %d is not available: this process sees %d GPU(s) (CUDA build)", id, n);
    return HG_OK;
}

hg_status hg_cuda_status(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return HG_OK;
    (void)cudaGetLastError(); /* clears a recoverable error; a sticky one stays in the context */
    return hg_error(e == cudaErrorMemoryAllocation ? HG_ERR_MEMORY : HG_ERR_INTERNAL,
                    "%s: CUDA error %d (%s): %s", what, (int)e, cudaGetErrorName(e),
                    cudaGetErrorString(e));
}

hg_status hg_cuda_launched(const char *op) { return hg_cuda_status(cudaGetLastError(), op); }

hg_status hg_cuda_use(int dev)
{
    HG_TRY(hg_gpu_check(dev));
    return hg_cuda_status(cudaSetDevice(dev), "cudaSetDevice");
}

cudaStream_t hg_cuda_stream(int dev)
{
    if (hg_cuda_use(dev) != HG_OK) return NULL;
    if (capturing_on(dev)) return tl_cap->stream;
    dev_state *d = &g_dev[dev];
    pthread_mutex_lock(&d->lock);
    if (!d->stream) {
        cudaStream_t s;
        if (hg_cuda_status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                           "cudaStreamCreate") == HG_OK)
            d->stream = s;
    }
    cudaStream_t s = d->stream;
    pthread_mutex_unlock(&d->lock);
    return s;
}

/* The stream, or the error already set: for functions returning a status. */
#define STREAM_OR_FAIL(var, dev)                                                                \
    cudaStream_t var = hg_cuda_stream(dev);                                                    \
    if (!var) return HG_ERR_INTERNAL

static size_t class_size(int c) { return ((size_t)(2 + (c & 1)) << (c >> 1)) * (MIN_BLOCK / 2); }

static int class_of(size_t n)
{
    int c = 0;
    while (c < NUM_CLASSES - 1 && class_size(c) < n) c++;
    return c;
}

static bool push(stack *s, void *p)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        void **items = realloc(s->items, sizeof(void *) * (size_t)cap);
        if (!items) return false;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = p;
    return true;
}

/* Frees every cached block of d (lock held). cudaFree waits for the device first. */
static void drop_cache(dev_state *d)
{
    for (int c = 0; c < NUM_CLASSES; c++) {
        for (int i = 0; i < d->free[c].n; i++) cudaFree(d->free[c].items[i]);
        d->free[c].n = 0;
    }
    d->cached = 0;
}

hg_status hg_device_alloc(int dev, size_t nbytes, void **out)
{
    *out = NULL;
    HG_TRY(hg_cuda_use(dev));
    if (nbytes == 0) nbytes = 1;
    int c = class_of(nbytes);
    size_t bytes = class_size(c);
    if (bytes < nbytes) return hg_error(HG_ERR_MEMORY, "%zu bytes is too large a block", nbytes);
    if (capturing_on(dev) && tl_cap->free[c].n) { /* a block the graph already keeps */
        *out = tl_cap->free[c].items[--tl_cap->free[c].n];
        tl_cap->bytes -= bytes;
        return HG_OK;
    }
    dev_state *d = &g_dev[dev];
    pthread_mutex_lock(&d->lock);
    void *p = NULL;
    if (d->free[c].n) {
        p = d->free[c].items[--d->free[c].n];
        d->cached -= bytes;
    }
    pthread_mutex_unlock(&d->lock);
    if (!p) {
        cudaError_t e = cudaMalloc(&p, bytes);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            pthread_mutex_lock(&d->lock);
            size_t had = d->cached;
            if (d->stream) cudaStreamSynchronize(d->stream);
            drop_cache(d);
            size_t live = d->live;
            pthread_mutex_unlock(&d->lock);
            e = cudaMalloc(&p, bytes);
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                return hg_error(HG_ERR_MEMORY,
                                "out of memory on gpu(%d) allocating %zu bytes (%zu bytes in use; "
                                "%zu cached bytes were released and the allocation retried)",
                                dev, nbytes, live, had);
            }
        } else if (e != cudaSuccess) {
            return hg_cuda_status(e, "cudaMalloc");
        }
    }
    pthread_mutex_lock(&d->lock);
    d->live += bytes;
    pthread_mutex_unlock(&d->lock);
    *out = p;
    return HG_OK;
}

void hg_device_free(int dev, void *p, size_t nbytes)
{
    if (!p || dev < 0 || dev >= MAX_DEV) return;
    if (nbytes == 0) nbytes = 1;
    int c = class_of(nbytes);
    size_t bytes = class_size(c);
    /* Freed while this thread records: the block stays with the graph (captured work before
     * the free may use it at every replay), still counted as live. */
    if (capturing_on(dev)) {
        if (push(&tl_cap->free[c], p)) {
            tl_cap->bytes += bytes;
            return;
        }
        /* No room to keep it: the capture is dropped (its work never runs), so the block may
         * go back to the cache. */
        (void)refuse_in_capture(dev, "a free with no memory to record it");
    }
    dev_state *d = &g_dev[dev];
    pthread_mutex_lock(&d->lock);
    d->live -= bytes;
    bool kept = push(&d->free[c], p);
    if (kept) d->cached += bytes;
    pthread_mutex_unlock(&d->lock);
    if (!kept) { /* no room to remember it: give it back (after the work queued on it) */
        cudaSetDevice(dev);
        cudaFree(p);
    }
}

size_t hg_gpu_live_bytes(int dev)
{
    if (dev < 0 || dev >= MAX_DEV) return 0;
    pthread_mutex_lock(&g_dev[dev].lock);
    size_t n = g_dev[dev].live;
    pthread_mutex_unlock(&g_dev[dev].lock);
    return n;
}

size_t hg_gpu_cached_bytes(int dev)
{
    if (dev < 0 || dev >= MAX_DEV) return 0;
    pthread_mutex_lock(&g_dev[dev].lock);
    size_t n = g_dev[dev].cached;
    pthread_mutex_unlock(&g_dev[dev].lock);
    return n;
}

hg_status hg_gpu_release_cache(int dev)
{
    int lo = dev < 0 ? 0 : dev, hi = dev < 0 ? hg_gpu_count() : dev + 1;
    for (int i = lo; i < hi; i++) {
        HG_TRY(hg_cuda_use(i));
        dev_state *d = &g_dev[i];
        pthread_mutex_lock(&d->lock);
        if (d->stream) cudaStreamSynchronize(d->stream);
        drop_cache(d);
        pthread_mutex_unlock(&d->lock);
    }
    return HG_OK;
}

hg_status hg_gpu_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    HG_TRY(hg_cuda_use(dev));
    return hg_cuda_status(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
}

hg_status hg_device_sync(int device_type, int device_id)
{
    if (device_type != HG_DEVICE_GPU) return HG_OK;
    int lo = device_id < 0 ? 0 : device_id, hi = device_id < 0 ? hg_gpu_count() : device_id + 1;
    for (int i = lo; i < hi; i++) {
        HG_TRY(hg_cuda_use(i));
        HG_TRY(refuse_in_capture(i, "waiting for the GPU"));
        pthread_mutex_lock(&g_dev[i].lock);
        cudaStream_t s = g_dev[i].stream;
        pthread_mutex_unlock(&g_dev[i].lock);
        if (s) HG_TRY(hg_cuda_status(cudaStreamSynchronize(s), "synchronizing the GPU"));
    }
    return HG_OK;
}

/* ---- copies to host memory through pinned memory ---------------------------------------------
 * A copy into pageable host memory is slow for the DMA engine. Copies of STAGE_MIN bytes and
 * more go through two page-locked halves of STAGE_BYTES per device instead: the host drains one
 * half while the device fills the other, each half's event saying when the device is done with
 * it. The halves are the device's, guarded by their lock for the whole copy. Without page-locked
 * memory (cudaHostAlloc failed), copies stay direct. Copies from host memory stay direct: the
 * driver's own staging of pageable memory measured as fast as these halves on an H200. */
#define STAGE_BYTES ((size_t)4 << 20)
#define STAGE_MIN ((size_t)128 << 10)

/* dev's halves, locked; NULL (unlocked) when there are none. */
static stage *stage_lock(int dev)
{
    stage *t = &g_stage[dev];
    pthread_mutex_lock(&t->lock);
    if (!t->ready && !t->failed) {
        bool ok = true;
        for (int k = 0; k < 2 && ok; k++)
            ok = cudaHostAlloc(&t->buf[k], STAGE_BYTES, cudaHostAllocDefault) == cudaSuccess &&
                 cudaEventCreateWithFlags(&t->done[k], cudaEventDisableTiming) == cudaSuccess;
        if (ok) {
            t->ready = true;
        } else {
            (void)cudaGetLastError();
            t->failed = true;
        }
    }
    if (t->ready) return t;
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Device to host through the halves: chunk i is copied out of its half while the device
 * fills the other with chunk i + 1. Returns with the data in dst. */
static hg_status staged_to_host(stage *t, char *dst, const char *src, size_t n, cudaStream_t s)
{
    size_t prev_off = 0, prev_len = 0, k = 0;
    for (size_t off = 0; off < n; off += STAGE_BYTES, k ^= 1) {
        const size_t len = n - off < STAGE_BYTES ? n - off : STAGE_BYTES;
        HG_TRY(hg_cuda_status(cudaMemcpyAsync(t->buf[k], src + off, len, cudaMemcpyDeviceToHost, s),
                              "copy from the GPU"));
        HG_TRY(hg_cuda_status(cudaEventRecord(t->done[k], s), "copy from the GPU"));
        if (prev_len) { /* the other half holds the previous chunk */
            HG_TRY(hg_cuda_status(cudaEventSynchronize(t->done[k ^ 1]), "copy from the GPU"));
            memcpy(dst + prev_off, t->buf[k ^ 1], prev_len);
        }
        prev_off = off;
        prev_len = len;
    }
    if (prev_len) {
        HG_TRY(hg_cuda_status(cudaEventSynchronize(t->done[k ^ 1]), "copy from the GPU"));
        memcpy(dst + prev_off, t->buf[k ^ 1], prev_len);
    }
    return HG_OK;
}

hg_status hg_device_memcpy(void *dst, int dst_gpu, const void *src, int src_gpu, size_t n)
{
    if (!n) return HG_OK;
    if (dst_gpu < 0 && src_gpu < 0) {
        memmove(dst, src, n);
        return HG_OK;
    }
    if (src_gpu < 0) { /* from host: returns once the host buffer may be reused */
        HG_TRY(refuse_in_capture(dst_gpu, "a copy from host memory"));
        STREAM_OR_FAIL(s, dst_gpu);
        return hg_cuda_status(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s),
                              "copy to the GPU");
    }
    if (dst_gpu < 0) { /* to host: waits for the work that computes src, and the copy */
        HG_TRY(refuse_in_capture(src_gpu, "a copy to host memory"));
        STREAM_OR_FAIL(s, src_gpu);
        stage *t = n >= STAGE_MIN ? stage_lock(src_gpu) : NULL;
        if (t) {
            hg_status st = staged_to_host(t, dst, src, n, s);
            pthread_mutex_unlock(&t->lock);
            return st;
        }
        HG_TRY(hg_cuda_status(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s),
                              "copy from the GPU"));
        return hg_cuda_status(cudaStreamSynchronize(s), "copy from the GPU");
    }
    if (dst_gpu == src_gpu) {
        STREAM_OR_FAIL(s, dst_gpu);
        return hg_cuda_status(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s),
                              "copy on the GPU");
    }
    /* Between GPUs: src's producers first, and the copy done before either side's memory can be
     * reused by later work on its own stream. */
    HG_TRY(refuse_in_capture(src_gpu, "a copy between GPUs"));
    HG_TRY(refuse_in_capture(dst_gpu, "a copy between GPUs"));
    HG_TRY(hg_device_sync(HG_DEVICE_GPU, src_gpu));
    STREAM_OR_FAIL(s, dst_gpu);
    HG_TRY(
        hg_cuda_status(cudaMemcpyPeerAsync(dst, dst_gpu, src, src_gpu, n, s), "copy between GPUs"));
    return hg_cuda_status(cudaStreamSynchronize(s), "copy between GPUs");
}

hg_status hg_device_memzero(int gpu, void *p, size_t n)
{
    if (!n) return HG_OK;
    if (gpu < 0) {
        memset(p, 0, n);
        return HG_OK;
    }
    STREAM_OR_FAIL(s, gpu);
    return hg_cuda_status(cudaMemsetAsync(p, 0, n, s), "zero-filling GPU memory");
}

/* ---- CUDA graphs ------------------------------------------------------------------------- */

struct hg_gpu_graph {
    int dev;
    cudaGraphExec_t exec;
    stack blocks[NUM_CLASSES]; /* the pool: device blocks only this graph uses */
    size_t bytes;
};

bool hg_gpu_capturing(void) { return tl_cap != NULL; }

hg_status hg_gpu_capture_begin(int dev)
{
    HG_TRY(hg_cuda_use(dev));
    if (tl_cap) return hg_error(HG_ERR_INTERNAL, "this thread is already recording a CUDA graph");
    capture *c = calloc(1, sizeof *c);
    if (!c) return hg_error(HG_ERR_MEMORY, "out of memory");
    c->dev = dev;
    c->rng_draws = hg_rng_thread_draws();
    hg_status st = hg_cuda_status(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                                  "cudaStreamCreate");
    /* Relaxed: the allocator may call cudaMalloc while recording; a wait on the capture stream
     * still ends the capture with an error (and the calls above refuse it first). */
    if (st == HG_OK)
        st = hg_cuda_status(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed),
                            "cudaStreamBeginCapture");
    if (st != HG_OK) {
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
        return st;
    }
    tl_cap = c;
    return HG_OK;
}

static void give_back_blocks(int dev, stack *blocks)
{
    for (int k = 0; k < NUM_CLASSES; k++) {
        for (int i = 0; i < blocks[k].n; i++)
            hg_device_free(dev, blocks[k].items[i], class_size(k));
        free(blocks[k].items);
        blocks[k] = (stack){0};
    }
}

hg_status hg_gpu_capture_end(int dev, bool keep, hg_gpu_graph **out)
{
    if (out) *out = NULL;
    capture *c = tl_cap;
    if (!c || c->dev != dev)
        return hg_error(HG_ERR_INTERNAL, "this thread is not recording a CUDA graph on gpu(%d)",
                        dev);
    tl_cap = NULL; /* from here on, frees go to the device's cache again */
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    hg_status st = HG_OK;
    if (!keep) {
        st = HG_OK;
    } else if (c->failed != HG_OK) {
        st = hg_error(HG_ERR_UNSUPPORTED, "the recorded work included %s", c->why);
    } else if (hg_rng_thread_draws() != c->rng_draws) {
        st = hg_error(HG_ERR_UNSUPPORTED, "the recorded work draws random numbers");
    } else if (e != cudaSuccess || !graph) {
        st = hg_cuda_status(e != cudaSuccess ? e : cudaErrorStreamCaptureInvalidated,
                            "recording a CUDA graph");
    }
    hg_gpu_graph *g = NULL;
    if (keep && st == HG_OK && !(g = calloc(1, sizeof *g)))
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (g) {
        g->dev = dev;
        st = hg_cuda_status(cudaGraphInstantiate(&g->exec, graph, 0), "instantiating a CUDA graph");
    }
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(c->stream);
    if (g && st == HG_OK) {
        memcpy(g->blocks, c->free, sizeof g->blocks);
        g->bytes = c->bytes;
        *out = g;
    } else {
        free(g);
        give_back_blocks(dev, c->free);
    }
    free(c);
    return st;
}

hg_status hg_gpu_graph_launch(hg_gpu_graph *g)
{
    if (!g) return hg_error(HG_ERR_VALUE, "hg_gpu_graph_launch: NULL graph");
    STREAM_OR_FAIL(s, g->dev);
    return hg_cuda_status(cudaGraphLaunch(g->exec, s), "launching a CUDA graph");
}

void hg_gpu_graph_free(hg_gpu_graph *g)
{
    if (!g) return;
    cudaSetDevice(g->dev);
    cudaGraphExecDestroy(g->exec);
    give_back_blocks(g->dev, g->blocks);
    free(g);
}

size_t hg_gpu_graph_bytes(const hg_gpu_graph *g) { return g ? g->bytes : 0; }

#endif /* HG_CUDA */
