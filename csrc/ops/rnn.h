/* What the fused RNN op (ops/rnn.c) shares: with the executor, what it needs to run the op on
 * the parameter arrays themselves, without the flat vector _rnn_param_concat builds from them
 * (exec/lower.c); with the GPU kernels (kernels/cuda/rnn.cu), the schema positions, the
 * backward's input order and the attribute check. */
#ifndef HG_OPS_RNN_H
#define HG_OPS_RNN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"
#include "kernels/cpu/rnn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RNN's schema positions; _backward_RNN's schema is RNN's plus data_grad. */
enum {
    RNN_STATE_SIZE,
    RNN_NUM_LAYERS,
    RNN_BIDIR,
    RNN_MODE,
    RNN_P,
    RNN_STATE_OUTPUTS,
    RNN_PROJ,
    RNN_CLIP_MIN,
    RNN_CLIP_MAX,
    RNN_CLIP_NAN,
    RNN_USE_SEQ,
    RNN_NATTRS,
    RNN_DATA_GRAD = RNN_NATTRS
};

/* _backward_RNN's inputs: ograd output, ograd state_output, ograd statecell_output, data,
 * parameters, state, output, reserve, then state_cell (lstm) and sequence_length (when used). */
enum {
    RNN_B_DY,
    RNN_B_DHY,
    RNN_B_DCY,
    RNN_B_X,
    RNN_B_W,
    RNN_B_H0,
    RNN_B_Y,
    RNN_B_RES,
    RNN_B_FIXED
};

/* Checks an RNN node's attributes (a: RNN's or _backward_RNN's) against data's meta x (known,
 * any rank) and fills d; errors (HG_ERR_VALUE) name `name`. Thread-safe. */
hg_status hg_rnn_dims_of(const char *name, const hg_attrs *a, const hg_meta *x, hg_rnn_dims *d);

/* Whether an RNN node with attributes a and data x can take, in place of its parameter vector,
 * the npieces arrays of a _rnn_param_concat along concat_dim (their metas in order): they must
 * be exactly the vector's blocks. */
bool hg_rnn_split_ok(const hg_attrs *a, const hg_meta *x, int64_t concat_dim, int npieces,
                     const hg_meta *pieces);

/* The RNN forward with its parameters given as those arrays: in is the op's input list (in[1],
 * the vector, is not read), out its outputs, ctx its workspace as for the plain forward. */
hg_status hg_rnn_forward_split(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int npieces, hg_tensor *const *pieces, hg_tensor *const *in,
                               hg_tensor *const *out);

#ifdef __cplusplus
}
#endif

#endif
