/* Control flow: _foreach, _while_loop, _cond (MXNet's names and attributes) and their backward
 * ops. A node of these ops holds its body graphs as subgraphs (graph/symbol.h); the executor
 * (exec/control_flow.c) infers and runs them and the gradient pass (graph/cflow_grad.c)
 * differentiates them, since both need the subgraphs, which an op's rules never see. What lives
 * here is what the registry needs for every op: names, attribute schemas, input and output
 * counts. Used without its subgraphs (nd._foreach) such an op is an error naming it.
 *
 * Inputs of a node: _foreach (data..., states..., free variables...) located in the body's
 * inputs by in_data_locs / in_state_locs / remain_locs; _while_loop and _cond the union of
 * their subgraphs' inputs, each subgraph's inputs located in it by <graph>_input_locs.
 * num_args counts the inputs and the subgraphs, as MXNet counts them. A backward node takes
 * the gradients of the forward outputs then the forward inputs, and returns the gradients of
 * the forward inputs. */
#include <string.h>

#include "core/op.h"
#include "graph/grad.h"

enum { F_NUM_ARGS, F_NUM_OUTPUTS, F_NUM_OUT_DATA, F_STATE_LOCS, F_DATA_LOCS, F_REMAIN_LOCS };
static const hg_attr_spec k_foreach_attrs[] = {
    {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "inputs + 1 (the body)", NULL},
    {"num_outputs", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "outputs: data then states", NULL},
    {"num_out_data", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "outputs stacked over steps", NULL},
    {"in_state_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "body inputs of the states", NULL},
    {"in_data_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "body inputs of the data", NULL},
    {"remain_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "body inputs of the rest", NULL},
};

enum {
    W_NUM_ARGS,
    W_NUM_OUTPUTS,
    W_NUM_OUT_DATA,
    W_MAX_ITER,
    W_COND_LOCS,
    W_FUNC_LOCS,
    W_VAR_LOCS
};
static const hg_attr_spec k_while_attrs[] = {
    {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "inputs + 2 (cond and func)", NULL},
    {"num_outputs", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "outputs: data then loop vars", NULL},
    {"num_out_data", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "outputs stacked over steps", NULL},
    {"max_iterations", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "most steps; outputs' rows", NULL},
    {"cond_input_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "node inputs of cond", NULL},
    {"func_input_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "node inputs of func", NULL},
    {"func_var_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "func inputs of the loop vars", NULL},
};

enum { C_NUM_ARGS, C_NUM_OUTPUTS, C_COND_LOCS, C_THEN_LOCS, C_ELSE_LOCS };
static const hg_attr_spec k_cond_attrs[] = {
    {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "inputs + 3 (pred, then, else)", NULL},
    {"num_outputs", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "outputs of either branch", NULL},
    {"cond_input_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "node inputs of pred", NULL},
    {"then_input_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "node inputs of then", NULL},
    {"else_input_locs", HG_ATTR_TUPLE, HG_ATTR_REQUIRED, NULL, "node inputs of else", NULL},
};

static int clamp_count(int64_t v) { return v < 0 ? 0 : v > 1 << 20 ? 1 << 20 : (int)v; }

static int foreach_nin(const hg_attrs *a) { return clamp_count(a->v[F_NUM_ARGS].i - 1); }
static int while_nin(const hg_attrs *a) { return clamp_count(a->v[W_NUM_ARGS].i - 2); }
static int cond_nin(const hg_attrs *a) { return clamp_count(a->v[C_NUM_ARGS].i - 3); }
/* num_outputs sits at index 1 of every schema here. */
static int num_outputs(const hg_attrs *a) { return clamp_count(a->v[1].i); }

static int bwd_foreach_nin(const hg_attrs *a) { return num_outputs(a) + foreach_nin(a); }
static int bwd_while_nin(const hg_attrs *a) { return num_outputs(a) + while_nin(a); }
static int bwd_cond_nin(const hg_attrs *a) { return num_outputs(a) + cond_nin(a); }

static hg_status needs_subgraphs(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                                 int nout, hg_meta *out)
{
    return hg_error(HG_ERR_VALUE,
                    "%s needs its subgraphs: it runs only as a node of a graph built by "
                    "sym.contrib (foreach, while_loop, cond) or loaded from JSON",
                    op->name);
}

static hg_status no_kernel(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                           hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return needs_subgraphs(op, a, 0, NULL, 0, NULL);
}

/* The gradient pass differentiates a node with subgraphs itself (it emits _backward_<op>
 * with the subgraphs); this rule is reached only by a node without them, which cannot run. */
static hg_status grad_needs_subgraphs(hg_grad_ctx *g)
{
    return needs_subgraphs(hg_g_node(g)->op, NULL, 0, NULL, 0, NULL);
}

#define CF_OP(NAME, DOC, ATTRS, NIN, NOUT, GRAD)                                                   \
    {.name = NAME, .doc = DOC, .input_names = HG_NAMES("data"), .attrs = ATTRS,            \
     .num_attrs = HG_COUNT(ATTRS), .flags = HG_OP_VARARGS, .get_num_inputs = NIN,          \
     .get_num_outputs = NOUT, .infer = needs_subgraphs, .forward = no_kernel, .grad = GRAD}

const hg_op_def hg_ops_control_flow[] = {
    CF_OP("_foreach", "Runs its body over axis 0 of the data, carrying states.", k_foreach_attrs,
          foreach_nin, num_outputs, grad_needs_subgraphs),
    CF_OP("_while_loop", "Runs func while cond holds, at most max_iterations times.", k_while_attrs,
          while_nin, num_outputs, grad_needs_subgraphs),
    CF_OP("_cond", "Runs the then or the else branch as pred says.", k_cond_attrs, cond_nin,
          num_outputs, grad_needs_subgraphs),
    CF_OP("_backward_foreach", "Gradient of _foreach.", k_foreach_attrs, bwd_foreach_nin,
          foreach_nin, NULL),
    CF_OP("_backward_while_loop", "Gradient of _while_loop.", k_while_attrs, bwd_while_nin,
          while_nin, NULL),
    CF_OP("_backward_cond", "Gradient of _cond.", k_cond_attrs, bwd_cond_nin, cond_nin, NULL),
    {0},
};
