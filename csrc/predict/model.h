/* The immutable part of a predictor, shared by its clones: the graph, which of its variables are
 * data inputs and which are parameters, and the parameters' values. Made once by loading, then
 * only read (so clones on several threads read it without locks); reference counted. */
#ifndef HG_PREDICT_MODEL_H
#define HG_PREDICT_MODEL_H

#include <stdatomic.h>

#include "core/tensor.h"
#include "graph/symbol.h"
#include "hybridgluon/ndlist.h"
#include "hybridgluon/predict.h"

typedef struct hg_pmodel {
    atomic_long refcount;
    hg_symbol *sym;
    /* The plan's input slots: every variable of the graph, in topological order. */
    int nslots;
    const char **slot_name;  /* borrowed from the graph's nodes (sym keeps them) */
    hg_tensor **weight;      /* slot -> parameter value (one reference), NULL for data inputs */
    /* Data inputs in the order the caller named them. */
    int ndata;
    char **data_name;        /* owned copies */
    int *data_slot;          /* data input -> slot */
    hg_meta *data_meta;      /* shapes and dtypes given at creation */
} hg_pmodel;

/* Loads the graph and the parameters and matches the graph's variables to data inputs and
 * parameters. params may be NULL (no parameter file). Checks the specs (names, dims, dtypes)
 * but not whether the shapes fit the graph (the predictor's inference does that). */
hg_status hg_pmodel_load(const char *json, size_t json_len, hg_ndlist *params, int ninputs,
                         const hg_input_spec *inputs, hg_pmodel **out);
/* Checks one spec and turns it into a meta; what names the call in messages. */
hg_status hg_pmodel_spec_meta(const hg_input_spec *spec, const char *what, hg_meta *m);
/* The data input named name, or -1. */
int hg_pmodel_find_data(const hg_pmodel *m, const char *name);
/* Writes an "unknown input" error listing the data inputs. */
hg_status hg_pmodel_unknown_input(const hg_pmodel *m, const char *what, const char *name);
void hg_pmodel_retain(hg_pmodel *m);
void hg_pmodel_release(hg_pmodel *m);

/* Reads a whole file into a new NUL-terminated buffer (free() it). Regular files only, up to
 * 1 GiB. Errors: HG_ERR_IO naming the path. */
hg_status hg_read_file(const char *path, char **out, size_t *len);

#endif
