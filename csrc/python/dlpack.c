/* DLPack exchange (unversioned "dltensor" capsules): NDArray.__dlpack__ exports without copying,
 * _core.from_dlpack imports any CPU, C-contiguous DLPack producer (NumPy, PyTorch) without
 * copying. Struct layouts follow the DLPack 0.8 ABI. */
#include "python/binding.h"

#include "core/device.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t device_type, device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* DLPack >= 1.0: versioned capsules carry a read-only flag, so NumPy 2 imports them writable. */
typedef struct {
    uint32_t major, minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBool = 6, kDLCPU = 1, kDLCUDA = 2 };

static const DLDataType k_dl_types[] = {
    [HG_DTYPE_F32] = {kDLFloat, 32, 1}, [HG_DTYPE_F64] = {kDLFloat, 64, 1},
    [HG_DTYPE_F16] = {kDLFloat, 16, 1}, [HG_DTYPE_U8] = {kDLUInt, 8, 1},
    [HG_DTYPE_I32] = {kDLInt, 32, 1},   [HG_DTYPE_I8] = {kDLInt, 8, 1},
    [HG_DTYPE_I64] = {kDLInt, 64, 1},   [HG_DTYPE_BOOL] = {kDLBool, 8, 1},
};
_Static_assert(HG_COUNT(k_dl_types) == HG_NUM_DTYPES, "a DLPack type per dtype");

typedef struct {
    DLManagedTensor m;
    DLManagedTensorVersioned mv;
    hg_tensor *t;
    int64_t shape[HG_MAX_NDIM], strides[HG_MAX_NDIM];
} export_ctx;

/* The consumer may write through the tensor until it gives it back: the storage reads as
 * untracked in between, and counts as written after (core/tensor.h's write versions). */
static void export_deleter(DLManagedTensor *m)
{
    export_ctx *c = (export_ctx *)m;
    hg_storage_unexport(c->t->storage);
    hg_tensor_free(c->t);
    free(c);
}

static void export_deleter_v(DLManagedTensorVersioned *m)
{
    export_ctx *c = m->manager_ctx;
    hg_storage_unexport(c->t->storage);
    hg_tensor_free(c->t);
    free(c);
}

static void capsule_destructor_v(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "dltensor_versioned")) return;
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (m && m->deleter) m->deleter(m);
}

static void capsule_destructor(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "dltensor")) return; /* consumed: the consumer owns it */
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->deleter) m->deleter(m);
}

PyObject *hgpy_dlpack(PyObject *self, PyObject *args, PyObject *kw)
{
    /* stream / dl_device / copy mean nothing for CPU arrays; max_version >= 1 asks for the
     * versioned capsule. */
    (void)args;
    int versioned = 0;
    PyObject *mv = kw ? PyDict_GetItemString(kw, "max_version") : NULL;
    if (mv && mv != Py_None && PyTuple_Check(mv) && PyTuple_GET_SIZE(mv) >= 1)
        versioned = PyLong_AsLong(PyTuple_GET_ITEM(mv, 0)) >= 1;
    if (PyErr_Occurred()) return NULL;
    hg_tensor *t = hgpy_tensor(self);
    if (hg_on_gpu(t)) {
        /* The consumer may read on any stream: hand the array over with its work finished. */
        hg_status st;
        Py_BEGIN_ALLOW_THREADS st = hg_device_sync(HG_DEVICE_GPU, t->storage->device_id);
        Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    }
    export_ctx *c = calloc(1, sizeof *c);
    if (!c) return PyErr_NoMemory();
    hg_tensor_retain(t);
    hg_storage_export(t->storage);
    c->t = t;
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        c->shape[i] = t->shape[i];
        c->strides[i] = stride;
        stride *= t->shape[i];
    }
    c->m.dl_tensor.data = hg_data(t);
    c->m.dl_tensor.device = hg_on_gpu(t) ? (DLDevice){kDLCUDA, t->storage->device_id}
                                         : (DLDevice){kDLCPU, 0};
    c->m.dl_tensor.ndim = t->ndim;
    c->m.dl_tensor.dtype = k_dl_types[t->dtype];
    c->m.dl_tensor.shape = c->shape;
    c->m.dl_tensor.strides = c->strides;
    c->m.dl_tensor.byte_offset = 0;
    c->m.manager_ctx = c;
    c->m.deleter = export_deleter;
    if (versioned) {
        c->mv.version = (DLPackVersion){1, 0};
        c->mv.manager_ctx = c;
        c->mv.deleter = export_deleter_v;
        c->mv.flags = 0;
        c->mv.dl_tensor = c->m.dl_tensor;
        PyObject *capv = PyCapsule_New(&c->mv, "dltensor_versioned", capsule_destructor_v);
        if (!capv) export_deleter(&c->m);
        return capv;
    }
    PyObject *cap = PyCapsule_New(&c->m, "dltensor", capsule_destructor);
    if (!cap) export_deleter(&c->m);
    return cap;
}

PyObject *hgpy_dlpack_device(PyObject *self, PyObject *unused)
{
    hg_tensor *t = hgpy_tensor(self);
    if (hg_on_gpu(t)) return Py_BuildValue("(ii)", kDLCUDA, t->storage->device_id);
    return Py_BuildValue("(ii)", kDLCPU, 0);
}

static void import_deleter(void *ctx)
{
    DLManagedTensor *m = ctx;
    if (m->deleter) m->deleter(m);
}

static PyObject *from_dlpack(PyObject *mod, PyObject *obj)
{
    PyObject *cap;
    if (PyCapsule_CheckExact(obj)) {
        cap = Py_NewRef(obj);
    } else {
        cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
        if (!cap) return NULL;
    }
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m) {
        Py_DECREF(cap);
        return NULL;
    }
    DLTensor *d = &m->dl_tensor;
    hg_status st = HG_OK;
    int dt = -1;
    for (int i = 0; i < HG_NUM_DTYPES; i++)
        if (k_dl_types[i].code == d->dtype.code && k_dl_types[i].bits == d->dtype.bits &&
            d->dtype.lanes == 1)
            dt = i;
    if (d->device.device_type != kDLCPU)
        st = hg_error(HG_ERR_UNSUPPORTED,
                      "from_dlpack: only CPU tensors can be imported (device "
                      "type %d)",
                      d->device.device_type);
    else if (dt < 0)
        st = hg_error(HG_ERR_TYPE, "from_dlpack: unsupported dtype (code %d, %d bits, %d lanes)",
                      d->dtype.code, d->dtype.bits, d->dtype.lanes);
    else if (d->ndim < 0 || d->ndim > HG_MAX_NDIM)
        st = hg_error(HG_ERR_VALUE, "from_dlpack: %d dimensions is outside [0, %d]", d->ndim,
                      HG_MAX_NDIM);
    if (st == HG_OK && d->strides) {
        int64_t expect = 1;
        for (int i = d->ndim - 1; i >= 0; i--) {
            if (d->shape[i] != 1 && d->strides[i] != expect) {
                st = hg_error(HG_ERR_VALUE, "from_dlpack: the tensor is not C-contiguous; call "
                                            ".contiguous() / np.ascontiguousarray() first");
                break;
            }
            expect *= d->shape[i];
        }
    }
    hg_tensor *t = NULL;
    if (st == HG_OK)
        st = hg_tensor_from_data((char *)d->data + d->byte_offset, d->ndim, d->shape, (hg_dtype)dt,
                                 import_deleter, m, &t);
    if (st) {
        Py_DECREF(cap);
        return hgpy_raise(st);
    }
    PyCapsule_SetName(cap, "used_dltensor");
    Py_DECREF(cap);
    return hgpy_wrap(t);
}

static PyMethodDef k_from = {"from_dlpack", from_dlpack, METH_O,
                             "import a DLPack capsule or producer without copying"};

int hgpy_init_dlpack(PyObject *m)
{
    PyObject *f = PyCFunction_NewEx(&k_from, NULL, NULL);
    return f ? PyModule_AddObject(m, "from_dlpack", f) : -1;
}
