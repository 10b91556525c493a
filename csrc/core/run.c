/* Running one op imperatively: arity checks, inference, output allocation, the kernel call. */
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/op.h"
#include "core/profiler.h"

int hg_op_num_inputs(const hg_op_def *op, const hg_attrs *a)
{
    if (op->get_num_inputs) return op->get_num_inputs(a);
    if (op->flags & HG_OP_VARARGS) {
        int k = hg_attr_index(op, "num_args");
        return k >= 0 ? (int)a->v[k].i : -1;
    }
    return op->num_inputs;
}

int hg_op_num_outputs(const hg_op_def *op, const hg_attrs *a)
{
    return op->get_num_outputs ? op->get_num_outputs(a) : (op->num_outputs ? op->num_outputs : 1);
}

int hg_op_num_visible_outputs(const hg_op_def *op, const hg_attrs *a)
{
    if (op->get_num_visible_outputs) return op->get_num_visible_outputs(a);
    return op->num_visible_outputs ? op->num_visible_outputs : hg_op_num_outputs(op, a);
}

static hg_status check_given_output(const hg_op_def *op, int i, const hg_tensor *t,
                                    const hg_meta *m)
{
    if (t->dtype != m->dtype || !hg_shape_equal(t->ndim, t->shape, m->ndim, m->shape)) {
        char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE,
                        "%s: out[%d] has shape %s and dtype %s, expected shape %s "
                        "and dtype %s",
                        op->name, i, hg_shape_str(a, t->ndim, t->shape), hg_dtype_name(t->dtype),
                        hg_shape_str(b, m->ndim, m->shape), hg_dtype_name(m->dtype));
    }
    return HG_OK;
}

/* The GPU all of an op's arrays are on (-1: none is on a GPU), or an error when they mix a GPU
 * with another device, as MXNet refuses. */
static hg_status op_gpu(const hg_op_def *op, int nin, hg_tensor *const *in, int nout,
                        hg_tensor *const *out, int *gpu)
{
    int g = -1, first = -1;
    const hg_tensor *ref = NULL;
    for (int i = 0; i < nin + nout; i++) {
        const hg_tensor *t = i < nin ? in[i] : out[i - nin];
        if (!t) continue;
        if (!ref) {
            ref = t;
            first = i;
            g = hg_on_gpu(t) ? t->storage->device_id : -1;
            continue;
        }
        int tg = hg_on_gpu(t) ? t->storage->device_id : -1;
        if (tg != g) {
            char da[24], db[24];
            return hg_error(HG_ERR_VALUE,
                            "Operator %s: %s %d is on %s but %s %d is on %s; all arrays of an "
                            "operator must be on the same device (copy one with "
                            "as_in_context)",
                            op->name, i < nin ? "input" : "output", i < nin ? i : i - nin,
                            hg_device_str(da, t->storage->device_type, t->storage->device_id),
                            first < nin ? "input" : "output", first < nin ? first : first - nin,
                            hg_device_str(db, ref->storage->device_type, ref->storage->device_id));
        }
    }
    *gpu = g;
    return HG_OK;
}

hg_status hg_op_run(const hg_op_def *op, const hg_attrs *a, bool is_train, int nin,
                    hg_tensor *const *in, int nout, hg_tensor **out)
{
    int want_in = hg_op_num_inputs(op, a), want_out = hg_op_num_outputs(op, a);
    if (nin != want_in)
        return hg_error(HG_ERR_VALUE, "Operator %s expects %d input(s), got %d", op->name, want_in,
                        nin);
    if (nout != want_out)
        return hg_error(HG_ERR_INTERNAL, "Operator %s produces %d output(s), caller expected %d",
                        op->name, want_out, nout);
    hg_meta im_stack[8], om_stack[8], *im = im_stack, *om = om_stack;
    bool made_stack[8] = {false}, *made = made_stack; /* outputs this call allocated */
    hg_status st = HG_OK;
    void *ws = NULL;
    size_t ws_bytes = 0;
    int gpu = -1; /* the GPU the op runs on; -1: the CPU */
    hg_kernel_fn gpu_kernel = NULL;
    bool gpu_ws = false; /* the GPU kernel uses the op's workspace */
    if (nin > 8 || nout > 8) {
        size_t most = (size_t)(nin > nout ? nin : nout);
        im = malloc((sizeof(hg_meta) * 2 + sizeof(bool)) * most);
        if (!im) return hg_error(HG_ERR_MEMORY, "out of memory");
        om = im + most;
        made = (bool *)(om + most);
        memset(made, 0, most);
    }
    for (int i = 0; i < nin; i++) {
        if (!in[i]) {
            st = hg_error(HG_ERR_VALUE, "Operator %s: input %d is missing", op->name, i);
            goto done;
        }
        im[i] = hg_meta_of(in[i]);
    }
    for (int i = 0; i < nout; i++) {
        om[i].ndim = -1;
        om[i].dtype = in && nin ? in[0]->dtype : HG_DTYPE_F32;
    }
    st = op_gpu(op, nin, in, nout, out, &gpu);
    if (st != HG_OK) goto done;
    if (gpu >= 0 && !(gpu_kernel = hg_gpu_kernel_ws(op, &gpu_ws))) {
        st = hg_error(HG_ERR_UNSUPPORTED,
                      "Operator %s has no GPU kernel (its arrays are on gpu(%d)); run it on the "
                      "CPU: copy its inputs with as_in_context(mx.cpu())",
                      op->name, gpu);
        goto done;
    }
    st = op->infer(op, a, nin, im, nout, om);
    if (st != HG_OK) goto done;
    bool any = false;
    for (int i = 0; i < nout; i++) {
        if (out[i]) {
            st = check_given_output(op, i, out[i], &om[i]);
            if (st != HG_OK) goto done;
        } else if (gpu >= 0) {
            st = hg_tensor_new_on(&om[i], HG_DEVICE_GPU, gpu, false, &out[i]);
            if (st != HG_OK) goto done;
            made[i] = true;
        } else {
            st = hg_tensor_new_meta(&om[i], &out[i]);
            if (st != HG_OK) goto done;
            made[i] = true;
            /* MXNet's rule: a new output lives on the first input's device (cpu(1) + cpu(0)
             * gives cpu(1)); an op without inputs leaves it to the caller (cpu(0)). */
            if (nin > 0) {
                out[i]->storage->device_type = hg_device_kind(in[0]->storage->device_type);
                out[i]->storage->device_id = in[0]->storage->device_id;
            }
        }
        any |= out[i]->size > 0;
    }
    if (!any && nout > 0) goto done; /* nothing to compute */
    if (op->workspace && (gpu < 0 || gpu_ws)) {
        ws_bytes = op->workspace(a, nin, im);
        if (ws_bytes && gpu >= 0) {
            st = hg_device_alloc(gpu, ws_bytes, &ws);
            if (st != HG_OK) goto done;
        } else if (ws_bytes && !(ws = hg_alloc(ws_bytes))) {
            st = hg_error(HG_ERR_MEMORY, "%s: out of memory for %zu bytes of workspace", op->name,
                          ws_bytes);
            goto done;
        }
    }
    hg_exec_ctx ctx = {is_train, ws, ws_bytes, gpu < 0 ? 0 : gpu};
    int64_t t0 = hg_prof_active(HG_PROF_IMPERATIVE) ? hg_prof_now() : 0;
    if (gpu_kernel) st = gpu_kernel(op, a, &ctx, nin, in, nout, out);
    else if (op->forward) st = op->forward(op, a, &ctx, nin, in, nout, out);
    else st = hg_ew_forward(op, a, nin, in, out[0]);
    if (t0 && st == HG_OK) hg_prof_op(op->name, NULL, t0);
    /* written: the outputs (given ones are existing memory) and the inputs the op updates,
     * also after a failure, which may have written part of them */
    for (int i = 0; i < nout; i++)
        if (!made[i]) hg_tensor_wrote(out[i]);
    for (int i = 0; i < nin; i++)
        if (hg_op_writes_input(op, a, is_train, i)) hg_tensor_wrote(in[i]);
done:
    /* A GPU workspace goes back to its device's cache: work queued on it runs first (one stream
     * per device), so the next user of the block is ordered after it. */
    if (gpu >= 0) hg_device_free(gpu, ws, ws_bytes);
    else hg_free(ws, ws_bytes);
    if (st != HG_OK) {
        for (int i = 0; i < nout; i++) {
            if (made[i]) {
                hg_tensor_free(out[i]);
                out[i] = NULL;
            }
        }
    }
    if (im != im_stack) free(im);
    return st;
}

hg_status hg_op_invoke_str(const char *op_name, int nin, hg_tensor *const *ins, int nattr,
                           const char *const *keys, const char *const *vals, int *nout,
                           hg_tensor **outs)
{
    if (!op_name || !nout || (nin && !ins) || (nattr && (!keys || !vals)) || (*nout && !outs))
        return hg_error(HG_ERR_VALUE, "hg_op_invoke_str: NULL argument");
    const hg_op_def *op = hg_registry_find(op_name);
    if (!op) return hg_error(HG_ERR_VALUE, "operator '%s' is not registered", op_name);
    hg_attrs *a = malloc(sizeof *a);
    if (!a) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = HG_OK;
    hg_attrs_set_defaults(op, a);
    for (int i = 0; i < nattr && st == HG_OK; i++) {
        if (!keys[i] || !vals[i]) {
            st = hg_error(HG_ERR_VALUE, "hg_op_invoke_str: NULL attribute key or value");
            break;
        }
        if (keys[i][0] == '_' && keys[i][1] == '_') continue; /* __x__ annotations */
        int k = hg_attr_index(op, keys[i]);
        st = k < 0 ? hg_attr_unknown(op, keys[i]) : hg_attr_parse(op, k, vals[i], a);
    }
    if (st == HG_OK) st = hg_attrs_finish(op, a);
    if (st == HG_OK) {
        int n = hg_op_num_outputs(op, a);
        if (n > *nout) {
            st = hg_error(HG_ERR_VALUE, "%s produces %d outputs but room was given for %d",
                          op->name, n, *nout);
        } else {
            for (int i = 0; i < n; i++) outs[i] = NULL;
            st = hg_op_run(op, a, false, nin, ins, n, outs);
            if (st == HG_OK) *nout = n;
        }
    }
    free(a);
    return st;
}
