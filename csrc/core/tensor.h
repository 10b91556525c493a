/* The tensor and its storage, as the core and the kernels see them.
 *
 * Invariants: a tensor is row-major and contiguous; its bytes start at storage->data + offset
 * (offset != 0 only for axis-0 views); size == prod(shape) (1 for ndim 0). Storage is shared
 * by views and freed when its last reference goes. Reference counts are atomic so tensors may
 * cross threads (one predictor per thread sharing weights).
 */
#ifndef HG_CORE_TENSOR_H
#define HG_CORE_TENSOR_H

#include <stdbool.h>

#include "core/error.h"
#include "hybridgluon/hybridgluon.h"

/* The CUDA kernels (C++, nvcc) include this header too: C11's atomics have no C++ spelling, and
 * std::atomic of the same width has the same layout. */
#ifdef __cplusplus
#include <atomic>
typedef std::atomic<long> hg_atomic_long;
typedef std::atomic<int> hg_atomic_int;
typedef std::atomic<unsigned long long> hg_atomic_u64;
extern "C" {
#else
#include <stdatomic.h>
typedef atomic_long hg_atomic_long;
typedef atomic_int hg_atomic_int;
typedef _Atomic unsigned long long hg_atomic_u64;
#endif

typedef struct hg_storage {
    hg_atomic_long refcount;
    void *data;
    size_t nbytes;
    int device_type, device_id;
    void (*deleter)(void *ctx); /* NULL: data came from hg_alloc and goes back there */
    void *deleter_ctx;
    /* The write version (hg_storage_version): 0 for memory whose writes are not all seen (the
     * zero of a storage made field by field, foreign or arena memory, a pointer handed out). */
    hg_atomic_u64 version;
    hg_atomic_int exports; /* writable views handed to other code and not yet given back */
} hg_storage;

/* The device an op's output on device type t gets: MXNet's cpu_pinned (3) and cpu_shared (5)
 * labels give cpu, as MXNet's ops answer on cpu(i). */
static inline int hg_device_kind(int t) { return t == 3 || t == 5 ? HG_DEVICE_CPU : t; }

struct hg_tensor {
    hg_atomic_long refcount;
    hg_storage *storage;
    size_t offset;
    int64_t size;
    int ndim;
    hg_dtype dtype;
    int64_t shape[HG_MAX_NDIM];
    void *autograd; /* owned by the autograd tape; NULL when not recorded */
    hg_atomic_int fresh_grad; /* a gradient buffer that backward wrote since the last update */
};

/* Metadata of a tensor without data, as shape/dtype inference sees it. A dim of -1 is unknown
 * (graph inference only); ndim -1 means the whole shape is unknown. */
typedef struct hg_meta {
    int ndim;
    hg_dtype dtype;
    int64_t shape[HG_MAX_NDIM];
} hg_meta;

/* Write versions: what a plan's kept folded weights (exec/fold.c) are keyed on. A storage made by
 * hg_tensor_new* starts with a version no storage has had; every path that writes into existing
 * memory (an op's given or mutated arrays, copies, files read into place, MPI, a writable buffer
 * given back) then calls hg_storage_wrote, which gives it another. Versions come from one
 * process-wide counter, so a (storage, version) pair never names two contents, even when freed
 * memory is reused. hg_storage_version is 0 (matches nothing) for untracked memory and while a
 * writable view is out; hg_storage_untrack makes a storage untracked for good (its pointer was
 * handed to code that may write at any time). Thread-safe. */
HG_API uint64_t hg_storage_version(const hg_storage *s);
void hg_storage_wrote(hg_storage *s);
HG_API void hg_storage_untrack(hg_storage *s);
/* A writable view handed out (buffer protocol, DLPack) and given back: the storage reads as
 * untracked in between, and counts as written when it comes back. */
HG_API void hg_storage_export(hg_storage *s);
HG_API void hg_storage_unexport(hg_storage *s);
/* hg_storage_wrote on t's storage (t may be NULL). */
static inline void hg_tensor_wrote(hg_tensor *t)
{
    if (t) hg_storage_wrote(t->storage);
}

static inline void *hg_data(const hg_tensor *t) { return (char *)t->storage->data + t->offset; }
#define HG_DATA(t, T) ((T *)hg_data(t))

int64_t hg_shape_size(int ndim, const int64_t *shape);
/* Row-major strides (in elements) of a contiguous array of this shape. */
void hg_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
bool hg_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b);
/* Checks dims are >= 0, ndim <= HG_MAX_NDIM, and that the byte size does not overflow. */
hg_status hg_shape_check(int ndim, const int64_t *shape, hg_dtype dtype);
HG_API hg_meta hg_meta_of(const hg_tensor *t);

/* MXNet's NumPy shape semantics for this thread (mx.np_shape): off, the legacy reading where a
 * 0 dim means "unknown", so shape rules that MXNet makes refuse zero-size results check it.
 * hg_set_np_shape returns the previous setting. */
HG_API bool hg_set_np_shape(bool on);
bool hg_np_shape(void);
/* Whether this thread is inferring the shapes of a graph (the planner sets it): a creation
 * op's shape attribute then reads a 0 dim as unknown in the legacy reading, as MXNet's graphs
 * do (`_zeros(shape=(0, H))` is a begin state whose batch size the consumers decide), while an
 * imperative call keeps it a real zero-size dim. Returns the previous setting. */
bool hg_set_graph_infer(bool on);
bool hg_graph_infer(void);

/* A new tensor viewing t's storage with another shape (same size) or an axis-0 range. */
HG_API hg_status hg_tensor_view(hg_tensor *t, int ndim, const int64_t *shape, hg_tensor **out);
HG_API hg_status hg_tensor_slice0(hg_tensor *t, int64_t begin, int64_t end, hg_tensor **out);
/* A tensor at byte `offset` of storage s (retained): the executor's views into its arena. */
hg_status hg_tensor_on_storage(hg_storage *s, size_t offset, const hg_meta *m, hg_tensor **out);
HG_API hg_status hg_tensor_new_meta(const hg_meta *m, hg_tensor **out);
/* A new tensor whose elements are all zero bits (0 / 0.0 / false in every dtype), without
 * writing fresh memory the system already gives zeroed (see hg_alloc_zeroed). Same ownership
 * and errors as hg_tensor_new_meta; thread-safe. */
HG_API hg_status hg_tensor_new_zeroed(const hg_meta *m, hg_tensor **out);

/* Aligned, pooled memory (64-byte alignment; freed blocks are kept per size class). */
void *hg_alloc(size_t nbytes);
/* As hg_alloc, with the first nbytes set to zero: a recycled block is cleared, a fresh mapped
 * one (large classes) is already zero and is not touched. Free with hg_free. NULL when out of
 * memory. */
void *hg_alloc_zeroed(size_t nbytes);
void hg_free(void *p, size_t nbytes);
/* Bytes currently held by the pool's caches (for tests). Returns cached bytes. */
HG_API size_t hg_alloc_cached_bytes(void);
HG_API void hg_alloc_release_cache(void);
/* Bytes of tensor memory in use now, the most in use since the last reset, and a reset of that
 * peak to the current use: what a run needs, for tests and benchmarks. */
HG_API size_t hg_alloc_live_bytes(void);
HG_API size_t hg_alloc_peak_bytes(void);
HG_API void hg_alloc_reset_peak(void);

/* IEEE half <-> float. */
HG_API float hg_half_to_float(uint16_t h);
uint16_t hg_float_to_half(float f);

#ifdef __cplusplus
}
#endif

#endif
