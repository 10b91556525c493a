/* Shared declarations of the CPython binding (the only code that includes Python.h). */
#ifndef HG_PYTHON_BINDING_H
#define HG_PYTHON_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "core/op.h"

typedef struct {
    PyObject_HEAD hg_tensor *t;
} NDArrayObject;

extern PyTypeObject HgNDArray_Type;  /* _core.NDArray, the base the Python class derives from */
extern PyTypeObject HgOp_Type;       /* _core.Op, one callable per registered op */
extern PyTypeObject *hgpy_ndarray_cls; /* the Python NDArray class outputs are created as */

static inline int hgpy_is_ndarray(PyObject *o) { return PyObject_TypeCheck(o, &HgNDArray_Type); }
static inline hg_tensor *hgpy_tensor(PyObject *o) { return ((NDArrayObject *)o)->t; }

/* Wraps a tensor (steals the reference). On failure releases it and returns NULL. */
PyObject *hgpy_wrap(hg_tensor *t);
/* Raises the Python exception for a failed core call and returns NULL. */
PyObject *hgpy_raise(hg_status st);
/* Sets the exception for a status and returns -1 (for int-returning slots). */
int hgpy_raise_int(hg_status st);

/* Runs an op on NDArray inputs with attrs already parsed; returns the output list
 * (new references, *nout entries) in outs. */
hg_status hgpy_run(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in, int nout,
                   hg_tensor **out);
/* Converts one Python value to attribute slot idx of op. Returns 0 or -1 with an exception. */
int hgpy_set_attr(const hg_op_def *op, int idx, PyObject *value, hg_attrs *a);
/* Op callable object for an op def (new reference). */
PyObject *hgpy_op_new(const hg_op_def *op);

int hgpy_init_ndarray(PyObject *m);
int hgpy_init_op(PyObject *m);
int hgpy_init_dlpack(PyObject *m);
int hgpy_init_symbol(PyObject *m);
int hgpy_init_formats(PyObject *m);
int hgpy_init_textparse(PyObject *m);
int hgpy_init_cachedop(PyObject *m);
int hgpy_init_autograd(PyObject *m);
int hgpy_init_custom(PyObject *m);
int hgpy_init_profiler(PyObject *m);
int hgpy_init_dist(PyObject *m);
/* NDArray.__dlpack__(stream=None, ...) and __dlpack_device__(), in dlpack.c. */
PyObject *hgpy_dlpack(PyObject *self, PyObject *args, PyObject *kw);
PyObject *hgpy_dlpack_device(PyObject *self, PyObject *unused);

#endif
