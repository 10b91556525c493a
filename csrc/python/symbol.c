/* _core.Symbol: the C symbol (graph/symbol.h) as a Python object, plus module functions to
 * build symbols (variables, op applications, groups) and to read and write MXNet JSON. The
 * Python class hybridgluon.symbol.Symbol derives from it and adds the MXNet API. */
#include "python/binding.h"

#include <stdlib.h>
#include <string.h>

#include "graph/grad.h"
#include "graph/symbol.h"

typedef struct {
    PyObject_HEAD hg_symbol *s;
} SymbolObject;

static PyTypeObject HgSymbol_Type;
static PyTypeObject *g_symbol_cls = &HgSymbol_Type;

static PyObject *wrap_symbol(hg_symbol *s)
{
    SymbolObject *o = (SymbolObject *)g_symbol_cls->tp_alloc(g_symbol_cls, 0);
    if (!o) {
        hg_symbol_free(s);
        return NULL;
    }
    o->s = s;
    return (PyObject *)o;
}

hg_symbol *hgpy_symbol_ptr(PyObject *o);

static hg_symbol *as_symbol(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &HgSymbol_Type)) {
        PyErr_Format(PyExc_TypeError, "expected a Symbol, got %s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((SymbolObject *)o)->s;
}

hg_symbol *hgpy_symbol_ptr(PyObject *o) { return as_symbol(o); }
PyObject *hgpy_wrap_symbol(hg_symbol *s) { return wrap_symbol(s); }

static void sym_dealloc(SymbolObject *self)
{
    hg_symbol_free(self->s);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Converts a dict str->str into parallel arrays borrowed from the dict's items list. */
static int attrs_from_dict(PyObject *d, PyObject **items, int *n, const char ***keys,
                           const char ***vals)
{
    *items = NULL;
    *n = 0;
    *keys = *vals = NULL;
    if (!d || d == Py_None) return 0;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "attributes must be a dict of str to str");
        return -1;
    }
    *items = PyDict_Items(d);
    if (!*items) return -1;
    Py_ssize_t m = PyList_GET_SIZE(*items);
    *keys = PyMem_Malloc(sizeof(char *) * (size_t)(m ? m : 1));
    *vals = PyMem_Malloc(sizeof(char *) * (size_t)(m ? m : 1));
    if (!*keys || !*vals) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *kv = PyList_GET_ITEM(*items, i);
        PyObject *k = PyTuple_GET_ITEM(kv, 0), *v = PyTuple_GET_ITEM(kv, 1);
        if (!PyUnicode_Check(k) || !PyUnicode_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "attribute keys and values must be str");
            return -1;
        }
        (*keys)[i] = PyUnicode_AsUTF8(k);
        (*vals)[i] = PyUnicode_AsUTF8(v);
        if (!(*keys)[i] || !(*vals)[i]) return -1;
    }
    *n = (int)m;
    return 0;
}

static void attrs_release(PyObject *items, const char **keys, const char **vals)
{
    Py_XDECREF(items);
    PyMem_Free(keys);
    PyMem_Free(vals);
}

static PyObject *symbol_var(PyObject *mod, PyObject *args)
{
    const char *name;
    PyObject *attrs = Py_None, *items;
    const char **keys, **vals;
    int n;
    if (!PyArg_ParseTuple(args, "s|O", &name, &attrs)) return NULL;
    if (attrs_from_dict(attrs, &items, &n, &keys, &vals) < 0) {
        attrs_release(items, keys, vals);
        return NULL;
    }
    hg_symbol *s;
    hg_status st = hg_symbol_var(name, n, keys, vals, &s);
    attrs_release(items, keys, vals);
    return st ? hgpy_raise(st) : wrap_symbol(s);
}

static PyObject *symbol_op(PyObject *mod, PyObject *args)
{
    const char *opname, *name;
    PyObject *attrs, *inputs, *items = NULL;
    const char **keys = NULL, **vals = NULL;
    int n;
    PyObject *subgraphs = Py_None;
    if (!PyArg_ParseTuple(args, "ssOO|O", &opname, &name, &attrs, &inputs, &subgraphs)) return NULL;
    const hg_op_def *op = hg_registry_find(opname);
    if (!op) return hgpy_raise(hg_error(HG_ERR_VALUE, "operator '%s' is not registered", opname));
    PyObject *seq = PySequence_Fast(inputs, "inputs must be a sequence of Symbols");
    if (!seq) return NULL;
    Py_ssize_t nin = PySequence_Fast_GET_SIZE(seq);
    const hg_symbol **ins = PyMem_Malloc(sizeof(hg_symbol *) * (size_t)(nin ? nin : 1));
    const hg_symbol **subs = NULL;
    PyObject *res = NULL, *subseq = NULL;
    Py_ssize_t nsub = 0;
    if (!ins) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nin; i++)
        if (!(ins[i] = as_symbol(PySequence_Fast_GET_ITEM(seq, i)))) goto done;
    if (attrs_from_dict(attrs, &items, &n, &keys, &vals) < 0) goto done;
    if (subgraphs != Py_None) { /* control flow: the node holds these graphs */
        if (!(subseq = PySequence_Fast(subgraphs, "subgraphs must be a sequence of Symbols")))
            goto done;
        nsub = PySequence_Fast_GET_SIZE(subseq);
        if (!(subs = PyMem_Malloc(sizeof(hg_symbol *) * (size_t)(nsub ? nsub : 1)))) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < nsub; i++)
            if (!(subs[i] = as_symbol(PySequence_Fast_GET_ITEM(subseq, i)))) goto done;
    }
    hg_symbol *s;
    hg_status st = subs ? hg_symbol_op_sub(op, name, n, keys, vals, (int)nin, ins, (int)nsub, subs,
                                           &s)
                        : hg_symbol_op(op, name, n, keys, vals, (int)nin, ins, &s);
    res = st ? hgpy_raise(st) : wrap_symbol(s);
done:
    attrs_release(items, keys, vals);
    PyMem_Free(subs);
    Py_XDECREF(subseq);
    PyMem_Free(ins);
    Py_DECREF(seq);
    return res;
}

/* (cut graph, [outside values]) of MXNet's _cut_subgraph (hg_symbol_cut_subgraph). */
static PyObject *symbol_cut_subgraph(PyObject *mod, PyObject *arg)
{
    hg_symbol *s = as_symbol(arg), *cut = NULL, **outside = NULL;
    int n = 0;
    if (!s) return NULL;
    hg_status st = hg_symbol_cut_subgraph(s, &cut, &n, &outside);
    if (st) return hgpy_raise(st);
    PyObject *list = PyList_New(n), *res = NULL;
    for (int i = 0; i < n; i++) {
        PyObject *o = list ? wrap_symbol(outside[i]) : NULL;
        if (!o) {
            for (int k = i + (list ? 1 : 0); k < n; k++) hg_symbol_free(outside[k]);
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, o);
    }
    free(outside);
    PyObject *g = wrap_symbol(cut);
    if (g && list) res = Py_BuildValue("(NN)", g, list);
    else {
        Py_XDECREF(g);
        Py_XDECREF(list);
    }
    return res;
}

/* The subgraphs of the head node of s (a control-flow node), as symbols. */
static PyObject *symbol_subgraphs(PyObject *mod, PyObject *arg)
{
    hg_symbol *s = as_symbol(arg);
    if (!s) return NULL;
    hg_snode *nd = s->n ? s->heads[0].node : NULL;
    int n = nd ? nd->nsub : 0;
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        hg_symbol *c = NULL;
        hg_status st = hg_symbol_group(1, (const hg_symbol *const *)&nd->sub[i], &c);
        PyObject *o = st ? hgpy_raise(st) : wrap_symbol(c);
        if (!o) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, o);
    }
    return list;
}

static PyObject *symbol_group(PyObject *mod, PyObject *list)
{
    PyObject *seq = PySequence_Fast(list, "Group expects a list of Symbols");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const hg_symbol **syms = PyMem_Malloc(sizeof(hg_symbol *) * (size_t)(n ? n : 1));
    PyObject *res = NULL;
    if (!syms) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(syms[i] = as_symbol(PySequence_Fast_GET_ITEM(seq, i)))) goto done;
    hg_symbol *s;
    hg_status st = hg_symbol_group((int)n, syms, &s);
    res = st ? hgpy_raise(st) : wrap_symbol(s);
done:
    PyMem_Free(syms);
    Py_DECREF(seq);
    return res;
}

static PyObject *symbol_from_json(PyObject *mod, PyObject *text)
{
    Py_ssize_t len;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "json_str must be a str");
        return NULL;
    }
    const char *s = PyUnicode_AsUTF8AndSize(text, &len);
    if (!s) {
        /* A str holding a lone surrogate ('\ud83d' decoded by itself) has no UTF-8 form. */
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        Py_ssize_t at = -1;
        if (value) PyUnicodeEncodeError_GetStart(value, &at);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        PyErr_Clear();
        return hgpy_raise(hg_error(HG_ERR_VALUE,
                                   "symbol JSON: character %zd is a lone UTF-16 "
                                   "surrogate, which is not text (decode the file's surrogate "
                                   "pairs, or pass the JSON undecoded)",
                                   at));
    }
    hg_symbol *sym;
    hg_status st = hg_symbol_from_json(s, (size_t)len, &sym);
    return st ? hgpy_raise(st) : wrap_symbol(sym);
}

/* op_num_inputs(op, attrs) -> the number of inputs the op takes with these string attributes
 * (FullyConnected with no_bias takes 2, Concat num_args...). */
static PyObject *op_num_inputs(PyObject *mod, PyObject *args)
{
    const char *opname;
    PyObject *attrs, *items = NULL;
    const char **keys = NULL, **vals = NULL;
    int n;
    if (!PyArg_ParseTuple(args, "sO", &opname, &attrs)) return NULL;
    const hg_op_def *op = hg_registry_find(opname);
    if (!op) return hgpy_raise(hg_error(HG_ERR_VALUE, "operator '%s' is not registered", opname));
    if (attrs_from_dict(attrs, &items, &n, &keys, &vals) < 0) {
        attrs_release(items, keys, vals);
        return NULL;
    }
    hg_attrs a;
    hg_status st = HG_OK;
    hg_attrs_set_defaults(op, &a);
    for (int i = 0; i < n && st == HG_OK; i++) {
        if (keys[i][0] == '_' && keys[i][1] == '_') continue;
        int k = hg_attr_index(op, keys[i]);
        st = k < 0 ? hg_attr_unknown(op, keys[i]) : hg_attr_parse(op, k, vals[i], &a);
    }
    attrs_release(items, keys, vals);
    if (st) return hgpy_raise(st);
    return PyLong_FromLong(hg_op_num_inputs(op, &a));
}

/* symbol_internal(sym, node, index): output `index` of the node at topological position `node`. */
static PyObject *symbol_internal(PyObject *mod, PyObject *args)
{
    PyObject *obj;
    int node, index;
    if (!PyArg_ParseTuple(args, "Oii", &obj, &node, &index)) return NULL;
    hg_symbol *s = as_symbol(obj);
    if (!s) return NULL;
    hg_snode **nodes;
    int n;
    hg_status st = hg_symbol_topo(s, &nodes, &n);
    if (st) return hgpy_raise(st);
    if (node < 0 || node >= n || index < 0 || index >= nodes[node]->nout) {
        free(nodes);
        return hgpy_raise(hg_error(HG_ERR_INDEX, "no output %d of node %d", index, node));
    }
    hg_symbol one = {1, &(hg_sentry){nodes[node], index, 0}}, *out;
    const hg_symbol *list[1] = {&one};
    st = hg_symbol_group(1, list, &out);
    free(nodes);
    return st ? hgpy_raise(st) : wrap_symbol(out);
}

static PyObject *set_symbol_class(PyObject *mod, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &HgSymbol_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a subclass of _core.Symbol");
        return NULL;
    }
    Py_INCREF(cls);
    g_symbol_cls = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

static PyObject *m_tojson(SymbolObject *self, PyObject *unused)
{
    char *text;
    hg_status st = hg_symbol_to_json(self->s, &text);
    if (st) return hgpy_raise(st);
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

static PyObject *m_output(SymbolObject *self, PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    hg_symbol *s;
    hg_status st = hg_symbol_output(self->s, (int)i, &s);
    return st ? hgpy_raise(st) : wrap_symbol(s);
}

/* [(name, op_name or None, {attrs}, [(node, index, version)], nout, nvisible)] in topological
 * order, and the heads as [(node, index)]: everything the Python API derives its lists from. */
static PyObject *m_graph(SymbolObject *self, PyObject *unused)
{
    hg_snode **nodes;
    int n, *off, *in_idx, *head_idx;
    hg_status st = hg_symbol_topo(self->s, &nodes, &n);
    if (st) return hgpy_raise(st);
    st = hg_symbol_topo_positions(self->s, nodes, n, &off, &in_idx, &head_idx);
    if (st) {
        free(nodes);
        return hgpy_raise(st);
    }
    PyObject *list = PyList_New(n), *heads = NULL, *res = NULL;
    /* Every object built here is checked: a name that cannot be decoded raises, never leaves
     * a NULL in a list or an exception set on a result. */
    for (int i = 0; list && i < n; i++) {
        hg_snode *nd = nodes[i];
        PyObject *attrs = PyDict_New(), *ins = PyList_New(nd->nin), *item = NULL;
        for (int k = 0; attrs && k < nd->nattr; k++) {
            PyObject *v = PyUnicode_FromString(nd->vals[k]);
            if (!v || PyDict_SetItemString(attrs, nd->keys[k], v) < 0) Py_CLEAR(attrs);
            Py_XDECREF(v);
        }
        for (int k = 0; ins && k < nd->nin; k++) {
            PyObject *e = Py_BuildValue("(iii)", in_idx[off[i] + k], nd->in[k].index,
                                        nd->in[k].version);
            if (!e) Py_CLEAR(ins);
            else PyList_SET_ITEM(ins, k, e);
        }
        if (attrs && ins) /* "N" takes both references, on failure too */
            item = Py_BuildValue("(szNNii)", nd->name, nd->op ? nd->op->name : NULL, attrs, ins,
                                 nd->nout, nd->nvisible);
        else {
            Py_XDECREF(attrs);
            Py_XDECREF(ins);
        }
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    if (list && (heads = PyList_New(self->s->n))) {
        for (int h = 0; heads && h < self->s->n; h++) {
            PyObject *e = Py_BuildValue("(ii)", head_idx[h], self->s->heads[h].index);
            if (!e) Py_CLEAR(heads);
            else PyList_SET_ITEM(heads, h, e);
        }
    }
    if (list && heads) res = Py_BuildValue("(NN)", list, heads);
    else {
        Py_XDECREF(list);
        Py_XDECREF(heads);
    }
    free(nodes);
    free(off);
    free(in_idx);
    free(head_idx);
    return res;
}

/* Every node's visible outputs, in topological order, as one group (get_internals). */
static PyObject *m_internals(SymbolObject *self, PyObject *unused)
{
    hg_snode **nodes;
    int n, total = 0;
    hg_status st = hg_symbol_topo(self->s, &nodes, &n);
    if (st) return hgpy_raise(st);
    for (int i = 0; i < n; i++) total += nodes[i]->nvisible;
    hg_symbol view = {total, malloc(sizeof(hg_sentry) * (size_t)(total ? total : 1))}, *out;
    if (!view.heads) {
        free(nodes);
        return PyErr_NoMemory();
    }
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < nodes[i]->nvisible; j++) view.heads[k++] = (hg_sentry){nodes[i], j, 0};
    const hg_symbol *list[1] = {&view};
    st = hg_symbol_group(1, list, &out);
    free(view.heads);
    free(nodes);
    return st ? hgpy_raise(st) : wrap_symbol(out);
}

/* _gradient(wrt_names, head_grad_names=None): a symbol whose outputs are the gradients of this
 * symbol's outputs with respect to the named variables. Head gradients are new variables with
 * the given names, or ones when None. */
static PyObject *m_gradient(SymbolObject *self, PyObject *args)
{
    PyObject *wrt_names, *hg_names = Py_None;
    if (!PyArg_ParseTuple(args, "O!|O", &PyList_Type, &wrt_names, &hg_names)) return NULL;
    if (hg_names != Py_None &&
        (!PyList_Check(hg_names) || PyList_GET_SIZE(hg_names) != self->s->n)) {
        PyErr_Format(PyExc_ValueError, "head_grad_names must be a list of %d names", self->s->n);
        return NULL;
    }
    Py_ssize_t nw = PyList_GET_SIZE(wrt_names);
    hg_snode **nodes = NULL, **wrt = calloc((size_t)nw + 1, sizeof *wrt);
    hg_sentry *hgr = calloc((size_t)self->s->n + 1, sizeof *hgr);
    hg_symbol **hsyms = calloc((size_t)self->s->n + 1, sizeof *hsyms);
    hg_symbol *out = NULL;
    PyObject *res = NULL;
    int n = 0;
    if (!wrt || !hgr || !hsyms) {
        PyErr_NoMemory();
        goto done;
    }
    hg_status st = hg_symbol_topo(self->s, &nodes, &n);
    if (st) {
        hgpy_raise(st);
        goto done;
    }
    for (Py_ssize_t w = 0; w < nw; w++) {
        const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(wrt_names, w));
        if (!name) goto done;
        for (int i = 0; i < n && !wrt[w]; i++)
            if (!nodes[i]->op && strcmp(nodes[i]->name, name) == 0) wrt[w] = nodes[i];
        if (!wrt[w]) {
            PyErr_Format(PyExc_ValueError, "the symbol has no variable named '%s'", name);
            goto done;
        }
    }
    for (int h = 0; hg_names != Py_None && h < self->s->n; h++) {
        const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(hg_names, h));
        if (!name) goto done;
        st = hg_symbol_var(name, 0, NULL, NULL, &hsyms[h]);
        if (st) {
            hgpy_raise(st);
            goto done;
        }
        hgr[h] = hsyms[h]->heads[0];
    }
    st = hg_graph_grad(self->s->n, self->s->heads, hgr, (int)nw, wrt, &out);
    res = st ? hgpy_raise(st) : wrap_symbol(out);
done:
    for (int h = 0; hsyms && h < self->s->n; h++) hg_symbol_free(hsyms[h]);
    free(hsyms);
    free(hgr);
    free(wrt);
    free(nodes);
    return res;
}

/* _compose({name: symbol}): a copy with those variables replaced. */
static PyObject *m_compose(SymbolObject *self, PyObject *dict)
{
    if (!PyDict_Check(dict)) return PyErr_Format(PyExc_TypeError, "expected a dict");
    Py_ssize_t n = PyDict_Size(dict), pos = 0, i = 0;
    const char **names = calloc((size_t)n + 1, sizeof *names);
    const hg_symbol **with = calloc((size_t)n + 1, sizeof *with);
    PyObject *k, *v, *res = NULL;
    if (!names || !with) {
        PyErr_NoMemory();
        goto done;
    }
    while (PyDict_Next(dict, &pos, &k, &v)) {
        if (!(names[i] = PyUnicode_AsUTF8(k)) || !(with[i] = as_symbol(v))) goto done;
        i++;
    }
    hg_symbol *out = NULL;
    hg_status st = hg_symbol_compose(self->s, (int)n, names, with, &out);
    res = st ? hgpy_raise(st) : wrap_symbol(out);
done:
    free(names);
    free(with);
    return res;
}

/* _set_attrs({key: value}): adds attributes to the node of a single-output symbol. */
static PyObject *m_set_attrs(SymbolObject *self, PyObject *dict)
{
    if (self->s->n != 1)
        return hgpy_raise(hg_error(HG_ERR_VALUE,
                                   "_set_attr: a group of %d symbols has no one "
                                   "node to set attributes on",
                                   self->s->n));
    PyObject *items;
    const char **keys, **vals;
    int n;
    if (attrs_from_dict(dict, &items, &n, &keys, &vals) < 0) {
        attrs_release(items, keys, vals);
        return NULL;
    }
    hg_status st = hg_snode_set_attrs(self->s->heads[0].node, n, keys, vals);
    attrs_release(items, keys, vals);
    if (st) return hgpy_raise(st);
    Py_RETURN_NONE;
}

/* _set_origin(text): where the nodes of this symbol's heads were made (for error messages). */
static PyObject *m_set_origin(SymbolObject *self, PyObject *text)
{
    const char *t = PyUnicode_AsUTF8(text);
    if (!t) return NULL;
    for (int h = 0; h < self->s->n; h++) {
        hg_snode *n = self->s->heads[h].node;
        if (!n->op) continue;
        size_t len = strlen(t) + 1;
        char *copy = malloc(len);
        if (!copy) return PyErr_NoMemory();
        memcpy(copy, t, len);
        free(n->origin);
        n->origin = copy;
    }
    Py_RETURN_NONE;
}

static PyObject *get_num_outputs(SymbolObject *self, void *c)
{
    return PyLong_FromLong(self->s->n);
}

static PyMethodDef k_sym_methods[] = {
    {"tojson", (PyCFunction)m_tojson, METH_NOARGS, "the symbol as MXNet 1.x JSON text"},
    {"_output", (PyCFunction)m_output, METH_O, "the i-th output as a symbol"},
    {"_graph", (PyCFunction)m_graph, METH_NOARGS, "(nodes, heads) in topological order"},
    {"_internals", (PyCFunction)m_internals, METH_NOARGS, "every node's outputs as a group"},
    {"_set_origin", (PyCFunction)m_set_origin, METH_O, "record where the head nodes were made"},
    {"_set_attrs", (PyCFunction)m_set_attrs, METH_O, "add attributes to the head node"},
    {"_compose", (PyCFunction)m_compose, METH_O, "copy with variables replaced by symbols"},
    {"_gradient", (PyCFunction)m_gradient, METH_VARARGS,
     "_gradient(wrt_names, head_grad_names=None): symbol of the gradients"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef k_sym_getset[] = {
    {"_num_outputs", (getter)get_num_outputs, NULL, "number of outputs", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HgSymbol_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hybridgluon._core.Symbol",
    .tp_basicsize = sizeof(SymbolObject),
    .tp_dealloc = (destructor)sym_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "C base of hybridgluon.symbol.Symbol",
    .tp_methods = k_sym_methods,
    .tp_getset = k_sym_getset,
};

static PyMethodDef k_functions[] = {
    {"symbol_var", symbol_var, METH_VARARGS, "symbol_var(name, attrs=None)"},
    {"symbol_op", symbol_op, METH_VARARGS, "symbol_op(op, name, attrs, inputs)"},
    {"symbol_group", symbol_group, METH_O, "symbol_group([symbols])"},
    {"symbol_cut_subgraph", symbol_cut_subgraph, METH_O,
     "symbol_cut_subgraph(sym) -> (cut graph, [outside values])"},
    {"symbol_subgraphs", symbol_subgraphs, METH_O, "symbol_subgraphs(sym): its head's subgraphs"},
    {"symbol_from_json", symbol_from_json, METH_O, "symbol_from_json(text)"},
    {"op_num_inputs", op_num_inputs, METH_VARARGS, "op_num_inputs(op, attrs)"},
    {"symbol_internal", symbol_internal, METH_VARARGS, "symbol_internal(sym, node, index)"},
    {"_set_symbol_class", set_symbol_class, METH_O, "class that symbols are created as"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_symbol(PyObject *m)
{
    if (PyType_Ready(&HgSymbol_Type) < 0) return -1;
    Py_INCREF(&HgSymbol_Type);
    if (PyModule_AddObject(m, "Symbol", (PyObject *)&HgSymbol_Type) < 0) return -1;
    return PyModule_AddFunctions(m, k_functions);
}
