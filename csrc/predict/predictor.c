/* The predictor API (hybridgluon/predict.h): a shared model (model.c) plus, per predictor, a
 * plan, its input tensors (weights shared, data inputs owned) and output tensors that the plan
 * writes in place. Every entry point checks its arguments and reports through hg_error; a
 * failing call leaves the predictor as it was.
 *
 * On a GPU (CUDA build), the predictor keeps its own device copy of the weights, its data
 * inputs and outputs in device memory, and runs the graph as a static cached op: its GPU
 * kernels, replayed as one CUDA graph per forward from the second forward of a shape on
 * (exec/cachedop.c). The plan still does the shape inference. */
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "exec/cachedop.h"
#include "exec/plan.h"
#include "predict/model.h"

struct hg_predictor {
    hg_pmodel *model;   /* one reference */
    hg_plan *plan;
    hg_tensor **in;     /* slot -> tensor: the model's weight (borrowed) or our data input */
    hg_tensor **data;   /* data input -> tensor (owned; the same as in[data_slot]) */
    int nout;
    hg_tensor **out;    /* outputs, written in place by every forward (owned) */
    int gpu;            /* the GPU it runs on; -1: the CPU */
    hg_cachedop *co;    /* GPU: the graph as a static cached op */
    hg_tensor **gw;     /* GPU: slot -> the device copy of its weight (owned) */
};

#define CHECK_P(p, what)                                                                       \
    do {                                                                                       \
        if (!(p)) return hg_error(HG_ERR_VALUE, "%s: the predictor is NULL", what);            \
    } while (0)

static hg_status new_zeros(const hg_meta *m, int gpu, hg_tensor **out)
{
    if (gpu >= 0) return hg_tensor_new_on(m, HG_DEVICE_GPU, gpu, true, out);
    HG_TRY(hg_tensor_new_meta(m, out));
    memset(hg_data(*out), 0, hg_tensor_nbytes(*out));
    return HG_OK;
}

static void free_tensors(hg_tensor **t, int n)
{
    for (int i = 0; t && i < n; i++) hg_tensor_free(t[i]);
    free(t);
}

/* Infers every value for the data metas dm[] (one per data input) and, on success, gives new
 * zeroed data tensors (for the inputs where replace[i], all when replace is NULL) and outputs.
 * Nothing of p changes on failure. */
static hg_status bind_shapes(hg_predictor *p, const hg_meta *dm, const bool *replace,
                             const char *what)
{
    const hg_pmodel *m = p->model;
    int nslots = m->nslots, nout = hg_plan_num_outputs(p->plan);
    hg_meta *in = calloc((size_t)nslots + 1, sizeof *in);
    hg_meta *om = calloc((size_t)nout + 1, sizeof *om);
    hg_tensor **data = calloc((size_t)m->ndata + 1, sizeof *data);
    hg_tensor **out = calloc((size_t)nout + 1, sizeof *out);
    hg_status st = (in && om && data && out) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; st == HG_OK && k < nslots; k++)
        if (m->weight[k]) in[k] = hg_meta_of(m->weight[k]);
    for (int i = 0; st == HG_OK && i < m->ndata; i++) in[m->data_slot[i]] = dm[i];
    if (st == HG_OK) st = hg_plan_infer(p->plan, in, om, false);
    /* Inference may complete unknowns but must not change what is known (a rule that accepts
     * a weight of another shape than it would infer). */
    for (int k = 0; st == HG_OK && k < nslots; k++) {
        hg_meta given = m->weight[k] ? hg_meta_of(m->weight[k]) : in[k];
        for (int i = 0; i < m->ndata; i++)
            if (m->data_slot[i] == k) given = dm[i];
        if (!hg_shape_equal(in[k].ndim, in[k].shape, given.ndim, given.shape) ||
            in[k].dtype != given.dtype) {
            char a[HG_SHAPE_STR], b[HG_SHAPE_STR];
            st = hg_error(HG_ERR_VALUE, "'%s' has shape %s (%s) but the graph needs %s (%s)",
                          m->slot_name[k], hg_shape_str(a, given.ndim, given.shape),
                          hg_dtype_name(given.dtype), hg_shape_str(b, in[k].ndim, in[k].shape),
                          hg_dtype_name(in[k].dtype));
        }
    }
    for (int i = 0; st == HG_OK && i < m->ndata; i++)
        if (!replace || replace[i]) st = new_zeros(&dm[i], p->gpu, &data[i]);
    for (int h = 0; st == HG_OK && h < nout; h++) st = new_zeros(&om[h], p->gpu, &out[h]);
    if (st == HG_OK) {
        for (int i = 0; i < m->ndata; i++) {
            if (!data[i]) continue; /* kept */
            hg_tensor_free(p->data[i]);
            p->data[i] = data[i];
            p->in[m->data_slot[i]] = data[i];
        }
        free_tensors(p->out, p->nout);
        p->out = out;
        p->nout = nout;
        out = NULL;
        free(data);
    } else {
        hg_error_prefix(st, "%s: ", what);
        free_tensors(data, m->ndata);
        free_tensors(out, nout);
    }
    free(in);
    free(om);
    return st;
}

/* The GPU parts of p: the cached op and the device copies of the weights (p->in points at
 * them). */
static hg_status gpu_setup(hg_predictor *p, const char *what)
{
    const hg_pmodel *m = p->model;
    if (!(p->gw = calloc((size_t)m->nslots + 1, sizeof *p->gw)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = hg_cachedop_create(m->sym, m->nslots, m->slot_name,
                                      HG_PLAN_STATIC_ALLOC | HG_PLAN_STATIC_SHAPE, &p->co);
    for (int k = 0; st == HG_OK && k < m->nslots; k++) {
        if (!m->weight[k]) continue;
        hg_meta wm = hg_meta_of(m->weight[k]);
        st = hg_tensor_new_on(&wm, HG_DEVICE_GPU, p->gpu, false, &p->gw[k]);
        if (st == HG_OK) st = hg_tensor_copy_any(m->weight[k], p->gw[k]);
        p->in[k] = p->gw[k];
    }
    if (st != HG_OK) hg_error_prefix(st, "%s: ", what);
    return st;
}

/* A predictor over model m (one reference taken) with data inputs of shapes dm, on gpu(gpu)
 * or (gpu -1) the CPU. */
static hg_status predictor_new(hg_pmodel *m, const hg_meta *dm, int gpu, const char *what,
                               hg_predictor **out)
{
    hg_predictor *p = calloc(1, sizeof *p);
    if (!p) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_pmodel_retain(m);
    p->model = m;
    p->gpu = gpu;
    hg_status st = HG_OK;
    p->in = calloc((size_t)m->nslots + 1, sizeof *p->in);
    p->data = calloc((size_t)m->ndata + 1, sizeof *p->data);
    if (!p->in || !p->data) st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st == HG_OK) {
        st = hg_plan_create(m->sym, m->nslots, m->slot_name, &p->plan);
        if (st != HG_OK) hg_error_prefix(st, "%s: ", what);
    }
    if (st == HG_OK) {
        /* The inputs are ours and fixed between reshapes: keep the arena (the plan still
         * checks the signature on every forward, a few compares). */
        hg_plan_set_flags(p->plan, HG_PLAN_STATIC_ALLOC | hg_plan_env_flags());
        for (int k = 0; k < m->nslots; k++) p->in[k] = m->weight[k];
        if (gpu >= 0) st = gpu_setup(p, what);
        if (st == HG_OK) st = bind_shapes(p, dm, NULL, what);
    }
    if (st != HG_OK) {
        hg_predictor_free(p);
        return st;
    }
    *out = p;
    return HG_OK;
}

static hg_status check_create_args(int dev_type, int dev_id, int ninputs,
                                   const hg_input_spec *inputs, hg_predictor **out,
                                   const char *what)
{
    if (!out) return hg_error(HG_ERR_VALUE, "%s: out is NULL", what);
    *out = NULL;
    if (ninputs < 0 || (ninputs > 0 && !inputs))
        return hg_error(HG_ERR_VALUE, "%s: %d inputs with %s specs", what, ninputs,
                        inputs ? "given" : "NULL");
    if (dev_type == HG_DEVICE_GPU) {
        hg_status st = hg_gpu_check(dev_id);
        return st == HG_OK ? st : hg_error_prefix(st, "%s: ", what);
    }
    if (dev_type != HG_DEVICE_CPU || dev_id < 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: invalid device (type %d, id %d); use HG_DEVICE_CPU or HG_DEVICE_GPU",
                        what, dev_type, dev_id);
    return HG_OK;
}

static hg_status create(const char *json, size_t json_len, hg_ndlist *params, int gpu, int ninputs,
                        const hg_input_spec *inputs, hg_predictor **out)
{
    hg_pmodel *m;
    HG_TRY(hg_pmodel_load(json, json_len, params, ninputs, inputs, &m));
    hg_status st = predictor_new(m, m->data_meta, gpu, "hg_predictor_create", out);
    hg_pmodel_release(m);
    return st;
}

hg_status hg_predictor_create(const char *json, size_t json_len, const void *params,
                              size_t params_len, int dev_type, int dev_id, int ninputs,
                              const hg_input_spec *inputs, hg_predictor **out)
{
    static const char what[] = "hg_predictor_create";
    HG_TRY(check_create_args(dev_type, dev_id, ninputs, inputs, out, what));
    if (!json) return hg_error(HG_ERR_VALUE, "%s: json is NULL", what);
    if (!params && params_len)
        return hg_error(HG_ERR_VALUE, "%s: params is NULL but params_len is %zu", what, params_len);
    hg_ndlist *list = NULL;
    if (params) {
        hg_status st = hg_ndlist_load_bytes(params, params_len, &list);
        if (st != HG_OK) return hg_error_prefix(st, "%s: params: ", what);
    }
    hg_status st = create(json, json_len, list, dev_type == HG_DEVICE_GPU ? dev_id : -1, ninputs,
                          inputs, out);
    hg_ndlist_free(list);
    return st;
}

hg_status hg_predictor_create_from_files(const char *symbol_path, const char *params_path,
                                         int dev_type, int dev_id, int ninputs,
                                         const hg_input_spec *inputs, hg_predictor **out)
{
    static const char what[] = "hg_predictor_create_from_files";
    HG_TRY(check_create_args(dev_type, dev_id, ninputs, inputs, out, what));
    if (!symbol_path) return hg_error(HG_ERR_VALUE, "%s: symbol_path is NULL", what);
    char *json;
    size_t len;
    hg_status st = hg_read_file(symbol_path, &json, &len);
    if (st != HG_OK) return hg_error_prefix(st, "%s: ", what);
    hg_ndlist *list = NULL;
    if (params_path && (st = hg_ndlist_load_file(params_path, &list)) != HG_OK)
        hg_error_prefix(st, "%s: ", what);
    if (st == HG_OK)
        st = create(json, len, list, dev_type == HG_DEVICE_GPU ? dev_id : -1, ninputs, inputs, out);
    hg_ndlist_free(list);
    free(json);
    return st;
}

hg_status hg_predictor_clone(const hg_predictor *p, hg_predictor **out)
{
    static const char what[] = "hg_predictor_clone";
    if (!out) return hg_error(HG_ERR_VALUE, "%s: out is NULL", what);
    *out = NULL;
    CHECK_P(p, what);
    int nd = p->model->ndata;
    hg_meta *dm = malloc(sizeof *dm * ((size_t)nd + 1));
    if (!dm) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < nd; i++) dm[i] = hg_meta_of(p->data[i]);
    hg_status st = predictor_new(p->model, dm, p->gpu, what, out);
    free(dm);
    return st;
}

void hg_predictor_free(hg_predictor *p)
{
    if (!p) return;
    hg_plan_free(p->plan);
    hg_cachedop_release(p->co);
    free_tensors(p->gw, p->model->nslots);
    free_tensors(p->data, p->model->ndata);
    free_tensors(p->out, p->nout);
    free(p->in);
    hg_pmodel_release(p->model);
    free(p);
}

/* ---- queries ---------------------------------------------------------------------------- */

static hg_status check_index(const hg_predictor *p, int index, int n, const char *kind,
                             const char *what)
{
    CHECK_P(p, what);
    if (index < 0 || index >= n)
        return hg_error(HG_ERR_INDEX, "%s: %s %d is out of range (the predictor has %d)", what,
                        kind, index, n);
    return HG_OK;
}

static hg_status copy_shape(const hg_tensor *t, int64_t *shape, int capacity, int *ndim,
                            const char *what)
{
    if (!ndim || (!shape && capacity > 0)) return hg_error(HG_ERR_VALUE, "%s: NULL argument", what);
    *ndim = t->ndim;
    if (capacity < t->ndim)
        return hg_error(HG_ERR_VALUE, "%s: the shape has %d dimensions but room was given for %d",
                        what, t->ndim, capacity);
    if (t->ndim) memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return HG_OK;
}

hg_status hg_predictor_num_inputs(const hg_predictor *p, int *out)
{
    CHECK_P(p, "hg_predictor_num_inputs");
    if (!out) return hg_error(HG_ERR_VALUE, "hg_predictor_num_inputs: out is NULL");
    *out = p->model->ndata;
    return HG_OK;
}

hg_status hg_predictor_input_name(const hg_predictor *p, int index, const char **out)
{
    static const char what[] = "hg_predictor_input_name";
    if (!out) return hg_error(HG_ERR_VALUE, "%s: out is NULL", what);
    HG_TRY(check_index(p, index, p ? p->model->ndata : 0, "input", what));
    *out = p->model->data_name[index];
    return HG_OK;
}

hg_status hg_predictor_input_shape(const hg_predictor *p, int index, int64_t *shape, int capacity,
                                   int *ndim)
{
    static const char what[] = "hg_predictor_input_shape";
    HG_TRY(check_index(p, index, p ? p->model->ndata : 0, "input", what));
    return copy_shape(p->data[index], shape, capacity, ndim, what);
}

hg_status hg_predictor_input_dtype(const hg_predictor *p, int index, hg_dtype *out)
{
    static const char what[] = "hg_predictor_input_dtype";
    if (!out) return hg_error(HG_ERR_VALUE, "%s: out is NULL", what);
    HG_TRY(check_index(p, index, p ? p->model->ndata : 0, "input", what));
    *out = p->data[index]->dtype;
    return HG_OK;
}

hg_status hg_predictor_num_outputs(const hg_predictor *p, int *out)
{
    CHECK_P(p, "hg_predictor_num_outputs");
    if (!out) return hg_error(HG_ERR_VALUE, "hg_predictor_num_outputs: out is NULL");
    *out = p->nout;
    return HG_OK;
}

hg_status hg_predictor_output_shape(const hg_predictor *p, int index, int64_t *shape, int capacity,
                                    int *ndim)
{
    static const char what[] = "hg_predictor_output_shape";
    HG_TRY(check_index(p, index, p ? p->nout : 0, "output", what));
    return copy_shape(p->out[index], shape, capacity, ndim, what);
}

hg_status hg_predictor_output_dtype(const hg_predictor *p, int index, hg_dtype *out)
{
    static const char what[] = "hg_predictor_output_dtype";
    if (!out) return hg_error(HG_ERR_VALUE, "%s: out is NULL", what);
    HG_TRY(check_index(p, index, p ? p->nout : 0, "output", what));
    *out = p->out[index]->dtype;
    return HG_OK;
}

hg_status hg_predictor_output_nbytes(const hg_predictor *p, int index, size_t *out)
{
    static const char what[] = "hg_predictor_output_nbytes";
    if (!out) return hg_error(HG_ERR_VALUE, "%s: out is NULL", what);
    HG_TRY(check_index(p, index, p ? p->nout : 0, "output", what));
    *out = hg_tensor_nbytes(p->out[index]);
    return HG_OK;
}

/* ---- running ---------------------------------------------------------------------------- */

hg_status hg_predictor_set_input(hg_predictor *p, const char *name, const void *data, size_t nbytes)
{
    static const char what[] = "hg_predictor_set_input";
    CHECK_P(p, what);
    if (!name) return hg_error(HG_ERR_VALUE, "%s: name is NULL", what);
    int i = hg_pmodel_find_data(p->model, name);
    if (i < 0) return hg_pmodel_unknown_input(p->model, what, name);
    hg_tensor *t = p->data[i];
    if (!data && nbytes) return hg_error(HG_ERR_VALUE, "%s: data is NULL", what);
    if (nbytes != hg_tensor_nbytes(t)) {
        char buf[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE, "%s: input '%s' of shape %s (%s) takes %zu bytes, got %zu",
                        what, name, hg_shape_str(buf, t->ndim, t->shape), hg_dtype_name(t->dtype),
                        hg_tensor_nbytes(t), nbytes);
    }
    if (p->gpu >= 0) return hg_tensor_write_bytes(t, data, nbytes);
    if (nbytes) memcpy(hg_data(t), data, nbytes);
    hg_tensor_wrote(t);
    return HG_OK;
}

hg_status hg_predictor_forward(hg_predictor *p)
{
    CHECK_P(p, "hg_predictor_forward");
    if (p->gpu < 0) return hg_plan_run(p->plan, p->in, false, p->out);
    hg_tensor **out = calloc((size_t)p->nout + 1, sizeof *out);
    if (!out) return hg_error(HG_ERR_MEMORY, "out of memory");
    hg_status st = hg_cachedop_call(p->co, p->in, out);
    for (int h = 0; h < p->nout; h++) {
        if (st != HG_OK) break;
        if (out[h]->ndim != p->out[h]->ndim || out[h]->dtype != p->out[h]->dtype ||
            memcmp(out[h]->shape, p->out[h]->shape, sizeof(int64_t) * (size_t)out[h]->ndim))
            st = hg_error(HG_ERR_INTERNAL, "hg_predictor_forward: output %d changed shape", h);
    }
    for (int h = 0; h < p->nout; h++) { /* the new outputs replace the old, all or none */
        hg_tensor **keep = st == HG_OK ? &p->out[h] : &out[h];
        hg_tensor_free(*keep);
        if (st == HG_OK) p->out[h] = out[h];
    }
    free(out);
    return st;
}

hg_status hg_predictor_get_output(const hg_predictor *p, int index, void *dst, size_t nbytes)
{
    static const char what[] = "hg_predictor_get_output";
    HG_TRY(check_index(p, index, p ? p->nout : 0, "output", what));
    const hg_tensor *t = p->out[index];
    if (!dst && nbytes) return hg_error(HG_ERR_VALUE, "%s: dst is NULL", what);
    if (nbytes != hg_tensor_nbytes(t)) {
        char buf[HG_SHAPE_STR];
        return hg_error(HG_ERR_VALUE,
                        "%s: output %d of shape %s (%s) has %zu bytes, the buffer "
                        "%zu",
                        what, index, hg_shape_str(buf, t->ndim, t->shape), hg_dtype_name(t->dtype),
                        hg_tensor_nbytes(t), nbytes);
    }
    if (p->gpu >= 0) return hg_tensor_read_bytes(t, dst, nbytes);
    if (nbytes) memcpy(dst, hg_data(t), nbytes);
    return HG_OK;
}

hg_status hg_predictor_reshape(hg_predictor *p, int ninputs, const hg_input_spec *inputs)
{
    static const char what[] = "hg_predictor_reshape";
    CHECK_P(p, what);
    if (ninputs < 0 || (ninputs > 0 && !inputs))
        return hg_error(HG_ERR_VALUE, "%s: %d inputs with %s specs", what, ninputs,
                        inputs ? "given" : "NULL");
    const hg_pmodel *m = p->model;
    hg_meta *dm = calloc((size_t)m->ndata + 1, sizeof *dm);
    bool *replace = calloc((size_t)m->ndata + 1, sizeof *replace);
    hg_status st = (dm && replace) ? HG_OK : hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; st == HG_OK && i < m->ndata; i++) dm[i] = hg_meta_of(p->data[i]);
    for (int k = 0; st == HG_OK && k < ninputs; k++) {
        hg_meta meta;
        st = hg_pmodel_spec_meta(&inputs[k], what, &meta);
        int i = st == HG_OK ? hg_pmodel_find_data(m, inputs[k].name) : -1;
        if (st == HG_OK && i < 0) st = hg_pmodel_unknown_input(m, what, inputs[k].name);
        else if (st == HG_OK && replace[i])
            st = hg_error(HG_ERR_VALUE, "%s: input '%s' is given twice", what, inputs[k].name);
        if (st != HG_OK) break;
        dm[i] = meta;
        replace[i] = true;
    }
    if (st == HG_OK) st = bind_shapes(p, dm, replace, what);
    free(dm);
    free(replace);
    return st;
}
