/* The operator definition: everything about one op lives in one hg_op_def in csrc/ops/.
 *
 * A family file (csrc/ops/<family>.c) defines `const hg_op_def hg_ops_<family>[]`, terminated by
 * an entry with name == NULL, and ops/families.c lists the families. Nothing else names an op.
 *
 * Attributes: an op declares a schema (hg_attr_spec[]); values are parsed once into hg_attrs,
 * indexed by schema position, so a kernel reads `a->v[K_AXIS].i` without any string handling.
 * Validation belongs in `infer`; kernels trust what infer accepted.
 */
#ifndef HG_CORE_OP_H
#define HG_CORE_OP_H

#include <stdbool.h>

#include "core/post.h"
#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HG_MAX_ATTRS 16
#define HG_MAX_TUPLE 32
#define HG_MAX_STR 256 /* text attributes (SyncBatchNorm's key is a layer name); < a tuple */
#define HG_MAX_IO 64 /* inputs or outputs of one op call (add_n / Concat may take more: checked) */

typedef enum hg_attr_type {
    HG_ATTR_INT,    /* int64 (MXNet int / long) */
    HG_ATTR_FLOAT,  /* double */
    HG_ATTR_BOOL,
    HG_ATTR_TUPLE,  /* tuple of int64: "(3, 3)", "[2,2]", "3", "()" */
    HG_ATTR_ENUM,   /* one of spec->choices; value .i is the index */
    HG_ATTR_DTYPE,  /* a dtype name; value .i is the hg_dtype */
    HG_ATTR_STRING, /* free text, at most HG_MAX_STR-1 bytes (e.g. ctx) */
} hg_attr_type;
#define HG_NUM_ATTR_TYPES (HG_ATTR_STRING + 1) /* tables indexed by type assert this size */

enum {
    HG_ATTR_REQUIRED = 1, /* no default: must be given */
    HG_ATTR_OPTIONAL = 2, /* "None" is a valid value (is_none set) */
};

typedef struct hg_attr_spec {
    const char *name;
    hg_attr_type type;
    int flags;
    const char *def;              /* default as an MXNet attribute string ("None" allowed) */
    const char *doc;
    const char *const *choices;   /* ENUM: NULL-terminated names */
} hg_attr_spec;

typedef struct hg_tuple {
    int n;
    int64_t v[HG_MAX_TUPLE];
} hg_tuple;

typedef struct hg_attr_value {
    bool is_none;
    bool is_set; /* given by the caller (not the default) */
    union {
        int64_t i;
        double f;
        bool b;
        hg_tuple t;
        char s[HG_MAX_STR];
    };
} hg_attr_value;

typedef struct hg_attrs {
    int n;
    hg_attr_value v[HG_MAX_ATTRS];
} hg_attrs;

/* Execution context handed to kernels. */
typedef struct hg_exec_ctx {
    bool is_train;
    void *workspace;     /* scratch memory of workspace_bytes (may be NULL) */
    size_t workspace_bytes;
    int device_id;       /* the GPU a GPU kernel runs on (core/device.h); 0 for the CPU */
    hg_post post;        /* an activation for the output (core/post.h): only plans set one,
                          * only on Convolution's float32 CPU forward (exec/lower.c) */
    const void *prep;    /* input 1 in the op's prepared form, made by its `prep` from the
                          * values input 1 has now (prep_bytes long; NULL: none) */
    size_t prep_bytes;
} hg_exec_ctx;

enum {
    HG_OP_ELEMWISE = 1 << 0,  /* same-shape element-wise: output i depends on input i only */
    HG_OP_INPLACE = 1 << 1,   /* output 0 may share input 0's buffer */
    HG_OP_RANDOM = 1 << 2,    /* draws from the RNG: not deterministic, never folded */
    HG_OP_NO_INPUTS = 1 << 3, /* creation op: shape/dtype come from attrs */
    HG_OP_VARARGS = 1 << 4,   /* input count from the num_args attribute */
    HG_OP_NO_GRAD = 1 << 5,   /* gradient is zero / undefined (comparisons, argmax, creation) */
    HG_OP_HOST_CODE = 1 << 6, /* runs code of the host language (Custom: Python) through a
                               * callback: a deployment without it (the C predictor) refuses it */
    HG_OP_VIEW = 1 << 7,      /* output 0 is input 0's elements, in order, under another shape
                               * (Reshape, Flatten): a plan may alias it instead of copying */
    HG_OP_AUX_IN_TRAIN = 1 << 8, /* writes the inputs it updates only when is_train (BatchNorm's
                                  * moving statistics): an inference call leaves them as they are */
};

/* A gradient rule (see graph/grad.h): emits the backward ops of one node into a graph. */
typedef struct hg_grad_ctx hg_grad_ctx;
typedef hg_status (*hg_grad_rule)(hg_grad_ctx *g);

/* Tile function of an element-wise op: out[i] = f(in0[i*s0], in1[i*s1]) for i < n.
 * Strides are in elements and are 0 (broadcast a scalar) or 1. */
typedef void (*hg_ew_fn)(int64_t n, const void *in0, int64_t s0, const void *in1, int64_t s1,
                         void *out, const hg_attrs *a);

struct hg_op_def {
    const char *name;
    const char *const *aliases;     /* NULL-terminated, or NULL */
    const char *doc;
    const char *const *input_names; /* NULL-terminated; ("data",) etc. Varargs: the single name */
    const char *const *output_names;/* NULL: "output" / "output<i>" */
    const hg_attr_spec *attrs;
    int num_attrs;
    int num_inputs;   /* fixed count, or see get_num_inputs / HG_OP_VARARGS */
    int num_outputs;  /* fixed count, or see get_num_outputs */
    int num_visible_outputs; /* 0: all outputs are visible (see get_num_visible_outputs) */
    unsigned flags;
    int (*get_num_inputs)(const hg_attrs *a);
    int (*get_num_outputs)(const hg_attrs *a);
    int (*get_num_visible_outputs)(const hg_attrs *a); /* when it depends on attributes */
    /* Shape and dtype inference. May fill unknown input metas (weights from data) as well as
     * the outputs. Returns HG_ERR_VALUE/HG_ERR_TYPE with a message naming what is wrong. */
    hg_status (*infer)(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                       hg_meta *out);
    /* CPU kernel: outputs are allocated with the inferred metas. */
    hg_status (*forward)(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                         hg_tensor *const *in, int nout, hg_tensor *const *out);
    /* Element-wise tile functions per dtype (NULL: dtype not supported). Ops with these set and
     * forward == NULL get the generic element-wise/broadcast driver. f16 falls back to f32. */
    hg_ew_fn ew[HG_NUM_DTYPES];
    int ew_arity; /* 1 or 2: number of array operands of the tile function */
    /* Bytes of scratch memory the forward needs (NULL: none). */
    size_t (*workspace)(const hg_attrs *a, int nin, const hg_meta *in);
    /* Weights prepared once for many calls (NULL: the op has no such form; an inference plan
     * keeps them, exec/fold.c). prep_bytes: the bytes of input 1's prepared form for these
     * inputs, 0 where the forward has no use for one. prep: makes it at dst (bytes long) from
     * input 1's values w. A forward given ctx->prep uses it in place of input 1 only where
     * ctx->prep_bytes is what prep_bytes says for the call's inputs; the caller keeps it no
     * longer than input 1 keeps those values. */
    size_t (*prep_bytes)(const hg_attrs *a, int nin, const hg_meta *in);
    hg_status (*prep)(const hg_attrs *a, int nin, const hg_meta *in, const void *w, void *dst,
                      size_t bytes);
    /* Gradient rule (graph/grad.h). NULL with HG_OP_NO_GRAD: no gradient flows through the op;
     * NULL without it: differentiating through the op is an error naming it. */
    hg_grad_rule grad;
    uint32_t mutate_inputs; /* bit i: input i is an auxiliary state the op updates (BatchNorm) */
    /* The same mask when it depends on the attributes (Custom's auxiliary states); NULL: use
     * mutate_inputs. */
    uint32_t (*get_mutate_inputs)(const hg_attrs *a);
    /* Free-form attributes (Custom: op_type plus whatever keywords its Python class takes).
     * Called when a node is built from attribute strings, after the schema's keys are parsed
     * and checked, with the keys the schema does not name (annotations aside; n may be 0). The
     * op keeps what it derives from them in the slots from num_attrs on: its private parsed
     * state, which hg_attrs_set_defaults zeroes. The strings themselves stay with the node
     * (JSON writes them back). NULL: an unknown key is an error. */
    hg_status (*parse_free)(const hg_op_def *op, int n, const char *const *keys,
                            const char *const *vals, hg_attrs *a);
};

/* Whether input i is one the op updates; ops with more than 32 inputs (a cached graph) mutate
 * none past the mask. */
static inline bool hg_op_mutates_input(const hg_op_def *op, int i)
{
    return i >= 0 && i < 32 && ((op->mutate_inputs >> i) & 1u);
}
/* The same for a node with parsed attributes a (which decide it for some ops; may be NULL). */
static inline bool hg_op_mutates_input_a(const hg_op_def *op, const hg_attrs *a, int i)
{
    uint32_t m = op->get_mutate_inputs && a ? op->get_mutate_inputs(a) : op->mutate_inputs;
    return i >= 0 && i < 32 && ((m >> i) & 1u);
}

/* Whether a call (is_train as given) writes input i: the write versions of core/tensor.h. */
static inline bool hg_op_writes_input(const hg_op_def *op, const hg_attrs *a, bool is_train, int i)
{
    return hg_op_mutates_input_a(op, a, i) && (is_train || !(op->flags & HG_OP_AUX_IN_TRAIN));
}

/* Registry. The ops layer installs its family list (NULL-terminated tables of definitions,
 * each ended by name == NULL) at load time, before the first lookup (ops/families.c). */
void hg_registry_install_families(const hg_op_def *const *families);
HG_API const hg_op_def *hg_registry_find(const char *name);
HG_API int hg_registry_count(void);
HG_API const hg_op_def *hg_registry_at(int i);
/* Whether every registered definition passed hg_op_def_validate; the error names the first op
 * and attribute that did not. */
HG_API hg_status hg_registry_check(void);
/* A definition the registry can use: a name, a schema whose entries all have a name, a known
 * type (an enum with choices), no name twice, and defaults that parse. Errors name op and
 * attribute. */
HG_API hg_status hg_op_def_validate(const hg_op_def *op);

/* Attributes. */
HG_API int hg_attr_index(const hg_op_def *op, const char *name); /* -1 if unknown */
HG_API hg_status hg_attrs_init_defaults(const hg_op_def *op, hg_attrs *a);
/* Fast path: copies the defaults parsed once at registration (use this per call). */
HG_API void hg_attrs_set_defaults(const hg_op_def *op, hg_attrs *a);
/* Parses one MXNet attribute string into slot `idx`. */
HG_API hg_status hg_attr_parse(const hg_op_def *op, int idx, const char *text, hg_attrs *a);
/* Checks required attributes are set; names the op and the attribute otherwise. */
HG_API hg_status hg_attrs_finish(const hg_op_def *op, hg_attrs *a);
/* Writes the attribute in MXNet's string form ("(3, 3)", "True", "0.5"). */
void hg_attr_format(const hg_op_def *op, int idx, const hg_attrs *a, char *buf, size_t size);
/* "Cannot find argument 'foo', Possible Arguments: ..." message helper. */
HG_API hg_status hg_attr_unknown(const hg_op_def *op, const char *key);

HG_API int hg_op_num_inputs(const hg_op_def *op, const hg_attrs *a);
HG_API int hg_op_num_outputs(const hg_op_def *op, const hg_attrs *a);
HG_API int hg_op_num_visible_outputs(const hg_op_def *op, const hg_attrs *a);

/* Runs an op imperatively: infers, allocates outputs (unless out[i] is given, in which case its
 * shape and dtype must match) and calls the kernel. nout must equal hg_op_num_outputs.
 * Allocated outputs are on in[0]'s device (cpu(0) for an op without inputs). */
HG_API hg_status hg_op_run(const hg_op_def *op, const hg_attrs *a, bool is_train, int nin,
                           hg_tensor *const *in, int nout, hg_tensor **out);

/* The generic element-wise driver: broadcasting binary / unary map over ew[dtype]. */
hg_status hg_ew_forward(const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in,
                        hg_tensor *out);
/* Ready-made shape rules. hg_infer_broadcast: NumPy broadcasting of in[0] and in[1] (message
 * names the op and both shapes). hg_infer_same: all inputs of equal shape and dtype, output like
 * in[0] (elemwise_*, unary maps, scalar ops). */
hg_status hg_infer_broadcast(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out);
hg_status hg_infer_same(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                        hg_meta *out);

/* For shape rules that fill in parameter shapes: merges the expected shape `want` (entries -1:
 * unknown) into input meta m. Unknown dims on either side take the other's value; known dims
 * must agree (false otherwise). A meta of unknown ndim becomes `want` with dtype dt. */
bool hg_meta_merge(hg_meta *m, hg_dtype dt, int nd, const int64_t *want);

/* Convenience for op files. */
#define HG_NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define HG_COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

#ifdef __cplusplus
}
#endif

#endif
