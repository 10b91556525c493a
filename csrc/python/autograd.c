/* The autograd functions of _core (autograd/autograd.h): recording and training flags,
 * variables, backward and grad, detach, get_symbol. hybridgluon/autograd.py wraps them. */
#include "python/binding.h"

#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/device.h"

PyObject *hgpy_wrap_symbol(hg_symbol *s);

static PyObject *set_recording(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    return PyBool_FromLong(hg_ag_set_recording(on));
}

static PyObject *is_recording(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(hg_ag_is_recording());
}

static PyObject *set_training(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    return PyBool_FromLong(hg_ag_set_training(on));
}

static PyObject *is_training(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(hg_ag_is_training());
}

/* Fills an array of tensors from a sequence of NDArrays (None allowed when none_ok). */
static hg_tensor **tensors_of(PyObject *seq, Py_ssize_t *n, int none_ok, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, "expected a list of NDArrays");
    if (!fast) return NULL;
    *n = PySequence_Fast_GET_SIZE(fast);
    hg_tensor **t = calloc((size_t)*n + 1, sizeof *t);
    if (!t) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (o == Py_None && none_ok) continue;
        if (!hgpy_is_ndarray(o)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be an NDArray, got %s", what, i,
                         Py_TYPE(o)->tp_name);
            free(t);
            Py_DECREF(fast);
            return NULL;
        }
        t[i] = hgpy_tensor(o);
    }
    Py_DECREF(fast);
    return t;
}

/* mark_variables(arrays, grads, reqs): reqs are 0 null, 1 write, 2 add. */
static PyObject *mark_variables(PyObject *self, PyObject *args)
{
    PyObject *vs, *gs, *rs;
    if (!PyArg_ParseTuple(args, "OOO", &vs, &gs, &rs)) return NULL;
    Py_ssize_t nv, ng;
    hg_tensor **v = tensors_of(vs, &nv, 0, "variables");
    hg_tensor **g = v ? tensors_of(gs, &ng, 1, "gradients") : NULL;
    PyObject *res = NULL;
    if (!v || !g) goto done;
    PyObject *r = PySequence_Fast(rs, "grad_reqs must be a list");
    if (!r) goto done;
    if (ng != nv || PySequence_Fast_GET_SIZE(r) != nv) {
        PyErr_SetString(PyExc_ValueError, "mark_variables: variables, gradients and grad_reqs "
                                          "must have the same length");
        Py_DECREF(r);
        goto done;
    }
    for (Py_ssize_t i = 0; i < nv; i++) {
        long req = PyLong_AsLong(PySequence_Fast_GET_ITEM(r, i));
        if (req == -1 && PyErr_Occurred()) break;
        hg_status st = hg_ag_mark_variable(v[i], g[i], (int)req);
        if (st) {
            hgpy_raise(st);
            break;
        }
    }
    Py_DECREF(r);
    if (!PyErr_Occurred()) res = Py_NewRef(Py_None);
done:
    free(v);
    free(g);
    return res;
}

/* backward(heads, head_grads or None, retain_graph, train_mode, variables=None,
 * create_graph=False) -> None, or the list of gradients of `variables`. */
static PyObject *backward(PyObject *self, PyObject *args)
{
    PyObject *hs, *hgs, *vs = Py_None;
    int retain, train, create = 0;
    if (!PyArg_ParseTuple(args, "OOpp|Op", &hs, &hgs, &retain, &train, &vs, &create)) return NULL;
    Py_ssize_t nh, nhg = 0, nv = 0;
    hg_tensor **h = tensors_of(hs, &nh, 0, "heads"), **hg = NULL, **v = NULL, **out = NULL;
    PyObject *res = NULL;
    if (!h) return NULL;
    if (hgs != Py_None && !(hg = tensors_of(hgs, &nhg, 1, "head_grads"))) goto done;
    if (hg && nhg != nh) {
        PyErr_Format(PyExc_ValueError, "head_grads has %zd entries for %zd heads", nhg, nh);
        goto done;
    }
    if (vs != Py_None && !(v = tensors_of(vs, &nv, 0, "variables"))) goto done;
    if (v && !(out = calloc((size_t)nv + 1, sizeof *out))) {
        PyErr_NoMemory();
        goto done;
    }
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_ag_backward((int)nh, h, hg, (int)nv, v, retain, create, train,
                                               out);
    Py_END_ALLOW_THREADS if (st)
    {
        hgpy_raise(st);
        goto done;
    }
    if (!v) {
        res = Py_NewRef(Py_None);
        goto done;
    }
    res = PyList_New(nv);
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *w = res ? hgpy_wrap(out[i]) : NULL;
        out[i] = NULL;
        if (!w) {
            Py_CLEAR(res);
            continue;
        }
        PyList_SET_ITEM(res, i, w);
    }
done:
    for (Py_ssize_t i = 0; out && i < nv; i++) hg_tensor_free(out[i]);
    free(out);
    free(h);
    free(hg);
    free(v);
    return res;
}

static PyObject *grad_buffer(PyObject *self, PyObject *arr)
{
    if (!hgpy_is_ndarray(arr)) return PyErr_Format(PyExc_TypeError, "expected an NDArray");
    hg_tensor *g = hg_ag_grad_buffer(hgpy_tensor(arr));
    if (!g) Py_RETURN_NONE;
    hg_tensor_retain(g);
    return hgpy_wrap(g);
}

static PyObject *detach(PyObject *self, PyObject *arr)
{
    if (!hgpy_is_ndarray(arr)) return PyErr_Format(PyExc_TypeError, "expected an NDArray");
    hg_tensor *t = NULL;
    hg_status st = hg_ag_detach(hgpy_tensor(arr), &t);
    return st ? hgpy_raise(st) : hgpy_wrap(t);
}

static PyObject *get_symbol(PyObject *self, PyObject *arr)
{
    if (!hgpy_is_ndarray(arr)) return PyErr_Format(PyExc_TypeError, "expected an NDArray");
    hg_symbol *s = NULL;
    hg_status st = hg_ag_get_symbol(hgpy_tensor(arr), &s);
    return st ? hgpy_raise(st) : hgpy_wrap_symbol(s);
}

/* ---- custom functions: the backward callback of a recorded autograd.Function ------------- */

/* Raises an hg error carrying the pending Python exception's text (and clears it). */
static hg_status error_from_python(const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    hg_status st = hg_error(HG_ERR_VALUE, "%s: %s%s%s", what,
                            type ? ((PyTypeObject *)type)->tp_name : "error", msg ? ": " : "",
                            msg ? msg : "");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return st;
}

/* Copies what Function.backward returned for input k into the planned gradient array. */
static hg_status take_grad(PyObject *r, int k, hg_tensor *dst)
{
    if (!hgpy_is_ndarray(r))
        return hg_error(HG_ERR_TYPE, "Function.backward must return NDArrays; gradient %d is %s", k,
                        Py_TYPE(r)->tp_name);
    const hg_tensor *src = hgpy_tensor(r);
    bool same = src->dtype == dst->dtype && src->ndim == dst->ndim;
    for (int d = 0; same && d < src->ndim; d++) same = src->shape[d] == dst->shape[d];
    if (!same) {
        char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE,
                        "Function.backward: gradient %d has shape %s (%s), its input %s (%s)", k,
                        hg_shape_str(a, src->ndim, src->shape), hg_dtype_name(src->dtype),
                        hg_shape_str(b, dst->ndim, dst->shape), hg_dtype_name(dst->dtype));
    }
    return hg_tensor_copy_any(src, dst); /* a gradient may come from another device */
}

/* Calls func.backward(*ograds) with the GIL held and recording paused (as MXNet's Function),
 * and writes its results into grads. */
static hg_status function_backward(void *ctx, int nograd, hg_tensor *const *ograds, int ngrad,
                                   hg_tensor *const *grads)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    bool was_recording = hg_ag_set_recording(false);
    hg_status st = HG_OK;
    PyObject *args = PyTuple_New(nograd), *res = NULL, *seq = NULL;
    for (int h = 0; args && h < nograd; h++) {
        hg_tensor_retain(ograds[h]);
        PyObject *a = hgpy_wrap(ograds[h]);
        if (!a) break;
        PyTuple_SET_ITEM(args, h, a);
    }
    PyObject *fn = args && !PyErr_Occurred() ? PyObject_GetAttrString(ctx, "backward") : NULL;
    if (fn) res = PyObject_Call(fn, args, NULL);
    Py_XDECREF(fn);
    if (res)
        seq = (PyList_Check(res) || PyTuple_Check(res)) ? PySequence_Fast(res, "")
                                                        : PyTuple_Pack(1, res);
    if (!seq) {
        st = error_from_python("Function.backward failed");
    } else if (PySequence_Fast_GET_SIZE(seq) != ngrad) {
        st = hg_error(HG_ERR_VALUE, "Function.backward returned %zd gradients for %d inputs",
                      PySequence_Fast_GET_SIZE(seq), ngrad);
    } else {
        for (int k = 0; k < ngrad && st == HG_OK; k++)
            st = take_grad(PySequence_Fast_GET_ITEM(seq, k), k, grads[k]);
    }
    Py_XDECREF(seq);
    Py_XDECREF(res);
    Py_XDECREF(args);
    hg_ag_set_recording(was_recording);
    PyGILState_Release(gil);
    return st;
}

static void function_release(void *ctx)
{
    if (!Py_IsInitialized()) return; /* a tape node freed at exit: Python is gone */
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(gil);
}

/* record_function(func, inputs, outputs): records outputs = func(inputs) on the tape (when an
 * input is part of the graph); backward calls func.backward. */
static PyObject *record_function(PyObject *self, PyObject *args)
{
    PyObject *func, *ins, *outs;
    if (!PyArg_ParseTuple(args, "OO!O!", &func, &PyTuple_Type, &ins, &PyTuple_Type, &outs))
        return NULL;
    Py_ssize_t nin = PyTuple_GET_SIZE(ins), nout = PyTuple_GET_SIZE(outs);
    hg_tensor **t = malloc(sizeof *t * (size_t)(nin + nout + 1));
    if (!t) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < nin + nout; i++) {
        PyObject *o = i < nin ? PyTuple_GET_ITEM(ins, i) : PyTuple_GET_ITEM(outs, i - nin);
        if (!hgpy_is_ndarray(o)) {
            free(t);
            return PyErr_Format(PyExc_TypeError,
                                "Function inputs and outputs must be NDArrays, got %s",
                                Py_TYPE(o)->tp_name);
        }
        t[i] = hgpy_tensor(o);
    }
    Py_INCREF(func);
    hg_status st = hg_ag_record_function((int)nin, t, (int)nout, t + nin, function_backward, func,
                                         function_release);
    free(t);
    if (st) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyMethodDef k_functions[] = {
    {"record_function", record_function, METH_VARARGS,
     "record_function(func, inputs, outputs): a custom Function call as one tape node"},
    {"set_recording", set_recording, METH_O, "set the recording flag, return the previous one"},
    {"is_recording", is_recording, METH_NOARGS, "the recording flag (per thread)"},
    {"set_training", set_training, METH_O, "set the training flag, return the previous one"},
    {"is_training", is_training, METH_NOARGS, "the training flag (per thread)"},
    {"mark_variables", mark_variables, METH_VARARGS, "mark_variables(arrays, grads, reqs)"},
    {"backward", backward, METH_VARARGS,
     "backward(heads, head_grads, retain_graph, train_mode, variables=None, create_graph=False)"},
    {"grad_buffer", grad_buffer, METH_O, "the gradient buffer of a marked variable, or None"},
    {"detach", detach, METH_O, "an array sharing the data, outside the graph"},
    {"get_symbol", get_symbol, METH_O, "the recorded graph that computed an array"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_autograd(PyObject *m) { return PyModule_AddFunctions(m, k_functions); }
