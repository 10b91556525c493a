/* Custom and _backward_Custom: operators written in Python (MXNet's mx.operator.CustomOp),
 * reached through the callback table of ops/custom.h.
 *
 * Attributes: op_type is the schema; every other keyword belongs to the Python class, so the
 * op takes free-form attributes (parse_free). The node keeps the strings (JSON writes each as
 * its own key, as MXNet does); parsing asks the host for the properties' handle and their
 * argument, output and auxiliary-state counts, kept in the private slots below.
 *
 * Inputs are the arguments then the auxiliary states (which forward may update: they are the
 * op's mutated inputs). The kernels hand Python copies, never the executor's arena memory,
 * because Python code may keep a reference to an array after the call returns.
 */
#include <stdatomic.h>
#include <string.h>

#include "graph/grad.h"
#include "ops/custom.h"

enum { K_OP_TYPE, K_NATTRS };
/* Private parsed state, in the slots after the schema (see hg_op_def.parse_free). */
enum { P_HANDLE = K_NATTRS, P_NARGS, P_NOUTS, P_NAUXS };
_Static_assert(P_NAUXS < HG_MAX_ATTRS, "private slots fit in hg_attrs");

static const hg_attr_spec k_attrs[] = {
    {"op_type", HG_ATTR_STRING, HG_ATTR_REQUIRED, NULL,
     "the name the operator's CustomOpProp was registered under (mx.operator.register)"},
};
_Static_assert(HG_COUNT(k_attrs) == K_NATTRS, "schema matches its enum");

static _Atomic(const hg_custom_callbacks *) g_cb;

void hg_custom_set_callbacks(const hg_custom_callbacks *cb) { atomic_store(&g_cb, cb); }

static int nargs(const hg_attrs *a) { return (int)a->v[P_NARGS].i; }
static int nouts(const hg_attrs *a) { return (int)a->v[P_NOUTS].i; }
static int nauxs(const hg_attrs *a) { return (int)a->v[P_NAUXS].i; }
static const char *op_type(const hg_attrs *a) { return a->v[K_OP_TYPE].s; }

static hg_status no_host(const char *type)
{
    return hg_error(HG_ERR_UNSUPPORTED,
                    "operator Custom (op_type '%s') is Python code (mx.operator.CustomOp): it "
                    "runs only where hybridgluon's Python package is loaded, not in a C program "
                    "or the C predictor",
                    type);
}

/* The callbacks, once the node's attributes name a known operator. */
static hg_status ready(const hg_attrs *a, const hg_custom_callbacks **cb)
{
    *cb = atomic_load(&g_cb);
    if (!*cb) return no_host(op_type(a));
    if (a->v[P_HANDLE].i <= 0)
        return hg_error(HG_ERR_VALUE,
                        "operator Custom (op_type '%s'): its attributes were not made from the "
                        "operator's keywords; call it as mx.nd.Custom or mx.sym.Custom",
                        op_type(a));
    return HG_OK;
}

/* Asks the host for the properties of op_type with these keywords. The counts are limited by
 * what a node can hold: auxiliary states are marked in a 32-bit mask, and _backward_Custom
 * takes 2 * outputs + arguments + auxiliary states inputs. */
static hg_status custom_parse(const hg_op_def *op, int n, const char *const *keys,
                              const char *const *vals, hg_attrs *a)
{
    (void)op;
    const hg_custom_callbacks *cb = atomic_load(&g_cb);
    if (!cb) return no_host(op_type(a));
    int64_t handle = 0;
    int na = 0, no = 0, nx = 0;
    hg_status st = cb->create(op_type(a), n, keys, vals, &handle, &na, &no, &nx);
    if (st != HG_OK) return st;
    if (handle <= 0 || na < 0 || nx < 0 || no < 1 || na + nx > 32 || 2 * no + na + nx > HG_MAX_IO)
        return hg_error(HG_ERR_VALUE,
                        "Custom operator '%s' has %d argument(s), %d output(s) and %d "
                        "auxiliary state(s): it needs at least one output, at most 32 inputs "
                        "and 2 * outputs + inputs <= %d",
                        op_type(a), na, no, nx, HG_MAX_IO);
    a->v[P_HANDLE].i = handle;
    a->v[P_NARGS].i = na;
    a->v[P_NOUTS].i = no;
    a->v[P_NAUXS].i = nx;
    return HG_OK;
}

static int custom_num_inputs(const hg_attrs *a) { return nargs(a) + nauxs(a); }
static int custom_num_outputs(const hg_attrs *a) { return nouts(a) > 0 ? nouts(a) : 1; }
static int bw_num_inputs(const hg_attrs *a) { return 2 * nouts(a) + nargs(a) + nauxs(a); }
static int bw_num_outputs(const hg_attrs *a) { return nargs(a); }

static uint32_t custom_mutates(const hg_attrs *a)
{
    int na = nargs(a), nx = nauxs(a);
    if (nx <= 0 || na + nx > 32) return 0;
    uint32_t aux = nx == 32 ? 0xffffffffu : ((1u << nx) - 1u);
    return aux << na;
}

static hg_status custom_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)op;
    const hg_custom_callbacks *cb;
    HG_TRY(ready(a, &cb));
    hg_status st = cb->infer(a->v[P_HANDLE].i, nin, in, nout, out);
    if (st != HG_OK) return st;
    for (int i = 0; i < nout; i++) {
        bool known = out[i].ndim >= 0 && (unsigned)out[i].dtype < HG_NUM_DTYPES;
        for (int d = 0; known && d < out[i].ndim; d++) known = out[i].shape[d] >= 0;
        if (!known)
            return hg_error(HG_ERR_VALUE,
                            "Custom operator '%s': infer_shape / infer_type did not decide "
                            "output %d from the input shapes",
                            op_type(a), i);
    }
    return HG_OK;
}

/* Gradients have the arguments' metas (inputs nouts .. nouts + nargs of _backward_Custom). */
static hg_status bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)op;
    const hg_custom_callbacks *cb;
    HG_TRY(ready(a, &cb));
    if (nin != bw_num_inputs(a) || nout != nargs(a))
        return hg_error(HG_ERR_INTERNAL, "_backward_Custom: %d inputs, %d outputs", nin, nout);
    for (int i = 0; i < nout; i++) out[i] = in[nouts(a) + i];
    return HG_OK;
}

/* A private copy of t (its bytes when `fill`, else zeros) on t's device. */
static hg_status private_copy(const hg_tensor *t, bool fill, hg_tensor **out)
{
    hg_meta m = hg_meta_of(t);
    HG_TRY(fill ? hg_tensor_new_meta(&m, out) : hg_tensor_new_zeroed(&m, out));
    (*out)->storage->device_type = t->storage->device_type;
    (*out)->storage->device_id = t->storage->device_id;
    if (fill) memcpy(hg_data(*out), hg_data(t), hg_tensor_nbytes(t));
    return HG_OK;
}

/* Runs a callback on copies of in[] and fresh out[]: afterwards the outputs, and the inputs
 * from `writeback` on (auxiliary states), are copied back. */
static hg_status run_on_copies(const hg_attrs *a, bool backward, bool is_train, int nin,
                               hg_tensor *const *in, int writeback, int nout, hg_tensor *const *out)
{
    const hg_custom_callbacks *cb;
    HG_TRY(ready(a, &cb));
    hg_tensor *ci[HG_MAX_IO] = {0}, *co[HG_MAX_IO] = {0};
    if (nin > HG_MAX_IO || nout > HG_MAX_IO)
        return hg_error(HG_ERR_INTERNAL, "Custom: %d inputs, %d outputs", nin, nout);
    hg_status st = HG_OK;
    for (int i = 0; i < nin && st == HG_OK; i++) st = private_copy(in[i], true, &ci[i]);
    for (int i = 0; i < nout && st == HG_OK; i++) st = private_copy(out[i], false, &co[i]);
    if (st == HG_OK)
        st = backward ? cb->backward(a->v[P_HANDLE].i, is_train, nin, ci, nout, co)
                      : cb->forward(a->v[P_HANDLE].i, is_train, nin, ci, nout, co);
    for (int i = 0; i < nout && st == HG_OK; i++)
        memcpy(hg_data(out[i]), hg_data(co[i]), hg_tensor_nbytes(out[i]));
    for (int i = writeback; i < nin && st == HG_OK; i++)
        memcpy(hg_data(in[i]), hg_data(ci[i]), hg_tensor_nbytes(in[i]));
    for (int i = 0; i < nin; i++) hg_tensor_free(ci[i]);
    for (int i = 0; i < nout; i++) hg_tensor_free(co[i]);
    return st;
}

static hg_status custom_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    return run_on_copies(a, false, ctx->is_train, nin, in, nargs(a), nout, out);
}

/* Auxiliary states are inputs of the backward too; what it writes there is kept, as MXNet's
 * backward sees the op's own aux arrays. */
static hg_status bw_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op;
    return run_on_copies(a, true, ctx->is_train, nin, in, nin - nauxs(a), nout, out);
}

/* One _backward_Custom node reading the output gradients, the arguments, the outputs and the
 * auxiliary states; it writes every argument's gradient (auxiliary states get none). */
static hg_status custom_grad(hg_grad_ctx *g)
{
    const hg_attrs *a = hg_g_attrs(g);
    int na = nargs(a), no = nouts(a), nx = nauxs(a), k = 0;
    if (na == 0) return hg_g_status(g);
    /* _backward_Custom is built from the node's keywords (hg_g_op_fwd_attrs copies at most
     * HG_MAX_ATTRS * 4): with fewer, its properties would be another operator's. */
    if (hg_g_node(g)->nattr > HG_MAX_ATTRS * 4)
        return hg_error(HG_ERR_VALUE,
                        "Custom operator '%s': %d keywords; its gradient takes at most %d",
                        op_type(a), hg_g_node(g)->nattr, HG_MAX_ATTRS * 4);
    hg_sentry in[HG_MAX_IO], out[HG_MAX_IO];
    for (int i = 0; i < no; i++) in[k++] = hg_g_ograd(g, i);
    for (int i = 0; i < na; i++) in[k++] = hg_g_in(g, i);
    for (int i = 0; i < no; i++) in[k++] = hg_g_out(g, i);
    for (int i = 0; i < nx; i++) in[k++] = hg_g_in(g, na + i);
    hg_g_op_fwd_attrs(g, "_backward_Custom", k, in, NULL, na, out);
    for (int i = 0; i < na && hg_g_status(g) == HG_OK; i++)
        if (hg_g_needs(g, i)) hg_g_set(g, i, out[i]);
    return hg_g_status(g);
}

const hg_op_def hg_ops_custom[] = {
    {.name = "Custom",
     .doc = "An operator written in Python: a subclass of mx.operator.CustomOpProp registered "
            "with mx.operator.register(op_type). Keywords other than op_type go to the class "
            "as strings. Inputs: its list_arguments(), then list_auxiliary_states().",
     .input_names = HG_NAMES("data"),
     .attrs = k_attrs,
     .num_attrs = K_NATTRS,
     .num_outputs = 1,
     .flags = HG_OP_HOST_CODE,
     .get_num_inputs = custom_num_inputs,
     .get_num_outputs = custom_num_outputs,
     .infer = custom_infer,
     .forward = custom_forward,
     .grad = custom_grad,
     .get_mutate_inputs = custom_mutates,
     .parse_free = custom_parse},
    {.name = "_backward_Custom",
     .doc = "Gradients of Custom: calls the operator's backward with (output gradients, "
            "arguments, outputs, auxiliary states) and returns the arguments' gradients.",
     .input_names = HG_NAMES("ograd"),
     .attrs = k_attrs,
     .num_attrs = K_NATTRS,
     .num_outputs = 1,
     .flags = HG_OP_HOST_CODE,
     .get_num_inputs = bw_num_inputs,
     .get_num_outputs = bw_num_outputs,
     .infer = bw_infer,
     .forward = bw_forward,
     .parse_free = custom_parse},
    {0},
};
