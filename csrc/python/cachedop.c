/* _core.CachedOp: a plan over a symbol, called with NDArrays (what hybridize() builds), plus
 * shape/dtype inference for Symbol.infer_shape and Gluon's deferred initialisation. */
#include "python/binding.h"

#include <stdlib.h>

#include "exec/cachedop.h"

typedef struct {
    PyObject_HEAD hg_cachedop *op;
    hg_plan *plan; /* the op's inference plan (borrowed) */
    int ninputs;
    /* _bind(): inputs fixed between calls (parameters); the call's arguments fill the other
     * slots in order. bound[k] NULL: a call argument. */
    PyObject **bound;
    int *free_slot, nfree;
    int single; /* return the only output itself instead of a list */
} CachedOpObject;

static void unbind(CachedOpObject *self)
{
    for (int k = 0; self->bound && k < self->ninputs; k++) Py_XDECREF(self->bound[k]);
    PyMem_Free(self->bound);
    PyMem_Free(self->free_slot);
    self->bound = NULL;
    self->free_slot = NULL;
    self->nfree = 0;
}

/* The C symbol inside a _core.Symbol (symbol.c owns the type). */
hg_symbol *hgpy_symbol_ptr(PyObject *o);

static void co_dealloc(CachedOpObject *self)
{
    unbind(self);
    hg_cachedop_release(self->op);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int co_init(CachedOpObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"symbol",  "input_names", "static_alloc", "static_shape", "fusion",
                             "memplan", NULL};
    PyObject *symobj, *names;
    int static_alloc = 0, static_shape = 0, fusion = 1, memplan = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|pppp", kwlist, &symobj, &names, &static_alloc,
                                     &static_shape, &fusion, &memplan))
        return -1;
    hg_symbol *s = hgpy_symbol_ptr(symobj);
    if (!s) return -1;
    PyObject *seq = PySequence_Fast(names, "input names must be a sequence of str");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **cn = PyMem_Malloc(sizeof(char *) * (size_t)(n ? n : 1));
    int rc = -1;
    if (!cn) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(cn[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)))) goto done;
    hg_cachedop_release(self->op);
    self->op = NULL;
    self->plan = NULL;
    unsigned flags = (static_alloc ? HG_PLAN_STATIC_ALLOC : 0) |
                     (static_shape ? HG_PLAN_STATIC_SHAPE : 0) | (fusion ? 0 : HG_PLAN_NO_FUSION) |
                     (memplan ? 0 : HG_PLAN_NO_MEMPLAN);
    /* The environment switches (HG_NO_FUSION, HG_NO_MEMPLAN) stay on when set. */
    hg_status st = hg_cachedop_create(s, (int)n, cn, flags | hg_plan_env_flags(), &self->op);
    if (st) {
        hgpy_raise(st);
        goto done;
    }
    self->plan = hg_cachedop_plan(self->op);
    self->ninputs = (int)n;
    rc = 0;
done:
    PyMem_Free(cn);
    Py_DECREF(seq);
    return rc;
}

/* Runs the op on the free slots' arguments (use_bound) or on every input (args). */
static PyObject *co_run(CachedOpObject *self, PyObject *args, int use_bound)
{
    if (!self->plan) {
        PyErr_SetString(PyExc_RuntimeError, "CachedOp is not initialised");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    int want = use_bound ? self->nfree : self->ninputs;
    if (n != want)
        return hgpy_raise(hg_error(HG_ERR_VALUE, "CachedOp expects %d inputs, got %zd", want, n));
    int nout = hg_plan_num_outputs(self->plan);
    size_t nin = (size_t)self->ninputs;
    hg_tensor *in_stack[32], *out_stack[8];
    PyObject *keep_stack[32];
    hg_tensor **in = nin <= 32 ? in_stack : PyMem_Malloc(sizeof(hg_tensor *) * nin);
    PyObject **keep = nin <= 32 ? keep_stack : PyMem_Calloc(nin, sizeof(PyObject *));
    hg_tensor **out = nout <= 8 ? out_stack : PyMem_Malloc(sizeof(hg_tensor *) * (size_t)nout);
    hg_cachedop *op = self->op;
    PyObject *res = NULL;
    int nkeep = 0;
    if (!in || !out || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < nout; i++) out[i] = NULL;
    /* The bound arrays are held for the call: another thread may rebind (or drop the last
     * other reference to) a parameter's array while this one runs without the GIL. */
    for (int k = 0; use_bound && k < self->ninputs; k++)
        if (self->bound[k]) {
            keep[nkeep++] = Py_NewRef(self->bound[k]);
            in[k] = hgpy_tensor(self->bound[k]);
        }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (!hgpy_is_ndarray(a)) {
            PyErr_Format(PyExc_TypeError, "CachedOp input %zd must be an NDArray, got %s", i,
                         Py_TYPE(a)->tp_name);
            goto done;
        }
        in[use_bound ? self->free_slot[i] : i] = hgpy_tensor(a);
    }
    hg_status st;
    hg_cachedop_retain(op); /* the block may build a new op (and drop this one) meanwhile */
    Py_BEGIN_ALLOW_THREADS st = hg_cachedop_call(op, in, out);
    Py_END_ALLOW_THREADS hg_cachedop_release(op);
    if (st) {
        hgpy_raise(st);
        goto done;
    }
    if (use_bound && self->single && nout == 1) {
        res = hgpy_wrap(out[0]);
        goto done;
    }
    res = PyList_New(nout);
    for (int i = 0; i < nout; i++) {
        PyObject *w = res ? hgpy_wrap(out[i]) : NULL;
        if (!res) hg_tensor_free(out[i]);
        else if (!w) Py_CLEAR(res);
        else PyList_SET_ITEM(res, i, w);
    }
done:
    for (int k = 0; k < nkeep; k++) Py_DECREF(keep[k]);
    if (in != in_stack) PyMem_Free(in);
    if (keep != keep_stack) PyMem_Free(keep);
    if (out != out_stack) PyMem_Free(out);
    return res;
}

static PyObject *co_call(CachedOpObject *self, PyObject *args, PyObject *kw)
{
    return co_run(self, args, self->bound != NULL);
}

/* _call_all(*inputs): every input given, the binding ignored; always a list. Threads that call
 * through the binding are not disturbed. */
static PyObject *co_call_all(CachedOpObject *self, PyObject *args) { return co_run(self, args, 0); }

/* A meta as (shape or None, dtype flag); an unknown dimension (-1 inside) reads 0 in MXNet's
 * legacy convention, -1 under NumPy shape semantics (np_shape), where 0 is a real zero. */
static PyObject *meta_to_py(const hg_meta *m, int np_shape)
{
    if (m->ndim < 0) return Py_BuildValue("(Oi)", Py_None, (int)m->dtype);
    PyObject *shape = PyTuple_New(m->ndim);
    for (int d = 0; shape && d < m->ndim; d++)
        PyTuple_SET_ITEM(shape, d,
                         PyLong_FromLongLong(m->shape[d] < 0 ? (np_shape ? -1 : 0) : m->shape[d]));
    return shape ? Py_BuildValue("(Ni)", shape, (int)m->dtype) : NULL;
}

/* infer([(shape or None, dtype_flag)], partial, np_shape=False) -> ([in metas], [out metas]);
 * None marks an unknown shape. In shapes, 0 marks an unknown dimension (MXNet's legacy
 * convention); with np_shape (MXNet's NumPy shape semantics) -1 does and 0 is a real zero-size
 * dimension. Inside, the plan marks unknown dimensions -1 either way. */
static PyObject *co_infer(CachedOpObject *self, PyObject *args)
{
    PyObject *list;
    int partial = 0, np_shape = 0;
    if (!PyArg_ParseTuple(args, "O|pp", &list, &partial, &np_shape)) return NULL;
    PyObject *seq = PySequence_Fast(list, "expected a list of (shape, dtype) pairs");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int nout = hg_plan_num_outputs(self->plan);
    hg_meta *in = PyMem_Calloc((size_t)(n + 1), sizeof(hg_meta));
    hg_meta *out = PyMem_Calloc((size_t)(nout + 1), sizeof(hg_meta));
    PyObject *res = NULL, *ins = NULL, *outs = NULL;
    if (!in || !out) {
        PyErr_NoMemory();
        goto done;
    }
    if (n != self->ninputs) {
        hgpy_raise(hg_error(HG_ERR_VALUE, "expected %d input metas, got %zd", self->ninputs, n));
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *shape, *item = PySequence_Fast_GET_ITEM(seq, i);
        int dtype;
        if (!PyArg_ParseTuple(item, "Oi", &shape, &dtype)) goto done;
        in[i].dtype = (hg_dtype)dtype;
        if (shape == Py_None) {
            in[i].ndim = -1;
            continue;
        }
        PyObject *s = PySequence_Fast(shape, "shape must be a tuple");
        if (!s) goto done;
        Py_ssize_t nd = PySequence_Fast_GET_SIZE(s);
        if (nd > HG_MAX_NDIM) {
            Py_DECREF(s);
            hgpy_raise(hg_error(HG_ERR_VALUE, "shape with %zd dimensions", nd));
            goto done;
        }
        in[i].ndim = (int)nd;
        for (Py_ssize_t d = 0; d < nd; d++) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(s, d));
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(s);
                goto done;
            }
            in[i].shape[d] = (np_shape ? v < 0 : v <= 0) ? -1 : v;
        }
        Py_DECREF(s);
    }
    /* Without the GIL: a run of this plan on another thread may hold the plan's lock while a
     * Custom op in it waits for the GIL. */
    PyThreadState *ts = PyEval_SaveThread();
    hg_status st = hg_plan_infer(self->plan, in, out, partial);
    PyEval_RestoreThread(ts);
    if (st) {
        hgpy_raise(st);
        goto done;
    }
    ins = PyList_New(n);
    outs = PyList_New(nout);
    for (Py_ssize_t i = 0; ins && i < n; i++) PyList_SET_ITEM(ins, i, meta_to_py(&in[i], np_shape));
    for (int i = 0; outs && i < nout; i++) PyList_SET_ITEM(outs, i, meta_to_py(&out[i], np_shape));
    if (ins && outs) res = Py_BuildValue("(OO)", ins, outs);
done:
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    PyMem_Free(in);
    PyMem_Free(out);
    Py_DECREF(seq);
    return res;
}

static PyObject *co_stats(CachedOpObject *self, PyObject *unused)
{
    hg_plan_stats s;
    char *text = NULL;
    PyThreadState *ts = PyEval_SaveThread(); /* the plan's lock: see co_infer */
    hg_plan_get_stats(self->plan, &s);
    hg_status st = hg_plan_describe(self->plan, &text);
    hg_plan_stats f, b;
    int nsaved;
    bool training = st == HG_OK && hg_cachedop_train_stats(self->op, &f, &b, &nsaved);
    PyEval_RestoreThread(ts);
    if (st) return hgpy_raise(st);
    PyObject *r = Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:L,s:L,s:L,s:L,s:s}", "kernels", s.kernels, "folded_batchnorm",
        s.folded_bn, "fused_groups", s.fused_groups, "fused_ops", s.fused_ops,
        "planned_internal_bytes", (long long)s.planned_bytes, "unplanned_internal_bytes",
        (long long)s.unplanned_bytes, "peak_internal_bytes", (long long)s.peak_bytes,
        "total_internal_bytes", (long long)s.total_bytes, "plan", text);
    free(text);
    if (r) {
        static const char *const states[] = {"none", "warm", "recorded", "off"};
        hg_cachedop_graph_stats g;
        hg_cachedop_graph_stats_get(self->op, &g);
        PyObject *t = Py_BuildValue("{s:s,s:i,s:L,s:n,s:s}", "state", states[g.state & 3],
                                    "captures", g.captures, "replays", g.replays, "pool_bytes",
                                    (Py_ssize_t)g.pool_bytes, "why", g.why);
        if (!t || PyDict_SetItemString(r, "cuda_graph", t) < 0) Py_CLEAR(r);
        Py_XDECREF(t);
    }
    if (r && training) {
        PyObject *t = Py_BuildValue(
            "{s:i,s:i,s:i,s:L,s:L,s:i,s:i,s:L,s:L}", "saved_activations", nsaved, "forward_kernels",
            f.kernels, "forward_fused_groups", f.fused_groups, "forward_planned_bytes",
            (long long)f.planned_bytes, "forward_unplanned_bytes", (long long)f.unplanned_bytes,
            "backward_kernels", b.kernels, "backward_fused_groups", b.fused_groups,
            "backward_planned_bytes", (long long)b.planned_bytes, "backward_unplanned_bytes",
            (long long)b.unplanned_bytes);
        if (!t || PyDict_SetItemString(r, "training", t) < 0) Py_CLEAR(r);
        Py_XDECREF(t);
    }
    return r;
}

/* _bind(inputs, single=False): entries that are NDArrays stay bound to their slots; None
 * slots take the call's arguments in order. single: a one-output call returns the array. */
static PyObject *co_bind(CachedOpObject *self, PyObject *args)
{
    PyObject *list;
    int single = 0;
    if (!PyArg_ParseTuple(args, "O|p", &list, &single)) return NULL;
    PyObject *seq = PySequence_Fast(list, "expected a list");
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != self->ninputs) {
        Py_DECREF(seq);
        return hgpy_raise(hg_error(HG_ERR_VALUE, "_bind: expected %d entries", self->ninputs));
    }
    unbind(self);
    self->bound = PyMem_Calloc((size_t)self->ninputs + 1, sizeof(PyObject *));
    self->free_slot = PyMem_Calloc((size_t)self->ninputs + 1, sizeof(int));
    if (!self->bound || !self->free_slot) {
        Py_DECREF(seq);
        unbind(self);
        return PyErr_NoMemory();
    }
    for (int k = 0; k < self->ninputs; k++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, k);
        if (a == Py_None) {
            self->free_slot[self->nfree++] = k;
        } else if (hgpy_is_ndarray(a)) {
            self->bound[k] = Py_NewRef(a);
        } else {
            Py_DECREF(seq);
            unbind(self);
            return PyErr_Format(PyExc_TypeError, "_bind: entry %d must be an NDArray or None", k);
        }
    }
    self->single = single;
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyMethodDef k_co_methods[] = {
    {"_bind", (PyCFunction)co_bind, METH_VARARGS, "bind fixed inputs (parameters)"},
    {"_call_all", (PyCFunction)co_call_all, METH_VARARGS,
     "call with every input, ignoring the binding; returns a list"},
    {"infer", (PyCFunction)co_infer, METH_VARARGS, "shape/dtype inference for input metas"},
    {"stats", (PyCFunction)co_stats, METH_NOARGS, "counters of the last run"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HgCachedOp_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hybridgluon._core.CachedOp",
    .tp_basicsize = sizeof(CachedOpObject),
    .tp_dealloc = (destructor)co_dealloc,
    .tp_call = (ternaryfunc)co_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CachedOp(symbol, input_names, static_alloc=False, static_shape=False, "
              "fusion=True, memplan=True): run a symbol on NDArrays",
    .tp_methods = k_co_methods,
    .tp_init = (initproc)co_init,
    .tp_new = PyType_GenericNew,
};

int hgpy_init_cachedop(PyObject *m)
{
    if (PyType_Ready(&HgCachedOp_Type) < 0) return -1;
    Py_INCREF(&HgCachedOp_Type);
    return PyModule_AddObject(m, "CachedOp", (PyObject *)&HgCachedOp_Type);
}
