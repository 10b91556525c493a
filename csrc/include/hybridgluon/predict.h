/* hybridgluon predictor: runs an exported model (`<prefix>-symbol.json` + `<prefix>-NNNN.params`,
 * what `HybridBlock.export` writes) from C or C++, with no Python.
 *
 *     hg_input_spec in = {"data", 4, (int64_t[]){1, 1, 28, 28}, HG_DTYPE_F32};
 *     hg_predictor *p;
 *     if (hg_predictor_create_from_files("lenet-symbol.json", "lenet-0000.params",
 *                                        HG_DEVICE_CPU, 0, 1, &in, &p) != HG_OK)
 *         fprintf(stderr, "%s\n", hg_last_error());
 *     hg_predictor_set_input(p, "data", pixels, sizeof pixels);
 *     hg_predictor_forward(p);
 *     hg_predictor_get_output(p, 0, scores, sizeof scores);
 *     hg_predictor_free(p);
 *
 * Model: every variable of the graph is either a data input named at creation (with its shape
 * and dtype) or a parameter found in the params file under "arg:<name>", "aux:<name>" (as
 * export writes them) or plain "<name>". Parameters the graph does not use are ignored. Shapes
 * are inferred at creation, so a wrong input shape or a weight that does not fit is reported
 * there, naming the node. The plan (fusion, memory planning) is made by the first forward and
 * kept until a reshape; a forward then allocates nothing.
 *
 * Errors: every function but hg_predictor_free returns an hg_status (HG_OK == 0). On failure
 * the message is kept per thread and read with hg_last_error() (hybridgluon.h), and the
 * predictor (if any) is left as it was before the call: a failed call can be followed by a
 * corrected one. Bad arguments (NULL pointers, unknown names, wrong shapes or buffer sizes),
 * malformed JSON or params and unknown operators give a status, never an abort.
 *
 * Thread-safety: a predictor is not thread-safe: one thread at a time may use it. Several
 * predictors may be used at once from different threads, and hg_predictor_clone makes one per
 * thread cheaply: clones share the (read-only) weights and graph, each has its own inputs,
 * outputs and plan. Multi-threaded kernels share one thread pool: while one predictor's kernel
 * holds it, a concurrent predictor's kernel runs on its calling thread alone (same results).
 *
 * Devices: HG_DEVICE_CPU, and HG_DEVICE_GPU in the CUDA build (dev_id: which GPU). On a GPU
 * the predictor keeps a device copy of the weights, and its inputs and outputs live in device
 * memory: set_input and get_output copy to and from it (get_output waits for the forward).
 * From the second forward of a shape on, a forward replays one CUDA graph. A GPU that does not
 * exist, or the CPU build, gives an error naming the GPU.
 */
#ifndef HYBRIDGLUON_PREDICT_H
#define HYBRIDGLUON_PREDICT_H

#include "hybridgluon/hybridgluon.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A predictor: a loaded model with its input and output buffers. Opaque. */
typedef struct hg_predictor hg_predictor;

/* A data input: its variable name in the graph, shape (ndim dims, 0 <= ndim <= HG_MAX_NDIM;
 * shape may be NULL when ndim is 0) and dtype (a zero-initialised spec means float32).
 * The strings and arrays are only read during the call; the predictor keeps copies. */
typedef struct hg_input_spec {
    const char *name;
    int ndim;
    const int64_t *shape;
    hg_dtype dtype;
} hg_input_spec;

/* Creates a predictor from the symbol's JSON text (json_len bytes, no terminating NUL needed)
 * and the params file's bytes (params_len bytes; params may be NULL with params_len 0 for a
 * graph with no parameters). Both buffers are only read during the call. dev_type is
 * HG_DEVICE_CPU (dev_id >= 0, ignored) or HG_DEVICE_GPU (dev_id: the GPU). inputs[0..ninputs) name the data inputs;
 * names must be distinct variables of the graph. Inputs start as zeros.
 * On success *out is a new predictor owned by the caller (hg_predictor_free); on failure *out
 * is NULL and nothing is leaked. Errors: HG_ERR_VALUE (NULL argument, unknown or repeated input
 * name, a variable that is neither an input nor a parameter, shapes that do not fit the graph),
 * HG_ERR_TYPE (bad dtype), HG_ERR_IO (malformed JSON or params, unknown operator),
 * HG_ERR_UNSUPPORTED (GPU, sparse params), HG_ERR_MEMORY. Thread-safe (touches no shared
 * state besides the allocator's locked pool). */
HG_API hg_status hg_predictor_create(const char *json, size_t json_len, const void *params,
                                     size_t params_len, int dev_type, int dev_id, int ninputs,
                                     const hg_input_spec *inputs, hg_predictor **out);

/* As hg_predictor_create, reading the symbol JSON from symbol_path and the params from
 * params_path (NULL: no parameters). Paths are only read during the call. A file that cannot
 * be read gives HG_ERR_IO naming it. Thread-safe. */
HG_API hg_status hg_predictor_create_from_files(const char *symbol_path, const char *params_path,
                                                int dev_type, int dev_id, int ninputs,
                                                const hg_input_spec *inputs, hg_predictor **out);

/* A new predictor over the same model that shares p's weights (no copy) and has its own
 * inputs (zeros, of p's current shapes), outputs and plan: one per thread. *out is owned by
 * the caller and stays valid after p is freed. Thread-safety: may run while another thread
 * uses p for set_input/forward/get_output, but not during hg_predictor_reshape or _free of p. */
HG_API hg_status hg_predictor_clone(const hg_predictor *p, hg_predictor **out);

/* Frees a predictor (its weights go when the last clone sharing them goes). NULL is ignored.
 * Must not race with any other use of the same predictor. */
HG_API void hg_predictor_free(hg_predictor *p);

/* Number of data inputs; the i-th one's name (borrowed: valid until p is freed), shape and
 * dtype. Shapes are copied into shape[0..capacity); *ndim receives the number of dims, and a
 * capacity below it gives HG_ERR_VALUE (with *ndim set, so the caller can retry). Index out of
 * range: HG_ERR_INDEX. Read-only: several threads may query one predictor at once. */
HG_API hg_status hg_predictor_num_inputs(const hg_predictor *p, int *out);
HG_API hg_status hg_predictor_input_name(const hg_predictor *p, int index, const char **out);
HG_API hg_status hg_predictor_input_shape(const hg_predictor *p, int index, int64_t *shape,
                                          int capacity, int *ndim);
HG_API hg_status hg_predictor_input_dtype(const hg_predictor *p, int index, hg_dtype *out);

/* Copies nbytes from data into the input called name. nbytes must equal the input's size in
 * bytes (product of its shape times the dtype's size). The caller keeps data. Errors:
 * HG_ERR_VALUE for NULL arguments, an unknown name (the message lists the inputs) or a wrong
 * size. Not thread-safe on one predictor. */
HG_API hg_status hg_predictor_set_input(hg_predictor *p, const char *name, const void *data,
                                        size_t nbytes);

/* Runs the model on the current inputs; the results stay in the predictor until the next
 * forward. The first forward after creation or a reshape makes the plan. Errors come from the
 * kernels (HG_ERR_MEMORY; a kernel that finds a bad value, e.g. an index out of range in a
 * `take` with mode='raise', gives HG_ERR_INDEX) and name the node. Not thread-safe on one
 * predictor. */
HG_API hg_status hg_predictor_forward(hg_predictor *p);

/* Number of outputs, and the i-th one's shape (as hg_predictor_input_shape), dtype and size in
 * bytes. Known from creation on (no forward needed). Read-only (see the input queries). */
HG_API hg_status hg_predictor_num_outputs(const hg_predictor *p, int *out);
HG_API hg_status hg_predictor_output_shape(const hg_predictor *p, int index, int64_t *shape,
                                           int capacity, int *ndim);
HG_API hg_status hg_predictor_output_dtype(const hg_predictor *p, int index, hg_dtype *out);
HG_API hg_status hg_predictor_output_nbytes(const hg_predictor *p, int index, size_t *out);

/* Copies output index of the last forward into dst, which must hold exactly nbytes ==
 * hg_predictor_output_nbytes. Before any forward the output is zeros. Errors: HG_ERR_INDEX,
 * HG_ERR_VALUE (NULL dst, wrong size). Read-only on p. */
HG_API hg_status hg_predictor_get_output(const hg_predictor *p, int index, void *dst,
                                         size_t nbytes);

/* Gives some data inputs new shapes (and dtypes): inputs[0..ninputs) name them as at creation;
 * the others keep theirs (and their values). Shapes are inferred again, the inputs named get
 * new buffers (zeros) and the outputs too (zeros until the next forward, which makes a new
 * plan). The weights are kept, so a shape they do not fit is an error. On failure nothing
 * changes (the predictor works on its old shapes). Not thread-safe on one predictor; clones are
 * not affected. */
HG_API hg_status hg_predictor_reshape(hg_predictor *p, int ninputs, const hg_input_spec *inputs);

#ifdef __cplusplus
}
#endif
#endif /* HYBRIDGLUON_PREDICT_H */
