/* _core's profiler functions: thin wrappers over core/profiler.h for hybridgluon.profiler,
 * which keeps the configuration and formats the aggregate table. */
#include "python/binding.h"

#include "core/profiler.h"

static PyObject *set_config(PyObject *self, PyObject *arg)
{
    unsigned long kinds = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    hg_prof_set_config((unsigned)kinds);
    Py_RETURN_NONE;
}

static PyObject *set_state(PyObject *self, PyObject *args)
{
    int run, paused;
    if (!PyArg_ParseTuple(args, "pp", &run, &paused)) return NULL;
    hg_prof_set_state(run, paused);
    Py_RETURN_NONE;
}

static PyObject *active(PyObject *self, PyObject *arg)
{
    unsigned long kind = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    return PyBool_FromLong(hg_prof_is_active((unsigned)kind));
}

static PyObject *dropped(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(hg_prof_dropped());
}

static PyObject *now(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(hg_prof_now());
}

/* _prof_record(cat, name, arg or None, ph, start_ns, dur_ns, value) */
static PyObject *record(PyObject *self, PyObject *args)
{
    const char *cat, *name, *arg, *ph;
    long long start, dur, value;
    if (!PyArg_ParseTuple(args, "sszsLLL", &cat, &name, &arg, &ph, &start, &dur, &value))
        return NULL;
    if (strlen(ph) != 1 || !strchr("XCi", ph[0]))
        return PyErr_Format(PyExc_ValueError, "profiler: unknown event phase '%s'", ph);
    if (!hg_prof_record(cat, name, arg, ph[0], start, dur, value)) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* _prof_set_scope(prefix or None, category or None) -> (previous prefix, previous category) */
static PyObject *set_scope(PyObject *self, PyObject *args)
{
    const char *prefix, *cat;
    if (!PyArg_ParseTuple(args, "zz", &prefix, &cat)) return NULL;
    char *prev_cat = NULL, *prev = hg_prof_set_scope(prefix, cat, &prev_cat);
    PyObject *res = Py_BuildValue("(zz)", prev, prev_cat);
    free(prev);
    free(prev_cat);
    return res;
}

static PyObject *dump(PyObject *self, PyObject *arg)
{
    int clear = PyObject_IsTrue(arg);
    if (clear < 0) return NULL;
    char *text = NULL;
    size_t len = 0;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_prof_dump_json(clear, &text, &len);
    Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    PyObject *res = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
    free(text);
    return res;
}

static void add_stat(void *ctx, int kind, const char *cat, const char *name, int64_t count,
                     double total, double min, double max)
{
    PyObject *list = ctx;
    if (PyErr_Occurred()) return;
    PyObject *t = Py_BuildValue("(issLddd)", kind, cat, name, (long long)count, total, min, max);
    if (t) PyList_Append(list, t);
    Py_XDECREF(t);
}

/* _prof_aggregate(reset) -> [(kind, category, name, count, total, min, max)], kind 0 in ns,
 * kind 1 in bytes. */
static PyObject *aggregate(PyObject *self, PyObject *arg)
{
    int reset = PyObject_IsTrue(arg);
    if (reset < 0) return NULL;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    hg_status st = hg_prof_aggregate(reset, add_stat, list);
    if (PyErr_Occurred()) Py_CLEAR(list);
    if (st != HG_OK) {
        Py_XDECREF(list);
        return hgpy_raise(st);
    }
    return list;
}

static PyMethodDef k_functions[] = {
    {"_prof_set_config", set_config, METH_O, "_prof_set_config(kinds): what running records"},
    {"_prof_set_state", set_state, METH_VARARGS, "_prof_set_state(run, paused)"},
    {"_prof_active", active, METH_O, "_prof_active(kind): whether kind is recorded now"},
    {"_prof_dropped", dropped, METH_NOARGS,
     "_prof_dropped(): events dropped for want of memory since the start"},
    {"_prof_now", now, METH_NOARGS, "_prof_now(): the profiler's clock in nanoseconds"},
    {"_prof_record", record, METH_VARARGS,
     "_prof_record(cat, name, arg, ph, start_ns, dur_ns, value): one event on this thread"},
    {"_prof_set_scope", set_scope, METH_VARARGS,
     "_prof_set_scope(prefix, category) -> previous (prefix, category): this thread's scope"},
    {"_prof_dump", dump, METH_O, "_prof_dump(clear) -> Chrome trace JSON text"},
    {"_prof_aggregate", aggregate, METH_O,
     "_prof_aggregate(reset) -> [(kind, cat, name, count, total, min, max)]"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_profiler(PyObject *m)
{
    if (PyModule_AddFunctions(m, k_functions) < 0) return -1;
    static const struct {
        const char *name;
        unsigned value;
    } k_kinds[] = {{"PROF_IMPERATIVE", HG_PROF_IMPERATIVE},
                   {"PROF_SYMBOLIC", HG_PROF_SYMBOLIC},
                   {"PROF_MEMORY", HG_PROF_MEMORY},
                   {"PROF_API", HG_PROF_API},
                   {"PROF_USER", HG_PROF_USER},
                   {"PROF_AGGREGATE", HG_PROF_AGGREGATE}};
    for (size_t i = 0; i < (size_t)HG_COUNT(k_kinds); i++)
        if (PyModule_AddIntConstant(m, k_kinds[i].name, (long)k_kinds[i].value) < 0) return -1;
    return 0;
}
