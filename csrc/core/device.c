/* Device-generic tensor operations (placement, copies, fills) over the device runtime; in the
 * CPU build, the answers of a runtime that sees no GPU. The CUDA runtime is
 * csrc/kernels/cuda/runtime.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/device.h"

#ifndef HG_CUDA
int hg_gpu_count(void) { return 0; }
int hg_built_with_cuda(void) { return 0; }

hg_status hg_gpu_check(int id)
{
    return hg_error(HG_ERR_UNSUPPORTED,
                    "GPU %d is not available: this build of hybridgluon has no CUDA support "
                    "(build it with HG_CUDA=1; see README)",
                    id);
}

hg_status hg_device_alloc(int device_id, size_t nbytes, void **out)
{
    (void)nbytes;
    *out = NULL;
    return hg_gpu_check(device_id);
}

void hg_device_free(int device_id, void *p, size_t nbytes)
{
    (void)device_id, (void)p, (void)nbytes;
}

hg_status hg_device_memcpy(void *dst, int dst_gpu, const void *src, int src_gpu, size_t n)
{
    if (dst_gpu >= 0 || src_gpu >= 0) return hg_gpu_check(dst_gpu >= 0 ? dst_gpu : src_gpu);
    if (n) memmove(dst, src, n);
    return HG_OK;
}

hg_status hg_device_memzero(int gpu, void *p, size_t n)
{
    if (gpu >= 0) return hg_gpu_check(gpu);
    if (n && p) memset(p, 0, n);
    return HG_OK;
}

hg_status hg_device_sync(int device_type, int device_id)
{
    (void)device_type, (void)device_id;
    return HG_OK;
}

hg_status hg_gpu_capture_begin(int device_id) { return hg_gpu_check(device_id); }

hg_status hg_gpu_capture_end(int device_id, bool keep, hg_gpu_graph **out)
{
    (void)keep;
    if (out) *out = NULL;
    return hg_gpu_check(device_id);
}

bool hg_gpu_capturing(void) { return false; }
hg_status hg_gpu_graph_launch(hg_gpu_graph *g) { return (void)g, hg_gpu_check(0); }
void hg_gpu_graph_free(hg_gpu_graph *g) { (void)g; }
size_t hg_gpu_graph_bytes(const hg_gpu_graph *g) { return (void)g, 0; }

size_t hg_gpu_live_bytes(int device_id) { return (void)device_id, 0; }
size_t hg_gpu_cached_bytes(int device_id) { return (void)device_id, 0; }
hg_status hg_gpu_release_cache(int device_id) { return (void)device_id, HG_OK; }

hg_status hg_gpu_mem_info(int device_id, size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    return hg_gpu_check(device_id);
}
#endif

static atomic_int g_tf32;

int hg_gpu_set_tf32(int on) { return atomic_exchange(&g_tf32, on ? 1 : 0); }
int hg_gpu_tf32(void) { return atomic_load(&g_tf32); }

const char *hg_device_str(char *buf, int device_type, int device_id)
{
    const char *name = device_type == HG_DEVICE_GPU ? "gpu"
                       : device_type == 3           ? "cpu_pinned"
                       : device_type == 5           ? "cpu_shared"
                                                    : "cpu";
    snprintf(buf, 24, "%s(%d)", name, device_id);
    return buf;
}

/* The GPU a tensor lives on, -1 for host memory. */
static int gpu_of(const hg_tensor *t) { return hg_on_gpu(t) ? t->storage->device_id : -1; }

/* Storage deleter of device memory: the storage itself is the context. */
static void gpu_storage_free(void *ctx)
{
    hg_storage *s = ctx;
    hg_device_free(s->device_id, s->data, s->nbytes);
}

hg_status hg_tensor_new_on(const hg_meta *m, int device_type, int device_id, bool zeroed,
                           hg_tensor **out)
{
    if (device_type != HG_DEVICE_GPU) {
        HG_TRY(zeroed ? hg_tensor_new_zeroed(m, out) : hg_tensor_new_meta(m, out));
        (*out)->storage->device_type = device_type;
        (*out)->storage->device_id = device_id;
        return HG_OK;
    }
    HG_TRY(hg_gpu_check(device_id));
    HG_TRY(hg_shape_check(m->ndim, m->shape, m->dtype));
    size_t nbytes = (size_t)hg_shape_size(m->ndim, m->shape) * hg_dtype_size(m->dtype);
    void *p;
    HG_TRY(hg_device_alloc(device_id, nbytes, &p));
    hg_tensor *t;
    hg_status st = hg_tensor_from_data(p, m->ndim, m->shape, m->dtype, gpu_storage_free, NULL, &t);
    if (st != HG_OK) {
        hg_device_free(device_id, p, nbytes);
        return st;
    }
    t->storage->device_type = HG_DEVICE_GPU;
    t->storage->device_id = device_id;
    t->storage->deleter_ctx = t->storage;
    if (zeroed && (st = hg_device_memzero(device_id, p, nbytes)) != HG_OK) {
        hg_tensor_free(t);
        return st;
    }
    *out = t;
    return HG_OK;
}

hg_status hg_tensor_copy_any(const hg_tensor *src, hg_tensor *dst)
{
    if (src->dtype != dst->dtype || src->size != dst->size)
        return hg_error(HG_ERR_VALUE, "copy: source has %lld elements of %s, target %lld of %s",
                        (long long)src->size, hg_dtype_name(src->dtype), (long long)dst->size,
                        hg_dtype_name(dst->dtype));
    if (hg_data(src) == hg_data(dst)) return HG_OK;
    hg_status st = hg_device_memcpy(hg_data(dst), gpu_of(dst), hg_data(src), gpu_of(src),
                                    hg_tensor_nbytes(dst));
    hg_tensor_wrote(dst);
    return st;
}

hg_status hg_tensor_write_bytes(hg_tensor *t, const void *src, size_t nbytes)
{
    if (nbytes != hg_tensor_nbytes(t))
        return hg_error(HG_ERR_VALUE, "a buffer of %zu bytes for an array of %zu bytes", nbytes,
                        hg_tensor_nbytes(t));
    hg_status st = hg_device_memcpy(hg_data(t), gpu_of(t), src, -1, nbytes);
    hg_tensor_wrote(t);
    return st;
}

hg_status hg_tensor_read_bytes(const hg_tensor *t, void *dst, size_t nbytes)
{
    if (nbytes != hg_tensor_nbytes(t))
        return hg_error(HG_ERR_VALUE, "a buffer of %zu bytes for an array of %zu bytes", nbytes,
                        hg_tensor_nbytes(t));
    return hg_device_memcpy(dst, -1, hg_data(t), gpu_of(t), nbytes);
}

hg_status hg_tensor_zero(hg_tensor *t)
{
    hg_status st = hg_device_memzero(gpu_of(t), hg_data(t), hg_tensor_nbytes(t));
    hg_tensor_wrote(t);
    return st;
}
