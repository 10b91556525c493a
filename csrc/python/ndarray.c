/* _core.NDArray: the C object behind hybridgluon's NDArray. It owns one reference to an
 * hg_tensor. Arithmetic operators, comparisons, the buffer protocol and axis-0 views live here
 * so the hot paths never enter Python; everything else is in hybridgluon/ndarray/ndarray.py. */
#include "python/binding.h"

#include <stdio.h>

#include "autograd/autograd.h"
#include "core/device.h"
#include "hybridgluon/ndlist.h"

#include <string.h>

static const char *const k_formats[] = {
    [HG_DTYPE_F32] = "f", [HG_DTYPE_F64] = "d", [HG_DTYPE_F16] = "e", [HG_DTYPE_U8] = "B",
    [HG_DTYPE_I32] = "i", [HG_DTYPE_I8] = "b",  [HG_DTYPE_I64] = "q", [HG_DTYPE_BOOL] = "?"};
_Static_assert(HG_COUNT(k_formats) == HG_NUM_DTYPES, "a buffer format per dtype");

PyObject *hgpy_wrap(hg_tensor *t)
{
    NDArrayObject *o = (NDArrayObject *)hgpy_ndarray_cls->tp_alloc(hgpy_ndarray_cls, 0);
    if (!o) {
        hg_tensor_free(t);
        return NULL;
    }
    o->t = t;
    return (PyObject *)o;
}

static void nd_dealloc(NDArrayObject *self)
{
    hg_tensor_free(self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *nd_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyErr_SetString(PyExc_TypeError, "create arrays with nd.array(), nd.zeros() and friends");
    return NULL;
}

static PyObject *get_shape(NDArrayObject *self, void *c)
{
    PyObject *t = PyTuple_New(self->t->ndim);
    for (int i = 0; t && i < self->t->ndim; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(self->t->shape[i]));
    return t;
}
static PyObject *get_size(NDArrayObject *self, void *c)
{
    return PyLong_FromLongLong(self->t->size);
}
static PyObject *get_ndim(NDArrayObject *self, void *c) { return PyLong_FromLong(self->t->ndim); }
static PyObject *get_flag(NDArrayObject *self, void *c) { return PyLong_FromLong(self->t->dtype); }
/* The address goes to code that may write through it at any time (ctypes, a C extension):
 * the storage is untracked from now on (core/tensor.h's write versions). */
static PyObject *get_ptr(NDArrayObject *self, void *c)
{
    hg_storage_untrack(self->t->storage);
    return PyLong_FromVoidPtr(hg_data(self->t));
}
static PyObject *get_version(NDArrayObject *self, void *c)
{
    return PyLong_FromUnsignedLongLong(hg_storage_version(self->t->storage));
}
static PyObject *get_storage_id(NDArrayObject *self, void *c)
{
    return PyLong_FromVoidPtr(self->t->storage);
}

/* MXNet keeps the flag on the variable: backward sets it on the gradient buffer it writes, so a
 * variable (attach_grad / mark_variables) reads its buffer's flag too, and setting it clears
 * (or sets) both; the trainer reads either. */
static PyObject *get_fresh_grad(NDArrayObject *self, void *c)
{
    hg_tensor *g = hg_ag_grad_buffer(self->t);
    return PyBool_FromLong(atomic_load(&self->t->fresh_grad) || (g && atomic_load(&g->fresh_grad)));
}

static int set_fresh_grad(NDArrayObject *self, PyObject *v, void *c)
{
    int b = v ? PyObject_IsTrue(v) : 0;
    if (b < 0) return -1;
    atomic_store(&self->t->fresh_grad, b);
    hg_tensor *g = hg_ag_grad_buffer(self->t);
    if (g) atomic_store(&g->fresh_grad, b);
    return 0;
}

/* _in_graph: whether an op on this array would be recorded now (recording, and the array is a
 * variable or a recorded result). */
static PyObject *get_in_graph(NDArrayObject *self, void *c)
{
    return PyBool_FromLong(hg_ag_should_record(1, &self->t));
}

/* The device lives on the storage, so every view of an array reports the array's device. */
static PyObject *get_device(NDArrayObject *self, void *c)
{
    return Py_BuildValue("(ii)", self->t->storage->device_type, self->t->storage->device_id);
}

/* _set_device(type, id): labels the array's storage as living on that device. All CPU devices
 * share one memory, so this moves no data: it is how a fresh array (a creation function's
 * result, a copy) is placed on cpu(i). Never call it on an array that others hold. */
static PyObject *m_set_device(NDArrayObject *self, PyObject *args)
{
    int type, id;
    if (!PyArg_ParseTuple(args, "ii", &type, &id)) return NULL;
    /* MXNet's CPU kinds: cpu (1), cpu_pinned (3) and cpu_shared (5), one memory here; a
     * label the array's context reports (op outputs on them are cpu(i), as in MXNet). */
    if ((type != HG_DEVICE_CPU && type != 3 && type != 5) || id < 0 || hg_on_gpu(self->t))
        return hgpy_raise(hg_error(HG_ERR_VALUE,
                                   "an array in host memory can only be labelled cpu(i), "
                                   "cpu_pinned(i) or cpu_shared(i) with i >= 0 (device type "
                                   "%d, id %d); a GPU copy is made with _to_device",
                                   type, id));
    self->t->storage->device_type = type;
    self->t->storage->device_id = id;
    Py_RETURN_NONE;
}

/* _to_device(type, id): a new array with this one's values on that device (a GPU, or host
 * memory labelled cpu(i)). */
static PyObject *m_to_device(NDArrayObject *self, PyObject *args)
{
    int type, id;
    if (!PyArg_ParseTuple(args, "ii", &type, &id)) return NULL;
    if (type != HG_DEVICE_GPU && type != HG_DEVICE_CPU && type != 3 && type != 5)
        return hgpy_raise(hg_error(HG_ERR_VALUE, "unknown device type %d", type));
    hg_meta m = hg_meta_of(self->t);
    hg_tensor *t = NULL;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_tensor_new_on(&m, type, id, false, &t);
    if (st == HG_OK && (st = hg_tensor_copy_any(self->t, t)) != HG_OK) {
        hg_tensor_free(t);
        t = NULL;
    }
    Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    return hgpy_wrap(t);
}

static PyGetSetDef k_getset[] = {
    {"_device", (getter)get_device, NULL, "(device type, device id) of the storage", NULL},
    {"shape", (getter)get_shape, NULL, "tuple of dimensions", NULL},
    {"size", (getter)get_size, NULL, "number of elements", NULL},
    {"ndim", (getter)get_ndim, NULL, "number of dimensions", NULL},
    {"_dtype_flag", (getter)get_flag, NULL, "MXNet type flag", NULL},
    {"_data_ptr", (getter)get_ptr, NULL, "address of the first element", NULL},
    {"_storage_id", (getter)get_storage_id, NULL, "identity of the underlying storage", NULL},
    {"_write_version", (getter)get_version, NULL,
     "the storage's write version (0: untracked; see core/tensor.h)", NULL},
    {"_in_graph", (getter)get_in_graph, NULL, "whether ops on it are recorded now", NULL},
    {"_fresh_grad", (getter)get_fresh_grad, (setter)set_fresh_grad,
     "gradient buffer written by backward since the last optimizer update", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- operators ------------------------------------------------------------------------- */

static int as_scalar(PyObject *o, double *out)
{
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 1;
    }
    if (PyLong_Check(o) || PyFloat_Check(o) ||
        (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float && !PySequence_Check(o) &&
         !hgpy_is_ndarray(o))) {
        *out = PyFloat_AsDouble(o);
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return 1;
    }
    return 0;
}

typedef struct {
    const char *array, *scalar, *rscalar; /* rscalar NULL: commutative, use scalar */
    const hg_op_def *op_array, *op_scalar, *op_rscalar;
} binop;

static binop k_add = {"broadcast_add", "_plus_scalar", NULL};
static binop k_sub = {"broadcast_sub", "_minus_scalar", "_rminus_scalar"};
static binop k_mul = {"broadcast_mul", "_mul_scalar", NULL};
static binop k_div = {"broadcast_div", "_div_scalar", "_rdiv_scalar"};
static binop k_mod = {"broadcast_mod", "_mod_scalar", "_rmod_scalar"};
static binop k_pow = {"broadcast_power", "_power_scalar", "_rpower_scalar"};
static binop k_cmp[] = {
    /* indexed by Python's rich comparison op; reversed forms swap the comparison */
    [Py_LT] = {"broadcast_lesser", "_lesser_scalar", "_greater_scalar"},
    [Py_LE] = {"broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"},
    [Py_EQ] = {"broadcast_equal", "_equal_scalar", "_equal_scalar"},
    [Py_NE] = {"broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"},
    [Py_GT] = {"broadcast_greater", "_greater_scalar", "_lesser_scalar"},
    [Py_GE] = {"broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"},
};
_Static_assert(HG_COUNT(k_cmp) == 6, "k_cmp has one entry per rich comparison");

static int resolve(binop *b)
{
    if (b->op_array) return 0;
    b->op_array = hg_registry_find(b->array);
    b->op_scalar = hg_registry_find(b->scalar);
    b->op_rscalar = b->rscalar ? hg_registry_find(b->rscalar) : b->op_scalar;
    if (!b->op_array || !b->op_scalar || !b->op_rscalar) {
        b->op_array = NULL;
        hgpy_raise(hg_error(HG_ERR_INTERNAL, "operator %s is not registered", b->array));
        return -1;
    }
    /* binary() writes the scalar into attribute slot 0 without a lookup per call. */
    if (hg_attr_index(b->op_scalar, "scalar") != 0 || hg_attr_index(b->op_rscalar, "scalar") != 0) {
        b->op_array = NULL;
        hgpy_raise(hg_error(HG_ERR_INTERNAL, "%s: attribute 0 is not 'scalar'", b->scalar));
        return -1;
    }
    return 0;
}

/* a OP b for NDArray/scalar operands; out (may be NULL) receives the result in place. */
static PyObject *binary(binop *b, PyObject *x, PyObject *y, hg_tensor *out)
{
    if (resolve(b) < 0) return NULL;
    hg_attrs a;
    hg_tensor *in[2], *res = out;
    hg_status st;
    double s;
    if (hgpy_is_ndarray(x) && hgpy_is_ndarray(y)) {
        in[0] = hgpy_tensor(x);
        in[1] = hgpy_tensor(y);
        a.n = 0;
        st = hgpy_run(b->op_array, &a, 2, in, 1, &res);
    } else if (hgpy_is_ndarray(x) && as_scalar(y, &s)) {
        in[0] = hgpy_tensor(x);
        hg_attrs_set_defaults(b->op_scalar, &a);
        a.v[0].f = s;
        a.v[0].is_set = true;
        st = hgpy_run(b->op_scalar, &a, 1, in, 1, &res);
    } else if (hgpy_is_ndarray(y) && as_scalar(x, &s)) {
        in[0] = hgpy_tensor(y);
        hg_attrs_set_defaults(b->op_rscalar, &a);
        a.v[0].f = s;
        a.v[0].is_set = true;
        st = hgpy_run(b->op_rscalar, &a, 1, in, 1, &res);
    } else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (st) return hgpy_raise(st);
    if (out) {
        Py_INCREF(x);
        return x;
    }
    return hgpy_wrap(res);
}

static PyObject *inplace(binop *b, PyObject *x, PyObject *y)
{
    return binary(b, x, y, hgpy_tensor(x));
}

static PyObject *nb_add(PyObject *x, PyObject *y) { return binary(&k_add, x, y, NULL); }
static PyObject *nb_sub(PyObject *x, PyObject *y) { return binary(&k_sub, x, y, NULL); }
static PyObject *nb_mul(PyObject *x, PyObject *y) { return binary(&k_mul, x, y, NULL); }
static PyObject *nb_div(PyObject *x, PyObject *y) { return binary(&k_div, x, y, NULL); }
static PyObject *nb_mod(PyObject *x, PyObject *y) { return binary(&k_mod, x, y, NULL); }
static PyObject *nb_pow(PyObject *x, PyObject *y, PyObject *z)
{
    if (z != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return binary(&k_pow, x, y, NULL);
}
static PyObject *nb_iadd(PyObject *x, PyObject *y) { return inplace(&k_add, x, y); }
static PyObject *nb_isub(PyObject *x, PyObject *y) { return inplace(&k_sub, x, y); }
static PyObject *nb_imul(PyObject *x, PyObject *y) { return inplace(&k_mul, x, y); }
static PyObject *nb_idiv(PyObject *x, PyObject *y) { return inplace(&k_div, x, y); }
static PyObject *nb_imod(PyObject *x, PyObject *y) { return inplace(&k_mod, x, y); }

static PyObject *unary(const char *name, PyObject *x)
{
    const hg_op_def *op = hg_registry_find(name);
    if (!op) return hgpy_raise(hg_error(HG_ERR_INTERNAL, "operator %s is not registered", name));
    hg_attrs a;
    a.n = 0;
    hg_tensor *in = hgpy_tensor(x), *res = NULL;
    hg_status st = hgpy_run(op, &a, 1, &in, 1, &res);
    return st ? hgpy_raise(st) : hgpy_wrap(res);
}
static PyObject *nb_neg(PyObject *x) { return unary("negative", x); }
static PyObject *nb_abs(PyObject *x) { return unary("abs", x); }
static PyObject *nb_pos(PyObject *x) { return Py_NewRef(x); }

static int nb_bool(NDArrayObject *self)
{
    if (self->t->size == 0) return 0;
    if (self->t->size > 1) {
        PyErr_SetString(PyExc_ValueError,
                        "The truth value of an NDArray with multiple elements is ambiguous.");
        return -1;
    }
    char host[8]; /* the one element, read from whichever device holds it */
    const char *p = host;
    hg_status st = hg_tensor_read_bytes(self->t, host, hg_dtype_size(self->t->dtype));
    if (st != HG_OK) return hgpy_raise_int(st);
    switch (self->t->dtype) {
    case HG_DTYPE_F32: return *(const float *)p != 0;
    case HG_DTYPE_F64: return *(const double *)p != 0;
    case HG_DTYPE_F16: return hg_half_to_float(*(const uint16_t *)p) != 0;
    case HG_DTYPE_I32: return *(const int32_t *)p != 0;
    case HG_DTYPE_I64: return *(const int64_t *)p != 0;
    default: return *p != 0;
    }
}

static PyNumberMethods k_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_remainder = nb_mod,
    .nb_power = nb_pow,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_bool = (inquiry)nb_bool,
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_true_divide = nb_idiv,
    .nb_inplace_remainder = nb_imod,
};

static PyObject *richcompare(PyObject *x, PyObject *y, int op)
{
    if (y == Py_None) {
        if (op == Py_EQ) Py_RETURN_FALSE;
        if (op == Py_NE) Py_RETURN_TRUE;
    }
    return binary(&k_cmp[op], x, y, NULL);
}

static Py_hash_t nd_hash(PyObject *self) { return _Py_HashPointer(self); }

/* ---- buffer protocol --------------------------------------------------------------------- */

/* What a view keeps: the array it shows (retained: _take_handle may give the object another
 * while the view is out), then its shape and strides. */
typedef struct buf_state {
    hg_tensor *t;
    Py_ssize_t arr[];
} buf_state;

static int getbuffer(NDArrayObject *self, Py_buffer *view, int flags)
{
    hg_tensor *t = self->t;
    if (hg_on_gpu(t)) { /* device memory: never handed to host code */
        PyErr_Format(PyExc_BufferError,
                     "an NDArray on gpu(%d) has no host buffer: copy it with asnumpy() or "
                     "as_in_context(mx.cpu())",
                     t->storage->device_id);
        return -1;
    }
    buf_state *b = PyMem_Malloc(sizeof *b + sizeof(Py_ssize_t) * 2 * (size_t)t->ndim);
    if (!b) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *arr = b->arr, item = (Py_ssize_t)hg_dtype_size(t->dtype), stride = item;
    for (int i = t->ndim - 1; i >= 0; i--) {
        arr[i] = (Py_ssize_t)t->shape[i];
        arr[t->ndim + i] = stride;
        stride *= (Py_ssize_t)t->shape[i];
    }
    /* Every view is writable (consumers such as ctypes' from_buffer and NumPy ask without
     * PyBUF_WRITABLE and write anyway): while one is out the storage reads as untracked, and it
     * counts as written when the view comes back (core/tensor.h's write versions). */
    hg_tensor_retain(t);
    b->t = t;
    hg_storage_export(t->storage);
    view->buf = hg_data(t);
    view->obj = Py_NewRef((PyObject *)self);
    view->len = (Py_ssize_t)hg_tensor_nbytes(t);
    view->readonly = 0;
    view->itemsize = item;
    view->format = (flags & PyBUF_FORMAT) ? (char *)k_formats[t->dtype] : NULL;
    view->ndim = t->ndim;
    view->shape = (flags & PyBUF_ND) ? arr : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? arr + t->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = b;
    return 0;
}

static void releasebuffer(NDArrayObject *self, Py_buffer *view)
{
    buf_state *b = view->internal;
    hg_storage_unexport(b->t->storage);
    hg_tensor_free(b->t);
    PyMem_Free(b);
}

static PyBufferProcs k_buffer = {(getbufferproc)getbuffer, (releasebufferproc)releasebuffer};

/* ---- views and raw copies ------------------------------------------------------------------ */

static int shape_from(PyObject *obj, int *nd, int64_t *dims)
{
    PyObject *seq = PySequence_Fast(obj, "shape must be a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > HG_MAX_NDIM) {
        Py_DECREF(seq);
        hgpy_raise(hg_error(HG_ERR_VALUE, "shape has %zd dimensions, at most %d are supported", n,
                            HG_MAX_NDIM));
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        dims[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    *nd = (int)n;
    Py_DECREF(seq);
    return 0;
}

/* Views share data without running an op; under autograd.record() they are put on the tape as
 * the op that computes the same values (Reshape, slice_axis), so gradients flow through. */
static hg_status record_view(const char *name, hg_tensor *src, hg_tensor *view,
                             const char *const *kv)
{
    if (!hg_ag_should_record(1, &src)) return HG_OK;
    const hg_op_def *op = hg_registry_find(name);
    if (!op) return hg_error(HG_ERR_INTERNAL, "op %s missing", name);
    hg_attrs a;
    hg_attrs_set_defaults(op, &a);
    for (int i = 0; kv[i]; i += 2) {
        int k = hg_attr_index(op, kv[i]);
        HG_TRY(k < 0 ? hg_attr_unknown(op, kv[i]) : hg_attr_parse(op, k, kv[i + 1], &a));
    }
    return hg_ag_record(op, &a, 1, &src, 1, &view, NULL, NULL, NULL);
}

static hg_status record_reshape(hg_tensor *src, hg_tensor *view)
{
    char shape[HG_SHAPE_STR + 8];
    size_t len = 0;
    len += (size_t)snprintf(shape, sizeof shape, "(");
    for (int d = 0; d < view->ndim && len < sizeof shape; d++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? ", " : "",
                                (long long)view->shape[d]);
    if (len < sizeof shape) snprintf(shape + len, sizeof shape - len, view->ndim == 1 ? ",)" : ")");
    const char *kv[] = {"shape", shape, NULL};
    return record_view("Reshape", src, view, kv);
}

static hg_status record_slice0(hg_tensor *src, hg_tensor *view, long long b, long long e)
{
    char sb[32], se[32];
    snprintf(sb, sizeof sb, "%lld", b);
    snprintf(se, sizeof se, "%lld", e);
    const char *kv[] = {"axis", "0", "begin", sb, "end", se, NULL};
    return record_view("slice_axis", src, view, kv);
}

static PyObject *wrap_recorded(hg_status st, hg_tensor *v)
{
    if (st) {
        hg_tensor_free(v);
        return hgpy_raise(st);
    }
    return hgpy_wrap(v);
}

static PyObject *m_view(NDArrayObject *self, PyObject *shape)
{
    int nd;
    int64_t dims[HG_MAX_NDIM];
    if (shape_from(shape, &nd, dims) < 0) return NULL;
    hg_tensor *v;
    hg_status st = hg_tensor_view(self->t, nd, dims, &v);
    if (st) return hgpy_raise(st);
    return wrap_recorded(record_reshape(self->t, v), v);
}

static PyObject *m_slice0(NDArrayObject *self, PyObject *args)
{
    long long b, e;
    if (!PyArg_ParseTuple(args, "LL", &b, &e)) return NULL;
    hg_tensor *v;
    hg_status st = hg_tensor_slice0(self->t, b, e, &v);
    if (st) return hgpy_raise(st);
    return wrap_recorded(record_slice0(self->t, v, b, e), v);
}

/* x[i] for an integer i: a view of row i (shape[1:], or (1,) for a 1-D array, as MXNet). */
static PyObject *m_at0(NDArrayObject *self, PyObject *arg)
{
    long long i = PyLong_AsLongLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    hg_tensor *t = self->t, *row, *v;
    if (t->ndim == 0) return hgpy_raise(hg_error(HG_ERR_INDEX, "too many indices for a 0-d array"));
    long long n = t->shape[0];
    if (i < -n || i >= n)
        return hgpy_raise(hg_error(HG_ERR_INDEX,
                                   "index %lld is out of bounds for axis 0 with "
                                   "size %lld",
                                   i, n));
    if (i < 0) i += n;
    hg_status st = hg_tensor_slice0(t, i, i + 1, &row);
    if (st) return hgpy_raise(st);
    st = record_slice0(t, row, i, i + 1);
    int64_t one = 1;
    if (st == HG_OK)
        st = t->ndim == 1 ? hg_tensor_view(row, 1, &one, &v)
                          : hg_tensor_view(row, t->ndim - 1, t->shape + 1, &v);
    if (st == HG_OK) st = record_reshape(row, v);
    hg_tensor_free(row);
    return st ? hgpy_raise(st) : hgpy_wrap(v);
}

static PyObject *m_copy_from(NDArrayObject *self, PyObject *src)
{
    if (!hgpy_is_ndarray(src)) {
        PyErr_SetString(PyExc_TypeError, "_copy_from expects an NDArray");
        return NULL;
    }
    hg_tensor *s = hgpy_tensor(src), *d = self->t;
    if (s->dtype != d->dtype || s->size != d->size) {
        char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
        return hgpy_raise(hg_error(HG_ERR_VALUE,
                                   "cannot copy an array of shape %s (%s) into one "
                                   "of shape %s (%s)",
                                   hg_shape_str(a, s->ndim, s->shape), hg_dtype_name(s->dtype),
                                   hg_shape_str(b, d->ndim, d->shape), hg_dtype_name(d->dtype)));
    }
    hg_status st = s != d ? hg_tensor_copy_any(s, d) : HG_OK; /* across devices too */
    if (st != HG_OK) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *m_same_storage(NDArrayObject *self, PyObject *other)
{
    return PyBool_FromLong(hgpy_is_ndarray(other) &&
                           hgpy_tensor(other)->storage == self->t->storage);
}

/* _take_handle(other): this object now holds other's array (its data, shape, dtype and
 * device), as MXNet's NDArray.__setstate__ replaces its handle; the old array is released. */
static PyObject *m_take_handle(NDArrayObject *self, PyObject *other)
{
    if (!hgpy_is_ndarray(other))
        return hgpy_raise(hg_error(HG_ERR_TYPE, "_take_handle expects an NDArray"));
    hg_tensor *old = self->t;
    hg_tensor_retain(hgpy_tensor(other));
    self->t = hgpy_tensor(other);
    hg_tensor_free(old);
    Py_RETURN_NONE;
}

static PyMethodDef k_methods[] = {
    {"_take_handle", (PyCFunction)m_take_handle, METH_O, "hold another array's data"},
    {"_view", (PyCFunction)m_view, METH_O, "a view with another shape of the same size"},
    {"_slice0", (PyCFunction)m_slice0, METH_VARARGS, "a view of rows [begin, end)"},
    {"_at0", (PyCFunction)m_at0, METH_O, "a view of row i"},
    {"_copy_from", (PyCFunction)m_copy_from, METH_O, "copy the bytes of an equal-sized array"},
    {"_set_device", (PyCFunction)m_set_device, METH_VARARGS, "place a fresh array on a device"},
    {"_to_device", (PyCFunction)m_to_device, METH_VARARGS, "a copy of the array on a device"},
    {"_shares_storage", (PyCFunction)m_same_storage, METH_O, "whether both views share memory"},
    {"__dlpack__", (PyCFunction)(void (*)(void))hgpy_dlpack, METH_VARARGS | METH_KEYWORDS,
     "export as a DLPack capsule (zero-copy)"},
    {"__dlpack_device__", hgpy_dlpack_device, METH_NOARGS, "(device_type, device_id)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject HgNDArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hybridgluon._core.NDArray",
    .tp_basicsize = sizeof(NDArrayObject),
    .tp_dealloc = (destructor)nd_dealloc,
    .tp_as_number = &k_number,
    .tp_as_buffer = &k_buffer,
    .tp_hash = nd_hash,
    .tp_richcompare = richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "C base of hybridgluon.nd.NDArray",
    .tp_methods = k_methods,
    .tp_getset = k_getset,
    .tp_new = nd_new,
};

/* _set_np_shape(on) -> the previous setting: MXNet's NumPy shape semantics for this thread, as
 * the C core sees them (the NDArray file format: V3 records and 0-d arrays). */
static PyObject *set_np_shape(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    hg_set_np_shape(on);
    return PyBool_FromLong(hg_ndlist_set_np_shape(on));
}

static PyMethodDef k_module_functions[] = {
    {"_set_np_shape", set_np_shape, METH_O, "set NumPy shape semantics; returns the previous"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_ndarray(PyObject *m)
{
    if (PyType_Ready(&HgNDArray_Type) < 0) return -1;
    if (PyModule_AddFunctions(m, k_module_functions) < 0) return -1;
    Py_INCREF(&HgNDArray_Type);
    return PyModule_AddObject(m, "NDArray", (PyObject *)&HgNDArray_Type);
}
