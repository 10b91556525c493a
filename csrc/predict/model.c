/* Loading a predictor's model: the symbol from JSON, the parameters matched to the graph's
 * variables by name ("arg:w", "aux:w" or "w"), the data input specs checked. Everything read
 * from the caller or a file is validated here, before a plan sees it. */
#include "predict/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE_BYTES ((size_t)1 << 30)

void hg_pmodel_retain(hg_pmodel *m) { atomic_fetch_add(&m->refcount, 1); }

void hg_pmodel_release(hg_pmodel *m)
{
    if (!m || atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) != 1) return;
    for (int k = 0; m->weight && k < m->nslots; k++) hg_tensor_free(m->weight[k]);
    for (int i = 0; m->data_name && i < m->ndata; i++) free(m->data_name[i]);
    free(m->weight);
    free(m->slot_name);
    free(m->data_name);
    free(m->data_slot);
    free(m->data_meta);
    hg_symbol_free(m->sym);
    free(m);
}

hg_status hg_pmodel_spec_meta(const hg_input_spec *spec, const char *what, hg_meta *m)
{
    if (!spec->name) return hg_error(HG_ERR_VALUE, "%s: an input has a NULL name", what);
    if (spec->ndim < 0 || spec->ndim > HG_MAX_NDIM)
        return hg_error(HG_ERR_VALUE, "%s: input '%s' has %d dimensions (must be 0..%d)", what,
                        spec->name, spec->ndim, HG_MAX_NDIM);
    if (spec->ndim > 0 && !spec->shape)
        return hg_error(HG_ERR_VALUE, "%s: input '%s' has a NULL shape", what, spec->name);
    if ((unsigned)spec->dtype >= HG_NUM_DTYPES)
        return hg_error(HG_ERR_TYPE, "%s: input '%s' has an invalid dtype %d", what, spec->name,
                        (int)spec->dtype);
    for (int d = 0; d < spec->ndim; d++)
        if (spec->shape[d] <= 0) {
            char buf[HG_SHAPE_STR];
            /* MXNet reads a 0 dim as "unknown"; an input must be fully known. */
            return hg_error(HG_ERR_VALUE,
                            "%s: input '%s' has shape %s: every dimension must be "
                            ">= 1",
                            what, spec->name, hg_shape_str(buf, spec->ndim, spec->shape));
        }
    hg_status st = hg_shape_check(spec->ndim, spec->shape, spec->dtype);
    if (st != HG_OK) return hg_error_prefix(st, "%s: input '%s': ", what, spec->name);
    m->ndim = spec->ndim;
    m->dtype = spec->dtype;
    if (spec->ndim) memcpy(m->shape, spec->shape, sizeof(int64_t) * (size_t)spec->ndim);
    return HG_OK;
}

int hg_pmodel_find_data(const hg_pmodel *m, const char *name)
{
    for (int i = 0; i < m->ndata; i++)
        if (strcmp(m->data_name[i], name) == 0) return i;
    return -1;
}

hg_status hg_pmodel_unknown_input(const hg_pmodel *m, const char *what, const char *name)
{
    char list[512];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < m->ndata && len < sizeof list - 1; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", i ? ", " : "",
                                m->data_name[i]);
    return hg_error(HG_ERR_VALUE, "%s: '%s' is not an input of this predictor (its inputs: %s)",
                    what, name, m->ndata ? list : "none");
}

/* The parameter for variable name: the last array named "arg:<name>", "aux:<name>" or
 * "<name>" (a dict file keeps the last of repeated names, as MXNet's loader does). */
static int find_param(const hg_ndlist *params, const char *name)
{
    int found = -1, n = params ? hg_ndlist_count(params) : 0;
    size_t len = strlen(name);
    for (int i = 0; i < n; i++) {
        const char *pn = hg_ndlist_name(params, i);
        size_t plen = hg_ndlist_name_len(params, i);
        if (!pn || plen != strlen(pn)) continue; /* a name with a NUL byte matches nothing */
        if (plen > 4 && (memcmp(pn, "arg:", 4) == 0 || memcmp(pn, "aux:", 4) == 0)) {
            pn += 4;
            plen -= 4;
        }
        if (plen == len && memcmp(pn, name, len) == 0) found = i;
    }
    return found;
}

/* Lists the graph's variables for an error message. */
static const char *list_slots(const hg_pmodel *m, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < m->nslots && len + 8 < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%s'%s'", k ? ", " : "", m->slot_name[k]);
    if (len + 8 >= cap) strcpy(buf + cap - 5, "...");
    return buf;
}

/* A node that calls host-language code (Custom: Python) cannot run in a C deployment, even in
 * a process where the Python package happens to be loaded: the predictor promises no Python.
 * Loop bodies and branches (control-flow subgraphs) are searched too; JSON nesting is capped
 * when a file is read, so the recursion is bounded. */
static hg_status refuse_host_code(const hg_symbol *s, const char *what)
{
    hg_snode **nodes;
    int n;
    HG_TRY(hg_symbol_topo(s, &nodes, &n));
    hg_status st = HG_OK;
    for (int i = 0; i < n && st == HG_OK; i++) {
        const hg_snode *nd = nodes[i];
        for (int k = 0; k < nd->nsub && st == HG_OK; k++) st = refuse_host_code(nd->sub[k], what);
        if (st != HG_OK || !nd->op || !(nd->op->flags & HG_OP_HOST_CODE)) continue;
        int k = hg_attr_index(nd->op, "op_type");
        st = hg_error(HG_ERR_UNSUPPORTED,
                      "%s: node '%s' is operator %s%s%s%s, Python code: the C predictor cannot "
                      "run it (run the model from Python, or replace the operator)",
                      what, nd->name, nd->op->name, k >= 0 ? " (op_type '" : "",
                      k >= 0 ? nd->attrs->v[k].s : "", k >= 0 ? "')" : "");
    }
    free(nodes);
    return st;
}

/* Every variable of the graph becomes a slot; each is a data input or a parameter. */
static hg_status match_variables(hg_pmodel *m, hg_ndlist *params, const char *what)
{
    hg_snode **nodes = NULL;
    int n = 0;
    HG_TRY(hg_symbol_topo(m->sym, &nodes, &n));
    int nvars = 0;
    for (int i = 0; i < n; i++) nvars += !nodes[i]->op;
    hg_status st = HG_OK;
    m->slot_name = calloc((size_t)nvars + 1, sizeof *m->slot_name);
    m->weight = calloc((size_t)nvars + 1, sizeof *m->weight);
    if (!m->slot_name || !m->weight) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; st == HG_OK && i < n; i++) {
        if (nodes[i]->op) continue;
        for (int k = 0; k < m->nslots && st == HG_OK; k++)
            if (strcmp(m->slot_name[k], nodes[i]->name) == 0)
                st = hg_error(HG_ERR_VALUE, "%s: the graph has two variables named '%s'", what,
                              nodes[i]->name);
        if (st == HG_OK) m->slot_name[m->nslots++] = nodes[i]->name;
    }
    free(nodes);
    char buf[512];
    for (int d = 0; st == HG_OK && d < m->ndata; d++) {
        for (int k = 0; k < m->nslots; k++)
            if (strcmp(m->slot_name[k], m->data_name[d]) == 0) m->data_slot[d] = k;
        if (m->data_slot[d] < 0)
            st = hg_error(HG_ERR_VALUE,
                          "%s: input '%s' is not a variable of the graph (its "
                          "variables: %s)",
                          what, m->data_name[d], list_slots(m, buf, sizeof buf));
    }
    for (int k = 0; st == HG_OK && k < m->nslots; k++) {
        if (hg_pmodel_find_data(m, m->slot_name[k]) >= 0) continue;
        int pi = find_param(params, m->slot_name[k]);
        if (pi < 0)
            st = hg_error(HG_ERR_VALUE,
                          "%s: the graph's variable '%s' is neither a data input "
                          "nor in the parameters (%d arrays)",
                          what, m->slot_name[k], params ? hg_ndlist_count(params) : 0);
        else st = hg_ndlist_get(params, pi, &m->weight[k]);
    }
    return st;
}

static hg_status copy_specs(hg_pmodel *m, int ninputs, const hg_input_spec *inputs,
                            const char *what)
{
    m->data_name = calloc((size_t)ninputs + 1, sizeof *m->data_name);
    m->data_slot = malloc(sizeof(int) * ((size_t)ninputs + 1));
    m->data_meta = calloc((size_t)ninputs + 1, sizeof *m->data_meta);
    if (!m->data_name || !m->data_slot || !m->data_meta)
        return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; i < ninputs; i++) {
        HG_TRY(hg_pmodel_spec_meta(&inputs[i], what, &m->data_meta[i]));
        if (hg_pmodel_find_data(m, inputs[i].name) >= 0)
            return hg_error(HG_ERR_VALUE, "%s: input '%s' is given twice", what, inputs[i].name);
        if (!(m->data_name[i] = strdup(inputs[i].name)))
            return hg_error(HG_ERR_MEMORY, "out of memory");
        m->data_slot[i] = -1;
        m->ndata = i + 1;
    }
    return HG_OK;
}

hg_status hg_pmodel_load(const char *json, size_t json_len, hg_ndlist *params, int ninputs,
                         const hg_input_spec *inputs, hg_pmodel **out)
{
    static const char what[] = "hg_predictor_create";
    *out = NULL;
    if (params && hg_ndlist_count(params) > 0 && !hg_ndlist_has_names(params))
        return hg_error(HG_ERR_VALUE,
                        "%s: the params file holds a list of %d arrays without "
                        "names; a model's params file (export, save_parameters) names them",
                        what, hg_ndlist_count(params));
    hg_pmodel *m = calloc(1, sizeof *m);
    if (!m) return hg_error(HG_ERR_MEMORY, "out of memory");
    atomic_init(&m->refcount, 1);
    hg_status st = copy_specs(m, ninputs, inputs, what);
    if (st == HG_OK) {
        st = hg_symbol_from_json(json, json_len, &m->sym);
        if (st != HG_OK) hg_error_prefix(st, "%s: symbol JSON: ", what);
    }
    if (st == HG_OK) st = refuse_host_code(m->sym, what);
    if (st == HG_OK) st = match_variables(m, params, what);
    if (st != HG_OK) {
        hg_pmodel_release(m);
        return st;
    }
    *out = m;
    return HG_OK;
}

hg_status hg_read_file(const char *path, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return hg_error(HG_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    hg_status st = HG_OK;
    char *buf = NULL;
    if (fstat(fileno(fp), &sb) != 0)
        st = hg_error(HG_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode)) st = hg_error(HG_ERR_IO, "'%s' is not a regular file", path);
    else if ((uint64_t)sb.st_size > MAX_FILE_BYTES)
        st = hg_error(HG_ERR_IO, "'%s' is too large (%lld bytes) for a symbol file", path,
                      (long long)sb.st_size);
    else if (!(buf = malloc((size_t)sb.st_size + 1)))
        st = hg_error(HG_ERR_MEMORY, "out of memory reading '%s'", path);
    size_t n = 0;
    if (st == HG_OK) {
        n = fread(buf, 1, (size_t)sb.st_size, fp);
        if (n != (size_t)sb.st_size || ferror(fp))
            st = hg_error(HG_ERR_IO, "cannot read '%s': short read (%zu of %lld bytes)", path, n,
                          (long long)sb.st_size);
    }
    fclose(fp);
    if (st != HG_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return HG_OK;
}
