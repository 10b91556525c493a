/* Binding of the CSV / LibSVM text parsers (csrc/formats/textparse.c) for mx.io's iterators:
 *   _core.text_parse_csv(buf, first_line, what, width, dtype_flag)  -> NDArray (rows, width)
 *   _core.text_parse_libsvm(buf, first_line, what, width)
 *       -> (labels, indptr, cols, vals) NDArrays
 * buf is any bytes-like object; it is held (buffer protocol) while the GIL is released around
 * the parse, so other threads may run meanwhile. */
#include "python/binding.h"

#include "formats/textparse.h"

static PyObject *text_parse_csv(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long first_line, width;
    const char *what;
    int flag;
    if (!PyArg_ParseTuple(args, "y*LsLi", &view, &first_line, &what, &width, &flag)) return NULL;
    hg_tensor *out;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_text_parse_csv(view.buf, (size_t)view.len, first_line, what,
                                                  width, (hg_dtype)flag, &out);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    if (st) return hgpy_raise(st);
    return hgpy_wrap(out);
}

static PyObject *text_parse_libsvm(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long first_line, width;
    const char *what;
    if (!PyArg_ParseTuple(args, "y*LsL", &view, &first_line, &what, &width)) return NULL;
    hg_tensor *t[4];
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_text_parse_libsvm(view.buf, (size_t)view.len, first_line, what,
                                                     width, &t[0], &t[1], &t[2], &t[3]);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    if (st) return hgpy_raise(st);
    PyObject *out = PyTuple_New(4);
    if (!out) {
        for (int i = 0; i < 4; i++) hg_tensor_free(t[i]);
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *a = t[i] ? hgpy_wrap(t[i]) : NULL; /* hgpy_wrap releases t[i] on failure */
        t[i] = NULL;
        if (!a) {
            for (int j = i + 1; j < 4; j++) hg_tensor_free(t[j]);
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, a);
    }
    return out;
}

static PyMethodDef k_methods[] = {
    {"text_parse_csv", text_parse_csv, METH_VARARGS,
     "text_parse_csv(buf, first_line, what, width, dtype_flag) -> NDArray (rows, width), numbers "
     "converted as MXNet's CSV parser converts them"},
    {"text_parse_libsvm", text_parse_libsvm, METH_VARARGS,
     "text_parse_libsvm(buf, first_line, what, width) -> (labels, indptr, cols, vals) of the "
     "LibSVM lines in buf"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_textparse(PyObject *m) { return PyModule_AddFunctions(m, k_methods); }
