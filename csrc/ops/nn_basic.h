/* What LeakyReLU (nn_basic.c) shares with its GPU kernels (kernels/cuda/nn.cu): the schema
 * positions, the act_type values and where prelu's gamma lands in the data's shape. Internal to
 * csrc/ops and the kernels. */
#ifndef HG_OPS_NN_BASIC_H
#define HG_OPS_NN_BASIC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Schema positions of LeakyReLU and _backward_LeakyReLU. */
enum { LR_ACT_TYPE, LR_SLOPE, LR_LOWER, LR_UPPER, LR_NATTRS };
/* act_type values, in MXNet's order (nn_basic.c's LRELU_TYPES names each one). */
enum { ACT_RRELU, ACT_LEAKY, ACT_PRELU, ACT_ELU, ACT_SELU, ACT_GELU, ACT_NTYPES };

/* Where gamma's dims land in data's shape (MXNet's rule): from the right, gamma's dims match
 * data axes 1 and 0 (only those), equal or 1; other axes get 1. shape gets data->ndim dims.
 * Returns false if it cannot. Pure shape arithmetic. */
bool hg_prelu_gamma_shape(const hg_meta *data, const hg_meta *gamma, int64_t *shape);

#ifdef __cplusplus
}
#endif

#endif
