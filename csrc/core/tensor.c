/* Tensor creation, views, reference counting and the dtype table. */
#include "core/tensor.h"
#include "core/device.h"
#include "core/half.h"

#include <math.h>
#include <string.h>

/* By hg_dtype (MXNet's type flags). The asserts catch a dtype added to the enum, not here. */
static const char *const k_dtype_names[] = {[HG_DTYPE_F32] = "float32", [HG_DTYPE_F64] = "float64",
                                            [HG_DTYPE_F16] = "float16", [HG_DTYPE_U8] = "uint8",
                                            [HG_DTYPE_I32] = "int32",   [HG_DTYPE_I8] = "int8",
                                            [HG_DTYPE_I64] = "int64",   [HG_DTYPE_BOOL] = "bool"};
static const size_t k_dtype_sizes[] = {[HG_DTYPE_F32] = 4, [HG_DTYPE_F64] = 8, [HG_DTYPE_F16] = 2,
                                       [HG_DTYPE_U8] = 1,  [HG_DTYPE_I32] = 4, [HG_DTYPE_I8] = 1,
                                       [HG_DTYPE_I64] = 8, [HG_DTYPE_BOOL] = 1};
_Static_assert(sizeof k_dtype_names / sizeof *k_dtype_names == HG_NUM_DTYPES, "a name per dtype");
_Static_assert(sizeof k_dtype_sizes / sizeof *k_dtype_sizes == HG_NUM_DTYPES, "a size per dtype");

const char *hg_dtype_name(hg_dtype dt)
{
    return (unsigned)dt < HG_NUM_DTYPES ? k_dtype_names[dt] : "unknown";
}

size_t hg_dtype_size(hg_dtype dt) { return (unsigned)dt < HG_NUM_DTYPES ? k_dtype_sizes[dt] : 0; }

hg_status hg_dtype_from_name(const char *name, hg_dtype *out)
{
    if (!name || !out) return hg_error(HG_ERR_VALUE, "hg_dtype_from_name: NULL argument");
    for (int i = 0; i < HG_NUM_DTYPES; i++) {
        if (strcmp(name, k_dtype_names[i]) == 0) {
            *out = (hg_dtype)i;
            return HG_OK;
        }
    }
    return hg_error(HG_ERR_TYPE,
                    "unknown dtype '%s' (expected one of float32, float64, float16, "
                    "uint8, int32, int8, int64, bool)",
                    name);
}

void hg_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d];
    }
}

int64_t hg_shape_size(int ndim, const int64_t *shape)
{
    uint64_t n = 1; /* unsigned: no undefined behaviour even for an unchecked shape */
    for (int i = 0; i < ndim; i++) n *= (uint64_t)shape[i];
    return (int64_t)n;
}

bool hg_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b)
{
    if (ndim_a != ndim_b) return false;
    for (int i = 0; i < ndim_a; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static _Thread_local bool t_np_shape;

bool hg_set_np_shape(bool on)
{
    bool prev = t_np_shape;
    t_np_shape = on;
    return prev;
}

bool hg_np_shape(void) { return t_np_shape; }

static _Thread_local bool t_graph_infer;

bool hg_set_graph_infer(bool on)
{
    bool prev = t_graph_infer;
    t_graph_infer = on;
    return prev;
}

bool hg_graph_infer(void) { return t_graph_infer; }

hg_status hg_shape_check(int ndim, const int64_t *shape, hg_dtype dtype)
{
    char buf[HG_SHAPE_STR];
    if ((unsigned)dtype >= HG_NUM_DTYPES)
        return hg_error(HG_ERR_TYPE, "invalid dtype flag %d", dtype);
    if (ndim < 0 || ndim > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "number of dimensions %d is outside [0, %d]", ndim,
                        HG_MAX_NDIM);
    /* Keep the total byte count below 2^62 so no size computation can overflow. */
    if (ndim > 0 && !shape) return hg_error(HG_ERR_VALUE, "NULL shape with %d dimensions", ndim);
    /* A zero dimension makes the size 0, but the other dimensions' product must still fit
     * (size computations multiply them in other orders). */
    double bytes = (double)hg_dtype_size(dtype), nonzero = bytes;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return hg_error(HG_ERR_VALUE, "negative dimension in shape %s",
                            hg_shape_str(buf, ndim, shape));
        bytes *= (double)shape[i];
        if (shape[i]) nonzero *= (double)shape[i];
    }
    if (bytes > 4.0e18 || nonzero > 4.0e18)
        return hg_error(HG_ERR_MEMORY, "shape %s is too large to allocate",
                        hg_shape_str(buf, ndim, shape));
    return HG_OK;
}

hg_meta hg_meta_of(const hg_tensor *t)
{
    hg_meta m;
    m.ndim = t->ndim;
    m.dtype = t->dtype;
    memcpy(m.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return m;
}

static hg_tensor *tensor_header(int ndim, const int64_t *shape, hg_dtype dtype)
{
    hg_tensor *t = hg_alloc(sizeof *t);
    if (!t) return NULL;
    atomic_init(&t->refcount, 1);
    t->storage = NULL;
    t->offset = 0;
    t->ndim = ndim;
    t->dtype = dtype;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    t->size = hg_shape_size(ndim, shape);
    t->autograd = NULL;
    atomic_init(&t->fresh_grad, 0);
    return t;
}

/* ---- write versions (tensor.h) ---- */

static hg_atomic_u64 g_version = 1;

static uint64_t next_version(void) { return atomic_fetch_add(&g_version, 1); }

uint64_t hg_storage_version(const hg_storage *s)
{
    if (atomic_load(&s->exports) > 0) return 0;
    return atomic_load(&s->version);
}

void hg_storage_wrote(hg_storage *s)
{
    /* after the writes (sequentially consistent): a reader that sees the old version may have
     * read a mix, and keys it under the old version, which matches nothing from now on */
    unsigned long long v = atomic_load(&s->version);
    while (v != 0 && !atomic_compare_exchange_weak(&s->version, &v, next_version())) {
    }
}

void hg_storage_untrack(hg_storage *s) { atomic_store(&s->version, 0); }

void hg_storage_export(hg_storage *s) { atomic_fetch_add(&s->exports, 1); }

void hg_storage_unexport(hg_storage *s)
{
    hg_storage_wrote(s);
    atomic_fetch_sub(&s->exports, 1);
}

static hg_status tensor_new(int ndim, const int64_t *shape, hg_dtype dtype, bool zeroed,
                            hg_tensor **out)
{
    if (!out) return hg_error(HG_ERR_VALUE, "hg_tensor_new: NULL out pointer");
    HG_TRY(hg_shape_check(ndim, shape, dtype));
    hg_tensor *t = tensor_header(ndim, shape, dtype);
    hg_storage *s = hg_alloc(sizeof *s);
    size_t nbytes = (size_t)hg_shape_size(ndim, shape) * hg_dtype_size(dtype);
    void *data = zeroed ? hg_alloc_zeroed(nbytes) : hg_alloc(nbytes);
    if (!t || !s || !data) {
        hg_free(t, sizeof *t);
        hg_free(s, sizeof *s);
        hg_free(data, nbytes);
        char buf[HG_SHAPE_STR];
        return hg_error(HG_ERR_MEMORY, "out of memory allocating %zu bytes for shape %s", nbytes,
                        hg_shape_str(buf, ndim, shape));
    }
    atomic_init(&s->refcount, 1);
    s->data = data;
    s->nbytes = nbytes;
    s->device_type = HG_DEVICE_CPU;
    s->device_id = 0;
    s->deleter = NULL;
    s->deleter_ctx = NULL;
    atomic_init(&s->version, next_version());
    atomic_init(&s->exports, 0);
    t->storage = s;
    *out = t;
    return HG_OK;
}

hg_status hg_tensor_new(int ndim, const int64_t *shape, hg_dtype dtype, hg_tensor **out)
{
    return tensor_new(ndim, shape, dtype, false, out);
}

hg_status hg_tensor_new_meta(const hg_meta *m, hg_tensor **out)
{
    return tensor_new(m->ndim, m->shape, m->dtype, false, out);
}

hg_status hg_tensor_new_zeroed(const hg_meta *m, hg_tensor **out)
{
    return tensor_new(m->ndim, m->shape, m->dtype, true, out);
}

hg_status hg_tensor_from_data(void *data, int ndim, const int64_t *shape, hg_dtype dtype,
                              void (*deleter)(void *ctx), void *ctx, hg_tensor **out)
{
    if (!out || (!data && hg_shape_size(ndim, shape) != 0) || (ndim > 0 && !shape))
        return hg_error(HG_ERR_VALUE, "hg_tensor_from_data: NULL argument");
    HG_TRY(hg_shape_check(ndim, shape, dtype));
    hg_tensor *t = tensor_header(ndim, shape, dtype);
    hg_storage *s = hg_alloc(sizeof *s);
    if (!t || !s) {
        hg_free(t, sizeof *t);
        hg_free(s, sizeof *s);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    atomic_init(&s->refcount, 1);
    s->data = data;
    s->nbytes = (size_t)t->size * hg_dtype_size(dtype);
    s->device_type = HG_DEVICE_CPU;
    s->device_id = 0;
    s->deleter = deleter;
    s->deleter_ctx = ctx;
    atomic_init(&s->version, 0); /* memory of the caller's: its writes are not seen */
    atomic_init(&s->exports, 0);
    t->storage = s;
    *out = t;
    return HG_OK;
}

static void storage_release(hg_storage *s)
{
    if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
    if (s->deleter) s->deleter(s->deleter_ctx);
    else hg_free(s->data, s->nbytes);
    hg_free(s, sizeof *s);
}

void hg_tensor_retain(hg_tensor *t)
{
    if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
}

/* Hook set by the autograd tape to drop its per-tensor record. */
void (*hg_autograd_release_hook)(hg_tensor *t) = NULL;

void hg_tensor_free(hg_tensor *t)
{
    if (!t) return;
    if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1) return;
    if (t->autograd && hg_autograd_release_hook) hg_autograd_release_hook(t);
    storage_release(t->storage);
    hg_free(t, sizeof *t);
}

hg_status hg_tensor_view(hg_tensor *t, int ndim, const int64_t *shape, hg_tensor **out)
{
    HG_TRY(hg_shape_check(ndim, shape, t->dtype));
    if (hg_shape_size(ndim, shape) != t->size) {
        char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE, "cannot view an array of shape %s as shape %s",
                        hg_shape_str(a, t->ndim, t->shape), hg_shape_str(b, ndim, shape));
    }
    hg_tensor *v = tensor_header(ndim, shape, t->dtype);
    if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
    v->storage = t->storage;
    v->offset = t->offset;
    atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
    *out = v;
    return HG_OK;
}

hg_status hg_tensor_on_storage(hg_storage *s, size_t offset, const hg_meta *m, hg_tensor **out)
{
    HG_TRY(hg_shape_check(m->ndim, m->shape, m->dtype));
    hg_tensor *v = tensor_header(m->ndim, m->shape, m->dtype);
    if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
    v->storage = s;
    v->offset = offset;
    atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
    *out = v;
    return HG_OK;
}

hg_status hg_tensor_slice0(hg_tensor *t, int64_t begin, int64_t end, hg_tensor **out)
{
    if (t->ndim < 1 || begin < 0 || end < begin || end > t->shape[0])
        return hg_error(HG_ERR_INDEX, "slice [%lld, %lld) is out of range for axis 0 of size %lld",
                        (long long)begin, (long long)end, (long long)(t->ndim ? t->shape[0] : 0));
    int64_t shape[HG_MAX_NDIM];
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    shape[0] = end - begin;
    hg_tensor *v = tensor_header(t->ndim, shape, t->dtype);
    if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
    v->storage = t->storage;
    int64_t row = t->shape[0] ? t->size / t->shape[0] : 0;
    v->offset = t->offset + (size_t)(begin * row) * hg_dtype_size(t->dtype);
    atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
    *out = v;
    return HG_OK;
}

int hg_tensor_ndim(const hg_tensor *t) { return t->ndim; }
const int64_t *hg_tensor_shape(const hg_tensor *t) { return t->shape; }
int64_t hg_tensor_size(const hg_tensor *t) { return t->size; }
hg_dtype hg_tensor_dtype(const hg_tensor *t) { return t->dtype; }
/* The public C API's pointer: the caller may write through it at any time, unseen. */
void *hg_tensor_data(const hg_tensor *t)
{
    hg_storage_untrack(t->storage);
    return hg_data(t);
}
size_t hg_tensor_nbytes(const hg_tensor *t) { return (size_t)t->size * hg_dtype_size(t->dtype); }

hg_status hg_tensor_copy_from(hg_tensor *t, const void *src, size_t nbytes)
{
    if (!t || (!src && nbytes)) return hg_error(HG_ERR_VALUE, "hg_tensor_copy_from: NULL argument");
    if (nbytes != hg_tensor_nbytes(t))
        return hg_error(HG_ERR_VALUE, "hg_tensor_copy_from: buffer has %zu bytes, tensor needs %zu",
                        nbytes, hg_tensor_nbytes(t));
    return hg_tensor_write_bytes(t, src, nbytes); /* a GPU tensor too */
}

hg_status hg_tensor_copy_to(const hg_tensor *t, void *dst, size_t nbytes)
{
    if (!t || (!dst && nbytes)) return hg_error(HG_ERR_VALUE, "hg_tensor_copy_to: NULL argument");
    if (nbytes != hg_tensor_nbytes(t))
        return hg_error(HG_ERR_VALUE, "hg_tensor_copy_to: buffer has %zu bytes, tensor has %zu",
                        nbytes, hg_tensor_nbytes(t));
    return hg_tensor_read_bytes(t, dst, nbytes);
}

/* Half precision conversions (round to nearest even): the inline bodies of core/half.h. */
float hg_half_to_float(uint16_t h) { return hg_half_bits_to_f32(h); }

uint16_t hg_float_to_half(float f) { return hg_f32_to_half_bits(f); }
