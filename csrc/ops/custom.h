/* The Custom operator's way out to a host language: MXNet's `mx.operator.CustomOp`, whose
 * properties (inputs, outputs, shape and dtype rules) and whose forward and backward are Python
 * code. The op (ops/custom.c) knows no Python: it calls the table below, which the Python
 * binding fills when it loads (csrc/python/custom.c). Without it (a C program, the predictor) a
 * Custom node fails to build with an error naming its op_type.
 *
 * Every callback may run on any thread, with the host's interpreter lock not held (plans run
 * with the GIL released): the binding takes it itself. A callback that fails returns a status
 * with the message set; the op adds the op_type and the node on the way up.
 */
#ifndef HG_OPS_CUSTOM_H
#define HG_OPS_CUSTOM_H

#include "core/op.h"

typedef struct hg_custom_callbacks {
    /* The operator properties registered as op_type, made from its keyword strings (MXNet's
     * CustomOpProp(**kwargs)). *handle (> 0) names them in the calls below and stays valid for
     * the life of the process; equal (op_type, keywords) give the same handle. nargs, nouts,
     * nauxs: the lengths of list_arguments, list_outputs and list_auxiliary_states. */
    hg_status (*create)(const char *op_type, int n, const char *const *keys,
                        const char *const *vals, int64_t *handle, int *nargs, int *nouts,
                        int *nauxs);
    /* infer_shape and infer_type. in[0..nin): the arguments then the auxiliary states (ndim -1
     * or a dim -1: unknown; dtype >= HG_NUM_DTYPES: unknown), updated with what the properties
     * say; out[0..nout) receive the outputs' metas (ndim -1 where still unknown). */
    hg_status (*infer)(int64_t handle, int nin, hg_meta *in, int nout, hg_meta *out);
    /* CustomOp.forward: in = arguments then auxiliary states (which it may update), out = the
     * outputs. The tensors are the op's own copies: the callback may keep references. */
    hg_status (*forward)(int64_t handle, bool is_train, int nin, hg_tensor *const *in, int nout,
                         hg_tensor *const *out);
    /* CustomOp.backward: in = output gradients, arguments, outputs, auxiliary states (nouts,
     * nargs, nouts, nauxs of them); out = the arguments' gradients. */
    hg_status (*backward)(int64_t handle, bool is_train, int nin, hg_tensor *const *in, int nout,
                          hg_tensor *const *out);
} hg_custom_callbacks;

/* Installs the table (the pointer is kept; NULL removes it). Set once, before any Custom node
 * is built; not synchronised against calls in flight. */
HG_API void hg_custom_set_callbacks(const hg_custom_callbacks *cb);

#endif
