/* The hybridgluon._core module: error mapping, registry access and module-level functions. */
#include "python/binding.h"

#include "core/device.h"

#include <string.h>

#include "autograd/autograd.h"
#include "core/profiler.h"
#include "core/rng.h"

PyTypeObject *hgpy_ndarray_cls = &HgNDArray_Type;

/* Exception classes by status, installed from hybridgluon/base.py. */
static PyObject *g_err[HG_ERR_INTERNAL + 1]; /* HG_ERR_INTERNAL: the last status code */

PyObject *hgpy_raise(hg_status st)
{
    PyObject *cls = (st > 0 && st <= HG_ERR_INTERNAL) ? g_err[st] : NULL;
    if (!cls) cls = g_err[0] ? g_err[0] : PyExc_RuntimeError;
    PyErr_SetString(cls, hg_last_error());
    return NULL;
}

int hgpy_raise_int(hg_status st)
{
    hgpy_raise(st);
    return -1;
}

static PyObject *set_error_classes(PyObject *self, PyObject *args)
{
    PyObject *base, *value, *type, *index;
    if (!PyArg_ParseTuple(args, "OOOO", &base, &value, &type, &index)) return NULL;
    PyObject *by_status[HG_ERR_INTERNAL + 1] = {[0] = base,
                                                [HG_ERR_VALUE] = value,
                                                [HG_ERR_TYPE] = type,
                                                [HG_ERR_INDEX] = index,
                                                [HG_ERR_MEMORY] = base,
                                                [HG_ERR_IO] = base,
                                                [HG_ERR_UNSUPPORTED] = base,
                                                [HG_ERR_INTERNAL] = base};
    for (int i = 0; i <= HG_ERR_INTERNAL; i++) {
        Py_XINCREF(by_status[i]);
        Py_XSETREF(g_err[i], by_status[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *set_ndarray_class(PyObject *self, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &HgNDArray_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a subclass of _core.NDArray");
        return NULL;
    }
    Py_INCREF(cls);
    hgpy_ndarray_cls = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

static PyObject *list_ops(PyObject *self, PyObject *unused)
{
    int n = hg_registry_count();
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (int i = 0; i < n; i++)
        PyList_SET_ITEM(out, i, PyUnicode_FromString(hg_registry_at(i)->name));
    return out;
}

static PyObject *get_op(PyObject *self, PyObject *name)
{
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return NULL;
    const hg_op_def *op = hg_registry_find(s);
    if (!op) return hgpy_raise(hg_error(HG_ERR_VALUE, "operator '%s' is not registered", s));
    return hgpy_op_new(op);
}

static PyObject *str_list(const char *const *names)
{
    PyObject *l = PyList_New(0);
    for (const char *const *p = names; l && p && *p; p++) {
        PyObject *s = PyUnicode_FromString(*p);
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(s);
    }
    return l;
}

/* Attribute types by hg_attr_type, as op_info names them. */
static const char *const k_attr_types[] = {"int",  "float", "bool",  "tuple",
                                           "enum", "dtype", "string"};
_Static_assert(HG_COUNT(k_attr_types) == HG_NUM_ATTR_TYPES, "one name per hg_attr_type");

/* The op flags: op_info gives each as a named boolean, the module as OP_<NAME> (hg_op_def). */
static const struct {
    const char *key, *constant;
    unsigned value;
} k_op_flags[] = {
    {"elemwise", "OP_ELEMWISE", HG_OP_ELEMWISE}, {"inplace", "OP_INPLACE", HG_OP_INPLACE},
    {"random", "OP_RANDOM", HG_OP_RANDOM},       {"no_inputs", "OP_NO_INPUTS", HG_OP_NO_INPUTS},
    {"varargs", "OP_VARARGS", HG_OP_VARARGS},    {"no_grad", "OP_NO_GRAD", HG_OP_NO_GRAD},
};

/* Everything the Python side needs to know about an op, as plain data. The flags come both as
 * the bit mask and as named booleans (info['varargs']), so Python never repeats a bit value. */
static PyObject *op_info(PyObject *self, PyObject *name)
{
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return NULL;
    const hg_op_def *op = hg_registry_find(s);
    if (!op) return hgpy_raise(hg_error(HG_ERR_VALUE, "operator '%s' is not registered", s));
    PyObject *attrs = PyList_New(op->num_attrs);
    for (int i = 0; attrs && i < op->num_attrs; i++) {
        const hg_attr_spec *sp = &op->attrs[i];
        PyObject *choices = sp->choices ? str_list(sp->choices) : Py_NewRef(Py_None);
        PyList_SET_ITEM(
            attrs, i,
            Py_BuildValue("{s:s,s:s,s:O,s:O,s:z,s:s,s:N}", "name", sp->name, "type",
                          k_attr_types[sp->type], "required",
                          (sp->flags & HG_ATTR_REQUIRED) ? Py_True : Py_False, "optional",
                          (sp->flags & HG_ATTR_OPTIONAL) ? Py_True : Py_False, "default", sp->def,
                          "doc", sp->doc ? sp->doc : "", "choices", choices));
    }
    PyObject *r = Py_BuildValue(
        "{s:s,s:N,s:s,s:N,s:N,s:i,s:i,s:i,s:I,s:N,s:O}", "name", op->name, "aliases",
        str_list(op->aliases), "doc", op->doc ? op->doc : "", "inputs", str_list(op->input_names),
        "outputs", str_list(op->output_names), "num_inputs", op->num_inputs, "num_outputs",
        op->num_outputs ? op->num_outputs : 1, "num_visible_outputs", op->num_visible_outputs,
        "flags", op->flags, "attrs", attrs, "has_grad", op->grad ? Py_True : Py_False);
    if (r) {
        for (size_t i = 0; i < HG_COUNT(k_op_flags); i++) {
            PyObject *b = (op->flags & k_op_flags[i].value) ? Py_True : Py_False;
            if (PyDict_SetItemString(r, k_op_flags[i].key, b) < 0) Py_CLEAR(r);
            if (!r) break;
        }
    }
    /* Whether the op runs on a GPU (a kernel in the CUDA build's tables). */
    if (r && PyDict_SetItemString(r, "gpu", hg_gpu_kernel_of(op) ? Py_True : Py_False) < 0)
        Py_CLEAR(r);
    return r;
}

/* Test hook: validates an op definition built from (name, [(attr name or None, type name,
 * default or None), ...]) as the registry validates each op it lists; raises its error. */
static PyObject *validate_op_def(PyObject *self, PyObject *args)
{
    const char *name;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "zO!", &name, &PyList_Type, &list)) return NULL;
    hg_attr_spec specs[HG_MAX_ATTRS];
    static const char *const choices[] = {"a", "b", NULL};
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > HG_MAX_ATTRS)
        return PyErr_Format(PyExc_ValueError, "at most %d attributes", HG_MAX_ATTRS);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *an, *type, *def;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, i), "zsz", &an, &type, &def)) return NULL;
        int t = 0;
        while (t < HG_NUM_ATTR_TYPES && strcmp(k_attr_types[t], type) != 0) t++;
        specs[i] = (hg_attr_spec){an, (hg_attr_type)t, 0, def, NULL, choices};
    }
    hg_op_def op = {.name = name, .attrs = specs, .num_attrs = (int)n};
    hg_status st = hg_op_def_validate(&op);
    if (st) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *registry_check(PyObject *self, PyObject *unused)
{
    hg_status st = hg_registry_check();
    if (st) return hgpy_raise(st);
    Py_RETURN_NONE;
}

/* empty(shape, dtype_flag[, dev_type, dev_id]) and zeros(...): a new array, uninitialised or
 * zero, in host memory or (dev_type 2) on that GPU, where zeros is a device fill. */
static PyObject *new_array(PyObject *args, bool zeroed)
{
    PyObject *shape;
    int dtype, dev_type = HG_DEVICE_CPU, dev_id = 0;
    if (!PyArg_ParseTuple(args, "Oi|ii", &shape, &dtype, &dev_type, &dev_id)) return NULL;
    PyObject *seq = PySequence_Fast(shape, "shape must be a tuple of ints");
    if (!seq) return NULL;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
    hg_meta m = {(int)nd, (hg_dtype)dtype, {0}};
    if (nd > HG_MAX_NDIM) {
        Py_DECREF(seq);
        return hgpy_raise(hg_error(HG_ERR_VALUE,
                                   "shape has %zd dimensions, at most %d are "
                                   "supported",
                                   nd, HG_MAX_NDIM));
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        m.shape[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (m.shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    hg_tensor *t;
    hg_status st;
    if (dev_type == HG_DEVICE_GPU) {
        Py_BEGIN_ALLOW_THREADS st = hg_tensor_new_on(&m, dev_type, dev_id, zeroed, &t);
        Py_END_ALLOW_THREADS
    } else {
        st = zeroed ? hg_tensor_new_zeroed(&m, &t) : hg_tensor_new_meta(&m, &t);
    }
    if (st) return hgpy_raise(zeroed ? hg_error_prefix(st, "zeros: ") : st);
    return hgpy_wrap(t);
}

static PyObject *py_empty(PyObject *self, PyObject *args) { return new_array(args, false); }

/* Imperative nd.zeros: fresh large blocks come zeroed from the system and are not written. */
static PyObject *py_zeros(PyObject *self, PyObject *args)
{
    /* nd.zeros is MXNet's _zeros op, and profiles as one. */
    int64_t t0 = hg_prof_is_active(HG_PROF_IMPERATIVE) ? hg_prof_now() : 0;
    PyObject *res = new_array(args, true);
    if (t0 && res) hg_prof_op("_zeros", NULL, t0);
    return res;
}

/* Copies any C-contiguous buffer (NumPy array, bytes, memoryview) into a new array, in host
 * memory or (device type 2) straight onto a GPU. */
static PyObject *from_buffer(PyObject *self, PyObject *args)
{
    PyObject *obj;
    int dtype, dev_type = HG_DEVICE_CPU, dev_id = 0;
    if (!PyArg_ParseTuple(args, "Oi|ii", &obj, &dtype, &dev_type, &dev_id)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_ND) < 0) return NULL;
    int64_t dims[HG_MAX_NDIM];
    hg_tensor *t = NULL;
    hg_status st = HG_OK;
    if (view.ndim > HG_MAX_NDIM) {
        st = hg_error(HG_ERR_VALUE, "array has %d dimensions, at most %d are supported", view.ndim,
                      HG_MAX_NDIM);
    } else {
        for (int i = 0; i < view.ndim; i++) dims[i] = view.shape[i];
        if (dev_type == HG_DEVICE_GPU) {
            hg_meta m = {.ndim = view.ndim, .dtype = (hg_dtype)dtype};
            memcpy(m.shape, dims, sizeof(int64_t) * (size_t)view.ndim);
            st = hg_tensor_new_on(&m, HG_DEVICE_GPU, dev_id, false, &t);
        } else {
            st = hg_tensor_new(view.ndim, dims, (hg_dtype)dtype, &t);
        }
        if (st == HG_OK && (size_t)view.len != hg_tensor_nbytes(t)) {
            st = hg_error(HG_ERR_INTERNAL, "buffer has %zd bytes, expected %zu", view.len,
                          hg_tensor_nbytes(t));
        }
        if (st == HG_OK && view.len && dev_type == HG_DEVICE_GPU) {
            Py_BEGIN_ALLOW_THREADS st = hg_tensor_write_bytes(t, view.buf, (size_t)view.len);
            Py_END_ALLOW_THREADS
        } else if (st == HG_OK && view.len) {
            memcpy(hg_data(t), view.buf, (size_t)view.len);
        }
    }
    PyBuffer_Release(&view);
    if (st) {
        hg_tensor_free(t);
        return hgpy_raise(st);
    }
    return hgpy_wrap(t);
}

static PyObject *py_seed(PyObject *self, PyObject *arg)
{
    unsigned long long s = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred()) return NULL;
    hg_random_seed(s);
    Py_RETURN_NONE;
}

static PyObject *num_threads(PyObject *self, PyObject *args)
{
    int n = 0;
    if (!PyArg_ParseTuple(args, "|i", &n)) return NULL;
    if (n > 0) hg_set_num_threads(n);
    return PyLong_FromLong(hg_get_num_threads());
}

static PyObject *alloc_cached(PyObject *self, PyObject *args)
{
    int release = 0;
    if (!PyArg_ParseTuple(args, "|p", &release)) return NULL;
    if (release) hg_alloc_release_cache();
    return PyLong_FromSize_t(hg_alloc_cached_bytes());
}

static PyObject *alloc_stats(PyObject *self, PyObject *args)
{
    int reset = 0;
    if (!PyArg_ParseTuple(args, "|p", &reset)) return NULL;
    if (reset) hg_alloc_reset_peak();
    return Py_BuildValue("{s:n,s:n}", "live", (Py_ssize_t)hg_alloc_live_bytes(), "peak",
                         (Py_ssize_t)hg_alloc_peak_bytes());
}

/* ---- devices (core/device.h) -------------------------------------------------------------- */

static PyObject *num_gpus(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(hg_gpu_count());
}

static PyObject *built_with_cuda(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(hg_built_with_cuda());
}

static PyObject *device_sync(PyObject *self, PyObject *args)
{
    int type, id;
    if (!PyArg_ParseTuple(args, "ii", &type, &id)) return NULL;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_device_sync(type, id);
    Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *gpu_memory(PyObject *self, PyObject *args)
{
    int id, release = 0;
    if (!PyArg_ParseTuple(args, "i|p", &id, &release)) return NULL;
    if (release) {
        hg_status st;
        Py_BEGIN_ALLOW_THREADS st = hg_gpu_release_cache(id);
        Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    }
    return Py_BuildValue("{s:n,s:n}", "live", (Py_ssize_t)hg_gpu_live_bytes(id), "cached",
                         (Py_ssize_t)hg_gpu_cached_bytes(id));
}

static PyObject *gpu_mem_info(PyObject *self, PyObject *arg)
{
    int id = (int)PyLong_AsLong(arg);
    if (id == -1 && PyErr_Occurred()) return NULL;
    size_t fr, total;
    hg_status st = hg_gpu_mem_info(id, &fr, &total);
    if (st != HG_OK) return hgpy_raise(st);
    return Py_BuildValue("(nn)", (Py_ssize_t)fr, (Py_ssize_t)total);
}

static PyObject *set_tf32(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    return PyBool_FromLong(hg_gpu_set_tf32(on));
}

static PyMethodDef k_methods[] = {
    {"_set_error_classes", set_error_classes, METH_VARARGS, "install MXNetError and subclasses"},
    {"_set_ndarray_class", set_ndarray_class, METH_O, "class that op outputs are created as"},
    {"list_ops", list_ops, METH_NOARGS, "canonical names of all registered ops"},
    {"get_op", get_op, METH_O, "the callable for an op name or alias"},
    {"op_info", op_info, METH_O, "schema of an op as a dict"},
    {"_validate_op_def", validate_op_def, METH_VARARGS, "test hook: hg_op_def_validate"},
    {"_registry_check", registry_check, METH_NOARGS, "raises if an op definition is invalid"},
    {"empty", py_empty, METH_VARARGS,
     "empty(shape, dtype_flag[, dev_type, dev_id]): uninitialised array (on a GPU: dev_type 2)"},
    {"zeros", py_zeros, METH_VARARGS,
     "zeros(shape, dtype_flag[, dev_type, dev_id]): array of zeros (on a GPU: dev_type 2)"},
    {"from_buffer", from_buffer, METH_VARARGS,
     "from_buffer(buf, dtype_flag[, dev_type, dev_id]): copy a buffer (onto a GPU: type 2)"},
    {"seed", py_seed, METH_O, "seed the global random generator"},
    {"num_threads", num_threads, METH_VARARGS, "num_threads(n=0): get (and set if n>0)"},
    {"alloc_cached_bytes", alloc_cached, METH_VARARGS, "bytes held by the allocator's pool"},
    {"alloc_stats", alloc_stats, METH_VARARGS,
     "alloc_stats(reset_peak=False): {'live', 'peak'} bytes of tensor memory"},
    {"num_gpus", num_gpus, METH_NOARGS, "number of GPUs this process can use"},
    {"built_with_cuda", built_with_cuda, METH_NOARGS, "whether this build has the CUDA backend"},
    {"device_sync", device_sync, METH_VARARGS,
     "device_sync(type, id): wait for the device's queued work (id -1: every GPU)"},
    {"gpu_memory", gpu_memory, METH_VARARGS,
     "gpu_memory(id, release=False): {'live', 'cached'} bytes; release empties the cache"},
    {"gpu_mem_info", gpu_mem_info, METH_O, "gpu_mem_info(id): (free, total) bytes"},
    {"set_tf32", set_tf32, METH_O, "allow TF32 in float32 GPU math; returns the old setting"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef k_module = {PyModuleDef_HEAD_INIT, "_core", "hybridgluon C core", -1,
                                      k_methods};

PyMODINIT_FUNC PyInit__core(void)
{
    if (hg_registry_check() != HG_OK) /* a bug in an op file: fail loudly, at import */
        return PyErr_Format(PyExc_ImportError, "hybridgluon: %s", hg_last_error());
    PyObject *m = PyModule_Create(&k_module);
    if (!m) return NULL;
    if (hgpy_init_ndarray(m) < 0 || hgpy_init_op(m) < 0 || hgpy_init_dlpack(m) < 0 ||
        hgpy_init_symbol(m) < 0 || hgpy_init_formats(m) < 0 || hgpy_init_textparse(m) < 0 ||
        hgpy_init_cachedop(m) < 0 || hgpy_init_autograd(m) < 0 || hgpy_init_custom(m) < 0 ||
        hgpy_init_profiler(m) < 0 || hgpy_init_dist(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* C enum values Python needs, from their one definition (no literal copies in Python). */
    int bad = PyModule_AddIntConstant(m, "MAX_NDIM", HG_MAX_NDIM) < 0;
    for (size_t i = 0; i < HG_COUNT(k_op_flags); i++)
        bad |= PyModule_AddIntConstant(m, k_op_flags[i].constant, k_op_flags[i].value) < 0;
    PyObject *dtypes = PyDict_New();
    for (int i = 0; dtypes && i < HG_NUM_DTYPES; i++) {
        PyObject *v = PyLong_FromLong(i);
        bad |= !v || PyDict_SetItemString(dtypes, hg_dtype_name((hg_dtype)i), v) < 0;
        Py_XDECREF(v);
    }
    bad |= !dtypes || PyModule_AddObject(m, "DTYPE_FLAGS", dtypes) < 0; /* name -> MXNet flag */
    bad |= PyModule_AddIntConstant(m, "GRAD_NULL", HG_GRAD_NULL) < 0 ||
           PyModule_AddIntConstant(m, "GRAD_WRITE", HG_GRAD_WRITE) < 0 ||
           PyModule_AddIntConstant(m, "GRAD_ADD", HG_GRAD_ADD) < 0;
    if (bad) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
