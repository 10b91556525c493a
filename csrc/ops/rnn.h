/* What the executor needs from the fused RNN op (ops/rnn.c) to run it on the parameter arrays
 * themselves, without the flat vector _rnn_param_concat builds from them (exec/lower.c). */
#ifndef HG_OPS_RNN_H
#define HG_OPS_RNN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"

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

#endif
