/* Binding of the NDArray-list format (csrc/formats/ndlist.c):
 *   _core.ndlist_save_bytes(arrays, names_or_None)      -> bytes
 *   _core.ndlist_load(path) / ndlist_load_bytes(buf)    -> (list of NDArray, list of str or None)
 *   _core.replace_files([(path, what, payload), ...])   writes files (payload: bytes, or
 *                                                       (arrays, names_or_None) for a .params)
 * The GIL is released around file I/O and parsing; the tensors and name strings used meanwhile
 * are pinned (retained / referenced) first, so other Python threads cannot free them.
 */
#include "python/binding.h"

#include <limits.h>
#include <string.h>

#include "formats/fileout.h"
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

static PyObject *ndlist_save_bytes(PyObject *self, PyObject *args)
{
    PyObject *arrays, *names;
    if (!PyArg_ParseTuple(args, "OO", &arrays, &names)) return NULL;
    save_args a;
    if (save_args_parse(arrays, names, &a) < 0) return NULL;
    void *buf;
    size_t len;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_ndlist_save_bytes(a.n, a.arrays, a.names, &buf, &len);
    Py_END_ALLOW_THREADS save_args_clear(&a);
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
            hgpy_raise(hg_error(HG_ERR_IO,
                                "Invalid NDArray file format in %s: name %d is not "
                                "valid UTF-8",
                                src, i));
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
    Py_BEGIN_ALLOW_THREADS st = hg_ndlist_load_file(PyBytes_AS_STRING(path), &l);
    Py_END_ALLOW_THREADS if (st)
    {
        Py_DECREF(path);
        return hgpy_raise(st);
    }
    PyObject *src = PyUnicode_FromFormat("'%s'", PyBytes_AS_STRING(path));
    const char *src_text = src ? PyUnicode_AsUTF8(src) : NULL;
    PyObject *out = src_text ? ndlist_to_py(l, src_text) : NULL;
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
    Py_BEGIN_ALLOW_THREADS st = hg_ndlist_load_bytes(view.buf, (size_t)view.len, &l);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    if (st) return hgpy_raise(st);
    PyObject *out = ndlist_to_py(l, "buffer");
    hg_ndlist_free(l);
    return out;
}

/* One file of replace_files: its arguments (alive while the GIL is released) and its writer. */
typedef struct file_job {
    PyObject *path;   /* bytes, from PyUnicode_FSConverter */
    const char *what; /* UTF-8 of a str held by the jobs tuple */
    const char *data; /* a bytes payload held by the jobs tuple, or NULL for an NDArray list */
    Py_ssize_t len;
    save_args arrays;
    hg_file_out *out;
} file_job;

static int file_job_parse(PyObject *item, file_job *j)
{
    PyObject *path, *payload;
    if (!PyTuple_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "replace_files: each job is a (path, what, payload) "
                                         "tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(item, "OsO", &path, &j->what, &payload) ||
        !PyUnicode_FSConverter(path, &j->path))
        return -1;
    if (PyBytes_Check(payload)) {
        j->data = PyBytes_AS_STRING(payload);
        j->len = PyBytes_GET_SIZE(payload);
        return 0;
    }
    if (!PyTuple_Check(payload) || PyTuple_GET_SIZE(payload) != 2) {
        PyErr_SetString(PyExc_TypeError, "replace_files: a payload is bytes or a tuple "
                                         "(arrays, names_or_None)");
        return -1;
    }
    return save_args_parse(PyTuple_GET_ITEM(payload, 0), PyTuple_GET_ITEM(payload, 1), &j->arrays);
}

/* Writes and flushes every file to its temporary first, then renames them over their targets
 * in the order given; any failure before the renames leaves every target as it was. */
static hg_status replace_files_run(Py_ssize_t n, file_job *jobs)
{
    hg_status st = HG_OK;
    for (Py_ssize_t i = 0; i < n && st == HG_OK; i++) /* bad input touches no file */
        if (!jobs[i].data)
            st = hg_ndlist_check_save(jobs[i].arrays.n, jobs[i].arrays.arrays,
                                      jobs[i].arrays.names);
    for (Py_ssize_t i = 0; i < n && st == HG_OK; i++) {
        file_job *j = &jobs[i];
        st = hg_file_out_open(PyBytes_AS_STRING(j->path), j->what, &j->out);
        if (st == HG_OK)
            st = j->data ? hg_file_out_write(j->out, j->data, (size_t)j->len)
                         : hg_ndlist_write_file_out(j->out, j->arrays.n, j->arrays.arrays,
                                                    j->arrays.names);
        if (st == HG_OK) st = hg_file_out_finish(j->out);
    }
    for (Py_ssize_t i = 0; i < n && st == HG_OK; i++) {
        st = hg_file_out_commit(jobs[i].out);
        jobs[i].out = NULL; /* commit frees it, on failure too */
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        hg_file_out_discard(jobs[i].out);
        jobs[i].out = NULL;
    }
    return st;
}

static PyObject *replace_files(PyObject *self, PyObject *arg)
{
    PyObject *jobs = PySequence_Tuple(arg); /* a private copy: no thread can change it */
    if (!jobs) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(jobs);
    file_job *j = PyMem_Calloc(n ? (size_t)n : 1, sizeof *j);
    PyObject *res = NULL;
    if (!j) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (file_job_parse(PyTuple_GET_ITEM(jobs, i), &j[i]) < 0) goto done;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = replace_files_run(n, j);
    Py_END_ALLOW_THREADS res = st ? hgpy_raise(st) : Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; j && i < n; i++) {
        Py_XDECREF(j[i].path);
        save_args_clear(&j[i].arrays);
    }
    PyMem_Free(j);
    Py_DECREF(jobs);
    return res;
}

static PyMethodDef k_methods[] = {
    {"replace_files", replace_files, METH_O,
     "replace_files([(path, what, payload)]): writes each file beside its target, then renames "
     "them into place in order (payload: bytes, or (arrays, names_or_None) for a .params)"},
    {"ndlist_save_bytes", ndlist_save_bytes, METH_VARARGS,
     "ndlist_save_bytes(arrays, names_or_None) -> bytes of an MXNet NDArray file"},
    {"ndlist_load", ndlist_load, METH_VARARGS,
     "ndlist_load(path) -> (arrays, names or None) from an MXNet NDArray file"},
    {"ndlist_load_bytes", ndlist_load_bytes, METH_VARARGS,
     "ndlist_load_bytes(buf) -> (arrays, names or None) from the bytes of an NDArray file"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_formats(PyObject *m) { return PyModule_AddFunctions(m, k_methods); }
