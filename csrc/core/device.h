/* Devices: how many GPUs this build sees, tensors in device memory, copies between devices, and
 * the table of GPU kernels.
 *
 * The CPU build (no HG_CUDA) sees no GPU: hg_gpu_count() is 0 and every request for GPU memory
 * or a GPU copy fails with HG_ERR_UNSUPPORTED naming the device. The CUDA build
 * (csrc/kernels/cuda/) sees what the driver reports, and 0 without a driver or a device, so one
 * binary serves machines with and without a GPU.
 *
 * A GPU tensor's storage holds a device pointer: no host code may read or write hg_data() of it.
 * hg_op_run sends an op whose inputs are on a GPU to that op's GPU kernel (hg_gpu_kernel_of), or
 * fails naming the op and the device; the binding copies through hg_tensor_copy_any.
 * Execution on a GPU is ordered on one stream per device; every copy to host memory waits for
 * the work before it, so host code never sees a half-computed result.
 */
#ifndef HG_CORE_DEVICE_H
#define HG_CORE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel with the signature of hg_op_def.forward: GPU kernels have it too. Inputs and outputs
 * are on device ctx->device_id; the kernel enqueues its work on hg_cuda_stream(device) and does
 * not wait for it. ctx->workspace, when the op asks for one, is device memory. */
typedef hg_status (*hg_kernel_fn)(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out);

/* One row of a GPU kernel table: the op's registry name (not an alias) and its kernel. A table
 * ends with op == NULL. csrc/kernels/cuda/table.c lists the tables and installs the list; the
 * registry attaches each kernel to its op when it is built, and a name it does not know is a
 * registry error. */
typedef struct hg_gpu_kernel {
    const char *op;
    hg_kernel_fn forward;
    /* 1: the kernel uses the op's workspace (its `workspace` function sizes it; GPU memory).
     * 0 (the default): hg_op_run allocates none, since the CPU kernel's scratch (im2col
     * buffers, float16 copies) would be dead weight in device memory. */
    int workspace;
} hg_gpu_kernel;

/* The CUDA build's kernel tables (a NULL-terminated list of tables), installed at load time by
 * kernels/cuda/table.c, before the registry is first used. */
void hg_registry_install_gpu_kernels(const hg_gpu_kernel *const *tables);
/* The GPU kernel of an op, NULL when it has none (or in the CPU build); *workspace (may be
 * NULL) receives its row's workspace flag. */
HG_API hg_kernel_fn hg_gpu_kernel_of(const hg_op_def *op);
hg_kernel_fn hg_gpu_kernel_ws(const hg_op_def *op, bool *workspace);

/* Number of GPUs usable by this process (0 in the CPU build, without a driver or a device). */
HG_API int hg_gpu_count(void);
/* Whether this library was built with CUDA. */
HG_API int hg_built_with_cuda(void);
/* HG_OK when gpu(id) exists; else HG_ERR_UNSUPPORTED (CPU build) or HG_ERR_VALUE naming id and
 * the count. */
HG_API hg_status hg_gpu_check(int id);

static inline bool hg_on_gpu(const hg_tensor *t)
{
    return t->storage->device_type == HG_DEVICE_GPU;
}
/* "cpu(0)", "gpu(1)" of a tensor's storage, into buf (at least 24 bytes). */
const char *hg_device_str(char *buf, int device_type, int device_id);

/* A new tensor on a device (HG_DEVICE_CPU or HG_DEVICE_GPU; CPU ids are labels), zero-filled
 * when `zeroed`. Errors: out of memory on the device (after its cache was released and the
 * allocation retried), a device that does not exist. */
HG_API hg_status hg_tensor_new_on(const hg_meta *m, int device_type, int device_id, bool zeroed,
                                  hg_tensor **out);
/* Copies src's bytes into dst, wherever each lives; same size and dtype (checked). A copy to
 * host memory returns once the data is there; one to a GPU is ordered on its stream. */
HG_API hg_status hg_tensor_copy_any(const hg_tensor *src, hg_tensor *dst);
/* Copies between host memory and a tensor on any device (the tensor's byte count, checked). */
HG_API hg_status hg_tensor_write_bytes(hg_tensor *t, const void *src, size_t nbytes);
HG_API hg_status hg_tensor_read_bytes(const hg_tensor *t, void *dst, size_t nbytes);
/* Sets a tensor's bytes to zero on its device. */
HG_API hg_status hg_tensor_zero(hg_tensor *t);
/* Waits until all work queued on gpu(id) is done (id -1: every GPU). A no-op in the CPU build
 * and for CPU devices. */
HG_API hg_status hg_device_sync(int device_type, int device_id);

/* Device memory: blocks from a caching allocator per device (size classes, reused in stream
 * order). hg_device_free takes the size hg_device_alloc was given. */
hg_status hg_device_alloc(int device_id, size_t nbytes, void **out);
void hg_device_free(int device_id, void *p, size_t nbytes);
/* Bytes in use, bytes cached, and a release of the cache (after the device is idle). */
/* Raw copies and fills; a *_gpu of -1 is host memory. Copies to host wait for the data. */
hg_status hg_device_memcpy(void *dst, int dst_gpu, const void *src, int src_gpu, size_t n);
hg_status hg_device_memzero(int gpu, void *p, size_t n);
HG_API size_t hg_gpu_live_bytes(int device_id);
HG_API size_t hg_gpu_cached_bytes(int device_id);
HG_API hg_status hg_gpu_release_cache(int device_id);
/* Free and total bytes of the device's memory, as the driver reports them. */
HG_API hg_status hg_gpu_mem_info(int device_id, size_t *free_bytes, size_t *total_bytes);

/* CUDA graphs (CUDA build; the CPU build answers HG_ERR_UNSUPPORTED). Between
 * hg_gpu_capture_begin and hg_gpu_capture_end, the work the calling thread queues for gpu(dev)
 * is recorded, not run: hg_cuda_stream(dev) gives this thread a capture stream (other threads
 * keep the device's stream), and the device memory the thread allocates comes from a pool that
 * the graph keeps: blocks freed during the capture stay with the graph (later captured work may
 * reuse them; nothing else can), so a replay never writes memory another array owns. Host
 * synchronisation, host<->device copies and random draws cannot be replayed: they make the
 * capture fail (hg_gpu_capture_end then reports the error and returns no graph).
 * hg_gpu_graph_launch queues one replay on the device's stream, ordered with all other work;
 * hg_gpu_graph_free returns the pool to the device's cache (stream order keeps a replay still
 * queued safe). A thread captures one graph at a time. */
typedef struct hg_gpu_graph hg_gpu_graph;
hg_status hg_gpu_capture_begin(int device_id);
/* Ends the capture. keep false: discards it (*out may be NULL). Otherwise *out receives the
 * instantiated graph, or NULL with the error that made the capture fail. */
hg_status hg_gpu_capture_end(int device_id, bool keep, hg_gpu_graph **out);
bool hg_gpu_capturing(void);
hg_status hg_gpu_graph_launch(hg_gpu_graph *g);
void hg_gpu_graph_free(hg_gpu_graph *g);
/* Device bytes a graph keeps for itself (its pool). */
size_t hg_gpu_graph_bytes(const hg_gpu_graph *g);

/* TensorFloat-32 for float32 matrix products and convolutions on GPUs that have it: off by
 * default so float32 results agree with the CPU's; on trades about 10 bits of mantissa in the
 * products for speed. Returns the previous setting. */
HG_API int hg_gpu_set_tf32(int on);
int hg_gpu_tf32(void);

#ifdef __cplusplus
}
#endif

#endif
