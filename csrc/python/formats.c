/* Binding of the NDArray-list format (csrc/formats/ndlist.c):
 *   _core.ndlist_save(path, arrays, names_or_None)      writes a .params file
 *   _core.ndlist_save_bytes(arrays, names_or_None)      -> bytes
 *   _core.ndlist_load(path) / ndlist_load_bytes(buf)    -> (list of NDArray, list of str or None)
 * The GIL is released around file I/O and parsing; the tensors and name strings used meanwhile
 * are pinned (retained / referenced) first, so other Python threads cannot free them.
 */
#include "binding.h"

#include <limits.h>
#include <string.h>

#include "hybridgluon/ndlist.h"

typedef struct save_args {
    int n;
    hg_tensor **arrays; /* retained references, released by save_args_clear */
    const char **names; /* NULL for a list file; UTF-8 owned by keys */
    PyObject *keys;     /* tuple of str keeping the names alive */
} save_args;

static void save_args_clear(save_args *a)
{
    for (int i = 0; i < a->n; i++) hg_tensor_free(a->arrays[i]);
    PyMem_Free(a->arrays);
    PyMem_Free(a->names);
    Py_XDECREF(a->keys);
    memset(a, 0, sizeof *a);
}

static int save_args_parse(PyObject *arrays, PyObject *names, save_args *a)
{
    memset(a, 0, sizeof *a);
    PyObject *seq = PySequence_Fast(arrays, "save only accept dict str->NDArray or list of "
                                    "NDArray");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > INT_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "too many arrays to save");
        goto fail;
    }
    a->arrays = PyMem_Calloc(n ? (size_t)n : 1, sizeof *a->arrays);
    if (!a->arrays) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        if (!hgpy_is_ndarray(o)) {
            PyErr_SetString(PyExc_TypeError, "save only accept dict str->NDArray or list of "
                            "NDArray");
            goto fail;
        }
        a->arrays[i] = hgpy_tensor(o);
        hg_tensor_retain(a->arrays[i]);
        a->n = (int)i + 1;
    }
    if (names != Py_None) {
        if (!(a->keys = PySequence_Tuple(names))) goto fail;
        if (PyTuple_GET_SIZE(a->keys) != n) {
            PyErr_Format(PyExc_ValueError, "%zd names for %zd arrays", PyTuple_GET_SIZE(a->keys),
                         n);
            goto fail;
        }
        a->names = PyMem_Calloc(n ? (size_t)n : 1, sizeof *a->names);
        if (!a->names) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *k = PyTuple_GET_ITEM(a->keys, i);
            Py_ssize_t len;
            if (!PyUnicode_Check(k)) {
                PyErr_SetString(PyExc_TypeError, "save only accept dict str->NDArray or list "
                                "of NDArray");
                goto fail;
            }
            const char *s = PyUnicode_AsUTF8AndSize(k, &len);
            if (!s) goto fail;
            if ((size_t)len != strlen(s)) {
                PyErr_Format(PyExc_ValueError, "array name %R contains a NUL character", k);
                goto fail;
            }
            a->names[i] = s;
        }
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    save_args_clear(a);
    return -1;
}

static PyObject *ndlist_save(PyObject *self, PyObject *args)
{
    PyObject *path, *arrays, *names;
    if (!PyArg_ParseTuple(args, "O&OO", PyUnicode_FSConverter, &path, &arrays, &names))
        return NULL;
    save_args a;
    if (save_args_parse(arrays, names, &a) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    hg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hg_ndlist_save_file(PyBytes_AS_STRING(path), a.n, a.arrays, a.names);
    Py_END_ALLOW_THREADS
    save_args_clear(&a);
    Py_DECREF(path);
    if (st) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *ndlist_save_bytes(PyObject *self, PyObject *args)
{
    PyObject *arrays, *names;
    if (!PyArg_ParseTuple(args, "OO", &arrays, &names)) return NULL;
    save_args a;
    if (save_args_parse(arrays, names, &a) < 0) return NULL;
    void *buf;
    size_t len;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hg_ndlist_save_bytes(a.n, a.arrays, a.names, &buf, &len);
    Py_END_ALLOW_THREADS
    save_args_clear(&a);
    if (st) return hgpy_raise(st);
    PyObject *out = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    hg_buffer_free(buf);
    return out;
}

/* (arrays, names or None) from a loaded list; src names the source in messages. */
static PyObject *ndlist_to_py(const hg_ndlist *l, const char *src)
{
    int n = hg_ndlist_count(l);
    PyObject *arrays = PyList_New(n), *names = NULL;
    if (!arrays) return NULL;
    for (int i = 0; i < n; i++) {
        hg_tensor *t;
        hg_status st = hg_ndlist_get(l, i, &t);
        PyObject *o = st ? hgpy_raise(st) : hgpy_wrap(t);
        if (!o) goto fail;
        PyList_SET_ITEM(arrays, i, o);
    }
    if (!hg_ndlist_has_names(l)) return Py_BuildValue("(NO)", arrays, Py_None);
    if (!(names = PyList_New(n))) goto fail;
    for (int i = 0; i < n; i++) {
        const char *s = hg_ndlist_name(l, i);
        PyObject *o = PyUnicode_DecodeUTF8(s, (Py_ssize_t)hg_ndlist_name_len(l, i), "strict");
        if (!o) {
            /* A corrupted name is a malformed file, reported like every other defect. */
            PyErr_Clear();
            hgpy_raise(hg_error(HG_ERR_IO, "Invalid NDArray file format in %s: name %d is not "
                                "valid UTF-8", src, i));
            goto fail;
        }
        PyList_SET_ITEM(names, i, o);
    }
    return Py_BuildValue("(NN)", arrays, names);
fail:
    Py_DECREF(arrays);
    Py_XDECREF(names);
    return NULL;
}

static PyObject *ndlist_load(PyObject *self, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
    hg_ndlist *l;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hg_ndlist_load_file(PyBytes_AS_STRING(path), &l);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(path);
        return hgpy_raise(st);
    }
    PyObject *src = PyUnicode_FromFormat("'%s'", PyBytes_AS_STRING(path));
    PyObject *out = src ? ndlist_to_py(l, PyUnicode_AsUTF8(src)) : NULL;
    Py_XDECREF(src);
    Py_DECREF(path);
    hg_ndlist_free(l);
    return out;
}

static PyObject *ndlist_load_bytes(PyObject *self, PyObject *args)
{
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    hg_ndlist *l;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hg_ndlist_load_bytes(view.buf, (size_t)view.len, &l);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (st) return hgpy_raise(st);
    PyObject *out = ndlist_to_py(l, "buffer");
    hg_ndlist_free(l);
    return out;
}

static PyMethodDef k_methods[] = {
    {"ndlist_save", ndlist_save, METH_VARARGS,
     "ndlist_save(path, arrays, names_or_None): write an MXNet NDArray file (.params)"},
    {"ndlist_save_bytes", ndlist_save_bytes, METH_VARARGS,
     "ndlist_save_bytes(arrays, names_or_None) -> bytes of an MXNet NDArray file"},
    {"ndlist_load", ndlist_load, METH_VARARGS,
     "ndlist_load(path) -> (arrays, names or None) from an MXNet NDArray file"},
    {"ndlist_load_bytes", ndlist_load_bytes, METH_VARARGS,
     "ndlist_load_bytes(buf) -> (arrays, names or None) from the bytes of an NDArray file"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_formats(PyObject *m) { return PyModule_AddFunctions(m, k_methods); }
