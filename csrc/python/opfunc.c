/* _core.Op: one callable per registered op; nd.<op> are these objects. A call parses positional
 * NDArray inputs and keyword attributes against the op's schema (no string building on the way),
 * runs the op and wraps the outputs. Non-NDArray inputs (Symbols) go to a Python fallback. */
#include "python/binding.h"

#include "autograd/autograd.h"

#include <string.h>

typedef struct {
    PyObject_HEAD const hg_op_def *op;
    vectorcallfunc vectorcall;
    PyObject *name;
} OpObject;

static PyObject *g_fallback;  /* callable(op_name, args, kwargs) for non-NDArray inputs */
static PyObject *g_dtype_hook; /* callable(obj) -> dtype name, for numpy dtypes and types */

hg_status hgpy_run(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in, int nout,
                   hg_tensor **out)
{
    hg_status st;
    bool train = hg_ag_is_training();
    if (op->forward == NULL && nin > 0 && in[0]->size < 65536) {
        st = hg_op_run(op, a, train, nin, in, nout, out);
    } else {
        Py_BEGIN_ALLOW_THREADS st = hg_op_run(op, a, train, nin, in, nout, out);
        Py_END_ALLOW_THREADS
    }
    /* A recording failure (out of memory) leaves the outputs to the caller's error path. */
    if (st == HG_OK && hg_ag_should_record(nin, in))
        st = hg_ag_record(op, a, nin, in, nout, out, NULL, NULL, NULL);
    return st;
}

/* By hg_attr_type, as the docstrings and messages spell them. */
static const char *const k_type_names[] = {"int",  "float", "boolean", "Shape(tuple)",
                                           "enum", "dtype", "string"};
_Static_assert(HG_COUNT(k_type_names) == HG_NUM_ATTR_TYPES, "one name per hg_attr_type");

static int type_error(const hg_op_def *op, int idx, PyObject *value, const char *want)
{
    PyObject *r = PyObject_Repr(value);
    const char *text = r ? PyUnicode_AsUTF8(r) : NULL;
    PyErr_Clear(); /* a repr that fails is replaced by "?"; the error raised is ours */
    hgpy_raise(hg_error(HG_ERR_VALUE,
                        "Invalid Parameter format for %s expect %s but value='%s', "
                        "in operator %s",
                        op->attrs[idx].name, want, text ? text : "?", op->name));
    Py_XDECREF(r);
    return -1;
}

/* Parses the attribute from the text of a str; a str with no UTF-8 form (a lone surrogate) is
 * a bad value like any other. */
static int parse_str_attr(const hg_op_def *op, int idx, PyObject *str, hg_attrs *a)
{
    const char *text = PyUnicode_AsUTF8(str);
    if (!text) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        return type_error(op, idx, str, k_type_names[op->attrs[idx].type]);
    }
    hg_status st = hg_attr_parse(op, idx, text, a);
    return st ? hgpy_raise_int(st) : 0;
}

/* NumPy's bool scalar (numpy.bool_ under 1.x, numpy.bool under 2.x): a truth value, never an
 * integer (its __index__ warns under 1.x and raises under 2.x, so both are decided here). */
static int is_numpy_bool(PyObject *o)
{
    const char *name = Py_TYPE(o)->tp_name;
    return strcmp(name, "numpy.bool_") == 0 || strcmp(name, "numpy.bool") == 0;
}

/* A NumPy float scalar narrower than a double (float32, float16): MXNet reads an attribute
 * from str(value), so np.float32(0.1) is 0.1 in a double attribute, not the 0.10000000149 its
 * binary value is. (np.float64 is a Python float and reads as one.) */
static int to_double(PyObject *o, double *out)
{
    PyObject *num = NULL;
    if (!PyFloat_Check(o) && strncmp(Py_TYPE(o)->tp_name, "numpy.float", 11) == 0) {
        PyObject *text = PyObject_Str(o);
        num = text ? PyFloat_FromString(text) : NULL;
        Py_XDECREF(text);
        if (!num) {
            PyErr_Clear();
            return -1;
        }
        o = num;
    }
    *out = PyFloat_AsDouble(o);
    Py_XDECREF(num);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

static int to_int(PyObject *o, int64_t *out)
{
    if (PyBool_Check(o) || PyFloat_Check(o) || is_numpy_bool(o)) return -1;
    PyObject *idx = PyNumber_Index(o);
    if (!idx) {
        PyErr_Clear();
        return -1;
    }
    *out = PyLong_AsLongLong(idx);
    Py_DECREF(idx);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

int hgpy_set_attr(const hg_op_def *op, int idx, PyObject *value, hg_attrs *a)
{
    const hg_attr_spec *sp = &op->attrs[idx];
    hg_attr_value *v = &a->v[idx];
    if (value == Py_None) {
        if (!(sp->flags & HG_ATTR_OPTIONAL)) return type_error(op, idx, value, "a value");
        v->is_none = true;
        v->is_set = true;
        return 0;
    }
    if (PyUnicode_Check(value) && sp->type != HG_ATTR_STRING)
        return parse_str_attr(op, idx, value, a);
    v->is_none = false;
    v->is_set = true;
    switch (sp->type) {
    case HG_ATTR_INT:
        if (to_int(value, &v->i) < 0) return type_error(op, idx, value, "int");
        return 0;
    case HG_ATTR_FLOAT:
        if (to_double(value, &v->f) < 0) return type_error(op, idx, value, "float");
        return 0;
    case HG_ATTR_BOOL: {
        int64_t i;
        if (PyBool_Check(value)) v->b = value == Py_True;
        else if (is_numpy_bool(value)) v->b = PyObject_IsTrue(value) == 1;
        else if (to_int(value, &i) == 0 && (i == 0 || i == 1)) v->b = i != 0;
        else return type_error(op, idx, value, "boolean");
        return 0;
    }
    case HG_ATTR_TUPLE: {
        int64_t one;
        if (to_int(value, &one) == 0) {
            v->t.n = 1;
            v->t.v[0] = one;
            return 0;
        }
        PyObject *seq = PySequence_Check(value) ? PySequence_Fast(value, "") : NULL;
        if (!seq) {
            PyErr_Clear();
            return type_error(op, idx, value, "Shape(tuple)");
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n > HG_MAX_TUPLE) {
            Py_DECREF(seq);
            return type_error(op, idx, value, "a shorter tuple");
        }
        v->t.n = (int)n;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            if (item == Py_None) { /* slice begin/end: None becomes a sentinel */
                v->t.v[i] = INT64_MIN;
            } else if (to_int(item, &v->t.v[i]) < 0) {
                Py_DECREF(seq);
                return type_error(op, idx, value, "Shape(tuple)");
            }
        }
        Py_DECREF(seq);
        return 0;
    }
    case HG_ATTR_ENUM: return type_error(op, idx, value, "a string");
    case HG_ATTR_DTYPE: {
        if (!g_dtype_hook) return type_error(op, idx, value, "dtype");
        PyObject *name = PyObject_CallOneArg(g_dtype_hook, value);
        if (!name) return -1;
        int r = PyUnicode_Check(name) ? parse_str_attr(op, idx, name, a)
                                      : type_error(op, idx, value, "dtype");
        Py_DECREF(name);
        return r;
    }
    case HG_ATTR_STRING: {
        PyObject *s = PyObject_Str(value);
        if (!s) return -1;
        int r = parse_str_attr(op, idx, s, a);
        Py_DECREF(s);
        return r;
    }
    }
    return 0;
}

static int input_index(const hg_op_def *op, PyObject *key)
{
    if (!op->input_names || (op->flags & HG_OP_VARARGS)) return -1;
    for (int i = 0; op->input_names[i]; i++)
        if (PyUnicode_CompareWithASCIIString(key, op->input_names[i]) == 0) return i;
    return -1;
}

static PyObject *call_fallback(OpObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    if (!g_fallback) {
        PyErr_Format(PyExc_TypeError, "%s: inputs must be NDArrays", self->op->name);
        return NULL;
    }
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject *tuple = PyTuple_New(n), *kw = PyDict_New();
    for (Py_ssize_t i = 0; tuple && i < n; i++) PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    for (Py_ssize_t i = 0; kw && kwnames && i < PyTuple_GET_SIZE(kwnames); i++)
        PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[n + i]);
    PyObject *res = tuple && kw
                        ? PyObject_CallFunctionObjArgs(g_fallback, self->name, tuple, kw, NULL)
                        : NULL;
    Py_XDECREF(tuple);
    Py_XDECREF(kw);
    return res;
}

/* The parsed form of one call. */
typedef struct {
    hg_attrs a;
    hg_tensor *in_stack[16], **in;
    int nin;
    PyObject *out_obj;
} parsed_call;

static void parsed_free(parsed_call *p)
{
    if (p->in != p->in_stack) PyMem_Free(p->in);
}

static int is_symbol(PyObject *o)
{
    return !hgpy_is_ndarray(o) && PyObject_HasAttrString(o, "_hg_symbol");
}

/* Returns 1 on success, 0 when the call must go to the Symbol fallback, -1 on error. */
static int parse_call(const hg_op_def *op, PyObject *const *args, Py_ssize_t npos,
                      PyObject *kwnames, parsed_call *p)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int varargs = (op->flags & HG_OP_VARARGS) != 0;
    int slots = varargs ? (int)npos : op->num_inputs, next_attr = 0;
    int max_in = (int)(npos + nkw) > slots ? (int)(npos + nkw) : slots;
    hg_attrs_set_defaults(op, &p->a);
    p->in = p->in_stack;
    p->nin = 0;
    p->out_obj = NULL;
    if (max_in > 16 && !(p->in = PyMem_Malloc(sizeof(hg_tensor *) * (size_t)max_in))) {
        p->in = p->in_stack;
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < max_in; i++) p->in[i] = NULL;
    for (Py_ssize_t i = 0; i < npos; i++) {
        PyObject *o = args[i];
        if (i < slots) {
            if (hgpy_is_ndarray(o)) {
                p->in[i] = hgpy_tensor(o);
                p->nin = (int)i + 1;
                continue;
            }
            if (o == Py_None) continue;
            if (is_symbol(o)) return 0;
            if (varargs) {
                hgpy_raise(hg_error(HG_ERR_TYPE, "%s: input %zd must be an NDArray, got %s",
                                    op->name, i, Py_TYPE(o)->tp_name));
                return -1;
            }
        }
        /* Positional values after the inputs are attributes in schema order, as MXNet's
         * generated functions take them (nd.clip(x, 0, 1), nd.dot(a, b, True)). */
        if (is_symbol(o)) return 0;
        if (next_attr >= op->num_attrs) {
            hgpy_raise(hg_error(HG_ERR_TYPE,
                                "%s takes at most %d input(s) and %d attribute(s); "
                                "got an extra positional argument of type %s",
                                op->name, slots, op->num_attrs, Py_TYPE(o)->tp_name));
            return -1;
        }
        if (hgpy_set_attr(op, next_attr++, o, &p->a) < 0) return -1;
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k), *val = args[npos + k];
        const char *ks = PyUnicode_AsUTF8(key);
        int idx;
        if (!ks) return -1;
        if (strcmp(ks, "out") == 0) {
            if (val != Py_None) p->out_obj = val;
            continue;
        }
        if (strcmp(ks, "name") == 0 || strcmp(ks, "attr") == 0 || (ks[0] == '_' && ks[1] == '_'))
            continue; /* symbol naming and annotations mean nothing imperatively */
        if ((idx = input_index(op, key)) >= 0) {
            if (val == Py_None) continue;
            if (!hgpy_is_ndarray(val)) {
                if (is_symbol(val)) return 0;
                hgpy_raise(hg_error(HG_ERR_TYPE, "%s: input '%s' must be an NDArray, got %s",
                                    op->name, ks, Py_TYPE(val)->tp_name));
                return -1;
            }
            if (p->in[idx]) {
                hgpy_raise(hg_error(HG_ERR_VALUE, "%s: input '%s' given twice", op->name, ks));
                return -1;
            }
            p->in[idx] = hgpy_tensor(val);
            if (idx + 1 > p->nin) p->nin = idx + 1;
            continue;
        }
        if ((idx = hg_attr_index(op, ks)) < 0) {
            if (is_symbol(val)) return 0;
            hgpy_raise(hg_attr_unknown(op, ks));
            return -1;
        }
        if (is_symbol(val)) return 0;
        if (hgpy_set_attr(op, idx, val, &p->a) < 0) return -1;
    }
    for (int i = 0; i < p->nin; i++) {
        if (!p->in[i]) {
            hgpy_raise(hg_error(HG_ERR_VALUE, "%s: input '%s' is missing", op->name,
                                op->input_names && op->input_names[i] ? op->input_names[i] : "?"));
            return -1;
        }
    }
    if (varargs) {
        int k = hg_attr_index(op, "num_args");
        if (k >= 0 && !p->a.v[k].is_set) {
            p->a.v[k].i = p->nin;
            p->a.v[k].is_set = true;
        }
    }
    hg_status st = hg_attrs_finish(op, &p->a);
    if (st) return hgpy_raise_int(st);
    return 1;
}

static PyObject *op_vectorcall(OpObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    const hg_op_def *op = self->op;
    parsed_call p;
    hg_tensor *out_stack[16], **out = out_stack;
    PyObject *result = NULL;
    int r = parse_call(op, args, PyVectorcall_NARGS(nargsf), kwnames, &p);
    if (r <= 0) {
        parsed_free(&p);
        return r == 0 ? call_fallback(self, args, nargsf, kwnames) : NULL;
    }
    int nout = hg_op_num_outputs(op, &p.a);
    if (nout > 16 && !(out = PyMem_Malloc(sizeof(hg_tensor *) * (size_t)nout))) {
        parsed_free(&p);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < nout; i++) out[i] = NULL;
    if (p.out_obj) {
        if (!hgpy_is_ndarray(p.out_obj)) {
            PyErr_Format(PyExc_TypeError, "%s: out must be an NDArray", op->name);
            goto done;
        }
        out[0] = hgpy_tensor(p.out_obj);
        hg_tensor_retain(out[0]);
    }
    hg_status st = hgpy_run(op, &p.a, p.nin, p.in, nout, out);
    if (st) {
        if (p.out_obj) hg_tensor_free(out[0]);
        hgpy_raise(st);
        goto done;
    }
    int nvis = hg_op_num_visible_outputs(op, &p.a);
    if (p.out_obj) {
        hg_tensor_free(out[0]);
        for (int i = 1; i < nout; i++) hg_tensor_free(out[i]);
        result = Py_NewRef(p.out_obj);
    } else if (nvis == 1) {
        for (int i = 1; i < nout; i++) hg_tensor_free(out[i]);
        result = hgpy_wrap(out[0]);
    } else {
        result = PyList_New(nvis);
        for (int i = 0; i < nout; i++) {
            if (i < nvis && result) {
                PyObject *w = hgpy_wrap(out[i]);
                if (!w) Py_CLEAR(result);
                else PyList_SET_ITEM(result, i, w);
            } else {
                hg_tensor_free(out[i]);
            }
        }
    }
done:
    parsed_free(&p);
    if (out != out_stack) PyMem_Free(out);
    return result;
}

/* op._infer(*inputs, **attrs) -> [(shape, dtype_flag)] of the outputs, without running. */
static PyObject *op_infer(OpObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames)
{
    const hg_op_def *op = self->op;
    parsed_call p;
    int r = parse_call(op, args, nargs, kwnames, &p);
    if (r <= 0) {
        parsed_free(&p);
        if (r == 0) PyErr_SetString(PyExc_TypeError, "_infer takes NDArrays only");
        return NULL;
    }
    int nout = hg_op_num_outputs(op, &p.a);
    hg_meta im[HG_MAX_IO], om[HG_MAX_IO];
    PyObject *res = NULL;
    hg_status st = HG_OK;
    if (p.nin > HG_MAX_IO || nout > HG_MAX_IO)
        st = hg_error(HG_ERR_VALUE, "%s: too many inputs or outputs to infer", op->name);
    for (int i = 0; st == HG_OK && i < p.nin; i++) im[i] = hg_meta_of(p.in[i]);
    for (int i = 0; st == HG_OK && i < nout; i++) {
        om[i].ndim = -1;
        om[i].dtype = p.nin ? p.in[0]->dtype : HG_DTYPE_F32;
    }
    if (st == HG_OK && p.nin != hg_op_num_inputs(op, &p.a))
        st = hg_error(HG_ERR_VALUE, "Operator %s expects %d input(s), got %d", op->name,
                      hg_op_num_inputs(op, &p.a), p.nin);
    if (st == HG_OK) st = op->infer(op, &p.a, p.nin, im, nout, om);
    parsed_free(&p);
    if (st) return hgpy_raise(st);
    res = PyList_New(nout);
    for (int i = 0; res && i < nout; i++) {
        PyObject *shape = PyTuple_New(om[i].ndim), *pair = NULL;
        for (int d = 0; shape && d < om[i].ndim; d++) {
            PyObject *dim = PyLong_FromLongLong(om[i].shape[d]);
            if (!dim) Py_CLEAR(shape);
            else PyTuple_SET_ITEM(shape, d, dim);
        }
        if (shape) pair = Py_BuildValue("(Ni)", shape, (int)om[i].dtype);
        if (!pair) Py_CLEAR(res);
        else PyList_SET_ITEM(res, i, pair);
    }
    return res;
}

static PyMethodDef k_op_methods[] = {
    {"_infer", (PyCFunction)(void (*)(void))op_infer, METH_FASTCALL | METH_KEYWORDS,
     "output (shape, dtype_flag) pairs for these inputs and attributes"},
    {NULL, NULL, 0, NULL},
};

static PyObject *op_call(PyObject *self, PyObject *args, PyObject *kw)
{
    return PyVectorcall_Call(self, args, kw);
}

static void op_dealloc(OpObject *self)
{
    Py_XDECREF(self->name);
    PyObject_Free(self);
}

static PyObject *op_repr(OpObject *self)
{
    return PyUnicode_FromFormat("<hybridgluon op %s>", self->op->name);
}

static PyObject *op_get_name(OpObject *self, void *c) { return Py_NewRef(self->name); }

/* The docstring, built from the registry: signature, summary, inputs and the attribute schema. */
static PyObject *op_get_doc(OpObject *self, void *c)
{
    const hg_op_def *op = self->op;
    PyObject *parts = PyList_New(0), *res = NULL;
    if (!parts) return NULL;
#define ADD(...)                                                                                \
    do {                                                                                        \
        PyObject *s_ = PyUnicode_FromFormat(__VA_ARGS__);                                       \
        if (!s_ || PyList_Append(parts, s_) < 0) { Py_XDECREF(s_); goto done; }                \
        Py_DECREF(s_);                                                                          \
    } while (0)
    ADD("%s(", op->name);
    int first = 1;
    for (const char *const *in = op->input_names; in && *in; in++, first = 0)
        ADD(first ? "%s%s" : ", %s%s", (op->flags & HG_OP_VARARGS) ? "*" : "", *in);
    for (int i = 0; i < op->num_attrs; i++, first = 0)
        ADD(first ? "%s=%s" : ", %s=%s", op->attrs[i].name,
            op->attrs[i].def ? op->attrs[i].def : "<required>");
    ADD(")\n\n%s\n", op->doc ? op->doc : "");
    if (op->input_names && op->input_names[0]) {
        ADD("\nInputs\n------\n");
        for (const char *const *in = op->input_names; *in; in++) ADD("%s : NDArray\n", *in);
    }
    if (op->num_attrs) {
        ADD("\nParameters\n----------\n");
        for (int i = 0; i < op->num_attrs; i++) {
            const hg_attr_spec *sp = &op->attrs[i];
            ADD("%s : %s%s%s%s\n    %s\n", sp->name, k_type_names[sp->type],
                (sp->flags & HG_ATTR_OPTIONAL) ? " or None" : "",
                (sp->flags & HG_ATTR_REQUIRED) ? ", required" : ", default=",
                (sp->flags & HG_ATTR_REQUIRED) ? "" : (sp->def ? sp->def : "None"),
                sp->doc ? sp->doc : "");
            if (sp->choices) {
                ADD("    one of:");
                for (const char *const *ch = sp->choices; *ch; ch++) ADD(" '%s'", *ch);
                ADD("\n");
            }
        }
    }
    if (op->aliases && op->aliases[0]) {
        ADD("\nAliases:");
        for (const char *const *al = op->aliases; *al; al++) ADD(" %s", *al);
        ADD("\n");
    }
#undef ADD
    {
        PyObject *empty = PyUnicode_FromString("");
        if (empty) res = PyUnicode_Join(empty, parts);
        Py_XDECREF(empty);
    }
done:
    Py_DECREF(parts);
    return res;
}

static PyGetSetDef k_op_getset[] = {
    {"__doc__", (getter)op_get_doc, NULL, "docstring generated from the op's schema", NULL},
    {"__name__", (getter)op_get_name, NULL, "op name", NULL},
    {"name", (getter)op_get_name, NULL, "op name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject HgOp_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hybridgluon._core.Op",
    .tp_basicsize = sizeof(OpObject),
    .tp_dealloc = (destructor)op_dealloc,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = op_call,
    .tp_repr = (reprfunc)op_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "a registered operator",
    .tp_getset = k_op_getset,
    .tp_methods = k_op_methods,
};

PyObject *hgpy_op_new(const hg_op_def *op)
{
    OpObject *o = PyObject_New(OpObject, &HgOp_Type);
    if (!o) return NULL;
    o->op = op;
    o->vectorcall = (vectorcallfunc)op_vectorcall;
    o->name = PyUnicode_FromString(op->name);
    return (PyObject *)o;
}

static PyObject *set_hooks(PyObject *self, PyObject *args)
{
    PyObject *fallback, *dtype_hook;
    if (!PyArg_ParseTuple(args, "OO", &fallback, &dtype_hook)) return NULL;
    Py_XSETREF(g_fallback, Py_NewRef(fallback));
    Py_XSETREF(g_dtype_hook, Py_NewRef(dtype_hook));
    Py_RETURN_NONE;
}

static PyMethodDef k_hook_method = {"_set_op_hooks", set_hooks, METH_VARARGS,
                                    "_set_op_hooks(fallback, dtype_hook)"};

int hgpy_init_op(PyObject *m)
{
    if (PyType_Ready(&HgOp_Type) < 0) return -1;
    PyObject *f = PyCFunction_NewEx(&k_hook_method, NULL, NULL);
    if (!f || PyModule_AddObject(m, "_set_op_hooks", f) < 0) return -1;
    Py_INCREF(&HgOp_Type);
    return PyModule_AddObject(m, "Op", (PyObject *)&HgOp_Type);
}
