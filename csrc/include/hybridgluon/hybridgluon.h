/* hybridgluon public C API: status codes, tensors and running registered operators.
 *
 * Conventions: every fallible function returns an hg_status (HG_OK == 0); on failure the message
 * of the failure is kept per thread and read with hg_last_error(). Results come back through
 * out-pointers. Tensors are reference counted: a function that returns a new tensor gives the
 * caller one reference, released with hg_tensor_free(). Dimension order is NumPy's (row-major).
 * Unless a function says otherwise it is safe to call from several threads on different tensors.
 */
#ifndef HYBRIDGLUON_H
#define HYBRIDGLUON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HG_API __attribute__((visibility("default")))
#else
#define HG_API
#endif

#define HG_MAX_NDIM 10

typedef enum hg_status {
    HG_OK = 0,
    HG_ERR_VALUE = 1,           /* bad argument value, shape or attribute (Python ValueError) */
    HG_ERR_TYPE = 2,            /* wrong dtype or argument type (TypeError) */
    HG_ERR_INDEX = 3,           /* index out of range (IndexError) */
    HG_ERR_MEMORY = 4,          /* allocation failed or a size is absurd */
    HG_ERR_IO = 5,              /* file could not be read or written, or is malformed */
    HG_ERR_UNSUPPORTED = 6,     /* not available in this build or on this device */
    HG_ERR_INTERNAL = 7,        /* a bug: an internal invariant did not hold */
} hg_status;

/* MXNet's type flags, so the numbers match its files. */
typedef enum hg_dtype {
    HG_DTYPE_F32 = 0,
    HG_DTYPE_F64 = 1,
    HG_DTYPE_F16 = 2,
    HG_DTYPE_U8 = 3,
    HG_DTYPE_I32 = 4,
    HG_DTYPE_I8 = 5,
    HG_DTYPE_I64 = 6,
    HG_DTYPE_BOOL = 7,
    HG_NUM_DTYPES = 8
} hg_dtype;

typedef enum hg_device_type { HG_DEVICE_CPU = 1, HG_DEVICE_GPU = 2 } hg_device_type;

typedef struct hg_tensor hg_tensor;
typedef struct hg_op_def hg_op_def;

/* The message of the last failure on the calling thread ("" if none). Valid until the next
 * failing call on this thread. */
HG_API const char *hg_last_error(void);

/* dtype helpers. hg_dtype_name returns "float32" etc.; hg_dtype_from_name returns HG_OK and sets
 * *out, or HG_ERR_TYPE for a name that is not a supported dtype. */
HG_API const char *hg_dtype_name(hg_dtype dt);
HG_API size_t hg_dtype_size(hg_dtype dt);
HG_API hg_status hg_dtype_from_name(const char *name, hg_dtype *out);

/* Tensors. hg_tensor_new allocates uninitialised memory (64-byte aligned). ndim may be 0 for a
 * scalar. Shapes with a negative dimension, more than HG_MAX_NDIM dimensions or a byte size that
 * overflows fail with HG_ERR_VALUE / HG_ERR_MEMORY. */
HG_API hg_status hg_tensor_new(int ndim, const int64_t *shape, hg_dtype dtype, hg_tensor **out);
/* Wraps caller memory without copying: deleter(ctx) runs when the last reference goes. */
HG_API hg_status hg_tensor_from_data(void *data, int ndim, const int64_t *shape, hg_dtype dtype,
                                     void (*deleter)(void *ctx), void *ctx, hg_tensor **out);
HG_API void hg_tensor_retain(hg_tensor *t);
HG_API void hg_tensor_free(hg_tensor *t); /* drops one reference; NULL is ignored */
HG_API int hg_tensor_ndim(const hg_tensor *t);
HG_API const int64_t *hg_tensor_shape(const hg_tensor *t);
HG_API int64_t hg_tensor_size(const hg_tensor *t);
HG_API hg_dtype hg_tensor_dtype(const hg_tensor *t);
HG_API void *hg_tensor_data(const hg_tensor *t);
HG_API size_t hg_tensor_nbytes(const hg_tensor *t);
/* Copies between a tensor and caller memory; nbytes must equal hg_tensor_nbytes. */
HG_API hg_status hg_tensor_copy_from(hg_tensor *t, const void *src, size_t nbytes);
HG_API hg_status hg_tensor_copy_to(const hg_tensor *t, void *dst, size_t nbytes);

/* Operators. hg_op_find looks up a registered op by MXNet name or alias (NULL if unknown). */
HG_API const hg_op_def *hg_op_find(const char *name);
HG_API const char *hg_op_name(const hg_op_def *op);
/* Number of registered ops, and the i-th (in registration order). */
HG_API int hg_op_count(void);
HG_API const hg_op_def *hg_op_at(int i);

/* Runs an op imperatively with MXNet-style string attributes ("kernel"="(3, 3)").
 * On entry *nout is the capacity of outs; on return the number of outputs written. Each output
 * is a new reference owned by the caller. */
HG_API hg_status hg_op_invoke_str(const char *op_name, int nin, hg_tensor *const *ins, int nattr,
                                  const char *const *keys, const char *const *vals, int *nout,
                                  hg_tensor **outs);

/* Seeds the global random generator (nd.random.* and initialisers). */
HG_API void hg_random_seed(uint64_t seed);

/* Threads used by kernels (>= 1). OpenBLAS stays on one thread: the pool splits its products. */
HG_API int hg_get_num_threads(void);
HG_API void hg_set_num_threads(int n);

#ifdef __cplusplus
}
#endif
#endif /* HYBRIDGLUON_H */
