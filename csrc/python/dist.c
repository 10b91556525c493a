/* _core's distributed functions: thin wrappers over dist/dist.h for hybridgluon.distributed,
 * which gets the MPI handles from mpi4py. Every collective runs with the GIL released (the
 * caller's list keeps the arrays alive); dist.h serialises them. */
#include "python/binding.h"

#include "dist/dist.h"

/* _dist_init(handle_size, comm, op_sum, in_place, f32, f64, i32, i64, u8, u16, byte,
 *            timeout_s, bucket_bytes) */
static PyObject *dist_init(PyObject *self, PyObject *args)
{
    hg_dist_handles h = {0};
    long long v[10];
    double timeout;
    unsigned long long bucket;
    if (!PyArg_ParseTuple(args, "iLLLLLLLLLLdK", &h.handle_size, &v[0], &v[1], &v[2], &v[3], &v[4],
                          &v[5], &v[6], &v[7], &v[8], &v[9], &timeout, &bucket))
        return NULL;
    h.comm = (intptr_t)v[0];
    h.op_sum = (intptr_t)v[1];
    h.in_place = (intptr_t)v[2];
    h.t_f32 = (intptr_t)v[3];
    h.t_f64 = (intptr_t)v[4];
    h.t_i32 = (intptr_t)v[5];
    h.t_i64 = (intptr_t)v[6];
    h.t_u8 = (intptr_t)v[7];
    h.t_u16 = (intptr_t)v[8];
    h.t_byte = (intptr_t)v[9];
    hg_status st = hg_dist_init(&h, timeout, (size_t)bucket);
    if (st != HG_OK) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *dist_rank(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(hg_dist_rank());
}
static PyObject *dist_size(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(hg_dist_size());
}

static PyObject *dist_set_timeout(PyObject *self, PyObject *arg)
{
    double t = PyFloat_AsDouble(arg);
    if (PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(hg_dist_set_timeout(t));
}

/* The tensors of a list or tuple of NDArrays, in a new array (free it), or NULL with an error. */
static hg_tensor **tensors_of(PyObject *seq, Py_ssize_t *n, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, "a list of NDArrays");
    if (!fast) return NULL;
    *n = PySequence_Fast_GET_SIZE(fast);
    hg_tensor **ts = PyMem_Malloc(sizeof *ts * (size_t)(*n ? *n : 1));
    if (!ts) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (!hgpy_is_ndarray(o)) {
            PyErr_Format(PyExc_TypeError, "%s: item %zd is %s, not an NDArray", what, i,
                         Py_TYPE(o)->tp_name);
            PyMem_Free(ts);
            Py_DECREF(fast);
            return NULL;
        }
        ts[i] = hgpy_tensor(o);
    }
    Py_DECREF(fast);
    return ts;
}

/* fn(arrays, n, arg) on a list of NDArrays and an int, with the GIL released. */
static PyObject *run_on_list(PyObject *args, const char *what,
                             hg_status (*fn)(hg_tensor *const *, int, int))
{
    PyObject *seq;
    int arg;
    if (!PyArg_ParseTuple(args, "Oi", &seq, &arg)) return NULL;
    Py_ssize_t n;
    hg_tensor **ts = tensors_of(seq, &n, what);
    if (!ts) return NULL;
    if (n > INT_MAX) {
        PyMem_Free(ts);
        return PyErr_Format(PyExc_ValueError, "%s: %zd arrays", what, n);
    }
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = fn(ts, (int)n, arg);
    Py_END_ALLOW_THREADS PyMem_Free(ts);
    if (st != HG_OK) return hgpy_raise(st);
    Py_RETURN_NONE;
}

/* _dist_allreduce(arrays, flags): in place */
static PyObject *dist_allreduce(PyObject *self, PyObject *args)
{
    return run_on_list(args, "allreduce", hg_dist_allreduce);
}

/* _dist_broadcast(arrays, root): in place */
static PyObject *dist_broadcast(PyObject *self, PyObject *args)
{
    return run_on_list(args, "broadcast", hg_dist_broadcast);
}

static PyObject *dist_allgather(PyObject *self, PyObject *arg)
{
    if (!hgpy_is_ndarray(arg))
        return PyErr_Format(PyExc_TypeError, "allgather: expected an NDArray, got %s",
                            Py_TYPE(arg)->tp_name);
    hg_tensor *out = NULL, *t = hgpy_tensor(arg);
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_dist_allgather(t, &out);
    Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    return hgpy_wrap(out);
}

static PyObject *dist_barrier(PyObject *self, PyObject *unused)
{
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_dist_barrier();
    Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *dist_abort(PyObject *self, PyObject *arg)
{
    int code = PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    Py_BEGIN_ALLOW_THREADS hg_dist_abort(code);
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

#define SCHED_CAPSULE "hybridgluon.dist_sched"

static void sched_destroy(PyObject *cap)
{
    hg_dist_sched *s = PyCapsule_GetPointer(cap, SCHED_CAPSULE);
    if (!s) {
        PyErr_Clear();
        return;
    }
    Py_BEGIN_ALLOW_THREADS hg_dist_sched_free(s); /* waits for the communication thread */
    Py_END_ALLOW_THREADS
}

/* _dist_sched_new(grads, flags, bucket_bytes) -> capsule */
static PyObject *dist_sched_new(PyObject *self, PyObject *args)
{
    PyObject *seq;
    int flags;
    unsigned long long bucket;
    if (!PyArg_ParseTuple(args, "OiK", &seq, &flags, &bucket)) return NULL;
    Py_ssize_t n;
    hg_tensor **ts = tensors_of(seq, &n, "schedule");
    if (!ts) return NULL;
    if (n > INT_MAX) {
        PyMem_Free(ts);
        return PyErr_Format(PyExc_ValueError, "schedule: %zd arrays", n);
    }
    hg_dist_sched *s = NULL;
    hg_status st = hg_dist_sched_new(ts, (int)n, flags, (size_t)bucket, &s);
    PyMem_Free(ts);
    if (st != HG_OK) return hgpy_raise(st);
    PyObject *cap = PyCapsule_New(s, SCHED_CAPSULE, sched_destroy);
    if (!cap) hg_dist_sched_free(s);
    return cap;
}

static PyObject *dist_sched_finish(PyObject *self, PyObject *cap)
{
    hg_dist_sched *s = PyCapsule_GetPointer(cap, SCHED_CAPSULE);
    if (!s) return NULL;
    hg_status st;
    Py_BEGIN_ALLOW_THREADS st = hg_dist_sched_finish(s);
    Py_END_ALLOW_THREADS if (st != HG_OK) return hgpy_raise(st);
    Py_RETURN_NONE;
}

static PyObject *dist_sched_stats(PyObject *self, PyObject *cap)
{
    hg_dist_sched *s = PyCapsule_GetPointer(cap, SCHED_CAPSULE);
    if (!s) return NULL;
    int64_t over = 0, fin = 0;
    hg_dist_sched_stats(s, &over, &fin);
    return Py_BuildValue("(LL)", (long long)over, (long long)fin);
}

static PyMethodDef k_functions[] = {
    {"_dist_sched_new", dist_sched_new, METH_VARARGS,
     "_dist_sched_new(grads, flags, bucket_bytes) -> schedule: reduce these buffers during "
     "backward"},
    {"_dist_sched_finish", dist_sched_finish, METH_O,
     "_dist_sched_finish(schedule): reduce what backward did not; every buffer holds its sum"},
    {"_dist_sched_stats", dist_sched_stats, METH_O,
     "_dist_sched_stats(schedule) -> (buckets reduced in backward, buffers reduced at finish)"},
    {"_dist_init", dist_init, METH_VARARGS,
     "_dist_init(handle_size, comm, op_sum, in_place, f32, f64, i32, i64, u8, u16, byte, "
     "timeout_s, bucket_bytes): set up collectives over the loaded MPI"},
    {"_dist_rank", dist_rank, METH_NOARGS, "this process's rank (0 before init)"},
    {"_dist_size", dist_size, METH_NOARGS, "the number of processes (1 before init)"},
    {"_dist_set_timeout", dist_set_timeout, METH_O,
     "_dist_set_timeout(seconds) -> previous (<= 0: only read)"},
    {"_dist_allreduce", dist_allreduce, METH_VARARGS,
     "_dist_allreduce(arrays, flags): sum in place over all processes (1: average, 2: fp16)"},
    {"_dist_broadcast", dist_broadcast, METH_VARARGS,
     "_dist_broadcast(arrays, root): copy root's arrays into every process's"},
    {"_dist_allgather", dist_allgather, METH_O,
     "_dist_allgather(array) -> every process's array concatenated on axis 0"},
    {"_dist_barrier", dist_barrier, METH_NOARGS, "wait for every process"},
    {"_dist_abort", dist_abort, METH_O, "_dist_abort(code): MPI_Abort, ending the job"},
    {NULL, NULL, 0, NULL},
};

int hgpy_init_dist(PyObject *m) { return PyModule_AddFunctions(m, k_functions); }
