/* The Python side of the Custom op's callback table (ops/custom.h): each callback takes the GIL
 * (plans run with it released, on any thread), converts tensors and metas, and calls the
 * dispatcher object that hybridgluon.operator installs with _core._set_custom_dispatch. The
 * dispatcher does the Python work (the registry, infer_shape / infer_type and their checks,
 * create_operator, forward, backward); a Python exception becomes a status whose message is the
 * exception's text, and the op adds the op_type and the node. */
#include "python/binding.h"

#include "autograd/autograd.h"
#include "ops/custom.h"

static PyObject *g_dispatch; /* the dispatcher (hybridgluon.operator._Dispatcher) */
static PyObject *g_error;    /* exceptions of this class carry a complete message */

/* The status for the pending Python exception (cleared). */
static hg_status from_python(const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    hg_status st;
    if (g_error && type && PyErr_GivenExceptionMatches(type, g_error))
        st = hg_error(HG_ERR_VALUE, "%s", msg ? msg : "error");
    else
        st = hg_error(HG_ERR_VALUE, "%s raised %s%s%s", what,
                      type ? ((PyTypeObject *)type)->tp_name : "an error", msg ? ": " : "",
                      msg ? msg : "");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return st;
}

static hg_status gone(void)
{
    return hg_error(HG_ERR_UNSUPPORTED, "Custom operator: the Python interpreter has exited");
}

static hg_status cb_create(const char *op_type, int n, const char *const *keys,
                           const char *const *vals, int64_t *handle, int *nargs, int *nouts,
                           int *nauxs)
{
    if (!Py_IsInitialized()) return gone();
    PyGILState_STATE gil = PyGILState_Ensure();
    hg_status st = HG_OK;
    PyObject *kw = PyDict_New(), *res = NULL;
    for (int i = 0; kw && i < n; i++) {
        PyObject *v = PyUnicode_FromString(vals[i]);
        if (!v || PyDict_SetItemString(kw, keys[i], v) < 0) Py_CLEAR(kw);
        Py_XDECREF(v);
    }
    if (kw && g_dispatch) res = PyObject_CallMethod(g_dispatch, "create", "sO", op_type, kw);
    long long h = 0;
    if (!res || !PyArg_ParseTuple(res, "Liii", &h, nargs, nouts, nauxs))
        st = from_python("CustomOpProp");
    *handle = h;
    Py_XDECREF(res);
    Py_XDECREF(kw);
    PyGILState_Release(gil);
    return st;
}

/* (shape tuple or None, dtype flag or -1) lists of metas. */
static PyObject *metas_to_py(int n, const hg_meta *m, PyObject **dtypes)
{
    PyObject *shapes = PyList_New(n);
    *dtypes = PyList_New(n);
    for (int i = 0; shapes && *dtypes && i < n; i++) {
        bool known = m[i].ndim >= 0;
        for (int d = 0; known && d < m[i].ndim; d++) known = m[i].shape[d] >= 0;
        PyObject *s = known ? PyTuple_New(m[i].ndim) : Py_NewRef(Py_None);
        for (int d = 0; s && known && d < m[i].ndim; d++) {
            PyObject *dim = PyLong_FromLongLong(m[i].shape[d]);
            if (!dim) Py_CLEAR(s);
            else PyTuple_SET_ITEM(s, d, dim);
        }
        PyObject *t = PyLong_FromLong((unsigned)m[i].dtype < HG_NUM_DTYPES ? (long)m[i].dtype : -1);
        if (!s || !t) {
            Py_XDECREF(s);
            Py_XDECREF(t);
            Py_CLEAR(shapes);
            break;
        }
        PyList_SET_ITEM(shapes, i, s);
        PyList_SET_ITEM(*dtypes, i, t);
    }
    if (!shapes) Py_CLEAR(*dtypes);
    if (!*dtypes) Py_CLEAR(shapes);
    return shapes;
}

/* Reads back n (shape or None, dtype flag or -1) pairs the dispatcher checked; None and -1
 * leave the meta as it was. */
static int metas_from_py(PyObject *shapes, PyObject *dtypes, int n, hg_meta *m)
{
    if (!PyList_Check(shapes) || !PyList_Check(dtypes) || PyList_GET_SIZE(shapes) != n ||
        PyList_GET_SIZE(dtypes) != n) {
        PyErr_SetString(PyExc_ValueError, "the dispatcher returned lists of the wrong size");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(shapes, i);
        long t = PyLong_AsLong(PyList_GET_ITEM(dtypes, i));
        if (t == -1 && PyErr_Occurred()) return -1;
        if (t >= 0 && t < HG_NUM_DTYPES) m[i].dtype = (hg_dtype)t;
        if (s == Py_None) continue;
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) > HG_MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "shape %d: a tuple of at most %d dims expected", i,
                         HG_MAX_NDIM);
            return -1;
        }
        int nd = (int)PyTuple_GET_SIZE(s);
        int64_t shape[HG_MAX_NDIM];
        for (int d = 0; d < nd; d++) {
            shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(s, d));
            if (shape[d] == -1 && PyErr_Occurred()) return -1;
        }
        m[i].ndim = nd;
        memcpy(m[i].shape, shape, sizeof(int64_t) * (size_t)nd);
    }
    return 0;
}

static hg_status cb_infer(int64_t handle, int nin, hg_meta *in, int nout, hg_meta *out)
{
    if (!Py_IsInitialized()) return gone();
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *dt = NULL, *res = NULL;
    PyObject *shapes = metas_to_py(nin, in, &dt);
    if (shapes && g_dispatch)
        res = PyObject_CallMethod(g_dispatch, "infer", "LOO", (long long)handle, shapes, dt);
    PyObject *is, *it, *os, *ot;
    int ok = res && PyArg_ParseTuple(res, "OOOO", &is, &it, &os, &ot) &&
             metas_from_py(is, it, nin, in) == 0 && metas_from_py(os, ot, nout, out) == 0;
    hg_status st = ok ? HG_OK : from_python("infer_shape / infer_type");
    Py_XDECREF(res);
    Py_XDECREF(shapes);
    Py_XDECREF(dt);
    PyGILState_Release(gil);
    return st;
}

static PyObject *wrap_list(int n, hg_tensor *const *t)
{
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        hg_tensor_retain(t[i]);
        PyObject *o = hgpy_wrap(t[i]);
        if (!o) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, o);
    }
    return l;
}

/* forward or backward with recording paused and the training flag set as the run asks (as
 * MXNet runs a custom operator's code outside the tape). */
static hg_status call_run(const char *method, const char *what, int64_t handle, bool is_train,
                          int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    if (!Py_IsInitialized()) return gone();
    PyGILState_STATE gil = PyGILState_Ensure();
    bool was_recording = hg_ag_set_recording(false);
    bool was_training = hg_ag_set_training(is_train);
    PyObject *ins = wrap_list(nin, in), *outs = ins ? wrap_list(nout, out) : NULL, *res = NULL;
    if (outs && g_dispatch)
        res = PyObject_CallMethod(g_dispatch, method, "LOOO", (long long)handle,
                                  is_train ? Py_True : Py_False, ins, outs);
    hg_status st = res ? HG_OK : from_python(what);
    Py_XDECREF(res);
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    hg_ag_set_training(was_training);
    hg_ag_set_recording(was_recording);
    PyGILState_Release(gil);
    return st;
}

static hg_status cb_forward(int64_t handle, bool is_train, int nin, hg_tensor *const *in, int nout,
                            hg_tensor *const *out)
{
    return call_run("forward", "CustomOp.forward", handle, is_train, nin, in, nout, out);
}

static hg_status cb_backward(int64_t handle, bool is_train, int nin, hg_tensor *const *in, int nout,
                             hg_tensor *const *out)
{
    return call_run("backward", "CustomOp.backward", handle, is_train, nin, in, nout, out);
}

static const hg_custom_callbacks k_callbacks = {cb_create, cb_infer, cb_forward, cb_backward};

/* _set_custom_dispatch(dispatcher, error_class): installs the dispatcher and the table. */
static PyObject *set_dispatch(PyObject *self, PyObject *args)
{
    PyObject *d, *err;
    if (!PyArg_ParseTuple(args, "OO", &d, &err)) return NULL;
    Py_XSETREF(g_dispatch, Py_NewRef(d));
    Py_XSETREF(g_error, Py_NewRef(err));
    hg_custom_set_callbacks(&k_callbacks);
    Py_RETURN_NONE;
}

static PyMethodDef k_functions[] = {
    {"_set_custom_dispatch", set_dispatch, METH_VARARGS,
     "_set_custom_dispatch(dispatcher, error_class): Python code behind the Custom op"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_custom(PyObject *m) { return PyModule_AddFunctions(m, k_functions); }
